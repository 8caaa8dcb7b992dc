"""Sums in double-double: a float ``hi`` and the rest ``lo`` of it, for the few sums whose rounding would cancel later
(the emergence moments, the gradient-feature a~).

``dd_sum`` adds pairwise with the error-free :func:`popdyn._exact.two_sum` and carries the errors beside the partial
sums, which is Ogita, Rump and Oishi's Sum2 (Accurate sum and dot product, SIAM J. Sci. Comput. 26, 2005) in
pairwise order: ``hi + lo`` is the exact sum up to ~ (log2 n)^2 eps^2 sum|x|, vectorised over the other axes at ~10
flops per term.
"""
from __future__ import annotations

import numpy as np

from ._exact import two_sum

__all__ = ["dd_sum"]


def _pairwise(x):
    """Double-double sums of the rows of the 2-d ``x`` (n >= 1 columns): zero-padded to a power of 2, halves added."""
    n = x.shape[1]
    width = 1 << (n - 1).bit_length()
    x = np.concatenate([x, np.zeros((x.shape[0], width - n))], axis=1) if width > n else x
    err = np.zeros_like(x)
    while width > 1:
        width //= 2
        x, e = two_sum(x[:, :width], x[:, width:])
        err = (err[:, :width] + err[:, width:]) + e
    return two_sum(x[:, 0], err[:, 0])


def dd_sum(x):
    """Sums of ``x`` along its last axis in double-double: ``(hi, lo)``, ``hi`` the sum rounded (within an ulp: the
    correction ``lo`` is exact to ~ (log2 n)^2 eps^2 sum|x|), for finite sums; an empty sum is 0. Rows run in
    blocks of ~2^20 terms (a few ns a term)."""
    x = np.asarray(x, dtype=np.float64)
    n, shape = x.shape[-1], x.shape[:-1]
    if x.size == 0:
        return np.zeros(shape), np.zeros(shape)
    rows = x.reshape(-1, n)
    step = max(1, 2 ** 20 // n)
    hi, lo = (np.concatenate(p) for p in zip(*(_pairwise(rows[i:i + step]) for i in range(0, rows.shape[0], step))))
    return hi.reshape(shape), lo.reshape(shape)
