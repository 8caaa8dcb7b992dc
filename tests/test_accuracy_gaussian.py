"""Declared accuracy of popdyn.gaussian over Hypothesis searches that reach the corners of each domain, against
mpmath at 40 digits and exact rational arithmetic (``fractions``), with the corners where the code once failed
(the far tail of normal_pdf, arccos_kernel near rho = -1) pinned as plain tests at the end."""
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, note, settings
from hypothesis import strategies as st

from popdyn import gaussian as Gs

from ._accuracy import EPS, examples, record


@settings(max_examples=examples(40), deadline=None)
@given(st.one_of(st.floats(-40, 40), st.floats(-2e5, 2e5), st.floats(36, 39), st.floats(0, 1e-300),
                st.floats(allow_nan=False)))
@example(26.123456789)
@example(38.5)
@example(262229.536343)
def test_normal_pdf(t):
    """normal_pdf: relative error <= 4 eps where phi(t) is a normal float (|t| <= 37.5), absolute <= 2^-1074 (one
    subnormal ulp) where it is subnormal, exactly 0 where it underflows (|t| > 38.6); for every float t."""
    got = float(Gs.normal_pdf(t))
    with mp.workdps(40):
        ref = mp.npdf(mp.mpf(t))
        bound = 4 * EPS * ref if ref >= 2.2250738585072014e-308 else mp.mpf(2.0 ** -1074)
        assert record("gaussian.normal_pdf", abs(got - ref) / bound, t=t) <= 1


def _k_mp(rho, order):
    """k_n(rho) = J_n(theta)/(2 pi) at 80 digits from theta = acos(rho) (J_2 cancels to (1 + rho)^(5/2) near -1: 32 of
    the digits at 1 + rho = 1e-16)."""
    with mp.workdps(80):
        rho = mp.mpf(rho)
        th = mp.acos(rho)
        s = mp.sqrt((1 - rho) * (1 + rho))
        j = [mp.pi - th, s + (mp.pi - th) * rho, 3 * s * rho + (mp.pi - th) * (1 + 2 * rho * rho)][order]
        return j / (2 * mp.pi)


_rhos = st.one_of(st.floats(-1, 1), st.floats(-16.5, 0.3).map(lambda u: -1 + 10.0 ** u),
                  st.floats(-16.5, 0.3).map(lambda u: 1 - 10.0 ** u), st.sampled_from([-1.0, 1.0, 0.0]))


@settings(max_examples=examples(40), deadline=None)
@given(_rhos.filter(lambda r: -1 <= r <= 1), st.sampled_from([0, 1, 2]))
@example(1 - 2 ** -53, 2)
@example(-1 + 2 ** -52, 1)
@example(-1 + 2 ** -52, 2)
@example(-0.499288, 2)
@example(-1e-300, 2)
def test_arccos_kernel(rho, order):
    """arccos_kernel: relative error <= 16 eps for every rho in [-1, 1] (exactly 0 at -1), towards -1 as well,
    where k_n vanishes like (1 + rho)^(n + 1/2)."""
    got = float(Gs.arccos_kernel(rho, order))
    ref = _k_mp(rho, order)
    if ref == 0:
        assert got == 0
        return
    with mp.workdps(40):
        assert record("gaussian.arccos_kernel", abs(got - ref) / (16 * EPS * ref), rho=rho, order=order) <= 1


@settings(max_examples=examples(15), deadline=None)
@given(st.integers(2, 3000), st.data(), st.integers(0, 2 ** 16), st.floats(-100, 100), st.floats(-3, 12),
       st.sampled_from(["normal", "constant", "two-point"]))
def test_mc_mean(n, data, seed, log_scale, log_offset, kind):
    """mc_mean's arithmetic (chunked two-pass means merged by Chan's formula) on the very samples drawn, against exact
    rational sums: |mean - mean_exact| <= eps (|mean| + sd)(n/chunk + 10) and |se/se_exact - 1| <=
    eps (n/chunk + 10 + log2 n)(1 + |mean|/sd) (se exactly 0 ... up to that absolute bound for constant samples), for
    samples with |x| <= 1e150 (squares in range), offsets to 1e12 standard deviations, any chunk."""
    chunk = data.draw(st.integers(1, n + 5))
    scale, off = 10.0 ** log_scale, 10.0 ** (log_scale + log_offset) * data.draw(st.sampled_from([-1.0, 1.0]))

    def sample(rng, m):
        if kind == "constant":
            return np.full(m, off) + 0 * rng.standard_normal(m)
        if kind == "two-point":
            return off + scale * (rng.random(m) < 0.5)
        return off + scale * rng.standard_normal(m)
    mean, se = Gs.mc_mean(sample, n, seed, chunk)
    rng, xs, c = np.random.default_rng(seed), [], 0
    while c < n:
        xs.append(sample(rng, min(chunk, n - c)))
        c += xs[-1].size
    X = [Fraction(float(v)) for v in np.concatenate(xs)]
    mu = sum(X) / n
    var = sum((v - mu) ** 2 for v in X) / (n - 1)
    sd, nc = math.sqrt(float(var)), math.ceil(n / chunk)
    note(f"n={n}, chunk={chunk}, mean={float(mu)!r}, sd={sd!r}")
    assert record("gaussian.mc_mean (mean)", float(abs(Fraction(mean) - mu)) / (EPS * (abs(float(mu)) + sd) * (nc + 10)),
                  n=n, chunk=chunk) <= 1
    tol = EPS * (nc + 10 + math.log2(n))
    if sd > 0:
        ratio = abs(se / math.sqrt(float(var) / n) - 1) / (tol * (1 + abs(float(mu)) / sd))
    else:
        ratio = se / (tol * abs(float(mu)) + 1e-300)
    assert record("gaussian.mc_mean (se)", ratio, n=n, chunk=chunk) <= 1


# ---- corners where the code once failed ----------------------------------------------------------------------------

@pytest.mark.parametrize("t", [262229.536343, 1e150, -1.4e300, np.inf, -np.inf])
def test_normal_pdf_far_out_is_zero(t):
    """phi(t) = 0 in float64 beyond |t| = 38.6. Before |t| was clamped to 39, the Veltkamp split's low part could be
    negative, so exp(-(t_h t_l + t_l^2/2)) overflowed to inf while exp(-t_h^2/2) was 0, and 0 * inf = nan (553239
    of the 2e6 points of a grid on [38, 1e6]); past 1.34e300 the split itself overflowed."""
    assert float(Gs.normal_pdf(t)) == 0.0


def test_normal_pdf_keeps_nan():
    assert np.isnan(Gs.normal_pdf(np.nan))


@pytest.mark.parametrize("rho, order", [(-1 + 1e-12, 1), (-1 + 1e-6, 2), (-1 + 1e-14, 0), (-1 + 1e-8, 1)])
def test_arccos_kernel_near_minus_one(rho, order):
    """k_n(rho) >= 0 (an expectation of a non-negative product, or a probability) with relative error 16 eps near
    rho = -1. When pi - theta was formed as pi - 2 asin(sqrt((1 - rho)/2)) it carried the error eps / sqrt(1 + rho)
    of asin near 1 and J_1, J_2 then cancelled to (1 + rho)^(3/2), (1 + rho)^(5/2): k_1(-1 + 1e-12) was -1.2e-11 for
    1.5e-19, k_2(-1 + 1e-6) -3.4e-14 for 2.4e-16; now delta = pi - theta comes from 2 asin(sqrt((1 + rho)/2)) and
    J_n from its Taylor series in delta."""
    got = float(Gs.arccos_kernel(rho, order))
    ref = _k_mp(rho, order)
    assert got >= 0 and abs(got - ref) <= 16 * EPS * ref
