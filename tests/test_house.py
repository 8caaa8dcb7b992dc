"""House rules that a machine can check: every public closed form documents its formula, regime and source.

Walks ``popdyn.models`` (as sklearn's ``discovery.py`` walks sklearn) and the core math modules.
"""
import importlib
import inspect
import pkgutil

import pytest

import popdyn.models

CORE = ["popdyn.hermite", "popdyn.gaussian", "popdyn.activations", "popdyn.dynamics"]


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
