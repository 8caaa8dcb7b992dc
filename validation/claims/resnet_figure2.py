r"""Figure 2 of [AllenZhu19] at CPU scale (Section 6, App. A): the three-layer ResNet learns G(F), kernels and FC nets do not.

* ``resnet.figure2`` (panels a-b): on H = F + alpha G(F) (d = 30, k = 8, alpha = 0.3, cyclic G; the "G not learned"
  plateau is k alpha^2 = 0.72, Section 6), the trained ResNet goes below the plateau while the exact kernel errors of the
  ReLU NTK and conjugate kernel fitted on the same training set, and the trained two-layer net, stay above it; F is
  learned before G(F) (c_F saturates before c_G rises). The three-layer FC net is reported.
* ``resnet.figure2_beta`` (panel c): H = beta F + alpha G(F), alpha = 0.3: the ResNet still learns G(F) for every
  alpha/beta <= 1 (Section 6), reported along beta with where it stops.

The paper gives no number (only the ordering), so both metrics are the network's error over the theory's plateau
k alpha^2. Protocol: the paper's minibatch SGD (momentum 0.9, batch 50, epochs at lr then at lr/10, weight decay,
App. A) at a declared width: the full sizes with the paper's 400 + 400 epochs (GPU runs: the networks of a claim
train in parallel processes), the quick sizes shortened (``epochs`` of each size); lr is picked per network (each
seed, method and beta) from a grid of the paper's set {1, 2, 5} x 10^-j by the final test error, as the paper does
(App. A).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from popdyn.models import resnet
from popdyn.results import Simulation
from popdyn.plot import claim_title, legend_outside, sample_axis, save_figure, subplots
from popdyn.sim.resnet import networks as resnet_nets
from popdyn.sim.resnet import training_inputs

from . import REGISTRY, ClaimResult, claim

__all__ = []

#: error / (k alpha^2) must stay below this. Parseval (Lemma E.2 on the network's Walsh expansion): error >=
#: sum_r (c_{G,r} - alpha)^2, so error < k alpha^2 / 2 forces the root-mean-square of c_G - alpha below alpha / sqrt(2):
#: G(F) captured at least 0.29 alpha on average, not an F-only predictor that fits a little noise.
_TOL = 0.5
_METHODS = {"resnet": ("3resnet", "o", "C0"), "fc3": ("3layer", "s", "C1"), "fc2": ("2layer", "^", "C2")}
_KERNEL_STYLE = {"relu_ntk_hidden": ("NTK (hidden, exact)", "C3"), "relu_ntk": ("NTK (all layers, exact)", "C4"),
                 "relu_nngp": ("NNGP = CK = last (exact)", "C5")}
_KERNEL_STYLE["relu_ck"] = _KERNEL_STYLE["relu_nngp"]       # the earlier name of relu_nngp


def _training_set(N, d, seeds, seed, device="cpu"):
    """The training inputs that ``resnet_nets.train(method="minibatch", seed=seed)`` draws, (seeds, N, d) signs
    (popdyn's replay of that draw, :func:`popdyn.sim.resnet.training_inputs`)."""
    return training_inputs(resnet.NetworkProblem.fig2(d=d, n_train=N), seeds, seed=seed, device=device)


def _train(arch, target, N, size, lr, device):
    """One minibatch run of ``arch`` (its width from ``size``); the Simulation."""
    torch.set_num_threads(1)
    m = size["m_fc3"] if arch == "fc3" else size["m"]
    net = resnet_nets.init_net(arch, target.d, target.k, m, seeds=size["seeds"], seed=size["seed"], device=device)
    return resnet_nets.train(net, target, method="minibatch", N=N, lr=lr, wd=size["wd"], epochs=tuple(size["epochs"]),
                             test=size["test"], records=size["records"], seed=size["seed"])


def _best_runs(cases, size, device, processes=None):
    """For each case ``(arch, target, N)`` and each seed: the run over the lr grid ``size["lr"][arch]`` with the
    lowest final test error (a diverged run counts as +inf), as ``(Simulation, lrs, error, lr_errors)``: the
    Simulation holds each seed's best run, ``lrs`` the lr picked per seed, ``error`` the mean over seeds of their
    final errors, ``lr_errors`` every lr's per-seed final errors (inf where diverged).

    Each seed is an independent network, so each gets its lr (the paper picks the best lr of a run, App. A): a
    diverged network costs only its own lr, not its twin's. The runs are independent and run on ``processes``
    processes (default: one after another on the CPU, one process per run on a GPU, where their steps, batch 50
    and launch-bound, then overlap). The numbers do not depend on it."""
    tasks = [(arch, target, N, size, lr, device) for arch, target, N in cases for lr in size["lr"][arch]]
    if processes is None:
        processes = len(tasks) if str(device).startswith("cuda") else 1
    if processes > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
            runs = list(pool.map(_train, *zip(*tasks)))
    else:
        runs = [_train(*t) for t in tasks]
    out, it = [], iter(runs)
    for arch, _, _ in cases:
        grid = size["lr"][arch]
        mine = [next(it) for _ in grid]
        final = np.array([r["test_error"][:, -1] for r in mine])          # (lrs, seeds), NaN where diverged
        final = np.where(np.isfinite(final), final, np.inf)
        pick = np.argmin(final, axis=0)
        seeds = np.arange(final.shape[1])
        best = final[pick, seeds]
        obs = {k: np.stack([mine[i][k][s] for s, i in zip(seeds, pick)]) for k in mine[0].observables}
        lrs = [grid[i] for i in pick]
        sim = Simulation(t=mine[0].t, observables=obs, status=int(np.isinf(best).any()),
                         meta=mine[0].meta | {"lr": lrs})
        out.append((sim, lrs, float(np.mean(best)), {f"{lr:g}": final[j].tolist() for j, lr in enumerate(grid)}))
    return out


def _kernel_errors(name, target, X, lams):
    """Best over ``lams`` of the exact population error (summed over outputs) of KRR with kernel ``name`` fitted on
    each training set of X (seeds, N, d), and its captured Walsh coefficients on the G(F) sets: means over sets."""
    kappa = resnet.KERNELS[name](target.d)
    walsh, errs, capG = target.walsh(), [], []
    for Xs in X:
        betas = resnet.krr_fit(kappa, Xs, target(Xs), np.asarray(lams))
        e = [float(resnet.exact_test_error(kappa, Xs, b, walsh).sum()) for b in betas]
        j = int(np.argmin(e))
        c = resnet.captured_coefficients(kappa, Xs, betas[j], list(target.GF_sets))
        errs.append(e[j])
        capG.append(float(np.mean(np.diag(c))))
    return float(np.mean(errs)), float(np.mean(capG))


def _first_epoch(sim, key, level, per_epoch):
    """First recorded epoch at which the mean over seeds and outputs of ``key`` reaches ``level`` (inf if never)."""
    c = np.nanmean(sim[key], axis=(0, 2))
    hit = np.flatnonzero(c >= level)
    return float(sim.t[hit[0]] / per_epoch) if hit.size else math.inf


def _legend(ax):
    legend_outside(ax)


@claim(id="resnet.figure2", model="resnet",
       title="Figure 2(a-b) at CPU scale: the 3-layer ResNet learns G(F) (error below k alpha^2 = 0.72) while the "
             "exact ReLU NTK / conjugate kernel on the same training set and the 2-layer net stay above it; F is "
             "learned before G(F)",
       source="[AllenZhu19, Section 2.1 (hierarchical learning), Fig. 2 (k alpha^2 = 0.72), App. A (protocol)]",
       metric="ResNet test error (mean over seeds, each seed at its best lr, Monte Carlo over the test set) at the "
              "largest N divided by the G-not-learned plateau k alpha^2 (target.error_G_not_learned)",
       tolerance=_TOL,
       tolerance_origin="Parseval: error < k alpha^2 / 2 forces rms(c_G - alpha) < alpha / sqrt(2), i.e. G(F) "
                        "captured (>= 0.29 alpha); the test-set SE of the error is < 0.01 (4e3 points)",
       kind="training",
       nulls={"untrained": "the ResNet at init (its first recorded test error, same run)",
              "two_layer": "the trained two-layer net (2layer, same training set and protocol) learns G(F) as well",
              "kernel": "the exact NTK / conjugate kernel (best ridge, same training set) learns G(F) as well"},
       quick={"d": 30, "k": 8, "alpha": 0.3, "N": [1000, 2000], "m": 500, "m_fc3": 200, "epochs": [40, 10],
              "lr": {"resnet": [0.5], "fc3": [0.5], "fc2": [0.5]}, "wd": 1e-3, "seeds": 1, "seed": 0,
              "test": 4000, "records": 101, "kernels": ["relu_ntk_hidden", "relu_nngp"], "lam": [1e-6, 1e-4, 1e-2]},
       full={"d": 30, "k": 8, "alpha": 0.3, "N": [1000, 2000, 3000], "m": 1000, "m_fc3": 500, "epochs": [400, 400],
             "lr": {"resnet": [0.5, 1.0], "fc3": [0.5], "fc2": [0.5, 1.0]}, "wd": 1e-3, "seeds": 2, "seed": 0,
             "test": 10_000, "records": 121, "kernels": ["relu_ntk_hidden", "relu_ntk", "relu_nngp"],
             "lam": [1e-6, 1e-4, 1e-2]})
def figure2(size, device, outdir):
    torch.set_num_threads(1)
    target = resnet.fig2_target(d=size["d"], k=size["k"], alpha=size["alpha"])
    plateau, zero = target.error_G_not_learned, target.error_zero_predictor
    rows, nets, kerns = [], {a: [] for a in _METHODS}, {n: [] for n in size["kernels"]}
    last = None
    best = iter(_best_runs([(arch, target, N) for N in size["N"] for arch in _METHODS], size, device))
    for N in size["N"]:
        X = _training_set(N, size["d"], size["seeds"], size["seed"], device)
        row = {"N": N}
        for arch in _METHODS:
            sim, lrs, err, lr_errors = next(best)
            nets[arch].append(err)
            row[f"{arch}_error"], row[f"{arch}_lr"], row[f"{arch}_lr_errors"] = err, lrs, lr_errors
            row[f"{arch}_c_G"] = float(np.nanmean(sim["c_G"][:, -1]))
            if arch == "resnet":
                last = sim
        for name in size["kernels"]:
            e, c = _kernel_errors(name, target, X, size["lam"])
            kerns[name].append(e)
            row[f"{name}_error"], row[f"{name}_c_G"] = e, c
        rows.append(row)
    measured = nets["resnet"][-1] / plateau
    nulls = {"untrained": float(np.nanmean(last["test_error"][:, 0])) / plateau,
             "two_layer": nets["fc2"][-1] / plateau,
             "kernel": min(v[-1] for v in kerns.values()) / plateau}
    per_epoch = -(-size["N"][-1] // 50)
    t_F = _first_epoch(last, "c_F", 0.9 * target.beta, per_epoch)
    t_G = _first_epoch(last, "c_G", target.alpha / 2, per_epoch)

    fig, (ax0, ax1) = subplots(2, panel_size=(5.2, 4.0))
    for arch, (label, marker, colour) in _METHODS.items():
        ax0.plot(size["N"], nets[arch], marker, color=colour, ms=8, label=f"{label} (trained)")
    for name, errs in kerns.items():
        label, colour = _KERNEL_STYLE[name]
        ax0.plot(size["N"], errs, "-", color=colour, label=label)
    ax0.axhline(plateau, color="0.3", ls="--", label=f"k alpha^2 = {plateau:.2f} (G not learned)")
    ax0.axhline(zero, color="0.6", ls=":", label=f"k(beta^2 + alpha^2) = {zero:.2f} (nothing)")
    ax0.set(yscale="log", xlabel="training points N", ylabel="test error (sum over outputs)",
            title=f"3resnet / k alpha^2 = {measured:.3f} (tol {_TOL})")
    sample_axis(ax0, size["N"])
    ep = last.t / per_epoch
    for key, level, colour in (("c_F", target.beta, "C0"), ("c_G", target.alpha, "C1")):
        ax1.plot(ep, np.nanmean(last[key], axis=(0, 2)), "-", color=colour, label=f"{key} (mean over outputs)")
        ax1.axhline(level, color=colour, ls=":", label=f"target {key} = {level:g}")
    ax1.axvline(t_F, color="C0", ls="--", lw=0.8, label=f"c_F >= 0.9 beta: epoch {t_F:.1f}")
    ax1.axvline(t_G, color="C1", ls="--", lw=0.8, label=f"c_G >= alpha/2: epoch {t_G:.1f}")
    ax1.set(xscale="symlog", xlim=(0, ep[-1]), xlabel="epoch", ylabel="Walsh coefficient of out_r",
            title=f"3resnet, N = {size['N'][-1]}: F before G(F)")
    for ax in (ax0, ax1):
        _legend(ax)
    path = save_figure(fig, outdir / "resnet.figure2.png", title=claim_title(
        REGISTRY["resnet.figure2"], measured, what="3resnet error / k alpha^2"))
    checks = {"exact kernel errors >= k alpha^2 at every N": all(min(v) >= plateau for v in kerns.values()),
              "exact kernels capture c_G < alpha/10": all(r[f"{n}_c_G"] < target.alpha / 10 for r in rows
                                                          for n in size["kernels"]),
              "2layer error >= k alpha^2 at every N": min(nets["fc2"]) >= plateau,
              "hierarchy: c_F reaches 0.9 beta before c_G reaches alpha/2": t_F < t_G < math.inf}
    msg = (f"3resnet / k alpha^2 = {measured:.3f} at N = {size['N'][-1]}; errors (N = {size['N']}): "
           + "; ".join(f"{_METHODS[a][0]} {np.round(v, 3).tolist()}" for a, v in nets.items()) + "; "
           + "; ".join(f"{n} {np.round(v, 3).tolist()}" for n, v in kerns.items())
           + f"; c_F >= 0.9 at epoch {t_F:.1f}, c_G >= alpha/2 at epoch {t_G:.1f}")
    msg += "; nulls / k alpha^2: " + ", ".join(f"{k} {v:.3g}" for k, v in nulls.items())
    return ClaimResult(measured=measured, checks=checks, figure=str(path), table=rows, message=msg, nulls=nulls,
                       details={"plateau": plateau, "zero_predictor": zero, "t_F_epoch": t_F, "t_G_epoch": t_G})


@claim(id="resnet.figure2_beta", model="resnet",
       title="Figure 2(c) at CPU scale: with H = beta F + alpha G(F), alpha = 0.3, the 3-layer ResNet still learns "
             "G(F) (error below k alpha^2 / 2) for every alpha/beta <= 1",
       source="[AllenZhu19, Section 6 ('one can tolerate alpha/beta <= 1'), Fig. 2, App. A]",
       metric="max over beta with alpha/beta <= 1 of the ResNet's test error (mean over seeds, each at its best lr) "
              "divided by the G-not-learned plateau k alpha^2; betas with alpha/beta > 1 are reported",
       tolerance=_TOL,
       tolerance_origin="as resnet.figure2: error < k alpha^2 / 2 forces rms(c_G - alpha) < alpha / sqrt(2) "
                        "(Parseval), G(F) learned in part; test SE < 0.01",
       kind="training",
       nulls={"untrained": "the ResNet at init (its first recorded test error, same runs): the smallest over the "
                           "betas with alpha/beta <= 1"},
       quick={"d": 30, "k": 8, "alpha": 0.3, "beta": [1.0, 0.3, 0.2], "N": 2000, "m": 500, "epochs": [40, 10],
              "lr": [0.5, 1.0, 2.0], "wd": 1e-3, "seeds": 1, "seed": 0, "test": 4000, "records": 26},
       full={"d": 30, "k": 8, "alpha": 0.3, "beta": [1.0, 0.5, 0.3, 0.2], "N": 2000, "m": 1000, "epochs": [400, 400],
             "lr": [0.5, 1.0, 2.0], "wd": 1e-3, "seeds": 2, "seed": 0, "test": 10_000, "records": 61})
def figure2_beta(size, device, outdir):
    torch.set_num_threads(1)
    rows, sims = [], {}
    grid = size | {"lr": {"resnet": size["lr"]}}
    targets = [resnet.fig2_target(d=size["d"], k=size["k"], alpha=size["alpha"], beta=beta) for beta in size["beta"]]
    best = _best_runs([("resnet", target, size["N"]) for target in targets], grid, device)
    for beta, target, (sim, lrs, err, lr_errors) in zip(size["beta"], targets, best):
        sims[beta] = sim
        rows.append({"beta": beta, "alpha_over_beta": size["alpha"] / beta, "error": err, "lr": lrs,
                     "lr_errors": lr_errors,
                     "ratio": err / target.error_G_not_learned, "plateau": target.error_G_not_learned,
                     "zero_predictor": target.error_zero_predictor, "c_G": float(np.nanmean(sim["c_G"][:, -1])),
                     "c_F": float(np.nanmean(sim["c_F"][:, -1]))})
    tolerated = [r for r in rows if r["alpha_over_beta"] <= 1 + 1e-12]
    measured = max(r["ratio"] for r in tolerated)
    nulls = {"untrained": min(float(np.nanmean(sims[r["beta"]]["test_error"][:, 0])) / r["plateau"] for r in tolerated)}
    learned = [r["alpha_over_beta"] for r in rows if r["ratio"] < _TOL]
    fails = [r["alpha_over_beta"] for r in rows if r["ratio"] >= _TOL]

    fig, (ax0, ax1) = subplots(2, panel_size=(5.2, 4.0))
    ab = [r["alpha_over_beta"] for r in rows]
    ax0.plot(ab, [r["error"] for r in rows], "o", color="C0", ms=8, label="3resnet (trained, best lr)")
    ax0.plot(ab, [r["zero_predictor"] for r in rows], "-", color="0.6", label="k(beta^2 + alpha^2) (nothing)")
    ax0.axhline(rows[0]["plateau"], color="0.3", ls="--", label="k alpha^2 (G not learned)")
    ax0.axhline(_TOL * rows[0]["plateau"], color="0.3", ls=":", label=f"{_TOL} k alpha^2 (tolerance)")
    ax0.axvline(1.0, color="C3", lw=0.8, label="alpha/beta = 1 (Section 6)")
    ax0.set(yscale="log", xlabel="alpha / beta", ylabel="test error (sum over outputs)",
            title=f"max error / k alpha^2 at alpha/beta <= 1: {measured:.3f} (tol {_TOL})")
    for i, beta in enumerate(size["beta"]):
        s = sims[beta]
        ax1.plot(s.t / -(-size["N"] // 50), np.nanmean(s["c_G"], axis=(0, 2)), "-", color=f"C{i}",
                 label=f"beta = {beta:g}")
    ax1.axhline(size["alpha"], color="0.3", ls=":", label="alpha (target c_G)")
    ax1.set(xscale="symlog", xlim=(0, size["epochs"][0] + size["epochs"][1]), xlabel="epoch",
            ylabel="c_G (mean over outputs)", title="G(F) coefficient along training")
    for ax in (ax0, ax1):
        _legend(ax)
    path = save_figure(fig, outdir / "resnet.figure2_beta.png", title=claim_title(
        REGISTRY["resnet.figure2_beta"], measured, what="max error / k alpha^2 at alpha/beta <= 1"))
    checks = {"every beta run finite": all(np.isfinite(r["error"]) for r in rows)}
    msg = ("error / k alpha^2 by alpha/beta: "
           + ", ".join(f"{r['alpha_over_beta']:.2f}: {r['ratio']:.3f} (lr {'/'.join(f'{v:g}' for v in r['lr'])}, "
                       f"c_G {r['c_G']:.3f})" for r in rows)
           + f"; learns G (ratio < {_TOL}) at alpha/beta in {np.round(learned, 2).tolist()}, not at "
           + f"{np.round(fails, 2).tolist()}")
    msg += f"; untrained null {nulls['untrained']:.3g}"
    return ClaimResult(measured=measured, checks=checks, figure=str(path), table=rows, message=msg, nulls=nulls,
                       details={"learned_alpha_over_beta": learned, "failed_alpha_over_beta": fails})
