"""popdyn.predict for the LoRA problem: the overlap ODE of online SGD and the loss along it.

Registers ``predict(problem, *, d, lr, steps, ...)`` for :class:`~popdyn.models.lora.Problem` on
:func:`popdyn.predict`; the theory is :func:`~popdyn.models.lora.overlap_ode` (corrected or paper
convention) and :func:`~popdyn.models.lora.population_loss`, with the regime checks of the theorems.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..._validate import Integer, Interval, Options, RegimeWarning, check
from ...api import predict
from ...results import Prediction
from .bounds import condition3
from .dynamics import _N_GRID, _check_dynamics, limit_sign, overlap_ode
from .normalisation import _N_TABLE
from .problem import Problem, _cached
from .theory import population_loss

__all__ = []

_SRC = ["seed 003 L598-617 (overlap recursion, L604)", "seed 003 L1222-1230 (normalised SGD step)",
        "specs/lora.md §2.6 (finite-delta ODE, derived: an extension of L604), §3.6 (validation)"]


def _regime(problem, lr, d, m0, convention):
    """Regime entries (condition, value, bound, holds, source) of the overlap theory for these options."""
    s = limit_sign(problem)
    quantised, off, sep, cond3 = _cached(problem, "regime", lambda: _problem_regime(problem))
    entries = [
        ("delta = lr*d <= 1 (Thm 16 takes delta <= 1; corrected ODE validated to 0.5)", lr * d, 1.0,
         lr * d <= 1, "seed 003 L650; specs/lora.md §3.6"),
        ("A3: c, c_hat in {+-1/sqrt(k)}^k", quantised, True, quantised, "seed 003 L82"),
        ("A4/A5: max_ij |G_ij - delta_ij| <= 1 - log k/sqrt k", float(off), float(sep), off <= sep,
         "seed 003 L98, L110"),
        ("sign(m0) = sign(h(0)) (limit is sign(h(0)) u)", float(m0 * s), 0.0, m0 * s > 0, "seed 003 L459, L475"),
        ("Condition 3: s h(s m) >= |h(0)|/2 on m in [0, 1]", cond3, True, cond3, "seed 003 L640-644"),
    ]
    if convention == "paper":
        entries.append(("paper ODE: delta = lr*d <= 0.01 (it drops the O(delta) drift -2 delta^2 m B0)",
                        lr * d, 0.01, lr * d <= 0.01, "specs/lora.md §2.6"))
    out = [dict(condition=c, value=v, bound=b, holds=bool(ok), source=src) for c, v, b, ok, src in entries]
    for e in out:
        if not e["holds"]:
            warnings.warn(f"lora.predict: regime condition not met: {e['condition']} "
                          f"(value {e['value']!r}, bound {e['bound']!r}; {e['source']})", RegimeWarning, stacklevel=3)
    return out


def _problem_regime(problem):
    """The problem's own regime values: A3, max |G - I| and its A4/A5 bound, Condition 3 (401 points)."""
    k = problem.k
    off = float(np.abs(problem.G - np.eye(k)).max()) if k > 1 else 0.0
    sep = float(1 - np.log(k) / np.sqrt(k)) if k > 1 else 1.0
    return problem.quantised, off, sep, bool(condition3(problem)[0])


@predict.register(Problem)
def _predict(problem, *, d, lr, steps, m0=None, convention="corrected", n_points=200, n_mc=_N_TABLE,
             seed=0, method="grid", n_grid=_N_GRID, rtol=1e-8):
    r"""Theory of online SGD on the LoRA problem: overlap m(t) and population loss Phi(m(t)).

    .. math:: \frac{dm}{dt} = \eta h(m)(1-m^2) - 2\eta^2 m\big[(d-k-2)B_0(m) + B_1(m)\big],\qquad
              \mathrm{loss}(t) = \Phi(m(t))

    Parameters
    ----------
    problem : Problem
    d : int
        Input dimension, >= k + 3.
    lr : float
        Step size eta, > 0 (``delta = lr d``).
    steps : int
        Number of SGD steps, >= 1.
    m0 : float or None
        Initial overlap in [-1, 1]; default ``sign(h(0)) 0.5/sqrt(d)`` (spec §3.6; +1 if h(0) = 0).
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
    .. [src] seed 003 L604, L1228-1230, L623; specs/lora.md §2.6, §3.6.

    Examples
    --------
    >>> import popdyn
    >>> p = Problem.orthonormal(k=4, xi=1.0, activation="linear", seed=3)
    >>> pred = popdyn.predict(p, d=100, lr=1e-4, steps=1000, convention="paper", n_points=11)
    >>> sorted(pred.observables), pred.t[:3].tolist()
    (['loss', 'm'], [0, 100, 200])
    """
    owner = "lora.predict"
    lr, d, convention = _check_dynamics(owner, problem, lr, d, convention, n_mc, seed)
    steps = check(owner, "steps", steps, Integer(1))
    n_points = check(owner, "n_points", n_points, Integer(2))
    rtol = check(owner, "rtol", rtol, Interval(0, 1, closed="neither"))
    method = check(owner, "method", method, Options(("grid", "solve_ivp")))
    if m0 is None:
        m0 = (limit_sign(problem) or 1) * 0.5 / np.sqrt(d)
    m0 = check(owner, "m0", m0, Interval(-1, 1))
    t = np.rint(np.linspace(0, steps, n_points)).astype(np.int64)  # non-decreasing: drop the repeats
    t = t[np.concatenate(([True], t[1:] != t[:-1]))]
    sol = overlap_ode(problem, m0, t.astype(np.float64), lr=lr, d=d, convention=convention, n_mc=n_mc,
                      seed=seed, rtol=rtol, atol=1e-3 * rtol, method="LSODA" if method == "solve_ivp" else "grid",
                      n_grid=n_grid)
    t = t[:sol.t.size]
    options = dict(d=d, lr=lr, steps=steps, m0=m0, convention=convention, n_points=n_points, n_mc=n_mc,
                   seed=seed, method=method, n_grid=n_grid, rtol=rtol)
    meta = dict(problem=_cached(problem, "repr", lambda: repr(problem)), options=options, t_unit="steps", delta=lr * d, nfev=sol.nfev,
                source=_SRC, regime=_regime(problem, lr, d, m0, convention))
    return Prediction(t=t, observables={"m": sol.y, "loss": population_loss(problem, sol.y)},
                      status=sol.status, message=sol.message, meta=meta)
