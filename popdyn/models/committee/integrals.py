r"""Gaussian averages of the committee-machine ODE: :math:`I_2, I_3, I_4, J_2` for any activation.

.. math:: I_2(C) = \mathbb E[g(a)g(b)],\quad I_3(C) = \mathbb E[g'(a)\,b\,g(c)],\quad
          I_4(C) = \mathbb E[g'(a)g'(b)g(c)g(d)],\quad J_2(C) = \mathbb E[g'(a)g'(b)]

with the fields :math:`(a, b, \dots) \sim N(0, C)`. Closed forms: erf of any scale (Saad & Solla's arcsin
forms), linear, and the ReLU family :math:`c\,\mathrm{relu}(x) - Bx` (relu, abs, leaky ReLU at any scale:
:math:`I_2, I_3, J_2` from arc-cosine forms, :math:`I_4` up to one smooth 1-D integral from Tallis' orthant moments);
any other activation by quadrature: the 2-D integrals (:math:`I_2, J_2`, and :math:`I_3` reduced to 2-D by Stein's
lemma) by an adaptive polar rule split where a field vanishes, :math:`I_4` with repeated fields folded, up to three
distinct fields by the polar rule and a split hp rule for the third, four by Gaussian conditioning. Every integral
returns an error estimate with ``err=True``; the declared accuracies (Notes of each method) are asserted by the
tests against 50-digit mpmath references over drawn covariances with corners.
"""
from __future__ import annotations

import functools
import itertools
import math
import warnings

import numpy as np

from ... import activations, hermite
from . import conditional
from ...orthant import (_PLACKETT, _family_I4_nb, _family_moments, _plackett_nodes, _same_fields,
                        _unit)
from ..._exact import det2
from ..._validate import InvalidParameterError, RegimeWarning, as_int
from ...polar import radial_rule

__all__ = ["integrals", "Integrals"]

_EPS = np.finfo(np.float64).eps
_PRUNE = 1e-14          # tensor-rule nodes of weight below 1e-14 x the largest are dropped (their total < 1e-12)
_SAME = 1e-12           # the generic rule folds fields with 1 - rho^2 <= 1e-12 (:func:`_merge`)
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
def _leggauss(n):
    """Gauss-Legendre nodes and weights on [-1, 1] (cached, read-only)."""
    x, w = np.polynomial.legendre.leggauss(n)
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


def _sqrt2x2(C):
    """Principal square roots of PSD 2x2 matrices (..., 2, 2): (C + s I) / sqrt(tr C + 2 s), s = sqrt(det C)."""
    s = np.sqrt(np.maximum(C[..., 0, 0] * C[..., 1, 1] - C[..., 0, 1] ** 2, 0.0))
    t = np.sqrt(np.maximum(C[..., 0, 0] + C[..., 1, 1] + 2 * s, 0.0))
    out = C + s[..., None, None] * np.eye(2)
    return np.divide(out, t[..., None, None], out=np.zeros_like(out), where=t[..., None, None] > 0)


def _polar_nodes(C, m, lines=None, radii=None, widths=None, prune=False):
    r"""Nodes (..., N, 2) and weights (..., N) of :math:`N(0, C)`, C (..., 2, 2), in polar coordinates of the
    principal square root S: :math:`x = S(r\cos\theta, r\sin\theta)`, the circle split at the four angles where a
    field vanishes (kinks of g at 0 lie there) and at those where each of ``lines`` (..., k, 2) vanishes,
    :math:`c\cdot x = 0` (a third field's kink, or the zero of its conditional mean), m/4 Gauss-Legendre angles per
    arc, m/2 radii of :func:`popdyn.polar.radial_rule` (or ``radii``).

    Along each ray and arc the integrand of an activation smooth away from 0 is smooth, so the rule converges
    exponentially where tensor Gauss-Hermite converges like a power of m (softsign, whose g' has a cusp at 0:
    E g'(z) off by 3 % at 48 nodes).

    ``widths`` (k,), one C only: the conditional standard deviations s of the fields whose conditional means are the
    ``lines`` (0 or inf: no layer). The average of g over such a field (a kink or a fast change of g smoothed at s)
    has a layer :math:`|c\cdot x|\lesssim s` about its line, :math:`s/(r|cS|)` wide in angle at radius r; the arcs
    ending within reach of the line then get Gauss-Legendre panels graded towards that end (:func:`_graded_arcs`).
    The nodes keep the antipodal order (the second half the first negated). ``prune``: without the radii whose weight
    is below 1e-16 of the largest (for integrands of size O(1) there).
    """
    S = _sqrt2x2(C)
    dirs = S if lines is None else np.concatenate([S, lines @ S], -2)          # rows c S: zero at c.x = 0
    th = np.arctan2(-dirs[..., 0], dirs[..., 1])
    r, wr = radial_rule(radii or max(2, m // 2))
    if widths is not None:                       # each layer's width in angle at radius 1, s/|cS| (inf: no layer)
        widths = np.asarray(widths, dtype=np.float64)
        layer = np.where(widths > 0, widths, np.inf) / np.maximum(np.linalg.norm(dirs[2:], axis=-1), 1e-300)
        r, wr = _layer_radii(r, wr, layer, max(8, m // 8))
    if prune:
        r, wr = r[wr > 1e-16 * wr.max()], wr[wr > 1e-16 * wr.max()]
    if widths is None:
        th = np.sort(np.mod(np.concatenate([th, th + np.pi], -1), 2 * np.pi), -1)
        arc = np.diff(np.concatenate([th, th[..., :1] + 2 * np.pi], -1), axis=-1)
        xg, wg = _leggauss(max(2, m // 4))
        ang = (th[..., :, None] + arc[..., :, None] * (xg + 1) / 2).reshape(th.shape[:-1] + (-1,))
        wa = (arc[..., :, None] * wg / (4 * np.pi)).reshape(ang.shape)
    else:
        reach = r[wr > 1e-16 * wr.max()].max()                                 # the largest radius that counts
        ang, wa = _graded_arcs(th, np.concatenate([[np.inf, np.inf], layer / reach]), reach, max(2, m // 4))
    z1 = (np.cos(ang)[..., :, None] * r).reshape(ang.shape[:-1] + (-1,))
    z2 = (np.sin(ang)[..., :, None] * r).reshape(z1.shape)
    w = (wa[..., :, None] * wr).reshape(z1.shape)
    x = np.stack([S[..., 0, 0, None] * z1 + S[..., 0, 1, None] * z2, S[..., 1, 0, None] * z1 + S[..., 1, 1, None] * z2],
                 -1)
    return x, w


def _layer_radii(r, wr, layer, n):
    r"""The radial rule where a layer :math:`|c\cdot x|\lesssim s` meets every ray: along a ray at angle phi from the
    line the layer ends at radius :math:`s/(|cS|\sin\phi)`, at least the layer's width at radius 1, w = s/|cS|, which
    the Gauss rule's nodes (the smallest near 1/n) do not resolve. Below :math:`r_0 = 1`: Gauss-Legendre panels of n
    nodes graded geometrically (ratio 4) from w/4 towards 0; beyond, :math:`r^2 = r_0^2 + \rho^2` maps the Gauss rule
    of ``r, wr`` in :math:`\rho` onto :math:`[r_0, \infty)`
    (:math:`\int_{r_0}^\infty f(r)re^{-r^2/2}dr = e^{-r_0^2/2}\int_0^\infty f(\sqrt{r_0^2+\rho^2})\rho e^{-\rho^2/2}d\rho`).
    Without a layer narrower than 1/4 at radius 1 (``layer``: each one's width there), the rule unchanged."""
    w = layer[np.isfinite(layer)]
    if not w.size or w.min() >= 0.25:
        return r, wr
    rp, wp = _graded_panels(w.min() / 4, 1.0, n)
    return np.concatenate([rp, np.sqrt(1.0 + r * r)]), np.concatenate([wp * rp * np.exp(-0.5 * rp * rp),
                                                                        math.exp(-0.5) * wr])


def _graded_panels(first, end, n):
    """Offsets in [0, end] and Gauss-Legendre weights: panels of n nodes with edges 0, first, 4 first, ... (ratio
    ``_LAYER_GRADE``) below ``end``, then ``end``."""
    e = [0.0]
    while first < end:
        e.append(first)
        first *= _LAYER_GRADE
    e = np.array(e + [end])
    x, w = _leggauss(n)
    a, b = e[:-1, None], e[1:, None]
    return ((a + b) / 2 + (b - a) / 2 * x).ravel(), ((b - a) / 2 * w).ravel()


_LAYER_GRADE = 4.0      # graded arcs: panel edges at w/4, w, 4w, ... below 1/4 of the arc (w the layer's width)
_LAYER_REACH = 10.0     # a line's layer reaches 10 of its widths at the smallest radius that counts


def _graded_arcs(th, width, reach, q):
    """Angles and weights (summing to 1/2 per half circle) of the polar rule on the arcs between the angles ``th``
    and ``th + pi``, each line's layer ``width`` its angular width at radius ``reach`` (inf: no layer). An arc
    end within ``_LAYER_REACH * width * reach`` of a line (its layer there at the smallest radii) gets panels graded
    geometrically towards the end, from a quarter of the narrowest such width, with q/2 (at least 8) nodes per panel,
    so that a refinement of the rule refines them too; other arcs keep q Gauss-Legendre angles. Built on the half
    circle [th_0, th_0 + pi) and copied at +pi (antipodal order)."""
    th = np.mod(np.concatenate([th, th + np.pi]), 2 * np.pi)
    width = np.concatenate([width, width])
    o = np.argsort(th)
    th, width = th[o], width[o]
    n = len(th) // 2
    sharp = np.isfinite(width)

    def end(t, arc):                      # the relative first panel at an arc end t, or None (none near, or wide)
        d = np.abs(np.mod(th[sharp] - t + np.pi, 2 * np.pi) - np.pi)
        near = width[sharp][d <= _LAYER_REACH * width[sharp] * reach]
        return near.min() / 4 / arc if near.size and near.min() < 0.2 * arc else None

    angs, wts = [], []
    for i in range(n):
        arc = th[i + 1] - th[i]
        t, wt = _graded_offsets(q, end(th[i], arc), end(th[i + 1], arc), max(8, q // 2))
        angs.append(th[i] + arc * t)
        wts.append(arc * wt / (2 * np.pi))
    ang, wa = np.concatenate(angs), np.concatenate(wts)
    return np.concatenate([ang, ang + np.pi]), np.concatenate([wa, wa])


def _graded_offsets(q, left, right, n):
    """Offsets in [0, 1] and weights of one arc: q Gauss-Legendre nodes, and with ``left`` / ``right`` (the first
    panel relative to the arc, or None) panels of n nodes growing by ``_LAYER_GRADE`` from that end up to 1/4 of the
    arc before the q nodes of the rest. Fixed at 8 nodes, the panels left 2e-8 of an I4 (erf, variance 59, a
    near-antipodal pair) that the refinement did not see."""
    lo, hi = (0.0 if left is None else 0.25), (1.0 if right is None else 0.75)
    x, w = _leggauss(q)
    parts = [(lo + (hi - lo) * (x + 1) / 2, (hi - lo) * w / 2)]
    if left is not None:
        parts.insert(0, _graded_panels(left, 0.25, n))
    if right is not None:
        t, wt = _graded_panels(right, 0.25, n)
        parts.append((1 - t[::-1], wt[::-1]))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


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


_M2_MAX = 324           # finest polar rule (81 angles per arc, 162 radii): the radial recurrence is exact to 200
_RTOL2 = 1e-11          # the adaptive 2-D rule stops when a refinement changes the value by < 1e-11 of its scale


_BATCH2 = 256           # covariances per block of the adaptive rule (bounds its node arrays to ~20 MB per level)


def _adaptive_mean(owner, C, F, m, lines=None, widths=None):
    """:func:`_adaptive_block` on blocks of ``_BATCH2`` covariances (``F(x, sel)`` sees the flat indices)."""
    flat = C.reshape(-1, 2, 2)
    if len(flat) <= _BATCH2:
        return _adaptive_block(owner, C, F, m, lines, widths)
    parts = [_adaptive_block(owner, flat[i:i + _BATCH2], lambda x, sel, i=i: F(x, sel + i), m, lines)
             for i in range(0, len(flat), _BATCH2)]
    return (np.concatenate([p[0] for p in parts]).reshape(C.shape[:-2]),
            np.concatenate([p[1] for p in parts]).reshape(C.shape[:-2]))


def _adaptive_block(owner, C, F, m, lines=None, widths=None):
    r""":math:`\mathbb E[F(x)]`, :math:`x\sim N(0, C)`, C (..., 2, 2), by the polar rule of :func:`_polar_nodes` at m,
    3m/2, 9m/4, ... (at most ``_M2_MAX``) until a refinement changes the value by at most ``_RTOL2`` x max(|value|,
    1e-3 E|F|) or by no more than the rounding of the sum: ``(value, estimate)``, the estimate the last change plus
    the sum's rounding (the rule converges exponentially for F smooth away from the rays where a field vanishes, so
    the last change bounds the finer value's error with room to spare).
    ``F(x, sel)`` gets the nodes of the covariances ``C.reshape(-1, 2, 2)[sel]``; ``lines`` (k, 2), the same for
    every C, are split as in :func:`_polar_nodes`, and with ``widths`` (one C) graded towards them. Where the finest
    rule leaves the change above the tolerance one
    :class:`~popdyn.RegimeWarning` says so."""
    flat = C.reshape(-1, 2, 2)
    val, est, floor = np.zeros(len(flat)), np.full(len(flat), np.inf), np.ones(len(flat))
    sel = np.arange(len(flat))

    def nodes(m):
        if widths is None:
            return _polar_nodes(flat[sel], m, lines)
        x, w = _polar_nodes(flat[0], m, lines, None, widths)
        return x[None], w[None]
    x, w = nodes(m)
    prev = (F(x, sel) * w).sum(-1)
    val[:] = prev
    while sel.size and m < _M2_MAX:
        m = min(_M2_MAX, 4 * ((3 * m) // 8))
        x, w = nodes(m)
        f = F(x, sel)
        v, l1 = (f * w).sum(-1), (np.abs(f) * w).sum(-1)
        change, rounding = np.abs(v - prev), 4 * np.sqrt(x.shape[-2]) * _EPS * l1
        val[sel], est[sel], floor[sel] = v, change + rounding, np.maximum(np.abs(v), 1e-3 * l1)
        open_ = ~(change <= np.maximum(_RTOL2 * floor[sel], rounding))          # converged, or at the rounding
        sel, prev = sel[open_], v[open_]
    if sel.size:
        worst = float(np.max(est[sel] / np.maximum(floor[sel], 1e-300)))
        warnings.warn(f"{owner}: the polar rule at its finest ({_M2_MAX}) changed the value by up to {worst:.1e} of "
                      f"max(|value|, 1e-3 E|F|) at {sel.size} covariance(s) (fields of large variance, or a g with "
                      "features away from 0); the error estimate (err=True) says how far", RegimeWarning, stacklevel=4)
    return val.reshape(C.shape[:-2]), est.reshape(C.shape[:-2])


def _hp_offsets(q=8):
    """Offsets t >= 0 from a split point and their Gauss-Legendre weights: panels graded geometrically from 1e-4 to
    1/4 (a kink, cusp or pole of g at the split), then 1/4 wide to 2 and 1 wide to 20 (the Gaussian weight)."""
    x, w = np.polynomial.legendre.leggauss(q)
    edges = [0.0, 1e-4]
    while edges[-1] < 0.25:
        edges.append(min(2 * edges[-1], 0.25))
    edges = np.concatenate([edges, np.arange(0.5, 2.0 + 1e-9, 0.25), np.arange(3.0, 20.0 + 1e-9, 1.0)])
    a, b = edges[:-1, None], edges[1:, None]
    return ((a + b) / 2 + (b - a) / 2 * x).ravel(), ((b - a) / 2 * w).ravel()


_HP = _hp_offsets()
_HP_CHUNK = 4096        # outer nodes per block of the nested rule (its node array: 4096 x 616 floats, 20 MB)


def _inner_mean(h, mu, s):
    r""":math:`\mathbb E[h(\mu + sw)]`, w ~ N(0, 1), for each ``mu`` (an array), by the hp rule of :data:`_HP` on
    both sides of :math:`w^* = -\mu/s` (where h's kink or poles at 0 lie; moved to +-10 beyond, outside the weight)."""
    t, wt = _HP
    c = np.clip(-mu / s, -10.0, 10.0)[..., None]
    w = np.concatenate([c + t, c - t], -1)
    weight = np.concatenate([wt, wt]) * np.exp(-0.5 * w * w) / math.sqrt(2 * math.pi)
    return (h(mu[..., None] + s * w) * weight).sum(-1)


def _merge(C, fns):
    """Fields of C folded into products of one-field functions: ``(reps, funcs, const)``, E prod_i fns_i(x_i) =
    const E prod_r funcs_r(x_{reps_r}). Field b folds onto an earlier a as x_b = kappa x_a, kappa = C_ab / C_aa,
    when 1 - rho_ab^2 <= 1e-12 and the residual x_b - kappa x_a is uncorrelated (to 1e-13) with every field not
    itself within 1e-12 of a: otherwise (a field 1e-12 off another but coupled to a third through its residual; it
    cost 1e-10 of I4) it stays a field. A field of variance <= 1e-28 of the largest is the constant fns_b(0)."""
    n = len(C)
    top = float(np.max(np.diag(C)))
    groups, const = [], 1.0
    for b in range(n):
        cbb = C[b, b]
        if not cbb > 1e-28 * top:
            const *= float(fns[b](np.zeros(1))[0])
            continue
        for grp in groups:
            a = grp[0][0]
            if C[a, b] ** 2 >= (1 - _SAME) * C[a, a] * cbb:
                kappa = C[a, b] / C[a, a]
                near = [f for f in range(n) if C[a, f] ** 2 >= (1 - _SAME) * C[a, a] * C[f, f]]
                coupled = [abs(C[b, f] - kappa * C[a, f]) > 1e-13 * math.sqrt(cbb * C[f, f])
                           for f in range(n) if f not in near and C[f, f] > 1e-28 * top]
                if not any(coupled):
                    grp.append((b, kappa))
                    break
        else:
            groups.append([(b, 1.0)])

    def product(grp):
        return lambda x: functools.reduce(lambda acc, bk: acc * fns[bk[0]](bk[1] * x), grp, np.ones_like(x))
    return [grp[0][0] for grp in groups], [product(grp) for grp in groups], const


def _generic_mean(owner, C, fns, m2, m4):
    r""":math:`\mathbb E\prod_i f_i(x_i)`, :math:`x\sim N(0, C)` for one C (n x n, n <= 4), f_i smooth away from 0:
    ``(value, estimate)``. Proportional and zero-variance fields are folded (:func:`_merge`); two distinct fields by
    the adaptive polar rule; three by the polar rule on the least correlated two (split also where the third's
    conditional mean vanishes) with the third integrated given them by the hp rule of :func:`_inner_mean` (or,
    determined by the two, as a third split line); four by :func:`_four_fields`."""
    reps, funcs, const = _merge(C, fns)
    n = len(reps)
    if n == 0:
        return const, 64 * _EPS * abs(const)
    Cr = C[np.ix_(reps, reps)]
    if n <= 2:
        C2 = Cr if n == 2 else np.array([[Cr[0, 0], 0.0], [0.0, 0.0]])
        f1 = funcs[1] if n == 2 else (lambda x: np.ones_like(x))
        v, e = _adaptive_mean(owner, C2, lambda x, sel: funcs[0](x[..., 0]) * f1(x[..., 1]), m2)
        return const * float(v), abs(const) * float(e)
    if n == 3:
        # the outer pair: the least correlated one (a well-conditioned regression of the third field on it)
        k = int(np.argmin([abs(Cr[i, j]) / math.sqrt(Cr[i, i] * Cr[j, j]) for i, j in ((1, 2), (0, 2), (0, 1))]))
        o = [i for i in range(3) if i != k]
        So = Cr[np.ix_(o, o)]
        beta = np.linalg.solve(So, Cr[o, k])                                        # E[x_k | x_o] = beta . x_o
        s = math.sqrt(max(Cr[k, k] - Cr[o, k] @ beta, 0.0))
        fo0, fo1, fk = funcs[o[0]], funcs[o[1]], funcs[k]
        if not s > 1e-7 * math.sqrt(Cr[k, k]):                                      # x_k = beta . x_o
            F = lambda x, sel: fo0(x[..., 0]) * fo1(x[..., 1]) * fk(x @ beta)
        else:
            def F(x, sel):
                mu = x @ beta
                inner = np.concatenate([_inner_mean(fk, mu[..., i:i + _HP_CHUNK], s)
                                        for i in range(0, mu.shape[-1], _HP_CHUNK)], -1)
                return fo0(x[..., 0]) * fo1(x[..., 1]) * inner
        # a third field nearly determined by the pair: its layer about the split line (as in eta2's rule; 5.6e-5 off
        # without, fields 1 - rho^2 = 1.6e-8 apart); a determined one is an exact kink there
        near = s < conditional._LAYER * math.sqrt(max(beta @ So @ beta, 0.0)) and s > 1e-7 * math.sqrt(Cr[k, k])
        widths = [s] if near else None
        v, e = _adaptive_mean(owner, So, F, m2, beta[None, :], widths)
        return const * float(v), abs(const) * float(e)
    return _four_fields(owner, Cr, funcs, const, m2)


def _four_fields(owner, C, funcs, const, m2):
    r""":math:`\mathbb E\prod_{i<4}f_i(x_i)` of four distinct fields by conditioning (``conditional``): the adaptive
    polar rule over the least correlated pair, split also where the other two fields' conditional means vanish and
    where their kinks in the inner variable meet (a kink of the inner average; a rank-3 C was 2e-8 off without), of
    their conditional average (:func:`conditional.pair_mean`) at q = 5 and q = 7 nodes per graded panel (times sd / 2
    for a conditional sd above 2); the estimate
    is the polar rule's, plus the change from q = 5, plus the table's interpolation estimate times E|F|."""
    pairs = list(itertools.combinations(range(4), 2))
    o = list(pairs[int(np.argmin([abs(C[i, j]) / math.sqrt(C[i, i] * C[j, j]) for i, j in pairs]))])
    rest, B, S = conditional.condition(C, o)
    scale = np.sqrt(np.diag(C))[rest]
    tails = [0.0]

    def F(x, line):
        mu = x @ B.T
        v, table = conditional.pair_mean(funcs[rest[0]], funcs[rest[1]], mu[..., 0], mu[..., 1], S, scale, line)
        tails.append(table.tail if table is not None else 0.0)
        return funcs[o[0]](x[..., 0]) * funcs[o[1]](x[..., 1]) * v
    Co = C[np.ix_(o, o)]
    s3 = math.sqrt(max(S[0, 0], 0.0))
    lines = B if s3 == 0.0 else np.vstack([B, S[0, 1] / s3 * B[0] - s3 * B[1]])   # + where the inner kinks meet
    s_rest = np.sqrt(np.maximum(np.diag(S), 0.0))
    widths = None
    if np.any(s_rest < conditional._LAYER * np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", B, Co, B), 0.0))):
        widths = np.full(len(lines), np.inf)           # a nearly determined inner field: its layer (eta2's rule)
        widths[:2] = np.where(s_rest > conditional._TINY * scale, s_rest, np.inf)
    # the inner rules' q grown by sd / 2 for a conditional sd above 2, as in eta2 (h varies on a scale 1/sd of the
    # rule's; fixed, sin at a conditional sd of 4.7 was 1.1e-7 off, with the estimate over)
    grow = max(1.0, math.sqrt(max(S[0, 0], S[1, 1], 0.0)) / 2.0)
    coarse, fine = (conditional.Line(r.grade, math.ceil(r.q * grow))
                    for r in (conditional.GRADED5, conditional.GRADED7))
    lo, _ = _adaptive_mean(owner, Co, lambda x, sel: F(x, coarse), m2, lines, widths)
    v, e = _adaptive_mean(owner, Co, lambda x, sel: F(x, fine), m2, lines, widths)
    x, w = _polar_nodes(Co, m2, lines, None, widths)
    l1 = float((np.abs(F(x, fine)) * w).sum())
    est = float(e) + abs(float(v) - float(lo)) + max(tails) * l1
    return const * float(v), abs(const) * est


# --------------------------------------------------------------------------- ReLU: orthant moments (popdyn.orthant)

def _family_eta2(Om, u, K, r, s2, cc, B, n=_PLACKETT):
    r"""The ReLU family's :math:`\eta^2` term :math:`\mathbb E[g'(f_k)g'(f_l)(\Delta^2 + \sigma^2)]`, (K, K), for
    :math:`g(x) = r(c\,\mathrm{relu}(x) - Bx)` (relu: c = 1, B = 0; abs: 2, 1; leaky ReLU: 1 - alpha, -alpha), from
    the orthant moments of :func:`_family_moments` (exact up to Plackett's smooth 1-D integral)."""
    P = len(Om)
    if not np.max(np.diag(Om)) > 0:
        return np.zeros((K, K))
    aug = np.empty((P + 1, P + 1))
    aug[:P, :P] = Om
    aug[P, :P] = aug[:P, P] = Om @ u
    aug[P, P] = u @ Om @ u
    C, sd = _unit(aug)
    lab, sg = _same_fields(C)
    s, ws = _plackett_nodes(n)
    A, Z = _family_moments(C, sd, lab, sg, np.ascontiguousarray(u, dtype=np.float64), K, float(cc), float(B), s, ws)
    return r ** 4 * A + r ** 2 * s2 * Z


def _family_I4(C, r, cc, B, n=_PLACKETT):
    r""":math:`I_4` of :math:`g(x) = r(c\,\mathrm{relu}(x) - Bx)` by :func:`_family_I4_nb` (repeated and antipodal
    fields merged, C scaled by powers of two and conditioned in double-double: a zero-variance field counts as the
    limit of a small one)."""
    s, ws = _plackett_nodes(n)
    out = []
    for c in C.reshape(-1, 4, 4):
        if not np.max(np.diag(c)) > 0:
            out.append(0.0)
            continue
        cn, sd = _unit(c)
        lab, sg = _same_fields(cn)
        out.append(_family_I4_nb(cn, sd, lab, sg, float(cc), float(B), s, ws))
    return r ** 4 * np.array(out).reshape(C.shape[:-2])


def _relu_family(act):
    """(c, B) with act(x) = r (c relu(x) - B x) for the ReLU family (relu, abs, leaky ReLU, any scale); None for any
    other activation. abs(x) = relu(x) + relu(-x) = 2 relu(x) - x; max(x, alpha x) = (1 - alpha) relu(x) + alpha x."""
    fam = act._family
    if fam.kinks != (0.0,) or fam.K is None or not (fam.name in ("relu", "abs") or fam.name.startswith("leaky_relu")):
        return None
    a, b = (float(v) for v in fam.fn(np.array([1.0, -1.0])))          # fn = a relu(x) + b relu(-x)
    if not np.array_equal(fam.fn(np.array([2.5, -2.5, 0.0])), [2.5 * a, 2.5 * b, 0.0]):
        return None
    return a + b, b


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
        First resolution of the adaptive 2-D polar rule (I2, I3, J2 and I4 up to three distinct fields: m2/4 angles
        per arc, m2/2 radii, refined by 3/2 up to 324; also the outer rule of I4 on four distinct fields) and m4,
        kept for the signature (four distinct fields are now conditioned, not a tensor rule).
    """

    def __init__(self, activation, m2, m4):
        self.activation = activation
        self.m2, self.m4 = m2, m4
        fam, r = activation._family.name, activation.r
        self._family = _relu_family(activation)             # (c, B): g = r (c relu - B x), the ReLU family
        self._kind = "relu" if self._family else (fam if fam in ("erf", "linear") else "generic")
        self._r = r
        self.closed = frozenset({"erf": ("I2", "I3", "I4", "J2"), "linear": ("I2", "I3", "I4", "J2"),
                                 "relu": ("I2", "I3", "I4", "J2")}.get(self._kind, ()))

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
        Regime: any PSD C; closed forms for erf, linear and the ReLU family (relu, abs, leaky ReLU), else the polar
        rule from m2 on, refined by 3/2 until a refinement changes the value by at most 1e-11 of max(|I|, 1e-3 E|F|)
        (at most 324: 81 angles per arc, 162 radii; beyond, one RegimeWarning); the error estimate is that last change
        plus the rounding of the sum. Exponentially convergent for g smooth away from 0 (kinks, cusps and the poles
        of tanh near the real axis lie on the rays where the rule is split).
        Accuracy, measured against 50-digit mpmath closed forms (and, for tanh and softsign, a float64 hp quadrature
        checked against them to 1e-12) over drawn covariances with standard deviations 2^-7 .. 2^3, repeated,
        antipodal and near-repeated fields and any rank, the error relative to max(|I|, 1e-3 s) (s the product of the
        factors' root mean squares): erf of any scale, linear and the ReLU family <= 1e-13; g by quadrature
        (tanh, softsign, sin, erf and abs as callables) <= 1e-10, piecewise linear g <= 1e-13 (the polar rule is exact
        on its rays). The error estimate bounded the error in every draw but at the rounding level.

        References
        ----------
        .. [src] Saad & Solla 1995 (PRE 52, 4225) eq. (A1); Goldt et al. 2019 eq. (S29); Cho & Saul 2009 eq. (6).

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
            root, pi_th = _arccos_terms(_diag(C, 0), _diag(C, 1), C[..., 0, 1])   # sqrt(C11 C22) J_1(theta)
            cc, B = self._family                      # E[(c a+ - B a)(c b+ - B b)], E[a+ b] = C12 / 2
            v = self._r ** 2 * (cc * cc * (root + pi_th * C[..., 0, 1]) / (2 * np.pi)
                                + (B * B - cc * B) * C[..., 0, 1])
        else:
            g = self.activation
            v, e = _adaptive_mean("committee.integrals.I2", C, lambda x, sel: g(x[..., 0]) * g(x[..., 1]), self.m2)
            return (v, e) if err else v
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
        Regime: any PSD C (the ReLU family: positive variances); quadrature as for :meth:`I2`.
        Accuracy, measured against 50-digit mpmath closed forms (and, for tanh and softsign, a float64 hp quadrature
        checked against them to 1e-12) over drawn covariances with standard deviations 2^-7 .. 2^3, repeated,
        antipodal and near-repeated fields and any rank, the error relative to max(|I|, 1e-3 s) (s the product of the
        factors' root mean squares): erf of any scale, linear and the ReLU family <= 1e-13 (the arc-cosine forms
        read theta off a compensated determinant, so repeated and antipodal fields keep full accuracy); g by
        quadrature <= 1e-10, piecewise linear g <= 1e-13.

        References
        ----------
        .. [src] Goldt et al. 2019 eq. (S33); Saad & Solla 1995 eq. (A5).

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
            cc, B = self._family                      # E[(c 1(a > 0) - B)(c 1(b > 0) - B)]
            pi_th = _arccos_terms(_diag(C, 0), _diag(C, 1), C[..., 0, 1])[1]
            v = self._r ** 2 * (cc * cc * pi_th / (2 * np.pi) + B * B - cc * B)
        else:
            d = self.activation.deriv
            v, e = _adaptive_mean("committee.integrals.J2", C, lambda x, sel: d(x[..., 0]) * d(x[..., 1]), self.m2)
            return (v, e) if err else v
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
        Accuracy, measured against 50-digit mpmath closed forms (and, for tanh and softsign, a float64 hp quadrature
        checked against them to 1e-12) over drawn covariances with standard deviations 2^-7 .. 2^3, repeated,
        antipodal and near-repeated fields and any rank, the error relative to max(|I|, 1e-3 s) (s the product of the
        factors' root mean squares): erf of any scale, linear and the ReLU family <= 1e-13; g by quadrature
        <= 1e-10 (the polar rule of :meth:`I2` on the Stein-reduced pair), piecewise linear g <= 1e-13.

        References
        ----------
        .. [src] Saad & Solla 1995 eq. (A2); Goldt et al. 2019 eq. (S30).

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
            # C12 sqrt(C33 - C13^2/C11) / (2 pi sqrt(C11)) = C12 sqrt(det13) / (2 pi C11), det13 to full accuracy (a
            # repeated or antipodal field leaves the plain difference ~1e-16 of C11 C33, 1e-8 after the root)
            root, pi_th = _arccos_terms(c11, _diag(C, 2), C[..., 0, 2])
            first = np.divide(C[..., 0, 1] * root, 2 * np.pi * c11, out=np.zeros_like(c11), where=c11 > 0)
            cc, B = self._family                      # E[1(a > 0) b c] = E[b c+] = C23 / 2
            v = self._r ** 2 * (cc * cc * (first + C[..., 1, 2] * pi_th / (2 * np.pi))
                                + (B * B - cc * B) * C[..., 1, 2])
        else:
            g, d = self.activation, self.activation.deriv
            S = C[..., [0, 2]][..., [0, 2], :]
            c11 = _diag(C, 0).ravel()
            alpha = np.divide(C[..., 0, 1].ravel(), c11, out=np.zeros_like(c11), where=c11 > 0)
            beta = C[..., 1, 2].ravel() - alpha * C[..., 0, 2].ravel()

            def F(x, sel):
                ga, gc = d(x[..., 0]), g(x[..., 1])
                return ga * (alpha[sel, None] * x[..., 0] * gc + beta[sel, None] * d(x[..., 1]))
            v, e = _adaptive_mean("committee.integrals.I3", S, F, self.m2)
            return (v, e) if err else v
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
        Regime: any PSD C. Closed form for erf and linear. The ReLU family :math:`g = r(c\,\mathrm{relu} - Bx)`:
        the 16 terms of :math:`(c1_a - B)(c1_b - B)(cc^+ - Bc)(cd^+ - Bd)`, each an orthant moment
        :math:`\mathbb E[x_cx_d1(x_T > 0)]` reduced by Stein's lemma twice (Tallis 1961) to orthant probabilities of
        up to 4 fields: Sheppard's closed forms to 3, Plackett's identity for 4 (one smooth 1-D integral on
        Gauss-Legendre panels graded towards the end of the path down to the pair's smallest scale), in numba, on C
        scaled by exact powers of two: the Schur complements of the conditioned fields, and Plackett's integrand of
        a nearly singular pair, in double-double (rounded in float64 they cost up to 3e-4 at rank-deficient
        covariances and 6e-6 at fields 1 - rho^2 ~ 1e-13 apart, where the moments are sqrt-sensitive); fields
        with 1 - rho^2 <= 2e-24 are merged with a sign, a zero-variance field is the limit of a small independent
        one. Error estimate: the change from 8 to 12 nodes per panel plus 1e-11 of :math:`r^4\sqrt{C_{33}C_{44}}`.
        Any other g: proportional and zero-variance fields folded into one-field products; up to three distinct
        fields by the adaptive polar rule of :meth:`I2` on two of them (split also where the third's conditional
        mean vanishes) with the third integrated given them by Gauss-Legendre panels graded towards its kink
        (hp); four distinct fields by Gaussian conditioning (``conditional``): the adaptive polar rule over the
        least correlated pair, split also where the other two fields' conditional means vanish, of their
        conditional average (one on Gauss-Legendre panels graded towards its kink, the last through a piecewise
        Chebyshev table of its Gaussian smoothing); estimate: the polar rule's, plus the change from 5 to 7 nodes
        per panel, plus the table's tail. A conditioned field nearly determined by the outer pair (conditional sd
        below 1/4 of its mean's) has a layer about its split line; the polar rule's arcs are then graded towards it
        (as in the eta^2 term; without, 5.6e-5 off at two fields 1 - rho^2 = 1.6e-8 apart).
        Accuracy, measured as for :meth:`I2`: erf of any scale <= 1e-12, linear <= 1e-13, the ReLU family <= 1e-8
        (measured over 144 random draws with near-repeated, near-antipodal and rank-3 fields: abs 7.5e-11, leaky ReLU
        3e-11, relu 3.6e-9 at rank-3 covariances with a pair 1 - rho^2 ~ 1e-12 apart, where I4 vanishes: 4e-12 of s; a
        later search: abs 4.7e-9 at two pairs 1 - rho^2 ~ 1e-14 apart); g by quadrature on at most three distinct fields
        <= 1e-10 (measured <= 8e-13; the estimate bounds the error but at the 1e-12 level); on four distinct fields
        <= 1e-8 (measured against the 50-digit closed forms of sin, erf and abs as callables over 110 random draws,
        standard deviations up to 8, near-repeated, near-antipodal, rank-3 fields and two near-repeated pairs included:
        abs 4.4e-11, erf 2.3e-12, sin 2.6e-11, the estimate over the error in every draw; and at the corners former
        searches found, each a test; tanh against a 64-node tensor Gauss-Hermite rule: 1e-12), 1-120 s per covariance
        (up to 300 s at conditional standard deviations near 7, where the inner rule grows).

        References
        ----------
        .. [src] Saad & Solla 1995 eq. (A3); Goldt et al. 2019 eq. (S31).

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
            v = _family_I4(C, self._r, *self._family)
            if err:       # Plackett's panels at 8 vs 12 nodes, plus 1e-11 of the scale r^4 sd_c sd_d (the floor of
                # the double-double conditioning where I4 vanishes at rank-deficient covariances: 4e-12 measured)
                floor = 1e-11 * self._r ** 4 * np.sqrt(np.abs(_diag(C, 2) * _diag(C, 3)))
                return v, np.abs(v - _family_I4(C, self._r, *self._family, n=8)) + floor
            return v
        else:
            g, d = self.activation, self.activation.deriv
            out = [_generic_mean("committee.integrals.I4", c, (d, d, g, g), self.m2, self.m4)
                   for c in C.reshape(-1, 4, 4)]
            v, e = (np.array([o[i] for o in out]).reshape(C.shape[:-2]) for i in (0, 1))
            return (v, e) if err else v
        return self._out(v, err)


def _arccos_terms(a, b, c):
    r"""For the 2 x 2 covariance [[a, c], [c, b]]: :math:`\sqrt{\det}` and :math:`\pi - \theta`,
    :math:`\theta = \arccos(c/\sqrt{ab})`, as ``atan2`` of the accurate determinant (no correlation formed, so
    repeated and antipodal fields keep full accuracy; a zero-variance field counts as uncorrelated,
    :math:`\theta = \pi/2`)."""
    root = np.sqrt(det2(a, b, c))
    pi_th = np.where((a > 0) & (b > 0), np.arctan2(root, -c), np.pi / 2)
    return root, pi_th


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
        First resolution of the 2-D quadratures (I2, I3, J2 without closed form, and I4 of up to three distinct
        fields), >= 2: a polar rule with m2/4 Gauss-Legendre angles on each arc between the lines where a field
        vanishes and m2/2 Gauss radii, refined by 3/2 until a refinement changes the value by at most 1e-11 of its
        scale (at most 324); the error estimate is the last change plus the sum's rounding.
    m4 : int
        Gauss-Hermite nodes per axis of a tensor rule (kept for the signature; I4 of four distinct fields is now
        conditioned and does not use it), >= 2.

    Returns
    -------
    Integrals

    Notes
    -----
    Regime: :math:`\mathbb E g(a)^2 < \infty`; quadrature exponentially convergent for g smooth away from 0 (kinks
    elsewhere, e.g. a ``from_callable`` with ``kinks=(1.0,)``, are not split). Closed forms: erf at any scale (all
    four), linear (all four), the ReLU family relu, abs, leaky ReLU at any scale (I2, I3, J2; I4 up to Plackett's
    smooth 1-D integral). Accuracy (each method's Notes, asserted by the tests over standard deviations
    2^-7 .. 2^3, repeated, antipodal and near-repeated fields and any rank): closed forms <= 1e-10 (erf and linear
    <= 1e-12; the ReLU family's I4 <= 1e-8), quadrature <= 1e-10 (I4 of four distinct fields <= 1e-8), relative
    to max(|value|, 1e-3 s), s the product of the factors' root mean squares. Cached per (activation, m2, m4).

    References
    ----------
    .. [src] Saad & Solla 1995 eqs. (A1)-(A5); Goldt et al. 2019 eqs. (S29)-(S33).

    Examples
    --------
    >>> ig = integrals("relu")
    >>> sorted(ig.closed)
    ['I2', 'I3', 'I4', 'J2']
    >>> round(float(ig.I2(np.eye(2))), 12)     # (E relu)^2 = 1/(2 pi)
    0.159154943092
    """
    act = activations.get(activation)
    return _integrals(act, as_int("committee.integrals", "m2", m2, 2), as_int("committee.integrals", "m4", m4, 2))
