"""The multi-task ReLU pretraining problem of the paper: d, r, width, task set, nu_w, lambda_w, seed; options."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from ..._options import Observable, Option, OptionTable, common, options_table
from ..._validate import Either, FiniteArray, Integer, Interval, InvalidParameterError, Options, validate
from .tasks import TaskSet

__all__ = ["Problem", "symmetric_init"]

_R_MAX = 12   # 2^r sign patterns: the exact map costs O(m 2^r r nq); the Hadamard table of heads is 2^r x 2^r


def symmetric_init(d, width, nu_w, seed=0):
    r"""The paper's symmetric initialisation (eq. (6)): ``w_{j+m/2} = w_j ~ N(0, nu_w^2 I_d)``, so ``f(x; W0, a0) = 0``.

    Returns ``W0`` of shape (width, d) (one row per neuron; the width is m in the paper) from
    ``numpy.random.default_rng([seed, 0])``.

    .. math:: w_j^0 \sim \mathcal N(0, \nu_w^2 I_d),\quad w^0_{j+m/2} = w^0_j\quad (j \le m/2)

    Notes
    -----
    Regime: width even; the heads' antisymmetry (``Problem.A0``) makes the network output zero at init.

    References
    ----------
    .. [src] [Collins24, eq. (6)].
    """
    half = np.random.default_rng([seed, 0]).standard_normal((width // 2, d)) * nu_w
    return np.vstack([half, half])


_BOOL = Options((True, False))


@dataclass(frozen=True, eq=False)
class Problem:
    r"""One-step multi-task pretraining of a two-layer ReLU net on T binary tasks of ``sign(x_{1:r})``.

    .. math:: f(x; W, a_i) = \sum_{j=1}^m a_{ij}\,\sigma(w_j^\top x),\quad x \sim \mathcal N(0, I_d),\quad
              a_i^+ = (1-\eta\lambda_a)a_i^0 - \eta\nabla_a\mathcal L_i,\quad
              W^+ = (1-\eta\lambda_w)W^0 - \frac{\eta}{T}\sum_i \nabla_W \mathcal L_i(W^0, a_i^+)

    with the hinge loss, ``lambda_a = 1/eta`` (so the initial heads drop out) and the symmetric init. The step
    size eta is the run option ``lr`` of ``popdyn.predict`` and ``popdyn.simulate`` (default 1, the paper's
    Theta(1)); the number of tasks T is ``task_set.n_tasks``.

    Parameters
    ----------
    d : int
        Input dimension, ``d >= r + 1`` (``d = r`` leaves no spurious part: ``s = 0`` is degenerate).
    r : int
        Number of ground-truth coordinates, ``1 <= r <= 12``.
    width : int
        Hidden width (m in the paper), even (symmetric init duplicates each neuron), ``width >= 2r`` (r distinct
        rows for Thm 4.2's sigma_r).
    tasks : {"hadamard", "all"} or int or array_like of shape (T, 2**r)
        "hadamard": the 2^r parities (``beta_bar = I``, the T = infinity algorithm); "all": every labeling
        (r <= 4); an int: that many random labelings drawn from ``seed``; or a +-1 label table.
    nu_w : float or None
        Init scale of W, > 0; None gives the paper's ``d^-1.25`` (the hinge stays linear).
    lam_w : {"paper", "adaptive"} or float
        First-layer weight decay: the paper's ``(1 + eta^2 2^-r-1/pi)/eta`` (with the corrected constant),
        the adaptive ``(1 + eta^2 B_T/(2 pi))/eta`` of docs/multitask.md, or a number (eta = ``lr``).
    seed : int
        Seed of W0, of the initial heads and of random task tables.

    References
    ----------
    .. [src] [Collins24, Sections 2-3 (setting and algorithm), Proposition 4.1 (hyperparameters)].
    """
    d: int
    r: int
    width: int
    tasks: object = "hadamard"
    nu_w: float = None
    lam_w: object = "paper"
    seed: int = 0

    _constraints = {
        "d": Integer(2),
        "r": Integer(1, _R_MAX),
        "width": Integer(2),
        "tasks": Either((Options(("hadamard", "all")), Integer(1), FiniteArray(2))),
        "nu_w": Either((Options((None,)), Interval(0, np.inf, closed="neither"))),
        "lam_w": Either((Options(("paper", "adaptive")), Interval(-np.inf, np.inf, closed="neither"))),
        "seed": Integer(0),
    }

    options: ClassVar[OptionTable] = options_table(
        Option("lr", Interval(0, np.inf, closed="neither"), 1.0,
               "step size eta of the head step and of the first-layer step (the paper: Theta(1))", match=True),
        Option("method", Options(("exact", "leading")), "exact",
               "one-step map: 'exact' sums over sign patterns, or the 'leading'-order Walsh map (docs/multitask.md)",
               calls=("predict",)),
        Option("delta", Interval(0, 1, closed="neither"), 1e-9,
               "fraction of inputs the linear-regime certificate margin_bound may exclude", calls=("predict",)),
        Option("n_train", Integer(1), 2 ** 18,
               "Gaussian training samples per seed, shared by every task and both steps (stratified: a multiple "
               "of 2^r, rounded up)", calls=("simulate",)),
        Option("stratified", _BOOL, True,
               "n_train/2^r samples of each sign pattern (the same law); False draws i.i.d. samples",
               calls=("simulate",)),
        Option("chunk", Integer(1), 2 ** 16,
               "samples per chunk, the memory bound (rounded up to a multiple of 2^r)", calls=("simulate",),
               cli=False),
        *common("seeds", "seed", "device", "dtype", "progress"))

    observables: ClassVar[dict] = {
        "W_plus": Observable("first layer W after one step", axes=("width", "d")),
        "heads": Observable("heads a after the head step", axes=("n_tasks", "width")),
        "loss": Observable("post-head multi-task hinge loss"),
        "kappa": Observable("scale kappa of the ground-truth part of W after one step"),
        "ratio": Observable("Thm 4.2 ratio: spurious over ground-truth part of W"),
        "kappa_par": Observable("leading-order kappa, corrected constant 1/(2 pi)"),
        "kappa_paper": Observable("leading-order kappa, the paper's constant 1/4"),
        "margin_bound": Observable("linear-regime certificate: bound on y f (< 1 certifies)"),
        "threshold_hits": Observable("sample-task pairs past the hinge threshold"),
        "pattern_counts": Observable("samples per sign pattern", axes=("pattern",)),
    }

    # example(): predict against simulate(seeds=2) at seed = 0, 2, 4 (2^18 stratified samples per seed) gave
    # sup_gap W_plus 3.19e-5, 3.46e-5, 3.32e-5 (entries up to 1.5e-3), heads 1.73e-4, 1.45e-4, 1.60e-4 (up to 0.049),
    # loss 2.8e-6, 1.22e-5, 1.0e-5 (0.993), kappa 1.09e-4, 4.0e-4, 1.3e-4 (0.040); bounds about twice the worst.
    # The Thm 4.2 ratio is left out: its finite-sample bias (sampling noise in the spurious part) dominates it.
    example_agreement: ClassVar[dict] = {"W_plus": ("sup_gap", 7e-5), "heads": ("sup_gap", 3.5e-4),
                                         "loss": ("sup_gap", 2.5e-5), "kappa": ("sup_gap", 8e-4)}

    def __post_init__(self):
        validate(self)
        if self.r >= self.d:
            raise InvalidParameterError(f"The 'r' parameter of multitask.Problem must be an int in [1, d - 1] = "
                                        f"[1, {self.d - 1}] (d = {self.d}). Got {self.r!r} instead.")
        if self.width % 2 or self.width < 2 * self.r:
            raise InvalidParameterError(f"The 'width' parameter of multitask.Problem must be an even int >= 2r = "
                                        f"{2 * self.r} (the symmetric init pairs neurons, eq. (6); Thm 4.2 needs "
                                        f"width/2 >= r distinct rows). Got {self.width!r} instead.")
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
        return (f"multitask.Problem(d={self.d!r}, r={self.r!r}, width={self.width!r}, tasks={t}, "
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
        """Symmetric initial first layer (width, d), from ``seed`` (:func:`symmetric_init`)."""
        return symmetric_init(self.d, self.width, self.nu_w, self.seed)

    @cached_property
    def A0(self):
        """Symmetric initial heads (T, width) with ``nu_a = 1``: ``a_{i,j+m/2} = -a_{ij}`` (irrelevant when
        lambda_a = 1/eta)."""
        half = np.random.default_rng([self.seed, 2]).standard_normal((self.task_set.n_tasks, self.width // 2))
        return np.hstack([half, -half])

    # ---- constructors --------------------------------------------------------------------------------
    @classmethod
    def paper(cls, d, r, width, n_tasks=None, seed=0):
        """The paper's setting (Prop. 4.1): ``nu_w = d^-1.25``, ``lambda_a = 1/eta``, the paper's lambda_w;
        tasks: ``n_tasks`` (T in the paper) random labelings, or the Hadamard universe (T = infinity) when None.

        Parameters
        ----------
        d : int
            Input dimension.
        r : int
            Number of relevant coordinates of the tasks.
        width : int
            Hidden width (m in the paper).
        n_tasks : int or None
            Number of random labelings (T in the paper); None is the Hadamard universe (T = infinity).
        seed : int
            Seed of the initial weights, the heads and random task tables.
        """
        return cls(d, r, width, "hadamard" if n_tasks is None else n_tasks, None, "paper", seed)

    @classmethod
    def e1(cls, r=2, d=20, width=16, seed=0):
        """E1 of docs/multitask.md (r = 2, d = 20, width = 16, Hadamard tasks; lr = 1), the smallest sharp test."""
        return cls(d, r, width, "hadamard", None, "paper", seed)

    @classmethod
    def example(cls):
        """A small instance and options that predict and simulate both accept: E1 (r = 2, d = 20, width = 16,
        Hadamard tasks) at lr = 1; simulate draws its default 2^18 stratified samples per seed (about a second
        per seed on one CPU core)."""
        return cls.e1(), {"lr": 1.0}
