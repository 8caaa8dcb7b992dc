"""Declared accuracy of popdyn.kernels (the NNGP / NTK of fully-connected networks) and popdyn.models.kernels (exact
kernel learning on the hypercube and the eigenlearning equations) over Hypothesis searches that reach the corners:
input pairs at angles down to 1e-8 from parallel and antiparallel and exactly (anti)parallel, unequal variances over
four decades, every closed-form activation with drawn parameters, depth 3, Hermite-series activations at variances to
20; profiles on {±1}^d to d = 60 with the structural zeros of ReLU without bias; training sets with repeated points
and ridges to 1e-12; spectra over 12 decades with multiplicities to 1e6 and N to 1e6.

References: the textbook closed forms (arccos, arcsin, Gaussian moments) in mpmath at 40 digits at the exact rational
covariance of dyadic inputs (GELU: a 1-D mpmath quadrature of its conditional closed form); the recursion in mpmath at
90 digits (end to end); 2-D Gauss-Legendre panels split at the kinks for the Hermite-series path (its own error 2e-14,
below 1 % of that path's bound); Krawtchouk sums from the explicit binomial form, and averages over the whole cube, in
exact rationals; the eigenlearning equations in mpmath at 40 digits (kappa by bisection in log space)."""
import math
import warnings
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from popdyn import kernels as fc
from popdyn.models import kernels as K
from popdyn.models.resnet import hamming_matrix, hypercube_points

from ._accuracy import EPS, examples, record
from .test_kernels import _mp_dual, _mp_fc, expect2
from .test_kernels_learning import spectra

TINY = 2.0 ** -1074


# ---- popdyn.kernels: the layer maps at depth 1, at the exact covariance of dyadic inputs -------------------------

def _abrelu(name, p):
    return {"relu": (0.0, 1.0), "abs": (-1.0, 1.0), "leaky_relu": (p.get("alpha", 0.01), 1.0)}.get(
        name, (p.get("a"), p.get("b")))


def _mp_gelu(kxx, kyy, kxy):
    """GELU x Phi(x): v | u ~ N(c u, s2) has E[v Phi(v) | u] = m Phi(m / q) + s2 phi_q(m) and E[Phi(v) + v phi(v) | u]
    = Phi(m / q) + m phi_q(m) / q^2 (m = c u, q^2 = 1 + s2, phi_q the N(0, q^2) density); the outer expectation by
    mpmath's quadrature."""
    c, s2 = kxy / kxx, (kxx * kyy - kxy * kxy) / kxx
    q2 = 1 + s2
    q = mp.sqrt(q2)
    Phi = lambda z: mp.ncdf(z)                                          # noqa: E731
    dens = lambda z, v: mp.exp(-z * z / (2 * v)) / mp.sqrt(2 * mp.pi * v)  # noqa: E731
    su = mp.sqrt(kxx)

    def outer(g):                                                       # 22 digits suffice for a 1e-16 check
        with mp.workdps(22):
            return +mp.quad(lambda z: g(su * z) * dens(z, 1), [-mp.inf, -3, 0, 3, mp.inf])
    T = outer(lambda u: u * Phi(u) * (c * u * Phi(c * u / q) + s2 * dens(c * u, q2)))
    Td = outer(lambda u: (Phi(u) + u * dens(u, 1)) * (Phi(c * u / q) + c * u * dens(c * u, q2) / q2))
    return T, Td


def _mp_map(name, p, kxx, kyy, kxy):
    """(T, Tdot) of the named closed form at the covariance [[kxx, kxy], [kxy, kyy]] (mpf)."""
    if name in ("relu", "abs", "leaky_relu", "abrelu"):
        a, b = _abrelu(name, p)
        return _mp_dual("abrelu", {"a": mp.mpf(a), "b": mp.mpf(b)}, kxx, kyy, kxy)
    if name == "identity":
        return kxy, mp.mpf(1)
    if name == "gelu":
        return _mp_gelu(kxx, kyy, kxy)
    if name == "cos":                                                   # a cos(bx + c) = a sin(bx + c + pi/2)
        return _mp_dual("sin", {"a": p["a"], "b": p["b"], "c": mp.mpf(p["c"]) + mp.pi / 2}, kxx, kyy, kxy)
    if name in ("erf", "sin"):
        return _mp_dual(name, {k: mp.mpf(v) for k, v in p.items()}, kxx, kyy, kxy)
    return _mp_dual(name, {k: mp.mpf(v) for k, v in p.items()}, kxx, kyy, kxy)


CLOSED = ["relu", "abs", "leaky_relu", "abrelu", "sign", "identity", "erf", "exp", "sin", "cos", "gelu"]


@st.composite
def closed_forms(draw, names=tuple(CLOSED)):
    name = draw(st.sampled_from(names))
    f = lambda lo, hi: draw(st.floats(lo, hi))                          # noqa: E731
    params = {"leaky_relu": lambda: {"alpha": f(0.0, 0.5)}, "abrelu": lambda: {"a": f(-2, 2), "b": f(-2, 2)},
              "erf": lambda: {"a": f(0.1, 3), "b": f(0.05, 3), "c": f(-1, 1)},
              "exp": lambda: {"a": f(0.1, 2), "b": f(-1, 1)},
              "sin": lambda: {"a": f(0.1, 2), "b": f(0.1, 2), "c": f(-2, 2)},
              "cos": lambda: {"a": f(0.1, 2), "b": f(0.1, 2), "c": f(-2, 2)}}.get(name, dict)()
    return name, params


@st.composite
def dyadic_pairs(draw):
    """x, y in R^2 with integer entries below 2^24 times 2^-e: x.y and |x|^2 are exact in float64 (and d0 = 2 divides
    exactly), so the covariance the first layer receives is exact. y random, x plus a small step (down to an angle
    ~1e-8, or y = x), -x plus a step, or an integer multiple of x plus a step (parallel, unequal variances)."""
    B = 2 ** 24
    x = np.array([draw(st.integers(-B, B)), draw(st.integers(-B, B))], dtype=float)
    assume(np.any(x != 0))
    kind = draw(st.sampled_from(["random", "near", "anti", "parallel"]))
    step = np.array([draw(st.integers(-3, 3)), draw(st.integers(-3, 3))], dtype=float)
    if kind == "random":
        y = np.array([draw(st.integers(-B, B)), draw(st.integers(-B, B))], dtype=float)
    else:
        c = {"near": 1.0, "anti": -1.0}.get(kind) or float(draw(st.sampled_from([-4, -3, -2, 2, 3, 4])))
        y = c * x + step
    assume(np.any(y != 0))
    scale = 2.0 ** -draw(st.integers(22, 26))
    return x * scale, y * scale


def _exact_cov(x, y):
    dot = lambda a, b: sum(Fraction(u) * Fraction(v) for u, v in zip(a, b)) / 2     # noqa: E731
    mpf = lambda q: mp.mpf(q.numerator) / q.denominator                             # noqa: E731
    return mpf(dot(x, x)), mpf(dot(y, y)), mpf(dot(x, y))


_CORNERS = st.sampled_from([(np.array([1.0, 0.0]), np.array([1.0, 2.0 ** -24])),          # an angle of 6e-8
                            (np.array([0.75, 0.5]), np.array([-0.75, -0.5])),           # antiparallel
                            (np.array([3.0, 1.0]), np.array([6.0, 2.0 + 2.0 ** -22]))])  # parallel, 4x variance


@pytest.mark.parametrize("activation", [a for a in CLOSED if a != "gelu"])
@settings(max_examples=examples(20), deadline=None)
@given(data=st.data())
def test_layer_maps(activation, data):
    """Per activation: its own search (20 pairs, drawn parameters) and the corners."""
    _layer_maps(data.draw(closed_forms((activation,))), data.draw(_CORNERS | dyadic_pairs()))


@settings(max_examples=examples(6), deadline=None)
@given(data=st.data())
def test_layer_maps_gelu(data):
    """GELU's reference is a quadrature (about a second a pair): a shorter search."""
    _layer_maps(("gelu", {}), data.draw(_CORNERS | dyadic_pairs()))


def _layer_maps(act, pair):
    """fc(1, act) with W_std = 1, b_std = 0: nngp = T and ntk = T + Tdot K^1 at the exact covariance K^1 of the
    inputs. Declared per map (fc's Notes): |dT| <= 16 eps sqrt(T_xx T_yy), the same for Tdot; so the NTK is within
    16 eps (sqrt(T_xx T_yy) + sqrt(Tdot_xx Tdot_yy) |K_xy|) plus its two roundings (17 eps in all). exp: relative
    8 eps (1 + b^2 (K_xx + K_yy)) per map (and one more eps for the NTK)."""
    name, params = act
    x, y = pair
    net = fc.fc(1, name, **params)
    X = np.stack([x, y])
    nngp, ntk = net.nngp(X), net.ntk(X)
    cross = net.nngp(x[None], y[None])[0, 0], net.ntk(x[None], y[None])[0, 0]
    with mp.workdps(40):
        kxx, kyy, kxy = _exact_cov(x, y)
        T, Td = _mp_map(name, params, kxx, kyy, kxy)
        Txx, Tdxx = _mp_map(name, params, kxx, kxx, kxx)
        Tyy, Tdyy = _mp_map(name, params, kyy, kyy, kyy)
        if name == "exp":
            rel = 8 * EPS * (1 + params["b"] ** 2 * (kxx + kyy))
            b_T, b_Th = rel * abs(T), (rel + EPS) * (abs(T) + abs(Td * kxy))
        else:
            b_T = 16 * EPS * mp.sqrt(Txx * Tyy)
            b_Th = 17 * EPS * (mp.sqrt(Txx * Tyy) + mp.sqrt(Tdxx * Tdyy) * abs(kxy))
        where = dict(x=x.tolist(), y=y.tolist(), **params)
        for got in (nngp[0, 1], nngp[1, 0], cross[0]):
            assert record(f"kernels.FC.nngp ({name})", abs(got - T) / (b_T + TINY), **where) <= 1
        for got in (ntk[0, 1], ntk[1, 0], cross[1]):
            assert record(f"kernels.FC.ntk ({name})", abs(got - (T + Td * kxy)) / (b_Th + TINY), **where) <= 1
        # the diagonal: rho = 1 exactly
        bxx = (8 * EPS * (1 + 2 * params["b"] ** 2 * kxx) * Txx if name == "exp" else 16 * EPS * Txx)
        assert record(f"kernels.FC.nngp ({name})", abs(nngp[0, 0] - Txx) / (bxx + TINY), **where) <= 1


@settings(max_examples=examples(20), deadline=None)
@given(closed_forms(), st.sampled_from([1, 2, 4, 8, 16, 32]), st.sampled_from(["nngp", "ntk"]))
def test_profile(act, d, kind):
    """FC.profile(d) at depth 1, W_std = 1, b_std = 0, d a power of 2 (the inner products (d - 2t)/d exact): the
    per-map bounds of test_layer_maps at K_xx = K_yy = 1, K_xy = 1 - 2t/d, rho = +-1 at t = 0, d included."""
    name, params = act
    prof = fc.fc(1, name, **params).profile(d, kind)
    with mp.workdps(40):
        one = mp.mpf(1)
        T11, Td11 = _mp_map(name, params, one, one, one)
        for t in range(d + 1):
            r = mp.mpf(d - 2 * t) / d
            T, Td = _mp_map(name, params, one, one, r)
            if name == "exp":
                rel = 8 * EPS * (1 + 2 * params["b"] ** 2)
                bound = rel * abs(T) if kind == "nngp" else (rel + EPS) * (abs(T) + abs(Td * r))
            else:
                bound = 16 * EPS * T11 if kind == "nngp" else 17 * EPS * (T11 + Td11 * abs(r))
            ref = T if kind == "nngp" else T + Td * r
            assert record("kernels.FC.profile", abs(prof[t] - ref) / (bound + TINY), d=d, t=t, kind=kind,
                          activation=name) <= 1


@st.composite
def deep_inputs(draw):
    """Five inputs in R^3 with the largest x.x/d0 drawn in [0.1, 4]: x_1 = -x_0, x_2 at an angle 1e-7 from x_0,
    x_3 = c x_4 (parallel up to rounding)."""
    seed, top, c = draw(st.integers(0, 2 ** 32 - 1)), draw(st.floats(0.1, 4.0)), draw(st.floats(0.2, 1.0))
    X = np.random.default_rng(seed).standard_normal((5, 3))
    X[4] /= max(1.0, np.linalg.norm(X[4]) / np.linalg.norm(X[0]))
    X *= math.sqrt(top / (np.sum(X[0] ** 2) / 3))
    X[1] = -X[0]
    X[2] = X[0] + 1e-7 * np.linalg.norm(X[0]) * np.array([0.3, -0.2, 0.5])
    X[3] = c * X[4]
    return X


@settings(max_examples=examples(15), deadline=None)
@given(st.sampled_from(["relu", "abs", "abrelu", "erf", "sign", "exp", "sin"]), deep_inputs(),
       st.floats(0.5, 1.5), st.sampled_from([0.0]) | st.floats(0.0, 0.5))
@example("relu", np.random.default_rng(1).standard_normal((5, 3)), 1.2, 0.0)
@example("sin", np.array([[0.8, -1.0, 0.2], [-0.8, 1.0, -0.2], [0.8, -1.0, 0.2000001], [-0.2, -0.5, -0.8],
                          [-0.2, -0.5, -0.8]]), 1.5, 0.0)
def test_depth3_end_to_end(name, X, W, b):
    """Depth 3, ntk parameterisation, W_std in [0.5, 1.5], b_std <= 0.5, against the recursion in mpmath at 90
    digits from the exact float inputs: declared (fc's Notes) 64 eps of sqrt(K_xx K_yy) for the NNGP and of
    sqrt(Theta_xx Theta_yy) for the NTK, for inputs with x.x/d0 <= 4 (the input Gram's rounding enters through the
    first map's slope, times the later layers' W^2 Tdot); exp (a = 0.6, b = 0.5) 256 eps where W_std <= 1 and
    x.x/d0 <= 1 (beyond, the exponentials compound layer by layer and overflow)."""
    if name == "exp":
        W = min(W, 1.0)
        X = X / max(1.0, math.sqrt(np.max(np.sum(X * X, axis=1)) / X.shape[1]))
    p = {"abrelu": {"a": 0.2, "b": 1.0}, "erf": {"a": 1.5, "b": 0.8, "c": 0.1}, "exp": {"a": 0.6, "b": 0.5},
         "sin": {"a": 1.2, "b": 1.1, "c": 0.3}}.get(name, {})
    net = fc.fc(3, name, W_std=W, b_std=b, **p)
    with mp.workdps(90):
        Kr, Th = _mp_fc(name, {"a": 1.0, "b": 1.0, "c": 0.0, **p}, 3, W, b, X)
    factor = 256 if name == "exp" else 64
    for kind, got, ref in (("nngp", net.nngp(X), Kr), ("ntk", net.ntk(X), Th)):
        scale = np.sqrt(np.outer(np.diag(ref), np.diag(ref)))
        ratio = np.max(np.abs(got - ref) / (factor * EPS * scale + TINY))
        assert record(f"kernels.fc (depth 3, {kind})", ratio, activation=name, W_std=W, b_std=b) <= 1


_SERIES = {"tanh": (np.tanh, lambda z: 1 - np.tanh(z) ** 2),
           "sigmoid": (lambda z: 0.5 * (1 + np.tanh(z / 2)), lambda z: 0.25 / np.cosh(z / 2) ** 2),
           "softplus": (lambda z: np.logaddexp(0.0, z), lambda z: 0.5 * (1 + np.tanh(z / 2)))}


@settings(max_examples=examples(12), deadline=None)
@given(st.sampled_from(sorted(_SERIES)), dyadic_pairs(), st.floats(0.25, 4.0))
@example("tanh", (np.array([0.75, 0.5]), np.array([0.75, 0.5 + 2.0 ** -24])), 2.4)      # variance ~4.7, rho ~ 1
def test_hermite_series_path(name, pair, r):
    """Activations without a closed form go through the Hermite series; declared where the Parseval deficit target is
    met (tanh: variances up to about 25 for T, 15 for Tdot): below 3e-12 of sqrt(E phi(u)^2 E phi(v)^2) for T (and of
    the same for Tdot with phi'); the NTK adds |K_xy| times Tdot's. Variances up to 5 for tanh, 20 for sigmoid and
    softplus: there the quadrature reference is good to 2e-15 (against mpmath; at tanh variance 10 it is off by
    2e-13, at 21 by 3e-10)."""
    x, y = pair[0] * r, pair[1] * r
    assume(max(x @ x, y @ y) / 2 <= (5.0 if name == "tanh" else 20.0))
    f, df = _SERIES[name]
    net = fc.fc(1, name)
    X = np.stack([x, y])
    nngp, ntk = net.nngp(X)[0, 1], net.ntk(X)[0, 1]
    kxx, kyy, kxy = (sum(Fraction(u) * Fraction(v) for u, v in zip(a, b)) / 2 for a, b in ((x, x), (y, y), (x, y)))
    T, Td = expect2(f, f, kxx, kyy, kxy), expect2(df, df, kxx, kyy, kxy)
    sT = math.sqrt(expect2(f, f, kxx, kxx, kxx) * expect2(f, f, kyy, kyy, kyy))
    sD = math.sqrt(expect2(df, df, kxx, kxx, kxx) * expect2(df, df, kyy, kyy, kyy))
    where = dict(x=x.tolist(), y=y.tolist())
    assert record(f"kernels.FC.nngp (Hermite series: {name})", abs(nngp - T) / (3e-12 * sT), **where) <= 1
    assert record(f"kernels.FC.ntk (Hermite series: {name})", abs(ntk - (T + Td * float(kxy))) /
                  (3e-12 * (sT + sD * abs(float(kxy)))), **where) <= 1


# ---- popdyn.models.kernels: the cube -----------------------------------------------------------------------------

def test_level_multiplicities():
    """Exact below 2^53 (d <= 56), C(d, l) rounded once above: relative 2^-53."""
    for d in range(1, 61):
        got = K.level_multiplicities(d)
        for ell in range(d + 1):
            ref = math.comb(d, ell)
            assert record("kernels.level_multiplicities", abs(Fraction(got[ell]) - ref) / (Fraction(EPS) / 2 * ref),
                          d=d, ell=ell) <= 1


@st.composite
def nets(draw):
    name = draw(st.sampled_from(["relu", "erf", "sign", "abs", "tanh", "identity"]))
    b = draw(st.sampled_from([0.0]) | st.floats(0.0, 0.5))
    return fc.fc(draw(st.integers(1, 3)), name, W_std=draw(st.floats(0.5, 1.5)), b_std=b)


def _kraw_binomial(d, ell, t):
    return sum((-1) ** j * math.comb(t, j) * math.comb(d - t, ell - j) for j in range(ell + 1))


@settings(max_examples=examples(20), deadline=None)
@given(nets(), st.sampled_from([1, 2, 30, 60]) | st.integers(1, 60), st.sampled_from(["ntk", "nngp"]))
@example(fc.fc(1, "relu"), 30, "ntk")          # structural zeros at odd levels >= 3: +-1e-17 from the float profile
def test_cube_eigenvalues(net, d, kind):
    """cube_eigenvalues: the eigenvalue of the float64 profile net.profile(d) rounded once (relative 2^-53), from the
    explicit binomial form in exact rationals; a level whose exact value is in [-1e-12 kappa_0, 0) comes back as 0
    (ratio |value| / (1e-12 kappa_0))."""
    got = K.cube_eigenvalues(net, d, kind)
    kappa = [Fraction(float(v)) for v in net.profile(d, kind)]
    for ell in range(d + 1):
        ref = sum(math.comb(d, t) * kappa[t] * _kraw_binomial(d, ell, t) for t in range(d + 1)) / (
            2 ** d * math.comb(d, ell))
        if ref < 0:
            assert got[ell] == 0.0
            ratio = float(-ref / (Fraction(1e-12) * abs(kappa[0])))
        else:
            ratio = float(abs(Fraction(got[ell]) - ref) / (Fraction(EPS) / 2 * ref + Fraction(TINY)))
        assert record("kernels.cube_eigenvalues", ratio, d=d, kind=kind, net=net.activation) <= 1


@settings(max_examples=examples(12), deadline=None)
@given(nets(), st.integers(2, 6), st.integers(1, 40), st.floats(-12, 0), st.integers(0, 2 ** 32 - 1))
def test_kernel_regression(net, d, N, log_ridge, seed):
    """KernelRegression.test_error: within the accuracy it returns (exact_test_error's rounding bound) of the average
    of (f - f_hat)^2 over all 2^d points in exact rationals (f_hat from the float beta and profile); captured: within
    captured_coefficients' 4 (N + 2) eps |lambda_l| sum |beta| of lambda_l sum_j beta_j chi_S(x_j) in exact
    rationals. Repeated training points and ridges to 1e-12 included."""
    rng = np.random.default_rng(seed)
    X = rng.choice([-1.0, 1.0], size=(N, d))
    target = K.WalshTarget(d, {tuple(sorted(rng.choice(d, size=k, replace=False).tolist())): float(rng.normal())
                               for k in range(0, min(d, 3) + 1)})
    try:
        krr = K.KernelRegression(net, X, target(X), 10.0 ** log_ridge)
    except Exception as e:                       # a numerically indefinite K + N lam I is refused, never returned
        assert "PSD" in str(e)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        err, acc = krr.test_error(target, return_accuracy=True)
    P = hypercube_points(d)
    kap = [Fraction(float(v)) for v in krr.kappa]
    beta = [Fraction(float(v)) for v in krr.beta]
    H = hamming_matrix(P, X)
    coef = {S: Fraction(c) for S, c in target.terms.items()}
    total = Fraction(0)
    for i in range(P.shape[0]):
        f = sum((c * (int(np.prod(P[i, list(S)])) if S else 1) for S, c in coef.items()), Fraction(0))
        fhat = sum((b * kap[H[i, j]] for j, b in enumerate(beta)), Fraction(0))
        total += (f - fhat) ** 2
    ref = total / P.shape[0]
    assert record("kernels.KernelRegression.test_error", float(abs(Fraction(err) - ref) / Fraction(acc)), d=d, N=N,
                  ridge=10.0 ** log_ridge) <= 1
    lam = [sum(math.comb(d, t) * kap[t] * _kraw_binomial(d, ell, t) for t in range(d + 1))
           / (2 ** d * math.comb(d, ell)) for ell in range(d + 1)]
    got = krr.captured(target)
    absb = sum(abs(b) for b in beta)
    for S, g in zip(target.sets, got):
        chi = [int(np.prod(X[j, list(S)])) if S else 1 for j in range(N)]
        refc = lam[len(S)] * sum(b * c for b, c in zip(beta, chi))
        bound = 4 * (N + 2) * Fraction(EPS) * abs(lam[len(S)]) * absb
        assert record("kernels.KernelRegression.captured", float(abs(Fraction(g) - refc) / (bound + Fraction(TINY))),
                      d=d, N=N) <= 1


# ---- popdyn.models.kernels: the eigenlearning equations ----------------------------------------------------------

def _mp_kappa(lam, m, N, ridge):
    """kappa in mpmath: the root of delta/k + sum m lam/(lam N + k) - 1 by 200 bisections of the log of the bracket
    [delta, delta + sum m lam] (every step halves the log-ratio: far below 40 digits at the end)."""
    lam, m = [mp.mpf(float(v)) for v in lam], [mp.mpf(float(v)) for v in m]
    delta = mp.mpf(int(N)) * mp.mpf(float(ridge))
    h = lambda k: delta / k + mp.fsum(mi * li / (li * N + k) for li, mi in zip(lam, m)) - 1   # noqa: E731
    lo, hi = delta, delta + mp.fsum(mi * li for li, mi in zip(lam, m))
    for _ in range(200):
        mid = mp.sqrt(lo * hi)
        lo, hi = (mid, hi) if h(mid) > 0 else (lo, mid)
    return mp.sqrt(lo * hi), lam, m, delta


def _condition(k, lam, m, N, delta):
    """c = k |h'(k)| = delta/k + sum m L (1 - L) / N in (0, 1]: the relative condition of kappa's equation."""
    L = [li * N / (li * N + k) for li in lam]
    return delta / k + mp.fsum(mi * Li * (1 - Li) for mi, Li in zip(m, L)) / N


@settings(max_examples=examples(40), deadline=None)
@given(spectra(), st.lists(st.integers(1, 10 ** 6), min_size=1, max_size=4, unique=True), st.floats(0.0, 2.0))
@example((np.array([1e-12]), np.array([1.0]), 1.0), [1, 16384], 0.0)
@example((np.array([1.0, 1e-3]), np.array([100.0, 1e6]), 1e-8), [100, 101, 99], 0.5)   # N = the modes above kappa
def test_eigenlearning(spec, n, noise):
    """effective_regularization: relative 4 eps (1 + 1/c) (Brent's bracket 4 eps, and the rounding of the equation,
    2.5 eps, over its condition c, see _condition); learnabilities (of the kappa given): relative 2 eps;
    overfitting_coefficient (of the L given): relative 4 eps E0; eigenlearning's test error: within
    E0 (B + sigma^2)(8 eps E0 + 2 E0 e_kappa) (B the bias sum, e_kappa kappa's bound;
    |d log E / d log kappa| <= 2 E0)."""
    lam, m, ridge = spec
    N = np.array(sorted(n))
    P = np.abs(np.cos(np.arange(lam.size) * 1.3))            # target power on every eigenvalue, some near 0
    kappa = K.effective_regularization(lam, N, ridge, m)
    L = K.learnabilities(lam, N, kappa)
    e0 = K.overfitting_coefficient(L, N, m)
    out = K.eigenlearning(lam, P, N, ridge, noise, m)
    with mp.workdps(40):
        for i, Ni in enumerate(N):
            kr, lm, mm, delta = _mp_kappa(lam, m, int(Ni), ridge)
            c = _condition(kr, lm, mm, int(Ni), delta)
            ek = 4 * EPS * (1 + 1 / c)
            where = dict(N=int(Ni), levels=lam.size, ridge=ridge)
            assert record("kernels.effective_regularization", abs(kappa[i] - kr) / (ek * kr), **where) <= 1
            k_given = mp.mpf(float(kappa[i]))
            for li, Lg in zip(lm, L[i]):
                Lr = li * int(Ni) / (li * int(Ni) + k_given)
                assert record("kernels.learnabilities", abs(Lg - Lr) / (2 * EPS * Lr + TINY), **where) <= 1
            s = mp.fsum(mp.mpf(float(mi)) * mp.mpf(float(Lg)) ** 2 for mi, Lg in zip(m, L[i]))
            E0r = int(Ni) / (int(Ni) - s)
            assert record("kernels.overfitting_coefficient", abs(e0[i] - E0r) / (4 * EPS * E0r * E0r), **where) <= 1
            Lx = [li * int(Ni) / (li * int(Ni) + kr) for li in lm]
            E0x = int(Ni) / (int(Ni) - mp.fsum(mi * Li ** 2 for mi, Li in zip(mm, Lx)))
            B = mp.fsum((1 - Li) ** 2 * mp.mpf(float(p)) for Li, p in zip(Lx, P))
            s2 = mp.mpf(float(noise)) ** 2
            Eref = E0x * (B + s2) - s2
            bound = E0x * (B + s2) * (8 * EPS * E0x + 2 * E0x * ek)
            assert record("kernels.eigenlearning", abs(out.test_error[i] - Eref) / (bound + TINY), **where) <= 1
