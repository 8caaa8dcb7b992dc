r"""The overlap ODE of online SGD for the soft committee machine, any activation (Saad & Solla 1995; Goldt et al. 2019).

With :math:`u = (v, -v^*)` over the :math:`P = K + M` fields :math:`f = (\lambda, \nu)` of covariance
:math:`\Omega = [[Q, R], [R^T, T]]` (:math:`T = BB^T`, the problem's ``teacher_overlap``) and
:math:`\Delta = \sum_j u_j g(f_j)`; the step sizes are :math:`\eta` = ``lr``, :math:`\eta_v` = ``lr_v`` and the
weight decay wd = ``weight_decay`` (of both layers):

.. math:: \frac{dR_{kn}}{dt} = -\eta v_k\,\mathbb E[g'(\lambda_k)\nu_n\Delta] - \eta\,\mathrm{wd}\,R_{kn}

.. math:: \frac{dQ_{kl}}{dt} = -\eta v_k\,\mathbb E[g'(\lambda_k)\lambda_l\Delta] - \eta v_l\,\mathbb E[g'(\lambda_l)\lambda_k\Delta]
          + \eta^2 v_kv_l\,\mathbb E[g'(\lambda_k)g'(\lambda_l)(\Delta^2 + \sigma^2)] - 2\eta\,\mathrm{wd}\,Q_{kl}

.. math:: \frac{dv_k}{dt} = -\eta_v\,\mathbb E[g(\lambda_k)\Delta] - \eta_v\,\mathrm{wd}\,v_k,\qquad
          \epsilon_g = \tfrac12\,\mathbb E[\Delta^2] = \tfrac12 u^T I_2(\Omega) u

where :math:`\mathbb E[g'(f_k) f_i \Delta] = \sum_j u_j I_3(f_k, f_i, f_j)` and
:math:`\mathbb E[g'g'\Delta^2] = \sum_{jj'}u_ju_{j'}I_4(f_k, f_l, f_j, f_{j'})`.

Weight decay is SGD on the per-sample loss :math:`\Delta^2/2 + \tfrac{\mathrm{wd}}2(\|J\|_F^2 + \|v\|^2)`, each layer
with its own step (:math:`J \leftarrow J - \tfrac{\eta}{d}(\dots + \mathrm{wd}\,J)`,
:math:`v \leftarrow v - \tfrac{\eta_v}{d}(\dots + \mathrm{wd}\,v)`, the simulation's update): per unit of the ODE's
time t = steps/d the penalty's gradient enters at the layer's rate, :math:`-\eta\,\mathrm{wd}\,J`, hence
:math:`-\eta\,\mathrm{wd}\,R` and :math:`-2\eta\,\mathrm{wd}\,Q` (the :math:`(\eta\,\mathrm{wd}/d)^2` cross term is
O(1/d)), and :math:`-\eta_v\,\mathrm{wd}\,v` (so ``lr_v = 0`` keeps v at v0 also under weight decay).
"""
from __future__ import annotations

import itertools
import math
import weakref
from typing import NamedTuple

import numba
import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq, root

from ...dynamics import solve_ode
from ..._validate import FiniteArray, Interval, InvalidParameterError, Options, check
from ...results import Prediction
from . import conditional
from .integrals import _family_eta2, _gauss_mean, _polar_nodes, _tensor_rule, integrals
from .problem import Problem

__all__ = ["drift", "generalisation_error", "ode", "plateau", "escape_time"]

_M2_ODE = 28            # 2-D integrals inside the ODE: polar rule at 42 (10 angles per arc x 21 radii)
_M2_EG = 64             # eg of a quadrature activation: polar rule at 64 (16 angles per arc x 32 radii)
_M2_PAIR = 96           # the drift's pair integrals without closed forms: polar rule at 96 (24 angles per arc x 48
#                         radii; 42 was up to 1e-3 of the term near the teacher, 96 is <= 3e-9, docs/committee.md)
# the eta^2 term without closed forms, by conditioning (conditional.eta2): the drift's rule (24 angles per arc, 36 radii,
# 32 for the pair terms, 27 line nodes per half-segment; 20 angles left 1.5e-8 at 2 of 180 random states) and a finer
# one, its error estimate's reference
_ETA2 = conditional.Eta2Rule(96, 36, 32, conditional.GRADED3, 80, 48)
_ETA2_FINE = conditional.Eta2Rule(128, 48, 44, conditional.Line(conditional.GRADED3.grade, 12), 100, 64)
ETA2_RULES = ("conditioned", "tensor")
_FULL_NODES = 5e4       # the tensor eta^2 rule: tensor nodes (before pruning) of the P-dimensional Gauss-Hermite rule
_PRUNE_ODE = 1e-10      # and it drops nodes of weight < 1e-10 x the largest (total < 1e-8)
_cache = weakref.WeakKeyDictionary()
_EPS = np.finfo(np.float64).eps


class _Plan:
    """Index tables and integrals of one problem's drift (cached per problem); ``refine`` > 1 scales the quadrature
    rules of a drift without closed forms and takes the finer eta^2 rule (the accuracy estimate of :func:`ode`
    compares against 3/2)."""

    def __init__(self, problem, refine=1.0, eta2_rule="conditioned"):
        K, M = problem.K, problem.M
        P = K + M
        self.K, self.M, self.P = K, M, P
        self.ig = integrals(problem.activation, m2=_M2_ODE)
        g = lambda *r: np.array(list(itertools.product(*r)))
        self.i2 = g(range(P), range(P))
        self.upper = self.i2[self.i2[:, 0] <= self.i2[:, 1]]
        self.i3 = g(range(K), range(P), range(P))
        self.relu = self.ig._kind == "relu"                        # the eta^2 term from the orthant moments
        self.i4 = g(range(K), range(K), range(P), range(P)) if "I4" in self.ig.closed and not self.relu else None
        self.j2 = g(range(K), range(K))
        self.eta2 = _ETA2 if refine == 1.0 else _ETA2_FINE
        self.tensor = eta2_rule == "tensor"
        self.m_full = max(4, int(round(refine * _FULL_NODES ** (1 / P))))
        self.m_pair = int(round(refine * _M2_PAIR))
        self.kernel = problem.activation._family.name == "erf"     # compiled closed forms (erf of any scale)
        self.generic = not self.ig.closed                          # quadrature for I2, I3 and the eta^2 term
        if self.generic:                                           # the (k, j) pairs of the Stein-reduced I3
            self.pairs = g(range(K), range(P))
        self.s2 = 2 * problem.activation.r ** 2                    # erf(r x) = G(sqrt(2) r x), G = erf(./sqrt 2)


def _plan(problem, eta2_rule="conditioned"):
    plans = _cache.setdefault(problem, {})
    if eta2_rule not in plans:
        plans[eta2_rule] = _Plan(problem, eta2_rule=eta2_rule)
    return plans[eta2_rule]


def _sub(Omega, idx):
    return Omega[idx[:, :, None], idx[:, None, :]]


class _Rates(NamedTuple):
    """The training hyperparameters the drift needs: step sizes of J and v, weight decay of both."""
    lr: float
    lr_v: float
    weight_decay: float

    @property
    def trains_v(self):
        return self.lr_v > 0


def _rates(owner, lr, lr_v, weight_decay):
    """Checked ``(lr, lr_v, weight_decay)``: the first-layer step size (> 0), the second layer's (>= 0; 0 keeps v
    fixed) and the weight decay of both layers (>= 0)."""
    return _Rates(check(owner, "lr", lr, Interval(0, np.inf, closed="neither")),
                  check(owner, "lr_v", lr_v, Interval(0, np.inf, closed="left")),
                  check(owner, "weight_decay", weight_decay, Interval(0, np.inf, closed="left")))


def _check_state(owner, problem, Q, R, v):
    K, M = problem.K, problem.M
    Q = check(owner, "Q", Q, FiniteArray(2, (K, K)))
    R = check(owner, "R", R, FiniteArray(2, (K, M)))
    v = np.ones(K) if v is None else check(owner, "v", v, FiniteArray(1, (K,)))
    Om = np.block([[Q, R], [R.T, problem.teacher_overlap]])
    if not np.allclose(Q, Q.T, rtol=0, atol=1e-10 * (1 + np.abs(Q).max())) or \
            np.linalg.eigvalsh((Om + Om.T) / 2)[0] < -1e-9 * (1 + np.abs(Om).max()):
        raise InvalidParameterError(
            f"The 'Q' parameter of {owner} must make [[Q, R], [R^T, T]] symmetric positive semi-definite "
            f"(overlaps of real weights). Got Q={Q!r}, R={R!r} instead.")
    return Q, R, v


@numba.njit(cache=True)
def _erf_kernel(Om, u, K, eta, eta2, sigma2):  # pragma: no cover - compiled
    """First-layer drift of g(x) = erf(x/sqrt 2) (covariance pre-scaled): the Saad-Solla closed forms in loops."""
    P = Om.shape[0]
    A = np.zeros((K, P))                  # A[k, i] = sum_j u_j I3(k, i, j)
    for k in range(K):
        a1 = 1.0 + Om[k, k]
        for j in range(P):
            lam3 = a1 * (1.0 + Om[j, j]) - Om[k, j] ** 2
            c = u[j] * (2.0 / math.pi) / math.sqrt(lam3) / a1
            for i in range(P):
                A[k, i] += c * (Om[i, j] * a1 - Om[k, i] * Om[k, j])
    E = np.zeros((K, K))                  # E[k, l] = sum_ij u_i u_j I4(k, l, i, j) + sigma^2 J2(k, l)
    if eta2 != 0.0:
        for k in range(K):
            for l in range(k, K):
                a1, a2, c12 = 1.0 + Om[k, k], 1.0 + Om[l, l], Om[k, l]
                lam4 = a1 * a2 - c12 * c12
                tot = 0.0
                for i in range(P):
                    li = (lam4 * (1.0 + Om[i, i]) - Om[l, i] ** 2 * a1 - Om[k, i] ** 2 * a2
                          + 2 * c12 * Om[k, i] * Om[l, i])
                    for j in range(i, P):
                        lj = (lam4 * (1.0 + Om[j, j]) - Om[l, j] ** 2 * a1 - Om[k, j] ** 2 * a2
                              + 2 * c12 * Om[k, j] * Om[l, j])
                        l0 = (lam4 * Om[i, j] - Om[l, i] * Om[l, j] * a1 - Om[k, i] * Om[k, j] * a2
                              + c12 * Om[k, i] * Om[l, j] + c12 * Om[k, j] * Om[l, i])
                        x = min(1.0, max(-1.0, l0 / math.sqrt(li * lj)))
                        tot += (1.0 if i == j else 2.0) * u[i] * u[j] * math.asin(x)
                val = (4.0 / math.pi ** 2) / math.sqrt(lam4) * tot + sigma2 * (2.0 / math.pi) / math.sqrt(lam4)
                E[k, l] = val
                E[l, k] = val
    return A, E


def _rhs(problem, rt, Q, R, v, pl=None):
    pl = _plan(problem) if pl is None else pl
    if pl.kernel:
        return _rhs_erf(problem, rt, pl, Q, R, v)
    Om = np.block([[Q, R], [R.T, problem.teacher_overlap]])
    u = np.concatenate([v, -problem.v_star])
    K, P, eta, wd = pl.K, pl.P, rt.lr, rt.weight_decay
    if pl.generic:
        A, gD = _pair_moments(problem.activation, pl, Om, u)
    else:
        A = pl.ig._I3(_sub(Om, pl.i3)).reshape(K, P, P) @ u        # A[k, i] = E[g'(f_k) f_i Delta]
    dR = -eta * v[:, None] * A[:, K:] - eta * wd * R
    first = v[:, None] * A[:, :K]
    dQ = -eta * (first + first.T) - 2 * eta * wd * Q
    if problem.order == 2:
        dQ = dQ + eta ** 2 * np.outer(v, v) * _second_moment(problem, pl, Om, u)
    dv = np.zeros(K)
    if rt.trains_v:
        dv = -rt.lr_v * ((gD if pl.generic else pl.ig._I2(_sub(Om, pl.i2[:K * P])).reshape(K, P) @ u) + wd * v)
    return dQ, dR, dv


def _pair_moments(g, pl, Om, u):
    r"""Without closed forms: :math:`A_{ki} = \sum_ju_jI_3(f_k, f_i, f_j)` and :math:`\mathbb E[g(f_k)\Delta]` from
    one 2-D Gauss-Hermite rule per pair (k, j) (K P pairs, not K P^2 triples: Stein's lemma on the middle field,

    .. math:: I_3(f_k, f_i, f_j) = \frac{\Omega_{ki}}{\Omega_{kk}}\big(\mathbb E[f_kg'(f_k)g(f_j)]
              - \Omega_{kj}\mathbb E[g'(f_k)g'(f_j)]\big) + \Omega_{ij}\mathbb E[g'(f_k)g'(f_j)]),

    the polar rule of each pair's covariance, split where a field vanishes: smooth in Omega)."""
    K, P = pl.K, pl.P
    x, w = _polar_nodes(_sub(Om, pl.pairs), pl.m_pair)             # (K P, N, 2) nodes of each pair's N(0, C)
    a, c = x[..., 0], x[..., 1]
    ga, da, gc, dc = g(a), g.deriv(a), g(c), g.deriv(c)
    e_agc = (a * da * gc * w).sum(-1).reshape(K, P)                  # E[f_k g'(f_k) g(f_j)]
    e_dd = (da * dc * w).sum(-1).reshape(K, P)                       # E[g'(f_k) g'(f_j)]
    e_gg = (ga * gc * w).sum(-1).reshape(K, P)                       # E[g(f_k) g(f_j)]
    dk = np.diag(Om)[:K]
    alpha = np.divide(Om[:K], dk[:, None], out=np.zeros((K, P)), where=dk[:, None] > 0)
    A = alpha * ((e_agc - Om[:K] * e_dd) @ u)[:, None] + (e_dd * u) @ Om
    return A, e_gg @ u


def _rhs_erf(problem, rt, pl, Q, R, v):
    """The drift of an erf activation through the compiled kernel (same equations as the vectorised path)."""
    K, eta, wd, s2 = pl.K, rt.lr, rt.weight_decay, pl.s2
    Om = s2 * np.block([[Q, R], [R.T, problem.teacher_overlap]])
    u = np.concatenate([v, -problem.v_star])
    A, E = _erf_kernel(Om, u, K, eta, eta ** 2 if problem.order == 2 else 0.0, problem.sigma ** 2)
    dR = -eta * v[:, None] * A[:, K:] - eta * wd * R
    first = v[:, None] * A[:, :K]
    dQ = -eta * (first + first.T) - 2 * eta * wd * Q
    if problem.order == 2:
        dQ = dQ + eta ** 2 * s2 * np.outer(v, v) * E
    dv = np.zeros(K)
    if rt.trains_v:
        dv = -rt.lr_v * (pl.ig._I2(_sub(Om / s2, pl.i2[:K * pl.P])).reshape(K, pl.P) @ u + wd * v)
    return dQ, dR, dv


def _second_moment(problem, pl, Om, u):
    r""":math:`\mathbb E[g'(\lambda_k)g'(\lambda_l)(\Delta^2 + \sigma^2)]`, shape (K, K)."""
    K, P = pl.K, pl.P
    if pl.relu:
        return _family_eta2(Om, u, K, problem.activation.r, problem.sigma ** 2, *pl.ig._family)
    if pl.i4 is not None:
        I4 = pl.ig._I4(_sub(Om, pl.i4)).reshape(K, K, P, P)
        out = np.einsum("klij,i,j->kl", I4, u, u)
        if problem.sigma > 0:
            out = out + problem.sigma ** 2 * pl.ig._J2(_sub(Om, pl.j2)).reshape(K, K)
        return out
    if not pl.tensor:
        return conditional.eta2(problem.activation, Om, u, K, problem.sigma ** 2, pl.eta2, _polar_nodes)[0]
    g, dg = problem.activation, problem.activation.deriv
    s2 = problem.sigma ** 2
    z, w = _tensor_rule(P, pl.m_full, _PRUNE_ODE)
    lam, U = np.linalg.eigh(Om)
    x = _map_nodes(z, np.ascontiguousarray((U * np.sqrt(np.maximum(lam, 0.0))) @ U.T))   # principal square root:
    return _eta2_reduce(g(x), dg(x[:, :K]), w, u, s2)                                 # smooth in Omega


@numba.njit(cache=True)
def _map_nodes(z, S):  # pragma: no cover - compiled
    """x = z S^T row by row (tall, thin: loops instead of a BLAS call that a contended machine thrashes)."""
    N, P = z.shape
    x = np.empty((N, S.shape[0]))
    for n in range(N):
        for i in range(S.shape[0]):
            acc = 0.0
            for j in range(P):
                acc += S[i, j] * z[n, j]
            x[n, i] = acc
    return x


@numba.njit(cache=True)
def _eta2_reduce(G, D, w, u, s2):  # pragma: no cover - compiled
    """sum_n w_n D_nk D_nl (Delta_n^2 + s2), Delta_n = sum_i u_i G_ni: the eta^2 term from values at the nodes."""
    N, P = G.shape
    K = D.shape[1]
    out = np.zeros((K, K))
    for n in range(N):
        dl = 0.0
        for i in range(P):
            dl += u[i] * G[n, i]
        c = w[n] * (dl * dl + s2)
        for k in range(K):
            ck = c * D[n, k]
            for l in range(k, K):
                out[k, l] += ck * D[n, l]
    for k in range(K):
        for l in range(k):
            out[k, l] = out[l, k]
    return out


def drift(problem, Q, R, v=None, *, lr, lr_v=0.0, weight_decay=0.0):
    r"""Right-hand side of the overlap ODE at one state: :math:`(dQ/dt, dR/dt, dv/dt)`.

    .. math:: \dot R_{kn} = -\eta v_k\sum_j u_jI_3(\lambda_k,\nu_n,f_j),\quad
              \dot Q_{kl} = -\eta\sum_j u_j\big[v_kI_3(\lambda_k,\lambda_l,f_j) + v_lI_3(\lambda_l,\lambda_k,f_j)\big]
              + \eta^2v_kv_l\Big[\sum_{jj'}u_ju_{j'}I_4(\lambda_k,\lambda_l,f_j,f_{j'}) + \sigma^2J_2(\lambda_k,\lambda_l)\Big]

    (minus :math:`\eta\,\mathrm{wd}\,R` and :math:`2\eta\,\mathrm{wd}\,Q`),
    :math:`\dot v_k = -\eta_v\sum_j u_jI_2(\lambda_k, f_j) - \eta_v\,\mathrm{wd}\,v_k`,
    :math:`u = (v, -v^*)`; ``order=1`` drops the :math:`\eta^2` term.

    Parameters
    ----------
    problem : Problem
    Q : ndarray of shape (K, K)
        Student overlaps (symmetric; [[Q, R], [R^T, T]] PSD).
    R : ndarray of shape (K, M)
        Student-teacher overlaps.
    v : ndarray of shape (K,) or None
        Student second layer; None for ones.
    lr : float
        Step size of the first layer, the paper's eta (SGD step eta/d), > 0.
    lr_v : float
        Step size of the second layer, the paper's eta_v, >= 0 (0: v stays fixed, dv = 0).
    weight_decay : float
        Weight decay wd of both layers, >= 0: SGD on :math:`\Delta^2/2 + \tfrac{\mathrm{wd}}2(\|J\|^2 + \|v\|^2)` with
        each layer's step, i.e. :math:`-\eta\,\mathrm{wd}` on J and :math:`-\eta_v\,\mathrm{wd}` on v per unit time
        (the module docstring derives the terms).

    Returns
    -------
    dQ, dR, dv : ndarray of shapes (K, K), (K, M), (K,)

    Notes
    -----
    Regime: d -> infinity at fixed t = steps/d (Saad & Solla's thermodynamic limit). The ReLU family (relu, abs,
    leaky ReLU): I2, I3, J2 closed, the eta^2 term from Tallis' orthant moments (Plackett's smooth 1-D integral on
    panels graded to the conditioning, for four fields) in one numba call, accuracy <= 1e-10 relative (the
    integrals' declared bound; measured <= 7e-14). erf and linear: closed, <= 1e-12. Without closed forms (a fixed
    rule, so that the drift is smooth in the state) the first-order terms come from K P Stein-reduced pair
    integrals on a polar rule (840 nodes each, split where a field vanishes: exponential for g smooth away from 0;
    1e-6 relative for tanh where a pair repeats a field) and the eta^2 term from one Gauss-Hermite rule over the
    P = K + M fields on the principal square root of Omega (15 nodes per axis at P = 4, 2e4 after pruning). That
    rule is the accuracy limit of a quadrature drift: measured against 40 nodes per axis on the trajectory of tanh
    (K = M = 2, eta = 0.5, t = 0 .. 100) 7e-3 relative at t = 0 and 7e-5 after, softsign 0.4 to 6e-3; a tensor rule
    at 1e-8 needs ~2e6 nodes (100x). :func:`ode` records the drift's estimated quadrature error in
    ``meta["accuracy"]``.

    References
    ----------
    .. [src] Saad & Solla 1995 eqs. (5)-(7); Goldt et al. 2019 eqs. (7)-(9) and (S11)-(S14).

    Examples
    --------
    >>> p = Problem.saad_solla(K=2, M=2)
    >>> dQ, dR, dv = drift(p, 0.5 * np.eye(2), np.zeros((2, 2)), lr=0.5)
    >>> bool(np.allclose(dQ, dQ.T)), dv.tolist()
    (True, [0.0, 0.0])
    """
    rt = _rates("committee.drift", lr, lr_v, weight_decay)
    Q, R, v = _check_state("committee.drift", problem, Q, R, v)
    return _rhs(problem, rt, Q, R, v)


def generalisation_error(problem, Q, R, v=None):
    r"""Generalisation error :math:`\epsilon_g = \frac12\mathbb E[(\hat y - y^*)^2]` of the noise-free teacher.

    .. math:: \epsilon_g = \tfrac12\Big[\sum_{kl}v_kv_lI_2(Q_{kk}, Q_{kl}, Q_{ll}) - 2\sum_{kn}v_kv^*_nI_2(Q_{kk}, R_{kn}, T_{nn})
              + \sum_{nm}v^*_nv^*_mI_2(T_{nn}, T_{nm}, T_{mm})\Big]

    Parameters
    ----------
    problem : Problem
    Q : ndarray of shape (..., K, K)
    R : ndarray of shape (..., K, M)
    v : ndarray of shape (..., K) or None
        None for ones.

    Returns
    -------
    ndarray of shape Q.shape[:-2]

    Notes
    -----
    Regime: any overlaps of real weights; >= 0 up to rounding (it is half a second moment), clipped at 0.

    References
    ----------
    .. [src] Saad & Solla 1995 eq. (4); Goldt et al. 2019 eq. (6).

    Examples
    --------
    >>> p = Problem.saad_solla(K=2, M=2)
    >>> float(generalisation_error(p, np.eye(2), np.eye(2)))
    0.0
    >>> round(float(generalisation_error(p, np.zeros((2, 2)), np.zeros((2, 2)))), 12)   # (2/pi) asin(1/2)
    0.333333333333
    """
    owner = "committee.generalisation_error"
    K, M = problem.K, problem.M
    Q = check(owner, "Q", Q, FiniteArray(np.ndim(Q)))
    R = check(owner, "R", R, FiniteArray(np.ndim(R)))
    if Q.shape[-2:] != (K, K) or R.shape[-2:] != (K, M) or Q.shape[:-2] != R.shape[:-2]:
        raise InvalidParameterError(f"The 'Q' parameter of {owner} must have shape (..., {K}, {K}) and 'R' "
                                    f"(..., {K}, {M}) with equal leading axes. Got {Q.shape} and {R.shape} instead.")
    lead = Q.shape[:-2]
    v = np.broadcast_to(np.ones(K) if v is None else check(owner, "v", v, FiniteArray(np.ndim(v))), lead + (K,))
    pl = _plan(problem)
    T = np.broadcast_to(problem.teacher_overlap, lead + (M, M))
    Om = np.concatenate([np.concatenate([Q, R], -1), np.concatenate([np.swapaxes(R, -1, -2), T], -1)], -2)
    pairs = Om[..., pl.upper[:, :, None], pl.upper[:, None, :]]                   # the P (P + 1) / 2 pairs i <= j
    if pl.generic:            # one polar rule of 2048 nodes (<= 4e-12 relative for tanh up to variance 4)
        g = problem.activation
        I2 = _gauss_mean(pairs, lambda x: g(x[..., 0]) * g(x[..., 1]), _M2_EG)
    else:
        I2 = pl.ig._I2(pairs)
    u = np.concatenate([v, np.broadcast_to(-problem.v_star, lead + (M,))], -1)
    uu = u[..., pl.upper[:, 0]] * u[..., pl.upper[:, 1]] * np.where(pl.upper[:, 0] == pl.upper[:, 1], 1.0, 2.0)
    return np.maximum(0.5 * np.einsum("...p,...p->...", uu, I2), 0.0)


def ode(problem, Q0, R0, v0=None, t=np.linspace(0.0, 100.0, 201), rtol=None, atol=None, *, lr, lr_v=0.0,
        weight_decay=0.0, error_estimate=True, eta2_rule="conditioned"):
    r"""Integrate the overlap ODE from :math:`(Q_0, R_0, v_0)` and record eg, Q, R (and v) at the times t.

    .. math:: \frac{d}{dt}(Q, R, v) = \mathrm{drift}(Q, R, v),\qquad t = \text{steps}/d

    Parameters
    ----------
    problem : Problem
    Q0 : ndarray of shape (K, K)
    R0 : ndarray of shape (K, M)
    v0 : ndarray of shape (K,) or None
        Initial second layer; None for ones.
    t : ndarray of shape (n,)
        Strictly increasing times, ``t[0]`` the initial one.
    rtol, atol : float or None
        Tolerances of the integrator, in (0, 1). None: ``rtol=1e-10, atol=1e-12`` (DOP853) when every
        integral has a closed form (erf of any scale, linear, the ReLU family); ``rtol=1e-5, atol=1e-8`` (RK45)
        when the drift holds a quadrature (any other activation). What they buy, the largest relative error of eg
        against a rtol = 1e-13 solve (K = M = 2, eta = 0.5, from the overlaps of d = 1000, seed 0; docs/committee.md
        has the table): Saad-Solla erf through its plateau and escape (t <= 300) 2.6e-6 at the default, 4e-8 at
        1e-11, 1.9e-9 at 1e-12 (1.75x the evaluations); ReLU (t <= 100) 2.2e-8, 1.9e-9 at 1e-11. **eg to 1e-8
        inside a plateau needs rtol <= 1e-12**: the saddle amplifies the solver's error. tanh (solver error
        only, against rtol 1e-9): 4.3e-4 at the default, 3.4e-5 at 1e-6, 1.9e-7 at 1e-8.
    lr, lr_v, weight_decay : float
        Step sizes of the first and second layer (the paper's eta, eta_v) and the weight decay: see :func:`drift`.
    error_estimate : bool
        Record the accuracy reached in ``meta["accuracy"]`` (a second solve at 10x looser tolerances, about 0.6x
        the cost of the first, and for a quadrature drift the drift once more on rules 3/2 finer at the first and
        last state).
    eta2_rule : {"conditioned", "tensor"}
        The eta^2 term of an activation without closed forms (order 2): "conditioned", Gaussian conditioning on
        the two student fields (relative error <= 1e-8 declared for field variances <= 64, near-repeated fields
        included, measured 5.3e-10 over 375 random states; where the term vanishes, at the teacher without noise, an absolute 2e-13 of rounding), or "tensor", one tensor Gauss-Hermite rule (measured 7e-5 to 7e-3 of the term for tanh,
        9e-3 to 0.46 for softsign), about 3.5x faster per solve (tanh, K = M = 2, t = 100: 3.2 s against 10.9 s
        of CPU time, the first-order terms included). Ignored with closed forms.

    Returns
    -------
    Prediction
        ``t`` (in units of d steps), observables ``"eg"`` (n,), ``"Q"`` (n, K, K), ``"R"`` (n, K, M) and,
        when the second layer trains, ``"v"`` (n, K); ``status = -1`` with a message if the solver stopped.

    Notes
    -----
    Regime: see :func:`drift`. ``meta["accuracy"]`` records what was reached: ``eg_solver``, the largest relative
    change of eg against the same ODE at 10x looser tolerances (an upper estimate of the solver's error: 4.5x and
    10x the true one for erf and ReLU at the defaults, 9x for tanh), at ``eg_solver_t``; ``drift_integrals``, the
    relative error of the drift's integrals (declared for closed forms, measured on 3/2-finer rules at the first
    and last state for a quadrature drift), with ``integrals`` naming which; for a quadrature drift of order 2 also
    ``eta2_error``, the relative error of the drift's eta^2 term against a finer conditioned rule (within 1.3e-10
    of the references) at the first and last state. The state is the full Q (not its
    triangle), so the test that the drift keeps Q symmetric is a real one. A quadrature drift is only piecewise
    smooth in the state where the integrand has kinks crossing the nodes, which makes DOP853's error estimate
    reject steps; RK45 took 1.4-3x fewer
    evaluations there (tanh, K = M = 2, t = 20, rtol 1e-5: 116 vs 161; ReLU by the former quadrature: 164 vs 485).

    References
    ----------
    .. [src] Saad & Solla 1995 eqs. (5)-(7); Goldt et al. 2019 eqs. (7)-(9).

    Examples
    --------
    >>> p = Problem.saad_solla(K=1, M=1)
    >>> pred = ode(p, [[0.25]], [[0.0]], t=[0.0, 50.0], lr=0.5)
    >>> bool(pred["eg"][-1] < 1e-3 < pred["eg"][0])
    True
    """
    owner = "committee.ode"
    rt = _rates(owner, lr, lr_v, weight_decay)
    Q0, R0, v0 = _check_state(owner, problem, Q0, R0, v0)
    method, rtol, atol = _tolerances(owner, problem, rtol, atol)
    t = check(owner, "t", t, FiniteArray(1))
    eta2_rule = check(owner, "eta2_rule", eta2_rule, Options(ETA2_RULES))
    pl = _plan(problem, eta2_rule)
    if t.size < 1 or np.any(np.diff(t) <= 0):
        raise InvalidParameterError(f"The 't' parameter of {owner} must be a non-empty strictly increasing array. "
                                    f"Got {t!r} instead.")
    K, M = problem.K, problem.M
    nq, nr = K * K, K * M

    def f(_, y):
        dQ, dR, dv = _rhs(problem, rt, y[:nq].reshape(K, K), y[nq:nq + nr].reshape(K, M), y[nq + nr:], pl)
        return np.concatenate([dQ.ravel(), dR.ravel(), dv])

    sol = solve_ode(f, np.concatenate([Q0.ravel(), R0.ravel(), v0]), t, rtol=rtol, atol=atol, method=method)
    y = sol.y
    Q, R, v = y[:, :nq].reshape(-1, K, K), y[:, nq:nq + nr].reshape(-1, K, M), y[:, nq + nr:]
    obs = {"eg": generalisation_error(problem, Q, R, v), "Q": Q, "R": R}
    if rt.trains_v:
        obs["v"] = v
    meta = dict(problem=repr(problem), t_unit="steps/d", method=method, rtol=rtol, atol=atol, nfev=sol.nfev,
                source=["Saad & Solla 1995 eqs. (5)-(7)", "Goldt et al. 2019 eqs. (7)-(9)"])
    if error_estimate:
        meta["accuracy"] = _accuracy(problem, rt, pl, f, y, sol.t, method, rtol, atol, obs["eg"], eta2_rule)
    pred = Prediction(t=sol.t, observables=obs, status=sol.status, message=sol.message, meta=meta)
    pred._flow = _Flow(problem, f, sol.t, y, method, rtol, atol)
    return pred


# declared accuracy of the closed-form integrals in the drift (relative; see the integrals' docstrings)
_CLOSED_ACCURACY = {"erf": 1e-12, "linear": 1e-13, "relu": 1e-10}


def _accuracy(problem, rt, pl, f, y, t, method, rtol, atol, eg, eta2_rule):
    r"""The accuracy an ODE Prediction reached, for ``meta["accuracy"]``:

    * ``eg_solver``: :math:`\max_t|\epsilon_g - \epsilon_g'|/\max(\epsilon_g, 10^{-8}\max_t\epsilon_g)`, the
      same ODE solved at 10x looser tolerances (an upper estimate of the solver's error: the error fell by 7-60x
      per decade of rtol in the measured table of docs/committee.md), and ``eg_solver_t`` the time of the largest;
    * ``drift_integrals``: the relative error of the drift's integrals: the declared accuracy of the closed forms,
      or for a quadrature drift the largest relative change of (dQ, dR, dv) on rules 3/2 finer at the first and
      last recorded state, with ``integrals`` saying which;
    * ``eta2_error`` (quadrature drift, order 2): the drift's eta^2 term against the finer conditioned rule
      ``_ETA2_FINE`` (within 1.3e-10 of the references) at the first and last state: an estimate of its error
      (measured 0.97-1.0 of the true error of the conditioned rule, and the tensor rule's error itself).

    An error of the drift is amplified in eg where the trajectory leaves a saddle (the plateau): compare
    ``eg_solver`` of two tolerances there."""
    K, M = problem.K, problem.M
    nq, nr = K * K, K * M
    out = {}
    if t.size > 1:
        loose = solve_ode(f, y[0], t, rtol=min(10 * rtol, 0.1), atol=min(10 * atol, 0.1), method=method)
        if loose.y.shape == y.shape:
            yl = loose.y
            egl = generalisation_error(problem, yl[:, :nq].reshape(-1, K, K), yl[:, nq:nq + nr].reshape(-1, K, M),
                                       yl[:, nq + nr:])
            rel = np.abs(eg - egl) / np.maximum(eg, 1e-8 * np.max(eg) + 1e-300)
            out.update(eg_solver=float(np.max(rel)), eg_solver_t=float(t[np.argmax(rel)]))
    if pl.generic:
        fine, worst = _Plan(problem, 1.5, eta2_rule), 0.0
        for state in (y[0], y[-1]):
            Q, R, v = state[:nq].reshape(K, K), state[nq:nq + nr].reshape(K, M), state[nq + nr:]
            a = np.concatenate([d.ravel() for d in _rhs(problem, rt, Q, R, v, pl)])
            b = np.concatenate([d.ravel() for d in _rhs(problem, rt, Q, R, v, fine)])
            worst = max(worst, float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)))
        out.update(integrals="quadrature", drift_integrals=worst)
        if problem.order == 2:
            out["eta2_error"] = _eta2_error(problem, pl, y, nq, nr)
    else:
        out.update(integrals="closed forms", drift_integrals=_CLOSED_ACCURACY[pl.ig._kind])
    return out


def _eta2_conditioned(problem, Q, R, v=None, rule=_ETA2):
    r"""The :math:`\eta^2` term :math:`\mathbb E[g'(\lambda_k)g'(\lambda_l)(\Delta^2 + \sigma^2)]` of an activation
    without closed forms by Gaussian conditioning on two student fields (``conditional.eta2`` at ``rule``, by default
    the drift's): ``(E, tail)``, E of shape (K, K) and tail the tables' interpolation estimate."""
    Om = np.block([[Q, R], [R.T, problem.teacher_overlap]])
    u = np.concatenate([np.ones(problem.K) if v is None else v, -problem.v_star])
    return conditional.eta2(problem.activation, Om, u, problem.K, problem.sigma ** 2, rule, _polar_nodes)


def _eta2_error(problem, pl, y, nq, nr):
    """The largest relative difference of the drift's eta^2 term from the finer conditioned rule, at the first and
    last recorded state (the finer rule is within 1.3e-10 of the references where the drift's is within 1e-8)."""
    K, M = problem.K, problem.M
    worst = 0.0
    for state in (y[0], y[-1]):
        Q, R, v = state[:nq].reshape(K, K), state[nq:nq + nr].reshape(K, M), state[nq + nr:]
        E = _second_moment(problem, pl, np.block([[Q, R], [R.T, problem.teacher_overlap]]),
                           np.concatenate([v, -problem.v_star]))
        ref, _ = _eta2_conditioned(problem, Q, R, v, _ETA2_FINE)
        worst = max(worst, float(np.max(np.abs(E - ref)) / max(np.max(np.abs(ref)), 1e-300)))
    return worst


def _tolerances(owner, problem, rtol, atol):
    """(method, rtol, atol) of the integration: the given ones, or the defaults of the drift's kind."""
    quad = "I4" not in _plan(problem).ig.closed
    rtol = (1e-5 if quad else 1e-10) if rtol is None else check(owner, "rtol", rtol, Interval(0, 1, closed="neither"))
    atol = (1e-8 if quad else 1e-12) if atol is None else check(owner, "atol", atol, Interval(0, 1, closed="neither"))
    return ("RK45" if quad else "DOP853"), rtol, atol


class _Flow:
    """The continuous solution behind an ODE Prediction: its vector field and recorded states, so that
    :func:`escape_time` can locate a crossing between grid points (``scale``: recorded time per ODE time unit)."""

    def __init__(self, problem, f, t, y, method, rtol, atol, scale=1.0):
        self.problem, self.f, self.t, self.y, self.scale = problem, f, t, y, scale
        self.method, self.rtol, self.atol = method, rtol, atol

    def rescaled(self, scale):
        return _Flow(self.problem, self.f, self.t, self.y, self.method, self.rtol, self.atol, scale)

    def __reduce__(self):
        """Pickled (a sweep's worker, a copy) it becomes None: the vector field is a closure, and an unpickled
        Prediction falls back to interpolation like one loaded from disk."""
        return type(None), ()

    def eg(self, y):
        K, M = self.problem.K, self.problem.M
        nq, nr = K * K, K * M
        return float(generalisation_error(self.problem, y[:nq].reshape(K, K), y[nq:nq + nr].reshape(K, M),
                                          y[nq + nr:]))

    def crossing(self, i, level):
        """The time in (t[i-1], t[i]] where eg = level, on the dense output of one segment of the ODE's solver."""
        a, b = self.t[i - 1], self.t[i]
        seg = solve_ivp(self.f, (a, b), self.y[i - 1], method=self.method, rtol=self.rtol, atol=self.atol,
                        dense_output=True)
        h = lambda s: self.eg(seg.sol(s)) - level
        if not (seg.success and h(a) > 0 >= h(b)):
            return None
        return self.scale * brentq(h, a, b, xtol=1e-14 * max(1.0, abs(b)), rtol=4 * _EPS)


def _symmetric(problem, theta, v):
    """(Q, R) of the unspecialised state: Q_kk = q, Q_kl = c (k != l), R_kn = r_n."""
    K = problem.K
    q, c, r = theta[0], theta[1], theta[2:]
    Q = np.full((K, K), c) + (q - c) * np.eye(K)
    return Q, np.tile(r, (K, 1)), np.full(K, v)


def _reduced(problem, rt, theta, v):
    Q, R, vv = _symmetric(problem, theta, v)
    dQ, dR, _ = _rhs(problem, rt, Q, R, vv)
    return np.concatenate([[dQ[0, 0], dQ[0, 1] if problem.K > 1 else 0.0], dR[0]])


def plateau(problem, v=1.0, t_relax=2000.0, *, lr, weight_decay=0.0):
    r"""The unspecialised symmetric fixed point (the plateau): Q, R and its eg.

    .. math:: Q_{kk} = q,\ Q_{k\ne l} = c,\ R_{kn} = r_n,\qquad \dot Q = 0,\ \dot R = 0

    found by integrating the ODE inside the permutation-symmetric subspace (invariant, and the plateau
    attracts there) from a small symmetric state, then a root solve of the reduced drift.

    Parameters
    ----------
    problem : Problem
    v : float
        The students' common second-layer weight (held fixed), finite.
    t_relax : float
        Time of the relaxation inside the symmetric subspace, > 0.
    lr : float
        Step size of the first layer, the paper's eta, > 0 (the plateau moves with it through the eta^2 term).
    weight_decay : float
        Weight decay of the first layer, >= 0 (v is held fixed here).

    Returns
    -------
    Q : ndarray of shape (K, K)
    R : ndarray of shape (K, M)
    eg : float

    Notes
    -----
    Regime: a plateau exists when the symmetric subspace has an attracting fixed point away from the
    teacher (K <= M; for K > M or large eta the relaxation may reach another point, checked by the residual).
    Raises if the root solve does not converge to a drift below 1e-12.

    References
    ----------
    .. [src] Saad & Solla 1995 §IV (the symmetric phase, eq. (10)); Biehl, Riegler & Wöhler 1996.

    Examples
    --------
    >>> Q, R, eg = plateau(Problem.saad_solla(K=2, M=2), lr=0.5)
    >>> round(eg, 6)
    0.014645
    """
    owner = "committee.plateau"
    rt = _rates(owner, lr, 0.0, weight_decay)
    v = check(owner, "v", v, Interval(-np.inf, np.inf, closed="neither"))
    t_relax = check(owner, "t_relax", t_relax, Interval(0, np.inf, closed="neither"))
    M = problem.M
    theta0 = np.concatenate([[0.01, 0.0], np.full(M, 1e-3)])
    if problem.K == 1:
        theta0[1] = 0.0
    sol = solve_ode(lambda _, th: _reduced(problem, rt, th, v), theta0, np.array([0.0, t_relax]), rtol=1e-9,
                    atol=1e-12)
    fit = root(lambda th: _reduced(problem, rt, th, v), sol.y[-1], method="hybr", tol=1e-14)
    res = float(np.abs(_reduced(problem, rt, fit.x, v)).max())
    if not (sol.success and res < 1e-12):
        raise InvalidParameterError(
            f"committee.plateau found no symmetric fixed point for {problem!r} at lr = {lr!r} (residual {res:.3g}); "
            "the 'problem' parameter must have an unspecialised plateau (K <= M, moderate lr).")
    Q, R, vv = _symmetric(problem, fit.x, v)
    return Q, R, float(generalisation_error(problem, Q, R, vv))


def escape_time(prediction, level):
    r"""First time at which eg falls to ``level`` (the end of the plateau); None if never.

    .. math:: t_{\rm esc} = \min\{t : \epsilon_g(t) = \mathrm{level}\},\qquad
              \epsilon_g(t_{i-1}) > \mathrm{level} \ge \epsilon_g(t_i)

    The recorded grid brackets the first crossing. For a Prediction of :func:`ode` (or of
    ``popdyn.predict`` on a committee problem) the crossing is then located on the continuous solution: one
    segment of the ODE's solver from the recorded state at :math:`t_{i-1}`, with dense output and the ODE's
    tolerances, and
    Brent's method on :math:`\epsilon_g(t) - \mathrm{level}` (event location). For any other result (a
    Simulation, a Prediction built by hand, saved and loaded, or pickled) eg is linearly interpolated between
    the two samples.

    Parameters
    ----------
    prediction : Prediction or Simulation
        With an ``"eg"`` observable (a Simulation's seed axis gives one time per seed).
    level : float
        Threshold, > 0; below the plateau height to measure the escape.

    Returns
    -------
    float or None, or ndarray of shape (seeds,) (NaN where never) for a Simulation

    Notes
    -----
    Regime: the first crossing lies in the first recorded interval whose end is at or below ``level``
    (a dip below ``level`` and back up between two samples is not seen). Event location is exact to the
    ODE's tolerances; interpolation is exact when eg is linear between samples.

    References
    ----------
    .. [src] derived; Saad & Solla 1995 §IV (plateau length).

    Examples
    --------
    >>> from popdyn.results import Prediction
    >>> escape_time(Prediction(t=np.array([0.0, 1.0, 2.0]), observables={"eg": np.array([0.3, 0.2, 0.0])}), 0.1)
    1.5
    >>> pred = ode(Problem.saad_solla(K=1, M=1), [[0.25]], [[0.0]], t=[0.0, 5.0, 10.0, 20.0], lr=0.5)
    >>> t_esc = escape_time(pred, 0.01)          # located on the continuous solution, not interpolated
    >>> bool(5.0 < t_esc < 20.0), t_esc == escape_time(Prediction(t=pred.t, observables=pred.observables), 0.01)
    (True, False)
    """
    level = check("committee.escape_time", "level", level, Interval(0, np.inf, closed="neither"))
    t, eg = np.asarray(prediction.t, dtype=np.float64), np.asarray(prediction["eg"], dtype=np.float64)
    if eg.ndim == 2:
        return np.array([np.nan if (e := _first(t, row, level)) is None else e for row in eg])
    flow = getattr(prediction, "_flow", None)
    if flow is not None and len(flow.t) != t.size:
        flow = None
    return _first(t, eg, level, flow)


def _first(t, eg, level, flow=None):
    hit = np.flatnonzero(eg <= level)
    if hit.size == 0:
        return None
    i = hit[0]
    if i == 0:
        return float(t[0])
    if flow is not None:
        located = flow.crossing(i, level)
        if located is not None:
            return float(located)
    return float(t[i - 1] + (eg[i - 1] - level) / (eg[i - 1] - eg[i]) * (t[i] - t[i - 1]))
