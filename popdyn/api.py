"""``predict``, ``simulate``, ``compare``: one call shape for every model.

A model registers each of its problem classes once, in its ``predict.py``::

    register(Problem, name="lora", predict=_predict, simulate="popdyn.sim.lora:simulate",
             summary="overlap ODE of online SGD and the population loss along it")

``simulate`` is named as ``"module:function"`` and imported on the first simulation, so torch is loaded
only then. Both calls resolve the caller's keywords against the problem's option table
(``Problem.options``, see :mod:`popdyn._options`) before any work, record the problem and the resolved
options in the result's ``meta``, and re-issue the model's warnings at the caller's line. ``compare``
reads those records and refuses a prediction and a simulation made for different problems or options.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from .results import Comparison, Prediction, Simulation, _jsonable, choose_observables

__all__ = ["predict", "simulate", "compare", "register", "entry", "entries"]


@dataclass(frozen=True)
class Entry:
    """A registered problem class: its catalogue ``name``, theory, simulation path and one-line summary."""
    cls: type
    name: str
    predict: object
    simulate: str | None
    summary: str

    def simulate_function(self):
        """The simulation, imported on first use (this is where torch is loaded)."""
        if self.simulate is None:
            raise TypeError(f"{self.name} has no simulation")
        module, _, fn = self.simulate.partition(":")
        try:
            return getattr(importlib.import_module(module), fn)
        except ImportError as e:
            if e.name == "torch":
                raise ImportError("popdyn.simulate needs torch: pip install 'popdyn[sim]'") from e
            raise


_REGISTRY: dict[type, Entry] = {}


def register(cls, *, name, predict, simulate=None, summary):
    """Register a problem class: ``predict`` is the theory (a function of the problem and its resolved
    options), ``simulate`` the ``"module:function"`` path of its torch twin, ``summary`` one line of what the
    theory predicts. Returns ``cls``."""
    if not callable(predict):
        raise TypeError("register: predict must be a function")
    if simulate is not None and ":" not in simulate:
        raise ValueError(f"register: simulate must read 'module:function', got {simulate!r}")
    _REGISTRY[cls] = Entry(cls, name, predict, simulate, summary)
    return cls


def entries():
    """Every registered problem class, ``{name: Entry}`` sorted by name (imports every model)."""
    from . import models
    models._import_all()
    return dict(sorted((e.name, e) for e in _REGISTRY.values()))


def entry(cls):
    """The registration of ``cls`` (or of its nearest registered base class), or None."""
    for c in cls.__mro__:
        if c in _REGISTRY:
            return _REGISTRY[c]
    return None


# --- the problem's fingerprint -------------------------------------------------------------------------------
def _fingerprint(value):
    """A JSON-able record of a problem's field values: small arrays in full, large ones by a hash."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _fingerprint(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.compare}
    if isinstance(value, np.ndarray):
        if value.size <= 64:
            return _jsonable(value)
        a = np.ascontiguousarray(value)
        return f"array{a.shape}:sha1:{hashlib.sha1(a.tobytes()).hexdigest()[:16]}"
    if isinstance(value, (list, tuple)):
        return [_fingerprint(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _fingerprint(v) for k, v in value.items()}
    out = _jsonable(value)
    return out if not isinstance(out, str) or not out.startswith("<") else type(value).__name__


def _name(cls):
    e = entry(cls)
    if e is not None:
        return e.name
    parts = cls.__module__.split(".")
    return parts[2] if parts[:2] == ["popdyn", "models"] and len(parts) > 2 else cls.__name__


def _resolve_progress(options):
    if "progress" in options and options["progress"] is None:
        options["progress"] = bool(getattr(sys.stderr, "isatty", lambda: False)())
    return options


def _run(call, problem, given):
    """Resolve the options, run the model's function, record problem and options, re-issue its warnings."""
    cls = type(problem)
    e = entry(cls)
    owner = f"{_name(cls)}.{call}"
    if e is None:
        raise TypeError(f"popdyn.{call} has no {'theory' if call == 'predict' else 'simulation'} for "
                        f"{cls.__name__!r}; pass a Problem from popdyn.models (popdyn.models.catalogue() lists them).")
    options = _resolve_progress(cls.options.resolve(owner, call, given))
    fn = e.predict if call == "predict" else e.simulate_function()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fn(problem, **options)
    except BaseException:
        for w in caught:  # warnings the model gave before it failed still reach the caller
            warnings.warn(w.message, w.category, stacklevel=3)
        raise
    meta = result.meta
    meta.setdefault("problem", repr(problem))
    meta["model"] = _name(cls)
    meta["problem_class"] = f"{cls.__module__}:{cls.__qualname__}"
    meta["problem_fields"] = _fingerprint(problem)
    recorded = {k: v for k, v in options.items() if k not in ("device", "progress")}
    meta["call_options"] = _jsonable(recorded)
    for w in caught:  # at the caller's line (stacklevel 3: this function, predict/simulate, the caller)
        warnings.warn(w.message, w.category, stacklevel=3)
    return result


def predict(problem, **options):
    """What the theory predicts for ``problem``: a :class:`~popdyn.results.Prediction`.

    ``problem`` is an instance of one of the catalogue's problem classes (``popdyn.models.<model>``):

    - ``committee`` (Problem): overlap ODE of online SGD on a soft committee machine: Q, R, v and the generalisation error.
    - ``contrastive`` (Problem): pre-trained column norms, probe norms and Rademacher terms of the universal, CR-fine-tuned and task-specific linear contrastive representations.
    - ``domain_gen`` (Problem): population optimum of ERM-l2 / ERM-NU / ERM-l1 / ERM-rank along a lambda path: block weights, exact ID and OOD accuracies, nuclear norm and stable rank.
    - ``emergence`` (Problem): exact population steps 1-2 and the reduced population GD of stage 3: test hinge loss, error and feature cosine per step.
    - ``gradient_features`` (Problem): the exact first gradient step from the symmetric init, its nice neurons and feature probability, the frozen-feature optimum, the good network and the main theorem's sizes.
    - ``icl`` (Problem): population gradient descent of the rank-r linear attention through its saddles to the Thm 5.4.1 optimum, with loss and eval risk per step.
    - ``icl.parity`` (ParityProblem): the paper's sparse-parity heads: N -> inf hinge loss and margins, noise-energy ratio, accuracy and hinge at finite prompt lengths.
    - ``kernels`` (Problem): eigenlearning learning curve of a wide network's kernel on a Walsh target over the hypercube.
    - ``looped`` (Problem): in-context error curves of a looped linear transformer emulating GD, loop by loop.
    - ``lora`` (Problem): overlap ODE of online SGD on the LoRA student and the population loss along it.
    - ``lora.general`` (GeneralProblem): order parameters (m, q, c_hat) of online SGD with u not orthogonal to span W, and the loss.
    - ``modular`` (Problem): max normalized margin gamma*, the max-margin network's margin and single-frequency Fourier neurons.
    - ``modular.transformer`` (TransformerProblem): the max-margin theory's single-frequency neurons and one-frequency attention heads in a transformer.
    - ``multitask`` (Problem): one head step and one shared first-layer step of multi-task ReLU pretraining: W+, heads, loss, kappa and Thm 4.2's ratio.
    - ``resnet`` (Problem): exact population test error (Parseval) of kernel ridge regression of Theorem 2's target.
    - ``resnet.network`` (NetworkProblem): exact test errors of the infinite-width kernels the trained networks are held against.

    The options are the problem's (``type(problem).options``; ``popdyn.models.catalogue()`` and
    ``popdyn models MODEL`` list them with their help, constraint and default; ``Problem.example()`` gives a
    small problem and options that run in seconds): a misspelt, retired or missing option is an
    ``InvalidParameterError`` naming it. The prediction's ``meta`` records the problem and the resolved options, which
    :func:`compare` checks. Warnings of the theory (``RegimeWarning``) point at the caller's line.

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models import lora
    >>> problem, options = lora.Problem.example()
    >>> popdyn.predict(problem, **options).observables["m"].shape[0] > 1
    True
    """
    return _run("predict", problem, options)


def simulate(problem, **options):
    """Finite-sample training for ``problem`` (torch, imported here): a :class:`~popdyn.results.Simulation`.

    Options as for :func:`predict`, from the same table: an option both calls take has one meaning and one
    default. Observables carry a leading seed axis. ``progress=None`` (the default) shows a bar when stderr is
    a terminal.
    """
    return _run("simulate", problem, options)


# --- compare ---------------------------------------------------------------------------------------------
def _problem_class(meta):
    path = meta.get("problem_class")
    if not path:
        return None
    module, _, qual = path.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj


def _first_difference(a, b, prefix=""):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return f"{prefix}{k}", a.get(k, "(absent)"), b.get(k, "(absent)")
            d = _first_difference(a[k], b[k], f"{prefix}{k}.")
            if d:
                return d
        return None
    return None if a == b else (prefix.rstrip("."), a, b)


def _short(v, n=60):
    s = repr(v)
    return s if len(s) <= n else s[:n - 3] + "..."


def _check_same_run(prediction, simulation, strict):
    """Refuse (or, with strict=False, warn about) a prediction and a simulation made for different problems
    or different matched options."""
    pm, sm = prediction.meta, simulation.meta
    problems = []
    if "problem_fields" in pm and "problem_fields" in sm:
        if pm.get("problem_class") != sm.get("problem_class"):
            problems.append(f"the prediction is for {pm.get('problem_class')} and the simulation for "
                            f"{sm.get('problem_class')}")
        else:
            d = _first_difference(pm["problem_fields"], sm["problem_fields"])
            if d:
                problems.append(f"problem field {d[0]!r} is {_short(d[1])} in the prediction and {_short(d[2])} "
                                f"in the simulation")
        cls = _problem_class(pm)
        table = getattr(cls, "options", None)
        po, so = pm.get("call_options", {}), sm.get("call_options", {})
        for o in (table.matched() if table is not None else []):
            if o.name in po and o.name in so and po[o.name] != so[o.name]:
                problems.append(f"option {o.name!r} is {_short(po[o.name])} in the prediction and "
                                f"{_short(so[o.name])} in the simulation")
    elif "problem_fields" in pm or "problem_fields" in sm:
        which = "prediction" if "problem_fields" not in pm else "simulation"
        warnings.warn(f"compare: the {which} carries no record of its problem (made by hand or by an older "
                      "popdyn), so compare cannot check that both were made for the same problem",
                      UserWarning, stacklevel=3)
    if not problems:
        return
    text = "compare: " + "; ".join(problems) + "."
    if strict:
        raise ValueError(text + " Predict and simulate the same problem with the same options, or pass "
                                "strict=False to compare anyway.")
    warnings.warn(text, UserWarning, stacklevel=3)


def _at(simulation, at):
    """The simulation's observables at one recorded time (the last one by default), as a static result."""
    t = np.asarray(simulation.t, dtype=float)
    if at is None:
        i = int(np.argmax(t))
    else:
        i = int(np.argmin(np.abs(t - float(at))))
        if not np.isclose(t[i], float(at), rtol=1e-9, atol=1e-12):
            raise ValueError(f"compare: the simulation recorded no time {at!r}; its times are "
                             f"{t.tolist() if t.size <= 12 else f'{t.size} points in [{t.min():g}, {t.max():g}]'}.")
    obs = {k: np.asarray(v)[:, i] for k, v in simulation.observables.items()
           if np.ndim(v) >= 2 and np.shape(v)[1] == t.size}   # per-run arrays without a time axis (weights) stay out
    meta = dict(simulation.meta, compared_at=float(t[i]))
    return Simulation(t=None, observables=obs, status=simulation.status, message=simulation.message,
                      meta=meta, coords=simulation.coords), float(t[i])


def _check_comparable(prediction, simulation):
    """Refuse what cannot be compared: a failed result, a time axis on the prediction only, simulation times
    outside the prediction's range, or coordinates that differ."""
    for name, res in (("prediction", prediction), ("simulation", simulation)):
        if res.status < 0:
            raise ValueError(f"compare: the {name} failed (status {res.status}: {res.message!r}); "
                             "rerun it with the knob its message names before comparing.")
    if prediction.t is not None and simulation.t is None:
        raise ValueError("compare: the prediction has a time axis 't' and the simulation has none; simulate "
                         "with a time axis, or compare the prediction at one time with a static simulation.")
    if prediction.t is not None:
        lo, hi = float(np.min(prediction.t)), float(np.max(prediction.t))
        t = np.asarray(simulation.t, dtype=float)
        if t.size and (t.min() < lo or t.max() > hi):
            raise ValueError(f"compare: simulation times [{t.min():.6g}, {t.max():.6g}] fall outside the "
                             f"prediction's range [{lo:.6g}, {hi:.6g}]; predict over the simulated horizon "
                             "(a truncated prediction is not extended).")
    for k in set(prediction.coords) & set(simulation.coords):
        a, b = prediction.coords[k], simulation.coords[k]
        if a.shape != b.shape or not np.array_equal(a, b):
            raise ValueError(f"compare: coordinate {k!r} differs: {a.tolist()} vs {b.tolist()}")


def _interp(t_new, t, y):
    """Linear interpolation of ``y`` (time on axis 0, any trailing shape) onto ``t_new``."""
    y = np.asarray(y, dtype=float)
    flat = y.reshape(y.shape[0], -1)
    out = np.stack([np.interp(t_new, t, flat[:, j]) for j in range(flat.shape[1])], axis=-1)
    return out.reshape((len(t_new),) + y.shape[1:])


def compare(prediction: Prediction, simulation: Simulation, *, strict=True, at=None, band_sd=2.0,
            observables=None):
    """Hold a prediction against a simulation on the simulation's time grid.

    The two must come from the same problem and the same matched options (recorded in ``meta`` by
    :func:`predict` and :func:`simulate`): otherwise a ``ValueError`` names the differing field or option
    (``strict=False`` warns instead). A static prediction against a simulation with a time axis is compared
    at the simulation's last recorded time, or at ``at``. Theory over time is linearly interpolated onto the
    simulation times, which must lie inside the prediction's; shared ``coords`` must be equal; a failed result
    (``status < 0``) is refused. Metrics per shared observable (taken over time and entries): ``sup_gap``,
    ``mean_gap``, ``in_band`` (fraction with theory inside mean +- band_sd * SD over seeds) and ``max_z``
    (gap in standard errors of the mean). Observables named ``*_se`` are standard errors, not compared.

    Raises
    ------
    ValueError
        On any of the mismatches above, or when the two share no observable.
    """
    if not (band_sd > 0):
        raise ValueError(f"The 'band_sd' parameter of compare must be a float in (0, inf). Got {band_sd!r} instead.")
    _check_same_run(prediction, simulation, strict)
    compared_at = None
    if prediction.t is None and simulation.t is not None:
        simulation, compared_at = _at(simulation, at)
    elif at is not None:
        raise ValueError("compare: 'at' selects a time of a simulation against a static prediction; "
                         "here the prediction has a time axis.")
    _check_comparable(prediction, simulation)
    names = [k for k in prediction.observables if k in simulation.observables and not k.endswith("_se")]
    names = choose_observables(names, observables, "compare")
    if not names:
        raise ValueError("prediction and simulation share no observable: "
                         f"{sorted(prediction.observables)} vs {sorted(simulation.observables)}")
    t = simulation.t
    theory, mean, sd, metrics = {}, {}, {}, {}
    for k in names:
        s = np.asarray(simulation.observables[k], dtype=float)
        p = np.asarray(prediction.observables[k], dtype=float)
        if t is not None and p.ndim >= 1 and p.shape[0] == np.size(prediction.t):
            p = _interp(np.asarray(t, dtype=float), np.asarray(prediction.t, dtype=float), p)
        if p.shape != s.shape[1:]:
            raise ValueError(f"compare: observable {k!r} has shape {p.shape} in the prediction and "
                             f"{s.shape[1:]} per seed in the simulation")
        mu, sig = s.mean(axis=0), s.std(axis=0, ddof=1) if s.shape[0] > 1 else np.zeros(s.shape[1:])
        gap = np.abs(p - mu)
        se = sig / np.sqrt(s.shape[0])
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(se > 0, gap / np.where(se > 0, se, 1.0), np.where(gap > 0, np.inf, 0.0))
        theory[k], mean[k], sd[k] = p, mu, sig
        metrics[k] = {"sup_gap": float(np.max(gap)), "mean_gap": float(np.mean(gap)),
                      "in_band": float(np.mean(gap <= band_sd * sig + 1e-300)), "max_z": float(np.max(z))}
    return Comparison(prediction, simulation, t, theory, mean, sd, metrics, band_sd, compared_at)
