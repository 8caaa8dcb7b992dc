"""The gradient-feature framework ([Shi24] ch. 3): symmetric init, exact first step, cones, nice sets, the feature
probability, Lemma B.6's second layer, the frozen optimum, network risks, the Problem and ``popdyn.predict``."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

import popdyn
from popdyn import InvalidParameterError
from popdyn.models.gradient_features import LOSSES, GaussianMixture, xor_mixture
from popdyn.models.gradient_features.framework import (cone_membership, feature_probability, first_step,
                                                       good_second_layer, loss_slope, nice_set, opt_frozen,
                                                       population_loss, symmetric_init,
                                                       uniform_parity_second_layer)
from popdyn.models.gradient_features.bounds import main_theorem
from popdyn.models.gradient_features.problem import Problem

from .strategies import gradient_features_problems


def _two_cluster(d=6):
    """A mixture with E[yx] != 0 (unequal weights and means): the twin identity then has its E[yx] term."""
    mus = np.zeros((2, d))
    mus[0, 0], mus[1, 1] = 2.0, -1.5
    return GaussianMixture(mus, np.array([1.0, 0.7]), np.array([0.6, 0.4]), np.array([1.0, -1.0]))


def _g(a, W, b, X):
    return np.maximum(X @ W.T - b, 0.0) @ a


# ---- symmetric init (3.9) -----------------------------------------------------------------------------------------

@given(st.integers(1, 6), st.integers(1, 5), st.sampled_from(["gauss", "sign"]), st.integers(0, 2**31))
def test_symmetric_init_mirrors_and_zero_network(d, m, law, seed):
    a, W, b = symmetric_init(d, m, 0.7, 1.3, 0.5, seed, law=law)
    assert a.shape == (4 * m,) and W.shape == (4 * m, d) and b.shape == (4 * m,)
    assert np.array_equal(a[m:2 * m], -a[:m]) and np.array_equal(W[m:2 * m], -W[:m])
    assert np.array_equal(b[m:2 * m], -b[:m]) and np.array_equal(a[2 * m:], -a[:2 * m])
    assert np.array_equal(W[2 * m:], W[:2 * m]) and np.array_equal(b[2 * m:], b[:2 * m])
    X = np.random.default_rng(seed).standard_normal((50, d)) * 3
    scale = np.abs(a)[None, :] @ np.abs(np.maximum(X @ W.T - b, 0.0)).T
    assert np.all(np.abs(_g(a, W, b, X)) <= 1e-13 * (1.0 + scale.ravel()))   # 1e-13: float64 pair cancellation
    if law == "sign":
        assert set(np.abs(a).tolist()) == {0.7} and set(np.abs(W).ravel().tolist()) == {1.3}


def test_symmetric_init_bias_array_and_errors():
    a, W, b = symmetric_init(3, 2, 1.0, 1.0, np.array([-0.5, 0.25]), 0, law="sign")
    assert b.tolist() == [-0.5, 0.25, 0.5, -0.25, -0.5, 0.25, 0.5, -0.25]
    for kw, name in ((dict(d=0), "'d'"), (dict(m=0), "'m'"), (dict(sigma_a=-1.0), "'sigma_a'"),
                     (dict(b_tilde=0.0), "'b_tilde'"), (dict(b_tilde=np.ones(3)), "'b_tilde'"),
                     (dict(law="uniform"), "'law'"), (dict(rng=-1), "'rng'")):
        args = dict(d=3, m=2, sigma_a=1.0, sigma_w=1.0, b_tilde=0.5) | kw
        with pytest.raises(InvalidParameterError, match=name):
            symmetric_init(**args)


# ---- the first step (B.16-B.17) -----------------------------------------------------------------------------------

@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_sample_step_is_minus_eta_gradient_by_finite_differences(loss):
    """W1 = -eta1 grad_W L~ and a1 = -eta1 grad_a L~ (lambda = 1/eta1 erases W0), against central differences of
    the empirical loss at a non-symmetric init (so that l'(y g) is not l'(0))."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((300, 4)), np.sign(rng.standard_normal(300))
    a0, W0, b = rng.standard_normal(5), rng.standard_normal((5, 4)), rng.standard_normal(5) * 0.3
    a1, W1 = first_step(None, a0, W0, b, 0.7, loss, X=X, y=y)
    L = lambda a, W: LOSSES[loss](y * _g(a, W, b, X)).mean()
    h = 1e-6
    for i, j in [(0, 0), (2, 3), (4, 1)]:
        E = np.zeros_like(W0)
        E[i, j] = h
        fd = (L(a0, W0 + E) - L(a0, W0 - E)) / (2 * h)
        assert abs(W1[i, j] + 0.7 * fd) <= 1e-6 * (1 + abs(fd))     # 1e-6: O(h^2) + rounding/h, h = 1e-6
    e = np.zeros(5)
    e[3] = h
    fd = (L(a0 + e, W0) - L(a0 - e, W0)) / (2 * h)
    assert abs(a1[3] + 0.7 * fd) <= 1e-6 * (1 + abs(fd))


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_population_step_matches_sample_step_within_monte_carlo_error(loss):
    """Closed-form G, A against the empirical step on n = 2e5 samples: every entry within 5 SE."""
    gm = _two_cluster()
    a0, W0, b = symmetric_init(6, 3, 1.0, 1.0, 0.8, 1)
    a1, W1 = first_step(gm, a0, W0, b, 0.5, loss)
    X, y = gm.sample(200_000, np.random.default_rng(2))
    a1s, W1s = first_step(gm, a0, W0, b, 0.5, loss, X=X, y=y)
    c = 0.5 * loss_slope(loss)
    act = (X @ W0.T > b)
    se_G = np.stack([(y[:, None] * X * act[:, [i]]).std(0) for i in range(12)]) / math.sqrt(len(y))
    se_A = (y[:, None] * np.maximum(X @ W0.T - b, 0.0)).std(0) / math.sqrt(len(y))
    assert np.all(np.abs(W1s - W1) <= 5 * c * np.abs(a0)[:, None] * se_G + 1e-12)   # 5 SE, 288 entries
    assert np.all(np.abs(a1s - a1) <= 5 * c * se_A + 1e-12)


@settings(max_examples=15)
@given(st.integers(1, 4), st.integers(0, 2**31), st.floats(0.05, 3.0))
def test_first_step_symmetry_identities(m, seed, eta1):
    """Lemma B.71 with the corrected twin (docs/gradient_features.md): w_{i+2m} = -w_i, a_{i+2m} = a_i and
    w_{i+m} = w_i - eta1 |l'(0)| a_i E[yx], for the population and for a sample (with its own mean)."""
    gm = _two_cluster()
    a0, W0, b = symmetric_init(6, m, 1.0, 1.0, 0.6, seed)
    X, y = gm.sample(500, np.random.default_rng(seed))
    for (a1, W1), Eyx in ((first_step(gm, a0, W0, b, eta1), gm.E_yx()),
                          (first_step(gm, a0, W0, b, eta1, X=X, y=y), (y[:, None] * X).mean(0))):
        assert np.array_equal(W1[2 * m:], -W1[:2 * m]) and np.array_equal(a1[2 * m:], a1[:2 * m])
        twin = W1[:m] - eta1 * a0[:m, None] * Eyx
        assert np.allclose(W1[m:2 * m], twin, rtol=0, atol=1e-12 * (1 + np.abs(W1).max()))   # rounding


@given(st.floats(0.1, 10.0), st.integers(0, 2**31))
def test_first_step_erases_init_scale(c, seed):
    """No additive W0 term: W1 is invariant under (W0, b~) -> c (W0, b~) and linear in a0."""
    gm = _two_cluster()
    a0, W0, b = symmetric_init(6, 2, 1.0, 1.0, 0.6, seed)
    a1, W1 = first_step(gm, a0, W0, b, 0.3)
    a1c, W1c = first_step(gm, a0, c * W0, c * b, 0.3)
    assert np.allclose(W1c, W1, rtol=1e-9, atol=1e-12)                 # 1e-9: G(cw, cb) = G(w, b) to rounding
    a2, W2 = first_step(gm, 2 * a0, W0, b, 0.3)
    assert np.allclose(W2, 2 * W1, rtol=1e-14, atol=0) and np.allclose(a2, a1, rtol=1e-14, atol=0)


def test_first_step_errors():
    gm = xor_mixture(4, 1.0)
    a0, W0, b = symmetric_init(4, 2, 1.0, 1.0, 0.5, 0)
    with pytest.raises(InvalidParameterError, match="'a0'"):
        first_step(gm, a0 + 0.1, W0, b, 1.0)                           # not the symmetric init
    with pytest.raises(InvalidParameterError, match="'X' and 'y'"):
        first_step(gm, a0, W0, b, 1.0, X=np.zeros((3, 4)))
    with pytest.raises(InvalidParameterError, match="'y'"):
        first_step(gm, a0, W0, b, 1.0, X=np.zeros((3, 4)), y=np.array([1.0, 0.0, -1.0]))
    with pytest.raises(InvalidParameterError, match="'eta1'"):
        first_step(gm, a0, W0, b, 0.0)
    with pytest.raises(InvalidParameterError, match="'loss'"):
        first_step(gm, a0, W0, b, 1.0, loss="square")


def test_loss_slope_against_finite_differences():
    for loss in ("hinge", "logistic"):
        fd = (LOSSES[loss](1e-6) - LOSSES[loss](-1e-6)) / 2e-6
        assert abs(loss_slope(loss) + fd) <= 1e-9                        # O(h^2) for the smooth logistic
        assert float(LOSSES[loss](0.0)) == 1.0
    assert loss_slope("logistic") == 1 / (2 * math.log(2))


# ---- cones, nice sets, feature probability ------------------------------------------------------------------------

@given(st.lists(st.floats(-5, 5), min_size=3, max_size=3), st.floats(-4, 4).filter(lambda x: abs(x) > 1e-3),
       st.floats(0.01, 0.99))
def test_cone_scale_invariance_and_symmetry(w, rho, gamma):
    w, D = np.array([w]), np.array([0.6, 0.8, 0.0])
    inside = cone_membership(w, D, gamma)
    assert cone_membership(rho * w, D, gamma)[0] == inside[0] == cone_membership(w, -D, gamma)[0]
    assert not cone_membership(np.zeros((1, 3)), D, gamma)[0]
    assert cone_membership(w, np.stack([D, -D]), gamma).shape == (1, 2)


def test_cone_linf_is_signed_and_errors():
    D = np.array([1.0, 1.0]) / math.sqrt(2)
    assert cone_membership([[1.0, 1.1], [-1.0, -1.0]], D, 0.1, "linf").tolist() == [True, False]
    with pytest.raises(InvalidParameterError, match="'D'"):
        cone_membership([[1.0, 0.0]], [2.0, 0.0], 0.1)
    with pytest.raises(InvalidParameterError, match="'gamma'"):
        cone_membership([[1.0, 0.0]], [1.0, 0.0], 1.0)


def _xor_setup(d=16, m=400, seed=0):
    gm = xor_mixture(d, 1.0)
    bt = math.sqrt(d * math.log(math.log(d)))
    a0, W0, b = symmetric_init(d, m, 1.0, 1.0, bt, seed)
    return gm, bt, a0, W0, b


def test_nice_set_equals_its_definition_on_G():
    """(3.14) on w^(1) = eta |l'(0)| a0 G is: G in the l2 cone, a0 <G, D> > 0, ||G|| >= B_G, sign b = s."""
    gm, bt, a0, W0, b = _xor_setup(m=300)
    a1, W1 = first_step(gm, a0, W0, b, 0.2, "logistic")
    G = gm.simplified_gradient(W0[:600], b[:600])
    D, gamma, B_G = np.eye(16)[1], 0.25, 0.8
    cos = G @ D / np.linalg.norm(G, axis=1)
    ok = (np.abs(cos) > 1 - gamma) & (a0[:600] * cos > 0) & (np.linalg.norm(G, axis=1) >= B_G)
    for s in (1, -1):
        got = nice_set(W1, a0, b, D, s, gamma, B_G, 0.2, "logistic")
        assert len(got) > 0 and np.array_equal(got, np.flatnonzero(ok & (np.sign(b[:600]) == s)))


def test_nice_count_is_binomial_m_p_over_2():
    """Lemma B.5: under (3.9) each base neuron is nice w.p. exactly p/2 (l2 cone); z <= 4 with both errors."""
    gm, bt, a0, W0, b = _xor_setup(m=3000, seed=5)
    a1, W1 = first_step(gm, a0, W0, b, 1.0)
    D, gamma, B_G = np.eye(16)[0], 0.25, 0.8
    frac = len(nice_set(W1, a0, b, D, 1, gamma, B_G, 1.0)) / 3000
    p, _ = feature_probability(gm, D, 1, gamma, B_G, bt, 40_000, 7)
    sd = math.sqrt(p / 2 * (1 - p / 2) / 3000 + p * (1 - p) / 40_000 / 4)
    assert p > 0.02 and abs(frac - p / 2) <= 4 * sd


def test_feature_probability_monotone_and_interval():
    gm, bt, *_ = _xor_setup()
    D = np.eye(16)[0]
    ps = [feature_probability(gm, D, 1, g, 0.5, bt, 3000, 1)[0] for g in (0.05, 0.2, 0.5)]
    assert ps[0] <= ps[1] <= ps[2]                                     # same draws: monotone in gamma
    qs = [feature_probability(gm, D, 1, 0.2, B, bt, 3000, 1)[0] for B in (0.0, 0.8, 1.2)]
    assert qs[0] >= qs[1] >= qs[2]                                     # non-increasing in B_G
    assert feature_probability(gm, D, 1, 0.2, 0.5, bt, 3000, 1, B_G1=1e9)[0] == ps[1]
    p, (lo, hi) = feature_probability(gm, D, 1, 0.2, 0.8, bt, 3000, 1)
    ci = stats.binomtest(round(p * 3000), 3000).proportion_ci(0.95, method="exact")
    assert lo <= p <= hi and abs(lo - ci.low) < 1e-12 and abs(hi - ci.high) < 1e-12   # scipy's Clopper-Pearson
    assert feature_probability(gm, -D, 1, 0.2, 0.8, bt, 3000, 1)[0] == p              # (D, s) in S => (-D, s)


# ---- Lemma B.6 second layer ---------------------------------------------------------------------------------------

def test_good_second_layer_reproduces_gstar_from_exact_copies():
    """First-step weights that are exact rescaled copies (b_i/beta_j) w*_j give g~ = g* (B.36-B.52 with
    gamma, eps_a -> 0); a target with |b*| < B_eps uses beta = B_eps (shifted by at most B_eps)."""
    rng = np.random.default_rng(3)
    d, m = 5, 6
    Ws = np.linalg.qr(rng.standard_normal((d, 3)))[0].T                 # 3 orthonormal targets
    a_s, b_s = np.array([1.5, -0.7, 2.0]), np.array([0.8, 1.2, -0.9])
    a0, _, b = symmetric_init(d, m, 0.01, 1.0, 1.0, 0)                  # b = +1 on [0, m), -1 on [m, 2m)
    W1 = np.zeros((4 * m, d))                                            # zero rows lie in no cone
    W1[0:2], W1[2:4] = Ws[0] / 0.8, Ws[1] / 1.2                          # ||w|| beta/|b_i| = 1 for b* > 0
    W1[m:m + 2] = Ws[2] / 0.9                                            # s = -1 target on the -b~ block
    W1[2 * m:] = -W1[:2 * m]
    a_t, sets = good_second_layer(W1, a0, b, (a_s, Ws, b_s), 1e-9, 0.0, 0.1, 1e-9, 1.0)
    assert [len(S) for S in sets] == [2, 2, 2]
    X = rng.standard_normal((200, d)) * 2
    assert np.allclose(_g(a_t, W1, b, X), _g(a_s, Ws, b_s, X), rtol=0, atol=1e-12)


def test_good_network_on_xor_approaches_opt():
    """XOR, d = 32, m = 512, eps_a = 0.25, B_eps = B_b/2: Lemma B.6's network has risk 0.048 (seed 0; 0.05-0.12 over
    seeds 1-3) against OPT(g*) = 0.025 (exact quadrature) and 1 for g = 0; B.52 itself is vacuous here (~14)."""
    P = Problem.xor(d=32, width=512, seed=0)
    a0, W0, b = P.params0
    a1, W1 = first_step(P.model, a0, W0, b, P.step_size)
    gamma, B_G, _, _ = P.cone
    a_t, sets = good_second_layer(W1, a0, b, P.gstar, gamma, B_G, P.case["B_b"] / 2, 0.25, P.step_size)
    opt = P.model.ground_truth_loss(tau=P.case["tau_tilde"])[0]
    val, se = population_loss(P.model, a_t, W1, b, "hinge", 20_000, 0)
    assert all(len(S) for S in sets) and abs(opt - 0.02477) < 1e-5 and val <= opt + 0.05


# ---- frozen optimum and risks -------------------------------------------------------------------------------------

def _tiny(seed=0, n=30, M=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.sign(X[:, 0] * X[:, 1] + 0.1)
    W, b = rng.standard_normal((M, 3)), rng.standard_normal(M) * 0.3
    return X, y, W, b


@pytest.mark.parametrize("loss,B", [("hinge", 0.5), ("hinge", 2.0), ("logistic", 0.5), ("logistic", 2.0)])
def test_opt_frozen_ball_against_slsqp(loss, B):
    """The dual solution against SLSQP on the primal (hinge as an epigraph program); the certificate holds."""
    X, y, W, b = _tiny()
    a, v, gap = opt_frozen(X, y, W, b, B, loss)
    F = np.maximum(X @ W.T - b, 0.0)
    n, M = F.shape
    ball = {"type": "ineq", "fun": lambda z: B * B - z[:M] @ z[:M]}
    if loss == "hinge":
        cons = [ball, {"type": "ineq", "fun": lambda z: z[M:] - 1.0 + y * (F @ z[:M])},
                {"type": "ineq", "fun": lambda z: z[M:]}]
        res = optimize.minimize(lambda z: z[M:].mean(), np.concatenate([np.zeros(M), np.ones(n)]), method="SLSQP",
                                constraints=cons, options={"ftol": 1e-12, "maxiter": 500})
    else:
        res = optimize.minimize(lambda z: LOSSES[loss](y * (F @ z)).mean(), np.zeros(M), method="SLSQP",
                                constraints=[ball], options={"ftol": 1e-13, "maxiter": 500})
    assert res.success and np.linalg.norm(a) <= B * (1 + 1e-12)
    assert 0.0 <= gap <= 1e-5 and abs(v - res.fun) <= 1e-5            # 1e-5: SLSQP ftol and the dual's gap


def test_opt_frozen_lp_and_errors():
    X, y, W, b = _tiny(1, 60, 8)
    a, v, gap = opt_frozen(X, y, W, b)
    F = np.maximum(X @ W.T - b, 0.0)
    assert gap == 0.0 and abs(v - np.maximum(0, 1 - y * (F @ a)).mean()) < 1e-12
    for c in np.random.default_rng(0).standard_normal((20, 8)):       # no second layer does better
        assert v <= np.maximum(0, 1 - y * (F @ c)).mean() + 1e-9
    with pytest.raises(InvalidParameterError, match="'B_a2'"):
        opt_frozen(X, y, W, b, loss="logistic")
    with pytest.raises(InvalidParameterError, match="'y'"):
        opt_frozen(X, np.zeros(60), W, b)


def test_population_loss_against_exact_gstar_risk():
    gm = xor_mixture(16, 1.0)
    gs = gm.ground_truth(1.0)
    exact = gm.ground_truth_loss(1.0)[0]
    val, se = population_loss(gm, *gs, "hinge", 200_000, 3)
    assert abs(val - exact) <= 5 * se                                  # 5 SE, seed 3
    a, W, b = symmetric_init(16, 2, 1.0, 1.0, 1.0, 0)
    assert population_loss(gm, 0 * a, W, b, "error", 1000)[0] == 0.5   # g = 0: every point a tie
    assert population_loss(gm, 0 * a, W, b, "logistic", 1000) == (1.0, 0.0)


# ---- Lemma B.54: uniform parity ---------------------------------------------------------------------------------

def _cube(d):
    return np.array(list(itertools.product([-1.0, 1.0], repeat=d)))


@settings(max_examples=25)
@given(st.sampled_from([2, 4, 6, 8]), st.floats(0.1, 5.0), st.lists(st.integers(1, 4), min_size=8, max_size=8),
       st.integers(0, 2))
def test_uniform_parity_second_layer_is_c_chi_without_noise(k, c, counts, extra):
    """Noise-free good neurons (w_A = sigma 1_A/(2k), 0 off A), any multiplicity per (sign, bias): enumeration of
    {+-1}^(k+extra) gives g = c chi_A exactly (1e-12 relative), and the norms obey the formulas (<= 8k, 8k sqrt(k) at
    c = 2)."""
    d, h = k + extra, k // 2
    betas = [-(k - 1) / k] + [j / k for j in range(h)]
    rows, b = [], []
    for t, (sg, beta) in enumerate(itertools.product((1.0, -1.0), betas)):
        w = np.zeros(d)
        w[:k] = sg / (2 * k)
        rows += [w] * counts[t % 8]
        b += [beta] * counts[t % 8]
    rows.append(np.r_[np.ones(k - 1), -1.0, np.zeros(extra)] / (2 * k))       # mixed signs on A: not good
    b.append(0.0)
    W1, b = np.array(rows), np.array(b)
    a, sets = uniform_parity_second_layer(W1, b, np.arange(k), c)
    assert all(len(S) for S in sets) and a[-1] == 0.0
    X = _cube(d)
    y = np.prod(X[:, :k], axis=1)
    assert np.allclose(y * _g(a, W1, b, X), c, rtol=1e-12, atol=0)
    assert np.abs(a).max() <= (2 if k == 2 else 4) * c * k * (1 + 1e-12)
    assert a @ a <= c**2 * k**2 * (16 * k - 24 + 1 / (2 * (k - 1) ** 2)) * (1 + 1e-12)
    if c == 2.0:
        assert np.abs(a).max() <= 8 * k and np.linalg.norm(a) <= 8 * k * math.sqrt(k)


@pytest.mark.parametrize("d,k,m,seed", [(15, 2, 24, 1), (13, 2, 24, 0), (13, 4, 240, 1)])
def test_uniform_parity_second_layer_on_the_exact_first_step(d, k, m, seed):
    """B.479 init at the lemma's width m >= k 2^k log(k/delta) (delta = 0.1), exact hinge step, enumeration of the
    cube: every (sign, bias) set is filled, ||a~||_inf <= 8k, ||a~||_2 <= 8k sqrt(k), ||relu(W1 x - b)||_inf <= d + 1,
    and y g(x) >= 2 - sum_i |a~_i| |nu_i(x)| at every x. At k = 2, d >= 13 the off-A noise is below 1/||a~||_1 on
    (almost) all x: the exact hinge loss is < 1e-3; at k = 4, d = 13 the lemma's d >= Omega(k^4 log) fails and so
    does the loss (recorded, not asserted small)."""
    assert m >= k * 2**k * math.log(k / 0.1)
    P = Problem.uniform_parity(d=d, k=k, width=m, seed=seed)
    a0, W0, b = P.params0
    _, W1 = first_step(P.model, a0, W0, b, P.step_size)
    A = P.model.subset
    a, sets = uniform_parity_second_layer(W1, b, A)
    assert len(sets) == 2 * (k // 2 + 1) and all(len(S) for S in sets)
    assert np.abs(a).max() <= 8 * k and np.linalg.norm(a) <= 8 * k * math.sqrt(k)
    X = _cube(d)
    y = np.prod(X[:, A], axis=1)
    H = np.maximum(X @ W1.T - b, 0.0)
    assert H.max() <= d + 1
    sigma = np.sign(W1[:, A[0]])
    nu = X @ W1.T - np.outer(X[:, A].sum(1), sigma / (2 * k))
    margin = y * (H @ a)
    assert np.all(margin >= 2.0 - np.abs(nu) @ np.abs(a) - 1e-12)
    loss = np.maximum(0.0, 1.0 - margin).mean()
    assert loss <= np.maximum(0.0, np.abs(nu) @ np.abs(a) - 1.0).mean() + 1e-12
    if k == 2:
        assert loss < 1e-3 and np.all(margin > 0)


def test_uniform_parity_second_layer_at_larger_d_by_monte_carlo():
    """k = 4 beyond enumeration (d = 101, m = 240, seed 1): the off-A noise ~ sqrt(d) (k-1)/(2k(d-k)) now sits well
    inside the margin: the hinge risk is 0.0023 +- 0.0001 (20000 samples), asserted < 0.005 (> 20 SE); the 0-1 error
    is 0 on the sample. (At d = 13 the same construction has risk 0.58: the lemma's d >= Omega(k^4 log) matters.)"""
    P = Problem.uniform_parity(d=101, k=4, width=240, seed=1)
    a0, W0, b = P.params0
    _, W1 = first_step(P.model, a0, W0, b, P.step_size)
    a, sets = uniform_parity_second_layer(W1, b, P.model.subset)
    assert all(len(S) for S in sets) and np.abs(a).max() <= 32 and np.linalg.norm(a) <= 64
    loss, se = population_loss(P.model, a, W1, b, "hinge", 20_000, 1)
    assert loss < 0.005 and se < 5e-4
    assert population_loss(P.model, a, W1, b, "error", 20_000, 1)[0] == 0.0


def test_uniform_parity_second_layer_errors():
    W1, b = np.zeros((2, 5)), np.zeros(2)
    for A in ([0], [0, 1, 2], [0, 0], [0, 7], [0.0, 1.0]):
        with pytest.raises(InvalidParameterError, match="'A'"):
            uniform_parity_second_layer(W1, b, A)
    with pytest.raises(InvalidParameterError, match="'margin'"):
        uniform_parity_second_layer(W1, b, [0, 1], 0.0)
    with pytest.raises(InvalidParameterError, match="'b'"):
        uniform_parity_second_layer(W1, np.zeros(3), [0, 1])


# ---- Problem and predict ------------------------------------------------------------------------------------------

def test_problem_constructors_and_validation():
    for P in (Problem.xor(d=8, width=4), Problem.structured_parity(d=9, width=4),
              Problem.uniform_parity(d=9, k=2, width=4), Problem.linear(d=16, width=4, rho=1.5)):
        a0, W0, b = P.params0
        assert W0.shape == (16, P.d) and repr(P).startswith("gradient_features.Problem(")
        assert np.array_equal(Problem(**{k: getattr(P, k) for k in P._constraints}).params0[1], W0)   # seeded
    for kw, name in ((dict(data="gauss"), "'data'"), (dict(data="linear", beta=2.0, rho=1.0), "'rho'"),
                     (dict(data="linear", beta=0.0), "'beta'"), (dict(d=2), "'d'"), (dict(width=0), "'width'"),
                     (dict(loss="mse"), "'loss'"), (dict(sigma_B=-1.0), "'sigma_B'"),
                     (dict(lr_first=0.0), "'lr_first'")):
        with pytest.raises(InvalidParameterError, match=name):
            Problem(**kw)
    with pytest.raises(InvalidParameterError, match="'gamma'"):
        Problem.structured_parity(tau=2.0)                             # d^-(tau-2) = 1: not a cone width
    with pytest.raises(InvalidParameterError, match="'k'"):
        Problem.structured_parity(k=2)                                 # the data model names its own parameter
    with pytest.raises(InvalidParameterError, match="'sigma_w'"):
        Problem(data="uniform_parity", d=9, k=2, sigma_w=2.0)


def test_predict_xor_quick_and_reproducible():
    P = Problem.xor(d=12, width=16)
    opts = dict(n_train=300, n_mc=500, n_test=3000)
    with pytest.warns(popdyn.RegimeWarning, match="m >= m_min"):     # the theorem's width is ~1e11 here
        pred = popdyn.predict(P, **opts)
    assert any("main_theorem" in r["source"] for r in pred.meta["regime"])
    a1, W1 = first_step(P.model, *P.params0, P.step_size)
    assert np.array_equal(pred["W1"], W1) and np.array_equal(pred["a1"], a1)
    assert pred["cos_features"].shape == (64, 4) and pred["p_ci"].shape == (4, 2)
    assert np.all(pred["p_ci"][:, 0] <= pred["p_hat"]) and np.all(pred["p_hat"] <= pred["p_ci"][:, 1])
    assert pred["opt_frozen"] >= 0 and pred["opt_frozen_gap"] == 0.0 and 0 < pred["bayes_error"] < 0.05
    again = popdyn.predict(P, **opts)
    assert all(np.array_equal(pred[k], again[k]) for k in pred.observables)
    with pytest.raises(InvalidParameterError, match="'n_mc'"):
        popdyn.predict(P, n_mc=1)
    with pytest.raises(InvalidParameterError, match="'eps'"):
        popdyn.predict(P, eps=1.5)


def test_predict_uniform_parity_first_step_is_the_xi_formula():
    """Uniform parity (d = 9, k = 2): w^(1) = eta |l'| a0 G with G_j = xi_{k-1}/2 chi_{A-j}(w) on A."""
    P = Problem.uniform_parity(d=9, k=2, width=8)
    pred = popdyn.predict(P, n_train=200, n_mc=300, n_test=2000)
    a0, W0, b = P.params0
    xi1 = float(P.model.xi(1))
    on_A = 0.5 * xi1 * W0[:, [1, 0]]                                   # chi_{A \ {j}}(w) for A = {0, 1}
    assert np.allclose(pred["W1"][:, :2], P.step_size * a0[:, None] * on_A, rtol=1e-12, atol=0)


def test_predict_uniform_parity_good_network_and_theorem():
    """Lemma B.54 in predict (d = 13, k = 2, m = 24): the exact hinge risk of the network by enumeration is < 1e-3
    (test above), so the Monte Carlo risk is below 1e-3 + 5 SE-scale; every set is filled, the norms are the lemma's,
    and the theorem numbers are uniform_parity_requirements' (B.56, eps = 0.1)."""
    P = Problem.uniform_parity(d=13, k=2, width=24)
    with pytest.warns(popdyn.RegimeWarning, match="d >= d_min"):
        pred = popdyn.predict(P, n_train=200, n_mc=300, n_test=4000)
    assert pred["good_network_coverage"] == 1.0 and pred["good_network_loss"] < 2e-3
    assert pred["good_network_linf"] <= 16 and pred["good_network_l2"] <= 16 * math.sqrt(2)
    req = popdyn.models.gradient_features.bounds.uniform_parity_requirements(13, 2, 0.1, m=24)
    assert all(pred[f"theorem_{k}"] == req[k] for k in ("m_min", "T", "n_min", "eta"))
    with pytest.warns(popdyn.RegimeWarning, match="hinge step"):
        popdyn.predict(Problem.uniform_parity(d=13, k=2, width=24, loss="logistic"), n_train=100, n_mc=100, n_test=500,
                       B_a2=2.0)


def test_predict_linear_against_the_always_active_neurons():
    """Linear data (B.5.1; d = 16, tau = 2: b~ = d^2 B_x1 ~ 1e3 sigma_w, so |<w, x>| < b~ up to ~1e-1000): the
    negative-bias neurons are linear, G = E[yx] = rho w* and A = rho <w, w*> (written here from B.213, not from the
    model's Phi/phi closed form), the positive-bias ones are never active (w^(1) = 0); hence cos = sign(a0) on the
    former, nice fractions = shares of sign(a0) among them, p = 1 for (+-w*, -1) (the paper's p = 1/2 is the bound
    P[||w|| <= 2 sqrt(d) sigma_w] >= 1/2), OPT(g*) = 0 and the frozen optimum 0 (separable)."""
    P = Problem.linear(d=16, width=16, beta=1.0, rho=1.5)
    with pytest.warns(popdyn.RegimeWarning):
        pred = popdyn.predict(P, n_train=300, n_mc=500, n_test=3000)
    a0, W0, b = P.params0
    rho, m, neg = 1.5, 16, b < 0
    c = P.step_size * P.model.rho
    assert np.allclose(pred["W1"][neg], c * a0[neg, None] * np.eye(1, 16), rtol=1e-12, atol=0)
    assert np.allclose(pred["a1"][neg], c * W0[neg, 0], rtol=1e-12, atol=0) and P.model.rho == rho
    assert np.all(pred["W1"][~neg] == 0.0) and np.all(pred["a1"][~neg] == 0.0)
    assert np.array_equal(pred["cos_features"][neg], np.column_stack([np.sign(a0[neg]), -np.sign(a0[neg])]))
    share = np.mean(a0[m:2 * m] > 0)
    assert np.allclose(pred["nice_fraction"], [share, 1 - share], rtol=0, atol=1e-15)
    assert np.all(pred["p_hat"] == 1.0) and pred.meta["features_sign"] == [-1, -1]
    assert pred["opt_gstar"] == 0.0 and pred["opt_frozen"] == 0.0 and pred["bayes_error"] == 0.0
    assert pred["good_network_coverage"] == 1.0 and 0.0 <= pred["good_network_loss"] <= pred["good_network_bound"]
    ref = main_theorem(**P.case["theorem_args"], eps=0.1, delta=0.1, m=16, d=16)
    assert all(pred[f"theorem_{k}"] == ref[k] for k in ("m_min", "T", "n_min", "eta", "error_bound"))
    assert Problem.linear(d=16, width=4, loss="logistic").model.ground_truth_loss("logistic") == pytest.approx(
        math.log2(1 + math.exp(-1.0)), rel=1e-14)                    # s = beta = 1 surely when rho is None


def test_good_second_layer_signs():
    """A zero-bias target may use either bias sign (linear data: -1, Lemma B.25); a sign against b* is an error."""
    P = Problem.linear(d=16, width=8, rho=1.5)
    a0, W0, b = P.params0
    _, W1 = first_step(P.model, a0, W0, b, P.step_size)
    args = (W1, a0, b, P.gstar, 0.3, 0.5, 0.01, 10.0, P.step_size)
    neg, pos = good_second_layer(*args, signs=[-1, -1])[1], good_second_layer(*args)[1]
    assert all(len(S) and np.all(b[S] < 0) for S in neg) and all(len(S) == 0 for S in pos)   # +b~: never active
    for signs in ([1, 0], [1], [-1, 1.5]):
        with pytest.raises(InvalidParameterError, match="'signs'"):
            good_second_layer(*args, signs=signs)
    with pytest.raises(InvalidParameterError, match="'signs'"):
        good_second_layer(W1, a0, b, (np.ones(1), np.eye(1, 16), -np.ones(1)), 0.3, 0.5, 0.01, 10.0, 1.0, signs=[1])


def test_predict_sample_first_step_and_logistic_ball():
    """Structured parity (d = 7, enumeration): the n_G-sample step is within 5 SE-scale of the exact one; the
    logistic frozen optimum needs a ball."""
    P = Problem.structured_parity(d=7, k=3, width=4, loss="logistic")
    opts = dict(n_train=200, n_mc=200, n_test=2000, B_a2=2.0)
    exact, mc = popdyn.predict(P, **opts), popdyn.predict(P, n_G=40_000, **opts)
    c = P.step_size * 0.5 / math.log(2) * np.abs(P.params0[0])[:, None]    # eta |l'(0)| |a0|; |y x_j| <= 1
    assert np.all(np.abs(mc["W1"] - exact["W1"]) <= 5 * c / math.sqrt(40_000))
    assert exact["opt_frozen_gap"] <= 1e-6
    with pytest.raises(InvalidParameterError, match="'B_a2'"):
        popdyn.predict(P, n_train=200, n_mc=200, n_test=2000)


@settings(max_examples=6)
@given(gradient_features_problems())
def test_predict_finite_on_small_problems(problem):
    pred = popdyn.predict(problem, n_train=100, n_mc=100, n_test=500)
    assert all(np.all(np.isfinite(v)) for v in pred.observables.values()), repr(problem)
    has_b54 = "good_network_linf" in pred.observables                  # Lemma B.54: uniform parity only
    assert np.all(pred["nice_fraction"] <= 2.0) and "good_network_loss" in pred.observables
    assert has_b54 == (problem.data == "uniform_parity")


@pytest.mark.parametrize("B,loss", [(1.0, "hinge"), (10.0, "logistic")])
def test_opt_frozen_certificate_on_learned_xor_features(B, loss):
    """Separable first-step features (XOR, d = 16): a large ball makes the dual degenerate (u -> 0) and slow; the
    returned gap still certifies the value, and the certified intervals respect OPT(2B) <= OPT(B)."""
    P = Problem.xor(d=16, width=4)
    a0, W0, b = P.params0
    _, W1 = first_step(P.model, a0, W0, b, P.step_size)
    X, y = P.model.sample(100, np.random.default_rng(0))
    a, v, gap = opt_frozen(X, y, W1, b, B, loss)
    assert np.linalg.norm(a) <= B * (1 + 1e-9) and 0.0 <= gap <= 1e-2 and v >= 0.0     # 1e-2: maxiter 5000
    _, v2, gap2 = opt_frozen(X, y, W1, b, 2 * B, loss)
    assert v2 - gap2 <= v + 1e-12


def test_feature_probability_sufficient_statistics():
    """The O(q)-per-neuron path (mixtures) against the full d-vector path at d = 16 (z <= 4), and at d = 1e6 against
    a reference table (P[hit D_1] = 0.0020 with 2e6 neurons, tau = 1; z <= 4 with both binomial errors)."""
    gm, bt, *_ = _xor_setup()
    D = np.eye(16)[0]
    p, _ = feature_probability(gm, D, 1, 0.25, 0.8, bt, 100_000, 7)
    W = np.random.default_rng(9).standard_normal((100_000, 16))       # the full d-vector path, written out
    G = gm.simplified_gradient(W, np.full(100_000, bt))
    nG = np.linalg.norm(G, axis=1)
    p_direct = np.mean((np.abs(G[:, 0]) > 0.75 * nG) & (nG >= 0.8))
    assert abs(p - p_direct) <= 4 * math.sqrt(2 * p * (1 - p) / 100_000)
    d = 10**6
    big = xor_mixture(d, 1.0)
    q, _ = feature_probability(big, np.eye(1, d, 0)[0], 1, 1 / math.sqrt(d), math.sqrt(d) / 5,
                               math.sqrt(d * math.log(math.log(d))), 1_000_000, 3)
    assert abs(q - 0.0020) <= 4 * math.sqrt(q * (1 - q) * (1 / 1e6 + 1 / 2e6))
