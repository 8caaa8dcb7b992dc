"""Rank-r in-context linear regression ([Shi24] Ch. 5; docs/icl.md).

Oracles: Rao-Blackwellised Monte Carlo (exact average over w and x_q given the context), finite
differences, BFGS over the factors A, B, exact identities; Hypothesis properties.
"""
import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

import popdyn
from popdyn._validate import InvalidParameterError
from popdyn.models import icl


def _rotation(d, seed):
    Q, R = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return Q * np.sign(np.diag(R))


def _cov(d, seed, gap=0.15):
    """Rotated covariance with eigenvalues separated by at least ``gap`` (unique rank-r optima)."""
    lam = np.sort(0.2 + gap * np.arange(d) + np.random.default_rng(seed).uniform(0, 1, d))[::-1]
    Q = _rotation(d, seed + 1)
    return Q @ np.diag(lam) @ Q.T


@st.composite
def covariances(draw, d_max=6):
    """Random SPD covariance with an eigen-gap >= 0.05 (d <= 8, eigen-gap)."""
    d = draw(st.integers(1, d_max))
    seed = draw(st.integers(0, 2**31 - 1))
    return _cov(d, seed, gap=0.05)


def _mc_population_loss(U, L, N, n, seed):
    """Rao-Blackwellised MC of Lemma 5.1: mean and SE of 1/2 tr((Lh U - I) L (U^T Lh - I)) ."""
    rng = np.random.default_rng(seed)
    d = L.shape[0]
    X = rng.standard_normal((n, N, d)) @ np.linalg.cholesky(L).T
    Lh = np.einsum("bni,bnj->bij", X, X) / N
    E = Lh @ U - np.eye(d)
    vals = 0.5 * np.einsum("bij,jk,bik->b", E, L, E)
    return vals.mean(), vals.std(ddof=1) / np.sqrt(n)


def _mc_eval_risk(U, L, w, M, sigma, rho, n, seed):
    """MC of the eval risk given w, exact over x_q: (U^T h - w)^T L (U^T h - w), rho M labels flipped."""
    rng = np.random.default_rng(seed)
    d = L.shape[0]
    X = rng.standard_normal((n, M, d)) @ np.linalg.cholesky(L).T
    beta = np.ones(M)
    beta[:int(round(rho * M))] = -1
    y = (X @ w) * beta + sigma * rng.standard_normal((n, M))
    e = np.einsum("bm,bmd->bd", y, X) / M @ U - w
    vals = np.einsum("bi,ij,bj->b", e, L, e)
    return vals.mean(), vals.std(ddof=1) / np.sqrt(n)


# ---- Lemma 5.1 ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("N, seed", [(3, 0), (10, 1), (40, 2)])
def test_population_loss_vs_rao_blackwell_mc(N, seed):
    L = _cov(4, seed)
    U = 0.3 * np.random.default_rng(seed + 7).standard_normal((4, 4))  # a non-symmetric U
    mean, se = _mc_population_loss(U, L, N, 100_000, seed)
    assert abs(icl.population_loss(U, L, N) - mean) < 5 * se  # 5 SE, n = 1e5 prompts, seed fixed


def test_population_loss_depends_on_uU_only_and_zero_U_gives_constant():
    L, U = _cov(3, 4), np.random.default_rng(0).standard_normal((3, 3))
    assert icl.population_loss(U, L, 7, u=2.5) == pytest.approx(icl.population_loss(2.5 * U, L, 7), rel=1e-12)
    assert icl.population_loss(np.zeros((3, 3)), L, 7) == pytest.approx(np.trace(L) / 2, rel=1e-14)  # C = tr/2


@pytest.mark.parametrize("seed", [0, 1])
def test_gradients_vs_finite_differences(seed):
    rng = np.random.default_rng(seed)
    L, U, u, N, h = _cov(4, seed), rng.standard_normal((4, 4)), 0.7, 5, 1e-6
    dU, du = icl.population_gradient(U, L, N, u)
    fd = np.zeros_like(U)
    for i in range(4):
        for j in range(4):
            E = np.zeros_like(U)
            E[i, j] = h
            fd[i, j] = (icl.population_loss(U + E, L, N, u) - icl.population_loss(U - E, L, N, u)) / (2 * h)
    fdu = (icl.population_loss(U, L, N, u + h) - icl.population_loss(U, L, N, u - h)) / (2 * h)
    # 1e-7: central differences, error h^2 |f'''| ~ 1e-12 plus rounding eps |f| / h ~ 1e-10
    np.testing.assert_allclose(dU, fd, atol=1e-7)
    assert du == pytest.approx(fdu, abs=1e-7)
    A, B = rng.standard_normal((2, 4, 2))
    dA, dB, _ = icl.factor_gradient(A, B, L, N, u)
    for grad, loss_of in ((dA, lambda X: icl.population_loss(X @ B.T, L, N, u)),
                          (dB, lambda X: icl.population_loss(A @ X.T, L, N, u))):
        X0, fdX = (A, np.zeros_like(A)) if grad is dA else (B, np.zeros_like(B))
        for i in range(4):
            for j in range(2):
                E = np.zeros_like(X0)
                E[i, j] = h
                fdX[i, j] = (loss_of(X0 + E) - loss_of(X0 - E)) / (2 * h)
        np.testing.assert_allclose(grad, fdX, atol=1e-7)  # as above


# ---- Thm 5.4.1 --------------------------------------------------------------------------------------
@pytest.mark.parametrize("r", [1, 2, 3, 4])
def test_rank_r_optimum_vs_bfgs_over_factors(r):
    d, N, L = 4, 10, _cov(4, 11)

    def f(x):
        A, B = x[:d * r].reshape(d, r), x[d * r:].reshape(d, r)
        dA, dB, _ = icl.factor_gradient(A, B, L, N)
        return icl.population_loss(A @ B.T, L, N), np.concatenate([dA.ravel(), dB.ravel()])

    x0 = 0.3 * np.random.default_rng(r).standard_normal(2 * d * r)
    res = scipy.optimize.minimize(f, x0, jac=True, method="BFGS", options={"gtol": 1e-12, "maxiter": 10_000})
    opt = icl.optimum(L, N, r)
    A, B = res.x[:d * r].reshape(d, r), res.x[d * r:].reshape(d, r)
    assert opt.unique
    assert res.fun == pytest.approx(opt.value, abs=1e-10)  # 1e-10: BFGS, gtol 1e-12
    np.testing.assert_allclose(A @ B.T, opt.U, atol=1e-5)  # 1e-5: sqrt of the 1e-10 value gap / curvature ~ 1


def test_full_rank_and_stationarity():
    L, N = _cov(5, 3), 8
    G = icl.gamma_matrix(L, N)
    U, value = icl.full_rank_optimum(L, N)
    np.testing.assert_allclose(icl.rank_r_optimum(L, N, 5), np.linalg.inv(G), atol=1e-12)  # float64 inverse
    assert icl.optimal_loss(L, N, 5) == pytest.approx(value, rel=1e-12)
    for r in range(6):
        opt = icl.optimum(L, N, r)
        dU, _ = icl.population_gradient(opt.U, L, N)
        expected = np.diag(np.where(np.arange(5) < r, 0.0, -opt.lam**2))
        np.testing.assert_allclose(opt.Q.T @ dU @ opt.Q, expected, atol=1e-12)  # float64 rounding
        assert icl.population_loss(opt.U, L, N) == pytest.approx(opt.value, rel=1e-12)


def test_uniqueness_flag_and_limits():
    assert not icl.optimum([1.0, 1.0, 0.5], 10, 1).unique
    assert icl.optimum([1.0, 1.0, 0.5], 10, 2).unique
    assert not icl.optimum([1.0, 0.0, 0.0], 10, 2).unique  # lambda_r = 0
    lam = np.array([2.0, 1.0, 0.5])
    np.testing.assert_allclose(icl.rank_r_optimum(lam, 10**10, 2), np.diag([0.5, 1.0, 0.0]), atol=1e-9)  # 1/N
    assert np.abs(icl.rank_r_optimum(lam, 1, 3)).max() < 0.3


@settings(max_examples=40)
@given(covariances(), st.integers(1, 10_000), st.data())
def test_optimum_properties(L, N, data):
    d = L.shape[0]
    values = [icl.optimal_loss(L, N, r) for r in range(d + 1)]
    assert np.all(np.diff(values) <= 1e-12 * values[0])  # D.1 non-increasing, rounding only
    r = data.draw(st.integers(0, d))
    opt = icl.optimum(L, N, r)
    assert icl.population_loss(opt.U, L, N) == pytest.approx(opt.value, rel=1e-9, abs=1e-12)  # D.1
    c = data.draw(st.floats(0.1, 10))
    U = np.random.default_rng(d).standard_normal((d, d))
    assert icl.population_loss(c * U, L, N, 1 / c) == pytest.approx(icl.population_loss(U, L, N), rel=1e-9)  # D.4
    R = _rotation(d, N)
    np.testing.assert_allclose(icl.rank_r_optimum(R @ L @ R.T, N, r), R @ opt.U @ R.T, atol=1e-9)  # D.5
    s = data.draw(st.floats(0.1, 10))
    scaled = icl.optimum(s * L, N, r)
    np.testing.assert_allclose(scaled.v, opt.v / s, rtol=1e-9)  # D.6
    assert scaled.value - s * np.trace(L) / 2 == pytest.approx(s * (opt.value - np.trace(L) / 2), rel=1e-9, abs=1e-12)
    ex = icl.excess_loss(U, L, N)
    assert ex >= 0
    assert ex == pytest.approx(icl.population_loss(U, L, N) - icl.optimal_loss(L, N, d), rel=1e-8, abs=1e-9)  # D.7


# ---- Thm 5.4.2, 5.4.3, flips ------------------------------------------------------------------------
@pytest.mark.parametrize("r", [1, 2, 3, 5])
def test_thm542_two_computations_and_mc(r):
    L, N, M, sigma = _cov(5, 21), 10, 8, 0.5
    w = np.random.default_rng(r).standard_normal(5)
    U = icl.rank_r_optimum(L, N, r)
    closed = icl.optimum_eval_risk(L, N, r, w, M, sigma)
    assert closed == pytest.approx(icl.eval_risk(U, L, w, M, sigma), rel=1e-12)
    mean, se = _mc_eval_risk(U, L, w, M, sigma, 0.0, 100_000, r)
    assert abs(closed - mean) < 5 * se  # 5 SE, n = 1e5 contexts, seed fixed


@pytest.mark.parametrize("rho", [0.0, 0.25, 0.5, 1.0])
def test_general_eval_risk_with_flips_vs_mc(rho):
    L, M = _cov(4, 5), 8
    rng = np.random.default_rng(int(4 * rho))
    U, w = 0.4 * rng.standard_normal((4, 4)), rng.standard_normal(4)  # non-symmetric, not commuting with L
    mean, se = _mc_eval_risk(U, L, w, M, 0.3, rho, 100_000, 1)
    assert abs(icl.eval_risk(U, L, w, M, 0.3, rho=rho) - mean) < 5 * se  # 5 SE, n = 1e5


def test_spec_flip_formula_only_for_commuting_U():
    """docs/errata.md (icl): a first flip formula wrote U for U^T; right for U*, wrong for a general U."""
    L, M, rho = _cov(4, 5), 8, 0.25
    rng = np.random.default_rng(3)
    w, b = rng.standard_normal(4), 1 - 2 * rho

    def spec(U):
        nw = w @ L @ w
        return (b**2 + 1 / M) * w @ L @ U @ L @ U @ L @ w + nw * np.trace(U @ L @ U @ L) / M - 2 * b * w @ L @ L @ U @ w + nw

    Us = icl.rank_r_optimum(L, 20, 2)
    assert spec(Us) == pytest.approx(icl.eval_risk_flip(Us, L, w, M, rho), rel=1e-12)
    U = 0.4 * rng.standard_normal((4, 4))
    mean, se = _mc_eval_risk(U, L, w, M, 0.0, rho, 100_000, 2)
    assert abs(icl.eval_risk_flip(U, L, w, M, rho) - mean) < 5 * se  # 5 SE
    assert abs(spec(U) - mean) > 20 * se  # that form is off by far more than the MC error


def test_eval_risk_average_identities():
    L, N, M, sigma = _cov(4, 8), 12, 6, 0.7
    U = np.random.default_rng(0).standard_normal((4, 4))
    zero = icl.eval_risk(U, L, np.zeros(4), M, sigma)
    exact = zero + sum(icl.eval_risk(U, L, e, M, sigma) - zero for e in np.eye(4))  # R quadratic in w
    assert icl.eval_risk_avg(U, L, M, sigma) == pytest.approx(exact, rel=1e-12)
    for r in range(5):
        Us = icl.rank_r_optimum(L, N, r)
        assert icl.optimum_eval_risk_avg(L, N, r, M, sigma) == pytest.approx(icl.eval_risk_avg(Us, L, M, sigma), rel=1e-12)
        assert icl.optimum_eval_risk_avg(L, N, r, N, 0.0) == pytest.approx(2 * icl.optimal_loss(L, N, r), rel=1e-10)  # D.9


@settings(max_examples=40)
@given(covariances(), st.integers(1, 1000), st.integers(1, 64), st.floats(0, 3), st.data())
def test_risk_properties(L, N, M, sigma, data):
    d = L.shape[0]
    r = data.draw(st.integers(0, d))
    w = np.random.default_rng(N).standard_normal(d)
    opt = icl.optimum(L, N, r)
    c = opt.Q.T @ w
    xi_norm = float(np.sum(opt.lam[r:] * c[r:] ** 2))
    risk = icl.optimum_eval_risk(L, N, r, w, M, sigma)
    assert risk >= xi_norm * (1 - 1e-12) and risk >= 0  # D.8
    bigger = icl.optimum_eval_risk(L, N, r, w, M, sigma + 1)
    assert bigger > risk if r else bigger == risk  # increasing in sigma^2 (r = 0: U = 0 ignores the context)
    assert icl.optimum_eval_risk(L, N, 0, w, M, sigma) == pytest.approx(w @ L @ w, rel=1e-12)
    lim = xi_norm + np.sum(c[:r] ** 2 * opt.lam[:r] * (opt.lam[:r] * opt.v[:r] - 1) ** 2)
    o_m = 10 * d * (1 + sigma**2 + w @ L @ w) / 1e12  # the O(1/M) terms at M = 1e12 (lambda_i v_i <= 1)
    assert icl.optimum_eval_risk(L, N, r, w, 10**12, sigma) == pytest.approx(lim, rel=1e-9, abs=o_m)  # M -> inf
    flip0 = icl.eval_risk_flip(opt.U, L, w, M, 0.0)
    assert flip0 == pytest.approx(icl.eval_risk(opt.U, L, w, M, 0.0), rel=1e-12)  # D.11
    assert icl.eval_risk_flip(opt.U, L, w, 2 * M, 0.5) >= w @ L @ w * (1 - 1e-12)


@settings(max_examples=40)
@given(covariances(), st.integers(1, 1000), st.integers(1, 64), st.floats(0, 3), st.data())
def test_rank_gap_properties(L, N, M, sigma, data):
    d = L.shape[0]
    r = data.draw(st.integers(0, d))
    r2 = data.draw(st.integers(r, d))
    opt = icl.optimum(L, N, r)
    s = np.random.default_rng(M).standard_normal(r)
    w = opt.Q[:, :r] @ s
    gap = icl.rank_gap(L, N, r, r2, s, M, sigma)
    diff = icl.optimum_eval_risk(L, N, r2, w, M, sigma) - icl.optimum_eval_risk(L, N, r, w, M, sigma)
    assert gap >= 0 and gap == pytest.approx(diff, rel=1e-8, abs=1e-10 * (1 + w @ L @ w))  # Thm 5.4.3
    g0, g1, g2 = (icl.rank_gap(L, N, r, r2, s, M, x) for x in (0.0, 1.0, np.sqrt(2.0)))
    assert g2 - g1 == pytest.approx(g1 - g0, rel=1e-9, abs=1e-14)  # linear in sigma^2 = 0, 1, 2: equal steps
    assert icl.rank_gap(L, N, r, r2, s, 2 * M, sigma) == pytest.approx(gap / 2, rel=1e-12)  # 1/M
    if r2 < d:
        assert icl.rank_gap(L, N, r, r2 + 1, s, M, sigma) >= gap  # non-decreasing in r'


def test_large_n_approximation():
    lam = 0.6 ** np.arange(1, 7)
    w = np.random.default_rng(0).standard_normal(6)
    approx, ratio = icl.large_n_eval_risk(lam, 10**7, 3, w, 16, 0.5)
    assert ratio > 1e5
    assert approx == pytest.approx(icl.optimum_eval_risk(lam, 10**7, 3, w, 16, 0.5), rel=1e-4)  # O(T/(N lam_r))
    approx, ratio = icl.large_n_eval_risk(lam, 10, 3, w, 16, 0.5)
    assert ratio < 2 and abs(approx / icl.optimum_eval_risk(lam, 10, 3, w, 16, 0.5) - 1) > 0.05


# ---- gradient flow and predict ------------------------------------------------------------------------
def test_gradient_flow_reaches_optimum_through_saddles():
    lam, N, r = np.array([1.0, 0.4, 0.15, 0.05]), 20, 2
    A0, B0 = icl.initial_factors(4, r, 1e-3, seed=0)
    t = np.geomspace(1e-2, 2000, 400)
    traj = icl.gradient_flow(lam, N, A0, B0, np.r_[0, t], rtol=1e-9, atol=1e-12)
    A, B, u = icl.flow_parameters(traj.y, 4, r)
    U = A[-1] @ B[-1].T
    opt = icl.optimum(lam, N, r)
    assert np.linalg.norm(U - opt.U) / np.linalg.norm(opt.U) < 1e-6  # docs/icl.md: < 1e-6 at late times
    loss = np.array([icl.population_loss(a @ b.T, lam, N) for a, b in zip(A, B)])
    saddles = icl.saddle_losses(lam, N, r)
    found = [p["saddle"] for p in icl.flow_plateaus(traj.t, loss, saddles, rtol=0.01, min_duration=1.0)]
    assert found == [0, 1, 2]  # origin, rank-1 saddle, optimum, in that order


def test_gradient_descent_is_the_population_map_and_tends_to_the_flow():
    lam, N, r = np.array([1.0, 0.4, 0.15]), 10, 2
    A0, B0 = icl.initial_factors(3, r, 0.1, seed=2)
    A, B, u = A0.copy(), B0.copy(), 1.0
    for _ in range(25):  # the update written with factor_gradient (independent of gradient_descent's own algebra)
        dA, dB, du = icl.factor_gradient(A, B, lam, N, u)
        A, B, u = A - 0.3 * dA, B - 0.3 * dB, u - 0.3 * du
    GA, GB, Gu = icl.gradient_descent(lam, N, A0, B0, 0.3, [0, 25], train_u=True)
    np.testing.assert_allclose(GA[0], A0, rtol=0, atol=0)
    np.testing.assert_allclose(GA[-1], A, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(GB[-1], B, rtol=1e-12, atol=1e-14)
    assert Gu[-1] == pytest.approx(u, rel=1e-12)
    flow = icl.flow_parameters(icl.gradient_flow(lam, N, A0, B0, [0.0, 20.0], rtol=1e-11, atol=1e-13).y, 3, r)
    U_flow = flow[0][-1] @ flow[1][-1].T
    errs = []
    for lr in (0.2, 0.1, 0.05):  # same flow time 20: the gap to the flow is O(lr)
        GA, GB, _ = icl.gradient_descent(lam, N, A0, B0, lr, [round(20 / lr)])
        errs.append(np.linalg.norm(GA[-1] @ GB[-1].T - U_flow))
    assert errs[0] > errs[1] > errs[2] and errs[1] / errs[2] == pytest.approx(2, rel=0.2)


def test_predict_registered_and_consistent():
    p = icl.Problem.geometric(5, context=20, r=2, test_context=16, sigma=0.5)
    pred = popdyn.predict(p, lr=0.5, steps=4000, n_points=21)
    assert set(pred.observables) == {"loss", "excess_loss", "rel_error", "eval_risk"}
    assert pred["rel_error"][-1] < 1e-3 and pred.meta["optimum_loss"] == pytest.approx(icl.optimal_loss(p.Lambda, 20, 2))
    assert pred["eval_risk"][-1] == pytest.approx(pred.meta["optimum_eval_risk"], rel=1e-3)
    assert pred["loss"][0] == pytest.approx(np.trace(p.Lambda) / 2, rel=1e-3)  # start near the origin


def test_predict_methods_agree_at_small_lr_and_divergence_is_reported():
    p = icl.Problem.geometric(4, context=20, r=2)
    gd, flow = (popdyn.predict(p, lr=0.01, steps=3000, n_points=31, init_scale=0.1, method=m) for m in ("gd", "flow"))
    assert np.abs(gd["loss"] - flow["loss"]).max() < 2e-3  # O(lr) apart: measured 4.9e-4 (4.9e-3 at lr = 0.1)
    bad = popdyn.predict(p, lr=50.0, steps=200, n_points=11)
    assert bad.status == -1 and "lower lr" in bad.message and np.isfinite(bad["loss"]).all()


# ---- bad inputs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, name", [
    (dict(Lambda=np.eye(3), context=5, r=4), "'r'"),
    (dict(Lambda=np.eye(3), context=0, r=1), "'context'"),
    (dict(Lambda=np.diag([1.0, -1.0]), context=5, r=1), "'Lambda'"),
    (dict(Lambda=np.array([[1.0, 0.5], [0.0, 1.0]]), context=5, r=1), "'Lambda'"),
    (dict(Lambda=np.ones((2, 3)), context=5, r=1), "'Lambda'"),
    (dict(Lambda=np.zeros((2, 2)), context=5, r=1), "'Lambda'"),
    (dict(Lambda=np.eye(2), context=5, r=1, test_context=16, rho=0.1), "'rho'"),
    (dict(Lambda=np.eye(2), context=5, r=1, sigma=np.nan), "'sigma'"),
])
def test_bad_problems(kwargs, name):
    with pytest.raises(InvalidParameterError, match=name):
        icl.Problem(**kwargs)


def test_bad_function_inputs():
    with pytest.raises(InvalidParameterError, match="'r'"):
        icl.rank_r_optimum(np.eye(3), 5, 4)
    with pytest.raises(InvalidParameterError, match="'U'"):
        icl.population_loss(np.eye(2), np.eye(3), 5)
    with pytest.raises(InvalidParameterError, match="'w'"):
        icl.eval_risk(np.eye(3), np.eye(3), np.ones(2), 4, 0.0)
    with pytest.raises(InvalidParameterError, match="'r2'"):
        icl.rank_gap(np.eye(3), 5, 2, 1, np.ones(2), 4)
    with pytest.raises(InvalidParameterError, match="'Lambda'"):
        icl.gamma_matrix(np.array([[1.0, np.inf], [np.inf, 1.0]]), 3)
