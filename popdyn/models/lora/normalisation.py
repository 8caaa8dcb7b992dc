"""Normalisation drift of the LoRA overlap: B0, B1 and E||L_t||^2 (derived in docs/lora.md).

Public names
------------
:func:`B0`, :func:`B1`, :func:`gradient_second_moment`. The normalised SGD step adds the drift
``-(lr^2/2) m E||L_t||^2`` to the overlap (the mean of the normalisation error Q_t that the paper's
population recursion ignores, [Dayi25, App. C.1]); the finite-delta ("corrected") ODE of
:mod:`popdyn.models.lora.dynamics` interpolates B0 and B1 from a table on 41 overlaps, cached per problem
(``_table``: for G = I the quadrature below, for a general G and the ReLU family (k <= 6) the orthant moments,
at 13 Chebyshev points in ``theta = arccos m``, interpolated in theta; RQMC otherwise).

Three methods
-------------
"quadrature" (orthonormal features, G = I): with ``t = <u_hat, x>``, ``a = <u, x>`` (correlation m) and
``z_i = <w_i, x>`` i.i.d. N(0, 1), the neurons are independent given (a, t), so
``E[X^2 Y^2 | a, t]`` (``X = f* - f_hat``, ``Y = g``) follows from the joint cumulants of one neuron per
class of equal ``(c_i, c_hat_i)`` (cumulants of independent sums add; per-neuron cumulants scale with
``lam_i``). One neuron's moments are 1-d Gaussian integrals over z_i: closed forms for the piecewise-linear
ReLU family (relu, abs, leaky_relu: truncated normal moments between the two kinks), Gauss-Hermite for
other activations. The outer 2-d integral over (a, t) is a polar Gauss rule (radial Gauss rule of the
weight ``rho exp(-rho^2/2)``, Gauss-Legendre in the angle) whose angular panels are cut on the lines
``c_i a = c_hat_i t``, where the conditional moments have kinks (there the teacher and student kinks of one
neuron coincide), and on ``a = 0``, ``t = 0``; so it converges geometrically. Antipodal nodes share their
Phi and phi evaluations, and the one-neuron cumulants of the classes (c, c_hat) and (-c, -c_hat); the node counts grow with ``xi max|c_i|`` beyond 2 (the steepest Phi). The error
estimate is the larger difference from two coarser rules.

"orthant" (any G, ReLU family): :mod:`popdyn.models.lora.gram`, a sum of Gaussian orthant moments.

"rqmc" (any G): randomised quasi-Monte Carlo over the (k+2)-dim Gaussian of the pre-activations (16
scrambled Sobol replicates, the same points for every overlap; SE from their spread).
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from scipy.interpolate import barycentric_interpolate
from scipy.special import ndtri, roots_legendre
from scipy.stats import qmc

from ..._validate import Integer, InvalidParameterError, Options, check
from ...hermite import gauss_hermite
from ...polar import radial_rule
from . import gram
from .problem import Problem, _cached, check_overlap
from .theory import _unique_rows

__all__ = ["B0", "B1", "gradient_second_moment"]

_CHUNK = 1 << 14  # quasi-Monte Carlo rows drawn at once (a power of 2, so Sobol stays balanced)
_N_SCRAMBLES = 16  # independent scrambles of the Sobol sequence; their spread gives the SE (15 dof)
_BLOCK = 1 << 21  # floats of an (M, chunk, k) pre-activation block held at once (16 MiB)
_M_TABLE = np.linspace(-1.0, 1.0, 41)  # B0/B1 table grid; linear interpolation error <= 0.05^2/8 |B0''|
# quadrature rules (Gauss-Legendre nodes per angular panel, radial nodes, inner Gauss-Hermite nodes in z);
# relative errors measured against (24, 24, 96) in tests/test_lora_normalisation.py:
_RULE = (8, 12, 48)  # public B0/B1: relative error <= 1e-4 for relu, <= 5e-4 for erf (at xi = 1e-3); the estimate covers it
_TABLE_RULE = (6, 6, 32)  # the ODE's table: 2e-7 (relu k = 8) to 2e-4, below its interpolation error ~1e-3
_COARSE = (_TABLE_RULE, (7, 9, 40))  # the error estimate is the larger difference of these from _RULE
_N_CHEB = 13  # the table's quadrature nodes, Chebyshev-Lobatto in theta = arccos m (B0 is analytic in theta)
_METHODS = ("auto", "quadrature", "orthant", "rqmc")
_POWERS = ((1, 0), (0, 1), (2, 0), (1, 1), (0, 2), (2, 1), (1, 2), (2, 2))  # (i, j) of E[D^i G^j], kernel order
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_PL_PROBES = np.array([-4.3, -1.91, -0.37, 0.37, 1.91, 4.3])  # test points of the piecewise-linear check


# ---------------------------------------------------------------------------------------------
# quadrature (G = I)
# ---------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=16)
def _legendre_rule(n):
    """Gauss-Legendre nodes and weights on [-1, 1] (problem independent, computed once per n)."""
    return roots_legendre(n)


@numba.njit(cache=True)
def _pl_neuron(A, B, r, rh, sa, sb, cdf_a, pdf_a, cdf_b, pdf_b, mom):  # pragma: no cover - compiled
    """Moments E[D^i G^j | a, t] of one neuron for sigma = sa relu + sb relu(-.) (sigma' = sa 1{>0} - sb 1{<0}).

    ``D = sigma((z+A)/r) - sigma((z+B)/rh)``, ``G = sigma'((z+B)/rh)``, z ~ N(0, 1); ``cdf_a, pdf_a`` are
    Phi, phi at the teacher's kink -A (likewise b at -B). Written to ``mom`` in the order (i, j) = 10, 01,
    20, 11, 02, 21, 12, 22. On each of the three z-intervals cut by the kinks, D is affine (``d1 z + d0``)
    and G constant: sums of truncated normal moments.
    """
    la, lb = -A, -B
    if la <= lb:
        lo, hi, p_lo, f_lo, q_hi, f_hi = la, lb, cdf_a, pdf_a, 1.0 - cdf_b, pdf_b
    else:
        lo, hi, p_lo, f_lo, q_hi, f_hi = lb, la, cdf_b, pdf_b, 1.0 - cdf_a, pdf_a
    mom[:] = 0.0
    for region in range(3):
        if region == 0:  # z < lo: both pre-activations below their kinks
            if sb == 0.0:
                continue
            i0, i1, i2 = p_lo, -f_lo, p_lo - lo * f_lo
            sp, sq = -sb, -sb
        elif region == 1:  # lo < z < hi: only the neuron with the lower kink is above it
            if hi == lo:
                continue
            i0 = 1.0 - p_lo - q_hi
            i1, i2 = f_lo - f_hi, i0 + lo * f_lo - hi * f_hi
            sp, sq = (sa, -sb) if la < lb else (-sb, sa)
        else:  # z > hi
            i0, i1, i2 = q_hi, f_hi, q_hi + hi * f_hi
            sp, sq = sa, sa
        d1, d0 = sp / r - sq / rh, sp * A / r - sq * B / rh
        e1, e2 = d1 * i1 + d0 * i0, d1 * d1 * i2 + 2.0 * d1 * d0 * i1 + d0 * d0 * i0
        mom[0] += e1
        mom[1] += sq * i0
        mom[2] += e2
        mom[3] += sq * e1
        mom[4] += sq * sq * i0
        mom[5] += sq * e2
        mom[6] += sq * sq * e1
        mom[7] += sq * sq * e2


@numba.njit(cache=True)
def _normal_at(v, x, cdf, pdf):  # pragma: no cover - compiled
    """cdf[j] = Phi(-v_j x), pdf[j] = phi(v_j x): shared by the classes with xi |c_i| = v_j."""
    for j in range(v.size):
        y = v[j] * x
        cdf[j] = 0.5 * math.erfc(y * _SQRT_HALF)
        pdf[j] = _INV_SQRT_2PI * math.exp(-0.5 * y * y)


@numba.njit(cache=True)
def _cumulants(m, out, j):  # pragma: no cover - compiled
    """out[j] = joint cumulants of one neuron from its moments m (order as :func:`_pl_neuron`)."""
    m10, m01, m20, m11, m02, m21, m12, m22 = m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]
    out[j, 0] = m10
    out[j, 1] = m01
    out[j, 2] = m20 - m10 * m10
    out[j, 3] = m11 - m10 * m01
    out[j, 4] = m02 - m01 * m01
    out[j, 5] = m21 - 2 * m10 * m11 - m20 * m01 + 2 * m10 * m10 * m01
    out[j, 6] = m12 - 2 * m01 * m11 - m02 * m10 + 2 * m01 * m01 * m10
    out[j, 7] = (m22 - 2 * m10 * m12 - 2 * m01 * m21 - m20 * m02 - 2 * m11 * m11
              + 2 * (m20 * m01 * m01 + m02 * m10 * m10 + 4 * m10 * m01 * m11) - 6 * m10 * m10 * m01 * m01)


@numba.njit(cache=True)
def _add_scaled(K, S, c, kappa, j):  # pragma: no cover - compiled
    """K += S[c] * kappa[j] (one neuron class's cumulants, weighted by its sums S[c]; indices, not views,
    in the hot loop)."""
    for i in range(8):
        K[i] += S[c, i] * kappa[j, i]


@numba.njit(cache=True)
def _x2y2(K):  # pragma: no cover - compiled
    """E[X^2 Y^2] from the joint cumulants K (order as :func:`_pl_neuron`): the 15 partitions of {X, X, Y, Y}."""
    k10, k01, k20, k11, k02, k21, k12, k22 = K[0], K[1], K[2], K[3], K[4], K[5], K[6], K[7]
    return (k22 + 2 * k10 * k12 + 2 * k01 * k21 + k20 * k02 + 2 * k11 * k11
            + k10 * k10 * k02 + k01 * k01 * k20 + 4 * k10 * k01 * k11 + k10 * k10 * k01 * k01)


@numba.njit(cache=True)
def _pl_fourth_moment(a, t, va, vb, signed, sv, side_of, S, sa, sb):  # pragma: no cover - compiled
    """F(a, t) + F(-a, -t), F = E[X^2 Y^2 | a, t], for the piecewise-linear family at the nodes (a, t).

    ``X = f* - f_hat = sum_i lam_i D_i``, ``Y = g = sum_i lam_i gamma_i G_i`` with independent neurons
    (G = I): joint cumulants add over neurons and scale with ``lam_i^(i+j) gamma_i^j`` (``S``), one
    evaluation per class of equal (c_i, c_hat_i). The antipode (-a, -t) of class (c, c_hat) is the node
    (a, t) of the signed class (-c, -c_hat): the one-neuron cumulants are computed once per distinct signed
    class (``signed`` rows: xi c, xi c_hat, r, r_hat; ``side_of[s, c]`` the row of class c on side s), so a
    quantised problem evaluates at most 4 neurons per node. Signed class j has ``xi |c| = va[sv[0, j]]``,
    ``xi |c_hat| = vb[sv[1, j]]``: Phi and phi are computed once per value and node (Phi(-x) = 1 - Phi(x)).
    """
    out = np.zeros(a.size)
    mom, K = np.empty(8), np.empty(8)
    kappa = np.empty((signed.shape[0], 8))
    cdf_a, pdf_a, cdf_b, pdf_b = np.empty(va.size), np.empty(va.size), np.empty(vb.size), np.empty(vb.size)
    for n in range(a.size):
        _normal_at(va, a[n], cdf_a, pdf_a)
        _normal_at(vb, t[n], cdf_b, pdf_b)
        for j in range(signed.shape[0]):
            xc, xch, ja, jb = signed[j, 0], signed[j, 1], sv[0, j], sv[1, j]
            ca = cdf_a[ja] if xc >= 0 else 1.0 - cdf_a[ja]
            cb = cdf_b[jb] if xch >= 0 else 1.0 - cdf_b[jb]
            _pl_neuron(xc * a[n], xch * t[n], signed[j, 2], signed[j, 3], sa, sb, ca, pdf_a[ja], cb, pdf_b[jb], mom)
            _cumulants(mom, kappa, j)
        for side in range(2):
            K[:] = 0.0
            for c in range(S.shape[0]):
                _add_scaled(K, S, c, kappa, side_of[side, c])
            out[n] += _x2y2(K)
    return out


@numba.njit(cache=True)
def _fourth_moment(mu, S):  # pragma: no cover - compiled
    """F = E[X^2 Y^2 | a, t] from per-class moments ``mu`` of shape (classes, 8, nodes) (any activation)."""
    out = np.empty(mu.shape[2])
    K, kappa = np.empty(8), np.empty((1, 8))
    for n in range(mu.shape[2]):
        K[:] = 0.0
        for c in range(mu.shape[0]):
            _cumulants(mu[c, :, n], kappa, 0)
            _add_scaled(K, S, c, kappa, 0)
        out[n] = _x2y2(K)
    return out


@functools.lru_cache(maxsize=128)
def _piecewise_linear(sigma):
    """(sa, sb) when sigma = sa relu(z) + sb relu(-z), sigma' to match (relu, abs, leaky_relu, rescaled); else None.

    Cached per activation (frozen, hashable; problem independent)."""
    z = _PL_PROBES
    sa, sb = float(sigma(1.0)), float(sigma(-1.0))
    close = lambda x, y: bool(np.all(np.abs(x - y) <= 1e-14 * np.abs(y)))
    ok = close(sigma(z), np.where(z > 0, sa * z, -sb * z)) and close(sigma.deriv(z), np.where(z > 0, sa, -sb))
    return (sa, sb) if ok else None


def _classes(problem):
    """Neuron classes of equal (c_i, c_hat_i): rows (xi c, xi c_hat, r, r_hat) and the sums S (see _fourth_moment)."""
    def make():
        params, S, shared = _class_tables(problem.c, problem.c_hat, problem.lam, problem.r_hat, problem.xi)
        return params, S, _piecewise_linear(problem.sigma), shared
    return _cached(problem, "classes", make)


_POWER_TABLE = np.array(_POWERS, dtype=np.float64)


def _class_tables(c, c_hat, lam, r_hat, xi):
    """The tables of :func:`_classes`: class rows (xi c, xi c_hat, r, r_hat) in lexicographic order of
    (c, c_hat), the sums ``S[class, (i, j)] = sum lam^(i+j) gamma^j`` (gamma = xi c_hat / r_hat) and the shared
    tables of :func:`_pl_fourth_moment`."""
    keys, inv = _unique_rows(np.stack((c, c_hat), axis=1))
    i, j = _POWER_TABLE[:, 0], _POWER_TABLE[:, 1]
    S = np.zeros((keys.shape[0], 8))
    np.add.at(S, inv, lam[:, None] ** (i + j) * (xi * c_hat / r_hat)[:, None] ** j)
    params = np.stack((xi * keys[:, 0], xi * keys[:, 1], np.sqrt(1 + xi**2 * keys[:, 0] ** 2),
                       np.sqrt(1 + xi**2 * keys[:, 1] ** 2)), axis=1)
    # the classes on both sides, (xi c, xi c_hat) and (-xi c, -xi c_hat), merged where they coincide
    both = np.concatenate((params, params))
    both[keys.shape[0]:, :2] *= -1.0
    signed, side_of = _unique_rows(both)
    va, ia = _unique_rows(np.abs(signed[:, :1]))
    vb, ib = _unique_rows(np.abs(signed[:, 1:2]))
    return params, S, (va[:, 0].copy(), vb[:, 0].copy(), signed, np.stack((ia, ib)), side_of.reshape(2, -1))


def _polar_nodes(m, lines, n_theta, n_rho):
    """Half of the nodes (a, t, e) and their weights of the polar rule for (t, e) i.i.d. N(0, 1),
    ``a = m t + sqrt(1-m^2) e``: the other half are the antipodes (-a, -t, -e), with equal weights.

    The angular circle is cut at the directions of the lines ``c a = c_hat t`` (``lines``: rows
    (c, c_hat)), each line giving two antipodal cuts, Gauss-Legendre on each panel; without lines, the
    trapezoid rule (periodic). Shapes (M, N).
    """
    rho, w_rho = radial_rule(n_rho)
    x, w = _legendre_rule(n_theta)
    return _polar_grid(m, np.ascontiguousarray(lines, dtype=np.float64), x, w, rho, w_rho)


def _polar_grid(m, lines, x, wx, rho, w_rho):
    """The nodes of :func:`_polar_nodes` (Legendre rule ``x, wx``, radial rule ``rho, w_rho``), all overlaps at once."""
    n_lines, n_x = lines.shape[0], x.size
    s = np.sqrt(np.maximum(1 - m * m, 0.0))[:, None]
    if n_lines:  # the cut of line j: its direction in (t, e), modulo pi; panels between consecutive cuts
        dt, de = lines[None, :, 0] * s, lines[None, :, 1] - lines[None, :, 0] * m[:, None]
        phi = np.sort(np.where((dt == 0) & (de == 0), 0.0, np.arctan2(de, dt) % math.pi), axis=1)
        half = 0.5 * (np.concatenate((phi[:, 1:], phi[:, :1] + math.pi), axis=1) - phi)
        theta = (phi[:, :, None] + half[:, :, None] * (x + 1)).reshape(m.size, -1)
        w_theta = (half[:, :, None] * wx / (2 * math.pi)).reshape(m.size, -1)
    else:
        n_ang = 2 * n_x
        theta = np.broadcast_to(math.pi * np.arange(n_ang) / n_ang, (m.size, n_ang))
        w_theta = np.full((m.size, n_ang), 1 / (4 * n_x))
    t = (np.cos(theta)[:, :, None] * rho).reshape(m.size, -1)
    e = (np.sin(theta)[:, :, None] * rho).reshape(m.size, -1)
    w = (w_theta[:, :, None] * w_rho).reshape(m.size, -1)
    return m[:, None] * t + s * e, t, e, w


def _kink_lines(classes):
    """Distinct lines ``c a = c_hat t`` (unit rows (c, c_hat) up to sign) where F has kinks (ReLU family only)."""
    params, _, pl, _ = classes
    if pl is None or pl[0] == -pl[1]:  # smooth, or linear (sa relu(z) - sa relu(-z) = sa z)
        return np.zeros((0, 2))
    return _line_rows(params)


def _line_rows(params):
    """The lines of :func:`_kink_lines` from the class rows: each (xi c, xi c_hat) != 0 and the axes a = 0,
    t = 0 (where Phi(xi c a), Phi(xi c_hat t) are steepest), scaled to unit length with a nonnegative first
    nonzero coordinate, rounded to 1e-14, distinct."""
    pts = np.concatenate((params[:, :2], np.eye(2)))
    pts = pts[(pts[:, 0] != 0) | (pts[:, 1] != 0)]  # a neuron with c_i = c_hat_i = 0 has no kink line
    x, y = pts[:, 0], pts[:, 1]
    sign = np.where((x < 0) | ((x == 0) & (y < 0)), -1.0, 1.0)
    v = np.round(sign[:, None] * (pts / np.sqrt(x * x + y * y)[:, None]), 14)
    return _unique_rows(v)[0]


def _quadrature(problem, m, rule):
    """B0 and B1 at the overlaps m (flat) with the polar rule ``rule = (n_theta, n_rho, n_z)``."""
    classes = _classes(problem)
    params, S, pl, shared = classes
    # the steepest factor, Phi(xi c_i a) or Phi(xi c_hat_i t), turns over on 1/(xi |c_i|): more nodes beyond 2
    scale = max(1.0, 0.5 * float(np.max(np.abs(params[:, :2]))))
    a, t, e, w = _polar_nodes(m, _kink_lines(classes), math.ceil(rule[0] * scale), math.ceil(rule[1] * scale))
    a, t = a.ravel(), t.ravel()
    if pl is not None:
        F = _pl_fourth_moment(a, t, *shared, S, *pl)
    else:
        a, t = np.concatenate([a, -a]), np.concatenate([t, -t])
        mu = np.array([_smooth_moments(problem.sigma, xc * a, xch * t, r, rh, rule[2]) for xc, xch, r, rh in params])
        F = _fourth_moment(mu, S).reshape(2, -1).sum(axis=0)
    F = F.reshape(w.shape) * w
    b0, b1 = F.sum(axis=1), (F * e * e).sum(axis=1)
    return b0, np.where(np.abs(m) == 1, b0, b1)


def _smooth_moments(sigma, A, B, r, rh, n_z):
    """The eight moments of :func:`_pl_neuron` for any sigma, by an n_z-point Gauss-Hermite rule in z."""
    z, wz = gauss_hermite(n_z)
    out = np.empty((8, A.size))
    step = max(1, _BLOCK // (8 * n_z))
    for s in range(0, A.size, step):
        q = (z + B[s:s + step, None]) / rh
        D = sigma((z + A[s:s + step, None]) / r) - sigma(q)
        G = sigma.deriv(q)
        for row, (i, j) in enumerate(_POWERS):
            out[row, s:s + step] = (D**i * G**j) @ wz
    return out


def _exact(problem, m):
    """Quadrature B0, B1 and the error estimate (the larger difference from two coarser rules), flat m."""
    fine = np.array(_quadrature(problem, m, _RULE))
    return fine, np.max([np.abs(fine - np.array(_quadrature(problem, m, rule))) for rule in _COARSE], axis=0)


def _identity_gram(problem):
    return bool(np.array_equal(problem.G, np.eye(problem.k)))


def _sample(problem, engine, n):
    """z ~ N(0, G) (rows <w_i, x>), a = <u, x>, b = <e', x> (e' the unit part of u_hat orthogonal to u)."""
    vals, vecs = np.linalg.eigh(problem.G)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))  # root @ root.T = G, also for singular G
    g = ndtri(np.clip(engine.random(n), 1e-300, 1 - 2**-53))  # scrambled Sobol points never hit 0 or 1
    return g[:, :problem.k] @ root.T, g[:, -2], g[:, -1]


def _replicate(problem, m, engine, per, weights):
    """Mean over one scrambled Sobol replicate of ``Q (w0 + w1 (e.x)^2)``, shape (len(weights), m.size)."""
    sig, lam, xi = problem.sigma, problem.lam, problem.xi
    coef = xi * problem.c_hat / problem.r_hat
    root = np.sqrt(np.clip(1 - m * m, 0.0, None))
    step = max(1, _BLOCK // (_CHUNK * problem.k))
    s1 = np.zeros((len(weights), m.size))
    for start in range(0, per, _CHUNK):
        z, a, b = _sample(problem, engine, min(_CHUNK, per - start))
        teacher = sig((z + xi * problem.c * a[:, None]) / problem.r) @ lam
        z /= problem.r_hat
        for i in range(0, m.size, step):
            mi, ri = m[i:i + step, None], root[i:i + step, None]
            pre = (mi * a + ri * b)[..., None] * coef  # <v_hat_j, x> = (z_j + xi c_hat_j <u_hat, x>)/r_hat_j
            pre += z
            q = (teacher - sig(pre) @ lam) ** 2 * (sig.deriv(pre) @ (lam * coef)) ** 2
            e2 = (ri * a - mi * b) ** 2  # e.x with e = (u - m u_hat)/sqrt(1 - m^2)
            s1[:, i:i + step] += (q * (weights[:, 0, None, None] + weights[:, 1, None, None] * e2)).sum(-1)
    return s1 / per


def _moments(problem, m, n, seed, weights):
    """Randomised quasi-Monte Carlo: mean and SE over _N_SCRAMBLES independently scrambled Sobol replicates.

    Each replicate has ``2^ceil(log2(n / _N_SCRAMBLES))`` points (a power of 2 keeps Sobol balanced);
    the SE is the spread of the replicate means, so it is honest for any integrand.
    """
    weights = np.asarray(weights, dtype=np.float64)
    per = 1 << max(0, math.ceil(math.log2(n / _N_SCRAMBLES)))
    seeds = np.random.SeedSequence(seed).spawn(_N_SCRAMBLES)
    engines = [qmc.Sobol(problem.k + 2, scramble=True, seed=np.random.default_rng(sq)) for sq in seeds]
    reps = np.array([_replicate(problem, m, engine, per, weights) for engine in engines])
    return reps.mean(axis=0), reps.std(axis=0, ddof=1) / np.sqrt(_N_SCRAMBLES)


def _method(problem, method, owner):
    """The method that serves ``method``: "quadrature" (G = I), "orthant" (ReLU family) or "rqmc"."""
    method = check(owner, "method", method, Options(_METHODS))
    if method == "quadrature" and not _identity_gram(problem):
        raise InvalidParameterError(f"The 'method' parameter of {owner} may be 'quadrature' only with G = I_k "
                                    "(orthonormal features, A4). Got 'quadrature' with G != I; use 'orthant', 'rqmc' "
                                    "or 'auto'.")
    if method == "orthant" and _piecewise_linear(problem.sigma) is None:
        raise InvalidParameterError(f"The 'method' parameter of {owner} may be 'orthant' only for the ReLU family "
                                    f"(relu, abs, leaky_relu). Got 'orthant' with {problem.activation!r}; use 'rqmc' "
                                    "or 'auto'.")
    if method != "auto":
        return method
    if _identity_gram(problem):
        return "quadrature"
    return "orthant" if _piecewise_linear(problem.sigma) is not None and problem.k <= gram.K_MAX else "rqmc"


def _mc(problem, m, n, seed, weights, owner, method):
    if not isinstance(problem, Problem):
        raise InvalidParameterError(f"The 'problem' parameter of {owner} must be a lora.Problem. Got {problem!r}.")
    m = check_overlap(m)
    n = check(owner, "n", n, Integer(2))
    seed = check(owner, "seed", seed, Integer(0))
    weights = np.asarray(weights, dtype=np.float64)
    method = _method(problem, method, owner)
    if method == "rqmc":
        mean, se = _moments(problem, m.reshape(-1), n, seed, weights)
    else:
        val, err = (_exact(problem, m.reshape(-1)) if method == "quadrature"
                    else gram.exact(problem, m.reshape(-1), _piecewise_linear(problem.sigma)))
        mean, se = weights @ val, np.abs(weights) @ err
    return mean.reshape((-1,) + m.shape), se.reshape((-1,) + m.shape)


def B0(problem, m, *, n=1 << 16, seed=0, method="auto"):
    r"""Normalisation-drift coefficient B0(m): second moment of the per-direction SGD gradient.

    .. math:: B_0(m) = \mathbb E_x\Big[(f^*(x) - \hat f(x))^2\, g(x)^2\Big],\qquad
              g(x) = \sum_j \lambda_j\, \sigma'(\langle \hat v_j, x\rangle)\,\frac{\xi \hat c_j}{\hat r_j}

    For G = I it is computed as :math:`\mathbb E_{(a,t)}\big[\kappa\text{-sum}(a, t)\big]`: given
    ``a = <u, x>`` and ``t = <u_hat, x>`` (correlation m) the neurons are independent, so
    :math:`\mathbb E[X^2Y^2\mid a,t]` is the sum over the 15 partitions of the joint cumulants of
    ``X = f* - f_hat`` and ``Y = g``, each a sum over neurons of one-neuron cumulants.

    Parameters
    ----------
    problem : Problem
    m : float or ndarray
        Overlaps ``<u, u_hat>`` in [-1, 1].
    n : int
        RQMC sample size (>= 2), rounded up to 16 times a power of 2; the same points for every ``m``
        (common random numbers). Unused by the quadrature.
    seed : int
        RQMC seed (>= 0); the same seed gives the same numbers. Unused by the quadrature.
    method : {"auto", "quadrature", "orthant", "rqmc"}
        "quadrature" (G = I only): the polar Gauss rule of the module notes over (a, t) with the
        one-neuron moments in closed form (ReLU family) or by 48-point Gauss-Hermite. "orthant" (any G, ReLU
        family: relu, abs, leaky_relu): a sum of O(k^4) Gaussian orthant moments of at most four pre-activations
        (:mod:`popdyn.models.lora.gram`). "rqmc": randomised quasi-Monte Carlo over the (k+2)-dim Gaussian.
        "auto": quadrature when G = I, else orthant for the ReLU family with k <= 6, else RQMC.

    Returns
    -------
    mean, se : ndarray of shape m.shape
        Estimate and its error: for the quadrature the larger difference from two coarser rules (conservative:
        the error of the returned value is far smaller), for RQMC the standard error (spread of 16
        independently scrambled Sobol replicates).

    Notes
    -----
    Regime: A1-A2 (the expectation is over the (k+2)-dim Gaussian ``(<w_i,x>, <u,x>, <e',x>)``:
    ``z ~ N(0, G)``, ``a, b ~ N(0, 1)``, ``<v_i,x> = (z_i + xi c_i a)/r_i``,
    ``<v_hat_j,x> = (z_j + xi c_hat_j (m a + sqrt(1-m^2) b))/r_hat_j``). Any sigma with finite
    fourth moments of ``sigma, sigma'``; polynomial activations have heavy tails (RQMC SE underestimated;
    the quadrature is exact for them). The orthant path: any PSD G (rank-deficient included), O(k^4) cost
    (0.06 s per overlap at k = 8). The quadrature needs G = I (A4); its angular panels are cut on the
    lines ``c_i a = c_hat_i t`` where a ReLU-family neuron's teacher and student kinks coincide. Other
    activations with kinks (sign, from_callable) converge slowly there: the error estimate shows it.

    Accuracy: quadrature (relu and erf, k <= 3, xi in [1e-3, 20]; one ReLU neuron for xi in [1e-8, 30]):
    ``|dB0| <= 1e-3 |B0| + 64 eps S`` with ``S = (sum_i |lam_i|)^2 (sum_j |lam_j xi c_hat_j / r_hat_j|)^2``, the rounding
    of ``sigma(P) - sigma(Q)`` where teacher and student neurons nearly coincide (there the relative error is not
    bounded: B0 = 2.4e-29 is computed 1.1e-26 at k = 1, c_hat = c, xi = 1e-4, m = 1 - 1e-12); the returned
    estimate covers the error, ``|dB0| <= err + 64 eps S``. Measured 0.45 and 0.15 of these (worst relative
    error 4.5e-4, erf at xi = 1e-3; 9e-5 for relu), against an independent polar quadrature with closed-form
    one-neuron moments and a one-neuron mpmath integral at 30 digits. RQMC: unbiased with an honest standard
    error, ``|mean - B0| <= 7.9 se`` (Student's t, 15 degrees of freedom: false-failure rate 1e-6 per
    comparison; tested on G = I against the quadrature reference); measured 0.31. Orthant (any G, ReLU family):
    ``|dB0| <= 2e-9 max_m B0 + 64 eps S`` (the ridge of 1e-14 on singular 4-field subsets; 1e-11 in general
    position), the estimate the change from a 6-node Plackett rule plus ``64 eps S``; measured 0.3 of the bound
    (6e-10 relative, k = 8 quantised G = I) against the quadrature, which agrees with a 30-digit mpmath sum of the
    same orthant moments to 1e-15; on general G (random, nearly singular, a repeated feature) within RQMC's
    ``7.9 se`` and plain Monte Carlo's 5 se.

    References
    ----------
    .. [src] derived in docs/lora.md (E||L_t||^2 = 4[(d-k-2) B0 + B1]).

    Examples
    --------
    >>> p = Problem(np.eye(2), [1.0, 1.0], [0.6, 0.8], [0.6, 0.8], 1.0)  # c_hat = c: f_hat = f* at m = 1
    >>> float(B0(p, 1.0)[0])  # exactly zero: every neuron's D vanishes identically
    0.0
    >>> q = Problem.orthonormal(k=4, xi=1.0, seed=1)
    >>> mean, err = B0(q, 0.5)
    >>> bool(err < 1e-5 * mean)  # the difference from coarser rules
    True
    """
    mean, se = _mc(problem, m, n, seed, [[1.0, 0.0]], "lora.B0", method)
    return mean[0], se[0]


def B1(problem, m, *, n=1 << 16, seed=0, method="auto"):
    r"""Companion of :func:`B0` with the extra factor ``(e.x)^2`` along ``e = (u - m u_hat)/|u - m u_hat|``.

    .. math:: B_1(m) = \mathbb E_x\Big[(f^* - \hat f)^2\, g(x)^2\, \langle e, x\rangle^2\Big],\qquad
              \langle e, x\rangle = \sqrt{1-m^2}\,a - m\,b

    Parameters
    ----------
    problem : Problem
    m : float or ndarray
        Overlaps ``<u, u_hat>`` in [-1, 1].
    n : int
        RQMC sample size (>= 2), the same sample as :func:`B0` for equal ``(n, seed)``.
    seed : int
        RQMC seed (>= 0).
    method : {"auto", "quadrature", "rqmc"}
        As :func:`B0` (the quadrature uses the same nodes, ``e.x`` being the node's coordinate
        orthogonal to ``t = <u_hat, x>``).

    Returns
    -------
    mean, se : ndarray of shape m.shape
        Estimate and its error, as :func:`B0`.

    Notes
    -----
    Regime: as :func:`B0`. At ``m = +-1`` ``e`` is any unit vector orthogonal to u_hat and W, so
    ``B1(+-1) = B0(+-1)`` exactly (the limit of the formula, ``e.x = -m b``).

    Accuracy: as :func:`B0`: quadrature ``|dB1| <= 1e-3 |B1| + 64 eps S`` and ``|dB1| <= err + 64 eps S``
    (measured 0.45 and 0.15 of these); RQMC ``|mean - B1| <= 7.9 se`` (measured 0.48); orthant as B0, by
    Stein's lemma twice on ``e.x`` (derived in docs/lora.md).

    References
    ----------
    .. [src] derived in docs/lora.md (e.x = (a - m(m a + sqrt(1-m^2) b))/sqrt(1-m^2)).

    Examples
    --------
    >>> p = Problem.orthonormal(k=3, xi=1.0, seed=1)
    >>> bool(B1(p, 1.0)[0] == B0(p, 1.0)[0])  # independent factor, E b^2 = 1
    True
    """
    mean, se = _mc(problem, m, n, seed, [[0.0, 1.0]], "lora.B1", method)
    return mean[0], se[0]


def gradient_second_moment(problem, m, *, d, n=1 << 16, seed=0, method="auto"):
    r"""Second moment of the projected SGD gradient, E||L_t||^2, at overlap m in dimension d.

    .. math:: \mathbb E\lVert L_t\rVert^2 = 4\big[(d-k-2)\,B_0(m) + B_1(m)\big],\quad
              L_t = (I - \hat u\hat u^\top)\,\Pi^\perp_W\,\nabla_{\hat u} (f^* - \hat f)^2

    Parameters
    ----------
    problem : Problem
    m : float or ndarray
        Overlaps in [-1, 1].
    d : int
        Input dimension, >= k + 2.
    n : int
        RQMC sample size (>= 2), as in :func:`B0`.
    seed : int
        RQMC seed (>= 0).
    method : {"auto", "quadrature", "rqmc"}
        As :func:`B0`.

    Returns
    -------
    mean, se : ndarray of shape m.shape
        Estimate and its error (the errors of B0 and B1 added with their weights).

    Notes
    -----
    Regime: exact in d under A1-A2 (the d-k-2 directions orthogonal to W, u, u_hat contribute
    independent unit-variance factors); W of rank k.

    Accuracy: that of :func:`B0` and :func:`B1` with the weights ``4(d-k-2)`` and 4:
    ``|dE| <= 4[(d-k-2)(1e-3 |B0| + 64 eps S) + 1e-3 |B1| + 64 eps S]`` for the quadrature; measured 0.45.

    References
    ----------
    .. [src] derived in docs/lora.md; the gradient is [Dayi25, Section 2, App. D.2].

    Examples
    --------
    >>> p = Problem.orthonormal(k=2, xi=1.0, seed=0)
    >>> float(gradient_second_moment(p, 1.0, d=10, n=10)[0]) >= 0.0
    True
    """
    d = check("lora.gradient_second_moment", "d", d, Integer(problem.k + 2))
    mean, se = _mc(problem, m, n, seed, [[4.0 * (d - problem.k - 2), 4.0]], "lora.gradient_second_moment", method)
    return mean[0], se[0]


@functools.lru_cache(maxsize=1)
def _table_interpolation():
    """Chebyshev-Lobatto nodes in theta = arccos m (``_N_CHEB``) and the matrix of barycentric interpolation
    from them to ``_M_TABLE`` (problem independent, computed once)."""
    theta = 0.5 * np.pi * (1 - np.cos(np.pi * np.arange(_N_CHEB) / (_N_CHEB - 1)))
    return np.cos(theta), barycentric_interpolate(theta, np.eye(_N_CHEB), np.arccos(_M_TABLE))


def _table(problem, n, seed):
    """B0 and B1 on the fixed grid ``_M_TABLE``, cached per problem (the same sample/nodes for both).

    G = I: quadrature at ``_N_CHEB`` Chebyshev-Lobatto points in ``theta = arccos m`` and barycentric
    interpolation in theta (``n``, ``seed`` unused). B0 is analytic in m inside (-1, 1) and its endpoint
    terms are half-integer powers of ``1 -+ m`` (the ReLU kinks), i.e. powers of ``sin(theta/2)``,
    ``cos(theta/2)``: analytic in theta, so 13 points reach the rule's own error (tests). General G, ReLU family
    (k <= gram.K_MAX): the orthant moments (6-node Plackett rule) at the same points. Else RQMC.
    """
    method = _method(problem, "auto", "lora.overlap_ode")
    if method == "rqmc":
        return _cached(problem, ("B", n, seed),
                       lambda: tuple(_moments(problem, _M_TABLE, n, seed, [[1.0, 0.0], [0.0, 1.0]])[0]))

    def make():
        m, interp = _table_interpolation()
        val = (np.array(_quadrature(problem, m, _TABLE_RULE)) if method == "quadrature"
               else gram.exact(problem, m, _piecewise_linear(problem.sigma), estimate=False)[0])
        return tuple(val @ interp.T)
    return _cached(problem, ("B", method), make)
