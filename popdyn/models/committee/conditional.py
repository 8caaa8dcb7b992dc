r"""Gaussian conditioning for the four-field averages of activations without closed forms (private helpers).

A four-field average :math:`\mathbb E[h_1(x_1)h_2(x_2)h_3(x_3)h_4(x_4)]`, each :math:`h_i` smooth away from 0, is written
as an outer 2-D average over :math:`(x_1, x_2)` (the polar rule of ``integrals._polar_nodes``, split where either field
vanishes and where the conditional mean of :math:`x_3` or :math:`x_4` vanishes) of the conditional average

.. math:: H(\mu_3, \mu_4) = \mathbb E[h_3(\mu_3 + s_3z)\,G(\mu_4 + \beta s_3z)],\qquad
          G(m) = \mathbb E[h_4(m + s_{4|3}w)],\quad z, w \sim N(0, 1),

with :math:`\mu_i` the conditional means (linear in :math:`x_1, x_2`), :math:`s_3` the conditional standard deviation
of :math:`x_3` and :math:`s_{4|3}` that of :math:`x_4` given :math:`x_1, x_2, x_3`. The z average is a Gauss-Legendre
rule on panels graded towards the kinks (:func:`line_rule`: split where :math:`x_3 = 0`, where the argument of G is 0,
and at the centre of the weight); G, a function of one variable at a fixed :math:`s_{4|3}`, is a piecewise Chebyshev
table (:class:`Smoothed`), its panels graded towards 0 down to the width :math:`s_{4|3}`, each value by the same graded
rule. A field whose conditional standard deviation is below 1e-7 of its scale is its conditional mean (no table).
The eta^2 term of the overlap ODE uses the same pieces with :math:`\Delta^2` expanded over the conditioned fields.
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np

__all__ = []

_GRADE = np.array([0.0, 0.005, 0.02, 0.06, 0.15, 0.3, 0.5, 0.75, 1.0])    # half-segment panels, graded to its end
_CLIP, _SPAN = 7.5, 9.5         # split points clipped to +-7.5 (weight beyond: e^-28); the rule spans [-9.5, 9.5]
_DEG = 16                       # Chebyshev degree of each table panel
_CHUNK = 2048                   # outer nodes per block of the conditional rule (its arrays: 2048 x 400 floats)
_TINY = 1e-7                    # a conditional standard deviation below 1e-7 of the field's is zero


@functools.lru_cache(maxsize=16)
def _grade(q):
    """Offsets in [0, 1] (graded towards 0) and Gauss-Legendre weights, q nodes per panel of :data:`_GRADE`."""
    x, w = np.polynomial.legendre.leggauss(q)
    a, b = _GRADE[:-1, None], _GRADE[1:, None]
    return ((a + b) / 2 + (b - a) / 2 * x).ravel(), ((b - a) / 2 * w).ravel()


def line_rule(splits, q):
    r"""Nodes z (N, n) and weights (N, n) of :math:`\mathbb E f(z)`, z ~ N(0, 1), for each row of ``splits`` (N, k): the
    line cut at the split points (clipped to +-7.5), at 0 and at +-9.5, each segment halved and each half on the
    panels of :data:`_GRADE` graded towards its end (the tails too: graded halves from their inner end alone left
    the weight's bulk on panels 2-4 wide, 1e-7 at q = 5) (q Gauss-Legendre nodes per panel): exponential convergence for f
    analytic between the splits, with singularities near a split (a pole at distance 1/s, as softsign's branch at
    a standard deviation s, or tanh's at pi/(2s)) resolved by the grading (measured for softsign, tanh and their
    squares at s = 0.01 .. 8, one split: 3e-9 at q = 5 for s <= 2, 6e-8 at s = 8; 2e-10 and 5e-9 at q = 6)."""
    t, wt = _grade(q)
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
    r"""Tables of :math:`G_j(m) = \mathbb E[h_j(m + sw)]`, w ~ N(0, 1), for the functions ``hs`` on [lo, hi]: piecewise
    Chebyshev of degree 16 on the panels of :func:`_breaks`, the values by :func:`line_rule` split where the argument
    vanishes. ``tail``: the largest of the last two coefficients over the panels, relative to max |G| (the
    interpolation error's estimate). ``s = 0``: the functions themselves, no table."""

    def __init__(self, hs, s, lo, hi, q):
        self.hs, self.s = hs, s
        self.tail = 0.0
        if s == 0.0:
            return
        lo, hi = min(lo, -1e-3), max(hi, 1e-3)
        self.edges = _breaks(lo, hi, s)
        x, M = _cheb(_DEG)
        a, b = self.edges[:-1, None], self.edges[1:, None]
        m = ((a + b) / 2 + (b - a) / 2 * x).ravel()
        z, w = line_rule(-m[:, None] / s, q)
        arg = m[:, None] + s * z
        self.coef = []
        for h in hs:
            vals = (h(arg) * w).sum(-1).reshape(len(a), _DEG + 1)
            c = np.ascontiguousarray(vals @ M.T)
            self.coef.append(c)
            top = max(np.abs(vals).max(), 1e-300)
            self.tail = max(self.tail, float(np.abs(c[:, -2:]).max() / top))

    def __call__(self, j, m):
        if self.s == 0.0:
            return self.hs[j](m)
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


def condition(C, outer):
    """For the covariance C (n, n) and two outer fields: (B, s) with the conditional means of the other fields
    ``B @ x_outer`` (rows in the order of the remaining indices) and their conditional covariance ``s`` (psd)."""
    rest = [i for i in range(len(C)) if i not in outer]
    Coo = C[np.ix_(outer, outer)]
    B = C[np.ix_(rest, outer)] @ np.linalg.pinv(Coo, rcond=1e-13, hermitian=True)
    S = C[np.ix_(rest, rest)] - B @ C[np.ix_(outer, rest)]
    return rest, B, (S + S.T) / 2


def pair_mean(h3, h4, mu3, mu4, S, scale, q):
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
        return pair_mean(h4, h3, mu4, mu3, S[::-1, ::-1], scale[::-1], q)
    beta = S[0, 1] / S[0, 0]
    s43 = math.sqrt(max(S[1, 1] - beta * S[0, 1], 0.0))
    if s43 <= _TINY * scale[1]:
        s43 = 0.0
    shape = np.shape(mu3)
    m3, m4 = np.ravel(mu3), np.ravel(mu4)
    bs = beta * s3
    reach = _SPAN * abs(bs)
    split4 = s43 < 0.5 * abs(bs)                # the table's smoothing narrower than 1/2 in z: split at its kink
    table = Smoothed((h4,), s43, float(m4.min()) - reach, float(m4.max()) + reach, q)
    val = np.empty(m3.size)
    for c in range(0, m3.size, _CHUNK):
        a3, a4 = m3[c:c + _CHUNK], m4[c:c + _CHUNK]
        kink4 = -a4 / bs if bs != 0.0 else np.full(a4.size, 20.0)
        z, w = line_rule(np.stack([-a3 / s3, kink4], 1) if split4 else (-a3 / s3)[:, None], q)
        G3 = np.ascontiguousarray(h3(a3[:, None] + s3 * z))
        if s43 == 0.0:
            val[c:c + _CHUNK] = (G3 * h4(a4[:, None] + bs * z) * w).sum(-1)
        else:
            val[c:c + _CHUNK] = _pair_reduce(G3, a4, bs, z, w, table.edges, table.coef[0])
    return val.reshape(shape), table


def eta2(g, Om, u, K, s2, m, q, polar_nodes):
    r"""The :math:`\eta^2` term :math:`E_{kl} = \mathbb E[g'(\lambda_k)g'(\lambda_l)(\Delta^2 + \sigma^2)]`, (K, K), by
    conditioning on two fields: for each student pair (k, l) (K = 1: the student and its least correlated field)
    the polar rule of ``polar_nodes`` at m over :math:`(\lambda_k, \lambda_l)`, split also where a conditional mean
    vanishes, of :math:`\mathbb E[\Delta^2 \mid \lambda_k, \lambda_l]` expanded over the other fields: one-field
    moments from :class:`Smoothed` tables of g and g^2, two-field ones by :func:`pair_mean`. Returns ``(E, tail)``,
    tail the largest table estimate."""
    P = len(Om)
    d, g2 = g.deriv, (lambda x: g(x) ** 2)
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
        x, w = polar_nodes(Om[np.ix_([p, r], [p, r])], m, B if len(rest) else None)
        a, b = x[..., 0], x[..., 1]
        mu = x @ B.T
        D0 = u[p] * g(a) + u[r] * g(b)
        inner = D0 * D0 + s2
        for i, fi in enumerate(rest):
            si = math.sqrt(max(S[i, i], 0.0))
            t = Smoothed((g, g2), si if si > _TINY * sd[fi] else 0.0, float(mu[:, i].min()), float(mu[:, i].max()),
                         q)
            tail = max(tail, t.tail)
            inner = inner + 2 * u[fi] * D0 * t(0, mu[:, i]) + u[fi] ** 2 * t(1, mu[:, i])
            for j in range(i + 1, len(rest)):
                fj = rest[j]
                v, t2 = pair_mean(g, g, mu[:, i], mu[:, j], S[np.ix_([i, j], [i, j])], sd[[fi, fj]], q)
                tail = max(tail, t2.tail if t2 is not None else 0.0)
                inner = inner + 2 * u[fi] * u[fj] * v
        da, db = d(a), d(b)
        for (k, l, f) in ((p, p, da * da), (r, r, db * db), (p, r, da * db)):
            if k < K and l < K and not done[k, l]:
                E[k, l] = E[l, k] = (f * inner * w).sum()
                done[k, l] = done[l, k] = True
    return E, tail
