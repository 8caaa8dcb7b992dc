"""Multi-task ReLU representation learning (seed 000, Collins et al.): one head step, one shared first-layer step.

Spec: specs/multitask.md.
"""
from .moments import conditional_moments, halfnormal_cf, sign_moments
from .problem import Problem, symmetric_init
from .tasks import TaskSet, pattern_index, sign_patterns

__all__ = ["Problem", "symmetric_init", "TaskSet", "sign_patterns", "pattern_index",
           "sign_moments", "conditional_moments", "halfnormal_cf"]
