"""Probe norms, Rademacher complexities and risk bounds of linear probing ([Shi24] ch. 7, App. F.2;
docs/contrastive.md).

Public names
------------
:func:`probe_norm` (F.68), :func:`rademacher_exact` (derived), :func:`rademacher_jensen` (F.75), :func:`risk_bound`
(Lemma F.5 with Props 7.3/7.4), :func:`leading_term_ratio` (universal / specific), :func:`cr_bound_factor`,
:func:`task_specific_floor` (Prop. 7.4's floor on the other tasks, in closed form; derived).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import gammaln, roots_jacobi

from ..._validate import Integer, Interval, InvalidParameterError, as_int, check

__all__ = ["probe_norm", "rademacher_exact", "rademacher_jensen", "risk_bound", "leading_term_ratio",
           "cr_bound_factor", "task_specific_floor"]

_POS = Interval(0.0, np.inf, "neither")
_NONNEG = Interval(0.0, np.inf)


def probe_norm(alpha, alpha_t, v1, v2):
    r"""Norm B_{phi,t} of the smallest exact probe u with y = u^T phi(x) on the representation (alpha, alpha_t).

    .. math:: B_{\phi^*,t} = \sqrt{\frac{v_{t,1}}{\alpha} + \frac{v_{t,2}}{\alpha_t}},\qquad
              v_{t,1} = \lVert u^*_{t,S}\rVert^2,\ v_{t,2} = \lVert u^*_{t,P_t}\rVert^2

    Parameters
    ----------
    alpha, alpha_t : float
        Squared column norms on S and P_t, >= 0 (a zero norm costs nothing where the target has no weight, and
        makes the probe infinite where it has).
    v1, v2 : float
        Target weights on S and P_t, >= 0.

    Returns
    -------
    float

    Notes
    -----
    Regime: y and phi linear in the same z_{R_t}, so the sigmas do not enter; the task-specific representation
    (alpha = alpha_t = 1) gives ||u*||.

    References
    ----------
    .. [src] [Shi24, proof of Lemma F.5, (F.64)-(F.68)].

    Examples
    --------
    >>> probe_norm(1.0, 0.25, 0.5, 0.5)  # sqrt(0.5 + 2)
    1.5811388300841898
    """
    owner = "contrastive.probe_norm"
    alpha, alpha_t = check(owner, "alpha", alpha, _NONNEG), check(owner, "alpha_t", alpha_t, _NONNEG)
    v1, v2 = check(owner, "v1", v1, _NONNEG), check(owner, "v2", v2, _NONNEG)
    terms = [0.0 if v == 0 else (np.inf if a == 0 else v / a) for a, v in ((alpha, v1), (alpha_t, v2))]
    return float(np.sqrt(sum(terms)))


@lru_cache(maxsize=64)
def _beta_rule(s, q, n):
    """Gauss-Jacobi nodes (on [0, 1]) and normalised weights of Beta(s/2, q/2)."""
    x, w = roots_jacobi(n, q / 2 - 1, s / 2 - 1)
    return (1 + x) / 2, w / w.sum()


def _mean_sqrt_chi2(k):
    """E sqrt(chi^2_k) = sqrt 2 Gamma((k+1)/2) / Gamma(k/2)."""
    return float(np.sqrt(2) * np.exp(gammaln((k + 1) / 2) - gammaln(k / 2)))


def _args(owner, alpha, alpha_t, s, r, m, B, sigma_S, sigma_R):
    s, r = as_int(owner, "s", s, 1), as_int(owner, "r", r, 1)
    if s > r:
        raise InvalidParameterError(f"The 's' parameter of {owner} must be an int in [1, r] (r = {r}). "
                                    f"Got {s} instead.")
    return (check(owner, "alpha", alpha, _NONNEG) * check(owner, "sigma_S", sigma_S, _POS) ** 2,
            check(owner, "alpha_t", alpha_t, _NONNEG) * check(owner, "sigma_R", sigma_R, _POS) ** 2,
            s, r - s, as_int(owner, "m", m, 1), check(owner, "B", B, _NONNEG))


def rademacher_exact(alpha, alpha_t, s, r, m, B, sigma_S=1.0, sigma_R=1.0):
    r"""Exact Rademacher complexity of the probe class {u^T phi*(x) : ||u|| <= B} on m Gaussian samples of task t.

    .. math:: \mathcal R_m = \frac{B}{\sqrt m}\,\mathbb E\sqrt{a Z + b Z_1}
              = \frac{B}{\sqrt m}\,\mathbb E\sqrt{\chi^2_{r}}\ \mathbb E\sqrt{b + (a - b)\,\mathcal B},\quad
              a = \alpha\sigma_S^2,\ b = \alpha_t\sigma_R^2,\
              \mathcal B\sim\mathrm{Beta}\big(\tfrac s2, \tfrac{r-s}2\big)

    Parameters
    ----------
    alpha, alpha_t : float
        Squared column norms on S and P_t, >= 0.
    s, r : int
        Shared and per-task features, 1 <= s <= r.
    m : int
        Number of labelled samples (>= 1).
    B : float
        Probe norm bound, >= 0.
    sigma_S, sigma_R : float
        Feature standard deviations of task t, > 0.

    Returns
    -------
    float

    Notes
    -----
    Regime: Gaussian z_{R_t}, so sum_i eps_i z^(i) ~ N(0, m Sigma) for any signs eps. Z + Z_1 ~ chi^2_r is
    independent of Z / (Z + Z_1) ~ Beta(s/2, (r - s)/2) (derived), so the 2-D integral is a closed form times a
    Gauss-Jacobi rule (80 nodes) of a smooth function; a = b, a = 0 or b = 0 are closed forms.

    References
    ----------
    .. [src] derived in docs/contrastive.md from [Shi24, (F.72)-(F.75)].

    Examples
    --------
    >>> exact, jensen = rademacher_exact(1.0, 0.25, 3, 6, 25, 1.0), rademacher_jensen(1.0, 0.25, 3, 6, 25, 1.0)
    >>> round(exact / jensen, 4)  # reference: 0.891716 / 0.94074
    0.9479
    """
    a, b, s, q, m, B = _args("contrastive.rademacher_exact", alpha, alpha_t, s, r, m, B, sigma_S, sigma_R)
    if q == 0 or b == a or b == 0:
        val = np.sqrt(a) * _mean_sqrt_chi2(s) if q == 0 or b == 0 else np.sqrt(a) * _mean_sqrt_chi2(s + q)
    elif a == 0:
        val = np.sqrt(b) * _mean_sqrt_chi2(q)
    else:
        x, w = _beta_rule(s, q, 80)
        val = _mean_sqrt_chi2(s + q) * float(w @ np.sqrt(b + (a - b) * x))
    return float(B / np.sqrt(m) * val)


def rademacher_jensen(alpha, alpha_t, s, r, m, B, sigma_S=1.0, sigma_R=1.0):
    r"""Jensen upper bound of the Rademacher complexity (the paper's leading term).

    .. math:: \mathcal R_m \le B\sqrt{\frac{s\alpha\sigma_S^2 + (r - s)\alpha_t\sigma_R^2}{m}}

    Parameters
    ----------
    alpha, alpha_t : float
        Squared column norms on S and P_t, >= 0.
    s, r : int
        Shared and per-task features, 1 <= s <= r.
    m : int
        Number of labelled samples (>= 1).
    B : float
        Probe norm bound, >= 0.
    sigma_S, sigma_R : float
        Feature standard deviations of task t, > 0.

    Returns
    -------
    float

    Notes
    -----
    Regime: as :func:`rademacher_exact`; the ratio exact / Jensen -> 1 as r -> inf (concentration of chi^2_r).
    The paper writes X_{t,j} = alpha sum_i z_j (F.75); it is sqrt(alpha) sum_i z_j (its variance m alpha sigma^2 is
    right).

    References
    ----------
    .. [src] [Shi24, (F.72)-(F.75), (F.91)-(F.93)].

    Examples
    --------
    >>> rademacher_jensen(1.0, 0.25, 3, 6, 25, 2.0)  # 2 sqrt((3 + 3/4) / 25)
    0.7745966692414834
    """
    a, b, s, q, m, B = _args("contrastive.rademacher_jensen", alpha, alpha_t, s, r, m, B, sigma_S, sigma_R)
    return float(B * np.sqrt((s * a + q * b) / m))


def risk_bound(alpha, alpha_t, s, r, m, v1, v2, L=1.0, delta=0.05, O_const=0.0):
    r"""Risk bound of linear probing on the representation (alpha, alpha_t) (Lemma F.5 with Props 7.3/7.4).

    .. math:: \mathbb E\,\ell_c \le 4L\sqrt{\tfrac1m\Big(\tfrac{v_1}{\alpha}+\tfrac{v_2}{\alpha_t}\Big)}
              \Big(\sqrt{s\alpha + (r-s)\alpha_t} + C\sqrt{\tfrac{r}{s\alpha + (r-s)\alpha_t}}\Big)
              + 8\sqrt{\tfrac{2\ln(4/\delta)}{m}}

    Parameters
    ----------
    alpha, alpha_t : float
        Squared column norms on S and P_t, > 0 (universal: 1, 1/T; specific: 1, 1).
    s, r : int
        Shared and per-task features, 1 <= s <= r.
    m : int
        Number of labelled samples (>= 1).
    v1, v2 : float
        Target weights on S and P_t, >= 0.
    L : float
        Lipschitz constant of ell_c, > 0.
    delta : float
        Failure probability, in (0, 1).
    O_const : float
        The constant C of the paper's O(.) term, >= 0 (unspecified in the paper; 0 gives the leading term).

    Returns
    -------
    float

    Notes
    -----
    Regime: with probability 1 - delta over the m samples; unit sigmas. Only the leading term has known constants,
    so only leading terms should be compared. Prop. 7.4 (specific) is alpha = alpha_t = 1 with C = 0.

    References
    ----------
    .. [src] [Shi24, Lemma F.5, Propositions 7.3, 7.4].

    Examples
    --------
    >>> x = risk_bound(1.0, 1.0, 5, 10, 100, 0.5, 0.5, delta=1.0)  # specific: 4 sqrt(r/m) ||u*|| + 8 sqrt(2 ln 4 / m)
    >>> bool(abs(x - (4 * np.sqrt(10 / 100) + 8 * np.sqrt(2 * np.log(4) / 100))) < 1e-12)
    True
    """
    owner = "contrastive.risk_bound"
    a, b, s, q, m, _ = _args(owner, alpha, alpha_t, s, r, m, 1.0, 1.0, 1.0)
    if not (a > 0 and b > 0):
        raise InvalidParameterError(f"The 'alpha' and 'alpha_t' parameters of {owner} must be > 0. "
                                    f"Got {alpha!r}, {alpha_t!r} instead.")
    L = check(owner, "L", L, _POS)
    delta = check(owner, "delta", delta, Interval(0, 1, "right"))
    C = check(owner, "O_const", O_const, _NONNEG)
    budget = s * a + q * b
    lead = 4 * L * probe_norm(a, b, v1, v2) / np.sqrt(m) * (np.sqrt(budget) + C * np.sqrt((s + q) / budget))
    return float(lead + 8 * np.sqrt(2 * np.log(4 / delta) / m))


def leading_term_ratio(v1, v2, s, r, n_tasks):
    r"""Ratio of the leading risk terms, universal (alpha = 1, beta = 1/T) over task-specific (alpha = beta = 1).

    .. math:: \frac{\sqrt{(v_1 + T v_2)(s + (r - s)/T)}}{\sqrt{r(v_1 + v_2)}}

    Parameters
    ----------
    v1, v2 : float
        Target weights on S and P_t, >= 0, v1 + v2 > 0.
    s, r : int
        Shared and per-task features, 1 <= s <= r.
    n_tasks : int
        Number T of tasks (>= 1).

    Returns
    -------
    float

    Notes
    -----
    Regime: even mixture. With v1 = v2 and r = 2s it is (T + 1) / (2 sqrt T) >= 1 (equality iff T = 1); it is not
    always >= 1: v2 = 0 favours the universal representation (derived).

    References
    ----------
    .. [src] derived in docs/contrastive.md from [Shi24, Propositions 7.3-7.4, App. F.2.3].

    Examples
    --------
    >>> leading_term_ratio(0.5, 0.5, 5, 10, 4)  # (T + 1) / (2 sqrt T)
    1.25
    """
    owner = "contrastive.leading_term_ratio"
    v1, v2 = check(owner, "v1", v1, _NONNEG), check(owner, "v2", v2, _NONNEG)
    if not v1 + v2 > 0:
        raise InvalidParameterError(f"The 'v2' parameter of {owner} must make v1 + v2 > 0. Got {v2!r} instead.")
    _, _, s, q, _, _ = _args(owner, 1.0, 1.0, s, r, 1, 1.0, 1.0, 1.0)
    T = as_int(owner, "n_tasks", n_tasks, 1)
    return float(np.sqrt((v1 + T * v2) * (s + q / T) / ((s + q) * (v1 + v2))))


def cr_bound_factor(alpha, beta):
    r"""The factor of the fine-tuned error bound, which falls as beta rises from 1/T towards alpha.

    .. math:: O\Big(L\sqrt{\tfrac{r\lVert u_t^*\rVert^2}{m}\Big(2 + \tfrac\alpha\beta + \tfrac\beta\alpha\Big)}\Big)

    Parameters
    ----------
    alpha, beta : float
        Squared column norms on S and P_t, > 0.

    Returns
    -------
    float
        2 + alpha / beta + beta / alpha (>= 4, equal at beta = alpha).

    Notes
    -----
    Regime: r = 2s, v1 = v2 (Prop. F.9's setting). The paper prints ||u_t^2||; it is ||u_t^*||.

    References
    ----------
    .. [src] [Shi24, App. F.2.4] (after Proposition F.9).

    Examples
    --------
    >>> cr_bound_factor(1.0, 0.25), cr_bound_factor(1.0, 1.0)
    (6.25, 4.0)
    """
    owner = "contrastive.cr_bound_factor"
    alpha, beta = check(owner, "alpha", alpha, _POS), check(owner, "beta", beta, _POS)
    return float(2 + alpha / beta + beta / alpha)


def task_specific_floor(problem, task, n_labelled=None):
    r"""Excess risk on task i of the least-squares probe on the task-specific representation phi_t^* (Prop. 7.4).

    .. math:: \varepsilon_\infty = \min_u\mathbb E_{\mathcal D_i}\big(u^\top\phi_t^*(x) - y\big)^2 - \sigma^2
              = \sigma_{R,i}^2\,v_{i,2}\ (i\ne t),\ 0\ (i = t);\qquad
              \mathbb E\,\varepsilon_m = \varepsilon_\infty + (\varepsilon_\infty + \sigma^2)\,\frac{p}{m - p - 1},
              \quad p = s\ (i\ne t),\ r\ (i = t)

    Parameters
    ----------
    problem : Problem
        The model, its target task t (the representation's task), the target weights (v_{i,2} = ``v2`` for every
        task: u* spreads the same weights on S and P_i), the label noise sigma and sigma_R.
    task : int
        The task i the probe is trained and evaluated on, in [0, n_tasks - 1] (i = t: the representation's own).
    n_labelled : int or None
        Labelled samples m of the probe, m >= p + 2; None gives the floor itself (m -> inf).

    Returns
    -------
    float
        The excess risk over the noise sigma^2 (the risk is this plus sigma^2).

    Notes
    -----
    Regime: phi_t^* = Q [z_{R_t}; 0] exactly (Prop. 7.4: no weight on the other tasks' private features nor on U), so on
    task i != t it sees z_S only, and the residual y - (u_{i,S}^*)^T z_S = (u_{i,P_i}^*)^T z_{P_i} + sigma eps is
    Gaussian with variance sigma_{R,i}^2 v_{i,2} + sigma^2, independent of z_S (derived in docs/contrastive.md). The
    floor bounds every linear predictor on phi_t^*; the m-sample term is that of unconstrained least squares with
    Gaussian design (E tr(Sigma (Z^T Z)^{-1}) = p / (m - p - 1)), which the norm-bounded probe ||u|| <= ||u*|| of
    (7.8) matches while the bound does not bind (m >= 100 at unit scales). With unit sigma_R and noiseless labels the
    floor is v_{i,2}. An approximate phi_t (trained: the other tasks' private columns small, not 0, e.g. 1e-3 to
    1e-6 after 3000 to 6000 projected SGD steps) keeps the floor reliably only under the norm bound: unconstrained
    least squares rescales those columns, as far as its rank cutoff lets it, and can beat it. Exact (closed form).

    References
    ----------
    .. [src] [Shi24, Proposition 7.4 = Proposition F.7]; the closed form derived in docs/contrastive.md.

    Examples
    --------
    >>> from popdyn.models.contrastive import Problem
    >>> problem = Problem.tradeoff(n_tasks=3, s=2, r=4, v1=0.5, v2=0.5, noise=0.5)
    >>> task_specific_floor(problem, 1), round(task_specific_floor(problem, 1, 100), 6)  # v2; + 0.75 * 2 / 97
    (0.5, 0.515464)
    """
    owner = "contrastive.task_specific_floor"
    i = check(owner, "task", task, Integer(0, problem.n_tasks - 1))
    floor = 0.0 if i == problem.t else float(problem.sigma_R[i] ** 2 * problem.v2)
    if n_labelled is None:
        return floor
    p = problem.r if i == problem.t else problem.s
    m = as_int(owner, "n_labelled", n_labelled, low=p + 2)
    return float(floor + (floor + problem.noise ** 2) * p / (m - p - 1))
