"""Nulls run by the runner: a claim passes only if the theory is within its tolerance and every null it declares
is outside it, measured on the same draw; the report shows each null's number and counts the kinds apart."""
import pytest

from popdyn.validation import runner
from popdyn.validation.claims import Claim, ClaimResult, verdict


def _claim(nulls=None, kind="training", run=None):
    return Claim(id="fake.n", model="fake", title="t", source="s", metric="m", tolerance=1.0,
                 tolerance_origin="o", quick={}, full={}, run=run or (lambda size, device, out: ClaimResult(0.5)),
                 kind=kind, nulls=nulls or {})


@pytest.mark.parametrize("measured,nulls,expected", [
    (0.5, {"constant": 3.0}, "PASS"),             # theory in, null out
    (0.5, {"constant": 0.9}, "FAIL"),             # the null passes too: the claim does not discriminate
    (0.5, {}, "FAIL"),                            # a declared null was not measured
    (0.5, {"constant": float("nan")}, "FAIL"),    # nor is a NaN a rejection
    (1.5, {"constant": 3.0}, "FAIL"),             # the theory itself fails
])
def test_verdict_needs_every_declared_null_rejected(measured, nulls, expected):
    c = _claim({"constant": "a constant predictor"})
    assert verdict(c, ClaimResult(measured, nulls=nulls)) == expected


def test_a_claim_without_nulls_passes_but_is_counted_apart(tmp_path):
    plain = _claim()
    strong = Claim(**{**plain.__dict__, "id": "fake.m", "nulls": {"zero": "predict 0"},
                      "run": lambda size, device, out: ClaimResult(0.5, nulls={"zero": 2.0})})
    recs = runner.run(selected=[plain, strong], quick=True, out=tmp_path)
    assert [r["verdict"] for r in recs] == ["PASS", "PASS"]
    text = (tmp_path / "REPORT.md").read_text()
    assert "theory vs training: 2 claims, 2 PASS (1 with every null rejected, 1 without a null)" in text
    assert "**Null zero:** predict 0: 2 (rejected)" in text
    assert "none declared" in text


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        _claim(kind="vibes")


def test_every_claim_declares_its_kind_and_every_validation_claim_a_null():
    from popdyn.validation.claims import KINDS, discover
    claims = discover().values()
    assert all(c.kind in KINDS for c in claims), [c.id for c in claims if c.kind not in KINDS]
    assert all(c.nulls for c in claims if c.kind != "finding"), [c.id for c in claims if not c.nulls]
