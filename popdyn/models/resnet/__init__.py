r"""ResNet vs kernels (seed 004, Allen-Zhu & Li 2019 v1, "What Can ResNet Learn Efficiently, Going Beyond Kernels?").

Spec: specs/resnet_kernels.md. Conventions (issue 12 §5): x in {±1}^d; a dot-product kernel is its Hamming profile
``kappa`` (shape (d+1,)); a target is a list with one Walsh expansion per output (dict from a sorted 0-based coordinate
tuple to its coefficient).

* Hypercube kernels (``hypercube.py``): :func:`krawtchouk` (exact integers), :func:`level_eigenvalues`,
  :func:`profile_from_eigenvalues`, the profiles :func:`dot_product_profile`, :func:`relu_ck`,
  :func:`relu_ntk_hidden`, :func:`relu_ntk_full`, :func:`gaussian`, :func:`arcsin`, :func:`polynomial`;
  :func:`hypercube_points`, :func:`hamming_matrix` (numba popcount), :func:`kernel_matrix`, :func:`walsh_index`,
  :func:`fwht` (numba); KRR :func:`krr_fit`, the exact Parseval error :func:`exact_test_error`,
  :func:`captured_coefficients` and :func:`lemma_e2_bound`.
* Targets (``targets.py``): :class:`CompositionTarget`, :func:`thm2_target`, :func:`fig2_target`,
  :func:`polarization_G`; theorem calculators (``theory.py``).
* :class:`Problem` (``problem.py``) and ``popdyn.predict`` (``predict.py``): the exact kernel test error.
"""
from .hypercube import (D_MAX, FWHT_D_MAX, arcsin, captured_coefficients, dot_product_profile, exact_test_error, fwht,
                        gaussian, hamming_matrix, hypercube_points, kernel_matrix, krawtchouk, krr_fit, lemma_e2_bound,
                        level_eigenvalues, polynomial, profile_from_eigenvalues, relu_ck, relu_ntk_full,
                        relu_ntk_hidden, walsh_index)
from .problem import KERNELS, Problem
from .targets import CompositionTarget, fig2_target, polarization_G, thm2_target
from .theory import corollary71, regret_bound, theorem1_schedule, thm2_alpha_min, thm2_lower_bound, thm2_N_range
from . import predict  # noqa: F401  (registers popdyn.predict for Problem)

__all__ = ["krawtchouk", "level_eigenvalues", "profile_from_eigenvalues", "dot_product_profile", "relu_ck",
           "relu_ntk_hidden", "relu_ntk_full", "gaussian", "arcsin", "polynomial", "hypercube_points",
           "hamming_matrix", "kernel_matrix", "krr_fit", "exact_test_error", "captured_coefficients",
           "lemma_e2_bound", "walsh_index", "fwht", "D_MAX", "FWHT_D_MAX", "Problem", "KERNELS", "CompositionTarget",
           "thm2_target", "fig2_target", "polarization_G", "theorem1_schedule", "regret_bound", "corollary71",
           "thm2_lower_bound", "thm2_N_range", "thm2_alpha_min"]
