"""Option tables: what ``predict`` and ``simulate`` of a problem accept, declared once.

Each ``Problem`` class declares ``options = options_table(Option(...), ...)``: name, constraint, default and
one line of help, and which calls take it (``"predict"``, ``"simulate"`` or both). ``popdyn.predict`` and
``popdyn.simulate`` resolve the caller's keywords against the table before any work (an unknown name, a
retired name, a missing required option or a value outside its constraint is an ``InvalidParameterError``
naming the option and what it accepts); the CLI builds its flags and help from the same table, and the
property suite draws from it. An option taken by both calls has one default. ``match=True`` marks an option
that defines the experiment: a prediction and a simulation are comparable only when it is equal in both.

``Observable`` declares what a result returns: label and unit (for axes), the axes of its array, and the
coordinate it runs over, if any.
"""
from __future__ import annotations

from dataclasses import dataclass

from ._validate import InvalidParameterError
from .glossary import RETIRED, TERMS

__all__ = ["REQUIRED", "Option", "Observable", "OptionTable", "options_table", "common"]


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()
_CALLS = ("predict", "simulate")


@dataclass(frozen=True)
class Option:
    """One run option: ``name``, ``constraint`` (a ``popdyn._validate`` constraint, or None for any value),
    ``default`` (``REQUIRED`` when the caller must give it), one line of ``help``, the calls that take it, and
    ``match`` (True when a prediction and a simulation must agree on it to be compared)."""
    name: str
    constraint: object = None
    default: object = REQUIRED
    help: str = ""
    calls: tuple = _CALLS
    match: bool = False
    cli: bool = True

    def __post_init__(self):
        if not self.help or self.help.endswith(("...", ",")):
            raise ValueError(f"option {self.name!r} needs one whole line of help")
        if self.name in RETIRED:
            raise ValueError(f"option name {self.name!r} is retired: use {RETIRED[self.name]}")
        if not set(self.calls) <= set(_CALLS) or not self.calls:
            raise ValueError(f"option {self.name!r}: calls must be a non-empty subset of {_CALLS}")

    @property
    def required(self):
        return self.default is REQUIRED

    def describe(self):
        """The help line with the accepted values and the default, for errors and the CLI."""
        allowed = self.constraint.describe() if self.constraint is not None else "any value"
        default = "required" if self.required else f"default {self.default!r}"
        return f"{self.help} ({allowed}; {default})"


@dataclass(frozen=True)
class Observable:
    """What a result's observable is: ``label`` in words, ``unit`` ("" when none), ``axes``: the names of its
    array's axes after the seed and time axes (``("K", "M")`` for an overlap matrix), ``coord``: the coordinate
    of the result (``result.coords``) it runs over when it has no time axis (``"ridge"``; one of ``axes``, or the
    first axis when ``axes`` is empty), and ``log``: its values span decades, so plots draw them on a log y axis
    (a coordinate that spans decades gets a log x axis by itself)."""
    label: str
    unit: str = ""
    axes: tuple = ()
    coord: str | None = None
    log: bool = False

    def axis_label(self):
        return self.label + (f" ({self.unit})" if self.unit else "")


class OptionTable:
    """The options of one problem class, in declaration order."""

    def __init__(self, options):
        self.options = {}
        for o in options:
            if o.name in self.options:
                raise ValueError(f"option {o.name!r} declared twice")
            self.options[o.name] = o

    def __iter__(self):
        return iter(self.options.values())

    def __contains__(self, name):
        return name in self.options

    def __getitem__(self, name):
        return self.options[name]

    def for_call(self, call):
        """The options ``call`` ("predict" or "simulate") takes, in order."""
        return [o for o in self if call in o.calls]

    def shared(self):
        """The options both calls take."""
        return [o for o in self if set(o.calls) == set(_CALLS)]

    def matched(self):
        """The options a prediction and a simulation must agree on to be compared."""
        return [o for o in self if o.match]

    def resolve(self, owner, call, given):
        """Check ``given`` against the table for ``call``; return every option of the call, defaults filled.

        Raises ``InvalidParameterError`` naming the option: unknown (with the accepted names), retired (with its
        replacement), missing when required (with its help), or outside its constraint.
        """
        accepted = {o.name: o for o in self.for_call(call)}
        for name in given:
            if name in accepted:
                continue
            if name in RETIRED:
                raise InvalidParameterError(f"{owner} has no option {name!r}: it is now {RETIRED[name]}.")
            other = "predict" if call == "simulate" else "simulate"
            hint = f" ({name!r} is an option of {other} only)" if name in self.options else ""
            raise InvalidParameterError(f"{owner} has no option {name!r}{hint}; it accepts "
                                        f"{', '.join(accepted) or 'no options'}.")
        out = {}
        for name, o in accepted.items():
            if name not in given:
                if o.required:
                    raise InvalidParameterError(f"{owner} needs the option {name!r}: {o.describe()}.")
                out[name] = o.default
                continue
            value = given[name]
            if o.constraint is not None and not (value is None and o.default is None):
                value = o.constraint.convert(owner, name, value)
            out[name] = value
        return out


def options_table(*options):
    """An :class:`OptionTable` from :class:`Option` entries (a tuple of options may be spliced in with ``*``)."""
    return OptionTable(options)


def common(*names, **defaults):
    """The run options every simulation shares, with the glossary's help: ``common("seeds", "seed", ...)``.

    ``defaults`` overrides a default (``common("seeds", seeds=2)``); the constraint and help come from here.
    """
    from ._validate import Integer, Options
    table = {
        "seeds": Option("seeds", Integer(1), 4, TERMS["seeds"].meaning, calls=("simulate",)),
        "seed": Option("seed", Integer(0), 0, TERMS["seed"].meaning, calls=("simulate",)),
        "device": Option("device", None, "cpu", "torch device of the simulation: 'cpu', 'cuda' or 'cuda:N'",
                         calls=("simulate",), cli=False),
        "dtype": Option("dtype", None, None, TERMS["dtype"].meaning + " (checked by the simulation)",
                        calls=("simulate",), cli=False),
        "progress": Option("progress", Options((True, False, None)), None, TERMS["progress"].meaning,
                           calls=("simulate",), cli=False),
    }
    out = []
    for n in names:
        o = table[n]
        if n in defaults:
            o = Option(o.name, o.constraint, defaults[n], o.help, o.calls, o.match, o.cli)
        out.append(o)
    return tuple(out)
