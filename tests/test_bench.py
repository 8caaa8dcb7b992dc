"""The baselines of validation/bench.py compute the same numbers as popdyn (no timings here).

A benchmark ratio means something only when both sides compute the same thing: the scipy.quad loop
must give popdyn's Hermite coefficients, and the plain numpy h must give ``lora.h``. Each baseline is
also held against golden values of an independent reference script, so a shared error in
popdyn and the baseline cannot pass.
"""
import math

import numpy as np
import pytest

from popdyn import activations
from popdyn.models import lora
from popdyn.validation import bench

# independent reference script: k = 4, xi = 1.5, normalisation N1, m = (-1, -0.5, 0, 0.5, 1).
GOLDEN_ARGS = dict(lam=np.array([1.0, -0.5, 0.8, 1.2]), c=np.array([1.0, 1, -1, 1]) / 2,
                   c_hat=np.array([1.0, -1, -1, -1]) / 2, xi=1.5)
GOLDEN_M = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
G_GENERAL = np.array([[1, .3, -.2, .1], [.3, 1, .25, -.4], [-.2, .25, 1, .05], [.1, -.4, .05, 1]])
GOLDEN_H = {
    ("relu", "I"): [-0.455091673337, -0.237916287539, -0.084979181950, 0.067669097413, 0.282465652867],
    ("relu", "G"): [-0.465602352928, -0.249109226948, -0.097045104287, 0.054229394055, 0.266586144135],
    ("tanh", "I"): [-0.233836830963, -0.170223289762, -0.119982175863, -0.071320277766, -0.012735528241],
    ("tanh", "G"): [-0.230668698535, -0.167536811984, -0.117418722605, -0.068558642156, -0.009357604294],
    ("he3", "G"): [-3.367422720, -1.617713856, 0.069009408, 1.692747072, 3.253499136],
}
# 5e-9: the golden values carry 12 decimals (he3: 9, exact to its digits); ReLU's arccos near rho = 1
# turns 1e-16 input rounding into ~2e-9 in K' (docs/lora.md), times sum|A_ij| 2 xi^2/r^2 < 2.
GOLDEN_ATOL = 5e-9


def _golden_problem(act, gram):
    G = np.eye(4) if gram == "I" else G_GENERAL
    return lora.Problem(G, activation=act, **GOLDEN_ARGS)


def test_quad_baseline_matches_spec_tanh_coefficients():
    mu = bench.hermite_quad(math.tanh, 7)
    ref = {1: 0.6057055096021, 3: -0.1484371907873, 5: 0.0625475237527, 7: -0.0314454192877}  # reference, 13 dp
    for p, v in ref.items():
        assert abs(mu[p] - v) < 1e-12, p  # 1e-12: reference printed to 13 decimals, quad epsabs 1e-14
    assert np.all(mu[::2] == 0.0)  # tanh odd and the interval symmetric: the even nodes cancel exactly


def test_quad_baseline_parseval_tanh():
    mu = bench.hermite_quad(math.tanh, 200)
    p = np.arange(201)
    # reference: E tanh^2 = 0.39429449039784, E tanh'^2 = 0.46440290244827 (14 digits); the tail
    # p > 200 has p mu_p^2 < 1e-16 (9.7e-16 at p = 161, decaying like e^{-3.1 sqrt p}).
    assert abs(np.sum(mu**2) - 0.39429449039784) < 1e-13
    assert abs(np.sum(p * mu**2) - 0.46440290244827) < 1e-13


def test_quad_baseline_matches_popdyn_hermite_coefficients():
    P = 200
    mu_pop = np.asarray(bench._fresh_tanh().hermite_coeffs(P))[:P + 1]
    mu_quad = bench.hermite_quad(math.tanh, P)
    np.testing.assert_allclose(mu_pop, mu_quad, rtol=0, atol=1e-12)  # 1e-12: the accuracy the bench asks of both
    np.testing.assert_allclose(mu_pop, activations.get("tanh").hermite_coeffs(P)[:P + 1], rtol=0, atol=1e-13)


@pytest.mark.parametrize("act,gram", sorted(GOLDEN_H))
def test_numpy_h_matches_spec_golden_values(act, gram):
    h = bench.h_numpy(_golden_problem(act, gram), GOLDEN_M)
    np.testing.assert_allclose(h, GOLDEN_H[act, gram], rtol=0, atol=GOLDEN_ATOL)


@pytest.mark.parametrize("act", ["relu", "tanh"])
def test_numpy_h_matches_popdyn_h_general_gram(act):
    problem = lora.Problem.random_features(k=16, xi=2.0, activation=act, seed=3)
    m = np.linspace(-1.0, 1.0, 301)
    h_np = bench.h_numpy(problem, m, chunk=64)  # chunk < len(m): the chunk seams are exercised
    h_pop = lora.h(problem, m)
    scale = float(np.max(np.abs(h_pop)))
    # 1e-9 relative: both evaluate the kernel form in float64; ReLU's arccos near rho = +-1 loses
    # ~1e-8 absolute in K'; much smaller than any paper-vs-corrected gap (factor 2, Remark 15).
    np.testing.assert_allclose(h_np, h_pop, rtol=0, atol=1e-8 * scale)
    assert scale > 0.1  # the comparison is not vacuous: h is O(1) here


def test_cold_times_use_a_fresh_problem_and_warm_times_reuse_one():
    # issue 7 item 5: the headline figure is what a user gets on a new problem (caches cold, JIT warm)
    log = []

    def fn(p):
        log.append(p.get("cached", False))
        p["cached"] = True
        return len(log)

    bench._cold_warm(dict, fn, 3)
    assert log == [False] + [False] * 3 + [False] + [True] * 3  # JIT warm-up, 3 cold, warm-up + 3 warm


def test_multitask_numpy_baseline_computes_popdyns_moments():
    from popdyn.models import multitask as mt
    from popdyn.validation.claims.multitask import quad_moments_numpy
    rng = np.random.default_rng(0)
    w_par, s = rng.standard_normal((5, 3)), np.exp(rng.uniform(-2, 2, 5))
    q, p = quad_moments_numpy(w_par, s)
    q_ref, p_ref = mt.sign_moments(w_par, s, "arcsin")        # independent: Sheppard's closed forms
    np.testing.assert_allclose(q, q_ref, rtol=0, atol=1e-12)  # the quadrature's accuracy (docs/multitask.md: 2e-13)
    np.testing.assert_allclose(p, p_ref, rtol=0, atol=1e-12)


def test_saad_solla_baseline_solves_the_same_ode():
    """The committee benchmark's plain scipy baseline integrates popdyn's erf ODE: equal Q, R to 1e-8 at t <= 5."""
    from popdyn.models import committee as cm
    p = cm.Problem.saad_solla(K=2, M=2)
    Q0, R0 = cm.initial_overlaps(p, 200, seed=1)
    t = np.linspace(0.0, 5.0, 11)
    plain, pr = bench._saad_solla_plain(Q0, R0, 0.5, t), cm.ode(p, Q0, R0, t=t, lr=0.5)
    np.testing.assert_allclose(plain.y[:4].T.reshape(-1, 2, 2), pr["Q"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(plain.y[4:].T.reshape(-1, 2, 2), pr["R"], rtol=0, atol=1e-8)


def test_kprime_floor_is_k2_arcsin_sqrt_per_overlap():
    # the limit row of h_kernel: exactly k^2 arcsin(sqrt(.)) per overlap, as numpy computes them
    gaps, m = np.random.default_rng(2).uniform(0, 0.5, 49), np.linspace(-1, 1, 7)
    ref = np.arcsin(np.sqrt(gaps[None, :] * (1 - 1e-3 * np.abs(m))[:, None])).sum(axis=1)
    np.testing.assert_allclose(bench.kprime_floor(gaps, m), ref, rtol=1e-13)


def test_startup_measures_a_fresh_process_and_the_stored_quick_times(tmp_path):
    """The start-up table: a fresh interpreter with an empty numba cache times import and the first and second
    predict of a problem class's example (the first includes the compile, so it is not faster than the second by
    more than rounding); the quick validation time comes from the stored records (the --jobs 2 schedule lies between
    half the serial total and the serial total, and is at least the slowest claim)."""
    from popdyn.validation import bench
    r = bench._fresh_process("multitask", tmp_path)
    assert 0 < r["import"] < 30 and 0 < r["second"] and r["first"] >= 0.5 * r["second"]
    q = bench._quick_from_records()
    assert q["claims"] >= 90 and q["slowest_s"] <= q["jobs2_s"] <= q["serial_s"]
    assert q["jobs2_s"] >= q["serial_s"] / 2 - 1e-9
    st = {"import_s": r["import"], "first_call": {"multitask": {"first_s": r["first"], "second_s": r["second"],
                                                                 "import_s": r["import"]}}, "validate_quick": q}
    table = bench._startup_table(st)
    assert table.count("\n") == 5 and "first predict of multitask.example()" in table and "(met)" in table


def test_kernels_exact_error_bench_agrees_with_brute_force():
    """The kernels row: the exact test error equals the predictor's error summed over all 2^d points (d = 8)."""
    from popdyn.validation import bench
    row = bench._bench_kernels({"cube": (8,)})
    assert row["max_abs_diff"] < 1e-12 and row["fast_s"] > 0 and row["slow_s"] > 0
