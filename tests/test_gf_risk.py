"""population_risk: the exact paths against brute force and Monte Carlo, its invariances and its refusals."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from popdyn._validate import InvalidParameterError
from popdyn.models import gradient_features as GF

Z_MAX = 5.0     # |exact - Monte Carlo| / se allowed (the exact value inside the Monte Carlo CI at z = 5)


def _net(seed, M, d, scale=1.0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(M), scale * rng.standard_normal((M, d)), 0.5 * rng.standard_normal(M)


def _models():
    return [GF.UniformParity(7, 2), GF.StructuredParity(6, 1, 3, 0.1, 0.2), GF.xor_mixture(6, 1.0),
            GF.LinearSeparable(np.ones(4), [0.5, 2.0])]


def _low_rank(model, W, loss):
    """Rank <= 2 rows for the Gaussian models, rank 1 for the 0-1 error (any rows for the hypercube)."""
    if isinstance(model, (GF.GaussianMixture, GF.LinearSeparable)):
        W = W.copy()
        W[:, 1 if loss == "error" else 2:] = 0.0
    return W


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2 ** 31), st.integers(1, 4), st.sampled_from(["hinge", "logistic", "error"]),
       st.integers(0, 3))
def test_properties(seed, M, loss, which):
    """risk >= 0; invariant under permuting the neurons and under (a_i, w_i, b_i) -> (c a_i, w_i / c, b_i / c)
    (ReLU homogeneity, c > 0); the exact value inside the Monte Carlo interval (|z| <= 5)."""
    model = _models()[which]
    a, W, b = _net(seed, M, model.dim)
    W = _low_rank(model, W, loss)
    r = GF.population_risk(model, a, W, b, loss, method="exact", tol=1e-8)
    assert r.value >= 0 and r.method == "exact" and r.se == 0 and r.bound < 1e-6
    perm = np.random.default_rng(seed).permutation(M)
    c = np.exp(np.random.default_rng(seed + 1).uniform(-2, 2, M))
    for a2, W2, b2 in ((a[perm], W[perm], b[perm]), (a * c, W / c[:, None], b / c)):
        r2 = GF.population_risk(model, a2, W2, b2, loss, method="exact", tol=1e-8)
        assert abs(r2.value - r.value) <= r.bound + r2.bound + 1e-12 * (1 + r.value)
    mc = GF.population_risk(model, a, W, b, loss, method="mc", n=100_000, seed=seed % 1000)
    assert mc.method == "mc" and math.isinf(mc.bound)
    assert abs(mc.value - r.value) <= Z_MAX * mc.se + 1e-12


def test_brute_force_cube():
    """Uniform and structured parity: "exact" equals the sum over every support point (d = 9 and 7)."""
    up = GF.UniformParity(9, 3)
    a, W, b = _net(3, 4, 9)
    X = np.array(list(itertools.product([-1.0, 1.0], repeat=9)))
    g = np.maximum(X @ W.T - b, 0.0) @ a
    ref = GF.hinge(np.prod(X[:, :3], axis=1) * g).mean()
    assert abs(GF.population_risk(up, a, W, b, "hinge").value - ref) <= 1e-13
    sp = GF.StructuredParity(7, 1, 3, 0.1, 0.2)
    a, W, b = _net(4, 3, 7)
    Phi, y, p = sp._support()
    g = np.maximum(sp._embed(Phi) @ W.T - b, 0.0) @ a
    assert abs(GF.population_risk(sp, a, W, b, "logistic").value - p @ GF.logistic2(y * g)) <= 1e-13


@pytest.mark.slow
def test_column_classes_large_d():
    """A network whose columns off A take two values (up to sign) is exact at d = 301 by the class enumeration,
    equal to the brute-force value of the same network on the block sums; the lattice path agrees within its
    bound."""
    d, k = 301, 2
    up = GF.UniformParity(d, k)
    W = np.zeros((2, d))
    W[0, :k], W[1, :k] = [1.0, -1.0], [0.5, 0.5]
    W[0, k:] = 0.01 * np.where(np.arange(d - k) % 3 == 0, 1.0, -1.0)
    W[1, k:] = 0.02
    a, b = np.array([1.0, -2.0]), np.array([0.1, 0.3])
    r = GF.population_risk(up, a, W, b, "hinge", method="exact")
    mc = GF.population_risk(up, a, W, b, "hinge", method="mc", n=400_000, seed=1)
    assert abs(r.value - mc.value) <= Z_MAX * mc.se
    lat = GF.population_risk(up, a, W, b, "hinge", method="lattice", tol=1e-3)
    assert lat.bound <= 1e-3 + 1e-9 and abs(lat.value - r.value) <= lat.bound + r.bound


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lattice_within_bound(seed):
    """The lattice risk of a generic 2-neuron network is within its declared bound of the exact enumeration."""
    up = GF.UniformParity(15, 2)
    a, W, b = _net(seed, 2, 15, 0.3)
    ex = GF.population_risk(up, a, W, b, "logistic", method="exact")
    for tol in (1e-2, 1e-3):
        lat = GF.population_risk(up, a, W, b, "logistic", method="lattice", tol=tol)
        assert lat.bound <= tol * (1 + 1e-9) and abs(lat.value - ex.value) <= lat.bound + ex.bound


def test_auto_and_refusals():
    """auto falls back to Monte Carlo for rank >= 3 Gaussian networks and for the multi-index model; bad input
    raises naming the parameter."""
    gm = GF.xor_mixture(6, 1.0)
    a, W, b = _net(0, 4, 6)
    assert GF.population_risk(gm, a, W, b, n=1000).method == "mc"
    with pytest.raises(InvalidParameterError, match="rank"):
        GF.population_risk(gm, a, W, b, method="exact")
    with pytest.raises(InvalidParameterError, match="lattice"):
        GF.population_risk(gm, a, W, b, method="lattice")
    mi = GF.MultiIndexPolynomial(np.eye(2, 6), {(1, 1): 1.0})
    assert GF.population_risk(mi, a, W, b, n=1000).method == "mc"
    with pytest.raises(InvalidParameterError, match="'W'"):
        GF.population_risk(gm, a, W[:, :3], b)
    with pytest.raises(InvalidParameterError, match="'tol'"):
        GF.population_risk(gm, a, W, b, tol=0.0)
    up = GF.UniformParity(41, 2)
    a, W, b = _net(0, 3, 41)
    with pytest.raises(InvalidParameterError, match="max_points"):
        GF.population_risk(up, a, W, b, method="exact")
    assert GF.population_risk(up, a, W, b, n=1000).method == "mc"
    with pytest.raises(InvalidParameterError, match="'loss'"):
        GF.population_risk(up, a, W, b, "error", method="lattice")
