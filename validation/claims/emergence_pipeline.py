"""The whole three-stage pipeline of seed 002: ``popdyn.predict`` against ``popdyn.simulate`` (spec §1.4, §2.8, §4 E1).

* ``emergence.pipeline``: the population theory of all three stages (steps 1-2 to the two-step features, then
  the exact reduced GD of the classifier stage) predicts the test error of the torch network trained on n_train
  balanced samples from the same initialisation, over the whole classifier stage: the error plateaus at the
  count-only classifier's 5/32, so the claim is held on the way there, where a constant count-only "theory" is off. With i.i.d. (unbalanced) sampling the step-2 bias moves by
  ``a1 h(b1) E^[y]`` (spec §2.13(b), claim ``emergence.step2_bias_shift``), which the population (E y = 0) does not
  have; the claim reports that run beside the balanced one.
"""
from __future__ import annotations

import numpy as np

import popdyn
from popdyn.models import emergence as em
from popdyn.plot import claim_title, plot_curves

from . import REGISTRY, ClaimResult, claim

_TOL = 0.02


@claim(id="emergence.pipeline", model="emergence",
       title="Steps 1-2 + classifier stage: the population theory predicts the trained network's test error "
             "(balanced classes, assumption A0)",
       source="seed 002 (seeds/002_b4668463d87e622f.txt) L214-236 (network, schedule), L3169-3260 (Thm 26); "
              "specs/emergence.md §1.4, §2.8, §2.13(b), §4 E1",
       metric="max over the recorded steps t >= 2 (the classifier stage) of |mean over seeds of the simulated test "
              "error at t - predicted error at t| (parity, p_o = 1/2, theory schedule, balanced samples)",
       tolerance=_TOL,
       tolerance_origin="test error on 1e4 points has SE 0.0036 per seed, and the finite-n features move the plateau "
                        "by about 0.006 between seeds (0.150, 0.162 at m = 50, n = 2e4): 0.02 is about 3 combined SE; "
                        "the paper's 100% (error 0) is 0.156 away at the plateau, the count-only classifier ~0.3 away "
                        "before the plateau",
       quick={"D": 100, "k": 5, "width": 50, "steps": 300, "n_train": 20_000, "seeds": 3, "iid": False},
       full={"D": 100, "k": 5, "width": 100, "steps": 600, "n_train": 50_000, "seeds": 5, "iid": True},
       kind="training",
       nulls={"count_only": "the best count-only classifier at every step (error 1 - count-threshold ceiling = 5/32): "
                            "the plateau without the dynamics that reach it",
              "paper_table1": "the paper's Table 1: the network at 100 % (error 0) at every step"})
def pipeline(size, device, outdir):
    problem = em.Problem.parity(D=size["D"], k=size["k"], width=size["width"])
    pred = popdyn.predict(problem, steps=size["steps"])
    runs = {balanced: popdyn.simulate(problem, steps=size["steps"], seeds=size["seeds"], n_train=size["n_train"],
                                      batch=1000, n_test=10_000, balanced=balanced, device=device)
            for balanced in ((True, False) if size.get("iid", True) else (True,))}
    t = runs[True].t
    theory = np.interp(t, pred.t, pred["error"])
    sim = {b: np.asarray(r["error"]) for b, r in runs.items()}
    stage3 = t >= pred.t[0]
    dev = np.abs(sim[True].mean(0) - theory)[stage3]
    gap = float(dev.max())
    ceiling = 1 - em.count_threshold_ceiling(problem.model)
    nulls = {"count_only": float(np.abs(sim[True].mean(0) - ceiling)[stage3].max()),
             "paper_table1": float(np.abs(sim[True].mean(0))[stage3].max())}
    curves = {"population theory": theory, "torch, balanced samples": sim[True].mean(0)}
    bands = {"torch, balanced samples": 2 * sim[True].std(0, ddof=1)}
    if False in sim:
        curves["torch, i.i.d. samples"] = sim[False].mean(0)
        bands["torch, i.i.d. samples"] = 2 * sim[False].std(0, ddof=1)
    fig = plot_curves(t, curves, outdir / "emergence.pipeline.png", bands=bands,
                      refs={"count-threshold ceiling (error)": ceiling},
                      styles={"population theory": {"ls": "--", "color": "k"}},
                      xlabel="step t", ylabel="test error",
                      title=claim_title(REGISTRY["emergence.pipeline"], gap,
                                        what="max_t |sim - theory| (balanced)"))
    rows = [{"t": int(ti), "predicted": float(th), "sim_balanced": float(sb), "sim_balanced_sd": float(sd)}
            for ti, th, sb, sd in zip(t, theory, sim[True].mean(0), sim[True].std(0, ddof=1))]
    details = {"ceiling_error": ceiling, "final_gap": float(abs(sim[True][:, -1].mean() - theory[-1])),
               "final_seed_errors": sim[True][:, -1].tolist(), "t_worst": int(t[stage3][np.argmax(dev)])}
    iid = ""
    if False in sim:
        details["iid_final_gap"] = float(abs(sim[False][:, -1].mean() - theory[-1]))
        iid = f"; i.i.d. sampling at t = {int(t[-1])}: {sim[False][:, -1].mean():.4f} (step-2 bias shift)"
    return ClaimResult(measured=gap, figure=str(fig), table=rows, nulls=nulls, details=details,
                       checks={"simulated errors finite": bool(np.all(np.isfinite(sim[True]))),
                               "the predicted error moves by > 0.1 over the stage (a non-trivial curve)":
                                   float(np.ptp(theory[stage3])) > 0.1},
                       message=f"balanced: max_t |sim - theory| = {gap:.4f} (at t = {details['t_worst']}); at "
                               f"t = {int(t[-1])} {sim[True][:, -1].mean():.4f} vs {theory[-1]:.4f}; nulls: count-only "
                               f"{nulls['count_only']:.3f}, paper's error 0 {nulls['paper_table1']:.3f}" + iid)
