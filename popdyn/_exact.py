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

References: Dekker, "A floating-point technique for extending the available precision", Numer. Math. 18 (1971);
Knuth, TAOCP vol. 2, section 4.2.2, Theorem B.
"""
from __future__ import annotations

import numba

import numpy as np

__all__ = ["two_sum", "two_prod", "two_sum_jit", "two_prod_jit", "det2"]

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


def det2(a, b, c):
    """``max(a b - c^2, 0)`` of a 2 x 2 covariance ``[[a, c], [c, b]]`` from exact products: relative error ~ eps
    also where it is ~eps a b (nearly repeated or antipodal fields), and 0 exactly for ``a = b = |c|``; the plain
    difference leaves ~1e-16 a b there, i.e. 1e-8 after a square root (floats or arrays)."""
    p, e = two_prod(a, b)
    q, f = two_prod(c, c)
    return np.maximum((p - q) + (e - f), 0.0)


two_sum_jit = numba.njit(cache=True, inline="always")(two_sum)
two_prod_jit = numba.njit(cache=True, inline="always")(two_prod)
