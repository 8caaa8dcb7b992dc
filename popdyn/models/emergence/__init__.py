"""Feature emergence from input structure (seed 002, Shi-Wei-Liang): patterns, two-layer nets, population GD.

Spec: specs/emergence.md. Pattern coordinates ``q = M^T w`` (D,), class-relevant set A = the first k patterns.

* Data (``data.py``): :class:`PatternModel`, :class:`ExchangeablePatternModel` (iid block, count-resolved),
  :class:`Moments`, :func:`parity_mixture`, :func:`iid_block_model`, :func:`interval_labeling`,
  :func:`hidden_representation`, :func:`no_structure`, :func:`random_dictionary`, :class:`GaussianParityMixture`.
* Activation (``activation.py``): :func:`trunc_relu`, :func:`smooth_trunc_relu`, :func:`window`,
  :func:`window_derivs`.
* Correlations (``correlations.py``): :func:`neuron_correlations` (methods "fourier", "enumerate", "mc",
  "gauss"), :class:`NeuronCorr`, :func:`mc_correlations`, :func:`clt_error_bound`, :func:`gmm_correlations`
  (Gaussian-mixture parity, Stein).
"""
from .activation import smooth_trunc_relu, trunc_relu, window, window_derivs
from .correlations import NeuronCorr, clt_error_bound, gmm_correlations, mc_correlations, neuron_correlations
from .data import (ExchangeablePatternModel, GaussianParityMixture, Moments, PatternModel, hidden_representation,
                   iid_block_model, interval_labeling, no_structure, parity_mixture, random_dictionary)

__all__ = ["PatternModel", "ExchangeablePatternModel", "Moments", "parity_mixture", "iid_block_model",
           "interval_labeling", "hidden_representation", "no_structure", "random_dictionary", "GaussianParityMixture",
           "trunc_relu", "smooth_trunc_relu", "window", "window_derivs",
           "NeuronCorr", "neuron_correlations", "mc_correlations", "clt_error_bound", "gmm_correlations"]
