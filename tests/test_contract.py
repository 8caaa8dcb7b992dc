"""The one contract every model follows: option tables, registration, compare's refusals, warnings at the
caller's line, file modes, the glossary (one meaning per name) and the catalogue's completeness."""
import dataclasses
import os
import stat
import warnings

import numpy as np
import pytest

import popdyn
from popdyn._options import REQUIRED, Observable, Option, options_table
from popdyn._validate import Integer, Interval, InvalidParameterError, Options
from popdyn.api import register
from popdyn.glossary import RETIRED, TERMS
from popdyn.models import MODELS, catalogue
from popdyn.results import Prediction, Simulation


# ---- a toy model, registered here: the core's behaviour without any real model ---------------------------
@dataclasses.dataclass(frozen=True)
class Toy:
    a: float = 1.0
    options = options_table(
        Option("steps", Integer(1), REQUIRED, "number of training steps", match=True),
        Option("lr", Interval(0, np.inf, "neither"), 0.1, "step size", match=True),
        Option("n_points", Integer(2), 5, "number of recorded times"),
        Option("rtol", Interval(0, 1, "neither"), 1e-8, "relative tolerance of the solver", calls=("predict",)),
        Option("seeds", Integer(1), 4, "number of runs", calls=("simulate",)),
        Option("static", Options((True, False)), False, "return a static result", calls=("predict",)),
    )
    observables = {"x": Observable("the toy value", unit="a.u.")}


def _toy_predict(problem, *, steps, lr, n_points, rtol, static):
    if lr >= 0.5:
        warnings.warn("outside the regime lr < 0.5", popdyn.RegimeWarning, stacklevel=2)
    t = np.linspace(0, steps, n_points)
    if static:
        return Prediction(t=None, observables={"x": np.array(problem.a * (1 - lr) ** steps)})
    return Prediction(t=t, observables={"x": problem.a * (1 - lr) ** t})


@pytest.fixture(autouse=True)
def _toy_registered():
    """Toy is in the registry for this module's tests only (the catalogue elsewhere holds the real models)."""
    from popdyn.api import _REGISTRY
    register(Toy, name="toy", predict=_toy_predict, simulate="tests.test_contract:_toy_simulate",
             summary="a geometric decay")
    yield
    _REGISTRY.pop(Toy, None)


def _toy_simulate(problem, *, steps, lr, n_points, seeds):
    t = np.linspace(0, steps, n_points)
    rng = np.random.default_rng(0)
    x = problem.a * (1 - lr) ** t + 1e-3 * rng.standard_normal((seeds, n_points))
    return Simulation(t=t, observables={"x": x})


def test_options_are_resolved_with_defaults_before_the_work():
    pred = popdyn.predict(Toy(), steps=10)
    assert pred.meta["call_options"] == {"steps": 10, "lr": 0.1, "n_points": 5, "rtol": 1e-8, "static": False}
    assert pred.meta["model"] == "toy" and pred.meta["problem_fields"] == {"a": 1.0}


@pytest.mark.parametrize("given,match", [
    ({}, r"toy.predict needs the option 'steps': number of training steps"),
    ({"steps": 10, "stepz": 3}, r"toy.predict has no option 'stepz'; it accepts steps, lr, n_points, rtol, static"),
    ({"steps": 10, "seeds": 3}, r"'seeds' is an option of simulate only"),
    ({"steps": 10, "eta": 0.1}, r"toy.predict has no option 'eta': it is now lr"),
    ({"steps": 10, "lr": -1.0}, r"The 'lr' parameter of toy.predict must be a float in \(0, inf\)"),
    ({"steps": 1.5}, r"The 'steps' parameter of toy.predict must be an int"),
])
def test_a_bad_option_names_itself_and_what_it_accepts(given, match):
    with pytest.raises(InvalidParameterError, match=match):
        popdyn.predict(Toy(), **given)


def test_warnings_point_at_the_callers_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        popdyn.predict(Toy(), steps=3, lr=0.5)
    assert [os.path.basename(w.filename) for w in caught] == [os.path.basename(__file__)]


def test_compare_refuses_another_problem_or_another_matched_option():
    pred = popdyn.predict(Toy(), steps=10)
    with pytest.raises(ValueError, match=r"problem field 'a' is 1.0 in the prediction and 2.0 in the simulation"):
        popdyn.compare(pred, popdyn.simulate(Toy(a=2.0), steps=10))
    with pytest.raises(ValueError, match=r"option 'lr' is 0.1 in the prediction and 0.2 in the simulation"):
        popdyn.compare(pred, popdyn.simulate(Toy(), steps=10, lr=0.2))
    with pytest.warns(UserWarning, match="option 'lr'"):
        popdyn.compare(pred, popdyn.simulate(Toy(), steps=10, lr=0.2), strict=False)
    ok = popdyn.compare(pred, popdyn.simulate(Toy(), steps=10, n_points=3))  # n_points is not matched
    assert ok.metrics["x"]["sup_gap"] < 1e-2


def test_compare_refuses_saved_results_of_other_problems(tmp_path):
    a = popdyn.predict(Toy(), steps=10).save(tmp_path / "a")
    b = popdyn.simulate(Toy(a=3.0), steps=10).save(tmp_path / "b")
    with pytest.raises(ValueError, match="problem field 'a'"):
        popdyn.compare(popdyn.load(a), popdyn.load(b))


def test_static_theory_is_compared_at_the_simulations_last_or_chosen_time():
    pred = popdyn.predict(Toy(), steps=10, static=True)
    sim = popdyn.simulate(Toy(), steps=10, n_points=5)
    comp = popdyn.compare(pred, sim)
    assert comp.compared_at == 10.0 and comp.metrics["x"]["sup_gap"] < 1e-2
    with pytest.raises(ValueError, match="recorded no time 3.0"):
        popdyn.compare(pred, sim, at=3.0)
    assert popdyn.compare(pred, sim, at=5.0).compared_at == 5.0  # theory at t=10 vs sim at t=5: far apart
    assert popdyn.compare(pred, sim, at=5.0).metrics["x"]["sup_gap"] > 0.2


def test_saved_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = popdyn.predict(Toy(), steps=3).save(tmp_path / "p")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_retired_option_names_cannot_be_declared():
    with pytest.raises(ValueError, match="retired: use lr"):
        Option("eta", None, 0.1, "step size")
    with pytest.raises(ValueError, match="one whole line of help"):
        Option("lr", None, 0.1, "")


# ---- every registered problem class: the catalogue and the glossary ----------------------------------------
CATALOGUE = [e for e in catalogue() if e.name != "toy"]


def test_every_model_is_in_the_catalogue_and_reachable_as_an_attribute():
    import popdyn.models as models
    assert {e.name.split(".")[0] for e in CATALOGUE} == set(MODELS)
    for m in MODELS:
        assert getattr(models, m).__name__ == f"popdyn.models.{m}"


@pytest.mark.parametrize("e", CATALOGUE, ids=lambda e: e.name)
def test_each_problem_class_declares_the_contract(e):
    assert e.options is not None, f"{e.name} has no option table"
    assert e.observables, f"{e.name} declares no observables"
    assert e.simulate and ":" in e.simulate
    assert e.summary and not e.summary.endswith(".")
    assert e.cls.__module__ == f"popdyn.models.{e.name.split('.')[0]}.problem", "Problem classes live in problem.py"
    problem, options = e.cls.example()
    assert isinstance(problem, e.cls)
    shared = {o.name for o in e.options.shared()}
    assert set(options) <= shared, f"example options {set(options) - shared} are not taken by both calls"
    agreement = getattr(e.cls, "example_agreement", None)
    assert agreement and set(agreement) <= set(e.observables)
    fields = {f.name for f in dataclasses.fields(e.cls)}
    assert not fields & set(RETIRED), f"{e.name} has fields with retired names: {fields & set(RETIRED)}"


def test_one_meaning_per_name():
    """A name that two problem classes use is a glossary term; no option or field uses a retired name; the
    register and simulate functions take exactly the declared options."""
    users = {}
    for e in CATALOGUE:
        for o in e.options:
            assert o.name not in RETIRED, (e.name, o.name)
            users.setdefault(o.name, set()).add(e.name)
    shared_names = {n for n, who in users.items() if len({w.split(".")[0] for w in who}) > 1}
    assert shared_names <= set(TERMS), f"names used by several models but missing from the glossary: " \
                                       f"{sorted(shared_names - set(TERMS))}"


@pytest.mark.parametrize("e", CATALOGUE, ids=lambda e: e.name)
def test_registered_functions_take_exactly_the_declared_options(e):
    import inspect
    from popdyn.api import entry as find
    reg = find(e.cls)
    params = lambda fn: {p.name for p in list(inspect.signature(fn).parameters.values())[1:]}
    assert params(reg.predict) == {o.name for o in e.options.for_call("predict")}
    pytest.importorskip("torch")
    assert params(reg.simulate_function()) == {o.name for o in e.options.for_call("simulate")}


@pytest.mark.parametrize("e", CATALOGUE, ids=lambda e: e.name)
def test_an_invalid_option_value_names_the_option(e):
    from .test_common import _invalid_values
    problem, options = e.cls.example()
    from popdyn._validate import Either, FiniteArray
    known = (Interval, Integer, Options, FiniteArray, Either)
    for o in e.options.for_call("predict"):
        if not isinstance(o.constraint, known):  # a model's own constraint is tested with its model
            continue
        for bad in _invalid_values(o.constraint)[:2]:
            if o.default is None and bad is None:
                continue
            with pytest.raises(InvalidParameterError, match=f"'{o.name}'"):
                e.options.resolve(e.name, "predict", {**options, o.name: bad})


def test_no_model_uses_the_legacy_registration():
    import pathlib
    root = pathlib.Path(popdyn.__file__).parent
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if ".register(" in p.read_text() and p.name != "api.py"]
    assert not offenders, f"singledispatch registration left in {offenders}"


def test_docs_glossary_is_the_table_in_code():
    """docs/glossary.md is popdyn.glossary's tables, then the kernel names of docs/glossary_kernels.py."""
    import pathlib
    import subprocess
    import sys
    from popdyn.glossary import markdown
    docs = pathlib.Path(__file__).parents[1] / "docs"
    text = (docs / "glossary.md").read_text()
    head = text.split("<!-- kernel-names:begin -->")[0]
    assert head.rstrip("\n") + "\n" == markdown(), "regenerate: python -m popdyn.glossary > docs/glossary.md, then " \
                                                  "python docs/glossary_kernels.py"
    rc = subprocess.run([sys.executable, str(docs / "glossary_kernels.py"), "--check"]).returncode
    assert rc == 0 and "<!-- kernel-names:end -->" in text, "regenerate: python docs/glossary_kernels.py"


def test_help_of_predict_names_every_problem_class():
    doc = popdyn.predict.__doc__
    for e in CATALOGUE:
        assert f"``{e.name}`` ({e.cls.__name__}): {e.summary}." in doc, e.name
