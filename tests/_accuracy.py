"""Bookkeeping for the declared-accuracy tests (tests/test_accuracy_*.py).

Each test measures ``ratio = error / declared bound`` against a high-precision reference and asserts
``ratio <= 1``. :func:`record` keeps the worst ratio per function (and where it occurred) and feeds it to
Hypothesis's ``target`` so the search climbs towards the corners; with ``POPDYN_ACCURACY_REPORT=1`` the worst
cases are printed when the run ends; ``POPDYN_ACCURACY_EXPLORE=10`` multiplies every search's ``max_examples`` by
10 (how the "measured" numbers in the docstrings' Notes were obtained, with ``POPDYN_HYPOTHESIS_PROFILE=dev``).
"""
import atexit
import math
import os

from hypothesis import target

EPS = 2.0 ** -52  # float64 unit roundoff times 2 (one ulp of 1)
WORST = {}
_EXPLORE = int(os.environ.get("POPDYN_ACCURACY_EXPLORE", "1"))


def examples(n):
    """``max_examples`` of a search: ``n`` (cheap, for CI), times POPDYN_ACCURACY_EXPLORE when exploring."""
    return n * _EXPLORE


def record(name, ratio, **where):
    """Keep the worst ``ratio`` of ``name`` with its arguments; steer Hypothesis towards larger ratios."""
    ratio = float(ratio)
    if not math.isfinite(ratio):
        ratio = math.inf
    if ratio > WORST.get(name, (-1.0, None))[0]:
        WORST[name] = (ratio, where)
    try:
        target(min(ratio, 1e300), label=name)
    except Exception:  # outside @given (explicit examples, plain tests): nothing to steer
        pass
    return ratio


def _report():
    if WORST:
        print("\nworst error / declared bound:")
        for name, (ratio, where) in sorted(WORST.items()):
            print(f"  {name:48s} {ratio:9.3g}  at {where}")


if os.environ.get("POPDYN_ACCURACY_REPORT"):
    atexit.register(_report)
