"""popdyn.models.domain_gen: the contour integrals against mpmath, quadrature, exact rational arithmetic and Monte
Carlo; the optima against brute force and a reference table; properties; bad inputs."""
import math

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, note, settings, target
from hypothesis import strategies as st
from scipy import optimize

from popdyn._validate import InvalidParameterError
from popdyn.models import domain_gen as DG
from popdyn.models.domain_gen import transform as T

S = DG.SpuriousFeatureModel


@st.composite
def small_models(draw, r_max=6, d_max=14):
    r = draw(st.integers(1, r_max))
    return S(r, draw(st.integers(r, d_max)), draw(st.floats(-0.45, 0.45)))


weights = st.floats(-1.5, 1.5, allow_subnormal=False)


# ---- the model ------------------------------------------------------------------------------------------------

def test_d_gamma_moments_monte_carlo():
    # C.6 (1): mean g, variance 1/3 - g^2 for each spurious coordinate; 5 SE bounds, n = 2e5, seed 0
    m = S(2, 12, 0.3)
    for dom, g in (("id", 0.3), ("ood", -0.3)):
        z = m.sample(200_000, dom, rng=0)
        zu = z[:, 2:].ravel()
        se = np.sqrt((1 / 3 - g ** 2) / zu.size)
        assert abs(zu.mean() - g) < 5 * se
        assert abs(zu.var() - (1 / 3 - g ** 2)) < 5 * np.sqrt(zu.size) ** -1 * 0.3  # sd of z^2 <= 0.3
        assert abs(z[:, :2].mean() - 0.5) < 5 * np.sqrt(1 / 12 / z[:, :2].size)
        Sig = m.second_moment(dom)
        assert np.max(np.abs(z.T @ z / len(z) - Sig)) < 5 * 0.5 / np.sqrt(len(z))  # sd of z_i z_j <= 0.5


@pytest.mark.parametrize("kw, name", [(dict(r=5, d=3, gamma=0.1), "r"), (dict(r=0, d=3, gamma=0.1), "r"),
                                      (dict(r=1, d=3, gamma=0.5), "gamma"), (dict(r=1, d=3, gamma=-0.5), "gamma"),
                                      (dict(r=1, d=3, gamma=float("nan")), "gamma"),
                                      (dict(r=1.5, d=3, gamma=0.1), "r")])
def test_bad_model(kw, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        S(**kw)


def test_bad_inputs_name_the_parameter():
    m = S(3, 8, 0.2)
    cases = [(lambda: DG.population_loss(0.1, 0.1, m, lam=-1.0), "lam"),
             (lambda: DG.population_loss(0.1, 0.1, m, penalty="l0"), "penalty"),
             (lambda: DG.population_loss(0.1, np.nan, m), "beta"),
             (lambda: DG.accuracy(0.1, 0.1, m, "test"), "domain"),
             (lambda: DG.accuracy(0.1, 0.1, m, "id", method="mc"), "method"),
             (lambda: DG.erm_l2(m, 0.0), "lam"), (lambda: DG.erm_nuclear(m, -0.1), "lam"),
             (lambda: DG.erm_rank(m, 4, 0.1), "B_rank"), (lambda: DG.toy2d_accuracy(-0.1, 0.2), "c"),
             (lambda: DG.toy2d_accuracy(0.1, 0.6), "gamma"), (lambda: DG.stable_rank(np.zeros((2, 2))), "M"),
             (lambda: DG.population_loss_w(np.ones(3), m), "w"), (lambda: DG.population_loss(0.1, 0.1, "m"), "model")]
    for f, name in cases:
        with pytest.raises(InvalidParameterError, match=f"'{name}'"):
            f()


# ---- the moment generating function -----------------------------------------------------------------------------

@pytest.mark.parametrize("t", [0.05 + 0.02j, 1e-4j, 0.3 - 2j, -5 + 3j, 40 + 1j, -40 - 7j, 700 + 3j, -700 + 1j])
@pytest.mark.parametrize("g", [0.5, 0.3, -0.45])
def test_log_mgf_block_and_derivatives_vs_mpmath(t, g):
    mpmath.mp.dps = 40
    p, q = mpmath.mpf(0.5) + g, mpmath.mpf(0.5) - g
    f = lambda x: mpmath.log((mpmath.exp(x) - 1) / x * (p + q * mpmath.exp(-x)))
    tt = mpmath.mpc(t.real, t.imag)
    ref = [complex(f(tt)), complex(mpmath.diff(f, tt)), complex(mpmath.diff(f, tt, 2))]
    got = [complex(v[0]) for v in T._log_mgf_block(np.array([t]), g)]
    assert abs(np.exp(got[0] - ref[0]) - 1) < 4e-16 * max(1, abs(ref[0]))  # 2 ulp of log M (|log M| ~ |t| <= 700)
    for k in (1, 2):
        assert abs(got[k] - ref[k]) <= 1e-12 * max(1.0, abs(ref[k]))  # 1e-12: series switch at |t| = 0.1


# ---- population loss and gradient -------------------------------------------------------------------------------

def _gl_loss(alpha, beta, gamma, fn=lambda w: np.logaddexp(0, -w), nodes=60):
    """E f(alpha u1 + beta z2 + beta z3), u ~ U[0,1], z ~ D_gamma: Gauss-Legendre on each uniform piece (f analytic)."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    x, w = (x + 1) / 2, w / 2
    pieces = [(x, w * (0.5 + gamma)), (-x, w * (0.5 - gamma))]
    tot = 0.0
    for x2, w2 in pieces:
        for x3, w3 in pieces:
            W = alpha * x[:, None, None] + beta * x2[None, :, None] + beta * x3[None, None, :]
            tot += np.einsum("i,j,k,ijk->", w, w2, w3, fn(W))
    return tot


@pytest.mark.parametrize("alpha, beta, gamma", [(0.7, 0.4, 0.3), (3.0, -2.0, 0.45), (0.01, 0.02, -0.2),
                                                (12.0, 5.0, 0.1), (0.0, 0.0, 0.2)])
def test_loss_vs_gauss_legendre(alpha, beta, gamma):
    m = S(1, 3, gamma)
    ref = _gl_loss(alpha, beta, gamma, nodes=120 if max(abs(alpha), abs(beta)) > 2 else 60)
    assert abs(DG.population_loss(alpha, beta, m) - ref) <= 1e-11 * ref  # 1e-11: C.5's 1e-10; GL exact to rounding


def test_loss_far_in_the_tail_vs_mpmath():
    # relative precision when the loss is ~1e-16: mpmath quadrature of the 1-D case E l(a u), u ~ U[0, 1]
    mpmath.mp.dps = 30
    for a in (40.0, 80.0):
        ref = mpmath.quad(lambda u: mpmath.log1p(mpmath.exp(-a * u)), [0, 1 / a, 1])
        got = DG.population_loss(a, 0.0, S(1, 1, 0.1))
        assert abs(got / float(ref) - 1) < 1e-11  # 1e-11: C.5's 1e-10


def test_loss_vs_monte_carlo_and_fft_grid():
    m = S(20, 300, 0.3)
    a, b = 0.0567, 0.0334
    z = m.sample(100_000, "id", rng=1)
    L = np.logaddexp(0, -(z[:, :20].sum(1) * a + z[:, 20:].sum(1) * b))
    got = DG.population_loss(a, b, m)
    assert abs(got - L.mean()) < 5 * L.std() / np.sqrt(len(L))  # 5 SE, n = 1e5, seed 1
    errs = [abs(p @ np.logaddexp(0, -x) - got) for x, p in (DG.sum_pmf(a, b, m, "id", h=b / k) for k in (25, 50, 200))]
    # the grid's rounding: measured relative 1.0e-4, 1.2e-5, 1.7e-6 at h = b/25, b/50, b/200 (not a clean h^2:
    # the cells do not divide a and b evenly)
    assert errs[1] < 3e-5 * got and errs[2] < errs[0] / 10


def test_gradient_and_hessian_vs_finite_differences():
    m = S(4, 11, 0.25)
    for a, b in ((0.3, 0.2), (-0.5, 1.1)):
        g = DG.population_grad(a, b, m)
        h = 1e-5
        fd = [(DG.population_loss(a + h, b, m) - DG.population_loss(a - h, b, m)) / (2 * h),
              (DG.population_loss(a, b + h, m) - DG.population_loss(a, b - h, m)) / (2 * h)]
        assert np.allclose(g, fd, rtol=0, atol=1e-8)  # 1e-8: FD truncation h^2 f''' ~ 1e-10 + rounding 1e-13/h
        v = T.expected(DG.risk._blocks(a, b, m, "id"), order=2)
        H = v[3:].reshape(2, 2)
        gp = DG.population_grad(a + h, b, m)
        gm = DG.population_grad(a - h, b, m)
        assert np.allclose(H[:, 0], (gp - gm) / (2 * h), atol=1e-7)  # same FD budget, one order up
    z = m.sample(400_000, "id", rng=2)
    W = 0.3 * z[:, :4].sum(1) + 0.2 * z[:, 4:].sum(1)
    lp = -1 / (1 + np.exp(W))
    for k, S_k in enumerate((z[:, :4].sum(1), z[:, 4:].sum(1))):
        x = lp * S_k
        assert abs(DG.population_grad(0.3, 0.2, m)[k] - x.mean()) < 5 * x.std() / np.sqrt(len(x))  # 5 SE, seed 2


def test_penalties():
    m = S(3, 9, 0.2)
    base = DG.population_loss(0.2, 0.1, m)
    assert DG.population_loss(0.2, 0.1, m, 0.5, "l2") == pytest.approx(base + 0.25 * (3 * 0.04 + 6 * 0.01), rel=1e-14)
    assert DG.population_loss(0.2, 0.1, m, 0.5, "nuclear") == pytest.approx(
        base + 0.5 * DG.nuclear_norm_pop(0.2, 0.1, m), rel=1e-14)
    assert DG.population_loss(0.2, 0.1, m, domain="ood") > base  # spurious sign flipped: larger loss


@given(small_models(r_max=3, d_max=6), st.data())
@settings(max_examples=15)
def test_symmetrised_weights_never_increase_the_loss(m, data):
    # C.6 (2): convexity + exchangeability: the block-averaged w has loss <= that of w
    w = np.array(data.draw(st.lists(weights, min_size=m.d, max_size=m.d)))
    note(repr(m))
    a, b = w[:m.r].mean(), (w[m.r:].mean() if m.m else 0.0)
    gap = DG.population_loss_w(w, m) - DG.population_loss(a, b, m)
    target(-gap)
    assert gap >= -1e-12  # 1e-12: the two contour integrals' rounding


@given(small_models(r_max=4, d_max=10), weights, weights, weights, weights, st.floats(0, 1))
@settings(max_examples=15)
def test_loss_convex_in_alpha_beta(m, a1, b1, a2, b2, t):
    f = lambda a, b: DG.population_loss(a, b, m)
    gap = t * f(a1, b1) + (1 - t) * f(a2, b2) - f(t * a1 + (1 - t) * a2, t * b1 + (1 - t) * b2)
    assert gap >= -1e-12


# ---- ERM-l2 ----------------------------------------------------------------------------------------------------

# reference table (FFT + root): rows (r, d, gamma, lam, alpha, beta)
_TABLE_C3 = [(40, 207, 0.49, 0.1, 0.046703, 0.045726), (40, 207, 0.49, 1.0, 0.028162, 0.027584),
             (100, 700, 0.45, 0.1, 0.01922, 0.01735)]


@pytest.mark.parametrize("row", range(3))
def test_erm_l2_against_spec_table_c3(row):
    r, d, g, lam, a_tab, b_tab = _TABLE_C3[row]
    a, b = DG.erm_l2(S(r, d, g), lam)
    assert np.max(np.abs(DG.population_grad(a, b, S(r, d, g), lam, "l2"))) < 1e-12  # KKT residual
    if row < 2:  # agree to 1.5e-5 relative (the reference's FFT grid error; row 1's last digits are one unit high)
        assert abs(a / a_tab - 1) <= 2e-5 and abs(b / b_tab - 1) <= 2e-5
    else:  # errata: row 3 is wrong; the optimum is (0.0190582, 0.0171212), alpha/beta = 1.1131 (printed 1.108)
        assert abs(a - 0.01905815) < 1e-8 and abs(b - 0.01712122) < 1e-8
        assert abs(a - a_tab) > 1e-4 and abs(b - b_tab) > 1e-4  # the table's values are off by 1.6e-4 and 2.3e-4
        f = lambda x: DG.population_loss(x[0], x[1], S(r, d, g), lam, "l2")
        assert f([a, b]) < f([a_tab, b_tab]) - 1e-9  # and the table's point has a larger objective


def test_erm_l2_vs_brute_force():
    m = S(5, 20, 0.3)
    a, b = DG.erm_l2(m, 0.05)
    f = lambda x: DG.population_loss(x[0], x[1], m, 0.05, "l2")
    res = optimize.minimize(f, [0.1, 0.1], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-15})
    assert abs(res.x[0] - a) < 1e-6 and abs(res.x[1] - b) < 1e-6  # Nelder-Mead's tolerance on a quadratic bowl
    assert f([a, b]) <= res.fun + 1e-14


@pytest.mark.parametrize("lam", [0.01, 0.1, 1.0, 5.0])
def test_lemma_6_1_in_the_paper_regime(lam):
    # C.6 (3): gamma in (3/sqrt(r), 1/2): 0 < beta < alpha < 1/sqrt(r), alpha/beta < 3/(4 gamma); corrected E.37
    r, d, g = 40, 207, 0.49
    a, b = DG.erm_l2(S(r, d, g), lam)
    assert 0 < b < a < 1 / np.sqrt(r) and a / b < 3 / (4 * g)
    corrected = np.exp(b) / (np.exp(-2 * a) * (0.5 + g) - np.exp(b) * (0.5 - g))
    assert a / b <= corrected


def test_ratio_tends_to_one_over_two_gamma():
    # C.6 (4): alpha/beta -> E z_R / E z_U = 1/(2 gamma) as lam -> inf, with an O(alpha) correction
    m = S(20, 300, 0.3)
    errs = []
    for lam in (10.0, 100.0, 1000.0):
        a, b = DG.erm_l2(m, lam)
        errs.append(abs(a / b - 1 / 0.6))
    assert errs[2] < errs[1] < errs[0] and errs[2] < 1e-3


# ---- nuclear norm and ERM-NU ------------------------------------------------------------------------------------

@given(small_models(), weights, weights)
def test_nuclear_norm_equals_eigenvalue_formula(m, a, b):
    w = np.r_[np.full(m.r, a), np.full(m.m, b)]
    ref = DG.nuclear_norm_pop_w(w, m)
    got = DG.nuclear_norm_pop(a, b, m)
    assert abs(got - ref) <= 1e-7 * max(1.0, ref)  # 1e-7: sqrt of eigenvalues at rounding (1e-16 -> 1e-8)
    assert DG.nuclear_norm_pop(a, -b, m) == got
    assert DG.nuclear_norm_pop(3 * a, 3 * b, m) == pytest.approx(3 * got, rel=1e-13)


@given(small_models(), weights, weights, weights, weights, st.floats(0, 1))
def test_nuclear_norm_convex(m, a1, b1, a2, b2, t):
    N = lambda a, b: DG.nuclear_norm_pop(a, b, m)
    assert t * N(a1, b1) + (1 - t) * N(a2, b2) >= N(t * a1 + (1 - t) * a2, t * b1 + (1 - t) * b2) - 1e-12


def test_batch_nuclear_norm_converges_to_population():
    # C.6 (7): ||Z diag(w)||_* / sqrt(n) -> N; n = 2e5, r = 3, d = 8; 3 sigma of the seed spread (5 seeds)
    m = S(3, 8, 0.3)
    w = np.r_[np.full(3, 0.4), np.full(5, 0.25)]
    vals = [np.linalg.svd(m.sample(200_000, rng=s) * w, compute_uv=False).sum() / np.sqrt(200_000) for s in range(5)]
    N = DG.nuclear_norm_pop(0.4, 0.25, m)
    assert abs(np.mean(vals) - N) < 3 * np.std(vals, ddof=1) / np.sqrt(5) + 1e-4 * N  # 1e-4: O(1/n) bias


@pytest.mark.parametrize("lam", [0.001, 0.03, 0.3, 0.6])
def test_erm_nuclear_removes_spurious_features_when_rho_below_one(lam):
    # docs/domain_gen.md: r = 20, d = 300, gamma = 0.3: rho in [0.47, 0.54], beta* = 0 exactly
    m = S(20, 300, 0.3)
    a, b, rho = DG.erm_nuclear(m, lam)
    assert b == 0.0 and 0.46 < rho < 0.55
    f = lambda x: DG.population_loss(x[0], x[1], m, lam, "nuclear")
    res = optimize.minimize(f, [a, 0.01], method="Nelder-Mead", options={"xatol": 1e-11, "fatol": 1e-16})
    assert f([a, 0.0]) <= res.fun + 1e-12 and abs(res.x[1]) < 1e-8  # nonsmooth 2-D optimiser agrees (1e-12: noise)


def test_erm_nuclear_keeps_spurious_features_when_rho_above_one():
    m = S(40, 207, 0.49)
    a, b, rho = DG.erm_nuclear(m, 0.1)
    assert 1.15 < rho < 1.2 and b > 0.01
    f = lambda x: DG.population_loss(x[0], x[1], m, 0.1, "nuclear")
    res = optimize.minimize(f, [a, b * 0.5], method="Nelder-Mead", options={"xatol": 1e-11, "fatol": 1e-16})
    assert f([a, b]) <= res.fun + 1e-12 and f([a, b]) < f([DG.erm_nuclear(S(40, 207, 0.49), 0.1)[0], 0.0])


def test_nu_line_threshold():
    m = S(20, 300, 0.3)
    c_R, _ = DG.nu_constants(m)
    assert DG.erm_nuclear(m, 1.001 * 20 / (4 * c_R))[:2] == (0.0, 0.0)
    assert DG.erm_nuclear(m, 0.99 * 20 / (4 * c_R))[0] > 0


# ---- accuracy ----------------------------------------------------------------------------------------------------

def _mp_tail(a, b, r, m, g, dps):
    """Pr[a S_R + b S_U > 0] for a, b > 0 by the alternating-sum CDF at dps digits (independent of popdyn)."""
    mpmath.mp.dps = dps
    a, b, g = mpmath.mpf(a), mpmath.mpf(b), mpmath.mpf(g)
    p, q = 0.5 + g, 0.5 - g
    n, tot = r + m, mpmath.mpf(0)
    for K in range(m + 1):
        s = sum((-1) ** (j + k) * math.comb(r, j) * math.comb(m, k) * (b * K - j * a - k * b) ** n
                for j in range(r + 1) for k in range(m + 1) if b * K - j * a - k * b > 0)
        tot += math.comb(m, K) * q ** K * p ** (m - K) * (1 - s / (mpmath.factorial(n) * a ** r * b ** m))
    return tot


@pytest.mark.parametrize("a, b, r, m, g", [(0.7, 0.4, 5, 15, -0.3), (0.7, 0.4, 5, 15, 0.3),
                                           (0.05, 0.3, 3, 20, -0.45), (0.2, 0.25, 6, 40, -0.45)])
def test_exact_accuracy_vs_mpmath_piecewise_polynomial(a, b, r, m, g):
    ref = _mp_tail(a, b, r, m, g, dps=150)
    dom = "id" if g > 0 else "ood"
    got = DG.accuracy(a, b, S(r, r + m, abs(g)), dom, log10=True)
    assert abs(got - float(mpmath.log10(ref))) < 3e-15 * max(1, abs(got)) / 0.4343 + 1e-15  # ~10 ulp of ln


@pytest.mark.parametrize("r, d, g", [(3, 8, 0.3), (1, 12, 0.45), (4, 5, 0.1)])
def test_rational_path_vs_contour_path(r, d, g):
    # the two exact methods meet at 12 coordinates; compare the contour on the same small model
    m = S(r, d, g)
    for a, b in ((0.3, 0.4), (0.05, 0.5), (1.0, -0.2)):
        for dom in ("id", "ood"):
            ref = DG.accuracy(a, b, m, dom, log10=True)
            mean = a * r / 2 + b * (d - r) * m.g(dom)
            blocks = [(a, 0.5, r), (b, m.g(dom), d - r)]
            p = (np.log1p(-np.exp(T.log_tail(blocks, -1))) if mean >= 0 else T.log_tail(blocks, 1)) / np.log(10)
            assert abs(p - ref) < 1e-13 * max(1, abs(ref))


def test_far_tail_vs_importance_sampling():
    # table C.3 row 1 OOD: exact log10 acc = -40.0918; tilted Monte Carlo (n = 2e5, seed 3), 5 relative SE
    m, a, b = S(40, 207, 0.49), 0.046703, 0.045726
    blocks = [(a, 0.5, 40), (b, -0.49, 167)]
    s = T._saddle(lambda c: T.log_mgf_real(c, blocks), 1e-6, 200.0)
    rng = np.random.default_rng(3)
    n = 200_000

    def tilted_u(t, size):  # density t e^{t u}/(e^t - 1) on [0, 1]
        v = rng.random(size)
        return np.log1p(v * np.expm1(t)) / t

    W = a * tilted_u(s * a, (n, 40)).sum(1)
    p_pos = 0.01 * np.expm1(s * b) / (0.01 * np.expm1(s * b) + 0.99 * -np.expm1(-s * b))
    pos = rng.random((n, 167)) < p_pos
    W += b * np.where(pos, tilted_u(s * b, (n, 167)), -tilted_u(-s * b, (n, 167))).sum(1)
    x = np.exp(-s * W) * (W > 0)
    est = np.log10(x.mean()) + T.log_mgf_real(s, blocks) / np.log(10)
    rel_se = x.std() / x.mean() / np.sqrt(n)
    got = DG.accuracy(a, b, m, "ood", log10=True)
    assert abs(got - est) < 5 * rel_se / np.log(10) and abs(got + 40.0918) < 1e-4


def test_accuracy_vs_monte_carlo_and_fft():
    m, a, b = S(5, 20, 0.3), 0.7, 0.4
    z = m.sample(400_000, "ood", rng=4)
    hit = (a * z[:, :5].sum(1) + b * z[:, 5:].sum(1)) > 0
    got = DG.accuracy(a, b, m, "ood")
    assert abs(got - hit.mean()) < 5 * hit.std() / np.sqrt(len(hit))  # 5 SE, seed 4
    assert abs(DG.accuracy(a, b, m, "ood", method="fft") - got) < 1e-4  # grid error of the cell rounding


@given(small_models(r_max=8, d_max=40), st.floats(0.01, 1.0), st.floats(0.0, 1.0))
@example(m=S(1, 13, 0.0), a=1.0, b=2.8218118651030925e-48)  # found: the saddle ran off to c ~ -1e47 (now capped)
@settings(max_examples=20)
def test_chernoff_bounds_exact_and_ood_below_id(m, a, b):
    note(repr(m))
    g = abs(m.gamma)
    mm = S(m.r, m.d, g)
    for dom in ("id", "ood"):
        ex = DG.accuracy(a, b, mm, dom, log10=True)
        assert DG.accuracy(a, b, mm, dom, method="chernoff", log10=True) >= ex - 1e-12  # C.6 (6)
    assert DG.accuracy(a, b, mm, "ood") <= DG.accuracy(a, b, mm, "id") + 1e-15  # C.6 (5)


def test_normal_approximation_improves_with_size_and_fails_in_the_tail():
    # C.6 (6): exact vs normal: close at moderate probabilities, off by orders of magnitude in the far tail
    gap = lambda w, m: abs(DG.accuracy(w, w, m, "ood") - DG.accuracy(w, w, m, "ood", method="normal"))
    e1, e2 = gap(0.3, S(5, 20, 0.45)), gap(0.1, S(50, 200, 0.05))
    assert e2 < e1
    m = S(40, 207, 0.49)
    assert DG.accuracy(0.046703, 0.045726, m, "ood", method="normal", log10=True) < \
        DG.accuracy(0.046703, 0.045726, m, "ood", log10=True) - 4  # 1e-44.5 vs 1e-40.1 (reference)


def test_erm_rank_ood_accuracy_is_one():
    m = S(20, 300, 0.3)
    w = DG.erm_rank(m, 5, 0.1)
    assert np.all(w[:5] > 0) and np.all(w[5:] == 0)
    assert DG.accuracy(w[0], 0.0, S(5, 5, 0.3), "ood") == 1.0
    a = w[0]
    assert abs(5 * 0.1 * a + T.expected([(a, 0.5, 5)], order=1)[1]) < 1e-13  # stationarity: lam B a = -E[l' S_B]
    assert np.all(np.isinf(DG.erm_rank(m, 3)[:3]))  # lam = 0: not attained (errata (6.5))


# ---- 2-D toy, stable rank, assumptions --------------------------------------------------------------------------

@given(st.floats(0, 5), st.floats(-0.49, 0.49))
def test_toy2d_closed_form_vs_exact_accuracy(c, g):
    m = S(1, 2, g)
    ai, ao = DG.toy2d_accuracy(c, g)
    assert abs(ai - DG.accuracy(1.0, c, m, "id")) < 1e-15 and abs(ao - DG.accuracy(1.0, c, m, "ood")) < 1e-15
    if c <= 1 and g > -0.5:  # C.6 (9)
        assert abs((1 - ai) - (0.5 - g) / (0.5 + g) * (1 - ao)) < 1e-14
    if g == 0:
        assert ai == ao


def test_toy2d_paper_numbers():
    # docs/domain_gen.md: OOD 0.76 needs c = 0.686 and then ID 0.897; OOD 0.94 <-> c = 0.171, ID 0.974
    for ood, c, idd in ((0.76, 0.686, 0.897), (0.94, 0.171, 0.974)):
        ai, ao = DG.toy2d_accuracy(c, 0.2)
        assert abs(ao - ood) < 1e-3 and abs(ai - idd) < 1e-3


@given(st.integers(1, 6), st.integers(1, 6), st.floats(0.1, 10))
def test_stable_rank_range_and_scale_invariance(n, p, s):
    M = np.random.default_rng(n * 7 + p).standard_normal((n, p))
    sr = DG.stable_rank(M)
    assert 1 - 1e-12 <= sr <= np.linalg.matrix_rank(M) + 1e-12
    assert DG.stable_rank(s * M) == pytest.approx(sr, rel=1e-12)


def test_prop63_assumptions():
    assert DG.prop63_assumptions(40, 207, 0.49, 2.0)["all"] and not DG.prop63_assumptions(40, 207, 0.49, 1.0)["lam"]
    out = DG.prop63_assumptions(20, 300, 0.3, 0.3)
    assert not out["gamma"] and not out["all"] and out["d"]
