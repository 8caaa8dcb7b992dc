r"""Population gradient descent and gradient flow of the factorised LSA ``U = A B^T`` (extension, not in [Shi24]).

The paper studies global minimisers only ([Shi24, App. D.1]: "our work does not study optimization
trajectory"). :func:`gradient_descent` iterates gradient descent with step ``lr`` on the population loss of
Lemma 5.1: the mean path of SGD on fresh prompts, exact up to the O(lr / batch) minibatch noise. For small
``lr`` it follows :func:`gradient_flow` at time ``lr * t``; from a small random start it passes near the saddles
where only the top-k eigen-directions (k < r) are learnt, and ends at the Thm 5.4.1 optimum
(docs/icl.md: relative error < 1e-6 at t = 400 for d = 6, N = 20, r = 2).
"""
from __future__ import annotations

import numpy as np

from ... import dynamics
from ..._validate import Interval, InvalidParameterError, as_int, check
from .regression import _covariance, gamma_matrix, optimal_loss

__all__ = ["initial_factors", "gradient_descent", "gradient_flow", "flow_parameters", "saddle_losses", "flow_plateaus"]


def initial_factors(d, r, scale, seed):
    r"""Small random start ``A_0, B_0`` with i.i.d. ``N(0, scale^2)`` entries (shared by predict and simulate).

    .. math:: (A_0)_{ij}, (B_0)_{ij} \sim \mathcal N(0, \mathrm{scale}^2)

    Parameters
    ----------
    d : int
        Input dimension, >= 1.
    r : int
        Rank, >= 1.
    scale : float
        Standard deviation of the entries, > 0.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    A0, B0 : ndarray of shape (d, r)

    Notes
    -----
    Accuracy: exact: standard normals of the generator times scale (one rounding).
    Regime: small ``scale`` puts the start near the saddle at the origin (docs/icl.md: 1e-2).

    References
    ----------
    .. [src] derived in docs/icl.md.

    Examples
    --------
    >>> A0, B0 = initial_factors(3, 2, 1e-2, seed=0)
    >>> A0.shape, bool(np.all(A0 == initial_factors(3, 2, 1e-2, seed=0)[0]))
    ((3, 2), True)
    """
    d = as_int("icl.initial_factors", "d", d, low=1)
    r = as_int("icl.initial_factors", "r", r, low=1)
    scale = check("icl.initial_factors", "scale", scale, Interval(0, np.inf, closed="neither"))
    z = np.random.default_rng(seed).standard_normal((2, d, r)) * scale
    return z[0], z[1]


def gradient_flow(Lambda, N, A0, B0, t, *, u0=1.0, train_u=False, rtol=1e-10, atol=1e-12, method="DOP853"):
    r"""Population gradient flow of (A, B, u) for ``U = A B^T`` (extension: not in the paper).

    .. math:: \dot A = -(u^2\Gamma\Lambda AB^\top\Lambda - u\Lambda^2)B,\quad
              \dot B = -(u^2\Gamma\Lambda AB^\top\Lambda - u\Lambda^2)^\top A,\quad
              \dot u = -\partial_u\mathcal L\ (\text{or } 0)

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.
    A0, B0 : ndarray of shape (d, r)
        Initial factors.
    t : ndarray of shape (n,)
        Increasing recording times (flow time), ``t[0]`` the initial time.
    u0 : float
        Initial value entry u.
    train_u : bool
        Whether u follows its gradient (else it stays at u0).
    rtol, atol : float
        Solver tolerances, in (0, 1).
    method : str
        A :func:`popdyn.dynamics.solve_ode` method.

    Returns
    -------
    popdyn.dynamics.Trajectory
        ``y`` of shape (n, 2 d r + 1): A, B (row-major) and u; see :func:`flow_parameters`.

    Notes
    -----
    Accuracy: the solver's: relative error of U_ii(t) <= 1e3 rtol at the default tolerances against the logistic
    closed form (A_0 = B_0 diagonal, diagonal Lambda, d <= 3, lam in [0.2, 1], horizons to 20 / lam_min^2); measured
    0.007 of it (tests/test_accuracy_icl.py). Stiff spectra (ratios >> 1e3) make DOP853 slow, not inaccurate.
    Regime: population loss (infinitely many prompts), continuous time. GD with step lr follows it at
    time ``lr * steps`` when ``lr`` is small against ``1 / ||Gamma Lambda||``-type curvature.

    References
    ----------
    .. [src] derived in docs/icl.md.

    Examples
    --------
    >>> from popdyn.models.icl import optimum
    >>> A0, B0 = initial_factors(2, 2, 1e-2, seed=1)
    >>> traj = gradient_flow([1.0, 0.5], 50, A0, B0, [0.0, 400.0])
    >>> A, B, u = flow_parameters(traj.y, 2, 2)
    >>> bool(np.allclose(A[-1] @ B[-1].T, optimum([1.0, 0.5], 50, 2).U, atol=1e-6))
    True
    """
    owner = "icl.gradient_flow"
    A0, B0 = np.asarray(A0, dtype=np.float64), np.asarray(B0, dtype=np.float64)
    if A0.ndim != 2 or A0.shape != B0.shape:
        raise InvalidParameterError(f"The 'B0' parameter of {owner} must be a 2-d array with the shape of A0 "
                                    f"{A0.shape}. Got shape {B0.shape} instead.")
    d, r = A0.shape
    L = _covariance(owner, Lambda)
    Gam = gamma_matrix(L, N)
    if L.shape != (d, d):
        raise InvalidParameterError(f"The 'A0' parameter of {owner} must have d = {L.shape[0]} rows (d from "
                                    f"Lambda). Got shape {A0.shape} instead.")
    u0 = check(owner, "u0", u0, Interval(-np.inf, np.inf, closed="neither"))
    GL, L2, n = Gam @ L, L @ L, d * r

    def rhs(_, y):
        A, B, u = y[:n].reshape(d, r), y[n:2 * n].reshape(d, r), y[-1]
        U = A @ B.T
        dU = u**2 * GL @ U @ L - u * L2
        du = u * np.sum((GL @ U @ L) * U) - np.sum(L2 * U) if train_u else 0.0
        return np.concatenate([-(dU @ B).ravel(), -(dU.T @ A).ravel(), [-du]])

    y0 = np.concatenate([A0.ravel(), B0.ravel(), [u0]])
    return dynamics.solve_ode(rhs, y0, t, rtol=rtol, atol=atol, method=method)


def gradient_descent(Lambda, N, A0, B0, lr, t, *, u0=1.0, train_u=False):
    r"""Gradient descent with step ``lr`` on the population loss of (A, B, u), ``U = A B^T``, recorded at steps ``t``.

    .. math:: A_{k+1} = A_k - \mathrm{lr}\,\nabla_A\mathcal L,\quad B_{k+1} = B_k - \mathrm{lr}\,\nabla_B\mathcal L,
              \quad u_{k+1} = u_k - \mathrm{lr}\,\partial_u\mathcal L\ (\text{or } u_0)

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length (``context`` of the problem), >= 1.
    A0, B0 : ndarray of shape (d, r)
        Initial factors.
    lr : float
        Step size, > 0.
    t : sequence of int
        Increasing steps at which the state is recorded (``t[0] >= 0``).
    u0 : float
        Initial value of u.
    train_u : bool
        Whether u takes gradient steps (else it stays at u0).

    Returns
    -------
    A, B : ndarray of shape (len(t), d, r)
    u : ndarray of shape (len(t),)
        Non-finite once the iteration diverges (lr above the stability limit ``2 / curvature``).

    Notes
    -----
    Accuracy: ||state_T - exact|| <= 8 eps (T + 1)(d + r + 2) max_t ||state_t|| for a stable step (exact: the same
    iteration in mpmath at 40 digits; d, r <= 3, T <= 200); measured 0.004 of it (tests/test_accuracy_icl.py).
    Regime: population loss (infinitely many prompts per step), the exact mean map of SGD's updates; SGD on
    ``batch`` fresh prompts adds noise of order ``lr / batch`` to the loss. Cost: one d x d update per step.

    References
    ----------
    .. [src] derived in docs/icl.md; [Shi24, Section 5.3] (the loss).

    Examples
    --------
    >>> from popdyn.models.icl import optimum
    >>> A0, B0 = initial_factors(2, 2, 1e-2, seed=1)
    >>> A, B, u = gradient_descent([1.0, 0.5], 50, A0, B0, 0.5, [0, 2000])
    >>> bool(np.allclose(A[-1] @ B[-1].T, optimum([1.0, 0.5], 50, 2).U, atol=1e-6))
    True
    """
    owner = "icl.gradient_descent"
    A, B = np.array(A0, dtype=np.float64), np.array(B0, dtype=np.float64)
    if A.ndim != 2 or A.shape != B.shape:
        raise InvalidParameterError(f"The 'B0' parameter of {owner} must be a 2-d array with the shape of A0 "
                                    f"{A.shape}. Got shape {B.shape} instead.")
    L = _covariance(owner, Lambda)
    if L.shape[0] != A.shape[0]:
        raise InvalidParameterError(f"The 'A0' parameter of {owner} must have d = {L.shape[0]} rows (d from "
                                    f"Lambda). Got shape {A.shape} instead.")
    lr = check(owner, "lr", lr, Interval(0, np.inf, closed="neither"))
    t = np.asarray([as_int(owner, "t", k, low=0) for k in np.atleast_1d(t)], dtype=np.int64)
    if np.any(np.diff(t) <= 0):
        raise InvalidParameterError(f"The 't' parameter of {owner} must be increasing. Got {t.tolist()} instead.")
    u = check(owner, "u0", u0, Interval(-np.inf, np.inf, closed="neither"))
    GL, L2 = gamma_matrix(L, N) @ L, L @ L
    out_A, out_B, out_u = np.empty((t.size,) + A.shape), np.empty((t.size,) + A.shape), np.empty(t.size)
    k = 0
    with np.errstate(over="ignore", invalid="ignore"):
        for i, target in enumerate(t):
            while k < target:
                U = A @ B.T
                GLUL = GL @ U @ L
                dU = u * u * GLUL - u * L2
                du = u * np.sum(GLUL * U) - np.sum(L2 * U) if train_u else 0.0
                A, B, u = A - lr * dU @ B, B - lr * dU.T @ A, u - lr * du
                k += 1
            out_A[i], out_B[i], out_u[i] = A, B, u
    return out_A, out_B, out_u


def flow_parameters(y, d, r):
    r"""Split recorded flow states into ``A``, ``B`` (shape (n, d, r)) and ``u`` (shape (n,)).

    .. math:: y = (\mathrm{vec}\,A,\ \mathrm{vec}\,B,\ u)

    Parameters
    ----------
    y : ndarray of shape (n, 2 d r + 1)
        ``Trajectory.y`` of :func:`gradient_flow`.
    d, r : int
        Dimension and rank.

    Returns
    -------
    A, B : ndarray of shape (n, d, r)
    u : ndarray of shape (n,)

    Notes
    -----
    Accuracy: exact (a reshape).
    Regime: any state layout produced by :func:`gradient_flow`.

    References
    ----------
    .. [src] derived in docs/icl.md.

    Examples
    --------
    >>> A, B, u = flow_parameters(np.arange(5.0)[None], 1, 2)
    >>> A.tolist(), B.tolist(), u.tolist()
    ([[[0.0, 1.0]]], [[[2.0, 3.0]]], [4.0])
    """
    y = np.asarray(y, dtype=np.float64)
    n = as_int("icl.flow_parameters", "d", d, low=1) * as_int("icl.flow_parameters", "r", r, low=1)
    if y.ndim != 2 or y.shape[1] != 2 * n + 1:
        raise InvalidParameterError(f"The 'y' parameter of icl.flow_parameters must have shape (n, {2 * n + 1}). "
                                    f"Got shape {y.shape} instead.")
    return y[:, :n].reshape(-1, d, r), y[:, n:2 * n].reshape(-1, d, r), y[:, -1]


def saddle_losses(Lambda, N, r):
    r"""Loss at the saddles the small-init flow visits: the rank-k optima, k = 0..r.

    .. math:: \mathcal L_k^* = \tfrac12\sum_i\lambda_i - \tfrac12\sum_{i\le k}\frac{N\lambda_i^2}{(N+1)\lambda_i + T},
              \quad k = 0, \dots, r

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.
    r : int
        Rank, in [0, d].

    Returns
    -------
    ndarray of shape (r + 1,)
        Decreasing; the last entry is the rank-r optimum.

    Notes
    -----
    Accuracy: as :func:`popdyn.models.icl.optimal_loss` for each k.
    Regime: distinct eigenvalues; the rank-k optimum embedded in rank r (k < r) is a critical point
    of the factorised loss (a strict saddle), and small-init flow learns the directions in the order
    of ``lambda_i`` (incremental learning; an observation of the extension, not a theorem).

    References
    ----------
    .. [src] derived in docs/icl.md ("saddles exist at other r-subsets").

    Examples
    --------
    >>> saddle_losses([1.0, 1.0], N=4, r=1).tolist()[0]  # the origin: tr(Lambda)/2
    1.0
    """
    r = as_int("icl.saddle_losses", "r", r, low=0)
    return np.array([optimal_loss(Lambda, N, k) for k in range(r + 1)])


def flow_plateaus(t, loss, saddles, *, rtol=0.01, min_duration=0.0):
    r"""Plateaus of a loss curve, each matched to the nearest saddle value.

    .. math:: |\mathcal L(s) - \mathcal L_k^*| \le \mathrm{rtol}\,\mathcal L_0^*\quad \forall s\in[t_a, t_b]

    Parameters
    ----------
    t : ndarray of shape (n,)
        Increasing times.
    loss : ndarray of shape (n,)
        Loss curve.
    saddles : ndarray of shape (k,)
        Candidate plateau values (:func:`saddle_losses`).
    rtol : float
        Band half-width relative to ``saddles[0]`` (the loss at the origin), in (0, 1).
    min_duration : float
        Shortest plateau reported, >= 0.

    Returns
    -------
    list of dict
        ``{"start", "end", "value", "saddle": k}`` in time order, only plateaus within the band of a saddle;
        neighbouring plateaus at the same saddle are merged.

    Notes
    -----
    Accuracy: exact comparisons on the given curve; the value of a merged plateau is one rounding of its midpoint.
    Regime: uses :func:`popdyn.dynamics.plateau`; a plateau away from every saddle value is dropped.

    References
    ----------
    .. [src] derived in docs/icl.md.

    Examples
    --------
    >>> flow_plateaus([0, 1, 2, 3, 4], [1.0, 1.0, 0.5, 0.5, 0.5], [1.0, 0.5], min_duration=1)
    [{'start': 0.0, 'end': 1.0, 'value': 1.0, 'saddle': 0}, {'start': 2.0, 'end': 4.0, 'value': 0.5, 'saddle': 1}]
    """
    saddles = np.asarray(saddles, dtype=np.float64)
    rtol = check("icl.flow_plateaus", "rtol", rtol, Interval(0, 1, closed="neither"))
    atol = rtol * abs(saddles[0])
    t, loss, out = np.asarray(t, dtype=np.float64), np.asarray(loss, dtype=np.float64), []
    for a, b, value in dynamics.plateau(t, loss, atol=atol, min_duration=min_duration):
        k = int(np.argmin(np.abs(saddles - value)))
        if abs(saddles[k] - value) > atol:
            continue
        if out and out[-1]["saddle"] == k:  # one saddle split by the greedy scan: merge
            a = out.pop()["start"]
            seg = loss[(t >= a) & (t <= b)]
            value = float((seg.max() + seg.min()) / 2)
        out.append({"start": a, "end": b, "value": value, "saddle": k})
    return out
