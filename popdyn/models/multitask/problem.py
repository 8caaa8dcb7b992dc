"""The multi-task ReLU pretraining problem of seed 000: d, r, m, the task set, eta, nu_w, lambda_w, seed."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..._validate import Either, FiniteArray, Integer, Interval, InvalidParameterError, Options, validate
from .tasks import TaskSet

__all__ = ["Problem", "symmetric_init"]

_R_MAX = 12   # 2^r sign patterns: the exact map costs O(m 2^r r nq); the Hadamard table of heads is 2^r x 2^r


def symmetric_init(d, m, nu_w, seed=0):
    r"""The paper's symmetric initialisation (eq. (6)): ``w_{j+m/2} = w_j ~ N(0, nu_w^2 I_d)``, so ``f(x; W0, a0) = 0``.

    Returns ``W0`` of shape (m, d) (one row per neuron) from ``numpy.random.default_rng([seed, 0])``.

    .. math:: w_j^0 \sim \mathcal N(0, \nu_w^2 I_d),\quad w^0_{j+m/2} = w^0_j\quad (j \le m/2)

    Notes
    -----
    Regime: m even; the heads' antisymmetry (``Problem.A0``) makes the network output zero at init.

    References
    ----------
    .. [src] seed 000 L101-105 (eq. (6)); specs/multitask.md §1.4.
    """
    half = np.random.default_rng([seed, 0]).standard_normal((m // 2, d)) * nu_w
    return np.vstack([half, half])


@dataclass(frozen=True, eq=False)
class Problem:
    r"""One-step multi-task pretraining of a two-layer ReLU net on T binary tasks of ``sign(x_{1:r})``.

    .. math:: f(x; W, a_i) = \sum_{j=1}^m a_{ij}\,\sigma(w_j^\top x),\quad x \sim \mathcal N(0, I_d),\quad
              a_i^+ = (1-\eta\lambda_a)a_i^0 - \eta\nabla_a\mathcal L_i,\quad
              W^+ = (1-\eta\lambda_w)W^0 - \frac{\eta}{T}\sum_i \nabla_W \mathcal L_i(W^0, a_i^+)

    with the hinge loss, ``lambda_a = 1/eta`` (so the initial heads drop out) and the symmetric init.

    Parameters
    ----------
    d : int
        Input dimension, ``d >= r + 1`` (``d = r`` leaves no spurious part: ``s = 0`` is degenerate).
    r : int
        Number of ground-truth coordinates, ``1 <= r <= 12``.
    m : int
        Width, even (symmetric init duplicates each neuron), ``m >= 2r`` (r distinct rows for Thm 4.2's sigma_r).
    tasks : {"hadamard", "all"} or int or array_like of shape (T, 2**r)
        "hadamard": the 2^r parities (``beta_bar = I``, the T = infinity algorithm); "all": every labeling
        (r <= 4); an int T: T random labelings drawn from ``seed``; or a +-1 label table.
    eta : float
        Step size, ``eta > 0`` (the paper: Theta(1)).
    nu_w : float or None
        Init scale of W, > 0; None gives the paper's ``d^-1.25`` (the hinge stays linear).
    lam_w : {"paper", "adaptive"} or float
        First-layer weight decay: the paper's ``(1 + eta^2 2^-r-1/pi)/eta`` (with the corrected constant),
        the adaptive ``(1 + eta^2 B_T/(2 pi))/eta`` of spec §2.6.3, or a number.
    seed : int
        Seed of W0, of the initial heads and of random task tables.

    References
    ----------
    .. [src] seed 000 L55-113 (setting and algorithm), L149 (Prop. 4.1 hyperparameters); specs/multitask.md §1.
    """
    d: int
    r: int
    m: int
    tasks: object = "hadamard"
    eta: float = 1.0
    nu_w: float = None
    lam_w: object = "paper"
    seed: int = 0

    _constraints = {
        "d": Integer(2),
        "r": Integer(1, _R_MAX),
        "m": Integer(2),
        "tasks": Either((Options(("hadamard", "all")), Integer(1), FiniteArray(2))),
        "eta": Interval(0, np.inf, closed="neither"),
        "nu_w": Either((Options((None,)), Interval(0, np.inf, closed="neither"))),
        "lam_w": Either((Options(("paper", "adaptive")), Interval(-np.inf, np.inf, closed="neither"))),
        "seed": Integer(0),
    }

    def __post_init__(self):
        validate(self)
        if self.r >= self.d:
            raise InvalidParameterError(f"The 'r' parameter of multitask.Problem must be an int in [1, d - 1] = "
                                        f"[1, {self.d - 1}] (d = {self.d}). Got {self.r!r} instead.")
        if self.m % 2 or self.m < 2 * self.r:
            raise InvalidParameterError(f"The 'm' parameter of multitask.Problem must be an even int >= 2r = "
                                        f"{2 * self.r} (the symmetric init pairs neurons, eq. (6); Thm 4.2 needs "
                                        f"m/2 >= r distinct rows). Got {self.m!r} instead.")
        if self.nu_w is None:
            object.__setattr__(self, "nu_w", float(self.d) ** -1.25)
        if isinstance(self.tasks, str) and self.tasks == "all" and self.r > 4:
            raise InvalidParameterError(f"The 'tasks' parameter of multitask.Problem can be 'all' only for r <= 4 "
                                        f"(2^(2^r) labelings). Got 'all' with r = {self.r} instead.")
        if isinstance(self.tasks, np.ndarray):
            if self.tasks.shape[1] != 2 ** self.r or not np.all(np.abs(self.tasks) == 1.0):
                raise InvalidParameterError(f"The 'tasks' parameter of multitask.Problem must be a (T, 2^r) = (T, "
                                            f"{2 ** self.r}) table of +-1 labels. Got shape {self.tasks.shape} instead.")

    def __repr__(self):
        t = self.tasks
        if isinstance(t, np.ndarray):
            t = "np.array(" + np.array2string(t, separator=", ", max_line_width=10**6, threshold=10**9) + ")"
        else:
            t = repr(t)
        return (f"multitask.Problem(d={self.d!r}, r={self.r!r}, m={self.m!r}, tasks={t}, eta={self.eta!r}, "
                f"nu_w={self.nu_w!r}, lam_w={self.lam_w!r}, seed={self.seed!r})")

    # ---- derived ------------------------------------------------------------------------------------
    @cached_property
    def task_set(self):
        """The :class:`TaskSet` the ``tasks`` field describes."""
        t = self.tasks
        if isinstance(t, str):
            return TaskSet.hadamard(self.r) if t == "hadamard" else TaskSet.all_labelings(self.r)
        if isinstance(t, int):
            return TaskSet.random_labelings(self.r, t, seed=[self.seed, 1])
        return TaskSet(t)

    @cached_property
    def W0(self):
        """Symmetric initial first layer (m, d), from ``seed`` (:func:`symmetric_init`)."""
        return symmetric_init(self.d, self.m, self.nu_w, self.seed)

    @cached_property
    def A0(self):
        """Symmetric initial heads (T, m) with ``nu_a = 1``: ``a_{i,j+m/2} = -a_{ij}`` (irrelevant when lambda_a = 1/eta)."""
        half = np.random.default_rng([self.seed, 2]).standard_normal((self.task_set.T, self.m // 2))
        return np.hstack([half, -half])

    # ---- constructors --------------------------------------------------------------------------------
    @classmethod
    def paper(cls, d, r, m, T=None, eta=1.0, seed=0):
        """The paper's setting (Prop. 4.1): ``nu_w = d^-1.25``, ``lambda_a = 1/eta``, the paper's lambda_w;
        tasks: T random labelings, or the Hadamard universe (T = infinity) when ``T`` is None."""
        return cls(d, r, m, "hadamard" if T is None else T, eta, None, "paper", seed)

    @classmethod
    def e1(cls, r=2, d=20, m=16, seed=0):
        """The spec's E1 setting (r = 2, d = 20, m = 16, Hadamard tasks, eta = 1), the smallest sharp test."""
        return cls(d, r, m, "hadamard", 1.0, None, "paper", seed)
