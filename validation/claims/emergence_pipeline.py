"""The whole three-stage pipeline of [Shi22]: ``popdyn.predict`` against ``popdyn.simulate`` (Section 3.1, App. E.1).

* ``emergence.pipeline``: the population theory of all three stages (steps 1-2 to the two-step features, then
  the exact reduced GD of the classifier stage) predicts the test error of the torch network trained on n_train
  balanced samples from the same initialisation, over the whole classifier stage: the error plateaus at the
  count-only classifier's 5/32, so the claim is held on the way there, where a constant count-only "theory" is off. With i.i.d. (unbalanced) sampling the step-2 bias moves by
  ``a1 h(b1) E^[y]`` (derived here, docs/emergence.md; claim ``emergence.step2_bias_shift``), which the population (E y = 0) does not
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
       title="Steps 1-2 + classifier stage: the population theory predicts the trained network's test hinge loss "
             "and error over the whole classifier stage (balanced classes, assumption A0)",
       source="[Shi22, Section 3.1 (network, schedule), Theorem 26]",
       metric="max over the recorded steps 2 < t <= T of the classifier stage of the larger of |mean over seeds of "
              "the simulated test error - predicted error| and |simulated test hinge loss - predicted hinge loss| "
              "(parity, p_o = 1/2, theory schedule, balanced samples; at t = 2 the population output is exactly 0, a "
              "tie, so the error is left out there)",
       tolerance=_TOL,
       tolerance_origin="test error on 1e4 points has SE 0.0036 per seed, and the finite-n features move the plateau "
                        "by about 0.006 between seeds (0.150, 0.162 at m = 50, n = 2e4): 0.02 is about 3 combined SE; "
                        "the paper's 100% (error 0) is 0.156 away; the error sits at 5/32 from t = 3 on in theory and "
                        "torch alike, so the loss carries the stage-3 dynamics (1 -> 0.61 at m = 50, T = 300): the "
                        "best count-linear predictor's hinge 0.5 is ~0.5 away early in the stage",
       quick={"D": 100, "k": 5, "width": 50, "steps": 300, "n_train": 20_000, "seeds": 3, "iid": False},
       full={"D": 100, "k": 5, "width": 100, "steps": 600, "n_train": 50_000, "seeds": 5, "iid": True},
       kind="training",
       nulls={"count_only": "the network is the best count-only classifier at every step: the hinge-optimal linear "
                            "function of the count (error 1 - count-threshold ceiling = 5/32, hinge 0.5)",
              "paper_table1": "the paper's Table 1: the network at 100 % (error 0, hinge 0 as Thm 26's large-m limit) "
                              "at every step"})
def pipeline(size, device, outdir):
    problem = em.Problem.parity(D=size["D"], k=size["k"], width=size["width"])
    pred = popdyn.predict(problem, steps=size["steps"])
    runs = {balanced: popdyn.simulate(problem, steps=size["steps"], seeds=size["seeds"], n_train=size["n_train"],
                                      batch=1000, n_test=10_000, balanced=balanced, device=device)
            for balanced in ((True, False) if size.get("iid", True) else (True,))}
    t = runs[True].t
    theory = np.interp(t, pred.t, pred["error"])
    L_theory = np.interp(t, pred.t, pred["loss"])
    sim = {b: np.asarray(r["error"]) for b, r in runs.items()}
    L_sim = np.asarray(runs[True]["loss"]).mean(0)
    stage3 = t > pred.t[0]
    dev_err = np.abs(sim[True].mean(0) - theory)[stage3]
    dev_loss = np.abs(L_sim - L_theory)[stage3]
    dev = np.maximum(dev_err, dev_loss)
    gap = float(dev.max())
    ceiling = 1 - em.count_threshold_ceiling(problem.model)
    pi, yc = problem.model.count_law()                    # the hinge-optimal linear function of the count
    F = np.c_[np.ones(len(pi)), np.arange(len(pi))]
    lin_loss, lin_err = em.hinge_and_error(F, pi, yc, em.optimal_second_layer(F, pi, yc)[0])

    def null(err, loss):
        return float(np.maximum(np.abs(sim[True].mean(0) - err), np.abs(L_sim - loss))[stage3].max())
    nulls = {"count_only": null(lin_err, lin_loss), "paper_table1": null(0.0, 0.0)}
    curves = {"population theory": theory, "torch, balanced samples": sim[True].mean(0),
              "population theory: hinge loss": L_theory, "torch, balanced: hinge loss": L_sim}
    bands = {"torch, balanced samples": 2 * sim[True].std(0, ddof=1)}
    if False in sim:
        curves["torch, i.i.d. samples"] = sim[False].mean(0)
        bands["torch, i.i.d. samples"] = 2 * sim[False].std(0, ddof=1)
    fig = plot_curves(t, curves, outdir / "emergence.pipeline.png", bands=bands,
                      refs={"count-threshold ceiling (error)": ceiling,
                            "best count-linear predictor (hinge)": float(lin_loss)},
                      styles={"population theory": {"ls": "--", "color": "k"},
                              "population theory: hinge loss": {"ls": ":", "color": "k"}},
                      xlabel="step t", ylabel="test error / test hinge loss",
                      title=claim_title(REGISTRY["emergence.pipeline"], gap,
                                        what="max_t |sim - theory| (balanced)"))
    rows = [{"t": int(ti), "predicted_error": float(th), "sim_error": float(sb), "sim_error_sd": float(sd),
             "predicted_loss": float(lt), "sim_loss": float(ls)}
            for ti, th, sb, sd, lt, ls in zip(t, theory, sim[True].mean(0), sim[True].std(0, ddof=1), L_theory, L_sim)]
    details = {"ceiling_error": ceiling, "count_linear_loss": float(lin_loss), "count_linear_error": float(lin_err),
               "max_error_gap": float(dev_err.max()), "max_loss_gap": float(dev_loss.max()), "final_gap": float(abs(sim[True][:, -1].mean() - theory[-1])),
               "final_seed_errors": sim[True][:, -1].tolist(), "t_worst": int(t[stage3][np.argmax(dev)])}
    iid = ""
    if False in sim:
        details["iid_final_gap"] = float(abs(sim[False][:, -1].mean() - theory[-1]))
        iid = f"; i.i.d. sampling at t = {int(t[-1])}: {sim[False][:, -1].mean():.4f} (step-2 bias shift)"
    return ClaimResult(measured=gap, figure=str(fig), table=rows, nulls=nulls, details=details,
                       checks={"simulated errors finite": bool(np.all(np.isfinite(sim[True]))),
                               "the predicted loss moves by > 0.1 over the stage (a non-trivial curve)":
                                   float(np.ptp(L_theory[stage3])) > 0.1},
                       message=f"balanced: max_t |sim - theory| = {gap:.4f} (at t = {details['t_worst']}; error "
                               f"{dev_err.max():.4f}, loss {dev_loss.max():.4f}); at t = {int(t[-1])} error "
                               f"{sim[True][:, -1].mean():.4f} vs {theory[-1]:.4f}, loss {L_sim[-1]:.4f} vs "
                               f"{L_theory[-1]:.4f}; nulls: count-only "
                               f"{nulls['count_only']:.3f}, paper's error 0 {nulls['paper_table1']:.3f}" + iid)
