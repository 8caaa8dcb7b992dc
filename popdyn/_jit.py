"""Numba kernels compiled on first use of the path that needs them.

A loop over ``numba.prange`` runs serially under a plain ``njit`` and on all cores under ``parallel=True``, whose
compile takes several times longer (14 s against 3 s for the emergence Fourier kernel on 2 cores). Small problems
take the serial kernel, large ones the parallel one, so a first call on a small problem does not pay for threads it
would not use.
"""
from __future__ import annotations

import os
import sys
import types

import numba

__all__ = ["serial_and_parallel"]


class _Announced:
    """A dispatcher that says so on stderr, once, before a call that will compile it (no machine code in memory or
    in numba's disk cache): the parallel compile takes seconds, and a silent pause reads as a hang."""

    def __init__(self, dispatcher, what):
        self._dispatcher, self._what, self._checked = dispatcher, what, False

    def __call__(self, *args):
        if not self._checked:
            self._checked = True
            if not self._dispatcher.signatures and not _on_disk(self._dispatcher):
                print(f"popdyn: compiling {self._what} for all cores (once, about 5-15 s; cached afterwards)",
                      file=sys.stderr, flush=True)
        return self._dispatcher(*args)

    def __getattr__(self, name):
        return getattr(self._dispatcher, name)


def _on_disk(dispatcher):
    """Whether numba's disk cache holds an index for ``dispatcher`` (True when that cannot be told)."""
    try:
        return os.path.exists(dispatcher._cache._cache_file._index_path)
    except AttributeError:
        return True


def serial_and_parallel(fn):
    """Two cached numba dispatchers of ``fn`` (its outer loop a ``numba.prange``): ``(serial, parallel)``.

    numba keys its disk cache by the function (module, qualified name, line), not by the compile flags, so two
    dispatchers of one function share a cache entry and one loads the other's machine code; the parallel one is
    compiled from a copy named ``<name>_parallel`` and cached apart. Its first call in a process prints a one-line
    notice when it will compile (nothing cached yet).
    """
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_parallel", fn.__defaults__, fn.__closure__)
    twin.__qualname__, twin.__module__, twin.__doc__ = fn.__qualname__ + "_parallel", fn.__module__, fn.__doc__
    return (numba.njit(cache=True)(fn),
            _Announced(numba.njit(cache=True, parallel=True)(twin), f"{fn.__module__}.{fn.__name__}"))
