r"""Moment generating functions of the margin W = w.z and the contour integrals that give its exact expectations.

Every coordinate of z is a ``D_g`` variable (the invariant ones are ``D_{1/2} = U[0, 1]``), so the margin's moment
generating function is a product of closed forms, entire in z:

.. math:: M(z) = \mathbb E e^{zW} = \prod_k M_{\mathcal D_{g_k}}(a_k z)^{n_k},\qquad
          M_{\mathcal D_g}(t) = \frac{e^t-1}{t}\big(\tfrac12+g + (\tfrac12-g)e^{-t}\big)

A block is ``(a, g, n)``: n coordinates of weight a and mean g. Expectations are Bromwich/Mellin-Barnes integrals
along a vertical line Re z = c through the saddle point, evaluated by the trapezoidal rule (spectrally accurate
for analytic integrands), which keeps full relative precision however small the result:

.. math:: \mathbb E\,\ln(1+e^{-W}) = \frac1{2\pi i}\int_{c-i\infty}^{c+i\infty} M(z)\frac{\pi}{z\sin\pi z}dz\
          (-1<c<0),\qquad \Pr[W>0] = \frac1{2\pi i}\int_{c-i\infty}^{c+i\infty}\frac{M(z)}{z}dz\ (c>0).

(derived in docs/domain_gen.md; an FFT grid computes the same numbers but floors at 1e-14.)
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar

__all__ = []

_SMALL = 0.1  # |t| below which the series of the derivatives of log M_U are used (truncation < 1e-19)


def _quiet(f):
    """Run ``f`` with floating-point warnings off: its ``np.where`` evaluates the branches it discards too."""
    def g(*a, **k):
        with np.errstate(all="ignore"):
            return f(*a, **k)
    g.__doc__, g.__name__ = f.__doc__, f.__name__
    return g


@_quiet
def _log_mu(t):
    """log((e^t - 1)/t), stable for every complex t (series t/2 + log(sinh(x)/x), x = t/2, for |t| < 0.1)."""
    t = np.asarray(t, dtype=complex)
    small = np.abs(t) < _SMALL
    tp = np.where(~small & (t.real >= 0), t, 1.0)
    tn = np.where(~small & (t.real < 0), t, -1.0)
    pos = tp + np.log(-np.expm1(-tp)) - np.log(tp)
    neg = np.log(np.expm1(tn)) - np.log(tn)
    x2 = (t / 2) ** 2
    ser = t / 2 + x2 / 6 - x2 ** 2 / 180 + x2 ** 3 / 2835 - x2 ** 4 / 37800
    return np.where(small, ser, np.where(t.real >= 0, pos, neg))


@_quiet
def _dlog_mu(t):
    """d/dt log M_U(t) = 1/(1 - e^{-t}) - 1/t (series for |t| < 0.1)."""
    t = np.asarray(t, dtype=complex)
    small = np.abs(t) < _SMALL
    ts = np.where(small, 1.0, t)
    big = np.where(ts.real >= 0, -1.0 / np.expm1(-ts), np.exp(ts) / np.expm1(ts)) - 1.0 / ts
    ser = 0.5 + t / 12 - t ** 3 / 720 + t ** 5 / 30240 - t ** 7 / 1209600
    return np.where(small, ser, big)


@_quiet
def _d2log_mu(t):
    """d^2/dt^2 log M_U(t) = 1/t^2 - e^{-t}/(1 - e^{-t})^2, even in t (series for |t| < 0.1)."""
    t = np.asarray(t, dtype=complex)
    small = np.abs(t) < _SMALL
    ts = np.where(small, 1.0, t)
    s = np.where(ts.real >= 0, ts, -ts)
    big = 1.0 / ts ** 2 - np.exp(-s) / np.expm1(-s) ** 2
    x2 = (t / 2) ** 2
    ser = (1 / 3 - x2 / 15 + 2 * x2 ** 2 / 189 - x2 ** 3 / 675 + 2 * x2 ** 4 / 10395) / 4
    return np.where(small, ser, big)


@_quiet
def _log_mgf_block(t, g, order=2):
    """log M_{D_g}(t) and (order > 0) its first two t-derivatives (every exponential taken of a non-positive real
    part)."""
    p, q = 0.5 + g, 0.5 - g
    t = np.asarray(t, dtype=complex)
    tr = t.real >= 0
    e = np.exp(np.where(tr, -t, t))  # e^{-|Re t|} with its phase
    mix = np.where(tr, np.log(p + q * e), -t + np.log(q + p * e)) if q > 0 else np.log(p) + 0 * t
    if not order:
        return _log_mu(t) + mix, None, None
    if q == 0:  # U[0, 1]: no mixture term
        return _log_mu(t) + mix, _dlog_mu(t), _d2log_mu(t)
    den = np.where(tr, p + q * e, p * e + q)  # >= q > 0 in modulus up to the phase: no underflow to 0
    d1 = -q * np.where(tr, e, 1.0) / den
    d2 = q * p * e / den ** 2
    return _log_mu(t) + mix, _dlog_mu(t) + d1, _d2log_mu(t) + d2


def log_mgf(z, blocks, order=0):
    r"""log M(z) of W = sum_k a_k (sum of n_k D_{g_k} coordinates), with (order >= 1) d logM/da_k and (order 2)
    (d^2 M/da_k da_l)/M.

    Returns ``logM`` (shape of z), or ``(logM, D1, H)`` with D1 of shape (K,) + z.shape and H of shape
    (K, K) + z.shape (zeros unless order 2).
    """
    z = np.asarray(z, dtype=complex)
    logm = np.zeros_like(z)
    d1, d2 = [], []
    for a, g, n in blocks:
        if n == 0 or a == 0:  # M = 1: no contribution (and no 0 * inf)
            if order:
                d1.append(n * z * _dlog_mu(0 * z))
                d2.append(n * z * z * _d2log_mu(0 * z))
            continue
        lm, l1, l2 = _log_mgf_block(a * z, g, order)
        logm = logm + n * lm
        if order:
            d1.append(n * z * l1)
            d2.append(n * z * z * l2)
    if not order:
        return logm
    d1 = np.array(d1)
    H = np.zeros((len(blocks),) + d1.shape)
    if order == 2:
        H = d1[:, None] * d1[None, :]
        for k, v in enumerate(d2):
            H[k, k] = H[k, k] + v
    return logm, d1, H


def log_mgf_real(c, blocks):
    """log M(c) for real c (float)."""
    return float(log_mgf(np.array([c], dtype=float), blocks)[0].real)


def tilted_sd(c, blocks):
    """Standard deviation of W under the exponential tilt e^{cW}/M(c) (the width of the saddle)."""
    v = sum(n * a * a * _log_mgf_block(np.array([a * c]), g)[2][0].real for a, g, n in blocks)
    return float(np.sqrt(max(v, 1e-300)))


def _saddle(f, lo, hi):
    """argmin of a real convex-ish function of c on (lo, hi) (bounded Brent, tolerance 1e-10 of the width)."""
    res = minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10 * (hi - lo)})
    return float(res.x)


def line_integral(blocks, c, kernel, order=0, rtol=1e-13, max_points=2 ** 20):
    r"""(1/2 pi) int Re[M(c + iy) k(c + iy) X(c + iy)] dy / M(c) over y in R by the trapezoidal rule with step halving.

    ``X`` is 1, or (order 1) the stack [1, dlogM/da_k], or (order 2) [1, dlogM/da_k, (d^2M/da_k da_l)/M]. Returns
    (log M(c), integral / M(c)) with the integral an array of length 1, 1 + K or 1 + K + K^2.
    """
    c = float(c)
    lmc = log_mgf_real(c, blocks)
    sd = tilted_sd(c, blocks)
    width = min(1.0 / sd, abs(c), 1.0 - abs(c)) if kernel is not _step_kernel else min(1.0 / sd, abs(c))

    def integrand(y):
        z = c + 1j * y
        if order:
            lm, d1, H = log_mgf(z, blocks, order=order)
            X = np.concatenate([np.ones((1,) + z.shape), d1] + ([H.reshape((-1,) + z.shape)] if order == 2 else []))
        else:
            lm, X = log_mgf(z, blocks), np.ones((1,) + z.shape)
        return (np.exp(lm - lmc) * kernel(z) * X).real

    # truncation: grow Y geometrically until the integrand (first component) is negligible
    f0 = abs(integrand(np.zeros(1))[0, 0])
    Y = 8.0 * width
    while abs(integrand(np.array([Y]))[0, 0]) > 1e-20 * f0 or abs(integrand(np.array([1.5 * Y]))[0, 0]) > 1e-20 * f0:
        Y *= 2.0
        if Y > max_points * width:
            break
    h = width / 2.0
    y = np.arange(0.0, Y + h / 2, h)
    vals = integrand(y)
    total = h * (2 * vals.sum(1) - vals[:, 0])
    mag = 2 * h * np.abs(vals).sum(1)  # L1 size of each component: the scale its rounding error is relative to
    while True:
        h /= 2
        y_new = np.arange(h, Y, 2 * h)
        if 2 * (len(y) + len(y_new)) > max_points:
            break
        fresh = integrand(y_new)
        new = total / 2 + 2 * h * fresh.sum(1)
        mag = mag / 2 + 2 * h * np.abs(fresh).sum(1)
        done = np.all(np.abs(new - total) <= rtol * mag + 1e-300)
        total, y = new, np.concatenate([y, y_new])
        if done:
            break
    return lmc, total / (2 * np.pi)


def _logistic_kernel(z):
    """Two-sided Laplace transform of ln(1 + e^{-w}): pi / (z sin(pi z)), valid for -1 < Re z < 0."""
    return np.pi / (z * np.sin(np.pi * z))


def _step_kernel(z):
    """Two-sided Laplace transform of the step 1{w > 0} (Re z > 0), or minus that of 1{w < 0} (Re z < 0): 1/z."""
    return 1.0 / z


def _sigmoid_kernel(z):
    """Two-sided Laplace transform of 1/(1 + e^w) = -l'(w): -pi / sin(pi z), valid for -1 < Re z < 0."""
    return -np.pi / np.sin(np.pi * z)


_KERNELS = {"logistic": _logistic_kernel, "sigmoid": _sigmoid_kernel}


def expected(blocks, fn="logistic", order=0):
    r"""E f(W) for f = ln(1 + e^{-w}) ("logistic") or 1/(1 + e^w) ("sigmoid"), and (order 1, 2) its derivatives
    in the block weights a_k.

    Returns an array [value, d/da_k (K), d^2/da_k da_l (K^2, row-major)] of length 1, 1 + K or 1 + K + K^2: the
    integral along the saddle line c* = argmin_{-1<c<0} M(c) k(c).
    """
    blocks = [b for b in blocks if b[0] != 0 and b[2] > 0] if not order else list(blocks)
    kernel = _KERNELS[fn]
    f = lambda c: log_mgf_real(c, blocks) + np.log(kernel(np.array(c)).real)
    c = _saddle(f, -1 + 1e-9, -1e-9)
    lmc, I = line_integral(blocks, c, kernel, order)
    return np.exp(lmc) * I


def log_tail(blocks, side):
    r"""ln Pr[W > 0] (side = +1) or ln Pr[W < 0] (side = -1) with full relative precision.

    The saddle line is c* = argmin over side*c > 0 of M(c)/|c|; a side whose probability is 0 (W on the other
    side almost surely) returns -inf.
    """
    wmin = sum(n * (min(0.0, a) if g >= 0.5 else -abs(a)) for a, g, n in blocks if a != 0)
    wmax = sum(n * (max(0.0, a) if g >= 0.5 else abs(a)) for a, g, n in blocks if a != 0)
    if (side > 0 and wmax <= 0) or (side < 0 and wmin >= 0):
        return -np.inf
    # bracket the saddle: log M(c) - log|c| is convex on side*c > 0 and -> inf at both ends
    f = lambda c: log_mgf_real(c, blocks) - np.log(abs(c))
    span, cap = 1.0, 1e6 / max(abs(a) for a, _, _ in blocks)  # any c on the side is exact; the saddle conditions it
    while f(side * 2 * span) < f(side * span) and span < cap:
        span *= 2
    c = _saddle(f, *sorted((side * 1e-12 * span, side * 2 * span)))
    lmc, I = line_integral(blocks, c, _step_kernel)
    val = side * I[0]
    return lmc + np.log(val) if val > 0 else -np.inf
