"""Committee-machine claims: the Saad-Solla plateau, the ODE against online SGD, order 1 vs 2.

* ``committee.plateau_erf``: the unspecialised fixed point of erf(x/sqrt 2), K = M = 2, eta = 0.5 has
  eg = 0.014645 (Saad & Solla 1995 §IV; Goldt et al. 2019 Fig. 1's plateau): popdyn's solver against the
  published value, an independent computation (no simulation; ``committee.ode_vs_sgd`` meets SGD there).
* ``committee.ode_vs_sgd``: online SGD at d in {500, 1000, 2000} follows the ODE started from each seed's
  exact initial overlaps; the gap shrinks like 1/sqrt(d).
* ``committee.order1``: the eta^2 term is needed: with output noise sigma = 0.3 at eta = 1, online SGD follows
  the full ODE, not the order-1 (eta -> 0) ODE (eg -> 0) nor the ODE with the eta^2 term doubled.
* ``committee.activations``: ReLU, tanh and a ``from_callable`` softsign (no closed forms) against SGD.
* ``committee.k_greater_m``: K = 3 > M = 2, both layers trained, output noise 0.1: SGD follows
  ``popdyn.predict`` in eg(t) down to the noise floor and in the sum of the second layer.
* ``committee.gap_scaling``: the sim-minus-ODE gap at fixed eta t scales like sqrt(eta / d) (tanh quick, ReLU full).

Only popdyn's public API is used for the theory; the torch SGD is the independent check.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

import popdyn
from popdyn import activations
from popdyn.models import committee
from popdyn.plot import Key, claim_title, legend_outside, plot_curves, sample_axis, save_figure, subplots

from . import REGISTRY, ClaimResult, claim

__all__ = []

_SRC = "Saad & Solla 1995 (PRE 52, 4225) §IV; Goldt et al. 2019 (arXiv 1906.08632) eqs. (7)-(9); docs/committee.md"
_EG_PLATEAU = 0.014645          # erf(x/sqrt 2), K = M = 2, eta = 0.5, T = I, v = v* = 1


@claim(id="committee.plateau_erf", model="committee",
       title="Saad-Solla erf, K = M = 2, eta = 0.5: the symmetric plateau has eg = 0.014645",
       source=_SRC,
       metric="|eg(plateau) - 0.014645|, the plateau found by committee.plateau (relaxation in the symmetric "
              "subspace, then a root solve)",
       tolerance=1e-5,
       tolerance_origin="to 1e-5 (the value is printed to 6 decimals, rounding <= 5e-7); the "
                        "order-1 plateau is 7e-5 away, so 1e-5 separates the two",
       kind="independent",
       nulls={"no eta^2 term": "the order-1 (eta -> 0) ODE's plateau, Problem(order=1), the same solver"},
       quick={"lr": 0.5}, full={"lr": 0.5})
def plateau_erf(size, device, outdir):
    p, lr = committee.Problem.saad_solla(K=2, M=2), size["lr"]
    Q, R, eg = committee.plateau(p, lr=lr)
    dQ, dR, _ = committee.drift(p, Q, R, lr=lr)
    res = float(max(np.abs(dQ).max(), np.abs(dR).max()))
    pred = committee.ode(p, Q * (1 + 1e-3), R * (1 - 1e-3), t=np.linspace(0, 40, 81), lr=lr)
    fig, (ax,) = subplots(1)
    plot_curves(pred.t, {"eg from (1.001 Q*, 0.999 R*)": pred["eg"]}, ax=ax, refs={"0.014645": _EG_PLATEAU},
                xlabel="t = steps/d", ylabel="eg")
    path = save_figure(fig, outdir / "committee.plateau_erf.png", title=claim_title(
        REGISTRY["committee.plateau_erf"], abs(eg - _EG_PLATEAU), what="|eg* - 0.014645|", note=f"eg* = {eg:.7f}"))
    back = abs(float(pred["eg"][-1]) - eg)
    eg1 = committee.plateau(committee.Problem.saad_solla(K=2, M=2, order=1), lr=lr)[2]
    return ClaimResult(measured=abs(eg - _EG_PLATEAU), nulls={"no eta^2 term": abs(eg1 - _EG_PLATEAU)},
                       checks={"drift at the plateau <= 1e-12": res <= 1e-12,
                               "a symmetric perturbation relaxes back (|eg(40) - eg*| <= 1e-6)": back <= 1e-6},
                       figure=str(path),
                       table=[{"lr": lr, "eg": eg, "Q11": Q[0, 0], "Q12": Q[0, 1], "R": R[0, 0],
                               "residual": res, "relaxed_gap": back}],
                       message=f"plateau eg = {eg:.8f} (0.014645 expected; order-1 ODE {eg1:.8f}); drift residual "
                               f"{res:.2g}")


def _eg(problem, Q, R, t, lr, **options):
    """eg of the ODE from (Q, R) at the times t: the claims read eg alone, so the solver's accuracy estimate (a second
    solve, ~0.7x the cost) is left out."""
    return committee.ode(problem, Q, R, t=t, lr=lr, error_estimate=False, **options)["eg"]


def _runs(problem, lr, d, t_max, seeds, n_points, device, init_scale=1.0):
    """SGD at d and the ODE from each seed's recorded initial overlaps, on the same step grid."""
    sim = popdyn.simulate(problem, d=d, steps=int(round(t_max * d)), lr=lr, seeds=seeds, n_points=n_points,
                          init_scale=init_scale, seed=d, device=device)
    t = sim.t / d
    return t, sim, np.stack([_eg(problem, sim["Q"][s, 0], sim["R"][s, 0], t, lr, rtol=1e-9, atol=1e-11)
                             for s in range(seeds)])


@claim(id="committee.ode_vs_sgd", model="committee",
       title="Saad-Solla erf, K = M = 2, eta = 0.5: online SGD follows the overlap ODE started from its own "
             "initial overlaps, with a gap shrinking like 1/sqrt(d)",
       source=_SRC,
       metric="sqrt(d) x sup over t <= 0.8 t_esc of |mean_seeds(eg_SGD - eg_ODE)| / mean_seeds eg_ODE, max over d "
              "(t_esc the first escape of the ODEs below eg*/2, eg* the plateau); check: the median over seeds of "
              "|t_esc,SGD / t_esc,ODE - 1| <= 0.2",
       tolerance=1.5,
       tolerance_origin="at each recorded time sqrt(d) times the relative gap of the S-seed mean is Gaussian with "
                        "sd c/sqrt(S), c the per-seed sd of sqrt(d) (eg_SGD - eg_ODE) / eg_ODE: measured on 64 seeds "
                        "at d = 250 and 500, c <= 1.32 (at t ~ 4 and just before 0.8 t_esc), the same at both d (the "
                        "fluctuation of the overlaps is O(1/sqrt d) relative), no bias (max |mean| 3.2 SE over 71 "
                        "times). At S = 16 the sd is 0.33 and 1.5 is 4.5 sd (Student t, 63 d.o.f. for c); summed over "
                        "the times up to 0.8 t_esc the tails count as at most 4 times at the largest sd: 1.0e-4 per "
                        "d. Check: a seed's escape time is more than 20 % off with probability 0.07 (64 seeds), the "
                        "median of 16 only if 8 are: 6e-5 per d at 0.1. False-failure bound 3.2e-4 quick, 4.8e-4 full. "
                        "At 4 seeds the statistic was 0.94 +- 0.24 and the mean-initial-overlaps null fell below 1.5 "
                        "at both d in ~5 % of draws; at 16 it is >= 3.3 at d = 500, the order-1 ODE >= 9. I3 5 % too "
                        "large gives 2.2 at d = 400, growing like sqrt(d)",
       kind="training",
       nulls={"no eta^2 term": "the order-1 (eta -> 0) ODE, Problem(order=1), from each seed's initial overlaps",
              "mean initial overlaps": "one ODE from the seed-averaged initial overlaps (a typical initialisation, "
                                       "not each run's own symmetry breaking)"},
       quick={"d": [250, 500], "t_max": 250.0, "seeds": 16, "n_points": 251},
       full={"d": [500, 1000, 2000], "t_max": 300.0, "seeds": 16, "n_points": 301})
def ode_vs_sgd(size, device, outdir):
    p = committee.Problem.saad_solla(K=2, M=2)
    p1 = committee.Problem.saad_solla(K=2, M=2, order=1)
    eg_star = committee.plateau(p, lr=0.5)[2]
    fig, axes = subplots(len(size["d"]))
    rows, scaled, null_scaled = [], [], {n: [] for n in REGISTRY["committee.ode_vs_sgd"].nulls}

    def sup_gap(eg_sgd, eg_ode, t):
        """sup over t <= 0.8 t_esc (the ODEs' first escape below eg*/2) of the relative gap of the seed means."""
        esc = committee.escape_time(popdyn.results.Prediction(t=t, observables={"eg": eg_ode}), eg_star / 2)
        t_cut = 0.8 * np.nanmin(np.where(np.isnan(esc), t[-1], esc))
        w = t <= t_cut
        return float((np.abs((eg_sgd - eg_ode).mean(0)) / eg_ode.mean(0))[w].max()), esc, float(t_cut)

    for ax, d in zip(axes, size["d"]):
        t, sim, eg_ode = _runs(p, 0.5, d, size["t_max"], size["seeds"], size["n_points"], device)
        gap, esc_ode, t_cut = sup_gap(sim["eg"], eg_ode, t)
        Qm, Rm = sim["Q"][:, 0].mean(0), sim["R"][:, 0].mean(0)
        nulls = {"no eta^2 term": np.stack([_eg(p1, sim["Q"][s, 0], sim["R"][s, 0], t, 0.5, rtol=1e-9, atol=1e-11)
                                            for s in range(size["seeds"])]),
                 "mean initial overlaps": np.repeat(_eg(p, Qm, Rm, t, 0.5, rtol=1e-9, atol=1e-11)[None],
                                                    size["seeds"], 0)}
        for name, eg in nulls.items():
            null_scaled[name].append(sup_gap(sim["eg"], eg, t)[0] * np.sqrt(d))
        esc_sgd = committee.escape_time(popdyn.results.Prediction(t=t, observables={"eg": sim["eg"]}), eg_star / 2)
        scaled.append(gap * np.sqrt(d))
        both = ~np.isnan(esc_ode) & ~np.isnan(esc_sgd)
        esc_rel = float(np.median(np.abs(esc_sgd[both] / esc_ode[both] - 1))) if both.any() else float("nan")
        rows.append({"d": d, "seeds": size["seeds"], "sup_gap_rel": float(gap), "sqrt_d_gap": float(scaled[-1]),
                     "t_cut": float(t_cut), "median_rel_escape_error": esc_rel, "escaped_both": int(both.sum()),
                     **{f"sqrt_d_gap_{n}": float(v[-1]) for n, v in null_scaled.items()}})
        plot_curves(t, {"SGD mean": sim["eg"].mean(0), "ODE mean (from each seed's overlaps)": eg_ode.mean(0),
                        "ODE from the mean initial overlaps": nulls["mean initial overlaps"][0]}, ax=ax,
                    refs={"plateau": eg_star}, logy=True, xlabel="t = steps/d", ylabel="eg", legend=False,
                    styles={"ODE mean (from each seed's overlaps)": {"color": "k", "ls": "--"},
                            "ODE from the mean initial overlaps": {"color": "C3", "ls": ":"}},
                    title=f"d = {d}: sup rel gap {gap:.3g} before 0.8 t_esc")
    worst = float(max(scaled))
    legend_outside(fig)
    path = save_figure(fig, outdir / "committee.ode_vs_sgd.png", title=claim_title(
        REGISTRY["committee.ode_vs_sgd"], worst, what="max sqrt(d) x sup relative gap"))
    esc = [r["median_rel_escape_error"] for r in rows]
    null_worst = {n: float(max(v)) for n, v in null_scaled.items()}
    return ClaimResult(measured=worst, checks={"median relative escape-time error <= 0.2 at every d":
                                               all(e <= 0.2 for e in esc)},
                       figure=str(path), table=rows, nulls=null_worst,
                       message=f"sqrt(d) x sup relative gap {[round(float(s), 3) for s in scaled]} (<= 1.5); "
                               f"nulls {', '.join(f'{n}: {v:.3g}' for n, v in null_worst.items())}; median relative "
                               f"escape-time error {[round(float(e), 3) for e in esc]}",
                       details={"eg_plateau": eg_star})


def _error_units(eg_sgd, eg_ode, rel, cells=1, alpha=2e-4):
    """max_t |mean_s(eg_SGD - eg_ODE)| / (q SE_t + rel mean_s eg_ODE(t)) over the recorded t > 0.

    SE_t is the standard error of the seed mean of the per-seed differences; q the Student-t quantile with S - 1
    degrees of freedom at the two-sided level ``alpha`` split over the recorded times and the claim's ``cells``
    (settings whose max is taken) (Bonferroni): the max exceeds q SE_t by chance with probability <= alpha."""
    diff = (eg_sgd - eg_ode)[:, 1:]
    S, n = diff.shape
    q = float(stats.t.ppf(1 - alpha / (2 * n * cells), S - 1))
    se = diff.std(0, ddof=1) / np.sqrt(S)
    return float((np.abs(diff.mean(0)) / (q * se + rel * eg_ode[:, 1:].mean(0))).max()), q


_O1_REL = 0.05  # finite-d allowance of committee.order1, as committee.k_greater_m


@claim(id="committee.order1", model="committee",
       title="The eta^2 term of the ODE is needed: Saad-Solla erf, K = M = 2, eta = 1, output noise sigma = 0.3: "
             "online SGD's eg(t) follows the full ODE, not the order-1 (eta -> 0) ODE nor one with the eta^2 term "
             "doubled",
       source=_SRC + "; Goldt et al. 2019 §3 (the eta^2 term; the noise enters only through it)",
       kind="training",
       nulls={"no eta^2 term": "the order-1 (eta -> 0) ODE, Problem(order=1): the output noise drops out and eg -> 0",
              "eta^2 term x 2": "the eta^2 term doubled: the full ODE at 2 eta run to t/2 (dQ = -eta F1 + 2 eta^2 F2 "
                                "exactly, v fixed)"},
       metric="max over d and recorded t > 0 of |mean_seeds(eg_SGD - eg_ODE)| / (q SE_t + 0.05 mean eg_ODE(t)), the "
              "ODE from each seed's initial overlaps, SE_t the standard error of the seed mean of the per-seed "
              "differences, q the Student-t quantile (S - 1 d.o.f.) at family-wise level 0.02 % over the recorded "
              "times (Bonferroni); the same number for each null ODE on the same SGD runs",
       tolerance=1.0,
       tolerance_origin="per time, the seed mean of the per-seed gaps over its standard error is a Student t with "
                        "S - 1 = 15 d.o.f.; q is its quantile at family-wise 0.02 % over the recorded times and d "
                        "(Bonferroni: q = 6.9 quick, 40 times; 8.0 full, 75 times x 3 d), so the seed noise exceeds "
                        "q SE_t somewhere with probability <= 2e-4. 5 % of eg covers the O(1/d) finite-size bias "
                        "(final eg 0.0457 SGD vs 0.0474 ODE at d = 500, 8 seeds: 0.20 error units, 5x headroom); "
                        "in those units, pass iff <= 1. False-failure bound 2e-4 while the bias stays within the "
                        "5 %. The nulls are off by O(1): the order-1 ODE ends at eg = 0.0049 (11 units at 8 seeds), "
                        "the doubled eta^2 term at 0.136 (8.9 units)",
       quick={"d": [500], "t_max": 80.0, "seeds": 16, "n_points": 41, "lr": 1.0, "sigma": 0.3},
       full={"d": [500, 1000, 2000], "t_max": 150.0, "seeds": 16, "n_points": 76, "lr": 1.0, "sigma": 0.3})
def order1(size, device, outdir):
    eta, S = size["lr"], size["seeds"]
    p = committee.Problem.saad_solla(K=2, M=2, sigma=size["sigma"])
    p1 = committee.Problem.saad_solla(K=2, M=2, sigma=size["sigma"], order=1)
    fig, axes = subplots(len(size["d"]))
    rows, units = [], {"theory": [], "no eta^2 term": [], "eta^2 term x 2": []}
    for ax, d in zip(axes, size["d"]):
        sim = popdyn.simulate(p, d=d, steps=int(round(size["t_max"] * d)), lr=eta, seeds=S,
                              n_points=size["n_points"], seed=d, device=device)
        t = sim.t / d
        init = [(sim["Q"][s, 0], sim["R"][s, 0]) for s in range(S)]
        odes = {"theory": np.stack([_eg(p, Q, R, t, eta) for Q, R in init]),
                "no eta^2 term": np.stack([_eg(p1, Q, R, t, eta) for Q, R in init]),
                "eta^2 term x 2": np.stack([_eg(p, Q, R, t / 2, 2 * eta) for Q, R in init])}
        row = {"d": d, "seeds": S}
        for name, eg in odes.items():
            u, q = _error_units(sim["eg"], eg, _O1_REL, cells=len(size["d"]))
            units[name].append(u)
            row[f"units_{name}"] = u
            row[f"eg_end_{name}"] = float(eg.mean(0)[-1])
        row.update({"q": q, "eg_end_SGD": float(sim["eg"].mean(0)[-1])})
        rows.append(row)
        plot_curves(t, {"SGD mean": sim["eg"].mean(0), "full ODE": odes["theory"].mean(0),
                        "order-1 ODE (no eta^2 term)": odes["no eta^2 term"].mean(0),
                        "eta^2 term x 2": odes["eta^2 term x 2"].mean(0)}, ax=ax, logy=True,
                    bands={"SGD mean": 2 * sim["eg"].std(0) / np.sqrt(S)}, legend=False,
                    styles={"full ODE": {"color": "k", "ls": "--"}}, xlabel="t = steps/d", ylabel="eg",
                    title=f"d = {d}: {units['theory'][-1]:.3g} error units")
    legend_outside(fig)
    worst = {k: float(max(v)) for k, v in units.items()}
    path = save_figure(fig, outdir / "committee.order1.png", title=claim_title(
        REGISTRY["committee.order1"], worst["theory"], what="max eg gap in allowed-error units"))
    return ClaimResult(measured=worst["theory"], figure=str(path), table=rows,
                       nulls={k: v for k, v in worst.items() if k != "theory"},
                       message=f"error units: full ODE {worst['theory']:.3g} (<= 1), order-1 ODE "
                               f"{worst['no eta^2 term']:.3g}, eta^2 term x 2 {worst['eta^2 term x 2']:.3g}; final eg "
                               f"SGD {rows[-1]['eg_end_SGD']:.4f}, full {rows[-1]['eg_end_theory']:.4f}, order-1 "
                               f"{rows[-1]['eg_end_no eta^2 term']:.2g}, x 2 {rows[-1]['eg_end_eta^2 term x 2']:.4f}")


def _softsign(z):
    return z / (1 + np.abs(z))


def _activation(name):
    if name == "softsign":
        return activations.Activation.from_callable(_softsign, deriv=lambda z: 1 / (1 + np.abs(z)) ** 2,
                                                    name="softsign")
    return activations.get(name)


@claim(id="committee.activations", model="committee",
       title="Activations beyond erf (ReLU by orthant moments; tanh and a from_callable softsign by quadrature): "
             "online SGD follows the ODE started from each seed's initial overlaps",
       source=_SRC,
       metric="max over activations, d and t of |mean_seeds(eg_SGD - eg_ODE)| / (q SE_t + 0.02 mean eg_ODE(t)): the "
              "gap in units of its allowed error (SE of the seed mean of the per-seed differences, q the Student-t "
              "quantile, S - 1 d.o.f., at family-wise level 0.02 % over times, activations and d: Bonferroni)",
       tolerance=1.0,
       tolerance_origin="per time, the seed mean of the per-seed gaps over its standard error is a Student t with "
                        "S - 1 = 15 d.o.f.; q is its quantile at family-wise 0.02 % over the recorded times, "
                        "activations and d (Bonferroni: q = 6.8 quick, 12 times x 3 activations; 8.3 full, 60 times "
                        "x 3 activations x 2 d), so the seed noise exceeds q SE somewhere with probability <= 2e-4; "
                        "plus 2 % for the O(1/d) finite-size bias (measured <= 1 % at d = 500, tanh, 8 seeds: 2x "
                        "headroom); in those units, pass iff <= 1. False-failure bound 2e-4 while the bias stays "
                        "within the 2 %",
       kind="training",
       nulls={"no eta^2 term": "the order-1 (eta -> 0) ODE, Problem(order=1), from each seed's initial overlaps"},
       quick={"activations": ["relu", "tanh", "softsign"], "d": [300], "lr": 0.5, "t_max": 12.0, "seeds": 16,
              "n_points": 13},
       full={"activations": ["relu", "tanh", "softsign"], "d": [500, 2000], "lr": 0.5, "t_max": 60.0, "seeds": 16,
             "n_points": 61})
def activations_vs_sgd(size, device, outdir):
    rows, units, units1 = [], [], []
    fig, axes = subplots(len(size["activations"]) * len(size["d"]))
    axes = iter(axes)
    for name in size["activations"]:
        p, lr = committee.Problem(2, 2, _activation(name)), size["lr"]
        for d in size["d"]:
            sim = popdyn.simulate(p, d=d, steps=int(size["t_max"] * d), lr=lr, seeds=size["seeds"],
                                  n_points=size["n_points"], seed=d, device=device)
            t = sim.t / d
            eg_ode = np.stack([_eg(p, sim["Q"][s, 0], sim["R"][s, 0], t, lr) for s in range(size["seeds"])])
            p1 = committee.Problem(2, 2, _activation(name), order=1)
            eg1 = np.stack([_eg(p1, sim["Q"][s, 0], sim["R"][s, 0], t, lr) for s in range(size["seeds"])])

            def in_units(eg):
                return _error_units(sim["eg"], eg, 0.02, cells=len(size["activations"]) * len(size["d"]))[0]
            u = in_units(eg_ode)
            units.append(u)
            units1.append(in_units(eg1))
            rel = float((np.abs(sim["eg"] - eg_ode).mean(0) / eg_ode.mean(0)).max())
            rows.append({"activation": name, "d": d, "sup_rel_gap": rel, "error_units": u,
                         "error_units_order1": units1[-1]})
            plot_curves(t, {"SGD mean +- 2 SE": sim["eg"].mean(0), "ODE mean": eg_ode.mean(0)}, ax=next(axes),
                        logy=True, bands={"SGD mean +- 2 SE": 2 * sim["eg"].std(0) / np.sqrt(size["seeds"])},
                        styles={"ODE mean": {"color": "k", "ls": "--"}}, legend=False,
                        xlabel="t = steps/d", ylabel="eg", title=f"{name}, d = {d}: sup rel gap {rel:.3g}")
    legend_outside(fig)
    path = save_figure(fig, outdir / "committee.activations.png", title=claim_title(
        REGISTRY["committee.activations"], max(units), what="max gap in allowed-error units"))
    return ClaimResult(measured=float(max(units)), figure=str(path), table=rows,
                       nulls={"no eta^2 term": float(max(units1))},
                       message=f"gap in allowed-error units {[round(u, 3) for u in units]} (<= 1), order-1 ODE "
                               f"{[round(u, 3) for u in units1]}; sup relative gaps "
                               f"{[round(r['sup_rel_gap'], 4) for r in rows]}")


@claim(id="committee.k_greater_m", model="committee",
       title="Saad-Solla erf, K = 3 > M = 2, both layers trained (eta = eta_v = 1), output noise sigma = 0.1: online "
             "SGD follows popdyn.predict's ODE in eg(t) and in the second layer v(t), down to the noise floor",
       source=_SRC + "; Goldt et al. 2019 §4 (K > M, noise: the asymptotic error eg ~ eta sigma^2)",
       metric="max over d and t of |mean_seeds(eg_SGD - eg_ODE)| / (q SE_t + 0.05 mean eg_ODE(t)), SE the standard "
              "error of the seed mean of the per-seed differences (the ODE from each seed's initial overlaps), q the "
              "Student-t quantile (S - 1 d.o.f.) at family-wise level 0.02 % over times and d (Bonferroni); checks: "
              "sqrt(d) x sup_t |mean_seeds(sum_k v_k,SGD - sum_k v_k,ODE)| / mean sum_k v_k,ODE <= 1.5, and the "
              "ODE's final eg above the noise-free ODE's by > 2x (the noise floor is reached)",
       tolerance=1.0,
       tolerance_origin="the sup relative gap x sqrt(d) of committee.ode_vs_sgd is not the measure here: K > M "
                        "specialises at a seed-dependent time (per-seed sqrt(d) x sup gap 2-36 measured), so the gap "
                        "is held to q SE of the 16-seed mean (per time a Student t with 15 d.o.f.; q = 8.0 quick, "
                        "8.4 full: family-wise 0.02 % over 120 times x 2 d and 150 times x 3 d, Bonferroni) plus 5 % "
                        "for the finite-size bias (0.25 error units measured at 8 seeds: 4x headroom; 0.23 at 16 seeds "
                        "with the quick d = 200, 400, which halve the simulation's time); pass iff <= 1. "
                        "False-failure bound 2e-4 while the bias stays within the 5 % (the sum-v check has no noise "
                        "model). Without the noise term the ODE falls below the floor",
       kind="training",
       nulls={"no noise term": "the ODE of the noise-free problem (sigma = 0), from each seed's initial overlaps",
              "no eta^2 term": "the order-1 (eta -> 0) ODE, Problem(order=1): the noise and I4 terms both dropped"},
       quick={"d": [200, 400], "t_max": 240.0, "seeds": 16, "n_points": 121},
       full={"d": [500, 1000, 2000], "t_max": 300.0, "seeds": 16, "n_points": 151})
def k_greater_m(size, device, outdir):
    p, rates = committee.Problem.saad_solla(K=3, M=2, sigma=0.1), {"lr": 1.0, "lr_v": 1.0}
    S = size["seeds"]
    fig, axes = subplots(2 * len(size["d"]))
    axes = iter(axes)
    rows, units, v_gaps = [], [], []
    null_units = {"no noise term": [], "no eta^2 term": []}
    null_problems = {"no noise term": committee.Problem.saad_solla(K=3, M=2),
                     "no eta^2 term": committee.Problem.saad_solla(K=3, M=2, sigma=0.1, order=1)}
    for d in size["d"]:
        steps = int(round(size["t_max"] * d))
        sim = popdyn.simulate(p, d=d, steps=steps, seeds=S, n_points=size["n_points"], seed=d, device=device, **rates)
        preds = [popdyn.predict(p, d=d, steps=steps, n_points=size["n_points"], Q0=sim["Q"][s, 0], R0=sim["R"][s, 0],
                                rtol=1e-9, atol=1e-11, **rates) for s in range(S)]
        t = sim.t / d
        eg_ode, v_ode = np.stack([x["eg"] for x in preds]), np.stack([x["v"] for x in preds])
        diff = sim["eg"] - eg_ode
        u = _error_units(sim["eg"], eg_ode, 0.05, cells=len(size["d"]))[0]
        for name, pn in null_problems.items():
            eg_n = np.stack([popdyn.predict(pn, d=d, steps=steps, n_points=size["n_points"], Q0=sim["Q"][s, 0],
                                            R0=sim["R"][s, 0], rtol=1e-9, atol=1e-11, **rates)["eg"] for s in range(S)])
            null_units[name].append(_error_units(sim["eg"], eg_n, 0.05, cells=len(size["d"]))[0])
        sum_ode = v_ode.sum(-1)
        v_gap = float((np.abs((sim["v"].sum(-1) - sum_ode).mean(0)) / np.abs(sum_ode.mean(0))).max() * np.sqrt(d))
        eg_rel = np.abs(diff.mean(0)) / eg_ode.mean(0)
        units.append(u)
        v_gaps.append(v_gap)
        rows.append({"d": d, "seeds": S, "error_units": u, "sqrt_d_sup_rel_gap_eg": float(eg_rel.max() * np.sqrt(d)),
                     "sqrt_d_sup_rel_gap_sum_v": v_gap, "eg_ODE_end": float(eg_ode.mean(0)[-1]),
                     "eg_SGD_end": float(sim["eg"].mean(0)[-1])})
        plot_curves(t, {"SGD mean": sim["eg"].mean(0), "ODE mean (from each seed's overlaps)": eg_ode.mean(0)},
                    ax=next(axes), logy=True, bands={"SGD mean": 2 * sim["eg"].std(0) / np.sqrt(S)},
                    styles={"ODE mean (from each seed's overlaps)": {"color": "k", "ls": "--"}}, legend="below",
                    xlabel="t = steps/d", ylabel="eg", title=f"K = 3, M = 2, sigma = 0.1, d = {d}: {u:.3g} error units")
        key = Key("", [f"v_{k}" for k in range(p.K)], ["SGD", "ODE"])
        plot_curves(t, {**{f"v_{k} SGD": sim["v"][0, :, k] for k in range(p.K)},
                        **{f"v_{k} ODE": v_ode[0, :, k] for k in range(p.K)}}, ax=next(axes), legend="below",
                    styles={f"v_{k} {m}": key(f"v_{k}", m) for k in range(p.K) for m in ("SGD", "ODE")},
                    xlabel="t = steps/d", ylabel="v (seed 0)", title=f"d = {d}: second layer, seed 0")
    path = save_figure(fig, outdir / "committee.k_greater_m.png", title=claim_title(
        REGISTRY["committee.k_greater_m"], max(units), what="max eg gap in allowed-error units"))
    Q0, R0 = sim["Q"][0, 0], sim["R"][0, 0]
    quiet = popdyn.predict(committee.Problem.saad_solla(K=3, M=2), d=d, steps=steps, n_points=2,
                           Q0=Q0, R0=R0, rtol=1e-9, atol=1e-11, **rates)["eg"][-1]
    floor = float(preds[0]["eg"][-1] / quiet)
    return ClaimResult(measured=float(max(units)),
                       checks={"sqrt(d) x sup relative gap of sum_k v_k <= 1.5": max(v_gaps) <= 1.5,
                               "the noise floor is reached: eg_ODE(t_max) > 2 x the noise-free ODE's": floor > 2},
                       figure=str(path), table=rows, nulls={n: float(max(v)) for n, v in null_units.items()},
                       message=f"eg gap in allowed-error units {[round(x, 3) for x in units]} (<= 1), nulls "
                               f"{ {n: round(max(v), 3) for n, v in null_units.items()} }; sqrt(d) x sup "
                               f"relative gap of sum v {[round(x, 3) for x in v_gaps]} (<= 1.5); final eg with / "
                               f"without noise {floor:.3g}",
                       details={"note": "the individual v_k drift along the flat direction of the K > M solution "
                                        "manifold (two students share a teacher unit), so their sum is compared"})


@claim(id="committee.gap_scaling", model="committee",
       title="tanh, K = M = 2 (ReLU at full size): the sim-minus-ODE gap at fixed eta t shrinks like sqrt(eta / d), "
             "with eta and with 1/sqrt(d)",
       source=_SRC + "; derived: each step adds O(eta/d) noise to the overlaps, d tau / eta steps "
                     "reach tau = eta t, so the variance is O(eta tau / d)",
       metric="max / min over (eta, d) of g / sqrt(eta / d), g the RMS over seeds and recorded times 0 < eta t <= tau "
               "of the per-seed relative gap (eg_SGD - eg_ODE) / eg_ODE (the ODE from each seed's initial overlaps); "
               "checks: g falls as d grows at every eta and as eta falls at every d",
       tolerance=2.5,
       tolerance_origin="measured on 64 seeds (tanh, quick cells): g / sqrt(eta / d) is 1.40, 1.43 at eta = 0.025 "
                        "(d = 125, 500) and 1.10, 1.14 at eta = 0.4, a systematic spread of e^0.26 = 1.30 (sqrt(eta) "
                        "is the leading order; at eta = 0.4 the gap is ~20-30 % below it; the earlier cells d = 250, "
                        "1000 gave 1.21, 1.42, 1.00, 0.93, spread 1.52), and log g has sd 0.5/sqrt(S) per cell "
                        "(bootstrap over seeds). So log(max / min) is at most 0.26 plus the range of the cells' "
                        "normal noise, which at S = 64 (sd 0.063) exceeds log 2.5 - 0.26 = 10 sd with probability "
                        "< 1e-9. The null 1/sqrt(d) only is rejected when any cell pair's ratio exceeds 2.5: the two "
                        "independent same-d pairs sit at e^1.14 = 3.1 and e^1.16 = 3.2, both inside with probability "
                        "< 1e-4 (log sd 0.088). The ordering checks have drops of >= 0.6 in log g (7 sd). "
                        "False-failure bound 1e-4 (full: relu, assumed alike). The nulls' levers are "
                        "(eta_max / eta_min)^(1/2) = 4 (gap O(1/sqrt d) only) and (eta_max d_max / (eta_min "
                        "d_min))^(1/2) = 8 (no scaling). The quick cells are d = 125, 500 (not 250, 1000) to halve "
                        "the time: the 64 ODEs per cell are then most of it. The quick size's tanh ODEs take the tensor eta^2 "
                        "rule (about 10x faster per solve than the conditioned one): its error moves eg by at most 5.6e-3 "
                        "relative at eta = 0.5, about (0.4 / 0.5)^2 of that at eta = 0.4, where the gap g is >= 0.03, "
                        "so it adds under 1 % to g (in quadrature) and far less at eta = 0.025",
       kind="training",
       nulls={"1/sqrt(d) only": "the usual finite-size statement: the gap is O(1/sqrt d) whatever eta (max / min of "
                                "g sqrt(d))",
              "no scaling": "a gap that shrinks with neither eta nor d, as a biased ODE's (max / min of g)"},
       quick={"activation": "tanh", "lrs": [0.025, 0.4], "d": [125, 500], "tau": 1.0, "seeds": 64, "n_points": 9,
              "eta2_rule": "tensor"},
       full={"activation": "relu", "lrs": [0.025, 0.1, 0.4], "d": [500, 2000], "tau": 2.0, "seeds": 64,
             "n_points": 9})
def gap_scaling(size, device, outdir):
    rows, norm = [], {}
    fig, (ax,) = subplots(1)
    p = committee.Problem(2, 2, _activation(size["activation"]))
    for eta in size["lrs"]:
        for d in size["d"]:
            sim = popdyn.simulate(p, d=d, steps=int(round(size["tau"] * d / eta)), lr=eta, seeds=size["seeds"],
                                  n_points=size["n_points"], seed=d, device=device)
            t = sim.t / d
            rule = size.get("eta2_rule", "conditioned")
            eg_ode = np.stack([_eg(p, sim["Q"][s, 0], sim["R"][s, 0], t, eta, eta2_rule=rule) for s in range(size["seeds"])])
            rel = (sim["eg"] - eg_ode)[:, 1:] / eg_ode[:, 1:]
            g = float(np.sqrt((rel ** 2).mean()))
            norm[eta, d] = g / np.sqrt(eta / d)
            rows.append({"activation": size["activation"], "lr": eta, "d": d, "rms_rel_gap": g,
                         "gap_over_sqrt_eta_over_d": float(norm[eta, d])})
    gaps = {(r["lr"], r["d"]): r["rms_rel_gap"] for r in rows}
    etas, ds = sorted(size["lrs"]), sorted(size["d"])
    key = Key("d", ds, ["RMS gap (SGD vs ODE)", "c sqrt(eta / d), c from the first cell"])
    for d in ds:
        ax.plot(etas, [gaps[e, d] for e in etas], **key(d, "RMS gap (SGD vs ODE)"), marker="o")
        ax.plot(etas, [norm[etas[0], ds[0]] * np.sqrt(e / d) for e in etas],
                **key(d, "c sqrt(eta / d), c from the first cell"))
    ax.set(xscale="log", yscale="log", xlabel="lr (the paper's eta)", ylabel="RMS relative gap")
    sample_axis(ax, etas)
    key.legend(ax)
    spread = float(max(norm.values()) / min(norm.values()))
    by_d = [g * np.sqrt(d) for (e, d), g in gaps.items()]
    nulls = {"1/sqrt(d) only": float(max(by_d) / min(by_d)), "no scaling": float(max(gaps.values()) / min(gaps.values()))}
    path = save_figure(fig, outdir / "committee.gap_scaling.png", title=claim_title(
        REGISTRY["committee.gap_scaling"], spread, what="max / min of gap / sqrt(eta / d)"))
    with_d = all(gaps[e, a] > gaps[e, b] for e in etas for a, b in zip(ds, ds[1:]))
    with_eta = all(gaps[a, d] < gaps[b, d] for d in ds for a, b in zip(etas, etas[1:]))
    return ClaimResult(measured=spread, checks={"the gap falls as d grows, at every eta": with_d,
                                                "the gap falls as eta falls, at every d": with_eta},
                       figure=str(path), table=rows, nulls=nulls,
                       message=f"RMS relative gap / sqrt(eta/d) = {[round(float(x), 3) for x in norm.values()]} "
                               f"(max/min {spread:.3g} <= 2.5); max/min of g sqrt(d) {nulls['1/sqrt(d) only']:.3g}, "
                               f"of g {nulls['no scaling']:.3g}")
