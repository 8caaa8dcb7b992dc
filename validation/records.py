"""The stored record of every claim: ``validation/records/<claim>.json``, its quick and its full result.

A record holds, per size, what the runner measured (the theory's number, each null's number, the checks, the
verdict), the size and seeds, the claim's key at the time (:meth:`Claim.key`: a hash of its code, size and
tolerance), the machine, the commit and the date. A size that could not run here says why and which size did.
``popdyn validate --record`` (``--quick`` or ``--full``) stores each finished claim; ``python -m popdyn.validation.records``
regenerates ``docs/validation.md`` and README's validation block from the records (no claim is rerun), ``--check``
exits 1 when they disagree, ``--not-run CLAIM REASON`` records why a full size could not run here. A record whose key differs from the claim's current key is *stale*: the code or size
changed since it was measured, and the pages say so.

A claim's status is its full-size verdict when the full size ran, whatever the quick size says.
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path

from popdyn.results import atomic_write

from . import claims as _claims
from . import error_budget

__all__ = ["RECORDS", "SIZES", "store", "mark_not_run", "load", "is_stale", "status", "headline", "docs_page",
           "readme_block", "model_block", "write_pages", "main"]


def _checkout():
    """The repository whose records and pages these are: the one this package sits in (a source checkout or an
    editable install), else the current directory when it is one (an installed wheel run from a checkout)."""
    for root in (Path(__file__).resolve().parent.parent, Path.cwd()):
        if (root / "validation" / "records").is_dir() and (root / "README.md").is_file():
            return root
    return Path(__file__).resolve().parent.parent


ROOT = _checkout()
RECORDS = ROOT / "validation" / "records"
SIZES = ("quick", "full")
README, DOCS = ROOT / "README.md", ROOT / "docs" / "validation.md"
BEGIN, END = "<!-- records:begin -->", "<!-- records:end -->"
_ENV_KEYS = ("popdyn", "git_commit", "python", "numpy", "scipy", "numba", "torch", "platform", "cpus", "device")


def _path(root, claim_id):
    return Path(root) / f"{claim_id}.json"


def _read(root, claim_id):
    try:
        return json.loads(_path(root, claim_id).read_text())
    except (OSError, ValueError):
        return {}


def _header(c):
    return {"id": c.id, "model": c.model, "title": c.title, "kind": c.kind, "source": c.source, "metric": c.metric,
            "tolerance": c.tolerance, "tolerance_origin": c.tolerance_origin, "nulls": dict(c.nulls)}


def _put(root, c, size, part):
    """Replace one size of claim ``c``'s record (the header is refreshed from the registry), atomically."""
    rec = _read(root, c.id)
    rec[size] = part
    text = _text(c, rec)
    atomic_write(_path(root, c.id), lambda f: f.write(text.encode()))


def _text(c, rec):
    """A record file's text: the registry's header of claim ``c`` and the stored sizes of ``rec``."""
    return json.dumps({**_header(c), **{s: rec[s] for s in SIZES if s in rec}}, indent=1, default=repr) + "\n"


def _compact(run_rec, date):
    """The part of a runner record kept in the repository (no figure path, no traceback)."""
    res = run_rec.get("result") or {}
    env = run_rec.get("env") or {}
    out = {"verdict": run_rec["verdict"], "measured": res.get("measured"), "nulls": res.get("nulls") or {},
           "checks": res.get("checks") or {}, "message": res.get("message", ""), "size": run_rec["size"],
           "key": run_rec["key"], "elapsed_s": run_rec.get("elapsed_s"), "date": date, "host": run_rec.get("host"),
           "env": {k: env.get(k) for k in _ENV_KEYS}}
    if run_rec["verdict"] == "ERROR":
        out["error"] = run_rec.get("error", "")
    return out


def store(run_records, root=RECORDS, dates=None):
    """Store runner records (dicts from :func:`popdyn.validation.runner.run` or its ``<id>.json`` files) under their size.

    ``dates`` maps a claim id to the ISO date it finished (default: now, UTC). Returns the paths written.
    """
    _claims.discover()
    Path(root).mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    paths = []
    for r in run_records:
        c = _claims.REGISTRY[r["id"]]
        date = r.get("finished") or (dates or {}).get(c.id, now)
        _put(root, c, r["size_name"], _compact(r, date))
        paths.append(_path(root, c.id))
    return paths


def mark_not_run(claim_id, size, reason, largest, root=RECORDS):
    """Record that ``size`` of a claim could not run here (``reason``) and which size did (``largest``)."""
    _claims.discover()
    c = _claims.REGISTRY[claim_id]
    _put(root, c, size, {"verdict": "NOT RUN", "reason": reason, "largest_size_run": largest,
                         "size": c.size(size == "quick"), "key": c.key(size == "quick")})


def load(root=RECORDS):
    """``{claim id: record}`` for every registered claim (an empty dict where none is stored), registry order."""
    _claims.discover()
    return {i: _read(root, i) for i in _claims.REGISTRY}


def is_stale(rec, size):
    """The stored ``size`` result was measured with another key (code, size or tolerance) than the current one."""
    part = rec.get(size)
    return part is not None and part.get("key") != _claims.REGISTRY[rec["id"]].key(size == "quick")


def status(rec):
    """``(verdict, size)`` that decides a claim: full when it ran (PASS/FAIL/ERROR), else quick; MISSING if none."""
    for size in ("full", "quick"):
        v = (rec.get(size) or {}).get("verdict")
        if v in ("PASS", "FAIL", "ERROR"):
            return v, size
    return "MISSING", None


_KIND_NAMES = {"training": "theory vs training", "independent": "theory vs independent computation",
               "finding": "findings"}


def _count(recs, size):
    vs = [(r.get(size) or {}).get("verdict", "MISSING") for r in recs]
    parts = [f"{vs.count(v)} {v}" for v in ("PASS", "FAIL", "ERROR", "NOT RUN", "MISSING") if vs.count(v)]
    return ", ".join(parts)


def headline(records):
    """Per kind: claims, quick and full verdict counts, and the status (full where it ran) with its failures."""
    recs = [r for r in records.values() if r]
    lines = []
    for kind, name in _KIND_NAMES.items():
        group = [r for r in recs if _claims.REGISTRY[r["id"]].kind == kind]
        fails = [r["id"] for r in group if status(r)[0] != "PASS"]
        lines.append(f"- **{name}: {len(group)} claims.** Quick size: {_count(group, 'quick')}. "
                     f"Full size: {_count(group, 'full')}. "
                     + (f"Failing (full size where it ran): {', '.join(f'`{i}`' for i in fails)}."
                        if fails else "None failing."))
    stale = sorted({r["id"] for r in recs for s in SIZES if is_stale(r, s)})
    missing = [i for i, r in records.items() if not r]
    if stale:
        lines.append(f"- Stale (code changed since measured; rerun with `popdyn validate --record`): {len(stale)} "
                     f"claims.")
    if missing:
        lines.append(f"- No record: {', '.join(f'`{i}`' for i in missing)}.")
    return "\n".join(lines)


def _minutes(records, size):
    times = [p["elapsed_s"] for r in records.values() if (p := r.get(size)) and p.get("elapsed_s")]
    return f"{sum(times) / 60:.0f} min over {len(times)} claims" if times else "not run"


def _num(v):
    return "-" if v is None or v != v else f"{v:.3g}"


def _closest_null(part):
    nulls = part.get("nulls") or {}
    if not nulls:
        return "-"
    name, v = min(nulls.items(), key=lambda kv: kv[1])
    return f"{_num(v)} ({name})"


def _cells(rec, size):
    part = rec.get(size) or {}
    v = part.get("verdict", "MISSING")
    if v == "NOT RUN":
        return ["-", "-", "not run"]
    mark = " (stale)" if is_stale(rec, size) else ""
    return [_num(part.get("measured")), _closest_null(part), v + mark]


def _not_run(records):
    """One line per distinct reason a size could not run, with the claims it applies to."""
    why = {}
    for i, r in records.items():
        for size in SIZES:
            if (part := r.get(size) or {}).get("verdict") == "NOT RUN":
                why.setdefault((size, part.get("reason", "")), []).append(i)
    return [f"- {size} size not run ({len(ids)}): {reason}: {', '.join(f'`{i}`' for i in ids)}."
            for (size, reason), ids in why.items()]


def docs_page(records):
    """``docs/validation.md``: the headline, then one row per claim with both sizes, made from the records."""
    rows = ["| claim | kind | tolerance | quick: theory | quick: closest null | quick | full: theory | "
            "full: closest null | full |", "|---|---|---|---|---|---|---|---|---|"]
    for i, r in records.items():
        c = _claims.REGISTRY[i]
        rows.append(f"| `{i}` | {c.kind} | {_num(c.tolerance)} | " + " | ".join(_cells(r, "quick") + _cells(r, "full"))
                    + " |")
    dated = [p["date"] for r in records.values() for s in SIZES if (p := r.get(s)) and p.get("date")]
    first, last = (min(dated)[:10], max(dated)[:10]) if dated else ("-", "-")
    span = first if first == last else f"{first} to {last}"
    return "\n".join([
        "# Validation records", "",
        "Generated by `python -m popdyn.validation.records` from `validation/records/<claim>.json` (measured "
        f"{span}); do not edit by hand. A claim passes when the theory is within its tolerance, every check holds "
        "and every null (the theory a skeptical referee would offer instead, measured on the same draw) is outside "
        "the tolerance; the table shows the theory's number and the null closest to passing. A claim's status is "
        "its full-size verdict where the full size ran. *Stale* marks a result measured before the code, size or "
        "tolerance last changed.", "", headline(records), "", *rows, "", *_not_run(records), "",
        error_budget.markdown()])


def readme_block(records):
    """README's validation block: the headline and one line per model, from the records."""
    models = {}
    for r in records.values():
        if r:
            models.setdefault(r["model"], []).append(r)
    rows = ["| model | claims | quick size | full size |", "|---|---|---|---|"]
    rows += [f"| `{m}` | {len(rs)} | {_count(rs, 'quick')} | {_count(rs, 'full')} |" for m, rs in models.items()]
    rows += ["", "Claim time of the stored runs (one process each, summed over the claims): "
             + "; ".join(f"{size} size {_minutes(records, size)}" for size in SIZES) + "."]
    return "\n".join([BEGIN, headline(records), "", *rows, "", error_budget.statement(), "",
                      "Every claim's numbers, nulls, sizes and false-failure bound: `docs/validation.md` (generated "
                      "from `validation/records/`).", END])


def model_block(records, model):
    """The block of ``docs/<model>.md``: its claims' table (both sizes) and each claim's message at the size that
    decides it, from the records."""
    recs = [r for r in records.values() if r and r["model"] == model]
    rows = ["| claim | kind | tolerance | quick: theory | quick: closest null | quick | full: theory | "
            "full: closest null | full |", "|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for r in recs:
        c = _claims.REGISTRY[r["id"]]
        rows.append(f"| `{c.id}` | {c.kind} | {_num(c.tolerance)} | "
                    + " | ".join(_cells(r, "quick") + _cells(r, "full")) + " |")
        verdict, size = status(r)
        if size:
            notes.append(f"- `{c.id}` ({size} size, {verdict}): {r[size].get('message') or '-'}")
    return "\n".join([BEGIN, "Generated by `python -m popdyn.validation.records` from `validation/records/` (do not edit by "
                      "hand; every claim of every model: [validation.md](validation.md)).", "", *rows, "", *notes,
                      *_not_run({r["id"]: r for r in recs}), END])


def _with_block(text, block, path):
    if BEGIN not in text or END not in text:
        raise ValueError(f"{path} has no {BEGIN} ... {END} block")
    return re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, count=1, flags=re.S)


def write_pages(root=RECORDS, readme=README, docs=DOCS, check=False):
    """Regenerate (or with ``check`` compare) ``docs/validation.md``, README's block and each model page's block
    (``docs/<model>.md`` beside ``docs``); return the differing paths."""
    records = load(root)
    want = {Path(docs): docs_page(records) + "\n",
            Path(readme): _with_block(Path(readme).read_text(), readme_block(records), readme)}
    for model in dict.fromkeys(r["model"] for r in records.values() if r):
        page = Path(docs).parent / f"{model}.md"
        want[page] = _with_block(page.read_text(), model_block(records, model), page)
    for i, r in records.items():  # headers follow the registry's prose (a rewording needs no rerun)
        if r and {k: r.get(k) for k in _header(_claims.REGISTRY[i])} != json.loads(json.dumps(_header(_claims.REGISTRY[i]))):
            want[_path(root, i)] = _text(_claims.REGISTRY[i], r)
    differ = [p for p, t in want.items() if not p.exists() or p.read_text() != t]
    if not check:
        for p in differ:
            atomic_write(p, lambda f, t=want[p]: f.write(t.encode()))
    return differ


def main(argv=None):
    """``python -m popdyn.validation.records [--store DIR ...] [--not-run CLAIM REASON] [--check]``."""
    p = argparse.ArgumentParser(prog="python -m popdyn.validation.records", description=__doc__.splitlines()[0])
    p.add_argument("--store", nargs="*", type=Path, default=[], metavar="DIR",
                   help="store the runner records <id>.json found in these report folders first")
    p.add_argument("--not-run", nargs=2, metavar=("CLAIM", "REASON"),
                   help="record that CLAIM's full size could not run here and why (its quick size is the largest run)")
    p.add_argument("--check", action="store_true", help="exit 1 if the pages disagree with the records")
    args = p.parse_args(argv)
    if args.not_run:
        mark_not_run(args.not_run[0], "full", args.not_run[1], "quick")
    for d in args.store:
        runs = [json.loads(f.read_text()) for f in sorted(d.glob("*.json"))]
        runs = [r for r in runs if isinstance(r, dict) and "size_name" in r]
        dates = {r["id"]: datetime.datetime.fromtimestamp(_path(d, r["id"]).stat().st_mtime, datetime.timezone.utc)
                 .isoformat(timespec="seconds") for r in runs}
        store(runs, dates=dates)
    differ = write_pages(check=args.check)
    for path in differ:
        print(("differs from the records: " if args.check else "wrote ") + str(path))
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
