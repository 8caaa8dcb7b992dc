"""``popdyn.predict`` for the two in-context learning problems (seed 001 Ch. 5; specs/modular_and_icl.md B).

- :class:`~popdyn.models.icl.Problem` (rank-r regression): the population gradient flow of the LSA from a
  small initialisation, with its loss, excess loss, distance to U* and eval risk per step, and the static
  optima in ``meta``.
- :class:`~popdyn.models.icl.ParityProblem` (sparse parity): the paper's construction, its N -> inf
  losses and margins, the noise-energy ratio and the finite-M evaluation, with ``M`` as a coordinate.

The parity theory calls the functions of :mod:`popdyn.models.icl.parity` through the module, so a test
that replaces one of them there (``tests/test_claims_icl_parity.py``) reaches ``predict`` too.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..._validate import Integer, Interval, InvalidParameterError, RegimeWarning, as_int, check
from ...api import predict
from ...results import Prediction
from . import parity
from .parity import ParityProblem
from .regression import _SRC, Problem, optimal_loss, optimum, population_loss
from .regression_flow import flow_parameters, flow_plateaus, gradient_flow, initial_factors, saddle_losses
from .regression_risk import eval_risk_avg, optimum_eval_risk_avg

__all__ = []


def _observables(problem, A, B, u):
    """loss, excess_loss (over L*_r), rel_error of uU vs U*, w-averaged eval_risk, per recorded state."""
    p = problem
    opt = optimum(p.Lambda, p.N, p.r)
    Us = u[:, None, None] * A @ np.swapaxes(B, 1, 2)
    loss = np.array([population_loss(U, p.Lambda, p.N) for U in Us])
    rel = np.linalg.norm(Us - opt.U, axis=(1, 2)) / np.linalg.norm(opt.U)
    risk = np.array([eval_risk_avg(U, p.Lambda, p.M, p.sigma, rho=p.rho) for U in Us])
    return {"loss": loss, "excess_loss": loss - opt.value, "rel_error": rel, "eval_risk": risk}


@predict.register(Problem)
def _predict_regression(problem, *, lr, steps, init_scale=1e-2, init_seed=0, train_u=False, n_points=200, rtol=1e-10):
    r"""Population gradient flow of the rank-r LSA on the problem, and its static optima.

    .. math:: \theta(t) = \theta_{\rm flow}(\mathrm{lr}\cdot t),\qquad \theta = (A, B, u),\ U = AB^\top

    Parameters
    ----------
    problem : Problem
    lr : float
        Step size of the gradient descent the flow stands for, > 0 (flow time = lr * steps).
    steps : int
        Number of steps, >= 1.
    init_scale : float
        Standard deviation of the start (:func:`initial_factors`), > 0.
    init_seed : int
        Seed of the start (the simulation uses the same start for the same init_seed).
    train_u : bool
        Whether u is trained (else u = 1).
    n_points : int
        Number of recorded steps, >= 2.
    rtol : float
        Solver tolerance, in (0, 1); ``atol = 1e-2 rtol``.

    Returns
    -------
    Prediction
        ``t`` in steps; observables ``loss`` (Lemma 5.1), ``excess_loss`` (loss - L*_r), ``rel_error``
        (``||uU - U*||_F / ||U*||_F``) and ``eval_risk`` (w-averaged risk on M-shot prompts with the
        problem's sigma and rho). ``meta``: optimum values, eval risks of the rank-k optima for every k
        (the crossing of ranks), saddle values and detected plateaus.

    Notes
    -----
    Regime: extension (the paper has no dynamics). Exact for GD on the population loss as lr -> 0;
    finite-batch SGD adds noise, Adam changes the time axis (compare end points then).

    References
    ----------
    .. [src] derived; seed 001 L1376-1432 for the optima; specs/modular_and_icl.md §B.2.2, §C.

    Examples
    --------
    >>> import popdyn
    >>> p = Problem.geometric(4, N=20, r=2)
    >>> pred = popdyn.predict(p, lr=0.1, steps=5000, n_points=5)
    >>> sorted(pred.observables), bool(pred["rel_error"][-1] < 1e-3)
    (['eval_risk', 'excess_loss', 'loss', 'rel_error'], True)
    """
    owner = "icl.predict"
    lr = check(owner, "lr", lr, Interval(0, np.inf, closed="neither"))
    steps = check(owner, "steps", steps, Integer(1))
    n_points = check(owner, "n_points", n_points, Integer(2))
    rtol = check(owner, "rtol", rtol, Interval(0, 1, closed="neither"))
    init_scale = check(owner, "init_scale", init_scale, Interval(0, np.inf, closed="neither"))
    init_seed = check(owner, "init_seed", init_seed, Integer(0))
    p = problem
    A0, B0 = initial_factors(p.d, p.r, init_scale, init_seed)
    t = np.unique(np.rint(np.linspace(0, steps, n_points)).astype(np.int64))
    traj = gradient_flow(p.Lambda, p.N, A0, B0, lr * t, train_u=bool(train_u), rtol=rtol, atol=1e-2 * rtol)
    A, B, u = flow_parameters(traj.y, p.d, p.r)
    obs = _observables(p, A, B, u)
    opt = optimum(p.Lambda, p.N, p.r)
    saddles = saddle_losses(p.Lambda, p.N, p.r)
    meta = dict(problem=repr(p), t_unit="steps", flow_time_per_step=lr, source=_SRC, nfev=traj.nfev,
                options=dict(lr=lr, steps=steps, init_scale=init_scale, init_seed=init_seed,
                             train_u=bool(train_u), n_points=n_points, rtol=rtol),
                optimum_loss=opt.value, optimum_unique=opt.unique, full_rank_loss=optimal_loss(p.Lambda, p.N, p.d),
                optimum_eval_risk=optimum_eval_risk_avg(p.Lambda, p.N, p.r, p.M, p.sigma),
                eval_risk_by_rank=[optimum_eval_risk_avg(p.Lambda, p.N, k, p.M, p.sigma) for k in range(p.d + 1)],
                saddle_losses=saddles, plateaus=flow_plateaus(lr * t[:traj.t.size], obs["loss"], saddles))
    return Prediction(t=t[:traj.t.size], observables=obs, status=traj.status, message=traj.message, meta=meta)


def _parity_regime(problem):
    """Regime entries (condition, value, bound, source) of Thm 5.5.1, warned once when they fail."""
    bound = parity.pT_max(problem.d, problem.gamma)
    entries = [{"condition": "0 < pT < pT_max", "value": problem.pT, "bound": bound,
                "holds": bool(0 < problem.pT < bound), "source": "seed 001 L1478"}]
    for e in entries:
        if not e["holds"]:
            warnings.warn(f"icl.ParityProblem: {e['condition']} fails (pT = {e['value']:.3g}, pT_max = "
                          f"{e['bound']:.3g}); Thm 5.5.1's regime does not hold.", RegimeWarning, stacklevel=3)
    return entries


@predict.register(ParityProblem)
def _predict_parity(problem, *, M=(16, 64, 256, 1024), prompts=20_000, seed=0, flip=0.0):
    r"""Theory of the paper's parity construction: N -> inf losses, margins, noise ratio, finite-M evaluation.

    .. math:: \mathcal L(g_2^*)=0,\quad \min y_qg_2^*=1,\quad
              \frac{\mathbb E\lVert P_{D_1}\Xi\rVert^2}{\mathbb E\lVert P_{D_2}\Xi\rVert^2}=\frac{\nu_1+1}{\nu_2+1}

    Parameters
    ----------
    problem : ParityProblem
        With ``d = 2^nu2`` and ``k = 2^nu1``.
    M : sequence of int
        Evaluation prompt lengths (each >= 1).
    prompts : int
        Evaluation prompts per M for :func:`mc_eval`.
    seed : int
        Seed of the evaluation.
    flip : float
        Fraction of flipped context labels, in [0, 1].

    Returns
    -------
    Prediction
        ``t = None``; ``coords["M"]`` the prompt lengths; scalars ``loss_large``, ``loss_small_S1``, ``loss_small_S2``,
        ``min_margin_large``, ``frobenius_large``, ``energy_ratio``; per M ``acc_small``, ``acc_large``,
        ``hinge_small``, ``hinge_large``, ``gap_small``, ``gap_large`` (small = g_1^*, large = g_2^*).

    Notes
    -----
    Regime: N -> inf for the losses; finite M for the evaluation (Monte Carlo, exact in distribution).
    ``0 < pT < pT_max`` is recorded in ``meta["regime"]``.

    References
    ----------
    .. [src] seed 001 L1474-1546; specs/modular_and_icl.md B.4, B.6 S5.2.

    Examples
    --------
    >>> import popdyn
    >>> pred = popdyn.predict(ParityProblem.paper(1, 2), M=[64], prompts=100)
    >>> float(pred["loss_large"]), float(pred["min_margin_large"]), float(pred["energy_ratio"])
    (0.0, 1.0, 0.6666666666666666)
    """
    owner = "icl.predict"
    if problem.nu1 is None or problem.nu2 is None:
        raise InvalidParameterError(f"The 'problem' parameter of {owner} must have d and k powers of two "
                                    f"(Thm 5.5.1). Got {problem!r} instead.")
    Ms = [as_int(owner, "M", m, 1) for m in np.atleast_1d(M)]
    nu1, nu2, gamma = problem.nu1, problem.nu2, problem.gamma
    large, small = parity.paper_construction(nu2, gamma), parity.paper_construction(nu2, gamma, nu1=nu1)
    obs = {"loss_large": parity.population_hinge(problem, *large)}
    obs["loss_small_S1"], obs["loss_small_S2"] = parity.population_hinge(problem, *small, split=True)
    obs["min_margin_large"] = parity.margins(problem, *large)[1].min()
    obs["frobenius_large"] = parity.frobenius_cost(large[1])
    obs["energy_ratio"] = parity.noise_energy(small[1], 1) / parity.noise_energy(large[1], 1)
    for name, heads in (("small", small), ("large", large)):
        evals = [parity.mc_eval(problem, *heads, m, prompts=prompts, seed=seed + i, flip=flip) for i, m in enumerate(Ms)]
        for key in ("acc", "hinge", "gap"):
            obs[f"{key}_{name}"] = np.array([e[key] for e in evals])
            obs[f"{key}_{name}_se"] = np.array([e[key + "_se"] for e in evals])
    options = dict(M=Ms, prompts=prompts, seed=seed, flip=flip)
    meta = dict(problem=repr(problem), options=options, source=parity._SRC, regime=_parity_regime(problem))
    return Prediction(t=None, observables=obs, meta=meta, coords={"M": np.array(Ms)})
