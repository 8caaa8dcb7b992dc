"""popdyn.sim.modular.network: the torch network against popdyn's numba network, gradients against the hand-written
backward pass of a reference script, reproducibility, recorded shapes, the hard bound R <= 1, validation."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import popdyn  # noqa: E402
from popdyn._validate import InvalidParameterError  # noqa: E402
from popdyn.models import modular  # noqa: E402
from popdyn.sim.modular import _training  # noqa: E402
from popdyn.sim.modular import network as sim_modular  # noqa: E402

TINY = modular.Problem(p=5, k=2)
OBS_T = ("loss", "train_acc", "normalized_margin", "margin_ratio", "margin_ratio_train", "single_freq_fraction", "coverage")


@pytest.fixture(scope="module")
def split_run():
    """p = 7, k = 3, 60 % train, 2 seeds, 40 AdamW steps: shared by the shape and evaluation tests."""
    return popdyn.simulate(modular.Problem(p=7, k=3), width=12, steps=40, train_fraction=0.6, batch=64, seeds=2,
                           n_points=5, seed=3, weights=True)


def _rand_net(rng, S, m, k, p):
    return (torch.as_tensor(rng.standard_normal((S, m, k, p))), torch.as_tensor(rng.standard_normal((S, m, p))))


@pytest.mark.parametrize("p,k", [(5, 2), (7, 3), (5, 4)])
def test_logits_match_numba_network(p, k):
    rng = np.random.default_rng(p * k)
    U, W = _rand_net(rng, 2, 6, k, p)
    A = modular.all_inputs(p, k)
    out = sim_modular.logits(U, W, torch.as_tensor(A)).numpy()
    per_seed = sim_modular.logits(U, W, torch.as_tensor(np.stack([A, A[::-1]]))).numpy()  # (S, n, k) inputs
    np.testing.assert_array_equal(per_seed[0], out[0])
    np.testing.assert_array_equal(per_seed[1], out[1, ::-1])
    for s in range(2):
        ref = modular.logits(U[s].numpy(), W[s].numpy(), A)
        np.testing.assert_allclose(out[s], ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
        # 1e-12: two float64 summation orders of m * (k-term sums)^k, |terms| <~ max|ref|


def _numpy_grad(U, W, A, y):
    """A hand-written backward pass of the mean cross-entropy, one seed (independent of autograd)."""
    m, k, p = U.shape
    pre = sum(U[:, j, A[:, j]].T for j in range(k))            # (n, m)
    act = pre ** k
    L = act @ W
    P = np.exp(L - L.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    P[np.arange(len(y)), y] -= 1
    P /= len(y)
    gW = act.T @ P
    dpre = (P @ W.T) * k * pre ** (k - 1)
    gU = np.zeros_like(U)
    for j in range(k):
        np.add.at(gU[:, j, :].T, A[:, j], dpre)
    return gU, gW


@pytest.mark.parametrize("p,k", [(5, 2), (7, 3)])
def test_loss_gradient_per_seed_matches_hand_backward(p, k):
    rng = np.random.default_rng(1)
    U, W = _rand_net(rng, 3, 4, k, p)
    U, W = (0.3 * U).requires_grad_(), (0.3 * W).requires_grad_()
    A = modular.all_inputs(p, k)
    y = A.sum(1) % p
    idx = torch.as_tensor(rng.integers(0, len(y), size=(3, 20)))   # each seed its own batch
    sim_modular._loss(U, W, torch.as_tensor(A), torch.as_tensor(y), idx).backward()
    for s in range(3):
        b = idx[s].numpy()
        gU, gW = _numpy_grad(U[s].detach().numpy(), W[s].detach().numpy(), A[b], y[b])
        np.testing.assert_allclose(U.grad[s].numpy(), gU, rtol=1e-10, atol=1e-14)  # 1e-10: float64, O(100) ops
        np.testing.assert_allclose(W.grad[s].numpy(), gW, rtol=1e-10, atol=1e-14)


def test_training_decreases_loss():
    for optimizer in ("adamw", "sgd"):
        sim = popdyn.simulate(TINY, width=8, steps=200, optimizer=optimizer, n_points=5, seeds=2)
        assert np.all(np.diff(sim["loss"], axis=1) < 0), optimizer
        assert np.all(sim["loss"][:, -1] < 0.1 * np.log(5)), optimizer  # from log p at init; measured <= 0.02
        assert np.all(sim["train_acc"][:, -1] == 1.0), optimizer


def test_same_seed_same_numbers():
    kw = dict(width=6, steps=15, train_fraction=0.8, batch=8, seeds=2, n_points=3, weights=True)
    a, b, c = (popdyn.simulate(TINY, seed=seed, **kw) for seed in (7, 7, 8))
    for name in a.observables:
        np.testing.assert_array_equal(a[name], b[name])
    assert not np.array_equal(a["U"], c["U"])
    assert not np.array_equal(a["U"][0], a["U"][1])   # seeds are independent runs


def test_recorded_shapes(split_run):
    sim, S, T, m = split_run, 2, 5, 12
    assert sim.t.tolist() == [0, 10, 20, 30, 40]
    for name in OBS_T + ("test_acc",):
        assert sim[name].shape == (S, T), name
    assert sim["neuron_power"].shape == (S, T, m) and sim["train_mask"].shape == (S, 7**3)
    assert sim["max_power"].shape == (S, T)
    assert sim["U"].shape == sim["U0"].shape == (S, m, 3, 7)
    assert sim["W"].shape == sim["W0"].shape == (S, m, 7)
    assert sim.status == 0 and sim.meta["t_unit"] == "steps"
    full = popdyn.simulate(TINY, width=4, steps=2, n_points=2, seeds=1, weights=True)
    assert "test_acc" not in full.observables   # absent means absent: no test set at train_fraction = 1
    assert "U" not in popdyn.simulate(TINY, width=4, steps=2, n_points=2, seeds=1).observables   # weights=False


def test_final_observables_match_numpy_evaluation(split_run):
    """The last recorded margin ratio and spectra from the returned weights: plain numpy, and popdyn's model."""
    sim, p, k = split_run, 7, 3
    A = modular.all_inputs(p, k)
    y = A.sum(1) % p
    gamma = modular.max_margin(p, k)
    for s in range(2):
        U, W = sim["U"][s], sim["W"][s]
        L = modular.logits(U, W, A)
        right = L[np.arange(len(y)), y]
        L[np.arange(len(y)), y] = -np.inf
        R = np.min(right - L.max(1)) / modular.norm(U, W) ** (k + 1) / gamma
        np.testing.assert_allclose(sim["margin_ratio"][s, -1], R, rtol=1e-10)  # 1e-10: float64 sums, m = 12
        np.testing.assert_allclose(sim["margin_ratio"][s, -1], modular.normalized_margin(U, W) / gamma,
                                   rtol=1e-10)  # same origin: numba kernel vs torch
        np.testing.assert_allclose(sim["normalized_margin"][s, -1], modular.normalized_margin(U, W),
                                   rtol=1e-10)  # the raw measurement, without gamma*
        spec = np.abs(np.fft.rfft(np.concatenate([U, W[:, None]], 1), axis=2)) ** 2     # (m, k+1, 4)
        power = (spec[..., 1:].max(2) / spec[..., 1:].sum(2)).min(1)                  # bin 0 (the mean) left out
        np.testing.assert_allclose(sim["neuron_power"][s, -1], power, rtol=1e-12)  # 1e-12: float64 FFT, p = 7
        d = modular.fourier_diagnostics(U, W)
        np.testing.assert_allclose(sim["neuron_power"][s, -1], d["max_power"], rtol=1e-12)
        np.testing.assert_allclose(sim["max_power"][s, -1], modular.diagnostics(U, W)["max_power"], rtol=1e-12)
        assert sim["coverage"][s, -1] == d["coverage_fraction"]
        assert sim["single_freq_fraction"][s, -1] == np.mean(power > 0.9)


def test_recorded_power_of_constant_neurons_matches_numpy():
    """A constant and a zero neuron: the twin records power 0 for them (not NaN, which also marked the run as
    diverged), leaves them out of the median and of the coverage, exactly as modular.diagnostics does."""
    p, k = 5, 2
    x = 2 * np.pi * np.arange(p) / p
    U = np.stack([np.stack([np.cos(2 * x), np.cos(2 * x + 0.3)]), np.full((k, p), 0.7), np.zeros((k, p)),
                  np.stack([np.cos(2 * x - 1), 0.1 * np.sin(x) + np.cos(2 * x)])])      # frequency 2 only
    W = np.stack([np.cos(2 * x + 0.3), np.full(p, -1.0), np.zeros(p), np.cos(2 * x) + 0.1 * np.sin(x)])
    A = torch.as_tensor(modular.all_inputs(p, k))
    data = (A, A.sum(1) % p, torch.arange(len(A))[None], torch.zeros((1, 0), dtype=torch.int64))
    rec = sim_modular._diagnostics(torch.as_tensor(U)[None], torch.as_tensor(W)[None], data,
                                   modular.max_margin(p, k), 1000)
    d, s = modular.fourier_diagnostics(U, W), modular.diagnostics(U, W)
    assert rec["neuron_power"][0, 1:3].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(rec["neuron_power"][0].numpy(), d["max_power"], rtol=1e-12)   # 1e-12: float64 FFT
    np.testing.assert_allclose(float(rec["max_power"][0]), s["max_power"], rtol=1e-12)
    assert float(rec["coverage"][0]) == d["coverage_fraction"] == 0.5      # the constant neurons add no frequency 1
    assert all(bool(torch.isfinite(v).all()) for v in rec.values())


def test_train_and_test_accuracy_use_disjoint_splits(split_run):
    n, n_train = 7**3, int(round(0.6 * 7**3))
    sim = split_run
    for s in range(2):
        acc = sim["train_acc"][s, -1] * n_train + sim["test_acc"][s, -1] * (n - n_train)
        assert acc == pytest.approx(round(acc), abs=1e-9)   # counts of correct points are integers
    A = modular.all_inputs(7, 3)
    for s in range(2):  # train_mask is the split: the accuracies recomputed on it from the final weights agree
        mask = sim["train_mask"][s]
        assert mask.shape == (n,) and mask.sum() == n_train
        ok = modular.logits(sim["U"][s], sim["W"][s], A).argmax(1) == A.sum(1) % 7
        assert ok[mask].mean() == pytest.approx(sim["train_acc"][s, -1], abs=1e-12)
        assert ok[~mask].mean() == pytest.approx(sim["test_acc"][s, -1], abs=1e-12)
    tr, te = _training.split(2, n, n_train, torch.Generator().manual_seed(0), torch.device("cpu"))
    for s in range(2):
        assert sorted(tr[s].tolist() + te[s].tolist()) == list(range(n))


def test_minibatches_are_shuffled_epochs():
    tr = torch.arange(10).expand(2, 10) + torch.tensor([[0], [100]])
    gen = torch.Generator().manual_seed(0)
    batches = _training.batches(tr, 3, gen)
    epoch = torch.cat([next(batches) for _ in range(3)], 1)          # 3 batches of 3: one epoch minus 1 point
    for s in range(2):
        assert len(set(epoch[s].tolist())) == 9 and set(epoch[s].tolist()) <= set(tr[s].tolist())


def test_margin_ratio_never_exceeds_one():
    """R <= 1 for every theta (docs/modular.md, a hard bound): at init, during and after training."""
    for k, p in [(2, 5), (3, 5)]:
        sim = popdyn.simulate(modular.Problem(p=p, k=k), steps=150, n_points=6, seeds=2, weight_decay=0.1)
        assert np.all(sim["margin_ratio"] <= 1.0)
        assert np.all(sim["margin_ratio_train"] >= sim["margin_ratio"] - 1e-15)  # train set == D_p here


def test_warmup_is_linear():
    U = torch.zeros(1, requires_grad=True)
    opt, sched = _training.make_optimizer([U], optimizer="adamw", lr=1.0, betas=(0.9, 0.98), weight_decay=0.0,
                                          momentum=0.0, warmup=4)
    rates = []
    for _ in range(6):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert rates == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("name,value", [
    ("steps", 0), ("steps", 2.5), ("width", 0), ("optimizer", "adam"), ("lr", -1.0), ("lr", float("nan")),
    ("weight_decay", -0.1), ("betas", (0.9,)), ("betas", (0.9, 1.0)), ("momentum", 1.0), ("warmup", -1),
    ("batch", 0), ("train_fraction", 0.0), ("train_fraction", 1.5), ("train_fraction", 1e-9),
    ("init_scale", 0.0), ("seeds", 0), ("n_points", 1), ("spacing", "cubic"), ("seed", -1),
    ("dtype", "float16"), ("device", "tpu")])
def test_bad_inputs_name_the_parameter(name, value):
    kwargs = {"steps": 2, "width": 4, name: value}
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of modular.simulate"):
        popdyn.simulate(TINY, **kwargs)


def test_not_a_problem():
    with pytest.raises(TypeError, match="no simulation for 'object'"):
        popdyn.simulate(object(), steps=2)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised without a GPU")
def test_cuda_without_gpu_raises_clearly():
    with pytest.raises(InvalidParameterError, match="torch sees no CUDA device"):
        popdyn.simulate(TINY, steps=2, width=4, device="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_runs_with_cpu_shapes():
    kw = {"width": 8, "steps": 20, "seeds": 2, "n_points": 3, "weights": True}
    cpu = popdyn.simulate(TINY, device="cpu", **kw)
    gpu = popdyn.simulate(TINY, device="cuda", **kw)
    assert gpu.meta["device"].startswith("cuda")
    for name in cpu.observables:   # CUDA generators draw other numbers: compare shapes, not values
        assert gpu[name].shape == cpu[name].shape
    assert gpu.status == 0 and np.all(gpu["margin_ratio"] <= 1.0)


@pytest.mark.parametrize("cid,size", [
    ("modular.trained_circuit", {"settings": [[5, 2], [5, 3]], "steps": 30, "seeds": 2, "weight_decay": 0.1}),
    ("modular.margin_ratio", {"p": 5, "k": 2, "weight_decays": [0.1], "steps": 30, "seeds": 2,
                              "sgd": {"lr": 0.5, "weight_decay": 1e-4}}),
    ("modular.grokking", {"p": 7, "k": 2, "weight_decays": [0.1, 0.0], "steps": 30, "seeds": 2})])
def test_training_claims_run_at_tiny_size(cid, size, tmp_path):
    """Every code path of the claims (figure, table, verdict) at a size too small to pass or fail meaningfully."""
    from popdyn.validation.claims import select
    (c,) = select([cid])
    res = c.run(size, "cpu", tmp_path)
    assert (tmp_path / f"{cid}.png").exists() and res.figure.endswith(".png")
    assert res.table and all(set(r) == set(res.table[0]) for r in res.table)
    assert np.isfinite(res.measured) and all(isinstance(v, bool) for v in res.checks.values())
