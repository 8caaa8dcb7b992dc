r"""Gaussian averages of the committee-machine ODE: :math:`I_2, I_3, I_4, J_2` for any activation.

.. math:: I_2(C) = \mathbb E[g(a)g(b)],\quad I_3(C) = \mathbb E[g'(a)\,b\,g(c)],\quad
          I_4(C) = \mathbb E[g'(a)g'(b)g(c)g(d)],\quad J_2(C) = \mathbb E[g'(a)g'(b)]

with the fields :math:`(a, b, \dots) \sim N(0, C)`. Closed forms: erf of any scale (Saad & Solla's arcsin
forms), linear, and ReLU (:math:`I_2, I_3, J_2`, and :math:`I_4` up to one smooth 1-D integral: Tallis'
orthant moments); any other activation by quadrature: the 2-D
integrals (:math:`I_2, J_2`, and :math:`I_3` reduced to 2-D by Stein's lemma) by a polar rule split where a field
vanishes, :math:`I_4` by tensor Gauss-Hermite on the eigen-factor of C.
"""
from __future__ import annotations

import functools
import itertools
import math

import numba
import numpy as np

from ... import activations, gaussian, hermite
from ..._validate import InvalidParameterError, as_int

__all__ = ["integrals", "Integrals"]

_EPS = np.finfo(np.float64).eps
_PRUNE = 1e-14          # tensor-rule nodes of weight below 1e-14 x the largest are dropped (their total < 1e-12)
_PSD_TOL = 1e-10        # relative: eigenvalues of C above -1e-10 max|C| count as PSD rounding


def _cov(owner, name, C, n):
    """C as a float array of shape (..., n, n), symmetric (to rounding) and PSD (to _PSD_TOL)."""
    C = np.asarray(C, dtype=np.float64)
    if C.ndim < 2 or C.shape[-2:] != (n, n) or not np.all(np.isfinite(C)):
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be a finite array of shape (..., {n}, {n}) (a covariance). "
            f"Got shape {C.shape} instead.")
    scale = np.max(np.abs(C), axis=(-2, -1), keepdims=True) + np.finfo(np.float64).tiny
    if np.any(np.abs(C - np.swapaxes(C, -1, -2)) > 1e-12 * scale):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be symmetric. Got {C!r} instead.")
    if np.any(np.linalg.eigvalsh(C)[..., 0] < -_PSD_TOL * scale[..., 0, 0]):
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be positive semi-definite (a covariance). Got {C!r} instead.")
    return C


def _diag(C, i):
    return C[..., i, i]


# --------------------------------------------------------------------------- quadrature

@functools.lru_cache(maxsize=16)
def _tensor_rule(n, m, prune=_PRUNE):
    """Tensor product of the probability-normalised m-point Gauss-Hermite rule in n dimensions, pruned of its
    negligible corner nodes (weight below ``prune`` x the largest; C-contiguous, read-only)."""
    x, w = hermite.gauss_hermite(m)
    z = np.array(list(itertools.product(x, repeat=n))).reshape(-1, n)
    wz = np.prod(np.array(list(itertools.product(w, repeat=n))).reshape(-1, n), axis=1)
    keep = wz > prune * wz.max()
    z, wz = np.ascontiguousarray(z[keep]), np.ascontiguousarray(wz[keep])
    z.setflags(write=False)
    wz.setflags(write=False)
    return z, wz


def _nodes(C, m):
    """Nodes (..., N, n) and weights (N,) of the tensor rule mapped to N(0, C) by C = U diag(l) U^T, x = U sqrt(l) z."""
    n = C.shape[-1]
    lam, U = np.linalg.eigh(C)
    A = U * np.sqrt(np.maximum(lam, 0.0))[..., None, :]
    z, w = _tensor_rule(n, m)
    x = z[:, 0:1] * A[..., None, :, 0]              # sum of n rank-one terms: no BLAS call (small, often contended)
    for k in range(1, n):
        x = x + z[:, k:k + 1] * A[..., None, :, k]
    return x, w


@functools.lru_cache(maxsize=16)
def _radial_rule(n):
    r"""n-point Gauss rule of the weight :math:`r e^{-r^2/2}` on :math:`[0, \infty)` (the radius of a 2-D standard
    Gaussian): its recurrence by the discretised Stieltjes procedure on 400 Gauss-Legendre points of [0, 15]
    (the weight beyond is e^-112; exact for the degree <= 2n < 400 it needs), then Golub-Welsch."""
    x, w = np.polynomial.legendre.leggauss(400)
    r = 7.5 * (x + 1)
    wr = 7.5 * w * r * np.exp(-r * r / 2)
    a, b = np.zeros(n), np.zeros(n)
    p_prev, p, norm_prev = np.zeros_like(r), np.ones_like(r), 1.0
    for k in range(n):
        norm = wr @ (p * p)
        a[k] = wr @ (r * p * p) / norm
        b[k] = norm / norm_prev
        p_prev, p, norm_prev = p, (r - a[k]) * p - (b[k] * p_prev if k else 0.0), norm
    off = np.sqrt(b[1:])
    nodes, V = np.linalg.eigh(np.diag(a) + np.diag(off, 1) + np.diag(off, -1))
    weights = V[0] ** 2
    weights = weights / weights.sum()
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


def _sqrt2x2(C):
    """Principal square roots of PSD 2x2 matrices (..., 2, 2): (C + s I) / sqrt(tr C + 2 s), s = sqrt(det C)."""
    s = np.sqrt(np.maximum(C[..., 0, 0] * C[..., 1, 1] - C[..., 0, 1] ** 2, 0.0))
    t = np.sqrt(np.maximum(C[..., 0, 0] + C[..., 1, 1] + 2 * s, 0.0))
    out = C + s[..., None, None] * np.eye(2)
    return np.divide(out, t[..., None, None], out=np.zeros_like(out), where=t[..., None, None] > 0)


def _polar_nodes(C, m):
    r"""Nodes (..., N, 2) and weights (..., N) of :math:`N(0, C)`, C (..., 2, 2), in polar coordinates of the
    principal square root S: :math:`x = S(r\cos\theta, r\sin\theta)`, the circle split at the four angles where a
    field vanishes (kinks of g at 0 lie there), m/4 Gauss-Legendre angles per arc, m/2 radii of :func:`_radial_rule`.

    Along each ray and arc the integrand of an activation smooth away from 0 is smooth, so the rule converges
    exponentially where tensor Gauss-Hermite converges like a power of m (softsign, whose g' has a cusp at 0:
    E g'(z) off by 3 % at 48 nodes).
    """
    S = _sqrt2x2(C)
    th = np.stack([np.arctan2(-S[..., 0, 0], S[..., 0, 1]), np.arctan2(-S[..., 1, 0], S[..., 1, 1])], -1)
    th = np.sort(np.mod(np.concatenate([th, th + np.pi], -1), 2 * np.pi), -1)            # (..., 4)
    arc = np.diff(np.concatenate([th, th[..., :1] + 2 * np.pi], -1), axis=-1)
    xg, wg = np.polynomial.legendre.leggauss(max(2, m // 4))
    ang = (th[..., :, None] + arc[..., :, None] * (xg + 1) / 2).reshape(th.shape[:-1] + (-1,))
    wa = (arc[..., :, None] * wg / (4 * np.pi)).reshape(ang.shape)
    r, wr = _radial_rule(max(2, m // 2))
    z1 = (np.cos(ang)[..., :, None] * r).reshape(ang.shape[:-1] + (-1,))
    z2 = (np.sin(ang)[..., :, None] * r).reshape(z1.shape)
    w = (wa[..., :, None] * wr).reshape(z1.shape)
    x = np.stack([S[..., 0, 0, None] * z1 + S[..., 0, 1, None] * z2, S[..., 1, 0, None] * z1 + S[..., 1, 1, None] * z2],
                 -1)
    return x, w


def _gauss_mean(C, F, m):
    r""":math:`\mathbb E[F(x)]`, :math:`x\sim N(0, C)`: the polar rule of :func:`_polar_nodes` in 2-D, tensor
    Gauss-Hermite on the eigen-factor of C otherwise (m nodes per axis).

    ``F`` maps fields of shape (..., N, n) to values (..., N); batched over C's leading axes.
    """
    if C.shape[-1] == 2:
        x, w = _polar_nodes(C, m)
        return (F(x) * w).sum(-1)
    x, w = _nodes(C, m)
    return F(x) @ w


def _two_orders(C, F, m):
    """Quadrature at m and at 3m/2 nodes per axis: (the finer value, |difference| as its error estimate)."""
    lo = _gauss_mean(C, F, m)
    hi = _gauss_mean(C, F, (3 * m) // 2)
    return hi, np.abs(hi - lo)


def _relu_second_moment(Om, u, K, r, s2, m, prune=_PRUNE):
    r""":math:`\mathbb E[g'_kg'_l(\Delta^2+\sigma^2)]` for :math:`g = \mathrm{relu}(r\,\cdot)`, continuous in Omega.

    The fields are :math:`f = \alpha + \beta t` along the top eigen-direction t of Omega; on each interval
    between their kinks the integrand is :math:`s_ks_l[(a + bt)^2 + \sigma^2]`, integrated exactly against
    :math:`\varphi(t)`; Gauss-Hermite (m per axis) over the other P - 1 directions, in a numba kernel.
    """
    P = Om.shape[0]
    lam, U = np.linalg.eigh(Om)
    A = U * np.sqrt(np.maximum(lam, 0.0))
    if P > 1:
        z, w = _tensor_rule(P - 1, m, prune)
    else:
        z, w = np.zeros((1, 0)), np.ones(1)
    return _relu_kernel(z, w, np.ascontiguousarray(A[:, :-1]), np.ascontiguousarray(A[:, -1]),
                        np.ascontiguousarray(u, dtype=np.float64), K, float(r) ** 2, float(s2))


@numba.njit(cache=True)
def _relu_kernel(Zo, w, Bo, beta, u, K, r2, s2):  # pragma: no cover - compiled
    """The loops of :func:`_relu_second_moment`: fields alpha + beta t at each outer node, kinks sorted, the
    Gaussian moments M0, M1, M2 of each interval in closed form."""
    N, P, D = Zo.shape[0], beta.shape[0], Zo.shape[1]
    out = np.zeros((K, K))
    alpha, cuts = np.empty(P), np.empty(P + 2)
    Phi, phi, on = np.empty(P + 2), np.empty(P + 2), np.empty(P, dtype=np.bool_)
    rt2, c0 = math.sqrt(2.0), 1.0 / math.sqrt(2.0 * math.pi)
    for n in range(N):
        for i in range(P):
            acc = 0.0
            for j in range(D):
                acc += Bo[i, j] * Zo[n, j]
            alpha[i] = acc
        cuts[0], cuts[P + 1] = -np.inf, np.inf
        for i in range(P):                 # kinks in t; beyond 40 the Gaussian weight is nil
            if abs(beta[i]) > 1e-300:
                cuts[i + 1] = min(40.0, max(-40.0, -alpha[i] / beta[i]))
            else:
                cuts[i + 1] = 40.0 if alpha[i] > 0 else -40.0
        for i in range(2, P + 1):          # insertion sort of the P kinks
            x, q = cuts[i], i - 1
            while q >= 1 and cuts[q] > x:
                cuts[q + 1] = cuts[q]
                q -= 1
            cuts[q + 1] = x
        for i in range(P + 2):
            c = cuts[i]
            if math.isinf(c):
                Phi[i], phi[i] = (1.0 if c > 0 else 0.0), 0.0
            else:
                Phi[i], phi[i] = 0.5 * math.erfc(-c / rt2), c0 * math.exp(-0.5 * c * c)
        for q in range(P + 1):
            lo, hi = cuts[q], cuts[q + 1]
            M0 = Phi[q + 1] - Phi[q]
            if M0 <= 0.0:
                continue
            mid = hi - 1.0 if math.isinf(lo) else (lo + 1.0 if math.isinf(hi) else 0.5 * (lo + hi))
            a, b = 0.0, 0.0
            for i in range(P):
                on[i] = alpha[i] + beta[i] * mid > 0
                if on[i]:
                    a += u[i] * alpha[i]
                    b += u[i] * beta[i]
            flo = 0.0 if math.isinf(lo) else lo
            fhi = 0.0 if math.isinf(hi) else hi
            M1 = phi[q] - phi[q + 1]
            M2 = M0 + flo * phi[q] - fhi * phi[q + 1]
            val = w[n] * ((r2 * a * a + s2) * M0 + r2 * (2 * a * b * M1 + b * b * M2))
            for k in range(K):
                if on[k]:
                    for l in range(K):
                        if on[l]:
                            out[k, l] += val
    return r2 * out



def _relu_I4_quadrature(C, r, m):
    r"""ReLU's :math:`I_4` by polarisation of the exact-direction kernel (m outer nodes per axis):
    :math:`\tfrac14\big(\mathbb E[g'_ag'_b(g_c + g_d)^2] - \mathbb E[g'_ag'_b(g_c - g_d)^2]\big)`; the ODE's method,
    kept as an independent check of the closed form."""
    flat = C.reshape(-1, 4, 4)
    plus, minus = np.array([0.0, 0.0, 1.0, 1.0]), np.array([0.0, 0.0, 1.0, -1.0])
    out = [(_relu_second_moment(c, plus, 2, r, 0.0, m)[0, 1] - _relu_second_moment(c, minus, 2, r, 0.0, m)[0, 1]) / 4
           for c in flat]
    return np.array(out).reshape(C.shape[:-2])


_JITTER = 1e-14         # ridge on C / max C_ii before the orthant moments (singular C: error <= 4e-8, measured)


@functools.lru_cache(maxsize=4)
def _plackett_nodes(n):
    """Gauss-Legendre nodes of the Plackett path s in [0, 1], substituted s = 1 - (1 - u)^2 (removes the
    1/sqrt(1 - s) of a correlation +-1 at the end)."""
    x, w = np.polynomial.legendre.leggauss(n)
    u, wu = (x + 1) / 2, w / 2
    return 1 - (1 - u) ** 2, 2 * (1 - u) * wu


def _orthant(C, idx, n=32):
    r"""Orthant probability :math:`P(x_i > 0,\ i\in\mathrm{idx})`, :math:`x\sim N(0, C)`, up to 4 fields: closed
    forms to 3 (Sheppard), Plackett's identity :math:`\partial P_4/\partial\rho_{kl} = \varphi_2(0, 0;\rho_{kl})
    P_2(\text{rest} > 0 \mid x_k = x_l = 0)` integrated from the identity for 4 (n nodes)."""
    k = len(idx)
    corr = lambda i, j: np.clip(C[i, j] / np.sqrt(C[i, i] * C[j, j]), -1.0, 1.0)
    if k <= 1:
        return 0.5 ** k
    if k == 2:
        return 0.25 + np.arcsin(corr(*idx)) / (2 * np.pi)
    if k == 3:
        return 0.125 + sum(np.arcsin(corr(i, j)) for i, j in itertools.combinations(idx, 2)) / (4 * np.pi)
    d = np.sqrt(np.diag(C)[idx])
    R = C[np.ix_(idx, idx)] / np.outer(d, d)
    s, ws = _plackett_nodes(n)
    tot = 1 / 16
    for a, b in itertools.combinations(range(4), 2):
        p, q = [i for i in range(4) if i not in (a, b)]
        rab = s * R[a, b]
        det = 1 - rab ** 2
        proj = lambda x1, x2, y1, y2: (x1 * y1 - rab * (x1 * y2 + x2 * y1) + x2 * y2) / det    # x^T R_ab^-1 y
        spp = 1 - proj(s * R[p, a], s * R[p, b], s * R[p, a], s * R[p, b])
        sqq = 1 - proj(s * R[q, a], s * R[q, b], s * R[q, a], s * R[q, b])
        spq = s * R[p, q] - proj(s * R[p, a], s * R[p, b], s * R[q, a], s * R[q, b])
        rho = np.clip(spq / np.sqrt(np.maximum(spp * sqq, 1e-300)), -1.0, 1.0)
        tot += R[a, b] * np.sum(ws / (2 * np.pi * np.sqrt(det)) * (0.25 + np.arcsin(rho) / (2 * np.pi)))
    return tot


def _given_zero(C, m):
    """Covariance given x_m = 0."""
    return C - np.outer(C[:, m], C[m, :]) / C[m, m]


def _orthant_first(C, j, idx, n):
    r""":math:`\mathbb E[x_j 1(x_{idx} > 0)] = \sum_{m} C_{jm}\varphi_m(0) P(x_{idx\setminus m} > 0 \mid x_m = 0)`."""
    return sum(C[j, m] / np.sqrt(2 * np.pi * C[m, m]) * _orthant(_given_zero(C, m), [i for i in idx if i != m], n)
               for m in idx)


def _orthant_second(C, i, j, idx, n=32):
    r""":math:`\mathbb E[x_ix_j 1(x_{idx} > 0)]` by Stein's lemma on :math:`x_i` (Tallis 1961):
    :math:`C_{ij}P(x_{idx} > 0) + \sum_{m\ne j}C_{im}\varphi_m(0)\,\mathbb E[x_j 1(x_{idx\setminus m} > 0)\mid x_m = 0]`."""
    out = C[i, j] * _orthant(C, idx, n)
    for m in idx:
        if m != j:
            out += C[i, m] / np.sqrt(2 * np.pi * C[m, m]) * _orthant_first(_given_zero(C, m), j,
                                                                            [k for k in idx if k != m], n)
    return out


def _relu_I4(C, r, n=32):
    r"""ReLU's :math:`I_4 = r^4\,\mathbb E[cd\,1(a, b, c, d > 0)]` in closed form up to one smooth 1-D integral (the
    4-field orthant probability); C ridged by 1e-14 of its largest variance so that singular C (a field repeated)
    have their limit."""
    out = []
    for c in C.reshape(-1, 4, 4):
        scale = np.max(np.diag(c))      # I4 is linear in C (ReLU is positively homogeneous): work at unit scale
        out.append(0.0 if scale <= 0 else scale * _orthant_second(c / scale + _JITTER * np.eye(4), 2, 3, [0, 1, 2, 3], n))
    return r ** 4 * np.array(out).reshape(C.shape[:-2])


# --------------------------------------------------------------------------- the object

class Integrals:
    r"""The four Gaussian averages of one activation g, vectorised over leading axes of C.

    Obtain one with :func:`integrals`. Each method takes the covariance ``C`` of its fields, shape
    ``(..., n, n)``, and returns an array of shape ``C.shape[:-2]``; with ``err=True`` it returns
    ``(value, error_estimate)``.

    Attributes
    ----------
    activation : Activation
    closed : frozenset of str
        The integrals with a closed form for this activation (the others use quadrature).
    m2, m4 : int
        Resolution of the 2-D polar rule (I2, I3, J2: m2/4 angles per arc, m2/2 radii) and Gauss-Hermite nodes per
        axis of the 4-D rule (I4).
    """

    def __init__(self, activation, m2, m4):
        self.activation = activation
        self.m2, self.m4 = m2, m4
        fam, r = activation._family.name, activation.r
        self._kind = fam if fam in ("erf", "linear", "relu") else "generic"
        self._r = r
        self.closed = frozenset({"erf": ("I2", "I3", "I4", "J2"), "linear": ("I2", "I3", "I4", "J2"),
                                 "relu": ("I2", "I3", "J2")}.get(self._kind, ()))

    def __repr__(self):
        return f"committee.integrals({self.activation.name!r})"

    @staticmethod
    def _out(value, err):
        """A closed form's value, with a rounding-level error estimate when ``err``."""
        value = np.asarray(value, dtype=np.float64)
        return (value, 64 * _EPS * (np.abs(value) + 1)) if err else value

    # -- I2 ---------------------------------------------------------------------------------
    def I2(self, C, err=False):
        r"""Two-field average :math:`I_2(C) = \mathbb E[g(a)g(b)]`, C the 2x2 covariance of (a, b).

        .. math:: I_2^{\rm erf} = \frac{2}{\pi}\arcsin\frac{C_{12}}{\sqrt{(1+C_{11})(1+C_{22})}},\qquad
                  I_2^{\rm relu} = \sqrt{C_{11}C_{22}}\,\frac{\sin\theta + (\pi-\theta)\cos\theta}{2\pi}

        (erf here is Saad & Solla's :math:`\mathrm{erf}(x/\sqrt2)`; any scale r maps to it by
        :math:`C \to 2r^2C`.)

        Parameters
        ----------
        C : array_like of shape (..., 2, 2)
            Symmetric PSD.
        err : bool
            Also return an error estimate.

        Returns
        -------
        ndarray of shape C.shape[:-2] (and its error estimate when ``err``)

        Notes
        -----
        Regime: any PSD C; closed forms for erf, linear and ReLU, else the polar rule at 3 m2/2 (error
        estimate: the change from m2), exponentially convergent for g smooth away from 0.

        References
        ----------
        .. [src] Saad & Solla 1995 (PRE 52, 4225) eq. (A1); Goldt et al. 2019 eq. (S29); Cho & Saul 2009 eq. (6);
           issue 14 §1.

        Examples
        --------
        >>> ig = integrals(activations.get("erf").rescaled(1 / np.sqrt(2)))
        >>> round(float(ig.I2(np.eye(2))), 15), round(float(ig.I2([[1.0, 1.0], [1.0, 1.0]])), 12)  # (2/pi) asin(1/2)
        (0.0, 0.333333333333)
        """
        return self._I2(_cov("committee.integrals.I2", "C", C, 2), err)

    def _I2(self, C, err=False):
        k = self._kind
        if k == "erf":
            C = 2 * self._r ** 2 * C
            v = (2 / np.pi) * np.arcsin(np.clip(C[..., 0, 1] / np.sqrt((1 + _diag(C, 0)) * (1 + _diag(C, 1))), -1, 1))
        elif k == "linear":
            v = self._r ** 2 * C[..., 0, 1]
        elif k == "relu":
            s = np.sqrt(_diag(C, 0) * _diag(C, 1))
            rho = np.divide(C[..., 0, 1], s, out=np.zeros_like(s), where=s > 0)
            v = self._r ** 2 * s * gaussian.arccos_kernel(rho, 1)
        else:
            g = self.activation
            F = lambda x: g(x[..., 0]) * g(x[..., 1])
            return _two_orders(C, F, self.m2) if err else _gauss_mean(C, F, (3 * self.m2) // 2)
        return self._out(v, err)

    # -- J2 ---------------------------------------------------------------------------------
    def J2(self, C, err=False):
        r"""Derivative average :math:`J_2(C) = \mathbb E[g'(a)g'(b)]`, C the 2x2 covariance of (a, b).

        .. math:: J_2^{\rm erf} = \frac{2}{\pi}\big[(1+C_{11})(1+C_{22}) - C_{12}^2\big]^{-1/2},\qquad
                  J_2^{\rm relu} = \frac{\pi - \arccos\rho_{12}}{2\pi}

        Parameters
        ----------
        C : array_like of shape (..., 2, 2)
        err : bool

        Returns
        -------
        ndarray of shape C.shape[:-2] (and its error estimate when ``err``)

        Notes
        -----
        Regime: any PSD C (ReLU: positive variances).

        References
        ----------
        .. [src] Goldt et al. 2019 eq. (S33); Saad & Solla 1995 eq. (A5); issue 14 §1.

        Examples
        --------
        >>> round(float(integrals("linear").J2(np.eye(2))), 15)
        1.0
        """
        return self._J2(_cov("committee.integrals.J2", "C", C, 2), err)

    def _J2(self, C, err=False):
        k = self._kind
        if k == "erf":
            s2 = 2 * self._r ** 2
            C = s2 * C
            v = s2 * (2 / np.pi) / np.sqrt((1 + _diag(C, 0)) * (1 + _diag(C, 1)) - C[..., 0, 1] ** 2)
        elif k == "linear":
            v = np.full(C.shape[:-2], self._r ** 2)
        elif k == "relu":
            v = self._r ** 2 * gaussian.arccos_kernel(_corr(C, 0, 1), 0)
        else:
            d = self.activation.deriv
            F = lambda x: d(x[..., 0]) * d(x[..., 1])
            return _two_orders(C, F, self.m2) if err else _gauss_mean(C, F, (3 * self.m2) // 2)
        return self._out(v, err)

    # -- I3 ---------------------------------------------------------------------------------
    def I3(self, C, err=False):
        r"""Three-field average :math:`I_3(C) = \mathbb E[g'(a)\,b\,g(c)]`, C the 3x3 covariance of (a, b, c).

        .. math:: I_3^{\rm erf} = \frac{2}{\pi}\frac{1}{\sqrt{\Lambda_3}}\frac{C_{23}(1+C_{11}) - C_{12}C_{13}}{1+C_{11}},
                  \quad \Lambda_3 = (1+C_{11})(1+C_{33}) - C_{13}^2

        and for any g, by Stein's lemma on b (a 2-D integral over (a, c)):

        .. math:: I_3 = \frac{C_{12}}{C_{11}}\Big(\mathbb E[a\,g'(a)g(c)] - C_{13}\,\mathbb E[g'(a)g'(c)]\Big)
                  + C_{23}\,\mathbb E[g'(a)g'(c)],

        which for ReLU is :math:`C_{12}\sqrt{C_{33} - C_{13}^2/C_{11}}/(2\pi\sqrt{C_{11}}) + C_{23}(\pi-\arccos\rho_{13})/(2\pi)`.

        Parameters
        ----------
        C : array_like of shape (..., 3, 3)
            Symmetric PSD with ``C[0, 0] > 0`` unless ``C[0, 1] = 0``.
        err : bool

        Returns
        -------
        ndarray of shape C.shape[:-2] (and its error estimate when ``err``)

        Notes
        -----
        Regime: any PSD C with :math:`C_{11} > 0`; g' of bounded variation (Stein's lemma).

        References
        ----------
        .. [src] Saad & Solla 1995 eq. (A2); Goldt et al. 2019 eq. (S30); issue 14 §1.

        Examples
        --------
        >>> round(float(integrals("linear").I3(np.eye(3) + 0.5)), 15)   # E[b c] = C23
        0.5
        """
        return self._I3(_cov("committee.integrals.I3", "C", C, 3), err)

    def _I3(self, C, err=False):
        k = self._kind
        if k == "erf":
            C = 2 * self._r ** 2 * C
            a1 = 1 + _diag(C, 0)
            lam3 = a1 * (1 + _diag(C, 2)) - C[..., 0, 2] ** 2
            v = (2 / np.pi) / np.sqrt(lam3) * (C[..., 1, 2] * a1 - C[..., 0, 1] * C[..., 0, 2]) / a1
        elif k == "linear":
            v = self._r ** 2 * C[..., 1, 2]
        elif k == "relu":
            c11 = _diag(C, 0)
            cond = np.maximum(_diag(C, 2) - np.divide(C[..., 0, 2] ** 2, c11, out=np.zeros_like(c11), where=c11 > 0), 0)
            first = np.divide(C[..., 0, 1] * np.sqrt(cond), 2 * np.pi * np.sqrt(c11), out=np.zeros_like(c11),
                              where=c11 > 0)
            v = self._r ** 2 * (first + C[..., 1, 2] * gaussian.arccos_kernel(_corr(C, 0, 2), 0))
        else:
            g, d = self.activation, self.activation.deriv
            S = C[..., [0, 2]][..., [0, 2], :]
            c11 = _diag(C, 0)
            alpha = np.divide(C[..., 0, 1], c11, out=np.zeros_like(c11), where=c11 > 0)
            beta = C[..., 1, 2] - alpha * C[..., 0, 2]

            def F(x):
                ga, gc = d(x[..., 0]), g(x[..., 1])
                return ga * (alpha[..., None] * x[..., 0] * gc + beta[..., None] * d(x[..., 1]))
            return _two_orders(S, F, self.m2) if err else _gauss_mean(S, F, (3 * self.m2) // 2)
        return self._out(v, err)

    # -- I4 ---------------------------------------------------------------------------------
    def I4(self, C, err=False):
        r"""Four-field average :math:`I_4(C) = \mathbb E[g'(a)g'(b)g(c)g(d)]`, C the 4x4 covariance of (a, b, c, d).

        .. math:: I_4^{\rm erf} = \frac{4}{\pi^2}\frac{1}{\sqrt{\Lambda_4}}\arcsin\frac{\Lambda_0}{\sqrt{\Lambda_1\Lambda_2}}

        with :math:`\Lambda_4 = (1+C_{11})(1+C_{22}) - C_{12}^2`,
        :math:`\Lambda_0 = \Lambda_4C_{34} - C_{23}C_{24}(1+C_{11}) - C_{13}C_{14}(1+C_{22}) + C_{12}C_{13}C_{24} + C_{12}C_{14}C_{23}`,
        :math:`\Lambda_1 = \Lambda_4(1+C_{33}) - C_{23}^2(1+C_{11}) - C_{13}^2(1+C_{22}) + 2C_{12}C_{13}C_{23}`
        and :math:`\Lambda_2` likewise with 4 for 3.

        Parameters
        ----------
        C : array_like of shape (..., 4, 4)
        err : bool

        Returns
        -------
        ndarray of shape C.shape[:-2] (and its error estimate when ``err``)

        Notes
        -----
        Regime: any PSD C. Closed form for erf and linear. ReLU: :math:`I_4 = r^4\mathbb E[cd\,1(a,b,c,d>0)]` by
        Tallis' reduction (Stein's lemma twice) to orthant probabilities of up to 4 fields, Sheppard's closed forms
        to 3 and Plackett's identity for 4 (one smooth 1-D integral, 32 Gauss-Legendre nodes): 1e-12 at regular C,
        <= 4e-8 of the scale at singular C (a repeated field; C is ridged by 1e-14 of its largest variance, so a
        zero-variance field counts as the limit of a small one); it agrees with the ODE's exact-direction
        quadrature at 140 nodes to 5e-6 and with Monte Carlo (tests). Error estimate: the change from 16 Plackett
        nodes plus 1e-7 of the scale. Any other g: tensor Gauss-Hermite with 3 m4 nodes per axis; the kinks of
        what remains make it converge only like 1/m4, and not monotonically: at m4 = 12 the error is up to 2 %
        relative (1e-4 to 1.3e-3 absolute; measured at 8 random covariances of variance <= 3 against a 140-node
        rule), and the error estimate, twice the change from 2 m4 to 3 m4 nodes (exact for a 1/m law), bounded
        the error at 7 of the 8 and was 2.8x short at the eighth: a heuristic, not a bound. Any other g: tensor
        Gauss-Hermite with
        3 m4/2 nodes per axis (estimate: the change from m4), fast for entire g and slow where g has poles near
        the real axis at the fields' scale (tanh at variance 4: ~1e-3) or kinks.

        References
        ----------
        .. [src] Saad & Solla 1995 eq. (A3); Goldt et al. 2019 eq. (S31); issue 14 §1.

        Examples
        --------
        >>> round(float(integrals("linear").I4(np.eye(4) + 0.25)), 15)   # E[c d] = C34
        0.25
        """
        return self._I4(_cov("committee.integrals.I4", "C", C, 4), err)

    def _I4(self, C, err=False):
        k = self._kind
        if k == "erf":
            s2 = 2 * self._r ** 2
            C = s2 * C
            a1, a2 = 1 + _diag(C, 0), 1 + _diag(C, 1)
            c = lambda i, j: C[..., i, j]
            lam4 = a1 * a2 - c(0, 1) ** 2
            lam0 = (lam4 * c(2, 3) - c(1, 2) * c(1, 3) * a1 - c(0, 2) * c(0, 3) * a2 + c(0, 1) * c(0, 2) * c(1, 3)
                    + c(0, 1) * c(0, 3) * c(1, 2))

            def lam(i):
                return (lam4 * (1 + c(i, i)) - c(1, i) ** 2 * a1 - c(0, i) ** 2 * a2 + 2 * c(0, 1) * c(0, i) * c(1, i))
            v = s2 * (4 / np.pi ** 2) / np.sqrt(lam4) * np.arcsin(np.clip(lam0 / np.sqrt(lam(2) * lam(3)), -1, 1))
        elif k == "linear":
            v = self._r ** 4 * C[..., 2, 3]
        elif k == "relu":
            v = _relu_I4(C, self._r)
            if err:       # the Plackett integral at 16 vs 32 nodes, plus the ridge's error (<= 4e-8 x scale measured)
                ridge = 1e-7 * self._r ** 4 * np.max(np.diagonal(C, axis1=-2, axis2=-1), axis=-1)
                return v, np.abs(v - _relu_I4(C, self._r, 16)) + ridge
            return v
        else:
            g, d = self.activation, self.activation.deriv
            F = lambda x: d(x[..., 0]) * d(x[..., 1]) * g(x[..., 2]) * g(x[..., 3])
            return _two_orders(C, F, self.m4) if err else _gauss_mean(C, F, (3 * self.m4) // 2)
        return self._out(v, err)


def _corr(C, i, j):
    s = np.sqrt(_diag(C, i) * _diag(C, j))
    return np.divide(C[..., i, j], s, out=np.zeros_like(s), where=s > 0)


@functools.lru_cache(maxsize=64)
def _integrals(activation, m2, m4):
    return Integrals(activation, m2, m4)


def integrals(activation, m2=64, m4=12):
    r"""The Gaussian averages :math:`I_2, I_3, I_4, J_2` of one activation (closed forms where they exist).

    .. math:: I_2 = \mathbb E[g(a)g(b)],\ I_3 = \mathbb E[g'(a)\,b\,g(c)],\
              I_4 = \mathbb E[g'(a)g'(b)g(c)g(d)],\ J_2 = \mathbb E[g'(a)g'(b)]

    Parameters
    ----------
    activation : str or Activation
        A name for :func:`popdyn.activations.get` or an ``Activation`` (Saad & Solla's erf is
        ``activations.get("erf").rescaled(1/sqrt(2))``).
    m2 : int
        Resolution of the 2-D quadratures (I2, I3, J2 without closed form), >= 2: a polar rule with m2/4
        Gauss-Legendre angles on each of the four arcs between the lines where a field vanishes and m2/2 Gauss
        radii; evaluated at ``3 m2 / 2``, the error estimate is the change from ``m2``.
    m4 : int
        The same for the 4-D quadrature of I4, >= 2.

    Returns
    -------
    Integrals

    Notes
    -----
    Regime: :math:`\mathbb E g(a)^2 < \infty`. Closed forms: erf at any scale (all four), linear (all
    four), ReLU (I2, I3, J2). Cached per (activation, m2, m4).

    References
    ----------
    .. [src] Saad & Solla 1995 eqs. (A1)-(A5); Goldt et al. 2019 eqs. (S29)-(S33); issue 14 §1, §5.

    Examples
    --------
    >>> ig = integrals("relu")
    >>> sorted(ig.closed)
    ['I2', 'I3', 'J2']
    >>> round(float(ig.I2(np.eye(2))), 12)     # (E relu)^2 = 1/(2 pi)
    0.159154943092
    """
    act = activations.get(activation)
    return _integrals(act, as_int("committee.integrals", "m2", m2, 2), as_int("committee.integrals", "m4", m4, 2))
