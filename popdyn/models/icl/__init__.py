"""In-context learning with linear / low-rank attention (specs/modular_and_icl.md, Parts B and C).

Two parts: the rank-r in-context linear regression (``regression``) and the sparse-parity part
(``parity``). Each part adds its public names here (one import line and its names in ``__all__``).
"""
from .parity import (ParityProblem, four_head_counterexample, frobenius_cost, margins, mc_eval, mc_population_hinge, noise_energy, noise_energy_ratio, paper_construction, pT_max, pattern_probs, population_hinge, small_model_heads, task_sets)  # noqa: E501
__all__ = []
__all__ += ["ParityProblem", "task_sets", "pattern_probs", "pT_max", "population_hinge", "mc_population_hinge", "margins", "frobenius_cost", "paper_construction", "small_model_heads", "four_head_counterexample", "noise_energy", "noise_energy_ratio", "mc_eval"]  # noqa: E501
