"""Multi-task ReLU representation learning ([Collins24], Collins et al.): one head step, one shared first-layer step.

Docs: docs/multitask.md. W is (m, d), one row per neuron; sign patterns in
``itertools.product([-1, 1], repeat=r)`` order; task tables F are (T, 2^r); heads (T, m).

* Problem and tasks: :class:`Problem`, :func:`symmetric_init`, :class:`TaskSet`, :func:`sign_patterns`,
  :func:`pattern_index`.
* Moments: :func:`sign_moments` (q, p), :func:`conditional_moments` (M, S), :func:`halfnormal_cf`.
* One step: :func:`A_matrix`, :func:`A_blocks_leading`, :func:`head_after_step`, :func:`post_head_loss`,
  :func:`population_gradient`, :func:`one_step_map`, :func:`one_step_map_reduced`, :func:`leading_order_map`,
  :func:`decay_factor`, :func:`lambda_w_paper`, :func:`lambda_w_adaptive`, :func:`kappa_par`, :func:`kappa_hat`,
  :func:`subspace_ratio`, :func:`margin_bound`, :func:`check_linear_regime`; ``popdyn.predict(Problem)`` (``predict.py``).
* Downstream (App. B): :class:`DownstreamEmbedding`, :func:`rescaling_alpha`, :func:`hypercube`,
  :func:`fit_linear_probe`, :func:`svm_margin`, :func:`purified_margin`, :func:`ball_hinge_loss`,
  :func:`lemmaB3_rhs`; theorem shapes with explicit constants in :mod:`.bounds` (``thm46_lower``,
  ``thm46_bessel``, ``prop41_rhs``, ``thm42_rhs``, ``lemmaA5_hoeffding``, ...).
"""
from . import bounds
from .downstream import (DownstreamEmbedding, ball_hinge_loss, fit_linear_probe, hypercube, lemmaB3_rhs,
                         purified_margin, rescaling_alpha, svm_margin)
from .moments import conditional_moments, halfnormal_cf, sign_moments
from .onestep import (A_blocks_leading, A_matrix, check_linear_regime, decay_factor, head_after_step, kappa_hat,
                      kappa_par, lambda_w_adaptive, lambda_w_paper, leading_order_map, margin_bound, one_step_map,
                      one_step_map_reduced, population_gradient, post_head_loss, subspace_ratio)
from .problem import Problem, symmetric_init
from .tasks import TaskSet, pattern_index, sign_patterns
from . import predict  # noqa: F401  (registers popdyn.predict for Problem)

__all__ = ["Problem", "symmetric_init", "TaskSet", "sign_patterns", "pattern_index",
           "sign_moments", "conditional_moments", "halfnormal_cf",
           "A_matrix", "A_blocks_leading", "head_after_step", "post_head_loss", "population_gradient",
           "one_step_map", "one_step_map_reduced", "leading_order_map", "decay_factor", "lambda_w_paper",
           "lambda_w_adaptive", "kappa_par", "kappa_hat", "subspace_ratio", "margin_bound", "check_linear_regime",
           "DownstreamEmbedding", "rescaling_alpha", "hypercube", "lemmaB3_rhs", "fit_linear_probe", "svm_margin",
           "purified_margin", "ball_hinge_loss", "bounds"]
