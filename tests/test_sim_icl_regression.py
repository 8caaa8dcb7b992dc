"""Finite-sample training of the rank-r LSA (popdyn.sim.icl.regression) against the population theory."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import popdyn  # noqa: E402
from popdyn._validate import InvalidParameterError  # noqa: E402
from popdyn.models import icl  # noqa: E402

PROBLEM = icl.Problem.from_spectrum([1.0, 0.6, 0.3, 0.1], context=20, r=2, test_context=8, sigma=0.5, rho=0.25)


@pytest.fixture(scope="module")
def sgd_run():
    return popdyn.simulate(PROBLEM, lr=0.5, steps=300, batch=1024, optimizer="sgd", seeds=3, n_points=11,
                           prompts=4000, init_scale=0.05)


@pytest.fixture(scope="module")
def small_step_run():
    """SGD at lr = 0.05 (1000 steps, 4 seeds), recorded on 41 steps through the escape from the small start."""
    return popdyn.simulate(PROBLEM, lr=0.05, steps=1000, batch=256, optimizer="sgd", seeds=4, n_points=41,
                           prompts=64, init_scale=0.05)


def _per_time_excess(lr, sim):
    """max_t |flow loss at lr * t - mean SGD loss| / (4 SD_t + 2e-3): the per-time bound (<= 1 to pass)."""
    pred = popdyn.predict(PROBLEM, lr=lr, steps=1000, n_points=1001, init_scale=0.05, method="flow")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a wrong lr is a deliberate mismatch of a matched option
        c = popdyn.compare(pred, sim, strict=lr == 0.05)
    return float(np.max(np.abs(c.theory["loss"] - c.mean["loss"]) / (4 * c.sd["loss"] + 2e-3)))


def test_sgd_follows_population_gradient_flow_at_every_time(small_step_run):
    # per time t: 4 seed SDs of the loss at t, plus 2e-3 (the O(lr/batch) SGD noise floor); measured 0.37-0.77 over
    # stream seeds 0-3, where a bound with the largest SD over t (issue 7) also accepted a 20 % wrong step size
    assert _per_time_excess(0.05, small_step_run) <= 1


@pytest.mark.parametrize("wrong_lr", [0.045, 0.055])
def test_per_time_bound_rejects_a_ten_percent_wrong_step_size(small_step_run, wrong_lr):
    assert _per_time_excess(wrong_lr, small_step_run) > 1  # measured 1.3-2.3 over stream seeds 0-3


def test_eval_risk_mc_matches_formula_at_trained_U(sgd_run):
    assert sgd_run["rel_error"][:, -1].max() < 0.1  # lr = 0.5, 300 steps: flow time 150, near U*
    z = (sgd_run["eval_risk"][:, -1] - sgd_run.meta["eval_risk_formula_final"]) / sgd_run["eval_risk_se"][:, -1]
    assert np.abs(z).max() < 4  # 4 SE per seed, prompts = 4000 fresh noisy/flipped prompts


def test_adam_reaches_rank_r_optimum():
    sim = popdyn.simulate(PROBLEM, lr=1e-2, steps=1000, batch=512, optimizer="adam", schedule="cosine", seeds=2,
                          n_points=3, prompts=64)
    assert sim["rel_error"][:, -1].max() < 0.1   # measured 0.023-0.028; docs/icl.md: 7 % at 2000 constant-rate steps
    assert sim["excess_loss"][:, -1].max() < 2e-3 * icl.optimal_loss(PROBLEM.Lambda, 20, 2)
    full = popdyn.simulate(PROBLEM, lr=3e-3, steps=300, batch=256, optimizer="adam", full=True, train_u=True,
                           n_points=2, prompts=64, seeds=1)
    assert full["uU"].shape == (1, 4, 4) and np.isfinite(full["loss"]).all()


def test_same_seed_same_numbers():
    a, b = (popdyn.simulate(PROBLEM, lr=1e-2, steps=20, batch=64, n_points=3, prompts=32, seed=5, seeds=1)
            for _ in range(2))
    for k in a.observables:
        np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize("kwargs, name", [(dict(lr=-1.0), "'lr'"), (dict(optimizer="lbfgs"), "'optimizer'"),
                                          (dict(batch=0), "'batch'"), (dict(device="tpu"), "'device'")])
def test_bad_inputs(kwargs, name):
    args = dict(lr=1e-2, steps=5) | kwargs
    with pytest.raises(InvalidParameterError, match=name):
        popdyn.simulate(PROBLEM, **args)
