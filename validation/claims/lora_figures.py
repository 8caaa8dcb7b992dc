"""The figures of Dayi & Chen ([Dayi25], App. B, Fig. 1) as claims at CPU scale.

The paper's figures carry no numbers: each claim below states what the population
theory predicts for the figure's experiment and measures finite-size online SGD against it.

- ``lora.fig2b_overlap_ode`` (R1, Fig. 2b): m_t of frozen-c_hat SGD on random quantised instances
  against the finite-delta overlap ODE (``convention="corrected"``, an extension of the recursion of App. C.1, docs/lora.md);
  the paper's delta -> 0 population ODE (App. C.1) is reported beside it.
- ``lora.fig6_he3_plateau`` (R2, Figs 6 / 1b): He3 escape time tau(m0 -> 0.1) in units of 1/max|h|
  grows with xi from the fine-tuning regime to the GLM value; ReLU has no plateau; SGD escape times.
- ``lora.fig3a_lazy_floor`` (R3, Fig. 3a): SGD's online loss against Phi(m_t) of the finite-delta ODE, per
  time, and its end below the linearised (lazy) model's loss floor, at xi = sqrt(k).
- ``lora.fig2_joint_speedup`` (R4, Figs 2a/2b, Section 4): **extension**: jointly training c_hat against
  freezing it, paired seeds; joint must be faster by more than 3 standard errors (Bonferroni over the
  c_hat step sizes tried); the paper's "roughly twice" as fast is reported.

Figs 4 and 5 (outside A2) are reproduced against the general-position theory in ``lora_general.py``
(``lora.fig4_activations``, ``lora.fig5_nonorthogonal``, ``lora.fig5b_instances``); Fig. 4's joint c_hat training
and the polynomial activations at xi = sqrt(k) are simulation-only (docs/lora.md, General position).

Common setting (unlike the paper's N2 scaling and unit-sphere c, which the theory does not cover):
normalisation N1, orthonormal features, c and c_hat in {+-1/sqrt k}^k, lambda = 1, step size
``lr = delta / d``, time in ``tau = t / d``; m0 = sign(h(0)) * 0.5 / sqrt(d) unless said otherwise.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
from scipy import integrate
from scipy.special import ndtri

import popdyn
from popdyn import dynamics
from popdyn.models import lora
from popdyn.plot import Key, claim_title, plot_curves

from . import REGISTRY, ClaimResult, claim
from .lora import _q

__all__ = ["NOT_REPRODUCED", "joint_frozen_ratio"]

#: Figures of the paper that no claim reproduces, with the reason (Figs 4 and 5: ``lora_general.py``).
NOT_REPRODUCED = {
    "Fig. 4 (joint c_hat; polynomial activations at xi = sqrt(k))": "simulation-only: the c_hat step has no 1/d, so "
        "its noise is not small, and the theory's c_hat aligns with -c faster than SGD's (docs/lora.md, General "
        "position)",
}



def _sign(x):
    return 1.0 if float(x) >= 0 else -1.0


def _run_pair(problem, *, d, delta, tau, seeds, device, m0=None, conventions=("corrected", "paper"), run_sgd=True,
              **sim_kw):
    """Theory (one Prediction per ODE convention) and SGD (None unless ``run_sgd``) on the same horizon."""
    kw = {"d": d, "lr": delta / d, "steps": int(round(tau * d))}
    if m0 is not None:
        kw["m0"] = m0
    with warnings.catch_warnings():  # the paper's ODE is run outside its regime (delta > 0.01) on purpose
        warnings.filterwarnings("ignore", category=popdyn.RegimeWarning, message=".*paper ODE")
        preds = {conv: popdyn.predict(problem, convention=conv, **kw) for conv in conventions}
    sim = popdyn.simulate(problem, seeds=seeds, device=device, **kw, **sim_kw) if run_sgd else None
    return preds, sim


def _on_grid(pred, t, name="m"):
    """A Prediction's observable interpolated onto the step grid ``t``."""
    return np.interp(t, pred.t, np.asarray(pred.observables[name], dtype=float))


# ---- R1: Fig. 2b, m_t against the finite-delta ODE (and the paper's delta -> 0 ODE) ----------------------
@claim(id="lora.fig2b_overlap_ode", model="lora",
       title="Fig. 2b: frozen-c_hat SGD overlap m_t follows the finite-delta overlap ODE (extension of the "
             "paper's delta -> 0 population ODE of App. C.1, which is reported)",
       source="[Dayi25, App. B (Fig. 2b), App. C.1 (the population recursion)]",
       metric="max over instances and tau of |mean_SGD m - m_corrected| / (q SD/sqrt(R) + 0.01); "
              "infinite if any seed ends on the side opposite to sign(h(0))",
       tolerance=1.0,
       tolerance_origin="acceptance: gap <= q SD/sqrt(R) + 0.01 (O(delta/d) + O(1/sqrt d) corrections "
                        "at d >= 1000, delta <= 0.5): per time the seed mean over its SE is a Student t with R - 1 = "
                        "15 d.o.f., q its quantile at family-wise 0.02 % over times and instances (Bonferroni, in "
                        "place of a normal 3: 8.4 quick, 199 times x 2 instances; 8.8 full, x 4). False-failure bound 2e-4 while "
                        "the finite-d bias stays within the 0.01 (recorded 0.14 of the band at 8 seeds, quick)",
       kind="training",
       nulls={"paper's ODE": "the paper's population ODE (convention=\"paper\", delta -> 0: no normalisation "
                             "drift), same m0"},
       quick={"k": 8, "xi": 1.0, "d": 1000, "delta": 0.1, "tau": 20.0, "seeds": 16, "instances": 2},
       full={"k": 8, "xi": 1.0, "d": 2000, "delta": 0.1, "tau": 40.0, "seeds": 16, "instances": 4})
def fig2b_overlap_ode(size, device, outdir):
    """R1: per instance, SGD mean m_t vs the finite-delta ODE (tested) and the paper's delta -> 0 ODE (reported)."""
    rows, curves, bands, worst, worst_paper = [], {}, {}, 0.0, 0.0
    R, d = size["seeds"], size["d"]
    for inst in range(size["instances"]):
        problem = lora.Problem.orthonormal(size["k"], size["xi"], "relu", seed=inst)
        s = _sign(lora.h0(problem))
        preds, sim = _run_pair(problem, d=d, delta=size["delta"], tau=size["tau"], seeds=R, device=device,
                               m0=s * 0.5 / math.sqrt(d))
        m = np.asarray(sim["m"], dtype=float)
        mean, sd = m.mean(0), m.std(0, ddof=1)
        allowed = _q(R, (len(mean) - 1) * size["instances"]) * sd / math.sqrt(R) + 0.01
        gap = {c: np.abs(_on_grid(p, sim.t) - mean) for c, p in preds.items()}
        signs_ok = bool(np.all(np.sign(m[:, -1]) == s))
        ratio = float(np.max(gap["corrected"] / allowed)) if signs_ok else math.inf
        worst = max(worst, ratio)
        worst_paper = max(worst_paper, float(np.max(gap["paper"] / allowed)) if signs_ok else math.inf)
        rows.append({"instance": inst, "h0": float(lora.h0(problem)), "sup_gap_corrected": float(gap["corrected"].max()),
                     "sup_gap_paper": float(gap["paper"].max()), "allowed_min": float(allowed.min()),
                     "final_sgd": float(mean[-1]), "final_corrected": float(_on_grid(preds["corrected"], sim.t)[-1]),
                     "final_paper": float(_on_grid(preds["paper"], sim.t)[-1]), "signs_ok": signs_ok,
                     "ratio": ratio})
        tau = sim.t / d
        curves[f"SGD #{inst}"] = mean
        bands[f"SGD #{inst}"] = 2 * sd
        curves[f"finite-delta ODE #{inst}"] = _on_grid(preds["corrected"], sim.t)
        curves[f"delta -> 0 ODE #{inst}"] = _on_grid(preds["paper"], sim.t)
    key = Key("instance", range(size["instances"]), ["SGD", "finite-delta ODE", "delta -> 0 ODE"])
    styles = {k: key(int(k.split("#")[1]), k.split(" #")[0]) for k in curves}
    fig = plot_curves(tau, curves, Path(outdir) / "lora.fig2b_overlap_ode.png", bands=bands, styles=styles,
                      xlabel=r"$\tau = t/d$", ylabel=r"$m_t = \langle u_t, u\rangle$",
                      title=claim_title(REGISTRY["lora.fig2b_overlap_ode"], worst, what="max gap / allowed",
                                        note=f"ReLU k={size['k']} xi={size['xi']} d={d} delta={size['delta']}"))
    paper_gap = max(r["sup_gap_paper"] for r in rows)
    msg = (f"finite-delta ODE within {worst:.3g} of the allowed band (<= 1 passes); paper's delta -> 0 ODE sup gap "
           f"{paper_gap:.3g} vs corrected {max(r['sup_gap_corrected'] for r in rows):.3g}")
    return ClaimResult(measured=worst, figure=str(fig), table=rows, message=msg + f"; paper's ODE {worst_paper:.3g} "
                       "of the allowed band", nulls={"paper's ODE": worst_paper}, details={"paper_sup_gap": paper_gap})


# ---- R2: Figs 6 / 1b, the He3 plateau grows with xi ------------------------------------------------------
def _hmax(problem, n=2001):
    """max over m in [-1, 1] of |h(m)| on a grid of ``n`` points."""
    return float(np.max(np.abs(lora.h(problem, np.linspace(-1.0, 1.0, n)))))


def _escape_theory(problem, m0, level):
    """Paper's-ODE escape time tau(m0 -> level) * max|h| toward sign(h0) (R2 units)."""
    s = _sign(lora.h0(problem))
    return lora.time_to_overlap(problem, s * m0, s * level) * _hmax(problem)


def _escape_glm(act, d, level):
    """The same normalised escape time for the GLM limit h = 2 K'(m) ([Dayi25, Remark 15], corrected)."""
    hm = lambda m: float(lora.glm_h(act, m))
    hmax = float(np.max(np.abs(lora.glm_h(act, np.linspace(-1.0, 1.0, 2001)))))
    val, _ = integrate.quad(lambda m: 1.0 / (hm(m) * (1 - m * m)), 1 / math.sqrt(d), level, limit=200)
    return val * hmax


_THEORY_HORIZON = 4  # the ODE escape time is timed on 4 x the SGD horizon (SGD runs not escaped count as late)


def _sgd_escape(problem, d, delta, tau, seeds, level, device):
    """SGD and ODE escape times in units of 1/max|h| (lr t max|h|), and the relative noise eps of the escape.

    ``eps = 2 delta sqrt(B0(0) tau_esc / d) / m0``: the SD of the martingale part of m accumulated over the
    finite-delta-ODE escape (per-step variance ~ 4 lr^2 B0), relative to m0 = 1/sqrt(d). The mean-field ODE
    holds when eps << 1; its escape-time bias is second order, O(eps^2) (docs/lora.md). The ODEs run
    ``_THEORY_HORIZON`` times longer than SGD, so that a theory escaping after the SGD horizon is still timed.
    """
    s, m0 = _sign(lora.h0(problem)), 1 / math.sqrt(d)
    preds, _ = _run_pair(problem, d=d, delta=delta, tau=_THEORY_HORIZON * tau, seeds=seeds, device=device,
                         m0=s * m0, run_sgd=False)
    sim = popdyn.simulate(problem, d=d, lr=delta / d, steps=int(round(tau * d)), m0=s * m0, seeds=seeds,
                          device=device)
    unit = (delta / d) * _hmax(problem)  # steps -> paper ODE time (lr t) -> units of 1/max|h|
    esc = lambda t, m: dynamics.escape_time(np.asarray(t, dtype=float), np.maximum(s * np.asarray(m), 0.0), level)
    t_sgd = [esc(sim.t, row) for row in np.asarray(sim["m"], dtype=float)]  # progress toward sign(h0) only
    t_th = {c: esc(p.t, p["m"]) for c, p in preds.items()}
    tau_esc = (t_th["corrected"] or np.inf) / d
    eps = 2 * delta * math.sqrt(float(lora.B0(problem, 0.0, n=1 << 13)[0]) * tau_esc / d) / m0  # exact: G = I
    conv = lambda t: None if t is None else t * unit
    return [conv(t) for t in t_sgd], {c: conv(t) for c, t in t_th.items()}, eps


# A plateau means the escape time grows as m0 shrinks. Slowdown tau(m0/10 -> 0.1)/tau(m0 -> 0.1) at
# m0 = 1/sqrt(1000): constant drift <= 0.1/(0.1 - m0) = 1.46; h ~ m: ln(10/m0')/ln(0.1/m0) = 3.0;
# h ~ m^2 (GLM He3): 14. So "plateau" iff the slowdown exceeds 2, between the first and the other two.
_PLATEAU_SLOWDOWN = 2.0


def _theory_medians(size):
    """Median over instances of the normalised escape time per xi, from m0 = 1/sqrt(d), and its slowdown
    when m0 is 10 times smaller, for He3 and ReLU."""
    k, d, lvl = size["k"], size["d"], size["level"]
    med, slow = {}, {}
    for act in ("he3", "relu"):
        out = {m0: [float(np.median([_escape_theory(lora.Problem.orthonormal(k, xi, act, seed=i), m0, lvl)
                                     for i in range(size["instances"])])) for xi in size["xis"]]
               for m0 in (1 / math.sqrt(d), 0.1 / math.sqrt(d))}
        a, b = out.values()
        med[act], slow[act] = a, [y / x for x, y in zip(a, b)]
    return med, slow


def _sgd_row(k, xi, delta, tau, size, device):
    """SGD against finite-delta-ODE escape for He3 at one xi; ``ratio`` = |log gap| / (q SE + eps^2), q the Student-t quantile
    over the SGD-checked xi.

    SGD runs in dimension ``size["sgd_d"]`` when given (default ``size["d"]``, which also sets the theory's m0)."""
    t_sgd, t_th, eps = _sgd_escape(lora.Problem.orthonormal(k, xi, "he3", seed=0), size.get("sgd_d", size["d"]),
                                   delta, tau, size["seeds"], size["level"], device)
    ok = [t for t in t_sgd if t is not None]
    row = {"xi": xi, "delta": delta, "corrected": t_th["corrected"], "paper": t_th["paper"],
           "sgd_escaped": len(ok), "seeds": len(t_sgd), "eps": eps, "ratio": math.inf}
    med_sgd = float(np.median([math.inf if t is None else t for t in t_sgd]))  # censored runs count as late
    glm = _escape_glm("he3", size["d"], size["level"])
    row.update(glm=glm, ratio_paper=math.inf, ratio_glm=math.inf)
    if t_th["corrected"] is not None and math.isfinite(med_sgd) and len(ok) >= 2:
        se = math.sqrt(math.pi / 2) * np.log(ok).std(ddof=1) / math.sqrt(len(t_sgd))  # SE of a median
        q = _q(len(t_sgd), len(size["sgd"]))
        units = lambda t: math.inf if t is None else float(abs(math.log(med_sgd / t)) / (q * se + eps**2))
        row.update(sgd_median=med_sgd, ratio=units(t_th["corrected"]), ratio_paper=units(t_th["paper"]),
                   ratio_glm=units(glm))
    return row


@claim(id="lora.fig6_he3_plateau", model="lora",
       title="Figs 6/1b: the He3 plateau at initialisation grows with xi towards the GLM escape time; ReLU has none",
       source="[Dayi25, App. B (Fig. 6), Fig. 1b]",
       metric="max over the SGD-checked xi of |log median tau_SGD - log tau_corrected| / (q SE(median log tau_SGD) "
              "+ eps^2); infinite unless the theory shows a plateau (escape time growing as m0 shrinks) "
              "at the largest xi but not the smallest, and none for ReLU",
       tolerance=1.0,
       tolerance_origin="q standard errors of the seed median of log escape times (runs not escaped by the "
                        "horizon count as late; SE sqrt(pi/2) sd/sqrt(S)), q the Student-t quantile (S - 1 = 15 "
                        "d.o.f.) at family-wise 0.02 % over the SGD-checked xi (Bonferroni: 4.9 quick, 1 xi; 5.5 "
                        "full, 3 xi), plus eps^2, the second-order bias of a mean-field escape time when the "
                        "martingale noise accumulated over the escape is eps times m0 (eps = 2 delta sqrt(B0(0) "
                        "tau_esc/d)/m0). False-failure bound 2e-4 while the bias stays within eps^2 (recorded 0.08 "
                        "units at 8 seeds, quick)",
       quick={"k": 20, "d": 1000, "level": 0.1, "instances": 9,
              "xis": [1.0, 2.0, math.sqrt(20), 8.0, 16.0, 32.0, 64.0, 128.0],
              "sgd": [[1.0, 0.005, 35.0]], "seeds": 16},
       kind="training",
       nulls={"GLM limit": "the GLM escape time (h = 2K'(m), the xi -> inf plateau) at every xi"},
       full={"k": 20, "d": 1000, "level": 0.1, "instances": 25,
             "xis": [1.0, 2.0, math.sqrt(20), 8.0, 16.0, 32.0, 64.0, 128.0],
             "sgd": [[1.0, 0.005, 35.0], [2.0, 0.002, 30.0], [math.sqrt(20), 0.0005, 60.0]], "seeds": 16})
def fig6_he3_plateau(size, device, outdir):
    """R2: theory medians over instances per xi (He3 and ReLU), GLM value, and SGD escape times."""
    k, d, lvl = size["k"], size["d"], size["level"]
    med, slow = _theory_medians(size)
    glm = _escape_glm("he3", d, lvl)
    rows = [{"xi": xi, "he3_median": a, "he3_slowdown": b, "relu_median": c, "relu_slowdown": e}
            for xi, a, b, c, e in zip(size["xis"], med["he3"], slow["he3"], med["relu"], slow["relu"])]
    plateau_grows = bool(slow["he3"][0] <= _PLATEAU_SLOWDOWN < slow["he3"][-1])
    relu_flat = bool(max(slow["relu"]) <= _PLATEAU_SLOWDOWN)
    sgd_rows = [_sgd_row(k, xi, delta, tau, size, device) for xi, delta, tau in size["sgd"]]
    ratio = max(r["ratio"] for r in sgd_rows)
    measured = ratio if (plateau_grows and relu_flat) else math.inf
    null_glm = max(r["ratio_glm"] for r in sgd_rows)
    null_paper = max(r["ratio_paper"] for r in sgd_rows)
    fig = plot_curves(np.log2(size["xis"]), {"He3 theory (median)": med["he3"], "ReLU theory (median)": med["relu"]},
                      Path(outdir) / "lora.fig6_he3_plateau.png", refs={f"GLM h=2K'(m): {glm:.3g}": glm},
                      logy=True, xlabel=r"$\log_2 \xi$", ylabel=r"escape time $\tau(m_0\to0.1)\cdot\max|h|$",
                      styles={"He3 theory (median)": {"marker": "o"}, "ReLU theory (median)": {"marker": "s"}},
                      title=claim_title(REGISTRY["lora.fig6_he3_plateau"], measured, what="SGD / ODE escape-time ratio",
                                        note=f"k={k}, d={d}, m0=1/sqrt(d); inf unless the He3 plateau grows and ReLU "
                                             "has none"))
    he3 = med["he3"]
    msg = (f"He3 medians {he3[0]:.3g} (xi={size['xis'][0]:.3g}) -> {he3[-1]:.3g} (xi={size['xis'][-1]:.3g}), "
           f"GLM {glm:.3g}; slowdown m0->m0/10: He3 {slow['he3'][0]:.3g} -> {slow['he3'][-1]:.3g}, ReLU max "
           f"{max(slow['relu']):.3g} (plateau iff > {_PLATEAU_SLOWDOWN:g}); SGD vs finite-delta ODE {ratio:.3g}")
    return ClaimResult(measured=measured, figure=str(fig), table=rows, nulls={"GLM limit": null_glm},
                       message=msg + f"; nulls: GLM escape time {null_glm:.3g}, paper's delta -> 0 ODE {null_paper:.3g}",
                       details={"glm": glm, "sgd": sgd_rows, "plateau_grows": plateau_grows, "paper_ode": null_paper,
                                             "relu_flat": relu_flat})


# ---- R3: Fig. 3a, the lazy floor against the LoRA loss ------------------------------------------------------
_M_ALLOW = 0.01  # R1: the finite-delta ODE tracks SGD's m_t to 0.01 (O(delta/d) + O(1/sqrt d)) at d >= 1000


def _window_means(pred, t, steps, name):
    """A Prediction's observable averaged over the steps s = 0..steps nearest to each recorded step of ``t``:
    the same windows as the simulation's online ``loss``."""
    s = np.arange(steps + 1)
    idx = np.searchsorted((t[:-1] + t[1:]) / 2, s, side="right")
    vals = np.interp(s, pred.t, np.asarray(pred.observables[name], dtype=float))
    return np.bincount(idx, vals, minlength=len(t)) / np.bincount(idx, minlength=len(t))


@claim(id="lora.fig3a_lazy_floor", model="lora",
       title="Fig. 3a: at xi = sqrt(k) SGD's loss follows Phi(m_t) of the finite-delta overlap ODE down below the "
             "linearised (lazy) model's floor",
       source="[Dayi25, App. B (Fig. 3a)]",
       metric="max over recorded t of |mean_SGD loss(t) - Phi(m_corr)(t)| / (q SE_t + 0.01 |h(m_corr(t))|), q the "
              "Student-t quantile at family-wise 0.02 % over the recorded times: the "
              "online SGD loss (mean over seeds, per recording window) against the finite-delta ODE's Phi(m_t) "
              "averaged over the same window; the SGD loss must also end below the lazy floor",
       tolerance=1.0,
       tolerance_origin="per time: q standard errors of the seed mean of the windowed online loss (a Student t "
                        "with S - 1 = 15 d.o.f.; q its quantile at family-wise 0.02 % over the recorded times, "
                        "Bonferroni: 6.8 quick, 33 times; 7.0 full, 49), plus the finite-d allowance of lora.fig2b_overlap_ode "
                        "(0.01 on m at d >= 1000) carried to the loss through |dPhi/dm| = |h(m)| (the Jensen gap "
                        "E Phi(m_t) - Phi(E m_t) ~ |h'| Var(m_t)/2 <= 0.01 at d = 1000, SD(m_t) <= 0.04, is inside "
                        "it). False-failure bound 2e-4 while the bias stays within the allowance (recorded 0.25 "
                        "units at 8 seeds, quick). Check: final SGD loss / lazy floor < 1 (the paper's claim; no "
                        "noise model)",
       kind="training",
       nulls={"paper's ODE": "Phi(m_t) of the paper's population ODE (convention=\"paper\", delta -> 0: no "
                             "normalisation drift)"},
       quick={"k": 8, "d": 1000, "delta": 0.02, "tau": 16.0, "seeds": 16, "n_points": 33},
       full={"k": 8, "d": 2000, "delta": 0.02, "tau": 24.0, "seeds": 16, "n_points": 49})
def fig3a_lazy_floor(size, device, outdir):
    """R3: c_hat = c (so Phi(1) = 0), xi = sqrt(k), normalisation N0 (the model the linearisation expands)."""
    k, d = size["k"], size["d"]
    steps = int(round(size["tau"] * d))
    base = lora.Problem.orthonormal(k, math.sqrt(k), "relu", seed=0)
    problem = lora.Problem(base.G, base.lam, base.c, base.c, base.xi, "relu", normalisation="N0")
    floor = float(lora.lazy_floor(problem))
    sim = popdyn.simulate(problem, d=d, lr=size["delta"] / d, steps=steps, seeds=size["seeds"], device=device,
                          n_points=size["n_points"])
    pred = popdyn.predict(problem, d=d, lr=size["delta"] / d, steps=steps, n_points=min(steps + 1, 4001))
    with warnings.catch_warnings():  # the paper's ODE outside its regime, on purpose (the null)
        warnings.filterwarnings("ignore", category=popdyn.RegimeWarning)
        pred_paper = popdyn.predict(problem, d=d, lr=size["delta"] / d, steps=steps, n_points=min(steps + 1, 4001),
                                    convention="paper")
    t = np.asarray(sim.t)
    loss = np.asarray(sim["loss"], dtype=float)
    mean, se = loss.mean(0), loss.std(0, ddof=1) / math.sqrt(loss.shape[0])
    theory = _window_means(pred, t, steps, "loss")
    q = _q(loss.shape[0], len(t))
    allowed = q * se + _M_ALLOW * np.abs(lora.h(problem, _on_grid(pred, t)))
    gap = np.abs(mean - theory) / allowed
    theory_paper = _window_means(pred_paper, t, steps, "loss")
    gap_paper = np.abs(mean - theory_paper) / (q * se + _M_ALLOW * np.abs(lora.h(problem, _on_grid(pred_paper, t))))
    tail = loss[:, -max(1, loss.shape[1] // 10):].mean(1)
    below = float(tail.mean() / floor)
    fig = plot_curves(t / d, {"SGD loss (mean)": mean, "theory Phi(m_t), finite-delta ODE": theory},
                      Path(outdir) / "lora.fig3a_lazy_floor.png", bands={"SGD loss (mean)": 3 * se},
                      refs={f"lazy floor {floor:.3g}": floor}, logy=True, xlabel=r"$\tau = t/d$",
                      ylabel=r"loss $\Phi$", styles={"theory Phi(m_t), finite-delta ODE": {"color": "k", "ls": "--"}},
                      title=claim_title(REGISTRY["lora.fig3a_lazy_floor"], gap.max(), what="max gap / allowed",
                                        note=f"final / floor = {below:.3g} (< 1 needed); ReLU k={k}, xi=sqrt(k)"))
    j = int(np.argmax(gap))
    msg = (f"SGD loss vs Phi(m_t) of the finite-delta ODE: max gap/allowed {gap.max():.3g} at tau = {t[j] / d:.3g} "
           f"(gap {abs(mean[j] - theory[j]):.3g}, allowed {allowed[j]:.3g}); final SGD loss {tail.mean():.3g} vs "
           f"lazy floor {floor:.3g} (ratio {below:.3g}; theory ends at {theory[-1]:.3g})")
    return ClaimResult(measured=float(gap.max()), checks={"SGD loss ends below the lazy floor": below < 1},
                       figure=str(fig), message=msg + f"; the paper's ODE: max gap/allowed {gap_paper.max():.3g}",
                       nulls={"paper's ODE": float(gap_paper.max())},
                       table=[{"lazy_floor": floor, "sgd_final": float(tail.mean()), "final_over_floor": below,
                               "theory_final": float(theory[-1]), "theory_start": float(theory[0]),
                               "max_gap_over_allowed": float(gap.max()), "tau_of_max": float(t[j] / d)}])


# ---- R4: Figs 2a/2b and Section 4, joint training of c_hat (extension) -----------------------------------------
_ONE_SIDED_3SE = 0.5 * math.erfc(3 / math.sqrt(2))  # P(Z > 3) = 0.00135: the level of a single "ratio + 3 SE"


def _bonferroni_z(n_tests, seeds=None):
    """z with P(Z > z) = P(Z > 3)/n_tests: taking the best of ``n_tests`` upper bounds keeps the 3 SE level.

    With ``seeds``, the Student-t quantile with seeds - 1 degrees of freedom at that level instead (the SE is
    estimated from the seeds)."""
    if seeds is not None:
        from scipy import stats
        return float(stats.t.ppf(1 - _ONE_SIDED_3SE / n_tests, seeds - 1))
    return float(-ndtri(_ONE_SIDED_3SE / n_tests))


def _escape_times(sim, level):
    """Per-seed first step with |m| >= level (linearly interpolated between records); None if never."""
    t = np.asarray(sim.t, dtype=float)
    return [dynamics.escape_time(t, row, level) for row in np.abs(np.asarray(sim["m"], dtype=float))]


def joint_frozen_ratio(t_joint, t_frozen, *, dt, horizon):
    r"""Paired joint/frozen escape-time ratio (geometric mean over seeds) and its standard error.

    .. math:: \ell_i = \log\frac{t^{J}_i}{t^{F}_i},\quad \hat r = e^{\bar\ell},\quad
              \mathrm{SE}(\hat r) = \hat r\,\sqrt{\frac{s_\ell^2}{R} + \frac{1}{R^2}\sum_i \frac{\Delta^2}{12}
              \Big(\frac{1}{(t^J_i)^2} + \frac{1}{(t^F_i)^2}\Big)}

    Seeds are paired (same u_0 and data stream x_t for both runs), so the spread ``s_l`` of the per-seed log
    ratios is the seed noise of the comparison; the second term is the time resolution of the recorded grid
    (escape times interpolated between records ``dt`` apart, error taken uniform on one interval), which keeps
    the SE positive when both runs are identical. A frozen run that never escapes counts at ``horizon`` (a
    lower bound: the ratio is then over-estimated, conservative); a joint run that never escapes makes the
    ratio infinite. Delta method: SE(r) = r SE(mean log ratio).
    """
    tf = np.array([horizon if t is None else t for t in t_frozen], dtype=float)
    if any(t is None for t in t_joint):
        return math.inf, math.inf
    tj = np.array(t_joint, dtype=float)
    ell = np.log(tj / tf)
    R = len(ell)
    var = (ell.var(ddof=1) if R > 1 else math.inf) / R + np.sum(dt**2 / 12 * (1 / tj**2 + 1 / tf**2)) / R**2
    ratio = float(np.exp(ell.mean()))
    return ratio, ratio * float(np.sqrt(var))


@claim(id="lora.fig2_joint_speedup", model="lora",
       title="Extension (Figs. 2a vs 2b, Section 4): training c_hat jointly reaches |m| >= 0.5 reliably faster than "
             "freezing it",
       source="[Dayi25, Section 4 ('roughly twice'), App. B (Fig. 2)]; the joint step size is not given in the paper",
       metric="min over the F c_hat step sizes of (r + z_F SE(r)): r = geometric mean over paired seeds of "
              "t_joint/t_frozen, the steps to |m| >= 0.5; SE by the delta method from the per-seed log ratios "
              "plus the recording resolution; z_F the Student-t quantile (R - 1 d.o.f.) at one-sided level "
              "P(Z > 3)/F, Bonferroni for the min over F step sizes (z = 3.65 at R = 24, F = 2; 3.93 at F = 4)",
       tolerance=1.0,
       tolerance_origin="joint reliably faster: the upper 3-SE bound of the time ratio must stay below 1 for some "
                        "c_hat step size, the family-wise level of taking the best of F kept at P(Z > 3) = 0.13 % "
                        "(Bonferroni), Student t with R - 1 = 23 d.o.f. for the SE estimated from R = 24 seeds. A "
                        "correct finding fails when the test misses the effect: at 8 seeds r = 0.870 +- 0.024 (5.4 "
                        "SE below 1, upper bound 0.993 at z = 5.13: missed 38 % of the time); at 24 seeds 0.877 +- "
                        "0.016, 7.7 SE below 1 against z = 3.65 (upper bound 0.934), which the noncentral t (23 "
                        "d.o.f.) misses with probability 1.8e-4 (quick; 5.5e-4 full at z = 3.93, the effect in SE "
                        "assumed the same): the false-failure bound. The "
                        "paper gives neither the c_hat step size nor a number: 'roughly twice' (r ~ 0.5) is "
                        "reported, not tested",
       kind="finding",
       nulls={"no speedup": "joint training no faster than frozen: the joint runs' escape times equal the frozen "
                            "ones, seed by seed (lr_c = 0 on the same seeds), r = 1"},
       quick={"k": 8, "xi": 1.0, "d": 500, "delta": 0.2, "tau": 40.0, "seeds": 24, "level": 0.5,
              "lr_c_factors": [0.1, 1.0]},
       full={"k": 8, "xi": 1.0, "d": 1000, "delta": 0.2, "tau": 60.0, "seeds": 24, "level": 0.5,
             "lr_c_factors": [0.1, 1.0, 10.0, 100.0]})
def fig2_joint_speedup(size, device, outdir):
    """R4: steps to |m| >= level with c_hat frozen and with c_hat trained at lr_c = factor * lr, paired seeds."""
    d, level = size["d"], size["level"]
    steps = int(round(size["tau"] * d))
    kw = {"d": d, "lr": size["delta"] / d, "steps": steps, "seeds": size["seeds"], "device": device}
    problem = lora.Problem.orthonormal(size["k"], size["xi"], "relu", seed=0)
    frozen = popdyn.simulate(problem, **kw)
    dt = float(np.max(np.diff(frozen.t)))
    t_frozen = _escape_times(frozen, level)
    z = _bonferroni_z(len(size["lr_c_factors"]), size["seeds"])
    curves = {"frozen c_hat": np.abs(frozen["m"]).mean(0)}
    rows = []
    for f in size["lr_c_factors"]:
        sim = popdyn.simulate(problem, joint=True, lr_c=f * kw["lr"], **kw)
        ratio, se = joint_frozen_ratio(_escape_times(sim, level), t_frozen, dt=dt, horizon=steps)
        rows.append({"lr_c_over_lr": f, "ratio": ratio, "se": se, "upper": ratio + z * se, "z": z,
                     "frozen_escaped": sum(t is not None for t in t_frozen),
                     "final_m_joint": float(np.abs(sim["m"][:, -1]).mean()),
                     "final_m_frozen": float(np.abs(frozen["m"][:, -1]).mean()),
                     "final_c_overlap": float(np.abs(sim["c_overlap"][:, -1]).mean())})
        curves[f"joint, lr_c = {f:g} lr"] = np.abs(sim["m"]).mean(0)
    best = min(rows, key=lambda r: r["upper"])
    r0, se0 = joint_frozen_ratio(t_frozen, t_frozen, dt=dt, horizon=steps)  # the null: joint = frozen, seed by seed
    fig = plot_curves(frozen.t / d, curves, Path(outdir) / "lora.fig2_joint_speedup.png", refs={"level": level},
                      xlabel=r"$\tau = t/d$", ylabel=r"$|m_t|$ (mean over seeds)",
                      styles={"frozen c_hat": {"color": "k", "ls": "--"}},
                      title=claim_title(REGISTRY["lora.fig2_joint_speedup"], best["upper"],
                                        what=f"joint / frozen time + {z:.2f} SE",
                                        note=f"ratio {best['ratio']:.3g} (paper ~0.5); ReLU k={size['k']} xi={size['xi']}"))
    msg = (f"best joint/frozen time to |m| >= {level}: {best['ratio']:.3g} +- {best['se']:.2g} (SE) at lr_c = "
           f"{best['lr_c_over_lr']:g} lr; upper bound r + {z:.2f} SE = {best['upper']:.3g} (< 1 needed; paper: "
           f"'roughly twice' as fast, ~0.5); all: " + ", ".join(f"{r['lr_c_over_lr']:g} lr: {r['ratio']:.3g} "
                                                                f"+- {r['se']:.2g}" for r in rows))
    return ClaimResult(measured=best["upper"], figure=str(fig), table=rows, message=msg,
                       nulls={"no speedup": r0 + z * se0},
                       details={"z": z, "seeds": size["seeds"], "resolution_steps": dt})
