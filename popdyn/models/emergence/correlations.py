r"""Single-neuron population correlations ``T_j, T_b, T_a`` of [Shi22] (derived in docs/emergence.md).

For a neuron with pattern coordinates ``q`` (D,), bias ``b`` and smoothing ``s``, with the hinge indicator = 1:

.. math:: T_j = \mathbb E[y\,\phi_j\,\mathrm{win}_s(\langle q,\phi\rangle + b)],\quad
          T_b = \mathbb E[y\,\mathrm{win}_s(\cdot)],\quad T_a = \mathbb E[y\,\tilde\sigma_s(\cdot)],\quad
          \beta = W(b)

so that ``dL/dw = -a sum_j M_j T_j``, ``dL/db = -a T_b``, ``dL/da = -T_a``. Methods:

* ``"fourier"`` (exact, s > 0): ``<q, phi> = c_A + S`` with ``c_A`` one value per A-support row and ``S`` a sum
  of independent two-point variables; ``W(c) = P(0 < c + S + xi < 1)`` by Fourier inversion on a trapezoid
  grid free of aliasing; the leave-one-out characteristic functions of ``T_B`` from prefix/suffix products
  (never dividing by ``psi_l``, which vanishes at p = 1/2). The label sum ``Y(t) = sum_r pi_r y_r e^{itc_r}``
  is formed once per node, so ``T_B`` costs O(|B|) per node and neuron. numba, parallel over neurons from 64 on.
* ``"enumerate"``: brute force over every background configuration (``D - k <= 20``), any s >= 0.
* ``"mc"``: seeded Monte Carlo (the xi expectation done in closed form), any s >= 0; :func:`mc_correlations`
  also returns standard errors.
* ``"gauss"``: the CLT approximation ``S ~ N(mean, var)`` (Lemma 13's leading order), with the Berry-Esseen
  bound :func:`clt_error_bound`.
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numba
import numpy as np
from scipy.special import ndtr

from ..._jit import serial_and_parallel
from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, check
from ...gaussian import normal_pdf
from .activation import smooth_trunc_relu, window, window_derivs
from .data import ExchangeablePatternModel, GaussianParityMixture, PatternModel

__all__ = ["NeuronCorr", "neuron_correlations", "mc_correlations", "clt_error_bound", "gmm_correlations"]

_T_MAX_S = 9.6        # t_max = 9.6 / s: exp(-s^2 t^2 / 2) = 1e-20 there
_PARALLEL_M = 64      # neurons from which the Fourier kernels run in parallel (their compile takes 4x longer)
_TAIL_S = 12.0        # the Gaussian xi is inside [-12 s, 12 s] up to 4e-33 when sizing the aliasing-free step
_BE_C = 0.56          # Berry-Esseen constant, independent non-identical summands (Shevtsova 2010: C <= 0.5600)
_RESYNC = 16         # nodes between exact phase evaluations in the kernel (rotation error ~16 ulp)
_BLOCK = 32          # nodes summed plainly before a compensated add to the totals (error ~_BLOCK ulp, not N)
_ENUM_MAX = 20        # "enumerate": 2^(D - k) background configurations at most
_MC_CHUNK = 20_000    # Monte Carlo samples per chunk (chunk x D floats)


class NeuronCorr(NamedTuple):
    """``T`` (D,) or (m, D), ``Tb``, ``Ta``, ``beta`` (floats or (m,)): see :func:`neuron_correlations`."""
    T: np.ndarray
    Tb: np.ndarray
    Ta: np.ndarray
    beta: np.ndarray


# ---- inputs ------------------------------------------------------------------------------------------------

def _inputs(owner, model, q, b, s, s_positive):
    if not isinstance(model, (PatternModel, ExchangeablePatternModel)):
        raise InvalidParameterError(f"The 'model' parameter of {owner} must be a PatternModel or an "
                                    f"ExchangeablePatternModel. Got {type(model).__name__} instead.")
    Q = check(owner, "q", np.atleast_2d(np.asarray(q, dtype=np.float64)), FiniteArray(2, (None, model.D)))
    single = np.ndim(q) == 1
    bv = np.array(b, dtype=np.float64) if np.ndim(b) <= 1 else None
    if bv is None or not np.all(np.isfinite(bv)) or bv.shape not in ((), (Q.shape[0],)):
        raise InvalidParameterError(f"The 'b' parameter of {owner} must be a finite float or an array of shape "
                                    f"({Q.shape[0]},). Got {b!r} instead.")
    s = check(owner, "s", s, Interval(0.0, np.inf, "neither" if s_positive else "left"))
    return Q, np.broadcast_to(bv, (Q.shape[0],)).copy(), s, single


def _alpha(model, y, weighted):
    """Class weights alpha_y = 1 / (2 P(y)) of App. F's weighted loss (1 when not weighted); the public functions
    have checked that both classes have positive probability (``Moments.class_weights``)."""
    return model.moments().class_weight(y) if weighted else np.ones_like(y)


def _pieces(model, Q, b, weighted):
    """c_A (m, R), q_B (m, nb), w = pi alpha_y y (R,), groups, P (G, nb), v0, v1 (nb,), P(group) (G,)."""
    mom = model.moments()
    phA = model.phi_A()
    cA = b[:, None] + Q[:, :model.k] @ phA.T
    P, grp = model.background_groups()
    piG = np.bincount(grp, weights=model.A_probs, minlength=P.shape[0])
    w = model.A_probs * model.labels * _alpha(model, model.labels, weighted)
    return (cA, np.ascontiguousarray(Q[:, model.k:]), w, grp, P,
            -mom.p_bar / mom.sigt, (1.0 - mom.p_bar) / mom.sigt, piG, phA)


def _total_s(model, Q, s):
    """Per-neuron total smoothing ``s_t = sqrt(s^2 + szeta2 ||q||^2)`` (input noise through ``<q, zeta>/sigt``)."""
    return np.sqrt(s * s + model.moments().szeta2 * (Q ** 2).sum(1))


def _assemble(model, W, Es, beta, TB, w, phA, single, Q, Dn):
    """T = [T_A, T_B] + the Stein term of the input noise, szeta2 q_j E[y win'_{s_t}] (docs/emergence.md)."""
    TA = (W * w) @ phA
    T = np.concatenate([TA, TB], axis=1) + model.moments().szeta2 * Q * (Dn @ w)[:, None]
    out = NeuronCorr(T, W @ w, Es @ w, beta)
    return NeuronCorr(*(x[0] for x in out)) if single else out


# ---- Fourier: numba kernel ---------------------------------------------------------------------------------

@numba.njit(cache=True)
def _flush(tot, cmp, acc):  # pragma: no cover - compiled
    """tot + cmp += acc (Neumaier's compensated sum), acc = 0: the trapezoid sums run over up to ~1e7 nodes
    (h ~ 1/span, span ~ |q|/sqrt(p) for a rare background coordinate), whose plain running sum loses ~N eps."""
    for j in range(acc.size):
        x = acc[j]
        t = tot[j] + x
        if abs(tot[j]) >= abs(x):
            cmp[j] += (tot[j] - t) + x
        else:
            cmp[j] += (x - t) + tot[j]
        tot[j] = t
        acc[j] = 0.0


def _fourier_kernel(cA, qB, w, grp, P, v0, v1, piG, b, s_t):  # pragma: no cover - compiled
    m, R = cA.shape
    nb = qB.shape[1]
    G = P.shape[0]
    W = np.zeros((m, R))
    Sa = np.zeros((m, R))
    Dn = np.zeros((m, R))
    beta = np.zeros(m)
    TB = np.zeros((m, nb))
    for i in numba.prange(m):
        s = s_t[i]
        span = _TAIL_S * s
        for l in range(nb):
            span += abs(qB[i, l]) * max(abs(v0[l]), abs(v1[l]))
        maxc = abs(b[i])
        for r in range(R):
            maxc = max(maxc, abs(cA[i, r]))
        h = math.pi / (span + maxc + 1.0)
        N = int(_T_MAX_S / (s * h)) + 2
        mg = np.zeros(G)
        for g in range(G):
            for l in range(nb):
                mg[g] += qB[i, l] * ((1.0 - P[g, l]) * v0[l] + P[g, l] * v1[l])
        e0 = np.empty(nb, np.complex128)
        e1 = np.empty(nb, np.complex128)
        d0 = np.empty(nb, np.complex128)
        d1 = np.empty(nb, np.complex128)
        fac = np.empty(nb, np.complex128)
        pre = np.empty(nb + 1, np.complex128)
        suf = np.empty(nb + 1, np.complex128)
        Er = np.empty(R, np.complex128)
        dr = np.empty(R, np.complex128)
        for l in range(nb):
            d0[l] = complex(math.cos(h * qB[i, l] * v0[l]), math.sin(h * qB[i, l] * v0[l]))
            d1[l] = complex(math.cos(h * qB[i, l] * v1[l]), math.sin(h * qB[i, l] * v1[l]))
        for r in range(R):
            dr[r] = complex(math.cos(h * cA[i, r]), math.sin(h * cA[i, r]))
        db = complex(math.cos(h * b[i]), math.sin(h * b[i]))
        eb = 1.0 + 0.0j
        accW = np.zeros(R)
        accS = np.zeros(R)
        accD = np.zeros(R)
        accB = np.zeros(nb)
        accb = np.zeros(1)
        tW, cW, tS, cS, tD, cD = np.zeros(R), np.zeros(R), np.zeros(R), np.zeros(R), np.zeros(R), np.zeros(R)
        tB, cB, tb, cb = np.zeros(nb), np.zeros(nb), np.zeros(1), np.zeros(1)
        for n in range(N):
            t = n * h
            wt = 0.5 * h if n == 0 else h
            gauss = math.exp(-0.5 * (s * t) ** 2)
            omc = complex(2.0 * math.sin(0.5 * t) ** 2, math.sin(t))                 # 1 - e^{-it}
            if n % _RESYNC == 0:    # exact phases every _RESYNC nodes, rotations in between (error ~ _RESYNC ulp)
                for l in range(nb):
                    e0[l] = complex(math.cos(t * qB[i, l] * v0[l]), math.sin(t * qB[i, l] * v0[l]))
                    e1[l] = complex(math.cos(t * qB[i, l] * v1[l]), math.sin(t * qB[i, l] * v1[l]))
                for r in range(R):
                    Er[r] = complex(math.cos(t * cA[i, r]), math.sin(t * cA[i, r]))
                eb = complex(math.cos(t * b[i]), math.sin(t * b[i]))
            else:
                for l in range(nb):
                    e0[l] *= d0[l]
                    e1[l] *= d1[l]
                for r in range(R):
                    Er[r] *= dr[r]
                eb *= db
            if n == 0:
                kap = 1.0 + 0.0j
            else:
                kap = complex(math.sin(t) / t, -2.0 * math.sin(0.5 * t) ** 2 / t)   # (1 - e^{-it}) / (it)
            for g in range(G):
                pre[0] = 1.0
                for l in range(nb):
                    fac[l] = (1.0 - P[g, l]) * e0[l] + P[g, l] * e1[l]
                    pre[l + 1] = pre[l] * fac[l]
                suf[nb] = 1.0
                for l in range(nb - 1, -1, -1):
                    suf[l] = suf[l + 1] * fac[l]
                psik = gauss * pre[nb] * kap
                psid = gauss * pre[nb] * omc
                Y = 0.0j
                for r in range(R):
                    if grp[r] != g:
                        continue
                    z = psik * Er[r]
                    accW[r] += wt * z.real
                    accD[r] += wt * (psid * Er[r]).real
                    if n == 0:
                        accS[r] += wt * (cA[i, r] + mg[g] - 0.5)
                    else:
                        accS[r] += wt * z.imag / t
                    Y += w[r] * Er[r]
                accb[0] += piG[g] * wt * (psik * eb).real
                Yk = gauss * kap * Y
                for l in range(nb):
                    u = (1.0 - P[g, l]) * v0[l] * e0[l] + P[g, l] * v1[l] * e1[l]
                    accB[l] += wt * (pre[l] * suf[l + 1] * Yk * u).real
            if n % _BLOCK == _BLOCK - 1 or n == N - 1:
                _flush(tW, cW, accW)
                _flush(tS, cS, accS)
                _flush(tD, cD, accD)
                _flush(tB, cB, accB)
                _flush(tb, cb, accb)
        for r in range(R):
            W[i, r] = (tW[r] + cW[r]) / math.pi
            Sa[i, r] = 0.5 + (tS[r] + cS[r]) / math.pi
            Dn[i, r] = (tD[r] + cD[r]) / math.pi
        beta[i] = (tb[0] + cb[0]) / math.pi
        for l in range(nb):
            TB[i, l] = (tB[l] + cB[l]) / math.pi
    return W, Sa, Dn, beta, TB


_fourier_serial, _fourier_parallel = serial_and_parallel(_fourier_kernel)


def _fourier(model, Q, b, s, single, weighted=False):
    cA, qB, w, grp, P, v0, v1, piG, phA = _pieces(model, Q, b, weighted)
    kernel = _fourier_parallel if cA.shape[0] >= _PARALLEL_M else _fourier_serial
    W, Es, Dn, beta, TB = kernel(cA, qB, w, grp, P, v0, v1, piG, b, _total_s(model, Q, s))
    np.clip(beta, 0.0, 1.0, out=beta)   # a probability: the quadrature's 1e-17 around 0 and 1 stays inside
    return _assemble(model, W, Es, beta, TB, w, phA, single, Q, Dn)


def _fourier_numpy(model, q, b, s, chunk=16, weighted=False):
    """The same Fourier sums, vectorised in numpy over (neurons, nodes, patterns) in chunks of neurons.

    The benchmark baseline of the numba kernel and an independent implementation for the tests:
    a common grid per chunk (smallest step, largest t_max), cumulative products for prefix/suffix.
    """
    Q, b, s, single = _inputs("emergence.correlations._fourier_numpy", model, q, b, s, True)
    cA, qB, w, grp, P, v0, v1, piG, phA = _pieces(model, Q, b, weighted)
    s_t = _total_s(model, Q, s)
    m, R = cA.shape
    nb = qB.shape[1]
    W, Es, Dn, beta, TB = np.empty((m, R)), np.empty((m, R)), np.empty((m, R)), np.empty(m), np.empty((m, nb))
    vmax = np.maximum(np.abs(v0), np.abs(v1))
    for lo in range(0, m, chunk):
        sl = slice(lo, min(lo + chunk, m))
        span = np.abs(qB[sl]) @ vmax + _TAIL_S * s_t[sl]
        maxc = np.maximum(np.abs(cA[sl]).max(1), np.abs(b[sl]))
        h = (math.pi / (span + maxc + 1.0)).min()
        t = np.arange(int(_T_MAX_S / (s_t[sl].min() * h)) + 2) * h
        wt = np.full(t.size, h)
        wt[0] *= 0.5
        tt = t[1:]
        kap = np.concatenate([[1.0], np.sin(tt) / tt - 2j * np.sin(0.5 * tt) ** 2 / tt])
        gauss = np.exp(-0.5 * (s_t[sl, None] * t) ** 2)                              # (c, N)
        gk = gauss * kap
        omc = 2 * np.sin(0.5 * t) ** 2 + 1j * np.sin(t)                               # 1 - e^{-it}
        e0 = np.exp(1j * t[None, :, None] * (qB[sl] * v0)[:, None, :])               # (c, N, nb)
        e1 = np.exp(1j * t[None, :, None] * (qB[sl] * v1)[:, None, :])
        Er = np.exp(1j * t[None, :, None] * cA[sl][:, None, :])                       # (c, N, R)
        eb = np.exp(1j * t[None, :] * b[sl, None])
        tinv = np.concatenate([[0.0], 1.0 / tt])
        accW, accS, accD = np.zeros((Er.shape[0], R)), np.zeros((Er.shape[0], R)), np.zeros((Er.shape[0], R))
        accB, accb = np.zeros((Er.shape[0], nb)), np.zeros(Er.shape[0])
        for g in range(P.shape[0]):
            fac = (1.0 - P[g]) * e0 + P[g] * e1
            ones = np.ones(fac.shape[:2] + (1,), dtype=np.complex128)
            pre = np.cumprod(np.concatenate([ones, fac], axis=2), axis=2)
            suf = np.cumprod(np.concatenate([ones, fac[:, :, ::-1]], axis=2), axis=2)[:, :, ::-1]
            psik = pre[:, :, -1] * gk                                                  # (c, N)
            rows = grp == g
            z = psik[:, :, None] * Er[:, :, rows]
            accW[:, rows] = np.einsum("n,cnr->cr", wt, z.real)
            psid = pre[:, :, -1] * gauss * omc
            accD[:, rows] = np.einsum("n,cnr->cr", wt, (psid[:, :, None] * Er[:, :, rows]).real)
            mg = qB[sl] @ ((1.0 - P[g]) * v0 + P[g] * v1)
            accS[:, rows] = np.einsum("n,cnr->cr", wt * tinv, z.imag) + wt[0] * (cA[sl][:, rows] + mg[:, None] - 0.5)
            accb += piG[g] * (psik * eb).real @ wt
            Yk = (Er[:, :, rows] @ w[rows]) * gk                                          # (c, N)
            u = (1.0 - P[g]) * v0 * e0 + P[g] * v1 * e1
            accB += np.einsum("n,cnl->cl", wt, (pre[:, :, :-1] * suf[:, :, 1:] * Yk[:, :, None] * u).real)
        W[sl], Es[sl], beta[sl], TB[sl] = accW / math.pi, 0.5 + accS / math.pi, accb / math.pi, accB / math.pi
        Dn[sl] = accD / math.pi
    return _assemble(model, W, Es, beta, TB, w, phA, single, Q, Dn)


# ---- Fourier, count-resolved iid block: numba kernel -------------------------------------------------------

def _exchangeable_kernel(qA, qB, yc, pA, u0, u1, pB, v0, v1, b, s, t0):  # pragma: no cover - compiled
    """T_A, T_B, T_b, T_a integrals for an iid A-block with count labels y_c: per node, the A-block generating
    function prod_j ((1-p_A) e^{itq_j u0} + p_A z e^{itq_j u1}) by prefix polynomials in z and the label-contracted
    suffixes R_j(a) = sum_b y_{a+b} [z^b] prod_{l>=j} f_l (R_j = alpha_j R_{j+1} + beta_j R_{j+1}(. + 1)): O(k^2)."""
    m, k = qA.shape
    nb = qB.shape[1]
    TA = np.zeros((m, k))
    TB = np.zeros((m, nb))
    Tb = np.zeros(m)
    Ta = np.zeros(m)
    beta = np.zeros(m)
    for i in numba.prange(m):
        span = _TAIL_S * s
        for j in range(k):
            span += abs(qA[i, j]) * max(abs(u0), abs(u1))
        for l in range(nb):
            span += abs(qB[i, l]) * max(abs(v0[l]), abs(v1[l]))
        h = math.pi / (span + abs(b[i]) + 1.0)
        N = int(_T_MAX_S / (s * h)) + 2
        pre = np.empty(nb + 1, np.complex128)
        suf = np.empty(nb + 1, np.complex128)
        fac = np.empty(nb, np.complex128)
        e0 = np.empty(nb, np.complex128)
        e1 = np.empty(nb, np.complex128)
        a0 = np.empty(k, np.complex128)
        a1 = np.empty(k, np.complex128)
        Pre = np.zeros((k + 1, k + 1), np.complex128)
        Rv = np.zeros(k + 2, np.complex128)
        Rn = np.zeros(k + 2, np.complex128)
        accA = np.zeros(k)
        accB = np.zeros(nb)
        acc3 = np.zeros(3)                           # T_b, T_a, beta
        tA, cA_, tB, cB, t3, c3 = np.zeros(k), np.zeros(k), np.zeros(nb), np.zeros(nb), np.zeros(3), np.zeros(3)
        for n in range(N):
            t = n * h
            wt = 0.5 * h if n == 0 else h
            gauss = math.exp(-0.5 * (s * t) ** 2)
            for l in range(nb):
                e0[l] = complex(math.cos(t * qB[i, l] * v0[l]), math.sin(t * qB[i, l] * v0[l]))
                e1[l] = complex(math.cos(t * qB[i, l] * v1[l]), math.sin(t * qB[i, l] * v1[l]))
            for j in range(k):
                a0[j] = complex(math.cos(t * qA[i, j] * u0), math.sin(t * qA[i, j] * u0))
                a1[j] = complex(math.cos(t * qA[i, j] * u1), math.sin(t * qA[i, j] * u1))
            kap = 1.0 + 0.0j if n == 0 else complex(math.sin(t) / t, -2.0 * math.sin(0.5 * t) ** 2 / t)
            ck = gauss * kap * complex(math.cos(t * b[i]), math.sin(t * b[i]))
            pre[0] = 1.0
            for l in range(nb):
                fac[l] = (1.0 - pB[l]) * e0[l] + pB[l] * e1[l]
                pre[l + 1] = pre[l] * fac[l]
            suf[nb] = 1.0
            for l in range(nb - 1, -1, -1):
                suf[l] = suf[l + 1] * fac[l]
            Pre[0, 0] = 1.0
            for j in range(k):                       # Pre[j + 1] = Pre[j] * ((1-p) a0_j + p a1_j z)
                al, be = (1.0 - pA) * a0[j], pA * a1[j]
                Pre[j + 1, 0] = al * Pre[j, 0]
                for a in range(1, j + 1):
                    Pre[j + 1, a] = al * Pre[j, a] + be * Pre[j, a - 1]
                Pre[j + 1, j + 1] = be * Pre[j, j]
            for a in range(k + 1):
                Rv[a] = yc[a]
            Rv[k + 1] = 0.0
            for j in range(k - 1, -1, -1):           # Rv = R_{j+1}
                g0, g1 = (1.0 - pA) * u0 * a0[j], pA * u1 * a1[j]
                Yj = 0.0j
                for a in range(j + 1):
                    Yj += Pre[j, a] * (g0 * Rv[a] + g1 * Rv[a + 1])
                accA[j] += wt * (pre[nb] * ck * Yj).real
                al, be = (1.0 - pA) * a0[j], pA * a1[j]
                for a in range(k + 1):
                    Rn[a] = al * Rv[a] + be * Rv[a + 1]
                for a in range(k + 1):
                    Rv[a] = Rn[a]
            Y = Rv[0]
            z = pre[nb] * ck * Y
            acc3[0] += wt * z.real
            acc3[1] += wt * (t0[i] if n == 0 else z.imag / t)
            acc3[2] += wt * (pre[nb] * ck).real
            Yk = ck * Y
            for l in range(nb):
                u = (1.0 - pB[l]) * v0[l] * e0[l] + pB[l] * v1[l] * e1[l]
                accB[l] += wt * (pre[l] * suf[l + 1] * Yk * u).real
            if n % _BLOCK == _BLOCK - 1 or n == N - 1:
                _flush(tA, cA_, accA)
                _flush(tB, cB, accB)
                _flush(t3, c3, acc3)
        for j in range(k):
            TA[i, j] = (tA[j] + cA_[j]) / math.pi
        for l in range(nb):
            TB[i, l] = (tB[l] + cB[l]) / math.pi
        Tb[i] = (t3[0] + c3[0]) / math.pi
        Ta[i] = (t3[1] + c3[1]) / math.pi
        beta[i] = (t3[2] + c3[2]) / math.pi
    return TA, TB, Tb, Ta, beta


_exchangeable_serial, _exchangeable_parallel = serial_and_parallel(_exchangeable_kernel)


def _fourier_exchangeable(model, Q, b, s, single, weighted=False):
    mom = model.moments()
    pi_c, y_c = model.count_law()
    yw = y_c * _alpha(model, y_c, weighted)
    k, p = model.k, model.p_A
    Eyw = pi_c @ yw                                                         # E[alpha_y y]
    Eywphi = (pi_c @ (yw * np.arange(k + 1) / k) - Eyw * p) / mom.sigt      # E[alpha_y y phi_j], j in A
    t0 = Eyw * (b - 0.5) + Eywphi * Q[:, :k].sum(1)                         # t -> 0 limit of the T_a integrand
    kernel = _exchangeable_parallel if Q.shape[0] >= _PARALLEL_M else _exchangeable_serial
    TA, TB, Tb, Ta, beta = kernel(
        np.ascontiguousarray(Q[:, :k]), np.ascontiguousarray(Q[:, k:]), yw, p, -p / mom.sigt,
        (1 - p) / mom.sigt, mom.p_bar, -mom.p_bar / mom.sigt, (1 - mom.p_bar) / mom.sigt, b, s, t0)
    out = NeuronCorr(np.concatenate([TA, TB], axis=1), Tb, Ta + 0.5 * Eyw, np.clip(beta, 0.0, 1.0))
    return NeuronCorr(*(x[0] for x in out)) if single else out


# ---- enumeration, Monte Carlo, CLT -------------------------------------------------------------------------

def _enumerate(model, Q, b, s, single, weighted=False):
    nb = model.D - model.k
    if nb > _ENUM_MAX:
        raise InvalidParameterError(f"The 'method' parameter of emergence.neuron_correlations must not be "
                                    f"'enumerate' when D - k = {nb} > {_ENUM_MAX} (2^(D-k) configurations).")
    cA, qB, w, grp, P, v0, v1, piG, phA = _pieces(model, Q, b, weighted)
    cfg = np.array(list(itertools.product([0, 1], repeat=nb)), dtype=np.float64).reshape(2 ** nb, nb)
    probs = np.prod(np.where(cfg[None, :, :] == 1, P[:, None, :], 1.0 - P[:, None, :]), axis=2)   # (G, 2^nb)
    phB = np.where(cfg == 1, v1, v0)   # (2^nb, nb); not v0 + cfg (v1 - v0): v1 = (1 - p)/sigt lost eps |v0|
    wgt = w[:, None] * probs[grp]                                                               # (R, 2^nb)
    m = Q.shape[0]
    s_t = _total_s(model, Q, s)
    W, Es, Dn, beta, TB = (np.zeros((m, len(w))), np.empty((m, len(w))), np.zeros((m, len(w))), np.empty(m),
                           np.empty((m, nb)))
    for i in range(m):
        S = phB @ qB[i]
        Z = cA[i][:, None] + S[None, :]
        win = window(Z, s_t[i])
        W[i] = (probs[grp] * win).sum(1)
        Es[i] = (probs[grp] * smooth_trunc_relu(Z, s_t[i])).sum(1)
        TB[i] = (wgt * win).sum(0) @ phB
        beta[i] = piG @ (probs @ window(b[i] + S, s_t[i]))
        if s_t[i] > 0:
            Dn[i] = (probs[grp] * (normal_pdf(Z / s_t[i]) - normal_pdf((1.0 - Z) / s_t[i])) / s_t[i]).sum(1)
    return _assemble(model, W, Es, beta, TB, w, phA, single, Q, Dn)


def _mc_sums(model, Q, b, s, n, seed, weighted=False):
    rng = np.random.default_rng(seed)
    m, D = Q.shape
    sums = {k: 0.0 for k in ("T", "T2", "Tb", "Tb2", "Ta", "Ta2", "beta", "beta2")}
    sb = np.sqrt(s * s + model.moments().szeta2 * (Q[:, :model.k] ** 2).sum(1))  # + the A-part of the input noise
    done = 0
    while done < n:
        c = min(_MC_CHUNK, n - done)
        X, y, _ = model.sample(c, rng)
        y = y * _alpha(model, y, weighted)
        Z = X @ Q.T + b                                                  # (c, m)
        win = window(Z, s)
        yw = y[:, None] * win
        ya = y[:, None] * smooth_trunc_relu(Z, s)
        bgZ = X[:, model.k:] @ Q[:, model.k:].T + b                      # background-only pre-activation
        bw = np.stack([window(bgZ[:, i], sb[i]) for i in range(m)], axis=1)
        sums["T"] = sums["T"] + yw.T @ X
        sums["T2"] = sums["T2"] + ((y[:, None] * win) ** 2).T @ X ** 2
        for key, v in (("Tb", yw), ("Ta", ya), ("beta", bw)):
            sums[key] = sums[key] + v.sum(0)
            sums[key + "2"] = sums[key + "2"] + (v ** 2).sum(0)
        done += c
    mean = {k: sums[k] / n for k in ("T", "Tb", "Ta", "beta")}
    se = {k: np.sqrt(np.maximum(sums[k + "2"] / n - mean[k] ** 2, 0.0) / (n - 1)) for k in mean}
    return NeuronCorr(**mean), NeuronCorr(**se)


def _squeeze(nc, single):
    return NeuronCorr(*(x[0] for x in nc)) if single else nc


def _gauss(model, Q, b, s, single, weighted=False):
    cA, qB, w, grp, P, v0, v1, piG, phA = _pieces(model, Q, b, weighted)
    m, R = cA.shape
    s_t = _total_s(model, Q, s)
    W, Es, Dn, beta, TB = np.empty((m, R)), np.empty((m, R)), np.empty((m, R)), np.zeros(m), np.zeros((m, qB.shape[1]))
    for g in range(P.shape[0]):
        rows = grp == g
        mu = (1.0 - P[g]) * v0 + P[g] * v1                        # E[phi_l | group]
        var = P[g] * (1.0 - P[g]) * (v1 - v0) ** 2                 # Var[phi_l | group]
        mg = qB @ mu
        sbar = np.sqrt((qB ** 2) @ var + s_t ** 2)                  # (m,)
        c = cA[:, rows] + mg[:, None]
        u0, u1 = c / sbar[:, None], (1.0 - c) / sbar[:, None]
        f = _win_std(u0, u1)
        fp = (np.exp(-0.5 * u0 ** 2) - np.exp(-0.5 * u1 ** 2)) / (math.sqrt(2 * math.pi) * sbar[:, None])
        W[:, rows], Dn[:, rows] = f, fp
        Es[:, rows] = np.array([smooth_trunc_relu(c[i], sbar[i]) for i in range(m)])
        beta += piG[g] * np.array([window(b[i] + mg[i], sbar[i]) for i in range(m)])
        TB += (f @ w[rows])[:, None] * mu + qB * var * (fp @ w[rows])[:, None]
    return _assemble(model, W, Es, beta, TB, w, phA, single, Q, Dn)


def _win_std(u0, u1):
    """``Phi(u1) - Phi(-u0)``, the window with the smoothing folded into u0 = c/sbar, u1 = (1 - c)/sbar."""
    return np.where(u0 < u1, ndtr(u0) - ndtr(-u1), ndtr(u1) - ndtr(-u0))


_METHODS = {"fourier": _fourier, "enumerate": _enumerate, "gauss": _gauss}


def neuron_correlations(model, q, b, s, method="fourier", *, class_weighted=False, n_mc=1_000_000, seed=0):
    r"""Population correlations ``(T, T_b, T_a, beta)`` of one neuron or of m neurons (hinge indicator = 1).

    .. math:: T_j = \mathbb E[y\phi_j\,\mathrm{win}_s(\langle q,\phi\rangle+b)] = \sum_r\pi_ry_r\phi^{(r)}_j
              W(c_A^{(r)})\ (j\in A),\qquad
              W(c) = \frac1\pi\int_0^\infty\mathrm{Re}\Big[\psi(t)\,e^{itc}\,\frac{1 - e^{-it}}{it}\Big]dt,

    .. math:: T_j = \frac1\pi\int_0^\infty\mathrm{Re}\Big[\psi_{-j}(t)\frac{1-e^{-it}}{it}
              \sum_r\pi_ry_re^{itc_A^{(r)}}\big((1-p_j)v_0e^{itq_jv_0} + p_jv_1e^{itq_jv_1}\big)\Big]dt\ (j\notin A),

    .. math:: T_a = \sum_r\pi_ry_r\Big(\frac12 + \frac1\pi\int_0^\infty\mathrm{Im}\Big[\psi(t)e^{itc_A^{(r)}}
              \frac{1-e^{-it}}{it}\Big]\frac{dt}{t}\Big),\qquad \beta = W(b),

    with ``psi(t) = e^{-s_t^2t^2/2} prod_{l in B} ((1 - p_l) e^{itq_l v_0} + p_l e^{itq_l v_1})``,
    ``v_0 = -p/sigt``, ``v_1 = (1 - p)/sigt`` (per background group when ``p_bg_rows`` is set). With App. F input
    noise (``sigma_zeta > 0``, neurons in span(M)) the smoothing is ``s_t^2 = s^2 + (sigma_zeta/sigt)^2 ||q||^2``
    and Stein's lemma adds ``(sigma_zeta/sigt)^2 q_j E[y win'_{s_t}]`` to every ``T_j`` (docs/emergence.md), with
    ``E[y win'] = sum_r pi_r y_r (1/pi) int Re[psi(t) e^{itc_r} (1 - e^{-it})] dt``; ``beta`` then includes the
    noise of every coordinate.

    Parameters
    ----------
    model : PatternModel or ExchangeablePatternModel
        The count-resolved model uses an O(k^2)-per-node generating-function recursion for "fourier" and its
        explicit support (k <= 20) for "enumerate" and "gauss".
    q : array_like of shape (D,) or (m, D)
        Pattern coordinates ``M^T w`` of the neurons.
    b : float or array_like of shape (m,)
        Biases.
    s : float
        Smoothing ``sigma_xi``; > 0 for "fourier", >= 0 otherwise.
    method : {"fourier", "enumerate", "mc", "gauss"}
        "fourier": exact (numba, parallel over neurons); "enumerate": brute force, ``D - k <= 20``; "mc":
        Monte Carlo with ``n_mc`` samples and ``seed``; "gauss": the CLT approximation of the background.
    class_weighted : bool
        Replace y by ``alpha_y y`` with ``alpha_y = 1/(2 P(y))`` (App. F's class-weighted loss of steps 1-2).
    n_mc : int
        Monte Carlo samples (method "mc").
    seed : int or numpy.random.Generator
        Monte Carlo randomness.

    Returns
    -------
    NeuronCorr
        ``T`` (D,) or (m, D), ``Tb``, ``Ta``, ``beta`` (float or (m,)). ``beta`` is the background window at the
        bias, ``P(<q_B, phi_B> + b + xi in (0, 1))`` (Lemma 15).

    Notes
    -----
    Regime: hinge indicator = 1 (always at t = 1; certified at t = 2). "fourier": step
    ``h = pi / (span + max|c| + 1)`` (twice the aliasing limit), ``t_max = 9.6/s``, cost
    O((|B| + R) t_max/h) per neuron, so it grows like 1/s; agrees with "enumerate" to ~1e-15 (tests). "gauss"
    replaces the background by a normal with its (group) mean and variance; ``T_B`` is its first order in q_j;
    errors in :func:`clt_error_bound`.

    Accuracy ("fourier" and "enumerate"): absolute error <= 1e-12 ``E|phi_j|`` for ``T_j`` and <= 1e-12 for
    ``T_b``, ``T_a``, ``beta`` (each bounded by that scale), for s in [1e-2, 10], ``|q_l| <= 10``, b in [-2, 3],
    k <= 3, D - k <= 4 and probabilities within 1e-12 of 0 or 1; ``beta`` in [0, 1]. Measured: 1.2e-2 ("fourier")
    and 1.4e-3 ("enumerate") of the bound (tests/test_accuracy_emergence.py, enumeration of the joint law in mpmath
    at 40 digits). The trapezoid sums run in blocks of 32 nodes added to the totals with compensation (Neumaier):
    a rare background coordinate (p ~ 1e-11) puts an outcome at ``|q|/sqrt(p)``, so ``h ~ sqrt(p)`` and ~1e7 nodes,
    whose plain running sum was 1.4e-12 off in ``T_b``, ``beta`` (4.7e-12 found by the search). Before also:
    "enumerate" formed ``phi_B = v0 + (v1 - v0)``, 1.6e-12 ``E|phi_B|`` off at p = 1 - 1e-6; "fourier" returned
    beta = -2e-17 where it is ~0.

    References
    ----------
    .. [src] [Shi22, proof of Lemma 15, eqs. (54), (89), (101); Lemma 13; Lemma 15]; the Fourier method
       derived in docs/emergence.md.

    Examples
    --------
    With ``q_A = 0`` and balanced classes: ``T_A = (gamma/sigt) beta``, ``T_B = T_b = T_a = 0``.

    >>> from popdyn.models.emergence import parity_mixture
    >>> model = parity_mixture(12, 3, 0.5)
    >>> q = np.r_[np.zeros(3), np.linspace(-0.3, 0.3, 9)]
    >>> T, Tb, Ta, beta = neuron_correlations(model, q, 0.1, 0.2)
    >>> mom = model.moments()
    >>> bool(np.allclose(T[:3], mom.gamma / mom.sigt * beta, atol=1e-14) and abs(Tb) < 1e-14)
    True
    """
    owner = "emergence.neuron_correlations"
    method = check(owner, "method", method, Options(("fourier", "enumerate", "mc", "gauss")))
    Q, b, s, single = _inputs(owner, model, q, b, s, method == "fourier")
    weighted = check(owner, "class_weighted", class_weighted, Options((False, True)))
    if weighted:
        model.moments().class_weights(owner, "class_weighted")
    if method == "mc":
        n_mc = check(owner, "n_mc", n_mc, Integer(2))
        return _squeeze(_mc_sums(model, Q, b, s, n_mc, seed, weighted)[0], single)
    if isinstance(model, ExchangeablePatternModel):
        if method == "fourier":
            return _fourier_exchangeable(model, Q, b, s, single, weighted)
        model = _explicit(owner, model, method)
    return _METHODS[method](model, Q, b, s, single, weighted)


def _explicit(owner, model, method):
    if model.k > _ENUM_MAX:
        raise InvalidParameterError(f"The 'method' parameter of {owner} must be 'fourier' or 'mc' for an "
                                    f"ExchangeablePatternModel with k = {model.k} > {_ENUM_MAX}. Got {method!r}.")
    return model.to_pattern_model()


def mc_correlations(model, q, b, s, n, seed=0, *, class_weighted=False):
    r"""Monte Carlo estimates of ``(T, T_b, T_a, beta)`` and their standard errors.

    .. math:: \hat T_j = \frac1n\sum_{i=1}^n y_i\phi_{ij}\,\mathrm{win}_s(\langle q,\phi_i\rangle + b),\qquad
              \mathrm{SE} = \hat s/\sqrt n

    (the xi expectation is done in closed form by the window: Rao-Blackwellised).

    Parameters
    ----------
    model : PatternModel
    q, b, s
        As in :func:`neuron_correlations`; ``s >= 0``.
    n : int
        Samples, >= 2.
    seed : int or numpy.random.Generator
    class_weighted : bool
        As in :func:`neuron_correlations`.

    Returns
    -------
    mean, se : NeuronCorr

    Notes
    -----
    Regime: any member; the SE of ``T_B`` (~1e-4 at 2e7 samples) cannot resolve ``T_B`` at the paper's
    scale: compare ``T_A``, ``T_b``, ``T_a`` coordinate-wise and ``T_B`` through aggregate z-scores.

    References
    ----------
    .. [src] derived in docs/emergence.md (Monte Carlo twin of the Fourier method).
    """
    owner = "emergence.mc_correlations"
    Q, b, s, single = _inputs(owner, model, q, b, s, False)
    weighted = check(owner, "class_weighted", class_weighted, Options((False, True)))
    if weighted:
        model.moments().class_weights(owner, "class_weighted")
    mean, se = _mc_sums(model, Q, b, s, check(owner, "n", n, Integer(2)), seed, weighted)
    return _squeeze(mean, single), _squeeze(se, single)


def clt_error_bound(model, q, b, s):
    r"""Berry-Esseen bounds on the error of the CLT approximation ("gauss") of ``W``, ``T_A``, ``T_b``, ``T_a``.

    .. math:: \sup_c|W(c) - W^{\rm G}(c)| \le 2C\,\frac{\sum_{l\in B}\mathbb E|q_l(\phi_l - \mathbb E\phi_l)|^3}
              {\big(\sum_{l\in B}q_l^2\mathrm{Var}\,\phi_l\big)^{3/2}} =: \epsilon_W,\qquad C = 0.56,

    ``|T_j - T_j^G| <= eps_W sum_r pi_r |phi_j^(r)|`` (j in A), ``|T_b - T_b^G| <= eps_W``,
    ``|T_a - T_a^G| <= eps_W / 2`` (the CDF error, integrated over a unit interval).

    Parameters
    ----------
    model, q, b, s
        As in :func:`neuron_correlations` (b and s do not enter the bound; s >= 0).

    Returns
    -------
    eps_W : float or ndarray of shape (m,)
        The window bound (0 when ``q_B = 0``: then the CLT form is exact); max over background groups.
    eps_TA : ndarray of shape (k,) or (m, k)
    eps_Tb, eps_Ta : float or ndarray of shape (m,)

    Notes
    -----
    Regime: independent background given the row. Lyapunov ratio ~ 1/sqrt(D - k) for comparable q_l, so the
    bound falls like D^{-1/2}; the actual error falls faster at p = 1/2 (~1/D, no skewness). Smoothing
    by xi only averages the interval probability, so the bound holds for every s >= 0.

    References
    ----------
    .. [src] [Shi22, Lemma 13 (Berry-Esseen)]; Shevtsova (2010) for C <= 0.5600.
    """
    Q, b, s, single = _inputs("emergence.clt_error_bound", model, q, b, s, False)
    if isinstance(model, ExchangeablePatternModel):
        model = _explicit("emergence.clt_error_bound", model, "gauss")
    cA, qB, w, grp, P, v0, v1, piG, phA = _pieces(model, Q, b, False)
    eps = np.zeros(Q.shape[0])
    for g in range(P.shape[0]):
        p = P[g]
        var = (qB ** 2) @ (p * (1 - p) * (v1 - v0) ** 2)
        rho = (np.abs(qB) ** 3) @ (p * (1 - p) * (p ** 2 + (1 - p) ** 2) * np.abs(v1 - v0) ** 3)
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = np.maximum(eps, np.where(var > 0, 2 * _BE_C * rho / np.where(var > 0, var, 1.0) ** 1.5, 0.0))
    eps = np.minimum(eps, 1.0)
    absw = np.abs(w)
    out = (eps, eps[:, None] * (absw @ np.abs(phA))[None, :], eps * absw.sum(), 0.5 * eps * absw.sum())
    return tuple(x[0] for x in out) if single else out


def gmm_correlations(model, w, b, s):
    r"""Exact population correlations of neurons on the Gaussian-mixture parity (Stein's lemma).

    With ``m_eps = <w, M eps> + b`` and ``S^2 = tau^2 ||w||^2 + s^2``:

    .. math:: \mathbb E[y\,x\,\mathrm{win}_s(\langle w,x\rangle+b)] = 2^{-k}\sum_\varepsilon y(\varepsilon)
              \Big[M\varepsilon\,\mathrm{win}_S(m_\varepsilon) + \tau^2w\,
              \frac{\varphi(m_\varepsilon/S) - \varphi((1-m_\varepsilon)/S)}{S}\Big],

    ``T_b = 2^{-k} sum y win_S(m_eps)``, ``T_a = 2^{-k} sum y sigma~_S(m_eps)``, ``beta = win_S(b)``.

    Parameters
    ----------
    model : GaussianParityMixture
    w : array_like of shape (d,) or (m, d)
        First-layer weights in input space.
    b : float or array_like of shape (m,)
        Biases.
    s : float
        Smoothing ``sigma_xi >= 0`` (``S > 0`` needs ``w != 0`` or ``s > 0``).

    Returns
    -------
    NeuronCorr
        ``T`` (d,) or (m, d) ``= E[y x win]``; ``Tb``, ``Ta``, ``beta``.

    Notes
    -----
    Regime: exact for every w, b and s (the xi and g expectations are Gaussian); 2^k terms (k <= 16). gamma = 0
    here, so the first-order (w = 0) signal ``2^-k sum_eps y M eps win_S(b)`` vanishes for k >= 2.

    Accuracy: ``|T_j - exact| <= 1e-12 2^-k sum_eps (|(M eps)_j| win_S + tau^2 |w_j| |win_S'|)`` and T_b, T_a
    within 1e-12 of ``2^-k sum_eps`` of their magnitudes (the parity sums cancel), beta relative 1e-12; plus
    1e-300 where those scales are subnormal; for k <= 4, S from 1e-3 to 1e3. Measured: 0.39 of the bound
    (tests/test_accuracy_emergence.py, mpmath at 50 digits). ``win_S'`` through :func:`window_derivs` (the
    difference of densities cancels near m = 1/2 and at large S).

    References
    ----------
    .. [src] [Shi22, App. E.3.2, eq. (290)]; the exact correlation derived in docs/emergence.md.
    """
    owner = "emergence.gmm_correlations"
    if not isinstance(model, GaussianParityMixture):
        raise InvalidParameterError(f"The 'model' parameter of {owner} must be a GaussianParityMixture. "
                                    f"Got {type(model).__name__} instead.")
    Wm = check(owner, "w", np.atleast_2d(np.asarray(w, dtype=np.float64)), FiniteArray(2, (None, model.d)))
    single = np.ndim(w) == 1
    bv = np.array(b, dtype=np.float64)
    if bv.shape not in ((), (Wm.shape[0],)) or not np.all(np.isfinite(bv)):
        raise InvalidParameterError(f"The 'b' parameter of {owner} must be a finite float or an array of shape "
                                    f"({Wm.shape[0]},). Got {b!r} instead.")
    bv = np.broadcast_to(bv, (Wm.shape[0],))
    s = check(owner, "s", s, Interval(0.0, np.inf, "left"))
    E, y = model.centers()
    tau2 = model.tau2
    ME = E @ model.M.T                                                  # (2^k, d) centers
    out = []
    for wi, bi in zip(Wm, bv):
        S = math.sqrt(tau2 * (wi @ wi) + s * s)
        mv = ME @ wi + bi
        win = window(mv, S)
        # win_S'(m) = (phi(m/S) - phi((1-m)/S))/S through window_derivs: the difference cancels near m = 1/2 and
        # at large S (was 6e-7 relative off at S = 1e3)
        dens = window_derivs(mv, S)[1] if S > 0 else np.zeros_like(mv)
        T = ((y * win) @ ME + tau2 * wi * (y @ dens)) / len(y)
        out.append((T, (y @ win) / len(y), (y @ smooth_trunc_relu(mv, S)) / len(y), float(window(bi, S))))
    T, Tb, Ta, beta = (np.array(x) for x in zip(*out))
    res = NeuronCorr(T, Tb, Ta, beta)
    return NeuronCorr(*(x[0] for x in res)) if single else res
