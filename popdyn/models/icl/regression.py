r"""Rank-r linear self-attention for in-context linear regression ([Shi24] Ch. 5, Sections 5.3-5.4).

Prompt ``(x_1, y_1, ..., x_N, y_N, x_q)`` with ``x ~ N(0, Lambda)``, task ``w ~ N(0, I_d)`` and
``y_i = <w, x_i>``; the restricted LSA predicts ``y_hat = u (1/n sum_{i<=n} y_i x_i)^T U x_q`` with
``rank U <= r`` (``U = A B^T``, ``A, B in R^{d x r}``), context length ``n = N`` in pretraining and
``n = M`` at evaluation (``rho`` is the label-flip fraction, never a length); the problem
(:class:`popdyn.models.icl.Problem`) calls them ``context`` and ``test_context``. See
docs/icl.md.

Public names
------------
gamma_matrix, population_loss, population_gradient, factor_gradient, excess_loss
    Lemma 5.1 (with its constant ``tr(Lambda)/2``), gradients, excess loss (D.4).
full_rank_optimum, rank_r_optimum, optimum, optimal_loss
    Lemma D.1 and Thm 5.4.1 (value and uniqueness condition).

The evaluation risks are in ``regression_risk``, the gradient dynamics in ``regression_flow``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._validate import FiniteArray, Interval, InvalidParameterError, as_int, check

__all__ = ["ICLOptimum", "spectrum", "gamma_matrix", "population_loss", "population_gradient",
           "factor_gradient", "excess_loss", "full_rank_optimum", "rank_r_optimum", "optimum", "optimal_loss"]

_SYM_TOL = 1e-10   # 1e-10: relative asymmetry of a covariance accepted as float64 rounding
_PSD_TOL = 1e-10   # 1e-10 * lambda_max: eigh rounding of a symmetric matrix (eps * d * ||Lambda|| with margin)
_GAP_TOL = 1e-12   # 1e-12 * lambda_max: eigenvalues closer than this count as tied (uniqueness of Thm 5.4.1)
_SRC = "[Shi24, Sections 5.3-5.4, App. D.2]"


# ---- covariance ---------------------------------------------------------------------------------
def _covariance(owner, Lambda, eig=False):
    """``Lambda`` as a symmetric PSD (d, d) float array; a 1-d array is a diagonal spectrum. With ``eig`` also its
    eigenvalues (descending, clipped at 0) and eigenvectors, from the one decomposition that checks PSD."""
    a = np.asarray(Lambda, dtype=np.float64) if not isinstance(Lambda, str) else Lambda
    if isinstance(a, np.ndarray) and a.ndim == 1:
        a = np.diag(a)
    a = check(owner, "Lambda", a, FiniteArray(2))
    d = a.shape[0]
    if d < 1 or a.shape != (d, d):
        raise InvalidParameterError(f"The 'Lambda' parameter of {owner} must be a square (d, d) covariance "
                                    f"(or its spectrum of shape (d,)). Got shape {a.shape} instead.")
    scale = max(float(np.abs(a).max()), 1e-300)
    if not np.all(np.abs(a - a.T) <= _SYM_TOL * scale):
        raise InvalidParameterError(f"The 'Lambda' parameter of {owner} must be symmetric. Got {a!r} instead.")
    a = (a + a.T) / 2
    if eig:
        lam, Q = np.linalg.eigh(a)
    else:
        lam = np.linalg.eigvalsh(a)
    lo = float(lam[0])
    if lo < -_PSD_TOL * scale or not float(np.trace(a)) > 0:
        raise InvalidParameterError(f"The 'Lambda' parameter of {owner} must be positive semi-definite and "
                                    f"non-zero. Got smallest eigenvalue {lo!r} instead.")
    if eig:
        return a, np.clip(lam[::-1], 0.0, None), Q[:, ::-1]
    return a


def _excess_terms(L, lam, Q, N, U, u):
    """(D.4) in the eigenbasis of Lambda: ``0.5 sum_ij g_i (u sqrt(lam_i lam_j) (Q^T U Q)_ij - delta_ij lam_i v_i)^2``
    (g the eigenvalues of Gamma, lam_i v_i = N lam_i / ((N + 1) lam_i + T)), a sum of squares: >= 0 and relatively
    accurate however close U is to Gamma^{-1}."""
    T = lam.sum()
    g = (1 + 1 / N) * lam + T / N
    s = np.sqrt(lam)
    E = u * (s[:, None] * (Q.T @ U @ Q) * s)
    E.flat[::lam.size + 1] -= N * lam / ((N + 1) * lam + T)
    return 0.5 * float(g @ (E * E).sum(1))


def _loss_star(lam, N, r):
    """L*_r = 0.5 sum_(i<=r) lam_i (lam_i + T)/((N + 1) lam_i + T) + 0.5 sum_(i>r) lam_i: positive terms (the form
    0.5 T - 0.5 sum lam_i^2 v_i cancels by a factor ~N) and no lam_i^2 (which overflowed above 1e154)."""
    T = lam.sum()
    terms = lam.copy()
    terms[:r] = lam[:r] * ((lam[:r] + T) / ((N + 1) * lam[:r] + T))
    return 0.5 * float(terms.sum())


def spectrum(Lambda):
    r"""Eigen-decomposition ``Lambda = Q diag(lam) Q^T`` with ``lam`` in descending order.

    .. math:: \Lambda = Q D Q^\top,\qquad D = \mathrm{diag}(\lambda_1 \ge \dots \ge \lambda_d \ge 0)

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
        Covariance of the inputs (symmetric PSD), or its spectrum (diagonal covariance).

    Returns
    -------
    lam : ndarray of shape (d,)
        Eigenvalues, descending, clipped at 0.
    Q : ndarray of shape (d, d)
        Orthonormal eigenvectors (columns).

    Notes
    -----
    Accuracy: exact for a diagonal Lambda (a matrix or its spectrum); |lam_i - ref| <= 4 d eps lam_max for a rotated
    one (eigh's backward error), against mpmath eigsy at 60 digits; measured 0.18 of it
    (tests/test_accuracy_icl.py).
    Regime: any PSD Lambda. ``eigh`` returns ascending order; the order is reversed (the paper's is descending).

    References
    ----------
    .. [src] [Shi24, Theorem 5.4.1] (notation).

    Examples
    --------
    >>> lam, Q = spectrum([1.0, 3.0, 2.0])
    >>> lam.tolist()
    [3.0, 2.0, 1.0]
    """
    _, lam, Q = _covariance("icl.spectrum", Lambda, eig=True)
    return lam, Q


def _rank(owner, r, d, name="r"):
    return as_int(owner, name, r, low=0, high=d)


def _square(owner, name, U, d):
    U = check(owner, name, U, FiniteArray(2))
    if U.shape != (d, d):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must have shape {(d, d)} (d from "
                                    f"Lambda). Got shape {U.shape} instead.")
    return U


def _vector(owner, name, w, d):
    w = check(owner, name, w, FiniteArray(1))
    if w.shape != (d,):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must have shape {(d,)} (d from "
                                    f"Lambda). Got shape {w.shape} instead.")
    return w


def _scalar(owner, name, x, low=-np.inf, closed="neither"):
    return check(owner, name, x, Interval(low, np.inf, closed=closed))


# ---- Lemma 5.1: population loss and gradients ----------------------------------------------------
def gamma_matrix(Lambda, N):
    r"""The matrix Gamma of Lemma 5.1.

    .. math:: \Gamma = \big(1 + \tfrac1N\big)\Lambda + \tfrac1N \mathrm{tr}(\Lambda)\, I_d

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
        Input covariance, or its spectrum.
    N : int
        Context length, >= 1.

    Returns
    -------
    ndarray of shape (d, d)

    Notes
    -----
    Accuracy: each entry within 4 (d + 2) eps of (1 + 1/N)|Lambda_ij| + T/N delta_ij; measured 0.05 of it
    (tests/test_accuracy_icl.py).
    Regime: any N >= 1, Gaussian inputs. It is ``E[Lambda_hat Lambda^{-1} Lambda_hat]``-type moment:
    ``E[Lambda_hat B Lambda_hat] = (1 + 1/N) Lambda B Lambda + tr(B Lambda) Lambda / N``.

    References
    ----------
    .. [src] [Shi24, Lemma 5.1].

    Examples
    --------
    >>> gamma_matrix([1.0, 1.0], N=2).tolist()  # (1 + 1/2) I + (2/2) I
    [[2.5, 0.0], [0.0, 2.5]]
    """
    L = _covariance("icl.gamma_matrix", Lambda)
    N = as_int("icl.gamma_matrix", "N", N, low=1)
    return (1 + 1 / N) * L + np.trace(L) / N * np.eye(L.shape[0])


def _setup(owner, U, Lambda, N, u):
    L = _covariance(owner, Lambda)
    N = as_int(owner, "N", N, low=1)
    U = _square(owner, "U", U, L.shape[0])
    u = check(owner, "u", u, Interval(-np.inf, np.inf, closed="neither"))
    return U, L, N, u


def population_loss(U, Lambda, N, u=1.0):
    r"""Population pretraining loss of the restricted LSA (Lemma 5.1, constant included).

    .. math:: \mathcal L(U, u) = \mathrm{tr}\Big[\tfrac12 u^2\,\Gamma\Lambda U\Lambda U^\top
              - u\,\Lambda^2 U^\top\Big] + \tfrac12\mathrm{tr}\Lambda

    Parameters
    ----------
    U : ndarray of shape (d, d)
        Key-query block ``W^KQ_11`` (any rank).
    Lambda : ndarray of shape (d, d) or (d,)
        Input covariance, or its spectrum.
    N : int
        Pretraining context length, >= 1.
    u : float
        Value-projection entry ``w^PV_22``.

    Returns
    -------
    float
        ``L = E[(y_hat_q - <w, x_q>)^2] / 2``.

    Notes
    -----
    Accuracy: computed as excess (D.4, a sum of squares in the eigenbasis) + L* (positive terms), never below L*:
    |err| <= 8 (d + 4) eps (L + sqrt(excess S)), S = 0.5 sum_ij g_i (|u| sqrt(lam_i lam_j) |(Q^T U Q)_ij| + delta_ij
    lam_i v_i)^2 the size of the squared terms, plus for a rotated Lambda 4 d^2 eps (S_L + sqrt(excess S_L)), S_L =
    u^2 g_max lam_max^2 ||U||_F^2 + |u| lam_max^2 ||U||_F + T (eigh's backward error); for d <= 8, eigenvalue ratios
    to 1e12, zeros, ties, scales 1e-40 .. 1e40, N to 1e15, U at, near (1e-12) or far from the optimum, against Lemma
    5.1 in mpmath at 60 digits; measured 0.04 of it (tests/test_accuracy_icl.py). The printed form lost a factor ~N
    near the optimum (1e-8 relative at N = 1e9).
    Regime: restricted LSA (the other blocks of ``W^PV``, ``W^KQ`` are 0; docs/icl.md), noiseless
    pretraining labels. Depends on (U, u) only through ``uU``. The constant ``tr(Lambda)/2`` is
    derived (the paper only says "C is a constant"; docs/icl.md).

    References
    ----------
    .. [src] [Shi24, Lemma 5.1]; the constant derived in docs/icl.md.

    Examples
    --------
    >>> population_loss(np.zeros((2, 2)), [1.0, 2.0], N=5)  # U = 0: tr(Lambda)/2
    1.5
    """
    L, lam, Q = _covariance("icl.population_loss", Lambda, eig=True)
    N = as_int("icl.population_loss", "N", N, low=1)
    U = _square("icl.population_loss", "U", U, L.shape[0])
    u = check("icl.population_loss", "u", u, Interval(-np.inf, np.inf, closed="neither"))
    return _excess_terms(L, lam, Q, N, U, u) + _loss_star(lam, N, lam.size)


def population_gradient(U, Lambda, N, u=1.0):
    r"""Gradient of the population loss in (U, u).

    .. math:: \nabla_U \mathcal L = u^2\,\Gamma\Lambda U\Lambda - u\,\Lambda^2,\qquad
              \partial_u \mathcal L = u\,\mathrm{tr}(\Gamma\Lambda U\Lambda U^\top) - \mathrm{tr}(\Lambda^2 U^\top)

    Parameters
    ----------
    U : ndarray of shape (d, d)
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.
    u : float

    Returns
    -------
    dU : ndarray of shape (d, d)
    du : float

    Notes
    -----
    Accuracy: ||dU - ref||_F <= 4 (d + 4) eps (u^2 g_max lam_max^2 ||U||_F + |u| lam_max^2) and |du - ref| <= 4 (d +
    4) eps (|u| g_max lam_max^2 ||U||_F^2 + lam_max^2 ||U||_F): absolute, the size of the two terms (the gradient
    cancels at a critical point), over the domain of :func:`population_loss`; measured 0.04 of it
    (tests/test_accuracy_icl.py).
    Regime: as :func:`population_loss`. Derived by differentiating Lemma 5.1 (checked by finite
    differences in the tests).

    References
    ----------
    .. [src] derived in docs/icl.md from [Shi24, Lemma 5.1].

    Examples
    --------
    >>> dU, du = population_gradient(np.zeros((1, 1)), [2.0], N=1)  # -u Lambda^2 at U = 0
    >>> dU.tolist(), du
    ([[-4.0]], 0.0)
    """
    U, L, N, u = _setup("icl.population_gradient", U, Lambda, N, u)
    GLUL = gamma_matrix(L, N) @ L @ U @ L
    return u**2 * GLUL - u * L @ L, float(u * np.trace(GLUL @ U.T) - np.trace(L @ L @ U.T))


def factor_gradient(A, B, Lambda, N, u=1.0):
    r"""Gradient of the population loss for the factorised key-query matrix ``U = A B^T``.

    .. math:: \nabla_A = (\nabla_U\mathcal L)\,B,\qquad \nabla_B = (\nabla_U\mathcal L)^\top A,\qquad
              \partial_u \mathcal L

    Parameters
    ----------
    A, B : ndarray of shape (d, r)
        Factors (``W^K``, ``W^Q`` transposed).
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.
    u : float

    Returns
    -------
    dA, dB : ndarray of shape (d, r)
    du : float

    Notes
    -----
    Accuracy: as :func:`population_gradient` times ||B||_F (dA) and ||A||_F (dB), with a factor 2; measured 0.02 of
    it (tests/test_accuracy_icl.py).
    Regime: as :func:`population_loss`; chain rule through ``U = A B^T``.

    References
    ----------
    .. [src] derived in docs/icl.md.

    Examples
    --------
    >>> dA, dB, du = factor_gradient(np.zeros((2, 1)), np.zeros((2, 1)), [1.0, 1.0], N=3)
    >>> float(np.abs(dA).max() + np.abs(dB).max())  # the origin is a critical point
    0.0
    """
    A = check("icl.factor_gradient", "A", A, FiniteArray(2))
    B = check("icl.factor_gradient", "B", B, FiniteArray(2))
    if A.shape != B.shape:
        raise InvalidParameterError(f"The 'B' parameter of icl.factor_gradient must have the shape of A "
                                    f"{A.shape}. Got shape {B.shape} instead.")
    dU, du = population_gradient(A @ B.T, Lambda, N, u)
    return dU @ B, dU.T @ A, du


# ---- optima -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ICLOptimum:
    """Rank-r optimum of Thm 5.4.1: ``U = Q diag(v) Q^T`` (with u = 1), eigen-data, value and uniqueness."""
    U: np.ndarray
    v: np.ndarray
    Q: np.ndarray
    lam: np.ndarray
    value: float
    unique: bool


def optimum(Lambda, N, r):
    r"""Rank-r global minimiser of the population loss (Thm 5.4.1), its value and uniqueness.

    .. math:: uU^* = Q\,\mathrm{diag}(v^*)\,Q^\top,\quad v_i^* = \frac{N}{(N+1)\lambda_i + \mathrm{tr}D}\,
              \mathbb 1[i\le r],\quad \mathcal L_r^* = \tfrac12\sum_i\lambda_i
              - \tfrac12\sum_{i\le r}\frac{N\lambda_i^2}{(N+1)\lambda_i + \mathrm{tr}D}

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.
    r : int
        Rank, in [0, d].

    Returns
    -------
    ICLOptimum
        ``U`` (with u = 1; any ``(cU, u/c)`` is equivalent), ``v``, ``Q``, ``lam`` (descending),
        ``value`` = L*_r (constant included) and ``unique`` (``lambda_r > lambda_{r+1}`` and
        ``lambda_r > 0``, or r in {0, d}).

    Notes
    -----
    Accuracy: value relative error <= 4 (d + 4) eps for a diagonal Lambda, plus 4 d^2 eps lam_max absolute for a
    rotated one; U within 8 d eps max(v) (Frobenius; plus 8 d eps max(v)(d lam_max max(v) + d lam_max / gap_r)
    rotated, where the gap is >= 1e-6 lam_max); d <= 8, ratios to 1e12, zeros, ties, scales 1e-40 .. 1e40, N to
    1e15, r = 0 .. d; measured 0.035 (value) and 0.07 (U) of it (tests/test_accuracy_icl.py). The value is a sum of
    positive terms lam_i (lam_i + T)/((N + 1) lam_i + T): 0.5 T - 0.5 sum lam_i^2 v_i was 1e-8 relative off at N =
    1e9 and -inf above lam = 1e154.
    Regime: restricted LSA, minimum over rank(U) <= r. The top-r choice follows from Eckart-Young on
    ``D'^{1/2} D^{1/2} V D^{1/2}`` (the paper's "V* is diagonal" step is hand-waved; docs/icl.md).
    When not unique, any r-subspace of the tied eigenspace is optimal: compare values, not U.

    References
    ----------
    .. [src] [Shi24, Theorem 5.4.1, proof in App. D.2.1]; the value derived in docs/icl.md.

    Examples
    --------
    >>> opt = optimum([1.0], N=10**9, r=1)  # N -> inf: U* -> Lambda^{-1}, loss -> 0
    >>> round(float(opt.U[0, 0]), 6), round(opt.value, 6)
    (1.0, 0.0)
    """
    lam, Q = spectrum(Lambda)
    N = as_int("icl.optimum", "N", N, low=1)
    r = _rank("icl.optimum", r, lam.size)
    v = N / ((N + 1) * lam + lam.sum())
    v[r:] = 0.0
    value = _loss_star(lam, N, r)
    tol = _GAP_TOL * lam[0]
    unique = r in (0, lam.size) or (lam[r - 1] - lam[r] > tol and lam[r - 1] > tol)
    return ICLOptimum((Q * v) @ Q.T, v, Q, lam, float(value), bool(unique))


def rank_r_optimum(Lambda, N, r):
    r"""Rank-r optimal key-query matrix ``U*`` (Thm 5.4.1), with u = 1.

    .. math:: U^* = Q\,\mathrm{diag}(v^*)\,Q^\top,\qquad v_i^* = \frac{N}{(N+1)\lambda_i + \mathrm{tr}D}\,\mathbb 1[i\le r]

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.
    r : int
        Rank, in [0, d].

    Returns
    -------
    ndarray of shape (d, d)

    Notes
    -----
    Accuracy: as the U of :func:`optimum` (measured 0.07 of its bound, (tests/test_accuracy_icl.py)).
    Regime: see :func:`optimum` (uniqueness needs ``lambda_r > lambda_{r+1}``).

    References
    ----------
    .. [src] [Shi24, Theorem 5.4.1].

    Examples
    --------
    >>> U = rank_r_optimum([2.0, 1.0], N=3, r=2)  # r = d: Gamma^{-1}
    >>> bool(np.allclose(U, np.linalg.inv(gamma_matrix([2.0, 1.0], 3))))
    True
    """
    return optimum(Lambda, N, r).U


def full_rank_optimum(Lambda, N):
    r"""Unrestricted optimum ``uU = Gamma^{-1}`` (Lemma D.1) and its loss.

    .. math:: uU = \Gamma^{-1},\qquad \mathcal L^* = \tfrac12\mathrm{tr}\Lambda - \tfrac12\mathrm{tr}(\Lambda^2\Gamma^{-1})

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.

    Returns
    -------
    U : ndarray of shape (d, d)
    value : float

    Notes
    -----
    Accuracy: as :func:`optimum` with r = d (value measured 0.035 of the bound, against tr(Lambda)/2 - tr(Lambda^2
    Gamma^-1)/2 with the mpmath inverse (tests/test_accuracy_icl.py)). U = Q diag(1/g) Q^T, no explicit inverse of
    Gamma.
    Regime: restricted LSA with full-rank U; Gamma is positive definite for any non-zero PSD Lambda.

    References
    ----------
    .. [src] [Shi24, Lemma D.1].

    Examples
    --------
    >>> U, value = full_rank_optimum([1.0], N=1)  # Gamma = 2 + 1 = 3
    >>> round(float(U[0, 0]), 12), round(value, 12)
    (0.333333333333, 0.333333333333)
    """
    L = _covariance("icl.full_rank_optimum", Lambda)
    opt = optimum(L, as_int("icl.full_rank_optimum", "N", N, low=1), L.shape[0])
    return opt.U, opt.value


def optimal_loss(Lambda, N, r):
    r"""Minimum population loss over rank(U) <= r (Thm 5.4.1 value, constant included).

    .. math:: \mathcal L_r^* = \tfrac12\sum_{i=1}^d\lambda_i - \tfrac12\sum_{i\le r}\frac{N\lambda_i^2}{(N+1)\lambda_i + \mathrm{tr}D}

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.
    r : int
        Rank, in [0, d].

    Returns
    -------
    float

    Notes
    -----
    Accuracy: as the value of :func:`optimum` (measured 0.035 of its bound, (tests/test_accuracy_icl.py)).
    Regime: see :func:`optimum`. Non-increasing in r; at r = 0 it is ``tr(Lambda)/2``.

    References
    ----------
    .. [src] derived in docs/icl.md from [Shi24, Theorem 5.4.1].

    Examples
    --------
    >>> optimal_loss([1.0, 1.0], N=4, r=0)
    1.0
    """
    return optimum(Lambda, N, r).value


def excess_loss(U, Lambda, N, u=1.0):
    r"""Excess population loss over the full-rank optimum (D.4).

    .. math:: \mathcal L(U, u) - \min\mathcal L = \tfrac12\big\|\Gamma^{1/2}(u\Lambda^{1/2}U\Lambda^{1/2}
              - \Lambda\Gamma^{-1})\big\|_F^2

    Parameters
    ----------
    U : ndarray of shape (d, d)
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.
    u : float

    Returns
    -------
    float
        >= 0; 0 iff ``uU = Gamma^{-1}`` (for positive definite Lambda).

    Notes
    -----
    Accuracy: a sum of squares in the eigenbasis (>= 0): |err| <= 8 (d + 4) eps (excess + sqrt(excess S)) plus,
    rotated, 4 d^2 eps (S_L + sqrt(excess S_L)), S and S_L as in :func:`population_loss`; measured 0.04 of it
    against Lemma 5.1 minus L* in mpmath (tests/test_accuracy_icl.py).
    Regime: as :func:`population_loss`. Computed from the (D.4) square, not as a difference, so it
    keeps its relative accuracy near the optimum.

    References
    ----------
    .. [src] [Shi24, Lemma D.1, (D.4)].

    Examples
    --------
    >>> excess_loss(full_rank_optimum([1.0, 3.0], 4)[0], [1.0, 3.0], 4)
    0.0
    """
    L, lam, Q = _covariance("icl.excess_loss", Lambda, eig=True)
    N = as_int("icl.excess_loss", "N", N, low=1)
    U = _square("icl.excess_loss", "U", U, L.shape[0])
    u = check("icl.excess_loss", "u", u, Interval(-np.inf, np.inf, closed="neither"))
    return _excess_terms(L, lam, Q, N, U, u)
