"""``popdyn.predict`` for multi-task ReLU pretraining: the exact one-step population map ([Collins24]).

``popdyn.predict(problem, lr=1.0, method="exact"|"leading", delta=1e-9)`` for
:class:`~popdyn.models.multitask.Problem` (registered here, catalogue name ``multitask``): the heads after one step, the post-head loss, the first layer after
the W step, the measured kappa and Thm 4.2's subspace ratio, with the linear-regime certificate.
"""
from __future__ import annotations

import warnings

from ..._validate import RegimeWarning
from ...api import register
from ...results import Prediction
from .onestep import (head_after_step, kappa_hat, kappa_par, margin_bound, one_step_map, post_head_loss,
                      subspace_ratio)
from .problem import Problem

__all__ = []

_SRC = "[Collins24, Section 3, Proposition 4.1, Lemmas A.3-A.6, Lemma A.10]"


def _predict(problem, *, lr, method, delta):
    r"""One-step theory of multi-task pretraining at the problem's W0 and task set.

    .. math:: a^+ = \eta F S^\top/2^r,\quad \mathcal L = 1 - \eta 4^{-r}\sum_j S_j^\top\bar\beta S_j,\quad
              w_j^+ = (1-\eta\lambda_w)w_j + \eta^2 4^{-r}\sum_{u,u'}\bar\beta(u,u')S_j(u')M_j(u)

    Parameters
    ----------
    problem : Problem
    lr : float
        Step size eta of both steps, > 0.
    method : {"exact", "leading"}
        The exact sign-pattern map, or the leading-order Walsh map (docs/multitask.md) for ``W_plus``.
    delta : float
        Exceptional fraction of inputs of the linear-regime certificate ``margin_bound`` (:func:`margin_bound`),
        in (0, 1): ``y f < margin_bound`` for every task at all other inputs.

    Returns
    -------
    Prediction
        ``t = None``; observables ``W_plus`` (width, d), ``heads`` (T, width), ``loss``, ``kappa`` (least-squares scale
        of the ground-truth parts, :func:`kappa_hat`), ``ratio`` (Thm 4.2, :func:`subspace_ratio`),
        ``kappa_par`` and ``kappa_paper`` (the corrected and the paper's leading constants), ``margin_bound``.

    Notes
    -----
    Regime: the linear regime of the hinge; a RegimeWarning is raised (and ``status = 1``) when
    ``margin_bound >= 1``, where the closed forms may miss the threshold term.

    References
    ----------
    .. [src] [Collins24, Section 3, Proposition 4.1, Lemmas A.3-A.6, Lemma A.10]; the exact map derived in
       docs/multitask.md.

    Examples
    --------
    >>> import popdyn
    >>> pred = popdyn.predict(Problem(d=40, r=1, width=8))
    >>> round(float(pred["kappa"] / pred["kappa_par"]), 12)       # r = 1: exact for every d
    1.0
    """
    ts, W0, r, eta = problem.task_set, problem.W0, problem.r, lr
    universe = isinstance(problem.tasks, str) and problem.tasks == "hadamard"   # beta_bar = I, handled analytically
    W_plus = one_step_map(W0, r, None if universe else ts, eta, problem.lam_w, method=method)
    heads = head_after_step(W0, ts, eta)
    bound = margin_bound(W0, heads, delta)
    status, message = 0, "exact one-step population map (linear regime certified)"
    if bound >= 1.0:
        status, message = 1, f"linear regime not certified: margin bound {bound:.3g} >= 1 ([Collins24, Lemma A.3])"
        warnings.warn(f"multitask.predict: {message}; the closed forms may miss the hinge threshold term. Use the "
                      f"paper's nu_w = d^-1.25 and width = O(d).", RegimeWarning)
    obs = {"W_plus": W_plus, "heads": heads, "loss": post_head_loss(W0, ts, eta),
           "kappa": kappa_hat(W0, W_plus, r), "ratio": subspace_ratio(W_plus, r),
           "kappa_par": kappa_par(r, eta), "kappa_paper": kappa_par(r, eta, corrected=False), "margin_bound": bound}
    return Prediction(t=None, observables=obs, status=status, message=message, meta={"source": _SRC})


register(Problem, name="multitask", predict=_predict, simulate="popdyn.sim.multitask:simulate",
         summary="one head step and one shared first-layer step of multi-task ReLU pretraining: W+, heads, loss, "
                 "kappa and Thm 4.2's ratio")
