"""Claims of the theory held against simulation: a ``Claim`` record, its ``ClaimResult``, a registry.

Every module in this package is imported by :func:`discover`, and each registers its claims with
:func:`register` (or the :func:`claim` decorator) at import time: a new ``claims/<model>.py`` is
picked up without editing anything here. Claims use only popdyn's public API.

A claim's ``run(size, device, outdir)`` receives the size dictionary (``claim.quick`` or
``claim.full``), the torch device name and the folder for its figure, and returns a
:class:`ClaimResult`: what it measured and its named sub-checks, never a verdict. The verdict is
decided in one place, :func:`verdict`, from the claim's declared ``tolerance``.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import json
import math
import pkgutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import popdyn

__all__ = ["Claim", "ClaimResult", "REGISTRY", "KINDS", "register", "claim", "discover", "select", "verdict",
           "null_rejected", "source_hash"]

#: The three kinds of claim, counted apart in the report.
KINDS = ("training", "independent", "finding")


@dataclass(frozen=True)
class ClaimResult:
    """What one claim measured.

    Attributes
    ----------
    measured : float
        The metric's value; the runner compares it with the claim's ``tolerance``.
    checks : dict of str -> bool
        Named sub-conditions that must also hold (e.g. ``{"loss within 0.2 % of L*": True}``).
    figure : str or None
        Path of the claim's PNG.
    table : list of dict
        A small table of numbers (one dict per row, same keys in every row).
    message : str
        One line saying what was found.
    details : dict
        Further measured values (JSON-serialisable).
    nulls : dict of str -> float
        The same metric, on the same simulation draw, under each null the claim declares (name -> value);
        a claim passes only if every null is outside the tolerance.
    """
    measured: float
    checks: dict = field(default_factory=dict)
    figure: str | None = None
    table: list = field(default_factory=list)
    message: str = ""
    details: dict = field(default_factory=dict)
    nulls: dict = field(default_factory=dict)

    def __post_init__(self):  # numpy scalars from claim code become plain JSON numbers and booleans
        object.__setattr__(self, "measured", float(self.measured))
        object.__setattr__(self, "checks", {str(k): bool(v) for k, v in self.checks.items()})
        object.__setattr__(self, "nulls", {str(k): float(v) for k, v in self.nulls.items()})

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
        The paper by its own numbering, ``[Key, Theorem n]`` with a key of docs/references.bib (``[Shi24, Theorem
        5.4.1]``), or "derived here, not in the paper" with the paper object it extends and its docs page.
    metric : str
        What ``measured`` is, in words.
    tolerance : float
        Pass iff ``measured <= tolerance`` and every sub-check holds (:func:`verdict`).
    tolerance_origin : str
        Where the tolerance comes from, in words.
    quick, full : dict
        Sizes passed to ``run`` (``--quick`` uses ``quick``).
    run : callable
        ``run(size, device, outdir) -> ClaimResult``.
    kind : str
        ``"training"`` (theory against a simulation that does not use the theory's answer),
        ``"independent"`` (a closed form or identity against an independent computation: Monte Carlo, brute
        force, enumeration) or ``"finding"`` (a paper's statement refuted or qualified, with its evidence).
    nulls : dict of str -> str
        The theories a skeptical referee would offer instead (name -> one line); ``run`` measures the metric
        under each on the same draw (``ClaimResult.nulls``), and every one must fail.
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
    kind: str | None = None
    nulls: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in KINDS + (None,):
            raise ValueError(f"claim {self.id!r}: kind must be one of {KINDS}, got {self.kind!r}")

    def size(self, quick):
        """The size dictionary for a quick or a full run."""
        return dict(self.quick if quick else self.full)

    def key(self, quick):
        """Hash of everything the result depends on: a stored result with another key is stale.

        Covers the id, size and tolerance, popdyn's version, and the code of the claim's module, of the model
        (``popdyn/models/<model>``, ``popdyn/sim/<model>``) and of every module of popdyn and validation these
        import (:func:`source_hash`: docstrings, comments, layout and a claim's prose do not enter it).
        """
        text = json.dumps({"id": self.id, "size": self.size(quick), "tolerance": self.tolerance,
                           "version": popdyn.__version__, "source": source_hash(self)}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


#: Packages whose ``__init__`` only gathers or registers: neither hashed nor followed (every claim imports them).
_HUBS = ("popdyn", "popdyn.models", "popdyn.sim", "validation", "validation.claims")


def _canonical(name):
    """A module's name as the key sees it: ``popdyn.validation.x`` is ``validation.x`` (the folder it lives in), so a
    key does not depend on the name the package was imported under."""
    return name[len("popdyn."):] if name == "popdyn.validation" or name.startswith("popdyn.validation.") else name


@functools.lru_cache(maxsize=None)
def _module_file(name):
    """The file of module ``name`` inside popdyn or validation (``None`` outside them or if absent); cached: the
    tree's files are taken as fixed while a process runs (edits to them are seen: :func:`_code` and the import
    scan key on mtimes)."""
    name = _canonical(name)
    top = {"popdyn": Path(popdyn.__file__).parent, "validation": Path(__file__).parent.parent}.get(name.split(".")[0])
    if top is None:
        return None
    base = top.joinpath(*name.split(".")[1:])
    return next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()), None)


@functools.lru_cache(maxsize=None)
def _imports_cached(path, mtime_ns, size):
    """Modules of popdyn and validation that file ``path`` imports anywhere (module or function level)."""
    name = _module_name(path)
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(Path(path).read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")
                pkg = pkg[:len(pkg) - node.level + 1]
                base = ".".join(pkg + ([node.module] if node.module else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return frozenset(_canonical(m) for m in out if _module_file(m) is not None)


@functools.lru_cache(maxsize=None)
def _module_name(path):
    """The dotted name of the module at ``path`` (a pure function of the path, so cached)."""
    path = Path(path).resolve()
    for top in ("validation", "popdyn"):  # validation first: an installed copy lives inside popdyn/
        root = _module_file(top).parent.resolve()   # a linked copy (popdyn/validation -> ../validation) too
        if path.is_relative_to(root):
            rel = path.relative_to(root.parent).with_suffix("").parts
            return ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
    return path.stem  # a module outside both (a test's claim): its relative imports are not followed


def _source_files(c):
    """The files a claim's result depends on: the closure under static imports (inside popdyn and validation) of its
    module, its model's theory and simulation packages and ``popdyn.api`` (``predict``/``simulate``/``compare``),
    without the hub packages :data:`_HUBS`. A change to a core module a claim never imports leaves its key alone."""
    root = Path(popdyn.__file__).parent
    todo = [Path(sys.modules[c.run.__module__].__file__)] if c.run.__module__ in sys.modules else []
    todo += [root / "api.py"]
    for part in ("models", "sim"):
        todo += sorted((root / part).glob(f"{c.model}.py")) + sorted((root / part / c.model).glob("**/*.py"))
    seen = set()
    while todo:
        f = todo.pop().resolve()
        if f in seen:
            continue
        seen.add(f)
        st = f.stat()
        for m in _imports_cached(str(f), st.st_mtime_ns, st.st_size):
            if m not in _HUBS:
                todo.append(_module_file(m))
    return sorted(seen, key=_module_name)


#: A claim's prose: words about the measurement, not the measurement.
_PROSE = frozenset({"title", "source", "metric", "tolerance_origin", "kind"})
#: A claim's sizes: :meth:`Claim.key` hashes the one a record was run at, so changing the quick size leaves the full
#: record current (and the other way round).
_SIZES = frozenset({"quick", "full"})


class _CodeOnly(ast.NodeTransformer):
    """Drop docstrings, the prose of ``claim(...)`` / ``Claim(...)`` calls (null names stay, not their words) and
    their ``quick`` / ``full`` sizes."""

    def _strip_docstring(self, node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
        return self.generic_visit(node)

    visit_Module = visit_ClassDef = visit_FunctionDef = visit_AsyncFunctionDef = _strip_docstring

    def visit_Call(self, node):
        if getattr(node.func, "id", getattr(node.func, "attr", None)) in ("claim", "Claim"):
            node.keywords = [k for k in node.keywords if k.arg not in _PROSE | _SIZES]
            for k in node.keywords:
                if k.arg == "nulls" and isinstance(k.value, ast.Dict):
                    k.value.values = [ast.Constant("") for _ in k.value.values]
        return self.generic_visit(node)


def _code(path):
    """The code of a Python file without docstrings, comments, layout or claim prose (``ast.dump``)."""
    st = Path(path).stat()
    return _code_cached(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=None)
def _code_cached(path, mtime_ns, size):
    tree = _CodeOnly().visit(ast.parse(Path(path).read_text()))
    # ast.dump as Python 3.11 writes it, whatever the version: 3.12 adds empty type_params, 3.13 hides empty lists
    text = ast.dump(tree, **({"show_empty": True} if sys.version_info >= (3, 13) else {}))
    return text.replace(", type_params=[]", "").replace("popdyn.validation", "validation")


def source_hash(c):
    """SHA-256 (16 hex digits) of the code claim ``c`` depends on (:func:`_source_files`, read by :func:`_code`).

    Citing a paper differently or rewording a docstring leaves it unchanged, and so does the Python version (3.11 to
    3.13 checked: a record made on a GPU machine's Python is current here).
    """
    h = hashlib.sha256()
    for f in _source_files(c):
        h.update(_module_name(f).encode() + b"\0" + _code(f).encode())
    return h.hexdigest()[:16]


def null_rejected(c, value):
    """A null's value is outside the claim's tolerance (NaN: the null was not measured, so not rejected)."""
    return not math.isnan(value) and value > c.tolerance


def verdict(c, result):
    """``"PASS"`` iff ``result.measured <= c.tolerance`` (NaN fails), every sub-check holds and every declared
    null is measured and outside the tolerance (:func:`null_rejected`), else ``"FAIL"``.

    The one place a verdict is decided: claims measure, the declared tolerance judges. A claim that declares no
    null can still PASS, and the report counts it apart (it shows agreement, not that the theory is needed).
    """
    ok = not math.isnan(result.measured) and result.measured <= c.tolerance and all(result.checks.values())
    missing = set(c.nulls) - set(result.nulls)
    ok = ok and not missing and all(null_rejected(c, result.nulls[n]) for n in c.nulls)
    return "PASS" if ok else "FAIL"


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
