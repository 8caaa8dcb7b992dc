"""Package layout only (metadata: pyproject.toml): the top-level ``validation/`` folder installs as ``popdyn.validation``,
so that nothing named ``validation`` lands in site-packages."""
from setuptools import find_packages, setup

setup(packages=find_packages(include=["popdyn", "popdyn.*"])
      + ["popdyn." + p for p in find_packages(include=["validation", "validation.*"])],
      package_dir={"popdyn.validation": "validation"})
