"""``popdyn.predict`` for the contrastive trade-off: pre-trained column norms, probe norms and Rademacher terms of the
universal, CR-fine-tuned and task-specific representations ([Shi24] ch. 7; docs/contrastive.md).

``popdyn.predict(problem, n_labelled=None, loss="logistic")`` for :class:`~popdyn.models.contrastive.Problem`
(registered here, catalogue name ``contrastive``): static observables over the coordinates ``representation`` =
(universal, cr, specific) and ``n_labelled`` (labelled samples m): ``alpha`` and ``beta`` (squared column norms on S
and P_t), ``probe_norm``, ``rademacher`` (exact) and ``rademacher_jensen`` (the paper's leading term), each of shape
(3,) or (3, len(n_labelled)); ``column_norms`` (d,) of the universal W*, ``gram_offdiag`` (0: within-task columns
orthogonal) and ``loss_universal``.
"""
from __future__ import annotations

import numpy as np

from ..._validate import regime_check
from ...api import register
from ...results import Prediction
from .bounds import probe_norm, rademacher_exact, rademacher_jensen
from .loss import contrastive_loss_reduced
from .optimum import _chord_beta, optimal_representation, representation_matrix
from .problem import REPRESENTATIONS, Problem

__all__ = []
_SRC = ["[Shi24, Propositions 7.3, 7.4]", "[Shi24, Lemma F.3]", "[Shi24, Proposition F.9]"]


def _predict(problem, *, n_labelled, loss):
    """Column norms, probe norms and Rademacher terms of the three representations at the probe sizes m."""
    owner = "contrastive.predict"
    ms = problem.labelled_sizes(n_labelled, owner)
    t, s, q = problem.t, problem.s, problem.r - problem.s
    alpha_u, alphas_u, _ = optimal_representation(problem, loss)
    # Prop. F.9 corrected (cr_finetune_beta), started from the universal optimum's private norm of task t: the other
    # tasks' private norms lie on the same budget sphere, so the chord argument holds with cos theta_0 = sqrt(alpha_t)
    beta_cr = _chord_beta(alphas_u[t], problem.gamma / np.sqrt(q)) if q else 1.0
    alpha = np.array([alpha_u, 1.0, 1.0])
    beta = np.array([alphas_u[t], beta_cr, 1.0])
    B = np.array([probe_norm(a, b, problem.v1, problem.v2) for a, b in zip(alpha, beta)])
    sS, sR = float(problem.sigma_S[t]), float(problem.sigma_R[t])
    rad = np.array([[rademacher_exact(a, b, s, problem.r, mm, Bi, sS, sR) for mm in ms]
                    for a, b, Bi in zip(alpha, beta, B)])
    jen = np.array([[rademacher_jensen(a, b, s, problem.r, mm, Bi, sS, sR) for mm in ms]
                    for a, b, Bi in zip(alpha, beta, B)])
    regime = regime_check(owner, [
        ("even mixture (Props 7.3, F.9)", float(problem.is_even), 1.0, "[Shi24, Propositions 7.3, F.9]",
         problem.is_even),
        ("r = 2s (Props F.8, F.9)", problem.r, 2 * s, "[Shi24, Propositions F.8, F.9]", problem.r == 2 * s)])
    obs = {"alpha": alpha, "beta": beta, "probe_norm": B, "rademacher": rad, "rademacher_jensen": jen,
           "column_norms": np.linalg.norm(representation_matrix(alpha_u, alphas_u, problem), axis=0),
           "gram_offdiag": np.array(0.0),
           "loss_universal": np.array(contrastive_loss_reduced(alpha_u, alphas_u, problem, loss))}
    meta = {"n_labelled": ms, "source": _SRC, "regime": regime, "alphas_universal": alphas_u}
    return Prediction(t=None, observables=obs, meta=meta,
                      coords={"representation": np.array(REPRESENTATIONS), "n_labelled": ms})


register(Problem, name="contrastive", predict=_predict, simulate="popdyn.sim.contrastive:simulate",
         summary="pre-trained column norms, probe norms and Rademacher terms of the universal, CR-fine-tuned and "
                 "task-specific linear contrastive representations")
