r"""Indicator to function (Lemma F.2, Claim F.3): exact :math:`p'_i`, untruncated :math:`h`, :math:`\mathbb E[h^2]`.

For :math:`\alpha, \beta \sim N(0,1)` independent and :math:`\alpha_1 = \alpha x_1 + \sqrt{1-x_1^2}\,\beta`,
Mehler's formula gives :math:`\mathbb E[\mathrm{He}_i(\alpha_1)1[\alpha\ge0]] = x_1^i p'_i` with
:math:`p'_i = \mathbb E_{g\sim N(0,1)}[\mathrm{He}_i(g)1[g\ge0]]`, zero for even :math:`i \ge 2`: only degree-0 and
odd terms of :math:`\phi` can be reproduced by a bias-free indicator, which is why Concept 2 keeps only those.
Hermite polynomials are the probabilists' :math:`\mathrm{He}_i`
(:math:`\mathbb E[\mathrm{He}_i\mathrm{He}_j] = i!\delta_{ij}`).

Public names: :func:`p_prime`, :func:`log_abs_p_prime`, :func:`h_coefficients`, :func:`h`, :func:`h_second_moment`.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, logsumexp

from popdyn._validate import FiniteArray, InvalidParameterError, check
from popdyn.hermite import hermite_polys

from .complexity import TaylorSeries

__all__ = ["p_prime", "log_abs_p_prime", "h_coefficients", "h", "h_second_moment"]

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

    References
    ----------
    .. [src] seed 004 L1428-1436 (Claim F.3); derived, specs/resnet_kernels.md §2.5 (V2).

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
    Regime: exact. Claim F.3's bound :math:`|p'_i| \ge (i-1)!!/4` (L1432) is false for every odd i >= 3;
    the sharp bound is :math:`|p'_i| \ge (i-1)!!/(\pi\sqrt i)` (spec §8 item 12).

    References
    ----------
    .. [src] seed 004 L1428-1436 (Claim F.3); derived, specs/resnet_kernels.md §2.5 (V2).

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
    L1455-1470, which trades exactness for boundedness).

    References
    ----------
    .. [src] seed 004 L1400-1452 (Lemma F.2, Claim F.3, (F.1)); derived, specs/resnet_kernels.md §2.5 (V2).

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

    References
    ----------
    .. [src] seed 004 L1400-1452 (Lemma F.2); derived, specs/resnet_kernels.md §2.5.

    Examples
    --------
    >>> h(TaylorSeries.from_coeffs([0.5, 1.0]), [0.0, 1.0]) - [1.0, 1.0 + math.sqrt(2 * math.pi)]
    array([0., 0.])
    """
    b = h_coefficients(series)
    x = check("resnet.h", "alpha1", np.ravel(alpha1), FiniteArray(1))
    scale = np.exp(0.5 * gammaln(np.arange(len(b)) + 1.0))
    return ((b * scale) @ hermite_polys(len(b) - 1, x)).reshape(np.shape(alpha1))


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
    which holds for C* large enough (C* >= 0.77 for the spec's V2 example).

    References
    ----------
    .. [src] seed 004 L1418, L1493-1509 (Lemma F.2); derived, specs/resnet_kernels.md §2.5 (V2).

    Examples
    --------
    >>> abs(h_second_moment(TaylorSeries.from_coeffs([0.5, 1.0])) - (1.0 + 2 * math.pi)) < 1e-12
    True
    """
    i = _finite_series("resnet.h_second_moment", series)
    nz = np.isfinite(series.log_abs)
    t = 2.0 * series.log_abs[nz] + gammaln(i[nz] + 1.0) - 2.0 * log_abs_p_prime(i[nz])
    return math.exp(logsumexp(t)) if t.size else 0.0
