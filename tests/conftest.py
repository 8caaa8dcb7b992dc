"""Hypothesis profiles: ``POPDYN_HYPOTHESIS_PROFILE=ci`` (default) is deterministic, ``dev`` explores."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", deadline=None, print_blob=True, database=None, derandomize=True,
                          max_examples=40, suppress_health_check=list(HealthCheck))
settings.register_profile("dev", deadline=None, print_blob=True, max_examples=200)
settings.load_profile(os.environ.get("POPDYN_HYPOTHESIS_PROFILE", "ci"))
