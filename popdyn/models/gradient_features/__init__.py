r"""Gradient-feature learning (seed 001 ch. 3, Shi-Wei-Liang NeurIPS 2023): one gradient step, then convex training.

Spec: specs/gradient_features.md. Conventions (issue 11 §5): W is (M, d), one row per neuron;
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
"""
from .data import (LOSSES, Bounds, DataModel, GaussianMixture, LinearSeparable, hinge, logistic2, relu_moment,
                   xor_mixture)
from .multi_index import MultiIndexPolynomial

__all__ = ["DataModel", "Bounds", "GaussianMixture", "xor_mixture", "LinearSeparable", "relu_moment", "hinge",
           "logistic2", "LOSSES", "MultiIndexPolynomial"]
