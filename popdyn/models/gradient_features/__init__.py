r"""Gradient-feature learning ([Shi24] ch. 3, Shi-Wei-Liang NeurIPS 2023): one gradient step, then convex training.

Docs: docs/gradient_features.md. Conventions: W is (M, d), one row per neuron;
:math:`g(\mathbf x)=\sum_i a_i\,\sigma(\langle\mathbf w_i,\mathbf x\rangle-b_i)`; mixture weights are joint and
``sigmas`` are standard deviations.

* Data (``data.py``): :class:`DataModel`, :class:`Bounds`, :class:`GaussianMixture`, :func:`xor_mixture`,
  :class:`LinearSeparable`, :func:`relu_moment`, the losses :func:`hinge`, :func:`logistic2` (``LOSSES``).
  Every model: ``sample``, ``dim``, ``E_yx``, ``bounds``, ``simplified_gradient``, ``A``, and the Monte Carlo
  oracles ``simplified_gradient_mc``, ``A_mc``, ``network_loss_mc``. Mixtures add ``feature_stats``,
  ``bayes_error``, ``ground_truth``, ``ground_truth_loss`` and the O(1)-per-neuron sufficient statistics
  ``sample_init_coords`` / ``simplified_gradient_coords``.
* Multiple-index polynomial (``multi_index.py``): :class:`MultiIndexPolynomial` (exact G, A, Algorithm 7's
  first-step direction, H and kappa).
* Parities (``parity.py``): :class:`StructuredParity` (exact E[yx], Monte Carlo G in numba chunks, enumeration for
  tiny d, the positive-bias g*), :class:`UniformParity` (exact G through the majority coefficients
  :func:`majority_coefficient`).
* Framework (``framework.py``): :func:`symmetric_init` (3.9), :func:`first_step` (population or sample, hinge or
  base-2 logistic), :func:`cone_membership`, :func:`nice_set`, :func:`feature_probability`,
  :func:`good_second_layer` (Lemma B.6), :func:`opt_frozen` (OPT_{W,b,B_a2}), :func:`population_loss`.
* Risk (``risk.py``): :func:`population_risk` (exact on hypercube data by enumeration of column classes or on a
  rounded lattice with a bound; exact for Gaussian data when W has rank <= 2 on the noise space; else Monte Carlo).
* Bounds (``bounds.py``): :func:`main_theorem` (3.10)-(3.13) with every hidden constant an argument, the case tables
  :func:`case_parameters`, Lemma B.6/B.9, Theorem B.2/B.7, the fixed-feature bound for parity, the auxiliary
  inequalities.
* :class:`Problem` and ``popdyn.predict`` (``problem.py``, ``predict.py``).
"""
from .bounds import (B8_CONSTS, B8_SUFFICIENT, LIPSCHITZ, LPRIME0, MAIN_CONSTS, average_loss_bound, case_parameters,
                     chi2_tail_bound, fixed_feature_lower_bound_parity, good_network_bound, good_network_scales,
                     gradient_concentration, lemma_B8_bounds, lemma_B9_bounds, lemma_B9_h, lemma_B10_bounds,
                     main_theorem, max_gaussian_tail_bound, mills_bounds, oco_bound, rademacher_bound,
                     smoothness_constant, tail_expectation_bound, theorem_B2_bound, uniform_parity_requirements)
from .data import (LOSSES, Bounds, DataModel, GaussianMixture, LinearSeparable, hinge, logistic2, relu_moment,
                   xor_mixture)
from .framework import (cone_membership, feature_probability, first_step, good_second_layer, loss_slope, nice_set,
                        opt_frozen, population_loss, symmetric_init, uniform_parity_second_layer)
from .multi_index import MultiIndexPolynomial
from .parity import MonteCarloGradient, StructuredParity, UniformParity, majority_coefficient
from .problem import Problem
from .risk import Risk, population_risk
from . import predict  # noqa: F401  (the theory of Problem, registered with popdyn.api.register)

__all__ = ["DataModel", "Bounds", "GaussianMixture", "xor_mixture", "LinearSeparable", "relu_moment", "hinge",
           "logistic2", "LOSSES", "MultiIndexPolynomial", "StructuredParity", "UniformParity", "majority_coefficient",
           "MonteCarloGradient", "symmetric_init", "first_step", "cone_membership", "nice_set", "feature_probability",
           "good_second_layer", "uniform_parity_second_layer", "opt_frozen", "population_loss", "loss_slope",
           "Problem", "main_theorem", "average_loss_bound", "good_network_bound", "good_network_scales",
           "theorem_B2_bound", "smoothness_constant", "rademacher_bound", "lemma_B8_bounds", "lemma_B9_h",
           "lemma_B9_bounds", "lemma_B10_bounds", "B8_CONSTS", "B8_SUFFICIENT", "LIPSCHITZ", "case_parameters",
           "fixed_feature_lower_bound_parity", "max_gaussian_tail_bound", "chi2_tail_bound", "mills_bounds",
           "tail_expectation_bound", "uniform_parity_requirements", "oco_bound", "gradient_concentration", "LPRIME0",
           "MAIN_CONSTS", "Risk", "population_risk"]
