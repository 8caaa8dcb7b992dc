"""The App. A.1 widths script: every (m, lr, wd) of the grid gets a row equal to a direct ``minnorm.sgd`` call, and a
rerun skips what is stored."""
import json

import numpy as np
import pytest

pytest.importorskip("torch")

from popdyn.sim.resnet import minnorm  # noqa: E402
from popdyn.validation import resnet_a1_widths as a1  # noqa: E402


def test_rows_match_sgd_and_a_rerun_resumes(tmp_path, capsys):
    rows = a1.main(["--quick", "--out", str(tmp_path)])
    grid = {(s["d"], m, lr, wd) for s in a1.QUICK for m in s["ms"] for lr in s["lrs"] for wd in s["wds"]}
    assert {(r["d"], r["m"], r["lr"], r["wd"]) for r in rows} == grid
    assert json.loads((tmp_path / "resnet_a1_widths.json").read_text()) == rows
    assert (tmp_path / "resnet_a1_widths.png").is_file()
    s = a1.QUICK[0]
    direct = minnorm.sgd(d=s["d"], N=s["N"], m=s["ms"][0], lrs=s["lrs"][:1], wds=s["wds"], epochs=s["epochs"],
                         batch=s["batch"], test=s["test"], dtype="float32")
    mine = sorted((r for r in rows if r["d"] == s["d"] and r["m"] == s["ms"][0]), key=lambda r: r["wd"])
    np.testing.assert_array_equal([r["test_mse"] for r in mine], direct["test_mse"])
    np.testing.assert_array_equal([r["norm"] for r in mine], direct["norm"])
    again = a1.main(["--quick", "--out", str(tmp_path)])
    assert again == rows and "0 tasks to run" in capsys.readouterr().out


def test_the_widest_tasks_go_first():
    ms = [t["m"] * t["N"] for t in a1.tasks(a1.SETTINGS)]
    assert ms == sorted(ms, reverse=True) and len(ms) == sum(len(s["ms"]) * len(s["lrs"]) for s in a1.SETTINGS)
