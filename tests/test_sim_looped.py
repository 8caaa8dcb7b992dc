"""popdyn.sim.looped: the torch looped transformer against the numpy forward pass and the exact curves."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import popdyn  # noqa: E402
from popdyn._validate import InvalidParameterError  # noqa: E402
from popdyn.models import looped as L  # noqa: E402
from popdyn.sim import looped as S  # noqa: E402


def _prompts(problem, B, seed=0, dtype=torch.float64):
    return S.sample_prompts(problem, B, torch.Generator().manual_seed(seed), dtype)


def test_torch_forward_equals_numpy_forward_for_any_weights():
    p = L.Problem(9, 3, alpha=-1.5, noise=0.2, cov=np.array([1.0, 0.5, 2.0]))
    Z0, th = _prompts(p, 5)
    net = S.LoopedTransformer(3, 7)
    rng = np.random.default_rng(0)
    with torch.no_grad():
        net.Q.copy_(torch.as_tensor(np.eye(4) + 0.3 * rng.standard_normal((4, 4))))
        net.P.copy_(torch.as_tensor(np.eye(4) + 0.3 * rng.standard_normal((4, 4))))
        net.eta.copy_(torch.as_tensor(rng.uniform(0.002, 0.01, 7)))
        rows = net(Z0).numpy()
        full = net.full_attention(Z0).numpy()
    for b in range(5):
        Zb = Z0[b].numpy()
        ref = L.looped_forward(Zb, net.Q.detach().numpy(), net.P.detach().numpy(), 7, net.eta.detach().numpy(),
                               return_trajectory=True)[1]
        np.testing.assert_allclose(rows[b], ref, rtol=1e-12, atol=1e-13)  # 1e-12: same float64 products, other order
        np.testing.assert_allclose(full[b, -1], L.linear_attention(Zb, net.Q.detach().numpy(), net.P.detach().numpy(),
                                                                   last_row=True), rtol=1e-12, atol=1e-13)
        assert np.all(full[b, :-1] == 0)


def test_gd_construction_curves_equal_exact_formula():
    p = L.Problem.fig8_1(32)
    Z0, th = _prompts(p, 64)
    net = S.LoopedTransformer(4, 30)
    err, sq = S.curves(net, Z0, th, p.alpha, S.step_schedule(Z0, 30, "1/L", torch.float64))
    X = Z0[:, :-1, :-1].numpy()
    np.testing.assert_allclose(err.detach().numpy(), L.exact_error(X, th.numpy(), 1.0, 30, "1/L"), atol=1e-12)
    np.testing.assert_allclose(sq.detach().numpy(), L.exact_sq_dist(X, th.numpy(), 30, "1/L"), atol=1e-12)
    # 1e-12: iterated float64 loops vs the eigen-formula; both O(1) values, 30 loops


def test_float32_matches_to_single_precision():
    p = L.Problem.fig8_1(16)
    Z0, th = _prompts(p, 32)
    net64 = S.LoopedTransformer(4, 20)
    net32 = S.LoopedTransformer(4, 20, dtype=torch.float32)
    e64 = S.curves(net64, Z0, th, 1.0, S.step_schedule(Z0, 20, "1/L", torch.float64))[0].detach().numpy()
    Z32, th32 = Z0.float(), th.float()
    e32 = S.curves(net32, Z32, th32, 1.0, S.step_schedule(Z0, 20, "1/L", torch.float32))[0].detach().numpy()
    assert np.max(np.abs(e32 - e64)) < 1e-5  # 1e-5: "~1e-6 in float32", 20 loops x eps32 = 1.2e-7 x kappa


def test_simulate_against_predict_and_reproducible():
    p = L.Problem.fig8_1(16)
    sim = popdyn.simulate(p, loops=15, seeds=4, prompts=400, seed=3)
    again = popdyn.simulate(p, loops=15, seeds=4, prompts=400, seed=3)
    assert all(np.array_equal(sim[k], again[k]) for k in sim.observables)
    pred = popdyn.predict(p, loops=15, prompts=8000, seed=1)
    comp = popdyn.compare(pred, sim)
    for k in ("error", "abs_error", "sq_dist"):
        se_pred = np.asarray(pred.meta["se"][k])
        se_sim = sim[k].std(0, ddof=1) / np.sqrt(4)
        gap = np.abs(comp.theory[k] - comp.mean[k])
        assert np.all(gap <= 5 * np.hypot(se_pred, se_sim) + 1e-15)  # 5 SE of the difference (both are Monte Carlo)


def test_train_reduces_loss_and_simulate_accepts_a_model():
    p = L.Problem.fig8_1(16)
    model, losses = S.train(p, loops=3, steps=60, batch=64, lr=0.02, seed=0)
    assert losses[-10:].mean() < 0.5 * losses[:10].mean()
    sim = popdyn.simulate(p, loops=3, seeds=2, prompts=64, model=model)
    assert sim["sq_dist"].shape == (2, 4) and sim.meta["trained_model"]


@pytest.mark.parametrize("kw, name", [({"loops": -1}, "loops"), ({"loops": 3, "lr": "1/mu"}, "lr"),
                                      ({"loops": 3, "lr": -0.1}, "lr"), ({"loops": 3, "seeds": 0}, "seeds"),
                                      ({"loops": 3, "device": "tpu"}, "device"), ({"loops": 3, "dtype": "int8"}, "dtype")])
def test_bad_options(kw, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        popdyn.simulate(L.Problem.fig8_1(16), **kw)
