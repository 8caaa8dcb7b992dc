"""Contrastive trade-off claims (seed 001 ch. 7, App. F; specs/looped_contrastive_dg.md part B).

* ``contrastive.column_norms``: projected SGD on the population contrastive loss learns the column norms of the
  convex program (7-d)/(7-e): sqrt(alpha) = 1 on S, sqrt(1/T) on every P_t (universal), 1 on R_t (specific), with
  spurious columns near 0 and orthogonal columns within each task (spec B.3 R7, B.6 (8)).
* ``contrastive.cr_beta``: CR fine-tuning within Frobenius radius gamma reaches beta_CR of Prop. F.9 with the
  budget ||W||_F <= sqrt r kept (the corrected form; the paper's drops it and overshoots).
* ``contrastive.tradeoff``: excess risk of norm-bounded probes vs m for the universal, CR-fine-tuned and specific
  representations: the ordering the exact Rademacher terms predict at small m, fading at large m (spec B.3, B.4).

:func:`bench_contrastive` times the population optimum against projected-SGD pre-training to the same column norms.
"""
from __future__ import annotations

import time

import numpy as np

import popdyn
from popdyn.models import contrastive
from popdyn.plot import claim_title, discrete_axis, legend_outside, plot_curves, sample_axis, save_figure, subplots

from . import REGISTRY, ClaimResult, claim

__all__ = ["bench_contrastive"]

_SEED = "seed 001 (seeds/001_f43d5cd3f489e262.txt)"
_REPS = ("universal", "cr", "specific")


def _expected_norms(problem):
    """Theory column norms of the universal (all of R) and specific (R_t) optima, from the public optimum."""
    alpha, alphas, _ = contrastive.optimal_representation(problem)
    S, P, _, _ = problem.index_sets()
    univ = np.concatenate([np.full(problem.s, np.sqrt(alpha))]
                          + [np.full(p.size, np.sqrt(a)) for p, a in zip(P, alphas)])
    return univ, np.concatenate([S, *P]), np.concatenate([S, P[problem.t]])


@claim(id="contrastive.column_norms", model="contrastive",
       title="Projected SGD learns the optimal column norms: 1 on S, 1/sqrt(T) on each P_t (universal), 1 on R_t "
             "(specific)",
       source=f"{_SEED} L2027-2042 (Props 7.3, 7.4), L9591-9607 (Lemma F.3), L9826-9838 (Prop. F.8); spec B.2 (7-d), "
              "(7-e), B.3 (R7), B.4 (1)",
       metric="max over seeds and invariant columns of |learned column norm - theory| / theory (universal on R, "
              "specific on R_t)",
       tolerance=0.01, tolerance_origin="spec B.4 (1): 1 % at 6000 x 512 samples (R7 measured 0.4 %)",
       quick={"n_tasks": 3, "s": 2, "r": 4, "d": 10, "steps": 6000, "batch": 512, "lr": 0.05, "seeds": 2},
       full={"n_tasks": 3, "s": 2, "r": 4, "d": 10, "steps": 12000, "batch": 1024, "lr": 0.05, "seeds": 4})
def column_norms(size, device, outdir):
    problem = contrastive.Problem(size["n_tasks"], size["s"], size["r"], size["d"])
    sim = popdyn.simulate(problem, steps=size["steps"], batch=size["batch"], lr=size["lr"], ft_steps=0,
                          n_labelled=[problem.r], probes=1, seeds=size["seeds"], device=device)
    univ, R, Rt = _expected_norms(problem)
    learned = sim["column_norms"]
    err_u = np.abs(learned[:, R] - univ) / univ
    err_s = np.abs(np.sqrt(np.stack([sim["alpha"][:, 2], sim["beta"][:, 2]], 1)) - 1.0)
    spurious = float(np.max(learned[:, problem.k:], initial=0.0))
    gram = float(np.max(sim["gram_offdiag"]))
    measured = float(max(err_u.max(), err_s.max()))
    fig, (ax,) = subplots(1)
    plot_curves(np.arange(problem.d), {"theory (universal)": np.concatenate([univ, np.zeros(problem.d - problem.k)]),
                                       **{f"seed {i}": learned[i] for i in range(len(learned))}}, ax=ax,
                xlabel="column j of W", ylabel="||W e_j||", title="universal column norms",
                styles={"theory (universal)": {"color": "k", "ls": "none", "marker": "_", "ms": 14, "mew": 2},
                        **{f"seed {i}": {"ls": "", "marker": "o", "ms": 4} for i in range(len(learned))}})
    if problem.d <= 20:
        discrete_axis(ax, np.arange(problem.d))
    path = save_figure(fig, outdir / "contrastive.column_norms.png", title=claim_title(
        REGISTRY["contrastive.column_norms"], measured, what="max rel. error"))
    table = [{"column": int(j), "theory": float(u), **{f"seed{i}": float(learned[i, j]) for i in range(len(learned))}}
             for j, u in zip(R, univ)]
    return ClaimResult(measured=measured, figure=str(path), table=table,
                       checks={"spurious column norms < 0.02 (R7: 0.006)": spurious < 0.02,
                               "within-task Gram off-diagonal < 0.03 (R7: <= 0.005; SGD noise)": gram < 0.03},
                       message=f"max relative column-norm error {measured:.2e}; spurious {spurious:.1e}; "
                               f"within-task Gram off-diagonal {gram:.1e}",
                       details={"specific_alpha_beta": [sim["alpha"][:, 2].tolist(), sim["beta"][:, 2].tolist()]})


@claim(id="contrastive.cr_beta", model="contrastive",
       title="Prop. F.9 with the Frobenius budget kept: CR fine-tuning within radius gamma reaches beta_CR",
       source=f"{_SEED} L9846-9880 (Prop. F.9, F.104-F.112); spec B.2 (7-i), B.4 (2); corrected form derived",
       metric="max over gamma and seeds of |beta learned - cr_finetune_beta(T, s, gamma)| / cr_finetune_beta",
       tolerance=0.01, tolerance_origin="same SGD budget as contrastive.column_norms (1 %); the paper's form is "
                                        "9.5 % above at gamma = 0.2, T = 3, s = 2",
       quick={"n_tasks": 3, "s": 2, "gammas": [0.1, 0.2, 0.4], "ft_steps": 1000, "batch": 512, "lr": 0.05,
              "seeds": 2},
       full={"n_tasks": 5, "s": 5, "gammas": [0.1, 0.3, 0.6, 1.2], "ft_steps": 1500, "batch": 512, "lr": 0.5,
             "seeds": 2})
def cr_beta(size, device, outdir):
    T, s = size["n_tasks"], size["s"]
    rows, errs = [], []
    for g in size["gammas"]:
        problem = contrastive.Problem(T, s, 2 * s, s + T * s + 2, gamma=g)
        sim = popdyn.simulate(problem, steps=1, ft_steps=size["ft_steps"], batch=size["batch"], lr=size["lr"],
                              n_labelled=[problem.r], probes=1, seeds=size["seeds"], device=device)
        theory, paper = contrastive.cr_finetune_beta(T, s, g), contrastive.cr_finetune_beta(T, s, g, "paper")
        learned = sim["beta"][:, 1]
        errs.append(np.max(np.abs(learned - theory)) / theory)
        rows.append({"gamma": g, "beta_learned": float(learned.mean()), "beta_corrected": theory, "beta_paper": paper,
                     "alpha_learned": float(sim["alpha"][:, 1].mean())})
    measured = float(max(errs))
    gam = np.array(size["gammas"])
    path = plot_curves(gam, {"learned": [r["beta_learned"] for r in rows],
                             "corrected": [r["beta_corrected"] for r in rows],
                             "paper (F.105 drops ||W||_F)": [r["beta_paper"] for r in rows]},
                       outdir / "contrastive.cr_beta.png", xlabel="gamma", ylabel="beta_CR",
                       styles={"learned": {"ls": "", "marker": "o"}},
                       title=claim_title(REGISTRY["contrastive.cr_beta"], measured, what="max rel. error",
                                         note=f"T = {T}, s = {s}, r = 2s"))
    return ClaimResult(measured=measured, figure=str(path), table=rows,
                       checks={"alpha stays 1 (within 1e-3)": all(abs(r["alpha_learned"] - 1) < 1e-3 for r in rows)},
                       message=f"max relative error of beta_CR {measured:.1e} over gamma = {size['gammas']}")


@claim(id="contrastive.tradeoff", model="contrastive",
       title="Universality costs labels: excess risk universal > CR-fine-tuned > specific at small m, fading at "
             "large m",
       source=f"{_SEED} L2036-2054 (Props 7.3, 7.4), L9682 (Lemma F.5), L9886-9892; spec B.2 (7-g), (7-h), B.3, "
              "B.4 (3)",
       metric="number of pairs of representations, at the two smallest m, whose mean excess risk (over seeds and "
              "probes) is not in the order of the exact Rademacher terms (rademacher_exact x probe_norm)",
       tolerance=0.5, tolerance_origin="an ordering claim: every predicted pair must hold (spec B.4 (3)); the "
                                       "violations are counted, so <= 0.5 means none",
       quick={"n_tasks": 5, "s": 5, "gamma": 1.0, "noise": 0.5, "steps": 3000, "batch": 512, "lr": 0.5,
              "ft_steps": 1000, "probes": 400, "seeds": 2},
       full={"n_tasks": 5, "s": 5, "gamma": 1.0, "noise": 0.5, "steps": 4000, "batch": 512, "lr": 0.5,
             "ft_steps": 1000, "probes": 1000, "seeds": 3})
def tradeoff(size, device, outdir):
    T, s = size["n_tasks"], size["s"]
    problem = contrastive.Problem(T, s, 2 * s, s + T * s + 5, noise=size["noise"], gamma=size["gamma"])
    ms = np.array([max(1, -(-problem.r // 3)), problem.r, 3 * problem.r])
    alpha, alphas, _ = contrastive.optimal_representation(problem)
    betas = {"universal": alphas[problem.t], "cr": contrastive.cr_finetune_beta(T, s, size["gamma"]), "specific": 1.0}
    alphas_rep = {"universal": alpha, "cr": 1.0, "specific": 1.0}
    B = {k: contrastive.probe_norm(alphas_rep[k], betas[k], problem.v1, problem.v2) for k in _REPS}
    rad = {k: np.array([contrastive.rademacher_exact(alphas_rep[k], betas[k], s, problem.r, int(mm), B[k])
                        for mm in ms]) for k in _REPS}
    sim = popdyn.simulate(problem, steps=size["steps"], batch=size["batch"], lr=size["lr"], ft_steps=size["ft_steps"],
                          n_labelled=ms, probes=size["probes"], seeds=size["seeds"], device=device)
    risk = sim["excess_risk"].mean(0)                                        # (3, len m)
    violations, rows = 0, []
    for j in range(2):
        order = sorted(range(3), key=lambda i: -rad[_REPS[i]][j])           # predicted: largest term first
        for a, b in zip(order, order[1:]):
            violations += int(not risk[a, j] > risk[b, j])
    ratio = risk[0] / risk[2]
    for i, k in enumerate(_REPS):
        rows.append({"representation": k, "beta": float(betas[k]), "B": float(B[k]),
                     **{f"risk_m{mm}": float(risk[i, j]) for j, mm in enumerate(ms)},
                     **{f"rademacher_m{mm}": float(rad[k][j]) for j, mm in enumerate(ms)}})
    fig, axes = subplots(2)
    dots = {k: {"marker": "o"} for k in _REPS}
    plot_curves(ms, {k: risk[i] for i, k in enumerate(_REPS)}, ax=axes[0], logy=True, xlabel="labelled samples m",
                styles=dots, ylabel="excess risk", title="norm-bounded probes", legend=False)
    plot_curves(ms, {k: rad[k] for k in _REPS}, ax=axes[1], logy=True, xlabel="labelled samples m",
                ylabel="R_m (exact)", styles=dots, title="exact Rademacher term", legend=False)
    for ax in axes:
        sample_axis(ax, ms)
    legend_outside(fig)
    path = save_figure(fig, outdir / "contrastive.tradeoff.png", title=claim_title(
        REGISTRY["contrastive.tradeoff"], violations, what="ordering violations"))
    return ClaimResult(measured=violations, figure=str(path), table=rows,
                       checks={"the universal/specific gap fades: ratio at 3r closer to 1 than at r/3":
                               abs(ratio[-1] - 1) < abs(ratio[0] - 1)},
                       message=f"{violations} ordering violations; universal/specific risk ratio "
                               f"{np.round(ratio, 3).tolist()} at m = {ms.tolist()} (leading-term ratio "
                               f"{contrastive.leading_term_ratio(problem.v1, problem.v2, s, problem.r, T):.3f})")


def bench_contrastive(n_tasks=3, s=2, r=4, d=10, steps=6000, batch=512, seeds=1, device="cpu"):
    """Seconds for the population optimum (the convex program, then the column norms) against projected-SGD
    pre-training of ``steps`` x ``batch`` pairs that reaches the same column norms within about 1 %, and the
    reached relative error; returns a dict."""
    import torch
    from popdyn.sim import contrastive as sim
    problem = contrastive.Problem(n_tasks, s, r, d)
    t0 = time.perf_counter()
    univ, R, _ = _expected_norms(problem)
    t_theory = time.perf_counter() - t0
    t0 = time.perf_counter()
    W = sim.pretrain(problem, None, steps=steps, batch=batch, seeds=seeds, device=device)
    if W.device.type == "cuda":
        torch.cuda.synchronize()
    t_sim = time.perf_counter() - t0
    learned = (W**2).sum(-2).sqrt().cpu().numpy()[:, R]
    return {"theory_s": t_theory, "simulation_s": t_sim, "ratio": t_sim / t_theory,
            "max_rel_error": float(np.max(np.abs(learned - univ) / univ))}
