"""Run claims, store each result at once, print a pass/fail table and write ``REPORT.md``.

``python -m validation [model|claim ...] [--quick] [--device cpu|cuda] [--out DIR] [--force]``
(also ``popdyn validate``). Each finished claim is written atomically to ``<out>/<id>.json``, keyed
by a hash of its inputs (:meth:`Claim.key`), so an interrupted run keeps what it finished and a
rerun skips claims already done at the same size (``--force`` reruns them; an ERROR is always
rerun). A claim that raises is recorded as ERROR with its message; the runner goes on.
``REPORT.md`` covers every stored result in ``<out>``, summary table first. Exit status: 0 iff
every selected claim passed, 1 otherwise, 2 on a usage error, 130 when interrupted.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

from popdyn.results import atomic_write

from . import claims as _claims

__all__ = ["run", "write_report", "load_records", "main", "DEFAULT_OUT"]

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


def _run_one(c, quick, device, out):
    """Run claim ``c``; return its record (verdict PASS, FAIL or ERROR), never raise (but Ctrl-C)."""
    size = c.size(quick)
    rec = {"id": c.id, "model": c.model, "title": c.title, "source": c.source, "metric": c.metric,
           "tolerance": c.tolerance, "tolerance_origin": c.tolerance_origin, "key": c.key(quick),
           "size_name": "quick" if quick else "full", "size": size, "device": device}
    t0 = time.perf_counter()
    try:
        res = c.run(size, device, Path(out) / "figures")
        result = res.to_dict()
        if result["figure"] is not None:
            fig = Path(result["figure"]).resolve()
            result["figure"] = str(fig.relative_to(Path(out).resolve())) if fig.is_relative_to(
                Path(out).resolve()) else str(fig)
        rec.update(result=result, verdict=_claims.verdict(c, res))
    except Exception as e:
        rec.update(result=None, verdict="ERROR", error=f"{type(e).__name__}: {e}",
                   traceback=traceback.format_exc(limit=6))
    rec["elapsed_s"] = round(time.perf_counter() - t0, 3)
    return rec


def _save(out, rec):
    text = json.dumps(rec, indent=1, default=repr).encode()
    atomic_write(_record_path(out, rec["id"]), lambda f: f.write(text))


def run(names=(), *, quick=False, device="cpu", out=DEFAULT_OUT, force=False, selected=None):
    """Run the claims named by model or id (all when empty); return their records in order.

    ``selected`` (a list of :class:`Claim`) overrides the name lookup. Each record is saved to
    ``<out>/<id>.json`` as soon as its claim finishes; ``REPORT.md`` is rewritten at the end (also
    after Ctrl-C, which is then re-raised).
    """
    selected = _claims.select(names) if selected is None else list(selected)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    records, bar = [], _progress(len(selected))
    try:
        for c in selected:
            bar.set_description(c.id)
            rec = None if force else _stored(out, c, quick)
            if rec is None:
                rec = _run_one(c, quick, device, out)
                _save(out, rec)
            else:
                rec["skipped"] = True
            records.append(rec)
            bar.update(1)
    finally:
        bar.close()
        write_report(out)
    return records


def _measured(rec):
    res = rec.get("result")
    return "-" if res is None else f"{res['measured']:.4g}"


def _table(records):
    rows = ["| claim | measured | tolerance | verdict |", "|---|---|---|---|"]
    rows += [f"| {r['id']} | {_measured(r)} | {r['tolerance']:.4g} | {r['verdict']} |" for r in records]
    return "\n".join(rows)


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
             f"- **Source:** {rec['source']}", f"- **Metric:** {rec['metric']}",
             f"- **Tolerance:** {rec['tolerance']:.4g} ({rec['tolerance_origin']})",
             f"- **Measured:** {_measured(rec)}", *_checks(rec), f"- **Verdict:** {rec['verdict']}",
             f"- **Size:** {rec['size_name']} `{json.dumps(rec['size'], sort_keys=True)}`, "
             f"device {rec['device']}, {rec['elapsed_s']:.1f} s", ""]
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


def _cell(v):
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def write_report(out):
    """Write ``<out>/REPORT.md`` (summary table, then one section per stored claim); return its path."""
    recs = load_records(out)
    counts = {v: sum(r["verdict"] == v for r in recs) for v in ("PASS", "FAIL", "ERROR")}
    text = "\n".join(["# popdyn validation report", "",
                      f"{len(recs)} claims: {counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['ERROR']} ERROR.",
                      "", _table(recs), ""] + [line for r in recs for line in _section(r)])
    path = Path(out) / "REPORT.md"
    atomic_write(path, lambda f: f.write(text.encode()))
    return path


def add_arguments(parser):
    """The runner's options, shared by ``python -m validation`` and ``popdyn validate``."""
    parser.add_argument("names", nargs="*", metavar="model|claim", help="models or claim ids (default: all)")
    parser.add_argument("--quick", action="store_true", help="small sizes (each claim well under a minute)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="torch device for simulations")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="report folder (default: ./validation/report under the current directory)")
    parser.add_argument("--force", action="store_true", help="rerun claims already stored at this size")
    return parser


def main(argv=None, *, prog="python -m validation"):
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
    try:
        records = run(quick=args.quick, device=args.device, out=args.out, force=args.force, selected=selected)
    except KeyboardInterrupt:
        print(f"interrupted; finished claims are kept in {args.out}", file=sys.stderr)
        return 130
    print(_table(records))
    print(f"report: {Path(args.out) / 'REPORT.md'}")
    return 0 if all(r["verdict"] == "PASS" for r in records) else 1
