"""The examples run (at small sizes) and write their figures: an example no test runs will rot."""
import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_lora_quickstart(tmp_path):
    pytest.importorskip("torch")
    comp = _load("lora_quickstart").main(tmp_path / "q.png")
    assert (tmp_path / "q.png").exists() and comp.metrics["m"]["sup_gap"] < 0.2  # 0.2: 4 seeds at d = 500


def test_sweep_lora_dask(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("distributed")
    res = _load("sweep_lora_dask").main(tmp_path / "s.png", grid={"d": [60, 120], "delta": [0.1]}, seeds=2)
    assert (tmp_path / "s.png").exists() and len(res) == 4 and not res.errors


def test_multitask_quickstart(tmp_path):
    pytest.importorskip("torch")
    comp = _load("multitask_quickstart").main(tmp_path / "m.png", n_train=2 ** 14)
    assert (tmp_path / "m.png").exists() and comp.metrics["kappa"]["max_z"] < 5  # 5 SE of the seed mean


def test_every_model(tmp_path):
    pytest.importorskip("torch")
    rows = _load("every_model").main(tmp_path, names=["looped", "resnet"])
    assert [r[0] for r in rows] == ["looped", "resnet"] and all(r[2].exists() for r in rows)
