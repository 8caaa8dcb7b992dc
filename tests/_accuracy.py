"""Bookkeeping for the declared-accuracy tests (tests/test_accuracy_*.py).

Each test measures ``ratio = error / declared bound`` against a high-precision reference and asserts
``ratio <= 1``. :func:`record` keeps the worst ratio per function (and where it occurred) and feeds it to
Hypothesis's ``target`` so the search climbs towards the corners; with ``POPDYN_ACCURACY_REPORT=1`` the worst
cases are printed when the run ends; ``POPDYN_ACCURACY_EXPLORE=10`` multiplies every search's ``max_examples`` by
10 (how the "measured" numbers in the docstrings' Notes were obtained, with ``POPDYN_HYPOTHESIS_PROFILE=dev``);
``POPDYN_ACCURACY_RECORD=docs/accuracy.json`` merges the worst cases into that file (replacing the entries of the
test files run), from which ``python docs/accuracy_table.py`` writes the table of docs/accuracy.md.
"""
import atexit
import itertools
import json
import math
import os
import sys
from fractions import Fraction

import mpmath as mp
import numpy as np
from hypothesis import target

EPS = 2.0 ** -52  # float64 unit roundoff times 2 (one ulp of 1)
WORST = {}
_EXPLORE = int(os.environ.get("POPDYN_ACCURACY_EXPLORE", "1"))


def examples(n):
    """``max_examples`` of a search: ``n`` (cheap, for CI), times POPDYN_ACCURACY_EXPLORE when exploring."""
    return n * _EXPLORE


def record(key, ratio, **where):
    """Keep the worst ``ratio`` of ``key`` (a function) with its arguments; steer Hypothesis towards larger ratios."""
    ratio = float(ratio)
    if not math.isfinite(ratio):
        ratio = math.inf
    if ratio > WORST.get(key, (-1.0, None))[0]:
        WORST[key] = (ratio, {"test": os.path.basename(sys._getframe(1).f_code.co_filename), **where})
    try:
        target(min(ratio, 1e300), label=key)
    except Exception:  # outside @given (explicit examples, plain tests): nothing to steer
        pass
    return ratio


_GL = {}


def _gl_panel_rule(n=16):
    """n-point Gauss-Legendre nodes and weights on [-1, 1] at 30 digits (Newton-polished numpy nodes), cached."""
    if n not in _GL:
        with mp.workdps(34):
            P = lambda t: mp.legendre(n, t)  # noqa: E731
            nodes = []
            for t0 in np.polynomial.legendre.leggauss(n)[0]:
                t = mp.mpf(t0)
                for _ in range(3):
                    t -= P(t) / mp.diff(P, t)
                nodes.append((t, 2 / ((1 - t * t) * mp.diff(P, t) ** 2)))
            _GL[n] = nodes
    return _GL[n]


def coeffs_mp(f, kmax, kinks=(), L=18.0):
    """Hermite coefficients mu_0..mu_kmax = int f h_k phi and ||f|| = (int f^2 phi)^(1/2) of an mpmath function f
    at 30 digits: 16-point Gauss-Legendre on panels of width <= 1 (h_60 oscillates with wavelength 0.8) split at the
    kinks, over |x| <= L (beyond, |f h_k| phi <= 1.09 |f| e^(-x^2/4) by Cramer's bound: L = 18 + 2b leaves < 1e-32
    of a function growing like e^(b x)), with h_0..h_kmax by the recurrence in mpmath at each node."""
    with mp.workdps(30):
        edges = sorted({-L, L, *[float(c) for c in kinks if abs(c) < L]})
        mu, norm = [mp.mpf(0)] * (kmax + 1), mp.mpf(0)
        rec = [(mp.sqrt(k), 1 / mp.sqrt(k + 1)) for k in range(kmax + 1)]
        for lo, hi in zip(edges[:-1], edges[1:]):
            m = max(1, math.ceil(hi - lo))
            for j in range(m):
                p0, p1 = mp.mpf(lo) + (hi - lo) * mp.mpf(j) / m, mp.mpf(lo) + (hi - lo) * mp.mpf(j + 1) / m
                for t, wt in _gl_panel_rule():
                    x = (p0 + p1) / 2 + (p1 - p0) / 2 * t
                    fx = f(x)
                    fw = fx * (p1 - p0) / 2 * wt * mp.npdf(x)
                    norm += fx * fw
                    hm1, h = mp.mpf(0), mp.mpf(1)
                    for k, (sk, rk) in enumerate(rec):
                        mu[k] += fw * h
                        hm1, h = h, (x * h - sk * hm1) * rk
        return mu, mp.sqrt(norm)


def _report():
    if WORST:
        print("\nworst error / declared bound:")
        for name, (ratio, where) in sorted(WORST.items()):
            print(f"  {name:48s} {ratio:9.3g}  at {where}")


if os.environ.get("POPDYN_ACCURACY_REPORT"):
    atexit.register(_report)


def _save(path):
    """Merge :data:`WORST` into the JSON at ``path``, written atomically: the entries of the test files run now are
    replaced, and within this run the larger ratio per function wins."""
    old = json.load(open(path)) if os.path.exists(path) else {}
    ran = {where["test"] for _, where in WORST.values()}
    old = {name: r for name, r in old.items() if r["where"].get("test") not in ran}
    for name, (ratio, where) in WORST.items():
        if name not in old or ratio > old[name]["ratio"]:
            old[name] = {"ratio": ratio,
                         "where": {k: repr(v) if not isinstance(v, (int, float, str)) else v for k, v in where.items()}}
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(dict(sorted(old.items())), f, indent=1)
    os.replace(tmp, path)


if os.environ.get("POPDYN_ACCURACY_RECORD"):
    atexit.register(_save, os.environ["POPDYN_ACCURACY_RECORD"])


def hinge_vertices(rows):
    """Candidate optima of min_a sum_s max(0, 1 - <rows_s, a>) for n = len(rows[0]) <= 2, exactly (Fractions): a = 0
    and every vertex where n of the margins equal 1 (the LP's vertices; a line of optima is not covered)."""
    n = len(rows[0])
    cands = [[Fraction(0)] * n]
    for combo in itertools.combinations(range(len(rows)), n):
        M = [rows[c] for c in combo]
        if n == 1 and M[0][0] != 0:
            cands.append([1 / M[0][0]])
        elif n == 2:
            det = M[0][0] * M[1][1] - M[0][1] * M[1][0]
            if det != 0:
                cands.append([(M[1][1] - M[0][1]) / det, (M[0][0] - M[1][0]) / det])
    return cands
