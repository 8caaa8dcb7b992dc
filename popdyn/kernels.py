r"""NNGP and NTK of fully-connected networks of any depth at infinite width, as Neural Tangents computes them.

:func:`fc` returns an :class:`FC` whose ``nngp(X, Y)`` and ``ntk(X, Y)`` equal Neural Tangents' ``kernel_fn(X, Y)``
of ``stax.serial(Dense(w, W_std, b_std), act, ..., Dense(w, W_std, b_std), act, Dense(1, W_std, b_std))`` (``depth``
hidden Dense + act pairs), and whose ``profile(d)`` is the Hamming profile on {±1}^d that
:func:`popdyn.models.resnet.hypercube.level_eigenvalues` takes.

.. math:: K^{l+1} = \sigma_w^2\,\mathbb E[\phi(u)\phi(v)] + \sigma_b^2,\qquad
          \Theta^{l+1} = K^{l+1} + \sigma_w^2\,\mathbb E[\phi'(u)\phi'(v)]\,\Theta^l,\qquad
          (u, v) \sim N\Big(0, \begin{pmatrix}K^l_{xx} & K^l_{xy}\\ K^l_{xy} & K^l_{yy}\end{pmatrix}\Big)

Closed-form dual activations (Neural Tangents' ``ABRelu``, ``Erf``, ``Sign``, ``Exp``, ``Sin``, ``Gelu``) where they
exist; any other :class:`popdyn.activations.Activation` through its Hermite series with a certified tail bound.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import activations, hermite
from ._exact import det2, two_prod as _two_prod
from ._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, check
from .gaussian import _J1_TAYLOR

__all__ = ["fc", "FC"]

_EPS = np.finfo(np.float64).eps
_SERIES_DEGREES = (32, 64, 128, 256, 512, 1024, 2048)
_DEFICIT_TOL = 1e-12     # a series stops growing once its Parseval deficit is below this share of E phi^2
_TOL = 1e-10             # the series path refuses a layer whose error bound exceeds this share of the scale
_CENTRAL_DIFF = 5e-10    # relative error of Activation.from_callable's default derivative (step 1e-6 * max(1, |z|))


@dataclass(frozen=True)
class _Dual:
    """T = E phi(u) phi(v) and Tdot = E phi'(u) phi'(v) for the covariance [[kxx, kxy], [kxy, kyy]].

    ``cross(kx, ky, kxy, det, with_dot)``: kx (N,), ky (M,), kxy and its determinant kxx kyy - kxy^2 (N, M; None:
    from the entries) -> (T, Tdot or None, gap or None), gap = (Txx Tyy - Txy^2, Txx + Tyy - 2 Txy) where the map
    has a square-root singularity at rho = +-1 (then the next layer's determinant is carried, not recomputed);
    ``diag(k, with_dot)``: (T, Tdot) at x = y, elementwise; ``kinked``: whether the map has a square-root
    singularity at rho = +-1 (a kink of phi or phi'), so that the first layer's determinant is taken from the inputs.
    """
    cross: Callable
    diag: Callable
    kinked: bool = False


def _geometry(kxx, kyy, kxy, det):
    """n = sqrt(kxx kyy) (= k exactly when kxx = kyy = k), the determinant (given, or from the entries), the angle
    theta = arccos(rho) and its complement delta = pi - theta, both atan2(sqrt(det), +-kxy), accurate at rho = +-1
    (pi/2 where a variance is 0, Neural Tangents' fill value)."""
    kxx, kyy, kxy = np.broadcast_arrays(*(np.asarray(k, dtype=np.float64) for k in (kxx, kyy, kxy)))
    det = det2(kxx, kyy, kxy) if det is None else det
    n, root = np.sqrt(kxx * kyy), np.sqrt(det)
    theta = np.where(n > 0, np.arctan2(root, kxy), 0.5 * np.pi)
    delta = np.where(n > 0, np.arctan2(root, -kxy), 0.5 * np.pi)
    return n, det, theta, delta


def _j1(a):
    """sin a - a cos a for a in [0, pi], by its Taylor series below pi/2 (where it cancels)."""
    series = a ** 3 * np.polynomial.polynomial.polyval(a * a, _J1_TAYLOR)
    return np.where(a < 0.5 * np.pi, series, np.sin(a) - a * np.cos(a))


def _sums(kxx, kyy, kxy, n, det):
    """Var(u - v) and Var(u + v) as (sx - sy)^2 + 2 (n -+ kxy), with n -+ kxy = det / (n +- kxy) where it cancels."""
    d2 = (np.sqrt(kxx) - np.sqrt(kyy)) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        minus = np.where(kxy > 0, det / (n + kxy), n - kxy)
        plus = np.where(kxy < 0, det / (n - kxy), n + kxy)
    return d2 + 2.0 * minus, d2 + 2.0 * plus


def _elementwise(pair, kinked=False):
    """A _Dual from a function of broadcastable (kxx, kyy, kxy, det): the diagonal is the same function at x = y."""
    return _Dual(lambda kx, ky, kxy, det, with_dot: pair(kx[:, None], ky[None, :], kxy, det, with_dot),
                 lambda k, with_dot: pair(k, k, k, np.zeros_like(k), with_dot)[:2], kinked)


def _abrelu(a, b):
    """phi = a min(x, 0) + b max(x, 0) = b relu(x) - a relu(-x), J_1 = sin - id cos (Cho & Saul's kernels):
    T = n g(theta), 2 pi g(theta) = (a^2 + b^2) J_1(pi - theta) - 2ab J_1(theta), 2 pi Tdot = (a^2 + b^2)(pi - theta)
    + 2ab theta; the gap from g(0) -+ g(theta), each written without cancellation on either side of pi/2."""
    s2, ab, dif2, sum2 = a * a + b * b, a * b, (a - b) ** 2, (a + b) ** 2

    def pair(kxx, kyy, kxy, det, with_dot):
        n, det, theta, delta = _geometry(kxx, kyy, kxy, det)
        j_t, j_d = _j1(theta), _j1(delta)
        t = n * (s2 * j_d - 2 * ab * j_t) / (2 * np.pi)
        dot = (s2 * delta + 2 * ab * theta) / (2 * np.pi) if with_dot else None
        small = theta <= 0.5 * np.pi
        sin_t, sin_d = np.sin(0.5 * theta) ** 2, np.sin(0.5 * delta) ** 2
        minus = np.where(small, 2 * np.pi * s2 * sin_t - dif2 * j_t, np.pi * sum2 - 4 * np.pi * ab * sin_d - dif2 * j_d)
        plus = np.where(small, np.pi * s2 + s2 * j_d - 2 * ab * j_t, np.pi * dif2 + dif2 * j_d + 4 * np.pi * ab * sin_d)
        minus, plus = minus / (2 * np.pi), plus / (2 * np.pi)
        d2 = (np.sqrt(kxx) - np.sqrt(kyy)) ** 2
        return t, dot, (n * n * minus * plus, 0.5 * s2 * d2 + 2 * n * minus)
    return _elementwise(pair, kinked=True)


def _identity():
    """phi = x: T = kxy, Tdot = 1."""
    def pair(kxx, kyy, kxy, det, with_dot):
        t = np.array(np.broadcast_arrays(kxx, kyy, kxy)[2], dtype=np.float64)
        return t, (np.ones_like(t) if with_dot else None), None
    return _elementwise(pair)


def _erf(a, b, c):
    """phi = a erf(b x) + c: T = a^2 (2/pi) atan2(2 b^2 kxy, sqrt(D)) + c^2, Tdot = a^2 b^2 (4/pi) / sqrt(D),
    D = (1 + 2 b^2 kxx)(1 + 2 b^2 kyy) - 4 b^4 kxy^2 = 1 + 2 b^2 (kxx + kyy) + 4 b^4 det."""
    a2, b2, c2 = a * a, b * b, c * c

    def pair(kxx, kyy, kxy, det, with_dot):
        _, det, _, _ = _geometry(kxx, kyy, kxy, det)
        root = np.sqrt(1.0 + 2.0 * b2 * (kxx + kyy) + 4.0 * b2 * b2 * det)
        t = a2 * (2 / np.pi) * np.arctan2(2.0 * b2 * kxy, root) + c2
        return t, (a2 * b2 * (4 / np.pi) / root if with_dot else None), None
    return _elementwise(pair)


def _sign():
    """phi = sign(x): T = (2/pi) arcsin(rho) = 1 - 2 theta/pi; Tdot = 0 (phi' = 0 a.e.); gap (4/pi^2) theta delta,
    (4/pi) theta (T = 0 where a variance is 0)."""
    def pair(kxx, kyy, kxy, det, with_dot):
        n, det, theta, delta = _geometry(kxx, kyy, kxy, det)
        pos = n > 0
        t = np.where(pos, (2 / np.pi) * np.arctan2(kxy, np.sqrt(det)), 0.0)
        gap = (np.where(pos, 4 / np.pi**2 * theta * delta, 0.0),
               np.where(pos, 4 / np.pi * theta, (kxx > 0) + (kyy > 0.0)))
        return t, (np.zeros_like(t) if with_dot else None), gap
    return _elementwise(pair, kinked=True)


def _exp(a, b):
    """phi = a exp(b x): T = a^2 exp(b^2 Var(u + v) / 2), Tdot = b^2 T."""
    a2, b2 = a * a, b * b

    def pair(kxx, kyy, kxy, det, with_dot):
        n, det, _, _ = _geometry(kxx, kyy, kxy, det)
        t = a2 * np.exp(0.5 * b2 * _sums(kxx, kyy, kxy, n, det)[1])
        return t, (b2 * t if with_dot else None), None
    return _elementwise(pair)


def _sin(a, b, sin2, cos2):
    """phi = a sin(b x + c): T = (a^2/2)(s_- - cos(2c) s_+), Tdot = (a^2 b^2/2)(s_- + cos(2c) s_+),
    s_-+ = exp(-b^2 Var(u -+ v) / 2); cos is sin with c + pi/2 (sin^2 c and cos^2 c swap). Written without
    cancellation, with s_- - s_+ = -s_- expm1(-2 b^2 K_xy) and 1 -+ cos(2c) = 2 sin^2 c, 2 cos^2 c:
    T = (a^2/2)(-s_- expm1(-2 b^2 K_xy) + 2 sin^2(c) s_+), Tdot = (a^2 b^2/2)(-s_- expm1(-2 b^2 K_xy) + 2 cos^2(c) s_+)
    (the plain difference lost all digits of T where b^2 K is small: T ~ a^2 b^2 K_xy from two terms near a^2/2)."""
    h, b2 = 0.5 * a * a, b * b

    def pair(kxx, kyy, kxy, det, with_dot):
        n, det, _, _ = _geometry(kxx, kyy, kxy, det)
        var_minus, var_plus = _sums(kxx, kyy, kxy, n, det)
        s_minus = np.exp(-0.5 * b2 * var_minus)
        s_plus = np.exp(-0.5 * b2 * var_plus)
        odd = -s_minus * np.expm1(-2.0 * b2 * kxy)                 # s_- - s_+
        return (h * (odd + 2.0 * sin2 * s_plus), (h * b2 * (odd + 2.0 * cos2 * s_plus) if with_dot else None),
                None)
    return _elementwise(pair)


def _gelu():
    """phi = x Phi(x) (exact GELU), Neural Tangents' closed form with delta^2 = (kxx + 1)(kyy + 1) - kxy^2 written
    as 1 + kxx + kyy + det (no cancellation)."""
    def pair(kxx, kyy, kxy, det, with_dot):
        _, det, _, _ = _geometry(kxx, kyy, kxy, det)
        p1 = (kxx + 1.0) * (kyy + 1.0)
        delta2 = 1.0 + kxx + kyy + det
        delta = np.sqrt(delta2)
        angle = np.arctan2(kxy, delta)
        t = ((kxy * kxy + kxx * kyy * delta2) / (p1 * delta) + kxy * angle) / (2 * np.pi) + 0.25 * kxy
        dot = None
        if with_dot:
            dot = 0.25 + angle / (2 * np.pi) + kxy / (2 * np.pi * delta) * (1.0 / delta2 + (1.0 - kxx * kyy) / p1 + 1.0)
        return t, dot, None
    return _elementwise(pair)


def _rescaled(dual, r):
    """phi(r x): T_r(k) = T(r^2 k), Tdot_r(k) = r^2 Tdot(r^2 k); the gap is T's (det scales by r^4)."""
    if r == 1.0:
        return dual
    r2 = r * r

    def scale(out):
        return (out[0], None if out[1] is None else r2 * out[1]) + tuple(out[2:])
    return _Dual(lambda kx, ky, kxy, det, with_dot: scale(dual.cross(r2 * kx, r2 * ky, r2 * kxy,
                                                                     None if det is None else r2 * r2 * det, with_dot)),
                 lambda k, with_dot: scale(dual.diag(r2 * k, with_dot)), dual.kinked)


# --------------------------------------------------------------------------- Hermite-series duals

def _kinks(act, s):
    return () if s == 0.0 else tuple(k / (act.r * s) for k in act._family.kinks)


def _central(act):
    """Whether act's derivative is from_callable's central difference (relative error ~_CENTRAL_DIFF)."""
    return getattr(act._family.deriv, "__qualname__", "").startswith("_central_difference.")


@functools.lru_cache(maxsize=4096)
def _moment(act, s2, deriv):
    """E g(s z)^2 (g = phi or phi') by quadrature on panels narrowed (through kmax) until the estimate is below
    1e-15 of it, and its error: max(2 estimate, 4e-15 (E g^4)^(1/2))."""
    s = math.sqrt(s2)
    g = act.deriv if deriv else act
    m4, _ = hermite.hermite_coeffs_quad(lambda z: g(s * z) ** 4, 0, _kinks(act, s))
    for kmax in (0, 63, 255, 1023):
        m2, err = hermite.hermite_coeffs_quad(lambda z: g(s * z) ** 2, kmax, _kinks(act, s))
        if err <= 1e-15 * m2[0]:
            break
    return float(m2[0]), max(2 * err, 4e-15 * math.sqrt(max(m4[0], 0.0)))


@functools.lru_cache(maxsize=4096)
def _hermite(act, s2, P, deriv):
    """Coefficients c_0..c_P of g(s z) in h_p (g = phi or phi'), the rms m = (E g^2)^(1/2), an upper bound on the
    Parseval deficit sum_{p>P} c_p^2 and the coefficients' absolute error."""
    s = math.sqrt(s2)
    g = act.deriv if deriv else act
    c, err = hermite.hermite_coeffs_quad(lambda z: g(s * z), P, _kinks(act, s))
    m2, err_m2 = _moment(act, s2, deriv)
    m = math.sqrt(max(m2, 0.0))
    e = max(2 * err, 4e-15 * m) + (_CENTRAL_DIFF * m if deriv and _central(act) else 0.0)
    deficit = max(m2 - math.fsum(c * c), 0.0) + (P + 2) * _EPS * m2 + 2 * e * math.sqrt(P + 1) * m + err_m2
    c.setflags(write=False)
    return c, m, deficit, e


@functools.lru_cache(maxsize=4096)
def _degree(act, s2, deriv):
    """The first degree of _SERIES_DEGREES whose deficit is below _DEFICIT_TOL E g^2 (else the last)."""
    for P in _SERIES_DEGREES:
        _, m, deficit, _ = _hermite(act, s2, P, deriv)
        if deficit <= _DEFICIT_TOL * m * m:
            break
    return P


def _pair_series(act, s2, ix, iy, rho, deriv):
    """sum_p c_p(x) c_p(y) rho^p by Horner, its error bound and its scale m_x m_y (rows ix, columns iy of s2)."""
    P = max(_degree(act, float(v), deriv) for v in s2)
    data = [_hermite(act, float(v), P, deriv) for v in s2]
    C = np.stack([d[0] for d in data])
    m, D, e = (np.array([d[k] for d in data]) for k in (1, 2, 3))
    Cx, Cy = C[ix], C[iy]
    acc = np.zeros(rho.shape)
    for p in range(P, -1, -1):
        acc = acc * rho + Cx[:, p, None] * Cy[None, :, p]
    mx, my = m[ix][:, None], m[iy][None, :]
    bound = (np.abs(rho) ** (P + 1) * np.sqrt(D[ix][:, None] * D[iy][None, :])
             + math.sqrt(P + 1) * (e[ix][:, None] * my + mx * e[iy][None, :]) + 2 * (P + 1) * _EPS * mx * my)
    return acc, bound, mx * my, P


def _series(act):
    """T = sum_p c_p(s_x) c_p(s_y) rho^p with c_p(s) the Hermite coefficients of phi(s z) (phi' for Tdot); at
    rho = 1 with equal variances the second moment itself."""
    def cross(kx, ky, kxy, det, with_dot):
        s2, inv = np.unique(np.concatenate([kx, ky]), return_inverse=True)
        ix, iy = inv[:kx.size], inv[kx.size:]
        n, det, _, _ = _geometry(kx[:, None], ky[None, :], kxy, det)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.where(n > 0, np.clip(kxy / n, -1.0, 1.0), 0.0)
        same = (det == 0.0) & (kxy > 0) & (kx[:, None] == ky[None, :])
        out = []
        for deriv in ((False, True) if with_dot else (False,)):
            val, bound, scale, P = _pair_series(act, s2, ix, iy, rho, deriv)
            bad = (bound > _TOL * scale) & ~same
            if np.any(bad):
                i, j = np.argwhere(bad)[0]
                knob = (" (pass deriv= to Activation.from_callable)" if deriv and _central(act)
                        else "; use a closed-form activation or smaller variances (W_std, b_std, input norms)")
                raise RuntimeError(
                    f"kernels.fc: the Hermite series of {act.name}{' (derivative)' if deriv else ''} reaches only "
                    f"{bound[i, j] / scale[i, j]:.2g} relative accuracy (degree {P}) at correlation "
                    f"{rho[i, j]!r} with variances {kx[i]!r}, {ky[j]!r}, above {_TOL:g}{knob}.")
            m2 = np.array([_moment(act, float(v), deriv)[0] for v in s2])
            out.append(np.where(same, m2[ix][:, None], val))
        return out[0], (out[1] if with_dot else None), None

    def diag(k, with_dot):
        m2 = [np.array([_moment(act, float(v), deriv)[0] for v in np.ravel(k)]).reshape(np.shape(k))
              for deriv in ((False, True) if with_dot else (False,))]
        return m2[0], (m2[1] if with_dot else None)
    return _Dual(cross, diag)


# --------------------------------------------------------------------------- activations by name

_REAL = Interval(-np.inf, np.inf, "neither")
_NAMED = {   # name: (parameters and defaults, builder of the _Dual); a, b, c as in Neural Tangents
    "relu": ({}, lambda: _abrelu(0.0, 1.0)),
    "abs": ({}, lambda: _abrelu(-1.0, 1.0)),
    "leaky_relu": ({"alpha": 0.01}, lambda alpha: _abrelu(alpha, 1.0)),
    "abrelu": ({"a": 0.0, "b": 1.0}, _abrelu),
    "identity": ({}, _identity),
    "linear": ({}, _identity),
    "sign": ({}, _sign),
    "erf": ({"a": 1.0, "b": 1.0, "c": 0.0}, _erf),
    "exp": ({"a": 1.0, "b": 1.0}, _exp),
    "sin": ({"a": 1.0, "b": 1.0, "c": 0.0}, lambda a, b, c: _sin(a, b, math.sin(c) ** 2, math.cos(c) ** 2)),
    "cos": ({"a": 1.0, "b": 1.0, "c": 0.0}, lambda a, b, c: _sin(a, b, math.cos(c) ** 2, math.sin(c) ** 2)),
    "gelu": ({}, _gelu),
}
_REGISTRY = ("relu", "abs", "linear", "sign", "erf", "exp", "gelu")   # popdyn activations with a closed form here


def _from_activation(act):
    """The closed form of a registry activation (any rescaling r), else its Hermite series."""
    fam = act._family
    if fam.name in _REGISTRY and fam is activations.get(fam.name)._family:
        defaults, build = _NAMED[fam.name]
        return _rescaled(build(**defaults), act.r)
    m = re.fullmatch(r"leaky_relu(?:\((.*)\))?", fam.name)
    if m:
        try:
            alpha = 0.01 if m.group(1) is None else float(m.group(1))
            if fam is activations.leaky_relu(alpha)._family:
                return _rescaled(_abrelu(alpha, 1.0), act.r)
        except (ValueError, InvalidParameterError):
            pass
    return _series(act)


def _activation(activation, params):
    """(name for the repr, _Dual) of an ``activation`` argument with its keyword parameters."""
    if isinstance(activation, str) and activation in _NAMED:
        defaults, build = _NAMED[activation]
        for key in params:
            if key not in defaults:
                raise InvalidParameterError(
                    f"The {key!r} parameter of kernels.fc is not a parameter of {activation!r}; it takes "
                    f"{sorted(defaults) or 'none'}.")
        values = {k: check("kernels.fc", k, params.get(k, v), _REAL) for k, v in defaults.items()}
        name = activation + (f"({', '.join(f'{k}={v!r}' for k, v in values.items())})" if params else "")
        return name, build(**values)
    try:
        act = activations.get(activation)
    except InvalidParameterError:
        raise InvalidParameterError(
            f"The 'activation' parameter of kernels.fc must be one of {sorted(_NAMED)}, a name of "
            f"popdyn.activations ({', '.join(activations.names())}) or an Activation. Got {activation!r} instead."
        ) from None
    if params:
        key = next(iter(params))
        raise InvalidParameterError(f"The {key!r} parameter of kernels.fc is not a parameter of {act.name!r}; "
                                    f"only {sorted(k for k, v in _NAMED.items() if v[0])} take parameters.")
    return act.name, _from_activation(act)


# --------------------------------------------------------------------------- the network


@dataclass(frozen=True)
class FC:
    r"""Infinite-width kernels of a fully-connected network (built by :func:`fc`).

    Attributes
    ----------
    depth : int
        Number of hidden Dense + activation pairs.
    activation : str
        The activation's name (with its parameters).
    W_std, b_std : float
        Weight and bias standard deviations of every Dense layer (``b_std=None``: no bias parameters).
    parameterization : str
        ``"ntk"`` or ``"standard"``.
    width : int or None
        Hidden width of the standard parameterisation's NTK.
    """
    depth: int
    activation: str
    W_std: float
    b_std: float | None
    parameterization: str
    width: int | None
    _dual: _Dual = field(repr=False, compare=False)

    def nngp(self, X, Y=None):
        r"""NNGP kernel :math:`K^{L+1}(x, y)` of the network's output between the rows of X and Y.

        .. math:: K^{l+1} = \sigma_w^2\,T(K^l) + \sigma_b^2,\qquad K^1 = \sigma_w^2\,x\cdot y/d_0 + \sigma_b^2

        Parameters
        ----------
        X : array_like of shape (N, d0)
            Inputs as rows.
        Y : array_like of shape (M, d0), optional
            Default X.

        Returns
        -------
        ndarray of shape (N, M)

        Notes
        -----
        Regime: any finite inputs; the same in both parameterisations. Accuracy as :func:`fc` (per map, and end to
        end to depth 3). Measured: see :func:`fc` (the search records it as ``kernels.FC.nngp``).
        """
        return self._kernels("nngp", X, Y, False)[0]

    def ntk(self, X, Y=None):
        r"""Neural tangent kernel :math:`\Theta^{L+1}(x, y)` of the network's output between the rows of X and Y.

        .. math:: \Theta^{l+1} = \alpha_l T(K^l) + \beta + \sigma_w^2\dot T(K^l)\,\Theta^l

        with :math:`(\alpha_l, \beta) = (\sigma_w^2, \sigma_b^2)` ("ntk") or :math:`(n_l, 1)` ("standard", fan-in
        :math:`n_0 = d_0`, :math:`n_l` = ``width``; :math:`\beta = 0` without bias), :math:`T(K^0) = x\cdot y/d_0`.

        Parameters
        ----------
        X : array_like of shape (N, d0)
            Inputs as rows.
        Y : array_like of shape (M, d0), optional
            Default X.

        Returns
        -------
        ndarray of shape (N, M)

        Notes
        -----
        Regime: any finite inputs; "standard" needs ``width``. Accuracy as :func:`fc` (per map, and end to end to
        depth 3). Measured: see :func:`fc` (the search records it as ``kernels.FC.ntk``).
        """
        return self._kernels("ntk", X, Y, True)[1]

    def profile(self, d, kernel="ntk"):
        r"""The kernel on the hypercube {±1}^d as a Hamming profile :math:`\kappa_t = K(x, y)`, :math:`d_H(x, y) = t`.

        .. math:: \kappa_t = K(x, y)\ \text{ at }\ x\cdot x/d = 1,\ x\cdot y/d = 1 - 2t/d,\qquad t = 0, \dots, d

        Parameters
        ----------
        d : int
            Dimension, ``d >= 1``.
        kernel : {"ntk", "nngp"}

        Returns
        -------
        ndarray of shape (d + 1,)
            The ``kappa`` of :func:`popdyn.models.resnet.hypercube.level_eigenvalues`.

        Notes
        -----
        Regime: inputs on {±1}^d (or any sphere of radius sqrt(d)). Accuracy as :func:`fc` at the covariance it
        receives; the inner products :math:`(d - 2t)/d` are rounded once (exact for d a power of 2), the
        determinants :math:`4t(d - t)/d^2` carried exactly. Measured: 0.12 of fc's per-map bounds at depth 1,
        :math:`\rho = \pm1` included (tests/test_accuracy_kernels.py).
        """
        owner = "kernels.FC.profile"
        d = check(owner, "d", d, Integer(1))
        check(owner, "kernel", kernel, Options(("ntk", "nngp")))
        t = np.arange(d + 1.0)
        W2, b2 = self._variances()
        one = np.ones(1)
        det = W2 * W2 * (4 * t * (d - t) / d**2) + W2 * b2 * (4 * t / d)      # 1 - g^2 and |x - y|^2/d, exactly
        nngp, ntk = self._recursion(one, one, ((d - 2.0 * t) / d)[None, :], det[None, :], d, kernel == "ntk", False)
        return (ntk if kernel == "ntk" else nngp)[0]

    def _variances(self):
        return self.W_std ** 2, 0.0 if self.b_std is None else self.b_std ** 2

    def _kernels(self, method, X, Y, with_ntk):
        owner = f"kernels.FC.{method}"
        X = check(owner, "X", X, FiniteArray(2))
        if X.shape[0] < 1 or X.shape[1] < 1:
            raise InvalidParameterError(f"The 'X' parameter of {owner} must have at least one row and one column. "
                                        f"Got shape {X.shape} instead.")
        if with_ntk and self.parameterization == "standard" and self.width is None:
            raise InvalidParameterError("The 'width' parameter of kernels.fc must be an int >= 1 for the standard "
                                        "parameterisation's NTK (it scales with the hidden width). Got None instead.")
        d0, same = X.shape[1], Y is None
        if same:
            Y, G = X, X @ X.T
            G = 0.5 * (G + G.T)
            gx = gy = np.diag(G) / d0
            gxy = G / d0
        else:
            Y = check(owner, "Y", Y, FiniteArray(2))
            if Y.shape[0] < 1 or Y.shape[1] != d0:
                raise InvalidParameterError(f"The 'Y' parameter of {owner} must have at least one row and {d0} "
                                            f"columns (as X). Got shape {Y.shape} instead.")
            Z = np.concatenate([X, Y])
            G = Z @ Z.T                    # one product: identical rows of X and Y give identical entries
            g = np.diag(G) / d0
            gx, gy, gxy = g[:X.shape[0]], g[X.shape[0]:], G[:X.shape[0], X.shape[0]:] / d0
        det = self._input_det(X, Y, gx, gy, gxy) if self._dual.kinked else None
        return self._recursion(gx, gy, gxy, det, d0, with_ntk, same)

    def _input_det(self, X, Y, gx, gy, gxy):
        """Determinant of the first layer's 2x2 covariances; where it is below 1e-2 of K_xx K_yy (angles below
        0.1) from the inputs themselves, W^4 |x|^2 |y - c x|^2 / d0^2 + W^2 b^2 |x - y|^2 / d0 (c = x.y/|x|^2 in
        double-double, c x in exact products), so that (nearly) parallel inputs keep their angle instead of the
        Gram's rounding."""
        W2, b2 = self._variances()
        kx, ky = W2 * gx + b2, W2 * gy + b2
        det = det2(kx[:, None], ky[None, :], W2 * gxy + b2)
        i, j = np.nonzero(det <= 1e-2 * (kx[:, None] * ky[None, :]))
        d0 = X.shape[1]
        step = max(1, 2**22 // d0)            # pairs per chunk: 32 MiB of differences
        for s in range(0, i.size, step):
            x, y = X[i[s:s + step]], Y[j[s:s + step]]
            xx, xy = np.einsum("ij,ij->i", x, x), np.einsum("ij,ij->i", x, y)
            c = np.divide(xy, xx, out=np.zeros_like(xy), where=xx > 0)
            p, e = _two_prod(c[:, None], x)
            r = (y - p) - e                   # y - c x, c x in exact products
            c_lo = np.divide(np.einsum("ij,ij->i", r, x), xx, out=np.zeros_like(xy), where=xx > 0)
            r = r - c_lo[:, None] * x         # projection with c + c_lo (double-double): |r| to eps^2 |y|
            gdet = xx * np.einsum("ij,ij->i", r, r) / d0**2
            gvar = np.einsum("ij,ij->i", x - y, x - y) / d0
            det[i[s:s + x.shape[0]], j[s:s + x.shape[0]]] = W2 * W2 * gdet + W2 * b2 * gvar
        return det

    def _recursion(self, gx, gy, gxy, det, d0, with_ntk, same):
        """Neural Tangents' layer maps from the normalised Gram (x.y/d0) and the first layer's determinant: nngp and
        ntk (None without with_ntk)."""
        W2, b2 = self._variances()
        beta = (b2 if self.parameterization == "ntk" else 0.0 if self.b_std is None else 1.0)
        alpha = W2 if self.parameterization == "ntk" else self.width      # width is set whenever with_ntk
        kx, ky, kxy = W2 * gx + b2, W2 * gy + b2, W2 * gxy + b2
        theta = (kxy if self.parameterization == "ntk" else d0 * gxy + beta) if with_ntk else None
        for _ in range(self.depth):
            t, dot, gap = self._dual.cross(kx, ky, kxy, det, with_ntk)
            tx, _ = self._dual.diag(kx, False)
            if same:
                np.fill_diagonal(t, tx)
            if with_ntk:
                theta = (alpha * t + beta) + W2 * (dot * theta)
            det = None if gap is None else W2 * W2 * gap[0] + W2 * b2 * gap[1]
            if same and det is not None:
                np.fill_diagonal(det, 0.0)
            kx, kxy = W2 * tx + b2, W2 * t + b2
            ky = kx if same else W2 * self._dual.diag(ky, False)[0] + b2
        return kxy, theta


def fc(depth, activation, W_std=1.0, b_std=0.0, parameterization="ntk", *, width=None, **params):
    r"""NNGP and NTK of a fully-connected network at infinite width, equal to Neural Tangents' ``kernel_fn``.

    The network is ``stax.serial(Dense(w, W_std, b_std), act, ..., Dense(w, W_std, b_std), act,
    Dense(1, W_std, b_std))`` with ``depth`` hidden pairs. With :math:`T(K) = \mathbb E[\phi(u)\phi(v)]`,
    :math:`\dot T(K) = \mathbb E[\phi'(u)\phi'(v)]`, :math:`(u, v) \sim N(0, [[K_{xx}, K_{xy}], [K_{xy}, K_{yy}]])`:

    .. math::

        K^1 = \sigma_w^2\frac{x\cdot y}{d_0} + \sigma_b^2,\quad K^{l+1} = \sigma_w^2T(K^l) + \sigma_b^2,\quad
        \Theta^{l+1} = \alpha_l T(K^l) + \beta + \sigma_w^2\dot T(K^l)\,\Theta^l,\quad
        \mathrm{nngp} = K^{L+1},\ \mathrm{ntk} = \Theta^{L+1},

    with :math:`T(K^0) = x\cdot y/d_0`, :math:`\Theta^0 = 0`. "ntk" parameterisation (:math:`h = \sigma_w W a /
    \sqrt{n} + \sigma_b b`, all entries N(0, 1) and trained): :math:`\alpha_l = \sigma_w^2`,
    :math:`\beta = \sigma_b^2`. "standard" (:math:`h = W a + b`, :math:`W \sim N(0, \sigma_w^2/n)`,
    :math:`b \sim N(0, \sigma_b^2)`, trained directly): the NNGP is the same, and Neural Tangents' Dense adds
    :math:`n_l\,T + 1` per layer, the fan-in :math:`n_l` times the weight gradients' kernel plus the bias
    gradients' 1 (:math:`\alpha_0 = d_0`, :math:`\alpha_l` = ``width``, :math:`\beta = 1`, 0 with
    ``b_std=None``), so it grows with the width (Sohl-Dickstein et al. 2020's width-dependent limit, their base
    width equal to the width).

    Parameters
    ----------
    depth : int
        Number of hidden layers, ``depth >= 1``.
    activation : str or Activation
        Closed forms (Neural Tangents' layers): "relu", "abs", "leaky_relu" (``alpha``, default 0.01), "abrelu"
        (``a min(x, 0) + b max(x, 0)``, ``a``, ``b``), "identity" or "linear", "sign", "erf" (``a erf(b x) + c``),
        "exp" (``a exp(b x)``), "sin" and "cos" (``a sin(b x + c)``, ``a cos(b x + c)``), "gelu" (``x Phi(x)``).
        Any other name of :func:`popdyn.activations.get` ("tanh", "sigmoid", "softplus", "quadratic", "he3",
        "tanh(r=2.0)", ...) or an :class:`~popdyn.activations.Activation` (registry ones with a closed form use it,
        rescaled too) goes through the Hermite series.
    W_std : float
        Weight standard deviation, ``>= 0``.
    b_std : float or None
        Bias standard deviation, ``>= 0``; None: no bias parameters (as 0, except the standard NTK's +1).
    parameterization : {"ntk", "standard"}
    width : int, optional
        Hidden width ``w`` (``>= 1``), needed by the standard parameterisation's NTK only.
    **params : float
        The activation's parameters named above (finite reals).

    Returns
    -------
    FC
        With ``nngp(X, Y=None)``, ``ntk(X, Y=None)`` and ``profile(d, kernel="ntk")``.

    Notes
    -----
    Regime: infinite width, Gaussian initialisation, the readout included; any finite inputs with Gram entries
    below 1e150. Sign's :math:`\dot T` is 0 (its derivative vanishes a.e.), as in Neural Tangents.

    Accuracy. Closed forms (ReLU family, sign, identity, erf, sin, cos, gelu), per layer and for the covariance it
    receives: ``|dT| <= 16 eps sqrt(T_xx T_yy)`` and the same for :math:`\dot T`, also at :math:`\rho = \pm1`
    (angles as atan2 of the determinant, formed from exact products; :math:`\sin\delta - \delta\cos\delta` by its
    Taylor series where it cancels; sin and cos as :math:`-s_-\,\mathrm{expm1}(-2b^2K_{xy}) + 2\sin^2(c)\,s_+`,
    whose plain difference :math:`s_- - \cos(2c)s_+` lost every digit where :math:`b^2K` is small);
    exp: relative ``8 eps (1 + b^2 (K_xx + K_yy))``. At depth 1 (``W_std = 1``, ``b_std = 0``) the NTK
    :math:`T + \dot TK_{xy}` is then within ``17 eps (sqrt(T_xx T_yy) + sqrt(Tdot_xx Tdot_yy) |K_xy|)``. End to end
    (closed forms, depth <= 3, ``W_std`` in [0.5, 1.5], ``b_std`` <= 0.5, inputs with x.x/d0 <= 4): within
    ``64 eps sqrt(K_xx K_yy)`` of the NNGP and ``64 eps sqrt(Theta_xx Theta_yy)`` of the NTK, including x and -x,
    pairs at an angle of 1e-7 and pairs parallel up to rounding; exp (b <= 0.5, ``W_std`` <= 1, x.x/d0 <= 1, where
    the compounded exponentials stay finite): 256 eps. The kinked maps (the ReLU
    family's :math:`\dot T`, sign's T) have square-root singularities at :math:`\rho = \pm1`, where an ulp of a
    Gram entry would move them by :math:`\sqrt{\text{eps}}`: their determinant :math:`K_{xx}K_{yy} - K_{xy}^2` is
    carried from layer to layer in closed form, and at the first layer taken from the inputs (a double-double
    projection) for pairs at angles below 0.1, so (nearly) parallel inputs keep their angle. Measured: <= 2.3 eps
    per map against 2-D Gauss-Legendre quadrature (:math:`\rho` within 1e-14 of :math:`\pm1`, unequal variances);
    <= 10 eps end to end at depth 3 against the recursion in mpmath at 90 digits (inputs x and -x, at an angle
    1e-7, and parallel up to rounding), 52 eps for exp; within 1.1e-15 of the largest entry of Neural Tangents
    0.6.5's own kernel_fn (depths 1 to 3, both parameterisations; tests/test_kernels.py). Over the accuracy search
    (tests/test_accuracy_kernels.py: every closed form with drawn parameters, dyadic inputs at angles down to 1e-8 from
    (anti)parallel, variances over four decades; against mpmath at the exact covariance): <= 0.16 of the per-map
    bounds, 0.32 of the end-to-end ones.
    Hermite series (every other activation): coefficients of :math:`\phi(\sqrt{K_{xx}}z)` and
    :math:`\phi'(\sqrt{K_{xx}}z)` by kink-split quadrature (:func:`popdyn.hermite.hermite_coeffs_quad`), the
    degree doubled up to 2048 until the Parseval deficit is below 1e-12 of :math:`\mathbb E\phi^2`. The error
    bound (tail :math:`|\rho|^{P+1}\sqrt{D_xD_y}`, coefficient errors, Horner rounding) is checked at every pair:
    a ``RuntimeError`` naming the knob is raised where it exceeds 1e-10 of :math:`\sqrt{\mathbb E\phi(u)^2\,
    \mathbb E\phi(v)^2}`; where the deficit target is met (tanh: variances up to about 25 for T, 15 for
    :math:`\dot T`) it is below 3e-12.
    ``Activation.from_callable`` without ``deriv`` has a derivative good to 5e-10 only, so its NTK is refused.
    Measured: 3.4e-13 (tanh), 4e-14 (sigmoid) against quadrature; <= 0.034 of the 3e-12 bound at variances to 20
    (tanh, sigmoid, softplus; tests/test_accuracy_kernels.py). Cost: about 10 ms per distinct variance and
    layer on first use (cached).

    References
    ----------
    .. [src] [Novak20] (Neural Tangents: ``stax.Dense``, ``ABRelu``, ``Erf``, ``Sign``, ``Exp``, ``Sin``, ``Gelu``);
       [Lee18, Section 2] (NNGP), [Jacot18, Theorem 1] (NTK), [ChoSaul09, eq. (6)] (arc-cosine), [Williams97]
       (erf), [SohlDickstein20] (standard parameterisation); the determinant recursion derived in docs/kernels.md.

    Examples
    --------
    >>> k = fc(1, "relu")
    >>> X = np.sqrt(2.0) * np.eye(2)                 # x.x / d0 = 1, orthogonal: T = 1/(2 pi), Tdot = 1/4
    >>> k.nngp(X).round(12).tolist()
    [[0.5, 0.159154943092], [0.159154943092, 0.5]]
    >>> k.ntk(X).round(12).tolist()                  # K^2 + Tdot K^1: 1/2 + 1/2 on the diagonal
    [[1.0, 0.159154943092], [0.159154943092, 1.0]]
    """
    owner = "kernels.fc"
    depth = check(owner, "depth", depth, Integer(1))
    W_std = check(owner, "W_std", W_std, Interval(0.0, np.inf, "left"))
    if b_std is not None:
        b_std = check(owner, "b_std", b_std, Interval(0.0, np.inf, "left"))
    parameterization = check(owner, "parameterization", parameterization, Options(("ntk", "standard")))
    if width is not None:
        width = check(owner, "width", width, Integer(1))
    name, dual = _activation(activation, params)
    return FC(depth, name, W_std, b_std, parameterization, width, dual)
