r"""The classifier stage of [Shi22]: the optimal second layer on fixed features (LP/QP), Lemma 23's explicit
second layer, and the exact reduced population GD on the class-relevant line (derived in docs/emergence.md).

Every P-labeling puts the population on the counts ``c = 0..k`` (weights ``pi_c``, labels ``y_c``,
``PatternModel.count_law``); a feature table ``F`` has one row per count (or per support row) and one column
per neuron.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.optimize import linprog, minimize

from ..._dd import dd_sum
from ..._validate import FiniteArray, Interval, InvalidParameterError, Options, as_int, check
from .activation import smooth_trunc_relu, window
from .data import gram, incoherence
from .network import _SCALES, TwoLayerParams, ground_truth_network

__all__ = ["hinge_and_error", "optimal_second_layer", "lemma23_construction", "line_params",
           "reduced_population_gd", "ReducedTrajectory"]


def _table(owner, F, pi, y):
    F = check(owner, "F", F, FiniteArray(2))
    pi = check(owner, "pi", pi, FiniteArray(1, (F.shape[0],)))
    y = check(owner, "y", y, FiniteArray(1, (F.shape[0],)))
    if np.any(pi < 0) or not abs(pi.sum() - 1.0) < 1e-9 or np.any(np.abs(y) != 1.0):
        raise InvalidParameterError(f"The 'pi' and 'y' parameters of {owner} must be probabilities summing to 1 "
                                    f"and +-1 labels. Got sum(pi) = {pi.sum()!r}, labels {np.unique(y).tolist()}.")
    return F, pi / pi.sum(), y   # summing to 1 within 1e-9 is accepted: normalised, an error is never above 1


def hinge_and_error(F, pi, y, a):
    r"""Population hinge loss and 0-1 error of ``g = F a`` on a finite support.

    .. math:: L = \sum_c\pi_c\max(0, 1 - y_c(Fa)_c),\qquad \mathrm{err} = \sum_c\pi_c\big(\mathbb 1[y_c(Fa)_c<0]
              + \tfrac12\mathbb 1[(Fa)_c = 0]\big)

    Parameters
    ----------
    F : array_like of shape (R, n)
        Features per support point.
    pi : array_like of shape (R,)
        Probabilities.
    y : array_like of shape (R,)
        Labels.
    a : array_like of shape (n,)
        Second layer.

    Returns
    -------
    loss, error : float
        (``g = 0`` counts as half an error: a fair coin breaks the tie, so ``g = 0`` everywhere has error 1/2.)

    Notes
    -----
    Accuracy: loss absolute error <= 2 (n + 2) eps sum_c pi_c (1 + sum_i |F_ci a_i|); the error exact where no |g_c| is
    within that of 0, and in [0, 1] (pi is normalised; before, 1 + 1e-9 when pi summed to 1 + 1e-9); measured 0.28 of
    the bound (tests/test_accuracy_emergence.py, exact rationals).
    Regime: exact for any finite support.

    References
    ----------
    .. [src] [Shi22, Section 3.1]; the LP derived in docs/emergence.md.
    """
    F, pi, y = _table("emergence.hinge_and_error", F, pi, y)
    m = y * (F @ np.asarray(a, float))
    return float(pi @ np.maximum(0.0, 1.0 - m)), min(1.0, float(pi @ _err(m)))   # the sum may round past 1


def _err(margin):
    """0-1 error of a margin ``y g``, a tie ``g = 0`` counting 1/2."""
    return (margin < 0.0) + 0.5 * (margin == 0.0)


def _l2_dual(F, pi, y, lam):
    """Solve max_{0 <= al <= pi} sum al - ||sum al y F||^2/(4 lam); return a = sum al y F/(2 lam) and al."""
    G = (y[:, None] * F)

    def f(al):
        v = al @ G
        return -(al.sum() - v @ v / (4.0 * lam)), -(1.0 - G @ v / (2.0 * lam))
    res = minimize(f, pi / 2.0, jac=True, method="L-BFGS-B", bounds=list(zip(np.zeros_like(pi), pi)),
                   options={"ftol": 1e-15, "gtol": 1e-13, "maxiter": 10_000})
    return res.x @ G / (2.0 * lam), res.x


def optimal_second_layer(F, pi, y, reg=None):
    r"""The population-optimal second layer on fixed features: an LP, or a QP with an l2 penalty or ball.

    .. math:: \min_{a}\sum_c\pi_c\max(0, 1 - y_c(Fa)_c)\ \big[+\lambda\|a\|^2\ \text{or s.t.}\ \|a\|\le B\big]

    The LP is solved with HiGHS; the l2 problem through its dual
    ``max_{0 <= alpha <= pi} sum alpha - ||sum alpha_c y_c F_c||^2/(4 lam)``, ``a = sum alpha y F/(2 lam)``;
    the ball by bisection on ``lam`` (``||a(lam)||`` decreases in ``lam``).

    Parameters
    ----------
    F : array_like of shape (R, n)
        Feature table (:func:`~popdyn.models.emergence.two_step_features`).
    pi : array_like of shape (R,)
        Probabilities of the rows.
    y : array_like of shape (R,)
        Labels of the rows.
    reg : None or ("l2", lam) or ("ball", B)
        Regulariser: none (LP), ``lam > 0``, or ``B > 0``.

    Returns
    -------
    a : ndarray of shape (n,)
    loss : float
        The population hinge loss of ``a`` (without the penalty).

    Notes
    -----
    Accuracy: LP: loss - OPT <= 1e-6 max(1, OPT) for features of scale 1e-3..1e3 (HiGHS's tolerances are 1e-7; the loss
    is the exact loss of the a returned, so never below OPT); measured 2e-4 of the bound
    (tests/test_accuracy_emergence.py, brute force over the vertices of the hinge arrangement, n <= 2). "l2", "ball":
    L-BFGS-B on the dual (ftol 1e-15) carries no certificate; the loss is that of the a returned.
    Regime: any table. Loss 0 in the LP means the features separate the labels with margin 1 (two-step features
    on the parity mixture; one-step features are constant and give 1 at balanced classes). The separating
    ``a`` of least norm can be huge at small k, m (docs/emergence.md).

    References
    ----------
    .. [src] [Shi22, Lemma 23 and its proof (App. B.5), Theorem 26].

    Examples
    --------
    >>> a, loss = optimal_second_layer(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0.5, 0.5]), np.array([1.0, -1.0]))
    >>> loss, a.tolist()
    (0.0, [1.0, -1.0])
    """
    owner = "emergence.optimal_second_layer"
    F, pi, y = _table(owner, F, pi, y)
    R, n = F.shape
    if reg is None:
        c = np.concatenate([np.zeros(n), pi])
        A = np.hstack([-(y[:, None] * F), -np.eye(R)])
        res = linprog(c, A_ub=A, b_ub=-np.ones(R), bounds=[(None, None)] * n + [(0, None)] * R, method="highs")
        if res.status != 0:
            raise RuntimeError(f"{owner}: the LP failed ({res.message}); rescale the features.")
        a = res.x[:n]
        return a, hinge_and_error(F, pi, y, a)[0]
    kind = check(owner, "reg", reg[0] if isinstance(reg, tuple) and len(reg) == 2 else reg, Options(("l2", "ball")))
    val = check(owner, "reg", reg[1], Interval(0.0, np.inf, "neither"))
    if kind == "l2":
        a = _l2_dual(F, pi, y, val)[0]
        return a, hinge_and_error(F, pi, y, a)[0]
    lo, hi = -30.0, 10.0                       # log lam bracket: ||a(lam)|| runs from ~the LP optimum to ~0
    if np.linalg.norm(_l2_dual(F, pi, y, np.exp(lo))[0]) <= val:
        hi = lo
    for _ in range(50 if hi > lo else 0):       # bracket width 40 / 2^50: lam to 4e-14 relative
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if np.linalg.norm(_l2_dual(F, pi, y, np.exp(mid))[0]) <= val else (mid, hi)
    a = _l2_dual(F, pi, y, np.exp(hi))[0]
    return a, hinge_and_error(F, pi, y, a)[0]


def lemma23_construction(model, params2, eps_a=None, n_a=None, scale="main"):
    r"""Lemma 23's explicit second layer on the two-step features, targeting ``2 g*`` (Lemma 5).

    Neuron i (two-step feature ``sigma(alpha_i (c - mu_A) + b_i)``, ``alpha_i = a_i^(0) beta gamma/sigma~^2``) is
    assigned to target neuron ``l`` of ``g*`` (``sigma((c - mu_A)/K + b*_l)``, ``K = 4k``) when

    .. math:: \tfrac1{2k^2}\le|b_i|\le\tfrac2{k^2},\quad \mathrm{sign}\,b_i = \mathrm{sign}\,b^*_\ell,\quad
              \Big|\frac{K|b^*_\ell|\alpha_i}{|b_i|} - 1\Big|\le\epsilon_a,

    at most ``n_a`` neurons per target (disjoint: the targets in the order of ``g*``'s neurons, each taking the
    first ``n_a`` still unassigned neurons that qualify, by index), and ``a~_i = 2a*_l |b*_l|/(|b_i| n_l)``
    (``n_l`` = neurons assigned to l). Then ``g~ = sum a~_i F_i ~ 2 g*`` up to ``O(k^4/m + k^2 eps_a)``.

    Parameters
    ----------
    model : PatternModel
        A P-labeling.
    params2 : TwoLayerParams
        Two-step parameters with ``q_i = alpha_i sigma~ 1_A`` (:func:`~popdyn.models.emergence.two_step_limit`).
    eps_a : float or None
        Tolerance of the scale match, > 0; None gives ``1/k^2``.
    n_a : int or None
        Neurons per target, >= 1; None gives ``max(1, floor(eps_a m / 4))`` with ``m = n/2`` (the paper's
        ``n_a = eps_a m/4`` for its 2m neurons), the floor of the exact product (not of its rounding).
    scale : {"main", "general"}
        Target network of :func:`~popdyn.models.emergence.ground_truth_network`.

    Returns
    -------
    a_tilde : ndarray of shape (n,)
    sets : list of ndarray
        The neurons assigned to each of the ``3(k+1)`` targets; an empty set means the construction does not
        exist at this width (its target is dropped from ``g~``).

    Notes
    -----
    Accuracy: a_tilde relative error <= 8 eps of its formula; the assignments are exact decisions except within 4 eps
    (relative) of the bias window's ends and within 5 eps of the scale-match thresholds ``1 +- eps_a`` (relative to
    ``max(|1 +- eps_a|, eps_a)``): the ratio carries 9.5 roundings of eps/2 at most, 2.5 from sigma~, 3 from b*_l
    (:func:`ground_truth_network`) and 4 of its own (``sum_A q_ij`` in double-double, ``K/k`` a power of 2).
    Measured: a_tilde 0.15 of the bound, the ratio 2.7 eps (tests/test_accuracy_emergence.py, exact rationals,
    sigma~ at 50 digits). Before:
    mu_A summed plainly over the 2^k support rows cancelled in ``b*_l = -(p - mu_A + off + d)/K`` (a_tilde 1119 eps
    off at k = 12, the ratio 1e3 eps), and the default n_a was the floor of the rounded ``eps_a n/8``.
    Regime: ``m`` large enough that every target finds a neuron (the probability of the bias window is
    ``Phi(2) - Phi(1/2) = 0.286`` per sign, the scale match ``~ eps_a``); the approximation also needs the
    rescale ``|b_i|/|b*_l| <= 1`` so that the truncation stays inactive (``k >= 64`` in the worst case).

    References
    ----------
    .. [src] [Shi22, Lemma 23, eqs. (218)-(247); n_a = eps_a m/4 in its proof, after (222)].
    """
    owner = "emergence.lemma23_construction"
    k, n = model.k, params2.n
    eps_a = 1.0 / k ** 2 if eps_a is None else check(owner, "eps_a", eps_a, Interval(0.0, np.inf, "neither"))
    n_a = max(1, math.floor(Fraction(eps_a) * n / 8)) if n_a is None else as_int(owner, "n_a", n_a, 1)
    if np.any(params2.Q[:, k:] != 0.0):
        raise InvalidParameterError(f"The 'params2' parameter of {owner} must lie in the class-relevant span "
                                    f"(Q[:, k:] = 0). Got max |Q[:, k:]| = {np.abs(params2.Q[:, k:]).max():.3g}.")
    mom = model.moments()
    star = ground_truth_network(model, scale)
    K_k = _SCALES[scale][2]                                 # K / k, a power of 2
    b = params2.b
    free = (np.abs(b) >= 0.5 / k ** 2) & (np.abs(b) <= 2.0 / k ** 2)
    a_tilde, sets = np.zeros(n), []
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = dd_sum(params2.Q[:, :k])[0] / np.abs(b)      # k alpha_i sigma~ / |b_i|: <q, phi> = alpha (c - mu_A)
        for bs, As in zip(star.b, star.a):
            ok = free & (np.sign(b) == np.sign(bs)) & (np.abs(K_k * abs(bs) / mom.sigt * r - 1.0) <= eps_a)
            idx = np.flatnonzero(ok)[:n_a]
            free[idx] = False
            a_tilde[idx] = 2.0 * As * abs(bs) / (np.abs(b[idx]) * max(len(idx), 1))
            sets.append(idx)
    return a_tilde, sets


def line_params(model, alpha, b, a):
    r"""Full parameters of a network on the class-relevant line: ``q_i = alpha_i v``, ``v = k^{-1/2} 1_A``.

    .. math:: q_i = \frac{\alpha_i}{\sqrt k}\mathbf 1_A,\qquad \langle q_i,\phi\rangle =
              \alpha_i\frac{c-\mu_A}{\tilde\sigma\sqrt k}

    Parameters
    ----------
    model : PatternModel
    alpha, b, a : array_like of shape (n,)
        Line coordinates, biases and second layer.

    Returns
    -------
    TwoLayerParams

    Notes
    -----
    Accuracy: relative error <= 2^-52 (alpha_i / sqrt(k): two roundings); measured 0.76 of the bound
    (tests/test_accuracy_emergence.py, mpmath).
    Regime: any; the line is invariant under population GD for exchangeable count labelings (docs/emergence.md).

    References
    ----------
    .. [src] derived in docs/emergence.md.
    """
    alpha = check("emergence.line_params", "alpha", alpha, FiniteArray(1))
    Q = np.zeros((alpha.size, model.D))
    Q[:, :model.k] = alpha[:, None] / np.sqrt(model.k)
    return TwoLayerParams(Q, b, a)


@dataclass(frozen=True)
class ReducedTrajectory:
    """Population hinge loss and 0-1 error per step ``t = 0..T`` and the final ``(alpha, b, a)``."""
    t: np.ndarray
    loss: np.ndarray
    error: np.ndarray
    alpha: np.ndarray
    b: np.ndarray
    a: np.ndarray


_TRAIN = ("alpha", "b", "a")


def _exchangeable(model):
    """True when E[phi~_j | c] = c/k for every j in A (the line v is then invariant)."""
    if not hasattr(model, "A_support"):
        return True                                      # the count-resolved iid block
    c = model.A_support.sum(1)
    for n in np.unique(c):
        rows = c == n
        cond = model.A_probs[rows] @ model.A_support[rows] / model.A_probs[rows].sum()
        if model.A_probs[rows].sum() > 0 and np.abs(cond - n / model.k).max() > 1e-12:
            return False
    return True


def reduced_population_gd(model, alpha, b, a, eta, lam, T, train=_TRAIN, s=0.0):
    r"""Exact population GD of the whole network restricted to the invariant class-relevant line.

    With ``u_c = (c - mu_A)/(sigma~ sqrt k)``, ``z_i(c) = alpha_i u_c + b_i``, ``g(c) = sum_i a_i sigma~_s(z_i)``:

    .. math:: L = \sum_c\pi_c\max(0, 1 - y_cg(c)) + \lambda\sum_i(a_i^2 + \alpha_i^2),\quad
              \partial_{\alpha_i}L = -\sum_c\pi_cy_c\mathbb 1[y_cg\le1]a_i\mathrm{win}_s(z_i)u_c + 2\lambda\alpha_i,

    .. math:: \partial_{b_i}L = -\sum_c\pi_cy_c\mathbb 1[y_cg\le1]a_i\mathrm{win}_s(z_i),\quad
              \partial_{a_i}L = -\sum_c\pi_cy_c\mathbb 1[y_cg\le1]\tilde\sigma_s(z_i) + 2\lambda a_i,

    ``theta <- theta - eta grad L`` for the parameters in ``train``. The line ``q_i = alpha_i k^{-1/2} 1_A`` is
    invariant, so this equals the full population GD started there (:func:`line_params`).

    Parameters
    ----------
    model : PatternModel
        A count labeling with an exchangeable A block.
    alpha, b, a : array_like of shape (n,)
        Initial line coordinates, biases, second layer (two steps: ``alpha = a^(0) h(b^(0)) (gamma/sigma~)
        sqrt k``, ``b = b^(0)``, ``a = 0``).
    eta : float
        Step size, > 0.
    lam : float
        Weight decay, >= 0.
    T : int
        Number of steps, >= 0.
    train : tuple of str
        Subset of ("alpha", "b", "a"); ``("a",)`` is second-layer training on fixed features (convex).
    s : float
        Smoothing, >= 0 (stage 3: 0, the truncated ReLU with the open-interval derivative).

    Returns
    -------
    ReducedTrajectory
        ``loss`` (hinge, no penalty) and ``error`` (``y g < 0``, ties ``g = 0`` counting 1/2) at ``t = 0..T``.

    Notes
    -----
    Accuracy: the loss at step t absolute error <= 1e-12 (1 + t)(1 + ||a_t||_1) and the error exact, in [0, 1], for T <=
    6, away from the hinge kink and (s = 0) the ReLU's kinks (within 1e-9 the iteration is discontinuous and rounding
    may take either branch); measured 2.3e-4 of the bound (tests/test_accuracy_emergence.py, the iteration replayed in
    mpmath at 40 digits). The count law is normalised and the error capped at 1 (sums round).
    Regime: exact for exchangeable A-laws with count labels (parity mixture, interval, threshold) and every
    ``s >= 0``; O(T n (k+1)) work.

    References
    ----------
    .. [src] [Shi22, App. B.6 (stage 3, Theorem 26)]; the reduced dynamics derived in docs/emergence.md.

    Examples
    --------
    >>> from popdyn.models.emergence.data import parity_mixture
    >>> tr = reduced_population_gd(parity_mixture(20, 3, 0.5), [1.0, -1.0], [0.1, 0.1], [0.0, 0.0], 0.1, 0.0, 5)
    >>> float(tr.loss[0])
    1.0
    """
    owner = "emergence.reduced_population_gd"
    alpha = check(owner, "alpha", alpha, FiniteArray(1)).copy()
    b = check(owner, "b", b, FiniteArray(1, alpha.shape)).copy()
    a = check(owner, "a", a, FiniteArray(1, alpha.shape)).copy()
    eta = check(owner, "eta", eta, Interval(0.0, np.inf, "neither"))
    lam = check(owner, "lam", lam, Interval(0.0, np.inf, "left"))
    T = as_int(owner, "T", T, 0)
    s = check(owner, "s", s, Interval(0.0, np.inf, "left"))
    if isinstance(train, str) or not set(train) <= set(_TRAIN):
        raise InvalidParameterError(f"The 'train' parameter of {owner} must be a tuple of names from {list(_TRAIN)}. "
                                    f"Got {train!r} instead.")
    if gram(model) is not None:
        raise InvalidParameterError(f"The 'model' parameter of {owner} must have no dictionary or an orthonormal one: "
                                    f"with rho = M^T M != I the dynamics leave the line of 1_A. Got an incoherent M "
                                    f"(mu = {incoherence(model.M):.3g}).")
    if not _exchangeable(model):
        raise InvalidParameterError(f"The 'model' parameter of {owner} must have an exchangeable A block "
                                    f"(E[phi~_j | c] = c/k for j in A), so that the line is invariant.")
    pi, y = model.count_law()
    pi = pi / pi.sum()   # the count law sums to 1 only to rounding: an error of all counts stays <= 1
    mom = model.moments()
    u = mom.centred(np.arange(model.k + 1)) / (mom.sigt * np.sqrt(model.k))
    loss, err = np.empty(T + 1), np.empty(T + 1)
    for t in range(T + 1):
        Z = u[:, None] * alpha + b
        F = smooth_trunc_relu(Z, s)
        m = y * (F @ a)
        loss[t], err[t] = pi @ np.maximum(0.0, 1.0 - m), min(1.0, pi @ _err(m))   # the sum may round past 1
        if t == T:
            break
        r = pi * y * (m <= 1.0)
        G = r[:, None] * window(Z, s) * a
        ga, gb, gal = -(r @ F) + 2 * lam * a, -G.sum(0), -(u @ G) + 2 * lam * alpha
        if "alpha" in train:
            alpha = alpha - eta * gal
        if "b" in train:
            b = b - eta * gb
        if "a" in train:
            a = a - eta * ga
    return ReducedTrajectory(np.arange(T + 1), loss, err, alpha, b, a)
