"""Declared accuracy of popdyn.models.resnet over Hypothesis searches that reach the corners of the model (d to 30
and 60, rho at +-1 (t = 0, d), the structural zero levels of the relu and arcsin kernels without bias, levels k close
to d, ridges to 1e-300 and whole-cube training sets (singular Gram matrices), delta to 1e-300, degrees to 1000,
MSE levels within 1e-12 of 1), against mpmath at 60 digits of the closed forms at the exact rational rho, Krawtchouk
sums from the explicit binomial form in exact rationals, and brute-force enumeration of the cube in exact rationals
(d <= 7)."""
import math
import warnings
from fractions import Fraction

import mpmath as mp
import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from popdyn.models import resnet as R
from popdyn.models.resnet import existential as EX
from popdyn.models.resnet import minnorm as MN

from ._accuracy import EPS, examples, record

KERNELS = ("relu_nngp", "relu_ntk_hidden", "relu_ntk", "arcsin", "gaussian", "polynomial")


def _mp_kernel(kernel, rho, t, h, q, c):
    """The closed forms of the docstrings in mpmath (arccos form, not the angle form of the code)."""
    th = mp.acos(rho)
    ck = (mp.sqrt(1 - rho ** 2) + (mp.pi - th) * rho) / (2 * mp.pi)
    ntk = rho * (mp.pi - th) / (2 * mp.pi)
    return {"relu_nngp": ck, "relu_ntk_hidden": ntk, "relu_ntk": ck + ntk, "arcsin": mp.asin(rho),
            "gaussian": mp.exp(-4 * mp.mpf(t) / h), "polynomial": (rho + mp.mpf(c)) ** q}[kernel]


def _kraw_binomial(d, ell, t):
    """K_ell(t) = sum_j (-1)^j C(t, j) C(d - t, ell - j): the explicit form (the code uses the recurrence)."""
    return sum((-1) ** j * math.comb(t, j) * math.comb(d - t, ell - j) for j in range(ell + 1))


def _profile_call(kernel, d, bias, h, q, c):
    if kernel == "gaussian":
        return R.gaussian(d, h)
    if kernel == "polynomial":
        return R.polynomial(d, q, c, bias)
    return getattr(R, kernel)(d, bias)


kernels_st = st.tuples(st.sampled_from(KERNELS), st.sampled_from([1, 2, 3, 30, 60]) | st.integers(1, 60),
                       st.booleans(), st.floats(0.1, 100.0), st.integers(0, 12), st.sampled_from([0.0, 1.0]) |
                       st.floats(0, 3))


@settings(max_examples=examples(30), deadline=None)
@given(kernels_st)
@example(("relu_nngp", 30, False, 1.0, 2, 1.0))  # rho -> -1: sqrt(1 - rho^2) + (pi - arccos rho) rho cancelled, 4e-14
@example(("relu_ntk", 30, False, 1.0, 2, 1.0))
def test_profiles(args):
    """relu_nngp, relu_ntk_hidden, arcsin: relative error <= 4 eps at every t (rho = +-1 included); relu_ntk:
    <= 4 eps (|rho kappa_0| + kappa_1) (it changes sign); gaussian: (4 t/h + 2) eps; polynomial (rho + c)^q:
    (q + 2) eps (|rho| + c)^q + q eps |rho + c|^(q-1) (|rho| + c) eps (rho rounded once); against the arccos closed
    forms in mpmath at the exact rational rho."""
    kernel, d, bias, h, q, c = args
    prof = _profile_call(kernel, d, bias, h, q, c)
    n = d + 1 if bias and kernel != "gaussian" else d
    with mp.workdps(40):
        for t in range(d + 1):
            rho = mp.mpf(n - 2 * t) / n
            ref = _mp_kernel(kernel, rho, t, h, q, c)
            if kernel == "relu_ntk":
                size = abs(rho * (mp.pi - mp.acos(rho))) / (2 * mp.pi) + _mp_kernel("relu_nngp", rho, t, h, q, c)
                bound = 4 * EPS * size
            elif kernel == "gaussian":
                bound = (4 * t / h + 2) * EPS * ref
            elif kernel == "polynomial":
                bound = (q + 2) * EPS * (abs(rho) + c) ** q + q * abs(rho + c) ** max(q - 1, 0) * (abs(rho) + c) * EPS
            else:
                bound = 4 * EPS * abs(ref)
            assert record(f"resnet.{kernel} (profile)", abs(prof[t] - ref) / (bound + mp.mpf(1e-300)), d=d, t=t,
                          bias=bias) <= 1


@settings(max_examples=examples(25), deadline=None)
@given(st.integers(1, 30), st.integers(0, 2 ** 32 - 1), st.sampled_from(["random", "relu_nngp", "delta", "tiny"]))
def test_level_eigenvalues_exact_for_the_profile(d, seed, kind):
    """level_eigenvalues: relative error <= eps/2 (rounded once) of the eigenvalue of the float profile given,
    E[K chi_S chi_S] = sum_t C(d,t) kappa_t K_ell(t) / (2^d C(d, ell)) in exact rationals with the explicit binomial
    Krawtchouk form; profile_from_eigenvalues likewise of sum_ell lambda_ell K_ell(t)."""
    rng = np.random.default_rng(seed)
    kappa = {"random": rng.standard_normal(d + 1), "relu_nngp": R.relu_nngp(d, bias=False),
             "delta": np.eye(1, d + 1)[0], "tiny": rng.standard_normal(d + 1) * 1e-250}[kind]
    got, back = R.level_eigenvalues(kappa), R.profile_from_eigenvalues(kappa)
    kf = [Fraction(float(v)) for v in kappa]
    for ell in range(d + 1):
        ref = sum(math.comb(d, t) * kf[t] * _kraw_binomial(d, ell, t) for t in range(d + 1)) / (2 ** d *
                                                                                             math.comb(d, ell))
        err = abs(Fraction(got[ell]) - ref)
        assert record("resnet.level_eigenvalues", float(err / (Fraction(EPS) / 2 * abs(ref) + Fraction(2.0 ** -1074))),
                      d=d, kind=kind) <= 1
        ref2 = sum(kf[m] * _kraw_binomial(d, m, ell) for m in range(d + 1))
        err2 = abs(Fraction(back[ell]) - ref2)
        assert record("resnet.profile_from_eigenvalues",
                      float(err2 / (Fraction(EPS) / 2 * abs(ref2) + Fraction(2.0 ** -1074))), d=d) <= 1


@settings(max_examples=examples(12), deadline=None)
@given(kernels_st)
@example(("relu_nngp", 30, True, 1.0, 2, 1.0))   # lambda_30 ~ 1e-13: level_eigenvalues(relu_nngp(30)) is 5e-5 off
@example(("relu_nngp", 30, False, 1.0, 2, 1.0))  # structural zeros: level_eigenvalues gives +-1e-17
@example(("arcsin", 60, False, 1.0, 2, 1.0))
def test_kernel_eigenvalues(args):
    """kernel_eigenvalues: relative error <= eps (one rounding of a resolved sum) of every eigenvalue, never negative,
    exactly 0 at the structural zeros; against the binomial form at 80 + d digits (independent of the code's
    Krawtchouk symmetry form), a level counted as zero when below 1e-60 of the largest profile entry."""
    kernel, d, bias, h, q, c = args
    d = min(d, 40)
    got = R.kernel_eigenvalues(kernel, d, bias, h=h, q=q, c=c)
    bias = (bias and kernel != "gaussian")
    n = d + 1 if bias else d
    assert np.all(got >= 0)
    with mp.workdps(80 + d):
        kap = [_mp_kernel(kernel, mp.mpf(n - 2 * t) / n, t, h, q, c) for t in range(d + 1)]
        top = max(abs(x) for x in kap)
        for ell in range(d + 1):
            ref = mp.fsum(math.comb(d, t) * kap[t] * _kraw_binomial(d, ell, t) for t in range(d + 1)) / (
                2 ** d * math.comb(d, ell))
            if abs(ref) < mp.mpf(10) ** -60 * top:
                assert abs(got[ell]) <= 1e-60 * float(top)
                continue
            assert record("resnet.kernel_eigenvalues", abs(got[ell] - ref) / (EPS * abs(ref)), kernel=kernel, d=d,
                          ell=ell, bias=bias) <= 1


def _cube_error(kappa, X, beta, target, d):
    """E_x (f - sum_j beta_j kappa_t(x, x_j))^2 over the whole cube in exact rationals."""
    P = R.hypercube_points(d)
    H = R.hamming_matrix(P, X)
    kf = [Fraction(float(v)) for v in kappa]
    bf = [Fraction(float(v)) for v in beta]
    tot = Fraction(0)
    for i in range(P.shape[0]):
        pred = sum(kf[H[i, j]] * bf[j] for j in range(X.shape[0]))
        f = sum(Fraction(float(c)) * int(np.prod(P[i, list(S)])) for S, c in target.items())
        tot += (f - pred) ** 2
    return tot / P.shape[0]


@settings(max_examples=examples(10), deadline=None)
@given(st.integers(2, 6), st.integers(0, 2 ** 32 - 1), st.sampled_from(["relu_nngp", "relu_ntk_hidden", "gaussian",
                                                                         "polynomial", "relu_nngp0"]),
       st.sampled_from([1e-300, 1e-16, 1e-12, 1e-6, 1e-2]) | st.floats(-16, 0).map(lambda e: 10.0 ** e),
       st.booleans())
@example(6, 1, "polynomial", 1e-12, True)   # the whole cube, a rank-deficient kernel: |beta|_1 = 3e11
def test_exact_test_error(d, seed, kernel, lam, whole):
    """exact_test_error: |err - exact| <= the returned accuracy (and the result >= 0), the error of the float
    predictor sum_j beta_j kappa(x, x_j) averaged over the whole cube in exact rationals; captured_coefficients and
    lemma_e2_bound: relative error <= 4 (N + 2) eps of sum |lambda_ell^2 beta_j| (the float sum over j)."""
    rng = np.random.default_rng(seed)
    kappa = {"relu_nngp": R.relu_nngp(d), "relu_ntk_hidden": R.relu_ntk_hidden(d), "gaussian": R.gaussian(d),
             "polynomial": R.polynomial(d, 2), "relu_nngp0": R.relu_nngp(d, bias=False)}[kernel]
    N = 2 ** d if whole else int(rng.integers(1, 2 ** d))
    X = R.hypercube_points(d)[rng.choice(2 ** d, N, replace=False)]
    S = tuple(sorted(rng.choice(d, int(rng.integers(1, d + 1)), replace=False).tolist()))
    target = {(0,): 1.0, S: 0.3}
    Y = X[:, 0] + 0.3 * np.prod(X[:, list(S)], axis=1)
    try:
        beta = R.krr_fit(kappa, X, Y, lam)
    except Exception:
        return  # K + N lam I numerically singular: refused, not a silent value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        err, acc = R.exact_test_error(kappa, X, beta, [target], return_accuracy=True)
    ref = _cube_error(kappa, X, beta, target, d)
    assert err[0] >= 0
    assert record("resnet.exact_test_error", float(abs(Fraction(err[0]) - ref)) / (acc[0] + 1e-300), d=d, N=N,
                  lam=lam) <= 1
    lam2 = [Fraction(float(v)) for v in R.level_eigenvalues(kappa)]
    c = R.captured_coefficients(kappa, X, beta, list(target))
    for (T, f), got in zip(target.items(), c):
        chi = [int(np.prod(X[j, list(T)])) for j in range(N)]
        refc = lam2[len(T)] * sum(Fraction(float(beta[j])) * chi[j] for j in range(N))
        size = abs(lam2[len(T)]) * sum(abs(Fraction(float(b))) for b in beta)
        assert record("resnet.captured_coefficients", float(abs(Fraction(got) - refc) / (4 * (N + 2) *
                                                            Fraction(EPS) * size + Fraction(1e-300)))) <= 1


@settings(max_examples=examples(10), deadline=None)
@given(st.integers(1, 10), st.integers(0, 2 ** 32 - 1), st.floats(-12, 0))
def test_krr_fit(N, seed, log_lam):
    """krr_fit: ||beta - beta*|| <= 8 N eps cond(K + N lam I) ||beta*|| (backward-stable Cholesky / eigh), against
    the solve in mpmath at 40 digits."""
    d = 6
    rng = np.random.default_rng(seed)
    X = R.hypercube_points(d)[rng.choice(2 ** d, N, replace=False)]
    Y, kappa, lam = rng.standard_normal(N), R.relu_ntk(d), 10.0 ** log_lam
    beta = R.krr_fit(kappa, X, Y, lam)
    beta2 = R.krr_fit(kappa, X, Y, np.array([lam]))[0]
    with mp.workdps(40):
        A = mp.matrix(R.kernel_matrix(kappa, X).tolist()) + N * mp.mpf(lam) * mp.eye(N)
        ref = mp.lu_solve(A, mp.matrix(Y.tolist()))
        ev = mp.eigsy(A)[0]
        cond = max(ev) / min(ev)
        nref = mp.norm(ref)
        for got, key in ((beta, "resnet.krr_fit"), (beta2, "resnet.krr_fit (eigh)")):
            e = mp.norm(mp.matrix(got.tolist()) - ref)
            assert record(key, e / (8 * N * EPS * cond * nref), N=N, lam=lam) <= 1


# ---- complexity --------------------------------------------------------------------------------------------

@settings(max_examples=examples(20), deadline=None)
@given(st.sampled_from(["exp-1", "sin", "cos", "finite"]), st.floats(-3, 3), st.floats(-2, 4.5),
       st.sampled_from([0.0, 1e-8, 1.0, 50.0]) | st.floats(0, 100), st.floats(-1, 1), st.integers(0, 2 ** 32 - 1))
def test_complexity(kind, log_c, log_C, L, log_R, seed):
    """log_C_eps, log_C_eps_parts and log_C_s: absolute error <= 1e-12 (1 + |value|) of the log (relative 1e-12 of
    the complexity and of its log), against the series summed in mpmath at 40 digits to 1e-35 of the tail."""
    c, C_star, R_ = 10.0 ** log_c, 10.0 ** log_C, 10.0 ** log_R
    if kind == "finite":
        coef = np.random.default_rng(seed).standard_normal(8) * 10.0 ** np.random.default_rng(seed).uniform(-5, 5, 8)
        s = R.TaylorSeries.from_coeffs(coef)
        cm = [mp.mpf(float(v)) for v in coef]
    else:
        s = {"exp-1": R.TaylorSeries.exp_minus_one, "sin": R.TaylorSeries.sin, "cos": R.TaylorSeries.cos}[kind](c)
        cm = None
    if kind != "finite" and C_star * R_ * c > 3e4:
        return  # > 1e5 terms in the mpmath reference
    free, epsp = R.log_C_eps_parts(s, log_inv_eps=L, C_star=C_star, R=R_)
    lcs = R.log_C_s(s, C_star=C_star, R=R_)
    with mp.workdps(40):
        Cm, Rm, Lm = mp.mpf(C_star), mp.mpf(R_), mp.mpf(L)

        def coef_i(i):
            if cm is not None:
                return abs(cm[i]) if i < len(cm) else mp.mpf(0)
            keep = {"exp-1": i >= 1, "sin": i % 2 == 1, "cos": i % 2 == 0}[kind]
            return mp.mpf(c) ** i / mp.factorial(i) if keep else mp.mpf(0)

        n = len(cm) if cm is not None else int(3 * C_star * R_ * c * max(1.0, math.sqrt(L)) + 200)
        P0 = mp.fsum((Cm * Rm) ** i * coef_i(i) for i in range(n))
        Pe = coef_i(0) + (mp.fsum((Cm * Rm * mp.sqrt(Lm / i)) ** i * coef_i(i) for i in range(1, n)) if L > 0 else 0)
        Cs = Cm * mp.fsum((i + 1) * Rm ** i * coef_i(i) for i in range(n))
        for got, ref, key in ((free, P0, "resnet.log_C_eps_parts (free)"), (epsp, Pe, "resnet.log_C_eps_parts (eps)"),
                              (lcs, Cs, "resnet.log_C_s")):
            if ref == 0:
                assert got == -math.inf
                continue
            lr = mp.log(ref)
            assert record(key, abs(got - lr) / (1e-12 * (1 + abs(lr))), kind=kind, c=c, C=C_star, L=L) <= 1


# ---- coupling ----------------------------------------------------------------------------------------------

def _wcff_ref(delta):
    dl = mp.mpf(delta)
    lt0 = mp.log((mp.gamma(2.5) * dl ** 2) ** (mp.mpf(1) / 3))
    if delta > 0.3:
        x = mp.findroot(lambda x: mp.gammainc(1.5, 0, x, regularized=True) - dl ** 2, mp.mpf(1.0))
        return mp.gammainc(0.5, 0, x, regularized=True)
    lt = mp.findroot(lambda lt: mp.log(mp.gammainc(1.5, 0, mp.exp(2 * lt), regularized=True)) - 2 * mp.log(dl), lt0)
    return mp.gammainc(0.5, 0, mp.exp(2 * lt), regularized=True)


@settings(max_examples=examples(25), deadline=None)
@given(st.sampled_from([1e-300, 1e-200, 1e-101, 1e-99, 1e-20, 0.5, 0.99]) | st.floats(-300, -0.01).map(
    lambda e: 10.0 ** e))
@example(1e-300)  # delta^2 underflowed: 0 instead of 1.2e-200
def test_flip_fractions(delta):
    """worst_case_flip_fraction: relative error <= 1e-13 (gammaincinv at tiny arguments loses ~50 ulps; below 1e-100
    the leading term, exact to 1e-130); random_flip_fraction: relative <= 2 eps; both in [0, 1]; against the
    regularized gamma functions in mpmath at 50 digits."""
    got, rnd = R.worst_case_flip_fraction(delta), R.random_flip_fraction(delta)
    assert 0 <= got <= 1 and 0 <= rnd <= 0.5
    with mp.workdps(50):
        ref = _wcff_ref(delta)
        assert record("resnet.worst_case_flip_fraction", abs(got - ref) / (1e-13 * ref), delta=delta) <= 1
        rr = mp.atan(delta) / mp.pi
        assert record("resnet.random_flip_fraction", abs(rnd - rr) / (2 * EPS * rr)) <= 1


@settings(max_examples=examples(25), deadline=None)
@given(st.integers(1, 40), st.integers(0, 2 ** 32 - 1), st.floats(-3, 1), st.booleans())
def test_worst_case_flips(m, seed, log_delta, tie):
    """worst_case_flips: exact (the definition with the cumulative costs in exact rationals and the tie rule);
    sign_flips: exact."""
    rng = np.random.default_rng(seed)
    g0 = rng.standard_normal(m) / math.sqrt(m)
    if tie:
        g0 = np.round(g0 * 8) / 8
    delta = 10.0 ** log_delta
    if tie and m > 1:
        delta = math.sqrt(float(np.sum(np.sort(g0 ** 2)[: m // 2])))
    got = R.worst_case_flips(g0, delta)
    order = sorted(range(m), key=lambda j: (abs(g0[j]), g0[j] >= 0))
    d2, cost, best = Fraction(delta) ** 2, Fraction(0), 0
    for s, j in enumerate(order, 1):
        cost += Fraction(float(g0[j])) ** 2
        if cost < d2 or (cost == d2 and all(g0[order[i]] < 0 for i in range(s))):
            best = s
    # rounding of hypot.accumulate near a tie: allow the tie-broken count to move by the coordinates at the tie
    assert abs(got - best) <= (1 if tie else 0)
    assert R.sign_flips(g0, -g0) == int(np.count_nonzero((g0 + -g0 >= 0) != (g0 >= 0)))


# ---- indicator --------------------------------------------------------------------------------------------

@settings(max_examples=examples(25), deadline=None)
@given(st.sampled_from([0, 1, 2, 3, 5, 299, 301, 1001]) | st.integers(0, 2000))
def test_p_prime(i):
    """p_prime: relative error <= 8 eps (1 + i log(i + 1)) (gammaln's rounding at its argument's size), exact 0 at
    even i >= 2; log_abs_p_prime: absolute error of the log <= 8 eps (1 + i log(i + 1)); against (i - 2)!!/sqrt(2 pi)
    in mpmath."""
    got, lg = R.p_prime(i), R.log_abs_p_prime(i)
    with mp.workdps(40):
        if i >= 2 and i % 2 == 0:
            assert got == 0 and lg == -math.inf
            return
        ref = mp.mpf(0.5) if i == 0 else (-1) ** ((i - 1) // 2) * mp.fac2(i - 2) / mp.sqrt(2 * mp.pi)
        tol = 8 * EPS * (1 + i * math.log(i + 1))
        assert record("resnet.log_abs_p_prime", abs(lg - mp.log(abs(ref))) / tol, i=i) <= 1
        if abs(ref) < mp.mpf(np.finfo(float).max) * (1 - 1e-12):
            assert record("resnet.p_prime", abs(got - ref) / (tol * abs(ref)), i=i) <= 1
        else:
            assert math.isinf(got)


@settings(max_examples=examples(20), deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 30), st.floats(-3, 3))
def test_h_and_moment(seed, deg, log_scale):
    """h_coefficients: relative error <= 8 eps (1 + i log(i + 1)) per coefficient (those of p_prime);
    h_second_moment: relative <= 16 eps (1 + n log n) (log-space sum); h and h_truncated (no clipping in |z| <= B):
    absolute <= 4 (n + 1) eps sum_i |b_i| |He_i(z)| (the recurrence's rounding); against mpmath at 40 digits."""
    rng = np.random.default_rng(seed)
    n = 2 * deg + 1
    c = np.where((np.arange(n + 1) % 2 == 1) | (np.arange(n + 1) == 0), rng.standard_normal(n + 1), 0.0) * \
        10.0 ** log_scale
    s = R.TaylorSeries.from_coeffs(c)
    b = R.h_coefficients(s)
    m2 = R.h_second_moment(s)
    z = rng.uniform(-8, 8, 5)
    hz, ht = R.h(s, z), R.h_truncated(s, z, B=10.0)
    tol = 8 * EPS * (1 + n * math.log(n + 1))
    with mp.workdps(40):
        pp = [mp.mpf(0.5) if i == 0 else ((-1) ** ((i - 1) // 2) * mp.fac2(i - 2) / mp.sqrt(2 * mp.pi) if i % 2
                                          else mp.mpf(0)) for i in range(n + 1)]
        bref = [mp.mpf(float(c[i])) / pp[i] if pp[i] != 0 else mp.mpf(0) for i in range(n + 1)]
        for i in range(n + 1):
            if bref[i] != 0:
                assert record("resnet.h_coefficients", abs(b[i] - bref[i]) / (tol * abs(bref[i]))) <= 1
        mref = mp.fsum(bref[i] ** 2 * mp.factorial(i) for i in range(n + 1))
        assert record("resnet.h_second_moment", abs(m2 - mref) / (2 * tol * mref), n=n) <= 1
        for k, zk in enumerate(z):
            He = [mp.mpf(1), mp.mpf(zk)]
            for i in range(1, n):
                He.append(zk * He[i] - i * He[i - 1])
            ref = mp.fsum(bref[i] * He[i] for i in range(n + 1))
            size = mp.fsum(abs(bref[i] * He[i]) for i in range(n + 1))
            assert record("resnet.h", abs(hz[k] - ref) / (4 * (n + 1) * EPS * size), n=n) <= 1
            assert record("resnet.h_truncated", abs(ht[k] - ref) / (4 * (n + 1) * EPS * size), n=n) <= 1


@settings(max_examples=examples(15), deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 40), st.sampled_from([None, 5.0, 30.0, 1e3]))
def test_claim_f4_tails(seed, deg, B):
    """claim_f4_tails: absolute error of each log <= 1e-12 (1 + |log|), against the sums in mpmath (He_i by the
    recurrence, Phi(-B) by erfc) at 40 digits; truncation_levels exact."""
    rng = np.random.default_rng(seed)
    n = 2 * deg + 1
    c = np.where(np.arange(n + 1) % 2 == 1, rng.standard_normal(n + 1), 0.0)
    s = R.TaylorSeries.from_coeffs(c)
    eps = None if B is not None else 10.0 ** -rng.uniform(0, 30)
    Bi = R.truncation_levels(s, eps) if eps is not None else np.full(n + 1, B)
    if np.any(Bi[1:] < np.sqrt(4 * np.arange(1, n + 1) + 2)):
        return
    la, lb = R.claim_f4_tails(s, eps=eps, B=B)
    with mp.workdps(40):
        Ta, Tb = mp.mpf(0), mp.mpf(0)
        for i in range(1, n + 1, 2):
            cp = abs(mp.mpf(float(c[i])) / (mp.fac2(i - 2) / mp.sqrt(2 * mp.pi)))
            b = mp.mpf(float(Bi[i]))
            He = [mp.mpf(1), b]
            for j in range(1, i):
                He.append(b * He[j] - j * He[j - 1])
            Ta += 2 * cp * He[i - 1] * mp.npdf(b)
            Tb += 2 * cp * He[i] * mp.ncdf(-b)
        for got, ref, key in ((la, Ta, "resnet.claim_f4_tails (a)"), (lb, Tb, "resnet.claim_f4_tails (b)")):
            lr = mp.log(ref)
            assert record(key, abs(got - lr) / (1e-12 * (1 + abs(lr))), n=n, B=B) <= 1
        if eps is not None:
            for i in range(1, n + 1):
                r = 100 * mp.sqrt(i) + 10 * mp.sqrt(mp.log(1 / mp.mpf(eps)))
                assert abs(Bi[i] - r) <= 4 * EPS * r


# ---- minimal-norm parity networks ---------------------------------------------------------------------------

@settings(max_examples=examples(15), deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 4), st.sampled_from([1e-12, 0.5, 1 - 1e-12, 0.999]) |
       st.floats(0.01, 0.99))
@example(7, 1, 1 - 1e-12)  # p - sqrt(p^2 - q(1 - eps)) cancelled: 8e-9 relative
def test_population_mse_and_level_norm(seed, half_m, mse):
    """population_mse: absolute error <= 8 (m d' + 2^d') eps (E F^2 + 1) (enumeration sums); level_norm: relative
    error <= 64 m eps / (1 - sqrt(1 - q (1 - eps)/p^2))-free form, i.e. <= 1e-12, inf exactly when the ray never
    reaches the level; against exact rationals over the cube (q, p) and the root in mpmath."""
    rng = np.random.default_rng(seed)
    m = 2 * half_m
    W = rng.standard_normal((m, 6))
    if rng.integers(2):
        W[:, 0] = np.abs(W[:, 0]) * 3
    got = MN.population_mse(W)
    ln = MN.level_norm(W, mse)
    a = MN.signs(m)
    P = R.hypercube_points(6)
    q = p = Fraction(0)
    Wf = [[Fraction(float(v)) for v in row] for row in W]
    af = [Fraction(float(v)) for v in a]
    for z in P:
        pre = [sum(Wf[j][i] * int(z[i]) for i in range(6)) for j in range(m)]
        F = sum(af[j] * max(pre[j], 0) for j in range(m)) / Fraction(math.sqrt(6))  # sqrt(6) as the code rounds it
        q += F * F
        p += F * int(np.prod(z))
    q, p = q / 64, p / 64
    ref = q - 2 * p + 1
    assert record("resnet.minnorm.population_mse", float(abs(Fraction(got) - ref) / (8 * (m * 6 + 64) *
                                                         Fraction(EPS) * (q + 1)))) <= 1
    with mp.workdps(50):
        qm, pm = mp.mpf(q.numerator) / q.denominator, mp.mpf(p.numerator) / p.denominator
        disc = pm ** 2 - qm * (1 - mp.mpf(mse))
        if pm <= 0 or disc < 0:
            assert ln == math.inf or float(abs(disc)) < 1e-12 * float(pm ** 2)
            return
        ref_ln = (pm - mp.sqrt(disc)) / qm * mp.sqrt(mp.fsum(mp.mpf(float(v)) ** 2 for v in W.ravel()) / 6)
        assert record("resnet.minnorm.level_norm", abs(ln - ref_ln) / (1e-12 * ref_ln), mse=mse) <= 1


# ---- theory, targets ----------------------------------------------------------------------------------------

@settings(max_examples=examples(20), deadline=None)
@given(st.integers(2, 10 ** 6), st.integers(1, 30), st.integers(1, 10 ** 15), st.floats(0, 10))
def test_theory_closed_forms(d, k, N, alpha):
    """thm2_N_range, thm2_alpha_min, thm2_lower_bound: relative error <= 8 (k + 2) eps (a power (.)^(k/2) of a
    once-rounded base), against mpmath; returned inf/0 only where the value over/underflows float64."""
    k = min(k, d)
    with mp.workdps(40):
        rN = (mp.mpf(d) / (20 * k * k * mp.log(d) ** 2)) ** (mp.mpf(k) / 2)
        ra = 80 * mp.sqrt(k * mp.mpf(N) / (mp.mpf(d) / 5) ** k)
        for got, ref, key in ((R.thm2_N_range(d, k), rN, "resnet.thm2_N_range"),
                              (R.thm2_alpha_min(d, k, N), ra, "resnet.thm2_alpha_min")):
            if ref > 1e300 or ref < 1e-300:
                continue
            assert record(key, abs(got - ref) / (8 * (k + 2) * EPS * ref), d=d, k=k) <= 1
        assert abs(R.thm2_lower_bound(alpha) - mp.mpf(alpha) ** 2 / 4) <= EPS * alpha ** 2 / 4 + 2.0 ** -1074


@settings(max_examples=examples(8), deadline=None)
@given(st.integers(1, 12), st.integers(0, 2 ** 32 - 1))
def test_polarization_G(k, seed):
    """polarization_G: sum_s a*_s <v_s, z>^k within 4 (k + 2) eps sum_s |a*_s| |<v_s, z>|^k of k^(k/2)/sqrt(k)
    prod z (its declared cancellation), against exact rationals of the float a*, V."""
    z = np.random.default_rng(seed).standard_normal(k)
    a, V = R.polarization_G(k)
    got = float(((z @ V.T) ** k) @ a)
    with mp.workdps(60):
        ref = mp.mpf(k) ** (mp.mpf(k) / 2) / mp.sqrt(k) * mp.fprod([mp.mpf(float(v)) for v in z])
        size = mp.fsum(abs(mp.mpf(float(a[s]))) * abs(mp.fsum(mp.mpf(float(V[s, i])) * mp.mpf(float(z[i]))
                                                               for i in range(k))) ** k for s in range(2 ** k))
        assert record("resnet.polarization_G", abs(got - ref) / (4 * (k + 2) * EPS * size), k=k) <= 1


@settings(max_examples=examples(10), deadline=None)
@given(st.sampled_from(["ntk_hidden", "nngp"]), st.integers(1, 60), st.sampled_from([None, 1e-3, 2.0]))
def test_fc2_kernel_limit(kernel, d, w_var):
    """fc2_kernel_limit: relative error <= 6 eps (relu profile times one product), against the closed forms."""
    got = R.fc2_kernel_limit(kernel, d, w_var)
    s2 = 1 / mp.mpf(d) if w_var is None else mp.mpf(w_var)
    with mp.workdps(40):
        for t in range(d + 1):
            rho = mp.mpf(d + 1 - 2 * t) / (d + 1)
            ref = (d + 1) * (_mp_kernel("relu_ntk_hidden", rho, t, 1, 1, 1) if kernel == "ntk_hidden"
                             else s2 * _mp_kernel("relu_nngp", rho, t, 1, 1, 1))
            if ref == 0:
                assert got[t] == 0
                continue
            assert record("resnet.fc2_kernel_limit", abs(got[t] - ref) / (6 * EPS * abs(ref)), d=d) <= 1


# ---- schedules (theory.py): every entry rounded once from 40 digits ---------------------------------------------

_HUGE, _TINY = mp.mpf("1.7976931348623157e308"), mp.mpf(2) ** -1022


def _rounded_once(key, got, ref, **where):
    """got = ref rounded once: relative error <= eps where ref is a normal float (recorded), inf past float64's
    range, absolute <= 2^-1074 below it; never NaN."""
    assert got == got, (key, where)
    if ref > _HUGE:
        assert got == math.inf, (key, ref, where)
    elif ref < _TINY:
        assert abs(got - ref) <= 2.0 ** -1074, (key, ref, where)
    else:
        assert record(key, abs(got - ref) / (EPS * ref), **where) <= 1


def _mpx(x):
    return mp.mpf(x) if isinstance(x, int) else mp.mpf(float(x))


_scale = st.sampled_from([1e-300, 1e-150, 1e-40, 1.0, 1e40, 1e150, 1e300]) | st.floats(-300, 300).map(
    lambda e: 10.0 ** e) | st.floats(0.1, 10)
_ge1 = st.sampled_from([1.0, 1.5, 1e300]) | st.floats(0, 300).map(lambda e: 10.0 ** e)
_ints = st.sampled_from([1, 2, 10 ** 8, 2 ** 60, 10 ** 400]) | st.integers(1, 10 ** 6)


@settings(max_examples=examples(40), deadline=None)
@given(_ints, _ge1, _scale, _ge1, _scale, _scale, _scale, _ints, st.sampled_from([0.0, 1.0]) | _scale,
       st.none() | _scale, st.sampled_from([0.0]) | _scale, _ge1,
       st.dictionaries(st.sampled_from(R.THEOREM1_CONSTS), _scale), st.sampled_from(["proof", "statement"]))
@example(10 ** 6, 1.0, 2e-253, 5e48, 422.0, 0.8, 3e-4, 1, 1.0, None, 0.0, 1.0, {}, "proof")    # T was NaN
@example(5, 2.5e68, 0.06, 3.5, 6.5e-276, 4.5e-292, 0.86, 10 ** 8, 1.0, None, 0.0, 1.0, {}, "statement")
@example(2, 1.0, 1.0, 1.0, 1.0, 1e-200, 0.5, 10 ** 8, 1.0, None, 0.0, 1.0, {}, "proof")  # was OverflowError
@example(2, 1.0, 1.0, 1.0, 1.0, 0.1, 1e-200, 10 ** 8, 1.0, None, 0.0, 1.0, {}, "proof")  # was ZeroDivisionError
def test_theorem1_schedule(k, p_F, C_s_F, p_G, C_s_G, alpha, delta, m, B_F, L_G, OPT, pl, consts, conv):
    """theorem1_schedule: every entry rounded once (relative error <= eps where it is a normal float, inf or 0 only
    past float64's range), the regime's "holds" and ``admissible`` the exact comparisons, at inputs from 1e-300 to
    1e300 and integers to 10^400 (before: NaN, OverflowError or ZeroDivisionError in those corners, 0 or inf from an
    intermediate over/underflow); against the formulas in mpmath at 60 digits."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = R.theorem1_schedule(k, p_F, C_s_F, p_G, C_s_G, alpha, delta, m, B_F=B_F, L_G=L_G, OPT=OPT, polylog=pl,
                                consts=consts, eta_v_convention=conv)
    C = {n: _mpx(consts.get(n, 1.0)) for n in R.THEOREM1_CONSTS}
    with mp.workdps(60):
        k_, pF, CF, pG, CG, a, dl, m_, BF, opt, P = map(_mpx, (k, p_F, C_s_F, p_G, C_s_G, alpha, delta, m, B_F, OPT,
                                                              pl))
        cF, cG = k_ * pF * CF, k_ * pG * CG
        LG = mp.sqrt(cG) if L_G is None else _mpx(L_G)
        tw, tv = C["C_tau_w"] * P * cF, C["C_tau_v"] * P * a * cG
        ew = C["C_eta_w"] * min(1, dl)
        ev = ew * (tv / tw) ** 2 if conv == "proof" else C["C_eta_v"] * ew * (pG * CG / (pF * CF)) ** 2
        at = a / (k_ * (pF * CF + pG * CG))
        d0 = C["C_delta0"] * (at ** 2 + tv ** 2 * (1 + BF) + a * tv * LG * (BF + 1)) ** 2
        ref = dict(alpha_max=C["C_alpha"] / (P * cG), alpha_tilde=at, tau_w=tw, tau_v=tv, sigma_w=m_ ** -mp.mpf(0.125),
                   sigma_v=tv ** -2, T=C["C_T"] * P * cF ** 2 / min(1, dl ** 2), eta_w=ew, eta_v=ev, L_G=LG,
                   delta0=d0, delta_min=opt + d0)
        for key, v in ref.items():
            _rounded_once(f"resnet.theorem1_schedule ({key})", s[key], v, k=k, alpha=alpha, delta=delta)
        sw = ref["sigma_w"]
        holds = [a <= ref["alpha_max"], dl >= ref["delta_min"], tw >= 1, tw < mp.sqrt(m_) * sw,
                 tv >= ref["sigma_v"] * (k_ / m_) ** mp.mpf(0.375), tv <= ref["sigma_v"], ew + ev * tw ** 2 <= 0.1]
        assert [e["holds"] for e in s["regime"]] == holds
        assert s["admissible"] == (holds[0] and holds[1])


@settings(max_examples=examples(40), deadline=None)
@given(_scale, _scale, _scale, st.sampled_from([0.0]) | _scale, st.sampled_from([0.0]) | _scale, _scale, _ints,
       _ints, st.none() | _scale, st.none() | st.sampled_from([0.0]) | _scale, _ge1,
       st.dictionaries(st.sampled_from(R.COUPLING_CONSTS), _scale))
@example(1e-200, 1e-200, 1e200, 0.0, 0.0, 1.0, 1, 1, None, None, 1.0, {})   # regret: was ZeroDivisionError
@example(1e200, 1.0, 1e-200, 0.0, 0.0, 1.0, 1, 1, 1e-200, None, 1.0, {})    # coupling (a): was inf (tau_w/sigma_w)
def test_regret_and_coupling(T, eta_w, tau_w, OPT, delta0, C, m, k, sigma_w, out1, pl, consts):
    """regret_bound and coupling_bounds (a)-(g): rounded once (as theorem1_schedule), inputs 1e-300..1e300, integers
    to 10^400 (before: OverflowError, ZeroDivisionError, and inf from tau_w/sigma_w past float64 where the bound is
    finite); against mpmath at 60 digits."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = R.regret_bound(T, eta_w, tau_w, OPT=OPT, delta0=delta0, C=C)
        b = R.coupling_bounds(m, k, tau_w, eta_w, T, sigma_w=sigma_w, out1_norm=out1, polylog=pl, consts=consts)
    Cc = {n: _mpx(consts.get(n, 1.0)) for n in R.COUPLING_CONSTS}
    with mp.workdps(60):
        T_, ew, tw, tv, sv, m_, P = map(_mpx, (T, eta_w, tau_w, eta_w, T, m, pl))
        _rounded_once("resnet.regret_bound", got, mp.mpf(1) / 25 * tw ** 2 / (ew * T_) + _mpx(C) * (_mpx(OPT) +
                                                                                                   _mpx(delta0)))
        sw = m_ ** -mp.mpf(0.125) if sigma_w is None else _mpx(sigma_w)
        o1 = Cc["C_c"] * tw if out1 is None else _mpx(out1)
        rw, rv, third = tw / sw, tv / sv, mp.mpf(1) / 3
        ref = dict(a=Cc["C_a"] * rw ** (2 * third) * m_ ** (2 * third),
                   b=Cc["C_b"] * P * (tw * rw ** third / m_ ** (third / 2) + sw), c=Cc["C_c"] * tw,
                   d=Cc["C_d"] * rv ** (2 * third) * m_, e=Cc["C_e"] * P * tv * rv ** third * (o1 + 1),
                   f=Cc["C_f"] * P * tv * rv ** third, g=Cc["C_g"] * P * tv * (o1 + 1))
        for key, v in ref.items():
            _rounded_once(f"resnet.coupling_bounds ({key})", b[key], v, m=m, tau_w=tau_w, sigma_w=sigma_w)


@settings(max_examples=examples(30), deadline=None)
@given(st.sampled_from([2, 4, 10, 170, 171, 1000, 1001, 10 ** 6]) | st.integers(2, 3000),
       st.sampled_from([0, 1, 10 ** 12]) | st.integers(0, 10 ** 6), _scale, _scale, _ge1,
       st.dictionaries(st.sampled_from(R.COROLLARY71_CONSTS), _scale))
@example(171, 0, 0.5, 1e4, 1.0, {})     # a_star_max: was OverflowError (171! past float64)
@example(4, 0, 1e-50, 1e4, 1.0, {})     # N: was ZeroDivisionError (alpha^8 underflowed)
@example(2100, 0, 0.5, 1.0, 1.0, {})    # C_s_G: was OverflowError (2.0 ** 1050)
def test_corollary71(k, extra, alpha, C_star, pl, consts):
    """corollary71: every float entry rounded once (as theorem1_schedule), k to 10^6 (a_star_max by ln k! exact to
    k = 1000 and Stirling's series beyond), alpha and C* from 1e-300 to 1e300 (before: OverflowError at k = 171 and
    alpha = 1e50, ZeroDivisionError at alpha = 1e-50); against mpmath at 60 digits (loggamma, not Stirling)."""
    d = k + extra
    c = R.corollary71(d, k, alpha, C_star=C_star, polylog=pl, consts=consts)
    Cc = {n: _mpx(consts.get(n, 1.0)) for n in R.COROLLARY71_CONSTS}
    with mp.workdps(60):
        k_, d_, a, Cs = mp.mpf(k), mp.mpf(d), _mpx(alpha), _mpx(C_star)
        CG = Cs * (k_ + 1) * mp.mpf(2) ** (k_ / 2)
        ref = dict(C_s_F=2 * Cs * mp.sqrt(2 * d_ / k_), C_s_G=CG,
                   a_star_max=mp.exp(k_ * mp.log(k_) - mp.log(k_) / 2 - mp.loggamma(k_ + 1) - k_ * mp.log(2)),
                   alpha_max=1 / (k_ * mp.mpf(2) ** k_ * CG), N=Cc["C_N"] * _mpx(pl) * d_ / a ** 8,
                   risk=Cc["C_risk"] * a ** 4)
        for key, v in ref.items():
            _rounded_once(f"resnet.corollary71 ({key})", c[key], v, k=k, alpha=alpha)
    assert c["p_G"] == 2 ** k and c["p_F"] == 1


@settings(max_examples=examples(20), deadline=None)
@given(st.sampled_from([2, 10 ** 16, 10 ** 18, 10 ** 400]) | st.integers(2, 10 ** 18), st.integers(1, 400),
       st.integers(1, 10 ** 15))
@example(10 ** 16, 100, 1)   # thm2_N_range: was OverflowError (the bound 1e378)
@example(1000, 200, 5)       # thm2_alpha_min: was OverflowError ((d/5)^k = 200^200)
def test_thm2_past_float64(d, k, N):
    """thm2_N_range and thm2_alpha_min at d to 10^400 and k to 400: rounded once where normal, inf or 0 only past
    float64's range (before: OverflowError from float powers); against mpmath at 60 digits."""
    k = min(k, d)
    with mp.workdps(60):
        rN = (mp.mpf(d) / (20 * k * k * mp.log(d) ** 2)) ** (mp.mpf(k) / 2)
        ra = 80 * mp.sqrt(k * mp.mpf(N) / (mp.mpf(d) / 5) ** k)
        _rounded_once("resnet.thm2_N_range", R.thm2_N_range(d, k), rN, d=d, k=k)
        _rounded_once("resnet.thm2_alpha_min", R.thm2_alpha_min(d, k, N), ra, d=d, k=k)


# ---- existential weights (Lemma F.1') ----------------------------------------------------------------------------

def _unit(rng, shape, kind):
    w = rng.standard_normal(shape)
    if kind == "axis":                       # degenerate: coordinate vectors, all terms along one axis
        w = np.zeros(shape)
        w[..., 0] = 1.0
    return w / np.linalg.norm(w, axis=-1, keepdims=True)


@st.composite
def phis(draw):
    """A Phi with k, p <= 2, d <= 4, odd degree <= 7, coefficients at 1e-100..1e100 (random or coordinate w*, a*
    with a cancelling pair)."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    k, p, d, deg = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(0, 3))
    n = 2 * deg + 1
    scale = 10.0 ** draw(st.sampled_from([0.0, -100.0, 100.0]) | st.floats(-5, 5))
    coef = [[np.where((np.arange(n + 1) % 2 == 1) | (np.arange(n + 1) == 0), rng.standard_normal(n + 1), 0.0)
             * scale for _ in range(p)] for _ in range(k)]
    kind = draw(st.sampled_from(["random", "axis"]))
    a = rng.uniform(-1, 1, (k, p))
    if draw(st.booleans()) and p == 2:       # a cancelling pair: a*_2 = -a*_1 on the same phi and w*
        a[:, 1] = -a[:, 0]
        coef = [[row[0], row[0]] for row in coef]
        kind = "axis"
    series = [[R.TaylorSeries.from_coeffs(c) for c in row] for row in coef]
    coef = [[sr.coeffs() for sr in row] for row in series]    # as the series holds them (log|c| and sign)
    return R.Phi(a, _unit(rng, (k, p, d), kind), _unit(rng, (k, p, d), kind), series), coef, rng


def _mp_b(c):
    """b_0 = 2 c_0, b_i = c_i / p'_i (odd i): h's coefficients in mpmath from the plain coefficients."""
    return [2 * _mpx(c[0])] + [(_mpx(c[i]) / ((-1) ** ((i - 1) // 2) * mp.fac2(i - 2) / mp.sqrt(2 * mp.pi))
                                if i % 2 else mp.mpf(0)) for i in range(1, len(c))]


def _mp_he(n, z):
    He = [mp.mpf(1), z]
    for i in range(1, n):
        He.append(z * He[i] - i * He[i - 1])
    return He[:n + 1]


@settings(max_examples=examples(15), deadline=None)
@given(phis(), st.sampled_from([1.0, 1e-170, 1e-300, 1e170, 1e300]) | st.floats(-300, 300).map(lambda e: 10.0 ** e))
def test_phi_and_frobenius_limit(ph, xscale):
    """Phi(x): absolute error <= eps sum_i |a*_i| ((2n + p + 4) Phi_i^abs |<w2,x>| + (2d + 4) |phi_i'|^abs |<w2,x>| +
    (d + 2) phi_i^abs sum_l |w2_l x_l|) (Horner, the cosine's rounding through phi', the dot product), at rows of any
    scale 1e-300..1e300 (before: ValueError 'non-zero rows' at 1e-170, wrong cosines from an overflowed norm at
    1e170); frobenius_limit: absolute <= (16 (1 + n log(n + 1)) + 4 (n + p + 4)) eps S (S the sum of |terms| of
    Mehler's sum; h_coefficients' error twice), never negative
    (an expectation of a square; the cancelling pair gives exactly 0)."""
    phi, coef, rng = ph
    k, p, d = phi.k, phi.p, phi.d
    X = rng.standard_normal((3, d)) * xscale
    X[0] = 0.0
    X[0, -1] = xscale                               # a row along one axis
    n = len(coef[0][0]) - 1
    got = phi(X)
    fr = phi.frobenius_limit()
    assert fr >= 0
    with mp.workdps(40):
        for t in range(X.shape[0]):
            x = [_mpx(v) for v in X[t]]
            nx = mp.sqrt(mp.fsum(v * v for v in x))
            for r in range(k):
                ref, bound = mp.mpf(0), mp.mpf(0)
                for i in range(p):
                    c = [_mpx(v) for v in coef[r][i]]
                    cos = mp.fsum(_mpx(phi.w1[r, i, l]) * x[l] for l in range(d)) / nx
                    y = mp.fsum(_mpx(phi.w2[r, i, l]) * x[l] for l in range(d))
                    yabs = mp.fsum(abs(_mpx(phi.w2[r, i, l]) * x[l]) for l in range(d))
                    val = mp.fsum(c[j] * cos ** j for j in range(n + 1))
                    vabs = mp.fsum(abs(c[j] * cos ** j) for j in range(n + 1))
                    dabs = mp.fsum(j * abs(c[j] * cos ** (j - 1)) for j in range(1, n + 1))
                    A = abs(_mpx(phi.a_star[r, i]))
                    ref += _mpx(phi.a_star[r, i]) * val * y
                    bound += A * ((2 * n + p + 4) * vabs * abs(y) + (2 * d + 4) * dabs * abs(y) + (d + 2) * vabs * yabs)
                bound = EPS * bound + mp.mpf(2) ** -1074 * 4 * p
                if abs(ref) > _HUGE:
                    assert got[t, r] == math.copysign(math.inf, ref)
                    continue
                if bound > _HUGE:           # the terms past float64's range, their sum within it: inf allowed
                    assert got[t, r] == got[t, r]
                    continue
                assert record("resnet.Phi", abs(_mpx(got[t, r]) - ref) / bound, d=d, scale=xscale) <= 1
        ref, S = mp.mpf(0), mp.mpf(0)
        for r in range(k):
            bs = [_mp_b(coef[r][i]) for i in range(p)]
            for i in range(p):
                for j in range(p):
                    rho = mp.fsum(_mpx(phi.w1[r, i, l]) * _mpx(phi.w1[r, j, l]) for l in range(d))
                    g2 = mp.fsum(_mpx(phi.w2[r, i, l]) * _mpx(phi.w2[r, j, l]) for l in range(d))
                    aa = _mpx(phi.a_star[r, i]) * _mpx(phi.a_star[r, j])
                    for q in range(n + 1):
                        term = aa * g2 * bs[i][q] * bs[j][q] * mp.factorial(q) * rho ** q
                        ref += term
                        S += abs(term)
        if S > _HUGE:
            return
        assert record("resnet.Phi.frobenius_limit", abs(fr - max(ref, 0)) / ((16 * (1 + n * math.log(n + 1)) + 4 * (n + p + 4)) * EPS * S +
                                                                                mp.mpf(2) ** -1074), n=n) <= 1


@settings(max_examples=examples(8), deadline=None)
@given(phis(), st.integers(1, 4), st.sampled_from(["normal", "zero", "rank1", "big"]))
def test_random_feature_weights_and_G(ph, m, kind):
    """random_feature_weights: absolute error <= eps/m sum_{r,i} |a_rj a*_ri w2_ril| ((4 (n + 10 + L) + 8 (1 + n log(n
    + 1)) + k p + 4) H^abs(z) + 2 (d + 2) sqrt(m) sum_l |w0_jl w1_l| H'^abs(z)), z = sqrt(m) <w0_j, w1>, L = max_q
    |log h_q(z)| (the normalized Hermite recurrence's bound, which grows with |z|; h's recurrence,
    h_coefficients, the argument's rounding through h'); ValueError naming W0 where the weights pass float64's range;
    G: absolute error <= (d + m + 2) eps sum_j |a_rj| sum_l |x_l w*_jl| plus |a_rj <w*_j, x>| for each j whose sign
    test |<w0_j, x>| <= (d + 1) eps sum_l |w0_jl x_l| is within rounding (the indicator of the rounded product), at
    zero, rank-one and large W0; against mpmath (weights) and exact rationals (G)."""
    phi, coef, rng = ph
    k, p, d = phi.k, phi.p, phi.d
    n = len(coef[0][0]) - 1
    W0 = {"normal": rng.standard_normal((m, d)) / math.sqrt(m), "zero": np.zeros((m, d)),
          "rank1": np.outer(rng.standard_normal(m), rng.standard_normal(d)), "big": rng.standard_normal((m, d)) * 1e60}[kind]
    a = rng.standard_normal((k, m))
    try:
        Ws = R.random_feature_weights(phi, W0, a)
    except ValueError as e:
        assert "'W0'" in str(e) and kind == "big"
        Ws = None
    with mp.workdps(40):
        if Ws is not None:
            sm = mp.sqrt(m)
            for j in range(m):
                for l in range(d):
                    ref, bound = mp.mpf(0), mp.mpf(0)
                    for r in range(k):
                        for i in range(p):
                            b = _mp_b(coef[r][i])
                            z = sm * mp.fsum(_mpx(W0[j, q]) * _mpx(phi.w1[r, i, q]) for q in range(d))
                            He = _mp_he(n, z)
                            hz = mp.fsum(b[q] * He[q] for q in range(n + 1))
                            Habs = mp.fsum(abs(b[q] * He[q]) for q in range(n + 1))
                            Dabs = mp.fsum(q * abs(b[q] * He[q - 1]) for q in range(1, n + 1))
                            dz = 2 * (d + 2) * sm * mp.fsum(abs(_mpx(W0[j, q]) * _mpx(phi.w1[r, i, q])) for q in range(d))
                            L = max(abs(mp.log(abs(He[q]) / mp.sqrt(mp.factorial(q)))) for q in range(n + 1)
                                    if He[q] != 0)    # the recurrence's |log h_q| term (hermite_polys)
                            A = _mpx(a[r, j]) * _mpx(phi.a_star[r, i]) * _mpx(phi.w2[r, i, l])
                            ref += A * hz / m
                            bound += abs(A) * ((4 * (n + 10 + L) + 8 * (1 + n * math.log(n + 1)) + k * p + 4) * Habs +
                                               dz * Dabs) / m
                    bound = EPS * bound + mp.mpf(2) ** -1074 * 4 * k * p
                    assert record("resnet.random_feature_weights", abs(_mpx(Ws[j, l]) - ref) / bound, kind=kind) <= 1
        Wstar = Ws if Ws is not None else rng.standard_normal((m, d)) * 1e250
        X = np.vstack([rng.standard_normal((2, d)) * 10.0 ** rng.uniform(-200, 200), np.ones((1, d))])
        got = EX.G(X, Wstar, W0, a)
        assert np.all(got == got)
        F = lambda v: Fraction(float(v))  # noqa: E731
        for t in range(X.shape[0]):
            for r in range(k):
                ref, bound = Fraction(0), Fraction(0)
                for j in range(m):
                    s0 = sum(F(W0[j, l]) * F(X[t, l]) for l in range(d))
                    s0abs = sum(abs(F(W0[j, l]) * F(X[t, l])) for l in range(d))
                    y = sum(F(Wstar[j, l]) * F(X[t, l]) for l in range(d))
                    yabs = sum(abs(F(Wstar[j, l]) * F(X[t, l])) for l in range(d))
                    if s0 >= 0:
                        ref += F(a[r, j]) * y
                    bound += abs(F(a[r, j])) * yabs * (d + m + 2) * Fraction(EPS)
                    if abs(s0) <= (d + 1) * Fraction(EPS) * s0abs:
                        bound += abs(F(a[r, j]) * y)
                if abs(ref) > 10 ** 308:
                    assert math.isinf(got[t, r])
                    continue
                bound += Fraction(2.0 ** -1074) * 4 * m
                assert record("resnet.G", float(abs(F(got[t, r]) - ref) / bound), kind=kind) <= 1


@settings(max_examples=examples(10), deadline=None)
@given(st.sampled_from([(a, k) for a, ks in R.NETWORK_KERNELS.items() for k in ks]),
       st.sampled_from([1, 2, 3, 60]) | st.integers(1, 60))
def test_network_kernel_limit(case, d):
    """network_kernel_limit: relative error <= 1e-13 at every t, against the two-layer recursion in mpmath at 40
    digits (arccos forms, the exact rational rho0)."""
    arch, kernel = case
    got = R.network_kernel_limit(arch, kernel, d)
    with mp.workdps(40):
        q0 = mp.mpf(d + 1) / d
        for t in range(d + 1):
            rho0 = mp.mpf(d + 1 - 2 * t) / (d + 1)
            s1, ds1 = q0 * _mp_kernel("relu_nngp", rho0, t, 1, 1, 1), (mp.pi - mp.acos(rho0)) / (2 * mp.pi)
            rho1 = 2 * s1 / q0
            s2, ds2 = q0 / 2 * _mp_kernel("relu_nngp", rho1, t, 1, 1, 1), (mp.pi - mp.acos(rho1)) / (2 * mp.pi)
            first = ds1 * (d + 1 - 2 * t)
            ref = {("ck", "fc2"): s1, ("ck", "resnet"): s1, ("ck", "fc3"): s2,
                   ("ck", "resnet_free_u"): s1 + s2 + q0 / (mp.sqrt(2) * mp.pi),
                   ("ntk_W", "fc2"): first, ("ntk_W", "resnet"): first, ("ntk", "fc2"): first,
                   ("ntk_W", "fc3"): ds2 * first, ("ntk_W", "resnet_free_u"): (1 + ds2) * first,
                   ("ntk", "fc3"): ds2 * s1, ("ntk", "resnet_free_u"): ds2 * s1}[(kernel, arch)]
            if ref == 0:
                assert got[t] == 0
                continue
            assert record("resnet.network_kernel_limit", abs(got[t] - ref) / (1e-13 * abs(ref)), d=d) <= 1
