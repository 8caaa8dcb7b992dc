"""The finite-(n, d) error curve of the looped transformer: exact real-Wishart moments ([Shi24] ch. 8;
derivations in docs/looped.md).

The Marchenko-Pastur curve is the d -> infinity limit of the theta-averaged error (1/d) tr (I - eta A)^t.
At finite (n, d) its gap to the simulation is a few per cent at d = 200 and grows with t, for two reasons: the
bulk of the spectrum of A = X^T X differs from MP at order 1/d, and lambda_max sits below n x_+ by a
Tracy-Widom shift of order d^(-2/3) relative. This module removes both: the expectation of the polynomial
(1/d) tr (I - eta A)^t is a finite sum of exact moments E tr A^k of the real Wishart (LOE) matrix, computed with
integer arithmetic, and eta = 1/L is replaced by the reciprocal of the Tracy-Widom mean of lambda_max.

Public names
------------
:func:`wishart_trace_moments`, :func:`lambda_max_mean`, :func:`finite_error_curve`
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import comb

import numpy as np

from ..._validate import Interval, InvalidParameterError, as_int, check

__all__ = ["wishart_trace_moments", "lambda_max_mean", "finite_error_curve"]

TW1_MEAN = -1.2065335745820  # mean of the GOE Tracy-Widom law F_1 (Tracy & Widom 1996; Johnstone 2001, Table 1)
K_MAX = 120  # highest moment: the mixed moments needed grow fast (1.1e4 at k = 60, 2.6e5 at 120: 3-8 s)


@lru_cache(maxsize=64)
def _moments(n, d, K):
    """E tr A^k, k = 0..K, by the integration-by-parts recursion on mixed moments (see the public docstring)."""
    memo = {(): 1}

    def key(parts):  # zero parts are factors tr A^0 = d; the rest sorted descending
        zeros = sum(1 for p in parts if p == 0)
        return d ** zeros, tuple(sorted((p for p in parts if p), reverse=True))

    def mixed(lam):  # E prod_j tr A^(lam_j); expand the smallest part: few states (K = 60: 1.1e4)
        if lam in memo:
            return memo[lam]
        l1, rest = lam[-1], lam[:-1]
        f, s = key((l1 - 1,) + rest)
        total = (n + l1 - 1) * f * mixed(s)
        for q in range(1, l1):
            f, s = key((q, l1 - 1 - q) + rest)
            total += f * mixed(s)
        for j, lk in enumerate(rest):
            f, s = key((l1 + lk - 1,) + rest[:j] + rest[j + 1:])
            total += 2 * lk * f * mixed(s)
        memo[lam] = total
        return total

    return (d,) + tuple(mixed((k,)) for k in range(1, K + 1))


def wishart_trace_moments(n, d, K):
    r"""Exact moments E tr A^k, k = 0..K, of the real Wishart matrix A = X^T X, X in R^{n x d} with iid N(0, 1).

    .. math:: \mathbb E\prod_r p_{l_r} = (n+l_1-1)\,\mathbb E\,p_{l_1-1}\!\prod_{r\ge2}p_{l_r}
              + \sum_{q=1}^{l_1-1}\mathbb E\,p_q\,p_{l_1-1-q}\!\prod_{r\ge2}p_{l_r}
              + 2\sum_{k\ge2}l_k\,\mathbb E\,p_{l_1+l_k-1}\!\prod_{r\ne1,k}p_{l_r},
              \qquad p_l = \mathrm{tr}A^l,\ p_0 = d

    Parameters
    ----------
    n : int
        Rows of X (examples), >= 1.
    d : int
        Columns of X (dimension), >= 1.
    K : int
        Highest power, in [0, 120] (``K_MAX``).

    Returns
    -------
    tuple of int, length K + 1
        Exact integers (E of a polynomial in Gaussian entries with integer moments).

    Notes
    -----
    Regime: any n, d >= 1 (n <= d included). The recursion is Gaussian integration by parts,
    E X_ia F = E d F / d X_ia, applied to the first factor tr(X^T X)^(l_1) = sum_ia X_ia (X A^(l_1 - 1))_ia
    (Stein's lemma; the real-Wishart case of Deitmar's mixed-moment recursion). Each step lowers the total
    power by one; expanding the smallest part keeps the mixed moments needed few (K = 60: about 1.1e4 of them,
    0.1 s). Checks: d = 1 gives E chi^2_n^k = n (n + 2) ... (n + 2k - 2); the moments are symmetric in (n, d)
    (tr (X^T X)^k = tr (X X^T)^k), which the recursion does not build in.

    Accuracy: exact integers (the recursion in Python's integers; tested against the closed forms, Wick
    enumeration and the (n, d) symmetry for k >= 1).

    References
    ----------
    .. [src] derived (Gaussian integration by parts; B. Deitmar, "A recursion formula for mixed trace moments
       of isotropic Wishart matrices", Thm 3.2); docs/looped.md.

    Examples
    --------
    >>> wishart_trace_moments(7, 3, 3)  # d, n d, n d (n + d + 1), n d (n^2 + d^2 + 3 n d + 3 n + 3 d + 4)
    (3, 21, 231, 3255)
    """
    owner = "looped.wishart_trace_moments"
    return _moments(as_int(owner, "n", n, low=1), as_int(owner, "d", d, low=1), as_int(owner, "K", K, low=0, high=K_MAX))


def lambda_max_mean(n, d):
    r"""Tracy-Widom approximation of E lambda_max(X^T X), X in R^{n x d} with iid N(0, 1) entries.

    .. math:: \mathbb E\lambda_{\max}\approx\mu_{n,d}+\sigma_{n,d}\,\mathbb E\,\mathrm{TW}_1,\quad
              \mu_{n,d}=(\sqrt{n-1}+\sqrt d)^2,\quad
              \sigma_{n,d}=(\sqrt{n-1}+\sqrt d)\Big(\frac1{\sqrt{n-1}}+\frac1{\sqrt d}\Big)^{1/3},\quad
              \mathbb E\,\mathrm{TW}_1=-1.2065

    Parameters
    ----------
    n : int
        Examples, >= 2.
    d : int
        Dimension, >= 1.

    Returns
    -------
    float

    Notes
    -----
    Regime: n, d large with d/n in (0, 1); Johnstone's centring and scaling, whose error is of lower order than
    sigma. Measured against the sample mean of lambda_max (tests): within 0.3 % at d >= 50, n = 4 d. The
    Marchenko-Pastur edge n x_+ = (sqrt n + sqrt d)^2 overestimates it by about 1.2 sigma, i.e. a relative
    d^(-2/3) shift (1.6 % at d = 200, n = 800).

    Accuracy: the formula is evaluated to relative 8 eps (measured 0.16 of it against mpmath at 40 digits); the
    approximation's own error, the Tracy-Widom law's finite-size corrections, is the measured 0.3 % above.

    References
    ----------
    .. [src] I. M. Johnstone, Ann. Statist. 29 (2001) 295-327, Thm 1.1; docs/looped.md (the finite-size gap:
       lambda_max above or below n x_+).

    Examples
    --------
    >>> round(lambda_max_mean(800, 200) / 800, 4)  # MP edge x_+ = 2.25
    2.2178
    """
    owner = "looped.lambda_max_mean"
    n, d = as_int(owner, "n", n, low=2), as_int(owner, "d", d, low=1)
    s = np.sqrt(n - 1) + np.sqrt(d)
    return float(s * s + s * (1 / np.sqrt(n - 1) + 1 / np.sqrt(d)) ** (1 / 3) * TW1_MEAN)


def finite_error_curve(n, d, T, power=1, *, eta=None):
    r"""Exact finite-(n, d) mean error curve (1/d) E tr (I - eta A)^(power t), t = 0..T, for a fixed step eta.

    .. math:: F_{n,d}(t) = \frac1d\,\mathbb E\,\mathrm{tr}(I-\eta A)^{t}
              = \frac1d\sum_{k=0}^{t}\binom tk(-\eta)^k\,\mathbb E\,\mathrm{tr}A^k,
              \qquad \eta = 1/\mathbb E\lambda_{\max}\ \text{(default)}

    Parameters
    ----------
    n : int
        Examples (>= 2).
    d : int
        Dimension (>= 1).
    T : int
        Last loop, in [0, 120 / power] (the degree power T at most ``K_MAX``).
    power : {1, 2}
        1: the mean signed error / (-alpha) (docs/looped.md); 2: the mean squared distance ||theta^(t) - theta*||^2.
    eta : float, optional
        A fixed step (one network for every prompt); the curve is then exact. Default: the theorem's
        eta = 1/lambda_max(A) replaced by 1 / :func:`lambda_max_mean` (n, d).

    Returns
    -------
    ndarray of shape (T + 1,)

    Notes
    -----
    Regime: X_ij iid N(0, 1) (a covariance c I: pass eta c), theta* uniform on S^(d-1), realizable. For a
    float eta the value is exact: integer moments (:func:`wishart_trace_moments`) and the binomial sum in
    rational arithmetic with eta's exact binary value, rounded once (the sum cancels ~10^11-fold at t = 30, so
    float64 moments would not do). For the default step the only approximation is a per-prompt step
    1/lambda_max replaced by its typical value: its fluctuation (relative d^(-2/3)) enters at second order and
    through the weak coupling of lambda_max to the bulk. Measured against the theta-average over sampled
    prompts: 0.1-2 % for t <= 30 at d = 50..400, n = 4 d (looped.finite_size), where the MP limit is 2-8 % off.
    Cost: O(T^2) big-integer operations (2 T = 60: about 0.1 s, cached per (n, d)).

    Accuracy: correctly rounded (within half an ulp of the exact rational value; tested against the same sum in
    mpmath at 200 digits for n <= 100, d <= 100, 2T <= 40, both the default and given steps).

    References
    ----------
    .. [src] derived in docs/looped.md (with the finite-size gap).

    Examples
    --------
    >>> F = finite_error_curve(40, 1, 2, eta=0.01)  # d = 1: E (1 - eta chi^2_40)^t, E chi^2 = 40, E chi^4 = 1680
    >>> bool(np.allclose(F, [1, 1 - 0.4, 1 - 0.8 + 1e-4 * 1680]))
    True
    """
    owner = "looped.finite_error_curve"
    n, d = as_int(owner, "n", n, low=2), as_int(owner, "d", d, low=1)
    if power not in (1, 2):
        raise InvalidParameterError(f"The 'power' parameter of {owner} must be one of [1, 2]. Got {power!r} instead.")
    T = as_int(owner, "T", T, low=0, high=K_MAX // power)
    step = 1 / lambda_max_mean(n, d) if eta is None else check(owner, "eta", eta, Interval(0, np.inf, closed="neither"))
    return _curve(n, d, power * T, power, Fraction(step))


@lru_cache(maxsize=64)
def _curve(n, d, K, power, step):
    m = _moments(n, d, K)
    p, q = step.numerator, step.denominator  # eta = p / q: d q^t F(t) = sum_k C(t, k) (-p)^k q^(t-k) m_k
    out = []
    for t in range(0, K + 1, power):
        num = sum(comb(t, k) * (-p) ** k * q ** (t - k) * m[k] for k in range(t + 1))
        out.append(num / (d * q ** t))  # int / int: correctly rounded
    return np.array(out, dtype=np.float64)
