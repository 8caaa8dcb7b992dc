"""Contrastive representations of finitely many points and the XOR counterexample ([Shi24] ch. 7, Theorem 7.2,
App. F.1.1; docs/contrastive.md).

Public names
------------
:func:`point_contrastive_loss` (the contrastive loss (F.28) of a table of representation vectors),
:func:`optimal_point_representation` (its minimum over vectors of a given norm, multi-start),
:func:`linear_probe_error` (the population squared error of the best linear probe),
:func:`xor_counterexample` (the example of App. F.1.1 and its two comparison maps).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from ..._validate import FiniteArray, Interval, InvalidParameterError, Options, as_int, check
from .loss import _loss

__all__ = ["point_contrastive_loss", "optimal_point_representation", "linear_probe_error", "xor_counterexample"]

_GTOL = 1e-11  # BFGS gradient tolerance: the loss is then within ~1e-16 of the local minimum (quadratic convergence)


def _probabilities(owner, p, n):
    """The law of the n points: uniform when p is None, else a probability vector of shape (n,)."""
    if p is None:
        return np.full(n, 1.0 / n)
    p = check(owner, "p", p, FiniteArray(1, (n,)))
    if not (np.all(p >= 0) and abs(p.sum() - 1) <= 1e-12):  # 1e-12: float round-off of a probability vector
        raise InvalidParameterError(f"The 'p' parameter of {owner} must be a probability vector of shape ({n},). "
                                    f"Got {p!r} instead.")
    return p


def _value_and_grad(H, p, ell, dell):
    """L(H) = sum_ab p_a p_b ell(h_a.h_a - h_a.h_b) and its gradient in H (the diagonal terms are ell(0), constant)."""
    G = H @ H.T
    A = np.diag(G)[:, None] - G
    P = p[:, None] * p[None, :]
    D = P * dell(A)
    np.fill_diagonal(D, 0.0)
    return float(np.sum(P * ell(A))), 2 * D.sum(1)[:, None] * H - (D + D.T) @ H


def point_contrastive_loss(H, p=None, loss="logistic"):
    r"""Contrastive loss of a representation of finitely many points, without spurious features (z^+ = z).

    .. math:: \mathcal L(h) = \mathbb E_{z, z^-}\,\ell\big(h(z)^\top h(z) - h(z)^\top h(z^-)\big)
              = \sum_{a,b} p_a p_b\,\ell\big(\lVert h_a\rVert^2 - h_a^\top h_b\big)

    Parameters
    ----------
    H : ndarray of shape (n, k)
        Row a is the representation h_a = phi(g(z_a)) of the a-th value of z_R.
    p : ndarray of shape (n,) or None
        Law of z_R (non-negative, summing to 1); None is uniform.
    loss : {"logistic", "exp", "linear"}
        ell(t) = log(1 + e^{-t}), e^{-t} or -t.

    Returns
    -------
    float

    Notes
    -----
    Regime: U empty (or phi independent of z_U), where (F.28) is the loss itself, not a lower bound; the negative
    z^- is an independent copy, so a = b contributes ell(0). Exact up to float rounding (n^2 terms).

    References
    ----------
    .. [src] [Shi24, proof of Theorem 7.2 = Theorem F.2, (F.23)-(F.28), (F.30)].

    Examples
    --------
    >>> _, _, H = xor_counterexample()
    >>> ell = lambda t: np.logaddexp(0.0, -t)  # noqa: E731
    >>> bool(abs(point_contrastive_loss(H) - (ell(0) + ell(2) + 2 * ell(1)) / 4) < 1e-15)
    True
    """
    owner = "contrastive.point_contrastive_loss"
    H = check(owner, "H", H, FiniteArray(2))
    ell, dell = _loss(owner, loss)
    return _value_and_grad(H, _probabilities(owner, p, H.shape[0]), ell, dell)[0]


def optimal_point_representation(n_points, dim=2, p=None, loss="logistic", norm=1.0, starts=100, seed=0):
    r"""Minimum of the contrastive loss over representations of n points by vectors of norm B_r in R^dim.

    .. math:: \min_{h_1..h_n\in\mathbb R^{\dim},\ \lVert h_a\rVert = B_r}\ \sum_{a,b} p_a p_b\,
              \ell\big(B_r^2 - h_a^\top h_b\big)

    by BFGS on h_a = B_r v_a / ||v_a|| with the exact gradient, from ``starts`` random Gaussian v.

    Parameters
    ----------
    n_points : int
        Number n of values of z_R (>= 1).
    dim : int
        Dimension of the representation (>= 1).
    p : ndarray of shape (n_points,) or None
        Law of z_R; None is uniform.
    loss : {"logistic", "exp", "linear"}
    norm : float
        The common norm B_r > 0 of every representation vector (assumption (A2)).
    starts : int
        Number of random starts (>= 1).
    seed : int
        Seed of the starts.

    Returns
    -------
    values : ndarray of shape (starts,)
        The loss at the end of each start, ascending: ``values[0]`` is the best found.
    H : ndarray of shape (starts, n_points, dim)
        The representations, in the same order.

    Notes
    -----
    Regime: any n, dim and law p. The loss is not convex in H, so the global minimum is the best over the starts,
    not certified in general (for n = 4, dim = 2 and uniform p all of 2000 starts reached it; the claim
    ``contrastive.xor_counterexample`` certifies that case by a grid). Accuracy: each start stops at a gradient norm
    below 1e-11, within about 1e-16 of its local minimum (measured: the best of 2000 starts equals the XOR map's
    closed form to 1.7e-16).

    References
    ----------
    .. [src] [Shi24, Theorem 7.2 (assumption (A2)), App. F.1.1]; the method in docs/contrastive.md.

    Examples
    --------
    >>> values, H = optimal_point_representation(2, dim=1, starts=3)  # two points: antipodal, loss (ell(0)+ell(2))/2
    >>> bool(abs(values[0] - (np.log(2) + np.log1p(np.exp(-2))) / 2) < 1e-15), float(abs(H[0, 0, 0] * H[0, 1, 0]))
    (True, 1.0)
    """
    owner = "contrastive.optimal_point_representation"
    n, dim = as_int(owner, "n_points", n_points, low=1), as_int(owner, "dim", dim, low=1)
    p = _probabilities(owner, p, n)
    ell, dell = _loss(owner, loss)
    norm = check(owner, "norm", norm, Interval(0.0, np.inf, "neither"))
    starts = as_int(owner, "starts", starts, low=1)
    rng = np.random.default_rng(as_int(owner, "seed", seed))

    def fun(v):
        # the loss of the directions h_a = B_r v_a / ||v_a|| plus sum_a (||v_a||^2 - 1)^2 / 2: separable in direction
        # and radius, so the same minimising h, with the radii held near 1 (without it BFGS drifts outwards, where the
        # gradient ~ 1 / ||v|| vanishes before the loss has converged)
        V = v.reshape(n, dim)
        r = np.linalg.norm(V, axis=1, keepdims=True)
        H = norm * V / r
        val, g = _value_and_grad(H, p, ell, dell)
        g = g - np.sum(g * H, axis=1, keepdims=True) * H / norm**2   # tangent to the sphere of radius norm
        return val + 0.5 * np.sum((r**2 - 1) ** 2), (norm * g / r + 2 * (r**2 - 1) * V).ravel()

    out = []
    for _ in range(starts):
        res = minimize(fun, rng.standard_normal(n * dim), jac=True, method="BFGS", options={"gtol": _GTOL})
        V = res.x.reshape(n, dim)
        H = norm * V / np.linalg.norm(V, axis=1, keepdims=True)
        out.append((point_contrastive_loss(H, p, loss), H))
    out.sort(key=lambda x: x[0])
    return np.array([v for v, _ in out]), np.array([H for _, H in out])


def linear_probe_error(H, y, p=None, intercept=False):
    r"""Population squared error of the best linear probe u^T h (+ b) of labels y on a finite representation.

    .. math:: \min_{u(, b)}\ \sum_a p_a\,\big(u^\top h_a (+ b) - y_a\big)^2

    Parameters
    ----------
    H : ndarray of shape (n, k)
        Representation of each of the n points.
    y : ndarray of shape (n,)
        Label of each point.
    p : ndarray of shape (n,) or None
        Law of the points; None is uniform.
    intercept : bool
        Fit a bias b too.

    Returns
    -------
    float
        The minimal mean squared error (E y^2 for the trivial probe u = 0; Var y with an intercept).

    Notes
    -----
    Regime: any finite table; the minimiser by weighted least squares (numpy lstsq), exact up to float rounding
    (absolute error below 1e-14 for entries of order 1).

    References
    ----------
    .. [src] [Shi24, App. F.1.1] (linear probing (7.2) in the population limit, squared loss).

    Examples
    --------
    >>> points, labels, H = xor_counterexample()
    >>> round(linear_probe_error(H, labels), 12), round(linear_probe_error(points / np.sqrt(2), labels), 12)
    (1.0, 0.0)
    """
    owner = "contrastive.linear_probe_error"
    H = check(owner, "H", H, FiniteArray(2))
    y = check(owner, "y", y, FiniteArray(1, (H.shape[0],)))
    p = _probabilities(owner, p, H.shape[0])
    intercept = check(owner, "intercept", intercept, Options((False, True)))
    X = np.hstack([H, np.ones((H.shape[0], 1))]) if intercept else H
    w = np.sqrt(p)
    u = np.linalg.lstsq(w[:, None] * X, w * y, rcond=None)[0]
    return float(p @ (X @ u - y) ** 2)


_MAPS = {"xor": np.array([[-1.0, 0.0], [1.0, 0.0], [0.0, -1.0], [0.0, 1.0]]),
         "linear": np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]]) / np.sqrt(2),
         "label": np.array([[-1.0, 0.0], [-1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])}


def xor_counterexample(representation="xor"):
    r"""The example of App. F.1.1: z_R uniform on {-1, 1}^2, label y = z_1, unit-norm representations in R^2.

    .. math:: h(-1,-1) = (-1, 0),\ h(-1,1) = (1, 0),\ h(1,-1) = (0,-1),\ h(1,1) = (0, 1)\quad(\text{"xor"});\qquad
              h(z) = z/\sqrt2\ (\text{"linear"});\qquad h(z) = (z_1, 0)\ (\text{"label"})

    Parameters
    ----------
    representation : {"xor", "linear", "label"}
        The paper's XOR-structured map; the best unit-norm map linear in z_R (h = Az with orthogonal columns of
        squared norms p, 1 - p, the loss convex in p, minimal at p = 1/2); the map encoding only the label.

    Returns
    -------
    points : ndarray of shape (4, 2)
        The values of z_R: (-1,-1), (-1,1), (1,-1), (1,1).
    labels : ndarray of shape (4,)
        y = z_1.
    H : ndarray of shape (4, 2)
        The representation of each point.

    Notes
    -----
    Regime: the paper does not give the law of z_R; popdyn takes it uniform (with another law the four points are no
    longer equally spaced at the optimum, docs/contrastive.md). Under the logistic loss the "xor" and "linear" maps
    both have the loss (ell(0) + ell(2) + 2 ell(1)) / 4 = 0.3616496, the global minimum; "label" has
    (ell(0) + ell(2)) / 2 = 0.4100376. The best linear probe has squared error 1 = E y^2 on "xor" (the trivial
    probe) and 0 on "linear" and "label".

    References
    ----------
    .. [src] [Shi24, App. F.1.1, Fig. F.1].

    Examples
    --------
    >>> points, labels, H = xor_counterexample()
    >>> H[labels == 1].tolist(), H[labels == -1].tolist()  # each class sits on an antipodal pair: XOR in phi-space
    ([[0.0, -1.0], [0.0, 1.0]], [[-1.0, 0.0], [1.0, 0.0]])
    """
    representation = check("contrastive.xor_counterexample", "representation", representation, Options(tuple(_MAPS)))
    points = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
    return points, points[:, 0].copy(), _MAPS[representation].copy()
