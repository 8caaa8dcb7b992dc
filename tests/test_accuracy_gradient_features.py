"""Declared accuracy of popdyn.models.gradient_features over Hypothesis searches that reach the corners of the model
(biases 40 sigma out on either side, sigma from 1e-6 to 1e6, means up to 1e4, mixture weights down to 1e-12, d to
1e6, w within 1e-9 of w*, parity to d = 10^4), against independent references: the mixture and linear closed forms
term by term in mpmath at 40 digits from the float inputs, the XOR Bayes error and g* hinge loss by mpmath
quadrature, the multi-index G and A by expanding the polynomial in monomials of (s = <w_hat, x>, z_perp) with
truncated-Gaussian moments (not the Hermite/Stein formula), majority coefficients and uniform-parity G, A by exact
rationals (brute force over the cube for small d), Lemma B.9 by the exact rational recursion; Monte Carlo functions
by the calibration of their standard errors (|z| <= 6)."""
import itertools
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from popdyn.models import gradient_features as GF

from ._accuracy import EPS, examples, hinge_vertices, record

DPS = 40


def _mpf(x):
    return mp.mpf(float(x))


def _dot(u, v):
    return mp.fsum(_mpf(a) * _mpf(b) for a, b in zip(u, v))


# ---- relu_moment -------------------------------------------------------------------------------------------------

@settings(max_examples=examples(60), deadline=None)
@given(st.one_of(st.floats(-37.5, 40), st.floats(-37.5, -2.9), st.floats(-3.01, 0.01), st.just(-37.49)))
@example(-3.0)
@example(-30.0)
@example(-2.9232483336861343)   # was 1.002 of the bound: the erfcx form on [-3, -2] cancels 1 + kappa^2
def test_relu_moment(kappa):
    """relu_moment: relative error <= 5e-15 wherever psi is a normal float (kappa > -37.5), against
    kappa ncdf(kappa) + npdf(kappa) at 40 digits (before: 5.01e-15 at kappa = -2.92)."""
    got = GF.relu_moment(kappa)
    with mp.workdps(DPS):
        k = _mpf(kappa)
        ref = k * mp.ncdf(k) + mp.npdf(k)
    assert got >= 0
    assert record("relu_moment", abs(got - ref) / (5e-15 * ref), kappa=kappa) <= 1


# ---- Gaussian mixtures: G, A, coords ------------------------------------------------------------------------------

@st.composite
def mixtures(draw, r_max=4, d_max=5):
    """(model, W (M, d), b (M,)): r <= 4 components, means 10^[-3, 4] per direction (some parallel, some
    opposite), sigmas 10^[-6, 6], weights down to 1e-12, labels of either sign; each neuron's bias puts one
    component's kappa anywhere in [-40, 40] (the far tails included) or is arbitrary."""
    r, d = draw(st.integers(1, r_max)), draw(st.integers(1, d_max))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    mus = rng.standard_normal((r, d)) * 10.0 ** np.array(draw(st.lists(st.floats(-3, 4), min_size=r, max_size=r)))[
        :, None]
    if r > 1 and draw(st.booleans()):
        mus[1] = -draw(st.sampled_from([1.0, 0.5, 2.0])) * mus[0]
    sig = 10.0 ** np.array(draw(st.lists(st.floats(-6, 6), min_size=r, max_size=r)))
    w = np.array(draw(st.lists(st.floats(1e-12, 1.0), min_size=r, max_size=r)))
    if r > 1 and draw(st.booleans()):
        w[0] = 1e-12
    w = w / w.sum()
    w[-1] = 1.0 - w[:-1].sum()
    assume(np.all(w >= 0))
    lab = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=r, max_size=r)))
    model = GF.GaussianMixture(mus, sig, w, lab)
    M = draw(st.integers(1, 3))
    W = rng.standard_normal((M, d)) * 10.0 ** draw(st.floats(-3, 3))
    b = np.empty(M)
    for i in range(M):
        l = draw(st.integers(0, r - 1))
        kappa = draw(st.one_of(st.floats(-40, 40), st.sampled_from([-37.0, -30.0, -8.0, 0.0, 8.0])))
        b[i] = W[i] @ mus[l] - kappa * sig[l] * np.linalg.norm(W[i]) if draw(st.booleans()) else \
            draw(st.floats(-1e4, 1e4))
    return model, W, b


def _mixture_ref(mus, sig, c, W, b, d_eff):
    """Per neuron: G_ref (mp list), A_ref, the G scale and the A scale of the declared bound. kappa and its
    conditioning K = (|<w, mu>| + |b|) / (sigma ||w||) from the float inputs; the scale sums
    |c_l| (Phi (||mu|| + |b|/||w||) + sigma phi) (1 + (d + 2)(1 + |kappa|)(K + |kappa|))."""
    out = []
    for wi, bi in zip(W, b):
        nw = mp.sqrt(_dot(wi, wi))
        G = [mp.mpf(0)] * len(wi)
        A = sG = sA = mp.mpf(0)
        for mu, s, cl in zip(mus, sig, c):
            proj = _dot(wi, mu)
            s, cl, bb = _mpf(s), _mpf(cl), _mpf(bi)
            k = (proj - bb) / (s * nw)
            Phi, phi = mp.ncdf(k), mp.npdf(k)
            for j in range(len(wi)):
                G[j] += cl * (Phi * _mpf(mu[j]) + s * phi * _mpf(wi[j]) / nw)
            psi = k * Phi + phi
            A += cl * s * nw * psi
            nmu = mp.sqrt(_dot(mu, mu))
            K = (abs(proj) + abs(bb)) / (s * nw) + nmu / s
            cond = 1 + (d_eff + 2) * (1 + abs(k)) * (K + abs(k))
            sG += abs(cl) * (Phi * (nmu + abs(bb) / nw) + s * phi) * cond
            sA += abs(cl) * s * nw * psi * cond
        out.append((G, A, sG, sA))
    return out


@settings(max_examples=examples(40), deadline=None)
@given(mixtures())
def test_mixture_G_A(case):
    """GaussianMixture.simplified_gradient: ||G - G_ref|| <= 4 eps sG + 1e-300 sum|c|(||mu|| + sigma), sG the
    per-component absolute scale times the conditioning of Phi(kappa) under the rounding of kappa
    (see _mixture_ref); A likewise with sA. Never NaN."""
    model, W, b = case
    G = model.simplified_gradient(W, b)
    A = model.A(W, b)
    assert np.all(np.isfinite(G)) and np.all(np.isfinite(A))
    c = model.weights * model.labels
    floor = 1e-300 * float(np.sum(np.abs(c) * (np.linalg.norm(model.mus, axis=1) + model.sigmas)))
    with mp.workdps(DPS):
        for i, (Gr, Ar, sG, sA) in enumerate(_mixture_ref(model.mus, model.sigmas, c, W, b, model.dim)):
            err = mp.sqrt(mp.fsum((_mpf(G[i, j]) - Gr[j]) ** 2 for j in range(model.dim)))
            assert record("GaussianMixture.simplified_gradient", err / (4 * EPS * sG + floor), W=W[i].tolist(),
                          b=b[i]) <= 1
            assert record("GaussianMixture.A", abs(_mpf(A[i]) - Ar) / (4 * EPS * sA + floor * np.linalg.norm(W[i])),
                          W=W[i].tolist(), b=b[i]) <= 1


@settings(max_examples=examples(20), deadline=None)
@given(mixtures(r_max=3, d_max=6), st.floats(-6, 0))
def test_mixture_coords(case, log_rho):
    """GaussianMixture.simplified_gradient_coords: (G_Q, G_perp) against the same reference in the coordinates
    (w = Q g + w_perp, ||w_perp|| = rho), same bound as simplified_gradient."""
    model, W, b = case
    Q, mus_q = model.span_basis
    g = W @ Q
    rho = np.full(len(b), 10.0 ** log_rho) * np.linalg.norm(W, axis=1) if model.dim > Q.shape[1] else np.zeros(len(b))
    GQ, Gp = model.simplified_gradient_coords(g, rho, b)
    c = model.weights * model.labels
    Wc = np.c_[g, rho]
    mus_c = np.c_[mus_q, np.zeros(len(c))]
    floor = 1e-300 * float(np.sum(np.abs(c) * (np.linalg.norm(model.mus, axis=1) + model.sigmas)))
    with mp.workdps(DPS):
        for i, (Gr, _, sG, _) in enumerate(_mixture_ref(mus_c, model.sigmas, c, Wc, b, Q.shape[1] + 1)):
            got = list(GQ[i]) + [Gp[i]]
            err = mp.sqrt(mp.fsum((_mpf(got[j]) - Gr[j]) ** 2 for j in range(len(got))))
            assert record("GaussianMixture.simplified_gradient_coords", err / (4 * EPS * sG + floor)) <= 1


# ---- XOR: Bayes error and the exact g* hinge loss ----------------------------------------------------------------

@settings(max_examples=examples(15), deadline=None)
@given(st.floats(-3, 3), st.floats(-3, 3))
@example(0.0, 0.0)
def test_xor_bayes_error(log_nm, log_s):
    """GaussianMixture.bayes_error (XOR structure): absolute error <= 1e-12, in [0, 1/2], against
    int 2 Q(|nm/s + z|) phi(z) dz by mpmath quadrature split at the kink (30 digits)."""
    nm, s = 10.0 ** log_nm, 10.0 ** log_s
    got = GF.xor_mixture(2, s, mu_norm=nm).bayes_error()
    with mp.workdps(30):
        r = _mpf(nm) / _mpf(s)
        ref = mp.quad(lambda z: 2 * mp.ncdf(-abs(r + z)) * mp.npdf(z), [-mp.inf, -r - 8, -r, -r + 8, 0, mp.inf])
    assert 0 <= got <= 0.5
    assert record("GaussianMixture.bayes_error", abs(got - ref) / 1e-12, nm=nm, s=s) <= 1


@pytest.mark.slow
@settings(max_examples=examples(4), deadline=None)
@given(st.integers(2, 10 ** 6), st.floats(-0.5, 1.0), st.floats(-1, 1))
def test_xor_ground_truth_hinge_loss(d, log_s, log_tau):
    """GaussianMixture.ground_truth_loss (XOR, hinge): absolute error <= 1e-12, against the risk of the network
    from ground_truth() on cluster 1 (u ~ N(||mu||, s^2), v ~ N(0, s^2)) by nested mpmath quadrature (20 digits)."""
    s, tau = 10.0 ** log_s, 10.0 ** log_tau
    gm = GF.xor_mixture(d, s)
    got, se = gm.ground_truth_loss(tau)
    a, Wst, bst = gm.ground_truth(tau)
    nm = math.sqrt(d)
    with mp.workdps(20):
        aa, bb = [_mpf(x) for x in a], [_mpf(x) for x in bst]
        w1 = [_mpf(Wst[j, 0]) for j in range(4)]
        w2 = [_mpf(Wst[j, 1]) for j in range(4)]

        def margin(u, v):
            return mp.fsum(aa[j] * max(w1[j] * u + w2[j] * v - bb[j], 0) for j in range(4))
        c = bb[0] / 2
        S = _mpf(s)

        def inner(v):
            K = 1 + max(abs(v) - 2 * c, 0) / c
            e = 2 * c + c * K
            pts = sorted({-e, -2 * c, 2 * c, e})
            lo, hi = min(pts[0], nm - 12 * S), max(pts[-1], nm + 12 * S)
            return mp.quad(lambda u: max(1 - margin(u, v), 0) * mp.npdf(u, nm, S), [lo] + pts + [hi])
        ref = mp.quad(lambda v: inner(v) * mp.npdf(v, 0, S), [-12 * S, -2 * c, 2 * c, 12 * S]
                      if 2 * c < 12 * S else [-12 * S, 12 * S])
    assert se == 0 and 0 <= got
    assert record("GaussianMixture.ground_truth_loss", abs(got - ref) / 1e-12, d=d, s=s, tau=tau) <= 1


# ---- linear data --------------------------------------------------------------------------------------------------

@st.composite
def linear_cases(draw):
    d = draw(st.integers(2, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    K = draw(st.integers(1, 3))
    sig = 10.0 ** np.array(draw(st.lists(st.floats(-3, 3), min_size=K, max_size=K)))
    model = GF.LinearSeparable(rng.standard_normal(d), sig)
    M = draw(st.integers(1, 3))
    W = rng.standard_normal((M, d))
    par = draw(st.sampled_from([0.0, 1e-9, 1e-4, 1.0]))
    if par:  # nearly parallel to w*
        W = model.w_star * rng.standard_normal((M, 1)) + par * W
    W *= 10.0 ** draw(st.floats(-3, 3))
    b = np.empty(M)
    for i in range(M):
        kappa = draw(st.floats(-40, 40))
        perp = W[i] - (W[i] @ model.w_star) * model.w_star
        b[i] = sig[0] * (W[i] @ model.w_star) - kappa * np.linalg.norm(perp) if draw(st.booleans()) else \
            draw(st.floats(-1e3, 1e3))
    return model, W, b


def _linear_ref(model, wi, bi):
    """G_ref, A_ref and their scales: per atom (y s) |q| (s Phi + phi) (resp. ||w_perp|| psi) times
    1 + (d + 2)(1 + |kappa|)(K + |kappa|), K = (|s alpha| + |b| + ||w||) / ||w_perp|| (the rounding of w_perp)."""
    ws = [_mpf(x) for x in model.w_star]
    w = [_mpf(x) for x in wi]
    al = mp.fsum(a * b for a, b in zip(w, ws))
    perp = [a - al * b for a, b in zip(w, ws)]
    npp = mp.sqrt(mp.fsum(p * p for p in perp))
    nw = mp.sqrt(mp.fsum(p * p for p in w))
    d = len(w)
    G, A, sG, sA = [mp.mpf(0)] * d, mp.mpf(0), mp.mpf(0), mp.mpf(0)
    for s, q in zip(model.signal, model.signal_probs):
        for y in (1, -1):
            s_, q_ = _mpf(s), _mpf(q) / 2
            k = (y * s_ * al - _mpf(bi)) / npp
            Phi, phi = mp.ncdf(k), mp.npdf(k)
            for j in range(d):
                G[j] += q_ * (s_ * Phi * ws[j] + y * phi * perp[j] / npp)
            psi = k * Phi + phi
            A += q_ * y * npp * psi
            K = (abs(s_ * al) + abs(_mpf(bi)) + nw) / npp
            cond = 1 + (d + 2) * (1 + abs(k)) * (K + abs(k))
            sG += q_ * (s_ * Phi + phi) * cond
            sA += q_ * npp * psi * cond
    return G, A, sG, sA


@settings(max_examples=examples(40), deadline=None)
@given(linear_cases())
def test_linear_G_A(case):
    """LinearSeparable.simplified_gradient / A: ||G - G_ref|| <= 4 eps sG + 1e-300 rho and
    |A - A_ref| <= 4 eps sA + 1e-300 ||w|| (see _linear_ref: the scale includes the conditioning of Phi(kappa)
    under the rounding of w_perp = w - <w, w*> w*, ||w|| / ||w_perp||), never NaN."""
    model, W, b = case
    G, A = model.simplified_gradient(W, b), model.A(W, b)
    assert np.all(np.isfinite(G)) and np.all(np.isfinite(A))
    with mp.workdps(DPS):
        for i in range(len(b)):
            Gr, Ar, sG, sA = _linear_ref(model, W[i], b[i])
            err = mp.sqrt(mp.fsum((_mpf(G[i, j]) - Gr[j]) ** 2 for j in range(model.dim)))
            assert record("LinearSeparable.simplified_gradient", err / (4 * EPS * sG + 1e-300 * model.rho),
                          W=W[i].tolist(), b=b[i]) <= 1
            assert record("LinearSeparable.A", abs(_mpf(A[i]) - Ar) / (4 * EPS * sA + 1e-300 * np.linalg.norm(W[i])),
                          W=W[i].tolist(), b=b[i]) <= 1


@settings(max_examples=examples(20), deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=1, max_size=4), st.sampled_from(["hinge", "logistic"]))
def test_linear_ground_truth_loss(log_sig, loss):
    """LinearSeparable.ground_truth_loss: relative error <= 8 eps (+ 1e-300) against E_s l(s/beta) in mpmath."""
    sig = 10.0 ** np.array(log_sig)
    model = GF.LinearSeparable(np.array([1.0, 2.0]), sig)
    got = model.ground_truth_loss(loss)
    with mp.workdps(DPS):
        beta = min(_mpf(s) for s in sig)
        ell = (lambda z: max(0, 1 - z)) if loss == "hinge" else (lambda z: mp.log1p(mp.exp(-z)) / mp.log(2))
        ref = mp.fsum(_mpf(q) * ell(_mpf(s) / beta) for s, q in zip(sig, model.signal_probs))
    assert got >= 0
    assert record("LinearSeparable.ground_truth_loss", abs(got - ref) / (8 * EPS * ref + mp.mpf(1e-300))) <= 1


# ---- uniform parity ------------------------------------------------------------------------------------------------

def _xi_exact(n, j):
    if j % 2 == 0:
        return Fraction(0)
    h, i = (n - 1) // 2, (j - 1) // 2
    return (-1) ** i * Fraction(math.comb(h, i) * math.comb(n - 1, h), math.comb(n - 1, j - 1) * 2 ** (n - 1))


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(0, 5000).map(lambda h: 2 * h + 1), st.data())
@example(10001, None)
def test_majority_coefficient(n, data):
    """majority_coefficient: correctly rounded (<= 1/2 ulp of the exact rational; 0 only below the smallest
    subnormal); log=True: absolute error <= 4 eps max(1, |log xi|)."""
    j = data.draw(st.integers(0, n)) if data is not None else n // 2
    ex = _xi_exact(n, j)
    got = GF.majority_coefficient(n, j)
    if ex == 0:
        assert got == 0 and GF.majority_coefficient(n, j, log=True) == -math.inf
        return
    ulp = math.ulp(float(ex)) if float(ex) != 0 else 5e-324
    assert record("majority_coefficient", float(abs(Fraction(got) - ex) / Fraction(ulp)) / 0.5, n=n, j=j) <= 1
    with mp.workdps(DPS):
        lr = mp.log(mp.mpf(abs(ex.numerator)) / abs(ex.denominator))
    lg = GF.majority_coefficient(n, j, log=True)
    assert record("majority_coefficient (log)", abs(lg - lr) / (4 * EPS * max(1, abs(lr))), n=n, j=j) <= 1


def _parity_brute(d, A, w, b):
    """Exact (G, A) over the cube in rationals."""
    G = [Fraction(0)] * d
    Av = Fraction(0)
    wF = [Fraction(int(x)) for x in w]
    bF = Fraction(b)
    for x in itertools.product((-1, 1), repeat=d):
        y = math.prod(x[a] for a in A)
        pre = sum(wi * xi for wi, xi in zip(wF, x))
        if pre > bF:
            for j in range(d):
                G[j] += y * x[j]
            Av += y * (pre - bF)
    return [g / 2 ** d for g in G], Av / 2 ** d


@settings(max_examples=examples(20), deadline=None)
@given(st.integers(0, 5).map(lambda h: 2 * h + 1), st.data())
def test_uniform_parity_small(d, data):
    """UniformParity.simplified_gradient / A for d <= 11: error <= 1/2 ulp of each exact entry (G) and
    <= 2 eps |A| (A) against brute force over {+-1}^d in rationals, any |b| < 1."""
    k = data.draw(st.integers(1, d))
    up = GF.UniformParity(d, k)
    w = np.array(data.draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=d, max_size=d)))
    b = data.draw(st.floats(-0.999, 0.999))
    G, A = up.simplified_gradient(w, b)[0], up.A(w, b)[0]
    Gr, Ar = _parity_brute(d, list(up.subset), w, b)
    err = max(float(abs(Fraction(g) - r) / Fraction(math.ulp(float(r)) if r else 5e-324)) for g, r in zip(G, Gr))
    assert record("UniformParity.simplified_gradient", err / 0.5, d=d, k=k) <= 1
    errA = abs(Fraction(A) - Ar) / (2 * Fraction(EPS) * abs(Ar) + Fraction(1, 10 ** 300))
    assert record("UniformParity.A", float(errA), d=d, k=k, b=b) <= 1


@settings(max_examples=examples(20), deadline=None)
@given(st.integers(6, 2000).map(lambda h: 2 * h + 1), st.data())
@example(1001, None)
def test_uniform_parity_large(d, data):
    """UniformParity.A for large d: relative error <= 2 eps against the exact rational
    (chi/2)(k xi_{k-1} + (d - k) xi_{k+1} - b xi_k + 1[k = 1]), b a float in (-1, 1)."""
    k = data.draw(st.integers(1, min(d, 400))) if data is not None else 400
    b = data.draw(st.floats(-0.999, 0.999)) if data is not None else 0.3
    up = GF.UniformParity(d, k)
    w = np.ones(d)
    A = up.A(w, b)[0]
    ex = Fraction(1, 2) * (k * _xi_exact(d, k - 1) + ((d - k) * _xi_exact(d, k + 1) if k < d else 0)
                           - Fraction(b) * _xi_exact(d, k) + (1 if k == 1 else 0))
    assert record("UniformParity.A (large d)", float(abs(Fraction(A) - ex) / (2 * Fraction(EPS) * abs(ex)
                                                                             + Fraction(1, 10 ** 320))), d=d, k=k) <= 1


# ---- multi-index polynomial ---------------------------------------------------------------------------------------

def _he_coeffs(k):
    """Coefficients of He_k (probabilists') as exact ints, lowest degree first."""
    a, b = [1], [0, 1]
    if k == 0:
        return a
    for n in range(1, k):
        c = [0] + b
        for i, v in enumerate(a):
            c[i] -= n * v
        a, b = b, c
    return b


def _poly_mul(p, q):
    out = {}
    for e1, c1 in p.items():
        for e2, c2 in q.items():
            e = tuple(x + y for x, y in zip(e1, e2))
            out[e] = out.get(e, 0) + c1 * c2
    return out


def _multi_index_ref(model, wi, bi, pad=False):
    """G and A by monomials: basis e_0 = w_hat, e_1.. orthonormal completing span(U, w_hat) (Gram-Schmidt in
    mpmath), y = sum c_hat prod h_alpha(<u_j, x>) expanded in (s, z_1..), E[s^a 1[s > t]] by the exact recursion
    M_a = t^(a-1) phi(t) + (a - 1) M_(a-2), E[z^m] = (m - 1)!!; scales with |coefficients|."""
    U = [[_mpf(x) for x in row] for row in model.U]
    w = [_mpf(x) for x in wi]
    nw = mp.sqrt(mp.fsum(x * x for x in w))
    basis = [[x / nw for x in w]]
    for u in U:
        v = list(u)
        for _ in range(2):
            for e in basis:
                pr = mp.fsum(a * b for a, b in zip(v, e))
                v = [a - pr * b for a, b in zip(v, e)]
        nv = mp.sqrt(mp.fsum(x * x for x in v))
        if nv > mp.mpf(10) ** -25:
            basis.append([x / nv for x in v])
    nb = len(basis)
    t = _mpf(bi) / nw
    D = model.degree + 2
    Ms = [mp.ncdf(-t), mp.npdf(t)]
    for a in range(2, D + 2):
        Ms.append(t ** (a - 1) * mp.npdf(t) + (a - 1) * Ms[a - 2])
    zm = lambda m: 0 if m % 2 else mp.fac2(m - 1) if m else 1  # noqa: E731
    lin = [{tuple(int(i == m) for i in range(nb)): mp.fsum(a * b for a, b in zip(u, basis[m])) for m in range(nb)}
           for u in U]
    if pad:   # the scale: |coefficients| and v_j's coefficients |u.e_m| + 1 (the rounding of v = U w_hat, d eps)
        lin = [{e: abs(v) + 1 for e, v in f.items()} for f in lin]
    poly = {}
    for alpha, ch, act in zip(model.alphas, model.coefs, model._active):
        if not act:
            continue
        term = {(0,) * nb: _mpf(ch) / mp.sqrt(mp.fprod(mp.factorial(int(a)) for a in alpha))}
        if pad:
            term = {k_: abs(v_) for k_, v_ in term.items()}
        for j, a in enumerate(alpha):
            he = {}
            pw = {(0,) * nb: mp.mpf(1)}
            for deg, cf in enumerate(_he_coeffs(int(a))):
                cf = abs(cf) if pad else cf
                if cf:
                    for e, v in pw.items():
                        he[e] = he.get(e, 0) + cf * v
                pw = _poly_mul(pw, lin[j])
            term = _poly_mul(term, he)
        for e, v in term.items():
            poly[e] = poly.get(e, 0) + v
    Gc, sG = [mp.mpf(0)] * nb, [mp.mpf(0)] * nb
    A = sA = mp.mpf(0)
    for e, v in poly.items():
        rest = mp.fprod(zm(m) for m in e[1:])
        for m in range(nb):
            ee = list(e)
            ee[m] += 1
            r2 = mp.fprod(zm(x) for x in ee[1:])
            Gc[m] += v * Ms[ee[0]] * r2
            sG[m] += abs(v * Ms[ee[0]] * r2)
        A += v * rest * (Ms[e[0] + 1] - t * Ms[e[0]])
        sA += abs(v * rest) * (abs(Ms[e[0] + 1]) + abs(t * Ms[e[0]]))
    G = [mp.fsum(Gc[m] * basis[m][j] for m in range(nb)) for j in range(len(w))]
    return G, A * nw, mp.sqrt(mp.fsum(x * x for x in sG)), sA * nw


@st.composite
def multi_index_cases(draw):
    r = draw(st.integers(1, 2))
    d = draw(st.integers(r, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    U = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    n_terms = draw(st.integers(1, 4))
    terms = {}
    for _ in range(n_terms):
        alpha = tuple(draw(st.lists(st.integers(0, 4), min_size=r, max_size=r)))
        terms[alpha] = draw(st.floats(-2, 2).filter(lambda v: abs(v) > 1e-3))
    model = GF.MultiIndexPolynomial(U, terms, preprocess=draw(st.booleans()))
    M = draw(st.integers(1, 2))
    W = rng.standard_normal((M, d)) * 10.0 ** draw(st.floats(-3, 3))
    par = draw(st.sampled_from([0.0, 1e-8, 1.0]))
    if par:
        W = W * par + U[0]
    t = np.array([draw(st.one_of(st.floats(-40, 40), st.just(0.0))) for _ in range(M)])
    return model, W, t * np.linalg.norm(W, axis=1)


@settings(max_examples=examples(25), deadline=None)
@given(multi_index_cases())
@example((GF.MultiIndexPolynomial(np.eye(2), {(0, 1): 1.0}), np.array([[-0.19264634, -0.98126825]]), np.zeros(1)))
def test_multi_index_G_A(case):
    """MultiIndexPolynomial.simplified_gradient / A: ||G - G_ref|| <= 8 (D + 2)^2 eps (1 + t^2) d sG and
    |A - A_ref| <= 8 (D + 2)^2 eps (1 + t^2) d sA (+ 1e-300), t = b/||w||, D the degree, sG and sA the sums of the
    monomial terms' absolute values with |v_j| + 1 for each v_j = <u_j, w_hat> (the conditioning of the sum and of
    v under its d eps rounding; t^2 that of phi(t) under the rounding of t). Before the padding (a test defect,
    not the code's): 2.8e7 where <u_2, w_hat> = 3e-9 is known to d eps only."""
    model, W, b = case
    G, A = model.simplified_gradient(W, b), model.A(W, b)
    assert np.all(np.isfinite(G)) and np.all(np.isfinite(A))
    Dg = model.degree
    with mp.workdps(DPS):
        for i in range(len(b)):
            Gr, Ar, _, _ = _multi_index_ref(model, W[i], b[i])
            _, _, sG, sA = _multi_index_ref(model, W[i], b[i], pad=True)
            sG, sA = sG * model.dim, sA * model.dim
            t = b[i] / np.linalg.norm(W[i])
            k = 8 * (Dg + 2) ** 2 * EPS * (1 + t * t)
            err = mp.sqrt(mp.fsum((_mpf(G[i, j]) - Gr[j]) ** 2 for j in range(model.dim)))
            assert record("MultiIndexPolynomial.simplified_gradient", err / (k * sG + mp.mpf(1e-300)), t=t) <= 1
            assert record("MultiIndexPolynomial.A", abs(_mpf(A[i]) - Ar) / (k * sA + mp.mpf(1e-300)), t=t) <= 1


# ---- bounds --------------------------------------------------------------------------------------------------------

def _b9_exact(T, a1, Z, eta, Bx1):
    """h(1..T) of B.72 by the exact rational recursion."""
    a1, Z, eta, Bx1 = (Fraction(x) for x in (a1, Z, eta, Bx1))
    rho2 = (eta * Bx1) ** 2
    h = [None, a1, 2 * a1 + eta * Z]
    for t in range(3, T + 1):
        h.append(2 * h[t - 1] - (1 - rho2) * h[t - 2] + eta * Z)
    return h


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(2, 120), st.floats(-12, -0.05), st.floats(-3, 3), st.floats(-3, 3), st.floats(-3, 3))
def test_lemma_B9(T, log_rho, log_a1, log_Z, log_Bx1):
    """lemma_B9_h / lemma_B9_bounds: relative error <= 64 eps against the exact rational recursion (any
    eta Bx1 from 1e-12 to 0.9, t up to 120)."""
    Bx1 = 10.0 ** log_Bx1
    eta = 10.0 ** log_rho / Bx1
    assume(eta * Bx1 < 1)
    a1, Z = 10.0 ** log_a1, 10.0 ** log_Z
    h = _b9_exact(T, a1, Z, eta, Bx1)
    got = GF.lemma_B9_h(np.arange(1, T + 1), a1, Z, eta, Bx1)
    rel = max(float(abs(Fraction(g) - h[t]) / h[t]) for t, g in zip(range(1, T + 1), got))
    assert record("lemma_B9_h", rel / (64 * EPS), T=T, rho=eta * Bx1) <= 1
    w1 = 10.0 ** log_Z
    bt = 1.0
    Zb = Fraction(Bx1) * Fraction(w1) + 1
    hb = _b9_exact(T, a1, Zb, eta, Bx1) if Zb == Fraction(float(Zb)) else None
    if hb is not None:
        ab, ws = GF.lemma_B9_bounds(np.array([T]), a1, w1, bt, eta, Bx1)
        ra = float(abs(Fraction(ab[0]) - (hb[T] - hb[T - 1])) / (hb[T] - hb[T - 1]))
        rw = float(abs(Fraction(ws[0]) - Fraction(eta) * Fraction(Bx1) * hb[T - 1]) / (Fraction(eta) * Fraction(Bx1)
                                                                                        * hb[T - 1]))
        assert record("lemma_B9_bounds", max(ra, rw) / (64 * EPS), T=T, rho=eta * Bx1) <= 1


@settings(max_examples=examples(40), deadline=None)
@given(st.one_of(st.floats(1e-300, 40), st.floats(20, 41.3), st.floats(1e-8, 1e-2)))
@example(30.0)
@example(37.0)   # tail_expectation_bound was 57 times the bound (ndtr(-z) loses z^2 eps)
@example(39.15002500999663)    # tail_expectation_bound was 0 (Q underflows, Q^0.9 = 1e-301 does not)
@example(26.149399999450367)   # mills_bounds was 13.4 times the bound (exp(-z^2/2) with z^2 rounded)
def test_mills_and_tail_bounds(z):
    """mills_bounds: relative error <= 8 eps where the bounds are normal floats (z <= 37.5); absolute <= 2^-1074
    beyond. tail_expectation_bound: relative <= 8 eps (value) for z <= 37, z^2 eps to z = 41.3 (logs), absolute
    <= 8 eps max(1, |log|) (log=True),
    for any real z (both signs)."""
    lo, hi = GF.mills_bounds(z)
    with mp.workdps(DPS):
        Z = _mpf(z)
        phi = mp.npdf(Z)
        rl, rh = phi * Z / (Z * Z + 1), phi / Z
        for got, ref in ((lo, rl), (hi, rh)):
            bound = 8 * EPS * ref + mp.mpf(2) ** -1074
            assert record("mills_bounds", abs(_mpf(got) - ref) / bound, z=z) <= 1
        for zz in (z, -z):
            Zz = _mpf(zz)
            ref = 2 * mp.ncdf(-Zz) ** mp.mpf(0.9)
            got = GF.tail_expectation_bound(zz)
            rel = 8 * EPS if zz <= 37 else zz * zz * EPS
            assert record("tail_expectation_bound", abs(_mpf(got) - ref) / (rel * ref + mp.mpf(2) ** -1074),
                          z=zz) <= 1
            lr = mp.log(2) + mp.mpf(0.9) * mp.log(mp.ncdf(-Zz))
            lg = GF.tail_expectation_bound(zz, log=True)
            assert record("tail_expectation_bound (log)", abs(_mpf(lg) - lr) / (8 * EPS * max(1, abs(lr))), z=zz) <= 1


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(2, 10 ** 9), st.floats(0, 1e6), st.integers(1, 10 ** 9))
def test_max_gaussian_and_chi2_tail_bounds(n, z, k):
    """max_gaussian_tail_bound, chi2_tail_bound: relative error <= 8 eps for thresholds and bounds (e^-z to
    2^-1074 absolute)."""
    t, bnd = GF.max_gaussian_tail_bound(n, z)
    t2, bnd2 = GF.chi2_tail_bound(k, z)
    with mp.workdps(DPS):
        Z = _mpf(z)
        s = mp.sqrt(2 * mp.log(n))
        tiny = mp.mpf(2) ** -1074
        assert record("max_gaussian_tail_bound", abs(_mpf(t) - (s + Z / s)) / (8 * EPS * (s + Z / s))) <= 1
        for got in (bnd, bnd2):
            assert record("max_gaussian_tail_bound", abs(_mpf(got) - mp.exp(-Z)) / (8 * EPS * mp.exp(-Z) + tiny)) <= 1
        ref = k + 2 * mp.sqrt(k * Z) + 2 * Z
        assert record("chi2_tail_bound", abs(_mpf(t2) - ref) / (8 * EPS * ref)) <= 1


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(2, 10 ** 9), st.integers(1, 10 ** 9), st.lists(st.floats(-6, 6), min_size=6, max_size=6),
       st.sampled_from(["hinge", "logistic"]))
def test_lemma_B8_bounds(m, d, logs, loss):
    """lemma_B8_bounds: every size relative error <= 8 eps (the printed products, in mpmath), probability
    1 - delta - 1/m^2 absolute <= eps."""
    import warnings
    sw, bt, e1, BG, Be, Bx1 = (10.0 ** v for v in logs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = GF.lemma_B8_bounds(m, d, sw, bt, e1, BG, Be, Bx1, loss=loss)
    with mp.workdps(DPS):
        lp = mp.mpf(1) if loss == "hinge" else 1 / (2 * mp.log(2))
        S = [_mpf(v) for v in (sw, bt, e1, BG, Be, Bx1)]
        sw_, bt_, e1_, BG_, Be_, Bx_ = S
        lm = mp.sqrt(mp.log(m))
        sa = bt_ / (lp * e1_ * BG_ * Be_)
        refs = dict(a0_inf=sa * lm, w0_norm=sw_ * mp.sqrt(d), a1_inf=e1_ * lp * (Bx_ * sw_ * mp.sqrt(d) + bt_),
                    w1_norm=bt_ * lm * Bx_ / (BG_ * Be_), sigma_a=sa)
        for key, ref in refs.items():
            assert record("lemma_B8_bounds", abs(_mpf(out[key]) - ref) / (8 * EPS * ref), which=key) <= 1
        assert abs(_mpf(out["probability"]) - (1 - mp.mpf(1) / m ** 2)) <= EPS


# ---- Monte Carlo: calibration --------------------------------------------------------------------------------------

Z_MAX = 6.0


@settings(max_examples=examples(6), deadline=None)
@given(st.integers(0, 2 ** 31), st.floats(-1, 1), st.sampled_from([1.0, 3.0]))
def test_mc_calibration_mixture(seed, kappa, sigma_B):
    """simplified_gradient_mc, A_mc: |estimate - closed form| <= 6 se per coordinate (the closed forms are
    exact to 1e-13 above); network_loss_mc / population_loss: |estimate - exact XOR g* hinge loss| <= 6 se."""
    d = 4
    gm = GF.xor_mixture(d, sigma_B)
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((3, d))
    b = kappa * np.linalg.norm(W, axis=1)
    G, se = gm.simplified_gradient_mc(W, b, 20_000, seed)
    Gr = gm.simplified_gradient(W, b)
    z = np.abs(G - Gr) / np.where(se > 0, se, np.inf)
    assert np.all(np.where(se > 0, True, G == Gr))
    assert record("DataModel.simplified_gradient_mc (z / 6)", float(z.max()) / Z_MAX) <= 1
    A, sa = gm.A_mc(W, b, 20_000, seed)
    assert record("DataModel.A_mc (z / 6)", float(np.max(np.abs(A - gm.A(W, b)) / sa)) / Z_MAX) <= 1
    a, Ws, bs = gm.ground_truth(1.0)
    ex = gm.ground_truth_loss(1.0)[0]
    for fn in (lambda: gm.network_loss_mc(a, Ws, bs, "hinge", 20_000, seed),
               lambda: GF.population_loss(gm, a, Ws, bs, "hinge", 20_000, seed)):
        v, s = fn()
        assert 0 <= v and s >= 0
        assert record("DataModel.network_loss_mc / population_loss (z / 6)", abs(v - ex) / s / Z_MAX) <= 1


@settings(max_examples=examples(6), deadline=None)
@given(st.integers(0, 2 ** 31), st.sampled_from([3, 5, 7]), st.integers(1, 3), st.floats(0.01, 0.9))
def test_feature_probability_calibration(seed, d, k, gamma):
    """feature_probability (law="sign", uniform parity): p_hat within 6 binomial SE of the exact p (enumeration
    of the 2^d sign vectors), p_hat and the Clopper-Pearson interval in [0, 1], p_hat inside it."""
    k = min(k, d)
    up = GF.UniformParity(d, k)
    D = np.zeros(d)
    D[list(up.subset)] = 1 / math.sqrt(k)
    Wall = np.array(list(itertools.product((-1.0, 1.0), repeat=d)))
    G = up.simplified_gradient(Wall, np.full(len(Wall), 0.5))
    nG = np.linalg.norm(G, axis=1)
    p = float(np.mean(GF.cone_membership(G, D, gamma) & (nG >= 0.0)))
    n = 4000
    ph, (lo, hi) = GF.feature_probability(up, D, 1, gamma, 0.0, 0.5, n_mc=n, rng=seed, law="sign")
    assert 0 <= lo <= ph <= hi <= 1
    se = math.sqrt(max(p * (1 - p), 1e-12) / n)
    assert record("feature_probability (z / 6)", abs(ph - p) / se / Z_MAX, d=d, k=k) <= 1


# ---- closed-form bounds of the framework (mpmath at 40 digits from the float inputs) -----------------------------

def _rel(got, ref):
    ref = mp.mpf(ref)
    return float(abs(_mpf(got) - ref) / abs(ref)) if ref != 0 else float(abs(got))


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.floats(-6, 6), min_size=8, max_size=8), st.integers(1, 10 ** 9), st.integers(1, 50),
       st.floats(-12, 0), st.floats(-12, -1e-9), st.floats(0, 12), st.sampled_from(["hinge", "logistic"]))
def test_network_and_training_bounds(logs, m, r, log_p, log_g, log_n, loss):
    """good_network_bound, good_network_scales, average_loss_bound, rademacher_bound, theorem_B2_bound,
    gradient_concentration, oco_bound, lemma_B10_bounds, main_theorem (m_min, T, eta, eta1, sigma_a, b_tilde,
    n_min, error bounds): relative error <= 64 eps (sums of positive products and their roots), every scale in
    1e-6..1e6, p and gamma to 1e-12, m to 1e9, n to 1e12."""
    import warnings
    B_G, B_a1, B_a2, B_b, Bx, Bx1, Bx2, bt = (10.0 ** v for v in logs)
    p, gamma, n = 10.0 ** log_p, 10.0 ** log_g, 10.0 ** log_n
    eta, T = 10.0 ** (-logs[0]), 10.0 ** (3 + logs[1] / 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gnb = GF.good_network_bound(p, gamma, B_G, r, B_a1, B_b, Bx1, m, n=n, Bx2=Bx2, loss=loss)
        gns = GF.good_network_scales(p, B_G, B_b, Bx1, m, r, B_a1, B_a2, bt)
        alb = GF.average_loss_bound(p, gamma, B_G, r, B_a1, B_a2, B_b, Bx1, m, eta, T, bt, n=n, Bx=Bx, Bx2=Bx2,
                                    loss=loss)
        mt = GF.main_theorem(p, gamma, B_G, r, B_a1, B_a2, B_b, Bx, Bx1, Bx2, 0.1, 0.05, m=m, n=n, d=1000,
                             loss=loss)
    rng = np.random.default_rng(m)
    W, b = rng.standard_normal((3, 4)) * Bx, rng.standard_normal(3) * B_b
    errs = []
    with mp.workdps(DPS):
        P, G_, Ba1, Ba2, Bb, X, X1, X2, BT, N, M = (_mpf(v) for v in (p, B_G, B_a1, B_a2, B_b, Bx, Bx1, Bx2, bt,
                                                                      n, m))
        lp = mp.mpf(1) if loss == "hinge" else 1 / (2 * mp.log(2))
        sq = mp.sqrt(M * P)
        sn = mp.sqrt(X2) / (G_ * lp * mp.cbrt(N))
        Be = X1 * mp.sqrt(2 * Bb / (G_ * sq))
        errs.append(_rel(gnb, r * Ba1 * (2 * X1 ** 2 * Bb / (sq * G_ * Be) + X1 * mp.sqrt(2 * _mpf(gamma) + sn)
                                          + Be)))
        Be = X1 * mp.sqrt(Bb / G_) / mp.sqrt(sq)
        for key, ref in dict(B_eps=Be, eps_a=X1 * Bb / (sq * G_ * Be), l0=r * sq, l2=Ba2 * Bb / (BT * mp.sqrt(sq)),
                             linf=Ba1 * Bb / (BT * sq)).items():
            errs.append(_rel(gns[key], ref))
        E_, T_, mp4 = _mpf(eta), _mpf(T), mp.root(M * P, 4)
        w = BT * mp.sqrt(mp.log(M)) * mp4 / mp.sqrt(Bb * G_)
        wT = w + T_ * E_ ** 2 * X1 * BT
        refs = dict(sample=((r * Ba1 * Bb / BT + M * (w + BT / X1)) * (wT * X + BT) + 1 + M * E_ * wT * mp.sqrt(X2))
                    / mp.cbrt(N),
                    approximation=r * Ba1 * (2 * mp.sqrt(2) * X1 * mp.sqrt(Bb / G_) / mp4
                                             + X1 * mp.sqrt(2 * _mpf(gamma) + sn)),
                    drift=E_ * (mp.sqrt(r) * Ba2 * Bb * T_ * E_ * X1 ** 2 + M * BT)
                    * (mp.sqrt(mp.log(M)) * X1 * mp4 / mp.sqrt(Bb * G_) + 1),
                    init=Ba2 ** 2 * Bb ** 2 / (E_ * T_ * BT ** 2 * mp4 ** 2))
        for key, ref in refs.items():
            if ref != 0:
                errs.append(_rel(alb[key], ref))
        errs.append(_rel(alb["bound"], mp.fsum(refs.values())))
        # main theorem at eps = 0.1, delta = 0.05, d = 1000, the constants 1
        ep, de = _mpf(0.1), _mpf(0.05)
        mmin = (r * Ba1 * X1 * mp.sqrt(Bb / G_)) ** 4 / (P * ep ** 4) + 1 / mp.sqrt(de) + mp.log(r / de) ** 2 / P
        btl = mp.root(G_, 4) * Ba2 * Bb ** mp.mpf(0.75) / (mp.sqrt(r) * Ba1)
        et = ep / ((mp.sqrt(r) * Ba2 * Bb * X1 / mp4 + M * btl) * (mp.sqrt(mp.log(M)) * X1 * mp4 / mp.sqrt(Bb * G_)
                                                                   + 1))
        TT = 1 / (et * X1 * mp4)
        e1 = et * min(1, btl) / (lp * (X1 * mp.sqrt(1000) + btl))
        sa_e1 = btl * mp4 / (lp * X1 * mp.sqrt(G_ * Bb))
        first = M * X * Ba2 ** 2 * mp.sqrt(Bb) * mp.sqrt(M * P) * mp.log(M) / (ep * r * Ba1 * mp.sqrt(G_))
        second = X / mp.sqrt(X2) + mp.log(TT * M / (P * de)) + (1 + 1 / G_) * mp.sqrt(X2) / lp
        for key, ref in dict(m_min=mmin, b_tilde=btl, eta=et, T=TT, eta1=e1, sigma_a=sa_e1 / e1,
                             sigma_a_eta1=sa_e1, n_min=first ** 3 + second ** 3,
                             error_bound=r * Ba1 * X1 * mp.sqrt(2 * _mpf(gamma) + sn) + ep,
                             error_bound_population=r * Ba1 * X1 * mp.sqrt(2 * _mpf(gamma)) + ep).items():
            if mp.mpf(2) ** -1000 < abs(ref) < mp.mpf(2) ** 1000:
                errs.append(_rel(mt[key], ref))
        # frozen layer, concentration, OCO, Lemma B.10
        wf = mp.sqrt(mp.fsum(_mpf(v) ** 2 for v in W.ravel()))
        bn = mp.sqrt(mp.fsum(_mpf(v) ** 2 for v in b))
        n_int = int(min(n, 10 ** 12))
        errs.append(_rel(GF.rademacher_bound(B_a2, W, b, Bx, n_int), Ba2 * (wf * X + bn) / mp.sqrt(n_int)))
        errs.append(_rel(GF.rademacher_bound(B_a2, W, b, Bx, n_int, convention="paper"),
                         mp.sqrt(Ba2 ** 2 * (wf ** 2 * X ** 2 + bn ** 2) / n_int)))
        errs.append(_rel(GF.theorem_B2_bound(B_G, B_a1, B_a2, T, W, b, Bx, n_int, OPT_frozen=gamma),
                         _mpf(gamma) + G_ * (Ba1 ** 2 + Ba2 ** 2) / T_ + Ba2 * (wf * X + bn) / mp.sqrt(n_int)))
        gc = GF.gradient_concentration(n, Bx, Bx2, delta=0.05)
        errs += [_rel(gc["paper"], mp.sqrt(X2) / mp.cbrt(N)), _rel(gc["n_min_paper"], (X / mp.sqrt(X2)) ** 3),
                 _rel(gc["bernstein"], mp.sqrt(8 * X2 * (mp.log(20) + mp.mpf(0.25)) / N))]
        f = rng.random(5) * Bx
        g = rng.random(5) * B_G
        errs.append(_rel(GF.oco_bound(f, B_a1, B_a2, g, eta),
                         mp.fsum(_mpf(v) for v in f) / 5 + Ba1 ** 2 / (2 * E_ * 5)
                         + Ba2 * mp.fsum(_mpf(v) for v in g) / 5 + E_ * mp.fsum(_mpf(v) ** 2 for v in g) / 5))
        Wt = W + rng.standard_normal(W.shape) * B_b
        a_t = rng.standard_normal(3) * B_a1
        out = GF.lemma_B10_bounds(a_t, Wt, W, b, Bx1, loss=loss)
        lip = mp.mpf(1) if loss == "hinge" else 1 / mp.log(2)
        dr = [mp.sqrt(mp.fsum((_mpf(Wt[i, j]) - _mpf(W[i, j])) ** 2 for j in range(4))) for i in range(3)]
        errs.append(_rel(out["loss_gap"], lip * X1 * mp.sqrt(mp.fsum(_mpf(v) ** 2 for v in a_t)) * mp.sqrt(3)
                         * max(dr)))
        for i in range(3):
            errs.append(_rel(out["grad_a"][i], lip * (X1 * (dr[i] + mp.sqrt(mp.fsum(_mpf(v) ** 2 for v in W[i])))
                                                      + abs(_mpf(b[i])))))
    assert record("gradient_features closed-form bounds", max(errs) / (64 * EPS), m=m, r=r, p=p) <= 1


@settings(max_examples=examples(25), deadline=None)
@given(st.integers(1, 10 ** 5).map(lambda h: 2 * h + 1), st.data())
@example(2 * 10 ** 5 + 1, None)   # log C(d, k - 1) from lgamma differences lost d log d eps (n_min 1e-11 off)
def test_uniform_parity_requirements(d, data):
    """uniform_parity_requirements: eta1, tau_g, m_min, d_min, n_min, eta, T relative error <= 1e-12 where normal
    (inf where the value passes float64; eta1 from log xi where xi is subnormal), d to 2e5 (the exact majority
    coefficient costs O(d) bits beyond), k to 1100, eps to 1e-12; against mpmath at 40 digits with the exact
    binomials. Before: n_min 6e-11 off at d = 1e6, OverflowError or ZeroDivisionError for k ~ 300-1100."""
    import warnings
    k = 2 * data.draw(st.integers(1, min((d - 1) // 2, 550))) if data is not None else 2
    ep = 10.0 ** data.draw(st.floats(-12, math.log10(0.49))) if data is not None else 0.1
    if k >= 990:   # m_min may pass float64: the width is then required
        m = data.draw(st.integers(1, 10 ** 300))
    else:
        m = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = GF.uniform_parity_requirements(d, k, ep, m=m)
    m = out["m"]
    with mp.workdps(DPS):
        K, Dd, e = mp.mpf(k), mp.mpf(d), _mpf(ep)
        h, i = (d - 1) // 2, (k - 2) // 2
        lxi = mp.log(mp.binomial(h, i)) + mp.log(mp.binomial(d - 1, h)) - mp.log(mp.binomial(d - 1, k - 2)) \
            - (d - 1) * mp.log(2)
        xi = mp.exp(lxi)
        first = mp.binomial(d, k - 1) * K ** (mp.mpf(7) / 6) * Dd * mp.log(K * Dd / e) * mp.log(Dd * m / e)
        refs = dict(eta1=1 / (K * xi), tau_g=xi / (16 * K * mp.sqrt(2 * Dd * mp.log(32 * K ** 3 * Dd / e))),
                    m_min=K * mp.mpf(2) ** k * mp.log(K / e), d_min=K ** 4 * mp.log(K * Dd / e),
                    n_min=first + K ** 3 * m * Dd ** 2 / e ** 2, eta=1 / (Dd ** 2 * m), T=K ** 3 * m * Dd ** 2 / e)
        for key, ref in refs.items():
            if ref > mp.mpf(2) ** 1024 * (1 - mp.mpf(2) ** -54):
                assert out[key] == math.inf, key
            elif ref >= mp.mpf(2) ** -1022:
                assert record("uniform_parity_requirements", _rel(out[key], ref) / 1e-12, d=d, k=k, which=key) <= 1
            else:
                assert abs(out[key] - ref) <= mp.mpf(2) ** -1074


# ---- structured parity (exact enumeration of the law in rationals; mpmath for g*) --------------------------------

def _sp_support_exact(sp):
    """Every (phi, Pr(phi), y) of the structured parity in exact rationals, enumerated component by component."""
    r, k, d, rk = sp.r, sp.k, sp.d, sp.r * sp.k
    pA, po = Fraction(float(sp.p_A)), Fraction(float(sp.p_o))
    w0 = Fraction(float(sp._weights()[0]))   # the model's uniform weight: 1 - 2 r p_A rounded, 0 at p_A = 1/(2r)
    comps = [(w0, list(z), Fraction(1, 2 ** rk)) for z in itertools.product((-1, 1), repeat=rk)]
    for j in range(r):
        for sg in (1, -1):
            z = [0] * rk
            z[j * k:(j + 1) * k] = [sg] * k
            comps.append((pA, z, Fraction(1)))
    noise = [(v, po if v else 1 - 2 * po) for v in (-1, 0, 1)]
    out = []
    for w, z, q in comps:
        if w * q == 0:
            continue
        y = int(np.sign(sum(math.prod(z[j * k:(j + 1) * k]) for j in range(r))))
        for cfg in itertools.product(noise, repeat=d - rk):
            pr = w * q * math.prod(p for _, p in cfg)
            if pr:
                out.append((z + [v for v, _ in cfg], pr, y))
    return out


@st.composite
def structured_parities(draw):
    r = draw(st.sampled_from([1, 3]))
    k = draw(st.sampled_from([1, 3])) if r == 3 else draw(st.sampled_from([1, 3, 5]))
    d = r * k + draw(st.integers(0, 3 if r * k <= 5 else 1))
    pA = draw(st.sampled_from([0.0, 1e-12, 0.1, 1.0 / (2 * r)]))
    po = draw(st.sampled_from([0.0, 1e-12, 0.2, 0.5]))
    return GF.StructuredParity(d, r, k, pA, po)


@settings(max_examples=examples(20), deadline=None)
@given(structured_parities(), st.data())
def test_structured_parity_exact(sp, data):
    """StructuredParity.simplified_gradient: |G_l - exact| <= N eps E|x_l| (N support points); A: <= (N + d + 2)
    eps E[|<w, x>| + |b|]; E_yx relative <= 4 eps (0 exact); bounds() Bx, Bx1, Bx2 relative <= 1e-13;
    ground_truth_loss: logistic relative <= 1e-13, hinge (exactly 0) absolute <= 64 (k + 1) eps; against the
    enumeration of the law in exact rationals (mpmath for the roots), neurons away from their kinks (1e-9)."""
    sup = _sp_support_exact(sp)
    d = sp.d
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    W = rng.standard_normal((2, d)) * 10.0 ** data.draw(st.floats(-2, 2))
    b = rng.standard_normal(2) * np.linalg.norm(W, axis=1) * data.draw(st.sampled_from([0.0, 0.3, 1.0]))
    G, A = sp.simplified_gradient(W, b), sp.A(W, b)
    N = len(sup)
    Wf = [[Fraction(float(v)) for v in row] for row in W]
    for i in range(2):
        pre = [sum(w * x for w, x in zip(Wf[i], phi)) - Fraction(float(b[i])) for phi, _, _ in sup]
        if any(abs(p_) < Fraction(1, 10 ** 9) for p_ in pre):
            continue
        for l in range(d):
            ex = sum(pr * y * phi[l] for (phi, pr, y), p_ in zip(sup, pre) if p_ > 0)
            sc = sum(pr * abs(phi[l]) for phi, pr, _ in sup)
            if sc:
                assert record("StructuredParity.simplified_gradient", float(abs(Fraction(G[i, l]) - ex)
                                                                            / (N * Fraction(EPS) * sc))) <= 1
        exA = sum(pr * y * p_ for (_, pr, y), p_ in zip(sup, pre) if p_ > 0)
        scA = sum(pr * (sum(abs(w * x) for w, x in zip(Wf[i], phi)) + abs(Fraction(float(b[i]))))
                  for phi, pr, _ in sup)
        assert record("StructuredParity.A", float(abs(Fraction(A[i]) - exA) / ((N + d + 2) * Fraction(EPS) * scA)),
                      d=d) <= 1
    Eyx = sp.E_yx()
    for l in range(d):
        ex = sum(pr * y * phi[l] for phi, pr, y in sup)
        assert record("StructuredParity.E_yx", float(abs(Fraction(Eyx[l]) - ex) / (4 * Fraction(EPS) * abs(ex)))
                      if ex else (0.0 if Eyx[l] == 0 else math.inf)) <= 1
    Bx, Bx1, Bx2 = sp.bounds()
    with mp.workdps(DPS):
        f = lambda q: mp.mpf(q.numerator) / q.denominator  # noqa: E731
        n2 = [sum(v * v for v in phi) for phi, _, _ in sup]
        refs = (mp.sqrt(max(n2)), mp.fsum(f(pr) * mp.sqrt(v) for (_, pr, _), v in zip(sup, n2)),
                f(sum(pr * v for (_, pr, _), v in zip(sup, n2))))
        err = max(_rel(g, rf) for g, rf in zip((Bx, Bx1, Bx2), refs))
        assert record("StructuredParity.bounds", err / 1e-13, d=d) <= 1
        a, Ws, bs = sp.ground_truth()
        hk = 1 / mp.sqrt(sp.k)
        Lh = Ll = mp.mpf(0)
        for phi, pr, y in sup:   # g* through the block sums z_j = <D_j, x> (exact in mpmath)
            z = [mp.fsum(phi[j * sp.k:(j + 1) * sp.k]) * hk for j in range(sp.r)]
            g = mp.fsum(mp.sqrt(sp.k) * (-1) ** (i + 1) * (max(0, z[j] - (2 * i - sp.k - 1) * hk)
                                                         - 2 * max(0, z[j] - (2 * i - sp.k) * hk)
                                                         + max(0, z[j] - (2 * i - sp.k + 1) * hk))
                        for j in range(sp.r) for i in range(sp.k + 1))
            Lh += f(pr) * max(0, 1 - y * g)
            Ll += f(pr) * mp.log1p(mp.exp(-y * g)) / mp.log(2)
        gh, gl = sp.ground_truth_loss("hinge")[0], sp.ground_truth_loss("logistic")[0]
        assert record("StructuredParity.ground_truth_loss", max(float(abs(gh - Lh)) / (64 * (sp.k + 1) * EPS),
                                                                _rel(gl, Ll) / 1e-13), k=sp.k, r=sp.r) <= 1


@settings(max_examples=examples(4), deadline=None)
@given(st.integers(0, 2 ** 31), st.sampled_from(["numba", "numpy"]), st.sampled_from([0.0, 0.3, 1.0]))
def test_structured_parity_mc_calibration(seed, method, kappa):
    """StructuredParity.simplified_gradient_mc: |G_mc - G| <= 6 se per coordinate (se > 0; unbiased, the CLT
    standard error it reports), against the exact enumeration, both reductions."""
    sp = GF.StructuredParity(6, 1, 3, 0.1, 0.2)
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((3, 6))
    b = kappa * np.linalg.norm(W, axis=1)
    Gm, se = sp.simplified_gradient_mc(W, b, 20_000, seed, method=method)
    G = sp.simplified_gradient(W, b)
    ok = se > 0
    assert np.all(np.where(ok, True, Gm == G) | (np.abs(G) < 1e-3))
    assert record("StructuredParity.simplified_gradient_mc (z / 6)", float(np.max(np.abs(Gm - G)[ok] / se[ok]))
                  / Z_MAX) <= 1


def test_structured_parity_bounds_large_d():
    """StructuredParity.bounds at d = 10^3 and 10^5: Bx2 relative <= 1e-13 against its closed form
    (1 - 2rp_A) rk + 2rp_A k + 2p_o (d - rk), Bx1 against E sqrt(a + N) in mpmath (d = 10^3)."""
    for d in (10 ** 3, 10 ** 5):
        sp = GF.StructuredParity(d, 3, 5, 0.1, 0.01)
        Bx, Bx1, Bx2 = sp.bounds()
        ref = Fraction(4, 10) * 15 + Fraction(6, 10) * 5 + 2 * Fraction(0.01) * (d - 15)
        assert record("StructuredParity.bounds", float(abs(Fraction(Bx2) - ref) / ref) / 1e-13, d=d) <= 1
        assert Bx == math.sqrt(d)
    with mp.workdps(DPS):
        d, nb = 10 ** 3, 10 ** 3 - 15
        pN = [mp.binomial(nb, j) * mp.mpf(0.02) ** j * (1 - mp.mpf(0.02)) ** (nb - j) for j in range(nb + 1)]
        ref = mp.fsum((_mpf(0.4) * mp.sqrt(15 + j) + _mpf(0.6) * mp.sqrt(5 + j)) * p for j, p in enumerate(pN))
        assert record("StructuredParity.bounds", _rel(GF.StructuredParity(d, 3, 5, 0.1, 0.01).bounds()[1], ref)
                      / 1e-13, d=d) <= 1


# ---- framework: cones, the first step on a sample, the frozen-feature optimum ------------------------------------

@settings(max_examples=examples(30), deadline=None)
@given(st.integers(1, 6), st.floats(-12, -1e-3), st.floats(-300, 300), st.data())
def test_cone_membership(d, log_g, log_w, data):
    """cone_membership: every decision exact where |cos(w, D)| is not within 8 d eps of 1 - gamma (l2) or
    ||w/||w|| - D||_inf not within 8 eps of gamma (linf); w of scale 1e-300..1e300 (squares beyond the float
    range) and near the boundary; against mpmath at 40 digits."""
    gamma = 10.0 ** log_g
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    D = rng.standard_normal(d)
    D /= np.linalg.norm(D)
    W = rng.standard_normal((4, d))
    W[0] = D + rng.standard_normal(d) * math.sqrt(2 * gamma) / math.sqrt(d)   # near the l2 boundary
    W[1] = -D
    W *= 10.0 ** log_w
    for norm in ("l2", "linf"):
        got = GF.cone_membership(W, D, gamma if norm == "l2" else min(gamma * 10, 2.0), norm)
        g_ = _mpf(gamma if norm == "l2" else min(gamma * 10, 2.0))
        with mp.workdps(DPS):
            for i in range(4):
                nw = mp.sqrt(mp.fsum(_mpf(v) ** 2 for v in W[i]))
                if norm == "l2":
                    v = abs(mp.fsum(_mpf(a) * _mpf(b) for a, b in zip(W[i], D))) / nw
                    margin, inside = v - (1 - g_), None
                    inside = v > 1 - g_
                    tol = 8 * d * EPS
                else:
                    v = max(abs(_mpf(a) / nw - _mpf(b)) for a, b in zip(W[i], D))
                    margin, inside = g_ - v, v < g_
                    tol = 8 * EPS
                if abs(margin) > tol:
                    assert record("cone_membership (wrong decisions)", float(got[i] != inside)) <= 0.5


@settings(max_examples=examples(15), deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 40), st.sampled_from(["hinge", "logistic"]), st.data())
def test_first_step_sample(d, m, n, loss, data):
    """first_step on a sample (X, y): |delta a_i - exact| <= 4 (n + d + 4) eps c eta1 E|l'| relu(pre_i), |delta W_ij -
    exact| <= 4 (n + d + 4) eps c eta1 |a_i| E[|l'| |x_j|] (sums of n terms; the kink decisions away from 1e-9),
    c = 1 (hinge) or 1 + max_x sum_i |a_i| (|w_i| . |x| + |b_i|) (logistic: l'(y g) moves with the rounding of g);
    against exact rationals (the logistic derivative in mpmath)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    a0, W0, b = GF.symmetric_init(d, m, 1.0, 1.0, 0.3, rng)
    X = rng.standard_normal((n, d)) * 10.0 ** data.draw(st.floats(-2, 2))
    y = rng.choice([-1.0, 1.0], n)
    eta1 = 10.0 ** data.draw(st.floats(-3, 1))
    da, dW = GF.first_step(None, a0, W0, b, eta1, loss, X=X, y=y)
    with mp.workdps(DPS):
        pre = [[mp.fsum(_mpf(W0[i, j]) * _mpf(X[s, j]) for j in range(d)) - _mpf(b[i]) for i in range(len(a0))]
               for s in range(n)]
        if any(abs(p) < 1e-9 for row in pre for p in row):
            return
        g = [mp.fsum(_mpf(a0[i]) * max(p, 0) for i, p in enumerate(row)) for row in pre]
        if loss == "hinge":
            if any(abs(_mpf(y[s]) * g[s] - 1) < 1e-9 for s in range(n)):
                return
            lp = [-(1 if _mpf(y[s]) * g[s] < 1 else 0) for s in range(n)]
        else:
            lp = [-1 / (1 + mp.exp(_mpf(y[s]) * g[s])) / mp.log(2) for s in range(n)]
        # the logistic l'(z) moves by up to |dz| relative with z = y g rounded: its conditioning in the terms of g
        cond = 1 if loss == "hinge" else 1 + max(
            mp.fsum(abs(_mpf(a0[i])) * (mp.fsum(abs(_mpf(W0[i, j]) * _mpf(X[s, j])) for j in range(d))
                                        + abs(_mpf(b[i]))) for i in range(len(a0))) for s in range(n))
        for i in range(len(a0)):
            ref = -_mpf(eta1) * mp.fsum(lp[s] * _mpf(y[s]) * max(pre[s][i], 0) for s in range(n)) / n
            sc = _mpf(eta1) * mp.fsum(abs(lp[s]) * max(pre[s][i], 0) for s in range(n)) / n
            bound = 4 * (n + d + 4) * EPS * cond * sc + mp.mpf(1e-300)
            assert record("first_step (sample)", float(abs(da[i] - ref) / bound)) <= 1
            for j in range(d):
                ref = -_mpf(eta1) * _mpf(a0[i]) * mp.fsum(lp[s] * _mpf(y[s]) * (1 if pre[s][i] > 0 else 0)
                                                          * _mpf(X[s, j]) for s in range(n)) / n
                sc = _mpf(eta1) * abs(_mpf(a0[i])) * mp.fsum(abs(lp[s] * _mpf(X[s, j])) for s in range(n)) / n
                bound = 4 * (n + d + 4) * EPS * cond * sc + mp.mpf(1e-300)
                assert record("first_step (sample)", float(abs(dW[i, j] - ref) / bound)) <= 1


@settings(max_examples=examples(15), deadline=None)
@given(st.integers(1, 6), st.integers(1, 2), st.data())
def test_opt_frozen_hinge(n, M, data):
    """opt_frozen (hinge, no ball): value - OPT <= 1e-6 max(1, OPT) and gap = 0, OPT by exact brute force over the
    vertices of the hinge arrangement (M <= 2 full-rank features); with a ball: value - gap <= OPT_ball (the gap is
    an honest certificate) with OPT_ball >= OPT and value the exact loss of a feasible a (||a|| <= B)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    X = rng.standard_normal((n, 2)) * 10.0 ** data.draw(st.floats(-2, 2))
    y = rng.choice([-1.0, 1.0], n)
    W, b = rng.standard_normal((M, 2)), rng.uniform(-0.5, 0.5, M)
    F = np.maximum(X @ W.T - b, 0.0)
    if np.linalg.matrix_rank(F) < M:
        return
    a, value, gap = GF.opt_frozen(X, y, W, b)
    rows = [[Fraction(float(v)) * int(yv) for v in F[s]] for s, yv in enumerate(y)]
    cands = hinge_vertices(rows)
    loss = lambda c: sum(max(Fraction(0), 1 - sum(r_ * x for r_, x in zip(row, c))) for row in rows) / n  # noqa
    opt = min(loss(c) for c in cands)
    assert gap == 0 and record("opt_frozen (LP)", float((Fraction(value) - opt) / max(1, opt)) / 1e-6) <= 1
    B = 0.5 * float(np.linalg.norm(a)) if np.linalg.norm(a) > 0 else 1.0
    a2, v2, g2 = GF.opt_frozen(X, y, W, b, B_a2=B, maxiter=500)
    assert np.linalg.norm(a2) <= B * (1 + 1e-12) and g2 >= 0
    assert abs(Fraction(v2) - loss([Fraction(float(v)) for v in a2])) <= 4 * n * Fraction(EPS) * (1 + max(
        sum(abs(r_ * Fraction(float(v))) for r_, v in zip(row, a2)) for row in rows))
    assert record("opt_frozen (ball: OPT - (value - gap))", float(Fraction(v2 - g2) - max(opt, Fraction(0)))
                  / 1e-9 if v2 - g2 < float(opt) else 0.0) <= 1


@settings(max_examples=examples(20), deadline=None)
@given(st.integers(3, 10 ** 6), st.floats(0.5, 12), st.lists(st.floats(-3, 3), min_size=4, max_size=4),
       st.integers(1, 6), st.integers(2, 8), st.data())
def test_case_parameters_and_smoothness(d, tau, logs, n, M, data):
    """case_parameters ("linear", "uniform_parity"): every entry relative error <= 16 eps, except B_G = rho - C_G s,
    absolute <= 4 eps (rho + C_G s); smoothness_constant: relative <= 4 (M + n) eps (spectral: the top eigenvalue of
    the PSD Gram; trace); symmetric_init: the mirror copies bit-identical (g = 0 exactly, the halves summed apart);
    against mpmath."""
    import warnings
    rho, beta, Bx1, Bx2 = (10.0 ** v for v in logs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = GF.case_parameters("linear", d=d, tau=tau, rho=rho, beta=beta, Bx1=Bx1, Bx2=Bx2)
        except ValueError:   # B_G <= 0: refused, as documented
            out = None
    errs = []
    with mp.workdps(DPS):
        D_, T_, R, Bt, X1, X2 = (_mpf(v) for v in (d, tau, rho, beta, Bx1, Bx2))
        s = mp.sqrt(X2) / D_ ** (T_ / 2 - mp.mpf(0.25))
        if out is not None:
            refs = dict(gamma=s / R, B_a1=1 / Bt, B_a2=mp.sqrt(2) / Bt, B_b=1 / X1 ** 2, b_over_sigma_w=D_ ** T_ * X1,
                        err_bound_paper=X1 * mp.root(X2, 4) / (Bt * mp.sqrt(R) * D_ ** (T_ / 4 - mp.mpf(0.125))),
                        err_bound=2 / Bt * X1 * mp.sqrt(2 * s / R))
            errs += [_rel(out[kk], v) / (16 * EPS) for kk, v in refs.items()
                     if mp.mpf(2) ** -1000 < v < mp.mpf(2) ** 1000]
            errs.append(float(abs(_mpf(out["B_G"]) - (R - s)) / (4 * EPS * (R + s))))
        dd = 2 * data.draw(st.integers(1, 2000)) + 1
        k = 2 * data.draw(st.integers(1, max(1, min(20, (dd - 1) // 2))))
        up = GF.case_parameters("uniform_parity", d=dd, k=k)
        K, DD = mp.mpf(k), mp.mpf(dd)

        def xi(n_, j):
            h, i = (n_ - 1) // 2, (j - 1) // 2
            return (-1) ** i * mp.binomial(h, i) * mp.binomial(n_ - 1, h) / (mp.binomial(n_ - 1, j - 1)
                                                                            * mp.mpf(2) ** (n_ - 1))
        BG = mp.sqrt(K * xi(dd, k - 1) ** 2 + (DD - K) * xi(dd, k + 1) ** 2) / 2
        gi = mp.sqrt(K) / (DD - K)
        eb = 3 * (K + 1) * 2 * mp.sqrt(K) * mp.sqrt(2 * DD * mp.log(DD)) * gi
        for kk, v in dict(B_G=BG, gamma_inf=gi, B_a1=2 * mp.sqrt(K), B_a2=mp.sqrt(6 * K * (K + 1)),
                          B_b=(K + 1) / mp.sqrt(K), err_bound=eb,
                          err_bound_paper=K ** 2 * mp.sqrt(DD * mp.log(DD)) / (DD - K)).items():
            errs.append(_rel(up[kk], v) / (16 * EPS))
        assert up["log_p"] == -(k - 1) * math.log(2.0) or abs(up["log_p"] + (k - 1) * mp.log(2)) <= 16 * EPS * k
        rng = np.random.default_rng(d)
        Phi = rng.standard_normal((n, M)) * 10.0 ** rng.uniform(-3, 3, M)
        G = mp.matrix(M, M)
        for i in range(M):
            for j in range(M):
                G[i, j] = mp.fsum(_mpf(Phi[r, i]) * _mpf(Phi[r, j]) for r in range(n)) / n
        lmax = max(mp.eigsy(G)[0])
        for loss, beta_ in (("logistic", 1 / (4 * mp.log(2))), ("squared", mp.mpf(2))):
            errs.append(_rel(GF.smoothness_constant(Phi, loss), beta_ * lmax) / (4 * (M + n) * EPS))
            errs.append(_rel(GF.smoothness_constant(Phi, loss, bound="trace"), beta_ * sum(G[i, i] for i in range(M)))
                        / (4 * (M + n) * EPS))
    assert record("case_parameters / smoothness_constant", max(errs), d=d, tau=tau) <= 1
    a, W, b = GF.symmetric_init(3, M, 1.0, 1.0, 0.5, rng)
    h = 2 * M
    assert np.array_equal(a[h:], -a[:h]) and np.array_equal(W[h:], W[:h]) and np.array_equal(b[h:], b[:h])
    X = rng.standard_normal((5, 3))
    F = np.maximum(X @ W.T - b, 0)
    assert np.all(F[:, :h] @ a[:h] + F[:, h:] @ a[h:] == 0)   # each half is the other's exact negative


# ---- nice sets and Lemma B.6's second layer (decided exactly from the float inputs; mpmath at 40 digits) ----------

def _slope_mp(loss):
    """|l'(0)| in mpmath: 1 (hinge) or 1/(2 ln 2) (base-2 logistic)."""
    return mp.mpf(1) if loss == "hinge" else 1 / (2 * mp.log(2))


def _all(conds):
    """Conjunction of exact decisions where None is 'either' (within a declared slack): False if any is False."""
    if any(c is False for c in conds):
        return False
    return None if any(c is None for c in conds) else True


def _cone_ref(w, D, gamma, norm, tol):
    """Definition B.4's signed cone: <w, D> > (1 - gamma)||w|| (l2) or ||w/||w|| - D||_inf < gamma (linf), from the
    float w, D at 40 digits; None within ``tol(margin scale)`` of the threshold, False for w = 0."""
    w = [_mpf(v) for v in w]
    nw = mp.sqrt(mp.fsum(v * v for v in w))
    if nw == 0:
        return False, nw
    g = _mpf(gamma)
    if norm == "l2":
        margin, thr = mp.fsum(x * _mpf(y) for x, y in zip(w, D)) / nw - (1 - g), 1 - g
    else:
        margin, thr = g - max(abs(x / nw - _mpf(y)) for x, y in zip(w, D)), g
    return (None if abs(margin) <= tol(thr) else margin > 0), nw


def _nice_ref(W1, a0, b, D, s, gamma, B_G, eta1, loss, norm, cone_tol):
    """The nice set (3.14) / Definition B.4 of the neurons i < M/2 decided from the float inputs: per neuron True,
    False or None (either: a condition within its declared slack): the bias sign exactly, the cone within
    ``cone_tol``, the norm ||w_i|| >= |eta1 l'(0) a0_i| B_G within 4 eps (relative) of the threshold."""
    thr0 = _mpf(eta1) * _slope_mp(loss) * _mpf(B_G)
    out = []
    for i in range(W1.shape[0] // 2):
        cone, nw = _cone_ref(W1[i], D, gamma, norm, cone_tol)
        thr = abs(_mpf(a0[i])) * thr0
        big = True if thr == 0 else (None if abs(nw / thr - 1) <= 4 * EPS else nw >= thr)
        out.append(_all([bool(b[i] > 0) if s == 1 else bool(b[i] < 0), cone, big]))
    return out


def _edge_row(rng, D, c):
    """A unit-scale vector of cosine ``c`` (mpmath) with the unit D: c D + sqrt(1 - c^2) u, u orthogonal to D."""
    u = rng.standard_normal(len(D))
    u -= (u @ D) * D
    u /= np.linalg.norm(u)
    return np.array([float(c * _mpf(x) + mp.sqrt(1 - c * c) * _mpf(y)) for x, y in zip(D, u)])


def _near_row(rng, D, gamma, norm):
    """A vector near the unit D on either side of the cone of width gamma."""
    if norm == "l2":
        return D + rng.standard_normal(len(D)) * math.sqrt(2 * gamma) / math.sqrt(len(D))
    return D + rng.uniform(-1.5, 1.5, len(D)) * min(gamma, 0.5)


def _unit_vector(draw, rng, d):
    """A unit feature: a coordinate axis (exactly unit), the diagonal, or a random direction (unit to rounding)."""
    kind = draw(st.sampled_from(["axis", "diag", "random"]))
    if kind == "axis":
        return np.eye(d)[draw(st.integers(0, d - 1))] * draw(st.sampled_from([1.0, -1.0]))
    v = np.ones(d) if kind == "diag" else rng.standard_normal(d)
    return v / np.linalg.norm(v)


# offsets (in units of eps) that straddle a slack of 4 eps: at the threshold, inside the slack, at its edge, beyond
_OFFSETS = [0, 1, -1, 3, -3, 4, -4, 5, -5, 8, -8, 64, -64]


@st.composite
def nice_cases(draw, norm):
    """(W1, a0, b, D, s, gamma, B_G, eta1, loss): M = 4m rows (m in 1..3) of dimension 1..8 or 64, each of scale
    10^[-300, 300] (squares beyond the float range), near D, on the cone's edge, -D, zero, random or a copy of
    another; row 0 sets gamma within 0..2 slacks of its own cone threshold, row 1 sets B_G (10^[-100, 100]) within
    0..64 eps of its own norm threshold (or B_G = 0, or B_G arbitrary); eta1 in 10^[-100, 100], eta1 |a0_i| in
    10^[-400, 400] (thresholds that overflow or underflow; a0 = 0 too); biases of both signs and 0."""
    d = draw(st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 64]))
    m = draw(st.integers(1, 3))
    M = 4 * m
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    loss, s = ("hinge", "logistic")[rng.integers(2)], (1, -1)[rng.integers(2)]
    D = _unit_vector(draw, rng, d)
    gamma = 10.0 ** (draw(st.floats(-12, -1e-3)) if norm == "l2" else draw(st.floats(-6, 0.5)))
    tol = 8 * d if norm == "l2" else 8                     # cone_membership's slack, in eps
    W1 = np.empty((M, d))
    W1[0] = _near_row(rng, D, gamma, norm)
    with mp.workdps(DPS):                                 # row 0 on the cone's edge: gamma from its exact cosine
        w0 = [_mpf(v) for v in W1[0]]
        n0 = mp.sqrt(mp.fsum(v * v for v in w0))
        edge = [0, 1, -1, tol // 2, -tol // 2, tol - 1, 1 - tol, tol + 1, -tol - 1, tol + 4, -tol - 4, 2 * tol,
                -2 * tol]
        j = draw(st.sampled_from(edge))
        if norm == "l2":
            g = 1 - mp.fsum(x * _mpf(y) for x, y in zip(w0, D)) / n0 + j * EPS
        else:
            g = max(abs(x / n0 - _mpf(y)) for x, y in zip(w0, D)) + j * EPS
        if 0 < g < (1 if norm == "l2" else 10) and draw(st.booleans()):
            gamma = float(g)
        for i in range(1, M):
            kind = draw(st.sampled_from(["edge", "near", "minusD", "zero", "random", "copy"]))
            if kind == "edge" and norm == "l2" and d > 1:
                c = 1 - _mpf(gamma) + draw(st.sampled_from(edge)) * EPS
                W1[i] = _edge_row(rng, D, c) if abs(c) < 1 else D
            elif kind == "copy":
                W1[i] = W1[draw(st.integers(0, i - 1))]
            else:
                W1[i] = {"near": _near_row(rng, D, gamma, norm), "edge": _near_row(rng, D, gamma, norm),
                         "minusD": -D, "zero": np.zeros(d), "random": rng.standard_normal(d)}[kind]
        W1 *= 10.0 ** np.array([draw(st.floats(-300, 300)) for _ in range(M)])[:, None]
        if draw(st.booleans()):
            W1[1] = W1[0]                                 # a tie
        eta1 = 10.0 ** draw(st.floats(-100, 100))
        a0 = rng.choice([-1.0, 1.0], M) * 10.0 ** np.clip(rng.uniform(-400, 400, M) - math.log10(eta1), -300, 300)
        a0[rng.random(M) < 0.1] = 0.0
        B_G = draw(st.sampled_from(["edge", "edge", 0.0, "random"]))
        n1 = mp.sqrt(mp.fsum(_mpf(v) ** 2 for v in W1[1]))
        if B_G == "edge" and n1 > 0:                      # row 1 on the norm threshold: B_G from its exact norm
            a0[1] = (-1.0) ** rng.integers(2) * 10.0 ** float(np.clip(
                mp.log10(n1 / _mpf(eta1)) - draw(st.floats(-100, 100)), -300, 300))
            B_G = float(n1 / (abs(_mpf(a0[1]) * _mpf(eta1)) * _slope_mp(loss))
                        * (1 + draw(st.sampled_from(_OFFSETS)) * EPS))
        elif B_G != 0.0:
            B_G = 10.0 ** draw(st.floats(-100, 100))
    assume(0 <= B_G < math.inf)
    b = rng.choice([float(s), float(s), -float(s), 0.0], M) * 10.0 ** rng.uniform(-3, 3, M)
    return W1, a0, b, D, s, gamma, B_G, eta1, loss


@pytest.mark.parametrize("norm", ["l2", "linf"])
@settings(max_examples=examples(30), deadline=None)
@given(data=st.data())
def test_nice_set(norm, data):
    """nice_set: every decision exact (the signed cone <w, D> > (1 - gamma)||w|| or the l_inf cone, ||w|| >=
    |eta1 l'(0) a0| B_G, b_i/|b_i| = s, i < M/2), except where |cos - (1 - gamma)| <= 8 d eps (l2) or the l_inf
    distance is within 8 eps of gamma (cone_membership's slack) or ||w|| is within 4 eps (relative) of its
    threshold, where either is accepted; rows of norm 10^[-300, 300] and thresholds |eta1 l'(0) a0| B_G from
    10^-500 to 10^500 or 0 (before: ||w|| and the threshold over- and underflowed, see test_nice_set_large_rows,
    _small_rows and _threshold_overflow); against the definition decided at 40 digits from the float inputs."""
    W1, a0, b, D, s, gamma, B_G, eta1, loss = data.draw(nice_cases(norm))
    got = set(GF.nice_set(W1, a0, b, D, s, gamma, B_G, eta1, loss, norm).tolist())
    d = W1.shape[1]
    with mp.workdps(DPS):
        ref = _nice_ref(W1, a0, b, D, s, gamma, B_G, eta1, loss, norm,
                        (lambda t: 8 * d * EPS) if norm == "l2" else (lambda t: 8 * EPS))
    assert got <= set(range(W1.shape[0] // 2))
    wrong = [i for i, r in enumerate(ref) if r is not None and (i in got) != r]
    assert record("nice_set (wrong decisions)", len(wrong), d=d, norm=norm, gamma=gamma, B_G=B_G,
                  ambiguous=sum(r is None for r in ref)) <= 0.5


def _second_layer_ref(W1, a0, b, gstar, gamma, B_G, B_eps, eps_a, eta1, loss, norm, signs, cone_tol):
    """Lemma B.6's sets from the float inputs: per target j, beta_j (exact) and per neuron i < M/2 True, False or
    None (either): nice for (w*_j, s_j) and |(||w_i|| beta_j / |b_i|) - 1| <= eps_a, the ratio within 4 eps of
    t = 1 +- eps_a relative to max(|t|, eps_a) undecided (relative to the threshold of the ratio or of |ratio - 1|:
    at eps_a -> 1 the rounding of ratio - 1 is 4 eps of eps_a but not of 1 - eps_a)."""
    a_s, W_s, b_s = gstar
    out = []
    for j in range(len(a_s)):
        bj = Fraction(float(b_s[j]))
        beta = abs(bj) if abs(bj) >= Fraction(B_eps) else Fraction(B_eps)
        sj = (1 if b_s[j] >= 0 else -1) if signs is None else int(signs[j])
        nice = _nice_ref(W1, a0, b, W_s[j], sj, gamma, B_G, eta1, loss, norm, cone_tol)
        row = []
        for i, ni in enumerate(nice):
            if ni is False:
                row.append(False)
                continue
            rho = mp.sqrt(mp.fsum(_mpf(v) ** 2 for v in W1[i])) * mp.mpf(beta.numerator) / beta.denominator \
                / abs(_mpf(b[i]))
            ea = _mpf(eps_a)
            near = any(abs(rho - t) <= 4 * EPS * max(abs(t), ea) for t in (1 - ea, 1 + ea))
            row.append(_all([ni, None if near else abs(rho - 1) <= ea]))
        out.append((beta, row))
    return out


@st.composite
def second_layer_cases(draw, norm):
    """(W1, a0, b, gstar, gamma, B_G, B_eps, eps_a, eta1, loss, signs): r = 1..3 targets (unit w*, some the same or
    opposite, b* of both signs, 0, below and equal to B_eps, a* of both signs over 10^[-3, 3]), M = 4m neurons
    (m = 1, 2) of dimension 1..6, each aimed at a target: on or near w*_j (or random, zero, opposite), of norm
    10^[-150, 150], with a bias placing the scale ratio ||w|| beta_j / |b_i| inside the tolerance, at 1 +- eps_a
    within 0..64 eps, or outside; eps_a from 1e-12 to 1e3 (within 1e-12 of 1 too); B_G = 0, on row 1's
    threshold, or arbitrary."""
    d, m, r = draw(st.integers(1, 6)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
    M, half = 4 * m, 2 * m
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    loss = ("hinge", "logistic")[rng.integers(2)]
    W_s = np.empty((r, d))
    for j in range(r):
        kind = draw(st.sampled_from(["new", "same", "opposite"])) if j else "new"
        W_s[j] = _unit_vector(draw, rng, d) if kind == "new" else W_s[0] * (1 if kind == "same" else -1)
    B_eps = 10.0 ** draw(st.floats(-3, 0))
    b_s = np.array([draw(st.sampled_from([1.0, -1.0, 0.0, "eps", "below"])) for _ in range(r)], object)
    b_s = np.array([B_eps * (-1) ** rng.integers(2) if v == "eps" else 0.3 * B_eps * (-1) ** rng.integers(2)
                    if v == "below" else v * 10.0 ** rng.uniform(-3, 1) for v in b_s], float)
    a_s = rng.choice([-1.0, 1.0], r) * 10.0 ** rng.uniform(-3, 3, r)
    signs = None if draw(st.booleans()) else np.where(b_s > 0, 1, np.where(b_s < 0, -1, rng.choice([-1, 1], r)))
    s_eff = np.where(b_s >= 0, 1, -1) if signs is None else signs
    gamma = 10.0 ** (draw(st.floats(-6, -0.3)) if norm == "l2" else draw(st.floats(-3, 0.5)))
    eps_a = {"small": lambda: 10.0 ** draw(st.floats(-12, -2)), "mid": lambda: draw(st.floats(0.01, 0.9)),
             "near1": lambda: 1.0 - 10.0 ** draw(st.floats(-12, -1)),
             "large": lambda: 10.0 ** draw(st.floats(0.0, 3))}[draw(st.sampled_from(["small", "mid", "near1",
                                                                                       "large"]))]()
    eta1 = 10.0 ** draw(st.floats(-3, 3))
    a0 = rng.choice([-1.0, 1.0], M) * 10.0 ** rng.uniform(-2, 2, M)
    W1, b = rng.standard_normal((M, d)), rng.standard_normal(M)
    with mp.workdps(DPS):
        for i in range(half):
            j = draw(st.integers(0, r - 1))
            beta = abs(b_s[j]) if abs(b_s[j]) >= B_eps else B_eps
            kind = draw(st.sampled_from(["on", "near", "edge", "random", "zero", "away"]))
            if kind == "edge" and norm == "l2" and d > 1:
                w = _edge_row(rng, W_s[j], 1 - _mpf(gamma) + draw(st.sampled_from(_OFFSETS)) * EPS)
            else:
                w = {"on": W_s[j], "near": _near_row(rng, W_s[j], gamma, norm), "edge": W_s[j],
                     "random": rng.standard_normal(d), "zero": np.zeros(d), "away": -W_s[j]}[kind]
            W1[i] = w * 10.0 ** draw(st.floats(-150, 150))
            nw = mp.sqrt(mp.fsum(_mpf(v) ** 2 for v in W1[i]))
            ea = _mpf(eps_a)
            where = draw(st.sampled_from(["edge_lo", "edge_hi", "inside", "one", "outside"]))
            t = {"edge_lo": (1 - ea) * (1 + draw(st.sampled_from(_OFFSETS)) * EPS),
                 "edge_hi": (1 + ea) * (1 + draw(st.sampled_from(_OFFSETS)) * EPS),
                 "inside": 1 + ea * draw(st.floats(-0.99, 0.99)), "one": mp.mpf(1),
                 "outside": (1 + ea) * draw(st.floats(1.01, 100))}[where]
            if nw > 0 and t > 0:
                b[i] = float(s_eff[j] * nw * _mpf(beta) / t)
        B_G = draw(st.sampled_from(["edge", 0.0, "random"]))
        n1 = mp.sqrt(mp.fsum(_mpf(v) ** 2 for v in W1[1]))
        if B_G == "edge" and n1 > 0:
            B_G = float(n1 / (abs(_mpf(a0[1]) * _mpf(eta1)) * _slope_mp(loss))
                        * (1 + draw(st.sampled_from(_OFFSETS)) * EPS))
        elif B_G != 0.0:
            B_G = 10.0 ** draw(st.floats(-3, 1)) / (eta1 * 10.0)
    return W1, a0, b, (a_s, W_s, b_s), gamma, B_G, B_eps, eps_a, eta1, loss, signs


def _check_second_layer(case, norm, cone_tol, key):
    """The sets of good_second_layer against _second_layer_ref (either decision only where undecided), and a_tilde
    against sum_{j: i in Lambda_j} a*_j beta_j / (|Lambda_j| |b_i|) on the returned sets, in exact rationals: the
    worst relative error |a~_i - exact| / (8 eps |exact|) (terms that cancel included)."""
    W1, a0, b, gstar, gamma, B_G, B_eps, eps_a, eta1, loss, signs = case
    a_t, sets = GF.good_second_layer(W1, a0, b, gstar, gamma, B_G, B_eps, eps_a, eta1, loss, norm, signs)
    half = W1.shape[0] // 2
    with mp.workdps(DPS):
        ref = _second_layer_ref(W1, a0, b, gstar, gamma, B_G, B_eps, eps_a, eta1, loss, norm, signs, cone_tol)
    assert len(sets) == len(ref)
    terms = [[] for _ in range(W1.shape[0])]
    wrong = 0
    for (beta, row), lam, aj in zip(ref, sets, gstar[0]):
        lam = set(np.asarray(lam).tolist())
        assert lam <= set(range(half))
        wrong += sum(rv is not None and (i in lam) != rv for i, rv in enumerate(row))
        for i in lam:
            terms[i].append(Fraction(float(aj)) * beta / (len(lam) * abs(Fraction(float(b[i])))))
    err = max(float(abs(Fraction(float(v)) - sum(t)) / (8 * Fraction(EPS) * abs(sum(t))))
              if sum(t) else (0.0 if v == 0 else math.inf) for v, t in zip(a_t, terms))
    assert record(f"{key} (wrong decisions)", wrong, norm=norm, eps_a=eps_a) <= 0.5
    return err, terms, a_t


@pytest.mark.parametrize("norm", ["l2", "linf"])
@settings(max_examples=examples(30), deadline=None)
@given(data=st.data())
def test_good_second_layer(norm, data):
    """good_second_layer: the sets Lambda_j exact except within 4 eps (relative) of the cone threshold (1 - gamma
    for l2, gamma for linf), of B_G (||w_i|| against |eta1 l'(0) a0_i| B_G) and of the scale thresholds 1 +- eps_a
    of ||w_i|| beta_j / |b_i|, where either is accepted; a_tilde within 8 eps (relative) of its formula on the
    returned sets, a neuron in several sets included (the sum of their terms, which may cancel: see
    test_good_second_layer_cancellation); against exact rationals (mpmath at 40 digits for the norms)."""
    case = data.draw(second_layer_cases(norm))
    err, _, _ = _check_second_layer(case, norm, lambda t: 4 * EPS * abs(t), "good_second_layer")
    assert record("good_second_layer (a_tilde)", err, norm=norm, eps_a=case[7]) <= 1


def test_nice_set_corners():
    """nice_set at pinned corners, against the same reference: ||w|| exactly on its threshold and one ulp either
    side (either is allowed there), the l2 cone at gamma -> 1 and the l_inf cone wider than 2 (every nonzero row),
    d = 1 (cos = +-1 exactly), zero rows and zero biases (in no set), a0 = 0 and B_G = 0 (no norm condition), no
    nice neuron at all (empty), and M = 4 with a single candidate."""
    D2, W = np.array([1.0, 0.0]), np.array([[3.0, 4.0], [3.0, 4.0], [0.0, 0.0], [3.0, 4.0]])
    cases = [(W, np.ones(4), np.ones(4), np.array([0.6, 0.8]), 1, 0.01, B, 1.0, "hinge", "l2")
             for B in (5.0, np.nextafter(5.0, 6.0), np.nextafter(5.0, 4.0))]
    cases += [(W, np.array([1.0, 0.0, 1.0, 1.0]), np.array([1.0, 0.0, 1.0, 1.0]), D2, 1, 1 - 2.0 ** -53, 1e300, 1.0,
               "logistic", "l2"),
              (W, np.ones(4), -np.ones(4), D2, -1, 2.5, 0.0, 1e-3, "hinge", "linf"),
              (np.array([[2.0], [-2.0], [5.0], [5.0]]), np.ones(4), np.ones(4), np.array([1.0]), 1, 1e-12, 1.0, 1.0,
               "hinge", "l2"),
              (-W, np.ones(4), np.ones(4), D2, 1, 0.5, 0.0, 1.0, "hinge", "l2"),
              (np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]), np.zeros(4), np.ones(4), D2, 1, 1e-9, 7.0,
               1.0, "hinge", "linf")]
    for W1, a0, b, D, s, gamma, B_G, eta1, loss, norm in cases:
        got = set(GF.nice_set(W1, a0, b, D, s, gamma, B_G, eta1, loss, norm).tolist())
        with mp.workdps(DPS):
            ref = _nice_ref(W1, a0, b, D, s, gamma, B_G, eta1, loss, norm,
                            (lambda t: 8 * W1.shape[1] * EPS) if norm == "l2" else (lambda t: 8 * EPS))
        wrong = [i for i, r in enumerate(ref) if r is not None and (i in got) != r]
        assert record("nice_set (wrong decisions)", len(wrong), gamma=gamma, B_G=B_G) <= 0.5
    assert GF.nice_set(-W, np.ones(4), np.ones(4), D2, 1, 0.5, 0.0, 1.0).size == 0


def test_nice_set_large_rows():
    """Rows of norm 1e155 on D are nice (before: ||w|| by numpy's sum of squares overflowed above 1.3e154, cos = 0,
    and every such row left the cone)."""
    W1 = np.array([[1.0, 0.0], [1.0, 0.01], [1.0, 0.0], [1.0, 0.0]]) * 1e155
    assert GF.nice_set(W1, np.ones(4), np.ones(4), [1.0, 0.0], 1, 0.01, 0.0, 1.0).tolist() == [0, 1]
    assert GF.cone_membership(W1 * 1e153, [1.0, 0.0], 0.01).tolist() == [True, True, True, True]


def test_nice_set_small_rows():
    """Rows of norm 1e-170 (subnormal squares) are nice, and the l_inf distance of w = (1, 0.01) 1e-160 to D = e_1,
    0.0099995 < gamma = 0.01, puts it inside (before: ||w|| underflowed below 1.5e-154, every row was 'zero')."""
    W1 = np.array([[1.0, 0.0], [1.0, 0.01], [1.0, 0.0], [1.0, 0.0]])
    assert GF.nice_set(W1 * 1e-170, np.ones(4), np.ones(4), [1.0, 0.0], 1, 0.01, 0.0, 1.0).tolist() == [0, 1]
    assert GF.nice_set(W1 * 1e-160, np.ones(4), np.ones(4), [1.0, 0.0], 1, 0.01, 0.0, 1.0,
                       norm="linf").tolist() == [0, 1]
    assert GF.cone_membership(W1 * 5e-324, [1.0, 0.0], 0.01).tolist() == [True, True, True, True]


def test_nice_set_threshold_overflow():
    """The norm threshold |eta1 l'(0) a0_i| B_G is formed from mantissas and exponents apart: B_G = 0 with
    eta1 a0_i = 1e400 is the threshold 0 (before: inf * 0 = NaN dropped the neuron), and eta1 a0_i = 1e-400 with
    B_G = 1e300 is 1e-100, above the rows' norm 1e-101 (before: it underflowed to 0 and the rows passed)."""
    W1 = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    assert GF.nice_set(W1, np.full(4, 1e200), np.ones(4), [1.0, 0.0], 1, 0.01, 0.0, 1e200).tolist() == [0, 1]
    assert GF.nice_set(W1 * 1e-101, np.full(4, 1e-200), np.ones(4), [1.0, 0.0], 1, 0.01, 1e300,
                       1e-200).tolist() == []
    assert GF.nice_set(W1 * 1e-99, np.full(4, 1e-200), np.ones(4), [1.0, 0.0], 1, 0.01, 1e300,
                       1e-200).tolist() == [0, 1]


def test_good_second_layer_cancellation():
    """A neuron in two sets whose terms a*_j beta_j / (|Lambda_j| |b_i|) cancel (a* = 1 and -1 + 2^-52, beta = 0.5,
    |b_i| = 3) gets a~ within 8 eps of the exact 2^-53 / 3 = 3.7007e-17 (before: 2.7756e-17, the float sum of the
    rounded terms, relative error 0.25)."""
    W1, b = np.array([[6.0], [0.0], [6.0], [0.0]]), np.full(4, 3.0)
    gstar = (np.array([1.0, -1.0 + 2.0 ** -52]), np.array([[1.0], [1.0]]), np.array([0.5, 0.5]))
    a_t, sets = GF.good_second_layer(W1, np.ones(4), b, gstar, 0.1, 0.0, 0.1, 0.1, 1.0)
    assert [s.tolist() for s in sets] == [[0], [0]]
    exact = Fraction(2) ** -53 / 3
    assert abs(Fraction(a_t[0]) - exact) <= 8 * Fraction(EPS) * exact


# ---- population_risk -----------------------------------------------------------------------------------------------

@settings(max_examples=examples(10), deadline=None)
@given(st.integers(0, 2 ** 31), st.sampled_from([3, 5, 7, 9]), st.integers(1, 3), st.integers(1, 4),
       st.sampled_from(["hinge", "error"]))
def test_population_risk_cube_exact(seed, d, k, M, loss):
    """population_risk(method="exact"), uniform parity: |value - exact| <= bound, the exact value in rationals over all
    2^d points (hinge, 0-1 error: piecewise linear, exact in Fraction from the float inputs)."""
    k = min(k, d)
    up = GF.UniformParity(d, k)
    rng = np.random.default_rng(seed)
    a, W, b = rng.standard_normal(M), rng.standard_normal((M, d)), rng.standard_normal(M)
    r = GF.population_risk(up, a, W, b, loss, method="exact")
    Fa, FW, Fb = ([Fraction(float(v)) for v in row] for row in (a, W.ravel(), b))
    total = Fraction(0)
    for x in itertools.product((-1, 1), repeat=d):
        y = math.prod(x[:k])
        g = sum(Fa[i] * max(Fraction(0), sum(FW[i * d + j] * x[j] for j in range(d)) - Fb[i]) for i in range(M))
        z = y * g
        total += max(Fraction(0), 1 - z) if loss == "hinge" else (1 if z < 0 else Fraction(1, 2) if z == 0 else 0)
    ref = total / 2 ** d
    assert record("population_risk (cube exact)", abs(Fraction(r.value) - ref) / Fraction(max(r.bound, 1e-300)),
                  d=d, k=k, M=M, loss=loss) <= 1


@pytest.mark.slow
@settings(max_examples=examples(8), deadline=None)
@given(st.integers(0, 2 ** 31), st.integers(1, 5), st.sampled_from(["hinge", "logistic", "error"]),
       st.floats(0.3, 3.0))
@example(seed=5041, M=4, loss="error", sigma=1.5566767060158289).via("a jump of the 0-1 loss off the reference's grid")
def test_population_risk_gauss_rank1(seed, M, loss, sigma):
    """population_risk(method="exact"), Gaussian mixture with rank-1 W: |value - exact| <= bound (16 tol), the exact
    value by mpmath quadrature at 30 digits of each component's 1-D integral split at every kink of the network and
    every kink or jump of the loss (found exactly on each linear piece)."""
    gm = GF.xor_mixture(4, sigma)
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(4)
    a, W, b = rng.standard_normal(M), np.outer(rng.standard_normal(M), u), rng.standard_normal(M)
    r = GF.population_risk(gm, a, W, b, loss, method="exact")
    ell = {"hinge": lambda z: max(mp.mpf(0), 1 - z), "logistic": lambda z: mp.log(1 + mp.exp(-z)) / mp.log(2),
           "error": lambda z: mp.mpf(1) if z < 0 else (mp.mpf(0.5) if z == 0 else mp.mpf(0))}[loss]
    with mp.workdps(30):
        ref = mp.mpf(0)
        nu = mp.sqrt(_dot(u, u))
        for mu, s, yl, p in zip(gm.mus, gm.sigmas, gm.labels, gm.weights):
            mi = [_dot(W[i], mu) - _mpf(b[i]) for i in range(M)]
            Li = [_mpf(s) * _dot(W[i], u) / nu for i in range(M)]
            g = lambda t: sum(_mpf(a[i]) * max(mp.mpf(0), mi[i] + Li[i] * t) for i in range(M))
            knots = sorted(-mi[i] / Li[i] for i in range(M) if Li[i] != 0)
            f = lambda t: ell(_mpf(yl) * g(t)) * mp.npdf(t)
            pts = [-mp.inf] + knots + [mp.inf]
            if loss != "logistic":         # the loss's own kink or jump on each linear piece: y g(t) = 1 or g(t) = 0
                level = mp.mpf(0) if loss == "error" else _mpf(yl)
                edges = [knots[0] - 1] + knots + [knots[-1] + 1]
                for lo, hi in zip(edges[:-1], edges[1:]):
                    mid = (lo + hi) / 2                             # g is linear on the piece around mid
                    slope = sum(_mpf(a[i]) * Li[i] for i in range(M) if mi[i] + Li[i] * mid > 0)
                    if slope != 0:
                        root = mid + (level - g(mid)) / slope
                        if (lo == edges[0] or root >= lo) and (hi == edges[-1] or root <= hi):
                            pts.append(root)
            pts = sorted(set(pts + list(mp.linspace(-40, 40, 81))))   # and the bulk of the weight, unit panels
            ref += _mpf(p) * mp.quad(f, pts)
    assert record("population_risk (Gaussian rank 1)", abs(_mpf(r.value) - ref) / _mpf(r.bound),
                  M=M, loss=loss, sigma=sigma) <= 1
