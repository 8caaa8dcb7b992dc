r"""Activations sigma with their Hermite coefficients and dual kernels K, K'.

:func:`get` turns a name into an :class:`Activation`; closed forms are used wherever they exist
(ReLU family, sign, erf, exp, polynomials), numerical quadrature with certified Parseval tail
bounds otherwise (tanh, sigmoid, gelu, softplus, user callables).

.. math:: K(\rho) = \mathbb E[\sigma(g_1)\sigma(g_2)] = \sum_{p\ge0}\mu_p^2\rho^p,\qquad
          K'(\rho) = \frac{dK}{d\rho} = \sum_{p\ge1} p\,\mu_p^2\rho^{p-1}

with :math:`(g_1, g_2)` standard normals of correlation :math:`\rho` and
:math:`\mu_p = \mathbb E[\sigma(g)h_p(g)]`, :math:`h_p = \mathrm{He}_p/\sqrt{p!}`.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.special import erf, expit, gammaln, ndtr

from . import gaussian, hermite
from ._validate import Interval, InvalidParameterError, as_int, check

__all__ = ["Activation", "get", "leaky_relu", "names"]

_EPS = np.finfo(np.float64).eps
_SERIES_TOL = 1e-13                                   # target tail of the numerical K' series
_SERIES_DEGREES = (64, 128, 256, 512, 1024, 2048)


@dataclass(frozen=True, eq=False)
class _Family:
    """The base function sigma and whatever closed forms it has, as functions of the scale r."""
    name: str
    fn: Callable
    deriv: Callable
    kinks: tuple = ()
    coeffs: Callable | None = None        # (P, r) -> mu_0..mu_P of sigma(r z)
    K: Callable | None = None             # (rho, r) -> K of sigma(r z)
    Kp: Callable | None = None            # (rho, r) -> K'
    tail: Callable | None = None          # (P, |rho|, r) -> extra bound on the K' tail
    moments: Callable | None = None       # r -> (E s^2, E s'^2) when K is not closed


@dataclass(frozen=True)
class Activation:
    r"""An activation :math:`z \mapsto \sigma(r z)` with its Hermite data and dual kernels.

    Obtain one with :func:`get`, :func:`leaky_relu`, :meth:`rescaled` or :meth:`from_callable`.

    Attributes
    ----------
    name : str
        ``"relu"``, ``"tanh"``, ..., or ``"tanh(r=1.5)"`` for a rescaled one.
    r : float
        Input scale (1 unless built by :meth:`rescaled`).

    Notes
    -----
    Regime: :math:`\mathbb E\sigma(g)^2 < \infty`. ``Kprime`` is :math:`dK/d\rho`, which equals
    :math:`\mathbb E[\sigma'(g_1)\sigma'(g_2)]` for absolutely continuous sigma (for ``sign`` it is
    the derivative of :math:`(2/\pi)\arcsin\rho`, while ``deriv`` is 0 a.e.).

    References
    ----------
    .. [src] [Dayi25, Section 1.4 (Hermite conventions), App. D.1]; the dual kernel and its tail in docs/lora.md.
    """
    name: str
    _family: _Family = field(repr=False)
    r: float = 1.0

    def __call__(self, z):
        """sigma(r z), vectorised."""
        return self._family.fn(self.r * np.asarray(z, dtype=np.float64))

    def deriv(self, z):
        """sigma'(z) = r sigma_0'(r z) (a.e.)."""
        return self.r * self._family.deriv(self.r * np.asarray(z, dtype=np.float64))

    def hermite_coeffs(self, P):
        r"""Hermite coefficients :math:`\mu_0, \dots, \mu_P` in the normalized basis.

        .. math:: \mu_p = \mathbb E_{g\sim N(0,1)}[\sigma(g)\,h_p(g)]

        Parameters
        ----------
        P : int
            Highest degree, ``P >= 0``.

        Returns
        -------
        ndarray of shape (P + 1,)

        Notes
        -----
        Regime: closed forms for the ReLU family, sign, erf, exp and polynomials; otherwise
        kink-split Gauss-Legendre quadrature (:func:`popdyn.hermite.hermite_coeffs_quad`, absolute
        error ~1e-15 for smooth sigma). Cached per ``P``.

        Accuracy: closed forms (ReLU family, sign, erf, exp; any r) relative error
        ``<= 2 eps (10 + p ln(p + 1) + |ln|mu_p||)`` (the log-gamma differences cancel to p ln p: 1.7e-11 at
        p = 9000), for P up to 10^4, formed as ``exp(log mu_p^2 / 2)``; ``mu_p`` that underflow (below 1e-308) are
        0. Polynomials of degree n rescaled by r:
        ``<= 2 eps (n^1.5 + 10) (K(1) + ||c||^2)^(1/2)``, ``||c||^2`` the squared h-coefficients before rescaling.
        Quadrature (tanh, sigmoid, gelu, softplus, callables; r in [0.2, 2], p <= 60):
        ``<= 4e-15 (E sigma^2)^(1/2)``. Measured worst cases 0.76, 0.5 and 0.16 of these
        (tests/test_accuracy_activations.py, the closed forms and 16-point Gauss-Legendre panels in mpmath at
        30-50 digits).

        References
        ----------
        .. [src] [Dayi25, Section 1.4] (normalised Hermite coefficients).

        Examples
        --------
        >>> get("relu").hermite_coeffs(2).round(12).tolist()   # 1/sqrt(2 pi), 1/2, 1/sqrt(4 pi)
        [0.398942280401, 0.5, 0.282094791774]
        """
        return _coeffs(self, as_int(f"activations.{self.name}", "P", P, 0))[0].copy()

    def K(self, rho):
        r"""Dual kernel :math:`K(\rho) = \mathbb E[\sigma(g_1)\sigma(g_2)]`, vectorised over rho.

        .. math:: K(\rho) = \sum_{p\ge 0}\mu_p^2\rho^p

        Parameters
        ----------
        rho : array_like
            Correlations, any shape; clipped to [-1, 1]; NaN propagates.

        Returns
        -------
        ndarray of rho's shape

        Notes
        -----
        Regime: rho in [-1, 1]. Closed form where one exists, else the Hermite series truncated
        where the certified tail (Parseval) is below 1e-13.

        Accuracy: ReLU family (any r; from :func:`popdyn.gaussian.arccos_kernel`, relative 16 eps): relu relative
        16 eps, also where K vanishes like (1 + rho)^(3/2) at rho = -1; abs, leaky_relu ``|dK| <= 16 eps K(1)``
        (leaky_relu's K crosses 0). sign: relative 4 eps. erf(r z): relative 4 eps (r in [1e-150, 1e150]).
        exp(r z): relative ``2 eps (2 + r^2 (1 + |rho|))`` (overflow past r^2 (1 + rho) = 709). Polynomials of
        degree n rescaled by r: ``|dK| <= 6 eps (n^1.5 + 10)(K(1) + ||c||^2)``. Series (tanh, sigmoid, gelu,
        softplus, callables): ``|dK| <= 1e-14 K(1)``. Measured worst cases 0.19, 0.16, 0.23, 0.1, 0.67 and 0.23
        of these over rho within 3e-17 of +-1 and r in [1e-3, 1e3] (tests/test_accuracy_activations.py: the
        closed forms in mpmath at 50 digits; 2-D Gauss-Legendre values at 25 digits for the series).
        ``second_moment = K(1)`` has the same accuracy (1e-14 relative for the quadrature families).

        References
        ----------
        .. [src] [Dayi25, App. D.1] (the dual kernel K).

        Examples
        --------
        >>> round(float(get("erf").K(1.0)), 12)     # (2/pi) arcsin(2/3)
        0.464559054398
        """
        rho = np.clip(np.asarray(rho, dtype=np.float64), -1.0, 1.0)
        if self._family.K is not None:
            return self._family.K(rho, self.r)
        return hermite.power_series(_series(self) ** 2, rho)

    def Kprime(self, rho):
        r"""Derivative :math:`K'(\rho) = dK/d\rho` of the dual kernel, vectorised over rho.

        .. math:: K'(\rho) = \sum_{p\ge1} p\,\mu_p^2\rho^{p-1} = \mathbb E[\sigma'(g_1)\sigma'(g_2)]

        Parameters
        ----------
        rho : array_like
            Correlations, any shape; clipped to [-1, 1]; NaN propagates.

        Returns
        -------
        ndarray of rho's shape

        Notes
        -----
        Regime: rho in [-1, 1]; may be ``inf`` at ``|rho| = 1`` (sign). ReLU uses
        :math:`(\pi - \arccos\rho)/(2\pi)` with a cancellation-free arccos and its complement.

        Accuracy: as :meth:`K` with K'(1) for K(1): relu relative 16 eps, abs and leaky_relu ``16 eps K'(1)`` (abs's
        K' crosses 0); sign relative 4 eps (``inf`` at +-1, as the true value); erf(r z) relative 4 eps for r in
        [1e-150, 1e150] (``(2/pi)/sqrt((w + 1 - rho)(w + 1 + rho))``, w = 1/(2r^2): 1 -+ a rho, a = 2r^2/(1 + 2r^2),
        without cancellation); exp relative ``2 eps (3 + r^2 (1 + |rho|))``; polynomials
        ``6 eps (n^1.5 + 10)(K'(1) + n ||c||^2)``; series ``1e-14 K'(1)``. Measured worst cases 0.09, 0.33, 0.24,
        0.14, 0.67 and 0.2 of these (tests/test_accuracy_activations.py). ``Kprime1 = K'(1)`` likewise.

        References
        ----------
        .. [src] [Dayi25, App. D.1] (the kernel form of h uses K').

        Examples
        --------
        >>> get("relu").Kprime([-1.0, 0.0, 1.0]).round(15).tolist()
        [0.0, 0.25, 0.5]
        """
        rho = np.clip(np.asarray(rho, dtype=np.float64), -1.0, 1.0)
        if self._family.Kp is not None:
            return self._family.Kp(rho, self.r)
        return hermite.power_series(_series(self) ** 2, rho, deriv=True)

    @property
    def second_moment(self):
        r""":math:`\mathbb E\sigma(g)^2 = K(1) = \sum_p\mu_p^2`."""
        return _moments(self)[0]

    @property
    def Kprime1(self):
        r""":math:`K'(1) = \sum_p p\mu_p^2` (:math:`= \mathbb E\sigma'(g)^2` when sigma is absolutely continuous)."""
        return _moments(self)[1]

    @property
    def information_exponent(self):
        r"""Smallest :math:`p \ge 1` with :math:`\mu_p \ne 0` (None if there is none up to degree 256)."""
        return _information_exponent(self)

    def Kprime_tail_bound(self, P, rho):
        r"""Bound on :math:`|K'(\rho) - K'_P(\rho)|`, the error of the degree-P truncation of K'.

        .. math:: \Big|\sum_{p>P} p\mu_p^2\rho^{p-1}\Big| \le |\rho|^P\Big(K'(1) - \sum_{p\le P}p\mu_p^2\Big)

        (plus rounding), tightened for the ReLU family to
        :math:`p_0\mu_{p_0}^2|\rho|^{p_0-1}/(1-\rho^2)` with :math:`p_0` the first even degree
        above P (:math:`p\mu_p^2` decreases over even p), which is asymptotically docs/lora.md's
        :math:`0.127\,P^{-3/2}|\rho|^{P+1}/(1-\rho^2)`, and for sign to
        :math:`\frac{2}{\pi}(\pi P/2)^{-1/2}|\rho|^P/(1-\rho^2)`.

        Parameters
        ----------
        P : int
            Truncation degree.
        rho : array_like
            Correlations, any shape.

        Returns
        -------
        ndarray of rho's shape

        Notes
        -----
        Regime: any rho in [-1, 1]. For ReLU at ``|rho| = 1`` the bound is the exact deficit,
        which behaves as :math:`1/(\pi\sqrt{2\pi P})`.

        Accuracy: certified: never below the true tail, which the tests evaluate in mpmath (exact K' minus the
        exact partial sum, with ``30 + P |log10 rho|`` digits) for every closed-form activation, P up to 2048 and
        rho within 3e-17 of +-1; the worst tail / bound is 1.0 (polynomials at ``|rho| = 1``, where the bound is
        the exact deficit plus its rounding slack).

        References
        ----------
        .. [src] derived in docs/lora.md (Parseval, nonnegative terms).

        Examples
        --------
        >>> b = float(get("relu").Kprime_tail_bound(10_000, 1.0))
        >>> bool(abs(b * np.pi * np.sqrt(2 * np.pi * 10_000) - 1) < 1e-4)   # the tail law of docs/lora.md
        True
        """
        P = as_int(f"activations.{self.name}", "P", P, 0)
        a = np.abs(np.clip(np.asarray(rho, dtype=np.float64), -1.0, 1.0))
        bound = hermite.series_tail_bound(_deficit(self, P), P, a, deriv=True)
        if self._family.tail is not None:
            bound = np.minimum(bound, self._family.tail(P, a, self.r))
        return bound

    def rescaled(self, r):
        r"""The activation :math:`z \mapsto \sigma(r z)`, with its own closed forms where they exist.

        .. math:: \sigma_r(z) = \sigma(r z)

        Parameters
        ----------
        r : float
            Scale, ``r > 0``.

        Returns
        -------
        Activation

        Notes
        -----
        Regime: r in (0, inf). The ReLU family is homogeneous (:math:`K_r = r^2K`), sign is scale
        free, erf has :math:`K_r = (2/\pi)\arcsin(2r^2\rho/(1+2r^2))`, exp has
        :math:`K_r = e^{r^2(1+\rho)}`, polynomials rescale exactly; others use quadrature.

        References
        ----------
        .. [src] derived in docs/lora.md (normalisation N0: use sigma(r z)).

        Examples
        --------
        >>> bool(np.isclose(get("relu").rescaled(2.0).K(0.3), 4 * get("relu").K(0.3), rtol=1e-15))
        True
        """
        r = check(f"activations.{self.name}", "r", r, Interval(0, np.inf, "neither"))
        return _make(self._family, self.r * r)

    @staticmethod
    def from_callable(f, deriv=None, kinks=(), name=None):
        r"""An :class:`Activation` from any vectorised function (everything numerical).

        .. math:: \mu_p = \int f(x)h_p(x)\varphi(x)\,dx \text{ (split at the kinks)}

        Parameters
        ----------
        f : callable
            Vectorised on float64 arrays.
        deriv : callable, optional
            f'; default central differences with step ``1e-6 * max(1, |z|)`` (error ~1e-10).
        kinks : sequence of float
            Points where f or f' is not smooth (quadrature splits there).
        name : str, optional
            Default ``f.__name__``.

        Returns
        -------
        Activation

        Notes
        -----
        Regime: f piecewise analytic between the kinks, :math:`\mathbb E f(g)^2 < \infty`.
        Without ``deriv`` the K' tail bounds are only good to ~1e-9.

        Accuracy: that of the quadrature families (:meth:`hermite_coeffs`, :meth:`K`): ``|dK| <= 1e-14 K(1)``,
        ``|dK'| <= 1e-14 K'(1)`` (tested with ``from_callable(tanh)`` against 2-D Gauss-Legendre values at 25
        digits).

        References
        ----------
        .. [src] derived (popdyn's own).

        Examples
        --------
        >>> a = Activation.from_callable(np.abs, kinks=(0.0,), name="myabs")
        >>> bool(np.isclose(a.K(0.4), get("abs").K(0.4), rtol=1e-12))
        True
        """
        if not callable(f) or (deriv is not None and not callable(deriv)):
            raise InvalidParameterError(
                f"The 'f' parameter of activations.from_callable must be callable. Got {f!r} instead.")
        kinks = tuple(float(k) for k in kinks)
        name = getattr(f, "__name__", "callable") if name is None else str(name)
        fam = _Family(name, f, deriv if deriv is not None else _central_difference(f), kinks)
        return Activation(name, fam, 1.0)


def _central_difference(f):
    def d(z):
        step = 1e-6 * np.maximum(1.0, np.abs(z))
        return (np.asarray(f(z + step), dtype=np.float64) - f(z - step)) / (2 * step)
    return d


def _make(family, r):
    name = family.name if r == 1.0 else f"{family.name}(r={r!r})"
    return Activation(name, family, float(r))


# --------------------------------------------------------------------------- cached numerics

@functools.lru_cache(maxsize=512)
def _coeffs(act, P):
    fam = act._family
    if fam.coeffs is not None:
        mu, err = fam.coeffs(P, act.r), 8 * _EPS * math.sqrt(_moments(act)[0])
    else:
        mu, err = hermite.hermite_coeffs_quad(act, P, tuple(k / act.r for k in fam.kinks))
    mu.setflags(write=False)
    return mu, err


@functools.lru_cache(maxsize=128)
def _moments(act):
    fam = act._family
    if fam.K is not None:
        return float(fam.K(np.float64(1.0), act.r)), float(fam.Kp(np.float64(1.0), act.r))
    kinks = tuple(k / act.r for k in fam.kinks)
    s2 = hermite.hermite_coeffs_quad(lambda z: act(z) ** 2, 0, kinks)[0][0]
    d2 = hermite.hermite_coeffs_quad(lambda z: act.deriv(z) ** 2, 0, kinks)[0][0]
    return float(s2), float(d2)


def _deficit(act, P):
    """K'(1) - sum_{p<=P} p mu_p^2, plus rounding and quadrature slack (an upper bound)."""
    k1 = _moments(act)[1]
    if not math.isfinite(k1):
        return math.inf
    mu, err = _coeffs(act, P)
    p = np.arange(P + 1)
    partial = float(np.sum(p * mu**2))
    slack = (P + 2) * _EPS * k1 + 2 * err * float(np.sum(p * np.abs(mu))) + (0 if act._family.K else 1e-15)
    return max(k1 - partial, 0.0) + slack


@functools.lru_cache(maxsize=128)
def _series(act):
    """Coefficients mu_0..mu_P with P the first of _SERIES_DEGREES whose K' tail is below 1e-13."""
    for P in _SERIES_DEGREES:
        if _deficit(act, P) <= _SERIES_TOL * max(1.0, _moments(act)[1]):
            break
    return _coeffs(act, P)[0]


@functools.lru_cache(maxsize=128)
def _information_exponent(act):
    mu, err = _coeffs(act, 256)
    tol = max(1e3 * err, 1e-12 * math.sqrt(_moments(act)[0]))
    nz = np.flatnonzero(np.abs(mu[1:]) > tol)
    return int(nz[0]) + 1 if nz.size else None


# --------------------------------------------------------------------------- closed forms

def _relu_log_mu2(p):
    """log mu_p(relu)^2 = log((p-3)!!^2 / (2 pi p!)) for even p >= 2."""
    n = (p - 2) // 2
    log_df = gammaln(2 * n + 1) - n * math.log(2) - gammaln(n + 1)     # log (p-3)!!
    return 2 * log_df - math.log(2 * math.pi) - gammaln(p + 1)


def _relu_coeffs(P):
    p = np.arange(P + 1)
    mu = np.zeros(P + 1)
    mu[2::2] = np.where(p[2::2] % 4 == 2, 1.0, -1.0) * np.exp(0.5 * _relu_log_mu2(p[2::2]))
    mu[0] = 1 / math.sqrt(2 * math.pi)
    if P >= 1:
        mu[1] = 0.5
    return mu


def _relu_family(name, a, b, fn, deriv):
    """sigma = a relu(z) + b relu(-z): mu_p = (a + (-1)^p b) mu_p(relu)."""
    def coeffs(P, r):
        sign = np.where(np.arange(P + 1) % 2 == 0, 1.0, -1.0)
        return r * (a + sign * b) * _relu_coeffs(P)

    def K(rho, r):  # the antipodal term only where its weight 2ab is nonzero (not relu)
        out = (a * a + b * b) * gaussian.arccos_kernel(rho, 1)
        return r * r * (out + 2 * a * b * gaussian.arccos_kernel(-rho, 1) if a * b else out)

    def Kp(rho, r):
        out = (a * a + b * b) * gaussian.arccos_kernel(rho, 0)
        return r * r * (out - 2 * a * b * gaussian.arccos_kernel(-rho, 0) if a * b else out)

    def tail(P, a_rho, r):      # p mu_p^2 decreases over even p; odd p >= 3 vanish
        if P < 1:
            return np.full_like(a_rho, np.inf)
        p0 = P + 2 - P % 2                                   # first even degree above P
        with np.errstate(divide="ignore"):
            return (r * r * (a + b) ** 2 * p0 * math.exp(_relu_log_mu2(p0))
                    * a_rho ** (p0 - 1) / (1 - a_rho**2))
    return _Family(name, fn, deriv, (0.0,), coeffs, K, Kp, tail)


def _arcsin_coeffs(P, log_scale):
    """mu_{2n+1} = (-1)^n exp(log mu^2 / 2), mu^2 = (2/pi) C(2n,n) 4^-n / (2n+1) * scale^(2n+1): K = (2/pi)
    arcsin(scale rho); mu_p is a normal float down to 1e-308, not only where mu_p^2 is."""
    mu = np.zeros(P + 1)
    n = np.arange((P + 1) // 2)
    log_mu2 = (gammaln(2 * n + 1) - 2 * gammaln(n + 1) - n * math.log(4) + (2 * n + 1) * log_scale
               + math.log(2 / math.pi) - np.log(2 * n + 1))
    mu[1::2] = np.where(n % 2 == 0, 1.0, -1.0) * np.exp(0.5 * log_mu2)
    return mu


def _erf_family():
    """erf(r z): K = (2/pi) arcsin(a rho), a = 2r^2/(1 + 2r^2) = 1/(1 + w), w = 1/(2r^2); 1 -+ a rho =
    (w + 1 -+ rho)/(1 + w) without cancellation."""
    def K(rho, r):
        w = 0.5 / (r * r)
        x = np.abs(rho) / (1 + w)
        far = 2 * np.arcsin(np.sqrt(0.5 * (w + (1 - np.abs(rho))) / (1 + w)))   # pi/2 - arcsin(x)
        return np.sign(rho) * np.where(x < 0.5, 2 / np.pi * np.arcsin(x), 1 - 2 / np.pi * far)

    def Kp(rho, r):
        w = 0.5 / (r * r)
        return 2 / np.pi / (np.sqrt(w + (1 - rho)) * np.sqrt(w + (1 + rho)))
    return _Family("erf", erf, lambda z: 2 / math.sqrt(math.pi) * np.exp(-z * z), (),
                   lambda P, r: _arcsin_coeffs(P, -math.log1p(0.5 / (r * r))), K, Kp)


def _sign_family():
    def Kp(rho, r):
        with np.errstate(divide="ignore"):
            return 2 / np.pi / np.sqrt((1 - rho) * (1 + rho))

    def tail(P, a_rho, r):      # p mu_p^2 <= (2/pi)/sqrt(pi n), n = (p-1)/2 >= P/2
        if P < 1:
            return np.full_like(a_rho, np.inf)
        with np.errstate(divide="ignore"):
            return 2 / np.pi / np.sqrt(np.pi * P / 2) * a_rho**P / (1 - a_rho**2)
    return _Family("sign", np.sign, np.zeros_like, (0.0,), lambda P, r: _arcsin_coeffs(P, 0.0),
                   lambda rho, r: 2 / np.pi * np.arcsin(rho), Kp, tail)


def _exp_family():
    def coeffs(P, r):
        p = np.arange(P + 1)
        return np.exp(0.5 * r * r + p * math.log(r) - 0.5 * gammaln(p + 1))
    return _Family("exp", np.exp, np.exp, (), coeffs,
                   lambda rho, r: np.exp(r * r * (1 + rho)), lambda rho, r: r * r * np.exp(r * r * (1 + rho)))


def _poly_family(name, c):
    """sigma = sum_q c_q h_q (finite); rescaled coefficients by an exact Gauss-Hermite rule."""
    c = np.asarray(c, dtype=np.float64)
    deg = c.size - 1
    dc = c[1:] * np.sqrt(np.arange(1, deg + 1))          # h_q' = sqrt(q) h_{q-1}

    def fn(z):
        return np.tensordot(c, hermite.hermite_polys(deg, z), axes=1)

    def deriv(z):
        return np.tensordot(dc, hermite.hermite_polys(max(deg - 1, 0), z)[:dc.size], axes=1)

    @functools.lru_cache(maxsize=16)
    def exact(r):
        x, w = hermite.gauss_hermite(deg + 1)
        b = hermite.project(x, w, fn(r * x), deg)
        b.setflags(write=False)
        return b

    def coeffs(P, r):
        b = c if r == 1.0 else exact(r)
        out = np.zeros(P + 1)
        out[:min(P, deg) + 1] = b[:P + 1]
        return out
    return _Family(name, fn, deriv, (), coeffs,
                   lambda rho, r: hermite.power_series(coeffs(deg, r) ** 2, rho),
                   lambda rho, r: hermite.power_series(coeffs(deg, r) ** 2, rho, deriv=True))


def _smooth(name, fn, deriv):
    return _Family(name, fn, deriv)


def _gelu(z):
    return z * ndtr(z)


def _gelu_deriv(z):
    return ndtr(z) + z * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


_BUILDERS = {
    "relu": lambda: _relu_family("relu", 1.0, 0.0, lambda z: np.maximum(z, 0.0), lambda z: (z > 0).astype(float)),
    "abs": lambda: _relu_family("abs", 1.0, 1.0, np.abs, np.sign),
    "linear": lambda: _poly_family("linear", [0.0, 1.0]),
    "quadratic": lambda: _poly_family("quadratic", [1.0, 0.0, math.sqrt(2)]),
    "sign": _sign_family,
    "erf": _erf_family,
    "exp": _exp_family,
    "tanh": lambda: _smooth("tanh", np.tanh, lambda z: 1 - np.tanh(z) ** 2),
    "sigmoid": lambda: _smooth("sigmoid", expit, lambda z: expit(z) * (1 - expit(z))),
    "gelu": lambda: _smooth("gelu", _gelu, _gelu_deriv),
    "softplus": lambda: _smooth("softplus", lambda z: np.logaddexp(0.0, z), expit),
}


def names():
    """The valid activation names (``he<K>`` stands for he1, he2, ...)."""
    return sorted([*_BUILDERS, "leaky_relu"]) + ["he<K>"]


@functools.lru_cache(maxsize=None)
def leaky_relu(alpha=0.01):
    r"""Leaky ReLU :math:`\sigma(z) = \max(z, \alpha z)` as an :class:`Activation` (closed forms).

    .. math:: \sigma = \mathrm{relu}(z) - \alpha\,\mathrm{relu}(-z),\quad
              K(\rho) = (1+\alpha^2)k_1(\rho) - 2\alpha k_1(-\rho)

    Parameters
    ----------
    alpha : float
        Negative slope in [0, 1].

    Returns
    -------
    Activation

    Notes
    -----
    Regime: alpha in [0, 1]; alpha = 0 is relu, alpha = 1 is linear.

    Accuracy: the ReLU family's (:meth:`Activation.K`): ``|dK| <= 16 eps K(1)`` and ``|dK'| <= 16 eps K'(1)`` for
    every rho in [-1, 1], also at the ends alpha = 0, 1 and 1 - 1e-9 (measured 0.09 of it;
    tests/test_accuracy_activations.py).

    References
    ----------
    .. [src] derived from the arc-cosine kernel (Cho & Saul 2009).

    Examples
    --------
    >>> round(float(leaky_relu(1.0).K(0.3)), 15)     # linear: K = rho
    0.3
    """
    alpha = check("activations.leaky_relu", "alpha", alpha, Interval(0.0, 1.0))
    name = "leaky_relu" if alpha == 0.01 else f"leaky_relu({alpha!r})"
    fam = _relu_family(name, 1.0, -alpha, lambda z: np.where(z > 0, z, alpha * z),
                       lambda z: np.where(z > 0, 1.0, alpha))
    return Activation(name, fam, 1.0)


@functools.lru_cache(maxsize=None)
def _named(name):
    m = re.fullmatch(r"he(\d+)", name)
    if m:
        K = int(m.group(1))
        if K >= 1:
            return _make(_poly_family(name, np.eye(K + 1)[K]), 1.0)
    elif name == "leaky_relu":
        return leaky_relu()
    elif name in _BUILDERS:
        return _make(_BUILDERS[name](), 1.0)
    _unknown(name)


def _unknown(name):
    """The error for an activation nobody knows: the valid names, and the closest one."""
    import difflib
    close = difflib.get_close_matches(str(name).lower(), names(), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise InvalidParameterError(
        f"activation {name!r} is not known{hint}; choose one of {', '.join(names())}, a rescaled "
        f"'<name>(r=<float>)' or an Activation (the 'activation' parameter).")


def get(name):
    r"""The :class:`Activation` of a name (an ``Activation`` is returned unchanged).

    .. math:: \text{name} \mapsto (\sigma, \sigma', \mu_p, K, K')

    Parameters
    ----------
    name : str or Activation
        One of :func:`names`: relu, abs, leaky_relu, linear, quadratic, sign, erf, tanh,
        sigmoid, gelu, softplus, exp, he1, he2, ... (normalized Hermite polynomial h_K), or a rescaled
        name ``"<name>(r=<float>)"`` as :attr:`Activation.name` writes it (``get(name).rescaled(r)``).

    Returns
    -------
    Activation
        The same object for the same name (cached).

    Notes
    -----
    Regime: any listed name; an unknown one raises :class:`InvalidParameterError` listing them.

    References
    ----------
    .. [src] popdyn's own registry (activations shared by the models).

    Examples
    --------
    >>> float(get("he3").K(0.5))                           # h_3: K = rho^3
    0.125
    >>> get("tanh(r=1.5)").name == get("tanh").rescaled(1.5).name == "tanh(r=1.5)"  # rescaled names round-trip
    True
    """
    if isinstance(name, Activation):
        return name
    if not isinstance(name, str):
        _unknown(name)
    scaled = re.fullmatch(r"(.+)\(r=([^)]+)\)", name)
    if scaled:
        try:
            r = float(scaled.group(2))
        except ValueError:
            r = None
        if r is not None:
            return _named(scaled.group(1)).rescaled(r)
    return _named(name)
