"""Prediction, Simulation, Comparison: arrays plus metadata, saved as one ``.npz`` file, atomically.

A ``Prediction`` (theory) and a ``Simulation`` (finite-sample training) share observable names, so
:func:`popdyn.compare` needs no per-model code. Simulation observables carry a leading seed axis.
Axes other than time (the prompt length ``M`` of a parity sweep, say) are ``coords``, never
observables. The metadata is stored as JSON inside the same ``.npz``, so a result is written by one
``os.replace``: a reader never sees arrays without their metadata or the reverse.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["Prediction", "Simulation", "Comparison", "load", "read_meta", "atomic_write"]


def _umask():
    """The process's umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path, write):
    """Call ``write(fileobj)`` on a temporary file beside ``path``, then ``os.replace`` it there; the file gets
    the mode a plain ``open`` would give (0644 under umask 022)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a saved result is as readable as any new file
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    return repr(x)


@dataclass
class _Result:
    t: np.ndarray | None
    observables: dict
    status: int = 0
    message: str = ""
    meta: dict = field(default_factory=dict)
    coords: dict = field(default_factory=dict)

    def __post_init__(self):
        self.t = None if self.t is None else np.asarray(self.t)
        self.observables = {k: np.asarray(v) for k, v in self.observables.items()}
        self.coords = {k: np.asarray(v) for k, v in self.coords.items()}
        clash = set(self.coords) & (set(self.observables) | {"t"})
        if clash:
            raise ValueError(f"coords {sorted(clash)} share a name with an observable or 't'")
        self.meta = _jsonable(self.meta)

    @property
    def success(self):
        return self.status >= 0

    def __getitem__(self, name):
        return self.observables[name]

    def __repr__(self):
        lines = [f"{type(self).__name__}(status={self.status}, message={self.message!r},"]
        if self.t is not None:
            lines.append(f"  t: {self.t.shape} in [{self.t.min():.4g}, {self.t.max():.4g}]"
                         f" ({self.meta.get('t_unit', 'steps')})")
        for k, v in self.coords.items():
            lines.append(f"  coord {k}: {v.tolist() if v.size <= 8 else v.shape}")
        for k, v in self.observables.items():
            rng = f" in [{np.min(v):.4g}, {np.max(v):.4g}]" if v.size and v.dtype.kind in "fiu" else ""
            lines.append(f"  {k}: {v.shape}{rng}")
        return "\n".join(lines) + ")"

    def save(self, path):
        """Write ``path`` with suffix ``.npz``: arrays, and status, message and meta as JSON, in one atomic write."""
        path = Path(path).with_suffix(".npz")
        arrays = {f"obs__{k}": v for k, v in self.observables.items()}
        arrays |= {f"coord__{k}": v for k, v in self.coords.items()}
        if self.t is not None:
            arrays["t"] = self.t
        side = {"kind": type(self).__name__, "status": self.status, "message": self.message,
                "meta": self.meta, "observables": list(self.observables), "coords": list(self.coords)}
        arrays["__meta__"] = np.array(json.dumps(side))
        atomic_write(path, lambda f: np.savez(f, **arrays))
        return path


class Prediction(_Result):
    """Theory: ``t`` (may be None for static results), ``observables`` name -> array."""

    def plot(self, path=None, *, ax=None, observables=None):
        """The theory, one panel per observable (see :func:`popdyn.plot.plot_result`)."""
        from .plot import plot_result
        return plot_result(self, path=path, ax=ax, observables=observables)


class Simulation(_Result):
    """Finite-sample training: observables have a leading seed axis of length ``n_seeds``."""

    @property
    def n_seeds(self):
        return next(iter(self.observables.values())).shape[0]

    def plot(self, path=None, *, ax=None, observables=None, band_sd=2.0):
        """The seed mean with a +- ``band_sd`` SD band, one panel per observable (see
        :func:`popdyn.plot.plot_result`)."""
        from .plot import plot_result
        return plot_result(self, path=path, ax=ax, observables=observables, band_sd=band_sd)


def choose_observables(names, observables, owner):
    """``names`` restricted to the caller's ``observables`` (all when None); an unknown name is a ValueError that
    lists the valid ones."""
    if observables is None:
        return list(names)
    unknown = [k for k in observables if k not in names]
    if unknown:
        raise ValueError(f"{owner}: observables {unknown} are not available; choose among {list(names)}")
    return [k for k in names if k in observables]


def load(path):
    """Load a Prediction or Simulation written by ``save``; exact round trip."""
    path = Path(path).with_suffix(".npz")
    with np.load(path) as z:
        side = json.loads(str(z["__meta__"]))
        t = z["t"] if "t" in z.files else None
        obs = {k: z[f"obs__{k}"] for k in side["observables"]}
        coords = {k: z[f"coord__{k}"] for k in side["coords"]}
    cls = {"Prediction": Prediction, "Simulation": Simulation}[side["kind"]]
    return cls(t=t, observables=obs, status=side["status"], message=side["message"], meta=side["meta"],
               coords=coords)


def read_meta(path):
    """The JSON part of a saved result (kind, status, message, meta, names) without loading its arrays."""
    with np.load(Path(path).with_suffix(".npz")) as z:
        return json.loads(str(z["__meta__"]))


@dataclass
class Comparison:
    """Theory against simulation per observable, on the simulation's time grid.

    ``metrics[name]`` holds ``sup_gap`` = max_t |theory - mean|, ``mean_gap`` = mean_t |theory - mean|,
    ``in_band`` = fraction of t with theory inside mean +- ``band_sd`` * seed SD, and ``max_z`` =
    max_t |theory - mean| / (SD / sqrt(n_seeds)) (the gap in standard errors of the mean).
    """
    prediction: Prediction
    simulation: Simulation
    t: np.ndarray | None
    theory: dict
    mean: dict
    sd: dict
    metrics: dict
    band_sd: float = 2.0
    compared_at: float | None = None

    def __repr__(self):
        rows = [f"  {k}: " + ", ".join(f"{m}={v:.4g}" for m, v in d.items()) for k, d in self.metrics.items()]
        return "Comparison(\n" + "\n".join(rows) + ")"

    def plot(self, path=None, *, ax=None, observables=None):
        """Theory over the simulation, one panel per observable of any shape (see
        :func:`popdyn.plot.plot_comparison`)."""
        from .plot import plot_comparison
        return plot_comparison(self, path=path, ax=ax, observables=observables)
