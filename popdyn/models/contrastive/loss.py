"""Population contrastive losses of the multi-task linear model ([Shi24] ch. 7, App. F.2).

Public names
------------
:func:`chi2_expect` (E f(aZ + bZ_1) by Gauss-generalised-Laguerre quadrature), :func:`contrastive_loss_reduced`
(F.40), :func:`contrastive_loss_W` (F.38 for any W: exact through :func:`gen_chi2_loss`, or Monte Carlo),
:func:`pca_identity` (Thm 7.1).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import expit, gammaln, roots_genlaguerre

from ..._validate import FiniteArray, Interval, InvalidParameterError, Options, as_int, check
from .quadform import gen_chi2_loss

__all__ = ["LOSSES", "chi2_expect", "contrastive_loss_reduced", "contrastive_loss_W", "pca_identity"]

# loss name -> (ell, ell'); every loss is convex and non-increasing (the exp and logistic ones strictly)
LOSSES = {"logistic": (lambda t: np.logaddexp(0.0, -t), lambda t: -expit(-t)),
          "exp": (lambda t: np.exp(-t), lambda t: -np.exp(-t)),
          "linear": (lambda t: -t, lambda t: -np.ones_like(t))}
_NONNEG = Interval(0.0, np.inf)


def _loss(owner, loss):
    return LOSSES[check(owner, "loss", loss, Options(tuple(LOSSES)))]


#: Exponential decay rate c of each loss and its derivative, |ell(t)| ~ e^{-c t} as t -> inf: the quadrature is tilted
#: to it (:func:`chi2_expect`'s ``decay``).
DECAY = {"logistic": 1.0, "exp": 1.0, "linear": 0.0}


@lru_cache(maxsize=64)
def _laguerre(k, n_nodes):
    """Generalised Gauss-Laguerre rule of exponent k/2 - 1: nodes and log(weight / Gamma(k/2))."""
    x, w = roots_genlaguerre(n_nodes, k / 2 - 1)
    with np.errstate(divide="ignore"):
        return x, np.log(w) - gammaln(k / 2)


def _chi2_rule(k, n_nodes, scale, decay):
    """Nodes z (..., n) and weights v with E g(Z) ~ sum_i v_i g(z_i), Z ~ chi^2_k, for g(z) = f(scale z) and
    |f(t)| ~ e^{-decay t}: the Laguerre rule in x = lam z, lam = 1/2 + decay scale, so that the quadrature sees
    g(x / lam) e^{x (1 - 1/(2 lam))}, bounded (exact for g(z) = e^{-decay scale z} p(z), deg p < 2 n_nodes)."""
    scale = np.asarray(scale, float)[..., None]
    if k == 0:
        return np.zeros(scale.shape), np.ones(scale.shape)
    x, logw = _laguerre(k, n_nodes)
    lam = 0.5 + decay * scale
    return x / lam, np.exp(logw + x * (1 - 0.5 / lam) - (k / 2) * np.log(2 * lam))


def _grid(a, b, s, q, n_nodes, decay):
    """``(arg, W, Z, Z1)``: the tensor grid a Z + b Z1 (leading axes of a, b broadcast) and its weights."""
    z1, v1 = _chi2_rule(s, n_nodes, a, decay)
    z2, v2 = _chi2_rule(q, n_nodes, b, decay)
    Z, Z1 = z1[..., :, None], z2[..., None, :]
    a, b = np.asarray(a, float)[..., None, None], np.asarray(b, float)[..., None, None]
    return a * Z + b * Z1, v1[..., :, None] * v2[..., None, :], Z, Z1


def chi2_expect(f, a, b, s, q, n_nodes=64, decay=0.0):
    r"""E f(a Z + b Z_1) for independent Z ~ chi^2_s, Z_1 ~ chi^2_q, by tensor Gauss-generalised-Laguerre quadrature
    tilted to the decay of f.

    .. math:: \mathbb E f(aZ + bZ_1) \approx \sum_{i,j} v^{(s)}_i(a) v^{(q)}_j(b)\,
              f\big(a x^{(s)}_i/\lambda_a + b x^{(q)}_j/\lambda_b\big),\qquad
              v^{(k)}_i(a) = \frac{w^{(k)}_i e^{x^{(k)}_i(1 - 1/(2\lambda_a))}}{\Gamma(k/2)(2\lambda_a)^{k/2}},\quad
              \lambda_a = \tfrac12 + c\,a

    with :math:`x^{(k)}, w^{(k)}` the Laguerre rule of exponent :math:`k/2 - 1` (it carries the chi-square density's
    :math:`z^{k/2-1}` singularity at 0, so k = 1 loses nothing) and c = ``decay``.

    Parameters
    ----------
    f : callable
        Vectorised function of a real array.
    a, b : float or ndarray
        Non-negative scales (broadcast together; the result has their shape).
    s, q : int
        Degrees of freedom, >= 0 (0 is the point mass at 0).
    n_nodes : int
        Nodes per axis (>= 1).
    decay : float
        Rate c >= 0 with |f(t)| ~ e^{-c t} as t -> inf (1 for the logistic and exponential losses, 0 for a function
        that does not decay). The rule is exact for f(t) = e^{-c t} p(t), deg p < 2 n_nodes.

    Returns
    -------
    float or ndarray

    Notes
    -----
    Regime: f on [0, inf) growing slower than e^{t/2}; any a, b >= 0 and s, q >= 0. Accuracy (tests: against the
    exact series sum_j (-1)^{j+1} (1 + 2ja)^{-k/2} / j at 40 digits over Hypothesis-drawn a in [1e-3, 1e4], k in
    1..40, and scipy's dblquad in two variables): relative error <= 1e-12 for the logistic and exponential losses
    with ``decay=1`` and 64 nodes, at every scale; the untilted rule (``decay=0``) loses accuracy once a or b exceeds
    about 1 (relative error 3e-7 at a = 3, 0.5 at a = 100 for the logistic loss), because f(a z) then varies on a
    scale 1/a far below the node spacing near 0. Without a decay rate the rule is exact for polynomials of degree
    < 2 n_nodes.

    References
    ----------
    .. [src] [Shi24, Lemma F.3]; the quadrature in docs/contrastive.md.

    Examples
    --------
    >>> bool(abs(chi2_expect(lambda t: np.exp(-t), 0.5, 0.25, 3, 2) - 2 ** -1.5 / 1.5) < 1e-14)  # (1+2a)^{-s/2}..
    True
    """
    owner = "contrastive.chi2_expect"
    s, q = as_int(owner, "s", s), as_int(owner, "q", q)
    n_nodes = as_int(owner, "n_nodes", n_nodes, low=1)
    decay = check(owner, "decay", decay, _NONNEG)
    if not (np.all(np.asarray(a) >= 0) and np.all(np.asarray(b) >= 0)):
        raise InvalidParameterError(f"The 'a' and 'b' parameters of {owner} must be >= 0. Got {a!r}, {b!r} instead.")
    arg, W, _, _ = _grid(a, b, s, q, n_nodes, decay)
    out = np.sum(W * f(arg), axis=(-2, -1))
    return float(out) if out.ndim == 0 else out


def _alphas(owner, alphas, T):
    a = np.full(T, float(alphas)) if np.ndim(alphas) == 0 else check(owner, "alphas", alphas, FiniteArray(1, (T,)))
    if not np.all(a >= 0):
        raise InvalidParameterError(f"The 'alphas' parameter of {owner} must be >= 0 (a float or shape ({T},)). "
                                    f"Got {alphas!r} instead.")
    return a


def _reduced(alpha, alphas, model, loss, n_nodes=64):
    """Value and gradient in (alpha, alpha_1..alpha_T) of the reduced loss (F.40)."""
    ell, dell = LOSSES[loss]
    a, b = alpha * model.sigma_S**2, alphas * model.sigma_R**2
    arg, W, Z, Z1 = _grid(a, b, model.s, model.r - model.s, n_nodes, DECAY[loss])
    w = model.weights
    val = float(w @ np.sum(W * ell(arg), axis=(1, 2)))
    d = W * dell(arg)
    g_alpha = float(w @ (np.sum(d * Z, axis=(1, 2)) * model.sigma_S**2))
    return val, np.concatenate([[g_alpha], w * np.sum(d * Z1, axis=(1, 2)) * model.sigma_R**2])


def contrastive_loss_reduced(alpha, alphas, model, loss="logistic"):
    r"""Population contrastive loss of the representation with column norms sqrt(alpha) on S, sqrt(alpha_t) on P_t.

    .. math:: \mathcal L(\alpha, \alpha_{1..T}) = \sum_t w_t\ \mathbb E\,\ell\big(\alpha\sigma_{S,t}^2 Z
              + \alpha_t\sigma_{R,t}^2 Z_t\big),\qquad Z\sim\chi^2_s,\ Z_t\sim\chi^2_{r-s}

    Parameters
    ----------
    alpha : float
        Squared column norm on the shared features, >= 0.
    alphas : float or ndarray of shape (T,)
        Squared column norms on each task's private features, >= 0.
    model : MultiTaskLinearModel
    loss : {"logistic", "exp", "linear"}
        ell(t) = log(1 + e^{-t}), e^{-t} or -t.

    Returns
    -------
    float

    Notes
    -----
    Regime: W M = [A_R, 0] with mutually orthogonal columns within each R_t (the form the optimum takes, Lemma F.3);
    the feasible set of the paper is alpha, alpha_t in [0, 1], alpha s + (r - s) sum alpha_t <= r, but the formula
    holds for any non-negative norms. Quadrature as in :func:`chi2_expect` (64 nodes).

    References
    ----------
    .. [src] [Shi24, Lemma F.3, (F.40), its proof (F.45)-(F.55)].

    Examples
    --------
    >>> from popdyn.models.contrastive import MultiTaskLinearModel
    >>> model = MultiTaskLinearModel(3, 2, 4, 12)
    >>> round(contrastive_loss_reduced(1.0, 1 / 3, model, loss="linear"), 12)  # -(alpha s + alpha_t (r - s))
    -2.666666666667
    """
    owner = "contrastive.contrastive_loss_reduced"
    alpha = check(owner, "alpha", alpha, _NONNEG)
    _loss(owner, loss)
    return _reduced(alpha, _alphas(owner, alphas, model.n_tasks), model, loss)[0]


def _quadratic_form(W, model, t):
    """Symmetric H with phi(x)^T phi(x^+) = eta^T H eta, eta = (z_{R_t}, z_U, z_U^+) / sigma standard normal."""
    S, P, _, U = model.index_sets()
    Rt = np.concatenate([S, P[t]])
    BR = W[:, Rt] * model.feature_scales(t)[Rt]
    BU = W[:, U] * model.sigma_U[t]
    Z0 = np.zeros_like(BU)
    C1, C2 = np.hstack([BR, BU, Z0]), np.hstack([BR, Z0, BU])
    G = C1.T @ C2
    return (G + G.T) / 2


def _exact_task(owner, H, loss):
    """E ell(eta^T H eta), eta ~ N(0, I): -tr H for the linear loss, else from the eigenvalues of H."""
    if loss == "linear":
        return -float(np.trace(H))
    lam = np.linalg.eigvalsh(H)
    if not np.all(np.abs(lam) <= 1e100):
        raise InvalidParameterError(f"The 'W' parameter of {owner} must give a quadratic form with eigenvalues of "
                                    f"magnitude <= 1e100. Got eigenvalues up to {np.max(np.abs(lam)):.3g} instead.")
    return gen_chi2_loss(lam, loss=loss)


def contrastive_loss_W(W, model, loss="logistic", method="exact", n=100_000, seed=0):
    r"""Population contrastive loss (averaged negative) of the linear representation phi(x) = W x, for any W.

    .. math:: \mathcal L(W) = \sum_t w_t\,\mathbb E\,\ell\big(\phi(x)^\top\phi(x^+)\big) = \sum_t w_t\,
              \mathbb E\,\ell(\eta^\top H_t\eta),\quad \eta\sim\mathcal N(0, I),\
              H_t = \mathrm{sym}\big([B_R, B_U, 0]^\top[B_R, 0, B_U]\big)

    Parameters
    ----------
    W : ndarray of shape (k', d)
        The representation (any number of rows).
    model : MultiTaskLinearModel
    loss : {"logistic", "exp", "linear"}
    method : {"exact", "mc"}
        "exact": -tr H (linear), det(I + 2H)^{-1/2} (exp, inf when I + 2H is not positive definite), and for the
        logistic loss the saddle-line integral over the eigenvalues of H (:func:`gen_chi2_loss`), for every W.
        "mc": the seeded mean over n pairs per task (the independent check).
    n : int
        Monte Carlo pairs per task (>= 2).
    seed : int
        Seed of the Monte Carlo draws.

    Returns
    -------
    float

    Notes
    -----
    Regime: x^- has mean 0, so the averaged negative drops out (F.38) and Q = eta^T H_t eta is a central quadratic
    form (no linear or constant part); B = W M restricted to R_t and U, scaled by the feature standard deviations.
    H_t has negative eigenvalues whenever W weighs the nuisance features U (the block [[0, G], [G, 0]] of
    z_U, z_U^+). Eigenvalues of H_t within 1e100 in magnitude. Accuracy ("exact"): relative 1e-10 for the
    eigenvalues numpy's eigvalsh returns (backward stable: exact for a matrix within about eps ||H|| of H), see
    :func:`gen_chi2_loss`; about 1 ms per task. The Monte Carlo standard error is std / sqrt(n) per task.

    References
    ----------
    .. [src] [Shi24, (F.38), proof of Lemma F.3 (F.45)-(F.55)].

    Examples
    --------
    >>> from popdyn.models.contrastive import MultiTaskLinearModel, optimal_representation
    >>> model = MultiTaskLinearModel(2, 1, 2, 4)
    >>> alpha, alphas, W = optimal_representation(model)
    >>> bool(abs(contrastive_loss_W(W, model) - contrastive_loss_reduced(alpha, alphas, model)) < 1e-12)
    True
    """
    owner = "contrastive.contrastive_loss_W"
    W = check(owner, "W", W, FiniteArray(2, (None, model.d)))
    _loss(owner, loss)
    method = check(owner, "method", method, Options(("exact", "mc")))
    n = as_int(owner, "n", n, low=2)
    out = 0.0
    for t in range(model.n_tasks):
        if method == "exact":
            out += model.weights[t] * _exact_task(owner, _quadratic_form(W, model, t), loss)
        else:
            x, xp, _ = model.sample_pairs(t, n, np.random.default_rng([seed, t]))
            out += model.weights[t] * float(np.mean(LOSSES[loss][0](np.sum((x @ W.T) * (xp @ W.T), axis=1))))
    return float(out)


def pca_identity(h, pR, pU):
    r"""Both sides of Thm 7.1 on a finite table: the linear-loss contrastive loss is PCA on E[phi | z_R].

    .. math:: \mathbb E\big[-\phi(x)^\top(\phi(x^+) - \phi(x^-))\big] = -\mathbb E\lVert\phi_{z_R} - \phi_0\rVert^2,
              \qquad \phi_{z_R} = \mathbb E[\phi(x)\mid z_R],\ \phi_0 = \mathbb E\phi(x)

    Parameters
    ----------
    h : ndarray of shape (n_R, n_U, k)
        phi(g(z_R, z_U)) for every pair of values.
    pR : ndarray of shape (n_R,)
        Law of z_R (non-negative, sums to 1).
    pU : ndarray of shape (n_U,)
        Law of z_U (non-negative, sums to 1); z^+ keeps z_R and redraws z_U, x^- is an independent copy.

    Returns
    -------
    lhs : float
        The contrastive loss by full enumeration of (z_R, z_U, z_U^+, z_R^-, z_U^-).
    rhs : float
        Minus the variance of the smoothed representation.

    Notes
    -----
    Regime: any phi and g (the identity is exact), finite supports.

    References
    ----------
    .. [src] [Shi24, Theorem 7.1 = Theorem F.1].

    Examples
    --------
    >>> lhs, rhs = pca_identity(np.arange(12.0).reshape(2, 3, 2), np.array([0.3, 0.7]), np.ones(3) / 3)
    >>> bool(abs(lhs - rhs) < 1e-12)
    True
    """
    owner = "contrastive.pca_identity"
    h = check(owner, "h", h, FiniteArray(3))
    pR = check(owner, "pR", pR, FiniteArray(1, (h.shape[0],)))
    pU = check(owner, "pU", pU, FiniteArray(1, (h.shape[1],)))
    for name, p in (("pR", pR), ("pU", pU)):
        if not (np.all(p >= 0) and abs(p.sum() - 1) <= 1e-12):  # 1e-12: float round-off of a probability vector
            raise InvalidParameterError(f"The {name!r} parameter of {owner} must be a probability vector. "
                                        f"Got {p!r} instead.")
    positive = np.einsum("a,u,v,auk,avk->", pR, pU, pU, h, h)
    negative = np.einsum("a,u,b,v,auk,bvk->", pR, pU, pR, pU, h, h)
    phiR = np.einsum("u,auk->ak", pU, h)
    return float(negative - positive), float(-np.sum(pR * np.sum((phiR - pR @ phiR) ** 2, axis=1)))
