r"""Indicator to function (Lemma F.2, Claim F.3): exact :math:`p'_i`, untruncated :math:`h`, :math:`\mathbb E[h^2]`.

For :math:`\alpha, \beta \sim N(0,1)` independent and :math:`\alpha_1 = \alpha x_1 + \sqrt{1-x_1^2}\,\beta`,
Mehler's formula gives :math:`\mathbb E[\mathrm{He}_i(\alpha_1)1[\alpha\ge0]] = x_1^i p'_i` with
:math:`p'_i = \mathbb E_{g\sim N(0,1)}[\mathrm{He}_i(g)1[g\ge0]]`, zero for even :math:`i \ge 2`: only degree-0 and
odd terms of :math:`\phi` can be reproduced by a bias-free indicator, which is why Concept 2 keeps only those.
Hermite polynomials are the probabilists' :math:`\mathrm{He}_i`
(:math:`\mathbb E[\mathrm{He}_i\mathrm{He}_j] = i!\delta_{ij}`).

The paper's bounded version (Claim F.4, App. F.2) clips each :math:`\mathrm{He}_i` at
:math:`B_i = 100\sqrt i + 10\sqrt{\log(1/\varepsilon)}`: :func:`truncation_levels`, :func:`h_truncated`, its exact
error :func:`truncation_error` and the exact Claim F.4(a), (b) tail sums :func:`claim_f4_tails`.

Public names: :func:`p_prime`, :func:`log_abs_p_prime`, :func:`h_coefficients`, :func:`h`, :func:`h_second_moment`,
:func:`truncation_levels`, :func:`h_truncated`, :func:`truncation_error`, :func:`claim_f4_tails`.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.integrate import quad
from scipy.special import gammaln, log_ndtr, logsumexp, ndtr

from popdyn._validate import FiniteArray, Interval, InvalidParameterError, check
from popdyn.gaussian import normal_pdf
from popdyn.hermite import hermite_polys, log_hermite_abs

from .complexity import TaylorSeries

__all__ = ["p_prime", "log_abs_p_prime", "h_coefficients", "h", "h_second_moment", "truncation_levels", "h_truncated",
           "truncation_error", "claim_f4_tails"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _degrees(owner, i):
    a = np.asarray(i)
    if a.dtype.kind not in "iu" or (a < 0).any():
        raise InvalidParameterError(f"The 'i' parameter of {owner} must be a non-negative int or int array. "
                                    f"Got {i!r} instead.")
    return a.astype(np.int64)


def log_abs_p_prime(i):
    r"""Logarithm of :math:`|p'_i|` (``-inf`` for even :math:`i \ge 2`), finite for every degree.

    .. math:: \log|p'_i| = \log\,(i-2)!! - \tfrac12\log(2\pi)\ (i\ \text{odd}),\qquad \log|p'_0| = -\log 2

    Parameters
    ----------
    i : int or ndarray of int
        Degrees :math:`i \ge 0`.

    Returns
    -------
    float or ndarray
        Same shape as ``i``.

    Notes
    -----
    Regime: exact, with :math:`(2n-1)!! = (2n)!/(2^n n!)` through ``gammaln``; use it where :math:`p'_i` overflows
    (i >~ 300).
    Accuracy: absolute error of the log <= 8 eps (1 + i log(i + 1)) (gammaln's rounding), i to 2000 tested.
    Measured: 0.11 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Claim F.3]; exact value derived in docs/resnet.md.

    Examples
    --------
    >>> round(float(np.exp(log_abs_p_prime(3))) * math.sqrt(2 * math.pi), 12)
    1.0
    """
    i = _degrees("resnet.log_abs_p_prime", i)
    n = np.maximum(i - 1, 0) // 2           # (i - 2)!! = (2n - 1)!! for odd i = 2n + 1
    odd = gammaln(2 * n + 1) - n * math.log(2.0) - gammaln(n + 1) - _LOG_SQRT_2PI
    out = np.where(i == 0, -math.log(2.0), np.where(i % 2 == 1, odd, -np.inf))
    return out[()] if out.ndim == 0 else out


def p_prime(i):
    r"""The constant :math:`p'_i = \mathbb E_{g\sim N(0,1)}[\mathrm{He}_i(g)\,1[g\ge0]]` of Claim F.3.

    .. math:: p'_0 = \tfrac12,\qquad p'_i = \frac{\mathrm{He}_{i-1}(0)}{\sqrt{2\pi}}
              = \frac{(-1)^{(i-1)/2}\,(i-2)!!}{\sqrt{2\pi}}\ (i\ \text{odd}),\qquad p'_i = 0\ (i \ge 2\ \text{even})

    Parameters
    ----------
    i : int or ndarray of int
        Degrees :math:`i \ge 0`.

    Returns
    -------
    float or ndarray
        Same shape as ``i``; overflows to ``inf`` in magnitude past i ~ 300 (use :func:`log_abs_p_prime`).

    Notes
    -----
    Regime: exact. Claim F.3's bound :math:`|p'_i| \ge (i-1)!!/4` is false for every odd i >= 3;
    the sharp bound is :math:`|p'_i| \ge (i-1)!!/(\pi\sqrt i)` (docs/errata.md).
    Accuracy: relative error <= 8 eps (1 + i log(i + 1)); exact 0 for even i >= 2; +-inf past the float64 range.
    Measured: 0.096 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Claim F.3]; exact value derived in docs/resnet.md.

    Examples
    --------
    >>> p_prime(np.arange(4)) * math.sqrt(2 * math.pi)   # sqrt(2 pi)/2, 1, 0, -1
    array([ 1.25331414,  1.        ,  0.        , -1.        ])
    """
    i = _degrees("resnet.p_prime", i)
    sign = np.where(i % 2 == 1, (-1.0) ** ((i - 1) // 2), 1.0)
    with np.errstate(over="ignore"):
        out = sign * np.exp(log_abs_p_prime(i))
    return out[()] if np.ndim(out) == 0 else out


def _finite_series(owner, series):
    if not isinstance(series, TaylorSeries) or series.degree is None:
        raise InvalidParameterError(f"The 'series' parameter of {owner} must be a finite TaylorSeries "
                                    f"(.truncate(n) an infinite one). Got {series!r} instead.")
    i = np.arange(series.degree + 1)
    bad = (i >= 2) & (i % 2 == 0) & np.isfinite(series.log_abs)
    if bad.any():
        raise InvalidParameterError(f"The 'series' parameter of {owner} must have only zero-order and odd-order "
                                    f"terms (Lemma F.2). Got non-zero even degrees {i[bad].tolist()} instead.")
    return i


def h_coefficients(series):
    r"""Hermite coefficients :math:`b_i` of the untruncated :math:`h = \sum_i b_i \mathrm{He}_i` of Lemma F.2.

    .. math:: h(\alpha_1) = 2c_0 + \sum_{i\ \mathrm{odd}} \frac{c_i}{p'_i}\mathrm{He}_i(\alpha_1)
              \ \Longrightarrow\ \mathbb E_{\alpha,\beta}\big[1[\alpha\ge0]\,h(\alpha_1)\big] = \phi(x_1)
              \quad\forall x_1\in[-1,1]

    Parameters
    ----------
    series : TaylorSeries
        Finite :math:`\phi(z) = c_0 + \sum_{i\ \mathrm{odd}} c_i z^i` (non-zero even degrees >= 2 refused).

    Returns
    -------
    ndarray of shape (degree + 1,)
        :math:`b_0 = 2c_0`, :math:`b_i = c_i/p'_i` for odd i, 0 for even i >= 2.

    Notes
    -----
    Regime: exact (no truncation of :math:`\mathrm{He}_i` at :math:`B_i`, unlike the paper's :math:`\hat h_i`,
    Claim F.4, which trades exactness for boundedness).
    Accuracy: relative error <= 8 eps (1 + i log(i + 1)) per coefficient. Measured: 0.08 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Lemma F.2, Claim F.3, eq. (F.1)]; the untruncated h derived in docs/resnet.md.

    Examples
    --------
    >>> h_coefficients(TaylorSeries.from_coeffs([0.5, 1.0])) * [1, 1 / math.sqrt(2 * math.pi)]   # 2c0, c1/p'_1
    array([1., 1.])
    """
    i = _finite_series("resnet.h_coefficients", series)
    c = series.coeffs()
    keep = (i == 0) | (i % 2 == 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(keep, c / np.where(keep, p_prime(i), 1.0), 0.0)


def h(series, alpha1):
    r"""The untruncated indicator-to-function map :math:`h(\alpha_1)` of Lemma F.2 at the points ``alpha1``.

    .. math:: h(\alpha_1) = \sum_i b_i\,\mathrm{He}_i(\alpha_1) = \sum_i b_i\sqrt{i!}\,h_i(\alpha_1)

    Parameters
    ----------
    series : TaylorSeries
        Finite :math:`\phi` with only degree-0 and odd terms.
    alpha1 : array_like
        Points, any shape.

    Returns
    -------
    ndarray
        Same shape as ``alpha1``.

    Notes
    -----
    Regime: float64 through the normalized Hermite recurrence of :mod:`popdyn.hermite`; representable for
    degree <~ 150 at :math:`|\alpha_1| \lesssim 10`.
    Accuracy: absolute error <= 4 (n + 1) eps :math:`\sum_i|b_i\mathrm{He}_i(\alpha_1)|` (degree n <= 61,
    :math:`|\alpha_1|\le8` tested). Measured: 0.25 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Lemma F.2]; derived in docs/resnet.md.

    Examples
    --------
    >>> h(TaylorSeries.from_coeffs([0.5, 1.0]), [0.0, 1.0]) - [1.0, 1.0 + math.sqrt(2 * math.pi)]
    array([0., 0.])
    """
    b = h_coefficients(series)
    x = check("resnet.h", "alpha1", np.ravel(alpha1), FiniteArray(1))
    return _hermite_sum(b, x).reshape(np.shape(alpha1))


def _hermite_sum(b, x):
    """sum_i b_i He_i(x) at the 1-d points x (through the normalized recurrence, He_i = sqrt(i!) h_i)."""
    scale = np.exp(0.5 * gammaln(np.arange(len(b)) + 1.0))
    return (b * scale) @ hermite_polys(len(b) - 1, x)


def h_second_moment(series):
    r""":math:`\mathbb E_{\alpha_1\sim N(0,1)}[h(\alpha_1)^2]` of the untruncated :math:`h`, in closed form.

    .. math:: \mathbb E[h^2] = \sum_i b_i^2\, i! = 4c_0^2 + 2\pi\sum_{i\ \mathrm{odd}}\frac{c_i^2\, i!}{((i-2)!!)^2}

    Parameters
    ----------
    series : TaylorSeries
        Finite :math:`\phi` with only degree-0 and odd terms.

    Returns
    -------
    float
        ``OverflowError`` past float64 (terms grow like :math:`c_i^2\sqrt i\,2^i (i-1)!!`-ish ratios).

    Notes
    -----
    Regime: exact, summed in log space. Lemma F.2 states :math:`\mathbb E[h^2] \le \mathfrak C_s(\phi,1)^2`,
    which holds for C* large enough (C* >= 0.77 for the example in docs/resnet.md).
    Accuracy: relative error <= 16 eps (1 + n log(n + 1)). Measured: 0.14 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Lemma F.2 and its proof (App. F.2)]; the closed form derived in docs/resnet.md.

    Examples
    --------
    >>> abs(h_second_moment(TaylorSeries.from_coeffs([0.5, 1.0])) - (1.0 + 2 * math.pi)) < 1e-12
    True
    """
    i = _finite_series("resnet.h_second_moment", series)
    nz = np.isfinite(series.log_abs)
    t = 2.0 * series.log_abs[nz] + gammaln(i[nz] + 1.0) - 2.0 * log_abs_p_prime(i[nz])
    return math.exp(logsumexp(t)) if t.size else 0.0


# ---------- Claim F.4: the paper's truncated h ----------
_EPS = Interval(0.0, 1.0, "neither")
_LEVEL = Interval(0.0, np.inf, "right")


def truncation_levels(series, eps):
    r"""Claim F.4's truncation levels :math:`B_i` for the degrees of ``series`` (``inf`` at i = 0).

    .. math:: B_i = 100\,i^{1/2} + 10\sqrt{\log(1/\varepsilon)}\quad(i \ge 1)

    Parameters
    ----------
    series : TaylorSeries
        Finite :math:`\phi` with only degree-0 and odd terms.
    eps : float
        Target accuracy :math:`\varepsilon \in (0, 1)` of Lemma F.2.

    Returns
    -------
    ndarray of shape (degree + 1,)
        :math:`B_0 = \infty` (:math:`\mathrm{He}_0 = 1` needs no truncation).

    Notes
    -----
    Regime: exact. :math:`B_i \ge 100`: the Gaussian mass beyond is below :math:`e^{-5000}`, so the truncation
    moves :math:`\mathbb E[1[\alpha\ge0]h(\alpha_1)]` by far less than float64 resolves (:func:`truncation_error`).
    Accuracy: relative error <= 4 eps.

    References
    ----------
    .. [src] [AllenZhu19, Claim F.4].

    Examples
    --------
    >>> truncation_levels(TaylorSeries.from_coeffs([0.0, 1.0]), eps=math.exp(-1)).tolist()
    [inf, 110.0]
    """
    i = _finite_series("resnet.truncation_levels", series)
    eps = check("resnet.truncation_levels", "eps", eps, _EPS)
    B = 100.0 * np.sqrt(i) + 10.0 * math.sqrt(math.log(1.0 / eps))
    B[0] = np.inf
    return B


def _levels(owner, series, eps, B):
    """(degrees, h coefficients b_i, levels B_i) from exactly one of eps (Claim F.4) and B (a level or one per
    degree); B_0 is inf (He_0 = 1)."""
    i = _finite_series(owner, series)
    if (eps is None) == (B is None):
        raise InvalidParameterError(f"Exactly one of the 'eps' and 'B' parameters of {owner} must be given. "
                                    f"Got eps={eps!r}, B={B!r} instead.")
    if eps is not None:
        levels = truncation_levels(series, eps)
    elif np.ndim(B) == 0:
        levels = np.full(i.size, check(owner, "B", B, _LEVEL))
    else:
        levels = np.array(B, dtype=np.float64)
        if levels.shape != i.shape or np.isnan(levels).any() or (levels <= 0).any():
            raise InvalidParameterError(f"The 'B' parameter of {owner} must be a positive float or {i.size} "
                                        f"positive levels (inf allowed), one per degree. Got {B!r} instead.")
    levels = levels.copy()
    levels[0] = np.inf
    return i, h_coefficients(series), levels


def _clipped_sum(b, levels, x):
    """sum_i b_i He_i(clip(x, -B_i, B_i)) at the 1-d points x, one Hermite table per distinct level."""
    out = np.zeros_like(x)
    for level in np.unique(levels[b != 0]):
        sel = np.where(levels == level, b, 0.0)
        out += _hermite_sum(sel, np.clip(x, -level, level))
    return out


def h_truncated(series, alpha1, eps=None, B=None):
    r"""The paper's bounded :math:`h` of Lemma F.2 (Claim F.4): each :math:`\mathrm{He}_i` clipped at :math:`B_i`.

    .. math:: h(\alpha_1) = 2c_0 + \sum_{i\ \mathrm{odd}} \frac{c_i}{p'_i}\,\widehat{\mathrm{He}}_i(\alpha_1),\qquad
              \widehat{\mathrm{He}}_i(z) = \mathrm{He}_i\big(\max(-B_i, \min(z, B_i))\big)

    Parameters
    ----------
    series : TaylorSeries
        Finite :math:`\phi` with only degree-0 and odd terms.
    alpha1 : array_like
        Points, any shape.
    eps : float, optional
        Claim F.4's levels :math:`B_i = 100\sqrt i + 10\sqrt{\log(1/\varepsilon)}` (:func:`truncation_levels`).
    B : float or array_like of shape (degree + 1,), optional
        Explicit levels instead (one for all degrees, or one per degree; ``inf`` = no truncation).

    Returns
    -------
    ndarray
        Same shape as ``alpha1``; equals :func:`h` wherever :math:`|\alpha_1| \le \min_i B_i`.

    Notes
    -----
    Regime: float64, as :func:`h`. :math:`\widehat{\mathrm{He}}_i` is the paper's
    :math:`h_i(z)1[|z|\le B_i] + h_i(\mathrm{sign}(z)B_i)1[|z|>B_i]` (App. F.2): bounded and Lipschitz, at the price of
    the error :func:`truncation_error`.
    Accuracy: as :func:`h` at the clipped points. Measured: 0.25 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Claim F.4 and the truncated h of App. F.2].

    Examples
    --------
    >>> s = TaylorSeries.from_coeffs([0.5, 1.0])
    >>> (h_truncated(s, [0.5, 3.0], B=2.0) - h(s, [0.5, 2.0])).tolist()
    [0.0, 0.0]
    """
    _, b, levels = _levels("resnet.h_truncated", series, eps, B)
    x = check("resnet.h_truncated", "alpha1", np.ravel(alpha1), FiniteArray(1))
    return _clipped_sum(b, levels, x).reshape(np.shape(alpha1))


def truncation_error(series, x1, eps=None, B=None):
    r"""Exact error :math:`R'(x_1)` of the truncated :math:`h`: :math:`\mathbb E[1[\alpha\ge0]h(\alpha_1)] - \phi(x_1)`.

    .. math:: R'(x_1) = \int_{|z| > \min_i B_i} \big(h_{\mathrm{trunc}}(z) - h(z)\big)\,
              \Phi\Big(\frac{x_1 z}{\sqrt{1-x_1^2}}\Big)\,\varphi(z)\,dz

    since :math:`P(\alpha\ge0 \mid \alpha_1 = z) = \Phi(x_1 z/\sqrt{1-x_1^2})` (a step at :math:`x_1 = \pm1`) and the
    untruncated :math:`h` reproduces :math:`\phi` exactly.

    Parameters
    ----------
    series : TaylorSeries
        Finite :math:`\phi` with only degree-0 and odd terms.
    x1 : float or array_like
        Points in [-1, 1].
    eps, B
        The levels, as in :func:`h_truncated`.

    Returns
    -------
    float or ndarray
        Same shape as ``x1``. Underflows to 0 once :math:`\varphi(\min_i B_i)` does (:math:`B \gtrsim 38`, always
        at the paper's levels); :func:`claim_f4_tails` bounds it in log space there.

    Notes
    -----
    Regime: adaptive quadrature (relative tolerance 1e-10, absolute 1e-14 before the factor) in
    :math:`t = |z| - \min_i B_i` with the factor :math:`\varphi(\min_i B_i)` taken out, one panel between
    consecutive levels. Lemma F.2's proof states :math:`|R'(x_1)| \le \varepsilon/4` at the paper's levels
    (App. F.2), from Claim F.4(a) + (b) each :math:`\le \varepsilon/8`.
    Accuracy: relative error <= 1e-10 of the quadrature (scipy quad's tolerance) plus absolute 1e-14
    :math:`\varphi(\min_iB_i)`; not covered by tests/test_accuracy_resnet.py.

    References
    ----------
    .. [src] [AllenZhu19, Claim F.4, R' in the proof of Lemma F.2]; the exact error derived in docs/resnet.md.

    Examples
    --------
    >>> s = TaylorSeries.from_coeffs([0.0, 1.0])   # h = sqrt(2 pi) z clipped at 1; at x1 = 1, alpha_1 = alpha:
    >>> ref = math.sqrt(2 * math.pi) * (ndtr(-1.0) - normal_pdf(1.0))   # sqrt(2 pi) int_1^inf (1 - z) phi(z) dz
    >>> bool(abs(truncation_error(s, 1.0, B=1.0) - ref) < 1e-12)
    True
    """
    owner = "resnet.truncation_error"
    i, b, levels = _levels(owner, series, eps, B)
    x = check(owner, "x1", np.ravel(x1), FiniteArray(1))
    check(owner, "x1", float(np.abs(x).max(initial=0.0)), Interval(0.0, 1.0))
    active = levels[(b != 0) & (i >= 1)]
    lo = float(active.min()) if active.size else np.inf
    out = np.zeros(x.shape)
    if np.isfinite(lo):
        cuts = np.unique(np.concatenate(([lo], active[np.isfinite(active)])))
        scale = float(normal_pdf(lo))

        def diff(z):
            z = np.atleast_1d(z)
            return _clipped_sum(b, levels, z) - _hermite_sum(b, z)

        for n, u in enumerate(x):
            s = math.sqrt(max(1.0 - u * u, 0.0))

            def weight(z):
                return float(ndtr(u * z / s)) if s > 0 else float(u * z >= 0)

            def f(t, side):
                z = side * (lo + t)
                return float(diff(z)[0]) * weight(z) * math.exp(-t * (lo + 0.5 * t))

            total = 0.0
            for side in (1.0, -1.0):
                if s == 0 and u * side < 0:
                    continue                                  # weight 0 on this side at x1 = -+1
                edges = list(cuts - lo) + [np.inf]
                for a, c in zip(edges[:-1], edges[1:]):
                    total += quad(f, a, c, args=(side,), epsabs=1e-14, epsrel=1e-10, limit=200)[0]
            out[n] = scale * total
    return out.reshape(np.shape(x1))[()] if np.ndim(x1) == 0 else out.reshape(np.shape(x1))


def claim_f4_tails(series, eps=None, B=None):
    r"""Natural logs of Claim F.4(a) and (b), the two tail sums bounding the truncation error, in closed form.

    .. math:: T_a = \sum_{i\ \mathrm{odd}} |c'_i|\,\mathbb E\big[|\mathrm{He}_i(z)|1[|z|\ge B_i]\big]
              = \sum_{i\ \mathrm{odd}} 2|c'_i|\,\mathrm{He}_{i-1}(B_i)\,\varphi(B_i),\qquad
              T_b = \sum_{i\ \mathrm{odd}} 2|c'_i|\,\mathrm{He}_i(B_i)\,\Phi(-B_i)

    with :math:`c'_i = c_i/p'_i`, using :math:`(\mathrm{He}_{i-1}\varphi)' = -\mathrm{He}_i\varphi` and
    :math:`\mathrm{He}_i > 0` beyond its largest root (< :math:`\sqrt{4i+2}`).

    Parameters
    ----------
    series : TaylorSeries
        Finite :math:`\phi` with only degree-0 and odd terms.
    eps, B
        The levels, as in :func:`h_truncated`; every non-zero odd term needs :math:`B_i \ge \sqrt{4i+2}`.

    Returns
    -------
    (float, float)
        :math:`(\log T_a, \log T_b)`; :math:`|R'(x_1)| \le T_a + T_b` for all :math:`x_1`. Claim F.4 states
        :math:`T_a, T_b \le \varepsilon/8` at the paper's levels.

    Notes
    -----
    Regime: exact, in log space (finite at :math:`B_i \sim 10^3` where :math:`\varphi(B_i)` underflows).
    Accuracy: absolute error of each log <= 1e-12 (1 + |log|) (degrees to 81, B to 1e3). Measured: 0.0004 of the
    declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Claim F.4(a), (b), proof of Lemma F.2]; the exact sums derived in docs/resnet.md.

    Examples
    --------
    >>> la, lb = claim_f4_tails(TaylorSeries.from_coeffs([0.0, 1.0]), B=3.0)   # c'_1 = sqrt(2 pi), He_1(3) = 3
    >>> Ta, Tb = 2 * math.exp(-4.5), 6 * math.sqrt(2 * math.pi) * ndtr(-3.0)    # 2 c'_1 phi(3), 2 c'_1 3 Phi(-3)
    >>> round(float(np.exp(la) / Ta), 12), round(float(np.exp(lb) / Tb), 12)
    (1.0, 1.0)
    """
    owner = "resnet.claim_f4_tails"
    i, _, levels = _levels(owner, series, eps, B)
    nz = (i % 2 == 1) & np.isfinite(series.log_abs)
    if not nz.any():
        return -np.inf, -np.inf
    i, Bi = i[nz], levels[nz]
    bad = Bi < np.sqrt(4 * i + 2)
    if bad.any():
        raise InvalidParameterError(f"The 'B' parameter of {owner} must be >= sqrt(4 i + 2) (the largest root of He_i) "
                                    f"at every non-zero odd degree. Got B = {Bi[bad].tolist()} at degrees "
                                    f"{i[bad].tolist()} instead.")
    fin = np.isfinite(Bi)
    if not fin.any():
        return -np.inf, -np.inf
    i, Bi = i[fin], Bi[fin]
    log_c = series.log_abs[i] - log_abs_p_prime(i) + math.log(2.0)
    la_tab, _ = log_hermite_abs(int(i.max()), Bi)                   # log|h_n(B_i)|, normalized
    log_he = la_tab[i, np.arange(i.size)] + 0.5 * gammaln(i + 1.0)
    log_he_prev = la_tab[i - 1, np.arange(i.size)] + 0.5 * gammaln(i.astype(float))
    log_a = logsumexp(log_c + log_he_prev - 0.5 * Bi * Bi - _LOG_SQRT_2PI)
    log_b = logsumexp(log_c + log_he + log_ndtr(-Bi))
    return float(log_a), float(log_b)
