"""The ``popdyn`` command: thin argparse over the public API.

::

    popdyn validate [model|claim ...] [--quick] [--device cpu|cuda] [--out DIR] [--force]
    popdyn bench [--quick]
    popdyn predict MODEL CONSTRUCTOR [--PARAM VALUE ...] --out PATH
    popdyn simulate MODEL CONSTRUCTOR [--PARAM VALUE ...] --out PATH
    popdyn predict lora orthonormal --k 8 --xi 1 --d 2000 --lr 2.5e-4 --steps 20000 --out traj.npz

``predict`` and ``simulate`` are generated from the models, not written per model: ``MODEL`` is every
``Problem`` class that ``popdyn.predict`` knows (``lora``, ``icl``, ``icl.parity``, ...), ``CONSTRUCTOR``
is one of its classmethod constructors or ``fields`` (the dataclass itself), and the flags are the
parameter names of the constructor and of the model's ``predict`` or ``simulate`` (a run option whose
name a constructor parameter already takes gets the command as prefix: ``--predict-seed``). Values are
Python literals (``--M "[16, 64]"``, ``--lam "[1, -1]"``) or plain strings. So a new model joins the
command by registering ``predict``, and errors read like API errors (argparse's exit 2 with the
message). ``validate`` and ``bench`` import the ``validation`` package lazily: this is the only place
popdyn touches it. Progress goes to stderr; tables and paths to stdout.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import pkgutil
import re
import sys

__all__ = ["main", "build_parser", "problem_classes"]

_FIELDS = "fields"


def problem_classes():
    """``{name: Problem class}`` for every problem ``popdyn.predict`` has a theory for.

    The name is the model's (``lora``) for a class exported as ``Problem``, else ``model.<prefix>`` from
    the exported name (``ParityProblem`` of ``icl`` -> ``icl.parity``); an alias (``domain_gen.Problem`` for
    ``SpuriousFeatureModel``) counts by the name it is exported under.
    """
    from . import models
    from .api import predict
    out = {}
    for info in pkgutil.iter_modules(models.__path__):
        mod = importlib.import_module(f"{models.__name__}.{info.name}")
        for name, obj in vars(mod).items():
            if (inspect.isclass(obj) and dataclasses.is_dataclass(obj) and name.endswith("Problem")
                    and predict.dispatch(obj) is not predict.dispatch(object)):
                prefix = name[:-len("Problem")].lower()
                out[info.name + (f".{prefix}" if prefix else "")] = obj
    return dict(sorted(out.items()))


def _constructors(cls):
    """``{name: callable}``: the classmethod constructors of ``cls`` in definition order, then ``fields``."""
    made = {n: getattr(cls, n) for n, v in vars(cls).items() if isinstance(v, classmethod) and not n.startswith("_")}
    return made | {_FIELDS: cls}


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
        return int
    return _literal


def _param_help(fn):
    """``{parameter: first line of its description}`` from a numpydoc Parameters section."""
    doc = inspect.getdoc(fn) or ""
    found = re.findall(r"^(\w+(?:, \w+)*) : [^\n]*\n\s+([^\n]+)", doc, flags=re.M)
    return {n: text.strip() for names, text in found for n in names.split(", ")}


def _add_flags(parser, fn, *, skip=0, rename=None, taken=(), group=None):
    """Add one flag per parameter of ``fn`` (after the first ``skip``); return ``{dest: parameter}``."""
    params = list(inspect.signature(fn).parameters.values())[skip:]
    helps, dests = _param_help(fn), {}
    grp = parser.add_argument_group(group) if group else parser
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in ("device", "progress_bar"):
            continue
        flag = f"{rename}-{p.name}" if rename and p.name in taken else p.name
        required = p.default is inspect.Parameter.empty
        kw = {"dest": flag.replace("-", "_"), "required": required,
              "help": helps.get(p.name, "") + ("" if required else f" (default: {p.default!r})")}
        if not required:
            kw.update(type=_typed(p.default), default=argparse.SUPPRESS)
        else:
            kw.update(type=_literal)
        grp.add_argument(f"--{flag}", **kw)
        dests[kw["dest"]] = p.name
    return dests


def _run_function(command, cls):
    """The model's registered ``predict`` or ``simulate`` implementation (imports the sim twin)."""
    from .api import _sim_module_name, _simulate, predict
    if command == "predict":
        return predict.dispatch(cls)
    try:
        importlib.import_module(_sim_module_name(cls))
    except ImportError as e:
        raise SystemExit(f"popdyn simulate needs torch: pip install 'popdyn[sim]' ({e})")
    return _simulate.dispatch(cls)


def _model_parser(command, model, constructor, cls):
    """The parser of ``popdyn COMMAND MODEL CONSTRUCTOR``: constructor flags, then run flags."""
    make = _constructors(cls)[constructor]
    p = argparse.ArgumentParser(prog=f"popdyn {command} {model} {constructor}",
                                description=(inspect.getdoc(make) or "").split("\n")[0])
    ctor = _add_flags(p, make, skip=0, group=f"problem: {cls.__name__}" + (
        "" if constructor == _FIELDS else f".{constructor}"))
    run = _add_flags(p, _run_function(command, cls), skip=1, rename=command, taken=set(ctor.values()),
                     group=f"{command} options")
    p.add_argument("--out", required=True, help="output path (.npz; metadata stored inside as JSON)")
    if command == "simulate":
        p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="torch device")
    return p, make, ctor, run


def build_parser():
    """The ``popdyn`` argument parser with its four sub-commands."""
    parser = argparse.ArgumentParser(prog="popdyn", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    from validation.runner import add_arguments  # lazily: popdyn never imports validation at load
    add_arguments(sub.add_parser("validate", help="hold the theory against simulation; writes REPORT.md"))
    b = sub.add_parser("bench", help="performance of theory and kernels against baselines")
    b.add_argument("--quick", action="store_true", help="small sizes")
    models = problem_classes()
    for command, text in (("predict", "theory of a problem"), ("simulate", "finite-sample training of a problem")):
        s = sub.add_parser(command, help=f"{text}, saved as one .npz",
                           description=f"{text}: popdyn {command} MODEL CONSTRUCTOR --flags --out PATH "
                                       f"(`popdyn {command} MODEL CONSTRUCTOR -h` lists the flags)")
        s.add_argument("model", choices=list(models), help="model")
        s.add_argument("constructor", help="a classmethod constructor of the model's Problem, or 'fields'")
        s.add_argument("rest", nargs=argparse.REMAINDER, help="--PARAM VALUE ... --out PATH")
        s.set_defaults(subparser=s)
    return parser


def _validate(args, parser):
    from validation import runner
    return runner.run_from_args(args, parser)


def _bench(args, parser):
    from validation import bench
    return bench.main(["--quick"] if args.quick else [])


def _trajectory(args, parser):
    cls = problem_classes()[args.model]
    if args.constructor not in _constructors(cls):
        parser.error(f"argument constructor: invalid choice {args.constructor!r} for {args.model} "
                     f"(choose from {', '.join(_constructors(cls))})")
    p, make, ctor, run = _model_parser(args.command, args.model, args.constructor, cls)
    ns = vars(p.parse_args(args.rest))
    try:
        problem = make(**{name: ns[dest] for dest, name in ctor.items() if dest in ns})
        options = {name: ns[dest] for dest, name in run.items() if dest in ns}
        fn = _run_function(args.command, cls)
        accepted = inspect.signature(fn).parameters
        if args.command == "simulate":
            options |= {"device": ns["device"]} | ({"progress_bar": True} if "progress_bar" in accepted else {})
        result = fn(problem, **options)
    except (ValueError, TypeError, KeyError) as e:
        p.error(str(e))
    print(result.save(ns["out"]))
    return 0


_COMMANDS = {"validate": _validate, "bench": _bench, "predict": _trajectory, "simulate": _trajectory}


def main(argv=None):
    """Entry point of the ``popdyn`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    status = _COMMANDS[args.command](args, getattr(args, "subparser", parser))  # errors show the sub-usage
    return 0 if status is None else int(status)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
