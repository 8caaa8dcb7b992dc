"""Looped linear transformers as multi-step GD in context ([Shi24] ch. 8; docs/looped.md).

A linear transformer whose one attention layer is applied ``loops`` times (the paper's T) with tied weights (Q, P)
and per-loop residual weights eta^(t) computes, with the weights of Lemma 8.13, exactly ``loops`` steps of gradient
descent on the prompt's least squares problem (Thm 8.14), so the in-context error decays like (1 - 1/kappa)^T
(Thm 8.16 proves exp(-T/(2 kappa))). A prompt holds ``context`` examples (the paper's n).

Public names
------------
problem
    :class:`Problem` (``isotropic_gaussian``, ``fig8_1``, ``from_gamma``), :func:`sample_prompts`
the transformer and GD (``transformer``)
    :func:`build_prompt`, :func:`attention_weights_gd`, :func:`linear_attention`, :func:`looped_forward`,
    :func:`forward`, :func:`gd`, :func:`condition_number`, :func:`step_schedule`
exact curves, bounds, limits (``error``)
    :func:`exact_error`, :func:`exact_sq_dist`, :func:`mean_error_over_task`, :func:`bound_paper`,
    :func:`bound_tight`, :func:`loops_needed`, :func:`gatmiry_bound`, :func:`gatmiry_condition`,
    :func:`mp_error_curve`, :func:`mp_kappa`
finite-(n, d) curve (``finite``)
    :func:`wishart_trace_moments`, :func:`lambda_max_mean`, :func:`finite_error_curve`
theory (``theory``, ``predict``)
    :func:`optimal_schedule`; ``popdyn.predict(problem, loops=..., lr=..., method="exact"|"mp"|"finite",
    prompts=...)`` (registered in ``predict.py``), :func:`check_lr`
"""
from .error import (bound_paper, bound_tight, exact_error, exact_sq_dist, gatmiry_bound, gatmiry_condition,
                    loops_needed, mean_error_over_task, mp_error_curve, mp_kappa)
from .finite import finite_error_curve, lambda_max_mean, wishart_trace_moments
from .problem import Problem, sample_prompts
from .theory import optimal_schedule
from .transformer import (attention_weights_gd, build_prompt, condition_number, forward, gd, linear_attention,
                          looped_forward, step_schedule)
from .predict import check_lr

__all__ = ["Problem", "sample_prompts",
           "build_prompt", "attention_weights_gd", "linear_attention", "looped_forward", "forward", "gd",
           "condition_number", "step_schedule",
           "exact_error", "exact_sq_dist", "mean_error_over_task", "bound_paper", "bound_tight", "loops_needed",
           "gatmiry_bound", "gatmiry_condition", "mp_error_curve", "mp_kappa",
           "wishart_trace_moments", "lambda_max_mean", "finite_error_curve",
           "optimal_schedule", "check_lr"]
