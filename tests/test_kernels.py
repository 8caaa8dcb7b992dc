"""popdyn.kernels against the hypercube ReLU profiles, 2-D Gauss-Legendre quadrature, an mpmath recursion, wide
finite networks (Monte Carlo) and its own identities (Hypothesis)."""
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.special import erf, ndtr

from popdyn import activations, kernels
from popdyn._validate import InvalidParameterError
from popdyn.models.resnet import hypercube

EPS = np.finfo(np.float64).eps


# ---- 1. depth 1 ReLU = the hypercube profiles ------------------------------------------------------------------

@pytest.mark.parametrize("d", [3, 10, 30, 60])
@pytest.mark.parametrize("bias", [False, True])
def test_depth1_relu_is_the_hypercube_profiles(d, bias):
    """W^2 = d/(d+1), b^2 = 1/(d+1) gives K^1 = <(x, 1), (y, 1)>/(d+1), the unit-norm cosine of relu_nngp(bias=True);
    the readout adds W^2 (.) + b^2; W = 1, b = 0 is relu_nngp(bias=False) itself."""
    w2, b2 = (d / (d + 1), 1 / (d + 1)) if bias else (1.0, 0.0)
    net = kernels.fc(1, "relu", W_std=math.sqrt(w2), b_std=math.sqrt(b2))
    ck = w2 * hypercube.relu_nngp(d, bias) + b2
    ntk = w2 * hypercube.relu_ntk(d, bias) + b2
    scale = w2 * (np.abs(hypercube.relu_ntk_hidden(d, bias)) + hypercube.relu_nngp(d, bias)) + b2
    # 1e-14 (45 eps): both sides 4-16 eps per closed form (hypercube's Notes, arccos_kernel's), the inner products
    # rounded differently (W^2 (d - 2t)/d + b^2 against (d + 1 - 2t)/(d + 1)); measured <= 3.5 eps
    got = net.profile(d, "nngp")
    assert np.all(np.abs(got - ck) <= 1e-14 * ck)              # exactly 0 at rho = -1 without bias
    assert np.all(np.abs(net.profile(d) - ntk) <= 1e-14 * scale)   # NTK changes sign: error relative to its terms


def test_matrix_kernels_are_the_profile_on_cube_points():
    d = 6
    X = hypercube.hypercube_points(d)
    net = kernels.fc(2, "erf", W_std=1.3, b_std=0.4)
    H = hypercube.hamming_matrix(X)
    for kind in ("nngp", "ntk"):
        prof = net.profile(d, kind)
        # 4 eps: the same float operations on the same inner products, up to the order of elementwise evaluation
        assert np.allclose(getattr(net, kind)(X), prof[H], rtol=4 * EPS, atol=0)
        assert np.all(hypercube.level_eigenvalues(prof) >= -1e-15 * prof[0])   # PSD on the cube


# Neural Tangents 0.6.5's kernel_fn(X, None, ("nngp", "ntk")) in float64 (jax 0.4.30) of stax.serial(Dense(64, 1.4,
# b_std, parameterization), act, ..., Dense(1, 1.4, b_std, parameterization)) on _NT_X: upper triangles, row by row
_NT_X = np.array([[1.0, 0.5, -0.25], [-1.0, -0.5, 0.25], [0.75, -1.5, 2.0]])
_NT = [   # name, parameters, depth, parameterization, b_std, nngp, ntk
    ("relu", {}, 3, "ntk", 0.3,
     [1.1564154199999996, 0.6889274694002808, 1.4063270680916382,
      1.1564154199999996, 1.5396949776499051, 4.538432006666664],
     [4.092825679999999, 0.9688922175481482, 2.3156159158382508,
      4.092825679999999, 2.9395198849147457, 17.62089202666666]),
    ("abrelu", {"a": -0.3, "b": 1.5}, 2, "standard", 0.3,
     [5.279069012399996, 3.1318340449713986, 6.886809115178399,
      5.279069012399996, 7.473208341005439, 24.175569034799985],
     [347.5928732499999, 128.3098897419501, 296.76846081448343,
      347.5928732499999, 344.77866675183003, 1610.573231889999]),
    ("erf", {"a": 2.0, "b": 0.7, "c": 0.3}, 3, "ntk", 0.2,
     [4.8953388252391, -2.3987383788238263, 0.1966233505521292,
      4.8953388252391, 1.1464974860240298, 5.1327447459318805],
     [28.364717295984633, -12.960899255418301, -0.44767005904513657,
      28.364717295984633, 3.3894542247561628, 39.04117175342753]),
    ("sign", {}, 2, "standard", 0.0,
     [1.9599999999999997, -1.9599999999999997, -0.13370872566907385,
      1.9599999999999997, 0.13370872566907321, 1.9599999999999997],
     [65.0, -63.0, -3.3659992055207795,
      65.0, 5.365999205520758, 65.0]),
    ("gelu", {}, 2, "ntk", 0.3,
     [0.8034652750059383, 0.20258084428505557, 0.670484459497951,
      0.8034652750059383, 0.8651526242723127, 4.2745017429980585],
     [2.3058910647822644, 0.12056175626889384, 0.8276220993978116,
      2.3058910647822644, 1.4552651221771047, 13.147906791621253]),
    ("sin", {"a": 1.3, "b": 0.9, "c": 0.4}, 2, "standard", 0.1,
     [1.5434500693512705, -0.35690632891332363, 0.14671836044067102,
      1.5434500693512705, 0.2635352847789005, 1.5884883347990497],
     [122.35666501525537, -29.104487617899032, 5.687766559273493,
      122.35666501525537, 13.598004629677982, 144.58931108645112]),
    ("exp", {"a": 0.5, "b": 0.8}, 1, "ntk", 0.2,
     [1.5856586220819968, 0.5557413556657635, 2.3274784837732447,
      1.5856586220819968, 3.51496165858744, 153.72680207787545],
     [2.473484934605896, 0.28590547838143604, 1.9078024312836468,
      2.473484934605896, 4.330419327802626, 595.4431628233]),
    ("cos", {"a": 0.7, "b": 1.1, "c": 0.2}, 3, "ntk", 0.0,
     [0.5834495360044052, 0.5771791000928037, 0.5360709683542197,
      0.5834495360044052, 0.5360957536772136, 0.5791936510994157],
     [1.0512186838750137, 1.0001577878227477, 0.7218114501549138,
      1.0512186838750137, 0.7219538126949433, 1.4495221439786028]),
]


@pytest.mark.parametrize("name, params, depth, param, b, nngp, ntk", _NT, ids=[c[0] for c in _NT])
def test_neural_tangents_values(name, params, depth, param, b, nngp, ntk):
    net = kernels.fc(depth, name, 1.4, b, param, width=64, **params)
    iu = np.triu_indices(3)
    for got, want in ((net.nngp(_NT_X)[iu], nngp), (net.ntk(_NT_X)[iu], ntk)):
        # 16 eps of the largest entry: both are a few roundings per layer from the exact kernel (measured 4.7 eps)
        assert np.max(np.abs(got - want)) <= 16 * EPS * np.max(np.abs(want))


# ---- 2. every dual map against 2-D quadrature ------------------------------------------------------------------

_T, _W = np.polynomial.legendre.leggauss(16)


def _rule(breaks):
    """16-point Gauss-Legendre on each interval of ``breaks`` (an array (..., m+1) of increasing points)."""
    a, b = breaks[..., :-1, None], breaks[..., 1:, None]
    x = 0.5 * (a + b) + 0.5 * (b - a) * _T
    w = 0.5 * (b - a) * _W
    return x.reshape(*breaks.shape[:-1], -1), w.reshape(*breaks.shape[:-1], -1)


def _phi(z):
    return np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _outer(width):
    """Breakpoints on [-12, 12]: a unit grid, plus geometric ones around 0 down to ``width`` (a feature there)."""
    g = width * 2.0 ** np.arange(80)
    g = g[g < 12]
    return np.unique(np.concatenate([np.linspace(-12, 12, 25), g, -g]))


def expect2(f, g, kxx, kyy, kxy):
    """E f(u) g(v), (u, v) ~ N(0, [[kxx, kxy], [kxy, kyy]]) (floats or exact Fractions): u = sx z1,
    v = sy (rho z1 + r z2), r^2 = det/(kxx kyy) from the exact determinant; panels split where f or g may kink
    (u = 0, v = 0). phi(12) ~ 1e-32 truncates."""
    kxx, kyy, kxy = Fraction(kxx), Fraction(kyy), Fraction(kxy)
    det = kxx * kyy - kxy ** 2
    sx, sy = math.sqrt(kxx), math.sqrt(kyy)
    rho, r = float(kxy) / (sx * sy), math.sqrt(float(det / (kxx * kyy)))
    if r == 0.0:                                     # rho = +-1: v = +-sy z1
        z, w = _rule(_outer(1.0))
        return float(np.sum(w * _phi(z) * f(sx * z) * g(sy * rho * z)))
    z1, w1 = _rule(_outer(min(1.0, r)))
    cut = np.clip(-rho * z1 / r, -12, 12)[:, None]
    lo = cut + (-12 - cut) * np.linspace(1, 0, 13)[None, :]     # 12 panels on each side of the kink of g
    hi = cut + (12 - cut) * np.linspace(0, 1, 13)[None, :]
    z2, w2 = _rule(np.concatenate([lo, hi[:, 1:]], axis=1))
    inner = np.sum(w2 * _phi(z2) * g(sy * (rho * z1[:, None] + r * z2)), axis=1)
    return float(np.sum(w1 * _phi(z1) * f(sx * z1) * inner))


def _abrelu(a, b):
    return (lambda x: a * np.minimum(x, 0) + b * np.maximum(x, 0)), (lambda x: np.where(x > 0, b, a))


_SQPI = 2 / math.sqrt(math.pi)
# name, parameters, phi, phi' (independent numpy definitions)
DUALS = [
    ("relu", {}, *_abrelu(0.0, 1.0)),
    ("leaky_relu", {"alpha": 0.2}, *_abrelu(0.2, 1.0)),
    ("abrelu", {"a": -0.3, "b": 1.5}, *_abrelu(-0.3, 1.5)),
    ("abs", {}, np.abs, np.sign),
    ("sign", {}, np.sign, np.zeros_like),
    ("identity", {}, lambda x: x, np.ones_like),
    ("erf", {}, erf, lambda x: _SQPI * np.exp(-x * x)),
    ("erf", {"a": 2.0, "b": 0.7, "c": 0.3}, lambda x: 2 * erf(0.7 * x) + 0.3,
     lambda x: 1.4 * _SQPI * np.exp(-0.49 * x * x)),
    ("exp", {"a": 0.5, "b": 0.8}, lambda x: 0.5 * np.exp(0.8 * x), lambda x: 0.4 * np.exp(0.8 * x)),
    ("sin", {"a": 1.3, "b": 0.9, "c": 0.4}, lambda x: 1.3 * np.sin(0.9 * x + 0.4),
     lambda x: 1.17 * np.cos(0.9 * x + 0.4)),
    ("cos", {"a": 0.7, "b": 1.1, "c": 0.2}, lambda x: 0.7 * np.cos(1.1 * x + 0.2),
     lambda x: -0.77 * np.sin(1.1 * x + 0.2)),
    ("gelu", {}, lambda x: x * ndtr(x), lambda x: ndtr(x) + x * _phi(x)),
    ("tanh", {}, np.tanh, lambda x: 1 - np.tanh(x) ** 2),                         # the Hermite-series path
    ("sigmoid", {}, lambda x: 1 / (1 + np.exp(-x)), lambda x: 0.25 / np.cosh(x / 2) ** 2),   # series too
]
# (kxx, kyy, rho): equal and unequal variances, rho within 1e-10 of +-1, and exactly +-1 (y = x, y = -x)
POINTS = [(1.0, 1.0, 0.3), (1.0, 1.0, -0.7), (2.0, 0.5, 0.9), (0.3, 1.7, -0.6), (2.5, 0.4, 0.0),
          (1.5, 1.5, 1 - 1e-10), (0.8, 1.2, -(1 - 1e-10)), (0.9, 2.2, 1 - 1e-14), (1.3, 1.3, 1.0), (0.6, 0.6, -1.0)]


def _pair(kxx, kyy, rho):
    """Inputs x, y in R^2 with x.x/2 = kxx, y.y/2 = kyy, x.y/2 = sqrt(kxx kyy) rho (as nearly as floats allow) and
    their exact Gram / 2 (Fractions)."""
    x = math.sqrt(2 * kxx) * np.array([1.0, 0.0])
    y = math.sqrt(2 * kyy) * np.array([rho, math.sqrt((1 - rho) * (1 + rho))])
    y = x.copy() if rho == 1 else -x * math.sqrt(kyy / kxx) if rho == -1 else y
    dot = lambda a, b: sum(Fraction(u) * Fraction(v) for u, v in zip(a, b)) / 2     # noqa: E731
    return x[None], y[None], dot(x, x), dot(y, y), dot(x, y)


@pytest.mark.parametrize("name, params, f, df", DUALS, ids=[f"{d[0]}{d[1] or ''}" for d in DUALS])
def test_dual_maps_against_quadrature(name, params, f, df):
    """Depth 1, W = 1, b = 0: nngp = T(K^1), ntk = T + Tdot K^1_xy with K^1 the inputs' Gram / 2 (exact); T and
    Tdot against expect2."""
    net = kernels.fc(1, name, **params)
    for kxx0, kyy0, rho in POINTS:
        X, Y, kxx, kyy, kxy = _pair(kxx0, kyy0, rho)
        T, Td = expect2(f, f, kxx, kyy, kxy), expect2(df, df, kxx, kyy, kxy)
        sT = math.sqrt(expect2(f, f, kxx, kxx, kxx) * expect2(f, f, kyy, kyy, kyy))
        sD = math.sqrt(expect2(df, df, kxx, kxx, kxx) * expect2(df, df, kyy, kyy, kyy))
        # 2e-14: the quadrature's own error (16-point panels on a unit grid), against the closed forms' declared
        # 16 eps per map; 3e-12: the series' bound where its deficit target (1e-12 E phi^2) is met
        tol = 3e-12 if name in ("tanh", "sigmoid") else 2e-14
        assert abs(net.nngp(X, Y)[0, 0] - T) <= tol * sT, (kxx0, kyy0, rho)
        assert abs(net.ntk(X, Y)[0, 0] - (T + Td * float(kxy))) <= tol * (sT + sD * abs(kxy)), (kxx0, kyy0, rho)


def test_quadrature_oracle_is_exact_where_it_must_be():
    """The oracle itself: E u v = kxy, E u^2 v^2 = kxx kyy + 2 kxy^2, P(u > 0, v > 0) = 1/4 + arcsin(rho)/(2 pi)."""
    for kxx, kyy, rho in POINTS:
        _, _, kxx, kyy, kxy = _pair(kxx, kyy, rho)
        with mp.workdps(40):
            fr = lambda q: mp.mpf(q.numerator) / q.denominator            # noqa: E731
            orthant = float(0.25 + mp.asin(fr(kxy) / mp.sqrt(fr(kxx) * fr(kyy))) / (2 * mp.pi))
        # 1e-15, 1e-14: a few roundings of sums of ~4e5 terms of size ~1 (pairwise summation)
        assert abs(expect2(lambda u: u, lambda v: v, kxx, kyy, kxy) - float(kxy)) < 1e-15
        assert abs(expect2(np.square, np.square, kxx, kyy, kxy) - float(kxx * kyy + 2 * kxy**2)) < 1e-14
        assert abs(expect2(lambda u: (u > 0) * 1.0, lambda v: (v > 0) * 1.0, kxx, kyy, kxy) - orthant) < 1e-15


# ---- end to end: the recursion in mpmath ------------------------------------------------------------------------

def _mp_dual(name, p, kxx, kyy, kxy):
    """Textbook closed forms (arccos, arcsin, Gaussian moments) at working precision: (T, Tdot)."""
    n = mp.sqrt(kxx * kyy)
    rho = kxy / n
    th = mp.acos(rho)
    if name in ("relu", "abrelu", "abs"):
        a, b = {"relu": (0, 1), "abs": (-1, 1)}.get(name, (p.get("a"), p.get("b")))
        k1 = lambda t: (mp.sin(t) + (mp.pi - t) * mp.cos(t)) / (2 * mp.pi)    # noqa: E731
        T = n * ((a * a + b * b) * k1(th) - 2 * a * b * k1(mp.pi - th))
        return T, ((a * a + b * b) * (mp.pi - th) + 2 * a * b * th) / (2 * mp.pi)
    if name == "erf":
        a, b, c = p["a"], p["b"], p["c"]
        D = (1 + 2 * b * b * kxx) * (1 + 2 * b * b * kyy)
        return (a * a * 2 / mp.pi * mp.asin(2 * b * b * kxy / mp.sqrt(D)) + c * c,
                a * a * b * b * 4 / mp.pi / mp.sqrt(D - 4 * b**4 * kxy**2))
    if name == "sign":
        return 2 / mp.pi * mp.asin(rho), mp.mpf(0)
    if name == "exp":
        a, b = p["a"], p["b"]
        T = a * a * mp.exp(b * b * (kxx + kyy + 2 * kxy) / 2)
        return T, b * b * T
    a, b, c = p["a"], p["b"], p["c"]                                   # sin
    sm, sp = mp.exp(-b * b * (kxx + kyy - 2 * kxy) / 2), mp.cos(2 * c) * mp.exp(-b * b * (kxx + kyy + 2 * kxy) / 2)
    return a * a / 2 * (sm - sp), a * a * b * b / 2 * (sm + sp)


def _mp_fc(name, p, depth, W, b, X):
    """nngp and ntk (ntk parameterisation) of the rows of X by the recursion, all in mpmath."""
    N, d0 = X.shape
    W2, b2 = mp.mpf(W) ** 2, mp.mpf(b) ** 2
    K = [[W2 * mp.fsum(mp.mpf(X[i, k]) * X[j, k] for k in range(d0)) / d0 + b2 for j in range(N)] for i in range(N)]
    Th = [row[:] for row in K]
    for _ in range(depth):
        TT = [[_mp_dual(name, p, K[i][i], K[j][j], K[i][j]) for j in range(N)] for i in range(N)]
        Th = [[W2 * TT[i][j][0] + b2 + W2 * TT[i][j][1] * Th[i][j] for j in range(N)] for i in range(N)]
        K = [[W2 * TT[i][j][0] + b2 for j in range(N)] for i in range(N)]
    return np.array(K, dtype=float), np.array(Th, dtype=float)


@pytest.mark.parametrize("name, params", [("relu", {}), ("abs", {}), ("abrelu", {"a": 0.2, "b": 1.0}),
                                          ("erf", {"a": 1.5, "b": 0.8, "c": 0.1}), ("sign", {}),
                                          ("exp", {"a": 0.6, "b": 0.5}), ("sin", {"a": 1.2, "b": 1.1, "c": 0.3})])
def test_depth3_recursion_against_mpmath(name, params):
    """Depth 3 on five inputs: x_1 = -x_0, x_2 nearly parallel to x_0 (angle 1e-7), x_3 = 1.7 x_4 (parallel up to
    rounding: an angle ~1e-16, which the kinked maps' square roots carry to 1e-8 at layer 2); 90 digits, as
    1 - rho ~ 1e-34 there."""
    p = {"a": 1.0, "b": 1.0, "c": 0.0, **params}
    X = np.random.default_rng(1).standard_normal((5, 3))
    X[1] = -X[0]
    X[2] = X[0] + 1e-7 * np.array([0.3, -0.2, 0.5])
    X[3] = 1.7 * X[4]
    net = kernels.fc(3, name, W_std=1.2, b_std=0.0 if name in ("sign", "relu") else 0.3, **params)
    with mp.workdps(90):
        K, Th = _mp_fc(name, p, 3, 1.2, net.b_std, X)
    nngp, ntk = net.nngp(X), net.ntk(X)
    sK = np.sqrt(np.outer(np.diag(K), np.diag(K)))
    sT = np.sqrt(np.outer(np.diag(Th), np.diag(Th)))
    # 64 eps: 3 layers of maps at <= 16 eps each (fc's Notes), amplified by the next layers' Lipschitz constants
    # (W^2 Tdot ~ 1); the near-parallel pairs keep their angles through the carried determinants
    assert np.max(np.abs(nngp - K) / sK) < 64 * EPS
    assert np.max(np.abs(ntk - Th) / sT) < 64 * EPS


# ---- 3. wide finite networks (Monte Carlo) -----------------------------------------------------------------------

def _mm(a, b):
    """a @ b over the last axis of a, by einsum's own loops: a threaded BLAS spins for ~0.1 s per small product on
    a loaded machine."""
    return np.einsum("...j,jk->...k", a, b)


def _networks(f, df, depth, X, W, b, width, nets, outputs, seed, grads=4):
    """Samples over random inits of E f_k(x) f_k(y) (averaged over ``outputs`` readout units) and of the sum over
    parameters of products of gradients (averaged over the first ``grads`` units; ntk and standard
    parameterisation, same network)."""
    rng = np.random.default_rng(seed)
    d0 = X.shape[1]
    out = {"nngp": [], "ntk": [], "standard": []}
    for _ in range(nets):
        a, fan, acts, pre, Ws = X, d0, [X], [], []
        for _ in range(depth):
            Wl = rng.standard_normal((fan, width))
            h = W / math.sqrt(fan) * _mm(a, Wl) + b * rng.standard_normal(width)
            Ws.append(Wl)
            pre.append(h)
            a, fan = f(h), width
            acts.append(a)
        Wo = rng.standard_normal((width, outputs))
        y = W / math.sqrt(width) * _mm(a, Wo) + b * rng.standard_normal(outputs)
        out["nngp"].append(_mm(y, y.T) / outputs)
        # readout parameters: grad of f_k wrt W_o[:, k] is (W/sqrt(w)) a, wrt b_o[k] is b (ntk); a and 1 (standard)
        aa = _mm(a, a.T)
        ntk, std = W * W / width * aa + b * b, aa + 1.0
        delta = W / math.sqrt(width) * Wo.T[:grads, None, :] * df(pre[-1])[None]    # (grads, N, w): df_k/dh^L
        for l in range(depth - 1, -1, -1):
            dd = np.einsum("kiw,kjw->ij", delta, delta) / grads               # sum over the layer's units m
            aa = _mm(acts[l], acts[l].T)                                        # sum over its inputs j
            fan = d0 if l == 0 else width
            # sum over W^l_jm and b^l_m of products of gradients (c a_j delta_m)(x) (c a_j delta_m)(y)
            ntk = ntk + (W * W / fan * aa + b * b) * dd
            std = std + (aa + 1.0) * dd
            if l:
                delta = W / math.sqrt(width) * _mm(delta, Ws[l].T) * df(pre[l - 1])[None]
        out["ntk"].append(ntk)
        out["standard"].append(std)
    return {k: (np.mean(v, axis=0), np.std(v, axis=0, ddof=1) / math.sqrt(nets)) for k, v in out.items()}


@pytest.mark.parametrize("name, depth, W, b, f, df", [
    ("relu", 2, 1.4, 0.3, *_abrelu(0.0, 1.0)),
    ("erf", 3, 1.5, 0.2, erf, lambda x: _SQPI * np.exp(-x * x)),
    ("tanh", 2, 1.2, 0.5, np.tanh, lambda x: 1 - np.tanh(x) ** 2),
])
def test_wide_networks_agree(name, depth, W, b, f, df):
    """Width 512, 48 nets, 128 readout units each (4 for the gradients): every entry within 5 standard errors (the
    O(1/width) finite-width bias, ~2e-3 relative, is a fifth of the smallest relative standard error, 1%)."""
    X = np.array([[1.0, 0.5, -0.3], [0.2, -1.1, 0.7], [-0.8, 0.4, 0.9], [1.0, 0.5, -0.2]])
    width = 512
    mc = _networks(f, df, depth, X, W, b, width, nets=48, outputs=128, seed=7)
    for kind, net in (("nngp", kernels.fc(depth, name, W, b)), ("ntk", kernels.fc(depth, name, W, b)),
                      ("standard", kernels.fc(depth, name, W, b, "standard", width=width))):
        theory = net.nngp(X) if kind == "nngp" else net.ntk(X)
        mean, se = mc[kind]
        z = np.abs(mean - theory) / se
        assert np.all(z < 5), (kind, z.max())                     # 5 SE: 30 entries, seed 7


def test_series_path_equals_closed_form():
    """erf through Activation.from_callable (its Hermite series) = the closed form, depth 2, unequal norms."""
    act = activations.Activation.from_callable(erf, deriv=lambda x: _SQPI * np.exp(-x * x), name="my_erf")
    X = np.random.default_rng(3).standard_normal((6, 4)) * np.array([[0.5], [1], [1.5], [0.7], [1.2], [0.9]])
    series, closed = kernels.fc(2, act, 1.3, 0.2), kernels.fc(2, "erf", 1.3, 0.2)
    # 1e-13: the series' declared 1e-10 bound is loose; coefficients ~4e-15 each, Horner over <= 128 terms
    assert np.allclose(series.nngp(X), closed.nngp(X), rtol=0, atol=1e-13)
    assert np.allclose(series.ntk(X), closed.ntk(X), rtol=0, atol=1e-13)


def test_registry_activations_use_their_closed_forms():
    """An Activation of the registry (rescaled too) gives the named closed form: sigma(r x) = NT's layer at b = r."""
    X = np.random.default_rng(4).standard_normal((5, 3))
    pairs = [(activations.get("relu").rescaled(2.0), kernels.fc(2, "abrelu", a=0.0, b=2.0)),
             (activations.leaky_relu(0.3), kernels.fc(2, "leaky_relu", alpha=0.3)),
             (activations.get("erf(r=0.7)"), kernels.fc(2, "erf", b=0.7)),
             (activations.get("exp").rescaled(0.5), kernels.fc(2, "exp", b=0.5)),
             (activations.get("sign").rescaled(3.0), kernels.fc(2, "sign")),
             (activations.get("linear"), kernels.fc(2, "identity"))]
    for act, named in pairs:
        net = kernels.fc(2, act)
        # 8 eps: the rescaled forms scale the covariance by r^2 first (a rounding per entry and layer)
        assert np.allclose(net.ntk(X), named.ntk(X), rtol=8 * EPS, atol=8 * EPS * np.abs(named.ntk(X)).max())


def test_series_path_refuses_what_it_cannot_certify():
    X = np.array([[1.0, 0.0], [1.0, 1e-7]])
    lazy = activations.Activation.from_callable(np.tanh, name="tanh_fd")      # derivative by central differences
    net = kernels.fc(1, lazy)
    assert np.allclose(net.nngp(X), kernels.fc(1, "tanh").nngp(X), rtol=0, atol=1e-13)
    with pytest.raises(RuntimeError, match="deriv="):
        net.ntk(X)
    with pytest.raises(RuntimeError, match="W_std"):          # variance 400: the tail at rho ~ 1 is not small
        kernels.fc(1, "tanh", W_std=20.0).nngp(X)


# ---- 4. properties -----------------------------------------------------------------------------------------------

_CLOSED = ["relu", "abs", "leaky_relu", "erf", "sign", "identity", "sin", "cos", "gelu"]   # exp overflows at depth 3


@st.composite
def networks(draw, names=tuple(_CLOSED)):
    n, d0 = draw(st.integers(2, 5)), draw(st.integers(1, 4))
    X = draw(st.lists(st.lists(st.floats(-2, 2), min_size=d0, max_size=d0), min_size=n, max_size=n))
    args = dict(depth=draw(st.integers(1, 3)), activation=draw(st.sampled_from(names)),
                W_std=draw(st.floats(0.5, 1.5)), b_std=draw(st.floats(0.0, 1.0)))
    return np.array(X), args


@settings(deadline=None)
@given(networks(), st.data())
def test_symmetric_psd_and_ntk_above_nngp(case, data):
    X, args = case
    net = kernels.fc(**args)
    Y = X[::-1] + 0.5
    K, T = net.nngp(X), net.ntk(X)
    assert np.array_equal(K, K.T) and np.array_equal(T, T.T)
    # 1e-13: K(X, Y) and K(Y, X) take x.y from two products (summation order); the maps are symmetric in x, y
    for kind in ("nngp", "ntk"):
        a, b = getattr(net, kind)(X, Y), getattr(net, kind)(Y, X).T
        assert np.allclose(a, b, rtol=1e-13, atol=1e-13 * np.max(np.abs(a)))
    for G in (K, T):
        w = np.linalg.eigvalsh(G)
        assert w.min() >= -1e-12 * max(w.max(), 1e-300)        # PSD up to eigvalsh's backward error
    assert np.all(np.diag(T) >= np.diag(K))                   # Theta - K = W^2 Tdot Theta >= 0 at x = y


@settings(deadline=None)
@given(networks(names=("relu", "abs", "leaky_relu", "identity")), st.floats(0.1, 10.0))
@example((np.array([[1.0], [1.1]]), dict(depth=1, activation="relu", W_std=1.0, b_std=0.0)), 3.0)  # parallel
def test_relu_family_is_homogeneous(case, c):
    X, args = case
    net = kernels.fc(**{**args, "b_std": 0.0})
    for kind in ("nngp", "ntk"):
        a, b = getattr(net, kind)(c * X), c * c * getattr(net, kind)(X)
        # 1e-13: every map is positively homogeneous of degree 2 in (K, Theta); ~10 roundings per layer
        assert np.allclose(a, b, rtol=1e-13, atol=1e-13 * np.max(np.abs(b)))


@settings(deadline=None)
@given(networks(), st.integers(1, 4))
def test_standard_is_the_ntk_parameterisation_rescaled(case, width):
    """No bias and fan-in d0 = width: Theta_std = (width / W^2) Theta_ntk; the NNGP does not depend on it."""
    X, args = case
    X = np.resize(X, (X.shape[0], width))
    ntk = kernels.fc(**{**args, "b_std": None})
    std = kernels.fc(**{**args, "b_std": None}, parameterization="standard", width=width)
    assert np.array_equal(std.nngp(X), ntk.nngp(X))
    # 1e-13: the two recursions round differently (W^2 T + W^2 Tdot Theta against w T + W^2 Tdot Theta)
    a, b = std.ntk(X), width / args["W_std"] ** 2 * ntk.ntk(X)
    assert np.allclose(a, b, rtol=1e-13, atol=1e-13 * np.max(np.abs(b)))
    with_bias = kernels.fc(**args, parameterization="standard", width=width)
    assert np.all(np.diag(with_bias.ntk(X)) > np.diag(a))                 # the bias gradients add >= 1


# ---- 5. bad input -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, name", [
    (dict(depth=0, activation="relu"), "depth"),
    (dict(depth=1.5, activation="relu"), "depth"),
    (dict(depth=2, activation="relu", W_std=-1.0), "W_std"),
    (dict(depth=2, activation="relu", W_std=np.nan), "W_std"),
    (dict(depth=2, activation="relu", b_std=-0.1), "b_std"),
    (dict(depth=2, activation="relux"), "activation"),
    (dict(depth=2, activation=3), "activation"),
    (dict(depth=2, activation="relu", parameterization="mup"), "parameterization"),
    (dict(depth=2, activation="relu", width=0), "width"),
    (dict(depth=2, activation="erf", gamma=1.0), "gamma"),
    (dict(depth=2, activation="erf", a=np.inf), "a"),
    (dict(depth=2, activation="tanh", alpha=0.1), "alpha"),
])
def test_bad_parameters_are_named(kwargs, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        kernels.fc(**kwargs)


def test_bad_inputs_are_named():
    net = kernels.fc(2, "relu")
    with pytest.raises(InvalidParameterError, match="'Y'.*3 columns"):
        net.nngp(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(InvalidParameterError, match="'X'"):
        net.ntk(np.ones(3))
    with pytest.raises(InvalidParameterError, match="'X'"):
        net.nngp([[1.0, np.nan]])
    with pytest.raises(InvalidParameterError, match="'width'"):
        kernels.fc(2, "relu", parameterization="standard").ntk(np.ones((2, 3)))
    with pytest.raises(InvalidParameterError, match="'d'"):
        net.profile(0)
    with pytest.raises(InvalidParameterError, match="'kernel'"):
        net.profile(3, "ck")
