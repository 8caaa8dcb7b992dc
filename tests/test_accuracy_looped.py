"""Declared accuracy of popdyn.models.looped over Hypothesis searches that reach the corners (condition numbers to
1e8, rank-deficient prompts, step schedules up to 2/L, 300 loops, kappa to 1e15 and T to 1e16, gamma within 1e-12 of
1), against mpmath at 40-60 digits (eigen-decompositions, iterated GD, quadrature) and exact rational and integer
arithmetic."""
import math
import warnings
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, note, settings
from hypothesis import strategies as st

from popdyn.models import looped as LP

from ._accuracy import EPS, examples, record


@st.composite
def prompts(draw, n_max=9, d_max=4):
    """(X, theta*): n in [1, 9], d in [1, 4], singular values log-spaced over a condition kappa of X^T X in
    [1, 1e8] at a scale 1e-3 .. 1e3 (n < d or repeated rows: rank deficient), theta* a unit vector, sometimes
    nearly orthogonal to the slowest direction (weight 1e-12)."""
    n, d = draw(st.integers(1, n_max)), draw(st.integers(1, d_max))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    X = rng.standard_normal((n, d))
    if n >= d:
        U, _, Vt = np.linalg.svd(X, full_matrices=False)
        s = np.geomspace(1, 10.0 ** (-draw(st.floats(0, 4))), d) * 10.0 ** draw(st.floats(-3, 3))
        X = (U * s) @ Vt
    th = rng.standard_normal(d)
    if draw(st.booleans()) and n >= d:
        v = np.linalg.svd(X)[2]
        th = v[0] + 1e-12 * v[-1] if d > 1 else v[0]
    return X, th / np.linalg.norm(th)


def _steps(draw, lam_max, T):
    kind = draw(st.sampled_from(["1/L", "2/(L+mu)", "float", "schedule"]))
    if kind == "float":
        return draw(st.floats(0.05, 1.95)) / lam_max
    if kind == "schedule":
        return np.array(draw(st.lists(st.floats(0.05, 1.95), min_size=T, max_size=T))) / lam_max
    return kind


def _mp_spectral(X, th, eta, T):
    """Eigenpairs of X^T X in mpmath (50 digits), c_i = (v_i . theta*)^2 and the factors P_i(t) = prod (1 - eta lam_i)."""
    A = mp.matrix((X.T @ X).tolist())
    ev, V = mp.eigsy(A)
    d = X.shape[1]
    lam = [ev[i] for i in range(d)]
    L, mu = max(lam), min(lam)
    if isinstance(eta, str):
        e = [1 / L if eta == "1/L" else 2 / (L + mu)] * T
    else:
        e = [mp.mpf(float(v)) for v in np.broadcast_to(np.asarray(eta, dtype=float), (T,))]
    thm = mp.matrix(th.tolist())
    c = [(V[:, i].T * thm)[0] ** 2 for i in range(d)]
    P = [[mp.mpf(1)] * d]
    for t in range(T):
        P.append([P[-1][i] * (1 - e[t] * lam[i]) for i in range(d)])
    return lam, c, P, e


@settings(max_examples=examples(25), deadline=None)
@given(prompts(), st.integers(0, 300), st.floats(-3, 3), st.data())
def test_exact_curves(pr, T, log_alpha, data):
    """exact_error and exact_sq_dist: |d err_t| <= 4 eps |alpha| [(t + d + 2) S_t (1 + max_i eta lam_i/|1 - eta lam_i|)
    + lam_max sum_(i<j) |P_i - P_j| / |lam_i - lam_j|] + 2 eps^t |alpha|, S_t = sum_i c_i |P_i(t)| (the curve's own
    size: relative accuracy however small it decays, no float floor), the second term the eigenvectors' rounding
    (mixing directions whose factors differ) and the last the factor 1 - fl(1/L) L of the top direction under
    "1/L"; exact_sq_dist likewise with P^2; against the eigen-decomposition in mpmath at 50 digits."""
    X, th = pr
    lam_max = float(np.linalg.eigvalsh(X.T @ X)[-1])
    if lam_max == 0:
        return
    eta = _steps(data.draw, lam_max, T)
    alpha = 10.0 ** log_alpha
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        err, sq = LP.exact_error(X, th, alpha, T, eta), LP.exact_sq_dist(X, th, T, eta)
    with mp.workdps(50):
        lam, c, P, e = _mp_spectral(X, th, eta, T)
        d = len(lam)
        amp = max([e[t] * lam[i] / abs(1 - e[t] * lam[i]) for t in range(T) for i in range(d)
                   if 1 - e[t] * lam[i] != 0] + [0])
        for t in sorted({0, 1, T // 2, T} & set(range(T + 1))):
            ref = -alpha * mp.fsum(c[i] * P[t][i] for i in range(d))
            mix = max(lam) * mp.fsum(abs(P[t][i] - P[t][j]) / abs(lam[i] - lam[j]) for i in range(d)
                                     for j in range(i + 1, d) if lam[i] != lam[j])
            size = mp.fsum(c[i] * abs(P[t][i]) for i in range(d))
            bound = 4 * EPS * alpha * ((t + d + 2) * size * (1 + amp) + mix) + 2 * alpha * EPS ** t + mp.mpf(1e-300)
            assert record("looped.exact_error", abs(err[t] - ref) / bound, t=t, T=T) <= 1
            refs = mp.fsum(c[i] * P[t][i] ** 2 for i in range(d))
            mix2 = max(lam) * mp.fsum(abs(P[t][i] ** 2 - P[t][j] ** 2) / abs(lam[i] - lam[j]) for i in range(d)
                                      for j in range(i + 1, d) if lam[i] != lam[j])
            bound2 = 4 * EPS * ((t + d + 2) * refs * (1 + amp) * 2 + mix2) + 2 * EPS ** (2 * t) + mp.mpf(1e-300)
            assert record("looped.exact_sq_dist", abs(sq[t] - refs) / bound2, t=t, T=T) <= 1


@settings(max_examples=examples(25), deadline=None)
@given(prompts(), st.integers(0, 300), st.data())
def test_mean_error_over_task(pr, T, data):
    """mean_error_over_task (squared or not): relative error <= 4 eps (t + 2)(1 + max_i eta lam_i/|1 - eta lam_i|) of
    (1/d) sum_i |P_i(t)|^(1 or 2), + 2 eps^t (the top factor under "1/L"); against the eigenvalues in mpmath."""
    X, th = pr
    lam_max = float(np.linalg.eigvalsh(X.T @ X)[-1])
    if lam_max == 0:
        return
    eta = _steps(data.draw, lam_max, T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m1, m2 = LP.mean_error_over_task(X, 1.0, T, eta), LP.mean_error_over_task(X, 1.0, T, eta, squared=True)
    with mp.workdps(50):
        lam, _, P, e = _mp_spectral(X, th, eta, T)
        d = len(lam)
        amp = max([e[t] * lam[i] / abs(1 - e[t] * lam[i]) for t in range(T) for i in range(d)
                   if 1 - e[t] * lam[i] != 0] + [0])
        for t in sorted({0, 1, T // 2, T} & set(range(T + 1))):
            for got, k, key in ((m1[t], 1, "looped.mean_error_over_task"), (m2[t], 2, "looped.mean_error_over_task (sq)")):
                ref = (-1 if k == 1 else 1) * mp.fsum(P[t][i] ** k for i in range(d)) / d
                size = mp.fsum(abs(P[t][i]) ** k for i in range(d)) / d
                bound = 4 * EPS * (t + 2) * k * (1 + amp) * size + 2 * EPS ** (k * t) + mp.mpf(1e-300)
                assert record(key, abs(got - ref) / bound, t=t) <= 1


@settings(max_examples=examples(20), deadline=None)
@given(prompts(n_max=6, d_max=3), st.integers(0, 60), st.floats(0.05, 1.95), st.floats(-3, 3))
def test_gd_and_forward(pr, T, step, log_alpha):
    """gd, forward and looped_forward (fast and full attention) for a float step in (0, 2/L): ||theta_T - exact|| <=
    4 eps (T + 1)(n + d) max_t ||theta_t|| (exact: the same GD in mpmath at 60 digits; GD is stable for these steps,
    the rounding of each step adds up); forward = alpha theta_T to the same bound times |alpha|."""
    X, th = pr
    lam_max = float(np.linalg.eigvalsh(X.T @ X)[-1])
    if lam_max == 0:
        return
    eta, alpha = step / lam_max, 10.0 ** log_alpha
    y = X @ th
    traj = LP.gd(X, y, T, eta, return_trajectory=True)
    tf = LP.forward(X, y, alpha, T, eta)
    full = -LP.looped_forward(LP.build_prompt(X, y, alpha), *LP.attention_weights_gd(X.shape[1]), T, eta,
                              full=True)[-1, :X.shape[1]]
    with mp.workdps(60):
        A, b = mp.matrix((X.T @ X).tolist()), mp.matrix((X.T @ y).tolist())
        tm, big = mp.matrix([0] * X.shape[1]), mp.mpf(0)
        E = mp.mpf(float(eta))
        for _ in range(T):
            tm = tm - E * (A * tm - b)
            big = max(big, mp.norm(tm))
        bound = 4 * EPS * (T + 1) * sum(X.shape) * big + mp.mpf(1e-300)
        ref = [tm[i] for i in range(X.shape[1])]
        assert record("looped.gd", mp.sqrt(mp.fsum((traj[-1][i] - ref[i]) ** 2 for i in range(len(ref)))) / bound,
                      T=T) <= 1
        for got, key in ((tf, "looped.forward"), (full, "looped.looped_forward (full)")):
            dist = mp.sqrt(mp.fsum((got[i] - alpha * ref[i]) ** 2 for i in range(len(ref))))
            assert record(key, dist / (alpha * bound), T=T) <= 1


@settings(max_examples=examples(20), deadline=None)
@given(st.integers(1, 5), st.integers(1, 3), st.integers(0, 2 ** 32 - 1), st.floats(-3, 3))
def test_linear_attention(n, d, seed, log_scale):
    """linear_attention (full masked form and last row): every entry within (n + d + 3) eps of the same product of
    absolute values (Higham's matrix-product bound), against exact rationals."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n + 1, d + 1)) * 10.0 ** log_scale
    Q, P = rng.standard_normal((d + 1, d + 1)), rng.standard_normal((d + 1, d + 1))
    F = lambda M: [[Fraction(float(v)) for v in row] for row in M]  # noqa: E731
    mul = lambda A, B: [[sum(a * b for a, b in zip(r, col)) for col in zip(*B)] for r in A]  # noqa: E731
    Zf, Qf, Pf = F(Z), F(Q), F(P)
    Zt = [list(r) for r in zip(*Zf)]
    G = mul(mul(Zf, Qf), Zt)
    G = [[G[i][j] if (i == n and j < n) else Fraction(0) for j in range(n + 1)] for i in range(n + 1)]
    exact = mul(mul(G, Zf), Pf)
    absf = lambda M: [[abs(v) for v in r] for r in M]  # noqa: E731
    Ga = mul(mul(absf(Zf), absf(Qf)), absf(Zt))
    Ga = [[Ga[i][j] if (i == n and j < n) else Fraction(0) for j in range(n + 1)] for i in range(n + 1)]
    size = mul(mul(Ga, absf(Zf)), absf(Pf))
    got, last = LP.linear_attention(Z, Q, P), LP.linear_attention(Z, Q, P, last_row=True)
    k = (n + d + 3) * Fraction(EPS)
    for i in range(n + 1):
        for j in range(d + 1):
            assert record("looped.linear_attention", float(abs(Fraction(got[i, j]) - exact[i][j]) / (k * size[i][j]
                                                                                             + Fraction(1e-300)))) <= 1
    for j in range(d + 1):
        assert abs(Fraction(last[j]) - exact[n][j]) <= k * size[n][j] + Fraction(1e-300)


@settings(max_examples=examples(25), deadline=None)
@given(prompts())
def test_condition_number_and_step_schedule(pr):
    """condition_number: relative error <= 4 max(n, d) eps sqrt(kappa) (the smallest singular value carries eps of the
    largest), inf exactly when n < d or sigma_min <= max(n, d) eps sigma_max; step_schedule's 1/L and 2/(L + mu) are
    one rounding of the eigenvalues given."""
    X, _ = pr
    k = LP.condition_number(X)
    n, d = X.shape
    with mp.workdps(40):
        sv = mp.svd_r(mp.matrix(X.tolist()), compute_uv=False) if n >= d else None
        if sv is None or min(sv) <= max(sv) * max(n, d) * EPS * (1 - 1e-6):
            assert k == np.inf or sv is not None  # at the threshold either answer is within the rounding
            return
        ref = (max(sv) / min(sv)) ** 2
        if k == np.inf:  # the threshold compared rounded singular values
            assert min(sv) <= max(sv) * max(n, d) * EPS * (1 + 1e-6)
            return
        assert record("looped.condition_number", abs(k - ref) / (4 * max(n, d) * EPS * mp.sqrt(ref) * ref)) <= 1
    lam = np.linalg.eigvalsh(X.T @ X)
    assert LP.step_schedule(lam, 1, "1/L")[0] == 1 / lam[-1]
    assert LP.step_schedule(lam, 1, "2/(L+mu)")[0] == 2 / (lam[-1] + lam[0])


@settings(max_examples=examples(40), deadline=None)
@given(st.one_of(st.floats(1, 1e3), st.floats(0, 15).map(lambda u: 10.0 ** u)),
       st.one_of(st.integers(0, 1000), st.floats(0, 16).map(lambda u: int(10.0 ** u))), st.floats(-300, 0))
@example(1e10, 10 ** 12, -6.0)   # tight: was 8e-6 relative off (the base 1 - 1/kappa rounded, then ** T)
@example(1e12, 10, -6.0)         # loops_needed: was 1.2e9 loops short
@example(2.0, 2, math.log10(0.25))   # an exact tie: (1/2)^2 = 0.25
@example(1.015625, 1, 0.0)           # kappa -> 1: 1 - 1/kappa cancels (kappa - 1 is exact)
def test_bounds_and_loops_needed(kappa, T, log_eps):
    """bound_tight and bound_paper: relative error <= 2 eps (2 + |log of the value|) (the value's own condition in
    kappa and T); loops_needed: the smallest T with the bound <= eps (1 + 1e-13) (an integer quotient within 8 eps is
    a tie), never one short (counts beyond 2^53: within an ulp of the float); against mpmath at 40 digits, kappa to
    1e15, T to 1e16."""
    eps = 10.0 ** log_eps
    with mp.workdps(40):
        K = mp.mpf(kappa)
        tight, paper = (1 - 1 / K) ** T, mp.exp(-mp.mpf(T) / (2 * K))
        for got, ref, key in ((LP.bound_tight(kappa, T), tight, "looped.bound_tight"),
                              (LP.bound_paper(kappa, T), paper, "looped.bound_paper")):
            if ref < 1e-300:
                assert got <= 1e-300
                continue
            assert record(key, abs(got - ref) / (2 * EPS * (2 + abs(mp.log(ref))) * ref), kappa=kappa, T=T) <= 1
        if eps < 1:
            for which, q in (("tight", mp.log(1 / mp.mpf(eps)) / -mp.log1p(-1 / K) if kappa > 1 else None),
                             ("paper", 2 * K * mp.log(1 / mp.mpf(eps)))):
                got = LP.loops_needed(kappa, eps, which)
                if q is None:
                    assert got == 1.0
                    continue
                lo, hi = mp.ceil(q * (1 - 1e-13)), max(mp.ceil(q), 1)
                ulp = float(np.spacing(float(hi)))  # counts beyond 2^53 are floats within an ulp
                assert lo - ulp <= got <= hi + ulp, (which, got, q)


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(0, 600), st.integers(1, 10 ** 6), st.integers(1, 10 ** 18))
def test_gatmiry(T, d, n):
    """gatmiry_condition: exact (integers); gatmiry_bound: relative error <= 2 eps (2 + log2(8 T d^2) + 2 T +
    log2(n)/2) (it is exp2 of that sum), inf exactly when it exceeds the float range."""
    assert LP.gatmiry_condition(T, d, n) == (64 * T * T * d ** 4 * 16 ** T <= n)
    got = LP.gatmiry_bound(T, d, n)
    with mp.workdps(40):
        ref = 8 * mp.mpf(T) * d * d * mp.mpf(2) ** (2 * T) / mp.sqrt(n)
        if ref > 1.7976931348623157e308:
            assert got == np.inf
        elif T == 0:
            assert got == 0.0
        else:
            size = 2 + mp.log(8 * T * d * d, 2) + 2 * T + mp.log(n, 2) / 2
            assert record("looped.gatmiry_bound", abs(got - ref) / (2 * EPS * size * ref)) <= 1


def _mp_curve(g, t, s, absolute=False):
    """E_gamma(t) in mpmath (30 digits): the phi-substituted integral on 9 + 5 sqrt(t) equal panels (the peaks of
    (1 - s x)^t at the support's ends have width ~ t^-1/2 in phi; fewer panels with tanh-sinh on each misjudged its
    own error by 1e3 at t = 1000), plus panels graded towards pi at the scale sqrt(x_- / r) of the 1/x dip."""
    with mp.workdps(30):
        G = mp.mpf(g)
        c, r = 1 + G, 2 * mp.sqrt(G)
        base = (lambda p: abs(1 - s * (c + r * mp.cos(p)))) if absolute else (lambda p: 1 - s * (c + r * mp.cos(p)))
        f = lambda p: base(p) ** t * (r * mp.sin(p)) ** 2 / (2 * mp.pi * G * (c + r * mp.cos(p)))
        w = mp.sqrt((c - r) / r)  # the dip of the density's 1/x at phi = pi as gamma -> 1
        pts = sorted(set(mp.linspace(0, mp.pi, 9 + int(5 * math.sqrt(t))))
                     | {mp.pi - w * mp.mpf(10) ** j for j in range(12) if w * 10 ** j < 0.1})
        return mp.quad(f, pts)


@pytest.mark.slow
@settings(max_examples=examples(8), deadline=None)
@given(st.one_of(st.floats(0.001, 0.999), st.floats(-12, -1).map(lambda u: 1 - 10.0 ** u)),
       st.integers(0, 400), st.sampled_from([1, 2]), st.one_of(st.none(), st.floats(0.05, 1.5)))
@example(0.25, 1000, 1, None)   # was 4 % off: E(1000) = 2e-55 under an absolute tolerance 1e-14
@example(0.5, 1, 1, 1.0)        # E(1) = 1 - E x = 0 exactly: the scale is the integral of |1 - s x|
def test_mp_kappa_and_mp_error_curve(g, T, power, eta_n):
    """mp_kappa: relative error <= 4 eps for gamma in (0, 1) (before: 2e-4 at 1 - 1e-12, 1 - sqrt(gamma) cancelled);
    mp_error_curve: error <= 1e-11 int |1 - s x|^t rho at every t however small it is, i.e. relative 1e-11 where
    1 - s x >= 0 on the support (s <= 1/x_+, the default; with a larger step E(t) can cancel to 0, as E(1) = 0 at
    s = 1) (before: 4 % at t = 1000, an absolute
    tolerance; and 2e-10 at t = 0 for gamma = 1 - 4e-10, the density's 1/x dip unresolved), for gamma in
    [1e-3, 1 - 1e-12], t <= 1000, both powers, eta_n in [0.05, 1.5] or 1/x_+."""
    with mp.workdps(40):
        G = mp.mpf(g)
        kref = ((1 + mp.sqrt(G)) / (1 - mp.sqrt(G))) ** 2
        assert record("looped.mp_kappa", abs(LP.mp_kappa(g) - kref) / (4 * EPS * kref), g=g) <= 1
        s = 1 / (1 + mp.sqrt(G)) ** 2 if eta_n is None else mp.mpf(eta_n)
    E = LP.mp_error_curve(g, T, power, eta_n=eta_n)
    for t in sorted({1, T} & set(range(T + 1))):
        ref = _mp_curve(g, power * t, s)
        size = ref if s * (1 + mp.sqrt(G)) ** 2 <= 1 else _mp_curve(g, power * t, s, absolute=True)
        note(f"t={t}: {E[t]!r} vs {mp.nstr(ref, 17)}")
        assert record("looped.mp_error_curve", abs(E[t] - ref) / (1e-11 * abs(size) + mp.mpf(1e-300)), g=g, t=t,
                      power=power, eta_n=eta_n) <= 1


@settings(max_examples=examples(15), deadline=None)
@given(st.integers(2, 100), st.integers(1, 100), st.integers(0, 20), st.sampled_from([1, 2]),
       st.one_of(st.none(), st.floats(1e-4, 0.1)))
def test_finite_curve_and_lambda_max_mean(n, d, T, power, eta):
    """finite_error_curve: correctly rounded (within half an ulp of the exact rational value, evaluated in mpmath at
    200 digits from the exact integer moments); lambda_max_mean: relative error <= 8 eps against its formula in
    mpmath; wishart_trace_moments: exact integers, symmetric in (n, d) for k >= 1."""
    got = LP.finite_error_curve(n, d, T, power, eta=eta)
    step = Fraction(1 / LP.lambda_max_mean(n, d) if eta is None else eta)
    m = LP.wishart_trace_moments(n, d, power * T)
    assert LP.wishart_trace_moments(d, n, power * T)[1:] == m[1:]
    with mp.workdps(200):
        e = mp.mpf(step.numerator) / step.denominator
        for t in sorted({0, 1, T // 2, T} & set(range(T + 1))):
            k = power * t
            ref = mp.fsum(math.comb(k, j) * (-e) ** j * m[j] for j in range(k + 1)) / d
            assert abs(got[t] - ref) <= abs(ref) * EPS / 2 * (1 + 1e-12) + mp.mpf(1e-320)
        N, D = mp.mpf(n - 1), mp.mpf(d)
        sq = mp.sqrt(N) + mp.sqrt(D)
        lref = sq * sq + sq * (1 / mp.sqrt(N) + 1 / mp.sqrt(D)) ** (mp.mpf(1) / 3) * mp.mpf(LP.finite.TW1_MEAN)
        assert record("looped.lambda_max_mean", abs(LP.lambda_max_mean(n, d) - lref) / (8 * EPS * abs(lref))) <= 1


@settings(max_examples=examples(6), deadline=None)
@given(st.integers(4, 30), st.integers(1, 4), st.integers(1, 5))
@example(4, 1, 2)   # d = 1: the start was on the symmetric diagonal and the result a saddle, 25 % above the minimum
def test_optimal_schedule_is_a_minimum(context, d, T):
    """optimal_schedule: the value is within 1e-10 relative of a local minimum, not a saddle: a BFGS polish from the
    returned steps, each nudged by a different 1e-3 (off the symmetric diagonal), does not improve it by more
    (T <= 5, d <= 4)."""
    from scipy.optimize import minimize
    problem = LP.Problem.isotropic_gaussian(context, d)
    eta, value = LP.optimal_schedule(problem, T, prompts=64)
    X, th, _ = LP.sample_prompts(problem, 64, 0)
    mu, W = np.linalg.eigh(np.swapaxes(X, 1, 2) @ X)
    w = np.einsum("pij,pi->pj", W, th) ** 2 / 64

    def f(z):
        fac = 1 - z[:, None, None] * mu
        prod = np.prod(fac, axis=0)
        return float(np.sum(w * prod ** 2)), np.array([np.sum(w * 2 * prod ** 2 / fac[t] * -mu) for t in range(T)])
    start = eta * (1 + 1e-3 * np.linspace(-1, 1, T)) if T > 1 else eta
    res = minimize(f, start, jac=True, method="BFGS", options={"gtol": 1e-14, "maxiter": 10000})
    assert record("looped.optimal_schedule", max(0.0, value - res.fun) / (1e-10 * value), T=T, d=d) <= 1


@settings(max_examples=examples(10), deadline=None)
@given(st.integers(1, 50), st.integers(1, 50), st.integers(0, 2 ** 32 - 1))
def test_sample_prompts_unit_tasks(context, d, seed):
    """sample_prompts: theta* has unit norm to 4 eps (mpmath norm of the float vector)."""
    _, th, _ = LP.sample_prompts(LP.Problem.isotropic_gaussian(context, d), 3, seed)
    with mp.workdps(40):
        for row in th:
            assert abs(mp.sqrt(mp.fsum(mp.mpf(float(v)) ** 2 for v in row)) - 1) <= 4 * EPS
