r"""Gaussian integrals the models share: arc-cosine kernels, ReLU moments, orthant probabilities,
the bivariate normal CDF, Dawson's function, and a seeded Monte Carlo mean with its standard error.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from scipy.special import dawsn, ndtr

from ._validate import InvalidParameterError, as_int

__all__ = ["arccos_kernel", "relu_moment", "orthant", "bivariate_cdf", "dawson", "mc_mean"]


def _theta(rho):
    """Angle arccos(rho) by the cancellation-free 2 arcsin(sqrt((1 - rho)/2)), rho clipped to [-1, 1]."""
    rho = np.clip(np.asarray(rho, dtype=np.float64), -1.0, 1.0)
    return rho, 2.0 * np.arcsin(np.sqrt(0.5 * (1.0 - rho)))


def arccos_kernel(rho, order):
    r"""Arc-cosine kernel: :math:`\mathbb E[\mathrm{relu}(g_1)^n\,\mathrm{relu}(g_2)^n]` at correlation rho.

    .. math:: k_n(\rho) = \frac{J_n(\theta)}{2\pi},\quad \theta = \arccos\rho,\quad
              J_0 = \pi-\theta,\ J_1 = \sin\theta + (\pi-\theta)\cos\theta,\
              J_2 = 3\sin\theta\cos\theta + (\pi-\theta)(1+2\cos^2\theta)

    (:math:`\mathrm{relu}^0` is the step :math:`\mathbb 1\{g>0\}`; Cho & Saul's kernel is
    :math:`2k_n`.)

    Parameters
    ----------
    rho : array_like
        Correlations, any shape; clipped to ``[-1, 1]`` (rounding can give ``1 + 1e-16``).
    order : int
        ``n`` in {0, 1, 2}.

    Returns
    -------
    ndarray of rho's shape

    Notes
    -----
    Regime: unit-variance Gaussians, any rho in [-1, 1]; theta is computed as
    ``2 arcsin(sqrt((1 - rho)/2))``, so ``1 - rho`` of order eps stays accurate.
    ``k_1`` is the ReLU dual kernel and ``k_0 = k_1'`` its derivative.

    References
    ----------
    .. [src] Cho & Saul (2009), eq. (6); seed 003 via specs/lora.md §7 and Appendix A.1.

    Examples
    --------
    >>> arccos_kernel([1.0, 0.0, -1.0], 0).round(15).tolist()    # P(g1 > 0, g2 > 0)
    [0.5, 0.25, 0.0]
    >>> float(arccos_kernel(1.0, 2))                   # E relu(g)^4 = 3/2
    1.5
    """
    order = as_int("gaussian.arccos_kernel", "order", order, 0, 2)
    rho, th = _theta(rho)
    s = np.sqrt((1.0 - rho) * (1.0 + rho))
    pi_th = np.pi - th
    if order == 0:
        j = pi_th
    elif order == 1:
        j = s + pi_th * rho
    else:
        j = 3.0 * s * rho + pi_th * (1.0 + 2.0 * rho * rho)
    return j / (2.0 * np.pi)


def relu_moment(a, b, n):
    r"""Moments :math:`\mathbb E[\mathrm{relu}(a g + b)^n]`, n in {0, 1, 2}, g ~ N(0, 1).

    .. math:: t = b/|a|:\quad M_0 = \Phi(t),\quad M_1 = |a|(\varphi(t) + t\Phi(t)),\quad
              M_2 = a^2\big((1+t^2)\Phi(t) + t\varphi(t)\big)

    Parameters
    ----------
    a, b : array_like
        Broadcastable; ``a = 0`` gives ``relu(b)^n`` (with ``relu(b)^0 = 1{b > 0}``).
    n : int
        Order in {0, 1, 2} (``n = 0`` is ``P(a g + b > 0)``).

    Returns
    -------
    ndarray of the broadcast shape

    Notes
    -----
    Regime: any finite ``a, b``; NaN propagates.

    References
    ----------
    .. [src] derived (Gaussian integration by parts); DESIGN.md gaussian.py.

    Examples
    --------
    >>> float(relu_moment(1.0, 0.0, 2)), round(float(relu_moment(1.0, 0.0, 1)), 12)  # 1/2, 1/sqrt(2 pi)
    (0.5, 0.398942280401)
    """
    n = as_int("gaussian.relu_moment", "n", n, 0, 2)
    a, b = np.broadcast_arrays(np.abs(np.asarray(a, dtype=np.float64)), np.asarray(b, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(a > 0, b / np.where(a > 0, a, 1.0), 0.0)
    cdf, pdf = ndtr(t), np.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)
    m = (cdf, a * (pdf + t * cdf), a * a * ((1 + t * t) * cdf + t * pdf))[n]
    degenerate = np.where(b > 0, b ** n, 0.0)
    out = np.where(a > 0, m, degenerate)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, out)


_GL_X, _GL_W = np.polynomial.legendre.leggauss(20)
_GL_X, _GL_W = np.ascontiguousarray(_GL_X[:10]), np.ascontiguousarray(_GL_W[:10])   # negative half


@numba.njit(cache=True)
def _phi_upper(x):  # pragma: no cover - compiled
    return 0.5 * math.erfc(x / math.sqrt(2.0))


@numba.njit(cache=True)
def _bvnu_near_one(h, k, r, gx, gw):  # pragma: no cover - compiled
    """Genz's |r| >= 0.925 branch: expansion of the integral in sqrt(1 - r^2)."""
    if r < 0:
        k = -k
    hk = h * k
    bvn = 0.0
    if abs(r) < 1:
        ass = (1 - r) * (1 + r)
        a = math.sqrt(ass)
        bs = (h - k) ** 2
        c = (4 - hk) / 8
        d = (12 - hk) / 16
        bvn = a * math.exp(-(bs / ass + hk) / 2) * (1 - c * (bs - ass) * (1 - d * bs / 5) / 3 + c * d * ass * ass / 5)
        if hk > -160:
            b = math.sqrt(bs)
            bvn -= (math.exp(-hk / 2) * math.sqrt(2 * math.pi) * _phi_upper(b / a) * b
                    * (1 - c * bs * (1 - d * bs / 5) / 3))
        a = a / 2
        for i in range(gx.size):
            for sgn in (-1.0, 1.0):
                xs = (a * (sgn * gx[i] + 1)) ** 2
                rs = math.sqrt(1 - xs)
                bvn += a * gw[i] * (math.exp(-bs / (2 * xs) - hk / (1 + rs)) / rs
                                    - math.exp(-(bs / xs + hk) / 2) * (1 + c * xs * (1 + d * xs)))
        bvn = -bvn / (2 * math.pi)
    if r > 0:
        return bvn + _phi_upper(max(h, k))
    bvn = -bvn
    if k > h:
        bvn += _phi_upper(h) - _phi_upper(k)
    return bvn


@numba.njit(cache=True)
def _bvnu(h, k, r, gx, gw):  # pragma: no cover - compiled
    """P(g1 > h, g2 > k) at correlation r (Genz 2004, 20-point Gauss-Legendre, ~1e-15)."""
    if math.isnan(h) or math.isnan(k) or math.isnan(r):
        return math.nan
    if h == math.inf or k == math.inf:
        return 0.0
    if h == -math.inf:
        return _phi_upper(k)
    if k == -math.inf:
        return _phi_upper(h)
    if abs(r) < 0.925:
        hk, hs, asr = h * k, (h * h + k * k) / 2, math.asin(r)
        bvn = 0.0
        for i in range(gx.size):
            for sgn in (-1.0, 1.0):
                sn = math.sin(asr * (1 + sgn * gx[i]) / 2)
                bvn += gw[i] * math.exp((sn * hk - hs) / (1 - sn * sn))
        return bvn * asr / (4 * math.pi) + _phi_upper(h) * _phi_upper(k)
    return min(1.0, max(0.0, _bvnu_near_one(h, k, r, gx, gw)))


@numba.njit(cache=True)
def _bvnu_many(h, k, r, gx, gw):  # pragma: no cover - compiled
    out = np.empty(h.size)
    for i in range(h.size):
        out[i] = _bvnu(h[i], k[i], r[i], gx, gw)
    return out


def orthant(a, b, rho):
    r"""Orthant probability :math:`P(g_1 > a, g_2 > b)` for standard normals of correlation rho.

    .. math:: P(g_1 > a, g_2 > b) = \frac{1}{2\pi}\int_0^{\arcsin\rho}
              \exp\Big(-\frac{a^2 + b^2 - 2ab\sin\theta}{2\cos^2\theta}\Big)\,d\theta + \Phi(-a)\Phi(-b)

    Parameters
    ----------
    a, b, rho : array_like
        Broadcastable; ``rho`` is clipped to [-1, 1]; ``a, b`` may be infinite; NaN propagates.

    Returns
    -------
    ndarray of the broadcast shape

    Notes
    -----
    Regime: any ``a, b`` and rho in [-1, 1]. Genz's algorithm (Sheppard/Drezner-Wesolowsky form
    for ``|rho| < 0.925``, an expansion in ``sqrt(1 - rho^2)`` above) with a 20-point
    Gauss-Legendre rule, absolute error ~1e-15; numba kernel over the flattened points.

    References
    ----------
    .. [src] Genz (2004), Statistics and Computing 14:251-260 (BVNU); Sheppard (1899).

    Examples
    --------
    >>> round(float(orthant(0.0, 0.0, 0.5)), 15)     # 1/4 + arcsin(rho)/(2 pi) = 1/3
    0.333333333333333
    """
    a, b, rho = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (a, b, rho)))
    flat = [np.ascontiguousarray(v).ravel() for v in (a, b, np.clip(rho, -1.0, 1.0))]
    return _bvnu_many(*flat, _GL_X, _GL_W).reshape(a.shape)


def bivariate_cdf(h, k, rho):
    r"""Bivariate standard normal CDF :math:`\Phi_2(h, k;\rho) = P(g_1 < h, g_2 < k)`.

    .. math:: \Phi_2(h, k;\rho) = P(g_1 > -h, g_2 > -k)

    Parameters
    ----------
    h, k, rho : array_like
        Broadcastable; see :func:`orthant`.

    Returns
    -------
    ndarray of the broadcast shape

    Notes
    -----
    Regime: as :func:`orthant` (absolute error ~1e-15).

    References
    ----------
    .. [src] Genz (2004), Statistics and Computing 14:251-260.

    Examples
    --------
    >>> float(bivariate_cdf(0.0, 0.0, 0.0))
    0.25
    """
    return orthant(-np.asarray(h, dtype=np.float64), -np.asarray(k, dtype=np.float64), rho)


def dawson(x):
    r"""Dawson's function :math:`F(x) = e^{-x^2}\int_0^x e^{t^2}dt` (scipy.special.dawsn).

    .. math:: F(x) = e^{-x^2}\int_0^x e^{t^2}\,dt

    Parameters
    ----------
    x : array_like

    Returns
    -------
    ndarray of x's shape

    Notes
    -----
    Regime: any real x; ``F(x) ~ 1/(2x)`` for large x.

    References
    ----------
    .. [src] scipy.special.dawsn (Cephes).

    Examples
    --------
    >>> float(dawson(0.0))
    0.0
    """
    return dawsn(np.asarray(x, dtype=np.float64))


def mc_mean(sample_fn, n, seed, chunk=100_000):
    r"""Seeded Monte Carlo mean and its standard error.

    .. math:: \hat\mu = \frac1n\sum_{i=1}^n X_i,\qquad \mathrm{SE} = \frac{\hat s}{\sqrt n}

    Parameters
    ----------
    sample_fn : callable
        ``sample_fn(rng, m)`` returns ``m`` i.i.d. samples (array of shape ``(m,) + s``).
    n : int
        Total number of samples, ``n >= 2``.
    seed : int
        Seed of ``numpy.random.default_rng``; the stream depends only on (seed, chunk).
    chunk : int
        Samples per call of ``sample_fn``.

    Returns
    -------
    mean, se : ndarray of shape s (float for scalar samples)

    Notes
    -----
    Regime: finite variance; chunked Welford/Chan merging keeps memory at O(chunk).

    References
    ----------
    .. [src] derived; specs/lora.md §3.3 (Monte Carlo with a seed and a standard error).

    Examples
    --------
    >>> m, se = mc_mean(lambda rng, k: rng.standard_normal(k) ** 2, 10_000, seed=0)
    >>> bool(abs(m - 1.0) < 5 * se)
    True
    """
    n = as_int("gaussian.mc_mean", "n", n, 2)
    chunk = as_int("gaussian.mc_mean", "chunk", chunk, 1)
    seed = as_int("gaussian.mc_mean", "seed", seed, 0)
    rng = np.random.default_rng(seed)
    count, mean, m2 = 0, 0.0, 0.0
    while count < n:
        m = min(chunk, n - count)
        x = np.asarray(sample_fn(rng, m), dtype=np.float64)
        if x.shape[:1] != (m,):
            raise InvalidParameterError(
                f"The 'sample_fn' parameter of gaussian.mc_mean must return {m} samples. Got shape {x.shape} instead.")
        bm, bm2 = x.mean(axis=0), ((x - x.mean(axis=0)) ** 2).sum(axis=0)
        delta = bm - mean
        tot = count + m
        mean = mean + delta * m / tot
        m2 = m2 + bm2 + delta ** 2 * count * m / tot
        count = tot
    se = np.sqrt(m2 / (n - 1) / n)
    return (float(mean), float(se)) if np.ndim(mean) == 0 else (mean, se)
