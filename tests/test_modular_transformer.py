"""The transformer problem (popdyn.models.modular.problem) and the Fourier diagnostics of transformer weights
(popdyn.models.modular.transformer):
each diagnostic against an independent computation (explicit sums over Z_p, loops over heads) and on planted
Fourier-sparse weights whose answer is known exactly."""
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import popdyn
from popdyn._validate import InvalidParameterError
from popdyn.models import modular
from popdyn.models.modular import (TransformerProblem, attention_diagnostics, attention_matrices, embedding_spectrum,
                                   neuron_maps, power_spectrum_2d)

_EXACT = 1e-12   # float64 FFTs and means of O(1) numbers over at most 13^3 points: round-off ~1e-15


def _cos(p, zeta, phase=0.0):
    return np.cos(2 * np.pi * zeta * np.arange(p) / p + phase)


# ---- the problem ------------------------------------------------------------------------------------

def test_problem_repr_round_trips_and_settings_are_the_papers():
    pb = TransformerProblem(p=11, k=3, layers=2, heads=3, d_model=16, d_head=4, d_mlp=32, activation="gelu")
    namespace = {"modular": SimpleNamespace(TransformerProblem=TransformerProblem)}   # modular exports it (lead)
    assert repr(eval(repr(pb), namespace)) == repr(pb)
    assert (pb.n_inputs, pb.n_frequencies) == (1331, 5)
    fig = TransformerProblem.setting("fig4.3")                          # Sec. 4.5: k = 4, p = 31, m = 160, hidden 128
    assert (fig.p, fig.k, fig.layers, fig.heads, fig.d_model) == (31, 4, 1, 160, 128)
    assert TransformerProblem.setting("fig4.4-k5").layers == 2         # Fig. 4.4: two-layer transformers
    assert TransformerProblem.setting("cpu", heads=2).heads == 2


@pytest.mark.parametrize("field, value", [("p", 9), ("p", 2), ("p", 4.0), ("k", 1), ("layers", 0), ("heads", 0),
                                          ("d_model", -1), ("d_head", 0), ("d_mlp", 0), ("activation", "tanh")])
def test_problem_bad_input_names_the_parameter(field, value):
    kw = {"p": 7, "k": 2, field: value}
    with pytest.raises(InvalidParameterError, match=f"'{field}' parameter"):
        TransformerProblem(**kw)


def test_setting_bad_name():
    with pytest.raises(InvalidParameterError, match="'name' parameter"):
        TransformerProblem.setting("fig9")


def test_predict_gives_the_single_frequency_values():
    pred = popdyn.predict(TransformerProblem(p=7, k=2))
    assert pred.t is None
    assert {n: float(pred[n]) for n in ("max_power", "attention_power", "single_freq_fraction", "additive_fraction")} \
        == {"max_power": 1.0, "attention_power": 1.0, "single_freq_fraction": 1.0, "additive_fraction": 1.0}
    assert "coverage" not in pred.observables   # every frequency is the (4.2) network's at the construction width


# ---- 2-D spectra ------------------------------------------------------------------------------------

def _folded_energy(M, j1, j2):
    """Energy of M in the frequency pair (j1, j2) up to signs, by projection on the real Fourier basis (no FFT)."""
    p = M.shape[0]
    basis = lambda j: [_cos(p, j)] if j == 0 else [_cos(p, j), _cos(p, j, -np.pi / 2)]   # cos, sin
    e = 0.0
    for b1 in basis(j1):
        for b2 in basis(j2):
            e += (b1 @ M @ b2) ** 2 / ((b1 @ b1) * (b2 @ b2))
    return e


@pytest.mark.parametrize("p", [5, 7, 13])
def test_power_spectrum_2d_is_the_energy_by_projection(p):
    M = np.random.default_rng(p).standard_normal((p, p))
    P = power_spectrum_2d(M)
    direct = np.array([[_folded_energy(M, a, b) for b in range(p // 2 + 1)] for a in range(p // 2 + 1)])
    np.testing.assert_allclose(P, direct / (M ** 2).sum(), atol=_EXACT)
    assert abs(P.sum() - 1) < _EXACT


@pytest.mark.parametrize("z1, z2", [(1, 1), (2, 3), (3, 0), (0, 2)])
def test_power_spectrum_2d_of_a_planted_2d_cosine_is_one_bin(z1, z2):
    p = 7
    M = np.outer(_cos(p, z1, 0.3), _cos(p, z2, -1.1))
    P = power_spectrum_2d(M)
    assert abs(P[z1, z2] - 1) < _EXACT
    two_sided = np.abs(np.fft.fft2(M)) ** 2 / (np.abs(np.fft.fft2(M)) ** 2).sum()
    assert two_sided.max() == pytest.approx(0.25 if z1 and z2 else 0.5, abs=_EXACT)   # the unfolded cap


@settings(max_examples=30, deadline=None)
@given(arrays(np.float64, (5, 5), elements=st.floats(-1, 1)), st.integers(0, 4), st.integers(0, 4),
       st.floats(0.1, 10))
def test_power_spectrum_2d_is_shift_and_scale_invariant(M, s1, s2, c):
    shifted = c * np.roll(np.roll(M, s1, axis=0), s2, axis=1)
    np.testing.assert_allclose(power_spectrum_2d(shifted), power_spectrum_2d(M), atol=1e-9)


@pytest.mark.parametrize("M", [np.zeros((3, 4)), np.zeros(5), np.full((3, 3), np.nan)])
def test_power_spectrum_2d_bad_input(M):
    with pytest.raises(InvalidParameterError, match="'M' parameter"):
        power_spectrum_2d(M)


# ---- attention ----------------------------------------------------------------------------------------

def _fourier_embedding(p, freqs):
    """Planted embedding: columns cos and sin of each frequency (an orthogonal Fourier-sparse E)."""
    return np.stack([f for z in freqs for f in (_cos(p, z), _cos(p, z, -np.pi / 2))], axis=1)


def test_attention_matrices_against_a_loop_over_heads():
    rng = np.random.default_rng(1)
    E, WQ, WK = rng.standard_normal((7, 6)), rng.standard_normal((3, 6, 2)), rng.standard_normal((3, 6, 2))
    loop = np.stack([E @ WK[h] @ WQ[h].T @ E.T for h in range(3)])
    np.testing.assert_allclose(attention_matrices(E, WQ, WK), loop, atol=_EXACT)


def test_attention_diagnostics_on_planted_single_frequency_heads():
    p, freqs = 11, (1, 3, 4)
    E = _fourier_embedding(p, freqs)                                   # (p, 6)
    WQ = np.zeros((3, 6, 2))
    WK = np.zeros((3, 6, 2))
    for h in range(3):                                                 # head h: M(a, b) = cos(2 pi z_h (a - b)/p) ...
        WQ[h, 2 * h:2 * h + 2] = np.eye(2)
        WK[h, 2 * h:2 * h + 2] = np.eye(2)
    WK[2, 0, 0] = 0.5                                                  # ... head 2's key also reads frequency 1
    d = attention_diagnostics(E, WQ, WK)
    np.testing.assert_allclose(d["frequency_power"][:2], 1.0, atol=_EXACT)
    assert d["dominant_frequency"].tolist() == [1, 3, 4]
    assert d["dominant_pair"][:2].tolist() == [[1, 1], [3, 3]]
    assert d["frequency_power"][2] < 0.99                              # a second frequency costs power
    np.testing.assert_allclose(d["matrices"].mean(axis=1), 0.0, atol=_EXACT)   # centred over the keys


def test_attention_diagnostics_ignore_softmax_invariant_terms():
    """A key read-out of a direction every token shares adds g(b) to M(a, b) for every key a: the softmax over the
    keys, and so the diagnostics, do not change."""
    rng = np.random.default_rng(3)
    E, WQ, WK = rng.standard_normal((7, 4)), rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 3))
    base = attention_diagnostics(E, WQ, WK)
    E2 = np.concatenate([E, np.ones((7, 1))], axis=1)                  # a constant embedding direction
    WQ2 = np.concatenate([WQ, np.zeros((2, 1, 3))], axis=1)            # the query does not read it
    WK2 = np.concatenate([WK, rng.standard_normal((2, 1, 3))], axis=1)  # the key does
    moved = attention_diagnostics(E2, WQ2, WK2)
    assert np.abs(attention_matrices(E2, WQ2, WK2) - attention_matrices(E, WQ, WK)).max() > 0.1
    for name in ("matrices", "spectrum", "frequency_power"):
        np.testing.assert_allclose(moved[name], base[name], atol=1e-10)


@pytest.mark.parametrize("E, WQ, WK, name", [
    (np.zeros((5, 3)), np.zeros((2, 4, 2)), np.zeros((2, 4, 2)), "WQ"),
    (np.zeros((5, 3)), np.zeros((2, 3, 2)), np.zeros((2, 3, 1)), "WK"),
    (np.zeros(5), np.zeros((2, 3, 2)), np.zeros((2, 3, 2)), "E"),
    (np.full((5, 3), np.inf), np.zeros((2, 3, 2)), np.zeros((2, 3, 2)), "E")])
def test_attention_bad_input(E, WQ, WK, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        attention_diagnostics(E, WQ, WK)


# ---- embedding ------------------------------------------------------------------------------------------

def test_embedding_spectrum_of_a_planted_fourier_sparse_embedding():
    p = 13
    rng = np.random.default_rng(2)
    E = _fourier_embedding(p, (2, 5)) @ rng.standard_normal((4, 16))      # random mixing of two frequencies
    S = embedding_spectrum(E)
    assert abs(S.sum() - 1) < _EXACT and S[[0, 1, 3, 4, 6]].max() < _EXACT
    basis = [[_cos(p, 0)]] + [[_cos(p, z), _cos(p, z, -np.pi / 2)] for z in range(1, p // 2 + 1)]
    energy = [sum(((b @ E) ** 2).sum() / (b @ b) for b in bz) for bz in basis]   # projection on cos and sin
    np.testing.assert_allclose(S, np.array(energy) / (E ** 2).sum(), atol=_EXACT)


@pytest.mark.parametrize("E", [np.zeros((4, 3)), np.zeros(7), np.full((7, 2), np.nan)])
def test_embedding_spectrum_bad_input(E):
    with pytest.raises(InvalidParameterError, match="'E' parameter"):
        embedding_spectrum(E)


# ---- neuron maps ------------------------------------------------------------------------------------------

def test_neuron_maps_recover_planted_fourier_neurons_and_feed_the_diagnostics():
    """A planted additive MLP: neuron i computes u_i1(a_1) + u_i2(a_2) + u_i3(a_3) + c_i with single-frequency u's
    (the max-margin neuron of eq. C.16); the maps come back exactly and the (4.2) diagnostics read them."""
    p, k = 7, 3
    A = modular.all_inputs(p, k)
    Ustar, W = modular.max_margin_network(p, k)
    H = sum(Ustar[:, j, A[:, j]].T for j in range(k)) + 0.3                 # (p^k, m)
    U, rho = neuron_maps(H, p, k)
    np.testing.assert_allclose(U, Ustar - Ustar.mean(axis=2, keepdims=True), atol=_EXACT)
    np.testing.assert_allclose(rho, 1.0, atol=_EXACT)
    d = modular.fourier_diagnostics(U, W)
    assert d["coverage"].tolist() == [32, 32, 32] and d["max_power"].min() > 1 - _EXACT
    assert len(modular.circuit_table(U, W)) == 3


def test_neuron_maps_additive_share_of_a_product():
    """h = cos(a_1) + cos(a_1) cos(a_2) at one frequency: first-order variance 1/2, total 1/2 + 1/4, rho = 2/3."""
    p = 11
    A = modular.all_inputs(p, 2)
    c1, c2 = _cos(p, 2)[A[:, 0]], _cos(p, 2)[A[:, 1]]
    U, rho = neuron_maps((c1 + c1 * c2)[:, None], p, 2)
    assert abs(rho[0] - 2 / 3) < _EXACT
    np.testing.assert_allclose(U[0, 0], _cos(p, 2), atol=_EXACT)
    np.testing.assert_allclose(U[0, 1], 0.0, atol=_EXACT)


@settings(max_examples=20, deadline=None)
@given(arrays(np.float64, (25, 3), elements=st.floats(-5, 5)), st.floats(-3, 3))
def test_neuron_maps_ignore_a_constant_and_share_is_a_fraction(H, c):
    U, rho = neuron_maps(H, 5, 2)
    U2, _ = neuron_maps(H + c, 5, 2)
    np.testing.assert_allclose(U2, U, atol=1e-9)
    ok = ~np.isnan(rho)
    assert np.all((rho[ok] >= -1e-12) & (rho[ok] <= 1 + 1e-9))


@pytest.mark.parametrize("H, p, k, name", [(np.zeros((24, 2)), 5, 2, "preactivation"),
                                           (np.zeros((25, 2)), 6, 2, "p"), (np.zeros((5, 2)), 5, 1, "k"),
                                           (np.full((25, 1), np.nan), 5, 2, "preactivation")])
def test_neuron_maps_bad_input(H, p, k, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        neuron_maps(H, p, k)
