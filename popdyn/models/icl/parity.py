"""Sparse parity in context: two-layer ReLU-attention heads ([Shi24] Section 5.5; docs/icl.md).

Data: ``x = G phi`` with an orthonormal dictionary G and ``phi in {+-1}^d``; a task ``t = (i, j)`` labels
``y = phi_i phi_j``; ``(phi_i, phi_j)`` is correlated with the label through ``gamma``. Model:
``g = sum_n a_n ReLU[(y^T X / N) W^(n) x_q]``. As N -> inf, ``y^T X / N -> 2 gamma (e_i + e_j)^T G^T`` and
only ``V^(n) = G^T W^(n) G`` matters ([Shi24, proof of Theorem 5.5.1, App. D.3.1]).

Public names
------------
problem
    :class:`ParityProblem` (d, k, gamma, p_T) and :func:`pT_max` live in :mod:`popdyn.models.icl.problem`
data
    :func:`task_sets`, :func:`pattern_probs` (and :func:`pT_max`, re-exported)
N -> inf population hinge loss
    :func:`population_hinge` (exact: a finite sum for diagonal heads, Gray-code enumeration of the
    2^(d-2) other coordinates for full heads), :func:`mc_population_hinge` (Monte Carlo),
    :func:`margins`, :func:`frobenius_cost`
constructions
    :func:`paper_construction` (Thm 5.5.1; NOT optimal, docs/icl.md), :func:`small_model_heads`,
    :func:`four_head_counterexample` (zero loss on every task with 4 heads: the paper's width claim fails)
finite-M evaluation (Thm 5.5.2)
    :func:`noise_energy`, :func:`noise_energy_ratio`, :func:`mc_eval`
theory for :func:`popdyn.predict`
    registered in :mod:`popdyn.models.icl.predict`; the evaluation prompt lengths (M in the paper) are
    the coordinate ``coords["test_context"]`` of the result

Indices are 0-based in code (the paper's head n and coordinate l are ``n - 1`` and ``l - 1``).
"""
from __future__ import annotations

import numba
import numpy as np

from ..._validate import Interval, InvalidParameterError, as_int, check
from ...gaussian import mc_mean
from .problem import ParityProblem, pT_max

__all__ = ["task_sets", "pattern_probs", "pT_max", "population_hinge", "mc_population_hinge",
           "margins", "frobenius_cost", "paper_construction", "small_model_heads", "four_head_counterexample",
           "noise_energy", "noise_energy_ratio", "mc_eval"]

_EXACT_MAX_D = 22  # full-V exact enumeration: 2^(d-2) <= 2^20 rest patterns per (task, pattern)
_RESET = 64  # Gray-code steps between exact recomputations of the pre-activations (at most 63 updates of rounding)
_DIAG_TOL = 0.0  # a (m, d, d) V counts as diagonal only when its off-diagonal entries are exactly 0
_SRC = ["[Shi24, Section 5.5, Theorems 5.5.1-5.5.2]", "[Shi24, App. D.3] (proofs)"]


def _check_problem(problem, owner):
    if not isinstance(problem, ParityProblem):
        raise InvalidParameterError(
            f"The 'problem' parameter of {owner} must be an icl.ParityProblem. Got {problem!r} instead.")
    return problem


# ---- data ------------------------------------------------------------------------------------------

def task_sets(d, k):
    r"""Ordered task pairs ``S1 = A x A \ diag`` and ``S2 = [d]^2 \ (diag u S1)``, 0-based, ``A = [k]``.

    .. math:: S_1=\{(i,j): i\ne j,\ i,j<k\},\qquad S_2=\{(i,j): i\ne j\}\setminus S_1

    Parameters
    ----------
    d, k : int
        Dimension and number of important features (2 <= k <= d).

    Returns
    -------
    (S1, S2) : ndarrays of shape (k(k-1), 2) and (d(d-1) - k(k-1), 2), int64.

    Notes
    -----
    Accuracy: exact (integers).
    Regime: any d >= k >= 2. The paper counts unordered pairs; y is symmetric, so the uniform law over
    ordered pairs is the same task law.

    References
    ----------
    .. [src] [Shi24, Section 5.5] (data).

    Examples
    --------
    >>> S1, S2 = task_sets(4, 2)
    >>> S1.tolist(), len(S2)
    ([[0, 1], [1, 0]], 10)
    """
    d = as_int("icl.task_sets", "d", d, 2)
    k = as_int("icl.task_sets", "k", k, 2, d)
    i, j = np.nonzero(~np.eye(d, dtype=bool))
    pairs = np.stack([i, j], 1).astype(np.int64)
    important = (pairs < k).all(1)
    return pairs[important], pairs[~important]


def pattern_probs(gamma):
    r"""The four values of ``(phi_i, phi_j)`` and their probabilities.

    .. math:: P(1,1)=\tfrac14+\gamma,\ P(1,-1)=P(-1,1)=\tfrac14,\ P(-1,-1)=\tfrac14-\gamma

    Parameters
    ----------
    gamma : float
        In (0, 1/4).

    Returns
    -------
    (patterns, probs) : ndarray of shape (4, 2) and ndarray of shape (4,).

    Notes
    -----
    Accuracy: each probability one rounding of 1/4 +- gamma (relative 2^-53; 1/4 - gamma exact for gamma >= 1/8), in
    [0, 1], for gamma from 1e-300 to 1/4 - 2^-54; measured 0.88 of it against exact rationals
    (tests/test_accuracy_icl.py).
    Regime: gamma in (0, 1/4); then ``E[y phi_i] = E[y phi_j] = 2 gamma``.

    References
    ----------
    .. [src] [Shi24, Section 5.5] (data).

    Examples
    --------
    >>> pats, probs = pattern_probs(0.1)
    >>> round(float(probs @ (pats[:, 0] * pats[:, 1] * pats[:, 0])), 15)  # E[y phi_i] = 2 gamma
    0.2
    """
    gamma = check("icl.pattern_probs", "gamma", gamma, ParityProblem._constraints["gamma"])
    pats = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]])
    return pats, np.array([0.25 + gamma, 0.25, 0.25, 0.25 - gamma])


# ---- heads -------------------------------------------------------------------------------------------

def _check_heads(owner, a, V, d):
    """``a`` (m,) in [-1, 1] and ``V`` (m, d) (diagonals) or (m, d, d), finite; returns float64 arrays."""
    a = np.asarray(a, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    if a.ndim != 1 or not np.all(np.abs(a) <= 1):
        raise InvalidParameterError(f"The 'a' parameter of {owner} must be a 1-d array in [-1, 1]^m. Got {a!r} instead.")
    shapes = ((a.size, d), (a.size, d, d))
    if V.shape not in shapes or not np.all(np.isfinite(V)):
        raise InvalidParameterError(
            f"The 'V' parameter of {owner} must be a finite array of shape {shapes[0]} (diagonals) or {shapes[1]}. "
            f"Got shape {V.shape} instead.")
    if V.ndim == 3 and not np.any(V * ~np.eye(d, dtype=bool) != _DIAG_TOL):
        V = np.diagonal(V, axis1=1, axis2=2).copy()
    return a, V


def _diag_margins(problem, a, V):
    """``y_q g`` for diagonal heads, shape (d, d, 4): [i, j, pattern], pattern order of pattern_probs."""
    pats, _ = pattern_probs(problem.gamma)
    pre = 2 * problem.gamma * (V[:, :, None, None] * pats[:, 0] + V[:, None, :, None] * pats[:, 1])
    return (pats[:, 0] * pats[:, 1]) * np.einsum("n,nijp->ijp", a, np.maximum(pre, 0.0))


@numba.njit(cache=True)
def _full_task_loss(a, S, i, j, fi, fj, two_gamma):
    """E over the other d-2 coordinates (Gray-code enumeration) of the hinge for task (i, j), pattern (fi, fj).

    ``S`` (m, d) holds the row sums ``V_i. + V_j.``; the pre-activation is ``2 gamma S phi``.
    """
    m, d = S.shape
    rest = np.empty(d - 2, np.int64)
    r = 0
    for l in range(d):
        if l != i and l != j:
            rest[r] = l
            r += 1
    pre = np.empty(m)
    for n in range(m):
        pre[n] = S[n, i] * fi + S[n, j] * fj
        for l in rest:
            pre[n] -= S[n, l]  # start from phi_rest = -1
    total = 0.0
    count = 1 << (d - 2)
    for c in range(count):
        if c > 0 and c & (_RESET - 1) == 0:  # recompute: the running sums drifted by up to 52 eps at d = 18
            gc = c ^ (c >> 1)
            for n in range(m):
                pre[n] = S[n, i] * fi + S[n, j] * fj
                for b in range(d - 2):
                    pre[n] += S[n, rest[b]] if (gc >> b) & 1 else -S[n, rest[b]]
        elif c > 0:
            b = 0  # bit flipped between Gray codes c - 1 and c: the lowest set bit of c
            while not (c >> b) & 1:
                b += 1
            sign = 2.0 if ((c ^ (c >> 1)) >> b) & 1 else -2.0
            for n in range(m):
                pre[n] += sign * S[n, rest[b]]
        g = 0.0
        for n in range(m):
            if pre[n] > 0:
                g += a[n] * two_gamma * pre[n]
        total += max(0.0, 1.0 - fi * fj * g)
    return total / count


@numba.njit(cache=True)
def _full_task_losses(a, V, tasks, pats, two_gamma):
    """Per-task hinge (averaged over patterns with ``pats[:, 2]`` as weights), shape (len(tasks),)."""
    out = np.zeros(tasks.shape[0])
    for t in range(tasks.shape[0]):
        i, j = tasks[t, 0], tasks[t, 1]
        S = V[:, i, :] + V[:, j, :]
        for p in range(4):
            out[t] += pats[p, 2] * _full_task_loss(a, S, i, j, pats[p, 0], pats[p, 1], two_gamma)
    return out


def population_hinge(problem, a, V, *, split=False):
    r"""Exact N -> inf population hinge loss of heads ``(a, V)``, ``V^(n) = G^T W^(n) G``.

    .. math:: \mathcal L(a,V)=\sum_{t}P(t)\sum_{(f_i,f_j)}P(f_i,f_j)\,\mathbb E_{\phi_{-t}}
              \Big[1-f_if_j\sum_na_n\mathrm{ReLU}\big(2\gamma(V^{(n)}_{i\cdot}+V^{(n)}_{j\cdot})\phi\big)\Big]_+

    Parameters
    ----------
    problem : ParityProblem
    a : ndarray of shape (m,)
        Output weights in [-1, 1].
    V : ndarray of shape (m, d) or (m, d, d)
        Head diagonals, or full heads in the dictionary basis.
    split : bool
        Return ``(L_S1, L_S2)``, the losses conditional on t in S1 and in S2 (L_S2 = 0 when S2 is empty).

    Returns
    -------
    float, or (float, float) with ``split``.

    Notes
    -----
    Accuracy: absolute error <= (R + d + m + 8) eps (1 + 2 gamma max_(i,j) sum_n |a_n| ||V^(n)_i. + V^(n)_j.||_1), R
    = 64 for full heads (the Gray-code sums are recomputed every 64 steps; they drifted by 52 eps of that size at d
    = 18 before) and 0 for diagonal ones; against exact rationals for d <= 5 and correctly rounded sums for d = 12,
    16; measured 0.025 (diagonal) and 0.019 (full, d = 16) of it (tests/test_accuracy_icl.py).
    Regime: N -> inf (B.4.1). Diagonal heads: the pre-activation is ``2 gamma (V_ii f_i + V_jj f_j)``
    and the loss is a finite sum, O(d^2 m). Full heads: the other d-2 coordinates of phi_q enter and
    are enumerated exactly (Gray code, O(d^2 m 2^d)); d <= 22, else use :func:`mc_population_hinge`.

    References
    ----------
    .. [src] [Shi24, Section 5.5 (loss), proof of Theorem 5.5.1 (App. D.3.1)]; the exact N -> inf sum in docs/icl.md.

    Examples
    --------
    >>> p = ParityProblem.paper(1, 2, gamma=0.1)
    >>> population_hinge(p, np.zeros(3), np.zeros((3, 4)))  # g = 0: hinge 1 everywhere
    1.0
    """
    owner = "icl.population_hinge"
    problem = _check_problem(problem, owner)
    a, V = _check_heads(owner, a, V, problem.d)
    S1, S2 = task_sets(problem.d, problem.k)
    _, probs = pattern_probs(problem.gamma)
    if V.ndim == 2:
        per = np.maximum(1.0 - _diag_margins(problem, a, V), 0.0) @ probs
        l1, l2 = per[S1[:, 0], S1[:, 1]].mean(), (per[S2[:, 0], S2[:, 1]].mean() if len(S2) else 0.0)
    else:
        if problem.d > _EXACT_MAX_D:
            raise InvalidParameterError(
                f"The 'V' parameter of {owner} has full heads with d = {problem.d} > {_EXACT_MAX_D}: exact "
                f"enumeration of 2^(d-2) patterns is too costly; use icl.mc_population_hinge.")
        pats = np.column_stack(pattern_probs(problem.gamma))
        l1 = _full_task_losses(a, V, S1, pats, 2 * problem.gamma).mean()
        l2 = _full_task_losses(a, V, S2, pats, 2 * problem.gamma).mean() if len(S2) else 0.0
    if split:
        return float(l1), float(l2)
    pT = problem.pT if len(S2) else 0.0  # k = d: S2 is empty and every task is drawn from S1 (_sample_tasks)
    return float((1 - pT) * l1 + pT * l2)


def mc_population_hinge(problem, a, V, *, prompts=100_000, seed=0, chunk=1 << 14):
    r"""Monte Carlo of the N -> inf population hinge loss: ``(mean, standard error)`` over sampled prompts.

    .. math:: \hat{\mathcal L}=\frac1P\sum_{s=1}^P\Big[1-y_s\sum_na_n\mathrm{ReLU}\big(z_{t_s}^\top V^{(n)}\phi_s\big)\Big]_+,
              \quad z_t=2\gamma(e_i+e_j)

    Parameters
    ----------
    problem : ParityProblem
    a : ndarray of shape (m,)
    V : ndarray of shape (m, d) or (m, d, d)
    prompts : int
        Number of sampled prompts (a task and a query; the context is N -> inf), >= 2.
    seed : int
        Seed of ``numpy.random.default_rng``.
    chunk : int
        Prompts per block, >= 1.

    Returns
    -------
    (float, float)
        Mean and standard error.

    Notes
    -----
    Accuracy: statistical: the mean is within a few standard errors of :func:`population_hinge`; no rounding floor
    above 1e-15 relative (means of hinge values in [0, 1 + max|g|]).
    Regime: N -> inf; any d (cost O(n m d^2)). An independent check of :func:`population_hinge`.

    References
    ----------
    .. [src] [Shi24, proof of Theorem 5.5.1 (App. D.3.1)].

    Examples
    --------
    >>> p = ParityProblem.paper(1, 2)
    >>> mc_population_hinge(p, np.zeros(2), np.zeros((2, 4)), prompts=10)  # g = 0: every hinge is 1
    (1.0, 0.0)
    """
    owner = "icl.mc_population_hinge"
    problem = _check_problem(problem, owner)
    a, V = _check_heads(owner, a, V, problem.d)
    n, chunk = as_int(owner, "prompts", prompts, 2), as_int(owner, "chunk", chunk, 1)
    Vf = V if V.ndim == 3 else np.stack([np.diag(v) for v in V]) if len(V) else np.zeros((0, problem.d, problem.d))

    def hinge(rng, size):
        t, phi = _sample_queries(problem, rng, size, pT=problem.pT)
        y = phi[np.arange(size), t[:, 0]] * phi[np.arange(size), t[:, 1]]
        rows = Vf[:, t[:, 0], :] + Vf[:, t[:, 1], :]                      # (m, size, d)
        pre = 2 * problem.gamma * np.einsum("nbd,bd->bn", rows, phi)
        return np.maximum(1.0 - y * (np.maximum(pre, 0.0) @ a), 0.0)

    return mc_mean(hinge, n, seed=as_int(owner, "seed", seed, 0), chunk=chunk)


def _sample_tasks(problem, rng, size, pT):
    """Tasks (size, 2): from S1 w.p. 1 - pT, else from S2."""
    S1, S2 = task_sets(problem.d, problem.k)
    if not len(S2):  # k = d: S2 is empty and every task comes from S1
        return S1[rng.integers(0, len(S1), size)]
    from_s2 = rng.random(size) < pT
    return np.where(from_s2[:, None], S2[rng.integers(0, max(len(S2), 1), size) % max(len(S2), 1)],
                    S1[rng.integers(0, len(S1), size)])


def _sample_queries(problem, rng, size, pT):
    """Tasks and query vectors phi (size, d): uniform signs off the task, the pattern law on it."""
    t = _sample_tasks(problem, rng, size, pT)
    pats, probs = pattern_probs(problem.gamma)
    phi = rng.choice([-1.0, 1.0], size=(size, problem.d))
    f = pats[rng.choice(4, size=size, p=probs)]
    rows = np.arange(size)
    phi[rows, t[:, 0]], phi[rows, t[:, 1]] = f[:, 0], f[:, 1]
    return t, phi


def margins(problem, a, V):
    r"""Margins ``y_q g`` of diagonal heads on every (task, pattern) pair, N -> inf.

    .. math:: y_qg = f_if_j\sum_na_n\mathrm{ReLU}\big(2\gamma(V^{(n)}_{ii}f_i+V^{(n)}_{jj}f_j)\big)

    Parameters
    ----------
    problem : ParityProblem
    a : ndarray of shape (m,)
    V : ndarray of shape (m, d)
        Head diagonals.

    Returns
    -------
    (tasks, values) : ndarray of shape (d(d-1), 2) (S1 first, then S2) and ndarray of shape (d(d-1), 4)
        (patterns in the order of :func:`pattern_probs`).

    Notes
    -----
    Accuracy: each margin within (d + m + 8) eps (1 + 2 gamma sum_n |a_n| ...) of the exact rational; measured 0.03 of it (tests/test_accuracy_icl.py).
    Regime: N -> inf, diagonal heads. Zero loss iff every margin is >= 1.

    References
    ----------
    .. [src] [Shi24, proof of Theorem 5.5.1 (App. D.3.1)] (patterns).

    Examples
    --------
    >>> p = ParityProblem.paper(1, 2, gamma=0.1)
    >>> tasks, vals = margins(p, *paper_construction(2, 0.1))
    >>> float(vals.min())  # tight: margin 1 at Hamming distance 1
    1.0
    """
    problem = _check_problem(problem, "icl.margins")
    a, V = _check_heads("icl.margins", a, V, problem.d)
    if V.ndim != 2:
        raise InvalidParameterError("The 'V' parameter of icl.margins must hold head diagonals, shape (m, d).")
    tasks = np.concatenate(task_sets(problem.d, problem.k))
    return tasks, _diag_margins(problem, a, V)[tasks[:, 0], tasks[:, 1]]


def frobenius_cost(V):
    r"""Weight-decay cost ``sum_n ||W^(n)||_F^2 = sum_n ||V^(n)||_F^2`` (G orthonormal).

    .. math:: \sum_n\lVert V^{(n)}\rVert_F^2,\qquad \text{paper } g_2^*:\ \frac{d\,\nu_2(\nu_2+1)}{8\gamma^2}

    Parameters
    ----------
    V : ndarray of shape (m, d) or (m, d, d)
        Head diagonals or full heads.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= (size + 2) eps / 2, scaled beyond 1e150 (V up to 1e301: it overflowed to inf
    before); inf only when the cost itself exceeds the float range; measured 0.22 of it
    (tests/test_accuracy_icl.py).
    Regime: any heads; the closed form for ``g_2^*`` is derived (docs/icl.md).

    References
    ----------
    .. [src] [Shi24, proof of Theorem 5.5.1] (||W||_F = ||V||_F); derived in docs/icl.md.

    Examples
    --------
    >>> frobenius_cost(paper_construction(2, 0.1)[1])  # d nu2 (nu2 + 1) / (8 gamma^2) = 4*2*3/0.08
    300.0
    """
    V = np.asarray(V, dtype=np.float64)
    if V.ndim not in (2, 3) or not np.all(np.isfinite(V)):
        raise InvalidParameterError(
            f"The 'V' parameter of icl.frobenius_cost must be a finite (m, d) or (m, d, d) array. Got shape {V.shape}.")
    big = float(np.abs(V).max()) if V.size else 0.0
    if 1e-150 < big < 1e150:
        return float(np.sum(V * V))
    if big == 0.0:
        return 0.0
    W = V / big  # entries beyond 1e154 squared to inf (gamma = 1e-300 in the constructions), below 1e-162 to 0
    return float(np.sum(W * W)) * big * big


# ---- constructions ---------------------------------------------------------------------------------

def paper_construction(nu2, gamma, nu1=None):
    r"""The heads of Thm 5.5.1: ``g_2^*`` (2(nu2+1) heads), or ``g_1^*`` (2(nu1+1) heads) when nu1 is given.

    .. math:: a_n=-1,\ V^{(n)}_{ll}=\frac{2\,\mathrm{bit}_n(l-1)-1}{4\gamma}\ (n\le\nu_2);\quad
              a_{\nu_2+1}=1,\ V^{(\nu_2+1)}=-\frac{\nu}{4\gamma}I;\quad
              (a_{n+\nu_2+1},V^{(n+\nu_2+1)})=(a_n,-V^{(n)})

    Parameters
    ----------
    nu2 : int
        ``d = 2^nu2``, >= 1.
    gamma : float
        In (0, 1/4).
    nu1 : int or None
        None: ``g_2^*`` with positive scale ``nu = nu2``. Else ``k = 2^nu1`` (1 <= nu1 <= nu2) and the
        heads :func:`small_model_heads` of the construction with positive scale ``nu = nu1``.

    Returns
    -------
    (a, V) : ndarray of shape (m,) and ndarray of shape (m, d) (the diagonals).

    Notes
    -----
    Accuracy: a exact; every V entry one rounding of +-(1 or nu)/(4 gamma), for gamma from 1e-300 to 1/4; measured 0.92 of it against exact rationals (tests/test_accuracy_icl.py).
    Regime: N -> inf. The construction has zero loss and tight margins (``y_q g = Ham(i-1, j-1) >= 1``).
    The paper calls it the optimal solution; it is not (a 4-head network also fits every task, and a
    6-head zero-loss network with smaller norm exists; docs/icl.md), hence the name.

    References
    ----------
    .. [src] [Shi24, Theorem 5.5.1 and its example (Section 5.5.1), App. D.3.1].

    Examples
    --------
    >>> a, V = paper_construction(3, 0.25 - 1e-9)
    >>> a.tolist(), np.round(V[:4] * (4 * 0.25), 6)[:, :4].tolist()  # the example of Section 5.5.1
    ([-1.0, -1.0, -1.0, 1.0, -1.0, -1.0, -1.0, 1.0], [[-1.0, 1.0, -1.0, 1.0], [-1.0, -1.0, 1.0, 1.0], [-1.0, -1.0, -1.0, -1.0], [-3.0, -3.0, -3.0, -3.0]])
    """
    nu2 = as_int("icl.paper_construction", "nu2", nu2, 1, 30)
    gamma = check("icl.paper_construction", "gamma", gamma, ParityProblem._constraints["gamma"])
    nu = nu2 if nu1 is None else as_int("icl.paper_construction", "nu1", nu1, 1, nu2)
    d, half = 2**nu2, nu2 + 1
    bits = (np.arange(d)[None, :] >> np.arange(nu2)[:, None]) & 1             # bit_n(l - 1), LSB first
    V = np.zeros((2 * half, d))
    V[:nu2] = (2 * bits - 1) / (4 * gamma)
    V[nu2] = -nu / (4 * gamma)
    V[half:] = -V[:half]
    a = np.tile(np.r_[-np.ones(nu2), 1.0], 2)
    if nu1 is None:
        return a, V
    heads = small_model_heads(nu, nu2)
    return a[heads], V[heads]


def small_model_heads(nu1, nu2):
    r"""0-based indices of the heads of ``g_2^*`` that make ``g_1^*``.

    .. math:: \{1,\dots,\nu_1,\ \nu_2+1,\ \nu_2+2,\dots,\nu_2+\nu_1+1,\ 2\nu_2+2\}\quad(\text{1-based})

    Parameters
    ----------
    nu1, nu2 : int
        ``1 <= nu1 <= nu2``.

    Returns
    -------
    ndarray of shape (2(nu1 + 1),), int64.

    Notes
    -----
    Accuracy: exact (integers).
    Regime: Thm 5.5.1 (k = 2^nu1, d = 2^nu2). With nu1 = nu2 every head is kept.

    References
    ----------
    .. [src] [Shi24, Section 5.5.1].

    Examples
    --------
    >>> (small_model_heads(1, 3) + 1).tolist()  # the paper's {1, 4, 5, 8}
    [1, 4, 5, 8]
    """
    nu2 = as_int("icl.small_model_heads", "nu2", nu2, 1, 30)
    nu1 = as_int("icl.small_model_heads", "nu1", nu1, 1, nu2)
    first = np.r_[np.arange(nu1), nu2]
    return np.r_[first, first + nu2 + 1].astype(np.int64)


def four_head_counterexample(d, gamma):
    r"""Four diagonal heads with zero N -> inf hinge loss on every task of S1 u S2, for any d.

    .. math:: x_l=l-\tfrac{d+1}2,\quad a=(-1,-1,1,1),\quad V=\big(\tfrac{\mathrm{diag}(x)}{2\gamma},
              -\tfrac{\mathrm{diag}(x)}{2\gamma},\,C I,\,-C I\big),\quad C=\frac{1+\max_{i\ne j}|x_i+x_j|}{4\gamma}

    Parameters
    ----------
    d : int
        Dimension, >= 2 (any, not only powers of two).
    gamma : float
        In (0, 1/4).

    Returns
    -------
    (a, V) : ndarray of shape (4,) and ndarray of shape (4, d).

    Notes
    -----
    Accuracy: x exact; V one rounding of x/(2 gamma), C within 2 roundings; measured 0.47 of it against exact
    rationals (tests/test_accuracy_icl.py).
    Regime: N -> inf. Refutes the minimal-width claim of Thm 5.5.1 ("at least 2(nu2+1) neurons are
    needed", proof of Theorem 5.5.1): the lower-bound argument only counts the signs of V. A pattern with
    ``f_i = -f_j`` has margin ``|x_i - x_j| >= 1``; one with ``f_i = f_j`` has margin
    ``4 gamma C - |x_i + x_j| >= 1``.

    References
    ----------
    .. [src] derived in docs/icl.md.

    Examples
    --------
    >>> p = ParityProblem(d=16, k=2, gamma=0.1, pT=0.4)
    >>> population_hinge(p, *four_head_counterexample(16, 0.1))  # zero loss with 4 < 2(4 + 1) heads
    0.0
    """
    d = as_int("icl.four_head_counterexample", "d", d, 2)
    gamma = check("icl.four_head_counterexample", "gamma", gamma, ParityProblem._constraints["gamma"])
    x = np.arange(d) - (d - 1) / 2
    s = np.abs(x[:, None] + x[None, :])
    C = (1 + s[~np.eye(d, dtype=bool)].max()) / (4 * gamma)
    V = np.stack([x / (2 * gamma), -x / (2 * gamma), np.full(d, C), np.full(d, -C)])
    return np.array([-1.0, -1.0, 1.0, 1.0]), V


# ---- finite-M evaluation (Thm 5.5.2) ------------------------------------------------------------------

def noise_energy(V, M):
    r"""Expected energy of the projected noise ``E||P_D Xi||^2`` with ``D = [diag V^(1), ..., diag V^(m)]``.

    .. math:: \mathbb E\lVert P_D\Xi\rVert^2=\frac{\mathrm{tr}P_D}{M}=\frac{\mathrm{rank}\,D}{M},
              \qquad \Xi=\frac1M\sum_{l=1}^M\xi_l,\ \xi_l\sim\mathrm{Unif}\{\pm1\}^d

    Parameters
    ----------
    V : ndarray of shape (m, d)
        Head diagonals (the columns of D).
    M : int
        Prompt length, >= 1.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: exact (rank/M in one rounding) when the numerical rank is the rank, e.g. integer heads and the paper's
    construction (tested against exact rational elimination (tests/test_accuracy_icl.py)); singular values within
    max(m, d) eps sigma_max of 0 count as 0.
    Regime: any D. ``P_D`` is the orthogonal projector on col(D) (pseudo-inverse): ``D^T D`` is singular
    for the paper's heads (columns in +- pairs), so the printed ``D (D^T D)^{-1} D^T`` (Section 5.5.2) is undefined.

    References
    ----------
    .. [src] [Shi24, Section 5.5.2, Theorem 5.5.2, its proof (App. D.3.2)].

    Examples
    --------
    >>> noise_energy(paper_construction(3, 0.1)[1], M=1)  # rank D_2 = nu2 + 1 = 4
    4.0
    """
    V = np.asarray(V, dtype=np.float64)
    if V.ndim != 2 or not np.all(np.isfinite(V)):
        raise InvalidParameterError(
            f"The 'V' parameter of icl.noise_energy must be a finite (m, d) array of head diagonals. Got shape {V.shape}.")
    M = as_int("icl.noise_energy", "M", M, 1)
    return float(np.linalg.matrix_rank(V.T)) / M


def noise_energy_ratio(nu1, nu2):
    r"""Noise-energy ratio of the small and the large construction (Thm 5.5.2).

    .. math:: \frac{\mathbb E\lVert P_{D_1}\Xi\rVert^2}{\mathbb E\lVert P_{D_2}\Xi\rVert^2}
              =\frac{\mathrm{rank}D_1}{\mathrm{rank}D_2}=\frac{\nu_1+1}{\nu_2+1}

    Parameters
    ----------
    nu1, nu2 : int
        ``1 <= nu1 <= nu2``.

    Returns
    -------
    float in (0, 1].

    Notes
    -----
    Accuracy: one rounding of (nu1 + 1)/(nu2 + 1).
    Regime: the paper's construction (bit columns and the constant column are linearly independent).

    References
    ----------
    .. [src] [Shi24, Theorem 5.5.2 and its proof (App. D.3.2)].

    Examples
    --------
    >>> noise_energy_ratio(1, 3)
    0.5
    """
    nu2 = as_int("icl.noise_energy_ratio", "nu2", nu2, 1, 30)
    nu1 = as_int("icl.noise_energy_ratio", "nu1", nu1, 1, nu2)
    return (nu1 + 1) / (nu2 + 1)


def _context_means(problem, rng, t, f, M, n_flip):
    """``z = y^T Phi / M`` of sampled contexts (n, d), exactly: multinomial pattern counts on the task,
    binomial sums off it; the first ``n_flip`` labels of each context are flipped."""
    n, d = len(t), problem.d
    pats, probs = pattern_probs(problem.gamma)
    counts = rng.multinomial(M - n_flip, probs, size=n) - rng.multinomial(n_flip, probs, size=n)
    z = (2.0 * rng.binomial(M, 0.5, size=(n, d)) - M) / M
    rows = np.arange(n)
    z[rows, t[:, 0]] = counts @ pats[:, 1] / M    # y phi_i = phi_j
    z[rows, t[:, 1]] = counts @ pats[:, 0] / M
    return z


def _eval_block(problem, a, V, M, n, rng, n_flip):
    """Margins ``y_q g``, ``y_q h`` and ``|g - h|`` of n evaluation prompts (tasks from S1)."""
    t = _sample_tasks(problem, rng, n, pT=0.0)
    _, phi = _sample_queries(problem, rng, n, pT=0.0)
    rows = np.arange(n)
    pats, probs = pattern_probs(problem.gamma)
    f = pats[rng.choice(4, size=n, p=probs)]
    phi[rows, t[:, 0]], phi[rows, t[:, 1]] = f[:, 0], f[:, 1]
    z = _context_means(problem, rng, t, f, M, n_flip)
    y = f[:, 0] * f[:, 1]
    g = np.maximum((z * phi) @ V.T, 0.0) @ a
    u = z * phi                                      # Xi off the task; 2 gamma phi_hat on it (Thm 5.5.2)
    u[rows, t[:, 0]], u[rows, t[:, 1]] = 2 * problem.gamma * f[:, 0], 2 * problem.gamma * f[:, 1]
    h = np.maximum(u @ V.T, 0.0) @ a
    return y * g, y * h, np.abs(g - h)


def mc_eval(problem, a, V, M, *, prompts=20_000, seed=0, flip=0.0, chunk=1 << 14):
    r"""Finite-M evaluation of diagonal heads on fresh S1 prompts: accuracy, hinge and the Thm 5.5.2 gap.

    .. math:: g=\sum_na_n\mathrm{ReLU}\Big[\frac{y^\top X}{M}W^{(n)}x_q\Big],\qquad
              h=\sum_na_n\mathrm{ReLU}\big[\mathrm{diag}(V^{(n)})^\top(2\gamma\hat\phi_q+\Xi)\big]

    Parameters
    ----------
    problem : ParityProblem
    a : ndarray of shape (m,)
    V : ndarray of shape (m, d)
        Head diagonals.
    M : int
        Number of in-context examples, >= 1.
    prompts : int
        Number of evaluation prompts, >= 2.
    seed : int
        Seed of ``numpy.random.default_rng``.
    flip : float
        Fraction of the M context labels flipped (``round(flip M)`` of them), in [0, 1].
    chunk : int
        Prompts per block, >= 1.

    Returns
    -------
    dict
        ``acc`` (fraction with ``y_q g > 0``, a tie ``g = 0`` counted 1/2: a fair coin), ``hinge``, ``gap`` (mean
        ``|g - h|``) and ``hinge_h`` (the hinge of the theorem's ``h``, i.e. with ``epsilon_j`` dropped: NOT the
        model's loss, 10-13 % below it for the paper's heads), each with ``*_se``.

    Notes
    -----
    Accuracy: statistical: each mean within a few standard errors of its expectation; acc in [0, 1], hinge and gap
    >= 0 by construction.
    Regime: finite M, exact in distribution (G-invariant, so G = I). With ``V`` diagonal, ``g`` depends
    on a prompt only through ``z = y^T Phi / M``, sampled exactly: multinomial pattern counts on the
    task coordinates, ``(2 Bin(M, 1/2) - M)/M`` off them. ``h`` replaces z on the task by its mean
    ``2 gamma``; ``diag(V)^T Xi = diag(V)^T P_D Xi`` since diag(V) lies in col(D), so the projection of
    the theorem does not change h. The gap is O(sqrt(1/M)) (the proof's form, not the statement's).

    References
    ----------
    .. [src] [Shi24, Theorem 5.5.2, proof in App. D.3.2].

    Examples
    --------
    >>> p = ParityProblem.paper(1, 3, gamma=0.1)
    >>> r = mc_eval(p, *paper_construction(3, 0.1, nu1=1), M=10**6, prompts=1000)
    >>> r["acc"]  # M -> inf: the small model classifies every S1 prompt
    1.0
    """
    owner = "icl.mc_eval"
    problem = _check_problem(problem, owner)
    a, V = _check_heads(owner, a, V, problem.d)
    if V.ndim != 2:
        raise InvalidParameterError(f"The 'V' parameter of {owner} must hold head diagonals, shape (m, d).")
    M, n = as_int(owner, "M", M, 1), as_int(owner, "prompts", prompts, 2)
    flip = check(owner, "flip", flip, Interval(0, 1))
    chunk, n_flip = as_int(owner, "chunk", chunk, 1), int(round(flip * M))

    def sample(rng, size):
        margin, margin_h, gap = _eval_block(problem, a, V, M, size, rng, n_flip)
        return np.column_stack([(margin > 0) + 0.5 * (margin == 0), np.maximum(1 - margin, 0.0), gap,
                                np.maximum(1 - margin_h, 0.0)])

    mean, se = mc_mean(sample, n, seed=as_int(owner, "seed", seed, 0), chunk=chunk)
    out = {}
    for i, name in enumerate(("acc", "hinge", "gap", "hinge_h")):
        out[name], out[name + "_se"] = float(mean[i]), float(se[i])
    return out
