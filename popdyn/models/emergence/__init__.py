"""Feature emergence from input structure ([Shi22], Shi-Wei-Liang): patterns, two-layer nets, population GD.

Docs: docs/emergence.md. Pattern coordinates ``q = M^T w`` (D,), class-relevant set A = the first k patterns.

* Data (``data.py``): :class:`PatternModel`, :class:`ExchangeablePatternModel` (iid block, count-resolved),
  :class:`Moments`, :func:`parity_mixture`, :func:`iid_block_model`, :func:`interval_labeling`,
  :func:`hidden_representation`, :func:`no_structure`, :func:`random_dictionary`, :class:`GaussianParityMixture`.
* Activation (``activation.py``): :func:`trunc_relu`, :func:`smooth_trunc_relu`, :func:`window`,
  :func:`window_derivs`.
* Correlations (``correlations.py``): :func:`neuron_correlations` (methods "fourier", "enumerate", "mc",
  "gauss"), :class:`NeuronCorr`, :func:`mc_correlations`, :func:`clt_error_bound`, :func:`gmm_correlations`
  (Gaussian-mixture parity, Stein).
* Network and schedule (``network.py``, ``schedule.py``): :class:`TwoLayerParams`, :func:`symmetric_init`,
  :func:`network_output`, :func:`feature_cosine`, :func:`ground_truth_network` (g*), :class:`Step`,
  :func:`theory_schedule`.
* Population steps (``steps.py``): :func:`population_gradient`, :func:`population_step`, :func:`hinge_certificate`,
  :func:`population_two_steps`, :func:`step2_expansion`, :func:`two_step_limit`, :func:`two_step_features`,
  :func:`full_support`.
* Classifier stage (``classifier.py``): :func:`optimal_second_layer`, :func:`hinge_and_error`,
  :func:`lemma23_construction`, :func:`line_params`, :func:`reduced_population_gd` (exact reduced GD).
* Bounds and rates (``bounds.py``): Thm 26 rates, error scales, the fixed-feature, kernel and SQ lower bounds,
  the count-threshold ceiling, App. F extras, the finite-sample step-2 cosine.
* ``popdyn.predict(Problem)`` (``problem.py``, ``predict.py``).
"""
from .activation import smooth_trunc_relu, trunc_relu, window, window_derivs
from .correlations import NeuronCorr, clt_error_bound, gmm_correlations, mc_correlations, neuron_correlations
from .bounds import (SQBound, WeightedMoments, class_weighted_moments, count_threshold_ceiling, eps_e, eps_e2,
                     finite_sample_bias_shift, finite_sample_step2_cos, finite_sample_step2_deviation,
                     fixed_feature_lower_bound, input_noise_gradient, kernel_lower_bound, parity_correlations,
                     parity_feature_correlations, sigt_general, sq_lower_bound, theorem1_rate,
                     theorem26_intermediate_rate, theorem26_terms, width_for_loss)
from .classifier import (ReducedTrajectory, hinge_and_error, lemma23_construction, line_params, optimal_second_layer,
                         reduced_population_gd)
from .data import (ExchangeablePatternModel, GaussianParityMixture, Moments, PatternModel, hidden_representation,
                   gram, iid_block_model, incoherence, interval_labeling, no_structure, parity_mixture,
                   random_dictionary, with_class_ratio)
from .network import TwoLayerParams, feature_cosine, ground_truth_network, network_output, symmetric_init
from .problem import Problem
from .schedule import Step, theory_schedule
from .steps import (full_support, hinge_certificate, population_gradient, population_step, population_two_steps,
                    step2_expansion, two_step_features, two_step_limit)
from . import predict  # noqa: F401  (the theory of Problem, registered with popdyn.api)

__all__ = ["PatternModel", "ExchangeablePatternModel", "Moments", "parity_mixture", "iid_block_model",
           "interval_labeling", "hidden_representation", "no_structure", "with_class_ratio", "random_dictionary",
           "incoherence", "gram", "GaussianParityMixture",
           "trunc_relu", "smooth_trunc_relu", "window", "window_derivs",
           "NeuronCorr", "neuron_correlations", "mc_correlations", "clt_error_bound", "gmm_correlations",
           "TwoLayerParams", "symmetric_init", "network_output", "feature_cosine", "ground_truth_network", "Step",
           "theory_schedule", "full_support", "population_gradient", "population_step", "hinge_certificate",
           "population_two_steps", "step2_expansion", "two_step_limit", "two_step_features", "hinge_and_error",
           "optimal_second_layer", "lemma23_construction", "line_params", "reduced_population_gd", "ReducedTrajectory",
           "Problem",
           "theorem1_rate", "theorem26_intermediate_rate", "theorem26_terms", "width_for_loss", "eps_e", "eps_e2",
           "fixed_feature_lower_bound", "parity_correlations", "parity_feature_correlations", "kernel_lower_bound",
           "sq_lower_bound", "SQBound", "count_threshold_ceiling", "class_weighted_moments", "WeightedMoments",
           "input_noise_gradient", "sigt_general", "finite_sample_step2_cos", "finite_sample_step2_deviation",
           "finite_sample_bias_shift"]
