"""popdyn.models.looped.finite: exact real-Wishart moments against closed forms, chi-square moments, Wick
enumeration (sympy) and Monte Carlo; the finite-(n, d) curve against sampled spectra; predict(method="finite")."""
import math

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import popdyn
from popdyn._validate import InvalidParameterError, RegimeWarning
from popdyn.models import looped as L


def _rising(a, k):  # a (a + 2) ... (a + 2k - 2): E (chi^2_a)^k
    return math.prod(a + 2 * j for j in range(k))


# ---- exact moments: independent computations ----------------------------------------------------------

@given(st.integers(1, 60), st.integers(1, 60))
def test_first_three_moments_closed_forms(n, d):
    m = L.wishart_trace_moments(n, d, 3)
    assert m == (d, n * d, n * d * (n + d + 1), n * d * (n * n + d * d + 3 * n * d + 3 * n + 3 * d + 4))


@given(st.integers(1, 50), st.integers(0, 40))
def test_rank_one_and_scalar_cases_are_chi_square_moments(a, k):
    """d = 1: A = chi^2_n; n = 1: tr A^k = ||x||^(2k) with ||x||^2 ~ chi^2_d. Exact integers, any k."""
    assert L.wishart_trace_moments(a, 1, k)[k] == _rising(a, k)
    assert L.wishart_trace_moments(1, a, k)[k] == _rising(a, k) if k else a


@settings(max_examples=40)
@given(st.integers(1, 25), st.integers(1, 25), st.integers(1, 14))
def test_moments_symmetric_in_n_and_d(n, d, k):
    """tr (X^T X)^k = tr (X X^T)^k: the recursion treats n and d differently, the moments must not."""
    assert L.wishart_trace_moments(n, d, k)[k] == L.wishart_trace_moments(d, n, k)[k]


def _gaussian_expectation(poly, xs):
    """E of a polynomial in independent N(0, 1) variables: E x^(2j) = (2j - 1)!!, odd powers 0."""
    total = 0
    for monom, coef in sympy.Poly(poly, *xs).terms():
        if all(e % 2 == 0 for e in monom):
            total += coef * math.prod(math.prod(range(1, e, 2)) for e in monom)
    return int(total)


@pytest.mark.parametrize("n, d", [(2, 2), (3, 2), (2, 3), (1, 3)])
def test_moments_by_wick_enumeration(n, d):
    """Exact E tr (X^T X)^k, k <= 4, by expanding the polynomial and Gaussian moments (sympy): independent."""
    xs = sympy.symbols(f"x0:{n * d}")
    X = sympy.Matrix(n, d, xs)
    A = X.T * X
    P = sympy.eye(d)
    for k in range(1, 5):
        P = (P * A).expand()
        assert L.wishart_trace_moments(n, d, k)[k] == _gaussian_expectation(P.trace(), xs)


@pytest.mark.parametrize("n, d", [(12, 3), (40, 10)])
def test_moments_against_monte_carlo(n, d):
    """Sample means of tr A^k over 4000 draws (seed 0) within 5 standard errors (z = 5), k <= 6."""
    X = np.random.default_rng(0).standard_normal((4000, n, d))
    lam = np.linalg.eigvalsh(np.swapaxes(X, 1, 2) @ X)
    m = L.wishart_trace_moments(n, d, 6)
    for k in range(1, 7):
        s = (lam**k).sum(1)
        assert abs(s.mean() - m[k]) <= 5 * s.std(ddof=1) / np.sqrt(len(s)), k


# ---- the finite curve -----------------------------------------------------------------------------------

@given(st.integers(2, 80), st.integers(1, 40), st.floats(1e-4, 0.1))
def test_finite_curve_first_loops_in_closed_form(n, d, eta):
    F = L.finite_error_curve(n, d, 2, eta=eta)
    assert F[0] == 1.0
    assert F[1] == pytest.approx(1 - eta * n, rel=1e-12, abs=1e-12)  # E tr A = n d
    assert F[2] == pytest.approx(1 - 2 * eta * n + eta**2 * n * (n + d + 1), rel=1e-12, abs=1e-12)
    G = L.finite_error_curve(n, d, 2, 2, eta=eta)  # squared distance: power 2t
    assert G[1] == pytest.approx(F[2], rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("n, d, prompts", [(80, 20, 2000), (400, 100, 200)])
def test_finite_curve_fixed_step_against_sampled_spectra(n, d, prompts):
    """A fixed step eta = 0.95 / (sqrt n + sqrt d)^2 (one network): the exact curve against the mean of
    (1/d) tr (I - eta A)^t over sampled prompts (seed 1), within 5 standard errors (z = 5), t <= 30."""
    eta = 0.95 / (np.sqrt(n) + np.sqrt(d)) ** 2
    X = np.random.default_rng(1).standard_normal((prompts, n, d))
    lam = np.linalg.eigvalsh(np.swapaxes(X, 1, 2) @ X)
    t = np.arange(31)
    per = np.mean((1 - eta * lam[:, :, None]) ** t, axis=1)
    for power in (1, 2):
        F = L.finite_error_curve(n, d, 30 // power, power, eta=eta)
        emp = per[:, ::power][:, : len(F)]
        se = emp.std(0, ddof=1) / np.sqrt(prompts)
        assert np.all(np.abs(emp.mean(0) - F) <= 5 * se + 1e-15), (power, np.abs(emp.mean(0) - F) / se)


@pytest.mark.parametrize("n, d, prompts", [(200, 50, 400), (800, 200, 100)])
def test_lambda_max_mean_against_samples(n, d, prompts):
    """Tracy-Widom mean within 5 standard errors (seed 2) + 0.3 % (its approximation error) of the sample
    mean, and below the MP edge (sqrt n + sqrt d)^2."""
    X = np.random.default_rng(2).standard_normal((prompts, n, d))
    lmax = np.linalg.eigvalsh(np.swapaxes(X, 1, 2) @ X)[:, -1]
    ell = L.lambda_max_mean(n, d)
    assert abs(lmax.mean() - ell) <= 5 * lmax.std(ddof=1) / np.sqrt(prompts) + 0.003 * ell
    assert ell < (np.sqrt(n) + np.sqrt(d)) ** 2


def test_finite_curve_against_theta_average_at_one_over_L():
    """eta = 1/L per prompt (the theorem) against the finite curve at d = 50, n = 200 (1000 prompts, seed 3):
    within 4 standard errors of the prompt mean (z = 4; SE 0.8 % at t = 30) + 1 % (the plug-in step's bias) for
    every t <= 30, where the MP limit is 6-9 % off (more than 5 % and 4 SE)."""
    X = np.random.default_rng(3).standard_normal((1000, 200, 50))
    per = -L.mean_error_over_task(X, 1.0, 30, "1/L")
    fin, se = per.mean(0), per.std(0, ddof=1) / np.sqrt(len(per))
    F, E = L.finite_error_curve(200, 50, 30), L.mp_error_curve(0.25, 30)
    assert np.all(np.abs(fin - F) <= 4 * se + 0.01 * F)
    assert abs(fin[30] / E[30] - 1) > max(0.05, 4 * se[30] / E[30])


def test_finite_curve_tends_to_mp():
    """At fixed gamma = 1/4 the finite curve approaches E_gamma(t) as d grows, at t = 10 like d^(-2/3) (the
    Tracy-Widom shift of lambda_max): each 4-fold d divides the gap by 2.3-2.5 (4^(2/3) = 2.52); measured
    6.6 %, 2.9 %, 1.2 % at d = 50, 200, 800."""
    E = L.mp_error_curve(0.25, 10)[10]
    gaps = [abs(L.finite_error_curve(4 * d, d, 10)[10] / E - 1) for d in (50, 200, 800)]
    assert all(0.35 < b / a < 0.5 for a, b in zip(gaps, gaps[1:])) and gaps[2] < 0.015  # 4^(-3/4) .. 4^(-1/2)


def test_predict_finite():
    p = L.Problem.from_gamma(100, 0.25, alpha=-2.0)
    pred = popdyn.predict(p, loops=12, method="finite")
    F1, F2 = L.finite_error_curve(400, 100, 12), L.finite_error_curve(400, 100, 12, 2)
    np.testing.assert_allclose(pred["error"], 2.0 * F1)
    np.testing.assert_allclose(pred["abs_error"], 2.0 * F1)
    np.testing.assert_allclose(pred["sq_dist"], F2)
    c = 3.0  # a covariance c I: A scales by c, a fixed step enters as lr c
    q = L.Problem(400, 100, cov=np.full(100, c))
    with pytest.warns(RegimeWarning, match="lr = 1/L"):
        pq = popdyn.predict(q, loops=5, method="finite", lr=0.5 / (c * 2.2 * 400))
    np.testing.assert_allclose(pq["sq_dist"], L.finite_error_curve(400, 100, 5, 2, eta=0.5 / (2.2 * 400)))
    with pytest.warns(RegimeWarning, match="noise"), pytest.raises(InvalidParameterError, match="'method'"):
        popdyn.predict(L.Problem.isotropic_gaussian(40, 10, noise=0.1), loops=3, method="finite")


@pytest.mark.parametrize("call, name", [
    (lambda: L.wishart_trace_moments(0, 2, 3), "n"),
    (lambda: L.wishart_trace_moments(3, 2, -1), "K"),
    (lambda: L.wishart_trace_moments(3, 2, 121), "K"),
    (lambda: L.finite_error_curve(10, 2, 61, 2), "T"),
    (lambda: L.finite_error_curve(10, 2, 3, 3), "power"),
    (lambda: L.finite_error_curve(10, 2, 3, eta=0.0), "eta"),
    (lambda: L.finite_error_curve(10, 2, 3, eta=float("nan")), "eta"),
    (lambda: L.lambda_max_mean(1, 2), "n"),
])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        call()
