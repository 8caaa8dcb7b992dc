r"""The truncated ReLU, its Gaussian smoothing and the window ([Shi22] Sections 3.1, 5; docs/emergence.md).

With ``r_s(u) = E relu(u + sZ) = u Phi(u/s) + s phi(u/s)``:

.. math:: \tilde\sigma_s(z) = r_s(z) - r_s(z-1),\qquad \tilde\sigma_s'(z) = \mathrm{win}_s(z)
          = \Phi\big(\tfrac{1-z}{s}\big) - \Phi\big(\tfrac{-z}{s}\big) = \Pr_\xi[z + \xi\in(0, 1)].

``s = 0`` gives the truncated ReLU ``min(1, max(z, 0))`` and the open-interval indicator ``1[0 < z < 1]``
(the paper's derivative convention at the kinks).
"""
from __future__ import annotations


import numpy as np
from scipy.special import ndtr

from ..._validate import Interval, check
from ...gaussian import normal_pdf

__all__ = ["trunc_relu", "smooth_trunc_relu", "window", "window_derivs"]


def _s(owner, s):
    return check(owner, "s", s, Interval(0.0, np.inf, "left"))


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
    Regime: any real z and s >= 0. Written on the side of 1/2 where ``r_s`` does not cancel (for z > 1/2 through
    the symmetry ``sigma~_s(z) = 1 - sigma~_s(1 - z)``), so the absolute error is ~1e-16.

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

    def low(u):   # sigma~_s(u), accurate for u <= 1/2
        return u * ndtr(u / s) + s * normal_pdf(u / s) - ((u - 1.0) * ndtr((u - 1.0) / s) + s * normal_pdf((u - 1.0) / s))
    return np.where(z <= 0.5, low(np.minimum(z, 0.5)), 1.0 - low(np.minimum(1.0 - z, 0.5)))


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
    cancels.

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
    return np.where(z < 0.5, ndtr(z / s) - ndtr((z - 1.0) / s), ndtr((1.0 - z) / s) - ndtr(-z / s))


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
    Regime: s > 0 (at s = 0 the derivatives are Dirac masses).

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
    return window(b, s), (normal_pdf(u0) - normal_pdf(u1)) / s, (-u0 * normal_pdf(u0) - u1 * normal_pdf(u1)) / (s * s)
