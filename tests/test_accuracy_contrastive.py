"""Declared accuracy of popdyn.models.contrastive.gen_chi2_loss (relative 1e-10) over Hypothesis searches that reach
the corners (weights from 1e-7 to 1e7 of either sign, ratios of 1e14, multiplicities up to 1e4, values from 1e-290 to
1e7), against three mpmath references independent of the contour integral, each checked at two precisions:

* lam > 0: E ln(1 + e^-Q) = sum_{n>=1} (-1)^{n+1} a_n, a_n = E e^{-nQ} / n = prod_j (1 + 2 n lam_j)^{-m_j/2} / n,
  completely monotone in n, so Cohen-Villegas-Zagier summation converges like 5.83^-N;
* m_j = 2 (distinct lam of either sign): Q is a signed mixture of exponentials of means 2 lam_j with the
  partial-fraction weights A_j = prod_{k != j} lam_j / (lam_j - lam_k), and E f of each is a 1-D quadrature;
* two weights of either sign, any m: X_j = R^2 D_j with R^2 ~ chi^2_{m1+m2} independent of D ~ Beta(m1/2, m2/2), so
  E f(Q) = E G(lam_1 D + lam_2 (1 - D)), G(b) = E f(b chi^2_N) (the series above, and G(b) = -bN + G(-b) for b < 0).
"""
import warnings

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from popdyn.models import contrastive as c
from popdyn.models.contrastive import quadform

from ._accuracy import examples, record

DECLARED = 1e-10  # gen_chi2_loss's declared relative accuracy
TINY = 1e-290     # values below this are not compared (float64 underflows near 2.2e-308; the docstring's floor)


def _cvz(a, dps):
    """sum_{n>=1} (-1)^{n+1} a(n) for completely monotone a (Cohen-Villegas-Zagier; error <= 2 a(1) / 5.83^N)."""
    N = int((dps + 5) / mp.log10(3 + mp.sqrt(8))) + 2
    d = (3 + mp.sqrt(8)) ** N
    d = (d + 1 / d) / 2
    b, cc, s = mp.mpf(-1), -d, mp.mpf(0)
    for k in range(N):
        cc = b - cc
        s += cc * a(k + 1)
        b = (k + N) * (k - N) * b / ((k + mp.mpf(1) / 2) * (k + 1))
    return s / d


def _series(lam, dof, dps):
    """E ln(1 + e^-Q) for lam > 0 by the alternating series (module docstring)."""
    with mp.workdps(dps + 10):
        L, M = [mp.mpf(float(x)) for x in lam], [mp.mpf(float(m)) for m in dof]
        return _cvz(lambda n: mp.exp(-mp.fsum([m / 2 * mp.log1p(2 * n * x) for x, m in zip(L, M)])) / n, dps)


def _exponentials(lam, dps):
    """E ln(1 + e^-Q), Q = sum_j lam_j chi^2_2 (distinct lam_j of either sign), by partial fractions."""
    f = lambda x: mp.log1p(mp.exp(-x)) if x > 0 else -x + mp.log1p(mp.exp(x))  # noqa: E731
    with mp.workdps(dps):
        mu = [2 * mp.mpf(float(x)) for x in lam]
        out = 0
        for j, m in enumerate(mu):
            A = mp.fprod([m / (m - k) for i, k in enumerate(mu) if i != j])
            ends = [0, abs(m), mp.inf] if m > 0 else [-mp.inf, -abs(m), 0]
            out += A * mp.quad(lambda x: f(x) * mp.exp(-abs(x / m)) / abs(m), ends)
        return out


def _G(b, N, dps):
    """E ln(1 + e^{-b chi^2_N})."""
    if b == 0:
        return mp.log(2)
    if b < 0:
        return -b * N + _G(-b, N, dps)
    return _cvz(lambda n: mp.exp(-N / 2 * mp.log1p(2 * n * b)) / n, dps)


def _beta_mixture(lam, dof, dps, panels=12):
    """E ln(1 + e^-Q) for two weights of either sign by the Beta mixture (module docstring), in D = sin^2 theta,
    which makes the Beta density smooth: 2 sin^{m1-1} cos^{m2-1} / B(m1/2, m2/2) on [0, pi/2]."""
    with mp.workdps(dps):
        l1, l2 = mp.mpf(float(lam[0])), mp.mpf(float(lam[1]))
        m1, m2 = mp.mpf(float(dof[0])), mp.mpf(float(dof[1]))
        B = mp.beta(m1 / 2, m2 / 2)

        def g(th):
            s, co = mp.sin(th), mp.cos(th)
            return _G(l1 * s * s + l2 * co * co, m1 + m2, dps) * 2 * s ** (m1 - 1) * co ** (m2 - 1) / B

        pts = [mp.pi / 2 * k / panels for k in range(panels + 1)]
        if l1 * l2 < 0:
            pts = sorted(pts + [mp.asin(mp.sqrt(l2 / (l2 - l1)))])
        return mp.quad(g, pts)


def _checked(ref, *args, rel=1e-20, dps=(30, 40)):
    """The reference at two precisions, which must agree (a reference that has not converged is a failure)."""
    lo, hi = ref(*args, dps[0]), ref(*args, dps[1])
    assert abs(lo - hi) <= rel * abs(hi), (args, lo, hi)
    return hi


def _measure(key, lam, dof, ref):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning: the estimate stays within the declared accuracy
        got = c.gen_chi2_loss(lam, dof)
    return record(key, abs(got - ref) / (DECLARED * ref), lam=list(lam), dof=list(dof), got=got,
                  ref=mp.nstr(ref, 20))


_mag = st.floats(-7, 7).map(lambda e: 10.0 ** e)
_dofs = st.sampled_from([1, 2, 3, 5, 20, 101, 1000, 10_000])


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.tuples(_mag, _dofs), min_size=1, max_size=5))
@example([(1e7, 10_000)])             # deep underflow: 0 (not compared)
@example([(1e6, 50), (1e-7, 1)])      # 1e-158, scales 1e13 apart
@example([(1.4807e-7, 10_000), (4.68e-4, 3)])  # tiny weights, huge multiplicity: log1p needed (5e-13 once)
@example([(9917.9, 20)])
def test_positive_weights_against_the_series(terms):
    lam, dof = [t[0] for t in terms], [t[1] for t in terms]
    ref = _checked(_series, lam, dof)
    assume(ref > TINY)
    assert _measure("contrastive.gen_chi2_loss (lam > 0)", lam, dof, ref) <= 1


@pytest.mark.slow
@settings(max_examples=examples(20), deadline=None)
@given(st.lists(st.tuples(_mag, st.booleans()), min_size=1, max_size=5, unique_by=lambda t: t[0]))
@example([(1e5, True), (3e-4, False), (2.0, False), (7.0, True)])
@example([(5e3, False), (2e-3, True), (1e-2, False), (40.0, True)])
@example([(0.5, True)])               # the strip's left end at the pole -1
def test_signed_exponential_mixtures_against_partial_fractions(terms):
    lam = [-x if neg else x for x, neg in terms]
    gaps = np.diff(np.sort(lam))
    assume(gaps.size == 0 or np.min(gaps / np.max(np.abs(lam))) > 1e-6)  # partial fractions need distinct lam
    ref = _checked(lambda L, dps: _exponentials(L, dps + 20), lam)  # + 20 digits: the A_j alternate
    assert _measure("contrastive.gen_chi2_loss (m = 2, mixed signs)", lam, [2] * len(lam), ref) <= 1


@pytest.mark.parametrize("lam, dof", [
    ((1.0, -0.5), (1, 1)),               # the smallest case: dof 1, one negative weight
    ((0.0124, -0.0244), (3, 20)),
    ((0.289, -22.6), (101, 3)),          # value 42: E(-Q)_+ dominates
    ((35.5, -7.2e-4), (3, 1)),           # 1e-3: the negative weight barely matters
    ((0.45, 0.012), (5, 1000)),          # both positive: the Beta mixture against the series too
])
@pytest.mark.slow
def test_two_weights_any_signs_against_the_beta_mixture(lam, dof):
    ref = _checked(_beta_mixture, lam, dof, rel=1e-18, dps=(25, 30))
    assert _measure("contrastive.gen_chi2_loss (two weights)", lam, dof, ref) <= 1
    if min(lam) > 0:
        assert abs(ref - _series(lam, dof, 30)) <= 1e-15 * ref


def test_corners_the_warning_and_underflow():
    """Extreme scales keep the declared accuracy (exact forms: Q = 0; lam -> -inf: E ell = -E Q + E ell(-Q), the
    second term below 1e-40 of the first); the warning fires when the rule is cut short; underflow gives 0."""
    assert c.gen_chi2_loss([1e-300, 1e-200]) == pytest.approx(np.log(2), rel=1e-15)
    for lam in ([-1e100], [-1e100, 1e-100], [-1e6, -1e6, 2.0]):
        big = -sum(lam)  # E(-Q); the remainder E ell(-Q) is below 1e-5 here, under 1e-10 of E(-Q)
        assert abs(c.gen_chi2_loss(lam) - big) <= DECLARED * big
    assert c.gen_chi2_loss([1e100]) == pytest.approx(float(_series([1e100], [1], 30)), rel=DECLARED)
    assert c.gen_chi2_loss([0.5], [1e10]) == 0.0  # e^{-5e9}: below the floats, no warning
    with pytest.MonkeyPatch.context() as mpatch:
        mpatch.setattr(quadform, "_HALVINGS", 0)
        with pytest.warns(RuntimeWarning, match="reached relative accuracy"):
            c.gen_chi2_loss([0.3, -2.0], [3, 1])
