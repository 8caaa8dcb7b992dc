"""Kernel learning on the hypercube (popdyn.models.kernels): the level eigenvalues against the Gram matrix of the whole
cube, the exact test error against brute force over every point, the eigenlearning equations against mpmath and
their invariants (Hypothesis), label noise against simulation, and bad input named by parameter."""
import math

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import popdyn
from popdyn import kernels as fc
from popdyn._validate import InvalidParameterError
from popdyn.models import kernels
from popdyn.models.resnet import fwht, hypercube_points, walsh_index

NETS = [(fc.fc(1, "relu"), "ntk"), (fc.fc(1, "relu", math.sqrt(2), 0.1), "nngp"), (fc.fc(3, "relu", 1.3, 0.2), "ntk"),
        (fc.fc(2, "erf", 1.0, 0.1), "nngp"), (fc.fc(2, "tanh", 1.0, 0.3), "ntk"), (fc.fc(1, "sign", b_std=0.5), "nngp")]


# ---- level eigenvalues against the whole cube's Gram matrix ------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 5, 8, 10])
@pytest.mark.parametrize("i", range(len(NETS)))
def test_cube_eigenvalues_are_the_gram_spectrum_of_the_whole_cube(d, i):
    """The network's own kernel (net.ntk / net.nngp, not the profile) on all 2^d points: K / 2^d has eigenvalue
    lambda_l with multiplicity C(d, l), and each chi_S is its eigenvector."""
    net, kind = NETS[i]
    P = hypercube_points(d)
    G = (net.ntk(P) if kind == "ntk" else net.nngp(P)) / 2.0 ** d
    lam = kernels.cube_eigenvalues(net, d, kind)
    m = kernels.level_multiplicities(d)
    want = np.sort(np.repeat(lam, m.astype(int)))
    got = np.sort(np.linalg.eigvalsh(G))
    # 1e-13 of K(x, x): eigh's backward error ~ 2^d eps ||G|| (<= 1024 eps K(x, x) / 2^d ... = 2.3e-13 at d = 10, with
    # ||G|| <= K(x, x)), the closed forms' ~10 eps and the profile's one rounding of x.y/d
    scale = G[0, 0] * 2.0 ** d
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * scale)
    chi = np.prod(P[:, : min(d, 3)], axis=1)                      # chi_S on level min(d, 3)
    np.testing.assert_allclose(G @ chi, lam[min(d, 3)] * chi, rtol=0, atol=1e-13 * scale)


def test_level_multiplicities_sum_to_the_cube():
    for d in (1, 7, 30, 60):
        assert kernels.level_multiplicities(d).sum() == 2.0 ** d


def test_structural_zeros_come_out_as_zeros():
    """ReLU without bias: odd levels >= 3 are zero for the exact kernel; the float profile gives +-1e-17 (rounding),
    returned as 0 and never negative."""
    lam = kernels.cube_eigenvalues(fc.fc(1, "relu"), 20)
    assert np.all(lam >= 0) and np.all(lam[3::2] < 1e-15 * lam[0])


# ---- the exact test error against brute force over every point --------------------------------------------------

@pytest.mark.parametrize("d,N,ridge,i", [(4, 30, 1e-3, 0), (8, 60, 1e-2, 1), (10, 200, 1e-4, 2), (12, 100, 1e-3, 3),
                                         (14, 150, 1e-3, 4), (14, 300, 1e-6, 0)])
def test_exact_error_is_the_average_over_all_points(d, N, ridge, i):
    net, kind = NETS[i]
    rng = np.random.default_rng([d, N])
    target = kernels.WalshTarget(d, {(0, 1): 1.0, (0,): 0.5, (1, 2, 3): -0.7, (): 0.2})
    X = rng.choice([-1.0, 1.0], size=(N, d))
    y = target(X) + 0.1 * rng.standard_normal(N)
    krr = kernels.KernelRegression(net, X, y, ridge, kind=kind)
    P = hypercube_points(d)
    fhat = krr(P)
    brute = math.fsum((target(P) - fhat) ** 2) / 2 ** d
    err, acc = krr.test_error(target, return_accuracy=True)
    # 1e-12 relative: the brute-force average rounds each of 2^d squares (relative eps) and the predictor's values
    # carry the solve's error in beta, common to both sides; the exact error's own bound acc is below 1e-14
    assert err == pytest.approx(brute, rel=1e-12, abs=1e-14) and acc < 1e-12
    coef = fwht(fhat)                                             # every Walsh coefficient of the predictor
    cap = krr.captured(target)
    np.testing.assert_allclose(cap, [coef[walsh_index(S)] for S in target.sets], rtol=0, atol=1e-12)
    frac = krr.learned_fraction(target)
    for ell in (1, 2, 3):
        sets = [S for S in target.sets if len(S) == ell]
        v = np.array([target.terms[S] for S in sets])
        assert frac[ell] == pytest.approx(sum(coef[walsh_index(S)] * c for S, c in zip(sets, v)) / (v @ v))
    assert np.isnan(frac[4]) and np.all(np.isnan(frac[5:]))     # no target power there


def test_walsh_target_values_and_coefficients_agree():
    d = 9
    target = kernels.WalshTarget(d, {(8, 2): 1.5, (): -0.25, (4,): 2.0})
    P = hypercube_points(d)
    coef = fwht(target(P))
    expect = np.zeros(2 ** d)
    for S, c in target.terms.items():
        expect[walsh_index(S)] = c
    np.testing.assert_allclose(coef, expect, atol=1e-14)         # d butterfly levels on O(1) values
    assert target.norm2() == pytest.approx(np.mean(target(P) ** 2))
    assert target.level_power().tolist() == [0.0625, 4.0, 2.25] + [0.0] * 7
    assert kernels.WalshTarget.parity(5, 3).terms == {(0, 1, 2): 1.0}


@pytest.mark.filterwarnings("ignore:resnet.exact_test_error. achieved accuracy:RuntimeWarning")  # error ~ 0: relative
def test_kernel_regression_on_the_whole_cube_interpolates():
    d = 6
    P = hypercube_points(d)
    target = kernels.WalshTarget.parity(d, 4)
    krr = kernels.KernelRegression(fc.fc(2, "relu", b_std=0.3), P, target(P), 1e-12)
    assert krr.test_error(target) < 1e-10 and krr.learned_fraction(target)[4] == pytest.approx(1.0, abs=1e-9)


# ---- the eigenlearning equations ---------------------------------------------------------------------------------

def test_kappa_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    p = kernels.Problem(d=30, activation="erf", depth=2, b_std=0.1, kernel="nngp", ridge=1e-5)
    lam, m = p.eigenvalues, p.multiplicity
    for N in (1, 17, 400, 5000, 10 ** 6):
        k = kernels.effective_regularization(lam, N, p.ridge, m)[0]
        with mpmath.workdps(40):
            delta = mpmath.mpf(N) * mpmath.mpf(p.ridge)
            h = lambda x: delta / x + mpmath.fsum(mpmath.mpf(mi) * mpmath.mpf(li) / (mpmath.mpf(li) * N + x)
                                                  for li, mi in zip(lam, m)) - 1
            ref = mpmath.findroot(h, (delta, delta + mpmath.fsum(mpmath.mpf(a) * b for a, b in zip(lam, m))),
                                  solver="anderson")
        # 1e-14: Brent to 4 eps on a monotone function whose relative condition is O(1) here
        assert k == pytest.approx(float(ref), rel=1e-14)


def test_one_mode_closed_form_and_the_large_n_limit():
    # one mode: 1 = N r / k + l / (l N + k); l = N = r = 1: k^2 = 1 + k
    assert kernels.effective_regularization([1.0], 1, 1.0)[0] == pytest.approx((1 + math.sqrt(5)) / 2, rel=1e-15)
    lam = np.array([1.0, 0.1, 0.01])
    L = kernels.learnabilities(lam, 10 ** 9, kernels.effective_regularization(lam, 10 ** 9, 0.05))
    np.testing.assert_allclose(L[0], lam / (lam + 0.05), rtol=1e-6)     # N -> inf: population ridge regression


@st.composite
def spectra(draw):
    """Level spectra: 1 to 12 levels, eigenvalues over 12 decades, multiplicities 1 to 1e6, ridge 1e-8 to 1."""
    n = draw(st.integers(1, 12))
    lam = 10.0 ** draw(hnp.arrays(np.float64, n, elements=st.floats(-12, 0)))
    m = np.round(10.0 ** draw(hnp.arrays(np.float64, n, elements=st.floats(0, 6))))
    return lam, m, 10.0 ** draw(st.floats(-8, 0))


@settings(max_examples=200, deadline=None)
@given(spec=spectra(), n=st.lists(st.integers(1, 10 ** 6), min_size=2, max_size=6, unique=True))
@example(spec=(np.array([1e-12]), np.array([1.0]), 1.0), n=[1, 16384])   # excess below an ulp of delta
def test_eigenlearning_invariants(spec, n):
    """kappa > delta = N ridge (>= in floats: equal when the excess sum m lam kappa / (lam N + kappa) is below an ulp
    of delta, and > whenever it is above 4 ulps); sum m L = N (1 - delta / kappa) < N (the conservation law with
    ridge); E0 >= 1; kappa / N decreases and every learnability increases with N."""
    lam, m, ridge = spec
    N = np.sort(np.array(n))
    kappa = kernels.effective_regularization(lam, N, ridge, m)
    delta = N * ridge
    assert np.all(kappa >= delta)
    excess = np.array([(m * lam * k / (lam * n + k)).sum() for k, n in zip(kappa, N)])
    assert np.all((kappa > delta) | (excess < 4 * np.spacing(delta)))
    L = kernels.learnabilities(lam, N, kappa)
    total = (m * L).sum(1)
    np.testing.assert_allclose(total, N * (1 - delta / kappa), rtol=1e-10, atol=1e-9)
    assert np.all(total < N)
    e0 = kernels.overfitting_coefficient(L, N, m)
    assert np.all(e0 >= 1.0)
    assert np.all(np.diff(kappa / N) <= 1e-12 * (kappa / N)[:-1])
    assert np.all(np.diff(L, axis=0) >= -1e-12)


def test_eigenlearning_curve_is_the_pieces():
    p = kernels.Problem.parity(d=20, k=2, b_std=0.1, noise=0.3)
    out = kernels.eigenlearning(p.eigenvalues, p.target.level_power(), [10, 100, 1000], p.ridge, p.noise,
                                p.multiplicity)
    L = kernels.learnabilities(p.eigenvalues, out.n_train, out.kappa)
    e0 = kernels.overfitting_coefficient(L, out.n_train, p.multiplicity)
    want = e0 * ((1 - L[:, 2]) ** 2 + 0.09) - 0.09
    np.testing.assert_allclose(out.test_error, want, rtol=1e-14)
    pred = popdyn.predict(p, n_train=(10, 100, 1000))
    np.testing.assert_array_equal(pred["test_error"], out.test_error)
    np.testing.assert_array_equal(pred["learnability"][:, 0], L[:, 2])


def test_label_noise_enters_through_e0():
    """With label noise the exact errors of 64 training sets follow the theory's E0 (bias + sigma^2) - sigma^2 within 5
    SE, and not the theory without the noise term (d = 16, N <= 200: far from the cube's size)."""
    p = kernels.Problem(d=16, b_std=0.1, noise=0.5)
    sizes = (20, 60, 200)
    pred = popdyn.predict(p, n_train=sizes)
    E = popdyn.simulate(p, n_train=sizes, seeds=64)["test_error"]
    se = E.std(0, ddof=1) / 8
    z = (E.mean(0) - pred["test_error"]) / se
    assert np.all(np.abs(z) < 5), z                              # 5 SE: P(|t_63| > 5) = 5e-6 per size
    noiseless = popdyn.predict(kernels.Problem(d=16, b_std=0.1), n_train=sizes)["test_error"]
    assert np.max(np.abs(E.mean(0) - noiseless) / se) > 10


# ---- bad input ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call,name", [
    (lambda: kernels.WalshTarget(0, {(): 1.0}), "d"),
    (lambda: kernels.WalshTarget(3, {}), "terms"),
    (lambda: kernels.WalshTarget(3, {(0, 3): 1.0}), "terms"),
    (lambda: kernels.WalshTarget(3, {(1, 1): 1.0}), "terms"),
    (lambda: kernels.WalshTarget(3, {(0, 1): 1.0, (1, 0): 2.0}), "terms"),
    (lambda: kernels.WalshTarget(3, {(0,): float("nan")}), "terms"),
    (lambda: kernels.WalshTarget(3, {("a",): 1.0}), "terms"),
    (lambda: kernels.WalshTarget(3, {(0.5,): 1.0}), "terms"),
    (lambda: kernels.WalshTarget(3, {(0,): 1.0})(np.ones((2, 4))), "X"),
    (lambda: kernels.WalshTarget(3, {(0,): 1.0})(np.full((2, 3), 0.5)), "X"),
    (lambda: kernels.WalshTarget.parity(3, 4), "k"),
    (lambda: kernels.cube_eigenvalues("relu", 5), "net"),
    (lambda: kernels.cube_eigenvalues(fc.fc(1, "relu"), 0), "d"),
    (lambda: kernels.cube_eigenvalues(fc.fc(1, "relu"), 5, "cka"), "kernel"),
    (lambda: kernels.KernelRegression(fc.fc(1, "relu"), np.full((3, 4), 0.5), np.zeros(3), 1e-3), "X"),
    (lambda: kernels.KernelRegression(fc.fc(1, "relu"), np.ones((3, 4)), np.zeros(2), 1e-3), "y"),
    (lambda: kernels.KernelRegression(fc.fc(1, "relu"), np.ones((3, 4)), np.zeros(3), 0.0), "ridge"),
    (lambda: kernels.KernelRegression(fc.fc(1, "relu"), np.ones((3, 4)), np.zeros(3), 1e-3, kind="x"), "kind"),
    (lambda: kernels.KernelRegression(np.ones(4), np.ones((3, 4)), np.zeros(3), 1e-3), "X"),
    (lambda: kernels.KernelRegression(fc.fc(1, "relu"), np.ones((3, 4)), np.zeros(3), 1e-3).test_error(
        kernels.WalshTarget(5, {(0,): 1.0})), "target"),
    (lambda: kernels.effective_regularization([1.0, -1.0], 10, 1e-3), "eigenvalues"),
    (lambda: kernels.effective_regularization([0.0], 10, 1e-3), "eigenvalues"),
    (lambda: kernels.effective_regularization([1.0], 0, 1e-3), "n_train"),
    (lambda: kernels.effective_regularization([1.0], 10, 0.0), "ridge"),
    (lambda: kernels.effective_regularization([1.0], 10, 1e-3, multiplicity=[1.0, 2.0]), "multiplicity"),
    (lambda: kernels.learnabilities([1.0], 10, 0.0), "kappa"),
    (lambda: kernels.overfitting_coefficient(np.ones((1, 20)), 10), "learnability"),
    (lambda: kernels.eigenlearning([1.0, 0.5], [1.0], 10, 1e-3), "target_power"),
    (lambda: kernels.eigenlearning([1.0], [-1.0], 10, 1e-3), "target_power"),
    (lambda: kernels.eigenlearning([1.0], [1.0], 10, 1e-3, noise=-1.0), "noise"),
    (lambda: kernels.Problem(d=5, target=kernels.WalshTarget(6, {(0,): 1.0})), "target"),
    (lambda: kernels.Problem(d=5, target={(7,): 1.0}), "terms"),
    (lambda: kernels.Problem(d=5, target="x0"), "target"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        call()
