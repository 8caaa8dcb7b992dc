r"""Fluctuations of the LoRA order parameters: the diffusion theory of joint (c_hat, u_hat) training (Fig. 4).

Derived here (docs/lora.md, "Joint training: the diffusion theory"; the paper states no result on joint training).
One online SGD step moves the order parameters ``X = (m, q, c_hat)`` (``q = W u_hat`` when u_hat is not projected,
c_hat when it is trained) by

    X' - X = eta_X * (population drift + zeta) + (normalisation drift, order lr^2 d),

where ``zeta`` is the centred stochastic gradient seen by X: a function of the (k+2)-dimensional Gaussian
``(W x, <u, x>, <u_hat, x>)`` whose covariance ``Sigma(X)`` does not grow with d. With ``lr = lr_c = delta/d`` and
``tau = t/d`` the increments add up to ``dX = delta b dtau + delta sqrt(Sigma/d) dB``: the population ODE is the
``d -> infinity`` limit, and at finite d the diffusion term is the first correction. It is small only when
``delta^2 tr(Sigma)/d`` is; for He3 and the quadratic at ``xi = sqrt(k)`` Sigma's c_hat block is in the thousands,
and at ``d = 500``, ``delta = 0.1`` the c_hat paths spread by O(1) before the drift aligns them, which the ODE
misses. :func:`diffusion_paths` integrates the diffusion by Euler-Maruyama, the exact drift
(:func:`~popdyn.models.lora.general_drift`) and Sigma by scrambled-Sobol quadrature (:func:`increment_covariance`).

Public names
------------
:func:`increment_covariance`
    Covariance of one SGD step's increments of the order parameters.
:func:`diffusion_paths`
    Paths of the order parameters under the diffusion theory (``popdyn.predict(..., method="diffusion")``).
"""
from __future__ import annotations

import math

import numpy as np

from ..._validate import Integer, Interval, InvalidParameterError, check
from .general import _sample, _second_moment_of, _state, general_drift
from .problem import _N_MC

__all__ = ["increment_covariance", "diffusion_paths"]


def _layout_size(gp, lr_c):
    """Length of the state [m, q (unprojected only), c_hat (joint only)]."""
    return 1 + (0 if gp.project else gp.k) + (0 if lr_c is None else gp.k)


def _increments(gp, m, q, c_hat, lr, lr_c, s):
    r"""One SGD step's increments of the state (before normalisation) at the quadrature points ``s``
    (:func:`~popdyn.models.lora.general._sample`).

    The sample gradient is ``L = F x`` (in u_hat) with
    ``F = -2 (f^* - \hat f) sum_j lam_j sigma'(s_j) xi c_hat_j/r_hat_j`` and, in c_hat_j,
    ``-2 (f^* - \hat f) lam_j sigma'(s_j) (xi <u_hat, x>/r_hat_j - xi^2 c_hat_j s_j/r_hat_j^2)``; the state moves by
    ``-lr <P L, u>``, ``-lr <P L, w_i>`` and ``-lr_c`` times the c_hat gradient (P the algorithm's projection)."""
    k, P = gp.k, gp.problem
    z, F, r_hat = s["z"], s["F"], s["r_hat"]
    zw, zu, zh = z[:, :k], z[:, k], z[:, k + 1]
    pu = zu - m * zh
    if gp.project:                                         # <Pi_perp x, u> = <x, u> - <W x, G^+ p>
        pu = pu - zw @ (gp.G_pinv @ gp.p)
    cols = [-lr * F * pu]
    if not gp.project:
        cols.append(-lr * F[:, None] * (zw - q[None, :] * zh[:, None]))
    if lr_c is not None:
        xi = P.xi
        dpre = xi * zh[:, None] / r_hat - (xi**2 * c_hat / r_hat**2) * s["pre"][:, k:]
        cols.append(2 * lr_c * s["res"][:, None] * P.lam * s["ds"] * dpre)
    return np.column_stack(cols)


def increment_covariance(gp, m, q=None, c_hat=None, *, lr, lr_c=None, n_mc=_N_MC, seed=0):
    r"""Covariance of one online SGD step's increments of the order parameters.

    .. math:: \Sigma = \mathrm{Cov}_x\big[(-\eta\langle PL, u\rangle,\ -\eta\langle PL, w_i\rangle,\
              -\eta_c\nabla_{\hat c}\ell)\big],\qquad L = \nabla_{\hat u}\ell,\ \ \ell = (f^*(x) - \hat f(x))^2

    for one sample x, in the order of the state ``[m, q (project=False only), c_hat (lr_c given only)]``.

    Parameters
    ----------
    gp : GeneralProblem
    m, q, c_hat
        The state, as in :func:`~popdyn.models.lora.general_loss`.
    lr : float
        Step of u_hat, > 0.
    lr_c : float, optional
        Step of c_hat; None when c_hat is frozen (no c_hat block).
    n_mc : int
        Scrambled-Sobol points in the k + 2 Gaussian coordinates (the draws of
        :func:`~popdyn.models.lora.general.gradient_second_moment_general`, common to every state).
    seed : int
        Seed of the draws.

    Returns
    -------
    ndarray of shape (n, n)
        ``n = 1 + k [not project] + k [lr_c given]``.

    Notes
    -----
    Regime: batch 1, the unnormalised step (the normalisation changes the increments at order ``lr^2 d``, a
    drift, not a fluctuation). The sample increments are exact functions of the Gaussian coordinates
    ``(W x, <u, x>, <u_hat, x>)``, so Sigma does not depend on d.

    Accuracy: a randomised quasi-Monte Carlo estimate (unbiased), no bound; the mean over scrambles agrees with the
    Monte Carlo covariance of the full d-dimensional stochastic gradient (tests/test_lora_joint.py) and, under A2,
    its (m, m) entry with the exact ``lr^2 [4 (1 - m^2) B1(m) - (h(m)(1 - m^2))^2]`` (16 scrambles within 7.9 of
    their SE; measured 0.23 of it, tests/test_accuracy_lora.py). One scramble at
    ``n_mc = 2^12`` is off, in its largest entry relative to the largest, by 2-3 % (median; sigmoid), 7-8 % (relu),
    20-24 % (quadratic) and 40-70 % (He3, whose gradient moments are heavy tailed) at ``k = 8`` (measured, 16
    scrambles against 4 x 2^16 points); :func:`diffusion_paths` therefore draws fresh points at every step.

    References
    ----------
    .. [src] derived in docs/lora.md (diffusion theory of joint training); [Dayi25, eq. (4), App. B (Fig. 4)].

    Examples
    --------
    >>> from popdyn.models import lora
    >>> gp = lora.GeneralProblem(lora.Problem.orthonormal(4, 1.0, seed=0), np.zeros(4), project=False)
    >>> increment_covariance(gp, 0.1, np.zeros(4), lr=0.01, lr_c=0.01).shape
    (9, 9)
    """
    m, q, c_hat = _state(gp, m, q, c_hat)
    lr = check("lora.increment_covariance", "lr", lr, Interval(0, np.inf, closed="neither"))
    if lr_c is not None:
        lr_c = check("lora.increment_covariance", "lr_c", lr_c, Interval(0, np.inf, closed="left"))
    n_mc = check("lora.increment_covariance", "n_mc", n_mc, Integer(2))
    inc = _increments(gp, m, q, c_hat, lr, lr_c, _sample(gp, m, q, c_hat, n_mc, seed))
    inc = inc - inc.mean(axis=0)
    return inc.T @ inc / (n_mc - 1)


def _valid(gp, y):
    """Pull a state back onto the overlaps of a unit u_hat: |m| <= sqrt(1 - alpha^2) projected; otherwise
    ``q^T G^+ q + t_1^2 <= 1`` with ``t_1 = (m - p^T G^+ q)/sqrt(1 - alpha^2)``, by scaling (m, q) (linear in
    u_hat's coordinates)."""
    s = math.sqrt(max(1.0 - gp.alpha**2, 0.0))
    if gp.project:
        y[0] = min(max(y[0], -s), s)
        return y
    k = gp.k
    q = y[1:k + 1]
    Gq = gp.G_pinv @ q
    t1 = (y[0] - gp.p @ Gq) / s
    n2 = q @ Gq + t1 * t1
    if n2 > 1.0:
        y[:k + 1] /= math.sqrt(n2)
    return y


def diffusion_paths(gp, *, d, lr, t, m0, q0=None, lr_c=None, paths=16, dtau=0.05, n_mc=_N_MC, seed=0,
                    noise=True):
    r"""Paths of the order parameters under the diffusion theory of online SGD (Euler-Maruyama).

    .. math:: X_{n+h} = X_n + h\,b(X_n) + \sqrt h\,\Sigma(X_n)^{1/2}\,N_n,\qquad N_n \sim N(0, I)

    in units of SGD steps, with ``b`` the mean step (:func:`~popdyn.models.lora.general_drift`, corrected:
    population drift plus normalisation drift) and ``Sigma`` the covariance of one step's increments
    (:func:`increment_covariance`); ``h = dtau d`` steps (fewer where a recorded time comes first). Sigma and the
    normalisation term are estimated at every step from ``n_mc`` fresh Gaussian points: the estimates are unbiased
    and independent from step to step, so the injected increments have covariance ``h Sigma`` exactly and the
    drift the right mean, although one estimate of Sigma is off by tens of per cent for the heavy-tailed gradients
    of the polynomial activations (see :func:`increment_covariance`).

    Parameters
    ----------
    gp : GeneralProblem
    d : int
        Input dimension, >= k + 3.
    lr : float
        Step of u_hat, > 0 (``delta = lr d``).
    t : array_like of int
        Increasing step numbers to record, from 0.
    m0 : float
        Initial ``<u, u_hat>``.
    q0 : ndarray of shape (k,), optional
        Initial ``W u_hat`` (unprojected only); default 0.
    lr_c : float, optional
        Step of c_hat; None keeps it frozen.
    paths : int
        Independent paths (>= 1).
    dtau : float
        Largest Euler-Maruyama step in units of ``tau = t/d``, > 0.
    n_mc, seed
        Gaussian points per step for Sigma and the normalisation term, and the seed of every draw.
    noise : bool
        False drops Sigma: every path is the Euler solution of the population ODE (a null), on the fixed
        scrambled-Sobol points of ``(n_mc, seed)`` as the ODE.

    Returns
    -------
    ndarray of shape (len(t), paths, n)
        States ``[m, q (project=False), c_hat (lr_c given)]``.

    Notes
    -----
    Regime: online SGD with ``lr = delta/d``, ``lr_c`` of the same order, ``delta`` small enough for the
    first-order normalisation drift (as the ODE); the diffusion keeps the O(delta^2/d) fluctuations that the
    ODE drops. Euler-Maruyama has weak order 1 in ``dtau`` (path means move by 0.01 from ``dtau = 0.1`` to 0.05
    for He3 at ``xi = sqrt(k)``, within the path error); a state leaving the overlaps of a unit u_hat is
    scaled back onto them.

    Accuracy: the path means carry the Monte Carlo error ``SD/sqrt(paths)`` (use the spread over paths), the
    time step's O(dtau) bias and Sigma's quadrature error (:func:`increment_covariance`).

    References
    ----------
    .. [src] derived in docs/lora.md (diffusion theory of joint training); [Dayi25, App. B (Fig. 4)].

    Examples
    --------
    >>> from popdyn.models import lora
    >>> gp = lora.GeneralProblem(lora.Problem.orthonormal(4, 1.0, seed=0), np.zeros(4), project=False)
    >>> X = diffusion_paths(gp, d=100, lr=1e-3, t=[0, 50, 100], m0=0.1, lr_c=1e-3, paths=2, dtau=0.5)
    >>> X.shape
    (3, 2, 9)
    """
    owner = "lora.diffusion_paths"
    k = gp.k
    d = check(owner, "d", d, Integer(k + 3))
    paths = check(owner, "paths", paths, Integer(1))
    dtau = check(owner, "dtau", dtau, Interval(0, np.inf, closed="neither"))
    t = np.asarray(t, dtype=np.float64)
    if t.ndim != 1 or t.size < 1 or t[0] != 0 or np.any(np.diff(t) <= 0):
        raise InvalidParameterError(f"The 't' parameter of {owner} must be increasing step numbers from 0. "
                                    f"Got {t!r} instead.")
    q0 = np.zeros(k) if q0 is None else np.asarray(q0, dtype=np.float64)
    y0 = np.r_[float(m0), q0 if not gp.project else [], gp.problem.c_hat if lr_c is not None else []]
    sq = slice(1, 1 + (0 if gp.project else k))
    sc = slice(sq.stop, sq.stop + (0 if lr_c is None else k))
    rng = np.random.default_rng(seed)
    h_max = dtau * d
    out = np.empty((t.size, paths, y0.size))
    for p in range(paths):
        y = y0.copy()
        out[0, p] = y
        for i in range(1, t.size):
            n_sub = max(1, math.ceil((t[i] - t[i - 1]) / h_max - 1e-9))
            h = (t[i] - t[i - 1]) / n_sub
            for _ in range(n_sub):
                m, q, c = _state(gp, y[0], None if gp.project else y[sq], y[sc] if lr_c is not None else None)
                s = _sample(gp, m, q, c, n_mc, seed, rng=rng if noise else None)  # fresh points: errors average out
                dm, dq, dc = general_drift(gp, m, None if gp.project else q, c, lr=lr, lr_c=lr_c,
                                           convention="paper")
                e2 = 0.5 * lr**2 * _second_moment_of(s, d)       # the normalisation drift, as general_drift
                step = h * np.r_[dm - e2 * m, (dq - e2 * q)[:sq.stop - sq.start], dc[:sc.stop - sc.start]]
                if noise:
                    inc = _increments(gp, m, q, c, lr, lr_c, s)
                    inc = inc - inc.mean(axis=0)
                    # a root of h Sigma from the centred increments: (inc / sqrt(n-1)) has Gram Sigma
                    step += math.sqrt(h / (n_mc - 1)) * (rng.standard_normal(n_mc) @ inc)
                y = _valid(gp, y + step)
            out[i, p] = y
    return out
