"""popdyn: what feature-learning theory predicts, and whether finite-sample training agrees.

``popdyn.predict(problem, ...)`` computes the theory (numpy/numba), ``popdyn.simulate(problem, ...)``
trains the finite network (torch, imported lazily), ``popdyn.compare(pred, sim)`` measures the gap,
``popdyn.sweep(fn, grid, executor=...)`` runs a parameter study inline, on a process pool or on Dask.
"""
import importlib

from . import results
from ._validate import InvalidParameterError, RegimeWarning
from .api import compare, predict, simulate
from .results import Comparison, Prediction, Simulation, load
from .sweep import SweepResult, load_sweep, sweep

__version__ = "0.1.0"
__all__ = ["predict", "simulate", "compare", "load", "sweep", "load_sweep", "SweepResult",
           "activations", "kernels", "models", "results",
           "Prediction", "Simulation", "Comparison", "InvalidParameterError", "RegimeWarning"]


def __getattr__(name):
    """``popdyn.activations``, ``popdyn.kernels`` and ``popdyn.models`` load on first use (numba and scipy are not
    needed to import)."""
    if name in ("activations", "kernels", "models"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'popdyn' has no attribute {name!r}")
