r"""Evaluation risk of the rank-r LSA on noisy or label-flipped M-shot prompts ([Shi24] Thm 5.4.2-5.4.3).

The evaluation prompt has M examples ``y_i = beta_i <w, x_i> + eps_i`` (``eps ~ N(0, sigma^2)``, a fraction
rho of the signs ``beta_i`` flipped to -1) and normalisation ``rho = M``; the risk has no 1/2 and is
conditional on the task w (docs/icl.md). For any (U, u), with ``beta = 1 - 2 rho``,

.. math:: R(w) = (\beta^2 + \tfrac1M)\, w^\top\Lambda A\Lambda A^\top\Lambda w
          + \tfrac1M(\sigma^2 + \|w\|_\Lambda^2)\,\mathrm{tr}(A\Lambda A^\top\Lambda)
          - 2\beta\, w^\top\Lambda A^\top\Lambda w + \|w\|_\Lambda^2,\qquad A = uU,

from ``E[h] = beta Lambda w`` and ``E[h h^T] = (beta^2 + 1/M) Lambda w w^T Lambda + (sigma^2 + ||w||_Lambda^2)
Lambda / M`` for ``h = (1/M) sum_i y_i x_i`` (Lemma D.2 moments).
"""
from __future__ import annotations

import numpy as np

from ..._validate import Interval, InvalidParameterError, as_int, check
from .regression import _covariance, _rank, _square, _vector, optimum

__all__ = ["eval_risk", "eval_risk_avg", "eval_risk_flip", "optimum_eval_risk", "optimum_eval_risk_avg",
           "large_n_eval_risk", "rank_gap"]


def _eval_setup(owner, U, Lambda, M, sigma, u, rho):
    L, lam, Q = _covariance(owner, Lambda, eig=True)
    U = _square(owner, "U", U, L.shape[0])
    M = as_int(owner, "M", M, low=1)
    sigma = check(owner, "sigma", sigma, Interval(0, np.inf, closed="left"))
    u = check(owner, "u", u, Interval(-np.inf, np.inf, closed="neither"))
    rho = check(owner, "rho", rho, Interval(0, 1))
    if abs(rho * M - round(rho * M)) > 1e-9:  # 1e-9: float rounding of k/M
        raise InvalidParameterError(f"The 'rho' parameter of {owner} must make rho * M an integer (M = {M}). "
                                    f"Got {rho!r} instead.")
    return u * U, L, M, sigma, 1 - 2 * rho, lam, Q


def eval_risk(U, Lambda, w, M, sigma=0.0, *, u=1.0, rho=0.0):
    r"""Evaluation risk conditional on the task w, for any key-query matrix (Thm 5.4.2 form, general U).

    .. math:: R(w) = (\beta^2 + \tfrac1M)\, w^\top\Lambda A\Lambda A^\top\Lambda w
              + \tfrac{\sigma^2 + \|w\|_\Lambda^2}{M}\,\mathrm{tr}(A\Lambda A^\top\Lambda)
              - 2\beta\, w^\top\Lambda A^\top\Lambda w + \|w\|_\Lambda^2,\quad A = uU,\ \beta = 1 - 2\rho

    Parameters
    ----------
    U : ndarray of shape (d, d)
        Key-query matrix (any rank, not necessarily symmetric).
    Lambda : ndarray of shape (d, d) or (d,)
        Input covariance, or its spectrum.
    w : ndarray of shape (d,)
        Task vector.
    M : int
        Evaluation context length, >= 1.
    sigma : float
        Label noise standard deviation, >= 0.
    u : float
        Value entry; the risk depends on ``uU`` only.
    rho : float
        Fraction of flipped context labels, in [0, 1], ``rho M`` an integer (derived extension).

    Returns
    -------
    float
        ``E[(y_hat_q - <w, x_q>)^2 | w]`` (no 1/2).

    Notes
    -----
    Accuracy: a sum of squares in the eigenbasis of Lambda (never negative): |err| <= 8 (d + 4) eps (R + sqrt(R S)),
    S = sum_i lam_i (|beta| sum_j |A~_ji| lam_j |w~_j| + |w~_i|)^2, plus for a rotated Lambda 4 d^2 eps S_R (S_R the
    size of the printed terms); d <= 8, ratios to 1e12, zeros, ties, scales 1e-40 .. 1e40, M to 1e15, sigma 0 ..
    1e3, rho in {0, 1/2, 1}, U at or near the optimum; measured 0.04 of it against the printed form in mpmath at 60
    digits (tests/test_accuracy_icl.py). The printed form cancelled by a factor ~M at the optimum (2.5e-5 relative
    at M = 1e12).
    Regime: Gaussian inputs, fixed w, a deterministic number ``rho M`` of flips. At ``U = U*`` and
    rho = 0 this equals Thm 5.4.2 (:func:`optimum_eval_risk`). A first derivation of the flip formula
    wrote ``w^T Lambda U Lambda U Lambda w`` and ``w^T Lambda^2 U w``; these equal the terms above
    only when U is symmetric and commutes with Lambda (true for ``U*``), see docs/errata.md.

    References
    ----------
    .. [src] [Shi24, Theorem 5.4.2, proof in App. D.2.2, Lemma D.2]; flips derived in docs/icl.md.

    Examples
    --------
    >>> eval_risk(np.zeros((2, 2)), [1.0, 2.0], [1.0, 1.0], M=4)  # U = 0 (r = 0): ||w||_Lambda^2
    3.0
    """
    A, L, M, sigma, beta, lam, Q = _eval_setup("icl.eval_risk", U, Lambda, M, sigma, u, rho)
    w = _vector("icl.eval_risk", "w", w, L.shape[0])
    At, wt = Q.T @ A @ Q, Q.T @ w
    lw = lam * wt
    z = lw @ At                      # Q^T A^T Lambda w
    e = beta * z - wt
    return float(lam @ (e * e + z * z / M) + (sigma**2 + lw @ wt) / M * (lam @ (At * At) @ lam))


def eval_risk_avg(U, Lambda, M, sigma=0.0, *, u=1.0, rho=0.0):
    r"""Evaluation risk averaged over the task ``w ~ N(0, I_d)`` (derived), for any key-query matrix.

    .. math:: \bar R = (\beta^2 + \tfrac1M)\,\mathrm{tr}(\Lambda A\Lambda A^\top\Lambda)
              + \tfrac{\sigma^2 + \mathrm{tr}\Lambda}{M}\,\mathrm{tr}(A\Lambda A^\top\Lambda)
              - 2\beta\,\mathrm{tr}(\Lambda^2 A) + \mathrm{tr}\Lambda,\quad A = uU

    Parameters
    ----------
    U : ndarray of shape (d, d)
    Lambda : ndarray of shape (d, d) or (d,)
    M : int
        Evaluation context length, >= 1.
    sigma : float
        Label noise standard deviation, >= 0.
    u : float
    rho : float
        Fraction of flipped context labels, in [0, 1], ``rho M`` an integer.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: as :func:`eval_risk` with |w~_i| -> 1 in S; measured 0.03 of it (tests/test_accuracy_icl.py).
    Regime: as :func:`eval_risk`. With M = N, sigma = 0, rho = 0 it is twice the population loss
    (pretraining and evaluation prompts then have the same law; the loss has a 1/2).

    References
    ----------
    .. [src] derived in docs/icl.md from [Shi24, Theorem 5.4.2] (w-average).

    Examples
    --------
    >>> from popdyn.models.icl import population_loss
    >>> U = np.array([[0.3, 0.1], [0.0, 0.2]])
    >>> bool(np.isclose(eval_risk_avg(U, [1.0, 2.0], M=7), 2 * population_loss(U, [1.0, 2.0], N=7)))
    True
    """
    A, L, M, sigma, beta, lam, Q = _eval_setup("icl.eval_risk_avg", U, Lambda, M, sigma, u, rho)
    At = Q.T @ A @ Q
    A2 = At * At
    E = beta * At.T * lam            # Q^T (beta A^T Lambda - I) Q
    E.flat[::lam.size + 1] -= 1.0
    return float(lam @ (E * E).sum(1) + (lam * lam) @ A2 @ lam / M + (sigma**2 + lam.sum()) / M * (lam @ A2 @ lam))


def eval_risk_flip(U, Lambda, w, M, rho, *, u=1.0):
    r"""Evaluation risk with a fraction rho of the M context labels flipped, no noise (derived extension).

    .. math:: R_\rho(w) = (\beta^2 + \tfrac1M)\, w^\top\Lambda A\Lambda A^\top\Lambda w
              + \tfrac1M\|w\|_\Lambda^2\,\mathrm{tr}(A\Lambda A^\top\Lambda)
              - 2\beta\, w^\top\Lambda A^\top\Lambda w + \|w\|_\Lambda^2,\quad \beta = 1 - 2\rho

    Parameters
    ----------
    U : ndarray of shape (d, d)
    Lambda : ndarray of shape (d, d) or (d,)
    w : ndarray of shape (d,)
    M : int
        Evaluation context length, >= 1.
    rho : float
        Fraction of flipped labels, in [0, 1], ``rho M`` an integer.
    u : float

    Returns
    -------
    float

    Notes
    -----
    Accuracy: as :func:`eval_risk` (the same computation, sigma = 0).
    Regime: NOT in the paper (docs/icl.md, matching the LLM label-flip protocol of Fig. 5.1). At
    rho = 1/2 the context carries no signal on average and the risk is >= ``||w||_Lambda^2``.

    References
    ----------
    .. [src] derived in docs/icl.md.

    Examples
    --------
    >>> U, lam, w = np.diag([0.5, 0.2]), [1.0, 0.5], np.array([1.0, -1.0])
    >>> eval_risk_flip(U, lam, w, M=8, rho=0.0) == eval_risk(U, lam, w, M=8, sigma=0.0)
    True
    """
    return eval_risk(U, Lambda, w, M, 0.0, u=u, rho=rho)


def _eigen_w(owner, Lambda, N, r, w):
    opt = optimum(Lambda, N, r)
    w = _vector(owner, "w", w, opt.lam.size)
    c = opt.Q.T @ w
    s = np.where(np.arange(c.size) < as_int(owner, "r", r, 0, c.size), c, 0.0)
    return opt, s, c - s


def _eigen_factors(opt, N):
    """``lam``, ``lam_i v_i*`` (0 beyond r) and ``1 - lam_i v_i* = (lam_i + T)/((N + 1) lam_i + T)`` without the
    cancellation of 1 - lam v (a factor ~N lost) and without lam^2, lam^3 (overflow above 1e102)."""
    lam, N = opt.lam, int(N)  # N validated by optimum
    T = lam.sum()
    den = (N + 1) * lam + T
    lv = np.where(opt.v > 0, N * lam / den, 0.0)
    return lam, lv, (lam + T) / den


def optimum_eval_risk(Lambda, N, r, w, M, sigma=0.0):
    r"""Thm 5.4.2: evaluation risk of the rank-r optimum on a noisy M-shot prompt, conditional on w.

    .. math:: \mathcal L = \frac1M\|s\|^2_{V^{*2}D^3} + \frac1M\big(\|s+\xi\|_D^2 + \sigma^2\big)
              \mathrm{tr}(V^{*2}D^2) + \|\xi\|_D^2 + \sum_{i\le r}s_i^2\lambda_i(\lambda_i v_i^* - 1)^2

    with ``Q^T w = s + xi``, s on the top-r eigen-coordinates and xi on the rest.

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.
    r : int
        Rank, in [0, d].
    w : ndarray of shape (d,)
        Task vector.
    M : int
        Evaluation context length, >= 1.
    sigma : float
        Label noise standard deviation, >= 0.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: a sum of positive terms (1 - lam_i v_i = (lam_i + T)/((N + 1) lam_i + T), no lam^3): relative error <=
    8 (d + 6) eps for a diagonal Lambda, plus 4 d^2 eps (1 + d lam_max / gap_r) lam_max (||w||^2 + sigma^2 d / M +
    d) for a rotated one (gap_r >= 1e-6 lam_max), plus, for a rotated one, 2 sum_{i<=r} N T delta / D_i^2 (lam_max
    (||w||^2 + d)(1 + 2/M) + sigma^2/M) with D_i = (N + 1) lam_i + T, delta = 4 d eps lam_max: eigh's absolute error
    delta in a small eigenvalue moves lam_i v_i by up to N T delta / D_i^2, so the risk of a nearly singular rotated
    Lambda is ill-conditioned where N lam_i ~ T (e.g. 6e-7 relative at d = 2, lam_min ~ 1e-12, N = 1e15; pass the
    spectrum, a diagonal Lambda, to avoid it). N, M to 1e15; measured 0.03 of it against the printed risk at U* in
    mpmath (tests/test_accuracy_icl.py). lam v - 1 cancelled by a factor ~N before.
    Regime: U = U*_r of Thm 5.4.1 (eigen-coordinates of :func:`spectrum`; with ``lambda_r =
    lambda_{r+1}`` the split s/xi depends on that choice). No 1/2 in the risk.

    References
    ----------
    .. [src] [Shi24, Theorem 5.4.2, proof in App. D.2.2].

    Examples
    --------
    >>> optimum_eval_risk([1.0, 2.0], N=5, r=0, w=[1.0, 1.0], M=3)  # r = 0: ||w||_Lambda^2
    3.0
    """
    opt, s, xi = _eigen_w("icl.optimum_eval_risk", Lambda, N, r, w)
    M = as_int("icl.optimum_eval_risk", "M", M, low=1)
    sigma = check("icl.optimum_eval_risk", "sigma", sigma, Interval(0, np.inf, closed="left"))
    lam, lv, gap = _eigen_factors(opt, N)
    return float(np.sum(lv**2 * lam * s**2) / M + (np.sum(lam * (s + xi)**2) + sigma**2) * np.sum(lv**2) / M
                 + np.sum(lam * xi**2) + np.sum(s**2 * lam * gap**2))


def optimum_eval_risk_avg(Lambda, N, r, M, sigma=0.0):
    r"""Thm 5.4.2 averaged over ``w ~ N(0, I_d)`` (derived).

    .. math:: \bar{\mathcal L}_r = \frac1M\sum_{i\le r}v_i^{*2}\lambda_i^3 + \frac{T + \sigma^2}M\sum_{i\le r}
              v_i^{*2}\lambda_i^2 + \sum_{i>r}\lambda_i + \sum_{i\le r}\lambda_i(\lambda_i v_i^* - 1)^2

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.
    r : int
        Rank, in [0, d].
    M : int
        Evaluation context length, >= 1.
    sigma : float
        Label noise standard deviation, >= 0.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: as :func:`optimum_eval_risk`; measured 0.03 of the bound (tests/test_accuracy_icl.py).
    Regime: as :func:`optimum_eval_risk`. Identity: with M = N and sigma = 0 it equals ``2 L*_r``.

    References
    ----------
    .. [src] derived in docs/icl.md from [Shi24, Theorem 5.4.2] (w-average).

    Examples
    --------
    >>> from popdyn.models.icl import optimal_loss
    >>> lam = [3.0, 1.0, 0.5]
    >>> bool(np.isclose(optimum_eval_risk_avg(lam, N=9, r=2, M=9), 2 * optimal_loss(lam, N=9, r=2)))
    True
    """
    opt = optimum(Lambda, N, r)
    M = as_int("icl.optimum_eval_risk_avg", "M", M, low=1)
    sigma = check("icl.optimum_eval_risk_avg", "sigma", sigma, Interval(0, np.inf, closed="left"))
    lam, lv, gap = _eigen_factors(opt, N)
    top = np.arange(lam.size) < r
    return float(np.sum(lv**2 * lam) / M + (lam.sum() + sigma**2) / M * np.sum(lv**2)
                 + np.sum(lam[~top]) + np.sum((lam * gap**2)[top]))


def large_n_eval_risk(Lambda, N, r, w, M, sigma=0.0):
    r"""Large-N approximation of Thm 5.4.2 and its validity ratio ``N lambda_r / T``.

    .. math:: \mathcal L \approx \|\xi\|_D^2 + \frac1M\big((r+1)\|s\|_D^2 + r\|\xi\|_D^2 + r\sigma^2\big)

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.
    r : int
        Rank, in [1, d].
    w : ndarray of shape (d,)
    M : int
        Evaluation context length, >= 1.
    sigma : float
        Label noise standard deviation, >= 0.

    Returns
    -------
    approx : float
    ratio : float
        ``N lambda_r / tr(Lambda)``; the approximation is poor unless it is >~ 100 (docs/icl.md).

    Notes
    -----
    Accuracy: as :func:`optimum_eval_risk` (positive terms); the ratio within 4 eps relative (diagonal Lambda);
    measured 0.02 of the bound (tests/test_accuracy_icl.py).
    Regime: ``N lambda_r >> T``, where ``lambda_i v_i* -> 1`` for i <= r.

    References
    ----------
    .. [src] [Shi24, Section 5.4.2] (the implication after Theorem 5.4.2); exact vs approximate in docs/icl.md.

    Examples
    --------
    >>> approx, ratio = large_n_eval_risk([1.0], N=10**12, r=1, w=[2.0], M=4)
    >>> round(approx, 6), approx == large_n_eval_risk([1.0], N=1, r=1, w=[2.0], M=4)[0]
    (2.0, True)
    """
    opt, s, xi = _eigen_w("icl.large_n_eval_risk", Lambda, N, r, w)
    r = _rank("icl.large_n_eval_risk", r, opt.lam.size)
    if r < 1:
        raise InvalidParameterError(f"The 'r' parameter of icl.large_n_eval_risk must be an int in [1, d]. "
                                    f"Got {r!r} instead.")
    M = as_int("icl.large_n_eval_risk", "M", M, low=1)
    sigma = check("icl.large_n_eval_risk", "sigma", sigma, Interval(0, np.inf, closed="left"))
    lam = opt.lam
    ns, nxi = float(np.sum(lam * s**2)), float(np.sum(lam * xi**2))
    approx = nxi + ((r + 1) * ns + r * nxi + r * sigma**2) / M
    return approx, float(N * lam[r - 1] / lam.sum())


def rank_gap(Lambda, N, r, r2, s, M, sigma=0.0):
    r"""Thm 5.4.3: risk of the rank-r2 optimum minus that of the rank-r optimum, for w in the top-r space.

    .. math:: \mathcal L(f_{r'}) - \mathcal L(f_r) = \frac1M\big(\|s\|_D^2 + \sigma^2\big)
              \sum_{i=r+1}^{r'}\Big(\frac{N\lambda_i}{(N+1)\lambda_i + T}\Big)^2 \;\ge 0

    Parameters
    ----------
    Lambda : ndarray of shape (d, d) or (d,)
    N : int
        Pretraining context length, >= 1.
    r : int
        Smaller rank, in [0, d].
    r2 : int
        Larger rank r', in [r, d].
    s : ndarray of shape (r,)
        Top-r eigen-coordinates of the task, ``w = Q[:, :r] s``.
    M : int
        Evaluation context length, >= 1.
    sigma : float
        Label noise standard deviation, >= 0.

    Returns
    -------
    float
        >= 0; linear in sigma^2 and in 1/M; ~ ``(r' - r)(||s||_D^2 + sigma^2)/M`` when ``N lambda_r' >> T``.

    Notes
    -----
    Accuracy: as :func:`optimum_eval_risk` (positive terms, >= 0); measured 0.02 of the bound
    (tests/test_accuracy_icl.py).
    Regime: w in the span of the top-r eigenvectors (the larger model then only adds noise).

    References
    ----------
    .. [src] [Shi24, Theorem 5.4.3, proof in App. D.2.2].

    Examples
    --------
    >>> rank_gap([1.0, 1.0], N=10, r=1, r2=1, s=[1.0], M=4)  # r' = r: no gap
    0.0
    """
    opt = optimum(Lambda, N, r2)
    d = opt.lam.size
    r, r2 = _rank("icl.rank_gap", r, d), _rank("icl.rank_gap", r2, d, name="r2")
    if r > r2:
        raise InvalidParameterError(f"The 'r2' parameter of icl.rank_gap must be an int in [r = {r}, {d}]. "
                                    f"Got {r2!r} instead.")
    s = _vector("icl.rank_gap", "s", s, r) if r else np.zeros(0)
    M = as_int("icl.rank_gap", "M", M, low=1)
    sigma = check("icl.rank_gap", "sigma", sigma, Interval(0, np.inf, closed="left"))
    lam, lv, _ = _eigen_factors(opt, N)
    return float((np.sum(lam[:r] * s**2) + sigma**2) / M * np.sum(lv[r:r2]**2))
