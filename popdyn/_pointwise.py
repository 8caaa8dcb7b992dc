"""popdyn's own activations as compiled scalar functions: ``value(code, x)`` and ``slope(code, x)``, sigma and
sigma' at x, for kernels that evaluate an activation inside a numba loop (the committee's SGD steps, LoRA's pair
moments). A rescaled activation sigma(r z) is ``(code, r)``: the caller forms sigma(r x) and r sigma'(r x).
User callables have no code and take the numpy path of their caller.
"""
from __future__ import annotations

import math

import numba

from . import activations

__all__ = ["CODES", "code", "value", "slope", "value_slope"]

#: name -> code of popdyn's activations compiled here (their ``rescaled`` versions too).
CODES = {"linear": 0, "relu": 1, "abs": 2, "quadratic": 3, "sign": 4, "erf": 5, "tanh": 6, "sigmoid": 7, "gelu": 8,
         "softplus": 9, "exp": 10}

_SQRT2, _INV_SQRT_2PI, _TWO_INV_SQRT_PI = math.sqrt(2.0), 1.0 / math.sqrt(2.0 * math.pi), 2.0 / math.sqrt(math.pi)


def code(act):
    """``(code, r)`` when ``act`` is popdyn's own activation of :data:`CODES` rescaled by r, else None."""
    name = act.name.rsplit("(r=", 1)[0] if act.r != 1.0 else act.name
    if name not in CODES:
        return None
    return (CODES[name], float(act.r)) if activations.get(name).rescaled(act.r) == act else None


@numba.njit(cache=True)
def value(c, x):  # pragma: no cover - compiled
    """sigma(x) of the activation with code ``c`` (:data:`CODES`); quadratic is popdyn's h_0 + sqrt(2) h_2 = x^2."""
    if c == 0:
        return x
    if c == 1:
        return max(x, 0.0)
    if c == 2:
        return abs(x)
    if c == 3:
        return x * x
    if c == 4:
        return 0.0 if x == 0 else math.copysign(1.0, x)
    if c == 5:
        return math.erf(x)
    if c == 6:
        return math.tanh(x)
    if c == 7:
        return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
    if c == 8:
        return x * 0.5 * math.erfc(-x / _SQRT2)
    if c == 9:
        return max(x, 0.0) + math.log1p(math.exp(-abs(x)))
    return math.exp(x)


@numba.njit(cache=True)
def slope(c, x):  # pragma: no cover - compiled
    """sigma'(x) of the activation with code ``c`` (relu'(0) = abs'(0) = sign' = 0, as popdyn's numpy ones)."""
    if c == 0:
        return 1.0
    if c == 1:
        return 1.0 if x > 0 else 0.0
    if c == 2:
        return 0.0 if x == 0 else math.copysign(1.0, x)
    if c == 3:
        return 2.0 * x
    if c == 4:
        return 0.0
    if c == 5:
        return math.exp(-x * x) * _TWO_INV_SQRT_PI
    if c == 6:
        t = math.tanh(x)
        return 1.0 - t * t
    if c == 7 or c == 9:
        s = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
        return s * (1.0 - s) if c == 7 else s
    if c == 8:
        return 0.5 * math.erfc(-x / _SQRT2) + x * math.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return math.exp(x)


@numba.njit(cache=True)
def value_slope(c, x):  # pragma: no cover - compiled
    """``(sigma(x), sigma'(x))`` sharing the work where the two share it (tanh, sigmoid: one exp or tanh)."""
    if c == 6:
        t = math.tanh(x)
        return t, 1.0 - t * t
    if c == 7:
        s = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
        return s, s * (1.0 - s)
    if c == 10:
        e = math.exp(x)
        return e, e
    return value(c, x), slope(c, x)
