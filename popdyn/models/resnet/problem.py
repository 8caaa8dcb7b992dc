"""The kernel-error problem of seed 004: a dot-product kernel, the Theorem 2 target, N training points, a ridge."""
from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property

import numpy as np

from ..._validate import Integer, Interval, InvalidParameterError, Options, validate
from .hypercube import D_MAX, arcsin, gaussian, relu_ck, relu_ntk_full, relu_ntk_hidden
from .targets import fig2_target, thm2_target

__all__ = ["Problem", "KERNELS", "NetworkProblem", "NETWORK_ARCHS"]

#: kernel name -> its Hamming profile on {±1}^d (hypercube.py)
KERNELS = {"relu_ntk": relu_ntk_full, "relu_ntk_hidden": relu_ntk_hidden, "relu_ck": relu_ck,
           "gaussian": gaussian, "arcsin": arcsin}

#: the trained networks of popdyn.sim.resnet_nets (its ARCHS): the ResNet (U = V A), the ResNet with a free U, and
#: the fully connected three- and two-layer nets
NETWORK_ARCHS = ("resnet", "resnet_free_u", "fc3", "fc2")


@dataclass(frozen=True, eq=False)
class Problem:
    r"""Kernel ridge regression of the Theorem 2 target on N uniform points of the hypercube.

    .. math:: \beta = (K + N\lambda I)^{-1}Y,\qquad \mathfrak K(x) = \sum_j\beta_jK(x, x^{(j)}),\qquad
              \mathcal H_i(x) = x_{S_i} + \alpha\,\chi_S(x)\quad(i\in[k])

    Parameters
    ----------
    kernel : {"relu_ntk", "relu_ntk_hidden", "relu_ck", "gaussian", "arcsin"}
        The dot-product kernel (ReLU NTK and conjugate kernel with bias, Gaussian, arcsin).
    d : int
        Dimension, ``k <= d <= 60`` (the exact level tables).
    k : int
        Relevant coordinates and outputs, ``>= 1``.
    alpha : float
        Weight of G(F), ``>= 0``.
    N : int
        Training points, ``>= 1``.
    lam : float
        Ridge, ``> 0`` (program (3.1): ``N lam`` on the diagonal).
    normalized : bool
        Cor. 7.1's normalized target (an overall ``1/sqrt(k)``).
    seed : int
        Seed of S (the relevant coordinates) and of the training points.

    Notes
    -----
    Regime: Theorem 2 bounds the error below by ``alpha^2/4`` per output for N up to ``(d/(20 k^2 log^2 d))^(k/2)``
    (empty at simulable d); the exact error here holds for every N.

    References
    ----------
    .. [src] seed 004 L122-155 (kernel methods, program 3.1), L354-366 (Theorem 2), L1100-1151 (App. E);
       specs/resnet_kernels.md §1.6, §1.7, §2.7.
    """
    kernel: str = "relu_ntk"
    d: int = 20
    k: int = 3
    alpha: float = 0.3
    N: int = 500
    lam: float = 1e-4
    normalized: bool = False
    seed: int = 0

    _constraints = {"kernel": Options(tuple(KERNELS)), "d": Integer(1, D_MAX), "k": Integer(1),
                    "alpha": Interval(0.0, np.inf, "left"), "N": Integer(1), "lam": Interval(0.0, np.inf, "neither"),
                    "normalized": Options((True, False)), "seed": Integer(0, 2 ** 63 - 1)}

    def __post_init__(self):
        validate(self)
        if self.k > self.d:
            raise InvalidParameterError(f"The 'k' parameter of resnet.Problem must be an int in [1, d] = [1, {self.d}]. "
                                        f"Got {self.k} instead.")

    def __repr__(self):
        return "resnet.Problem(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)) + ")"

    @classmethod
    def thm2(cls, kernel="relu_ntk", d=30, k=4, alpha=0.3, N=1000, lam=1e-4, seed=0):
        """The Theorem 2 setting of spec §4.2 (d = 30, k = 4, alpha = 0.3)."""
        return cls(kernel, d, k, alpha, N, lam, False, seed)

    @cached_property
    def kappa(self):
        """The kernel's Hamming profile (d + 1,)."""
        return KERNELS[self.kernel](self.d)

    @cached_property
    def target(self):
        """The Theorem 2 target (S drawn from the seed)."""
        return thm2_target(self.d, self.k, self.alpha, normalized=self.normalized,
                           rng=np.random.default_rng([self.seed, 0]))

    @cached_property
    def X(self):
        """The N training points, uniform on {±1}^d (stream 1 of the seed)."""
        return np.random.default_rng([self.seed, 1]).choice([-1.0, 1.0], size=(self.N, self.d))


@dataclass(frozen=True, eq=False)
class NetworkProblem:
    r"""A network of seed 004 trained on N uniform points of the hypercube, to be held against the kernels.

    .. math:: \mathrm{out}(x)=\mathrm{out}_1(x)+A\,\sigma\big(V(\mathrm{out}_1(x),1)\big),\quad
              \mathrm{out}_1(x)=A\,\sigma\big(W(x,1)\big)\ \text{(resnet)};\qquad
              \mathcal H(x)=\beta\,\mathcal F(x)+\alpha\,\mathcal G(\mathcal F(x))

    Parameters
    ----------
    arch : {"resnet", "resnet_free_u", "fc3", "fc2"}
        The three-layer ResNet (U = V A), the ResNet with a free U, the fully connected three- and two-layer nets
        (hidden weights trained, A fixed; :mod:`popdyn.sim.resnet_nets`).
    target : {"thm2", "fig2"}
        Theorem 2's target ``H_i = x_{S_i} + alpha chi_S`` (S drawn from the seed) or Figure 2's parity of parities
        (``F_r = x_{2r} x_{2r+1}``, cyclic degree-4 G; :func:`fig2_target`).
    d : int
        Dimension, ``1 <= d <= 60`` (the exact kernel tables); ``k <= d`` (thm2), ``2k <= d`` (fig2).
    k : int
        Outputs, ``>= 1`` (thm2), ``>= 4`` (fig2: G multiplies 4 outputs of F).
    alpha : float
        Weight of G(F), ``>= 0``.
    beta : float
        Weight of F (fig2 only, panel (c) of Figure 2); thm2 needs 1.
    m : int
        Width, ``>= 1``.
    N : int
        Training points (minibatch) or fresh samples (online), ``>= 1``.
    protocol : {"minibatch", "online"}
        "minibatch": the paper's experiments (L424): SGD with momentum 0.9, batches of 50, weight decay ``wd``,
        ``epochs`` epochs at ``lr`` then ``epochs`` at ``lr / 10`` over one set of N points. "online": Algorithm 1,
        N steps on one fresh sample each, step ``lr`` on W and V, no decay (``wd`` must be 0, ``epochs`` unused).
    lr : float
        Learning rate, ``> 0``.
    wd : float
        Weight decay, ``>= 0``.
    epochs : int
        Epochs at each of the two learning rates (minibatch), ``>= 1`` (the paper: 400).
    seed : int
        Seed of S (thm2), of the initial weights, of the training points and of the test points.

    Notes
    -----
    Regime: any sizes. The defaults (m = 200, lr = 0.2, wd = 1e-4) train every architecture on the Theorem 2 target
    at d = 30, k = 4, N = 1000 (measured: ResNet test error ~0.006 after 200 + 200 epochs, fc3 ~0.01, fc2 ~0.1,
    against the plateau k alpha^2 = 0.36); the paper tunes (lr, wd) on the test error and leaves m unstated (L424).

    References
    ----------
    .. [src] seed 004 L54-61, L221-231 (the networks), L239-243, L354-366 (the targets), L260-275 (Algorithm 1),
       L414-424 (the experiments); specs/resnet_kernels.md §1.1, §1.7, §1.8, §4.1, §4.2.
    """
    arch: str = "resnet"
    target: str = "thm2"
    d: int = 30
    k: int = 4
    alpha: float = 0.3
    beta: float = 1.0
    m: int = 200
    N: int = 1000
    protocol: str = "minibatch"
    lr: float = 0.2
    wd: float = 1e-4
    epochs: int = 400
    seed: int = 0

    _constraints = {"arch": Options(NETWORK_ARCHS), "target": Options(("thm2", "fig2")), "d": Integer(1, D_MAX),
                    "k": Integer(1), "alpha": Interval(0.0, np.inf, "left"), "beta": Interval(0.0, np.inf, "left"),
                    "m": Integer(1), "N": Integer(1), "protocol": Options(("minibatch", "online")),
                    "lr": Interval(0.0, np.inf, "neither"), "wd": Interval(0.0, np.inf, "left"),
                    "epochs": Integer(1), "seed": Integer(0, 2 ** 63 - 1)}

    def __post_init__(self):
        validate(self)
        owner = "resnet.NetworkProblem"
        low, high = (1, self.d) if self.target == "thm2" else (4, self.d // 2)
        if not low <= self.k <= high:
            raise InvalidParameterError(f"The 'k' parameter of {owner} must be an int in [{low}, {high}] for target "
                                        f"{self.target!r} (thm2: k <= d; fig2: G multiplies 4 outputs of F, which "
                                        f"reads 2k coordinates). Got {self.k} instead.")
        if self.target == "thm2" and self.beta != 1.0:
            raise InvalidParameterError(f"The 'beta' parameter of {owner} must be 1 for target 'thm2' (it weighs F in "
                                        f"fig2 only). Got {self.beta} instead.")
        if self.protocol == "online" and self.wd != 0.0:
            raise InvalidParameterError(f"The 'wd' parameter of {owner} must be 0 for protocol 'online' (Algorithm 1 "
                                        f"has no regularizer). Got {self.wd} instead.")

    def __repr__(self):
        return "resnet.NetworkProblem(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)) + ")"

    @classmethod
    def thm2(cls, arch="resnet", d=30, k=4, alpha=0.3, m=200, N=1000, lr=0.2, wd=1e-4, epochs=400, seed=0):
        """Theorem 2's target at the sizes of spec §4.2 (d = 30, k = 4, alpha = 0.3), the minibatch protocol."""
        return cls(arch, "thm2", d, k, alpha, 1.0, m, N, "minibatch", lr, wd, epochs, seed)

    @classmethod
    def fig2(cls, arch="resnet", d=30, k=8, alpha=0.3, beta=1.0, m=200, N=1000, lr=0.2, wd=1e-4, epochs=400,
             seed=0):
        """Figure 2's task (d = 30, k = 8, alpha = 0.3, N = 1000; L239-241, spec §1.8, §4.1), the minibatch
        protocol."""
        return cls(arch, "fig2", d, k, alpha, beta, m, N, "minibatch", lr, wd, epochs, seed)

    @cached_property
    def H(self):
        """The target H = beta F + alpha G(F) (a CompositionTarget; thm2: S drawn from the seed as in Problem)."""
        if self.target == "thm2":
            return thm2_target(self.d, self.k, self.alpha, rng=np.random.default_rng([self.seed, 0]))
        return fig2_target(self.d, self.k, self.alpha, self.beta)

    @cached_property
    def X(self):
        """N uniform points of {±1}^d drawn from the seed (stream 1, as Problem.X): the default training set of the
        kernels in ``popdyn.predict``; the networks' own sets are ``popdyn.sim.resnet.training_inputs``."""
        return np.random.default_rng([self.seed, 1]).choice([-1.0, 1.0], size=(self.N, self.d))
