"""Multi-task ReLU pretraining claims ([Collins24], Collins et al.; experiments E1-E5, docs/multitask.md).

The paper reports no experiments; these claims reproduce its statements.

* ``multitask.one_step_map``: the exact population one-step map (popdyn.predict) against the paper's algorithm
  trained in torch on n stratified Gaussian samples, neuron by neuron (E1).
* ``multitask.kappa_vs_r``: the ground-truth part is scaled by kappa = eta^2 2^-r/(2 pi), flat in r after the
  2^r rescaling, not the paper's eta^2 2^-r-2 (E2): the exact map for r = 1..6 and the simulation.
* ``multitask.ratio_vs_d``: Thm 4.2's ratio ||Pi_perp W+|| / sigma_r(Pi_par W+) at T = infinity decays like
  d^-1.5, and vanishes at r = 1 (E3).
* ``multitask.ratio_vs_T``: with T random labelings the ratio follows the leading-order Walsh map (derived here, docs/multitask.md)
  and decays like T^-1/2; the adaptive weight decay removes the leakage (E4).
* ``multitask.task_structure``: only the degree-0/1 Walsh content of the tasks drives feature learning:
  degree >= 2 parities learn nothing, dictators learn without perp cancellation (E5), exact map and simulation.

:func:`bench_multitask` times the exact map (numba kernel against vectorised numpy) and predict against simulate.
"""
from __future__ import annotations

import math
import time

import numpy as np

import popdyn
from popdyn.models import multitask as mt
from popdyn.models.multitask import bounds
from popdyn.plot import claim_title, discrete_axis, legend_outside, save_figure, subplots

from . import REGISTRY, ClaimResult, claim

__all__ = ["sim_stats", "quad_moments_numpy", "bench_multitask"]

_Z = 5.0            # "within 5 standard errors" (E1/E2); SEs from >= 16 seeds: P(|t_15| > 5) = 1.6e-4
_TOL_KAPPA = 0.02   # kappa_vs_r: exact map vs eta^2 2^-r/(2 pi), relative (<= 0.4 % at d = 200, r <= 6)
_TOL_SLOPE_D = 0.3  # ratio_vs_d: |slope + 1.5|
_TOL_WALSH = 0.10   # ratio_vs_T: leading-order Walsh ratio vs the exact map (E3/E4 within 10 %)
_TOL_STRUCT = 0.05  # task_structure: |kappa_exact - kappa_LO| / kappa_par
_LR = 1.0           # the step size eta of every claim (the paper's Theta(1); simulate's default lr)


def sim_stats(sim):
    """Mean over seeds and per-neuron noise scale of a multitask simulation: ``(W_mean, sigma_j, kappa, kappa_se)``.

    ``sigma_j = sqrt(sum_coords Var_seeds / S)`` is the standard error of the distance of neuron j's mean to any
    fixed vector (under the correct theory ``||W_mean_j - W_pop_j|| / sigma_j`` is about 1).
    """
    W = np.asarray(sim["W_plus"])
    S = W.shape[0]
    sigma = np.sqrt(W.var(axis=0, ddof=1).sum(axis=1) / S)
    k = np.asarray(sim["kappa"])
    return W.mean(axis=0), sigma, float(k.mean()), float(k.std(ddof=1) / math.sqrt(S))


def _simulate(problem, size, device):
    return popdyn.simulate(problem, n_train=size["n_train"], seeds=size["seeds"], lr=_LR, device=device)


# ---- E1: the one-step map against the simulation ---------------------------------------------------------------

@claim(id="multitask.one_step_map", model="multitask",
       title="Prop. 4.1 / Lemma A.10 made exact: the population one-step map equals the trained W+ neuron by neuron",
       source="[Collins24, Section 3 (algorithm), Lemmas A.3-A.6, Lemma A.10]",
       metric="max over settings and neurons j of ||mean_seeds W+_sim,j - W+_pop,j|| / sigma_j (sigma_j: standard "
              "error of the seed mean of neuron j, from the spread over seeds)",
       tolerance=_Z,
       tolerance_origin="within 5 standard errors: under the correct map the ratio is about "
                        "1: for isotropic noise its square is F(d, d (S - 1)) (sigma from S = 16 seeds quick, 24 full), "
                        "beyond 5 with probability < 1e-50 over the 24-56 neurons (recorded max 1.29); one dominant "
                        "noise direction would make it |t_{S-1}|, 3.8e-3 over 24 neurons at 16 seeds. Check: the "
                        "simulated kappa within 5 SE, a t_15 (t_23 full) per setting: 3.2e-4 quick, 1.9e-4 full, the "
                        "false-failure bound. The paper's kappa = eta^2 2^-r-2 is 57 % off in the "
                        "ground-truth part, tens of standard errors at these n. The quick size has T = 8 random "
                        "labelings at r = 2 (||Pi_perp W+|| / ||Pi_par W+|| = 0.35): with Hadamard tasks only the perp "
                        "part cancels exactly and a perp part x0 or x3 passed at 1.3-1.6 SE",
       kind="training",
       nulls={"perp_x0": "the map without its perpendicular part (Pi_perp W+ = 0: a perfect cancellation)",
              "perp_x3": "the perpendicular part of W+ three times too large",
              "paper_kappa": "the paper's kappa = eta^2 2^-r-2 in the ground-truth part (Lemma A.10)"},
       quick={"settings": [[1, 20, 8, "hadamard"], [2, 20, 16, 8]], "n_train": 2 ** 17, "seeds": 16},
       full={"settings": [[1, 20, 8, "hadamard"], [2, 20, 16, "hadamard"], [2, 50, 16, 20], [3, 20, 16, "hadamard"]],
             "n_train": 2 ** 20, "seeds": 24})
def one_step_map(size, device, outdir):
    rows, worst = [], 0.0
    nulls = {"perp_x0": 0.0, "perp_x3": 0.0, "paper_kappa": 0.0}
    fig, (ax0, ax1) = subplots(2, panel_size=(5.2, 4.0))
    for i, (r, d, m, tasks) in enumerate(size["settings"]):
        problem = mt.Problem(d, r, m, tasks, seed=i)
        W0 = problem.W0
        W_pop = mt.one_step_map(W0, r, problem.task_set, _LR, problem.lam_w)
        W_sim, sigma, k_sim, k_se = sim_stats(_simulate(problem, size, device))
        gap = np.linalg.norm(W_sim - W_pop, axis=1)
        z = gap / sigma
        W_null = {"perp_x0": np.concatenate([W_pop[:, :r], 0 * W_pop[:, r:]], 1),
                  "perp_x3": np.concatenate([W_pop[:, :r], 3 * W_pop[:, r:]], 1),
                  "paper_kappa": np.concatenate([W_pop[:, :r] + (mt.kappa_par(r, _LR, corrected=False)
                                                                 - mt.kappa_par(r, _LR)) * W0[:, :r], W_pop[:, r:]], 1)}
        z_null = {k: float((np.linalg.norm(W_sim - Wn, axis=1) / sigma).max()) for k, Wn in W_null.items()}
        for k, v in z_null.items():      # a null is rejected if it fails in some setting: the max over settings
            nulls[k] = max(nulls[k], v)
        rel = gap / np.linalg.norm(W_pop, axis=1)
        k_pop, k_paper = mt.kappa_hat(W0, W_pop, r), mt.kappa_par(r, _LR, corrected=False)
        worst = max(worst, float(z.max()))
        rows.append({"r": r, "d": d, "width": m, "tasks": str(tasks), "n": size["n_train"], "seeds": size["seeds"],
                     "max_z": float(z.max()), **{f"max_z_{k}": v for k, v in z_null.items()},
                     "perp_over_par": float(np.linalg.norm(W_pop[:, r:]) / np.linalg.norm(W_pop[:, :r])),
                     "median_rel_err": float(np.median(rel)), "kappa_pop": k_pop,
                     "kappa_sim": k_sim, "kappa_se": k_se, "kappa_z": abs(k_sim - k_pop) / k_se,
                     "paper_kappa_z": abs(k_sim - k_paper) / k_se})
        label = f"r={r}, d={d}, T={problem.task_set.n_tasks}"
        ax0.plot(W_pop[:, :r].ravel(), W_sim[:, :r].ravel(), "o", ms=3, color=f"C{i}", label=label)
        ax1.plot(np.arange(m), z, "o-", ms=3, color=f"C{i}", label=label)
    lo, hi = ax0.get_xlim()
    ax0.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="theory = simulation")
    ax0.set(xlabel="w+_par, exact population map", ylabel="w+_par, torch (seed mean)", title="ground-truth part")
    ax1.axhline(_Z, color="k", ls=":", label=f"tolerance {_Z:g} SE")
    ax1.set(xlabel="neuron j", ylabel="||W+_sim - W+_pop|| / SE", title=f"per-neuron gap: max {worst:.2f} SE")
    discrete_axis(ax1, np.arange(m))
    for a in (ax0, ax1):
        legend_outside(a)
    path = save_figure(fig, outdir / "multitask.one_step_map.png", title=claim_title(
        REGISTRY["multitask.one_step_map"], worst, what="max per-neuron gap (SE)"))
    checks = {"kappa_sim within 5 SE of the exact map": all(r_["kappa_z"] <= _Z for r_ in rows),
              "the paper's kappa eta^2 2^-r-2 is > 10 SE from kappa_sim": all(r_["paper_kappa_z"] > 10 for r_ in rows)}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls=nulls,
                       message=f"{len(rows)} settings: max per-neuron gap {worst:.2f} SE (nulls: " + ", ".join(
                           f"{k} {v:.1f}" for k, v in nulls.items()) + "), median relative error "
                               f"{max(r_['median_rel_err'] for r_ in rows):.1%}; kappa_sim/kappa_pop = "
                               + ", ".join(f"{r_['kappa_sim'] / r_['kappa_pop']:.3f}" for r_ in rows))


# ---- E2: kappa vs r ------------------------------------------------------------------------------------------------

@claim(id="multitask.kappa_vs_r", model="multitask",
       title="Lemma A.10 corrected: kappa 2^r/eta^2 = 1/(2 pi) = 0.159 for every r, not the paper's 1/4",
       source="[Collins24, Lemma A.7 (A_par_par -> I/4), the proofs of Lemma A.10 and Theorem A.12]",
       metric="max over r of |kappa_exact(r) / kappa_par(r) - 1|, kappa_exact the least-squares scale of w+_par on "
              "w0_par under the exact one-step map (d, m fixed, Hadamard tasks), kappa_par = eta^2 2^-r/(2 pi)",
       tolerance=_TOL_KAPPA,
       tolerance_origin="the exact map is within O(eps^2) of the leading constant, 0.3 % at r = 6, "
                        "d = 200 (measured 0.4 %, deterministic: 5x below); the paper's 1/4 is 57 % off. Check: the "
                        "simulated kappa within 5 SE of the exact map, SE from S = 16 seeds (24 full): a t_15 (t_23) "
                        "per simulated setting, 1.6e-4 (4.7e-5) each: false-failure bound 3.2e-4 quick, 1.4e-4 full",
       kind="finding",
       nulls={"paper_quarter": "the paper's constant: kappa 2^r/eta^2 = 1/4 (Lemma A.10)"},
       quick={"r": [1, 2, 3, 4, 5, 6], "d": 200, "width": 40, "sim": [[1, 20, 8], [2, 20, 16]], "n_train": 2 ** 17,
              "seeds": 16},
       full={"r": [1, 2, 3, 4, 5, 6, 7, 8], "d": 200, "width": 40, "sim": [[1, 20, 8], [2, 20, 16], [3, 20, 16]],
             "n_train": 2 ** 20, "seeds": 24})
def kappa_vs_r(size, device, outdir):
    rows = []
    for r in size["r"]:
        problem = mt.Problem(size["d"], r, size["width"])
        k = mt.kappa_hat(problem.W0, mt.one_step_map(problem.W0, r), r)
        rows.append({"r": r, "kappa_exact_2r": k * 2 ** r, "kappa_par_2r": mt.kappa_par(r, 1.0) * 2 ** r,
                     "paper_2r": mt.kappa_par(r, 1.0, corrected=False) * 2 ** r,
                     "rel_err": abs(k / mt.kappa_par(r, 1.0) - 1),
                     "rel_err_paper": abs(k / mt.kappa_par(r, 1.0, corrected=False) - 1)})
    sims = []
    for i, (r, d, m) in enumerate(size["sim"]):
        problem = mt.Problem(d, r, m, seed=i)
        _, _, k_sim, k_se = sim_stats(_simulate(problem, size, device))
        k_pop = mt.kappa_hat(problem.W0, mt.one_step_map(problem.W0, r), r)
        sims.append({"r": r, "d": d, "kappa_sim_2r": k_sim * 2 ** r, "se_2r": k_se * 2 ** r,
                     "kappa_pop_2r": k_pop * 2 ** r, "z": abs(k_sim - k_pop) / k_se,
                     "paper_z": abs(k_sim - mt.kappa_par(r, 1.0, corrected=False)) / k_se})
    worst = max(r_["rel_err"] for r_ in rows)
    null = max(r_["rel_err_paper"] for r_ in rows)
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    rs = [r_["r"] for r_ in rows]
    ax.plot(rs, [r_["kappa_exact_2r"] for r_ in rows], "o-", color="C0", label=f"exact map, d = {size['d']}")
    ax.plot(rs, [r_["kappa_par_2r"] for r_ in rows], "-", color="k", lw=1, label="corrected 1/(2 pi)")
    ax.plot(rs, [r_["paper_2r"] for r_ in rows], "--", color="C3", label="paper 1/4 (Lemma A.10)")
    ax.errorbar([s["r"] for s in sims], [s["kappa_sim_2r"] for s in sims], yerr=[2 * s["se_2r"] for s in sims],
                fmt="s", color="C1", capsize=3, label="torch training (d = 20), +- 2 SE")
    ax.set(xlabel="r", ylabel="kappa 2^r / eta^2", ylim=(0.1, 0.3),
           title=f"kappa 2^r/eta^2 flat at 1/(2 pi): max rel. error {worst:.1e}")
    legend_outside(ax)
    path = save_figure(fig, outdir / "multitask.kappa_vs_r.png", title=claim_title(
        REGISTRY["multitask.kappa_vs_r"], worst, what="max rel. error"))
    checks = {"simulated kappa within 5 SE of the exact map": all(s["z"] <= _Z for s in sims),
              "simulated kappa > 10 SE from the paper's": all(s["paper_z"] > 10 for s in sims)}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows + sims, nulls={"paper_quarter": null},
                       message=f"max rel. error {worst:.1e} (paper's 1/4: {null:.2f}); kappa 2^r/eta^2 = " + ", ".join(f"{r_['kappa_exact_2r']:.4f}" for r_ in rows)
                               + f" (r = {rs[0]}..{rs[-1]}); simulation " +
                               ", ".join(f"{s['kappa_sim_2r']:.4f}+-{s['se_2r']:.4f}" for s in sims))


# ---- E3 / E4: Thm 4.2's ratio -----------------------------------------------------------------------------------

def _slope(x, y):
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


@claim(id="multitask.ratio_vs_d", model="multitask",
       title="Thm 4.2 at T = infinity: ||Pi_perp W+|| / sigma_r(Pi_par W+) decays like d^-1.5, and is 0 at r = 1",
       source="[Collins24, Theorem 4.2, Theorem A.12]",
       metric="max over r of |fitted log-log slope of the median (over init draws) exact-map ratio vs d + 1.5|",
       tolerance=_TOL_SLOPE_D,
       tolerance_origin="measured ratio/(r/d)^1.5 in [0.16, 0.67] over d = 50..800, i.e. the prefactor wanders "
                        "by 4x: a slope error up to ~0.2 over a 32x range of d (measured 0.08-0.12); a leakage of 1 % "
                        "of kappa left by a wrong weight decay gives a slope near 0",
       kind="independent",
       nulls={"leaky_decay": "an imperfect perp cancellation: 1 - eta lambda_w 1 % too large in magnitude"},
       quick={"r": [2, 3], "d": [50, 100, 200, 400, 800, 1600], "width": 80, "draws": 7},
       full={"r": [2, 3, 4, 6], "d": [50, 100, 200, 400, 800, 1600, 3200], "width": 80, "draws": 15})
def ratio_vs_d(size, device, outdir):
    rows, slopes, r1, slopes_null = [], {}, [], {}
    for r in [1] + list(size["r"]):
        med, med_null = [], []
        leaky = 1.0 + 1.01 * 2.0 ** (-r - 1) / math.pi          # lambda_w (eta = 1) of the null
        for d in size["d"]:
            W0s = [mt.symmetric_init(d, size["width"], d ** -1.25, s) for s in range(size["draws"])]
            ratios = [mt.subspace_ratio(mt.one_step_map(W0, r), r) for W0 in W0s]
            med.append(float(np.median(ratios)))
            if r != 1:
                med_null.append(float(np.median([mt.subspace_ratio(mt.one_step_map(W0, r, lam_w=leaky), r)
                                                 for W0 in W0s])))
            rows.append({"r": r, "d": d, "median_ratio": med[-1], "prefactor": med[-1] / (r / d) ** 1.5})
        if r == 1:
            r1 = med
        else:
            slopes[r] = _slope(size["d"], med)
            slopes_null[r] = _slope(size["d"], med_null)
    worst = max(abs(s + 1.5) for s in slopes.values())
    null = max(abs(s + 1.5) for s in slopes_null.values())
    fig, (ax,) = subplots(1, panel_size=(8.6, 4.4))
    d = np.asarray(size["d"], float)
    for i, r in enumerate(size["r"]):
        y = [row["median_ratio"] for row in rows if row["r"] == r]
        ax.loglog(d, y, "o-", color=f"C{i}", label=f"r = {r}: exact map, slope {slopes[r]:.2f}")
        ax.loglog(d, y[0] * (d / d[0]) ** -1.5, ":", color=f"C{i}", lw=1)
        ax.loglog(d, [bounds.thm42_rhs(r, dd, size["width"], math.inf) for dd in size["d"]], "--", color=f"C{i}", lw=1)
    ax.loglog(d, np.maximum(r1, 1e-18), "x-", color="0.5", label="r = 1 (exact zero: rounding)")
    ax.plot([], [], "k:", lw=1, label="slope -1.5 (Thm 4.2)")
    ax.plot([], [], "k--", lw=1, label="Thm 4.2 shape (r^3.5 + log^3.5 m)/d^1.5, C = 1")
    ax.set(xlabel="d", ylabel="||Pi_perp W+||_2 / sigma_r(Pi_par W+)",
           title=f"Thm 4.2 ratio vs d: max |slope + 1.5| = {worst:.2f}")
    legend_outside(ax)
    path = save_figure(fig, outdir / "multitask.ratio_vs_d.png", title=claim_title(
        REGISTRY["multitask.ratio_vs_d"], worst, what="max |slope + 1.5|"))
    checks = {"r = 1 ratio <= 1e-12 at every d": max(r1) <= 1e-12}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls={"leaky_decay": null},
                       details={"slopes_leaky_decay": slopes_null},
                       message="slopes " + ", ".join(f"r={r}: {s:.3f}" for r, s in slopes.items())
                               + " (null, leaky decay: " + ", ".join(f"{s:.2f}" for s in slopes_null.values()) + ")"
                               + f"; r = 1 max ratio {max(r1):.1e}")


@claim(id="multitask.ratio_vs_T", model="multitask",
       title="Thm 4.2 at finite T: the ratio follows the leading-order Walsh map, decays like T^-1/2, and the "
             "adaptive weight decay removes the leakage",
       source="[Collins24, Theorem 4.2 (O(2^r sqrt(r) d/sqrt(T)))]",
       metric="max over (d, T) of |mean_draws ratio_Walsh / mean_draws ratio_exact - 1| (random labelings, paper's "
              "lambda_w)",
       tolerance=_TOL_WALSH,
       tolerance_origin="exact map vs leading order within 10 %; the leading-order error is O(eps) "
                        "(docs/multitask.md), measured 0.1-7 % per draw",
       kind="independent",
       nulls={"infinite_T_walsh": "the T = infinity Walsh map (the task statistics B_T, K_T, c_T ignored)"},
       quick={"r": 2, "d": [100, 400], "n_tasks": [100, 1000, 10000, 100000], "width": 40, "draws": 12},
       full={"r": 2, "d": [50, 100, 400, 1000], "n_tasks": [100, 300, 1000, 3000, 10000, 30000, 100000], "width": 40,
             "draws": 32})
def ratio_vs_T(size, device, outdir):
    r, rows = size["r"], []
    for d in size["d"]:
        for T in size["n_tasks"]:
            ex, lo, ad, inf = [], [], [], []
            for s in range(size["draws"]):
                problem = mt.Problem(d, r, size["width"], T, seed=s)
                ts, W0 = problem.task_set, problem.W0
                ex.append(mt.subspace_ratio(mt.one_step_map(W0, r, ts), r))
                lo.append(mt.subspace_ratio(mt.one_step_map(W0, r, ts, method="leading"), r))
                ad.append(mt.subspace_ratio(mt.one_step_map(W0, r, ts, lam_w="adaptive"), r))
                inf.append(mt.subspace_ratio(mt.one_step_map(W0, r, method="leading"), r))
            rows.append({"d": d, "n_tasks": T, "ratio_exact": float(np.mean(ex)), "ratio_walsh": float(np.mean(lo)),
                         "ratio_adaptive": float(np.mean(ad)), "rel_err": abs(np.mean(lo) / np.mean(ex) - 1),
                         "rel_err_infinite_T": abs(np.mean(inf) / np.mean(ex) - 1),
                         "heuristic": math.sqrt(2 / T) * (math.sqrt(size["width"] / 2) + math.sqrt(d))
                         / (math.sqrt(size["width"] / 2) - math.sqrt(r))})
    worst = max(row["rel_err"] for row in rows)
    null = max(row["rel_err_infinite_T"] for row in rows)
    Ts = np.asarray(size["n_tasks"], float)
    slopes = {d: _slope(Ts, [row["ratio_exact"] for row in rows if row["d"] == d]) for d in size["d"]}
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    for i, d in enumerate(size["d"]):
        sel = [row for row in rows if row["d"] == d]
        ax.loglog(Ts, [row["ratio_exact"] for row in sel], "o", color=f"C{i}", label=f"d = {d}: exact map")
        ax.loglog(Ts, [row["ratio_walsh"] for row in sel], "-", color=f"C{i}", label=f"d = {d}: Walsh (leading order)")
        ax.loglog(Ts, [row["ratio_adaptive"] for row in sel], "s--", color=f"C{i}", ms=3,
                  label=f"d = {d}: adaptive lambda_w")
    ax.set(xlabel="T (random labelings)", ylabel="||Pi_perp W+||_2 / sigma_r(Pi_par W+)",
           title=f"ratio vs T: Walsh map within {worst:.1%}; slopes " + ", ".join(f"{s:.2f}" for s in slopes.values()))
    legend_outside(ax)
    path = save_figure(fig, outdir / "multitask.ratio_vs_T.png", title=claim_title(
        REGISTRY["multitask.ratio_vs_T"], worst, what="max rel. error of the Walsh map"))
    checks = {"slope in T within [-0.65, -0.35]": all(-0.65 <= s <= -0.35 for s in slopes.values()),
              "adaptive lambda_w lowers the ratio at every (d, T)": all(row["ratio_adaptive"] < row["ratio_exact"]
                                                                       for row in rows)}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls={"infinite_T_walsh": null},
                       message=f"Walsh map within {worst:.1%} of the exact ratio (T = infinity map: {null:.2f}); "
                               "slopes in T "
                               + ", ".join(f"d={d}: {s:.2f}" for d, s in slopes.items()))


# ---- E5: task structure ---------------------------------------------------------------------------------------

_FAMILIES = {"universe": lambda r: mt.TaskSet.hadamard(r), "dictators": lambda r: mt.TaskSet.dictators(r),
             "degree >= 2 parities": lambda r: mt.TaskSet.parities(r, range(2, r + 1))}


@claim(id="multitask.task_structure", model="multitask",
       title="Only degree-0/1 Walsh content drives feature learning: degree->=2 parities learn nothing, dictators "
             "learn without perp cancellation (derived; the paper assumes task diversity)",
       source="[Collins24, Assumption 2.1]; the Walsh map derived here, not in the paper (docs/multitask.md)",
       metric="max over families and r of |kappa_exact - kappa_Walsh| / kappa_par at large d (exact map vs the "
              "leading-order Walsh prediction)",
       tolerance=_TOL_STRUCT,
       tolerance_origin="leading-order error O(eps^2) relative for these families (exact to 1e-14 for "
                        "dictators, 4e-3 for the universe at d = 200; 0.0029 recorded, deterministic: 17x below); the "
                        "universe's kappa applied to every family is off by 2 for degree >= 2 parities. Check: the "
                        "simulated kappa within 5 SE for 3 families, SE from S = 16 seeds (24 full): t_15 (t_23), "
                        "false-failure bound 4.8e-4 quick, 1.4e-4 full",
       kind="independent",
       nulls={"task_blind": "the universe's Walsh map for every task family (the tasks' Walsh content ignored)"},
       quick={"r": [2, 3], "d": 400, "width": 40, "sim": [2, 20, 16], "n_train": 2 ** 17, "seeds": 16},
       full={"r": [2, 3, 4], "d": 1000, "width": 40, "sim": [2, 20, 16], "n_train": 2 ** 20, "seeds": 24})
def task_structure(size, device, outdir):
    rows = []
    for r in size["r"]:
        W0 = mt.symmetric_init(size["d"], size["width"], size["d"] ** -1.25, 0)
        for name, make in _FAMILIES.items():
            ts = make(r)
            k_ex = mt.kappa_hat(W0, mt.one_step_map(W0, r, ts), r)
            k_lo = mt.kappa_hat(W0, mt.one_step_map(W0, r, ts, method="leading"), r)
            k_blind = mt.kappa_hat(W0, mt.one_step_map(W0, r, method="leading"), r)
            rows.append({"r": r, "family": name, "n_tasks": ts.n_tasks, "kappa_exact": k_ex, "kappa_walsh": k_lo,
                         "kappa_par": mt.kappa_par(r, 1.0), "decay": mt.decay_factor(r, 1.0),
                         "err": abs(k_ex - k_lo) / mt.kappa_par(r, 1.0),
                         "err_task_blind": abs(k_ex - k_blind) / mt.kappa_par(r, 1.0),
                         "ratio": mt.subspace_ratio(mt.one_step_map(W0, r, ts), r)})
    worst = max(row["err"] for row in rows)
    null = max(row["err_task_blind"] for row in rows)
    r, d, m = size["sim"]
    sims = []
    for name, make in _FAMILIES.items():
        problem = mt.Problem(d, r, m, make(r).F, seed=1)
        _, _, k_sim, k_se = sim_stats(_simulate(problem, size, device))
        k_pop = mt.kappa_hat(problem.W0, mt.one_step_map(problem.W0, r, problem.task_set), r)
        sims.append({"family": name, "kappa_sim": k_sim, "se": k_se, "kappa_pop": k_pop, "z": abs(k_sim - k_pop) / k_se})
    learned = {row["family"]: (row["kappa_exact"] - row["decay"]) / (row["kappa_par"] - row["decay"])
               for row in rows if row["r"] == size["r"][0]}
    fig, (ax0, ax1) = subplots(2, panel_size=(5.0, 4.0))
    x = np.arange(len(_FAMILIES))
    for i, rr in enumerate(size["r"]):
        sel = [row for row in rows if row["r"] == rr]
        ax0.plot(x, [row["kappa_exact"] / row["kappa_par"] for row in sel], "o", color=f"C{i}",
                 label=f"r = {rr}: exact map")
        ax0.plot(x, [row["kappa_walsh"] / row["kappa_par"] for row in sel], "_", ms=14, color=f"C{i}",
                 label=f"r = {rr}: Walsh prediction")
    ax0.set_xticks(x, list(_FAMILIES), fontsize=7)
    ax0.set(ylabel="kappa / kappa_par(universe)", title=f"large d (d = {size['d']})")
    ax1.errorbar(x, [s["kappa_sim"] for s in sims], yerr=[2 * s["se"] for s in sims], fmt="s", color="C1",
                 capsize=3, label="torch training, +- 2 SE")
    ax1.plot(x, [s["kappa_pop"] for s in sims], "_", ms=14, color="k", label="exact map")
    ax1.set_xticks(x, list(_FAMILIES), fontsize=7)
    ax1.set(ylabel="kappa", title=f"r = {r}, d = {d}, m = {m}")
    for a in (ax0, ax1):
        legend_outside(a)
    path = save_figure(fig, outdir / "multitask.task_structure.png", title=claim_title(
        REGISTRY["multitask.task_structure"], worst, what="max gap / kappa_par"))
    checks = {"simulated kappa within 5 SE of the exact map for every family": all(s["z"] <= _Z for s in sims),
              "degree >= 2 parities: learned part < 5 % of the universe's": abs(learned["degree >= 2 parities"]) < 0.05}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows + sims, nulls={"task_blind": null},
                       details={"learned_fraction": learned, "task_blind_error": null},
                       message=f"Walsh prediction within {worst:.1e} kappa_par; learned fraction of the universe's: "
                               + ", ".join(f"{k}: {v:.3f}" for k, v in learned.items()))


# ---- benchmark ------------------------------------------------------------------------------------------------

def quad_moments_numpy(w_par, s):
    """Vectorised numpy version of the quadrature of :func:`popdyn.models.multitask.sign_moments` (same grid, same
    formula, direct products instead of prefix/suffix products): the benchmark's reference."""
    from popdyn.models.multitask.moments import _grid
    tau, wt = _grid(w_par, s)
    gauss = np.exp(-0.5 * (s[:, None] * tau) ** 2) * wt
    F = mt.halfnormal_cf(tau[:, None, None, :] * (mt.sign_patterns(w_par.shape[1])[None] * w_par[:, None, :])[..., None])
    q = np.einsum("mpn,mn->mp", np.prod(F, axis=2).real, gauss) * s[:, None] / math.pi
    p = np.stack([0.5 + np.einsum("mpn,mn->mp", np.prod(np.delete(F, k, axis=2), axis=2).imag, gauss / tau) / math.pi
                  for k in range(w_par.shape[1])], axis=2)
    return q, p


def bench_multitask(repeat=5, n_train=2 ** 18):
    """The exact map's kernel at (r, d, m) = (6, 300, 64): numba sign moments vs :func:`quad_moments_numpy` (the
    same formula in vectorised numpy), and ``predict`` vs ``simulate`` of the one-step map of ``Problem.e1()`` at
    ``n_train`` samples (one seed; 2^18 gives about 10 % median per-neuron error), with that error. ``predict`` is
    timed on ``repeat`` fresh problems (new W0: nothing cached but the JIT), the median reported."""
    r, d, m = 6, 300, 64
    W0 = mt.symmetric_init(d, m, d ** -1.25, 0)
    w_par, s = W0[:, :r], np.linalg.norm(W0[:, r:], axis=1)
    mt.sign_moments(w_par[:2], s[:2], "quad")           # JIT warm-up on a throwaway slice
    t_nb = min(_timed(lambda: mt.sign_moments(w_par, s, "quad")) for _ in range(repeat))
    t_map = min(_timed(lambda: mt.one_step_map(W0, r)) for _ in range(repeat))
    t_np = min(_timed(lambda: quad_moments_numpy(w_par, s)) for _ in range(repeat))
    diff = max(float(np.abs(a - b).max()) for a, b in zip(mt.sign_moments(w_par, s, "quad"), quad_moments_numpy(w_par, s)))
    popdyn.predict(mt.Problem.e1(seed=6))              # warm-up
    t_pred = float(np.median([_timed(lambda: popdyn.predict(mt.Problem.e1(seed=7 + i))) for i in range(repeat)]))
    problem = mt.Problem.e1(seed=7)
    popdyn.simulate(mt.Problem.e1(seed=8), n_train=2 ** 10, seeds=1)   # torch warm-up
    t0 = time.perf_counter()
    sim = popdyn.simulate(problem, n_train=n_train, seeds=1)
    t_sim = time.perf_counter() - t0
    W_pop = mt.one_step_map(problem.W0, problem.r)
    rel = np.linalg.norm(sim["W_plus"][0] - W_pop, axis=1) / np.linalg.norm(W_pop, axis=1)
    return {"moments_numba_s": t_nb, "moments_numpy_s": t_np, "numba_speedup": t_np / t_nb, "max_abs_diff": diff,
            "exact_map_s": t_map, "predict_s": t_pred, "simulate_s": t_sim, "simulate_over_predict": t_sim / t_pred,
            "n_train": n_train, "median_rel_err": float(np.median(rel))}


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
