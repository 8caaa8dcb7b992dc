"""Common checks over every model discovered under ``popdyn.models`` (sklearn's common-checks idea).

For each model: the constraint keys are Problem fields; an invalid value generated from each declared
constraint raises InvalidParameterError naming the parameter; the Problem repr is an evaluable
constructor call; ``predict`` is registered; the ``sim`` twin exists and registers ``simulate``.

The property suite (every entry of ``tests/strategies.py`` ``MODELS``): ``predict`` is finite on valid
problems drawn by Hypothesis and on the explicit edge cases; the same call gives the same numbers;
save/load round-trips exactly; an invalid field value drawn from the declared constraint, or a bad
``predict`` option, raises a ValueError naming the parameter; the model's public functions are finite.
"""
import dataclasses
import importlib
import pkgutil
import warnings

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import popdyn
import popdyn.models
from popdyn._validate import Either, FiniteArray, Integer, Interval, InvalidParameterError, Options

from .strategies import EXAMPLES, MODELS

MODELS_SPEC = MODELS
MODELS = sorted(m.name for m in pkgutil.iter_modules(popdyn.models.__path__))


def _rejected(constraint, value):
    try:
        constraint.convert("owner", "name", value)
    except InvalidParameterError:
        return True
    return False


def _invalid_values(constraint):
    if isinstance(constraint, Either):
        return [v for a in constraint.alternatives for v in _invalid_values(a) if _rejected(constraint, v)]
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


def test_every_model_has_an_example_and_joins_the_property_suite():
    from popdyn.cli import problem_classes
    assert sorted(EXAMPLES) == MODELS
    assert sorted(MODELS_SPEC) == sorted(problem_classes())  # every problem popdyn.predict knows


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
    from popdyn.api import entry
    for problem in _examples(model):
        reg = entry(type(problem))
        assert reg is not None and callable(reg.predict), type(problem)
        assert reg.simulate.startswith(f"popdyn.sim.{model}")  # the mirrored twin package
        pytest.importorskip("torch")
        assert callable(reg.simulate_function())


def test_import_keeps_torch_and_matplotlib_out():
    import subprocess
    import sys
    code = "import sys, popdyn; print(sorted(m for m in ('torch', 'matplotlib', 'popdyn.validation', 'validation', 'dask', 'distributed') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---- the property suite ------------------------------------------------------------------------------

def _invalid_strategy(constraint):
    """Hypothesis strategy of values that violate ``constraint`` (NaN and wrong types included)."""
    if isinstance(constraint, Either):
        return st.one_of([_invalid_strategy(a) for a in constraint.alternatives]).filter(
            lambda v: _rejected(constraint, v))
    if isinstance(constraint, Interval):
        bad = [st.just(np.nan), st.just("x"), st.just(None)]
        lo_open = constraint.closed in ("neither", "right")
        hi_open = constraint.closed in ("neither", "left")
        if np.isfinite(constraint.low):
            bad.append(st.floats(max_value=constraint.low, exclude_max=not lo_open, allow_nan=False))
        if np.isfinite(constraint.high):
            bad.append(st.floats(min_value=constraint.high, exclude_min=not hi_open, allow_nan=False))
        return st.one_of(bad)
    if isinstance(constraint, Integer):
        bad = [st.floats(allow_nan=True).filter(lambda x: not float(x).is_integer()), st.just(True), st.just("1")]
        if np.isfinite(constraint.low):
            bad.append(st.integers(max_value=int(constraint.low) - 1))
        return st.one_of(bad)
    if isinstance(constraint, Options):
        return st.text(max_size=8).filter(lambda v: v not in constraint.values)
    if isinstance(constraint, FiniteArray):
        return st.one_of(st.just(np.full((2,) * constraint.ndim, np.nan)), st.just(np.zeros((1,) * (constraint.ndim + 1))),
                         st.just(np.full((2,) * constraint.ndim, np.inf)))
    raise AssertionError(f"unknown constraint {constraint!r}")


def _finite(result):
    return all(np.all(np.isfinite(v)) for v in result.observables.values() if v.dtype.kind in "fc")


def _predict(problem, options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", popdyn.RegimeWarning)  # regime notes are recorded in meta, not errors
        return popdyn.predict(problem, **options)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS_SPEC))
@settings(max_examples=8)
@given(data=st.data())
def test_predict_is_finite_and_reproducible_on_valid_problems(name, data):
    spec = MODELS_SPEC[name]
    problem = data.draw(spec.problems, label="problem")
    note(repr(problem))
    pred = _predict(problem, spec.predict)
    assert pred.status >= 0, pred.message
    assert _finite(pred), {k: v for k, v in pred.observables.items() if not np.all(np.isfinite(v))}
    again = _predict(problem, spec.predict)  # same problem, same options: the same numbers
    for k, v in pred.observables.items():
        np.testing.assert_array_equal(again.observables[k], v)


@pytest.mark.parametrize("name,i", [(n, i) for n in sorted(MODELS_SPEC) for i in range(len(MODELS_SPEC[n].edges))])
def test_predict_is_finite_on_edge_cases(name, i):
    spec = MODELS_SPEC[name]
    problem = spec.edges[i]()
    pred = _predict(problem, spec.predict)
    assert pred.status >= 0 and _finite(pred), (repr(problem), pred.message)


@pytest.mark.parametrize("name", sorted(MODELS_SPEC))
@settings(max_examples=4)
@given(data=st.data())
def test_save_load_round_trip(name, data, tmp_path_factory):
    spec = MODELS_SPEC[name]
    pred = _predict(data.draw(spec.problems, label="problem"), spec.predict)
    back = popdyn.load(pred.save(tmp_path_factory.mktemp("rt") / "p"))
    assert type(back) is type(pred) and (back.status, back.message, back.meta) == (pred.status, pred.message, pred.meta)
    assert (back.t is None) == (pred.t is None) and (pred.t is None or np.array_equal(back.t, pred.t))
    for mine, theirs in ((pred.observables, back.observables), (pred.coords, back.coords)):
        assert list(mine) == list(theirs)
        for k, v in mine.items():
            assert theirs[k].dtype == v.dtype and np.array_equal(theirs[k], v)


@pytest.mark.parametrize("name", sorted(MODELS_SPEC))
@settings(max_examples=25)
@given(data=st.data())
def test_invalid_field_raises_naming_the_parameter(name, data):
    spec = MODELS_SPEC[name]
    problem = data.draw(spec.problems, label="problem")
    field, constraint = data.draw(st.sampled_from(sorted(type(problem)._constraints.items(), key=str)), label="field")
    bad = data.draw(_invalid_strategy(constraint), label="bad value")
    with pytest.raises(InvalidParameterError, match=f"'{field}' parameter"):
        dataclasses.replace(problem, **{field: bad})


@pytest.mark.parametrize("name,option,value", [(n, o, v) for n in sorted(MODELS_SPEC) for o, v in MODELS_SPEC[n].bad_predict])
def test_bad_predict_option_raises_naming_it(name, option, value):
    spec = MODELS_SPEC[name]
    problem = spec.edges[0]()
    with pytest.raises(ValueError, match=f"'{option}'"):
        _predict(problem, {**spec.predict, option: value})


@pytest.mark.parametrize("name", [n for n in sorted(MODELS_SPEC) if MODELS_SPEC[n].functions])
@settings(max_examples=10)
@given(data=st.data())
def test_public_functions_are_finite(name, data):
    spec = MODELS_SPEC[name]
    problem = data.draw(spec.problems, label="problem")
    note(repr(problem))
    for f, kw in spec.functions:
        out = np.asarray(f(problem, **kw), dtype=float)
        assert np.all(np.isfinite(out)), (getattr(f, "__name__", f), out)


# ---- every simulate: CPU reproducibility and, where a GPU is present, the CUDA path -----------------------

def _tiny_simulation(name, device):
    spec = MODELS_SPEC[name]
    return popdyn.simulate(spec.edges[0](), device=device, **spec.simulate)


@pytest.mark.parametrize("name", sorted(MODELS_SPEC))
def test_simulate_is_finite_reproducible_and_shares_names_with_predict(name):
    pytest.importorskip("torch")
    sim = _tiny_simulation(name, "cpu")
    assert isinstance(sim, popdyn.Simulation) and sim.status >= 0 and _finite(sim), sim.message
    assert sim.n_seeds == MODELS_SPEC[name].simulate["seeds"]
    again = _tiny_simulation(name, "cpu")  # same seed: bit-identical on CPU (docs/reproducibility.md)
    for k, v in sim.observables.items():
        np.testing.assert_array_equal(again.observables[k], v)
    pred = _predict(MODELS_SPEC[name].edges[0](), MODELS_SPEC[name].predict)
    assert set(pred.observables) & set(sim.observables), "no shared observable: compare would have nothing to do"


def _cuda():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.skipif(not _cuda(), reason="needs a CUDA device (run where one is present)")
@pytest.mark.parametrize("name", sorted(MODELS_SPEC))
def test_simulate_on_cuda_has_the_cpu_shapes(name):
    cpu, gpu = _tiny_simulation(name, "cpu"), _tiny_simulation(name, "cuda")
    assert gpu.meta.get("device", "cuda").startswith("cuda") and gpu.status >= 0 and _finite(gpu)
    for k, v in cpu.observables.items():  # CUDA generators draw other numbers: shapes, not values
        assert gpu.observables[k].shape == v.shape, k
