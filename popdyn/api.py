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


def compare(prediction: Prediction, simulation: Simulation, *, band_sd=2.0, observables=None):
    """Hold a prediction against a simulation on the simulation's time grid.

    Theory is linearly interpolated onto the simulation times (both must carry ``t``, or neither).
    Metrics per shared observable: ``sup_gap``, ``mean_gap``, ``in_band`` (fraction of times with
    theory inside mean +- band_sd * SD over seeds) and ``max_z`` (gap in standard errors).
    """
    if not (band_sd > 0):
        raise ValueError(f"The 'band_sd' parameter of compare must be a float in (0, inf). Got {band_sd!r} instead.")
    names = [k for k in prediction.observables if k in simulation.observables]
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
        if t is not None and prediction.t is not None and p.ndim == 1:
            p = np.interp(t, prediction.t, p)
        mu, sig = s.mean(axis=0), s.std(axis=0, ddof=1) if s.shape[0] > 1 else np.zeros(s.shape[1:])
        gap = np.abs(p - mu)
        se = sig / np.sqrt(s.shape[0])
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(se > 0, gap / np.where(se > 0, se, 1.0), np.where(gap > 0, np.inf, 0.0))
        theory[k], mean[k], sd[k] = p, mu, sig
        metrics[k] = {"sup_gap": float(gap.max()), "mean_gap": float(gap.mean()),
                      "in_band": float(np.mean(gap <= band_sd * sig + 1e-300)), "max_z": float(z.max())}
    return Comparison(prediction, simulation, t, theory, mean, sd, metrics, band_sd)
