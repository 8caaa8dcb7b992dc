"""The problem of the model: kernel ridge regression of a Walsh target on the hypercube with a wide fully-connected
network's NTK or NNGP, over a range of training-set sizes; its run options, observables and example."""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import cached_property
from typing import ClassVar

import numpy as np

from ... import activations
from ... import kernels as _fc
from ..._options import Observable, Option, OptionTable, common, options_table
from ..._validate import Integer, Interval, InvalidParameterError, Options, as_int, validate
from ..resnet.hypercube import D_MAX
from .cube import KERNELS, WalshTarget, cube_eigenvalues, level_multiplicities

__all__ = ["Problem", "ACTIVATIONS"]

#: activations a Problem takes: the closed forms of popdyn.kernels.fc and popdyn's registry (Hermite series)
ACTIVATIONS = tuple(sorted({"relu", "abs", "leaky_relu", "identity", "linear", "sign", "erf", "exp", "sin", "cos",
                            "gelu"} | {n for n in activations.names() if n != "he<K>"}))


class _Sizes:
    """Training-set sizes: an int >= 1 or a sequence of them (returned as a tuple of ints)."""

    def describe(self):
        return "an int in [1, inf] or a sequence of them"

    def convert(self, owner, name, value):
        values = np.atleast_1d(np.asarray(value, dtype=object))
        if values.ndim != 1 or values.size == 0:
            raise InvalidParameterError(f"The {name!r} parameter of {owner} must be {self.describe()}. "
                                        f"Got {value!r} instead.")
        return tuple(as_int(owner, name, v, 1) for v in values)


@dataclass(frozen=True, eq=False)
class Problem:
    r"""Kernel ridge regression of a Walsh target on N uniform points of {±1}^d with a wide network's kernel.

    .. math:: \hat f(x)=\sum_{j=1}^N\beta_jK(x,x_j),\quad\beta=(K_{XX}+N\lambda I)^{-1}(f(X)+\sigma\xi),\qquad
              f(x)=\sum_Sv_S\chi_S(x),\qquad \mathcal E=\mathbb E_x\big(f(x)-\hat f(x)\big)^2

    with K the NTK or NNGP of ``popdyn.kernels.fc(depth, activation, W_std, b_std)`` (infinite width, NTK
    parameterisation) and :math:`\xi` standard normal label noise.

    Parameters
    ----------
    d : int
        Dimension, ``1 <= d <= 60``.
    target : WalshTarget or dict, optional
        The target :math:`f` (a dict ``{S: v_S}`` is made a :class:`WalshTarget` on d); default the sparse parity
        :math:`x_0x_1` (:math:`x_0` when d = 1).
    depth : int
        Hidden layers of the network, ``>= 1``.
    activation : str
        One of :data:`ACTIVATIONS` (closed forms of :func:`popdyn.kernels.fc`, or popdyn's registry by its Hermite
        series).
    W_std, b_std : float
        Weight (``> 0``) and bias (``>= 0``) standard deviations of every layer.
    kernel : {"ntk", "nngp"}
        The network's NTK (gradient-descent training of every layer at infinite width) or NNGP (the last layer only,
        or the Gaussian-process posterior mean).
    ridge : float
        :math:`\lambda > 0`, the ridge of the averaged loss (:math:`N\lambda` on the Gram diagonal, as
        :func:`popdyn.models.resnet.krr_fit`).
    noise : float
        Label-noise standard deviation :math:`\sigma\ge0` (the test error is against the clean target).

    Notes
    -----
    ``popdyn.predict(problem, n_train=...)`` is the eigenlearning theory of the expected test error over random
    training sets; ``popdyn.simulate(problem, n_train=..., seeds=...)`` fits KRR on ``seeds`` independent uniform
    training sets per size and takes each fit's exact population error (Parseval over the whole cube, no test
    sample). ``Problem.options`` lists every option.

    Regime: the theory is exact as N and the number of eigenmodes near its cut-off grow together; at small d and N
    comparable to 2^d, or a few points, it carries finite-size corrections (docs/kernels.md).

    References
    ----------
    .. [src] [Bordelon20], [Canatar21], [Simon23] (the eigenlearning theory); [Novak20], [Jacot18], [Lee18] (the
       kernels); [AllenZhu19, Prop. E.1] (the Walsh levels of a dot-product kernel on the cube).
    """
    d: int = 20
    target: WalshTarget | dict | None = None
    depth: int = 1
    activation: str = "relu"
    W_std: float = 1.0
    b_std: float = 0.0
    kernel: str = "ntk"
    ridge: float = 1e-3
    noise: float = 0.0

    _constraints = {"d": Integer(1, D_MAX), "depth": Integer(1), "activation": Options(ACTIVATIONS),
                    "W_std": Interval(0.0, np.inf, "neither"), "b_std": Interval(0.0, np.inf, "left"),
                    "kernel": Options(KERNELS), "ridge": Interval(0.0, np.inf, "neither"),
                    "noise": Interval(0.0, np.inf, "left")}

    options: ClassVar[OptionTable] = options_table(
        Option("n_train", _Sizes(), (10, 30, 100, 300, 1000),
               "training-set sizes N (the coordinate of the learning curve)", match=True),
        *common("seeds", "seed", "device", "progress"))

    observables: ClassVar[dict] = {
        "test_error": Observable("population test error E_x (f - f_hat)^2", axes=("n_train",), coord="n_train",
                                 log=True),
        "learnability": Observable("share of the target's level-l part learned", axes=("n_train", "level"),
                                   coord="n_train"),
        "e0": Observable("overfitting coefficient E0 = N / (N - sum L^2)", axes=("n_train",), coord="n_train"),
        "kappa": Observable("effective regularisation kappa", axes=("n_train",), coord="n_train", log=True),
    }

    #: measured with ``example()`` against ``simulate(seeds=2, seed=s)``, s = 0, 2, ..., 14 (eight pairs of training
    #: sets per N; errors 1.21, 0.86, 0.36): worst sup_gap of test_error 0.10 (s = 6), of learnability 0.023 (s =
    #: 12); bounds twice the worst
    example_agreement: ClassVar[dict] = {"test_error": ("sup_gap", 0.2), "learnability": ("sup_gap", 0.05)}

    def __post_init__(self):
        validate(self)
        owner = "kernels.Problem"
        target = self.target
        if target is None:
            target = WalshTarget(self.d, {tuple(range(min(2, self.d))): 1.0})
        elif isinstance(target, dict):
            target = WalshTarget(self.d, target)
        if not isinstance(target, WalshTarget) or target.d != self.d:
            raise InvalidParameterError(f"The 'target' parameter of {owner} must be a WalshTarget on d = {self.d} "
                                        f"(or a dict {{S: v_S}}). Got {self.target!r} instead.")
        object.__setattr__(self, "target", target)

    def __repr__(self):
        return "kernels.Problem(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)) + ")"

    @classmethod
    def parity(cls, d=30, k=2, depth=1, activation="relu", W_std=1.0, b_std=0.0, kernel="ntk", ridge=1e-3,
               noise=0.0):
        r"""The sparse parity :math:`x_0x_1\cdots x_{k-1}` on {±1}^d (``k`` relevant coordinates, ``0 <= k <= d``)."""
        return cls(d, WalshTarget.parity(d, k), depth, activation, W_std, b_std, kernel, ridge, noise)

    @classmethod
    def example(cls):
        """A small problem (d = 16, the parity x_0 x_1, the depth-1 ReLU NTK with bias 0.1) and sizes N = 20 to 200
        that predict and ``simulate(seeds=2)`` take in well under a second."""
        return cls(d=16, b_std=0.1), {"n_train": (20, 60, 200)}

    @cached_property
    def net(self):
        """The network's kernels (:func:`popdyn.kernels.fc`)."""
        return _fc.fc(self.depth, self.activation, self.W_std, self.b_std)

    @cached_property
    def kappa(self):
        """The kernel's Hamming profile on {±1}^d, shape (d + 1,)."""
        return self.net.profile(self.d, self.kernel)

    @cached_property
    def eigenvalues(self):
        """The kernel's eigenvalue on each Walsh level, shape (d + 1,) (:func:`cube_eigenvalues`)."""
        return cube_eigenvalues(self.net, self.d, self.kernel)

    @cached_property
    def multiplicity(self):
        """C(d, l) per level."""
        return level_multiplicities(self.d)

    @property
    def target_levels(self):
        """The levels on which the target has power (the ``level`` coordinate of ``learnability``)."""
        return np.flatnonzero(self.target.level_power() > 0)

    @property
    def modes_below(self):
        """Number of Walsh functions on levels 0..l, per l: the N a level needs to be learned, roughly."""
        return np.cumsum([math.comb(self.d, ell) for ell in range(self.d + 1)])
