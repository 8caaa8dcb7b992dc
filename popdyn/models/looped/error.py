"""Exact error curves, bounds and large-(n, d) limits of the looped transformer ([Shi24] ch. 8, Thms 8.16, 8.17,
8.25; derivations in docs/looped.md).

Public names
------------
exact curves (one eigendecomposition per prompt, no float floor)
    :func:`exact_error`, :func:`exact_sq_dist`, :func:`mean_error_over_task`
bounds
    :func:`bound_paper`, :func:`bound_tight`, :func:`loops_needed`, :func:`gatmiry_bound`, :func:`gatmiry_condition`
Marchenko-Pastur limit
    :func:`mp_error_curve`, :func:`mp_kappa`
"""
from __future__ import annotations

import numpy as np
from numba import njit
from scipy.integrate import quad_vec

from ..._validate import Interval, InvalidParameterError, as_int, check
from .transformer import step_schedule

__all__ = ["exact_error", "exact_sq_dist", "mean_error_over_task", "bound_paper", "bound_tight", "loops_needed",
           "gatmiry_bound", "gatmiry_condition", "mp_error_curve", "mp_kappa"]

_UNIT_TOL = 1e-10  # 1e-10: ||theta*|| = 1 check; far above the rounding of a normalised float64 vector


def _batch(owner, X, theta_star, y):
    """Validated stacks: X (..., n, d), theta* (..., d) unit rows, y (..., n) or None."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2 or not np.all(np.isfinite(X)):
        raise InvalidParameterError(f"The 'X' parameter of {owner} must be a finite array of shape (..., n, d). "
                                    f"Got shape {X.shape} instead.")
    if theta_star is not None:
        theta_star = np.asarray(theta_star, dtype=np.float64)
        if theta_star.shape != X.shape[:-2] + X.shape[-1:] or not np.all(np.isfinite(theta_star)):
            raise InvalidParameterError(f"The 'theta_star' parameter of {owner} must be a finite array of shape "
                                        f"{X.shape[:-2] + X.shape[-1:]}. Got {theta_star!r} instead.")
        if not np.all(np.abs(np.linalg.norm(theta_star, axis=-1) - 1) <= _UNIT_TOL):
            raise InvalidParameterError(f"The 'theta_star' parameter of {owner} must have unit norm (Def 8.3; with "
                                        f"||theta*|| != 1 the task <q, theta*> = alpha is inconsistent). Got norms "
                                        f"{np.linalg.norm(theta_star, axis=-1)!r} instead.")
    if y is not None:
        y = np.asarray(y, dtype=np.float64)
        if y.shape != X.shape[:-1] or not np.all(np.isfinite(y)):
            raise InvalidParameterError(f"The 'y' parameter of {owner} must be a finite array of shape {X.shape[:-1]}. "
                                        f"Got shape {y.shape} instead.")
    return X, theta_star, y


def _spectral(X, theta_star, y, Gamma):
    """Eigenvalues mu of B = S A S (S = Gamma^{1/2}; B = A for Gamma = None) and the coordinates of the curves.

    theta^(t) - theta* = S W c_t with c_t = -Pi_t g + Sigma_t e, g = W^T S^{-1} theta*, e = W^T S X^T (y - X theta*),
    Pi_t = prod_s (1 - eta_s mu), Sigma_t = sum_s eta_s prod_{r > s} (1 - eta_r mu); h = W^T S theta* and
    M = W^T Gamma W give <theta - theta*, theta*> = h.c and ||theta - theta*||^2 = c^T M c.
    """
    Xt = np.swapaxes(X, -1, -2)
    if Gamma is None:
        mu, W = np.linalg.eigh(Xt @ X)
        S = Sinv = M = None
    else:
        gl, gv = np.linalg.eigh(Gamma)
        S, Sinv = (gv * np.sqrt(gl)) @ gv.T, (gv / np.sqrt(gl)) @ gv.T
        mu, W = np.linalg.eigh(S @ (Xt @ X) @ S)
        M = np.swapaxes(W, -1, -2) @ Gamma @ W
    proj = lambda T, v: np.einsum("...ij,...i->...j", W, v if T is None else np.einsum("ij,...j->...i", T, v))
    g, h = proj(Sinv, theta_star), proj(S, theta_star)
    e = None if y is None else proj(S, np.einsum("...nd,...n->...d", X, y - np.einsum("...nd,...d->...n", X, theta_star)))
    return mu, g, h, e, M


@njit(cache=True)
def _curves_kernel(mu, g, h, e, etas, inner, sq):
    """Numba loop of :func:`_curves` for M = I on 2-d stacks: O(P T d), no (P, d, T) temporaries."""
    P, d = mu.shape
    T = etas.shape[1]
    for p in range(P):
        Pi = np.ones(d)
        Sig = np.zeros(d)
        for t in range(T + 1):
            a, b = 0.0, 0.0
            for i in range(d):
                c = Sig[i] * e[p, i] - Pi[i] * g[p, i]
                a += h[p, i] * c
                b += c * c
            inner[p, t], sq[p, t] = a, b
            if t < T:
                for i in range(d):
                    f = 1.0 - etas[p, t] * mu[p, i]
                    Sig[i] = Sig[i] * f + etas[p, t]
                    Pi[i] *= f


def _curves(mu, g, h, e, M, etas):
    """inner[t] = <theta^(t) - theta*, theta*> and sq[t] = ||theta^(t) - theta*||^2, t = 0..T, by the products."""
    T = etas.shape[-1]
    if M is None:
        shape, d = mu.shape[:-1], mu.shape[-1]
        flat = lambda a: np.ascontiguousarray(np.broadcast_to(a, mu.shape).reshape(-1, d))
        count = int(np.prod(shape))
        inner, sq = np.empty((count, T + 1)), np.empty((count, T + 1))
        _curves_kernel(flat(mu), flat(g), flat(h), flat(np.zeros_like(mu) if e is None else e),
                       np.ascontiguousarray(np.broadcast_to(etas, shape + (T,)).reshape(count, T)), inner, sq)
        return inner.reshape(shape + (T + 1,)), sq.reshape(shape + (T + 1,))
    Pi, Sig = np.ones_like(mu), np.zeros_like(mu)
    inner, sq = np.empty(mu.shape[:-1] + (T + 1,)), np.empty(mu.shape[:-1] + (T + 1,))
    for t in range(T + 1):
        c = -Pi * g if e is None else Sig * e - Pi * g
        inner[..., t] = np.sum(h * c, axis=-1)
        sq[..., t] = np.sum(c * c, axis=-1) if M is None else np.einsum("...i,...ij,...j->...", c, M, c)
        if t < T:
            step = etas[..., t:t + 1]
            Sig = Sig * (1 - step * mu) + step
            Pi = Pi * (1 - step * mu)
    return inner, sq


def _gamma_matrix(owner, Gamma, d):
    if Gamma is None:
        return None
    G = np.asarray(Gamma, dtype=np.float64)
    if G.shape != (d, d) or not np.all(np.isfinite(G)) or not np.allclose(G, G.T) or np.linalg.eigvalsh(G)[0] <= 0:
        raise InvalidParameterError(f"The 'Gamma' parameter of {owner} must be a symmetric positive definite "
                                    f"({d}, {d}) array. Got {Gamma!r} instead.")
    return G


def _run(owner, X, theta_star, T, eta, y, Gamma):
    X, theta_star, y = _batch(owner, X, theta_star, y)
    Gamma = _gamma_matrix(owner, Gamma, X.shape[-1])
    mu, g, h, e, M = _spectral(X, theta_star, y, Gamma)
    return _curves(mu, g, h, e, M, step_schedule(mu, T, eta, owner))


def exact_error(X, theta_star, alpha, T, eta, *, y=None, Gamma=None):
    r"""Signed error <TF, theta*> - alpha after t = 0..T loops, exactly, for any step schedule (docs/looped.md).

    .. math:: \langle\mathrm{TF}_t,\theta^*\rangle - \alpha = \alpha\langle\theta^{(t)}-\theta^*,\theta^*\rangle
              = -\alpha\sum_{i=1}^d c_i\prod_{s<t}(1-\eta^{(s)}\lambda_i),\qquad c_i = (v_i^\top\theta^*)^2

    Parameters
    ----------
    X : ndarray of shape (..., n, d)
        Prompts (stacked on leading axes).
    theta_star : ndarray of shape (..., d)
        Unit task vectors.
    alpha : float
        Query scalar, non-zero.
    T : int
        Last loop (>= 0).
    eta : {"1/L", "2/(L+mu)"} or float or array_like of shape (T,)
        Residual weights (see :func:`~popdyn.models.looped.step_schedule`).
    y : ndarray of shape (..., n), optional
        Noisy labels; default the realizable y = X theta*.
    Gamma : ndarray of shape (d, d), optional
        Symmetric positive definite preconditioner (docs/looped.md); the formula holds with the eigenpairs of
        Gamma^{1/2} X^T X Gamma^{1/2}.

    Returns
    -------
    ndarray of shape (..., T + 1)

    Notes
    -----
    Regime: q^(0) = 0, ||theta*|| = 1, any X (rank-deficient directions keep c_i forever). Products of the
    factors, never differences, so the curve has no float floor (iterating GD floors near 1e-16).

    Accuracy: |d err_t| <= 4 eps |alpha| [(t + d + 2) S_t (1 + max_i eta lam_i / |1 - eta lam_i|) + lam_max
    sum_(i<j) |P_i - P_j| / |lam_i - lam_j|] + 2 eps^t |alpha|, with S_t = sum_i c_i |P_i(t)| the curve's own size
    (relative accuracy however small it decays), the second term the eigenvectors' rounding (directions whose
    factors P_i(t) = prod_s (1 - eta^(s) lam_i) differ) and the last the factor 1 - fl(1/L) L of the top direction
    under "1/L"; for n <= 9, d <= 4, kappa up to 1e8, rank-deficient X, T <= 300 and every kind of step. Measured
    0.12 of the bound (tests/test_accuracy_looped.py, the eigen-decomposition in mpmath at 50 digits). The noisy
    and preconditioned curves are not covered by the declaration.

    References
    ----------
    .. [src] derived in docs/looped.md; [Shi24, Lemma 8.15].

    Examples
    --------
    >>> exact_error(np.eye(2), np.array([0.6, 0.8]), 2.0, 2, "1/L")  # kappa = 1: exact after one loop
    array([-2.,  0.,  0.])
    """
    alpha = check("looped.exact_error", "alpha", alpha, Interval(-np.inf, np.inf, closed="neither"))
    if alpha == 0:
        raise InvalidParameterError("The 'alpha' parameter of looped.exact_error must be non-zero. Got 0.0 instead.")
    return alpha * _run("looped.exact_error", X, theta_star, T, eta, y, Gamma)[0]


def exact_sq_dist(X, theta_star, T, eta, *, y=None, Gamma=None):
    r"""Squared distance ||theta^(t) - theta*||^2 for t = 0..T, exactly, for any step schedule (docs/looped.md).

    .. math:: \lVert\theta^{(t)}-\theta^*\rVert^2 = \sum_{i=1}^d c_i\prod_{s<t}(1-\eta^{(s)}\lambda_i)^2

    Parameters
    ----------
    X : ndarray of shape (..., n, d)
    theta_star : ndarray of shape (..., d)
        Unit task vectors.
    T : int
        Last step (>= 0).
    eta : {"1/L", "2/(L+mu)"} or float or array_like of shape (T,)
    y : ndarray of shape (..., n), optional
        Noisy labels (default y = X theta*).
    Gamma : ndarray of shape (d, d), optional
        Symmetric positive definite preconditioner.

    Returns
    -------
    ndarray of shape (..., T + 1)

    Notes
    -----
    Regime: theta^(0) = 0, ||theta*|| = 1. This is also the query-prediction loss E_x (x^T(theta^(t) - theta*))^2
    for x ~ N(0, I). No float floor (values down to 1e-300 are exact products).

    Accuracy: as :func:`exact_error` with P_i^2 for P_i and without alpha (measured 0.23 of the bound;
    tests/test_accuracy_looped.py).

    References
    ----------
    .. [src] derived in docs/looped.md; [Shi24, Theorem 8.25].

    Examples
    --------
    >>> exact_sq_dist(np.diag([1.0, 2.0]), np.array([1.0, 0.0]), 3, 0.5)  # (1 - 0.5)^(2t)
    array([1.      , 0.25    , 0.0625  , 0.015625])
    """
    return _run("looped.exact_sq_dist", X, theta_star, T, eta, y, Gamma)[1]


def mean_error_over_task(X, alpha, T, eta, *, squared=False):
    r"""Mean over theta* ~ Unif(S^{d-1}) of the signed error (or of the squared distance), exactly (docs/looped.md).

    .. math:: \mathbb E_{\theta^*}[\langle\mathrm{TF}_t,\theta^*\rangle-\alpha]
              = -\frac{\alpha}{d}\mathrm{tr}\prod_{s<t}(I-\eta^{(s)}A),\qquad
              \mathbb E_{\theta^*}\lVert\theta^{(t)}-\theta^*\rVert^2 = \frac1d\mathrm{tr}\prod_{s<t}(I-\eta^{(s)}A)^2

    Parameters
    ----------
    X : ndarray of shape (..., n, d)
    alpha : float
        Query scalar (ignored when ``squared``), non-zero.
    T : int
        Last loop (>= 0).
    eta : {"1/L", "2/(L+mu)"} or float or array_like of shape (T,)
    squared : bool
        Return the mean squared distance instead of the mean signed error.

    Returns
    -------
    ndarray of shape (..., T + 1)

    Notes
    -----
    Regime: realizable, q^(0) = 0; E c_i = 1/d. With eta = 1/L the product is PSD, so the mean of |err| is
    |alpha| tr(.)/d.

    Accuracy: relative error <= 4 eps k (t + 2)(1 + max_i eta lam_i / |1 - eta lam_i|) of (1/d) sum_i |P_i(t)|^k
    (k = 1, or 2 with squared) plus 2 eps^(k t), for the prompts of :func:`exact_error`; measured 0.41 of it
    (tests/test_accuracy_looped.py, eigenvalues in mpmath at 50 digits).

    References
    ----------
    .. [src] derived in docs/looped.md.

    Examples
    --------
    >>> mean_error_over_task(np.diag([1.0, 2.0]), 1.0, 1, "1/L")  # A = diag(1, 4): -((1 - 1/4) + 0)/2
    array([-1.   , -0.375])
    """
    owner = "looped.mean_error_over_task"
    X = _batch(owner, X, None, None)[0]
    d = X.shape[-1]
    mu = np.linalg.eigvalsh(np.swapaxes(X, -1, -2) @ X)
    inner, sq = _curves(mu, np.full_like(mu, d ** -0.5), np.full_like(mu, d ** -0.5), None, None,
                        step_schedule(mu, T, eta, owner))
    if squared:
        return sq
    alpha = check(owner, "alpha", alpha, Interval(-np.inf, np.inf, closed="neither"))
    if alpha == 0:
        raise InvalidParameterError(f"The 'alpha' parameter of {owner} must be non-zero. Got 0.0 instead.")
    return alpha * inner


def _kappa(owner, kappa):
    k = np.asarray(kappa, dtype=np.float64)
    if not np.all(k >= 1):
        raise InvalidParameterError(f"The 'kappa' parameter of {owner} must be a float in [1, inf]. Got {kappa!r} instead.")
    return k


def _loops(owner, T):
    t = np.asarray(T)
    if t.dtype.kind not in "iu" or not np.all(t >= 0):
        raise InvalidParameterError(f"The 'T' parameter of {owner} must be an int (or int array) >= 0. Got {T!r} instead.")
    return t.astype(np.float64)


def bound_paper(kappa, T, alpha=1.0, *, squared=False):
    r"""The paper's error bound |alpha| exp(-T / (2 kappa)) (Thm 8.16), or its squared-distance form.

    .. math:: |\langle\mathrm{TF},\theta^*\rangle-\alpha|\le|\alpha|\,e^{-T/(2\kappa)},\qquad
              \lVert\theta^{(T)}-\theta^*\rVert^2\le e^{-T/\kappa}\ (\text{squared})

    Parameters
    ----------
    kappa : float or ndarray
        Condition number of X^T X, in [1, inf] (inf gives the vacuous bound |alpha|).
    T : int or ndarray of int
        Loops (>= 0).
    alpha : float
        Query scalar.
    squared : bool
        Return the squared-distance bound e^{-T/kappa} (Thm 8.25 with R = 1); alpha is then ignored.

    Returns
    -------
    float or ndarray

    Notes
    -----
    Regime: realizable, n > d, ||theta*|| = 1, q^(0) = 0, eta = 1/lambda_max(X^T X).

    Accuracy: relative error <= 2 eps (2 + T/(2 kappa)) (the value's own condition in kappa and T), for kappa in
    [1, 1e15] and T up to 1e16; measured 0.24 of it (tests/test_accuracy_looped.py, mpmath at 40 digits).

    References
    ----------
    .. [src] [Shi24, Theorem 8.16, Theorem 8.1, Theorem 8.25].

    Examples
    --------
    >>> float(bound_paper(np.inf, 10))  # kappa = inf (n <= d): the vacuous bound
    1.0
    """
    k, t = _kappa("looped.bound_paper", kappa), _loops("looped.bound_paper", T)
    out = np.exp(-t / k) if squared else abs(float(alpha)) * np.exp(-t / (2 * k))
    return out[()] if np.ndim(out) == 0 else out


def bound_tight(kappa, T, alpha=1.0):
    r"""Tight error bound |alpha| (1 - 1/kappa)^T for eta = 1/L (derived; quadratically better than Thm 8.16).

    .. math:: |\langle\mathrm{TF},\theta^*\rangle-\alpha|\le|\alpha|(1-c_1)(1-1/\kappa)^T
              \le|\alpha|(1-1/\kappa)^T\le|\alpha|e^{-T/\kappa}

    Parameters
    ----------
    kappa : float or ndarray
        Condition number of X^T X, in [1, inf].
    T : int or ndarray of int
        Loops (>= 0).
    alpha : float
        Query scalar.

    Returns
    -------
    float or ndarray

    Notes
    -----
    Regime: realizable, ||theta*|| = 1, q^(0) = 0, eta = 1/lambda_max; every factor 1 - lambda_i/lambda_1
    lies in [0, 1 - 1/kappa]. Square it for the squared distance. kappa = 1, T = 0 gives |alpha| (0^0 = 1).

    Accuracy: relative error <= 2 eps (2 + |T log(1 - 1/kappa)|), the value's own condition, for kappa in [1,
    1e15] and T up to 1e16; measured 0.38 of it (tests/test_accuracy_looped.py, mpmath at 40 digits). Computed as
    exp(T log(1 - 1/kappa)) with the log free of cancellation (log1p(-1/kappa), or log(kappa - 1) - log(kappa) below
    kappa = 2): the power of the rounded base 1 - 1/kappa was 8e-6 relative off at kappa = 1e10, T = 1e12, 0.8 % at
    kappa = 1e15, and the base itself 15 eps off at kappa = 1.016.

    References
    ----------
    .. [src] derived in docs/looped.md.

    Examples
    --------
    >>> float(bound_tight(1.0, 3)), float(bound_tight(2.0, 2, alpha=-4.0))
    (0.0, 1.0)
    """
    k, t = _kappa("looped.bound_tight", kappa), _loops("looped.bound_tight", T)
    with np.errstate(divide="ignore", invalid="ignore"):  # exp(T log(1 - 1/kappa)): the rounded base 1 - 1/kappa
        out = abs(float(alpha)) * np.where(t == 0, 1.0, np.exp(t * _log_rate(k)))  # raised to T lost T eps
    return out[()] if np.ndim(out) == 0 else out


def _log_rate(k):
    """log(1 - 1/kappa) to a few eps relative: log1p(-1/kappa) for kappa >= 2, log(kappa - 1) - log(kappa) below
    (kappa - 1 is exact there, while 1 - 1/kappa cancels as kappa -> 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(k >= 2, np.log1p(-1.0 / np.maximum(k, 2)), np.log(k - 1) - np.log(k))


def loops_needed(kappa, eps, which="tight"):
    r"""Loops T after which the bound guarantees error <= eps |alpha| (docs/looped.md).

    .. math:: T_{\rm paper} = \lceil 2\kappa\ln(1/\varepsilon)\rceil,\qquad
              T_{\rm tight} = \lceil\ln(1/\varepsilon)/\ln(\kappa/(\kappa-1))\rceil\approx\kappa\ln(1/\varepsilon)

    Parameters
    ----------
    kappa : float
        Condition number, in [1, inf].
    eps : float
        Relative error, in (0, inf); eps >= 1 needs no loop.
    which : {"tight", "paper"}
        Which bound to invert.

    Returns
    -------
    float
        An integer-valued float; inf when kappa = inf.

    Notes
    -----
    Regime: as for :func:`bound_tight` / :func:`bound_paper`. kappa = 1 needs one loop (tight) for any eps < 1.

    Accuracy: the smallest T with the bound <= eps (1 + 1e-13): the quotient ln(1/eps) / -ln(1 - 1/kappa) is known
    to a few eps, an integer within 8 eps of it is a tie and anything above rounds up, so the count is never one
    short (tested against mpmath at 40 digits for kappa up to 1e15, eps down to 1e-300; counts beyond 2^53 are
    floats within an ulp). The earlier ln(kappa/(kappa - 1)) cancelled: 1.2e9 loops short at kappa = 1e12.

    References
    ----------
    .. [src] [Shi24, Theorem 8.16]; the tight count derived in docs/looped.md.

    Examples
    --------
    >>> loops_needed(1.0, 1e-6), loops_needed(np.inf, 0.1), loops_needed(2.0, 0.25, "paper")
    (1.0, inf, 6.0)
    """
    k = float(_kappa("looped.loops_needed", kappa))
    eps = check("looped.loops_needed", "eps", eps, Interval(0, np.inf, closed="neither"))
    if which not in ("tight", "paper"):
        raise InvalidParameterError(f"The 'which' parameter of looped.loops_needed must be one of ['tight', 'paper']. "
                                    f"Got {which!r} instead.")
    if eps >= 1:
        return 0.0
    if k == np.inf:
        return np.inf
    if which == "paper":
        return _ceil(2 * k * -np.log(eps))
    # log(kappa/(kappa - 1)) = -log1p(-1/kappa), without the cancellation of kappa/(kappa - 1) near 1 (which put
    # T 1.2e9 loops short at kappa = 1e12)
    return 1.0 if k == 1 else max(1.0, _ceil(-np.log(eps) / -float(_log_rate(np.float64(k)))))


def _ceil(q):
    """ceil of a quotient known to 8 eps relative: an integer within that is taken as exact (a tie: the bound equals
    eps there up to rounding), anything above it rounds up, so the loop count is never one short."""
    n = float(np.round(q))
    return n if abs(q - n) <= 8 * np.finfo(float).eps * q else float(np.ceil(q))


def gatmiry_condition(T, d, n):
    r"""The condition of the comparison bound (Thm 8.17, Gatmiry et al. 2024): 8 T d^2 / sqrt(n) <= 2^(-2T).

    .. math:: \frac{8Td^2}{\sqrt n}\le 2^{-2T}

    Parameters
    ----------
    T, d, n : int
        Loops (>= 0), dimension (>= 1), examples (>= 1).

    Returns
    -------
    bool

    Notes
    -----
    Regime: Gatmiry et al.'s Thm 4.1 as quoted; it forces n >= 64 T^2 d^4 2^(4T), exponential in T.

    Accuracy: exact (integer arithmetic; tested against Python integers).

    References
    ----------
    .. [src] [Shi24, Theorem 8.17].

    Examples
    --------
    >>> gatmiry_condition(1, 1, 1024), gatmiry_condition(1, 1, 1023)  # needs n >= 64 * 16 = 1024
    (True, False)
    """
    T = as_int("looped.gatmiry_condition", "T", T, low=0)
    d = as_int("looped.gatmiry_condition", "d", d, low=1)
    n = as_int("looped.gatmiry_condition", "n", n, low=1)
    return bool(64 * T * T * d**4 * 16**T <= n)  # exact integer form of (8 T d^2 / sqrt(n))^2 <= 2^(-4T)


def gatmiry_bound(T, d, n):
    r"""The comparison bound 8 T d^2 2^(2T) / sqrt(n) of Thm 8.17 (Gatmiry et al. 2024, Thm 4.1).

    .. math:: |\mathrm{err}|\le\frac{8Td^2\,2^{2T}}{\sqrt n}

    Parameters
    ----------
    T, d, n : int
        Loops (>= 0), dimension (>= 1), examples (>= 1).

    Returns
    -------
    float
        inf when 2^(2T) overflows float64.

    Notes
    -----
    Regime: only under :func:`gatmiry_condition`; shown to contrast its exponential dependence on T.

    Accuracy: relative error <= 2 eps (2 + log2(8 T d^2) + 2 T + log2(n)/2) (the value is exp2 of that sum), inf
    exactly where it exceeds the float range; measured 0.3 of it (tests/test_accuracy_looped.py, mpmath at 40
    digits, T <= 600, n <= 1e18).

    References
    ----------
    .. [src] [Shi24, Theorem 8.17].

    Examples
    --------
    >>> gatmiry_bound(1, 1, 1024)
    1.0
    """
    T = as_int("looped.gatmiry_bound", "T", T, low=0)
    d = as_int("looped.gatmiry_bound", "d", d, low=1)
    n = as_int("looped.gatmiry_bound", "n", n, low=1)
    log2 = np.log2(8.0 * T * d * d) + 2 * T - 0.5 * np.log2(n) if T > 0 else -np.inf
    return float(np.exp2(log2)) if log2 < 1024 else np.inf


def mp_kappa(gamma):
    r"""Large-(n, d) limit of the condition number of X^T X for Gaussian X, d/n -> gamma (docs/looped.md).

    .. math:: \kappa\to\Big(\frac{1+\sqrt\gamma}{1-\sqrt\gamma}\Big)^2

    Parameters
    ----------
    gamma : float
        Aspect ratio d/n, in (0, 1).

    Returns
    -------
    float

    Notes
    -----
    Regime: n, d -> inf at fixed gamma; overestimates kappa at small d (d = 4, n = 16: 9 vs E kappa = 4.81).

    Accuracy: relative error <= 4 eps for every gamma in (0, 1), computed as (1 + sqrt gamma)^4 / (1 - gamma)^2 (1
    - sqrt(gamma) cancelled: 2e-4 relative off at gamma = 1 - 1e-12); measured 0.6 of it
    (tests/test_accuracy_looped.py, mpmath at 40 digits).

    References
    ----------
    .. [src] derived in docs/looped.md.

    Examples
    --------
    >>> mp_kappa(0.25)
    9.0
    """
    g = check("looped.mp_kappa", "gamma", gamma, Interval(0, 1, closed="neither"))
    return (1 + g**0.5) ** 4 / (1 - g) ** 2  # 1 - sqrt(g) = (1 - g)/(1 + sqrt(g)): no cancellation as g -> 1


def mp_error_curve(gamma, T, power=1, *, eta_n=None):
    r"""Marchenko-Pastur limit E_gamma(power t), t = 0..T, of the mean error (power 1) or squared distance (2).

    .. math:: E_\gamma(t) = \int_{x_-}^{x_+}(1-s\,x)^{t}\rho_\gamma(x)\,dx,\quad
              \rho_\gamma(x)=\frac{\sqrt{(x_+-x)(x-x_-)}}{2\pi\gamma x},\quad x_\pm=(1\pm\sqrt\gamma)^2,\ s = 1/x_+

    Parameters
    ----------
    gamma : float
        d/n in (0, 1).
    T : int
        Last loop (>= 0).
    power : {1, 2}
        1: (1/d) tr (I - eta A)^t (mean |err| / |alpha| at eta = 1/L); 2: the mean squared distance.
    eta_n : float, optional
        Step times n, s = eta n > 0 (a fixed network's step); default 1/x_+ (eta = 1/L in the limit).

    Returns
    -------
    ndarray of shape (T + 1,)

    Notes
    -----
    Regime: X_ij iid N(0, 1), n, d -> inf, d/n -> gamma < 1. The finite-d mean lies below it, by 8 %, 6 %,
    4-5 %, 2-4 % at d = 50, 100, 200, 400 (gamma = 1/4, t <= 30; looped.mp_limit): E lambda_max sits below
    n x_+ by a Tracy-Widom shift (relative d^(-2/3)) and the bulk differs at order 1/d. At finite (n, d) use
    :func:`~popdyn.models.looped.finite_error_curve`. Quadrature in x = c + r cos(phi), which removes the
    square-root endpoints (integrand smooth in phi).

    Accuracy: error <= 1e-11 int |1 - s x|^t rho(x) dx at every t however small it is, so relative 1e-11 where 1 -
    s x >= 0 on the support (the default s = 1/x_+; a larger step lets E(t) cancel, e.g. E(1) = 0 at s = 1), for
    gamma in [1e-3, 1 - 1e-12], t up to 1000, both powers and eta_n in [0.05, 1.5] or 1/x_+; measured 0.07 of it
    (tests/test_accuracy_looped.py, the same integral in mpmath at 30 digits on panels resolving the peaks). Each
    component is integrated scaled by its size m^t min(1, (m/(s t))^1.5), m = max |1 - s x| (before, one absolute
    tolerance 1e-14 for all t left E(1000) = 2e-55 4 % off), ``x_-`` is formed without the cancellation of 1 -
    sqrt(gamma), and breakpoints graded towards phi = pi resolve the density's 1/x as gamma -> 1.

    References
    ----------
    .. [src] derived in docs/looped.md.

    Examples
    --------
    >>> E = mp_error_curve(0.25, 1)
    >>> bool(abs(E[1] - (1 - 1 / (1 + 0.25**0.5) ** 2)) < 1e-12)  # E(1) = 1 - 1/x_+
    True
    """
    g = check("looped.mp_error_curve", "gamma", gamma, Interval(0, 1, closed="neither"))
    T = as_int("looped.mp_error_curve", "T", T, low=0)
    if power not in (1, 2):
        raise InvalidParameterError(f"The 'power' parameter of looped.mp_error_curve must be one of [1, 2]. "
                                    f"Got {power!r} instead.")
    xm, xp = ((1 - g) / (1 + g**0.5)) ** 2, (1 + g**0.5) ** 2  # x_- without the cancellation of 1 - sqrt(g)
    s = 1 / xp if eta_n is None else check("looped.mp_error_curve", "eta_n", eta_n, Interval(0, np.inf, closed="neither"))
    c, r, t = 1 + g, 2 * g**0.5, power * np.arange(T + 1)
    # each component scaled by its size m^t min(1, (m/(s t))^1.5) (m = max |1 - s x| on the support; the endpoint's
    # square root gives the t^-1.5), so the vector tolerance is relative for every t: E decays like 1e-55 at t = 1000
    m = max(abs(1 - s * xm), abs(1 - s * xp))
    boost = np.maximum(1.0, (s * (t + 1) / m) ** 1.5)  # m^t / scale_t

    def integrand(phi):
        x = xm + 2 * r * np.cos(phi / 2) ** 2  # = c + r cos(phi), positive as gamma -> 1 (c - r cancels to x_-)
        return np.power((1 - s * x) / m, t) * boost * (r * np.sin(phi)) ** 2 / (2 * np.pi * g * x)

    # as gamma -> 1 the density's 1/x makes a dip of width sqrt(x_- / r) in phi at pi: breakpoints graded towards
    # it (without them E(0) = 1 came out 2e-10 off at gamma = 1 - 4e-10)
    w = np.sqrt(xm / r)
    points = [np.pi - w * 10.0 ** j for j in range(8) if w * 10.0 ** j < 0.5] if w < 1e-3 else None
    with np.errstate(under="ignore"):
        scaled = quad_vec(integrand, 0.0, np.pi, epsabs=0.0, epsrel=1e-13, limit=2000, points=points)[0]
        return scaled * np.exp(t * np.log(m)) / boost
