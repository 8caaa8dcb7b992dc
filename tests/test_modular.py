"""Oracle and property tests of popdyn.models.modular ([Shi24] Ch. 4, App. C; docs/modular.md).

Oracles: plain Python enumeration of all p^k inputs (the numba kernels), mpmath at 40 digits and the
closed forms of Lemma C.11 / Morwani et al. (gamma*), the printed table of a reference script, numpy.fft.fftn of
the full logit tensor (the DFT closed form), the direct mean over D_p (Psi's Fourier form), and the
identities of Lemma C.16 and eq. (C.21) on random reals.
"""
import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, note, strategies as st, target

import popdyn
from popdyn import InvalidParameterError
from popdyn.models import modular

PRIMES = [3, 5, 7, 11, 13]
# (p, k) with p^k <= 2e4, k in 2..4
SMALL = [(p, k) for p in PRIMES for k in (2, 3, 4) if p ** k <= 20_000]
TABLE = {(47, 4): 1.024086e-5, (97, 3): 2.013531e-5, (23, 5): 1.193409e-5, (31, 4): 2.931416e-5,
         (61, 3): 5.122951e-5, (17, 5): 3.003652e-5, (11, 3): 1.704545e-3, (7, 4): 1.365976e-3,
         (31, 2): 1.629412e-3, (5, 5): 1.388889e-3}
WIDTHS = {(47, 4): 2944, (97, 3): 1536, (23, 5): 5632, (11, 3): 160, (7, 4): 384, (31, 2): 120, (5, 5): 1024}


def small_pk(max_inputs=20_000):
    return st.sampled_from([(p, k) for p, k in SMALL if p ** k <= max_inputs])


@st.composite
def networks(draw, max_inputs=3_000, m_max=6, mean_shift=True):
    """Random networks (U, W) with non-zero-mean Gaussian entries; p odd prime, p^k <= max_inputs."""
    p, k = draw(small_pk(max_inputs))
    m = draw(st.integers(1, m_max))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    shift = rng.standard_normal() if mean_shift else 0.0
    return rng.standard_normal((m, k, p)) + shift, rng.standard_normal((m, p)) - shift


def brute_logits(U, W):
    """Plain enumeration: inputs in itertools.product order (= mixed radix, last fastest)."""
    m, k, p = U.shape
    rows = []
    for a in itertools.product(range(p), repeat=k):
        row = [0.0] * p
        for i in range(m):
            act = sum(U[i, j, a[j]] for j in range(k)) ** k
            for c in range(p):
                row[c] += act * W[i, c]
        rows.append(row)
    return np.array(rows)


def brute_margins(U, W):
    """(h, mean g') by plain enumeration."""
    m, k, p = U.shape
    L = brute_logits(U, W)
    gs, gws = [], []
    for n, a in enumerate(itertools.product(range(p), repeat=k)):
        y = sum(a) % p
        wrong = [L[n, c] for c in range(p) if c != y]
        gs.append(L[n, y] - max(wrong))
        gws.append(L[n, y] - sum(wrong) / (p - 1))
    return min(gs), float(np.mean(gws))


def cosine_neuron(p, k, zeta, phases_u, phase_w, amp=None):
    amp = math.sqrt(2 / ((k + 1) * p)) if amp is None else amp
    x = 2 * np.pi * zeta * np.arange(p) / p
    return amp * np.cos(np.asarray(phases_u)[:, None] + x), amp * np.cos(phase_w + x)


# --------------------------------------------------------------------------- gamma* closed forms
@pytest.mark.parametrize("p, k", sorted(TABLE))
def test_gamma_star_table(p, k):
    # 5e-7: the reference table prints 7 significant digits
    assert modular.max_margin(p, k) == pytest.approx(TABLE[p, k], rel=5e-7)
    if (p, k) in WIDTHS:
        assert modular.construction_width(p, k) == WIDTHS[p, k] == modular.Problem(p, k).width


@given(p=st.sampled_from([3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 47, 97, 101, 997]), k=st.integers(2, 9))
def test_gamma_star_mpmath(p, k):
    mpmath.mp.dps = 40
    ref = 2 * mpmath.factorial(k) / ((2 * k + 2) ** (mpmath.mpf(k + 1) / 2) * (p - 1) * mpmath.mpf(p) ** (mpmath.mpf(k - 1) / 2))
    # 1e-14: float64 pow/factorial, a few ulps per operation
    assert modular.max_margin(p, k) == pytest.approx(float(ref), rel=1e-14)


@given(p=st.sampled_from([3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 47, 97]))
def test_gamma_star_special_cases(p):
    # 1e-14: float64 rounding of the closed forms
    assert modular.max_margin(p, 3) == pytest.approx(3 / (16 * p * (p - 1)), rel=1e-14)           # Lemma C.11
    assert modular.max_margin(p, 2) == pytest.approx(math.sqrt(2 / 27) / ((p - 1) * math.sqrt(p)), rel=1e-14)


@given(k=st.integers(2, 8), i=st.integers(0, 8))
def test_gamma_star_decreasing_in_p_and_scaling(k, i):
    primes = [3, 5, 7, 11, 13, 17, 19, 23, 29, 31]
    p, q = primes[i], primes[i + 1]
    assert modular.max_margin(q, k) < modular.max_margin(p, k)
    # gamma* (p-1) p^{(k-1)/2} = C_k does not depend on p: so gamma* ~ p^{-(k+1)/2}. 1e-13: rounding
    c = [modular.max_margin(r, k) * (r - 1) * r ** ((k - 1) / 2) for r in (p, q, 1009)]
    np.testing.assert_allclose(c, c[0], rtol=1e-13)


# --------------------------------------------------------------------------- kernels vs enumeration
@pytest.mark.parametrize("p, k, m", [(3, 2, 1), (5, 2, 4), (5, 3, 3), (3, 4, 5), (7, 2, 2), (2, 3, 2), (5, 1, 3)])
def test_kernels_match_enumeration(p, k, m):
    rng = np.random.default_rng(p * 100 + k * 10 + m)
    U, W = rng.standard_normal((m, k, p)) + 0.3, rng.standard_normal((m, p))
    L = brute_logits(U, W)
    h, gw = brute_margins(U, W)
    # 1e-12 relative: the same float64 sums in another order, ~ (k + m + p) ulps of |f|
    scale = np.abs(L).max()
    np.testing.assert_allclose(modular.logits(U, W), L, rtol=0, atol=1e-12 * scale)
    assert modular.margin(U, W) == pytest.approx(h, abs=1e-12 * scale)
    assert modular.class_weighted_margin(U, W) == pytest.approx(gw, abs=1e-12 * scale)
    inputs = modular.all_inputs(p, k)
    assert modular.margin(U, W, inputs[::3]) == pytest.approx(brute_margins_subset(L, inputs, p, 3), abs=1e-12 * scale)


def brute_margins_subset(L, inputs, p, step):
    vals = []
    for n in range(0, len(inputs), step):
        y = inputs[n].sum() % p
        vals.append(L[n, y] - max(L[n, c] for c in range(p) if c != y))
    return min(vals)


def test_all_inputs_order_matches_product():
    assert modular.all_inputs(5, 3).tolist() == [list(a) for a in itertools.product(range(5), repeat=3)]


@given(net=networks())
def test_margin_chain(net):
    """h <= mean g <= mean g' = sum Psi <= ||theta||^{k+1} gamma* (docs/modular.md)."""
    U, W = net
    m, k, p = U.shape
    scale = modular.norm(U, W) ** (k + 1)
    inputs = modular.all_inputs(p, k)
    g, gw = modular.point_margins(U, W, inputs), modular.point_margins(U, W, inputs, weighted=True)
    psi = sum(modular.single_neuron_margin(U[i], W[i]) for i in range(m))
    tol = 1e-12 * scale * p  # 1e-12 p ||theta||^{k+1}: rounding of sums of p logits of size <= ||theta||^{k+1}
    note(f"p={p}, k={k}, m={m}, ratio={modular.normalized_margin(U, W) / modular.max_margin(p, k)}")
    target(modular.normalized_margin(U, W) / modular.max_margin(p, k))
    assert modular.margin(U, W) <= g.mean() + tol
    assert np.all(g <= gw + tol)
    assert gw.mean() == pytest.approx(psi, abs=tol)
    assert modular.class_weighted_margin(U, W) == pytest.approx(psi, abs=tol)
    assert psi <= scale * modular.max_margin(p, k) + tol


# --------------------------------------------------------------------------- Psi
@given(net=networks(max_inputs=3_000, m_max=1))
@example(net=(np.ones((1, 2, 3)), np.ones((1, 3))))  # constant neuron: Psi = 0 exactly
def test_psi_direct_equals_fourier(net):
    U, W = net
    u, w = U[0], W[0]
    direct = modular.single_neuron_margin(u, w, method="direct")
    scale = (np.sum(u ** 2) + np.sum(w ** 2)) ** ((u.shape[0] + 1) / 2)
    # 1e-10 relative to ||theta_i||^{k+1}, the natural size of Psi
    assert modular.single_neuron_margin(u, w) == pytest.approx(direct, abs=1e-10 * scale)
    assert direct <= modular.max_margin(u.shape[1], u.shape[0]) * scale + 1e-10 * scale


@given(pk=small_pk(), zeta_frac=st.floats(0, 1), phases=st.lists(st.floats(-10, 10), min_size=5, max_size=5),
       offset=st.floats(-np.pi, np.pi))
def test_phase_rule(pk, zeta_frac, phases, offset):
    """Psi = gamma* cos(sum theta_u - theta_w) for the unit cosine neuron."""
    p, k = pk
    zeta = 1 + int(zeta_frac * ((p - 1) // 2 - 1) + 0.5)
    th = np.array(phases[:k])
    u, w = cosine_neuron(p, k, zeta, th, th.sum() - offset)
    # 1e-12 gamma*: float64 rounding of a p-point DFT
    assert modular.single_neuron_margin(u, w) == pytest.approx(modular.max_margin(p, k) * math.cos(offset),
                                                                abs=1e-12 * modular.max_margin(p, k))


@pytest.mark.parametrize("p, k", [(7, 2), (7, 3), (5, 4), (11, 3)])
def test_optimal_neuron(p, k):
    for zeta in range(1, (p - 1) // 2 + 1):
        u, w = modular.optimal_neuron(p, k, zeta, phases=np.linspace(0.1, 2.0, k))
        comps = np.concatenate([u, w[None]])
        # 1e-12: rounding
        np.testing.assert_allclose((comps ** 2).sum(axis=1), 1 / (k + 1), rtol=1e-12)
        for method in ("fourier", "direct"):
            assert modular.single_neuron_margin(u, w, method=method) == pytest.approx(modular.max_margin(p, k), rel=1e-12)
        d = modular.fourier_diagnostics(u[None], w[None])
        assert d["dominant_frequency"].tolist() == [zeta]
        np.testing.assert_allclose(d["component_power"], 1.0, rtol=1e-12)
        assert abs(d["phase_residual"][0]) < 1e-12
    # a pi/2 phase offset kills the margin; 1e-12 gamma*: rounding
    u, w = cosine_neuron(p, k, 1, np.zeros(k), np.pi / 2)
    assert abs(modular.single_neuron_margin(u, w)) < 1e-12 * modular.max_margin(p, k)


# --------------------------------------------------------------------------- homogeneity, invariances
@given(net=networks(), c=st.floats(0.1, 3.0), seed=st.integers(0, 100))
def test_homogeneity_and_permutation(net, c, seed):
    U, W = net
    m, k, p = U.shape
    L = modular.logits(U, W)
    # 1e-12 relative: rounding of the same sums
    np.testing.assert_allclose(modular.logits(c * U, c * W), c ** (k + 1) * L, rtol=1e-12, atol=1e-12 * c ** (k + 1) * np.abs(L).max())
    perm = np.random.default_rng(seed).permutation(m)
    np.testing.assert_allclose(modular.logits(U[perm], W[perm]), L, rtol=0, atol=1e-12 * np.abs(L).max())
    assert modular.norm(c * U, c * W) == pytest.approx(c * modular.norm(U, W), rel=1e-13)
    assert modular.normalized_margin(c * U, c * W) == pytest.approx(modular.normalized_margin(U, W),
                                                                      abs=1e-11 * p * np.abs(L).max() / modular.norm(U, W) ** (k + 1))
    psi = modular.single_neuron_margin(U[0], W[0])
    assert modular.single_neuron_margin(c * U[0], c * W[0]) == pytest.approx(c ** (k + 1) * psi, abs=1e-12 * c ** (k + 1) * np.abs(L).max())


@given(net=networks(), shifts=st.lists(st.integers(0, 12), min_size=4, max_size=4))
def test_cyclic_shift_covariance(net, shifts):
    """Shifting u_j by t_j and w by sum t_j permutes the points of D_p and keeps their labels."""
    U, W = net
    m, k, p = U.shape
    t = np.array(shifts[:k]) % p
    U2 = np.stack([np.roll(U[:, j], t[j], axis=1) for j in range(k)], axis=1)  # u'_j(x) = u_j(x - t_j)
    W2 = np.roll(W, t.sum() % p, axis=1)
    A = modular.all_inputs(p, k)
    L, L2 = modular.logits(U, W), modular.logits(U2, W2, (A + t) % p)
    tol = 1e-12 * np.abs(L).max()  # rounding
    np.testing.assert_allclose(np.roll(L, t.sum() % p, axis=1), L2, rtol=0, atol=tol)
    assert modular.margin(U2, W2) == pytest.approx(modular.margin(U, W), abs=tol)
    assert modular.single_neuron_margin(U2[0], W2[0]) == pytest.approx(modular.single_neuron_margin(U[0], W[0]), abs=tol)


@given(net=networks(m_max=1), alpha=st.floats(0.3, 3.0))
def test_rebalancing(net, alpha):
    """(alpha u, alpha^-k w) keeps f; the norm is smallest at the balanced alpha."""
    U, W = net
    m, k, p = U.shape
    L = modular.logits(U, W)
    np.testing.assert_allclose(modular.logits(alpha * U, alpha ** -k * W), L, rtol=1e-12, atol=1e-12 * np.abs(L).max())
    su, sw = np.sum(U ** 2), np.sum(W ** 2)
    a_star = (k * sw / su) ** (1 / (2 * k + 2))  # argmin of alpha^2 su + alpha^-2k sw
    n_star = modular.norm(a_star * U, a_star ** -k * W)
    assert n_star <= modular.norm(alpha * U, alpha ** -k * W) * (1 + 1e-12)  # 1e-12: rounding at alpha = a_star


# --------------------------------------------------------------------------- construction
@pytest.mark.parametrize("p, k", SMALL)
def test_construction_margin_is_gamma_star(p, k):
    U, W = modular.max_margin_network(p, k)
    assert U.shape == (modular.construction_width(p, k), k, p)
    # 1e-10; the paper's "0 otherwise" would give ratio (p-1)/p <= 12/13, far outside
    assert modular.normalized_margin(U, W) == pytest.approx(modular.max_margin(p, k), rel=1e-10)
    assert modular.norm(U, W) == pytest.approx(1.0, rel=1e-13)  # 1e-13: rounding of m terms
    if p ** k <= 3_000:
        L = modular.logits(U, W)
        y = modular.all_inputs(p, k).sum(axis=1) % p
        wrong = L[np.arange(len(y))[:, None], (y[:, None] + np.arange(1, p)) % p]
        g = L[np.arange(len(y)), y] - wrong.max(axis=1)
        # Condition 4.8: all wrong logits equal; every point has the same margin. 1e-12: rounding of m terms
        assert np.ptp(wrong) < 1e-12 * np.abs(L).max() and np.ptp(g) < 1e-12 * np.abs(L).max()


@pytest.mark.parametrize("p, k", [(5, 2), (7, 2), (11, 2), (5, 3), (7, 3), (5, 4)])
def test_construction_computes_sum_of_cosines(p, k):
    """With beta^{k+1} = kappa, f(a)[c] = sum_zeta cos(2 pi zeta (sum a - c)/p): (p-1)/2 or -1/2 (erratum)."""
    U, W = modular.max_margin_network(p, k, normalize=False)
    L = modular.logits(U, W)
    d = (modular.all_inputs(p, k).sum(axis=1)[:, None] - np.arange(p)[None]) % p
    ref = np.cos(2 * np.pi * np.multiply.outer(d, np.arange(1, (p - 1) // 2 + 1)) / p).sum(axis=-1)
    # 1.2e-14 was observed; 1e-12: rounding of 2^(2k-2)(p-1) terms of size ~1
    np.testing.assert_allclose(L, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(L, modular.construction_logit(p, d), rtol=0, atol=1e-12)
    assert modular.margin(U, W) == pytest.approx(p / 2, abs=1e-12)
    paper = modular.construction_logit(p, d, convention="paper")
    assert np.abs(L - paper).max() == pytest.approx(0.5, abs=1e-12)  # the erratum gap, 1/2 >> 1e-12


@pytest.mark.parametrize("p, k", SMALL)
def test_construction_margin_conventions(p, k):
    g = modular.max_margin(p, k)
    assert modular.construction_margin(p, k) == pytest.approx(g, rel=1e-13)  # 1e-13: rounding
    assert modular.construction_margin(p, k, convention="paper") == pytest.approx(g * (p - 1) / p, rel=1e-13)


@pytest.mark.parametrize("p, k", [(7, 2), (5, 3), (7, 3), (3, 4)])
def test_margin_dft_against_fftn(p, k):
    """F^(j,..,j,-j) = lambda p^k with lambda = p/2; zero at every other index with j_{k+1} != 0."""
    U, W = modular.max_margin_network(p, k, normalize=False)
    T = modular.logits(U, W).reshape((p,) * (k + 1))
    F = np.fft.fftn(T)
    j = np.arange(1, p)
    diag = F[tuple([j] * k + [(-j) % p])]
    scale = p ** (k + 1)  # 1e-12 p^{k+1}: rounding of a sum of p^{k+1} terms of size ~p/2
    np.testing.assert_allclose(diag, p / 2 * p ** k, rtol=0, atol=1e-12 * scale * p)
    np.testing.assert_allclose(modular.margin_dft(U, W, normalize=False), p / 2, rtol=0, atol=1e-12 * p)
    mask = np.ones(F.shape, bool)
    mask[(slice(None),) * k + (0,)] = False
    mask[tuple([j] * k + [(-j) % p])] = False
    assert np.abs(F[mask]).max() < 1e-9 * scale  # 1e-9 p^{k+1}: fftn rounding, p^{k+1} <= 2401
    # the normalised DFT of the unit-norm construction is gamma* at every j (Lemma C.20)
    np.testing.assert_allclose(modular.margin_dft(*modular.max_margin_network(p, k)).real,
                               modular.max_margin(p, k), rtol=1e-10)


@given(net=networks(max_inputs=800))
def test_margin_dft_closed_form_random(net):
    U, W = net
    m, k, p = U.shape
    F = np.fft.fftn(modular.logits(U, W).reshape((p,) * (k + 1)))
    j = np.arange(1, p)
    diag = F[tuple([j] * k + [(-j) % p])] / p ** k
    # 1e-11 relative to sum |f|/p^k: fftn rounding over p^{k+1} <= 1e4 terms
    tol = 1e-11 * np.abs(modular.logits(U, W)).sum() / p ** k
    np.testing.assert_allclose(modular.margin_dft(U, W, normalize=False), diag, rtol=0, atol=tol)


# --------------------------------------------------------------------------- identities
@given(k=st.integers(1, 6), seed=st.integers(0, 1000))
def test_lemma_c16_product_identity(k, seed):
    a = np.random.default_rng(seed).uniform(-2, 2, k)
    full = sum((-1) ** ((k - sum(c)) // 2) * np.dot(c, a) ** k for c in itertools.product((1, -1), repeat=k))
    half = sum(np.prod(c) * np.dot(c, a) ** k for c in itertools.product((1, -1), repeat=k) if c[0] == 1)
    # 1e-10: 2^k terms of size <= (2k)^k cancelling
    assert full == pytest.approx(2 ** k * math.factorial(k) * np.prod(a), abs=1e-10 * (2 * k) ** k)
    assert 2 * half / (2 ** k * math.factorial(k)) == pytest.approx(np.prod(a), abs=1e-10 * (2 * k) ** k)


@given(n=st.integers(2, 6), seed=st.integers(0, 1000))
def test_eq_c21_cosine_identity(n, seed):
    x = np.random.default_rng(seed).uniform(-4, 4, n)
    s = sum((-1) ** (sum(b) // 2) * np.prod([np.sin(xi) if bi else np.cos(xi) for xi, bi in zip(x, b)])
            for b in itertools.product((0, 1), repeat=n) if sum(b) % 2 == 0)
    assert s == pytest.approx(math.cos(x.sum()), abs=1e-13)  # 1e-13: 2^(n-1) products of size <= 1


# --------------------------------------------------------------------------- diagnostics
@pytest.mark.parametrize("p, k", [(7, 2), (5, 3), (11, 3), (5, 4)])
def test_diagnostics_of_construction(p, k):
    U, W = modular.max_margin_network(p, k)
    d = modular.fourier_diagnostics(U, W)
    assert d["coverage"].tolist() == [2 ** (2 * k - 1)] * ((p - 1) // 2)
    np.testing.assert_allclose(d["component_power"], 1.0, rtol=1e-12)  # one-sided: a cosine has power 1
    assert np.nanmax(np.abs(d["phase_residual"])) < 1e-12 and not np.isnan(d["phase_residual"]).any()
    np.testing.assert_allclose(d["balance"], 1.0, rtol=1e-12)
    s = modular.diagnostics(U, W)
    for name in ("margin_ratio", "weighted_ratio", "dft_ratio", "coverage", "max_power", "balance"):
        assert s[name] == pytest.approx(1.0, rel=1e-10), name  # 1e-10
    rows = modular.circuit_table(U, W)
    assert [r["zeta"] for r in rows] == list(range(1, (p + 1) // 2))
    np.testing.assert_allclose([r["norm_share"] for r in rows], 2 / (p - 1), rtol=1e-12)
    np.testing.assert_allclose([r["dft"] for r in rows], modular.max_margin(p, k), rtol=1e-10)


def test_power_spectrum_one_sided_vs_two_sided():
    p = 11
    v = np.cos(2 * np.pi * 3 * np.arange(p) / p + 0.7)
    two = np.abs(np.fft.fft(v)) ** 2
    assert two.max() / two.sum() == pytest.approx(0.5)  # the paper's Fig. 4.2 formula caps a cosine at 1/2
    assert modular.power_spectrum(v).max() == pytest.approx(1.0, rel=1e-12)
    assert modular.power_spectrum(np.zeros(p)).tolist() == [0.0] * (p // 2 + 1)   # v = 0 has no frequency: 0


@given(net=networks(max_inputs=3_000, m_max=8))
def test_diagnostics_bounds_random(net):
    U, W = net
    d = modular.diagnostics(U, W)
    assert d["margin_ratio"] <= d["weighted_ratio"] + 1e-9 and d["weighted_ratio"] <= 1 + 1e-9  # chain, rounding
    assert 0 <= d["max_power"] <= 1 and 0 < d["coverage"] <= 1 and 0 <= d["balance"] <= 1
    assert sum(r["neurons"] for r in modular.circuit_table(U, W)) == U.shape[0]


# --------------------------------------------------------------------------- predict and Problem
def test_predict_analytic_and_network_agree():
    problem = modular.Problem(5, 3)
    a, n = popdyn.predict(problem), popdyn.predict(problem, method="network")
    assert a.t is None and n.t is None
    for name in a.observables:
        # 1e-10 (network values are measured by the kernels)
        assert float(n[name]) == pytest.approx(float(a[name]), rel=1e-10, abs=1e-10), name
    assert float(a["gamma_star"]) == modular.max_margin(5, 3)
    paper = popdyn.predict(modular.Problem(5, 3, convention="paper"))
    assert float(paper["margin_ratio"]) == pytest.approx(4 / 5, rel=1e-13)


def test_predict_save_load_round_trip(tmp_path):
    from popdyn.results import load
    pred = popdyn.predict(modular.Problem.setting("cpu"))
    again = load(pred.save(tmp_path / "mod"))
    assert again.t is None and {k: float(v) for k, v in again.observables.items()} == \
        {k: float(v) for k, v in pred.observables.items()}


@pytest.mark.parametrize("kw, name", [({"p": 9, "k": 2}, "p"), ({"p": 2, "k": 2}, "p"), ({"p": 1, "k": 2}, "p"),
                                      ({"p": 5, "k": 1}, "k"), ({"p": 5.0, "k": 2}, "p"), ({"p": 15, "k": 3}, "p"),
                                      ({"p": 5, "k": 2, "convention": "x"}, "convention")])
def test_problem_rejects(kw, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of modular.Problem"):
        modular.Problem(**kw)


def test_functions_reject_bad_input():
    U, W = np.ones((2, 2, 5)), np.ones((2, 5))
    cases = [(lambda: modular.max_margin(9, 2), "'p'"), (lambda: modular.max_margin(5, 1), "'k'"),
             (lambda: modular.margin(np.ones((2, 5)), W), "'U'"), (lambda: modular.margin(U, np.ones((3, 5))), "'W'"),
             (lambda: modular.margin(U * np.nan, W), "'U'"), (lambda: modular.logits(U, W, np.array([[0, 5]])), "'inputs'"),
             (lambda: modular.logits(U, W, np.array([[0.0, 1.0]])), "'inputs'"),
             (lambda: modular.optimal_neuron(7, 2, zeta=4), "'zeta'"),
             (lambda: modular.optimal_neuron(7, 2, phases=[1.0]), "'phases'"),
             (lambda: modular.single_neuron_margin(U[0], W[0], method="x"), "'method'"),
             (lambda: modular.construction_logit(7, 1, convention="x"), "'convention'"),
             (lambda: popdyn.predict(modular.Problem(5, 2), method="x"), "'method'"),
             (lambda: modular.norm(U, W, q=0.5), "'q'"), (lambda: modular.Problem.setting("nope"), "'name'")]
    for fn, name in cases:
        with pytest.raises(InvalidParameterError, match=name):
            fn()
