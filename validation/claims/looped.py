"""Looped linear transformer claims ([Shi24], Ch. 8; docs/looped.md).

* ``looped.tf_equals_gd``: the looped transformer with Lemma 8.13's weights outputs alpha times the GD iterate
  (numpy and torch, float64), for random prompts and step schedules (Thm 8.14).
* ``looped.fig8_1``: Fig. 8.1 in four panels (Section 8.6): GD vs the exact curve, the torch transformer in float32,
  both bounds, and the large-d panel; the paper's "gap narrowing as n increases" (Section 8.6) is measured three ways:
  it widens on the plotted log axis, narrows in loops needed to reach 1e-3 / 1e-6 and on a linear axis.
* ``looped.mp_limit``: the Marchenko-Pastur curve as the d -> infinity limit of the finite-d theta-average: the gap
  at d = 50..400 (800 full size) shrinks like d^(-2/3) (derived here, docs/looped.md); the finite-d curve is ``looped.finite_size``.
* ``looped.trained``: beyond the paper, a looped transformer with tied (Q, P) and per-loop steps trained on random
  prompts, against the GD construction, the best constant step and the optimal per-loop schedule.

:func:`bench_looped` times the exact curve (eigen-formula) against iterating the torch transformer.
"""
from __future__ import annotations

import time

import numpy as np

import popdyn
from popdyn.models import looped
from popdyn.plot import Key, claim_title, plot_curves, save_figure, subplots

from . import REGISTRY, ClaimResult, claim

__all__ = ["bench_looped"]

_TOL_TF = 1e-10  # looped.tf_equals_gd's tolerance (also drawn in its figure)
_FLOOR = 1e-28  # squared distances below this are at the float64 floor of iterated GD (~1e-32)


def _random_prompt(rng):
    """Random instances: n in [5, 60), d < min(n, 12), T < 40, alpha ~ 3 N(0, 1), unit theta*."""
    n = int(rng.integers(5, 60))
    d = int(rng.integers(1, min(n, 12)))
    T = int(rng.integers(0, 40))
    X = rng.standard_normal((n, d))
    th = rng.standard_normal(d)
    th /= np.linalg.norm(th)
    return X, th, X @ th, 3 * rng.standard_normal(), T


@claim(id="looped.tf_equals_gd", model="looped",
       title="Thm 8.14: the looped transformer with Lemma 8.13's weights outputs alpha * theta_GD^(T), any schedule",
       source="[Shi24, Lemma 8.13, Theorem 8.14]",
       metric="max over prompts and schedules (1/L, 2/(L+mu), random per-loop) of |TF - alpha theta^(T)|_inf / "
              "max(1, |alpha|) (numpy full attention, numpy fast path, torch module; float64)",
       tolerance=_TOL_TF, tolerance_origin="float64 rounding; measured 6.9e-16 on random prompts",
       quick={"prompts": 100, "seed": 0}, full={"prompts": 1000, "seed": 0},
       kind="independent",
       nulls={"no_alpha": "the transformer outputs the GD iterate theta^(T) itself, not alpha theta^(T)",
              "one_loop_short": "an off-by-one in the loop count: loop T outputs alpha theta^(T-1)"})
def tf_equals_gd(size, device, outdir):
    import torch
    from popdyn.sim import looped as sim
    rng = np.random.default_rng(size["seed"])
    rows = []
    for i in range(size["prompts"]):
        X, th, y, a, T = _random_prompt(rng)
        d = X.shape[1]
        L_ = np.linalg.eigvalsh(X.T @ X)[-1]
        for kind, eta in (("1/L", "1/L"), ("2/(L+mu)", "2/(L+mu)"), ("random", rng.uniform(0.05, 1.9, T) / L_)):
            theta = looped.gd(X, y, T, eta)
            short = looped.gd(X, y, T, eta, return_trajectory=True)[T - 1] if T >= 1 else None
            Z0 = looped.build_prompt(X, y, a)
            full = -looped.looped_forward(Z0, *looped.attention_weights_gd(d), T, eta, full=True)[-1, :d]
            net = sim.LoopedTransformer(d, T, device=device)
            Zt = torch.as_tensor(Z0[None], device=device)
            e = torch.as_tensor(looped.step_schedule(np.linalg.eigvalsh(X.T @ X), T, eta)[None], device=device)
            tq = -net(Zt, e)[0, -1, :d].detach().cpu().numpy()
            dev = [np.max(np.abs(v - a * theta)) / max(1, abs(a)) for v in
                   (looped.forward(X, y, a, T, eta), full, tq)]
            outs = (looped.forward(X, y, a, T, eta), full, tq)
            null_no_alpha = max(np.max(np.abs(v - theta)) / max(1, abs(a)) for v in outs)
            null_short = (max(np.max(np.abs(v - a * short)) / max(1, abs(a)) for v in outs) if short is not None
                          else np.nan)
            rows.append({"prompt": i, "schedule": kind, "n": X.shape[0], "d": d, "T": T, "numpy_fast": dev[0],
                         "numpy_full": dev[1], "torch": dev[2], "null_no_alpha": null_no_alpha,
                         "null_one_loop_short": null_short})
    worst = max(max(r["numpy_fast"], r["numpy_full"], r["torch"]) for r in rows)
    vals = np.array([[r["numpy_fast"], r["numpy_full"], r["torch"]] for r in rows])
    fig = plot_curves(np.arange(len(rows)), {k: np.maximum(vals[:, j], 1e-18) for j, k in
                                             enumerate(("numpy fast path", "numpy full attention", "torch module"))},
                      outdir / "looped.tf_equals_gd.png", refs={"tolerance": _TOL_TF}, logy=True,
                      styles={k: {"ls": "", "marker": "."} for k in ("numpy fast path", "numpy full attention",
                                                                      "torch module")},
                      xlabel="case (prompt x schedule)", ylabel="|TF - alpha theta_GD| / max(1, |alpha|)  (0 at 1e-18)",
                      title=claim_title(REGISTRY["looped.tf_equals_gd"], worst, what="max deviation"))
    nulls = {"no_alpha": max(r["null_no_alpha"] for r in rows),
             "one_loop_short": np.nanmax([r["null_one_loop_short"] for r in rows])}
    return ClaimResult(measured=worst, figure=str(fig), table=rows[:30], nulls=nulls,
                       message=f"{len(rows)} (prompt, schedule) pairs: max deviation {worst:.2e} "
                               f"(median {np.median(vals):.1e}); nulls: TF = theta^(T) {nulls['no_alpha']:.2f}, "
                               f"TF = alpha theta^(T-1) {nulls['one_loop_short']:.2f}.")


# ---- Fig. 8.1 -------------------------------------------------------------------------------------------

def _fig_panel_data(n, size, rng):
    """Per prompt: kappa, the exact curve, iterated GD (numpy) and the torch transformer in float32."""
    import torch
    from popdyn.sim import looped as sim
    T, d = size["T"], 4
    X, th, y = looped.sample_prompts(looped.Problem.fig8_1(n), size["prompts"], rng)
    exact = looped.exact_sq_dist(X, th, T, "1/L")
    gd = np.array([np.sum((looped.gd(X[i], y[i], T, "1/L", return_trajectory=True) - th[i]) ** 2, 1)
                   for i in range(len(X))])
    Z0 = torch.as_tensor(np.stack([looped.build_prompt(X[i], y[i], 1.0) for i in range(len(X))]), dtype=torch.float32)
    net = sim.LoopedTransformer(d, T, dtype=torch.float32)
    eta = torch.as_tensor(looped.step_schedule(np.linalg.eigvalsh(np.swapaxes(X, 1, 2) @ X), T, "1/L"),
                          dtype=torch.float32)
    tf32 = sim.curves(net, Z0, torch.as_tensor(th, dtype=torch.float32), 1.0, eta)[1].detach().double().numpy()
    return looped.condition_number(X), exact, gd, tf32


_LEVELS = (1e-3, 1e-6)  # normalized errors ||theta_t - theta*||^2 / ||theta*||^2 at which "loops needed" is read


def _loops_to(log_curve, level):
    """First loop t at which a log curve is at or below ln(level) (None when it never gets there)."""
    hit = np.nonzero(log_curve <= np.log(level))[0]
    return int(hit[0]) if len(hit) else None


def _panel_row(n, t, kappa, exact, gd):
    """One row of Fig. 8.1's table: the gap between the mean log curve and the paper's line -t/kappa, read three
    ways (log axis at t = 10, loops needed to reach each level, linear axis at t = 10)."""
    k_bar, emp = float(kappa.mean()), np.log(exact).mean(0)
    floored = np.all(gd <= 1e3 * _FLOOR, axis=0)
    row = {"n": n, "kappa_mean": k_bar, "kappa_paper": {16: 4.57, 32: 3.13, 64: 2.07, 128: 1.62}.get(n),
           "log_sq_t10": float(emp[10]), "paper_line_t10": -10 / k_bar, "tight_line_t10": float(20 * np.log1p(-1 / k_bar)),
           "log_gap_t10": float(-10 / k_bar - emp[10]),
           "linear_gap_t10": float(np.exp(-10 / k_bar) - np.exp(emp[10])),
           "fitted_slope": float(np.polyfit(t[5:16], emp[5:16], 1)[0]), "paper_slope": -1 / k_bar,
           "rate_ratio": float(np.polyfit(t[5:16], emp[5:16], 1)[0] * -k_bar),
           "float_floor_t": int(np.argmax(floored)) if floored.any() else None,
           "below_paper_line": bool(np.all(np.log(exact) <= np.log(looped.bound_paper(kappa[:, None], t,
                                                                                      squared=True)) + 1e-12))}
    for level in _LEVELS:  # the line -t/kappa_bar reaches ln(level) at t = kappa_bar ln(1/level)
        emp_t, line_t = _loops_to(emp, level), k_bar * np.log(1 / level)
        row.update({f"loops_to_{level:g}": emp_t, f"line_loops_to_{level:g}": float(line_t),
                    f"loop_gap_{level:g}": None if emp_t is None else float(line_t - emp_t)})
    return row


def _gap_message(rows):
    """The paper's "gap narrowing as n increases" (Section 8.6), read on the plotted log axis, in loops and linearly."""
    seq = lambda key, fmt: ", ".join("-" if r[key] is None else format(r[key], fmt) for r in rows)
    ns = ", ".join(str(r["n"]) for r in rows)
    loops = "; ".join(f"to {lv:g}: {seq(f'loops_to_{lv:g}', 'd')} loops against the line's "
                      f"{seq(f'line_loops_to_{lv:g}', '.1f')} (gap {seq(f'loop_gap_{lv:g}', '.1f')})" for lv in _LEVELS)
    return (f"the gap to -t/kappa for n = {ns}: on the plotted log axis at t = 10 it WIDENS "
            f"({seq('log_gap_t10', '.2f')}), and so does the rate ratio fitted slope / (-1/kappa) "
            f"({seq('rate_ratio', '.2f')}); in loops needed it NARROWS ({loops}); on a linear axis at t = 10 it "
            f"NARROWS ({seq('linear_gap_t10', '.2e')}). The paper's 'gap narrowing as n increases' (Section 8.6) holds in "
            f"loops and linearly, not on the log axis it plots (Fig. 8.1).")


def _narrows(rows, key):
    vals = [r[key] for r in rows]
    return None if None in vals else bool(np.all(np.diff(vals) < 0))


@claim(id="looped.fig8_1", model="looped",
       title="Fig. 8.1: log ||theta_t - theta*||^2 below -t/kappa for d = 4, n in {16..128}; the gap to the line widens "
             "on the plotted log axis but narrows in loops needed and on a linear axis",
       source="[Shi24, Section 8.6, Fig. 8.1 (its caption: log axis; setup; kappa values, 'gap narrowing as n "
              "increases'), Theorem 8.16]",
       metric="max over prompts and t <= 200 of | ||theta_t^GD - theta*|| - sqrt(exact (8-g)) | (iterated float64 GD "
              "against the eigen-formula); checks: every curve below the paper's bound e^(-t/kappa) (bound_paper), "
              "the torch float32 transformer within 1e-5 of the exact distance. The gap to the line is reported, "
              "not judged: log axis at t = 10, loops needed to reach 1e-3 and 1e-6, linear axis at t = 10",
       tolerance=1e-12,
       tolerance_origin="float64 rounding of <= 200 GD steps: ~T eps kappa ~ 200 x 2.2e-16 x 5 = 2e-13",
       quick={"ns": [16, 32, 64, 128], "T": 200, "prompts": 10, "seed": 0, "d_large": 200, "prompts_large": 2},
       full={"ns": [16, 32, 64, 128], "T": 200, "prompts": 10, "seed": 0, "d_large": 200, "prompts_large": 8},
       kind="independent",
       nulls={"paper_bound": "the distance is Thm 8.16's bound, ||theta*|| e^(-t/(2 kappa)) (squared: e^(-t/kappa))",
              "tight_bound": "the distance is the tight bound ||theta*|| (1 - 1/kappa)^t (the worst eigen-direction)"})
def fig8_1(size, device, outdir):
    rng = np.random.default_rng(size["seed"])
    t = np.arange(size["T"] + 1)
    fig, axes = subplots(4, panel_size=(4.2, 3.6))
    key = Key("n", size["ns"], ["exact (8-g)", "GD (iterated)", "torch fp32", "-t/kappa (paper bound)",
                                "(1-1/kappa)^(2t) (tight)"])
    panel = lambda a, x, curves: plot_curves(x, {f"n={n} {m}": y for m, y in curves.items()}, ax=a, legend=False,
                                             styles={f"n={n} {m}": key(n, m) for m in curves})
    rows, gap, tf_gap, nulls = [], 0.0, 0.0, {"paper_bound": 0.0, "tight_bound": 0.0}
    for n in size["ns"]:
        kappa, exact, gd, tf32 = _fig_panel_data(n, size, rng)
        gap = max(gap, float(np.max(np.abs(np.sqrt(gd) - np.sqrt(exact)))))
        norm0 = np.sqrt(exact[:, :1])  # ||theta_0 - theta*|| = ||theta*|| (theta_0 = 0)
        for name, curve in (("paper_bound", norm0 * np.sqrt(looped.bound_paper(kappa[:, None], t, squared=True))),
                            ("tight_bound", norm0 * (1 - 1 / kappa[:, None]) ** t)):
            nulls[name] = max(nulls[name], float(np.max(np.abs(np.sqrt(gd) - curve))))
        tf_gap = max(tf_gap, float(np.max(np.abs(np.sqrt(tf32) - np.sqrt(exact)))))
        rows.append(_panel_row(n, t, kappa, exact, gd))
        k_bar, emp = rows[-1]["kappa_mean"], np.log(exact).mean(0)
        panel(axes[0], t, {"exact (8-g)": emp, "GD (iterated)": np.log(np.maximum(gd, 1e-300)).mean(0),
                           "-t/kappa (paper bound)": -t / k_bar})
        panel(axes[1], t[:60], {"exact (8-g)": emp[:60], "torch fp32": np.log(np.maximum(tf32, 1e-45)).mean(0)[:60]})
        panel(axes[2], t[:60], {"exact (8-g)": emp[:60], "-t/kappa (paper bound)": -t[:60] / k_bar,
                                "(1-1/kappa)^(2t) (tight)": 2 * t[:60] * np.log1p(-1 / k_bar)})
    large = looped.Problem.isotropic_gaussian(4 * size["d_large"], size["d_large"])
    X = looped.sample_prompts(large, size["prompts_large"], rng)[0]
    fin, mp = looped.mean_error_over_task(X, 1.0, 30, "1/L", squared=True).mean(0), looped.mp_error_curve(0.25, 30, 2)
    plot_curves(t[:31], {f"theta-average, d = {size['d_large']}": fin, "MP E(2t)": mp}, ax=axes[3], logy=True,
                styles={"MP E(2t)": {"color": "k", "ls": "--"}})
    for ax, title in zip(axes, ("(a) GD vs exact (8-g), d = 4", "(b) torch looped TF, float32, d = 4",
                                "(c) bounds, d = 4", f"(d) d = {size['d_large']}, n = {4 * size['d_large']} vs MP")):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("loop t")
    for ax in axes[:3]:
        ax.set_ylabel(r"mean $\ln\|\theta_t - \theta^*\|^2$")
    axes[3].set_ylabel(r"$(1/d)\, \mathrm{tr}\, (I - A/L)^{2t}$")
    key.legend(fig)
    save_figure(fig, outdir / "looped.fig8_1.png", title=claim_title(REGISTRY["looped.fig8_1"], gap,
                                                                      what="max |GD - exact| (distance)"))
    below = all(r["below_paper_line"] for r in rows)
    return ClaimResult(
        measured=gap, checks={"every curve below -t/kappa": below, "torch fp32 TF within 1e-5 of GD": tf_gap <= 1e-5},
        nulls=nulls,
        figure=str(outdir / "looped.fig8_1.png"), table=rows,
        message=f"GD = exact to {gap:.1e} (distance); torch fp32 {tf_gap:.1e}; every curve below -t/kappa: "
                f"{below}; nulls (max |GD - bound| in distance): paper bound {nulls['paper_bound']:.2f}, tight bound "
                f"{nulls['tight_bound']:.2f}; " + _gap_message(rows),
        details={"torch_fp32_max_abs_gap_distance": tf_gap,
                 "log_gap_t10_widens": bool(np.all(np.diff([r["log_gap_t10"] for r in rows]) > 0)),
                 "linear_gap_t10_narrows": _narrows(rows, "linear_gap_t10"),
                 **{f"loop_gap_{lv:g}_narrows": _narrows(rows, f"loop_gap_{lv:g}") for lv in _LEVELS},
                 "mp_panel_max_rel_gap_t_le_30": float(np.max(np.abs(fin / mp - 1)))})


@claim(id="looped.mp_limit", model="looped",
       title="Marchenko-Pastur E_gamma(t) is the d -> infinity limit of the mean error curve (gamma = 1/4): its "
             "finite-d gap shrinks like d^(-2/3) and is within 5 % at d = 400",
       source="derived here, not in the paper: the Marchenko-Pastur limit of the GD error of [Shi24, Theorem 8.16, "
              "Fig. 8.1] (docs/looped.md)",
       metric="max over t <= 30 of |(1/d) tr (I - A/lambda_max)^t (mean over prompts, n = 4 d) / E_gamma(t) - 1| at "
              "the largest d; check: that gap at most half the gap at the smallest d (d^(-2/3) predicts 1/4 over "
              "8-fold d). Reported per d: the gap, gap d^(2/3), gap d, the gap of the finite-(n, d) curve to MP",
       tolerance=0.05, tolerance_origin="5 % relative for t <= 30, reached by MP from d ~ 300 "
                                        "(at d = 200 the gap is 4-6 %; the finite-d curve: looped.finite_size)",
       quick={"ds": [50, 100, 200, 400], "gamma": 0.25, "T": 30, "prompts_x_d2": 8_000_000, "seed": 0},
       full={"ds": [50, 100, 200, 400, 800], "gamma": 0.25, "T": 30, "prompts_x_d2": 16_000_000, "seed": 0},
       kind="independent",
       nulls={"smallest_d_curve": "no drift with d: the exact finite-(n, d) curve at the smallest d is already "
                                  "the limit",
              "condition_number_rate": "the mean error decays at the worst direction's rate (1 - x_-/x_+)^t, "
                                       "x_+- = (1 +- sqrt(gamma))^2 (the condition-number bound)"})
def mp_limit(size, device, outdir):
    from .looped_finite import gap_figure, theta_averages
    T, g = size["T"], size["gamma"]
    mp = looped.mp_error_curve(g, T, 1)
    rows, panels = [], []
    for i, d in enumerate(size["ds"]):
        sim = theta_averages(d, g, T, max(2, int(np.ceil(size["prompts_x_d2"] / d**2))), size["seed"] + i)
        F = looped.finite_error_curve(sim["n"], d, T, 1)
        gap = float(np.max(np.abs(sim["err"] / mp - 1)))
        rows.append({"d": d, "n": sim["n"], "prompts": sim["prompts"], "rel_gap": gap, "gap_x_d^(2/3)": gap * d ** (2 / 3),
                     "gap_x_d": gap * d, "finite_curve_gap_to_mp": float(np.max(np.abs(F / mp - 1))),
                     "rel_gap_t30": float(sim["err"][-1] / mp[-1] - 1),
                     "rel_se_t30": float(sim["err_se"][-1] / sim["err"][-1])})
        panels.append((d, sim, F))
    worst, first = rows[-1]["rel_gap"], rows[0]["rel_gap"]
    last = panels[-1][1]["err"]
    rate = 1 - (1 - g**0.5) ** 2 / (1 + g**0.5) ** 2
    nulls = {"smallest_d_curve": float(np.max(np.abs(last / panels[0][2] - 1))),
             "condition_number_rate": float(np.max(np.abs(last / rate ** np.arange(T + 1) - 1)))}
    slope = float(-np.polyfit(np.log([r["d"] for r in rows]), np.log([r["rel_gap"] for r in rows]), 1)[0])
    path = outdir / "looped.mp_limit.png"
    gap_figure(panels, mp, path, claim_title(REGISTRY["looped.mp_limit"], worst,
                                             what=f"max |simulation / MP - 1| at d = {rows[-1]['d']}",
                                             note=f"gap ~ d^-{slope:.2f}"), REGISTRY["looped.mp_limit"].tolerance)
    seq = lambda k, f=".3f": ", ".join(format(r[k], f) for r in rows)
    return ClaimResult(
        measured=worst, figure=str(path), table=rows, nulls=nulls,
        checks={"gap shrinks with d (largest d: at most half the smallest d's)": worst <= first / 2},
        message=f"max rel. gap of MP over t <= {T} at d = {seq('d', 'd')}: {seq('rel_gap')} (fitted d^-{slope:.2f}; "
                f"gap d^(2/3) = {seq('gap_x_d^(2/3)', '.2f')}, gap d = {seq('gap_x_d', '.1f')}); the finite-(n, d) "
                f"curve differs from MP by {seq('finite_curve_gap_to_mp')}: the gap is finite-size (lambda_max "
                f"below n x_+ by a Tracy-Widom shift, and the bulk's 1/d correction), the MP curve is the limit. "
                f"Nulls at d = {rows[-1]['d']}: the d = {rows[0]['d']} curve {nulls['smallest_d_curve']:.3f}, the "
                f"condition-number rate {nulls['condition_number_rate']:.3f}.",
        details={"fitted_exponent": slope})


# ---- beyond the paper: training ---------------------------------------------------------------------------

def _weight_summary(model, d):
    """How GD-like the trained weights are: scalar parts of the d x d blocks and the alpha-slot leakage."""
    Q, P = (w.detach().cpu().numpy().astype(float) for w in (model.Q, model.P))
    off = lambda M: float(np.linalg.norm(M - np.trace(M) / d * np.eye(d)) / np.linalg.norm(M))
    return {"Q_scale": float(np.trace(Q[:d, :d]) / d), "P_scale": float(np.trace(P[:d, :d]) / d),
            "Q_offscalar_rel": off(Q[:d, :d]), "P_offscalar_rel": off(P[:d, :d]),
            "P_alpha_column": float(np.linalg.norm(P[:, d])), "Q_alpha_row_col": float(np.linalg.norm(Q[d, :d]) +
                                                                                       np.linalg.norm(Q[:d, d]))}


@claim(id="looped.trained", model="looped",
       title="Beyond the paper: a trained looped linear transformer (tied Q, P; per-loop steps) learns preconditioned "
             "GD with a near-optimal step schedule",
       source="derived here, not in the paper: a looped transformer trained with fixed-network steps against the GD of "
              "[Shi24, Theorem 8.14] (docs/looped.md)",
       metric="max(r, 1/r), r = mean ||TF_T/alpha - theta*||^2 of the trained network on held-out prompts / that of "
              "GD with the optimal per-loop schedule (the best Gamma = c I preconditioned GD): two-sided, so a "
              "theory optimum that training beats by a factor 1.5 fails as well as a training that misses it",
       tolerance=1.5,
       tolerance_origin="our acceptance: within a factor 1.5 of the optimum after a few hundred Adam steps; the "
                        "best constant-step GD (one fixed network of the paper's form) is ~4x the optimum at T = 4",
       quick={"context": 32, "d": 4, "loops": 4, "steps": 1000, "batch": 128, "lr": 0.01, "prompts": 2000, "seed": 0},
       full={"context": 32, "d": 4, "loops": 4, "steps": 4000, "batch": 256, "lr": 0.01, "prompts": 20000,
             "seed": 0},
       kind="training",
       nulls={"paper_gd": "training learns the paper's GD, eta = 1/L at every loop (Thm 8.16)",
              "best_constant_step": "training learns the best single step size (one fixed network of the paper's "
                                    "form), not a per-loop schedule"})
def trained(size, device, outdir):
    from popdyn.sim import looped as sim
    problem = looped.Problem.isotropic_gaussian(size["context"], size["d"])
    T = size["loops"]
    model, losses = sim.train(problem, loops=T, steps=size["steps"], batch=size["batch"], lr=size["lr"],
                              seed=size["seed"], device=device)
    tr = popdyn.simulate(problem, loops=T, seeds=4, prompts=size["prompts"] // 4, model=model, seed=10_000,
                         device=device)
    X, th, _ = looped.sample_prompts(problem, size["prompts"], size["seed"] + 1)
    eta_opt, _ = looped.optimal_schedule(problem, T, prompts=size["prompts"], seed=size["seed"] + 2)
    lmax = float(np.mean(np.linalg.eigvalsh(np.swapaxes(X, 1, 2) @ X)[:, -1]))
    cs = np.linspace(0.2, 1.8, 81)
    const = [looped.exact_sq_dist(X, th, T, c / lmax)[:, -1].mean() for c in cs]
    c_best = float(cs[int(np.argmin(const))])
    curves = {"trained TF": tr["sq_dist"].mean(0), "GD, optimal schedule": looped.exact_sq_dist(X, th, T, eta_opt).mean(0),
              "GD, best constant step": looped.exact_sq_dist(X, th, T, c_best / lmax).mean(0),
              "GD, eta = 1/L (paper)": looped.exact_sq_dist(X, th, T, "1/L").mean(0)}
    ratio = float(curves["trained TF"][-1] / curves["GD, optimal schedule"][-1])
    two_sided = lambda r: max(r, 1 / r)  # noqa: E731
    nulls = {name: two_sided(float(curves["trained TF"][-1] / curves[key][-1])) for name, key in
             (("paper_gd", "GD, eta = 1/L (paper)"), ("best_constant_step", "GD, best constant step"))}
    w = _weight_summary(model, size["d"])
    eff = np.sort(model.eta.detach().cpu().numpy() * w["Q_scale"] * w["P_scale"] * problem.context)
    fig, axes = subplots(2)
    plot_curves(np.arange(T + 1), curves, ax=axes[0], logy=True, xlabel="loop t", ylabel="mean ||theta_t - theta*||^2",
                discrete=True, title=f"trained / optimal at T = {T}: {ratio:.2f}")
    plot_curves(np.arange(1, len(losses) + 1), {"training loss": losses}, ax=axes[1], logy=True, xlabel="Adam step",
                ylabel="batch loss at loop T", legend=False)
    save_figure(fig, outdir / "looped.trained.png", title=claim_title(REGISTRY["looped.trained"], max(ratio, 1 / ratio),
                                                                       what="max(r, 1/r), r = trained / optimal"))
    table = [{"method": k, **{f"t{t}": float(v[t]) for t in range(T + 1)}} for k, v in curves.items()]
    return ClaimResult(
        measured=max(ratio, 1 / ratio), figure=str(outdir / "looped.trained.png"), table=table, nulls=nulls,
        message=f"trained TF at T = {T}: {curves['trained TF'][-1]:.2e} vs optimal-schedule GD "
                f"{curves['GD, optimal schedule'][-1]:.2e} (ratio {ratio:.2f}), best constant step "
                f"{curves['GD, best constant step'][-1]:.2e}, eta = 1/L {curves['GD, eta = 1/L (paper)'][-1]:.2e}; "
                f"weights: Q, P blocks scalar to {max(w['Q_offscalar_rel'], w['P_offscalar_rel']):.3f}, "
                f"alpha-slot leakage |P[:, d]| = {w['P_alpha_column']:.2f}.",
        details={**w, "ratio_trained_over_optimal": ratio, "effective_steps_times_n_sorted": eff.tolist(), "optimal_steps_times_n": (eta_opt * problem.context).tolist(),
                 "best_constant_step_times_lmax": c_best, "final_loss": float(np.mean(losses[-20:]))})


# ---- benchmark -------------------------------------------------------------------------------------------

def bench_looped(prompts=10_000, T=1000, n=32, d=4, seed=0, device="cpu"):
    """Seconds for the exact error curves (eigen-formula, numpy) and for iterating the torch looped transformer
    (GD weights, float64, curves recorded every loop) over ``T`` loops on ``prompts`` prompts; and their ratio."""
    import torch
    from popdyn.sim import looped as sim
    problem = looped.Problem.isotropic_gaussian(n, d)
    X, th, y = looped.sample_prompts(problem, prompts, seed)
    looped.exact_error(X[:2], th[:2], 1.0, 2, "1/L")  # JIT warm-up, not timed
    t0 = time.perf_counter()
    err = looped.exact_error(X, th, 1.0, T, "1/L")
    t_exact = time.perf_counter() - t0
    Z0 = torch.as_tensor(np.concatenate([np.concatenate([X, y[..., None]], 2),
                                         np.r_[np.zeros(d), 1.0][None, None].repeat(prompts, 0)], 1), device=device)
    theta = torch.as_tensor(th, device=device)
    net = sim.LoopedTransformer(d, T, device=device)
    t0 = time.perf_counter()
    with torch.no_grad():
        e_t = sim.curves(net, Z0, theta, 1.0, sim.step_schedule(Z0, T, "1/L", torch.float64))[0]
        if device != "cpu":
            torch.cuda.synchronize()
    t_torch = time.perf_counter() - t0
    gap = float(np.max(np.abs(e_t.cpu().numpy() - err)))
    return {"prompts": prompts, "T": T, "n": n, "d": d, "exact_s": t_exact, "torch_s": t_torch,
            "ratio": t_torch / t_exact, "max_abs_gap": gap}
