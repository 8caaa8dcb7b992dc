"""popdyn.sim.multitask: the screened pattern-sum algorithm against plain autograd on the same samples (hinge
thresholds included), the factor 2 of differentiating through the heads, the heads, loss and W step against the
population map within Monte Carlo error, stratification, reproducibility, option checks, the downstream probe."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import popdyn  # noqa: E402
from popdyn._validate import InvalidParameterError  # noqa: E402
from popdyn.models import multitask as mt  # noqa: E402
from popdyn.sim import multitask as sm  # noqa: E402

CPU = torch.device("cpu")


# ---- an independent reference: autograd on the per-sample hinge losses ---------------------------------------------

def _samples(problem, n_train, stratified=True, chunk=2**16, seed=0, replicate=0):
    """The rows that simulate draws for one replicate, as an (n, d) array (zero padding dropped)."""
    opts = sm._run_options(problem, n_train, stratified, chunk, seed)
    U = torch.as_tensor(mt.sign_patterns(problem.r))
    rows = [blk[p, :int(cnt[p])] for blk, cnt in sm._chunks(opts, replicate, U, problem.d, torch.float64)
            for p in range(U.shape[0])]
    return torch.cat(rows).numpy()


def _autograd(problem, X, A0=None, detach=True, lr=1.0):
    """Eqs. (7)-(8) by torch autograd on mean_x max(1 - y f, 0): heads, W+, post-head loss, threshold hits."""
    Xt = torch.as_tensor(X)
    Y = torch.as_tensor(problem.task_set.labels(X).T)                        # (n, T), pattern_index labels
    W = torch.tensor(problem.W0, requires_grad=True)
    A0 = torch.tensor(problem.A0 if A0 is None else A0, requires_grad=True)
    eta = lr

    def margins(W, A):
        return Y * (torch.relu(Xt @ W.T) @ A.T)

    def task_losses(W, A):
        return torch.relu(1 - margins(W, A)).mean(0)

    gA, = torch.autograd.grad(task_losses(W, A0).sum(), A0, create_graph=not detach)
    A_plus = (1 - eta * (1 / eta)) * A0 - eta * gA                        # lambda_a = 1/eta
    if detach:
        A_plus = A_plus.detach()
    loss = task_losses(W, A_plus).mean()
    gW, = torch.autograd.grad(loss, W)
    dec = mt.decay_factor(problem.r, eta, problem.lam_w, problem.task_set)
    hits = int((margins(W, A0) >= 1).sum() + (margins(W, A_plus) >= 1).sum())
    W_plus = dec * problem.W0 - eta * gW.numpy()
    return A_plus.detach().numpy(), W_plus, float(loss.detach()), hits


def _sim(problem, lr=1.0, **kw):
    with torch.inference_mode():
        net = sm._Net(problem, lr, CPU, torch.float64)
        if "A0" in kw:
            net.A0 = torch.as_tensor(kw.pop("A0"))
        opts = sm._run_options(problem, kw.get("n_train", 2**12), kw.get("stratified", True), kw.get("chunk", 2**16),
                               0)
        dec = mt.decay_factor(problem.r, lr, problem.lam_w, problem.task_set)
        heads, W_plus, loss, hits, counts, bound = sm._replicate(net, opts, 0, dec, sm._progress(1, False, ""))
    return heads.numpy(), W_plus.numpy(), loss, hits, bound


def _assert_same_step(problem, n_train, stratified=True, chunk=2**16, A0=None, lr=1.0):
    X = _samples(problem, n_train, stratified, chunk)
    a_ref, W_ref, loss_ref, hits_ref = _autograd(problem, X, A0, lr=lr)
    heads, W_plus, loss, hits, bound = _sim(problem, lr, n_train=n_train, stratified=stratified, chunk=chunk,
                                            **({} if A0 is None else {"A0": A0}))
    assert len(X) == n_train and hits == hits_ref
    # 1e-10: the same float64 sums over <= 2^12 samples in another order (n eps ~ 1e-12), relative to each term
    scale_a = np.abs(a_ref).max()
    np.testing.assert_allclose(heads, a_ref, rtol=0, atol=1e-10 * scale_a)
    grad_scale = np.abs(W_ref - mt.decay_factor(problem.r, lr, problem.lam_w, problem.task_set)
                        * problem.W0).max() + np.abs(problem.W0).max() * 1e-3
    np.testing.assert_allclose(W_plus, W_ref, rtol=0, atol=1e-10 * grad_scale)
    assert loss == pytest.approx(loss_ref, rel=1e-10, abs=1e-12)
    return hits, bound


def test_step_equals_autograd_in_the_linear_regime():
    hits, bound = _assert_same_step(mt.Problem.e1(), 2**12, chunk=2**10)
    assert hits == 0 and bound < 1


def test_step_equals_autograd_past_the_hinge_threshold():
    # nu_w = 1: |f| ~ eta phi(0) m ||w||^2 >> 1, so the threshold indicators bite and the second pass runs
    p = mt.Problem(d=6, r=2, width=8, tasks=5, nu_w=1.0, lam_w="adaptive", seed=3)
    hits, bound = _assert_same_step(p, 2**11, chunk=2**9, lr=0.8)
    assert hits > 100 and bound > 1


def test_head_step_thresholds_with_asymmetric_initial_heads():
    # the problem's A0 pairs with W0 so that f(x; W0, a0) = 0; large unpaired heads exercise the head-step screen
    p = mt.Problem(d=7, r=2, width=6, tasks="hadamard", nu_w=0.5, seed=1)
    A0 = 3.0 * np.random.default_rng(0).standard_normal(p.A0.shape)
    hits, _ = _assert_same_step(p, 2**11, chunk=2**9, A0=A0)
    assert hits > 100


@settings(max_examples=25)
@given(r=st.integers(1, 3), extra=st.integers(1, 5), half=st.integers(1, 4), log_nu=st.floats(-2.0, 0.5),
       eta=st.floats(0.3, 2.0), lam_w=st.sampled_from(["paper", "adaptive", 0.7]),
       tasks=st.sampled_from(["hadamard", 3]), stratified=st.booleans(), chunks=st.integers(1, 3))
def test_property_screened_sums_equal_autograd(r, extra, half, log_nu, eta, lam_w, tasks, stratified, chunks):
    p = mt.Problem(d=r + extra, r=r, width=2 * max(half, r), tasks=tasks, nu_w=10.0**log_nu, lam_w=lam_w, seed=r + extra)
    P = 2**r
    _assert_same_step(p, 64 * P, stratified, chunk=64 * P // chunks + P, lr=eta)


def test_differentiating_through_the_heads_doubles_the_gradient():
    # docs/multitask.md: in the linear regime L(W, a^+(W)) = 1 - eta/T sum_i ||E[y_i relu(W x)]||^2, whose gradient is
    # twice the fixed-head one; the simulation takes the fixed-head step
    p = mt.Problem.e1()
    X = _samples(p, 2**12)
    eta = 1.0
    dec = mt.decay_factor(p.r, eta, p.lam_w, p.task_set)
    g_fixed = (dec * p.W0 - _autograd(p, X, lr=eta)[1]) / eta
    g_through = (dec * p.W0 - _autograd(p, X, detach=False, lr=eta)[1]) / eta
    np.testing.assert_allclose(g_through, 2 * g_fixed, rtol=1e-10, atol=1e-15)   # 1e-10: float64 sums, n = 2^12
    W_sim = _sim(p, eta, n_train=2**12)[1]
    np.testing.assert_allclose(dec * p.W0 - W_sim, eta * g_fixed, rtol=1e-9, atol=1e-14)


# ---- sampling ---------------------------------------------------------------------------------------------------

def test_stratified_blocks_have_their_sign_pattern_and_half_normal_magnitudes():
    r, d, nb = 3, 5, 4096
    U = torch.as_tensor(mt.sign_patterns(r))
    X, counts = sm._sample(torch.Generator().manual_seed(0), U, U.shape[0] * nb, d, True, torch.float64)
    assert X.shape == (8, nb, d) and counts.tolist() == [nb] * 8
    idx = mt.pattern_index(X.reshape(-1, d).numpy(), r).reshape(8, nb)
    assert np.array_equal(idx, np.repeat(np.arange(8)[:, None], nb, axis=1))
    mag = X[..., :r].abs().reshape(-1).numpy()
    n = mag.size
    assert abs(mag.mean() - math.sqrt(2 / math.pi)) < 5 * math.sqrt((1 - 2 / math.pi) / n)   # 5 SE of E|g|
    perp = X[..., r:].reshape(-1).numpy()
    assert abs(perp.mean()) < 5 / math.sqrt(perp.size) and abs(perp.var() - 1) < 5 * math.sqrt(2 / perp.size)


def test_iid_blocks_sort_rows_by_pattern_with_multinomial_counts():
    r, d, rows = 2, 4, 40_000
    U = torch.as_tensor(mt.sign_patterns(r))
    X, counts = sm._sample(torch.Generator().manual_seed(1), U, rows, d, False, torch.float64)
    c = counts.numpy()
    assert c.sum() == rows and X.shape == (4, c.max(), d)
    for p in range(4):
        assert np.all(mt.pattern_index(X[p, :c[p]].numpy(), r) == p)
        assert np.all(X[p, c[p]:].numpy() == 0)
    chi2 = ((c - rows / 4) ** 2 / (rows / 4)).sum()
    assert chi2 < 21.1                      # chi2_3 quantile at 1 - 1e-4
    assert not np.all(c == rows // 4)


def test_pattern_counts_and_rounding():
    p = mt.Problem(d=6, r=2, width=4)
    sim = popdyn.simulate(p, n_train=2**10, seeds=2)
    assert sim["pattern_counts"].tolist() == [[256] * 4] * 2
    with pytest.warns(UserWarning, match="rounded up to 1004"):
        sim = popdyn.simulate(p, n_train=1001, seeds=1)
    assert sim.meta["options"]["n_train"] == 1004 and sim["pattern_counts"].sum() == 1004
    iid = popdyn.simulate(p, n_train=1001, stratified=False, seeds=1)
    assert iid["pattern_counts"].sum() == 1001 and iid["pattern_counts"].min() != iid["pattern_counts"].max()


# ---- reproducibility and results ---------------------------------------------------------------------------------

def test_same_seed_same_numbers_and_replicates_are_independent_of_seeds():
    p = mt.Problem(d=10, r=2, width=6, tasks=7)
    a = popdyn.simulate(p, n_train=2**12, seeds=3, chunk=2**10)
    b = popdyn.simulate(p, n_train=2**12, seeds=3, chunk=2**10)
    for k, v in a.observables.items():
        np.testing.assert_array_equal(b[k], v)
    one = popdyn.simulate(p, n_train=2**12, seeds=1, chunk=2**10)
    np.testing.assert_array_equal(one["W_plus"][0], a["W_plus"][0])
    assert not np.array_equal(a["W_plus"][0], a["W_plus"][1])
    other = popdyn.simulate(p, n_train=2**12, seeds=1, chunk=2**10, seed=1)
    assert not np.array_equal(other["W_plus"][0], a["W_plus"][0])
    shapes = {k: v.shape for k, v in a.observables.items()}
    assert shapes == {"W_plus": (3, 6, 10), "heads": (3, 7, 6), "loss": (3,), "threshold_hits": (3,),
                      "pattern_counts": (3, 4), "kappa": (3,), "ratio": (3,)}
    assert a.t is None and a.n_seeds == 3 and a.meta["distinct_neurons"] == 3


def test_save_load_round_trip(tmp_path):
    sim = popdyn.simulate(mt.Problem(d=5, r=1, width=4), n_train=256, seeds=2, progress=True)
    back = popdyn.results.load(sim.save(tmp_path / "mt"))
    for k, v in sim.observables.items():
        np.testing.assert_array_equal(back[k], v)


# ---- statistics against the population map ---------------------------------------------------------------------

@pytest.mark.parametrize("stratified", [True, False])
def test_heads_and_loss_match_eta_F_S_over_P(stratified):
    # a^+ = eta F S^T / P with S(u) = E[relu(w.x) | u] (Lemma A.3); 32 seeds, z = 5 per entry (32 entries)
    p, eta = mt.Problem(d=12, r=2, width=8, tasks=6, seed=2), 1.3
    sim = popdyn.simulate(p, n_train=2**12, seeds=32, stratified=stratified, lr=eta)
    s = np.linalg.norm(p.W0[:, p.r:], axis=1)
    S = mt.conditional_moments(p.W0[:, :p.r], s)[2]
    theory = eta * p.task_set.F @ S.T / 2**p.r
    heads = sim["heads"]
    z = (heads.mean(0) - theory) / (heads.std(0, ddof=1) / math.sqrt(32))
    assert np.abs(z).max() < 5
    loss_th = mt.post_head_loss(p.W0, p.task_set, eta)
    assert abs(sim["loss"].mean() - loss_th) < 5 * sim["loss"].std(ddof=1) / math.sqrt(32)
    wrong = eta * p.task_set.F[:, ::-1] @ S.T / 2**p.r   # patterns indexed u -> -u (the sign-pattern indexing pitfall)
    assert np.abs((heads.mean(0) - wrong) / (heads.std(0, ddof=1) / math.sqrt(32))).max() > 20


def test_w_step_matches_the_population_map_per_neuron():
    # E1 (r = 2, d = 20, m = 16, Hadamard, eta = 1, paper lambda_w): W+ is unbiased for one_step_map; per
    # neuron, ||mean_s W+_s - W+_pop|| against sqrt(sum_k var_k / S) from the spread over S = 8 seeds
    p, S, n, eta = mt.Problem.e1(), 8, 2**18, 1.0
    sim = popdyn.simulate(p, n_train=n, seeds=S)
    pop_full = mt.one_step_map(p.W0, p.r, p.task_set, eta, p.lam_w)
    W = sim["W_plus"][:, : p.width // 2]                       # distinct neurons (rows j and j + m/2 agree)
    np.testing.assert_array_equal(sim["W_plus"][:, p.width // 2:], W)
    pop = pop_full[: p.width // 2]
    se = np.sqrt(W.var(0, ddof=1).sum(1) / S)
    gap = np.linalg.norm(W.mean(0) - pop, axis=1)
    assert np.all(gap < 3 * se), gap / se    # 3: chi2_20/20 > 9 has probability < 1e-15 (d = 20 coordinates)
    dec = mt.decay_factor(p.r, eta, p.lam_w)
    doubled = 2 * pop - dec * p.W0[: p.width // 2]                # the step through a^+(W) (the factor-2 pitfall)
    assert np.all(np.linalg.norm(W.mean(0) - doubled, axis=1) > 10 * se)
    rel = np.linalg.norm(W - pop, axis=2) / np.linalg.norm(pop, axis=1)
    assert np.median(rel) < 3.6 * 2**p.r * math.sqrt(p.d / n)  # E1 noise rule (0.126 here), i.i.d. samples
    assert np.all(sim["threshold_hits"] == 0) and max(sim.meta["margin_bound"]) < 1
    k_pop, k_se = mt.kappa_hat(p.W0, pop_full, p.r), sim["kappa"].std(ddof=1) / math.sqrt(S)
    assert abs(sim["kappa"].mean() - k_pop) < 5 * k_se
    assert abs(sim["kappa"].mean() - mt.kappa_par(p.r, eta, corrected=False)) > 50 * k_se   # paper's eta^2 2^-r-2


def test_paper_scale_stays_linear():
    p = mt.Problem.paper(d=40, r=3, width=24, n_tasks=50, seed=4)
    sim = popdyn.simulate(p, n_train=2**14, seeds=2)
    assert sim["threshold_hits"].tolist() == [0, 0] and max(sim.meta["margin_bound"]) < 1


def test_float32_runs_and_agrees_with_float64_within_monte_carlo():
    p = mt.Problem.e1()
    s64 = popdyn.simulate(p, n_train=2**14, seeds=4)
    s32 = popdyn.simulate(p, n_train=2**14, seeds=4, dtype="float32")
    assert s32.meta["dtype"] == "float32" and s32.status == 0
    sd = np.sqrt(s64["heads"].var(0, ddof=1) + s32["heads"].var(0, ddof=1)) / 2
    assert np.abs(s32["heads"].mean(0) - s64["heads"].mean(0)).max() < 6 * sd.max()


# ---- options -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw,name", [
    ({"n_train": 0}, "n_train"), ({"n_train": 2.5}, "n_train"), ({"seeds": 0}, "seeds"),
    ({"stratified": "yes"}, "stratified"), ({"chunk": 0}, "chunk"), ({"seed": -1}, "seed"),
    ({"device": "tpu"}, "device"), ({"dtype": "int8"}, "dtype"), ({"progress": "no"}, "progress")])
def test_bad_options_name_themselves(kw, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of multitask.simulate"):
        popdyn.simulate(mt.Problem(d=5, r=1, width=4), **kw)


def test_simulate_refuses_other_problems():
    with pytest.raises(TypeError, match="no simulation for 'str'"):
        popdyn.simulate("not a problem")


# ---- downstream ---------------------------------------------------------------------------------------------------

def _downstream(W, alpha=1.0, **kw):
    base = dict(m_hat=400, gamma=math.sqrt(2), gamma_hat=math.sqrt(2), alpha=alpha, target=lambda u: u[0] * u[1],
                n_train=400, n_test=2000, seed=0)
    return sm.downstream(W, 2, **(base | kw))


def test_downstream_learned_features_solve_xor_where_random_features_do_not():
    # E6 of docs/multitask.md in small: the learned first layer (exact map) separates v_1 v_2, the random one (W0) is
    # at chance (Thm 4.6); alpha = alpha_hat / kappa (docs/multitask.md)
    p = mt.Problem(d=40, r=2, width=80)
    W_plus = mt.one_step_map(p.W0, p.r, p.task_set, 1.0, p.lam_w)
    alpha_hat = 2 / (p.nu_w * math.sqrt(p.width // 2))
    learned = _downstream(W_plus, alpha_hat / mt.kappa_hat(p.W0, W_plus, p.r))
    random = _downstream(p.W0, alpha_hat)
    assert learned["test_error"] < 0.02 and learned["train_error"] == 0
    assert random["test_error"] > 0.35       # chance is 0.5; 2000 test points give SE 0.011
    assert learned["grad_norm"] < 1e-3 and learned["test_hinge"] < random["test_hinge"]


def test_downstream_is_reproducible_and_takes_a_table():
    p = mt.Problem(d=10, r=2, width=8)
    a = _downstream(p.W0, 5.0, m_hat=50, n_train=100, n_test=200)
    b = _downstream(p.W0, 5.0, m_hat=50, n_train=100, n_test=200, target=[1.0, -1.0, -1.0, 1.0])
    assert a["test_error"] == b["test_error"] and np.array_equal(a["a"], b["a"])


@pytest.mark.parametrize("kw,name", [
    ({"m_hat": 0}, "m_hat"), ({"gamma": -1.0}, "gamma"), ({"gamma_hat": float("nan")}, "gamma_hat"),
    ({"alpha": 0.0}, "alpha"), ({"lam": 0.0}, "lam"), ({"n_train": 1}, "n_train"), ({"n_test": 0}, "n_test"),
    ({"target": [1.0, -1.0, 1.0]}, "target"), ({"target": [1.0, 0.5, -1.0, 1.0]}, "target"),
    ({"target": lambda u: 0.0}, "target"), ({"device": "gpu"}, "device"), ({"max_iter": 0}, "max_iter")])
def test_downstream_bad_options_name_themselves(kw, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of multitask.downstream"):
        _downstream(np.ones((4, 6)), **kw)


def test_downstream_refuses_odd_width_and_r():
    with pytest.raises(InvalidParameterError, match="'W_plus' parameter"):
        sm.downstream(np.ones((3, 6)), 2, m_hat=4, gamma=1.0, gamma_hat=1.0, alpha=1.0, target=[1, 1, 1, 1], n_train=4)
    with pytest.raises(InvalidParameterError, match="'r' parameter"):
        sm.downstream(np.ones((4, 2)), 2, m_hat=4, gamma=1.0, gamma_hat=1.0, alpha=1.0, target=[1, 1, 1, 1], n_train=4)


# ---- CUDA ----------------------------------------------------------------------------------------------------------

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_theory_and_cpu_shapes():
    p = mt.Problem.e1()
    cpu = popdyn.simulate(p, n_train=2**14, seeds=8)
    gpu = popdyn.simulate(p, n_train=2**14, seeds=8, device="cuda")
    assert gpu.meta["device"].startswith("cuda") and gpu.status == 0
    for k, v in cpu.observables.items():
        assert gpu[k].shape == v.shape, k
    theory = mt.head_after_step(p.W0, p.task_set, 1.0)
    z = (gpu["heads"].mean(0) - theory) / (gpu["heads"].std(0, ddof=1) / math.sqrt(8) + 1e-300)
    assert np.abs(z[:, : p.width // 2]).max() < 6            # t_7, 16 entries: |t| > 6 has probability < 1e-3 each
    assert gpu["threshold_hits"].sum() == 0 and gpu["pattern_counts"].tolist() == cpu["pattern_counts"].tolist()
    iid = popdyn.simulate(p, n_train=2**12, stratified=False, seeds=1, device="cuda")
    assert iid["pattern_counts"].sum() == 2**12
    out = _downstream(p.W0, 5.0, m_hat=50, n_train=100, n_test=200, device="cuda")
    assert 0 <= out["test_error"] <= 1
