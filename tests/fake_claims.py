"""Picklable fake claims for the runner's tests (a process pool or a subprocess must import them).

Each run appends its id to the file named by ``POPDYN_FAKE_LOG`` (when set) and sleeps
``size["sleep"]`` seconds, so a test can see which claims ran and interrupt a run part-way.
"""
import os
import time
from pathlib import Path

from popdyn.validation.claims import Claim, ClaimResult


def _run(cid, value, size, outdir):
    log = os.environ.get("POPDYN_FAKE_LOG")
    if log:
        with open(log, "a") as f:
            f.write(cid + "\n")
    time.sleep(size.get("sleep", 0.0))
    if value is None:
        raise RuntimeError("boom in " + cid)
    from popdyn.plot import plot_curves
    fig = plot_curves([0, 1], {"y": [0, size["n"]]}, Path(outdir) / f"{cid}.png")
    return ClaimResult(measured=value, figure=str(fig), table=[{"n": size["n"], "value": value}],
                       message=f"{cid} measured {value}")


def run_pass(size, device, outdir):
    return _run("pass", 0.5, size, outdir)


def run_fail(size, device, outdir):
    return _run("fail", 2.0, size, outdir)


def run_raise(size, device, outdir):
    return _run("raise", None, size, outdir)


def make(name, run, sleep=0.0):
    """A fake claim ``fake.<name>`` with tolerance 1 (pass measures 0.5, fail 2.0, raise raises)."""
    return Claim(id=f"fake.{name}", model="fake", title=f"fake claim {name}", source="none", metric="value",
                 tolerance=1.0, tolerance_origin="by construction", quick={"n": 1, "sleep": sleep},
                 full={"n": 2, "sleep": sleep}, run=run)


CLAIMS = [make("pass", run_pass), make("fail", run_fail), make("raise", run_raise)]


def run_threads(size, device, outdir):
    """Measures the threads the worker runs: numba's, torch's (when installed) and the environment's for BLAS."""
    import numba
    threads = {"numba": numba.get_num_threads(), "OMP_NUM_THREADS": int(os.environ.get("OMP_NUM_THREADS", "0"))}
    try:
        import torch
        threads["torch"] = torch.get_num_threads()
    except ImportError:
        pass
    return ClaimResult(measured=max(threads.values()), figure=None, table=[threads], message=repr(threads))
