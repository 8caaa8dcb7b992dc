"""Gradient-feature data models: closed forms against mpmath, Monte Carlo (stated z) and quadrature; invariants.

Monte Carlo tolerances: max |z| over all compared coordinates < 5 (with <= 100 coordinates the chance of a false
alarm is < 1e-4); mpmath is run at 60 digits.
"""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp
from scipy import special

from popdyn._validate import InvalidParameterError
from popdyn.models.gradient_features import (GaussianMixture, LinearSeparable, hinge, logistic2, relu_moment,
                                             xor_mixture)

Z = 5.0          # Monte Carlo band in standard errors
EPS = np.finfo(float).eps


@pytest.fixture(autouse=True)
def _sixty_digits():
    with mp.workdps(60):
        yield


def _mixture(seed=0, d=8, r=4):
    rng = np.random.default_rng(seed)
    return GaussianMixture(rng.normal(size=(r, d)) * 1.5, rng.uniform(0.5, 1.5, r), rng.dirichlet(np.ones(r)),
                           np.array([1, -1, 1, -1])[:r])


def _G_mp(gm, w, b):
    """G of the mixture in 60-digit arithmetic, from the textbook form sum p y [Phi mu + s phi w_hat]."""
    W = [mp.mpf(x) for x in w]
    nw = mp.sqrt(sum(x * x for x in W))
    out = [mp.mpf(0)] * len(W)
    for mu, s, p, y in zip(gm.mus, gm.sigmas, gm.weights, gm.labels):
        k = (sum(mp.mpf(m) * x for m, x in zip(mu, W)) - mp.mpf(b)) / (mp.mpf(s) * nw)
        for i in range(len(W)):
            out[i] += mp.mpf(p) * int(y) * (mp.ncdf(k) * mp.mpf(mu[i]) + mp.mpf(s) * mp.npdf(k) * W[i] / nw)
    return out


def _rel_err(G, ref):
    """Norm-wise relative error, rescaled so that tiny (1e-300) vectors do not underflow in the norm."""
    scale = max(abs(x) for x in ref)
    diff = [mp.mpf(g) - x for g, x in zip(G, ref)]
    return float(mp.sqrt(sum((v / scale) ** 2 for v in diff)) / mp.sqrt(sum((x / scale) ** 2 for x in ref)))


# ---------------------------------------------------------------------------------------------- relu_moment
def test_relu_moment_vs_mpmath_across_all_branches():
    ks = np.concatenate([np.linspace(-37.0, -0.01, 300), [-3.0, np.nextafter(-3.0, 0), np.nextafter(-3.0, -9)],
                         np.linspace(0, 30, 60)])
    got = relu_moment(ks)
    worst = max(abs(float((mp.mpf(g) - (mp.mpf(k) * mp.ncdf(k) + mp.npdf(k))) / (mp.mpf(k) * mp.ncdf(k)
                                                                                    + mp.npdf(k))))
                for g, k in zip(got, ks))
    assert worst < 5e-15
    # the naive form kappa Phi + phi loses ~kappa^2 eps; at kappa = -26 it is already off by > 1e-12
    k = -26.0
    naive = k * special.ndtr(k) + math.exp(-k * k / 2) / math.sqrt(2 * math.pi)
    exact = mp.mpf(k) * mp.ncdf(k) + mp.npdf(k)
    assert abs(float((mp.mpf(naive) - exact) / exact)) > 1e-12  # the guarded gap: 676 eps x ndtr's 1e-14


def test_relu_moment_nan_and_underflow():
    out = relu_moment(np.array([np.nan, -40.0, 0.0]))
    # 1e-15: one rounding of 1/sqrt(2 pi)
    assert np.isnan(out[0]) and out[1] == 0.0 and out[2] == pytest.approx(1 / math.sqrt(2 * math.pi), rel=1e-15)
    assert isinstance(relu_moment(1.0), float)


# ---------------------------------------------------------------------------------------------- mixture G, A
@pytest.mark.parametrize("kappa_top", [-8.0, -26.0, -33.0])
def test_G_far_tail_bias_driven_vs_mpmath(kappa_top):
    """All kappa_l <= kappa_top because b is large (the regime of the paper's tilde b).

    Tolerance 20 kappa^2 eps: rounding kappa itself (relative eps) moves Phi(kappa) by kappa^2 eps relative,
    the conditioning of the problem, not of the formula."""
    gm = _mixture(1, d=5, r=3)
    rng = np.random.default_rng(2)
    for _ in range(4):
        w = rng.normal(size=5)
        b = float(np.max(gm.mus @ w - kappa_top * gm.sigmas * np.linalg.norm(w)))
        assert _rel_err(gm.simplified_gradient(w[None], b)[0], _G_mp(gm, w, b)) < 20 * kappa_top ** 2 * EPS


@pytest.mark.parametrize("kappa", [-10.0, -26.0, -33.0])
def test_G_far_tail_mean_driven_vs_mpmath(kappa):
    """b = 0 and w nearly anti-parallel to the mean: the w_hat component is s psi(kappa) << Phi <mu, w_hat>,
    the cancellation the stable form avoids."""
    gm = GaussianMixture([[-kappa, 0.0, 0.0]], [1.0], [1.0], [1])
    w = np.array([-1.0, 1e-3, 2e-3])
    b = 0.0
    got = gm.simplified_gradient(w[None], b)[0]
    assert _rel_err(got, _G_mp(gm, w, b)) < 20 * kappa ** 2 * EPS
    # and the w_hat component alone (orders of magnitude below the norm) to the same conditioning
    ref = _G_mp(gm, w, b)
    what = w / np.linalg.norm(w)
    ref_r = sum(x * mp.mpf(u) for x, u in zip(ref, what))
    assert abs(float((mp.mpf(got @ what) - ref_r) / ref_r)) < 20 * kappa ** 2 * EPS


def test_G_and_A_vs_monte_carlo():
    gm = _mixture(0)
    rng = np.random.default_rng(3)
    W = rng.normal(size=(5, gm.dim))
    b = rng.normal(size=5) * 2
    G_mc, se = gm.simplified_gradient_mc(W, b, 400_000, 4)
    assert np.max(np.abs(G_mc - gm.simplified_gradient(W, b)) / se) < Z
    A_mc, ase = gm.A_mc(W, b, 400_000, 5)
    assert np.max(np.abs(A_mc - gm.A(W, b)) / ase) < Z


def test_G_mc_detects_a_wrong_closed_form():
    """The MC oracle has power: dropping the sigma phi w_hat term is rejected at the same z."""
    gm = _mixture(0)
    rng = np.random.default_rng(3)
    W = rng.normal(size=(5, gm.dim))
    b = rng.normal(size=5) * 2
    G_mc, se = gm.simplified_gradient_mc(W, b, 400_000, 4)
    kappa = (W @ gm.mus.T - b[:, None]) / (gm.sigmas * np.linalg.norm(W, axis=1)[:, None])
    wrong = (gm.weights * gm.labels * special.ndtr(kappa)) @ gm.mus
    assert np.max(np.abs(G_mc - wrong) / se) > Z


mixtures = st.builds(_mixture, st.integers(0, 10_000), st.integers(2, 6), st.integers(1, 4))


@given(mixtures, st.integers(0, 10_000), st.floats(0.1, 10), st.floats(-3, 3))
def test_G_identities(gm, seed, c, b):
    """Scale invariance, complement, label flip, span(mu, w), ||G|| <= Bx1 (docs/gradient_features.md)."""
    w = np.random.default_rng(seed).normal(size=(1, gm.dim))
    G = gm.simplified_gradient(w, b)[0]
    tol = 1e-12 * (1 + np.abs(gm.mus).max())
    # tol: float64 round-off of O(|mu|) sums
    assert np.allclose(gm.simplified_gradient(c * w, c * b)[0], G, rtol=0, atol=tol)
    assert np.allclose(G + gm.simplified_gradient(-w, -b)[0], gm.E_yx(), rtol=0, atol=tol)
    flipped = GaussianMixture(gm.mus, gm.sigmas, gm.weights, -gm.labels)
    assert np.allclose(flipped.simplified_gradient(w, b)[0], -G, rtol=0, atol=tol)
    basis = np.linalg.qr(np.vstack([gm.mus, w]).T)[0]
    assert np.linalg.norm(G - basis @ (basis.T @ G)) <= tol
    assert np.linalg.norm(G) <= gm.bounds().Bx1 * (1 + 1e-12)


@given(mixtures, st.integers(0, 10_000), st.floats(-3, 3))
def test_G_is_gradient_of_A(gm, seed, b):
    w = np.random.default_rng(seed).normal(size=gm.dim)
    h = 1e-5
    E = np.eye(gm.dim) * h
    fd = (gm.A(w + E, b) - gm.A(w - E, b)) / (2 * h)          # central differences, error O(h^2 |A'''|)
    # 1e-7: central-difference error h^2 |A'''| ~ 1e-10 plus round-off eps |A| / h ~ 1e-11 |mu|, with margin
    assert np.allclose(fd, gm.simplified_gradient(w[None], b)[0], rtol=0, atol=1e-7 * (1 + np.abs(gm.mus).max()))


@given(mixtures, st.integers(0, 10_000))
def test_G_rotation_equivariance_and_limits(gm, seed):
    rng = np.random.default_rng(seed)
    R = np.linalg.qr(rng.normal(size=(gm.dim, gm.dim)))[0]
    w = rng.normal(size=(1, gm.dim))
    rot = GaussianMixture(gm.mus @ R.T, gm.sigmas, gm.weights, gm.labels)
    # 1e-12: round-off of a rotation
    assert np.allclose(rot.simplified_gradient(w @ R.T, 0.3)[0], R @ gm.simplified_gradient(w, 0.3)[0], atol=1e-12)
    # 1e-12: Phi(kappa) = 1 to double precision at b = -1e4
    assert np.allclose(gm.simplified_gradient(w, -1e4)[0], gm.E_yx(), atol=1e-12)
    assert np.all(gm.simplified_gradient(w, 1e4)[0] == 0)


@given(st.integers(0, 10_000), st.floats(0, 5), st.integers(1, 6))
def test_single_positive_component_radial_sign(seed, b, d):
    rng = np.random.default_rng(seed)
    gm = GaussianMixture(rng.normal(size=(1, d)) * 3, [rng.uniform(0.2, 2)], [1.0], [1])
    w = rng.normal(size=(1, d))
    assert gm.simplified_gradient(w, b)[0] @ w[0] >= 0


# ---------------------------------------------------------------------------------------------- XOR mixture
def test_xor_bayes_error_spec_value_and_mc():
    gm = xor_mixture(100, 3.0)
    assert gm.xor_structure == (10.0, 3.0)
    pb = gm.bayes_error()
    assert pb == pytest.approx(0.018252, abs=5e-7)                 # docs/gradient_features.md (quadrature, 6 digits)
    X, y = gm.sample(100_000, 0)
    err = np.sign(np.abs(X[:, 0]) - np.abs(X[:, 1])) != y             # the Bayes rule
    assert abs(err.mean() - pb) < Z * math.sqrt(pb * (1 - pb) / len(y))


def test_general_bayes_error_path_agrees_with_quadrature():
    """A fifth component of weight 0 hides the XOR structure: the MC of E min posterior must match."""
    gm = xor_mixture(16, 2.0)
    hidden = GaussianMixture(np.vstack([gm.mus, np.ones(16)]), np.append(gm.sigmas, 1.0),
                             np.append(gm.weights, 0.0), np.append(gm.labels, 1.0))
    assert hidden.xor_structure is None
    exact = gm.bayes_error()
    mc = hidden.bayes_error(n_mc=200_000, seed=1)
    assert abs(mc - exact) < Z * 0.5 / math.sqrt(200_000)
    assert exact > 0.01                                               # the comparison is not trivially 0 = 0


def test_xor_structure_survives_rotation_and_rejects_near_misses():
    gm = xor_mixture(6, 1.5)
    R = np.linalg.qr(np.random.default_rng(0).normal(size=(6, 6)))[0]
    assert GaussianMixture(gm.mus @ R.T, gm.sigmas, gm.weights, gm.labels).xor_structure is not None
    mus = gm.mus.copy()
    mus[2, 0] = 1e-3                                                  # mu_1 and mu_3 no longer orthogonal
    assert GaussianMixture(mus, gm.sigmas, gm.weights, gm.labels).xor_structure is None
    assert GaussianMixture(gm.mus, gm.sigmas, gm.weights, gm.labels[[0, 2, 1, 3]]).xor_structure is None


@pytest.mark.parametrize("d,sigma,tau", [(100, 1.0, 1.0), (100, 3.0, 0.3), (50, 2.0, 0.2)])
def test_xor_ground_truth_loss_quadrature_vs_mc(d, sigma, tau):
    gm = xor_mixture(d, sigma)
    a, W, b = gm.ground_truth(tau)
    exact, se0 = gm.ground_truth_loss(tau)
    assert se0 == 0.0
    mc, se = gm.network_loss_mc(a, W, b, "hinge", n=400_000, seed=2)
    assert abs(mc - exact) < Z * se
    if 4 * b[0] / 2 <= math.sqrt(d):                                   # B.41 regime 4c <= sqrt d
        assert exact <= 3 * d ** -tau + 4 / (d ** (0.9 * tau - 1) * math.sqrt(tau * math.log(d)))


def test_xor_ground_truth_v13_value():
    """Spec V13: d = 100, sigma_B = 1, tilde tau = 1 gives 2.1e-5 (MC 2e7 samples there)."""
    # 5%: the reference quotes 2 digits (2.5%) of a 2e7-sample MC (SE 1.5%)
    assert xor_mixture(100, 1.0).ground_truth_loss(1.0)[0] == pytest.approx(2.1e-5, rel=0.05)


def test_ground_truth_shape_and_mc_path():
    gm = _mixture(4, d=10, r=3)
    a, W, b = gm.ground_truth(2.0)
    c = math.sqrt(2.0 * math.log(10)) * gm.feature_stats()["sigma_Bplus"]
    assert np.allclose(np.linalg.norm(W, axis=1), 1) and np.allclose(b, 2 * c) and np.allclose(a, gm.labels / c)
    val, se = gm.ground_truth_loss(2.0, "logistic", n_mc=20_000)
    assert se > 0 and 0 < val < 2


def test_feature_stats_xor():
    st_ = xor_mixture(64, 2.0).feature_stats()
    assert st_["B_mu1"] == st_["B_mu2"] == 1.0 and st_["theta"] == 0.0 and st_["sigma_Bplus"] == 2.0
    assert st_["p_B"] == 0.25 and st_["Bx1_paper"] == 3.0 * 8


def test_bounds_vs_monte_carlo():
    gm = _mixture(5, d=30, r=4)
    X, _ = gm.sample(200_000, 6)
    nrm2 = np.sum(X * X, 1)
    Bx, Bx1, Bx2 = gm.bounds()
    assert Bx == math.inf
    assert abs(nrm2.mean() - Bx2) < Z * nrm2.std() / math.sqrt(len(nrm2))
    nrm = np.sqrt(nrm2)
    assert nrm.mean() <= Bx1 + Z * nrm.std() / math.sqrt(len(nrm))
    assert Bx1 - nrm.mean() < 0.05 * Bx1                              # Jensen slack O(1/d)


def test_sample_reproducible_and_label_frequencies():
    gm = _mixture(7)
    X1, y1 = gm.sample(1000, 3)
    X2, y2 = gm.sample(1000, np.random.default_rng(3))
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    _, y = gm.sample(100_000, 1)
    p_pos = gm.weights[gm.labels > 0].sum()
    assert abs((y > 0).mean() - p_pos) < Z * math.sqrt(p_pos * (1 - p_pos) / 100_000)


@pytest.mark.parametrize("kw,name", [
    (dict(weights=[0.5, 0.6]), "weights"), (dict(weights=[1.5, -0.5]), "weights"),
    (dict(sigmas=[1.0, 0.0]), "sigmas"), (dict(labels=[1, 0]), "labels"),
    (dict(mus=[[0.0, np.nan], [1.0, 1.0]]), "mus"), (dict(sigmas=[1.0]), "sigmas")])
def test_mixture_bad_input(kw, name):
    args = dict(mus=[[1.0, 0.0], [0.0, 1.0]], sigmas=[1.0, 1.0], weights=[0.5, 0.5], labels=[1, -1])
    args.update(kw)
    with pytest.raises(InvalidParameterError, match=repr(name)):
        GaussianMixture(**args)


def test_bad_neurons_and_options():
    gm = xor_mixture(4, 1.0)
    with pytest.raises(InvalidParameterError, match="'W'"):
        gm.simplified_gradient(np.zeros((2, 4)), 0.0)
    with pytest.raises(InvalidParameterError, match="'b'"):
        gm.A(np.ones((2, 4)), np.nan)
    with pytest.raises(InvalidParameterError, match="'loss'"):
        gm.ground_truth_loss(loss="mse")
    with pytest.raises(InvalidParameterError, match="'tau'"):
        gm.ground_truth(0.0)
    with pytest.raises(InvalidParameterError, match="'sigma_B'"):
        xor_mixture(4, -1.0)
    with pytest.raises(InvalidParameterError, match="'d'"):
        xor_mixture(1, 1.0)


# ---------------------------------------------------------------------------------------------- linear data
def _linear(seed=0, d=6):
    rng = np.random.default_rng(seed)
    return LinearSeparable(rng.normal(size=d), [0.5, 1.0, 2.5], [0.2, 0.3, 0.5])


def test_linear_G_A_vs_monte_carlo_including_w_parallel_to_w_star():
    ls = _linear()
    rng = np.random.default_rng(1)
    W = np.vstack([rng.normal(size=(4, ls.dim)), 0.7 * ls.w_star, -2.0 * ls.w_star])
    b = np.array([0.3, -0.5, 1.0, 0.0, 0.6, -1.2])
    G_mc, se = ls.simplified_gradient_mc(W, b, 400_000, 2)
    G = ls.simplified_gradient(W, b)
    se = np.where(se == 0, 1e-300, se)                                # exact zeros off w* for parallel w
    assert np.max(np.abs(G_mc - G) / se) < Z
    A_mc, ase = ls.A_mc(W, b, 400_000, 3)
    assert np.max(np.abs(A_mc - ls.A(W, b)) / ase) < Z


def test_linear_moments_and_ground_truth():
    ls = _linear(2)
    assert ls.rho == pytest.approx(0.2 * 0.5 + 0.3 + 0.5 * 2.5) and ls.beta == 0.5
    X, y = ls.sample(200_000, 4)
    yx = y[:, None] * X
    assert np.max(np.abs(yx.mean(0) - ls.E_yx()) / (yx.std(0) / math.sqrt(len(y)))) < Z
    a, W, b = ls.ground_truth()
    g = np.maximum(X @ W.T - b, 0) @ a
    assert np.allclose(g, X @ ls.w_star / ls.beta, atol=1e-12)  # 1e-12: relu(u) - relu(-u) = u up to round-off
    assert np.min(y * g) >= 1 - 1e-12                                # margin: hinge risk exactly 0
    assert ls.ground_truth_loss() == 0.0
    # SE of a mean of losses in [0, 1.1] over 2e5 samples <= 0.5/450
    assert ls.ground_truth_loss("logistic") == pytest.approx(np.mean(logistic2(y * g)), abs=Z * 0.5 / 450)
    with pytest.raises(InvalidParameterError, match="'signal'"):
        LinearSeparable([1.0, 0.0], [0.0, 1.0])
    with pytest.raises(InvalidParameterError, match="'w_star'"):
        LinearSeparable([0.0, 0.0])


@given(hnp.arrays(np.float64, 5, elements=st.floats(-3, 3)), st.floats(-2, 2), st.integers(0, 1000))
def test_linear_complement_identity(w, b, seed):
    ls = _linear(seed % 7, d=5)
    if np.linalg.norm(w) < 1e-3:
        w = w + 1.0
    G = ls.simplified_gradient(w[None], b)[0] + ls.simplified_gradient(-w[None], -b)[0]
    assert np.allclose(G, ls.E_yx(), atol=1e-12)  # 1e-12: round-off


# ---------------------------------------------------------------------------------------------- losses
def test_losses_at_zero_and_slopes():
    h = 1e-6
    assert hinge(0.0) == 1.0 and logistic2(0.0) == 1.0
    assert (hinge(h) - hinge(-h)) / (2 * h) == pytest.approx(-1.0)
    # 1e-8: central difference with h = 1e-6 (h^2 term 1e-13, round-off 1e-10)
    assert (logistic2(h) - logistic2(-h)) / (2 * h) == pytest.approx(-1 / (2 * math.log(2)), rel=1e-8)
    assert np.isfinite(logistic2(-1e4)) and logistic2(1e4) == 0.0


# ---------------------------------------------------------------------------------------------- sufficient statistics
def test_coords_path_equals_full_path():
    gm = _mixture(8, d=7, r=3)
    rng = np.random.default_rng(9)
    W = rng.normal(size=(6, 7))
    b = rng.normal(size=6) * 3
    Q, mus_q = gm.span_basis
    g = W @ Q
    perp = W - g @ Q.T
    rho = np.linalg.norm(perp, axis=1)
    G_Q, G_perp = gm.simplified_gradient_coords(g, rho, b)
    assert np.allclose(G_Q @ Q.T + G_perp[:, None] * perp / rho[:, None], gm.simplified_gradient(W, b),
                       rtol=0, atol=1e-14)                           # 1e-14: same formula, round-off only
    assert np.allclose(mus_q @ Q.T, gm.mus, atol=1e-14)  # 1e-14: round-off of the SVD basis


def test_sample_init_coords_distribution():
    gm = xor_mixture(50, 1.0)
    assert gm.span_basis[0].shape == (50, 2)                          # rank 2 although r = 4
    g, rho = gm.sample_init_coords(200_000, 0.7, 3)
    n2 = np.sum(g * g, 1) + rho ** 2                                  # ||w||^2 ~ 0.49 chi^2_50
    assert abs(n2.mean() - 0.49 * 50) < Z * n2.std() / math.sqrt(len(n2))
    dev2 = (n2 - n2.mean()) ** 2                                       # Var(0.49 chi^2_50) = 2 * 50 * 0.49^2
    assert abs(dev2.mean() - 2 * 50 * 0.49 ** 2) < Z * dev2.std() / math.sqrt(len(n2))
    cov = np.cov(g.T)
    assert np.max(np.abs(cov - 0.49 * np.eye(2))) < Z * 0.49 * math.sqrt(2 / len(g))


def test_xor_feature_hit_rate_matches_spec_v2():
    """Spec V2 (d = 10^6, tau = 1, 2e6 neurons): P[G in C_{D_1, sigma_B/sqrt d}, ||G|| >= sqrt(d)/5] = 0.0020."""
    d = 10 ** 6
    gm = xor_mixture(d, 1.0)
    g, rho = gm.sample_init_coords(400_000, 1.0, 11)
    G_Q, G_perp = gm.simplified_gradient_coords(g, rho, math.sqrt(d * math.log(math.log(d))))
    _, mus_q = gm.span_basis
    D1 = mus_q[0] / np.linalg.norm(mus_q[0])
    nG = np.sqrt(np.sum(G_Q ** 2, 1) + G_perp ** 2)
    hit = (np.abs(G_Q @ D1) / nG > 1 - 1 / math.sqrt(d)) & (nG >= math.sqrt(d) / 5)
    se = math.sqrt(0.002 * (1 / 400_000 + 1 / 2_000_000))
    assert abs(hit.mean() - 0.0020) < Z * se + 5e-5                   # 5e-5: the reference's rounding to 4 decimals


def test_xor_ground_truth_loss_vs_nested_quadrature():
    """Second oracle: plain nested quad of the hinge integrand, split at its kinks (no Gaussian partial moments)."""
    from scipy import integrate
    d, sigma, tau = 64, 2.0, 0.25
    gm = xor_mixture(d, sigma)
    c = gm.ground_truth(tau)[2][0] / 2
    f = lambda t: max(abs(t) - 2 * c, 0.0) / c
    dens = lambda t, m: math.exp(-0.5 * ((t - m) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))

    def inner(v):
        K = 1 + f(v)
        g = lambda u: max(K - f(u), 0.0) * dens(u, math.sqrt(d))
        return integrate.quad(g, -2 * c - c * K, 2 * c + c * K, points=[-2 * c, 2 * c], epsabs=1e-13, limit=200)[0]

    ref = sum(integrate.quad(lambda v: inner(v) * dens(v, 0.0), lo, hi, epsabs=1e-13, limit=200)[0]
              for lo, hi in ((-40 * sigma, -2 * c), (-2 * c, 2 * c), (2 * c, 40 * sigma)))
    assert gm.ground_truth_loss(tau)[0] == pytest.approx(ref, rel=1e-9, abs=1e-12)   # both quad at ~1e-12
    assert ref > 1e-3                                                 # a nonzero loss is compared


def test_coords_and_bias_bad_input():
    gm = xor_mixture(5, 1.0)
    with pytest.raises(InvalidParameterError, match="'g'"):
        gm.simplified_gradient_coords(np.zeros((2, 2)), np.zeros(2), 0.0)
    with pytest.raises(InvalidParameterError, match="'rho'"):
        gm.simplified_gradient_coords(np.ones((2, 2)), -np.ones(2), 0.0)
    with pytest.raises(InvalidParameterError, match="'b'"):
        gm.simplified_gradient(np.ones((3, 5)), np.ones(2))
    with pytest.raises(InvalidParameterError, match="'sigma_w'"):
        gm.sample_init_coords(3, 0.0, 0)


def test_monte_carlo_standard_errors_are_calibrated():
    """The MC oracle's se is what the z-bands above divide by: over 300 independent runs the spread of the
    estimates equals the mean reported se (ratio within 1 +- 5 / sqrt(2 * 300), the SE of a sample std)."""
    gm = _mixture(2, d=3, r=4)
    W = np.array([[1.0, -0.5, 0.2], [0.3, 0.3, -1.0]])
    b = np.array([0.2, -0.4])
    runs = [gm.simplified_gradient_mc(W, b, 2000, s) for s in range(300)]
    est, se = np.array([r[0] for r in runs]), np.array([r[1] for r in runs])
    assert np.all(np.abs(est.std(0, ddof=1) / se.mean(0) - 1) < Z / math.sqrt(600))
    runs = [gm.A_mc(W, b, 2000, s) for s in range(300)]
    est, se = np.array([r[0] for r in runs]), np.array([r[1] for r in runs])
    assert np.all(np.abs(est.std(0, ddof=1) / se.mean(0) - 1) < Z / math.sqrt(600))
