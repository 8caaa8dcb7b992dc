"""The online-SGD steps of the committee simulation on CPU in numba: one compiled loop over a chunk of steps and the
seeds, where torch pays a kernel launch per operation and step (the steps take 10 us against 190 us at d = 250,
K + M = 4, 16 seeds; the run's Gaussian draws, 70 us a step there, are then most of the cost).

Same update, same inputs (the chunk of Gaussian draws comes from the run's torch generator), same order of the
updates within a step; the sums of the fields run in another order than torch's ``bmm``, so a trajectory agrees with
the torch one to rounding, which the plateau's symmetry breaking can amplify: the two are the same random process,
not the same numbers.
"""
from __future__ import annotations

import numba
import numpy as np

from ..._pointwise import slope, value

__all__ = ["sgd_chunk"]


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
                g[k] = value(code, r * a)
                delta += v[s, k] * g[k]
            for m in range(M):
                a = 0.0
                for i in range(M):
                    a += L[m, i] * z[i]
                delta -= vstar[m] * value(code, r * a)
            if sigma != 0.0:
                delta -= sigma * z[d]
            for k in range(K):
                c[k] = v[s, k] * r * slope(code, r * lam[k]) * delta
            for k in range(K):
                if wd != 0.0:
                    for i in range(d):
                        J[s, k, i] *= 1.0 - eta * wd
                for i in range(d):
                    J[s, k, i] -= eta * c[k] * z[i]
            if eta_v != 0.0:
                for k in range(K):
                    v[s, k] -= eta_v * (g[k] * delta + wd * v[s, k])
