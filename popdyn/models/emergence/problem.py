"""The feature-emergence problem of [Shi22]: a data model, the width, the three-stage schedule, the seed; its
run options and observables."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from ..._options import Observable, Option, OptionTable, common, options_table
from ..._validate import Either, Integer, Interval, InvalidParameterError, Options, validate
from .data import interval_labeling, no_structure, parity_mixture
from .network import symmetric_init
from .schedule import theory_schedule

__all__ = ["Problem"]

_DATA = ("parity", "parity_mix", "interval")
_K_MAX = 30      # the paper's interval labeling (count-resolved); parity: 2^k A-support rows, k <= _K_PARITY
_K_PARITY = 12
_STEPS = 600     # the paper's E1 protocol (Table 1): 600 steps
_POS = Interval(0.0, np.inf, closed="neither")


@dataclass(frozen=True, eq=False)
class Problem:
    r"""A two-layer truncated-ReLU network trained by population GD in the paper's three stages.

    .. math:: g(x) = \sum_{i=1}^{2m}a_i\,\tilde\sigma_{\sigma_\xi}(\langle w_i, x\rangle + b_i),\quad
              \theta^{(t)} = \theta^{(t-1)} - \eta^{(t)}\nabla\big[L_{\mathcal D}(g^{(t-1)};\sigma_\xi^{(t)}) + R\big]

    on inputs ``x = M phi`` from a dictionary of D patterns, k of them class-relevant, with the symmetric init
    (``g^(0) = 0``) and the schedule of :func:`~popdyn.models.emergence.theory_schedule` (:meth:`schedule`).
    The training protocol is given to ``popdyn.predict`` and ``popdyn.simulate`` as run options (``steps``, ``lr``;
    see ``Problem.options``).

    Parameters
    ----------
    D : int
        Number of patterns, ``D > k``.
    k : int
        Number of class-relevant patterns, ``2 <= k <= 30``; odd and ``<= 12`` for the parity labelings, ``<= 20``
        without structure.
    p_o : float
        Background probability, in (0, 1/2] (the paper's WLOG ``p_o <= 1/2``); the parity-mixture A-block
        parameter as well.
    width : int
        Half width (``2 width`` neurons), ``width >= 1``; m in the paper.
    data : {"parity", "parity_mix", "interval"}
        "parity": the parity mixture's A-block with an independent Bern(p_o) background (a member of F_Xi for
        every p_o); "parity_mix": the paper's ``D_A^mix`` (background shares the mixture component; (A2) only
        at p_o = 1/2); "interval": iid Bern(2/3) A-block, ``y = +1`` iff count >= ceil(2k/3).
    structure : bool
        False: the data with the input structure removed (A1'), trained with the hyperparameters of the
        structured model ("Network w/o structure").
    variant : {"lemma23", "thm26", "general"}
        Step-1/2 hyperparameters: Lemma 23, Thm 26 (erratum 4), or Thm 34 (App. F: ``eta^(1)`` times ``p_min`` and
        the class-weighted loss in steps 1-2, for unbalanced classes).
    lam : float or None
        Stage-3 weight decay ``>= 0``; None gives Thm 26's ``k^3/(sigma~ m^{1/3})``.
    stage3 : {"all", "second_layer"}
        Train every layer in stage 3 (the theorem) or only the second layer (the "Two Step" baseline).
    d : int or None
        Ambient dimension ``d >= D`` for simulations in R^d; None: pattern coordinates (the population theory
        does not depend on d).
    seed : int
        Seed of the initialisation (:func:`~popdyn.models.emergence.symmetric_init`).

    Notes
    -----
    Results run over ``t = 2..steps`` (stage 3; step 2 ends the two full-batch steps): the test hinge ``loss``,
    the test ``error`` and the feature cosine ``cos``; the steps-1-2 diagnostics are in ``meta["steps_1_2"]``.

    References
    ----------
    .. [src] [Shi22, Sections 3-3.1, App. E.1-E.1.1] (E1: D = 100, k = 5, p_o = 1/2, m = 300, T = 600 steps).
    """
    D: int = 100
    k: int = 5
    p_o: float = 0.5
    width: int = 300
    data: str = "parity"
    structure: bool = True
    variant: str = "lemma23"
    lam: float = 1e-3
    stage3: str = "all"
    d: int = None
    seed: int = 0

    options: ClassVar[OptionTable]
    observables: ClassVar[dict]
    example_agreement: ClassVar[dict]

    _constraints = {
        "D": Integer(3),
        "k": Integer(2, _K_MAX),
        "p_o": Interval(0.0, 0.5, closed="right"),
        "width": Integer(1),
        "data": Options(_DATA),
        "structure": Options((True, False)),
        "variant": Options(("lemma23", "thm26", "general")),
        "lam": Either((Options((None,)), Interval(0.0, np.inf, closed="left"))),
        "stage3": Options(("all", "second_layer")),
        "d": Either((Options((None,)), Integer(1))),
        "seed": Integer(0),
    }

    def __post_init__(self):
        validate(self)
        if not self.k < self.D:
            raise InvalidParameterError(f"The 'k' parameter of emergence.Problem must be an int in [2, D - 1] = "
                                        f"[2, {self.D - 1}] (D = {self.D}). Got {self.k!r} instead.")
        if self.data != "interval" and (self.k % 2 == 0 or self.k > _K_PARITY):
            raise InvalidParameterError(f"The 'k' parameter of emergence.Problem must be odd and <= {_K_PARITY} for "
                                        f"data={self.data!r} (balanced parity, Thm 2's setting; 2^k support rows). "
                                        f"Got {self.k!r} instead.")
        if not self.structure and self.k > 20:
            raise InvalidParameterError(f"The 'k' parameter of emergence.Problem must be <= 20 when structure=False "
                                        f"(no_structure enumerates the cube). Got {self.k!r} instead.")
        if self.d is not None and self.d < self.D:
            raise InvalidParameterError(f"The 'd' parameter of emergence.Problem must be None or an int >= D = "
                                        f"{self.D} (orthonormal dictionary). Got {self.d!r} instead.")

    def __repr__(self):
        return (f"emergence.Problem(D={self.D!r}, k={self.k!r}, p_o={self.p_o!r}, width={self.width!r}, "
                f"data={self.data!r}, structure={self.structure!r}, variant={self.variant!r}, lam={self.lam!r}, "
                f"stage3={self.stage3!r}, d={self.d!r}, seed={self.seed!r})")

    # ---- derived ------------------------------------------------------------------------------------
    @cached_property
    def structured_model(self):
        """The data model with input structure (sets sigma_a and the schedule, also when ``structure`` is False)."""
        if self.data == "interval":
            return interval_labeling(self.D, self.k, p_bg=self.p_o)
        return parity_mixture(self.D, self.k, self.p_o, independent_background=self.data == "parity")

    @cached_property
    def model(self):
        """The data model the network is trained on (:func:`no_structure` of the structured one when asked)."""
        return self.structured_model if self.structure else no_structure(self.structured_model)

    @cached_property
    def params0(self):
        """Symmetric initial parameters in pattern coordinates (paper's scales of the structured model)."""
        return symmetric_init(self.structured_model, self.width, self.seed)

    def schedule(self, steps=_STEPS, lr=None):
        """The ``steps`` updates of :func:`theory_schedule` (structured model's constants): steps 1-2, then
        ``steps - 2`` stage-3 steps of step size ``lr`` (None: Thm 26's ``k^2/(steps m^{1/3})``)."""
        return theory_schedule(self.structured_model, self.width, steps, self.variant, self.lam, lr)

    # ---- constructors --------------------------------------------------------------------------------
    @classmethod
    def e1(cls, width=300, d=500, seed=0):
        """The paper's E1 setting (parity mixture, D = 100, k = 5, p_o = 1/2, d = 500, width m = 300; trained for
        the default ``steps=600``)."""
        return cls(D=100, k=5, p_o=0.5, width=width, data="parity_mix", d=d, seed=seed)

    @classmethod
    def parity(cls, D=100, k=5, p_o=0.5, width=300, stage3="all", structure=True, seed=0):
        """Parity labels with an independent Bern(p_o) background (a valid member of F_Xi for every p_o)."""
        return cls(D=D, k=k, p_o=p_o, width=width, data="parity", structure=structure, stage3=stage3, seed=seed)

    @classmethod
    def interval(cls, D=100, k=30, width=100, d=None, seed=0):
        """The paper's E2 interval labeling (iid Bern(2/3) A-block, y = +1 iff count >= ceil(2k/3) = 20 at k = 30,
        width m = 100, trained for ``steps=200`` in the paper; count-resolved beyond k = 16)."""
        return cls(D=D, k=k, p_o=0.5, width=width, data="interval", d=d, seed=seed)

    @classmethod
    def example(cls):
        """A small parity problem (D = 12, k = 3, width 4) and 20 steps: predict and simulate in seconds."""
        return cls(D=12, k=3, width=4), {"steps": 20}


Problem.options = options_table(
    Option("steps", Integer(2), _STEPS, "number of GD steps: the two full-batch steps, then steps - 2 stage-3 steps "
           "(T in the paper)", match=True),
    Option("lr", _POS, None, "stage-3 step size; None is Thm 26's k^2/(steps m^(1/3)) (eta in the paper)",
           match=True),
    Option("method", Options(("fourier", "gauss")), "fourier", "correlations of steps 1-2: exact Fourier inversion "
           "or the CLT approximation of the background", calls=("predict",)),
    Option("n_train", Integer(2), 50_000, "training samples per seed (the paper: 50000)", calls=("simulate",)),
    Option("batch", Integer(1), 1000, "stage-3 minibatch size, at most n_train (the paper: 1000)",
           calls=("simulate",)),
    Option("n_test", Integer(1), 10_000, "fresh test samples per seed", calls=("simulate",)),
    Option("balanced", Options((True, False)), False, "exactly n_train/2 training samples per class",
           calls=("simulate",)),
    Option("init", Options(("problem", "random")), "problem", "initial parameters: the problem's params0 (the "
           "prediction's) for every seed, or a fresh draw per seed at the paper's scales", calls=("simulate",)),
    Option("n_points", Integer(2), 21, "number of recorded steps on [2, steps] (at most steps - 1)",
           calls=("simulate",)),
    Option("eval_samples", Either((Options((None,)), Integer(1))), None, "training samples on which the train "
           "loss and error are measured; None is min(n_train, 10000)", calls=("simulate",), cli=False),
    Option("chunk", Integer(1), 10_000, "samples per block of the full-batch steps and evaluations (memory bound)",
           calls=("simulate",), cli=False),
    *common("seeds", "seed", "device", "dtype", "progress"))

Problem.observables = {
    "loss": Observable("test hinge loss"),
    "error": Observable("test error P[y g < 0] + P[g = 0]/2"),
    "cos": Observable("feature cosine max_i |cos(w_i, sum_A M_j)|"),
    "train_loss": Observable("training hinge loss"),
    "train_error": Observable("training error P[y g < 0] + P[g = 0]/2"),
}

# measured on the example with seeds 0,1 and 2,3 (popdyn.simulate(p, seeds=2, seed=s, steps=20)): loss sup_gap
# 0.0015, 0.0011; error mean_gap 0.010, 0.0093 (its sup_gap, ~0.1, is one transient dip of one seed at t = 3-4);
# cos sup_gap 1.6e-4, 1.0e-4 (1 - cos ~ 1/n_train off the line 1_A). Bounds about 2x the worst.
Problem.example_agreement = {"loss": ("sup_gap", 0.003), "error": ("mean_gap", 0.02), "cos": ("sup_gap", 3e-4)}
