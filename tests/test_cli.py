"""The ``popdyn`` command: parsing, usage errors (exit 2), predict/simulate writing loadable files."""
import subprocess
import sys

import numpy as np
import pytest

import popdyn
from popdyn import cli


def test_parser_reads_every_command():
    p = cli.build_parser()
    v = p.parse_args(["validate", "lora", "lora.glm_limit", "--quick", "--device", "cuda", "--resume", "--out", "r",
                      "--jobs", "2"])
    assert (v.names, v.quick, v.device, v.resume, str(v.out), v.jobs) == (["lora", "lora.glm_limit"], True, "cuda",
                                                                         True, "r", 2)
    assert p.parse_args(["validate", "--scheduler", "tcp://127.0.0.1:8786"]).scheduler == "tcp://127.0.0.1:8786"
    assert p.parse_args(["bench", "--quick"]).quick
    pr = p.parse_args(["predict", "lora", "orthonormal", "--k", "8", "--out", "traj.npz"])
    assert (pr.model, pr.constructor, pr.rest) == ("lora", "orthonormal", ["--k", "8", "--out", "traj.npz"])


def test_every_model_is_reachable_from_the_command_line():
    import popdyn.models
    import pkgutil
    names = cli.problem_classes()
    models = {m.name for m in pkgutil.iter_modules(popdyn.models.__path__)}
    assert {n.split(".")[0] for n in names} == models  # generated: a new model joins by registering predict
    assert names["icl.parity"].__name__ == "ParityProblem" and names["lora"].__name__ == "Problem"


def test_flags_are_generated_from_constructor_and_predict_signatures():
    from popdyn.models import lora
    p, make, ctor, run = cli._model_parser("predict", "lora", "orthonormal", lora.Problem)
    assert make == lora.Problem.orthonormal
    assert {"k", "xi", "activation", "seed", "lam", "convention"} <= set(ctor.values())
    assert {"d", "lr", "steps", "m0", "convention", "seed"} <= set(run.values())
    assert run["predict_seed"] == "seed" and run["predict_convention"] == "convention"  # clash: prefixed
    ns = p.parse_args(["--k", "8", "--xi", "1", "--d", "100", "--lr", "1e-3", "--steps", "10", "--out", "x"])
    assert (ns.k, ns.xi, ns.d, ns.lr) == (8, 1, 100, 1e-3) and not hasattr(ns, "m0")  # defaults left to the API


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["predict", "lora", "orthonormal", "--k", "4", "--xi", "1",
                                                       "--d", "100", "--lr", "1e-3", "--steps", "10"],  # no --out
                                  ["predict", "mlp", "fields", "--out", "x"],
                                  ["predict", "lora", "no_such_constructor", "--out", "x"],
                                  ["predict", "lora", "orthonormal", "--k", "two", "--xi", "1", "--d", "100",
                                   "--lr", "1e-3", "--steps", "10", "--out", "x"],
                                  ["validate", "--device", "tpu"],
                                  ["predict", "lora", "orthonormal", "--k", "4", "--xi", "1", "--d", "100", "--lr",
                                   "1e-3", "--steps", "10", "--predict-convention", "x", "--out", "y"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2 and "usage:" in capsys.readouterr().err


def test_invalid_value_is_usage_error_naming_parameter(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["predict", "lora", "orthonormal", "--k", "4", "--xi", "-1", "--d", "100", "--lr", "1e-3",
                  "--steps", "10", "--out", str(tmp_path / "x.npz")])
    assert e.value.code == 2 and "'xi'" in capsys.readouterr().err


def test_predict_writes_loadable_prediction(tmp_path, capsys):
    out = tmp_path / "traj.npz"
    status = cli.main(["predict", "lora", "orthonormal", "--k", "4", "--xi", "1", "--activation", "relu",
                       "--d", "200", "--lr", "4e-5", "--steps", "500", "--predict-convention", "paper",
                       "--out", str(out)])
    assert status == 0 and str(out) in capsys.readouterr().out
    pred = popdyn.load(out)
    assert isinstance(pred, popdyn.Prediction) and pred.t[-1] == 500 and np.all(np.abs(pred["m"]) <= 1)
    from popdyn.models import lora
    direct = popdyn.predict(lora.Problem.orthonormal(4, 1.0, "relu", 0), d=200, lr=4e-5, steps=500,
                            convention="paper")
    np.testing.assert_array_equal(pred["m"], direct["m"])  # same call, same numbers (delta = 0.008: paper-ODE regime)


@pytest.mark.parametrize("argv", [["modular", "fields", "--p", "7", "--k", "2"],
                                  ["looped", "fig8_1", "--n", "8", "--T", "3"]])
def test_predict_reaches_other_models(argv, tmp_path):
    out = tmp_path / "p.npz"
    assert cli.main(["predict", *argv, "--out", str(out)]) == 0
    assert isinstance(popdyn.load(out), popdyn.Prediction)


def test_simulate_writes_loadable_simulation(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "sim.npz"
    assert cli.main(["simulate", "lora", "orthonormal", "--k", "4", "--xi", "1", "--d", "50", "--lr", "1e-3",
                     "--steps", "20", "--seeds", "2", "--out", str(out)]) == 0
    sim = popdyn.load(out)
    assert isinstance(sim, popdyn.Simulation) and sim.n_seeds == 2


def test_validate_runs_the_runner(tmp_path, monkeypatch):
    from validation import claims as claims_pkg
    from validation.claims import Claim, ClaimResult
    c = Claim(id="fake.ok", model="fake", title="t", source="s", metric="m", tolerance=1.0, tolerance_origin="o",
              quick={}, full={}, run=lambda size, device, outdir: ClaimResult(0.0))
    monkeypatch.setitem(claims_pkg.REGISTRY, c.id, c)
    assert cli.main(["validate", "fake", "--quick", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "REPORT.md").exists() and (tmp_path / "fake.ok.json").exists()


def test_import_popdyn_does_not_import_validation():
    code = "import sys, popdyn, popdyn.cli; print('validation' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
