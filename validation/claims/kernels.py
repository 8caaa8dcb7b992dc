"""Kernel learning on the hypercube: the eigenlearning learning curve against exact kernel ridge regression
(docs/kernels.md, "Kernels on the hypercube").

* ``kernels.eigenlearning_curves``: for the target x0 x1 + 0.5 x0 on {±1}^d (d = 24 quick, 30 full) and three wide
  networks (ReLU depth 1 NTK, ReLU depth 3 NTK, erf depth 2 NNGP), the mean over independent uniform training sets of
  KRR's exact population test error (Parseval over the whole cube, no test sample) follows the eigenlearning
  prediction at every N from 20 to 2000, and not the theory without its overfitting factor E0, nor the ridge alone
  (kappa = delta, also the N -> infinity limit), nor a staircase that learns a level once N exceeds its count of
  Walsh functions, nor the zero predictor.
* ``kernels.small_cube_breakdown`` (finding): on a tiny cube (d = 6, and d = 8 at full size), where N reaches 2^d,
  the same theory underestimates the ReLU NTKs' mean exact error by factors of 1.5 to 10; the erf NNGP stays within
  a few per cent. The prediction at the expected number of distinct training points (the draws repeat points) is
  recorded beside it: it closes the gap in some cells and overshoots in others, so repeats are not the whole story.
  Null: the theory is off by a constant factor on a small cube rather than breaking down as N nears 2^d; the same
  statistic at N = 2^d / 8, where the ReLU NTKs sit within 6 % of the prediction, rejects it.

Only popdyn's public API is used; the exact errors are the independent side.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

import popdyn
from popdyn.models import kernels
from popdyn.plot import claim_title, legend_outside, sample_axis, save_figure, subplots

from . import REGISTRY, ClaimResult, claim

__all__ = []

_SRC = ("[Bordelon20] and [Canatar21] (the learning curve, E0 = 1/(1 - gamma)), [Simon23] (the eigenlearning "
        "equations); the cube's Walsh levels [AllenZhu19, Prop. E.1]; the kernels [Novak20]")
#: the three networks: (depth, activation, W_std, b_std, kernel); b_std > 0 so that every level has an eigenvalue
ARCHS = {"ReLU depth 1 NTK": (1, "relu", math.sqrt(2.0), 0.1, "ntk"),
         "ReLU depth 3 NTK": (3, "relu", math.sqrt(2.0), 0.1, "ntk"),
         "erf depth 2 NNGP": (2, "erf", 1.0, 0.1, "nngp")}
_RIDGE = 1e-3
_REL = 0.03          # finite-size allowance of the mean exact error (measured <= 1.7 % at d = 30, N >= 2)
_ALPHA = 2e-4        # family-wise level of the seed noise over the (network, N) cells
_RATIO = 1.25        # the breakdown: the mean exact error exceeds eigenlearning by more than 25 %
_ERF_GAP = 0.10      # the erf NNGP (power on levels 0-1, far from interpolating) stays within 10 % there


def _target(d):
    return kernels.WalshTarget(d, {(0, 1): 1.0, (0,): 0.5})


def _problem(name, d):
    depth, act, W, b, kern = ARCHS[name]
    return kernels.Problem(d, _target(d), depth, act, W, b, kern, _RIDGE)


def _nulls(problem, n_train):
    """The skeptic's learning curves on the same sizes: no E0, kappa = delta (E0 = 1: the N -> inf limit at this
    ridge), the staircase, the zero predictor."""
    lam, m, P = problem.eigenvalues, problem.multiplicity, problem.target.level_power()
    N = np.asarray(n_train)
    kappa = kernels.effective_regularization(lam, n_train, problem.ridge, m)
    L = kernels.learnabilities(lam, n_train, kappa)
    L_ridge = kernels.learnabilities(lam, n_train, N * problem.ridge)
    below = problem.modes_below
    return {"no_E0": ((1 - L) ** 2 * P).sum(1),
            "kappa_is_ridge": ((1 - L_ridge) ** 2 * P).sum(1),
            "staircase": np.array([P[below > n].sum() for n in N]),
            "nothing_learned": np.full(N.size, problem.target.norm2())}


def _q(S, cells):
    """Student-t quantile (S - 1 d.o.f.) at two-sided family-wise level _ALPHA over ``cells`` (Bonferroni)."""
    return float(stats.t.isf(_ALPHA / (2 * cells), S - 1))


@claim(id="kernels.eigenlearning_curves", model="kernels",
       title="Eigenlearning predicts the mean exact test error of kernel ridge regression on the hypercube for the "
             "low-degree target x0 x1 + 0.5 x0 (a sparse parity plus a linear term) under three wide networks (ReLU "
             "depth 1 and 3 NTK, erf depth 2 NNGP), at every N",
       source=_SRC,
       metric="max over networks and N of |mean_seeds(E) - E_theory| / (q SE + 0.03 E_theory): E the exact "
              "population test error (Parseval over all 2^d points) of KRR on one uniform training set, SE the "
              "standard error of the mean over S independent sets, q the Student-t quantile (S - 1 d.o.f.) at "
              "family-wise level 2e-4 over the networks x N cells (Bonferroni); the same number for each null curve "
              "on the same fits",
       tolerance=1.0,
       tolerance_origin="per cell the seed mean over its SE is a Student t with S - 1 d.o.f. (31 quick, 63 full); q "
                        "is its quantile at family-wise 2e-4 over the 12 (quick) or 15 (full) cells (q = 5.09 quick, "
                        "4.72 full), so the seed noise exceeds q SE somewhere with probability <= 2e-4. 3 % of the "
                        "theory covers its finite-size bias, measured at d = 30 with 32 to 400 sets per N: <= 1.4 % "
                        "for N in [30, 3000] (largest at N = 30), <= 1.7 % down to N = 2 (about 2x headroom). In "
                        "those units, pass iff <= 1. False-failure bound 2e-4 while the bias stays within the 3 %. "
                        "The E0 factor is 1.03 to 1.4 here, so the nulls miss by 3 % (no E0, erf at large N) to "
                        "factors of 5 and more; the max over cells puts each null at 5 or more units",
       kind="training",
       nulls={"no_E0": "the theory without the overfitting coefficient (E0 = 1), kappa self-consistent",
              "kappa_is_ridge": "no self-consistency: kappa = delta = N ridge and E0 = 1, which is also the "
                                "N -> infinity limit at this ridge (population ridge regression)",
              "staircase": "a level is learned entirely once N exceeds the number of Walsh functions up to it, else "
                           "not at all",
              "nothing_learned": "the target's own population error ||f||^2 (the zero predictor)"},
       quick={"d": 30, "n_train": [30, 100, 300, 1000], "seeds": 32},
       full={"d": 30, "n_train": [30, 100, 300, 1000, 3000], "seeds": 64})
def eigenlearning_curves(size, device, outdir):
    d, S, n_train = size["d"], size["seeds"], tuple(size["n_train"])
    cells = len(ARCHS) * len(n_train)
    q = _q(S, cells)
    rows, units = [], {"theory": 0.0, "no_E0": 0.0, "kappa_is_ridge": 0.0, "staircase": 0.0, "nothing_learned": 0.0}
    z_max, learn_z = 0.0, 0.0
    fig, axes = subplots(len(ARCHS), panel_size=(4.6, 3.6))
    for ax, name in zip(axes, ARCHS):
        p = _problem(name, d)
        pred = popdyn.predict(p, n_train=n_train)
        sim = popdyn.simulate(p, n_train=n_train, seeds=S, seed=0, device=device)
        E = sim["test_error"]
        mean, se = E.mean(0), E.std(0, ddof=1) / math.sqrt(S)
        curves = {"theory": pred["test_error"], **_nulls(p, n_train)}
        for k, c in curves.items():
            units[k] = max(units[k], float((np.abs(mean - c) / (q * se + _REL * c)).max()))
        z = (mean - pred["test_error"]) / se
        z_max = max(z_max, float(np.abs(z).max()))
        L = sim["learnability"]
        lz = np.abs(L.mean(0) - pred["learnability"]) / (L.std(0, ddof=1) / math.sqrt(S))
        learn_z = max(learn_z, float(lz.max()))
        for i, N in enumerate(n_train):
            rows.append({"network": name, "N": N, "theory": float(pred["test_error"][i]), "mean": float(mean[i]),
                         "se": float(se[i]), "z": float(z[i]),
                         "rel_gap": float(mean[i] / pred["test_error"][i] - 1), "e0": float(pred["e0"][i]),
                         **{f"null_{k}": float(c[i]) for k, c in curves.items() if k != "theory"},
                         **{f"L{lv}_theory": float(pred["learnability"][i, j]) for j, lv in enumerate(p.target_levels)},
                         **{f"L{lv}_mean": float(L.mean(0)[i, j]) for j, lv in enumerate(p.target_levels)}})
        ax.errorbar(n_train, mean, yerr=2 * se, fmt="o", color="k", capsize=3, label="exact KRR, mean +- 2 SE")
        ax.plot(n_train, pred["test_error"], "-", color="C0", lw=2, label="eigenlearning")
        for j, k in enumerate(("no_E0", "kappa_is_ridge", "staircase")):
            ax.plot(n_train, curves[k], "--", color=f"C{j + 1}", lw=1, label=f"null: {k}")
        ax.set(yscale="log", xlabel="training points N", ylabel="population test error",
               title=f"{name}: max |z| {float(np.abs(z).max()):.2f}")
        sample_axis(ax, n_train)
    legend_outside(fig)
    measured = units.pop("theory")
    path = save_figure(fig, outdir / "kernels.eigenlearning_curves.png", title=claim_title(
        REGISTRY["kernels.eigenlearning_curves"], measured, what="max gap in allowed-error units",
        note=f"d = {d}, {S} training sets per N, max |z| {z_max:.2f}"))
    worst_rel = max(abs(r["rel_gap"]) for r in rows)
    msg = (f"d = {d}: max error units {measured:.3f} (q = {q:.2f}, + 3 %), max |z| {z_max:.2f}, max relative gap "
           f"{worst_rel:.4f}; learnability max |z| {learn_z:.2f}; nulls: "
           + ", ".join(f"{k} {v:.3g}" for k, v in units.items()))
    return ClaimResult(measured=measured, figure=str(path), table=rows, nulls=units, message=msg,
                       details={"q": q, "max_abs_z": z_max, "max_rel_gap": worst_rel, "learnability_max_z": learn_z})


def _distinct(d, N):
    """Expected number of distinct points among N uniform draws from the 2^d points of the cube."""
    n = 2.0 ** d
    return n * -math.expm1(N * math.log1p(-1.0 / n))


@claim(id="kernels.small_cube_breakdown", model="kernels",
       title="Where eigenlearning fails: on a tiny cube (d = 6, 8) with N = 2^d training points, it underestimates "
             "the ReLU NTKs' mean exact test error by more than 25 % (factors 1.5 to 10); the erf NNGP stays close",
       source=_SRC + "; the theory's regime (many modes near its cut-off, N << 2^d) measured here, derived in "
                     "docs/kernels.md",
       metric="max over the ReLU NTKs (depth 1, 3) and d of 1.25 E_theory / (mean_seeds(E) - z SE) at N = 2^d: the "
              "lower one-sided confidence bound of the mean exact error against 1.25 times the prediction, z the "
              "Student-t quantile (S - 1 d.o.f.) at one-sided P(Z > 3) split over the cells (Bonferroni)",
       tolerance=1.0,
       tolerance_origin="the finding is that the mean exact error exceeds 1.25 E_theory; it is established when even "
                        "its lower z-SE bound does (measured <= 1), z = 3.35 quick (64 sets, 2 cells), 3.49 full (128 "
                        "sets, 4 cells). Measured at 64 sets: ratios 6.0 (depth 1) and 9.8 (depth 3) at d = 6, 1.5 "
                        "and 3.9 at d = 8, i.e. 12.7, 23 and (d = 8, depth 1, the smallest) 8.5 SE above 1.25 "
                        "(about 12 at the full 128 sets): the test misses the effect with probability < 1e-15. "
                        "Check: the erf NNGP within 10 % at N = 2^d (measured 2.6 % at d = 6 with a 1 % SE). The null "
                        "reads 1.28 at N = 2^d / 8 (ratios 1.06 and 1.05 there, 64 sets)",
       kind="finding",
       nulls={"constant_miss": "the theory is off by a constant factor on a small cube, not breaking down as N nears "
                               "2^d: the same statistic at N = 2^d / 8"},
       quick={"d": [6], "n_factors": [0.125, 0.25, 0.5, 1.0, 2.0], "seeds": 64},
       full={"d": [6, 8], "d_extra": [10], "n_factors": [0.125, 0.25, 0.5, 1.0, 2.0], "seeds": 128})
def small_cube_breakdown(size, device, outdir):
    S = size["seeds"]
    relu = [n for n in ARCHS if n.startswith("ReLU")]
    z = float(stats.t.isf(stats.norm.sf(3.0) / (len(relu) * len(size["d"])), S - 1))
    rows, stat, worst_erf, null = [], 0.0, 0.0, 0.0
    dims = list(size["d"]) + list(size.get("d_extra", []))      # d_extra: tabulated (the crossover), not tested
    fig, axes = subplots(len(dims), panel_size=(5.2, 3.8))
    for ax, d in zip(axes, dims):
        n_train = tuple(max(1, int(round(f * 2 ** d))) for f in size["n_factors"])
        for c, name in enumerate(ARCHS):
            p = _problem(name, d)
            pred = popdyn.predict(p, n_train=n_train)
            E = popdyn.simulate(p, n_train=n_train, seeds=S, seed=0, device=device)["test_error"]
            mean, se = E.mean(0), E.std(0, ddof=1) / math.sqrt(S)
            th = pred["test_error"]
            n_eff = [_distinct(d, N) for N in n_train]
            # the same Gram ridge delta = N ridge spread over the distinct points
            th_eff = np.array([kernels.eigenlearning(p.eigenvalues, p.target.level_power(), max(1, round(ne)),
                                                     _RIDGE * N / max(1, round(ne)), 0.0,
                                                     p.multiplicity).test_error[0]
                               for N, ne in zip(n_train, n_eff)])
            for i, N in enumerate(n_train):
                lower = mean[i] - z * se[i]
                rows.append({"d": d, "network": name, "N": N, "N/2^d": N / 2 ** d, "theory": float(th[i]),
                             "mean": float(mean[i]), "se": float(se[i]), "ratio": float(mean[i] / th[i]),
                             "ratio_lower": float(lower / th[i]), "distinct_points": n_eff[i],
                             "theory_at_distinct_points": float(th_eff[i]),
                             "ratio_to_distinct": float(mean[i] / th_eff[i])})
                if N == 2 ** d // 8 and d in size["d"] and name in relu:
                    null = max(null, _RATIO * th[i] / lower if lower > 0 else math.inf)
                if N == 2 ** d and d in size["d"]:
                    if name in relu:
                        stat = max(stat, _RATIO * th[i] / lower if lower > 0 else math.inf)
                    else:
                        worst_erf = max(worst_erf, abs(mean[i] / th[i] - 1))
            ax.plot(n_train, mean / th, "o-", color=f"C{c}", label=f"{name}: mean exact / eigenlearning")
            ax.plot(n_train, mean / th_eff, ":", color=f"C{c}", label=f"{name}: / at the distinct points")
        ax.axhline(_RATIO, color="k", ls="--", lw=0.8, label="1.25")
        ax.axhline(1.0, color="0.5", lw=0.8)
        ax.axvline(2 ** d, color="0.5", ls=":", lw=0.8)
        ax.set(yscale="log", xlabel="training points N", ylabel="mean exact error / prediction",
               title=f"d = {d} (2^d = {2 ** d} points)" + ("" if d in size["d"] else ", not tested"))
        sample_axis(ax, n_train)
    legend_outside(fig)
    path = save_figure(fig, outdir / "kernels.small_cube_breakdown.png", title=claim_title(
        REGISTRY["kernels.small_cube_breakdown"], stat, what="1.25 theory / lower bound of the mean"))
    at = [r for r in rows if r["N"] == 2 ** r["d"]]
    msg = ("at N = 2^d, mean exact / eigenlearning: " + ", ".join(
        f"d={r['d']} {r['network']}: {r['ratio']:.3g} (distinct points: {r['ratio_to_distinct']:.3g})" for r in at)
        + f"; statistic {stat:.3f} (z = {z:.2f}); at N = 2^d / 8 {null:.3f}")
    checks = {f"erf depth 2 NNGP within {_ERF_GAP:.0%} of eigenlearning at N = 2^d (worst {worst_erf:.3f})":
              worst_erf <= _ERF_GAP}
    return ClaimResult(measured=stat, figure=str(path), table=rows, message=msg, checks=checks,
                       nulls={"constant_miss": null},
                       details={"z": z, "erf_rel_gap_at_2d": worst_erf})
