"""Declared accuracy of popdyn.polar: the radial Gauss rule of a 2-D standard Gaussian against the exact moments
E r^j = 2^(j/2) Gamma(1 + j/2) at 40 digits, and its invariants."""
import mpmath as mp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from popdyn._validate import InvalidParameterError
from popdyn.polar import radial_rule

from ._accuracy import record

DECLARED = 5e-11        # relative, moments j <= min(2n - 1, 40) (docstring): measured <= 1e-11


@pytest.mark.parametrize("n", [1, 2, 8, 28, 40, 72, 162, 200])
def test_radial_rule_integrates_the_moments_exactly(n):
    """Exact for r^j up to degree min(2n - 1, 40) (a Gauss rule of n nodes; the weight is truncated at r = 14,
    where the mass beyond is below 1e-42), within 5e-11 relative; the former unnormalised Stieltjes recurrence
    overflowed to NaN from n ~ 240 on."""
    x, w = radial_rule(n)
    with mp.workdps(40):
        for j in range(min(2 * n - 1, 40) + 1):
            exact = mp.mpf(2) ** (mp.mpf(j) / 2) * mp.gamma(1 + mp.mpf(j) / 2)
            got = mp.fsum(mp.mpf(float(wi)) * mp.mpf(float(xi)) ** j for xi, wi in zip(x, w))
            assert record("polar.radial_rule", abs(got / exact - 1) / DECLARED, n=n, j=j) <= 1


@given(st.integers(1, 200))
def test_radial_rule_is_a_positive_rule_of_unit_mass(n):
    x, w = radial_rule(n)
    assert x.shape == w.shape == (n,)
    assert np.all(np.isfinite(x)) and np.all(np.diff(x) > 0) and 0 < x[0] and x[-1] <= 14
    assert np.all(w >= 0) and abs(w.sum() - 1) <= 1e-14


@pytest.mark.parametrize("n", [0, 201, 2.0, True])
def test_radial_rule_rejects_bad_sizes(n):
    with pytest.raises(InvalidParameterError, match="'n'"):
        radial_rule(n)
