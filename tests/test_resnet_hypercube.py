"""ResNet vs kernels, hypercube part: Krawtchouk tables, level eigenvalues, kernel profiles, KRR and the exact
Parseval test error ([AllenZhu19, Prop. E.1, Lemma E.2]; derivations in docs/resnet.md).

Oracles: exact integer binomial sums, brute-force averages over all pairs of the cube (d <= 10), enumeration of
all 2^d test points (d <= 14), explicit Hadamard matrices, Monte Carlo with a stated z for the ReLU kernels.
"""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from popdyn import InvalidParameterError
from popdyn.models import resnet
from popdyn.models.resnet import (arcsin, captured_coefficients, dot_product_profile, exact_test_error, fwht,
                                  gaussian, hamming_matrix, hypercube_points, kernel_matrix, krawtchouk, krr_fit,
                                  lemma_e2_bound, level_eigenvalues, polynomial, profile_from_eigenvalues, relu_nngp,
                                  relu_ntk, relu_ntk_hidden, walsh_index)

Z_MAX = 4.5  # two-sided max-|z| over <= 40 Monte Carlo comparisons: false-alarm probability < 1e-3

KERNELS = {
    "relu_nngp": relu_nngp, "relu_nngp_nobias": lambda d: relu_nngp(d, bias=False),
    "relu_ntk_hidden": relu_ntk_hidden, "relu_ntk_hidden_nobias": lambda d: relu_ntk_hidden(d, bias=False),
    "relu_ntk": relu_ntk, "gaussian": gaussian, "gaussian_h2": lambda d: gaussian(d, h=2.0),
    "arcsin": arcsin, "arcsin_bias": lambda d: arcsin(d, bias=True), "poly3": lambda d: polynomial(d, 3),
    "poly2_c0": lambda d: polynomial(d, 2, c=0.0),
}


def _chi(X, S):
    return np.prod(X[:, list(S)], axis=1)


def _random_points(rng, N, d):
    return rng.choice([-1.0, 1.0], size=(N, d))


# ------------------------------------------------------------------ Krawtchouk ---------------------------------

@pytest.mark.parametrize("d", [1, 2, 5, 12])
def test_krawtchouk_equals_binomial_sum(d):
    K = krawtchouk(d)
    direct = [[sum((-1) ** j * math.comb(t, j) * math.comb(d - t, ell - j) for j in range(min(t, ell) + 1))
               for t in range(d + 1)] for ell in range(d + 1)]
    assert K.tolist() == direct


@pytest.mark.parametrize("d", [7, 30, 60])
def test_krawtchouk_exact_identities(d):
    K = [[int(v) for v in row] for row in krawtchouk(d)]
    # K^2 = 2^d I and C(d,t) K_l(t) = C(d,l) K_t(l), in exact integers
    for ell in range(0, d + 1, max(1, d // 6)):
        for m in range(d + 1):
            assert sum(K[ell][t] * K[t][m] for t in range(d + 1)) == (2 ** d if ell == m else 0)
            assert math.comb(d, m) * K[ell][m] == math.comb(d, ell) * K[m][ell]
    t, ell = d // 2, d // 3  # one entry against the alternating sum (the float64 sum is off here at d = 60)
    assert K[ell][t] == sum((-1) ** j * math.comb(t, j) * math.comb(d - t, ell - j) for j in range(ell + 1))


# ------------------------------------------------------------------ level eigenvalues ---------------------------

@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("d", [6, 9])
def test_level_eigenvalues_vs_brute_force(name, d):
    """lambda_S^2 = E_{x,y}[K(x,y) chi_S(x) chi_S(y)] over all 4^d pairs, one random S per level."""
    rng = np.random.default_rng(d)
    kappa = KERNELS[name](d)
    X = hypercube_points(d)
    Kmat = kappa[((d - X @ X.T) / 2).round().astype(int)]  # distances by inner products, not by popcount
    lam2 = level_eigenvalues(kappa, d)
    for ell in range(d + 1):
        chi = _chi(X, sorted(rng.choice(d, ell, replace=False)))
        assert chi @ Kmat @ chi / 4.0 ** d == pytest.approx(lam2[ell], abs=1e-14)  # float64 sums of 4^d terms


def test_gaussian_profile_is_the_gaussian_kernel():
    d, h = 7, 3.5
    X = hypercube_points(d)
    direct = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / h)
    assert np.allclose(kernel_matrix(gaussian(d, h), X), direct, rtol=1e-14, atol=0)


@pytest.mark.parametrize("bias", [False, True])
def test_relu_profiles_vs_monte_carlo(bias):
    """CK = E sigma(<w,x>) sigma(<w,y>) and hidden NTK = <x,y> E 1[<w,x>>0] 1[<w,y>>0], w ~ N(0, I), unit inputs."""
    d, n = 5, 400_000
    rng = np.random.default_rng(11 + bias)
    ck, ntk = relu_nngp(d, bias), relu_ntk_hidden(d, bias)
    x = np.ones(d)
    for t in range(d + 1):
        y = x.copy()
        y[:t] = -1.0
        xt, yt = (np.append(x, 1.0), np.append(y, 1.0)) if bias else (x, y)
        xt, yt = xt / np.linalg.norm(xt), yt / np.linalg.norm(yt)
        G = rng.standard_normal((n, xt.size))
        a, b = G @ xt, G @ yt
        for samples, value in [(np.maximum(a, 0) * np.maximum(b, 0), ck[t]),
                               ((xt @ yt) * (a > 0) * (b > 0), ntk[t])]:
            # + 1e-15: at y = -x (no bias) or <x,y> = 0 (t = 3, bias) the samples are 0 or rounding-level
            assert abs(samples.mean() - value) < Z_MAX * samples.std() / math.sqrt(n) + 1e-15
    assert np.allclose(relu_ntk(d, bias), ck + ntk, rtol=0, atol=1e-15)


def test_field_names_and_their_aliases():
    """relu_nngp / relu_ntk are the field's names; relu_ck / relu_ntk_full, the earlier names, are the same objects
    and are accepted wherever a kernel is named (Problem, kernel_eigenvalues); fc2_kernel_limit takes the field names
    "ntk_hidden" / "nngp" and the simulation's "ntk" / "ck" for the same kernels."""
    assert resnet.relu_ck is resnet.relu_nngp and resnet.relu_ntk_full is resnet.relu_ntk
    assert resnet.hypercube.relu_ck is relu_nngp and resnet.hypercube.relu_ntk_full is relu_ntk
    assert {"relu_nngp", "relu_ntk", "relu_ntk_hidden", "relu_ck"} <= set(resnet.KERNELS)
    assert resnet.KERNELS["relu_ck"] is resnet.KERNELS["relu_nngp"] is relu_nngp
    assert resnet.KERNELS["relu_ntk"] is relu_ntk
    assert np.array_equal(resnet.Problem(kernel="relu_ck", d=8, k=2).kappa,
                          resnet.Problem(kernel="relu_nngp", d=8, k=2).kappa)
    for old, new in (("relu_ck", "relu_nngp"), ("relu_ntk_full", "relu_ntk")):
        assert np.array_equal(resnet.kernel_eigenvalues(old, 7), resnet.kernel_eigenvalues(new, 7))
    for old, new in (("ck", "nngp"), ("ntk", "ntk_hidden")):
        assert np.array_equal(resnet.fc2_kernel_limit(old, 6), resnet.fc2_kernel_limit(new, 6))
    with pytest.raises(InvalidParameterError, match="'kernel'"):
        resnet.fc2_kernel_limit("relu_ntk", 6)


def test_theory_imports_and_runs_without_torch():
    """The kernels' theory (popdyn.kernels, popdyn.models.resnet with fc2_kernel_limit, popdyn.models.kernels) needs
    no torch: in a fresh interpreter where importing torch fails, each imports and computes."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['torch'] = None\n"
            "from popdyn import kernels\n"
            "from popdyn.models import resnet, kernels as mk\n"
            "assert resnet.fc2_kernel_limit('nngp', 5)[0] > 0 and kernels.fc(2, 'relu').profile(5)[0] > 0\n"
            "assert mk.cube_eigenvalues(kernels.fc(1, 'erf'), 5).size == 6\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch' and sys.modules[m] is not None))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("d", [3, 12])
def test_relu_profiles_are_popdyn_kernels_depth_one(d):
    """Without bias, relu_nngp / relu_ntk are fc(1, "relu") (W = 1, b = 0) on the cube and relu_ntk_hidden their
    difference: the NNGP and the NTK of the field, and the hidden weights' share of the NTK."""
    from popdyn import kernels
    net = kernels.fc(1, "relu")
    nngp, ntk = net.profile(d, "nngp"), net.profile(d, "ntk")
    scale = relu_nngp(d, False) + np.abs(relu_ntk_hidden(d, False))
    # 16 eps: both sides within 4-16 eps of the closed forms (their Notes)
    assert np.all(np.abs(nngp - relu_nngp(d, False)) <= 16 * np.finfo(float).eps * scale)
    assert np.all(np.abs(ntk - relu_ntk(d, False)) <= 16 * np.finfo(float).eps * scale)
    assert np.all(np.abs((ntk - nngp) - relu_ntk_hidden(d, False)) <= 32 * np.finfo(float).eps * scale)


# ------------------------------------------------------------------ properties: spectrum and profiles ------------

@settings(max_examples=30)
@given(d=st.integers(1, 40), name=st.sampled_from(sorted(KERNELS)))
def test_level_eigenvalues_psd_inverse_trace(d, name):
    """lambda^2 >= 0 (PSD), kappa_t = sum_l lambda_l^2 K_l(t), kappa_0 = sum_l C(d,l) lambda_l^2."""
    kappa = KERNELS[name](d)
    lam2 = level_eigenvalues(kappa)
    scale = np.abs(kappa).max()
    assert lam2.min() >= -1e-12 * scale
    # both maps are exact rational sums rounded once: |error_t| <= eps sum_l C(d,l) |lambda_l^2| = eps kappa_0
    assert np.allclose(profile_from_eigenvalues(lam2), kappa, rtol=0, atol=4e-16 * scale)
    assert math.fsum(math.comb(d, ell) * lam2[ell] for ell in range(d + 1)) == pytest.approx(kappa[0], rel=1e-12)


@given(d=st.integers(1, 40))
def test_zero_levels_of_bias_free_kernels(d):
    """bias-free ReLU CK/NTK vanish on odd levels >= 3, arcsin on even levels; the bias removes both."""
    for kappa in (relu_nngp(d, bias=False), relu_ntk_hidden(d, bias=False), relu_ntk(d, bias=False)):
        lam2 = level_eigenvalues(kappa)
        assert np.all(np.abs(lam2[3::2]) <= 1e-14 * lam2[0])
    lam2 = level_eigenvalues(arcsin(d))
    assert np.all(np.abs(lam2[0::2]) <= 1e-14 * lam2[1])
    if d >= 3:
        assert level_eigenvalues(relu_nngp(d, bias=True))[3] > 1e-10 * level_eigenvalues(relu_nngp(d, bias=True))[0]
        assert level_eigenvalues(arcsin(d, bias=True))[2] > 0


@given(d=st.integers(1, 40), fn=st.sampled_from([np.arcsin, np.exp, lambda r: (1.0 + r) ** 3,
                                                  lambda r: (np.sqrt(1 - np.clip(r, -1, 1) ** 2)
                                                             + (np.pi - np.arccos(np.clip(r, -1, 1))) * r)]))
def test_bias_levels_are_sums_of_adjacent_levels(d, fn):
    """The bias input is coordinate d+1 fixed to 1, so lambda_l^2(bias, d) = lambda_l^2(d+1) + lambda_{l+1}^2(d+1)."""
    with_bias = level_eigenvalues(dot_product_profile(fn, d, bias=True))
    lifted = level_eigenvalues(dot_product_profile(fn, d + 1, bias=False))
    assert np.allclose(with_bias, lifted[:-1] + lifted[1:], rtol=1e-12, atol=1e-15 * abs(with_bias[0]))


@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 30))
def test_profile_eigenvalue_round_trip(seed, d):
    lam2 = np.random.default_rng(seed).exponential(size=d + 1) / 2.0 ** d
    kappa = profile_from_eigenvalues(lam2)
    assert np.allclose(level_eigenvalues(kappa), lam2, rtol=1e-9, atol=1e-15 * kappa[0])


# ------------------------------------------------------------------ Hamming, points, FWHT ----------------------

@pytest.mark.parametrize("d", [1, 8, 63, 64, 65, 130])
def test_hamming_matrix_vs_inner_products(d):
    rng = np.random.default_rng(d)
    X, Y = _random_points(rng, 37, d), _random_points(rng, 23, d)
    H = hamming_matrix(X, Y)
    assert H.dtype == np.int64
    assert np.array_equal(H, ((d - X @ Y.T) / 2).astype(np.int64))
    assert np.array_equal(hamming_matrix(X), ((d - X @ X.T) / 2).astype(np.int64))


@pytest.mark.parametrize("d", [1, 3, 8])
def test_fwht_vs_hadamard_matrix(d):
    X = hypercube_points(d)
    assert len({tuple(r) for r in X}) == 2**d
    vals = np.random.default_rng(d).standard_normal((2**d, 3))
    H = np.array([_chi(X, [j for j in range(d) if m >> j & 1]) for m in range(2**d)])
    assert np.allclose(fwht(vals), H @ vals / 2**d, rtol=0, atol=1e-14)
    assert np.allclose(fwht(vals[:, 0]), H @ vals[:, 0] / 2**d, rtol=0, atol=1e-14)
    assert np.allclose(fwht(fwht(vals)) * 2**d, vals, atol=1e-12)  # H^2 = 2^d I


def test_fwht_reads_a_walsh_expansion():
    d, target = 10, {(): 0.25, (3,): -1.0, (0, 4, 9): 0.3, tuple(range(10)): 2.0}
    X = hypercube_points(d)
    c = fwht(sum(v * _chi(X, S) for S, v in target.items()))
    expected = np.zeros(2**d)
    for S, v in target.items():
        expected[walsh_index(S)] = v
    assert np.allclose(c, expected, rtol=0, atol=1e-14)


# ------------------------------------------------------------------ KRR and the exact test error ---------------

def _thm2_target(d, k, alpha, rng):
    S = tuple(sorted(int(j) for j in rng.choice(d, k, replace=False)))
    return [{(i,): 1.0, S: alpha} for i in S], S


def _enumerated_error(kappa, X, beta, target, d):
    Xall = hypercube_points(d)
    pred = kappa[((d - Xall @ X.T) / 2).round().astype(int)] @ beta.reshape(len(X), -1)
    f = np.stack([sum(c * _chi(Xall, S) for S, c in t.items()) for t in target], axis=1)
    return ((pred - f) ** 2).mean(axis=0)


@pytest.mark.parametrize("name, d, N, lam", [("relu_ntk", 12, 300, 1e-3), ("relu_nngp", 14, 250, 1e-4),
                                             ("gaussian", 12, 200, 1e-2), ("arcsin_bias", 13, 150, 1e-3),
                                             ("relu_nngp_nobias", 12, 100, 1e-6)])
def test_exact_test_error_vs_enumeration(name, d, N, lam):
    """Parseval error = mean over all 2^d test points (1e-10: float64 sums of ~2^14 squares)."""
    rng = np.random.default_rng(d + N)
    kappa = KERNELS[name](d)
    X = _random_points(rng, N, d)
    target, S = _thm2_target(d, 4, 0.5, rng)
    target[0][()] = 0.3  # a constant term and a pair, too
    target[1][(0, 1)] = -0.7
    Y = np.stack([sum(c * _chi(X, T) for T, c in t.items()) for t in target], axis=1)
    beta = krr_fit(kappa, X, Y, lam)
    err = exact_test_error(kappa, X, beta, target)
    assert np.allclose(err, _enumerated_error(kappa, X, beta, target, d), rtol=1e-10, atol=1e-12)
    assert np.all(err >= lemma_e2_bound(kappa, X, beta, target) - 1e-12)


def test_exact_test_error_spec_number():
    """Reference script (d = 12, relu NTK + bias, N = 300 of the cube without replacement, lam = 1e-3): the exact
    error 0.285036316063 (enumeration = Parseval to 12 digits there), rebuilt with that script's rng stream."""
    d, N, lam, alpha, S = 12, 300, 1e-3, 0.5, (0, 3, 5, 8)
    Xall = np.array(list(itertools.product([-1, 1], repeat=d)), float)  # V5's order, not hypercube_points
    X = Xall[np.random.default_rng(3).choice(len(Xall), N, replace=False)]
    kappa = relu_ntk(d)
    target = [{(0,): 1.0, S: alpha}]
    beta = krr_fit(kappa, X, X[:, 0] + alpha * _chi(X, S), lam)
    err = exact_test_error(kappa, X, beta, target)
    assert err[0] == pytest.approx(0.285036316063, abs=1e-12)  # printed to 12 digits
    assert err == pytest.approx(_enumerated_error(kappa, X, beta, target, d), rel=1e-10)
    c = captured_coefficients(kappa, X, beta, [(0,), S])
    assert lemma_e2_bound(kappa, X, beta, target)[0] == pytest.approx((c[0] - 1) ** 2 + (c[1] - alpha) ** 2, rel=1e-14)
    assert lemma_e2_bound(kappa, X, beta, target)[0] < err[0]


@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(2, 8), name=st.sampled_from(sorted(KERNELS)))
def test_captured_coefficients_are_walsh_coefficients(seed, d, name):
    """c_S = <K_beta, chi_S> (FWHT of the predictor on the cube) and ||u||^2 = beta^T K beta."""
    rng = np.random.default_rng(seed)
    kappa = KERNELS[name](d)
    X = _random_points(rng, 9, d)
    beta = rng.standard_normal((9, 2))
    Xall = hypercube_points(d)
    spectrum = fwht(kernel_matrix(kappa, Xall, X) @ beta)
    sets = [tuple(j for j in range(d) if m >> j & 1) for m in range(2**d)]
    c = captured_coefficients(kappa, X, beta, sets)
    assert np.allclose(c, spectrum, rtol=0, atol=1e-13 * np.abs(kappa).max())
    lam2 = level_eigenvalues(kappa)[[len(S) for S in sets]]
    keep = lam2 > 1e-12 * np.abs(kappa).max()
    u2 = (c[keep] ** 2 / lam2[keep, None]).sum(axis=0)  # u_S = c_S / lambda_S
    assert np.allclose(u2, np.einsum("ji,jl,li->i", beta, kernel_matrix(kappa, X), beta), rtol=1e-8, atol=1e-12)


@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(3, 9), name=st.sampled_from(sorted(KERNELS)))
def test_error_invariances(seed, d, name):
    """error >= 0 and >= Lemma E.2; invariant under permuting coordinates of X and of the target,
    and under flipping column j of X with the sign of every coefficient whose set contains j."""
    rng = np.random.default_rng(seed)
    kappa = KERNELS[name](d)
    X = _random_points(rng, 12, d)
    beta = rng.standard_normal((12, 2))
    target = [{tuple(sorted(int(j) for j in rng.choice(d, rng.integers(0, d + 1), replace=False))): rng.normal()
               for _ in range(3)} for _ in range(2)]
    err = exact_test_error(kappa, X, beta, target)
    assert np.all(err >= lemma_e2_bound(kappa, X, beta, target) - 1e-12 * (1 + err))
    assert np.all(err >= -1e-12)
    perm = rng.permutation(d)  # new coordinate perm[j] holds old coordinate j
    Xp = np.empty_like(X)
    Xp[:, perm] = X
    tp = [{tuple(sorted(int(perm[j]) for j in S)): c for S, c in t.items()} for t in target]
    assert np.allclose(exact_test_error(kappa, Xp, beta, tp), err, rtol=1e-10, atol=1e-12)
    j = int(rng.integers(d))
    Xf = X.copy()
    Xf[:, j] *= -1
    tf = [{S: (-c if j in S else c) for S, c in t.items()} for t in target]
    assert np.allclose(exact_test_error(kappa, Xf, beta, tf), err, rtol=1e-10, atol=1e-12)


def test_krr_fit_solves_program_3_1():
    """Stationarity of (3.1): K[(K + N lam I) beta - Y] = 0, and the objective rises along random directions."""
    rng = np.random.default_rng(5)
    d, N, lam = 10, 60, 1e-2
    kappa = relu_ntk(d)
    X = _random_points(rng, N, d)
    Y = rng.standard_normal((N, 3))
    beta = krr_fit(kappa, X, Y, lam)
    K = kernel_matrix(kappa, X)
    assert np.allclose(K @ ((K + N * lam * np.eye(N)) @ beta - Y), 0, atol=1e-10)

    def objective(b):
        return ((K @ b - Y) ** 2).sum() / N + lam * np.trace(b.T @ K @ b)
    for _ in range(5):
        assert objective(beta + 1e-3 * rng.standard_normal(beta.shape)) > objective(beta)


def test_krr_interpolates_as_lam_goes_to_zero_and_is_continuous():
    """the Gaussian Gram matrix of distinct points is PD, so lam -> 0+ interpolates; beta(lam) is
    continuous (a grid fit equals single fits)."""
    rng = np.random.default_rng(8)
    d = 9
    X = hypercube_points(d)[rng.choice(2**d, 80, replace=False)]
    Y = rng.standard_normal(80)
    kappa = gaussian(d, h=3.0)
    K = kernel_matrix(kappa, X)
    lams = np.array([1e-2, 1e-4, 1e-6, 1e-8])
    betas = krr_fit(kappa, X, Y, lams)
    residuals = [np.abs(K @ b - Y).max() for b in betas]
    assert all(r2 < r1 for r1, r2 in zip(residuals, residuals[1:])) and residuals[-1] < 1e-5
    assert np.allclose(betas[1], krr_fit(kappa, X, Y, 1e-4), rtol=1e-9, atol=0)  # eigh vs Cholesky, cond ~ 1e3
    assert np.allclose(krr_fit(kappa, X, Y, 1e-4 * (1 + 1e-7)), betas[1], rtol=1e-5, atol=0)


def test_kernel_does_not_learn_the_parity_part():
    """The phenomenon behind Theorem 2 (docs/resnet.md): at N << C(d, k) the captured chi_{S*} coefficient stays far
    below alpha while the linear parts are learned (d = 16, k = 4, C(16,4) = 1820, N = 200)."""
    rng = np.random.default_rng(12)
    d, k, alpha, N = 16, 4, 0.5, 200
    X = _random_points(rng, N, d)
    target, S = _thm2_target(d, k, alpha, rng)
    Y = X[:, list(S)] + alpha * _chi(X, S)[:, None]
    kappa = relu_ntk(d)
    beta = krr_fit(kappa, X, Y, 1e-4)
    c = captured_coefficients(kappa, X, beta, [S] + [(i,) for i in S])
    assert np.all(np.abs(c[0]) < alpha / 4)
    assert np.all(np.diag(c[1:]) > 0.5)
    assert np.all(exact_test_error(kappa, X, beta, target) > alpha**2 / 4)


# ------------------------------------------------------------------ bad inputs --------------------------------

X4 = np.array([[1.0, -1.0, 1.0, 1.0], [-1.0, -1.0, 1.0, 1.0]])
K4 = relu_nngp(4)


@pytest.mark.parametrize("call, name", [
    (lambda: krawtchouk(0), "d"), (lambda: krawtchouk(61), "d"), (lambda: krawtchouk(2.0), "d"),
    (lambda: level_eigenvalues([1.0]), "kappa"), (lambda: level_eigenvalues([1.0, np.nan]), "kappa"),
    (lambda: level_eigenvalues([1.0, 0.5, 0.2], d=3), "kappa"),
    (lambda: gaussian(4, h=0.0), "h"), (lambda: polynomial(4, -1), "q"), (lambda: polynomial(4, 2, c=-1.0), "c"),
    (lambda: dot_product_profile(lambda r: np.log(r), 4), "fn"),
    (lambda: hamming_matrix([[1.0, 0.0]]), "X"), (lambda: hamming_matrix(X4, X4[:, :3]), "Y"),
    (lambda: fwht(np.ones(6)), "values"), (lambda: fwht([np.inf, 1.0]), "values"),
    (lambda: hypercube_points(23), "d"),
    (lambda: krr_fit(K4, X4, [1.0, 2.0], 0.0), "lam"), (lambda: krr_fit(K4, X4, [1.0, 2.0], [1e-3, -1.0]), "lam"),
    (lambda: krr_fit(K4, X4, [1.0, 2.0, 3.0], 1e-3), "Y"), (lambda: krr_fit(K4, X4[:, :3], [1.0, 2.0], 1e-3), "X"),
    (lambda: krr_fit(-np.arange(5.0), X4, [1.0, 2.0], 1e-3), "kappa"),
    (lambda: krr_fit(-np.arange(5.0), X4, [1.0, 2.0], [1e-3]), "kappa"),
    (lambda: exact_test_error(K4, X4, np.ones(2), [{(0,): 1.0}, {(1,): 1.0}]), "beta"),
    (lambda: exact_test_error(K4, X4, np.ones(3), [{(0,): 1.0}]), "beta"),
    (lambda: exact_test_error(K4, X4, np.ones(2), [{(1, 0): 1.0}]), "target"),
    (lambda: exact_test_error(K4, X4, np.ones(2), [{(4,): 1.0}]), "target"),
    (lambda: exact_test_error(K4, X4, np.ones(2), {(0,): 1.0}), "target"),
    (lambda: exact_test_error(K4, X4, np.ones(2), 5), "target"),
    (lambda: exact_test_error(K4, X4, np.ones(2), []), "target"),
    (lambda: exact_test_error(K4, X4, np.ones(2), [{(0,): np.nan}]), "target"),
    (lambda: captured_coefficients(K4, X4, np.ones(2), [(2, 2)]), "sets"),
    (lambda: lemma_e2_bound(K4, X4, np.ones((2, 2)), [{(0,): 1.0}]), "beta"),
])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(InvalidParameterError, match=repr(name)):
        call()


def test_all_levels_of_small_cube_enumerated():
    """Every subset S of [d] at d = 5 (not one per level): lambda_S^2 depends on |S| only (Prop. E.1)."""
    d = 5
    X = hypercube_points(d)
    kappa = relu_ntk(d)
    Kmat = kernel_matrix(kappa, X)
    lam2 = level_eigenvalues(kappa)
    for r in range(d + 1):
        for S in itertools.combinations(range(d), r):
            chi = _chi(X, S)
            assert chi @ Kmat @ chi / 4.0**d == pytest.approx(lam2[r], abs=1e-15)


@pytest.mark.parametrize("lam", [1e-4, 1e-8, 1e-11, 1e-14])
def test_exact_test_error_holds_at_tiny_ridges_against_exact_rational_arithmetic(lam):
    """A target on a level the kernel does not see (ReLU NTK without bias: odd levels >= 3) makes beta explode as
    the ridge shrinks; the error is still O(1). Reference: the average of (f - K)^2 over the whole cube with every
    product and sum in exact rationals (the predictor's own float kernel values and beta)."""
    from fractions import Fraction
    import itertools
    d, N, S = 8, 200, (0, 1, 2)  # N > 136, the dimension of the levels the kernel sees: K is near singular
    rng = np.random.default_rng(3)
    X = rng.choice([-1.0, 1.0], size=(N, d))
    kappa = resnet.relu_ntk(d, bias=False)
    beta = resnet.krr_fit(kappa, X, np.prod(X[:, list(S)], axis=1), lam)
    err, acc = exact_test_error(kappa, X, beta, [{S: 1.0}], return_accuracy=True)
    cube = np.array(list(itertools.product([-1.0, 1.0], repeat=d)))
    T = resnet.hamming_matrix(cube, X)
    B = [Fraction(float(v)) for v in beta]
    Kf = [Fraction(float(v)) for v in kappa]
    total = Fraction(0)
    for x, row in zip(cube, T):
        g = sum((B[j] * Kf[row[j]] for j in range(N)), Fraction(0))
        total += (Fraction(float(np.prod(x[list(S)]))) - g) ** 2
    exact = float(total / len(cube))
    assert err[0] >= 0 and abs(err[0] - exact) <= max(10 * acc[0], 1e-12 * exact), (err, exact, acc)
    assert lam > 1e-9 or np.abs(beta).sum() > 1e-2 / lam  # beta ~ 1/ridge: where the plain quadratic form failed


def test_parallel_pair_loops_equal_the_serial_ones(monkeypatch):
    """From 2^22 pairs the Hamming matrix and the exact error's pair sums run in parallel (a separately cached
    dispatcher): the same numbers, bit for bit, as the serial loops on a small problem forced parallel."""
    from popdyn.models.resnet import hypercube as hc
    rng = np.random.default_rng(5)
    d = 12
    X = rng.choice([-1.0, 1.0], size=(300, d))
    kappa = resnet.relu_ntk(d)
    target = [{(0, 3): 1.0, (5,): -0.5}]
    y = np.prod(X[:, [0, 3]], axis=1) - 0.5 * X[:, 5]
    beta = resnet.krr_fit(kappa, X, y, 1e-3)
    serial = hamming_matrix(X), exact_test_error(kappa, X, beta, target)
    monkeypatch.setattr(hc, "_PARALLEL_PAIRS", 1)
    parallel = hamming_matrix(X), exact_test_error(kappa, X, beta, target)
    np.testing.assert_array_equal(serial[0], parallel[0])
    np.testing.assert_array_equal(serial[1], parallel[1])
