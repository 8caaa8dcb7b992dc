"""The documentation site builds without a warning (``python -m sphinx -W``), its gallery not executed.

Skipped when Sphinx is not installed (``pip install -e '.[docs]'``). The build runs in a subprocess: Sphinx's
autodoc mocks torch while it imports the documented modules, which must not leak into the test process.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
for _ext in ("myst_parser", "numpydoc", "furo", "sphinx_gallery", "matplotlib"):
    pytest.importorskip(_ext)

ROOT = Path(__file__).resolve().parents[1]


def test_site_builds_without_warnings(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "POPDYN_DOCS_GALLERY"}
    env["MPLBACKEND"] = "Agg"
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "html")]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"sphinx failed ({proc.returncode}):\n{proc.stderr[-6000:]}"
    html = tmp_path / "html"
    for page in ("index", "guide/loop", "lora", "validation", "references", "api/popdyn", "api/models_lora",
                 "auto_gallery/index", "auto_gallery/plot_lora"):
        assert (html / f"{page}.html").is_file(), page
    lora = (html / "lora.html").read_text(encoding="utf-8")
    assert "<table" in lora and "\\(" in lora          # tables and MathJax inline math rendered
    refs = (html / "references.html").read_text(encoding="utf-8")
    assert 'id="dayi25"' in refs and "Dayi" in refs
