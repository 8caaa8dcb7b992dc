"""Tests of popdyn.models.lora.limits: GLM and lazy limits, Claim 2, Example F.1, Thm 36, lazy floor.

Oracles: the kernel form of h at extreme xi, scipy's ODE solver, explicit matrices of the paper,
Monte Carlo least squares (seeded, tolerances in standard errors).
"""
import math

import numpy as np
import pytest
from hypothesis import given, note, strategies as st
from scipy.integrate import solve_ivp

from popdyn import InvalidParameterError, activations
from popdyn.models import lora
from tests.strategies import lora_problems


# --------------------------------------------------------------------------- GLM limit
@pytest.mark.parametrize("act", ["relu", "tanh", "erf", "he3"])
def test_glm_limit_at_large_xi(act):
    """xi = 1e4, c = c_hat = 1/sqrt(k), lam = 1/k: h -> 2 K'(m) ([Dayi25, Remark 15])."""
    k = 4
    p = lora.Problem(np.eye(k), np.full(k, 1 / k), np.full(k, 0.5), np.full(k, 0.5), 1e4, act)
    m = np.linspace(-0.9, 0.9, 7)
    # 1e-6: rho_ij - m = O(k/xi^2) = 4e-8 times K'' = O(1)
    np.testing.assert_allclose(lora.h(p, m), lora.glm_h(act, m), rtol=0, atol=1e-6)
    # at m = +-1 the off-diagonal rho sits 4e-8 from +-1: ReLU's sqrt singularity gives sqrt(8e-8)/pi = 1e-4
    assert abs(lora.h(p, 1.0) - lora.glm_h(act, 1.0)) < 2e-4
    # the paper's Remark 15 version sum_l l mu_(l+1)^2 m^l misses the factor 2 (and l -> l + 1)
    mu = activations.get(act).hermite_coeffs(60)
    l = np.arange(59)
    paper = np.polynomial.polynomial.polyval(0.5, l * mu[1:60]**2)
    assert abs(paper - lora.glm_h(act, 0.5)) > 0.1  # errata: Remark 15; gap far above the 1e-6 tolerance


def test_glm_h_validates():
    with pytest.raises(InvalidParameterError, match="'m'"):
        lora.glm_h("relu", 2.0)
    with pytest.raises(InvalidParameterError):
        lora.glm_h("nope", 0.0)


# --------------------------------------------------------------------------- lazy limit
@given(lora_problems(activations=("tanh", "erf", "he3")), st.floats(-1, 1))
def test_lazy_limit_smooth(problem, m):
    """xi = 1e-3: h / lazy_h = 1 + O(xi^2 k) for smooth sigma."""
    p = lora.Problem(problem.G, problem.lam, problem.c, problem.c_hat, 1e-3, problem.activation)
    lazy = lora.lazy_h(p)
    note(repr(p))
    # 1e-5 of the scale 2 xi^2 sum|A| K'(1): the O(xi^2) terms are xi^2 (1 + k |c c_hat m|) sup|K''|/K'(1)
    # <= 1e-6 * 2 * 3 (smooth sigma, |K''| <= 3 K'(1) for tanh, erf, He3 on [-1, 1])
    scale = 2 * p.xi**2 * float(np.sum(np.abs(np.outer(p.lam * p.c, p.lam * p.c_hat)))) * p.activation.Kprime1
    assert abs(lora.h(p, m) - lazy) <= 1e-5 * scale


def test_lazy_limit_rates():
    """Relative error of lazy_h: slope 2 in xi for tanh, slope 1 for ReLU (sqrt singularity of K' at 1)."""
    xis = np.array([1e-2, 1e-3, 1e-4])
    for act, slope in (("tanh", 2.0), ("relu", 1.0)):
        errs = [abs(lora.h(p, 0.7) / lora.lazy_h(p) - 1)
                for p in (lora.Problem.orthonormal(k=4, xi=x, seed=1, activation=act) for x in xis)]
        fit = np.polyfit(np.log(xis), np.log(errs), 1)[0]
        assert abs(fit - slope) < 0.05  # 0.05: log-log slope over two decades, next-order terms <= 1e-2


def test_lazy_solution_solves_the_ode():
    h0, m0 = -0.7, 0.2
    tau = np.linspace(0, 3, 7)
    sol = solve_ivp(lambda t, y: h0 * (1 - y**2), (0, 3), [m0], t_eval=tau, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(lora.lazy_solution(h0, m0, tau), sol.y[0], rtol=0, atol=1e-10)  # solver rtol 1e-12
    assert lora.lazy_solution(h0, m0, 0.0) == pytest.approx(m0, abs=1e-16)
    for bad in ({"m0": 1.0}, {"m0": np.nan}, {"tau": np.inf}):
        with pytest.raises(InvalidParameterError):
            lora.lazy_solution(**{"h0": 1.0, "m0": 0.0, "tau": 1.0, **bad})


# --------------------------------------------------------------------------- Claim 2 / Prop. 18
@given(st.integers(2, 12), st.integers(0, 2**31 - 1))
def test_claim2_construction(k, seed):
    """Property 15: V V^T = I, unit rows w_i, u orthogonal to W, <w_i, w_j> = -c_i c_j."""
    c = np.random.default_rng(seed).choice([-1.0, 1.0], k) / math.sqrt(k)
    W, u = lora.claim2_instance(c)
    assert W.shape == (k, k + k * (k - 1) // 2 + 1)
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1, atol=1e-15)  # rounding of k terms 1/k
    np.testing.assert_allclose(W @ u, 0, atol=0)
    G = W @ W.T
    np.testing.assert_allclose(G - np.diag(np.diag(G)), -np.outer(c, c) + np.diag(c * c), atol=1e-15)
    V = W + np.outer(c, u)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    np.testing.assert_allclose(V @ V.T, np.eye(k), atol=1e-15)  # 3e-16 measured


def test_claim2_paper_example_needs_corrected_c():
    """[Dayi25, App. C.3]: the printed k = 4 matrix works with c_i = (-1)^i/2, not with the printed (-1/2)^i."""
    h = 0.5
    W = np.array([[h, h, h, 0, 0, 0, h, 0, 0, 0, 0], [h, 0, 0, h, h, 0, 0, h, 0, 0, 0],
                  [0, -h, 0, h, 0, h, 0, 0, h, 0, 0], [0, 0, h, 0, -h, h, 0, 0, 0, h, 0]])
    u = np.eye(11)[10]

    def violation(c):
        V = W + np.outer(c, u)
        V /= np.linalg.norm(V, axis=1, keepdims=True)
        return np.max(np.abs(V @ V.T - np.eye(4)))

    i = np.arange(1, 5)
    assert violation((-1.0)**i / 2) < 1e-15  # rounding
    assert violation((-0.5)**i) > 0.2  # errata: App. C.3's k = 4 example; measured 0.24


def test_separation_instance_prop18():
    """Prop. 18: sigma = h_p, xi = 1 on Claim 2 features, h = 2p (k/(k+1))^p sum c c_hat (G + c c_hat m)^(p-1)."""
    rng = np.random.default_rng(0)
    k = 9
    c, ch = rng.choice([-1.0, 1.0], size=(2, k)) / 3
    for pdeg in (3, 4):
        p = lora.separation_instance(c, ch, f"he{pdeg}")
        A = np.outer(c, ch)
        for m in (-0.8, 0.0, 0.6):
            ref = 2 * pdeg * (k / (k + 1))**pdeg * np.sum(A * (p.G + A * m)**(pdeg - 1))
            assert lora.h(p, m) == pytest.approx(ref, abs=1e-13)  # polynomial, rounding
    with pytest.raises(InvalidParameterError, match="'c'"):
        lora.claim2_instance(np.array([0.6, 0.8]))


# --------------------------------------------------------------------------- Example F.1
def test_example_f1_identical_teachers():
    """App. F.1: with sigma = z^2 the teacher is x^T (sum_i a_i a_i^T) x; both updates give the same matrix."""
    c, u, c2, u2 = lora.example_f1()
    M = lambda c, u: sum(np.outer(w + ci * u, w + ci * u) for w, ci in zip(np.eye(2), c))
    np.testing.assert_allclose(M(c, u), M(c2, u2), rtol=0, atol=1e-13)  # 2e-14 measured
    assert np.linalg.norm(c) == pytest.approx(11.7845, abs=1e-4) and np.linalg.norm(c2) == np.linalg.norm(c)
    a = {tuple(np.round(w + ci * u, 9)) for w, ci in zip(np.eye(2), c)}
    b = {tuple(np.round(w + ci * u2, 9)) for w, ci in zip(np.eye(2), c2)}
    assert a != b  # different neurons, one function: A2 (u orthogonal to W) is what makes the optimum unique
    x = np.random.default_rng(0).standard_normal((100, 2))
    f = lambda c, u: np.sum((x @ (np.eye(2) + np.outer(c, u)).T)**2, axis=1)
    np.testing.assert_allclose(f(c, u), f(c2, u2), rtol=1e-12)  # rounding of O(100) values


# --------------------------------------------------------------------------- Theorem 36
@given(lora_problems(activations=("relu", "tanh", "erf")), st.floats(-1, 1))
def test_thm36_ordering(problem, m):
    """Property 13: LS(m) <= Phi_{c_hat = c}(|m|) <= bound, LS(+-1) = 0."""
    note(repr(problem))
    same = lora.Problem(problem.G, problem.lam, problem.c, problem.c, problem.xi, problem.activation)
    ls, cand, bound = lora.refit_error(problem, m), lora.population_loss(same, abs(m)), lora.thm36_bound(problem, m)
    slack = 1e-9 * max(1.0, lora.h_bound(problem))  # 1e-9: pseudo-inverse of a Gram with condition <= 1e12
    assert ls <= cand + slack
    assert cand <= bound + slack
    assert lora.refit_error(problem, 1.0) <= slack and lora.refit_error(problem, -1.0) <= slack


def test_refit_error_monte_carlo():
    """Exact LS error against a Monte Carlo least-squares fit of the 2k features (n = 4e5)."""
    p = lora.Problem.random_features(k=3, xi=1.0, activation="relu", seed=0)
    k, m, n = 3, 0.8, 400_000
    rng = np.random.default_rng(0)
    W = np.hstack([np.linalg.cholesky(p.G), np.zeros((k, 2))])
    u, uh = np.eye(k + 2)[k], m * np.eye(k + 2)[k] + math.sqrt(1 - m * m) * np.eye(k + 2)[k + 1]
    r = math.sqrt(1 + 1 / k)
    X = rng.standard_normal((n, k + 2))
    relu = lambda z: np.maximum(z, 0)
    y = relu(X @ ((W + np.outer(p.c, u)) / r).T) @ p.lam
    F = np.hstack([relu(X @ ((W + s / math.sqrt(k) * uh) / r).T) for s in (1.0, -1.0)])
    coef, *_ = np.linalg.lstsq(F, y, rcond=None)
    res2 = (y - F @ coef)**2
    # 5 SE of the mean squared residual, n = 4e5, seed 0; in-sample bias 2k/n * LS is 1.5e-5 of it
    assert abs(res2.mean() - lora.refit_error(p, m)) <= 5 * res2.std() / math.sqrt(n)


# --------------------------------------------------------------------------- lazy floor
def _mc_floor(problem, n=400_000, seed=0):
    k, xi, lam, c = problem.k, problem.xi, problem.lam, problem.c
    s = problem.activation
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, k + 1))
    Z, a = X[:, :k], X[:, k]
    gap = s(Z + xi * c * a[:, None]) @ lam - s(Z) @ lam
    F = lam * s.deriv(Z) * a[:, None]
    coef, *_ = np.linalg.lstsq(F, gap, rcond=None)
    res2 = (gap - F @ coef)**2
    return res2.mean(), res2.std() / math.sqrt(n), np.mean(gap**2)


@pytest.mark.parametrize("act, xi", [("relu", 1.0), ("relu", math.sqrt(6)), ("tanh", 1.0)])
def test_lazy_floor_monte_carlo(act, xi):
    """Linearised-model floor (N0, G = I) against MC least squares of f* - f0 on s'(w_j x)<u, x>."""
    p = lora.Problem.orthonormal(k=4, xi=xi, seed=0, activation=act, normalisation="N0")
    floor = lora.lazy_floor(p)
    mc, se, gap = _mc_floor(p, seed=1)
    assert abs(mc - floor) <= 5 * se  # 5 SE, n = 4e5, seed 1; in-sample LS bias k/n * floor = 1e-5 of it
    assert 0 < floor < gap  # the linearised model helps but cannot reach 0


def test_lazy_floor_requires_n0():
    with pytest.raises(InvalidParameterError, match="N0"):
        lora.lazy_floor(lora.Problem.orthonormal(k=4, xi=1.0, seed=0))
