"""popdyn.models.emergence core: data models, smoothed truncated ReLU, single-neuron population correlations.

Independent computations: quadrature (scipy.integrate.quad) for the smoothed activation, brute-force enumeration
of the full joint law (D <= 14) for the data constants and the correlations, seeded Monte Carlo with per-entry
|z| <= 4.5 (stated per test), a second (numpy) implementation of the Fourier sums, and invariants under
Hypothesis.
"""
import itertools
import math

import numpy as np
import pytest
from hypothesis import example, given, strategies as st
from hypothesis.extra import numpy as hnp
from scipy import integrate
from scipy.stats import norm

from popdyn._validate import InvalidParameterError
from popdyn.models import emergence as em
from popdyn.models.emergence import correlations as corr

PHI0 = 1.0 / math.sqrt(2.0 * math.pi)
# Fourier vs enumeration: both are float64 sums of O(1) terms (trapezoid ~ t_max/h <= 2000 nodes, rotations resynced
# every 16 nodes); observed <= 1.4e-15 over the grids below, so 1e-14 leaves a factor ~7.
EXACT = 1e-14
Z_MAX = 4.5       # per-entry Monte Carlo |z|; with <= 120 entries per test, P(any |z| > 4.5) < 1e-3 under the null


# ---- strategies ----------------------------------------------------------------------------------------------

@st.composite
def small_models(draw, d_max=12):
    """A PatternModel with k <= 4, D <= d_max, a random support (both classes present), optionally row-dependent
    background laws (the paper's mixture kind) or per-coordinate background probabilities."""
    k = draw(st.integers(1, 4))
    D = draw(st.integers(k + 1, d_max))
    cube = np.array(list(itertools.product([0, 1], repeat=k)), float)
    rows = draw(st.lists(st.integers(0, 2 ** k - 1), min_size=2, max_size=2 ** k, unique=True))
    R = len(rows)
    pr = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=R, max_size=R)))
    pr /= pr.sum()
    y = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=R, max_size=R)))
    y[0], y[1] = 1.0, -1.0
    kind = draw(st.sampled_from(["scalar", "vector", "rows"]))
    if kind == "vector":
        p = np.array(draw(st.lists(st.floats(0.05, 0.95), min_size=D - k, max_size=D - k)))
        return em.PatternModel(D, k, cube[rows], pr, y, p)
    if kind == "rows":
        prow = np.array(draw(st.lists(st.sampled_from([0.2, 0.5, 0.7]), min_size=R, max_size=R)))
        return em.PatternModel(D, k, cube[rows], pr, y, float(pr @ prow), p_bg_rows=prow)
    return em.PatternModel(D, k, cube[rows], pr, y, draw(st.floats(0.05, 0.95)))


def neuron_of(model, draw_scale=1.0, seed=0):
    k = model.k
    rng = np.random.default_rng(seed)
    return rng.normal(0, draw_scale / k, model.D), float(rng.normal(0, 1 / k ** 2))


def joint_law(model):
    """Brute force: every (row, background configuration) with its probability, phi~ (n, D) and y (n,)."""
    nb = model.D - model.k
    bg = np.array(list(itertools.product([0, 1], repeat=nb)), float).reshape(2 ** nb, nb)
    P, grp = model.background_groups()
    probs, phis, ys = [], [], []
    for r in range(len(model.labels)):
        pb = np.prod(np.where(bg == 1, P[grp[r]], 1 - P[grp[r]]), axis=1)
        probs.append(model.A_probs[r] * pb)
        phis.append(np.hstack([np.repeat(model.A_support[r][None], len(bg), 0), bg]))
        ys.append(np.full(len(bg), model.labels[r]))
    return np.concatenate(probs), np.vstack(phis), np.concatenate(ys)


def brute_correlations(model, q, b, s):
    """T, Tb, Ta, beta straight from the definitions over the joint law (no use of the model's moments)."""
    pr, phit, y = joint_law(model)
    mean = pr @ phit
    sigt = math.sqrt(pr @ ((phit - mean) ** 2).sum(1))
    phi = (phit - mean) / sigt
    z = phi @ q + b
    win = em.window(z, s)
    zb = phi[:, model.k:] @ q[model.k:] + b
    return ((pr * y * win) @ phi, pr @ (y * win), pr @ (y * em.smooth_trunc_relu(z, s)), pr @ em.window(zb, s))


def assert_param_error(name, fn, *args, **kw):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        fn(*args, **kw)


# ---- activation ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("s", [0.01, 0.0894, 0.5, 3.0])
def test_smooth_activation_and_window_against_quadrature(s):
    """sigma~_s = E sigma(z + s xi) and win_s = P(z + s xi in (0,1)) by quad (epsabs 1e-13) at 13 points."""
    for z in np.linspace(-2, 3, 13):
        ref, err = integrate.quad(lambda x: min(1, max(z + s * x, 0)) * norm.pdf(x), -40, 40,
                                  points=[-z / s, (1 - z) / s], epsabs=1e-14, limit=200)
        assert abs(float(em.smooth_trunc_relu(z, s)) - ref) < 1e-12 + 10 * err  # quad accuracy, not ours
        pw = norm.cdf((1 - z) / s) - norm.cdf(-z / s)                        # scipy.stats, a separate Phi
        assert abs(float(em.window(z, s)) - pw) < 1e-15


@pytest.mark.parametrize("s", [0.05, 0.3, 1.0])
def test_window_is_the_derivative_and_window_derivs_by_differences(s):
    """Central differences (step 1e-5 -> error ~ f''' h^2 / 6 + 1e-16/h <= 1e-8 at s >= 0.05)."""
    b = np.linspace(-0.5, 1.5, 41)
    dh = 1e-5
    h, h1, h2 = em.window_derivs(b, s)
    np.testing.assert_allclose(h, em.window(b, s), atol=0, rtol=0)
    fd = (em.smooth_trunc_relu(b + dh, s) - em.smooth_trunc_relu(b - dh, s)) / (2 * dh)
    assert np.abs(fd - h).max() < 1e-8 / s ** 2
    assert np.abs((em.window(b + dh, s) - em.window(b - dh, s)) / (2 * dh) - h1).max() < 1e-8 / s ** 3
    w1p, w1m = em.window_derivs(b + dh, s)[1], em.window_derivs(b - dh, s)[1]
    assert np.abs((w1p - w1m) / (2 * dh) - h2).max() < 1e-8 / s ** 4


@given(z=st.floats(-50, 50), s=st.floats(1e-4, 20))
@example(z=0.0, s=1e-4).via("kink at 0")
@example(z=1.0, s=1e-4).via("kink at 1")
@example(z=1e-4, s=2.0 ** -8).via("found: 1 - z rounds, and win' = phi(0)/s amplifies it")
@example(z=26.690577839831462, s=1e-4).via("found: normal_pdf(z/s) was nan (0 * inf in the split) far out")
def test_activation_properties(z, s):
    """sigma~(z) + sigma~(1-z) = 1; 0 <= sigma~ <= 1; win in [0,1], win(z) = win(1-z) up to the
    rounding of 1 - z (1.1e-16) times the slope phi(0)/s; |sigma~_s - sigma| <= s phi(0) (each relu is smoothed
    by at most s phi(0), with opposite signs)."""
    f, g = float(em.smooth_trunc_relu(z, s)), float(em.smooth_trunc_relu(1 - z, s))
    assert abs(f + g - 1) < 1e-15 and 0 <= f <= 1
    w = float(em.window(z, s))
    assert 0 <= w <= 1 and abs(w - float(em.window(1 - z, s))) < 1e-15 + 1.1e-16 * PHI0 / s
    assert abs(f - min(1, max(z, 0))) <= s * PHI0 + 1e-15


def test_activation_s_zero_is_the_truncated_relu_and_bad_s():
    z = np.array([-1.0, 0.0, 0.3, 1.0, 2.0])
    np.testing.assert_array_equal(em.smooth_trunc_relu(z, 0.0), [0, 0, 0.3, 1, 1])
    np.testing.assert_array_equal(em.window(z, 0.0), [0, 0, 1, 0, 0])
    for fn in (em.smooth_trunc_relu, em.window):
        assert_param_error("s", fn, z, -0.1)
        assert_param_error("s", fn, z, float("nan"))
    assert_param_error("s", em.window_derivs, z, 0.0)


# ---- data models ---------------------------------------------------------------------------------------------

@given(small_models(d_max=10))
def test_moments_against_the_joint_law(model):
    """By brute force over the joint law: E||phi||^2 = 1, E[y phi_j] = gamma_j/sigt on A and 0 off A,
    sigt^2 = trace Cov(phi~), E y, mu_A; the weighted identities E[alpha_y y] = 0 and
    E[alpha_y y phi~_j] = (gamma_+ + gamma_-)/2. Tolerance 1e-12: sums of <= 2^10 float64 terms."""
    mom = model.moments()
    pr, phit, y = joint_law(model)
    mean = pr @ phit
    cov_trace = pr @ ((phit - mean) ** 2).sum(1)
    assert abs(cov_trace - mom.sigt ** 2) < 1e-12
    phi = (phit - mean) / mom.sigt
    assert abs(pr @ (phi ** 2).sum(1) - 1) < 1e-12
    Eyphi = (pr * y) @ phi
    np.testing.assert_allclose(Eyphi[:model.k], mom.gamma / mom.sigt, atol=1e-12)
    np.testing.assert_allclose(mom.E_y_phi_A, mom.gamma / mom.sigt, atol=1e-15)
    if model.p_bg_rows is None:
        np.testing.assert_allclose(Eyphi[model.k:], 0, atol=1e-12)
    assert abs(pr @ y - mom.Ey) < 1e-12 and abs(mean[:model.k].sum() - mom.mu_A) < 1e-12
    alpha = np.where(y > 0, 0.5 / mom.p_plus, 0.5 / (1 - mom.p_plus))
    assert abs(pr @ (alpha * y)) < 1e-12
    g_plus = (pr * (y > 0)) @ phit[:, :model.k] / mom.p_plus             # gamma_v = E[y phi~ | y = v]
    g_minus = -(pr * (y < 0)) @ phit[:, :model.k] / (1 - mom.p_plus)
    np.testing.assert_allclose((pr * alpha * y) @ phit[:, :model.k], (g_plus + g_minus) / 2, atol=1e-12)
    np.testing.assert_allclose(mom.gamma_weighted, (g_plus + g_minus) / 2, atol=1e-12)
    P2 = model.mixed_moments(2)
    np.testing.assert_allclose(P2, np.einsum("n,nj,nl->jl", pr * y, phi[:, :model.k], phi[:, :model.k]),
                               atol=1e-12)


@pytest.mark.parametrize("k", [3, 5, 7])
@pytest.mark.parametrize("p_o", [0.1, 0.3, 0.5])
def test_parity_mixture_constants(k, p_o):
    """Parity mixture: gamma = (1 - p_o)/2, E y = 0, A-marginals 1/2, sigt^2 = D/4 at p_o = 1/2; order-2 mixed
    moments vanish for k >= 3; counts law."""
    for indep in (True, False) if p_o < 2 / 3 else (True,):
        model = em.parity_mixture(30, k, p_o, independent_background=indep)
        mom = model.moments()
        np.testing.assert_allclose(mom.gamma, (1 - p_o) / 2, atol=1e-15)
        assert abs(mom.Ey) < 1e-15 and np.allclose(mom.mean_A, 0.5, atol=1e-15)
        assert abs(mom.sigt ** 2 - (k / 4 + (30 - k) * p_o * (1 - p_o))) < 1e-12
        assert np.abs(model.mixed_moments(2)).max() < 1e-15
        pi_c, y_c = model.count_law()
        np.testing.assert_array_equal(y_c, np.where(np.arange(k + 1) % 2 == 1, 1, -1))
        assert abs(pi_c[0] - (p_o * 2.0 ** -k + (1 - p_o) / 2)) < 1e-15


@pytest.mark.parametrize("p_o", [0.3, 0.5])
def test_paper_mixture_background_correlation(p_o):
    """Erratum 8: in the paper's D_A^mix, background pairs have corr ((1 - 2p_o)/(2(1 - p_o)))^2 (0 at p_o = 1/2),
    computed here from the row laws by enumeration of two background coordinates."""
    model = em.parity_mixture(8, 3, p_o, independent_background=False)
    pr, phit, _ = joint_law(model)
    x = phit[:, 3:5]
    m = pr @ x
    cov = pr @ ((x[:, 0] - m[0]) * (x[:, 1] - m[1]))
    assert abs(cov / (p_o * (1 - p_o)) - ((1 - 2 * p_o) / (2 * (1 - p_o))) ** 2) < 1e-12
    assert np.allclose(m, p_o, atol=1e-15)


def test_sampling_matches_the_moments():
    """Monte Carlo (n = 2e5, seed 1) of the sampler against exact E phi = 0, E[y phi], E y, E||phi||^2:
    |z| <= 4.5 per entry. Balanced sampling has exactly n/2 of each class; input coords are M phi."""
    model = em.parity_mixture(20, 3, 0.3, independent_background=False, M=em.random_dictionary(40, 20, seed=3))
    mom = model.moments()
    n = 200_000
    X, y, c = model.sample(n, seed=1)
    ref = np.r_[mom.gamma / mom.sigt, np.zeros(17)]
    for vals, target in ((X, 0.0), (y[:, None] * X, ref), (y[:, None], mom.Ey), ((X ** 2).sum(1)[:, None], 1.0)):
        z = (vals.mean(0) - target) / (vals.std(0) / math.sqrt(n))
        assert np.abs(z).max() < Z_MAX
    np.testing.assert_array_equal(c, np.rint(X[:, :3] * mom.sigt + mom.mean_A).sum(1))
    Xb, yb, _ = model.sample(1000, seed=2, balanced=True)
    assert yb.sum() == 0
    Xi, yi, _ = model.sample(50, seed=4, coords="input")
    Xp, yp, _ = model.sample(50, seed=4)
    np.testing.assert_allclose(Xi, Xp @ model.M.T, atol=1e-14)
    np.testing.assert_array_equal(yi, yp)


def test_iid_block_interval_hidden_and_no_structure():
    """Binomial laws by hand; interval P(y = +1) = P(Bin(k, p_A) in [t1, t2]); hidden representation has 2n
    distinct rows with n labels each; no_structure is uniform with p_bg = 1/2 and kills gamma for the parity."""
    from scipy.stats import binom
    m = em.iid_block_model(12, 6, 0.6, 0.3, [2, 5])
    pi_c, y_c = m.count_law()
    np.testing.assert_allclose(pi_c, binom.pmf(np.arange(7), 6, 0.6), atol=1e-15)
    np.testing.assert_array_equal(y_c, [-1, -1, 1, -1, -1, 1, -1])
    iv = em.interval_labeling(40, 15)
    assert abs(iv.moments().p_plus - binom.sf(9, 15, 2 / 3)) < 1e-13
    hr = em.hidden_representation(60, 20, n_per_class=10, seed=5)
    assert len({tuple(r) for r in hr.A_support}) == 20 and hr.labels.sum() == 0
    assert np.ptp(hr.moments().gamma) > 0                                   # (A1)'s common gamma fails
    ns = em.no_structure(em.parity_mixture(20, 5, 0.5))
    assert np.abs(ns.moments().gamma).max() < 1e-15 and ns.p_bg == 0.5
    ns_iv = em.no_structure(iv.__class__(iv.D, iv.k, iv.A_support, iv.A_probs, iv.labels, iv.p_bg))
    assert abs(ns_iv.moments().p_plus - binom.sf(9, 15, 0.5)) < 1e-13
    with pytest.raises(InvalidParameterError, match="'model'"):
        em.no_structure(hr)                                                 # labels undefined off the support


def test_exchangeable_model_matches_its_explicit_support():
    """The count-resolved iid block (binomial sums, falling factorials) = its explicit 2^k PatternModel: every
    moment, both mixed-moment orders (1e-15: sums of k + 1 terms vs 2^k terms); iid_block_model switches form
    above k = 16; the paper's interval labeling (k = 30) has P(y = 1) = P(Bin(30, 2/3) >= 20) = 0.5848 and
    gamma = 0.0680 (docs/emergence.md)."""
    from scipy.stats import binom
    ex = em.ExchangeablePatternModel(14, 6, 0.6, np.linspace(0.2, 0.8, 8), (2, 5))
    pm = ex.to_pattern_model()
    a, b = ex.moments(), pm.moments()
    for f in a.__dataclass_fields__:
        assert np.abs(np.asarray(getattr(a, f)) - np.asarray(getattr(b, f))).max() < 1e-15
    for o in (2, 3):
        assert np.abs(ex.mixed_moments(o) - pm.mixed_moments(o)).max() < 1e-15
    assert isinstance(em.iid_block_model(30, 16, 0.5, 0.5, [3]), em.PatternModel)
    iv = em.interval_labeling(100, 30)
    assert isinstance(iv, em.ExchangeablePatternModel)
    mom = iv.moments()
    assert abs(mom.p_plus - binom.sf(19, 30, 2 / 3)) < 1e-14 and round(mom.p_plus, 4) == 0.5848
    assert round(float(mom.gamma[0]), 4) == 0.0680
    assert abs(em.no_structure(iv).moments().p_plus - binom.sf(19, 30, 0.5)) < 1e-14
    n = 100_000
    X, y, c = iv.sample(n, seed=3)
    for vals, target in ((X, 0.0), (y[:, None] * X, np.r_[mom.E_y_phi_A, np.zeros(70)])):
        assert np.abs((vals.mean(0) - target) / (vals.std(0) / math.sqrt(n))).max() < Z_MAX
    assert iv.sample(1000, seed=1, balanced=True)[1].sum() == 0
    assert_param_error("positive_counts", em.ExchangeablePatternModel, 40, 30, 0.5, 0.5, tuple(range(31)))
    assert_param_error("p_A", em.ExchangeablePatternModel, 40, 30, 1.5, 0.5, (3,))
    assert_param_error("k", em.ExchangeablePatternModel, 30, 30, 0.5, 0.5, (3,))


def test_gaussian_parity_mixture_sampling():
    """Labels are prod eps; the noise has variance tau^2 = sigma_r^2 k / d per coordinate (n = 1e5, |z| <= 4.5
    on the variance of the projection orthogonal to M)."""
    d, k = 25, 4
    g = em.GaussianParityMixture(d, k, 0.7, em.random_dictionary(d, k, seed=0))
    X, y = g.sample(100_000, seed=3)
    eps = np.sign(X @ g.M)                          # tau = 0.28: P(sign flip) = Phi(-1/0.28) = 1.8e-4 per coordinate
    assert np.mean(eps.prod(1) == y) > 0.99
    r = X - (X @ g.M) @ g.M.T
    v = (r ** 2).sum(1) / (d - k)
    assert abs((v.mean() - g.tau2) / (v.std() / math.sqrt(len(v)))) < Z_MAX


def test_bad_inputs_name_the_parameter():
    """k >= D, p outside (0, 1), one-class supports, malformed supports and dictionaries."""
    cube = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], float)
    ok = dict(D=5, k=2, A_support=cube, A_probs=np.full(4, 0.25), labels=np.array([1, -1, -1, 1.0]), p_bg=0.5)
    assert_param_error("k", em.PatternModel, **{**ok, "D": 2})
    assert_param_error("k", em.parity_mixture, 5, 5, 0.5)
    assert_param_error("k", em.parity_mixture, 5, 7, 0.5)
    for p in (0.0, 1.0, -0.2, float("nan")):
        assert_param_error("p_bg", em.PatternModel, **{**ok, "p_bg": p})
        assert_param_error("p_o", em.parity_mixture, 10, 3, p)
        assert_param_error("p_A", em.iid_block_model, 10, 3, p, 0.5, [1])
        assert_param_error("p_bg", em.iid_block_model, 10, 3, 0.5, p, [1])
    assert_param_error("p_o", em.parity_mixture, 10, 3, 0.7, independent_background=False)
    assert_param_error("labels", em.PatternModel, **{**ok, "labels": np.ones(4)})
    assert_param_error("labels", em.PatternModel, **{**ok, "labels": -np.ones(4)})
    assert_param_error("labels", em.PatternModel, **{**ok, "A_probs": np.array([0.5, 0, 0, 0.5])})  # no -1 mass
    assert_param_error("positive_counts", em.iid_block_model, 10, 3, 0.5, 0.5, [0, 1, 2, 3])
    assert_param_error("positive_counts", em.iid_block_model, 10, 3, 0.5, 0.5, [4])
    assert_param_error("A_support", em.PatternModel, **{**ok, "A_support": cube * 2})
    assert_param_error("A_probs", em.PatternModel, **{**ok, "A_probs": np.full(4, 0.3)})
    assert_param_error("p_bg", em.PatternModel, **{**ok, "p_bg": np.full(2, 0.5)})
    assert_param_error("M", em.PatternModel, **{**ok, "M": np.ones((6, 5))})
    assert_param_error("sigma_zeta", em.PatternModel, **{**ok, "sigma_zeta": -0.1})
    assert_param_error("p_bg_rows", em.PatternModel, **{**ok, "p_bg_rows": np.full(4, 0.3)})


# ---- correlations: exactness -----------------------------------------------------------------------------------

MODELS_EXACT = [
    ("parity p=1/2", lambda: em.parity_mixture(14, 3, 0.5)),
    ("parity p=0.2 indep", lambda: em.parity_mixture(13, 3, 0.2)),
    ("paper mixture p=0.3", lambda: em.parity_mixture(13, 3, 0.3, independent_background=False)),
    ("iid block", lambda: em.iid_block_model(12, 4, 0.6, 0.3, [1, 3])),
    ("per-coordinate p", lambda: em.PatternModel(9, 2, np.array([[0, 0], [1, 1], [0, 1.]]), np.array([.5, .3, .2]),
                                                 np.array([1, -1, 1.]), np.linspace(0.1, 0.9, 7))),
]


@pytest.mark.parametrize("name,make", MODELS_EXACT, ids=[m[0] for m in MODELS_EXACT])
@pytest.mark.parametrize("s", [0.03, 3 ** -1.5, 0.5])
def test_fourier_equals_enumeration_and_brute_force(name, make, s):
    """Fourier = enumeration = the definitions summed over the joint law, to 1e-14, for 4 neurons
    (typical init scale and 5x larger q)."""
    model = make()
    rng = np.random.default_rng(7)
    Q = np.vstack([rng.normal(0, sc / model.k, model.D) for sc in (1, 1, 5, 5)])
    b = rng.normal(0, 0.3, 4)
    F = em.neuron_correlations(model, Q, b, s)
    E = em.neuron_correlations(model, Q, b, s, method="enumerate")
    for f, e in zip(F, E):
        assert np.abs(np.asarray(f) - np.asarray(e)).max() < EXACT
    for i in range(4):
        ref = brute_correlations(model, Q[i], b[i], s)
        got = (F.T[i], F.Tb[i], F.Ta[i], F.beta[i])
        for f, r in zip(got, ref):
            assert np.abs(f - r).max() < EXACT


@given(model=small_models(d_max=11), data=st.data())
def test_fourier_equals_enumeration_property(model, data):
    """Fourier over random members (per-coordinate and row-dependent backgrounds), q, b and s in [0.02, 5]."""
    q = data.draw(hnp.arrays(np.float64, model.D, elements=st.floats(-1.5, 1.5)))
    b = data.draw(st.floats(-1.5, 2.5))
    s = data.draw(st.floats(0.02, 5.0))
    F = em.neuron_correlations(model, q, b, s)
    E = em.neuron_correlations(model, q, b, s, method="enumerate")
    for f, e in zip(F, E):
        assert np.abs(np.asarray(f) - np.asarray(e)).max() < EXACT


@pytest.mark.parametrize("s", [0.03, 0.3])
def test_count_resolved_fourier_equals_explicit_support(s):
    """The O(k^2)-per-node generating-function kernel = the per-row Fourier kernel on the explicit support =
    enumeration (k = 6, D = 14, per-coordinate background), to 1e-14, for 4 neurons."""
    ex = em.ExchangeablePatternModel(14, 6, 0.6, np.linspace(0.2, 0.8, 8), (2, 5))
    rng = np.random.default_rng(0)
    Q, b = rng.normal(0, 0.3, (4, 14)), rng.normal(0, 0.3, 4)
    F = em.neuron_correlations(ex, Q, b, s)
    for other in (em.neuron_correlations(ex.to_pattern_model(), Q, b, s),
                  em.neuron_correlations(ex, Q, b, s, "enumerate")):
        for f, g in zip(F, other):
            assert np.abs(np.asarray(f) - np.asarray(g)).max() < EXACT


def test_count_resolved_fourier_against_monte_carlo_interval_k30():
    """The paper's interval labeling (D = 100, k = 30, E2), sigma_w = 1/k, s = k^-3/2: 2 neurons, n = 2e5 (seed 3),
    |z| <= 4.5 on T_A, T_b, T_a, beta (66 entries); chi-square of T_B within df +- 4 sqrt(2 df)."""
    iv = em.interval_labeling(100, 30)
    rng = np.random.default_rng(0)
    Q, b, s = rng.normal(0, 1 / 30, (2, 100)), rng.normal(0, 1 / 900, 2), 30 ** -1.5
    F = em.neuron_correlations(iv, Q, b, s)
    mean, se = em.mc_correlations(iv, Q, b, s, 200_000, seed=3)
    z = (mean.T - F.T) / se.T
    assert np.abs(z[:, :30]).max() < Z_MAX
    for key in ("Tb", "Ta", "beta"):
        assert np.abs((getattr(mean, key) - getattr(F, key)) / getattr(se, key)).max() < Z_MAX
    assert abs((z[:, 30:] ** 2).sum() - z[:, 30:].size) < 4 * math.sqrt(2 * z[:, 30:].size)


def test_numpy_baseline_equals_numba_kernel():
    """The vectorised numpy Fourier sums (the benchmark baseline) = the numba kernel, D = 100, 8 neurons, also with
    a row-dependent background (different grids per chunk vs per neuron: agreement is a check of the grid too)."""
    for model in (em.parity_mixture(100, 5, 0.5), em.parity_mixture(60, 5, 0.3, independent_background=False)):
        rng = np.random.default_rng(1)
        Q = rng.normal(0, 1 / 5, (8, model.D))
        b = rng.normal(0, 1 / 25, 8)
        for f, g in zip(em.neuron_correlations(model, Q, b, 5 ** -1.5), corr._fourier_numpy(model, Q, b, 5 ** -1.5)):
            assert np.abs(np.asarray(f) - np.asarray(g)).max() < EXACT


def test_fourier_against_monte_carlo_at_paper_scale():
    """D = 100, k = 5, p_o = 1/2, sigma_w = 1/k, sigma_b = 1/k^2, s = k^-3/2 (docs/emergence.md): 3 neurons, n = 2e5
    (seed 11); per-entry |z| <= 4.5 for T_A, T_b, T_a, beta (18 entries) and the aggregate chi-square of T_B
    (285 entries) within df +- 4 sqrt(2 df). MC cannot resolve T_B entrywise."""
    model = em.parity_mixture(100, 5, 0.5)
    rng = np.random.default_rng(0)
    Q = rng.normal(0, 1 / 5, (3, 100))
    b = rng.normal(0, 1 / 25, 3)
    s = 5 ** -1.5
    F = em.neuron_correlations(model, Q, b, s)
    mean, se = em.mc_correlations(model, Q, b, s, 200_000, seed=11)
    for key in ("Tb", "Ta", "beta"):
        assert np.abs((getattr(mean, key) - getattr(F, key)) / getattr(se, key)).max() < Z_MAX
    z = (mean.T - F.T) / se.T
    assert np.abs(z[:, :5]).max() < Z_MAX
    chi2, df = (z[:, 5:] ** 2).sum(), z[:, 5:].size
    assert abs(chi2 - df) < 4 * math.sqrt(2 * df)
    assert 0.9999 < F.T[0, :5].sum() / (math.sqrt(5) * np.linalg.norm(F.T[0])) <= 1   # reference: 0.999998


# ---- correlations: identities and invariances ------------------------------------------------------------------

@given(model=small_models(d_max=14), data=st.data())
def test_zero_A_part_identity(model, data):
    """q_A = 0 and E y = 0 => T_A = (gamma/sigt) beta, T_B = T_b = T_a = 0 (balanced support forced by
    reweighting the classes); q_B = 0 => T_B = 0 (any member with an independent background)."""
    pr = model.A_probs * np.where(model.labels > 0, 0.5 / model.A_probs[model.labels > 0].sum(),
                                  0.5 / model.A_probs[model.labels < 0].sum())
    bal = em.PatternModel(model.D, model.k, model.A_support, pr, model.labels, model.p_bg if model.p_bg_rows is None
                          else 0.4)
    q = data.draw(hnp.arrays(np.float64, model.D, elements=st.floats(-1, 1)))
    b, s = data.draw(st.floats(-1, 2)), data.draw(st.floats(0.03, 3))
    q0 = q.copy()
    q0[:model.k] = 0
    T, Tb, Ta, beta = em.neuron_correlations(bal, q0, b, s)
    mom = bal.moments()
    np.testing.assert_allclose(T[:model.k], mom.gamma / mom.sigt * beta, atol=EXACT)
    assert np.abs(T[model.k:]).max() < EXACT and abs(Tb) < EXACT and abs(Ta) < EXACT
    qB0 = q.copy()
    qB0[model.k:] = 0
    assert np.abs(em.neuron_correlations(bal, qB0, b, s).T[model.k:]).max() < EXACT


def test_class_weighted_correlations():
    """App. F weighted loss (docs/emergence.md): with y -> alpha_y y, an unbalanced member with q_A = 0 has
    T_A = (gamma_w / sigt) beta with gamma_w = E[alpha_y y phi~_j] and T_B = T_b = T_a = 0 (E[alpha_y y] = 0);
    weighted Fourier = weighted enumeration = the count-resolved kernel (1e-14) and = MC (n = 1e5, |z| <= 4.5)."""
    ex = em.ExchangeablePatternModel(13, 5, 0.6, 0.35, (4, 5))             # P(y = 1) = 0.337
    pm = ex.to_pattern_model()
    rng = np.random.default_rng(2)
    q, b, s = rng.normal(0, 0.3, 13), 0.15, 0.12
    F = em.neuron_correlations(pm, q, b, s, class_weighted=True)
    for other in (em.neuron_correlations(pm, q, b, s, "enumerate", class_weighted=True),
                  em.neuron_correlations(ex, q, b, s, class_weighted=True)):
        for f, g in zip(F, other):
            assert np.abs(np.asarray(f) - np.asarray(g)).max() < EXACT
    mean, se = em.mc_correlations(pm, q, b, s, 100_000, seed=4, class_weighted=True)
    assert np.abs((mean.T[:5] - F.T[:5]) / se.T[:5]).max() < Z_MAX and abs((mean.Tb - F.Tb) / se.Tb) < Z_MAX
    q0 = np.r_[np.zeros(5), q[5:]]
    mom = pm.moments()
    for model in (pm, ex):
        T, Tb, Ta, beta = em.neuron_correlations(model, q0, b, s, class_weighted=True)
        np.testing.assert_allclose(T[:5], mom.gamma_weighted / mom.sigt * beta, atol=EXACT)
        assert np.abs(T[5:]).max() < EXACT and abs(Tb) < EXACT and abs(Ta) < EXACT
    assert abs(em.neuron_correlations(pm, q0, b, s).Tb) > 0.01                 # unweighted: E y != 0 shows
    rare = em.iid_block_model(32, 30, 1e-12, 0.5, [30])                          # P(y = 1) = 1e-360 underflows to 0
    em.neuron_correlations(rare, np.zeros(32), b, s)
    with pytest.raises(InvalidParameterError, match="'class_weighted'"):
        em.neuron_correlations(rare, np.zeros(32), b, s, class_weighted=True)
    with pytest.raises(InvalidParameterError, match="'class_weighted' parameter of emergence.mc_correlations"):
        em.mc_correlations(rare, np.zeros(32), b, s, 100, class_weighted=True)
    with pytest.raises(InvalidParameterError, match="'model' parameter of emergence.class_weighted_moments"):
        em.class_weighted_moments(rare)
    with pytest.raises(InvalidParameterError, match="'weighted' parameter of emergence.population_gradient"):
        em.population_gradient(rare, em.TwoLayerParams(np.zeros((1, 32)), np.array([b]), np.ones(1)), s,
                               weighted=True)


def test_input_noise_stein_term():
    """App. F input noise (docs/emergence.md): x = M phi + zeta/sigt. Exact: Fourier = numpy Fourier = enumeration =
    the joint law with total smoothing s_t^2 = s^2 + szeta2 ||q||^2 plus szeta2 q_j E[y h'(c)] (1e-14), for the
    paper's mixture with a dictionary (d = 20). Monte Carlo of the sampler (n = 2e5, seed 2): |z| <= 4.5, while
    dropping the Stein term gives |z| > 4.5 (the check has power at sigma_zeta = 0.5)."""
    base = em.parity_mixture(12, 3, 0.3, independent_background=False)
    m = em.PatternModel(12, 3, base.A_support, base.A_probs, base.labels, 0.3, p_bg_rows=base.p_bg_rows,
                        M=em.random_dictionary(20, 12, seed=1), sigma_zeta=0.5)
    mom = m.moments()
    assert abs(mom.sigt ** 2 - base.moments().sigt ** 2 - 20 * 0.25) < 1e-12
    rng = np.random.default_rng(0)
    Q, b, s = rng.normal(0, 0.5, (3, 12)), rng.normal(0, 0.2, 3), 0.05
    F = em.neuron_correlations(m, Q, b, s)
    for other in (em.neuron_correlations(m, Q, b, s, "enumerate"), corr._fourier_numpy(m, Q, b, s)):
        for f, g in zip(F, other):
            assert np.abs(np.asarray(f) - np.asarray(g)).max() < EXACT
    pr, phit, y = joint_law(m)
    phi = (phit - pr @ phit) / mom.sigt
    stein = np.empty_like(Q)
    for i in range(3):
        st_ = math.sqrt(s ** 2 + mom.szeta2 * Q[i] @ Q[i])
        z = phi @ Q[i] + b[i]
        stein[i] = mom.szeta2 * Q[i] * ((pr * y) @ em.window_derivs(z, st_)[1])
        T = (pr * y * em.window(z, st_)) @ phi + stein[i]
        assert np.abs(T - F.T[i]).max() < EXACT and abs(pr @ (y * em.window(z, st_)) - F.Tb[i]) < EXACT
    mean, se = em.mc_correlations(m, Q, b, s, 200_000, seed=2)
    assert np.abs((mean.T - F.T) / se.T).max() < Z_MAX
    assert np.abs((mean.T - (F.T - stein)) / se.T).max() > Z_MAX
    for key in ("Tb", "Ta", "beta"):
        assert np.abs((getattr(mean, key) - getattr(F, key)) / getattr(se, key)).max() < Z_MAX
    X, _, _ = m.sample(100_000, seed=3, coords="input")
    v = (X ** 2).sum(1)
    assert abs((v.mean() - 1) / (v.std() / math.sqrt(len(v)))) < Z_MAX                # E||x||^2 = 1


def test_equivariance_and_symmetries():
    """Permuting background indices permutes T_B; permuting A-indices permutes T_A (exchangeable
    parity law); q_A prop. to 1 => T_A prop. to 1; at p_o = 1/2 flipping q_l (l in B) flips T_l only, and
    beta(b) = beta(1 - b)."""
    model = em.parity_mixture(40, 5, 0.5)
    rng = np.random.default_rng(3)
    q, b, s = rng.normal(0, 0.2, 40), 0.07, 0.1
    T0 = em.neuron_correlations(model, q, b, s).T
    perm = np.r_[rng.permutation(5), 5 + rng.permutation(35)]
    np.testing.assert_allclose(em.neuron_correlations(model, q[perm], b, s).T, T0[perm], atol=EXACT)
    q1 = q.copy()
    q1[:5] = 0.3
    TA = em.neuron_correlations(model, q1, b, s).T[:5]
    assert np.ptp(TA) < EXACT
    qf = q.copy()
    qf[7] *= -1
    Tf = em.neuron_correlations(model, qf, b, s).T
    assert abs(Tf[7] + T0[7]) < EXACT
    np.testing.assert_allclose(np.delete(Tf, 7), np.delete(T0, 7), atol=EXACT)
    bs = np.array([-0.3, 0.1, 0.45])
    Q = np.repeat(q[None], 3, 0)
    np.testing.assert_allclose(em.neuron_correlations(model, Q, bs, s).beta,
                               em.neuron_correlations(model, Q, 1 - bs, s).beta, atol=EXACT)


def test_large_s_limit_is_order_one_over_s():
    """s T_A -> phi(0) gamma/sigt, and the remainder falls like 1/s^2 (ratio of remainders at s and 2s
    in [3.5, 4.5]: the next term of win_s = phi(0)/s (1 - E(u - z)^2 / (2 s^2) + O(s^-4)))."""
    model = em.parity_mixture(30, 3, 0.5)
    q, b = neuron_of(model)
    mom = model.moments()
    rem = [np.abs(s * em.neuron_correlations(model, q, b, s).T[:3] - PHI0 * mom.gamma / mom.sigt).max()
           for s in (20.0, 40.0)]
    assert 3.5 < rem[0] / rem[1] < 4.5 and rem[0] < 1e-3


def test_small_q_expansion_of_the_background_part():
    """Step-2 expansion (docs/emergence.md): at q = eps T^(1), b = b0 + eps T_b^(1), the exact T_B equals
    h''(b) sigma_phi^2 q_j sum_r pi_r y_r <q_A, phi_A^(r)> to relative 10 eps, and T_A -> h(b) gamma/sigt
    (difference O(eps^2))."""
    k, s = 5, 5 ** -1.5
    m = em.parity_mixture(100, k, 0.5)
    mom = m.moments()
    rng = np.random.default_rng(4)
    q0, b0 = rng.normal(0, 1 / k, 100), 1.3 / k ** 2
    T1, Tb1, _, _ = em.neuron_correlations(m, q0, b0, s)
    w, phA = m.A_probs * m.labels, m.phi_A()
    for eps in (1e-3, 1e-2, 1e-1):
        q1, b1 = eps * T1, b0 + eps * Tb1
        T2 = em.neuron_correlations(m, q1, b1, s).T
        h, _, h2 = em.window_derivs(b1, s)
        pred = h2 * q1[k:] * mom.sphi2 * (w @ (phA @ q1[:k]))
        assert abs(np.linalg.norm(T2[k:]) / np.linalg.norm(pred) - 1) < 10 * eps
        assert np.corrcoef(T2[k:], pred)[0, 1] > 1 - 10 * eps
        # observed |T_A - h gamma/sigt| = 0.0037 eps^2 h gamma/sigt (E[y phi_j phi_l] = 0 on A kills the O(eps) term)
        assert np.abs(T2[:k] - h * mom.gamma / mom.sigt).max() < 0.05 * eps ** 2 * abs(h * mom.gamma[0] / mom.sigt)


def test_clt_error_within_berry_esseen_and_falls_with_D():
    """The CLT ("gauss") approximation: |gauss - fourier| <= the Berry-Esseen bound for T_A, T_b, T_a, and at fixed
    ||q_B||^2 sigma_phi^2 the T_A error falls with D (~1/D at p = 1/2: 1.3e-3 ... 5e-5)."""
    errs = []
    for D in (25, 100, 400):
        model = em.parity_mixture(D, 5, 0.5)
        rng = np.random.default_rng(4)
        q = np.r_[rng.normal(0, 0.2, 5), rng.normal(0, 1, D - 5) * math.sqrt(0.04 * 95 / (D - 5))]
        F = em.neuron_correlations(model, q, 0.03, 5 ** -1.5)
        G = em.neuron_correlations(model, q, 0.03, 5 ** -1.5, method="gauss")
        eW, eTA, eTb, eTa = em.clt_error_bound(model, q, 0.03, 5 ** -1.5)
        assert np.all(np.abs(G.T[:5] - F.T[:5]) <= eTA) and abs(G.Tb - F.Tb) <= eTb and abs(G.Ta - F.Ta) <= eTa
        assert abs(G.beta - F.beta) <= eW
        errs.append(np.abs(G.T[:5] - F.T[:5]).max() / np.abs(F.T[:5]).max())
        assert np.corrcoef(G.T[5:], F.T[5:])[0, 1] > 0.99
    assert errs[0] > 2 * errs[1] > 4 * errs[2]


def test_gauss_is_exact_without_background_and_mc_accepts_s_zero():
    """q_B = 0: the background does not enter and "gauss" = "fourier" exactly; the Berry-Esseen bound is 0.
    s = 0 is refused by "fourier" (naming s) and accepted by "enumerate" and "mc" (truncated ReLU, open window)."""
    model = em.parity_mixture(10, 3, 0.5)
    q = np.r_[0.2, -0.1, 0.3, np.zeros(7)]
    for f, g in zip(em.neuron_correlations(model, q, 0.1, 0.2), em.neuron_correlations(model, q, 0.1, 0.2, "gauss")):
        assert np.abs(np.asarray(f) - np.asarray(g)).max() < EXACT
    assert em.clt_error_bound(model, q, 0.1, 0.2)[0] == 0.0
    assert_param_error("s", em.neuron_correlations, model, q, 0.1, 0.0)
    E = em.neuron_correlations(model, q + 0.05, 0.1, 0.0, method="enumerate")
    mean, se = em.mc_correlations(model, q + 0.05, 0.1, 0.0, 100_000, seed=2)
    assert np.abs((mean.T[:3] - E.T[:3]) / se.T[:3]).max() < Z_MAX


def test_correlation_bad_inputs():
    model = em.parity_mixture(10, 3, 0.5)
    q = np.zeros(10)
    assert_param_error("s", em.neuron_correlations, model, q, 0.0, -1.0)
    assert_param_error("q", em.neuron_correlations, model, np.zeros(9), 0.0, 0.1)
    assert_param_error("q", em.neuron_correlations, model, np.r_[np.nan, np.zeros(9)], 0.0, 0.1)
    assert_param_error("b", em.neuron_correlations, model, np.zeros((2, 10)), np.zeros(3), 0.1)
    assert_param_error("method", em.neuron_correlations, model, q, 0.0, 0.1, method="exact")
    assert_param_error("method", em.neuron_correlations, em.parity_mixture(30, 3, 0.5), np.zeros(30), 0.0, 0.1,
                       method="enumerate")
    assert_param_error("model", em.neuron_correlations, "parity", q, 0.0, 0.1)
    assert_param_error("n", em.mc_correlations, model, q, 0.0, 0.1, 1)
    assert_param_error("class_weighted", em.neuron_correlations, model, q, 0.0, 0.1, class_weighted="yes")


# ---- Gaussian-mixture parity --------------------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2])
def test_gmm_stein_formula_against_gauss_hermite(k):
    """the Stein form = 2-D Gauss-Hermite quadrature (120 x 120 nodes; the integrand is smooth at
    s = 0.3, error < 1e-12) at d = 2; k = 1 is the two-Gaussian mixture x = eps v + g of App. F."""
    d = 2
    g = em.GaussianParityMixture(d, k, 1.3, em.random_dictionary(d, k, seed=k))
    w, b, s = np.array([0.7, -0.4]), 0.2, 0.3
    T, Tb, Ta, _ = em.gmm_correlations(g, w, b, s)
    x, wt = np.polynomial.hermite_e.hermegauss(120)
    wt = wt / wt.sum()
    G = np.stack(np.meshgrid(x, x, indexing="ij"), -1).reshape(-1, 2) * math.sqrt(g.tau2)
    W2 = np.outer(wt, wt).ravel()
    E, y = g.centers()
    refT, refb, refa = np.zeros(d), 0.0, 0.0
    for e, ye in zip(E, y):
        X = g.M @ e + G
        z = X @ w + b
        refT += ye * (W2 * em.window(z, s)) @ X / len(E)
        refb += ye * W2 @ em.window(z, s) / len(E)
        refa += ye * W2 @ em.smooth_trunc_relu(z, s) / len(E)
    assert np.abs(T - refT).max() < 1e-12 and abs(Tb - refb) < 1e-12 and abs(Ta - refa) < 1e-12


def test_gmm_stein_formula_against_monte_carlo():
    """Spec C7 / S11 setting (d = 25, k = 4, sigma_r = 0.7): MC n = 2e5 (seed 5), |z| <= 4.5 over 2 x 25 coords."""
    g = em.GaussianParityMixture(25, 4, 0.7, em.random_dictionary(25, 4, seed=0))
    rng = np.random.default_rng(1)
    W, b, s = rng.normal(0, 0.3, (2, 25)), np.array([0.2, 0.4]), 0.1
    F = em.gmm_correlations(g, W, b, s)
    X, y = g.sample(200_000, seed=5)
    for i in range(2):
        v = y[:, None] * X * em.window(X @ W[i] + b[i], s)[:, None]
        assert np.abs((v.mean(0) - F.T[i]) / (v.std(0) / math.sqrt(len(v)))).max() < Z_MAX
    assert_param_error("model", em.gmm_correlations, em.parity_mixture(10, 3, 0.5), W[0], 0.0, 0.1)
    assert_param_error("w", em.gmm_correlations, g, np.zeros(24), 0.0, 0.1)


# ---- class ratio (E4) -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("base", [em.parity_mixture(12, 3, 0.3), em.parity_mixture(12, 3, 0.5, False),
                                  em.iid_block_model(12, 4, 0.6, 0.4, (1, 3))])
@pytest.mark.parametrize("rho", [0.8, 0.9, 0.3])
def test_class_ratio_sets_the_prior_and_keeps_each_class_law(base, rho):
    m = em.with_class_ratio(base, rho)
    full = base.to_pattern_model() if isinstance(base, em.ExchangeablePatternModel) else base
    assert abs(m.A_probs[m.labels < 0].sum() - rho) < 1e-14
    assert abs(m.moments().Ey - (1 - 2 * rho)) < 1e-12
    for c in (-1, 1):      # the class-conditional row law is unchanged
        old, new = full.A_probs * (full.labels == c), m.A_probs * (m.labels == c)
        np.testing.assert_allclose(new / new.sum(), old / old.sum(), rtol=1e-12, atol=1e-15)
    if m.p_bg_rows is not None:          # D_A^mix: the marginal background is the new mixture
        assert abs(m.p_bg - m.A_probs @ m.p_bg_rows) < 1e-14
    y = m.sample(40_000, seed=3)[1]     # sampled frequency: binomial z < 4.5
    assert abs((y < 0).mean() - rho) / np.sqrt(rho * (1 - rho) / 40_000) < 4.5


@pytest.mark.parametrize("rho", [0.0, 1.0, -0.1, float("nan")])
def test_class_ratio_rejects_a_ratio_outside_the_open_unit_interval(rho):
    with pytest.raises(InvalidParameterError, match="negative_ratio"):
        em.with_class_ratio(em.parity_mixture(12, 3, 0.5), rho)


@pytest.mark.slow
def test_parallel_kernels_from_64_neurons_equal_the_serial_ones(monkeypatch):
    """From 64 neurons the Fourier kernels run in parallel (a separately cached dispatcher): the same numbers, bit
    for bit, as the serial kernels on the same neurons (row-dependent and count-resolved models)."""
    from popdyn.models.emergence import correlations as co
    rng = np.random.default_rng(3)
    for model in (em.parity_mixture(11, 3, 0.3, independent_background=False),
                  em.ExchangeablePatternModel(12, 4, 0.6, np.linspace(0.2, 0.8, 8), (1, 3))):
        Q, b = rng.normal(0, 0.3, (64, model.D)), rng.normal(0, 0.3, 64)
        par = em.neuron_correlations(model, Q, b, 0.3)
        monkeypatch.setattr(co, "_PARALLEL_M", 65)
        ser = em.neuron_correlations(model, Q, b, 0.3)
        monkeypatch.undo()
        for p, s in zip(par, ser):
            np.testing.assert_array_equal(p, s)
    assert co._fourier_parallel.py_func.__qualname__ == "_fourier_kernel_parallel"   # its own cache entry
