"""Hermite recurrences, quadrature rules and series against mpmath and exact identities."""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import eval_hermitenorm

from popdyn import hermite as H
from popdyn._validate import InvalidParameterError


def _h_mp(k, x):
    """h_k(x) = He_k(x)/sqrt(k!) at 40 digits (He_k(x) = 2^{-k/2} H_k(x/sqrt 2))."""
    with mp.workdps(40):
        x = mp.mpf(x)
        return mp.hermite(k, x / mp.sqrt(2)) * mp.power(2, -mp.mpf(k) / 2) / mp.sqrt(mp.factorial(k))


def _psi_mp(k, x):
    with mp.workdps(40):
        x = mp.mpf(x)
        return _h_mp(k, x) * mp.exp(-x * x / 4) / mp.power(2 * mp.pi, 0.25)


@pytest.mark.parametrize("x", [-7.5, -1.3, 0.0, 0.4, 2.0, 6.1])
def test_hermite_polys_vs_mpmath(x):
    h = H.hermite_polys(200, x)
    for k in (0, 1, 2, 5, 17, 60, 128, 200):
        ref = float(_h_mp(k, x))
        # 1e-12: float64 three-term recurrence vs mpmath dps=40, k <= 200 (error ~ k * eps relative
        # away from roots; the absolute floor covers values near a root of h_k)
        assert abs(h[k] - ref) <= 1e-12 * abs(ref) + 1e-14


@pytest.mark.parametrize("k", [10, 100, 1000, 10_000])
@pytest.mark.parametrize("x", [-40.0, -17.0, 0.3, 3.0, 25.0, 40.0])
def test_hermite_functions_vs_mpmath(k, x):
    psi = H.hermite_functions(k, x)
    ref = float(_psi_mp(k, x))
    # 1e-12 relative / 1e-14 absolute: measured errors are <= 1.2e-13 relative (k = 10_000) and
    # the envelope of psi_k is <= (2 pi)^(-1/4) ~ 0.63, so 1e-14 absolute is ~50 eps of it
    assert abs(psi[k] - ref) <= 1e-12 * abs(ref) + 1e-14
    assert np.all(np.isfinite(psi))


def test_plain_recurrence_overflow_is_inf_and_log_form_is_finite():
    assert np.isnan(eval_hermitenorm(400, 3.0))          # the scipy failure the module works around
    la, sgn = H.log_hermite_abs(400, 3.0)
    ref = _h_mp(400, 3.0)
    # 1e-11: log of a value with relative error ~ k * eps (k = 400) is that error in absolute terms
    assert abs(la[400] - float(mp.log(abs(ref)))) < 1e-11
    assert sgn[400] == (1.0 if ref > 0 else -1.0)
    big = H.hermite_polys(200, 1e3)[200]                 # h_200(1000) ~ 1e600 / sqrt(200!) = inf
    assert np.isinf(big) and not np.isnan(big)


@given(k=st.integers(0, 120), x=st.floats(-10, 10))
def test_psi_is_h_times_sqrt_density(k, x):
    psi = H.hermite_functions(k, x)[k]
    h = H.hermite_polys(k, x)[k]
    # 1e-12: both are the same recurrence, differing only by the rescaling in the psi form
    assert abs(psi - h * math.exp(-x * x / 4) / (2 * math.pi) ** 0.25) <= 1e-12 * (abs(psi) + 1e-300) + 1e-15


def test_shapes():
    x = np.linspace(-2, 2, 6).reshape(2, 3)
    assert H.hermite_polys(4, x).shape == (5, 2, 3)
    assert H.hermite_functions(4, x).shape == (5, 2, 3)
    assert H.hermite_functions(0, 1.0).shape == (1,)


@pytest.mark.parametrize("n", [5, 60, 300, 1200])
def test_gauss_hermite_orthonormality(n):
    x, w = H.gauss_hermite(n)
    # 1e-13: weights are normalised by scipy to ~eps; the sum of n positive terms adds n * eps
    assert abs(np.sum(w) - 1) < 1e-13
    for j in sorted({0, 1, 3, min(n // 2, 250), min(n - 1, 250)}):
        kmax = min(n - 1, 500 - j)      # weights below 1e-308 underflow (|x| > ~38): the rule is
        hj = H.hermite_polys(j, x)[j]   # only exact while h_j h_k phi is negligible there, j + k <= ~600
        mu = H.project(x, w, hj, kmax)
        e = np.zeros(kmax + 1)
        e[j] = 1
        # 1e-12: exact for degree <= 2n - 1; float64 error of sum_i w_i h_j h_k grows like
        # sqrt(n) * eps * max_i |w_i h_j h_k| (measured <= 1e-13 for j + k <= 500)
        assert np.max(np.abs(mu - e)) < 1e-12


def test_project_handles_nan_and_zero():
    x, w = H.gauss_hermite(8)
    assert np.all(np.isnan(H.project(x, w, np.where(x > 0, np.nan, 1.0), 3)))
    assert np.all(H.project(x, w, np.zeros(8), 3) == 0)


def test_relu_quadrature_split_at_kink_vs_closed_form():
    mu, err = H.hermite_coeffs_quad(lambda z: np.maximum(z, 0), 60, kinks=(0.0,))
    p = np.arange(61)
    ref = np.zeros(61)
    ref[0], ref[1] = 1 / math.sqrt(2 * math.pi), 0.5
    for q in range(2, 61, 2):   # ReLU: mu_p = (-1)^((p-2)/2) (p-3)!! / sqrt(2 pi p!)
        ref[q] = (-1) ** ((q - 2) // 2) * float(mp.fac2(q - 3) / mp.sqrt(2 * mp.pi * mp.factorial(q)))
    # 1e-14: spectral Gauss-Legendre on each smooth piece; the estimate must cover the true error
    assert np.max(np.abs(mu - ref)) < 1e-14
    assert err < 1e-13 and p.size == 61
    # without the split, Gauss-Hermite converges only as O(1/N): N = 400 is ~1e-4 off
    x, w = H.gauss_hermite(400)
    assert np.max(np.abs(H.project(x, w, np.maximum(x, 0), 60) - ref)) > 1e-5


@pytest.mark.parametrize("p", [0, 1, 3, 6, 15, 40])
def test_quadrature_vs_mpmath_quad(p):
    f = lambda z: np.exp(-np.abs(z - 0.7)) * np.sin(2 * z)      # kink at 0.7
    mu, err = H.hermite_coeffs_quad(f, 40, kinks=(0.7,))
    with mp.workdps(30):
        g = lambda t: mp.exp(-abs(t - mp.mpf("0.7"))) * mp.sin(2 * t) * _h_mp(p, t) * mp.npdf(t)
        ref = mp.quad(g, [-mp.inf, -5, 0, mp.mpf("0.7"), 5, mp.inf])
    # 1e-14 absolute: |f| <= 1 so |mu_p| <= 1, and the split rule is spectrally accurate
    assert abs(mu[p] - float(ref)) < 1e-14
    assert err < 1e-12


def test_tanh_golden_values_and_gauss_hermite_agree():
    mu, err = H.hermite_coeffs_quad(np.tanh, 200)
    gold = {1: 0.6057055096021, 3: -0.1484371907873, 5: 0.0625475237527, 7: -0.0314454192877}
    for p, v in gold.items():
        assert abs(mu[p] - v) < 1e-13        # 1e-13: golden values have 13 decimals
    x, w = H.gauss_hermite(1000)
    # 3e-14: two unrelated rules; Gauss-Hermite N = 1000 is itself 1.1e-14 off mpmath at p = 1
    # (rounding in 1000 terms), the split Gauss-Legendre rule 3e-16 (a reference script saw 8e-15)
    assert np.max(np.abs(H.project(x, w, np.tanh(x), 200) - mu)) < 3e-14
    assert err < 1e-14


def test_power_series_vs_polyval_and_derivative():
    rng = np.random.default_rng(3)
    a = rng.normal(size=9)
    rho = rng.uniform(-1, 1, size=(4, 5))
    # 1e-14: Horner vs numpy.polyval, 9 terms of size <= 3 at |rho| <= 1
    assert np.allclose(H.power_series(a, rho), np.polyval(a[::-1], rho), rtol=0, atol=1e-14)
    d = np.polyval(np.polyder(a[::-1]), rho)
    assert np.allclose(H.power_series(a, rho, deriv=True), d, rtol=0, atol=1e-13)  # same, 8x larger terms
    assert H.power_series(a, rho).shape == (4, 5)


@pytest.mark.parametrize("call", [
    lambda: H.hermite_polys(-1, 0.0),
    lambda: H.hermite_functions(2.5, 0.0),
    lambda: H.gauss_hermite(0),
    lambda: H.hermite_coeffs_quad(np.tanh, 3, kinks=(np.nan,)),
    lambda: H.project([0.0], [1.0], [1.0], -2),
])
def test_invalid_arguments_raise(call):
    with pytest.raises(InvalidParameterError):
        call()


@given(seed=st.integers(0, 2**32 - 1), P=st.integers(0, 30), rho=st.floats(-1, 1), deriv=st.booleans())
def test_series_tail_bound_holds(seed, P, rho, deriv):
    a = np.random.default_rng(seed).exponential(size=60) * 0.8 ** np.arange(60)   # nonnegative coefficients
    p = np.arange(60)
    w = p * a if deriv else a
    mass = float(np.sum(w[P + 1:]))
    full = H.power_series(a, rho, deriv=deriv)
    part = H.power_series(a[:P + 1], rho, deriv=deriv)
    # 1e-13: rounding of the two Horner sums (terms <= ~60 * 5)
    assert abs(full - part) <= float(H.series_tail_bound(mass, P, rho, deriv=deriv)) + 1e-13
    assert float(H.series_tail_bound(np.inf, P, 0.0, deriv=deriv)) == (np.inf if deriv and P == 0 else 0.0)


@pytest.mark.parametrize("k,x", [(3000, 100.0), (3000, -60.0), (500, 55.0)])
def test_hermite_functions_beyond_the_underflow_of_the_density(k, x):
    # phi(x)^(1/2) underflows past |x| ~ 54 on its own; the running log-scale keeps psi_k exact
    ref = float(_psi_mp(k, x))
    assert abs(H.hermite_functions(k, x)[k] - ref) <= 1e-12 * abs(ref) + 1e-14   # as above
