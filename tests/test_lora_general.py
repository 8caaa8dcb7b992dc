"""popdyn.models.lora.general: the LoRA theory outside A2 (u, u_hat not orthogonal to span W, Figs 4-5).

Oracles: the A2 closed forms of popdyn.models.lora (p = q = 0 must reduce to them to rounding), Monte Carlo
of the per-sample gradient at finite d with explicit vectors (z-scores), and the simulation's geometry.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import popdyn
from popdyn import InvalidParameterError
from popdyn.models import lora
from popdyn.models.lora import GeneralProblem
from popdyn.models.lora.general import (general_drift, general_gradient, general_loss, gradient_second_moment_general,
                                        pair_moments, q_norm)
from popdyn.models.lora.general import _gram

pytestmark = pytest.mark.filterwarnings("ignore::popdyn.RegimeWarning")  # the A2 paper ODE at delta = 0.1

_Z = 4.5  # |z| bound of the Monte Carlo tests: 10 components per case, P(|Z| > 4.5) = 7e-6 each


def _general_state(gp, seed=5, scale=0.5, m=0.2):
    """A consistent (m, q): q = W u_hat with ||Pi_W u_hat|| = scale."""
    q = np.random.default_rng(seed).standard_normal(gp.k)
    return m, scale * q / np.sqrt(q @ gp.G_pinv @ q)


# ---- reduction to A2 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("act", ["relu", "sigmoid", "he3", "quadratic"])
@pytest.mark.parametrize("project", [True, False])
def test_reduces_to_prop4_under_a2(act, project):
    # p = q = 0: dm/dt = lr h(m)(1 - m^2) and Phi of Prop. 4 (1e-12: sums in another order; tanh would be
    # limited to 1e-7 by 48-node Gauss-Hermite, so only activations whose 2-D rule is exact or closed-form)
    P = lora.Problem.random_features(5, 1.3, act, seed=1)
    gp = GeneralProblem(P, np.zeros(5), project=project)
    ms = np.array([-1.0, -0.6, 0.0, 0.35, 0.97])
    h = lora.h(P, ms)
    scale = float(lora.h_bound(P))
    for m, hm in zip(ms, h):
        dm, dq, dc = general_drift(gp, m, lr=1.0, convention="paper")
        assert abs(dm - hm * (1 - m * m)) <= 1e-12 * scale
        assert abs(general_loss(gp, m) - float(lora.population_loss(P, m))) <= 1e-12 * (1 + abs(general_loss(gp, m)))
        assert np.all(dc == 0)


@settings(max_examples=25, deadline=None)
@given(m=st.floats(-1, 1), seed=st.integers(0, 10**6), xi=st.floats(0.2, 4.0))
def test_relu_reduction_property(m, seed, xi):
    P = lora.Problem.random_features(4, xi, "relu", seed=seed)
    dm = general_drift(GeneralProblem(P, np.zeros(4)), m, lr=1.0, convention="paper")[0]
    assert abs(dm - float(lora.h(P, m)) * (1 - m * m)) <= 1e-12 * float(lora.h_bound(P))


def test_second_moment_reduces_to_b0_b1():
    # A2: E||L||^2 = 4[(d-k-2) B0 + B1]; two independent quasi-Monte Carlo estimates (16 Sobol scrambles vs
    # 2^15 scrambled points) agree within 3 % (measured 0.6-1.2 %)
    P = lora.Problem.orthonormal(6, 1.0, "relu", seed=3)
    gp = GeneralProblem(P, np.zeros(6))
    for m in (-0.5, 0.2, 0.9):
        ref = float(lora.gradient_second_moment(P, np.array([m]), d=800)[0][0])
        assert abs(gradient_second_moment_general(gp, m, d=800, n_mc=1 << 15) / ref - 1) < 0.03


# ---- pair moments ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "he3"])
def test_pair_moments_against_monte_carlo(act):
    s_aa, s_bb, s_ab = 1.7, 0.6, -0.55
    k0, k1, k2 = pair_moments(act, s_aa, s_bb, s_ab)
    a = popdyn.activations.get(act)
    L = np.linalg.cholesky([[s_aa, s_ab], [s_ab, s_bb]])
    g = np.random.default_rng(0).standard_normal((400_000, 2)) @ L.T
    A, B = g[:, 0], g[:, 1]
    # E[s(A) s''(B)] by Stein from E[s(A) s'(B) B] = S_ab E[s's'] + S_bb E[s s'']
    for val, samp in ((k0, a(A) * a(B)), (k1, a.deriv(A) * a.deriv(B)),
                      (s_ab * k1 + s_bb * k2, a(A) * a.deriv(B) * B)):
        z = (samp.mean() - val) / (samp.std() / math.sqrt(len(samp)))
        assert abs(z) < _Z, (act, val, samp.mean(), z)


@settings(max_examples=30, deadline=None)
@given(sa=st.floats(0.1, 3), sb=st.floats(0.1, 3), rho=st.floats(-1, 1), c=st.floats(0.2, 5))
def test_relu_pair_moments_are_homogeneous(sa, sb, rho, c):
    # relu(c z) = c relu(z): kappa scales as c^2, kappa_1 is scale free, kappa_2 = E[s(A) delta(B)] scales as c^0
    base = pair_moments("relu", sa**2, sb**2, rho * sa * sb)
    scaled = pair_moments("relu", (c * sa) ** 2, (c * sb) ** 2, c * c * rho * sa * sb)
    np.testing.assert_allclose(scaled, (c * c * base[0], base[1], base[2]), rtol=1e-12, atol=1e-15)


def test_pair_moments_rejects_zero_variance():
    with pytest.raises(InvalidParameterError, match="s_aa"):
        pair_moments("relu", 0.0, 1.0, 0.0)


# ---- the general gradient against Monte Carlo at finite d -------------------------------------------------
def _mc_gradient(gp, m, q, c_hat, n, seed):
    """Per-sample <grad_u_hat L, basis> and dL/dc_hat with explicit vectors (a root of Gamma), mean and SE."""
    k, P = gp.k, gp.problem
    L = np.linalg.cholesky(_gram(gp, m, q))
    Wv, u, uh = L[:k], L[k], L[k + 1]
    x = np.random.default_rng(seed).standard_normal((n, k + 2))
    rh = np.sqrt(1 + P.xi**2 * c_hat**2)
    A = (x @ Wv.T + P.xi * P.c * (x @ u)[:, None]) / P.r
    B = (x @ Wv.T + P.xi * c_hat * (x @ uh)[:, None]) / rh
    s, lam = P.activation, P.lam
    res = s(A) @ lam - s(B) @ lam
    F = -2 * res * (s.deriv(B) @ (lam * P.xi * c_hat / rh))
    dpre = P.xi / rh * ((x @ uh)[:, None] - B * P.xi * c_hat / rh)
    Z = np.c_[np.c_[x @ Wv.T, x @ u, x @ uh] * F[:, None], -2 * res[:, None] * lam * s.deriv(B) * dpre, res**2]
    return Z.mean(0), Z.std(0) / math.sqrt(n)


@pytest.mark.parametrize("act", ["relu", "sigmoid"])
def test_general_gradient_against_monte_carlo(act):
    # u with ||Pi_W u|| = 0.6, u_hat with ||Pi_W u_hat|| = 0.5, c_hat not unit: every term of the derivation
    P = lora.Problem.random_features(4, 1.5, act, seed=2)
    gp = GeneralProblem.from_alpha(P, 0.6, seed=3, project=False)
    m, q = _general_state(gp)
    c_hat = 1.3 * P.c_hat
    g, grad_c, Gam = general_gradient(gp, m, q, c_hat)
    mean, se = _mc_gradient(gp, m, q, c_hat, 600_000, seed=1)
    theory = np.r_[Gam @ g, grad_c, general_loss(gp, m, q, c_hat)]
    z = (mean - theory) / se
    assert np.all(np.abs(z) < _Z), z


def test_general_gradient_falsified_by_dropping_the_variance_term(monkeypatch):
    # the kappa_2 (E[s s'']) term is what a naive "A2 formula with general overlaps" misses: dropping it moves
    # the gradient far outside the Monte Carlo error (measured max |z| 38 at n = 2e5)
    P = lora.Problem.random_features(4, 1.5, "relu", seed=2)
    gp = GeneralProblem.from_alpha(P, 0.6, seed=3, project=False)
    m, q = _general_state(gp)
    g, _, Gam = general_gradient(gp, m, q)
    mean, se = _mc_gradient(gp, m, q, P.c_hat, 200_000, seed=1)
    import popdyn.models.lora.general as G
    orig = G.pair_moments
    monkeypatch.setattr(G, "pair_moments", lambda *a, **k: (lambda r: (r[0], r[1], 0 * r[2]))(orig(*a, **k)))
    g_wrong = G.general_gradient(gp, m, q)[0]
    z_wrong = (mean[:gp.k + 2] - Gam @ g_wrong) / se[:gp.k + 2]
    assert np.max(np.abs(z_wrong)) > 5 * _Z


def test_projected_drift_is_h_times_reachable_part():
    # projected algorithm, q = 0: dm/dt = -lr <Pi_perp g, u> + lr m <g, u_hat> with ||Pi_perp u||^2 = 1 - alpha^2,
    # so m = +-sqrt(1 - alpha^2) is a fixed point of the population flow
    P = lora.Problem.orthonormal(6, 1.0, "relu", seed=0)
    gp = GeneralProblem.from_alpha(P, 0.5, seed=1)
    s = math.sqrt(1 - 0.25)
    for m in (-s, s):
        assert abs(general_drift(gp, m, lr=1.0, convention="paper")[0]) < 1e-13
    assert abs(general_drift(gp, 0.3, lr=1.0, convention="paper")[0]) > 1e-3


def test_second_moment_against_direct_monte_carlo():
    # E||P F x||^2 at d = k + 12 with explicit x (unprojected: P = I - u_hat u_hat^T), against the split
    # (d - rank) E F^2 + E[F^2 ||P y||^2]; 3 % (the estimator of the split has ~1 % spread)
    P = lora.Problem.random_features(4, 1.2, "sigmoid", seed=4)
    gp = GeneralProblem.from_alpha(P, 0.4, seed=5, project=False)
    m, q = _general_state(gp, scale=0.3)
    d = gp.k + 14
    k = gp.k
    L = np.linalg.cholesky(_gram(gp, m, q))
    B = np.zeros((k + 2, d))
    B[:, :k + 2] = L
    x = np.random.default_rng(2).standard_normal((400_000, d))
    Wv, u, uh = B[:k], B[k], B[k + 1]
    A_ = (x @ Wv.T + P.xi * P.c * (x @ u)[:, None]) / P.r
    B_ = (x @ Wv.T + P.xi * P.c_hat * (x @ uh)[:, None]) / P.r_hat
    s, lam = P.activation, P.lam
    F = -2 * (s(A_) @ lam - s(B_) @ lam) * (s.deriv(B_) @ (lam * P.xi * P.c_hat / P.r_hat))
    norm2 = F**2 * (np.sum(x * x, axis=1) - (x @ uh) ** 2)
    direct = norm2.mean()
    assert abs(gradient_second_moment_general(gp, m, q, d=d, n_mc=1 << 15) / direct - 1) < 0.03


# ---- predict and simulate -------------------------------------------------------------------------------
def test_predict_reduces_to_the_a2_predict():
    # paper convention: the same ODE, so the same m(t) to the solvers' tolerances (measured 3e-7)
    P = lora.Problem.orthonormal(6, 1.0, "relu", seed=0)
    kw = dict(d=500, lr=0.1 / 500, steps=5000, n_points=11, convention="paper")
    a = popdyn.predict(P, **kw)
    b = popdyn.predict(GeneralProblem(P, np.zeros(6)), **kw)
    np.testing.assert_allclose(b["m"], a["m"], atol=1e-5)
    np.testing.assert_allclose(b["loss"], a["loss"], atol=1e-5)


def test_predict_saturates_below_the_reachable_overlap():
    gp = GeneralProblem.from_alpha(lora.Problem.orthonormal(6, 1.0, "relu", seed=0), 0.6, seed=2)
    pred = popdyn.predict(gp, d=400, lr=0.2 / 400, steps=400 * 60, n_points=5, convention="paper")
    assert pred.meta["m_max"] == pytest.approx(0.8)
    assert 0.75 < abs(pred["m"][-1]) <= 0.8 + 1e-9


def test_simulate_general_reduces_to_simulate_under_a2():
    # alpha = 0, projected: the same draws and the same updates as the A2 simulation (float64 rounding)
    pytest.importorskip("torch")
    P = lora.Problem.orthonormal(4, 1.0, "relu", seed=0)
    kw = dict(d=40, lr=0.1 / 40, steps=400, seeds=3, n_points=5, m0=0.1)
    a = popdyn.simulate(P, **kw)
    b = popdyn.simulate(GeneralProblem(P, np.zeros(4)), **kw)
    np.testing.assert_allclose(b["m"], a["m"], atol=1e-12)
    np.testing.assert_allclose(b["loss"], a["loss"], rtol=1e-12)


def test_simulate_general_initial_overlaps_are_exact():
    pytest.importorskip("torch")
    P = lora.Problem.random_features(4, 1.0, "relu", seed=0)
    gp = GeneralProblem.from_alpha(P, 0.5, seed=1, project=False)
    m0, q0 = _general_state(gp, scale=0.3, m=0.25)
    sim = popdyn.simulate(gp, d=30, lr=0.01, steps=20, seeds=3, n_points=3, m0=m0, q0=q0)
    np.testing.assert_allclose(sim["m"][:, 0], m0, atol=1e-12)
    np.testing.assert_allclose(sim["q_norm"][:, 0], float(q_norm(gp, q0)), atol=1e-12)
    gpp = GeneralProblem(P, gp.p, project=True)
    simp = popdyn.simulate(gpp, d=30, lr=0.05, steps=200, seeds=3, n_points=3, m0=0.5)
    assert np.all(np.abs(simp["m"]) <= math.sqrt(1 - gp.alpha**2) + 1e-12)
    assert np.all(simp["q_norm"] == 0)


# ---- validation ---------------------------------------------------------------------------------------
def test_invalid_parameters():
    P = lora.Problem.orthonormal(3, 1.0, "relu", seed=0)
    with pytest.raises(InvalidParameterError, match="'p'"):
        GeneralProblem(P, np.array([1.0, 0.0, 0.0]))            # alpha = 1: no part of u outside span W
    with pytest.raises(InvalidParameterError, match="'p'"):
        GeneralProblem(P, np.zeros(4))
    with pytest.raises(InvalidParameterError, match="'alpha'"):
        GeneralProblem.from_alpha(P, 1.0)
    with pytest.raises(InvalidParameterError, match="'problem'"):
        GeneralProblem(lora.Problem.orthonormal(3, 1.0, "relu", seed=0, normalisation="N0"), np.zeros(3))
    with pytest.raises(InvalidParameterError, match="'problem'"):
        GeneralProblem(lora.Problem.orthonormal(3, 1.0, "abs", seed=0), np.zeros(3))
    gp = GeneralProblem(P, np.zeros(3))
    with pytest.raises(InvalidParameterError, match="'q'"):
        general_loss(gp, 0.1, np.ones(3) * 0.1)                # projected: q must be 0
    with pytest.raises(InvalidParameterError, match="'d'"):
        general_drift(gp, 0.1, lr=0.1)
    with pytest.raises(InvalidParameterError, match="'m0'"):
        popdyn.predict(GeneralProblem.from_alpha(P, 0.8), d=50, lr=1e-3, steps=10, m0=0.7)
    with pytest.raises(InvalidParameterError, match="'q0'"):
        popdyn.predict(gp, d=50, lr=1e-3, steps=10, q0=np.zeros(3))


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "gelu", "softplus", "erf", "exp", "quadratic"])
def test_compiled_pair_moments_equal_the_numpy_rule(name, monkeypatch):
    """popdyn's own smooth activations take the same product rule in one compiled pass: kappa, kappa_1, kappa_2 equal
    the numpy evaluation of the rule to 1e-13 relative at random covariances (variances 0.1-4, any correlation), the
    activation rescaled by 0.7 too."""
    from popdyn import _pointwise, activations
    rng = np.random.default_rng(1)
    saa, sbb = rng.uniform(0.1, 4, 30), rng.uniform(0.1, 4, 30)
    sab = rng.uniform(-1, 1, 30) * np.sqrt(saa * sbb)
    for act in (activations.get(name), activations.get(name).rescaled(0.7)):
        fast = lora.pair_moments(act, saa, sbb, sab)
        with monkeypatch.context() as m:
            m.setattr(_pointwise, "code", lambda a: None)
            ref = lora.pair_moments(act, saa, sbb, sab)
        for f, g in zip(fast, ref):
            np.testing.assert_allclose(f, g, rtol=1e-13, atol=1e-13 * np.abs(g).max())
