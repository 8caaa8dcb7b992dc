"""``predict``, ``simulate``, ``compare``: one call shape for every model.

``predict`` and ``simulate`` dispatch on the type of the problem (``functools.singledispatch``).
A model module registers ``predict``; its twin ``popdyn.sim.<model>`` registers ``simulate`` and is
imported lazily here, so torch is loaded only when a simulation is asked for.
"""
from __future__ import annotations

import functools
import importlib

import numpy as np

from .results import Comparison, Prediction, Simulation

__all__ = ["predict", "simulate", "compare"]


@functools.singledispatch
def predict(problem, **options):
    """Theory for ``problem``: returns a :class:`~popdyn.results.Prediction`."""
    raise TypeError(f"popdyn.predict has no theory for {type(problem).__name__!r}; "
                    "pass a Problem from popdyn.models.")


@functools.singledispatch
def _simulate(problem, **options):
    raise TypeError(f"popdyn.simulate has no simulation for {type(problem).__name__!r}.")


def _sim_module_name(problem_type):
    parts = problem_type.__module__.split(".")
    if parts[:2] != ["popdyn", "models"] or len(parts) < 3:
        return None
    return f"popdyn.sim.{parts[2]}"


def simulate(problem, **options):
    """Finite-sample training for ``problem``: returns a :class:`~popdyn.results.Simulation`.

    Imports ``popdyn.sim.<model>`` (and so torch) on first use.
    """
    name = _sim_module_name(type(problem))
    if name is not None:
        try:
            importlib.import_module(name)
        except ImportError as e:
            if e.name == "torch":
                raise ImportError("popdyn.simulate needs torch: pip install 'popdyn[sim]'") from e
            raise
    return _simulate(problem, **options)


simulate.register = _simulate.register


def _check_comparable(prediction, simulation):
    """Refuse what cannot be compared: a failed result, a time axis on one side only, simulation times
    outside the prediction's range, or coordinates that differ."""
    for name, res in (("prediction", prediction), ("simulation", simulation)):
        if res.status < 0:
            raise ValueError(f"compare: the {name} failed (status {res.status}: {res.message!r}); "
                             "rerun it with the knob its message names before comparing.")
    if (prediction.t is None) != (simulation.t is None):
        has, lacks = ("prediction", "simulation") if simulation.t is None else ("simulation", "prediction")
        raise ValueError(f"compare: the {has} has a time axis 't' and the {lacks} has none; "
                         "compare a static result only with a static result.")
    if prediction.t is not None:
        lo, hi = float(np.min(prediction.t)), float(np.max(prediction.t))
        t = np.asarray(simulation.t, dtype=float)
        if t.size and (t.min() < lo or t.max() > hi):
            raise ValueError(f"compare: simulation times [{t.min():.6g}, {t.max():.6g}] fall outside the "
                             f"prediction's range [{lo:.6g}, {hi:.6g}]; predict over the simulated horizon "
                             "(a truncated prediction is not extended).")
    for k in set(prediction.coords) & set(simulation.coords):
        a, b = prediction.coords[k], simulation.coords[k]
        if a.shape != b.shape or not np.array_equal(a, b):
            raise ValueError(f"compare: coordinate {k!r} differs: {a.tolist()} vs {b.tolist()}")


def compare(prediction: Prediction, simulation: Simulation, *, band_sd=2.0, observables=None):
    """Hold a prediction against a simulation on the simulation's time grid.

    Theory is linearly interpolated onto the simulation times; both must carry ``t``, or neither, and
    the simulation times must lie inside the prediction's. Shared ``coords`` must be equal. A failed
    result (``status < 0``) is refused, never extrapolated. Metrics per shared observable:
    ``sup_gap``, ``mean_gap``, ``in_band`` (fraction of times with theory inside mean +- band_sd * SD
    over seeds) and ``max_z`` (gap in standard errors). Observables named ``*_se`` are standard errors
    of another observable, not quantities to compare, and are left out.

    Raises
    ------
    ValueError
        On any of the mismatches above, or when the two share no observable.
    """
    if not (band_sd > 0):
        raise ValueError(f"The 'band_sd' parameter of compare must be a float in (0, inf). Got {band_sd!r} instead.")
    _check_comparable(prediction, simulation)
    names = [k for k in prediction.observables if k in simulation.observables and not k.endswith("_se")]
    if observables is not None:
        names = [k for k in names if k in observables]
    if not names:
        raise ValueError("prediction and simulation share no observable: "
                         f"{sorted(prediction.observables)} vs {sorted(simulation.observables)}")
    t = simulation.t
    theory, mean, sd, metrics = {}, {}, {}, {}
    for k in names:
        s = np.asarray(simulation.observables[k], dtype=float)
        p = np.asarray(prediction.observables[k], dtype=float)
        if t is not None and p.ndim == 1:
            p = np.interp(t, prediction.t, p)
        if p.shape != s.shape[1:]:
            raise ValueError(f"compare: observable {k!r} has shape {p.shape} in the prediction and "
                             f"{s.shape[1:]} per seed in the simulation")
        mu, sig = s.mean(axis=0), s.std(axis=0, ddof=1) if s.shape[0] > 1 else np.zeros(s.shape[1:])
        gap = np.abs(p - mu)
        se = sig / np.sqrt(s.shape[0])
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(se > 0, gap / np.where(se > 0, se, 1.0), np.where(gap > 0, np.inf, 0.0))
        theory[k], mean[k], sd[k] = p, mu, sig
        metrics[k] = {"sup_gap": float(gap.max()), "mean_gap": float(gap.mean()),
                      "in_band": float(np.mean(gap <= band_sd * sig + 1e-300)), "max_z": float(z.max())}
    return Comparison(prediction, simulation, t, theory, mean, sd, metrics, band_sd)
