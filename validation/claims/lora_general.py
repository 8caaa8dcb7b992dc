"""Figures 4 and 5 of Dayi & Chen ([Dayi25], App. B): u or u_hat not orthogonal to span W.

Outside Assumption A2 the population dynamics is no longer a function of m = <u, u_hat> alone; the
order parameters are (m, q = W u_hat) with the teacher's fixed overlaps p = W u
(:mod:`popdyn.models.lora.general`, derived). These claims hold that theory against online SGD
(``popdyn.simulate`` on a :class:`~popdyn.models.lora.GeneralProblem`), in the setting of the
other LoRA figure claims: normalisation N1, c, c_hat in {+-1/sqrt k}^k, lambda = 1, frozen c_hat,
``lr = delta/d``, time ``tau = t/d``.

- ``lora.fig5_nonorthogonal`` (Fig. 5a): u = alpha u_1 + sqrt(1 - alpha^2) u_2 for several alpha, the
  paper's projected algorithm (Eq. 4): m_t of SGD against the scalar ODE of the general theory, which
  saturates at sqrt(1 - alpha^2) (u_hat cannot leave span(W)^perp).
- ``lora.fig5b_instances`` (Fig. 5b): alpha = 1/2 on random instances (random features, random p).
- ``lora.fig4_activations`` (Fig. 4): u_hat *not* projected on span(W)^perp, several activations and
  xi = 1, sqrt(k): the (k+1)-dimensional ODE of (m, q) against SGD.

Fig. 4's joint training of c_hat is claimed in ``lora_joint.py`` (``lora.fig4_joint_diffusion``): there the
population ODE is only the d -> infinity limit, and the diffusion theory (``method="diffusion"``) keeps the
fluctuations of order delta^2/d that matter for the polynomial activations at xi = sqrt(k).
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

import popdyn
from popdyn.models import lora
from popdyn.models.lora import GeneralProblem
from popdyn.plot import Key, claim_title, plot_curves, save_figure, subplots

from . import REGISTRY, ClaimResult, claim
from .lora import _q

__all__ = []

_M_ALLOW = 0.01  # R1: the finite-delta ODE tracks SGD's m_t to 0.01 (O(delta/d) + O(1/sqrt d)) at d >= 1000
_TOL_ORIGIN = ("as lora.fig2b_overlap_ode: gap <= q SD/sqrt(R) + 0.01 (O(delta/d) + "
               "O(1/sqrt d) corrections); per time the seed mean over its SE is a Student t with R - 1 = 15 d.o.f., q "
               "its quantile at family-wise 0.02 % over the recorded times and settings by Bonferroni (in place of "
               "a normal 3; 7.9-8.6 for 100 times x 2-6 settings), so the seed noise exceeds q SE somewhere with "
               "probability <= 2e-4: the false-failure bound while the finite-d bias stays within the 0.01 "
               "(recorded 0.13-0.19 of the band at 6-8 seeds, quick)")

_SIGN_RULE = " where the theory's final |m| exceeds q SD + 0.01 (a seed's band)"


def _compare(gp, *, d, delta, tau, seeds, device, n_points=101, nulls=None, cells=1):
    """Theory and SGD on one GeneralProblem: gap ratio, the curves on the SGD grid and a table row.

    ``nulls`` maps a name to ``(problem, predict options)``: each null theory's gap ratio on the same SGD runs is
    in ``row["nulls"]``."""
    kw = {"d": d, "lr": delta / d, "steps": int(round(tau * d)), "n_points": n_points}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=popdyn.RegimeWarning)
        pred = popdyn.predict(gp, **kw)
        null_preds = {n: popdyn.predict(p, **kw, **opts) for n, (p, opts) in (nulls or {}).items()}
    sim = popdyn.simulate(gp, seeds=seeds, device=device, seed=0, **kw)
    m = np.asarray(sim["m"], dtype=float)
    mean, sd = m.mean(0), m.std(0, ddof=1)
    theory = np.interp(sim.t, pred.t, pred["m"])
    allowed = _q(seeds, (len(mean) - 1) * cells) * sd / math.sqrt(seeds) + _M_ALLOW
    gap = np.abs(theory - mean)
    # a seed may end on either side where the theory itself has not left the saddle by more than a seed's spread
    decided = abs(theory[-1]) > _q(seeds, cells) * sd[-1] + _M_ALLOW
    signs_ok = not decided or bool(np.all(np.sign(m[:, -1]) == np.sign(theory[-1])))
    ratio = float(np.max(gap / allowed)) if signs_ok else math.inf
    null_ratios = {n: float(np.max(np.abs(np.interp(sim.t, p.t, p["m"]) - mean) / allowed)) if signs_ok else math.inf
                   for n, p in null_preds.items()}
    m_max = float(pred.meta["m_max"])
    row = {"alpha": gp.alpha, "project": bool(gp.project), "activation": gp.problem.activation.name,
           "xi": float(gp.problem.xi), "sup_gap": float(gap.max()), "allowed_min": float(allowed.min()),
           "final_sgd": float(mean[-1]), "final_theory": float(theory[-1]), "m_max": m_max,
           "final_fraction_of_reachable": float(abs(mean[-1]) / m_max),
           "final_q_norm_sgd": float(np.mean(sim["q_norm"][:, -1])), "final_q_norm_theory": float(pred["q_norm"][-1]),
           "sign_decided": bool(decided), "signs_ok": signs_ok, "ratio": ratio, **{f"ratio_{n}": v for n, v in null_ratios.items()}}
    return ratio, sim.t / d, mean, sd, theory, row


def _a2_null(gp):
    """The A2 theory for ``gp``: u's part p = W u in span W ignored (as if the figure's setting were inside A2)."""
    return {"A2 (p ignored)": (GeneralProblem(gp.problem, np.zeros(gp.k), gp.project), {})}


_A2_NULL = {"A2 (p ignored)": "the A2 theory: u's part p = W u in span W ignored (p = 0), same instance and m0"}


def _null_worst(rows, names):
    return {n: max(r[f"ratio_{n}"] for r in rows) for n in names}


_SGD, _ODE, _REACH = "SGD mean (band ± 2 SD)", "general-position ODE", "reachable ±sqrt(1 - α²)"


def _draw(ax, key, tau, series):
    """One colour per setting (``key``), solid = SGD mean with a ± 2 SD band, dashed = theory; no legend."""
    curves, bands, styles = {}, {}, {}
    for value, mean, sd, theory in series:
        curves[f"SGD {value}"], bands[f"SGD {value}"], styles[f"SGD {value}"] = mean, 2 * sd, key(value, _SGD)
        curves[f"theory {value}"], styles[f"theory {value}"] = theory, key(value, _ODE)
    plot_curves(tau, curves, ax=ax, bands=bands, styles=styles, legend=False, xlabel=r"$\tau = t/d$",
                ylabel=r"$m_t = \langle \hat u_t, u\rangle$")


def _one_panel(key, tau, series):
    """A one-panel figure of ``series`` (:func:`_draw`): ``(fig, ax)``."""
    fig, (ax,) = subplots(1, panel_size=(6.0, 4.0))
    _draw(ax, key, tau, series)
    return fig, ax


# ---- Fig. 5a: several alpha = ||Pi_W u||, projected algorithm ------------------------------------------------
@claim(id="lora.fig5_nonorthogonal", model="lora",
       title="Fig. 5a: with u = alpha u_1 + sqrt(1-alpha^2) u_2 (A2 fails), projected SGD's m_t follows the "
             "general-position overlap ODE, which saturates at sqrt(1 - alpha^2)",
       source="[Dayi25, App. B (Fig. 5a), eq. (4)]; popdyn.models.lora.general (derived here, docs/lora.md)",
       metric="max over alpha and tau of |mean_SGD m - m_theory| / (q SD/sqrt(R) + 0.01); infinite if a seed "
              "ends on the side opposite to the theory" + _SIGN_RULE,
       tolerance=1.0, tolerance_origin=_TOL_ORIGIN,
       kind="training", nulls=_A2_NULL,
       quick={"k": 8, "xi": 1.0, "d": 500, "delta": 0.1, "tau": 15.0, "seeds": 16, "alphas": [0.0, 0.5, 0.75]},
       full={"k": 8, "xi": 1.0, "d": 2000, "delta": 0.1, "tau": 30.0, "seeds": 16,
             "alphas": [0.0, 0.25, 0.5, 0.75]})
def fig5_nonorthogonal(size, device, outdir):
    """Fig. 5a: one ReLU instance, u's part in span W of norm alpha, the paper's projected SGD."""
    problem = lora.Problem.orthonormal(size["k"], size["xi"], "relu", seed=0)
    rows, series, worst = [], [], 0.0
    for alpha in size["alphas"]:
        gp = GeneralProblem.from_alpha(problem, alpha, seed=1, project=True)
        ratio, tau, mean, sd, theory, row = _compare(gp, d=size["d"], delta=size["delta"], tau=size["tau"],
                                                     seeds=size["seeds"], device=device, nulls=_a2_null(gp),
                                                     cells=len(size["alphas"]))
        worst = max(worst, ratio)
        rows.append(row)
        series.append((alpha, mean, sd, theory))
    refs = {alpha: math.copysign(r["m_max"], r["final_theory"])  # keyed by the size's alpha (r["alpha"] is rounded)
            for alpha, r in zip(size["alphas"], rows) if alpha > 0 and r["m_max"] - abs(r["final_theory"]) < 0.3}
    key = Key(r"$\alpha$", size["alphas"], [_SGD, _ODE] + ([_REACH] if refs else []))
    fig, ax = _one_panel(key, tau, series)
    for alpha, m_max in refs.items():
        ax.axhline(m_max, **key(alpha, _REACH))
    key.legend(ax)
    fig = save_figure(fig, Path(outdir) / "lora.fig5_nonorthogonal.png",
                      title=claim_title(REGISTRY["lora.fig5_nonorthogonal"], worst, what="max gap / allowed",
                                        note=f"ReLU, k = {size['k']}, xi = {size['xi']:g}, d = {size['d']}"))
    frac = ", ".join(f"alpha={r['alpha']:.2g}: {r['final_fraction_of_reachable']:.3f}" for r in rows)
    nulls = _null_worst(rows, _A2_NULL)
    return ClaimResult(measured=worst, figure=str(fig), table=rows, nulls=nulls,
                       message=f"general-position ODE within {worst:.3g} of the allowed band (<= 1 passes), the A2 "
                               f"theory {nulls['A2 (p ignored)']:.3g}; final |m| / sqrt(1 - alpha^2): {frac}")


# ---- Fig. 5b: alpha = 1/2, random instances -------------------------------------------------------------------
@claim(id="lora.fig5b_instances", model="lora",
       title="Fig. 5b: at ||Pi_W u|| = 1/2, projected SGD on random instances follows the general-position "
             "overlap ODE (S-curves toward sign * sqrt(3)/2)",
       source="[Dayi25, App. B (Fig. 5b)]; popdyn.models.lora.general (derived here, docs/lora.md)",
       metric="max over instances and tau of |mean_SGD m - m_theory| / (q SD/sqrt(R) + 0.01); infinite if a "
              "seed ends on the side opposite to the theory" + _SIGN_RULE,
       tolerance=1.0, tolerance_origin=_TOL_ORIGIN,
       kind="training", nulls=_A2_NULL,
       quick={"k": 8, "xi": 1.0, "d": 500, "delta": 0.1, "tau": 15.0, "seeds": 16, "instances": 2},
       full={"k": 8, "xi": 1.0, "d": 2000, "delta": 0.1, "tau": 30.0, "seeds": 16, "instances": 5})
def fig5b_instances(size, device, outdir):
    """Fig. 5b: random features (near-orthogonal G), random c, c_hat and random u_1 in span W, alpha = 1/2."""
    rows, series, worst = [], [], 0.0
    for inst in range(size["instances"]):
        problem = lora.Problem.random_features(size["k"], size["xi"], "relu", seed=10 + inst)
        gp = GeneralProblem.from_alpha(problem, 0.5, seed=20 + inst, project=True)
        ratio, tau, mean, sd, theory, row = _compare(gp, d=size["d"], delta=size["delta"], tau=size["tau"],
                                                     seeds=size["seeds"], device=device, nulls=_a2_null(gp),
                                                     cells=size["instances"])
        worst = max(worst, ratio)
        rows.append({"instance": inst, **row})
        series.append((f"#{inst}", mean, sd, theory))
    key = Key("instance", [f"#{i}" for i in range(size["instances"])], [_SGD, _ODE])
    fig, ax = _one_panel(key, tau, series)
    key.legend(ax)
    fig = save_figure(fig, Path(outdir) / "lora.fig5b_instances.png",
                      title=claim_title(REGISTRY["lora.fig5b_instances"], worst, what="max gap / allowed",
                                        note=f"ReLU, alpha = 1/2, k = {size['k']}, xi = {size['xi']:g}, "
                                             f"d = {size['d']}"))
    nulls = _null_worst(rows, _A2_NULL)
    return ClaimResult(measured=worst, figure=str(fig), table=rows, nulls=nulls,
                       message=f"general-position ODE within {worst:.3g} of the allowed band on every instance; the "
                               f"A2 theory {nulls['A2 (p ignored)']:.3g}")


# ---- Fig. 4: u_hat not projected, several activations -----------------------------------------------------
@claim(id="lora.fig4_activations", model="lora",
       title="Fig. 4: with u_hat not projected on span(W)^perp (A2 fails for u_hat), SGD's m_t follows the "
             "(k+1)-dimensional ODE of (m, q = W u_hat) for each activation, at xi = 1 (4a) and xi = sqrt(k) (4b)",
       source="[Dayi25, App. B (Fig. 4)]; popdyn.models.lora.general (derived here, docs/lora.md)",
       metric="max over activations, xi and tau of |mean_SGD m - m_theory| / (q SD/sqrt(R) + 0.01); infinite "
              "if a seed ends on the side opposite to the theory" + _SIGN_RULE,
       tolerance=1.0, tolerance_origin=_TOL_ORIGIN,
       kind="training",
       nulls={"paper's ODE": "the population flow alone (convention=\"paper\", delta -> 0: no normalisation drift)"},
       quick={"k": 8, "d": 500, "seeds": 16, "activations": ["relu", "sigmoid"],
              "panels": [[1.0, 0.1, 10.0], ["sqrt_k", 0.02, 30.0]]},
       full={"k": 8, "d": 2000, "seeds": 16, "activations": ["relu", "sigmoid", "tanh"],
             "panels": [[1.0, 0.1, 20.0], ["sqrt_k", 0.02, 40.0]]})
def fig4_activations(size, device, outdir):
    """Fig. 4: frozen c_hat, u orthogonal to W, u_hat free on the sphere; one panel per xi = (xi, delta, tau).

    At xi = sqrt(k) the normalisation drift is ~xi^2 larger, so delta is smaller there: with delta = 0.1
    ReLU plateaus at |m| ~ 0.19, where the first-order-in-delta ODE is off by 0.075 (quick size).
    """
    rows, worst, k = [], 0.0, size["k"]
    fig, axes = subplots(len(size["panels"]), panel_size=(5.6, 3.8))
    key = Key("", size["activations"], [_SGD, _ODE])
    for ax, (xi, delta, tau_end) in zip(axes, size["panels"]):
        xi = math.sqrt(k) if xi == "sqrt_k" else float(xi)
        series = []
        for act in size["activations"]:
            problem = lora.Problem.orthonormal(k, xi, act, seed=0)
            gp = GeneralProblem(problem, np.zeros(k), project=False)
            nulls = {"paper's ODE": (gp, {"convention": "paper"}),
                     "A2 (u_hat projected)": (GeneralProblem(problem, np.zeros(k), project=True), {})}
            ratio, tau, mean, sd, theory, row = _compare(gp, d=size["d"], delta=delta, tau=tau_end,
                                                         seeds=size["seeds"], device=device, nulls=nulls,
                                                         cells=len(size["panels"]) * len(size["activations"]))
            worst = max(worst, ratio)
            rows.append({**row, "delta": delta})
            series.append((act, mean, sd, theory))
        _draw(ax, key, tau, series)
        ax.set_title(f"ξ = {xi:.3g}{' = √k' if xi != 1 else ''}, δ = {delta:g}")
    key.legend(fig)
    path = save_figure(fig, Path(outdir) / "lora.fig4_activations.png",
                       title=claim_title(REGISTRY["lora.fig4_activations"], worst, what="max gap / allowed",
                                         note=f"k = {k}, d = {size['d']}"))
    qn = max(r["final_q_norm_theory"] for r in rows)
    nulls = _null_worst(rows, REGISTRY["lora.fig4_activations"].nulls)
    a2 = _null_worst(rows, ["A2 (u_hat projected)"])["A2 (u_hat projected)"]
    return ClaimResult(measured=worst, figure=str(path), table=rows, nulls=nulls,
                       details={"a2_projected_not_a_null": a2},
                       message=f"(m, q) ODE within {worst:.3g} of the allowed band (<= 1 passes); nulls "
                               f"{', '.join(f'{n}: {v:.3g}' for n, v in nulls.items())}; the scalar A2 ODE (u_hat "
                               f"projected, q = 0) {a2:.3g}, not rejected: m_t alone does not tell the two apart at "
                               f"this size; u_hat moves "
                               f"into span W up to ||Pi_W u_hat|| = {qn:.3f}")
