"""The ``popdyn`` command: parsing, usage errors (exit 2), predict/simulate writing loadable files."""
import subprocess
import sys

import numpy as np
import pytest

import popdyn
from popdyn import cli


def test_parser_reads_every_command():
    p = cli.build_parser()
    v = p.parse_args(["validate", "lora", "lora.glm_limit", "--quick", "--device", "cuda", "--force", "--out", "r"])
    assert (v.names, v.quick, v.device, v.force, str(v.out)) == (["lora", "lora.glm_limit"], True, "cuda", True, "r")
    assert p.parse_args(["bench", "--quick"]).quick
    pr = p.parse_args(["predict", "lora", "--k", "8", "--xi", "1", "--activation", "relu", "--d", "2000",
                       "--lr", "2.5e-4", "--steps", "20000", "--seed", "3", "--m0", "0.1",
                       "--convention", "paper", "--out", "traj.npz"])
    assert (pr.k, pr.xi, pr.d, pr.lr, pr.steps, pr.seed, pr.m0, pr.convention) == (
        8, 1.0, 2000, 2.5e-4, 20000, 3, 0.1, "paper")
    s = p.parse_args(["simulate", "lora", "--seeds", "2", "--out", "s.npz"])
    assert (s.seeds, s.device, s.k) == (2, "cpu", 8)


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["predict", "lora"],  # --out is required
                                  ["predict", "mlp", "--out", "x"], ["predict", "lora", "--k", "two", "--out", "x"],
                                  ["validate", "--device", "tpu"], ["predict", "lora", "--convention", "x", "--out", "y"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2 and "usage:" in capsys.readouterr().err


def test_invalid_value_is_usage_error_naming_parameter(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["predict", "lora", "--xi", "-1", "--out", str(tmp_path / "x.npz")])
    assert e.value.code == 2 and "'xi'" in capsys.readouterr().err


def test_predict_writes_loadable_prediction(tmp_path, capsys):
    out = tmp_path / "traj.npz"
    status = cli.main(["predict", "lora", "--k", "4", "--xi", "1", "--activation", "relu", "--d", "200",
                       "--lr", "4e-5", "--steps", "500", "--convention", "paper", "--out", str(out)])
    assert status == 0 and str(out) in capsys.readouterr().out
    pred = popdyn.load(out)
    assert isinstance(pred, popdyn.Prediction) and pred.t[-1] == 500 and np.all(np.abs(pred["m"]) <= 1)
    from popdyn.models import lora
    direct = popdyn.predict(lora.Problem.orthonormal(4, 1.0, "relu", 0), d=200, lr=4e-5, steps=500,
                            convention="paper")
    np.testing.assert_array_equal(pred["m"], direct["m"])  # same call, same numbers (delta = 0.008: paper-ODE regime)


def test_simulate_writes_loadable_simulation(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "sim.npz"
    assert cli.main(["simulate", "lora", "--k", "4", "--d", "50", "--lr", "1e-3", "--steps", "20",
                     "--seeds", "2", "--out", str(out)]) == 0
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
