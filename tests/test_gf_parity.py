"""popdyn.models.gradient_features.parity: structured and uniform parity (docs/gradient_features.md).

Independent computations: brute force over the hypercube {+-1}^d (d <= 15) for the majority coefficients and the
uniform-parity G and A; enumeration of the full structured-parity support (tiny d) for E[yx], G and g*; integer
arithmetic for g* on the support (all of g* sqrt(k) is an integer there); mpmath at 50 digits for xi at d = 10^4;
seeded Monte Carlo with a per-entry |z| <= 4.5 (stated per test). Hypothesis for the identities.
"""
import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, strategies as st

from popdyn._validate import InvalidParameterError
from popdyn.models.gradient_features.data import hinge, logistic2
from popdyn.models.gradient_features.parity import StructuredParity, UniformParity, majority_coefficient

Z_MAX = 4.5        # per-entry Monte Carlo |z|; <= 200 entries per test: P(any |z| > 4.5) < 2e-3 under the null


def cube(d):
    return np.array(list(itertools.product([-1.0, 1.0], repeat=d)))


def relu_net(a, W, b, X):
    return np.maximum(X @ W.T - b, 0.0) @ a


def orthonormal(d, seed):
    return np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))[0]


# ---- majority coefficients ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 3, 5, 9, 13, 15])
def test_majority_coefficient_equals_brute_force_fourier(n):
    """xi_j = E[Maj(u) chi_S(u)] over the cube: both are multiples of 2^-(n-1) with < 53 bits, so exactly equal."""
    U = cube(n)
    maj = np.sign(U.sum(1))
    for j in range(n + 1):
        assert np.mean(maj * np.prod(U[:, :j], axis=1)) == majority_coefficient(n, j)


@pytest.mark.parametrize("n", [5, 11, 101, 1001])
def test_majority_parseval(n):
    """sum_j C(n, j) xi_j^2 = E[Maj^2] = 1; float sum of <= 501 positive terms: 1e-13."""
    total = math.fsum(math.comb(n, j) * majority_coefficient(n, j) ** 2 for j in range(1, n + 1, 2))
    assert abs(total - 1.0) < 1e-13


@pytest.mark.parametrize("j", [1, 3, 5, 9, 101, 1001, 4999, 10_001])
def test_majority_coefficient_exact_at_d_1e4(j):
    """d = 10001 against mpmath at 50 digits: the value is correctly rounded (relative error <= 2^-53) wherever it
    is a normal float; the log (never underflows) is within 4 ulp of |log xi| (two correctly rounded logs of
    ~5000-digit integers, |log| <= 7000)."""
    n = 10_001
    mpmath.mp.dps = 50
    h, i = (n - 1) // 2, (j - 1) // 2
    ref = (-1) ** i * mpmath.binomial(h, i) / mpmath.binomial(n - 1, j - 1) * mpmath.binomial(n - 1, h) / \
        mpmath.mpf(2) ** (n - 1)
    val, log_ref = majority_coefficient(n, j), float(mpmath.log(abs(ref)))
    if log_ref > -700:
        assert val != 0.0 and abs(val - float(ref)) <= 2.0 ** -53 * abs(float(ref))
    assert abs(majority_coefficient(n, j, log=True) - log_ref) <= 4 * np.spacing(abs(log_ref))


def test_majority_parseval_in_logs():
    """sum_j C(n, j) xi_j^2 = 1 at n = 2501, where the middle xi_j underflow, in logs (lgamma binomials, absolute
    error ~1e-13 each): 1e-10."""
    n = 2501
    j = np.arange(1, n + 1, 2)
    logC = np.array([math.lgamma(n + 1) - math.lgamma(t + 1) - math.lgamma(n - t + 1) for t in j])
    logxi = np.array([majority_coefficient(n, int(t), log=True) for t in j])
    assert abs(np.exp(logC + 2 * logxi).sum() - 1.0) < 1e-10
    assert majority_coefficient(n, 1251) == 0.0 and np.isfinite(logxi).all()


@given(st.integers(1, 5000).map(lambda h: 2 * h + 1), st.data())
def test_majority_sign_and_ratio(n, data):
    """Sign (-1)^((j-1)/2) and |xi_{j+2} / xi_j| = j / (n - j - 1) ; correctly rounded values: 4 ulp."""
    j = data.draw(st.integers(0, min(n - 3, 60)).map(lambda t: 2 * t + 1).filter(lambda t: t + 2 <= n))
    a, b = majority_coefficient(n, j), majority_coefficient(n, j + 2)
    assert np.sign(a) == (-1) ** ((j - 1) // 2)
    assert abs(abs(b / a) - j / (n - j - 1)) <= 4 * 2.0 ** -53 * j / (n - j - 1)


def test_majority_coefficient_bad_input():
    with pytest.raises(InvalidParameterError, match="'n'"):
        majority_coefficient(10, 1)
    with pytest.raises(InvalidParameterError, match="'j'"):
        majority_coefficient(5, 6)


# ---- uniform parity ----------------------------------------------------------------------------------------------

def _uniform_case(d, k, seed, M=6):
    rng = np.random.default_rng(seed)
    A = np.sort(rng.choice(d, size=k, replace=False))
    W = rng.choice([-1.0, 1.0], size=(M, d))
    b = rng.uniform(-0.99, 0.99, size=M)
    return UniformParity(d, k, A), W, b


@pytest.mark.parametrize("d,k", [(5, 1), (5, 2), (7, 3), (9, 4), (11, 4), (13, 2), (13, 6), (15, 4), (15, 14)])
def test_uniform_G_equals_brute_force(d, k):
    """Exact G (with the factor 1/2) vs the mean over all 2^d inputs: both dyadic rationals, so exactly equal."""
    up, W, b = _uniform_case(d, k, seed=d * 100 + k)
    X = cube(d)
    y = np.prod(X[:, up.subset], axis=1)
    active = X @ W.T > b
    brute = np.einsum("si,s,sj->ij", active.astype(float), y, X) / len(y)
    np.testing.assert_array_equal(up.simplified_gradient(W, b), brute)
    if k % 2 == 0:   # the paper's B.548-B.549 (no 1/2, xi_{k-1} off A) is wrong by at least |xi_{k-1}| / 2
        assert np.abs(up.simplified_gradient(W, b, convention="paper") - brute).max() > 0.4 * abs(up.xi(k - 1))


@pytest.mark.parametrize("d,k", [(5, 1), (7, 2), (9, 3), (11, 4), (15, 4)])
def test_uniform_A_equals_brute_force(d, k):
    """Exact A vs the cube mean; the mean of 2^d floats of size <= d + 1 has pairwise-summation error
    <= d eps (d + 1) ~ 4e-14 at d = 15: 1e-13."""
    up, W, b = _uniform_case(d, k, seed=7 * d + k)
    X = cube(d)
    y = np.prod(X[:, up.subset], axis=1)
    brute = (y[:, None] * np.maximum(X @ W.T - b, 0.0)).mean(0)
    np.testing.assert_allclose(up.A(W, b), brute, rtol=0, atol=1e-13)


@given(st.integers(1, 40).map(lambda h: 2 * h + 1), st.data())
def test_uniform_identities(d, data):
    """Complement G(w, b) + G(-w, -b) = E[yx]; <w, G> - b E[y 1] = A, E[y 1] = (xi_k chi_A(w) + [k = 0]) / 2."""
    k = data.draw(st.integers(1, d))
    up, W, b = _uniform_case(d, k, seed=data.draw(st.integers(0, 10 ** 6)))
    G = up.simplified_gradient(W, b)
    np.testing.assert_allclose(G + up.simplified_gradient(-W, -b), np.broadcast_to(up.E_yx(), G.shape),
                               rtol=0, atol=1e-15)        # sums of two correctly rounded halves of the same xi
    chi = np.prod(W[:, up.subset], axis=1)
    scale = max(1.0, d * np.abs(G).max())
    np.testing.assert_allclose(np.sum(W * G, 1) - b * 0.5 * up.xi(k) * chi, up.A(W, b), rtol=0, atol=1e-15 * scale)


def test_uniform_G_at_d_1e4_is_tiny_not_huge():
    """||G|| = sqrt(k xi_{k-1}^2 + (d-k) xi_{k+1}^2) / 2 = Theta(d^-(k-1)/2) (B.557 says d^Theta(k); erratum 9)."""
    d, k = 10_001, 4
    up = UniformParity(d, k)
    w = np.ones((1, d))
    norm = np.linalg.norm(up.simplified_gradient(w, 0.0))
    assert norm == pytest.approx(0.5 * math.sqrt(k * up.xi(k - 1) ** 2 + (d - k) * up.xi(k + 1) ** 2), rel=1e-14)
    assert 0.1 < norm * d ** ((k - 1) / 2) < 10
    assert abs(up.xi(k + 1) / up.xi(k - 1)) == pytest.approx((k - 1) / (d - k), rel=1e-14)


@pytest.mark.parametrize("d,k", [(5, 1), (7, 2), (9, 3), (11, 4), (11, 6)])
def test_uniform_ground_truth_is_chi_A(d, k):
    """g* = chi_A on every point of the cube; float error of sqrt(k) * relu(...) sums: 1e-12. ||a*||^2 = 6k(k+1)."""
    up, _, _ = _uniform_case(d, k, seed=k)
    a, W, b = up.ground_truth()
    X = cube(d)
    np.testing.assert_allclose(relu_net(a, W, b, X), np.prod(X[:, up.subset], axis=1), rtol=0, atol=1e-12)
    assert a.shape == (3 * (k + 1),) and np.sum(a * a) == pytest.approx(6 * k * (k + 1), rel=1e-14)
    assert np.abs(b).max() == pytest.approx((k + 1) / math.sqrt(k), rel=1e-14)


def test_uniform_ground_truth_loss():
    """OPT = 0 (hinge) and log2(1 + 1/e) (base-2 logistic, y g* = 1 everywhere) vs the cube average (d = 9)."""
    up = UniformParity(9, 4, A=[1, 3, 5, 8])
    X = cube(9)
    margin = np.prod(X[:, up.subset], axis=1) * relu_net(*up.ground_truth(), X)
    for loss, f in (("hinge", hinge), ("logistic", logistic2)):
        value, se = up.ground_truth_loss(loss)
        assert se == 0 and value == pytest.approx(f(margin).mean(), abs=1e-14)
    assert up.ground_truth_loss("logistic")[0] == pytest.approx(math.log2(1 + math.exp(-1)), rel=1e-13)


def test_uniform_sample_E_yx_and_bounds():
    up = UniformParity(9, 1, A=[4])
    X, y = up.sample(100_000, 3)
    assert set(np.unique(X)) == {-1.0, 1.0} and np.array_equal(y, X[:, 4])
    emp = (y[:, None] * X).mean(0)
    assert np.all(np.abs(emp - up.E_yx()) <= Z_MAX * np.sqrt(np.maximum(1 - up.E_yx() ** 2, 1e-12) / 100_000))
    assert up.E_yx()[4] == 1.0 and np.all(UniformParity(9, 2).E_yx() == 0)
    assert up.bounds() == (3.0, 3.0, 9.0) and up.dim == 9
    np.testing.assert_allclose(UniformParity(9, 4).features(), np.r_[np.full(4, 0.5), np.zeros(5)][None])


@pytest.mark.parametrize("kwargs,name", [(dict(d=10, k=2), "'d'"), (dict(d=9, k=0), "'k'"), (dict(d=9, k=10), "'k'"),
                                         (dict(d=9, k=2, A=[1, 1]), "'A'"), (dict(d=9, k=2, A=[0, 9]), "'A'"),
                                         (dict(d=9, k=2, A=[0.0, 1.0]), "'A'")])
def test_uniform_bad_parameters(kwargs, name):
    with pytest.raises(InvalidParameterError, match=name):
        UniformParity(**kwargs)


def test_uniform_bad_neurons():
    up = UniformParity(5, 2)
    with pytest.raises(InvalidParameterError, match="'W'"):
        up.simplified_gradient(np.full((1, 5), 0.5), 0.0)
    with pytest.raises(InvalidParameterError, match="'W'"):
        up.A(np.ones((1, 4)), 0.0)
    with pytest.raises(InvalidParameterError, match="'b'"):
        up.A(np.ones((1, 5)), 1.0)
    with pytest.raises(InvalidParameterError, match="'convention'"):
        up.simplified_gradient(np.ones((1, 5)), 0.0, convention="other")


# ---- structured parity -------------------------------------------------------------------------------------------

SMALL = [dict(d=5, r=1, k=3, p_A=0.1, p_o=0.2), dict(d=5, r=1, k=1, p_A=0.3, p_o=0.5),
         dict(d=5, r=3, k=1, p_A=0.1, p_o=0.1), dict(d=10, r=3, k=3, p_A=0.05, p_o=0.25),
         dict(d=6, r=1, k=5, p_A=0.5, p_o=0.0)]


@pytest.mark.parametrize("kw", SMALL)
def test_structured_E_yx_equals_enumeration(kw):
    """E[yx] = (2 p_A + [k = 1](1 - 2 r p_A) xi_1^(r)) sqrt(k) sum_j D_j vs the full support (b -> -inf);
    float sums of <= 2^15 probabilities: 1e-14. Nonzero: Remark B.45 is wrong (erratum 4)."""
    sp = StructuredParity(**kw, M=orthonormal(kw["d"], 1))
    assert np.linalg.norm(sp.E_yx()) > 0
    np.testing.assert_allclose(sp.simplified_gradient(np.ones((1, sp.d)), -1e6)[0], sp.E_yx(), atol=1e-14)


def test_structured_E_yx_monte_carlo_V5():
    """Spec V5 (d = 200, r = 3, k = 15, p_A = 0.1, random orthonormal M): sample mean of y x within 4.5 SE."""
    sp = StructuredParity(200, 3, 15, 0.1, 45 / 155, M=orthonormal(200, 3))
    X, y = sp.sample(40_000, 4)
    v = y[:, None] * X
    z = (v.mean(0) - sp.E_yx()) / (v.std(0, ddof=1) / math.sqrt(len(y)))
    assert np.abs(z).max() < Z_MAX + 0.5      # 200 coordinates: max |z| of 200 normals < 5 w.p. 1 - 1e-4
    assert np.linalg.norm(sp.E_yx()) == pytest.approx(2 * 0.1 * math.sqrt(15) * math.sqrt(3), rel=1e-12)


@pytest.mark.parametrize("kw", SMALL[:4])
@pytest.mark.parametrize("method", ["numba", "numpy"])
def test_structured_mc_G_against_enumeration(kw, method):
    """Monte Carlo G (n = 2e5) vs the exact enumeration, per coordinate |z| <= 4.5."""
    sp = StructuredParity(**kw, M=None if kw["d"] != 10 else orthonormal(10, 2))
    rng = np.random.default_rng(5)
    W, b = rng.normal(size=(6, sp.d)), rng.normal(0, 0.7, size=6)
    exact = sp.simplified_gradient(W, b)
    G, se = sp.simplified_gradient_mc(W, b, 200_000, 6, method=method)
    ok = se > 0
    assert np.all(np.abs(G - exact)[ok] <= Z_MAX * se[ok]) and np.all(np.abs(G - exact)[~ok] < 1e-15)


def test_structured_twin_neuron_is_not_a_feature_V5():
    """Remark B.45 erratum: for a Sure neuron of D_0 (<w, D_0> = 1.6 b~/sqrt k, b~ = sqrt(rk log d)), G is aligned
    with D_0, but its twin (-w, -b~) gets E[yx] - G ~ D_0 + 2 (D_1 + D_2), so (D_0, -1) is not in S for r = 3.
    Monte Carlo n = 1e5: ||se|| ~ 0.013 against ||G|| ~ 0.33 and ||twin|| ~ 1.3, so the margins below are > 5 SE."""
    sp = StructuredParity(200, 3, 15, 0.1, 45 / 155)
    D, bt = sp.features(), math.sqrt(45 * math.log(200))
    w = np.random.default_rng(1).normal(size=200)
    w += 1.6 * bt / math.sqrt(15) * D[0] - (D @ w) @ D
    G = sp.simplified_gradient_mc(w, bt, 100_000, 2).G[0]
    twin = sp.E_yx() - G
    cos = lambda u, v: u @ v / np.linalg.norm(u) / np.linalg.norm(v)               # noqa: E731
    assert cos(G, D[0]) > 0.95 and cos(twin, D[0]) < 0.5 and cos(twin, D[0] + 2 * (D[1] + D[2])) > 0.98


@pytest.mark.parametrize("kw", SMALL)
def test_structured_A_exact(kw):
    """Exact A vs the inherited Monte Carlo A_mc (n = 1e5, |z| <= 4.5) and grad_w A = G (A is piecewise linear in w
    on a finite support: central differences with h = 1e-6 are exact up to rounding eps |A| / h ~ 1e-10: 1e-8)."""
    sp = StructuredParity(**kw)
    rng = np.random.default_rng(11)
    W, b = rng.normal(size=(4, sp.d)), rng.normal(0, 0.7, size=4)
    A = sp.A(W, b)
    mc, se = sp.A_mc(W, b, 100_000, 12)
    assert np.all(np.abs(mc - A) <= Z_MAX * se)
    h = 1e-6
    fd = np.stack([(sp.A(W + h * e, b) - sp.A(W - h * e, b)) / (2 * h) for e in np.eye(sp.d)], axis=1)
    np.testing.assert_allclose(fd, sp.simplified_gradient(W, b), rtol=0, atol=1e-8)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_structured_with_uniform_inputs_is_uniform_parity(k):
    """r = 1, p_A = 0, p_o = 1/2, M = I is uniform parity (Assumption B.53 with k odd): the enumeration of
    StructuredParity equals UniformParity's closed forms (G = e_a / 2 for k = 1, 0 for odd k >= 3; A likewise);
    sums of 2^9 dyadic terms: 1e-15."""
    sp, up = StructuredParity(9, 1, k, 0.0, 0.5), UniformParity(9, k)
    rng = np.random.default_rng(k)
    W, b = rng.choice([-1.0, 1.0], size=(5, 9)), rng.uniform(-0.9, 0.9, 5)
    np.testing.assert_allclose(sp.simplified_gradient(W, b), up.simplified_gradient(W, b), rtol=0, atol=1e-15)
    np.testing.assert_allclose(sp.A(W, b), up.A(W, b), rtol=0, atol=1e-14)
    np.testing.assert_allclose(sp.E_yx(), up.E_yx(), rtol=0, atol=1e-15)


def test_structured_mc_routes_agree():
    """numba, numpy and auto consume the same stream: equal to summation rounding (sums of <= 5000 +-1: 1e-12).
    The first chunk (4096 x ~49 nonzeros x 40 neurons > 2^22) runs the threaded kernel, the second the serial one."""
    sp = StructuredParity(300, 3, 7, 0.05, 0.05)
    rng = np.random.default_rng(8)
    W = rng.normal(size=(40, 300))
    b = np.full(40, math.sqrt(21 * math.log(300)))
    out = [sp.simplified_gradient_mc(W, b, 5000, 9, chunk=4096, method=m) for m in ("numba", "numpy", "auto")]
    for G, se in out[1:]:
        np.testing.assert_allclose(G, out[0].G, rtol=0, atol=1e-12)
        np.testing.assert_allclose(se, out[0].se, rtol=0, atol=1e-12)
    assert np.abs(out[0].G).max() > 0


@given(st.sampled_from(SMALL), st.integers(0, 10 ** 6), st.integers(-3, 3))
def test_structured_exact_G_identities(kw, seed, log2c):
    """G(cw, cb) = G(w, b) (c a power of 2: the masks are identical), G(w, b) + G(-w, -b) = E[yx] (ties have
    probability 0 for Gaussian w), ||G|| <= E||x|| = B_x1; float sums: 1e-14."""
    sp = StructuredParity(**kw)
    rng = np.random.default_rng(seed)
    W, b = rng.normal(size=(3, sp.d)), rng.normal(size=3)
    G = sp.simplified_gradient(W, b)
    np.testing.assert_array_equal(sp.simplified_gradient(2.0 ** log2c * W, 2.0 ** log2c * b), G)
    np.testing.assert_allclose(G + sp.simplified_gradient(-W, -b), np.broadcast_to(sp.E_yx(), G.shape),
                               atol=1e-14)
    assert np.all(np.linalg.norm(G, axis=1) <= sp.bounds().Bx1 + 1e-14)


def _gstar_integer(S, k):
    """sqrt(k) is absorbed: sum_j sum_i (-1)^(i+1) [relu(s - (2i-k-1)) - 2 relu(s - (2i-k)) + relu(s - (2i-k+1))]."""
    relu = lambda t: max(t, 0)                                                     # noqa: E731
    return [sum((-1) ** (i + 1) * (relu(s - (2 * i - k - 1)) - 2 * relu(s - (2 * i - k)) + relu(s - (2 * i - k + 1)))
                for s in row for i in range(k + 1)) for row in S]


@pytest.mark.parametrize("kw", SMALL + [dict(d=9, r=3, k=3, p_A=1 / 6, p_o=0.0)])
@pytest.mark.parametrize("convention", ["corrected", "paper"])
def test_structured_ground_truth_on_the_support(kw, convention):
    """y g*(x) >= 1 on the whole support, exactly in integers; the float network agrees to 1e-12 (sums of <= 3r(k+1)
    terms of size <= (k+1)); the corrected writing has only biases >= 0 (erratum 4); ||a*||^2 = 6rk(k+1) (erratum 5)."""
    sp = StructuredParity(**kw)
    Phi, y, prob = sp._support()
    r, k = sp.r, sp.k
    S = Phi[:, :r * k].reshape(-1, r, k).sum(2).astype(int)
    exact = np.array(_gstar_integer(S.tolist(), k))
    assert np.all(y * exact >= 1) and np.all(prob > 0)
    a, W, b = sp.ground_truth(convention)
    np.testing.assert_allclose(relu_net(a, W, b, Phi), exact, rtol=0, atol=1e-12)
    assert a.shape == (3 * r * (k + 1),) and np.sum(a * a) == pytest.approx(6 * r * k * (k + 1), rel=1e-14)
    assert np.abs(a).max() == pytest.approx(2 * math.sqrt(k)) and np.abs(b).max() <= (k + 1) / math.sqrt(k) + 1e-15
    assert (b.min() >= 0) == (convention == "corrected")


def test_structured_ground_truth_V4():
    """Spec V4: d = 200, r = 3, k = 15, p_A = 0.1: ||a*|| = 65.73 (paper's B_a2: 53.67), min y g* = 1 on samples, the
    exact hinge risk is O(1e-15) (OPT = 0) and the exact logistic risk matches Monte Carlo within 4.5 SE."""
    sp = StructuredParity(200, 3, 15, 0.1, 45 / 155, M=orthonormal(200, 4))
    a, W, b = sp.ground_truth()
    assert np.linalg.norm(a) == pytest.approx(65.7267069, rel=1e-8)
    X, y = sp.sample(20_000, 5)
    margin = y * relu_net(a, W, b, X)
    assert margin.min() > 1 - 1e-12
    value, se = sp.ground_truth_loss("hinge")
    assert 0 <= value < 1e-13 and se == 0
    exact, _ = sp.ground_truth_loss("logistic")
    mc = logistic2(margin)
    assert abs(mc.mean() - exact) <= Z_MAX * mc.std() / math.sqrt(len(mc))
    assert exact > logistic2(3.0) and hinge(margin).max() < 1e-12


def test_structured_ground_truth_loss_equals_enumeration():
    """The block-sum formula vs the full support (tiny d), base-2 logistic; float sums: 1e-14."""
    sp = StructuredParity(9, 3, 3, 0.05, 0.0)
    Phi, y, prob = sp._support()
    a, W, b = sp.ground_truth()
    assert sp.ground_truth_loss("logistic")[0] == pytest.approx(prob @ logistic2(y * relu_net(a, W, b, Phi)),
                                                                abs=1e-14)


def test_structured_sampler_and_bounds():
    """Component and noise frequencies, y never 0, ||x|| = ||phi||; bounds vs the sample (|z| <= 4.5) and <= the
    paper's (sqrt d, sqrt d, d)."""
    sp = StructuredParity(60, 3, 5, 0.08, 0.1, M=orthonormal(60, 6))
    n = 50_000
    phi, y = sp._sample_phi(n, np.random.default_rng(7))
    X, y2 = sp.sample(n, 7)
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1) ** 2, (phi != 0).sum(1), rtol=1e-12)
    assert set(np.unique(y)) == {-1.0, 1.0} and y.dtype == X.dtype == np.float64
    zero_blocks = (phi[:, :15].reshape(n, 3, 5) == 0).all(2).sum(1)
    frac = np.mean(zero_blocks == 2)                             # a structured component: 2 r p_A = 0.48
    assert abs(frac - 0.48) <= Z_MAX * math.sqrt(0.48 * 0.52 / n)
    noise = phi[:, 15:]
    assert abs(np.mean(noise == 1) - 0.1) <= Z_MAX * math.sqrt(0.09 / noise.size)
    Bx, Bx1, Bx2 = sp.bounds()
    sq = np.sum(X * X, 1)
    assert np.sqrt(sq).max() <= Bx + 1e-12 and Bx == pytest.approx(math.sqrt(60))
    assert abs(np.sqrt(sq).mean() - Bx1) <= Z_MAX * np.sqrt(sq).std() / math.sqrt(n)
    assert abs(sq.mean() - Bx2) <= Z_MAX * sq.std() / math.sqrt(n)
    assert Bx1 <= math.sqrt(60) and Bx2 <= 60
    assert Bx2 == pytest.approx(0.52 * 15 + 0.48 * 5 + 0.2 * 45, rel=1e-14)
    np.testing.assert_allclose(sp.features() @ sp.features().T, np.eye(3), atol=1e-14)


@pytest.mark.parametrize("kwargs,name", [
    (dict(d=10, r=2, k=3, p_A=0.1, p_o=0.1), "'r'"), (dict(d=10, r=1, k=2, p_A=0.1, p_o=0.1), "'k'"),
    (dict(d=10, r=3, k=5, p_A=0.1, p_o=0.1), "'k'"), (dict(d=10, r=3, k=3, p_A=0.2, p_o=0.1), "'p_A'"),
    (dict(d=10, r=1, k=3, p_A=0.1, p_o=0.6), "'p_o'"), (dict(d=10, r=1, k=3, p_A=-0.1, p_o=0.1), "'p_A'"),
    (dict(d=3, r=1, k=3, p_A=0.1, p_o=0.1, M=np.ones((3, 3))), "'M'"),
    (dict(d=3, r=1, k=3, p_A=0.1, p_o=0.1, M=np.eye(4)), "'M'"),
    (dict(d=3, r=1, k=3, p_A=float("nan"), p_o=0.1), "'p_A'")])
def test_structured_bad_parameters(kwargs, name):
    with pytest.raises(InvalidParameterError, match=name):
        StructuredParity(**kwargs)


def test_structured_bad_calls():
    sp = StructuredParity(40, 1, 3, 0.1, 0.1)
    with pytest.raises(InvalidParameterError, match="'d'"):
        sp.simplified_gradient(np.ones((1, 40)), 0.0)
    with pytest.raises(InvalidParameterError, match="'d'"):
        sp.A(np.ones((1, 40)), 0.0)
    with pytest.raises(InvalidParameterError, match="'W'"):
        sp.simplified_gradient_mc(np.ones((1, 39)), 0.0, 10, 0)
    with pytest.raises(InvalidParameterError, match="'method'"):
        sp.simplified_gradient_mc(np.ones((1, 40)), 0.0, 10, 0, method="torch")
    with pytest.raises(InvalidParameterError, match="'convention'"):
        sp.ground_truth("other")
    with pytest.raises(InvalidParameterError, match="'loss'"):
        sp.ground_truth_loss("mse")
