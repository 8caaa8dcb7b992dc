"""``popdyn.predict`` for the contrastive trade-off: pre-trained column norms, probe norms and Rademacher terms of the
universal, CR-fine-tuned and task-specific representations (seed 001 ch. 7; specs/looped_contrastive_dg.md B.2, B.4).

``predict(problem, *, m=None, loss="logistic")`` registered for :class:`~popdyn.models.contrastive.Problem`: static
observables over the coordinates ``representation`` = (universal, cr, specific) and ``m`` (labelled samples):
``alpha`` and ``beta`` (squared column norms on S and P_t), ``probe_norm``, ``rademacher`` (exact) and
``rademacher_jensen`` (the paper's leading term), each of shape (3,) or (3, len(m)); ``column_norms`` (d,) of the
universal W*, ``gram_offdiag`` (0: within-task columns orthogonal) and ``loss_universal``.
"""
from __future__ import annotations

import numpy as np

from ..._validate import FiniteArray, Options, as_int, check, regime_check
from ...api import predict
from ...results import Prediction
from .bounds import probe_norm, rademacher_exact, rademacher_jensen
from .loss import LOSSES, contrastive_loss_reduced
from .optimum import _chord_beta, optimal_representation, representation_matrix
from .problem import Problem

__all__ = []

REPRESENTATIONS = ("universal", "cr", "specific")
_SRC = ["seed 001 L2036-2054 (Props 7.3, 7.4)", "seed 001 L9591-9607 (Lemma F.3)", "seed 001 L9846-9880 (Prop. F.9)",
        "specs/looped_contrastive_dg.md B.2 (7-d)-(7-i), B.4"]


def default_m(problem):
    """The probe sizes of spec B.4: m in {r/3, r, 3r} (r/3 rounded up)."""
    return np.array([max(1, -(-problem.r // 3)), problem.r, 3 * problem.r])


def _m(problem, m):
    if m is None:
        return default_m(problem)
    arr = check("contrastive.predict", "m", m, FiniteArray(1))
    for v in arr:
        as_int("contrastive.predict", "m", int(v) if float(v).is_integer() else v, low=1)
    return arr.astype(np.int64)


@predict.register(Problem)
def _predict(problem, *, m=None, loss="logistic"):
    """Column norms, probe norms and Rademacher terms of the three representations at the probe sizes m."""
    owner = "contrastive.predict"
    ms = _m(problem, m)
    loss = check(owner, "loss", loss, Options(tuple(LOSSES)))
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
        ("even mixture (Props 7.3, F.9)", float(problem.is_even), 1.0, "seed 001 L2036, L9846", problem.is_even),
        ("r = 2s (Props F.8, F.9)", problem.r, 2 * s, "seed 001 L9826, L9846", problem.r == 2 * s)])
    obs = {"alpha": alpha, "beta": beta, "probe_norm": B, "rademacher": rad, "rademacher_jensen": jen,
           "column_norms": np.linalg.norm(representation_matrix(alpha_u, alphas_u, problem), axis=0),
           "gram_offdiag": np.array(0.0),
           "loss_universal": np.array(contrastive_loss_reduced(alpha_u, alphas_u, problem, loss))}
    meta = {"problem": repr(problem), "options": {"m": ms, "loss": loss}, "source": _SRC, "regime": regime,
            "alphas_universal": alphas_u}
    return Prediction(t=None, observables=obs, meta=meta,
                      coords={"representation": np.array(REPRESENTATIONS), "m": ms})
