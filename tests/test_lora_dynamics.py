"""LoRA overlap dynamics: B0/B1 Monte Carlo against independent computations, ODE limits and rates, predict."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import popdyn
from popdyn import InvalidParameterError, RegimeWarning
from popdyn.dynamics import escape_time, scalar_flow, solve_ode
from popdyn.models.lora import (B0, B1, Problem, gradient_second_moment, h, h0, limit_sign, overlap_ode,
                                overlap_recursion, plateau_overlap, population_loss, time_to_overlap)
from popdyn.models.lora import dynamics as lora_dynamics
from popdyn.models.lora import problem as lora_problem


def _tanh_problem(seed=2, k=4, xi=1.0):
    return Problem.orthonormal(k=k, xi=xi, activation="tanh", seed=seed)


# ---- B0 / B1 --------------------------------------------------------------------------------------

def _direct_grad_sq(problem, m, d, n, seed):
    """E||L||^2 by brute force in R^d: explicit W (W W^T = G), u, u_hat, projections, x ~ N(0, I_d)."""
    k, xi, sig, lam = problem.k, problem.xi, problem.sigma, problem.lam
    W = np.zeros((k, d))
    W[:, :k] = np.linalg.cholesky(problem.G + 1e-14 * np.eye(k))
    u, e2 = np.eye(d)[k], np.eye(d)[k + 1]
    uh = m * u + np.sqrt(1 - m * m) * e2
    V = (W + xi * np.outer(problem.c, u)) / problem.r[:, None]
    Vh = (W + xi * np.outer(problem.c_hat, uh)) / problem.r_hat[:, None]
    Q, _ = np.linalg.qr(np.c_[W.T, uh])  # span(W, u_hat): the gradient is projected off it
    x = np.random.default_rng(seed).standard_normal((n, d))
    res = sig(x @ V.T) @ lam - sig(x @ Vh.T) @ lam
    g = -2 * res * (sig.deriv(x @ Vh.T) @ (lam * xi * problem.c_hat / problem.r_hat))
    L = g[:, None] * (x - (x @ Q) @ Q.T)
    q = np.sum(L * L, axis=1)
    return q.mean(), q.std(ddof=1) / np.sqrt(n)


@pytest.mark.parametrize("m", [-0.7, 0.0, 0.6, 1.0])
def test_gradient_second_moment_against_direct_d_dim_mc(m):
    # non-orthonormal G and non-quantised c (per-neuron norms r_i) at two d: checks B0 and B1 separately
    rng = np.random.default_rng(5)
    c, ch = rng.standard_normal((2, 3))
    p = Problem(Problem.random_features(3, 1.0, seed=1).G, [1.0, -0.6, 0.9], c / np.linalg.norm(c),
                ch / np.linalg.norm(ch), 1.3, activation="tanh")
    for d in (6, 9):
        mean, se = gradient_second_moment(p, m, d=d, n=1 << 16, seed=0)
        ref, ref_se = _direct_grad_sq(p, m, d, 100_000, seed=7)
        assert abs(mean - ref) < 4 * np.hypot(se, ref_se)  # 4 SE of the difference of independent MCs


def test_B0_against_gauss_hermite_k1():
    # k = 1: B0 is a 3-d Gaussian integral over (z, a, b); tanh is smooth so 40^3 Gauss-Hermite is exact
    # to ~1e-10, far below the MC SE
    p = Problem(np.eye(1), [1.3], [1.0], [-1.0], 0.8, activation="tanh")
    x, w = np.polynomial.hermite_e.hermegauss(40)
    w = w / w.sum()
    z, a, b = np.meshgrid(x, x, x, indexing="ij")
    W = w[:, None, None] * w[None, :, None] * w[None, None, :]
    r = np.sqrt(1 + p.xi**2)
    for m in (-0.5, 0.3, 0.95):
        teach = np.tanh((z + p.xi * a) / r)
        pre = (z - p.xi * (m * a + np.sqrt(1 - m * m) * b)) / r
        g = 1.3 * (1 - np.tanh(pre) ** 2) * p.xi * (-1.0) / r
        q = (1.3 * teach - 1.3 * np.tanh(pre)) ** 2 * g**2
        exact0 = np.sum(W * q)
        exact1 = np.sum(W * q * (np.sqrt(1 - m * m) * a - m * b) ** 2)
        mean0, se0 = B0(p, m, n=1 << 16)
        mean1, se1 = B1(p, m, n=1 << 16)
        assert abs(mean0 - exact0) < 4 * se0 and abs(mean1 - exact1) < 4 * se1  # 4 SE, n = 2**16, seed 0


def test_B0_vectorised_common_random_numbers_and_seed():
    # RQMC (the method for G != I); the quadrature has no sample
    p = _tanh_problem()
    grid = np.array([[-1.0, 0.0], [0.5, 1.0]])
    mean, se = B0(p, grid, n=5000, method="rqmc")
    assert mean.shape == se.shape == (2, 2)
    for idx in np.ndindex(2, 2):  # common random numbers: the same sample for every m
        # 1e-14: the same points; only the summation order of the vectorised block differs
        assert mean[idx] == pytest.approx(B0(p, grid[idx], n=5000, method="rqmc")[0], rel=1e-14)
    at = lambda seed: B0(p, 0.3, n=5000, seed=seed, method="rqmc")[0]
    assert at(1) != at(2) and at(1) == at(1)


@pytest.mark.parametrize("bad", [dict(m=1.5), dict(n=1), dict(seed=-1), dict(method="exact")])
def test_B0_bad_input(bad):
    kw = dict(m=0.0, n=100, seed=0) | bad
    with pytest.raises(InvalidParameterError, match=repr(next(iter(bad)))):
        B0(_tanh_problem(), kw.pop("m"), **kw)


# ---- ODE / recursion --------------------------------------------------------------------------------

def test_lazy_limit_tanh_solution():
    # linear sigma: K' = 1, so h = h0 exactly; the paper ODE solves to tanh(h0 lr t + artanh m0)
    p = Problem.orthonormal(k=5, xi=0.7, activation="linear", seed=4)
    lr, m0, t = 1e-3, 0.2, np.linspace(0, 5000, 51)
    sol = overlap_ode(p, m0, t, lr=lr, convention="paper", rtol=1e-10, atol=1e-12)
    exact = np.tanh(h0(p) * lr * t + np.arctanh(m0))
    assert sol.success and np.max(np.abs(sol.y - exact)) < 1e-8  # 1e-8: rtol 1e-10 x 50 steps, margin 20


def test_recursion_converges_to_ode_at_rate_lr():
    p = _tanh_problem()
    m0, horizon = 0.05 * limit_sign(p), 3.0  # lr * steps fixed
    lrs = np.array([0.04, 0.02, 0.01, 0.005])
    errs = []
    for lr in lrs:
        steps = int(round(horizon / lr))
        rec = overlap_recursion(p, m0, steps, lr=lr)
        ode = overlap_ode(p, m0, [0.0, float(steps)], lr=lr, convention="paper")
        errs.append(abs(rec.y[-1] - ode.y[-1]))
    slope = np.polyfit(np.log(lrs), np.log(errs), 1)[0]
    assert 0.85 < slope < 1.15  # Euler global error O(lr); window +-0.15 for the pre-asymptotic regime


def test_paper_ode_goes_to_one_when_h_positive():
    p = _tanh_problem()
    s = limit_sign(p)
    grid = np.linspace(0, 1, 201)
    assert np.all(s * h(p, s * grid) > 0)  # h keeps the sign of h(0) on the whole side
    sol = overlap_ode(p, 0.01 * s, np.linspace(0, 4e4, 200), lr=1e-3, convention="paper")
    assert np.all(np.diff(s * sol.y) >= -1e-12)  # monotone up to solver rounding at the clipped boundary
    assert 1 - s * sol.y[-1] < 1e-6  # 1 - m ~ exp(-2|h(1)| lr t) = exp(-80 |h(1)|)


def test_escape_time_matches_time_to_overlap():
    p = _tanh_problem()
    s, lr = limit_sign(p), 1e-3
    t = np.linspace(0, 3000, 3001)
    sol = overlap_ode(p, 0.01 * s, t, lr=lr, convention="paper")
    tau = time_to_overlap(p, 0.01 * s, 0.5 * s)
    # grid spacing 1 step = lr time units; linear interpolation error ~ spacing^2 |m''| << 1e-3
    assert escape_time(sol.t, sol.y, 0.5) * lr == pytest.approx(tau, abs=1e-3)
    assert time_to_overlap(p, 0.01 * s, -0.5 * s) == np.inf and time_to_overlap(p, 0.2, 0.2) == 0.0
    assert time_to_overlap(p, 0.0, s) == np.inf


def test_corrected_ode_matches_spec_delta_tau_form():
    # docs/lora.md: dm/dtau = delta h (1-m^2) - 2 delta^2 m B0(m), tau = t/d, lr = delta/d; the step-time ODE
    # differs by the (k+2)/d and B1/d terms, so the gap must shrink like 1/d
    p, delta, tau_end, m0 = _tanh_problem(), 0.3, 8.0, 0.02
    grid = np.linspace(-1, 1, 41)
    b0 = B0(p, grid, n=1 << 14)[0]  # the same sample as the table behind overlap_ode (n, seed equal)
    f = lambda tau, m: delta * h(p, m) * (1 - m * m) - 2 * delta**2 * m * np.interp(m, grid, b0)
    ref = solve_ode(f, m0 * limit_sign(p), [0.0, tau_end], bounds=(-1, 1)).y[-1]
    gaps = []
    for d in (500, 4000):
        sol = overlap_ode(p, m0 * limit_sign(p), [0.0, tau_end * d], lr=delta / d, d=d, n_mc=1 << 14)
        gaps.append(abs(sol.y[-1] - ref))
    assert gaps[1] < gaps[0] / 4  # O(1/d): a factor 8 in d gives a factor ~8, at least 4


def test_plateau_below_one_and_decreasing_in_delta():
    p, d = _tanh_problem(), 1000
    s = limit_sign(p)
    plats = [s * plateau_overlap(p, delta / d, d) for delta in (0.05, 0.1, 0.2, 0.4)]
    assert all(x < 1 for x in plats) and np.all(np.diff(plats) < 0)
    # the corrected ODE run long settles on the root
    sol = overlap_ode(p, 0.02 * s, [0.0, 200 * d], lr=0.1 / d, d=d)
    assert s * sol.y[-1] == pytest.approx(plats[1], abs=1e-7)  # 1e-7: ODE rtol 1e-10, approach exp(-rate t)


def test_plateau_first_order_formula_as_delta_to_zero():
    p, d = _tanh_problem(), 1000
    deltas = np.array([0.0025, 0.005, 0.01, 0.02])
    rel = []
    for delta in deltas:
        root = 1 - abs(plateau_overlap(p, delta / d, d))
        first = 1 - abs(plateau_overlap(p, delta / d, d, method="first_order"))
        rel.append(abs(root / first - 1))
    slope = np.polyfit(np.log(deltas), np.log(rel), 1)[0]
    assert rel[0] < 0.05 and 0.8 < slope < 1.2  # relative error O(delta) for smooth h (tanh)


def test_plateau_is_one_when_c_hat_equals_c():
    p = Problem(np.eye(2), [1.0, 0.5], [0.6, 0.8], [0.6, 0.8], 1.0, activation="tanh")
    assert plateau_overlap(p, 1e-3, 100) == pytest.approx(1.0, abs=1e-12)


@given(st.integers(0, 10_000), st.floats(-0.5, 0.5))
@settings(max_examples=10)
def test_paper_ode_sign_symmetry(seed, m0):
    # h(-m; c, -c_hat) = -h(m; c, c_hat)  =>  m(t; -c_hat, -m0) = -m(t; c_hat, m0)
    p = Problem.orthonormal(k=3, xi=1.0, activation="relu", seed=seed)
    q = Problem(p.G, p.lam, p.c, -p.c_hat, p.xi, "relu")
    t = np.linspace(0, 2000, 5)
    a = overlap_ode(p, m0, t, lr=1e-3, convention="paper").y
    b = overlap_ode(q, -m0, t, lr=1e-3, convention="paper").y
    np.testing.assert_allclose(a, -b, atol=1e-9)  # 1e-9: two solves at rtol 1e-10


def test_dynamics_bad_input():
    p = _tanh_problem()
    with pytest.raises(InvalidParameterError, match="'d'"):
        overlap_ode(p, 0.1, [0, 1], lr=1e-3)  # corrected needs d
    with pytest.raises(InvalidParameterError, match="'lr'"):
        overlap_ode(p, 0.1, [0, 1], lr=0.0, convention="paper")
    with pytest.raises(InvalidParameterError, match="'m0'"):
        overlap_recursion(p, 1.5, 3, lr=1e-3)
    with pytest.raises(InvalidParameterError, match="'convention'"):
        overlap_ode(p, 0.1, [0, 1], lr=1e-3, d=100, convention="ito")
    assert overlap_recursion(p, limit_sign(p) * 0.5, 3, lr=50.0).status == -1  # leaves [-1, 1]


# ---- predict ----------------------------------------------------------------------------------------

def test_predict_observables_meta_and_reproducible():
    p = Problem.orthonormal(k=4, xi=1.0, activation="relu", seed=0)
    kw = dict(d=500, lr=0.1 / 500, steps=5000, n_points=50)
    pred = popdyn.predict(p, **kw)
    assert set(pred.observables) == {"m", "loss"} and pred.status == 0
    assert pred.t.dtype.kind == "i" and pred.t[0] == 0 and pred.t[-1] == 5000 and pred.t.size == 50
    assert pred.meta["t_unit"] == "steps" and pred.meta["delta"] == pytest.approx(0.1)
    assert pred.meta["options"]["m0"] == pytest.approx(limit_sign(p) * 0.5 / np.sqrt(500))
    np.testing.assert_array_equal(pred["loss"], popdyn.models.lora.population_loss(p, pred["m"]))  # exact
    ivp = popdyn.predict(p, method="solve_ivp", **kw)
    np.testing.assert_array_equal(ivp["loss"], popdyn.models.lora.population_loss(p, ivp["m"]))
    again = popdyn.predict(p, **kw)
    assert np.array_equal(again["m"], pred["m"]) and np.array_equal(again["loss"], pred["loss"])
    regime = {e["condition"].split(":")[0]: e for e in pred.meta["regime"]}
    assert regime["A3"]["holds"] and regime["sign(m0) = sign(h(0)) (limit is sign(h(0)) u)"]["holds"]


def test_predict_warns_on_wrong_sign_and_large_delta():
    p = Problem.orthonormal(k=4, xi=1.0, activation="relu", seed=0)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        pred = popdyn.predict(p, d=100, lr=0.02, steps=100, m0=-limit_sign(p) * 0.05, n_points=5)
    msgs = [str(w.message) for w in rec if issubclass(w.category, RegimeWarning)]
    assert any("sign(m0)" in m for m in msgs) and any("delta" in m for m in msgs)
    assert not all(e["holds"] for e in pred.meta["regime"])


def test_predict_stiff_large_delta_finishes():
    # delta = lr d = 1000: the normalisation drift relaxes m to ~0 within ~1e-3 steps (stiff); LSODA copes
    p = Problem.orthonormal(k=8, xi=1.0, activation="relu", seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RegimeWarning)
        pred = popdyn.predict(p, d=2000, lr=0.5, steps=20_000, n_points=20, method="solve_ivp")
        grid = popdyn.predict(p, d=2000, lr=0.5, steps=20_000, n_points=20)
    assert pred.status == 0 and pred.meta["nfev"] < 5000 and np.max(np.abs(pred["m"][1:])) < 1e-3
    assert grid.status == 0 and np.max(np.abs(grid["m"][1:])) < 1e-3  # the exact flow: stiffness costs nothing


@pytest.mark.parametrize("bad", [dict(d=6), dict(d=100.5), dict(lr=-1.0), dict(steps=0), dict(m0=1.2),
                                 dict(convention="ito"), dict(n_points=1), dict(method="rk4"), dict(n_grid=2)])
def test_predict_bad_input_names_parameter(bad):
    p = Problem.orthonormal(k=4, xi=1.0, seed=0)
    kw = dict(d=100, lr=1e-3, steps=10) | bad
    with pytest.raises(InvalidParameterError, match=repr(next(iter(bad)))):
        popdyn.predict(p, **kw)


# ---- predict's "grid" method: the drift tabulated once, flowed exactly ----------------------------

# (activation, k, xi, delta, steps, convention, m0 / (0.5/sqrt d) in units of sign h(0)); d = 2000. Each
# horizon covers the escape and the plateau: delta = 1000 is stiff (relaxes within a step), xi = 0.1
# and 0.2 are lazy, erf at delta = 5 and tanh at 50 plateau deep inside (-1, 1), -10 starts on the wrong side
_GRID_CASES = [("relu", 8, 1.0, 0.2, 60_000, "corrected", 1), ("relu", 8, 1.0, 1000.0, 2_000, "corrected", 1),
               ("tanh", 4, 1.0, 0.3, 40_000, "corrected", 1), ("tanh", 4, 1.0, 0.3, 40_000, "corrected", -10),
               ("erf", 6, 2.0, 5.0, 5_000, "corrected", 1), ("he3", 5, 1.0, 0.1, 100_000, "corrected", 1),
               ("relu", 16, 0.1, 0.5, 2_000_000, "corrected", 1), ("tanh", 8, 0.2, 50.0, 200_000, "corrected", 1),
               ("relu", 8, 1.0, 0.05, 200_000, "paper", 1)]


def _grid_case(act, k, xi, delta, steps, convention, side):
    p = Problem.orthonormal(k, xi, act, 0)
    m0 = side * (limit_sign(p) or 1) * 0.5 / np.sqrt(2000)
    return p, dict(d=2000, lr=delta / 2000, steps=steps, n_points=400, convention=convention, m0=m0)


@pytest.mark.parametrize("case", _GRID_CASES)
def test_grid_method_matches_solve_ivp_over_whole_trajectory(case):
    p, kw = _grid_case(*case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RegimeWarning)
        grid = popdyn.predict(p, **kw)
        ivp = popdyn.predict(p, method="solve_ivp", **kw)
    assert grid.status == 0 and np.array_equal(grid.t, ivp.t)
    assert np.ptp(ivp["m"]) > 0.5 * abs(kw["m0"])  # it moves (delta = 1000: from m0 = 0.011 to ~1e-4)
    # 1e-6: the accuracy goal for "grid" against the LSODA path (rtol 1e-8, its own error ~3e-8);
    # measured 1.1e-8 .. 3.1e-8 here, while n_grid = 257 misses it in 7 of the 9 cases (up to 1.9e-5)
    assert np.max(np.abs(grid["m"] - ivp["m"])) < 1e-6


def test_grid_error_is_second_order_in_n_grid():
    # the flow of the piecewise-linear drift errs by O(dm^2 f''/f'): a factor 2 in nodes gives ~4 in error,
    # so a grid made too coarse fails the 1e-6 test above (n_grid = 257 here errs by > 1e-6)
    p, kw = _grid_case("he3", 5, 1.0, 0.1, 100_000, "corrected", 1)
    t = np.linspace(0, kw["steps"], 201)
    args = dict(lr=kw["lr"], d=kw["d"], convention=kw["convention"])
    ref = overlap_ode(p, kw["m0"], t, method="LSODA", rtol=1e-12, atol=1e-14, **args).y  # ~1e-11 off
    ns = np.array([257, 513, 1025, 2049])
    errs = [np.max(np.abs(overlap_ode(p, kw["m0"], t, method="grid", n_grid=n, **args).y - ref)) for n in ns]
    slope = np.polyfit(np.log(ns), np.log(errs), 1)[0]
    assert errs[0] > 1e-6 and -2.3 < slope < -1.7  # second order; +-0.3 for the extra 41 table nodes


@pytest.mark.parametrize("act", ["relu", "tanh", "erf", "he3"])
def test_theta_spline_matches_exact_h(act):
    # h is smooth in theta = arccos m even where h ~ h(1) - C sqrt(1-m) (ReLU, docs/lora.md), so the cubic
    # spline through 257 nodes errs by O(N^-4): measured <= 2.4e-9 of the maximum (he3, xi = 3; 1.5e-10 at 513)
    m = np.r_[np.random.default_rng(0).uniform(-1, 1, 200), 1 - np.geomspace(1e-12, 1e-2, 20),
              -1 + np.geomspace(1e-12, 1e-2, 20), -1.0, 1.0]
    for xi in (0.1, 1.0, 3.0):
        p = Problem.orthonormal(8, xi, act, 0)
        fit, exact = lora_dynamics._h_spline(p)(np.arccos(m)), h(p, m)
        assert np.max(np.abs(fit - exact)) < 1e-8 * np.max(np.abs(exact))  # 1e-8: 4x the measured 2.4e-9


@pytest.mark.parametrize("act", ["relu", "he3"])
def test_theta_spline_is_scipys_not_a_knot_cubic_spline(act):
    # the Hermite form (knot slopes by one precomputed matrix, weights at fixed angles) is the same cubic as
    # scipy's CubicSpline through the same 257 values: equal to rounding (1e-13 of max |h|), ends included
    from scipy.interpolate import CubicSpline
    p = Problem.orthonormal(8, 1.5, act, 2)
    knots = np.linspace(0.0, np.pi, 257)
    theta = np.r_[np.random.default_rng(1).uniform(0, np.pi, 500), knots, 1e-9, np.pi - 1e-9]
    ref = CubicSpline(knots, h(p, np.cos(knots)))(theta)
    assert np.max(np.abs(lora_dynamics._h_spline(p)(theta) - ref)) < 1e-13 * np.max(np.abs(ref))


def test_grid_method_reuses_the_tables():
    p = Problem.orthonormal(k=4, xi=1.0, activation="relu", seed=0)
    kw = dict(d=500, lr=0.1 / 500, steps=5000, n_points=50)
    first = popdyn.predict(p, **kw)
    s = limit_sign(p)  # m0 = s 0.5/sqrt(d) flowing to s reads the half s m >= 0 only
    half = s * lora_dynamics._grid(8193)[0] >= 0
    assert first.meta["options"]["method"] == "grid" and first.meta["nfev"] == np.count_nonzero(half) > 4097
    again = popdyn.predict(p, **kw | dict(lr=0.2 / 500))  # the cached h serves any lr and d
    assert ("grid", 8193, s) in lora_problem._cache[p] and ("grid", 8193, -s) not in lora_problem._cache[p]
    assert again["m"][-1] != first["m"][-1]


@pytest.mark.parametrize("case", [_GRID_CASES[0], _GRID_CASES[3], _GRID_CASES[1]])
def test_grid_flow_on_half_the_nodes_equals_the_flow_on_all(case):
    # a scalar flow is monotone: reading the half of m0 (and the other one only when the drift at m0 points
    # there: the tanh case starting on the wrong side) changes nothing; delta = 1000 relaxes towards 0
    p, kw = _grid_case(*case)
    t = np.linspace(0, kw["steps"], 101)
    args = dict(lr=kw["lr"], d=kw["d"], convention=kw["convention"], n_mc=2, seed=0)
    m, theta, _ = lora_dynamics._grid(8193)
    f = lora_dynamics._drift_values(p, m, lora_dynamics._h_spline(p)(theta), **args)
    full = scalar_flow(m, f, kw["m0"], t)
    half = overlap_ode(p, kw["m0"], t, method="grid", **args)
    np.testing.assert_array_equal(half.y, full.y)


_HALF_PROBLEMS = {act: Problem.orthonormal(4, 1.0, act, 1) for act in ("relu", "tanh")}


@given(st.sampled_from(sorted(_HALF_PROBLEMS)), st.one_of(st.floats(-1, 1), st.sampled_from([-1.0, -0.0, 0.0, 1.0])),
       st.sampled_from([0.01, 0.3, 50.0]), st.sampled_from(["corrected", "paper"]))
@settings(max_examples=40, deadline=None)
def test_grid_flow_on_half_the_nodes_equals_the_flow_on_all_property(act, m0, delta, convention):
    # any start, either sign of the drift at m0 (delta = 50 pulls every start towards 0): the same flow
    p = _HALF_PROBLEMS[act]
    t = np.linspace(0, 20_000, 41)
    args = dict(lr=delta / 2000, d=2000, convention=convention, n_mc=2, seed=0)
    m, theta, _ = lora_dynamics._grid(8193)
    f = lora_dynamics._drift_values(p, m, lora_dynamics._h_spline(p)(theta), **args)
    np.testing.assert_array_equal(overlap_ode(p, m0, t, method="grid", **args).y, scalar_flow(m, f, m0, t).y)
