"""popdyn.models.looped: TF = GD, exact curves against iterated GD and mpmath, bounds, MP limit, properties."""
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, note, target
from hypothesis import strategies as st
from scipy import integrate

import popdyn
from popdyn._validate import InvalidParameterError, RegimeWarning
from popdyn.models import looped as L


@st.composite
def prompts(draw, d_max=8, n_max=40):
    """A realizable prompt with n > d (full column rank a.s.), unit theta*, alpha in +-[0.1, 5]."""
    d = draw(st.integers(1, d_max))
    n = draw(st.integers(d + 1, n_max))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    X = rng.standard_normal((n, d)) * rng.uniform(0.2, 3.0, d)
    th = rng.standard_normal(d)
    th /= np.linalg.norm(th)
    alpha = rng.uniform(0.1, 5.0) * rng.choice([-1.0, 1.0])
    return X, th, X @ th, alpha, rng


def _note(X, th, alpha):
    note(f"X={X.tolist()!r}, theta*={th.tolist()!r}, alpha={alpha!r}")


# ---- A.6 (1)-(4): the transformer is GD ---------------------------------------------------------------

@given(prompts(), st.integers(0, 50), st.sampled_from(["1/L", "2/(L+mu)", "schedule"]))
def test_tf_equals_alpha_gd(data, T, kind):
    X, th, y, alpha, rng = data
    _note(X, th, alpha)
    L_ = np.linalg.eigvalsh(X.T @ X)[-1]
    eta = rng.uniform(0.1, 1.9, T) / L_ if kind == "schedule" else kind
    tf, theta = L.forward(X, y, alpha, T, eta), L.gd(X, y, T, eta)
    err = np.max(np.abs(tf - alpha * theta)) / (abs(alpha) * max(1, np.max(np.abs(theta))))
    target(float(err))
    assert err <= 1e-10  # 1e-10: the two recursions differ only by rounding, measured 6.9e-16


@given(prompts(d_max=5, n_max=15), st.integers(0, 12))
def test_full_attention_rows_frozen_and_fast_path_exact(data, T):
    X, th, y, alpha, _ = data
    Z0 = L.build_prompt(X, y, alpha)
    Q, P = L.attention_weights_gd(X.shape[1])
    Zf, rows_f = L.looped_forward(Z0, Q, P, T, "1/L", full=True, return_trajectory=True)
    Zl, rows_l = L.looped_forward(Z0, Q, P, T, "1/L", return_trajectory=True)
    assert np.array_equal(Zf[:-1], Z0[:-1]) and np.all(rows_f[:, -1] == alpha)  # exact: the mask zeroes those rows
    assert np.allclose(rows_f, rows_l, rtol=0, atol=1e-12 * abs(alpha))  # 1e-12: same products, summed in another order


def test_attention_last_row_matches_lemma_8_13():
    rng = np.random.default_rng(3)
    X, y, q0 = rng.standard_normal((7, 3)), rng.standard_normal(7), rng.standard_normal(3)
    Z = L.build_prompt(X, y, 1.7, q0)
    Q, P = rng.standard_normal((2, 4, 4))
    full = L.linear_attention(Z, Q, P)
    assert np.all(full[:-1] == 0)
    np.testing.assert_allclose(L.linear_attention(Z, Q, P, last_row=True), full[-1], rtol=1e-12)  # 1e-12: reassociation
    Q, P = L.attention_weights_gd(3)
    np.testing.assert_allclose(L.linear_attention(Z, Q, P)[-1, :3], q0 @ X.T @ X + 1.7 * y @ X, rtol=1e-12)


def test_general_qp_closed_form():
    """docs/looped.md: the last row is [q0, alpha] prod_t (I - eta_t Q C P) with C = [X, y]^T [X, y], any (Q, P)."""
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((9, 3)), rng.standard_normal(9)
    Q, P = np.eye(4) + 0.2 * rng.standard_normal((2, 4, 4))
    etas = rng.uniform(0.005, 0.02, 6)
    row = L.looped_forward(L.build_prompt(X, y, 0.8), Q, P, 6, etas)[-1]
    Xy = np.column_stack([X, y])
    M = np.eye(4)
    for e in etas:
        M = M @ (np.eye(4) - e * Q @ Xy.T @ Xy @ P)
    np.testing.assert_allclose(row, np.r_[np.zeros(3), 0.8] @ M, rtol=1e-11, atol=1e-13)  # 1e-11: 6 products of 4x4


@given(prompts(), st.integers(0, 30), st.floats(-4, 4).filter(lambda a: abs(a) > 0.05))
def test_linearity_permutation_rotation_scale(data, T, c):
    X, th, y, alpha, rng = data
    _note(X, th, alpha)
    tf = L.forward(X, y, alpha, T, "1/L")
    scale = max(1.0, np.max(np.abs(tf)))
    np.testing.assert_allclose(L.forward(X, y, c * alpha, T, "1/L"), c * tf, rtol=0, atol=1e-10 * abs(c) * scale)
    perm = rng.permutation(X.shape[0])
    np.testing.assert_allclose(L.forward(X[perm], y[perm], alpha, T, "1/L"), tf, rtol=0, atol=1e-10 * scale)
    R = np.linalg.qr(rng.standard_normal((X.shape[1],) * 2))[0]
    e0, e1 = L.exact_error(X, th, alpha, T, "1/L"), L.exact_error(X @ R, R.T @ th, alpha, T, "1/L")
    np.testing.assert_allclose(e1, e0, rtol=0, atol=1e-10 * abs(alpha))
    np.testing.assert_allclose(L.gd(abs(c) * X, abs(c) * y, T, "1/L"), L.gd(X, y, T, "1/L"), rtol=0, atol=1e-10 * scale)
    # 1e-10 throughout: each identity is exact in real arithmetic


# ---- the exact curve against independent computations --------------------------------------------

@given(prompts(), st.integers(0, 40))
def test_exact_error_equals_iterated_gd(data, T):
    X, th, y, alpha, rng = data
    etas = rng.uniform(0.1, 1.5, T) / np.linalg.eigvalsh(X.T @ X)[-1]
    traj = L.gd(X, y, T, etas, return_trajectory=True)
    np.testing.assert_allclose(L.exact_error(X, th, alpha, T, etas), alpha * (traj @ th - 1), rtol=0,
                               atol=1e-10 * abs(alpha))  # 1e-10: measured <= 1e-9 agreement, 1e-12 typical
    np.testing.assert_allclose(L.exact_sq_dist(X, th, T, etas), np.sum((traj - th) ** 2, 1), rtol=0, atol=1e-10)


def test_exact_curves_have_no_float_floor():
    """Against mpmath at 60 digits for T = 200 (where iterated GD floors near 1e-32 for the squared distance)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((32, 4))
    th = rng.standard_normal(4)
    th /= np.linalg.norm(th)
    T = 200
    sq, err = L.exact_sq_dist(X, th, T, "1/L"), L.exact_error(X, th, 1.0, T, "1/L")
    mpmath.mp.dps = 60
    A = mpmath.matrix((X.T @ X).tolist())
    lmax = max(mpmath.eigsy(A)[0])
    B = mpmath.eye(4) - A / lmax
    v = mpmath.matrix(th.tolist())
    for t in (50, 120, 200):
        w = (B ** t) * v
        ref_sq, ref_err = float(sum(x * x for x in w)), float(-sum(a * b for a, b in zip(v, w)))
        assert t < 200 or ref_sq < 1e-40  # t = 200: far below the float floor of iterated GD
        assert abs(sq[t] / ref_sq - 1) < 1e-8  # 1e-8: t products of factors, each off by ~eigvalsh's 1e-15 relative
        assert abs(err[t] / ref_err - 1) < 1e-8
    assert np.sum((L.gd(X, X @ th, T, "1/L") - th) ** 2) > 1e6 * sq[T]  # iterated GD cannot get there


def test_noisy_and_preconditioned_curves_against_gd():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20, 3))
    th = rng.standard_normal(3)
    th /= np.linalg.norm(th)
    y = X @ th + 0.3 * rng.standard_normal(20)
    G = np.array([[1.0, 0.2, 0.0], [0.2, 0.5, 0.1], [0.0, 0.1, 2.0]])
    etas = rng.uniform(0.2, 0.8, 25) / np.linalg.eigvalsh(X.T @ X)[-1] / 2
    for Gamma in (None, G):
        traj = L.gd(X, y, 25, etas, Gamma=Gamma, return_trajectory=True)
        np.testing.assert_allclose(L.exact_error(X, th, 1.3, 25, etas, y=y, Gamma=Gamma), 1.3 * (traj @ th - 1),
                                   atol=1e-11)  # 1e-11: 25 GD steps on O(1) values
        np.testing.assert_allclose(L.exact_sq_dist(X, th, 25, etas, y=y, Gamma=Gamma), np.sum((traj - th) ** 2, 1),
                                   atol=1e-11)
    Q, P = L.attention_weights_gd(3, G)  # docs/looped.md: the transformer with P = diag(Gamma, 0) is preconditioned GD
    np.testing.assert_allclose(L.forward(X, y, 1.3, 25, etas, Q, P), 1.3 * traj[-1], atol=1e-11)
    theta_ls = np.linalg.lstsq(X, y, rcond=None)[0]  # noisy: GD converges to the least squares solution
    np.testing.assert_allclose(L.exact_error(X, th, 1.0, 3000, "1/L", y=y)[-1], theta_ls @ th - 1, atol=1e-12)


def test_mean_over_task_by_enumeration_and_monte_carlo():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((12, 4))
    eta = rng.uniform(0.5, 1.0, 10) / np.linalg.eigvalsh(X.T @ X)[-1]
    basis = np.eye(4)  # E over theta* of theta*^T M theta* = tr(M)/d = average over any orthonormal basis
    enum = np.mean([L.exact_error(X, e, 2.0, 10, eta) for e in basis], axis=0)
    np.testing.assert_allclose(L.mean_error_over_task(X, 2.0, 10, eta), enum, atol=1e-13)  # 1e-13: rounding of 4 terms
    enum_sq = np.mean([L.exact_sq_dist(X, e, 10, eta) for e in basis], axis=0)
    np.testing.assert_allclose(L.mean_error_over_task(X, 2.0, 10, eta, squared=True), enum_sq, atol=1e-13)
    th = rng.standard_normal((40_000, 4))
    th /= np.linalg.norm(th, axis=1, keepdims=True)
    mc = L.exact_error(np.broadcast_to(X, (40_000, 12, 4)), th, 2.0, 10, eta)
    se = mc.std(0) / np.sqrt(len(th))
    assert np.all(np.abs(mc.mean(0) - enum)[1:] <= 5 * se[1:])  # 5 SE, n = 4e4, seed 2


# ---- (8-f, 8-g, 8-k): bounds ----------------------------------------------------------------------

@given(prompts(), st.integers(0, 60))
@example((np.eye(3) * [1.0, 2.0, 3.0], np.ones(3) / 3**0.5, np.array([1, 2, 3]) / 3**0.5, 1.0, None), 5)
def test_bounds_chain_and_monotonicity(data, T):
    X, th, y, alpha, _ = data
    _note(X, th, alpha)
    k = L.condition_number(X)
    err = np.abs(L.exact_error(X, th, alpha, T, "1/L"))
    tol = 1e-12 * abs(alpha)  # 1e-12: rounding of the exact curve (values <= |alpha|)
    assert err[T] <= L.bound_tight(k, T, alpha) + tol
    assert L.bound_tight(k, T, alpha) <= abs(alpha) * np.exp(-T / k) + tol <= L.bound_paper(k, T, alpha) + 2 * tol
    assert np.all(np.diff(err) <= tol)
    ratio = (L.exact_error(X, th, alpha, T, "1/L")[T] + alpha) / alpha  # <TF, theta*>/alpha
    if T >= 1:
        assert 1 - (1 - 1 / k) ** T - 1e-12 <= ratio <= 1 + 1e-12
    target(float(err[T] / max(L.bound_tight(k, T, alpha), 1e-300)))


def test_special_cases():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((10, 3))
    th = np.array([0.6, 0.0, 0.8])
    assert L.exact_error(X, th, -2.5, 0, "1/L")[0] == pytest.approx(2.5, abs=1e-15)  # T = 0: q = 0, err = -alpha
    Qr = np.linalg.qr(rng.standard_normal((10, 3)))[0] * 1.7  # X^T X = 1.7^2 I: kappa = 1
    assert L.condition_number(Qr) == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.abs(L.exact_error(Qr, th, 1.0, 5, "1/L")[1:]) < 1e-14)  # 1e-14: 1 - lambda_i/lambda_1 rounding
    x1 = rng.standard_normal((6, 1))
    assert np.all(L.exact_error(x1, np.ones(1), 1.0, 4, "1/L")[1:] == 0)  # d = 1: 1 - lambda/lambda = 0 exactly


def test_divergence_beyond_two_over_L():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((15, 3))
    th = rng.standard_normal(3)
    th /= np.linalg.norm(th)
    L_ = np.linalg.eigvalsh(X.T @ X)[-1]
    sq = L.exact_sq_dist(X, th, 200, 2.1 / L_)
    assert sq[-1] > 1e6 and np.all(np.diff(sq[50:]) > 0)
    assert L.exact_sq_dist(X, th, 200, 1.9 / L_)[-1] < 1e-3


def test_condition_number_and_rank_deficiency():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((20, 5))
    assert L.condition_number(X) == pytest.approx(np.linalg.cond(X) ** 2, rel=1e-10)  # 1e-10: SVD vs eigvalsh route
    assert L.condition_number(rng.standard_normal((3, 5))) == np.inf  # n <= d
    assert L.condition_number(np.zeros((4, 2))) == np.inf
    stack = L.condition_number(rng.standard_normal((6, 20, 5)))
    assert stack.shape == (6,) and np.all(stack >= 1)
    assert L.bound_paper(np.inf, 100) == 1.0 and L.bound_tight(np.inf, 100, alpha=-3) == 3.0  # vacuous limit


@given(st.floats(1.0, 1e4), st.floats(1e-12, 0.99), st.sampled_from(["tight", "paper"]))
def test_loops_needed_inverts_the_bound(kappa, eps, which):
    T = int(L.loops_needed(kappa, eps, which))
    bound = (lambda t: L.bound_tight(kappa, t)) if which == "tight" else (lambda t: L.bound_paper(kappa, t))
    assert bound(T) <= eps * (1 + 1e-12)  # 1e-12: log/exp rounding at the boundary
    if T > 1:
        assert bound(T - 1) > eps * (1 - 1e-12)
    if which == "tight":
        assert T <= L.loops_needed(kappa, eps, "paper")


def test_gatmiry_bound_is_exponential_in_T():
    assert [L.gatmiry_condition(T, 4, 10**12) for T in (1, 5, 7)] == [True, True, False]
    n_needed = lambda T, d, eps: 64 * T**2 * d**4 * 16**T / eps**2
    assert n_needed(7, 4, 1.0) > 10**12  # consistent with the condition failing at T = 7
    assert L.gatmiry_bound(2, 3, 10**6) == pytest.approx(8 * 2 * 9 * 16 / 1000)
    assert L.gatmiry_bound(2000, 3, 10) == np.inf and L.gatmiry_bound(0, 3, 10) == 0.0


# ---- Marchenko-Pastur ---------------------------------------------------------------------------

def test_mp_curve_against_quadrature_and_mpmath():
    for g in (0.1, 0.25, 0.6):
        xm, xp = (1 - g**0.5) ** 2, (1 + g**0.5) ** 2
        E = L.mp_error_curve(g, 30, 2)
        for t in (0, 1, 7, 30):
            ref = integrate.quad(lambda x: (1 - x / xp) ** (2 * t) * np.sqrt(max((xp - x) * (x - xm), 0))
                                 / (2 * np.pi * g * x), xm, xp, limit=200, epsabs=1e-14)[0]  # the MP density
            assert abs(E[t] - ref) < 1e-10  # 1e-10: both quadratures converge to < 1e-12
    mpmath.mp.dps = 30
    g = 0.3
    xm, xp = (1 - g**0.5) ** 2, (1 + g**0.5) ** 2
    ref = mpmath.quad(lambda x: (1 - x / xp) ** 5 * mpmath.sqrt((xp - x) * (x - xm)) / (2 * mpmath.pi * g * x), [xm, xp])
    assert abs(L.mp_error_curve(g, 5)[5] - float(ref)) < 1e-12  # 1e-12: quad_vec epsrel 1e-12


@given(st.floats(0.01, 0.95), st.integers(1, 60))
def test_mp_properties(g, T):
    E = L.mp_error_curve(g, T)
    assert E[0] == pytest.approx(1.0, abs=1e-12) and E[1] == pytest.approx(1 - (1 + g**0.5) ** -2, abs=1e-12)
    assert np.all(np.diff(E) < 0)
    assert np.all(L.mp_error_curve(min(g * 1.05, 0.99), T) >= E - 1e-13)  # increasing in gamma
    assert L.mp_kappa(g) == pytest.approx(((1 + g**0.5) / (1 - g**0.5)) ** 2)


def test_mp_matches_finite_d():
    """Spec A.3: d = 400, gamma = 0.25, finite-d mean (1/d) tr (I - A/lambda_max)^t within 4 % of E_gamma(t)."""
    X = np.random.default_rng(0).standard_normal((1600, 400))
    fin = -L.mean_error_over_task(X, 1.0, 30, "1/L")
    E = L.mp_error_curve(0.25, 30)
    for t in (1, 3, 10, 30):
        assert abs(fin[t] / E[t] - 1) < 0.06  # 1.4 %, 1.0 %, 1.5 %, 4.5 % measured at one draw


# ---- predict, schedule, errors ---------------------------------------------------------------------

def test_predict_exact_and_mp():
    p = L.Problem.isotropic_gaussian(800, 200)
    ex, mp = popdyn.predict(p, loops=20, prompts=16), popdyn.predict(p, loops=20, method="mp")
    assert set(ex.observables) == set(mp.observables) == {"error", "abs_error", "sq_dist"}
    gap = np.abs(ex["abs_error"] - mp["abs_error"])
    assert np.all(gap <= 5 * np.asarray(ex.meta["se"]["abs_error"]) + 0.05 * mp["abs_error"])
    # 5 SE of the 16-prompt mean (theta* spread) + 5 %: finite-d bias at d = 200 (1-4 % measured at d = 400)
    np.testing.assert_allclose(ex["abs_error"], -ex["error"])  # lr = 1/L: the signed error has one sign


def test_predict_regime_warnings_and_errors():
    with pytest.warns(RegimeWarning, match="n > d"):
        pred = popdyn.predict(L.Problem.isotropic_gaussian(3, 5), loops=3, prompts=10)
    assert pred.meta["regime"] and np.isinf(pred.meta["kappa"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RegimeWarning)
        with pytest.raises(InvalidParameterError, match="'method'"):
            popdyn.predict(L.Problem.isotropic_gaussian(3, 5), loops=3, method="mp")
    with pytest.raises(InvalidParameterError, match="'loops'"):
        popdyn.predict(L.Problem.fig8_1(16), loops=-1)


def test_optimal_schedule_beats_constant_steps():
    p = L.Problem.fig8_1(16)
    eta, value = L.optimal_schedule(p, 4, prompts=256, seed=1)
    X, th, _ = L.sample_prompts(p, 256, seed=1)
    assert L.exact_sq_dist(X, th, 4, eta)[:, -1].mean() == pytest.approx(value, rel=1e-10)
    lmax = np.linalg.eigvalsh(np.swapaxes(X, 1, 2) @ X)[:, -1].mean()
    best_const = min(L.exact_sq_dist(X, th, 4, c / lmax)[:, -1].mean() for c in np.linspace(0.3, 1.5, 61))
    assert value < best_const


@pytest.mark.parametrize("call, name", [
    (lambda: L.forward(np.ones((3, 2)), np.ones(3), 1.0, -1, "1/L"), "T"),
    (lambda: L.forward(np.ones((3, 2)), np.ones(3), 0.0, 1, "1/L"), "alpha"),
    (lambda: L.forward(np.ones((3, 2)), np.ones(2), 1.0, 1, "1/L"), "y"),
    (lambda: L.gd(np.ones((3, 2)), np.ones(3), 2, [0.1]), "eta"),
    (lambda: L.gd(np.ones((3, 2)), np.ones(3), 2, -0.1), "eta"),
    (lambda: L.gd(np.ones((3, 2)), np.ones(3), 2, "1/mu"), "eta"),
    (lambda: L.gd(np.full((3, 2), np.nan), np.ones(3), 2, 0.1), "X"),
    (lambda: L.exact_error(np.ones((3, 2)), np.ones(2), 1.0, 2, 0.1), "theta_star"),
    (lambda: L.exact_error(np.ones((3, 2)), np.array([1.0, 0.0]), 1.0, 2, 0.1, Gamma=-np.eye(2)), "Gamma"),
    (lambda: L.bound_tight(0.5, 3), "kappa"),
    (lambda: L.bound_paper(2.0, -1), "T"),
    (lambda: L.mp_error_curve(1.0, 3), "gamma"),
    (lambda: L.loops_needed(2.0, 0.0), "eps"),
    (lambda: L.Problem(4, 2, alpha=0.0), "alpha"),
    (lambda: L.Problem(4, 2, cov=np.array([1.0, -1.0])), "cov"),
    (lambda: L.Problem.from_gamma(4, 0.0), "gamma"),
])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        call()
