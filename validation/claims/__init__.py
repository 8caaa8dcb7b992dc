"""Claims of the theory held against simulation: a ``Claim`` record, its ``ClaimResult``, a registry.

Every module in this package is imported by :func:`discover`, and each registers its claims with
:func:`register` (or the :func:`claim` decorator) at import time: a new ``claims/<model>.py`` is
picked up without editing anything here. Claims use only popdyn's public API.

A claim's ``run(size, device, outdir)`` receives the size dictionary (``claim.quick`` or
``claim.full``), the torch device name and the folder for its figure, and returns a
:class:`ClaimResult`.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import pkgutil
from dataclasses import asdict, dataclass, field
from typing import Callable

__all__ = ["Claim", "ClaimResult", "REGISTRY", "register", "claim", "discover", "select"]


@dataclass(frozen=True)
class ClaimResult:
    """What one claim measured.

    Attributes
    ----------
    measured : float
        The metric's value (compared with ``tolerance``).
    tolerance : float
        The bound it must not exceed (copied from the claim, or refined by the run).
    passed : bool
        Verdict.
    figure : str or None
        Path of the claim's PNG.
    table : list of dict
        A small table of numbers (one dict per row, same keys in every row).
    message : str
        One line saying what was found.
    details : dict
        Further measured values (JSON-serialisable).
    """
    measured: float
    tolerance: float
    passed: bool
    figure: str | None = None
    table: list = field(default_factory=list)
    message: str = ""
    details: dict = field(default_factory=dict)

    def __post_init__(self):  # numpy scalars from claim code become plain JSON numbers and booleans
        object.__setattr__(self, "measured", float(self.measured))
        object.__setattr__(self, "tolerance", float(self.tolerance))
        object.__setattr__(self, "passed", bool(self.passed))

    def to_dict(self):
        return asdict(self)


@dataclass(frozen=True)
class Claim:
    """One statement of a paper, with how to check it.

    Attributes
    ----------
    id : str
        ``"<model>.<name>"``, e.g. ``"lora.prop4_gradient"``.
    model : str
        Model name (``"lora"``), used to select claims.
    title : str
        One line.
    source : str
        Seed file and lines, and the spec section.
    metric : str
        What ``measured`` is, in words.
    tolerance : float
        Pass iff ``measured <= tolerance``.
    tolerance_origin : str
        Where the tolerance comes from, in words.
    quick, full : dict
        Sizes passed to ``run`` (``--quick`` uses ``quick``).
    run : callable
        ``run(size, device, outdir) -> ClaimResult``.
    """
    id: str
    model: str
    title: str
    source: str
    metric: str
    tolerance: float
    tolerance_origin: str
    quick: dict
    full: dict
    run: Callable = field(repr=False, compare=False)

    def size(self, quick):
        """The size dictionary for a quick or a full run."""
        return dict(self.quick if quick else self.full)

    def key(self, quick):
        """Hash of the claim's inputs (id, size, tolerance): a stored result with another key is stale."""
        text = json.dumps({"id": self.id, "size": self.size(quick), "tolerance": self.tolerance}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


REGISTRY: dict = {}


def register(c):
    """Add claim ``c`` to the registry (an id registered twice is an error) and return it."""
    if c.id in REGISTRY and REGISTRY[c.id] is not c:
        raise ValueError(f"claim id {c.id!r} is registered twice")
    if not c.id.startswith(c.model + "."):
        raise ValueError(f"claim id {c.id!r} must start with its model name {c.model!r} and a dot")
    REGISTRY[c.id] = c
    return c


def claim(**fields):
    """Decorator: ``@claim(id=..., model=..., ...)`` on ``run(size, device, outdir)`` registers it."""
    def wrap(run):
        register(Claim(run=run, **fields))
        return run
    return wrap


def discover():
    """Import every module of this package (each registers its claims); return the registry."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return REGISTRY


def select(names=()):
    """Claims whose model or id is in ``names`` (all when empty), in registration order.

    Raises ``KeyError`` naming the known models and ids when a name matches nothing.
    """
    discover()
    if not names:
        return list(REGISTRY.values())
    unknown = [n for n in names if n not in REGISTRY and not any(c.model == n for c in REGISTRY.values())]
    if unknown:
        models = sorted({c.model for c in REGISTRY.values()})
        raise KeyError(f"no claim or model named {unknown}; models: {models}; claims: {sorted(REGISTRY)}")
    return [c for c in REGISTRY.values() if c.id in names or c.model in names]
