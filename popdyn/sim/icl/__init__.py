"""Finite-sample training for the in-context learning models; imports every part so that
``popdyn.simulate`` finds their registrations."""
import importlib as _importlib

__all__ = []

for _part in ("regression", "parity"):
    try:
        _importlib.import_module(f"{__name__}.{_part}")
    except ModuleNotFoundError as _e:  # a part still being written must not break the others
        if _e.name != f"{__name__}.{_part}":
            raise
