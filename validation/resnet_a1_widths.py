r"""App. A.1 of [AllenZhu19] at the paper's widths: ``python -m popdyn.validation.resnet_a1_widths [--device cuda]
[--workers W] [--quick]``.

A standalone script (no claim imports it). The paper trains F(W; x) = a^T relu(W x) by SGD on a 6-bit parity,
searching lr and weight decay, at d = 40, N = 5000 with m up to 100000 (best test error 0.69, Fig. 3(a)) and at
d = 100, N = 50000, batch 100 with m up to 50000 (best test error 0.98, Fig. 3(b)). The claim
``resnet.sgd_not_min_norm`` stops at m = 2000 and d = 40 (CPU); this script runs the paper's widths with
:func:`popdyn.sim.resnet.minnorm.sgd` (one (lr, m) per task, all weight decays at once; the tasks of a GPU overlap
on ``--workers`` processes) and writes, where it is run:

* ``resnet_a1_widths.json``: one row per (d, m, lr, wd): the norm ||W||_F / sqrt d, train and test MSE (the test a
  fresh Monte Carlo set, its standard error), diverged, wall time. Rewritten atomically after each task; a rerun
  skips the tasks it holds, so an interrupted run loses only the tasks in flight.
* ``resnet_a1_widths.png``: per setting, every run's test and train MSE against its norm (one colour per width),
  beside the min-norm network, the paper's best test error and the zero predictor's MSE 1.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from popdyn.results import atomic_write

__all__ = ["SETTINGS", "QUICK", "tasks", "run_task", "main"]

#: The paper's two settings (App. A.1, Fig. 3): d, N, batch, the widths, and its best SGD test error. The lr grid is
#: the paper's {1, 2, 5} x 10^-j around the claim's working lrs, the weight decays 0 and the claim's 1e-4; the
#: epochs (A.1 states none) are the claim's 60 + 60 at d = 40 and 20 + 20 at d = 100 (10x the steps per epoch).
SETTINGS = [{"d": 40, "N": 5000, "batch": 50, "ms": [200, 1000, 10_000, 100_000], "lrs": [0.1, 1.0, 5.0],
             "wds": [0.0, 1e-4], "epochs": 60, "test": 10_000, "paper_best": 0.69},
            {"d": 100, "N": 50_000, "batch": 100, "ms": [1000, 10_000, 50_000], "lrs": [0.1, 1.0, 5.0],
             "wds": [0.0, 1e-4], "epochs": 20, "test": 10_000, "paper_best": 0.98}]
#: A CPU smoke run of the same code paths.
QUICK = [{"d": 40, "N": 500, "batch": 50, "ms": [20, 100], "lrs": [1.0], "wds": [0.0, 1e-4], "epochs": 2,
          "test": 1000, "paper_best": 0.69},
         {"d": 100, "N": 1000, "batch": 100, "ms": [50], "lrs": [1.0], "wds": [0.0], "epochs": 1, "test": 1000,
          "paper_best": 0.98}]
_OUT = "resnet_a1_widths"


def tasks(settings):
    """One task per (setting, m, lr), the widest first (they take longest)."""
    out = [{k: s[k] for k in ("d", "N", "batch", "wds", "epochs", "test")} | {"m": m, "lr": lr}
           for s in settings for m in s["ms"] for lr in s["lrs"]]
    return sorted(out, key=lambda t: -t["m"] * t["N"])


def _name(t):
    return f"d{t['d']}_m{t['m']}_lr{t['lr']:g}"


def run_task(t, device="cpu"):
    """Rows (one per weight decay) of one task."""
    import torch

    from popdyn.sim.resnet import minnorm

    start = time.perf_counter()
    r = minnorm.sgd(d=t["d"], N=t["N"], m=t["m"], lrs=[t["lr"]], wds=t["wds"], epochs=t["epochs"], batch=t["batch"],
                    test=t["test"], device=device, dtype="float32")
    wall = time.perf_counter() - start
    if str(device).startswith("cuda"):
        torch.cuda.empty_cache()
    keys = ("norm", "train_mse", "test_mse", "test_se")
    return [{"task": _name(t), "d": t["d"], "N": t["N"], "batch": t["batch"], "m": t["m"], "epochs": t["epochs"],
             "lr": t["lr"], "wd": float(r["wd"][i]), "diverged": bool(r["diverged"][i]), "wall_s": round(wall, 2),
             "device": str(device)} | {k: float(r[k][i]) for k in keys} for i in range(len(r["wd"]))]


def _save(rows, path):
    atomic_write(path, lambda f: f.write(json.dumps(rows, indent=1, allow_nan=True).encode()))


def figure(rows, settings, path):
    """Per setting, every run's (norm, MSE): test filled, train open, one colour per width; the min-norm network's
    (9.7, 0.12), the paper's best test error and the zero predictor's MSE 1 as references."""
    from popdyn.plot import legend_outside, save_figure, subplots

    fig, axes = subplots(len(settings), panel_size=(5.0, 3.8))
    colour = {m: f"C{i}" for i, m in enumerate(sorted({m for s in settings for m in s["ms"]}))}   # one per width
    best = {}
    for ax, s in zip(axes, settings):
        mine = [r for r in rows if r["d"] == s["d"] and np.isfinite(r["test_mse"])]
        for m in s["ms"]:
            sel = [r for r in mine if r["m"] == m]
            if sel:
                norm = [r["norm"] for r in sel]
                ax.plot(norm, [r["test_mse"] for r in sel], "o", color=colour[m], label=f"test, m = {m}")
                ax.plot(norm, [r["train_mse"] for r in sel], "^", color=colour[m], mfc="none", label=f"train, m = {m}")
        best[s["d"]] = min((r["test_mse"] for r in mine), default=np.nan)
        ax.plot([9.7], [0.12], "k*", ms=11, label="min-norm network (App. A.1)")
        ax.axhline(s["paper_best"], color="k", ls=":", label=f"paper's best SGD test {s['paper_best']}")
        ax.axhline(1.0, color="0.6", ls="--", label="predicting 0 (MSE 1)")
        ax.set_yscale("symlog", linthresh=1e-2)
        ax.set(xscale="log", ylim=(0, None), xlabel="||W||_F / sqrt d", ylabel="MSE",
               title=f"d = {s['d']}, N = {s['N']}: best test {best[s['d']]:.3f}")
        legend_outside(ax)
    title = ("App. A.1 at the paper's widths: SGD's best test MSE "
             + ", ".join(f"{v:.3f} (d = {d})" for d, v in best.items())
             + "; paper " + ", ".join(f"{s['paper_best']}" for s in settings))
    return save_figure(fig, path, title=title)


def _finished(todo, device, workers):
    """``(task, rows)`` as each task finishes: in this process, or on ``workers`` spawned processes."""
    if workers <= 1:
        yield from ((t, run_task(t, device)) for t in todo)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(run_task, t, device): t for t in todo}
        for f in as_completed(futures):
            yield futures[f], f.result()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--workers", type=int, default=1, help="processes (a GPU runs several tasks side by side)")
    ap.add_argument("--quick", action="store_true", help="a CPU smoke run of the same code paths")
    ap.add_argument("--out", default=".", help="folder for the JSON and the figure (default: here)")
    args = ap.parse_args(argv)
    settings = QUICK if args.quick else SETTINGS
    out = Path(args.out)
    path = out / f"{_OUT}.json"
    rows = json.loads(path.read_text()) if path.is_file() else []
    done = {r["task"] for r in rows}
    todo = [t for t in tasks(settings) if _name(t) not in done]
    print(f"{len(todo)} tasks to run ({len(done)} stored in {path})", flush=True)
    try:
        for t, new in _finished(todo, args.device, args.workers):
            rows += new
            _save(rows, path)
            print(f"done {_name(t)} ({len(rows)} rows)", flush=True)
    finally:
        if rows:
            print(f"wrote {path} and {figure(rows, settings, out / f'{_OUT}.png')}", flush=True)
    return rows


if __name__ == "__main__":
    main()
