"""Gradient-feature learning claims ([Shi24], Ch. 3, Shi-Wei-Liang NeurIPS 2023; docs/gradient_features.md).

The chapter reports no experiment and its bounds are vacuous at simulable sizes, so these claims hold the
exact population predictions of the framework against the torch training of
``popdyn.sim.gradient_features``, as experiments E1-E8:

* ``gradient_features.first_step_rate`` (E1): the torch first step on n samples against the exact population step
  ``w^(1) = eta^(1)|l'(0)| a^(0) G(w^(0), b)`` (Gaussian-mixture closed form, hinge and base-2 logistic, E[y x] = 0
  and != 0): every neuron within the per-neuron tolerance, and the error falls as n^{-1/2} (Lemma B.18's bound:
  n^{-1/3}).
* ``gradient_features.nice_fraction`` (E1): the size of the nice set (3.14) after the torch first step is
  Binomial(m, p/2) with p the feature probability of (3.6) (Lemma B.5).
* ``gradient_features.uniform_parity_step`` (E5): the torch first step on the whole hypercube equals the corrected
  closed form G_j = xi_{|A^{j}|} chi_{A^{j}}(w)/2 (the paper's B.548-B.549 lack the 1/2), and a fraction 2^{-(k-1)}
  of the neurons lands in the infinity-norm cone of the parity feature (Lemma B.64).
* ``gradient_features.beyond_fixed_features`` (E3): at equal width, the learned first-step features reach the Bayes
  error of the XOR mixture while random features stay near chance.
* ``gradient_features.multi_index_step`` (E6): Algorithm 7's torch first step against the Hermite closed form, error
  ~ n^{-1/2}, and span(W^(1)) against span(U).
* ``gradient_features.good_network`` (E2): Lemma B.6's constructive second layer on the torch features reaches the
  exact loss of g* as the width grows (the B.25 bound is vacuous here).
* ``gradient_features.lottery_ticket`` (E7): training only supp(a~) matches training the whole second layer.
* ``gradient_features.algorithm1_curve`` (E4): Algorithm 1 stays inside Lemma B.9's exact bounds, W frozen or
  trained gives the same curve, and the error falls toward the Bayes error.
* ``gradient_features.simplicity_bias`` (E8): in the linear (all-margins-below-1) phase of the second stage the
  per-cluster margins grow at the exact population rates, strong clusters first.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from popdyn.models.gradient_features import bounds, data, framework, multi_index, parity
from popdyn.plot import claim_title, legend_outside, sample_axis, save_figure, subplots

from . import REGISTRY, ClaimResult, claim

__all__ = []



def _sim():
    """The torch simulation module, imported lazily (torch is optional for discovering claims)."""
    from popdyn.sim import gradient_features
    return gradient_features


def _legend(*axes):
    for ax in axes:
        legend_outside(ax)


def _b_tilde(d, sigma_B, tau):
    """The XOR-case bias scale of Lemma B.37, b~/sigma_w = sqrt(tau d log log d) sigma_B (docs/gradient_features.md)."""
    return math.sqrt(tau * d * math.log(math.log(d))) * sigma_B


def _mixture(name, d, sigma):
    """The data models of E1: the XOR mixture (E[y x] = 0) and a two-cluster mixture with E[y x] != 0 (unequal
    standard deviations), on which Lemma B.71's twin identity w^(1)_{i+m} = w^(1)_i fails (docs/gradient_features.md)."""
    if name == "xor":
        return data.xor_mixture(d, sigma)
    mus = np.zeros((2, d))
    mus[0, 0] = mus[1, 1] = math.sqrt(d)
    return data.GaussianMixture(mus, [sigma, 1.5 * sigma], [0.5, 0.5], [1.0, -1.0])


def _first_step_sim(model, init, n, eta1, loss, seed, seeds=1, both=False, device="cpu"):
    """W^(1) (seeds, 4m, d) of the torch first step (Algorithm 4 with T = 1) on n samples from the fixed init (and
    a^(1) (seeds, 4m) first when ``both``)."""
    sim = _sim().train(model, width=len(init[0]) // 4, method="alg4", steps=1, n_train=n, lr_first=eta1, loss=loss,
                       init=init, seeds=seeds, seed=seed, n_test=2, device=device)
    return (sim["a1"], sim["W1"]) if both else sim["W1"]


# ---- E1: the first step at finite n against the population step ----------------------------------------------------

_TOL_E1 = 0.05          # fraction of neurons outside the per-neuron tolerance (_E1_FACTOR)
_E1_FACTOR = 3.0        # E1: ||w_sim - w_pred|| / ||w_pred|| <= 3 sqrt(B_x2/n) / ||G||
_SLOPE_BAND = 0.1       # |slope + 1/2| of the median relative error against n (the paper's -1/3 is 0.17 away)


@claim(id="gradient_features.first_step_rate", model="gradient_features",
       title="One-step feature emergence (E1): the torch first step on n samples matches the exact population step "
             "w^(1) = eta^(1)|l'(0)| a^(0) G(w^(0), b) neuron by neuron, with error ~ n^{-1/2} (the paper's bound: "
             "n^{-1/3}), for hinge and base-2 logistic loss and with E[y x] != 0",
       source="[Shi24, eqs. (3.4), (3.9), (B.16)-(B.17), Remark B.13, Lemma B.18 (n^{-1/3}), Lemma B.71]",
       metric="max over settings and n of the fraction of the 2m distinct neurons with ||w_sim - w_pred|| > "
              "3 sqrt(B_x2/n) eta^(1)|l'(0)||a_i| (a relative tolerance 3 sqrt(B_x2/n)/||G||), w_pred the "
              "population first step (its closed form), w_sim the torch step on n samples",
       tolerance=_TOL_E1,
       tolerance_origin="per-neuron error within 3 sqrt(B_x2/n)/||G|| for >= 95 % of neurons; "
                        "E||G~ - G||^2 <= B_x2/n, so 3 rms is rarely exceeded. Lemma B.71's twin identity (wrong when "
                        "E[y x] != 0) misses every twin neuron (50 %), the natural-log logistic |l'(0)| = 1/2 is 31 % "
                        "off",
       kind="training",
       nulls={"twins": "Lemma B.71's twin identity w^(1)_{i+m} = w^(1)_i (true only when E[y x] = 0)",
              "natural_log": "the natural-log logistic loss, |l'(0)| = 1/2 instead of 1/(2 ln 2)"},
       quick={"settings": [["xor", 64, 1.0, "hinge"], ["pair", 64, 1.0, "logistic"]], "m": 128, "tau": 1.0,
              "n": [1000, 10_000, 100_000], "seeds": 1},
       full={"settings": [["xor", 64, 1.0, "hinge"], ["xor", 256, 3.0, "hinge"], ["pair", 64, 1.0, "logistic"],
                          ["xor", 64, 1.0, "logistic"]], "m": 512, "tau": 1.0,
             "n": [1000, 10_000, 100_000, 400_000], "seeds": 2})
def first_step_rate(size, device, outdir):
    rows, worst, slopes, nulls = [], 0.0, {}, {"twins": 0.0, "natural_log": 0.0}
    fig, (ax0, ax1) = subplots(2, panel_size=(5.0, 4.0))
    ns = np.array(size["n"], float)
    for i, (name, d, sigma, loss) in enumerate(size["settings"]):
        model = _mixture(name, d, sigma)
        m, eta1 = size["m"], 1.0
        init = framework.symmetric_init(d, m, 1.0, 1.0, _b_tilde(d, sigma, size["tau"]),
                                        rng=np.random.default_rng([i, 0]))
        a0 = init[0]
        _, W1p = framework.first_step(model, *init, eta1, loss=loss)
        scale = eta1 * framework.loss_slope(loss) * np.abs(a0[:2 * m])          # ||w_pred|| = scale ||G||
        Bx2 = model.bounds().Bx2
        W1_null = {"twins": np.concatenate([W1p[:m], W1p[:m]]),
                   "natural_log": W1p[:2 * m] * (math.log(2.0) if loss == "logistic" else 1.0)}
        med = []
        for n in size["n"]:
            W1s = _first_step_sim(model, init, n, eta1, loss, seed=i, seeds=size["seeds"], device=device)
            err = np.linalg.norm(W1s[:, :2 * m] - W1p[:2 * m], axis=-1)               # (seeds, 2m)
            rel = err / np.linalg.norm(W1p[:2 * m], axis=1)
            out = float(np.mean(err > _E1_FACTOR * math.sqrt(Bx2 / n) * scale))
            worst = max(worst, out)
            for k, Wn in W1_null.items():   # the same tolerance radius, the same torch step, the null's prediction
                nulls[k] = max(nulls[k], float(np.mean(np.linalg.norm(W1s[:, :2 * m] - Wn, axis=-1)
                                                       > _E1_FACTOR * math.sqrt(Bx2 / n) * scale)))
            med.append(float(np.median(rel)))
            rows.append({"setting": name, "d": d, "sigma": sigma, "loss": loss, "n": n, "neurons": 2 * m,
                         "fraction_outside": out, "median_rel_err": med[-1],
                         "median_rel_tolerance": float(np.median(_E1_FACTOR * math.sqrt(Bx2 / n) * scale
                                                                 / np.linalg.norm(W1p[:2 * m], axis=1))),
                         "twin_rel_err_median": float(np.median(rel[:, m:2 * m]))})
        slope = float(np.polyfit(np.log(ns), np.log(med), 1)[0])
        slopes[f"{name}/{d}/{loss}"] = slope
        ax0.loglog(ns, med, "o-", color=f"C{i}", label=f"{name} d={d} sigma={sigma:g} {loss}: slope {slope:.2f}")
        ax0.loglog(ns, [r["median_rel_tolerance"] for r in rows[-len(ns):]], ":", color=f"C{i}",
                   label="per-neuron tolerance (median)")
        if i == 0:
            D = model.mus[0] / np.linalg.norm(model.mus[0])
            cos = lambda W: W @ D / np.linalg.norm(W, axis=-1)
            bins = np.linspace(-1, 1, 41)
            ax1.hist(cos(W1p[:2 * m]), bins=bins, histtype="step", color="k", lw=1.5, label="population (theory)")
            ax1.hist(cos(W1s[0, :2 * m]), bins=bins, histtype="step", color="C3",
                     label=f"torch step, n = {size['n'][-1]}")
            ax1.set(xlabel="cos(w_i^(1), D_1)", ylabel="neurons", title=f"{name}, d = {d}: first-step directions")
    ref = med[0] * (ns / ns[0]) ** -0.5
    ax0.loglog(ns, ref, "k--", lw=0.8, label="slope -1/2")
    ax0.loglog(ns, med[0] * (ns / ns[0]) ** (-1 / 3), "k-.", lw=0.8, label="slope -1/3 (Lemma B.18)")
    ax0.set(xlabel="n", ylabel="median ||w_sim - w_pred|| / ||w_pred||", title="E1: first step vs population")
    sample_axis(ax0, ns)
    _legend(ax0, ax1)
    path = save_figure(fig, outdir / "gradient_features.first_step_rate.png", title=claim_title(
        REGISTRY["gradient_features.first_step_rate"], worst, what="max fraction outside the per-neuron tolerance"))
    checks = {f"median error slope in n within {_SLOPE_BAND:g} of -1/2 in every setting":
              all(abs(s + 0.5) <= _SLOPE_BAND for s in slopes.values())}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, details={"slopes": slopes},
                       nulls=nulls,
                       message=f"max fraction outside {worst:.3f} (nulls: twins {nulls['twins']:.3f}, natural log "
                               f"{nulls['natural_log']:.3f}); slopes " + ", ".join(
                           f"{k}: {v:.3f}" for k, v in slopes.items()))


# ---- E1: the nice set is Binomial(m, p/2) -------------------------------------------------------------------------

_Z_NICE = 4.3           # max |z| over the four XOR features (two-sided 1.7e-5 each)


@claim(id="gradient_features.nice_fraction", model="gradient_features",
       title="Lemma B.5 made exact (E1): after the torch first step, the nice set G_(D,+1),Nice of each XOR feature "
             "D = +-D_1, +-D_3 has Binomial(m, p/2) size, p the feature probability (3.6) of the closed-form G",
       source="[Shi24, eqs. (3.5)-(3.6), (3.14), Definition B.4, Lemma B.5, Lemma B.38, Lemma B.40 (gamma = "
              "sigma_B/sqrt d, B_G = sqrt d/5)]",
       metric="max over the four features of |z|, z = (|G_Nice| - m p/2) / sqrt(m q (1 - q) + (m/2)^2 Var p-hat), "
              "q = p/2, |G_Nice| counted on the torch first step (n samples), p-hat = feature_probability by Monte "
              "Carlo over fresh initial neurons",
       tolerance=_Z_NICE,
       tolerance_origin="the nice count inside its binomial CI: 4 roughly independent binomial z (the "
                        "sd includes the Monte Carlo variance of p-hat; >= 20 expected counts, Gaussian): "
                        "P(|z| > 4.3) = 1.7e-5 each, Bonferroni over the 4 features: false-failure bound 6.8e-5 "
                        "(3.3 before: 0.4 %). Recorded max |z| 1.39 (m = 2048). The fraction p (Lemma B.5 without "
                        "the sign of a^(0)) is ~sqrt(m p/4) sd off: 8.8 sd at m = 8192 (quick), 2x the tolerance",
       kind="training",
       nulls={"no_sign_of_a0": "Lemma B.5 read without the sign of a^(0): each neuron nice with probability p, not p/2"},
       quick={"d": 64, "sigma_B": 1.0, "tau": 1.0, "m": 8192, "n": 5000, "n_mc": 20_000},
       full={"d": 64, "sigma_B": 1.0, "tau": 1.0, "m": 16_384, "n": 50_000, "n_mc": 2_000_000})
def nice_fraction(size, device, outdir):
    d, sigma, m = size["d"], size["sigma_B"], size["m"]
    model = data.xor_mixture(d, sigma)
    tau_b = _b_tilde(d, sigma, size["tau"])
    gamma, B_G, eta1 = sigma / math.sqrt(d), math.sqrt(d) / 5, 1.0            # Lemma B.40 / B.41
    init = framework.symmetric_init(d, m, 1.0, 1.0, tau_b, rng=np.random.default_rng(11))
    a0, _, b = init
    W1s = _first_step_sim(model, init, size["n"], eta1, "hinge", seed=11, device=device)[0]
    _, W1p = framework.first_step(model, *init, eta1)
    rows, zs, zs_null = [], [], []
    for j, D in enumerate(model.mus / np.linalg.norm(model.mus, axis=1, keepdims=True)):
        p, (lo, hi) = framework.feature_probability(model, D, 1, gamma, B_G, tau_b, n_mc=size["n_mc"],
                                             rng=np.random.default_rng([12, j]))
        q = p / 2
        sd = math.sqrt(m * q * (1 - q) + (m / 2) ** 2 * p * (1 - p) / size["n_mc"])
        count = len(framework.nice_set(W1s, a0, b, D, 1, gamma, B_G, eta1))
        count_pop = len(framework.nice_set(W1p, a0, b, D, 1, gamma, B_G, eta1))
        zs.append((count - m * q) / sd)
        sd_null = math.sqrt(m * p * (1 - p) + m ** 2 * p * (1 - p) / size["n_mc"])   # the null: q = p
        zs_null.append((count - m * p) / sd_null)
        rows.append({"feature": f"D_{j + 1}", "p_hat": p, "p_ci_low": lo, "p_ci_high": hi, "expected": m * q,
                     "sd": sd, "nice_torch": count, "nice_population": count_pop, "z": zs[-1]})
    worst = float(np.max(np.abs(zs)))
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    x = np.arange(len(rows))
    ax.errorbar(x, [r["expected"] for r in rows], yerr=[_Z_NICE * r["sd"] for r in rows], fmt="_", ms=20, color="k",
                capsize=4, label=f"m p/2 +- {_Z_NICE:g} sd (theory)")
    ax.plot(x, [r["nice_torch"] for r in rows], "o", color="C0", label=f"torch step, n = {size['n']}")
    ax.plot(x + 0.1, [r["nice_population"] for r in rows], "s", color="C1", ms=4, label="population step")
    ax.plot(x, [2 * r["expected"] for r in rows], "x", color="C3", label="m p (no sign of a^(0))")
    ax.set_xticks(x, [f"(D_{j + 1}, +1)" for j in x])
    ax.set(ylabel="|G_Nice|", title=f"E1 nice sets, XOR d = {d}, m = {m}: max |z| {worst:.2f}")
    _legend(ax)
    path = save_figure(fig, outdir / "gradient_features.nice_fraction.png", title=claim_title(
        REGISTRY["gradient_features.nice_fraction"], worst, what="max |z|"))
    checks = {"every feature expects >= 20 nice neurons (a non-trivial count)": all(r["expected"] >= 20 for r in rows)}
    null = float(np.max(np.abs(zs_null)))
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls={"no_sign_of_a0": null},
                       message=f"max |z| {worst:.2f} (null without the sign of a^(0): {null:.2f}); nice counts " + ", ".join(
                           f"{r['feature']}: {r['nice_torch']} vs {r['expected']:.1f}" for r in rows)
                               + f"; p-hat {rows[0]['p_hat']:.4f}")


# ---- E5: uniform parity, the exact first step on the hypercube ------------------------------------------------------

_TOL_E5 = 1e-9          # float64 sums over 2^d points
_P_E5 = 1e-4            # finite-n z: P(max |z| > threshold) over the 2m d coordinates (Bonferroni)
_Z_P = 4.0              # the cone count against m p (two-sided 6.3e-5)


class _Hypercube:
    """The uniform parity as an exhaustive sample: ``sample`` returns all 2^d points of {+-1}^d with their labels,
    so the empirical step of the torch training on it is the population step exactly."""

    def __init__(self, model):
        self.model = model
        bits = (np.arange(2 ** model.dim)[:, None] >> np.arange(model.dim)) & 1
        X = 2.0 * bits - 1.0
        self.X, self.y = X, np.prod(X[:, model.subset], axis=1)

    def __getattr__(self, name):
        return getattr(self.model, name)

    def sample(self, n, rng):
        return self.X, self.y


def _parity_init(d, k, m, seed):
    """The init of B.479: a ~ U{+-1}, w ~ U{+-1}^d, b ~ U{-1 + 1/k, ..., 1 - 1/k}, mirrored by (3.9)."""
    rng = np.random.default_rng(seed)
    b = (rng.integers(1, 2 * k, m) - k) / k
    return framework.symmetric_init(d, m, 1.0, 1.0, b, rng=rng, law="sign")


@claim(id="gradient_features.uniform_parity_step", model="gradient_features",
       title="Uniform parity (E5): the torch first step on the whole hypercube equals eta^(1) a G with the corrected "
             "G_j = xi_{|A^{j}|} chi_{A^{j}}(w)/2 (B.548-B.549 lack the 1/2 and use xi_{k-1} off A), the finite-n "
             "step scatters around it with the binomial SE, and a fraction 2^{-(k-1)} of the neurons is in the "
             "infinity-norm cone of the parity feature (Lemma B.64)",
       source="[Shi24, Assumption B.53, eq. (B.479), Algorithm 6, eqs. (B.546)-(B.549), Lemma B.64]",
       metric="max over neurons and coordinates of |W1_torch - W1_theory| / max |W1_theory|, W1_torch the torch first "
              "step (eta^(1) = 1/(k |xi_{k-1}|), lambda = 1/eta^(1)) on all 2^d points of the hypercube, W1_theory "
              "framework.first_step with UniformParity.simplified_gradient",
       tolerance=_TOL_E5,
       tolerance_origin="exact identity: float64 sums of 2^d terms (relative rounding ~1e-13); the paper's B.548-B.549 "
                        "(no 1/2) are 100 % off, and their xi_{k-1} for j not in A is (d-k)/(k-1) times xi_{k+1}. "
                        "Checks: the finite-n z (known variance, Gaussian) below the normal quantile at family-wise "
                        "1e-4 over the 2 m d coordinates (Bonferroni: 5.7 quick, 6.0 full); the cone count, binomial, "
                        "within 4 sd (6.3e-5); the Monte Carlo p within 0.01 = 4.1 sd (3.6e-5). False-failure bound "
                        "2.0e-4",
       kind="independent",
       nulls={"paper_B548": "the paper's B.548-B.549 as printed: no factor 1/2, and xi_{k-1} also for j not in A"},
       quick={"d": 13, "k": 4, "m": 256, "n": 40_000},
       full={"d": 15, "k": 4, "m": 2048, "n": 1_000_000})
def uniform_parity_step(size, device, outdir):
    d, k, m = size["d"], size["k"], size["m"]
    model = parity.UniformParity(d, k)
    init = _parity_init(d, k, m, seed=5)
    a0 = init[0]
    eta1 = 1.0 / (k * abs(model.xi(k - 1)))                                        # Theorem B.56
    _, W1p = framework.first_step(model, *init, eta1)
    cube = _Hypercube(model)
    exact = _sim().train(cube, width=m, method="alg6", steps=1, n_train=2 ** d, lr_first=eta1, init=init, n_test=2,
                         device=device)["W1"][0]
    worst = float(np.max(np.abs(exact - W1p)) / np.max(np.abs(W1p)))
    W1_paper = (eta1 * framework.loss_slope("hinge") * a0[:, None]
                * model.simplified_gradient(init[1], init[2], convention="paper"))
    null_paper = float(np.max(np.abs(exact - W1_paper)) / np.max(np.abs(W1_paper)))
    finite = _first_step_sim(model, init, size["n"], eta1, "hinge", seed=6, device=device)[0]
    # SE of eta a y x_j 1[w.x > b]: y^2 = x_j^2 = 1 and P[w.x > b] = 1/2 exactly (d odd, |b| < 1)
    G = W1p[:2 * m] / (eta1 * a0[:2 * m, None])
    z = (finite[:2 * m] - W1p[:2 * m]) / (eta1 * np.abs(a0[:2 * m, None]) * np.sqrt((0.5 - G ** 2) / size["n"]))
    z_max = float(-special.ndtri(_P_E5 / (2 * z.size)))                   # 5.7 quick, 6.0 full
    case = bounds.case_parameters("uniform_parity", d=d, k=k)
    D = model.features()[0]
    in_cone = (framework.cone_membership(exact[:m], D, case["gamma_inf"], norm="linf")
               | framework.cone_membership(exact[:m], -D, case["gamma_inf"], norm="linf"))
    p_mc = sum(framework.feature_probability(model, s * D, 1, case["gamma_inf"], 0.0, 0.5, n_mc=20_000, rng=7 + i,
                                             law="sign", norm="linf")[0] for i, s in enumerate((1, -1)))
    count, expected = int(in_cone.sum()), m * case["p"]
    z_p = (count - expected) / math.sqrt(expected * (1 - case["p"]))
    rows = [{"d": d, "k": k, "m": m, "xi_k_minus_1": model.xi(k - 1), "xi_k_plus_1": model.xi(k + 1),
             "max_rel_diff_cube": worst, "n": size["n"], "max_abs_z_finite_n": float(np.abs(z).max()),
             "z_threshold": z_max, "cone_count": count, "expected_m_p": expected, "p_paper": case["p"],
             "p_monte_carlo": p_mc,
             "z_count": z_p}]
    fig, (ax0, ax1) = subplots(2, panel_size=(5.0, 4.0))
    onA = np.isin(np.arange(d), model.subset)
    for mask, lab, c in ((onA, "j in A", "C0"), (~onA, "j not in A", "C1")):
        ax0.plot(W1p[:2 * m][:, mask].ravel(), exact[:2 * m][:, mask].ravel(), "o", ms=4, color=c,
                 label=f"{lab}: hypercube (exact)")
        ax0.plot(W1p[:2 * m][:, mask].ravel(), finite[:2 * m][:, mask].ravel(), ".", ms=2, alpha=0.3, color=c,
                 label=f"{lab}: n = {size['n']}")
    lo, hi = ax0.get_xlim()
    ax0.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="theory = torch")
    ax0.plot([lo, hi], [2 * lo, 2 * hi], "k:", lw=0.8, label="paper B.548 (no 1/2)")
    ax0.set(xlabel="w^(1)_ij, closed form (corrected)", ylabel="w^(1)_ij, torch step",
            title=f"uniform parity d = {d}, k = {k}: max rel. diff {worst:.1e}")
    u = np.linspace(-5, 5, 200)
    ax1.hist(z.ravel(), bins=40, density=True, histtype="step", color="C0", label=f"z at n = {size['n']}")
    ax1.plot(u, np.exp(-u ** 2 / 2) / math.sqrt(2 * math.pi), "k--", lw=1, label="N(0, 1)")
    ax1.set(xlabel="z = (w_torch - w_theory) / SE", ylabel="density",
            title=f"max |z| {np.abs(z).max():.2f}; cone count {count} vs m 2^-(k-1) = {expected:.0f}")
    _legend(ax0, ax1)
    path = save_figure(fig, outdir / "gradient_features.uniform_parity_step.png", title=claim_title(
        REGISTRY["gradient_features.uniform_parity_step"], worst, what="max rel. diff"))
    checks = {f"finite-n step: max |z| below the {_P_E5:g} Bonferroni threshold": float(np.abs(z).max()) <= z_max,
              f"cone count within {_Z_P:g} sd of m 2^-(k-1)": abs(z_p) <= _Z_P,
              "Monte Carlo p of the exact G within 0.01 of 2^-(k-1)": abs(p_mc - case["p"]) <= 0.01}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls={"paper_B548": null_paper},
                       message=f"hypercube: max rel. diff {worst:.1e} (paper's B.548: {null_paper:.2f}); n = {size['n']}: max |z| "
                               f"{np.abs(z).max():.2f}; cone count {count} vs {expected:.1f} (z {z_p:.2f}), "
                               f"p Monte Carlo {p_mc:.4f} vs 2^-(k-1) = {case['p']:.4f}")


# ---- E3: beyond fixed features --------------------------------------------------------------------------------------

_TOL_E3 = 0.006         # |test error of the learned features at the largest width - Bayes error|
_GAP_E3 = 0.1           # random features at least this much worse at every width
_ETA1_E3 = 1e-3         # first step size; sigma_a = (b~/beta)/(eta^(1) median ||G||)


def _top_eigenvalue(F, iters=50):
    """Largest eigenvalue L of the feature covariance F^T F / n (power iteration): GD on a takes eta = 1/L."""
    v = np.ones(F.shape[1])
    for _ in range(iters):
        v = F.T @ (F @ v) / len(F)
        L = float(np.linalg.norm(v))
        v /= L
    return L


def _frozen_fit(model, init, size, seed, device):
    """Test error and test loss of the second layer trained by torch GD (T steps, eta = 1/L, L the largest eigenvalue
    of the empirical feature covariance) on frozen first-layer features ``init = (a, W, b)`` (the "rf" method)."""
    a, W, b = init
    X = model.sample(size["n"], np.random.default_rng([seed, 99]))[0]
    L = _top_eigenvalue(np.maximum(X @ W.T - b, 0.0))
    sim = _sim().train(model, width=len(a) // 4, method="rf", steps=size["T"], n_train=size["n"], lr=1.0 / L, init=init,
                       seeds=1, seed=seed, n_test=size["test"], n_points=2, device=device)
    return float(sim["error"][0, -1]), float(sim["loss"][0, -1])


@claim(id="gradient_features.beyond_fixed_features", model="gradient_features",
       title="Beyond fixed features (E3): on the XOR mixture, the second layer trained on the features of one "
             "gradient step reaches the Bayes error at small width, while the same training on the random initial "
             "features (equal width 4m) stays near chance",
       source="[Shi24, Section 3.4 (XOR: Omega(log d) neurons vs Omega(d^2) fixed features), Proposition 3.23, "
              "Algorithm 4, App. B.5.3 (B.36-B.42)]",
       metric="|test error of the learned-feature network at the largest width - Bayes error|, the network: torch "
              "first step (lambda = 1/eta^(1)) on n samples, then torch GD on a with W^(1) frozen on the same n "
              "samples; Bayes error by quadrature",
       tolerance=_TOL_E3,
       tolerance_origin="learned features reach 0.018-0.019 against the Bayes error 0.01825 (d = 100, "
                        "sigma_B = 3) at 2m >= 128 (measured here: 0.0202 at 4m = 512, n = 5000: an excess of 0.0019); "
                        "the test error is binomial with SE 6.7e-4 on 4e4 points (quick) and 6.0e-4 on 5e4 (full), "
                        "so 0.006 is 6.1 (6.8) SE above the measured excess: false-failure bound 4.5e-10 quick, "
                        "3.7e-12 full (1e4 points before: 3.1 SE, 1.1e-3). Half the Bayes error (Q for 2Q) "
                        "is 0.011 below the learned error, twice it 0.016 above",
       kind="training",
       nulls={"random_features": "fixed random features W^(0) (a kernel: no feature learning) reach the Bayes error "
                                 "at the same width",
              "half_bayes": "the Bayes error Q(||mu||/sigma) instead of 2Q: the learned error lands at it"},
       quick={"d": 100, "sigma_B": 3.0, "tau": 1.0, "widths": [8, 128], "n": 5000, "test": 40_000, "T": 2000},
       full={"d": 100, "sigma_B": 3.0, "tau": 1.0, "widths": [8, 32, 128, 512], "n": 20_000, "test": 50_000,
             "T": 3000})
def beyond_fixed_features(size, device, outdir):
    d, sigma = size["d"], size["sigma_B"]
    model = data.xor_mixture(d, sigma)
    bayes = model.bayes_error()
    b_tilde = _b_tilde(d, sigma, size["tau"])
    beta = 2 * math.sqrt(math.log(d)) * sigma                  # the bias of g* (B.41, tau~ = 1): ||w^(1)|| ~ b~/beta
    rows = []
    for i, m in enumerate(size["widths"]):
        a0, W0, b = framework.symmetric_init(d, m, 1.0, 1.0, b_tilde, rng=np.random.default_rng([21, i]))
        _, W1p = framework.first_step(model, a0, W0, b, 1.0)
        # Theorem B.11's scales: eta^(1) small (a^(1) = eta^(1) A ~ 0) and sigma_a large, so that ||w^(1)|| ~ b~/beta
        # (the scale Lemma B.6 selects)
        a0 = a0 * b_tilde / beta / float(np.median(np.linalg.norm(W1p[:m], axis=1))) / _ETA1_E3
        init = (a0, W0, b)
        step = _sim().train(model, width=m, method="alg4", steps=1, n_train=size["n"], lr_first=_ETA1_E3, init=init,
                            seeds=1, seed=i, n_test=2, device=device)
        learned = (step["a1"][0], step["W1"][0], b)
        W0s = W0 * float(np.median(np.linalg.norm(step["W1"][0], axis=1)) / np.median(np.linalg.norm(W0, axis=1)))
        err_l, loss_l = _frozen_fit(model, learned, size, i, device)
        err_r, loss_r = _frozen_fit(model, (a0, W0s, b), size, i, device)
        rows.append({"m": m, "width_4m": 4 * m, "n": size["n"], "learned_error": err_l, "learned_hinge": loss_l,
                     "random_error": err_r, "random_hinge": loss_r, "bayes_error": bayes})
    gap = abs(rows[-1]["learned_error"] - bayes)
    nulls = {"random_features": abs(rows[-1]["random_error"] - bayes),
             "half_bayes": abs(rows[-1]["learned_error"] - bayes / 2)}
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    N = [r["width_4m"] for r in rows]
    ax.semilogx(N, [r["learned_error"] for r in rows], "o-", color="C0", label="one gradient step, then GD on a")
    ax.semilogx(N, [r["random_error"] for r in rows], "s-", color="C1", label="random features W^(0), GD on a")
    ax.axhline(bayes, color="k", ls="--", label=f"Bayes error {bayes:.4f} (quadrature)")
    ax.axhline(0.5, color="k", ls=":", lw=0.8, label="chance")
    ax.set(xlabel="width 4m", ylabel="test error",
           title=f"E3 XOR d = {d}, sigma_B = {sigma:g}, n = {size['n']}: |learned - Bayes| = {gap:.4f}")
    sample_axis(ax, N)
    _legend(ax)
    path = save_figure(fig, outdir / "gradient_features.beyond_fixed_features.png", title=claim_title(
        REGISTRY["gradient_features.beyond_fixed_features"], gap, what="|learned - Bayes|"))
    checks = {f"random features at least {_GAP_E3:g} worse at every width":
              all(r["random_error"] - r["learned_error"] >= _GAP_E3 for r in rows),
              "learned error not below the Bayes error (3 SE of the test set)": all(
                  r["learned_error"] >= bayes - 3 * math.sqrt(bayes * (1 - bayes) / size["test"]) for r in rows)}
    return ClaimResult(measured=gap, checks=checks, figure=str(path), table=rows, nulls=nulls,
                       message=f"|learned - Bayes| {gap:.4f} (nulls: random features {nulls['random_features']:.3f}, "
                               f"Q for 2Q {nulls['half_bayes']:.4f}); test error learned / random: " + ", ".join(
                           f"4m={r['width_4m']}: {r['learned_error']:.4f} / {r['random_error']:.3f}" for r in rows)
                               + f"; Bayes {bayes:.5f}")


# ---- E6: multi-index, Algorithm 7's first step -----------------------------------------------------------------------

def _principal_sines(W, U):
    """Sines of the principal angles between the top-r right singular subspace of W (rows) and span(U)."""
    r = U.shape[0]
    V = np.linalg.svd(W, full_matrices=False)[2][:r]
    c = np.clip(np.linalg.svd(V @ U.T, compute_uv=False), 0.0, 1.0)
    return np.sqrt(1.0 - c ** 2)


@claim(id="gradient_features.multi_index_step", model="gradient_features",
       title="Multi-index (E6): Algorithm 7's torch first step (square loss, b = 0, labels preprocessed) matches the "
             "Hermite closed form w^(1) = 2 eta^(1) a E[y x 1[w.x > 0]] (degree 2: phi(0)(H w^ - (w^T H w^) w^/2)) "
             "with error ~ n^{-1/2}, and span(W^(1)) recovers span(U)",
       source="[Shi24, Assumption B.66, eqs. (B.561)-(B.562), Algorithm 7, Lemma B.68]",
       metric="|slope + 1/2| of the median over the 2m distinct neurons of ||w_sim - w_pred|| / ||w_pred|| against n "
              "(log-log fit), w_pred = 2 eta^(1) a^(0) MultiIndexPolynomial.first_step_direction(W^(0))",
       tolerance=_SLOPE_BAND,
       tolerance_origin="CLT: the empirical step deviates by O(n^{-1/2}) (the sample preprocessing rho-hat, beta-hat "
                        "adds another O(n^{-1/2})); the paper's bound is n^{-1/3}; a theory missing the radial "
                        "-(w^T H w)/2 w^ term (~15 % of ||G|| at d = 16) leaves an error floor that flattens the slope",
       kind="training",
       nulls={"no_radial_term": "the naive degree-2 direction phi(0) H w^ without its radial part "
                                "-phi(0)(w^T H w^) w^/2"},
       quick={"d": 16, "terms": [[[2, 0], 0.6], [[1, 1], 0.6], [[0, 2], -0.5291502622129182]], "m": 64,
              "n": [3000, 30_000, 300_000]},
       full={"d": 32, "terms": [[[2, 0], 0.6], [[1, 1], 0.6], [[0, 2], -0.5291502622129182]], "m": 256,
             "n": [3000, 30_000, 300_000, 3_000_000]})
def multi_index_step(size, device, outdir):
    d, m = size["d"], size["m"]
    U = np.linalg.qr(np.random.default_rng(31).standard_normal((d, 2)))[0].T
    terms = {tuple(a): c for a, c in size["terms"]}
    raw = multi_index.MultiIndexPolynomial(U, terms)
    model = multi_index.MultiIndexPolynomial(U, terms, preprocess=True)
    eta1 = 1.0
    rows, med, sines, med_null = [], [], [], []
    for n in size["n"]:
        sim = _sim().train(raw, width=m, method="alg7", steps=1, n_train=n, lr_first=eta1, seeds=1, seed=32, n_test=2,
                           device=device)
        a0, W0, W1s = sim["a0"][0], sim["W0"][0], sim["W1"][0]
        W1p = 2 * eta1 * a0[:, None] * model.first_step_direction(W0)
        rel = np.linalg.norm(W1s[:2 * m] - W1p[:2 * m], axis=1) / np.linalg.norm(W1p[:2 * m], axis=1)
        med.append(float(np.median(rel)))
        what = W0 / np.linalg.norm(W0, axis=1, keepdims=True)
        quad = np.einsum("mi,ij,mj->m", what, model.hessian(), what)
        W1n = W1p + 2 * eta1 * a0[:, None] * (0.5 / math.sqrt(2 * math.pi)) * quad[:, None] * what
        med_null.append(float(np.median(np.linalg.norm(W1s[:2 * m] - W1n[:2 * m], axis=1)
                                        / np.linalg.norm(W1n[:2 * m], axis=1))))
        sines.append((float(_principal_sines(W1s, U).max()), float(_principal_sines(W1p, U).max())))
        rows.append({"d": d, "m": m, "n": n, "median_rel_err": med[-1], "max_rel_err": float(rel.max()),
                     "sin_max_angle_torch": sines[-1][0], "sin_max_angle_theory": sines[-1][1]})
    ns = np.array(size["n"], float)
    slope = float(np.polyfit(np.log(ns), np.log(med), 1)[0])
    slope_null = float(np.polyfit(np.log(ns), np.log(med_null), 1)[0])
    fig, (ax0, ax1) = subplots(2, panel_size=(5.0, 4.0))
    ax0.loglog(ns, med, "o-", color="C0", label=f"median ||w_sim - w_pred|| / ||w_pred||: slope {slope:.2f}")
    ax0.loglog(ns, med_null, "x:", color="C3", label=f"null without the radial term: slope {slope_null:.2f}")
    ax0.loglog(ns, med[0] * (ns / ns[0]) ** -0.5, "k--", lw=0.8, label="slope -1/2")
    ax0.loglog(ns, med[0] * (ns / ns[0]) ** (-1 / 3), "k-.", lw=0.8, label="slope -1/3")
    ax0.set(xlabel="n", ylabel="relative error", title=f"E6 Algorithm 7 step 1, d = {d}, r = 2")
    ax1.loglog(ns, [s[0] for s in sines], "o-", color="C0", label="torch W^(1)")
    ax1.loglog(ns, [s[1] for s in sines], "k--", label="population W^(1) (Hermite closed form)")
    ax1.set(xlabel="n", ylabel="sin of the largest principal angle", title="span(W^(1)) vs span(U)")
    sample_axis(ax0, ns)
    sample_axis(ax1, ns)
    _legend(ax0, ax1)
    path = save_figure(fig, outdir / "gradient_features.multi_index_step.png", title=claim_title(
        REGISTRY["gradient_features.multi_index_step"], abs(slope + 0.5), what="|slope + 1/2|"))
    checks = {"the torch subspace angle decreases with n": all(np.diff([s[0] for s in sines]) < 0),
              "at the largest n the torch angle is within 0.05 of the population one":
              abs(sines[-1][0] - sines[-1][1]) <= 0.05}
    return ClaimResult(measured=abs(slope + 0.5), checks=checks, figure=str(path), table=rows,
                       details={"slope": slope, "slope_null_no_radial": slope_null},
                       nulls={"no_radial_term": abs(slope_null + 0.5)},
                       message=f"slope {slope:.3f} (null without the radial term: {slope_null:.3f}); median rel. error " + ", ".join(
                           f"n={r['n']}: {r['median_rel_err']:.3f}" for r in rows)
                               + f"; sin angle torch/theory {sines[-1][0]:.3f}/{sines[-1][1]:.3f}")


# ---- E2 and E7: the good network of Lemma B.6 and its lottery ticket ----------------------------------------------

_TOL_E2 = 1.5e-3        # |L(a~ on the torch first step) - L(a~ on the population first step)| at the largest width
_B_EPS = 1.0            # Lemma B.6's bias floor (every XOR target bias 2c > B_eps: beta_j = |b*_j|)


def _xor_good_network(size, m, seed, device, population=True):
    """XOR model, g*, the first-step weights at width m (torch on n samples and, if ``population``, the population
    step) and Lemma B.6's a~ on each; returns a dict of them."""
    d, sigma, tt = size["d"], size["sigma_B"], size["tau_tilde"]
    model = data.xor_mixture(d, sigma)
    case = bounds.case_parameters("xor", d=d, sigma_B=sigma, tau_tilde=tt)
    gstar = model.ground_truth(tt)
    # Theorem B.11's scales: eta^(1) small, sigma_a = 1/eta^(1) (W^(1) = eta^(1) a^(0) G is unchanged, a^(1) ~ 0)
    init = framework.symmetric_init(d, m, 1.0 / _ETA1_E3, 1.0, case["b_over_sigma_w"],
                                    rng=np.random.default_rng([41, seed]))
    a0, b = init[0], init[2]
    out = {"model": model, "case": case, "gstar": gstar, "init": init,
           "W1": {"population": framework.first_step(model, *init, _ETA1_E3)[1]} if population else {}}
    a1, W1 = _first_step_sim(model, init, size["n"], _ETA1_E3, "hinge", seed=seed, both=True, device=device)
    out["a1"], out["W1"]["torch"] = a1[0], W1[0]
    out["a_tilde"] = {k: framework.good_second_layer(W1, a0, b, gstar, case["gamma"], case["B_G"], _B_EPS,
                                                     size["eps_a"], _ETA1_E3)[0] for k, W1 in out["W1"].items()}
    return out


def _sparse_loss(model, a, W, b, n, seed):
    """Population hinge loss (Monte Carlo, with its SE) of the network restricted to the support of a."""
    keep = a != 0
    if not keep.any():
        return 1.0, 0.0
    return framework.population_loss(model, a[keep], W[keep], b[keep], n=n, seed=seed)


@claim(id="gradient_features.good_network", model="gradient_features",
       title="A good network exists after one step (Lemma B.6, E2): the constructive second layer a~ on the torch "
             "first-step features of the XOR mixture has the loss that the population first step predicts, above "
             "OPT = L(g*) by an excess that does not vanish with the width at fixed eps_a, gamma (as (B.52) allows)",
       source="[Shi24, Lemma 3.14, Lemma B.6 (eqs. (B.25)-(B.52)), Lemma B.41 (g*, OPT bound)]",
       metric="|L(g(a~, W^(1), b)) - L(g(a~_pop, W^(1)_pop, b))| at the largest width: W^(1) the torch first step on "
              "n samples, W^(1)_pop the population first step (framework.first_step) from the same init, a~ = "
              "framework.good_second_layer on each (eps_a below the paper's value, which exceeds 1 here), L by Monte "
              "Carlo on common points (framework.population_loss)",
       tolerance=_TOL_E2,
       tolerance_origin="Measured at the largest width: 6.8e-4 (quick, 4m = 16384), 3.4e-4 (full, 65536), against a "
                        "Monte Carlo SE of 1.3e-4 and 4e-5 per loss; at 4m = 4096 the nice sets are still small and "
                        "the two differ by 4.6e-3. 1.5e-3 is 2.2x the larger measured value; the null 'a~ reaches "
                        "OPT' is 2.6e-3 (quick) and 4.5e-3 (full) off. (B.52) bounds the excess by r B_a1 (B_x1 (eps_a "
                        "+ sqrt(2 gamma)) + B_eps), which does not shrink with the width: reading Lemma B.6 as "
                        "'L(a~) -> OPT as the width grows' is not the lemma (measured excess flat from 4m = 16384)",
       kind="training",
       nulls={"reaches_opt": "L(a~) = L(g*) (quadrature): Lemma B.6 read as 'the construction reaches OPT as the "
                             "width grows' at fixed eps_a, gamma",
              "zero_opt": "the constructive second layer reaches zero loss",
              "B41_opt_bound": "B.41's OPT bound taken as the loss of a~"},
       quick={"d": 64, "sigma_B": 1.0, "tau_tilde": 0.9, "widths": [1024, 4096], "n": 5000, "eps_a": 0.1,
              "n_loss": 100_000, "n_mc": 20_000},
       full={"d": 64, "sigma_B": 1.0, "tau_tilde": 0.9, "widths": [256, 1024, 4096, 16_384], "n": 20_000,
             "eps_a": 0.1, "n_loss": 1_000_000, "n_mc": 200_000})
def good_network(size, device, outdir):
    rows = []
    for i, m in enumerate(size["widths"]):
        g = _xor_good_network(size, m, i, device)
        model, case = g["model"], g["case"]
        L_star = model.ground_truth_loss(size["tau_tilde"])[0]
        D = g["gstar"][1][0]
        p = framework.feature_probability(model, D, 1, case["gamma"], case["B_G"], case["b_over_sigma_w"],
                                          n_mc=size["n_mc"], rng=np.random.default_rng([42, i]))[0]
        row = {"m": m, "L_gstar": L_star, "OPT_bound_B41": case["OPT"], "p_hat": p,
               "bound_B25": bounds.good_network_bound(p, case["gamma"], case["B_G"], case["r"], case["B_a1"],
                                                      case["B_b"], case["Bx1"], m, B_eps=_B_EPS, OPT=L_star)}
        for k in ("torch", "population"):
            at = g["a_tilde"][k]
            L, se = _sparse_loss(model, at, g["W1"][k], g["init"][2], size["n_loss"], seed=43)
            row |= {f"L_{k}": L, f"se_{k}": se, f"support_{k}": int((at != 0).sum())}
        rows.append(row)
    last = rows[-1]
    gap = abs(last["L_torch"] - last["L_population"])
    nulls = {"reaches_opt": abs(last["L_torch"] - last["L_gstar"]), "zero_opt": abs(last["L_torch"]),
             "B41_opt_bound": abs(last["L_torch"] - last["OPT_bound_B41"])}
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    W = [4 * r["m"] for r in rows]
    floor = 1e-6
    ax.loglog(W, [max(r["L_torch"], floor) for r in rows], "o-", color="C0", label="Lemma B.6 a~ on torch W^(1)")
    ax.loglog(W, [max(r["L_population"], floor) for r in rows], "s--", color="C1",
              label="Lemma B.6 a~ on population W^(1)")
    ax.axhline(max(rows[0]["L_gstar"], floor), color="k", ls="--", label="L(g*) (quadrature)")
    ax.loglog(W, [r["bound_B25"] for r in rows], "^:", color="C3", label="B.25 bound (vacuous)")
    ax.axhline(rows[0]["OPT_bound_B41"], color="C3", ls="-.", lw=0.8, label="B.41 OPT bound")
    ax.set(xlabel="width 4m", ylabel="hinge loss", title=f"E2 good network, XOR d = {size['d']}: torch vs population {gap:.1e}")
    sample_axis(ax, W)
    _legend(ax)
    path = save_figure(fig, outdir / "gradient_features.good_network.png", title=claim_title(
        REGISTRY["gradient_features.good_network"], gap, what="gap"))
    checks = {"L(a~) below the B.25 bound at every width": all(r["L_torch"] <= r["bound_B25"] for r in rows),
              "L(a~) decreases from the smallest to the largest width": rows[-1]["L_torch"] < rows[0]["L_torch"]}
    return ClaimResult(measured=gap, checks=checks, figure=str(path), table=rows, nulls=nulls,
                       message=f"torch vs population a~: {gap:.1e} (nulls: L(a~) = L(g*) {nulls['reaches_opt']:.1e}, "
                               f"L(g*) := 0 {nulls['zero_opt']:.1e}, B.41 bound "
                               f"{nulls['B41_opt_bound']:.2f}); L(a~) torch/population: " + ", ".join(
                           f"4m={4 * r['m']}: {r['L_torch']:.2e}/{r['L_population']:.2e}" for r in rows)
                               + f"; L(g*) {rows[-1]['L_gstar']:.2e}; B.25 bound {rows[-1]['bound_B25']:.1f}")


_TOL_E7 = 0.01          # median over inits of the ticket's test hinge minus the full layer's, after the same T steps


def _pad4(idx):
    """Indices padded (by repeating the last) to a multiple of 4 (the sim's width is 4m); the repeats get a = 0."""
    extra = (-len(idx)) % 4
    return np.concatenate([idx, np.repeat(idx[-1:], extra)]), extra


def _subnetwork(a, W, b, idx):
    """The network (a, W, b) restricted to the neurons idx (padded by _pad4, the pads with a = 0)."""
    idx, extra = _pad4(idx)
    a_sub = a[idx].copy()
    a_sub[len(idx) - extra:] = 0.0
    return a_sub, W[idx], b[idx]


@claim(id="gradient_features.lottery_ticket", model="gradient_features",
       title="Lottery ticket (Prop. B.1, E7): after the torch first step, training the second layer only on the "
             "support of Lemma B.6's a~ (a few % of the neurons) reaches the loss of training the whole layer for the "
             "same T steps, for most inits; a random support of the same size does not",
       source="[Shi24, Proposition B.1, Lemma B.6]",
       metric="median over independent inits of: test hinge loss after T steps of torch GD on a (W^(1) frozen, "
              "eta = 1/L) from a^(1), restricted to U = supp(a~), minus the same for all 4m neurons (XOR mixture)",
       tolerance=_TOL_E7,
       tolerance_origin="Prop. B.1: the ticket has the guarantee of Theorem 3.12 (same OPT + error terms), with "
                        "probability over the init. Per init at m = 1024 (T = 200): gaps -0.040 to +0.006 over 6 "
                        "inits, sd 0.015, median -0.018; 0.01 is 2.9 sd of a 4-init median above it (4.2 at 8 "
                        "inits). The null's median +0.044 (quick). At m = 512 the ticket stalls at 2 of 8 inits (test "
                        "hinge 0.19 and 0.17 against 0.04 and 0.05, test error 5 % and 3 %, still 0.12 at T = 1000), so "
                        "the width is 1024 at both sizes. T = 200 at both sizes: at T = 1000 every network, a random "
                        "support of 84 neurons included, is within 0.01 of the full layer (0.0091 vs 0.0078), so "
                        "equal-T losses there cannot separate the two",
       kind="training",
       nulls={"random_support": "any sparse subnetwork works: a random support of the same size (no selection by "
                                "Lemma B.6's nice sets), trained the same way (median over the same inits)"},
       quick={"d": 64, "sigma_B": 1.0, "tau_tilde": 0.5, "m": 1024, "n": 5000, "eps_a": 1.0, "T": 200,
              "test": 10_000, "inits": 4},
       full={"d": 64, "sigma_B": 1.0, "tau_tilde": 0.5, "m": 1024, "n": 10_000, "eps_a": 1.0, "T": 200,
             "test": 50_000, "inits": 8})
def lottery_ticket(size, device, outdir):
    rows = []
    for s in range(size["inits"]):
        g = _xor_good_network(size, size["m"], s, device, population=False)
        model, b = g["model"], g["init"][2]
        a1, W1 = g["a1"], g["W1"]["torch"]
        ticket = np.flatnonzero(g["a_tilde"]["torch"])
        rand = np.sort(np.random.default_rng([52, s]).choice(len(a1), size=len(ticket), replace=False))
        fits = {name: _frozen_fit(model, net, size, 51, device) for name, net in (
            ("ticket", _subnetwork(a1, W1, b, ticket)), ("random", _subnetwork(a1, W1, b, rand)),
            ("full", (a1, W1, b)))}
        rows.append({"init": s, "neurons": len(ticket), "of": len(a1)}
                    | {f"test_hinge_{k}": v[1] for k, v in fits.items()}
                    | {f"test_error_{k}": v[0] for k, v in fits.items()})
    gap = {k: np.array([r[f"test_hinge_{k}"] - r["test_hinge_full"] for r in rows]) for k in ("ticket", "random")}
    measured, null = float(np.median(gap["ticket"])), float(np.median(gap["random"]))
    within = int((gap["ticket"] <= _TOL_E7).sum())
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    x = np.arange(len(rows))
    for k, color, marker, label in (("ticket", "C0", "o", "ticket U = supp(a~)"), ("random", "C3", "x",
                                    "random support, same size (null)"), ("full", "C1", "s", "full layer")):
        ax.semilogy(x, [r[f"test_hinge_{k}"] for r in rows], marker, color=color, ls="none", label=label)
    ax.axhline(model.ground_truth_loss(size["tau_tilde"])[0], color="k", ls="--", label="L(g*)")
    ax.set_xticks(x, [f"{r['init']}\n({r['neurons']})" for r in rows])
    ax.set(xlabel="init (ticket neurons)", ylabel=f"test hinge after T = {size['T']} steps",
           title=f"E7 lottery ticket: median gap {measured:+.4f}, ticket within tolerance at {within}/{len(rows)} inits")
    _legend(ax)
    path = save_figure(fig, outdir / "gradient_features.lottery_ticket.png", title=claim_title(
        REGISTRY["gradient_features.lottery_ticket"], measured, what="median gap"))
    checks = {"the ticket is sparse (< 10 % of the neurons) at every init": all(r["neurons"] < 0.1 * r["of"]
                                                                              for r in rows),
              "the ticket learns (median test hinge < 0.2)": np.median([r["test_hinge_ticket"] for r in rows]) < 0.2}
    return ClaimResult(measured=measured, checks=checks, figure=str(path), table=rows, nulls={"random_support": null},
                       message=f"median over {len(rows)} inits of test hinge ticket - full {measured:+.4f} (random "
                               f"support of the same size {null:+.4f}); the ticket within {_TOL_E7} of the full layer "
                               f"at {within}/{len(rows)} inits; per init ticket/random/full: " + ", ".join(
                           f"{r['test_hinge_ticket']:.4f}/{r['test_hinge_random']:.4f}/{r['test_hinge_full']:.4f} "
                           f"({r['neurons']} of {r['of']})" for r in rows))


# ---- E4: Algorithm 1 learning curves ----------------------------------------------------------------------------

_GAP_E4 = 0.02          # test error of Algorithm 1 at T minus the Bayes error


@claim(id="gradient_features.algorithm1_curve", model="gradient_features",
       title="Algorithm 1 (E4), finding: every neuron stays inside Lemma B.9's exact recursion bounds on |a_i^(t)| "
             "and ||w_i^(t) - w_i^(1)||, but with at least 10x slack (measured ~60x on a, ~1e4 on W): the lemma is valid "
             "and loose here; freezing W (Theorem 3.4's setting) gives the same curve, and the test error falls toward "
             "the Bayes error of the XOR mixture",
       source="[Shi24, Algorithm 1, Theorem 3.12, Lemma B.9 (eqs. (B.60)-(B.84)), Theorem B.2]",
       metric="max over neurons of the ratios |a_i^(T)| / bound_a(T) and ||w_i^(T) - w_i^(1)|| / bound_w(T), the "
              "bounds of Lemma B.9 (bounds.lemma_B9_bounds: the exact solution of the recursion B.72, no hidden "
              "constant), the torch Algorithm 1 on the XOR mixture d = 100, sigma_B = 3 (the V14 setting)",
       tolerance=0.1,
       tolerance_origin="Lemma B.9 is a bound (ratio <= 1); the finding is its slack: measured ratio 0.016 for a and "
                        "~1e-4 for W at the quick size, so 0.1 (a 10x slack) leaves 6x headroom. A bound tight to the "
                        "trajectory (Lemma B.9 / 60) puts the ratio near 1, and the recursion without its forcing "
                        "Z_i = B_x1 ||w_i^(1)|| + b~ bounds |a^(T)| by ~2|a^(1)| ~ 0 and is exceeded 1e3-fold",
       kind="finding",
       nulls={"tight_bound": "Lemma B.9's bound is tight: the trajectory reaches bound / 60 (the bound divided by 60)",
              "no_forcing": "Lemma B.9's recursion without its forcing Z_i (a second layer that does not move)"},
       quick={"d": 100, "sigma_B": 3.0, "tau": 1.0, "m": 128, "n": 500, "T": 2000, "eta_L": 1.0, "test": 10_000},
       full={"d": 100, "sigma_B": 3.0, "tau": 1.0, "m": 128, "n": 1000, "T": 3000, "eta_L": 1.0, "test": 50_000})
def algorithm1_curve(size, device, outdir):
    d, sigma, m = size["d"], size["sigma_B"], size["m"]
    model = data.xor_mixture(d, sigma)
    bayes = model.bayes_error()
    b_tilde = _b_tilde(d, sigma, size["tau"])
    beta = 2 * math.sqrt(math.log(d)) * sigma
    a0, W0, b = framework.symmetric_init(d, m, 1.0, 1.0, b_tilde, rng=np.random.default_rng(61))
    _, W1p = framework.first_step(model, a0, W0, b, 1.0)
    a0 = a0 * b_tilde / beta / float(np.median(np.linalg.norm(W1p[:m], axis=1))) / _ETA1_E3   # as in E3
    eta = size["eta_L"] / _top_eigenvalue(np.maximum(model.sample(5000, np.random.default_rng(63))[0]
                                                    @ (_ETA1_E3 * a0[:, None] * W1p).T - b, 0.0))
    runs = {train_W: _sim().train(model, width=m, method="alg1", steps=size["T"], n_train=size["n"],
                                  lr_first=_ETA1_E3, lr=eta, init=(a0, W0, b), train_W=train_W, seed=62,
                                  n_test=size["test"], n_points=31, device=device)
            for train_W in (True, False)}
    sim = runs[True]
    err = sim["error"][0]
    gap = float(err[-1] - bayes)
    a1, W1, aT, WT = sim["a1"][0], sim["W1"][0], sim["aT"][0], sim["WT"][0]
    a_bound, w_bound = bounds.lemma_B9_bounds(size["T"], np.abs(a1), np.linalg.norm(W1, axis=1), b_tilde,
                                              eta, model.bounds().Bx1)
    ratio_a = float(np.max(np.abs(aT) / a_bound))
    ratio_w = float(np.max(np.linalg.norm(WT - W1, axis=1) / w_bound))
    a_nf, w_nf = bounds.lemma_B9_bounds(size["T"], np.abs(a1), 0.0 * np.linalg.norm(W1, axis=1), 1e-300, eta,
                                        model.bounds().Bx1)
    nulls = {"tight_bound": 60 * max(ratio_a, ratio_w),
             "no_forcing": float(max(np.max(np.abs(aT) / a_nf), np.max(np.linalg.norm(WT - W1, axis=1) / w_nf)))}
    frozen = runs[False]
    rows = [{"t": int(t), "test_hinge": float(l), "test_error": float(e), "test_hinge_W_frozen": float(lf),
             "test_error_W_frozen": float(ef), "bayes_error": bayes}
            for t, l, e, lf, ef in zip(sim.t, sim["loss"][0], err, frozen["loss"][0], frozen["error"][0])]
    fig, (ax0, ax1) = subplots(2, panel_size=(5.0, 4.0))
    t = np.maximum(sim.t, 0.5)
    ax0.loglog(t, sim["loss"][0], "-", color="C0", label="Algorithm 1 (a, W trained)")
    ax0.loglog(t, frozen["loss"][0], "--", color="C1", label="W frozen after step 1")
    ax0.set(xlabel="step t", ylabel="test hinge loss", title=f"E4 Algorithm 1, XOR d = {d}, sigma_B = {sigma:g}")
    ax1.semilogx(t, err, "-", color="C0", label="Algorithm 1")
    ax1.semilogx(t, frozen["error"][0], "--", color="C1", label="W frozen")
    ax1.axhline(bayes, color="k", ls=":", label=f"Bayes error {bayes:.4f}")
    ax1.set(xlabel="step t", ylabel="test error", title=f"error at T - Bayes = {gap:+.4f}")
    _legend(ax0, ax1)
    path = save_figure(fig, outdir / "gradient_features.algorithm1_curve.png", title=claim_title(
        REGISTRY["gradient_features.algorithm1_curve"], max(ratio_a, ratio_w), what="max Lemma B.9 ratio"))
    checks = {"W trained and W frozen end within 0.01 in test hinge":
              abs(sim["loss"][0][-1] - frozen["loss"][0][-1]) <= 0.01,
              f"test error at T within {_GAP_E4:g} of the Bayes error": gap <= _GAP_E4,
              "test error not below the Bayes error (3 SE)": err[-1] >= bayes - 3 * math.sqrt(bayes / size["test"])}
    return ClaimResult(measured=max(ratio_a, ratio_w), checks=checks, figure=str(path), table=rows, nulls=nulls,
                       details={"lemma_B9_ratio_a": ratio_a, "lemma_B9_ratio_w": ratio_w, "error_gap": gap,
                                "lemma_B9_slack": 1 / max(ratio_a, ratio_w)},
                       message=f"error at T {err[-1]:.4f} vs Bayes {bayes:.4f} (W frozen {frozen['error'][0][-1]:.4f});"
                               f" hinge {sim['loss'][0][-1]:.4f}; Lemma B.9 ratios a {ratio_a:.1e}, w {ratio_w:.1e}")


# ---- E8: simplicity bias ------------------------------------------------------------------------------------------

_TOL_E8 = 0.1           # relative error of the per-cluster mean margins


def _unequal_xor(d, sigma, rho):
    """XOR mixture whose pair -1 has means rho sqrt(d) (pair +1: sqrt(d)): cluster strengths p_j ||mu_j|| unequal."""
    mus = np.zeros((4, d))
    mus[0, 0], mus[1, 0], mus[2, 1], mus[3, 1] = math.sqrt(d), -math.sqrt(d), rho * math.sqrt(d), -rho * math.sqrt(d)
    return data.GaussianMixture(mus, [sigma] * 4, [0.25] * 4, [1.0, 1.0, -1.0, -1.0])


@claim(id="gradient_features.simplicity_bias", model="gradient_features",
       title="Simplicity bias (E8): after the first step, GD on the second layer starts in a linear phase (every "
             "margin below 1, hinge slope -1) where a(t) = a^(1) + t eta A(W^(1), b) exactly; each cluster's mean "
             "margin grows at the closed-form rate y_j sum_i A_i E_j[relu(w_i.x - b_i)], so the clusters with the "
             "stronger features p_j ||mu_j|| are fit first",
       source="[Shi24, App. B.3.1 (simplicity bias), Algorithm 4, Lemma B.70]",
       metric="max over the four clusters of |M_sim - M_theory| / M_theory, M the mean margin y g(x) over a "
              "cluster after T GD steps on a (torch, W^(1) of the torch first step frozen), M_theory = "
              "y_j sum_i (a^(1)_i + T eta A_i) E_j[relu(w_i.x - b_i)] with A and E_j the mixture closed forms "
              "on the population W^(1)",
       tolerance=_TOL_E8,
       tolerance_origin="exact in the linear phase up to the finite-n first step, the sample A and eta, which is set "
                        "from the simulation's own sample (empirical rates on a fresh draw, not the closed forms) so "
                        "that the strongest cluster's mean margin is 0.3 after T steps (few samples above 1). Measured "
                        "over 8 seeds at n = 4e4: the 4 clusters' relative errors have means <= 0.3 % and pooled sd "
                        "1.6 % (28 d.o.f.; 2.6 % at n = 2e4, 7.2 % at n = 5000, where 10 % was 1.4 sd). As a Student "
                        "t with 28 d.o.f., 10 % is 5.8 sd: false-failure bound 1.5e-5 over the 4 clusters (quick; "
                        "5e-8 at n = 8e4, full, the sd scaled by n^-1/2). A 20 % too large is ~0.2 off; equal rates "
                        "for every cluster (no simplicity bias) miss the strong and weak clusters by 148-159 %",
       kind="training",
       nulls={"equal_rates": "no simplicity bias: every cluster's margin grows at the mean rate"},
       quick={"d": 64, "sigma": 1.0, "rho": 0.6, "tau": 1.0, "m": 256, "n": 40_000, "margin": 0.3, "T": 50,
              "eta1": 1e-6, "test": 20_000},
       full={"d": 64, "sigma": 1.0, "rho": 0.6, "tau": 1.0, "m": 1024, "n": 80_000, "margin": 0.3, "T": 100,
             "eta1": 1e-6, "test": 100_000})
def simplicity_bias(size, device, outdir):
    d, sigma, m = size["d"], size["sigma"], size["m"]
    model = _unequal_xor(d, sigma, size["rho"])
    b_tilde = _b_tilde(d, sigma, size["tau"])
    beta = 2 * math.sqrt(math.log(d)) * sigma
    a0, W0, b = framework.symmetric_init(d, m, 1.0, 1.0, b_tilde, rng=np.random.default_rng(81))
    _, W1p = framework.first_step(model, a0, W0, b, 1.0)
    a0 = a0 * b_tilde / beta / float(np.median(np.linalg.norm(W1p[:m], axis=1))) / size["eta1"]   # as in E3
    a1p, W1p = framework.first_step(model, a0, W0, b, size["eta1"])
    A = model.A(W1p, b)
    clusters = [data.GaussianMixture(model.mus[j:j + 1], model.sigmas[j:j + 1], [1.0], [1.0]) for j in range(4)]
    E = np.array([c.A(W1p, b) for c in clusters])                    # E_j[relu(w_i.x - b_i)], (4, 4m)
    rate = model.labels * (E @ A)                                     # margin growth per unit of T eta
    start = model.labels * (E @ a1p)
    a1s, W1s = (v[0] for v in _first_step_sim(model, (a0, W0, b), size["n"], size["eta1"], "hinge", seed=82,
                                              both=True, device=device))
    # eta from the simulation's own data, not the theory: the empirical rates on a fresh sample (the torch first-step
    # weights, sample means in place of the closed forms A and E_j), so that the strongest margin reaches "margin"
    Xe, ye = model.sample(size["n"], np.random.default_rng(83))
    Fe = np.maximum(Xe @ W1s.T - b, 0.0)
    A_hat = (ye[:, None] * Fe).mean(0)
    E_hat = np.array([np.maximum(c.sample(size["n"] // 4, np.random.default_rng([83, j]))[0] @ W1s.T - b, 0.0).mean(0)
                      for j, c in enumerate(clusters)])
    rate_hat, start_hat = model.labels * (E_hat @ A_hat), model.labels * (E_hat @ a1s)
    T = size["T"]
    eta = (size["margin"] - start_hat.max()) / (T * rate_hat.max())
    sim = _sim().train(model, width=m, method="rf", steps=T, n_train=size["n"], lr=eta, init=(a1s, W1s, b), seeds=1,
                       seed=82, n_test=2, n_points=2, device=device)
    aT = sim["aT"][0]
    rng = np.random.default_rng(84)
    rows = []
    for j, c in enumerate(clusters):
        X = c.sample(size["test"], rng)[0]
        marg = model.labels[j] * (np.maximum(X @ W1s.T - b, 0.0) @ aT)
        pred = start[j] + T * eta * rate[j]
        pred_equal = start[j] + T * eta * rate.mean()                 # null: no simplicity bias, equal rates
        rows.append({"cluster": j + 1, "norm_mu": float(np.linalg.norm(model.mus[j])), "label": float(model.labels[j]),
                     "margin_theory": float(pred), "margin_torch": float(marg.mean()),
                     "margin_se": float(marg.std() / math.sqrt(len(marg))),
                     "fraction_above_1": float(np.mean(marg >= 1)),
                     "rel_err": float(abs(marg.mean() - pred) / abs(pred)), "T": T,
                     "margin_equal_rates": float(pred_equal),
                     "rel_err_equal_rates": float(abs(marg.mean() - pred_equal) / abs(pred_equal))})
    worst = max(r["rel_err"] for r in rows)
    null = max(r["rel_err_equal_rates"] for r in rows)
    strong = min(rows[0]["margin_torch"], rows[1]["margin_torch"])
    weak = max(rows[2]["margin_torch"], rows[3]["margin_torch"])
    fig, (ax,) = subplots(1, panel_size=(6.4, 4.2))
    x = np.arange(4)
    ax.bar(x - 0.2, [r["margin_theory"] for r in rows], 0.4, color="k", alpha=0.6, label="theory (closed form)")
    ax.bar(x + 0.2, [r["margin_torch"] for r in rows], 0.4, color="C0", label=f"torch, T = {T} GD steps on a")
    ax.set_xticks(x, [f"mu_{r['cluster']} (||mu|| = {r['norm_mu']:.1f})" for r in rows], fontsize=7)
    ax.set(ylabel="mean margin y g(x) on the cluster", title=f"E8 simplicity bias: max rel. error {worst:.3f}")
    _legend(ax)
    path = save_figure(fig, outdir / "gradient_features.simplicity_bias.png", title=claim_title(
        REGISTRY["gradient_features.simplicity_bias"], worst, what="max rel. error"))
    checks = {"strong clusters ahead: every strong-cluster margin > 1.5 x every weak-cluster margin":
              strong > 1.5 * weak,
              "linear phase: < 5 % of the test points of any cluster at margin >= 1":
              all(r["fraction_above_1"] < 0.05 for r in rows)}
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls={"equal_rates": null},
                       details={"eta": eta, "eta_from_theory_rate": (size["margin"] - start.max()) / (T * rate.max())},
                       message=f"max rel. error {worst:.3f} (null, equal rates: {null:.3f}); T = {T}: mean margins "
                               f"torch/theory " + ", ".join(
                           f"mu_{r['cluster']}: {r['margin_torch']:.3f}/{r['margin_theory']:.3f}" for r in rows))
