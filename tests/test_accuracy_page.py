"""docs/accuracy.md shows the table that docs/accuracy.json makes, and every recorded worst case is within its bound."""
import json
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_page_is_the_record():
    rc = subprocess.run([sys.executable, str(DOCS / "accuracy_table.py"), "--check"]).returncode
    assert rc == 0, "docs/accuracy.md is not what docs/accuracy.json makes: run python docs/accuracy_table.py"


def test_recorded_worst_cases_meet_their_bounds():
    record = json.loads((DOCS / "accuracy.json").read_text())
    over = {name: r["ratio"] for name, r in record.items() if not r["ratio"] <= 1}
    assert len(record) > 100 and not over, over
