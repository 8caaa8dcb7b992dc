"""Parameter sweeps on any ``concurrent.futures`` executor: inline, a local process pool, or Dask.

``popdyn.sweep(fn, grid, executor=..., seeds=...)`` calls ``fn(**point)`` (and ``seed=...`` per seed)
over a grid and returns a :class:`SweepResult`: one row per (point, seed) in grid order whatever the
completion order, with the scalars ``fn`` returned as columns and its arrays kept beside the rows.
A point that raises is recorded with its error; the others finish. Seeds are derived per point from
``numpy.random.SeedSequence(seed).spawn``, so the numbers do not depend on where a point ran.

The executor is anything with ``submit``: ``None`` runs inline, a ``ProcessPoolExecutor`` uses the
cores of one machine, and a Dask ``distributed.Client`` (accepted directly, or through
``client.get_executor()``) runs on a cluster. Nothing here imports Dask.
"""
from __future__ import annotations

import itertools
import json
import math
import sys
import time
import traceback
from concurrent.futures import Future, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._validate import Integer, InvalidParameterError, check
from .results import Prediction, Simulation, _jsonable, atomic_write

__all__ = ["sweep", "grid_points", "point_seeds", "SweepResult", "load_sweep"]

_OWNER = "popdyn.sweep"


def grid_points(grid):
    """The points of ``grid``: a dict of lists (its Cartesian product, last key fastest) or a list of dicts."""
    if isinstance(grid, dict):
        if not grid:
            return [{}]
        for k, v in grid.items():
            if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
                raise InvalidParameterError(f"The 'grid' parameter of {_OWNER} must map names to lists of values. "
                                            f"Got {k!r}: {v!r} instead.")
        keys = list(grid)
        return [dict(zip(keys, vals)) for vals in itertools.product(*(list(grid[k]) for k in keys))]
    points = list(grid)
    if not all(isinstance(p, dict) for p in points):
        raise InvalidParameterError(f"The 'grid' parameter of {_OWNER} must be a dict of lists or a list of dicts.")
    return [dict(p) for p in points]


def point_seeds(n_points, seeds, seed=0):
    """Per-point seeds: ``SeedSequence(seed).spawn(n_points)``, each spawned again into ``seeds`` ints.

    The seed of (point i, replicate j) depends only on (seed, i, j): the same sweep gives the same seeds
    inline, on a pool and on a cluster.
    """
    children = np.random.SeedSequence(seed).spawn(n_points)
    return [[int(c.generate_state(1, np.uint64)[0] >> np.uint64(1)) for c in child.spawn(seeds)] for child in children]


def _split(out):
    """A return value of ``fn`` as (scalars, arrays): a dict, a Prediction/Simulation, or a number."""
    if isinstance(out, (Prediction, Simulation)):
        out = {**out.observables, **({"t": out.t} if out.t is not None else {})}
    elif not isinstance(out, dict):
        out = {"value": out}
    scalars, arrays = {}, {}
    for k, v in out.items():
        a = np.asarray(v)
        if a.ndim == 0 and a.dtype.kind in "biuf":
            scalars[k] = a.item()
        elif a.ndim == 0:
            scalars[k] = str(v)
        else:
            arrays[k] = a
    return scalars, arrays


def _call(fn, kwargs):
    """Run one point; never raises (the error is returned), so one bad point cannot kill the sweep."""
    t0 = time.perf_counter()
    try:
        scalars, arrays = _split(fn(**kwargs))
        return {"status": "ok", "scalars": scalars, "arrays": arrays, "wall_s": time.perf_counter() - t0}
    except Exception as e:
        return {"status": "error", "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(limit=8),
                "scalars": {}, "arrays": {}, "wall_s": time.perf_counter() - t0}


class _Inline:
    """The executor of ``executor=None``: runs each call at submit time, in this process."""

    def submit(self, fn, *args):
        f = Future()
        f.set_result(fn(*args))
        return f


def _executor(executor):
    if executor is None:
        return _Inline()
    if hasattr(executor, "get_executor"):  # a dask.distributed.Client; pure=False: every run really runs
        return executor.get_executor(pure=False)
    if not hasattr(executor, "submit"):
        raise InvalidParameterError(f"The 'executor' parameter of {_OWNER} must be None, a concurrent.futures."
                                    f"Executor or a dask.distributed.Client. Got {executor!r} instead.")
    return executor


def _bar(total, enabled):
    if enabled:
        try:
            from tqdm.auto import tqdm
            return tqdm(total=total, desc="sweep", unit="run", file=sys.stderr, leave=False)
        except ImportError:  # pragma: no cover - tqdm is in the progress extra
            pass
    return None


def sweep(fn, grid, *, executor=None, seeds=None, seed=0, progress=True):
    r"""Run ``fn(**point)`` over a parameter grid; return a tidy :class:`SweepResult` in grid order.

    Parameters
    ----------
    fn : callable
        ``fn(**point)``, or ``fn(**point, seed=s)`` when ``seeds`` is given. Returns a dict of numbers and
        arrays, a Prediction or Simulation (its observables and ``t``), or a number. It must be picklable
        (a module-level function) for a process pool or Dask.
    grid : dict of str -> list, or list of dict
        A dict of lists is expanded to its Cartesian product (last key fastest); a list of dicts is
        taken as given.
    executor : None, concurrent.futures.Executor or dask.distributed.Client
        Where the points run: inline (None), any executor, or a Dask cluster.
    seeds : int, optional
        Replicates per point, each with its own ``seed`` keyword (:func:`point_seeds`).
    seed : int
        Root of the seed tree (``numpy.random.SeedSequence(seed)``).
    progress : bool
        A tqdm bar on stderr over finished runs.

    Returns
    -------
    SweepResult
        ``rows``: one dict per (point, seed): the point, ``seed`` (when given), ``status`` ("ok" or
        "error"), ``error``, ``wall_s`` and the scalars ``fn`` returned; ``arrays[name][i]``: the array
        ``name`` of row i (None where absent).

    Notes
    -----
    Regime: any executor; a point's numbers depend only on (point, derived seed), never on the order or
    place it ran. Ctrl-C cancels the runs not yet started and returns the finished ones (rows of the
    others have status "cancelled").

    References
    ----------
    .. [src] popdyn's own (no paper result: a parallel map over problems with reproducible seeds).

    Examples
    --------
    >>> res = sweep(lambda a, b: {"s": a + b}, {"a": [1, 2], "b": [10, 20]}, progress=False)
    >>> [r["s"] for r in res.rows]
    [11, 21, 12, 22]
    """
    points = grid_points(grid)
    if seeds is not None:
        seeds = check(_OWNER, "seeds", seeds, Integer(1))
    seed = check(_OWNER, "seed", seed, Integer(0))
    runs = []
    for i, (point, ss) in enumerate(zip(points, point_seeds(len(points), seeds or 1, seed))):
        runs += [(i, point, s) for s in ss] if seeds is not None else [(i, point, None)]
    ex, bar, t0 = _executor(executor), _bar(len(runs), progress), time.perf_counter()
    outs = [None] * len(runs)
    futures = {}
    try:
        for j, (_, point, s) in enumerate(runs):
            futures[ex.submit(_call, fn, point if s is None else {**point, "seed": s})] = j
        for f in as_completed(futures):
            j = futures[f]
            try:
                outs[j] = f.result()
            except Exception as e:  # the executor itself failed (worker lost, pickling)
                outs[j] = {"status": "error", "error": f"{type(e).__name__}: {e}", "scalars": {}, "arrays": {},
                           "wall_s": math.nan}
            if bar is not None:
                bar.update(1)
    except KeyboardInterrupt:
        for f in futures:
            f.cancel()
    finally:
        if bar is not None:
            bar.close()
    rows, arrays = [], {}
    for j, ((i, point, s), out) in enumerate(zip(runs, outs)):
        out = out or {"status": "cancelled", "scalars": {}, "arrays": {}, "wall_s": math.nan}
        row = {**point, **({"seed": s} if s is not None else {}), "point": i, "status": out["status"],
               "error": out.get("error", ""), "wall_s": out["wall_s"], **out["scalars"]}
        rows.append(row)
        for k, a in out["arrays"].items():
            arrays.setdefault(k, [None] * len(runs))[j] = a
    meta = {"grid": _jsonable(grid), "seeds": seeds, "seed": seed, "executor": type(ex).__name__,
            "wall_s": time.perf_counter() - t0, "fn": getattr(fn, "__qualname__", repr(fn))}
    return SweepResult(rows, arrays, meta)


@dataclass
class SweepResult:
    """Rows (one dict per point and seed, in grid order), arrays beside them, and meta. Save/load as one .npz."""
    rows: list
    arrays: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    @property
    def errors(self):
        """The rows whose run raised (or was cancelled)."""
        return [r for r in self.rows if r["status"] != "ok"]

    def column(self, name):
        """The values of one column over all rows (NaN where a row lacks it)."""
        return np.array([r.get(name, math.nan) for r in self.rows])

    def __len__(self):
        return len(self.rows)

    def __repr__(self):
        return (f"SweepResult({len(self.rows)} rows, {len(self.errors)} errors, columns "
                f"{sorted({k for r in self.rows for k in r})}, arrays {sorted(self.arrays)})")

    def save(self, path):
        """Write one ``.npz`` (arrays, plus rows and meta as JSON inside) atomically; return its path."""
        path = Path(path).with_suffix(".npz")
        data = {f"arr__{k}__{i}": a for k, col in self.arrays.items() for i, a in enumerate(col) if a is not None}
        data["__meta__"] = np.array(json.dumps({"kind": "SweepResult", "rows": _jsonable(self.rows),
                                                "arrays": {k: len(v) for k, v in self.arrays.items()},
                                                "meta": _jsonable(self.meta)}))
        atomic_write(path, lambda f: np.savez(f, **data))
        return path


def load_sweep(path):
    """Load a :class:`SweepResult` written by ``save``; exact round trip of rows and arrays."""
    with np.load(Path(path).with_suffix(".npz")) as z:
        side = json.loads(str(z["__meta__"]))
        arrays = {k: [z[f"arr__{k}__{i}"] if f"arr__{k}__{i}" in z.files else None for i in range(n)]
                  for k, n in side["arrays"].items()}
    return SweepResult(side["rows"], arrays, side["meta"])
