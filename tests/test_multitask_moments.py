"""popdyn.models.multitask moments: q, p_k, M, S and A(w) against quadrature, Monte Carlo of the definitions.

Oracles: scipy.integrate.quad of the characteristic-function integrals (docs/multitask.md), the arcsin (orthant)
closed forms for r <= 3, seeded Monte Carlo of ``q = E[phi(a/s) | u]``, ``p_k = E[Phi(a_{-k}/s) | u]``,
``M(u) = E[relu'(w.x) x | u]`` and ``S(u) = E[relu(w.x) | u]`` in full d coordinates (|z| <= 5 per entry),
central differences for ``grad_w S = M``, and A(w) = E_u[M M^T] against Monte Carlo of conditionally independent
pairs and its leading-order blocks.
"""
import itertools
import math

import numpy as np
import pytest
from hypothesis import example, given, note, settings, strategies as st
from scipy import integrate
from scipy.special import dawsn, ndtr

from popdyn._validate import InvalidParameterError
from popdyn.gaussian import mc_mean
from popdyn.models import multitask as mt
from tests.strategies import unit_rows

PHI0 = 1.0 / math.sqrt(2.0 * math.pi)
TWO_PI = 2.0 * math.pi
Z_MAX = 5.0   # per-entry bound on Monte Carlo z-scores (a few hundred entries per test: P(|z| > 5) ~ 6e-7 each)


# ---- shared helpers (test_multitask.py imports these) ------------------------------------------------------------

@st.composite
def neurons(draw, r_min=1, r_max=3, norm_max=10.0, s_range=(1e-2, 1e2)):
    """One neuron in reduced coordinates: (w_par (r,), s) with ||w_par|| in [0, norm_max], s log-uniform."""
    r = draw(st.integers(r_min, r_max))
    w_par = draw(st.floats(0.0, norm_max)) * unit_rows(draw, 1, r)[0]
    s = 10.0 ** draw(st.floats(math.log10(s_range[0]), math.log10(s_range[1])))
    note(f"w_par={w_par.tolist()!r}, s={s!r}")
    return w_par, s


def assert_z(est, se, exact, what, z_max=Z_MAX):
    """Every entry of a Monte Carlo estimate within z_max standard errors of the closed form."""
    est, se, exact = np.broadcast_arrays(np.asarray(est, float), np.asarray(se, float), np.asarray(exact, float))
    z = (est - exact) / np.maximum(se, 1e-300)
    worst = np.unravel_index(np.argmax(np.abs(z)), z.shape)
    assert np.abs(z).max() <= z_max, (f"{what}: max |z| = {np.abs(z).max():.2f} at {worst} (estimate {est[worst]!r}, "
                                      f"closed form {exact[worst]!r}, se {se[worst]!r})")
    return float(np.abs(z).max())


def full_M(w, r, method="auto"):
    """M(u) in full d coordinates (P, d) and S(u) (P,) from the reduced moments."""
    s = np.linalg.norm(w[r:])
    M_par, m_perp, S = mt.conditional_moments(w[:r], s, method)
    return np.concatenate([M_par[0], m_perp[0][:, None] * (w[r:] / s)[None, :]], axis=1), S[0]


# ---- scipy.quad oracle of the 1-D integrals (docs/multitask.md) ------------------------------------------------

def _psi(beta):
    return np.exp(-0.5 * beta * beta) + 2j / math.sqrt(math.pi) * dawsn(beta / math.sqrt(2.0))


def quad_moments(w_par, s):
    """q (P,), p (P, r) by adaptive scipy quadrature of the characteristic-function integrals, split at the scales
    1/||w_par|| and 1/s, truncated at 40/s (the Gaussian factor is exp(-800) there)."""
    r = len(w_par)
    U = np.array(list(itertools.product([-1.0, 1.0], repeat=r)))
    cn = max(float(np.linalg.norm(w_par)), 1e-300)
    edges = [0.0] + sorted({min(1 / cn, 1 / s) * f for f in (0.1, 1.0, 10.0)} | {1 / s, 3 / s, 6 / s}) + [40.0 / s]

    def quad(f):
        return sum(integrate.quad(f, a, b, epsabs=1e-14, epsrel=1e-13, limit=200)[0]
                   for a, b in zip(edges[:-1], edges[1:]) if b > a)

    q, p = np.empty(len(U)), np.empty((len(U), r))
    for i, u in enumerate(U):
        c = u * w_par
        q[i] = s / math.pi * quad(lambda t: math.exp(-0.5 * (s * t) ** 2) * np.prod(_psi(t * c)).real)
        for k in range(r):
            ck = np.delete(c, k)
            p[i, k] = 0.5 + quad(lambda t: math.exp(-0.5 * (s * t) ** 2) * np.prod(_psi(t * ck)).imag / t) / math.pi
    return q, p


# ---- sign_moments -----------------------------------------------------------------------------------------------

@settings(max_examples=60)
@given(neurons(1, 3))
@example((np.array([7.0, -7.0, 1e-3]), 1e-2))                         # ||w_par|| = 10 >> s: the slow power-law tail
@example((np.array([1e-3, 2e-3, 0.0]), 1e2))                          # eps ~ 2e-5
def test_quad_equals_arcsin(neuron):
    """the geometric Gauss-Legendre quadrature equals the arcsin closed forms for s in [1e-2, 1e2],
    ||w_par|| <= 10. Tolerance 1e-11 absolute (q, p <= 1); measured max 1.5e-12 over 900 random points."""
    w_par, s = neuron
    qa, pa = mt.sign_moments(w_par, s, "arcsin")
    qq, pq = mt.sign_moments(w_par, s, "quad")
    assert np.abs(qa - qq).max() <= 1e-11 and np.abs(pa - pq).max() <= 1e-11


def _mp_sign_moments(w_par, s):
    """q (P,) and p (P, r) from the orthant (arcsin) forms evaluated in mpmath at 40 digits (no cancellation left)."""
    import mpmath as mp
    r = len(w_par)
    with mp.workdps(40):
        w, s = [mp.mpf(float(x)) for x in w_par], mp.mpf(float(s))
        nw = mp.sqrt(sum(x * x for x in w) + s * s)
        nk = [mp.sqrt(sum(w[l] ** 2 for l in range(r) if l != k) + s * s) for k in range(r)]
        q, p = [], []
        for u in mt.sign_patterns(r):
            orth = mp.mpf(2) ** -r + sum(mp.asin(-u[k] * u[l] * w[k] * w[l] / (nk[k] * nk[l]))
                                         for k in range(r) for l in range(k + 1, r)) / (2 ** (r - 1) * mp.pi)
            q.append(float(2 ** r / mp.sqrt(2 * mp.pi) * s / nw * orth))
            p.append([float(mp.mpf(1) / 2 + sum(mp.asin(u[l] * w[l] / nk[k]) for l in range(r) if l != k) / mp.pi)
                      for k in range(r)])
        return np.array(q), np.array(p)


@st.composite
def _far_neurons(draw, r):
    """A neuron with ||w_par|| / s anywhere in [1e-3, 1e8] and s in [1e-3, 1e3], sometimes one dominant entry."""
    s = 10.0 ** draw(st.floats(-3, 3))
    w = np.array(draw(st.lists(st.floats(-1, 1).filter(lambda x: abs(x) > 1e-3), min_size=r, max_size=r)))
    if draw(st.booleans()):
        w[1:] *= 10.0 ** draw(st.floats(-6, 0))
    return w / np.linalg.norm(w) * s * 10.0 ** draw(st.floats(-3, 8)), s


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([2, 3]).flatmap(_far_neurons))
@example((np.array([1e4, 1e-3]), 1.0))                # |rho| small, nk_1^2 = ||w||^2 - w_1^2 cancelled before
@example((np.array([1e6, -2e5, 3e5]), 1.0))           # r = 3 orthant 1/8 + sum asin / (4 pi) cancels
def test_arcsin_forms_are_accurate_far_from_the_bulk(neuron):
    """The declared accuracy of sign_moments for r <= 3 at every ||w_par|| / s: q relative 1e-12, p absolute 1e-14
    (before: 6e-5 relative at ||w_par|| / s = 1e6, r = 2; 0.6 at 1e8), against the closed forms at 40 digits."""
    w_par, s = neuron
    q, p = mt.sign_moments(w_par, s)
    qr, pr = _mp_sign_moments(w_par, s)
    assert np.abs(q[0] / qr - 1).max() <= 1e-12 and np.abs(p[0] - pr).max() <= 1e-14


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([2, 3]).flatmap(_far_neurons))
def test_quad_meets_its_declared_accuracy_or_warns(neuron):
    """"quad": p to 1e-14 absolute; q to 2e-16 (||w_par||/s)^2 relative (plus 1e-13), with a RuntimeWarning past
    ||w_par|| / s = 1e4 where that exceeds 1e-8."""
    w_par, s = neuron
    ratio = np.linalg.norm(w_par) / s
    qr, pr = _mp_sign_moments(w_par, s)
    if ratio > 1e4:
        with pytest.warns(RuntimeWarning, match="accurate to about"):
            q, p = mt.sign_moments(w_par, s, "quad")
    else:
        q, p = mt.sign_moments(w_par, s, "quad")
    assert np.abs(p[0] - pr).max() <= 1e-14
    assert np.abs(q[0] / qr - 1).max() <= 1e-13 + 2e-16 * ratio ** 2 * 10  # x10 headroom over the measured slope


@settings(max_examples=12)
@given(neurons(1, 3))
@example((np.array([7.0, -7.0, 1e-3]), 1e-2))
def test_arcsin_equals_scipy_quad(neuron):
    """The orthant (arcsin) forms against an independent adaptive quadrature of the c.f. integrals: 1e-11 absolute
    (measured <= 1e-14)."""
    w_par, s = neuron
    q, p = mt.sign_moments(w_par, s)
    qr, pr = quad_moments(w_par, s)
    assert np.abs(q[0] - qr).max() <= 1e-11 and np.abs(p[0] - pr).max() <= 1e-11


def _mc_sign_moments(w_par, s, n, seed):
    """Seeded MC of the definitions: x_par = u * y with y_k half-normal, a = w_par . x_par, a_{-k} = a - u_k w_k y_k."""
    r = len(w_par)
    C = mt.sign_patterns(r) * w_par                                        # c_k(u) = u_k w_k  (P, r)

    def sample(rng, k):
        y = np.abs(rng.standard_normal((k, r)))
        a = y @ C.T                                                        # (k, P)
        a_minus = a[:, :, None] - y[:, None, :] * C[None]                  # (k, P, r)
        return np.concatenate([np.exp(-0.5 * (a / s) ** 2) * PHI0, ndtr(a_minus / s).reshape(k, -1)], axis=1)

    mean, se = mc_mean(sample, n, seed, chunk=20_000)
    P = C.shape[0]
    return mean[:P], se[:P], mean[P:].reshape(P, r), se[P:].reshape(P, r)


@pytest.mark.parametrize("w_par, s", [
    (np.array([0.7, -1.1, 0.4]), 0.4),                # r = 3 arcsin, ||w_par|| > s
    (np.array([0.5, -0.3, 1.2, 0.8]), 1.3),           # r = 4 (s = 1.3)
    (np.array([2.0, -1.5, 0.3, 1.0, -0.7]), 0.5),     # r = 5, ||w_par|| >> s (where Gauss-Hermite fails)
    (np.array([0.2, 0.1, -0.3, 0.25, -0.05]), 4.0),   # r = 5, the paper's regime eps < 1
])
def test_sign_moments_match_monte_carlo_of_definitions(w_par, s):
    """q(u) = E[phi(a/s) | u], p_k(u) = E[Phi(a_{-k}/s) | u]: n = 1e5 half-normal draws (shared by all patterns),
    |z| <= 5 on every entry (measured max |z| 3.0 over the 4 points, 2.3e-3 max abs error)."""
    q, p = mt.sign_moments(w_par, s)
    qm, qse, pm, pse = _mc_sign_moments(w_par, s, 100_000, seed=11)
    assert_z(qm, qse, q[0], "q")
    assert_z(pm, pse, p[0], "p")


@settings(max_examples=40)
@given(neurons(1, 5), st.sampled_from(["auto", "quad"]))
def test_sign_moments_symmetry_and_range(neuron, method):
    """q(-u) = q(u), p_k(-u) = 1 - p_k(u) (pattern -u has index P - 1 - i); 0 < q <= phi(0), 0 <= p <= 1."""
    w_par, s = neuron
    q, p = mt.sign_moments(w_par, s, method)
    np.testing.assert_allclose(q[0], q[0, ::-1], rtol=1e-12, atol=1e-15)   # exact identities, up to rounding
    np.testing.assert_allclose(p[0], 1.0 - p[0, ::-1], rtol=0, atol=1e-14)
    assert np.all(q > 0) and np.all(q <= PHI0 * (1 + 1e-14))
    assert np.all(p >= -1e-14) and np.all(p <= 1 + 1e-14)


def test_sign_moments_r1_closed_form_and_pattern_order():
    """r = 1 (both methods): p = 1/2 and q = phi(0) s/||w|| (docs/multitask.md); patterns in itertools order."""
    for method in ("arcsin", "quad"):
        q, p = mt.sign_moments([[0.8], [-3.0]], [0.6, 0.05], method)
        np.testing.assert_allclose(q, PHI0 * np.array([[0.6 / 1.0] * 2, [0.05 / math.hypot(3.0, 0.05)] * 2]),
                                   rtol=1e-12)
        np.testing.assert_allclose(p, 0.5, atol=1e-14)
    assert mt.sign_patterns(3).tolist() == [list(u) for u in itertools.product([-1.0, 1.0], repeat=3)]


def test_sign_moments_vectorised_over_neurons():
    """A batch of neurons gives the rows of the one-neuron calls (both paths; quad grids differ per batch)."""
    rng = np.random.default_rng(5)
    for r in (2, 4):
        w_par, s = rng.standard_normal((5, r)) * 2, 10 ** rng.uniform(-1, 1, 5)
        q, p = mt.sign_moments(w_par, s)
        for j in range(5):
            qj, pj = mt.sign_moments(w_par[j], s[j])
            np.testing.assert_allclose(q[j], qj[0], rtol=0, atol=1e-12)    # 1e-12: grid tolerance of the quad path
            np.testing.assert_allclose(p[j], pj[0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("kw, name", [
    (dict(w_par=[[0.3, 0.2]], s=[0.0]), "s"),
    (dict(w_par=[[0.3, 0.2]], s=[-1.0]), "s"),
    (dict(w_par=[[0.3, 0.2]], s=[1.0, 2.0]), "s"),
    (dict(w_par=[[np.nan, 0.2]], s=[1.0]), "w_par"),
    (dict(w_par=np.ones((1, 4)), s=[1.0], method="arcsin"), "method"),
    (dict(w_par=np.ones((1, 2)), s=[1.0], method="gh"), "method"),
])
def test_sign_moments_bad_input(kw, name):
    for f in (mt.sign_moments, mt.conditional_moments):
        with pytest.raises(InvalidParameterError, match=f"'{name}'"):
            f(**kw)


# ---- halfnormal_cf ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("beta", [0.0, 0.3, 1.7, -2.5, 8.0, 60.0])
def test_halfnormal_cf_matches_quadrature(beta):
    """psi(beta) = E[exp(i beta |g|)] = int_0^inf 2 phi(y) (cos + i sin)(beta y) dy by scipy.quad (weight='cos'/'sin'
    handles the oscillation at large beta); 1e-12 absolute."""
    re = integrate.quad(lambda y: 2 * PHI0 * math.exp(-0.5 * y * y), 0, 40, weight="cos", wvar=beta)[0]
    im = integrate.quad(lambda y: 2 * PHI0 * math.exp(-0.5 * y * y), 0, 40, weight="sin", wvar=beta)[0]
    psi = complex(mt.halfnormal_cf(beta))
    assert abs(psi - complex(re, im)) <= 1e-12
    assert complex(mt.halfnormal_cf(-beta)) == psi.conjugate()


def test_halfnormal_cf_matches_monte_carlo():
    """Spec C1: psi(1.7) = 0.2357 + 0.5719i; seeded MC with n = 1e6, |z| <= 5 on both parts (measured max |z| 1.5)."""
    beta = np.array([0.4, 1.7, 5.0])

    def sample(rng, k):
        y = np.abs(rng.standard_normal((k, 1))) * beta
        return np.concatenate([np.cos(y), np.sin(y)], axis=1)

    mean, se = mc_mean(sample, 1_000_000, seed=3, chunk=200_000)
    psi = mt.halfnormal_cf(beta)
    assert_z(mean, se, np.concatenate([psi.real, psi.imag]), "psi")
    assert abs(complex(psi[1]) - (0.2357 + 0.5719j)) < 1e-4                # a reference script's 4-digit value


# ---- conditional_moments ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("r, seed", [(2, 0), (4, 1)])
def test_conditional_moments_match_full_coordinate_monte_carlo(r, seed):
    """M(u) = E[relu'(w.x) x | u] (d entries) and S(u) = E[relu(w.x) | u] by seeded MC in all d = 10 coordinates
    (x_par = u * |g|, x_perp ~ N(0, I)), n = 6e4 per pattern, |z| <= 5 on all P (d + 1) entries (measured max |z| 2.4,
    max abs error 9e-3)."""
    d = 10
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d) * np.r_[np.full(r, 1.5), np.full(d - r, 0.5)]   # eps = 0.23 (r = 2), 3.5 (r = 4)
    U = mt.sign_patterns(r)
    P = U.shape[0]

    def sample(rng, k):
        x = rng.standard_normal((k, 1, d)).repeat(P, axis=1)
        x[:, :, :r] = np.abs(x[:, :, :r]) * U[None]                      # same draw, every pattern
        z = x @ w                                                          # (k, P)
        return np.concatenate([((z > 0)[:, :, None] * x).reshape(k, -1), np.maximum(z, 0)], axis=1)

    mean, se = mc_mean(sample, 60_000, seed=seed + 20, chunk=20_000)
    M, S = full_M(w, r)
    assert_z(mean[:P * d], se[:P * d], M.ravel(), "M")
    assert_z(mean[P * d:], se[P * d:], S, "S")


@settings(max_examples=40)
@given(neurons(1, 5, s_range=(1e-2, 1e2)))
def test_pattern_averages(neuron):
    """E_u S(u) = ||w||/sqrt(2 pi) and E_u M(u) = w_hat/sqrt(2 pi) (1e-10, relative to ||w||)."""
    w_par, s = neuron
    M_par, m_perp, S = mt.conditional_moments(w_par, s)
    nw = math.hypot(np.linalg.norm(w_par), s)
    assert abs(S.mean() - nw * PHI0) <= 1e-10 * nw
    np.testing.assert_allclose(M_par[0].mean(0), w_par / nw * PHI0, rtol=0, atol=1e-10)
    assert abs(m_perp.mean() - s / nw * PHI0) <= 1e-10
    assert np.all(S >= -1e-12 * nw)


@settings(max_examples=25)
@given(neurons(1, 4, norm_max=5.0, s_range=(0.1, 10.0)), st.integers(0, 2**32 - 1))
def test_grad_S_is_M_and_euler(neuron, seed):
    """grad_w S(u) = M(u) by central differences in full coordinates (d = r + 3; the perp part is
    rotated at random so every coordinate varies), rtol 1e-6; Euler's relation S(u) = M(u) . w then follows."""
    w_par, s = neuron
    r = len(w_par)
    perp = np.random.default_rng(seed).standard_normal(3)
    w = np.concatenate([w_par, s * perp / np.linalg.norm(perp)])
    M, S = full_M(w, r)
    h = 1e-5 * np.linalg.norm(w)
    G = np.empty_like(M)
    for i in range(len(w)):
        e = np.zeros_like(w)
        e[i] = h
        G[:, i] = (full_M(w + e, r)[1] - full_M(w - e, r)[1]) / (2 * h)
    scale = np.linalg.norm(M, axis=1, keepdims=True)
    np.testing.assert_allclose(G, M, rtol=0, atol=1e-6 * scale.max())
    np.testing.assert_allclose(G @ w, S, rtol=1e-6, atol=1e-9 * np.linalg.norm(w))


@settings(max_examples=25)
@given(neurons(1, 5), st.floats(1e-3, 1e3))
def test_homogeneity(neuron, c):
    """S(cw) = c S(w), M(cw) = M(w) for c > 0 (rtol 1e-10: both paths are scale-covariant up to rounding)."""
    w_par, s = neuron
    M_par, m_perp, S = mt.conditional_moments(w_par, s)
    M2, m2, S2 = mt.conditional_moments(c * w_par, c * s)
    np.testing.assert_allclose(S2, c * S, rtol=1e-10, atol=1e-12 * c * math.hypot(np.linalg.norm(w_par), s))
    np.testing.assert_allclose(M2, M_par, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m2, m_perp, rtol=1e-10, atol=1e-12)


@settings(max_examples=20)
@given(neurons(1, 1), st.sampled_from(["arcsin", "quad"]))
def test_r1_closed_form(neuron, method):
    """r = 1, M(u) = (u e_1 + w_hat)/sqrt(2 pi), S(u) = (u w_1 + ||w||)/sqrt(2 pi) (1e-12 relative)."""
    w_par, s = neuron
    M_par, m_perp, S = mt.conditional_moments(w_par, s, method)
    nw = math.hypot(w_par[0], s)
    u = np.array([-1.0, 1.0])
    np.testing.assert_allclose(M_par[0, :, 0], (u + w_par[0] / nw) * PHI0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(m_perp[0], s / nw * PHI0, rtol=1e-12)
    np.testing.assert_allclose(S[0], (u * w_par[0] + nw) * PHI0, rtol=0, atol=1e-12 * nw)


# ---- A(w) -----------------------------------------------------------------------------------------------------

@settings(max_examples=30)
@given(neurons(1, 4, norm_max=5.0, s_range=(0.05, 20.0)), st.integers(1, 4), st.floats(1e-3, 1e3))
def test_A_symmetric_psd_low_rank_scale_free(neuron, extra, c):
    """A(w) symmetric PSD, rank <= r + 1 in d coordinates, A(cw) = A(w), A(w) w = E_u[S(u) M(u)]."""
    w_par, s = neuron
    r = len(w_par)
    w = np.concatenate([w_par, np.full(extra, s / math.sqrt(extra))])
    A = mt.A_matrix(w, r, reduced=False)
    ev = np.linalg.eigvalsh(A)
    assert np.array_equal(A, A.T) or np.abs(A - A.T).max() <= 1e-15
    assert ev.min() >= -1e-14 and np.all(ev[:max(0, len(w) - r - 1)] <= 1e-14)
    np.testing.assert_allclose(mt.A_matrix(c * w, r, reduced=False), A, rtol=1e-9, atol=1e-13)
    M, S = full_M(w, r)
    np.testing.assert_allclose(A @ w, S @ M / len(S), rtol=1e-12, atol=1e-14 * np.linalg.norm(w))
    E = np.vstack([np.eye(len(w))[:r], w[None, :] * np.r_[np.zeros(r), np.ones(extra)] / s])
    np.testing.assert_allclose(mt.A_matrix(w, r), E @ A @ E.T, atol=1e-14)


@settings(max_examples=20)
@given(neurons(1, 1), st.integers(1, 6))
def test_A_r1_closed_form(neuron, extra):
    """docs/multitask.md: r = 1, A(w) = (e_1 e_1^T + w_hat w_hat^T)/(2 pi) for every d (1e-12)."""
    w_par, s = neuron
    w = np.concatenate([w_par, np.full(extra, s / math.sqrt(extra))])
    wh = w / np.linalg.norm(w)
    np.testing.assert_allclose(mt.A_matrix(w, 1, reduced=False), (np.outer(np.eye(len(w))[0], np.eye(len(w))[0])
                                                                  + np.outer(wh, wh)) / TWO_PI, rtol=0, atol=1e-12)


def test_A_matches_monte_carlo_of_pairs():
    """Spec C4: A(w) = E_u E[relu'(w.x) relu'(w.x') x x'^T | sign x_par = sign x'_par = u] with x, x' conditionally
    independent given the shared pattern u (uniform); r = 3, d = 8, n = 4e5 pairs, |z| <= 5 on all 64 entries
    (measured max |z| 2.3, max abs error 2.1e-3; eps = 1.6)."""
    r, d = 3, 8
    w = np.random.default_rng(8).standard_normal(d) * np.r_[np.full(r, 1.0), np.full(d - r, 0.6)]
    U = mt.sign_patterns(r)

    def sample(rng, k):
        u = U[rng.integers(0, len(U), k)]
        x, xp = rng.standard_normal((2, k, d))
        x[:, :r], xp[:, :r] = np.abs(x[:, :r]) * u, np.abs(xp[:, :r]) * u
        g = (x @ w > 0)[:, None] * x
        gp = (xp @ w > 0)[:, None] * xp
        return (g[:, :, None] * gp[:, None, :]).reshape(k, -1)

    mean, se = mc_mean(sample, 400_000, seed=9, chunk=50_000)
    assert_z(mean, se, mt.A_matrix(w, r, reduced=False).ravel(), "A")


@pytest.mark.parametrize("r", [1, 2, 4])
def test_A_blocks_leading_corrected_converges_paper_does_not(r):
    """Spec C4b: with w_par fixed and s = 10, 100, 1000 the corrected leading blocks approach the exact A like
    eps^2 (par-par and relative par-perp) and eps^4 (perp-perp), each error dropping >= 80x per decade; the paper's
    A_par_par = I/4 stays 1/4 - 1/(2 pi) = 0.0908 away."""
    w_par = np.random.default_rng(r).standard_normal(r)
    errs = []
    for s in (10.0, 100.0, 1000.0):
        w = np.r_[w_par, s]
        A, L, Lp = mt.A_matrix(w, r), mt.A_blocks_leading(w, r), mt.A_blocks_leading(w, r, corrected=False)
        eps2 = (w_par @ w_par) / s ** 2
        e = [np.linalg.norm(A[:r, :r] - L[:r, :r], 2) / eps2,
             np.linalg.norm(A[:r, r] - L[:r, r]) / np.linalg.norm(L[:r, r]) / eps2,
             abs(A[r, r] - L[r, r]) / eps2 ** 2]
        assert max(e) <= 1.5                                               # measured 0.16-1.17 (par-perp rel.)
        errs.append(np.array(e) * np.array([eps2, eps2, eps2 ** 2]))
        assert abs(np.linalg.norm(A[:r, :r] - Lp[:r, :r], 2) - 0.0908) < 1e-3
    assert np.all(errs[0][:2] / errs[1][:2] >= 80) and np.all(errs[1][:2] / errs[2][:2] >= 80)
    assert errs[0][2] / errs[1][2] >= 8e3                                  # eps^4 (the s = 1000 one is at rounding)
