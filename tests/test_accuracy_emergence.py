"""Declared accuracy of popdyn.models.emergence over Hypothesis searches that reach the corners of the model
(smoothing s from 1e-8 to 1e8, pre-activations from 1e-12 to 1e6 on either side of the window, probabilities within
1e-12 of 0 or 1, skewed label classes), against exact references: mpmath at 50-60 digits (Phi, phi, the smoothed
ramp, the Gaussian-mixture sums) and exact rationals and enumeration over the joint law of the patterns."""
import itertools
import math
import warnings
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, example, given, note, settings
from hypothesis import strategies as st

from popdyn.models import emergence as E

from ._accuracy import EPS, examples, hinge_vertices, record

# gaussian.normal_pdf returns nan for |t| > 2.6e5 (a known defect fixed in popdyn/gaussian.py): the searches keep
# |z|/s and |1 - z|/s below 2e5
_T_MAX = 2e5


# ---- activations ----------------------------------------------------------------------------------------------

def _Phi_diff_mp(hi, lo):
    """Phi(hi) - Phi(lo), hi >= lo, on the tail side where neither is near 1."""
    if lo >= 0:
        return mp.ncdf(-lo) - mp.ncdf(-hi)
    return mp.ncdf(hi) - mp.ncdf(lo)


def _win_mp(z, s):
    z, s = mp.mpf(z), mp.mpf(s)
    return _Phi_diff_mp((1 - z) / s, -z / s) if z >= mp.mpf(1) / 2 else _Phi_diff_mp(z / s, (z - 1) / s)


def _ramp_mp(t):
    return t * mp.ncdf(t) + mp.npdf(t)


def _strelu_mp(z, s):
    """sigma~_s(z) = s (g(z/s) - g((z-1)/s)) below 1/2 and 1 - sigma~_s(1 - z) above (no 1 - (1 - tiny))."""
    z, s = mp.mpf(z), mp.mpf(s)
    if z > mp.mpf(1) / 2:
        return 1 - _strelu_mp(1 - z, s)
    return s * (_ramp_mp(z / s) - _ramp_mp((z - 1) / s))


@st.composite
def preacts(draw):
    """(z, s): s = 10^[-8, 8]; z anywhere: 10^[-12, 6] of either sign, 1 - that, 1/2 +- 10^[-12, 0], the bulk, the
    Gaussian tail z/s in [-38.6, -1] (where phi is still a normal float) and 1 - that."""
    s = 10.0 ** draw(st.floats(-8, 8))
    kind = draw(st.sampled_from(["bulk", "near0", "near1", "half", "far", "tail"]))
    e = 10.0 ** draw(st.floats(-12, 6))
    sg = draw(st.sampled_from([-1.0, 1.0]))
    z = {"bulk": draw(st.floats(-3, 4)), "near0": sg * e, "near1": 1.0 + sg * e, "half": 0.5 + sg * min(e, 1.0),
         "far": sg * e * 1e3, "tail": draw(st.floats(-38.6, -1)) * s}[kind]
    if kind == "tail" and draw(st.booleans()):
        z = 1.0 - z
    assume(max(abs(z), abs(1 - z)) / s <= _T_MAX)
    return z, s


def _rel(got, ref, bound, tiny=1e-300):
    """|got - ref| / (bound |ref| + tiny): relative where the reference is a normal float, absolute below."""
    return float(abs(mp.mpf(float(got)) - ref) / (bound * abs(ref) + tiny))


@settings(max_examples=examples(60), deadline=None)
@given(preacts())
@example((-3.0, 0.1))          # t = -30: the ramps cancel by t^2 and ndtr's tail is t^2 eps off (was 5e-11)
@example((0.4999, 1e3))        # h' near 1/2 at large s (was 6e-7 relative off)
@example((1e-9, 1e6))          # the ramps cancel to 1/s (was 2e-10 relative off)
@example((-1e6, 1e10))         # window at s = 1e10 (was 8e-7 relative off)
@example((-3.2015037593984964, 0.1))   # 1 - |t| R(|t|) cancels by t^2 = 1e3 (0.42 of the bound)
def test_activations(case):
    """window, smooth_trunc_relu, window_derivs: relative error <= 1e-12 (absolute 1e-300 where the value is
    subnormal) for any z and s in [1e-8, 1e8] with |z|/s, |1 - z|/s <= 2e5; h'' absolute <= 1e-12
    (|u0| phi(u0) + |u1| phi(u1)) / s^2 (it has roots off [0, 1]); against mpmath at 60 digits (before: 5e-11 at
    t = -30, 2e-10 at s = 1e6, h' 6e-7 at s = 1e3 and all digits at s = 1e6)."""
    z, s = case
    with mp.workdps(60):
        w, st_, = _win_mp(z, s), _strelu_mp(z, s)
        b, S = mp.mpf(z), mp.mpf(s)
        u0, u1 = b / S, (1 - b) / S
        h1 = (mp.npdf(u0) - mp.npdf(u1)) / S
        h2 = -(u0 * mp.npdf(u0) + u1 * mp.npdf(u1)) / S ** 2
        h2s = (abs(u0) * mp.npdf(u0) + abs(u1) * mp.npdf(u1)) / S ** 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gw, gs = E.window(z, s), E.smooth_trunc_relu(z, s)
        gh, gh1, gh2 = E.window_derivs(z, s)
    assert 0 <= gw <= 1 and 0 <= gs <= 1
    assert record("emergence.window", _rel(gw, w, 1e-12), z=z, s=s) <= 1
    assert record("emergence.smooth_trunc_relu", _rel(gs, st_, 1e-12), z=z, s=s) <= 1
    assert record("emergence.window_derivs (h, h')", max(_rel(gh, w, 1e-12), _rel(gh1, h1, 1e-12)), z=z, s=s) <= 1
    assert record("emergence.window_derivs (h'')", float(abs(gh2 - h2) / (1e-12 * h2s + mp.mpf(1e-300))),
                  z=z, s=s) <= 1


def test_activations_vectorised_and_s0():
    """The arrays take the same branches per element as the scalars (narrow-interval rule at large s included),
    and s = 0 gives the truncated ReLU and the open-interval indicator."""
    z = np.array([-2e3, -0.5, 0.0, 0.25, 0.5, 0.75, 1.0, 3e3])
    for s in (0.05, 2.0, 1e4):
        assert np.array_equal(E.window(z, s), [float(E.window(v, s)) for v in z])
        assert np.array_equal(E.smooth_trunc_relu(z, s), [float(E.smooth_trunc_relu(v, s)) for v in z])
    assert np.array_equal(E.smooth_trunc_relu(z, 0.0), np.clip(z, 0, 1))
    assert np.array_equal(E.window(z, 0.0), ((z > 0) & (z < 1)).astype(float))


# ---- data moments (exact rationals) -------------------------------------------------------------------------

def _moments_exact(model):
    """sigt^2, gamma, Ey, p_plus, gamma_weighted of a PatternModel in exact rationals from its (float) support,
    the probabilities normalised (their float sum is 1 only to rounding)."""
    pi = [Fraction(float(v)) for v in model.A_probs]
    pi = [p / sum(pi) for p in pi]
    S = [[Fraction(int(v)) for v in row] for row in model.A_support]
    y = [Fraction(int(v)) for v in model.labels]
    k = model.k
    mean = [sum(p * r[j] for p, r in zip(pi, S)) for j in range(k)]
    var = sum(sum(p * (r[j] - mean[j]) ** 2 for p, r in zip(pi, S)) for j in range(k))
    pb = [Fraction(float(v)) for v in np.broadcast_to(model.p_bg, (model.D - k,))]
    sig2 = var + sum(p * (1 - p) for p in pb)
    Ey = sum(p * v for p, v in zip(pi, y))
    gamma = [sum(p * v * (r[j] - mean[j]) for p, v, r in zip(pi, y, S)) for j in range(k)]
    pp, pm = sum(p for p, v in zip(pi, y) if v > 0), sum(p for p, v in zip(pi, y) if v < 0)
    alpha = [Fraction(1, 2) / (pp if v > 0 else pm) for v in y]
    gw = [sum(p * a * v * r[j] for p, a, v, r in zip(pi, alpha, y, S)) for j in range(k)]
    return sig2, gamma, Ey, (pp, pm), gw


def _p_corner(draw):
    """A probability in (0, 1): the bulk or within 10^[-12, -1] of 0 or 1."""
    kind = draw(st.sampled_from(["bulk", "low", "high"]))
    if kind == "bulk":
        return draw(st.floats(0.02, 0.98))
    e = 10.0 ** draw(st.floats(-12, -1))
    return e if kind == "low" else 1.0 - e


@st.composite
def pattern_models(draw, k_max=8, nb_max=6):
    """parity_mixture or iid_block_model (a random count labeling, both classes present) with k in [1, 8],
    D - k in [1, 6], probabilities anywhere in (0, 1) including 1e-12 from the ends."""
    k, nb = draw(st.integers(1, k_max)), draw(st.integers(1, nb_max))
    p_bg = _p_corner(draw)
    if draw(st.booleans()):
        return E.parity_mixture(k + nb, k, p_bg if draw(st.booleans()) else _p_corner(draw))
    pos = draw(st.sets(st.integers(0, k), min_size=1, max_size=k))
    return E.iid_block_model(k + nb, k, _p_corner(draw), p_bg, sorted(pos))


@settings(max_examples=examples(30), deadline=None)
@given(pattern_models())
@example(E.PatternModel(3, 2, np.array([[0, 0], [0, 1], [1, 0], [1, 1]]),   # P(y = -1) = 1e-18: was 1/0
                        np.array([1 - 2e-9, 1e-9, 1e-9, 1e-18]), np.array([1, 1, 1, -1]), 0.5))
def test_moments(model):
    """PatternModel.moments: sigt relative error <= 1.5 eps, mu_A <= eps/2 and mu_A + mu_A_lo <= 1e-28; p_plus,
    p_minus relative <= 1e-13, Ey absolute 1e-13; gamma absolute <= 1e-13 E phi~_j, gamma_weighted <= 1e-13
    E[alpha_y phi~_j]; against exact rationals (before: sigt 10 eps and mu_A 47 eps off at k = 12; a class of
    probability 1e-18 made p_plus round to 1 and the class weights divide by zero)."""
    mom = model.moments()
    sig2, gamma, Ey, (pp, pm), gw = _moments_exact(model)
    _check_sigt_mu_A(model)
    assert record("emergence.moments (Ey, p_plus)", max(float(abs(Fraction(mom.Ey) - Ey)),
                                                       float(abs(Fraction(mom.p_plus) - pp) / pp),
                                                       float(abs(Fraction(mom.p_minus) - pm) / pm)) / 1e-13) <= 1
    assert mom.p_minus > 0 and mom.p_plus > 0
    scale = model.A_probs @ model.A_support   # E phi~_j >= E|phi~_j - E phi~_j| / 2
    wscale = (model.A_probs * np.where(model.labels > 0, 0.5 / float(pp), 0.5 / float(pm))) @ model.A_support
    for j in range(model.k):
        sc = max(float(scale[j]), 1e-300)
        assert record("emergence.moments (gamma)", float(abs(Fraction(mom.gamma[j]) - gamma[j])) / (1e-13 * sc),
                      k=model.k, j=j) <= 1
        assert record("emergence.moments (gamma_weighted)",
                      float(abs(Fraction(mom.gamma_weighted[j]) - gw[j])) / (1e-13 * max(wscale[j], 1e-300))) <= 1


def _check_sigt_mu_A(model):
    """sigt relative error <= 1.5 eps, mu_A <= eps/2 (+ 1e-28) and mu_A + mu_A_lo <= 1e-28, against exact rationals
    (the probabilities normalised; sigt at 40 digits)."""
    mom = model.moments()
    muA, sig2, _ = _count_law_exact(model)
    with mp.workdps(40):
        sigt = mp.sqrt(mp.mpf(sig2.numerator) / sig2.denominator)
        assert record("emergence.moments (sigt)", abs(mom.sigt - sigt) / (1.5 * EPS * sigt), model=repr(model)) <= 1
    err, err_dd = (abs(Fraction(mom.mu_A) + Fraction(lo) - muA) / muA for lo in (0.0, mom.mu_A_lo))
    assert record("emergence.moments (mu_A)", max(float(err / Fraction(EPS / 2 + 1e-28)), float(err_dd) / 1e-28),
                  model=repr(model)) <= 1
    for c in range(model.k + 1):   # Moments.centred: c - mu_A to eps |c - mu_A| + 1e-28 mu_A (two roundings)
        exact = c - muA
        assert record("emergence.Moments.centred", float(abs(Fraction(float(mom.centred(c))) - exact)
                                                          / (EPS * abs(exact) + Fraction(1e-28) * muA)), c=c) <= 1


def test_moments_large_support():
    """sigt and mu_A of an iid block with 4096 support rows (k = 12) and of the parity mixture at k = 16 (65536
    rows), to the declared 1.5 eps and eps/2 (before: summed plainly, sigt 10 eps and mu_A 47 eps off at k = 12)."""
    for model in (E.iid_block_model(14, 12, 0.3, 0.5, [1, 5, 7]), E.parity_mixture(18, 16, 0.3)):
        _check_sigt_mu_A(model)


@st.composite
def exchangeable_models(draw):
    """iid blocks in count-resolved form (k in 17..120) with a random proper label set, probabilities anywhere in
    (0, 1) including 1e-12 from the ends (a class may underflow: P(y = 1) = 1e-360 at p_A = 1e-12, P = {30})."""
    k = draw(st.integers(17, 120))
    pos = draw(st.sets(st.integers(0, k), min_size=1, max_size=k))
    return E.iid_block_model(k + draw(st.integers(1, 3)), k, _p_corner(draw), _p_corner(draw), sorted(pos))


@settings(max_examples=examples(20), deadline=None)
@given(exchangeable_models())
@example(E.iid_block_model(32, 30, 1e-12, 0.5, [30]))      # P(y = 1) underflows to 0: was 0.5 / 0
def test_moments_exchangeable(model):
    """ExchangeablePatternModel.moments: sigt relative error <= 1.5 eps, mu_A + mu_A_lo = k p_A to eps^2; p_plus,
    p_minus relative <= 1e-13 above 1e-300; Ey absolute 1e-13; gamma absolute <= 1e-13 p_A; gamma_weighted
    absolute <= 1e-13 E[alpha_y phi~_j]; against the binomial law in mpmath at 60 digits."""
    mom, k = model.moments(), model.k
    with mp.workdps(60):
        p, q = mp.mpf(model.p_A), mp.mpf(float(model.p_bg))
        pi = [mp.binomial(k, c) * p ** c * (1 - p) ** (k - c) for c in range(k + 1)]
        pos = [c in model.positive_counts for c in range(k + 1)]
        pp, pm = (mp.fsum(v for v, s in zip(pi, pos) if s == cls) for cls in (True, False))
        cp, cm = (mp.fsum(v * c for c, (v, s) in enumerate(zip(pi, pos)) if s == cls) for cls in (True, False))
        Ey = pp - pm
        sigt = mp.sqrt(k * p * (1 - p) + (model.D - k) * q * (1 - q))
        assert record("emergence.moments exchangeable (sigt)", abs(mom.sigt - sigt) / (1.5 * EPS * sigt)) <= 1
        assert abs(mp.mpf(mom.mu_A) + mom.mu_A_lo - k * p) <= EPS ** 2 * k * p
        assert record("emergence.moments exchangeable (Ey, p_plus)",
                      max([abs(mom.Ey - Ey)] + [abs(v - ref) / ref for v, ref in ((mom.p_plus, pp), (mom.p_minus, pm))
                                                if ref > 1e-300]) / 1e-13) <= 1
        assert record("emergence.moments exchangeable (gamma)", abs(mom.gamma[0] - ((cp - cm) / k - Ey * p))
                      / (1e-13 * p)) <= 1
        gw, scale = ((cp / pp + sign * cm / pm) / (2 * k) for sign in (-1, 1))   # E[alpha_y y c] / k, E[alpha_y c] / k
        assert record("emergence.moments exchangeable (gamma_weighted)",
                      abs(mom.gamma_weighted[0] - gw) / (1e-13 * scale), k=k) <= 1


# ---- neuron correlations (exact enumeration of the joint law in mpmath) ----------------------------------------

def _corr_exact(model, q, b, s):
    """T (D,), Tb, Ta, beta by enumerating the A-support rows and every background configuration, with the
    window and the smoothed ReLU in mpmath (the moments exact too)."""
    sig2, _, _, _, _ = _moments_exact(model)
    k, nb = model.k, model.D - model.k
    pi = [mp.mpf(float(v)) for v in model.A_probs]
    pi = [p / mp.fsum(pi) for p in pi]
    S = model.A_support
    mean = [mp.fsum(p * int(r[j]) for p, r in zip(pi, S)) for j in range(k)]
    sigt = mp.sqrt(mp.mpf(sig2.numerator) / sig2.denominator)
    pb = [mp.mpf(float(v)) for v in np.broadcast_to(model.p_bg, (nb,))]
    T = [mp.mpf(0)] * model.D
    Tb = Ta = beta = mp.mpf(0)
    qm = [mp.mpf(float(v)) for v in q]
    cfgs = []
    for cfg in itertools.product([0, 1], repeat=nb):
        w = mp.fprod(p if c else 1 - p for c, p in zip(cfg, pb))
        phB = [(c - p) / sigt for c, p in zip(cfg, pb)]
        cfgs.append((w, phB, mp.fsum(qq * v for qq, v in zip(qm[k:], phB))))
    for p, r, yv in zip(pi, S, model.labels):
        phA = [(int(r[j]) - mean[j]) / sigt for j in range(k)]
        cA = mp.mpf(float(b)) + mp.fsum(qq * v for qq, v in zip(qm[:k], phA))
        for w, phB, sB in cfgs:
            z = cA + sB
            win, sr = _win_mp(z, s), _strelu_mp(z, s)
            wy = p * w * int(yv)
            for j, v in enumerate(phA + phB):
                T[j] += wy * v * win
            Tb += wy * win
            Ta += wy * sr
    for w, phB, sB in cfgs:
        beta += w * _win_mp(mp.mpf(float(b)) + sB, s)
    scale = [mp.fsum(p * w * abs(v) for p, r in zip(pi, S) for w, phB, _ in cfgs
                     for v in [((int(r[j]) - mean[j]) / sigt if j < k else phB[j - k])]) for j in range(model.D)]
    return T, Tb, Ta, beta, scale


@st.composite
def neurons(draw, model):
    """(q, b, s): q of scale 10^[-3, 1] per coordinate with either sign or 0, b in [-2, 3], s in 10^[-2, 1]."""
    D = model.D
    q = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(-3, 1).map(lambda e: 10.0 ** e)),
                               min_size=D, max_size=D))) * np.array(
        draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=D, max_size=D)))
    return q, draw(st.floats(-2, 3)), 10.0 ** draw(st.floats(-2, 1))


@settings(max_examples=examples(12), deadline=None)
@given(pattern_models(k_max=3, nb_max=4), st.data())
@example(E.PatternModel(2, 1, np.array([[0.], [1.]]), np.array([0.75, 0.25]), np.array([1., -1.]), 0.999999),
         (np.zeros(2), 0.0, 1.0))   # enumerate: phi_B = v0 + (v1 - v0) lost eps |v0| of v1 (1.6e-12 E|phi_B| off)
@example(E.PatternModel(2, 1, np.array([[0.], [1.]]), np.array([0.5, 0.5]), np.array([1., -1.]), 0.5),
         (np.zeros(2), -2.0, 0.01))   # fourier: beta was -2e-17
@example(E.iid_block_model(3, 2, 1 - 1e-6, 0.5, [0]), (np.zeros(3), 0.0, 1.0))   # gamma ~ 1e-12 from terms of 1e-6
@example(E.PatternModel(4, 1, np.array([[0.], [1.]]), np.array([1 - 1e-10, 1e-10]), np.array([1., -1.]), 1e-11),
         (np.array([0., 0., 0., -1.]), 0.0, 0.1))   # fourier: 1e7 nodes (h ~ sqrt(p_bg)) summed plainly, Tb 1.4e-12 off
def test_neuron_correlations(model, data):
    """neuron_correlations ("fourier" and "enumerate"): absolute error <= 1e-12 E|phi_j| for T_j and <= 1e-12
    for T_b, T_a, beta (all bounded by those scales), for s in [1e-2, 10], |q_l| up to 10, probabilities within
    1e-12 of 0 or 1; against the enumeration of the joint law in mpmath at 40 digits."""
    q, b, s = data.draw(neurons(model)) if isinstance(data, st.DataObject) else data
    with mp.workdps(40):
        T, Tb, Ta, beta, scale = _corr_exact(model, q, b, s)
    for method in ("fourier", "enumerate"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = E.neuron_correlations(model, q, b, s, method=method)
        note(f"{method}: {got}")
        err = max(max(abs(got.T[j] - T[j]) / scale[j] for j in range(model.D)),
                  abs(got.Tb - Tb), abs(got.Ta - Ta), abs(got.beta - beta))
        assert record(f"emergence.neuron_correlations ({method})", err / 1e-12, q=list(q), b=b, s=s,
                      model=repr(model)) <= 1
        assert 0 <= got.beta <= 1


# ---- Gaussian-mixture parity (mpmath sums over the 2^k centres) ------------------------------------------------

@settings(max_examples=examples(15), deadline=None)
@given(st.integers(1, 4), st.integers(0, 2), st.floats(-2, 1), st.data())
@example(2, 0, 0.0, None)   # S = 1e3, m = 1/2 - 1e-4 (the density difference cancels there)
def test_gmm_correlations(k, extra, log_sr, data):
    """gmm_correlations: |T_j - exact| <= 1e-12 2^-k sum_eps (|(M eps)_j| win_S + tau^2 |w_j| |win_S'|), T_b, T_a,
    beta absolute <= 1e-12 2^-k sum (win_S, sigma~_S) + 1e-300 (the parity sums cancel: the scale is the sum of the
    magnitudes), S from 1e-3 to 1e3, against the sums in mpmath at 50 digits with the window and its derivative
    exact."""
    d = k + extra
    if data is None:
        M, w, b, s, sr = np.eye(d)[:, :k], np.array([1e-3, 0.0]), 0.5 - 1e-4, 1e3, 1.0
    else:
        rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
        M = np.linalg.qr(rng.standard_normal((d, k)))[0]
        w = rng.standard_normal(d) * 10.0 ** data.draw(st.floats(-3, 1))
        b, s, sr = data.draw(st.floats(-2, 3)), 10.0 ** data.draw(st.floats(-3, 3)), 10.0 ** log_sr
    model = E.GaussianParityMixture(d, k, sr, M)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = E.gmm_correlations(model, w, b, s)
    with mp.workdps(50):
        tau2 = mp.mpf(sr) ** 2 * k / d
        S = mp.sqrt(tau2 * mp.fsum(mp.mpf(v) ** 2 for v in w) + mp.mpf(s) ** 2)
        T, Ts = [mp.mpf(0)] * d, [mp.mpf(0)] * d
        Tb = Ta = Bs = As = mp.mpf(0)
        for eps in itertools.product([-1, 1], repeat=k):
            y = math.prod(eps)
            me = [mp.fsum(mp.mpf(M[i, j]) * eps[j] for j in range(k)) for i in range(d)]
            m = mp.fsum(mp.mpf(w[i]) * me[i] for i in range(d)) + mp.mpf(b)
            win, sr_ = _win_mp(m, S), _strelu_mp(m, S)
            dens = (mp.npdf(m / S) - mp.npdf((1 - m) / S)) / S
            for i in range(d):
                T[i] += y * (me[i] * win + tau2 * mp.mpf(w[i]) * dens)
                Ts[i] += abs(me[i]) * win + tau2 * abs(mp.mpf(w[i]) * dens)
            Tb, Ta, Bs, As = Tb + y * win, Ta + y * sr_, Bs + win, As + sr_
        n = 2 ** k
        tiny = mp.mpf(1e-300)   # absolute where the scale is subnormal
        err = max([abs(got.T[i] - T[i] / n) / (1e-12 * Ts[i] / n + tiny) for i in range(d)]
                  + [abs(got.Tb - Tb / n) / (1e-12 * Bs / n + tiny), abs(got.Ta - Ta / n) / (1e-12 * As / n + tiny),
                     abs(got.beta - _win_mp(b, S)) / (1e-12 * _win_mp(b, S) + tiny)])
    assert 0 <= got.beta <= 1
    assert record("emergence.gmm_correlations", float(err), k=k, d=d, w=list(w), b=b, s=s, sr=sr) <= 1


# ---- rates, error scales and lower bounds (mpmath at 40 digits from the float inputs) ---------------------------

def _relerr(got, ref):
    ref = mp.mpf(ref)
    return float(abs(mp.mpf(float(got)) - ref) / abs(ref)) if ref != 0 else float(abs(got))


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(1, 10 ** 6), st.integers(1, 10 ** 6), st.floats(-6, 12), st.floats(-6, 6), st.floats(-6, 6))
def test_rates_and_error_scales(k, m, log_T, log_C, log_x):
    """theorem1_rate, theorem26_intermediate_rate, theorem26_terms, width_for_loss, eps_e, eps_e2: relative error
    <= 16 eps (sums of positive products), k and m to 1e6, T, C and the data scales over 1e-6..1e12."""
    T, C, x = 10.0 ** log_T, 10.0 ** log_C, 10.0 ** log_x
    with mp.workdps(40):
        K, Mm, TT, CC, X = (mp.mpf(v) for v in (k, m, T, C, x))
        m23 = Mm ** (mp.mpf(2) / 3)
        r1 = CC * (K ** 8 / m23 + K ** 3 * TT / Mm ** 2 + K ** 2 * m23 / TT)
        eta = K ** 2 / (TT * Mm ** (mp.mpf(1) / 3))
        r26 = CC * (K ** 9 / Mm + K ** 4 * eta ** 2 * TT ** 2 + K ** 3 * TT / Mm ** 2 + K ** 9 / (eta * TT * Mm)
                    + eta * Mm)
        lam = K ** 3 / (X * Mm ** (mp.mpf(1) / 3))
        a2sq, a0, a2 = K ** 9 / Mm, Mm / K, mp.sqrt(2 * Mm) / (K * Mm ** 2)
        lever = mp.sqrt(a2sq * a0)
        terms = [a2sq / 2, lever * CC * TT * eta * lam * X / K, lever * eta ** 2 * TT ** 2,
                 lever * CC * TT / (K * Mm ** 2), a2sq / (2 * eta * TT), a2 * mp.sqrt(Mm), eta * Mm]
        epsl = mp.mpf(min(0.5, x / 1e6))
        wfl = CC * K ** 12 / epsl ** mp.mpf(1.5)
        D, po, delta = k + m, mp.mpf(min(x, 1e6) / 1e6 / 2), mp.mpf(0.05)
        L = mp.log(D * Mm / delta)
        ee = CC * (K * mp.sqrt(L) + L ** mp.mpf(1.5)) / mp.sqrt(po * (1 - po) * (D - K))
        ee2 = CC * TT * X * K * (X + ee) / (X ** 2 * CC) + mp.exp(-K)
    got = E.theorem26_terms(k, m, T, sigt=x, C=C)
    errs = [_relerr(E.theorem1_rate(k, m, T, C=C), r1), _relerr(E.theorem26_intermediate_rate(k, m, T, C=C), r26),
            _relerr(got["total"], mp.fsum(terms)), _relerr(E.width_for_loss(k, float(epsl), C=C), wfl)]
    errs += [_relerr(got[key], t) for key, t in zip(("a_tilde", "lam_drift", "eta_drift", "step2_drift",
                                                     "oco_norm", "a2", "eta_m"), terms)]
    errs.append(_relerr(E.eps_e(k, D, float(po), m, 0.05, C=C), ee))
    errs.append(_relerr(E.eps_e2(T, x, k, x, x, C, float(ee), C=C), ee2))
    assert record("emergence rates and error scales", max(errs) / (16 * EPS), k=k, m=m, T=T) <= 1


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(1, 3000), st.data())
@example(60, None)
def test_lower_bounds(D, data):
    """fixed_feature_lower_bound (all forms), kernel_lower_bound: absolute error <= 1e-12 p_o (the clipped
    difference 1 - gap cancels; gap = B sqrt(t N / C(D, k)) from logs of numbers to 1e300 loses
    eps (log tN + log C)); sq_lower_bound: min_queries and error_gap relative <= 1e-12 where normal (the
    exponentials of logs to 709), sq_dim exact; against mpmath at 40 digits with the exact binomial."""
    if data is None:
        k, N, B, t, po, poly = 30, 10 ** 8, 10.0 ** 0.5, 1.0, 0.5, 2.0 ** 15
    else:
        k = data.draw(st.integers(1, D))
        N = data.draw(st.integers(1, 10 ** 300))
        B, t = 10.0 ** data.draw(st.floats(-300, 300)), 10.0 ** data.draw(st.floats(0, 5))
        po = data.draw(st.sampled_from([1.0, 0.5, 1e-12, 0.3]))
        poly = 10.0 ** data.draw(st.floats(0, 12))
        if data.draw(st.booleans()):   # gap near 1: B = sqrt(C / (t N)) (1 + tiny)
            with mp.workdps(40):
                B = float(mp.sqrt(mp.binomial(D, k) / (mp.mpf(t) * N)) * (1 + mp.mpf(10) ** data.draw(
                    st.integers(-15, -1)) * data.draw(st.sampled_from([-1, 1]))))
            assume(0 < B < 1e300)
    assume(float(t) * N < 1e308)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = {f: E.fixed_feature_lower_bound(po, N, B, k, D, f, t=t if f == "parseval" else 1.0)
               for f in ("parseval", "paper_sqrt2N_B", "paper_sqrt2NB")}
    with mp.workdps(40):
        C = mp.binomial(D, k)
        P, BB = mp.mpf(po), mp.mpf(B)
        refs = {"parseval": P * max(0, 1 - BB * mp.sqrt(mp.mpf(t) * N / C)),
                "paper_sqrt2N_B": P * max(0, 1 - mp.sqrt(2 * mp.mpf(N)) * BB / mp.mpf(2) ** k),
                "paper_sqrt2NB": P * max(0, 1 - mp.sqrt(2 * mp.mpf(N) * BB) / mp.mpf(2) ** k)}
        err = max(float(abs(got[f] - refs[f]) / P) for f in refs)
        kl = max(0, P * (1 - mp.mpf(poly) / mp.mpf(2) ** k) - 1 / mp.mpf(poly))
        err_k = float(abs(E.kernel_lower_bound(po, k, poly) - kl) / P)
        sq = E.sq_lower_bound(D, k)
        q, gap = C ** (mp.mpf(1) / 3) / 2, C ** -3
        rq = _relerr(sq.min_queries, q) if q < mp.mpf(2) ** 1023 else 0.0
        rg = _relerr(sq.error_gap, gap) if gap > mp.mpf(2) ** -1022 else float(abs(sq.error_gap - gap) / 1e-300)
    assert all(0 <= v <= po for v in got.values()) and 0 <= E.kernel_lower_bound(po, k, poly) <= po
    assert sq.sq_dim == math.comb(D, k)
    assert record("emergence.fixed_feature_lower_bound", err / 1e-12, D=D, k=k, N=N, B=B, t=t) <= 1
    assert record("emergence.kernel_lower_bound", err_k / 1e-12, k=k, poly=poly) <= 1
    assert record("emergence.sq_lower_bound", max(rq, rg) / 1e-12, D=D, k=k) <= 1


# ---- data-model helpers and finite samples (exact rationals; mpmath for the square roots) -----------------------

def _rows_exact(model):
    """pi (normalised), y, the centred row means E[phi~ - E phi~ | r] (R, D), the within-row background variances
    (R, D - k) and sigt^2, all exact rationals from the float inputs."""
    pi = [Fraction(float(v)) for v in model.A_probs]
    pi = [p / sum(pi) for p in pi]
    y = [int(v) for v in model.labels]
    P, group = model.background_groups()
    rows = [[Fraction(int(v)) for v in r] + [Fraction(float(p)) for p in P[g]]
            for r, g in zip(model.A_support, group)]
    D = model.D
    mean = [sum(p * r[j] for p, r in zip(pi, rows)) for j in range(D)]
    cen = [[r[j] - mean[j] for j in range(D)] for r in rows]
    var = [[p * (1 - p) for p in r[model.k:]] for r in rows]
    sig2 = sum(p * sum(c * c for c in r) for p, r in zip(pi, cen)) + sum(p * sum(v) for p, v in zip(pi, var))
    return pi, y, cen, var, sig2


def _y_phi_exact(model):
    """mu~ = E[y psi] and Sigma~ = Cov(y psi) for psi = phi~ - E phi~ (phi = psi / sigt), exact."""
    pi, y, cen, var, sig2 = _rows_exact(model)
    D, k = model.D, model.k
    mu = [sum(p * v * r[j] for p, v, r in zip(pi, y, cen)) for j in range(D)]
    S = [[sum(p * r[i] * r[j] for p, r in zip(pi, cen)) - mu[i] * mu[j] for j in range(D)] for i in range(D)]
    for j in range(k, D):
        S[j][j] += sum(p * v[j - k] for p, v in zip(pi, var))
    return mu, S, sig2


@settings(max_examples=examples(30), deadline=None)
@given(pattern_models(k_max=5, nb_max=3), st.integers(1, 10 ** 9), st.floats(-2, 3), st.floats(-2, 1))
@example(E.PatternModel(2, 1, np.array([[0.], [1.]]), np.array([0.5, 0.5]), np.array([-1., 1.]), 1e-9), 10,
         0.5, 0.0)   # y phi_A constant: tr Cov(y phi) = 4e-9 was E||y phi||^2 - ||mu||^2 (2.5e-8 relative off)
@example(E.PatternModel(3, 2, np.array([[0, 0], [0, 1], [1, 0], [1, 1]]), np.array([1 - 2e-9, 1e-9, 1e-9, 1e-18]),
                        np.array([1, 1, 1, -1]), 0.5), 10, 0.5, -1.0)   # 1 - Ey^2 = 4e-18 (the sd was 7.4x off)
def test_finite_sample_predictions(model, n, b1, log_s):
    """finite_sample_step2_deviation: relative error <= 64 eps kappa, kappa = 1 + E||E[phi | r]|| / ||E[y phi]||
    (the conditioning of E[y phi]); finite_sample_step2_cos: absolute <= 64 eps kappa (1 + K+/n), K+ the 1/n
    term's numerator (3|u'Su| + 2|v'Su| + tr S)/(2||mu||^2) with its terms in modulus (they cancel when v ~ u), and
    n refused where the expansion leaves [-1, 1]; finite_sample_bias_shift: mean absolute <= 2e-12 |a1| win_s(b1),
    sd relative <= 2e-12; against exact rationals (mpmath for the roots and the window). Before: E[y phi] and
    tr Cov(y phi) were sums that cancel where one class is rare or y phi nearly constant, the sd came from
    1 - Ey^2, and n = 1 gave a cosine of -37.8."""
    s = 10.0 ** log_s
    mu, S, sig2 = _y_phi_exact(model)
    D = model.D
    r2 = sum(m * m for m in mu)
    assume(r2 > 0)
    tr = sum(S[j][j] for j in range(D))
    with mp.workdps(40):
        dev = mp.sqrt(mp.mpf(tr.numerator) / tr.denominator / n / (mp.mpf(r2.numerator) / r2.denominator))
        f = lambda q: mp.mpf(q.numerator) / q.denominator  # noqa: E731
        nm = mp.sqrt(f(r2))
        u = [f(m) / nm for m in mu]
        v = [mp.mpf(1) / mp.sqrt(model.k) if j < model.k else mp.mpf(0) for j in range(D)]
        c = mp.fsum(a * b for a, b in zip(u, v))
        quad = lambda x, z: mp.fsum(x[i] * f(S[i][j]) * z[j] for i in range(D) for j in range(D))  # noqa: E731
        K = (3 * c * quad(u, u) - 2 * quad(v, u) - c * f(tr)) / (2 * f(r2))  # sigt^2 cancels
        Kabs = (3 * abs(quad(u, u)) + 2 * abs(quad(v, u)) + f(tr)) / (2 * f(r2))   # its terms' magnitudes
        cos = c + K / n
        win = _win_mp(b1, s)
        pp = sum(p for p, yv in zip(*_rows_exact(model)[:2]) if yv > 0)
        Ey, sd = f(2 * pp - 1), 2 * win * mp.sqrt(f(pp * (1 - pp)) / n)
    pi, y, cen, _, _ = _rows_exact(model)
    with mp.workdps(40):   # the conditioning of mu = E[y psi]: E||E[psi | r]|| / ||mu||
        kappa = 1 + mp.fsum(f(p) * mp.sqrt(f(sum(c * c for c in r))) for p, r in zip(pi, cen)) / mp.sqrt(f(r2))
    got = E.finite_sample_step2_deviation(model, n)
    assert record("emergence.finite_sample_step2_deviation", abs(got - dev) / (64 * EPS * kappa * dev),
                  model=repr(model), kappa=float(kappa)) <= 1
    if abs(cos) <= 1 + 1e-13:   # beyond, the expansion is not a cosine and n must be refused
        gc = E.finite_sample_step2_cos(model, n)
        assert -1 <= gc <= 1
        assert record("emergence.finite_sample_step2_cos", abs(gc - cos) / (64 * EPS * kappa * (1 + Kabs / n)),
                      n=n) <= 1
    else:
        with pytest.raises(ValueError, match="'n'"):
            E.finite_sample_step2_cos(model, n)
    mean, sdg = E.finite_sample_bias_shift(model, n, [1.0], [b1], s)
    tiny = mp.mpf(1e-300)   # the window is absolute 1e-300 where subnormal
    assert record("emergence.finite_sample_bias_shift", max(abs(mean[0] - win * Ey) / (2e-12 * win + tiny),
                                                            abs(sdg[0] - sd) / (2e-12 * sd + tiny)),
                  model=repr(model)) <= 1


@settings(max_examples=examples(30), deadline=None)
@given(pattern_models(k_max=6, nb_max=3), st.data())
@example(E.iid_block_model(4, 3, 0.6133887424201363, 0.5, [3]), None)   # P(y=-1) + net masses rounded to 1 + 2^-52
def test_count_threshold_and_weighted_moments(model, data):
    """count_threshold_ceiling: absolute error <= 4 (R + k) eps and in [max P(y), 1] (before: 1 + 2^-52);
    class_weighted_moments: E_alpha_y, E_abs_alpha_y absolute <= 1e-13, E_alpha_y_phi_A absolute <= 1e-13
    E|alpha_y phi_j|, max_E_abs_alpha_y_phi_A relative <= 1e-13; sigt_general: sigt^2 absolute <= 1e-13
    (sum_jl |rho_jl Cov_jl| + d sigma_zeta^2); against exact rationals (brute force over thresholds and signs)."""
    pi, y, cen, var, sig2 = _rows_exact(model)
    counts = [int(v) for v in model.A_support.sum(1)]
    best = max(sum(p for p, c, yv in zip(pi, counts, y) if (1 if sg * (c - t) > 0 else -1) == yv)
               for t in [Fraction(2 * j - 1, 2) for j in range(model.k + 2)] for sg in (1, -1))
    got = E.count_threshold_ceiling(model)
    R = len(pi)
    assert max(sum(p for p, v in zip(pi, y) if v > 0), sum(p for p, v in zip(pi, y) if v < 0)) - 4 * R * EPS \
        <= got <= 1
    assert record("emergence.count_threshold_ceiling", float(abs(Fraction(got) - best)) / (4 * (R + model.k) * EPS),
                  model=repr(model)) <= 1
    pp = sum(p for p, v in zip(pi, y) if v > 0)
    al = [Fraction(1, 2) / (pp if v > 0 else 1 - pp) for v in y]
    wm = E.class_weighted_moments(model)
    with mp.workdps(40):
        st_ = mp.sqrt(mp.mpf(sig2.numerator) / sig2.denominator)
        f = lambda q: mp.mpf(q.numerator) / q.denominator  # noqa: E731
        ey = [f(sum(p * a * v * r[j] for p, a, v, r in zip(pi, al, y, cen))) / st_ for j in range(model.k)]
        ea = [f(sum(p * a * abs(r[j]) for p, a, r in zip(pi, al, cen))) / st_ for j in range(model.k)]
    err = max(abs(wm.E_alpha_y) / 1e-13, abs(wm.E_abs_alpha_y - 1) / 1e-13,
              max(float(abs(wm.E_alpha_y_phi_A[j] - ey[j]) / (1e-13 * ea[j])) for j in range(model.k)),
              float(abs(wm.max_E_abs_alpha_y_phi_A - max(ea)) / (1e-13 * max(ea))))
    assert record("emergence.class_weighted_moments", err, model=repr(model)) <= 1
    # sigt_general with a random unit-diagonal Gram matrix and input noise
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)) if data is not None else 0)
    Mm = rng.standard_normal((model.D + 2, model.D))
    Mm /= np.linalg.norm(Mm, axis=0)
    rho = Mm.T @ Mm
    rho = (rho + rho.T) / 2
    np.fill_diagonal(rho, 1.0)
    sz = 10.0 ** (data.draw(st.floats(-3, 1)) if data is not None else 0.0)
    d = model.D + 2
    _, Scov, _ = _y_phi_exact(model)   # Cov(phi~) = E[psi psi^T]: Sigma~ + mu~ mu~^T (y^2 = 1)
    mu_, _, _ = _y_phi_exact(model)
    cov = [[Scov[i][j] + mu_[i] * mu_[j] for j in range(model.D)] for i in range(model.D)]
    ref = sum(Fraction(float(rho[i, j])) * cov[i][j] for i in range(model.D) for j in range(model.D)) \
        + Fraction(sz) ** 2 * d
    scale = sum(abs(Fraction(float(rho[i, j])) * cov[i][j]) for i in range(model.D) for j in range(model.D)) \
        + Fraction(sz) ** 2 * d
    for conv in ("exact", "paper"):
        g = E.sigt_general(model, rho, sz, d, convention=conv)
        r = ref if conv == "exact" else sum(cov[j][j] for j in range(model.D)) + Fraction(sz) ** 2 * d
        assert record("emergence.sigt_general", float(abs(Fraction(g) ** 2 - r) / (Fraction(1e-13) * scale))) <= 1


# ---- parity certificates (exact rationals; mpmath enumeration of the cube) --------------------------------------

@settings(max_examples=examples(25), deadline=None)
@given(st.integers(1, 7), st.integers(1, 3), st.data())
def test_parity_correlations(D, N, data):
    """parity_correlations: absolute error <= D eps E|Psi_i| per entry (D butterfly passes), against the exact
    rational sums over the cube of feature values of every magnitude (1e-300 to 1e300, either sign)."""
    k = data.draw(st.integers(0, D))
    mags = 10.0 ** np.array(data.draw(st.lists(st.floats(-300, 300), min_size=N, max_size=N)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    Psi = rng.uniform(-1, 1, (2 ** D, N)) * mags
    A, c = E.parity_correlations(Psi, k)
    Z = list(itertools.product([-1, 1], repeat=D))
    for a, row in zip(A, c):
        for i in range(N):
            ex = sum(Fraction(math.prod(z[j] for j in a)) * Fraction(float(Psi[r, i])) for r, z in enumerate(Z))
            scale = sum(abs(Fraction(float(v))) for v in Psi[:, i]) / 2 ** D
            assert record("emergence.parity_correlations", float(abs(Fraction(float(row[i])) - ex / 2 ** D)
                                                                 / (D * Fraction(EPS) * scale)), D=D, k=k) <= 1


@settings(max_examples=examples(12), deadline=None)
@given(st.integers(1, 5), st.floats(-3, 3), st.floats(-2, 1), st.data())
@example(3, -3.0, 1.0, None)   # s = 1e-3 and |a| ~ 10: 1e5 trapezoid nodes
def test_parity_feature_correlations(D, log_s, log_a, data):
    """parity_feature_correlations: absolute error <= 1e-14 for s in [1e-3, 1e3], |a_ij|, |b_i| up to 10 (the
    values are at most 1 in modulus), against E[f_A sigma~_s(<a, z> + b)] over the cube with the smoothed ReLU in
    mpmath at 30 digits."""
    s = 10.0 ** log_s
    if data is None:
        a, b, A = np.array([[10.0, -7.0, 3.0]]), np.array([0.3]), [0, 2]
    else:
        rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
        a = rng.standard_normal((2, D)) * 10.0 ** log_a
        b = rng.uniform(-2, 3, 2)
        A = sorted(data.draw(st.sets(st.integers(0, D - 1), min_size=1, max_size=D)))
    got = E.parity_feature_correlations(a, b, s, A)
    with mp.workdps(30):
        for i in range(len(b)):
            ref = mp.fsum(math.prod(z[j] for j in A) * _strelu_mp(mp.fsum(mp.mpf(a[i, j]) * z[j] for j in
                                                                           range(a.shape[1])) + mp.mpf(b[i]), s)
                          for z in itertools.product([-1, 1], repeat=a.shape[1])) / 2 ** a.shape[1]
            assert record("emergence.parity_feature_correlations", float(abs(got[i] - ref)) / 1e-14, s=s,
                          a=a[i].tolist(), b=b[i], A=A) <= 1


@settings(max_examples=examples(12), deadline=None)
@given(pattern_models(k_max=3, nb_max=3), st.data())
def test_input_noise_gradient(model, data):
    """input_noise_gradient: |T_j - exact| <= 1e-12 sum |w| |phi_j| and |v_coef - exact| <= 1e-12 (sigma_zeta^2 /
    sigt^2) sum |w| (p(c) + p(1 - c)) (w = pi alpha_y y Pr(background), the sums' absolute scales), s from 1e-2 to
    10, sigma_zeta from 1e-3 to 10, either loss weighting; against the enumeration in mpmath at 40 digits."""
    q, b, s = data.draw(neurons(model))
    sz, wp = 10.0 ** data.draw(st.floats(-3, 1)), data.draw(st.sampled_from([0.0, 0.5, 3.0]))
    weighted = data.draw(st.booleans())
    T, v = E.input_noise_gradient(model, q, b, s, sz, wp, weighted=weighted)
    pi, y, cen, var, sig2 = _rows_exact(model)
    pp = sum(p for p, yv in zip(pi, y) if yv > 0)
    k, nb = model.k, model.D - model.k
    P, group = model.background_groups()
    with mp.workdps(40):
        f = lambda x: mp.mpf(x.numerator) / x.denominator  # noqa: E731
        st_ = mp.sqrt(f(sig2))
        qm = [mp.mpf(float(x)) for x in q]
        stt = mp.sqrt(mp.mpf(s) ** 2 + mp.mpf(sz) ** 2 * (mp.fsum(x * x for x in qm) + mp.mpf(wp)) / f(sig2))
        Tr, Ts = [mp.mpf(0)] * model.D, [mp.mpf(0)] * model.D
        vr = vs = mp.mpf(0)
        meanB = [sum(p * Fraction(float(P[g][j])) for p, g in zip(pi, group)) for j in range(nb)]
        for p, yv, r, g in zip(pi, y, model.A_support, group):
            al = (Fraction(1, 2) / (pp if yv > 0 else 1 - pp)) if weighted else 1
            phA = [f(Fraction(int(r[j])) - sum(pp_ * int(rr[j]) for pp_, rr in zip(pi, model.A_support))) / st_
                   for j in range(k)]
            for cfg in itertools.product([0, 1], repeat=nb):
                w = f(p * al) * yv * mp.fprod(mp.mpf(float(P[g][j])) if c else 1 - mp.mpf(float(P[g][j]))
                                              for j, c in enumerate(cfg))
                phi = phA + [f(c - meanB[j]) / st_ for j, c in enumerate(cfg)]
                c = mp.mpf(b) + mp.fsum(a * x for a, x in zip(qm, phi))
                win = _win_mp(c, stt)
                dens = (mp.npdf(c / stt) - mp.npdf((1 - c) / stt)) / stt
                for j in range(model.D):
                    Tr[j] += w * phi[j] * win
                    Ts[j] += abs(w * phi[j])
                vr += w * dens
                vs += abs(w) * (mp.npdf(c / stt) + mp.npdf((1 - c) / stt)) / stt
        coef = mp.mpf(sz) ** 2 / f(sig2)
        err = max([abs(T[j] - Tr[j]) / (1e-12 * Ts[j] + mp.mpf(1e-300)) for j in range(model.D)]
                  + [abs(v - coef * vr) / (1e-12 * coef * vs + mp.mpf(1e-300))])
    assert record("emergence.input_noise_gradient", float(err), model=repr(model), s=s, sz=sz) <= 1


# ---- steps: support, exact population gradient, hinge certificate (mpmath enumeration) ---------------------------

def _support_mp(model):
    """Every (phi, prob, y) of the joint law in mpmath (phi from the exact centred rows over sqrt(sigt^2))."""
    pi, y, cen, var, sig2 = _rows_exact(model)
    f = lambda x: mp.mpf(x.numerator) / x.denominator  # noqa: E731
    st_ = mp.sqrt(f(sig2))
    k, nb = model.k, model.D - model.k
    P, group = model.background_groups()
    out = []
    for p, yv, r, g in zip(pi, y, cen, group):
        pb = [Fraction(float(v)) for v in P[g]]
        meanB = [pb[j] - r[k + j] for j in range(nb)]   # E phi~_B (row r's background mean is centred in cen)
        for cfg in itertools.product([0, 1], repeat=nb):
            pr = p * math.prod(pb[j] if c else 1 - pb[j] for j, c in enumerate(cfg))
            phi = [f(r[j]) / st_ for j in range(k)] + [f(c - meanB[j]) / st_ for j, c in enumerate(cfg)]
            out.append((phi, pr, yv))
    return out


@st.composite
def small_networks(draw, model):
    """(params, s): n in {1, 2, 4} neurons, q of scale 10^[-2, 1], b in [-2, 3], a of scale 10^[-3, 1], s from
    0 (the truncated ReLU) to 10; with n even, half the time the symmetric pairing of the theory."""
    n = draw(st.sampled_from([1, 2, 4]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    Q = rng.standard_normal((n, model.D)) * 10.0 ** draw(st.floats(-2, 1))
    b = rng.uniform(-2, 3, n)
    a = rng.standard_normal(n) * 10.0 ** draw(st.floats(-3, 1))
    if n > 1 and draw(st.booleans()):
        h = n // 2
        Q[h:], b[h:], a[h:] = Q[:h] + 1e-3 * rng.standard_normal((h, model.D)), b[:h], -a[:h] * (1 + 1e-3)
    s = draw(st.sampled_from([0.0, 0.01, 0.1, 1.0, 10.0]))
    return E.TwoLayerParams(Q, b, a), s


@settings(max_examples=examples(15), deadline=None)
@given(pattern_models(k_max=3, nb_max=3), st.data())
def test_full_support_gradient_certificate(model, data):
    """full_support: probabilities relative <= 2 (D - k + 2) eps, phi absolute <= 1e-13/sigt (its entries are
    differences of numbers in [0, 1] over sigt, which cancel where a mean is near 0 or 1); population_gradient
    (indicator "enumerate"): absolute <= 1e-12 times the sum of the magnitudes of each sum's terms, away from
    the hinge kink (|y g - 1| > 1e-9 on the support); hinge_certificate: B >= sup|g| - 1e-12 sum|a| (a bound up to
    rounding); against the enumeration of the joint law in mpmath at 40 digits."""
    params, s = data.draw(small_networks(model))
    phi, prob, y = E.full_support(model)
    with mp.workdps(40):
        sup = _support_mp(model)
        assert len(sup) == len(prob)
        err_p = max(float(abs(mp.mpf(float(p)) - mp.mpf(pr.numerator) / pr.denominator) /
                          (mp.mpf(pr.numerator) / pr.denominator)) for p, (_, pr, _) in zip(prob, sup))
        st_ = mp.sqrt(mp.mpf(_rows_exact(model)[4].numerator) / _rows_exact(model)[4].denominator)
        err_phi = max(float(abs(mp.mpf(float(phi[i, j])) - ph[j]) * st_)   # differences of numbers in [0, 1]
                      for i, (ph, _, _) in enumerate(sup) for j in range(model.D))
        assert np.array_equal(y, [yv for _, _, yv in sup])
        assert record("emergence.full_support (prob)", err_p / (2 * (model.D - model.k + 2) * EPS)) <= 1
        assert record("emergence.full_support (phi)", err_phi / 1e-13) <= 1
        Q, b, a = params.Q, params.b, params.a
        n = params.n
        gQ, gb, ga = [[mp.mpf(0)] * model.D for _ in range(n)], [mp.mpf(0)] * n, [mp.mpf(0)] * n
        sQ, sb, sa = [[mp.mpf(0)] * model.D for _ in range(n)], [mp.mpf(0)] * n, [mp.mpf(0)] * n
        gmax, near = mp.mpf(0), False
        for ph, pr, yv in sup:
            pr = mp.mpf(pr.numerator) / pr.denominator
            z = [mp.fsum(mp.mpf(float(Q[i, j])) * ph[j] for j in range(model.D)) + mp.mpf(float(b[i]))
                 for i in range(n)]
            act = [_strelu_mp(zi, s) if s > 0 else min(max(zi, 0), 1) for zi in z]
            win = [_win_mp(zi, s) if s > 0 else mp.mpf(1 if 0 < zi < 1 else 0) for zi in z]
            g = mp.fsum(mp.mpf(float(a[i])) * act[i] for i in range(n))
            gmax = max(gmax, abs(g))
            near |= abs(yv * g - 1) < mp.mpf(1e-9) or (s == 0 and any(min(abs(zi), abs(zi - 1)) < 1e-9 for zi in z))
            ind = 1 if yv * g <= 1 else 0
            for i in range(n):
                ai = mp.mpf(float(a[i]))
                for j in range(model.D):
                    gQ[i][j] -= ai * pr * yv * ind * win[i] * ph[j]
                    sQ[i][j] += abs(ai * pr * win[i] * ph[j])
                gb[i] -= ai * pr * yv * ind * win[i]
                sb[i] += abs(ai * pr * win[i])
                ga[i] -= pr * yv * ind * act[i]
                sa[i] += pr * act[i]
    cert = E.hinge_certificate(model, params, s)
    assert record("emergence.hinge_certificate (sup|g| - B)", float((gmax - cert) / (1e-12 * np.abs(a).sum()))) <= 1
    if near:
        return
    got = E.population_gradient(model, params, s, indicator="enumerate")
    tiny = mp.mpf(1e-300)
    err = max([abs(got.Q[i, j] - gQ[i][j]) / (1e-12 * sQ[i][j] + tiny) for i in range(n) for j in range(model.D)]
              + [abs(got.b[i] - gb[i]) / (1e-12 * sb[i] + tiny) for i in range(n)]
              + [abs(got.a[i] - ga[i]) / (1e-12 * sa[i] + tiny) for i in range(n)])
    assert record("emergence.population_gradient (enumerate)", float(err), s=s) <= 1


# ---- classifier stage (exact rationals; brute force over the LP's vertices; mpmath replay of the GD) -----------

@st.composite
def tables(draw, n_max=2):
    """(F, pi, y): R in [1, 6] rows, n in [1, n_max] features of scale 10^[-3, 3] (some rows 0), probabilities
    down to 1e-12 summing to 1 only to rounding, labels of both signs."""
    R, n = draw(st.integers(1, 6)), draw(st.integers(1, n_max))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    F = rng.standard_normal((R, n)) * 10.0 ** draw(st.floats(-3, 3))
    if R > 1 and draw(st.booleans()):
        F[0] = 0.0
    pi = rng.random(R) * 10.0 ** rng.uniform(-12, 0, R)
    pi /= pi.sum()
    y = rng.choice([-1.0, 1.0], R)
    return F, pi, y


def _hinge_exact(F, pi, y, a):
    Fa = [sum(Fraction(float(F[c, i])) * a[i] for i in range(F.shape[1])) for c in range(F.shape[0])]
    return sum(p * max(Fraction(0), 1 - int(yv) * g) for p, yv, g in zip(pi, y, Fa)), Fa


@settings(max_examples=examples(30), deadline=None)
@given(tables(), st.data())
@example((np.array([[1.0], [1.0]]), np.array([0.5 + 5e-10, 0.5]), np.array([-1.0, -1.0])), None)   # error was 1+1e-9
def test_hinge_and_error_and_lp(table, data):
    """hinge_and_error: loss absolute <= 2 (n + 2) eps sum_c pi_c (1 + sum_i |F_ci a_i|), error exact where no
    |g_c| is within that of 0 (in [0, 1]: pi is normalised, before it could sum to 1 + 1e-9); optimal_second_layer
    (LP): loss - OPT <= 1e-6 max(1, OPT) for features of scale 1e-3..1e3, OPT by exact brute force over the
    vertices of the hinge arrangement (n <= 2)."""
    F, pi, y = table
    piF = [Fraction(float(p)) for p in pi]
    piF = [p / sum(piF) for p in piF]
    a = np.array(data.draw(st.lists(st.floats(-1e3, 1e3), min_size=F.shape[1], max_size=F.shape[1]))) \
        if data is not None else np.array([1.0])
    loss, err = E.hinge_and_error(F, pi, y, a)
    L, Fa = _hinge_exact(F, piF, y, [Fraction(float(v)) for v in a])
    scale = sum(p * (1 + sum(abs(Fraction(float(F[c, i]) * float(a[i]))) for i in range(F.shape[1])))
                for c, p in enumerate(piF))
    bnd = 2 * (F.shape[1] + 2) * Fraction(EPS) * scale
    assert 0 <= err <= 1 and loss >= 0
    assert record("emergence.hinge_and_error (loss)", float(abs(Fraction(loss) - L) / bnd)) <= 1
    if all(abs(g) > bnd for g in Fa):
        ex = sum(p for p, yv, g in zip(piF, y, Fa) if yv * g < 0)
        assert record("emergence.hinge_and_error (error)", float(abs(Fraction(err) - ex)) / (4 * len(pi) * EPS)) <= 1
    # the LP against its vertices
    R, n = F.shape
    rows = [[Fraction(float(v)) * int(yv) for v in F[c]] for c, yv in zip(range(R), y)]
    cands = hinge_vertices(rows)
    if n == 2 and np.linalg.matrix_rank(F) < 2:
        return   # a line of optima: the vertices above do not cover it
    opt = min(_hinge_exact(F, piF, y, c)[0] for c in cands)
    _, lp_loss = E.optimal_second_layer(F, pi, y)
    assert record("emergence.optimal_second_layer (LP)", float((Fraction(lp_loss) - opt) / max(1, opt)) / 1e-6,
                  F=F.tolist()) <= 1


@settings(max_examples=examples(12), deadline=None)
@given(st.integers(1, 5), st.integers(1, 3), st.floats(0.05, 0.95), st.data())
def test_reduced_population_gd(k, n, pA, data):
    """reduced_population_gd: loss at every step absolute <= 1e-12 (1 + t) (1 + ||a_t||_1) and the error exact
    away from ties, T <= 6 steps, s in {0, 0.1, 1}, against the same iteration replayed in mpmath at 40 digits
    (examples within 1e-9 of a kink of the hinge or of the truncated ReLU are skipped: the iteration is
    discontinuous there)."""
    pos = sorted(data.draw(st.sets(st.integers(0, k), min_size=1, max_size=k)))
    model = E.iid_block_model(k + 2, k, pA, 0.5, pos)
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    alpha, b, a = rng.standard_normal(n) * 2, rng.uniform(-1, 1, n), rng.standard_normal(n)
    eta, lam, T = 10.0 ** data.draw(st.floats(-2, 0)), data.draw(st.sampled_from([0.0, 1e-3])), data.draw(
        st.integers(0, 6))
    s = data.draw(st.sampled_from([0.0, 0.1, 1.0]))
    tr = E.reduced_population_gd(model, alpha, b, a, eta, lam, T, s=s)
    pi, yc = model.count_law()
    with mp.workdps(40):
        piM = [mp.mpf(float(p)) for p in pi]
        piM = [p / mp.fsum(piM) for p in piM]
        sig2 = _moments_exact(model)[0]
        st_ = mp.sqrt(mp.mpf(sig2.numerator) / sig2.denominator)
        muA = mp.mpf(pA) * k
        u = [(c - muA) / (st_ * mp.sqrt(k)) for c in range(k + 1)]
        A_, B_, C_ = ([mp.mpf(float(v)) for v in x] for x in (alpha, b, a))
        E_, L_ = mp.mpf(eta), mp.mpf(lam)
        act = lambda z: _strelu_mp(z, s) if s > 0 else min(max(z, 0), 1)  # noqa: E731
        win = lambda z: _win_mp(z, s) if s > 0 else mp.mpf(1 if 0 < z < 1 else 0)  # noqa: E731
        for t in range(T + 1):
            Z = [[u[c] * A_[i] + B_[i] for i in range(n)] for c in range(k + 1)]
            if s == 0 and any(min(abs(z), abs(z - 1)) < 1e-9 for row in Z for z in row):
                return
            Fm = [[act(z) for z in row] for row in Z]
            m = [int(yc[c]) * mp.fsum(Fm[c][i] * C_[i] for i in range(n)) for c in range(k + 1)]
            if any(abs(x - 1) < 1e-9 or abs(x) < 1e-9 for x in m):
                return
            L = mp.fsum(p * max(0, 1 - x) for p, x in zip(piM, m))
            err = mp.fsum(p for p, x in zip(piM, m) if x < 0)
            bound = 1e-12 * (1 + t) * (1 + mp.fsum(abs(x) for x in C_))
            assert record("emergence.reduced_population_gd", float(abs(tr.loss[t] - L) / bound), t=t, s=s) <= 1
            assert abs(tr.error[t] - err) <= 8 * (k + 1) * EPS and 0 <= tr.error[t] <= 1
            r = [piM[c] * int(yc[c]) * (1 if m[c] <= 1 else 0) for c in range(k + 1)]
            G = [[r[c] * win(Z[c][i]) * C_[i] for i in range(n)] for c in range(k + 1)]
            ga = [-mp.fsum(r[c] * Fm[c][i] for c in range(k + 1)) + 2 * L_ * C_[i] for i in range(n)]
            gb = [-mp.fsum(G[c][i] for c in range(k + 1)) for i in range(n)]
            gal = [-mp.fsum(u[c] * G[c][i] for c in range(k + 1)) + 2 * L_ * A_[i] for i in range(n)]
            A_ = [A_[i] - E_ * gal[i] for i in range(n)]
            B_ = [B_[i] - E_ * gb[i] for i in range(n)]
            C_ = [C_[i] - E_ * ga[i] for i in range(n)]


@settings(max_examples=examples(20), deadline=None)
@given(pattern_models(k_max=5, nb_max=3), st.data())
def test_two_step_limit_and_features(model, data):
    """two_step_limit: |Q_ij - exact| <= 2e-12 |a_i h_i| (|E[y phi_j]| + E phi~_j / sigt), |a2_i - exact| <=
    2e-12 sigma~_s(b_i) (|Ey| + 1), |b2_i - exact| <= 4 eps |b_i| + 2e-12 |a_i h_i| (|Ey| + 1) (h = win_s, the
    moments' absolute scales), both weightings; two_step_features and line_params: |F - exact| <= 1e-12 |F| +
    8 eps (|alpha| (k + mu_A) / sigt + |b|) + 1e-300; against exact rationals with the window and the smoothed
    ReLU in mpmath at 40 digits."""
    n = data.draw(st.integers(1, 3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    s2 = 10.0 ** data.draw(st.floats(-2, 1))
    p0 = E.TwoLayerParams(rng.standard_normal((n, model.D)), rng.uniform(-2, 3, n),
                          rng.standard_normal(n) * 10.0 ** data.draw(st.floats(-3, 3)))
    pi, y, cen, _, sig2 = _rows_exact(model)
    pp = sum(p for p, v in zip(pi, y) if v > 0)
    tiny = mp.mpf(1e-300)
    for weighted in (False, True):
        got = E.two_step_limit(model, p0, s2, weighted=weighted)
        with mp.workdps(40):
            f = lambda q: mp.mpf(q.numerator) / q.denominator  # noqa: E731
            st_ = mp.sqrt(f(sig2))
            w = [p * ((Fraction(1, 2) / (pp if v > 0 else 1 - pp)) if weighted else 1) * v for p, v in zip(pi, y)]
            Ey = f(sum(w))
            Ephi = [f(sum(wr * r[j] for wr, r in zip(w, cen))) / st_ if j < model.k else mp.mpf(0)
                    for j in range(model.D)]
            if weighted:   # gamma_weighted = E[alpha_y y phi~]: E[alpha_y y] = 0, so centring does not matter
                Ey = mp.mpf(0)
            Ephit = [f(sum(p * int(rr[j]) for p, rr in zip(pi, model.A_support))) for j in range(model.k)]
            errs = []
            for i in range(n):
                b = mp.mpf(float(p0.b[i]))
                ah = mp.mpf(float(p0.a[i])) * _win_mp(b, s2)
                for j in range(model.D):
                    sc = abs(ah) * (abs(Ephi[j]) + (Ephit[j] / st_ if j < model.k else 0))
                    errs.append(abs(got.Q[i, j] - ah * Ephi[j]) / (2e-12 * sc + tiny))
                errs.append(abs(got.b[i] - (b + ah * Ey)) / (4 * EPS * abs(b) + 2e-12 * abs(ah) * (abs(Ey) + 1) + tiny))
                srl = _strelu_mp(b, s2)
                errs.append(abs(got.a[i] - Ey * srl) / (2e-12 * srl * (abs(Ey) + 1) + tiny))
        assert record("emergence.two_step_limit", float(max(errs)), weighted=weighted) <= 1
    # features of a line network (q_i = alpha_i 1_A / sqrt(k)), by count and by support row
    alpha = rng.standard_normal(n) * 10.0 ** data.draw(st.floats(-2, 2))
    lp = E.line_params(model, alpha, p0.b, p0.a)
    s = data.draw(st.sampled_from([0.0, 0.01, 1.0]))
    with mp.workdps(40):
        st_ = mp.sqrt(f(sig2))
        errs = [abs(lp.Q[i, j] - (mp.mpf(float(alpha[i])) / mp.sqrt(model.k) if j < model.k else 0))
                / (EPS * abs(mp.mpf(float(alpha[i])) / mp.sqrt(model.k))) for i in range(n) for j in range(model.D)]
        assert record("emergence.line_params", float(max(errs))) <= 1
        muA = f(sum(p * sum(int(v) for v in rr) for p, rr in zip(pi, model.A_support)))
        for by in ("count", "support"):
            F = E.two_step_features(model, lp, s, by=by)
            counts = range(model.k + 1) if by == "count" else [int(v) for v in model.A_support.sum(1)]
            for r_, c in enumerate(counts):
                for i in range(n):
                    a_ = mp.mpf(float(lp.Q[i, 0]))
                    z = a_ * (c - muA) / st_ + mp.mpf(float(p0.b[i]))
                    ref = _strelu_mp(z, s) if s > 0 else min(max(z, 0), 1)
                    bound = 1e-12 * abs(ref) + 8 * EPS * (abs(a_) * (model.k + muA) / st_ + abs(p0.b[i])) + tiny
                    assert record("emergence.two_step_features", float(abs(F[r_, i] - ref) / bound), by=by) <= 1


@settings(max_examples=examples(15), deadline=None)
@given(pattern_models(k_max=4, nb_max=3), st.data())
def test_step2_expansion(model, data):
    """step2_expansion: |T - exact| <= 2e-12 times the expansion with every term and factor in modulus (|h''| as
    (|u0| phi(u0) + |u1| phi(u1))/s^2, window_derivs' own scale; the label moments Ey, E[y phi...] as the sums of
    their terms' moduli, E|y| = 1 and E|phi...| (plus E phi~_j / sigt for E[y phi_j], the moments' own scale), the
    scales of their rounding), q of scale 1e-4..1, b in [-2, 3], s in
    1e-2..10; against the expansion in mpmath at 40 digits from exact moments (the evaluation only: the
    truncation error O(|q|^3/s^3) is the approximation's)."""
    n = data.draw(st.integers(1, 2))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    Q = rng.standard_normal((n, model.D)) * 10.0 ** data.draw(st.floats(-4, 0))
    b, s = rng.uniform(-2, 3, n), 10.0 ** data.draw(st.floats(-2, 1))
    T, Tb, Ta = E.step2_expansion(model, Q, b, s)
    pi, y, cen, _, sig2 = _rows_exact(model)
    k, D = model.k, model.D
    with mp.workdps(40):
        f = lambda q: mp.mpf(q.numerator) / q.denominator  # noqa: E731
        st_ = mp.sqrt(f(sig2))
        pb = [mp.mpf(float(v)) for v in np.broadcast_to(model.p_bg, (D - k,))]
        sp2 = [p * (1 - p) / f(sig2) for p in pb]
        Ephi3 = [p * (1 - p) * (1 - 2 * p) / st_ ** 3 for p in pb]
        Ey = f(sum(p * v for p, v in zip(pi, y)))
        phA = [[f(r[j]) / st_ for j in range(k)] for r in cen]
        wy = [f(p) * v for p, v in zip(pi, y)]
        E1 = [mp.fsum(w * r[j] for w, r in zip(wy, phA)) for j in range(k)]
        M2 = [[mp.fsum(w * r[j] * r[l] for w, r in zip(wy, phA)) for l in range(k)] for j in range(k)]
        M3 = [[[mp.fsum(w * r[j] * r[l] * r[m] for w, r in zip(wy, phA)) for m in range(k)] for l in range(k)]
              for j in range(k)]
        wa = [f(p) for p in pi]   # the label moments' sums of moduli (E|y| = 1): the scales of their rounding
        E1a = [mp.fsum(w * abs(r[j]) for w, r in zip(wa, phA))   # + E phi~_j / sigt: the moments' gamma scale
               + f(sum(p * int(rr[j]) for p, rr in zip(pi, model.A_support))) / st_ for j in range(k)]
        M2a = [[mp.fsum(w * abs(r[j] * r[l]) for w, r in zip(wa, phA)) for l in range(k)] for j in range(k)]
        M3a = [[[mp.fsum(w * abs(r[j] * r[l] * r[m]) for w, r in zip(wa, phA)) for m in range(k)] for l in range(k)]
               for j in range(k)]
        errs = []
        for i in range(n):
            B, S = mp.mpf(float(b[i])), mp.mpf(s)
            u0, u1 = B / S, (1 - B) / S
            h, h1 = _win_mp(B, S), (mp.npdf(u0) - mp.npdf(u1)) / S
            h2, h2a = -(u0 * mp.npdf(u0) + u1 * mp.npdf(u1)) / S ** 2, (abs(u0) * mp.npdf(u0)
                                                                         + abs(u1) * mp.npdf(u1)) / S ** 2
            q = [mp.mpf(float(v)) for v in Q[i]]
            qA, qB = q[:k], q[k:]
            ES2 = mp.fsum(v * v * c for v, c in zip(qB, sp2))
            Eyc = mp.fsum(a * e for a, e in zip(qA, E1))
            Eyca = mp.fsum(abs(a) * e for a, e in zip(qA, E1a))
            Eyc2 = mp.fsum(qA[l] * M2[l][m] * qA[m] for l in range(k) for m in range(k))
            Eyc2a = mp.fsum(abs(qA[l] * qA[m]) * M2a[l][m] for l in range(k) for m in range(k))
            for j in range(k):
                lin = mp.fsum(qA[l] * M2[j][l] for l in range(k))
                qua = mp.fsum(qA[l] * qA[m] * M3[j][l][m] for l in range(k) for m in range(k))
                ref = E1[j] * (h + h2 * ES2 / 2) + h1 * lin + h2 * qua / 2
                sc = E1a[j] * (h + h2a * ES2 / 2) + abs(h1) * mp.fsum(abs(qA[l]) * M2a[j][l] for l in range(k)) \
                    + h2a * mp.fsum(abs(qA[l] * qA[m]) * M3a[j][l][m] for l in range(k) for m in range(k)) / 2
                errs.append(abs(T[i, j] - ref) / (2e-12 * sc + mp.mpf(1e-300)))
            for j in range(D - k):
                ref = sp2[j] * qB[j] * (h1 * Ey + h2 * Eyc) + h2 * qB[j] ** 2 * Ey * Ephi3[j] / 2
                sc = sp2[j] * abs(qB[j]) * (abs(h1) + h2a * Eyca) + h2a * qB[j] ** 2 * abs(Ephi3[j]) / 2
                errs.append(abs(T[i, k + j] - ref) / (2e-12 * sc + mp.mpf(1e-300)))
            ref = h * Ey + h1 * Eyc + h2 * (Eyc2 + Ey * ES2) / 2
            sc = h + abs(h1) * Eyca + h2a * (Eyc2a + ES2) / 2
            errs.append(abs(Tb[i] - ref) / (2e-12 * sc + mp.mpf(1e-300)))
            srl = _strelu_mp(B, S)
            ref = srl * Ey + h * Eyc + h1 * (Eyc2 + Ey * ES2) / 2
            sc = srl + h * Eyca + abs(h1) * (Eyc2a + ES2) / 2
            errs.append(abs(Ta[i] - ref) / (2e-12 * sc + mp.mpf(1e-300)))
    assert record("emergence.step2_expansion", float(max(errs)), model=repr(model), s=s) <= 1


# ---- Lemma 23's second layer (exact rationals for the law and the targets; mpmath at 50 digits for sigt) ---------

def _count_law_exact(model):
    """mu_A = E c, sigt^2 (exact rationals from the float inputs, the probabilities normalised) and the count labels
    y_c (counts absent from the support: +1, as count_law documents)."""
    k = model.k
    pb = [Fraction(float(v)) for v in np.broadcast_to(model.p_bg, (model.D - k,))]
    if hasattr(model, "A_support"):   # phi~_j in {0, 1}: Var phi~_j = m_j (1 - m_j), m_j = E phi~_j
        assert model.p_bg_rows is None and model.sigma_zeta == 0
        pi = [Fraction(float(v)) for v in model.A_probs]
        tot = sum(pi)
        m = [sum(p for p, r in zip(pi, model.A_support) if r[j]) / tot for j in range(k)]
        cnt = [int(v) for v in model.A_support.sum(1)]
        lab = dict(zip(cnt, (int(v) for v in model.labels)))
        return sum(m), sum(v * (1 - v) for v in m) + sum(p * (1 - p) for p in pb), [lab.get(c, 1)
                                                                                   for c in range(k + 1)]
    pA = Fraction(float(model.p_A))
    return k * pA, k * pA * (1 - pA) + sum(p * (1 - p) for p in pb), \
        [1 if c in model.positive_counts else -1 for c in range(k + 1)]


def _lemma5_targets(k, muA, yc, scale):
    """g* of Lemma 5 (main) / Lemma 35 (general) exactly: the candidate (b* (3(k+1),), a*) whose ReLU biases all
    have |K b*| >= 1/8, K = 4k or 8k, or both where mu_A is within 1e-9 of a tie (mu_A = 1/8 mod 1/4, both at
    1/8: which one is g* is ground_truth_network's choice there); the triangles delta_{p - mu_A + off, slope, 1/2}
    as relu(z - c + 1/2) - 2 relu(z - c) + relu(z - c - 1/2)."""
    s1, s2, K = {"main": (2, 4, 4 * k), "general": (4, 8, 8 * k)}[scale]
    cands = []
    for slope, off in ((s1, Fraction(0)), (s2, Fraction(1, 4))):
        c = [(Fraction(p) - muA + off, yc[p] * slope) for p in range(k + 1)]
        bs = [-(ce + d) / K for ce, _ in c for d in (Fraction(-1, 2), Fraction(0), Fraction(1, 2))]
        a_s = [K * a * w for _, a in c for w in (1, -2, 1)]
        cands.append((min(abs(v) for v in bs) * K, bs, a_s))
    best = max(m for m, _, _ in cands)
    return [(bs, a_s) for m, bs, a_s in cands if best - m <= Fraction(1, 10 ** 9)], K


def _lemma23_walk(model, Q, b, ea, n_a, targets, K, sigt, a_t, sets):
    """(wrong decisions, worst a_tilde error / bound) of lemma23_construction's output on one candidate g*: the
    targets in order, each taking the first n_a still free neurons (by index) that satisfy the bias window
    1/(2k^2) <= |b_i| <= 2/k^2, sign b_i = sign b*_l and |K |b*_l| alpha_i / |b_i| - 1| <= eps_a (alpha_i =
    mean_A q_i / sigt), either decision accepted within 4 eps of the window's ends (relative) and within 5 eps of
    the ratio's thresholds t = 1 +- eps_a (relative to max(|t|, eps_a)); a_tilde = 2 a*_l |b*_l| / (|b_i| n_l): the
    worst relative error / (8 eps), 0 off the sets."""
    k, n = model.k, len(b)
    lo, hi = Fraction(1, 2 * k * k), Fraction(2, k * k)
    free, wrong, err = set(range(n)), 0, 0.0
    alpha = [mp.mpf(sum(Fraction(float(v)) for v in Q[i, :k]).numerator) / k
             / mp.mpf(sum(Fraction(float(v)) for v in Q[i, :k]).denominator) / sigt for i in range(n)]
    touched = set()
    for l, (bl, al) in enumerate(zip(*targets)):
        S = [int(i) for i in sets[l]]
        if S != sorted(S) or not set(S) <= free:
            return math.inf, math.inf
        tol = 5 * EPS                               # the ratio's slack; the window's is 4 eps
        count = 0
        for i in sorted(free):
            bi = abs(Fraction(float(b[i])))
            if count >= n_a:
                wrong += i in S
                continue
            win = None if any(abs(bi - t) <= 4 * EPS * t for t in (lo, hi)) else lo <= bi <= hi
            sgn = bool(b[i] != 0 and (b[i] > 0) == (bl > 0))
            if bi == 0:
                e = False
            else:
                rho = K * mp.mpf(abs(bl).numerator) / abs(bl).denominator * alpha[i] / (mp.mpf(bi.numerator)
                                                                                      / bi.denominator)
                near = any(abs(rho - t) <= tol * max(abs(t), ea) for t in (1 - ea, 1 + ea))
                e = _all_of([win, sgn, None if near else abs(rho - 1) <= ea])
            if i in S:
                wrong += e is False
                count += 1
            else:
                wrong += e is True
        for i in S:
            ref = 2 * al * abs(bl) / (abs(Fraction(float(b[i]))) * len(S))
            err = max(err, float(abs(Fraction(float(a_t[i])) - ref) / abs(ref) / (8 * Fraction(EPS))))
            touched.add(i)
        free -= set(S)
    if any(a_t[i] != 0 for i in range(n) if i not in touched):
        return math.inf, math.inf
    return wrong, err


def _all_of(conds):
    """Conjunction where None is 'either' (within a declared slack): False if any is False."""
    if any(c is False for c in conds):
        return False
    return None if any(c is None for c in conds) else True


def _lemma23_check(model, params2, eps_a, n_a, scale):
    """Run lemma23_construction and check it against the exact construction (exact g*, sigt at 50 digits, n_a =
    max(1, floor(eps_a n / 8)) exactly by default): the worst (wrong decisions, a_tilde error / bound) over the
    acceptable g* candidates."""
    k, n = model.k, params2.n
    a_t, sets = E.lemma23_construction(model, params2, eps_a, n_a, scale)
    muA, sig2, yc = _count_law_exact(model)
    cands, K = _lemma5_targets(k, muA, yc, scale)
    ea = Fraction(1, k * k) if eps_a is None else Fraction(eps_a)
    n_a = max(1, math.floor(ea * n / 8)) if n_a is None else n_a
    with mp.workdps(50):
        sigt = mp.sqrt(mp.mpf(sig2.numerator) / sig2.denominator)
        return min(_lemma23_walk(model, params2.Q, params2.b, mp.mpf(ea.numerator) / ea.denominator, n_a, (bs, a_s),
                                 K, sigt, a_t, sets) for bs, a_s in cands)


@st.composite
def lemma23_cases(draw):
    """(model, params2, eps_a, n_a, scale): the parity mixture (k <= 6), iid blocks with a random label set (k <= 8,
    explicit; k in 17..120, count-resolved), probabilities within 1e-12 of 0 or 1 and on a tie of the two g*
    candidates (mu_A = 1/8 mod 1/4); 1..10 neurons, each aimed at a target of the exact g*: |b_i| inside the
    window, on its ends within 0..64 eps, outside, or 0, the sign of b*_l or not, and the scale ratio inside the
    tolerance, on 1 +- eps_a within 0..64 eps, at 1, outside, or negative; copies of a neuron (ties for the n_a
    slots); eps_a = 1/k^2 (None), 1e-12..1e-2, in (0, 1), within 1e-12 of 1, up to 1e3, or 8 q / n rounded and
    one ulp either side (the integer steps of the default n_a); n_a None or 1..3; scale main or general."""
    kind = draw(st.sampled_from(["parity", "block", "large", "tie"]))
    nb = draw(st.integers(1, 3))
    if kind == "parity":
        k = draw(st.integers(1, 6))
        model = E.parity_mixture(k + nb, k, _p_corner(draw))
    elif kind == "tie":
        k = draw(st.sampled_from([1, 2, 3, 5, 7]))
        j = draw(st.integers(0, 4 * k - 1))
        pos = draw(st.sets(st.integers(0, k), min_size=1, max_size=k))
        model = E.iid_block_model(k + nb, k, (2 * j + 1) / (8 * k) if (2 * j + 1) < 8 * k else 0.5, 0.5, pos)
    else:
        k = draw(st.integers(1, 8) if kind == "block" else st.integers(17, 120))
        pos = draw(st.sets(st.integers(0, k), min_size=1, max_size=k))
        model = E.iid_block_model(k + nb, k, _p_corner(draw), _p_corner(draw), sorted(pos))
    scale = draw(st.sampled_from(["main", "general"]))
    n = draw(st.integers(1, 10))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    eps_kind = draw(st.sampled_from(["none", "small", "mid", "near1", "large", "step"]))
    eps_a = {"none": None, "small": 10.0 ** draw(st.floats(-12, -2)), "mid": draw(st.floats(0.01, 0.9)),
             "near1": 1.0 - 10.0 ** draw(st.floats(-12, -1)), "large": 10.0 ** draw(st.floats(0, 3)),
             "step": float(np.nextafter(8.0 * draw(st.integers(2, 5)) / n, draw(st.sampled_from([0.0, 0.0, 99.0]))))
             if draw(st.booleans()) else 8.0 * draw(st.integers(2, 5)) / n}[eps_kind]
    n_a = draw(st.one_of(st.none(), st.integers(1, 3)))
    muA, sig2, yc = _count_law_exact(model)
    cands, K = _lemma5_targets(k, muA, yc, scale)
    bs = cands[0][0]
    Q, b = np.zeros((n, model.D)), np.zeros(n)
    with mp.workdps(50):
        ea = mp.mpf(1) / k ** 2 if eps_a is None else mp.mpf(eps_a)
        lo, hi = mp.mpf(1) / (2 * k * k), mp.mpf(2) / (k * k)
        sigt = mp.sqrt(mp.mpf(sig2.numerator) / sig2.denominator)
        for i in range(n):
            if i and draw(st.integers(0, 3)) == 0:          # a copy of an earlier neuron
                src = draw(st.integers(0, i - 1))
                Q[i], b[i] = Q[src], b[src]
                continue
            l = draw(st.integers(0, len(bs) - 1))
            bl = mp.mpf(bs[l].numerator) / bs[l].denominator
            off = draw(st.sampled_from(_OFF23)) * EPS
            mag = {"inside": lo + (hi - lo) * draw(st.floats(0, 1)), "lo": lo * (1 + off), "hi": hi * (1 + off),
                   "below": lo * draw(st.floats(0.01, 0.99)), "above": hi * draw(st.floats(1.01, 100)),
                   "zero": mp.mpf(0)}[draw(st.sampled_from(["lo", "hi", "inside", "below", "above", "zero"]))]
            sg = mp.sign(bl) * (1 if draw(st.integers(0, 4)) else -1)
            b[i] = float(sg * mag)
            off = draw(st.sampled_from(_OFF23)) * EPS
            rho = {"lo": (1 - ea) * (1 + off), "hi": (1 + ea) * (1 + off), "one": mp.mpf(1),
                   "inside": 1 + ea * draw(st.floats(-0.99, 0.99)), "outside": (1 + ea) * draw(st.floats(1.01, 50)),
                   "negative": -mp.mpf(draw(st.floats(0.1, 2)))}[draw(st.sampled_from(
                       ["lo", "hi", "one", "inside", "outside", "negative"]))]
            if b[i] != 0:   # alpha_i = rho |b_i| / (K |b*_l|), q_i = alpha_i sigt 1_A
                Q[i, :k] = float(rho * abs(mp.mpf(b[i])) / (K * abs(bl)) * sigt)
    return model, E.TwoLayerParams(Q, b, rng.standard_normal(n)), eps_a, n_a, scale


_OFF23 = [0, 1, -1, 2, -2, 4, -4, 5, -5, 8, -8, 16, -16, 64, -64]


@settings(max_examples=examples(40), deadline=None)
@given(lemma23_cases())
def test_lemma23_construction(case):
    """lemma23_construction against Lemma 23's construction on the exact g* of Lemma 5 / 35 and the exact sigt
    (exact rationals; sigt at 50 digits): the assignments (targets in order, each the first n_a free neurons by
    index, n_a = max(1, floor(eps_a n / 8)) exactly by default) exact except within 4 eps (relative) of the bias
    window's ends and within 5 eps of the ratio's thresholds 1 +- eps_a (relative to max(|t|, eps_a)); a_tilde =
    2 a*_l |b*_l| / (|b_i| n_l) with relative error <= 8 eps (the declared accuracy, nothing added for the errors of
    the model's mu_A and sigt: before, mu_A summed over 2^k rows cancelled in b* = -(p - mu_A + off + d)/K, 1e4 eps
    at k = 12)."""
    model, params2, eps_a, n_a, scale = case
    wrong, err = _lemma23_check(model, params2, eps_a, n_a, scale)
    assert record("emergence.lemma23_construction (wrong decisions)", wrong, model=repr(model), eps_a=eps_a,
                  scale=scale) <= 0.5
    assert record("emergence.lemma23_construction (a_tilde)", err, model=repr(model), scale=scale) <= 1
    muA, _, yc = _count_law_exact(model)                  # ground_truth_network's b*: relative error <= 1.5 eps
    cands, _ = _lemma5_targets(model.k, muA, yc, scale)
    gb = E.ground_truth_network(model, scale).b
    assert record("emergence.ground_truth_network (b*)", min(max(float(abs(Fraction(float(g)) - v) / abs(v))
                                                                 for g, v in zip(gb, bs)) for bs, _ in cands)
                  / (1.5 * EPS), model=repr(model), scale=scale) <= 1


def _lemma23_one_neuron(q, b):
    """The interval-like iid block of k = 12 (p_A = 0.3, labels +1 on counts 1, 5, 7) with one neuron (q 1_A, b)."""
    model = E.iid_block_model(14, 12, 0.3, 0.5, [1, 5, 7])
    Q = np.zeros((1, 14))
    Q[0, :12] = q
    return model, E.TwoLayerParams(Q, np.array([b]), np.zeros(1))


def test_lemma23_construction_declared_a_tilde():
    """b = -1/144 matched to target 11 (b* = -0.003125) of the k = 12 block: a~ within 8 eps of 2 a* |b*| / |b| =
    -172.79999999999995 (before: -172.80000000004287, 1119 eps off: mu_A summed over the 4096 support rows was off
    and cancelled in b*_l = -(p - mu_A + off + d)/K)."""
    model, params2 = _lemma23_one_neuron(0.08045438517121654, -0.006944444444444444)
    assert E.lemma23_construction(model, params2, 1e-9)[1][11].tolist() == [0]
    wrong, err = _lemma23_check(model, params2, 1e-9, None, "main")
    assert wrong == 0 and record("emergence.lemma23_construction (a_tilde)", err, model=repr(model)) <= 1


def test_lemma23_construction_declared_decisions():
    """A neuron 50 eps inside the scale tolerance (exact ratio (1 + eps_a)(1 - 50 eps), eps_a = 1e-9, b = -1/144,
    target 11 of the k = 12 block) is assigned (before: not, the ratio carried the 1119 eps error of b*_l and the
    10 eps error of sigt)."""
    model, params2 = _lemma23_one_neuron(0.08045438525167004, -0.006944444444444444)
    assert E.lemma23_construction(model, params2, 1e-9)[1][11].tolist() == [0]
    wrong, err = _lemma23_check(model, params2, 1e-9, None, "main")
    assert wrong == 0 and err <= 1


def test_lemma23_default_n_a():
    """The default n_a = max(1, floor(eps_a n / 8)) of the exact product: eps_a = 2.4 (2.3999999999999999112 as a
    float) and n = 10 give floor(2.99999999999999989) = 2 (before: 3, the floor of the rounded product)."""
    model = E.iid_block_model(3, 2, 0.5, 0.5, [1])          # mu_A = 1, K = 8: the first target has b* = 0.15625
    Q = np.zeros((10, 3))
    Q[:, :2] = 0.2 * model.moments().sigt                    # alpha = 0.2: ratio 8 * 0.15625 * 0.2 / 0.25 = 1
    _, sets = E.lemma23_construction(model, E.TwoLayerParams(Q, np.full(10, 0.25), np.zeros(10)), 2.4)
    assert sets[0].tolist() == [0, 1]


def test_lemma23_construction_rare_class():
    """An iid block whose class P(y = +1) = C(30, 30) 1e-360 underflows to 0 (p_A = 1e-12, positive count 30): the
    class-weighted gamma = (1 - E[c | y = -1] / 30) / 2 from the log-pmf, against mpmath at 50 digits, and one
    neuron matched to the first target (b* = (1/4 + mu_A) / 120 > 0) against the exact construction (before:
    ExchangeablePatternModel.moments divided 0.5 by P(y = +1) = 0)."""
    model = E.iid_block_model(32, 30, 1e-12, 0.5, [30])
    mom = model.moments()
    with mp.workdps(50):
        p = mp.mpf(1e-12)
        ref = (1 - (p - p ** 30) / (1 - p ** 30)) / 2            # E[c | c < 30] = (30 p - 30 p^30) / (1 - p^30)
        assert mom.p_plus == 0.0 and abs(mp.mpf(mom.gamma_weighted[0]) - ref) <= EPS * ref   # 1 eps: 2 roundings
    Q = np.zeros((1, 32))
    Q[0, :30] = 0.004 * mom.sigt                            # alpha = 0.004: ratio 120 b* 0.004 / 1e-3 = 1 + 1.2e-10
    params2 = E.TwoLayerParams(Q, np.array([1e-3]), np.zeros(1))
    assert E.lemma23_construction(model, params2)[1][0].tolist() == [0]
    wrong, err = _lemma23_check(model, params2, None, None, "main")
    assert wrong == 0 and record("emergence.lemma23_construction (a_tilde)", err, model=repr(model)) <= 1
