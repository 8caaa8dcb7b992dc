"""ResNet model: Claim F.4's truncated h, Lemma F.1''s construction W* and sign flips of trained-network layers.

Derivations in docs/resnet.md. Oracles: the antiderivative (He_{i-1} phi)' = -He_i phi in
closed form, scipy quad, Gauss-Hermite quadrature in 2-d (Mehler-free), literal per-row loops of (F.3), coupling's
per-vector sign_flips/worst_case_flips, and seeded Monte Carlo with a stated z.
"""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from numpy.polynomial.hermite_e import hermeval
from scipy.integrate import quad
from scipy.special import roots_legendre
from scipy.stats import norm

from popdyn import InvalidParameterError
from popdyn.hermite import gauss_hermite
from popdyn.models.resnet.complexity import TaylorSeries
from popdyn.models.resnet.coupling import sign_flips, worst_case_flips
from popdyn.models.resnet.existential import G, Phi, random_feature_weights
from popdyn.models.resnet.indicator import (claim_f4_tails, h, h_coefficients, h_truncated, truncation_error,
                                            truncation_levels)
from popdyn.sim.resnet.networks import init_net, preactivation_flips

PHI = TaylorSeries.from_coeffs([0.3, 0.8, 0.0, -0.5])          # 0.3 + 0.8 z - 0.5 z^3
Z = 5.0


def He(i, z):
    return hermeval(z, [0] * i + [1])


# ---------- Claim F.4: levels and the truncated h ----------
def test_truncation_levels_formula():
    B = truncation_levels(PHI, eps=1e-3)
    assert B[0] == np.inf
    assert B[1:] == pytest.approx(100 * np.sqrt([1, 2, 3]) + 10 * math.sqrt(math.log(1e3)), rel=1e-15)


@given(st.floats(-400, 400), st.floats(0.1, 5.0))
def test_h_truncated_is_h_inside_and_clipped_outside(z, level):
    inside = float(np.clip(z, -level, level))
    assert h_truncated(PHI, z, B=level) == pytest.approx(h(PHI, inside), rel=1e-13, abs=1e-13)
    assert h_truncated(PHI, z, B=np.inf) == pytest.approx(h(PHI, z), rel=1e-13, abs=1e-13)
    if abs(z) < 126:                                  # the paper's levels are >= 126 for eps = 1e-3
        assert h_truncated(PHI, z, eps=1e-3) == pytest.approx(h(PHI, z), rel=1e-13, abs=1e-13)


def test_h_truncated_per_degree_levels():
    b = h_coefficients(PHI)
    z = np.array([-3.0, -1.0, 0.4, 2.5])
    ref = b[0] + b[1] * np.clip(z, -1.2, 1.2) + b[3] * He(3, np.clip(z, -2.0, 2.0))
    assert h_truncated(PHI, z, B=[5.0, 1.2, 7.0, 2.0]) == pytest.approx(ref, rel=1e-13)


def _R_at_one(series, B, sign):
    """R'(+-1) in closed form: sum_i b_i [He_i(B_i) Phi(-B_i) - He_{i-1}(B_i) phi(B_i)] on the side x1 z >= 0."""
    b = h_coefficients(series)
    return sum(b[i] * sign ** i * (He(i, B[i]) * norm.sf(B[i]) - He(i - 1, B[i]) * norm.pdf(B[i]))
               for i in range(1, len(b)) if b[i] != 0)


@pytest.mark.parametrize("B", [[np.inf, 1.5, np.inf, 1.5], [np.inf, 1.2, np.inf, 2.0], [np.inf, 3.0, np.inf, 0.7]])
def test_truncation_error_closed_form_at_x1_pm1(B):
    for sign in (1.0, -1.0):
        assert truncation_error(PHI, sign, B=B) == pytest.approx(_R_at_one(PHI, B, sign), rel=1e-9, abs=1e-14)


def test_truncation_error_against_monte_carlo():
    """E[1[alpha >= 0] h_trunc(alpha_1)] - phi(x1) by 1e6 seeded samples of (alpha, beta), |z| < 5."""
    rng = np.random.default_rng(11)
    n = 1_000_000
    alpha, beta = rng.standard_normal((2, n))
    B = [np.inf, 1.2, np.inf, 2.0]
    for x1 in (-0.7, 0.2, 0.9):
        v = (alpha >= 0) * h_truncated(PHI, alpha * x1 + math.sqrt(1 - x1 * x1) * beta, B=B) - PHI(x1)
        assert abs(v.mean() - truncation_error(PHI, x1, B=B)) < Z * v.std() / math.sqrt(n)


def _legendre(lo, hi, n=60):
    x, w = roots_legendre(n)
    return 0.5 * (hi - lo) * x + 0.5 * (hi + lo), 0.5 * (hi - lo) * w


def test_truncation_error_matches_nested_quadrature():
    """Independent 2-d form: E[1[alpha >= 0] h_trunc(alpha_1)] = int_0^inf phi(a) int phi(b) h_trunc(a x1 + s b) db da,
    Gauss-Legendre in b on the panels between the kinks a x1 + s b = +-B, and in a on unit panels (the inner
    integral is a Gaussian convolution, analytic in a)."""
    B = 1.5
    for x1 in (-0.4, 0.6):
        s = math.sqrt(1 - x1 * x1)
        outer = [_legendre(q, q + 1.0, 30) for q in range(14)]
        total = 0.0
        for a_nodes, a_w in outer:
            for a, wa in zip(a_nodes, a_w):
                k1, k2 = sorted(((B - a * x1) / s, (-B - a * x1) / s))
                for lo, hi in ((-14.0, k1), (k1, k2), (k2, 14.0)):
                    b, wb = _legendre(lo, hi)
                    total += wa * norm.pdf(a) * float(wb @ (norm.pdf(b) * h_truncated(PHI, a * x1 + s * b, B=B)))
        assert total - PHI(x1) == pytest.approx(truncation_error(PHI, x1, B=B), abs=1e-10)


def test_truncation_error_underflows_at_the_paper_levels_and_is_bounded():
    assert truncation_error(PHI, [0.3, 1.0], eps=1e-3).tolist() == [0.0, 0.0]
    la, lb = claim_f4_tails(PHI, eps=1e-3)
    assert max(la, lb) < math.log(1e-3 / 8) - 7000                       # Claim F.4(a), (b) hold with room


def test_claim_f4_tails_against_quad():
    B = [np.inf, 3.0, np.inf, 4.0]
    b = h_coefficients(PHI)
    ta = sum(abs(b[i]) * 2 * quad(lambda z: abs(He(i, z)) * norm.pdf(z), B[i], np.inf, epsabs=0, epsrel=1e-12)[0]
             for i in (1, 3))
    tb = sum(abs(b[i]) * abs(He(i, B[i])) * 2 * norm.sf(B[i]) for i in (1, 3))
    la, lb = claim_f4_tails(PHI, B=B)
    assert math.exp(la) == pytest.approx(ta, rel=1e-10) and math.exp(lb) == pytest.approx(tb, rel=1e-12)


@settings(max_examples=20, deadline=None)
@given(st.floats(-1, 1), st.floats(3.3, 6.0))
def test_truncation_error_within_the_f4_tails(x1, level):
    B = [np.inf, level, np.inf, level + 0.5]
    assert abs(truncation_error(PHI, x1, B=B)) <= sum(math.exp(t) for t in claim_f4_tails(PHI, B=B)) * (1 + 1e-9)


@pytest.mark.parametrize("call, name", [
    (lambda: truncation_levels(PHI, eps=0.0), "eps"),
    (lambda: truncation_levels(PHI, eps=1.0), "eps"),
    (lambda: h_truncated(PHI, 0.0), "eps"),
    (lambda: h_truncated(PHI, 0.0, eps=0.1, B=2.0), "eps"),
    (lambda: h_truncated(PHI, 0.0, B=-1.0), "B"),
    (lambda: h_truncated(PHI, 0.0, B=[1.0, 2.0]), "B"),
    (lambda: truncation_error(PHI, 1.5, B=2.0), "x1"),
    (lambda: claim_f4_tails(PHI, B=2.0), "B"),
    (lambda: h_truncated(TaylorSeries.from_coeffs([0.0, 1.0, 1.0]), 0.0, B=1.0), "series"),
])
def test_truncation_bad_input(call, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        call()


# ---------- Lemma F.1': the construction ----------
SERIES = [[TaylorSeries.from_coeffs([0.2, 1.0, 0.0, -0.3]), TaylorSeries.from_coeffs([0.0, 0.5, 0.0, 0.2])],
          [TaylorSeries.from_coeffs([-0.1, -0.7]), TaylorSeries.from_coeffs([0.1, 0.0, 0.0, 0.8])]]


def _unit(rng, *shape):
    v = rng.standard_normal(shape)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_phi_and_construction_against_literal_loops():
    rng = np.random.default_rng(0)
    d, m = 5, 40
    f = Phi.random(d, SERIES, rng=rng)
    X = rng.standard_normal((7, d)) * 3.0
    W0, a = rng.standard_normal((m, d)) / math.sqrt(m), rng.standard_normal((2, m))
    Ws = random_feature_weights(f, W0, a)
    for j in range(m):                                                  # (F.3), one row at a time
        ref = sum(a[r, j] * f.a_star[r, i] * h(f.series[r][i], math.sqrt(m) * W0[j] @ f.w1[r, i]) * f.w2[r, i]
                  for r in range(2) for i in range(2)) / m
        assert Ws[j] == pytest.approx(ref, rel=1e-12, abs=1e-15)
    for n, x in enumerate(X):
        nx = np.linalg.norm(x)
        phi_ref = [sum(f.a_star[r, i] * f.series[r][i](f.w1[r, i] @ x / nx) * (f.w2[r, i] @ x) for i in range(2))
                   for r in range(2)]
        G_ref = [sum(a[r, j] * (Ws[j] @ x) * (W0[j] @ x >= 0) for j in range(m)) for r in range(2)]
        assert f(X)[n] == pytest.approx(phi_ref, rel=1e-12) and G(X, Ws, W0, a)[n] == pytest.approx(G_ref, rel=1e-12)


def test_frobenius_limit_against_2d_gauss_hermite():
    """E||sum_i a*_i h_i(<w,w1_i>) w2_i||^2 with (u, v) = (g1, rho g1 + sqrt(1-rho^2) g2): exact for polynomials."""
    f = Phi.random(6, SERIES, rng=1)
    g, wg = gauss_hermite(30)
    g1, g2 = np.meshgrid(g, g, indexing="ij")
    W = np.outer(wg, wg)
    total = 0.0
    for r in range(2):
        rho = f.w1[r, 0] @ f.w1[r, 1]
        u, v = g1, rho * g1 + math.sqrt(1 - rho * rho) * g2
        hu = f.a_star[r, 0] * f.h(r, 0, u.ravel()).reshape(u.shape)
        hv = f.a_star[r, 1] * f.h(r, 1, v.ravel()).reshape(v.shape)
        total += np.sum(W * (hu ** 2 + hv ** 2 + 2 * hu * hv * (f.w2[r, 0] @ f.w2[r, 1])))
    assert f.frobenius_limit() == pytest.approx(total, rel=1e-12)


def test_construction_is_unbiased_and_its_norm_matches_for_small_m():
    """E G_r(x) = Phi_r(x) and E m||W*||_F^2 = the closed form at every m (here m = 50): pooled terms, |z| < 5."""
    rng = np.random.default_rng(2)
    d, m, reps = 6, 50, 4000
    f = Phi.random(d, SERIES, rng=rng)
    x = _unit(rng, 3, d)
    T, rows = [], []
    for _ in range(reps):
        W0, a = rng.standard_normal((m, d)) / math.sqrt(m), rng.standard_normal((2, m))
        Ws = random_feature_weights(f, W0, a)
        T.append(m * ((x @ Ws.T) * (x @ W0.T >= 0))[:, None, :] * a[None])
        rows.append(m * m * (Ws ** 2).sum(1))
    T, rows = np.concatenate(T, -1), np.concatenate(rows)
    z = (T.mean(-1) - f(x)) / (T.std(-1) / math.sqrt(T.shape[-1]))
    assert np.abs(z).max() < Z
    assert abs(rows.mean() - f.frobenius_limit()) < Z * rows.std() / math.sqrt(rows.size)


def test_construction_error_scales_like_inverse_sqrt_m():
    """Var G_r(x) = Var(term)/m exactly: m * mean squared error at m = 100 and 10^4 agree within 15 %."""
    rng = np.random.default_rng(3)
    d = 6
    f = Phi.random(d, SERIES, rng=rng)
    x = _unit(rng, 8, d)
    scaled = []
    for m, reps in ((100, 2000), (10_000, 20)):
        err = [G(x, random_feature_weights(f, W0, a), W0, a) - f(x)
               for W0, a in ((rng.standard_normal((m, d)) / math.sqrt(m), rng.standard_normal((2, m)))
                             for _ in range(reps))]
        scaled.append(m * np.mean(np.square(err)))
    assert scaled[1] == pytest.approx(scaled[0], rel=0.15)


@pytest.mark.parametrize("call, name", [
    (lambda: Phi([[1.0]], np.ones((1, 1, 2)), np.eye(2)[None, :1], [[TaylorSeries.from_coeffs([1.0])]]), "w1"),
    (lambda: Phi([[1.0]], np.eye(2)[None, :1], np.eye(3)[None, :1], [[TaylorSeries.from_coeffs([1.0])]]), "w2"),
    (lambda: Phi([[1.0]], np.eye(2)[None, :1], np.eye(2)[None, :1], [[1.0]]), "series"),
    (lambda: Phi([[1.0]], np.eye(2)[None, :1], np.eye(2)[None, :1],
                 [[TaylorSeries.from_coeffs([0.0, 0.0, 1.0])]]), "series"),
    (lambda: Phi.random(3, SERIES)(np.zeros((1, 3))), "X"),
    (lambda: random_feature_weights(Phi.random(3, SERIES), np.ones((4, 2)), np.ones((2, 4))), "W0"),
    (lambda: random_feature_weights(Phi.random(3, SERIES), np.ones((4, 3)), np.ones((3, 4))), "a"),
    (lambda: random_feature_weights("phi", np.ones((4, 3)), np.ones((2, 4))), "phi"),
    (lambda: G(np.ones((2, 3)), np.ones((4, 3)), np.ones((5, 3)), np.ones((1, 4))), "W0"),
])
def test_construction_bad_input(call, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        call()


# ---------- Prop. C.4 on a network's layers ----------
def _perturbed(arch="resnet"):
    net = init_net(arch, d=5, k=2, m=40, seeds=3, seed=1)
    gen = torch.Generator().manual_seed(0)
    net.W += 0.1 * torch.randn(net.W.shape, generator=gen, dtype=net.W.dtype)
    if net.V is not None:
        net.V += 0.1 * torch.randn(net.V.shape, generator=gen, dtype=net.V.dtype)
    X = np.sign(np.random.default_rng(0).standard_normal((6, 5)))
    return net, X


@pytest.mark.parametrize("layer", ["W", "V"])
def test_preactivation_flips_against_per_vector_counts(layer):
    net, X = _perturbed()
    r = preactivation_flips(net, X, layer)
    Xt = np.hstack([X, np.ones((6, 1))])
    for s in range(3):
        if layer == "W":
            g0, gp = Xt @ net.W0[s].numpy().T, Xt @ (net.W[s] - net.W0[s]).numpy().T
        else:
            h1 = np.maximum(Xt @ net.W[s].numpy().T, 0)
            Zt = np.hstack([h1 @ net.A[s].numpy().T, np.ones((6, 1))])       # (out1(x), 1) with the trained W
            g0, gp = Zt @ net.V0[s].numpy().T, Zt @ (net.V[s] - net.V0[s]).numpy().T
        for i in range(6):
            assert r["flips"][s, i] == sign_flips(g0[i], gp[i])
            assert r["worst"][s, i] == worst_case_flips(g0[i], np.linalg.norm(gp[i]))
            assert r["delta"][s, i] == pytest.approx(np.linalg.norm(gp[i]) / np.linalg.norm(g0[i]), rel=1e-12)
    assert (r["flips"] <= r["worst"]).all() and (r["flips"] > 0).any()
    assert r["fraction"] == pytest.approx(r["flips"] / 40)


def test_preactivation_flips_bad_input():
    net, X = _perturbed("fc2")
    assert preactivation_flips(net, X)["flips"].shape == (3, 6)
    with pytest.raises(InvalidParameterError, match="'layer'"):
        preactivation_flips(net, X, "V")
    with pytest.raises(InvalidParameterError, match="'X'"):
        preactivation_flips(net, 0.5 * X)
    with pytest.raises(InvalidParameterError, match="'net'"):
        preactivation_flips("net", X)
