"""popdyn._exact: the error-free sum and product, exact against rationals, the same in numpy and in numba, and the
one implementation that popdyn.kernels and the hypercube kernels use; popdyn._dd's double-double sums against the
rational sum."""
import importlib
from fractions import Fraction

import numba
import numpy as np
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from popdyn import _dd, _exact

finite = st.floats(-1e150, 1e150, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(finite, finite)
@example(1.0 + 2.0 ** -52, 1.0 - 2.0 ** -52)      # p rounds, e = -2^-104
@example(1e150, -1e-150)
@example(0.1, 0.1)
def test_two_prod_and_two_sum_are_exact(a, b):
    p, e = _exact.two_prod(a, b)
    assert p == a * b
    if a == 0 or b == 0 or abs(Fraction(a) * Fraction(b)) > Fraction(2.0 ** -960):   # no underflow in e
        assert Fraction(p) + Fraction(e) == Fraction(a) * Fraction(b)
    s, f = _exact.two_sum(a, b)
    assert s == a + b and Fraction(s) + Fraction(f) == Fraction(a) + Fraction(b)


@numba.njit
def _in_numba(a, b):
    p, e = _exact.two_prod_jit(a, b)
    s, f = _exact.two_sum_jit(a, b)
    return p, e, s, f


def test_numpy_and_numba_forms_agree_bit_for_bit():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(500) * 10.0 ** rng.integers(-100, 100, 500)
    b = rng.standard_normal(500) * 10.0 ** rng.integers(-100, 100, 500)
    p, e = _exact.two_prod(a, b)            # arrays, elementwise
    s, f = _exact.two_sum(a, b)
    for i in range(a.size):
        assert _in_numba(a[i], b[i]) == (p[i], e[i], s[i], f[i])


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1e100), st.floats(0, 1e100), st.floats(-1, 1), st.floats(-1e-6, 1e-6))
@example(1.0, 1.0, 1.0, 0.0)                         # repeated field: 0 exactly
@example(1.0 + 2.0 ** -52, 1.0, 1.0, 0.0)            # det = 2^-52, which a b - c^2 gets right only by luck
@example(3.0, 3.0, -1.0, -2.0 ** -50)                # nearly antipodal
def test_det2_is_the_determinant_to_one_rounding(a, b, rho, jitter):
    """det2(a, b, c) = max(a b - c^2, 0) within 2 eps of the exact rational value (the exact products leave one
    rounding of p - q and one of the final sum), also for c within ulps of +-sqrt(a b)."""
    c = float(np.clip(rho + jitter, -1, 1) * np.sqrt(a * b))
    assume(a * b == 0 or 1e-140 < a * b < 1e140)    # the products' exact range (|a|, |b| < 1e150, no underflow)
    exact = max(Fraction(a) * Fraction(b) - Fraction(c) ** 2, Fraction(0))
    got = _exact.det2(a, b, c)
    assert got >= 0 and abs(Fraction(got) - exact) <= 2 * Fraction(2.0 ** -53) * exact + Fraction(2.0 ** -1074)


def test_one_implementation_is_used():
    """popdyn.kernels, the committee integrals, gradient_features and the hypercube's double-double sums take the
    core's functions, not copies."""
    from popdyn import kernels
    integrals = importlib.import_module("popdyn.models.committee.integrals")   # the package exports a function too
    from popdyn.models.gradient_features import framework
    from popdyn.models.resnet import hypercube
    assert kernels._two_prod is _exact.two_prod and kernels.det2 is _exact.det2 and integrals.det2 is _exact.det2
    assert framework._two_prod is _exact.two_prod
    assert hypercube._two_prod is _exact.two_prod_jit and hypercube._two_sum is _exact.two_sum_jit
    assert _exact.two_prod_jit.py_func is _exact.two_prod and _exact.two_sum_jit.py_func is _exact.two_sum


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e100, 1e100, allow_nan=False, allow_infinity=False), min_size=0, max_size=70),
       st.integers(0, 40))
@example([1.0, 1e-16, -1.0], 0)                     # the float sum loses 1e-16 entirely
def test_dd_sum_is_the_exact_sum_to_its_bound(xs, scale):
    """hi + lo against the rational sum: within (log2 n)^2 eps^2 sum|x| (the declared bound, with 4x headroom), hi
    within an ulp of the exact sum; rows are independent and an empty sum is 0."""
    x = np.ldexp(np.array(xs, dtype=float), -scale)
    hi, lo = _dd.dd_sum(np.stack([x, -x]))
    exact = sum(map(Fraction, x), Fraction(0))
    n, eps = max(len(xs), 2), 2.0 ** -53
    bound = 4 * np.log2(n) ** 2 * eps ** 2 * float(np.abs(x).sum())
    for h, l, want in ((hi[0], lo[0], exact), (hi[1], lo[1], -exact)):
        assert abs(Fraction(h) + Fraction(l) - want) <= Fraction(bound) + Fraction(2.0 ** -1074)
        assert abs(Fraction(h) - want) <= Fraction(abs(float(want))) * Fraction(2.0 ** -52) + Fraction(2.0 ** -1074)
