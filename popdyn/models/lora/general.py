r"""LoRA outside Assumption A2: u (and u_hat) in general position with respect to span W (Figs 4-5).

Public names
------------
:class:`GeneralProblem`
    A :class:`~popdyn.models.lora.Problem` plus the teacher's overlaps ``p = W u`` with the features
    and the algorithm's choice ``project`` (the paper's Eq. 4 projects u_hat on span(W)^perp; Fig. 4 does not).
:func:`pair_moments`
    ``E[s(A)s(B)]``, ``E[s'(A)s'(B)]``, ``E[s(A)s''(B)]`` for a centred Gaussian pair of any covariance.
:func:`general_loss`, :func:`general_gradient`, :func:`general_drift`
    The population loss, gradient and the drift of the order parameters ``(m, q[, c_hat])``.

Derivation (specs/lora.md §4 R5 asks for it; derived here, not in the paper). Everything is rotation
invariant, so the population quantities depend on ``u_hat`` only through the Gram matrix of
``(w_1..w_k, u, u_hat)``::

    Gamma = [[G, p, q], [p^T, 1, m], [q^T, m, 1]],   p = W u (fixed), q = W u_hat, m = <u, u_hat>.

Under A2 ``p = q = 0`` and only ``m`` is left (Prop. 4). In general the order parameters are
``(m, q)`` (k + 1 numbers; ``q = 0`` is kept by the projected algorithm), plus ``c_hat`` when it is trained.
Every neuron is a linear field ``<v, x>`` of the (k+2)-dimensional Gaussian, and by Stein's lemma
the gradient of ``kappa(a, b) = E[s(<a,x>) s(<b,x>)]`` is ``a E[s's'] + b E[s s'']``, so the population
gradient is a combination of the neuron vectors with pair expectations as coefficients
(:func:`pair_moments`: ReLU in closed form, smooth activations by 2-D Gauss-Hermite).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri
from scipy.stats import qmc

from ... import activations, dynamics
from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, RegimeWarning, check
from ...api import predict
from ...results import Prediction
from ...gaussian import arccos_kernel
from ...hermite import gauss_hermite
from .problem import Problem, _cached, check_overlap

__all__ = ["GeneralProblem", "pair_moments", "general_loss", "general_gradient", "general_drift",
           "gradient_second_moment_general", "q_norm"]

_OWNER = "lora.GeneralProblem"
_N_GH = 48  # 2-D Gauss-Hermite nodes per axis: exact for polynomials of degree <= 95; sigmoid/tanh/erf to ~1e-12
_N_MC = 1 << 12  # scrambled-Sobol points of the normalisation term: ~1 % spread over scrambles (relu, k = 8)
_RANK_TOL = 1e-10  # eigenvalues of the Gram of (W, u, u_hat) below this (times its scale) are rank deficiency


@dataclass(frozen=True, eq=False)
class GeneralProblem:
    r"""A LoRA problem whose teacher direction u has overlaps ``p = W u`` with the features (A2 fails).

    .. math:: \alpha = \lVert\Pi_W u\rVert = \sqrt{p^\top G^{+} p},\qquad
              v_i = \frac{w_i + \xi c_i u}{r_i},\quad \hat v_j = \frac{w_j + \xi\hat c_j\hat u}{\hat r_j}

    The scales ``r_i = sqrt(1 + xi^2 c_i^2)`` of convention N1 are kept (as in the simulation), so the
    neurons are no longer unit vectors when ``p`` or ``q = W u_hat`` is not 0.

    Parameters
    ----------
    problem : Problem
        G, lam, c, c_hat, xi, activation; convention "N1".
    p : ndarray of shape (k,)
        ``<w_i, u>``; must lie in the range of G with ``p^T G^+ p < 1`` (u keeps a part orthogonal to W).
    project : bool
        True: the paper's algorithm (Eq. 4, L180) projects the gradient on span(W)^perp, u_hat stays
        orthogonal to W (``q = 0``) and ``|m| <= sqrt(1 - alpha^2)``. False: Fig. 4's variant
        (L529-540), u_hat moves on the whole sphere.

    Notes
    -----
    Regime: any ``alpha`` in [0, 1); ``p = 0`` is Assumption A2, where every quantity reduces to
    :mod:`popdyn.models.lora.theory` (tests).

    References
    ----------
    .. [src] seed 003 L529-557 (Figs 4-5, u not orthogonal to W), L80 (A2); specs/lora.md §4 R5, §7.
    """
    #: what the CLI and the property suite read; ``__post_init__`` checks them (and p's range and norm)
    _constraints = {"p": FiniteArray(1), "project": Options((True, False))}

    problem: Problem
    p: np.ndarray
    project: bool = True

    def __post_init__(self):
        if not isinstance(self.problem, Problem):
            raise InvalidParameterError(f"The 'problem' parameter of {_OWNER} must be a lora.Problem. "
                                        f"Got {self.problem!r} instead.")
        if self.problem.convention != "N1":
            raise InvalidParameterError(f"The 'problem' parameter of {_OWNER} must have convention 'N1'. "
                                        f"Got {self.problem.convention!r} instead.")
        p = np.asarray(self.p, dtype=np.float64)
        if p.shape != (self.problem.k,) or not np.all(np.isfinite(p)):
            raise InvalidParameterError(f"The 'p' parameter of {_OWNER} must be a finite array of shape "
                                        f"({self.problem.k},). Got {self.p!r} instead.")
        object.__setattr__(self, "p", p)
        if not isinstance(self.project, (bool, np.bool_)):
            raise InvalidParameterError(f"The 'project' parameter of {_OWNER} must be a bool. Got {self.project!r}.")
        G = self.problem.G
        resid = float(np.linalg.norm(G @ (self.G_pinv @ p) - p))
        if resid > 1e-8 * (1 + np.linalg.norm(p)) or not self.alpha < 1:
            raise InvalidParameterError(
                f"The 'p' parameter of {_OWNER} must be W u for a unit u with a part outside span W: p in the "
                f"range of G and alpha^2 = p^T G^+ p in [0, 1). Got alpha = {self.alpha!r} "
                f"(range residual {resid:.3g}) instead.")
        act = self.problem.activation
        if act.name != "relu" and act._family.kinks:
            raise InvalidParameterError(f"The 'problem' parameter of {_OWNER} must have relu or a smooth "
                                        f"activation (2-D Gauss-Hermite). Got {act.name!r} instead.")

    @property
    def k(self):
        return self.problem.k

    @property
    def G_pinv(self):
        """Pseudo-inverse of G (cached)."""
        return _cached(self.problem, "G_pinv", lambda: np.linalg.pinv(self.problem.G, hermitian=True))

    @property
    def alpha(self):
        r""":math:`\alpha = \lVert\Pi_W u\rVert = \sqrt{p^\top G^+ p}` (Fig. 5's parameter, L544-549)."""
        return float(np.sqrt(max(self.p @ self.G_pinv @ self.p, 0.0)))

    @classmethod
    def from_alpha(cls, problem, alpha, seed=0, *, project=True):
        r"""Fig. 5's teacher: u = alpha u_1 + sqrt(1 - alpha^2) u_2, u_1 uniform on the unit sphere of span W.

        .. math:: p = W u = \alpha\,\frac{z}{\sqrt{z^\top G^+ z}},\qquad z \sim N(0, G)

        (with ``g ~ N(0, I_d)``, ``W g ~ N(0, G)`` and ``||Pi_W g||^2 = (Wg)^T G^+ (Wg)``).

        Parameters
        ----------
        problem : Problem
        alpha : float
            ``||Pi_W u||`` in [0, 1).
        seed : int
            Seed of u_1; the same seed gives the same p.
        project : bool
            As the class parameter.

        Returns
        -------
        GeneralProblem

        References
        ----------
        .. [src] seed 003 L544-549.

        Examples
        --------
        >>> from popdyn.models import lora
        >>> round(GeneralProblem.from_alpha(lora.Problem.orthonormal(3, 1.0), 0.5, seed=2).alpha, 12)
        0.5
        """
        alpha = check(f"{_OWNER}.from_alpha", "alpha", alpha, Interval(0.0, 1.0, closed="left"))
        vals, vecs = np.linalg.eigh(problem.G)
        z = (vecs * np.sqrt(np.clip(vals, 0.0, None))) @ np.random.default_rng(seed).standard_normal(problem.k)
        pinv = np.linalg.pinv(problem.G, hermitian=True)
        return cls(problem, alpha * z / np.sqrt(z @ pinv @ z), project)

    def __repr__(self):
        p = np.array2string(self.p, separator=", ", precision=17, max_line_width=10**6)
        return (f"lora.GeneralProblem(problem={self.problem!r}, p=np.array({p}), "
                f"project={bool(self.project)!r})")


# ---- pair expectations ------------------------------------------------------------------------------
def pair_moments(activation, s_aa, s_bb, s_ab, n=_N_GH):
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
        relu (closed form) or a smooth activation (2-D Gauss-Hermite with ``n`` nodes per axis).
    s_aa, s_bb, s_ab : array_like
        Variances (> 0) and covariance, broadcast together.
    n : int
        Gauss-Hermite nodes per axis (smooth activations only).

    Returns
    -------
    kappa, kappa1, kappa2 : ndarray of the broadcast shape

    Notes
    -----
    Regime: ``S_AA, S_BB > 0``. ReLU: :math:`\kappa = s_as_b k_1(\rho)`, :math:`\kappa_1 = k_0(\rho)`,
    :math:`\kappa_2 = \frac{s_a}{s_b}\frac{\sqrt{1-\rho^2}}{2\pi}` (arc-cosine kernels,
    :func:`popdyn.gaussian.arccos_kernel`). Gauss-Hermite is exact for polynomial sigma of degree < n.

    References
    ----------
    .. [src] derived (Stein's lemma; Cho & Saul arc-cosine kernels); seed 003 L756, L771; specs/lora.md §2.10.

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
    x, w = gauss_hermite(min(n, _poly_nodes(act)))
    x1, x2, ww = x[:, None], x[None, :], w[:, None] * w[None, :]
    A = sa[..., None, None] * x1
    B = sb[..., None, None] * (rho[..., None, None] * x1 + np.sqrt(1.0 - rho * rho)[..., None, None] * x2)
    fa, dfb = act(A), act.deriv(B)
    k0 = np.sum(ww * fa * act(B), axis=(-2, -1))
    k1 = np.sum(ww * act.deriv(A) * dfb, axis=(-2, -1))
    k2 = (np.sum(ww * fa * dfb * B, axis=(-2, -1)) - s_ab * k1) / s_bb
    return k0, k1, k2


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

    References
    ----------
    .. [src] seed 003 L758-767 (A2 case); specs/lora.md §2.10 (general Gram, derived), §4 R5.

    Examples
    --------
    >>> from popdyn.models import lora
    >>> P = lora.Problem.orthonormal(4, 1.0, seed=0)
    >>> gp = GeneralProblem(P, np.zeros(4))
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
        :math:`\partial\Phi/\partial\hat c` (convention N1, ``r_hat_j = sqrt(1 + xi^2 c_hat_j^2)`` follows c_hat).
    gram : ndarray of shape (k + 2, k + 2)
        The basis Gram :math:`\Gamma`, so that ``gram @ g`` are the inner products with the basis.

    Notes
    -----
    Regime: as :func:`general_loss`. Under A2 (``p = q = 0``) ``<g, u> - m <g, u_hat> = -h(m)(1 - m^2)``
    (Prop. 4; tests).

    References
    ----------
    .. [src] seed 003 L204-214, L837 (A2 case); derived (Stein's lemma); specs/lora.md §2.3, §4 R5.
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

    References
    ----------
    .. [src] seed 003 L1228-1230 (exact one-step relation); specs/lora.md §2.6 (A2 case, B0 and B1).
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


def _second_moment(gp, m, q, c_hat, d, n_mc, seed):
    k, P = gp.k, gp.problem
    C, r_hat = _neurons(gp, c_hat)
    R, r = _root(gp, m, q)
    eps, eps2 = _cached(P, ("general_draws", n_mc, seed, r), lambda: _normal_draws(n_mc, seed, r + 2))
    rank = r + 1 + int(R[k + 1, r + 1] > 1e-12)
    # einsum, not BLAS: these products are small and a threaded BLAS on busy cores costs more than it saves
    z = np.einsum("nl,al->na", eps, R)                              # <basis_a, x>, covariance Gamma
    y2 = np.sum(eps2[:, :rank], axis=1)                             # ||y||^2, y = part of x in the span
    pre = np.einsum("na,ja->nj", z, C)
    sig, lam = P.activation, P.lam
    res = np.einsum("nj,j->n", sig(pre[:, :k]) - sig(pre[:, k:]), lam)
    F2 = 4 * res**2 * np.einsum("nj,j->n", sig.deriv(pre[:, k:]), lam * P.xi * c_hat / r_hat) ** 2
    Py2 = y2 - z[:, k + 1] ** 2
    if gp.project:                                                  # u_hat is in span W^perp already
        Py2 = Py2 - np.sum(eps2[:, :r], axis=1)
    return float((d - rank) * F2.mean() + (F2 * Py2).mean())


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
    fluctuations O(sqrt(delta/d)) and O(1/d) corrections are dropped (as in the A2 case, spec §2.6).
    The c_hat step has no normalisation, so no second-order drift.

    References
    ----------
    .. [src] seed 003 L180-182 (Eq. 4), L598-617 (A2 recursion), L1228-1230; specs/lora.md §2.6, §4 R5.

    Examples
    --------
    >>> from popdyn.models import lora
    >>> P = lora.Problem.orthonormal(4, 1.0, seed=0)
    >>> dm, dq, dc = general_drift(GeneralProblem(P, np.zeros(4)), 0.3, lr=1.0, convention="paper")
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


# ---- popdyn.predict ---------------------------------------------------------------------------------------
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

    References
    ----------
    .. [src] derived (``Pi_W = W^T G^+ W``); seed 003 L544-549 (the same norm for u, Fig. 5's alpha).

    Examples
    --------
    >>> from popdyn.models import lora
    >>> gp = GeneralProblem(lora.Problem.orthonormal(2, 1.0, seed=0), np.zeros(2))
    >>> float(q_norm(gp, np.array([0.6, 0.0])))
    0.6
    """
    q = np.asarray(q, dtype=np.float64)
    return np.sqrt(np.clip(np.einsum("...i,ij,...j->...", q, gp.G_pinv, q), 0.0, None))


def _layout(gp, joint):
    """Slices of the ODE state [m, q (unprojected only), c_hat (joint only)]."""
    k = gp.k
    nq = 0 if gp.project else k
    return slice(1, 1 + nq), slice(1 + nq, 1 + nq + (k if joint else 0))


@predict.register(GeneralProblem)
def _predict(gp, *, d, lr, steps, m0=None, q0=None, joint=False, lr_c=None, convention="corrected",
             n_points=200, n_mc=_N_MC, seed=0, rtol=1e-6):
    r"""Theory of online SGD outside A2: the order parameters (m, q, c_hat) and the population loss.

    .. math:: \frac{d(m, q, \hat c)}{dt} = \text{general\_drift}(m, q, \hat c),\qquad
              \mathrm{loss}(t) = \Phi(m(t), q(t), \hat c(t))

    Parameters
    ----------
    gp : GeneralProblem
    d : int
        Input dimension, >= k + 3.
    lr : float
        Step eta > 0 (``delta = lr d``).
    steps : int
        SGD steps, >= 1.
    m0 : float, optional
        Initial ``<u, u_hat>``; default ``s 0.5/sqrt(d)`` with s the sign of dm/dt at (m, q) = 0.
        With ``project`` ``|m0| <= sqrt(1 - alpha^2)``.
    q0 : ndarray of shape (k,), optional
        Initial ``W u_hat`` (unprojected only); default 0.
    joint : bool
        Train c_hat too (plain SGD, step ``lr_c``, default ``lr``), as ``simulate(joint=True)``.
    lr_c : float, optional
        Step of c_hat when ``joint``.
    convention : {"corrected", "paper"}
        With or without the normalisation drift (see :func:`general_drift`).
    n_points : int
        Recorded step numbers on [0, steps] (>= 2).
    n_mc, seed
        Draws of the normalisation term (:func:`gradient_second_moment_general`).
    rtol : float
        Relative tolerance of the ODE solver (RK45), in (0, 1); ``atol = 1e-3 rtol``.

    Returns
    -------
    Prediction
        ``t`` (steps) and observables ``m``, ``loss``, ``q_norm`` (``||Pi_W u_hat||``), and with ``joint``
        ``c_overlap`` (``<c_hat, c>/||c_hat||``); ``meta["alpha"]``, ``meta["m_max"]`` (the reachable
        ``sqrt(1 - alpha^2)`` when projected, else 1).

    Notes
    -----
    Regime: online SGD with ``lr = delta/d``, d large, delta small (as the A2 theory, spec §2.6). The
    projected, frozen-c_hat case is a scalar ODE; otherwise the state has k + 1 (+ k) dimensions.

    References
    ----------
    .. [src] seed 003 L529-557 (Figs 4-5), L598-617, L1228-1230; specs/lora.md §2.6, §4 R5.

    Examples
    --------
    >>> from popdyn.models import lora
    >>> gp = GeneralProblem.from_alpha(lora.Problem.orthonormal(4, 1.0, seed=0), 0.5, seed=1)
    >>> pred = predict(gp, d=200, lr=0.1 / 200, steps=2000, n_points=3, convention="paper")
    >>> bool(abs(pred["m"][-1]) <= np.sqrt(1 - 0.25) + 1e-9)
    True
    """
    owner = "lora.predict(GeneralProblem)"
    k = gp.k
    d = check(owner, "d", d, Integer(k + 3))
    lr = check(owner, "lr", lr, Interval(0, np.inf, closed="neither"))
    steps = check(owner, "steps", steps, Integer(1))
    n_points = check(owner, "n_points", n_points, Integer(2))
    convention = check(owner, "convention", convention, Options(("corrected", "paper")))
    rtol = check(owner, "rtol", rtol, Interval(0, 1, closed="neither"))
    n_mc = check(owner, "n_mc", n_mc, Integer(2))
    seed = check(owner, "seed", seed, Integer(0))
    if not isinstance(joint, (bool, np.bool_)):
        raise InvalidParameterError(f"The 'joint' parameter of {owner} must be a bool. Got {joint!r} instead.")
    if lr_c is not None and not joint:
        raise InvalidParameterError(f"The 'lr_c' parameter of {owner} needs joint=True. Got {lr_c!r} instead.")
    lr_c = (lr if lr_c is None else check(owner, "lr_c", lr_c, Interval(0, np.inf))) if joint else None
    m_max = float(np.sqrt(1 - gp.alpha**2)) if gp.project else 1.0
    if q0 is not None and gp.project:
        raise InvalidParameterError(f"The 'q0' parameter of {owner} must be None when project=True. Got {q0!r}.")
    q0 = np.zeros(k) if q0 is None else np.asarray(q0, dtype=np.float64)
    if m0 is None:
        s = np.sign(general_drift(gp, 0.0, None if gp.project else np.zeros(k), lr=1.0, convention="paper")[0]) or 1.0
        m0 = s * 0.5 / np.sqrt(d)
    m0 = check(owner, "m0", m0, Interval(-m_max, m_max))
    sq, sc = _layout(gp, joint)
    y0 = np.r_[m0, q0[:sq.stop - sq.start], gp.problem.c_hat[:sc.stop - sc.start]]

    def unpack(y):
        return (min(max(y[0], -m_max), m_max), None if gp.project else y[sq],
                y[sc] if joint else gp.problem.c_hat)

    def rhs(t, y):
        m, q, c = unpack(y)
        dm, dq, dc = general_drift(gp, m, q, c, lr=lr, d=d, lr_c=lr_c, convention=convention, n_mc=n_mc,
                                   seed=seed)
        return np.r_[dm, dq[:sq.stop - sq.start], dc[:sc.stop - sc.start]]

    t = np.unique(np.rint(np.linspace(0, steps, n_points)).astype(np.int64))
    sol = dynamics.solve_ode(rhs, y0, t.astype(np.float64), rtol=rtol, atol=1e-3 * rtol, method="RK45")
    t = t[:sol.t.size]
    states = [unpack(y) for y in sol.y]
    obs = {"m": np.array([s[0] for s in states]),
           "loss": np.array([max(general_loss(gp, *s), 0.0) for s in states]),
           "q_norm": np.array([0.0 if s[1] is None else float(q_norm(gp, s[1])) for s in states])}
    if joint:
        obs["c_overlap"] = np.array([s[2] @ gp.problem.c / np.linalg.norm(s[2]) for s in states])
    options = dict(d=d, lr=lr, steps=steps, m0=float(m0), q0=q0.tolist(), joint=bool(joint), lr_c=lr_c,
                   convention=convention, n_points=n_points, n_mc=n_mc, seed=seed, rtol=rtol)
    regime = [dict(condition="delta = lr*d <= 1 (first order in delta, as the A2 corrected ODE)", value=lr * d,
                   bound=1.0, holds=bool(lr * d <= 1), source="specs/lora.md §2.6, §3.6")]
    if joint:
        regime.append(dict(condition="joint c_hat: its per-step noise (no 1/d) is small; not checked, see docs/lora.md",
                           value=lr_c, bound=None, holds=None, source="docs/lora.md, General position"))
    for e in regime:
        if e["holds"] is False:
            warnings.warn(f"{owner}: regime condition not met: {e['condition']} (value {e['value']!r})",
                          RegimeWarning, stacklevel=3)
    meta = dict(problem=repr(gp), options=options, t_unit="steps", delta=lr * d, alpha=gp.alpha, m_max=m_max,
                nfev=sol.nfev, regime=regime,
                source=["seed 003 L529-557 (Figs 4-5)", "specs/lora.md §2.6, §4 R5 (derived)"])
    return Prediction(t=t, observables=obs, status=sol.status, message=sol.message, meta=meta)
