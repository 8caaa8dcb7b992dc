"""Training the modular-addition transformer (popdyn.sim.modular.transformer): the batched torch forward against a
per-example loop, the recorded diagnostics against the numpy diagnostics of the returned weights, shapes,
reproducibility and bad input."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import popdyn  # noqa: E402
from popdyn._validate import InvalidParameterError  # noqa: E402
from popdyn.models import modular  # noqa: E402
from popdyn.models.modular import (TransformerProblem, attention_diagnostics, embedding_spectrum,  # noqa: E402
                                   neuron_maps)
from popdyn.sim.modular import transformer as mt  # noqa: E402

_SMALL = dict(p=5, k=3, heads=2, d_model=8, d_head=4, d_mlp=12)
_F64 = 1e-10   # float64 einsum/softmax vs the loop below on O(1) numbers: round-off ~1e-14


@pytest.fixture(scope="module")
def sim():
    return popdyn.simulate(TransformerProblem(**_SMALL), steps=30, lr=1e-2, weight_decay=0.1, n_points=3, seeds=2,
                           train_fraction=0.6, seed=4, weights=True)


def _loop_forward(w, a, activation):
    """One example, one position at a time: x_t = E[a_t] + P_t; causal softmax attention per head; MLP; logits."""
    act = {"relu": lambda z: np.maximum(z, 0), "gelu": lambda z: 0.5 * z * (1 + np.vectorize(math.erf)(z / 2 ** .5))}
    x = np.stack([w["E"][t] + w["P"][i] for i, t in enumerate(a)])
    L, H, _, dh = w["WQ"].shape
    for l in range(L):
        out = []
        for t in range(len(a)):
            z = x[t].copy()
            for h in range(H):
                q, keys, vals = x[t] @ w["WQ"][l, h], x[:t + 1] @ w["WK"][l, h], x[:t + 1] @ w["WV"][l, h]
                s = keys @ q / math.sqrt(dh)
                att = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
                z = z + (att @ vals) @ w["WO"][l, h]
            pre = z @ w["W_in"][l]
            out.append((z + act[activation](pre) @ w["W_out"][l], pre))
        x = np.stack([o[0] for o in out])
    return x[-1] @ w["W_U"], out[-1][1]


@pytest.mark.parametrize("layers, activation", [(1, "relu"), (2, "gelu")])
def test_forward_matches_a_per_example_loop(layers, activation):
    pb = TransformerProblem(**{**_SMALL, "layers": layers, "activation": activation})
    gen = torch.Generator().manual_seed(0)
    w = mt._init_weights(pb, 2, 1.0, gen, torch.float64, torch.device("cpu"))
    A = torch.randint(0, pb.p, (2, 6, pb.k), generator=gen)
    with torch.no_grad():
        logits, h = mt.forward(w, A, activation)
    wn = {n: v.detach().numpy() for n, v in w.items()}
    for s in range(2):
        for i in range(6):
            ref, pre = _loop_forward({n: v[s] for n, v in wn.items()}, A[s, i].numpy(), activation)
            np.testing.assert_allclose(logits[s, i].numpy(), ref, atol=_F64)
            np.testing.assert_allclose(h[s, i].numpy(), pre, atol=_F64)


def test_shapes_and_split(sim):
    p, k, H, D, dh, M = (_SMALL[n] for n in ("p", "k", "heads", "d_model", "d_head", "d_mlp"))
    assert sim.t.tolist() == [0, 15, 30] and sim.status == 0
    T = 3
    shapes = {"loss": (2, T), "train_acc": (2, T), "test_acc": (2, T), "neuron_power": (2, T, M), "coverage": (2, T),
              "single_freq_fraction": (2, T), "neuron_additive_fraction": (2, T, M), "head_power": (2, T, H),
              "max_power": (2, T), "additive_fraction": (2, T), "attention_power": (2, T),
              "embedding_power": (2, T, (p + 1) // 2), "E": (2, p, D), "P": (2, k, D), "WQ": (2, 1, H, D, dh),
              "WO": (2, 1, H, dh, D), "W_in": (2, 1, D, M), "W_out": (2, 1, M, D), "W_U": (2, D, p),
              "U": (2, M, k, p), "W": (2, M, p), "train_mask": (2, p ** k)}
    assert {n: sim[n].shape for n in shapes} == shapes
    assert sim["train_mask"].sum(1).tolist() == [round(0.6 * p ** k)] * 2
    assert not np.array_equal(sim["train_mask"][0], sim["train_mask"][1])      # each seed its own split


def test_recorded_diagnostics_are_those_of_the_returned_weights(sim):
    """The final U, W and the recorded spectra equal the numpy diagnostics of the returned weights: U from
    neuron_maps on a fresh forward over D_p, W = W_out W_U centred over the classes."""
    pb = TransformerProblem(**_SMALL)
    A = torch.as_tensor(modular.all_inputs(pb.p, pb.k))
    w = {n: torch.as_tensor(sim[n]) for n in mt._NAMES}
    with torch.no_grad():
        logits, h = mt.forward(w, A.expand(2, -1, -1), pb.activation)
    y = (A.sum(1) % pb.p).numpy()
    for s in range(2):
        U, rho = neuron_maps(h[s].numpy(), pb.p, pb.k)
        np.testing.assert_allclose(sim["U"][s], U, atol=1e-9)
        np.testing.assert_allclose(sim["neuron_additive_fraction"][s, -1], rho, atol=1e-9)
        np.testing.assert_allclose(sim["additive_fraction"][s, -1], np.median(rho), atol=1e-9)
        Wc = sim["W_out"][s, -1] @ sim["W_U"][s]
        np.testing.assert_allclose(sim["W"][s], Wc - Wc.mean(1, keepdims=True), atol=1e-12)
        d = modular.fourier_diagnostics(sim["U"][s], sim["W"][s])
        np.testing.assert_allclose(sim["neuron_power"][s, -1], d["max_power"], atol=1e-12)
        live = d["max_power"][d["max_power"] > 0]          # a dead neuron (power 0) is left out of the median
        np.testing.assert_allclose(sim["max_power"][s, -1], np.median(live), atol=1e-12)
        assert sim["coverage"][s, -1] == d["coverage_fraction"]
        att = attention_diagnostics(sim["E"][s], sim["WQ"][s, 0], sim["WK"][s, 0])["frequency_power"]
        np.testing.assert_allclose(sim["head_power"][s, -1], att, atol=1e-12)
        np.testing.assert_allclose(sim["attention_power"][s, -1], np.median(att), atol=1e-12)
        np.testing.assert_allclose(sim["embedding_power"][s, -1], embedding_spectrum(sim["E"][s]), atol=1e-12)
        ok = logits[s].argmax(1).numpy() == y
        mask = sim["train_mask"][s]
        assert sim["train_acc"][s, -1] == pytest.approx(ok[mask].mean(), abs=1e-12)
        assert sim["test_acc"][s, -1] == pytest.approx(ok[~mask].mean(), abs=1e-12)


def test_reproducible_and_seeded():
    pb = TransformerProblem(**_SMALL)
    run = lambda seed: popdyn.simulate(pb, steps=5, n_points=2, seed=seed, batch=16, seeds=1, weights=True)
    a, b, c = run(1), run(1), run(2)
    for name in ("loss", "E", "U", "head_power"):
        assert np.array_equal(a[name], b[name]), name
    assert not np.array_equal(a["E"], c["E"])


def test_training_fits_a_small_task():
    """Full data, p = 5, k = 2: AdamW fits all 25 points (a sanity check that the loop trains)."""
    pb = TransformerProblem(p=5, k=2, heads=2, d_model=16, d_head=8, d_mlp=32)
    out = popdyn.simulate(pb, steps=300, lr=1e-2, weight_decay=0.0, n_points=2, dtype="float32", seeds=1)
    assert out["loss"][0, -1] < 0.1 * out["loss"][0, 0] and out["train_acc"][0, -1] == 1.0
    assert out.meta["dtype"] == "float32" and "test_acc" not in out.observables


@pytest.mark.parametrize("heads", [1, 160])
def test_init_scale_does_not_depend_on_the_head_count(heads):
    """W_O's fan-in is heads * d_head, so the attention output, the MLP input and the logits keep their scale at init
    however many heads there are (Fig. 4.3's 160 heads: heads * d_head = 5120 >> d_model). Against 4 heads, over 8
    inits: the std of the logits and of the MLP pre-activations within a factor 1.5 (here 0.89 and 0.98 at 160 heads;
    at p = 11, k = 3, d_model 128: 0.15 and 0.15 at 4 heads, 0.18 and 0.15 at 160); a W_O init with fan-in d_model
    (the bug suspected in the full-size run) gives 3.4 and 3.3 at 160 heads and fails it."""
    def spread(h):
        pb = TransformerProblem(p=7, k=3, heads=h, d_model=16, d_head=4, d_mlp=32)
        gen = torch.Generator().manual_seed(3)
        A = torch.as_tensor(modular.all_inputs(7, 3))[None].expand(8, -1, -1)
        with torch.no_grad():
            out, pre = mt.forward(mt._init_weights(pb, 8, 1.0, gen, torch.float64, "cpu"), A)
        return np.array([float(out.std()), float(pre.std())])
    ratio = spread(heads) / spread(4)
    assert np.all((ratio > 1 / 1.5) & (ratio < 1.5)), ratio

@pytest.mark.parametrize("option, value", [
    ("steps", 0), ("lr", 0.0), ("weight_decay", -1.0), ("betas", (0.9,)), ("betas", (1.0, 0.9)),
    ("train_fraction", 0.0), ("train_fraction", 1e-9), ("init_scale", 0.0), ("seeds", 0), ("n_points", 1),
    ("spacing", "cubic"), ("seed", -1), ("batch", 0), ("warmup", -1), ("dtype", "float16"), ("device", "tpu")])
def test_bad_options_name_the_parameter(option, value):
    with pytest.raises(InvalidParameterError, match=f"'{option}' parameter"):
        popdyn.simulate(TransformerProblem(**_SMALL), **{"steps": 2, option: value})


def test_bad_problem():
    with pytest.raises(InvalidParameterError, match="modular.transformer.simulate has no option 'width'"):
        popdyn.simulate(TransformerProblem(**_SMALL), steps=2, width=4)   # the network's option, not the transformer's


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_runs_the_same_code():
    pb = TransformerProblem(**_SMALL)
    cpu = popdyn.simulate(pb, steps=3, n_points=2, device="cpu", seeds=1, weights=True)
    gpu = popdyn.simulate(pb, steps=3, n_points=2, device="cuda", seeds=1, weights=True)
    assert gpu.meta["device"].startswith("cuda") and gpu["U"].shape == cpu["U"].shape
