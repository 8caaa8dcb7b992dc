"""``popdyn.predict`` for feature emergence: the exact population steps 1-2, the two-step features and their
optimal second layer, and the exact reduced population GD of stage 3 ([Shi22]; docs/emergence.md).

``_predict(problem, *, steps, lr, method)`` registered for :class:`~popdyn.models.emergence.Problem` with its
simulation :func:`popdyn.sim.emergence.simulate`.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..._validate import RegimeWarning
from ...api import register
from ...results import Prediction
from .classifier import hinge_and_error, lemma23_construction, optimal_second_layer, reduced_population_gd
from .network import feature_cosine
from .problem import Problem
from .steps import population_two_steps, two_step_features, two_step_limit

__all__ = []

_SRC = "[Shi22, Lemmas 18-20, Lemma 23, Theorem 26]"


def _predict(problem, *, steps, lr, method):
    r"""Population theory of the three-stage training at the problem's initialisation.

    .. math:: q_i^{(1)} = \eta^{(1)}a_i^{(0)}T(q_i^{(0)}, b_i^{(0)}),\quad q_i^{(2)} = a_i^{(1)}T(q_i^{(1)}, b_i^{(1)})
              \to a_i^{(0)}h(b_i^{(0)})\,\mathbb E[y\phi],\quad t > 2:\ \text{exact GD on the line } \mathbf 1_A

    Parameters
    ----------
    problem : Problem
    steps : int
        GD steps T ``>= 2`` (steps 1-2, then ``steps - 2`` stage-3 steps).
    lr : float or None
        Stage-3 step size; None gives Thm 26's ``k^2/(steps m^{1/3})``.
    method : {"fourier", "gauss"}
        Correlations of steps 1-2: exact (Fourier inversion) or the CLT approximation of the background.

    Returns
    -------
    Prediction
        ``t = 2..steps`` (stage 3); per step: ``loss`` (population hinge, truncated ReLU) and ``error``
        (``P[y g < 0] + P[g = 0]/2``) of the reduced population GD started at the ``eta^(1) -> 0`` two-step limit,
        and ``cos`` = ``max_i |cos(w_i, sum_A M_j)|`` (the exact finite-``eta^(1)`` step 2 at t = 2, then 1: the
        stage-3 neurons stay on the line 1_A). ``meta["steps_1_2"]``, the steps-1-2 diagnostics: ``cos_step1``,
        ``cos_step2`` (exact steps), ``loss_step1`` (``L(g^(1); sigma_xi^(2)) = 1 - a^(1).a^(2)``),
        ``hinge_certificate`` (bound on ``sup |g^(1)|``), ``T_norm_step1`` (median over neurons of ``||T^(1)||``,
        the step-1 signal: ~1e-7 relative without input structure, docs/emergence.md), ``b_shift_step2``
        (``max |b^(2) - b^(0)|``: O(eta^(1)) with balanced classes), ``lp_loss`` / ``lp_error`` (optimal second
        layer on the two-step features, LP), ``lp_loss_one_step`` (the same on the one-step features, constant in
        the limit), ``lemma23_loss`` and ``lemma23_coverage`` (Lemma 23's explicit second layer, the fraction of
        g* neurons it finds). The two-step feature table itself is
        ``two_step_features(problem.model, two_step_limit(...))``.

    Notes
    -----
    Regime: population level, hinge indicator 1 at step 2 (RegimeWarning and ``status = 1`` when the certificate
    is >= 1). Stage 3 starts from the ``eta^(1) -> 0`` limit (O(eta^(1)) from the exact two steps).

    References
    ----------
    .. [src] [Shi22, Lemmas 18-20, Lemma 23, Theorem 26]; the exact steps and reduced GD derived in
       docs/emergence.md.

    Examples
    --------
    >>> import popdyn
    >>> pred = popdyn.predict(Problem(D=12, k=3, width=4), steps=20)
    >>> float(pred["cos"][0]) > 0.9999, pred.meta["steps_1_2"]["cos_step2"] > 0.9999
    (True, True)
    """
    model, p0, sched = problem.model, problem.params0, problem.schedule(steps, lr)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RegimeWarning)
        p1, p2, cert = population_two_steps(model, p0, sched, method=method)
    status, message = 0, "exact population steps 1-2 (hinge indicator certified) and reduced stage-3 GD"
    if cert >= 1.0:
        status, message = 1, f"step-2 hinge indicator not certified: sup|g^(1)| <= {cert:.3g} (Lemma 19)"
        for w in caught:
            warnings.warn(w.message, RegimeWarning)
    lim = two_step_limit(model, p0, sched[1].s, weighted=sched[1].weighted)
    pi_c, y_c = model.count_law()
    F2 = two_step_features(model, lim)
    a_lp, lp_loss = optimal_second_layer(F2, pi_c, y_c)
    F1 = np.broadcast_to(two_step_features(model, type(p0)(0.0 * p0.Q, p0.b, p0.a)), F2.shape)   # sigma(b^(0))
    a_tilde, sets = lemma23_construction(model, lim)
    mom, k = model.moments(), model.k
    alpha = lim.Q[:, :k].mean(1) * np.sqrt(k)
    train = ("alpha", "b", "a") if problem.stage3 == "all" else ("a",)
    tr = reduced_population_gd(model, alpha, lim.b, lim.a, sched[-1].eta if steps > 2 else 1.0,
                               sched[-1].lam_w if steps > 2 else 0.0, steps - 2, train=train)
    cos_step2 = float(np.abs(feature_cosine(model, p2.Q)).max())
    obs = {"loss": tr.loss, "error": tr.error, "cos": np.r_[cos_step2, np.ones(steps - 2)]}
    stages = {"cos_step1": float(np.abs(feature_cosine(model, p1.Q)).max()), "cos_step2": cos_step2,
              "loss_step1": float(1.0 - p1.a @ p2.a), "hinge_certificate": float(cert),
              "T_norm_step1": float(np.median(np.linalg.norm(p1.Q, axis=1) / np.abs(sched[0].eta * p0.a))),
              "b_shift_step2": float(np.abs(p2.b - p0.b).max()),
              "lp_loss": float(lp_loss), "lp_error": float(hinge_and_error(F2, pi_c, y_c, a_lp)[1]),
              "lp_loss_one_step": float(optimal_second_layer(F1, pi_c, y_c)[1]),
              "lemma23_loss": float(hinge_and_error(F2, pi_c, y_c, a_tilde)[0]),
              "lemma23_coverage": float(np.mean([len(s) > 0 for s in sets]))}
    meta = dict(source=_SRC, t_unit="steps", steps_1_2=stages,
                regime={"hinge_certificate": cert, "sigt": mom.sigt, "gamma": float(np.mean(mom.gamma))})
    return Prediction(t=np.arange(2, steps + 1), observables=obs, status=status, message=message, meta=meta)


register(Problem, name="emergence", predict=_predict, simulate="popdyn.sim.emergence:simulate",
         summary="exact population steps 1-2 and the reduced population GD of stage 3: test hinge loss, error "
                 "and feature cosine per step")
