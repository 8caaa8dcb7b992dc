r"""Complexity functionals :math:`\mathfrak C_\varepsilon(\phi,R)`, :math:`\mathfrak C_s(\phi,R)` of a Taylor series.

Coefficients are held in log space (``log|c_i|`` and signs): with :math:`C^* = 10^4` the weights
:math:`(C^*)^i` overflow and :math:`|c_i| = 1/i!` underflow long before the peak of
:math:`(C^*)^i|c_i|` at :math:`i \approx C^*|c|`. The three entire families
of Example 4.1 (:math:`e^{cz}-1`, :math:`\sin cz`, :math:`\cos cz`) are infinite series: their
:math:`\varepsilon`-free parts and :math:`\mathfrak C_s` use closed forms, their :math:`\varepsilon`-parts are
summed term by term until the tail is below double precision.

Public names: :class:`TaylorSeries`, :func:`log_C_eps`, :func:`log_C_eps_parts`, :func:`C_s`, :func:`log_C_s`.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, logsumexp

from popdyn._validate import FiniteArray, Interval, InvalidParameterError, as_int, check

__all__ = ["TaylorSeries", "log_C_eps", "log_C_eps_parts", "C_s", "log_C_s"]

_FAMILIES = ("exp-1", "sin", "cos")
_TAIL = 40.0            # stop once the remaining terms are below e^-40 of the running sum (< 1e-17 relative)
_CHUNK = 4096
_MAX_TERMS = 10**7
_OWNER = "resnet.TaylorSeries"


class TaylorSeries:
    r"""A power series :math:`\phi(z) = \sum_{i\ge0} c_i z^i`, stored as :math:`\log|c_i|` and signs.

    .. math:: c_i = \mathrm{sign}_i\, e^{\log|c_i|}

    Parameters
    ----------
    log_abs : array_like of shape (n,)
        ``log|c_i|``, ``-inf`` for a zero coefficient (``nan`` and ``+inf`` refused).
    sign : array_like of shape (n,)
        Signs in {-1, 0, 1}; ignored where ``log_abs`` is ``-inf``.

    Notes
    -----
    Regime: finite series from the constructor, :meth:`from_coeffs` and :meth:`truncate`; infinite series
    (``degree is None``) from :meth:`exp_minus_one`, :meth:`sin`, :meth:`cos` with ``n=None``.

    References
    ----------
    .. [src] [AllenZhu19, Section 4, Example 4.1]; closed forms derived in docs/resnet.md.
    """

    def __init__(self, log_abs, sign):
        log_abs = np.array(log_abs, dtype=np.float64)
        sign = np.array(sign, dtype=np.float64)
        if log_abs.ndim != 1 or np.isnan(log_abs).any() or np.isposinf(log_abs).any():
            raise InvalidParameterError(f"The 'log_abs' parameter of {_OWNER} must be a 1-d float array with "
                                        f"no nan or +inf. Got {log_abs!r} instead.")
        if sign.shape != log_abs.shape or not np.isin(sign, (-1.0, 0.0, 1.0)).all():
            raise InvalidParameterError(f"The 'sign' parameter of {_OWNER} must be an array of -1, 0, 1 of shape "
                                        f"{log_abs.shape}. Got {sign!r} instead.")
        zero = np.isneginf(log_abs) | (sign == 0)
        self.log_abs = np.where(zero, -np.inf, log_abs)
        self.sign = np.where(zero, 0.0, sign)
        self.log_abs.setflags(write=False)
        self.sign.setflags(write=False)
        self.family = None      # (name, c) for the infinite series of Example 4.1

    # ---------- constructors ----------
    @classmethod
    def from_coeffs(cls, c):
        """Finite series from plain coefficients ``c_0..c_q``."""
        c = check(_OWNER, "c", c, FiniteArray(1))
        with np.errstate(divide="ignore"):
            return cls(np.log(np.abs(c)), np.sign(c))

    @classmethod
    def _family(cls, name, c, n):
        c = check(_OWNER, "c", c, Interval(-np.inf, np.inf, "neither"))
        if n is not None:
            n = as_int(_OWNER, "n", n, 1)
            return cls(*_family_terms(name, c, 0, n))
        if c == 0.0:        # e^0 - 1 = sin 0 = 0, cos 0 = 1
            return cls([0.0], [1.0]) if name == "cos" else cls([-np.inf], [0.0])
        out = cls(np.empty(0), np.empty(0))
        out.family = (name, c)
        return out

    @classmethod
    def exp_minus_one(cls, c, n=None):
        r""":math:`e^{cz}-1 = \sum_{i\ge1} c^i z^i/i!`; ``n`` terms (degrees ``0..n-1``) or, ``n=None``, all."""
        return cls._family("exp-1", c, n)

    @classmethod
    def sin(cls, c, n=None):
        r""":math:`\sin(cz) = \sum_{i\ \mathrm{odd}} (-1)^{(i-1)/2} c^i z^i/i!`; ``n`` terms or, ``n=None``, all."""
        return cls._family("sin", c, n)

    @classmethod
    def cos(cls, c, n=None):
        r""":math:`\cos(cz) = \sum_{i\ \mathrm{even}} (-1)^{i/2} c^i z^i/i!`; ``n`` terms or, ``n=None``, all."""
        return cls._family("cos", c, n)

    # ---------- views ----------
    @property
    def degree(self):
        """Highest stored degree (``None`` for an infinite series)."""
        return None if self.family is not None else len(self.log_abs) - 1

    def terms(self, start, stop):
        """``(log|c_i|, sign c_i)`` for ``start <= i < stop`` (zeros past the degree of a finite series)."""
        if self.family is not None:
            return _family_terms(*self.family, start, stop)
        la = np.full(stop - start, -np.inf)
        sg = np.zeros(stop - start)
        hi = min(stop, len(self.log_abs))
        if hi > start:
            la[:hi - start] = self.log_abs[start:hi]
            sg[:hi - start] = self.sign[start:hi]
        return la, sg

    def coeffs(self):
        """Plain coefficients of a finite series (entries below the float64 range underflow to 0)."""
        self._need_finite("coeffs")
        return self.sign * np.exp(self.log_abs)

    def __call__(self, z):
        r"""Evaluate :math:`\phi(z)` (closed form for the infinite families, Horner otherwise)."""
        z = np.asarray(z, dtype=np.float64)
        if self.family is not None:
            name, c = self.family
            return {"exp-1": np.expm1, "sin": np.sin, "cos": np.cos}[name](c * z)
        return np.polynomial.polynomial.polyval(z, self.coeffs())

    # ---------- transformations ----------
    def truncate(self, n):
        """The finite series of the first ``n`` terms (degrees ``0..n-1``)."""
        n = as_int(_OWNER, "n", n, 1)
        return TaylorSeries(*self.terms(0, n))

    def rescale(self, R):
        r""":math:`\phi(R\,\cdot)`: :math:`c_i \to R^i c_i` (footnote 8's norm absorption), ``R > 0``."""
        R = check(_OWNER, "R", R, Interval(0.0, np.inf, "neither"))
        if self.family is not None:
            out = TaylorSeries(np.empty(0), np.empty(0))
            out.family = (self.family[0], self.family[1] * R)
            return out
        return TaylorSeries(self.log_abs + np.arange(len(self.log_abs)) * math.log(R), self.sign)

    def split_even_odd(self):
        r"""Lemma B.2's split :math:`\phi(z) = F^+(z) + zF^-(z)`: :math:`F^+` the degree-0 and odd terms,
        :math:`F^-(z) = \sum_{i\ \mathrm{even}\ge2} c_i z^{i-1}`."""
        self._need_finite("split_even_odd")
        i = np.arange(len(self.log_abs))
        keep = (i == 0) | (i % 2 == 1)
        plus = TaylorSeries(np.where(keep, self.log_abs, -np.inf), np.where(keep, self.sign, 0.0))
        minus = TaylorSeries(np.where(~keep, self.log_abs, -np.inf)[1:], np.where(~keep, self.sign, 0.0)[1:]) \
            if len(i) > 1 else TaylorSeries([-np.inf], [0.0])
        return plus, minus

    def _need_finite(self, what):
        if self.family is not None:
            raise InvalidParameterError(f"The 'series' parameter of {_OWNER}.{what} must be a finite series "
                                        f"(call .truncate(n) first). Got the infinite {self.family[0]}"
                                        f"({self.family[1]}·z) instead.")

    def __repr__(self):
        if self.family is not None:
            name = {"exp-1": "exp_minus_one"}.get(self.family[0], self.family[0])
            return f"TaylorSeries.{name}({self.family[1]!r})"
        return f"TaylorSeries(degree={self.degree}, nonzero={int(np.isfinite(self.log_abs).sum())})"


def _family_terms(name, c, start, stop):
    """log|c_i| and signs of the Example 4.1 families for start <= i < stop."""
    i = np.arange(start, stop)
    with np.errstate(divide="ignore"):
        la = i * math.log(abs(c)) - gammaln(i + 1) if c != 0 else np.where(i == 0, 0.0, -np.inf)
    s = np.sign(c) ** i
    if name == "exp-1":
        keep, sg = i >= 1, s
    elif name == "sin":
        keep, sg = i % 2 == 1, s * (-1.0) ** ((i - 1) // 2)
    else:
        keep, sg = i % 2 == 0, (-1.0) ** (i // 2)
    return np.where(keep, la, -np.inf), np.where(keep, sg, 0.0)


def _log_sum(series, log_weight):
    """log sum_i exp(log_weight(i) + log|c_i|), summed chunkwise until the tail is < e^-40 of the total."""
    if series.family is None:
        la, _ = series.terms(0, len(series.log_abs))
        t = log_weight(np.arange(len(la))) + la
        return float(logsumexp(t)) if np.isfinite(t).any() else -np.inf
    total, start, size = -np.inf, 0, _CHUNK
    while start < _MAX_TERMS:
        la, _ = series.terms(start, start + size)
        t = log_weight(np.arange(start, start + size)) + la
        t = t[np.isfinite(t)]
        total = np.logaddexp(total, logsumexp(t)) if t.size else total
        if t.size > 1 and t[-1] < t[-2] and t.max() < total - _TAIL:
            return float(total)
        start, size = start + size, 2 * size
    raise InvalidParameterError(f"The 'series' parameter of resnet.log_C_eps must converge within {_MAX_TERMS} "
                                f"terms. Got {series!r} instead.")


def _closed_eps_free(name, a):
    """log sum_i a^i |c_i| at |c| = 1: log(e^a - 1), log sinh a, log cosh a (stable for a -> 0 and a -> inf)."""
    if name == "exp-1":
        return a + math.log(-math.expm1(-a))
    if name == "sin":
        return a - math.log(2.0) + math.log(-math.expm1(-2 * a))
    return a - math.log(2.0) + math.log1p(math.exp(-2 * a))


def _closed_log_cs(name, a):
    """log sum_i (i+1) a^i |c_i| at |c| = a: (1+a)e^a - 1, a cosh a + sinh a, a sinh a + cosh a."""
    e, one_minus_e = math.exp(-2 * a), -math.expm1(-2 * a)
    if name == "exp-1":
        return a + math.log(a - math.expm1(-a))
    if name == "sin":
        return a - math.log(2.0) + math.log(a * (1 + e) + one_minus_e)
    return a - math.log(2.0) + math.log(a * one_minus_e + 1 + e)


def _check_common(owner, series, C_star, R):
    if not isinstance(series, TaylorSeries):
        raise InvalidParameterError(f"The 'series' parameter of {owner} must be a TaylorSeries. "
                                    f"Got {series!r} instead.")
    C_star = check(owner, "C_star", C_star, Interval(0.0, np.inf, "neither"))
    R = check(owner, "R", R, Interval(0.0, np.inf, "neither"))
    return series.rescale(R) if R != 1.0 else series, C_star


def log_C_eps_parts(series, eps=None, log_inv_eps=None, C_star=1e4, R=1.0):
    r"""The two parts of :math:`\log\mathfrak C_\varepsilon(\phi,R)`: the eps-free part and the eps part.

    .. math:: P_0 = \sum_{i\ge0}(C^*R)^i|c_i|,\qquad
              P_\varepsilon = |c_0| + \sum_{i\ge1}\Big(C^*R\sqrt{\log(1/\varepsilon)/i}\Big)^i|c_i|,\qquad
              \mathfrak C_\varepsilon = P_0 + P_\varepsilon

    Parameters
    ----------
    series : TaylorSeries
        :math:`\phi`, finite or one of the infinite families.
    eps : float or None
        :math:`\varepsilon \in (0, 1]`; give exactly one of ``eps`` and ``log_inv_eps``.
    log_inv_eps : float or None
        :math:`L = \log(1/\varepsilon) \ge 0` (use it where :math:`\varepsilon` underflows).
    C_star : float
        :math:`C^* > 0` (paper: "e.g. 10^4").
    R : float
        Input radius :math:`R > 0` (:math:`c_i \to R^i c_i`).

    Returns
    -------
    (float, float)
        :math:`(\log P_0, \log P_\varepsilon)`, ``-inf`` for an empty part.

    Notes
    -----
    Regime: the i = 0 term counts in both parts (:math:`2|c_0|` in total, the limit of :math:`(a/\sqrt i)^i`
    as i -> 0). Closed form :math:`P_0 = e^{a}-1,\ \sinh a,\ \cosh a` (a = C*R|c|) for the infinite families;
    :math:`P_\varepsilon` summed in log space past its peak :math:`i^*\approx e^{-1/3}(a\sqrt L)^{2/3}` until the
    tail is below :math:`e^{-40}` of the sum.
    Accuracy: absolute error of each log <= 1e-12 (1 + |log|) (C* to 3e4, R in [0.1, 10], log(1/eps) to 100, c from
    1e-3 to 1e3 and coefficients over 10 decades). Measured: 0.00072 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Section 4]; the R-version and closed forms derived in docs/resnet.md.

    Examples
    --------
    >>> round(log_C_eps_parts(TaylorSeries.sin(1.0), log_inv_eps=0.0)[0], 8)   # log sinh(1e4)
    9999.30685282
    """
    owner = "resnet.log_C_eps"
    series, C_star = _check_common(owner, series, C_star, R)
    if (eps is None) == (log_inv_eps is None):
        raise InvalidParameterError(f"The 'eps' parameter of {owner} must be given exactly when 'log_inv_eps' "
                                    f"is not. Got eps={eps!r}, log_inv_eps={log_inv_eps!r} instead.")
    if eps is not None:
        L = -math.log(check(owner, "eps", eps, Interval(0.0, 1.0, "right")))
    else:
        L = check(owner, "log_inv_eps", log_inv_eps, Interval(0.0, np.inf, "left"))
    lc = math.log(C_star)
    if series.family is not None:
        name, c = series.family
        log_free = _closed_eps_free(name, C_star * abs(c))
    else:
        log_free = _log_sum(series, lambda i: i * lc)
    c0 = series.terms(0, 1)[0][0]
    if L == 0.0:
        return log_free, float(c0)
    half = 0.5 * math.log(L)
    log_eps = _log_sum(series, lambda i: np.where(i > 0, i * (lc + half - 0.5 * np.log(np.maximum(i, 1))), 0.0))
    return log_free, log_eps


def log_C_eps(series, eps=None, log_inv_eps=None, C_star=1e4, R=1.0):
    r"""Logarithm of the complexity :math:`\mathfrak C_\varepsilon(\phi,R)`.

    .. math:: \mathfrak C_\varepsilon(\phi,R) = \sum_{i\ge0}\Big((C^*R)^i
              + \Big(\frac{\sqrt{\log(1/\varepsilon)}}{\sqrt i}C^*R\Big)^i\Big)|c_i|

    Parameters
    ----------
    series : TaylorSeries
        :math:`\phi`.
    eps : float or None
        :math:`\varepsilon \in (0, 1]`; exactly one of ``eps``, ``log_inv_eps``.
    log_inv_eps : float or None
        :math:`\log(1/\varepsilon) \ge 0`.
    C_star : float
        :math:`C^* > 0`.
    R : float
        Input radius :math:`R > 0`.

    Returns
    -------
    float
        :math:`\log\mathfrak C_\varepsilon` (finite even where :math:`\mathfrak C_\varepsilon` overflows float64).

    Notes
    -----
    Regime: any series whose weighted sums converge; i = 0 term :math:`2|c_0|`. R enters as
    :math:`\mathfrak C(\phi,R) := \mathfrak C(\phi(R\,\cdot),1)` (not in the paper as a formula; footnote 8).
    See :func:`log_C_eps_parts`.
    Accuracy: as :func:`log_C_eps_parts` (one logaddexp more).

    References
    ----------
    .. [src] [AllenZhu19, Section 4, Example 4.1, footnote 7]; closed forms derived in docs/resnet.md.

    Examples
    --------
    >>> round(log_C_eps(TaylorSeries.from_coeffs([0.0, 1.0]), eps=math.exp(-4.0), C_star=10.0) - math.log(30.0), 12)
    0.0
    """
    return float(np.logaddexp(*log_C_eps_parts(series, eps, log_inv_eps, C_star, R)))


def log_C_s(series, C_star=1e4, R=1.0):
    r"""Logarithm of the complexity :math:`\mathfrak C_s(\phi,R)`.

    .. math:: \mathfrak C_s(\phi,R) = C^*\sum_{i\ge0}(i+1)R^i|c_i|

    Parameters
    ----------
    series : TaylorSeries
        :math:`\phi`.
    C_star : float
        :math:`C^* > 0`.
    R : float
        Input radius :math:`R > 0`.

    Returns
    -------
    float
        :math:`\log\mathfrak C_s`.

    Notes
    -----
    Regime: any series with :math:`\sum(i+1)R^i|c_i| < \infty`. Closed forms for the infinite families
    (a = R|c|): :math:`(1+a)e^a-1`, :math:`a\cosh a+\sinh a`, :math:`a\sinh a+\cosh a`.
    Accuracy: absolute error <= 1e-12 (1 + |log C_s|). Measured: 0.00041 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Section 4, footnote 7]; closed forms derived in docs/resnet.md.

    Examples
    --------
    >>> round(math.exp(log_C_s(TaylorSeries.exp_minus_one(1.0), C_star=1.0)) - (2 * math.e - 1), 12)
    0.0
    """
    series, C_star = _check_common("resnet.log_C_s", series, C_star, R)
    if series.family is not None:
        name, c = series.family
        return math.log(C_star) + _closed_log_cs(name, abs(c))
    return math.log(C_star) + _log_sum(series, lambda i: np.log(i + 1.0))


def C_s(series, C_star=1e4, R=1.0):
    r"""The complexity :math:`\mathfrak C_s(\phi,R)`.

    .. math:: \mathfrak C_s(\phi,R) = C^*\sum_{i\ge0}(i+1)R^i|c_i|

    Parameters
    ----------
    series : TaylorSeries
        :math:`\phi`.
    C_star : float
        :math:`C^* > 0`.
    R : float
        Input radius :math:`R > 0`.

    Returns
    -------
    float
        :math:`\mathfrak C_s`; ``OverflowError`` past the float64 range (use :func:`log_C_s`).

    Notes
    -----
    Regime: as :func:`log_C_s`; the paper's example 4.1 values are O(1) times C*.
    Accuracy: relative error <= 1e-12 (1 + |log C_s|) + eps (:func:`log_C_s` exponentiated).

    References
    ----------
    .. [src] [AllenZhu19, Section 4]; closed forms derived in docs/resnet.md.

    Examples
    --------
    >>> round(C_s(TaylorSeries.sin(1.0)) / 1e4 - (math.cosh(1.0) + math.sinh(1.0)), 12)
    0.0
    """
    return math.exp(log_C_s(series, C_star, R))
