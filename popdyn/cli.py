"""The ``popdyn`` command: thin argparse over the public API.

::

    popdyn models [MODEL]                                       the catalogue of problem classes
    popdyn predict MODEL CONSTRUCTOR [--OPTION VALUE ...] --out PRED.npz
    popdyn simulate MODEL CONSTRUCTOR [--OPTION VALUE ...] --out SIM.npz [--device cuda]
    popdyn compare PRED.npz SIM.npz [--plot FIG.png] [--at T] [--no-strict]
    popdyn plot RESULT.npz --out FIG.png
    popdyn validate [model|claim ...] [--quick] [--device cpu|cuda] [--out DIR] [--force]
    popdyn bench [--quick]

``predict`` and ``simulate`` are generated from the catalogue, not written per model: ``MODEL`` is a
catalogue name (``lora``, ``icl.parity``, ...), ``CONSTRUCTOR`` one of its classmethod constructors or
``fields`` (the dataclass itself; ``popdyn predict MODEL -h`` lists them), the problem flags come from the
constructor's signature and docstring and the run flags from the problem's option table (the same table
``popdyn.predict`` checks against). A constructor parameter whose name a run option also takes is offered as
``--problem-NAME``. Values are Python literals (``--test_context "[16, 64]"``) or plain strings. ``--out`` is
checked before any work. ``validate`` and ``bench`` import the ``validation`` package lazily. Progress goes to
stderr; tables and paths to stdout.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import os
import re
import sys
from pathlib import Path

__all__ = ["main", "build_parser", "problem_classes"]

_FIELDS = "fields"


def problem_classes():
    """``{name: Problem class}`` for every problem class in the catalogue (``lora``, ``icl.parity``, ...)."""
    from .models import catalogue
    return {e.name: e.cls for e in catalogue()}


def _constructors(cls):
    """``{name: callable}``: the classmethod constructors of ``cls`` in definition order, then ``fields``."""
    from .models import constructors
    return {n: getattr(cls, n) for n in constructors(cls)} | {_FIELDS: cls}


def _literal(text):
    """A Python literal when ``text`` is one (``3``, ``0.5``, ``[1, 2]``, ``None``), else the string itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _typed(default):
    """The argparse ``type`` for a parameter with this default: float stays float (``--xi 1`` is 1.0)."""
    if isinstance(default, bool):
        return lambda s: {"true": True, "false": False}[s.lower()]
    if isinstance(default, float):
        return float
    if isinstance(default, int):
        return lambda s: int(s) if re.fullmatch(r"[+-]?\d+", s.strip()) else _literal(s)
    return _literal


def _plain(text):
    """Docstring text without reStructuredText markup: ``x`` and :role:`a.b` become x and b."""
    text = re.sub(r":\w+:`~?(?:[\w.]*\.)?([^`]+)`", r"\1", text)
    return re.sub(r"``([^`]+)``|`([^`]+)`", lambda m: m.group(1) or m.group(2), text).replace("\\", "")


def _param_help(fn):
    """``{parameter: its whole description}`` from a numpydoc Parameters section, markup removed."""
    doc = inspect.getdoc(fn) or ""
    m = re.search(r"^Parameters\n-+\n(.*?)(?:^\w[\w ]*\n-+\n|\Z)", doc, flags=re.M | re.S)
    out = {}
    if not m:
        return out
    for block in re.split(r"\n(?=\w[\w, *]* :|\w[\w, *]*\n)", m.group(1)):
        lines = block.split("\n")
        names = lines[0].split(" :")[0]
        text = " ".join(line.strip() for line in lines[1:] if line.strip())
        for n in names.split(","):
            out[n.strip().lstrip("*")] = _plain(text)
    return out


def _add_constructor_flags(parser, fn, taken, cls):
    """One flag per parameter of a constructor (help from its docstring, else the class's); a name a run option
    takes becomes ``--problem-NAME``."""
    helps, dests = _param_help(cls) | _param_help(fn), {}
    grp = parser.add_argument_group("problem")
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        flag = f"problem-{p.name}" if p.name in taken else p.name
        required = p.default is inspect.Parameter.empty
        kw = {"dest": "problem__" + p.name, "required": required, "metavar": p.name.upper(),
              "help": helps.get(p.name, "") + ("" if required else f" (default: {p.default!r})")}
        kw.update(type=_typed(p.default) if not required else _literal)
        if not required:
            kw["default"] = argparse.SUPPRESS
        grp.add_argument(f"--{flag}", **kw)
        dests[kw["dest"]] = p.name
    return dests


def _add_option_flags(parser, cls, command):
    """One flag per option of the problem's table that ``command`` takes (help and default from the table)."""
    from ._options import REQUIRED
    table = getattr(cls, "options", None)
    grp = parser.add_argument_group(f"{command} options")
    dests = {}
    for o in (table.for_call(command) if table is not None else []):
        if not o.cli:
            continue
        kw = {"dest": "option__" + o.name, "required": o.required, "help": o.describe(), "metavar": o.name.upper()}
        kw["type"] = _literal if o.default is REQUIRED or o.default is None else _typed(o.default)
        if not o.required:
            kw["default"] = argparse.SUPPRESS
        grp.add_argument(f"--{o.name}", **kw)
        dests[kw["dest"]] = o.name
    return dests


def _entry(model):
    from .api import entries
    return entries()[model]


def _model_parser(command, model, constructor, cls):
    """The parser of ``popdyn COMMAND MODEL CONSTRUCTOR``: constructor flags, then run-option flags."""
    make = _constructors(cls)[constructor]
    summary = _entry(model).summary
    p = argparse.ArgumentParser(prog=f"popdyn {command} {model} {constructor}",
                                description=f"{model}: {summary}. Problem from "
                                            f"{cls.__name__}{'' if constructor == _FIELDS else '.' + constructor}: "
                                            + _plain((inspect.getdoc(make) or "").split("\n")[0]))
    table = getattr(cls, "options", None)
    taken = {o.name for o in table.for_call(command)} if table is not None else set()
    ctor = _add_constructor_flags(p, make, taken, cls)
    run = _add_option_flags(p, cls, command)
    p.add_argument("--out", required=True, help="output path (.npz, metadata inside as JSON); checked first")
    if command == "simulate":
        p.add_argument("--device", default="cpu", help="torch device: cpu, cuda or cuda:N (default: cpu)")
    return p, make, ctor, run


def _check_out(path, parser):
    """Refuse an output path that cannot be written, before any work."""
    out = Path(path)
    folder = out.parent if str(out.parent) else Path(".")
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if out.is_dir() or not probe.is_dir() or not os.access(probe, os.W_OK):
        parser.error(f"argument --out: cannot write {str(path)!r} (folder {str(folder)!r} is not writable)")


def build_parser():
    """The ``popdyn`` argument parser with its sub-commands."""
    parser = argparse.ArgumentParser(prog="popdyn", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    from popdyn.validation.runner import add_arguments  # lazily: popdyn never imports validation at load
    add_arguments(sub.add_parser("validate", help="hold the theory against simulation; writes REPORT.md"))
    b = sub.add_parser("bench", help="performance of theory and kernels against baselines")
    b.add_argument("--quick", action="store_true", help="small sizes")
    m = sub.add_parser("models", help="the catalogue: every problem class, its constructors, options and "
                                      "observables")
    m.add_argument("model", nargs="?", help="one catalogue name (all when omitted)")
    c = sub.add_parser("compare", help="compare a saved prediction with a saved simulation",
                       description="Print the metrics of popdyn.compare(PRED, SIM) and optionally draw them.")
    c.add_argument("prediction", help="a .npz written by popdyn predict")
    c.add_argument("simulation", help="a .npz written by popdyn simulate")
    c.add_argument("--plot", metavar="FIG", help="draw the comparison to this image file")
    c.add_argument("--at", type=float, help="simulation time to compare a static prediction at (default: the last)")
    c.add_argument("--no-strict", dest="strict", action="store_false",
                   help="warn instead of refusing results made for different problems or options")
    pl = sub.add_parser("plot", help="draw a saved prediction or simulation")
    pl.add_argument("result", help="a .npz written by popdyn predict or simulate")
    pl.add_argument("--out", required=True, help="image file to write")
    names = list(problem_classes())
    for command, text in (("predict", "theory of a problem"), ("simulate", "finite-sample training of a problem")):
        s = sub.add_parser(command, help=f"{text}, saved as one .npz", add_help=False,
                           description=f"{text}: popdyn {command} MODEL CONSTRUCTOR --flags --out PATH "
                                       f"(`popdyn {command} MODEL -h` lists the constructors, "
                                       f"`popdyn {command} MODEL CONSTRUCTOR -h` the flags)")
        s.add_argument("-h", "--help", action="store_true", dest="want_help", help="show this help and exit")
        s.add_argument("model", nargs="?", choices=names, help="catalogue name: " + ", ".join(names))
        s.add_argument("constructor", nargs="?", help="a classmethod constructor of the model's Problem, or 'fields'")
        s.add_argument("rest", nargs=argparse.REMAINDER, help="--OPTION VALUE ... --out PATH")
        s.set_defaults(subparser=s)
    return parser


def _validate(args, parser):
    from popdyn.validation import runner
    return runner.run_from_args(args, parser)


def _bench(args, parser):
    from popdyn.validation import bench
    return bench.main(["--quick"] if args.quick else [])


def _models(args, parser):
    from .models import catalogue
    rows = [e for e in catalogue() if args.model in (None, e.name)]
    if not rows:
        parser.error(f"argument model: {args.model!r} is not in the catalogue "
                     f"({', '.join(e.name for e in catalogue())})")
    print("\n\n".join(str(e) for e in rows))
    return 0


def _constructor_list(model, cls):
    lines = [f"{model}: {_entry(model).summary}", "constructors:"]
    for name, fn in _constructors(cls).items():
        first = "the dataclass fields" if name == _FIELDS else _plain((inspect.getdoc(fn) or "").split("\n")[0])
        lines.append(f"  {name:<22} {first}")
    return "\n".join(lines)


def _trajectory(args, parser):
    args.want_help = args.want_help or any(a in ("-h", "--help") for a in args.rest[:1])
    if args.want_help and args.rest[:1] and args.rest[0] in ("-h", "--help"):
        args.rest = args.rest[1:]
    if args.model is None:
        if args.want_help:
            parser.print_help()
            return 0
        parser.error("the following arguments are required: model")
    cls = problem_classes()[args.model]
    if args.constructor is None:
        if not args.want_help:
            parser.error(f"the following arguments are required: constructor\n{_constructor_list(args.model, cls)}")
        print(parser.format_usage() + "\n" + _constructor_list(args.model, cls))
        return 0
    if args.constructor not in _constructors(cls):
        parser.error(f"argument constructor: invalid choice {args.constructor!r} for {args.model} "
                     f"(choose from {', '.join(_constructors(cls))})")
    p, make, ctor, run = _model_parser(args.command, args.model, args.constructor, cls)
    rest = list(args.rest) + (["-h"] if args.want_help else [])
    ns = vars(p.parse_args(rest))
    _check_out(ns["out"], p)
    import popdyn
    try:
        problem = make(**{name: ns[dest] for dest, name in ctor.items() if dest in ns})
        options = {name: ns[dest] for dest, name in run.items() if dest in ns}
        if args.command == "simulate":
            options["device"] = ns["device"]
        result = getattr(popdyn, args.command)(problem, **options)
    except (ValueError, TypeError, KeyError) as e:
        p.error(str(e))
    print(result.save(ns["out"]))
    return 0


def _compare(args, parser):
    import popdyn
    try:
        comp = popdyn.compare(popdyn.load(args.prediction), popdyn.load(args.simulation), strict=args.strict,
                              at=args.at)
    except (ValueError, OSError, KeyError) as e:
        parser.error(str(e))
    print(comp)
    if args.plot:
        print(comp.plot(args.plot))
    return 0


def _plot(args, parser):
    import popdyn
    _check_out(args.out, parser)
    try:
        result = popdyn.load(args.result)
    except (ValueError, OSError, KeyError) as e:
        parser.error(str(e))
    print(result.plot(args.out))
    return 0


_COMMANDS = {"validate": _validate, "bench": _bench, "models": _models, "predict": _trajectory,
             "simulate": _trajectory, "compare": _compare, "plot": _plot}


def main(argv=None):
    """Entry point of the ``popdyn`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    sub = getattr(args, "subparser", None)
    if sub is None:
        sub = parser._subparsers._group_actions[0].choices[args.command]
    status = _COMMANDS[args.command](args, sub)  # errors show the sub-usage
    return 0 if status is None else int(status)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
