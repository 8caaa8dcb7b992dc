"""The theory of the two in-context learning problems ([Shi24] Ch. 5; docs/icl.md), registered
with :func:`popdyn.api.register`.

- :class:`~popdyn.models.icl.Problem` (``icl``, rank-r regression): population gradient descent (or its
  gradient flow) of the LSA from a small initialisation, with its loss, excess loss, distance to U* and eval
  risk per step, and the static optima in ``meta``.
- :class:`~popdyn.models.icl.ParityProblem` (``icl.parity``, sparse parity): the paper's construction, its
  N -> inf losses and margins, the noise-energy ratio and the finite-length evaluation, over the coordinate
  ``test_context``.

The parity theory calls the functions of :mod:`popdyn.models.icl.parity` through the module, so a test
that replaces one of them there (``tests/test_claims_icl_parity.py``) reaches ``predict`` too.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..._validate import InvalidParameterError, RegimeWarning
from ...api import register
from ...results import Prediction
from . import parity
from .problem import ParityProblem, Problem
from .regression import _SRC, optimal_loss, optimum, population_loss
from .regression_flow import (flow_parameters, flow_plateaus, gradient_descent, gradient_flow, initial_factors,
                              saddle_losses)
from .regression_risk import eval_risk_avg, optimum_eval_risk_avg

__all__ = []


def _observables(problem, A, B, u):
    """loss, excess_loss (over L*_r), rel_error of uU vs U*, w-averaged eval_risk, per recorded state."""
    p = problem
    opt = optimum(p.Lambda, p.context, p.r)
    Us = u[:, None, None] * A @ np.swapaxes(B, 1, 2)
    loss = np.array([population_loss(U, p.Lambda, p.context) for U in Us])
    rel = np.linalg.norm(Us - opt.U, axis=(1, 2)) / np.linalg.norm(opt.U)
    risk = np.array([eval_risk_avg(U, p.Lambda, p.test_context, p.sigma, rho=p.rho) for U in Us])
    return {"loss": loss, "excess_loss": loss - opt.value, "rel_error": rel, "eval_risk": risk}


def _predict_regression(problem, *, lr, steps, init_scale, init_seed, train_u, n_points, method, rtol):
    r"""Population gradient descent (or flow) of the rank-r LSA on the problem, and its static optima.

    .. math:: \theta_{k+1} = \theta_k - \mathrm{lr}\,\nabla\mathcal L(\theta_k)\ (\text{'gd'}),\qquad
              \theta(k) = \theta_{\rm flow}(\mathrm{lr}\cdot k)\ (\text{'flow'}),\qquad \theta = (A, B, u),\ U = AB^\top

    Parameters
    ----------
    problem : Problem
    lr, steps, init_scale, init_seed, train_u, n_points, method, rtol
        The options of ``Problem.options``: step size and number of steps of the gradient descent that
        ``simulate`` runs by SGD, the shared start (:func:`initial_factors`), whether u is trained, the
        recorded steps, and the theory's method ('gd' iterates the population map, 'flow' solves its lr -> 0
        ODE with tolerance rtol).

    Returns
    -------
    Prediction
        ``t`` in steps; observables ``loss`` (Lemma 5.1), ``excess_loss`` (loss - L*_r), ``rel_error``
        (``||uU - U*||_F / ||U*||_F``) and ``eval_risk`` (w-averaged risk on test_context-shot prompts with
        the problem's sigma and rho). ``meta``: optimum values, eval risks of the rank-k optima for every k
        (the crossing of ranks), saddle values and detected plateaus.

    Notes
    -----
    Regime: extension (the paper has no dynamics). 'gd' is the exact mean path of SGD on fresh prompts; the
    minibatch noise adds O(lr / batch) to the loss, and near a saddle it can advance or delay the escape when
    the start is as small as that noise. 'flow' is the lr -> 0 limit (it shifts saddle escapes by O(lr)).

    References
    ----------
    .. [src] derived in docs/icl.md; [Shi24, Theorems 5.4.1-5.4.3] for the optima.

    Examples
    --------
    >>> import popdyn
    >>> p = Problem.geometric(4, context=20, r=2)
    >>> pred = popdyn.predict(p, lr=0.1, steps=5000, n_points=5)
    >>> sorted(pred.observables), bool(pred["rel_error"][-1] < 1e-3)
    (['eval_risk', 'excess_loss', 'loss', 'rel_error'], True)
    """
    p = problem
    A0, B0 = initial_factors(p.d, p.r, init_scale, init_seed)
    t = np.unique(np.rint(np.linspace(0, steps, n_points)).astype(np.int64))
    if method == "gd":
        A, B, u = gradient_descent(p.Lambda, p.context, A0, B0, lr, t, train_u=bool(train_u))
        finite = np.isfinite(A).all(axis=(1, 2)) & np.isfinite(B).all(axis=(1, 2)) & np.isfinite(u)
        n = int(np.argmin(finite)) if not finite.all() else t.size
        status, message, nfev = (0, "success", None) if n == t.size else (
            -1, f"population gradient descent diverged at step {t[n]}: lower lr", None)
        A, B, u = A[:n], B[:n], u[:n]
    else:
        traj = gradient_flow(p.Lambda, p.context, A0, B0, lr * t, train_u=bool(train_u), rtol=rtol,
                             atol=1e-2 * rtol)
        A, B, u = flow_parameters(traj.y, p.d, p.r)
        n, status, message, nfev = traj.t.size, traj.status, traj.message, traj.nfev
    obs = _observables(p, A, B, u)
    opt = optimum(p.Lambda, p.context, p.r)
    saddles = saddle_losses(p.Lambda, p.context, p.r)
    risk = lambda k: optimum_eval_risk_avg(p.Lambda, p.context, k, p.test_context, p.sigma)  # noqa: E731
    meta = dict(problem=repr(p), t_unit="steps", flow_time_per_step=lr, source=_SRC, nfev=nfev,
                optimum_loss=opt.value, optimum_unique=opt.unique,
                full_rank_loss=optimal_loss(p.Lambda, p.context, p.d), optimum_eval_risk=risk(p.r),
                eval_risk_by_rank=[risk(k) for k in range(p.d + 1)],
                saddle_losses=saddles, plateaus=flow_plateaus(lr * t[:n], obs["loss"], saddles))
    return Prediction(t=t[:n], observables=obs, status=status, message=message, meta=meta)


def _parity_regime(problem):
    """Regime entries (condition, value, bound, source) of Thm 5.5.1, warned once when they fail."""
    bound = parity.pT_max(problem.d, problem.gamma)
    entries = [{"condition": "0 < pT < pT_max", "value": problem.pT, "bound": bound,
                "holds": bool(0 < problem.pT < bound), "source": "[Shi24, Theorem 5.5.1]"}]
    for e in entries:
        if not e["holds"]:
            warnings.warn(f"icl.ParityProblem: {e['condition']} fails (pT = {e['value']:.3g}, pT_max = "
                          f"{e['bound']:.3g}); Thm 5.5.1's regime does not hold.", RegimeWarning, stacklevel=3)
    return entries


def _predict_parity(problem, *, test_context, prompts, seed, flip):
    r"""Theory of the paper's parity construction: N -> inf losses, margins, noise ratio, finite-M evaluation.

    .. math:: \mathcal L(g_2^*)=0,\quad \min y_qg_2^*=1,\quad
              \frac{\mathbb E\lVert P_{D_1}\Xi\rVert^2}{\mathbb E\lVert P_{D_2}\Xi\rVert^2}=\frac{\nu_1+1}{\nu_2+1}

    Parameters
    ----------
    problem : ParityProblem
        With ``d = 2^nu2`` and ``k = 2^nu1``.
    test_context : tuple of int
        Evaluation prompt lengths (M in the paper).
    prompts : int
        Evaluation prompts per length for :func:`mc_eval`.
    seed : int
        Seed of the evaluation.
    flip : float
        Fraction of flipped context labels, in [0, 1].

    Returns
    -------
    Prediction
        ``t = None``; ``coords["test_context"]`` the prompt lengths; scalars ``loss_large``, ``loss_small_S1``,
        ``loss_small_S2``, ``min_margin_large``, ``frobenius_large``, ``energy_ratio``; per length ``acc_small``, ``acc_large``,
        ``hinge_small``, ``hinge_large``, ``gap_small``, ``gap_large`` (small = g_1^*, large = g_2^*).

    Notes
    -----
    Regime: N -> inf for the losses; finite test_context for the evaluation (Monte Carlo, exact in distribution).
    ``0 < pT < pT_max`` is recorded in ``meta["regime"]``.

    References
    ----------
    .. [src] [Shi24, Theorems 5.5.1-5.5.2 (Sections 5.5.1-5.5.2)].

    Examples
    --------
    >>> import popdyn
    >>> pred = popdyn.predict(ParityProblem.paper(1, 2), test_context=[64], prompts=100)
    >>> float(pred["loss_large"]), float(pred["min_margin_large"]), float(pred["energy_ratio"])
    (0.0, 1.0, 0.6666666666666666)
    """
    owner = "icl.parity.predict"
    if problem.nu1 is None or problem.nu2 is None:
        raise InvalidParameterError(f"The 'problem' parameter of {owner} must have d and k powers of two "
                                    f"(Thm 5.5.1). Got {problem!r} instead.")
    Ms = list(test_context)
    nu1, nu2, gamma = problem.nu1, problem.nu2, problem.gamma
    large, small = parity.paper_construction(nu2, gamma), parity.paper_construction(nu2, gamma, nu1=nu1)
    obs = {"loss_large": parity.population_hinge(problem, *large)}
    obs["loss_small_S1"], obs["loss_small_S2"] = parity.population_hinge(problem, *small, split=True)
    obs["min_margin_large"] = parity.margins(problem, *large)[1].min()
    obs["frobenius_large"] = parity.frobenius_cost(large[1])
    obs["energy_ratio"] = parity.noise_energy(small[1], 1) / parity.noise_energy(large[1], 1)
    for name, heads in (("small", small), ("large", large)):
        evals = [parity.mc_eval(problem, *heads, m, prompts=prompts, seed=seed + i, flip=flip)
                 for i, m in enumerate(Ms)]
        for key in ("acc", "hinge", "gap"):
            obs[f"{key}_{name}"] = np.array([e[key] for e in evals])
            obs[f"{key}_{name}_se"] = np.array([e[key + "_se"] for e in evals])
    meta = dict(problem=repr(problem), source=parity._SRC, regime=_parity_regime(problem))
    return Prediction(t=None, observables=obs, meta=meta, coords={"test_context": np.array(Ms)})


register(Problem, name="icl", predict=_predict_regression, simulate="popdyn.sim.icl.regression:simulate",
         summary="population gradient descent of the rank-r linear attention through its saddles to the "
                 "Thm 5.4.1 optimum, with loss and eval risk per step")
register(ParityProblem, name="icl.parity", predict=_predict_parity, simulate="popdyn.sim.icl.parity:simulate",
         summary="the paper's sparse-parity heads: N -> inf hinge loss and margins, noise-energy ratio, "
                 "accuracy and hinge at finite prompt lengths")
