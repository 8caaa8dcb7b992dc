"""The theory of each LoRA problem, registered with :func:`popdyn.api.register`.

``lora`` (:class:`~popdyn.models.lora.Problem`): the overlap ODE of online SGD
(:func:`~popdyn.models.lora.overlap_ode`, corrected or paper convention) and the population loss along it
(:func:`~popdyn.models.lora.population_loss`), with the regime checks of the theorems.
``lora.general`` (:class:`~popdyn.models.lora.GeneralProblem`): the order parameters ``(m, q, c_hat)``
outside Assumption A2 (:func:`~popdyn.models.lora.general_drift`) and the loss along them, by their ODE or, with
``method="diffusion"``, by the diffusion that keeps the SGD step's fluctuations (:mod:`popdyn.models.lora.joint`). The options
are the problems' tables (``Problem.options``); ``popdyn.predict`` resolves them before these run.
"""
from __future__ import annotations

import warnings

import numpy as np

from ... import dynamics
from ..._validate import Integer, Interval, InvalidParameterError, RegimeWarning, check
from ...api import register
from ...results import Prediction
from .bounds import condition3
from .dynamics import limit_sign, overlap_ode
from .general import general_drift, general_loss, q_norm
from .joint import diffusion_paths
from .problem import GeneralProblem, Problem, _cached
from .theory import population_loss

__all__ = []

_SRC = ["[Dayi25, App. C.1] (overlap recursion)", "[Dayi25, App. E.1] (normalised SGD step)",
        "docs/lora.md (finite-delta ODE, derived here: an extension of the recursion of [Dayi25, App. C.1])"]


def _regime(problem, lr, d, m0, convention):
    """Regime entries (condition, value, bound, holds, source) of the overlap theory for these options."""
    s = limit_sign(problem)
    quantised, off, sep, cond3 = _cached(problem, "regime", lambda: _problem_regime(problem))
    entries = [
        ("delta = lr*d <= 1 (Thm 16 takes delta <= 1; corrected ODE validated to 0.5)", lr * d, 1.0,
         lr * d <= 1, "[Dayi25, Theorem 16]"),
        ("A3: c, c_hat in {+-1/sqrt(k)}^k", quantised, True, quantised, "[Dayi25, Assumption 3]"),
        ("A4/A5: max_ij |G_ij - delta_ij| <= 1 - log k/sqrt k", float(off), float(sep), off <= sep,
         "[Dayi25, Assumptions 4, 5]"),
        ("sign(m0) = sign(h(0)) (limit is sign(h(0)) u)", float(m0 * s), 0.0, m0 * s > 0,
         "[Dayi25, Theorem 11, App. A.2.1]"),
        ("Condition 3: s h(s m) >= |h(0)|/2 on m in [0, 1]", cond3, True, cond3, "[Dayi25, Condition 3]"),
    ]
    if convention == "paper":
        entries.append(("paper ODE: delta = lr*d <= 0.01 (it drops the O(delta) drift -2 delta^2 m B0)",
                        lr * d, 0.01, lr * d <= 0.01, "docs/lora.md (derived here)"))
    out = [dict(condition=c, value=v, bound=b, holds=bool(ok), source=src) for c, v, b, ok, src in entries]
    for e in out:
        if not e["holds"]:
            warnings.warn(f"lora.predict: regime condition not met: {e['condition']} "
                          f"(value {e['value']!r}, bound {e['bound']!r}; {e['source']})", RegimeWarning)
    return out


def _problem_regime(problem):
    """The problem's own regime values: A3, max |G - I| and its A4/A5 bound, Condition 3 (401 points)."""
    k = problem.k
    off = float(np.abs(problem.G - np.eye(k)).max()) if k > 1 else 0.0
    sep = float(1 - np.log(k) / np.sqrt(k)) if k > 1 else 1.0
    return problem.quantised, off, sep, bool(condition3(problem)[0])


def _predict(problem, *, d, lr, steps, m0, convention, n_points, n_mc, seed, method, n_grid, rtol):
    r"""Theory of online SGD on the LoRA problem: overlap m(t) and population loss Phi(m(t)).

    .. math:: \frac{dm}{dt} = \eta h(m)(1-m^2) - 2\eta^2 m\big[(d-k-2)B_0(m) + B_1(m)\big],\qquad
              \mathrm{loss}(t) = \Phi(m(t))

    Parameters
    ----------
    problem : Problem
    d : int
        Input dimension, >= k + 3 (the normalisation drift has ``d - k - 2 >= 1`` free directions; the
        simulation takes the same bound).
    lr : float
        Step size eta, > 0 (``delta = lr d``).
    steps : int
        Number of SGD steps, >= 1.
    m0 : float or None
        Initial overlap in [-1, 1]; None is ``sign(h(0)) 0.5/sqrt(d)`` (docs/lora.md; +1 if h(0) = 0).
    convention : {"corrected", "paper"}
        ODE of :func:`overlap_ode`.
    n_points : int
        Number of recorded step numbers on [0, steps] (>= 2; fewer when steps is small).
    n_mc : int
        Monte Carlo size of the cached B0/B1 table (>= 2). B0, B1 are tabulated by quadrature (G = I,
        13 points in arccos m, interpolated) or randomised quasi-Monte Carlo (general G), on 41 points;
        ``n_mc`` and ``seed`` apply to general G only.
    seed : int
        Seed of that table (>= 0; general G only).
    method : {"grid", "solve_ivp"}
        "grid": the drift on ``n_grid`` nodes clustered at +-1 (the half the flow visits), flowed
        exactly as a piecewise-linear field (:func:`popdyn.dynamics.scalar_flow`; ~1e-7 in m, a fraction
        of a millisecond once h on the nodes is cached). "solve_ivp": scipy's LSODA on the exact drift
        (one scalar h per call).
    n_grid : int
        Nodes of "grid" (>= 3); see :func:`overlap_ode`.
    rtol : float
        Relative tolerance of "solve_ivp", in (0, 1); ``atol = 1e-3 rtol``. LSODA switches to a
        stiff method when ``delta = lr d`` is large (the drift ``-2 lr^2 d m B0`` relaxes in ~1/(lr delta) steps).

    Returns
    -------
    Prediction
        ``t`` step numbers (int), observables ``"m"`` and ``"loss"`` (:func:`population_loss`, exact at
        every recorded m); ``meta`` holds the problem
        repr, options, ``t_unit = "steps"``, ``delta``, sources and ``regime`` entries.

    Notes
    -----
    Regime: population limit of normalised online SGD (Eq. 4) with ``lr = delta/d``; see
    :func:`overlap_ode`. Failing regime conditions are recorded in ``meta["regime"]`` and warned
    (``RegimeWarning``).

    References
    ----------
    .. [src] [Dayi25, App. C.1 (population recursion, Phi), App. E.1 (normalised step)]; the finite-delta ODE
       derived in docs/lora.md.

    Examples
    --------
    >>> import popdyn
    >>> p = Problem.orthonormal(k=4, xi=1.0, activation="linear", seed=3)
    >>> pred = popdyn.predict(p, d=100, lr=1e-4, steps=1000, convention="paper", n_points=11)
    >>> sorted(pred.observables), pred.t[:3].tolist()
    (['loss', 'm'], [0, 100, 200])
    """
    d = check("lora.predict", "d", d, Integer(problem.k + 3))
    if m0 is None:
        m0 = (limit_sign(problem) or 1) * 0.5 / np.sqrt(d)
    t = np.rint(np.linspace(0, steps, n_points)).astype(np.int64)  # non-decreasing: drop the repeats
    t = t[np.concatenate(([True], t[1:] != t[:-1]))]
    sol = overlap_ode(problem, m0, t.astype(np.float64), lr=lr, d=d, convention=convention, n_mc=n_mc,
                      seed=seed, rtol=rtol, atol=1e-3 * rtol, method="LSODA" if method == "solve_ivp" else "grid",
                      n_grid=n_grid)
    t = t[:sol.t.size]
    options = dict(d=d, lr=lr, steps=steps, m0=m0, convention=convention, n_points=n_points, n_mc=n_mc,
                   seed=seed, method=method, n_grid=n_grid, rtol=rtol)
    meta = dict(problem=_cached(problem, "repr", lambda: repr(problem)), options=options, t_unit="steps",
                delta=lr * d, nfev=sol.nfev,
                source=_SRC, regime=_regime(problem, lr, d, m0, convention))
    return Prediction(t=t, observables={"m": sol.y, "loss": population_loss(problem, sol.y)},
                      status=sol.status, message=sol.message, meta=meta)


def _layout(gp, joint):
    """Slices of the ODE state [m, q (unprojected only), c_hat (joint only)]."""
    k = gp.k
    nq = 0 if gp.project else k
    return slice(1, 1 + nq), slice(1 + nq, 1 + nq + (k if joint else 0))


def _predict_general(gp, *, d, lr, steps, m0, q0, joint, lr_c, convention, n_points, n_mc, seed, rtol, method="ode",
                     paths=16, dtau=0.1):
    r"""Theory of online SGD outside A2: the order parameters (m, q, c_hat) and the population loss.

    .. math:: \frac{d(m, q, \hat c)}{dt} = \text{general\_drift}(m, q, \hat c),\qquad
              \mathrm{loss}(t) = \Phi(m(t), q(t), \hat c(t))

    Parameters
    ----------
    gp : GeneralProblem
    d : int
        Input dimension, >= k + 3.
    lr : float
        Step eta > 0 (``delta = lr d``).
    steps : int
        SGD steps, >= 1.
    m0 : float, optional
        Initial ``<u, u_hat>``; default ``s 0.5/sqrt(d)`` with s the sign of dm/dt at (m, q) = 0.
        With ``project`` ``|m0| <= sqrt(1 - alpha^2)``.
    q0 : ndarray of shape (k,), optional
        Initial ``W u_hat`` (unprojected only); default 0.
    joint : bool
        Train c_hat too (plain SGD, step ``lr_c``, default ``lr``), as ``simulate(joint=True)``.
    lr_c : float, optional
        Step of c_hat when ``joint``.
    convention : {"corrected", "paper"}
        With or without the normalisation drift (see :func:`general_drift`).
    n_points : int
        Recorded step numbers on [0, steps] (>= 2).
    n_mc, seed
        Draws of the normalisation term (:func:`gradient_second_moment_general`).
    rtol : float
        Relative tolerance of the ODE solver (RK45), in (0, 1); ``atol = 1e-3 rtol``.
    method : {"ode", "diffusion"}
        "ode": the population ODE (d -> infinity). "diffusion": the same drift plus the covariance of one SGD
        step's increments (:func:`~popdyn.models.lora.diffusion_paths`, Euler-Maruyama); the observables are
        the means over ``paths`` paths (``seed`` seeds their noise), their SDs in ``meta["sd"]``.
    paths : int
        Paths of "diffusion", >= 1.
    dtau : float
        Largest Euler-Maruyama step of "diffusion" in ``tau = t/d``, > 0.

    Returns
    -------
    Prediction
        ``t`` (steps) and observables ``m``, ``loss``, ``q_norm`` (``||Pi_W u_hat||``), and with ``joint``
        ``c_overlap`` (``<c_hat, c>/||c_hat||``); ``meta["alpha"]``, ``meta["m_max"]`` (the reachable
        ``sqrt(1 - alpha^2)`` when projected, else 1).

    Notes
    -----
    Regime: online SGD with ``lr = delta/d``, d large, delta small (as the A2 theory, docs/lora.md). The
    projected, frozen-c_hat case is a scalar ODE; otherwise the state has k + 1 (+ k) dimensions. The ODE
    drops fluctuations of order ``delta^2 tr(Sigma)/d`` per unit tau; with joint training at ``xi = sqrt(k)``
    and polynomial activations they are O(1) at ``d = 500``, ``delta = 0.1``, and "diffusion" keeps them.

    References
    ----------
    .. [src] [Dayi25, App. B (Figs 4-5), App. C.1, App. E.1]; the general-position theory derived in docs/lora.md.

    Examples
    --------
    >>> from popdyn.models import lora
    >>> gp = lora.GeneralProblem.from_alpha(lora.Problem.orthonormal(4, 1.0, seed=0), 0.5, seed=1)
    >>> import popdyn
    >>> pred = popdyn.predict(gp, d=200, lr=0.1 / 200, steps=2000, n_points=3, convention="paper")
    >>> bool(abs(pred["m"][-1]) <= np.sqrt(1 - 0.25) + 1e-9)
    True
    """
    owner = "lora.general.predict"
    k = gp.k
    d = check(owner, "d", d, Integer(k + 3))
    joint = bool(joint)
    if lr_c is not None and not joint:
        raise InvalidParameterError(f"The 'lr_c' parameter of {owner} needs joint=True. Got {lr_c!r} instead.")
    lr_c = (lr if lr_c is None else lr_c) if joint else None
    m_max = float(np.sqrt(1 - gp.alpha**2)) if gp.project else 1.0
    if q0 is not None and gp.project:
        raise InvalidParameterError(f"The 'q0' parameter of {owner} must be None when project=True. Got {q0!r}.")
    if q0 is not None and np.shape(q0) != (k,):
        raise InvalidParameterError(f"The 'q0' parameter of {owner} must have shape ({k},). "
                                    f"Got shape {np.shape(q0)} instead.")
    q0 = np.zeros(k) if q0 is None else np.asarray(q0, dtype=np.float64)
    if m0 is None:
        s = np.sign(general_drift(gp, 0.0, None if gp.project else np.zeros(k), lr=1.0, convention="paper")[0]) or 1.0
        m0 = s * 0.5 / np.sqrt(d)
    m0 = check(owner, "m0", m0, Interval(-m_max, m_max))
    sq, sc = _layout(gp, joint)
    y0 = np.r_[m0, q0[:sq.stop - sq.start], gp.problem.c_hat[:sc.stop - sc.start]]

    def unpack(y):
        return (min(max(y[0], -m_max), m_max), None if gp.project else y[sq],
                y[sc] if joint else gp.problem.c_hat)

    def rhs(t, y):
        m, q, c = unpack(y)
        dm, dq, dc = general_drift(gp, m, q, c, lr=lr, d=d, lr_c=lr_c, convention=convention, n_mc=n_mc,
                                   seed=seed)
        return np.r_[dm, dq[:sq.stop - sq.start], dc[:sc.stop - sc.start]]

    t = np.unique(np.rint(np.linspace(0, steps, n_points)).astype(np.int64))

    def observe(states):
        obs = {"m": np.array([s[0] for s in states]),
               "loss": np.array([max(general_loss(gp, *s), 0.0) for s in states]),
               "q_norm": np.array([0.0 if s[1] is None else float(q_norm(gp, s[1])) for s in states])}
        if joint:
            obs["c_overlap"] = np.array([s[2] @ gp.problem.c / np.linalg.norm(s[2]) for s in states])
        return obs

    if method == "diffusion":
        if convention != "corrected":
            raise InvalidParameterError(f"The 'convention' parameter of {owner} must be 'corrected' with "
                                        f"method='diffusion'. Got {convention!r} instead.")
        X = diffusion_paths(gp, d=d, lr=lr, t=t, m0=m0, q0=None if gp.project else q0, lr_c=lr_c, paths=paths,
                            dtau=dtau, n_mc=n_mc, seed=seed)
        per_path = [observe([unpack(y) for y in X[:, p]]) for p in range(paths)]
        obs = {n: np.mean([o[n] for o in per_path], axis=0) for n in per_path[0]}
        sd = {n: np.std([o[n] for o in per_path], axis=0, ddof=1) if paths > 1 else np.zeros(t.size)
              for n in per_path[0]}
        status, message, nfev = 0, "", None
    elif method == "ode":
        sol = dynamics.solve_ode(rhs, y0, t.astype(np.float64), rtol=rtol, atol=1e-3 * rtol, method="RK45")
        t = t[:sol.t.size]
        obs, sd = observe([unpack(y) for y in sol.y]), None
        status, message, nfev = sol.status, sol.message, sol.nfev
    else:
        raise InvalidParameterError(f"The 'method' parameter of {owner} must be one of ('ode', 'diffusion'). "
                                    f"Got {method!r} instead.")
    options = dict(d=d, lr=lr, steps=steps, m0=float(m0), q0=q0.tolist(), joint=bool(joint), lr_c=lr_c,
                   convention=convention, n_points=n_points, n_mc=n_mc, seed=seed, rtol=rtol, method=method,
                   paths=paths, dtau=dtau)
    regime = [dict(condition="delta = lr*d <= 1 (first order in delta, as the A2 corrected ODE)", value=lr * d,
                   bound=1.0, holds=bool(lr * d <= 1), source="docs/lora.md (derived here)")]
    if joint and method == "ode":
        regime.append(dict(condition="joint c_hat with method='ode': the O(delta^2/d) fluctuations are small (not "
                                     "checked; method='diffusion' keeps them)",
                           value=lr_c, bound=None, holds=None, source="docs/lora.md, joint training"))
    for e in regime:
        if e["holds"] is False:
            warnings.warn(f"{owner}: regime condition not met: {e['condition']} (value {e['value']!r})",
                          RegimeWarning)
    meta = dict(problem=repr(gp), options=options, t_unit="steps", delta=lr * d, alpha=gp.alpha, m_max=m_max,
                nfev=nfev, regime=regime, sd=sd,
                source=["[Dayi25, App. B (Figs. 4-5)]", "docs/lora.md (derived here)"])
    return Prediction(t=t, observables=obs, status=status, message=message, meta=meta)


register(Problem, name="lora", predict=_predict, simulate="popdyn.sim.lora:simulate",
         summary="overlap ODE of online SGD on the LoRA student and the population loss along it")
register(GeneralProblem, name="lora.general", predict=_predict_general, simulate="popdyn.sim.lora.general:simulate",
         summary="order parameters (m, q, c_hat) of online SGD with u not orthogonal to span W, and the loss")
