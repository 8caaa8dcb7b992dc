"""The stored validation records: every claim has one at both sizes, README and docs/validation.md are made from
them (regenerate with ``python -m popdyn.validation.records``), and a record whose code changed reads as stale."""
import json

import pytest

from popdyn.validation import claims, records
from popdyn.validation.claims import Claim, ClaimResult, _code

claims.discover()
RECORDS = records.load()


@pytest.mark.parametrize("claim_id", list(claims.REGISTRY))
def test_every_claim_has_a_record_at_both_sizes(claim_id):
    rec = RECORDS[claim_id]
    assert rec, f"no validation/records/{claim_id}.json: run popdyn validate {claim_id} --record (and --quick)"
    for size in records.SIZES:
        part = rec.get(size)
        assert part is not None, f"{claim_id}: no {size}-size result stored"
        assert part["verdict"] in ("PASS", "FAIL", "ERROR", "NOT RUN")
        if part["verdict"] == "NOT RUN":  # says why, and which size did run
            assert part["reason"] and part["largest_size_run"] in records.SIZES
        else:
            assert part["env"]["git_commit"] and part["date"] and part["key"] and part["size"]
            assert set(part["nulls"]) == set(claims.REGISTRY[claim_id].nulls) or part["verdict"] != "PASS"


def test_readme_and_docs_agree_with_the_records():
    """In a fresh interpreter: the pages are checked against the stored records and the code on disk, not against
    a registry that earlier tests of this session may have touched. ``-P`` (Python >= 3.11): the installed popdyn,
    not the checkout's folder, which holds no ``popdyn/validation`` (it installs from ``validation/``)."""
    import subprocess
    import sys
    safe = ["-P"] if sys.version_info >= (3, 11) else []
    proc = subprocess.run([sys.executable, *safe, "-m", "popdyn.validation.records", "--check"], capture_output=True,
                          text=True, cwd=records.ROOT)
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}: run python -m popdyn.validation.records"


def test_claim_prose_does_not_enter_the_key_but_code_does(tmp_path):
    base = ('"""Doc."""\nfrom popdyn.validation.claims import claim\n\n'
            '@claim(id="x.y", model="x", title="{t}", source="Theorem 1", metric="m", tolerance=0.1,\n'
            '       tolerance_origin="o", quick={{}}, full={{}}, kind="training", nulls={{"zero": "{n}"}})\n'
            'def run(size, device, outdir):\n    """Run."""\n    return {v}  # a comment\n')

    def write(name, **kw):
        (tmp_path / name).write_text(base.format(**kw))
        return _code(tmp_path / name)
    a = write("a.py", t="A title", n="the zero predictor", v="1")
    assert write("b.py", t="Another title, citing Lemma 2", n="predict 0", v="1") == a  # prose only
    assert write("c.py", t="A title", n="the zero predictor", v="2") != a                # code
    base = base.replace('nulls={{"zero"', 'nulls={{"one"')
    assert write("d.py", t="A title", n="the zero predictor", v="1") != a                  # a null's name


def _fake_claim():
    return Claim(id="lora.fake", model="lora", title="t", source="s", metric="m", tolerance=1.0, tolerance_origin="o",
                 quick={"n": 1}, full={"n": 10}, run=lambda *a: ClaimResult(0.0), kind="training", nulls={"zero": "z"})


def _run_record(c, quick, verdict, measured):
    return {"id": c.id, "size_name": "quick" if quick else "full", "size": c.size(quick), "key": c.key(quick),
            "verdict": verdict, "elapsed_s": 1.0, "host": "h", "finished": "2026-01-01T00:00:00+00:00",
            "result": {"measured": measured, "nulls": {"zero": 3.0}, "checks": {}, "message": "msg"},
            "env": {"git_commit": "abc", "popdyn": "0.1.0"}}


def test_store_keeps_both_sizes_and_full_decides_the_status(tmp_path, monkeypatch):
    c = _fake_claim()
    monkeypatch.setitem(claims.REGISTRY, c.id, c)
    monkeypatch.setattr(records.error_budget, "markdown", lambda: "")  # the fake claim has no budget entry
    records.store([_run_record(c, True, "PASS", 0.5)], root=tmp_path)
    rec = json.loads((tmp_path / "lora.fake.json").read_text())
    assert rec["quick"]["measured"] == 0.5 and "full" not in rec and records.status(rec) == ("PASS", "quick")
    records.store([_run_record(c, False, "FAIL", 2.0)], root=tmp_path)
    rec = json.loads((tmp_path / "lora.fake.json").read_text())
    assert rec["quick"]["verdict"] == "PASS" and records.status(rec) == ("FAIL", "full")  # full decides
    assert rec["full"]["date"] == "2026-01-01T00:00:00+00:00" and rec["title"] == "t"
    assert not records.is_stale(rec, "quick")
    rec["quick"]["key"] = "0" * 16                                   # measured with other code
    assert records.is_stale(rec, "quick") and "PASS (stale)" in records.docs_page({c.id: rec})
    records.mark_not_run(c.id, "full", "over 600 s on 2 cores", "quick", root=tmp_path)
    rec = json.loads((tmp_path / "lora.fake.json").read_text())
    assert rec["full"]["verdict"] == "NOT RUN" and records.status(rec) == ("PASS", "quick")
    assert "full size not run (1): over 600 s on 2 cores: `lora.fake`" in records.docs_page({c.id: rec})


def test_headline_counts_each_kind_at_each_size(tmp_path, monkeypatch):
    c = _fake_claim()
    monkeypatch.setitem(claims.REGISTRY, c.id, c)
    records.store([_run_record(c, True, "PASS", 0.5), _run_record(c, False, "FAIL", 2.0)], root=tmp_path)
    text = records.headline(records.load(tmp_path) | {c.id: json.loads((tmp_path / "lora.fake.json").read_text())})
    line = next(x for x in text.splitlines() if "theory vs training" in x)
    assert "Quick size: 1 PASS" in line and "Full size: 1 FAIL" in line and "`lora.fake`" in line
