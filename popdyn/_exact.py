"""Error-free transformations: a sum and a product of two doubles as an unevaluated sum of two doubles.

``two_sum(a, b) = (s, e)`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly (Knuth's branch-free TwoSum), and
``two_prod(a, b) = (p, e)`` with ``p = fl(a b)`` and ``p + e = a b`` exactly (Dekker's product with Veltkamp's split
by 2^27 + 1; no fused multiply-add needed). They are the building blocks of the double-double accumulations of
:mod:`popdyn.kernels` (determinants of 2 x 2 covariances near rho = +-1) and :mod:`popdyn.models.resnet.hypercube`
(the exact test error's pair sums).

Each is one Python function that works on floats and numpy arrays (elementwise, broadcasting) and, compiled by numba
as ``two_sum_jit`` / ``two_prod_jit`` (inlined, cached), inside numba kernels. Exact where no intermediate overflows
or underflows: ``|a|, |b| < 1e150`` for the product (the split multiplies by 2^27 + 1, and the error term needs
``|a b|`` above 2^-969), any finite a, b whose sum does not overflow for the sum.

``dd_sum`` sums along an axis in double-double: pairwise TwoSum with the errors carried beside the partial sums,
which is Ogita, Rump and Oishi's Sum2 (Accurate sum and dot product, SIAM J. Sci. Comput. 26, 2005) in pairwise
order; ``hi + lo`` is the exact sum up to ~ (log2 n)^2 eps^2 sum|x|. It serves the few sums whose rounding would
cancel later (the emergence moments, the gradient-feature a~).

References: Dekker, "A floating-point technique for extending the available precision", Numer. Math. 18 (1971);
Knuth, TAOCP vol. 2, section 4.2.2, Theorem B.
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["two_sum", "two_prod", "two_sum_jit", "two_prod_jit", "dd_sum"]

_SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's split a = hi + lo, hi and lo of at most 26 significant bits


def two_sum(a, b):
    """``(s, e)``: ``s = fl(a + b)``, ``s + e = a + b`` exactly (floats or arrays)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def two_prod(a, b):
    """``(p, e)``: ``p = fl(a b)``, ``p + e = a b`` exactly for ``|a|, |b| < 1e150`` (floats or arrays)."""
    p = a * b
    c = _SPLIT * a
    ah = c - (c - a)
    al = a - ah
    c = _SPLIT * b
    bh = c - (c - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


two_sum_jit = numba.njit(cache=True, inline="always")(two_sum)
two_prod_jit = numba.njit(cache=True, inline="always")(two_prod)


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
