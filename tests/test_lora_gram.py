"""B0, B1 for a general Gram matrix (method "orthant", ReLU family): against the G = I quadrature, RQMC and plain MC."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from popdyn import InvalidParameterError, activations
from popdyn.gaussian import mc_mean
from popdyn.models.lora import B0, B1, Problem
from popdyn.models.lora import gram
from popdyn.models.lora import normalisation as nz

_GRID = np.array([-1.0, -0.6, 0.0, 0.5, 0.95, 1.0])
_FAMILY = ["relu", "abs", activations.leaky_relu(0.2)]


def _gram(k, seed, kind):
    """Gram matrices of unit features: random (d_w = k + 1), nearly singular, rank-deficient (a repeated feature)."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((k, k + 1))
    if kind == "near":
        W[-1] = W[0] + 1e-6 * rng.standard_normal(k + 1)
    if kind == "repeated":
        W[-1] = -W[0]
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    G = W @ W.T
    np.fill_diagonal(G, 1.0)
    return G


def _general(k, xi, act, seed, kind="random"):
    rng = np.random.default_rng(seed)
    c, ch = rng.standard_normal((2, k))
    return Problem(_gram(k, seed, kind), rng.uniform(-1, 1.5, k), c / np.linalg.norm(c), ch / np.linalg.norm(ch),
                   xi, activation=act)


@pytest.mark.parametrize("act", _FAMILY, ids=str)
@pytest.mark.parametrize("k, xi, quantised", [(8, 1.0, True), (4, 1.3, False), (2, 3.0, False)])
def test_identity_gram_equals_the_fine_quadrature(act, k, xi, quantised):
    # G = I: the exact path against the polar quadrature at a 2-3x finer rule than the public one (it agrees with
    # (48, 64, 160) and with a 30-digit mpmath sum of the same orthant moments to 1e-15); 2e-9 relative: the
    # declared accuracy of "orthant" (quantised c make 4-field subsets singular: conditioned on a field, variances
    # of ~1e-14 (the ridge) cost up to 6e-10, measured)
    rng = np.random.default_rng(k)
    if quantised:
        p = Problem.orthonormal(k=k, xi=xi, activation=act, seed=k, lam=rng.uniform(0.5, 1.5, k))
    else:
        c, ch = rng.standard_normal((2, k))
        p = Problem(np.eye(k), rng.uniform(-1, 1.5, k), c / np.linalg.norm(c), ch / np.linalg.norm(ch), xi,
                    activation=act)
    ref = np.array(nz._quadrature(p, _GRID, (24, 32, 96)))
    val, err = (np.array(v) for v in zip(B0(p, _GRID, method="orthant"), B1(p, _GRID, method="orthant")))
    assert np.all(np.abs(val - ref) <= 2e-9 * np.max(ref, axis=1, keepdims=True))


@pytest.mark.parametrize("act", _FAMILY, ids=str)
@pytest.mark.parametrize("kind", ["random", "near", "repeated"])
def test_general_gram_agrees_with_rqmc(act, kind):
    # independent: scrambled Sobol, n = 2^16, |mean - B| <= 7.9 se (Student t, 15 dof: 1e-6 per comparison)
    p = _general(5, 1.2, act, 3, kind)
    for fn in (B0, B1):
        val, err = fn(p, _GRID, method="orthant")
        mc, se = fn(p, _GRID, n=1 << 16, method="rqmc")
        assert np.all(np.isfinite(val)) and np.all(val >= 0)
        assert np.all(np.abs(val - mc) <= 7.9 * se + err)


@pytest.mark.parametrize("m", [0.3, -0.8])
def test_general_gram_against_plain_monte_carlo(m):
    # a second independent check, pseudo-random: 2e6 draws of x, |z| <= 5 (P = 5.7e-7 per comparison)
    p = _general(6, 1.0, "relu", 7)
    L = np.linalg.cholesky(p.G)
    mu = p.lam * p.xi * p.c_hat / p.r_hat

    def sample(rng, n):
        z = rng.standard_normal((n, p.k)) @ L.T
        a, b = rng.standard_normal((2, n))
        s = (z + p.xi * np.outer(m * a + np.sqrt(1 - m * m) * b, p.c_hat)) / p.r_hat
        q = ((np.maximum((z + p.xi * np.outer(a, p.c)) / p.r, 0) - np.maximum(s, 0)) @ p.lam) ** 2 * ((s > 0) @ mu) ** 2
        return np.stack([q, q * (np.sqrt(1 - m * m) * a - m * b) ** 2], axis=1)
    mean, se = mc_mean(sample, 2_000_000, 11)
    exact = np.array([B0(p, m, method="orthant")[0], B1(p, m, method="orthant")[0]])
    assert np.all(np.abs(exact - mean) <= 5 * se)


def test_error_estimate_and_the_table():
    # the estimate (change from the 6-node Plackett rule + rounding) is small and the ODE table (13 Chebyshev points
    # in theta, interpolated) is within 1e-4 of the exact values on its 41-point grid (measured 6e-6)
    p = _general(5, 1.0, "relu", 1)
    val, err = gram.exact(p, nz._M_TABLE, (1.0, 0.0))
    assert np.max(err) <= 5e-9 * np.max(val)  # measured 2e-9 (mostly the rounding term 64 eps S)
    assert np.max(np.abs(np.array(nz._table(p, 2, 0)) - val)) <= 1e-4 * np.max(val)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.floats(-1, 1), k=st.integers(1, 4))
def test_symmetries_for_general_gram(seed, m, k):
    # u -> -u flips c; u_hat -> -u_hat flips c_hat and m; lam -> -lam flips X and Y; a permutation of the neurons
    rng = np.random.default_rng(seed)
    G = _gram(k, seed, "random")
    c, ch = rng.standard_normal((2, k))
    c, ch, lam = c / np.linalg.norm(c), ch / np.linalg.norm(ch), rng.uniform(-1, 1, k)
    perm = rng.permutation(k)
    for fn in (B0, B1):
        v = fn(Problem(G, lam, c, ch, 1.2), m, method="orthant")[0]
        assert v >= 0
        for other, mm in ((Problem(G, lam, -c, -ch, 1.2), m), (Problem(G, lam, c, -ch, 1.2), -m),
                          (Problem(G, -lam, c, ch, 1.2), m),
                          (Problem(G[np.ix_(perm, perm)], lam[perm], c[perm], ch[perm], 1.2), m)):
            assert fn(other, mm, method="orthant")[0] == pytest.approx(v, rel=1e-10, abs=1e-14)
    assert B1(Problem(G, lam, c, ch, 1.2), 1.0, method="orthant")[0] == B0(Problem(G, lam, c, ch, 1.2), 1.0,
                                                                             method="orthant")[0]


def test_method_selection():
    assert nz._method(Problem.random_features(k=3, xi=1.0, seed=0), "auto", "x") == "orthant"
    assert nz._method(Problem.random_features(k=gram.K_MAX + 1, xi=1.0, seed=0), "auto", "x") == "rqmc"
    assert nz._method(Problem.random_features(k=3, xi=1.0, activation="tanh", seed=0), "auto", "x") == "rqmc"
    assert nz._method(Problem.orthonormal(k=3, xi=1.0, seed=0), "auto", "x") == "quadrature"
    with pytest.raises(InvalidParameterError, match="'method'.*ReLU family"):
        B0(Problem.random_features(k=3, xi=1.0, activation="tanh", seed=0), 0.2, method="orthant")
