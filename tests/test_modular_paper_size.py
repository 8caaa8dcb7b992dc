"""The paper-size script's numbers are those of popdyn's diagnostics on the saved run (a tiny run stands in)."""
import json

import numpy as np

import popdyn
from popdyn.models import modular
from popdyn.models.modular import TransformerProblem
from popdyn.validation import modular_paper_size as mps


def test_summary_reads_the_saved_run(tmp_path):
    sim = popdyn.simulate(TransformerProblem(p=5, k=2, heads=2, d_model=16, d_head=4, d_mlp=8), steps=30, lr=1e-2,
                          weight_decay=1e-3, batch=8, train_fraction=0.5, seeds=1, n_points=4, weights=True)
    sim.save(tmp_path / "run.npz")
    s = mps.summary(tmp_path / "run.npz")
    acc = sim["train_acc"][0]
    hit = np.flatnonzero(acc >= 0.5)
    assert s["plateau_left_by_step"] == (int(sim.t[hit[0]]) if hit.size else None)
    assert s["final"]["test_acc"] == float(sim["test_acc"][0, -1])
    assert s["best_test_acc"] == float(sim["test_acc"][0].max())
    att = modular.attention_diagnostics(sim["E"][0], sim["WQ"][0, 0], sim["WK"][0, 0])
    assert s["heads"]["frequency_power_median"] == float(np.median(att["frequency_power"]))
    assert sum(s["heads"]["dominant_frequency_counts"]) == 2 and sum(s["neurons"]["dominant_frequency_counts"]) == 8
    assert s["options"]["weight_decay"] == 1e-3 and s["options"]["train_fraction"] == 0.5
    mps.main([str(tmp_path / "run.npz"), "--out", str(tmp_path)])
    assert json.loads((tmp_path / "modular_paper_size.json").read_text()) == [s]
    assert (tmp_path / "modular_paper_size.png").stat().st_size > 0
