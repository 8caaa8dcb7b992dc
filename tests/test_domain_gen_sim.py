"""popdyn.sim.domain_gen: the torch sampler, the batch nuclear norm, and GD against the population optimum."""
import numpy as np
import pytest

import popdyn
from popdyn._validate import InvalidParameterError
from popdyn.models import domain_gen as DG

torch = pytest.importorskip("torch")
from popdyn.sim import domain_gen as sim  # noqa: E402


def test_sampler_moments():
    m = DG.Problem(3, 10, 0.3)
    gen = torch.Generator().manual_seed(0)
    for dom, g in (("id", 0.3), ("ood", -0.3)):
        z = sim.sample_features(m, 2, 50_000, dom, gen).numpy()
        zu = z[..., 3:].ravel()
        assert abs(zu.mean() - g) < 5 * np.sqrt((1 / 3 - g ** 2) / zu.size)  # 5 SE, seed 0
        assert z[..., :3].min() >= 0 and abs(z[..., :3].mean() - 0.5) < 5 * np.sqrt(1 / 12 / z[..., :3].size)


def test_batch_nuclear_norm_equals_numpy_svd():
    m = DG.Problem(3, 8, 0.2)
    Z = sim.sample_features(m, 2, 500, "id", torch.Generator().manual_seed(1))
    w = torch.tensor(np.random.default_rng(2).standard_normal((2, 8)))
    ref = [np.linalg.svd(Z[s].numpy() * w[s].numpy(), compute_uv=False).sum() / np.sqrt(500) for s in range(2)]
    assert np.allclose(sim.batch_nuclear_norm(Z, w).numpy(), ref, rtol=1e-12)  # Cholesky route: rounding only


def test_gd_reaches_population_l2_optimum_small_model():
    # n = 20000 samples: the empirical optimum is within ~ n^(-1/2) of the population one; 5 % as in docs/domain_gen.md
    m = DG.Problem(4, 12, 0.3)
    s = popdyn.simulate(m, lam=[0.3], penalty="l2", n_train=20_000, steps=400, lr=0.5, seeds=2, n_test=1000)
    a, b = DG.erm_l2(m, 0.3)
    assert np.all(np.abs(s["alpha"] / a - 1) < 0.05) and np.all(np.abs(s["beta"] / b - 1) < 0.05)
    assert s["alpha"].shape == (2, 1) and s.coords["lam"].tolist() == [0.3]


def test_same_seed_same_numbers():
    m = DG.Problem(2, 6, 0.2)
    kw = dict(lam=[0.5], n_train=100, steps=5, seeds=2, n_test=50, seed=3)
    a, b = popdyn.simulate(m, **kw), popdyn.simulate(m, **kw)
    for k in a.observables:
        np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize("kw, name", [(dict(lam=[-1.0]), "lam"), (dict(lam=[10.0], lr=5.0, steps=400), "lr"),
                                      (dict(lam=[0.1], penalty="rank"), "penalty"),
                                      (dict(lam=[0.1], n_train=5), "n_train"), (dict(lam=[0.1], lr=0.0), "lr"),
                                      (dict(lam=[0.1], steps=0), "steps"), (dict(lam=[0.1], device="tpu"), "device")])
def test_bad_options_name_themselves(kw, name):
    with pytest.raises((InvalidParameterError, ValueError), match=f"'{name}'"):
        popdyn.simulate(DG.Problem(2, 6, 0.2), **kw)
