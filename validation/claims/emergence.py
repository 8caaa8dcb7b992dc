"""Feature-emergence claims ([Shi22], Shi-Wei-Liang ICLR 2022; checks C1-C9, docs/emergence.md).

The paper's experiments use unreported hyperparameters ([Shi22, App. E]); these claims hold the exact population theory of
the three-stage schedule ([Shi22, Section 3.1]) against the torch training of ``popdyn.sim.emergence`` in pattern coordinates.

* ``emergence.step1_correlations`` (C1): the exact single-neuron correlations T (Fourier inversion) against the
  empirical step-1 gradient, coordinate by coordinate.
* ``emergence.step1_cosine`` (C2): the population step-1 features point along sum_A M_j to 1e-4 (the paper's One-Step
  cosine 0.848 is not the theory-schedule value).
* ``emergence.step2_cosine`` (C3): the finite-sample step-2 cosine 1 - tr(P_perp Sigma)/(2 n ||E y phi||^2).
* ``emergence.step2_bias_shift`` (C4): b^(2) - b^(1) = a^(1) h(b^(1)) Ê[y]; zero with balanced classes.
* ``emergence.two_step_separability`` (C5): two-step features separate the parity (LP), one-step features only
  carry the count linearly (count-threshold ceiling).
* ``emergence.reduced_gd`` (C6): the exact reduced population GD of stage 3 against full-batch GD on n samples.
* ``emergence.gmm_stein`` (C7): the Gaussian-mixture parity correlation by Stein's lemma against autograd.
* ``emergence.fixed_feature_bound`` (C8): Thm 2's fixed-feature lower bound (Parseval form) on trained random features.
* ``emergence.no_structure_signal`` (C9): without input structure the step-1 gradient is pure sampling noise.
"""
from __future__ import annotations

import math

import numpy as np

from popdyn.models.emergence import activation, bounds, classifier, correlations, data, network, schedule, steps
from popdyn.plot import claim_title, legend_outside, sample_axis, save_figure, subplots

from . import REGISTRY, ClaimResult, claim

__all__ = []

_M_SCHEDULE = 300      # width of the paper's parity experiment ([Shi22, App. E.1.1]): sets eta^(1) = gamma^2 sigt/(k m^3) ~ 2e-9
_Z_MAX = 6.0           # C1: max |z| over D coordinates x neurons (first proposed: 4.5; P(|Z| > 6) = 2e-9 per z)
_CHI_Z = 6.0           # C1/C7/C9: |sum z^2 - D| / sqrt(2 D) (chi^2_D tail at D + 6 sqrt(2D): <= 1.5e-5 for D >= 20)


def _sim():
    """The torch simulation module, imported lazily (torch is optional for discovering claims)."""
    from popdyn.sim import emergence
    return emergence


def _theory_vs_sim_panels(ax0, ax1, xlabel, ylabel, title, zlabel, worst):
    """Finish a scatter of simulation against theory (identity line) and a histogram of z-scores (N(0, 1) drawn)."""
    lo, hi = ax0.get_xlim()
    ax0.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="theory = simulation")
    ax0.set(xlabel=xlabel, ylabel=ylabel, title=title)
    u = np.linspace(-5, 5, 200)
    ax1.plot(u, np.exp(-u ** 2 / 2) / math.sqrt(2 * math.pi), "k--", lw=1, label="N(0, 1)")
    ax1.set(xlabel=zlabel, ylabel="density", title=f"max |z| = {worst:.2f}")
    _legend(ax0, ax1)


def _legend(*axes):
    for ax in axes:
        legend_outside(ax)


def _model(size, p_o=None):
    return data.parity_mixture(size["D"], size["k"], size.get("p_o", 0.5) if p_o is None else p_o)


def _init(model, m, seed=0):
    return network.symmetric_init(model, m, seed)


def _sched(model):
    return schedule.theory_schedule(model, _M_SCHEDULE, steps=3)


def _train(model, params, n, seeds, nsteps, *, method="network", balanced=True, seed=0, sched=None, **kw):
    """The torch training of ``params`` (2m neurons; the sim mirrors the first m) for ``nsteps`` theory steps."""
    opts = dict(n_test=2, eval_samples=2, n_points=nsteps + 1) | kw
    return _sim().train(model, width=params.n // 2, method=method, schedule=_sched(model) if sched is None else sched,
                        steps=nsteps, n_train=n, seeds=seeds, seed=seed, init=params, balanced=balanced, **opts)


def _step1_hat(model, params, size, method="network"):
    """Empirical step-1 correlations ``T-hat = Q^(1) / (eta^(1) a^(0))`` of the first m neurons, seed mean, and the
    standard error per coordinate (per-sample sd from an independent Monte Carlo of the same estimator)."""
    m = params.n // 2
    sim = _train(model, params, size["n_train"], size["seeds"], 1, method=method)
    eta1 = _sched(model)[0].eta
    That = (sim["Q_1"] / (eta1 * sim["a_0"][..., None]))[:, :m].mean(0)
    law = model if method == "network" else data.no_structure(model)
    _, se = correlations.mc_correlations(law, params.Q[:m], params.b[:m], _sched(model)[0].s, size["n_mc"], seed=7)
    return That, se.T * math.sqrt(size["n_mc"] / (size["n_train"] * size["seeds"]))


# ---- C1: single-neuron correlations against the empirical step-1 gradient ------------------------------------------

@claim(id="emergence.step1_correlations", model="emergence",
       title="Lemma 15 made exact: the population correlations T_j = E[y phi_j win_s(<q, phi> + b)] (Fourier "
             "inversion) equal the empirical step-1 gradient coordinate by coordinate",
       source="[Shi22, Lemma 12, Lemma 15 (eqs. (54), (89), (101)), Lemma 18]",
       metric="max over the settings (D, p_o), the neurons and the D coordinates of |z|, z = (T-hat_j - T_j) / SE_j, "
              "T-hat = -grad_q L / a from the torch step 1 on n balanced samples x seeds, SE_j from the per-sample sd of the estimator",
       tolerance=_Z_MAX,
       tolerance_origin="each z is Gaussian (its SE from an independent Monte Carlo of 1e5-1e6 samples: a known "
                        "variance): P(|z| > 6) = 2.0e-9, Bonferroni over the 1440 z quick and 8800 full: 2.8e-6 and "
                        "1.7e-5 (4.5 before: 1 % and 6 %). Check: sum z^2 per neuron within D +- 6 "
                        "sqrt(2D); chi^2_D is skewed, so 6 sd is a 1.5e-5 tail at D = 20 and 5e-7 at D = 100, over "
                        "the neurons 1.8e-4 quick and 6.3e-4 full. Recorded max |z| 3.27 (quick), 1.8x below. "
                        "False-failure bound 1.9e-4 quick, 6.5e-4 full. A 5 % error in T_A is ~10 SE at n = 2e5 (and "
                        "moves sum z^2 on A by ~13 sd). The small cube (D = 20, p_o = 1/4) is where the background sum "
                        "is far from Gaussian: Lemma 13's CLT form is ~24 SE off there (within 3 SE at D = 100)",
       quick={"settings": [[100, 0.5], [20, 0.25]], "k": 5, "neurons": 12, "n_train": 50_000, "seeds": 4,
              "n_mc": 100_000},
       full={"settings": [[100, 0.5], [100, 0.25], [20, 0.25]], "k": 5, "neurons": 40, "n_train": 200_000, "seeds": 8,
             "n_mc": 1_000_000},
       kind="training",
       nulls={"clt": "Lemma 13's leading order: the correlations from the Gaussian (CLT) approximation of the "
                     "background sum (neuron_correlations method='gauss')",
              "no_signal": "no first-order signal (T = 0): the step-1 gradient is sampling noise"})
def step1_correlations(size, device, outdir):
    rows, worst, chi_worst = [], 0.0, 0.0
    null_z = {"clt": 0.0, "no_signal": 0.0}
    fig, (ax0, ax1) = subplots(2, panel_size=(5.0, 4.0))
    for i, (D, p_o) in enumerate(size["settings"]):
        model = _model(size | {"D": D}, p_o)
        params = _init(model, size["neurons"])
        m = size["neurons"]
        T = correlations.neuron_correlations(model, params.Q[:m], params.b[:m], _sched(model)[0].s).T
        That, se = _step1_hat(model, params, size)
        z = (That - T) / se
        chi = (np.sum(z ** 2, axis=1) - model.D) / math.sqrt(2 * model.D)
        worst, chi_worst = max(worst, float(np.abs(z).max())), max(chi_worst, float(np.abs(chi).max()))
        T_clt = correlations.neuron_correlations(model, params.Q[:m], params.b[:m], _sched(model)[0].s,
                                                 method="gauss").T
        null_z["clt"] = max(null_z["clt"], float(np.abs((That - T_clt) / se).max()))
        null_z["no_signal"] = max(null_z["no_signal"], float(np.abs(That / se).max()))
        rows.append({"p_o": p_o, "D": model.D, "k": model.k, "neurons": m, "n": size["n_train"] * size["seeds"],
                     "max_abs_z": float(np.abs(z).max()), "max_chi_z": float(np.abs(chi).max()),
                     "T_A_mean": float(T[:, :model.k].mean()), "T_B_norm_median": float(np.median(
                         np.linalg.norm(T[:, model.k:], axis=1))), "se_A": float(se[:, :model.k].mean())})
        ax0.plot(T[:, :model.k].ravel(), That[:, :model.k].ravel(), "o", ms=3, color=f"C{i}",
                 label=f"D = {D}, p_o = {p_o}: j in A")
        ax0.plot(T[:, model.k:].ravel(), That[:, model.k:].ravel(), ".", ms=2, color=f"C{i}", alpha=0.4,
                 label=f"D = {D}, p_o = {p_o}: j not in A")
        ax1.hist(z.ravel(), bins=40, density=True, histtype="step", color=f"C{i}", label=f"D = {D}, p_o = {p_o}: z")
    _theory_vs_sim_panels(ax0, ax1, "T_j, exact (Fourier)", "T-hat_j, torch step 1", "step-1 correlations",
                          "z = (T-hat - T) / SE", worst)
    path = save_figure(fig, outdir / "emergence.step1_correlations.png", title=claim_title(
        REGISTRY["emergence.step1_correlations"], worst, what="max |z|"))
    checks = {f"sum z^2 per neuron within D +- {_CHI_Z:g} sqrt(2D)": chi_worst <= _CHI_Z}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls=null_z,
                       message=f"max |z| {worst:.2f}, max |sum z^2 - D|/sqrt(2D) {chi_worst:.2f} over (D, p_o) = "
                               f"{[tuple(x) for x in size['settings']]}; nulls: CLT max |z| "
                               f"{null_z['clt']:.1f}, T = 0 max |z| {null_z['no_signal']:.1f}; T_A = "
                               + ", ".join(f"{r['T_A_mean']:.5f}" for r in rows)
                               + " (SE " + ", ".join(f"{r['se_A']:.1e}" for r in rows) + ")")


# ---- C2: step-1 population cosine -----------------------------------------------------------------------------------

_TOL_COS1 = 1e-4


@claim(id="emergence.step1_cosine", model="emergence",
       title="Features emerge at step 1: the population step-1 first layer of a typical neuron is along "
             "sum_A M_j to 1e-4 "
             "and every neuron's to 1e-2 (the paper's One-Step cosine 0.848 is not the theory-schedule value)",
       source="[Shi22, Section 5.1 (Lemma 6 and the argument that step 1 is not enough), Lemma 18, Table 1 (One Step "
              "cos 0.848)]",
       metric="median over the m initial neurons of 1 - |cos(T_i, sum_A M_j)|, T_i the exact population correlations "
              "(w_i^(1) = eta^(1) a_i T_i), parity mixture at p_o = 1/2",
       tolerance=_TOL_COS1,
       tolerance_origin="cos >= 0.9999 (0.999998 measured for one neuron): 1 - cos = ||T_B||^2 / "
                        "(2 ||T_A||^2), median 1e-5 with the exact background response (the worst of 300 "
                        "neurons: 2e-3); "
                        "a background response 30x larger gives a median ~1e-2",
       quick={"D": 100, "k": 5, "p_o": [0.5, 0.1], "neurons": 40},
       full={"D": 100, "k": 5, "p_o": [0.5, 0.25, 0.1, 0.05], "neurons": 300},
       # no simulation here: the exact population correlations (held against the torch step 1 by
       # emergence.step1_correlations) qualify the paper's Table 1 One Step cosine
       kind="finding",
       nulls={"paper_one_step": "the paper's Table 1 One Step cosine 0.848 as the step-1 feature direction "
                                "(1 - cos = 0.152)"})
def step1_cosine(size, device, outdir):
    rows, med, worst_all = [], {}, 0.0
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    for i, p_o in enumerate(size["p_o"]):
        model = _model(size, p_o)
        m = size["neurons"]
        params = _init(model, m)
        T = correlations.neuron_correlations(model, params.Q[:m], params.b[:m], _sched(model)[0].s).T
        one_minus = 1.0 - np.abs(network.feature_cosine(model, T))
        med[p_o], worst_all = float(np.median(one_minus)), max(worst_all, float(one_minus.max()))
        rows.append({"p_o": p_o, "neurons": m, "median_1_minus_cos": med[p_o],
                     "max_1_minus_cos": float(one_minus.max()), "paper_metric_1_minus_max_cos": float(one_minus.min()),
                     "median_TB_over_TA": float(np.median(np.linalg.norm(T[:, model.k:], axis=1)
                                                          / np.linalg.norm(T[:, :model.k], axis=1)))})
        ax.semilogy(np.arange(m), np.sort(one_minus), "o-", ms=3, color=f"C{i}", label=f"p_o = {p_o}: exact T")
    ax.axhline(_TOL_COS1, color="k", ls=":", label=f"tolerance {_TOL_COS1:g} (median)")
    ax.axhline(1e-2, color="k", ls="-.", lw=0.8, label="every neuron: 1e-2")
    ax.axhline(1 - 0.848, color="C3", ls="--", label="paper's One Step: 1 - 0.848")
    measured = med[0.5] if 0.5 in med else max(med.values())
    ax.set(xlabel="neuron (sorted)", ylabel="1 - |cos(w_i^(1), sum_A M_j)|",
           title=f"C2 step-1 population cosine: median 1 - cos = {measured:.1e} at p_o = 1/2")
    _legend(ax)
    path = save_figure(fig, outdir / "emergence.step1_cosine.png", title=claim_title(
        REGISTRY["emergence.step1_cosine"], measured, what="median 1 - cos"))
    checks = {"every neuron at every p_o: 1 - cos <= 1e-2 (the paper's One Step: 0.152)": worst_all <= 1e-2}
    return ClaimResult(measured=measured, checks=checks, figure=str(path), table=rows,
                       nulls={"paper_one_step": 1.0 - 0.848},
                       message="median 1 - cos: " + ", ".join(f"p_o={p}: {g:.1e}" for p, g in med.items())
                               + f"; worst neuron {worst_all:.1e}; the paper's One Step 1 - cos = 0.152")


# ---- C3: finite-sample step-2 cosine --------------------------------------------------------------------------------

_TOL_C3 = 0.25


@claim(id="emergence.step2_cosine", model="emergence",
       title="Step 2 aligns every neuron with the empirical E[y phi]: 1 - max cos = tr(P_perp Sigma)/(2 "
             "n ||E y phi||^2)"
             " (derived; the paper reports 0.997/0.997/0.994 with unreported hyperparameters)",
       source="[Shi22, Section 5.1 (feature improvement), Lemma 20, Tables 1 and 5 (cos)]",
       metric="max over n of |mean_seeds(1 - max_i |cos(w_i^(2), sum_A M_j)|) / (1 - cos_pred(n)) - 1|, "
              "torch steps 1-2 "
              "of the theory schedule on n i.i.d. samples",
       tolerance=_TOL_C3,
       tolerance_origin="within 25 % (10 % measured): 1 - cos is a ~chi^2_{D-1} variable, relative sd "
                        "sqrt(2/(D-1)) = 0.14 per seed, 0.06 for 5 seeds; the formula without the 1/2 is 100 % off",
       quick={"D": 100, "k": 5, "neurons": 6, "n_train": [10_000, 25_000, 50_000], "seeds": 5},
       full={"D": 100, "k": 5, "neurons": 20, "n_train": [10_000, 25_000, 50_000, 100_000], "seeds": 10},
       kind="training",
       nulls={"no_half": "the first-order delta method without its 1/2: 1 - cos = tr(P_perp Sigma)/(n ||E y phi||^2)",
              "paper_cos": "the paper's Table 1 Two Step cosine 0.997 at every n (1 - cos = 0.003)"})
def step2_cosine(size, device, outdir):
    model = _model(size)
    params = _init(model, size["neurons"])
    rows = []
    for n in size["n_train"]:
        sim = _train(model, params, n, size["seeds"], 2, balanced=False)
        obs = np.array([1.0 - np.abs(network.feature_cosine(model, Q)).max() for Q in sim["Q_2"]])
        obs1 = np.array([1.0 - np.abs(network.feature_cosine(model, Q)).max() for Q in sim["Q_1"]])
        pred = 1.0 - bounds.finite_sample_step2_cos(model, n)
        rows.append({"n_train": n, "seeds": size["seeds"], "pred_1_minus_cos": pred,
                     "obs_1_minus_cos": float(obs.mean()),
                     "obs_se": float(obs.std(ddof=1) / math.sqrt(len(obs))), "obs_step1": float(obs1.mean()),
                     "rel_err": abs(obs.mean() / pred - 1.0), "g1_max": float(np.max(sim["g1_max"])),
                     "rel_err_no_half": abs(obs.mean() / (2 * pred) - 1.0),
                     "rel_err_paper": abs(obs.mean() / (1 - 0.997) - 1.0)})
    worst = max(r["rel_err"] for r in rows)
    nulls = {"no_half": max(r["rel_err_no_half"] for r in rows), "paper_cos": max(r["rel_err_paper"] for r in rows)}
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    ns = np.array(size["n_train"], float)
    ax.loglog(ns, [r["pred_1_minus_cos"] for r in rows], "-", color="C0", label="theory tr(P Sigma)/(2 n |mu|^2)")
    ax.errorbar(ns, [r["obs_1_minus_cos"] for r in rows], yerr=[2 * r["obs_se"] for r in rows], fmt="o", color="C0",
                capsize=3, label="torch step 2, +- 2 SE")
    ax.loglog(ns, [r["obs_step1"] for r in rows], "s--", ms=3, color="C1", label="torch step 1")
    ax.axhline(1 - 0.997, color="C3", ls=":", label="paper Table 1: 1 - 0.997")
    ax.set(xlabel="n", ylabel="1 - max_i |cos(w_i, sum_A M_j)|", title=f"C3 step-2 cosine: max rel. error {worst:.1%}")
    sample_axis(ax, ns)
    _legend(ax)
    path = save_figure(fig, outdir / "emergence.step2_cosine.png", title=claim_title(
        REGISTRY["emergence.step2_cosine"], worst, what="max rel. error"))
    checks = {"hinge indicator certified on the sample: max |g^(1)| < 1": all(r["g1_max"] < 1 for r in rows)}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls=nulls,
                       message="1 - cos observed/predicted: " + ", ".join(
                           f"n_train={r['n_train']}: {r['obs_1_minus_cos']:.2e}/{r['pred_1_minus_cos']:.2e}"
                           for r in rows) + f"; nulls: no 1/2 {nulls['no_half']:.2f}, paper 0.997 "
                                            f"{nulls['paper_cos']:.2f}")


# ---- C4: step-2 bias shift ------------------------------------------------------------------------------------------

_TOL_C4 = 1e-3


def _empirical_model(model, phi):
    """The model whose A-block law is the empirical one of the sample ``phi`` (rows counted), background unchanged."""
    mom, k = model.moments(), model.k
    cfg = np.rint(phi[:, :k] * mom.sigt + mom.mean_A).astype(np.int64)
    rows = cfg @ (1 << np.arange(k - 1, -1, -1))                       # itertools.product order
    full = np.array([[(r >> (k - 1 - j)) & 1 for j in range(k)] for r in range(2 ** k)], float)
    lookup = {tuple(c): i for i, c in enumerate(model.A_support.astype(int))}
    labels = np.array([model.labels[lookup[tuple(c.astype(int))]] for c in full])
    freq = np.bincount(rows, minlength=2 ** k) / len(rows)
    return data.PatternModel(model.D, k, full, freq, labels, model.p_bg)


@claim(id="emergence.step2_bias_shift", model="emergence",
       title="Step 2 shifts each bias by a^(1) h(b^(1)) Ê[y] (finite-sample class imbalance; derived), "
             "and by O(eta^(1)) "
             "only with exactly balanced classes",
       source="[Shi22, App. B.3 (the bias gradient, with xi inside the indicator: docs/errata.md), Lemma 20, Lemma 23 "
              "(b^(2) - b^(0) = O(1/m))]",
       metric="1 - corr(b^(2) - b^(1) observed, predicted) over neurons and seeds, i.i.d. samples; the "
              "prediction is the "
              "eta^(1) -> 0 two-step limit on the sample's empirical A-block law",
       tolerance=_TOL_C4,
       tolerance_origin="corr > 0.999 (1.0000 measured); the O(eta^(1)) remainder is ~1e-7 relative; "
                        "the unsmoothed window of the paper's bias gradient (docs/errata.md) gives corr ~ 0.8",
       quick={"D": 100, "k": 5, "neurons": 20, "n_train": 10_000, "seeds": 4},
       full={"D": 100, "k": 5, "neurons": 100, "n_train": 50_000, "seeds": 10},
       kind="training",
       nulls={"unsmoothed": "the paper's bias gradient with the noise xi outside the indicator (erratum 1): "
                            "h(b) = 1[0 < b < 1] instead of win_s(b)"})
def step2_bias_shift(size, device, outdir):
    model = _model(size)
    params = _init(model, size["neurons"])
    s2 = _sched(model)[1].s
    sim = _train(model, params, size["n_train"], size["seeds"], 2, balanced=False)
    phi, _ = _sim().sample(model, size["seeds"], size["n_train"], 0, balanced=False, stream=0)
    obs, pred, pred0, Ey = [], [], [], []
    for s in range(size["seeds"]):
        emp = _empirical_model(model, phi[s].numpy())
        p1 = network.TwoLayerParams(0.0 * sim["Q_1"][s], sim["b_1"][s], sim["a_1"][s])
        obs.append(sim["b_2"][s] - sim["b_1"][s])
        pred.append(steps.two_step_limit(emp, p1, s2).b - sim["b_1"][s])
        pred0.append(p1.a * steps.window(p1.b, 1e-9) * emp.moments().Ey)       # the unsmoothed window 1[0 < b < 1]
        Ey.append(emp.moments().Ey)
    obs, pred, pred0 = np.concatenate(obs), np.concatenate(pred), np.concatenate(pred0)
    corr = float(np.corrcoef(obs, pred)[0, 1])
    null = 1.0 - float(np.corrcoef(obs, pred0)[0, 1])
    ratio = float(np.linalg.norm(obs) / np.linalg.norm(pred))
    bal = _train(model, params, size["n_train"], size["seeds"], 2, balanced=True)
    bal_shift = float(np.abs(bal["b_2"] - bal["b_0"]).max())
    rows = [{"n": size["n_train"], "seeds": size["seeds"], "corr": corr, "norm_ratio": ratio,
             "max_abs_Ey_hat": float(np.max(np.abs(Ey))), "max_shift": float(np.abs(obs).max()),
             "balanced_max_b2_minus_b0": bal_shift}]
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    for s in range(size["seeds"]):
        sl = slice(s * params.n, (s + 1) * params.n)
        ax.plot(pred[sl], obs[sl], "o", ms=3, color=f"C{s}", label=f"seed {s}: Ê[y] = {Ey[s]:+.4f}")
    lo, hi = ax.get_xlim()
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="theory = simulation")
    ax.set(xlabel="a^(1) h(b^(1)) Ê[y] (theory)", ylabel="b^(2) - b^(1) (torch)",
           title=f"C4 step-2 bias shift: 1 - corr = {1 - corr:.1e}, balanced |b2 - b0| <= {bal_shift:.1e}")
    _legend(ax)
    path = save_figure(fig, outdir / "emergence.step2_bias_shift.png", title=claim_title(
        REGISTRY["emergence.step2_bias_shift"], 1.0 - corr, what="1 - corr"))
    checks = {"norm ratio within 1 %": abs(ratio - 1) <= 0.01, "balanced classes: max |b^(2) - b^(0)| <= 1e-6":
              bal_shift <= 1e-6}
    return ClaimResult(measured=1.0 - corr, checks=checks, figure=str(path), table=rows, nulls={"unsmoothed": null},
                       message=f"corr {corr:.6f}, norm ratio {ratio:.4f}; balanced max |b2 - b0| = {bal_shift:.1e}; "
                               f"unsmoothed window: 1 - corr = {null:.2e}")


# ---- C5: two-step features separable, one-step features only linear in the count ------------------------------------

_TOL_C5 = 0.03


def _lp_accuracy(F, y, Ft, yt):
    """Best second layer (with an intercept) on frozen features: the hinge LP on the training sample, on the
    standardised features (same span, well conditioned); returns the training hinge and the test accuracy."""
    mu, sd = F.mean(0), F.std(0)
    keep = sd > 0
    std = lambda G: np.hstack([np.ones((len(G), 1)), (G[:, keep] - mu[keep]) / sd[keep]])
    a, loss = classifier.optimal_second_layer(std(F), np.full(len(y), 1.0 / len(y)), y)
    return loss, float(np.mean(yt * (std(Ft) @ a) > 0))


@claim(id="emergence.two_step_separability", model="emergence",
       title="Two steps make the parity linearly separable (LP loss 0); one step only carries the count linearly "
             "(best classifier = the count-threshold ceiling, 84.4 % at k = 5)",
       source="[Shi22, Section 5.1 (one step is not enough, two steps are), Lemma 23, Table 1 (One Step 52.2 %, Two "
              "Step 100 %)]",
       metric="max over {one step, two step} of |test accuracy of the best classifier on the torch-trained frozen "
              "features - theory| (theory: two step = LP on the eta^(1) -> 0 two-step features on the counts; one "
              "step = the count-threshold ceiling)",
       tolerance=_TOL_C5,
       tolerance_origin="+- 3 %; test-sampling sd 0.4 % at 1e4 test points; a theory in "
                        "which step 2 does "
                        "not improve the features predicts 50 % for two steps",
       quick={"D": 100, "k": 5, "neurons": 25, "n_train": 50_000, "n_lp": 4000, "n_test": 10_000, "seeds": 2},
       full={"D": 100, "k": 5, "neurons": 150, "n_train": 50_000, "n_lp": 10_000, "n_test": 50_000, "seeds": 5},
       kind="training",
       nulls={"no_improvement": "step 2 does not improve the features (q^(2) = 0): two steps no better than "
                                "a constant predictor",
              "paper_one_step": "the paper's Table 1: One Step at 52.2 % test accuracy (chance)"})
def two_step_separability(size, device, outdir):
    model = _model(size)
    params = _init(model, size["neurons"])
    pi, yc = model.count_law()
    lim = steps.two_step_limit(model, params, _sched(model)[1].s)
    F2 = steps.two_step_features(model, lim)
    a2, lp2 = classifier.optimal_second_layer(F2, pi, yc)
    theory = {"two step": 1.0 - classifier.hinge_and_error(F2, pi, yc, a2)[1],
              "one step": bounds.count_threshold_ceiling(model)}
    F0 = steps.two_step_features(model, network.TwoLayerParams(0.0 * lim.Q, lim.b, lim.a))     # q^(2) = 0
    a0, _ = classifier.optimal_second_layer(F0, pi, yc)
    null_theory = {"no_improvement": theory | {"two step": 1.0 - classifier.hinge_and_error(F0, pi, yc, a0)[1]},
                   "paper_one_step": theory | {"one step": 0.522}}
    sim = _train(model, params, size["n_train"], size["seeds"], 2)
    X, y = (v.numpy() for v in _sim().sample(model, size["seeds"], size["n_lp"], 0, balanced=True, stream=0))
    Xt, yt = (v.numpy() for v in _sim().sample(model, size["seeds"], size["n_test"], 0, stream=1))
    acc = {"one step": [], "two step": []}
    for s in range(size["seeds"]):
        for t, name in ((1, "one step"), (2, "two step")):
            Q, b = sim[f"Q_{t}"][s], sim[f"b_{t}"][s]
            acc[name].append(_lp_accuracy(activation.trunc_relu(X[s] @ Q.T + b), y[s],
                                          activation.trunc_relu(Xt[s] @ Q.T + b), yt[s])[1])
    rows = [{"method": k_, "theory_acc": theory[k_], "sim_acc_mean": float(np.mean(v)), "sim_acc_min": float(np.min(v)),
             "gap": abs(float(np.mean(v)) - theory[k_])} for k_, v in acc.items()]
    worst = max(r["gap"] for r in rows)
    nulls = {name: max(abs(float(np.mean(acc[k_])) - th[k_]) for k_ in acc) for name, th in null_theory.items()}
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    x = np.arange(2)
    ax.plot(x, [r["theory_acc"] for r in rows], "_", ms=30, mew=2, color="k", label="theory")
    for s in range(size["seeds"]):
        ax.plot(x + 0.05 * (s - size["seeds"] / 2), [acc[r["method"]][s] for r in rows], "o", color=f"C{s}",
                label=f"torch steps, LP on top: seed {s}")
    ax.plot(x, [0.522, 1.0], "x", color="C3", ms=9, label="paper Table 1 (test)")
    ax.axhline(0.5, color="0.6", ls=":", label="chance")
    ax.set_xticks(x, [r["method"] for r in rows])
    ax.set(ylabel="test accuracy", ylim=(0.4, 1.05), title=f"C5 frozen features + best classifier: max gap {worst:.3f}")
    _legend(ax)
    path = save_figure(fig, outdir / "emergence.two_step_separability.png", title=claim_title(
        REGISTRY["emergence.two_step_separability"], worst, what="max gap"))
    checks = {"two-step features separable on the population (LP loss <= 1e-9)": lp2 <= 1e-9,
              "two step: torch test accuracy >= 99 % on every seed": min(acc["two step"]) >= 0.99}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls=nulls,
                       details={"lp_loss_two_step": lp2},
                       message="test accuracy sim/theory: " + ", ".join(
                           f"{r['method']}: {r['sim_acc_mean']:.4f}/{r['theory_acc']:.4f}" for r in rows))


# ---- C6: reduced population GD against full-batch GD ----------------------------------------------------------------

_TOL_C6 = 5e-3


@claim(id="emergence.reduced_gd", model="emergence",
       title="Stage 3 made exact: population GD from the two-step features stays on the class-relevant line and equals "
             "full-batch GD on n samples (derived invariant-subspace reduction)",
       source="[Shi22, Lemmas 24-25, Theorem 26 (stage 3), Section 5.1]",
       metric="max over recorded t <= T of |mean_seeds test hinge loss of full-batch GD (torch, n "
              "samples) - population "
              "hinge loss of the reduced GD|, both started at the eta^(1) -> 0 two-step limit",
       tolerance=_TOL_C6,
       tolerance_origin="<= 5e-3 (<= 1.5e-3 measured): finite-n fluctuations O(n^-1/2) averaged over seeds, "
                        "test noise ~1e-3; a step size 20 % off moves the curve by ~0.02",
       quick={"D": 20, "k": 5, "neurons": 10, "steps": 200, "lam": 1e-3, "n_train": 20_000, "n_test": 20_000,
              "seeds": 2},
       full={"D": 100, "k": 5, "neurons": 100, "steps": 300, "lam": 1e-3, "n_train": 20_000, "n_test": 100_000,
             "seeds": 5},
       kind="training",
       nulls={"no_learning": "stage 3 does not move the loss from its value at the two-step features, L(t) = L(0)"})
def reduced_gd(size, device, outdir):
    model = _model(size)
    m, k, T = size["neurons"], size["k"], size["steps"]
    lim = steps.two_step_limit(model, _init(model, m), _sched(model)[1].s)
    eta = k ** 2 / (T * m ** (1.0 / 3.0))                                # Thm 26's stage-3 step size
    alpha = lim.Q[:, :k].mean(1) * math.sqrt(k)
    # the sim mirrors its first half with a -> -a: give it every limit neuron twice (a = 0 up to rounding)
    twice = network.TwoLayerParams(np.vstack([lim.Q, lim.Q]), np.r_[lim.b, lim.b], np.r_[lim.a, lim.a])
    pop = classifier.reduced_population_gd(model, np.r_[alpha, alpha], np.r_[lim.b, lim.b], np.r_[lim.a, -lim.a],
                                           eta, size["lam"], T)
    step = schedule.Step(eta, size["lam"], size["lam"], 0.0)
    sim = _train(model, twice, size["n_train"], size["seeds"], T, sched=[step] * 3, batch=size["n_train"],
                 n_test=size["n_test"], eval_samples=size["n_train"], n_points=21, device=device)
    L_sim = sim["test_loss"].mean(0)
    L_pop = pop.loss[sim.t]
    gap = np.abs(L_sim - L_pop)
    worst = float(gap.max())
    null = float(np.abs(L_sim - pop.loss[0]).max())
    rows = [{"t": int(t), "pop_loss": float(lp), "sim_test_loss": float(ls), "sim_train_loss": float(lt),
             "pop_error": float(pop.error[t]), "sim_test_error": float(1 - acc)}
            for t, lp, ls, lt, acc in zip(sim.t, L_pop, L_sim, sim["train_loss"].mean(0), sim["test_acc"].mean(0))]
    fig, (ax0, ax1) = subplots(2, panel_size=(5.0, 4.0))
    ax0.plot(pop.t, pop.loss, "-", color="C0", label="reduced population GD (exact)")
    ax0.plot(sim.t, L_sim, "o", ms=3, color="C0", label=f"torch full-batch GD, test (n_train = {size['n_train']})")
    ax0.plot(sim.t, sim["train_loss"].mean(0), "x", ms=3, color="C0", label="torch, train")
    ax0.plot(pop.t, pop.error, "--", color="C1", label="reduced GD 0-1 error")
    ax0.plot(sim.t, 1 - sim["test_acc"].mean(0), "s", ms=3, color="C1", label="torch 0-1 error (test)")
    ax0.set(xlabel="stage-3 step", ylabel="hinge loss / error", title=f"D = {size['D']}, k = {k}, 2m = {2 * m}")
    ax1.semilogy(sim.t, np.maximum(gap, 1e-6), "o-", ms=3, color="C0", label="|L_sim - L_pop|")
    ax1.axhline(_TOL_C6, color="k", ls=":", label=f"tolerance {_TOL_C6:g}")
    ax1.set(xlabel="stage-3 step", ylabel="gap", title=f"max gap {worst:.1e}")
    _legend(ax0, ax1)
    path = save_figure(fig, outdir / "emergence.reduced_gd.png", title=claim_title(
        REGISTRY["emergence.reduced_gd"], worst, what="max loss gap"))
    checks = {"the loss moves by > 0.05 over the run (a non-trivial curve)": float(pop.loss[0] - pop.loss[-1]) > 0.05}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls={"no_learning": null},
                       message=f"max |L_sim - L_pop| = {worst:.1e} over t <= {T}; loss {pop.loss[0]:.3f} -> "
                               f"{pop.loss[-1]:.4f} (sim {L_sim[-1]:.4f}); L(t) = L(0): {null:.3f}")


# ---- C7: Gaussian-mixture parity, Stein's lemma ----------------------------------------------------------------------

_Z_C7 = 6.0


def _autograd_correlations(model, W, b, s, n, seed, chunk=200_000):
    """Empirical ``E[y x win_s(<w, x> + b)]`` by torch autograd of the hinge loss of a network with tiny second layer
    (``y g < 1`` everywhere, so ``-dL/dw_i / a_i`` is the correlation), and its per-coordinate standard error."""
    import torch
    Wt = torch.tensor(W, dtype=torch.float64, requires_grad=True)
    bt = torch.tensor(b, dtype=torch.float64)
    a = torch.full((W.shape[0],), 1e-6, dtype=torch.float64)
    grad, sq = torch.zeros_like(Wt), torch.zeros_like(Wt)
    rng = np.random.default_rng(seed)
    for start in range(0, n, chunk):
        X, y = (torch.as_tensor(v) for v in model.sample(min(chunk, n - start), rng))
        Z = X @ Wt.T + bt
        loss = torch.relu(1.0 - y * (_sim().smooth_trunc_relu(Z, s) @ a)).sum() / n
        grad += torch.autograd.grad(loss, Wt)[0]
        with torch.no_grad():
            sq += _sim().window(Z, s).T ** 2 @ X ** 2
    mean = (-grad / a[:, None]).numpy()
    return mean, np.sqrt(np.maximum(sq.numpy() / n - mean ** 2, 0.0) / n)


def _stein_term(model, W, b, s):
    """Stein's input-noise term of the Gaussian-mixture correlation, tau^2 w E[y (p(m) - p(1 - m))] / S per neuron
    (p the standard normal density, m the pre-activation at the cluster centre, S its total noise sd)."""
    W = np.atleast_2d(W)
    E, yE = model.centers()
    mv = E @ (model.M.T @ W.T) + b
    S = np.sqrt(model.tau2 * (W ** 2).sum(1) + s ** 2)
    pdf = lambda u: np.exp(-0.5 * u ** 2) / math.sqrt(2 * math.pi)
    dens = (yE[:, None] * (pdf(mv / S) - pdf((1 - mv) / S)) / S).mean(0)
    return model.tau2 * W * dens[:, None]


@claim(id="emergence.gmm_stein", model="emergence",
       title="Gaussian-mixture parity (E7): the exact population correlation E[y x win] by Stein's lemma, including "
             "the input-noise term tau^2 w E[y (p(m) - p(1 - m))] (derived; gamma = 0, so no first-order signal)",
       source="[Shi22, App. E.3.2, eq. (290), Table 6]",
       metric="max over neurons and the d coordinates of |z|, z = (G-hat - G)/SE, G-hat the torch autograd gradient "
              "-dL/dw / a of the hinge loss on n samples, G = emergence.gmm_correlations; neurons w = "
              "align M eps/sqrt(k) "
              "+ N(0, w_scale^2 I) near random cluster centres",
       tolerance=_Z_C7,
       tolerance_origin="Gaussian z (n >= 1e6 samples, the SE from the same sample): P(|z| > 6) = 2.0e-9, "
                        "Bonferroni over neurons x d (150 z quick, 2700 full): 3e-7 and 5.3e-6 (4.5 before: "
                        "1.2e-3 and 1.9 %). Check: sum z^2 of a setting within N +- 6 sqrt(2N) (N = "
                        "neurons x d; chi^2_N, approximately: the coordinates are correlated through the "
                        "dictionary): 2.4e-7 at N = 150. Recorded max |z| 2.46 (quick), 2.4x below. False-failure "
                        "bound 5.4e-7 quick, 5.4e-6 full. Dropping the Stein term is ~60-120 SE off",
       quick={"settings": [[25, 4, 0.7]], "neurons": 6, "n": 1_000_000, "align": 1.0, "w_scale": 0.3, "b_scale": 0.3,
              "s": 0.1},
       full={"settings": [[25, 4, 0.7], [100, 4, 1.0], [100, 5, 1.0]], "neurons": 12, "n": 4_000_000,
             "align": 1.0, "w_scale": 0.3, "b_scale": 0.3, "s": 0.1},
       kind="independent",
       nulls={"no_stein": "the Gaussian noise only smooths the window: the correlation without Stein's input-noise "
                          "term tau^2 w E[y (p(m) - p(1 - m))]"})
def gmm_stein(size, device, outdir):
    rows, worst, chi_worst, null_worst = [], 0.0, 0.0, 0.0
    fig, (ax0, ax1) = subplots(2, panel_size=(5.0, 4.0))
    for i, (d, k, sr) in enumerate(size["settings"]):
        model = data.GaussianParityMixture(d, k, sr, data.random_dictionary(d, k, seed=i))
        rng = np.random.default_rng([i, 1])
        E, _ = model.centers()                      # neurons near cluster centres M eps (as trained ones, Fig. 16)
        W = (size["align"] * E[rng.integers(0, len(E), size["neurons"])] @ model.M.T / math.sqrt(k)
             + rng.standard_normal((size["neurons"], d)) * size["w_scale"])
        b = rng.standard_normal(size["neurons"]) * size["b_scale"]
        G = correlations.gmm_correlations(model, W, b, size["s"]).T
        Ghat, se = _autograd_correlations(model, W, b, size["s"], size["n"], seed=[i, 2])
        z = (Ghat - G) / se
        null_worst = max(null_worst, float(np.abs((Ghat - (G - _stein_term(model, W, b, size["s"]))) / se).max()))
        chi = (np.sum(z ** 2) - z.size) / math.sqrt(2 * z.size)
        worst, chi_worst = max(worst, float(np.abs(z).max())), max(chi_worst, abs(float(chi)))
        rows.append({"d": d, "k": k, "sigma_r": sr, "neurons": size["neurons"], "n": size["n"],
                     "max_abs_z": float(np.abs(z).max()), "chi_z": float(chi), "max_abs_G": float(np.abs(G).max()),
                     "median_se": float(np.median(se))})
        label = f"d={d}, k={k}, sigma_r={sr}"
        ax0.plot(G.ravel(), Ghat.ravel(), "o", ms=2, color=f"C{i}", label=label)
        ax1.hist(z.ravel(), bins=30, density=True, histtype="step", color=f"C{i}", label=label)
    _theory_vs_sim_panels(ax0, ax1, "E[y x win], Stein (exact)", "torch autograd, n samples", "correlations",
                          "z", worst)
    path = save_figure(fig, outdir / "emergence.gmm_stein.png", title=claim_title(
        REGISTRY["emergence.gmm_stein"], worst, what="max |z|"))
    checks = {f"sum z^2 within N +- {_CHI_Z:g} sqrt(2N) per setting": chi_worst <= _CHI_Z}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls={"no_stein": null_worst},
                       message=f"max |z| {worst:.2f}, max chi z {chi_worst:.2f} over " + ", ".join(
                           f"(d={r['d']}, k={r['k']})" for r in rows) + f"; without the Stein term {null_worst:.1f}")


# ---- C8: fixed-feature lower bound -----------------------------------------------------------------------------------

_TOL_C8 = 0.5


@claim(id="emergence.fixed_feature_bound", model="emergence",
       title="Thm 2 (Parseval form, derived): a predictor on N data-independent features with ||w|| <= B "
             "has hinge loss "
             ">= 1 - B sqrt(t N / C(D, k)) on the uniform parity D^(0) and >= p_o times that on D^mix "
             "(prob. >= 1 - 1/t)",
       source="[Shi22, Theorem 2, App. C (Theorem 28, Theorem 29 from Daniely-Malach)]",
       metric="largest failure rate of 'hinge loss >= bound' over (i) random-feature draws (seeds) at D = 100 on D^(0) "
              "and on D^mix (second layer = the l2-regularised hinge fit on n samples, B = its norm, test loss on "
              "fresh samples) and (ii) every k-set A of a small cube (D = 10, k = 3) and feature draws, where the "
              "features can correlate with the parity: the best norm-B predictor a = B c_A/||c_A|| (c_A = E[f_A Psi] "
              "by exact enumeration of the cube), B set so that the bound is 1 - 0.5; t = 20; random features = "
              "the paper's truncated-ReLU init",
       tolerance=_TOL_C8,
       tolerance_origin="Thm 2 holds with probability >= 1 - 1/t over the features: Markov's inequality over A "
                        "(random features are exchangeable, so a random draw is a random A) lets each draw fail with "
                        "probability up to 1/t = 5 %, so at that worst case the failures of S independent draws are "
                        "Binomial(S, 1/20) and a rate above 1/2 has probability 1.5e-5 at 8 draws (quick) and 5e-10 at "
                        "20 (full), for D^(0) and for D^mix: false-failure bound 3.1e-5 quick, 1.1e-9 full (the "
                        "former 1/t = 5 % failed a correct theory whenever one draw of 8 did: up to 67 %). On the "
                        "small cube the Markov step is exact for every fixed feature map (sum_A ||c_A||^2 <= N): its "
                        "rate is <= 1/t. 0 recorded. Dropping the B term (bound p_o) fails every A of the small cube, "
                        "dropping the p_o factor every draw on D^mix: rate 1",
       quick={"D": 100, "k": 5, "features": 50, "n_train": 3000, "n_test": 4000, "lam": 1e-3, "t": 20.0, "seeds": 8,
              "cube": [10, 3, 40, 8, 0.5]},
       full={"D": 100, "k": 5, "features": 200, "n_train": 8000, "n_test": 20_000, "lam": 1e-3, "t": 20.0, "seeds": 20,
             "cube": [12, 3, 60, 20, 0.5]},
       kind="training",
       nulls={"no_B_term": "fixed features cannot beat the trivial predictor: hinge >= p_o (Thm 2 with B = 0)",
              "no_p_o": "the uniform-parity bound 1 - B sqrt(tN/C(D, k)) applied to D^mix (no mixture weight p_o)"})
def fixed_feature_bound(size, device, outdir):
    model = _model(size)
    p_o, D, k, N = 0.5, size["D"], size["k"], size["features"]
    flat = data.no_structure(model)                     # D^(0): the uniform k-parity (same normalisation at p_o = 1/2)
    rows = []
    for seed in range(size["seeds"]):
        init = network.symmetric_init(model, N, seed)
        feat = lambda X: activation.trunc_relu(X @ init.Q[:N].T + init.b[:N])   # Psi in [0, 1]^N
        X, y, _ = model.sample(size["n_train"], [seed, 0])
        a, _ = classifier.optimal_second_layer(feat(X), np.full(len(y), 1.0 / len(y)), y, reg=("l2", size["lam"]))
        B = float(np.linalg.norm(a))
        loss = {}
        for name, law in (("D0", flat), ("mix", model)):
            Xt, yt, _ = law.sample(size["n_test"], [seed, 1])
            loss[name] = float(np.mean(np.maximum(0.0, 1.0 - yt * (feat(Xt) @ a))))
        bound0 = bounds.fixed_feature_lower_bound(1.0, N, B, k, D, t=size["t"])
        bound_mix = bounds.fixed_feature_lower_bound(p_o, N, B, k, D, t=size["t"])
        rows.append({"seed": seed, "B": B, "loss_D0": loss["D0"], "bound_D0": bound0, "loss_mix": loss["mix"],
                     "bound_mix": bound_mix, "paper_bound_mix": bounds.fixed_feature_lower_bound(
                         p_o, N, B, k, D, form="paper_sqrt2N_B") if k % 2 and 3 < k <= D / 16 else float("nan")})
    fail0 = float(np.mean([r["loss_D0"] < r["bound_D0"] for r in rows]))
    fail_mix = float(np.mean([r["loss_mix"] < r["bound_mix"] for r in rows]))
    cube = _cube_losses(model, *size["cube"], t=size["t"])
    fail_cube = float(np.mean(cube["loss"] < cube["bound"]))
    worst = max(fail0, fail_mix, fail_cube)
    nulls = {"no_B_term": max(np.mean([r["loss_D0"] < 1.0 for r in rows]),
                              np.mean([r["loss_mix"] < p_o for r in rows]), np.mean(cube["loss"] < 1.0)),
             "no_p_o": max(fail0, fail_cube, np.mean([r["loss_mix"] < r["bound_D0"] for r in rows]))}
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    Bs = np.array([r["B"] for r in rows])
    ax.plot(Bs, [r["loss_D0"] for r in rows], "o", color="C0", label="D^(0): test hinge (trained RF)")
    ax.plot(Bs, [r["bound_D0"] for r in rows], "_", ms=12, color="C0", label="D^(0): bound 1 - B sqrt(tN/C(D,k))")
    ax.plot(Bs, [r["loss_mix"] for r in rows], "s", color="C1", label="D^mix: test hinge")
    ax.plot(Bs, [r["bound_mix"] for r in rows], "_", ms=12, color="C1", label="D^mix: bound p_o (1 - ...)")
    ax.set(xlabel="B = ||a|| of the trained second layer", ylabel="hinge loss",
           title=f"C8 fixed features (N = {N}): failure rate {worst:.2f} (tolerance {_TOL_C8:g})")
    _legend(ax)
    path = save_figure(fig, outdir / "emergence.fixed_feature_bound.png", title=claim_title(
        REGISTRY["emergence.fixed_feature_bound"], worst, what="failure rate"))
    checks = {"the bound is not vacuous (> 0) on every draw": all(r["bound_mix"] > 0 for r in rows)}
    gain = 1.0 - cube["loss"]
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls=nulls,
                       details={"cube_fail_rate": fail_cube, "cube_B": cube["B"], "cube_bound": float(cube["bound"]),
                                "cube_1_minus_loss_median": float(np.median(gain)),
                                "cube_1_minus_loss_max": float(gain.max()),
                                "cube_max_ratio_cA2_over_tN_C": float(cube["ratio"].max())},
                       message=f"failure rate D^(0) {fail0:.2f}, D^mix {fail_mix:.2f}, small cube {fail_cube:.2f} "
                               f"(1 - loss there: median {np.median(gain):.1e}, max {gain.max():.1e} against the "
                               f"B term {1 - cube['bound']:.2f}); B median {np.median(Bs):.1f}, "
                               f"bound_mix median {np.median([r['bound_mix'] for r in rows]):.3f}, loss_mix median "
                               f"{np.median([r['loss_mix'] for r in rows]):.3f}")


def _cube_losses(model, D, k, N, draws, frac, *, t):
    """Exact hinge loss on the uniform k-parity over every k-set A of {+-1}^D of the best norm-B predictor on N random
    truncated-ReLU features (the paper's init for the parity mixture at D, k): ``a = B c_A / ||c_A||``, ``c_A =
    E[f_A Psi]`` (the maximiser of ``E[y h]`` over ``||a|| <= B``), with ``B = frac / sqrt(tN/C(D, k))`` so that the
    Parseval bound is ``1 - frac``. Returns the losses (draws x C(D, k)), the bound, B and ||c_A||^2 C/(tN)."""
    import itertools
    Z = np.array(list(itertools.product([-1.0, 1.0], repeat=D)))
    C = math.comb(D, k)
    B = frac / math.sqrt(t * N / C)
    losses, ratios = [], []
    for seed in range(draws):
        init = network.symmetric_init(data.parity_mixture(D, k, 0.5), N, seed)
        Psi = activation.trunc_relu(Z @ init.Q[:N].T + init.b[:N])
        subsets, c = bounds.parity_correlations(Psi, k)
        norm = np.linalg.norm(c, axis=1)
        f = Psi @ (B * c / np.maximum(norm, 1e-300)[:, None]).T                           # (2^D, C)
        y = np.stack([np.prod(Z[:, A], axis=1) for A in subsets], axis=1)
        losses.append(np.mean(np.maximum(0.0, 1.0 - y * f), axis=0))
        ratios.append(norm ** 2 * C / (t * N))
    return {"loss": np.array(losses), "bound": bounds.fixed_feature_lower_bound(1.0, N, B, k, D, t=t), "B": B,
            "ratio": np.array(ratios)}


# ---- C9: no input structure, no signal ------------------------------------------------------------------------------


@claim(id="emergence.no_structure_signal", model="emergence",
       title="Emergence needs input structure: on the uniform cube (A1') the population step-1 correlations vanish "
             "(~1e-7) and the empirical gradient is pure sampling noise, while with structure it is significant",
       source="[Shi22, Section 3 (assumption (A1')), Theorem 4 (SQ lower bound; App. D), Table 1 (Network w/o "
              "structure 52 % test)]",
       metric="max over neurons of |sum_j z_j^2 - D| / sqrt(2D), z_j = (T-hat_j - T_j)/SE_j on the no-structure data "
              "(T the exact population correlations of the uniform-cube model)",
       tolerance=_CHI_Z,
       tolerance_origin="a chi-square test: sum z^2 ~ chi^2_D per neuron under the theory (D = 100); "
                        "its skewed tail at D + 6 sqrt(2D) is 5.2e-7 (a 4 sd bound, used before, was 2.6e-4), over the "
                        "neurons (8 quick, 40 full): false-failure bound 4.2e-6 quick, 2.1e-5 full. Recorded 2.11 "
                        "(quick), 2.8x below. The structured signal would give sum z^2 ~ k (T_A/SE)^2 ~ 1e5",
       quick={"D": 100, "k": 5, "neurons": 8, "n_train": 50_000, "seeds": 4, "n_mc": 100_000},
       full={"D": 100, "k": 5, "neurons": 40, "n_train": 200_000, "seeds": 8, "n_mc": 1_000_000},
       kind="training",
       nulls={"structure_blind": "input structure is irrelevant: the uniform-cube gradient has the structured "
                                 "model's population correlations"})
def no_structure_signal(size, device, outdir):
    model = _model(size)
    m = size["neurons"]
    params = _init(model, m)
    s1 = _sched(model)[0].s
    flat = data.no_structure(model)
    T0 = correlations.neuron_correlations(flat, params.Q[:m], params.b[:m], s1).T
    T1 = correlations.neuron_correlations(model, params.Q[:m], params.b[:m], s1).T
    H0, se0 = _step1_hat(model, params, size, method="no_structure")
    H1, se1 = _step1_hat(model, params, size)
    z0 = (H0 - T0) / se0
    chi0 = (np.sum(z0 ** 2, axis=1) - model.D) / math.sqrt(2 * model.D)
    zsig = np.sum(H1[:, :model.k] / se1[:, :model.k], axis=1) / math.sqrt(model.k)      # z of the A-signal
    worst = float(np.abs(chi0).max())
    null = float(np.abs((np.sum(((H0 - T1) / se0) ** 2, axis=1) - model.D) / math.sqrt(2 * model.D)).max())
    rows = [{"neuron": i, "T_A_norm_flat": float(np.linalg.norm(T0[i, :model.k])),
             "T_A_norm_structured": float(np.linalg.norm(T1[i, :model.k])), "chi_z_flat": float(chi0[i]),
             "signal_z_structured": float(zsig[i])} for i in range(m)]
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    j = np.arange(model.D)
    ax.plot(j, np.abs(H1).mean(0), "o", ms=3, color="C0", label="with structure: torch |T-hat_j|")
    ax.plot(j, np.abs(T1).mean(0), "-", color="C0", label="with structure: exact |T_j|")
    ax.plot(j, np.abs(H0).mean(0), "o", ms=3, color="C1", label="uniform cube: torch |T-hat_j|")
    ax.plot(j, np.maximum(np.abs(T0).mean(0), 1e-12), "-", color="C1", label="uniform cube: exact |T_j|")
    ax.plot(j, se0.mean(0), "k:", label="sampling SE")
    ax.set_yscale("log")
    ax.set(xlabel="pattern j (A = first k)", ylabel="mean over neurons",
           title=f"C9 no structure: max chi z {worst:.2f}; signal z with structure >= {zsig.min():.0f}")
    _legend(ax)
    path = save_figure(fig, outdir / "emergence.no_structure_signal.png", title=claim_title(
        REGISTRY["emergence.no_structure_signal"], worst, what="max chi z"))
    checks = {"with structure the step-1 signal is significant (z > 20) for every neuron": bool(np.all(zsig > 20)),
              "population no-structure ||T_A|| < 1e-3 ||T_A|| with structure": bool(np.all(
                  np.linalg.norm(T0[:, :model.k], axis=1) < 1e-3 * np.linalg.norm(T1[:, :model.k], axis=1)))}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls={"structure_blind": null},
                       message=f"no structure: max |chi z| {worst:.2f} (structure-blind theory: {null:.0f}), "
                               f"||T_A|| ratio (flat/structured) "
                               f"{np.max([r['T_A_norm_flat'] / r['T_A_norm_structured'] for r in rows]):.1e}; "
                               f"structured signal z >= {zsig.min():.0f}")
