"""Activations: closed forms against quadrature, mpmath, 2-D Gauss-Hermite and Monte Carlo."""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st
from scipy import integrate

from popdyn import activations as A
from popdyn import gaussian, hermite
from popdyn._validate import InvalidParameterError

NAMES = ["relu", "abs", "leaky_relu", "linear", "quadratic", "sign", "erf", "tanh", "sigmoid", "gelu",
         "softplus", "exp", "he1", "he3", "he6"]
SMOOTH = ["erf", "tanh", "sigmoid", "gelu", "softplus", "exp", "linear", "quadratic", "he3"]
KINKED = ["relu", "abs", "leaky_relu", "sign"]


def _gauss_quad(f, kinks=()):
    """E f(g) by scipy.integrate.quad split at the kinks; returns (value, abserr)."""
    pts = sorted({-40.0, -8.0, 8.0, 40.0, *kinks})     # phi(40) < 1e-300: the rest is negligible
    res = [integrate.quad(lambda z: f(z) * math.exp(-z * z / 2) / math.sqrt(2 * math.pi), a, b,
                          epsabs=1e-14, epsrel=1e-13, limit=200) for a, b in zip(pts[:-1], pts[1:])]
    return sum(r[0] for r in res), sum(r[1] for r in res)


def _kinks(name):
    return (0.0,) if name in KINKED else ()


def _gh2(act, rho, n):
    """K(rho) by a 2-D Gauss-Hermite product rule: E[s(g1) s(rho g1 + sqrt(1 - rho^2) g2)]."""
    x, w = hermite.gauss_hermite(n)
    g1, g2 = np.meshgrid(x, x, indexing="ij")
    return float(np.sum(np.outer(w, w) * act(g1) * act(rho * g1 + math.sqrt(1 - rho * rho) * g2)))


# ------------------------------------------------------------------ names and errors

def test_get_names_and_identity():
    for name in NAMES + ["he40"]:
        a = A.get(name)
        assert A.get(a) is a and A.get(name) is a and isinstance(a, A.Activation)
    assert A.get("relu").name == "relu" and A.get("he40").information_exponent == 40


@pytest.mark.parametrize("bad", ["ReLU", "he0", "he", "swish", 3, None])
def test_unknown_names_raise_listing_valid_ones(bad):
    with pytest.raises(InvalidParameterError, match="activation .* is not known.*relu.*tanh.*'activation' parameter"):
        A.get(bad)


def test_a_misspelt_activation_suggests_the_name():
    with pytest.raises(InvalidParameterError, match="did you mean 'relu'"):
        A.get("Relu")


@pytest.mark.parametrize("call", [
    lambda: A.get("relu").rescaled(-1.0), lambda: A.get("tanh").rescaled(np.nan),
    lambda: A.get("erf").rescaled(0.0), lambda: A.get("relu").hermite_coeffs(-1),
    lambda: A.get("tanh").Kprime_tail_bound(1.5, 0.3), lambda: A.leaky_relu(2.0),
    lambda: A.Activation.from_callable(3.0),
])
def test_invalid_arguments_raise(call):
    with pytest.raises(InvalidParameterError):
        call()


@pytest.mark.parametrize("name", ["relu", "erf", "tanh", "sign", "he3"])
def test_nan_propagates_and_shapes_are_kept(name):
    a = A.get(name)
    rho = np.array([[0.1, np.nan, 0.5], [-0.3, 0.0, 1.0]])
    for f in (a.K, a.Kprime, lambda r: a.Kprime_tail_bound(8, r)):
        out = f(rho)
        assert out.shape == (2, 3) and np.isnan(out[0, 1]) and np.isfinite(out[0, 0])
    assert np.all(a.K(1 + 1e-15) == a.K(1.0))            # rounding past 1 is clipped


# ------------------------------------------------------------------ Parseval and moments

@pytest.mark.parametrize("name", NAMES)
def test_parseval_second_moment(name):
    a = A.get(name)
    ref, err = _gauss_quad(lambda z: a(np.float64(z)) ** 2, _kinks(name))
    # 1e-11: scipy.quad on each piece (its estimate err is <= 1e-12 here) vs the closed/quadrature value
    assert abs(a.second_moment - ref) < 1e-11 + 10 * err
    assert abs(float(a.K(1.0)) - a.second_moment) < 1e-15 * max(1, ref) * 4   # K(1) = E s^2 (4 eps)
    if name in ("relu", "abs", "leaky_relu", "sign"):
        return                                         # slow (algebraic) tails: tested below
    mu = a.hermite_coeffs(300)
    # 1e-13: the coefficients of the smooth ones decay below 1e-15 well before p = 300
    assert abs(np.sum(mu**2) - ref) < 1e-13 * max(1, ref) + 10 * err


@pytest.mark.parametrize("name", SMOOTH + ["relu", "abs", "leaky_relu"])
def test_parseval_derivative_moment(name):
    a = A.get(name)
    ref, err = _gauss_quad(lambda z: a.deriv(np.float64(z)) ** 2, _kinks(name))
    assert abs(a.Kprime1 - ref) < 1e-11 + 10 * err     # 1e-11: as for E s^2 above
    p = np.arange(301)
    if name in SMOOTH:
        # 1e-13: coefficients decay super-geometrically (tanh: p mu_p^2 ~ 1e-15 at p = 161)
        assert abs(np.sum(p * a.hermite_coeffs(300) ** 2) - ref) < 1e-13 * max(1, ref) + 10 * err


def test_tanh_golden_values():
    a = A.get("tanh")
    mu = a.hermite_coeffs(7)
    gold = {1: 0.6057055096021, 3: -0.1484371907873, 5: 0.0625475237527, 7: -0.0314454192877}
    for p, v in gold.items():
        assert abs(mu[p] - v) < 1e-13                   # 1e-13: the reference values have 13 decimals
    assert abs(a.Kprime1 - 0.46440290244823) < 1e-13    # reference value (13 decimals)
    assert abs(float(a.Kprime(1.0)) - 0.46440290244823) < 1e-13


@pytest.mark.parametrize("P", [10, 100, 1000, 10_000])
def test_relu_tail_law(P):
    """sum_{p>P} p mu_p^2 = 1/(pi sqrt(2 pi P)) (docs/lora.md); Kprime_tail_bound(P, 1) is that deficit."""
    b = float(A.get("relu").Kprime_tail_bound(P, 1.0))
    # 1/P: the next term of the asymptotic expansion is measured at +0.083/P relative
    assert abs(b * math.pi * math.sqrt(2 * math.pi * P) - 1) < 1 / P
    mu = A.get("relu").hermite_coeffs(4 * P)
    p = np.arange(4 * P + 1)
    direct = np.sum(p[P + 1:] * mu[P + 1:] ** 2) + 1 / (math.pi * math.sqrt(2 * math.pi * 4 * P))
    assert abs(b - direct) < 0.2 * b / P                 # 0.2/P: same expansion, at 4P, relative


# ------------------------------------------------------------------ closed forms vs quadrature

@pytest.mark.parametrize("name", NAMES)
def test_closed_form_coefficients_vs_quadrature(name):
    a = A.get(name)
    mu, err = hermite.hermite_coeffs_quad(a, 80, _kinks(name))
    scale = math.sqrt(a.second_moment)
    # 1e-14 relative to sqrt(E s^2): split Gauss-Legendre is spectrally accurate on each piece
    assert np.max(np.abs(a.hermite_coeffs(80) - mu)) < 1e-14 * max(1, scale) * 4 + 10 * err


@pytest.mark.parametrize("name,p", [("relu", 2), ("relu", 12), ("sign", 5), ("sign", 21), ("erf", 9),
                                    ("erf", 31), ("exp", 7), ("abs", 10), ("leaky_relu", 4)])
def test_closed_form_coefficients_vs_mpmath(name, p):
    a = A.get(name)
    f = {"relu": lambda t: max(t, 0), "sign": mp.sign, "erf": mp.erf, "exp": mp.exp, "abs": abs,
         "leaky_relu": lambda t: t if t > 0 else t / 100}[name]
    with mp.workdps(30):
        h = lambda t: mp.hermite(p, t / mp.sqrt(2)) * mp.power(2, -mp.mpf(p) / 2) / mp.sqrt(mp.factorial(p))
        ref = mp.quad(lambda t: f(t) * h(t) * mp.npdf(t), [-mp.inf, -6, 0, 6, mp.inf])
    assert abs(a.hermite_coeffs(p)[p] - float(ref)) < 1e-15 * max(1, abs(float(ref))) * 4   # 4 eps


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("rho", [-0.95, -0.4, 0.0, 0.3, 0.8])
def test_K_vs_series_and_Kprime_vs_finite_difference(name, rho):
    a = A.get(name)
    P = 600
    mu2 = a.hermite_coeffs(P) ** 2
    series = hermite.power_series(mu2, rho)
    tail = abs(rho) ** (P + 1) * max(a.second_moment - np.sum(mu2), 0)   # Parseval bound on the K tail
    # 1e-14 * K(1): rounding of 600 terms; tail: the truncated part (relu at 0.95: ~1e-17)
    assert abs(float(a.K(rho)) - series) <= 1e-14 * a.second_moment + tail
    h = 1e-5
    fd = (float(a.K(rho + h)) - float(a.K(rho - h))) / (2 * h)
    # central differences: h^2 |K'''| / 6 + eps K(1) / h; |K'''| <= 50 (1 - rho^2)^(-5/2) max(1, K(1))
    # covers the steepest (sign: K''' = (2/pi)(1 + 2 rho^2)(1 - rho^2)^(-5/2)) and exp (K''' = e^2)
    scale = max(1.0, a.second_moment) * (1 - rho * rho) ** -2.5
    assert abs(float(a.Kprime(rho)) - fd) < h * h / 6 * 50 * scale + 1e-16 / h * a.second_moment


@pytest.mark.parametrize("name", SMOOTH)
@pytest.mark.parametrize("rho", [-0.7, 0.2, 0.9])
def test_K_vs_two_dimensional_gauss_hermite(name, rho):
    a = A.get(name)
    fine, coarse = _gh2(a, rho, 160), _gh2(a, rho, 120)
    # tolerance: the 2-D product rule's own convergence (|fine - coarse|) plus rounding 1e-13 * K(1)
    assert abs(float(a.K(rho)) - fine) < 10 * abs(fine - coarse) + 1e-13 * a.second_moment
    d = lambda z: a.deriv(z)
    dfine, dcoarse = _gh2(d, rho, 160), _gh2(d, rho, 120)
    assert abs(float(a.Kprime(rho)) - dfine) < 10 * abs(dfine - dcoarse) + 1e-13 * a.Kprime1


@pytest.mark.parametrize("name", KINKED)
@pytest.mark.parametrize("rho", [-0.6, 0.5, 0.97])
def test_K_vs_monte_carlo(name, rho):
    a = A.get(name)

    def sample(rng, m):
        g = rng.standard_normal((2, m))
        return a(g[0]) * a(rho * g[0] + math.sqrt(1 - rho * rho) * g[1])
    mean, se = gaussian.mc_mean(sample, 200_000, seed=0)
    assert abs(float(a.K(rho)) - mean) < 5 * se            # 5 SE, n = 2e5, seed 0


def test_closed_kernels_special_values():
    relu, erf, sign, ex = (A.get(n) for n in ("relu", "erf", "sign", "exp"))
    assert float(relu.K(1.0)) == 0.5 and float(relu.K(-1.0)) == 0.0
    assert abs(float(relu.K(0.0)) - 1 / (2 * math.pi)) < 1e-17          # 1/(2 pi): sqrt(1)/(2 pi)
    assert abs(float(erf.Kprime(0.5)) - 4 / (math.pi * math.sqrt(9 - 1))) < 1e-16
    assert float(sign.Kprime(1.0)) == np.inf and abs(float(sign.K(0.5)) - 1 / 3) < 1e-16
    assert abs(float(ex.K(0.0)) - math.e) < 1e-15          # E e^{g1+g2} = e^{1 + rho} (not e^rho)
    # near rho = 1 (theta ~ 1e-6) the arcsin form keeps full accuracy: vs mpmath at 30 digits
    for rho in (1 - 2.0**-40, -1 + 2.0**-40, 1 - 2.0**-52):
        with mp.workdps(30):
            ref = float((mp.pi - mp.acos(mp.mpf(rho))) / (2 * mp.pi))
        assert abs(float(relu.Kprime(rho)) - ref) < 1e-16       # 1e-16: ~ eps/2 of K'(1) = 1/2


# ------------------------------------------------------------------ rescaling

@pytest.mark.parametrize("name", ["relu", "abs", "leaky_relu", "sign", "erf", "exp", "tanh", "quadratic", "he3",
                                  "linear"])
@pytest.mark.parametrize("r", [0.6, 1.7])
def test_rescaled_kernels_vs_direct_quadrature(name, r):
    a = A.get(name)
    ar = a.rescaled(r)
    assert ar.name == f"{a.name}(r={r!r})" and ar.rescaled(1 / r).K(0.3) == pytest.approx(a.K(0.3), rel=1e-14)
    mu, err = hermite.hermite_coeffs_quad(lambda z: a(r * z), 300, tuple(k / r for k in _kinks(name)))
    # 1e-13 * K(1): quadrature coefficients of sigma(r z) (independent of the closed forms)
    assert np.max(np.abs(ar.hermite_coeffs(300) - mu)) < 1e-13 * max(1, ar.second_moment) + 10 * err
    for rho in (-0.5, 0.1, 0.6):          # |rho| <= 0.6: the 300-term series tail is < 0.6^300
        ref = hermite.power_series(mu**2, rho)
        ref_d = hermite.power_series(mu**2, rho, deriv=True)
        tol = 1e-13 * max(1, ar.second_moment, ar.Kprime1 if np.isfinite(ar.Kprime1) else 1)
        assert abs(float(ar.K(rho)) - ref) < tol and abs(float(ar.Kprime(rho)) - ref_d) < tol


def test_erf_rescaled_closed_form_and_homogeneity():
    r, rho = 1.3, 0.45
    ref = 2 / math.pi * math.asin(2 * r * r * rho / (1 + 2 * r * r))
    assert abs(float(A.get("erf").rescaled(r).K(rho)) - ref) < 1e-16
    relu = A.get("relu")
    assert float(relu.rescaled(2.0).Kprime(rho)) == pytest.approx(4 * float(relu.Kprime(rho)), rel=1e-15)
    assert A.get("sign").rescaled(3.0).K(rho) == A.get("sign").K(rho)


# ------------------------------------------------------------------ tail bounds and properties

@pytest.mark.parametrize("name", ["relu", "abs", "sign", "erf", "tanh", "sigmoid", "exp"])
@pytest.mark.parametrize("P", [3, 20, 80])
def test_Kprime_tail_bound_holds(name, P):
    a = A.get(name)
    mu2 = a.hermite_coeffs(4000) ** 2
    p = np.arange(mu2.size)
    for rho in (0.3, -0.8, 0.95, 1.0):
        true_tail = abs(np.sum((p * mu2)[P + 1:] * rho ** (p[P + 1:] - 1).astype(float)))
        if rho == 1.0 and np.isfinite(a.Kprime1):   # the 4000-term sum misses its own tail at rho = 1
            true_tail = a.Kprime1 - np.sum(p[:P + 1] * mu2[:P + 1])
        # 1e-15: rounding of the reference sums (terms <= 1); the bound itself is rigorous
        assert true_tail <= float(a.Kprime_tail_bound(P, rho)) + 1e-15 * (rho == 1.0)


def test_series_activations_certify_1e13():
    for name in ("tanh", "sigmoid", "gelu", "softplus"):
        a = A.get(name)
        mu = a.hermite_coeffs(512)
        P = int(np.argmax(np.cumsum((np.arange(513) * mu**2)[::-1])[::-1] < 1e-13))   # first P with tail < 1e-13
        # the bound at |rho| = 1 must be below 1e-13 for some P <= 512 and not absurdly above the truth
        assert float(a.Kprime_tail_bound(512, 1.0)) < 1e-13 and P < 512


def test_information_exponents():
    want = {"relu": 1, "abs": 2, "quadratic": 2, "he3": 3, "he6": 6, "sign": 1, "tanh": 1, "exp": 1,
            "linear": 1, "gelu": 1}
    assert {n: A.get(n).information_exponent for n in want} == want
    even = A.Activation.from_callable(lambda z: np.cos(z), deriv=lambda z: -np.sin(z), name="cos")
    assert even.information_exponent == 2


def test_from_callable_and_leaky_relu():
    mine = A.Activation.from_callable(lambda z: np.maximum(z, 0.2 * z), kinks=(0.0,), name="lk")
    ref = A.leaky_relu(0.2)
    assert A.leaky_relu(0.2) is ref and A.leaky_relu() is A.get("leaky_relu")
    for rho in (-0.9, 0.0, 0.7):
        # 1e-13: quadrature series with certified tail <= 1e-13 (rho^P decay) vs the arc-cosine form
        assert abs(float(mine.K(rho)) - float(ref.K(rho))) < 1e-13
        # 1e-8: numerical derivative (central differences, step 1e-6) enters only through K'(1)
        assert abs(float(mine.Kprime(rho)) - float(ref.Kprime(rho))) < 1e-8
    assert abs(float(A.leaky_relu(1.0).K(0.3)) - 0.3) < 1e-16      # alpha = 1 is linear


unit_vectors = st.integers(0, 2**32 - 1).map(
    lambda s: (lambda v: v / np.linalg.norm(v, axis=1, keepdims=True))(np.random.default_rng(s).normal(size=(6, 4))))


@given(u=unit_vectors, name=st.sampled_from(NAMES), r=st.sampled_from([1.0, 0.5, 2.0]))
def test_gram_matrices_are_psd(u, name, r):
    a = A.get(name).rescaled(r)
    G = np.clip(u @ u.T, -1, 1)
    note(f"{name} r={r} gram={G!r}")
    for M in (a.K(G), a.Kprime(0.999 * G)):          # 0.999: K' of sign is infinite at 1
        lam = np.linalg.eigvalsh(0.5 * (M + M.T))
        # 1e-12 * trace: float64 eigenvalue error of a 6x6 symmetric matrix
        assert lam.min() >= -1e-12 * max(1.0, np.trace(M))



@pytest.mark.parametrize("base, r", [("tanh", 1.5), ("erf", 2 ** -0.5), ("relu", 0.3)])
def test_get_reads_rescaled_names(base, r):
    scaled = A.get(base).rescaled(r)
    again = A.get(scaled.name)  # "tanh(r=1.5)": the name a rescaled activation carries
    z = np.linspace(-2, 2, 9)
    assert again.name == scaled.name and np.array_equal(again(z), scaled(z))
    assert again.K(0.3) == scaled.K(0.3) and not np.array_equal(again(z), A.get(base)(z))


def test_get_rejects_a_bad_rescaled_name():
    with pytest.raises(InvalidParameterError, match="activation 'tanh\\(r=abc\\)' is not known"):
        A.get("tanh(r=abc)")
