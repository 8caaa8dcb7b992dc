"""Sparse-parity min-norm / regularised head solver (popdyn.models.icl.parity_minnorm) against independent checks.

Oracles: the exact loss of ``icl.population_hinge`` (a separate implementation of the N -> inf loss), finite
differences, an independent QP solver (SLSQP) for the exact least-distance programme, the closed form
``2 / (m gamma^2)`` at d = 2 (proved below), the enumeration of every region for m = 4, and perturbation tests
of local optimality.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from popdyn import InvalidParameterError
from popdyn.models import icl
from popdyn.models.icl import parity_minnorm as pm


def _design_loss(problem, a, V, full):
    X, y, w = pm.query_design(problem, full=full)
    return w @ np.maximum(1 - pm._margins(X, y, a, V.reshape(len(a), -1), 2 * problem.gamma), 0.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 5), st.data(), st.floats(0.01, 0.24), st.floats(0.0, 0.49), st.booleans(),
       st.integers(0, 2**31 - 1))
def test_query_design_reproduces_population_hinge(d, data, gamma, pT, full, seed):
    # The design (X, y, w) re-states the loss as one weighted sum; population_hinge computes it task by task
    # (diagonal: a finite sum; full: a Gray-code enumeration in numba). Agreement to 1e-12 (float64 sums).
    k = data.draw(st.integers(2, d))
    p = icl.ParityProblem(d=d, k=k, gamma=gamma, pT=pT)
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, 3)
    V = rng.normal(size=(3, d, d) if full else (3, d)) * 4
    X, y, w = pm.query_design(p, full=full)
    assert w.sum() == pytest.approx(1.0, abs=1e-12) and np.all(w >= 0)
    l1, l2 = icl.population_hinge(p, a, V, split=True)
    # k = d: S2 is empty and every task is from S1 (the samplers' law); population_hinge's total then weights
    # L_S1 by 1 - pT, so the comparison is with L_S1 itself
    expected = (1 - pT) * l1 + pT * l2 if k < d else l1
    assert _design_loss(p, a, V, full) == pytest.approx(expected, abs=1e-12)


def test_smooth_objective_gradient_and_limit():
    # Central finite differences (h = 1e-6) agree with the analytic gradient to 1e-6 relative; as beta grows
    # the smoothed loss tends to the exact hinge (softplus error <= log(2)/beta per term, twice nested).
    p = icl.ParityProblem.paper(1, 2, 0.1)
    X, y, w = pm.query_design(p)
    rng = np.random.default_rng(3)
    m = 5
    theta = np.r_[rng.uniform(-1, 1, m), rng.normal(size=m * p.d) * 3]
    f, g = pm._smooth(theta, X, y, w, m, 0.2, 1e-3, 7.0)
    fd = np.array([(pm._smooth(theta + e, X, y, w, m, 0.2, 1e-3, 7.0)[0]
                    - pm._smooth(theta - e, X, y, w, m, 0.2, 1e-3, 7.0)[0]) / 2e-6 for e in 1e-6 * np.eye(theta.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    a, V = theta[:m], theta[m:].reshape(m, -1)
    exact = icl.population_hinge(p, a, V) + 1e-3 * np.sum(V * V)
    for beta in (1e3, 1e5):
        assert abs(pm._smooth(theta, X, y, w, m, 0.2, 1e-3, beta)[0] - exact) <= 2 * np.log(2) / beta * (1 + m)


def _slsqp_min_norm(G, h, x0):
    """An independent solver of min ||x||^2 s.t. G x >= h."""
    return minimize(lambda x: (x @ x, 2 * x), x0, jac=True, method="SLSQP",
                    constraints=[{"type": "ineq", "fun": lambda x: G @ x - h, "jac": lambda x: G}],
                    options={"ftol": 1e-15, "maxiter": 1000}).x


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 12), st.integers(1, 30), st.integers(0, 2**31 - 1))
def test_least_distance_programme_against_slsqp(n, rows, seed):
    # Random feasible systems (h = G x_feas - s with s >= 0): NNLS-based LDP and SLSQP agree on the optimum
    # value to 1e-7 relative; the LDP point is feasible and satisfies KKT (residual < 1e-9).
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(rows, n))
    h = G @ rng.normal(size=n) - rng.exponential(size=rows)
    x, lower = pm._ldp(G, h)
    assert x is not None and np.min(G @ x - h) >= -1e-10
    y = _slsqp_min_norm(G, h, x + rng.normal(size=n))
    assert x @ x == pytest.approx(y @ y, rel=1e-7, abs=1e-10)
    assert lower <= x @ x * (1 + 1e-12) and lower == pytest.approx(x @ x, rel=1e-7, abs=1e-10)
    mu, kkt = pm._kkt(2 * x, G, G @ x - h)
    assert kkt < 1e-9 and np.all(mu >= 0)


# A node of the 4-diagonal-head certificate at d = 4 (rows repeat): scipy's NNLS returned a point violating a row by
# 0.0045 with value 150.0004 (optimum 150), which the unchecked solver took as optimal. Entries, row by row:
# N = -1, n = -0.2, 0, p = 0.2, P = 1.
_DEGENERATE = (
    "PN00000000000000 0PN0000000000000 00PN000000000000 PP00000000000000 pp00000000000000 pn00000000000000"
    "p0n0000000000000 p00n000000000000 0pn0000000000000 0p0n000000000000 00pp000000000000 00pn000000000000"
    "0000nn0000000000 000000nn00000000 00000000pn000000 00000000p0n00000 00000000p00n0000 000000000p0n0000"
    "0000000000pn0000 000000000000np00 000000000000n0p0 000000000000n00p 0000000000000n0p 00000000000000np"
    "pp00000000000000 np000000pn000000 000000000000np00 0000nn0000000000 n0p00000p0n00000 000000000000n0p0"
    "n00p0000p00n0000 000000000000n00p 0n0p00000p0n0000 0000000000000n0p 00pp000000000000 00np000000pn0000"
    "00000000000000np 000000nn00000000")
_DEGENERATE_H = "00000000000000000000000011111111111111"


def test_least_distance_programme_on_a_degenerate_system():
    flat = _DEGENERATE.replace(" ", "")                      # 38 rows of 16
    G = np.array([{"N": -1.0, "n": -0.2, "0": 0.0, "p": 0.2, "P": 1.0}[c] for c in flat]).reshape(38, 16)
    h = np.array([float(c) for c in _DEGENERATE_H])
    x, lower = pm._ldp(G, h)
    assert np.min(G @ x - h) >= -1e-10
    assert x @ x == pytest.approx(150.0, rel=1e-9) and lower == pytest.approx(150.0, rel=1e-9)
    assert lower <= x @ x * (1 + 1e-12)


def test_least_distance_programme_detects_infeasibility():
    G = np.array([[1.0, 0.0], [-1.0, 0.0]])
    x, lower = pm._ldp(G, np.array([1.0, 0.0]))   # x_0 >= 1 and x_0 <= 0
    assert x is None and lower > 1e12
    assert pm._ldp(G, np.array([1.0, -2.0]))[0] is not None


@pytest.mark.parametrize("gamma", [0.1, 0.2])
@pytest.mark.parametrize("m", [4, 8])
def test_two_features_closed_form(gamma, m):
    # d = 2 (one pair, four queries f): sum_f y_f g(f) >= 4 at zero loss, and one head contributes
    # 2 gamma s (|v0 + v1| - |v0 - v1|) <= 2 sqrt(2) gamma ||v||, so sum ||v_n||^2 >= (sum ||v_n||)^2 / m
    # >= 2 / (m gamma^2); q copies of the 4 heads (+-(1, 1), +-(1, -1)) / (4 gamma q) attain it for m = 4q.
    p = icl.ParityProblem(d=2, k=2, gamma=gamma, pT=0.0)
    fit = pm.fit_heads(p, m, restarts=6)
    assert fit.norm == pytest.approx(2 / (m * gamma**2), rel=1e-9)
    assert fit.loss <= 1e-12 and abs(fit.min_margin - 1) <= 1e-9 and fit.kkt_residual <= 1e-9
    if m == 4:
        assert pm.four_head_min_norm(p).norm == pytest.approx(1 / (2 * gamma**2), rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("pT", [0.1, 0.0])
def test_four_head_enumeration_is_a_lower_bound_and_is_reached(pT):
    # d = 3: the enumeration's optimum is feasible (exact loss 0, margin 1), no search restart goes below it,
    # and the search reaches it. With pT = 0.1 every pair is a task (symmetry reduction on); with pT = 0 and
    # k = 2 only the pair (0, 1) is (the sign conditions hold on it alone: 41 472 regions), so the optimum is the
    # d = 2 one, 1/(2 gamma^2) = 50.
    p = icl.ParityProblem(d=3, k=2, gamma=0.1, pT=pT)
    enum = pm.four_head_min_norm(p)
    assert enum.loss <= 1e-12 and abs(enum.min_margin - 1) <= 1e-9
    search = pm.fit_heads(p, 4, restarts=20)
    assert np.nanmin(search.runs[:, 1]) >= enum.norm * (1 - 1e-9)
    assert search.norm == pytest.approx(enum.norm, rel=1e-9)
    assert enum.norm == pytest.approx(250.0 if pT else 50.0, rel=1e-9)


@pytest.mark.slow
def test_four_head_enumeration_chambers_and_symmetry_reduction(monkeypatch):
    # D_3 has 2^2 3! = 24 chambers, each with an interior point of non-zero signs; S_3 x {+-1} (12 elements)
    # acts freely, so 2 orbits. The reduced enumeration equals the unreduced one (every chamber as the first
    # positive head) at d = 3.
    N, sig, pts = pm._chambers(3)
    assert len(sig) == 24 and len(np.unique(sig, axis=0)) == 24 and np.all(sig != 0)
    assert np.all(np.sign(pts @ N.T).astype(int) == sig)
    assert len(pm._orbit_representatives(N, sig, pts)) == 2
    p = icl.ParityProblem(d=3, k=2, gamma=0.15, pT=0.2)
    reduced = pm.four_head_min_norm(p)
    monkeypatch.setattr(pm, "_orbit_representatives", lambda N, sig, pts: set(range(len(sig))))
    full = pm.four_head_min_norm(p)
    assert len(full.runs) == 12 * len(reduced.runs)
    assert reduced.norm == pytest.approx(full.norm, rel=1e-12)


def test_min_norm_six_heads_is_a_local_minimum_of_the_normalised_margin():
    # The minimum-norm problem is max over V of min margin / ||V||^2 ... equivalently ||V||^2 / (min margin)^2
    # (the margin is 1-homogeneous in V with |a| = 1). Random perturbations (1e-4 relative) of the solution,
    # rescaled to margin 1, never have a smaller norm (2000 draws); g2* is beaten.
    p = icl.ParityProblem.paper(1, 2, 0.1)
    fit = pm.fit_heads(p, 6, restarts=8)
    assert fit.norm < icl.frobenius_cost(icl.paper_construction(2, 0.1)[1])
    X, y, w = pm.query_design(p)
    rng = np.random.default_rng(0)
    scale = np.sqrt(fit.norm)
    for _ in range(2000):
        V = fit.V + 1e-4 * scale * rng.normal(size=fit.V.shape) / np.sqrt(fit.V.size)
        margin = pm._margins(X, y, fit.a, V, 0.2).min()
        assert np.sum(V * V) / margin**2 >= fit.norm * (1 - 1e-10)


def test_regularised_fit_is_consistent_and_dominates_feasible_points():
    # At lambda = 1e-4 the 4-head optimum: objective = exact loss + lambda norm; it is no worse than the paper's
    # g1* or the zero-loss minimum (both feasible points); it has lower loss AND lower norm than g1*
    # (B.5.3(c)); perturbations of the solution do not lower the exact objective.
    p = icl.ParityProblem.paper(1, 2, 0.1)
    lam = 1e-4
    fit = pm.fit_heads(p, 4, lam=lam, restarts=10)
    assert fit.objective == pytest.approx(icl.population_hinge(p, fit.a, fit.V) + lam * fit.norm, rel=1e-12)
    g1 = icl.paper_construction(2, 0.1, nu1=1)
    loss_g1, norm_g1 = icl.population_hinge(p, *g1), icl.frobenius_cost(g1[1])
    assert fit.loss < loss_g1 and fit.norm < norm_g1
    assert fit.objective <= min(loss_g1 + lam * norm_g1, lam * 700.0)
    rng = np.random.default_rng(1)
    for _ in range(300):
        V = fit.V + 1e-3 * rng.normal(size=fit.V.shape)
        assert icl.population_hinge(p, fit.a, V) + lam * np.sum(V * V) >= fit.objective - 1e-12


def test_full_heads_fit_with_loss_zero():
    # Full heads (off-diagonal V entries): the exact loss, by population_hinge's Gray-code enumeration of the
    # other coordinates, is zero, and the norm is below the paper's g2*.
    p = icl.ParityProblem.paper(1, 2, 0.1)
    fit = pm.fit_heads(p, 6, restarts=3, full=True)
    assert fit.V.shape == (6, 4, 4) and fit.loss <= 1e-12 and fit.norm < 300


def test_seeded_and_deterministic():
    p = icl.ParityProblem.paper(1, 2, 0.1)
    f1, f2 = pm.fit_heads(p, 6, restarts=3, seed=5), pm.fit_heads(p, 6, restarts=3, seed=5)
    np.testing.assert_array_equal(f1.V, f2.V)
    np.testing.assert_array_equal(f1.runs, f2.runs)


def test_three_heads_cannot_fit_and_bad_input_names_the_parameter():
    p = icl.ParityProblem.paper(1, 2, 0.1)
    with pytest.raises(InvalidParameterError, match="'m'"):
        pm.fit_heads(p, 3, restarts=3)   # zero loss needs 2 positive and 2 negative heads
    assert pm.fit_heads(p, 3, lam=1e-4, restarts=2).loss >= 0.15 - 1e-12  # any m with lam; 3 heads: L >= 1/4 - gamma
    with pytest.raises(InvalidParameterError, match="'restarts'"):
        pm.fit_heads(p, 4, restarts=1, seed=0)   # this seed's single restart ends in a region that misses a query
    for kwargs, name in [({"m": 0}, "m"), ({"m": 4, "lam": 0.0}, "lam"), ({"m": 4, "restarts": 0}, "restarts"),
                         ({"m": 4, "lam_search": -1.0}, "lam_search"), ({"m": 4, "betas": (5.0, -1.0)}, "betas"),
                         ({"m": 4, "seed": -1}, "seed")]:
        with pytest.raises(InvalidParameterError, match=f"'{name}'"):
            pm.fit_heads(p, **kwargs)
    with pytest.raises(InvalidParameterError, match="'problem"):
        pm.four_head_min_norm(icl.ParityProblem(d=6, k=2, gamma=0.1, pT=0.1))
    with pytest.raises(InvalidParameterError, match="'problem'"):
        pm.query_design(icl.ParityProblem(d=11, k=2, gamma=0.1, pT=0.1), full=True)
    with pytest.raises(InvalidParameterError, match="'full'"):
        pm.fit_heads(p, 4, full="yes")
    with pytest.raises(InvalidParameterError, match="'problem'"):
        pm.fit_heads("not a problem", 4)


def test_six_head_optimum_is_rational_and_exact():
    # The best 6-head diagonal network found has V = K / (48 gamma) with an integer matrix K (the QP's vertex
    # is rational); in integers, every margin is f_i f_j sum_n a_n ReLU((K_ni f_i + K_nj f_j) / 24) (gamma
    # cancels) and is >= 1, with equality somewhere, and the norm is sum K^2 / (48 gamma)^2 = 269 / (144 gamma^2)
    # (186.81 at gamma = 0.1 against 300 for g2*): checked in exact rational arithmetic.
    from fractions import Fraction
    gamma = 0.1
    fit = pm.fit_heads(icl.ParityProblem.paper(1, 2, gamma), 6, restarts=10)
    K = np.rint(fit.V * 48 * gamma).astype(int)
    np.testing.assert_allclose(fit.V * 48 * gamma, K, atol=1e-9)
    a = [int(x) for x in fit.a]
    margins = [fi * fj * sum(an * max(Fraction(int(k[i]) * fi + int(k[j]) * fj, 24), 0) for an, k in zip(a, K))
               for i in range(4) for j in range(i + 1, 4) for fi in (1, -1) for fj in (1, -1)]
    assert min(margins) == 1
    assert Fraction(int(np.sum(K**2)), 48**2) == Fraction(269, 144)
    assert fit.norm == pytest.approx(269 / (144 * gamma**2), rel=1e-12)
