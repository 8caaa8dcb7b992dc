"""popdyn.predict for the committee problem: the overlap ODE from the initial overlaps of a finite-d draw."""
from __future__ import annotations

import numpy as np

from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, check
from ...api import register
from ...results import Prediction
from .ode import ode
from .problem import Problem

__all__ = ["initial_overlaps", "check_dimension"]


def initial_overlaps(problem, d, init_scale=1.0, seed=0):
    r"""Overlaps :math:`(Q_0, R_0)` of one random student :math:`J = \mathrm{init\_scale}\,G/\sqrt d` at dimension d.

    .. math:: R_0 = \frac{s}{\sqrt d}ZL^T,\quad Q_0 = \frac{s^2}{d}(ZZ^T + HH^T),\quad
              LL^T = T\ (\text{teacher\_overlap}),\ Z \in \mathbb R^{K\times M},\ H\in\mathbb R^{K\times(d-M)} \text{ standard Gaussian}

    Parameters
    ----------
    problem : Problem
    d : int
        Input dimension, >= M + 1.
    init_scale : float
        Student scale, > 0.
    seed : int
        numpy seed, >= 0.

    Returns
    -------
    Q0 : ndarray of shape (K, K)
    R0 : ndarray of shape (K, M)

    Notes
    -----
    Regime: exact in law for the simulation's initialisation (the teacher in the first M coordinates);
    not the same draw as a torch seed: to compare one run, start the ODE from its recorded overlaps.

    References
    ----------
    .. [src] derived (rotation invariance of G).

    Examples
    --------
    >>> Q0, R0 = initial_overlaps(Problem.saad_solla(K=2, M=2), d=10_000, seed=0)
    >>> bool(np.allclose(Q0, np.eye(2), atol=0.05)), bool(np.abs(R0).max() < 0.05)
    (True, True)
    """
    owner = "committee.initial_overlaps"
    K, M = problem.K, problem.M
    d = check(owner, "d", d, Integer(M + 1))
    init_scale = check(owner, "init_scale", init_scale, Interval(0, np.inf, closed="neither"))
    rng = np.random.default_rng(check(owner, "seed", seed, Integer(0)))
    lam, U = np.linalg.eigh(problem.teacher_overlap)
    L = U * np.sqrt(np.maximum(lam, 0.0))
    Z, H = rng.standard_normal((K, M)), rng.standard_normal((K, d - M))
    return init_scale ** 2 / d * (Z @ Z.T + H @ H.T), init_scale / np.sqrt(d) * Z @ L.T


def check_dimension(owner, problem, d):
    """``d`` checked against the problem: at least M + 1 (the teacher and a free direction)."""
    if d < problem.M + 1:
        raise InvalidParameterError(f"The 'd' parameter of {owner} must be an int >= M + 1 = {problem.M + 1}. "
                                    f"Got {d!r} instead.")
    return d


def _predict(problem, *, d, steps, lr, lr_v, weight_decay, init_scale, v0, n_points, seed, Q0, R0, rtol, atol,
             error_estimate, eta2_rule):
    r"""The overlap ODE of online SGD on the committee at dimension d, recorded at step numbers.

    .. math:: \frac{d}{dt}(Q, R, v) = \mathrm{drift}(Q, R, v),\quad t = \text{steps}/d,\quad
              \epsilon_g = \tfrac12u^TI_2(\Omega)u

    The options (``Problem.options``): ``d`` sets the time unit and the default initial overlaps
    (:func:`initial_overlaps` at ``init_scale``, ``seed``) unless ``Q0`` and ``R0`` are given; ``lr``, ``lr_v``,
    ``weight_decay`` are the paper's eta, eta_v, wd (the decay on both layers); ``v0`` is the initial second layer
    (None: ones); ``rtol``, ``atol`` None for the defaults of :func:`~popdyn.models.committee.ode` (its docstring
    says what each tolerance buys: eg to 1e-8 in a plateau needs rtol 1e-12); ``error_estimate`` records the
    accuracy reached in ``meta["accuracy"]``; ``eta2_rule`` chooses the eta^2 term's rule for an activation without
    closed forms (:func:`~popdyn.models.committee.ode`).

    Returns
    -------
    Prediction
        ``t`` in steps; ``"eg"``, ``"Q"``, ``"R"`` and (second layer trained) ``"v"``.

    Notes
    -----
    Regime: d -> infinity at fixed steps/d; see :func:`~popdyn.models.committee.ode`.

    References
    ----------
    .. [src] Saad & Solla 1995 eqs. (5)-(7); Goldt et al. 2019 eqs. (7)-(9).

    Examples
    --------
    >>> import popdyn
    >>> pred = popdyn.predict(Problem.saad_solla(K=2, M=2), d=100, steps=1000, n_points=3)
    >>> pred.t.tolist(), sorted(pred.observables)
    ([0, 500, 1000], ['Q', 'R', 'eg'])
    """
    owner = "committee.predict"
    d = check_dimension(owner, problem, d)
    if Q0 is None or R0 is None:
        dQ, dR = initial_overlaps(problem, d, init_scale, seed)
        Q0 = dQ if Q0 is None else Q0
        R0 = dR if R0 is None else R0
    Q0 = check(owner, "Q0", Q0, FiniteArray(2, (problem.K, problem.K)))
    R0 = check(owner, "R0", R0, FiniteArray(2, (problem.K, problem.M)))
    if v0 is not None:
        v0 = check(owner, "v0", v0, FiniteArray(1, (problem.K,)))
    t = np.unique(np.rint(np.linspace(0, steps, n_points)).astype(np.int64))
    pred = ode(problem, Q0, R0, v0, t=t / d, rtol=rtol, atol=atol, lr=lr, lr_v=lr_v, weight_decay=weight_decay,
               error_estimate=error_estimate, eta2_rule=eta2_rule)
    meta = dict(pred.meta, t_unit="steps", rtol=pred.meta["rtol"], atol=pred.meta["atol"], Q0=Q0, R0=R0)
    out = Prediction(t=t[:pred.t.size], observables=pred.observables, status=pred.status, message=pred.message,
                     meta=meta)
    out._flow = pred._flow.rescaled(d)          # escape_time locates crossings on the ODE, reported in steps
    return out


register(Problem, name="committee", predict=_predict, simulate="popdyn.sim.committee:simulate",
         summary="overlap ODE of online SGD on a soft committee machine: Q, R, v and the generalisation error")
