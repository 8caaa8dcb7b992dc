"""The problems of the paper: kernel ridge regression of the Theorem 2 target (:class:`Problem`) and a trained network
against the kernels (:class:`NetworkProblem`); their run options, observables and examples."""
from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from typing import ClassVar

import numpy as np

from ..._options import Observable, Option, OptionTable, common, options_table
from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, validate
from .hypercube import D_MAX, arcsin, gaussian, relu_nngp, relu_ntk, relu_ntk_hidden
from .targets import fig2_target, thm2_target

__all__ = ["Problem", "KERNELS", "NetworkProblem", "NETWORK_ARCHS", "NETWORK_RIDGES", "check_training",
           "check_kernel_inputs"]

#: kernel name -> its Hamming profile on {±1}^d (hypercube.py): the ReLU NTK (both layers), its hidden-weight part,
#: the ReLU NNGP, Gaussian, arcsin; "relu_ck" is the earlier name of "relu_nngp" (the same kernel, kept as an alias)
KERNELS = {"relu_ntk": relu_ntk, "relu_ntk_hidden": relu_ntk_hidden, "relu_nngp": relu_nngp,
           "gaussian": gaussian, "arcsin": arcsin, "relu_ck": relu_nngp}

#: the trained networks of popdyn.sim.resnet.networks (its ARCHS): the ResNet (U = V A), the ResNet with a free U, and
#: the fully connected three- and two-layer nets
NETWORK_ARCHS = ("resnet", "resnet_free_u", "fc3", "fc2")

#: ridges over which ``predict(NetworkProblem)`` takes each kernel's best exact error (one eigh for all)
NETWORK_RIDGES = (1e-8, 1e-6, 1e-4, 1e-2)


@dataclass(frozen=True)
class _Each:
    """A non-empty tuple whose every entry meets ``item`` (a list, tuple or array is accepted; a bare value is one
    entry)."""
    item: object

    def describe(self):
        return f"a non-empty tuple, each entry {self.item.describe()}"

    def convert(self, owner, name, value):
        values = [value] if isinstance(value, str) else np.atleast_1d(np.asarray(value, dtype=object)).tolist()
        try:
            if not values:
                raise InvalidParameterError("empty")
            return tuple(self.item.convert(owner, name, v) for v in values)
        except InvalidParameterError:
            raise InvalidParameterError(f"The {name!r} parameter of {owner} must be {self.describe()}. Got "
                                        f"{value!r} instead.") from None


@dataclass(frozen=True, eq=False)
class Problem:
    r"""Kernel ridge regression of the Theorem 2 target on N uniform points of the hypercube.

    .. math:: \beta = (K + N\lambda I)^{-1}Y,\qquad \mathfrak K(x) = \sum_j\beta_jK(x, x^{(j)}),\qquad
              \mathcal H_i(x) = x_{S_i} + \alpha\,\chi_S(x)\quad(i\in[k])

    Parameters
    ----------
    kernel : {"relu_ntk", "relu_ntk_hidden", "relu_nngp", "gaussian", "arcsin"}
        The dot-product kernel: the ReLU NTK (both layers trained), its hidden-weight part, the ReLU NNGP (the
        paper's conjugate kernel; ``"relu_ck"`` is accepted as its earlier name), all with bias; Gaussian, arcsin.
    d : int
        Dimension, ``k <= d <= 60`` (the exact level tables).
    k : int
        Relevant coordinates and outputs, ``>= 1``.
    alpha : float
        Weight of G(F), ``>= 0``.
    n_train : int
        Training points (N in the paper), ``>= 1``.
    ridge : float
        Ridge (lambda in the paper), ``> 0`` (program (3.1): ``N lambda`` on the diagonal).
    normalized : bool
        Cor. 7.1's normalized target (an overall ``1/sqrt(k)``).
    seed : int
        Seed of S (the relevant coordinates) and of the training points.

    Notes
    -----
    Regime: Theorem 2 bounds the error below by ``alpha^2/4`` per output for N up to ``(d/(20 k^2 log^2 d))^(k/2)``
    (empty at simulable d); the exact error here holds for every N.
    Accuracy: ``kappa`` is the kernel's profile (exact gather of the named profiles, see their accuracies), ``X`` is
    exactly ±1; the observables have the accuracies of :func:`exact_test_error` and :func:`captured_coefficients`.

    ``popdyn.predict(problem)`` takes no options; ``popdyn.simulate(problem, n_test=..., seeds=...)`` evaluates the same
    fitted predictor on fresh test points (``Problem.options`` lists every option).

    References
    ----------
    .. [src] [AllenZhu19, Section 3 (kernel methods, program (3.1)), Section 7 (Theorem 2), App. E]; the exact
       test error derived in docs/resnet.md.
    """
    kernel: str = "relu_ntk"
    d: int = 20
    k: int = 3
    alpha: float = 0.3
    n_train: int = 500
    ridge: float = 1e-4
    normalized: bool = False
    seed: int = 0

    _constraints = {"kernel": Options(tuple(KERNELS)), "d": Integer(1, D_MAX), "k": Integer(1),
                    "alpha": Interval(0.0, np.inf, "left"), "n_train": Integer(1),
                    "ridge": Interval(0.0, np.inf, "neither"), "normalized": Options((True, False)),
                    "seed": Integer(0, 2 ** 63 - 1)}

    options: ClassVar[OptionTable] = options_table(
        Option("n_test", Integer(2), 20_000, "fresh uniform test points per seed of the Monte Carlo test error",
               calls=("simulate",)),
        Option("chunk", Integer(1), 4096, "test points evaluated per block (memory chunk x n_train floats)",
               calls=("simulate",), cli=False),
        *common("seeds", "seed", "device", "progress"))

    observables: ClassVar[dict] = {
        "test_error": Observable("test error per output", axes=("output",)),
        "lemma_e2": Observable("Lemma E.2 lower bound on the test error per output", axes=("output",)),
        "captured_F": Observable("Walsh coefficient of output i on the set of F_i", axes=("output",)),
        "captured_G": Observable("Walsh coefficient of output i on S (the set of G(F))", axes=("output",)),
        "G_not_learned": Observable("test error of a predictor that learned F only (k alpha^2)"),
        "thm2_bound": Observable("Theorem 2 lower bound alpha^2/4 per output"),
    }

    #: measured with ``example()`` against ``simulate(seeds=2, seed=s)``, s = 0, 2, ..., 14: sup_gap of test_error
    #: 1.2e-4 (s = 0), 1.7e-4 (s = 2), worst 3.0e-4 (s = 6); captured_F 1.3e-4, 1.4e-3, worst 1.9e-3; captured_G
    #: 3.9e-4, 4.6e-3, worst 0.011 (Monte Carlo SE of a coefficient ~ n_test^-1/2 = 0.007); bounds twice the worst
    example_agreement: ClassVar[dict] = {"test_error": ("sup_gap", 6e-4), "captured_F": ("sup_gap", 0.004),
                                         "captured_G": ("sup_gap", 0.022)}

    def __post_init__(self):
        validate(self)
        if self.k > self.d:
            raise InvalidParameterError(f"The 'k' parameter of resnet.Problem must be an int in [1, d] = [1, {self.d}]. "
                                        f"Got {self.k} instead.")

    def __repr__(self):
        return "resnet.Problem(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)) + ")"

    @classmethod
    def thm2(cls, kernel="relu_ntk", d=30, k=4, alpha=0.3, n_train=1000, ridge=1e-4, seed=0):
        """The Theorem 2 setting of docs/resnet.md (d = 30, k = 4, alpha = 0.3)."""
        return cls(kernel, d, k, alpha, n_train, ridge, False, seed)

    @classmethod
    def example(cls):
        """A small problem (d = 10, k = 2, 100 training points) and the options its predict and simulate share
        (none): predict and ``simulate(seeds=2)`` take well under a second."""
        return cls(d=10, k=2, n_train=100), {}

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
        """The n_train training points, uniform on {±1}^d (stream 1 of the seed)."""
        return np.random.default_rng([self.seed, 1]).choice([-1.0, 1.0], size=(self.n_train, self.d))


def check_training(owner, protocol, weight_decay):
    """The training options that involve each other: Algorithm 1 (protocol "online") has no weight decay."""
    if protocol == "online" and weight_decay != 0.0:
        raise InvalidParameterError(f"The 'weight_decay' parameter of {owner} must be 0 for protocol 'online' "
                                    f"(Algorithm 1 has no regularizer; pass weight_decay=0). Got {weight_decay} "
                                    f"instead.")


def check_kernel_inputs(owner, problem, X):
    """The kernels' training inputs of a network problem: ``problem.X`` when ``X`` is None, else ``X`` checked to be
    an (n_train, d) array of ±1."""
    if X is None:
        return problem.X
    if X.shape != (problem.n_train, problem.d) or not np.all(np.abs(X) == 1):
        raise InvalidParameterError(f"The 'X' parameter of {owner} must be an (n_train, d) = ({problem.n_train}, "
                                    f"{problem.d}) array of ±1 entries. Got shape {X.shape} with entries "
                                    f"{'±1' if np.all(np.abs(X) == 1) else 'other than ±1'} instead.")
    return X


@dataclass(frozen=True, eq=False)
class NetworkProblem:
    r"""A network of the paper trained on ``n_train`` uniform points of the hypercube, to be held against the kernels.

    .. math:: \mathrm{out}(x)=\mathrm{out}_1(x)+A\,\sigma\big(V(\mathrm{out}_1(x),1)\big),\quad
              \mathrm{out}_1(x)=A\,\sigma\big(W(x,1)\big)\ \text{(resnet)};\qquad
              \mathcal H(x)=\beta\,\mathcal F(x)+\alpha\,\mathcal G(\mathcal F(x))

    Parameters
    ----------
    arch : {"resnet", "resnet_free_u", "fc3", "fc2"}
        The three-layer ResNet (U = V A), the ResNet with a free U, the fully connected three- and two-layer nets
        (hidden weights trained, A fixed; :mod:`popdyn.sim.resnet.networks`).
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
    width : int
        Hidden width (m in the paper), ``>= 1``.
    n_train : int
        Training points (N in the paper; protocol "minibatch") or fresh samples (protocol "online"), ``>= 1``.
    seed : int
        Seed of S (thm2) and of ``X``, the kernels' training set (the networks' initial weights, training and test
        points come from the ``seed`` option of ``popdyn.simulate``).

    Notes
    -----
    The training is a run option of ``popdyn.simulate`` (``NetworkProblem.options``): ``protocol`` "minibatch" is the
    paper's experiments (App. A): SGD with momentum 0.9, batches of 50, weight decay ``weight_decay``, ``epochs`` epochs
    at ``lr`` then ``epochs`` at ``lr / 10`` over one set of n_train points; "online" is Algorithm 1, n_train steps on
    one fresh sample each, step ``lr`` on W and V, no decay (``weight_decay`` must be 0, ``epochs`` unused).
    ``popdyn.predict`` takes the same training options (the kernels do not depend on them; ``compare`` checks that a
    prediction and a simulation agree on them) and fits the kernels on ``problem.X`` (or on the option ``X``, which
    the simulation's Monte Carlo twin of the kernels then uses too).

    Regime: any sizes. The defaults (width 200, lr = 0.2, weight_decay = 1e-4) train every architecture on the
    Theorem 2 target at d = 30, k = 4, n_train = 1000 (measured: ResNet test error ~0.006 after 200 + 200 epochs, fc3
    ~0.01, fc2 ~0.1, against the plateau k alpha^2 = 0.36); the paper tunes (lr, weight decay) on the test error and
    leaves the width unstated (App. A).

    References
    ----------
    .. [src] [AllenZhu19, eq. (2.1), Section 6 (the networks), Fig. 2, Section 7 (the targets), Algorithm 1,
       App. A (the experiments)].
    """
    arch: str = "resnet"
    target: str = "thm2"
    d: int = 30
    k: int = 4
    alpha: float = 0.3
    beta: float = 1.0
    width: int = 200
    n_train: int = 1000
    seed: int = 0

    _constraints = {"arch": Options(NETWORK_ARCHS), "target": Options(("thm2", "fig2")), "d": Integer(1, D_MAX),
                    "k": Integer(1), "alpha": Interval(0.0, np.inf, "left"), "beta": Interval(0.0, np.inf, "left"),
                    "width": Integer(1), "n_train": Integer(1), "seed": Integer(0, 2 ** 63 - 1)}

    options: ClassVar[OptionTable] = options_table(
        Option("X", FiniteArray(2), None, "training inputs (n_train, d) of ±1 the kernels are fitted on; None is "
               "problem.X", match=True, cli=False),
        Option("kernels", _Each(Options(tuple(KERNELS))), ("relu_ntk", "relu_nngp"),
               "infinite-width kernels held against the networks (names of resnet.KERNELS)", match=True),
        Option("ridges", _Each(Interval(0.0, np.inf, "neither")), NETWORK_RIDGES,
               "ridges of kernel ridge regression; each kernel's error is the best over them", match=True),
        Option("protocol", Options(("minibatch", "online")), "minibatch",
               "training: the paper's minibatch SGD (momentum 0.9, batch 50) or Algorithm 1 (online SGD)",
               match=True),
        Option("lr", Interval(0.0, np.inf, "neither"), 0.2, "step size of SGD (divided by 10 for the second half of "
               "the minibatch epochs)", match=True),
        Option("weight_decay", Interval(0.0, np.inf, "left"), 1e-4, "L2 weight decay of the minibatch protocol (0 "
               "for online)", match=True),
        Option("epochs", Integer(1), 400, "minibatch epochs at lr and again at lr / 10 (the paper: 400)", match=True),
        Option("n_test", Integer(2), 4000, "fresh uniform test points of the Monte Carlo test errors",
               calls=("simulate",)),
        Option("n_points", Integer(2), 21, "number of recorded times, evenly spaced over the training",
               calls=("simulate",)),
        *common("seeds", "seed", "device", "dtype", "progress"))

    observables: ClassVar[dict] = {
        "kernel_error": Observable("test error of kernel ridge regression (sum over outputs), best ridge",
                                   axes=("kernel",), log=True),
        "kernel_error_output": Observable("test error of kernel ridge regression per output, best ridge",
                                          axes=("kernel", "output"), log=True),
        "kernel_ridge": Observable("ridge at which each kernel's test error is smallest", axes=("kernel",),
                                   log=True),
        "kernel_c_F": Observable("Walsh coefficient of the kernel predictor on the set of F_i",
                                 axes=("kernel", "output")),
        "kernel_c_G": Observable("Walsh coefficient of the kernel predictor on the set of G_i(F)",
                                 axes=("kernel", "output")),
        "lemma_e2": Observable("Lemma E.2 lower bound on the kernel test error (sum over outputs)", axes=("kernel",),
                               log=True),
        "G_not_learned": Observable("test error of a predictor that learned F only (k alpha^2)"),
        "nothing_learned": Observable("test error of the zero predictor E||H||^2"),
        "thm2_bound": Observable("Theorem 2 lower bound alpha^2/4 on a kernel's test error"),
        "test_error": Observable("test error of the network (sum over outputs)", log=True),
        "test_error_output": Observable("test error of the network per output", axes=("output",), log=True),
        "c_F": Observable("Walsh coefficient of the network's output i on the set of F_i", axes=("output",)),
        "c_G": Observable("Walsh coefficient of the network's output i on the set of G_i(F)", axes=("output",)),
    }

    #: measured with ``example()`` against ``simulate(seeds=2, seed=s)``, s = 0, 2, ..., 14: kernel_error (exact vs the
    #: Monte Carlo error of the same fits on n_test = 4000 fresh points; errors 0.036 and 0.0069) sup_gap 6.5e-4
    #: (s = 0), 1.1e-4 (s = 2), worst 6.9e-4 (s = 10); bound twice the worst
    example_agreement: ClassVar[dict] = {"kernel_error": ("sup_gap", 0.0014)}

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

    def __repr__(self):
        return "resnet.NetworkProblem(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)) + ")"

    @classmethod
    def thm2(cls, arch="resnet", d=30, k=4, alpha=0.3, width=200, n_train=1000, seed=0):
        """Theorem 2's target at the sizes of docs/resnet.md (d = 30, k = 4, alpha = 0.3)."""
        return cls(arch, "thm2", d, k, alpha, 1.0, width, n_train, seed)

    @classmethod
    def fig2(cls, arch="resnet", d=30, k=8, alpha=0.3, beta=1.0, width=200, n_train=1000, seed=0):
        """Figure 2's task (d = 30, k = 8, alpha = 0.3, n_train = 1000; [AllenZhu19, Section 6])."""
        return cls(arch, "fig2", d, k, alpha, beta, width, n_train, seed)

    @classmethod
    def example(cls):
        """A small ResNet (d = 8, k = 2, width 16, 50 training points) trained for 2 + 2 epochs, and the options its
        predict and simulate share: a few seconds for predict and ``simulate(seeds=2)``."""
        return cls(d=8, k=2, width=16, n_train=50), {"epochs": 2}

    @cached_property
    def H(self):
        """The target H = beta F + alpha G(F) (a CompositionTarget; thm2: S drawn from the seed as in Problem)."""
        if self.target == "thm2":
            return thm2_target(self.d, self.k, self.alpha, rng=np.random.default_rng([self.seed, 0]))
        return fig2_target(self.d, self.k, self.alpha, self.beta)

    @cached_property
    def X(self):
        """n_train uniform points of {±1}^d drawn from the seed (stream 1, as Problem.X): the default training set of
        the kernels in ``popdyn.predict``; the networks' own sets are ``popdyn.sim.resnet.training_inputs``."""
        return np.random.default_rng([self.seed, 1]).choice([-1.0, 1.0], size=(self.n_train, self.d))
