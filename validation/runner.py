"""Run claims, store each result at once, print a pass/fail table and write ``REPORT.md``.

``python -m popdyn.validation [model|claim ...] [--quick | --full] [--device cpu|cuda] [--out DIR] [--resume]
[--record] [--jobs N | --scheduler ADDRESS]`` (also ``popdyn validate``). Each finished claim is written
atomically to ``<out>/<id>.json`` (with its figure) the moment it finishes, keyed by a hash of its
inputs and sources (:meth:`Claim.key`). ``--resume`` skips claims whose stored PASS/FAIL matches the
current key, so an interrupted run loses no finished claim. The command runs claims on one local process
per core (``--jobs N``: on N; ``--jobs 1``: one after another) or on a Dask cluster (``--scheduler``); the
records and the report are the same apart from timings and hosts. ``--record`` also stores each result in the repository's records
(:mod:`popdyn.validation.records`). A claim that raises is recorded as ERROR; the runner goes on.
``REPORT.md`` covers every stored result in ``<out>``: where and how it ran, the summary table, one
section per claim. ``--out`` defaults to ``./validation/report`` under the current directory.
Exit status: 0 iff every selected claim passed, 1 otherwise, 2 on a usage error, 130 when interrupted
(Ctrl-C: finished claims and the partial report are kept).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from importlib import metadata
from pathlib import Path

import popdyn

from popdyn.results import atomic_write

from . import claims as _claims
from . import error_budget

__all__ = ["run", "write_report", "load_records", "environment", "headline", "main", "DEFAULT_OUT"]

DEFAULT_OUT = Path("validation") / "report"  # under the current directory, never inside the package


def _progress(total):
    """A progress bar on stderr: tqdm when installed, else a plain counter line."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is installed here; the fallback is trivial
        return _Counter(total)
    return tqdm(total=total, file=sys.stderr, unit="claim", dynamic_ncols=True)


class _Counter:
    def __init__(self, total):
        self.total, self.n = total, 0

    def set_description(self, text):
        print(f"[{self.n}/{self.total}] {text}", file=sys.stderr, flush=True)

    def update(self, n=1):
        self.n += n

    def close(self):
        print(f"[{self.n}/{self.total}] done", file=sys.stderr, flush=True)


def _record_path(out, claim_id):
    return Path(out) / f"{claim_id}.json"


def _stored(out, c, quick):
    """The stored record of claim ``c`` at this size, or None when absent, stale or an ERROR."""
    path = _record_path(out, c.id)
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return rec if rec.get("key") == c.key(quick) and rec.get("verdict") in ("PASS", "FAIL") else None


def _git_commit():
    """The git commit of popdyn's source tree (with ``+dirty`` for uncommitted changes), or None."""
    root = Path(popdyn.__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def environment(device="cpu"):
    """Where and how claims run: popdyn version and commit, Python and library versions, machine, device."""
    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None
    env = {"popdyn": popdyn.__version__, "git_commit": _git_commit(), "python": platform.python_version(),
           **{name: version(name) for name in ("numpy", "scipy", "numba", "torch")},
           "platform": platform.platform(), "cpus": os.cpu_count(), "device": device}
    if device == "cuda":
        try:
            import torch
            env["device"] = f"cuda ({torch.cuda.get_device_name(0)})"
        except Exception as e:  # no torch or no GPU: the claims will say so as ERRORs
            env["device"] = f"cuda (unavailable: {type(e).__name__})"
    return env


def _skeleton(c, quick, device):
    """The parts of a claim's record known before it runs."""
    size = c.size(quick)
    return {"id": c.id, "model": c.model, "title": c.title, "source": c.source, "metric": c.metric,
            "kind": c.kind, "nulls": dict(c.nulls),
            "tolerance": c.tolerance, "tolerance_origin": c.tolerance_origin, "key": c.key(quick),
            "size_name": "quick" if quick else "full", "size": size, "device": device}


def _execute(c, size, device, out):
    """Run claim ``c`` (in this process or a worker); return the result part of its record, never raise."""
    t0 = time.perf_counter()
    part = {"host": socket.gethostname()}
    try:
        res = c.run(size, device, Path(out) / "figures")
        result = res.to_dict()
        if result["figure"] is not None:
            fig = Path(result["figure"]).resolve()
            result["figure"] = str(fig.relative_to(Path(out).resolve())) if fig.is_relative_to(
                Path(out).resolve()) else str(fig)
        part.update(result=result, verdict=_claims.verdict(c, res))
    except Exception as e:
        part.update(result=None, verdict="ERROR", error=f"{type(e).__name__}: {e}",
                    traceback=traceback.format_exc(limit=6))
    part["elapsed_s"] = round(time.perf_counter() - t0, 3)
    part["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return part


def _save(out, rec):
    text = json.dumps(rec, indent=1, default=repr).encode()
    atomic_write(_record_path(out, rec["id"]), lambda f: f.write(text))


_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")


def cores():
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _limit_threads(n):
    """Worker start-up: torch and numba use ``n`` threads (BLAS and OpenMP read the environment it was spawned with)."""
    import numba
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(n)


def _executor(jobs, scheduler):
    """``(executor, close)``: None (serial), a local process pool of ``jobs``, or a Dask client's executor.

    The pool's workers are fresh interpreters (spawned, not forked) that share the cores: each runs
    ``cores() // jobs`` threads, so ``jobs`` claims never oversubscribe the machine."""
    if scheduler:
        try:
            from distributed import Client
        except ImportError as e:
            raise ImportError("popdyn validate --scheduler needs Dask: pip install 'popdyn[dask]'") from e
        client = Client(scheduler)
        return client.get_executor(), client.close
    if jobs and jobs > 1:
        import multiprocessing
        threads = max(1, cores() // jobs)
        saved = {v: os.environ.get(v) for v in _THREAD_VARS}
        os.environ.update({v: str(threads) for v in _THREAD_VARS})   # read by the workers as they start
        pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_limit_threads,
                                   initargs=(threads,))

        def close():
            pool.shutdown(wait=False, cancel_futures=True)
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old
        return pool, close
    return None, lambda: None


def _longest_first(claims, quick):
    """Claims by their stored run time at this size, longest first (unknown times first): on a pool the long ones
    start at once and the short ones fill in, so the wall time nears the longest claim or the total / jobs."""
    from . import records

    def secs(c):
        t = (records._read(records.RECORDS, c.id).get("quick" if quick else "full") or {}).get("elapsed_s")
        return math.inf if t is None else t
    return sorted(claims, key=secs, reverse=True)


def run(names=(), *, quick=False, device="cpu", out=DEFAULT_OUT, resume=False, selected=None, jobs=1,
        scheduler=None, record=False):
    """Run the claims named by model or id (all when empty); return their records in selection order.

    ``selected`` (a list of :class:`Claim`) overrides the name lookup. With ``resume``, a claim whose
    stored PASS/FAIL record has the current key is not rerun. Each record is saved to ``<out>/<id>.json``
    as soon as its claim finishes; ``REPORT.md`` is rewritten at the end (also after Ctrl-C, which is
    then re-raised). ``jobs > 1`` runs claims on a local process pool (``None``: one process per core, at most one
    per claim, the command's default), ``scheduler`` on a Dask cluster.
    ``record`` also stores each finished result in the repository's records (:mod:`popdyn.validation.records`).
    """
    selected = _claims.select(names) if selected is None else list(selected)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    env = environment(device)
    records, bar, todo = {}, _progress(len(selected)), []
    for c in selected:
        rec = _stored(out, c, quick) if resume else None
        if rec is None:
            todo.append(c)
        else:
            records[c.id] = rec | {"skipped": True}
            bar.update(1)
    jobs = min(cores(), len(todo)) if jobs is None else jobs
    (ex, close), pending = _executor(jobs, scheduler), {}
    try:
        if ex is None:
            for c in todo:
                bar.set_description(c.id)
                records[c.id] = _finish(out, c, quick, device, env, _execute(c, c.size(quick), device, out), record)
                bar.update(1)
        else:
            pending = {ex.submit(_execute, c, c.size(quick), device, out): c for c in _longest_first(todo, quick)}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    c = pending.pop(f)
                    try:
                        part = f.result()
                    except Exception as e:  # the worker itself failed (killed, unpicklable claim)
                        part = {"result": None, "verdict": "ERROR", "error": f"{type(e).__name__}: {e}",
                                "elapsed_s": None, "host": None}
                    records[c.id] = _finish(out, c, quick, device, env, part, record)
                    bar.set_description(c.id)
                    bar.update(1)
    except KeyboardInterrupt:
        for f in pending:
            f.cancel()
        raise
    finally:
        close()
        bar.close()
        write_report(out, env)
    return [records[c.id] for c in selected]


def _finish(out, c, quick, device, env, part, record=False):
    """Join a claim's result with its skeleton and the environment, save it atomically (and in the repository's
    records with ``record``), return it."""
    rec = _skeleton(c, quick, device) | part | {"env": env}
    _save(out, rec)
    if record:
        from . import records
        records.store([rec])
    return rec


def _measured(rec):
    res = rec.get("result")
    return "-" if res is None else f"{res['measured']:.4g}"


def _null_values(rec):
    """``{null: value}`` measured for a record (NaN where a declared null was not measured)."""
    res = rec.get("result") or {}
    got = res.get("nulls") or {}
    return {n: got.get(n, float("nan")) for n in (rec.get("nulls") or {})}


def _nulls_cell(rec):
    """The nulls' values against the tolerance: the closest one (smallest), or 'none' when none is declared."""
    vals = _null_values(rec)
    if not vals:
        return "none"
    name, v = min(vals.items(), key=lambda kv: (kv[1] == kv[1], kv[1]))  # NaN first: a null not measured
    mark = "rejected" if v == v and v > rec["tolerance"] else "NOT rejected"
    return f"{len(vals)}; closest {name} {v:.4g} ({mark})"


def _table(records):
    rows = ["| claim | kind | measured | tolerance | nulls | verdict |", "|---|---|---|---|---|---|"]
    rows += [f"| {r['id']} | {r.get('kind') or '-'} | {_measured(r)} | {r['tolerance']:.4g} | {_nulls_cell(r)} | "
             f"{r['verdict']} |" for r in records]
    return "\n".join(rows)


def headline(records):
    """The counts a reader sees first: per kind, PASS / FAIL / ERROR, and how many passing claims have a
    null that was rejected (the others show agreement but not that the theory is needed)."""
    lines = []
    for kind in _claims.KINDS + (None,):
        recs = [r for r in records if r.get("kind") == kind]
        if not recs:
            continue
        n = {v: sum(r["verdict"] == v for r in recs) for v in ("PASS", "FAIL", "ERROR")}
        with_null = sum(r["verdict"] == "PASS" and bool(r.get("nulls")) for r in recs)
        name = {"training": "theory vs training", "independent": "theory vs independent computation",
                "finding": "findings", None: "not yet classified"}[kind]
        lines.append(f"- {name}: {len(recs)} claims, {n['PASS']} PASS ({with_null} with every null rejected, "
                     f"{n['PASS'] - with_null} without a null), {n['FAIL']} FAIL, {n['ERROR']} ERROR")
    return "\n".join(lines)


def load_records(out):
    """Every stored record in ``out``, registered claims first in registry order, then the rest by id."""
    recs = {}
    for p in sorted(Path(out).glob("*.json")):
        try:
            rec = json.loads(p.read_text())
        except ValueError:
            continue
        if isinstance(rec, dict) and "verdict" in rec and "id" in rec:
            recs[rec["id"]] = rec
    order = [i for i in _claims.REGISTRY if i in recs] + sorted(i for i in recs if i not in _claims.REGISTRY)
    return [recs[i] for i in order]


def _checks(rec):
    checks = (rec.get("result") or {}).get("checks") or {}
    return [f"- **Checks:** " + "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in checks.items())] if checks else []


def _section(rec):
    lines = [f"## {rec['id']}: {rec['title']}", "",
             f"- **Kind:** {rec.get('kind') or 'not yet classified'}",
             f"- **Source:** {rec['source']}", f"- **Metric:** {rec['metric']}",
             f"- **Tolerance:** {rec['tolerance']:.4g} ({rec['tolerance_origin']})",
             f"- **Measured (theory):** {_measured(rec)}", *_null_lines(rec), *_checks(rec),
             f"- **Verdict:** {rec['verdict']}",
             f"- **Size:** {rec['size_name']} `{json.dumps(rec['size'], sort_keys=True)}`",
             *_seeds(rec), f"- **Ran:** device {rec['device']} on {rec.get('host')}, {_ran(rec)}", ""]
    res = rec.get("result")
    if res is None:
        return lines + ["```", rec.get("error", ""), "```", ""]
    if res.get("message"):
        lines += [res["message"], ""]
    if res.get("table"):
        keys = list(res["table"][0])
        lines += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        lines += ["| " + " | ".join(_cell(row.get(k)) for k in keys) + " |" for row in res["table"]]
        lines.append("")
    if res.get("figure"):
        lines += [f"![{rec['id']}]({res['figure']})", ""]
    return lines


def _null_lines(rec):
    declared = rec.get("nulls") or {}
    if not declared:
        return ["- **Nulls:** none declared (agreement only: nothing shows the theory is needed)"]
    vals = _null_values(rec)
    return [f"- **Null {n}:** {declared[n]}: {vals[n]:.4g} "
            f"({'rejected' if vals[n] == vals[n] and vals[n] > rec['tolerance'] else 'NOT rejected'})"
            for n in declared]


def _seeds(rec):
    size = rec["size"]
    seeds = {k: size[k] for k in ("seed", "seeds", "n_seeds") if k in size}
    return [f"- **Seeds:** " + ", ".join(f"{k} = {v}" for k, v in seeds.items())] if seeds else []


def _ran(rec):
    env = rec.get("env") or {}
    wall = "-" if rec.get("elapsed_s") is None else f"{rec['elapsed_s']:.1f}"
    return (f"wall {wall} s; popdyn {env.get('popdyn')} ({env.get('git_commit')}), "
            f"torch {env.get('torch')}") + (" (stored result, not rerun)" if rec.get("skipped") else "")


def _cell(v):
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _env_table(env):
    rows = ["| item | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in env.items()]
    return "\n".join(rows)


def write_report(out, env=None):
    """Write ``<out>/REPORT.md`` (where it ran, summary table, one section per stored claim); return its path.

    ``env`` is the environment of the run that writes it (:func:`environment`); a claim that ran
    elsewhere or earlier (``--resume``) carries its own environment in its section.
    """
    recs = load_records(out)
    env = environment() if env is None else env
    counts = {v: sum(r["verdict"] == v for r in recs) for v in ("PASS", "FAIL", "ERROR")}
    wall = sum(r.get("elapsed_s") or 0.0 for r in recs)
    text = "\n".join(["# popdyn validation report", "",
                      f"{len(recs)} claims: {counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['ERROR']} ERROR; "
                      f"wall {wall:.1f} s of claim time.", "", headline(recs), "",
                      "A claim PASSES when the theory is within its tolerance, every sub-check holds and every null "
                      "it declares (the theory a skeptical referee would offer instead, measured on the same draw) "
                      "is outside the tolerance.", "", "## Where it ran", "", _env_table(env), "",
                      "## Summary", "", _table(recs), "", error_budget.markdown()]
                     + [line for r in recs for line in _section(r)])
    path = Path(out) / "REPORT.md"
    atomic_write(path, lambda f: f.write(text.encode()))
    return path


def add_arguments(parser):
    """The runner's options, shared by ``python -m popdyn.validation`` and ``popdyn validate``."""
    parser.add_argument("names", nargs="*", metavar="model|claim", help="models or claim ids (default: all)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small sizes (most claims well under a minute)")
    size.add_argument("--full", action="store_true", help="the claims' full sizes (the default)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="torch device for simulations")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="report folder (default: ./validation/report under the current directory)")
    parser.add_argument("--resume", action="store_true",
                        help="skip claims whose stored PASS/FAIL matches the current code and size")
    parser.add_argument("--record", action="store_true",
                        help="also store each result in validation/records/ (the repository's records; see "
                             "python -m popdyn.validation.records)")
    where = parser.add_mutually_exclusive_group()
    parser.add_argument("--list", action="store_true",
                        help="list the selected claims (kind, status, stored claim times) and run nothing")
    where.add_argument("--jobs", type=int, default=None,
                       help="run claims on N local processes (default: one per core; 1: serially)")
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="run claims on the Dask cluster at ADDRESS (tcp://host:8786; needs popdyn[dask])")
    return parser


def _listing(selected):
    """One line per claim: id, kind, status (the deciding size's verdict) and the claim times of its stored runs."""
    from . import records

    def secs(part):
        return f"{part['elapsed_s']:.0f} s" if part and part.get("elapsed_s") else "-"

    lines = [f"{'claim':45s} {'kind':12s} {'status':14s} {'quick':>7s} {'full':>7s}"]
    for c in selected:
        rec = records._read(records.RECORDS, c.id)
        verdict, size = records.status(rec)
        lines.append(f"{c.id:45s} {c.kind:12s} {verdict + (f' ({size})' if size else ''):14s} "
                     f"{secs(rec.get('quick')):>7s} {secs(rec.get('full')):>7s}")
    return "\n".join(lines)


def main(argv=None, *, prog="python -m popdyn.validation"):
    """Parse ``argv``, run, print the pass/fail table and the report path; return the exit status."""
    parser = add_arguments(argparse.ArgumentParser(prog=prog, description="Hold popdyn's theory against simulation."))
    args = parser.parse_args(argv)
    return run_from_args(args, parser)


def run_from_args(args, parser):
    """Run the parsed ``args``; unknown names are a usage error (exit 2 through ``parser.error``)."""
    try:
        selected = _claims.select(args.names)
    except KeyError as e:
        parser.error(e.args[0])
    if args.list:
        print(_listing(selected))
        return 0
    try:
        if args.jobs is not None and args.jobs < 1:
            parser.error(f"argument --jobs: must be >= 1, got {args.jobs}")
        records = run(quick=args.quick, device=args.device, out=args.out, resume=args.resume, selected=selected,
                      jobs=args.jobs, scheduler=args.scheduler, record=args.record)
    except KeyboardInterrupt:
        print(f"interrupted; finished claims are kept in {args.out}", file=sys.stderr)
        return 130
    print(_table(records))
    print(f"report: {Path(args.out) / 'REPORT.md'}")
    return 0 if all(r["verdict"] == "PASS" for r in records) else 1
