"""The gradient-feature problem of [Shi24] ch. 3: data model, width, init scales, first step size, seed."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from ..._options import Observable, Option, OptionTable, common, options_table
from ..._validate import Either, Integer, Interval, InvalidParameterError, Options, validate
from .bounds import case_parameters
from .data import LinearSeparable, xor_mixture
from .framework import loss_slope, symmetric_init
from .parity import StructuredParity, UniformParity

__all__ = ["Problem"]

_DATA = ("xor", "structured_parity", "uniform_parity", "linear")
_POS = Interval(0.0, np.inf, "neither")
_OPT_POS = Either((Options((None,)), _POS))
_OPT_INT2 = Either((Options((None,)), Integer(2)))
_OPEN01 = Interval(0.0, 1.0, "neither")
_NEURON, _STEP = ("neuron",), "step"
_ROUND = 1e-12      # uniform parity: ||G|| = B_G exactly for every +-1 neuron; the default window is widened by this


@dataclass(frozen=True, eq=False)
class Problem:
    r"""One gradient step with weight decay ``1/eta^(1)`` from the symmetric init (3.9), then convex training.

    .. math:: g(\mathbf x) = \sum_{i<4m}a_i\,\sigma(\langle\mathbf w_i,\mathbf x\rangle - b_i),\qquad
              \mathbf w_i^{(1)} = \eta^{(1)}|\ell'(0)|\,a_i^{(0)}G(\mathbf w_i^{(0)}, b_i),\quad
              a_i^{(1)} = \eta^{(1)}|\ell'(0)|\,A(\mathbf w_i^{(0)}, b_i)

    Run options (``Problem.options``): ``n_train`` and ``n_test`` for both calls; ``n_mc``, ``n_G``, ``B_a2``,
    ``B_eps``, ``eps``, ``delta`` for ``predict``; ``method``, ``steps``, ``lr`` (the later steps' size), ``init``,
    ``n_points``, ``record_params``, ``chunk`` and the common run options for ``simulate``.

    Parameters
    ----------
    data : {"xor", "structured_parity", "uniform_parity", "linear"}
        The data model: ``xor_mixture(d, sigma_B)`` (B.36), ``StructuredParity(d, r, k, p_A, p_o)`` (B.43, identity
        dictionary), ``UniformParity(d, k)`` (B.53) or ``LinearSeparable(e_1, (beta, 2 rho - beta))`` (B.5.1: the
        signal ``s = y<w*, x>`` is ``beta`` or ``2 rho - beta`` with probability 1/2 each, so margin ``beta`` and
        ``E s = rho``).
    d : int
        Input dimension, >= 3 (odd for uniform parity).
    sigma_B : float
        XOR cluster standard deviation, > 0.
    tau_tilde : float or None
        XOR ground-truth parameter (Lemma B.41), > 0; None gives ``d/(16 sigma_B^2 log d)`` (``4c = sqrt d``).
    r : int
        Structured parity: number of blocks (odd).
    k : int
        Parity block size (odd for structured, even for uniform parity).
    p_A : float
        Structured parity: weight of each structured component, ``2 r p_A <= 1``.
    p_o : float
        Structured parity: probability of each of +-1 for a noise coordinate, in [0, 1/2].
    beta : float
        Linear data: margin ``beta = min y<w*, x>``, > 0.
    rho : float or None
        Linear data: signal ``rho = E y<w*, x>``, >= beta; None gives ``beta``.
    width : int
        Base width m in the paper, >= 1: the network has ``4 width`` neurons (the symmetric init (3.9)).
    tau : float
        The paper's bias parameter, > 0: ``b~ = sqrt(tau d log log d) sigma_B sigma_w`` (XOR, B.37) or
        ``sqrt(tau r k log d) sigma_w`` (structured parity, B.47) or ``d^tau B_x1 sigma_w`` (linear, B.25); unused for
        uniform parity (B.479's bias grid).
    lr_first : float or None
        Step size of the first gradient step, eta^(1) in the paper, > 0 (its weight decay is 1/eta^(1)); None gives 1
        (uniform parity: ``1/(k |xi_{k-1}|)``, Lemma B.54). The later steps' size is the run option ``lr``.
    sigma_a : float or None
        Scale of ``a^(0)``, > 0; None gives Lemma B.6's ``b~/(|l'(0)| eta^(1) B_G B_eps)`` with ``B_eps = B_b``
        (so that ``(B_b/b~)||w^(1)|| ~ 1`` for typical neurons), and 1 for uniform parity (``a ~ U{+-1}``).
    sigma_w : float
        Scale of ``w^(0)``, > 0 (free, Remark B.12; only ``b~/sigma_w`` enters ``G``); 1 for uniform parity.
    gamma : float or None
        Cone width of the nice sets and of ``p``; None gives the case's value (App. B.5; the infinity-norm
        ``gamma_inf`` for uniform parity).
    B_G : float or None
        Gradient-norm threshold, > 0; None gives the case's value.
    loss : {"hinge", "logistic"}
        Loss ("logistic" is base 2, ``l(0) = 1``).
    seed : int
        Seed of the initialisation.

    Notes
    -----
    Regime: the case assumptions (tau >= 8, sigma_B >= 1, ...) are not enforced: simulable sizes violate them.
    A case default of ``gamma`` outside (0, 1) (structured parity: ``d^-(tau-2)`` needs tau > 2) is an error
    asking for an explicit ``gamma``.

    References
    ----------
    .. [src] [Shi24, (3.1), Algorithm 1, (3.9), App. B.5.3 (XOR), B.5.4 (structured parity), B.5.5 (uniform
       parity), B.5.1 (linear)]; the linear law in docs/gradient_features.md.
    """
    data: str = "xor"
    d: int = 32
    sigma_B: float = 1.0
    tau_tilde: float = None
    r: int = 1
    k: int = 3
    p_A: float = 0.25
    p_o: float = 0.5
    beta: float = 1.0
    rho: float = None
    width: int = 64
    tau: float = 1.0
    lr_first: float = None
    sigma_a: float = None
    sigma_w: float = 1.0
    gamma: float = None
    B_G: float = None
    loss: str = "hinge"
    seed: int = 0

    options: ClassVar[OptionTable] = options_table(
        Option("n_train", Integer(2), 1000, help="training samples: of the frozen-feature optimum (predict); of the "
               "first step and of each later batch or the one fixed sample (simulate)"),
        Option("n_test", Integer(2), 20_000, help="fresh samples of the network risks (predict) or the test set of "
               "each seed (simulate)"),
        Option("n_mc", Integer(2), 4000, help="initial neurons drawn for the feature probability p",
               calls=("predict",)),
        Option("n_G", _OPT_INT2, None, help="None: the exact population first step; an int: the first step on that "
               "many samples (where the exact G does not reach this d)", calls=("predict",)),
        Option("B_a2", _OPT_POS, None, help="l2 ball of the frozen-feature optimum's second layer; None is "
               "unconstrained (hinge only)", calls=("predict",)),
        Option("B_eps", _OPT_POS, None, help="tolerance of Lemma B.6's good network; None is the paper's minimiser "
               "when it lies in (0, B_b), else B_b/2", calls=("predict",)),
        Option("eps", _OPEN01, 0.1, help="target excess error of the main theorem", calls=("predict",)),
        Option("delta", _OPEN01, 0.1, help="failure probability of the main theorem", calls=("predict",)),
        Option("method", Options(("alg1", "alg4", "rf", "ntk")), "alg1",
               help="training after the first step: 'alg1' (the theory's Algorithm 1: GD on a and W, fresh batches), "
                    "'alg4' (GD on a, W frozen, one sample), baselines 'rf' and 'ntk' (no first step)",
               calls=("simulate",)),
        Option("steps", Integer(1), 1, help="training steps, the first step counting as step 1 (1: the first step "
               "only, what predict describes)", calls=("simulate",)),
        Option("lr", _OPT_POS, None, help="step size of the gradient steps after the first (needed when steps > 1); "
               "the first step's is the problem's lr_first", calls=("simulate",)),
        Option("init", Options(("problem", "random")), "problem", help="'problem': every seed starts at the "
               "problem's init (that of predict); 'random': a fresh symmetric init per seed", calls=("simulate",)),
        Option("n_points", Integer(2), 21, help="number of recorded steps on [0, steps] (step 1, the first step, "
               "is always recorded)", calls=("simulate",)),
        Option("record_params", Options((True, False)), True, help="keep the parameters at steps 0, 1 and the last",
               calls=("simulate",)),
        Option("chunk", Either((Options((None,)), Integer(1))), None,
               help="samples per block of every pass; None is blocks of about 2^22 numbers", calls=("simulate",),
               cli=False),
        *common("seeds", "seed", "device", "dtype", "progress"))

    observables: ClassVar[dict] = {
        "a1": Observable("second layer after the first step", axes=_NEURON),
        "W1": Observable("first layer after the first step", axes=("neuron", "d")),
        "cos_features": Observable("cosine of w_i^(1) with the features of g*", axes=("neuron", "feature")),
        "nice_fraction": Observable("fraction of nice neurons |Nice|/m", axes=("feature",)),
        "p_hat": Observable("feature probability p", axes=("feature",)),
        "p_ci": Observable("95% interval of p", axes=("feature", "bound")),
        "opt_gstar": Observable("risk of the ground truth g*"),
        "opt_frozen": Observable("frozen-feature optimum (training risk)"),
        "opt_frozen_gap": Observable("certified gap of the frozen-feature optimum"),
        "opt_frozen_test": Observable("risk of the frozen-feature optimum"),
        "opt_frozen_error": Observable("0-1 error of the frozen-feature optimum"),
        "bayes_error": Observable("Bayes error"),
        "good_network_loss": Observable("risk of the good network"),
        "good_network_coverage": Observable("fraction of g*'s neurons covered"),
        "good_network_bound": Observable("bound on the good network's risk"),
        "good_network_linf": Observable("max |a~| of the good network"),
        "good_network_l2": Observable("||a~|| of the good network"),
        "theorem_m_min": Observable("theorem's width m", log=True),
        "theorem_T": Observable("theorem's steps T", log=True),
        "theorem_n_min": Observable("theorem's samples n", log=True),
        "theorem_eta": Observable("theorem's step size", log=True),
        "theorem_error_bound": Observable("theorem's error bound", log=True),
        "theorem_error_bound_population": Observable("theorem's population error bound", log=True),
        "loss": Observable("test loss", coord=_STEP),
        "error": Observable("test error", coord=_STEP),
        "train_loss": Observable("training loss", coord=_STEP),
        "a_t": Observable("second layer", axes=_NEURON, coord=_STEP),
        "a0": Observable("initial second layer", axes=_NEURON),
        "W0": Observable("initial first layer", axes=("neuron", "d")),
        "b0": Observable("biases", axes=_NEURON),
        "b1": Observable("biases after the first step", axes=_NEURON),
        "aT": Observable("final second layer", axes=_NEURON),
        "WT": Observable("final first layer", axes=("neuron", "d")),
    }

    # measured with example() (popdyn.simulate(p, seeds=2, seed=s, **o), s = 0 and 2; the sample step on 4000
    # samples against the population step): sup_gap a1 0.096, 0.072; W1 0.124, 0.086 (entries up to 2.0);
    # cos_features 0.064, 0.054; nice_fraction 0, 0.0625 (one neuron of 8 at the cone edge in one seed); bounds ~2x
    example_agreement: ClassVar[dict] = {"a1": ("sup_gap", 0.2), "W1": ("sup_gap", 0.25),
                                         "cos_features": ("sup_gap", 0.13), "nice_fraction": ("sup_gap", 0.13)}

    _constraints = {
        "data": Options(_DATA),
        "d": Integer(3),
        "sigma_B": _POS,
        "tau_tilde": _OPT_POS,
        "r": Integer(1),
        "k": Integer(1),
        "p_A": Interval(0.0, 0.5),
        "p_o": Interval(0.0, 0.5),
        "beta": _POS,
        "rho": _OPT_POS,
        "width": Integer(1),
        "tau": _POS,
        "lr_first": _OPT_POS,
        "sigma_a": _OPT_POS,
        "sigma_w": _POS,
        "gamma": _OPT_POS,
        "B_G": _OPT_POS,
        "loss": Options(("hinge", "logistic")),
        "seed": Integer(0),
    }

    def __post_init__(self):
        validate(self)
        if self.data == "uniform_parity" and self.sigma_w != 1.0:
            raise InvalidParameterError(f"The 'sigma_w' parameter of gradient_features.Problem must be 1.0 for "
                                        f"data='uniform_parity' (w in {{+-1}}^d, B.479). Got {self.sigma_w!r} instead.")
        if self.rho is not None and self.rho < self.beta:
            raise InvalidParameterError(f"The 'rho' parameter of gradient_features.Problem must be >= beta = "
                                        f"{self.beta!r} (rho = E y<w*, x> >= min y<w*, x>). Got {self.rho!r} instead.")
        self.model                                          # the data model validates its own parameters
        g = self.cone[0]
        if self.cone[2] == "l2" and not 0.0 < g < 1.0:
            raise InvalidParameterError(f"The 'gamma' parameter of gradient_features.Problem must be a float in "
                                        f"(0, 1) (the case default is {g!r} at d = {self.d}, tau = {self.tau}); "
                                        f"pass it explicitly.")

    def __repr__(self):
        return (f"gradient_features.Problem(data={self.data!r}, d={self.d!r}, sigma_B={self.sigma_B!r}, "
                f"tau_tilde={self.tau_tilde!r}, r={self.r!r}, k={self.k!r}, p_A={self.p_A!r}, p_o={self.p_o!r}, "
                f"beta={self.beta!r}, rho={self.rho!r}, "
                f"width={self.width!r}, tau={self.tau!r}, lr_first={self.lr_first!r}, sigma_a={self.sigma_a!r}, "
                f"sigma_w={self.sigma_w!r}, gamma={self.gamma!r}, B_G={self.B_G!r}, loss={self.loss!r}, "
                f"seed={self.seed!r})")

    # ---- derived ------------------------------------------------------------------------------------
    @cached_property
    def model(self):
        """The data model (``xor_mixture``, ``StructuredParity``, ``UniformParity`` or ``LinearSeparable``)."""
        if self.data == "xor":
            return xor_mixture(self.d, self.sigma_B)
        if self.data == "linear":
            rho = self.beta if self.rho is None else self.rho
            return LinearSeparable(np.eye(1, self.d)[0], (self.beta, 2.0 * rho - self.beta), (0.5, 0.5))
        if self.data == "structured_parity":
            return StructuredParity(self.d, self.r, self.k, self.p_A, self.p_o)
        return UniformParity(self.d, self.k)

    @cached_property
    def case(self):
        """The App. B.5 parameters of the case (:func:`~popdyn.models.gradient_features.case_parameters`)."""
        if self.data == "xor":
            return case_parameters("xor", d=self.d, sigma_B=self.sigma_B, tau_tilde=self.tau_tilde)
        if self.data == "structured_parity":
            return case_parameters("parity", d=self.d, r=self.r, k=self.k, p_A=self.p_A, tau=self.tau)
        if self.data == "linear":
            M, (_, Bx1, Bx2) = self.model, self.model.bounds()
            return case_parameters("linear", d=self.d, tau=self.tau, rho=M.rho, beta=M.beta, Bx1=Bx1, Bx2=Bx2)
        return case_parameters("uniform_parity", d=self.d, k=self.k)

    @cached_property
    def cone(self):
        """``(gamma, B_G, norm, B_G1)`` of the nice sets and of ``p``: the fields, or the case's values."""
        c = self.case
        if self.data == "uniform_parity":
            gamma = c["gamma_inf"] if self.gamma is None else self.gamma
            B_G = c["B_G"] * (1.0 - _ROUND) if self.B_G is None else self.B_G
            return gamma, B_G, "linf", c["B_G1"] * (1.0 + _ROUND)
        return (c["gamma"] if self.gamma is None else self.gamma, c["B_G"] if self.B_G is None else self.B_G,
                "l2", None)

    @cached_property
    def gstar(self):
        """The ground-truth network ``(a*, W*, b*)`` of the case (XOR at ``tau_tilde``; parity: positive bias;
        linear: ``(w*, x)/beta`` as two zero-bias neurons, B.226)."""
        if self.data == "xor":
            return self.model.ground_truth(self.case["tau_tilde"])
        return self.model.ground_truth()

    @cached_property
    def b_tilde(self):
        """``b~`` of the init (None for uniform parity, whose biases are B.479's grid)."""
        if self.data == "uniform_parity":
            return None
        return math.sqrt(self.tau) * self.case["b_over_sigma_w"] * self.sigma_w if self.data == "xor" \
            else self.case["b_over_sigma_w"] * self.sigma_w

    @cached_property
    def step_size(self):
        """``eta^(1)``: the field, or 1 (uniform parity: ``1/(k |xi_{k-1}|)``, Lemma B.54)."""
        if self.lr_first is not None:
            return self.lr_first
        return 1.0 / (self.k * abs(float(self.model.xi(self.k - 1)))) if self.data == "uniform_parity" else 1.0

    @cached_property
    def init_scale(self):
        """``sigma_a``: the field, or Lemma B.6's ``b~/(|l'(0)| eta^(1) B_G B_b)`` (1 for uniform parity)."""
        if self.sigma_a is not None:
            return self.sigma_a
        if self.data == "uniform_parity":
            return 1.0
        return self.b_tilde / (loss_slope(self.loss) * self.step_size * self.cone[1] * self.case["B_b"])

    @cached_property
    def params0(self):
        """The symmetric init ``(a0 (4m,), W0 (4m, d), b (4m,))`` (3.9), or (B.479) for uniform parity."""
        rng = np.random.default_rng([self.seed, 0])
        if self.data == "uniform_parity":
            grid = (rng.integers(1, 2 * self.k, self.width) - self.k) / self.k      # U{-1 + 1/k, ..., 1 - 1/k}
            return symmetric_init(self.d, self.width, self.init_scale, self.sigma_w, grid, rng, law="sign")
        return symmetric_init(self.d, self.width, self.init_scale, self.sigma_w, self.b_tilde, rng)

    @cached_property
    def gstar_signs(self):
        """Bias sign ``s_j`` of each neuron of ``g*``: ``sign b*_j``, and for a zero bias +1, except for linear data,
        whose features are ``(+-w*, -1)`` (Lemma B.25: the always-active negative-bias neurons)."""
        b = self.gstar[2]
        return np.where(b > 0.0, 1, np.where(b < 0.0, -1, -1 if self.data == "linear" else 1))

    @cached_property
    def features(self):
        """``(D (F, d), s (F,))``: the distinct (feature, bias sign) pairs of the ground truth ``g*``."""
        W, s = self.gstar[1], self.gstar_signs
        _, idx = np.unique(np.column_stack([np.round(W, 12), s]), axis=0, return_index=True)
        idx = np.sort(idx)
        return W[idx], s[idx]

    # ---- constructors --------------------------------------------------------------------------------
    @classmethod
    def xor(cls, d=32, sigma_B=1.0, width=64, tau=1.0, tau_tilde=None, lr_first=None, sigma_a=None, loss="hinge",
            seed=0):
        """The XOR mixture of Assumption B.36 (four clusters at ``+-sqrt(d) e_1``, ``+-sqrt(d) e_2``)."""
        return cls(data="xor", d=d, sigma_B=sigma_B, tau_tilde=tau_tilde, width=width, tau=tau, lr_first=lr_first,
                   sigma_a=sigma_a, loss=loss, seed=seed)

    @classmethod
    def structured_parity(cls, d=12, r=1, k=3, p_A=0.25, p_o=0.5, width=64, tau=3.0, gamma=None, lr_first=None,
                          sigma_a=None, loss="hinge", seed=0):
        """Structured parity of Assumption B.43 with the identity dictionary (``tau > 2`` for the case's gamma)."""
        return cls(data="structured_parity", d=d, r=r, k=k, p_A=p_A, p_o=p_o, width=width, tau=tau, gamma=gamma,
                   lr_first=lr_first, sigma_a=sigma_a, loss=loss, seed=seed)

    @classmethod
    def linear(cls, d=16, beta=1.0, rho=None, width=64, tau=2.0, gamma=None, lr_first=None, sigma_a=None,
               loss="hinge", seed=0):
        """Linear data of B.5.1 (``w* = e_1``, signal ``beta`` or ``2 rho - beta``; ``tau = 2`` keeps the case's
        ``gamma = sqrt(B_x2)/(rho d^(tau/2 - 1/4))`` below 1 from ``d = 16``)."""
        return cls(data="linear", d=d, beta=beta, rho=rho, width=width, tau=tau, gamma=gamma, lr_first=lr_first,
                   sigma_a=sigma_a, loss=loss, seed=seed)

    @classmethod
    def uniform_parity(cls, d=11, k=2, width=64, lr_first=None, loss="hinge", seed=0):
        """Uniform parity of Assumption B.53 (d odd, k even) with B.479's init and Lemma B.54's ``eta^(1)``."""
        return cls(data="uniform_parity", d=d, k=k, width=width, lr_first=lr_first, loss=loss, seed=seed)

    @classmethod
    def example(cls):
        """The XOR mixture at d = 16 with 32 neurons; 4000 samples for the simulated first step (and the frozen
        optimum of predict)."""
        return cls.xor(d=16, width=8), {"n_train": 4000}
