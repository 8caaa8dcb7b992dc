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
    sim = popdyn.simulate(PROBLEM, M=[16, 128], n_prompts=3000, flip=0.25, seeds=2, seed=4)
    pred = popdyn.predict(PROBLEM, M=[16, 128], n_prompts=20_000, seed=9, flip=0.25)
    for name in ("hinge_small", "hinge_large"):
        mean = sim[name].mean(0)
        # SE of the difference: per-prompt SD from the theory's 20000 prompts, scaled to the sim's 6000
        se = pred[name + "_se"] * np.sqrt(1 + 20_000 / 6000)
        assert np.all(np.abs(mean - pred[name]) <= 5 * se)  # 5 SE, (name, mean, pred[name], se)
    comp = popdyn.compare(pred, sim, observables=["acc_small", "acc_large"])
    assert comp.metrics["acc_small"]["sup_gap"] < 0.05  # 0.05 > 5 SE of an accuracy at 3000 prompts (0.045)


def test_trained_heads_fresh_hinge_tends_to_the_exact_population_hinge():
    tr = sim_parity.train(PROBLEM, m=4, N=32, steps=60, lr=2e-2, batch=64, seed=1)
    assert tr["train_loss"][0, -1] < tr["train_loss"][0, 0]
    assert np.all(np.abs(tr["a"]) <= 1)
    a, W, G = (torch.tensor(tr[k][0]) for k in ("a", "W", "G"))
    exact = icl.population_hinge(PROBLEM, tr["a"][0], tr["V"][0])
    N = 4096
    mean, se = sim_parity.fresh_hinge(PROBLEM, a, W, G, N=N, n_prompts=4000, seed=2)
    # hinge is 1-Lipschitz: |bias| <= sum_n |a_n| ||W_n||_2 E||z_N - z_inf|| ||x_q|| <= sum |a_n| ||W_n||_2 d / sqrt(N)
    bias = float((np.abs(tr["a"][0]) * np.linalg.norm(tr["W"][0], 2, axis=(1, 2))).sum()) * PROBLEM.d / np.sqrt(N)
    assert abs(mean - exact) <= 5 * se + bias


def test_same_seed_same_numbers_and_bad_input():
    one = popdyn.simulate(PROBLEM, M=[8], n_prompts=100, seed=3)
    two = popdyn.simulate(PROBLEM, M=[8], n_prompts=100, seed=3)
    assert all(np.array_equal(one[k], two[k]) for k in one.observables)
    with pytest.raises(InvalidParameterError, match="'M' parameter"):
        popdyn.simulate(PROBLEM, M=[0])
    with pytest.raises(InvalidParameterError, match="'device' parameter"):
        popdyn.simulate(PROBLEM, device="tpu")
    with pytest.raises(InvalidParameterError, match="'problem' parameter"):
        popdyn.simulate(icl.ParityProblem(d=6, k=2, gamma=0.1, pT=0.01))
    with pytest.raises(InvalidParameterError, match="'m' parameter"):
        sim_parity.train(PROBLEM, m=0)
