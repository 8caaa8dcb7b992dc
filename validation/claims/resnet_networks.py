"""ResNet vs kernels ([AllenZhu19]): trained networks against the exact kernel errors (docs/resnet.md).

* ``resnet.thm2_networks``: on Theorem 2's target, the trained ResNet (fc3 and fc2 reported beside it) ends far below
  the exact test error of the infinite-width ReLU NTK and conjugate kernel fitted on the same N training points
  (best ridge), which stay at the "G not learned" plateau k alpha^2.
* ``resnet.kernel_transition``: at d = 20, k = 3 (C(d, k) = 1140) the exact kernel error vs N: the kernels capture
  almost none of G(F)'s Walsh coefficient while N <= C(d, k)/10, sit above Theorem 2's alpha^2/4 and Lemma E.2's
  bound, and capture it past C(d, k) (the Gaussian kernel more than half of it by 2 C(d, k)). Null: the kernels never
  learn G (Theorem 2's bound read for every N): the same capture at the largest N, which rejects it.

  The start is gradual, not a step: with the bias input the ReLU kernels' level eigenvalues pair up,
  lambda_{2j-1}^2 = lambda_{2j}^2 for j >= 2 [derived: on the face x_{d+1} = 1 of the (d+1)-cube chi_S and
  chi_{S + {d+1}} coincide, so lambda_l(d) = mu_l + mu_{l+1} with the bias-free kernel's mu_odd = 0 for odd l >= 3;
  equal to 1e-13 at d = 20], so chi_S (|S| = 3) competes with C(d, 3) + C(d, 4) = 5985 Walsh functions of the same
  eigenvalue and c_S grows smoothly (about as N^1.5-2) through C(d, k).
"""
from __future__ import annotations

import math

import numpy as np

import popdyn
from popdyn.models import resnet
from popdyn.models.resnet.problem import NetworkProblem
from popdyn.plot import claim_title, legend_outside, sample_axis, save_figure, subplots
from popdyn.sim.resnet import training_inputs

from . import REGISTRY, ClaimResult, claim

__all__ = []

_K = 4
#: Theorem 2 puts every kernel above alpha^2/4 while the ResNet reaches O~(alpha^4) (Cor. 7.1); the kernels sit at
#: >= k alpha^2 (the plateau), so a network below Theorem 2's kernel floor is below 1/(4k) of the best kernel
_RATIO_TOL = 1 / (4 * _K)
#: training (both sizes): m, lr = 0.2, wd = 1e-4 from a pilot grid lr in {0.01, 0.1, 0.2, 0.5} x wd in {0, 1e-4}
#: (d = 30, k = 4, N = 1000, m = 200, 2 seeds; lr = 0.5 trains too but is closer to divergence);
#: the full size runs 200 + 200 epochs instead of the paper's 400 + 400 ([AllenZhu19, App. A]): the ResNet is at ~2e-5 by N = 3000
#: kernels capture c_S <= alpha/20 of G below C(d, k)/6 samples (derived here: <= 0.016 of 0.3; the sizes below keep
#: N <= C(d, k)/6), so by Lemma E.2 their G part costs >= k (alpha - alpha/20)^2 ~ 0.9 k alpha^2
_PLATEAU_FRACTION = 0.9
#: a fraction c_S/alpha <= 0.1 of G captured leaves >= (1 - 0.1)^2 = 81 % of its error (Lemma E.2): G not learned
_CAPTURE_TOL = 0.1
#: past C(d, k) the captured c_S must grow: at the largest N (>= 2 C(d, k)) at least 5x its largest value at
#: N <= C(d, k)/10 (measured 20-50x), and some kernel must capture at least half of alpha by 2 C(d, k)
_GROWTH = 5.0


@claim(id="resnet.thm2_networks", model="resnet",
       title="On Theorem 2's target the trained ResNet beats the exact error of the ReLU NTK and conjugate kernel "
             "fitted on the same N points, which stay at the plateau k alpha^2",
       source="[AllenZhu19, Theorem 2, Corollary 7.1, objective (3.1), Lemma E.2, App. A (networks, protocol)]",
       metric="max over N and seeds of (ResNet test error) / (the smaller exact kernel error, ReLU NTK or CK at the "
              "best ridge, fitted on that seed's training set)",
       tolerance=_RATIO_TOL,
       tolerance_origin="1/(4k) = (alpha^2/4)/(k alpha^2) with k = 4: the ResNet below Theorem 2's kernel floor "
                        "alpha^2/4 while the kernels sit at the plateau k alpha^2 (a kernel-like network: ratio ~1)",
       kind="training",
       # the trained fc2 is no null here: on this target it beats the kernels too (quick: ratio 0.012), so the claim shows
       # trained networks beat the kernels (Theorem 2), not that the ResNet's hierarchy is needed (that is
       # resnet.figure2's target, where the two-layer net stays at the plateau); its ratio is reported in details
       nulls={"untrained": "the ResNet at init (its first recorded test error, same draw): a network that did not "
                           "learn is no better than the kernels"},
       quick={"d": 24, "k": _K, "alpha": 0.3, "n_train": [800, 1600], "width": 100, "epochs": 40, "lr": 0.2,
              "weight_decay": 1e-4, "seeds": 2, "archs": ["resnet", "fc2"], "kernels": ["relu_ntk", "relu_nngp"],
              "n_test": 4000},
       full={"d": 30, "k": _K, "alpha": 0.3, "n_train": [1000, 2000, 3000], "width": 200, "epochs": 200, "lr": 0.2,
             "weight_decay": 1e-4, "seeds": 2, "archs": ["resnet", "fc3", "fc2"], "kernels": ["relu_ntk", "relu_nngp"],
             "n_test": 10_000})
def thm2_networks(size, device, outdir):
    rows, ratios, curves, kernel_rows = [], [], {}, []
    null_ratios = {"untrained": [], "two_layer": []}
    training = {"lr": size["lr"], "weight_decay": size["weight_decay"], "epochs": size["epochs"]}
    for N in size["n_train"]:
        probs = {a: NetworkProblem.thm2(a, d=size["d"], k=size["k"], alpha=size["alpha"], width=size["width"],
                                        n_train=N) for a in size["archs"]}
        first = probs[size["archs"][0]]
        Xs = training_inputs(first, size["seeds"], device=device)           # every arch trains on these sets
        preds = [popdyn.predict(first, X=X, kernels=size["kernels"], **training) for X in Xs]
        kern = np.array([p["kernel_error"] for p in preds])                  # (seeds, kernels)
        kernel_rows.append({"N": N, **{k: float(kern[:, i].mean()) for i, k in enumerate(size["kernels"])},
                            "kernel_c_G": float(np.mean([np.abs(p["kernel_c_G"]).max() for p in preds]))})
        for a, p in probs.items():
            sim = popdyn.simulate(p, seeds=size["seeds"], n_test=size["n_test"], kernels=size["kernels"],
                                  device=device, **training)
            err = sim["test_error"][:, -1]
            ratio = err / kern.min(1)
            if a == "resnet":
                ratios.append(ratio)
                curves[N] = sim
                null_ratios["untrained"].append(sim["test_error"][:, 0] / kern.min(1))
            if a == "fc2":
                null_ratios["two_layer"].append(ratio)
            rows.append({"N": N, "arch": a, "test_error": float(np.mean(err)), "min_kernel_error":
                         float(kern.min(1).mean()), "ratio": float(np.max(ratio)),
                         "c_G": float(np.mean(sim["c_G"][:, -1])), "diverged": int(sim.status != 0)})
    pred = preds[0]
    plateau, floor = float(pred["G_not_learned"]), float(pred["thm2_bound"])
    measured = float(np.max(ratios))
    # the closest each null comes to passing: its smallest ratio over N and seeds
    nulls = {"untrained": float(np.min(null_ratios["untrained"]))}
    fc2_ratio = float(np.min(null_ratios["two_layer"])) if null_ratios["two_layer"] else float("nan")
    resnet_err = [r["test_error"] for r in rows if r["arch"] == "resnet"]
    resnet_max = max(float(np.max(r["test_error"])) for r in rows if r["arch"] == "resnet")
    best = [min(r[k] for k in size["kernels"]) for r in kernel_rows]
    checks = {f"every exact kernel error >= {_PLATEAU_FRACTION} k alpha^2": min(best) >= _PLATEAU_FRACTION * plateau,
              "ResNet below the plateau k alpha^2 at every N": resnet_max < plateau,
              "ResNet below Theorem 2's kernel floor alpha^2/4 at every N": resnet_max < floor,
              "no network diverged": not any(r["diverged"] for r in rows)}

    fig, (ax0, ax1) = subplots(2, panel_size=(5.0, 4.0))
    for i, a in enumerate(size["archs"]):
        ax0.plot(size["n_train"], [r["test_error"] for r in rows if r["arch"] == a], "o", color=f"C{i}",
                 label=f"{a} (trained)")
    for i, k in enumerate(size["kernels"]):
        ax0.plot(size["n_train"], [r[k] for r in kernel_rows], "-", color=f"C{len(size['archs']) + i}",
                 label=f"{k} (exact, best ridge)")
    ax0.axhline(plateau, color="0.4", ls=":", label="k alpha^2 (G not learned)")
    ax0.axhline(floor, color="0.4", ls="--", label="alpha^2/4 (Theorem 2)")
    ax0.set(yscale="log", xlabel="training points N", ylabel="test error (sum over outputs)",
            title=f"ResNet / best kernel: {measured:.3g} (tol {_RATIO_TOL:.3g})")
    sample_axis(ax0, size["n_train"])
    N_top = size["n_train"][-1]
    sim = curves[N_top]
    for j, (name, ls) in enumerate((("c_F", "-"), ("c_G", "--"))):
        ax1.plot(sim.t, sim[name].mean((0, 2)), ls, color="C0", label=f"ResNet {name} (mean over outputs)")
    ax1.axhline(size["alpha"], color="0.4", ls=":", label="alpha (target's c_G)")
    ax1.axhline(kernel_rows[-1]["kernel_c_G"], color="C3", ls="-.", label="kernels' |c_G| (max)")
    ax1.set(xlabel="epoch", ylabel="Walsh coefficient", title=f"hierarchy at N = {N_top}")
    for ax in (ax0, ax1):
        legend_outside(ax)
    path = save_figure(fig, outdir / "resnet.thm2_networks.png", title=claim_title(
        REGISTRY["resnet.thm2_networks"], measured, what="ResNet / best kernel"))
    msg = (f"ResNet {', '.join(f'{e:.3g}' for e in resnet_err)} vs best kernel "
           f"{', '.join(f'{e:.3g}' for e in best)} at N = {size['n_train']}; "
           f"plateau {plateau:.3g}, Theorem 2 floor {floor:.3g}")
    msg += (f"; untrained null (smallest ratio) {nulls['untrained']:.3g}; the trained 2-layer net's ratio "
            f"{fc2_ratio:.3g} (it beats the kernels too: not a null of this claim)")
    return ClaimResult(measured=measured, checks=checks, figure=str(path), table=rows, message=msg, nulls=nulls,
                       details={"kernels": kernel_rows, "fc2_smallest_ratio": fc2_ratio})


@claim(id="resnet.kernel_transition", model="resnet",
       title="Exact kernel error vs N at d = 20, k = 3: G(F) is not learned while N <= C(d, k)/10 = 114 and is "
             "captured past C(d, k)",
       source="[AllenZhu19, Theorem 2, Lemmas E.2, E.3, App. E.1 (their assembly)]",
       metric="max over kernels and N <= C(d, k)/10 of c_S/alpha, the fraction of G(F)'s Walsh coefficient the kernel "
              "predictor captures (largest over the ridges, mean over outputs)",
       tolerance=_CAPTURE_TOL,
       tolerance_origin="c_S/alpha <= 0.1 leaves >= (1 - 0.1)^2 = 81 % of G's error (Lemma E.2): G not learned; a "
                        "kernel that learned G at N ~ d (as the networks do) would show c_S/alpha ~ 1",
       # no simulation meets it: the exact kernel error is the theory's own computation (its Monte Carlo twin is
       # resnet.exact_kernel_error). It qualifies Theorem 2: the kernels' capture of G starts gradually, not at a step.
       kind="finding",
       nulls={"never_learned": "the kernels never learn G, at any N (Theorem 2's lower bound read for every N, not only "
                               "N <= C(d, k)): the same statistic at the largest N (2 C(d, k) quick, 4 C(d, k) full)"},
       quick={"d": 20, "k": 3, "alpha": 0.3, "n_train": [57, 114, 285, 570, 1140, 2280], "ridges": [1e-8, 1e-4],
              "kernels": ["relu_ntk", "relu_nngp", "gaussian"]},
       full={"d": 20, "k": 3, "alpha": 0.3, "n_train": [57, 114, 285, 570, 1140, 1710, 2280, 3420, 4560],
             "ridges": [1e-8, 1e-6, 1e-4], "kernels": ["relu_ntk", "relu_nngp", "gaussian"]})
def kernel_transition(size, device, outdir):
    d, k, alpha = size["d"], size["k"], size["alpha"]
    C = math.comb(d, k)
    rows = []
    for kern in size["kernels"]:
        for N in size["n_train"]:
            preds = [popdyn.predict(resnet.Problem(kernel=kern, d=d, k=k, alpha=alpha, n_train=N, ridge=lam))
                     for lam in size["ridges"]]
            errs = [p["test_error"].sum() for p in preds]
            j = int(np.argmin(errs))
            rows.append({"kernel": kern, "N": N, "N/C": N / C, "error": float(errs[j]),
                         "lemma_e2": float(preds[j]["lemma_e2"].sum()),
                         "c_S/alpha": max(float(np.abs(p["captured_G"]).mean()) for p in preds) / alpha})
    plateau, floor = k * alpha ** 2, float(preds[0]["thm2_bound"])
    below = [r for r in rows if r["N"] <= C / 10]
    measured = max(r["c_S/alpha"] for r in below)
    growth = {kern: [r["c_S/alpha"] for r in rows if r["kernel"] == kern] for kern in size["kernels"]}
    at_tenth = {kern: max(r["c_S/alpha"] for r in below if r["kernel"] == kern) for kern in size["kernels"]}
    checks = {"exact error >= Lemma E.2 bound at every N": all(r["error"] >= r["lemma_e2"] - 1e-12 for r in rows),
              "exact error > alpha^2/4 (Theorem 2) at every N <= C(d, k)":
                  all(r["error"] > floor for r in rows if r["N"] <= C),
              "exact error >= k alpha^2 at every N <= C(d, k)/10": all(r["error"] >= plateau for r in rows
                                                                       if r["N"] <= C / 10),
              f"c_S grows past C(d, k): >= {_GROWTH}x its N <= C/10 value at the largest N (>= 2 C(d, k))":
                  size["n_train"][-1] >= 2 * C and all(growth[kn][-1] >= _GROWTH * at_tenth[kn]
                                                        for kn in size["kernels"]),
              "some kernel captures c_S >= alpha/2 by N = 2 C(d, k)":
                  max(r["c_S/alpha"] for r in rows if r["N"] <= 2 * C) >= 0.5}

    fig, (ax0, ax1) = subplots(2, panel_size=(5.0, 4.0))
    for i, kern in enumerate(size["kernels"]):
        mine = [r for r in rows if r["kernel"] == kern]
        ax0.plot(size["n_train"], [r["error"] for r in mine], "-o", color=f"C{i}", label=f"{kern}: exact error")
        ax0.plot(size["n_train"], [r["lemma_e2"] for r in mine], "--", color=f"C{i}", label=f"{kern}: Lemma E.2 bound")
        ax1.plot(size["n_train"], [r["c_S/alpha"] for r in mine], "-o", color=f"C{i}", label=kern)
    ax0.axhline(plateau, color="0.4", ls=":", label="k alpha^2 (G not learned)")
    ax0.axhline(floor, color="0.4", ls="-.", label="alpha^2/4 (Theorem 2)")
    ax1.axhline(_CAPTURE_TOL, color="0.4", ls=":", label=f"tolerance {_CAPTURE_TOL}")
    for ax in (ax0, ax1):
        ax.axvline(C, color="0.2", ls="--", lw=0.8, label=f"C(d, k) = {C}")
        ax.axvline(C / 10, color="0.6", ls="--", lw=0.8, label="C(d, k)/10")
        legend_outside(ax)
    ax0.set(xscale="log", xlabel="training points N", ylabel="test error (sum over outputs)",
            title=f"d = {d}, k = {k}, alpha = {alpha}: best ridge")
    ax1.set(xscale="log", yscale="log", xlabel="training points N", ylabel="captured c_S / alpha",
            title=f"max c_S/alpha at N <= C/10: {measured:.3g} (tol {_CAPTURE_TOL})")
    path = save_figure(fig, outdir / "resnet.kernel_transition.png", title=claim_title(
        REGISTRY["resnet.kernel_transition"], measured, what="max c_S / alpha at N <= C/10"))
    msg = (f"max c_S/alpha at N <= C/10 = {C // 10}: {measured:.3g}; at N = {size['n_train'][-1]}: "
           f"{', '.join(f'{kn} {growth[kn][-1]:.3g}' for kn in size['kernels'])}; min error at N <= C: "
           f"{min(r['error'] for r in rows if r['N'] <= C):.3g} (k alpha^2 = {plateau:.3g}, alpha^2/4 = {floor:.3g})")
    nulls = {"never_learned": max(g[-1] for g in growth.values())}
    return ClaimResult(measured=measured, checks=checks, figure=str(path), table=rows, message=msg, nulls=nulls)
