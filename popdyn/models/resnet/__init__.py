r"""ResNet vs kernels ([AllenZhu19]: Allen-Zhu & Li, v1, "What Can ResNet Learn Efficiently, Going Beyond Kernels?").

Docs: docs/resnet.md. Conventions: x in {±1}^d; a dot-product kernel is its Hamming profile
``kappa`` (shape (d+1,)); a target is a list with one Walsh expansion per output (dict from a sorted 0-based coordinate
tuple to its coefficient).

* Hypercube kernels (``hypercube.py``): :func:`krawtchouk` (exact integers), :func:`level_eigenvalues`,
  :func:`kernel_eigenvalues` (named kernels, full relative accuracy),
  :func:`profile_from_eigenvalues`, the profiles :func:`dot_product_profile`, :func:`relu_nngp` (the NNGP: the
  paper's conjugate kernel), :func:`relu_ntk_hidden` (the NTK of the hidden weights), :func:`relu_ntk` (of both
  layers), :func:`gaussian`, :func:`arcsin`, :func:`polynomial` (``relu_ck`` and ``relu_ntk_full`` are aliases of
  relu_nngp and relu_ntk, their earlier names);
  :func:`hypercube_points`, :func:`hamming_matrix` (numba popcount), :func:`kernel_matrix`, :func:`walsh_index`,
  :func:`fwht` (numba); KRR :func:`krr_fit`, the exact Parseval error :func:`exact_test_error`,
  :func:`captured_coefficients` and :func:`lemma_e2_bound`; :func:`fc2_kernel_limit`, the infinite-width profile of
  the two-layer net's kernels at init (its hidden-weight NTK and NNGP); :func:`network_kernel_limit`
  (``deep_kernels.py``), the same for fc3 and the ResNets (conjugate kernel, NTK per unit width, first-layer NTK).
* Complexity (``complexity.py``): :class:`TaylorSeries` in log space, :func:`log_C_eps`, :func:`log_C_eps_parts`,
  :func:`C_s`, :func:`log_C_s`; sign flips (``coupling.py``, Prop. C.4): :func:`sign_flips`, :func:`worst_case_flips`,
  :func:`worst_case_flip_fraction`, :func:`random_flip_fraction`; indicator to function (``indicator.py``, Lemma F.2):
  :func:`p_prime`, :func:`log_abs_p_prime`, :func:`h_coefficients`, :func:`h`, :func:`h_second_moment`.
* Targets (``targets.py``): :class:`CompositionTarget`, :func:`thm2_target`, :func:`fig2_target`,
  :func:`polarization_G`; theorem calculators (``theory.py``).
* Claim F.4 (``indicator.py``): :func:`truncation_levels`, :func:`h_truncated`, :func:`truncation_error`,
  :func:`claim_f4_tails`; Lemma F.1' (``existential.py``): :class:`Phi`, :func:`random_feature_weights`,
  ``existential.G`` (the pseudo-network G(x; W*)).
* Appendix A.1 (``minnorm.py``, used as ``resnet.minnorm``): the two-layer parity network, exact population MSE,
  ray-minimal norms, footnote 13's maps, the Rademacher bound.
* :class:`Problem` (``problem.py``) and ``popdyn.predict`` (``predict.py``): the exact kernel test error;
  :class:`NetworkProblem` (``popdyn predict resnet.network``): a trained network of the paper against the exact
  kernels fitted on its training set.
"""
from .hypercube import (D_MAX, FWHT_D_MAX, arcsin, captured_coefficients, dot_product_profile, exact_test_error, fwht,
                        gaussian, hamming_matrix, hypercube_points, kernel_eigenvalues, kernel_matrix, krawtchouk,
                        krr_fit, lemma_e2_bound, level_eigenvalues, polynomial, profile_from_eigenvalues, relu_ck,
                        relu_nngp, relu_ntk, relu_ntk_full, relu_ntk_hidden, walsh_index, fc2_kernel_limit)
from .deep_kernels import NETWORK_KERNELS, network_kernel_limit
from .complexity import C_s, TaylorSeries, log_C_eps, log_C_eps_parts, log_C_s
from .coupling import random_flip_fraction, sign_flips, worst_case_flip_fraction, worst_case_flips
from .indicator import (claim_f4_tails, h, h_coefficients, h_second_moment, h_truncated, log_abs_p_prime, p_prime,
                        truncation_error, truncation_levels)
from .existential import Phi, random_feature_weights
from .problem import KERNELS, NETWORK_ARCHS, NETWORK_RIDGES, NetworkProblem, Problem
from . import existential, minnorm
from .targets import CompositionTarget, fig2_target, polarization_G, thm2_target
from .theory import (COROLLARY71_CONSTS, COUPLING_CONSTS, THEOREM1_CONSTS, corollary71, coupling_bounds, regret_bound,
                     theorem1_schedule, thm2_alpha_min, thm2_lower_bound, thm2_N_range)
from . import predict  # noqa: F401  (registers Problem and NetworkProblem with popdyn.api)

__all__ = ["krawtchouk", "level_eigenvalues", "profile_from_eigenvalues", "dot_product_profile", "relu_nngp",
           "relu_ntk_hidden", "relu_ntk", "gaussian", "arcsin", "polynomial", "hypercube_points",
           "relu_ck", "relu_ntk_full",  # aliases: the earlier names of relu_nngp and relu_ntk
           "hamming_matrix", "kernel_matrix", "krr_fit", "exact_test_error", "captured_coefficients",
           "lemma_e2_bound", "walsh_index", "fwht", "D_MAX", "FWHT_D_MAX", "Problem", "KERNELS", "CompositionTarget",
           "thm2_target", "fig2_target", "polarization_G", "theorem1_schedule", "regret_bound", "corollary71",
           "thm2_lower_bound", "thm2_N_range", "thm2_alpha_min", "coupling_bounds", "THEOREM1_CONSTS",
           "COUPLING_CONSTS", "COROLLARY71_CONSTS", "TaylorSeries", "log_C_eps", "log_C_eps_parts", "C_s", "log_C_s",
           "sign_flips", "worst_case_flips", "worst_case_flip_fraction", "random_flip_fraction", "p_prime",
           "log_abs_p_prime", "h_coefficients", "h", "h_second_moment", "truncation_levels", "h_truncated", "truncation_error",
           "claim_f4_tails", "Phi", "random_feature_weights", "existential", "minnorm", "NetworkProblem", "NETWORK_ARCHS",
           "NETWORK_RIDGES", "fc2_kernel_limit", "network_kernel_limit", "NETWORK_KERNELS",
           "kernel_eigenvalues"]
