"""ResNet model: complexity functionals, sign flips (Prop. C.4) and the indicator-to-function map (Lemma F.2).

Oracles: closed forms vs log-space series, mpmath sums at 40
digits, plain float sums where nothing overflows, Stirling's asymptotics, scipy quad, Gauss-Legendre x
Gauss-Hermite quadrature, exhaustive greedy enumeration over subsets, Brent root of the Phi form, seeded Monte
Carlo with a stated z.
"""
import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, strategies as st
from numpy.polynomial.hermite_e import hermeval
from scipy.integrate import quad
from scipy.optimize import brentq
from scipy.special import roots_legendre
from scipy.stats import norm

from popdyn import InvalidParameterError
from popdyn.hermite import gauss_hermite
from popdyn.models.resnet.complexity import C_s, TaylorSeries, log_C_eps, log_C_eps_parts, log_C_s
from popdyn.models.resnet.coupling import (random_flip_fraction, sign_flips, worst_case_flip_fraction,
                                           worst_case_flips)
from popdyn.models.resnet.indicator import h, h_coefficients, h_second_moment, log_abs_p_prime, p_prime

coeffs = st.lists(st.floats(-3, 3, allow_nan=False), min_size=1, max_size=12).map(np.array)
odd_coeffs = coeffs.map(lambda c: np.where((np.arange(len(c)) >= 2) & (np.arange(len(c)) % 2 == 0), 0.0, c))


def _plain_C_eps(c, L, C_star, R=1.0):
    """Linear-space C_eps with math.fsum (valid while nothing overflows); i = 0 term 2|c_0|."""
    return math.fsum([2 * abs(c[0])] + [((C_star * R) ** i + (C_star * R * math.sqrt(L / i)) ** i) * abs(c[i])
                                        for i in range(1, len(c))])


# ---------- closed forms and log space ----------
@pytest.mark.parametrize("name", ["exp_minus_one", "sin", "cos"])
@pytest.mark.parametrize("c", [0.5, 1.0, -2.0])
def test_closed_forms_equal_series(name, c):
    """C_s and the eps-free part: closed form (infinite family) vs the 400-term / 6e4-term log-space series."""
    inf, fin = getattr(TaylorSeries, name)(c), getattr(TaylorSeries, name)(c, n=400)
    # 1e-12: float64 logsumexp over <= 400 terms vs closed form, both ~1e-15 relative
    assert C_s(fin) == pytest.approx(C_s(inf), rel=1e-12)
    closed = {"exp_minus_one": (1 + abs(c)) * math.exp(abs(c)) - 1, "sin": abs(c) * math.cosh(c) + math.sinh(abs(c)),
              "cos": abs(c) * math.sinh(abs(c)) + math.cosh(c)}[name]
    assert C_s(inf, C_star=1.0) == pytest.approx(closed, rel=1e-13)   # 1e-13: closed form in log space vs direct
    big = getattr(TaylorSeries, name)(c, n=int(1e4 * abs(c) + 60 * math.sqrt(1e4 * abs(c)) + 100))
    # 1e-12 in log (~1e4): summation order only; the series is cut 60 Poisson widths past its peak i ~ C*|c|
    assert log_C_eps_parts(big, log_inv_eps=0.0)[0] == pytest.approx(log_C_eps_parts(inf, log_inv_eps=0.0)[0],
                                                                     rel=1e-12)


@given(st.sampled_from(["exp_minus_one", "sin", "cos"]), st.floats(1e-300, 5.0), st.booleans(),
       st.floats(1e-3, 1e4))
def test_closed_forms_all_scales(name, c, negative, C_star):
    """Closed forms stay accurate from c = 1e-300 (cancellation in e^a - 1, sinh a) to C* c = 5e4."""
    c = -c if negative else c
    inf = getattr(TaylorSeries, name)(c)
    a = C_star * abs(c)
    fin = getattr(TaylorSeries, name)(c, n=int(a + 40 * math.sqrt(a) + 60))   # 40 Poisson widths past i ~ a
    # 1e-12 in log: logsumexp of <= 3000 terms; C_s compared at C* = 1 (its series peaks at i ~ |c| <= 5)
    assert log_C_s(inf, C_star=1.0) == pytest.approx(log_C_s(fin, C_star=1.0), rel=1e-12, abs=1e-12)
    assert log_C_eps_parts(inf, log_inv_eps=0.0, C_star=C_star)[0] == pytest.approx(
        log_C_eps_parts(fin, log_inv_eps=0.0, C_star=C_star)[0], rel=1e-12, abs=1e-12)


def test_eps_free_part_reference_values():
    """Reference values: log sum (C*)^i |c_i| = 10000 (exp - 1) and 9999.30685282 (sin, cos) at C* = 1e4, c = 1."""
    got = [log_C_eps_parts(getattr(TaylorSeries, n)(1.0), log_inv_eps=0.0)[0] for n in ("exp_minus_one", "sin", "cos")]
    assert got == pytest.approx([1e4, 1e4 - math.log(2), 1e4 - math.log(2)], abs=1e-8)   # 1e-8: V1's printed digits


def test_eps_part_against_mpmath():
    """eps-part of sin(z), C* = 10, L = 50: series in log space vs an mpmath sum at 40 digits of 400 terms."""
    mpmath.mp.dps = 40
    C, L = 10, 50
    ref = mpmath.fsum((C * mpmath.sqrt(mpmath.mpf(L) / i)) ** i / mpmath.factorial(i) for i in range(1, 400, 2))
    got = log_C_eps_parts(TaylorSeries.sin(1.0), log_inv_eps=L, C_star=C)[1]
    assert got == pytest.approx(float(mpmath.log(ref)), rel=1e-13)   # 1e-13: float64 log-sum vs 40 digits


@pytest.mark.parametrize("L", [1e4, 2e5, 1e6])
def test_eps_part_no_overflow_and_stirling(L):
    """C* = 1e4 and log(1/eps) up to 1e6: finite, equal to the explicitly truncated series, and
    log(eps-part)/L^(1/3) -> 1.5 e^(-1/3) (C* c)^(2/3) (Stirling, V1: 498.83 ... 498.87)."""
    s = TaylorSeries.sin(1.0)
    log_eps = log_C_eps_parts(s, log_inv_eps=L)[1]
    istar = math.exp(-1 / 3) * (1e4 * math.sqrt(L)) ** (2 / 3)
    trunc = log_C_eps_parts(s.truncate(int(2 * istar) + 2000), log_inv_eps=L)[1]
    assert math.isfinite(log_eps) and log_eps == pytest.approx(trunc, rel=1e-13)   # 1e-13: same terms, other order
    stirling = 1.5 * math.exp(-1 / 3) * 1e4 ** (2 / 3)
    # 1e-4: the next Stirling term is O(log(i*)/i*) ~ 3e-4 at L = 1e4 (V1: 498.835 vs 498.876)
    assert log_eps / L ** (1 / 3) == pytest.approx(stirling, rel=3e-4)


@pytest.mark.parametrize("name", ["exp_minus_one", "sin", "cos"])
def test_example_41_o_one_over_eps_only_past_1e4(name):
    """Example 4.1 says C_eps = o(1/eps); at C* = 1e4 the inequality C_eps < 1/eps starts only at
    log(1/eps) = L_x with L_x = 498.88 L_x^(1/3) (Stirling), i.e. L_x ~ 1.114e4 (docs/resnet.md)."""
    f = getattr(TaylorSeries, name)(1.0)
    Lx = brentq(lambda L: log_C_eps(f, log_inv_eps=L) - L, 1e3, 1e6, xtol=1e-6)
    stirling = (1.5 * math.exp(-1 / 3) * 1e4 ** (2 / 3)) ** 1.5
    assert Lx == pytest.approx(stirling, rel=1e-3)       # 1e-3: next Stirling term, 3e-4 in the exponent x 1.5
    assert log_C_eps(f, log_inv_eps=1.1e4) > 1.1e4 and log_C_eps(f, log_inv_eps=1.12e4) < 1.12e4


@given(coeffs, st.floats(0.0, 20.0), st.floats(0.5, 30.0))
def test_log_space_equals_linear_space(c, L, C_star):
    """Log-space C_eps and C_s equal math.fsum sums in float64 where nothing overflows (degree <= 11, C* <= 30)."""
    s = TaylorSeries.from_coeffs(c)
    plain = _plain_C_eps(c, L, C_star)
    if plain == 0:
        assert log_C_eps(s, log_inv_eps=L, C_star=C_star) == -np.inf
        return
    assert math.exp(log_C_eps(s, log_inv_eps=L, C_star=C_star)) == pytest.approx(plain, rel=1e-12)   # 1e-12: 24 terms
    cs = C_star * math.fsum((i + 1) * abs(ci) for i, ci in enumerate(c))
    assert C_s(s, C_star=C_star) == pytest.approx(cs, rel=1e-12, abs=1e-300)


# ---------- scaling, monotonicity, radius ----------
@given(coeffs.filter(lambda c: np.abs(c).sum() > 0), st.floats(-5, 5).filter(lambda x: abs(x) > 1e-3),
       st.floats(0.1, 3.0), st.floats(1.0, 1e4), st.floats(0.0, 100.0))
def test_scaling_and_monotonicity(c, lam, R, C_star, L):
    s, ls = TaylorSeries.from_coeffs(c), TaylorSeries.from_coeffs(lam * c)
    tol = 1e-12                    # 1e-12 in log: logsumexp of <= 24 terms, shifted by log|lam|
    assert log_C_s(ls, C_star, R) - log_C_s(s, C_star, R) == pytest.approx(math.log(abs(lam)), abs=tol)
    assert log_C_eps(ls, log_inv_eps=L, C_star=C_star, R=R) - log_C_eps(s, log_inv_eps=L, C_star=C_star, R=R) \
        == pytest.approx(math.log(abs(lam)), abs=tol)
    base = log_C_eps(s, log_inv_eps=L, C_star=C_star, R=R)
    assert log_C_eps(s, log_inv_eps=L, C_star=C_star, R=1.5 * R) >= base - tol
    assert log_C_eps(s, log_inv_eps=L, C_star=2 * C_star, R=R) >= base - tol
    assert log_C_eps(s, log_inv_eps=L + 1.0, C_star=C_star, R=R) >= base - tol       # non-increasing in eps
    assert log_C_s(s, C_star, 1.5 * R) >= log_C_s(s, C_star, R) - tol
    assert log_C_s(s, 2 * C_star, R) >= log_C_s(s, C_star, R) - tol
    assert base >= log_C_eps_parts(s, log_inv_eps=L, C_star=C_star, R=R)[0] - tol  # C_eps >= sum (C*R)^i |c_i|
    assert log_C_s(s.rescale(R), C_star) == pytest.approx(log_C_s(s, C_star, R), abs=tol)   # C_s(phi(R.),1)
    assert log_C_eps(s.rescale(R), log_inv_eps=L, C_star=C_star) == pytest.approx(base, abs=tol)


def test_eps_and_log_inv_eps_agree():
    s = TaylorSeries.cos(0.7)
    assert log_C_eps(s, eps=1e-5) == pytest.approx(log_C_eps(s, log_inv_eps=math.log(1e5)), rel=1e-14)
    assert log_C_eps(TaylorSeries.exp_minus_one(0.0), eps=0.5) == -np.inf         # the zero function
    assert log_C_eps(TaylorSeries.cos(0.0), eps=0.5) == pytest.approx(math.log(2.0))   # 2|c_0|


# ---------- polynomials and Lemma B.2 ----------
@given(coeffs, st.floats(1.0, 1e4))
def test_polynomial_C_s_bound(c, C_star):
    q = len(c) - 1
    assert C_s(TaylorSeries.from_coeffs(c), C_star) <= C_star * (q + 1) * np.abs(c).sum() * (1 + 1e-12) + 1e-300


@given(coeffs, st.integers(0, 2**31 - 1))
def test_split_even_odd_lemma_B2(c, seed):
    """F+ + z F- = F on a grid, and Lemma B.2's F' equals F(<w,x>/sqrt 2) on the unit sphere."""
    s = TaylorSeries.from_coeffs(c)
    plus, minus = s.split_even_odd()
    z = np.linspace(-1.5, 1.5, 31)
    assert np.allclose(plus(z) + z * minus(z), s(z), rtol=1e-12, atol=1e-12 * np.abs(c).sum() * 4 ** len(c))
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(7)
    w /= np.linalg.norm(w)
    X = rng.standard_normal((50, 7))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    arg = X @ w / math.sqrt(2)                       # ||(x, 1)|| = sqrt 2 on the unit sphere
    Fprime = plus(arg) * 1.0 + minus(arg) * (X @ w) / math.sqrt(2)
    assert np.allclose(Fprime, s(arg), rtol=1e-12, atol=1e-12 * np.abs(c).sum())


def test_infinite_family_evaluation_and_truncation():
    z = np.linspace(-1, 1, 11)
    for name, f in [("exp_minus_one", np.expm1), ("sin", np.sin), ("cos", np.cos)]:
        inf = getattr(TaylorSeries, name)(0.8)
        assert np.allclose(inf(z), f(0.8 * z), rtol=1e-15, atol=1e-16)
        assert np.allclose(inf.truncate(40)(z), f(0.8 * z), rtol=1e-14, atol=1e-15)   # tail 0.8^40/40! ~ 1e-52
        assert inf.rescale(2.0)(z) == pytest.approx(f(1.6 * z))


# ---------- p'_i ----------
def test_p_prime_against_quadrature():
    for i in range(0, 22):
        ref, err = quad(lambda g: hermeval(g, [0] * i + [1]) * norm.pdf(g), 0, 40, limit=200)
        # roundoff of quad on an integrand of size ||He_i|| = sqrt(i!): 1e-12 sqrt(i!), or 10x its own estimate
        assert abs(p_prime(i) - ref) <= max(10 * err, 1e-12 * math.sqrt(math.factorial(i)))


def test_p_prime_properties():
    i = np.arange(0, 302)
    p = p_prime(i)
    assert p[0] == 0.5 and np.all(p[2::2] == 0)
    odd = i[1::2]
    assert np.all(np.sign(p[1::2]) == (-1.0) ** ((odd - 1) // 2))
    dfact = [math.prod(range(k - 2, 0, -2)) for k in odd]                 # exact (i-2)!! as Python ints
    assert np.allclose(np.exp(log_abs_p_prime(odd)) * math.sqrt(2 * math.pi),
                       [float(x) for x in dfact], rtol=1e-12)          # 1e-12: gammaln vs exact integers, i <= 301
    lower = np.array([math.log(math.prod(range(k - 1, 0, -2))) - math.log(math.pi * math.sqrt(k)) for k in odd])
    assert np.all(log_abs_p_prime(odd) >= lower)                         # corrected bound (docs/errata.md)
    ratio = np.exp(log_abs_p_prime(odd) - lower)
    assert ratio[-1] == pytest.approx(1.0008, abs=1e-4)                 # sharp: V2's 1.0008 at i = 301


def test_claim_F3_paper_bound_is_false():
    """Errata (Claim F.3): |p'_i| >= (i-1)!!/4 fails at i = 3, 5, 7 (ratios 0.798, 0.598, 0.499)."""
    ratios = [abs(p_prime(k)) / (math.prod(range(k - 1, 0, -2)) / 4) for k in (1, 3, 5, 7)]
    assert ratios[0] > 1 and ratios[1:] == pytest.approx([0.798, 0.598, 0.499], abs=1e-3)


# ---------- the indicator identity and E[h^2] ----------
def _indicator_mean(f, x1, n_leg=200, n_gh=60):
    """E_{alpha, beta}[1[alpha >= 0] f(alpha x1 + sqrt(1-x1^2) beta)]: Gauss-Legendre on alpha in [0, 14]
    (weight phi; the tail beyond 14 is < 1e-44) x probability Gauss-Hermite in beta."""
    a, wa = roots_legendre(n_leg)
    a, wa = 7 * (a + 1), 7 * wa * norm.pdf(7 * (a + 1))
    b, wb = gauss_hermite(n_gh)
    vals = f(a[:, None] * x1 + math.sqrt(1 - x1 * x1) * b[None, :])
    return float(wa @ vals @ wb)


@given(odd_coeffs.filter(lambda c: len(c) <= 10))
def test_indicator_reproduces_phi(c):
    s = TaylorSeries.from_coeffs(c)
    for x1 in (-1.0, -0.6, 0.0, 0.3, 0.95, 1.0):
        got = _indicator_mean(lambda a1: h(s, a1), x1)
        assert got == pytest.approx(s(x1), abs=1e-10 * (1 + np.abs(c).sum() * 10 ** len(c)))   # quadrature, deg <= 9


def test_h_second_moment_reference_and_quadrature():
    """Spec V2: phi = 0.3 + 0.8z - 0.5z^3 + 0.2z^5 + 0.05z^7 gives E[h^2] = 17.508907098395 both ways."""
    s = TaylorSeries.from_coeffs([0.3, 0.8, 0, -0.5, 0, 0.2, 0, 0.05])
    x, w = gauss_hermite(60)                                           # exact for degree <= 119
    assert h_second_moment(s) == pytest.approx(17.508907098395, abs=1e-11)
    assert w @ h(s, x) ** 2 == pytest.approx(h_second_moment(s), rel=1e-12)
    assert h_second_moment(s) <= C_s(s, C_star=0.77) ** 2 and h_second_moment(s) > C_s(s, C_star=0.7) ** 2


@given(odd_coeffs.filter(lambda c: len(c) <= 12))
def test_h_second_moment_against_gauss_hermite(c):
    s = TaylorSeries.from_coeffs(c)
    x, w = gauss_hermite(40)
    assert w @ h(s, x) ** 2 == pytest.approx(h_second_moment(s), rel=1e-10, abs=1e-300)   # 1e-10: He_11^2 cancellation


def test_even_terms_cannot_be_reproduced():
    """Negative test: E[He_i(alpha_1) 1[alpha >= 0]] = x1^i p'_i vanishes for even i >= 2, so z^2 is unreachable."""
    for i in (2, 4):
        He = lambda a1: hermeval(a1, [0] * i + [1])
        assert max(abs(_indicator_mean(He, x1)) for x1 in (0.3, 0.7, 1.0)) < 1e-12
        odd = lambda a1: hermeval(a1, [0] * (i + 1) + [1])
        assert _indicator_mean(odd, 0.7) == pytest.approx(0.7 ** (i + 1) * p_prime(i + 1), rel=1e-12)
    with pytest.raises(InvalidParameterError, match="'series'.*even degrees \\[2\\]"):
        h_coefficients(TaylorSeries.from_coeffs([0.1, 1.0, 0.5]))


def test_indicator_d_dimensional_monte_carlo():
    """Lemma F.2(b) in d = 10: E[1[<w,x> >= 0] h(<w,w*>)] = phi(<w*,x>), seeded MC, 4e5 samples, |z| < 5."""
    rng = np.random.default_rng(3)
    s = TaylorSeries.from_coeffs([0.3, 0.8, 0, -0.5])
    d, n = 10, 400_000
    wstar = np.eye(d)[0]
    for rho in (-0.8, 0.5):
        x = rho * wstar + math.sqrt(1 - rho * rho) * np.eye(d)[1]
        W = rng.standard_normal((n, d))
        v = (W @ x >= 0) * h(s, W @ wstar)
        assert abs(v.mean() - s(rho)) < 5 * v.std() / math.sqrt(n)


# ---------- sign flips ----------
gvec = st.integers(1, 60).flatmap(lambda m: st.lists(st.floats(-2, 2, allow_nan=False), min_size=m, max_size=m))


@given(gvec, st.floats(0, 3), st.floats(0, 3))
def test_worst_case_flips_monotone_and_bounded(g0, d1, d2):
    lo, hi = sorted((d1, d2))
    a, b = worst_case_flips(g0, lo), worst_case_flips(g0, hi)
    assert 0 <= a <= b <= len(g0)
    if lo < min(abs(x) for x in g0):
        assert a == 0


@given(st.integers(1, 9), st.integers(0, 2**31 - 1), st.floats(0.01, 2.0))
def test_worst_case_flips_by_enumeration(m, seed, delta):
    """Brute force: the largest subset S whose flip cost sum_{j in S} g0_j^2 fits in delta^2."""
    g0 = np.random.default_rng(seed).standard_normal(m) / math.sqrt(m)
    best = max(len(S) for r in range(m + 1) for S in itertools.combinations(range(m), r)
               if sum(g0[j] ** 2 for j in S) < delta ** 2)     # continuous g0: ties have probability 0
    assert worst_case_flips(g0, delta) == best


@given(st.integers(1, 200), st.integers(0, 2**31 - 1), st.floats(0.0, 1.5))
def test_any_perturbation_flips_at_most_worst_case(m, seed, delta):
    """Random directions, and the greedy perturbation itself, inside the ball: flips <= s_max (attained);
    ||D' g0|| <= ||g'|| for every g' (Prop. C.4)."""
    rng = np.random.default_rng(seed)
    g0 = rng.standard_normal(m) / math.sqrt(m)
    smax = worst_case_flips(g0, delta)
    for _ in range(5):
        gp = rng.standard_normal(m) * rng.exponential(size=m)
        gp *= delta * rng.uniform() / max(np.linalg.norm(gp), 1e-300)
        assert sign_flips(g0, gp) <= smax
        D = (g0 + gp >= 0).astype(float) - (g0 >= 0)
        assert np.linalg.norm(D * g0) <= np.linalg.norm(gp) * (1 + 1e-15)
    # attained: for s = smax, the radius just above the cost of the s smallest |g0_j| admits g' = -(1 + 1e-9) g0 there
    order = np.argsort(np.abs(g0))[:smax]
    greedy = np.zeros(m)
    greedy[order] = -(1 + 1e-9) * g0[order]
    assert sign_flips(g0, greedy) == smax
    assert worst_case_flips(g0, np.linalg.norm(greedy)) == smax      # and no more: delta' < delta


def test_worst_case_flips_ties_and_tiny_values():
    """Cost |g'_j| = |g0_j| flips a negative coordinate (to 0 >= 0) but not a non-negative one."""
    assert worst_case_flips([-0.5, 2.0], 0.5) == 1 and worst_case_flips([0.5, 2.0], 0.5) == 0
    assert worst_case_flips([0.5, -0.5], 0.5) == 1 and worst_case_flips([0.0, 0.0], 0.0) == 0
    assert worst_case_flips([0.0, 0.0], 1e-300) == 2
    assert worst_case_flips([1e-299], 0.0) == 0 and worst_case_flips([-1e-299], 0.0) == 0
    assert worst_case_flips([1e-200, -3e-200], 1e-199) == 2      # squares would underflow
    assert sign_flips([-0.5], [0.5]) == 1 and sign_flips([0.5], [-0.5]) == 0


def test_flip_fraction_exact_against_phi_form_and_greedy():
    """Exact fraction vs a Brent root of delta^2 = 2Phi(t) - 1 - 2 t phi(t), and vs greedy on m = 2e5 draws
    (V4: 0.012424 vs 0.012407 at delta = 1e-3; 0.806439 vs 0.805901 at 0.6)."""
    rng = np.random.default_rng(0)
    m = 200_000
    g0 = rng.standard_normal(m) / math.sqrt(m)
    for delta in (1e-3, 0.05, 0.3, 0.6, 0.95):
        t = brentq(lambda t: 2 * norm.cdf(t) - 1 - 2 * t * norm.pdf(t) - delta ** 2, 1e-12, 40, xtol=1e-15)
        frac = worst_case_flip_fraction(delta)
        assert frac == pytest.approx(2 * norm.cdf(t) - 1, rel=1e-9)     # 1e-9: brentq xtol and cdf cancellation
        # fluctuation: s.e. of the fraction ~ sqrt(frac/m) from the order statistics; 5 s.e. plus 1/m
        assert abs(worst_case_flips(g0, delta) / m - frac) < 5 * math.sqrt(frac / m) + 1 / m
    assert worst_case_flip_fraction(1.0) == 1.0 and worst_case_flip_fraction(0.0) == 0.0


def test_small_delta_approximation():
    """(6 delta^2/pi)^(1/3) = 1.2407 delta^(2/3); relative error O(t^2) = O(delta^(4/3)) (slope 4/3 in log-log)."""
    deltas = np.array([1e-8, 1e-6, 1e-4, 1e-2])
    err = np.array([worst_case_flip_fraction(d, method="small_delta") / worst_case_flip_fraction(d) - 1
                    for d in deltas])
    assert (6 / math.pi) ** (1 / 3) == pytest.approx(1.2407, abs=1e-4)
    slope = np.polyfit(np.log(deltas[1:]), np.log(err[1:]), 1)[0]
    assert slope == pytest.approx(4 / 3, abs=0.02) and err[0] < 1e-9   # 0.02: next-order term at delta = 1e-2


@pytest.mark.parametrize("delta", [0.1, 0.3, 2.0])
def test_random_flip_fraction_monte_carlo(delta):
    """V4: m arctan(delta)/pi flips for g' ~ N(0, delta^2 I/m); binomial count, |z| < 5, m = 1e6."""
    rng = np.random.default_rng(1)
    m = 1_000_000
    g0 = rng.standard_normal(m) / math.sqrt(m)
    count = sign_flips(g0, delta * rng.standard_normal(m) / math.sqrt(m))
    p = random_flip_fraction(delta)
    assert abs(count - m * p) < 5 * math.sqrt(m * p * (1 - p))
    assert p < worst_case_flip_fraction(min(delta, 1.0)) or delta >= 1


# ---------- bad inputs ----------
@pytest.mark.parametrize("call, name", [
    (lambda: log_C_eps(TaylorSeries.sin(1.0)), "eps"),
    (lambda: log_C_eps(TaylorSeries.sin(1.0), eps=0.1, log_inv_eps=2.0), "eps"),
    (lambda: log_C_eps(TaylorSeries.sin(1.0), eps=0.0), "eps"),
    (lambda: log_C_eps(TaylorSeries.sin(1.0), eps=float("nan")), "eps"),
    (lambda: log_C_eps(TaylorSeries.sin(1.0), log_inv_eps=-1.0), "log_inv_eps"),
    (lambda: log_C_eps([1.0, 2.0], eps=0.1), "series"),
    (lambda: C_s(TaylorSeries.sin(1.0), C_star=0.0), "C_star"),
    (lambda: C_s(TaylorSeries.sin(1.0), R=-1.0), "R"),
    (lambda: TaylorSeries.sin(float("inf")), "c"),
    (lambda: TaylorSeries.cos(1.0, n=0), "n"),
    (lambda: TaylorSeries.from_coeffs([1.0, float("nan")]), "c"),
    (lambda: TaylorSeries([0.0, float("nan")], [1, 1]), "log_abs"),
    (lambda: TaylorSeries([0.0, 1.0], [1, 2]), "sign"),
    (lambda: TaylorSeries.sin(1.0).split_even_odd(), "series"),
    (lambda: worst_case_flips([0.1, float("inf")], 0.1), "g0"),
    (lambda: worst_case_flips([0.1], -0.1), "delta"),
    (lambda: sign_flips([0.1, 0.2], [0.1]), "g_prime"),
    (lambda: worst_case_flip_fraction(0.1, method="paper"), "method"),
    (lambda: random_flip_fraction(float("nan")), "delta"),
    (lambda: p_prime(-1), "i"),
    (lambda: p_prime(1.5), "i"),
    (lambda: h_second_moment(TaylorSeries.sin(1.0)), "series"),
    (lambda: h(TaylorSeries.from_coeffs([0.0, 1.0]), [float("nan")]), "alpha1"),
])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        call()


def test_overflowing_C_s_raises_not_inf():
    with pytest.raises(OverflowError):
        C_s(TaylorSeries.exp_minus_one(1000.0))
    assert log_C_s(TaylorSeries.exp_minus_one(1000.0)) == pytest.approx(math.log(1e4) + 1000 + math.log(1001))
