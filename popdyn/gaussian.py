r"""Gaussian integrals the models share: the standard normal density, arc-cosine kernels and a seeded Monte Carlo
mean with its standard error. A new integral lands here with its oracle test when a model first needs it.
"""
from __future__ import annotations

import math

import numpy as np

from ._validate import InvalidParameterError, as_int

__all__ = ["normal_pdf", "arccos_kernel", "mc_mean"]

_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


def normal_pdf(t):
    r"""Standard normal density, accurate to about 1 ulp also far in the tail.

    .. math:: \varphi(t) = e^{-t^2/2}/\sqrt{2\pi},\qquad \min(|t|, 39) = t_h + t_l,\ t_h^2 \text{ exact (Veltkamp)}

    Parameters
    ----------
    t : array_like

    Returns
    -------
    ndarray

    Notes
    -----
    Regime: any t (``nan`` stays ``nan``, ``+-inf`` give 0); ``exp(-t^2/2)`` with ``t^2`` rounded loses ``t^2 eps``
    relative (1e-13 at t = 30), the split does not. phi is even and 0 in float64 beyond ``|t| = 38.6``, so ``|t|``
    is clamped to 39 before the split (which keeps its parts in range).

    Accuracy: relative error <= 4 eps where phi(t) is a normal float (``|t| <= 37.5``), absolute <= 2^-1074 (one
    subnormal ulp) where it is subnormal, exactly 0 where it underflows (``|t| > 38.6``), for every float t;
    measured 0.66 of the bound (tests/test_accuracy_gaussian.py, mpmath.npdf at 40 digits).

    References
    ----------
    .. [src] popdyn's own (stable Gaussian tail evaluation, used by docs/gradient_features.md's closed forms).
    """
    t = np.minimum(np.abs(np.asarray(t, dtype=np.float64)), 39.0)
    c = 134217729.0 * t
    th = c - (c - t)
    tl = t - th
    return np.exp(-0.5 * th * th) * np.exp(-(th * tl + 0.5 * tl * tl)) * _INV_SQRT_2PI


# Taylor coefficients in u = delta^2 of J_1 / delta^3 and J_2 / delta^5 (delta = pi - theta), enough for 1e-18
# relative at delta = pi/2: J_1 = sum_{k>=1} (-1)^(k+1) 2k delta^(2k+1)/(2k+1)!,
# J_2 = sum_{k>=2} (-1)^k (k-1) (2 delta)^(2k+1)/(2k+1)!.
_J1_TAYLOR = np.array([(-1) ** (k + 1) * 2 * k / math.factorial(2 * k + 1) for k in range(1, 12)])
_J2_TAYLOR = np.array([(-1) ** k * (k - 1) * 2 ** (2 * k + 1) / math.factorial(2 * k + 1) for k in range(2, 16)])


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
    Regime: unit-variance Gaussians, any rho in [-1, 1]. For rho >= 0 the angle is
    ``theta = 2 arcsin(sqrt((1 - rho)/2))`` (``1 - rho`` of order eps stays accurate) and J_n as above. For
    rho < 0 the complement ``delta = pi - theta = 2 arcsin(sqrt((1 + rho)/2))`` is computed directly and J_n by
    its Taylor series in delta < pi/2, :math:`J_1 = \sin\delta - \delta\cos\delta = \delta^3/3 - \delta^5/30 + \dots`,
    :math:`J_2 = \delta(1 + 2\cos^2\delta) - 3\sin\delta\cos\delta = 4\delta^5/15 - 16\delta^7/315 + \dots`,
    so k_n, which vanishes like (1 + rho)^(n + 1/2), keeps its relative accuracy up to rho = -1.
    ``k_1`` is the ReLU dual kernel and ``k_0 = k_1'`` its derivative.

    Accuracy: relative error <= 16 eps for every rho in [-1, 1] (exact 0 at -1); measured 0.4 of it
    (tests/test_accuracy_gaussian.py, mpmath at 40 digits, rho within 3e-17 of +-1).

    References
    ----------
    .. [src] Cho & Saul (2009), eq. (6); used by [Dayi25]'s kernel form (docs/lora.md).

    Examples
    --------
    >>> arccos_kernel([1.0, 0.0, -1.0], 0).round(15).tolist()    # P(g1 > 0, g2 > 0)
    [0.5, 0.25, 0.0]
    >>> float(arccos_kernel(1.0, 2))                   # E relu(g)^4 = 3/2
    1.5
    """
    order = as_int("gaussian.arccos_kernel", "order", order, 0, 2)
    rho = np.clip(np.asarray(rho, dtype=np.float64), -1.0, 1.0)
    pi_th = np.pi - 2.0 * np.arcsin(np.sqrt(0.5 * (1.0 - rho)))
    delta = 2.0 * np.arcsin(np.sqrt(0.5 * (1.0 + rho)))
    near = rho < 0.0
    if order == 0:
        return np.where(near, delta, pi_th) / (2.0 * np.pi)
    s = np.sqrt((1.0 - rho) * (1.0 + rho))
    u = delta * delta
    if order == 1:
        j = np.where(near, delta * u * np.polynomial.polynomial.polyval(u, _J1_TAYLOR), s + pi_th * rho)
    else:
        j = np.where(near, delta * u * u * np.polynomial.polynomial.polyval(u, _J2_TAYLOR),
                     3.0 * s * rho + pi_th * (1.0 + 2.0 * rho * rho))
    return j / (2.0 * np.pi)


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

    Accuracy (of the arithmetic, on the samples drawn): ``|mean - mean_exact| <= eps (|mean| + sd)(n/chunk + 10)``
    and ``|se/se_exact - 1| <= eps (n/chunk + 10 + log2 n)(1 + |mean|/sd)``, for samples with ``|x| <= 1e150``
    (squares in range), offsets up to 1e12 standard deviations and any chunk; measured 0.14 and 0.03 of these
    (tests/test_accuracy_gaussian.py, exact rational sums of the same samples).

    References
    ----------
    .. [src] popdyn's own (Monte Carlo with a seed and a standard error).

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
