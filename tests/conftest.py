"""Hypothesis profiles: ``POPDYN_HYPOTHESIS_PROFILE=ci`` (default) is deterministic, ``dev`` explores.

Under pytest-xdist with ``--dist loadgroup`` (the README's command), the parametrisations of one test that memoises a
training (:func:`tests.falsify.memoise`: a claim's right and wrong theory on the same simulations) run in one process,
so the training runs once."""
import os

import mpmath
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", deadline=None, print_blob=True, database=None, derandomize=True,
                          max_examples=40, suppress_health_check=list(HealthCheck))
settings.register_profile("dev", deadline=None, print_blob=True, max_examples=200)
settings.load_profile(os.environ.get("POPDYN_HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(items):
    for item in items:
        code = getattr(getattr(item, "function", None), "__code__", None)
        if code is not None and "memoise" in code.co_names:
            item.add_marker(pytest.mark.xdist_group(f"{item.path.name}::{item.originalname}"))


@pytest.fixture(autouse=True)
def _mpmath_precision():
    """Each test starts at mpmath's default precision and leaves it as it found it (a test that sets
    ``mpmath.mp.dps`` does not change the precision of the tests run after it in the same process)."""
    with mpmath.workprec(53):
        yield
