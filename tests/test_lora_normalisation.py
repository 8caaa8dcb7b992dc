"""LoRA B0/B1 by quadrature (G = I) against RQMC, Monte Carlo, enumeration and 1-d quadrature."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import integrate

from popdyn import InvalidParameterError, activations
from popdyn.models.lora import B0, B1, Problem, gradient_second_moment
from popdyn.models.lora import normalisation as nz

_GRID = np.array([-1.0, -0.6, 0.0, 0.5, 0.95, 1.0])


def _problem(k, xi, act, seed, quantised=True, normalisation="N1"):
    if quantised:
        return Problem.orthonormal(k=k, xi=xi, activation=act, seed=seed, normalisation=normalisation,
                                   lam=np.random.default_rng(seed).uniform(0.5, 1.5, k))
    rng = np.random.default_rng(seed)
    c, ch = rng.standard_normal((2, k))
    return Problem(np.eye(k), rng.uniform(-1, 1.5, k), c / np.linalg.norm(c), ch / np.linalg.norm(ch), xi,
                   activation=act)


CASES = [(8, 1.0, "relu", 3, True), (2, 2.0, "relu", 1, True), (1, 0.7, "relu", 0, True),
         (5, 1.3, "relu", 4, False), (4, 1.0, "abs", 2, True), (4, 1.0, activations.leaky_relu(0.2), 2, True),
         (4, 1.5, "erf", 5, True), (3, 1.0, "tanh", 6, False), (4, 1.0, "he3", 7, True), (3, 1.0, "linear", 8, True)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[2] if isinstance(c[2], str) else c[2].name}-k{c[0]}")
def test_quadrature_agrees_with_rqmc(case):
    # independent: scrambled Sobol over the (k+2)-dim Gaussian, n = 2^16; 4 SE of the RQMC plus the
    # quadrature's own estimate (he3 has heavy tails: its RQMC SE is itself uncertain, hence 5 SE there)
    p = _problem(*case)
    z = 5.0 if p.activation.name == "he3" else 4.0
    for fn in (B0, B1):
        exact, err = fn(p, _GRID)
        mc, se = fn(p, _GRID, n=1 << 16, method="rqmc")
        assert np.all(np.abs(exact - mc) <= z * se + err + 1e-12)


def test_n0_relu_is_r4_times_n1():
    # N0 = N1 with sigma(r z); ReLU is homogeneous, so D and g both scale by r: B0 by r^4
    p0, p1 = (_problem(4, 1.2, "relu", 3, normalisation=c) for c in ("N0", "N1"))
    r4 = (1 + 1.2**2 / 4) ** 2
    np.testing.assert_allclose(B0(p0, _GRID)[0], r4 * B0(p1, _GRID)[0], rtol=1e-13)


@pytest.mark.parametrize("m", [-0.7, 0.3, 1.0])
def test_gradient_second_moment_against_direct_mc_in_d_dims(m):
    # x ~ N(0, I_d) in R^9 with explicit W = I, u, u_hat, the projected gradient L and ||L||^2: 4 SE
    p, d, n = _problem(3, 1.1, "relu", 2, quantised=False), 9, 200_000
    k, lam, sig = p.k, p.lam, p.sigma
    u, e2 = np.eye(d)[k], np.eye(d)[k + 1]
    uh = m * u + np.sqrt(1 - m * m) * e2
    V = (np.eye(d)[:k] + p.xi * np.outer(p.c, u)) / p.r[:, None]
    Vh = (np.eye(d)[:k] + p.xi * np.outer(p.c_hat, uh)) / p.r_hat[:, None]
    x = np.random.default_rng(11).standard_normal((n, d))
    res = sig(x @ V.T) @ lam - sig(x @ Vh.T) @ lam
    g = -2 * res * (sig.deriv(x @ Vh.T) @ (lam * p.xi * p.c_hat / p.r_hat))
    proj = x.copy()
    proj[:, :k] = 0.0
    proj -= np.outer(proj @ uh, uh)
    q = g**2 * np.sum(proj * proj, axis=1)
    mean, err = gradient_second_moment(p, m, d=d)
    assert abs(mean - q.mean()) < 4 * q.std(ddof=1) / np.sqrt(n) + err


@pytest.mark.parametrize("sa,sb", [(1.0, 0.0), (1.0, 1.0), (1.3, -0.2)])
def test_piecewise_linear_neuron_moments_against_1d_quad(sa, sb):
    # the closed form of one neuron's 8 moments against scipy.quad split at the two kinks
    sig = lambda y: np.where(y > 0, sa * y, -sb * y)
    dsig = lambda y: np.where(y > 0, sa, -sb)
    rng = np.random.default_rng(0)
    mom = np.empty(8)
    for A, B, r, rh in [(0.4, -0.9, 1.1, 1.3), (-0.2, -0.2, 1.2, 1.2), (1.7, 0.3, 1.05, 1.4)] + \
            [tuple(rng.uniform([-2, -2, 1, 1], [2, 2, 1.5, 1.5])) for _ in range(3)]:
        cdf = lambda x: 0.5 * (1 + __import__("math").erf(x / np.sqrt(2)))
        pdf = lambda x: np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)
        nz._pl_neuron(A, B, r, rh, sa, sb, cdf(-A), pdf(-A), cdf(-B), pdf(-B), mom)
        for row, (i, j) in enumerate(nz._POWERS):
            f = lambda z: (sig((z + A) / r) - sig((z + B) / rh)) ** i * dsig((z + B) / rh) ** j * pdf(z)
            ref = integrate.quad(f, -12, 12, points=sorted({-A, -B}), epsabs=1e-14, epsrel=1e-13, limit=200)[0]
            assert mom[row] == pytest.approx(ref, abs=1e-12)


def test_cumulant_combination_against_enumeration():
    # three independent neurons, each (D_i, G_i) uniform on 3 points: E[X^2 Y^2] by enumerating 27 outcomes
    rng = np.random.default_rng(1)
    vals = rng.normal(size=(3, 3, 2))  # neuron, outcome, (D, G)
    lam, gam = rng.uniform(0.5, 2, 3), rng.uniform(-1, 1, 3)
    ref = 0.0
    for o in itertools.product(range(3), repeat=3):
        X = sum(lam[i] * vals[i, o[i], 0] for i in range(3))
        Y = sum(lam[i] * gam[i] * vals[i, o[i], 1] for i in range(3))
        ref += X**2 * Y**2 / 27
    powers = nz._POWERS
    mu = np.array([[[np.mean(vals[i, :, 0] ** a * vals[i, :, 1] ** b)] for a, b in powers] for i in range(3)])
    S = np.array([[lam[i] ** (a + b) * gam[i] ** b for a, b in powers] for i in range(3)])
    assert nz._fourth_moment(mu, S)[0] == pytest.approx(ref, rel=1e-13)


def test_radial_rule_moments():
    # rho e^{-rho^2/2} on [0, inf): E rho^j = 2^(j/2) Gamma(1 + j/2), exact for j <= 2n - 1
    from scipy.special import gamma
    from popdyn.polar import radial_rule
    x, w = radial_rule(8)
    for j in range(16):
        assert w @ x**j == pytest.approx(2 ** (j / 2) * gamma(1 + j / 2), rel=1e-12)


@pytest.mark.parametrize("case", CASES[:4] + CASES[6:8], ids=lambda c: f"{c[2]}-k{c[0]}-xi{c[1]}")
def test_error_estimate_bounds_the_error_and_table_rule_is_accurate(case):
    # reference: a much finer rule (angular panels x2, radial x2, inner Gauss-Hermite 96)
    p = _problem(*case)
    ref = np.array(nz._quadrature(p, _GRID, (16, 24, 96)))
    est = np.array([B0(p, _GRID), B1(p, _GRID)])  # (B, value/err, m)
    assert np.all(np.abs(est[:, 0] - ref) <= est[:, 1] + 1e-14)
    table = np.array(nz._quadrature(p, _GRID, nz._TABLE_RULE))
    assert np.max(np.abs(table - ref)) <= 1e-3 * np.max(np.abs(ref))  # 1e-3: 5x the measured worst 2e-4
    # the ODE's table: _N_CHEB points in theta = arccos m, interpolated onto the 41-point grid
    ref = np.array(nz._quadrature(p, nz._M_TABLE, (16, 24, 96)))
    assert np.max(np.abs(np.array(nz._table(p, 2, 0)) - ref)) <= 1e-3 * np.max(np.abs(ref))  # measured <= 4.5e-4


def test_zero_when_c_hat_equals_c_at_m_one_and_b1_equals_b0_at_ends():
    p = Problem(np.eye(3), [1.0, -0.4, 2.0], [0.6, 0.0, 0.8], [0.6, 0.0, 0.8], 1.3)
    assert B0(p, 1.0)[0] == 0.0 and B1(p, 1.0)[0] == 0.0 and B0(p, 0.9)[0] > 0
    q = _problem(4, 1.0, "relu", 1)
    assert np.array_equal(B0(q, [-1.0, 1.0])[0], B1(q, [-1.0, 1.0])[0])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.floats(-1, 1), k=st.integers(1, 5))
def test_sign_symmetries(seed, m, k):
    # u -> -u flips c (same teacher): B(m; c, c_hat) = B(m; -c, -c_hat); u_hat -> -u_hat flips c_hat and m
    rng = np.random.default_rng(seed)
    c, ch = rng.standard_normal((2, k))
    c, ch, lam = c / np.linalg.norm(c), ch / np.linalg.norm(ch), rng.uniform(-1, 1, k)
    base = Problem(np.eye(k), lam, c, ch, 1.2)
    for fn in (B0, B1):
        v = fn(base, m)[0]
        assert v >= 0
        assert fn(Problem(np.eye(k), lam, -c, -ch, 1.2), m)[0] == pytest.approx(v, rel=1e-9, abs=1e-14)
        assert fn(Problem(np.eye(k), lam, c, -ch, 1.2), -m)[0] == pytest.approx(v, rel=1e-9, abs=1e-14)
        perm = rng.permutation(k)
        assert fn(Problem(np.eye(k), lam[perm], c[perm], ch[perm], 1.2), m)[0] == pytest.approx(v, rel=1e-12, abs=1e-14)


def test_auto_uses_rqmc_for_general_gram_and_quadrature_needs_identity():
    p = Problem.random_features(k=3, xi=1.0, activation="tanh", seed=0)  # the ReLU family takes "orthant"
    a, _ = B0(p, 0.2, n=1 << 10)
    assert a == B0(p, 0.2, n=1 << 10, method="rqmc")[0]
    with pytest.raises(InvalidParameterError, match="'method'"):
        B0(p, 0.2, method="quadrature")


@pytest.mark.parametrize("case", [(1, 5.0, "relu", 0, True), (2, 3.0, "relu", 1, True), (1, 3.0, "tanh", 0, True)])
def test_steep_problems_get_more_nodes_and_an_honest_estimate(case):
    # xi |c| up to 5: Phi(xi c a) turns over on 1/5; the rules scale with it and the estimate still bounds the
    # error against a 4x finer rule
    p = _problem(*case)
    m = np.array([-1, -0.9, -0.3, 0.0, 0.4, 0.8, 0.99, 1.0])
    ref = np.array(nz._quadrature(p, m, (32, 40, 160)))
    est = np.array([B0(p, m), B1(p, m)])
    assert np.all(np.abs(est[:, 0] - ref) <= est[:, 1])
    assert np.max(est[:, 1]) <= 1e-4 * np.max(ref)  # measured <= 1.5e-5 relative
