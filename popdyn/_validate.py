"""Parameter checks shared by every ``Problem``: one error type, one message format.

Constraints are data (sklearn's ``_parameter_constraints`` pattern): each ``Problem`` declares
``_constraints = {"field": Interval(...) | Options(...) | Integer(...) | FiniteArray(...)}`` and
calls :func:`validate` in ``__post_init__``. Every check is written so that NaN fails.
"""
from __future__ import annotations

import numbers
import operator
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["InvalidParameterError", "RegimeWarning", "Interval", "Integer", "Options",
           "FiniteArray", "Either", "validate", "check", "as_int", "hidden_constants", "regime_check"]


class InvalidParameterError(ValueError, TypeError):
    """Raised when a parameter is outside its valid range (a ValueError and a TypeError)."""


class RegimeWarning(UserWarning):
    """A theorem's regime condition does not hold; the result is computed but outside the proof."""


def _fail(owner, name, allowed, value):
    raise InvalidParameterError(
        f"The {name!r} parameter of {owner} must be {allowed}. Got {value!r} instead.")


@dataclass(frozen=True)
class Interval:
    """A real number in an interval; ``closed`` is "both", "left", "right" or "neither"."""
    low: float = -np.inf
    high: float = np.inf
    closed: str = "both"

    def describe(self):
        lb = "[" if self.closed in ("both", "left") else "("
        rb = "]" if self.closed in ("both", "right") else ")"
        return f"a float in {lb}{self.low}, {self.high}{rb}"

    def convert(self, owner, name, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            _fail(owner, name, self.describe(), value)
        v = float(value)
        lo_ok = (self.low <= v) if self.closed in ("both", "left") else (self.low < v)
        hi_ok = (v <= self.high) if self.closed in ("both", "right") else (v < self.high)
        if not (lo_ok and hi_ok):
            _fail(owner, name, self.describe(), value)
        return v


@dataclass(frozen=True)
class Integer:
    """An integer in [low, high] (numpy integers accepted, floats refused)."""
    low: int = 0
    high: float = np.inf

    def describe(self):
        return f"an int in [{self.low}, {self.high}]"

    def convert(self, owner, name, value):
        if isinstance(value, bool):
            _fail(owner, name, self.describe(), value)
        try:
            v = operator.index(value)
        except TypeError:
            _fail(owner, name, self.describe(), value)
        if not (self.low <= v <= self.high):
            _fail(owner, name, self.describe(), value)
        return v


@dataclass(frozen=True)
class Options:
    """One of a fixed set of values."""
    values: tuple

    def describe(self):
        return f"one of {list(self.values)}"

    def convert(self, owner, name, value):
        if isinstance(value, np.ndarray) or not any(value is v or value == v for v in self.values):
            _fail(owner, name, self.describe(), value)
        return value


@dataclass(frozen=True)
class FiniteArray:
    """A finite float64 array with ``ndim`` dimensions (``shape`` entries None = any)."""
    ndim: int
    shape: tuple | None = None

    def describe(self):
        return f"a finite {self.ndim}-d float array" + (f" of shape {self.shape}" if self.shape else "")

    def convert(self, owner, name, value):
        try:
            a = np.array(value, dtype=np.float64)
        except (TypeError, ValueError):
            _fail(owner, name, self.describe(), value)
        if a.ndim != self.ndim or not np.all(np.isfinite(a)):
            _fail(owner, name, self.describe(), value)
        if self.shape is not None and any(s is not None and s != n for s, n in zip(self.shape, a.shape)):
            _fail(owner, name, self.describe(), value)
        a.setflags(write=False)
        return a


@dataclass(frozen=True)
class Either:
    """A value accepted by the first of ``alternatives`` that accepts it (e.g. ``"paper"`` or a float)."""
    alternatives: tuple

    def describe(self):
        return " or ".join(a.describe() for a in self.alternatives)

    def convert(self, owner, name, value):
        for a in self.alternatives:
            try:
                return a.convert(owner, name, value)
            except InvalidParameterError:
                pass
        _fail(owner, name, self.describe(), value)


def check(owner, name, value, constraint):
    """Validate one value against one constraint; return the converted value."""
    return constraint.convert(owner, name, value)


def as_int(owner, name, value, low=0, high=np.inf):
    """Shorthand for ``check(owner, name, value, Integer(low, high))``."""
    return Integer(low, high).convert(owner, name, value)


def validate(obj, constraints=None):
    """Validate and convert every declared field of a frozen dataclass in place."""
    constraints = type(obj)._constraints if constraints is None else constraints
    owner = f"{type(obj).__module__.replace('popdyn.models.', '').split('.')[0]}.{type(obj).__name__}"
    for name, constraint in constraints.items():
        object.__setattr__(obj, name, constraint.convert(owner, name, getattr(obj, name)))


def hidden_constants(owner, consts, names):
    """The multipliers of a bound's unspecified constants: ``consts`` (a dict with keys among ``names``, values in
    (0, inf)), each missing one 1."""
    consts = {} if consts is None else consts
    if not isinstance(consts, Mapping) or set(consts) - set(names):
        raise InvalidParameterError(
            f"The 'consts' parameter of {owner} must be a dict with keys among {list(names)} and values in "
            f"(0, inf). Got {consts!r} instead.")
    return {k: check(owner, f"consts[{k!r}]", consts.get(k, 1.0), Interval(0.0, np.inf, "neither")) for k in names}


def regime_check(owner, entries, stacklevel=3):
    """A theorem's conditions as records: ``entries`` are (condition, value, bound, source, holds); one RegimeWarning
    names those that fail."""
    out = [dict(condition=c, value=float(v), bound=float(b), source=s, holds=bool(h)) for c, v, b, s, h in entries]
    failed = [e["condition"] for e in out if not e["holds"]]
    if failed:
        warnings.warn(f"{owner}: outside the theorem's regime: {'; '.join(failed)}", RegimeWarning,
                      stacklevel=stacklevel)
    return out
