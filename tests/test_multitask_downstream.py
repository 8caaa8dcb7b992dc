"""Multi-task downstream phase: embedding, purified twin, probes and margins ([Collins24] eqs. (9)-(12), App. B;
docs/multitask.md).

Oracles: the embedding against a loop-by-loop evaluation of eq. (9); the leading-order map (w_par+ = kappa w_par,
w_perp+ = 0) making the learned and purified embeddings identical; Lemma B.3's chain (75)-(79) against the exact
distance over all of {-1, 1}^d; the probes against independent solvers (scipy L-BFGS on the squared-hinge primal,
SLSQP on the hinge primal with slacks); the hard margin against the primal SVM by SLSQP, random directions, and
hand geometry; the bounded hinge infimum against its closed form on parity features.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import optimize

from popdyn import InvalidParameterError
from popdyn.models import multitask as mt
from popdyn.models.multitask.downstream import (DownstreamEmbedding, ball_hinge_loss, fit_linear_probe, hypercube,
                                                lemmaB3_rhs, purified_margin, rescaling_alpha, svm_margin)


def _setup(d=10, r=2, m=16, m_hat=64, seed=0, nu_w=None, exact=True):
    nu_w = d ** -1.25 if nu_w is None else nu_w
    W0 = mt.symmetric_init(d, m, nu_w, seed)
    if exact:
        W_plus = mt.one_step_map(W0, r)
    else:                                                    # leading order: w_par+ = kappa w_par, w_perp+ = 0
        W_plus = np.zeros_like(W0)
        W_plus[:, :r] = mt.kappa_par(r, 1.0) * W0[:, :r]
    return W0, W_plus, DownstreamEmbedding(W_plus, r, m_hat, math.sqrt(r), math.sqrt(r), nu_w=nu_w, seed=seed, W0=W0)


# ---- embedding ----------------------------------------------------------------------------------------------

def test_hypercube_sampler():
    V = hypercube(20_000, 7, seed=3)
    assert V.shape == (20_000, 7) and set(np.unique(V)) == {-1.0, 1.0}
    assert np.array_equal(V, hypercube(20_000, 7, seed=3))
    # each coordinate mean has SD 1/sqrt(n) = 0.007: all within 5 SD; pairwise correlations likewise
    assert np.abs(V.mean(0)).max() < 5 / math.sqrt(20_000)
    C = V.T @ V / len(V) - np.eye(7)
    assert np.abs(C).max() < 5 / math.sqrt(20_000)


def test_features_match_eq9_evaluated_neuron_by_neuron():
    W0, W_plus, e = _setup(d=6, r=2, m=6, m_hat=5)
    V = hypercube(4, 6, seed=1)
    out = np.zeros((4, 5))
    for i, v in enumerate(V):
        h = [max(e.alpha * sum(W_plus[j, k] * v[k] for k in range(6)) + e.b[j], 0.0) for j in range(3)]
        for l in range(5):
            out[i, l] = max(sum(e.W_hat[l, j] * h[j] for j in range(3)) + e.b_hat[l], 0.0)
    assert np.allclose(e.features(V), out, rtol=1e-13, atol=1e-15)


def test_random_layers_follow_the_paper():
    m_bar, m_hat, gamma, gamma_hat = 400, 3000, 1.3, 2.1
    W0 = mt.symmetric_init(20, 2 * m_bar, 0.1, 0)
    e = DownstreamEmbedding(W0, 3, m_hat, gamma, gamma_hat, alpha=1.0, nu_w=0.1, seed=5)
    hb, hbh = math.sqrt(2) * gamma / math.sqrt(m_bar), math.sqrt(2) * gamma_hat / math.sqrt(m_hat)
    assert e.b.shape == (m_bar,) and np.abs(e.b).max() <= hb and np.abs(e.b).max() > 0.99 * hb
    assert e.b_hat.shape == (m_hat,) and np.abs(e.b_hat).max() <= hbh and np.abs(e.b_hat).max() > 0.99 * hbh
    # uniform: variance h^2/3, SE of the sample variance ~ h^2 sqrt(4/45/n)
    assert e.b.var() == pytest.approx(hb ** 2 / 3, abs=5 * hb ** 2 * math.sqrt(4 / 45 / m_bar))
    # W_hat ~ N(0, 2/m_hat): 1.2e6 entries, variance within 5 SE (SE = var sqrt(2/N))
    assert e.W_hat.shape == (m_hat, m_bar)
    assert e.W_hat.var() == pytest.approx(2 / m_hat, rel=5 * math.sqrt(2 / e.W_hat.size))
    # same seed: same random layers whatever the first layer
    f = DownstreamEmbedding(2 * W0, 3, m_hat, gamma, gamma_hat, alpha=3.0, nu_w=0.1, seed=5)
    assert np.array_equal(e.W_hat, f.W_hat) and np.array_equal(e.b, f.b) and np.array_equal(e.b_hat, f.b_hat)
    assert e.m_bar == m_bar and np.array_equal(e.W_bar, W0[:m_bar])


def test_default_alpha_is_the_corrected_rescaling():
    _, _, e = _setup(d=12, r=3, m=8)
    assert e.alpha == pytest.approx(2 / (12 ** -1.25 * 2) / (2 ** -3 / (2 * math.pi)), rel=1e-14)
    assert rescaling_alpha(3, 4, 0.2, convention="paper") / rescaling_alpha(3, 4, 0.2) == pytest.approx(2 / math.pi)
    assert rescaling_alpha(2, 9, 0.5, eta=2.0, kappa=0.1) == pytest.approx(2 / (0.5 * 3) / 0.1)


@given(st.integers(1, 3), st.integers(0, 6), st.integers(1, 6), st.integers(0, 1000))
@settings(max_examples=15)
def test_leading_order_map_makes_learned_and_purified_identical(r, extra, half, seed):
    d = r + 1 + extra
    W0, _, e = _setup(d=d, r=r, m=2 * half, m_hat=20, seed=seed, exact=False)
    V = mt.sign_patterns(d)                                  # all of {-1, 1}^d (d <= 10)
    assert np.allclose(e.features(V), e.purified(V[:, :r]), rtol=1e-12, atol=1e-14)
    assert e.distance_bound() < 1e-12 * (1 + np.linalg.norm(e.W_hat, 2))


@given(st.integers(1, 3), st.integers(1, 6), st.integers(1, 5), st.integers(0, 1000))
@settings(max_examples=15)
def test_distance_never_exceeds_lemma_b3_chain(r, extra, half, seed):
    d = r + extra
    W0, W_plus, e = _setup(d=d, r=r, m=2 * half, m_hat=30, seed=seed)
    dist = e.distance_to_purified(mt.sign_patterns(d))      # exact maximum over all 2^d points
    assert dist.max() <= e.distance_bound() * (1 + 1e-12) + 1e-15
    assert np.allclose(dist, np.linalg.norm(e.purified(mt.sign_patterns(d)[:, :r]) - e.features(mt.sign_patterns(d)),
                                            axis=1), rtol=1e-14, atol=1e-15)


def test_papers_kappa_moves_the_embedding_away_from_the_purified_one():
    # docs/errata.md: the paper's kappa = eta^2 2^-r-2 rescales the first layer by 2/pi: the distance is ~1/3 of ||g~||,
    # the corrected one leaves O(eps^2) (~1 % at d = 100)
    W0, W_plus, e = _setup(d=100, r=3, m=40, m_hat=300)
    wrong = DownstreamEmbedding(W_plus, 3, 300, math.sqrt(3), math.sqrt(3), nu_w=100 ** -1.25, W0=W0,
                                alpha=rescaling_alpha(3, 20, 100 ** -1.25, convention="paper"))
    V = hypercube(500, 100, seed=2)
    scale = np.linalg.norm(e.purified(V[:, :3]), axis=1).mean()
    assert e.distance_to_purified(V).max() / scale < 0.03
    assert wrong.distance_to_purified(V).max() / scale > 0.2


@given(st.floats(0.1, 10.0), st.integers(0, 100))
@settings(max_examples=10)
def test_lemma_b2_homogeneity(c, seed):
    # Lemma B.2: inputs and both bias ranges times c scale the (purified) embedding by c (ReLU is 1-homogeneous)
    W0 = mt.symmetric_init(8, 10, 0.1, seed)
    e1 = DownstreamEmbedding(W0, 3, 40, 1.0, 2.0, nu_w=0.1, seed=seed, W0=W0)
    e2 = DownstreamEmbedding(W0, 3, 40, c, 2.0 * c, nu_w=0.1, seed=seed, W0=W0)
    U = mt.sign_patterns(3)
    assert np.allclose(e2.purified(c * U), c * e1.purified(U), rtol=1e-12, atol=1e-14)


def test_lemmaB3_shape():
    assert lemmaB3_rhs(3, 100, 200, math.inf, C=2.0) == pytest.approx(2 * (3 ** 3.5 + math.log(200) ** 3.5) / (8 * 10))
    assert lemmaB3_rhs(3, 100, 200, 1e6) - lemmaB3_rhs(3, 100, 200, math.inf) == pytest.approx(math.sqrt(3) * 1e3 / 1e3)
    assert lemmaB3_rhs(3, 400, 200, math.inf) == pytest.approx(lemmaB3_rhs(3, 100, 200, math.inf) / 2)


# ---- probes -------------------------------------------------------------------------------------------------

def _toy(n=60, p=5, seed=0, margin=0.5):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(p)
    X = rng.standard_normal((3 * n, p))
    s = X @ w / np.linalg.norm(w)
    X, s = X[np.abs(s) > margin][:n], s[np.abs(s) > margin][:n]
    return X + 0.3, np.sign(s)                                 # shifted: the bias matters


@pytest.mark.parametrize("loss", ["hinge", "sq_hinge"])
def test_probe_separates_a_separable_toy(loss):
    X, y = _toy()
    a, tau = fit_linear_probe(X, y, 1e-4, loss=loss)
    assert np.all(y * (X @ a + tau) > 0)
    Xt, yt = _toy(seed=0, n=200)                            # same separator, more points
    assert np.mean(yt * (Xt @ a + tau) <= 0) == 0.0


def _objective(X, y, a, tau, lam, loss):
    z = np.maximum(1 - y * (X @ a + tau), 0)
    return (z if loss == "hinge" else z ** 2).mean() + 0.5 * lam * (a @ a + tau * tau)


def test_sq_hinge_probe_matches_lbfgs_on_the_primal():
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((80, 12)), rng.choice([-1.0, 1.0], 80)      # not separable
    lam = 1e-2
    a, tau = fit_linear_probe(X, y, lam, loss="sq_hinge")
    Xb = np.hstack([X, np.ones((80, 1))])

    def f(w):
        z = np.maximum(1 - y * (Xb @ w), 0)
        return z @ z / 80 + 0.5 * lam * w @ w, -2 * Xb.T @ (y * z) / 80 + lam * w
    ref = optimize.minimize(f, np.zeros(13), jac=True, method="L-BFGS-B", options={"gtol": 1e-13, "ftol": 1e-16})
    assert np.allclose(np.r_[a, tau], ref.x, atol=1e-6)
    assert _objective(X, y, a, tau, lam, "sq_hinge") <= ref.fun + 1e-12     # Newton reaches the optimum


def test_hinge_probe_matches_slsqp_on_the_primal():
    rng = np.random.default_rng(2)
    n, p, lam = 40, 6, 1e-2
    X, y = rng.standard_normal((n, p)), rng.choice([-1.0, 1.0], n)
    a, tau = fit_linear_probe(X, y, lam, loss="hinge")
    # primal QP: min mean(s) + lam/2 ||(a, tau)||^2 s.t. s >= 1 - y (X a + tau), s >= 0
    A = np.hstack([y[:, None] * X, y[:, None]])
    cons = [{"type": "ineq", "fun": lambda z: z[p + 1:] - 1 + A @ z[:p + 1],
             "jac": lambda z: np.hstack([A, np.eye(n)])}]
    obj = lambda z: (z[p + 1:].mean() + 0.5 * lam * z[:p + 1] @ z[:p + 1],
                     np.r_[lam * z[:p + 1], np.full(n, 1 / n)])
    ref = optimize.minimize(obj, np.r_[np.zeros(p + 1), np.ones(n)], jac=True, method="SLSQP", constraints=cons,
                            bounds=[(None, None)] * (p + 1) + [(0, None)] * n, options={"ftol": 1e-14, "maxiter": 1000})
    assert _objective(X, y, a, tau, lam, "hinge") == pytest.approx(ref.fun, rel=1e-6)   # dual gap ~1e-6 (docstring)
    assert np.allclose(np.r_[a, tau], ref.x[:p + 1], atol=1e-3)


@given(st.integers(0, 1000), st.sampled_from(["hinge", "sq_hinge"]))
@settings(max_examples=10)
def test_probe_is_odd_in_the_labels(seed, loss):
    rng = np.random.default_rng(seed)
    X, y = rng.standard_normal((30, 4)), rng.choice([-1.0, 1.0], 30)
    a, tau = fit_linear_probe(X, y, 1e-2, loss=loss)
    b, sig = fit_linear_probe(X, -y, 1e-2, loss=loss)
    assert np.allclose(a, -b, atol=1e-6) and tau == pytest.approx(-sig, abs=1e-6)
    assert fit_linear_probe(X, y, 1e-2, loss=loss, bias=False)[1] == 0.0


@pytest.mark.parametrize("loss", ["hinge", "sq_hinge"])
def test_probe_norm_approaches_the_inverse_margin(loss):
    # App. B.5: with a vanishing ridge the probe tends to the max-margin separator, ||a|| -> 1/mu. Symmetric data
    # ((x, y) and (-x, -y)) makes the optimal bias 0, so the bias-free probe and the SVM with bias share mu
    X, y = _toy(n=30, p=3, seed=4, margin=0.8)
    X, y = np.vstack([X - 0.3, 0.3 - X]), np.r_[y, -y]
    a, tau = fit_linear_probe(X, y, 1e-8, loss=loss, bias=False)
    mu = svm_margin(X, y)
    assert abs(mu["tau"]) < 1e-9
    assert np.linalg.norm(a) == pytest.approx(1 / mu["mu"], rel=1e-4)   # O(lam) bias of the ridge solution


# ---- margins ------------------------------------------------------------------------------------------------

def test_svm_margin_geometry():
    out = svm_margin([[0.0, 0.0], [3.0, 4.0]], [-1, 1])
    assert out["mu"] == pytest.approx(2.5, rel=1e-10) and np.allclose(out["a"], [0.6, 0.8], atol=1e-10)
    assert out["tau"] == pytest.approx(-2.5, rel=1e-10)
    xor = svm_margin([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]], [1, 1, -1, -1])
    assert xor["mu"] == 0.0


def _primal_margin(G, y):
    p = G.shape[1]
    cons = [{"type": "ineq", "fun": lambda z: y * (G @ z[:p] + z[p]) - z[p + 1]},
            {"type": "ineq", "fun": lambda z: 1 - z[:p] @ z[:p]}]
    best = -np.inf
    for s in range(4):
        z0 = np.r_[np.random.default_rng(s).standard_normal(p) / math.sqrt(p), 0.0, -10.0]
        res = optimize.minimize(lambda z: -z[p + 1], z0, method="SLSQP", constraints=cons,
                                options={"ftol": 1e-14, "maxiter": 2000})
        best = max(best, -res.fun)
    return best


@pytest.mark.parametrize("r, seed", [(2, 0), (3, 1), (3, 2)])
def test_purified_margin_against_primal_svm_and_random_directions(r, seed):
    W0 = mt.symmetric_init(12, 40, 12 ** -1.25, seed)
    e = DownstreamEmbedding(mt.one_step_map(W0, r), r, 50, math.sqrt(r), math.sqrt(r), nu_w=12 ** -1.25,
                            seed=seed, W0=W0)
    fbar = mt.TaskSet.parities(r, [r]).F[0]
    G = e.purified(mt.sign_patterns(r))
    mu = purified_margin(e, fbar)
    out = svm_margin(G, fbar)
    assert mu == out["mu"] > 0
    assert out["mu_upper"] - mu <= 1e-8 * mu                # primal-dual bracket of the optimum
    assert mu == pytest.approx(_primal_margin(G, fbar), rel=1e-6)    # SLSQP primal, constraint tolerance
    assert np.min(fbar * (G @ out["a"] + out["tau"])) == pytest.approx(mu, rel=1e-12)
    # no random unit direction (with its best bias) does better
    A = np.random.default_rng(seed).standard_normal((20_000, G.shape[1]))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    S = G @ A.T
    best = 0.5 * (S[fbar > 0].min(0) - S[fbar < 0].max(0))
    assert best.max() <= mu + 1e-12


def test_purified_embedding_separates_every_labeling_of_two_bits():
    # Lemma B.2 at r = 2: all 14 non-constant labelings of {-1, 1}^2 separable (mu > 0) by one wide random draw
    W0 = mt.symmetric_init(10, 200, 0.1, 0)
    e = DownstreamEmbedding(W0, 2, 500, math.sqrt(2), math.sqrt(2), nu_w=0.1, W0=W0)
    for fbar in mt.TaskSet.all_labelings(2).F[1:-1]:
        assert purified_margin(e, fbar) > 1e-3


# ---- bounded hinge loss (Thm 4.6's left side) --------------------------------------------------------------

def test_ball_hinge_loss_on_parity_features_is_the_bessel_bound():
    d, r = 7, 2
    V = mt.sign_patterns(d)
    chi = np.stack([V[:, i] * V[:, j] for i in range(d) for j in range(i + 1, d)], axis=1)
    K = chi.shape[1]
    for B in [0.0, 0.3 * math.sqrt(K), math.sqrt(K)]:
        lo, up = ball_hinge_loss(chi / math.sqrt(K), chi[:, 5], B)
        assert lo == pytest.approx(1 - B / math.sqrt(K), abs=1e-13) and up == pytest.approx(lo, abs=1e-13)


@given(st.integers(0, 1000), st.floats(0.1, 20.0))
@settings(max_examples=10)
def test_ball_hinge_loss_brackets_the_primal(seed, B):
    rng = np.random.default_rng(seed)
    G, y = rng.standard_normal((40, 3)), rng.choice([-1.0, 1.0], 40)
    lo, up = ball_hinge_loss(G, y, B)
    assert 1 - B * np.linalg.norm(G.T @ y / 40) - 1e-12 <= lo <= up + 1e-12     # above the linear bound
    # independent: minimise over the ball parametrised by a = B t u(phi) (3-d: a grid of directions, then polish)
    best = np.inf
    for a0 in rng.standard_normal((30, 3)):
        res = optimize.minimize(lambda a: np.maximum(1 - y * (G @ a), 0).mean(), B * a0 / np.linalg.norm(a0),
                                method="SLSQP", constraints=[{"type": "ineq", "fun": lambda a: B * B - a @ a}])
        best = min(best, res.fun)
    assert lo <= best + 1e-6                                 # 1e-6: SLSQP's ball constraint tolerance
    # the width up - lo is declared and held in test_accuracy_multitask (before: 1.8e-5 at seed 200, B = 4.44)


# ---- bad input ----------------------------------------------------------------------------------------------

W0_OK = mt.symmetric_init(6, 4, 0.1, 0)


@pytest.mark.parametrize("call, name", [
    (lambda: DownstreamEmbedding(W0_OK[:3], 2, 10, 1.0, 1.0), "'W_plus'"),
    (lambda: DownstreamEmbedding(np.full((4, 6), np.nan), 2, 10, 1.0, 1.0), "'W_plus'"),
    (lambda: DownstreamEmbedding(W0_OK, 6, 10, 1.0, 1.0), "'r'"),
    (lambda: DownstreamEmbedding(W0_OK, 2, 0, 1.0, 1.0), "'m_hat'"),
    (lambda: DownstreamEmbedding(W0_OK, 2, 10, -1.0, 1.0), "'gamma'"),
    (lambda: DownstreamEmbedding(W0_OK, 2, 10, 1.0, float("nan")), "'gamma_hat'"),
    (lambda: DownstreamEmbedding(W0_OK, 2, 10, 1.0, 1.0, alpha=0.0), "'alpha'"),
    (lambda: DownstreamEmbedding(W0_OK, 2, 10, 1.0, 1.0, nu_w=-0.1), "'nu_w'"),
    (lambda: DownstreamEmbedding(W0_OK, 2, 10, 1.0, 1.0, W0=W0_OK[:, :5]), "'W0'"),
    (lambda: DownstreamEmbedding(W0_OK, 2, 10, 1.0, 1.0).purified(np.ones((1, 2))), "'W0'"),
    (lambda: DownstreamEmbedding(W0_OK, 2, 10, 1.0, 1.0).distance_bound(), "'W0'"),
    (lambda: DownstreamEmbedding(W0_OK, 2, 10, 1.0, 1.0).features(np.ones((1, 5))), "'V'"),
    (lambda: DownstreamEmbedding(W0_OK, 2, 10, 1.0, 1.0, W0=W0_OK).purified(np.ones(2)), "'Vr'"),
    (lambda: rescaling_alpha(2, 0, 0.1), "'m_bar'"),
    (lambda: rescaling_alpha(2, 4, 0.1, kappa=-1.0), "'kappa'"),
    (lambda: rescaling_alpha(2, 4, 0.1, convention="x"), "'convention'"),
    (lambda: hypercube(-1, 3), "'n'"),
    (lambda: lemmaB3_rhs(4, 3, 10, 1.0), "'d'"),
    (lambda: fit_linear_probe(np.ones((3, 2)), [1, 0, 1], 0.1), "'y'"),
    (lambda: fit_linear_probe(np.ones((3, 2)), [1, -1, 1], 0.0), "'lam'"),
    (lambda: fit_linear_probe(np.ones((3, 2)), [1, -1, 1], 0.1, loss="l2"), "'loss'"),
    (lambda: fit_linear_probe(np.ones((3, 2)), [1, -1], 0.1), "'y'"),
    (lambda: fit_linear_probe([[np.inf, 0.0]], [1], 0.1), "'G'"),
    (lambda: svm_margin(np.ones((3, 2)), [1, 1, 1]), "'y'"),
    (lambda: purified_margin(object(), [1, -1]), "'embedding'"),
    (lambda: purified_margin(DownstreamEmbedding(W0_OK, 2, 10, 1.0, 1.0, W0=W0_OK), [1, -1]), "'fbar'"),
    (lambda: ball_hinge_loss(np.ones((2, 2)), [1, -1], -1.0), "'B'"),
])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(InvalidParameterError, match=name):
        call()
