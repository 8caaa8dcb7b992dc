"""ResNet targets and theory calculators ([AllenZhu19, Sections 5-7, App. D.4, App. E]; docs/resnet.md).

Oracles: enumeration of all 2^d inputs and a Walsh-Hadamard butterfly written here (independent of the package),
the polarization sum against the monomial, direct recomputation of the regret inequality (D.4), the numbers
printed by independent reference scripts.
"""
import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

from popdyn import InvalidParameterError, RegimeWarning
from popdyn.models.resnet.targets import CompositionTarget, fig2_target, polarization_G, thm2_target
from popdyn.models.resnet.theory import (corollary71, coupling_bounds, regret_bound, theorem1_schedule, thm2_alpha_min,
                                         thm2_lower_bound, thm2_N_range)


def _cube(d):
    """All of {±1}^d, row idx has x_i = 1 - 2 bit_i(idx)."""
    idx = np.arange(2 ** d)
    return 1.0 - 2.0 * ((idx[:, None] >> np.arange(d)) & 1)


def _fwht(values):
    """Walsh coefficients f_hat[mask] = 2^-d sum_x f(x) chi_mask(x) by the butterfly (columns independent)."""
    a = np.array(values, dtype=float)
    h = 1
    while h < a.shape[0]:
        a = a.reshape(-1, 2, h, *a.shape[1:])
        a = np.concatenate([a[:, 0] + a[:, 1], a[:, 0] - a[:, 1]], axis=1).reshape(-1, *a.shape[3:])
        h *= 2
    return a / a.shape[0]


def _dense(walsh, d):
    out = np.zeros((2 ** d, len(walsh)))
    for r, w in enumerate(walsh):
        for S, c in w.items():
            out[sum(1 << i for i in S), r] += c
    return out


def _check_walsh(target):
    X = _cube(target.d)
    spec = _fwht(target(X))
    assert np.max(np.abs(spec - _dense(target.walsh(), target.d))) < 1e-12  # float64 sums of <= 2^12 terms
    return X


TARGETS = [thm2_target(8, 4, 0.3, S=[5, 0, 7, 2]), thm2_target(8, 4, 0.3, S=[5, 0, 7, 2], normalized=True),
           thm2_target(9, 3, 0.7, rng=3, normalized=True), thm2_target(6, 1, 0.5, S=[2], normalized=True),
           fig2_target(10, 4, 0.3, 1.0, "cyclic", 2), fig2_target(12, 6, 0.4, 0.5, "cyclic", 3),
           fig2_target(12, 6, 0.3, 1.0, "paper_literal", 3), fig2_target(8, 4, 0.3, 0.7, "cyclic", 4)]


# ------------------------------------------------------------------ Walsh expansions vs FWHT --------------------


@pytest.mark.parametrize("target", TARGETS, ids=range(len(TARGETS)))
def test_walsh_expansion_equals_fwht_of_enumeration(target):
    _check_walsh(target)


@given(st.integers(2, 5), st.floats(0.0, 2.0), st.floats(-2.0, 2.0), st.sampled_from(["cyclic", "paper_literal"]),
       st.integers(1, 3))
def test_fig2_walsh_property(k, alpha, beta, G, q):
    q = min(q, k) if G == "cyclic" else [s for s in range(1, k + 1) if k % s == 0][min(q, 2) - 1]
    _check_walsh(fig2_target(2 * k, k, alpha, beta, G, q))


def test_fig2_default_matches_paper():
    t = fig2_target()
    assert (t.d, t.k, t.alpha, t.beta) == (30, 8, 0.3, 1.0)
    assert t.F_sets == tuple((2 * r, 2 * r + 1) for r in range(8))            # F = (x1x2, ..., x15x16), Section 6
    assert t.GF_sets[0] == tuple(range(8)) and t.GF_sets[7] == (0, 1, 2, 3, 4, 5, 14, 15)
    assert len(set(t.GF_sets)) == 8 and all(len(S) == 8 for S in t.GF_sets)  # distinct degree-8 parities
    assert t.error_G_not_learned == pytest.approx(0.72, abs=1e-15)          # k alpha^2 = 0.72, Section 6
    lit = fig2_target(G="paper_literal")
    assert lit.GF_sets[:2] == (tuple(range(8)), tuple(range(8, 16))) and lit.GF_sets[2:] == (None,) * 6
    assert lit.error_G_not_learned == pytest.approx(0.18, abs=1e-15)        # the printed G: 2 alpha^2
    X = np.random.default_rng(0).choice([-1.0, 1.0], (500, 30))              # d = 30: evaluate the expansion
    chi = {S: np.prod(X[:, list(S)], axis=1) for w in t.walsh() for S in w}
    H = np.stack([sum(c * chi[S] for S, c in w.items()) for w in t.walsh()], axis=1)
    np.testing.assert_allclose(t(X), H, atol=1e-14)


# ------------------------------------------------------------------ target algebra ------------------


@pytest.mark.parametrize("target", TARGETS, ids=range(len(TARGETS)))
def test_plateaus_by_enumeration(target):
    X = _cube(target.d)
    H, F = target(X), target.F(X)
    assert np.mean(np.sum((H - target.beta * F) ** 2, axis=1)) == pytest.approx(target.error_G_not_learned,
                                                                                rel=1e-12, abs=1e-15)
    assert np.mean(np.sum(H ** 2, axis=1)) == pytest.approx(target.error_zero_predictor, rel=1e-12)


@given(st.integers(2, 5), st.floats(0.01, 1.0), st.floats(0.1, 2.0))
def test_item13_k_alpha2_and_k_beta2_alpha2(k, alpha, beta):
    t = fig2_target(2 * k, k, alpha, beta, "cyclic", min(2, k))
    X = _cube(2 * k)
    H = t(X)
    assert np.mean(np.sum((H - beta * t.F(X)) ** 2, 1)) == pytest.approx(k * alpha ** 2, rel=1e-12)
    assert np.mean(np.sum(H ** 2, 1)) == pytest.approx(k * (alpha ** 2 + beta ** 2), rel=1e-12)


def test_thm2_plateaus_and_normalization():
    for k in (2, 3, 4):
        X = _cube(7)
        t, tn = thm2_target(7, k, 0.3, rng=k), thm2_target(7, k, 0.3, rng=k, normalized=True)
        assert t.F_sets == tn.F_sets and t.error_G_not_learned == pytest.approx(k * 0.09, rel=1e-14)
        assert tn.error_G_not_learned == pytest.approx(0.09, rel=1e-12)             # 1/sqrt(k) overall factor
        np.testing.assert_allclose(tn(X), t(X) / math.sqrt(k), atol=1e-12)           # Cor. 7.1 = Thm 2 / sqrt(k)
        np.testing.assert_allclose(np.sum(tn.F(X) ** 2, 1), 1.0, rtol=1e-14)         # ||F(x)|| = 1 (App. E.4)
        assert thm2_lower_bound(0.3) < t.error_G_not_learned


def test_thm2_S_order_and_rng():
    t = thm2_target(10, 3, 0.2, S=[7, 2, 4])
    assert [next(iter(w)) for w in t.walsh()] == [(7,), (2,), (4,)]   # output i reads S[i], in the order given
    assert all(w[(2, 4, 7)] == 0.2 for w in t.walsh())
    a, b = thm2_target(30, 4, 0.3, rng=11), thm2_target(30, 4, 0.3, rng=11)
    assert a.F_sets == b.F_sets and len(set(a.F_sets)) == 4
    draws = {thm2_target(5, 1, 0.1, rng=s).F_sets[0][0] for s in range(60)}
    assert draws == set(range(5))                                      # uniform over coordinates: all hit


def test_coordinate_sign_flip_flips_coefficients():
    t = thm2_target(6, 3, 0.4, S=[1, 3, 4])
    X = _cube(6)
    flipped = X.copy()
    flipped[:, 3] *= -1
    spec = _fwht(t(flipped))
    want = [{S: (-c if 3 in S else c) for S, c in w.items()} for w in t.walsh()]
    assert np.max(np.abs(spec - _dense(want, 6))) < 1e-12


# ------------------------------------------------------------------ polarization ---------------------


@given(st.integers(1, 8), st.lists(st.floats(-3.0, 3.0), min_size=8, max_size=8))
def test_polarization_identity(k, zs):
    a_star, V = polarization_G(k)
    z = np.array(zs[:k])
    terms = a_star * (V @ z) ** k
    exact = k ** (k / 2) / math.sqrt(k) * np.prod(z)
    # the sum cancels down from sum|terms|: float64 error <= 2^k eps sum|terms|; 1e-12 is above that for k <= 8
    assert abs(terms.sum() - exact) <= 1e-12 * max(np.abs(terms).sum(), 1.0)


def test_polarization_coefficients_match_spec_v10():
    got = [float(np.max(np.abs(polarization_G(k)[0]))) for k in (2, 3, 4, 6)]
    np.testing.assert_allclose(got, [0.354, 0.325, 0.333, 0.413], atol=6e-4)   # reference script (3 digits)
    assert corollary71(20, 10, 0.5)["a_star_max"] < 1 < corollary71(20, 11, 0.5)["a_star_max"]  # |a*|<=1 fails at 11
    for k in range(1, 9):
        a, V = polarization_G(k)
        assert a.shape == (2 ** k,) and np.all(np.abs(a) <= 1) and np.allclose(np.sum(V ** 2, 1), 1.0)
        assert corollary71(max(k, 2), max(k, 2), 0.5)["a_star_max"] == pytest.approx(
            np.max(np.abs(polarization_G(max(k, 2))[0])), rel=1e-14)


def test_normalized_G_is_polarization_not_product():
    tn = thm2_target(6, 3, 0.5, S=[0, 1, 2], normalized=True)
    Y = np.random.default_rng(1).standard_normal((50, 3))
    np.testing.assert_allclose(tn.G(Y)[:, 0], 3 ** 1.5 / 3 ** 0.5 * np.prod(Y, 1), rtol=1e-10, atol=1e-12)
    assert np.all(tn.G(Y) == tn.G(Y)[:, :1])


# ------------------------------------------------------------------ Theorem 1 calculator ------------

_ARGS = dict(k=2, p_F=1, C_s_F=1.0, p_G=1, C_s_G=1.0, alpha=0.1, m=10 ** 8)


def _sched(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RegimeWarning)
        return theorem1_schedule(**{**_ARGS, **kw})


@given(st.floats(1e-4, 10.0), st.floats(1e-4, 10.0))
def test_T_non_increasing_in_delta(d1, d2):
    lo, hi = sorted((d1, d2))
    T_lo, T_hi = _sched(delta=lo)["T"], _sched(delta=hi)["T"]
    assert T_lo >= T_hi
    if lo < hi < 1:
        assert T_lo > T_hi
        assert T_lo / T_hi == pytest.approx((hi / lo) ** 2, rel=1e-12)   # T ~ 1/delta^2 below 1


@given(st.floats(1e-3, 1.0), st.floats(0.5, 50.0), st.floats(0.5, 50.0), st.integers(1, 8))
def test_eta_v_conventions(alpha, C_s_F, C_s_G, p_G):
    kw = dict(alpha=alpha, C_s_F=C_s_F, C_s_G=C_s_G, p_G=p_G, delta=0.3)
    s = _sched(**kw)
    assert s["eta_v"] / s["eta_w"] == pytest.approx((s["tau_v"] / s["tau_w"]) ** 2, rel=1e-12)
    assert s["eta_v"] / s["eta_w"] == pytest.approx(alpha ** 2 * (p_G * C_s_G / C_s_F) ** 2, rel=1e-12)  # the alpha^2
    st_ = _sched(eta_v_convention="statement", **kw)
    assert st_["eta_v"] / st_["eta_w"] == pytest.approx((p_G * C_s_G / C_s_F) ** 2, rel=1e-12)


def test_admissible_flags():
    good = _sched(delta=0.05)
    assert good["admissible"] and all(r["holds"] for r in good["regime"]) and good["order_of_magnitude"]
    too_big = _sched(alpha=1.5 * good["alpha_max"], delta=0.05)
    assert not too_big["admissible"]
    floor = _sched(delta=0.05)["delta_min"]
    assert not _sched(delta=0.5 * floor)["admissible"]
    assert not _sched(delta=0.04, OPT=0.04)["admissible"]
    with pytest.warns(RegimeWarning, match="alpha <= alpha_max"):
        theorem1_schedule(**{**_ARGS, "alpha": 1.0}, delta=0.05)
    C = _sched(delta=0.05, consts={"C_alpha": 20.0})
    assert C["alpha_max"] == pytest.approx(20 * good["alpha_max"], rel=1e-14)


def test_delta0_scales_as_alpha4_cG4():
    """docs/resnet.md: delta0 = Theta(alpha^4 (k p_G C_s(G))^4 (1+B_F)^2) once k p_G C_s(G) is large."""
    for B_F in (0.0, 1.0, 3.0):
        s = _sched(alpha=1e-3, C_s_G=1e8, delta=0.5, B_F=B_F)
        cG = 2 * 1e8
        assert s["delta0"] / (1e-3 ** 4 * cG ** 4 * (1 + B_F) ** 2) == pytest.approx(1.0, rel=1e-3)


@pytest.mark.parametrize("B_F, L_G", [(1.0, None), (0.0, 2.5), (2.0, 0.3)])
def test_delta0_formula_L1056(B_F, L_G):
    """delta0 typed from App. D.4 with Table 1's tau_v and Lemma D.2's alpha~, constants 1."""
    k, pF, CF, pG, CG, a = 3, 2, 1.5, 4, 0.7, 0.02
    s = _sched(k=k, p_F=pF, C_s_F=CF, p_G=pG, C_s_G=CG, alpha=a, delta=0.5, B_F=B_F, L_G=L_G)
    at = a / (k * (pF * CF + pG * CG))
    tv = a * k * pG * CG
    LG = math.sqrt(k * pG * CG) if L_G is None else L_G
    assert s["delta0"] == pytest.approx((at ** 2 + tv ** 2 * (1 + B_F) + a * tv * LG * (B_F + 1)) ** 2, rel=1e-13)
    assert s["sigma_v"] == pytest.approx(1 / tv ** 2, rel=1e-13) and s["sigma_w"] == pytest.approx(1e-1, rel=1e-13)


def test_regret_bound_recomputed_from_D4():
    s = _sched(delta=0.05)
    T = 1e4
    W2, V2 = (s["tau_w"] / 10) ** 2, (s["tau_v"] / 10) ** 2            # ||W*|| <= tau_w/10, ||V*|| <= tau_v/10
    direct = 4 * (W2 / (2 * s["eta_w"] * T) + V2 / (2 * s["eta_v"] * T))
    assert regret_bound(T, s["eta_w"], s["tau_w"]) == pytest.approx(direct, rel=1e-12)
    assert regret_bound(T, s["eta_w"], s["tau_w"], OPT=0.1, delta0=0.2, C=3) == pytest.approx(direct + 0.9, rel=1e-12)


def test_coupling_sign_changes_match_worst_case_monte_carlo():
    """Lemma D.1 (a), (d) with C = (6/pi)^(1/3) equal the exact worst-case flip count of one draw (greedy on the
    smallest |pre-activations|) for small perturbations. The count is a binomial-like order statistic with
    relative s.d. <= 1/sqrt(s) ~ 0.5% at s ~ 4e4; tolerance 2.5% (5 s.d.)."""
    rng = np.random.default_rng(5)
    m, c = 10 ** 6, (6 / math.pi) ** (1 / 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RegimeWarning)
        for tau_w, tau_v, sigma_v in [(1.0, 0.02, 1.0), (2.0, 0.2, 25.0)]:
            b = coupling_bounds(m, 2, tau_w, tau_v, sigma_v, consts={"C_a": c, "C_d": c})
            sw, xt2, zt2 = m ** -0.125, 2.0, 1.0 + 4.0           # ||(x,1)||^2 = 2; ||(out1,1)||^2 for ||out1|| = 2
            for key, sd, budget in [("a", sw * math.sqrt(xt2), tau_w ** 2 * xt2),
                                    ("d", sigma_v * math.sqrt(zt2 / m), tau_v ** 2 * zt2)]:
                g0 = rng.standard_normal(m) * sd                    # W0 (x,1) or V0 (out1,1), one neuron per entry
                s = np.searchsorted(np.cumsum(np.sort(g0 ** 2)), budget, side="right")
                assert s == pytest.approx(b[key], rel=0.025), key


def test_coupling_bounds_forms():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RegimeWarning)
        b = coupling_bounds(10 ** 8, 2, 2.0, 0.2, 25.0, out1_norm=3.0, polylog=2.0)
    rw, rv = 2.0 / 0.1, 0.2 / 25.0
    assert b["b"] == pytest.approx(2 * (2 * rw ** (1 / 3) / 1e8 ** (1 / 6) + 0.1), rel=1e-12)
    assert b["e"] == pytest.approx(2 * 0.2 * rv ** (1 / 3) * 4.0, rel=1e-12) and b["f"] * 4 == pytest.approx(b["e"])
    assert b["g"] == pytest.approx(2 * 0.2 * 4.0, rel=1e-12) and b["c"] == 2.0
    with pytest.warns(RegimeWarning, match="tau_v <= sigma_v"):
        coupling_bounds(10 ** 8, 2, 2.0, 30.0, 25.0)


def test_corollary71():
    d, k, alpha = 100, 4, 0.5
    c = corollary71(d, k, alpha)
    x = np.full(d, 1 / math.sqrt(d))                                    # x in {±1/sqrt(d)}^d, ||x|| = 1
    w = np.zeros(d)
    w[0] = 1 / math.sqrt(2)                                             # ||w*|| = 1/sqrt(2) (Concept 1)
    slope = c["C_s_F"] / (2 * 1e4)                                      # C_s of c z is C*(0+1)0 + C* 2 |c|
    assert slope * (w @ x) == pytest.approx(math.sqrt(d / k) * x[0], rel=1e-14)   # F_1 = sqrt(d/k) x_1 (App. E.4)
    assert c["C_s_G"] == pytest.approx(1e4 * (k + 1) * 2 ** (k / 2), rel=1e-14) and c["p_G"] == 16
    assert c["N"] == pytest.approx(d / alpha ** 8) and c["risk"] == pytest.approx(alpha ** 4)
    s = _sched(k=k, p_F=c["p_F"], C_s_F=c["C_s_F"], p_G=c["p_G"], C_s_G=c["C_s_G"], alpha=alpha, delta=alpha ** 4)
    assert s["alpha_max"] == pytest.approx(c["alpha_max"], rel=1e-14) and not s["admissible"]   # alpha ~ 1e-7 needed
    assert s["T"] == pytest.approx(8 * k * d * 1e8 / alpha ** 8, rel=1e-12)


# ------------------------------------------------------------------ Theorem 2 helpers ---------------------------


def test_thm2_N_range_spec_numbers():
    assert thm2_N_range(20, 2) == pytest.approx(2.8e-2, rel=2e-2)      # reference script (2 digits)
    assert thm2_N_range(30, 4) == pytest.approx(6.6e-5, rel=1e-2)
    assert thm2_N_range(34_000, 4) < 1 < thm2_N_range(36_000, 4)       # k = 4: non-empty from d ~ 3.5e4


@given(st.integers(10, 200), st.integers(1, 6), st.integers(1, 10 ** 6), st.floats(1e-3, 1e3))
def test_thm2_alpha_min_closes_the_proof(d, k, N, lam2):
    a = thm2_alpha_min(d, k, N)
    bound = 4 * k * N / (d / 5) ** k * 400 / lam2                      # ||u||^2 bound of App. E.1 (lambda^2 = lam2)
    assert bound < (1.001 * a) ** 2 / (4 * lam2)
    assert bound > (0.999 * a) ** 2 / (4 * lam2)
    assert thm2_lower_bound(a) == pytest.approx(a * a / 4)


# ------------------------------------------------------------------ bad inputs -----------------------------------


@pytest.mark.parametrize("call, name", [
    (lambda: thm2_target(5, 6, 0.3), "'k'"),
    (lambda: thm2_target(5, 2, -0.1), "'alpha'"),
    (lambda: thm2_target(5, 2, 0.3, S=[1, 1]), "'S'"),
    (lambda: thm2_target(5, 2, 0.3, S=[1, 5]), "'S'"),
    (lambda: thm2_target(5, 2, 0.3, S=[1, 2, 3]), "'S'"),
    (lambda: thm2_target(30, 21, 0.3, normalized=True), "'k'"),
    (lambda: fig2_target(d=15), "'d'"),
    (lambda: fig2_target(G="literal"), "'G'"),
    (lambda: fig2_target(k=8, q=3, G="paper_literal"), "'q'"),
    (lambda: fig2_target(k=8, q=9), "'q'"),
    (lambda: fig2_target()(np.zeros((2, 30))), "'X'"),
    (lambda: fig2_target()(np.ones((2, 29))), "'X'"),
    (lambda: fig2_target()(np.ones(30)), "'X'"),
    (lambda: fig2_target().G(np.full((2, 8), np.nan)), "'Y'"),
    (lambda: CompositionTarget(4, ((0,), (1,)), ((0, 1),), 0.3), "'G_sets'"),
    (lambda: CompositionTarget(4, ((0, 0),), ((0,),), 0.3), "'F_sets'"),
    (lambda: CompositionTarget(4, ((0,), (1,)), ((0, 1), (0, 1)), 0.3, polarization=True), "'polarization'"),
    (lambda: polarization_G(0), "'k'"),
    (lambda: theorem1_schedule(2, 1, 1.0, 1, 1.0, 0.0, 0.1, 100), "'alpha'"),
    (lambda: theorem1_schedule(2, 1, 1.0, 1, 1.0, 0.1, 0.1, 100, consts={"C_x": 1}), "'consts'"),
    (lambda: theorem1_schedule(2, 1, 1.0, 1, 1.0, 0.1, 0.1, 100, eta_v_convention="x"), "'eta_v_convention'"),
    (lambda: theorem1_schedule(2, 1, 1.0, 1, 1.0, 0.1, 0.1, 100, polylog=0.5), "'polylog'"),
    (lambda: regret_bound(0, 0.1, 1.0), "'T'"),
    (lambda: coupling_bounds(100, 2, 1.0, 0.1, -1.0), "'sigma_v'"),
    (lambda: coupling_bounds(100, 2, 1.0, 0.1, 1.0, out1_norm=-1.0), "'out1_norm'"),
    (lambda: corollary71(10, 1, 0.1), "'k'"),
    (lambda: thm2_N_range(3, 4), "'k'"),
    (lambda: thm2_alpha_min(30, 4, 0), "'N'"),
    (lambda: thm2_lower_bound(float("nan")), "'alpha'"),
])
def test_bad_inputs(call, name):
    with pytest.raises(InvalidParameterError, match=name):
        call()


def test_cube_and_fwht_helpers_are_sound():
    """The oracle itself: chi_S on the enumerated cube has the unit vector at mask(S) as its spectrum."""
    X = _cube(4)
    for S in itertools.chain.from_iterable(itertools.combinations(range(4), r) for r in range(5)):
        spec = _fwht(np.prod(X[:, list(S)], axis=1) if S else np.ones(16))
        e = np.zeros(16)
        e[sum(1 << i for i in S)] = 1
        np.testing.assert_array_equal(spec, e)
