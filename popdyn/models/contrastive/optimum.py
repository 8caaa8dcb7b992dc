"""Optimal linear representations and contrastive-regularised fine-tuning ([Shi24] ch. 7, App. F.2;
docs/contrastive.md).

Public names
------------
:func:`optimal_representation` (the convex program of Lemma F.3), :func:`optimal_representation_even` (Prop. 7.3),
:func:`representation_matrix` (W from column norms), :func:`project_spectral_frobenius` (the projection of projected
SGD), :func:`cr_finetune_beta` (Prop. F.9, corrected and paper).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, minimize, minimize_scalar

from ..._validate import FiniteArray, Interval, InvalidParameterError, Options, as_int, check
from .loss import _loss, _reduced
from .problem import MultiTaskLinearModel

__all__ = ["optimal_representation", "optimal_representation_even", "representation_matrix",
           "project_spectral_frobenius", "cr_finetune_beta"]

_CONVENTIONS = Options(("corrected", "paper"))


def representation_matrix(alpha, alphas, model):
    r"""The representation W = [A, 0] in R^{k x d}, A diagonal: sqrt(alpha) on S, sqrt(alpha_t) on P_t (Q = M = I).

    .. math:: W^* = [QA^*, 0]M^{-1},\qquad A^*_{jj} = \sqrt\alpha\ (j\in S),\quad \sqrt{\alpha_t}\ (j\in P_t)

    Parameters
    ----------
    alpha : float
        Squared column norm on S, in [0, 1].
    alphas : float or ndarray of shape (T,)
        Squared column norms on each P_t, in [0, 1].
    model : MultiTaskLinearModel

    Returns
    -------
    ndarray of shape (k, d)

    Notes
    -----
    Regime: one member of the optimal family; any W with the same column norms, orthogonal columns within each R_t and
    ||W|| <= 1 has the same loss (cross-task Gram blocks are free; docs/contrastive.md).

    References
    ----------
    .. [src] [Shi24, Lemma F.3, (F.43)-(F.44)].

    Examples
    --------
    >>> W = representation_matrix(1.0, 0.25, MultiTaskLinearModel(2, 1, 3, 6))
    >>> np.round(np.diag(W), 3).tolist(), W.shape
    ([1.0, 0.5, 0.5, 0.5, 0.5], (5, 6))
    """
    owner = "contrastive.representation_matrix"
    alpha = check(owner, "alpha", alpha, Interval(0, 1))
    a = np.broadcast_to(check(owner, "alphas", alphas, FiniteArray(np.ndim(alphas))), (model.n_tasks,))
    if not np.all((a >= 0) & (a <= 1)):
        raise InvalidParameterError(f"The 'alphas' parameter of {owner} must lie in [0, 1]. Got {alphas!r} instead.")
    diag = np.concatenate([np.full(model.s, np.sqrt(alpha))] + [np.full(model.r - model.s, np.sqrt(v)) for v in a])
    W = np.zeros((model.k, model.d))
    W[np.arange(model.k), np.arange(model.k)] = diag
    return W


def optimal_representation(model, loss="logistic"):
    r"""Optimal linear representation of the mixture: the convex program of Lemma F.3 in T + 1 scalars.

    .. math:: \min_{\alpha,\alpha_t\in[0,1]}\ \sum_t w_t\,\mathbb E\,\ell(\alpha\sigma_{S,t}^2Z
              + \alpha_t\sigma_{R,t}^2Z_t)\quad\text{s.t.}\quad \alpha s + (r - s)\sum_t\alpha_t\le r

    Parameters
    ----------
    model : MultiTaskLinearModel
    loss : {"logistic", "exp", "linear"}

    Returns
    -------
    alpha : float
    alphas : ndarray of shape (T,)
    W_star : ndarray of shape (k, d)
        :func:`representation_matrix` of the optimum.

    Notes
    -----
    Regime: Phi = {W : ||W|| <= 1, ||W||_F <= sqrt r}. SLSQP with the exact quadrature gradient, started at the
    feasible point (1, w); the objective is convex, so the KKT point is global (tests: brute-force grids and the
    1-D even program). With r = s there are no private features and alphas = 1 by convention.

    References
    ----------
    .. [src] [Shi24, Lemma F.3, (F.40)-(F.44)].

    Examples
    --------
    >>> alpha, alphas, W = optimal_representation(MultiTaskLinearModel(3, 5, 10, 20))
    >>> round(alpha, 6), np.round(alphas, 6).tolist()  # Prop. 7.3: alpha = 1, beta = 1/T
    (1.0, [0.333333, 0.333333, 0.333333])
    """
    owner = "contrastive.optimal_representation"
    if not isinstance(model, MultiTaskLinearModel):
        raise InvalidParameterError(f"The 'model' parameter of {owner} must be a MultiTaskLinearModel. "
                                    f"Got {model!r} instead.")
    _loss(owner, loss)
    T, s, q = model.n_tasks, model.s, model.r - model.s
    if q == 0:
        return 1.0, np.ones(T), representation_matrix(1.0, np.ones(T), model)
    fun = lambda v: _reduced(v[0], v[1:], model, loss)  # noqa: E731
    budget = LinearConstraint(np.concatenate([[s], np.full(T, q)])[None, :], -np.inf, model.r)
    res = minimize(fun, np.concatenate([[1.0], model.weights]), jac=True, method="SLSQP",
                   bounds=Bounds(0.0, 1.0), constraints=[budget], options={"ftol": 1e-15, "maxiter": 500})
    v = np.clip(res.x, 0.0, 1.0)
    return float(v[0]), v[1:], representation_matrix(float(v[0]), v[1:], model)


def optimal_representation_even(n_tasks, s, r, loss="logistic"):
    r"""Optimal (alpha, beta) of the even mixture (sigmas 1, w_t = 1/T): a 1-D search on the binding budget (Prop. 7.3).

    .. math:: \min_{\alpha\in[\alpha_-, 1]}\ \mathbb E\,\ell(\alpha Z + \beta(\alpha) Z_1),\quad
              \beta(\alpha) = \min\Big(1, \frac{r - \alpha s}{T(r - s)}\Big),\quad
              \alpha_- = \max\Big(0, \frac{r - T(r - s)}{s}\Big)

    Parameters
    ----------
    n_tasks : int
        Number T of tasks (>= 1).
    s : int
        Shared features, 1 <= s <= r.
    r : int
        Features per task.
    loss : {"logistic", "exp", "linear"}

    Returns
    -------
    alpha, beta : float

    Notes
    -----
    Regime: even mixture; by Jensen all alpha_t are equal, and the budget binds for a strictly decreasing loss.
    Bounded Brent search (xatol 1e-12) with the end alpha = 1 compared explicitly. Prop. F.8 proves (1, 1/T) for
    r = 2s; numerically the same optimum holds for every (s, r, T) tried (see the docs); for the exp loss a KKT argument
    proves it. r = s returns beta = 1 by convention (no private features).

    References
    ----------
    .. [src] [Shi24, Proposition 7.3 = F.6, Proposition F.8].

    Examples
    --------
    >>> optimal_representation_even(1, 3, 6)  # T = 1: the whole budget, alpha = beta = 1
    (1.0, 1.0)
    """
    owner = "contrastive.optimal_representation_even"
    T, s, r = as_int(owner, "n_tasks", n_tasks, 1), as_int(owner, "s", s, 1), as_int(owner, "r", r, 1)
    if s > r:
        raise InvalidParameterError(f"The 's' parameter of {owner} must be an int in [1, r] (r = {r}). "
                                    f"Got {s} instead.")
    _loss(owner, loss)
    if r == s:
        return 1.0, 1.0
    model = MultiTaskLinearModel(1, s, r, r)
    beta = lambda a: min(1.0, (r - a * s) / (T * (r - s)))  # noqa: E731
    f = lambda a: _reduced(a, np.array([beta(a)]), model, loss)[0]  # noqa: E731
    lo = max(0.0, (r - T * (r - s)) / s)
    if lo >= 1.0:
        return 1.0, beta(1.0)
    res = minimize_scalar(f, bounds=(lo, 1.0), method="bounded", options={"xatol": 1e-12})
    a = 1.0 if f(1.0) <= res.fun else float(res.x)
    return a, beta(a)


def project_spectral_frobenius(W, r):
    r"""Euclidean projection of W onto {||W|| <= 1, ||W||_F <= sqrt r}: a projection of the singular values.

    .. math:: W = U\,\mathrm{diag}(\sigma)V^\top\ \mapsto\ U\,\mathrm{diag}(\sigma')V^\top,\quad
              \sigma'_i = \min\Big(1, \frac{\sigma_i}{1+\mu}\Big),\quad
              \mu = \min\{\mu\ge0:\ \textstyle\sum\sigma'^2_i\le r\}

    Parameters
    ----------
    W : ndarray of shape (k, d)
    r : float
        Frobenius budget, > 0.

    Returns
    -------
    ndarray of shape (k, d)

    Notes
    -----
    Regime: any W. The constraint set is unitarily invariant, so the projection acts on singular values (von Neumann);
    there it is the projection onto the box [0, 1] cut by the ball of radius sqrt r, whose KKT conditions give the
    form above. mu by bisection to float precision. Not clip-then-rescale.

    References
    ----------
    .. [src] derived in docs/contrastive.md.

    Examples
    --------
    >>> P = project_spectral_frobenius(np.diag([3.0, 2.0, 0.5]), 1.5)
    >>> sv = np.diag(P); np.round(sv, 6).tolist(), round(float(sv @ sv), 12)  # one capped at 1, then the budget binds
    ([1.0, 0.685994, 0.171499], 1.5)
    """
    owner = "contrastive.project_spectral_frobenius"
    W = check(owner, "W", W, FiniteArray(2))
    r = check(owner, "r", r, Interval(0, np.inf, "neither"))
    U, sv, Vt = np.linalg.svd(W, full_matrices=False)
    proj = lambda mu: np.minimum(1.0, sv / (1.0 + mu))  # noqa: E731
    if np.sum(proj(0.0) ** 2) > r:
        lo, hi = 0.0, max(1.0, float(np.sqrt(np.sum(sv**2) / r)))
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if np.sum(proj(mid) ** 2) > r else (lo, mid)
            if hi - lo <= 1e-16 * hi:
                break
        sv_new = proj(hi)
    else:
        sv_new = proj(0.0)
    return (U * sv_new) @ Vt


def cr_finetune_beta(n_tasks, s, gamma, convention="corrected"):
    r"""beta_CR after contrastive-regularised fine-tuning of the universal representation within Frobenius radius gamma.

    .. math:: \text{paper: }\sqrt{\beta_{CR}} = \min\big(1, T^{-1/2} + \gamma/\sqrt s\big);\qquad
              \text{corrected: }\sqrt{\beta_{CR}} = \cos\big(\max(0,\
              \theta_0 - 2\arcsin\min(1, \gamma/(2\sqrt s)))\big),
              \ \theta_0 = \arccos T^{-1/2}

    Parameters
    ----------
    n_tasks : int
        Number T of pre-training tasks (>= 1).
    s : int
        Shared features (= private features per task, r = 2s), >= 1. For r != 2s pass the private count r - s: with
        the even optimum (1, 1/T) the same chord argument holds with gamma / sqrt(r - s) (derived).
    gamma : float
        Frobenius radius ||W - W*||_F <= gamma, >= 0.
    convention : {"corrected", "paper"}
        "corrected" keeps the constraint ||W||_F <= sqrt r, which (F.105) drops; "paper" is Prop. F.9 as printed.

    Returns
    -------
    float
        beta_CR, the squared column norm on the target task's private features (alpha stays 1).

    Notes
    -----
    Regime: r = 2s, start W* = (alpha, beta) = (1, 1/T), fine-tuning on the target task's contrastive loss with
    ||W|| <= 1. The budget ||W*||_F^2 = s + T s / T = r already binds at W*, so raising the target's private norms
    b = sqrt(beta) needs the other tasks' private norms c to shrink: on the circle b^2 + (T - 1) c^2 = 1 (scaled by
    s) the start is at angle theta_0 and the move is a chord of length gamma / sqrt s (derived; the cheapest shrink
    spreads evenly over the (T - 1) s other columns, and lowering alpha below 1 only costs loss). The paper's
    beta is larger for every 0 < gamma and T >= 2 (docs/errata.md).

    References
    ----------
    .. [src] [Shi24, Proposition F.9, (F.104)-(F.112)]; derived (corrected) in docs/contrastive.md.

    Examples
    --------
    >>> round(cr_finetune_beta(4, 5, 0.0), 12), cr_finetune_beta(1, 5, 0.3)  # gamma = 0 keeps 1/T; T = 1 is 1
    (0.25, 1.0)
    """
    owner = "contrastive.cr_finetune_beta"
    T, s = as_int(owner, "n_tasks", n_tasks, 1), as_int(owner, "s", s, 1)
    gamma = check(owner, "gamma", gamma, Interval(0, np.inf))
    convention = check(owner, "convention", convention, _CONVENTIONS)
    g = gamma / np.sqrt(s)
    if convention == "paper":
        return float(min(1.0, T**-0.5 + g) ** 2)
    return _chord_beta(1.0 / T, g)


def _chord_beta(beta0, g):
    """beta reached from the private norm sqrt(beta0) by a chord of length g on the unit budget circle (derived)."""
    theta0 = np.arccos(np.sqrt(beta0))
    return float(np.cos(max(0.0, theta0 - 2 * np.arcsin(min(1.0, g / 2)))) ** 2)
