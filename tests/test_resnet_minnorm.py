"""Appendix A.1 of the paper: exact population MSE, level norm, footnote-13 maps, Rademacher bound, the torch solvers.

Independent computations: a seeded Monte Carlo (z < 4.5), a brute-force scan of the ray {tW}, an explicit loop over
neurons; Hypothesis for the invariances.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from popdyn import InvalidParameterError
from popdyn.models.resnet.minnorm import (PAPER_POINTS, duplicate, level_norm, network, pad, paper_norm, parity_labels,
                                          population_mse, rademacher_bound, signs)
from popdyn.sim.resnet.minnorm import pareto, sgd

_Z = 4.5


def _cube(rng, n, d):
    return rng.choice([-1.0, 1.0], size=(n, d)) / math.sqrt(d)


def _mc_mse(W, n, rng, S=range(6)):
    X = _cube(rng, n, W.shape[1])
    err = (network(W, X) - parity_labels(X, S)) ** 2
    return err.mean(), err.std(ddof=1) / math.sqrt(n)


@pytest.mark.parametrize("d, padded", [(8, False), (40, True)])
def test_population_mse_matches_monte_carlo(d, padded):
    rng = np.random.default_rng(d)
    W = rng.normal(size=(20, 6 if padded else d)) * 2.0
    W = pad(W, d) if padded else W  # padded: only the 6 relevant columns are enumerated, d = 40 is exact
    exact = population_mse(W)
    mean, se = _mc_mse(W, 200_000, rng)
    assert abs(mean - exact) < _Z * se, (exact, mean, se)
    assert 0.3 < exact < 3.0  # not a trivial value


def test_population_mse_ignores_zero_columns_exactly():
    rng = np.random.default_rng(1)
    W = rng.normal(size=(10, 6))
    W10 = np.zeros((10, 10))
    W10[:, [0, 2, 4, 6, 8, 9]] = W * math.sqrt(10 / 6)
    S = (0, 2, 4, 6, 8, 9)
    # the support scattered over d = 10 (the other columns zero): the same MSE as the d = 6 network
    assert population_mse(W10, S) == pytest.approx(population_mse(W), abs=1e-12)


def test_network_and_labels_against_loops():
    rng = np.random.default_rng(2)
    W, X = rng.normal(size=(6, 7)), _cube(rng, 5, 7)
    a = signs(6)
    loop = [sum(a[j] * max(W[j] @ x, 0.0) for j in range(6)) for x in X]
    np.testing.assert_allclose(network(W, X), loop, rtol=1e-13)
    np.testing.assert_allclose(parity_labels(X, (1, 3, 4)), 7 ** 1.5 * X[:, 1] * X[:, 3] * X[:, 4], rtol=1e-12)
    assert np.isclose(signs(200).sum(), 0.0) and np.allclose(np.abs(signs(200)), 1 / math.sqrt(200))


def test_level_norm_is_the_ray_minimum():
    W = pareto(m=40, lams=[1e-3], starts=1, steps=1500, refine_steps=0, levels=[0.3])["W"][0] * 1.7  # off the level
    for eps in (0.3, 0.5):
        n = level_norm(W, eps)
        assert math.isfinite(n)
        t = np.linspace(0.0, 3.0, 3001) * n / paper_norm(W)
        mses = np.array([population_mse(s * W) for s in t])
        first = t[np.argmax(mses <= eps)] * paper_norm(W)
        assert abs(first - n) <= 1.01 * 3.0 / 3000 * n  # the scan's grid step
        assert population_mse(W * n / paper_norm(W)) == pytest.approx(eps, abs=1e-12)
    assert level_norm(W, 1e-6) == math.inf


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), m2=st.integers(1, 6), c=st.integers(1, 5), extra=st.integers(0, 6))
def test_duplication_and_padding_invariance(seed, m2, c, extra):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(2 * m2, 6))
    Wd, ad = duplicate(W, c)
    X = _cube(rng, 16, 6)
    np.testing.assert_allclose(network(Wd, X, ad), network(W, X), rtol=1e-10, atol=1e-12)
    assert np.linalg.norm(Wd) == pytest.approx(np.linalg.norm(W), rel=1e-12)
    assert np.allclose(np.sort(ad), np.sort(signs(2 * m2 * c)))  # a' is signs(c m) up to a permutation
    Wp = pad(W, 6 + extra)
    assert paper_norm(Wp) == pytest.approx(paper_norm(W), rel=1e-12)
    assert population_mse(Wp) == pytest.approx(population_mse(W), abs=1e-12)
    assert population_mse(Wd, a=ad) == pytest.approx(population_mse(W), abs=1e-12)
    assert rademacher_bound(W, 7, "rows") <= rademacher_bound(W, 7) * (1 + 1e-12)


def test_rademacher_bound_value():
    W = pad(np.full((200, 6), 9.7 / math.sqrt(200)), 40)  # ||W||_F / sqrt d = 9.7 at d = 40
    assert rademacher_bound(W, 5000) == pytest.approx(2 * 9.7 * math.sqrt(40) / math.sqrt(5000), rel=1e-12)
    assert rademacher_bound(W, 5000, "rows") == pytest.approx(rademacher_bound(W, 5000), rel=1e-12)  # equal rows


@pytest.mark.parametrize("call, name", [
    (lambda: signs(7), "m"), (lambda: signs(0), "m"),
    (lambda: network(np.ones((3, 2)), np.ones((1, 2))), "W"),
    (lambda: network(np.ones((2, 2)), np.ones((1, 3))), "X"),
    (lambda: population_mse(np.ones((2, 6)), S=(0, 6)), "S"),
    (lambda: population_mse(np.ones((2, 6)), S=(1, 1)), "S"),
    (lambda: population_mse(np.ones((2, 21)), S=(0,)), "W"),
    (lambda: population_mse(np.full((2, 6), np.nan)), "W"),
    (lambda: parity_labels(np.ones((1, 6))), "X"),
    (lambda: level_norm(np.ones((2, 6)), 1.0), "mse"),
    (lambda: level_norm(np.ones((2, 6)), 0.0), "mse"),
    (lambda: duplicate(np.ones((2, 6)), 0), "c"),
    (lambda: pad(np.ones((2, 6)), 5), "d"),
    (lambda: rademacher_bound(np.ones((2, 6)), 0), "N"),
    (lambda: rademacher_bound(np.ones((2, 6)), 5, "spectral"), "form"),
    (lambda: pareto(d=5), "d"), (lambda: pareto(m=3), "m"), (lambda: pareto(lams=[-1.0]), "lams[0]"),
    (lambda: pareto(levels=[1.5]), "levels[0]"), (lambda: pareto(starts=0), "starts"),
    (lambda: sgd(N=10, batch=50), "N"), (lambda: sgd(lrs=[0.0]), "lrs[0]"), (lambda: sgd(momentum=1.0), "momentum"),
    (lambda: sgd(oracle_support=1), "oracle_support"),
])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'" if "[" not in name else name.replace("[", r"\[")):
        call()


def test_pareto_returns_exact_points_and_weight_decay_lowers_the_norm():
    kw = dict(m=40, starts=2, steps=1500, refine_steps=0, levels=[0.3])
    decayed, plain = pareto(lams=[1e-3], **kw), pareto(lams=[0.0], **kw)
    for r in (decayed, plain):
        W = r["W"][0]
        assert population_mse(W) == pytest.approx(0.3, abs=1e-9)  # the torch ray minimum, checked by numpy
        assert paper_norm(W) == pytest.approx(r["level_norm"][0], rel=1e-9)
    assert decayed["level_norm"][0] < 0.9 * plain["level_norm"][0]


def test_pareto_refinement_does_not_raise_the_level_norm():
    kw = dict(m=40, lams=[1e-3], starts=2, steps=1500, levels=[0.3])
    assert pareto(refine_steps=300, **kw)["level_norm"][0] <= pareto(refine_steps=0, **kw)["level_norm"][0] * 1.001


def test_sgd_with_the_support_learns_and_without_it_does_not():
    kw = dict(d=16, N=1000, m=100, lrs=[1.0], epochs=20, test=5000)
    told, blind = sgd(oracle_support=True, **kw), sgd(**kw)
    assert told["test_mse"][0] < 0.05 and blind["test_mse"][0] > 0.7
    assert not told["diverged"].any() and np.all(told["test_se"] > 0)
    r = sgd(lrs=[1e6, 0.1], d=8, N=100, m=20, epochs=4, test=100, dtype="float32")  # float32 overflows
    assert r["diverged"].tolist() == [True, False] and np.isnan(r["test_mse"][0]) and np.isfinite(r["test_mse"][1])


def test_paper_points_are_the_seed_values():
    assert PAPER_POINTS == ((9.7, 0.12), (12.5, 0.037), (13.8, 0.011))
