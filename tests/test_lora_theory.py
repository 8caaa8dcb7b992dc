"""Oracle and property tests of popdyn.models.lora.theory: h(m) (three methods), the loss, the gradient.

Oracles: golden values computed with an independent numpy/scipy reference script (k = 4, xi = 1.5, N1),
exact special cases (linear, quadratic, Hermite activations), finite differences of the loss,
seeded Monte Carlo of the gradient and the loss, and the numpy kernel path.
"""
import math

import numpy as np
import pytest
from hypothesis import assume, example, given, note, strategies as st, target

from popdyn import InvalidParameterError, activations
from popdyn.models import lora
from popdyn.models.lora import theory
from tests.strategies import lora_problems

LAM = np.array([1.0, -0.5, 0.8, 1.2])
C = np.array([1.0, 1.0, -1.0, 1.0]) / 2
C_HAT = np.array([1.0, -1.0, -1.0, -1.0]) / 2
G_GEN = np.array([[1, .3, -.2, .1], [.3, 1, .25, -.4], [-.2, .25, 1, .05], [.1, -.4, .05, 1]])
M5 = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
GOLDEN_H = {  # independent reference script: k = 4, xi = 1.5, N1
    ("identity", "relu"): [-0.455091673337, -0.237916287539, -0.084979181950, 0.067669097413, 0.282465652867],
    ("identity", "erf"): [-0.308655954471, -0.213342688030, -0.139124763737, -0.067197688761, 0.020782938829],
    ("identity", "he3"): [-3.48465024, -1.73295072, -0.0442368, 1.58149152, 3.14423424],
    ("identity", "tanh"): [-0.233836830963, -0.170223289762, -0.119982175863, -0.071320277766, -0.012735528241],
    ("general", "relu"): [-0.465602352928, -0.249109226948, -0.097045104287, 0.054229394055, 0.266586144135],
    ("general", "erf"): [-0.304024377575, -0.209482348714, -0.135454741511, -0.063199290190, 0.025790216387],
    ("general", "he3"): [-3.367422720, -1.617713856, 0.069009408, 1.692747072, 3.253499136],
    ("general", "tanh"): [-0.230668698535, -0.167536811984, -0.117418722605, -0.068558642156, -0.009357604294],
}
GOLDEN_PHI_RELU = [0.291771326292, 0.455416082936, 0.535715695454, 0.540441491026, 0.462227769167]


def golden_problem(gram, act, **kw):
    return lora.Problem(np.eye(4) if gram == "identity" else G_GEN, LAM, C, C_HAT, 1.5, act, **kw)


# --------------------------------------------------------------------------- golden values
@pytest.mark.parametrize("gram, act", sorted(GOLDEN_H))
def test_golden_h(gram, act):
    # 1e-10: golden values are printed to 12 decimals (He3: exact to the printed digits)
    np.testing.assert_allclose(lora.h(golden_problem(gram, act), M5), GOLDEN_H[gram, act], rtol=0, atol=1e-10)


@pytest.mark.parametrize("act", ["erf", "he3", "tanh"])
def test_golden_h_series_and_orthonormal(act):
    p = golden_problem("identity", act)
    for method in ("series", "orthonormal"):
        # 1e-10: as above; series truncated at tol = 1e-12 of h_bound
        np.testing.assert_allclose(lora.h(p, M5, method=method), GOLDEN_H["identity", act], rtol=0, atol=1e-10)


def test_golden_relu_orthonormal_and_loss():
    p = golden_problem("identity", "relu")
    # 1e-10: printed to 12 decimals
    np.testing.assert_allclose(lora.h(p, M5, method="orthonormal"), GOLDEN_H["identity", "relu"], atol=1e-10)
    np.testing.assert_allclose(lora.population_loss(p, M5), GOLDEN_PHI_RELU, rtol=0, atol=1e-10)


# --------------------------------------------------------------------------- exact special cases
def test_hermite_activation_prop18_formula():
    """sigma = h_p, xi = 1: h = 2p (k/(k+1))^p sum_ij lam lam c c_hat (G + c c_hat m)^(p-1) ([Dayi25, Prop. 18])."""
    for pdeg in (2, 3, 4):
        p = lora.Problem(G_GEN, LAM, C, C_HAT, 1.0, f"he{pdeg}")
        A = np.outer(LAM * C, LAM * C_HAT)
        ref = [2 * pdeg * (4 / 5)**pdeg * np.sum(A * (G_GEN + np.outer(C, C_HAT) * m)**(pdeg - 1)) for m in M5]
        # 1e-13: polynomial of degree <= 3 in float64, all terms O(1)
        for method in ("kernel", "series"):
            np.testing.assert_allclose(lora.h(p, M5, method=method), ref, rtol=0, atol=1e-13)


def test_numba_kernel_matches_numpy_kernel():
    """The numba closed form / Horner paths against the activation's own vectorised K' (general Gram)."""
    m = np.linspace(-0.999, 0.999, 41)
    for act in ("relu", "tanh", "erf", "sigmoid"):
        p = lora.Problem.random_features(k=7, xi=1.3, activation=act, seed=2)
        # 1e-12 * h_bound: Horner truncated at tol = 1e-12 of K'(1); closed forms agree to rounding
        # away from rho = 1 (there arccos of a rounded rho costs sqrt(1e-16), see the mpmath test)
        np.testing.assert_allclose(lora.h(p, m), theory._h_kernel_numpy(p, m), rtol=0, atol=1e-12 * lora.h_bound(p))


def test_relu_kernel_against_mpmath_at_the_ends():
    """ReLU h at m = +-1 (diagonal rho -> 1, K' not Lipschitz) against 40-digit mpmath from the same inputs."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    for seed in (2, 3):
        p = lora.Problem.random_features(k=5, xi=1.3, activation="relu", seed=seed)
        q = lora.Problem(p.G, p.lam, p.c, p.c if seed == 2 else -p.c, p.xi)  # some rho_ii = 1 at m = +-1
        for m in (-1.0, 1.0, 0.999):
            mp = lambda x: mpmath.mpf(float(x))
            xi2, tot = mp(q.xi)**2, mpmath.mpf(0)
            for i in range(q.k):
                for j in range(q.k):
                    R = mpmath.sqrt(1 + xi2 * mp(q.c[i])**2) * mpmath.sqrt(1 + xi2 * mp(q.c_hat[j])**2)
                    rho = (mp(q.G[i, j]) + xi2 * mp(q.c[i]) * mp(q.c_hat[j]) * mp(m)) / R
                    rho = min(max(rho, -1), 1)
                    tot += 2 * xi2 * mp(q.lam[i]) * mp(q.lam[j]) * mp(q.c[i]) * mp(q.c_hat[j]) / R * (
                        mpmath.pi - mpmath.acos(rho)) / (2 * mpmath.pi)
            # 1e-13 * h_bound: float64 gaps 1 -+ rho carry relative rounding only (no sqrt(eps) loss)
            assert abs(lora.h(q, m) - float(tot)) <= 1e-13 * lora.h_bound(q)


def test_relu_exact_gaps_at_unit_overlap():
    """With c_hat = c, h(1) via exact gaps equals the 4-statistic form to rounding (not 1e-8, docs/lora.md)."""
    p = lora.Problem.orthonormal(k=6, xi=2.0, seed=4)
    q = lora.Problem(p.G, p.lam, p.c, p.c, p.xi)
    for m in (1.0, -1.0, 1 - 1e-12):
        # 1e-14: both forms evaluate K' from exactly computed gaps 1 -+ rho
        assert abs(lora.h(q, m) - lora.h(q, m, method="orthonormal")) < 1e-14


# --------------------------------------------------------------------------- properties
@given(lora_problems(activations=("erf", "tanh", "he3", "quadratic", "sigmoid")), st.floats(-1, 1))
def test_kernel_equals_series_smooth(problem, m):
    """Property 1: kernel = series for polynomial and analytic sigma."""
    note(repr(problem))
    err = abs(lora.h(problem, m) - lora.h(problem, m, method="series"))
    target(err)
    assert err <= 1e-10 * max(1.0, lora.h_bound(problem))  # 1e-10: tol 1e-12 truncation + rounding


@given(lora_problems(activations=("relu",)), st.floats(-1, 1))
def test_kernel_equals_series_relu_where_it_converges(problem, m):
    """Property 1 (ReLU): only where rho_max <= 0.9, with P = 300; error <= tail bound."""
    rho_max = float(np.max(np.abs(lora.overlaps(problem, m))))
    assume(rho_max <= 0.9)
    err = abs(lora.h(problem, m) - lora.h(problem, m, method="series", P=300))
    bound = lora.h_bound(problem) / problem.sigma.Kprime1 * float(problem.sigma.Kprime_tail_bound(300, rho_max))
    target(err)
    assert err <= bound + 1e-13  # tail bound of the truncation at P = 300, plus rounding
    assert err <= 1e-6 * max(1.0, lora.h_bound(problem))  # 1e-6: within the ReLU tail bound


@given(lora_problems(orthonormal=True, activations=("relu", "erf", "tanh", "he3")), st.floats(-1, 1))
@example(lora.Problem(np.eye(4), LAM, C, C, 1.5, "relu"), 1.0)
def test_orthonormal_equals_kernel(problem, m):
    """Property 2: the 4-statistic form equals the kernel form when G = I."""
    err = abs(lora.h(problem, m, method="orthonormal") - lora.h(problem, m))
    target(err)
    assert err <= 1e-10 * max(1.0, lora.h_bound(problem))  # 1e-10: Horner truncation 1e-12


@given(lora_problems(), st.floats(-0.95, 0.95))
def test_h_is_minus_dphi_dm(problem, m):
    """Property 3: h = -dPhi/dm by central differences."""
    eps = 1e-5
    fd = -(lora.population_loss(problem, m + eps) - lora.population_loss(problem, m - eps)) / (2 * eps)
    scale = max(1.0, lora.h_bound(problem))
    # 1e-6 * scale: truncation eps^2 |Phi'''|/6 with |Phi'''| <= h_bound K'''/K' (<= ~1e3 at rho_max
    # <= 1 - 0.05 beta), plus rounding 1e-16 * Phi / eps ~ 1e-11
    assert abs(fd - lora.h(problem, m)) <= 1e-6 * scale


@given(lora_problems(), st.floats(-1, 1))
def test_loss_nonnegative_and_zero_at_the_teacher(problem, m):
    """Property 4."""
    assert lora.population_loss(problem, m) >= 0
    same = lora.Problem(problem.G, problem.lam, problem.c, problem.c, problem.xi, problem.activation)
    flip = lora.Problem(problem.G, problem.lam, problem.c, -problem.c, problem.xi, problem.activation)
    # 1e-12 * E f*^2: rounding of K over k^2 terms (Phi(+-1) is a difference of O(E f*^2) sums)
    scale = 1e-12 * max(1.0, float(problem.lam @ problem.sigma.K(problem.G) @ problem.lam) + lora.h_bound(problem))
    assert lora.population_loss(same, 1.0) <= scale
    assert lora.population_loss(flip, -1.0) <= scale


@given(lora_problems(), st.floats(-1, 1), st.randoms(use_true_random=False))
def test_symmetries(problem, m, rnd):
    """Property 5: swaps, sign flips, lam -> -lam, permutations, G-only dependence."""
    G, lam, c, ch, xi, act = problem.G, problem.lam, problem.c, problem.c_hat, problem.xi, problem.activation
    P = lambda **kw: lora.Problem(**{**dict(G=G, lam=lam, c=c, c_hat=ch, xi=xi, activation=act), **kw})
    hm = lora.h(problem, m)
    tol = 1e-12 * max(1.0, lora.h_bound(problem))  # 1e-12: same terms summed in another order
    assert abs(lora.h(P(c=ch, c_hat=c), m) - hm) <= tol
    assert abs(lora.h(P(c_hat=-ch), -m) + hm) <= tol
    assert abs(lora.h(P(c=-c), -m) + hm) <= tol
    assert abs(lora.h(P(lam=-lam), m) - hm) <= tol
    perm = np.array(rnd.sample(range(problem.k), problem.k))
    assert abs(lora.h(P(G=G[np.ix_(perm, perm)], lam=lam[perm], c=c[perm], c_hat=ch[perm]), m) - hm) <= tol


@given(lora_problems(activations=("relu", "tanh", "erf")))
def test_odd_coefficients_nonnegative(problem):
    """Property 6 (Schur): a_l >= 0 for odd l, every PSD G."""
    a = lora.h_series_coeffs(problem, 40, 200)
    assert np.all(a[1::2] >= -1e-15 * max(1.0, np.max(np.abs(a))))  # -1e-15: rounding of a sum of >= 0 terms


@given(st.integers(1, 50), st.floats(0.05, 10), st.sampled_from(["relu", "tanh", "erf", "he3"]))
def test_binomial_identity_equals_Kprime1(k, xi, act):
    """Property 7 ([Dayi25, App. D.4]): sum_(l,s) (xi^2/k)^l C(l+s,l)(l+s+1) mu^2 r^(-2(l+s)) = sum_(p<=P) p mu_p^2."""
    sigma, P = activations.get(act), 400
    q = theory._kprime_coeffs(sigma, P)
    beta = xi**2 / (k + xi**2)
    a = theory._series_kernel(math.log(beta), math.log(1 - beta), q, np.ones(P), np.ones(P), P - 1)
    # a_l = 2 beta sum_s (...) ; the identity divides by 2 beta. 1e-13: sum of ~P^2/2 positive terms
    assert abs(np.sum(a) / (2 * beta) - np.sum(q)) <= 1e-13 * max(1.0, np.sum(q))


@given(lora_problems(), st.floats(-1, 1))
def test_h_bound(problem, m):
    """Property 8: |h(m)| <= 2 K'(1) xi^2/r^2 sum|lam c| sum|lam c_hat|."""
    assert abs(lora.h(problem, m)) <= lora.h_bound(problem) * (1 + 1e-12)  # 1e-12: rounding


@given(lora_problems(activations=("relu",)), st.floats(-1, 1))
def test_n0_is_r2_times_n1_for_relu(problem, m):
    """Property 12: ReLU is homogeneous, so h_N0 = (1 + xi^2/k) h_N1."""
    n0 = lora.Problem(problem.G, problem.lam, problem.c, problem.c_hat, problem.xi, "relu", normalisation="N0")
    r2 = 1 + problem.xi**2 / problem.k
    assert abs(lora.h(n0, m) - r2 * lora.h(problem, m)) <= 1e-12 * r2 * max(1.0, lora.h_bound(problem))  # rounding
    # N0 for a non-homogeneous sigma is not a rescaling of N1 (tanh), and uses sigma(r z): kernel = series
    t0 = lora.Problem(problem.G, problem.lam, problem.c, problem.c_hat, problem.xi, "tanh", normalisation="N0")
    # tol 1e-10: at rho_max = 1 (parallel neurons) the tanh series needs P > 4096 terms for the default 1e-12
    assert abs(lora.h(t0, m) - lora.h(t0, m, method="series", tol=1e-10)) <= 2e-10 * max(1.0, lora.h_bound(t0))


def test_non_quantised_c_uses_per_neuron_norms():
    """Any unit c (N1): h = -dPhi/dm with r_i = sqrt(1 + xi^2 c_i^2), and the kernel matches numpy."""
    rng = np.random.default_rng(5)
    c = rng.standard_normal(5)
    c /= np.linalg.norm(c)
    p = lora.Problem(np.eye(5), rng.uniform(0.5, 1.5, 5), c, np.full(5, 1 / math.sqrt(5)), 2.0, "relu")
    for m in (-0.6, 0.1, 0.7):
        fd = -(lora.population_loss(p, m + 1e-5) - lora.population_loss(p, m - 1e-5)) / 2e-5
        assert abs(fd - lora.h(p, m)) < 1e-8  # 1e-8: eps^2 Phi''' + 1e-16/eps rounding (as above)
    with pytest.raises(InvalidParameterError, match="A3"):
        lora.h(p, 0.0, method="series")


def test_population_gradient_is_tangent_with_u_component():
    p = lora.Problem.random_features(k=5, xi=1.2, seed=1)
    u = np.array([1.0, 0.0, 0.0])
    u_hat = np.array([0.6, 0.0, 0.8])
    g = lora.population_gradient(p, u, u_hat)
    assert abs(g @ u_hat) < 1e-15  # 1e-15: rounding of a 3-vector dot product
    assert abs(g @ u + lora.h(p, 0.6) * (1 - 0.36)) < 1e-15
    with pytest.raises(InvalidParameterError, match="u_hat"):
        lora.population_gradient(p, u, np.array([1.0, 1.0, 0.0]))
    with pytest.raises(InvalidParameterError, match="shape"):
        lora.population_gradient(p, u, np.array([1.0, 0.0]))


# --------------------------------------------------------------------------- Monte Carlo
def _mc_gradient_and_loss(problem, m, d=12, n=400_000, chunk=100_000, seed=0):
    """u-component of the spherical SGD gradient and the squared loss, by MC over x ~ N(0, I_d)."""
    k, xi, lam, sig = problem.k, problem.xi, problem.lam, problem.activation
    rng = np.random.default_rng(seed)
    W = np.linalg.cholesky(problem.G + 1e-15 * np.eye(k))  # rows w_i in the first k coordinates, G = W W^T
    W = np.hstack([W, np.zeros((k, d - k))])
    u = np.zeros(d)
    u[k] = 1.0
    uh = np.zeros(d)
    uh[k], uh[k + 1] = m, math.sqrt(1 - m * m)
    r = np.sqrt(1 + xi**2 / k)
    V, Vh = (W + xi * np.outer(problem.c, u)) / r, (W + xi * np.outer(problem.c_hat, uh)) / r
    e = u - m * uh
    g, loss = [], []
    for _ in range(n // chunk):
        X = rng.standard_normal((chunk, d))
        res = sig(X @ V.T) @ lam - sig(X @ Vh.T) @ lam
        g.append(-2 * res * (sig.deriv(X @ Vh.T) @ (lam * xi * problem.c_hat / r)) * (X @ e))
        loss.append(res**2)
    g, loss = np.concatenate(g), np.concatenate(loss)
    return g.mean(), g.std() / math.sqrt(n), loss.mean(), loss.std() / math.sqrt(n)


@pytest.mark.parametrize("act, orth, xi, m", [("relu", True, 1.0, 0.5), ("relu", False, math.sqrt(5), 0.9),
                                              ("tanh", False, math.sqrt(5), 0.0), ("erf", True, 1.0, -0.5)])
def test_prop4_gradient_and_loss_monte_carlo(act, orth, xi, m):
    """<E grad L, u> = -h(m)(1 - m^2) and E L = Phi(m): 4e5 samples at d = 12, k = 5."""
    make = lora.Problem.orthonormal if orth else lora.Problem.random_features
    p = make(k=5, xi=xi, activation=act, seed=3)
    g, g_se, loss, loss_se = _mc_gradient_and_loss(p, m)
    assert abs(g + lora.h(p, m) * (1 - m * m)) <= 5 * g_se  # 5 SE, n = 4e5, seed 0 (|z| <= 3.2 seen)
    assert abs(loss - lora.population_loss(p, m)) <= 5 * loss_se  # 5 SE, same samples


# --------------------------------------------------------------------------- bad input
def test_bad_inputs_raise():
    p = golden_problem("general", "relu")
    for bad in (1.5, -1.0001, np.nan, [0.0, np.inf]):
        with pytest.raises(InvalidParameterError, match="'m'"):
            lora.h(p, bad)
        with pytest.raises(InvalidParameterError, match="'m'"):
            lora.population_loss(p, bad)
    with pytest.raises(InvalidParameterError, match=r"\['kernel', 'orthonormal', 'series'\]"):
        lora.h(p, 0.0, method="spline")
    with pytest.raises(InvalidParameterError, match="G = I"):
        lora.h(p, 0.0, method="orthonormal")
    with pytest.raises(InvalidParameterError, match="'tol'"):
        lora.h(p, 0.0, tol=0.0)
    with pytest.raises(InvalidParameterError, match="'P'"):
        lora.h(p, 0.0, method="series", P=0)


def test_relu_series_at_unit_overlap_is_refused():
    """docs/lora.md: ReLU at |m| = 1 needs > 2e5 terms for 1e-4; the series refuses and names the fix."""
    p = golden_problem("identity", "relu")
    with pytest.raises(InvalidParameterError, match="method='kernel'"):
        lora.h(p, 1.0, method="series")
    # with an explicit P the truncation error matches the ReLU tail law 1/(pi sqrt(2 pi P)) in size
    err = abs(lora.h(p, 1.0, method="series", P=1000) - lora.h(p, 1.0))
    assert 1e-6 < err < lora.h_bound(p) / 0.5 / (math.pi * math.sqrt(2 * math.pi * 1000))


def test_shapes_and_scalars():
    p = golden_problem("identity", "tanh")
    assert isinstance(lora.h(p, 0.2), float) and isinstance(lora.population_loss(p, 0.2), float)
    assert lora.h(p, np.zeros((2, 3))).shape == (2, 3)
    assert lora.population_loss(p, np.zeros((3, 1))).shape == (3, 1)
    assert lora.h0(p) == lora.h(p, 0.0)
    T_odd, T_even = lora.T_table(p, 3)
    # T(l, 0) for G = I: (sum lam)^2 and k (sum lam c)(sum lam c_hat) ([Dayi25, Section 3.2.1])
    assert T_odd[0] == pytest.approx(LAM.sum()**2, abs=1e-14)
    assert T_even[0] == pytest.approx(4 * (LAM @ C) * (LAM @ C_HAT), abs=1e-14)
    assert T_even[2] == pytest.approx(4 * np.sum(LAM**2 * C * C_HAT), abs=1e-14)


@given(lora_problems(orthonormal=True, activations=("relu", "tanh", "erf")), st.floats(-1, 1))
def test_claim1_sign_of_the_paired_terms(problem, m):
    """Property 10 ([Dayi25, Claim 1] and its proof, App. D.4): if |xi^2 (sum lam c)(sum lam c_hat)| <= 2 ||lam||^2 then
    sign(m) [odd l, s = 1 terms + even l >= 2, s = 0 terms] >= 0 (pairs (l-1, l) are each >= 0)."""
    lam, c, ch, k, xi2 = problem.lam, problem.c, problem.c_hat, problem.k, problem.xi**2
    assume(abs(xi2 * (lam @ c) * (lam @ ch)) <= 2 * lam @ lam)
    mu = problem.sigma.hermite_coeffs(202)
    T_odd, T_even = lora.T_table(problem, 1)
    beta = xi2 / (k + xi2)
    total = 0.0
    for l in range(2, 201, 2):  # even l with s = 0 (degree l + 1) paired with odd l - 1, s = 1 (degree l + 1)
        q = (l + 1) * mu[l + 1]**2 * beta**l
        pair = 2 * beta * q * (T_even[0] * m**l + l * (1 - beta) / beta * T_odd[1] * m**(l - 1))
        assert np.sign(m) * pair >= -1e-14 * lora.h_bound(problem)  # rounding; termwise statement of the proof
        total += pair
    assert np.sign(m) * total >= -1e-13 * lora.h_bound(problem)


@pytest.mark.parametrize("make", [lambda: lora.Problem.orthonormal(k=8, xi=1.0, seed=3),
                                  lambda: lora.Problem.random_features(k=12, xi=2.0, seed=1),
                                  lambda: lora.Problem.orthonormal(k=6, xi=1.2, seed=2, normalisation="N0")])
def test_relu_kernel_with_merged_pairs_matches_plain_numpy(make):
    # the numba kernel (per-pair constants hoisted, equal pairs merged) against the plain (M, k, k) numpy
    # kernel form with arccos K'; 1e-8: arccos near rho = +-1 turns 1e-16 input rounding into ~1e-8
    p = make()
    m = np.linspace(-1, 1, 201)
    assert len(theory._relu_pairs(p)[0]) <= p.k**2
    np.testing.assert_allclose(lora.h(p, m), theory._h_kernel_numpy(p, m), rtol=0, atol=1e-8)


@pytest.mark.parametrize("act", ["relu", "erf", "tanh"])
def test_population_loss_over_distinct_pairs_matches_full_sum(act):
    # Phi over merged pairs against the plain lam^T K(rho(m)) lam with the full (k, k) overlap matrices
    for p in (lora.Problem.orthonormal(k=8, xi=1.0, seed=3, activation=act),
              lora.Problem.random_features(k=5, xi=1.5, seed=2, activation=act)):
        m = np.linspace(-1, 1, 11)
        sig, lam, xi2 = p.sigma, p.lam, p.xi**2
        S = np.clip((p.G + xi2 * np.outer(p.c_hat, p.c_hat)) / np.outer(p.r_hat, p.r_hat), -1, 1)
        T = np.clip((p.G + xi2 * np.outer(p.c, p.c)) / np.outer(p.r, p.r), -1, 1)
        cross = np.einsum("i,nij,j->n", lam, sig.K(lora.overlaps(p, m)), lam)
        ref = lam @ sig.K(S) @ lam + lam @ sig.K(T) @ lam - 2 * cross
        np.testing.assert_allclose(lora.population_loss(p, m), np.maximum(ref, 0), rtol=1e-12, atol=1e-14)


@given(st.lists(st.lists(st.sampled_from([-1.5, -0.0, 0.0, 0.25, 1.0, 2.0]), min_size=3, max_size=3),
                min_size=1, max_size=40),
       st.integers(1, 3))
def test_distinct_rows_is_numpy_unique(rows, n_col):
    """_distinct_rows (numba stable sorts) = np.unique(axis=0): the same rows, order and inverse (-0.0 == 0.0)."""
    rows = np.array(rows)[:, :n_col]
    got, inv = theory._distinct_rows(list(rows.T))
    want, want_inv = np.unique(rows, axis=0, return_inverse=True)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(inv, want_inv.reshape(-1))
    np.testing.assert_array_equal(got[inv], rows)
