"""The multi-task linear contrastive model of seed 001 ch. 7 (§7.2.2, App. F.35-F.39) and its probing problem."""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..._validate import (Either, FiniteArray, Integer, Interval, InvalidParameterError, Options, as_int, check,
                          validate)

__all__ = ["MultiTaskLinearModel", "Problem"]

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
                                    f"of shape ({T},) (T = {T}). Got {value!r} instead.")
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class MultiTaskLinearModel:
    r"""T tasks sharing s invariant features, each with r - s private ones; x = M z with M orthonormal (here M = I).

    .. math:: R_t = S\cup P_t,\ |S| = s,\ |P_t| = r - s,\quad k = s + T(r - s),\quad U = [d]\setminus R;\qquad
              z_S\sim\mathcal N(0,\sigma_{S,t}^2I),\ z_{P_t}\sim\mathcal N(0,\sigma_{R,t}^2I),\
              z_U, z_U^+\sim\mathcal N(0,\sigma_{U,t}^2I),\ z^+_{R} = z_R

    Parameters
    ----------
    T : int
        Number of tasks (>= 1).
    s : int
        Number of shared invariant features, 1 <= s <= r.
    r : int
        Number of invariant features of one task (the budget ||W||_F^2 <= r), r >= s.
    d : int
        Input dimension, d >= k = s + T (r - s).
    weights : ndarray of shape (T,) or None
        Mixture weights w_t > 0 summing to 1; None gives the even mixture 1/T.
    sigma_S, sigma_R, sigma_U : float or ndarray of shape (T,)
        Per-task standard deviations of the shared, private and spurious features (> 0).

    Notes
    -----
    Coordinates: S = [0, s), P_t = [s + t (r - s), s + (t + 1)(r - s)), U = [k, d). The model is invariant under
    the orthonormal M of the paper, so popdyn takes M = I (x = z) and W acts on z.

    References
    ----------
    .. [src] seed 001 L2009-2031 (§7.2.2), L9562-9587 (F.35-F.39); specs/looped_contrastive_dg.md B.1.
    """
    T: int
    s: int
    r: int
    d: int
    weights: np.ndarray = None
    sigma_S: float = 1.0
    sigma_R: float = 1.0
    sigma_U: float = 1.0

    _constraints = {"T": Integer(1), "s": Integer(1), "r": Integer(1), "d": Integer(1),
                    "weights": Either((Options((None,)), FiniteArray(1))),
                    "sigma_S": _PER_TASK, "sigma_R": _PER_TASK, "sigma_U": _PER_TASK}

    def __post_init__(self):
        validate(self)
        owner = f"contrastive.{type(self).__name__}"
        if self.s > self.r:
            raise InvalidParameterError(f"The 's' parameter of {owner} must be an int in [1, r] (r = {self.r}). "
                                        f"Got {self.s!r} instead.")
        if self.d < self.k:
            raise InvalidParameterError(f"The 'd' parameter of {owner} must be an int >= k = s + T (r - s) = {self.k}."
                                        f" Got {self.d!r} instead.")
        w = np.full(self.T, 1.0 / self.T) if self.weights is None else self.weights
        if w.shape != (self.T,) or not np.all(w > 0) or not abs(w.sum() - 1) <= 1e-12:  # 1e-12: float round-off
            raise InvalidParameterError(f"The 'weights' parameter of {owner} must be None or a positive array of "
                                        f"shape ({self.T},) summing to 1. Got {self.weights!r} instead.")
        object.__setattr__(self, "weights", _per_task(owner, "weights", w, self.T))
        for name in ("sigma_S", "sigma_R", "sigma_U"):
            object.__setattr__(self, name, _per_task(owner, name, getattr(self, name), self.T))

    def __repr__(self):
        return f"contrastive.{type(self).__name__}(" + ", ".join(
            f"{f.name}={_text(getattr(self, f.name))}" for f in fields(self)) + ")"

    @property
    def k(self):
        """Number of invariant features k = |R| = s + T (r - s)."""
        return self.s + self.T * (self.r - self.s)

    @property
    def is_even(self):
        """True for the even mixture of Prop. 7.3: w_t = 1/T and every sigma 1."""
        return bool(np.all(self.weights == 1.0 / self.T) and all(np.all(getattr(self, n) == 1.0)
                                                                  for n in ("sigma_S", "sigma_R", "sigma_U")))

    def index_sets(self):
        """``(S, P, R, U)``: index arrays of the shared, private (a list of T), invariant and spurious features."""
        q = self.r - self.s
        S = np.arange(self.s)
        P = [np.arange(self.s + t * q, self.s + (t + 1) * q) for t in range(self.T)]
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
        task = (rng.choice(self.T, size=n, p=self.weights) if t is None
                else np.full(n, check("contrastive.sample_pairs", "t", t, Integer(0, self.T - 1))))
        scale = np.stack([self.feature_scales(j) for j in range(self.T)])[task]
        x = rng.standard_normal((n, self.d)) * scale
        xp = x.copy()
        U = self.index_sets()[3]
        xp[:, U] = rng.standard_normal((n, U.size)) * scale[:, U]
        return x, xp, task

    def sample_labeled(self, t, m, u_star, noise, rng):
        """``(x, y)``: m labelled points of task t, ``y = <u_star, z_{R_t}> + noise * eps`` (u_star of shape (r,))."""
        rng = np.random.default_rng(rng)  # one stream: a Generator passes through default_rng unchanged
        x, _, _ = self.sample_pairs(t, m, rng)
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

    Parameters
    ----------
    T, s, r, d, weights, sigma_S, sigma_R, sigma_U
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
    .. [src] seed 001 L2009-2062 (§7.2.2, (7.9)), L9846-9880 (Prop. F.9); specs/looped_contrastive_dg.md B.1, B.4.
    """
    t: int = 0
    v1: float = 0.5
    v2: float = 0.5
    noise: float = 0.5
    gamma: float = 0.1

    _constraints = {**MultiTaskLinearModel._constraints, "t": Integer(0), "v1": Interval(0, np.inf),
                    "v2": Interval(0, np.inf), "noise": Interval(0, np.inf), "gamma": Interval(0, np.inf)}

    def __post_init__(self):
        super().__post_init__()
        if self.t >= self.T:
            raise InvalidParameterError(f"The 't' parameter of contrastive.Problem must be an int in [0, {self.T - 1}]."
                                        f" Got {self.t!r} instead.")
        if not self.v1 + self.v2 > 0:
            raise InvalidParameterError("The 'v2' parameter of contrastive.Problem must make v1 + v2 > 0. "
                                        f"Got {self.v2!r} instead.")

    @classmethod
    def tradeoff(cls, T=5, s=5, r=10, d=None, v1=0.5, v2=0.5, noise=0.5, gamma=0.1):
        """The even mixture of Prop. 7.3 (d = k + 5 by default) and the B.3 trade-off setting."""
        d = s + T * (r - s) + 5 if d is None else d
        return cls(T, s, r, d, None, 1.0, 1.0, 1.0, 0, v1, v2, noise, gamma)

    @property
    def u_star(self):
        """The target u*_t of shape (r,): sqrt(v1/s) on S, sqrt(v2/(r-s)) on P_t."""
        q = self.r - self.s
        return np.concatenate([np.full(self.s, np.sqrt(self.v1 / self.s)), np.full(q, np.sqrt(self.v2 / max(q, 1)))])
