"""Diagnostics of networks trained outside popdyn (popdyn.models.modular; docs/modular.md, "Diagnostics").

Oracles: the DFT by explicit cosine and sine sums (no FFT), Parseval's identity, and the network evaluated on every
input of Z_p^k by plain Python loops over inputs and neurons, for x^k, relu, tanh and a user callable, with untied,
tied and embedded first layers. Properties (Hypothesis): powers do not move under a class-constant offset of W or a
permutation of the neurons; a single-frequency neuron has power 1 at its frequency (Nyquist included); a constant
neuron has none (power 0, frequency 0, never NaN); a tied first layer is counted once in the norm; normalized margins
are scale-free; the x^k kernel equals the generic forward pass. Any p >= 2. Bad input names its parameter.
"""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from popdyn import InvalidParameterError
from popdyn.models import modular

ODD = [3, 5, 7, 9, 11, 15]                 # primes and composites
ANY_P = [2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15]  # odd and even, primes and composites
FAST = settings(max_examples=25, deadline=None)


# --------------------------------------------------------------------------- independent references
def brute_energy(v):
    """One-sided energies by explicit sums: c_j |v^(j)|^2 / p, j = 0..floor(p/2), c_j = 1 at j = 0 and j = p/2,
    2 otherwise."""
    p = len(v)
    out = []
    for j in range(p // 2 + 1):
        re = sum(v[x] * math.cos(2 * math.pi * j * x / p) for x in range(p))
        im = sum(v[x] * math.sin(2 * math.pi * j * x / p) for x in range(p))
        out.append((1 if j == 0 or 2 * j == p else 2) * (re * re + im * im) / p)
    return out


def brute_power(v):
    """Centred one-sided shares E(j) / sum_{l >= 1} E(l), j = 1..floor(p/2), and the energies E(1..)."""
    raw = brute_energy(v)[1:]
    tot = sum(raw)
    return [r / tot for r in raw], raw


def brute_map(U, E, tied, i, j, a):
    """u_{i,j}(a) from the raw parameters, by explicit sums."""
    row = U[i] if tied else U[i, j]
    return row[a] if E is None else sum(row[d] * E[a, d] for d in range(E.shape[1]))


def brute_margin(U, W, sigma, k, E=None):
    """min over all p^k inputs of f[y] - max_{c != y} f[c], by plain loops."""
    m, p = W.shape
    tied = U.ndim == 2
    worst = math.inf
    for a in itertools.product(range(p), repeat=k):
        f = [0.0] * p
        for i in range(m):
            act = sigma(sum(brute_map(U, E, tied, i, j, a[j]) for j in range(k)))
            for c in range(p):
                f[c] += act * W[i, c]
        y = sum(a) % p
        worst = min(worst, f[y] - max(f[c] for c in range(p) if c != y))
    return worst


def brute_norm(U, W, q, E=None):
    """(sum_i ||theta_i||^q + ||E||^q)^(1/q), every parameter once."""
    per = [math.sqrt(float(np.sum(U[i] ** 2)) + float(np.sum(W[i] ** 2))) for i in range(len(W))]
    if E is not None:
        per.append(math.sqrt(float(np.sum(E ** 2))))
    return sum(x ** q for x in per) ** (1 / q)


SIGMAS = {"x^k": None, "relu": lambda z: max(z, 0.0), "tanh": math.tanh}


@st.composite
def nets(draw, ps=(3, 4, 5, 6, 7, 9), m_max=5):
    p = draw(st.sampled_from(ps))
    k = draw(st.integers(2, 3 if p <= 7 else 2))
    m = draw(st.integers(1, m_max))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 31 - 1)))
    return rng.standard_normal((m, k, p)) + rng.standard_normal(), rng.standard_normal((m, p))


def cosine_neuron(p, k, zeta, rng):
    """One neuron whose maps are cosines of frequency zeta with random amplitudes, phases and offsets."""
    x = 2 * np.pi * (zeta * np.arange(p) % p) / p
    amp, ph, off = rng.uniform(0.5, 2, k + 1), rng.uniform(-np.pi, np.pi, k + 1), rng.normal(0, 3, k + 1)
    maps = amp[:, None] * np.cos(x[None] + ph[:, None]) + off[:, None]
    return maps[:k][None], maps[k][None]


# --------------------------------------------------------------------------- the power: one definition
@FAST
@given(nets())
def test_power_against_explicit_sums(net):
    U, W = net
    m, k, p = U.shape
    d = modular.fourier_diagnostics(U, W)
    comps = np.concatenate([U, W[:, None]], 1)
    for i in range(m):
        raws = []
        for j in range(k + 1):
            shares, raw = brute_power(comps[i, j])
            raws.append(raw)
            ps = modular.power_spectrum(comps[i, j])
            assert ps[0] == 0.0
            np.testing.assert_allclose(ps[1:], shares, atol=1e-12)       # 1e-12: FFT vs explicit sums, p <= 9
            assert d["component_power"][i, j] == pytest.approx(max(shares), abs=1e-12)
        assert d["max_power"][i] == pytest.approx(min(max(brute_power(v)[0]) for v in comps[i]), abs=1e-12)
        summed = np.sum(raws, axis=0)
        if len(summed) == 1 or np.sort(summed)[-1] - np.sort(summed)[-2] > 1e-9 * summed.max():  # a clear winner
            assert d["dominant_frequency"][i] == 1 + int(np.argmax(summed))


@FAST
@given(nets(), st.integers(0, 2 ** 31 - 1), st.floats(-50, 50))
def test_class_constant_offset_and_neuron_permutation_move_nothing(net, seed, scale):
    """w_i + b_i (softmax ignores it) and a reordering of the neurons leave every power, frequency and phase."""
    U, W = net
    rng = np.random.default_rng(seed)
    b = scale * rng.standard_normal((len(W), 1))
    perm = rng.permutation(len(W))
    base = modular.fourier_diagnostics(U, W)
    moved = modular.fourier_diagnostics(U, W + b)
    shuffled = modular.fourier_diagnostics(U[perm], W[perm])
    for name in ("component_power", "max_power", "dominant_frequency", "phase_residual"):
        np.testing.assert_allclose(moved[name], base[name], atol=1e-9, err_msg=name)  # 1e-9: |b| <= 50 |W|
        np.testing.assert_allclose(shuffled[name], base[name][perm], atol=0, err_msg=name)
    assert moved["coverage"].tolist() == base["coverage"].tolist() == shuffled["coverage"].tolist()
    assert modular.margin(U, W + b) == pytest.approx(modular.margin(U, W), rel=1e-9, abs=1e-9 * (1 + abs(scale)))
    d0, d1 = modular.diagnostics(U, W), modular.diagnostics(U[perm], W[perm] + b[perm])
    assert d1["max_power"] == pytest.approx(d0["max_power"], abs=1e-9)


@FAST
@given(st.sampled_from(ANY_P), st.integers(2, 4), st.data())
def test_single_frequency_neuron_has_power_one_at_its_frequency(p, k, data):
    """Cosines of one frequency with random amplitudes, phases and offsets: power exactly 1 in every map, at that
    frequency (the Nyquist p/2 of an even p included)."""
    zeta = data.draw(st.integers(1, p // 2))
    u, w = cosine_neuron(p, k, zeta, np.random.default_rng(data.draw(st.integers(0, 2 ** 31 - 1))))
    d = modular.fourier_diagnostics(u, w)
    np.testing.assert_allclose(d["component_power"], 1.0, rtol=1e-12)     # 1e-12: float64 FFT, p <= 15
    assert d["dominant_frequency"].tolist() == [zeta]
    assert d["coverage"].sum() == 1 and d["coverage"][zeta - 1] == 1
    spec = modular.power_spectrum(np.concatenate([u[0], w]))
    assert np.all(np.argmax(spec, axis=1) == zeta) and np.all(spec[:, 0] == 0)


@pytest.mark.parametrize("p, k", [(5, 2), (9, 3), (23, 2), (6, 2), (2, 3)])
def test_constant_neuron_reports_no_frequency(p, k):
    """A constant neuron (and a zero one) has frequency 0 and power 0 (the sentinel, not NaN), uses no frequency,
    and is left out of the median power; a neuron with one constant map has power 0 too."""
    rng = np.random.default_rng(0)
    u, w = cosine_neuron(p, k, 1, rng)
    part_u = np.concatenate([np.full((1, 1, p), 0.3), u[:, 1:]], axis=1)      # u_1 constant, the rest cosines
    U = np.concatenate([u, np.full((1, k, p), 0.3), np.zeros((1, k, p)), part_u])
    W = np.concatenate([w, np.full((1, p), -2.0), np.zeros((1, p)), w])
    d = modular.fourier_diagnostics(U, W)
    assert d["dominant_frequency"].tolist() == [1, 0, 0, 1]
    assert d["max_power"][0] == pytest.approx(1.0) and d["max_power"][1:].tolist() == [0.0, 0.0, 0.0]
    assert d["component_power"][1:3].tolist() == [[0.0] * (k + 1)] * 2 and d["component_power"][3, 0] == 0.0
    assert np.isnan(d["phase_residual"][1:]).all()            # no phase to read: NaN, as documented
    assert d["coverage"].sum() == 2                           # constant neurons use no frequency
    np.testing.assert_allclose(d["constant_fraction"][1:3], 1.0)   # a zero map counts as constant
    for v in (np.full(p, 7.0), np.zeros(p)):
        assert modular.power_spectrum(v).tolist() == [0.0] * (p // 2 + 1)
    assert modular.diagnostics(U, W)["max_power"] == pytest.approx(1.0)   # the median leaves them out
    assert modular.diagnostics(U[1:3], W[1:3])["max_power"] == 0.0        # none left: 0, not NaN
    for row in modular.circuit_table(U, W):
        assert row["median_power"] == (pytest.approx(1.0) if row["zeta"] == 1 else 0.0)


def test_offset_power_numbers():
    """A perturbed construction (p = 23, k = 2): a class-constant offset of W leaves the median power (0.952);
    the definition that counted the mean as a bin fell to 0.812 here, and a constant neuron had power 1."""
    rng = np.random.default_rng(0)
    U, W = modular.max_margin_network(23, 2)
    U = U + 0.15 * np.abs(U).max() * rng.standard_normal(U.shape)
    W = W + 0.15 * np.abs(W).max() * rng.standard_normal(W.shape)
    b = np.abs(W).max() * rng.standard_normal((len(W), 1))
    before, after = modular.diagnostics(U, W)["max_power"], modular.diagnostics(U, W + b)["max_power"]
    assert before == pytest.approx(after, abs=1e-12) and before == pytest.approx(0.9522, abs=5e-5)
    old = lambda V: np.median((lambda P: (P.max(-1) / P.sum(-1)).min(1))(   # noqa: E731 (mean counted as a bin)
        np.abs(np.fft.rfft(np.concatenate([U, V[:, None]], 1), axis=-1)) ** 2))
    assert old(W + b) < before - 0.1


# --------------------------------------------------------------------------- margins of any activation
@pytest.mark.parametrize("act", ["x^k", "relu", "tanh", "callable"])
@pytest.mark.parametrize("form", ["untied", "tied", "embedding", "tied embedding"])
def test_margin_against_plain_loops(act, form):
    rng = np.random.default_rng(7)
    p, k, m, dim = 7, 2, 4, 3
    E = rng.standard_normal((p, dim)) if "embedding" in form else None
    inner = dim if E is not None else p
    tied = form.startswith("tied")
    U = rng.standard_normal((m, inner) if tied else (m, k, inner))
    W = rng.standard_normal((m, p))
    sigma = SIGMAS.get(act, lambda z: z * abs(z))                # callable: z|z|, homogeneous of degree 2
    name = (lambda z: z * np.abs(z)) if act == "callable" else act
    kw = {"k": k if tied else None, "embedding": E, "activation": name,
          "degree": 2 if act == "callable" else None}
    if act == "x^k":
        sigma = lambda z: z ** k                                  # noqa: E731
    ref = brute_margin(U, W, sigma, k, E)
    assert modular.margin(U, W, **kw) == pytest.approx(ref, rel=1e-12, abs=1e-12)  # 1e-12: sums of <= 16 terms
    inputs = modular.all_inputs(p, k)[::5]
    assert modular.margin(U, W, inputs, **kw) >= ref - 1e-12
    L = {"x^k": k + 1, "relu": 2, "callable": 3, "tanh": None}[act]
    if E is not None and L is not None:
        L = 2 * (L - 1) + 1                                       # an embedding is one more layer: 2 nu + 1
    d = modular.diagnostics(U, W, **kw)
    assert d["margin"] == pytest.approx(ref, rel=1e-12, abs=1e-12)
    if L is None:
        assert "normalized_margin" not in d and "norm" not in d
        with pytest.raises(InvalidParameterError, match="'activation'"):
            modular.normalized_margin(U, W, **kw)
        return
    nrm = brute_norm(U, W, L, E)
    assert d["degree"] == L and d["norm"] == pytest.approx(nrm, rel=1e-13)
    assert d["normalized_margin"] == pytest.approx(ref / nrm ** L, rel=1e-11)
    assert modular.normalized_margin(U, W, **kw) == pytest.approx(ref / nrm ** L, rel=1e-11)
    assert ("margin_ratio" in d) == (act == "x^k" and form == "untied")


@pytest.mark.parametrize("p, k, m, form", [(11, 2, 12, "untied"), (7, 3, 10, "untied"), (6, 3, 5, "tied"),
                                          (5, 4, 4, "untied"), (9, 2, 6, "embedding")])
def test_xk_kernel_equals_the_generic_forward_pass(p, k, m, form):
    """The x^k fast path (numba kernel over all p^k inputs) against the generic numpy forward pass with the callable
    z -> z^k (degree k), on every input: margin, normalized margin, logits and the diagnostics' margin."""
    rng = np.random.default_rng(p * k)
    E = rng.standard_normal((p, 3)) if form == "embedding" else None
    inner = 3 if E is not None else p
    U = rng.standard_normal((m, inner) if form == "tied" else (m, k, inner))
    W = rng.standard_normal((m, p))
    kw = {"k": k if form == "tied" else None, "embedding": E}
    generic = {"activation": lambda z: z ** k, "degree": k, **kw}
    a = modular.all_inputs(p, k)
    fast, slow = modular.logits(U, W, a, **kw), modular.logits(U, W, a, **generic)
    S = np.abs(fast).max()
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-13 * m * S)     # 1e-13: sums of m terms of size <= S
    assert modular.margin(U, W, **kw) == pytest.approx(modular.margin(U, W, **generic), abs=2e-13 * m * S)
    assert modular.normalized_margin(U, W, **kw) == pytest.approx(modular.normalized_margin(U, W, **generic),
                                                                   rel=1e-11, abs=1e-15)
    assert modular.diagnostics(U, W, **kw)["margin"] == pytest.approx(modular.margin(U, W, **generic),
                                                                       abs=2e-13 * m * S)


@FAST
@given(nets(ps=(5, 7)), st.sampled_from(["x^k", "relu", "quadratic"]), st.booleans(),
       st.integers(-40, 40))
def test_normalized_margin_is_scale_free(net, act, embed, e):
    """f(t theta) = t^L f(theta): the normalized margin is the same at every scale 2^e, also with an embedding."""
    U, W = net
    E = np.random.default_rng(1).standard_normal((U.shape[2], 3)) if embed else None
    if embed:
        U = U[..., :3]
    kw = {"activation": act, "embedding": E}
    h = modular.normalized_margin(U, W, **kw)
    t = 2.0 ** e * 1.37
    scaled = modular.normalized_margin(U * t, W * t, activation=act, embedding=None if E is None else E * t)
    assert scaled == pytest.approx(h, rel=1e-10)       # 1e-10: rounding of f at a non-power-of-2 factor


@FAST
@given(nets(ps=(5, 7, 9)), st.sampled_from(["x^k", "relu"]))
def test_tied_first_layer_counts_once(net, act):
    """A tied U (m, p) and its untied copy (m, k, p) give the same logits; the norm counts u_i once (tied) or
    k times (untied): ||theta_i||^2 = ||u_i||^2 + ||w_i||^2 against k ||u_i||^2 + ||w_i||^2."""
    U, W = net
    m, k, p = U.shape
    tied, copies = U[:, 0], np.repeat(U[:, :1], k, axis=1)
    a = modular.all_inputs(p, k)
    np.testing.assert_allclose(modular.logits(tied, W, a, k=k, activation=act),
                               modular.logits(copies, W, a, activation=act), rtol=1e-13, atol=1e-12)
    q = k + 1 if act == "x^k" else 2
    assert modular.norm(tied, W, k=k, activation=act) == pytest.approx(brute_norm(tied, W, q), rel=1e-13)
    assert modular.norm(copies, W, activation=act) == pytest.approx(brute_norm(copies, W, q), rel=1e-13)
    assert modular.norm(tied, W, k=k, activation=act) < modular.norm(copies, W, activation=act)
    ft, fc = modular.fourier_diagnostics(tied, W, k=k), modular.fourier_diagnostics(copies, W)
    np.testing.assert_allclose(ft["component_power"], fc["component_power"], atol=0)


def test_embedding_maps_feed_the_fourier_diagnostics():
    """A Fourier embedding (cos, sin at zeta) read by a tied first layer gives cosine maps: power 1 at zeta."""
    p, k, zeta = 11, 2, 3
    x = 2 * np.pi * zeta * np.arange(p) / p
    E = np.stack([np.cos(x), np.sin(x), np.ones(p)], axis=1)       # a constant direction too: a bias, no frequency
    V = np.array([[1.0, 0.5, 2.0], [0.0, -1.0, 0.3]])
    W = np.stack([np.cos(x + 0.4), np.cos(x - 1.0)]) + 5.0
    d = modular.fourier_diagnostics(V, W, k=k, embedding=E)
    np.testing.assert_allclose(d["component_power"], 1.0, rtol=1e-12)
    assert d["dominant_frequency"].tolist() == [zeta, zeta]


# --------------------------------------------------------------------------- p: odd, prime or not
def construction(p, k):
    """The unit max-margin construction by its recipe (any odd p): cos/sin neurons with even |b| and signs."""
    out_u, out_w = [], []
    a = np.arange(p)
    for zeta in range(1, (p - 1) // 2 + 1):
        T = [np.cos(2 * np.pi * zeta * a / p), np.sin(2 * np.pi * zeta * a / p)]
        for b in itertools.product((0, 1), repeat=k + 1):
            if sum(b) % 2:
                continue
            for s in itertools.product((1, -1), repeat=k - 1):
                sig = (1,) + s
                out_u.append([sig[j] * T[b[j]] for j in range(k)])
                out_w.append(np.prod(sig) * (-1) ** (sum(b) // 2) * (T[0] if b[k] == 0 else -T[1]))
    return np.array(out_u), np.array(out_w)


@pytest.mark.parametrize("p, k", [(9, 2), (15, 2), (9, 3), (7, 2)])
def test_composite_odd_p_is_accepted_and_the_construction_reaches_gamma_star(p, k):
    U, W = construction(p, k)
    d = modular.diagnostics(U, W)
    for name in ("margin_ratio", "weighted_ratio", "dft_ratio", "max_power", "coverage", "balance"):
        assert d[name] == pytest.approx(1.0, rel=1e-10), name       # 1e-10: the kernels' rounding
    assert d["phase_residual"] < 1e-10
    assert modular.fourier_diagnostics(U, W)["coverage"].tolist() == [2 ** (2 * k - 1)] * ((p - 1) // 2)


@pytest.mark.parametrize("p", [2, 4, 6, 8])
def test_even_p_is_accepted_without_the_odd_p_ratios(p):
    """Every Fourier diagnostic takes an even p (bins 1..p/2, the Nyquist bin once); the ratios to gamma* are left
    out, because on the Nyquist frequency one neuron's class-weighted margin passes gamma*: 2^((k-1)/2) gamma*."""
    rng = np.random.default_rng(p)
    U, W = rng.standard_normal((3, 2, p)), rng.standard_normal((3, p))
    d = modular.fourier_diagnostics(U, W)
    assert d["coverage"].shape == (p // 2,) and d["component_power"].min() >= 1 / (p // 2) - 1e-12
    s = modular.diagnostics(U, W)
    assert not {"margin_ratio", "weighted_ratio", "dft_ratio"} & set(s)
    assert s["margin"] == pytest.approx(brute_margin(U, W, lambda z: z ** 2, 2), rel=1e-12, abs=1e-12)
    assert [r["zeta"] for r in modular.circuit_table(U, W)] == list(range(1, p // 2 + 1))
    for k in (2, 3):                                          # the Nyquist neuron, unit norm
        amp = (1 / ((k + 1) * p)) ** 0.5
        u, w = np.tile(amp * (-1.0) ** np.arange(p), (1, k, 1)), amp * (-1.0) ** np.arange(p)[None]
        gamma = 2 * math.factorial(k) / ((2 * k + 2) ** ((k + 1) / 2) * (p - 1) * p ** ((k - 1) / 2))
        assert modular.class_weighted_margin(u, w) == pytest.approx(2 ** ((k - 1) / 2) * gamma, rel=1e-12)
        assert modular.fourier_diagnostics(u, w)["dominant_frequency"].tolist() == [p // 2]


@pytest.mark.parametrize("p, k", [(6, 2), (9, 2), (15, 2)])
def test_diagnostics_and_fourier_diagnostics_agree_on_p(p, k):
    """Both accept the same p (before: diagnostics refused a composite p that fourier_diagnostics took)."""
    rng = np.random.default_rng(0)
    U, W = rng.standard_normal((4, k, p)), rng.standard_normal((4, p))
    f, d = modular.fourier_diagnostics(U, W), modular.diagnostics(U, W)
    assert d["coverage"] == f["coverage_fraction"]
    assert d["max_power"] == pytest.approx(np.median(f["max_power"]), rel=1e-15)
    assert ("margin_ratio" in d) == (p % 2 == 1)


def test_p_below_2_is_refused_by_name():
    for fn, name in ((lambda: modular.power_spectrum(np.ones(1)), "'p'.*>= 2.*p = 1"),
                     (lambda: modular.fourier_diagnostics(np.ones((2, 2, 1)), np.ones((2, 1))), "'U'"),
                     (lambda: modular.diagnostics(np.ones((2, 2, 1)), np.ones((2, 1))), "'U'")):
        with pytest.raises(InvalidParameterError, match=name):
            fn()


# --------------------------------------------------------------------------- Parseval
@FAST
@given(st.sampled_from(ANY_P), st.integers(0, 2 ** 31 - 1), st.floats(-20, 20))
def test_power_spectrum_parseval(p, seed, offset):
    """The one-sided energies (constant and Nyquist once, the pairs +-j twice) sum to ||v||^2 and match explicit
    sums; the shares are the energies over ||v - mean v||^2 and sum to 1; the constant bin holds p mean(v)^2."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((3, p)) + offset
    E = modular.power_spectrum(v, normalize=False)
    P = modular.power_spectrum(v)
    assert E.shape == P.shape == (3, p // 2 + 1)
    sq = (v ** 2).sum(axis=1)
    scale = 1 + offset ** 2
    # 1e-13: float64 FFT of p <= 15 entries vs explicit sums, relative to ||v||^2 ~ p (1 + offset^2)
    np.testing.assert_allclose(E.sum(axis=1), sq, rtol=1e-13)
    np.testing.assert_allclose(E, [brute_energy(x) for x in v], atol=1e-13 * p * scale)
    np.testing.assert_allclose(E[:, 0], p * v.mean(axis=1) ** 2, rtol=1e-12, atol=1e-13 * p * scale)
    cen = ((v - v.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    # shares: the energies' absolute error 1e-13 p scale divided by the centred energy ~ p
    np.testing.assert_allclose(P[:, 1:], E[:, 1:] / cen[:, None], atol=1e-12 * scale)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(P[:, 0] == 0)


def test_parseval_counts_the_constant_and_nyquist_bins_once():
    """Hand values: v = 2 + (-1)^x on Z_4 has energy 16 in the constant (p mean^2 = 4 * 4) and 4 at the Nyquist bin;
    doubling either (the former one-sided sum) breaks sum = ||v||^2 = 20."""
    v = 2 + (-1.0) ** np.arange(4)
    assert modular.power_spectrum(v, normalize=False).tolist() == [16.0, 0.0, 4.0]
    assert modular.power_spectrum(v).tolist() == [0.0, 0.0, 1.0]
    assert modular.fourier_diagnostics(np.tile(v, (1, 2, 1)), v[None])["constant_fraction"].tolist() == [[0.8] * 3]


# --------------------------------------------------------------------------- bad input names the parameter
def test_bad_input_names_the_parameter():
    rng = np.random.default_rng(0)
    U, W, E = rng.standard_normal((2, 2, 5)), rng.standard_normal((2, 5)), rng.standard_normal((5, 3))
    cases = [
        (lambda: modular.margin(U[:, 0], W), "'k'"),                                     # tied without k
        (lambda: modular.margin(U, W, k=3), "'k'"),                                      # k against U's shape
        (lambda: modular.fourier_diagnostics(U[:, 0], W, k=0), "'k'"),
        (lambda: modular.margin(U, W, embedding=E[:, :2]), "'U'"),                       # U's last axis != d
        (lambda: modular.margin(U[..., :3], W, embedding=E[:4]), "'W'"),                 # p of E != p of W
        (lambda: modular.margin(U[..., :3], W, embedding=E[0]), "'embedding'"),
        (lambda: modular.margin(U[..., :3], W, embedding=E * np.nan), "'embedding'"),
        (lambda: modular.margin(U, W, activation="nope"), "'activation'"),
        (lambda: modular.margin(U, W, activation=3), "'activation'"),
        (lambda: modular.margin(U, W, activation=lambda z: z[:1]), "'activation'"),      # not elementwise
        (lambda: modular.margin(U, W, activation=np.exp, degree=1), "'degree'"),         # not homogeneous
        (lambda: modular.margin(U, W, activation=np.abs, degree=-1), "'degree'"),
        (lambda: modular.margin(U, W, activation="relu", degree=2), "'degree'"),
        (lambda: modular.normalized_margin(U, W, activation="gelu"), "'activation'"),
        (lambda: modular.normalized_margin(U, W, activation=np.tanh), "'activation'"),
        (lambda: modular.norm(U, W, activation="tanh"), "'q'"),
        (lambda: modular.diagnostics(U, W, np.array([[0, 5]])), "'inputs'"),
        (lambda: modular.power_spectrum(np.array([1.0, np.nan, 2.0])), "'v'"),
        (lambda: modular.power_spectrum(np.float64(2.0)), "'v'"),
        (lambda: modular.power_spectrum(W, normalize="yes"), "'normalize'"),
    ]
    for fn, name in cases:
        with pytest.raises(ValueError, match=name):
            fn()


@pytest.mark.parametrize("fn", ["normalized_margin", "diagnostics", "circuit_table"])
def test_an_all_zero_network_is_refused_by_name(fn):
    """The norm divides every normalised quantity: a network without a non-zero parameter raises ValueError
    naming U and W (normalized_margin divided by zero before)."""
    with pytest.raises(ValueError, match="'U' and 'W'"):
        getattr(modular, fn)(np.zeros((3, 2, 5)), np.zeros((3, 5)))
