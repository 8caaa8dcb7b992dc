r"""Gaussian conditioning for the four-field averages of activations without closed forms (private helpers).

A four-field average :math:`\mathbb E[h_1(x_1)h_2(x_2)h_3(x_3)h_4(x_4)]`, each :math:`h_i` smooth away from 0, is written
as an outer 2-D average over :math:`(x_1, x_2)` (the polar rule of ``integrals._polar_nodes``, split where either field
vanishes and where the conditional mean of :math:`x_3` or :math:`x_4` vanishes) of the conditional average

.. math:: H(\mu_3, \mu_4) = \mathbb E[h_3(\mu_3 + s_3z)\,G(\mu_4 + \beta s_3z)],\qquad
          G(m) = \mathbb E[h_4(m + s_{4|3}w)],\quad z, w \sim N(0, 1),

with :math:`\mu_i` the conditional means (linear in :math:`x_1, x_2`), :math:`s_3` the conditional standard deviation
of :math:`x_3` and :math:`s_{4|3}` that of :math:`x_4` given :math:`x_1, x_2, x_3`. The z average is a Gauss-Legendre
rule on panels graded towards the kinks (:func:`line_rule`: split where :math:`x_3 = 0`, where the argument of G is 0,
and at the centre of the weight; the grading a :class:`Line`); G, a function of one variable at a fixed
:math:`s_{4|3}`, is a piecewise Chebyshev table (:class:`Smoothed`), its panels graded towards 0 down to the width
:math:`s_{4|3}`, each value by the same graded rule. The z average runs in one compiled loop (:func:`_pair_fused`:
nodes, weights and values on the fly) on fine tables of :math:`h_3` and G (:class:`Uniform`: degree 7 on panels of
0.05, and of :math:`s_{4|3}/16` within :math:`12s_{4|3}` of 0; a look-up without search), 2.5-3x faster than the
values of :math:`h_3` by numpy and G by bisection and Clenshaw at each node (kept where the fine table would exceed
2^15 panels). A field whose conditional standard deviation is below 1e-7 of its scale is its conditional mean (no
table). The eta^2 term of the overlap ODE uses the same pieces with :math:`\Delta^2` expanded over the conditioned
fields (:func:`eta2`).
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numba
import numpy as np

__all__ = []

_CLIP, _SPAN = 7.5, 8.6         # split points clipped to +-7.5 (weight beyond: e^-28); the rule spans [-8.6, 8.6]
_DEG = 16                       # Chebyshev degree of each table panel
_CHUNK = 2048                   # outer nodes per block of the conditional rule (its arrays: 2048 x 400 floats)
_TINY = 1e-7                    # a conditional standard deviation below 1e-7 of the field's is zero
_FAR = 36.8                     # a node with z^2/2 > 36.8 (Gaussian weight < 1.1e-16 of its peak) is dropped
_UDEG, _UW, _UCAP = 7, 0.05, 1 << 15   # fine tables: degree 7, panels <= 0.05 and <= 1/16 of the smoothing, <= 2^15


class Line(NamedTuple):
    """A graded rule for each half-segment of :func:`line_rule`: the panel edges ``grade`` in [0, 1] (graded towards
    0, the half's end) and q Gauss-Legendre nodes per panel."""
    grade: tuple
    q: int


_GRADE = (0.0, 0.005, 0.02, 0.06, 0.15, 0.3, 0.5, 0.75, 1.0)    # eight panels, the first 0.005 of the half wide
GRADED5, GRADED7 = Line(_GRADE, 5), Line(_GRADE, 7)             # 40 and 56 nodes per half-segment
GRADED3 = Line((0.0, 0.08, 0.35, 1.0), 9)                       # three panels, 27 nodes per half-segment


@functools.lru_cache(maxsize=16)
def _grade(line):
    """Offsets in [0, 1] (graded towards 0) and Gauss-Legendre weights of the :class:`Line` rule of one half."""
    x, w = np.polynomial.legendre.leggauss(line.q)
    g = np.asarray(line.grade, dtype=np.float64)
    a, b = g[:-1, None], g[1:, None]
    return ((a + b) / 2 + (b - a) / 2 * x).ravel(), ((b - a) / 2 * w).ravel()


def line_rule(splits, line):
    r"""Nodes z (N, n) and weights (N, n) of :math:`\mathbb E f(z)`, z ~ N(0, 1), for each row of ``splits`` (N, k): the
    line cut at the split points (clipped to +-7.5), at 0 and at +-9.5, each segment halved and each half on the
    panels of the :class:`Line` rule graded towards its end (the tails too: graded halves from their inner end
    alone left the weight's bulk on panels 2-4 wide, 1e-7 at q = 5): exponential convergence for f analytic between
    the splits, with singularities near a split (a pole at distance 1/s, as softsign's branch at a standard
    deviation s, or tanh's at pi/(2s)) resolved by the grading (measured for softsign, tanh and their squares at
    s = 0.01 .. 8, one split: GRADED5 3e-9 for s <= 2, 6e-8 at s = 8, at q = 6 2e-10 and 5e-9; GRADED3, three panels
    of 9 nodes, 27 per half: <= 7e-11 for s <= 2, 3e-9 at s = 4, 3e-8 at s = 8)."""
    t, wt = _grade(line)
    return _line_nb(np.ascontiguousarray(np.atleast_2d(splits), dtype=np.float64), t, wt)


@numba.njit(cache=True)
def _line_nb(splits, t, wt):  # pragma: no cover - compiled
    """The nodes and Gaussian-weighted weights of :func:`line_rule`, one row per row of ``splits``."""
    N, k = splits.shape
    npts, nt = k + 3, t.size
    n = 2 * (npts - 1) * nt
    z, w = np.empty((N, n)), np.empty((N, n))
    pts = np.empty(npts)
    c = 1.0 / math.sqrt(2.0 * math.pi)
    for i in range(N):
        pts[0], pts[1], pts[2] = -_SPAN, 0.0, _SPAN
        for j in range(k):
            pts[3 + j] = min(max(splits[i, j], -_CLIP), _CLIP)
        pts.sort()
        col = 0
        for sgm in range(npts - 1):
            A, C = pts[sgm], pts[sgm + 1]
            h = 0.5 * (C - A)
            for r in range(nt):
                for zz in (A + h * t[r], C - h * t[r]):
                    z[i, col] = zz
                    w[i, col] = h * wt[r] * math.exp(-0.5 * zz * zz) * c
                    col += 1
    return z, w


def _breaks(lo, hi, s):
    """Panel edges on [lo, hi]: width min(s, 1/4) up to 4 widths from 0, then doubling, then 1/2 + |m|/4."""
    w0 = min(s, 0.25)
    R = max(abs(lo), abs(hi))
    pos = [0.0]
    while pos[-1] < R:
        x = pos[-1]
        pos.append(x + (w0 if x < 4 * w0 else min(x, 0.5 + 0.25 * x)))
    e = np.unique(np.concatenate([-np.array(pos), pos]))
    return np.concatenate([[lo], e[(e > lo) & (e < hi)], [hi]])


@functools.lru_cache(maxsize=4)
def _cheb(deg):
    """Chebyshev points of the first kind on [-1, 1] and the matrix from values to coefficients."""
    k = np.arange(deg + 1)
    th = np.pi * (k + 0.5) / (deg + 1)
    M = 2.0 / (deg + 1) * np.cos(np.outer(k, th))
    M[0] /= 2
    return np.cos(th), M


class Smoothed:
    r"""Tables of :math:`G_p(m) = \mathbb E[h(m + sw)^p]`, w ~ N(0, 1), for each of ``powers`` on [lo, hi]: piecewise
    Chebyshev of degree 16 on the panels of :func:`_breaks`, the values by :func:`line_rule` split where the argument
    vanishes (h evaluated once for all powers). ``tail``: the largest of the last two coefficients over the panels,
    relative to max |G| (the interpolation error's estimate). ``s = 0``: the powers of h themselves, no table."""

    def __init__(self, h, s, lo, hi, line, powers=(1,)):
        self.h, self.s, self.powers = h, s, powers
        self.tail = 0.0
        if s == 0.0:
            return
        lo, hi = min(lo, -1e-3), max(hi, 1e-3)
        self.edges = _breaks(lo, hi, s)
        x, M = _cheb(_DEG)
        a, b = self.edges[:-1, None], self.edges[1:, None]
        m = ((a + b) / 2 + (b - a) / 2 * x).ravel()
        z, w = line_rule(-m[:, None] / s, line)
        hv = h(m[:, None] + s * z)
        self.coef = []
        for p in powers:
            vals = ((hv if p == 1 else hv ** p) * w).sum(-1).reshape(len(a), _DEG + 1)
            c = np.ascontiguousarray(vals @ M.T)
            self.coef.append(c)
            top = max(np.abs(vals).max(), 1e-300)
            self.tail = max(self.tail, float(np.abs(c[:, -2:]).max() / top))

    def __call__(self, j, m):
        if self.s == 0.0:
            p = self.powers[j]
            return self.h(m) if p == 1 else self.h(m) ** p
        return _cheb_eval(np.ascontiguousarray(m, dtype=np.float64).ravel(), self.edges, self.coef[j]).reshape(
            np.shape(m))


@numba.njit(cache=True)
def _cheb_one(xv, edges, coef):  # pragma: no cover - compiled
    """The piecewise Chebyshev series at one x (clamped to the table's range): panel by bisection, Clenshaw."""
    n, deg = edges.size - 1, coef.shape[1] - 1
    xv = min(max(xv, edges[0]), edges[n])
    lo, hi = 0, n - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if edges[mid] <= xv:
            lo = mid
        else:
            hi = mid - 1
    a, b = edges[lo], edges[lo + 1]
    t = (2.0 * xv - a - b) / (b - a)
    b1, b2 = 0.0, 0.0
    for k in range(deg, 0, -1):
        b1, b2 = 2.0 * t * b1 - b2 + coef[lo, k], b1
    return t * b1 - b2 + coef[lo, 0]


@numba.njit(cache=True)
def _cheb_eval(x, edges, coef):  # pragma: no cover - compiled
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = _cheb_one(x[i], edges, coef)
    return out


@numba.njit(cache=True)
def _pair_reduce(G3, m4, bs, z, w, edges, coef):  # pragma: no cover - compiled
    """sum_k G3[i, k] G(m4[i] + bs z[i, k]) w[i, k] per row i, G the table (no temporaries)."""
    N, n = z.shape
    out = np.zeros(N)
    for i in range(N):
        acc = 0.0
        for k in range(n):
            acc += G3[i, k] * _cheb_one(m4[i] + bs * z[i, k], edges, coef) * w[i, k]
        out[i] = acc
    return out


@functools.lru_cache(maxsize=4)
def _fit(deg):
    """Chebyshev points of [-1, 1] and the matrix from values there to power-series coefficients."""
    x = np.cos(np.pi * (np.arange(deg + 1) + 0.5) / (deg + 1))
    return x, np.linalg.inv(np.vander(x, deg + 1, increasing=True))


class Uniform:
    r"""A fine table of f on [lo, hi] for the compiled pair kernel: panels of width ``w`` on a grid through 0 (so a
    kink at 0 is a panel edge), on each the degree-7 interpolant at Chebyshev points as a power series in
    t in [-1, 1]; a look-up is one multiplication (no search) and 7 multiply-adds. With ``near`` = (Z, w0), panels
    of width w0 on [-Z, Z] (Z a multiple of w) and of w outside, in one array (a branch-free choice): a smoothed
    kink at 0 resolved without fine panels everywhere. ``err``: the largest difference from f at four other points
    per panel, relative to max |f|. ``args``: the compiled look-up's arguments."""

    def __init__(self, f, lo, hi, w, near=None):
        coarse = _Grid(f, lo, hi, w)
        Z, w0 = near if near is not None else (-1.0, w)
        fine = _Grid(f, max(lo, -Z), min(hi, Z), w0) if Z > 0 else None
        inside = lambda x: np.abs(x) <= Z
        self.err = coarse.check(f, lo, hi, lambda x: ~inside(x))
        if fine is None:
            self.args = (-1.0, coarse.coef, 0.0, 1.0, 0, coarse.lo, coarse.inv)
            return
        self.err = max(self.err, fine.check(f, lo, hi, inside))
        self.args = (float(Z), np.ascontiguousarray(np.concatenate([fine.coef, coarse.coef])), fine.lo, fine.inv,
                     len(fine.coef), coarse.lo, coarse.inv)


class _Grid:
    """One uniform grid of :class:`Uniform`."""

    def __init__(self, f, lo, hi, w):
        n0, n1 = math.floor(min(lo, -w) / w), math.ceil(max(hi, w) / w)
        self.lo, self.inv, self.w, n = n0 * w, 1.0 / w, w, n1 - n0
        x, Vi = _fit(_UDEG)
        self.left = self.lo + w * np.arange(n)
        self.vals = f((self.left[:, None] + w * (x + 1) / 2).ravel()).reshape(n, _UDEG + 1)
        self.coef = np.ascontiguousarray(self.vals @ Vi.T)

    def check(self, f, lo, hi, keep):
        x = (self.left[:, None] + self.w * np.array([0.13, 0.37, 0.61, 0.89])).ravel()
        x = x[(x >= lo) & (x <= hi) & keep(x)]
        if x.size == 0:
            return 0.0
        got = _uni_eval(x, (-1.0, self.coef, 0.0, 1.0, 0, self.lo, self.inv))
        return float(np.abs(f(x) - got).max() / max(np.abs(self.vals).max(), 1e-300))


def _panels(lo, hi, w):
    """The number of panels of width w covering [lo, hi] and 0."""
    return (max(hi, w) - min(lo, -w)) / w


@numba.njit(cache=True, inline="always")
def _uni(x, T):  # pragma: no cover - compiled
    """A :class:`Uniform` table T = (Z, coef, lof, invf, nf, loc, invc) at x (clamped to its range): the fine grid's
    panel on [-Z, Z] (rows < nf), the coarse one's outside, then Horner in t^2 on the even and odd halves."""
    Z, coef, lof, invf, nf, loc, invc = T
    n, deg = coef.shape[0], coef.shape[1] - 1
    inside = abs(x) <= Z
    y = (x - lof) * invf if inside else (x - loc) * invc
    off = 0 if inside else nf
    top = nf - 1 if inside else n - nf - 1
    y = min(max(y, 0.0), top + 1.0)
    p = min(int(y), top)
    t = 2.0 * (y - p) - 1.0
    p += off
    t2 = t * t
    ev, od = coef[p, deg - 1], coef[p, deg]
    for k in range(deg - 3, -1, -2):
        ev = ev * t2 + coef[p, k]
        od = od * t2 + coef[p, k + 1]
    return ev + t * od


@numba.njit(cache=True)
def _uni_eval(x, T):  # pragma: no cover - compiled
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = _uni(x[i], T)
    return out


@numba.njit(cache=True)
def _pair_fused(m3, m4, s3, bs, split4, t, wt, T3, T4):  # pragma: no cover - compiled
    r"""Per row i, :math:`\sum_k h_3(m_{3i} + s_3z_k)G(m_{4i} + b z_k)w_k` on the rule of :func:`line_rule` (split at
    x_3's kink, and at G's when ``split4``), nodes, weights and both tables' values on the fly (no temporaries)."""
    N, nt = m3.size, t.size
    out = np.empty(N)
    pts = np.empty(5)
    c = 1.0 / math.sqrt(2.0 * math.pi)
    for i in range(N):
        pts[0], pts[1], pts[2] = -_SPAN, 0.0, _SPAN
        pts[3] = min(max(-m3[i] / s3, -_CLIP), _CLIP)
        npts = 4
        if split4:
            pts[4] = min(max(-m4[i] / bs, -_CLIP), _CLIP)
            npts = 5
        for a in range(1, npts):                 # insertion sort of the split points
            v, b = pts[a], a - 1
            while b >= 0 and pts[b] > v:
                pts[b + 1] = pts[b]
                b -= 1
            pts[b + 1] = v
        acc = 0.0
        for sgm in range(npts - 1):
            A, C = pts[sgm], pts[sgm + 1]
            h = 0.5 * (C - A)
            for r in range(nt):
                for z in (A + h * t[r], C - h * t[r]):
                    e = 0.5 * z * z
                    if e < _FAR:                   # beyond, the Gaussian weight is below 1e-16 of its peak
                        acc += h * wt[r] * math.exp(-e) * _uni(m3[i] + s3 * z, T3) * _uni(m4[i] + bs * z, T4)
        out[i] = acc * c
    return out


def condition(C, outer):
    """For the covariance C (n, n) and two outer fields: (B, s) with the conditional means of the other fields
    ``B @ x_outer`` (rows in the order of the remaining indices) and their conditional covariance ``s`` (psd)."""
    rest = [i for i in range(len(C)) if i not in outer]
    Coo = C[np.ix_(outer, outer)]
    B = C[np.ix_(rest, outer)] @ np.linalg.pinv(Coo, rcond=1e-13, hermitian=True)
    S = C[np.ix_(rest, rest)] - B @ C[np.ix_(outer, rest)]
    return rest, B, (S + S.T) / 2


def pair_mean(h3, h4, mu3, mu4, S, scale, line):
    r""":math:`\mathbb E[h_3(x_3)h_4(x_4)\mid x_1, x_2]` at the outer nodes, the conditional means ``mu3``, ``mu4`` (any
    shape) and conditional covariance S (2, 2); ``scale`` (2,) the fields' standard deviations (what "tiny" is
    measured against). Returns ``(value, table)``: x_3 by :func:`line_rule` split at its kink and where the argument
    of the table vanishes, x_4 given x_3 by a :class:`Smoothed` table over the arguments met (``table.tail``: its
    interpolation estimate; None where no table was needed)."""
    s3 = math.sqrt(max(S[0, 0], 0.0))
    s4 = math.sqrt(max(S[1, 1], 0.0))
    if s3 <= _TINY * scale[0] and s4 <= _TINY * scale[1]:
        return h3(mu3) * h4(mu4), None
    if s3 <= _TINY * scale[0]:                  # x_3 determined: integrate x_4 instead
        return pair_mean(h4, h3, mu4, mu3, S[::-1, ::-1], scale[::-1], line)
    beta = S[0, 1] / S[0, 0]
    s43 = math.sqrt(max(S[1, 1] - beta * S[0, 1], 0.0))
    if s43 <= _TINY * scale[1]:
        s43 = 0.0
    shape = np.shape(mu3)
    m3, m4 = np.ravel(mu3), np.ravel(mu4)
    bs = beta * s3
    reach = _SPAN * abs(bs)
    split4 = s43 < 0.5 * abs(bs)                # the table's smoothing narrower than 1/2 in z: split at its kink
    lo4, hi4 = float(m4.min()) - reach, float(m4.max()) + reach
    w0 = s43 / 16                               # panels near 0: 1/16 of the smoothing (G's kink is s43 wide)
    Z = _UW * math.ceil(12 * s43 / _UW)         # beyond 12 s43 from the kink G is as smooth as h4 (e^-72)
    fused = s43 > 0.0 and _panels(max(lo4, -Z), min(hi4, Z), w0) < _UCAP
    pad = 2 * _UW if fused else 0.0             # the fine table's panels reach up to _UW past [lo4, hi4]
    table = Smoothed(h4, s43, lo4 - pad, hi4 + pad, line)
    if fused:
        fine4 = Uniform(lambda x: table(0, x), lo4, hi4, _UW, (Z, w0) if w0 < _UW else None)
        fine3 = Uniform(h3, float(m3.min()) - _SPAN * s3, float(m3.max()) + _SPAN * s3, _UW)
        table.tail = max(table.tail, fine4.err, fine3.err)
        t, wt = _grade(line)
        val = _pair_fused(np.ascontiguousarray(m3, dtype=np.float64), np.ascontiguousarray(m4, dtype=np.float64), s3,
                          bs, split4 and bs != 0.0, t, wt, fine3.args, fine4.args)
        return val.reshape(shape), table
    val = np.empty(m3.size)
    for c in range(0, m3.size, _CHUNK):
        a3, a4 = m3[c:c + _CHUNK], m4[c:c + _CHUNK]
        kink4 = -a4 / bs if bs != 0.0 else np.full(a4.size, 20.0)
        z, w = line_rule(np.stack([-a3 / s3, kink4], 1) if split4 else (-a3 / s3)[:, None], line)
        G3 = np.ascontiguousarray(h3(a3[:, None] + s3 * z))
        if s43 == 0.0:
            val[c:c + _CHUNK] = (G3 * h4(a4[:, None] + bs * z) * w).sum(-1)
        else:
            val[c:c + _CHUNK] = _pair_reduce(G3, a4, bs, z, w, table.edges, table.coef[0])
    return val.reshape(shape), table


class Eta2Rule(NamedTuple):
    """The rule of :func:`eta2`: the polar rule's m (m/4 angles per arc), its radii for the one-field terms and for the
    pair terms (the costly part: a line rule per node), and the :class:`Line` rule of the inner averages; where a
    conditioned field has a narrow layer (:data:`_LAYER`), the radii of the graded rule."""
    m: int
    radii: int
    pair_radii: int
    line: Line
    layer_radii: int
    layer_pair_radii: int


_LAYER = 0.25   # a conditioned field whose conditional sd is below 1/4 of its conditional mean's has a narrow layer


def _grown(m, radii, pair_radii, line, sd):
    """The rule's m, radii and inner line rule's q grown by sd / 2 for fields of standard deviation ``sd`` above 2
    (g(sd z) varies on a scale 1/sd of the rules'), the radii at most 200 (the radial rule's domain). Without q's
    growth the inner averages were 5.3e-8 off at variances ~10 (abs)."""
    f = max(1.0, sd / 2.0)
    return (4 * math.ceil(m * f / 4), min(200, math.ceil(radii * f)), min(200, math.ceil(pair_radii * f)),
            Line(line.grade, math.ceil(line.q * f)))


def _outer(polar_nodes, C2, m, lines, radii, widths=None):
    """The polar rule's nodes (N, 2) and weights (N,) without the radii whose weight is below 1e-16 of the largest
    (the values there are O(1)); ordered so that the second half of the nodes is the first half negated (the circle is
    split at antipodal pairs of angles), up to rounding."""
    x, w = polar_nodes(C2, m, lines, radii, widths, prune=True)
    return x.reshape(-1, 2), w.ravel()


def _parity(g):
    """+1 if g is even, -1 if odd, 0 otherwise: g(-x) = +-g(x) to 1e-14 at 97 points of [1/32, 40]."""
    x = np.linspace(0.03125, 40.0, 97)
    a, b = g(x), g(-x)
    tol = 1e-14 * (np.abs(a) + np.abs(b)) + 1e-300
    return 1 if np.all(np.abs(a - b) <= tol) else -1 if np.all(np.abs(a + b) <= tol) else 0


def _symmetric_mean(fn, x, mu, sym):
    """fn(mu) at every node, evaluated on the first half of the nodes only where the conditional average is even in
    the outer fields (``sym``) and the second half of ``x`` mirrors the first."""
    n = len(x) // 2
    if sym and len(x) % 2 == 0 and np.allclose(x[n:], -x[:n], rtol=0, atol=1e-13 * np.abs(x).max()):
        v, t = fn(mu[:n])
        return np.concatenate([v, v]), t
    return fn(mu)


def eta2(g, Om, u, K, s2, rule, polar_nodes):
    r"""The :math:`\eta^2` term :math:`E_{kl} = \mathbb E[g'(\lambda_k)g'(\lambda_l)(\Delta^2 + \sigma^2)]`, (K, K), by
    conditioning on two fields: for each student pair (k, l) (K = 1: the student and its least correlated field)
    the polar rule ``polar_nodes(C, m, lines, radii)`` over :math:`(\lambda_k, \lambda_l)`, split also where a
    conditional mean vanishes, of :math:`\mathbb E[\Delta^2 \mid \lambda_k, \lambda_l]` expanded over the other
    fields: one-field moments from :class:`Smoothed` tables of g and g^2 (at ``rule.radii``), two-field ones by
    :func:`pair_mean` (at ``rule.pair_radii``; for an odd or even g on the first half of the antipodal nodes only, the
    pair average being even in the outer fields). A conditioned field nearly determined by the outer ones (conditional
    sd below ``_LAYER`` of its mean's: a student near a teacher) puts a layer as wide as its conditional sd about the
    line where its conditional mean vanishes (g's kink, or its fast change, smoothed): the polar rule's arcs are then
    graded towards that line and take ``rule.layer_radii`` and ``rule.layer_pair_radii`` (without: 1.2e-5 off at
    R = T - 1e-5, abs); m and the radii grow with the fields' sd (:func:`_grown`). Returns ``(E, tail)``, tail the
    largest table estimate."""
    P = len(Om)
    d = g.deriv
    even = _parity(g) != 0          # E[g(x_i)g(x_j) | outer] is then even in the outer fields
    sd = np.sqrt(np.maximum(np.diag(Om), 0.0))
    if K >= 2:
        pairs = [(k, l) for k in range(K) for l in range(k + 1, K)]
    else:
        corr = [abs(Om[0, j]) / max(sd[0] * sd[j], 1e-300) for j in range(1, P)]
        pairs = [(0, 1 + int(np.argmin(corr)))]
    E, done, tail = np.zeros((K, K)), np.zeros((K, K), dtype=bool), 0.0
    for p, r in pairs:
        if done[p, p] and done[r, r] and done[p, r]:
            continue
        rest, B, S = condition(Om, [p, r])
        C2, lines = Om[np.ix_([p, r], [p, r])], (B if len(rest) else None)
        s_rest = np.sqrt(np.maximum(np.diag(S), 0.0))
        s_rest = np.where(s_rest > _TINY * sd[rest], s_rest, np.inf)     # a determined field: an exact kink, split
        widths = (s_rest if len(rest) and np.any(s_rest < _LAYER * np.sqrt(np.maximum(
            np.einsum("ij,jk,ik->i", B, C2, B), 0.0))) else None)
        radii, pair_radii = ((rule.radii, rule.pair_radii) if widths is None else
                             (rule.layer_radii, rule.layer_pair_radii))
        m, radii, pair_radii, line = _grown(rule.m, radii, pair_radii, rule.line, float(sd.max()))
        x, w = _outer(polar_nodes, C2, m, lines, radii, widths)
        a, b = x[..., 0], x[..., 1]
        mu = x @ B.T
        D0 = u[p] * g(a) + u[r] * g(b)
        inner = D0 * D0 + s2
        for i, fi in enumerate(rest):
            si = math.sqrt(max(S[i, i], 0.0))
            t = Smoothed(g, si if si > _TINY * sd[fi] else 0.0, float(mu[:, i].min()), float(mu[:, i].max()),
                         line, powers=(1, 2))
            tail = max(tail, t.tail)
            inner = inner + 2 * u[fi] * D0 * t(0, mu[:, i]) + u[fi] ** 2 * t(1, mu[:, i])
        terms = [(x, w, inner)]
        if len(rest) >= 2:
            xp, wp = _outer(polar_nodes, C2, m, lines, pair_radii, widths) if pair_radii != radii else (x, w)
            mup, cross = xp @ B.T, 0.0
            for i, fi in enumerate(rest):
                for j in range(i + 1, len(rest)):
                    fj = rest[j]
                    v, t2 = _symmetric_mean(lambda m: pair_mean(g, g, m[:, i], m[:, j], S[np.ix_([i, j], [i, j])],
                                                                sd[[fi, fj]], line), xp, mup, even)
                    tail = max(tail, t2.tail if t2 is not None else 0.0)
                    cross = cross + 2 * u[fi] * u[fj] * v
            terms.append((xp, wp, cross))
        for xs, ws, val in terms:
            da, db = d(xs[..., 0]), d(xs[..., 1])
            for (k, l, f) in ((p, p, da * da), (r, r, db * db), (p, r, da * db)):
                if k < K and l < K and not done[k, l]:
                    E[k, l] += (f * val * ws).sum()
        for k, l in ((p, p), (r, r), (p, r)):
            if k < K and l < K and not done[k, l]:
                E[l, k] = E[k, l]
                done[k, l] = done[l, k] = True
    return E, tail
