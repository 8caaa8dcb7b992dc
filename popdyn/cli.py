"""The ``popdyn`` command: thin argparse over the public API.

::

    popdyn validate [model|claim ...] [--quick] [--device cpu|cuda] [--out DIR] [--force]
    popdyn bench [--quick]
    popdyn predict lora --k 8 --xi 1 --activation relu --d 2000 --lr 2.5e-4 --steps 20000 --out traj.npz
    popdyn simulate lora ... [--seeds 4] [--device cpu|cuda] --out sim.npz

Flags are the constructor's parameter names, so errors read like API errors (argparse's exit 2 with
the message). ``validate`` and ``bench`` import the ``validation`` package lazily (it ships in the
same distribution): this is the only place popdyn touches it. Progress goes to stderr; tables and
paths to stdout.
"""
from __future__ import annotations

import argparse
import sys

__all__ = ["main", "build_parser"]


def _problem_arguments(p):
    """Flags of ``lora.Problem.orthonormal`` and of predict/simulate (shared by both commands)."""
    p.add_argument("model", choices=("lora",), help="model (only lora has a CLI constructor so far)")
    p.add_argument("--k", type=int, default=8, help="LoRA width k (number of neurons)")
    p.add_argument("--xi", type=float, default=1.0, help="adapter scale xi > 0")
    p.add_argument("--activation", default="relu", help="activation name (relu, tanh, erf, he3, ...)")
    p.add_argument("--seed", type=int, default=0, help="seed of the problem instance (c, c_hat, lam)")
    p.add_argument("--d", type=int, default=2000, help="input dimension d")
    p.add_argument("--lr", type=float, default=2.5e-4, help="SGD step size eta")
    p.add_argument("--steps", type=int, default=20_000, help="number of SGD steps")
    p.add_argument("--m0", type=float, default=None, help="initial overlap m_0 (default: the model's)")
    p.add_argument("--out", required=True, help="output path (.npz; metadata stored inside as JSON)")


def build_parser():
    """The ``popdyn`` argument parser with its four sub-commands."""
    parser = argparse.ArgumentParser(prog="popdyn", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    from validation.runner import add_arguments  # lazily: popdyn never imports validation at load
    add_arguments(sub.add_parser("validate", help="hold the theory against simulation; writes REPORT.md"))
    b = sub.add_parser("bench", help="performance of theory and kernels against baselines")
    b.add_argument("--quick", action="store_true", help="small sizes")
    pr = sub.add_parser("predict", help="theory trajectory of a problem, saved as one .npz")
    _problem_arguments(pr)
    pr.set_defaults(subparser=pr)
    pr.add_argument("--convention", choices=("corrected", "paper"), default="corrected",
                    help="corrected ODE (default) or the paper's population ODE")
    s = sub.add_parser("simulate", help="finite-sample online SGD, saved as one .npz")
    _problem_arguments(s)
    s.set_defaults(subparser=s)
    s.add_argument("--seeds", type=int, default=4, help="number of independent runs")
    s.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="torch device")
    return parser


def _validate(args, parser):
    from validation import runner
    return runner.run_from_args(args, parser)


def _bench(args, parser):
    from validation import bench
    return bench.main(["--quick"] if args.quick else [])


def _problem(args, parser):
    from .models import lora
    try:
        return lora.Problem.orthonormal(args.k, args.xi, args.activation, args.seed)
    except (ValueError, TypeError, KeyError) as e:
        parser.error(str(e))


def _trajectory(args, parser):
    import popdyn
    problem = _problem(args, parser)
    options = {"d": args.d, "lr": args.lr, "steps": args.steps, "m0": args.m0}
    try:
        if args.command == "predict":
            result = popdyn.predict(problem, convention=args.convention, **options)
        else:
            result = popdyn.simulate(problem, seeds=args.seeds, device=args.device, **options)
    except (ValueError, TypeError) as e:
        parser.error(str(e))
    path = result.save(args.out)
    print(path)
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
