"""``popdyn.predict`` for the spurious-feature model: the population optimum along a lambda path ([Shi24] ch. 6;
docs/domain_gen.md).

``popdyn.predict(problem, lam=..., penalty="l2"|"nuclear"|"l1"|"rank", B_rank=None)`` for
:class:`~popdyn.models.domain_gen.Problem` (registered here): static observables over the coordinate ``lam`` -
``alpha``, ``beta`` (the block weights of the optimum), ``acc_id``, ``acc_ood`` (exact), ``log10_acc_ood``,
``nuclear_norm`` (population, ID) and ``stable_rank`` (of Sigma^{1/2} D_w, the population analogue of Fig. 6.5's
feature stable rank); ``rho`` (the selection ratio: beta = 0 iff rho <= 1) for ``penalty="nuclear"`` and ``"l1"``.
"""
from __future__ import annotations

import numpy as np

from ..._validate import Integer, Interval, InvalidParameterError, check, regime_check
from ...api import register
from ...results import Prediction
from .accuracy import accuracy, prop63_assumptions
from .problem import Problem
from .risk import erm_l1, erm_l2, erm_nuclear, erm_rank, nuclear_norm_pop

__all__ = ["feature_stable_rank"]

_SRC = ["[Shi24, Section 6.4, eqs. (6.4)-(6.5), Lemmas 6.1-6.2, Proposition 6.3]", "[Shi24, Section 6.3.3, Fig. 6.5]"]


def feature_stable_rank(alpha, beta, model):
    r"""Stable rank of the population feature matrix Sigma^{1/2} D_w, w = (alpha 1_R, beta 1_U) (ID), in closed form.

    .. math:: \mathrm{srank} = \frac{\mathrm{tr}(D_w\Sigma D_w)}{\lambda_{\max}(D_w\Sigma D_w)}
              = \frac{(r\alpha^2+(d-r)\beta^2)/3}{\max\big(\lambda_+,\ \alpha^2/12,\ \beta^2(\tfrac13-\gamma^2)\big)},
              \quad \lambda_+ = \lambda_{\max}\begin{pmatrix}m_{11}&m_{12}\\m_{12}&m_{22}\end{pmatrix}

    with m_11, m_22, m_12 of :func:`nuclear_norm_pop` (the last two candidates only when r > 1, resp. d - r > 1).

    Parameters
    ----------
    alpha, beta : float
        Not both 0.
    model : Problem

    Returns
    -------
    float

    Notes
    -----
    Regime: any weights not both zero; the limit of the batch features' stable rank as the batch grows (derived:
    D_w Sigma D_w has r - 1 eigenvalues alpha^2/12, d - r - 1 eigenvalues beta^2 (1/3 - gamma^2) and the 2x2 block
    on the block means).

    Accuracy: relative error <= 16 eps for any weights not both 0 (measured 0.09 of it against the eigenvalues of
    D_w Sigma D_w in mpmath at 40 digits).

    References
    ----------
    .. [src] derived in docs/domain_gen.md; [Shi24, Fig. 6.5] (stable rank corrected).
    """
    owner = "domain_gen.feature_stable_rank"
    alpha, beta = check(owner, "alpha", alpha, Interval()), check(owner, "beta", beta, Interval())
    r, m, g = model.r, model.m, model.gamma
    if alpha == 0 and (beta == 0 or m == 0):
        raise InvalidParameterError(f"The 'alpha' parameter of {owner} must be non-zero when beta = 0 (or d = r). "
                                    f"Got {alpha!r} instead.")
    m11, m22 = alpha ** 2 * (1 / 12 + r / 4), beta ** 2 * (1 / 3 - g ** 2 + m * g ** 2) * (m > 0)
    m12 = 0.5 * np.sqrt(r * m) * alpha * beta * g
    top = max(np.linalg.eigvalsh(np.array([[m11, m12], [m12, m22]]))[-1], alpha ** 2 / 12 * (r > 1),
              beta ** 2 * (1 / 3 - g ** 2) * (m > 1))
    return float((r * alpha ** 2 + m * beta ** 2) / 3 / top)


def _weights(model, lam, penalty, B_rank):
    """(alpha, beta, rho, support model) of the optimum; ERM-rank puts alpha on B_rank invariant coordinates, so its
    features are those of the model (B_rank, B_rank + d - r) with beta = 0."""
    if penalty == "rank":
        return erm_rank(model, B_rank, lam)[0], 0.0, np.nan, Problem(B_rank, B_rank + model.m, model.gamma)
    a, b, rho = (*erm_l2(model, lam), np.nan) if penalty == "l2" else \
        (erm_l1 if penalty == "l1" else erm_nuclear)(model, lam)
    return a, b, rho, model


def _predict(model, *, lam, penalty, B_rank):
    """Population optimum of ERM-l2 / ERM-NU / ERM-l1 / ERM-rank (ridge on the support) at each lam, with its
    accuracies."""
    owner = "domain_gen.predict"
    if B_rank is not None or penalty == "rank":  # used by "rank" only, checked against r whenever given
        B_rank = check(owner, "B_rank", model.r if B_rank is None else B_rank, Integer(1, model.r))
    obs = {k: [] for k in ("alpha", "beta", "acc_id", "acc_ood", "log10_acc_ood", "nuclear_norm", "stable_rank",
                           "rho")}
    for x in lam:
        a, b, rho, mm = _weights(model, float(x), penalty, B_rank)
        lo = accuracy(a, b, mm, "ood", log10=True)
        for k, v in (("alpha", a), ("beta", b), ("acc_id", accuracy(a, b, mm, "id")), ("acc_ood", 10.0 ** lo),
                     ("log10_acc_ood", lo), ("nuclear_norm", nuclear_norm_pop(a, b, mm)),
                     ("stable_rank", feature_stable_rank(a, b, mm) if a or b else 1.0), ("rho", rho)):
            obs[k].append(v)
    if penalty not in ("nuclear", "l1"):
        del obs["rho"]
    a63 = prop63_assumptions(model.r, model.d, model.gamma, float(lam.min()))
    regime = regime_check(owner, [("gamma in (3/sqrt(r), 1/2)", model.gamma, 3 / np.sqrt(model.r),
                                   "[Shi24, Section 6.4]", a63["gamma"]),
                                  ("d > r/gamma^2 + r", model.d, model.r / max(model.gamma ** 2, 1e-300) + model.r,
                                   "[Shi24, Proposition 6.3]", a63["d"])])
    meta = {"source": _SRC, "regime": regime, "B_rank": B_rank}
    return Prediction(t=None, observables={k: np.asarray(v, dtype=float) for k, v in obs.items()}, meta=meta,
                      coords={"lam": lam})


register(Problem, name="domain_gen", predict=_predict, simulate="popdyn.sim.domain_gen:simulate",
         summary="population optimum of ERM-l2 / ERM-NU / ERM-l1 / ERM-rank along a lambda path: block weights, exact "
                 "ID and OOD accuracies, nuclear norm and stable rank")
