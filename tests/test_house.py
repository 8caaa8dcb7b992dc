"""House rules that a machine can check: every public closed form documents its formula, regime and source.

Walks ``popdyn.models`` (as sklearn's ``discovery.py`` walks sklearn) and the core math modules.
"""
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import popdyn.models

CORE = ["popdyn.hermite", "popdyn.gaussian", "popdyn.polar", "popdyn.activations", "popdyn.kernels", "popdyn.dynamics"]


def _modules():
    names = list(CORE)
    for info in pkgutil.walk_packages(popdyn.models.__path__, prefix="popdyn.models."):
        names.append(info.name)
    return names


def _public_functions():
    for name in _modules():
        mod = importlib.import_module(name)
        assert hasattr(mod, "__all__"), f"{name} has no __all__"
        for attr in mod.__all__:
            obj = getattr(mod, attr)
            if inspect.isfunction(obj) and obj.__module__ == name:
                yield f"{name}.{attr}", obj


FUNCTIONS = dict(_public_functions())


@pytest.mark.parametrize("qualname", sorted(FUNCTIONS))
def test_docstring_has_source_and_regime(qualname):
    doc = inspect.getdoc(FUNCTIONS[qualname]) or ""
    assert doc, f"{qualname} has no docstring"
    if qualname.startswith("popdyn.models.") and not qualname.rsplit(".", 1)[1].startswith("check_"):
        # input checks (check_*) shared by predict and simulate compute no formula: no source, no regime
        assert "[src]" in doc, f"{qualname}: References must give `.. [src]` (the paper's numbering or 'derived')"
        assert "Regime:" in doc, f"{qualname}: Notes must begin with `Regime:`"


@pytest.mark.parametrize("qualname", sorted(FUNCTIONS))
def test_documented_parameters_exist(qualname):
    """Every name listed under Parameters is a real argument (the docstring cannot drift from the signature)."""
    fn = FUNCTIONS[qualname]
    doc = inspect.getdoc(fn) or ""
    if "Parameters\n----------" not in doc:
        return
    block = doc.split("Parameters\n----------", 1)[1]
    block = block.split("\n\n", 1)[0] if "\n\n" in block else block
    listed = [line.split(" :")[0].strip() for line in block.splitlines() if " : " in line and not line.startswith(" ")]
    params = set(inspect.signature(fn).parameters)
    for name in listed:
        for part in name.replace("*", "").split(","):
            assert part.strip() in params, f"{qualname}: documents {part.strip()!r}, not in {sorted(params)}"


# ---- what ships cites the papers, not files a reader does not have ---------------------------------------------

_INTERNAL = re.compile(r"specs/|seeds/|\bseed 00\d|\bspecs?\b [A-Z§(]|\.\./shared|\bissue \d+|\bL\d{3,5}(?:-\d+)?\b")
_SHIPPED = ("popdyn", "validation", "docs", "examples", "README.md", "CITATION.cff", "pyproject.toml")


def _shipped_files():
    root = Path(__file__).resolve().parent.parent
    for name in _SHIPPED:
        p = root / name
        files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.suffix in (".py", ".md", ".json", ".cff",
                                                                                         ".toml", ".rst", ".txt"))
        yield from (f for f in files if "_build" not in f.parts and "__pycache__" not in f.parts)


def test_shipped_text_cites_papers_not_internal_files():
    """Docstrings, messages, claim sources, records, docs and README cite a paper's own numbering ([Key, Theorem n]):
    no spec or seed files, issue numbers, ../shared paths or line numbers of a text conversion (L604)."""
    hits = [f"{f.name}:{i}: {m.group(0)!r}" for f in _shipped_files()
            for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1) if (m := _INTERNAL.search(line))]
    assert not hits, f"{len(hits)} internal references, e.g. " + "; ".join(hits[:12])


def test_the_internal_reference_pattern_catches_what_it_should():
    for bad in ("see specs/lora.md", "seed 001 (seeds/001_x.txt)", "spec B.2 (7-d)", "L604", "L9002-9006",
                "issue 8", "../shared/DESIGN.md"):
        assert _INTERNAL.search(bad), bad
    for fine in ("[Shi24, Theorem 5.4.1]", "spectrum", "the spectral norm", "Lipschitz L", "level 1000",
                 "a special case"):
        assert not _INTERNAL.search(fine), fine
