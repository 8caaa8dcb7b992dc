"""Tables 2, 3 and 5 of [Shi22] at CPU scale (App. E.1.2, E.2.1, E.2.3): the network against fixed features, one
step and no structure, for the interval labeling, other input dimensions d and other sample sizes n.

* ``emergence.table2`` (E2, Table 2, Figure 7): interval labeling, k = 30, ``P(phi~_j = 1) = 2/3`` on A, y = +1 iff
  the count lies in [20, 30] (a count threshold: a linear function of the count separates it).
* ``emergence.table3`` (E3, Table 3, Figure 9): Table 1's parity in R^d with d = 100 and d = 2000.
* ``emergence.table5`` (E5, Table 5, Figure 13): Table 1's parity with n = 25000 and n = 10000 (m = 50 there, as
  the paper shrinks the network).

Protocol as ``emergence.table1`` (``validation/claims/emergence_table.py``: the theory schedule's steps 1-2 on the
full sample, then mini-batch SGD with the declared step sizes ``_LR``; every seed starts at one initialisation and
the seeds vary the samples). One Step and Two Step are the paper's "best classifiers trained on top" of the frozen
step-1 / step-2 features: the hinge LP with an intercept (``_one_step_best``) on the network run's own parameters
after step 1 and step 2 (those steps are the network's, full batch); after step 1 on its first ``lp_neurons``
neurons (the one-step features carry the count only linearly: a few span them, the rest add noise the LP overfits),
after step 2 on every neuron, as the paper's classifier on top of the network. A few step-2 neurons do not suffice:
the population features of the first 20 neurons separate the parity's counts with l_inf-margin 0.005-0.006 only
(every neuron: 0.034 at m = 50, 0.23 at m = 300), and the sampled features of 3 of 8 seeds are then not separable
(training hinge 0.10-0.16, test 0.92-0.98; on every neuron 1.000 at all 8). The theory of every judged row is the population
one: the LP on the eta^(1) -> 0 two-step features over the counts (1 where separable), the hinge-optimal linear
function of the count for One Step (the one-step features carry the count only linearly), the same two-step LP on
``no_structure(model)`` for the network without structure (chance for the parity, whose uniform A block carries no
first-order signal; separable for the interval labeling, whose count threshold still correlates with every
coordinate of A). The input dimension d does not enter the population theory (M is orthonormal and the kill step
removes the part of w outside span M); it enters the random-feature cosine, predicted from the shared
initialisation: the part of w outside span M has ``sigma_w^2 (d - D)`` expected squared norm. With the samples,
the pattern-coordinate init and the batches shared across d (x lies in span M, and the part of w outside it gets no
gradient), every method's accuracy is the same at every d: a check of Table 3.
"""
from __future__ import annotations

import math

import numpy as np

from popdyn.models.emergence import classifier, data, schedule, steps
from popdyn.plot import claim_title, legend_outside, save_figure, subplots

from . import REGISTRY, ClaimResult, claim
from .emergence_table import _LR, _init, _one_step_best

__all__ = []

_TOL = 0.03
_GAP = 0.10          # random features stay at least 10 points below the network on the parity (paper: >= 21.7)
_COS_TOL = 0.02      # random-feature max cosine against its prediction from the initialisation
#: Table 3: the runs in R^d share the pattern-coordinate samples, init and batches, and x lies in span M, so every
#: method's accuracy is the same at every d up to rounding (a test point whose output flips: 2e-4 at 5e3 points)
_D_TOL = 2e-3
#: last-stage step sizes on the interval labeling (k = 30): the parity's (``_LR``) leave random features and the NTK
#: at the majority class; pilot (seed 0, m = 50, n = 1e4, 200 steps): rf lr_a in {10, 100, 1e3}, ntk lr in
#: {0.1, 1, 10}. The network's hinge SGD reaches 0.96-0.99 and falls back to ~0.85 at every (lr, lr_a) of
#: {1e-4, 1e-3, 3e-3, 1e-2, 3e-2} x {10, 30, 100, 300}: reported, not judged
_LR_INTERVAL = _LR | {"network": (1e-2, 30.0), "no_structure": (1e-2, 30.0), "rf": (1.0, 100.0), "ntk": (1.0, None)}
#: the paper's rows, (train, test, cos): Network, NTK, RF, One Step, Two Step, Network w/o structure
_NAMES = ("network", "ntk", "rf", "one_step", "two_step", "no_structure")
_PAPER = {
    "table2": {"k30": ((1.0, 1.0, 1.0), (1.0, 1.0, None), (0.764, 0.732, 0.153), (0.441, 0.410, 0.901),
                       (1.0, 1.0, 0.994), (1.0, 1.0, 0.965))},
    "table3": {"d=100": ((1.0, 1.0, 1.0), (0.831, 0.815, None), (0.789, 0.783, 0.354), (0.530, 0.511, 0.967),
                         (1.0, 1.0, 1.0), (1.0, 0.510, 0.331)),
               "d=2000": ((1.0, 1.0, 0.998), (0.756, 0.754, None), (0.800, 0.770, 0.056), (0.5022, 0.5001, 0.560),
                          (1.0, 1.0, 0.998), (1.0, 0.525, 0.309))},
    "table5": {"n=25000": ((1.0, 1.0, 0.997), (0.840, 0.841, None), (0.786, 0.747, 0.105), (0.506, 0.500, 0.851),
                           (1.0, 1.0, 0.997), (1.0, 0.502, 0.230)),
               "n=10000": ((1.0, 1.0, 0.995), (0.739, 0.750, None), (0.716, 0.743, 0.096), (0.507, 0.503, 0.974),
                           (1.0, 1.0, 0.994), (1.0, 0.522, 0.176))}}


def _population(model, params0, sched):
    """Population test accuracies: the LP on the two-step features of ``model`` and of ``no_structure(model)``, and
    the hinge-optimal linear function of the count (One Step); with the LP losses."""
    out = {}
    for name, mdl in (("two_step", model), ("no_structure", data.no_structure(model))):
        pi, yc = mdl.count_law()
        F2 = steps.two_step_features(mdl, steps.two_step_limit(mdl, params0, sched[1].s, weighted=sched[1].weighted))
        a2, lp = classifier.optimal_second_layer(F2, pi, yc)
        out[name], out[f"{name}_lp_loss"] = 1.0 - classifier.hinge_and_error(F2, pi, yc, a2)[1], lp
    pi, yc = model.count_law()
    F1 = np.c_[np.ones(len(pi)), np.arange(len(pi))]
    a1, _ = classifier.optimal_second_layer(F1, pi, yc)
    out["one_step_best"] = 1.0 - classifier.hinge_and_error(F1, pi, yc, a1)[1]
    out["majority"] = {"structured": max(model.moments().p_plus, model.moments().p_minus),
                       "no_structure": max(data.no_structure(model).moments().p_plus,
                                           data.no_structure(model).moments().p_minus)}
    return out


def _rf_cos(model, params0, d, k):
    """Predicted max_i cos(w_i, sum_A M_j) at init in R^d: ``q_i . 1_A / sqrt(k (|q_i|^2 + sigma_w^2 (d - D)))``,
    the part of w outside span M drawn with sigma_w = 1/k (``popdyn.sim.emergence.train``; its squared norm is
    sigma_w^2 chi^2_{d-D}, relative sd sqrt(2/(d-D)))."""
    extra = (d - model.D) / k ** 2 if d is not None else 0.0
    Q = params0.Q
    return float(np.max(Q[:, :k].sum(1) / np.sqrt(k * ((Q ** 2).sum(1) + extra))))


def _setting(model, size, lr, judged, device, variant="lemma23"):
    """Every method of the tables on ``model`` at ``size``: rows of mean train/test accuracy (and per-seed sd) and
    max cosine, the judged accuracies with their theory, and the predicted random-feature cosine. The LP on the
    no-structure run's two-step features only where it is judged (on the parity those features are sample noise)."""
    from popdyn.sim import emergence as sim

    T, k = size["steps"], int(model.k)
    sched = schedule.theory_schedule(model, size["width"], steps=T, variant=variant)
    params0 = _init(model, size)
    pop = _population(model, params0, sched)
    runs = {}
    for method in size["methods"]:
        lr_w, lr_a = lr[method]
        runs[method] = sim.train(model, width=size["width"], method=method, schedule=sched, steps=T,
                                 n_train=size["n_train"], batch=1000, seeds=size["seeds"], lr=lr_w, lr_a=lr_a, lam=0.0,
                                 n_test=size["n_test"], init=params0, n_points=11, eval_samples=4000,
                                 coords="pattern" if size.get("d") is None else "input", d=size.get("d"),
                                 device=device)
    net = runs["network"]
    every = size | {"lp_neurons": 2 * size["width"]}     # the two-step LPs: on every neuron of the network
    best = {"one_step_best": _one_step_best(model, net, size),
            "two_step_best": _one_step_best(model, {"Q_1": net["Q_2"], "b_1": net["b_2"]}, every)}
    if "no_structure_two_step_best" in judged:
        ns = runs["no_structure"]
        best["no_structure_two_step_best"] = _one_step_best(data.no_structure(model),
                                                            {"Q_1": ns["Q_2"], "b_1": ns["b_2"]}, every)
    cos_t1 = lambda Q: float(np.abs(Q[..., :k].sum(-1) / (math.sqrt(k) * np.linalg.norm(Q, axis=-1))).max(-1).mean())
    rows = {m_: {"train": float(r["train_acc"][:, -1].mean()), "test": float(r["test_acc"][:, -1].mean()),
                 "test_sd": float(r["test_acc"][:, -1].std()),
                 "cos": None if m_ == "ntk" else float(r["cos"][:, -1].mean())} for m_, r in runs.items()}
    rows |= {m_: {"train": None, "test": float(v.mean()), "test_sd": float(v.std()),
                  "cos": cos_t1(net["Q_1"] if m_ == "one_step_best" else net["Q_2"])
                  if m_ != "no_structure_two_step_best" else cos_t1(runs["no_structure"]["Q_2"])}
              for m_, v in best.items()}
    theory = {"network": pop["two_step"], "two_step_best": pop["two_step"], "one_step_best": pop["one_step_best"],
              "no_structure": pop["no_structure"], "no_structure_two_step_best": pop["no_structure"]}
    return rows, theory, pop, _rf_cos(model, params0, size.get("d"), k), runs


def _paper_row(name, label, method):
    """The paper's (train, test, cos) of ``method`` (the One/Two Step rows for their LP twins)."""
    base = {"one_step_best": "one_step", "two_step_best": "two_step", "no_structure_two_step_best": "no_structure"}
    return _PAPER[name][label][_NAMES.index(base.get(method, method))]


def _table(name, settings, judged, nulls_of, device, outdir, lr=_LR):
    """Run every setting (label, model, size), judge ``judged`` rows against the population theory; ``nulls_of``
    maps a null to {row: its value} (replacing the theory of those rows)."""
    table, worst, null_gaps, details = [], 0.0, {n_: 0.0 for n_ in nulls_of}, {}
    checks = {}
    fig, (ax0, ax1) = subplots(2, panel_size=(5.6, 4.0))
    for i, (label, model, size) in enumerate(settings):
        rows, theory, pop, rf_cos, runs = _setting(model, size, lr, judged, device)
        for method, r in rows.items():
            paper = _paper_row(name, label, method)
            table.append({"setting": label, "method": method, "train": r["train"], "test": r["test"],
                          "test_sd": r["test_sd"], "cos": r["cos"], "theory_test": theory.get(method),
                          "judged": method in judged, "paper_train": paper[0], "paper_test": paper[1],
                          "paper_cos": paper[2]})
        gaps = {m_: abs(rows[m_]["test"] - theory[m_]) for m_ in judged}
        worst = max(worst, max(gaps.values()))
        for n_, repl in nulls_of.items():
            null_theory = theory | {m_: v(pop) for m_, v in repl.items()}
            null_gaps[n_] = max(null_gaps[n_], max(abs(rows[m_]["test"] - null_theory[m_]) for m_ in judged))
        details[label] = {"gaps": gaps, "population": {k_: v for k_, v in pop.items()}, "rf_cos_predicted": rf_cos}
        if "rf" in rows:
            checks[f"{label}: rf max cos within {_COS_TOL} of its prediction from the init ({rf_cos:.3f})"] = \
                abs(rows["rf"]["cos"] - rf_cos) <= _COS_TOL
        checks[f"{label}: the network learns the feature (max cos >= 0.99)"] = rows["network"]["cos"] >= 0.99
        checks[f"{label}: two-step population features LP-separable (loss <= 1e-9)"] = pop["two_step_lp_loss"] <= 1e-9
        if name != "table2":        # the parity: fixed features stay >= _GAP below the network
            for m_ in ("rf", "ntk"):
                if m_ in rows:
                    checks[f"{label}: {m_} test <= network test - {_GAP}"] = \
                        rows[m_]["test"] <= rows["network"]["test"] - _GAP
        for method, r in runs.items():
            ax0.plot(r.t, r["test_acc"].mean(0), color=f"C{list(runs).index(method)}",
                     ls=("-", "--", ":")[i % 3], label=f"{method} ({label})")
        x = np.arange(len(rows)) + 0.15 * i
        ax1.plot(x, [r["test"] for r in rows.values()], "o", color=f"C{i}", label=f"torch ({label})")
        ax1.plot(x, [_paper_row(name, label, m_)[1] for m_ in rows], "x", color=f"C{i}", ms=8,
                 label=f"paper ({label})")
        ax1.plot(x, [theory.get(m_, np.nan) for m_ in rows], "_", ms=20, mew=2, color="k",
                 label="theory" if i == 0 else None)
        ax1.set_xticks(np.arange(len(rows)), list(rows), rotation=35)
    if name == "table3":     # the inputs lie in span M: every method sees the same pattern-coordinate problem
        by = {(r["setting"], r["method"]): r["test"] for r in table}
        spread = max(abs(by[(a, m_)] - by[(b, m_)]) for a, _, _ in settings for b, _, _ in settings
                     for m_ in {r["method"] for r in table})
        details["max_accuracy_spread_over_d"] = spread
        checks[f"test accuracies equal across d within {_D_TOL}: {spread:.1e}"] = spread <= _D_TOL
    ax0.set(xlabel="step t", ylabel="test accuracy (mean over seeds)", xscale="symlog", title="test accuracy")
    ax1.set(ylabel="test accuracy", ylim=(0.35, 1.05), title=f"{name}: max |sim - theory| = {worst:.3f}")
    for ax in (ax0, ax1):
        legend_outside(ax)
    path = save_figure(fig, outdir / f"emergence.{name}.png", title=claim_title(
        REGISTRY[f"emergence.{name}"], worst, what="max |sim - theory| (judged rows)"))
    msg = "; ".join(f"{lab}: " + ", ".join(
        f"{r['method']} {r['test']:.3f}/{'-' if r['theory_test'] is None else format(r['theory_test'], '.3f')}/"
        f"{r['paper_test']:.3f}" for r in table if r["setting"] == lab) for lab, _, _ in settings)
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=table, nulls=null_gaps,
                       details=details | {"lr": {k_: list(v) for k_, v in lr.items()}},
                       message="test accuracy sim/theory/paper: " + msg + "; nulls: " + ", ".join(
                           f"{n_} {v:.3f}" for n_, v in null_gaps.items()))


_METHODS_QUICK = ("network", "no_structure", "rf")
_METHODS_FULL = ("network", "no_structure", "rf", "ntk")
_LP = {"n_lp": 4000, "lp_neurons": 10}


def _parity():
    return data.parity_mixture(100, 5, 0.5, independent_background=False)


@claim(id="emergence.table2", model="emergence",
       title="Table 2 at CPU scale (interval labeling, k = 30): the best classifiers on the one-step and two-step "
             "features, and on the two-step features without input structure, all reach 100 % (the count threshold "
             "is linear in the count), where the paper's One Step has 41.0 %",
       source="[Shi22, App. E.1.2 (interval labeling, Table 2, Figure 7)]",
       metric="max over {one step + best classifier, two step + best classifier, two step + best classifier without "
              "structure} of |mean test accuracy over seeds - theory| (theory: the population LP on the two-step "
              "features, with and without structure, and the hinge-optimal linear function of the count: 1 each). "
              "The network trained by hinge SGD, random features and the NTK are reported, not judged (at k = 30 the "
              "network's SGD reaches 0.96-0.99 and falls back to ~0.85 at every step size tried)",
       tolerance=_TOL,
       tolerance_origin="+-3 %; the LP rows' per-seed spread is 0.01-0.13 % at n = 5e4 and they sit 0.0-1.5 % below "
                        "1: the finite-sample step-2 features blur the count by about tan(theta) sqrt(k) sd(phi~_j), "
                        "theta the step-2 angle (measured max cos 0.998 with structure, 0.979 without: 0.16 and "
                        "0.56 counts; at n = 1e4 the one-step LP drops to 0.98); test SE <= 0.2 % at 5e3 points",
       quick={"D": 100, "k": 30, "width": 50, "steps": 200, "n_train": 50_000, "n_test": 5_000, "seeds": 2,
              "methods": _METHODS_QUICK} | _LP,
       full={"D": 100, "k": 30, "width": 100, "steps": 200, "n_train": 50_000, "n_test": 10_000, "seeds": 5,
             "methods": _METHODS_FULL} | _LP,
       kind="training",
       # "without structure the network learns nothing" (the majority class, 95.1 % on the no-structure law) is only
       # 0.049 from the theory's 1 and 0.03-0.04 from the measured row: not a usable null here (reported in details)
       nulls={"one_step_constant": "one step is not enough (the paper's Table 2, One Step 41.0 %): the one-step "
                                   "features support only a constant predictor, the majority class (58.5 %)"})
def table2(size, device, outdir):
    model = data.interval_labeling(size["D"], size["k"])
    return _table("table2", [("k30", model, size)],
                  ("one_step_best", "two_step_best", "no_structure_two_step_best"),
                  {"one_step_constant": {"one_step_best": lambda p: p["majority"]["structured"]}},
                  device, outdir, lr=_LR_INTERVAL)


_JUDGED_PARITY = ("network", "two_step_best", "one_step_best", "no_structure")
_NULLS_PARITY = {"one_step_constant": "one step is not enough (the paper's One Step at 50.0-51.1 %): the one-step "
                                      "features support only a constant predictor (50 %)"}
_NULL_PARITY = {"one_step_constant": {"one_step_best": lambda p: p["majority"]["structured"]}}


@claim(id="emergence.table3", model="emergence",
       title="Table 3 at CPU scale (d = 100 and d = 2000): the population theory does not depend on d: network and "
             "two-step features at 100 %, the best classifier on the one-step features at the count-threshold "
             "ceiling (84.4 %), no structure at chance; the random-feature cosine falls with d as the init predicts",
       source="[Shi22, App. E.2.1 (varying input dimension, Table 3, Figure 9)]",
       metric="max over d and over {network, two step + best classifier, one step + best classifier, no structure} "
              "of |mean test accuracy over seeds - theory| (theory as emergence.table1; independent of d)",
       tolerance=_TOL,
       tolerance_origin="+-3 %; per-seed spread of the judged rows <= 0.6 % (network and two step at 1.000, the "
                        "one-step LP 0.84-0.85, no structure 0.49-0.51); test SE 0.7 % at 5e3 points",
       quick={"D": 100, "k": 5, "ds": [100, 2000], "width": 50, "steps": 300, "n_train": 10_000, "n_test": 5_000,
              "seeds": 2, "methods": _METHODS_QUICK} | _LP,
       full={"D": 100, "k": 5, "ds": [100, 2000], "width": 300, "steps": 600, "n_train": 50_000, "n_test": 10_000,
             "seeds": 5, "methods": _METHODS_FULL, "n_lp": 10_000, "lp_neurons": 20},
       kind="training",
       nulls=_NULLS_PARITY)
def table3(size, device, outdir):
    model = _parity()
    return _table("table3", [(f"d={d}", model, size | {"d": d}) for d in size["ds"]], _JUDGED_PARITY, _NULL_PARITY,
                  device, outdir)


@claim(id="emergence.table5", model="emergence",
       title="Table 5 at CPU scale (n = 25000 and n = 10000 with m = 50): network and two-step features at 100 %, "
             "the best classifier on the one-step features at the count-threshold ceiling (84.4 %), no structure at "
             "chance, at both sample sizes",
       source="[Shi22, App. E.2.3 (varying sample size, Table 5, Figure 13)]",
       metric="max over n and over {network, two step + best classifier, one step + best classifier, no structure} "
              "of |mean test accuracy over seeds - theory| (theory as emergence.table1: the population limit; the "
              "n-dependence of the step-2 features is claim emergence.step2_cosine)",
       tolerance=_TOL,
       tolerance_origin="+-3 %; per-seed spread of the judged rows <= 0.6 % (the two-step LP on every neuron at the "
                        "full size's LP settings: 1.000 at 8 of 8 seeds at both n); test SE 0.7 % at 5e3 points",
       quick={"D": 100, "k": 5, "ns": [[25_000, 50], [10_000, 50]], "steps": 300, "n_test": 5_000, "seeds": 2,
              "methods": _METHODS_QUICK} | _LP,
       full={"D": 100, "k": 5, "ns": [[25_000, 300], [10_000, 50]], "steps": 600, "n_test": 10_000, "seeds": 5,
             "methods": _METHODS_FULL, "n_lp": 10_000, "lp_neurons": 20},
       kind="training",
       nulls=_NULLS_PARITY)
def table5(size, device, outdir):
    model = _parity()
    return _table("table5", [(f"n={n}", model, size | {"n_train": n, "width": m}) for n, m in size["ns"]],
                  _JUDGED_PARITY, _NULL_PARITY, device, outdir)
