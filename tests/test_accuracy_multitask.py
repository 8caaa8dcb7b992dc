"""Declared accuracy of popdyn.models.multitask over Hypothesis searches that reach the corners of the model
(||w_par||/s from 1e-3 to 1e8, s from 1e-3 to 1e3, coordinates exactly 0, sign patterns that cancel the two terms
of M and S, eta from 1e-150 to 1e150, r to 2000, binomials far past float64, B to 1e300, layers scaled by 1e-200 and
1e200, task tables of every kind: the Hadamard universe, random labelings, constants, dictators), against
independent references: the orthant (asin) closed forms of q and p_k in mpmath at 50 digits (the code uses acos
and atan2 forms, and the float pipeline), every downstream sum over sign patterns evaluated term by term in mpmath
with the task kernel in exact rationals, Walsh statistics in exact rationals, singular values in mpmath, and the
bound shapes in mpmath from the exact integer inputs. Moment-based outputs declare an absolute error relative to
their "absolute scale": the same expression with every term replaced by its absolute value and p_k by p_k + 1/100
(this carries sign_moments' audited accuracy, q relative 1e-12 and p absolute 1e-14, through the sums)."""
import itertools
import math
import warnings
from fractions import Fraction

import mpmath as mp
import numpy as np
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from popdyn import RegimeWarning
from popdyn.models import multitask as mt
from popdyn.models.multitask import bounds as MB

from ._accuracy import EPS, examples, record

DPS = 50
C2P = None  # sqrt(2/pi) at DPS, set lazily


def _mpf(x):
    return mp.mpf(float(x))


# ---- references --------------------------------------------------------------------------------------------------

def mp_qp(w, s):
    """q(u), p_k(u) of one neuron for r <= 3 from the orthant closed forms in the asin form (mpmath)."""
    r = len(w)
    U = list(itertools.product([-1, 1], repeat=r))
    W, S = [_mpf(x) for x in w], _mpf(s)
    nw = mp.sqrt(mp.fsum(x * x for x in W) + S * S)
    nk = [mp.sqrt(mp.fsum(W[l] ** 2 for l in range(r) if l != k) + S * S) for k in range(r)]
    q, p = [], []
    for u in U:
        if r == 1:
            orth = mp.mpf(1) / 2
        elif r == 2:
            orth = mp.mpf(1) / 4 + mp.asin(-u[0] * u[1] * W[0] * W[1] / (nk[0] * nk[1])) / (2 * mp.pi)
        else:
            orth = mp.mpf(1) / 8 + mp.fsum(mp.asin(-u[k] * u[l] * W[k] * W[l] / (nk[k] * nk[l]))
                                           for k, l in ((0, 1), (0, 2), (1, 2))) / (4 * mp.pi)
        q.append(2 ** r * S / nw / mp.sqrt(2 * mp.pi) * orth)
        p.append([mp.mpf(1) / 2 + mp.fsum(mp.asin(u[l] * W[l] / nk[k]) for l in range(r) if l != k) / mp.pi
                  for k in range(r)])
    return U, q, p


def mp_MS(w, s, absolute=False):
    """M_par (P, r), q (P,), S (P,) in mpmath; ``absolute``: the absolute scale (|terms|, p_k + 1/100)."""
    U, q, p = mp_qp(w, s)
    c = mp.sqrt(2 / mp.pi)
    W, Sm = [_mpf(x) for x in w], _mpf(s)
    if absolute:
        U = [[1] * len(w) for _ in U]
        W = [abs(x) for x in W]
        p = [[x + mp.mpf(1) / 100 for x in row] for row in p]
    M = [[u[k] * c * p[i][k] + W[k] / Sm * q[i] for k in range(len(w))] for i, u in enumerate(U)]
    S = [mp.fsum(W[k] * M[i][k] for k in range(len(w))) + Sm * q[i] for i in range(len(U))]
    return M, q, S


@st.composite
def neurons(draw, r_max=3):
    """(w_par (r,), s): ||w_par||/s in 10^[-3, 8], s in 10^[-3, 3], some coordinates exactly 0, some equal."""
    r = draw(st.integers(1, r_max))
    s = 10.0 ** draw(st.floats(-3, 3))
    ratio = 10.0 ** draw(st.one_of(st.floats(-3, 8), st.sampled_from([-3.0, 0.0, 4.0, 8.0])))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    w = rng.standard_normal(r)
    if r > 1 and draw(st.booleans()):
        w[draw(st.integers(0, r - 1))] = 0.0
    if r > 1 and draw(st.booleans()):
        w[1] = -w[0] if draw(st.booleans()) else w[0]
    assume(np.linalg.norm(w) > 0)
    return w * (ratio * s / np.linalg.norm(w)), s


# ---- halfnormal_cf -----------------------------------------------------------------------------------------------

@settings(max_examples=examples(40), deadline=None)
@given(st.one_of(st.floats(-1e6, 1e6), st.floats(-40, 40), st.floats(-1e-8, 1e-8)))
@example(1e-300)
@example(38.6)
def test_halfnormal_cf(beta):
    """halfnormal_cf: |psi - psi_ref| <= 2e-15 |psi_ref| at every real beta, against e^(-b^2/2) + i sqrt(2/pi)
    e^(-b^2/2) erfi(b/sqrt 2) in mpmath (the erfi form, not Dawson's function)."""
    got = complex(mt.halfnormal_cf(beta))
    with mp.workdps(DPS):
        b = _mpf(beta)
        e = mp.exp(-b * b / 2)
        ref = mp.mpc(e, e * mp.erfi(b / mp.sqrt(2)))
        err = abs(mp.mpc(got.real, got.imag) - ref) / abs(ref)
    assert record("halfnormal_cf", err / 2e-15, beta=beta) <= 1


# ---- conditional_moments, A_matrix -------------------------------------------------------------------------------

@settings(max_examples=examples(40), deadline=None)
@given(neurons())
@example((np.array([2.90862548e+08]), 2.9923428941730226))           # was S = -2.0e-8 (true 6.1e-9)
@example((np.array([-2.57702610e+08, 0.0, -1.92223996e+08]), 28.186169459619848))  # was S = -2.3e-9
def test_conditional_moments(neuron):
    """conditional_moments: M_par, m_perp = q and S within 1e-12 of their absolute scale (module docstring), u_k M_k
    >= 0 and S >= 0 (before: S = -2.0e-8 where the truth is 6.1e-9, by cancellation at ||w_par||/s = 1e8)."""
    w, s = neuron
    M, mq, S = mt.conditional_moments(w, s)
    r = len(w)
    U = mt.sign_patterns(r)
    assert np.all(S >= 0) and np.all(U * M[0] >= 0) and np.all(mq > 0)
    with mp.workdps(DPS):
        Mr, qr, Sr = mp_MS(w, s)
        Ma, _, Sa = mp_MS(w, s, absolute=True)
        for i in range(len(U)):
            for k in range(r):
                record("conditional_moments.M_par", abs(_mpf(M[0, i, k]) - Mr[i][k]) / (1e-12 * Ma[i][k]), w=w.tolist(), s=s)
            record("conditional_moments.m_perp", abs(_mpf(mq[0, i]) - qr[i]) / (1e-12 * qr[i]), w=w.tolist(), s=s)
            assert record("conditional_moments.S", abs(_mpf(S[0, i]) - Sr[i]) / (1e-12 * Sa[i]), w=w.tolist(),
                          s=s) <= 1
        from ._accuracy import WORST
        assert WORST["conditional_moments.M_par"][0] <= 1 and WORST["conditional_moments.m_perp"][0] <= 1


@settings(max_examples=examples(25), deadline=None)
@given(neurons())
def test_A_matrix(neuron):
    """A_matrix (reduced): every entry within 1e-12 of its absolute scale E_u[|M_a| |M_b|] (M at its absolute
    scale), against E_u[M M^T] in mpmath."""
    w, s = neuron
    r = len(w)
    A = mt.A_matrix(np.r_[w, s], r)
    with mp.workdps(DPS):
        Mr, qr, _ = mp_MS(w, s)
        Ma, qa, _ = mp_MS(w, s, absolute=True)
        P = len(qr)
        rows = [Mr[i] + [qr[i]] for i in range(P)]
        rows_a = [Ma[i] + [qa[i]] for i in range(P)]
        for a in range(r + 1):
            for b in range(r + 1):
                ref = mp.fsum(rows[i][a] * rows[i][b] for i in range(P)) / P
                sc = mp.fsum(rows_a[i][a] * rows_a[i][b] for i in range(P)) / P
                assert record("A_matrix", abs(_mpf(A[a, b]) - ref) / (1e-12 * sc), w=w.tolist(), s=s) <= 1


@settings(max_examples=examples(20), deadline=None)
@given(neurons(), st.floats(1e-3, 1e3))
def test_A_blocks_leading(neuron, scale):
    """A_blocks_leading: relative error <= 4 eps per entry (perp-perp: absolute <= 4 eps (1 + eps_w^2)/(2 pi)),
    against the closed form in mpmath."""
    w, s = neuron
    r = len(w)
    A = mt.A_blocks_leading(np.r_[w, s] * scale, r)
    with mp.workdps(DPS):
        ws, ss = [_mpf(x) * _mpf(scale) for x in w], _mpf(s) * _mpf(scale)
        for k in range(r):
            ref = ws[k] / (2 * mp.pi * ss)
            assert record("A_blocks_leading", abs(_mpf(A[k, r]) - ref) / (4 * EPS * abs(ref) + 1e-300)) <= 1
        e2 = mp.fsum(x * x for x in ws) / ss ** 2
        ref = (1 - e2) / (2 * mp.pi)
        assert record("A_blocks_leading", abs(_mpf(A[r, r]) - ref) / (4 * EPS * (1 + e2) / (2 * mp.pi))) <= 1


# ---- heads, loss, gradient, maps ---------------------------------------------------------------------------------

@st.composite
def layers(draw, r_max=3):
    """(W (m, d), r, tasks or None, eta): m <= 4 neurons from :func:`neurons` (random w_perp directions),
    tasks None (Hadamard universe), Hadamard, random labelings, constant or dictators; eta in 10^[-3, 2]."""
    r = draw(st.integers(1, r_max))
    m = draw(st.integers(1, 4))
    extra = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    rows = []
    for _ in range(m):
        w, s = _neuron_r(draw, r)
        v = rng.standard_normal(extra)
        rows.append(np.r_[w, s * v / np.linalg.norm(v)])
    kind = draw(st.sampled_from(["none", "hadamard", "random", "constant", "dictators"]))
    tasks = {"none": None, "hadamard": mt.TaskSet.hadamard(r),
             "random": mt.TaskSet.random_labelings(r, draw(st.integers(1, 6)), seed=int(rng.integers(1 << 30))),
             "constant": mt.TaskSet(np.ones((1, 2 ** r))), "dictators": mt.TaskSet.dictators(r)}[kind]
    eta = 10.0 ** draw(st.floats(-3, 2))
    return np.array(rows), r, tasks, eta


def _neuron_r(draw, r):
    s = 10.0 ** draw(st.floats(-3, 3))
    ratio = 10.0 ** draw(st.one_of(st.floats(-3, 8), st.sampled_from([-3.0, 0.0, 8.0])))
    w = np.array(draw(st.lists(st.floats(-1, 1, allow_subnormal=False), min_size=r, max_size=r)))
    if not np.linalg.norm(w) > 1e-3:
        w = np.ones(r)
    return w * (ratio * s / np.linalg.norm(w)), s


def _beta(tasks, r):
    """beta_bar in exact rationals (identity for the universe)."""
    P = 2 ** r
    if tasks is None:
        return [[Fraction(int(i == j)) for j in range(P)] for i in range(P)]
    F = tasks.F.astype(int)
    T = F.shape[0]
    return [[Fraction(int(F[:, i] @ F[:, j]), T) for j in range(P)] for i in range(P)]


@settings(max_examples=examples(25), deadline=None)
@given(layers())
def test_heads_loss_gradient(layer):
    """head_after_step, population_gradient (lambda_a = 1/eta): absolute error <= 1e-12 times the absolute scale
    (eta 2^-r sum_u |S(u)| at the absolute scale, times |M| for the gradient); post_head_loss: absolute error
    <= 1e-12 (1 + the absolute scale of its sum); a negative loss warns (RegimeWarning: outside the linear
    regime); against the sign-pattern sums in mpmath with exact task tables."""
    W, r, tasks, eta = layer
    ts = tasks if tasks is not None else mt.TaskSet.hadamard(r)
    F = ts.F.astype(int)
    T, P = F.shape
    heads = mt.head_after_step(W, ts, eta)
    grad = mt.population_gradient(W, ts, eta)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss = mt.post_head_loss(W, ts, eta)
    beta = _beta(ts, r)
    with mp.workdps(DPS):
        E = _mpf(eta)
        tot, tot_a = mp.mpf(0), mp.mpf(0)
        for j, row in enumerate(W):
            w, s = row[:r], float(np.linalg.norm(row[r:]))
            Mr, qr, Sr = mp_MS(w, s)
            Ma, qa, Sa = mp_MS(w, s, absolute=True)
            for i in range(T):
                ref = E * mp.fsum(F[i, u] * Sr[u] for u in range(P)) / P
                sc = E * mp.fsum(Sa) / P
                assert record("head_after_step", abs(_mpf(heads[i, j]) - ref) / (1e-12 * sc)) <= 1
                tot += ref * mp.fsum(F[i, u] * Sr[u] for u in range(P))
                tot_a += sc * mp.fsum(Sa)
            v = [mp.fsum(beta[u][x] * Sr[x] for x in range(P)) for u in range(P)]
            va = [mp.fsum(abs(beta[u][x]) * Sa[x] for x in range(P)) for u in range(P)]
            coef = E / P ** 2
            for k in range(r):
                ref = -coef * mp.fsum(v[u] * Mr[u][k] for u in range(P))
                sc = coef * mp.fsum(va[u] * Ma[u][k] for u in range(P))
                assert record("population_gradient", abs(_mpf(grad[j, k]) - ref) / (1e-12 * sc)) <= 1
            wperp = row[r:] / s
            gp = -coef * mp.fsum(v[u] * qr[u] for u in range(P))
            gpa = coef * mp.fsum(va[u] * qa[u] for u in range(P))
            for l in range(len(wperp)):
                ref = gp * _mpf(wperp[l])
                assert record("population_gradient", abs(_mpf(grad[j, r + l]) - ref) /
                              (1e-12 * gpa * abs(_mpf(wperp[l])) + 4 * EPS * gpa)) <= 1
        ref_loss = 1 - tot / (T * P)
        assert record("post_head_loss", abs(_mpf(loss) - ref_loss) / (1e-12 * (1 + tot_a / (T * P)))) <= 1
    assert (loss < 0) == any(issubclass(c.category, RegimeWarning) for c in caught)


@settings(max_examples=examples(25), deadline=None)
@given(layers(), st.sampled_from(["paper", "adaptive", 0.5]))
def test_one_step_maps(layer, lam_w):
    """one_step_map_reduced and one_step_map (exact, lambda_a = 1/eta): w_par^+ and c_perp within 1e-12 of their
    absolute scale |dec| |w| + eta^2 4^-r sum_u |v(u)| |M(u)| (the decay factor dec = 1 - eta lambda_w from
    decay_factor, itself relative 4 eps), against mpmath with exact beta_bar."""
    W, r, tasks, eta = layer
    P = 2 ** r
    s = np.linalg.norm(W[:, r:], axis=1)
    wp, cp = mt.one_step_map_reduced(W[:, :r], s, eta, tasks, lam_w)
    Wp = mt.one_step_map(W, r, tasks, eta, lam_w)
    dec = mt.decay_factor(r, eta, lam_w, tasks)
    beta = _beta(tasks, r)
    with mp.workdps(DPS):
        E, D = _mpf(eta), _mpf(dec)
        coef = E * E / P ** 2
        for j, row in enumerate(W):
            w = row[:r]
            Mr, qr, Sr = mp_MS(w, s[j])
            Ma, qa, Sa = mp_MS(w, s[j], absolute=True)
            v = [mp.fsum(beta[u][x] * Sr[x] for x in range(P)) for u in range(P)]
            va = [mp.fsum(abs(beta[u][x]) * Sa[x] for x in range(P)) for u in range(P)]
            for k in range(r):
                ref = D * _mpf(w[k]) + coef * mp.fsum(v[u] * Mr[u][k] for u in range(P))
                sc = abs(D * _mpf(w[k])) + coef * mp.fsum(va[u] * Ma[u][k] for u in range(P))
                assert record("one_step_map_reduced", abs(_mpf(wp[j, k]) - ref) / (1e-12 * sc)) <= 1
                assert record("one_step_map", abs(_mpf(Wp[j, k]) - ref) / (1e-12 * sc)) <= 1
            S_ = _mpf(s[j])
            ref = D + coef / S_ * mp.fsum(v[u] * qr[u] for u in range(P))
            sc = abs(D) + coef / S_ * mp.fsum(va[u] * qa[u] for u in range(P))
            assert record("one_step_map_reduced", abs(_mpf(cp[j]) - ref) / (1e-12 * sc)) <= 1
            for l in range(r, W.shape[1]):
                x = _mpf(row[l])
                assert record("one_step_map", abs(_mpf(Wp[j, l]) - ref * x) / (1e-12 * sc * abs(x) + 1e-300)) <= 1


@settings(max_examples=examples(25), deadline=None)
@given(layers(), st.sampled_from(["paper", "adaptive", 0.5]), st.floats(-150, 150))
@example((np.array([[0.3, 1.0]]), 1, None, 1.0), "paper", 150.0)   # was c2 = eta^2/(2 pi) = inf -> NaN
def test_leading_order_map(layer, lam_w, log_eta):
    """leading_order_map: w_par^+ and c_perp within 8 eps of their absolute scale, eta from 1e-150 to 1e150
    (before: eta = 1e150 gave NaN from inf - inf), against the Walsh formula in mpmath with the task statistics
    B, K, c, C2 in exact rationals from the table (not TaskSet.stats)."""
    W, r, tasks, _ = layer
    eta = 10.0 ** log_eta
    s = np.linalg.norm(W[:, r:], axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wp, cp = mt.leading_order_map(W[:, :r], s, eta, tasks, lam_w)
    dec = mt.decay_factor(r, eta, lam_w, tasks)
    U = list(itertools.product([-1, 1], repeat=r))
    P = 2 ** r
    F = (mt.TaskSet.hadamard(r) if tasks is None else tasks).F.astype(int)
    T = F.shape[0]
    a0 = [Fraction(int(F[i].sum()), P) for i in range(T)]
    a1 = [[Fraction(sum(int(F[i, x]) * U[x][k] for x in range(P)), P) for k in range(r)] for i in range(T)]
    A2 = [[[Fraction(sum(int(F[i, x]) * U[x][k] * U[x][l] for x in range(P)), P) if k != l else Fraction(0)
            for l in range(r)] for k in range(r)] for i in range(T)]
    B = sum(a * a for a in a0) / T
    K = [[sum(a1[i][k] * a1[i][l] for i in range(T)) / T for l in range(r)] for k in range(r)]
    c = [sum(a0[i] * a1[i][k] for i in range(T)) / T for k in range(r)]
    C2 = [[sum(a0[i] * A2[i][k][l] for i in range(T)) / T for l in range(r)] for k in range(r)]
    assert np.all(np.isfinite(wp)) and np.all(np.isfinite(cp))
    with mp.workdps(DPS):
        c2 = _mpf(eta) ** 2 / (2 * mp.pi)
        D = _mpf(dec)
        for j, row in enumerate(W):
            w = [_mpf(x) for x in row[:r]]
            S_ = _mpf(s[j])
            for k in range(r):
                L = [B * (k == l) + K[k][l] + 2 / mp.pi * C2[k][l] for l in range(r)]
                ref = D * w[k] + c2 * (S_ * c[k] + mp.fsum(L[l] * w[l] for l in range(r)))
                sc = abs(D * w[k]) + c2 * (S_ * abs(c[k]) + mp.fsum(abs(L[l] * w[l]) for l in range(r)))
                assert record("leading_order_map", abs(_mpf(wp[j, k]) - ref) / (8 * EPS * sc + 1e-300)) <= 1
            ref = D + c2 * (B + mp.fsum(c[k] * w[k] for k in range(r)) / S_)
            sc = abs(D) + c2 * (B + mp.fsum(abs(c[k] * w[k]) for k in range(r)) / S_)
            assert record("leading_order_map", abs(_mpf(cp[j]) - ref) / (8 * EPS * sc + 1e-300)) <= 1


# ---- scalar closed forms: decay, lambda_w, kappa -----------------------------------------------------------------

@settings(max_examples=examples(60), deadline=None)
@given(st.one_of(st.integers(1, 30), st.integers(1, 2000)), st.floats(-300, 300), st.floats(0, 1), st.booleans())
@example(1100, 200.0, 0.5, True)     # was NaN: eta^2 = inf times 2^-1100 = 0
@example(1, 160.0, 0.5, True)        # was -inf/inf: eta^2 overflowed though the result is finite
def test_decay_lambda_kappa(r, log_eta, B, corrected):
    """decay_factor ("paper", "adaptive" and a number), lambda_w_paper, lambda_w_adaptive, kappa_par (both
    constants): relative error <= 4 eps wherever the result is a normal float, for eta in 1e-300..1e300 and r to
    2000 (before: NaN at eta = 1e200, r = 1100, and inf where only eta^2 overflowed); decay_factor with a number
    lam_w: absolute <= 2 eps (1 + |eta lam_w|). Against the formulas in mpmath."""
    eta = 10.0 ** log_eta
    with mp.workdps(DPS):
        E, R = _mpf(eta), mp.mpf(2) ** -r
        refs = {"kappa_par": (mt.kappa_par(r, eta, corrected), E ** 2 * R / (2 * mp.pi) if corrected else E ** 2 * R / 4),
                "decay_factor": (mt.decay_factor(r, eta), -E ** 2 * R / (2 * mp.pi)),
                "lambda_w_paper": (mt.lambda_w_paper(r, eta), (1 + E ** 2 * R / (2 * mp.pi)) / E),
                "lambda_w_adaptive": (mt.lambda_w_adaptive(B, eta), (1 + E ** 2 * _mpf(B) / (2 * mp.pi)) / E)}
        if r <= 8:
            ts = mt.TaskSet.random_labelings(r, 3, seed=r)
            Bt = Fraction(int((ts.F.sum(axis=1) ** 2).sum()), 3 * 4 ** r)
            refs["decay_factor.adaptive"] = (mt.decay_factor(r, eta, "adaptive", ts),
                                             -E ** 2 * mp.mpf(Bt.numerator) / Bt.denominator / (2 * mp.pi))
        for name, (got, ref) in refs.items():
            if 2.3e-308 < abs(ref) < 1.7e308:
                assert record(name, abs(_mpf(got) - ref) / (4 * EPS * abs(ref)), r=r, eta=eta) <= 1
            elif abs(ref) >= 1.7e308:
                assert abs(got) == math.inf
        lam = 0.5 / eta if eta < 1e300 else 1e-300
        got = mt.decay_factor(r, eta, lam)
        ref = 1 - E * _mpf(lam)
        assert record("decay_factor", abs(_mpf(got) - ref) / (2 * EPS * (1 + abs(E * _mpf(lam))))) <= 1


# ---- kappa_hat, subspace_ratio, margin_bound ---------------------------------------------------------------------

@st.composite
def matrices(draw):
    """(W (m, d), r): entries at one of 1e-200..1e200, some rows nearly parallel in the first r columns."""
    m, r = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    d = r + draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    W = rng.standard_normal((m, d))
    if m > 1 and draw(st.booleans()):
        W[1, :r] = W[0, :r] * (1 + 10.0 ** draw(st.floats(-8, -1)))
    return W * 10.0 ** draw(st.sampled_from([0.0, -200.0, 200.0, -100.0, 100.0]) | st.floats(-150, 150)), r


@settings(max_examples=examples(30), deadline=None)
@given(matrices(), st.floats(-3, 3))
@example((np.array([[1e-200, 2e-200, 1e-200]]), 2), 0.0)    # was NaN: 0/0 from squares underflowing
def test_kappa_hat(case, log_c):
    """kappa_hat: relative error <= (2 m r + 4) eps (1 + cond) where cond = sum|W+ W0| / |sum W+ W0| (the
    cancellation of the numerator), at scales 1e-200..1e200 (before: NaN at 1e-200, the squares underflowed)."""
    W0, r = case
    rng = np.random.default_rng(int(abs(log_c) * 1e6))
    Wp = W0 * 10.0 ** log_c + rng.standard_normal(W0.shape) * np.abs(W0).max() * 0.1
    got = mt.kappa_hat(W0, Wp, r)
    with mp.workdps(DPS):
        num = mp.fsum(_mpf(a) * _mpf(b) for a, b in zip(Wp[:, :r].ravel(), W0[:, :r].ravel()))
        nab = mp.fsum(abs(_mpf(a) * _mpf(b)) for a, b in zip(Wp[:, :r].ravel(), W0[:, :r].ravel()))
        den = mp.fsum(_mpf(b) ** 2 for b in W0[:, :r].ravel())
        ref = num / den
        n = W0.shape[0] * r
        assert record("kappa_hat", abs(_mpf(got) - ref) / ((2 * n + 4) * EPS * (abs(ref) + nab / den)),
                      W0=W0.tolist()) <= 1


@settings(max_examples=examples(30), deadline=None)
@given(matrices())
def test_subspace_ratio_margin_bound(case):
    """subspace_ratio: relative error <= 8 (m + d) eps (1 + sigma_1/sigma_r) (a backward-stable SVD); inf where
    sigma_r <= max(m, r) eps sigma_1 (rank-deficient at working precision). margin_bound: relative error
    <= 8 (m + d) eps against the singular values and heads' norms in mpmath."""
    W, r = case
    got = mt.subspace_ratio(W, r)
    rng = np.random.default_rng(0)
    heads = rng.standard_normal((2, W.shape[0]))
    mb = mt.margin_bound(W / np.abs(W).max(), heads, 1e-6)
    tol = 8 * (sum(W.shape)) * EPS
    with mp.workdps(DPS):
        sc = mp.mpf(2) ** -int(round(math.log2(np.abs(W).max())))
        Wm = mp.matrix([[_mpf(x) * sc for x in row] for row in W])
        sv = sorted(mp.svd_r(Wm[:, :r], compute_uv=False), reverse=True)
        perp = max(mp.svd_r(Wm[:, r:], compute_uv=False))
        if len(sv) >= r and sv[r - 1] > 4 * max(W.shape[0], r) * EPS * sv[0]:
            ref = perp / sv[r - 1]
            assert record("subspace_ratio", abs(_mpf(got) - ref) / (tol * ref * (1 + sv[0] / sv[r - 1]) + 1e-300),
                          W=W.tolist(), r=r) <= 1
        elif len(sv) < r or sv[r - 1] < 0.25 * max(W.shape[0], r) * EPS * sv[0]:
            assert got == math.inf
        Wn = W / np.abs(W).max()
        sv2 = [x ** 2 for x in mp.svd_r(mp.matrix(Wn.tolist()), compute_uv=False)]
        t = mp.log(1 / mp.mpf(1e-6))
        qv = mp.fsum(sv2) + 2 * mp.sqrt(mp.fsum(x ** 2 for x in sv2) * t) + 2 * max(sv2) * t
        hn = max(mp.sqrt(mp.fsum(_mpf(x) ** 2 for x in h)) for h in heads)
        ref = hn * mp.sqrt(qv)
        assert record("margin_bound", abs(_mpf(mb) - ref) / (tol * ref)) <= 1


# ---- TaskSet statistics (exact) ----------------------------------------------------------------------------------

@settings(max_examples=examples(15), deadline=None)
@given(st.integers(1, 6), st.integers(1, 40), st.integers(0, 1000))
def test_taskset_statistics_exact(r, T, seed):
    """TaskSet.beta_bar, walsh, stats, diversity_deviation: exact (every sum of +-1 over at most 2^6 terms and every
    division by 2^r is exact in float64; the 1/T are one rounding: relative <= eps), against exact rationals."""
    ts = mt.TaskSet.random_labelings(r, T, seed=seed)
    F = ts.F.astype(int)
    P = 2 ** r
    U = list(itertools.product([-1, 1], repeat=r))
    bb = ts.beta_bar()
    for i in range(P):
        for j in range(P):
            ref = Fraction(int(F[:, i] @ F[:, j]), T)
            assert abs(Fraction(bb[i, j]) - ref) <= EPS * abs(ref)
    a0, a1, _ = ts.walsh()
    for i in range(T):
        assert Fraction(a0[i]) == Fraction(int(F[i].sum()), P)
        for k in range(r):
            assert Fraction(a1[i, k]) == Fraction(sum(int(F[i, x]) * U[x][k] for x in range(P)), P)
    st_ = ts.stats()
    refB = sum(Fraction(int(F[i].sum()), P) ** 2 for i in range(T)) / T
    assert record("TaskSet.stats", abs(Fraction(st_["B"]) - refB) / (4 * EPS * refB) if refB else 0) <= 1


# ---- bounds ------------------------------------------------------------------------------------------------------

@settings(max_examples=examples(40), deadline=None)
@given(st.integers(0, 3000), st.integers(0, 3000), st.integers(1, 10 ** 6), st.floats(-300, 300))
@example(400, 4600, 1, 300.0)       # was 1.0 (binom(5000, 400) = inf as a float): 1 - 1e300/sqrt(binom) = -2.1e-3
@example(3, 7, 10 ** 6, 200.0)      # was -inf: m_hat B^2 overflowed
def test_thm46(r, extra, m_hat, log_B):
    """thm46_lower, thm46_bessel: absolute error <= 4 eps max(1, x) with x = sqrt(m_hat) B / sqrt(binom(d, r))
    (the subtracted term; relative 4 eps when the result is below -1), for binomials past 1e308 and B to 1e300
    (before: 1.0 where binom overflowed though x = 1.002, and -inf where m_hat B^2 overflowed), against exact
    integer binomials in mpmath."""
    d, B = r + extra, 10.0 ** log_B
    assume(d >= 1)
    lo, be = MB.thm46_lower(d, r, m_hat, B), MB.thm46_bessel(d, r, B)
    with mp.workdps(DPS):
        sq = mp.sqrt(mp.mpf(math.comb(d, r)))
        for name, got, x in (("thm46_lower", lo, mp.sqrt(m_hat) * _mpf(B) / sq), ("thm46_bessel", be, _mpf(B) / sq)):
            ref = 1 - x
            assert record(name, abs(_mpf(got) - ref) / (4 * EPS * max(1, x)), d=d, r=r, B=B) <= 1


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(1, 1000), st.integers(0, 10 ** 6), st.integers(1, 10 ** 6),
       st.one_of(st.just(math.inf), st.floats(1, 1e300)), st.floats(1e-3, 1e3))
@example(1000, 10 ** 6, 10 ** 6, math.inf, 1.0)   # was 0.0: 2^1000 d overflowed to inf (true 1.1e-289)
def test_prop41_thm42_lemmaB3(r, extra, m, T, C):
    """prop41_rhs, thm42_rhs, lemmaB3_rhs: relative error <= 8 eps for r to 1000, d to 1e6 and T to 1e300 or inf
    (before: prop41 returned 0 at r = 1000, d = 1e6, where 2^r d overflowed), against mpmath."""
    d = r + extra
    p1, p2 = MB.prop41_rhs(r, d, m, T, C)
    t42 = MB.thm42_rhs(r, d, m, T, C)
    b3 = mt.lemmaB3_rhs(r, d, m, T, C)
    with mp.workdps(DPS):
        R, D, lm, Cm = mp.mpf(r), mp.mpf(d), mp.log(m), _mpf(C)
        tasks = mp.sqrt(R) * D / mp.sqrt(_mpf(T)) if T != math.inf else mp.mpf(0)
        refs = {"prop41_rhs": [(p1, Cm * ((R ** 4 + lm ** 4) / (2 ** R * D) + tasks)),
                               (p2, Cm * ((R ** 3.5 + lm ** 3.5) / (2 ** R * D ** 1.5) + tasks))],
                "thm42_rhs": [(t42, Cm * ((R ** 3.5 + lm ** 3.5) / D ** 1.5 + 2 ** R * tasks))],
                "lemmaB3_rhs": [(b3, Cm * ((R ** 3.5 + lm ** 3.5) / (2 ** R * mp.sqrt(D)) + tasks * D ** 0.5))]}
        for name, pairs in refs.items():
            for got, ref in pairs:
                if ref > mp.mpf("1.7e308"):
                    assert got == math.inf
                    continue
                assert record(name, abs(_mpf(got) - ref) / (8 * EPS * ref), r=r, d=d, m=m, T=T) <= 1


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(2, 10 ** 4), st.floats(1e-300, 0.05), st.integers(1, 10 ** 9), st.floats(1e-300, 0.3),
       st.integers(1, 10 ** 12), st.floats(1e-3, 1e3))
def test_bound_shapes(r, delta, D, dp, n, c):
    """lemmaA5_hoeffding (both conventions), margin_exponent, thmB5_requirements, downstream_eval: relative error
    <= 8 eps; thmB5_log_rhs: absolute <= 8 eps (|cE| + |log log(1/delta')|/2 + log(n)/2) (a difference); the
    requirements' d_min, m_max, T_min and prop41/thm42 requirement shapes: relative <= 4 eps. Against mpmath."""
    with mp.workdps(DPS):
        R, dl, dpm = mp.mpf(r), _mpf(delta), _mpf(dp)
        rr = min(r, 60)
        P = mp.mpf(2) ** rr
        T = n
        checks = [("lemmaA5_hoeffding", MB.lemmaA5_hoeffding(rr, T, dp), mp.sqrt((mp.log(P * (P - 1)) + mp.log(2 / dpm)) / (2 * T))),
                  ("lemmaA5_hoeffding", MB.lemmaA5_hoeffding(rr, T, dp, "paper"), mp.sqrt(2 * (mp.log(P * (P - 1)) + mp.log(1 / dpm)) / T))]
        E = R ** 5 * mp.log(R) ** 6 * mp.log(D * mp.log(R) / dl)
        checks.append(("margin_exponent", MB.margin_exponent(r, delta, D), E))
        req = MB.thmB5_requirements(r, delta, D, c)
        mb = R ** 5 * mp.log(R) ** 8 * mp.log(D / dl)
        cE = _mpf(c) * E
        logd = 7 * mp.log(mp.log(mb)) + cE if mb > mp.e else cE
        checks += [("thmB5_requirements", req["m_bar_min"], mb), ("thmB5_requirements", req["log_d_min"], logd),
                   ("thmB5_requirements", req["log_T_min"], 3 * logd + cE),
                   ("thmB5_requirements", req["log_lambda_hat"], -cE),
                   ("downstream_eval", MB.downstream_eval(_mpf(c) * 7, n, dp, 1.5),
                    mp.mpf(1.5) * _mpf(c * 7) * mp.sqrt(mp.log(1 / dpm) / n))]
        for name, got, ref in checks:
            if abs(ref) < mp.mpf("1.7e308"):
                assert record(name, abs(_mpf(got) - ref) / (8 * EPS * abs(ref)), r=r, delta=delta, D=D, dp=dp) <= 1
        if dp < math.exp(-1):
            got = MB.thmB5_log_rhs(r, n, delta, dp, D, c)
            ll = mp.log(mp.log(1 / dpm))
            ref = cE + ll / 2 - mp.log(n) / 2
            assert record("thmB5_log_rhs", abs(_mpf(got) - ref) / (8 * EPS * (abs(cE) + abs(ll) / 2 + mp.log(n) / 2))) <= 1


# ---- downstream --------------------------------------------------------------------------------------------------

@settings(max_examples=examples(40), deadline=None)
@given(st.integers(1, 2000), st.integers(1, 10 ** 6), st.floats(-100, 100), st.floats(-100, 100), st.booleans())
@example(1100, 4, 0.0, 0.0, True)     # was ZeroDivisionError: kappa_par = 2^-1100/(2 pi) underflowed to 0
def test_rescaling_alpha(r, m_bar, log_nu, log_eta, corrected):
    """rescaling_alpha: relative error <= 6 eps wherever the result is a normal float (inf beyond), r to 2000,
    nu_w and eta in 1e-100..1e100 (before: ZeroDivisionError at r = 1100), against 2 / (nu_w sqrt(m_bar) kappa)
    in mpmath."""
    nu, eta = 10.0 ** log_nu, 10.0 ** log_eta
    got = mt.rescaling_alpha(r, m_bar, nu, eta, convention="corrected" if corrected else "paper")
    with mp.workdps(DPS):
        E = _mpf(eta)
        kap = E ** 2 * mp.mpf(2) ** -r / (2 * mp.pi) if corrected else E ** 2 * mp.mpf(2) ** (-r - 2)
        ref = 2 / (_mpf(nu) * mp.sqrt(m_bar)) / kap
        if ref < mp.mpf("1.7e308"):
            assert record("rescaling_alpha", abs(_mpf(got) - ref) / (6 * EPS * ref), r=r, nu=nu, eta=eta) <= 1
        else:
            assert got == math.inf


@settings(max_examples=examples(10), deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(2, 6), st.integers(0, 1000), st.floats(-3, 3))
def test_embedding_features(r, extra, m_bar, seed, log_scale):
    """DownstreamEmbedding.features, purified, distance_to_purified: absolute error <= (m_bar + m_hat + d + 4) eps
    times the absolute scale (|W_hat| (alpha |W| |v| + |b|) + |b_hat|), against the two ReLU layers in mpmath."""
    d = r + extra
    rng = np.random.default_rng(seed)
    W0 = rng.standard_normal((2 * m_bar, d)) * 10.0 ** log_scale
    Wp = W0 * 0.3 + 0.01 * rng.standard_normal(W0.shape)
    e = mt.DownstreamEmbedding(Wp, r, 5, 1.0, 1.0, nu_w=0.7, seed=seed, W0=W0)
    V = mt.hypercube(3, d, seed=seed)
    G, Gt, dist = e.features(V), e.purified(V[:, :r]), e.distance_to_purified(V)
    tol = (m_bar + 5 + d + 4) * EPS
    with mp.workdps(DPS):
        def fwd(Wm, alpha, X, cols):
            out, sc = [], []
            for x in X:
                h = [max(mp.fsum(_mpf(alpha) * _mpf(Wm[i, c]) * _mpf(x[c]) for c in range(cols)) + _mpf(e.b[i]), 0)
                     for i in range(m_bar)]
                ha = [mp.fsum(abs(_mpf(alpha) * _mpf(Wm[i, c])) for c in range(cols)) + abs(_mpf(e.b[i]))
                      for i in range(m_bar)]
                out.append([max(mp.fsum(_mpf(e.W_hat[j, i]) * h[i] for i in range(m_bar)) + _mpf(e.b_hat[j]), 0)
                            for j in range(5)])
                sc.append([mp.fsum(abs(_mpf(e.W_hat[j, i])) * ha[i] for i in range(m_bar)) + abs(_mpf(e.b_hat[j]))
                           for j in range(5)])
            return out, sc
        ref, sc = fwd(e.W_bar, e.alpha, V, d)
        reft, sct = fwd(e.W0_bar[:, :r], e.alpha_hat, V[:, :r], r)
        for n in range(len(V)):
            for j in range(5):
                assert record("DownstreamEmbedding.features", abs(_mpf(G[n, j]) - ref[n][j]) / (tol * sc[n][j])) <= 1
                assert record("DownstreamEmbedding.purified", abs(_mpf(Gt[n, j]) - reft[n][j]) / (tol * sct[n][j])) <= 1
            dref = mp.sqrt(mp.fsum((ref[n][j] - reft[n][j]) ** 2 for j in range(5)))
            dsc = mp.sqrt(mp.fsum((sc[n][j] + sct[n][j]) ** 2 for j in range(5)))
            assert record("DownstreamEmbedding.distance_to_purified", abs(_mpf(dist[n]) - dref) / (2 * tol * dsc)) <= 1


@settings(max_examples=examples(15), deadline=None)
@given(st.integers(2, 12), st.integers(1, 4), st.integers(0, 1000), st.floats(-3, 3))
def test_svm_margin_certificate(n, p, seed, log_scale):
    """svm_margin: mu is the margin its (a, tau) attains (absolute <= 8 p eps max|G|, against mpmath), mu_upper is
    half the distance of two points of the hulls (a true upper bound), and mu_upper - mu <= 1e-8 mu_upper + 8 p eps
    max|G| (the declared optimality gap) on separable data; 0 <= mu."""
    rng = np.random.default_rng(seed)
    y = np.r_[1.0, -1.0, rng.choice([-1.0, 1.0], n - 2)]
    G = (rng.standard_normal((n, p)) + 2.0 * y[:, None]) * 10.0 ** log_scale
    out = mt.svm_margin(G, y)
    a, tau, mu = out["a"], out["tau"], out["mu"]
    assert 0 <= mu <= out["mu_upper"] * (1 + 1e-12)
    scale = np.abs(G).max()
    with mp.workdps(DPS):
        att = min(_mpf(y[i]) * (mp.fsum(_mpf(a[j]) * _mpf(G[i, j]) for j in range(p)) + _mpf(tau)) for i in range(n))
        na = mp.sqrt(mp.fsum(_mpf(x) ** 2 for x in a))
        ref = max(att / na, 0)
        assert record("svm_margin", abs(_mpf(mu) - ref) / (8 * p * EPS * scale)) <= 1
    if mu > 0:
        assert record("svm_margin.gap", (out["mu_upper"] - mu) / (1e-8 * out["mu_upper"] + 8 * p * EPS * scale)) <= 1


def _ball_hinge_gap_bound(G, B):
    """The declared width of ball_hinge_loss's bracket: 1e-13 + 16 eps B sqrt(p) max|G|."""
    return 1e-13 + 16 * EPS * B * math.sqrt(G.shape[1]) * np.abs(G).max()


@settings(max_examples=examples(15), deadline=None)
@given(st.integers(2, 80), st.integers(1, 8), st.integers(0, 1000), st.floats(-3, 6), st.sampled_from([0.0, 0.5, 2.0]),
       st.booleans())
def test_ball_hinge_loss_bracket(n, p, seed, log_B, sep, integer):
    """ball_hinge_loss: 0 <= lower <= upper (lower is a dual value, clamped at the trivial bound 0; before: a
    negative "loss" bound), and upper - lower <= 1e-13 + 16 eps B sqrt(p) max|G| (the declared gap), separable or
    not, B to 1e6, integer (degenerate) embeddings too."""
    rng = np.random.default_rng(seed)
    y = np.r_[1.0, -1.0, rng.choice([-1.0, 1.0], n - 2)]
    G = rng.standard_normal((n, p)) + sep * y[:, None]
    G = np.round(G) if integer else G
    B = 10.0 ** log_B
    lo, up = mt.ball_hinge_loss(G, y, B)
    assert 0 <= lo <= up + 1e-13
    assert record("ball_hinge_loss.gap", (up - lo) / _ball_hinge_gap_bound(G, B), n=n, p=p, B=B) <= 1


def test_ball_hinge_loss_large_B_gap():
    """Non-separable data with B far beyond the norm of the unconstrained hinge minimiser: the bracket closes to the
    declared gap (before: the smoothed dual needed ||v|| ~ 1/B and L-BFGS-B stalled at a gap of 1.2e-2, B = 1e5)."""
    rng = np.random.default_rng(0)
    n, p = 11, 2
    y = rng.choice([-1.0, 1.0], n)
    G = rng.standard_normal((n, p)) + 0.5 * y[:, None]
    lo, up = mt.ball_hinge_loss(G, y, 1e5)
    assert 0 <= lo <= up and record("ball_hinge_loss.gap", (up - lo) / _ball_hinge_gap_bound(G, 1e5), B=1e5) <= 1


def test_ball_hinge_loss_moderate_B_gap():
    """An active ball (n = 40, B = 4.44): the bracket closes to the declared gap (before: the smoothing
    continuation stopped with a gap of 1.8e-5)."""
    rng = np.random.default_rng(200)
    G, y = rng.standard_normal((40, 3)), rng.choice([-1.0, 1.0], 40)
    lo, up = mt.ball_hinge_loss(G, y, 4.442315817092178)
    assert 0 <= lo <= up and record("ball_hinge_loss.gap", (up - lo) / _ball_hinge_gap_bound(G, 4.44), B=4.44) <= 1
