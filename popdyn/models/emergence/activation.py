r"""The truncated ReLU, its Gaussian smoothing and the window ([Shi22] Sections 3.1, 5; docs/emergence.md).

With ``r_s(u) = E relu(u + sZ) = u Phi(u/s) + s phi(u/s)``:

.. math:: \tilde\sigma_s(z) = r_s(z) - r_s(z-1),\qquad \tilde\sigma_s'(z) = \mathrm{win}_s(z)
          = \Phi\big(\tfrac{1-z}{s}\big) - \Phi\big(\tfrac{-z}{s}\big) = \Pr_\xi[z + \xi\in(0, 1)].

``s = 0`` gives the truncated ReLU ``min(1, max(z, 0))`` and the open-interval indicator ``1[0 < z < 1]``
(the paper's derivative convention at the kinks).
"""
from __future__ import annotations


import numpy as np
from scipy.special import erfcx, ndtr

from ..._validate import Interval, check
from ...gaussian import normal_pdf

__all__ = ["trunc_relu", "smooth_trunc_relu", "window", "window_derivs"]


def _s(owner, s):
    return check(owner, "s", s, Interval(0.0, np.inf, "left"))


# 12-point Gauss-Legendre rule on [-1, 1], halved weights (sum 1): the mean of a smooth function over an interval
_GL_X, _GL_W = np.polynomial.legendre.leggauss(12)
_GL_W = _GL_W / 2.0
_SQRT_PI_2 = float(np.sqrt(np.pi / 2.0))
_GL_S = 16.0   # s <= 16: the closed forms lose at most ~s/max(1, |c|) eps to cancellation (< 1e-13): no rule


def _narrow(z, s):
    """Where the interval [(z - 1)/s, z/s] is narrow against the Gaussian's scale there, w (|c| + w) <= 1 with
    w = 1/s and c its midpoint: the closed forms cancel (relative loss ~ s), the Gauss-Legendre mean does not
    (the integrand varies like e^(|c| u) over the width: 12 nodes leave < 1e-20)."""
    w = 1.0 / s
    return w * (np.abs((z - 0.5) * w) + w) <= 1.0


def _gl_mean(f, z, s):
    """Mean of ``f`` over [(z - 1)/s, z/s] (shape of z) by the 12-point rule."""
    c, hw = (z - 0.5) / s, 0.5 / s
    return (f(c[..., None] + hw * _GL_X) * _GL_W).sum(-1)


def _ramp(t):
    """``g(t) = t Phi(t) + phi(t) = E (t + Z)_+`` as ``max(t, 0) + phi(t) (1 - |t| R(|t|))``, R the Mills ratio
    ``sqrt(pi/2) erfcx(|t|/sqrt 2)`` (g(t) - g(-t) = t): no tail of Phi is subtracted from phi (ndtr's relative
    error t^2 eps in the tail, times the cancellation t^2, lost 5e-11 at t = -30)."""
    x = np.abs(t)
    return np.maximum(t, 0.0) + normal_pdf(x) * (1.0 - x * (_SQRT_PI_2 * erfcx(x * 0.7071067811865476)))


def trunc_relu(z):
    r"""The truncated ReLU of the paper.

    .. math:: \sigma(z) = \min(1, \max(z, 0))

    Parameters
    ----------
    z : array_like
        Pre-activations.

    Returns
    -------
    ndarray
        ``sigma(z)`` in [0, 1].

    Notes
    -----
    Regime: any real z.

    References
    ----------
    .. [src] [Shi22, Section 3.1].

    Examples
    --------
    >>> trunc_relu([-1.0, 0.5, 2.0])
    array([0. , 0.5, 1. ])
    """
    return np.clip(np.asarray(z, dtype=np.float64), 0.0, 1.0)


def smooth_trunc_relu(z, s):
    r"""The smoothed truncated ReLU ``sigma~_s(z) = E sigma(z + s xi)``, ``xi ~ N(0, 1)`` (injected noise).

    .. math:: \tilde\sigma_s(z) = r_s(z) - r_s(z - 1),\qquad r_s(u) = u\,\Phi(u/s) + s\,\varphi(u/s)

    Parameters
    ----------
    z : array_like
        Pre-activations.
    s : float
        Noise scale ``sigma_xi >= 0``; ``s = 0`` is the truncated ReLU itself.

    Returns
    -------
    ndarray
        ``sigma~_s(z)`` in [0, 1], with ``sigma~_s(z) + sigma~_s(1 - z) = 1``.

    Notes
    -----
    Regime: any real z and s >= 0. Written on the side of 1/2 where the ramps do not cancel (for z > 1/2 through
    the symmetry ``sigma~_s(z) = 1 - sigma~_s(1 - z)``), each ramp ``g(t) = t Phi(t) + phi(t)`` as
    ``max(t, 0) + phi(t) (1 - |t| R(|t|))`` with the Mills ratio R from ``erfcx``; for s > 16 where the interval
    ``[(z-1)/s, z/s]`` is narrow (``w (|c| + w) <= 1``, w = 1/s, c its midpoint) the ramps agree to ~w and the
    value is the mean of Phi over the interval (12-point Gauss-Legendre).

    Accuracy: relative error <= 1e-12 (absolute 1e-300 where the value is subnormal) for every z and s in
    [1e-8, 1e8] with ``|z|/s, |1 - z|/s <= 2e5`` (beyond, ``gaussian.normal_pdf``'s known nan); the error grows
    like ``t^2 eps`` in the tail ``t = z/s -> -38`` (the rounding of t itself). Measured: 0.42 of the bound (at
    z/s = -32; tests/test_accuracy_emergence.py, mpmath at 60 digits). Before: 5e-11 relative at z/s = -30
    (ndtr's tail times the ramps' t^2 cancellation), 2e-10 at s = 1e6 and 3e-7 at s = 1e10 (the ramps cancel to
    1/s).

    References
    ----------
    .. [src] [Shi22, Section 3.1, eq. (3)]; the closed form derived in docs/emergence.md.

    Examples
    --------
    >>> float(smooth_trunc_relu(0.5, 0.3))
    0.5
    """
    s = _s("emergence.smooth_trunc_relu", s)
    z = np.asarray(z, dtype=np.float64)
    if s == 0.0:
        return trunc_relu(z)

    def low(u):   # sigma~_s(u) = s (g(u/s) - g((u-1)/s)), accurate for u <= 1/2
        return s * (_ramp(u / s) - _ramp((u - 1.0) / s))
    u = np.minimum(z, 1.0 - z)   # sigma~_s(z) = 1 - sigma~_s(1 - z)
    out = low(u)
    if s > _GL_S:   # large smoothing: the two ramps agree to ~1/s, average Phi over the narrow interval instead
        nar = _narrow(u, s)
        if np.any(nar):
            out = np.where(nar, 0.0, out)
            out[nar] = _gl_mean(ndtr, u[nar], s) if out.ndim else _gl_mean(ndtr, u, s)
    return np.where(z <= 0.5, out, 1.0 - out)


def window(z, s):
    r"""The window ``win_s(z) = P(z + s xi in (0, 1))``, the derivative of :func:`smooth_trunc_relu`.

    .. math:: \mathrm{win}_s(z) = \Phi\Big(\frac{1-z}{s}\Big) - \Phi\Big(\frac{-z}{s}\Big)

    Parameters
    ----------
    z : array_like
        Pre-activations.
    s : float
        Noise scale ``s >= 0``; ``s = 0`` is the indicator of the open interval (0, 1).

    Returns
    -------
    ndarray
        Values in [0, 1], symmetric: ``win_s(z) = win_s(1 - z)``.

    Notes
    -----
    Regime: any real z and s >= 0. Evaluated as ``Phi(z/s) - Phi((z-1)/s)`` for z < 1/2 so that neither tail
    cancels; for s > 16 where the interval ``[(z-1)/s, z/s]`` is narrow (``w (|c| + w) <= 1``, w = 1/s, c its
    midpoint) the difference cancels to ~w and phi is integrated over the interval instead (12-point
    Gauss-Legendre, error < 1e-20 relative).

    Accuracy: relative error <= 1e-12 (absolute 1e-300 where the value is subnormal) for every z and s in
    [1e-8, 1e8] with ``|z|/s, |1 - z|/s <= 2e5``. Measured: 0.24 of the bound (in the tail z/s = -32,
    ndtr's own ``t^2 eps``; tests/test_accuracy_emergence.py, mpmath at 60 digits). Before: 1.5e-10 relative at
    s = 1e6 and 8e-7 at s = 1e10 (the difference of two values near 1/2).

    References
    ----------
    .. [src] [Shi22, Lemma 12 (App. B.3)].

    Examples
    --------
    >>> window([-1.0, 0.5, 2.0], 0.0)
    array([0., 1., 0.])
    """
    s = _s("emergence.window", s)
    z = np.asarray(z, dtype=np.float64)
    if s == 0.0:
        return ((z > 0.0) & (z < 1.0)).astype(np.float64)
    out = np.where(z < 0.5, ndtr(z / s) - ndtr((z - 1.0) / s), ndtr((1.0 - z) / s) - ndtr(-z / s))
    if s > _GL_S:   # large smoothing: Phi(z/s) - Phi((z-1)/s) cancels to ~1/s, integrate phi over the interval
        nar = _narrow(z, s)
        if np.any(nar):
            if out.ndim:
                out[nar] = _gl_mean(normal_pdf, z[nar], s) / s
            else:
                out = _gl_mean(normal_pdf, z, s) / s
    return out


def window_derivs(b, s):
    r"""The window ``h(b) = win_s(b)`` and its first two derivatives (used by the step-2 expansion).

    .. math:: h(b) = \Phi\Big(\tfrac{1-b}{s}\Big) - \Phi\Big(\tfrac{-b}{s}\Big),\quad
              h'(b) = \frac{\varphi(b/s) - \varphi((1-b)/s)}{s},\quad
              h''(b) = \frac{-\frac bs\varphi(\frac bs) - \frac{1-b}{s}\varphi(\frac{1-b}{s})}{s^2}

    Parameters
    ----------
    b : array_like
        Biases (or any pre-activation).
    s : float
        Noise scale, ``s > 0``.

    Returns
    -------
    h, h1, h2 : ndarray
        ``h(b)``, ``h'(b)``, ``h''(b)``, each of the shape of ``b``.

    Notes
    -----
    Regime: s > 0 (at s = 0 the derivatives are Dirac masses). ``h'`` as ``phi(u0) (1 - e^-x)`` (or
    ``phi(u1) (e^x - 1)``), ``x = (1 - 2b)/(2 s^2)`` on the side where the exponent is <= 0: no cancellation near
    b = 1/2 nor at large s.

    Accuracy: h and h' relative error <= 1e-12 (absolute 1e-300 where subnormal); h'' (which has roots outside
    [0, 1]) absolute <= 1e-12 ``(|u0| phi(u0) + |u1| phi(u1)) / s^2``; for every b and s in [1e-8, 1e8] with
    ``|b|/s, |1 - b|/s <= 2e5``. Measured: 0.24 (h, h') and 0.10 (h'') of the bounds
    (tests/test_accuracy_emergence.py, mpmath at 60 digits). Before: h' 6e-7 relative off at s = 1e3, b = 0.4999,
    and every digit lost at s = 1e6 (``phi(u0) - phi(u1)`` of two equal values).

    References
    ----------
    .. [src] derived in docs/emergence.md.

    Examples
    --------
    >>> h, h1, h2 = window_derivs(0.5, 0.2)
    >>> float(h1)
    0.0
    """
    s = check("emergence.window_derivs", "s", s, Interval(0.0, np.inf, "neither"))
    b = np.asarray(b, dtype=np.float64)
    u0, u1 = b / s, (1.0 - b) / s
    p0, p1 = normal_pdf(u0), normal_pdf(u1)
    # phi(u0) - phi(u1) = phi(u0) (1 - e^(-x)), x = (u1^2 - u0^2)/2 = (1 - 2b)/(2 s^2), on the side where x >= 0
    # (else phi(u1) (e^x - 1)): no cancellation near b = 1/2 or at large s (before: 1 - 6e-7 relative at s = 1e3)
    x = (1.0 - 2.0 * b) / s / (2.0 * s)
    h1 = np.where(x >= 0.0, -p0 * np.expm1(-np.abs(x)), p1 * np.expm1(-np.abs(x))) / s
    return window(b, s), h1, (-u0 * p0 - u1 * p1) / (s * s)
