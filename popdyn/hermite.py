r"""Normalized Hermite functions, Gaussian quadrature rules and Hermite series with tail bounds.

Basis: :math:`h_k = \mathrm{He}_k/\sqrt{k!}`, orthonormal under the standard normal density
:math:`\varphi`. Everything runs through the three-term recurrence
:math:`h_{k+1} = (x h_k - \sqrt{k}\, h_{k-1})/\sqrt{k+1}`, applied either to :math:`h_k` itself
(:func:`hermite_polys`; overflows for large ``|x|`` and ``k``) or to the Gaussian-weighted
Hermite functions :math:`\psi_k = h_k\sqrt{\varphi}` (:func:`hermite_functions`; bounded by
:math:`(2\pi)^{-1/4}`, computed with a running log-scale so it is finite for every ``x``).
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from scipy.special import roots_hermitenorm, roots_legendre

from ._validate import InvalidParameterError, as_int

__all__ = ["hermite_polys", "hermite_functions", "gauss_hermite", "project", "hermite_coeffs_quad",
           "power_series", "series_tail_bound", "log_hermite_abs"]

_LOG_QUARTER_2PI = 0.25 * math.log(2 * math.pi)
_BIG = 2.0 ** 498        # mantissas are renormalised past ~1.6e150, by exact powers of two
_LN2 = math.log(2.0)


@numba.njit(cache=True)
def _rec(kmax):  # pragma: no cover - compiled
    """Recurrence constants b_k = 1/sqrt(k+1) and a_k = sqrt(k/(k+1)), k < kmax."""
    k = np.arange(kmax).astype(np.float64)
    return 1.0 / np.sqrt(k + 1.0), np.sqrt(k / (k + 1.0))


@numba.njit(cache=True)
def _logabs_table(kmax, x, logs0):  # pragma: no cover - compiled
    """log|h_k(x_i)| + logs0_i and sign h_k(x_i) for k <= kmax.

    The mantissas (h_{k-1}, h_k) 2^-e stay below ``top = min(2^498, 2^996/|x|)``, so ``x h_k`` cannot overflow:
    past it both are shifted by 2^-m (exact) and the integer e counts the shifts; log 2^e = e log 2 is formed once.
    """
    out = np.empty((kmax + 1, x.size))
    sgn = np.empty((kmax + 1, x.size))
    b, a = _rec(kmax)
    for i in range(x.size):
        xi = x[i]
        top = _BIG if abs(xi) <= _BIG else math.ldexp(1.0, 996) / abs(xi)
        low = 0 if top >= 1.0 else math.frexp(top)[1] - 1      # a shifted h_k lies in [1/2, 1) 2^low <= top
        pm1, p0, e = 0.0, 1.0, 0
        out[0, i], sgn[0, i] = logs0[i], 1.0
        for k in range(kmax):
            p1 = b[k] * xi * p0 - a[k] * pm1
            if abs(p1) > top:
                m = math.frexp(p1)[1] - low
                p0, p1, e = math.ldexp(p0, -m), math.ldexp(p1, -m), e + m
            pm1, p0 = p0, p1
            out[k + 1, i] = (math.log(abs(p0)) + (e * _LN2 + logs0[i])) if p0 != 0.0 else -np.inf
            sgn[k + 1, i] = 1.0 if p0 > 0 else (-1.0 if p0 < 0 else 0.0)
    return out, sgn


@numba.njit(cache=True)
def _project(x, c, h0, kmax):  # pragma: no cover - compiled
    """mu_k = sum_i c_i p_k(x_i) with p_k = h0 h_k, the hot loop of every quadrature.

    Degree outer, points inner (independent, so the loop pipelines/vectorises); each point keeps its mantissas
    (p_{k-1}, p_k) and scale c_i, and both are shifted by 2^498 (exactly) when a mantissa passes it.
    """
    b, a = _rec(kmax)
    mu = np.zeros(kmax + 1)
    pm1, p0 = np.zeros(x.size), h0.copy()
    scale = c.copy()
    mu[0] = np.sum(scale * p0)
    for k in range(kmax):
        acc, big = 0.0, False
        for i in range(x.size):
            p1 = b[k] * x[i] * p0[i] - a[k] * pm1[i]
            pm1[i], p0[i] = p0[i], p1
            acc += scale[i] * p1
            big |= abs(p1) > _BIG
        mu[k + 1] = acc
        if big:
            for i in range(x.size):
                if abs(p0[i]) > _BIG:
                    p0[i], pm1[i], scale[i] = p0[i] / _BIG, pm1[i] / _BIG, scale[i] * _BIG
    return mu


def _points(x):
    x = np.asarray(x, dtype=np.float64)
    return x, np.ascontiguousarray(x.reshape(-1))


def hermite_polys(kmax, x):
    r"""Normalized probabilists' Hermite polynomials :math:`h_0(x), \dots, h_{k_{\max}}(x)`.

    .. math:: h_{k+1}(x) = \frac{x\,h_k(x) - \sqrt{k}\,h_{k-1}(x)}{\sqrt{k+1}},\quad h_0 = 1,\ h_{-1} = 0

    Parameters
    ----------
    kmax : int
        Highest degree, ``kmax >= 0``.
    x : array_like
        Points, any shape.

    Returns
    -------
    ndarray of shape (kmax + 1,) + x.shape
        ``h_k(x)``; entries overflow to ``inf`` where ``|h_k(x)|`` exceeds the float64 range
        (use :func:`hermite_functions` or :func:`log_hermite_abs` there).

    Notes
    -----
    Regime: exact recurrence in float64; relative error ~ k * eps where the value is representable.

    Accuracy: ``|h - h_k(x)| <= 4 eps (k + 10 + l) sqrt(h_k(x)^2 + h_{k-1}(x)^2)`` with ``l = |log h_k(x)|``
    (relative to the recurrence's state, which does not vanish at the roots of h_k), for ``k <= 10_000`` and
    every finite ``x`` where ``|h_k(x)| < 1e308``; ``inf`` with the right sign beyond. Measured worst case 0.16 of
    the bound (tests/test_accuracy_hermite.py, mpmath.hermite at 40 digits; bulk, turning point, tail to
    ``|x| = 1.7e308``, roots and subnormal x).

    References
    ----------
    .. [src] [Dayi25, Section 1.4] (normalised Hermite polynomials h_p = He_p/sqrt(p!)).

    Examples
    --------
    >>> hermite_polys(3, 2.0).round(12).tolist()   # 1, x, (x^2-1)/sqrt2, (x^3-3x)/sqrt6
    [1.0, 2.0, 2.12132034356, 0.816496580928]
    """
    kmax = as_int("hermite.hermite_polys", "kmax", kmax, 0)
    x, flat = _points(x)
    logabs, sgn = _logabs_table(kmax, flat, np.zeros_like(flat))
    with np.errstate(over="ignore"):
        out = sgn * np.exp(logabs)
    return out.reshape((kmax + 1,) + x.shape)


def log_hermite_abs(kmax, x):
    r"""Log-scaled normalized Hermite polynomials: ``(log|h_k(x)|, sign h_k(x))`` for k <= kmax.

    .. math:: h_k(x) = \operatorname{sign}_k(x)\, e^{\ell_k(x)}

    Parameters
    ----------
    kmax : int
        Highest degree.
    x : array_like
        Points, any shape.

    Returns
    -------
    logabs, sign : ndarray of shape (kmax + 1,) + x.shape
        Finite for every finite ``x`` (``-inf`` exactly at roots).

    Notes
    -----
    Regime: any finite ``x`` and ``k``; the mantissas are kept below ``min(2^498, 2^996/|x|)`` (so ``x h_k``
    cannot overflow) by exact power-of-two shifts, counted as an integer ``e``; the scale ``e log 2`` is formed once.

    Accuracy: ``sign * exp(logabs)`` meets the bound of :func:`hermite_polys`,
    ``4 eps (k + 10 + l) sqrt(h_k^2 + h_{k-1}^2)``, ``l = |logabs|``, for ``k <= 10_000`` and every finite ``x``
    (measured 0.22 of it, at ``k = 3, x = 1e300``: the rounding of ``l`` itself; tests/test_accuracy_hermite.py,
    mpmath at 40 digits, ``|x|`` to 1.7e308); off the roots that is ``|logabs - log|h_k|| <= 4 eps (k + 10 + l)``
    (measured 0.16 of it at ``k = 9999, x = 6.1e11``).

    References
    ----------
    .. [src] derived (popdyn's own: the plain recurrence overflows).

    Examples
    --------
    >>> la, s = log_hermite_abs(400, 3.0)   # scipy's eval_hermitenorm(400, 3.0) is nan
    >>> bool(np.isfinite(la[-1]))
    True
    """
    kmax = as_int("hermite.log_hermite_abs", "kmax", kmax, 0)
    x, flat = _points(x)
    logabs, sgn = _logabs_table(kmax, flat, np.zeros_like(flat))
    shape = (kmax + 1,) + x.shape
    return logabs.reshape(shape), sgn.reshape(shape)


def hermite_functions(kmax, x):
    r"""Gaussian-weighted normalized Hermite functions :math:`\psi_k = h_k\sqrt{\varphi}`.

    .. math:: \psi_k(x) = h_k(x)\,\frac{e^{-x^2/4}}{(2\pi)^{1/4}},\qquad
              \int \psi_j\psi_k\,dx = \delta_{jk}

    Parameters
    ----------
    kmax : int
        Highest degree.
    x : array_like
        Points, any shape.

    Returns
    -------
    ndarray of shape (kmax + 1,) + x.shape
        Bounded by about ``(2 pi)^(-1/4)``; finite for every finite ``x`` and every ``k``.

    Notes
    -----
    Regime: any ``k`` (tested to 10_000) and any finite ``x``; same recurrence as
    :func:`hermite_polys` with a running log-scale.

    Accuracy: ``|psi - psi_k(x)| <= 4 eps (k + x^2/4 + 10) sqrt(psi_k^2 + psi_{k-1}^2) + 1e-300`` for
    ``k <= 10_000`` and every finite ``x`` (the ``x^2/4`` is the density's log-scale, rounded; ``|x|`` is clamped
    at 1e150, where ``psi`` is exactly 0); measured worst case 0.20 of the bound (tests/test_accuracy_hermite.py,
    mpmath.hermite at 40 digits, incl. ``k = 10^4`` at the turning point and on the roots, ``|x|`` to 1.7e308).

    References
    ----------
    .. [src] popdyn's own (recur on psi_k = h_k sqrt(w), stable at large k).

    Examples
    --------
    >>> float(hermite_functions(0, 0.0)[0]) == (2 * np.pi) ** -0.25
    True
    """
    kmax = as_int("hermite.hermite_functions", "kmax", kmax, 0)
    x, flat = _points(x)
    flat = np.clip(flat, -1e150, 1e150)       # psi_k(x) underflows to 0 long before: |x| = 1e150 gives exactly 0
    logabs, sgn = _logabs_table(kmax, flat, -0.25 * flat * flat - _LOG_QUARTER_2PI)
    return (sgn * np.exp(logabs)).reshape((kmax + 1,) + x.shape)


@functools.lru_cache(maxsize=32)
def _gauss_hermite_cached(n):
    x, w = roots_hermitenorm(n)
    w = w / math.sqrt(2 * math.pi)
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


def gauss_hermite(n):
    r"""Probability-normalized Gauss-Hermite rule: nodes and weights with :math:`\sum w_i = 1`.

    .. math:: \mathbb E_{g\sim N(0,1)}[f(g)] \approx \sum_{i=1}^{n} w_i f(x_i),
              \text{ exact for polynomials of degree} \le 2n-1

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 1`` (scipy's asymptotic algorithm is used for large ``n``).

    Returns
    -------
    x, w : ndarray of shape (n,)
        Read-only (cached) arrays.

    Notes
    -----
    Regime: any ``n``; ``numpy.polynomial.hermite_e.hermegauss`` overflows for n >~ 200.
    Weights of nodes beyond ``|x| ~ 38`` underflow to 0, so for ``n >~ 600`` the rule is exact
    only for integrands negligible there (polynomials of total degree up to ~600, or any ``f``
    with ``|f| phi`` below 1e-300 beyond 38): measured orthonormality error <= 1e-13 for
    ``h_j h_k`` with ``j + k <= 500``, but O(1) for ``j, k ~ n/2`` at ``n = 1200``.

    Accuracy: nodes to ``2e-13 max(1, |x|)`` absolute; weights to 5e-12 relative where ``w >= 1e-290``
    (absolute 1e-300 below); ``|sum w - 1| <= 4e-15``; for ``n <= 10_000`` (Golub-Welsch below 150 nodes,
    scipy's asymptotic rule above). Measured worst cases 0.39 and 0.37 of the node and weight bounds
    (tests/test_accuracy_hermite.py: roots of h_n polished by Newton in mpmath at 40 digits, weights
    ``1/(n h_{n-1}^2)``).

    References
    ----------
    .. [src] popdyn's own (scipy nodes; numpy's hermegauss overflows past N ~ 200).

    Examples
    --------
    >>> x, w = gauss_hermite(3)
    >>> round(float(np.sum(w)), 15), round(float(np.sum(w * x**4)), 12)   # E g^4 = 3
    (1.0, 3.0)
    """
    return _gauss_hermite_cached(as_int("hermite.gauss_hermite", "n", n, 1))


def project(x, w, fx, kmax):
    r"""Hermite coefficients from a quadrature rule against the Gaussian density.

    .. math:: \mu_k = \sum_i w_i f(x_i) h_k(x_i),\qquad k = 0, \dots, k_{\max}

    Parameters
    ----------
    x, w, fx : array_like of shape (n,)
        Nodes, probability weights (``sum w = 1`` for a Gaussian rule) and ``f(x)``.
    kmax : int
        Highest degree.

    Returns
    -------
    ndarray of shape (kmax + 1,)

    Notes
    -----
    Regime: any ``kmax``; the recurrence runs on :math:`h_k` (numba, O(n kmax)) with each node's scale
    started at ``w_i f_i`` (exactly its float product; a product below 2^-1000 is shifted up by 2^s and its
    mantissas start at 2^-s) and renormalised by exact powers of two, so nothing overflows that is representable.
    Nodes with ``w_i <= 0`` are skipped.

    Accuracy: ``|mu_k - sum_i w_i f_i h_k(x_i)| <= 4 eps (k + n + 10) sum_i |w_i f_i| sqrt(h_k(x_i)^2 +
    h_{k-1}(x_i)^2) + 1e-300`` (the sum's condition; no cancellation assumed), for nodes with ``|x_i| <= 1e150``,
    weights >= 0 and finite values with ``|w_i f_i| >= 2^-2000`` (or 0) and every term
    ``|w_i f_i| sqrt(h_k(x_i)^2 + h_{k-1}(x_i)^2) <= 1e300``; a one-node rule gives ``mu_0 = w f`` exactly.
    Measured 0.04 of it (tests/test_accuracy_hermite.py, mpmath at 40 digits; ``|x_i|`` to 1e4, subnormal weights,
    ``|w_i f_i|`` from 1e-520 to 1e300).

    References
    ----------
    .. [src] popdyn's own (quadrature with the renormalised h_k recurrence).

    Examples
    --------
    >>> x, w = gauss_hermite(10)
    >>> (project(x, w, x**2, 2).round(12) + 0.0).tolist()    # g^2 = h_0 + sqrt(2) h_2
    [1.0, 0.0, 1.414213562373]
    """
    kmax = as_int("hermite.project", "kmax", kmax, 0)
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    w = np.asarray(w, dtype=np.float64).ravel()
    fx = np.asarray(fx, dtype=np.float64).ravel()
    (mw, ew), (mf, ef) = np.frexp(w), np.frexp(fx)
    s = np.clip(-1000 - (ew + ef), 0, 1000)          # w f = mw mf 2^(ew + ef): c = w f 2^s, h_0 = 2^-s
    with np.errstate(over="ignore", invalid="ignore"):
        c = np.where(w > 0, np.ldexp(mw * mf, ew + ef + s), 0.0)
    c = np.where(np.isnan(fx), np.nan, c)
    return _project(x, c, np.ldexp(1.0, -s), kmax)


@functools.lru_cache(maxsize=64)
def _panels(kinks, kmax, span, order):
    """Gauss-Legendre nodes and Gaussian-density weights on panels split at the kinks (cached)."""
    t, tw = roots_legendre(order)
    edges = np.unique(np.concatenate([[-span, span], [k for k in kinks if abs(k) < span]]))
    width = min(2.0, 12.0 / math.sqrt(kmax + 1))   # <= two wavelengths 2 pi / sqrt(k) of psi_k
    xs, ws = [], []
    for a, b in zip(edges[:-1], edges[1:]):
        m = max(1, int(math.ceil((b - a) / width)))
        e = np.linspace(a, b, m + 1)
        half = 0.5 * np.diff(e)[:, None]
        xs.append((0.5 * (e[:-1] + e[1:]))[:, None] + half * t)
        ws.append(half * tw)
    x = np.concatenate([a.ravel() for a in xs])
    w = np.concatenate([a.ravel() for a in ws]) * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


def _support(f, span):
    """Smallest L <= span (grid 0.25) outside which |f| e^{-x^2/4} < 1e-18 of its maximum, plus 1."""
    z = np.linspace(-span, span, int(8 * span) + 1)
    with np.errstate(all="ignore"):
        v = np.abs(np.asarray(f(z), dtype=np.float64)) * np.exp(-0.25 * z * z)
    v = np.where(np.isfinite(v), v, np.inf)
    big = np.flatnonzero(v > 1e-18 * np.max(v)) if np.max(v) > 0 else np.array([int(4 * span)])
    return float(min(span, np.max(np.abs(z[big])) + 1.0))


def hermite_coeffs_quad(f, kmax, kinks=(), *, span=40.0):
    r"""Hermite coefficients :math:`\mu_0..\mu_{k_{\max}}` of any vectorised ``f``, with an error estimate.

    .. math:: \mu_k(f) = \int_{-L}^{L} f(x)\,h_k(x)\,\varphi(x)\,dx

    The line is cut to ``[-L, L]`` (``L <= span`` the point beyond which
    :math:`|f(x)|e^{-x^2/4}` stays below 1e-18 of its maximum on a 0.25 grid, plus 1), split at
    the kinks (points where ``f`` or ``f'`` jumps), and each piece is cut into panels of width
    ``min(2, 12/sqrt(kmax+1))`` (at most two oscillations of :math:`\psi_{k_{\max}}`) carrying
    a 24-point Gauss-Legendre rule, so the rule converges spectrally on each smooth piece. The
    estimate is the difference to a 16-point rule on the same panels (it bounds the 24-point
    error from above in practice).

    Parameters
    ----------
    f : callable
        Vectorised function of a float64 array.
    kmax : int
        Highest degree.
    kinks : sequence of float
        Points where ``f`` is not smooth.
    span : float
        Truncation ``L``; the density ``phi(40) ~ 1e-348`` is below float64.

    Returns
    -------
    mu : ndarray of shape (kmax + 1,)
    err : float
        Estimated maximal absolute error over ``k``.

    Notes
    -----
    Regime: ``f`` piecewise analytic between the kinks, without features narrower than the
    0.25 probe grid, with ``|f(x)| e^{-x^2/4}`` small at ``|x| = span``. Cost O(L sqrt(kmax))
    function evaluations and O(L kmax^1.5) recurrence steps (numba): tanh, kmax = 200: ~0.5 ms,
    several hundred times faster than a loop of ``scipy.integrate.quad`` (0.33 s), error 4e-16.
    Gauss-Hermite on a kinked ``f`` converges only as O(1/N) (ReLU: 1.6e-3 at N = 100, 2e-5 at 8000), hence the split.

    Accuracy: ``|mu_k - mu_k(f)| <= max(2 err, 4e-15 ||f||)``, ``||f|| = (E f(g)^2)^(1/2)``, in that regime
    (tested with relu, |.|, a jump, tanh(b x), exp(b x), sin and a cubic; kinks in [-6, 6], slopes up to 4,
    ``kmax <= 60``); measured 0.24 of the bound (tests/test_accuracy_hermite.py, 16-point Gauss-Legendre
    panels in mpmath at 30 digits).

    References
    ----------
    .. [src] derived (popdyn's own: split at the kink).

    Examples
    --------
    >>> mu, err = hermite_coeffs_quad(lambda z: np.maximum(z, 0), 2, kinks=(0.0,))
    >>> bool(abs(mu[1] - 0.5) < 1e-14 and err < 1e-12)    # ReLU: mu_1 = 1/2
    True
    """
    kmax = as_int("hermite.hermite_coeffs_quad", "kmax", kmax, 0)
    kinks = tuple(float(k) for k in kinks)
    if not all(math.isfinite(k) for k in kinks):
        raise InvalidParameterError(
            f"The 'kinks' parameter of hermite.hermite_coeffs_quad must be finite floats. Got {kinks!r} instead.")
    out = []
    span = _support(f, float(span))
    for order in (24, 16):
        x, w = _panels(kinks, kmax, span, order)
        out.append(project(x, w, np.asarray(f(x), dtype=np.float64), kmax))
    return out[0], float(np.max(np.abs(out[0] - out[1])))


def power_series(a, rho, *, deriv=False):
    r"""Evaluate :math:`\sum_p a_p\rho^p` (or its derivative) by Horner's rule, vectorised over rho.

    .. math:: S(\rho) = \sum_{p=0}^{P} a_p \rho^p,\qquad S'(\rho) = \sum_{p=1}^{P} p\,a_p\rho^{p-1}

    Parameters
    ----------
    a : array_like of shape (P + 1,)
        Coefficients.
    rho : array_like
        Points, any shape.
    deriv : bool
        Evaluate the derivative instead.

    Returns
    -------
    ndarray of rho's shape

    Notes
    -----
    Regime: any ``rho``; the truncation error is the caller's (see ``Activation.Kprime_tail_bound``:
    for nonnegative ``a_p`` the tail at ``rho`` is at most ``|rho|^(P+1) * sum_{p>P} a_p``).

    Accuracy: ``|S - S_exact| <= 2 (P + 1) eps sum_p |a_p| |rho|^p`` (Horner's bound; with ``deriv`` the
    coefficients ``p a_p``), for any ``P`` (tested to 2048), ``|rho| <= 1`` and coefficients of any sign and
    scale; measured 0.09 of it (tests/test_accuracy_hermite.py, exact rational arithmetic).

    References
    ----------
    .. [src] [Dayi25, Section 1.4, App. D.1] (K = sum mu_p^2 rho^p).

    Examples
    --------
    >>> float(power_series([1.0, 2.0, 3.0], 2.0)), float(power_series([1.0, 2.0, 3.0], 2.0, deriv=True))
    (17.0, 14.0)
    """
    a = np.asarray(a, dtype=np.float64)
    if deriv:
        a = a[1:] * np.arange(1, a.size)
    rho = np.asarray(rho, dtype=np.float64)
    acc = np.zeros_like(rho)
    for coef in a[::-1]:
        acc = acc * rho + coef
    return acc


def series_tail_bound(tail_mass, P, rho, *, deriv=False):
    r"""Certified bound on the truncation error of a power series with nonnegative coefficients.

    .. math:: \Big|\sum_{p>P} a_p\rho^p\Big| \le |\rho|^{P+1}\sum_{p>P} a_p,\qquad
              \Big|\sum_{p>P} p\,a_p\rho^{p-1}\Big| \le |\rho|^{P}\sum_{p>P} p\,a_p

    Parameters
    ----------
    tail_mass : float
        :math:`\sum_{p>P} a_p` (or :math:`\sum_{p>P} p a_p` with ``deriv``), e.g. a Parseval
        deficit ``E sigma^2 - sum_{p<=P} mu_p^2``; ``>= 0``, may be ``inf``.
    P : int
        Truncation degree.
    rho : array_like
        Points, any shape; NaN propagates.
    deriv : bool
        Bound the derivative series instead.

    Returns
    -------
    ndarray of rho's shape

    Notes
    -----
    Regime: ``a_p >= 0`` and ``|rho| <= 1`` (dual-kernel series ``a_p = mu_p^2``); the bound is
    as exact as ``tail_mass`` (``0 * inf`` is taken as 0 at ``rho = 0``). Where the power ``|rho|^n``
    (``n = P + 1``, or ``P`` with ``deriv``) is not a normal float the product is formed as
    ``exp(n log|rho| + log tail_mass)``: it does not underflow before the product does (``inf`` for an infinite
    mass at any ``rho != 0``).

    Accuracy: ``|b - T| <= 4 eps (1 + L) T + 2^-1074``, ``T = |rho|^n tail_mass``, with ``L = 0`` where
    ``|rho|^n >= 2^-1022`` and ``L = n |log|rho|| + |log tail_mass|`` below (the exp's argument, rounded); exact
    (``inf``, or 0 only at ``rho = 0``) for ``tail_mass = inf``; against exact rationals for ``P <= 5000`` and
    ``tail_mass`` in ``[0, 1e300]`` (measured 0.20 of it, 0.17 where ``L > 0``). The value is the formula's,
    rounded, not certified in its last ulp (callers add slack).

    References
    ----------
    .. [src] derived in docs/lora.md (Parseval, nonnegative terms).

    Examples
    --------
    >>> float(series_tail_bound(0.5, 2, 0.5))     # 0.5^3 * 0.5
    0.0625
    """
    P = as_int("hermite.series_tail_bound", "P", P, 0)
    n = P if deriv else P + 1
    a = np.abs(np.asarray(rho, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        power = a ** n
        small = np.where(a > 0, np.exp(n * np.log(a) + np.log(tail_mass)), 0.0)
        out = np.where(power >= 2.0 ** -1022, power * tail_mass, small)
    return np.where(np.isnan(a), np.nan, out)
