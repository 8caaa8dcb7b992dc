"""popdyn.sim.emergence: the written-out gradients against torch autograd (network, NTK linearisation, class
weights, R^d), the activation against emcore's numpy one, the full-batch step 1 against the exact population
correlations (enumeration at D = 12, Fourier at D = 100) within a stated z, the step-2 alignment and bias shift
against the finite-sample formulas of docs/emergence.md, R^d = pattern coordinates, reproducibility, popdyn.simulate
with predict's names, option errors naming the option, CUDA (skipped without a GPU)."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import popdyn  # noqa: E402
from popdyn._validate import InvalidParameterError  # noqa: E402
from popdyn.models.emergence import activation as act_np  # noqa: E402
from popdyn.models.emergence import no_structure, parity_mixture, random_dictionary  # noqa: E402
from popdyn.models.emergence.correlations import neuron_correlations  # noqa: E402
from popdyn.models.emergence.network import symmetric_init  # noqa: E402
from popdyn.models.emergence import Problem  # noqa: E402
from popdyn.models.emergence.schedule import Step, theory_schedule  # noqa: E402
from popdyn.sim import emergence as se  # noqa: E402

SMALL = parity_mixture(12, 3, 0.5)
E1 = parity_mixture(100, 5, 0.5)


def _params(seeds, n_neurons, p, rng, scale_a=3.0):
    """Generic (not symmetric) parameters, so that g != 0 and the hinge indicator takes both values."""
    t = lambda *shape, sd=1.0: torch.tensor(sd * rng.standard_normal(shape))
    return {"W": t(seeds, n_neurons, p, sd=0.5), "b": t(seeds, n_neurons, sd=0.3) + 0.3,
            "a": t(seeds, n_neurons, sd=scale_a)}


def _reference_loss(X, y, P, s, weights=None):
    """Mean hinge of g(x) = sum_i a_i sigma_s(<w_i, x> + b_i), written directly (autograd differentiates it)."""
    g = (se.smooth_trunc_relu(X @ P["W"].mT + P["b"][:, None, :], s) * P["a"][:, None, :]).sum(-1)
    h = torch.relu(1 - y * g)
    return (h if weights is None else h * weights).mean(1).sum()


def _autograd(X, y, P, s, weights=None):
    Q = {k: v.clone().requires_grad_(True) for k, v in P.items()}
    _reference_loss(X, y, Q, s, weights).backward()
    return [Q[k].grad for k in ("W", "b", "a")]


# ---- activation -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("s", [0.0, 3**-1.5, 0.05, 1.0])
def test_activation_equals_emcore_and_window_is_its_derivative(s):
    z = np.linspace(-2.0, 3.0, 1001) + 1e-3          # off the kinks 0 and 1 (s = 0: one-sided derivatives)
    zt = torch.tensor(z, requires_grad=True)
    f = se.smooth_trunc_relu(zt, s)
    # 1e-14: the same closed form in numpy (scipy ndtr) and torch, |values| <= 1
    np.testing.assert_allclose(f.detach().numpy(), act_np.smooth_trunc_relu(z, s), rtol=0, atol=1e-14)
    np.testing.assert_allclose(se.window(zt.detach(), s).numpy(), act_np.window(z, s), rtol=0, atol=1e-14)
    f.sum().backward()
    # 1e-12: autograd of r_s(z) - r_s(z - 1) cancels u phi(u/s)/s terms of size <= 3/s in float64
    np.testing.assert_allclose(zt.grad.numpy(), se.window(zt.detach(), s).numpy(), rtol=0, atol=1e-12)


# ---- gradients ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("s", [0.0, 0.1])
@pytest.mark.parametrize("coords", ["pattern", "input"])
@pytest.mark.parametrize("weighted", [False, True])
def test_gradients_equal_autograd(s, coords, weighted):
    rng = np.random.default_rng(1)
    S, n, D, d = 2, 400, 12, 20
    phi, y = se.sample(SMALL, S, n, 3)
    M = torch.tensor(random_dictionary(d, D, 4)) if coords == "input" else None
    P = _params(S, 6, D if M is None else d, rng)
    alpha = (0.5 / 0.4, 0.5 / 0.6) if weighted else None
    gW, gb, ga, loss, gmax = se._gradients(se._Data(phi, y, M), slice(0, n), P, None, s, chunk=150, alpha=alpha)
    X = phi if M is None else phi @ M.T
    w = torch.where(y > 0, y.new_tensor(alpha[1]), y.new_tensor(alpha[0])) if weighted else None
    refs = _autograd(X, y, P, s, w)
    margins = y * (se.smooth_trunc_relu(X @ P["W"].mT + P["b"][:, None, :], s) @ P["a"][..., None])[..., 0]
    assert 0.05 < float((margins > 1).double().mean()) < 0.95       # the indicator takes both values
    for got, ref in zip((gW, gb, ga), refs):
        # 1e-12: float64 sums of 400 terms of size <= 10 in another order (chunks of 150)
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=0, atol=1e-12)
    ref_loss = torch.relu(1 - margins) * (1 if w is None else w)
    np.testing.assert_allclose(loss.numpy(), ref_loss.mean(1).numpy(), rtol=1e-13)
    np.testing.assert_allclose(gmax.numpy(), (margins * y).abs().amax(1).numpy(), rtol=1e-13)


def test_ntk_is_the_linearisation_at_init():
    rng = np.random.default_rng(2)
    S, n, D = 1, 300, 12
    phi, y = se.sample(SMALL, S, n, 5)
    P0 = _params(S, 5, D, rng, scale_a=1.0)
    dP = _params(S, 5, D, rng, scale_a=1.0)
    s = 0.2
    g_at = lambda P: se._forward(phi, P, None, None, s)[0][..., 0]
    # g_lin(P0 + e dP) - g(P0 + e dP) = O(e^2): halving e divides the gap by 4
    gaps = []
    for eps in (1e-2, 5e-3):
        P = {k: P0[k] + eps * dP[k] for k in P0}
        gaps.append(float((se._forward(phi, P, P0, None, s)[0][..., 0] - g_at(P)).abs().max()))
    assert gaps[0] / gaps[1] == pytest.approx(4.0, rel=0.05)      # 5 %: the O(e^3) term at e = 1e-2
    # the NTK gradient is autograd of the jvp-linearised network
    P = {k: P0[k] + 0.3 * dP[k] for k in P0}
    theta = {k: v.clone().requires_grad_(True) for k, v in P.items()}
    _, jvp = torch.func.jvp(lambda W, b, a: g_at({"W": W, "b": b, "a": a}), (P0["W"], P0["b"], P0["a"]),
                            tuple(theta[k] - P0[k] for k in ("W", "b", "a")))
    torch.relu(1 - y * (g_at(P0) + jvp)).mean(1).sum().backward()
    got = se._gradients(se._Data(phi, y, None), slice(0, n), P, P0, s, chunk=1000)
    lin = se._forward(phi, P, P0, None, s)[0][..., 0]
    np.testing.assert_allclose(lin.numpy(), (g_at(P0) + jvp).detach().numpy(), rtol=0, atol=1e-12)
    for g_, key in zip(got[:3], ("W", "b", "a")):
        # 1e-12: float64 sums of 300 terms of size <= 5
        np.testing.assert_allclose(g_.numpy(), theta[key].grad.numpy(), rtol=0, atol=1e-12)


# ---- step 1 against the population ------------------------------------------------------------------------------

def _step1_z(model, m, n, method, scale=False):
    """z-scores of the finite-sample step-1 correlations T^ = q^(1)/(eta1 a0), T^_b, T^_a against the exact ones."""
    sched = theory_schedule(model, 300, steps=3)              # the paper's m = 300 schedule on a narrower network
    p0 = symmetric_init(model, m, seed=1)
    sim = se.train(model, width=m, schedule=sched, steps=1, n_train=n, seeds=1, init=p0, n_test=10, eval_samples=10,
                   balanced=False)
    eta, s = sched[0].eta, sched[0].s
    a0 = p0.a[:m]
    That = sim["Q_1"][0, :m] / (eta * a0[:, None])
    Tb_hat = (sim["b_1"][0, :m] - p0.b[:m]) / (eta * a0)
    Ta_hat = (sim["a_1"][0, :m] - a0) / eta
    T, Tb, Ta, _ = neuron_correlations(model, p0.Q[:m], p0.b[:m], s, method=method)
    # per-sample standard deviations from an independent sample of the same law (seed 99)
    X, y, _ = model.sample(200_000, 99)
    Z = X @ p0.Q[:m].T + p0.b[:m]
    win = act_np.window(Z, s)
    sd_T = np.sqrt(np.einsum("ni,nj->ij", win**2, X**2) / len(y) - (np.einsum("n,ni,nj->ij", y, win, X) / len(y))**2)
    sd_b = (y[:, None] * win).std(0)
    sd_a = (y[:, None] * act_np.smooth_trunc_relu(Z, s)).std(0)
    se_T = sd_T / np.sqrt(n)
    z = ((That - T) / se_T, (Tb_hat - Tb) / (sd_b / np.sqrt(n)), (Ta_hat - Ta) / (sd_a / np.sqrt(n)))
    return z + (T / se_T,) if scale else z


def _assert_gaussian(z):
    """max |z| < 4.5 over the N coordinates and sum z^2 within N +- 4 sqrt(2N) ."""
    z = np.ravel(z)
    N = z.size
    assert np.abs(z).max() < 4.5, np.abs(z).max()
    assert abs((z**2).sum() - N) < 4 * math.sqrt(2 * N), ((z**2).sum(), N)


def test_step1_equals_exact_population_correlations_by_enumeration():
    zT, zb, za = _step1_z(SMALL, m=8, n=100_000, method="enumerate")
    _assert_gaussian(zT)
    _assert_gaussian(np.concatenate([zb, za]))


def test_step1_equals_fourier_correlations_at_paper_size():
    # D = 100, k = 5, p_o = 1/2, s = k^-3/2, n = 50000 (the paper's full batch), 6 neurons
    zT, zb, za = _step1_z(E1, m=6, n=50_000, method="fourier")
    _assert_gaussian(zT)
    _assert_gaussian(np.concatenate([zb, za]))


def test_a_wrong_population_fails_the_step1_check():
    # falsification: a 10 % error in T (the size of neglecting the background window, beta = W(b) vs h(b)) fails
    zT, _, _, T_over_se = _step1_z(SMALL, m=8, n=100_000, method="enumerate", scale=True)
    with pytest.raises(AssertionError):
        _assert_gaussian(zT - 0.1 * T_over_se)


# ---- step 2: finite-sample predictions (docs/emergence.md) -----------------------------------------------------------

def _predicted_one_minus_cos(model, n):
    """tr(P_perp Sigma) / (2 n ||E y phi||^2), Sigma = Cov(y phi), P_perp = I - v v^T, v = 1_A/sqrt(k)."""
    mom, k = model.moments(), model.k
    Eyphi2 = float(np.sum(mom.E_y_phi_A ** 2))
    var_c = float(model.A_probs @ (model.A_support.sum(1) - mom.mu_A) ** 2)     # Var(sum_A phi~)
    vSv = var_c / (k * mom.sigt**2) - Eyphi2                                    # v^T Sigma v
    trS = 1.0 - Eyphi2                                                          # E||phi||^2 = 1
    return (trS - vSv) / (2 * n * Eyphi2)


def test_step2_alignment_and_bias_shift_match_section_2_13():
    n, seeds, m = 20_000, 6, 4
    sched = theory_schedule(E1, 300, steps=3)
    sim = se.train(E1, width=m, schedule=sched, steps=2, n_train=n, seeds=seeds, seed=7, n_test=10, eval_samples=10)
    Q2 = sim["Q_2"]
    cos = np.abs(Q2[..., :5].sum(-1) / (np.sqrt(5) * np.linalg.norm(Q2, axis=-1))).max(-1)
    pred = _predicted_one_minus_cos(E1, n)
    # 25 %: per seed 1 - cos is a scaled chi^2 with ~D - 1 = 99 dof (relative SD 0.14); 6 seeds: SE 0.06, ~4 SE
    assert np.mean(1 - cos) == pytest.approx(pred, rel=0.25)
    # (b): b^(2) - b^(1) = a^(1) h(b^(1)) E^[y] + O(eta^(1)), E^[y] of the very samples (stream 0)
    _, y = se.sample(E1, seeds, n, 7)
    h = act_np.window(sim["b_1"], sched[1].s)
    shift_pred = sim["a_1"] * h * y.numpy().mean(1)[:, None]
    shift = sim["b_2"] - sim["b_1"]
    assert np.corrcoef(shift.ravel(), shift_pred.ravel())[0, 1] > 0.999
    # 2e-3: the O(eta^(1)) remainder relative to a shift of size sigma_a n^-1/2 ~ 0.03
    np.testing.assert_allclose(shift, shift_pred, rtol=0, atol=2e-3 * np.abs(shift_pred).max())


def test_balanced_samples_keep_the_bias():
    sched = theory_schedule(E1, 300, steps=3)
    sim = se.train(E1, width=4, schedule=sched, steps=2, n_train=4000, seeds=2, balanced=True, n_test=10,
                   eval_samples=10)
    # |b^(2) - b^(0)| <= 1e-6 with exact class balance
    assert np.abs(sim["b_2"] - sim["b_0"]).max() <= 1e-6
    _, y = se.sample(E1, 2, 4000, 0, balanced=True)
    assert (y > 0).sum(1).tolist() == [2000, 2000]


def test_a_class_of_underflowing_probability_trains_unweighted_and_refuses_class_weights():
    # P(y = 1) = 1e-360 rounds to 0: an unweighted schedule trains (before: 0.5 / 0 raised ZeroDivisionError even
    # when no step was weighted); a weighted step raises naming 'schedule' (its weight 1/(2 P(y = 1)) is infinite)
    from popdyn.models.emergence import iid_block_model
    rare = iid_block_model(32, 30, 1e-12, 0.5, [30])
    assert rare.moments().p_plus == 0.0
    sched = theory_schedule(E1, 4, steps=3)
    sim = se.train(rare, width=4, schedule=sched, steps=3, n_train=200, batch=100, seeds=1, n_test=50,
                   eval_samples=10, init=(0.03, 1e-3, 0.1))      # gamma ~ -1e-27: the paper's sigma_a is undefined
    assert np.isfinite(sim["train_loss"]).all()
    weighted = [Step(**{**vars(e), "weighted": True}) for e in sched]
    with pytest.raises(InvalidParameterError, match="'schedule' parameter of emergence.train"):
        se.train(rare, width=4, schedule=weighted, steps=3, n_train=200, batch=100, seeds=1, n_test=50,
                 eval_samples=10, init=(0.03, 1e-3, 0.1))


# ---- coordinates, reproducibility, methods ------------------------------------------------------------------------

def _quick(model=SMALL, **kw):
    args = dict(width=4, schedule=theory_schedule(model, 4, steps=3), steps=8, n_train=1000, batch=100, seeds=2,
                n_test=300, n_points=5, lr=0.05)
    return se.train(model, **(args | kw))


def test_input_coordinates_reproduce_pattern_coordinates():
    pat, inp = _quick(), _quick(coords="input", d=30)
    for t in (0, 1, 2):
        # 1e-10: the same float64 steps through M (d = 30) and back
        np.testing.assert_allclose(inp[f"Q_{t}"], pat[f"Q_{t}"], rtol=0, atol=1e-10 * np.abs(pat[f"Q_{t}"]).max())
    np.testing.assert_allclose(inp["test_loss"], pat["test_loss"], rtol=1e-9)
    assert np.all(inp["cos"][:, 0] < pat["cos"][:, 0])         # at init the part outside span M lowers the cosine


def test_same_seed_same_numbers_other_seed_other_numbers():
    a, b, c = _quick(method="network"), _quick(method="network"), _quick(method="network", seed=1)
    for k in a.observables:
        np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(a["test_loss"], c["test_loss"])
    assert a.t.tolist() == [0, 1, 2, 4, 6, 8]


@pytest.mark.parametrize("method", list(se.METHODS))
def test_every_method_runs_and_freezes_what_it_should(method):
    sim = _quick(method=method)
    assert sim.status == 0 and sim["test_acc"].shape == (2, 6)
    if method in ("rf", "ntk"):
        assert "Q_1" not in sim.observables
    if method == "one_step":
        assert "Q_1" in sim.observables and "Q_2" not in sim.observables
    frozen = {"one_step": 1, "two_step": 2, "rf": 0}
    if method in frozen:       # the final first layer is the frozen one; the second layer moved
        t = frozen[method]
        np.testing.assert_array_equal(sim["Q_final"], sim[f"Q_{t}"])
        assert not np.array_equal(sim["a_final"], sim[f"a_{t}"])
    else:
        assert sim["Q_final"].shape == sim["Q_0"].shape and not np.array_equal(sim["Q_final"], sim["Q_0"])


def test_lr_a_is_the_second_layer_step():
    # two step trains a only: lr_a = x with any lr is the run with lr = x
    base = dict(method="two_step", width=3, schedule=theory_schedule(SMALL, 3, steps=6), steps=6, n_train=200, batch=50,
                seeds=1, n_test=50)
    a, b = se.train(SMALL, lr=0.7, lr_a=30.0, **base), se.train(SMALL, lr=30.0, **base)
    np.testing.assert_array_equal(a["a_final"], b["a_final"])
    c = se.train(SMALL, lr=0.7, **base)
    assert not np.array_equal(a["a_final"], c["a_final"])


def test_one_step_features_are_constant_and_give_chance_accuracy():
    # q^(1) ~ eta^(1) = O(1e-9), so the one-step features are constants: accuracy = majority class
    sim = se.train(E1, width=8, method="one_step", schedule=theory_schedule(E1, 300, steps=3), steps=30, n_train=5000,
                   batch=500, seeds=2, n_test=4000, lr=5.0, lam=1e-4)
    # 0.03: binomial SE of 4000 test points is 0.008 (3.75 SE)
    assert np.abs(sim["test_acc"][:, -1] - 0.5).max() < 0.03


def test_no_structure_removes_the_step2_alignment():
    kw = dict(width=4, schedule=theory_schedule(E1, 300, steps=3), steps=2, n_train=20_000, seeds=2, n_test=10,
              eval_samples=10)
    with_s, without = se.train(E1, **kw), se.train(E1, method="no_structure", **kw)
    cos = lambda sim: np.abs(sim["Q_2"][..., :5].sum(-1) / (np.sqrt(5) * np.linalg.norm(sim["Q_2"], axis=-1))).max(-1)
    assert cos(with_s).min() > 0.99
    # no signal (gamma = 0): q^(2) ~ the sample noise of E^[y phi], cos ~ sqrt(k/D) ~ 0.22 (well below 0.7)
    assert cos(without).max() < 0.7
    assert repr(no_structure(E1)) in without.meta["model"]


# ---- popdyn.simulate --------------------------------------------------------------------------------------------

def test_simulate_shares_predict_names_and_compares():
    prob = Problem(D=12, k=3, width=4)
    sim = popdyn.simulate(prob, steps=12, seeds=3, n_train=4000, batch=200, n_test=2000)
    pred = popdyn.predict(prob, steps=12)
    shared = set(sim.observables) & set(pred.observables)
    assert {"loss", "error", "cos"} <= shared
    assert set(sim.meta["steps_1_2"]) >= {"cos_step1", "cos_step2", "loss_step1"}
    assert sim.t[0] == 2 and sim.t[-1] == 12
    cmp = popdyn.compare(pred, sim, observables=["cos", "loss"])
    assert cmp.metrics["cos"]["sup_gap"] < 0.01                    # 1 - cos ~ 40/n at n = 4000
    assert abs(np.mean(sim.meta["steps_1_2"]["cos_step2"]) - pred.meta["steps_1_2"]["cos_step2"]) < 0.01
    # predict's init: train from problem.params0 is what simulate runs with init="problem"
    start = se.train(prob.model, width=4, schedule=prob.schedule(12), steps=0, n_train=100, batch=50, seeds=1,
                     n_test=10, init=prob.params0)
    assert sim.meta["init"] == "problem"
    np.testing.assert_allclose(start["Q_0"][0], prob.params0.Q, rtol=0, atol=0)   # predict's init


# ---- options and devices ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, value", [
    ("width", 0), ("method", "sgd"), ("n_train", 1), ("batch", 0), ("steps", -1), ("seeds", 0), ("coords", "ambient"),
    ("d", 30), ("lr", -1.0), ("lr_a", 0.0), ("lam", -0.5), ("n_test", 0), ("n_points", 0), ("init", (1.0, 2.0)),
    ("device", "tpu"), ("dtype", "int8"), ("balanced", "yes"), ("schedule", [Step(1.0, 0.0, 0.0, 0.1)]),
    ("schedule[0].eta", [Step(0.0, 0.0, 0.0, 0.1)] * 3), ("schedule[1].s", [Step(1.0, 0.0, 0.0, 0.1),
                                                                           Step(1.0, 0.0, 0.0, -1.0)] * 2),
])
def test_bad_options_name_the_option(name, value):
    key = name.split("[")[0]
    args = dict(width=2, schedule=theory_schedule(SMALL, 2, steps=3), steps=2, n_train=100, batch=50, seeds=1,
                n_test=10) | {key: value}
    with pytest.raises(InvalidParameterError, match=f"'{name.replace('[', '.').replace(']', '.')}'"
                       if "[" in name else f"'{name}'"):
        se.train(SMALL, **args)


def test_odd_n_with_balanced_classes_names_n():
    with pytest.raises(InvalidParameterError, match="'n_train' parameter of emergence.train"):
        se.train(SMALL, width=2, steps=2, n_train=101, batch=50, seeds=1, n_test=10, balanced=True)


def test_simulate_rejects_bad_options():
    with pytest.raises(InvalidParameterError, match="'init'"):
        popdyn.simulate(Problem(D=12, k=3, width=2), steps=3, init="zeros")
    with pytest.raises(InvalidParameterError, match="'n_points'"):
        popdyn.simulate(Problem(D=12, k=3, width=2), steps=3, n_points=1)
    with pytest.raises(TypeError, match="no simulation"):
        popdyn.simulate(SMALL)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu_on_the_full_batch_steps():
    p0 = symmetric_init(SMALL, 4, seed=0)
    kw = dict(width=4, schedule=theory_schedule(SMALL, 4, steps=3), steps=2, n_train=2000, seeds=2, init=p0, n_test=100)
    cpu, gpu = se.train(SMALL, **kw), se.train(SMALL, device="cuda", **kw)
    for t in (1, 2):
        # 1e-9: the same float64 data and init; CUDA reductions in another order
        np.testing.assert_allclose(gpu[f"Q_{t}"], cpu[f"Q_{t}"], rtol=0, atol=1e-9 * np.abs(cpu[f"Q_{t}"]).max())
    assert gpu.meta["device"].startswith("cuda")


def test_full_batch_gd_from_the_two_step_limit_follows_the_reduced_population_gd():
    # full-batch GD on n = 2e4 samples from the eta^(1) -> 0 two-step point vs the exact reduced
    # population GD on the line 1_A (the background stays at 0 in the population, O(n^-1/2) in the sample)
    from popdyn.models.emergence.classifier import reduced_population_gd
    from popdyn.models.emergence.steps import two_step_limit
    m, T, eta, lam, n = 20, 40, 0.3, 1e-3, 20_000      # eta = 0.3: a smooth descent to the plateau ~0.51
    lim = two_step_limit(SMALL, symmetric_init(SMALL, m, seed=3), 3**-1.5)
    alpha = lim.Q[:, :3].mean(1) * np.sqrt(3)
    pop = reduced_population_gd(SMALL, alpha, lim.b, lim.a, eta, lam, T)
    sim = se.train(SMALL, width=m, method="gd", init=lim, schedule=[Step(eta, lam, lam, 0.0)] * 3, steps=T, n_train=n,
                   batch=n, seeds=4, balanced=True, n_test=n, eval_samples=100, n_points=9)
    assert pop.loss[0] == 1.0 and pop.loss[-1] < 0.6                 # the loss moves over the horizon
    # z < 4 per recorded step: the 4-seed mean of the test hinge against its standard error (t = 0 is exactly 1 on
    # both sides); a wrong population curve (the descent 10 steps late) fails it
    gap = np.abs(sim["test_loss"].mean(0) - pop.loss[sim.t])
    se_mean = sim["test_loss"].std(0, ddof=1) / 2
    assert np.all(gap <= 4 * se_mean + 1e-12), (gap, se_mean)
    late = np.abs(sim["test_loss"].mean(0) - pop.loss[np.maximum(sim.t - 10, 0)])
    assert not np.all(late <= 4 * se_mean + 1e-12)


def test_a_negative_decay_factor_warns_naming_the_knobs():
    # Thm 26's lambda = k^3/(sigma~ m^(1/3)) ~ 2.7 here: lr = 1 gives 1 - 2 eta lam < 0 (parameters flip each step)
    with pytest.warns(popdyn.RegimeWarning, match="lower 'lr', 'lr_a' or 'lam'"):
        se.train(SMALL, width=2, steps=3, n_train=100, batch=50, seeds=1, n_test=10, lr=1.0)


def test_input_noise_trains_in_R_d_and_needs_a_dictionary():
    import dataclasses
    noisy = dataclasses.replace(parity_mixture(12, 3, 0.5, M=random_dictionary(20, 12, 0)), sigma_zeta=0.05)
    sim = _quick(noisy, coords="input", steps=4)
    assert sim.status == 0 and sim["Q_2"].shape == (2, 8, 12)
    X, _ = se.sample(noisy, 1, 50, 0, coords="input")
    P = torch.as_tensor(noisy.M)
    off_span = X[0] - (X[0] @ P) @ P.T
    assert float(off_span.abs().max()) > 0.01                     # noise outside span M reaches the network
    with pytest.raises(InvalidParameterError, match="'coords'"):
        _quick(dataclasses.replace(noisy, M=None), coords="input", d=20)


def test_count_resolved_interval_model_at_k_30_trains():
    from popdyn.models.emergence import interval_labeling
    model = interval_labeling(100, 30)                            # the paper's E2 law, no 2^30 support
    sim = se.train(model, width=4, schedule=theory_schedule(model, 100, steps=3), steps=2, n_train=2000, seeds=1,
                   n_test=500)
    cos = np.abs(sim["Q_2"][0, :, :30].sum(-1) / (np.sqrt(30) * np.linalg.norm(sim["Q_2"][0], axis=-1)))
    assert sim.status == 0 and cos.max() > 0.9                   # Table 2: Two Step cos 0.994


def test_step1_output_stays_below_the_population_hinge_certificate():
    # Lemma 19: the certificate bounds sup |g^(1)| over the support; the sample max lies below it (measured at
    # m = 300: 2.5e-7 vs 1.1e-6), so the step-2 hinge indicator is 1 on every sample
    from popdyn.models.emergence.steps import population_two_steps
    sched = theory_schedule(E1, 300, steps=3)
    p0 = symmetric_init(E1, 6, seed=2)
    _, p2, cert = population_two_steps(E1, p0, sched)
    sim = se.train(E1, width=6, schedule=sched, steps=2, n_train=20_000, seeds=3, init=p0, n_test=10, eval_samples=10)
    assert 0 < sim["g1_max"].max() <= cert < 1
    cos = np.abs(sim["Q_2"][..., :5].sum(-1) / (np.sqrt(5) * np.linalg.norm(sim["Q_2"], axis=-1))).max(-1)
    # the population step-2 cosine is 1 - O(eta^(1)^2); the sample one is 1 - O(1/n) (~2e-3 here)
    assert np.all(np.abs(p2.Q[:, :5].sum(-1) / (np.sqrt(5) * np.linalg.norm(p2.Q, axis=-1))) > 1 - 1e-9)
    assert np.all(cos > 1 - 3 * _predicted_one_minus_cos(E1, 20_000))


def test_incoherent_dictionary_keeps_the_pattern_init_in_R_d():
    # w = Q rho^-1 M^T + (I - P_M) g: the pattern coordinates M^T w are the given Q for a non-orthogonal M too
    from popdyn.models import emergence as em
    model = em.parity_mixture(12, 3, 0.5, M=em.random_dictionary(20, 12, seed=4, orthonormal=False))
    p = em.symmetric_init(model, 3)
    sim = se.train(model, width=3, schedule=theory_schedule(model, 3, steps=3), steps=0, n_train=100, batch=50,
                   seeds=1, n_test=10, coords="input", init=p)
    np.testing.assert_allclose(sim["Q_0"][0], p.Q, atol=1e-13)


# ---- the Gaussian-mixture parity ([Shi22, App. E.3.2]) ---------------------------------------------------------------

def _gmm_setting(d=25, k=4, sigma_r=0.7, m=6):
    """Table 6's Exp. 2 (d = 25, k = 4, sigma_r = 0.7) and a symmetric network of 2m neurons near cluster centres."""
    from popdyn.models.emergence import GaussianParityMixture, TwoLayerParams
    model = GaussianParityMixture(d, k, sigma_r, random_dictionary(d, k, seed=0))
    rng = np.random.default_rng(3)
    E, _ = model.centers()
    W = E[rng.integers(0, len(E), m)] @ model.M.T / 2 + 0.3 * rng.standard_normal((m, d))
    b, a = 0.3 * rng.standard_normal(m), 0.5 * rng.standard_normal(m)
    return model, TwoLayerParams(np.r_[W, W], np.r_[b, b], np.r_[a, -a])


def _gmm_step1_z(model, p0, n, eta=0.5, s=0.1, drop_stein=False):
    """z of the torch full-batch step 1 (kill step lam_w = 1/(2 eta), lam_a = 0) against the population step
    (``population_step`` on the Gaussian-mixture parity: Stein's lemma), per first-layer coordinate, bias and a;
    the standard errors from the per-sample terms of the very training sample (``se.sample`` stream 0)."""
    from popdyn.models.emergence import population_step
    m = p0.n // 2
    sched = [Step(eta=eta, lam_a=0.0, lam_w=1 / (2 * eta), s=s)] * 3
    sim = se.train(model, width=m, method="network", schedule=sched, steps=1, n_train=n, seeds=1, init=p0,
                   coords="input", n_test=10, eval_samples=10, chunk=50_000)
    pop = population_step(model, p0, eta, 0.0, 1 / (2 * eta), s)
    if drop_stein:     # wrong theory: the input noise only smooths the window (no tau^2 w term)
        from popdyn.models.emergence import gmm_correlations
        T = gmm_correlations(model, p0.Q, p0.b, s).T
        S = np.sqrt(model.tau2 * (p0.Q ** 2).sum(1) + s * s)
        mv = model.centers()[0] @ model.M.T @ p0.Q.T + p0.b
        dens = (model.centers()[1][:, None] * (np.exp(-mv**2 / (2 * S**2)) - np.exp(-(1 - mv)**2 / (2 * S**2)))
                / (S * math.sqrt(2 * math.pi))).mean(0)
        pop = type(pop)(eta * p0.a[:, None] * (T - model.tau2 * p0.Q * dens[:, None]), pop.b, pop.a)
    X, y = (v.numpy()[0] for v in se.sample(model, 1, n, 0))
    Z = X @ p0.Q.T + p0.b
    win = act_np.window(Z, s)
    se_T = np.sqrt(np.maximum(np.einsum("ni,nj->ij", win**2, X**2) / n
                              - (np.einsum("n,ni,nj->ij", y, win, X) / n)**2, 0) / n)
    scale = eta * np.abs(p0.a)
    zT = (sim["Q_1"][0] - pop.Q) / (scale[:, None] * se_T)
    zb = (sim["b_1"][0] - pop.b) / (scale * (y[:, None] * win).std(0) / math.sqrt(n))
    za = (sim["a_1"][0] - pop.a) / (eta * (y[:, None] * act_np.smooth_trunc_relu(Z, s)).std(0) / math.sqrt(n))
    return zT[:m], zb[:m], za[:m]          # the mirrored neurons repeat the first m (same samples, same |z|)


def test_gmm_step1_equals_the_population_step():
    # n = 2e5 samples: the torch step is a Monte Carlo estimate of the exact population step, z ~ N(0, 1) per
    # coordinate; max |z| < 4.5 over 6 x 25 + 12 z (P <= 1.1e-3), sum z^2 within 4 sd
    model, p0 = _gmm_setting()
    zT, zb, za = _gmm_step1_z(model, p0, 200_000)
    _assert_gaussian(zT)
    _assert_gaussian(np.concatenate([zb, za]))


def test_gmm_step1_check_fails_without_the_stein_term():
    # falsification: the population step without Stein's input-noise term tau^2 w E[y (p(m) - p(1 - m))]
    model, p0 = _gmm_setting()
    zT, _, _ = _gmm_step1_z(model, p0, 200_000, drop_stein=True)
    assert np.abs(zT).max() > 20
    with pytest.raises(AssertionError):
        _assert_gaussian(zT)


def test_gmm_balanced_samples_have_both_class_conditional_laws():
    model, _ = _gmm_setting(d=8, k=3, sigma_r=0.5)
    X, y = model.sample(40_000, 1, balanced=True)
    assert (y > 0).sum() == 20_000
    # eps recovered from the noise-free part: uniform on the vertices of each label, |mean eps_j| ~ N(0, 1/2e4)
    eps = np.sign(X @ model.M)
    for v in (1.0, -1.0):
        np.testing.assert_array_less(np.abs(eps[y == v].mean(0)), 4.5 / math.sqrt(20_000) + 0.02)
    with pytest.raises(InvalidParameterError, match="'n'"):
        model.sample(11, 0, balanced=True)


def test_gmm_training_learns_the_cluster_directions_and_options_name_themselves():
    model, p0 = _gmm_setting(d=8, k=2, sigma_r=0.5, m=8)
    sched = [Step(eta=0.5, lam_a=0.0, lam_w=0.0, s=0.0)] * 3
    sim = se.train(model, width=8, method="gd", schedule=sched, steps=300, n_train=4000, batch=4000, seeds=2,
                   init=(0.3, 0.3, 0.3), coords="input", n_test=2000, lr=0.5)
    assert sim["test_acc"][:, -1].min() > 0.9 and sim["centre_cos"][:, -1].min() > 0.8
    for kw, name in ((dict(coords="pattern"), "coords"), (dict(init=None), "init"), (dict(schedule=None), "schedule"),
                     (dict(method="no_structure"), "method"), (dict(d=9), "d")):
        args = dict(width=8, method="gd", schedule=sched, steps=1, n_train=100, batch=100, init=(0.3, 0.3, 0.3),
                    coords="input") | kw
        with pytest.raises(InvalidParameterError, match=f"'{name}'"):
            se.train(model, **args)


def test_gmm_population_step_certifies_its_hinge_indicator_and_names_bad_input():
    from popdyn._validate import RegimeWarning
    from popdyn.models.emergence import TwoLayerParams, population_gradient, population_step
    import warnings
    model, p0 = _gmm_setting()
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # a mirrored init has g = 0: certified although sum |a| > 1
        assert np.abs(p0.a).sum() > 1
        population_step(model, p0, 0.5, 0.0, 1.0, 0.1)
    loose = TwoLayerParams(p0.Q[:6], p0.b[:6], np.full(6, 0.5))     # sum of the positive a = 3: not certified
    with pytest.warns(RegimeWarning, match="not certified"):
        population_gradient(model, loose, 0.1)
    with pytest.raises(InvalidParameterError, match="'indicator'"):
        population_gradient(model, p0, 0.1, indicator="enumerate")
    with pytest.raises(InvalidParameterError, match="'params'"):
        population_gradient(model, TwoLayerParams(p0.Q[:, :5], p0.b, p0.a), 0.1)


def test_gmm_full_batch_step_equals_autograd_on_the_same_samples():
    # generic parameters (g != 0, the hinge indicator takes both values): the written-out step on the inputs x in R^d
    # equals autograd of the mean hinge on the very samples (stream 0) to rounding
    from popdyn.models.emergence import TwoLayerParams
    model, _ = _gmm_setting(d=10, k=3, sigma_r=0.7)
    rng = np.random.default_rng(5)
    p = TwoLayerParams(0.5 * rng.standard_normal((8, 10)), 0.3 * rng.standard_normal(8) + 0.3,
                       3.0 * rng.standard_normal(8))
    eta, s, n = 0.5, 0.1, 3000
    sim = se.train(model, width=4, method="network", schedule=[Step(eta=eta, lam_a=0.0, lam_w=0.0, s=s)] * 3,
                   steps=1, n_train=n, seeds=1, init=p, coords="input", n_test=10, eval_samples=10)
    X, y = se.sample(model, 1, n, 0)
    P = {k_: torch.tensor(v[None], requires_grad=True) for k_, v in (("W", p.Q), ("b", p.b), ("a", p.a))}
    _reference_loss(X, y, P, s).backward()
    g = (se.smooth_trunc_relu(X @ P["W"].mT + P["b"][:, None, :], s) * P["a"][:, None, :]).sum(-1)
    active = float(np.mean((y * g).detach().numpy() <= 1))
    assert 0.05 < active < 0.95                 # the hinge indicator 1[y g <= 1] takes both values
    for key, out in (("W", "Q_1"), ("b", "b_1"), ("a", "a_1")):
        expect = P[key].detach().numpy()[0] - eta * P[key].grad.numpy()[0]
        np.testing.assert_allclose(sim[out][0], expect, rtol=1e-10, atol=1e-12)
