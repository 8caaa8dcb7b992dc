r"""Certified minimum-norm zero-loss heads for sparse parity in context ([Shi24, Theorem 5.5.1]; docs/icl.md).

A standalone script (no claim imports it). It proves global minima of

.. math:: \mathrm{OPT}=\min_{a,V}\ \sum_{n=1}^m\lVert V^{(n)}\rVert_F^2\quad\text{s.t.}\quad
          y_p\sum_na_n\,\mathrm{ReLU}\big(2\gamma\langle V^{(n)},x_p\rangle\big)\ge1\ \text{for every query } p
          \text{ of positive probability},

the "minimum loss (0), then minimum norm" problem that :func:`popdyn.models.icl.parity_minnorm.fit_heads` solves
by a local search, which only gives upper bounds. The queries ``(x_p, y_p)`` are popdyn's own
:func:`popdyn.models.icl.parity_minnorm.query_design` (``full=False``: head diagonals, the paper's form;
``full=True``: full ``d x d`` heads), so the certified problem is exactly the one of popdyn's solver and of the
claims ``icl.parity_minnorm_g2`` and ``icl.parity_minnorm_four_heads``. Results go to
``docs/data/icl_parity_certificates.json`` (written atomically); ``tests/test_icl_parity_certificates.py`` checks
every stored network with popdyn's public functions, without a solver.

Reduction to sign splits
------------------------
``|a_n| = 1`` at every optimum (the norm is on V only and ``a ReLU(v.x) = sign(a) ReLU(|a| v.x)``), so OPT is the
least, over the splits into ``m_+`` heads with ``a_n = +1`` and ``m - m_+`` with ``a_n = -1``, of the split's
minimum. Zero loss needs two heads of each sign (a query and its negation have the same label and opposite
pre-activations; docs/errata.md), so ``2 <= m_+ <= m - 2``; a head may be 0, so a split also covers fewer heads of
a sign. Write ``z_pn = 2 gamma <V^(n), x_p>``; head n *helps* query p when ``a_n y_p = +1`` and *hurts* it otherwise.

Method "bb" (default): branch and bound over activation regions with exact QP bounds
-------------------------------------------------------------------------------------
The queries come in pairs ``(p, p')`` with ``x_p' = -x_p`` and equal labels (checked by :func:`design`), so a head's
activation on the pair is one sign: ``z_pn >= 0`` (active on p) or ``z_pn <= 0`` (active on p'). A node fixes some
of these signs; its two children fix one more sign both ways, so they partition it (``z = 0`` lies in both closed
halves). The node's relaxation keeps, for every query p whose helping heads all have fixed signs (A_p: those
active on p; none active makes the node infeasible), the constraints

.. math:: \sum_{n\in A_p}z_{pn}-\sum_{n\in B_p}z_{pn}-\sum_{n\in S}z_{pn}\ \ge\ 1\qquad\text{for every }S\subseteq U_p,

with B_p the hurting heads fixed active on p and U_p the hurting heads not fixed on p; the intersection over S is
exactly ``sum_A z - sum_B z - sum_U ReLU(z) >= 1``, the true margin of those queries. Queries with an unfixed helping
head are dropped (a relaxation). So every zero-loss network in the node satisfies the relaxation, which is the
least-distance programme (LDP) ``min ||V||^2 s.t. G vec(V) >= h`` (the S-rows are added lazily, most violated
first). Its lower bound is taken from explicit multipliers ``lam >= 0`` by weak duality,
``OPT_node >= max_t (t h^T lam - t^2 ||G^T lam||^2 / 4) = (h^T lam)_+^2 / ||G^T lam||^2``, whatever solver produced
lam (NNLS, Lawson & Hanson 1974 ch. 23; SLSQP with NNLS multipliers on its active rows when NNLS is inaccurate;
an LP Farkas ray for infeasible nodes), so a solver's inaccuracy can weaken a bound but never make it invalid. A
node is pruned when its bound is >= ``(1 - tol)`` times the incumbent, the norm of a network whose true margins
(ReLU and all) are all >= 1, or when its relaxation's solution is such a network (then it is the node's optimum).
Otherwise it branches on an unfixed helping head of the violated query with the fewest unfixed helping heads. When
the tree is exhausted the incumbent is optimal up to the relative ``tol``: the certified lower bound is the least
bound of any node pruned by bound, and never below ``(1 - tol)`` times the value.

Symmetry (:func:`_break_symmetry`), when every pair of coordinates is a task (pT > 0; checked): the query set with
its labels is invariant under the coordinate permutations and ``V -> -V``, and the heads of one sign are
interchangeable, so every network has an image of equal norm and margins in the reduced root. Diagonal heads: take
any positive head; negate the network if its two largest entries sum to < 0 (then its two smallest do too, so after
negation the two largest sum to > 0); permute the coordinates to sort it in decreasing order; call it head 1. So
``v_1 >= ... >= v_d`` and ``v_1 + v_2 >= 0`` (rows of every node), which fix head 1 active (closed) on ``e_1 + e_2``
and on every ``e_i - e_j``, i < j. The query ``-(e_1 + e_2)`` needs a strictly active positive head and head 1 has
``z <= 0`` there: another positive head, called head 2. Likewise a negative head is strictly active on
``e_1 - e_2`` (head N1) and another on ``e_2 - e_1`` (head N2). Full heads: a negative head's diagonal is sorted
the same way (``V -> -V`` and ``V -> P V P^T`` act on the diagonal as on a diagonal head), and the positive heads
are paired on the first query with y = +1 and its negation.
The heads not singled out above (positive heads 3..; negative heads 3.. of a diagonal network, 2.. of a full one)
are interchangeable within their sign, so rows order them by the sum of their entries.

Capacity bounds (``capacity=True``, :meth:`_Split.capacity_bound`): the LDP drops every query with an unfixed
helping head. The capacity relaxation keeps them: an unfixed helping head n contributes ``w_pn >= 0`` with
``sum_{p in Q_n} w_pn^2 <= kappa_n r_n^2`` (Q_n its unfixed queries, ``kappa_n`` the top eigenvalue of the Gram
matrix of their pairs, since ``ReLU(z)^2 + ReLU(-z)^2 = z^2``), or ``w_pn <= (z_pn + t_pair)/2`` with
``sum t^2 <= kappa_n r_n^2`` (``ReLU(z) = (z + |z|)/2``), ``||V^(n)|| <= r_n``, objective ``sum r_n^2``. For any
multipliers the Lagrangian separates by heads and gives the closed form
``(h^T lam)_+^2 / sum_n a_n^2``, ``a_n`` the smaller of ``||g_n|| + sqrt(kappa_n) ||lam_Qn||`` and
``||g_n + Z_Qn^T lam_Qn / 2|| + sqrt(kappa_n) ||mu_n|| / 2`` (``g_n = (G^T lam)_n``, ``mu_n`` the multipliers
summed per pair): a valid bound for every ``lam >= 0``, improved by a few L-BFGS-B steps from the LDP's.

Sub-problem bounds (``subset_k``, :func:`sub_design`): the tasks inside k coordinates see only those entries
(diagonal) or rows (full heads) of every head, and each coordinate lies in a fraction k/d of the k-subsets, all
equivalent by a permutation, so ``OPT_split >= (d/k) OPT_split(k)``; the sub-problem's tree, pruned against
``(k/d)`` times the incumbent, closes the split when it proves that much.

NNLS (scipy >= 1.12) can return an infeasible, non-optimal point on degenerate systems; such nodes are re-solved by
SLSQP, and only the weak-duality bound is ever used to prune.

Method "dual": the symmetric Lagrangian bound of a split (diagonal heads, every pair of coordinates a task)
--------------------------------------------------------------------------------------------------------------
The queries are ``f_i e_i + f_j e_j`` with label ``f_i f_j``, all four signs of every pair i < j. Adding the
constraints of a query and its negation (``ReLU(z) + ReLU(-z) = |z|``), with ``w_n = 2 gamma V^(n)``, every
zero-loss network of the split satisfies, for every pair,

.. math:: \sum_{a_n=+1}\lvert w_{n,i}+w_{n,j}\rvert-\sum_{a_n=-1}\lvert w_{n,i}+w_{n,j}\rvert\ge2,\qquad
          \sum_{a_n=-1}\lvert w_{n,i}-w_{n,j}\rvert-\sum_{a_n=+1}\lvert w_{n,i}-w_{n,j}\rvert\ge2.

Weak duality with multipliers ``rho s`` and ``s`` on every pair (the problem is invariant under the coordinate
permutations and ``V -> -V``, so invariant multipliers lose nothing of the dual) separates the Lagrangian by heads.
With ``S+(u) = sum_{i<j} |u_i + u_j|``, ``S-(u) = sum_{i<j} |u_i - u_j|`` and C = d(d - 1)/2 pairs, a head of sign
+1 contributes ``min_w ||w||^2 / (4 gamma^2) - s (rho S+(w) - S-(w)) = -gamma^2 s^2 g+(rho)^2`` with
``g+(rho) = max_{|u| = 1} (rho S+(u) - S-(u))_+``, a head of sign -1 the same with ``g-(rho) = max_{|u|=1}
(S-(u) - rho S+(u))_+``, and the best s gives

.. math:: \mathrm{OPT}_{\rm split}\ \ge\ \frac{C^2(1+\rho)^2}{\gamma^2\,(m_+g_+(\rho)^2+m_-g_-(\rho)^2)}
          \qquad\text{for every }\rho>0.

Both maxima are over the sorted cone ``u_1 >= ... >= u_d`` (S+ and S- are symmetric), where S- is linear,
``s- . u`` with ``s-_i = d + 1 - 2i``. ``g+``: S+ is the largest of ``sum sigma_ij (u_i + u_j)`` over the sign
patterns sigma, and only the patterns of sorted vectors can attain it (:func:`_sorted_sign_patterns`, 2^(d-1) of
them); for each, ``max c . u`` over the cone and the unit ball is at most ``|c + A^T y|`` for every ``y >= 0`` (A the
cone's rows ``e_i - e_{i+1}``; NNLS picks y). ``g-``: S+ is at least ``sum theta_ij (u_i + u_j)`` for every
``theta`` in [-1, 1], so ``g-`` is at most ``|s- - rho Theta^T theta + A^T y|`` for every such theta and y >= 0
(a bounded least-squares problem picks them). Both are upper bounds for any y and theta, so the bound is valid
whatever the solvers return; ``rho`` is searched on a log grid and refined. Cost: under a second at d = 8. It needs
no branching and is the strongest bound known here for 8 diagonal heads at d = 8; it is below the certified optima
at d = 4 (a duality gap: the relaxation lets the heads of one sign coincide).

Method "scip": a mixed-integer QP (big-M), an independent check
----------------------------------------------------------------
A helping head contributes ``0 <= h_pn <= M_p b_pn`` and ``h_pn <= z_pn + M_p (1 - b_pn)`` with a binary ``b_pn``
(so ``h_pn <= ReLU(z_pn)``), a hurting head ``-g_pn`` with ``g_pn >= max(0, z_pn)`` (convex, no binary);
``sum h - sum g >= 1`` for every query; objective ``sum_n t_n``, ``t_n >= ||V^(n)||_F^2``. Every feasible point has
true margins >= 1, and every zero-loss network with ``|z_pn| <= M_p`` is feasible (``b = [z > 0]``).

Validity of the big-M constants, which is what makes the MIQP's optimum the true one: with ``U`` the norm of a known
zero-loss network (popdyn's solver, ``U >= OPT``) and ``U' = U (1 + 1e-6)``, the row ``sum_n t_n <= U'`` removes
no global minimiser; under it ``||V^(n)||_F <= sqrt(U')`` for every head, hence by Cauchy-Schwarz
``|z_pn| <= 2 gamma ||x_p|| sqrt(U') =: M_p`` (``||x_p|| = sqrt 2`` for diagonal heads, ``sqrt(2d)`` for full ones),
which is also each entry's box. Valid inequalities (no minimiser removed): ``b_pn + b_p'n <= 1`` (both active forces
``z = 0`` and ``h = 0``, reached with ``b = 0`` too) and ``sum_help b_pn >= 1`` (a margin >= 1 needs some ``h > 0``);
heads of one sign ordered by their first entry, and ``sum_{a_n = +1} V^(n)_1 >= 0`` (``V -> -V`` maps the query set
onto itself; negating, then re-sorting within each sign, leaves that sum's sign flipped and the order restored).
SCIP's dual bound holds up to its feasibility tolerance (1e-6 on the margin rows, i.e. for margins >= 1 - 1e-6,
whose optimum is >= (1 - 1e-6)^2 OPT by the 1-homogeneity of the heads).

Reported numbers: ``value`` is the norm of the stored network, re-solved exactly in its activation region (popdyn's
region QP) and rescaled so that every margin is >= 1 in floats; ``lower_bound`` the certified bound;
``gap = (value - lower_bound) / value``.

Dependencies: method "bb" needs only numpy and scipy. Method "scip" needs the optional PySCIPOpt
(``pip install pyscipopt==6.2.1``, bundling SCIP 10; the ``certify`` extra of popdyn's pyproject), which is not a
dependency of popdyn and is imported only there.

Usage: ``python -m popdyn.validation.icl_parity_certificates [case ...] [--method bb|dual|scip] [--time-limit S]
[--no-capacity] [--subset-k K] [--subset-share F]`` (cases: the keys of :data:`CASES`; default all).
Single-threaded. The stored open cases ran with ``--time-limit 5400 --subset-k 3`` (6 full heads) and
``--time-limit 2100 --subset-k 5`` (d = 8).

References
----------
.. [src] [Shi24, Section 5.5 (the objective), Theorem 5.5.1 ("g* = argmin lim L^lambda"), App. D.3.1].
"""
from __future__ import annotations

import argparse
import heapq
import itertools
import json
import time
from pathlib import Path

import numpy as np
import scipy
from scipy.optimize import lsq_linear, minimize, minimize_scalar, nnls

import popdyn
from popdyn.models import icl
from popdyn.models.icl import parity_minnorm
# the least-distance programme with its weak-duality bound is the library's (tests use _dual_bound from here)
from popdyn.models.icl.parity_minnorm import _LDP_FEAS as _FEAS, _dual_bound, _ldp  # noqa: F401
from popdyn.results import atomic_write

__all__ = ["CASES", "GAMMA", "DEFAULT_PATH", "problem_of", "design", "margins_of", "branch_and_bound", "miqp_scip",
           "symmetric_dual_bound", "certify", "load", "save"]

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "docs" / "data" / "icl_parity_certificates.json"
GAMMA = 0.1
_TOL = 1e-7           # prune when bound >= (1 - tol) * incumbent: certified relative gap <= 1e-7
_UPPER_SLACK = 1e-6   # U' = U (1 + 1e-6) in the MIQP: the norm row keeps every minimiser even when U = OPT
_CAP_ITER = 10        # L-BFGS-B iterations of the capacity bound's multipliers (any lam gives a valid bound)

# name -> (nu1, nu2, heads m, full heads, restarts of popdyn's solver for the incumbent)
CASES = {
    "d4_m4_diagonal": dict(nu1=1, nu2=2, m=4, full=False, restarts=20),
    "d4_m4_full": dict(nu1=1, nu2=2, m=4, full=True, restarts=40),
    "d4_m6_diagonal": dict(nu1=1, nu2=2, m=6, full=False, restarts=60),
    "d4_m6_full": dict(nu1=1, nu2=2, m=6, full=True, restarts=40),
    "d8_m8_diagonal": dict(nu1=1, nu2=3, m=8, full=False, restarts=60),
}


def problem_of(case):
    """The :class:`~popdyn.models.icl.ParityProblem` of a case: ``ParityProblem.paper(nu1, nu2, 0.1)``."""
    spec = CASES[case]
    return icl.ParityProblem.paper(spec["nu1"], spec["nu2"], GAMMA)


def design(problem, full):
    """Queries of positive probability, ``(X, y, partner)`` with ``X[partner[p]] = -X[p]`` and equal labels."""
    X, y, w = parity_minnorm.query_design(problem, full=full)
    X, y = X[w > 0], y[w > 0]
    index = {tuple(x): p for p, x in enumerate(X)}
    partner = np.array([index[tuple(-x)] for x in X])
    if not np.all(y[partner] == y) or np.any(partner == np.arange(len(X))):
        raise AssertionError("the query set is not closed under negation with equal labels")
    return X, y, partner


def sub_design(problem, full, k):
    """The queries of the tasks inside the first ``k`` coordinates, ``(X, y, partner)`` as :func:`design`.

    Their pre-activations depend only on the entries (diagonal heads) or rows (full heads) ``< k`` of every head,
    whose squared norm sums over them, so by the fractional cover of the coordinates by all k-subsets (each
    coordinate in a fraction k/d of them, every k-subset equivalent to the first by a permutation) the minimum
    norm of the whole problem is at least ``d / k`` times the sub-problem's (per sign split too).
    """
    X, y, _ = design(problem, full)
    d = problem.d
    rows = np.abs(X).reshape(len(X), d, d).sum(2) if full else np.abs(X)
    keep = ~np.any(rows[:, k:] > 0, axis=1)
    X, y = X[keep], y[keep]
    index = {tuple(x): p for p, x in enumerate(X)}
    return X, y, np.array([index[tuple(-x)] for x in X])


def margins_of(problem, a, V, full):
    """Margins ``y_p g`` of the heads ``(a, V)`` on every query of positive probability (popdyn's design)."""
    X, y, w = parity_minnorm.query_design(problem, full=full)
    z = 2 * problem.gamma * X[w > 0] @ np.asarray(V, float).reshape(len(a), -1).T
    return y[w > 0] * (np.maximum(z, 0.0) @ np.asarray(a, float))


# ---- method "bb" ---------------------------------------------------------------------------------------------

class _Split:
    """The fixed data of one sign split: pair indices, helping mask, and the node relaxation."""

    def __init__(self, X, y, partner, signs, two_gamma):
        self.P, self.D = X.shape
        self.m = len(signs)
        self.signs = np.asarray(signs, float)
        self.y = y
        self.first = np.flatnonzero(partner > np.arange(self.P))          # one query of each pair
        self.pair = np.empty(self.P, int)
        self.side = np.empty(self.P, int)
        self.pair[self.first], self.side[self.first] = np.arange(self.first.size), 1
        self.pair[partner[self.first]], self.side[partner[self.first]] = np.arange(self.first.size), -1
        self.helps = self.signs[None, :] * y[:, None] > 0                   # (P, m)
        self.Z = two_gamma * X                                              # z_pn = Z[p] . V[n]
        self.G_sym = np.zeros((0, self.m * self.D))                         # symmetry rows, G_sym x >= 0

    def z(self, x):
        return self.Z @ x.reshape(self.m, self.D).T

    def margins(self, x):
        return self.y * (np.maximum(self.z(x), 0.0) @ self.signs)

    def state(self, fixed):
        """(P, m): +1 head fixed active on the query, -1 fixed inactive, 0 not fixed."""
        return fixed[:, self.pair].T * self.side[:, None]

    def _rows(self, coef, queries):
        return (coef[:, :, None] * self.Z[queries][:, None, :]).reshape(len(queries), self.m * self.D)

    def relax(self, fixed):
        """Solve the node relaxation; ``(x or None, lower bound)``."""
        st = self.state(fixed)
        heads, pairs = np.nonzero(fixed)
        coef = np.zeros((heads.size, self.m))
        coef[np.arange(heads.size), heads] = fixed[heads, pairs]
        G_act = np.vstack([self.G_sym, self._rows(coef, self.first[pairs])])  # symmetry and sign rows, >= 0
        closed = ~np.any(self.helps & (st == 0), axis=1)                    # every helping head fixed
        if np.any(closed & ~np.any(self.helps & (st > 0), axis=1)):
            return None, np.inf                                             # no helping head can be active
        base = (self.helps & (st > 0)).astype(float) - (~self.helps & (st > 0))
        free_hurt = ~self.helps & (st == 0)
        q = np.flatnonzero(closed)
        coefs, queries = [base[q]], [q]
        while True:
            G = np.vstack([G_act, self._rows(np.vstack(coefs), np.concatenate(queries))])
            h = np.r_[np.zeros(len(G_act)), np.ones(len(G) - len(G_act))]
            self.last = (G, h)
            if len(G) == 0:
                return np.zeros(self.m * self.D), 0.0
            x, lower = _ldp(G, h)
            if x is None:
                return None, lower
            z = self.z(x)
            true = (base * z).sum(1) - (np.maximum(z, 0.0) * free_hurt).sum(1)
            viol = q[true[q] < 1 - _FEAS]
            if viol.size == 0:
                return x, lower
            coefs.append(base[viol] - (free_hurt[viol] & (z[viol] > 0)))   # the most violated S of each query
            queries.append(viol)

    def capacity_bound(self, fixed, x):
        """Weak-duality bound of the node's relaxation *with* the queries that have unfixed helping heads.

        Relaxation: ``min sum_n r_n^2`` over ``(V, r, w)`` with ``||V^(n)|| <= r_n``, the rows ``G x >= h`` of
        :meth:`relax` (its last LDP), and for every query p with unfixed helping heads U_p one row
        ``base_p . z_p - sum_{n in S_p} z_pn + sum_{n in U_p} w_pn >= 1`` (S_p: the free hurting heads active at
        x), ``w_pn >= 0``, ``sum_{p in Q_n} w_pn^2 <= kappa_n r_n^2`` (Q_n: the queries where n is an unfixed
        helping head; a network gives ``w_pn = ReLU(z_pn)``, and ``sum_{p in Q_n} ReLU(z_pn)^2 = sum_pairs z^2
        <= kappa_n ||V^(n)||^2``, ``kappa_n`` the top eigenvalue of those pairs' Gram matrix). For multipliers
        ``lam >= 0`` the per-head minimum of ``r^2 - g_n.v - lam_Qn.w`` is ``-a_n^2/4``,
        ``a_n = ||g_n|| + sqrt(kappa_n) ||lam_Qn||``, ``g_n = (G^T lam)_n``, so by weak duality every network of
        the node has norm >= ``(h^T lam)_+^2 / sum_n a_n^2`` whatever ``lam``; ``lam`` is improved by L-BFGS-B
        from the LDP's multipliers. Without such queries this is the LDP's own bound.
        """
        G, h = self.last
        st = self.state(fixed)
        open_help = self.helps & (st == 0)
        drop = np.flatnonzero(open_help.any(1))
        if drop.size == 0:
            return 0.0
        z = self.z(x)
        base = (self.helps & (st > 0)).astype(float) - (~self.helps & (st > 0))
        free_hurt = ~self.helps & (st == 0)
        coef = base[drop] - (free_hurt[drop] & (z[drop] > 0))
        G_all = np.vstack([G, self._rows(coef, drop)])
        h_all = np.r_[h, np.ones(drop.size)]
        W = open_help[drop]                                               # (rows of drop, m): Q_n membership
        kappa = np.zeros(self.m)
        for n in range(self.m):
            pairs = np.unique(self.pair[drop[W[:, n]]])
            if pairs.size:
                Zp = self.Z[self.first[pairs]]
                kappa[n] = np.linalg.eigvalsh(Zp.T @ Zp)[-1]
        sk = np.sqrt(kappa)
        R0 = len(G)
        act = G @ x - h <= 1e-8
        lam0 = np.zeros(len(h_all))
        if act.any():
            lam0[np.flatnonzero(act)] = nnls(G[act].T, 2 * x, maxiter=50 * int(act.sum()))[0]
        lam0[R0:] = max(1e-3, 1e-2 * lam0.max(initial=0.0))

        Zd = self.Z[drop]                                                 # zeta_p of the dropped queries
        Pm = np.zeros((drop.size, self.first.size))                       # query -> pair
        Pm[np.arange(drop.size), self.pair[drop]] = 1.0

        def parts(lam):
            g = (G_all.T @ lam).reshape(self.m, self.D)
            gn = np.sqrt((g * g).sum(1) + 1e-300)
            lq = np.sqrt(((lam[R0:, None] * W) ** 2).sum(0) + 1e-300)
            a1 = gn + sk * lq
            # second relaxation: ReLU(z) = (z + |z|)/2 <= (z + t_pair)/2, sum_pairs t^2 <= kappa r^2
            lw = lam[R0:, None] * W                                       # (drop, m)
            g2 = g + 0.5 * (lw.T @ Zd)
            mu = np.sqrt(((Pm.T @ lw) ** 2).sum(0))
            a2 = np.sqrt((g2 * g2).sum(1)) + 0.5 * sk * mu
            return g, gn, lq, np.minimum(a1, a2)

        def f(lam):
            g = (G_all.T @ lam).reshape(self.m, self.D)
            gn = np.sqrt((g * g).sum(1) + 1e-300)
            lw = lam[R0:, None] * W
            lq = np.sqrt((lw ** 2).sum(0) + 1e-300)
            g2 = g + 0.5 * (lw.T @ Zd)
            g2n = np.sqrt((g2 * g2).sum(1) + 1e-300)
            pw = Pm.T @ lw                                                # (pairs, m)
            mu = np.sqrt((pw ** 2).sum(0) + 1e-300)
            a1, a2 = gn + sk * lq, g2n + 0.5 * sk * mu
            hl = h_all @ lam
            if hl <= 0:
                return 1e3, -h_all
            a = np.minimum(a1, a2)
            F = a @ a
            one = a1 <= a2
            c = 2 * a                                                     # dF/da_n
            u1 = np.where(one, c / gn, 0.0)[:, None] * g
            u2 = np.where(one, 0.0, c / g2n)[:, None] * g2
            dF = G_all @ (u1 + u2).ravel()
            dF[R0:] += (W * ((u2 @ Zd.T).T * 0.5)).sum(1)
            dF[R0:] += (W * np.where(one, c * sk / lq, 0.0)[None, :] * lam[R0:, None]).sum(1)
            dF[R0:] += (W * (Pm @ (pw * np.where(one, 0.0, 0.5 * c * sk / mu)[None, :]))).sum(1)
            return np.log(F) - 2 * np.log(hl), dF / F - 2 * h_all / hl

        res = minimize(f, lam0, jac=True, method="L-BFGS-B", bounds=[(0, None)] * len(lam0),
                       options={"maxiter": _CAP_ITER})
        best = 0.0
        for lam in (lam0, np.maximum(res.x, 0.0)):
            hl = float(h_all @ lam)
            if hl > 0:
                _, _, _, a = parts(lam)
                aa = float(a @ a)
                best = max(best, np.inf if aa == 0 else hl * hl / aa)   # aa = 0 < h^T lam: a Farkas ray
        return best

    def branch(self, fixed, x):
        """(head, pair) to fix next: an unfixed helping head of the violated query with the fewest of them."""
        st = self.state(fixed)
        open_ = self.helps & (st == 0)
        if x is None or not open_.any():   # no usable point, or every helping head fixed: any unfixed sign
            if not open_.any():
                open_ = st == 0
            heads, queries = np.nonzero(open_.T)
            return (int(heads[0]), int(self.pair[queries[0]])) if heads.size else None
        mg, z = self.margins(x), self.z(x)
        cand = np.flatnonzero(open_.any(1) & (mg < 1 - 1e-9))
        if cand.size == 0:
            cand = np.flatnonzero(open_.any(1))
        p = cand[np.lexsort((mg[cand], open_[cand].sum(1)))[0]]
        heads = np.flatnonzero(open_[p])
        return int(heads[np.argmax(np.abs(z[p, heads]))]), int(self.pair[p])


def _fix(root, split, head, query):
    """Fix ``head`` active (z >= 0) on ``query`` in the root."""
    root[head, split.pair[query]] = split.side[query]


def _break_symmetry(split, X, y, partner, full, k=None):
    """Root fixings and symmetry rows (``split.G_sym``), valid by the argument in the module docstring.

    ``k`` (default d): only the first k coordinates are permuted (a sub-problem whose tasks lie in them: their
    permutations, the other coordinates fixed, map its query set onto itself; checked)."""
    D, m = split.D, split.m
    d = int(round(np.sqrt(D))) if full else D
    k = d if k is None else k
    pos, neg = np.flatnonzero(split.signs > 0), np.flatnonzero(split.signs < 0)
    root = np.zeros((m, split.first.size), np.int8)
    query = {tuple(x): p for p, x in enumerate(X)}
    for perm in (np.r_[1, 0, 2:d], np.r_[np.roll(np.arange(k), 1), k:d]):   # generators of S_k: the query set
        Y = X.reshape(-1, d, d)[:, perm][:, :, perm] if full else X[:, perm]    # must be closed under them
        if any(query.get(tuple(x)) is None or y[query[tuple(x)]] != lab for x, lab in zip(Y.reshape(len(X), -1), y)):
            raise ValueError("the symmetry reduction needs every pair of coordinates to be a task (pT > 0 or k = d)")
    sorted_head = neg[0] if full else pos[0]
    entry = (lambda k: sorted_head * D + k * d + k) if full else (lambda k: sorted_head * D + k)
    rows = np.zeros((k, m * D))
    for i in range(k - 1):                      # the sorted head's (diagonal) entries descending
        rows[i, entry(i)], rows[i, entry(i + 1)] = 1.0, -1.0
    rows[k - 1, entry(0)] = rows[k - 1, entry(1)] = 1.0   # ... with the two largest summing to >= 0
    # heads not singled out below are interchangeable within their sign: order them by the sum of their entries
    free = [pos[2:], neg[1:]] if full else [pos[2:], neg[2:]]
    order = [np.kron(np.eye(m)[a] - np.eye(m)[b], np.ones(D)) for group in free for a, b in zip(group[:-1], group[1:])]
    split.G_sym = np.vstack([rows] + order) if order else rows
    if full:                                    # positive heads: P1 active on a y = +1 query, P2 on its negation
        p0 = int(np.flatnonzero(y > 0)[0])
        _fix(root, split, pos[0], p0)
        _fix(root, split, pos[1], partner[p0])
        return root
    e = np.eye(d)
    p0 = query[tuple(e[0] + e[1])]
    _fix(root, split, pos[0], p0)               # implied by the rows: v_0 + v_1 >= 0 ...
    for i, j in itertools.combinations(range(k), 2):
        _fix(root, split, pos[0], query[tuple(e[i] - e[j])])   # ... and v_i - v_j >= 0 for i < j
    _fix(root, split, pos[1], partner[p0])      # another positive head active on -(e_0 + e_1)
    p1 = query[tuple(e[0] - e[1])]
    _fix(root, split, neg[0], p1)               # negative heads: N1 active on e_0 - e_1, N2 on its negation
    _fix(root, split, neg[1], partner[p1])
    return root


def branch_and_bound(X, y, partner, signs, two_gamma, incumbent, *, full, symmetry=True, time_limit=600.0,
                     tol=_TOL, capacity=False, k=None):
    """Exact minimum of one sign split (method "bb"), pruned against ``incumbent = (value, x or None)``.

    ``full`` says whether the rows of X are full heads (d^2 entries) or diagonals; it selects the symmetry
    reduction (:func:`_break_symmetry`; ``symmetry=False`` starts from the empty root instead). Returns a dict:
    ``value`` and ``x`` (the best network found, or the incumbent), ``lower_bound`` (valid for this split),
    ``status`` ("optimal" when the tree is exhausted, else "timelimit"), ``nodes``, ``time_s``.
    """
    split = _Split(X, y, partner, signs, two_gamma)
    m = split.m
    root = _break_symmetry(split, X, y, partner, full, k) if symmetry else np.zeros((m, split.first.size), np.int8)
    best_value, best_x = incumbent
    pruned_lower = np.inf
    heap, order = [(0.0, 0, root)], itertools.count(1)
    nodes, start = 0, time.perf_counter()
    while heap:
        bound, _, fixed = heap[0]
        if bound >= best_value * (1 - tol):
            pruned_lower = min(pruned_lower, bound)
            heapq.heappop(heap)
            continue
        if time.perf_counter() - start > time_limit:
            break
        heapq.heappop(heap)
        nodes += 1
        x, lower = split.relax(fixed)
        lower = max(lower, bound)
        if capacity and x is not None and lower < best_value * (1 - tol):
            lower = max(lower, split.capacity_bound(fixed, x))
        if lower >= best_value * (1 - tol):
            pruned_lower = min(pruned_lower, lower)
            continue
        if x is not None and split.margins(x).min() >= 1 - 1e-9:
            xs = x / min(1.0, split.margins(x).min())
            if xs @ xs < best_value:
                best_value, best_x = float(xs @ xs), xs
            if lower >= best_value * (1 - tol):       # the relaxation's optimum is a network: node solved
                pruned_lower = min(pruned_lower, lower)
                continue
        choice = split.branch(fixed, x)
        if choice is None:
            raise RuntimeError("a node with every activation sign fixed kept a bound below the incumbent (the QP "
                               "multipliers were inaccurate); rerun with a larger tol")
        n, q = choice
        for s in (1, -1):
            child = fixed.copy()
            child[n, q] = s
            heapq.heappush(heap, (lower, next(order), child))
    done = not heap or heap[0][0] >= best_value * (1 - tol)
    lower_bound = min(pruned_lower, best_value) if done else min([pruned_lower, best_value, heap[0][0]])
    return {"value": best_value, "x": best_x, "lower_bound": float(lower_bound),
            "status": "optimal" if done else "timelimit", "nodes": nodes, "time_s": time.perf_counter() - start}


# ---- method "scip" -------------------------------------------------------------------------------------------

def miqp_scip(X, y, partner, signs, two_gamma, upper, *, time_limit=600.0, seed=0):
    """Minimum of one sign split by the big-M MIQP in SCIP; ``upper`` is the norm of a known zero-loss network.

    Returns a dict like :func:`branch_and_bound` (``x`` None when SCIP found no network)."""
    from pyscipopt import Model, quicksum

    P, D = X.shape
    m = len(signs)
    ub = upper * (1 + _UPPER_SLACK)
    M = two_gamma * np.linalg.norm(X, axis=1) * np.sqrt(ub)   # |z_pn| <= M_p when sum_n ||V^(n)||^2 <= U'
    model = Model("icl_parity_minnorm")
    model.hideOutput()
    model.setParam("limits/time", float(time_limit))
    model.setParam("randomization/randomseedshift", int(seed))
    v = [[model.addVar(f"v{n}_{k}", lb=-np.sqrt(ub), ub=np.sqrt(ub)) for k in range(D)] for n in range(m)]
    t = [model.addVar(f"t{n}", lb=0.0, ub=ub) for n in range(m)]
    for n in range(m):
        model.addCons(quicksum(x * x for x in v[n]) <= t[n])
    model.addCons(quicksum(t) <= ub)
    b = {}
    for p in range(P):
        terms = []
        for n in range(m):
            z = quicksum(float(two_gamma * X[p, k]) * v[n][k] for k in np.flatnonzero(X[p]))
            if signs[n] * y[p] > 0:
                h = model.addVar(f"h{p}_{n}", lb=0.0, ub=float(M[p]))
                b[p, n] = model.addVar(f"b{p}_{n}", vtype="B")
                model.addCons(h <= float(M[p]) * b[p, n])
                model.addCons(h <= z + float(M[p]) * (1 - b[p, n]))
                terms.append(h)
            else:
                g = model.addVar(f"g{p}_{n}", lb=0.0, ub=float(M[p]))
                model.addCons(g >= z)
                terms.append(-g)
        model.addCons(quicksum(terms) >= 1)
        model.addCons(quicksum(b[p, n] for n in range(m) if (p, n) in b) >= 1)
    for (p, n), bpn in b.items():
        if partner[p] > p:
            model.addCons(bpn + b[partner[p], n] <= 1)
    for group in (np.flatnonzero(signs > 0), np.flatnonzero(signs < 0)):
        for n1, n2 in zip(group[:-1], group[1:]):
            model.addCons(v[n1][0] >= v[n2][0])
    model.addCons(quicksum(v[n][0] for n in np.flatnonzero(signs > 0)) >= 0)
    model.setObjective(quicksum(t), "minimize")
    start = time.perf_counter()
    model.optimize()
    x = None
    if model.getNSols() > 0:
        sol = model.getBestSol()
        x = np.array([[sol[var] for var in head] for head in v]).ravel()
    out = {"value": model.getPrimalbound() if x is not None else np.inf, "x": x,
           "lower_bound": float(model.getDualbound()), "status": model.getStatus(), "nodes": model.getNNodes(),
           "time_s": time.perf_counter() - start}
    model.freeProb()
    return out


# ---- method "dual" -------------------------------------------------------------------------------------------

def _sorted_sign_patterns(d):
    """Every pattern ``sign(u_i + u_j)`` (pairs i < j in lexicographic order, ties +1) of a vector sorted
    decreasingly, as rows: p entries >= 0, and the merge order of ``u_1 >= ... >= u_p`` with
    ``-u_d >= ... >= -u_{p+1}`` decides the pairs across (``u_i + u_j >= 0`` iff ``u_i`` comes first)."""
    pairs = list(itertools.combinations(range(d), 2))
    out = set()
    for p in range(d + 1):
        for first in itertools.combinations(range(d), p):          # merge positions of u_1..u_p
            rank_a = dict(zip(range(p), first))
            rank_b = dict(zip(range(d - 1, p - 1, -1), sorted(set(range(d)) - set(first))))
            out.add(tuple(1 if j < p or (i < p and rank_a[i] < rank_b[j]) else -1 for i, j in pairs))
    return np.array(sorted(out), float)


def _check_every_pair(X, y, d):
    """The design is ``f_i e_i + f_j e_j`` with label ``f_i f_j`` for every pair i < j and every sign (the dual
    bound's premise)."""
    want = {}
    for i, j in itertools.combinations(range(d), 2):
        for fi, fj in itertools.product((1.0, -1.0), repeat=2):
            x = np.zeros(d)
            x[[i, j]] = fi, fj
            want[tuple(x)] = fi * fj
    if dict(zip(map(tuple, X), y)) != want or len(X) != len(want):
        raise AssertionError("the dual bound needs every pair of coordinates as a task, with all four signs")


def _cone_max(c, A):
    """Upper bound on ``max c . u`` over ``A u >= 0``, ``|u| <= 1``: ``|c + A^T y|`` at the NNLS ``y >= 0``."""
    y, _ = nnls(-A.T, c)
    return float(np.linalg.norm(c + A.T @ np.maximum(y, 0.0)))


def symmetric_dual_bound(d, m_pos, m_neg, gamma, rho=None):
    """Lower bound on the minimum norm of a zero-loss split with ``m_pos`` heads of sign +1 and ``m_neg`` of sign
    -1 (diagonal heads, every pair of the d coordinates a task): the symmetric Lagrangian bound of the module
    docstring, ``C^2 (1 + rho)^2 / (gamma^2 (m_pos g+^2 + m_neg g-^2))``, at ``rho`` (None: the best found).
    Returns ``{"lower_bound", "rho", "g_pos", "g_neg"}``."""
    pairs = list(itertools.combinations(range(d), 2))
    plus = np.zeros((len(pairs), d))
    for r, (i, j) in enumerate(pairs):
        plus[r, [i, j]] = 1.0
    cone = np.eye(d - 1, d) - np.eye(d - 1, d, 1)                      # rows e_i - e_{i+1}
    s_minus = d + 1 - 2.0 * np.arange(1, d + 1)                         # S- on the sorted cone
    sums = _sorted_sign_patterns(d) @ plus                              # sum_ij sigma_ij (e_i + e_j), per pattern
    box = (np.r_[-np.ones(len(pairs)), np.zeros(d - 1)], np.r_[np.ones(len(pairs)), np.full(d - 1, np.inf)])

    def gs(r):
        g_pos = max(0.0, max(_cone_max(r * c - s_minus, cone) for c in sums))
        M = np.hstack([-r * plus.T, cone.T])
        x = np.clip(lsq_linear(M, -s_minus, bounds=box, method="bvls", tol=1e-14).x, *box)
        return g_pos, float(np.linalg.norm(s_minus + M @ x))

    def bound(r):
        g_pos, g_neg = gs(r)
        den = gamma ** 2 * (m_pos * g_pos ** 2 + m_neg * g_neg ** 2)
        return len(pairs) ** 2 * (1 + r) ** 2 / den if den > 0 else np.inf

    if rho is None:
        grid = np.geomspace(1e-2, 1e2, 41)
        k = int(np.argmax([bound(r) for r in grid]))
        lo, hi = np.log(grid[max(k - 1, 0)]), np.log(grid[min(k + 1, len(grid) - 1)])
        rho = float(np.exp(minimize_scalar(lambda t: -bound(np.exp(t)), bounds=(lo, hi), method="bounded",
                                           options={"xatol": 1e-6}).x))
    g_pos, g_neg = gs(rho)
    return {"lower_bound": bound(rho), "rho": rho, "g_pos": g_pos, "g_neg": g_neg}


# ---- certificates --------------------------------------------------------------------------------------------

def _polish(X, y, signs, x, two_gamma):
    """Exact minimum norm in the closed activation region of ``x`` (popdyn's region QP), rescaled so that every
    margin is >= 1 in floats; the heads as an (m, D) array."""
    m = len(signs)
    V = x.reshape(m, -1)
    rows, cone = parity_minnorm._region_rows(X, y, np.asarray(signs, float), two_gamma * X @ V.T > 0, two_gamma)
    G = np.vstack([rows, cone])
    exact, _ = _ldp(G, np.r_[np.ones(len(X)), np.zeros(len(cone))])
    W = V if exact is None or exact @ exact > V.ravel() @ V.ravel() else exact.reshape(m, -1)
    marg = y * (np.maximum(two_gamma * X @ W.T, 0.0) @ signs)
    return W * (1 + 4 * np.finfo(float).eps) / min(1.0, marg.min())


def certify(case, *, method="bb", time_limit=600.0, capacity=True, subset_k=None, subset_share=0.4):
    """Certify ``CASES[case]``: popdyn's solver gives the incumbent, then every sign split is solved exactly.

    ``time_limit`` is shared by the splits (the incumbent's split first, each split an equal share of what is
    left). Method "bb": ``capacity`` adds :meth:`_Split.capacity_bound` at every node; ``subset_k`` (k < d) first
    spends ``subset_share`` of a split's time on the sub-problem of the tasks inside k coordinates
    (:func:`sub_design`, pruned against ``k/d`` times the incumbent, which is what closes the split), whose
    bound times ``d/k`` bounds the split. Returns a JSON-ready dict.
    """
    if method not in ("bb", "dual", "scip"):
        raise ValueError(f"method must be 'bb', 'dual' or 'scip'. Got {method!r} instead.")
    spec = CASES[case]
    if method == "dual" and spec["full"]:
        raise ValueError(f"method 'dual' needs diagonal heads; case {case!r} has full heads.")
    problem = problem_of(case)
    d = problem.d
    if subset_k is not None and not 2 <= subset_k < d:
        raise ValueError(f"subset_k must be an integer in [2, {d - 1}] or None. Got {subset_k!r} instead.")
    X, y, partner = design(problem, spec["full"])
    if method == "dual":
        _check_every_pair(X, y, d)
    m, two_gamma = spec["m"], 2 * problem.gamma
    start = time.perf_counter()
    fit = parity_minnorm.fit_heads(problem, m, restarts=spec["restarts"], full=spec["full"])
    n_pos = int(np.sum(fit.a > 0))
    heads = fit.V.reshape(m, -1)
    best = (fit.norm, np.r_[np.ones(n_pos), -np.ones(m - n_pos)], np.r_[heads[fit.a > 0], heads[fit.a < 0]])
    incumbent_source = f"fit_heads(problem, {m}, restarts={spec['restarts']}, full={spec['full']}): {fit.norm!r}"
    splits = []
    order = [n_pos] + [k for k in range(2, m - 1) if k != n_pos]
    for k, m_pos in enumerate(order):
        signs = np.r_[np.ones(m_pos), -np.ones(m - m_pos)]
        left = max(1.0, (time_limit - (time.perf_counter() - start)) / (len(order) - k))
        sub = None
        if method == "bb" and subset_k is not None:
            Xs, ys, ps = sub_design(problem, spec["full"], subset_k)
            out = branch_and_bound(Xs, ys, ps, signs, two_gamma, (best[0] * subset_k / d, None), full=spec["full"],
                                   time_limit=subset_share * left, capacity=capacity, k=subset_k)
            sub = {"k": subset_k, "status": out["status"], "lower_bound": out["lower_bound"],
                   "scaled_lower_bound": out["lower_bound"] * d / subset_k, "nodes": int(out["nodes"]),
                   "time_s": out["time_s"]}
            left -= out["time_s"]
        if sub is not None and sub["scaled_lower_bound"] >= best[0] * (1 - _TOL):
            out = {"status": "optimal", "lower_bound": min(sub["scaled_lower_bound"], best[0]), "nodes": 0,
                   "time_s": 0.0, "x": None}
        elif method == "dual":
            t0 = time.perf_counter()
            dual = symmetric_dual_bound(d, m_pos, m - m_pos, problem.gamma)
            closed = dual["lower_bound"] >= best[0] * (1 - _TOL)
            out = {"status": "optimal" if closed else "bounded", "lower_bound": min(dual["lower_bound"], best[0]),
                   "nodes": 0, "time_s": time.perf_counter() - t0, "x": None, "rho": dual["rho"]}
        elif method == "bb":
            out = branch_and_bound(X, y, partner, signs, two_gamma, (best[0], None), full=spec["full"],
                                   time_limit=max(1.0, left), capacity=capacity)
        else:
            out = miqp_scip(X, y, partner, signs, two_gamma, best[0], time_limit=left)
        row = {"positive_heads": m_pos, "status": out["status"], "lower_bound": out["lower_bound"],
               "nodes": int(out["nodes"]), "time_s": out["time_s"]} | ({"rho": out["rho"]} if "rho" in out else {})
        if sub is not None:
            row["direct_lower_bound"] = row["lower_bound"]
            row["lower_bound"] = max(row["lower_bound"], min(sub["scaled_lower_bound"], best[0]))
            row["subproblem"] = sub
        if out["x"] is not None:
            W = _polish(X, y, signs, out["x"], two_gamma)
            row["found"] = float(np.sum(W * W))
            if row["found"] < best[0]:
                best = (row["found"], signs, W)
        splits.append(row)
    value, a, W = best
    lower = min(r["lower_bound"] for r in splits)
    solver = (f"popdyn branch and bound over activation regions (NNLS/SLSQP least-distance programmes, "
              f"weak-duality bounds{', capacity bounds' if capacity else ''}"
              f"{f', sub-problem bounds (k = {subset_k})' if subset_k else ''}; relative tolerance {_TOL:g}), "
              f"scipy {scipy.__version__}") if method == "bb" else (
        f"popdyn symmetric Lagrangian bound (NNLS and bounded least squares), scipy {scipy.__version__}"
        if method == "dual" else _scip_version())
    return {"case": case, "problem": repr(problem), "d": d, "gamma": problem.gamma, "heads": m, "full": spec["full"],
            "method": method, "value": value, "lower_bound": min(lower, value),
            "gap": max(0.0, (value - lower) / value),
            "certified": all(r["status"] == "optimal" for r in splits), "time_s": time.perf_counter() - start,
            "incumbent": incumbent_source, "splits": splits,
            "a": np.asarray(a, float).tolist(), "V": W.reshape((m, d, d) if spec["full"] else (m, d)).tolist(),
            "solver": solver, "popdyn": popdyn.__version__, "time_limit_s": time_limit, "threads": 1}


def _scip_version():
    import pyscipopt
    return f"SCIP {pyscipopt.Model().version()} via PySCIPOpt {pyscipopt.__version__} (big-M MIQP)"


def load(path=DEFAULT_PATH):
    """The stored certificates, ``{key: dict}`` (empty when the file does not exist)."""
    path = Path(path)
    return json.loads(path.read_text())["certificates"] if path.exists() else {}


def save(certificates, path=DEFAULT_PATH):
    """Write ``{key: dict}`` atomically (:func:`popdyn.results.atomic_write`)."""
    text = json.dumps({"description": "Certified minimum-norm zero-loss heads, sparse parity in context, N -> inf "
                                      "(docs/icl.md); written by validation/icl_parity_certificates.py",
                       "certificates": certificates}, indent=1)
    atomic_write(path, lambda f: f.write((text + "\n").encode()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help=f"any of {', '.join(CASES)} (default: all)")
    parser.add_argument("--method", choices=("bb", "dual", "scip"), default="bb")
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds per case, all splits together")
    parser.add_argument("--out", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--no-capacity", action="store_true", help="LDP bounds only (no capacity bounds)")
    parser.add_argument("--subset-k", type=int, default=None, help="sub-problem of the tasks in k coordinates")
    parser.add_argument("--subset-share", type=float, default=0.4, help="share of a split's time for it")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; the cases are {', '.join(CASES)}")
    for case in args.cases or CASES:
        cert = certify(case, method=args.method, time_limit=args.time_limit, capacity=not args.no_capacity,
                       subset_k=args.subset_k, subset_share=args.subset_share)
        stored = load(args.out)
        stored[f"{case}/{args.method}"] = cert
        save(stored, args.out)
        print(f"{case} ({args.method}): value {cert['value']:.10g}, lower bound {cert['lower_bound']:.10g}, "
              f"gap {cert['gap']:.1e}, {cert['time_s']:.0f} s; "
              + ", ".join(f"m+ = {r['positive_heads']}: {r['status']} ({r['nodes']} nodes)" for r in cert["splits"]),
              flush=True)


if __name__ == "__main__":
    main()
