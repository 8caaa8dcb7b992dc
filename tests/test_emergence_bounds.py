"""Emergence bounds: rates, error scales, lower bounds (Parseval, paper forms, SQ), the count-threshold ceiling,
App. F weighted moments and input-noise gradient, the finite-sample step-2 cosine (docs/emergence.md).

Oracles: exact enumeration of the cube and of the data support, exact finite-sample samplers (multinomial rows,
binomial background counts), Monte Carlo with stated z, reference-script numbers (docs/emergence.md).
"""
import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import binom

from popdyn import InvalidParameterError, RegimeWarning
from popdyn.models.emergence.bounds import (class_weighted_moments, count_threshold_ceiling, eps_e, eps_e2,
                                            finite_sample_bias_shift, finite_sample_step2_cos,
                                            finite_sample_step2_deviation, fixed_feature_lower_bound,
                                            input_noise_gradient, kernel_lower_bound, parity_correlations,
                                            parity_feature_correlations,
                                            sigt_general, sq_lower_bound, theorem1_rate, theorem26_intermediate_rate,
                                            theorem26_terms, width_for_loss)
from popdyn.models.emergence.data import (hidden_representation, iid_block_model, parity_mixture,
                                          random_dictionary)
from popdyn.models.emergence.activation import smooth_trunc_relu, window
from popdyn.models.emergence.correlations import neuron_correlations

Z_MAX = 4.5  # two-sided max-|z| over <= 100 coordinates: false-alarm probability < 1e-3

# ------------------------------------------------------------------ rates --------------------------------


@pytest.mark.parametrize("k, m, T", [(2, 100, 50.0), (5, 10**6, 3e7), (10, 10**4, None)])
def test_theorem1_rate_formula(k, m, T):
    TT = m ** (4 / 3) if T is None else T
    direct = k**8 * m ** (-2 / 3) + k**3 * TT / m**2 + k**2 * m ** (2 / 3) / TT
    assert theorem1_rate(k, m, T) == pytest.approx(direct, rel=1e-14)  # 1e-14: float64 re-association
    assert theorem1_rate(k, m, T, C=3.0) == pytest.approx(3 * direct, rel=1e-14)


@given(st.integers(1, 15), st.floats(0.0, 6.0), st.floats(-3.0, 9.0))
def test_intermediate_rate_within_2_plus_1_over_k_for_m_at_least_k3(k, log_extra, log_T):
    """(A.281)/(A.282) <= 2 + 1/k for m >= k^3 (<= 2.39 over 1e5 random draws); always > 1."""
    m = int(math.ceil(k**3 * 10**log_extra))
    T = 10**log_T * m ** (4 / 3)
    r = theorem26_intermediate_rate(k, m, T) / theorem1_rate(k, m, T)
    assert 1 < r <= (2 + 1 / k) * (1 + 1e-12)  # 1e-12: float64 rounding of the ratio


@pytest.mark.parametrize("k", [2, 3, 5, 9])
def test_intermediate_rate_factor_is_sharp_at_m_equal_k3(k):
    """At m = k^3 and T = k^(7/2) (which minimises the common terms) the ratio is (2k^6 + k^5 + X)/(k^6 + X)."""
    m, T = k**3, k**3.5
    X = 2 * k**0.5
    r = theorem26_intermediate_rate(k, m, T) / theorem1_rate(k, m, T)
    assert r == pytest.approx((2 * k**6 + k**5 + X) / (k**6 + X), rel=1e-12)
    assert r > 2 + 1 / k - 3 * k**-5.5  # the gap to 2 + 1/k is ~ X (1 + 1/k) / k^6 = 2 (1 + 1/k) k^-5.5


@given(st.integers(1, 12), st.integers(1, 10**7), st.floats(0.1, 1e9), st.floats(0.1, 10.0))
def test_theorem26_terms_are_the_monomials_of_A281(k, m, T, sigt):
    t = theorem26_terms(k, m, T, sigt=sigt)
    eta = k**2 / (T * m ** (1 / 3))
    rel = 1e-12  # float64, a handful of operations
    assert 2 * t["a_tilde"] == pytest.approx(k**9 / m, rel=rel)
    assert t["eta_drift"] == pytest.approx(k**4 * eta**2 * T**2, rel=rel)
    assert t["step2_drift"] == pytest.approx(k**3 * T / m**2, rel=rel)
    assert 2 * t["oco_norm"] == pytest.approx(k**9 / (eta * T * m), rel=rel)
    assert t["eta_m"] == pytest.approx(eta * m, rel=rel)
    # S9: the lambda-term at lambda_max = k^3/(sigt m^(1/3)) is k^8/m^(2/3) exactly, whatever T and sigt
    assert t["lam_drift"] == pytest.approx(k**8 / m ** (2 / 3), rel=rel)
    assert t["total"] == pytest.approx(sum(v for key, v in t.items() if key != "total"), rel=rel)
    half_lam = theorem26_terms(k, m, T, sigt=sigt, lam=k**3 / (sigt * m ** (1 / 3)) / 2)
    assert half_lam["lam_drift"] == pytest.approx(t["lam_drift"] / 2, rel=rel)


def test_theorem26_terms_take_actual_norms():
    t = theorem26_terms(3, 100, 1000.0, sigt=2.0, eta=0.01, lam=0.001, a_tilde_l2sq=4.0, a_tilde_l0=9.0,
                        a2_l2=0.5)
    lever = 6.0  # ||a~||_2 sqrt(||a~||_0) = 2 * 3
    expect = {"a_tilde": 2.0, "lam_drift": lever * 1000 * 0.01 * 0.001 * 2.0 / 3, "eta_drift": lever * 1e-4 * 1e6,
              "step2_drift": lever * 1000 / (3 * 1e4), "oco_norm": 4.0 / (2 * 0.01 * 1000), "a2": 0.5 * 10,
              "eta_m": 1.0}
    for key, v in expect.items():
        assert t[key] == pytest.approx(v, rel=1e-14), key


def test_width_for_loss_numbers_and_inverse():
    # 7.7e9 (k=5, eps=0.1) and 3.2e13 (k=10, eps=0.1)
    assert f"{width_for_loss(5, 0.1):.2g}" == "7.7e+09"
    assert f"{width_for_loss(10, 0.1):.2g}" == "3.2e+13"
    for k, eps in [(2, 0.5), (5, 0.1), (7, 0.01)]:
        m = width_for_loss(k, eps)
        assert k**8 / m ** (2 / 3) == pytest.approx(eps, rel=1e-12)  # the dominant term of theorem1_rate
    assert width_for_loss(5, 0.1, C=2.0) == pytest.approx(2 * width_for_loss(5, 0.1), rel=1e-15)


@given(st.integers(1, 10), st.integers(1, 10**6))
def test_rate_decreases_in_m_and_increases_in_k_at_theorem_T(k, m):
    assert theorem1_rate(k, m + 1) < theorem1_rate(k, m)
    assert theorem1_rate(k + 1, m) > theorem1_rate(k, m)


# ------------------------------------------------------------------ error scales -------------------------------


@pytest.mark.parametrize("D, k, p", [(100, 5, 0.5), (40, 3, 0.2), (250, 12, 0.5)])
def test_eps_e_matches_model_constants(D, k, p):
    """sigma_phi^2 sigt^2 = p_o(1 - p_o): eps_e from the argument p_o equals the formula with the model's moments."""
    mom = iid_block_model(D, k, 0.3, p, [0]).moments()
    m, delta = 300, 0.1
    L = math.log(D * m / delta)
    direct = (k * L**0.5 + L**1.5) / math.sqrt(mom.sphi2 * mom.sigt**2 * (D - k))
    assert eps_e(k, D, p, m, delta) == pytest.approx(direct, rel=1e-12)  # sphi2 sigt^2 rounding


def test_eps_e_exceeds_one_at_experiment_size():
    """docs/errata.md: eps_e > 1 at D = 100, k = 5 (Lemma 15 vacuous at the experiment's size)."""
    assert eps_e(5, 100, 0.5, 300, 0.1) > 1
    assert eps_e(5, 100, 0.5, 300, 0.1, C=0.5) == pytest.approx(eps_e(5, 100, 0.5, 300, 0.1) / 2, rel=1e-15)


@given(st.integers(1, 20), st.integers(2, 50), st.floats(0.01, 0.99), st.integers(1, 1000), st.floats(1e-6, 0.9))
def test_eps_e_monotone_in_m_delta_and_symmetric_in_p(k, extra, p, m, delta):
    D = k + extra
    e = eps_e(k, D, p, m, delta)
    assert eps_e(k, D, p, m + 1, delta) > e
    assert eps_e(k, D, p, m, delta / 2) > e
    assert eps_e(k, D, 1 - p, m, delta) == pytest.approx(e, rel=1e-12)
    assert eps_e(k, D, 0.5, m, delta) <= e * (1 + 1e-12)  # p(1-p) is largest at 1/2


@given(st.floats(0.0, 1e-3), st.floats(-10, 10), st.integers(1, 30), st.floats(0.01, 1), st.floats(0.5, 20),
       st.floats(1e-3, 1.0), st.floats(0.0, 10.0))
def test_eps_e2_linear_in_eta1_abs_a0(eta1, a0, k, gamma, sigt, s2, ee):
    base = math.exp(-k)
    v = eps_e2(eta1, a0, k, gamma, sigt, s2, ee)
    slope = abs(a0) * k * (gamma + ee) / (sigt**2 * s2)
    assert v == pytest.approx(base + eta1 * slope, rel=1e-12, abs=1e-300)
    assert eps_e2(eta1, -a0, k, gamma, sigt, s2, ee) == v
    assert eps_e2(0.0, a0, k, gamma, sigt, s2, ee, c_exp=2.0) == pytest.approx(math.exp(-2 * k), rel=1e-15)


# ------------------------------------------------------------------ fixed-feature bound -----------------

CUBE10 = np.array(list(itertools.product([-1, 1], repeat=10)), dtype=np.float64)


def _clipped_relu_features(Z, N, seed):
    """Random data-independent features with values in [-1, 1]."""
    rng = np.random.default_rng(seed)
    R = rng.standard_normal((N, Z.shape[1])) / math.sqrt(Z.shape[1])
    return np.clip(np.maximum(Z @ R.T + 0.5 * rng.standard_normal(N), 0.0), -1, 1)


def _min_hinge(F, y, prob, B, iters=4000):
    """min_{||w|| <= B} sum_x prob(x) max(0, 1 - y(x) <F(x), w>) by projected subgradient; best iterate
    (an upper estimate of the minimum)."""
    w = np.zeros(F.shape[1])
    best = 1.0
    for t in range(1, iters + 1):
        marg = y * (F @ w)
        best = min(best, float(prob @ np.maximum(0.0, 1 - marg)))
        g = -(prob * y * (marg < 1)) @ F
        w = w - (B / math.sqrt(t)) * g / max(np.linalg.norm(g), 1e-300)
        nw = np.linalg.norm(w)
        if nw > B:
            w *= B / nw
    return best


def test_parity_correlations_match_direct_products_and_parseval_identity():
    Psi = _clipped_relu_features(CUBE10, 40, seed=0)
    total = 0.0
    for k in range(11):
        A, c = parity_correlations(Psi, k)
        assert A.shape == (math.comb(10, k), k)
        direct = np.array([np.prod(CUBE10[:, a], axis=1) @ Psi / 2**10 for a in A])
        np.testing.assert_allclose(c, direct, rtol=0, atol=1e-14)  # 1e-14: 1024-term sums of O(1) values
        total += float(np.sum(c**2))
    # Parseval: sum over every parity of ||E f_A Psi||^2 = E ||Psi||^2 (<= N)
    assert total == pytest.approx(float(np.mean(np.sum(Psi**2, axis=1))), rel=1e-12)


@given(st.integers(2, 9), st.integers(1, 6), st.integers(0, 2**32 - 1), st.data())
def test_parseval_inequality_for_arbitrary_bounded_features(D, N, seed, data):
    """sum_{|A| = k} ||E f_A Psi||^2 <= E ||Psi||^2 <= N for any Psi with values in [-1, 1]."""
    k = data.draw(st.integers(0, D))
    Psi = np.random.default_rng(seed).uniform(-1, 1, (2**D, N))
    Psi[:, 0] = np.sign(Psi[:, 0])  # one feature on the boundary values
    _, c = parity_correlations(Psi, k)
    assert np.sum(c**2) <= np.mean(np.sum(Psi**2, axis=1)) * (1 + 1e-12)  # 1e-12: WHT rounding
    assert np.mean(np.sum(Psi**2, axis=1)) <= N


def test_parseval_bound_B8_worst_parity():
    """Spec B.8 / S10 (D = 10, k = 3, N = 40 clipped features, B = 3): sum_A ||c_A||^2 <= E||Psi||^2 <= N, the
    worst A has ||c_A|| <= sqrt(N / C(D, k)), and the minimised hinge loss there is >= 1 - B ||c_A||."""
    D, k, N, B = 10, 3, 40, 3.0
    Psi = _clipped_relu_features(CUBE10, N, seed=0)
    A, c = parity_correlations(Psi, k)
    norms = np.linalg.norm(c, axis=1)
    assert np.sum(norms**2) <= np.mean(np.sum(Psi**2, axis=1)) <= N
    worst = int(np.argmin(norms))
    assert norms[worst] <= math.sqrt(N / math.comb(D, k))
    cert = 1 - B * norms[worst]
    assert cert > 0.5  # the data-dependent certificate is informative here (S10: 0.899) ...
    assert fixed_feature_lower_bound(1.0, N, B, k, D) == 0.0  # ... while the worst-case formula is vacuous
    y = np.prod(CUBE10[:, A[worst]], axis=1)
    loss = _min_hinge(Psi, y, np.full(2**D, 2.0**-D), B)
    assert loss >= cert - 1e-12  # 1e-12: the certificate is a bound, only rounding separates them
    # Markov: the fraction of A with ||c_A||^2 > t N / C(D, k) is <= 1/t
    for t in [1.0, 2.0, 5.0, 20.0]:
        assert np.mean(norms**2 > t * N / math.comb(D, k)) <= 1 / t


def test_parseval_bound_is_attained_by_a_parity_feature():
    """A feature equal to f_A gives loss max(0, 1 - B) on A: the certificate 1 - B ||c_A|| is tight, and the bound
    can only hold for SOME A (a first derivation wrote min over A; it must be max over A, i.e. 'there exists A')."""
    D, k, B = 10, 3, 0.6
    rest = [j for j in range(D) if j not in (1, 4, 7)]  # other features see only coordinates outside A
    Psi = np.concatenate([np.prod(CUBE10[:, [1, 4, 7]], axis=1, keepdims=True),
                          _clipped_relu_features(CUBE10[:, rest], 5, seed=1)], axis=1)
    A, c = parity_correlations(Psi, k)
    i = [tuple(a) for a in A].index((1, 4, 7))
    assert np.linalg.norm(c[i]) == pytest.approx(1.0, rel=1e-14)
    y = np.prod(CUBE10[:, [1, 4, 7]], axis=1)
    loss = _min_hinge(Psi, y, np.full(2**D, 2.0**-D), B)
    assert loss == pytest.approx(1 - B, abs=1e-9)  # w = B e_1 is optimal (1e-9: subgradient iterate)
    assert np.min(1 - B * np.linalg.norm(c, axis=1)) < np.max(1 - B * np.linalg.norm(c, axis=1))


def test_mixture_loss_at_least_p_o_times_parity_certificate():
    """The reduction of Thm 2: on the paper's D_A^mix (A = first k patterns, p_o = 1/2, exact law on {0,1}^10),
    every ||w|| <= B has hinge loss >= p_o (1 - B ||E f_A Psi||), which is >= the Parseval formula for the worst A."""
    D, k, N, B, p_o = 10, 3, 30, 2.0, 0.5
    model = parity_mixture(D, k, p_o, independent_background=False)
    phit = (CUBE10 + 1) / 2
    Psi = _clipped_relu_features(CUBE10, N, seed=2)
    prob = np.zeros(2**D)
    y = np.zeros(2**D)
    for row, pr, lab in zip(model.A_support, model.A_probs, model.labels):
        hit = np.all(phit[:, :k] == row, axis=1)
        prob[hit] += pr * 2.0 ** -(D - k)  # background Bern(1/2) in both components at p_o = 1/2
        y[hit] = lab
    assert prob.sum() == pytest.approx(1.0, rel=1e-14)
    A, c = parity_correlations(Psi, k)
    cA = np.linalg.norm(c[0])  # A = (0, 1, 2)
    assert tuple(A[0]) == (0, 1, 2)
    loss = _min_hinge(Psi, y, prob, B)
    assert loss >= p_o * (1 - B * cA) - 1e-12
    assert p_o * (1 - B * np.linalg.norm(c, axis=1).min()) >= fixed_feature_lower_bound(p_o, N, B, k, D)


@pytest.mark.parametrize("s", [0.02, 0.1, 0.5])
def test_parity_feature_correlations_equal_walsh_hadamard(s):
    """Fourier formula = exact cube enumeration (D = 10) for every parity order and three smoothings."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 0.3, (6, 10)), rng.normal(0, 0.3, 6)
    Psi = smooth_trunc_relu(CUBE10 @ a.T + b, s)
    for k in (1, 2, 3, 5, 10):
        A, c = parity_correlations(Psi, k)
        for i in sorted({0, len(A) // 2, len(A) - 1}):
            np.testing.assert_allclose(parity_feature_correlations(a, b, s, A[i]), c[i], rtol=0,
                                       atol=1e-15)  # 1e-15: measured <= 6e-17, trapezoid is spectrally exact


def test_parity_feature_correlations_at_D100_vs_mc_and_rf_certificate():
    """D = 100, k = 5 (the E1 size): 20 network-init features (a = q/(2 sigt), sigt = 5) vs MC (n = 2e5,
    seed 21, max |z| < 4.5); for 300 random features ||c_A|| ~ 1e-5, so any ||w|| <= B has hinge loss
    >= 1 - 1e-5 B on D^(0): RF must stay near chance on the uniform-parity part (claim C8)."""
    rng = np.random.default_rng(21)
    Q, b = rng.normal(0, 1 / 5, (300, 100)), rng.normal(0, 1 / 25, 300)
    n, s1, s2 = 0, 0.0, 0.0
    for _ in range(8):  # 8 chunks of 25000 samples (memory)
        z = 2.0 * rng.integers(0, 2, (25_000, 100)) - 1.0
        vals = np.prod(z[:, :5], axis=1)[:, None] * smooth_trunc_relu(z @ (Q[:20] / 10).T + b[:20], 0.05)
        n, s1, s2 = n + len(z), s1 + vals.sum(0), s2 + (vals**2).sum(0)
    c = parity_feature_correlations(Q[:20] / 10, b[:20], 0.05, range(5))
    sd = np.sqrt(s2 / n - (s1 / n) ** 2)
    assert np.max(np.abs((s1 / n - c) / (sd / math.sqrt(n)))) < Z_MAX
    assert np.linalg.norm(parity_feature_correlations(Q / 10, b, 5**-1.5, range(5))) < 1e-4


@given(st.integers(0, 2**32 - 1), st.integers(2, 12), st.data())
@settings(max_examples=15)
def test_parity_feature_correlations_sign_symmetries(seed, D, data):
    """Flipping a_j flips c_A when j is in A and leaves it when j is not (z_j -> -z_j); a_j = 0 on A gives 0."""
    A = data.draw(st.lists(st.integers(0, D - 1), min_size=1, max_size=D, unique=True))
    rng = np.random.default_rng(seed)
    a, b = rng.normal(0, 0.4, (3, D)), rng.normal(0, 0.4, 3)
    c = parity_feature_correlations(a, b, 0.2, A)
    j = data.draw(st.integers(0, D - 1))
    f = a.copy()
    f[:, j] *= -1
    np.testing.assert_allclose(parity_feature_correlations(f, b, 0.2, A), -c if j in A else c, rtol=0, atol=1e-15)
    f[:, A[0]] = 0.0
    np.testing.assert_allclose(parity_feature_correlations(f, b, 0.2, A), 0.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("p_o, N, B, k, D, t", [(0.5, 100, 2.0, 5, 100, 1.0), (1.0, 1, 0.1, 1, 3, 2.0),
                                                 (0.3, 10**6, 10.0, 15, 400, 20.0)])
def test_fixed_feature_forms(p_o, N, B, k, D, t):
    parseval = p_o * max(0.0, 1 - B * math.sqrt(t * N / math.comb(D, k)))
    assert fixed_feature_lower_bound(p_o, N, B, k, D, t=t) == pytest.approx(parseval, rel=1e-13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RegimeWarning)
        assert fixed_feature_lower_bound(p_o, N, B, k, D, "paper_sqrt2N_B") == pytest.approx(
            p_o * max(0.0, 1 - math.sqrt(2 * N) * B / 2**k), rel=1e-14)
        assert fixed_feature_lower_bound(p_o, N, B, k, D, "paper_sqrt2NB") == pytest.approx(
            p_o * max(0.0, 1 - math.sqrt(2 * N * B) / 2**k), rel=1e-14)


def test_paper_forms_warn_outside_their_regime():
    with pytest.warns(RegimeWarning, match="odd 3 < k <= D/16"):
        fixed_feature_lower_bound(0.5, 10, 1.0, 4, 100, "paper_sqrt2N_B")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RegimeWarning)
        fixed_feature_lower_bound(0.5, 10, 1.0, 5, 80, "paper_sqrt2NB")


@given(st.sampled_from([5, 7, 9, 11]), st.integers(0, 300), st.integers(1, 10**8), st.floats(0.0, 1e3),
       st.floats(0.01, 1.0))
def test_parseval_implies_paper_form_in_its_regime(k, extra, N, B, p_o):
    """C(D, k) >= 16^k for k <= D/16, so the Parseval form dominates the (B-linear) paper form."""
    D = 16 * k + extra
    par = fixed_feature_lower_bound(p_o, N, B, k, D)
    paper = fixed_feature_lower_bound(p_o, N, B, k, D, "paper_sqrt2N_B")
    assert par >= paper - 1e-15


@given(st.floats(0.01, 1.0), st.integers(1, 10**6), st.floats(0.0, 100.0), st.integers(1, 30), st.integers(0, 60),
       st.floats(1.0, 100.0))
def test_fixed_feature_bound_monotone(p_o, N, B, k, extra, t):
    D = k + extra
    f = fixed_feature_lower_bound(p_o, N, B, k, D, t=t)
    assert 0.0 <= f <= p_o
    assert fixed_feature_lower_bound(p_o, N + 1, B, k, D, t=t) <= f
    assert fixed_feature_lower_bound(p_o, N, B * 1.5 + 0.1, k, D, t=t) <= f
    assert fixed_feature_lower_bound(p_o, N, B, k, D + 1, t=t) >= f  # C(D+1, k) > C(D, k)
    assert fixed_feature_lower_bound(p_o, N, B, k, D, t=2 * t) <= f
    assert fixed_feature_lower_bound(p_o / 2, N, B, k, D, t=t) == pytest.approx(f / 2, rel=1e-15)


def test_kernel_lower_bound():
    assert kernel_lower_bound(0.5, 10, 32.0) == pytest.approx(0.5 * (1 - 32 / 1024) - 1 / 32, rel=1e-15)
    assert kernel_lower_bound(0.5, 3, 8.0) == 0.0  # poly >= 2^k: vacuous
    ks = [kernel_lower_bound(0.5, k, 100.0) for k in range(7, 30)]
    assert all(a <= b for a, b in zip(ks, ks[1:]))


# ------------------------------------------------------------------ SQ bound -----------------------------------


def test_sq_numbers_of_spec():
    r = sq_lower_bound(100, 5)  # C = 7.53e7, bound 211, threshold 1/2 - 2.3e-24
    assert r.sq_dim == 75287520
    assert r.min_queries == pytest.approx(0.5 * 75287520 ** (1 / 3), rel=1e-13)
    assert f"{r.min_queries:.0f}" == "211" and f"{r.error_gap:.2g}" == "2.3e-24"
    assert r.error_threshold == 0.5 - r.error_gap
    assert f"{sq_lower_bound(100, 15).min_queries:.2g}" == "3.2e+05"
    assert sq_lower_bound(4000, 2000).min_queries == math.inf  # C^(1/3) beyond float range


def test_sq_dimension_by_enumeration_and_erratum_6():
    """Distinct k-parities prod_{j in A}(2 phi~_j - 1) are exactly uncorrelated under the uniform law, so
    SQ-DIM >= C(D, k); the typeset class 1[sum_j (1 - phi~_j) odd] (sum over all j) does not depend on A."""
    D, k = 6, 2
    phit = np.array(list(itertools.product([0, 1], repeat=D)), dtype=np.float64)
    sets = list(itertools.combinations(range(D), k))
    F = np.array([np.prod(2 * phit[:, list(a)] - 1, axis=1) for a in sets])
    G = F @ F.T / 2**D  # Pr[c_i = c_j] - Pr[c_i != c_j]
    d = sq_lower_bound(D, k).sq_dim
    assert d == len(sets)
    assert np.all(np.abs(G - np.eye(d)) <= 1 / d**3)
    typeset = np.array([(np.sum(1 - phit, axis=1) % 2 == 1) for _ in sets])
    assert np.all(typeset == typeset[0])


@given(st.integers(2, 200), st.data())
def test_sq_monotone(D, data):
    k = data.draw(st.integers(1, D // 2))
    r = sq_lower_bound(D, k)
    assert sq_lower_bound(D + 1, k).min_queries > r.min_queries
    if k + 1 <= D // 2:
        assert sq_lower_bound(D, k + 1).min_queries > r.min_queries
    assert 0 <= r.error_gap <= 1 and r.error_threshold == 0.5 - r.error_gap


# ------------------------------------------------------------------ count-threshold ceiling -------------------


def _ceiling_brute(model):
    c = model.A_support.sum(axis=1)
    best = 0.0
    for t in np.arange(-0.5, model.k + 1.0):
        for s in (1, -1):
            best = max(best, float(model.A_probs @ (s * np.sign(c - t) == model.labels)))
    return best


@pytest.mark.parametrize("k, value", [(3, 0.8125), (5, 0.84375), (7, 0.80859375)])
@pytest.mark.parametrize("indep", [True, False])
def test_count_threshold_ceiling_parity_mixture(k, value, indep):
    """Count-threshold ceiling at p_o = 1/2, = (1 - p_o) + p_o max_t acc_Bin(k, 1/2)(threshold vs parity)."""
    model = parity_mixture(4 * k, k, 0.5, independent_background=indep)
    assert count_threshold_ceiling(model) == pytest.approx(value, abs=1e-15)
    assert count_threshold_ceiling(model) == pytest.approx(_ceiling_brute(model), abs=1e-15)


@pytest.mark.parametrize("p_o", [0.1, 0.3, 0.45])
def test_count_threshold_ceiling_formula_any_p_o(p_o):
    for k in (3, 5, 7, 9):
        pmf = binom.pmf(np.arange(k + 1), k, 0.5)
        par = np.arange(k + 1) % 2 == 1
        acc = max(pmf[:t][~par[:t]].sum() + pmf[t:][par[t:]].sum() for t in range(1, k + 1))
        model = parity_mixture(20, k, p_o)
        assert count_threshold_ceiling(model) == pytest.approx((1 - p_o) + p_o * acc, abs=1e-14)


@given(st.integers(2, 8), st.floats(0.05, 0.95), st.data())
def test_count_threshold_ceiling_properties(k, pA, data):
    P = data.draw(st.sets(st.integers(0, k), min_size=1, max_size=k))
    model = iid_block_model(k + 2, k, pA, 0.5, P)
    ceil = count_threshold_ceiling(model)
    p_plus = model.moments().p_plus
    assert max(p_plus, 1 - p_plus) - 1e-15 <= ceil <= 1 + 1e-15
    assert ceil == pytest.approx(_ceiling_brute(model), abs=1e-14)
    t = data.draw(st.integers(1, k))
    assert count_threshold_ceiling(iid_block_model(k + 2, k, pA, 0.5, range(t, k + 1))) == pytest.approx(1.0)


# ------------------------------------------------------------------ App. F ------------------------------


@pytest.mark.parametrize("model", [iid_block_model(12, 4, 0.6, 0.3, [3, 4]), hidden_representation(20, 8, 5, seed=3),
                                   parity_mixture(10, 3, 0.3)], ids=["iid", "hidden", "parity"])
def test_class_weighted_identities_exact_and_mc(model):
    wm = class_weighted_moments(model)
    mom = model.moments()
    assert wm.E_alpha_y == pytest.approx(0.0, abs=1e-15) and wm.E_abs_alpha_y == pytest.approx(1.0, rel=1e-15)
    np.testing.assert_allclose(wm.E_alpha_y_phi_A, wm.gamma / mom.sigt, rtol=1e-13, atol=1e-16)
    assert wm.max_E_abs_alpha_y_phi_A <= 1 / mom.sigt
    # gamma_v definition of (A1), App. F, from the class-conditional means by direct enumeration
    pos, neg = model.labels > 0, model.labels < 0
    cond = lambda sel: (model.A_probs[sel] @ model.A_support[sel]) / model.A_probs[sel].sum()  # noqa: E731
    np.testing.assert_allclose(wm.gamma, (cond(pos) - cond(neg)) / 2, rtol=1e-13, atol=1e-16)
    # Monte Carlo: E[alpha_y y phi_j] over all D coordinates (0 off A), n = 4e5, seed 7
    X, y, _ = model.sample(400_000, seed=7)
    g = np.where(y > 0, wm.alpha[1], wm.alpha[-1]) * y
    vals = g[:, None] * X
    z = (vals.mean(0) - np.r_[wm.E_alpha_y_phi_A, np.zeros(model.D - model.k)]) / (vals.std(0) / math.sqrt(len(y)))
    assert np.max(np.abs(z)) < Z_MAX


@pytest.mark.parametrize("weighted", [True, False])
def test_input_noise_gradient_stein_vs_mc(weighted):
    """S12: E[alpha_y y win_s(<w, x> + b) x] with x = M phi + zeta/sigt equals M T + v_coef w (n = 6e5, seed 11;
    max |z| over d = 12 coordinates)."""
    model = iid_block_model(8, 3, 0.6, 0.4, [2, 3])  # P(y = 1) = 0.648: the weights matter
    d, sz, s, b = 12, 0.6, 0.1, 0.2
    M = random_dictionary(d, 8, seed=5)
    rng = np.random.default_rng(11)
    q = rng.normal(0, 0.8, 8)
    perp = rng.standard_normal(d)
    perp -= M @ (M.T @ perp)
    perp *= 0.5 / np.linalg.norm(perp)
    w = M @ q + perp
    T, v_coef = input_noise_gradient(model, q, b, s, sz, w_perp_sq=float(perp @ perp), weighted=weighted)
    pred = M @ T + v_coef * w
    X, y, _ = model.sample(600_000, seed=12)
    x = X @ M.T + rng.normal(0, sz, (len(y), d)) / model.moments().sigt
    p = model.moments().p_plus
    yw = y * (np.where(y > 0, 0.5 / p, 0.5 / (1 - p)) if weighted else 1.0)
    vals = (yw * window(x @ w + b, s))[:, None] * x
    z = (vals.mean(0) - pred) / (vals.std(0) / math.sqrt(len(y)))
    assert np.max(np.abs(z)) < Z_MAX
    assert abs(v_coef) * np.linalg.norm(w) > 10 * np.max(vals.std(0) / math.sqrt(len(y)))  # v is resolved


def test_input_noise_adds_to_the_smoothing():
    """Unweighted T under input noise equals the exact (Fourier) correlation at s_t^2 = s^2 + sz^2 ||w||^2/sigt^2."""
    model = parity_mixture(11, 3, 0.4)
    rng = np.random.default_rng(2)
    q, b, s, sz, wp = rng.normal(0, 0.5, 11), -0.1, 0.05, 0.8, 0.3
    T, v = input_noise_gradient(model, q, b, s, sz, w_perp_sq=wp, weighted=False)
    st_ = math.sqrt(s**2 + sz**2 * (q @ q + wp) / model.moments().sigt ** 2)
    np.testing.assert_allclose(T, neuron_correlations(model, q, b, st_).T, rtol=0, atol=1e-13)  # Fourier ~1e-15
    assert v != 0.0


def test_input_noise_gradient_without_noise():
    """sigma_zeta = 0: v = 0 and T is the exact population correlation (brute force over the 2^(D-k) background)."""
    model = parity_mixture(9, 3, 0.5)
    rng = np.random.default_rng(0)
    q, b, s = rng.normal(0, 0.4, 9), 0.1, 0.2
    T, v = input_noise_gradient(model, q, b, s, 0.0, weighted=False)
    assert v == 0.0
    mom = model.moments()
    phit = np.array(list(itertools.product([0, 1], repeat=9)), dtype=np.float64)
    prob = np.zeros(len(phit))
    y = np.zeros(len(phit))
    for row, pr, lab in zip(model.A_support, model.A_probs, model.labels):
        hit = np.all(phit[:, :3] == row, axis=1)
        prob[hit] += pr * 0.5**6
        y[hit] = lab
    phi = (phit - np.r_[mom.mean_A, mom.p_bar]) / mom.sigt
    direct = (prob * y * window(phi @ q + b, s)) @ phi
    np.testing.assert_allclose(T, direct, rtol=0, atol=1e-15)  # 1e-15: 512-term sums of O(0.1) values
    Tw, _ = input_noise_gradient(model, q, b, s, 0.0)  # balanced classes: alpha = 1
    np.testing.assert_allclose(Tw, T, rtol=0, atol=1e-16)


def test_sigt_general_vs_mc_and_erratum_10():
    """E||x~ - E x~||^2 for x~ = M phi~ + zeta, unit columns (d = 40, D = 12; four A columns tilted towards the
    first, so the A cross covariances 1/8 count) and sigma_zeta = 0.3:
    MC (n = 2e5, seed 8) matches the exact form within 4.5 SE and rejects the paper's form (> 10 SE)."""
    model = parity_mixture(12, 5, 0.5)  # Cov on A: 1/8 off the diagonal
    d, sz = 40, 0.3
    rng = np.random.default_rng(8)
    M = rng.standard_normal((d, 12))
    M /= np.linalg.norm(M, axis=0)
    M[:, 1:5] = (M[:, 1:5] + M[:, :1]) / np.linalg.norm(M[:, 1:5] + M[:, :1], axis=0)  # coherent A columns
    rho = M.T @ M
    exact = sigt_general(model, rho, sz, d) ** 2
    paper = sigt_general(model, rho, sz, d, convention="paper") ** 2
    X, _, _ = model.sample(200_000, seed=9)
    xt = (X * model.moments().sigt) @ M.T + rng.normal(0, sz, (len(X), d))  # centred x~
    r = np.sum(xt**2, axis=1)
    se = r.std() / math.sqrt(len(r))
    assert abs(r.mean() - exact) < Z_MAX * se
    assert abs(paper - exact) > 10 * se
    assert sigt_general(model, np.eye(12)) == pytest.approx(model.moments().sigt, rel=1e-14)
    assert paper == pytest.approx(model.moments().sigt ** 2 + d * sz**2, rel=1e-14)


# ------------------------------------------------------------------ finite-sample step 2 ----------------


def _sample_mean_yphi(model, n, reps, rng):
    """Exact draws of the empirical mean E^[y phi] over n samples: multinomial row counts, binomial background
    counts per (row group, class) (independent of any Gaussian approximation)."""
    mom = model.moments()
    P, group = model.background_groups()
    N = rng.multinomial(n, model.A_probs, size=reps)
    y = model.labels
    A = (N * y) @ model.phi_A() / n
    sy = (N * y).sum(axis=1)
    tot = np.zeros((reps, model.D - model.k))
    for g in range(P.shape[0]):
        npos = N[:, (group == g) & (y > 0)].sum(axis=1)
        nneg = N[:, (group == g) & (y < 0)].sum(axis=1)
        tot += rng.binomial(npos[:, None], P[g]) - rng.binomial(nneg[:, None], P[g])
    return np.concatenate([A, (tot - mom.p_bar * sy[:, None]) / (mom.sigt * n)], axis=1)


def test_step2_cos_spec_numbers():
    """docs/emergence.md, E5: 1 - cos = 38.8/n for the parity mixture D = 100, k = 5, p_o = 1/2."""
    model = parity_mixture(100, 5, 0.5)
    for n, pred in [(50_000, 0.99922), (25_000, 0.99845), (10_000, 0.99612)]:
        assert round(finite_sample_step2_cos(model, n), 5) == pred
    assert (1 - finite_sample_step2_cos(model, 1000)) * 1000 == pytest.approx(38.8, rel=1e-12)


@pytest.mark.parametrize("case, n", [("parity", 50_000), ("paper_mixture_p03", 20_000), ("hidden", 1_000)])
def test_step2_cos_vs_exact_sampling(case, n):
    """Mean of cos(E^[y phi], 1_A) over 4000 exact draws vs the delta-method prediction; |z| < 4.5 (seed 3).
    'paper_mixture_p03' has a row-dependent, correlated background; 'hidden' has E[y phi] not along 1_A (c < 1)."""
    model = {"parity": lambda: parity_mixture(100, 5, 0.5),
             "paper_mixture_p03": lambda: parity_mixture(60, 5, 0.3, independent_background=False),
             "hidden": lambda: hidden_representation(30, 10, 5, seed=1)}[case]()
    E = _sample_mean_yphi(model, n, 4000, np.random.default_rng(3))
    v = np.r_[np.ones(model.k), np.zeros(model.D - model.k)] / math.sqrt(model.k)
    cos = E @ v / np.linalg.norm(E, axis=1)
    pred = finite_sample_step2_cos(model, n)
    z = (cos.mean() - pred) / (cos.std() / math.sqrt(len(cos)))
    assert abs(z) < Z_MAX
    if case == "hidden":
        mu = model.moments().E_y_phi_A
        c0 = mu.sum() / math.sqrt(model.k) / np.linalg.norm(mu)
        assert c0 < 0.99 and abs(cos.mean() - c0) > 5 * cos.std() / math.sqrt(len(cos))  # the 1/n term is resolved


def test_step2_cos_error_is_second_order():
    """The delta-method residual E cos - prediction falls like n^-2 (20000 exact draws per n, seed 5): the 1/n
    coefficient is right (a relative error e in it would leave e * 38.8/n, slope -1). Measured: residual * n^2
    ~ 2.2e3, slope -1.92; slope SE ~ 0.1 from the residuals' relative SEs (4 %, 7 %, 13 %), so +-0.3 is 3 SE."""
    model = parity_mixture(100, 5, 0.5)
    v = np.r_[np.ones(5), np.zeros(95)] / math.sqrt(5)
    ns = np.array([2000, 4000, 8000])
    res = []
    for n in ns:
        E = _sample_mean_yphi(model, int(n), 20_000, np.random.default_rng(5))
        cos = E @ v / np.linalg.norm(E, axis=1)
        res.append(cos.mean() - finite_sample_step2_cos(model, int(n)))
        assert res[-1] > 5 * cos.std() / math.sqrt(len(cos))  # resolved, positive (the 3/8 X^2 term)
    slope = np.polyfit(np.log(ns), np.log(res), 1)[0]
    assert -2.3 < slope < -1.7


@pytest.mark.parametrize("n", [500, 20_000])
def test_step2_deviation_exact(n):
    model = parity_mixture(40, 5, 0.3, independent_background=False)
    E = _sample_mean_yphi(model, n, 4000, np.random.default_rng(4))
    mu = np.r_[model.moments().E_y_phi_A, np.zeros(model.D - model.k)]
    r = np.sum((E - mu) ** 2, axis=1) / (mu @ mu)
    z = (r.mean() - finite_sample_step2_deviation(model, n) ** 2) / (r.std() / math.sqrt(len(r)))
    assert abs(z) < Z_MAX


@given(st.integers(7, 10**7))
@settings(max_examples=20)
def test_step2_cos_increasing_in_n_to_the_population_cos(n):
    model = parity_mixture(30, 3, 0.4)   # 1 - cos = 12.4/n: n <= 6 leaves [-1, 1] and is refused
    assert finite_sample_step2_cos(model, n) < finite_sample_step2_cos(model, n + 1) < 1.0
    # 1 - cos is exactly proportional to 1/n when E[y phi] is along the target
    assert (1 - finite_sample_step2_cos(model, n)) * n == pytest.approx(7 * (1 - finite_sample_step2_cos(model, 7)),
                                                                        rel=1e-6)
    with pytest.raises(ValueError, match="'n'"):
        finite_sample_step2_cos(model, 6)


def test_bias_shift_vs_sampling():
    """b2 - b1 = a1 h(b1) E^[y]: mean and sd over 4000 draws of E^[y] from the model's own sampler (n = 2000,
    seed 13); mean within 4.5 SE, sd within 4.5 relative SEs (1/sqrt(2 * 4000))."""
    model = iid_block_model(8, 3, 0.6, 0.5, [2, 3])  # E y = 0.296
    a1, b1, s, n = np.array([3.0, -1.5]), np.array([0.02, 0.9]), 0.1, 2000
    mean, sd = finite_sample_bias_shift(model, n, a1, b1, s)
    ybar = np.array([model.sample(n, seed=13 + i)[1].mean() for i in range(4000)])
    shift = np.outer(ybar, a1 * window(b1, s))
    assert np.all(np.abs(shift.mean(0) - mean) < Z_MAX * sd / math.sqrt(len(ybar)))
    assert np.all(np.abs(shift.std(0) / sd - 1) < Z_MAX / math.sqrt(2 * len(ybar)))
    bal_mean, _ = finite_sample_bias_shift(parity_mixture(10, 3, 0.5), n, a1, b1, s)
    assert np.all(bal_mean == 0.0)


# ------------------------------------------------------------------ invalid input ------------------------------


@pytest.mark.parametrize("call, name", [
    (lambda: theorem1_rate(0, 10), "'k'"), (lambda: theorem1_rate(2, 10, T=-1.0), "'T'"),
    (lambda: theorem1_rate(2, 10, C=0.0), "'C'"), (lambda: width_for_loss(5, 1.0), "'eps'"),
    (lambda: eps_e(5, 5, 0.5, 10, 0.1), "'k'"), (lambda: eps_e(2, 5, 1.0, 10, 0.1), "'p_o'"),
    (lambda: eps_e2(1e-3, 1.0, 3, 0.0, 1.0, 0.1, 1.0), "'gamma'"),
    (lambda: fixed_feature_lower_bound(0.0, 10, 1.0, 3, 10), "'p_o'"),
    (lambda: fixed_feature_lower_bound(0.5, 0, 1.0, 3, 10), "'N'"),
    (lambda: fixed_feature_lower_bound(0.5, 10, -1.0, 3, 10), "'B'"),
    (lambda: fixed_feature_lower_bound(0.5, 10, 1.0, 11, 10), "'k'"),
    (lambda: fixed_feature_lower_bound(0.5, 10, 1.0, 3, 10, "sqrt"), "'form'"),
    (lambda: fixed_feature_lower_bound(0.5, 10, 1.0, 3, 10, t=0.5), "'t'"),
    (lambda: fixed_feature_lower_bound(0.5, 10, 1.0, 3, 100, "paper_sqrt2NB", t=2.0), "'t'"),
    (lambda: parity_correlations(np.ones((6, 2)), 1), "'Psi'"),
    (lambda: parity_correlations(np.ones((8, 2)), 4), "'k'"),
    (lambda: parity_feature_correlations(np.ones((2, 4)), [0.0], 0.1, [1]), "'a'"),
    (lambda: parity_feature_correlations(np.ones((1, 4)), [0.0], 0.0, [1]), "'s'"),
    (lambda: parity_feature_correlations(np.ones((1, 4)), [0.0], 0.1, [4]), "'A'"),
    (lambda: parity_feature_correlations(np.ones((1, 4)), [0.0], 0.1, [1, 1]), "'A'"),
    (lambda: parity_feature_correlations(np.ones((1, 4)), [0.0], 0.1, []), "'A'"),
    (lambda: sq_lower_bound(5, 6), "'k'"), (lambda: kernel_lower_bound(0.5, 5, 0.5), "'poly'"),
    (lambda: count_threshold_ceiling("parity"), "'model'"),
    (lambda: finite_sample_step2_cos(parity_mixture(10, 3, 0.5), 0), "'n'"),
    (lambda: finite_sample_step2_cos(parity_mixture(10, 3, 0.5), 10, target=np.zeros(10)), "'target'"),
    (lambda: input_noise_gradient(parity_mixture(30, 3, 0.5), np.zeros(30), 0.0, 0.1, 0.1), "'model'"),
    (lambda: input_noise_gradient(parity_mixture(8, 3, 0.5), np.zeros(7), 0.0, 0.1, 0.1), "'q'"),
    (lambda: input_noise_gradient(parity_mixture(8, 3, 0.5), np.zeros(8), 0.0, 0.0, 0.0), "'s'"),
    (lambda: sigt_general(parity_mixture(8, 3, 0.5), np.ones((8, 8)) * 0.5), "'rho'"),
    (lambda: finite_sample_bias_shift(parity_mixture(8, 3, 0.5), 10, [1.0], [0.0, 1.0], 0.1), "'a1'"),
    (lambda: finite_sample_bias_shift(parity_mixture(8, 3, 0.5), 10, [1.0], [0.0], 0.0), "'s'"),
    (lambda: sigt_general(parity_mixture(8, 3, 0.5), np.eye(8), 0.1), "'d'"),
    (lambda: sigt_general(parity_mixture(8, 3, 0.5), np.eye(8), convention="typeset"), "'convention'"),
])
def test_invalid_input_names_parameter(call, name):
    with pytest.raises(InvalidParameterError, match=name):
        call()
