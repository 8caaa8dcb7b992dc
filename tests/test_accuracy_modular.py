"""Declared accuracy of popdyn.models.modular over Hypothesis searches that reach the corners of the model (primes
to 10^5 + 3, k to 400, frequencies near p/2, networks scaled by 1e-200 .. 1e200, vectors with one non-zero entry,
constant and cancelling networks), against exact references: gamma* and the construction's margin from exact
integers in mpmath, logits, margins and Psi by exact rational enumeration of Z_p^k (p <= 7, k <= 3), DFTs by the
definition in mpmath at 30 digits (not an FFT), cosines at exactly reduced angles in mpmath."""
import itertools
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from popdyn.models import modular as MD
from popdyn.models.modular import network as NW

from ._accuracy import EPS, examples, record

DPS = 30
PRIMES = [3, 5, 7, 11, 13, 47, 97, 113, 1009, 10007, 100003]
SMALL = [3, 5, 7]


def _mpf(x):
    return mp.mpf(float(x))


# ---- gamma*, the construction ------------------------------------------------------------------------------------

@settings(max_examples=examples(40), deadline=None)
@given(st.sampled_from(PRIMES), st.one_of(st.integers(2, 12), st.integers(2, 400)))
@example(7, 400)      # was OverflowError: (2k+2)^((k+1)/2) past float64
@example(100003, 2)
def test_max_margin_construction_margin(p, k):
    """max_margin, construction_margin (both conventions): relative error <= 2 eps wherever the result is a
    normal float, k to 400 (before: OverflowError at k = 400), against the formulas in mpmath from exact integers;
    construction_width, construction_logit: exact."""
    with mp.workdps(DPS):
        K = mp.mpf(k)
        g = 2 * mp.factorial(K) / ((2 * K + 2) ** ((K + 1) / 2) * (p - 1) * mp.mpf(p) ** ((K - 1) / 2))
        m = 2 ** (2 * k - 2) * (p - 1)
        assert MD.construction_width(p, k) == m
        unit = mp.factorial(K) * 2 ** (K - 1) * (2 / ((K + 1) * p)) ** ((K + 1) / 2) / m
        for name, got, ref in (("max_margin", MD.max_margin(p, k), g),
                               ("construction_margin", MD.construction_margin(p, k), unit * mp.mpf(p) / 2),
                               ("construction_margin", MD.construction_margin(p, k, convention="paper"),
                                unit * mp.mpf(p - 1) / 2)):
            if mp.mpf("2.3e-308") < ref < mp.mpf("1.7e308"):
                assert record(name, abs(_mpf(got) - ref) / (2 * EPS * ref), p=p, k=k) <= 1
            else:
                assert got == (math.inf if ref > 1 else got)
    d = np.arange(-2 * p, 2 * p)
    assert np.array_equal(MD.construction_logit(p, d), np.where(d % p == 0, (p - 1) / 2, -0.5))


@settings(max_examples=examples(30), deadline=None)
@given(st.sampled_from(PRIMES), st.integers(2, 6), st.data())
@example(100003, 2, None)   # was 2.2e-12 absolute (angle 2 pi zeta a / p up to pi p unreduced): now <= 1 ulp-ish
def test_optimal_neuron(p, k, data):
    """optimal_neuron: absolute error <= 8 eps amp (1 + sum|theta|) per entry, amp = sqrt(2/((k+1)p)), at every
    zeta up to (p-1)/2 and p to 100003 (before: zeta a was not reduced mod p, error ~ eps pi p amp: 2e-12 at
    p = 100003), against cos at the exactly reduced angle in mpmath."""
    if data is None:
        zeta, th = (p - 1) // 2, np.zeros(k)
    else:
        zeta = data.draw(st.sampled_from([1, (p - 1) // 2]) | st.integers(1, (p - 1) // 2))
        th = np.array(data.draw(st.lists(st.floats(-4, 4), min_size=k, max_size=k)))
    u, w = MD.optimal_neuron(p, k, zeta, th)
    idx = np.unique(np.r_[0, 1, p - 1, np.linspace(0, p - 1, 40).astype(int)])
    with mp.workdps(DPS):
        amp = mp.sqrt(mp.mpf(2) / ((k + 1) * p))
        tol = 8 * EPS * amp * (1 + sum(abs(x) for x in th))
        for a in idx:
            ang = 2 * mp.pi * ((zeta * int(a)) % p) / p
            for j in range(k):
                record("optimal_neuron", abs(_mpf(u[j, a]) - amp * mp.cos(_mpf(th[j]) + ang)) / tol, p=p, zeta=zeta)
            assert record("optimal_neuron", abs(_mpf(w[a]) - amp * mp.cos(mp.fsum(_mpf(t) for t in th) + ang)) / tol,
                          p=p, zeta=zeta) <= 1
    from ._accuracy import WORST
    assert WORST["optimal_neuron"][0] <= 1


@settings(max_examples=examples(10), deadline=None)
@given(st.sampled_from([3, 5, 7, 11, 1009]), st.integers(2, 3), st.booleans())
def test_max_margin_network(p, k, normalize):
    """max_margin_network: absolute error <= 6 eps beta per entry, against beta T_b(2 pi (zeta a mod p)/p) in
    mpmath (the recipe of the docstring)."""
    U, W = MD.max_margin_network(p, k, normalize=normalize)
    m = MD.construction_width(p, k)
    with mp.workdps(DPS):
        beta = (mp.sqrt(mp.mpf(2) / ((k + 1) * p)) * mp.mpf(m) ** (-mp.mpf(1) / (k + 1)) if normalize
                else (mp.mpf(2) / (2 ** k * math.factorial(k))) ** (mp.mpf(1) / (k + 1)))
        bs = [b for b in itertools.product((0, 1), repeat=k + 1) if sum(b) % 2 == 0]
        sig = [(1,) + s for s in itertools.product((1, -1), repeat=k - 1)]
        i = 0
        cols = np.unique(np.r_[0, 1, p - 1, np.linspace(0, p - 1, 12).astype(int)])
        for zeta in range(1, (p - 1) // 2 + 1):
            if p > 11 and zeta not in (1, (p - 1) // 2):
                i += len(bs) * len(sig)
                continue
            for b in bs:
                for s in sig:
                    for a in cols:
                        ang = 2 * mp.pi * ((zeta * int(a)) % p) / p
                        T = (mp.cos(ang), mp.sin(ang))
                        for j in range(k):
                            ref = beta * s[j] * T[b[j]]
                            record("max_margin_network", abs(_mpf(U[i, j, a]) - ref) / (6 * EPS * beta))
                        sgn = math.prod(s) * (-1) ** (sum(b) // 2)
                        ref = beta * sgn * (T[0] if b[k] == 0 else -T[1])
                        assert record("max_margin_network", abs(_mpf(W[i, a]) - ref) / (6 * EPS * beta)) <= 1
                    i += 1
    from ._accuracy import WORST
    assert WORST["max_margin_network"][0] <= 1


# ---- networks: logits, margins, norm, Psi (exact rationals) ------------------------------------------------------

@st.composite
def networks(draw, p_choices=SMALL, k_max=3, m_max=3):
    """(U, W): p in {3, 5, 7}, k <= 3, m <= 3; random, cosine or constant neurons; at a scale 1e-200..1e200."""
    p, k, m = draw(st.sampled_from(p_choices)), draw(st.integers(2, k_max)), draw(st.integers(1, m_max))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    kind = draw(st.sampled_from(["random", "cosine", "constant", "sparse"]))
    U, W = rng.standard_normal((m, k, p)), rng.standard_normal((m, p))
    if kind == "cosine":
        u, w = MD.optimal_neuron(p, k, 1)
        U, W = np.repeat(u[None], m, 0), np.repeat(w[None], m, 0)
    elif kind == "constant":
        U, W = np.ones((m, k, p)), np.ones((m, p))
    elif kind == "sparse":
        U, W = np.zeros((m, k, p)), np.zeros((m, p))
        U[:, :, 0], W[:, 1] = 1.0, -1.0
        U[0, 0, 0] += rng.standard_normal()
    scale = 10.0 ** draw(st.sampled_from([0.0, -200.0, 200.0, -60.0, 60.0]) | st.floats(-8, 8))
    return U * scale, W * scale


def _exact_logits(U, W):
    """f(a)[c] for every a in all_inputs order, as exact Fractions, and the absolute scale sum_i |pre_i|^k |w_ic|."""
    m, k, p = U.shape
    Uf = [[[Fraction(float(x)) for x in U[i, j]] for j in range(k)] for i in range(m)]
    Wf = [[Fraction(float(x)) for x in W[i]] for i in range(m)]
    out, sc = [], []
    for a in itertools.product(range(p), repeat=k):
        pre = [sum(Uf[i][j][a[j]] for j in range(k)) for i in range(m)]
        pa = [sum(abs(Uf[i][j][a[j]]) for j in range(k)) for i in range(m)]
        out.append([sum(pre[i] ** k * Wf[i][c] for i in range(m)) for c in range(p)])
        sc.append([sum(pa[i] ** k * abs(Wf[i][c]) for i in range(m)) for c in range(p)])
    return out, sc


def _rel(x):
    return Fraction(float(x))


@settings(max_examples=examples(25), deadline=None)
@given(networks())
@example((np.ones((1, 2, 3)) * 1e-200, np.ones((1, 3)) * 1e-200))   # normalized_margin was nan (0/0: underflow)
def test_logits_margins_norm(net):
    """logits, point_margins (g and g'), margin, class_weighted_margin: absolute error <= (k^2 + m + p + 4) eps
    times the absolute scale S = max over inputs and classes of sum_i |pre_i|^k |w_ic| (class_weighted_margin:
    the mean of the per-input scales, with + log2(p^k)); norm: relative <= (k p + 4) eps; normalized_margin:
    absolute <= (k^2 + m + p + 4 + (k + 1)(k p + 4)) eps S / ||theta||^(k+1), scale invariant (before: NaN at
    1e-200, where both the squares and the logits underflowed). Against exact rational enumeration of Z_p^k."""
    U, W = net
    m, k, p = U.shape
    ex, sc = _exact_logits(U, W)
    S = max(max(row) for row in sc)
    nm = MD.normalized_margin(U, W)
    assert nm == nm
    if not (Fraction(1, 10 ** 290) < S < 10 ** 290):   # homogeneous of degree k + 1: out of float64's range
        return
    tol = Fraction((k * k + m + p + 4) * EPS)
    inputs = NW.all_inputs(p, k)
    L = MD.logits(U, W, inputs)
    for t in range(len(ex)):
        for c in range(p):
            record("logits", abs(_rel(L[t, c]) - ex[t][c]) / (tol * S) if L[t, c] == L[t, c] else math.inf)
    g = MD.point_margins(U, W, inputs)
    gw = MD.point_margins(U, W, inputs, weighted=True)
    gref, gwref = [], []
    for t, a in enumerate(inputs):
        y = int(a.sum()) % p
        gref.append(ex[t][y] - max(ex[t][c] for c in range(p) if c != y))
        gwref.append(ex[t][y] - sum(ex[t][c] for c in range(p) if c != y) / (p - 1))
        record("point_margins", abs(_rel(g[t]) - gref[-1]) / (2 * tol * S))
        record("point_margins", abs(_rel(gw[t]) - gwref[-1]) / (2 * tol * S))
    h = MD.margin(U, W)
    assert record("margin", abs(_rel(h) - min(gref)) / (2 * tol * S)) <= 1
    cw = MD.class_weighted_margin(U, W)
    assert record("class_weighted_margin", abs(_rel(cw) - sum(gwref) / len(gwref)) /
                  ((2 * tol + Fraction(math.log2(p ** k) * EPS)) * S)) <= 1
    per = [sum(Fraction(float(x)) ** 2 for x in U[i].ravel()) + sum(Fraction(float(x)) ** 2 for x in W[i])
           for i in range(m)]
    with mp.workdps(DPS):
        nref = mp.fsum(mp.sqrt(mp.mpf(x.numerator) / x.denominator) ** (k + 1) for x in per) ** (mp.mpf(1) / (k + 1))
        got = MD.norm(U, W)
        S = Fraction(S)
        assert record("norm", abs(_mpf(got) - nref) / ((k * p + 4) * EPS * nref)) <= 1
        ref = mp.mpf(min(gref).numerator) / min(gref).denominator / nref ** (k + 1)
        bound = (k * k + m + p + 4 + (k + 1) * (k * p + 4)) * EPS * (mp.mpf(S.numerator) / S.denominator) \
            / nref ** (k + 1)
        assert record("normalized_margin", abs(_mpf(nm) - ref) / bound) <= 1
    from ._accuracy import WORST
    assert WORST["logits"][0] <= 1 and WORST["point_margins"][0] <= 1


@settings(max_examples=examples(25), deadline=None)
@given(networks(m_max=1), st.sampled_from(["fourier", "direct"]))
def test_single_neuron_margin(net, method):
    """single_neuron_margin: absolute error <= (k^2 + 2 log2(p^k) + 8) eps times the absolute scale
    max(mean_a |pre|^k (|w(s)| + mean|w|), k!/((p-1) p^k) sum_j |w^(j)| prod_i |u_i^(j)|), against the mean
    over Z_p^k in exact rationals."""
    U, W = net
    m, k, p = U.shape
    got = MD.single_neuron_margin(U[0], W[0], method=method)
    assert got == got                  # never NaN (inf where the value is past float64's range)
    Uf = [[Fraction(float(x)) for x in U[0, j]] for j in range(k)]
    Wf = [Fraction(float(x)) for x in W[0]]
    tot, sc, wsum = Fraction(0), Fraction(0), sum(Wf)
    wabs = sum(abs(x) for x in Wf)
    for a in itertools.product(range(p), repeat=k):
        pre = sum(Uf[j][a[j]] for j in range(k))
        pa = sum(abs(Uf[j][a[j]]) for j in range(k))
        s = sum(a) % p
        tot += pre ** k * (Wf[s] - (wsum - Wf[s]) / (p - 1))
        sc += pa ** k * (abs(Wf[s]) + wabs / (p - 1))
    n = p ** k
    ref, sc = tot / n, sc / n
    with mp.workdps(DPS):
        uh = [[abs(mp.fsum(_mpf(U[0, i, x]) * mp.expjpi(-2 * mp.mpf(j * x) / p) for x in range(p))) for j in range(p)]
              for i in range(k)]
        wh = [abs(mp.fsum(_mpf(W[0, x]) * mp.expjpi(2 * mp.mpf(j * x) / p) for x in range(p))) for j in range(p)]
        fs = mp.factorial(k) / ((p - 1) * mp.mpf(p) ** k) * mp.fsum(wh[j] * mp.fprod(uh[i][j] for i in range(k))
                                                                   for j in range(1, p))
        scale = max(mp.mpf(sc.numerator) / sc.denominator, fs)
        bound = (k * k + 2 * math.log2(n) + 8) * EPS * scale + 2 * mp.mpf(2) ** -1074   # underflow floor
        refm = mp.mpf(ref.numerator) / ref.denominator
        if abs(refm) > mp.mpf("1.7e308"):
            assert got == math.copysign(math.inf, refm)
            return
        err = abs(_mpf(got) - refm)
        assert record(f"single_neuron_margin.{method}", err / bound if bound > 0 else (0 if err == 0 else math.inf)) <= 1


# ---- DFTs --------------------------------------------------------------------------------------------------------

@settings(max_examples=examples(25), deadline=None)
@given(networks(k_max=3, m_max=2), st.booleans())
@example((np.ones((1, 2, 3)) * 1e-200, np.ones((1, 3)) * 1e-200), True)
def test_margin_dft(net, normalize):
    """margin_dft (f^/p^k, and / ||theta||^(k+1) when normalised): absolute error <= (k + 2) (log2 p + 4) eps times
    k! sum_i |w_i^(j)| prod_l |u_il^(j)| / p^k (/ ||theta||^(k+1)), against the multi-dimensional DFT of the exact logits by its definition
    in mpmath (sum over a and c of f(a)[c] e^(-2 pi i j (sum a - c)/p)); normalised at 1e-200 (before: 0/0)."""
    U, W = net
    m, k, p = U.shape
    got = MD.margin_dft(U, W, normalize=normalize)
    ex, _ = _exact_logits(U, W)
    inputs = NW.all_inputs(p, k)
    with mp.workdps(DPS):
        nrm = mp.fsum(mp.sqrt(mp.fsum(_mpf(x) ** 2 for x in U[i].ravel()) + mp.fsum(_mpf(x) ** 2 for x in W[i]))
                      ** (k + 1) for i in range(m))
        for j in range(1, p):
            ref = mp.fsum(mp.mpf(ex[t][c].numerator) / ex[t][c].denominator *
                          mp.expjpi(-2 * mp.mpf(j * ((int(a.sum()) - c) % p)) / p)
                          for t, a in enumerate(inputs) for c in range(p))
            sc = mp.factorial(k) * mp.fsum(
                abs(mp.fsum(_mpf(W[i, x]) * mp.expjpi(2 * mp.mpf(j * x) / p) for x in range(p))) *
                mp.fprod(abs(mp.fsum(_mpf(U[i, l, x]) * mp.expjpi(-2 * mp.mpf(j * x) / p) for x in range(p)))
                         for l in range(k)) for i in range(m))
            fabs = mp.fsum(abs(mp.mpf(x.numerator) / x.denominator) for row in ex for x in row)
            div = mp.mpf(p) ** k * (nrm if normalize else 1)    # f^ / p^k, and / ||theta||^(k+1) when normalised
            ref, sc, fabs = ref / div, sc / div, fabs / div
            if fabs > mp.mpf("1e300"):                           # unnormalised and past float64's range: regime
                return
            bound = (k + 2) * (math.log2(p) + 4) * EPS * sc + mp.mpf(10) ** -25 * fabs   # the reference's rounding
            if not normalize:
                bound += 2 * mp.mpf(2) ** -1074
            err = abs(mp.mpc(got[j - 1].real, got[j - 1].imag) - ref)
            assert record("margin_dft", err / bound if bound > 0 else (0 if err == 0 else math.inf)) <= 1


@settings(max_examples=examples(30), deadline=None)
@given(st.sampled_from([2, 3, 4, 5, 7, 8, 11, 13, 47, 64, 97]), st.integers(0, 2 ** 32 - 1),
       st.sampled_from(["random", "cosine", "spike", "constant"]),
       st.sampled_from([0.0, -200.0, 200.0, -170.0, 170.0]) | st.floats(-10, 10))
@example(5, 0, "random", -170.0)     # was all 0 ("v = 0") though v != 0: |v^|^2 underflowed
@example(5, 0, "random", 200.0)      # was NaN: |v^|^2 overflowed to inf
@example(8, 3, "cosine", 0.0)        # the Nyquist bin of an even p: counted once
def test_power_spectrum(p, seed, kind, log_scale):
    """power_spectrum: shares absolute error <= 4 (log2 p + 2) eps / sqrt(e) per bin, e the centred share of ||v||^2
    (bins 1.. sum to 1, bin 0 is 0), at scales 1e-200..1e200 (before: all 0 at 1e-170 and NaN at 1e200); a constant
    v is 0 in every bin (before: NaN); energies (normalize=False) absolute error <= 4 (log2 p + 2) eps ||v||^2 per bin
    while ||v||^2 is a normal float; against |DFT|^2 by its definition in mpmath, weighted 1 at j = 0 and j = p/2
    and 2 elsewhere (Parseval)."""
    rng = np.random.default_rng(seed)
    x = np.arange(p)
    zeta = seed % (p // 2) + 1
    v = {"random": rng.standard_normal(p), "cosine": np.cos(2 * np.pi * (x * zeta % p) / p + 0.3),
         "spike": np.eye(p)[seed % p], "constant": np.ones(p)}[kind] * 10.0 ** log_scale
    got = MD.power_spectrum(v)
    energy = MD.power_spectrum(v, normalize=False)
    with mp.workdps(DPS):
        c = [1 if j == 0 or 2 * j == p else 2 for j in range(p // 2 + 1)]
        P = [c[j] * abs(mp.fsum(_mpf(v[a]) * mp.expjpi(-2 * mp.mpf(j * a) / p) for a in range(p))) ** 2
             for j in range(p // 2 + 1)]
        total = mp.fsum(P) / p                                  # = ||v||^2
        if mp.mpf("2.3e-308") < total < mp.mpf("1.7e308"):
            for j in range(len(P)):
                assert record("power_spectrum.energy", abs(_mpf(energy[j]) - P[j] / p) /
                              (4 * (math.log2(p) + 2) * EPS * total), p=p, kind=kind, scale=log_scale) <= 1
        if kind == "constant":
            assert got.tolist() == [0.0] * (p // 2 + 1)
            return
        assert np.all(np.isfinite(got)) and np.all(got >= 0) and got[0] == 0
        cen = mp.fsum(P[1:])
        e = cen / (P[0] + cen)
        for j in range(1, len(P)):
            assert record("power_spectrum", abs(_mpf(got[j]) - P[j] / cen) / (4 * (math.log2(p) + 2) * EPS / mp.sqrt(e)),
                          p=p, kind=kind, scale=log_scale) <= 1


@settings(max_examples=examples(15), deadline=None)
@given(networks(p_choices=[5, 7, 11, 13], m_max=3))
def test_fourier_diagnostics(net):
    """fourier_diagnostics: component_power as power_spectrum (absolute <= 4 (log2 p + 2) eps / sqrt(e)); phase_residual:
    absolute error <= 8 (k + 1) (log2 p + 2) eps sqrt(p) max_v (||v|| / |v^(zeta)|) (the conditioning of each
    angle), NaN where some component has power below 1e-12 of its centred total or no neuron frequency (zeta = 0:
    every component constant, component_power 0); balance: relative <= 4 p eps.
    Against mpmath DFTs by the definition."""
    U, W = net
    m, k, p = U.shape
    d = MD.fourier_diagnostics(U, W)
    with mp.workdps(DPS):
        for i in range(m):
            comps = [U[i, j] for j in range(k)] + [W[i]]
            z = int(d["dominant_frequency"][i])
            hats = [mp.fsum(_mpf(v[a]) * mp.expjpi(-2 * mp.mpf(z * a) / p) for a in range(p)) for v in comps]
            norms = [mp.sqrt(mp.fsum(_mpf(x) ** 2 for x in v)) for v in comps]
            for j, v in enumerate(comps):
                P = [abs(mp.fsum(_mpf(v[a]) * mp.expjpi(-2 * mp.mpf(jj * a) / p) for a in range(p))) ** 2
                     for jj in range((p + 1) // 2)]
                cen = mp.fsum(P[1:])
                e = 2 * cen / (P[0] + 2 * cen)                    # centred share; below the level: constant
                if e <= (16 * (math.log2(p) + 2) * EPS) ** 2:
                    assert d["component_power"][i, j] == 0.0
                    continue
                ref = max(P[1:]) / cen
                assert record("fourier_diagnostics.component_power", abs(_mpf(d["component_power"][i, j]) - ref)
                              / (4 * (math.log2(p) + 2) * EPS / mp.sqrt(e))) <= 1
            res = d["phase_residual"][i]
            if z > 0 and all(abs(h) > 0 and abs(h) ** 2 > 2e-12 * n ** 2 * p for h, n in zip(hats, norms)):
                assert res == res
                ref = mp.fsum(mp.arg(h) for h in hats[:k]) - mp.arg(hats[k])
                diff = abs((_mpf(res) - ref + mp.pi) % (2 * mp.pi) - mp.pi)
                cond = max(n * mp.sqrt(p) / abs(h) for h, n in zip(hats, norms))
                assert record("fourier_diagnostics.phase_residual",
                              diff / (8 * (k + 1) * (math.log2(p) + 2) * EPS * cond)) <= 1
            lo, hi = min(norms), max(norms)
            ref = lo / hi if hi > 0 else 0
            assert record("fourier_diagnostics.balance", abs(_mpf(d["balance"][i]) - ref) / (4 * p * EPS * max(ref, 1e-300))
                          if ref > 0 else 0) <= 1


# ---- diagnostics, circuit_table (composed) ----------------------------------------------------------------------

@settings(max_examples=examples(12), deadline=None)
@given(networks(p_choices=[3, 5], k_max=3, m_max=2))
@example((np.ones((1, 2, 3)) * 1e-200, np.ones((1, 3)) * 1e-200))   # was ZeroDivisionError (norm^(k+1) = 0)
@example((np.ones((1, 2, 3)) * 1e200, np.ones((1, 3)) * 1e200))     # was OverflowError
def test_diagnostics_and_circuit_table(net):
    """diagnostics: margin absolute <= 2 (k^2 + m + p + 4) eps S (inf/0 only past float64), norm relative <= (k p + 4)
    eps, normalized_margin and margin_ratio (x gamma*) as normalized_margin, weighted_ratio absolute <= (2 (k^2 + m +
    p + 4) + log2(p^k) + (k + 1)(k p + 4)) eps S/||theta||^(k+1)/gamma*, dft_ratio as margin_dft / gamma*, every ratio
    <= 1 (before: weighted_ratio 1 + 4e-16 at the optimum), nothing NaN but phase_residual (max_power 0 only when
    every neuron has a constant map); circuit_table: norm_share relative <= 2 (k + 1) p eps, dft as margin_dft;
    at any scale (before: ZeroDivisionError at 1e-200, OverflowError at 1e200, NaN shares). Against exact rational
    enumeration of Z_p^k and mpmath DFTs by the definition."""
    U, W = net
    m, k, p = U.shape
    d = MD.diagnostics(U, W)
    rows = MD.circuit_table(U, W)
    assert all(v == v for key, v in d.items() if key != "phase_residual")
    assert (d["max_power"] > 0) == bool((MD.fourier_diagnostics(U, W)["max_power"] > 0).any())
    assert d["margin_ratio"] <= 1 and d["weighted_ratio"] <= 1 and d["dft_ratio"] <= 1
    ex, sc = _exact_logits(U, W)
    inputs = NW.all_inputs(p, k)
    g, gw = [], []
    for t, a in enumerate(inputs):
        y = int(a.sum()) % p
        g.append(ex[t][y] - max(ex[t][c] for c in range(p) if c != y))
        gw.append(ex[t][y] - sum(ex[t][c] for c in range(p) if c != y) / (p - 1))
    S = max(max(row) for row in sc)
    with mp.workdps(DPS):
        q = lambda x: mp.mpf(x.numerator) / x.denominator  # noqa: E731
        per = [mp.sqrt(mp.fsum(_mpf(x) ** 2 for x in U[i].ravel()) + mp.fsum(_mpf(x) ** 2 for x in W[i]))
               for i in range(m)]
        nk = mp.fsum(x ** (k + 1) for x in per)
        gam = MD.max_margin(p, k)
        Sm, tol = q(Fraction(S)), (k * k + m + p + 4) * EPS
        href = q(min(g))
        if href != 0 and mp.mpf("2.3e-308") < abs(href) < mp.mpf("1.7e308"):
            record("diagnostics.margin", abs(_mpf(d["margin"]) - href) / (2 * tol * Sm))
        elif abs(href) >= mp.mpf("1.7e308"):
            assert d["margin"] == math.copysign(math.inf, href)
        assert record("diagnostics.norm", abs(_mpf(d["norm"]) - nk ** (mp.mpf(1) / (k + 1))) /
                      ((k * p + 4) * EPS * nk ** (mp.mpf(1) / (k + 1)))) <= 1
        bn = (k * k + m + p + 4 + (k + 1) * (k * p + 4)) * EPS * Sm / nk
        assert record("diagnostics.normalized_margin", abs(_mpf(d["normalized_margin"]) - href / nk) / bn) <= 1
        rr = min(href / nk / gam, 1)
        assert record("diagnostics.margin_ratio", abs(_mpf(d["margin_ratio"]) - rr) / (bn / gam + 4 * EPS)) <= 1
        wr = min(mp.fsum(q(x) for x in gw) / len(gw) / nk / gam, 1)
        bw = (2 * (k * k + m + p + 4) + math.log2(p ** k) + (k + 1) * (k * p + 4)) * EPS * Sm / nk / gam + 4 * EPS
        assert record("diagnostics.weighted_ratio", abs(_mpf(d["weighted_ratio"]) - wr) / bw) <= 1
        dft, bdft = [], []
        for j in range(1, p):
            ref = mp.fsum(q(ex[t][c]) * mp.cospi(-2 * mp.mpf(j * ((int(a.sum()) - c) % p)) / p)
                          for t, a in enumerate(inputs) for c in range(p)) / mp.mpf(p) ** k / nk
            size = mp.factorial(k) * mp.fsum(
                abs(mp.fsum(_mpf(W[i, x]) * mp.expjpi(2 * mp.mpf(j * x) / p) for x in range(p))) *
                mp.fprod(abs(mp.fsum(_mpf(U[i, l, x]) * mp.expjpi(-2 * mp.mpf(j * x) / p) for x in range(p)))
                         for l in range(k)) for i in range(m)) / mp.mpf(p) ** k / nk
            fabs = mp.fsum(abs(q(x)) for row in ex for x in row) / mp.mpf(p) ** k / nk
            dft.append(ref)
            bdft.append((k + 2) * (math.log2(p) + 4) * EPS * size + mp.mpf(10) ** -25 * fabs)
        jmin = min(range(p - 1), key=lambda j: dft[j])
        assert record("diagnostics.dft_ratio", abs(_mpf(d["dft_ratio"]) - min(dft[jmin] / gam, 1)) /
                      (max(bdft) / gam + 4 * EPS)) <= 1
        zeta = MD.fourier_diagnostics(U, W)["dominant_frequency"]
        for row in rows:
            sel = [i for i in range(m) if zeta[i] == row["zeta"]]
            assert row["neurons"] == len(sel)
            share = mp.fsum(per[i] ** (k + 1) for i in sel) / nk
            assert record("circuit_table.norm_share", abs(_mpf(row["norm_share"]) - share) /
                          (2 * (k + 1) * p * EPS * max(share, mp.mpf(2) ** -1074))) <= 1
            j = row["zeta"] - 1
            assert record("circuit_table.dft", abs(_mpf(row["dft"]) - dft[j]) / bdft[j]) <= 1


def test_diagnostics_refuse_the_zero_network():
    """A zero network has no norm to divide by: ValueError naming U and W (before: ZeroDivisionError, NaN rows)."""
    for f in (MD.diagnostics, MD.circuit_table):
        try:
            f(np.zeros((2, 2, 5)), np.zeros((2, 5)))
        except ValueError as e:
            assert "'U' and 'W'" in str(e)
        else:
            raise AssertionError(f"{f.__name__} accepted the zero network")
