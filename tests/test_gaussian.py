"""Gaussian integrals against scipy, mpmath and exact identities."""
import math

import numpy as np
import pytest
from scipy import integrate

from popdyn import gaussian as Gs
from popdyn._validate import InvalidParameterError


def _pdf(z):
    return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)


@pytest.mark.parametrize("order", [0, 1, 2])
@pytest.mark.parametrize("rho", [-0.99, -0.5, 0.0, 0.3, 0.9, 0.999])
def test_arccos_kernel_vs_nested_quad(order, rho):
    s = math.sqrt(1 - rho * rho)

    def inner(g1):    # E[relu(rho g1 + s g2)^n | g1] by quad over g2 on the half line where it is > 0
        lo = -rho * g1 / s
        f = (lambda g2: _pdf(g2)) if order == 0 else (lambda g2: (rho * g1 + s * g2) ** order * _pdf(g2))
        if lo >= 40:
            return 0.0
        return integrate.quad(f, lo, 40, epsabs=1e-14, epsrel=1e-13, points=[0.0] if lo < 0 else None)[0]
    # the inner mean jumps over a width ~ s around g1 = 0: give quad those points (phi(40) ~ 1e-348)
    ref, err = integrate.quad(lambda g1: g1**order * inner(g1) * _pdf(g1), 0, 40, epsabs=1e-13, epsrel=1e-12,
                              points=[s, 4 * s, 1.0], limit=200)
    # 1e-11: nested scipy.quad, inner tolerance 1e-13 integrated against a density (estimate err)
    assert abs(float(Gs.arccos_kernel(rho, order)) - ref) < 1e-11 + 10 * err


def test_arccos_kernel_identities():
    rho = np.linspace(-1, 1, 41)
    # k_0 = P(g1 > 0, g2 > 0) = 1/4 + arcsin(rho)/(2 pi); 1e-16: ~ eps of 1/2
    assert np.max(np.abs(Gs.arccos_kernel(rho, 0) - (0.25 + np.arcsin(rho) / (2 * np.pi)))) < 2e-16
    # k_1' = k_0 and k_2' = 4 k_1 (d/drho E[relu^2 relu^2] = E[2 relu 2 relu]): central differences
    h, r = 1e-5, np.linspace(-0.9, 0.9, 7)
    d1 = (Gs.arccos_kernel(r + h, 1) - Gs.arccos_kernel(r - h, 1)) / (2 * h)
    d2 = (Gs.arccos_kernel(r + h, 2) - Gs.arccos_kernel(r - h, 2)) / (2 * h)
    assert np.allclose(d1, Gs.arccos_kernel(r, 0), rtol=0, atol=1e-9)     # 1e-9: h^2 k''' + eps/h
    assert np.allclose(d2, 4 * Gs.arccos_kernel(r, 1), rtol=0, atol=1e-9)
    assert float(Gs.arccos_kernel(1.0, 2)) == 1.5 and float(Gs.arccos_kernel(-1.0, 1)) == 0.0
    assert Gs.arccos_kernel(np.zeros((2, 3)), 1).shape == (2, 3)
    assert np.isnan(Gs.arccos_kernel(np.nan, 1))


def test_mc_mean_reproducible_and_unbiased():
    f = lambda rng, m: rng.standard_normal(m) ** 2
    m1, se1 = Gs.mc_mean(f, 50_000, seed=3, chunk=7_000)
    m2, se2 = Gs.mc_mean(f, 50_000, seed=3, chunk=7_000)
    assert (m1, se1) == (m2, se2)
    assert abs(m1 - 1.0) < 5 * se1                       # 5 SE, n = 5e4, seed 3
    assert abs(se1 / (math.sqrt(2) / math.sqrt(50_000)) - 1) < 0.05   # SE of g^2 is sqrt(2/n); 5%: chi2 spread
    # the chunked Chan merge equals the one-shot mean and standard deviation
    x = np.random.default_rng(3).standard_normal(50_000) ** 2
    m3, se3 = Gs.mc_mean(lambda rng, m: rng.standard_normal(m) ** 2, 50_000, seed=3, chunk=50_000)
    assert abs(m3 - x.mean()) < 1e-14 and abs(se3 - x.std(ddof=1) / math.sqrt(50_000)) < 1e-16


def test_mc_mean_vector_samples_and_errors():
    mean, se = Gs.mc_mean(lambda rng, m: rng.normal(size=(m, 3)) + [0.0, 1.0, 2.0], 20_000, seed=0, chunk=3_000)
    assert mean.shape == (3,) and np.all(np.abs(mean - [0, 1, 2]) < 5 * se)     # 5 SE per component
    with pytest.raises(InvalidParameterError):
        Gs.mc_mean(lambda rng, m: rng.normal(size=m + 1), 100, seed=0)
    with pytest.raises(InvalidParameterError):
        Gs.mc_mean(lambda rng, m: rng.normal(size=m), 1, seed=0)
    with pytest.raises(InvalidParameterError):
        Gs.mc_mean(lambda rng, m: rng.normal(size=m), 10, seed=-1)


def test_normal_pdf_is_accurate_far_in_the_tail():
    """normal_pdf against mpmath at 50 digits: <= 4 ulp relative for |t| <= 37 (the naive form loses t^2 eps)."""
    import mpmath
    from popdyn.gaussian import normal_pdf
    mpmath.mp.dps = 50
    t = np.concatenate([np.linspace(-37.0, 37.0, 301), [0.1 + 1e-9, 26.123456789, -33.3]])
    exact = np.array([float(mpmath.npdf(mpmath.mpf(float(x)))) for x in t])
    np.testing.assert_allclose(normal_pdf(t), exact, rtol=4 * np.finfo(float).eps, atol=0)
