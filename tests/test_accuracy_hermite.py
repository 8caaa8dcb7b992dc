"""Declared accuracy of popdyn.hermite, over Hypothesis searches that reach the corners of each domain, against
mpmath at 40 digits (``mpmath.hermite``, ``mpmath.quad``) and exact rational arithmetic (``fractions``).

Every bound below is the one written in the function's Notes; ``tests/_accuracy.py`` keeps the worst
error / bound ratio (``POPDYN_ACCURACY_REPORT=1``). The last section pins former defects at the inputs that exposed
them (overflow past |x| ~ 1e154, an accumulated log-scale, a w f sent through exp and back, an underflowing power).
"""
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, note, settings
from hypothesis import strategies as st

from popdyn import hermite as H

from ._accuracy import EPS, coeffs_mp, examples, record


def _h_mp(k, x):
    """h_k(x) = He_k(x)/sqrt(k!) in mpmath (He_k(x) = 2^(-k/2) H_k(x/sqrt 2)); 0 for k < 0."""
    if k < 0:
        return mp.mpf(0)
    x = mp.mpf(x)
    return mp.hermite(k, x / mp.sqrt(2)) * mp.power(2, -mp.mpf(k) / 2) / mp.sqrt(mp.factorial(k))


def _amplitude(k, x):
    """sqrt(h_k^2 + h_{k-1}^2): the size of the recurrence's state, the scale its rounding error is relative to
    (it does not vanish at the roots of h_k)."""
    return mp.sqrt(_h_mp(k, x) ** 2 + _h_mp(k - 1, x) ** 2)


@st.composite
def degrees_and_points(draw, x_max=1e150):
    """(k, x): k up to 10^4; x in the oscillatory bulk, at the turning point 2 sqrt(k), in the tail out to
    ``x_max``, on a root of h_k (a Gauss node, nudged by 1e-12 relative), or subnormal; either sign."""
    k = draw(st.one_of(st.integers(0, 12), st.integers(0, 10_000), st.sampled_from([9_999, 10_000])))
    turn = 2 * math.sqrt(k)
    kind = draw(st.sampled_from(["bulk", "turn", "tail", "far", "root", "tiny"]))
    if kind == "bulk":
        x = draw(st.floats(0, turn + 1))
    elif kind == "turn":
        x = turn + draw(st.floats(-3, 3))
    elif kind == "tail":
        x = turn + draw(st.floats(0, 80))
    elif kind == "far":
        x = 10.0 ** draw(st.floats(0, math.log10(x_max)))
    elif kind == "root" and k > 0:
        x = float(H.gauss_hermite(k)[0][draw(st.integers(0, k - 1))]) * (1 + draw(st.floats(-1e-12, 1e-12)))
    else:
        x = draw(st.floats(0, 1e-300))
    return k, abs(x) * draw(st.sampled_from([-1.0, 1.0]))


@settings(max_examples=examples(30), deadline=None)
@given(degrees_and_points(x_max=1.7e308))
@example((3, 1e100))          # h_3 ~ 4e299: one renormalisation of the running scale
@example((10_000, 199.9))     # the last turning point at the largest tested degree
@example((3, 1e300))          # x h_k past the float range: a shift at every step
@example((10_000, 1e100))     # 10^4 shifts of the scale, log|h| = 2.3e6
def test_hermite_polys_and_log_hermite_abs(kx):
    """hermite_polys and log_hermite_abs: |h - h_ref| <= 4 eps (k + 10 + |l|) sqrt(h_k^2 + h_{k-1}^2),
    l = log|h_k(x)|, for k <= 10^4 and every finite x; hermite_polys where |h_k| < 1e308 (inf beyond 1.8e308)."""
    k, x = kx
    note(f"k={k}, x={x!r}")
    h = H.hermite_polys(k, x)[k]
    la, sg = H.log_hermite_abs(k, x)
    with mp.workdps(40):
        ref, amp = _h_mp(k, x), _amplitude(k, x)
        ell = abs(float(la[k])) if np.isfinite(la[k]) else 0.0
        bound = 4 * EPS * (k + 10 + ell) * amp
        got = sg[k] * mp.exp(mp.mpf(float(la[k])))
        assert record("hermite.log_hermite_abs", abs(got - ref) / bound, k=k, x=x) <= 1
        if abs(ref) < 1e308:
            assert record("hermite.hermite_polys", abs(mp.mpf(float(h)) - ref) / bound, k=k, x=x) <= 1
        elif abs(ref) > 1.8e308:
            assert np.isinf(h) and np.sign(h) == mp.sign(ref)


@settings(max_examples=examples(30), deadline=None)
@given(degrees_and_points(x_max=1.7e308))
@example((10_000, 181.776))   # deep renormalisation: the density's log-scale -x^2/4 = -8260 undone 24 times
@example((5, -1e300))         # x * x overflows: |x| is clamped at 1e150
def test_hermite_functions(kx):
    """hermite_functions: |psi - psi_ref| <= 4 eps (k + x^2/4 + 10) sqrt(psi_k^2 + psi_{k-1}^2) + 1e-300, for
    k <= 10^4 and every finite x (psi underflows to 0 beyond |x| ~ 2 sqrt(k) + 40)."""
    k, x = kx
    note(f"k={k}, x={x!r}")
    psi = H.hermite_functions(k, x)[k]
    with mp.workdps(40):
        X = mp.mpf(x)
        w = mp.exp(-X * X / 4) / mp.power(2 * mp.pi, mp.mpf(1) / 4)
        ref, amp = _h_mp(k, x) * w, _amplitude(k, x) * w
        bound = 4 * EPS * (k + x * x / 4 + 10) * amp + mp.mpf(1e-300)
        assert record("hermite.hermite_functions", abs(mp.mpf(float(psi)) - ref) / bound, k=k, x=x) <= 1


def _gauss_node_mp(n, x0):
    """A root of h_n polished by Newton from x0 (h_n' = sqrt(n) h_{n-1}) and its weight 1/(n h_{n-1}^2)."""
    x = mp.mpf(x0)
    for _ in range(4):
        x -= _h_mp(n, x) / (mp.sqrt(n) * _h_mp(n - 1, x))
    return x, 1 / (n * _h_mp(n - 1, x) ** 2)


@settings(max_examples=examples(20), deadline=None)
@given(st.one_of(st.integers(1, 160), st.integers(1, 10_000), st.sampled_from([149, 150, 151, 10_000])), st.data())
def test_gauss_hermite(n, data):
    """gauss_hermite: node error <= 2e-13 max(1, |x|); weight error <= 5e-12 relative where w >= 1e-290 (smaller
    weights underflow: absolute 1e-300); |sum w - 1| <= 4e-15; n <= 10^4 (Golub-Welsch below 150 nodes, scipy's
    asymptotic rule above)."""
    x, w = H.gauss_hermite(n)
    assert abs(math.fsum(w) - 1) <= 4e-15
    idx = {0, n // 2, n - 1} | set(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4)))
    with mp.workdps(40):
        for i in sorted(idx):
            xr, wr = _gauss_node_mp(n, x[i])
            record("hermite.gauss_hermite nodes", abs(x[i] - xr) / (2e-13 * max(1, abs(xr))), n=n, i=i)
            record("hermite.gauss_hermite weights", abs(w[i] - wr) / (5e-12 * wr if wr >= 1e-290 else 1e-300), n=n, i=i)
            assert abs(x[i] - xr) <= 2e-13 * max(1, abs(xr))
            assert abs(w[i] - wr) <= (5e-12 * wr if wr >= 1e-290 else 1e-300)


@st.composite
def rules(draw):
    """(x, w, f, kmax): n <= 40 nodes in [-8, 8], [-53, 53] or [-1e4, 1e4], weights spanning 1e-320 (subnormal) to
    1 with zeros, values spanning 1e-200 to 1e200 of either sign with zeros (so |w f| down to 1e-520), kmax up to
    400; each |w f| cut so that |w f| sqrt(h_k^2 + h_{k-1}^2) <= 1e300 for every k <= kmax (the declared domain)."""
    n = draw(st.integers(1, 40))
    kmax = draw(st.one_of(st.integers(0, 30), st.integers(0, 400)))
    x = np.array(draw(st.lists(st.one_of(st.floats(-8, 8), st.floats(-53, 53), st.floats(-1e4, 1e4)),
                               min_size=n, max_size=n)))
    w = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(-320, 0).map(lambda e: 10.0 ** e)),
                               min_size=n, max_size=n)))
    f = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(-200, 200).map(lambda e: 10.0 ** e)),
                               min_size=n, max_size=n))) * np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]),
                                                                                  min_size=n, max_size=n)))
    top = np.max(H.log_hermite_abs(kmax, x)[0], axis=0) + 0.5 * math.log(2)      # log max_k A_k(x_i), about
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        f = f * np.minimum(1.0, np.exp(math.log(1e300) - 1e-6 - top - np.log(w * np.abs(f))))
    return x, w, f, kmax


@settings(max_examples=examples(25), deadline=None)
@given(rules())
@example((np.array([54.0, 0.0, -3.0]), np.array([1.0, 1e-320, 0.5]), np.array([-1.0, 1e-190, 7.0]), 300))
def test_project(rule):
    """project: |mu_k - sum_i w_i f_i h_k(x_i)| <= 4 eps (k + n + 10) sum_i |w_i f_i| A_k(x_i) + 1e-300,
    A_k = sqrt(h_k^2 + h_{k-1}^2) (the sum's condition, no cancellation assumed), for nodes with |x_i| <= 1e150,
    weights >= 0 and finite values with |w_i f_i| >= 2^-2000 (or 0) and |w_i f_i| A_k(x_i) <= 1e300."""
    x, w, f, kmax = rule
    mu = H.project(x, w, f, kmax)
    big = 4 * EPS * (len(x) + 10)
    with mp.workdps(40):
        for k in sorted({0, 1, kmax // 2, kmax} & set(range(kmax + 1))):
            terms = [mp.mpf(float(wi)) * mp.mpf(float(fi)) * _h_mp(k, xi) for xi, wi, fi in zip(x, w, f)]
            scale = sum(abs(mp.mpf(float(wi)) * mp.mpf(float(fi))) * _amplitude(k, xi) for xi, wi, fi in zip(x, w, f))
            bound = (big + 4 * EPS * k) * scale + mp.mpf(1e-300)
            assert record("hermite.project", abs(mp.mpf(float(mu[k])) - mp.fsum(terms)) / bound, k=k) <= 1


# ---- hermite_coeffs_quad ------------------------------------------------------------------------------------------

_FAMILY = {  # name: (numpy f(x, a, b), mpmath f(x, a, b), kinks(a)) -- a is a kink or shift, b a scale
    "relu": (lambda x, a, b: b * np.maximum(x - a, 0), lambda x, a, b: b * max(x - a, 0), lambda a: (a,)),
    "abs": (lambda x, a, b: b * np.abs(x - a), lambda x, a, b: b * abs(x - a), lambda a: (a,)),
    "step": (lambda x, a, b: b * (x > a), lambda x, a, b: b * (x > a), lambda a: (a,)),
    "tanh": (lambda x, a, b: np.tanh(b * (x - a)), lambda x, a, b: mp.tanh(b * (x - a)), lambda a: ()),
    "exp": (lambda x, a, b: np.exp(b * x), lambda x, a, b: mp.exp(b * x), lambda a: ()),
    "sin": (lambda x, a, b: np.sin(b * x + a), lambda x, a, b: mp.sin(b * x + a), lambda a: ()),
    "poly": (lambda x, a, b: (x - a) ** 3 * b, lambda x, a, b: (x - a) ** 3 * b, lambda a: ()),
}


@settings(max_examples=examples(8), deadline=None)
@given(st.sampled_from(sorted(_FAMILY)), st.floats(-6, 6), st.floats(0.05, 4), st.integers(0, 60))
@example("step", 5.5, 1.0, 40)     # a jump far out: |f| phi ~ 1e-7 there
@example("exp", 0.0, 4.0, 60)      # |f| phi peaks at x = 4 with e^8
def test_hermite_coeffs_quad(name, a, b, kmax):
    """hermite_coeffs_quad: |mu_k - mu_ref| <= max(2 err, 4e-15 ||f||) for f piecewise analytic between the
    declared kinks with no feature narrower than the 0.25 probe grid (here: relu, |.|, a jump, tanh(b x), e^(bx),
    sin, a cubic; kinks in [-6, 6], slopes to 4, kmax to 60); ||f|| = (E f(g)^2)^(1/2); err is the returned
    estimate."""
    fn, fm, kinks = _FAMILY[name]
    mu, err = H.hermite_coeffs_quad(lambda x: fn(x, a, b), kmax, kinks(a))
    ref, norm = coeffs_mp(lambda t: fm(t, mp.mpf(a), mp.mpf(b)), kmax, kinks(a), 18 + 2 * b)
    bound = max(2 * err, 4e-15 * float(norm))
    ratio = max(abs(mu[k] - ref[k]) for k in range(kmax + 1)) / bound
    assert record("hermite.hermite_coeffs_quad", ratio, f=name, a=a, b=b, kmax=kmax) <= 1


# ---- power_series, series_tail_bound ------------------------------------------------------------------------------

@settings(max_examples=examples(30), deadline=None)
@given(st.integers(0, 2048), st.one_of(st.floats(-1, 1), st.sampled_from([-1.0, 1.0, 1 - 2 ** -40, -1 + 2 ** -40])),
       st.booleans(), st.integers(0, 2 ** 32 - 1), st.sampled_from(["mixed", "positive", "decades"]))
def test_power_series(P, rho, deriv, seed, kind):
    """power_series (Horner): |S - S_exact| <= 2 (P + 1) eps sum_p |a_p| |rho|^p (|p a_p| |rho|^(p-1) for deriv),
    against exact rational arithmetic, for any P (to 2048), |rho| <= 1 and coefficients of any sign and scale."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(P + 1)
    if kind == "positive":
        a = np.abs(a)
    elif kind == "decades":
        a = a * 10.0 ** rng.uniform(-150, 150, P + 1)
    got = float(H.power_series(a, rho, deriv=deriv))
    r = Fraction(rho)
    coef = [Fraction(float(c)) for c in a]
    if deriv:
        coef = [p * c for p, c in enumerate(coef)][1:]
    exact, size = Fraction(0), Fraction(0)
    for c in reversed(coef):
        exact = exact * r + c
        size = size * abs(r) + abs(c)
    bound = 2 * (P + 1) * EPS * float(size) + 1e-300
    assert record("hermite.power_series", abs(Fraction(got) - exact) / Fraction(bound), P=P, rho=rho) <= 1


@settings(max_examples=examples(30), deadline=None)
@given(st.one_of(st.floats(0, 1e300), st.just(math.inf)), st.integers(0, 5000),
       st.one_of(st.floats(-1, 1), st.floats(-1e-3, 1e-3)), st.booleans())
@example(math.inf, 1100, 0.5, False)     # 0.5^1101 underflows: the bound is inf, not 0
@example(1e-300, 0, 0.0, True)           # |rho|^0 = 1 at rho = 0
@example(6.139797742049078e80, 1139, 0.5005566483899094, False)   # a subnormal power: exp(n log|rho| + log mass)
@example(1e300, 1800, -0.6, False)       # the power underflows, the bound is 2.8e-100
def test_series_tail_bound(mass, P, rho, deriv):
    """series_tail_bound: |b - T| <= 4 eps (1 + L) T + 2^-1074, T = |rho|^n tail_mass (n = P + 1, or P with deriv),
    L = 0 where |rho|^n is a normal float and n |log|rho|| + |log tail_mass| below (there it is exp of a rounded
    log), against exact rationals, for tail_mass in [0, 1e300]; exact (inf, 0 only at rho = 0) for inf."""
    n = P if deriv else P + 1
    got = float(H.series_tail_bound(mass, P, rho, deriv=deriv))
    if math.isinf(mass):
        assert got == (math.inf if rho != 0 or n == 0 else 0.0)
        return
    exact = abs(Fraction(rho)) ** n * Fraction(mass)
    normal = abs(Fraction(rho)) ** n >= Fraction(2.0 ** -1022)
    L = 0.0 if normal or exact == 0 else n * abs(math.log(abs(rho))) + abs(math.log(mass))
    bound = 4 * EPS * (1 + L) * exact + Fraction(2.0 ** -1074)
    assert record("hermite.series_tail_bound", abs(Fraction(got) - exact) / bound, P=P, rho=rho) <= 1


# ---- former defects, at the inputs that exposed them --------------------------------------------------------------

@pytest.mark.parametrize("k, x", [(4, 1e200), (300, 1e160), (3, 1e300), (10_000, 1.7e308)])
def test_log_hermite_abs_is_finite_for_every_finite_x(k, x):
    """log_hermite_abs: a finite log|h_k(x)| for every finite x, to 4 eps (k + 10 + |l|): the mantissas stay below
    2^996/|x|, so x * p0 cannot overflow (it did past |x| ~ 1.8e158)."""
    la = H.log_hermite_abs(k, x)[0][k]
    with mp.workdps(40):
        ref = mp.log(abs(_h_mp(k, x)))
    assert np.isfinite(la) and abs(la - ref) <= 4 * EPS * (k + 10 + abs(ref))


@pytest.mark.parametrize("x, wf", [(54.0, -1.0), (54.0, -2.50797205e-17), (0.0, -1e158), (0.0, 7.0), (3.0, 1e-310),
                                   (1e150, 0.3)])
def test_project_is_exact_for_one_node(x, wf):
    """mu_0 of a one-node rule is w f h_0 = w f exactly: the kernel's scale starts at w f itself (w f was sent
    through exp(log(w f) + x^2/4) and back: -inf at x = 54 with w f = -1, 8e9 times the bound off with w f = -2.5e-17
    there, -1e158 came back as -1.0000000000000439e158 and 7 as 6.999999999999999)."""
    assert H.project(np.array([x]), np.array([1.0]), np.array([wf]), 0)[0] == wf


def test_series_tail_bound_never_certifies_zero_for_a_positive_tail():
    """A positive tail never gets the bound 0: with tail_mass = inf (a divergent K'(1), as for sign) and |rho|^(P+1)
    below 2^-1075 the bound is inf (it was 0: the power's underflow selected the branch meant for rho == 0), and a
    finite mass gets exp((P+1) log|rho| + log tail_mass) there."""
    assert float(H.series_tail_bound(np.inf, 1100, 0.5)) == np.inf
    assert float(H.series_tail_bound(1e300, 1100, 0.5)) == pytest.approx(float(Fraction(1e300) / 2 ** 1101), rel=1e-12)


def test_hermite_functions_vanish_far_out():
    """hermite_functions is finite for every finite x: past |x| ~ 1.3e154 x * x overflows, so |x| is clamped at
    1e150, where psi is exactly 0."""
    with np.errstate(over="raise", invalid="raise"):
        assert np.all(H.hermite_functions(5, np.array([1e155, -1e300, 1.7e308])) == 0.0)


@pytest.mark.parametrize("k, x", [(9_999, 6.1e11), (10_000, 1e100)])
def test_log_hermite_abs_without_accumulated_scale_error(k, x):
    """log|h| to 4 eps (k + 10 + |l|) after many renormalisations: the shifts are exact powers of two, counted as an
    integer e, and the scale e log 2 is formed once (a float sum of one log(1e150) per renormalisation was 33 and
    53 times the bound off here: l = 2.3e5 at x = 6.1e11, l = 2.3e6 at x = 1e100)."""
    la = H.log_hermite_abs(k, x)[0][k]
    with mp.workdps(40):
        ref = mp.log(abs(_h_mp(k, x)))
    assert abs(la - ref) <= 4 * EPS * (k + 10 + abs(ref))
