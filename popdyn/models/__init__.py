"""One package per setting of the theory; each registers its problem classes with ``popdyn.predict``.

``popdyn.models.<name>`` imports a model on first use (so ``import popdyn`` stays light);
:func:`catalogue` lists every problem class with its constructors, options and observables.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

MODELS = ("committee", "contrastive", "domain_gen", "emergence", "gradient_features", "icl", "kernels", "looped", "lora",
          "modular", "multitask", "resnet")

__all__ = list(MODELS) + ["catalogue", "CatalogueEntry", "MODELS"]


def __getattr__(name):
    if name in MODELS:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; the models are {', '.join(MODELS)}")


def __dir__():
    return sorted(__all__)


def _import_all():
    for m in MODELS:
        importlib.import_module(f"{__name__}.{m}")


@dataclass(frozen=True)
class CatalogueEntry:
    """One problem class: ``name`` (``lora``, ``icl.parity``), the class, its constructors, a one-line
    ``summary`` of what the theory predicts, its ``options`` table, its ``observables`` and the path of its
    simulation."""
    name: str
    cls: type
    constructors: tuple
    summary: str
    options: object
    observables: dict
    simulate: str | None

    def __str__(self):
        lines = [f"{self.name}: {self.cls.__module__}.{self.cls.__qualname__}", f"  {self.summary}",
                 f"  constructors: {', '.join(self.constructors) or '(the fields)'}"]
        if self.options is not None:
            for call in ("predict", "simulate"):
                opts = [o.name + ("*" if o.required else "") for o in self.options.for_call(call)]
                lines.append(f"  {call} options: {', '.join(opts)}")
        for k, o in (self.observables or {}).items():
            axes = ", ".join(o.axes) if o.axes else "scalar"
            lines.append(f"  observable {k}: {o.axis_label()} [{axes}{'; over ' + o.coord if o.coord else ''}]")
        return "\n".join(lines)


def constructors(cls):
    """The public classmethod constructors of a problem class, in definition order (``example`` excluded)."""
    return tuple(n for c in reversed(cls.__mro__) for n, v in vars(c).items()
                 if isinstance(v, classmethod) and not n.startswith("_") and n != "example")


def catalogue():
    """Every problem class popdyn knows, as :class:`CatalogueEntry` rows sorted by name.

    Examples
    --------
    >>> from popdyn.models import catalogue
    >>> "lora" in [e.name for e in catalogue()]
    True
    """
    from ..api import entries
    out = []
    for name, e in entries().items():
        out.append(CatalogueEntry(name, e.cls, constructors(e.cls), e.summary, getattr(e.cls, "options", None),
                                  dict(getattr(e.cls, "observables", {}) or {}), e.simulate))
    return out
