"""Common checks over every model discovered under ``popdyn.models`` (sklearn's common-checks idea).

For each model: the constraint keys are Problem fields; an invalid value generated from each declared
constraint raises InvalidParameterError naming the parameter; the Problem repr is an evaluable
constructor call; ``predict`` is registered; the ``sim`` twin exists and registers ``simulate``.
"""
import dataclasses
import importlib
import pkgutil

import numpy as np
import pytest

import popdyn
import popdyn.models
from popdyn._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options
from popdyn.api import _simulate, predict

from .strategies import EXAMPLES

MODELS = sorted(m.name for m in pkgutil.iter_modules(popdyn.models.__path__))


def _invalid_values(constraint):
    if isinstance(constraint, Interval):
        vals = [np.nan, "x"]
        if np.isfinite(constraint.low):
            vals.append(constraint.low - 1.0)
        if np.isfinite(constraint.high):
            vals.append(constraint.high + 1.0)
        return vals
    if isinstance(constraint, Integer):
        return [constraint.low - 1, 1.5]
    if isinstance(constraint, Options):
        return ["not-an-option"]
    if isinstance(constraint, FiniteArray):
        return [np.full((2,) * constraint.ndim, np.nan), np.zeros((1,) * (constraint.ndim + 1))]
    raise AssertionError(f"unknown constraint {constraint!r}")


def _examples(model):
    """Every example Problem of ``model`` (EXAMPLES maps a model to one factory or a list of factories)."""
    made = EXAMPLES[model]
    return [f() for f in (made if isinstance(made, (list, tuple)) else [made])]


def test_every_model_has_an_example():
    assert sorted(EXAMPLES) == MODELS


@pytest.mark.parametrize("model", MODELS)
def test_constraints_are_fields(model):
    for problem in _examples(model):
        cls = type(problem)
        fields = {f.name for f in dataclasses.fields(cls)}
        assert set(cls._constraints) <= fields
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen


@pytest.mark.parametrize("model", MODELS)
def test_invalid_values_name_the_parameter(model):
    for problem in _examples(model):
        for name, constraint in type(problem)._constraints.items():
            for bad in _invalid_values(constraint):
                with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
                    dataclasses.replace(problem, **{name: bad})


@pytest.mark.parametrize("model", MODELS)
def test_repr_round_trips(model):
    mod = importlib.import_module(f"popdyn.models.{model}")
    for problem in _examples(model):
        again = eval(repr(problem), {"np": np, model: mod})
        assert repr(again) == repr(problem)


@pytest.mark.parametrize("model", MODELS)
def test_predict_and_simulate_registered(model):
    problems = _examples(model)
    for problem in problems:
        assert predict.dispatch(type(problem)) is not predict.dispatch(object)
    pytest.importorskip("torch")
    importlib.import_module(f"popdyn.sim.{model}")
    for problem in problems:
        assert _simulate.dispatch(type(problem)) is not _simulate.dispatch(object)


def test_import_keeps_torch_and_matplotlib_out():
    import subprocess
    import sys
    code = "import sys, popdyn; print(sorted(m for m in ('torch', 'matplotlib', 'validation') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
