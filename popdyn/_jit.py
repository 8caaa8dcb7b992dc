"""Numba kernels compiled on first use of the path that needs them.

A loop over ``numba.prange`` runs serially under a plain ``njit`` and on all cores under ``parallel=True``, whose
compile takes several times longer (14 s against 3 s for the emergence Fourier kernel on 2 cores). Small problems
take the serial kernel, large ones the parallel one, so a first call on a small problem does not pay for threads it
would not use.
"""
from __future__ import annotations

import types

import numba

__all__ = ["serial_and_parallel"]


def serial_and_parallel(fn):
    """Two cached numba dispatchers of ``fn`` (its outer loop a ``numba.prange``): ``(serial, parallel)``.

    numba keys its disk cache by the function (module, qualified name, line), not by the compile flags, so two
    dispatchers of one function share a cache entry and one loads the other's machine code; the parallel one is
    compiled from a copy named ``<name>_parallel`` and cached apart.
    """
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_parallel", fn.__defaults__, fn.__closure__)
    twin.__qualname__, twin.__module__, twin.__doc__ = fn.__qualname__ + "_parallel", fn.__module__, fn.__doc__
    return numba.njit(cache=True)(fn), numba.njit(cache=True, parallel=True)(twin)
