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

import warnings

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import gammaln

__all__ = []

_SMALL = 0.1  # |t| below which the series of the derivatives of log M_U are used (truncation < 1e-19)
_EPS = np.finfo(float).eps
_TARGET = 1e-13    # relative accuracy a contour integral aims at; beyond it a sign mixture is split by sign count
_DECLARED = 1e-12  # relative accuracy the public functions declare: beyond it a RuntimeWarning states what was reached


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


def line_integral(blocks, c, kernel, order=0, rtol=_TARGET, max_points=2 ** 20):
    r"""(1/2 pi) int Re[M(c + iy) k(c + iy) X(c + iy)] dy / M(c) over y in R by the trapezoidal rule with step halving.

    ``X`` is 1, or (order 1) the stack [1, dlogM/da_k], or (order 2) [1, dlogM/da_k, (d^2M/da_k da_l)/M]. Returns
    (log M(c), integral / M(c), err / M(c)) with the integral an array of length 1, 1 + K or 1 + K + K^2 and err its
    estimated absolute error per component: the last halving's change plus the rounding floor
    8 eps int |f| (1 + |log M - log M(c)|) (the sum's rounding and the phase of exp(log M)). Halving stops when the
    change is below rtol |integral| or below that floor: where the integral cancels (its L1 size far above its value,
    as for a sign mixture of tiny weight), err / |integral| is what was reached.
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
        return (np.exp(lm - lmc) * kernel(z) * X).real, np.abs(lm - lmc)

    def parts(y):
        vals, phase = integrand(y)
        return vals, np.abs(vals) * (1 + phase)

    # truncation: grow Y geometrically until the integrand (first component) is negligible
    f0 = abs(integrand(np.zeros(1))[0][0, 0])
    Y = 8.0 * width
    while abs(integrand(np.array([Y]))[0][0, 0]) > 1e-20 * f0 or \
            abs(integrand(np.array([1.5 * Y]))[0][0, 0]) > 1e-20 * f0:
        Y *= 2.0
        if Y > max_points * width:
            break
    h = width / 2.0
    y = np.arange(0.0, Y + h / 2, h)
    vals, size = parts(y)
    total = h * (2 * vals.sum(1) - vals[:, 0])
    mag = 2 * h * size.sum(1)  # L1 size of each component, phase-weighted: the scale its rounding is relative to
    change = np.full_like(total, np.inf)
    while True:
        h /= 2
        y_new = np.arange(h, Y, 2 * h)
        if 2 * (len(y) + len(y_new)) > max_points:
            break
        fresh, size = parts(y_new)
        new = total / 2 + 2 * h * fresh.sum(1)
        mag = mag / 2 + 2 * h * size.sum(1)
        change = np.abs(new - total)
        total, y = new, np.concatenate([y, y_new])
        if np.all(change <= np.maximum(rtol * np.abs(total), 8 * _EPS * mag) + 1e-300):
            break
    return lmc, total / (2 * np.pi), (change + 8 * _EPS * mag) / (2 * np.pi)


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


def _mixture(blocks):
    """Index of the block whose coordinates are a sign mixture (|g| < 1/2, a != 0, n >= 1) when there is exactly
    one (the symmetric weights of the model); None otherwise (splitting m one-coordinate blocks costs 2^m)."""
    mixed = [i for i, (a, g, n) in enumerate(blocks) if abs(g) < 0.5 and a != 0 and n >= 1]
    return mixed[0] if len(mixed) == 1 else None


def _sign_counts(g, n):
    """(K, log w_K) for K negative signs among n D_g coordinates, most probable first: w_K = C(n, K) p^(n-K) q^K."""
    p, q = 0.5 + g, 0.5 - g
    K = np.arange(n + 1)
    logw = gammaln(n + 1) - gammaln(K + 1) - gammaln(n - K + 1) + (n - K) * np.log(p) + K * np.log(q)
    order = np.argsort(-logw, kind="stable")
    return K[order], logw[order]


def _split_blocks(blocks, i, K):
    """blocks with block i, n D_g coordinates of weight a, conditioned on K negative signs: n - K coordinates
    U[0, 1] of weight a (in place) and K of weight -a (appended)."""
    a, _, n = blocks[i]
    return blocks[:i] + [(a, 0.5, n - K)] + blocks[i + 1:] + [(-a, 0.5, K)]


def _warn(what, rel):
    warnings.warn(f"domain_gen: {what} is accurate to about {rel:.1g} relative only (declared {_DECLARED:g}): the "
                  "contour integral cancels", RuntimeWarning, stacklevel=4)


def _expected(blocks, fn, order):
    """(E f(W) and its derivatives, their achieved relative error): the saddle-line integral; where it cancels past
    _TARGET and a block is a sign mixture, the sum over its sign counts of the conditional integrals instead."""
    blocks = [b for b in blocks if b[0] != 0 and b[2] > 0] if not order else list(blocks)
    kernel = _KERNELS[fn]
    f = lambda c: log_mgf_real(c, blocks) + np.log(kernel(np.array(c)).real)
    c = _saddle(f, -1 + 1e-9, -1e-9)
    lmc, I, err = line_integral(blocks, c, kernel, order)
    rel = float(err[0] / abs(I[0])) if I[0] != 0 else np.inf
    i = _mixture(blocks)
    if rel <= _TARGET or i is None:
        return np.exp(lmc) * I, rel
    # E f(W) = sum_K w_K E f(W_K); bound every component by B to stop once the weights left cannot matter
    nk = sum(n for _, _, n in blocks)
    B = np.log(2) + sum(abs(a) * n for a, _, n in blocks) + nk + nk * nk
    Ks, logw = _sign_counts(blocks[i][1], blocks[i][2])
    left = np.cumsum(np.exp(logw)[::-1])[::-1]  # weight of this count and all less probable ones
    total, err = 0.0, 0.0
    for K, lw, rest in zip(Ks, logw, left):
        if rest * B <= 1e-17 * abs(np.ravel(total)[0]):
            break
        sub = _split_blocks(list(blocks), i, int(K))
        v, r = _expected(sub, fn, order)
        if order:  # back to the original weights: a_i appears as +a (block i) and -a (the appended block)
            k = len(blocks)
            J = np.vstack([np.eye(k), -np.eye(k)[i]])
            out = [v[:1], J.T @ v[1:k + 2]]
            if order == 2:
                out.append((J.T @ v[k + 2:].reshape(k + 1, k + 1) @ J).ravel())
            v = np.concatenate(out)
        total = total + np.exp(lw) * v
        err += np.exp(lw) * r * abs(v[0])
    return total, float(err / abs(np.ravel(total)[0])) if np.ravel(total)[0] != 0 else np.inf


def expected(blocks, fn="logistic", order=0):
    r"""E f(W) for f = ln(1 + e^{-w}) ("logistic") or 1/(1 + e^w) ("sigmoid"), and (order 1, 2) its derivatives
    in the block weights a_k.

    Returns an array [value, d/da_k (K), d^2/da_k da_l (K^2, row-major)] of length 1, 1 + K or 1 + K + K^2: the
    integral along the saddle line c* = argmin_{-1<c<0} M(c) k(c). Where that integral cancels (a sign mixture with
    a tiny weight: |g| near 1/2) beyond relative 1e-13, the mixture block is conditioned on its number of negative
    signs and the conditional integrals are summed; a RuntimeWarning states the accuracy reached if it stays above
    1e-12.
    """
    v, rel = _expected(list(blocks), fn, order)
    if rel > _DECLARED:
        _warn("E f(W)", rel)
    return v


def _log_tail(blocks, side):
    """(ln Pr[side W > 0], its achieved relative error) of :func:`log_tail`."""
    wmin = sum(n * (min(0.0, a) if g >= 0.5 else -abs(a)) for a, g, n in blocks if a != 0)
    wmax = sum(n * (max(0.0, a) if g >= 0.5 else abs(a)) for a, g, n in blocks if a != 0)
    if (side > 0 and wmax <= 0) or (side < 0 and wmin >= 0):
        return -np.inf, 0.0
    # bracket the saddle: log M(c) - log|c| is convex on side*c > 0 and -> inf at both ends
    f = lambda c: log_mgf_real(c, blocks) - np.log(abs(c))
    # any c on the side is exact; the saddle conditions it. It lies near n/|a| of the smallest weights (c |a| = O(n)),
    # so the bracket may grow to 1e6 / min |a| (capping at 1e6 / max |a| left the line off the saddle and the integral
    # cancelling to 4e-9 relative for weights 1.6e5 apart)
    span, cap = 1.0, 1e6 / min(abs(a) for a, _, _ in blocks)
    while f(side * 2 * span) < f(side * span) and span < cap:
        span *= 2
    c = _saddle(f, *sorted((side * 1e-12 * span, side * 2 * span)))
    lmc, I, err = line_integral(blocks, c, _step_kernel)
    val = side * I[0]
    rel = float(err[0] / val) if val > 0 else np.inf
    i = _mixture(blocks)
    if rel <= _TARGET or i is None:
        return (lmc + np.log(val) if val > 0 else -np.inf), rel
    # Pr = sum_K w_K Pr_K over the sign counts of the mixture block, summed in logs (stop when the rest cannot matter)
    Ks, logw = _sign_counts(blocks[i][1], blocks[i][2])
    left = np.logaddexp.accumulate(logw[::-1])[::-1]  # log weight of this count and all less probable ones
    terms, errs = [], []
    for K, lw, rest in zip(Ks, logw, left):
        if terms and rest <= np.logaddexp.reduce(terms) + np.log(1e-17):
            break
        sub = [b for b in _split_blocks(list(blocks), i, int(K)) if b[0] != 0 and b[2] > 0]
        lp, r = _log_tail(sub, side) if sub else (-np.inf, 0.0)
        if lp > -np.inf:
            terms.append(lw + lp)
            errs.append(r)
    if not terms:
        return -np.inf, 0.0
    total = np.logaddexp.reduce(terms)
    return total, float(np.sum(np.exp(np.array(terms) - total) * np.array(errs)))


def log_tail(blocks, side):
    r"""ln Pr[W > 0] (side = +1) or ln Pr[W < 0] (side = -1) with full relative precision.

    The saddle line is c* = argmin over side*c > 0 of M(c)/|c|; a side whose probability is 0 (W on the other
    side almost surely) returns -inf. Where the integral cancels (a sign mixture with a tiny weight) beyond relative
    1e-13 the mixture block is conditioned on its number of negative signs; a RuntimeWarning states the accuracy
    reached if it stays above 1e-12.
    """
    lp, rel = _log_tail(list(blocks), side)
    if rel > _DECLARED:
        _warn("Pr[W > 0]" if side > 0 else "Pr[W < 0]", rel)
    return lp
