"""The online-SGD steps of the committee simulation on CPU in numba: one compiled loop over a chunk of steps and the
seeds, where torch pays a kernel launch per operation and step (about 10x slower at d = 250-500, K + M = 4).

Same update, same inputs (the chunk of Gaussian draws comes from the run's torch generator), same order of the
updates within a step; the sums of the fields run in another order than torch's ``bmm``, so a trajectory agrees with
the torch one to rounding, which the plateau's symmetry breaking can amplify: the two are the same random process,
not the same numbers.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ... import activations

__all__ = ["activation_code", "sgd_chunk"]

#: popdyn's activations with a compiled sigma and sigma' here (their ``rescaled`` versions too): name -> code.
CODES = {"linear": 0, "relu": 1, "abs": 2, "quadratic": 3, "sign": 4, "erf": 5, "tanh": 6, "sigmoid": 7}


def activation_code(act):
    """``(code, r)`` when ``act`` is popdyn's own activation of :data:`CODES` rescaled by r, else None (a callable or
    another family takes the torch path)."""
    name = act.name.rsplit("(r=", 1)[0] if act.r != 1.0 else act.name
    if name not in CODES:
        return None
    return (CODES[name], float(act.r)) if activations.get(name).rescaled(act.r) == act else None


@numba.njit(cache=True)
def _f(code, x):  # pragma: no cover - compiled
    if code == 0:
        return x
    if code == 1:
        return max(x, 0.0)
    if code == 2:
        return abs(x)
    if code == 3:
        return x * x
    if code == 4:
        return 0.0 if x == 0 else math.copysign(1.0, x)
    if code == 5:
        return math.erf(x)
    if code == 6:
        return math.tanh(x)
    return 1.0 / (1.0 + math.exp(-x))


@numba.njit(cache=True)
def _df(code, x):  # pragma: no cover - compiled
    if code == 0:
        return 1.0
    if code == 1:
        return 1.0 if x > 0 else 0.0
    if code == 2:
        return 0.0 if x == 0 else math.copysign(1.0, x)
    if code == 3:
        return 2.0 * x
    if code == 4:
        return 0.0
    if code == 5:
        return math.exp(-x * x) * (2.0 / math.sqrt(math.pi))
    if code == 6:
        t = math.tanh(x)
        return 1.0 - t * t
    s = 1.0 / (1.0 + math.exp(-x))
    return s * (1.0 - s)


@numba.njit(cache=True)
def sgd_chunk(J, v, L, vstar, xs, code, r, eta, eta_v, sigma, wd):  # pragma: no cover - compiled
    """Steps ``xs`` (n, S, d + 1: the input and the output noise's draw) of every seed, in place on J (S, K, d) and
    v (S, K): the update of :func:`popdyn.sim.committee.simulate`, sigma(r z) and r sigma'(r z)."""
    n, S, d1 = xs.shape
    d, K, M = d1 - 1, J.shape[1], L.shape[0]
    lam, g, c = np.empty(K), np.empty(K), np.empty(K)
    for t in range(n):
        for s in range(S):
            z = xs[t, s]
            delta = 0.0
            for k in range(K):
                a = 0.0
                for i in range(d):
                    a += J[s, k, i] * z[i]
                lam[k] = a
                g[k] = _f(code, r * a)
                delta += v[s, k] * g[k]
            for m in range(M):
                a = 0.0
                for i in range(M):
                    a += L[m, i] * z[i]
                delta -= vstar[m] * _f(code, r * a)
            if sigma != 0.0:
                delta -= sigma * z[d]
            for k in range(K):
                c[k] = v[s, k] * r * _df(code, r * lam[k]) * delta
            for k in range(K):
                if wd != 0.0:
                    for i in range(d):
                        J[s, k, i] *= 1.0 - eta * wd
                for i in range(d):
                    J[s, k, i] -= eta * c[k] * z[i]
            if eta_v != 0.0:
                for k in range(K):
                    v[s, k] -= eta_v * (g[k] * delta + wd * v[s, k])
