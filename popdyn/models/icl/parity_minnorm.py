"""Sparse parity in context: numerical minimum-norm and regularised heads (docs/icl.md).

Thm 5.5.1 calls its construction the optimum of ``lim_{lambda -> 0+} L^lambda``. This module computes the
optima the theorem speaks of, for diagonal heads ``V^(n)`` (the paper's form) or full heads, in the N -> inf
limit of :mod:`popdyn.models.icl.parity`:

* minimum loss, then minimum norm (the limit of the argmins of ``L^lambda``, lambda -> 0+): when m >= 4 heads
  the minimum loss is 0 (``four_head_counterexample``), and the problem is
  ``min sum_n ||V^(n)||_F^2`` subject to ``y_q g >= 1`` on every (task, pattern) of positive probability;
* the regularised loss ``L(a, V) + lambda sum_n ||V^(n)||_F^2`` at a fixed lambda > 0.

Both are non-convex (ReLU heads, hinge), but convex once the activation pattern of every head on every query
is fixed: the heads' outputs are then linear in V, and the problem is a quadratic programme over a polyhedral
region. :func:`fit_heads` runs a smoothed search (softplus for ReLU and hinge, beta annealed,
L-BFGS-B, ``a in [-1, 1]^m``) from several seeded restarts, then solves each restart's region QP exactly and
moves to a neighbouring region while a tight activation constraint has a positive multiplier (each move keeps
the current point feasible, so the objective never rises). :func:`four_head_min_norm` enumerates every
region for m = 4 diagonal heads (the chambers of the D_d reflection arrangement, up to the problem's
symmetries) and so returns the certified global minimum norm of a zero-loss 4-head network.

Public names
------------
:class:`HeadFit`, :func:`fit_heads`, :func:`four_head_min_norm`, :func:`query_design`
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog, minimize, nnls
from scipy.special import expit

from ..._validate import Interval, InvalidParameterError, Options, as_int, check
from .parity import _check_problem, pattern_probs, task_sets
from .problem import ParityProblem  # noqa: F401 (doctests)

__all__ = ["HeadFit", "query_design", "fit_heads", "four_head_min_norm"]

_FEAS_TOL = 1e-9      # a constraint counts as tight (active) within this slack (relative to its scale 1)
_LDP_FEAS = 1e-10     # a least-distance solution counts as feasible when G x >= h - 1e-10 (row scale 0.2-1)
_MOVE_TOL = 1e-9      # an activation constraint is crossed when its multiplier exceeds this
_MAX_MOVES = 60       # region moves per restart
_SRC = "[Shi24, Section 5.5, Theorem 5.5.1, App. D.3.1]"


@dataclass(frozen=True, eq=False)
class HeadFit:
    """Heads found by :func:`fit_heads` or :func:`four_head_min_norm`.

    Attributes
    ----------
    a : ndarray of shape (m,)
        Output weights (``+-1``: with the norm on V only, ``|a_n| = 1`` is optimal).
    V : ndarray of shape (m, d) or (m, d, d)
        Head diagonals, or full heads (``full=True``).
    loss : float
        Exact N -> inf population hinge loss, the weighted sum of :func:`query_design` (equal to
        :func:`popdyn.models.icl.population_hinge` when S2 is not empty).
    norm : float
        ``sum_n ||V^(n)||_F^2``.
    objective : float
        ``norm`` for the minimum-norm problem; ``loss + lam * norm`` for the regularised one.
    min_margin : float
        Smallest ``y_q g`` over the queries of positive probability.
    kkt_residual : float
        Stationarity residual of the final region QP, ``||grad f - G_act^T mu|| / max(1, ||grad f||)`` with
        ``mu >= 0`` fitted by NNLS on the tight constraints; 0 at an exact KKT point.
    runs : ndarray of shape (restarts, 3)
        Per restart (or per enumerated region): objective, norm, loss after polishing; NaN where the region QP
        was infeasible.
    """
    a: np.ndarray
    V: np.ndarray
    loss: float
    norm: float
    objective: float
    min_margin: float
    kkt_residual: float
    runs: np.ndarray


def query_design(problem, *, full=False):
    r"""Queries of the N -> inf parity loss as a design: features, labels and probabilities.

    Every pre-activation is linear in the head: ``2 gamma <V^(n), x_p>``, with

    .. math:: x_p=f_ie_i+f_je_j\ \text{(diagonal heads)},\qquad x_p=\mathrm{vec}\big((e_i+e_j)\phi^\top\big)
              \ \text{(full heads)},\qquad \mathcal L=\sum_pw_p\Big[1-y_p\sum_na_n
              \mathrm{ReLU}\big(2\gamma\langle V^{(n)},x_p\rangle\big)\Big]_+

    Parameters
    ----------
    problem : ParityProblem
    full : bool
        Full heads (features of length d^2, the other d - 2 coordinates of phi enumerated; d <= 10) instead of
        diagonals (length d).

    Returns
    -------
    (X, y, w) : ndarrays of shape (P, D), (P,), (P,)
        Distinct queries (the ordered tasks (i, j) and (j, i) give the same query and are merged), labels
        ``f_i f_j`` and probabilities (summing to 1; 0 for S2 when pT = 0).

    Notes
    -----
    Accuracy: features and labels exact; weights within 4 eps relative of the exact rationals, summing to 1 within d^2 eps; measured 0.14 of it (tested (tests/test_accuracy_icl.py)).
    Regime: N -> inf (B.4.1). An independent re-statement of :func:`popdyn.models.icl.population_hinge`,
    which the tests hold it against. When S2 is empty (k = d) every task is from S1 whatever pT (as in the
    parity samplers); ``population_hinge`` then weights the S1 loss by 1 - pT.

    References
    ----------
    .. [src] [Shi24, Section 5.5 (loss), proof of Theorem 5.5.1 (App. D.3.1)].

    Examples
    --------
    >>> X, y, w = query_design(ParityProblem.paper(1, 2))
    >>> X.shape, float(w.sum())
    ((24, 4), 1.0)
    """
    problem = _check_problem(problem, "icl.query_design")
    full = check("icl.query_design", "full", full, Options((True, False)))
    d = problem.d
    if full and d > 10:
        raise InvalidParameterError(
            f"The 'problem' parameter of icl.query_design with full=True must have d <= 10. Got d = {d} instead.")
    S1, S2 = task_sets(d, problem.k)
    pats, probs = pattern_probs(problem.gamma)
    p2 = problem.pT / len(S2) if len(S2) else 0.0
    p1 = (1 - problem.pT) / len(S1) if len(S2) else 1.0 / len(S1)
    rest = np.array(list(itertools.product([-1.0, 1.0], repeat=d - 2))) if full else np.zeros((1, 0))
    feats, labels, weights = [], [], []
    for (i, j), pt in itertools.chain(((t, p1) for t in S1), ((t, p2) for t in S2)):
        if i > j:  # (j, i) carries the same queries: merged into (i, j)
            continue
        others = [l for l in range(d) if l not in (i, j)]
        for f, pf in zip(pats, probs):
            for r in rest:
                if full:
                    phi = np.zeros(d)
                    phi[[i, j]], phi[others] = f, r
                    x = np.zeros((d, d))
                    x[i] += phi
                    x[j] += phi
                    feats.append(x.ravel())
                else:
                    x = np.zeros(d)
                    x[[i, j]] = f
                    feats.append(x)
                labels.append(f[0] * f[1])
                weights.append(2 * pt * pf / len(rest))
    return np.array(feats), np.array(labels), np.array(weights)


# ---- the smoothed search -------------------------------------------------------------------------------

def _softplus(z, beta):
    return np.logaddexp(0.0, beta * z) / beta


def _smooth(theta, X, y, w, m, two_gamma, lam, beta):
    """Smoothed objective ``sum_p w_p sp(1 - y_p g_p) + lam ||V||^2`` (sp = softplus_beta) and its gradient."""
    a, V = theta[:m], theta[m:].reshape(m, -1)
    z = two_gamma * X @ V.T
    h = _softplus(z, beta)
    r = 1.0 - y * (h @ a)
    f = w @ _softplus(r, beta) + lam * np.sum(V * V)
    dg = -w * y * expit(beta * r)
    dz = dg[:, None] * a[None, :] * expit(beta * z)
    grad = np.concatenate([h.T @ dg, (two_gamma * dz.T @ X + 2 * lam * V).ravel()])
    return f, grad


def _smooth_search(X, y, w, m, two_gamma, lam, betas, rng):
    """One restart: random heads, then L-BFGS-B at each beta in turn; returns (a, V)."""
    D = X.shape[1]
    theta = np.concatenate([rng.choice([-1.0, 1.0], m), rng.normal(size=m * D) / two_gamma])
    bounds = [(-1.0, 1.0)] * m + [(None, None)] * (m * D)
    for beta in betas:
        theta = minimize(_smooth, theta, args=(X, y, w, m, two_gamma, lam, beta), jac=True, method="L-BFGS-B",
                         bounds=bounds, options={"maxiter": 3000, "maxfun": 6000}).x
    return theta[:m], theta[m:].reshape(m, D)


# ---- the region QP -----------------------------------------------------------------------------------------

def _region_rows(X, y, s, act, two_gamma):
    """Linear rows of the region of activation pattern ``act`` (P, m) for signs ``s``: margins ``M x``
    (x = vec V, margin_p = (M x)_p) and activation constraints ``C x >= 0``."""
    P, D = X.shape
    m = s.size
    M = np.zeros((P, m * D))
    C = np.zeros((P * m, m * D))
    for n in range(m):
        M[:, n * D:(n + 1) * D] = (y * s[n] * act[:, n] * two_gamma)[:, None] * X
        C[n * P:(n + 1) * P, n * D:(n + 1) * D] = np.where(act[:, n], 1.0, -1.0)[:, None] * X
    return M, C


def _kkt(grad, G, slack):
    """NNLS multipliers on the tight rows of ``G z >= h`` (slack <= tol) and the stationarity residual."""
    tight = slack <= _FEAS_TOL * np.maximum(1.0, np.abs(G).sum(1))
    mu = np.zeros(G.shape[0])
    if tight.any():
        mu[tight], res = nnls(G[tight].T, grad)
    else:
        res = np.linalg.norm(grad)
    return mu, res / max(1.0, np.linalg.norm(grad))


def _dual_bound(G, h, lam):
    """``max_t D(t lam) = (h^T lam)_+^2 / ||G^T lam||^2``: by weak duality a lower bound on
    ``min ||x||^2 s.t. G x >= h`` for every ``lam`` (negative entries are clipped to 0)."""
    lam = np.maximum(lam, 0.0)
    a, g = float(h @ lam), G.T @ lam
    gg = float(g @ g)
    if a <= 0:
        return 0.0
    return np.inf if gg == 0 else a * a / gg


def _ldp(G, h):
    """Least-distance programme ``min ||x||^2 s.t. G x >= h``: ``(x, lower)``, a feasible solution (None when
    infeasible or not found) and a lower bound on the optimum that holds whatever the solver did (inf when
    infeasibility is proved).

    NNLS first (Lawson & Hanson 1974, ch. 23): with ``u = argmin_{u >= 0} ||[G^T; h^T] u - e||``,
    ``x = G^T u / (1 - h^T u)``. Accepted only when ``x`` is feasible (to ``_LDP_FEAS``) and its value meets the
    dual bound of ``u`` to 1e-9 relative, which certifies it optimal. scipy's NNLS can stall on degenerate
    systems (copies or negations of rows) and return an infeasible, non-optimal point; then SLSQP solves it,
    and the bound is taken from NNLS multipliers on SLSQP's active rows (and SLSQP's own multipliers). When
    neither finds a feasible point, an LP looks for a Farkas ray ``G^T u = 0, h^T u > 0`` (infeasibility).
    """
    E = np.vstack([G.T, h])
    f = np.zeros(E.shape[0])
    f[-1] = 1.0
    u, _ = nnls(E, f, maxiter=50 * E.shape[1])
    r = E @ u - f
    lower = _dual_bound(G, h, u)
    x = None if abs(r[-1]) < 1e-12 else -r[:-1] / r[-1]
    if x is not None and (G @ x - h).min() >= -_LDP_FEAS and x @ x <= lower * (1 + 1e-9):
        return x, lower
    x0 = np.zeros(G.shape[1]) if x is None or not np.all(np.isfinite(x)) else x
    res = minimize(lambda v: (v @ v, 2 * v), x0, jac=True, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda v: G @ v - h, "jac": lambda v: G}],
                   options={"maxiter": 1000, "ftol": 1e-15})
    if np.all(np.isfinite(res.x)) and (G @ res.x - h).min() >= -_LDP_FEAS:   # SLSQP's status can be 8 at optimum
        x = res.x
        act = G @ x - h <= 1e-8
        lam = np.zeros(len(h))
        if act.any():
            lam[act] = nnls(G[act].T, 2 * x, maxiter=50 * int(act.sum()))[0]
        lower = max(lower, _dual_bound(G, h, lam))
        mult = getattr(res, "multipliers", None)
        mult = np.asarray(mult.get("ineq", []) if isinstance(mult, dict) else [] if mult is None else mult, float)
        if mult.shape == h.shape:
            lower = max(lower, _dual_bound(G, h, mult))
        return x, lower
    ray = linprog(-h, A_eq=G.T, b_eq=np.zeros(G.shape[1]), bounds=[(0, 1)] * len(h), method="highs")
    if ray.status == 0:
        lower = max(lower, _dual_bound(G, h, ray.x))
    return None, lower


def _qp(M, C, w, lam, x0):
    """Solve the region QP; returns ``(x, xi, mu_C, kkt)`` or None when infeasible.

    Minimum norm (``lam is None``): ``min ||x||^2 s.t. M x >= 1, C x >= 0``, exactly by :func:`_ldp`.
    Regularised: ``min lam ||x||^2 + w^T xi s.t. M x + xi >= 1, xi >= 0, C x >= 0``, by SLSQP from ``x0``.
    """
    n, P = M.shape[1], M.shape[0]
    h = np.r_[np.ones(P), np.zeros(C.shape[0])]
    if lam is None:
        G = np.vstack([M, C])
        z, _ = _ldp(G, h)
        if z is None:
            return None
        grad = 2 * z
    else:
        G = np.block([[M, np.eye(P)], [C, np.zeros((C.shape[0], P))]])
        fun = lambda z: (lam * z[:n] @ z[:n] + w @ z[n:], np.r_[2 * lam * z[:n], w])  # noqa: E731
        z0 = np.r_[x0, np.maximum(1.0 - M @ x0, 0.0)]
        z = minimize(fun, z0, jac=True, method="SLSQP", bounds=[(None, None)] * n + [(0.0, None)] * P,
                     constraints=[{"type": "ineq", "fun": lambda z: G @ z - h, "jac": lambda z: G}],
                     options={"maxiter": 500, "ftol": 1e-15}).x
        grad = fun(z)[1]
        G, h = np.vstack([G, np.c_[np.zeros((P, n)), np.eye(P)]]), np.r_[h, np.zeros(P)]  # xi >= 0 as rows
    slack = G @ z - h
    if not np.all(np.isfinite(z)) or slack.min() < -1e-7:
        return None
    mu, kkt = _kkt(grad, G, slack)
    return z[:n], z[n:], mu[P:P + C.shape[0]], kkt


def _polish(X, y, w, s, act, two_gamma, lam, x0):
    """Solve the region QP, then cross tight activation constraints with positive multipliers while the
    objective falls. Returns ``(x, act, kkt, objective)`` or None when the first region is infeasible."""
    m, P = s.size, X.shape[0]
    best = None
    for _ in range(_MAX_MOVES):
        M, C = _region_rows(X, y, s, act, two_gamma)
        out = _qp(M, C, w, lam, x0)
        if out is None:
            return best
        x, xi, mu_C, kkt = out
        obj = x @ x if lam is None else lam * x @ x + w @ xi
        if best is not None and obj >= best[3] - 1e-12 * max(1.0, best[3]):
            return best
        best = (x, act, kkt, obj)
        cross = (mu_C > _MOVE_TOL).reshape(m, P).T
        if not cross.any():
            return best
        act, x0 = act ^ cross, x
    return best


def _margins(X, y, a, V, two_gamma):
    return y * (np.maximum(two_gamma * X @ V.T, 0.0) @ a)


def _fit(problem, X, y, w, s, V, kkt, runs, lam, full):
    d, m = problem.d, s.size
    a = s.astype(float)
    V = V.reshape((m, d, d) if full else (m, d))
    margins = _margins(X, y, a, V.reshape(m, -1), 2 * problem.gamma)
    if lam is None and margins[w > 0].min() < 1:  # rounding: rescale (1-homogeneous) so every margin is >= 1
        V = V * (1 + 4 * np.finfo(float).eps) / margins[w > 0].min()
        margins = _margins(X, y, a, V.reshape(m, -1), 2 * problem.gamma)
    loss, norm = float(w @ np.maximum(1.0 - margins, 0.0)), float(np.sum(V * V))
    margin = margins[w > 0].min()
    return HeadFit(a=a, V=V, loss=loss, norm=norm, objective=norm if lam is None else loss + lam * norm,
                   min_margin=float(margin), kkt_residual=float(kkt), runs=np.asarray(runs, float))


def fit_heads(problem, m, *, lam=None, restarts=60, seed=0, full=False, betas=(5.0, 50.0, 500.0),
              lam_search=(1e-5, 1e-6)):
    r"""Minimum-norm zero-loss heads (``lam=None``), or the minimiser of the regularised loss at ``lam``.

    .. math:: \min_{a\in[-1,1]^m,V}\ \sum_n\lVert V^{(n)}\rVert_F^2\ \ \text{s.t.}\ \ y_qg\ge1\ \text{on every
              query of positive probability},\qquad\text{or}\qquad
              \min_{a,V}\ \mathcal L(a,V)+\lambda\sum_n\lVert V^{(n)}\rVert_F^2

    Parameters
    ----------
    problem : ParityProblem
    m : int
        Number of heads: >= 4 for the minimum-norm problem (zero loss needs two heads of each sign,
        docs/icl.md), >= 1 with ``lam``.
    lam : float or None
        None: minimum loss (0), then minimum norm, the limit of the argmins of ``L^lambda`` as lambda -> 0+.
        Else the weight-decay coefficient, > 0.
    restarts : int
        Seeded random restarts, >= 1.
    seed : int
        Seed of the restarts (``numpy.random.SeedSequence(seed).spawn(restarts)``).
    full : bool
        Full heads ``V^(n)`` (d <= 10) instead of diagonal ones.
    betas : sequence of float
        Softplus sharpness of the annealed search, each > 0.
    lam_search : float or sequence of float
        Weight decay of the smoothed search for the minimum-norm problem (queries weighted uniformly), each > 0;
        restart r uses ``lam_search[r % len(lam_search)]``. A larger value lands nearer small norms, a smaller one
        fits every query more often (m = 4 at d = 8 needs 1e-6).

    Returns
    -------
    HeadFit
        The best restart; ``runs`` holds every restart's polished result (NaN when its region was infeasible).

    Notes
    -----
    Accuracy: loss, norm and min_margin are those of the returned heads to rounding (the minimum-norm heads are
    rescaled so that min_margin >= 1 in floats); optimality is a local KKT point (``kkt_residual``), not certified.
    Regime: N -> inf, any d, k, gamma, pT. Non-convex: the result is the best local optimum over the restarts,
    each an exact KKT point of its region QP (``kkt_residual``), and is an upper bound on the global optimum
    (certified for m = 4 by :func:`four_head_min_norm`). ``|a_n| = 1`` at every optimum (the norm is on V only,
    and ``a ReLU(v . x) = sign(a) ReLU(|a| v . x)``), so the QP fixes ``a = sign(a)`` of the search. Splitting
    every head into q copies of ``V/q`` divides the norm by q, so the minimum norm falls at least like 1/m.

    References
    ----------
    .. [src] [Shi24, Section 5.5 (the objective), Theorem 5.5.1 ("g* = argmin lim L^lambda")]; the solver is
       popdyn's (docs/icl.md).

    Examples
    --------
    >>> p = ParityProblem(d=2, k=2, gamma=0.1, pT=0.0)
    >>> fit = fit_heads(p, 4, restarts=4)
    >>> round(fit.norm, 9), fit.loss  # the closed form 1/(2 gamma^2) of d = 2
    (50.0, 0.0)
    """
    owner = "icl.fit_heads"
    problem = _check_problem(problem, owner)
    m = as_int(owner, "m", m, 1 if lam is not None else 4)  # zero loss needs 2 positive and 2 negative heads
    restarts, seed = as_int(owner, "restarts", restarts, 1), as_int(owner, "seed", seed, 0)
    if lam is not None:
        lam = check(owner, "lam", lam, Interval(0, np.inf, closed="neither"))
    positive = Interval(0, np.inf, closed="neither")
    lam_search = [check(owner, "lam_search", v, positive) for v in np.atleast_1d(lam_search)]
    betas = [check(owner, "betas", b, positive) for b in np.atleast_1d(betas)]
    X, y, w = query_design(problem, full=full)
    if lam is None:  # the support alone, weighted uniformly in the search
        X, y, w = X[w > 0], y[w > 0], w[w > 0]
    two_gamma = 2 * problem.gamma
    w_search = np.full(len(w), 1.0 / len(w)) if lam is None else w
    best, runs = None, []
    for r, child in enumerate(np.random.SeedSequence(seed).spawn(restarts)):
        a, V = _smooth_search(X, y, w_search, m, two_gamma, lam_search[r % len(lam_search)] if lam is None else lam,
                              betas, np.random.default_rng(child))
        s = np.where(a < 0, -1.0, 1.0)
        out = _polish(X, y, w, s, two_gamma * X @ V.T > 0, two_gamma, lam, V.ravel())
        if out is None:
            runs.append([np.nan] * 3)
            continue
        fit = _fit(problem, X, y, w, s, out[0], out[2], [], lam, full)
        runs.append([fit.objective, fit.norm, fit.loss])
        if best is None or fit.objective < best.objective:
            best = fit
    if best is None:
        raise InvalidParameterError(
            f"The 'restarts' parameter of {owner} must be large enough for one restart to reach a zero-loss region; "
            f"none of {restarts} did (m = {m}, seed = {seed}).")
    return HeadFit(**{**best.__dict__, "runs": np.array(runs)})


# ---- m = 4: every region ------------------------------------------------------------------------------------

def _chambers(d):
    """Closed chambers of the arrangement {v_i = +- v_j} (type D_d): sign vectors over the rows ``N`` (e_i + e_j,
    then e_i - e_j, i < j) and one interior point each. 2^(d-1) d! chambers."""
    pairs = list(itertools.combinations(range(d), 2))
    N = np.zeros((2 * len(pairs), d))
    for r, (i, j) in enumerate(pairs):
        N[r, [i, j]] = 1.0
        N[len(pairs) + r, [i, j]] = [1.0, -1.0]
    signs = {}
    for perm in itertools.permutations(range(1, d + 1)):
        for flips in itertools.product([-1.0, 1.0], repeat=d):
            v = np.array(flips) * perm
            signs.setdefault(tuple(np.sign(N @ v).astype(int)), v)
    return N, np.array(list(signs.keys())), np.array(list(signs.values()))


def four_head_min_norm(problem):
    r"""Global minimum of ``sum_n ||V^(n)||^2`` over zero-loss networks of 4 diagonal heads, by enumeration.

    .. math:: \min\sum_{n=1}^4\lVert\mathrm{diag}V^{(n)}\rVert^2\ \ \text{s.t.}\ \ y_qg\ge1\ \forall\,
              \text{queries of } S_1\cup S_2\ (S_1 \text{ alone if } p_T=0)

    Parameters
    ----------
    problem : ParityProblem
        With d <= 5 (2^(d-1) d! chambers per head).

    Returns
    -------
    HeadFit
        The minimiser; ``runs`` holds the region QP of every enumerated chamber quadruple.

    Notes
    -----
    Accuracy: as :func:`fit_heads` for the values; the minimum is certified by enumeration (each region QP solved by
    NNLS to its rounding).
    Regime: N -> inf, diagonal heads, 2 <= d <= 5. Proof of completeness: with at most one head of ``a_n > 0``,
    a query and its negation (same label, opposite pre-activations) cannot both have ``y g > 0``, so a zero-loss
    4-head network has two positive and two negative heads with ``|a_n| = 1``. A positive head active on
    ``(1, 1)`` of a task pair is inactive on ``(-1, -1)``, so the two positive heads have ``v_i + v_j`` of
    opposite non-zero signs on every task pair, and the two negative heads ``v_i - v_j`` of opposite signs. Each
    head lies in a closed chamber of the arrangement ``{v_i = +- v_j}``, where every pre-activation has a fixed
    sign, so the margins are linear and the problem is a QP per chamber quadruple. When every pair is a task
    (pT > 0 or k = d), the coordinate permutations and ``V -> -V`` act freely on the chambers (a subgroup of the
    Weyl group of D_d, which acts simply transitively) and the first positive head runs over one chamber per orbit.

    References
    ----------
    .. [src] derived in docs/icl.md; [Shi24, proof of Theorem 5.5.1] (the covering argument, with magnitudes).

    Examples
    --------
    >>> round(four_head_min_norm(ParityProblem(d=2, k=2, gamma=0.1, pT=0.0)).norm, 9)  # 1/(2 gamma^2)
    50.0
    """
    owner = "icl.four_head_min_norm"
    problem = _check_problem(problem, owner)
    d = as_int(owner, "problem.d", problem.d, 2, 5)
    X, y, w = query_design(problem)
    X, y, w = X[w > 0], y[w > 0], w[w > 0]
    N, sig, pts = _chambers(d)
    rows, along = _query_rows(N, X)
    sums, diffs = np.unique(rows[y > 0]), np.unique(rows[y < 0])  # the rows of the task pairs (support only)
    pos = [(c1, c2) for c1 in range(len(sig)) for c2 in range(len(sig))
           if np.all(sig[c1, sums] == -sig[c2, sums])]
    neg = [(c1, c2) for c1 in range(len(sig)) for c2 in range(c1 + 1, len(sig))
           if np.all(sig[c1, diffs] == -sig[c2, diffs])]
    if problem.pT > 0 or problem.k == d:  # one first positive chamber per orbit of S_d x {+-1}
        reps = _orbit_representatives(N, sig, pts)
        pos = [pc for pc in pos if pc[0] in reps]
    s = np.array([1.0, 1.0, -1.0, -1.0])
    # per (chamber, head sign): the head's block of the margin rows; per chamber: its closed-chamber rows
    margin = {(c, sn): (y * sn * (sig[c][rows] * along > 0) * 2 * problem.gamma)[:, None] * X
              for c in range(len(sig)) for sn in (1.0, -1.0)}
    cone = sig[:, :, None] * N[None]
    C = np.zeros((4 * len(N), 4 * d))
    h = np.r_[np.ones(len(X)), np.zeros(4 * len(N))]
    best, runs = None, []
    for heads in itertools.product(pos, neg):
        heads = heads[0] + heads[1]
        for n, c in enumerate(heads):
            C[n * len(N):(n + 1) * len(N), n * d:(n + 1) * d] = cone[c]
        G = np.vstack([np.hstack([margin[c, sn] for c, sn in zip(heads, s)]), C])
        x, _ = _ldp(G, h)
        runs.append([np.nan] * 3 if x is None else [x @ x, x @ x, 0.0])
        if x is not None and (best is None or x @ x < best[0] @ best[0]):
            best = (x, G)
    kkt = _kkt(2 * best[0], best[1], best[1] @ best[0] - h)[1]
    return _fit(problem, X, y, w, s, best[0], kkt, runs, None, False)


def _orbit_representatives(N, sig, pts):
    """One chamber per orbit of the coordinate permutations and ``v -> -v``."""
    d = N.shape[1]
    seen, reps = set(), set()
    for c in range(len(sig)):
        if c in seen:
            continue
        reps.add(c)
        for perm in itertools.permutations(range(d)):
            for sgn in (1.0, -1.0):
                seen.add(_chamber_of(N, sig, sgn * pts[c][list(perm)]))
    return reps


def _chamber_of(N, sig, v):
    return int(np.flatnonzero(np.all(sig == np.sign(N @ v).astype(int), 1))[0])


def _query_rows(N, X):
    """Row of N parallel to each diagonal query ``f_i e_i + f_j e_j`` and the query's sign along it."""
    proj = X @ N.T
    rows = np.argmax(np.abs(proj), 1)
    return rows, np.sign(proj[np.arange(len(X)), rows])
