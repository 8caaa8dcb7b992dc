r"""Sign patterns and task sets of the multi-task ReLU model ([Collins24] eq. (1), Assumption 2.1).

A task is a labeling ``fbar: {-1, 1}^r -> {-1, 1}`` of the sign pattern ``u = sign(x_{1:r})``; a task set
is its label table ``F`` (T, 2^r) with columns in :func:`sign_patterns` order.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..._validate import InvalidParameterError, as_int

__all__ = ["sign_patterns", "pattern_index", "TaskSet"]


def sign_patterns(r):
    r"""The ``2^r`` sign patterns ``u`` in ``itertools.product([-1, 1], repeat=r)`` order.

    Row ``i`` has ``u_k = +1`` iff bit ``r-1-k`` of ``i`` is set (coordinate 0 most significant).

    Parameters
    ----------
    r : int
        Number of ground-truth coordinates, ``r >= 1``.

    Returns
    -------
    ndarray of shape (2**r, r), float64 entries in {-1, 1}

    Notes
    -----
    Regime: r <= 24 (2^r rows); the order every task table, moment and sample of the model uses.

    References
    ----------
    .. [src] [Collins24, eq. (1)].

    Examples
    --------
    >>> sign_patterns(2).tolist()
    [[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]]
    """
    r = as_int("multitask.sign_patterns", "r", r, low=1, high=24)
    return np.array(list(itertools.product([-1.0, 1.0], repeat=r)))


def pattern_index(X, r):
    r"""Index in :func:`sign_patterns` order of ``sign(x_{1:r})`` for each row of ``X`` (n, >= r).

    .. math:: i(x) = \sum_{k=1}^r \mathbb 1\{x_k > 0\}\,2^{r-k}

    Notes
    -----
    Regime: Gaussian or hypercube rows; an exact 0 counts as -1 (probability 0 for Gaussian inputs).

    References
    ----------
    .. [src] [Collins24, eq. (1)]; the sign-pattern order is popdyn's (docs/multitask.md).
    """
    X = np.asarray(X)
    bits = (X[:, :r] > 0).astype(np.int64)
    return bits @ (1 << np.arange(r - 1, -1, -1, dtype=np.int64))


def _check_table(owner, F, r=None):
    F = np.array(F, dtype=np.float64)
    if F.ndim != 2 or F.shape[0] < 1 or not np.all(np.abs(F) == 1.0):
        raise InvalidParameterError(f"The 'F' parameter of {owner} must be a (T, 2^r) table of +-1 labels with T >= 1. "
                                    f"Got {F!r} instead.")
    P = F.shape[1]
    rr = int(round(np.log2(P))) if P > 0 else -1
    if P < 2 or 2 ** rr != P or (r is not None and rr != r):
        want = "2^r" if r is None else f"2^r = {2 ** r}"
        raise InvalidParameterError(f"The 'F' parameter of {owner} must have {want} columns (one per sign pattern). "
                                    f"Got shape {F.shape} instead.")
    return F


class TaskSet:
    r"""T binary tasks on the sign pattern of ``x_{1:r}``: the label table ``F`` in {-1, 1}^(T x 2^r).

    .. math:: f_i^*(x) = \bar f_i(\mathrm{sign}(x_{1:r})),\qquad
              \bar\beta = F^\top F / T \quad (2^r \times 2^r,\ \text{PSD})

    Parameters
    ----------
    F : array_like of shape (T, 2**r)
        Labels +-1, columns in :func:`sign_patterns` order.

    References
    ----------
    .. [src] [Collins24, Section 2.1 (tasks, Assumption 2.1), Section 5 (task kernel)]; Walsh statistics derived
       in docs/multitask.md.

    Examples
    --------
    >>> ts = TaskSet.hadamard(2)
    >>> ts.n_tasks, ts.r, bool(np.array_equal(ts.beta_bar(), np.eye(4)))
    (4, 2, True)
    """

    def __init__(self, F):
        self.F = _check_table("multitask.TaskSet", F)
        self.F.setflags(write=False)

    @property
    def n_tasks(self):
        """Number of tasks (T in the paper)."""
        return self.F.shape[0]

    @property
    def r(self):
        """Number of ground-truth coordinates (2^r columns)."""
        return int(round(np.log2(self.F.shape[1])))

    def __repr__(self):
        return f"TaskSet(n_tasks={self.n_tasks}, r={self.r})"

    # ---- constructors ----------------------------------------------------------------------------
    @classmethod
    def hadamard(cls, r):
        r"""All ``2^r`` parities ``chi_S(u) = prod_{k in S} u_k`` (S = {} included): ``beta_bar = I`` exactly.

        The smallest universe satisfying Assumption 2.1 (docs/multitask.md); row ``S`` is the subset with bit
        ``k`` of ``S`` selecting coordinate ``k``.
        """
        U = sign_patterns(r)
        F = np.array([np.prod(U[:, [k for k in range(r) if (S >> k) & 1]], axis=1) for S in range(2 ** r)])
        return cls(F)

    @classmethod
    def random_labelings(cls, r, n_tasks, seed=0):
        """``n_tasks`` labelings drawn i.i.d. uniformly from all ``2^(2^r)`` (the paper's universe, Section 2.1)."""
        r = as_int("multitask.TaskSet.random_labelings", "r", r, low=1, high=24)
        n_tasks = as_int("multitask.TaskSet.random_labelings", "n_tasks", n_tasks, low=1)
        rng = np.random.default_rng(seed)
        return cls(rng.choice([-1.0, 1.0], size=(n_tasks, 2 ** r)))

    @classmethod
    def all_labelings(cls, r):
        """Every one of the ``2^(2^r)`` labelings (the universe itself); ``r <= 4``."""
        r = as_int("multitask.TaskSet.all_labelings", "r", r, low=1, high=4)
        return cls(np.array(list(itertools.product([-1.0, 1.0], repeat=2 ** r))))

    @classmethod
    def from_functions(cls, fbars, r):
        """Tasks from callables ``fbar(u) -> +-1`` on a sign pattern ``u`` (ndarray of shape (r,))."""
        U = sign_patterns(r)
        return cls(np.array([[float(f(u)) for u in U] for f in fbars]))

    @classmethod
    def parities(cls, r, degrees):
        """The parities ``chi_S`` with ``|S|`` in ``degrees`` (e.g. ``degrees=(2, 3)``: no degree-0/1 content)."""
        H = cls.hadamard(r).F
        sizes = np.array([bin(S).count("1") for S in range(2 ** r)])
        keep = np.isin(sizes, list(degrees))
        if not keep.any():
            raise InvalidParameterError(f"The 'degrees' parameter of multitask.TaskSet.parities must contain a degree "
                                        f"in [0, {r}]. Got {degrees!r} instead.")
        return cls(H[keep])

    @classmethod
    def dictators(cls, r):
        """The ``r`` single-coordinate tasks ``fbar(u) = u_k`` (degree-1 Walsh content only)."""
        return cls(sign_patterns(r).T.copy())

    # ---- statistics -------------------------------------------------------------------------------
    def beta_bar(self):
        r"""Task kernel :math:`\bar\beta = F^\top F / T` (Section 5, the paper's ``1/n`` read as ``1/T``)."""
        return self.F.T @ self.F / self.n_tasks

    def walsh(self):
        r"""Walsh coefficients of degree <= 2 of every task.

        .. math:: a_{0,i} = 2^{-r}\sum_u \bar f_i(u),\quad (a_{1,i})_k = 2^{-r}\sum_u \bar f_i(u)u_k,\quad
                  (A_{2,i})_{kl} = 2^{-r}\sum_u \bar f_i(u)u_ku_l\ (k \ne l),\ 0 \text{ on the diagonal}

        Returns ``(a0 (T,), a1 (T, r), A2 (T, r, r))`` (docs/multitask.md).
        """
        U = sign_patterns(self.r)
        P = U.shape[0]
        a0 = self.F.mean(axis=1)
        a1 = self.F @ U / P
        A2 = np.einsum("tp,pk,pl->tkl", self.F, U, U) / P
        idx = np.arange(self.r)
        A2[:, idx, idx] = 0.0
        return a0, a1, A2

    def stats(self):
        r"""The four task statistics of the leading-order map (docs/multitask.md).

        .. math:: B = \tfrac1T\sum_i a_{0,i}^2,\quad K = \tfrac1T\sum_i a_{1,i}a_{1,i}^\top,\quad
                  c = \tfrac1T\sum_i a_{0,i}a_{1,i},\quad C_2 = \tfrac1T\sum_i a_{0,i}A_{2,i}

        Returns a dict with keys ``B`` (float), ``K`` (r, r), ``c`` (r,), ``C2`` (r, r). For any universe
        satisfying Assumption 2.1, ``E B = 2^-r`` and ``E K = 2^-r I``.
        """
        a0, a1, A2 = self.walsh()
        T = self.n_tasks
        return {"B": float(a0 @ a0 / T), "K": a1.T @ a1 / T, "c": a0 @ a1 / T,
                "C2": np.einsum("t,tkl->kl", a0, A2) / T}

    def labels(self, X):
        """Labels ``f_i(x)`` of every task on the rows of ``X`` (n, >= r), Gaussian or hypercube: shape (T, n)."""
        return self.F[:, pattern_index(X, self.r)]

    def diversity_deviation(self):
        r"""Lemma A.5's statistic: :math:`\max_{u \ne \pm u'} |\tfrac1T\sum_i \chi\{\bar f_i(u) \ne \bar f_i(u')\} - \tfrac12|`."""
        P = self.F.shape[1]
        disagree = (1.0 - self.beta_bar()) / 2.0
        i, j = np.triu_indices(P, 1)
        keep = (i + j) != P - 1          # u' = -u has the complementary index
        return float(np.abs(disagree[i[keep], j[keep]] - 0.5).max()) if keep.any() else 0.0
