r"""Gaussian orthant probabilities and orthant moments of up to four fields (numba), shared by the models.

.. math:: P(x_T > 0),\qquad \mathbb E[x_i\,1(x_T > 0)],\qquad \mathbb E[x_ix_j\,1(x_T > 0)],\qquad |T| \le 4

Sheppard's closed forms up to three fields, Plackett's identity (one smooth 1-D integral) for four; moments by
Stein's lemma (Tallis 1961). These are the exact Gaussian averages of the ReLU family
``c relu(x) - B x`` (relu, abs, leaky ReLU): the committee machine's ``I4`` and eta^2 term and LoRA's normalisation
drift B0, B1 for a general Gram matrix are sums of them. Private helpers of the models (numba kernels); their
accuracy is asserted through the public functions that use them (committee ``integrals``, lora ``B0``, ``B1``).
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np

__all__ = []

_RIDGE = 1e-14          # ridge on the correlations before the orthant moments (the limit of a regular covariance)
_PLACKETT = 8           # Gauss-Legendre nodes per panel of Plackett's integral (<= 4e-14 measured; 6: <= 3e-11)
_SAME = 1e-12           # fields with correlation within 1e-12 of +-1 are one field (with a sign)


@functools.lru_cache(maxsize=4)
def _plackett_nodes(n):
    """The n-point Gauss-Legendre rule on [0, 1]: one panel of Plackett's path (see :func:`_orthant`)."""
    x, w = np.polynomial.legendre.leggauss(n)
    u, wu = (x + 1) / 2, w / 2
    u.setflags(write=False)
    wu.setflags(write=False)
    return u, wu


@numba.njit(cache=True)
def _corr_nb(C, a, b):  # pragma: no cover - compiled
    v = C[a, a] * C[b, b]
    return min(1.0, max(-1.0, C[a, b] / math.sqrt(v))) if v > 0.0 else 0.0     # a degenerate field: uncorrelated


@numba.njit(cache=True)
def _given_zero(C, m):  # pragma: no cover - compiled
    """Covariance given x_m = 0."""
    P = C.shape[0]
    out = np.empty((P, P))
    for a in range(P):
        for b in range(P):
            out[a, b] = C[a, b] - C[a, m] * C[m, b] / C[m, m]
    return out


@numba.njit(cache=True)
def _orthant(C, idx, n, s, ws):  # pragma: no cover - compiled
    r"""Orthant probability :math:`P(x_i > 0,\ i \in \mathrm{idx}[:n])`, n <= 4: Sheppard's closed forms up to 3;
    for 4, Plackett's identity :math:`\partial P_4/\partial\rho_{ab} = \varphi_2(0,0;\rho_{ab})P_2(\text{rest} > 0
    \mid x_a = x_b = 0)` integrated along :math:`R(s) = (1 - s)I + sR` on the nodes (s, ws)."""
    if n == 0:
        return 1.0
    if n == 1:
        return 0.5
    if n == 2:
        return 0.25 + math.asin(_corr_nb(C, idx[0], idx[1])) / (2 * math.pi)
    if n == 3:
        return 0.125 + (math.asin(_corr_nb(C, idx[0], idx[1])) + math.asin(_corr_nb(C, idx[0], idx[2]))
                        + math.asin(_corr_nb(C, idx[1], idx[2]))) / (4 * math.pi)
    R = np.empty((4, 4))
    for a in range(4):
        for b in range(4):
            R[a, b] = 1.0 if a == b else _corr_nb(C, idx[a], idx[b])
    # Plackett's path s = 1 - (1 - u)^2, u in [0, 1] (removes the 1/sqrt(1 - s) of a correlation +-1 at s = 1), on
    # Gauss-Legendre panels [1 - 2^-k, 1 - 2^-(k+1)] graded towards u = 1 down to about the square root of the
    # pair's smallest scale at s = 1 (1 - R_ab^2, the conditional variances of p and q and 1 - rho_pq|ab^2): a nearly
    # singular R puts features of that width there (a correlation 1 - 1e-7 cost 8e-5 on one 32-node rule)
    npan = s.shape[0]
    tot = 1.0 / 16
    for a in range(4):
        for b in range(a + 1, 4):
            p, q = -1, -1
            for c in range(4):
                if c != a and c != b:
                    if p < 0:
                        p = c
                    else:
                        q = c
            eps = _plackett_scale(R, a, b, p, q, 1.0)
            levels = min(52, max(2, int(math.ceil(-0.5 * math.log2(max(eps, 1e-30)))) + 2))
            acc = 0.0
            for k in range(levels + 1):
                lo = 1.0 - 0.5 ** k if k > 0 else 0.0
                hi = 1.0 - 0.5 ** (k + 1) if k < levels else 1.0
                for t in range(npan):
                    uu = lo + (hi - lo) * s[t]
                    sv = 1 - (1 - uu) ** 2
                    wt = 2 * (1 - uu) * (hi - lo) * ws[t]
                    rab = sv * R[a, b]          # partial correlation of (p, q) given (a, b) under R(s)
                    det = 1 - rab * rab
                    xa, xb, ya, yb = sv * R[p, a], sv * R[p, b], sv * R[q, a], sv * R[q, b]
                    spp = 1 - (xa * xa - 2 * rab * xa * xb + xb * xb) / det
                    sqq = 1 - (ya * ya - 2 * rab * ya * yb + yb * yb) / det
                    spq = sv * R[p, q] - (xa * ya - rab * (xa * yb + xb * ya) + xb * yb) / det
                    rho = min(1.0, max(-1.0, spq / math.sqrt(max(spp * sqq, 1e-300))))
                    acc += wt / (2 * math.pi * math.sqrt(det)) * (0.25 + math.asin(rho) / (2 * math.pi))
            tot += R[a, b] * acc
    return tot


@numba.njit(cache=True)
def _plackett_scale(R, a, b, p, q, sv):  # pragma: no cover - compiled
    """The smallest of 1 - R_ab^2, the variances of p and q given (a, b) and 1 - their partial correlation^2,
    under (1 - sv) I + sv R: the width (squared) of the features of Plackett's integrand near sv."""
    rab = sv * R[a, b]
    det = max(1 - rab * rab, 0.0)
    if det <= 0.0:
        return 0.0
    xa, xb, ya, yb = sv * R[p, a], sv * R[p, b], sv * R[q, a], sv * R[q, b]
    spp = 1 - (xa * xa - 2 * rab * xa * xb + xb * xb) / det
    sqq = 1 - (ya * ya - 2 * rab * ya * yb + yb * yb) / det
    spq = sv * R[p, q] - (xa * ya - rab * (xa * yb + xb * ya) + xb * yb) / det
    r2 = spq * spq / max(spp * sqq, 1e-300)
    return min(det, spp, sqq, 1 - r2)


@numba.njit(cache=True)
def _without(idx, n, m):  # pragma: no cover - compiled
    out = np.empty(4, dtype=np.int64)
    c = 0
    for a in range(n):
        if idx[a] != m:
            out[c] = idx[a]
            c += 1
    return out, c


@numba.njit(cache=True)
def _orthant_second(C, i, j, idx, n, s, ws):  # pragma: no cover - compiled
    r""":math:`\mathbb E[x_ix_j 1(x_{idx} > 0)]` (any fields i, j; idx[:n] distinct) by Stein's lemma twice (Tallis):
    :math:`C_{ij}P(\mathrm{idx}) + \sum_{m\ne j}C_{im}\varphi_m(0)\sum_q C'_{jq}\varphi'_q(0)P''(\mathrm{idx}\setminus
    \{m, q\})`, primes the covariances given :math:`x_m = 0`, then :math:`x_q = 0`."""
    out = C[i, j] * _orthant(C, idx, n, s, ws)
    for a in range(n):
        m = idx[a]
        if m == j:
            continue
        Cm = _given_zero(C, m)
        sub, ns = _without(idx, n, m)
        first = 0.0
        for b in range(ns):
            q = sub[b]
            if Cm[q, q] <= 0.0:
                continue
            sub2, n2 = _without(sub, ns, q)
            first += Cm[j, q] / math.sqrt(2 * math.pi * Cm[q, q]) * _orthant(_given_zero(Cm, q), sub2, n2, s, ws)
        out += C[i, m] / math.sqrt(2 * math.pi * C[m, m]) * first
    return out


@numba.njit(cache=True)
def _orthant_first(C, i, idx, n, s, ws):  # pragma: no cover - compiled
    r""":math:`\mathbb E[x_i 1(x_{idx} > 0)]` by Stein's lemma once:
    :math:`\sum_m C_{im}\varphi_m(0)P(\mathrm{idx}\setminus\{m\} \mid x_m = 0)`."""
    out = 0.0
    for a in range(n):
        m = idx[a]
        if C[m, m] <= 0.0:
            continue
        sub, ns = _without(idx, n, m)
        out += C[i, m] / math.sqrt(2 * math.pi * C[m, m]) * _orthant(_given_zero(C, m), sub, ns, s, ws)
    return out


@numba.njit(cache=True)
def _signed_moment(C, sd, lab, sg, thr, nt, i, j, s, ws):  # pragma: no cover - compiled
    r""":math:`\mathbb E[x_ix_j1(x_f > 0,\ f\in\mathrm{thr}[:nt])]` (``i < 0``: the orthant probability alone;
    ``j < 0 <= i``: the first moment :math:`\mathbb E[x_i1(\dots)]`) for
    fields :math:`x_f = \mathrm{sd}_f\mathrm{sg}_f\,y_{\mathrm{lab}_f}`, y of correlation matrix C: a label
    thresholded with both signs gives 0 (:math:`1(y > 0)1(-y > 0) = 0`), otherwise the thresholds are flipped into
    C and :func:`_orthant_second` takes the distinct labels (at most 4), gathered into a matrix of at most 6."""
    P = C.shape[0]
    D = np.zeros(P)
    idx = np.zeros(4, dtype=np.int64)
    n = 0
    for t in range(nt):
        f = thr[t]
        L = lab[f]
        if D[L] == 0.0:
            D[L] = sg[f]
            idx[n] = L
            n += 1
        elif D[L] != sg[f]:
            return 0.0
    # the labels involved (thresholds first, then those of i and j), gathered with their signs into a small matrix
    # (the moments read only these entries: the same numbers, without conditioning P x P matrices)
    labs = np.empty(6, dtype=np.int64)
    labs[:n] = idx[:n]
    q = n
    for f in (i, j):
        if f >= 0:
            L = lab[f]
            if D[L] == 0.0:
                D[L] = 1.0
                labs[q] = L
                q += 1
    Cs = np.empty((q, q))
    for a in range(q):
        for b in range(q):
            Cs[a, b] = D[labs[a]] * D[labs[b]] * C[labs[a], labs[b]]
    sub = np.arange(4)
    if i < 0:
        return _orthant(Cs, sub, n, s, ws)
    pi = _position(labs, q, lab[i])
    if j < 0:
        return sd[i] * sg[i] * D[lab[i]] * _orthant_first(Cs, pi, sub, n, s, ws)
    pj = _position(labs, q, lab[j])
    return sd[i] * sd[j] * sg[i] * sg[j] * D[lab[i]] * D[lab[j]] * _orthant_second(Cs, pi, pj, sub, n, s, ws)


@numba.njit(cache=True)
def _position(labs, q, L):  # pragma: no cover - compiled
    for a in range(q):
        if labs[a] == L:
            return a
    return -1


@numba.njit(cache=True)
def _family_I4_nb(C, sd, lab, sg, cc, B, s, ws):  # pragma: no cover - compiled
    r""":math:`\mathbb E[g'(a)g'(b)g(c)g(d)]` for :math:`g = c\,\mathrm{relu} - Bx`, :math:`g' = c\,1(x > 0) - B`: the
    16 terms of the product, each an orthant moment :math:`\mathbb E[x_cx_d1(x_T > 0)]` (c = ``cc``)."""
    thr = np.zeros(4, dtype=np.int64)
    tot = 0.0
    for m in range(16):
        coef = 1.0
        nt = 0
        for f in range(4):
            if (m >> f) & 1:
                coef *= cc
                thr[nt] = f
                nt += 1
            else:
                coef *= -B
        if coef != 0.0:
            tot += coef * _signed_moment(C, sd, lab, sg, thr, nt, 2, 3, s, ws)
    return tot


@numba.njit(cache=True)
def _family_moments(C, sd, lab, sg, u, K, cc, B, s, ws):  # pragma: no cover - compiled
    r"""For :math:`g = c\,\mathrm{relu} - Bx` (c = ``cc``), fields :math:`f_0..f_{P-1}` and :math:`y = \sum_iu_if_i` at
    index P (C their correlations with a ridge, (P + 1) x (P + 1), sd their standard deviations): the (K, K) pair

    .. math:: A_{kl} = \mathbb E[g'(f_k)g'(f_l)\Delta^2],\quad
              \Delta^2 = c^2\sum_{ij}u_iu_jf_i^+f_j^+ - 2cB\,y\sum_iu_if_i^+ + B^2y^2,\qquad
              Z_{kl} = \mathbb E[g'(f_k)g'(f_l)]

    each term an orthant moment of at most four thresholded fields."""
    P = C.shape[0] - 1
    A = np.zeros((K, K))
    Z = np.zeros((K, K))
    thr = np.zeros(4, dtype=np.int64)
    for k in range(K):
        for l in range(k, K):
            tot, tz = 0.0, 0.0
            for mk in range(2):
                for ml in range(2):
                    coef = (cc if mk else -B) * (cc if ml else -B)
                    if coef == 0.0:
                        continue
                    n0 = 0
                    if mk:
                        thr[n0] = k
                        n0 += 1
                    if ml:
                        thr[n0] = l
                        n0 += 1
                    part = 0.0
                    if cc != 0.0:
                        for i in range(P):
                            if u[i] == 0.0:
                                continue
                            thr[n0] = i
                            for j in range(i, P):
                                if u[j] == 0.0:
                                    continue
                                thr[n0 + 1] = j
                                part += (cc * cc * (1.0 if i == j else 2.0) * u[i] * u[j]
                                         * _signed_moment(C, sd, lab, sg, thr, n0 + 2, i, j, s, ws))
                            if B != 0.0:
                                part -= 2 * cc * B * u[i] * _signed_moment(C, sd, lab, sg, thr, n0 + 1, i, P, s, ws)
                    if B != 0.0:
                        part += B * B * _signed_moment(C, sd, lab, sg, thr, n0, P, P, s, ws)
                    tot += coef * part
                    tz += coef * _signed_moment(C, sd, lab, sg, thr, n0, -1, -1, s, ws)
            A[k, l] = A[l, k] = tot
            Z[k, l] = Z[l, k] = tz
    return A, Z


@numba.njit(cache=True)
def _same_fields(C):  # pragma: no cover - compiled
    """Labels and signs of the fields of the correlation matrix C (P x P): a field equal to +-an earlier one
    (correlation within ``_SAME`` of +-1) takes its label and the sign, x_b = sign x_a."""
    P = C.shape[0]
    lab, sg = np.arange(P), np.ones(P)
    for b in range(P):
        for a in range(b):
            if lab[a] == a:
                if C[a, a] + C[b, b] - 2 * C[a, b] <= 2 * _SAME:
                    lab[b] = a
                    break
                if C[a, a] + C[b, b] + 2 * C[a, b] <= 2 * _SAME:
                    lab[b], sg[b] = a, -1.0
                    break
    return lab, sg


@numba.njit(cache=True)
def _unit(C):  # pragma: no cover - compiled
    """(R + ridge I, sd): the correlations R of C and the standard deviations. Orthant probabilities depend on R
    alone and E[x_i x_j 1(...)] is sd_i sd_j times its value at R, so the ridge perturbs every field alike. A field
    of variance <= 1e-28 of the largest (its direction lost to the rounding of C) is a zero field: sd 0, uncorrelated
    (the limit of a small independent one); rounding-level correlations beyond +-1 are clipped."""
    P = C.shape[0]
    top = 0.0
    for a in range(P):
        top = max(top, C[a, a])
    sd = np.zeros(P)
    for a in range(P):
        if C[a, a] > 1e-28 * top:
            sd[a] = math.sqrt(C[a, a])
    R = np.zeros((P, P))
    for a in range(P):
        for b in range(P):
            if a == b:
                R[a, b] = 1.0 + _RIDGE
            elif sd[a] > 0.0 and sd[b] > 0.0:
                R[a, b] = min(1.0, max(-1.0, C[a, b] / (sd[a] * sd[b])))
    return R, sd
