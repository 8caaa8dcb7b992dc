"""popdyn.predict and popdyn.simulate for the contrastive model: the torch pieces against independent computations."""
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

import popdyn
from popdyn._validate import InvalidParameterError, RegimeWarning
from popdyn.models import contrastive as c

torch = pytest.importorskip("torch")
from popdyn.sim import contrastive as sc  # noqa: E402


def test_predict_observables_match_the_closed_forms():
    problem = c.Problem.tradeoff(gamma=0.5)
    pred = popdyn.predict(problem)
    np.testing.assert_array_equal(pred.coords["n_labelled"], [4, 10, 30])
    assert list(pred.coords["representation"]) == ["universal", "cr", "specific"]
    np.testing.assert_allclose(pred["alpha"], 1.0, atol=1e-8)
    np.testing.assert_allclose(pred["beta"], [0.2, c.cr_finetune_beta(5, 5, 0.5), 1.0], atol=1e-8)
    np.testing.assert_allclose(pred["probe_norm"], [np.sqrt(3.0), c.probe_norm(1, pred["beta"][1], .5, .5), 1.0],
                               rtol=1e-8)
    assert pred["rademacher"].shape == (3, 3) and np.all(pred["rademacher"] <= pred["rademacher_jensen"])
    assert pred["rademacher"][0, 0] == pytest.approx(c.rademacher_exact(1, 0.2, 5, 10, 4, np.sqrt(3.0)), rel=1e-7)
    np.testing.assert_allclose(pred["column_norms"][:35], np.r_[np.ones(5), np.full(25, np.sqrt(0.2)), np.zeros(5)],
                               atol=1e-8)


def test_predict_records_the_regime_of_uneven_mixtures():
    problem = c.Problem(3, 3, 6, 12, np.array([0.5, 0.3, 0.2]), gamma=0.3)
    with pytest.warns(RegimeWarning, match="even mixture"):
        pred = popdyn.predict(problem)
    assert [e["holds"] for e in pred.meta["regime"]] == [False, True]
    assert pred["beta"][0] < pred["beta"][1] < 1  # fine-tuning raises the target's private norm from alpha_t


def test_torch_projection_matches_numpy():
    rng = np.random.default_rng(0)
    for r in (0.5, 1.5, 3.0, 7.9, 50.0):
        W = rng.standard_normal((3, 4, 9)) * rng.uniform(0.1, 2, (3, 1, 1))
        got = sc.project_spectral_frobenius(torch.as_tensor(W), r).numpy()
        np.testing.assert_allclose(got, np.stack([c.project_spectral_frobenius(w, r) for w in W]), atol=1e-12)


def test_gradient_matches_autograd():
    rng = np.random.default_rng(1)
    W = torch.tensor(rng.standard_normal((2, 4, 6)), requires_grad=True)
    x, xp = (torch.as_tensor(rng.standard_normal((2, 50, 6))) for _ in range(2))
    u = ((x @ W.mT) * (xp @ W.mT)).sum(-1)
    loss = torch.logaddexp(torch.zeros_like(u), -u).mean(-1).sum()  # (softplus linearises above 20: 2e-9 off)
    loss.backward()
    got = sc._grad(W.detach(), x, xp, sc._DLOSS["logistic"])
    torch.testing.assert_close(got, W.grad, rtol=1e-12, atol=1e-14)


def test_probe_is_the_norm_constrained_least_squares_and_its_risk_is_exact():
    problem = c.Problem(2, 2, 4, 7, noise=0.3)
    alpha, alphas, W = c.optimal_representation(problem)
    Wt = torch.as_tensor(W)[None]
    gen = torch.Generator().manual_seed(3)
    state = gen.get_state()
    risk, B = sc.probe_excess_risk(problem, Wt, 3, 4, gen)
    assert float(B[0]) == pytest.approx(c.probe_norm(alpha, alphas[0], problem.v1, problem.v2), rel=1e-10)
    gen.set_state(state)  # redraw the same data and solve the constrained problem with SLSQP
    scale = torch.as_tensor(problem.feature_scales(0))
    x = sc.standard_normal_(torch.empty(1, 4, 3, 7, dtype=torch.float64), gen) * scale
    S, P, _, _ = problem.index_sets()
    target = np.zeros(7)
    target[np.r_[S, P[0]]] = problem.u_star
    y = x.numpy() @ target + 0.3 * sc.standard_normal_(torch.empty(1, 4, 3, dtype=torch.float64), gen).numpy()
    for i in range(4):
        phi = x.numpy()[0, i] @ W.T
        res = minimize(lambda u: np.mean((phi @ u - y[0, i]) ** 2), np.zeros(W.shape[0]), method="SLSQP",
                       constraints=[{"type": "ineq", "fun": lambda u: float(B[0]) ** 2 - u @ u}],
                       options={"ftol": 1e-15, "maxiter": 500})
        e = W.T @ res.x - target
        assert float(risk[0, i]) == pytest.approx(float(e @ (e * problem.feature_scales(0) ** 2)), rel=1e-4, abs=1e-7)


def test_simulate_is_reproducible_and_shaped():
    problem = c.Problem(2, 1, 2, 4, gamma=0.2)
    kw = dict(steps=20, batch=32, ft_steps=5, n_labelled=[1, 4], probes=3, seeds=2)
    a, b = popdyn.simulate(problem, **kw), popdyn.simulate(problem, **kw)
    for k, v in a.observables.items():
        np.testing.assert_array_equal(v, b[k])
    assert a["alpha"].shape == (2, 3) and a["excess_risk"].shape == (2, 3, 2) and a["column_norms"].shape == (2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RegimeWarning)
        cmp = popdyn.compare(popdyn.predict(problem, n_labelled=[1, 4]), a)
    assert cmp is not None


@pytest.mark.parametrize("option,value", [("steps", 0), ("lr", -1.0), ("n_labelled", [0]), ("probes", 0), ("seeds", 0),
                                          ("device", "tpu"), ("loss", "hinge")])
def test_simulate_bad_options_name_the_parameter(option, value):
    with pytest.raises(InvalidParameterError, match=f"'{option}' parameter"):
        popdyn.simulate(c.Problem(2, 1, 2, 4), **{"steps": 2, "ft_steps": 1, "probes": 1, option: value})
