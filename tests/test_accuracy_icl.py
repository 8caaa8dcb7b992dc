"""Declared accuracy of popdyn.models.icl over Hypothesis searches that reach the corners of the model (spectra with
ratios to 1e12, zero and repeated eigenvalues, scales 1e-40 .. 1e40, rotated covariances, N and M to 1e15, r = 0,
1, d, tiny noise, label flips, U at the optimum), against mpmath at 60 digits (Lemma 5.1 and the Theorem 5.4.2
risk as printed, eigen-decompositions in mpmath, L* = tr(Lambda)/2 - tr(Lambda^2 Gamma^-1)/2 with the mpmath inverse,
the logistic closed form of the flow), exact rationals (parity constructions, hinge losses, designs) and exact
integer ranks."""
import itertools
import math
import warnings
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from popdyn.models import icl

from ._accuracy import EPS, examples, record

DPS = 60


# ---- covariances ---------------------------------------------------------------------------------------------

@st.composite
def covariances(draw, d_max=8):
    """(Lambda as given, exact float spectrum or None for a rotated one, d): d in [1, d_max]; the spectrum geometric
    over a ratio 1 .. 1e12, some trailing eigenvalues 0 (never all), some repeated, at a scale 1e-40 .. 1e40; given
    as the spectrum, as a diagonal matrix, or rotated by a random orthogonal Q (then rounded: the reference works
    on the rounded matrix)."""
    d = draw(st.integers(1, d_max))
    lam = np.geomspace(1.0, 10.0 ** -draw(st.sampled_from([0.0, 1.0, 6.0, 12.0, draw(st.floats(0, 12))])), d)
    if d > 1 and draw(st.booleans()):  # ties
        k = draw(st.integers(1, d - 1))
        lam[k] = lam[k - 1]
    if d > 1 and draw(st.booleans()):  # zeros
        lam[draw(st.integers(1, d - 1)):] = 0.0
    lam = lam * 10.0 ** draw(st.sampled_from([0.0, -40.0, 40.0, draw(st.floats(-40, 40))]))
    kind = draw(st.sampled_from(["spectrum", "diag", "rotated"]))
    if kind == "spectrum":
        return lam[draw(st.permutations(range(d)))], lam, d
    if kind == "diag":
        return np.diag(lam), lam, d
    Q = np.linalg.qr(np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1))).standard_normal((d, d)))[0]
    L = (Q * lam) @ Q.T
    return (L + L.T) / 2, None, d


def _lengths(draw):
    return int(10.0 ** draw(st.sampled_from([0.0, 15.0, draw(st.floats(0, 15))])))


def _mp_eig(L, lam):
    """Eigenvalues (descending) and eigenvectors of the float matrix in mpmath; exact for a diagonal one."""
    d = len(L)
    if lam is not None:
        order = np.argsort(-np.diagonal(L), kind="stable")
        Q = mp.zeros(d, d)
        for c, i in enumerate(order):
            Q[int(i), c] = 1
        return [mp.mpf(float(np.diagonal(L)[i])) for i in order], Q
    ev, V = mp.eigsy(mp.matrix(L.tolist()))
    order = sorted(range(d), key=lambda i: -ev[i])
    Q = mp.zeros(d, d)
    for c, i in enumerate(order):
        for k in range(d):
            Q[k, c] = V[k, i]
    return [max(ev[i], mp.mpf(0)) for i in order], Q


def _as_matrix(Lambda):
    a = np.asarray(Lambda, dtype=float)
    return np.diag(a) if a.ndim == 1 else a


def _mp_gamma(Lm, N):
    d = Lm.rows
    T = sum(Lm[i, i] for i in range(d))
    return (1 + mp.mpf(1) / N) * Lm + T / N * mp.eye(d)


def _mp_loss(U, Lm, N, u):
    """Lemma 5.1 as printed, in mpmath."""
    Um, G = mp.matrix(U.tolist()), _mp_gamma(Lm, N)
    tr = lambda X: mp.fsum(X[i, i] for i in range(X.rows))  # noqa: E731
    u = mp.mpf(u)
    return u ** 2 / 2 * tr(G * Lm * Um * Lm * Um.T) - u * tr(Lm * Lm * Um.T) + tr(Lm) / 2


def _mp_lstar_full(Lm, N):
    tr = lambda X: mp.fsum(X[i, i] for i in range(X.rows))  # noqa: E731
    return tr(Lm) / 2 - tr(Lm * Lm * mp.inverse(_mp_gamma(Lm, N))) / 2


def _fro(X):
    return float(np.sqrt(np.sum(np.square(X, dtype=float))))


# ---- optimum, value, full-rank optimum -------------------------------------------------------------------------

@settings(max_examples=examples(40), deadline=None)
@given(covariances(), st.data())
@example((np.array([1.0, 0.3, 1e-3]), np.array([1.0, 0.3, 1e-3]), 3), None)  # was 1e-8 relative off at N = 1e9
def test_optimum_value_and_U(cov, data):
    """optimum / optimal_loss / full_rank_optimum / rank_r_optimum / saddle_losses: the value L*_r within
    4 (d + 4) eps relative for a diagonal Lambda, plus 4 d^2 eps lambda_max absolute for a rotated one (eigh's
    backward error); U* within 8 d eps max(v) (entrywise for a diagonal Lambda) plus, rotated, 8 d eps max(v)
    (d lambda_max max(v) + d lambda_max / gap_r) in Frobenius norm."""
    Lambda, lam0, d = cov
    N = _lengths(data.draw) if data is not None else 10 ** 9
    r = data.draw(st.integers(0, d)) if data is not None else 3
    opt = icl.optimum(Lambda, N, r)
    with mp.workdps(DPS):
        L = _as_matrix(Lambda)
        lam, Q = _mp_eig(L, lam0)
        T = mp.fsum(lam)
        v = [N / ((N + 1) * lam[i] + T) if i < r else mp.mpf(0) for i in range(d)]
        ref = T / 2 - mp.fsum(lam[i] ** 2 * v[i] for i in range(d)) / 2
        lmax = lam[0]
        bound = 4 * (d + 4) * EPS * ref + (0 if lam0 is not None else 4 * d * d * EPS * lmax) + mp.mpf(1e-300)
        assert record("icl.optimum (value)", abs(opt.value - ref) / bound, d=d, N=N, r=r) <= 1
        assert opt.value >= 0 and opt.value <= float(T) / 2 * (1 + 4 * d * EPS)
        assert record("icl.optimal_loss", abs(icl.optimal_loss(Lambda, N, r) - ref) / bound) <= 1
        if r == d:
            U, value = icl.full_rank_optimum(Lambda, N)
            ref_full = _mp_lstar_full(mp.matrix(L.tolist()), N)
            b = 4 * (d + 4) * EPS * ref_full + (0 if lam0 is not None else 4 * d * d * EPS * lmax) + mp.mpf(1e-300)
            assert record("icl.full_rank_optimum (value)", abs(value - ref_full) / b, d=d, N=N) <= 1
            assert np.array_equal(U, opt.U)
        vmax = max(v) if r else mp.mpf(0)
        gap = lam[r - 1] - lam[r] if 0 < r < d else None
        if gap is not None and gap <= (1e-6 if lam0 is None else 0) * lmax:
            return  # the rank-r optimum is not unique (or not well conditioned): values only
        Uref = Q * mp.diag(v) * Q.T
        err = mp.sqrt(mp.fsum((opt.U[i, j] - Uref[i, j]) ** 2 for i in range(d) for j in range(d)))
        extra = 0 if lam0 is not None else d * lmax * vmax + (d * lmax / gap if gap else 0)
        bu = 8 * d * EPS * vmax * (1 + extra) + mp.mpf(1e-300)
        assert record("icl.optimum (U)", err / bu, d=d, N=N, r=r) <= 1
        assert np.array_equal(icl.rank_r_optimum(Lambda, N, r), opt.U)


# ---- population loss, excess loss, gradients ---------------------------------------------------------------------

def _U_near(draw, d, Lambda, N):
    """A key-query matrix: the rank-r optimum (nearly: 1e-8 .. 0 relative perturbation), a random one, or 0."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    kind = draw(st.sampled_from(["optimum", "near", "random", "zero"]))
    if kind == "zero":
        return np.zeros((d, d))
    Uo = icl.rank_r_optimum(Lambda, N, draw(st.integers(0, d)))
    if kind == "optimum":
        return Uo
    scale = float(np.abs(Uo).max()) or 1.0
    if kind == "near":
        return Uo + 10.0 ** -draw(st.floats(4, 12)) * scale * rng.standard_normal((d, d))
    return scale * rng.standard_normal((d, d))


@settings(max_examples=examples(40), deadline=None)
@given(covariances(), st.data())
def test_population_and_excess_loss(cov, data):
    """population_loss = excess + L*_full and excess_loss (D.4) in the eigenbasis: |err| <= 8 (d + 4) eps (value +
    sqrt(excess S)), S = 0.5 sum_ij g_i (|u| sqrt(lam_i lam_j) |(Q^T U Q)_ij| + delta_ij lam_i v_i)^2 the size of the
    squared terms, plus for a rotated Lambda 4 d^2 eps (S_L + sqrt(excess S_L)), S_L = |u|^2 g_max lam_max^2
    ||U||_F^2 + |u| lam_max^2 ||U||_F + T (eigh's backward error through Lemma 5.1); never below 0 / L*."""
    Lambda, lam0, d = cov
    N = _lengths(data.draw)
    U = _U_near(data.draw, d, Lambda, N)
    u = data.draw(st.sampled_from([1.0, -1.0, 10.0 ** data.draw(st.floats(-3, 3))]))
    U = U / u
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss, ex = icl.population_loss(U, Lambda, N, u), icl.excess_loss(U, Lambda, N, u)
    assert ex >= 0 and loss >= icl.optimum(Lambda, N, d).value
    with mp.workdps(DPS):
        L = _as_matrix(Lambda)
        Lm = mp.matrix(L.tolist())
        ref, lstar = _mp_loss(U, Lm, N, u), _mp_lstar_full(Lm, N)
        ref_ex = ref - lstar
        lam, Q = _mp_eig(L, lam0)
        T = mp.fsum(lam)
        g = [(1 + mp.mpf(1) / N) * l + T / N for l in lam]
        Ut = Q.T * mp.matrix(U.tolist()) * Q
        S = mp.fsum(g[i] * (abs(u) * mp.sqrt(lam[i] * lam[j]) * abs(Ut[i, j])
                            + (N * lam[i] / ((N + 1) * lam[i] + T) if i == j else 0)) ** 2
                    for i in range(d) for j in range(d)) / 2
        SL = u * u * max(g) * lam[0] ** 2 * _fro(U) ** 2 + abs(u) * lam[0] ** 2 * _fro(U) + T
        rot = lambda e: 0 if lam0 is not None else 4 * d * d * EPS * (SL + mp.sqrt(max(e, 0) * SL))  # noqa: E731
        b = 8 * (d + 4) * EPS * (ref + mp.sqrt(max(ref_ex, 0) * S)) + rot(ref_ex) + mp.mpf(1e-300)
        assert record("icl.population_loss", abs(loss - ref) / b, d=d, N=N) <= 1
        b = 8 * (d + 4) * EPS * (ref_ex + mp.sqrt(max(ref_ex, 0) * S)) + rot(ref_ex) + mp.mpf(1e-300)
        assert record("icl.excess_loss", abs(ex - ref_ex) / b, d=d, N=N) <= 1


@settings(max_examples=examples(30), deadline=None)
@given(covariances(), st.data())
def test_gradients(cov, data):
    """population_gradient and factor_gradient: ||dU - ref||_F <= 4 (d + 4) eps (u^2 ||Gamma|| lam_max^2 ||U||_F
    + |u| lam_max^2) (the size of the two terms: the gradient cancels at a critical point) and |du - ref| <=
    4 (d + 4) eps (|u| ||Gamma|| lam_max^2 ||U||_F^2 + lam_max^2 ||U||_F); dA, dB the same times ||B||, ||A||."""
    Lambda, lam0, d = cov
    N = _lengths(data.draw)
    U = _U_near(data.draw, d, Lambda, N)
    u = data.draw(st.sampled_from([1.0, 10.0 ** data.draw(st.floats(-3, 3))]))
    dU, du = icl.population_gradient(U, Lambda, N, u)
    with mp.workdps(DPS):
        L = _as_matrix(Lambda)
        Lm, Um = mp.matrix(L.tolist()), mp.matrix(U.tolist())
        G = _mp_gamma(Lm, N)
        um = mp.mpf(u)
        GLUL = G * Lm * Um * Lm
        ref = um ** 2 * GLUL - um * Lm * Lm
        refu = um * mp.fsum((GLUL * Um.T)[i, i] for i in range(d)) - mp.fsum((Lm * Lm * Um.T)[i, i] for i in range(d))
        lmax = max(abs(float(x)) for x in np.linalg.eigvalsh(L)) * (1 + 4 * d * EPS)
        gmax = (1 + 1 / N) * lmax + float(np.trace(L)) / N
        nU = _fro(U)
        size = u * u * gmax * lmax ** 2 * nU + abs(u) * lmax ** 2
        err = mp.sqrt(mp.fsum((dU[i, j] - ref[i, j]) ** 2 for i in range(d) for j in range(d)))
        assert record("icl.population_gradient (dU)", err / (4 * (d + 4) * EPS * size + mp.mpf(1e-300)), d=d, N=N) <= 1
        sizeu = abs(u) * gmax * lmax ** 2 * nU ** 2 + lmax ** 2 * nU
        assert record("icl.population_gradient (du)", abs(du - refu) / (4 * (d + 4) * EPS * sizeu + mp.mpf(1e-300))) <= 1
        if d >= 1:
            A, B = np.linalg.qr(U)[0], np.linalg.qr(U)[1].T  # U = A B^T, r = d
            dA, dB, du2 = icl.factor_gradient(A, B, Lambda, N, u)
            refU = um ** 2 * G * Lm * mp.matrix((A @ B.T).tolist()) * Lm - um * Lm * Lm
            rA = refU * mp.matrix(B.tolist())
            errA = mp.sqrt(mp.fsum((dA[i, j] - rA[i, j]) ** 2 for i in range(d) for j in range(d)))
            assert record("icl.factor_gradient", errA / (8 * (d + 4) * EPS * size * _fro(B) + mp.mpf(1e-300))) <= 1


# ---- evaluation risks -------------------------------------------------------------------------------------------

def _mp_risk(A, Lm, w, M, sigma, beta):
    """The Theorem 5.4.2 form (with flips) as printed, in mpmath."""
    Am, wm = mp.matrix(A.tolist()), mp.matrix(w.tolist())
    Lw = Lm * wm
    nw = (wm.T * Lw)[0]
    ALA = Am * Lm * Am.T
    tr = mp.fsum((ALA * Lm)[i, i] for i in range(Lm.rows))
    return ((beta ** 2 + mp.mpf(1) / M) * (Lw.T * ALA * Lw)[0] + (mp.mpf(sigma) ** 2 + nw) / M * tr
            - 2 * beta * (Lw.T * Am.T * Lw)[0] + nw)


def _mp_risk_avg(A, Lm, M, sigma, beta):
    d = Lm.rows
    Am = mp.matrix(A.tolist())
    tr = lambda X: mp.fsum(X[i, i] for i in range(d))  # noqa: E731
    ALA = Am * Lm * Am.T
    T = tr(Lm)
    return ((beta ** 2 + mp.mpf(1) / M) * tr(Lm * ALA * Lm) + (mp.mpf(sigma) ** 2 + T) / M * tr(ALA * Lm)
            - 2 * beta * tr(Lm * Lm * Am) + T)


@settings(max_examples=examples(40), deadline=None)
@given(covariances(), st.data())
@example((np.array([1.0, 0.3, 1e-3]), np.array([1.0, 0.3, 1e-3]), 3), None)  # was 2.5e-5 relative off at M = 1e12
def test_eval_risks(cov, data):
    """eval_risk, eval_risk_flip and eval_risk_avg in the eigenbasis, as sums of squares: |err| <= 8 (d + 4) eps (R +
    sqrt(R S)), S = sum_i lam_i (|beta| sum_j |Ã_ji| lam_j |w~_j| + |w~_i|)^2 (|w~_i| -> 1 averaged), plus for a
    rotated Lambda 4 d^2 eps S_R, S_R the size of the printed terms ((|beta| + 1/M) lam^3 ||A||^2 ||w||^2 + (sigma^2 +
    lam ||w||^2) lam^2 ||A||_F^2 / M + 2 |beta| lam^2 ||A|| ||w||^2 + lam ||w||^2, lam = lam_max); never negative."""
    Lambda, lam0, d = cov
    if data is None:
        N = M = 10 ** 12
        U, u, sigma, rho, w = icl.rank_r_optimum(Lambda, N, d), 1.0, 0.0, 0.0, np.array([1.0, -0.5, 0.2])
    else:
        N, M = _lengths(data.draw), _lengths(data.draw)
        U = _U_near(data.draw, d, Lambda, N)
        u = data.draw(st.sampled_from([1.0, 10.0 ** data.draw(st.floats(-2, 2))]))
        sigma = data.draw(st.sampled_from([0.0, 1e-150, 10.0 ** data.draw(st.floats(-8, 3))]))
        rho = data.draw(st.sampled_from([0.0, 0.0, 1.0] + ([0.5] if M % 2 == 0 else [])))
        w = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1))).standard_normal(d)
        w = w * 10.0 ** data.draw(st.floats(-3, 3))
    R = icl.eval_risk(U / u, Lambda, w, M, sigma, u=u, rho=rho)
    Ra = icl.eval_risk_avg(U / u, Lambda, M, sigma, u=u, rho=rho)
    assert R >= 0 and Ra >= 0
    if sigma == 0:
        assert icl.eval_risk_flip(U / u, Lambda, w, M, rho, u=u) == R
    beta = 1 - 2 * rho
    A = u * (U / u)
    with mp.workdps(DPS):
        L = _as_matrix(Lambda)
        Lm = mp.matrix(L.tolist())
        ref, refa = _mp_risk(A, Lm, w, M, sigma, beta), _mp_risk_avg(A, Lm, M, sigma, beta)
        lam, Q = _mp_eig(L, lam0)
        At, wt = Q.T * mp.matrix(A.tolist()) * Q, Q.T * mp.matrix(w.tolist())
        S = mp.fsum(lam[i] * (abs(beta) * mp.fsum(abs(At[j, i]) * lam[j] * abs(wt[j]) for j in range(d))
                              + abs(wt[i])) ** 2 for i in range(d))
        Sa = mp.fsum(lam[i] * (abs(beta) * mp.fsum(abs(At[j, i]) * lam[j] for j in range(d)) + 1) ** 2
                     for i in range(d))
        lmax, nA, nw = lam[0], _fro(A), float(np.linalg.norm(w))
        SR = ((abs(beta) + mp.mpf(1) / M) * lmax ** 3 * nA ** 2 * nw ** 2 + (sigma ** 2 + lmax * nw ** 2) * lmax ** 2
              * nA ** 2 / M + 2 * abs(beta) * lmax ** 2 * nA * nw ** 2 + lmax * nw ** 2)
        SRa = ((abs(beta) + mp.mpf(1) / M) * lmax ** 3 * nA ** 2 * d + (sigma ** 2 + lmax * d) * lmax ** 2 * nA ** 2 / M
               + 2 * abs(beta) * lmax ** 2 * nA * d + lmax * d)
        rot = 0 if lam0 is not None else 4 * d * d * EPS
        b = 8 * (d + 4) * EPS * (ref + mp.sqrt(ref * S)) + rot * SR + mp.mpf(1e-300)
        assert record("icl.eval_risk", abs(R - ref) / b, d=d, M=M) <= 1
        b = 8 * (d + 4) * EPS * (refa + mp.sqrt(refa * Sa)) + rot * SRa + mp.mpf(1e-300)
        assert record("icl.eval_risk_avg", abs(Ra - refa) / b, d=d, M=M) <= 1


@settings(max_examples=examples(40), deadline=None)
@given(covariances(), st.data())
def test_optimum_risks(cov, data):
    """optimum_eval_risk, optimum_eval_risk_avg, large_n_eval_risk, rank_gap: sums of positive terms (1 - lam_i v_i
    as (lam_i + T)/((N + 1) lam_i + T)), relative error <= 8 (d + 6) eps for a diagonal Lambda; for a rotated one plus
    4 d^2 eps (1 + d lam_max/gap_r) lam_max (||w||^2 + sigma^2 d / M) (eigh's backward error and the s / xi split)
    and 2 sum_{i<=r} N T delta / D_i^2 (lam_max (||w||^2 + d)(1 + 2/M) + sigma^2/M), D_i = (N + 1) lam_i + T, delta = 4 d
    eps lam_max (the eigenvalue error's effect on lam_i v_i: ill-conditioned where N lam_i ~ T for a small lam_i),
    tested where gap_r >= 1e-6 lam_max. Against the printed Theorem 5.4.2 risk at U* in mpmath."""
    Lambda, lam0, d = cov
    N, M = _lengths(data.draw), _lengths(data.draw)
    r = data.draw(st.integers(0, d))
    sigma = data.draw(st.sampled_from([0.0, 1e-150, 10.0 ** data.draw(st.floats(-8, 3))]))
    w = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1))).standard_normal(d) * 10.0 ** data.draw(
        st.floats(-3, 3))
    R, Ra = icl.optimum_eval_risk(Lambda, N, r, w, M, sigma), icl.optimum_eval_risk_avg(Lambda, N, r, M, sigma)
    with mp.workdps(DPS):
        L = _as_matrix(Lambda)
        Lm = mp.matrix(L.tolist())
        lam, Q = _mp_eig(L, lam0)
        T = mp.fsum(lam)
        gap = lam[r - 1] - lam[r] if 0 < r < d else lam[0]
        if gap <= (1e-6 if lam0 is None else 0) * lam[0]:
            return  # tied: the s / xi split is the implementation's choice
        Uref = Q * mp.diag([N / ((N + 1) * lam[i] + T) if i < r else 0 for i in range(d)]) * Q.T
        Uf = np.array([[float(Uref[i, j]) for j in range(d)] for i in range(d)])
        # the reference at the exact U*: the risk is quadratic in U, evaluate in mpmath on the mp matrix
        Am = Uref
        wm = mp.matrix(w.tolist())
        Lw = Lm * wm
        nw = (wm.T * Lw)[0]
        ALA = Am * Lm * Am.T
        tr = mp.fsum((ALA * Lm)[i, i] for i in range(d))
        ref = (1 + mp.mpf(1) / M) * (Lw.T * ALA * Lw)[0] + (mp.mpf(sigma) ** 2 + nw) / M * tr - 2 * (Lw.T * Am.T * Lw)[0] + nw
        refa = ((1 + mp.mpf(1) / M) * mp.fsum((Lm * ALA * Lm)[i, i] for i in range(d)) + (mp.mpf(sigma) ** 2 + T) / M * tr
                - 2 * mp.fsum((Lm * Lm * Am)[i, i] for i in range(d)) + T)
        del Uf
        extra = 0 if lam0 is not None else 4 * d * d * EPS * (1 + d * lam[0] / gap) * lam[0] * (
            float(w @ w) + sigma ** 2 * d / M + d)
        if lam0 is None:  # eigh's error 4 d eps lam_max in lam_i moves lam_i v_i by up to N T delta / D_i^2
            delta = 4 * d * EPS * lam[0]
            cond = mp.fsum(N * T * delta / ((N + 1) * lam[i] + T) ** 2 for i in range(r))
            extra += 2 * cond * (lam[0] * (float(w @ w) + d) * (1 + mp.mpf(2) / M) + mp.mpf(sigma) ** 2 / M)
        assert record("icl.optimum_eval_risk", abs(R - ref) / (8 * (d + 6) * EPS * ref + extra + mp.mpf(1e-300)),
                      d=d, N=N, M=M, r=r) <= 1
        assert record("icl.optimum_eval_risk_avg", abs(Ra - refa) / (8 * (d + 6) * EPS * refa + extra + mp.mpf(1e-300)),
                      d=d, N=N, M=M, r=r) <= 1
        if r >= 1:
            approx, ratio = icl.large_n_eval_risk(Lambda, N, r, w, M, sigma)
            wt = Q.T * wm
            ns = mp.fsum(lam[i] * wt[i] ** 2 for i in range(r))
            nxi = mp.fsum(lam[i] * wt[i] ** 2 for i in range(r, d))
            refl = nxi + ((r + 1) * ns + r * nxi + r * mp.mpf(sigma) ** 2) / M
            assert record("icl.large_n_eval_risk", abs(approx - refl) / (8 * (d + 6) * EPS * refl + extra
                                                                          + mp.mpf(1e-300))) <= 1
            assert abs(ratio - N * lam[r - 1] / T) <= 4 * EPS * N * lam[r - 1] / T + (
                0 if lam0 is not None else 4 * d * d * EPS * N * lam[0] / T)
        r2 = data.draw(st.integers(r, d))
        s = np.random.default_rng(1).standard_normal(r)
        gapv = icl.rank_gap(Lambda, N, r, r2, s, M, sigma)
        refg = (mp.fsum(lam[i] * mp.mpf(s[i]) ** 2 for i in range(r)) + mp.mpf(sigma) ** 2) / M * mp.fsum(
            (N * lam[i] / ((N + 1) * lam[i] + T)) ** 2 for i in range(r, r2))
        assert gapv >= 0
        assert record("icl.rank_gap", abs(gapv - refg) / (8 * (d + 6) * EPS * refg + extra + mp.mpf(1e-300))) <= 1


@settings(max_examples=examples(30), deadline=None)
@given(covariances(), st.integers(1, 10 ** 6))
def test_spectrum_and_gamma(cov, N):
    """spectrum: exact for a diagonal Lambda (as given or as its spectrum), |lam_i - ref| <= 4 d eps lam_max for a
    rotated one (eigh); gamma_matrix: each entry within 4 (d + 2) eps of (1 + 1/N)|Lambda_ij| + T/N delta_ij."""
    Lambda, lam0, d = cov
    lam, Q = icl.spectrum(Lambda)
    assert np.all(lam >= 0) and np.all(np.diff(lam) <= 0)
    G = icl.gamma_matrix(Lambda, N)
    with mp.workdps(DPS):
        L = _as_matrix(Lambda)
        ref, _ = _mp_eig(L, lam0)
        for i in range(d):
            b = 0 if lam0 is not None else 4 * d * EPS * ref[0]
            assert abs(lam[i] - ref[i]) <= b
            record("icl.spectrum", abs(lam[i] - ref[i]) / (b + mp.mpf(1e-300)) if b else 0)
        T = mp.fsum(mp.mpf(float(L[i, i])) for i in range(d))
        for i in range(d):
            for j in range(d):
                e = (1 + mp.mpf(1) / N) * mp.mpf(float(L[i, j])) + (T / N if i == j else 0)
                size = (1 + mp.mpf(1) / N) * abs(mp.mpf(float(L[i, j]))) + (T / N if i == j else 0)
                assert record("icl.gamma_matrix", abs(G[i, j] - e) / (4 * (d + 2) * EPS * size + mp.mpf(1e-300))) <= 1


# ---- sparse parity ----------------------------------------------------------------------------------------------

_GAMMAS = st.one_of(st.sampled_from([1e-300, 1e-16, 0.125, 0.25 - 2 ** -54, 0.1]), st.floats(1e-12, 0.25,
                                                                                             exclude_max=True))


@settings(max_examples=examples(40), deadline=None)
@given(_GAMMAS, st.one_of(st.integers(2, 40), st.integers(2, 10 ** 7)))
def test_pattern_probs_and_pT_max(gamma, d):
    """pattern_probs: each probability one rounding of 1/4 +- gamma (relative 2^-53; 1/4 - gamma exact for gamma >=
    1/8), in [0, 1]; pT_max: relative error <= 4 eps, in (0, 1/2], against exact rationals."""
    pats, probs = icl.pattern_probs(gamma)
    g = Fraction(gamma)
    for p, e in zip(probs, (Fraction(1, 4) + g, Fraction(1, 4), Fraction(1, 4), Fraction(1, 4) - g)):
        assert 0 <= p <= 1
        assert record("icl.pattern_probs", abs(Fraction(p) - e) / (Fraction(EPS) / 2 * e)) <= 1
    pm = icl.pT_max(d, gamma)
    e = (Fraction(1, 4) - g) / (Fraction(d * (d - 1), 2) * (Fraction(1, 4) + g) + Fraction(1, 4) - g)
    assert 0 < pm <= 0.5
    assert record("icl.pT_max", abs(Fraction(pm) - e) / (4 * Fraction(EPS) * e)) <= 1


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(1, 12), _GAMMAS, st.data())
def test_constructions(nu2, gamma, data):
    """paper_construction (and small_model_heads): a exact, every V entry one rounding of +-(1 or nu)/(4 gamma);
    four_head_counterexample: x exact, V one rounding of x/(2 gamma), C within 2 roundings; frobenius_cost relative
    <= (size + 2) eps / 2 of the exact sum of squares; noise_energy_ratio exact."""
    nu1 = data.draw(st.sampled_from([None] + list(range(1, nu2 + 1))))
    a, V = icl.paper_construction(nu2, gamma, nu1)
    g = Fraction(gamma)
    nu = nu2 if nu1 is None else nu1
    heads = np.arange(2 * (nu2 + 1)) if nu1 is None else icl.small_model_heads(nu1, nu2)
    for row, n in enumerate(int(h) for h in heads):
        base = n % (nu2 + 1)
        sign = 1 if n < nu2 + 1 else -1
        assert a[row] == (1.0 if base == nu2 else -1.0)
        for l in range(0, 2 ** nu2, max(1, 2 ** nu2 // 16)):
            e = sign * (Fraction(-nu) if base == nu2 else Fraction(2 * ((l >> base) & 1) - 1)) / (4 * g)
            assert record("icl.paper_construction", abs(Fraction(V[row, l]) - e) / (Fraction(EPS) / 2 * abs(e))) <= 1
    if nu1 is not None:
        assert icl.noise_energy_ratio(nu1, nu2) == (nu1 + 1) / (nu2 + 1)
    d = data.draw(st.integers(2, 60))
    a4, V4 = icl.four_head_counterexample(d, gamma)
    x = [Fraction(2 * l - (d - 1), 2) for l in range(d)]
    C = (1 + max(abs(x[i] + x[j]) for i in range(d) for j in range(d) if i != j)) / (4 * g)
    for l in range(d):
        for row, e in enumerate((x[l] / (2 * g), -x[l] / (2 * g), C, -C)):
            if e:
                assert record("icl.four_head_counterexample", abs(Fraction(V4[row, l]) - e) / (Fraction(EPS) * abs(e)),
                              d=d) <= 1
            else:
                assert V4[row, l] == 0
    fc = icl.frobenius_cost(V4)
    e = sum(Fraction(v) ** 2 for v in V4.ravel())
    if e > Fraction(np.finfo(float).max):
        assert fc == math.inf  # beyond the float range: the correctly rounded result
        return
    assert record("icl.frobenius_cost", abs(Fraction(fc) - e) / ((V4.size + 2) * Fraction(EPS) / 2 * e)) <= 1


def _hinge_exact(problem, a, V):
    """The N -> inf hinge loss (population_hinge) over every task, pattern and rest pattern, in exact rationals."""
    d, g = problem.d, Fraction(problem.gamma)
    S1, S2 = icl.task_sets(d, problem.k)
    probs = (Fraction(1, 4) + g, Fraction(1, 4), Fraction(1, 4), Fraction(1, 4) - g)
    pats = ((1, 1), (1, -1), (-1, 1), (-1, -1))
    af = [Fraction(x) for x in a]
    Vf = [[[Fraction(x) for x in row] for row in head] for head in (V if V.ndim == 3 else
                                                                   [np.diag(v) for v in V])]

    def task(i, j):
        others = [l for l in range(d) if l not in (i, j)]
        rests = list(itertools.product((-1, 1), repeat=len(others))) if V.ndim == 3 else [(-1,) * len(others)]
        tot = Fraction(0)
        for (fi, fj), p in zip(pats, probs):
            acc = Fraction(0)
            for rest in rests:
                phi = [0] * d
                phi[i], phi[j] = fi, fj
                for l, s in zip(others, rest):
                    phi[l] = s
                gv = sum(an * 2 * g * max(Fraction(0), sum((Vn[i][l] + Vn[j][l]) * phi[l] for l in range(d)))
                         for an, Vn in zip(af, Vf))
                acc += max(Fraction(0), 1 - fi * fj * gv)
            tot += p * acc / len(rests)
        return tot

    l1 = sum(task(i, j) for i, j in S1) / len(S1)
    l2 = sum(task(i, j) for i, j in S2) / len(S2) if len(S2) else Fraction(0)
    pT = Fraction(problem.pT) if len(S2) else Fraction(0)
    return (1 - pT) * l1 + pT * l2


@settings(max_examples=examples(8), deadline=None)
@given(st.integers(2, 5), st.integers(1, 4), _GAMMAS, st.booleans(), st.integers(0, 2 ** 32 - 1),
       st.sampled_from([0.0, 1e-3, 10.0]), st.data())
def test_population_hinge_and_margins(d, m, gamma, full, seed, log_v, data):
    """population_hinge (diagonal and full heads) and margins against exact rationals: absolute error <= (R + d + m
    + 8) eps (1 + 2 gamma sum_n |a_n| ||V^(n)_i. + V^(n)_j.||_1, max over tasks) with R = 64 the Gray-code steps
    between exact recomputations (0 for diagonal heads); margins the same without the 1."""
    k = data.draw(st.integers(2, d))
    pT = data.draw(st.sampled_from([0.0, 0.3 * icl.pT_max(d, gamma)]))
    problem = icl.ParityProblem(d=d, k=k, gamma=gamma, pT=pT)
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, m)
    V = rng.standard_normal((m, d, d) if full else (m, d)) * 10.0 ** log_v / gamma
    got = icl.population_hinge(problem, a, V)
    ref = _hinge_exact(problem, a, V)
    Vd = V if full else np.stack([np.diag(v) for v in V])
    size = 1 + 2 * gamma * max(sum(abs(a[n]) * np.abs(Vd[n, i] + Vd[n, j]).sum() for n in range(m))
                               for i in range(d) for j in range(d))
    bound = ((64 if full else 0) + d + m + 8) * Fraction(EPS) * Fraction(size)
    assert 0 <= got
    assert record("icl.population_hinge", abs(Fraction(got) - ref) / bound, d=d, full=full) <= 1
    if not full:
        tasks, vals = icl.margins(problem, a, V)
        g = Fraction(gamma)
        for (i, j), row in zip(tasks, vals):
            for (fi, fj), val in zip(((1, 1), (1, -1), (-1, 1), (-1, -1)), row):
                e = fi * fj * sum(Fraction(a[n]) * max(Fraction(0), 2 * g * (Fraction(V[n, i]) * fi + Fraction(V[n, j])
                                                                                * fj)) for n in range(m))
                assert record("icl.margins", abs(Fraction(val) - e) / ((d + m + 8) * Fraction(EPS) * Fraction(size))) <= 1


@pytest.mark.parametrize("d", [12, 16])
def test_full_hinge_gray_code_drift(d):
    """_full_task_loss (population_hinge's full-head kernel) at d beyond the rational test: against correctly rounded
    pre-activations (math.fsum) and sums; the running Gray-code sums drifted by 52 eps of the size at d = 18 before
    the recomputation every 64 steps (now 2.7)."""
    from popdyn.models.icl import parity as P
    rng = np.random.default_rng(d)
    m, tg, (i, j) = 3, 0.2, (0, 1)
    S, a = rng.standard_normal((m, d)), np.array([1.0, -0.7, 0.4])
    got = P._full_task_loss(a, S, i, j, 1.0, -1.0, tg)
    rest = [l for l in range(d) if l not in (i, j)]
    tot = []
    for c in range(1 << (d - 2)):
        gc = c ^ (c >> 1)
        ph = [1.0 if (gc >> b) & 1 else -1.0 for b in range(d - 2)]
        pre = [math.fsum([S[n, i], -S[n, j]] + [ph[b] * S[n, rest[b]] for b in range(d - 2)]) for n in range(m)]
        tot.append(max(0.0, 1.0 + math.fsum(a[n] * tg * pre[n] for n in range(m) if pre[n] > 0)))
    ref = math.fsum(tot) / len(tot)
    size = 1 + sum(abs(a[n]) * tg * np.abs(S[n]).sum() for n in range(m))
    assert record("icl.population_hinge (full, Gray code)", abs(got - ref) / ((64 + d + m + 8) * EPS * size), d=d) <= 1


@settings(max_examples=examples(15), deadline=None)
@given(st.integers(2, 7), st.integers(2, 7), st.integers(1, 10 ** 6), st.integers(0, 2 ** 32 - 1))
def test_noise_energy_and_query_design(m, d, M, seed):
    """noise_energy: rank(D)/M exactly for integer heads (rank by exact rational elimination) and the paper's
    construction; query_design: features and labels exact, weights within 4 eps relative of the exact rationals,
    summing to 1 within d^2 eps."""
    rng = np.random.default_rng(seed)
    V = rng.integers(-2, 3, (m, d)).astype(float)
    if m > 1:
        V[-1] = V[0] + V[1 % m]  # a dependent row
    rows = [[Fraction(int(x)) for x in r] for r in V.T]
    rank, col = 0, 0
    while rank < len(rows) and col < m:
        piv = next((k for k in range(rank, len(rows)) if rows[k][col] != 0), None)
        if piv is not None:
            rows[rank], rows[piv] = rows[piv], rows[rank]
            for k in range(len(rows)):
                if k != rank and rows[k][col] != 0:
                    f = rows[k][col] / rows[rank][col]
                    rows[k] = [x - f * y for x, y in zip(rows[k], rows[rank])]
            rank += 1
        col += 1
    assert icl.noise_energy(V, M) == rank / M
    nu2 = min(d, 6)
    assert icl.noise_energy(icl.paper_construction(nu2, 0.1)[1], M) == (nu2 + 1) / M
    gamma = 0.1
    k = min(d, 3)
    problem = icl.ParityProblem(d=d, k=k, gamma=gamma, pT=0.5 * icl.pT_max(d, gamma))
    X, y, w = icl.query_design(problem)
    S1, S2 = icl.task_sets(d, k)
    g, pT = Fraction(gamma), Fraction(problem.pT)
    probs = {(1, 1): Fraction(1, 4) + g, (1, -1): Fraction(1, 4), (-1, 1): Fraction(1, 4), (-1, -1): Fraction(1, 4) - g}
    for x, lab, wt in zip(X, y, w):
        (i, j) = np.flatnonzero(x)
        fi, fj = int(x[i]), int(x[j])
        assert lab == fi * fj
        pt = (Fraction(1) if not len(S2) else 1 - pT) / len(S1) if (i < k and j < k) else pT / len(S2)
        e = 2 * pt * probs[(fi, fj)]
        assert record("icl.query_design", abs(Fraction(wt) - e) / (4 * Fraction(EPS) * e)) <= 1
    assert abs(w.sum() - 1) <= d * d * EPS


# ---- gradient dynamics ------------------------------------------------------------------------------------------

@settings(max_examples=examples(8), deadline=None)
@given(st.lists(st.floats(0.2, 1.0), min_size=1, max_size=3), st.integers(1, 1000), st.floats(-2, 0),
       st.floats(0.5, 20))
def test_gradient_flow_logistic(lam, N, log_a0, horizon):
    """gradient_flow at its default tolerances (rtol 1e-10, atol 1e-12) from A_0 = B_0 = diag(a_0) on a diagonal
    Lambda, where every U_ii follows the logistic U' = 2 lam_i^2 U (1 - g_i U) (g_i the eigenvalues of Gamma):
    relative error of U_ii(t) <= 1e3 rtol over horizons up to 20 / lam_min^2."""
    d = len(lam)
    a0 = np.full(d, 10.0 ** log_a0)
    T = horizon / min(lam) ** 2
    traj = icl.gradient_flow(lam, N, np.diag(a0), np.diag(a0), [0.0, T / 3, T])
    A, B, _ = icl.flow_parameters(traj.y, d, d)
    with mp.workdps(40):
        tr = mp.fsum(mp.mpf(x) for x in lam)
        for k, t in enumerate((0.0, T / 3, T)):
            U = A[k] @ B[k].T
            for i in range(d):
                li = mp.mpf(lam[i])
                g = (1 + mp.mpf(1) / N) * li + tr / N
                U0 = mp.mpf(a0[i]) ** 2
                ref = (1 / g) / (1 + (1 / (g * U0) - 1) * mp.exp(-2 * li ** 2 * mp.mpf(t)))
                assert record("icl.gradient_flow", abs(U[i, i] - ref) / (1e3 * 1e-10 * ref), t=t) <= 1


@settings(max_examples=examples(8), deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 100), st.integers(0, 200), st.integers(0, 2 ** 32 - 1),
       st.booleans())
def test_gradient_descent(d, r, N, T, seed, train_u):
    """gradient_descent for a stable step (lr = 0.5 / curvature): ||state_T - exact|| <= 8 eps (T + 1)(d + r + 2)
    max_t ||state_t||, exact = the same iteration in mpmath at 40 digits (each step's rounding adds up; the
    iteration contracts near the optimum and the small start grows with its own perturbations)."""
    rng = np.random.default_rng(seed)
    lam = np.sort(rng.uniform(0.1, 1.0, d))[::-1]
    A0, B0 = icl.initial_factors(d, r, 0.1, seed)
    lr = 0.5 / (2 * float(((1 + 1 / N) * lam[0] + lam.sum() / N) * lam[0] ** 2) * 4 + 1)
    A, B, u = icl.gradient_descent(lam, N, A0, B0, lr, [T], train_u=train_u)
    with mp.workdps(40):
        L = mp.diag([mp.mpf(x) for x in lam])
        G = _mp_gamma(L, N)
        GL, L2 = G * L, L * L
        Am, Bm, um = mp.matrix(A0.tolist()), mp.matrix(B0.tolist()), mp.mpf(1)
        big = mp.mpf(0)
        e = mp.mpf(lr)
        for _ in range(T):
            U = Am * Bm.T
            GLUL = GL * U * L
            dU = um * um * GLUL - um * L2
            du = (um * mp.fsum((GLUL[i, j] * U[i, j]) for i in range(d) for j in range(d))
                  - mp.fsum(L2[i, j] * U[i, j] for i in range(d) for j in range(d))) if train_u else 0
            Am, Bm, um = Am - e * dU * Bm, Bm - e * dU.T * Am, um - e * du
            big = max(big, mp.norm(Am), mp.norm(Bm), abs(um))
        err = mp.sqrt(mp.fsum((A[-1][i, j] - Am[i, j]) ** 2 + (B[-1][i, j] - Bm[i, j]) ** 2 for i in range(d)
                              for j in range(r)) + (u[-1] - um) ** 2)
        assert record("icl.gradient_descent", err / (8 * EPS * (T + 1) * (d + r + 2) * max(big, 1) + mp.mpf(1e-300)),
                      T=T) <= 1
