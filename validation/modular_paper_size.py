r"""Fig. 4.3 of [Shi24] at the paper's size, from stored GPU runs: ``python -m popdyn.validation.modular_paper_size
RUN.npz [RUN.npz ...]``.

A standalone script (no claim imports it). Each RUN is a ``popdyn.simulate`` result of
``modular.TransformerProblem.setting("fig4.3")`` (p = 31, k = 4, one layer, 160 heads, d_model 128) saved with
``weights=True``. It writes, where it is run:

* ``modular_paper_size.json``: per run, the options, the first recorded step with train accuracy >= 0.5 (the end
  of the log p plateau), the final and best accuracies, and the Fourier diagnostics of the final weights: the
  heads' attention power (:func:`popdyn.models.modular.attention_diagnostics`; Fig. 4.3 says "an apparent 2-dim
  cosine shape" without a number), the frequencies the heads and the MLP neurons use, and the neurons' max power
  (Lemma 4.10 predicts 1).
* ``modular_paper_size.png``: Fig. 4.3's layout for the first run (rows: random heads; left: the centred attention
  matrix ``E W^K W^{Q T} E^T``, right: its folded 2-D power spectrum), beside the runs' accuracies.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import popdyn
from popdyn.models import modular
from popdyn.results import atomic_write

__all__ = ["summary", "figure", "main"]


def _run(path):
    """Seed 0 of a saved run: (Simulation, its observables at seed 0, the attention diagnostics of its weights)."""
    sim = popdyn.load(path)
    o = {k: v[0] for k, v in sim.observables.items()}
    return sim, o, modular.attention_diagnostics(o["E"], o["WQ"][0], o["WK"][0])


def summary(path):
    """The numbers of one run (a dict, JSON-ready)."""
    sim, o, att = _run(path)
    t, meta = sim.t, sim.meta
    neu = modular.fourier_diagnostics(o["U"], o["W"])
    left = np.flatnonzero(o["train_acc"] >= 0.5)
    test = o.get("test_acc", o["train_acc"])
    heads = np.bincount(att["dominant_frequency"], minlength=o["E"].shape[0] // 2 + 1)[1:]
    neurons = np.bincount(neu["dominant_frequency"], minlength=o["E"].shape[0] // 2 + 1)[1:]
    return {"run": Path(path).name, "options": {k: meta["options"][k] for k in ("steps", "lr", "weight_decay", "batch",
                                                                             "train_fraction", "init_scale")},
            "dtype": meta["dtype"], "wall_time_s": round(meta["wall_time_s"], 1),
            "plateau_left_by_step": int(t[left[0]]) if left.size else None,
            "final": {"train_acc": float(o["train_acc"][-1]), "test_acc": float(test[-1]),
                      "loss": float(o["loss"][-1])},
            "best_test_acc": float(test.max()), "best_test_step": int(t[int(test.argmax())]),
            "heads": {"max_power_median": float(np.median(att["max_power"])),
                      "frequency_power_median": float(np.median(att["frequency_power"])),
                      "frequency_power_quartiles": np.quantile(att["frequency_power"], [0.25, 0.75]).tolist(),
                      "dominant_frequency_counts": heads.tolist()},
            "neurons": {"max_power_median": float(np.median(neu["max_power"])),
                        "dominant_frequency_counts": neurons.tolist()},
            "embedding_power": modular.embedding_spectrum(o["E"]).tolist()}


def figure(paths, out, heads=4, seed=0):
    """Fig. 4.3's layout for ``paths[0]`` (``heads`` random heads) and every run's train/test accuracy."""
    import matplotlib.pyplot as plt

    from popdyn.plot import legend_outside, save_figure

    sim, o, att = _run(paths[0])
    heads = min(heads, len(att["max_power"]))
    pick = np.sort(np.random.default_rng(seed).choice(len(att["max_power"]), heads, replace=False))
    fig = plt.figure(figsize=(11, 2.3 * heads), layout="constrained")
    grid = fig.add_gridspec(heads, 3)
    for r, h in enumerate(pick):
        a, b = fig.add_subplot(grid[r, 0]), fig.add_subplot(grid[r, 1])
        a.imshow(att["matrices"][h], cmap="RdBu_r", interpolation="nearest")
        a.set(title=f"head {h}: centred E W^K W^Q^T E^T", xlabel="query token b", ylabel="key token a")
        b.imshow(att["spectrum"][h], cmap="viridis", vmin=0, vmax=1, origin="lower", interpolation="nearest")
        b.set(title=f"2-D power (max {att['max_power'][h]:.2f}, frequency {att['frequency_power'][h]:.2f})",
              xlabel="query frequency", ylabel="key frequency")
    ax = fig.add_subplot(grid[:, 2])
    for i, p in enumerate(paths):
        run = popdyn.load(p)
        run_of = f"wd {run.meta['options']['weight_decay']:g}, data {run.meta['options']['train_fraction']:g}"
        ax.plot(run.t, run["train_acc"][0], "-", color=f"C{i}", label=f"train, {run_of}")
        if "test_acc" in run.observables:
            ax.plot(run.t, run["test_acc"][0], ":", color=f"C{i}", lw=2, label=f"test, {run_of}")
    ax.axhline(1 / o["E"].shape[0], color="0.5", ls="--", label="chance 1/p")
    ax.set(xlabel="AdamW step", ylabel="accuracy", title=f"{sim.meta['problem']}, init scale "
                                                         f"{sim.meta['options']['init_scale']:g}")
    legend_outside(ax, loc="below")
    wd0 = sim.meta["options"]["weight_decay"]
    return save_figure(fig, out, title=f"Fig. 4.3 at the paper's size (wd {wd0:g}): median head frequency power "
                                       f"{np.median(att['frequency_power']):.2f} (1 = one frequency)")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m popdyn.validation.modular_paper_size",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help=".npz results of popdyn.simulate with weights=True")
    ap.add_argument("--out", type=Path, default=Path("."), help="folder for the JSON and the figure")
    args = ap.parse_args(argv)
    rows = [summary(p) for p in args.runs]
    text = json.dumps(rows, indent=1) + "\n"
    atomic_write(args.out / "modular_paper_size.json", lambda f: f.write(text.encode()))
    print(figure(args.runs, args.out / "modular_paper_size.png"))
    for r in rows:
        print(r["run"], r["plateau_left_by_step"], r["final"], r["heads"]["frequency_power_median"])


if __name__ == "__main__":
    main()
