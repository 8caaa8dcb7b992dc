r"""Gradient-feature learning (seed 001 ch. 3, Shi-Wei-Liang NeurIPS 2023): one gradient step, then convex training.

Spec: specs/gradient_features.md. Conventions (issue 11 §5): W is (M, d), one row per neuron;
:math:`g(\mathbf x)=\sum_i a_i\,\sigma(\langle\mathbf w_i,\mathbf x\rangle-b_i)`; mixture weights are joint and
``sigmas`` are standard deviations.

* Data (``data.py``): :class:`DataModel`, :class:`Bounds`, :class:`GaussianMixture`, :func:`xor_mixture`,
  :class:`LinearSeparable`, :func:`relu_moment`, the losses :func:`hinge`, :func:`logistic2` (``LOSSES``).
* Multiple-index polynomial (``multi_index.py``): :class:`MultiIndexPolynomial` (exact G, A, Algorithm 7's
  first-step direction, H and kappa).
"""
from .data import (LOSSES, Bounds, DataModel, GaussianMixture, LinearSeparable, hinge, logistic2, relu_moment,
                   xor_mixture)
from .multi_index import MultiIndexPolynomial

__all__ = ["DataModel", "Bounds", "GaussianMixture", "xor_mixture", "LinearSeparable", "relu_moment", "hinge",
           "logistic2", "LOSSES", "MultiIndexPolynomial"]
