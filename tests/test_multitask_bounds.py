"""Multi-task bound shapes ([Collins24] Prop. 4.1, Thm 4.2, Lemma A.5, Thms 4.3/4.6, App. B;
docs/multitask.md).

Thm 4.6 is checked by enumeration of {-1, 1}^d (d <= 10): Bessel's inequality over all r-sparse parities, the
exact infimum of the linear lower bound 1 - y z over ||a|| <= B, and the hinge infimum by an independent primal
solver (SLSQP with the norm constraint). Lemma A.5's Hoeffding radius is checked by Monte Carlo coverage.
"""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import optimize

from popdyn import InvalidParameterError
from popdyn.models.multitask import TaskSet, bounds, sign_patterns


def _parities(d, r):
    V = sign_patterns(d)
    return V, np.stack([V[:, list(S)].prod(axis=1) for S in itertools.combinations(range(d), r)], axis=1)


def _relu_embedding(V, m_hat, seed):
    rng = np.random.default_rng(seed)
    P = np.maximum(V @ rng.standard_normal((m_hat, V.shape[1])).T + rng.uniform(-1, 1, m_hat), 0.0)
    P = np.hstack([P, np.ones((len(V), 1))])                 # a constant feature: never the zero embedding
    return P / np.linalg.norm(P, axis=1).max()


# ---- Theorem 4.6 ----------------------------------------------------------------------------------------------

@given(st.integers(1, 3), st.integers(0, 4), st.integers(1, 40), st.integers(0, 10_000))
@settings(max_examples=20)
def test_bessel_sum_over_all_parities_is_at_most_mean_square_norm(r, extra, m_hat, seed):
    d = r + 2 + extra                                        # d <= 9: 512 points, <= 84 parities
    V, chi = _parities(d, r)
    Psi = _relu_embedding(V, m_hat, seed)
    c = chi.T @ Psi / len(V)
    mean_sq = (Psi ** 2).sum(axis=1).mean()
    assert (c ** 2).sum() <= mean_sq + 1e-12 <= 1 + 2e-12   # 1e-12: rounding of means over <= 512 points
    # hence some parity has ||E chi_u Psi|| <= binom(d, r)^-1/2, the step of the Bessel bound (docs/multitask.md)
    assert np.linalg.norm(c, axis=1).min() <= 1 / math.sqrt(math.comb(d, r)) + 1e-12


def test_bessel_is_an_equality_for_parity_features():
    V, chi = _parities(8, 3)
    Psi = chi / math.sqrt(chi.shape[1])
    c = chi.T @ Psi / len(V)
    assert np.allclose(c, np.eye(chi.shape[1]) / math.sqrt(chi.shape[1]), atol=1e-15)
    assert (c ** 2).sum() == pytest.approx(1.0, abs=1e-13)


def _hinge_inf_slsqp(Psi, y, B):
    """inf_{||a|| <= B} mean max(0, 1 - y a.Psi) as an LP-like smooth program: slack s_i >= 1 - y_i a.Psi_i, s >= 0."""
    N, p = Psi.shape
    A = y[:, None] * Psi
    cons = [{"type": "ineq", "fun": lambda z: z[p:] - 1 + A @ z[:p],
             "jac": lambda z: np.hstack([A, np.eye(N)])},
            {"type": "ineq", "fun": lambda z: B * B - z[:p] @ z[:p],
             "jac": lambda z: np.r_[-2 * z[:p], np.zeros(N)]}]
    z0 = np.r_[np.zeros(p), np.ones(N)]
    res = optimize.minimize(lambda z: (z[p:].mean(), np.r_[np.zeros(p), np.full(N, 1 / N)]), z0, jac=True,
                            method="SLSQP", constraints=cons, bounds=[(None, None)] * p + [(0, None)] * N,
                            options={"ftol": 1e-13, "maxiter": 500})
    return res.fun


@pytest.mark.parametrize("d, r, m_hat, seed", [(6, 2, 5, 0), (7, 3, 4, 1), (8, 2, 3, 2)])
def test_worst_parity_best_loss_is_above_thm46(d, r, m_hat, seed):
    V, chi = _parities(d, r)
    Psi = _relu_embedding(V, m_hat, seed)
    K = chi.shape[1]
    cn = np.linalg.norm(chi.T @ Psi / len(V), axis=1)
    for B in [0.2 * math.sqrt(K), 0.6 * math.sqrt(K)]:
        linear = 1 - B * cn                                  # exact inf over ||a|| <= B of E[1 - y a.Psi]
        worst_linear = linear.max()
        assert worst_linear >= bounds.thm46_bessel(d, r, B) - 1e-12
        u = int(np.argmax(linear))
        hinge = _hinge_inf_slsqp(Psi, chi[:, u], B)       # >= the linear infimum since max(0, 1 - t) >= 1 - t
        assert hinge >= linear[u] - 1e-7                     # 1e-7: SLSQP constraint tolerance
        assert hinge >= bounds.thm46_bessel(d, r, B) - 1e-7
        if m_hat * B * B <= K:
            assert worst_linear >= bounds.thm46_lower(d, r, m_hat, B) - 1e-12


def test_thm46_bessel_is_attained_by_parity_features():
    d, r = 7, 2
    V, chi = _parities(d, r)
    K = chi.shape[1]
    Psi = chi / math.sqrt(K)
    B = 0.5 * math.sqrt(K)
    # every parity: inf over ||a|| <= B of the hinge equals the bound (a = B e_u attains the linear bound)
    for u in [0, K // 2, K - 1]:
        assert _hinge_inf_slsqp(Psi, chi[:, u], B) == pytest.approx(bounds.thm46_bessel(d, r, B), abs=1e-7)


@given(st.integers(1, 6), st.integers(0, 30), st.floats(0, 50), st.floats(0, 50), st.integers(1, 500))
def test_thm46_monotone_in_B_and_d_and_bessel_sharper(r, extra, B1, B2, m_hat):
    d = r + extra
    lo, hi = sorted([B1, B2])
    assert bounds.thm46_bessel(d, r, hi) <= bounds.thm46_bessel(d, r, lo)
    assert bounds.thm46_lower(d, r, m_hat, hi) <= bounds.thm46_lower(d, r, m_hat, lo)
    assert bounds.thm46_bessel(d + 1, r, lo) >= bounds.thm46_bessel(d, r, lo)
    assert bounds.thm46_lower(d + 1, r, m_hat, lo) >= bounds.thm46_lower(d, r, m_hat, lo)
    assert bounds.thm46_bessel(d, r, lo) >= bounds.thm46_lower(d, r, m_hat, lo) - 1e-15
    assert bounds.thm46_lower(d, r, 1, lo) == pytest.approx(bounds.thm46_bessel(d, r, lo), rel=1e-15, abs=1e-15)


def test_thm46_values_and_huge_binomials():
    assert bounds.thm46_bessel(10, 3, 0.0) == 1.0
    assert bounds.thm46_bessel(10, 3, math.sqrt(120)) == pytest.approx(0.0, abs=1e-15)
    assert bounds.thm46_lower(10, 3, 4, math.sqrt(30)) == pytest.approx(0.0, abs=1e-15)
    assert bounds.thm46_bessel(5000, 400, 1e100) == 1.0      # binom(5000, 400) > 1e308: the bound is 1
    B = 0.5 * math.sqrt(float(math.comb(2000, 100)))         # binom ~ 1e171, still a float
    assert bounds.thm46_bessel(2000, 100, B) == pytest.approx(0.5, rel=1e-14)


# ---- Lemma A.5 -----------------------------------------------------------------------------------------------

def test_lemmaA5_radius_covers_the_max_deviation():
    r, T, delta, draws = 3, 200, 0.2, 400
    t = bounds.lemmaA5_hoeffding(r, T, delta)
    dev = np.array([TaskSet.random_labelings(r, T, seed=s).diversity_deviation() for s in range(draws)])
    # P[max dev > t] <= delta: the count of exceedances is at most Binomial(400, 0.2)'s mean + 5 SD = 120
    assert np.sum(dev > t) <= draws * delta + 5 * math.sqrt(draws * delta * (1 - delta))
    # the union bound is loose but not vacuous: the median deviation is 0.57-0.74 sqrt(r/T) (docs/multitask.md)
    assert 0.4 * math.sqrt(r / T) < np.median(dev) < t


def test_lemmaA5_formula_and_paper_convention():
    P = 8
    assert bounds.lemmaA5_hoeffding(3, 100, 0.01) == pytest.approx(math.sqrt((math.log(P * 7) + math.log(200)) / 200),
                                                                   rel=1e-15)
    assert bounds.lemmaA5_hoeffding(3, 100, 0.01, convention="paper") == pytest.approx(
        math.sqrt(2 * (math.log(56) + math.log(100)) / 100), rel=1e-15)
    # T^-1/2 scaling
    assert bounds.lemmaA5_hoeffding(2, 400, 0.1) * 2 == pytest.approx(bounds.lemmaA5_hoeffding(2, 100, 0.1), rel=1e-15)


# ---- Prop 4.1, Thm 4.2 shapes ------------------------------------------------------------------------------

def test_prop41_and_thm42_shapes():
    r, d, m, T = 2, 100, 16, 1e6
    par, perp = bounds.prop41_rhs(r, d, m, T, C=2.0)
    tasks = math.sqrt(r) * d / math.sqrt(T)
    assert par == pytest.approx(2 * ((r ** 4 + math.log(m) ** 4) / (4 * d) + tasks), rel=1e-15)
    assert perp == pytest.approx(2 * ((r ** 3.5 + math.log(m) ** 3.5) / (4 * d ** 1.5) + tasks), rel=1e-15)
    assert bounds.thm42_rhs(r, d, m, T) == pytest.approx((r ** 3.5 + math.log(m) ** 3.5) / d ** 1.5 + 4 * tasks,
                                                         rel=1e-15)
    # T = inf drops the task term; the d-rates are -1, -1.5 and -1.5
    p1, q1 = bounds.prop41_rhs(r, d, m, math.inf)
    p2, q2 = bounds.prop41_rhs(r, 4 * d, m, math.inf)
    assert (p1 / p2, q1 / q2) == pytest.approx((4.0, 8.0), rel=1e-14)
    assert bounds.thm42_rhs(r, d, m, math.inf) / bounds.thm42_rhs(r, 4 * d, m, math.inf) == pytest.approx(8.0)


@given(st.integers(1, 8), st.integers(1, 500), st.integers(3, 1000), st.floats(1, 1e12))
def test_thm42_decreasing_in_d_and_T(r, extra, m, T):
    d = r + extra
    assert bounds.thm42_rhs(r, d + 1, m, math.inf) < bounds.thm42_rhs(r, d, m, math.inf)
    assert bounds.thm42_rhs(r, d, m, 2 * T) < bounds.thm42_rhs(r, d, m, T)
    par, perp = bounds.prop41_rhs(r, d, m, T)
    assert perp <= par                                        # d^-1.5 r^3.5 <= d^-1 r^4 term by term (d, r >= 1)


def test_requirements():
    assert bounds.prop41_requirements(3, 200) == {"d_min": 81.0, "nu_w_max": 200 ** -1.25, "m_max": 200.0}
    req = bounds.thm42_requirements(2, 100, 16)
    assert req == {"d_min": 16 + math.log(16) ** 4, "m_min": 2.0, "T_min": 2 * 16 * 100 ** 2.0}
    E = bounds.margin_exponent(3, 0.05)
    assert E == pytest.approx(243 * math.log(3) ** 6 * math.log(math.log(3) / 0.05), rel=1e-15)
    assert bounds.margin_exponent(3, 0.05, D=10) == pytest.approx(
        243 * math.log(3) ** 6 * math.log(10 * math.log(3) / 0.05))
    b5 = bounds.thmB5_requirements(3, 0.05, c=0.5)
    assert b5["log_lambda_hat"] == pytest.approx(-0.5 * E)
    assert b5["log_T_min"] == pytest.approx(3 * b5["log_d_min"] + 0.5 * E)
    assert b5["m_bar_min"] == pytest.approx(243 * math.log(3) ** 8 * math.log(20))
    assert b5["log_d_min"] == pytest.approx(7 * math.log(math.log(b5["m_bar_min"])) + 0.5 * E)


@given(st.integers(2, 6), st.integers(1, 10 ** 6), st.floats(1e-6, 0.05), st.floats(1e-6, 0.3), st.integers(1, 10 ** 6))
def test_thmB5_rate_and_monotonicity(r, n, delta, dp, D):
    a = bounds.thmB5_log_rhs(r, n, delta, dp, D)
    assert bounds.thmB5_log_rhs(r, 4 * n, delta, dp, D) == pytest.approx(a - math.log(2), abs=1e-9 * max(1, abs(a)))
    assert bounds.thmB5_log_rhs(r, n, delta, dp, D + 1) > a              # more downstream tasks: larger bound
    assert bounds.margin_exponent(r + 1, delta, D) > bounds.margin_exponent(r, delta, D)


def test_downstream_eval():
    assert bounds.downstream_eval(5.0, 400, 0.01, C=2.0) == pytest.approx(2 * 5 * math.sqrt(math.log(100) / 400))
    assert bounds.downstream_eval(5.0, 100, 0.01) == pytest.approx(2 * bounds.downstream_eval(5.0, 400, 0.01))


@pytest.mark.parametrize("call, name", [
    (lambda: bounds.thm46_bessel(3, 4, 1.0), "'d'"),
    (lambda: bounds.thm46_bessel(10, 3, -1.0), "'B'"),
    (lambda: bounds.thm46_bessel(10, 3, float("nan")), "'B'"),
    (lambda: bounds.thm46_lower(10, 3, 0, 1.0), "'m_hat'"),
    (lambda: bounds.thm46_lower(10, 2.5, 1, 1.0), "'r'"),
    (lambda: bounds.prop41_rhs(2, 10, 4, 0.0), "'T'"),
    (lambda: bounds.prop41_rhs(2, 10, 4, 10, C=0.0), "'C'"),
    (lambda: bounds.thm42_rhs(5, 4, 4, 10), "'d'"),
    (lambda: bounds.thm42_rhs(1, 4, 0, 10), "'m'"),
    (lambda: bounds.lemmaA5_hoeffding(2, 10, 1.0), "'delta'"),
    (lambda: bounds.lemmaA5_hoeffding(2, 0, 0.1), "'T'"),
    (lambda: bounds.lemmaA5_hoeffding(2, 10, 0.1, convention="x"), "'convention'"),
    (lambda: bounds.downstream_eval(0.0, 10, 0.1), "'B_over_mu'"),
    (lambda: bounds.downstream_eval(1.0, 0, 0.1), "'n'"),
    (lambda: bounds.margin_exponent(1, 0.01), "'r'"),
    (lambda: bounds.margin_exponent(3, 0.1), "'delta'"),
    (lambda: bounds.margin_exponent(3, 0.01, D=0), "'D'"),
    (lambda: bounds.thmB5_requirements(3, 0.01, c=-1.0), "'c'"),
    (lambda: bounds.thmB5_log_rhs(3, 10, 0.01, 0.5), "'delta_prime'"),
])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(InvalidParameterError, match=name):
        call()
