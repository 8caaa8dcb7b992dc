"""LoRA fine-tuning claims ([Dayi25]; docs/lora.md): Prop. 4, the overlap ODE, the plateau, the GLM limit.

* ``lora.prop4_gradient``: Monte Carlo spherical gradient (u-component) and loss against
  ``-h(m)(1 - m^2)`` and ``Phi(m)`` ([Dayi25, Proposition 4]).
* ``lora.ode_vs_sgd``: **extension** of the population recursion of [Dayi25, App. C.1]: the finite-delta overlap ODE (``convention="corrected"``:
  the paper's population ODE plus the mean normalisation drift) against online SGD at d in
  {500, 1000, 2000}; the paper's delta -> 0 ODE is reported beside it.
* ``lora.plateau``: **extension**: the finite-delta ODE's fixed point m* against SGD's late-time overlap
  (derived here, docs/lora.md).

The paper derives its population recursion (App. C.1) "ignoring the error terms E_j and Q_j" (Q_t is "the error from
ignoring the normalization", ibid.) and its Theorem 16 (App. C.1) takes delta = O(eps^3), where the
plateau 1 - |m*| is O(eps^3): it claims no finite-delta trajectory. These two claims test popdyn's
refinement, not a statement of the paper (docs/errata.md, LoRA, "Extension, not an erratum").
* ``lora.glm_limit``: h(m) at xi -> inf against 2 K'(m), and the paper's formula in Remark 15 (App. C), misprinted.

Only popdyn's public API is used for the theory; the Monte Carlo of (a) is the independent check.
"""
from __future__ import annotations

import warnings

import numpy as np

import popdyn
from popdyn import activations
from popdyn.gaussian import mc_mean
from popdyn.models import lora
from popdyn.plot import Key, claim_title, legend_outside, plot_curves, save_figure, subplots

from . import REGISTRY, ClaimResult, claim

__all__ = ["mc_gradient_loss", "paper_glm_h"]


def _q(seeds, comparisons, alpha=2e-4):
    """Student-t quantile (seeds - 1 d.o.f.) at two-sided family-wise level ``alpha`` over ``comparisons``
    (Bonferroni): the number of standard errors of a seed mean that the max of the gaps exceeds by chance with
    probability <= alpha. It replaces a fixed normal quantile of 3, which holds for one comparison of many seeds."""
    from scipy import stats
    return float(stats.t.ppf(1 - alpha / (2 * comparisons), seeds - 1))



# ---- (a) Proposition 4: Monte Carlo of the spherical gradient -----------------------------------------

def mc_gradient_loss(problem, m, n, *, seed=0, chunk=1 << 18):
    r"""Monte Carlo of the u-component of the spherical gradient and of the loss, with standard errors.

    With ``z ~ N(0, G)``, ``a = <u, x>``, ``b = <e, x>`` (``e`` the unit vector of ``u_hat`` orthogonal
    to u and W), ``u_hat = m u + sqrt(1 - m^2) e``, (N1) pre-activations ``<v_i, x> = (z_i + xi c_i a)/r_i``
    and ``<v_hat_j, x> = (z_j + xi c_hat_j (m a + s b))/r_hat_j``:

    .. math:: \langle\hat\nabla L, u\rangle = -2(f^* - \hat f)\sum_j \lambda_j\sigma'(\langle\hat v_j,x\rangle)
              \frac{\xi\hat c_j}{\hat r_j}\big((1 - m^2)a - m s\,b\big),\qquad L = (f^* - \hat f)^2

    Seeded i.i.d. sampling through :func:`popdyn.gaussian.mc_mean` (chunks of ``chunk`` draws).
    Returns ``(grad_mean, grad_se, loss_mean, loss_se)``; theory: ``-h(m)(1 - m^2)`` and ``Phi(m)``
    ([Dayi25, Proposition 4 and its proof, App. D.1]; docs/lora.md).
    """
    L = np.linalg.cholesky(problem.G + 1e-15 * np.eye(problem.k))
    lam, xi, sig = np.asarray(problem.lam), problem.xi, problem.sigma
    cv, ch = xi * np.asarray(problem.c) / problem.r, xi * np.asarray(problem.c_hat) / problem.r_hat
    s = np.sqrt(1.0 - m * m)

    def sample(rng, size):  # rows (gradient u-component, loss) of one draw of x
        z = rng.standard_normal((size, problem.k)) @ L.T
        a, b = rng.standard_normal(size), rng.standard_normal(size)
        pre_hat = z / problem.r_hat + np.outer(m * a + s * b, ch)
        res = sig(z / problem.r + np.outer(a, cv)) @ lam - sig(pre_hat) @ lam
        g = -2.0 * res * (sig.deriv(pre_hat) @ (lam * ch)) * ((1.0 - m * m) * a - m * s * b)
        return np.stack([g, res * res], axis=1)
    (g, loss), (g_se, loss_se) = mc_mean(sample, n, seed, chunk=chunk)
    return float(g), float(g_se), float(loss), float(loss_se)


def _prop4_problem(activation, features, xi, k, seed):
    make = lora.Problem.orthonormal if features == "orthonormal" else lora.Problem.random_features
    return make(k, xi, activation, seed)


@claim(id="lora.prop4_gradient", model="lora",
       title="Prop. 4: the population spherical gradient is -h(m)(u - m u_hat); the loss is Phi(m)",
       source="[Dayi25, Proposition 4 and its proof, App. D.1]",
       metric="max |z| over settings of (MC mean - theory)/MC standard error, u-component of the gradient and loss",
       tolerance=5.0,
       tolerance_origin="z of a Monte Carlo mean of >= 4e5 draws, Gaussian: P(|z| > 5) = 5.7e-7 per comparison, "
                        "Bonferroni over settings x (gradient, loss) (24 quick, 72 full): false-failure bound 1.4e-5 "
                        "quick, 4.1e-5 full (4 before: 1.5e-3, 4.6e-3). He3's heavy tails make its SE less reliable, "
                        "hence a margin over 4. Recorded max |z| 2.25 (quick); the nulls are >= 19 SE off",
       kind="independent",
       nulls={"G = I": "h(m) and Phi(m) of the orthonormal case (G replaced by I, same c, c_hat, xi) where G != I",
              "h / 2": "h without its factor 2 (as the paper prints h(0) in its appendix), Phi unchanged"},
       quick={"activations": ["relu", "tanh", "he3"], "features": ["orthonormal", "random"], "xi": [1.0],
              "m": [0.0, 0.5], "k": 5, "n": 400_000},
       full={"activations": ["relu", "tanh", "he3"], "features": ["orthonormal", "random"],
             "xi": [1.0, 5 ** 0.5], "m": [0.0, 0.5, 0.9], "k": 5, "n": 4_000_000})
def prop4_gradient(size, device, outdir):
    rows = []
    for i, (act, feat, xi, m) in enumerate((a, f, x, m) for a in size["activations"] for f in size["features"]
                                           for x in size["xi"] for m in size["m"]):
        p = _prop4_problem(act, feat, xi, size["k"], seed=i)
        g, g_se, loss, loss_se = mc_gradient_loss(p, m, size["n"], seed=1000 + i)
        g_th = -float(lora.h(p, m)) * (1 - m * m)
        loss_th = float(lora.population_loss(p, m))
        eye = lora.Problem(np.eye(p.k), p.lam, p.c, p.c_hat, p.xi, p.activation)  # the same problem with G = I
        g_eye, loss_eye = -float(lora.h(eye, m)) * (1 - m * m), float(lora.population_loss(eye, m))
        rows.append({"activation": act, "features": feat, "xi": xi, "m": m, "grad_mc": g, "grad_se": g_se,
                     "grad_theory": g_th, "z_grad": (g - g_th) / g_se, "loss_mc": loss, "loss_theory": loss_th,
                     "z_loss": (loss - loss_th) / loss_se,
                     "z_grad_G=I": (g - g_eye) / g_se, "z_loss_G=I": (loss - loss_eye) / loss_se,
                     "z_grad_h/2": (g - g_th / 2) / g_se})
    z = np.array([[r["z_grad"], r["z_loss"]] for r in rows])
    worst = float(np.abs(z).max())
    nulls = {"G = I": float(max(max(abs(r["z_grad_G=I"]), abs(r["z_loss_G=I"])) for r in rows)),
             "h / 2": float(max(max(abs(r["z_grad_h/2"]), abs(r["z_loss"])) for r in rows))}
    tol = REGISTRY["lora.prop4_gradient"].tolerance
    fig = plot_curves(np.arange(len(rows)), {"z, gradient u-component": z[:, 0], "z, loss": z[:, 1]},
                      outdir / "lora.prop4_gradient.png", refs={f"|z| = {tol:g} (tolerance)": tol, f"_-{tol:g}": -tol},
                      styles={k: {"ls": "", "marker": "o"} for k in ("z, gradient u-component", "z, loss")},
                      xlabel="setting (activation x features x xi x m, table order)",
                      ylabel="(MC - theory) / SE", title=claim_title(REGISTRY["lora.prop4_gradient"], worst,
                                                                     what="max |z|", note=f"n = {size['n']:.0e}"))
    return ClaimResult(measured=worst, figure=str(fig), table=rows, nulls=nulls,
                       message=f"{len(rows)} settings x (gradient, loss): max |z| = {worst:.2f}, "
                               f"median |z| = {np.median(np.abs(z)):.2f}; nulls: G = I {nulls['G = I']:.3g}, "
                               f"h / 2 {nulls['h / 2']:.3g}.")


# ---- (b) extension: the finite-delta overlap ODE against online SGD ------------------------------------

def _sgd_and_odes(problem, d, delta, tau, seeds, device):
    """Simulation and both theories (finite-delta "corrected", delta -> 0 "paper") on its grid, same m0."""
    lr, steps = delta / d, int(round(tau * d))
    m0 = lora.limit_sign(problem) * 0.5 / np.sqrt(d)  # |m0| = 0.5/sqrt(d) with the sign of h(0), as [Dayi25, App. A.2] assumes
    sim = popdyn.simulate(problem, d=d, lr=lr, steps=steps, m0=m0, seeds=seeds, device=device)
    with warnings.catch_warnings():  # the paper's ODE is run outside its regime (delta <= 0.01) on purpose
        warnings.simplefilter("ignore", popdyn.RegimeWarning)
        preds = {conv: popdyn.predict(problem, d=d, lr=lr, steps=steps, m0=m0, convention=conv)
                 for conv in ("corrected", "paper")}
    return sim, {conv: popdyn.compare(pred, sim, observables=["m"]) for conv, pred in preds.items()}


def _r1_excess(comp, cells=1):
    """max_{t > 0} (|mean - theory| - q SD/sqrt(R)): the R1 acceptance is excess <= 0.01, with q the
    Student-t quantile of :func:`_q` over the recorded times and ``cells`` runs in place of 3.

    t = 0 is left out: m0 is the same on every seed and in the theory, so its excess is 0 by construction.
    """
    R = comp.simulation.observables["m"].shape[0]
    q = _q(R, (len(comp.mean["m"]) - 1) * cells)
    excess = np.abs(comp.mean["m"] - comp.theory["m"]) - q * comp.sd["m"] / np.sqrt(R)
    return float(np.max(excess[1:]))


@claim(id="lora.ode_vs_sgd", model="lora",
       title="Extension of the population recursion of [Dayi25, App. C.1]: online SGD at finite delta = lr d follows the finite-delta overlap ODE (the "
             "population ODE plus the mean normalisation drift); the paper's delta -> 0 ODE is reported",
       source="[Dayi25, App. C.1 (the population recursion), App. E.1 (the normalised step)]; the finite-delta ODE "
              "derived here, not in the paper (docs/lora.md)",
       metric="max over d >= 1000 of max_t (|mean_SGD m_t - m_corr(t)| - q SD_t/sqrt(R)), eta = delta/d; "
              "the final sign must equal sign(h(0))",
       tolerance=0.01,
       tolerance_origin="the acceptance sup gap <= 3 SD/sqrt(R) + 0.01 for d >= 1000, delta <= 0.5 "
                        "(standard errors of the seed mean plus the O(1/d) corrections of the ODE), with 3 replaced by "
                        "q: per time the seed mean over its SE is a Student t with R - 1 = 15 d.o.f., q its quantile "
                        "at family-wise 0.02 % over the recorded times and the d >= 1000 (Bonferroni: q = 7.9 quick, "
                        "199 times; 8.4 full, x 2 d). False-failure bound 2e-4 while the finite-d bias stays within "
                        "the 0.01 (recorded excess -0.015 at 8 seeds, quick)",
       kind="training",
       nulls={"paper's ODE": "the paper's population ODE (convention=\"paper\", delta -> 0: no normalisation "
                             "drift), same m0 and grid"},
       quick={"activation": "tanh", "k": 8, "xi": 1.0, "seed": 1, "delta": 0.5, "tau": 8.0,
              "d": [500, 1000], "seeds": 16},
       full={"activation": "tanh", "k": 8, "xi": 1.0, "seed": 1, "delta": 0.5, "tau": 12.0,
             "d": [500, 1000, 2000], "seeds": 16})
def ode_vs_sgd(size, device, outdir):
    problem = lora.Problem.orthonormal(size["k"], size["xi"], size["activation"], size["seed"])
    sign = lora.limit_sign(problem)
    fig, axes = subplots(len(size["d"]))
    rows, excess, excess_paper, signs_ok = [], [], [], True
    for ax, d in zip(axes, size["d"]):
        sim, comps = _sgd_and_odes(problem, d, size["delta"], size["tau"], size["seeds"], device)
        corr, paper = comps["corrected"], comps["paper"]
        final = float(np.sign(corr.mean["m"][-1]))
        signs_ok &= final == sign
        cells = sum(x >= 1000 for x in size["d"])
        excess.append(_r1_excess(corr, cells))
        excess_paper.append(_r1_excess(paper, cells))
        rows.append({"d": d, "seeds": sim.n_seeds, "sup_gap_corrected": corr.metrics["m"]["sup_gap"],
                     "in_band_corrected": corr.metrics["m"]["in_band"], "excess_corrected": excess[-1],
                     "sup_gap_paper": paper.metrics["m"]["sup_gap"], "in_band_paper": paper.metrics["m"]["in_band"],
                     "excess_paper": excess_paper[-1], "final_mean_m": float(corr.mean["m"][-1]), "sign_h0": sign})
        tau = np.asarray(corr.t, dtype=float) / d
        plot_curves(tau, {"SGD mean": corr.mean["m"], "finite-delta ODE": corr.theory["m"],
                                "paper, delta -> 0 (App. C.1)": paper.theory["m"]},
                    ax=ax, bands={"SGD mean": 2 * corr.sd["m"]}, legend=False,
                    styles={"SGD mean": {"color": "C0"}, "finite-delta ODE": {"color": "k", "ls": "--"},
                            "paper, delta -> 0 (App. C.1)": {"color": "C3", "ls": ":"}},
                    xlabel=r"$\tau = t/d$", ylabel=r"$m_t = \langle u_t, u\rangle$",
                    title=f"d = {d}: sup gap finite-delta ODE {rows[-1]['sup_gap_corrected']:.3g}, "
                          f"delta -> 0 ODE {rows[-1]['sup_gap_paper']:.3g}")
    worst = max(e for e, d in zip(excess, size["d"]) if d >= 1000)  # R1 acceptance: d >= 1000
    worst_paper = max(e for e, d in zip(excess_paper, size["d"]) if d >= 1000)
    legend_outside(fig)
    path = save_figure(fig, outdir / "lora.ode_vs_sgd.png", title=claim_title(
        REGISTRY["lora.ode_vs_sgd"], worst, what="worst excess over q SE (d >= 1000)"))
    return ClaimResult(measured=worst, checks={"every seed ends on the side sign(h(0))": signs_ok},
                       figure=str(path), table=rows, nulls={"paper's ODE": worst_paper},
                       message=f"finite-delta ODE: worst excess over q SE {worst:.4f} (<= 0.01 required); "
                               f"paper's delta -> 0 ODE (App. C.1) sup gaps {[round(r['sup_gap_paper'], 4) for r in rows]} vs corrected "
                               f"{[round(r['sup_gap_corrected'], 4) for r in rows]}; final sign "
                               f"{'=' if signs_ok else '!='} sign(h(0)) = {sign}.")


# ---- (c) the plateau 1 - m* ----------------------------------------------------------------------------

def _late_overlap(sim, frac):
    """Per-seed time average of |m_t| over the last ``frac`` of the run: (mean over seeds, SE)."""
    m = np.abs(sim.observables["m"])
    late = m[:, int((1 - frac) * m.shape[1]):].mean(axis=1)
    return float(late.mean()), float(late.std(ddof=1) / np.sqrt(len(late)))


_MODEL_REL = 0.02  # first-order-in-delta ODE: a 2.6 % relative bias of 1-|m*| at delta=0.5, d=1000 (derived here)


def _fixed_point(problem, lr, d, n_mc, table_seeds):
    """|m*| averaged over B0/B1 tables of seeds 0..table_seeds-1, and its standard error from their spread:
    independent Monte Carlo tables for general G; for G = I (this claim) the table is exact (quadrature,
    seed unused), so every table is the same and the SE is 0."""
    v = np.abs([lora.plateau_overlap(problem, lr, d, n_mc=n_mc, seed=s) for s in range(table_seeds)])
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(table_seeds))


@claim(id="lora.plateau", model="lora",
       title="Extension: online SGD with constant eta = delta/d plateaus at the fixed point m* of the finite-delta "
             "ODE, 1 - |m*| ~ delta B0/|h| (O(eps^3) at Thm 16's delta)",
       source="[Dayi25, App. C.1 (the population recursion), App. E.1 (the normalised step)]; the fixed point derived "
              "here, not in the paper (docs/lora.md)",
       metric="max over delta of |(1-|m_SGD|) - (1-|m*|)| / (q SE + 2 % (1-|m*|)): the plateau's error in "
              "units of its allowed error, SE of the seed mean (the B0/B1 table is exact for G = I: se_table = 0)",
       tolerance=1.0,
       tolerance_origin="allowed error per delta = q standard errors of the seed mean of the late-time overlap (a "
                        "Student t with S - 1 = 15 d.o.f.; q its quantile at family-wise 0.02 % over the deltas, "
                        "Bonferroni: 5.2 quick, 5.5 full; m* has none: B0/B1 by quadrature for G = I) plus 2 % of "
                        "1-|m*| for the first-order-in-delta ODE (2.6 % measured at delta = 0.5); in those units, "
                        "pass iff <= 1. False-failure bound 2e-4 while the bias stays within the 2 % (recorded 0.30 "
                        "units at 8 seeds, quick)",
       kind="training",
       nulls={"paper's ODE": "the paper's population ODE (delta -> 0, no normalisation drift): no plateau, "
                             "|m*| = 1"},
       quick={"activation": "tanh", "k": 8, "xi": 1.0, "seed": 1, "d": 500, "delta": [0.5, 0.3],
              "tau": 25.0, "late": 0.4, "seeds": 16, "n_mc": 1 << 14, "table_seeds": 4},
       full={"activation": "tanh", "k": 8, "xi": 1.0, "seed": 1, "d": 1000, "delta": [0.5, 0.3, 0.2],
             "tau": 40.0, "late": 0.4, "seeds": 16, "n_mc": 1 << 16, "table_seeds": 4})
def plateau(size, device, outdir):
    problem = lora.Problem.orthonormal(size["k"], size["xi"], size["activation"], size["seed"])
    d, sign = size["d"], lora.limit_sign(problem)
    rows, curves, bands = [], {}, {}
    for delta in size["delta"]:
        lr = delta / d
        sim = popdyn.simulate(problem, d=d, lr=lr, steps=int(round(size["tau"] * d)), m0=sign * 0.5 / np.sqrt(d),
                              seeds=size["seeds"], device=device)
        m_star, se_table = _fixed_point(problem, lr, d, size["n_mc"], size["table_seeds"])
        m_sgd, se = _late_overlap(sim, size["late"])
        gap = 1 - m_star
        q = _q(size["seeds"], len(size["delta"]))
        allowed = q * np.hypot(se, se_table) + _MODEL_REL * gap  # absolute: finite when m* = +-1 (no plateau)
        err = abs((1 - m_sgd) - gap)
        rows.append({"delta": delta, "m_star_corrected": sign * m_star, "se_table": se_table,
                     "units_paper": float((1 - m_sgd) / (q * np.hypot(se, se_table))), "q": q,
                     "m_sgd_late": sign * m_sgd, "se_seeds": se,
                     "one_minus_m_star": gap, "one_minus_m_sgd": 1 - m_sgd, "error": err,
                     "allowed": float(allowed), "one_minus_m_paper": 0.0})
        tau = np.asarray(sim.t, dtype=float) / d
        curves[f"SGD, delta={delta}"] = 1 - np.abs(sim.observables["m"]).mean(axis=0)
        bands[f"SGD, delta={delta}"] = 2 * np.abs(sim.observables["m"]).std(axis=0, ddof=1)
        curves[f"1-|m*| (finite-delta theory), delta={delta}"] = np.full_like(curves[f"SGD, delta={delta}"], gap)
    worst = max(r["error"] / r["allowed"] for r in rows)
    worst_paper = max(r["units_paper"] for r in rows)  # 1 - |m*| = 0: allowed q SE, the 2 % model term vanishes
    key = Key("delta", size["delta"], ["SGD", "1-|m*| (finite-delta theory)"])
    path = plot_curves(tau, curves, outdir / "lora.plateau.png", bands=bands, logy=True,
                       styles={k: key(float(k.split("=")[-1]), k.split(", delta")[0]) for k in curves},
                       xlabel=r"$\tau = t/d$", ylabel=r"$1 - |m_t|$",
                       title=claim_title(REGISTRY["lora.plateau"], worst, what="worst error / allowed",
                                         note=f"d = {d}; the delta -> 0 ODE has 1-|m| -> 0"))
    return ClaimResult(measured=worst, figure=str(path), table=rows, nulls={"paper's ODE": worst_paper},
                       message="1-|m_SGD| vs 1-|m*|: " + ", ".join(
                           f"delta={r['delta']}: {r['one_minus_m_sgd']:.4f} vs {r['one_minus_m_star']:.4f}, error "
                           f"{r['error']:.2g} (allowed {r['allowed']:.2g})" for r in rows)
                       + f"; the paper's delta -> 0 population ODE (App. C.1) has none (1-|m| -> 0: {worst_paper:.3g} "
                         "error units), and the paper claims no finite-delta plateau.")


# ---- (d) the GLM limit ---------------------------------------------------------------------------------

def paper_glm_h(activation, m, P=200):
    r"""The GLM drift as printed in [Dayi25, Remark 15] (a misprint): :math:`\sum_l l\,\mu_{l+1}^2 m^l`.

    The corrected form is ``2 sum_l (l+1) mu_(l+1)^2 m^l = 2 K'(m)`` (docs/lora.md, docs/errata.md):
    for He_p the printed form is off by the factor ``(p-1)/(2p)`` (1/3 for He3).
    """
    mu = activations.get(activation).hermite_coeffs(P)
    l = np.arange(P)
    return np.polynomial.polynomial.polyval(np.asarray(m, dtype=float), l * mu[1:] ** 2)


def _glm_problem(activation, k, xi):
    """W = I_k, c = c_hat = 1/sqrt(k), lam = 1/k: h -> 2 K'(m) as xi -> inf ([Dayi25, Remark 15], corrected)."""
    c = np.full(k, 1 / np.sqrt(k))
    return lora.Problem(np.eye(k), np.full(k, 1.0 / k), c, c, xi, activation=activation)


def _glm_bound(activation, k, xi, P=200):
    r"""Bound on max_m |h(m) - 2K'(m)| / (2K'(1)), derived from rho_ij - m = (G_ij - m)/r^2, 1/r^2 <= k/xi^2.

    .. math:: h - 2K'(m) = 2(1 - r^{-2})\,\overline{K'(\rho_{ij}) - K'(m)} - 2r^{-2}K'(m)

    Smooth sigma: ``|K'(a) - K'(b)| <= K''(1)|a - b|`` (K'' has non-negative Hermite coefficients), giving
    ``(k/xi^2)(2K''(1) + K'(1))/K'(1)``. ReLU: ``K'(a) - K'(b) = (arccos b - arccos a)/(2 pi) <= sqrt|a-b|/4``,
    giving ``sqrt(2k)/(2 xi)/K'(1) + k/xi^2``.
    """
    act = activations.get(activation)
    eps = k / xi ** 2
    if act.name == "relu":
        return np.sqrt(2 * eps) / 4 / act.Kprime1 + eps
    mu, p = act.hermite_coeffs(P), np.arange(P + 1)
    return eps * (2 * np.sum(p * (p - 1) * mu ** 2) + act.Kprime1) / act.Kprime1


@claim(id="lora.glm_limit", model="lora",
       title="GLM limit: h(m) -> 2K'(m) as xi -> inf with c = c_hat; the paper's formula in Remark 15 is off",
       source="[Dayi25, Section 1.2 (GLMs), Section 3.1, Remark 15 (its formula for h(m) misprinted)]",
       metric="max over activations and m in [-1, 1] of |h(m) - 2K'(m)| / (2K'(1)) at xi = 1e4, in units "
              "of the derived O(k/xi^2) bound (O(sqrt(k)/xi) for ReLU)",
       tolerance=1.0,
       tolerance_origin="the bound |h - 2K'| <= 2 r^-2 (K'(m) + 2 K''(1)) (smooth sigma) or the 1/2-Hoelder "
                        "bound of arccos (ReLU), r^-2 <= k/xi^2: pass iff error <= bound, and the paper's Remark 15 "
                        "form must miss by more than 100 bounds",
       kind="independent",
       nulls={"paper's formula": "the GLM drift as the paper prints it in Remark 15, sum_l l mu_(l+1)^2 m^l"},
       quick={"activations": ["relu", "tanh", "erf", "he3"], "k": 4, "xi": [1e2, 1e3, 1e4], "n_m": 41},
       full={"activations": ["relu", "tanh", "erf", "sigmoid", "he3", "quadratic"], "k": 8,
             "xi": [1e1, 1e2, 1e3, 1e4], "n_m": 201})
def glm_limit(size, device, outdir):
    m = np.linspace(-1.0, 1.0, size["n_m"])
    k, rows, curves, styles = size["k"], [], {}, {}
    for i, act in enumerate(size["activations"]):
        glm = lora.glm_h(act, m)
        scale = 2 * activations.get(act).Kprime1
        for xi in size["xi"]:
            err = float(np.max(np.abs(lora.h(_glm_problem(act, k, xi), m) - glm)) / scale)
            rows.append({"activation": act, "xi": xi, "rel_error": err, "bound": _glm_bound(act, k, xi),
                         "paper_L588_rel_error": float(np.max(np.abs(paper_glm_h(act, m) - glm)) / scale)})
        if act in ("relu", "he3"):
            curves[f"2K'(m), {act}"] = glm
            curves[f"h(m), xi={size['xi'][-1]:g}, {act}"] = lora.h(_glm_problem(act, k, size["xi"][-1]), m)
            curves[f"paper Remark 15, {act}"] = paper_glm_h(act, m)
            key = Key("", ("relu", "he3"), ["2K'(m)", "h(m)", "paper Remark 15"])
            styles[f"2K'(m), {act}"] = key(act, "2K'(m)")
            styles[f"h(m), xi={size['xi'][-1]:g}, {act}"] = key(act, "h(m)")
            styles[f"paper Remark 15, {act}"] = key(act, "paper Remark 15")
    last = [r for r in rows if r["xi"] == size["xi"][-1]]
    worst = max(r["rel_error"] / r["bound"] for r in last)
    paper_ok = all(r["paper_L588_rel_error"] > 100 * r["bound"] for r in last)
    path = plot_curves(m, curves, outdir / "lora.glm_limit.png", styles=styles, xlabel="$m$", ylabel="$h(m)$",
                       title=claim_title(REGISTRY["lora.glm_limit"], worst, what=f"error / bound at xi = {size['xi'][-1]:g}",
                                         note="the paper's Remark 15 form visibly off"))
    return ClaimResult(measured=worst, checks={"paper Remark 15 form misses by > 100 bounds": paper_ok},
                       figure=str(path), table=rows,
                       nulls={"paper's formula": float(max(r["paper_L588_rel_error"] / r["bound"] for r in last))},
                       message=f"at xi = {size['xi'][-1]:g}: max error/bound {worst:.3g}; worst relative error "
                               f"{max(r['rel_error'] for r in last):.2e}; paper's Remark 15 form misses by "
                               f"{min(r['paper_L588_rel_error'] for r in last):.3g} or more "
                               f"({'>' if paper_ok else 'NOT >'} 100 bounds).")
