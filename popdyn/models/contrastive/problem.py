"""The multi-task linear contrastive model of [Shi24] ch. 7 (Section 7.2.2, (F.35)-(F.39)), its probing problem and the
options of its theory and simulation."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

import numpy as np

from ..._options import Observable, Option, OptionTable, common, options_table
from ..._validate import (Either, FiniteArray, Integer, Interval, InvalidParameterError, Options, as_int, check,
                          validate)
from .loss import LOSSES

__all__ = ["MultiTaskLinearModel", "Problem", "REPRESENTATIONS"]

REPRESENTATIONS = ("universal", "cr", "specific")

_POS = Interval(0.0, np.inf, "neither")
_PER_TASK = Either((_POS, FiniteArray(1)))


def _text(v):
    """An evaluable literal: floats and ints by repr, arrays as ``np.array([...])`` at full precision."""
    if isinstance(v, np.ndarray):
        return "np.array(" + np.array2string(v, separator=", ", precision=17, max_line_width=10**6) + ")"
    return repr(v)


def _per_task(owner, name, value, T, positive=True):
    """A float or a length-T array of ``name`` as a read-only length-T float array, positive (or summing to 1)."""
    a = np.full(T, float(value)) if np.ndim(value) == 0 else np.array(value, dtype=np.float64)
    if a.shape != (T,) or not np.all(a > 0):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be a positive float or a positive array "
                                    f"of shape ({T},) (n_tasks = {T}). Got {value!r} instead.")
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class MultiTaskLinearModel:
    r"""n_tasks (T) tasks sharing s invariant features, each with r - s private ones; x = M z, M orthonormal (here I).

    .. math:: R_t = S\cup P_t,\ |S| = s,\ |P_t| = r - s,\quad k = s + T(r - s),\quad U = [d]\setminus R;\qquad
              z_S\sim\mathcal N(0,\sigma_{S,t}^2I),\ z_{P_t}\sim\mathcal N(0,\sigma_{R,t}^2I),\
              z_U, z_U^+\sim\mathcal N(0,\sigma_{U,t}^2I),\ z^+_{R} = z_R

    Parameters
    ----------
    n_tasks : int
        Number of tasks (T in the paper), >= 1.
    s : int
        Number of shared invariant features, 1 <= s <= r.
    r : int
        Number of invariant features of one task (the budget ||W||_F^2 <= r), r >= s.
    d : int
        Input dimension, d >= k = s + T (r - s).
    weights : ndarray of shape (n_tasks,) or None
        Mixture weights w_t > 0 summing to 1; None gives the even mixture 1/T.
    sigma_S, sigma_R, sigma_U : float or ndarray of shape (n_tasks,)
        Per-task standard deviations of the shared, private and spurious features (> 0).

    Notes
    -----
    Coordinates: S = [0, s), P_t = [s + t (r - s), s + (t + 1)(r - s)), U = [k, d). The model is invariant under
    the orthonormal M of the paper, so popdyn takes M = I (x = z) and W acts on z.

    References
    ----------
    .. [src] [Shi24, Section 7.2.2, App. F.2.1, (F.35)-(F.39)].
    """
    n_tasks: int
    s: int
    r: int
    d: int
    weights: np.ndarray = None
    sigma_S: float = 1.0
    sigma_R: float = 1.0
    sigma_U: float = 1.0

    _constraints = {"n_tasks": Integer(1), "s": Integer(1), "r": Integer(1), "d": Integer(1),
                    "weights": Either((Options((None,)), FiniteArray(1))),
                    "sigma_S": _PER_TASK, "sigma_R": _PER_TASK, "sigma_U": _PER_TASK}

    def __post_init__(self):
        validate(self)
        owner = f"contrastive.{type(self).__name__}"
        if self.s > self.r:
            raise InvalidParameterError(f"The 's' parameter of {owner} must be an int in [1, r] (r = {self.r}). "
                                        f"Got {self.s!r} instead.")
        if self.d < self.k:
            raise InvalidParameterError(f"The 'd' parameter of {owner} must be an int >= k = s + n_tasks (r - s) = {self.k}."
                                        f" Got {self.d!r} instead.")
        w = np.full(self.n_tasks, 1.0 / self.n_tasks) if self.weights is None else self.weights
        if w.shape != (self.n_tasks,) or not np.all(w > 0) or not abs(w.sum() - 1) <= 1e-12:  # 1e-12: float round-off
            raise InvalidParameterError(f"The 'weights' parameter of {owner} must be None or a positive array of "
                                        f"shape ({self.n_tasks},) summing to 1. Got {self.weights!r} instead.")
        object.__setattr__(self, "weights", _per_task(owner, "weights", w, self.n_tasks))
        for name in ("sigma_S", "sigma_R", "sigma_U"):
            object.__setattr__(self, name, _per_task(owner, name, getattr(self, name), self.n_tasks))

    def __repr__(self):
        return f"contrastive.{type(self).__name__}(" + ", ".join(
            f"{f.name}={_text(getattr(self, f.name))}" for f in fields(self)) + ")"

    @property
    def k(self):
        """Number of invariant features k = |R| = s + T (r - s)."""
        return self.s + self.n_tasks * (self.r - self.s)

    @property
    def is_even(self):
        """True for the even mixture of Prop. 7.3: w_t = 1/T and every sigma 1."""
        return bool(np.all(self.weights == 1.0 / self.n_tasks) and all(np.all(getattr(self, n) == 1.0)
                                                                  for n in ("sigma_S", "sigma_R", "sigma_U")))

    def index_sets(self):
        """``(S, P, R, U)``: index arrays of the shared, private (a list of T), invariant and spurious features."""
        q = self.r - self.s
        S = np.arange(self.s)
        P = [np.arange(self.s + t * q, self.s + (t + 1) * q) for t in range(self.n_tasks)]
        return S, P, np.arange(self.k), np.arange(self.k, self.d)

    def feature_scales(self, t):
        """Standard deviation of every coordinate of z for task t (0 on R \\ R_t), shape (d,)."""
        S, P, _, U = self.index_sets()
        out = np.zeros(self.d)
        out[S], out[P[t]], out[U] = self.sigma_S[t], self.sigma_R[t], self.sigma_U[t]
        return out

    def sample_pairs(self, t, n, rng):
        """``(x, x_plus, task)``: n positive pairs of task t (or of the mixture when t is None), x = z.

        The partner keeps z_R and redraws z_U (7.3); ``task`` is the task index of each row.
        """
        n = as_int("contrastive.MultiTaskLinearModel.sample_pairs", "n", n, low=1)
        rng = np.random.default_rng(rng)
        task = (rng.choice(self.n_tasks, size=n, p=self.weights) if t is None
                else np.full(n, check("contrastive.sample_pairs", "t", t, Integer(0, self.n_tasks - 1))))
        scale = np.stack([self.feature_scales(j) for j in range(self.n_tasks)])[task]
        x = rng.standard_normal((n, self.d)) * scale
        xp = x.copy()
        U = self.index_sets()[3]
        xp[:, U] = rng.standard_normal((n, U.size)) * scale[:, U]
        return x, xp, task

    def sample_labeled(self, t, n_labelled, u_star, noise, rng):
        """``(x, y)``: n_labelled points of task t, ``y = <u_star, z_{R_t}> + noise * eps`` (u_star of shape (r,))."""
        rng = np.random.default_rng(rng)  # one stream: a Generator passes through default_rng unchanged
        x, _, _ = self.sample_pairs(t, n_labelled, rng)
        u = check("contrastive.sample_labeled", "u_star", u_star, FiniteArray(1, (self.r,)))
        S, P, _, _ = self.index_sets()
        y = x[:, np.concatenate([S, P[t]])] @ u
        return x, y + check("contrastive.sample_labeled", "noise", noise, Interval(0, np.inf)) * rng.standard_normal(
            y.shape)


@dataclass(frozen=True, eq=False, repr=False)
class Problem(MultiTaskLinearModel):
    r"""Pre-train (universal, task-specific, CR-fine-tuned), then probe task t with a norm-bounded linear head.

    .. math:: y = (u_t^*)^\top z_{R_t} + \sigma\varepsilon,\quad v_{t,1} = \lVert u^*_{t,S}\rVert^2,\
              v_{t,2} = \lVert u^*_{t,P_t}\rVert^2,\quad \hat u = \arg\min_{\lVert u\rVert\le B}
              \tfrac1m\textstyle\sum_i (u^\top\phi(x_i) - y_i)^2

    on m = ``n_labelled`` labelled samples (an option of ``popdyn.predict`` and ``popdyn.simulate``).

    Parameters
    ----------
    n_tasks, s, r, d, weights, sigma_S, sigma_R, sigma_U
        The :class:`MultiTaskLinearModel`.
    t : int
        The target task of the probe, in [0, T - 1].
    v1, v2 : float
        Target weights on the shared and private features (>= 0, v1 + v2 > 0); u* spreads them evenly.
    noise : float
        Label-noise standard deviation sigma >= 0.
    gamma : float
        Frobenius radius of contrastive-regularised fine-tuning, >= 0.

    References
    ----------
    .. [src] [Shi24, Section 7.2.2, eq. (7.9), Proposition F.9].
    """
    t: int = 0
    v1: float = 0.5
    v2: float = 0.5
    noise: float = 0.5
    gamma: float = 0.1

    _constraints = {**MultiTaskLinearModel._constraints, "t": Integer(0), "v1": Interval(0, np.inf),
                    "v2": Interval(0, np.inf), "noise": Interval(0, np.inf), "gamma": Interval(0, np.inf)}

    options: ClassVar[OptionTable] = options_table(
        Option("n_labelled", Either((Options((None,)), FiniteArray(1))), None,
               "labelled samples m of the probe, one or several; None: r/3 (rounded up), r and 3r", match=True),
        Option("loss", Options(tuple(LOSSES)), "logistic", "contrastive loss ell of pre-training and fine-tuning",
               match=True),
        Option("steps", Integer(1), 2000,
               "projected SGD steps of each pre-training (universal and specific); 6000 reach 0.4 % of the optimum",
               calls=("simulate",)),
        Option("batch", Integer(1), 512, "positive pairs per SGD step", calls=("simulate",)),
        Option("lr", Interval(0, np.inf, "neither"), 0.05,
               "step size of pre-training (falling linearly to 0 over its second half) and of fine-tuning",
               calls=("simulate",)),
        Option("ft_steps", Integer(0), 500, "projected SGD steps of contrastive-regularised fine-tuning",
               calls=("simulate",)),
        Option("probes", Integer(1), 200, "labelled sets drawn per seed and probe size; their excess risks averaged",
               calls=("simulate",)),
        *common("seeds", "seed", "device", "dtype", "progress"))

    observables: ClassVar[dict] = {
        "alpha": Observable("squared column norm on the shared features", axes=("representation",),
                            coord="representation"),
        "beta": Observable("squared column norm on task t's private features", axes=("representation",),
                           coord="representation"),
        "probe_norm": Observable("norm of the smallest exact probe", axes=("representation",),
                                 coord="representation"),
        "rademacher": Observable("Rademacher complexity of the probe class", axes=("representation", "n_labelled"),
                                 coord="n_labelled", log=True),
        "rademacher_jensen": Observable("Jensen bound on the Rademacher complexity",
                                        axes=("representation", "n_labelled"), coord="n_labelled", log=True),
        "excess_risk": Observable("excess risk of the norm-bounded probe", axes=("representation", "n_labelled"),
                                  coord="n_labelled", log=True),
        "column_norms": Observable("column norms of the universal representation", axes=("d",)),
        "gram_offdiag": Observable("largest within-task off-diagonal Gram entry of the universal representation"),
        "loss_universal": Observable("population contrastive loss of the universal representation"),
    }

    # example(): predict against simulate(seeds=2) at seed = 0, 2 gave sup_gap alpha 3.4e-5, 3.9e-5; beta 9.2e-4,
    # 2.0e-3; probe_norm 1.0e-3, 8.6e-3; column_norms 3.2e-3, 4.1e-3; gram_offdiag (theory 0) 5.1e-3, 1.2e-2: bounds
    # about twice the worst (SGD at the default 2000 steps, not the Monte Carlo of the probes, sets the spread)
    example_agreement: ClassVar[dict] = {"alpha": ("sup_gap", 8e-5), "beta": ("sup_gap", 4e-3),
                                         "probe_norm": ("sup_gap", 0.015), "column_norms": ("sup_gap", 8e-3),
                                         "gram_offdiag": ("sup_gap", 0.025)}

    def __post_init__(self):
        super().__post_init__()
        if self.t >= self.n_tasks:
            raise InvalidParameterError(f"The 't' parameter of contrastive.Problem must be an int in [0, {self.n_tasks - 1}]."
                                        f" Got {self.t!r} instead.")
        if not self.v1 + self.v2 > 0:
            raise InvalidParameterError("The 'v2' parameter of contrastive.Problem must make v1 + v2 > 0. "
                                        f"Got {self.v2!r} instead.")

    @classmethod
    def tradeoff(cls, n_tasks=5, s=5, r=10, d=None, v1=0.5, v2=0.5, noise=0.5, gamma=0.1):
        """The even mixture of Prop. 7.3 (d = k + 5 by default) and the B.3 trade-off setting."""
        d = s + n_tasks * (r - s) + 5 if d is None else d
        return cls(n_tasks, s, r, d, None, 1.0, 1.0, 1.0, 0, v1, v2, noise, gamma)

    @classmethod
    def example(cls):
        """A small instance and options that predict and simulate both accept: the even mixture of 2 tasks with
        s = 2 shared and 2 private features per task, probed at n_labelled = 4 and 16."""
        return cls.tradeoff(n_tasks=2, s=2, r=4, gamma=0.3), {"n_labelled": [4, 16]}

    def labelled_sizes(self, n_labelled, owner="contrastive.Problem"):
        """The probe sizes as an int array: ``n_labelled`` (each an int >= 1; an error names ``owner``), or r/3
        (rounded up), r, 3r (docs/contrastive.md) when None."""
        if n_labelled is None:
            return np.array([max(1, -(-self.r // 3)), self.r, 3 * self.r])
        arr = np.atleast_1d(np.asarray(n_labelled, dtype=np.float64))
        for v in arr:
            as_int(owner, "n_labelled", int(v) if float(v).is_integer() else v, low=1)
        return arr.astype(np.int64)

    @property
    def u_star(self):
        """The target u*_t of shape (r,): sqrt(v1/s) on S, sqrt(v2/(r-s)) on P_t."""
        q = self.r - self.s
        return np.concatenate([np.full(self.s, np.sqrt(self.v1 / self.s)), np.full(q, np.sqrt(self.v2 / max(q, 1)))])
