r"""Gaussian orthant probabilities and orthant moments of up to four fields (numba), shared by the models.

.. math:: P(x_T > 0),\qquad \mathbb E[x_i\,1(x_T > 0)],\qquad \mathbb E[x_ix_j\,1(x_T > 0)],\qquad |T| \le 4

Sheppard's closed forms up to three fields, Plackett's identity (one smooth 1-D integral) for four; moments by
Stein's lemma (Tallis 1961). The covariance is scaled by exact powers of two and every conditioning (a Schur
complement) is done in double-double, because the terms are sqrt-sensitive at nearly singular covariances (an orthant
of two fields correlated 1 - delta moves by sqrt(2 delta) / 2 pi) while their sum is smooth: float64 rounding there
cost up to 3e-4 of an I4. These are the exact Gaussian averages of the ReLU family
``c relu(x) - B x`` (relu, abs, leaky ReLU): the committee machine's ``I4`` and eta^2 term and LoRA's normalisation
drift B0, B1 for a general Gram matrix are sums of them. Private helpers of the models (numba kernels); their
accuracy is asserted through the public functions that use them (committee ``integrals``, lora ``B0``, ``B1``).
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np

from ._exact import two_prod_jit as _two_prod, two_sum_jit as _two_sum

__all__ = []

# Plackett's integral: Gauss-Legendre nodes per panel (8 left 3e-8 of an eta^2 term, 12: 3e-12); pairs whose scale
# is below _EXACT_BELOW in double-double, below _HALVE_BELOW on halved panels (up to 4e-10 of I4 at scales 1e-15 ..
# 1e-4 without); fields with 1 - rho^2 <= 2 _SAME are one field with a sign (the moments are sqrt-sensitive: 1e-12)
_PLACKETT = 12
_EXACT_BELOW = 1e-6
_HALVE_BELOW = 1e-2
_SAME = 1e-24


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


@numba.njit(cache=True, inline="always")
def _dd_add(ah, al, bh, bl):  # pragma: no cover - compiled
    s, e = _two_sum(ah, bh)
    e += al + bl
    h = s + e
    return h, e - (h - s)


@numba.njit(cache=True, inline="always")
def _dd_mul(ah, al, bh, bl):  # pragma: no cover - compiled
    p, e = _two_prod(ah, bh)
    e += ah * bl + al * bh
    h = p + e
    return h, e - (h - p)


@numba.njit(cache=True, inline="always")
def _dd_div(ah, al, bh, bl):  # pragma: no cover - compiled
    q = ah / bh
    ph, pl = _dd_mul(q, 0.0, bh, bl)
    rh, rl = _dd_add(ah, al, -ph, -pl)
    r = (rh + rl) / bh
    h = q + r
    return h, r - (h - q)


@numba.njit(cache=True)
def _given_zero_dd(H, L, m):  # pragma: no cover - compiled
    """The covariance H + L (double-double) given x_m = 0: the Schur complement C - C[:, m] C[m, :] / C[m, m] to
    ~eps^2 of its terms. In plain float64 its entries keep ~1e-16 of C's scale, which decides the nearly singular
    complements of fields (nearly) determined by others; the Stein terms are sqrt-sensitive to those (an orthant
    of two fields correlated 1 - delta moves by sqrt(2 delta) / 2 pi), and their sum, exact for C, lost up to 6e-6."""
    P = H.shape[0]
    oh, ol = np.empty((P, P)), np.empty((P, P))
    for a in range(P):
        th, tl = _dd_div(H[a, m], L[a, m], H[m, m], L[m, m])
        for b in range(P):
            ph, pl = _dd_mul(th, tl, H[m, b], L[m, b])
            oh[a, b], ol[a, b] = _dd_add(H[a, b], L[a, b], -ph, -pl)
    return oh, ol


@numba.njit(cache=True)
def _given_zero(C, m):  # pragma: no cover - compiled
    """Covariance given x_m = 0 (float64, from the double-double complement)."""
    oh, ol = _given_zero_dd(C, np.zeros_like(C), m)
    return oh + ol


@numba.njit(cache=True)
def _condition_pair(H, L, a, b, p, q, Q, Ql):  # pragma: no cover - compiled
    """The 2 x 2 covariance of (x_p, x_q) given x_a = x_b = 0 of the double-double H + L, into (Q, Ql): the two Schur
    complements of :func:`_given_zero_dd` on the entries they need."""
    keep = (b, p, q)
    T = np.empty((3, 3))
    Tl = np.empty((3, 3))
    for i in range(3):
        th, tl = _dd_div(H[keep[i], a], L[keep[i], a], H[a, a], L[a, a])
        for j in range(3):
            ph, pl = _dd_mul(th, tl, H[a, keep[j]], L[a, keep[j]])
            T[i, j], Tl[i, j] = _dd_add(H[keep[i], keep[j]], L[keep[i], keep[j]], -ph, -pl)
    for i in range(2):
        th, tl = _dd_div(T[i + 1, 0], Tl[i + 1, 0], T[0, 0], Tl[0, 0])
        for j in range(2):
            ph, pl = _dd_mul(th, tl, T[0, j + 1], Tl[0, j + 1])
            Q[i, j], Ql[i, j] = _dd_add(T[i + 1, j + 1], Tl[i + 1, j + 1], -ph, -pl)


@numba.njit(cache=True)
def _asin_corr(H, L, a, b):  # pragma: no cover - compiled
    """asin of the correlation of fields a, b of the double-double covariance H + L (0 for a degenerate field):
    near +-1 from 1 - rho^2 = det / (C_aa C_bb), the determinant in double-double, as
    sign(rho) (pi/2 - 2 asin(sqrt((1 - |rho|) / 2))), exact to rounding where rho = +-(1 - delta) for tiny delta."""
    v = H[a, a] * H[b, b]
    if not v > 0.0:
        return 0.0
    r = min(1.0, max(-1.0, H[a, b] / math.sqrt(v)))
    if abs(r) < 0.5:
        return math.asin(r)
    ph, pl = _dd_mul(H[a, a], L[a, a], H[b, b], L[b, b])
    qh, ql = _dd_mul(H[a, b], L[a, b], H[a, b], L[a, b])
    dh, dl = _dd_add(ph, pl, -qh, -ql)
    om = max(dh + dl, 0.0) / ph                       # 1 - rho^2
    return math.copysign(0.5 * math.pi - 2.0 * math.asin(math.sqrt(0.5 * om / (1.0 + abs(r)))), r)


@numba.njit(cache=True)
def _orthant(C, Cl, idx, n, s, ws):  # pragma: no cover - compiled
    r"""Orthant probability :math:`P(x_i > 0,\ i \in \mathrm{idx}[:n])`, x ~ N(0, C + Cl) (double-double; the
    correlations' arcsines by :func:`_asin_corr`), n <= 4: Sheppard's closed forms up to 3;
    for 4, Plackett's identity :math:`\partial P_4/\partial\rho_{ab} = \varphi_2(0,0;\rho_{ab})P_2(\text{rest} > 0
    \mid x_a = x_b = 0)` integrated along :math:`R(s) = (1 - s)I + sR` on the nodes (s, ws) (from C alone: four
    thresholds occur only before any conditioning, where Cl = 0)."""
    if n == 0:
        return 1.0
    if n == 1:
        return 0.5
    if n == 2:
        return 0.25 + _asin_corr(C, Cl, idx[0], idx[1]) / (2 * math.pi)
    if n == 3:
        return 0.125 + (_asin_corr(C, Cl, idx[0], idx[1]) + _asin_corr(C, Cl, idx[0], idx[2])
                        + _asin_corr(C, Cl, idx[1], idx[2])) / (4 * math.pi)
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
    M = np.empty((4, 4))
    Ml = np.empty((4, 4))
    Q = np.empty((2, 2))
    Ql = np.empty((2, 2))
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
            # a nearly singular pair (eps < 1e-6): the integrand from C in double-double, exact for C (float64
            # correlations leave ~1e-16 / eps in the sqrt-sensitive arcsine: up to 1e-9 of I4)
            exact = eps < _EXACT_BELOW
            ia, ib = idx[a], idx[b]
            caa, cbb, cab = C[ia, ia], C[ib, ib], C[ia, ib]
            if exact:
                ph, pl = _dd_mul(caa, 0.0, cbb, 0.0)
                qh, ql = _dd_mul(cab, 0.0, cab, 0.0)
                dh, dl = _dd_add(ph, pl, -qh, -ql)
                det1 = max(dh + dl, 0.0)                # C_aa C_bb - C_ab^2
            acc = 0.0
            nsub = 2 if eps < _HALVE_BELOW else 1
            for k in range((levels + 1) * nsub):
                lo0 = 1.0 - 0.5 ** (k // nsub) if k >= nsub else 0.0
                hi0 = 1.0 - 0.5 ** (k // nsub + 1) if k // nsub < levels else 1.0
                lo = lo0 + (hi0 - lo0) * (k % nsub) / nsub
                hi = lo0 + (hi0 - lo0) * (k % nsub + 1) / nsub
                for t in range(npan):
                    uu = lo + (hi - lo) * s[t]
                    sv = 1 - (1 - uu) ** 2
                    wt = 2 * (1 - uu) * (hi - lo) * ws[t]
                    if exact:
                        # C(s) = diag(C) + s offdiag(C): C_aa C_bb - s^2 C_ab^2 = det1 + (1 - s^2) C_ab^2, and
                        # (p, q) given x_a = x_b = 0 by two double-double Schur complements
                        # at s = 1 - om exactly (om = (1 - u)^2): the integrand's 1 / sqrt(det) varies on the scale
                        # of det there, so a node rounded to fl(s) costs ~ eps / det of it
                        om = (1 - uu) ** 2
                        d2 = det1 + om * (2 - om) * cab * cab
                        for x in range(4):
                            for y in range(4):
                                cxy = C[idx[x], idx[y]]
                                if x == y:
                                    M[x, y], Ml[x, y] = cxy, 0.0
                                else:
                                    ph, pl = _two_prod(om, cxy)
                                    M[x, y], Ml[x, y] = _dd_add(cxy, 0.0, -ph, -pl)
                        _condition_pair(M, Ml, a, b, p, q, Q, Ql)
                        acc += (wt * cab / (2 * math.pi * math.sqrt(max(d2, 1e-300)))
                                * (0.25 + _asin_corr(Q, Ql, 0, 1) / (2 * math.pi)))
                        continue
                    rab = sv * R[a, b]          # partial correlation of (p, q) given (a, b) under R(s)
                    det = 1 - rab * rab
                    xa, xb, ya, yb = sv * R[p, a], sv * R[p, b], sv * R[q, a], sv * R[q, b]
                    spp = 1 - (xa * xa - 2 * rab * xa * xb + xb * xb) / det
                    sqq = 1 - (ya * ya - 2 * rab * ya * yb + yb * yb) / det
                    spq = sv * R[p, q] - (xa * ya - rab * (xa * yb + xb * ya) + xb * yb) / det
                    rho = min(1.0, max(-1.0, spq / math.sqrt(max(spp * sqq, 1e-300))))
                    acc += R[a, b] * wt / (2 * math.pi * math.sqrt(det)) * (0.25 + math.asin(rho) / (2 * math.pi))
            tot += acc
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
    \{m, q\})`, primes the covariances given :math:`x_m = 0`, then :math:`x_q = 0` (in double-double:
    :func:`_given_zero_dd`)."""
    Cl = np.zeros_like(C)
    out = C[i, j] * _orthant(C, Cl, idx, n, s, ws)
    for a in range(n):
        m = idx[a]
        if m == j:
            continue
        Mh, Ml = _given_zero_dd(C, Cl, m)
        sub, ns = _without(idx, n, m)
        first = 0.0
        for b in range(ns):
            q = sub[b]
            if Mh[q, q] <= 0.0:
                continue
            sub2, n2 = _without(sub, ns, q)
            Qh, Ql = _given_zero_dd(Mh, Ml, q)
            first += ((Mh[j, q] + Ml[j, q]) / math.sqrt(2 * math.pi * Mh[q, q])
                      * _orthant(Qh, Ql, sub2, n2, s, ws))
        out += C[i, m] / math.sqrt(2 * math.pi * C[m, m]) * first
    return out


@numba.njit(cache=True)
def _orthant_first(C, i, idx, n, s, ws):  # pragma: no cover - compiled
    r""":math:`\mathbb E[x_i 1(x_{idx} > 0)]` by Stein's lemma once:
    :math:`\sum_m C_{im}\varphi_m(0)P(\mathrm{idx}\setminus\{m\} \mid x_m = 0)` (the condition in double-double)."""
    Cl = np.zeros_like(C)
    out = 0.0
    for a in range(n):
        m = idx[a]
        if C[m, m] <= 0.0:
            continue
        sub, ns = _without(idx, n, m)
        Mh, Ml = _given_zero_dd(C, Cl, m)
        out += C[i, m] / math.sqrt(2 * math.pi * C[m, m]) * _orthant(Mh, Ml, sub, ns, s, ws)
    return out


@numba.njit(cache=True)
def _signed_moment(C, sd, lab, sg, thr, nt, i, j, s, ws):  # pragma: no cover - compiled
    r""":math:`\mathbb E[x_ix_j1(x_f > 0,\ f\in\mathrm{thr}[:nt])]` (``i < 0``: the orthant probability alone;
    ``j < 0 <= i``: the first moment :math:`\mathbb E[x_i1(\dots)]`) for
    fields :math:`x_f = \mathrm{sd}_f\mathrm{sg}_f\,y_{\mathrm{lab}_f}` (:func:`_sd`), y of covariance C: a label
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
        return _orthant(Cs, np.zeros_like(Cs), sub, n, s, ws)
    pi = _position(labs, q, lab[i])
    if j < 0:
        return _sd(C, sd, lab, i) * sg[i] * D[lab[i]] * _orthant_first(Cs, pi, sub, n, s, ws)
    pj = _position(labs, q, lab[j])
    return (_sd(C, sd, lab, i) * _sd(C, sd, lab, j) * sg[i] * sg[j] * D[lab[i]] * D[lab[j]]
            * _orthant_second(Cs, pi, pj, sub, n, s, ws))


@numba.njit(cache=True, inline="always")
def _sd(C, sd, lab, f):  # pragma: no cover - compiled
    """The factor of field f on its label's field: sd_f, times sqrt(C_ff / C_LL) for a field merged onto another
    (x_f = +-sqrt(C_ff / C_LL) x_L in the scaled units of :func:`_unit`)."""
    L = lab[f]
    return sd[f] if L == f else sd[f] * math.sqrt(C[f, f] / C[L, L])


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
    index P (C their covariance and sd the scales of :func:`_unit`, (P + 1) x (P + 1)): the (K, K) pair

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
    """Labels and signs of the fields of C (P x P, from :func:`_unit`): a field equal to +-an earlier one (1 - rho^2
    <= 2 ``_SAME``, the determinant in double-double) takes its label and the sign, x_b = sign x_a."""
    P = C.shape[0]
    lab, sg = np.arange(P), np.ones(P)
    for b in range(P):
        for a in range(b):
            if lab[a] == a:
                ph, pl = _dd_mul(C[a, a], 0.0, C[b, b], 0.0)
                qh, ql = _dd_mul(C[a, b], 0.0, C[a, b], 0.0)
                dh, dl = _dd_add(ph, pl, -qh, -ql)
                if dh + dl <= 2 * _SAME * ph:
                    lab[b] = a
                    sg[b] = 1.0 if C[a, b] >= 0.0 else -1.0
                    break
    return lab, sg


@numba.njit(cache=True)
def _unit(C):  # pragma: no cover - compiled
    """(R, sd): C scaled by powers of two, R_ab = C_ab / (sd_a sd_b) with sd_a = 2^round(log2 sqrt(C_aa)), exactly
    (orthant moments scale out: E[x_i x_j 1(...)] is sd_i sd_j times its value at R; correlations rounded to
    float64 cost up to 5e-10 of I4 at fields 1 - rho ~ 1e-14 apart, where the moments are sqrt-sensitive to them).
    A field of variance <= 1e-28 of the largest (its direction lost to the rounding of C) is a zero field: sd 0,
    R_aa = 1, uncorrelated (the limit of a small independent one)."""
    P = C.shape[0]
    top = 0.0
    for a in range(P):
        top = max(top, C[a, a])
    sd = np.zeros(P)
    for a in range(P):
        if C[a, a] > 1e-28 * top:
            sd[a] = 2.0 ** round(0.5 * math.log2(C[a, a]))
    R = np.zeros((P, P))
    for a in range(P):
        for b in range(P):
            if sd[a] > 0.0 and sd[b] > 0.0:
                R[a, b] = C[a, b] / sd[a] / sd[b]
            elif a == b:
                R[a, b] = 1.0
    return R, sd
