"""Nuclear-norm regularised domain generalisation on the spurious-feature model ([Shi24] ch. 6, App. E;
docs/domain_gen.md).

The diagonal model of section 6.4: label-multiplied features z with r invariant coordinates U[0, 1] and d - r
spurious coordinates D_gamma (ID) or D_{-gamma} (OOD), a fixed all-ones head and trainable feature weights w. Every
population quantity of a symmetric w = (alpha 1_R, beta 1_U) is a contour integral of the margin's moment
generating function, exact to rounding (no FFT floor), so OOD accuracies of 1e-93 keep full relative precision.

Public names
------------
model (``problem``)
    :class:`Problem` (``mean``, ``second_moment``, ``sample``; its run options and observables), also exported as
    ``SpuriousFeatureModel`` (the name of section 6.4)
risks and optima (``risk``)
    :func:`population_loss`, :func:`population_grad`, :func:`population_loss_w`, :func:`nuclear_norm_pop`,
    :func:`nuclear_norm_pop_w`, :func:`erm_l2`, :func:`erm_rank`, :func:`erm_nuclear`, :func:`nu_constants`,
    :func:`erm_l1`
accuracy (``accuracy``)
    :func:`accuracy` (exact, fft, chernoff, normal), :func:`sum_pmf`, :func:`toy2d_accuracy`, :func:`stable_rank`,
    :func:`prop63_assumptions`
the 2-D toy with a full A (``toy2d``)
    :func:`toy2d_sigma`, :func:`toy2d_full_loss`, :func:`toy2d_full_grad`, :func:`toy2d_full_optimum`,
    :func:`toy2d_nu_threshold`
theory along a lambda path (``predict``)
    :func:`feature_stable_rank`; ``popdyn.predict(problem, lam=..., penalty="l2"|"nuclear"|"rank", B_rank=None)``
    (``"l1"`` too; registered in ``predict.py``)
"""
from .accuracy import accuracy, prop63_assumptions, stable_rank, sum_pmf, toy2d_accuracy
from .predict import feature_stable_rank
from .problem import Problem, SpuriousFeatureModel
from .risk import (erm_l1, erm_l2, erm_nuclear, erm_rank, nu_constants, nuclear_norm_pop, nuclear_norm_pop_w,
                   population_grad, population_loss, population_loss_w)
from .toy2d import toy2d_full_grad, toy2d_full_loss, toy2d_full_optimum, toy2d_nu_threshold, toy2d_sigma

__all__ = ["Problem", "SpuriousFeatureModel",
           "population_loss", "population_grad", "population_loss_w", "nuclear_norm_pop", "nuclear_norm_pop_w",
           "erm_l2", "erm_rank", "erm_nuclear", "nu_constants", "erm_l1",
           "accuracy", "sum_pmf", "toy2d_accuracy", "stable_rank", "prop63_assumptions", "feature_stable_rank",
           "toy2d_sigma", "toy2d_full_loss", "toy2d_full_grad", "toy2d_full_optimum", "toy2d_nu_threshold"]
