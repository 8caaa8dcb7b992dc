"""Torch simulation of sparse-parity ICL (popdyn.sim.icl.parity) against the theory."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import popdyn  # noqa: E402
from popdyn import InvalidParameterError  # noqa: E402
from popdyn.models import icl  # noqa: E402
from popdyn.sim.icl import parity as sim_parity  # noqa: E402

PROBLEM = icl.ParityProblem.paper(1, 3, gamma=0.1)


def test_full_prompts_match_the_exact_sampler():
    """Brute-force prompts x = G phi with a random G against mc_eval (G = I, exact law of y^T Phi / M)."""
    sim = popdyn.simulate(PROBLEM, test_context=[16, 128], prompts=3000, flip=0.25, seeds=2, seed=4)
    pred = popdyn.predict(PROBLEM, test_context=[16, 128], prompts=20_000, seed=9, flip=0.25)
    for name in ("hinge_small", "hinge_large", "acc_small", "acc_large"):
        mean = sim[name].mean(0)
        se = np.hypot(np.sqrt((sim[name + "_se"] ** 2).sum(0)) / 2, pred[name + "_se"])  # SE of the difference
        assert np.all(np.abs(mean - pred[name]) <= 5 * se), (name, mean, pred[name], se)  # 5 SE, 8 comparisons


def test_compare_on_the_test_context_coordinate():
    M = [16, 64]
    pred = popdyn.predict(PROBLEM, test_context=M, prompts=4000)
    sim = popdyn.simulate(PROBLEM, test_context=M, prompts=400, seeds=3, progress=True)
    for res in (pred, sim):
        assert "test_context" not in res.observables
        np.testing.assert_array_equal(res.coords["test_context"], M)
    comp = popdyn.compare(pred, sim)
    assert {"acc_small", "acc_large", "hinge_small", "hinge_large"} <= set(comp.metrics)
    # hinge of g2* at M = 16: per-prompt SD ~2.6, mean over 3 x 400 prompts: SE ~0.075, so 0.4 is ~5 SE
    assert comp.metrics["hinge_small"]["sup_gap"] < 0.4 and comp.metrics["hinge_large"]["sup_gap"] < 0.4
    other = popdyn.simulate(PROBLEM, test_context=[16, 128], prompts=100)
    with pytest.raises(ValueError, match="option 'test_context'"):
        popdyn.compare(pred, other)
    with pytest.warns(UserWarning, match="option 'test_context'"), \
            pytest.raises(ValueError, match="coordinate 'test_context'"):
        popdyn.compare(pred, other, strict=False)


def test_trained_heads_fresh_hinge_tends_to_the_exact_population_hinge():
    tr = sim_parity.train(PROBLEM, m=4, context=32, steps=60, lr=2e-2, batch=64, seed=1)
    assert tr["train_loss"][0, -1] < tr["train_loss"][0, 0]
    assert np.all(np.abs(tr["a"]) <= 1)
    a, W, G = (torch.tensor(tr[k][0]) for k in ("a", "W", "G"))
    exact = icl.population_hinge(PROBLEM, tr["a"][0], tr["V"][0])
    N = 4096
    mean, se = sim_parity.fresh_hinge(PROBLEM, a, W, G, context=N, prompts=4000, seed=2, progress=True)
    # hinge is 1-Lipschitz: |bias| <= sum_n |a_n| ||W_n||_2 E||z_N - z_inf|| ||x_q|| <= sum |a_n| ||W_n||_2 d / sqrt(N)
    bias = float((np.abs(tr["a"][0]) * np.linalg.norm(tr["W"][0], 2, axis=(1, 2))).sum()) * PROBLEM.d / np.sqrt(N)
    assert abs(mean - exact) <= 5 * se + bias


def test_same_seed_same_numbers_and_bad_input():
    one = popdyn.simulate(PROBLEM, test_context=[8], prompts=100, seed=3)
    two = popdyn.simulate(PROBLEM, test_context=[8], prompts=100, seed=3)
    assert all(np.array_equal(one[k], two[k]) for k in one.observables)
    with pytest.raises(InvalidParameterError, match="'test_context' parameter"):
        popdyn.simulate(PROBLEM, test_context=[0])
    with pytest.raises(InvalidParameterError, match="'device' parameter"):
        popdyn.simulate(PROBLEM, device="tpu")
    with pytest.raises(InvalidParameterError, match="'problem' parameter"):
        popdyn.simulate(icl.ParityProblem(d=6, k=2, gamma=0.1, pT=0.01))
    with pytest.raises(InvalidParameterError, match="'m' parameter"):
        sim_parity.train(PROBLEM, m=0)
