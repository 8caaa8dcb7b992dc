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
    assert p.parse_args(["validate"]).jobs is None  # one process per core unless told
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


def test_flags_are_generated_from_constructor_and_the_option_table():
    from popdyn.models import lora
    p, make, ctor, run = cli._model_parser("predict", "lora", "orthonormal", lora.Problem)
    assert make == lora.Problem.orthonormal
    assert {"k", "xi", "activation", "seed", "lam", "normalisation"} <= set(ctor.values())
    assert set(run.values()) == {o.name for o in lora.Problem.options.for_call("predict") if o.cli}
    flags = {a.option_strings[0] for a in p._actions if a.option_strings}
    assert "--problem-seed" in flags and "--seed" in flags  # the constructor's seed yields to the run option's
    ns = p.parse_args(["--k", "8", "--xi", "1", "--d", "100", "--lr", "1e-3", "--steps", "10", "--out", "x"])
    assert (ns.problem__k, ns.problem__xi, ns.option__d, ns.option__lr) == (8, 1, 100, 1e-3)
    assert not hasattr(ns, "option__m0")  # defaults are the table's, applied by the API
    helps = {a.dest: a.help for a in p._actions}
    assert helps["option__lr"] == lora.Problem.options["lr"].describe()  # help from the one table
    assert all("``" not in (h or "") and ":math:" not in (h or "") for h in helps.values())  # no RST


def test_models_lists_the_catalogue(capsys):
    assert cli.main(["models"]) == 0
    out = capsys.readouterr().out
    from popdyn.models import catalogue
    assert all(f"{e.name}: " in out for e in catalogue())
    assert cli.main(["models", "lora"]) == 0 and "predict options: d*, lr*, steps*" in capsys.readouterr().out


def test_predict_model_help_lists_the_constructors(capsys):
    assert cli.main(["predict", "lora", "-h"]) == 0
    out = capsys.readouterr().out
    assert "orthonormal" in out and "random_features" in out and "fields" in out


def test_an_unwritable_out_fails_before_the_work(tmp_path, capsys, monkeypatch):
    import popdyn
    monkeypatch.setattr(popdyn, "predict", lambda *a, **k: pytest.fail("the work started"))
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit) as e:
        cli.main(["predict", "lora", "orthonormal", "--k", "4", "--xi", "1", "--d", "100", "--lr", "1e-3",
                  "--steps", "10", "--out", str(tmp_path / "file" / "x.npz")])
    assert e.value.code == 2 and "cannot write" in capsys.readouterr().err


def test_compare_and_plot_saved_results(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    common = ["orthonormal", "--k", "4", "--xi", "1", "--d", "100", "--lr", "2e-3", "--steps", "200",
              "--n_points", "11"]
    assert cli.main(["predict", "lora", *common, "--out", str(tmp_path / "p.npz")]) == 0
    assert cli.main(["simulate", "lora", *common, "--seeds", "2", "--out", str(tmp_path / "s.npz")]) == 0
    capsys.readouterr()
    assert cli.main(["compare", str(tmp_path / "p.npz"), str(tmp_path / "s.npz"), "--plot",
                     str(tmp_path / "c.png")]) == 0
    out = capsys.readouterr().out
    assert "sup_gap=" in out and (tmp_path / "c.png").stat().st_size > 0
    assert cli.main(["plot", str(tmp_path / "p.npz"), "--out", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").stat().st_size > 0
    assert cli.main(["simulate", "lora", *common[:4], "2", *common[5:], "--seeds", "2", "--out",
                     str(tmp_path / "s2.npz")]) == 0  # xi = 2: another problem
    with pytest.raises(SystemExit) as e:
        cli.main(["compare", str(tmp_path / "p.npz"), str(tmp_path / "s2.npz")])
    assert e.value.code == 2 and "problem field 'xi'" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["predict", "lora", "orthonormal", "--k", "4", "--xi", "1",
                                                       "--d", "100", "--lr", "1e-3", "--steps", "10"],  # no --out
                                  ["predict", "mlp", "fields", "--out", "x"],
                                  ["predict", "lora", "no_such_constructor", "--out", "x"],
                                  ["predict", "lora", "orthonormal", "--k", "two", "--xi", "1", "--d", "100",
                                   "--lr", "1e-3", "--steps", "10", "--out", "x"],
                                  ["validate", "--device", "tpu"],
                                  ["predict", "lora", "orthonormal", "--k", "4", "--xi", "1", "--d", "100", "--lr",
                                   "1e-3", "--steps", "10", "--convention", "x", "--out", "y"]])
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
                       "--d", "200", "--lr", "4e-5", "--steps", "500", "--convention", "paper",
                       "--out", str(out)])
    assert status == 0 and str(out) in capsys.readouterr().out
    pred = popdyn.load(out)
    assert isinstance(pred, popdyn.Prediction) and pred.t[-1] == 500 and np.all(np.abs(pred["m"]) <= 1)
    from popdyn.models import lora
    direct = popdyn.predict(lora.Problem.orthonormal(4, 1.0, "relu", 0), d=200, lr=4e-5, steps=500,
                            convention="paper")
    np.testing.assert_array_equal(pred["m"], direct["m"])  # same call, same numbers (delta = 0.008: paper-ODE regime)


@pytest.mark.parametrize("argv", [["modular", "fields", "--p", "7", "--k", "2"],
                                  ["looped", "fig8_1", "--context", "8", "--loops", "3"]])
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
    from popdyn.validation import claims as claims_pkg
    from popdyn.validation.claims import Claim, ClaimResult
    c = Claim(id="fake.ok", model="fake", title="t", source="s", metric="m", tolerance=1.0, tolerance_origin="o",
              quick={}, full={}, run=lambda size, device, outdir: ClaimResult(0.0))
    monkeypatch.setitem(claims_pkg.REGISTRY, c.id, c)
    assert cli.main(["validate", "fake", "--quick", "--jobs", "1", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "REPORT.md").exists() and (tmp_path / "fake.ok.json").exists()


def test_import_popdyn_does_not_import_validation():
    code = "import sys, popdyn, popdyn.cli; print('popdyn.validation' in sys.modules or 'validation' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
