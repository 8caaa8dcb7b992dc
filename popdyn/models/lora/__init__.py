"""Low-rank (LoRA) fine-tuning: Dayi & Chen, COLT 2025 ([Dayi25]; docs/lora.md).

The population spherical gradient is ``-h(m) (u - m u_hat)`` with ``m = <u, u_hat>`` (Prop. 4), so the
population dynamics is the scalar ODE ``dm/dt = h(m)(1 - m^2)``. This package holds the problem, the
closed forms of ``h`` and the loss, the normalisation drift B0, the dynamics of the overlap, the
bounds and the paper's limits and constructions, and the theory outside Assumption A2 (Figs 4-5).
Modules: ``problem`` (:class:`Problem`, :class:`GeneralProblem`), ``theory``, ``limits``,
``normalisation``, ``dynamics``, ``bounds``, ``general``, ``joint`` (the diffusion theory of joint
training), and ``predict`` (the theory of each problem,
registered with :func:`popdyn.api.register`).
"""
from .bounds import claim1_condition, condition3, signal_noise, theorem16_schedule, theorem_schedule
from .dynamics import limit_sign, overlap_ode, overlap_recursion, plateau_overlap, time_to_overlap
from .general import general_drift, general_gradient, general_loss, pair_moments
from .joint import diffusion_paths, increment_covariance
from .limits import (claim2_instance, example_f1, glm_h, lazy_floor, lazy_h, lazy_solution, refit_error,
                     separation_instance, thm36_bound)
from .normalisation import B0, B1, gradient_second_moment
from .problem import GeneralProblem, Problem, overlaps
from .theory import (T_table, h, h0, h_bound, h_series_coeffs, orthonormal_stats, population_gradient,
                     population_loss)
from . import predict  # noqa: F401, E402  (the theory of each problem class, registered with popdyn.api)

__all__ = ["Problem", "overlaps",
           "h", "h0", "h_bound", "h_series_coeffs", "T_table", "orthonormal_stats", "population_loss",
           "population_gradient",
           "glm_h", "lazy_h", "lazy_solution", "claim2_instance", "separation_instance", "example_f1",
           "refit_error", "thm36_bound", "lazy_floor",
           "B0", "B1", "gradient_second_moment", "overlap_ode", "overlap_recursion", "time_to_overlap",
           "plateau_overlap", "limit_sign",
           "condition3", "claim1_condition", "signal_noise", "theorem16_schedule", "theorem_schedule"]
__all__ += ["GeneralProblem", "pair_moments", "general_loss", "general_gradient", "general_drift",
            "increment_covariance", "diffusion_paths"]
