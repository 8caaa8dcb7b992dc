"""Every registered validation claim has a falsification test: a wrong theory must FAIL it (issue 7)."""
import importlib
import pkgutil

import tests
from popdyn.validation import claims


def _falsified():
    ids = set()
    for info in pkgutil.iter_modules(tests.__path__):
        if info.name.startswith("test_"):
            mod = importlib.import_module(f"tests.{info.name}")
            for obj in vars(mod).values():
                ids.update(getattr(obj, "falsifies", ()))
    return ids


def test_every_claim_has_a_falsification_test():
    missing = sorted(set(claims.discover()) - _falsified())
    assert not missing, f"claims with no test that a wrong theory fails them: {missing}"


def test_falsification_marks_name_registered_claims():
    unknown = sorted(_falsified() - set(claims.discover()))
    assert not unknown, f"@falsifies names claims that are not registered: {unknown}"
