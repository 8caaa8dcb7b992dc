"""Linear contrastive learning: universality vs label efficiency ([Shi24] ch. 7, App. F;
docs/contrastive.md).

In the multi-task linear model (n_tasks = T tasks sharing s invariant features, each with r - s private ones), contrastive
pre-training on the mixture learns column norms sqrt(alpha) on the shared and sqrt(alpha_t) on the private features
under the budget ||W|| <= 1, ||W||_F <= sqrt r; the universal representation spreads the budget (alpha = 1,
beta = 1/T) and so needs a larger probe norm, hence more labels, than the task-specific one (alpha = beta = 1).
Contrastive-regularised fine-tuning moves beta back up.

Public names
------------
problem
    :class:`MultiTaskLinearModel`, :class:`Problem` (``tradeoff``; its ``options`` and ``observables``),
    :data:`REPRESENTATIONS`
losses (``loss``)
    :data:`LOSSES`, :func:`chi2_expect`, :func:`contrastive_loss_reduced`, :func:`contrastive_loss_W`,
    :func:`pca_identity`; :func:`gen_chi2_loss` (``quadform``: E ell of a generalised chi-square, exact)
optima (``optimum``)
    :func:`optimal_representation`, :func:`optimal_representation_even`, :func:`representation_matrix`,
    :func:`project_spectral_frobenius`, :func:`cr_finetune_beta`
probing (``bounds``)
    :func:`probe_norm`, :func:`rademacher_exact`, :func:`rademacher_jensen`, :func:`risk_bound`,
    :func:`leading_term_ratio`, :func:`cr_bound_factor`, :func:`task_specific_floor`
finite points (``points``)
    :func:`point_contrastive_loss`, :func:`optimal_point_representation`, :func:`linear_probe_error`,
    :func:`xor_counterexample`
theory (``predict``)
    ``popdyn.predict(problem, n_labelled=None, loss="logistic")``: column norms, probe norms and Rademacher terms
    of the universal, CR-fine-tuned and specific representations (registered in ``predict.py``, imported here);
    ``popdyn.simulate`` trains them in torch (``popdyn.sim.contrastive``)
"""
from .bounds import (cr_bound_factor, leading_term_ratio, probe_norm, rademacher_exact, rademacher_jensen, risk_bound,
                     task_specific_floor)
from .loss import LOSSES, chi2_expect, contrastive_loss_reduced, contrastive_loss_W, pca_identity
from .optimum import (cr_finetune_beta, optimal_representation, optimal_representation_even,
                      project_spectral_frobenius, representation_matrix)
from .points import linear_probe_error, optimal_point_representation, point_contrastive_loss, xor_counterexample
from .problem import REPRESENTATIONS, MultiTaskLinearModel, Problem
from .quadform import gen_chi2_loss
from . import predict  # noqa: F401,E402  (the theory, registered with popdyn.api)

__all__ = ["MultiTaskLinearModel", "Problem", "REPRESENTATIONS", "LOSSES", "chi2_expect", "contrastive_loss_reduced",
           "contrastive_loss_W", "pca_identity", "gen_chi2_loss", "optimal_representation",
           "optimal_representation_even", "representation_matrix", "project_spectral_frobenius", "cr_finetune_beta",
           "probe_norm", "rademacher_exact", "rademacher_jensen", "risk_bound", "leading_term_ratio",
           "cr_bound_factor", "task_specific_floor", "point_contrastive_loss", "optimal_point_representation",
           "linear_probe_error", "xor_counterexample"]
