r"""LoRA outside Assumption A2: u (and u_hat) in general position with respect to span W (Figs 4-5).

The problem is :class:`~popdyn.models.lora.GeneralProblem` (in ``problem.py``): a
:class:`~popdyn.models.lora.Problem` plus the teacher's overlaps ``p = W u`` with the features and the
algorithm's choice ``project`` (the paper's Eq. 4 projects u_hat on span(W)^perp; Fig. 4 does not); its
``popdyn.predict`` is in ``predict.py``.

Public names
------------
:func:`pair_moments`
    ``E[s(A)s(B)]``, ``E[s'(A)s'(B)]``, ``E[s(A)s''(B)]`` for a centred Gaussian pair of any covariance.
:func:`general_loss`, :func:`general_gradient`, :func:`general_drift`
    The population loss, gradient and the drift of the order parameters ``(m, q[, c_hat])``.

Derivation (derived here and in docs/lora.md, not in the paper). Everything is rotation
invariant, so the population quantities depend on ``u_hat`` only through the Gram matrix of
``(w_1..w_k, u, u_hat)``::

    Gamma = [[G, p, q], [p^T, 1, m], [q^T, m, 1]],   p = W u (fixed), q = W u_hat, m = <u, u_hat>.

Under A2 ``p = q = 0`` and only ``m`` is left (Prop. 4). In general the order parameters are
``(m, q)`` (k + 1 numbers; ``q = 0`` is kept by the projected algorithm), plus ``c_hat`` when it is trained.
Every neuron is a linear field ``<v, x>`` of the (k+2)-dimensional Gaussian, and by Stein's lemma
the gradient of ``kappa(a, b) = E[s(<a,x>) s(<b,x>)]`` is ``a E[s's'] + b E[s s'']``, so the population
gradient is a combination of the neuron vectors with pair expectations as coefficients
(:func:`pair_moments`: ReLU in closed form, polynomials by Gauss-Hermite, smooth activations by a 2-D trapezoid rule).
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from scipy.special import ndtri
from scipy.stats import qmc

from ... import _pointwise, activations
from ..._pointwise import value_slope
from ..._validate import InvalidParameterError
from ...gaussian import arccos_kernel
from ...hermite import gauss_hermite
from .problem import _N_MC, _RANK_TOL, _cached, check_overlap

__all__ = ["pair_moments", "general_loss", "general_gradient", "general_drift",
           "gradient_second_moment_general", "q_norm"]

_TRAP_STEP = 0.2  # trapezoid step in units of 1/max(1, sqrt(max variance)): tanh (poles at i pi/2) to 2e-14 at rho = 1
_TRAP_S_MAX = 16.0  # largest variance of a smooth activation's pair (297 nodes per axis there)


# ---- pair expectations ------------------------------------------------------------------------------
def pair_moments(activation, s_aa, s_bb, s_ab, n=None):
    r"""Gaussian pair expectations of any covariance: the building blocks of the general-position theory.

    .. math:: \kappa = \mathbb E[\sigma(A)\sigma(B)],\quad \kappa_1 = \mathbb E[\sigma'(A)\sigma'(B)],\quad
              \kappa_2 = \mathbb E[\sigma(A)\sigma''(B)]
              = \frac{\mathbb E[\sigma(A)\sigma'(B)B] - S_{AB}\kappa_1}{S_{BB}},
              \qquad (A, B) \sim N\Big(0, \begin{pmatrix}S_{AA} & S_{AB}\\ S_{AB} & S_{BB}\end{pmatrix}\Big)

    (``kappa_2`` by Stein's lemma, so only sigma and sigma' are evaluated). By Stein's lemma
    :math:`\nabla_b\,\mathbb E[\sigma(\langle a,x\rangle)\sigma(\langle b,x\rangle)] = a\kappa_1 + b\kappa_2`.

    Parameters
    ----------
    activation : str or Activation
        relu (closed form), a polynomial (exact Gauss-Hermite rule) or a smooth activation without kinks
        (2-D trapezoid rule); activations with kinks other than relu's (abs, leaky_relu, sign) are refused.
    s_aa, s_bb, s_ab : array_like
        Variances (> 0; <= 16 for a smooth non-polynomial activation) and covariance, broadcast together.
    n : int or None
        None (default): the rules above. An int forces an ``n``-point 2-D Gauss-Hermite rule (its accuracy is
        not declared: about 5e-6 relative for tanh at unit variance and n = 48).

    Returns
    -------
    kappa, kappa1, kappa2 : ndarray of the broadcast shape

    Notes
    -----
    Regime: ``S_AA, S_BB > 0``. ReLU: :math:`\kappa = s_as_b k_1(\rho)`, :math:`\kappa_1 = k_0(\rho)`,
    :math:`\kappa_2 = \frac{s_a}{s_b}\frac{\sqrt{1-\rho^2}}{2\pi}` (arc-cosine kernels,
    :func:`popdyn.gaussian.arccos_kernel`). A polynomial sigma of degree p takes the (p+1)-point Gauss-Hermite rule
    (exact). Other smooth sigma take the trapezoid rule in the standard normal coordinates, step
    ``0.2/max(1, sqrt(s_max))`` on ``|x| <= 9 + 2 sqrt(s_max)`` (``s_max`` the largest variance): geometric in the
    width of sigma's strip of analyticity, where Gauss-Hermite with a fixed number of nodes is not (48 nodes left
    5e-6 of tanh's kappa_1 at unit variance, 97 % at variance 100). popdyn's own activations run the rule in one
    compiled pass (:mod:`popdyn._pointwise`; equal to the numpy pass to 1e-13, 2-5x faster), user callables in numpy.

    Accuracy: ``|d kappa|, |d kappa_1| <= tol (sqrt(E s(A)^2 E s(B)^2) + sqrt(E s'(A)^2 E s'(B)^2))``, and
    ``|d kappa_2|`` within that plus ``tol (sqrt(E s(A)^2 E s'(B)^2 / S_BB) + |S_AB| sqrt(E s'(A)^2 E s'(B)^2)/S_BB)``
    (Stein's difference divided by S_BB cancels as S_BB -> 0); tol = 1e-12 for the trapezoid rule, 16 eps for relu,
    whose kappa_1, kappa_2 also move by ``min(delta/sqrt(1 - rho^2), sqrt(2 delta))/(2 pi)`` (times s_a/s_b for kappa_2)
    under the rounding ``delta = 4 eps |rho|`` of rho. Domain: variances in [1e-12, 16], any correlation. Measured
    (tests/test_accuracy_lora.py: relu and erf closed forms, tanh/sigmoid/gelu on the diagonal, mpmath): <= 0.5 of the
    bound (relu at rho = -1), 0.03 for erf, 3e-4 for the smooth diagonal.

    References
    ----------
    .. [src] derived (Stein's lemma; Cho & Saul arc-cosine kernels); [Dayi25, App. D.1].

    Examples
    --------
    >>> k, k1, k2 = pair_moments("quadratic", 1.0, 1.0, 0.5)   # sigma = z^2: E[s'(A) s'(B)] = 4 E[AB]
    >>> round(float(k1), 12)
    2.0
    """
    act = activations.get(activation)
    s_aa, s_bb, s_ab = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (s_aa, s_bb, s_ab)))
    if np.any(~(s_aa > 0)) or np.any(~(s_bb > 0)):
        raise InvalidParameterError("The 's_aa', 's_bb' parameters of lora.pair_moments must be variances > 0. "
                                    f"Got min {float(np.min(s_aa))!r}, {float(np.min(s_bb))!r} instead.")
    sa, sb = np.sqrt(s_aa), np.sqrt(s_bb)
    rho = np.clip(s_ab / (sa * sb), -1.0, 1.0)
    if act.name == "relu":
        return (sa * sb * arccos_kernel(rho, 1), arccos_kernel(rho, 0),
                (sa / sb) * np.sqrt(1.0 - rho * rho) / (2 * np.pi))
    x, w = _pair_rule(act, max(float(np.max(s_aa)), float(np.max(s_bb))) * act.r**2, n)
    compiled = _pointwise.code(act)
    if compiled is not None and n is None:  # popdyn's own sigma: the same rule in one compiled pass
        k0, k1, k2 = _rule_moments(*compiled, x, w, *(np.ascontiguousarray(a).ravel() for a in (sa, sb, rho, s_ab, s_bb)))
        return k0.reshape(sa.shape), k1.reshape(sa.shape), k2.reshape(sa.shape)
    x1, x2, ww = x[:, None], x[None, :], w[:, None] * w[None, :]
    A = sa[..., None, None] * x1
    B = sb[..., None, None] * (rho[..., None, None] * x1 + np.sqrt(1.0 - rho * rho)[..., None, None] * x2)
    fa, dfb = act(A), act.deriv(B)
    k0 = np.sum(ww * fa * act(B), axis=(-2, -1))
    k1 = np.sum(ww * act.deriv(A) * dfb, axis=(-2, -1))
    k2 = (np.sum(ww * fa * dfb * B, axis=(-2, -1)) - s_ab * k1) / s_bb
    return k0, k1, k2


@numba.njit(cache=True)
def _rule_moments(code, r, x, w, sa, sb, rho, s_ab, s_bb):  # pragma: no cover - compiled
    """kappa, kappa_1, kappa_2 of :func:`pair_moments` on the product rule (x, w) per axis for the activation
    sigma(r z) of :mod:`popdyn._pointwise` code ``code``, one pair at a time (no n x n temporaries); nodes whose
    weight product is below 1e-36 of the largest (the rule's corners) are skipped."""
    n = x.size
    cut = 1e-36 * w.max() ** 2
    k0, k1, k2 = np.empty(sa.size), np.empty(sa.size), np.empty(sa.size)
    for p in range(sa.size):
        c = math.sqrt(1.0 - rho[p] * rho[p])
        a0 = a1 = a2 = 0.0
        for i in range(n):
            A = sa[p] * x[i]
            fa, dfa = value_slope(code, r * A)
            b = sb[p] * rho[p] * x[i]
            i0 = i1 = i2 = 0.0
            for j in range(n):
                if w[i] * w[j] < cut:
                    continue
                B = b + sb[p] * c * x[j]
                fb, dfb = value_slope(code, r * B)
                i0 += w[j] * fb
                i1 += w[j] * dfb
                i2 += w[j] * dfb * B
            a0 += w[i] * fa * i0
            a1 += w[i] * dfa * i1
            a2 += w[i] * fa * i2
        a1, a2 = r * r * a1, r * a2   # sigma(r z)' = r sigma'(r z): r on each slope
        k0[p], k1[p], k2[p] = a0, a1, (a2 - s_ab[p] * a1) / s_bb[p]
    return k0, k1, k2


def _pair_rule(act, s_max, n):
    """Nodes and weights of N(0, 1) per axis for :func:`pair_moments` (see its Notes)."""
    if n is not None:
        return gauss_hermite(int(n))
    deg = _poly_nodes(act)
    if deg < 1 << 30:
        return gauss_hermite(deg)
    if act._family.kinks:
        raise InvalidParameterError(f"The 'activation' parameter of lora.pair_moments must be relu or an activation "
                                    f"without kinks (kinks at {act._family.kinks}: no rule here reaches 1e-12). "
                                    f"Got {act.name!r} instead.")
    if not s_max <= _TRAP_S_MAX:
        raise InvalidParameterError(f"The 's_aa', 's_bb' parameters of lora.pair_moments must be <= {_TRAP_S_MAX} for "
                                    f"the smooth activation {act.name!r} (the trapezoid rule's domain). "
                                    f"Got max {s_max / act.r**2!r} instead.")
    return _trapezoid(math.ceil(4 * math.sqrt(max(1.0, s_max))) / 4)  # sigma(r z): variance r^2 s


@functools.lru_cache(maxsize=32)
def _trapezoid(s):
    """Trapezoid rule of N(0, 1) for a sigma(sqrt(s) x) (s quantised to quarters so that the rules are few)."""
    h, L = _TRAP_STEP / s, 9.0 + 2 * s
    x = h * np.arange(-math.ceil(L / h), math.ceil(L / h) + 1)
    w = h * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    x.flags.writeable = w.flags.writeable = False
    return x, w


def _poly_nodes(act):
    """deg + 1 Gauss-Hermite nodes for a polynomial sigma of degree deg <= 16 (the rule is then exact for the
    degree-2 deg integrands), else a large number; read off the Hermite coefficients (cached by the activation)."""
    mu = act.hermite_coeffs(24)
    big = np.nonzero(np.abs(mu) > 1e-13 * np.abs(mu).max())[0]
    return int(big[-1]) + 1 if big[-1] <= 16 else 1 << 30


# ---- geometry -------------------------------------------------------------------------------------------
def _state(gp, m, q, c_hat):
    """(m, q, c_hat) as arrays, with q = 0 for the projected algorithm and c_hat defaulting to the problem's."""
    k = gp.k
    m = float(check_overlap(m))
    q = np.zeros(k) if q is None else np.asarray(q, dtype=np.float64)
    c_hat = gp.problem.c_hat if c_hat is None else np.asarray(c_hat, dtype=np.float64)
    if q.shape != (k,) or c_hat.shape != (k,) or not (np.all(np.isfinite(q)) and np.all(np.isfinite(c_hat))):
        raise InvalidParameterError(f"The 'q', 'c_hat' parameters of lora.general must be finite of shape ({k},). "
                                    f"Got {q!r}, {c_hat!r} instead.")
    if gp.project and np.any(q != 0):
        raise InvalidParameterError("The 'q' parameter of lora.general must be 0 when project=True "
                                    f"(u_hat orthogonal to span W). Got {q!r} instead.")
    return m, q, c_hat


def _gram(gp, m, q):
    """Gram of the basis (w_1..w_k, u, u_hat), shape (k+2, k+2)."""
    k = gp.k
    Gam = np.empty((k + 2, k + 2))
    Gam[:k, :k] = gp.problem.G
    Gam[:k, k] = Gam[k, :k] = gp.p
    Gam[:k, k + 1] = Gam[k + 1, :k] = q
    Gam[k, k] = Gam[k + 1, k + 1] = 1.0
    Gam[k, k + 1] = Gam[k + 1, k] = m
    return Gam


def _neurons(gp, c_hat):
    """Coefficients on the basis of the teacher neurons v_i (rows 0..k-1) and student neurons (rows k..2k-1)."""
    P, k = gp.problem, gp.k
    r_hat = np.sqrt(1 + P.xi**2 * c_hat**2)
    C = np.zeros((2 * k, k + 2))
    C[:k, :k] = np.diag(1 / P.r)
    C[:k, k] = P.xi * P.c / P.r
    C[k:, :k] = np.diag(1 / r_hat)
    C[k:, k + 1] = P.xi * c_hat / r_hat
    return C, r_hat


def _moments(gp, m, q, c_hat):
    """Gram Gamma, neuron coefficients C, r_hat and pair moments of (all 2k neurons) x (k student neurons)."""
    k = gp.k
    Gam = _gram(gp, m, q)
    C, r_hat = _neurons(gp, c_hat)
    N = C @ Gam @ C.T
    d = np.diag(N)
    if np.any(d[k:] <= 0):
        raise InvalidParameterError(f"lora.general: a student neuron has zero norm at m={m!r}, q={q!r}.")
    kap = pair_moments(gp.problem.activation, d[:, None], d[None, k:], N[:, k:])
    return Gam, C, r_hat, N, kap


def general_loss(gp, m, q=None, c_hat=None):
    r"""Population loss at the order parameters ``(m, q, c_hat)``.

    .. math:: \Phi = \lambda^\top\kappa(V, V)\lambda + \lambda^\top\kappa(\hat V, \hat V)\lambda
              - 2\lambda^\top\kappa(V, \hat V)\lambda,\qquad
              \kappa(a, b) = \mathbb E[\sigma(\langle a, x\rangle)\sigma(\langle b, x\rangle)]

    with the neuron Gram matrix from :math:`\Gamma(m, q)`.

    Parameters
    ----------
    gp : GeneralProblem
    m : float
        ``<u, u_hat>`` in [-1, 1].
    q : ndarray of shape (k,), optional
        ``W u_hat``; default 0 (and must be 0 when ``gp.project``).
    c_hat : ndarray of shape (k,), optional
        Student coefficients; default ``gp.problem.c_hat``.

    Returns
    -------
    float

    Notes
    -----
    Regime: any Gram-consistent ``(m, q)``. With ``p = q = 0`` it is Prop. 4's loss
    (:func:`popdyn.models.lora.population_loss`).

    Accuracy: ``|dPhi| <= tol sum_ab |lam_a lam_b| |v_a| |v_b|`` over the 2k neurons (tol as :func:`pair_moments`: 16 eps
    relu, 1e-12 smooth); never negative. Measured 0.03 (relu and erf, k <= 3, alpha up to 0.99, against mpmath).

    References
    ----------
    .. [src] [Dayi25, proof of Proposition 4 (App. D.1)] (A2 case); general Gram derived in docs/lora.md.

    Examples
    --------
    >>> from popdyn.models import lora
    >>> P = lora.Problem.orthonormal(4, 1.0, seed=0)
    >>> gp = lora.GeneralProblem(P, np.zeros(4))
    >>> bool(abs(general_loss(gp, 0.3) - float(lora.population_loss(P, 0.3))) < 1e-12)
    True
    """
    m, q, c_hat = _state(gp, m, q, c_hat)
    k, lam = gp.k, gp.problem.lam
    Gam, C, _, N, (kap, _, _) = _moments(gp, m, q, c_hat)
    d = np.diag(N)
    k_tt = pair_moments(gp.problem.activation, d[:k, None], d[None, :k], N[:k, :k])[0]
    return float(lam @ k_tt @ lam + lam @ kap[k:] @ lam - 2 * lam @ kap[:k] @ lam)


def _neuron_gradients(gp, m, q, c_hat):
    """D (k, k+2): the gradient of Phi with respect to each student neuron vector, on the basis; plus context."""
    k, lam = gp.k, gp.problem.lam
    Gam, C, r_hat, N, (_, k1, k2) = _moments(gp, m, q, c_hat)
    T, S = C[:k], C[k:]
    lt = lam[:, None]
    D = (lt * k1[k:]).T @ S - (lt * k1[:k]).T @ T + (lam @ (k2[k:] - k2[:k]))[:, None] * S
    return 2 * lam[:, None] * D, Gam, C, r_hat


def general_gradient(gp, m, q=None, c_hat=None):
    r"""Population gradient of Phi with respect to u_hat (r_hat held fixed, as in SGD) and to c_hat.

    .. math:: \nabla_{\hat u}\Phi = \sum_j \frac{\xi\hat c_j}{\hat r_j} D_j,\qquad
              D_j = 2\lambda_j\sum_i\lambda_i\big[\kappa_1(\hat v_i,\hat v_j)\hat v_i
              + \kappa_2(\hat v_i,\hat v_j)\hat v_j
              - \kappa_1(v_i,\hat v_j)v_i - \kappa_2(v_i,\hat v_j)\hat v_j\big],\qquad
              \partial_{\hat c_j}\Phi
              = \Big\langle D_j, \frac{\xi\hat u}{\hat r_j} - \frac{\xi^2\hat c_j}{\hat r_j^2}\hat v_j\Big\rangle

    Parameters
    ----------
    gp : GeneralProblem
    m, q, c_hat
        As in :func:`general_loss`.

    Returns
    -------
    g : ndarray of shape (k + 2,)
        Coefficients of :math:`\nabla_{\hat u}\Phi` on the basis ``(w_1..w_k, u, u_hat)``.
    grad_c : ndarray of shape (k,)
        :math:`\partial\Phi/\partial\hat c` (normalisation N1, ``r_hat_j = sqrt(1 + xi^2 c_hat_j^2)`` follows c_hat).
    gram : ndarray of shape (k + 2, k + 2)
        The basis Gram :math:`\Gamma`, so that ``gram @ g`` are the inner products with the basis.

    Notes
    -----
    Regime: as :func:`general_loss`. Under A2 (``p = q = 0``) ``<g, u> - m <g, u_hat> = -h(m)(1 - m^2)``
    (Prop. 4; tests).

    Accuracy: each ``(gram @ g)_a`` within ``8 tol size max(1, xi)(1 + xi max|c_hat_j|)`` (size and tol as
    :func:`general_loss`); ``grad_c`` within ``8 tol size xi max(1, xi)(1 + xi max|c_hat_j|)``. Measured 1.2e-3 and
    0.03 of the bounds (against the derivative of the loss in mpmath along each basis vector and along c_hat_j).

    References
    ----------
    .. [src] [Dayi25, Proposition 4, App. D.2] (A2 case); general position derived in docs/lora.md (Stein's lemma).
    """
    m, q, c_hat = _state(gp, m, q, c_hat)
    D, Gam, C, r_hat = _neuron_gradients(gp, m, q, c_hat)
    xi, k = gp.problem.xi, gp.k
    g = (xi * c_hat / r_hat) @ D
    dv = -(xi**2 * c_hat / r_hat**2)[:, None] * C[k:]
    dv[:, k + 1] += xi / r_hat
    grad_c = np.einsum("ja,ab,jb->j", D, Gam, dv)
    return g, grad_c, Gam


def _projected_inner(gp, g, Gam, m, q):
    """<P g, u> and <P g, w_i>: P = (I - u_hat u_hat^T) [Pi_W^perp when gp.project]."""
    k = gp.k
    y = Gam @ g                      # inner products of g with w_1..w_k, u, u_hat
    if gp.project:                   # <Pi_perp g, u> = <g, u> - <g, Pi_W u>, Pi_W u = W^T G^+ p; u_hat is perp
        gu = y[k] - y[:k] @ (gp.G_pinv @ gp.p)
        return gu - m * y[k + 1], np.zeros(k)
    return y[k] - m * y[k + 1], y[:k] - q * y[k + 1]


# ---- normalisation drift --------------------------------------------------------------------------------
def _normal_draws(n_mc, seed, dim):
    """Scrambled-Sobol normal points (n_mc, dim) and their squares (common random numbers, cached per problem)."""
    u = qmc.Sobol(dim, scramble=True, seed=seed).random(n_mc)
    eps = ndtri(np.clip(u, 2**-60, 1 - 2**-53))
    return eps, eps * eps


def gradient_second_moment_general(gp, m, q=None, c_hat=None, *, d, n_mc=_N_MC, seed=0):
    r"""Monte Carlo of :math:`\mathbb E\lVert L_t\rVert^2`, the squared norm of one projected SGD gradient.

    .. math:: \mathbb E\lVert L_t\rVert^2 = (d - \mathrm{rank}\,\Gamma)\,\mathbb E[F^2]
              + \mathbb E\big[F^2\lVert P y\rVert^2\big],\qquad
              F = -2(f^*-\hat f)\sum_j\lambda_j\sigma'(\langle\hat v_j,x\rangle)\frac{\xi\hat c_j}{\hat r_j}

    with y the part of x in span(W, u, u_hat) and P the projection of the algorithm (u_hat^perp, and
    span(W)^perp when ``gp.project``). Under A2, ``E[F^2] = 4 B0(m)``.

    Parameters
    ----------
    gp : GeneralProblem
    m, q, c_hat
        As in :func:`general_loss`.
    d : int
        Input dimension, >= rank Gamma.
    n_mc : int
        Gaussian draws in k + 2 dimensions (the same ones for every state: common random numbers).
    seed : int
        Seed of the draws.

    Returns
    -------
    mean : float

    Notes
    -----
    Regime: batch size 1 (online SGD, Eq. 4). Relative Monte Carlo error ~ a few / sqrt(n_mc); it enters
    the drift at order lr^2 d (the finite-delta correction), so 1e-2 relative suffices.

    Accuracy: unbiased (one scrambled Sobol sample); no standard error is returned, the spread over seeds is it:
    each seed within 0.1 relative at the default n_mc = 2^12, and the mean of 16 seeds within 7.9 of their standard
    error (Student's t, 15 degrees of freedom: false-failure rate 1e-6 per comparison) of 4[(d-k-2) B0 + B1]
    under A2 with projection; measured 0.17.

    References
    ----------
    .. [src] [Dayi25, App. E.1] (exact one-step relation); A2 case (B0 and B1) derived in docs/lora.md.
    """
    m, q, c_hat = _state(gp, m, q, c_hat)
    return _second_moment(gp, m, q, c_hat, d, n_mc, seed)


def _factor(gp):
    """F (k, r) with F F^T = G, r = rank G, and a = F^+ p (u's coordinates in span W), cached."""
    def make():
        vals, vecs = np.linalg.eigh(gp.problem.G)
        keep = vals > _RANK_TOL * max(1.0, vals[-1])
        F = vecs[:, keep] * np.sqrt(vals[keep])
        return F, np.linalg.lstsq(F, gp.p, rcond=None)[0]
    return _cached(gp.problem, ("general_factor", gp.p.tobytes()), make)


def _root(gp, m, q):
    """Rows (w_1..w_k, u, u_hat) of a root of Gamma in R^(r+2), continuous in (m, q), and its rank.

    ``w_i = (F_i, 0, 0)``, ``u = (a, s, 0)`` with ``s = sqrt(1 - alpha^2)``, ``u_hat = (b, t_1, t_2)`` with
    ``F b = q``, ``t_1 = (m - a.b)/s``, ``t_2 = sqrt(1 - |b|^2 - t_1^2)``: the geometry of the simulation.
    """
    F, a = _factor(gp)
    k, r = F.shape
    b = np.linalg.lstsq(F, q, rcond=None)[0] if np.any(q) else np.zeros(r)
    s = np.sqrt(max(1.0 - a @ a, 0.0))
    t1 = (m - a @ b) / s
    t2sq = 1.0 - b @ b - t1 * t1
    if t2sq < -1e-9:
        raise InvalidParameterError(f"lora.general: (m, q) = ({m!r}, {q!r}) is not the overlap of a unit u_hat "
                                    f"(|Pi_W u_hat|^2 + t_1^2 = {1 - t2sq!r} > 1).")
    R = np.zeros((k + 2, r + 2))
    R[:k, :r] = F
    R[k, :r], R[k, r] = a, s
    R[k + 1, :r], R[k + 1, r], R[k + 1, r + 1] = b, t1, np.sqrt(max(t2sq, 0.0))
    return R, r


def _sample(gp, m, q, c_hat, n_mc, seed, rng=None):
    """The quadrature points' fields: basis inner products z (n, k+2), pre-activations (teachers then students),
    the residual f* - f_hat, sigma' of the students, F = -2 res sum_j lam_j sigma'_j xi c_hat_j/r_hat_j (the scalar of
    the sample gradient F x), r_hat, and ||P y||^2 of the part y of x in span(W, u, u_hat) with its rank. The points
    are the cached scrambled-Sobol draws of ``(n_mc, seed)``, or fresh normal draws from the generator ``rng``."""
    k, P = gp.k, gp.problem
    C, r_hat = _neurons(gp, c_hat)
    R, r = _root(gp, m, q)
    if rng is None:
        eps, eps2 = _cached(P, ("general_draws", n_mc, seed, r), lambda: _normal_draws(n_mc, seed, r + 2))
    else:
        eps = rng.standard_normal((n_mc, r + 2))
        eps2 = eps * eps
    rank = r + 1 + int(R[k + 1, r + 1] > 1e-12)
    # einsum, not BLAS: these products are small and a threaded BLAS on busy cores costs more than it saves
    z = np.einsum("nl,al->na", eps, R)                              # <basis_a, x>, covariance Gamma
    y2 = np.sum(eps2[:, :rank], axis=1)                             # ||y||^2, y = part of x in the span
    pre = np.einsum("na,ja->nj", z, C)
    sig, lam = P.activation, P.lam
    res = np.einsum("nj,j->n", sig(pre[:, :k]) - sig(pre[:, k:]), lam)
    ds = sig.deriv(pre[:, k:])
    F = -2 * res * np.einsum("nj,j->n", ds, lam * P.xi * c_hat / r_hat)
    Py2 = y2 - z[:, k + 1] ** 2
    if gp.project:                                                  # u_hat is in span W^perp already
        Py2 = Py2 - np.sum(eps2[:, :r], axis=1)
    return dict(z=z, pre=pre, res=res, ds=ds, F=F, r_hat=r_hat, Py2=Py2, rank=rank)


def _second_moment_of(s, d):
    """E||L_t||^2 from the fields of :func:`_sample`."""
    F2 = s["F"] ** 2
    return float((d - s["rank"]) * F2.mean() + (F2 * s["Py2"]).mean())


def _second_moment(gp, m, q, c_hat, d, n_mc, seed):
    return _second_moment_of(_sample(gp, m, q, c_hat, n_mc, seed), d)


# ---- the drift of the order parameters -----------------------------------------------------------------
def general_drift(gp, m, q=None, c_hat=None, *, lr, d=None, lr_c=None, convention="corrected", n_mc=_N_MC,
                  seed=0):
    r"""Mean change per SGD step of the order parameters ``(m, q, c_hat)``.

    .. math:: \frac{dm}{dt} = -\eta\langle P\nabla_{\hat u}\Phi, u\rangle
              - \frac{\eta^2}{2}\,m\,\mathbb E\lVert L_t\rVert^2,
              \quad \frac{dq}{dt} = -\eta\,W P\nabla_{\hat u}\Phi - \frac{\eta^2}{2}\,q\,\mathbb E\lVert L_t\rVert^2,
              \quad \frac{d\hat c}{dt} = -\eta_c\,\partial_{\hat c}\Phi

    P is the algorithm's projection (u_hat^perp, and span(W)^perp when ``gp.project``). With projection
    and frozen c_hat this is the scalar ODE :math:`\dot m = \eta h_p(m)(1 - \alpha^2 - m^2) - \dots`:
    u_hat can only reach the part of u outside span W.

    Parameters
    ----------
    gp : GeneralProblem
    m, q, c_hat
        As in :func:`general_loss`.
    lr : float
        Step eta > 0.
    d : int, optional
        Input dimension (needed by ``convention="corrected"``).
    lr_c : float, optional
        Step of c_hat (joint training, simulate's ``joint=True``); None keeps c_hat frozen.
    convention : {"corrected", "paper"}
        "paper": the population flow alone (eta -> 0 at fixed eta t); "corrected": plus the normalisation
        drift (finite delta = eta d), as :func:`popdyn.models.lora.overlap_ode`.
    n_mc, seed
        Draws of :func:`gradient_second_moment_general`.

    Returns
    -------
    dm : float
    dq : ndarray of shape (k,)
    dc : ndarray of shape (k,)

    Notes
    -----
    Regime: online SGD (batch 1) with ``eta = delta/d``, d -> infinity at fixed delta, tau = t/d;
    fluctuations O(sqrt(delta/d)) and O(1/d) corrections are dropped (as in the A2 case, docs/lora.md).
    The c_hat step has no normalisation, so no second-order drift.

    Accuracy: ``dm`` of "paper" within ``lr`` times twice the bound of :func:`general_gradient`; measured 5e-7 of it.
    "corrected" adds a quasi-Monte Carlo term of relative error ~ a few / sqrt(n_mc) (its standard error, not a bound).

    References
    ----------
    .. [src] [Dayi25, eq. (4), App. C.1 (A2 recursion), App. E.1]; derived in docs/lora.md.

    Examples
    --------
    >>> from popdyn.models import lora
    >>> P = lora.Problem.orthonormal(4, 1.0, seed=0)
    >>> dm, dq, dc = general_drift(lora.GeneralProblem(P, np.zeros(4)), 0.3, lr=1.0, convention="paper")
    >>> bool(abs(dm - float(lora.h(P, 0.3)) * (1 - 0.09)) < 1e-10)
    True
    """
    m, q, c_hat = _state(gp, m, q, c_hat)
    g, grad_c, Gam = general_gradient(gp, m, q, c_hat)
    gu, gw = _projected_inner(gp, g, Gam, m, q)
    dm, dq = -lr * gu, -lr * gw
    if convention == "corrected":
        if d is None:
            raise InvalidParameterError("The 'd' parameter of lora.general_drift must be an int for "
                                        "convention='corrected'. Got None instead.")
        e2 = 0.5 * lr**2 * _second_moment(gp, m, q, c_hat, d, n_mc, seed)
        dm, dq = dm - e2 * m, dq - e2 * q
    elif convention != "paper":
        raise InvalidParameterError(f"The 'convention' parameter of lora.general_drift must be one of "
                                    f"('corrected', 'paper'). Got {convention!r} instead.")
    dc = np.zeros(gp.k) if lr_c is None else -lr_c * grad_c
    return dm, dq, dc


# ---- the reachable part of span W --------------------------------------------------------------------------
def q_norm(gp, q):
    r"""How far u_hat has moved into span W, from its overlaps ``q = W u_hat``.

    .. math:: \lVert\Pi_W\hat u\rVert = \sqrt{q^\top G^+ q}

    Parameters
    ----------
    gp : GeneralProblem
    q : ndarray of shape (..., k)

    Returns
    -------
    ndarray of shape (...)

    Notes
    -----
    Regime: q in the range of G (true for any ``W u_hat``).

    Accuracy: ``|d| <= 8 k eps (kappa ||Pi_W u_hat|| + |q|/sqrt(lam_min))``, kappa = lam_max/lam_min of G on the range
    its pseudo-inverse keeps (the rounding of q is amplified by G^+ for near-parallel features); measured 0.04.

    References
    ----------
    .. [src] derived (``Pi_W = W^T G^+ W``); [Dayi25, App. B, Fig. 5] (the same norm for u, Fig. 5's alpha).

    Examples
    --------
    >>> from popdyn.models import lora
    >>> gp = lora.GeneralProblem(lora.Problem.orthonormal(2, 1.0, seed=0), np.zeros(2))
    >>> float(q_norm(gp, np.array([0.6, 0.0])))
    0.6
    """
    q = np.asarray(q, dtype=np.float64)
    return np.sqrt(np.clip(np.einsum("...i,ij,...j->...", q, gp.G_pinv, q), 0.0, None))
