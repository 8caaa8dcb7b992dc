"""In-context learning with linear / low-rank attention ([Shi24] Ch. 5, App. D; docs/icl.md).

Two problems (``problem``): :class:`Problem` (catalogue name ``icl``), the rank-r in-context linear regression
(theory in ``regression``, ``regression_risk``, ``regression_flow``), and :class:`ParityProblem`
(``icl.parity``), the sparse parity in context (``parity``, ``parity_minnorm``); ``predict`` registers the
theory of both.
"""
from .problem import ParityProblem, Problem, pT_max
from .parity import (four_head_counterexample, frobenius_cost, margins, mc_eval, mc_population_hinge, noise_energy, noise_energy_ratio, paper_construction, pattern_probs, population_hinge, small_model_heads, task_sets)  # noqa: E501
from .parity_minnorm import HeadFit, fit_heads, four_head_min_norm, query_design
from .regression import (ICLOptimum, excess_loss, factor_gradient, full_rank_optimum, gamma_matrix, optimal_loss,
                         optimum, population_gradient, population_loss, rank_r_optimum, spectrum)
from .regression_flow import (flow_parameters, flow_plateaus, gradient_descent, gradient_flow, initial_factors,
                              saddle_losses)
from .regression_risk import (eval_risk, eval_risk_avg, eval_risk_flip, large_n_eval_risk, optimum_eval_risk,
                              optimum_eval_risk_avg, rank_gap)
from . import predict

__all__ = ["Problem", "ICLOptimum", "spectrum", "gamma_matrix", "population_loss", "population_gradient",
           "factor_gradient", "excess_loss", "full_rank_optimum", "rank_r_optimum", "optimum", "optimal_loss",
           "eval_risk", "eval_risk_avg", "eval_risk_flip", "optimum_eval_risk", "optimum_eval_risk_avg",
           "large_n_eval_risk", "rank_gap",
           "initial_factors", "gradient_descent", "gradient_flow", "flow_parameters", "saddle_losses",
           "flow_plateaus"]
__all__ += ["ParityProblem", "task_sets", "pattern_probs", "pT_max", "population_hinge", "mc_population_hinge", "margins", "frobenius_cost", "paper_construction", "small_model_heads", "four_head_counterexample", "noise_energy", "noise_energy_ratio", "mc_eval"]  # noqa: E501
__all__ += ["HeadFit", "query_design", "fit_heads", "four_head_min_norm"]
