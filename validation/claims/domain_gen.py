"""Nuclear-norm domain generalisation claims ([Shi24], Ch. 6; docs/domain_gen.md).

* ``domain_gen.erm_l2_finite_sample``: finite-sample full-batch GD on w (fixed all-ones head, n ID samples) against
  the population ERM-l2 optimum (alpha, beta) of Lemma 6.1 (within about 5 %), along a lambda path, with
  the ERM-rank / ERM-NU population optima and all OOD accuracies in the table.
* ``domain_gen.nu_finite_sample``: finite-sample ERM-NU (batch nuclear norm over sqrt(n), L-BFGS) against the
  population ERM-NU optimum (derived here, docs/domain_gen.md): alpha within 5 %, spurious weights ~ 0.
* ``domain_gen.accuracy``: the exact ID/OOD accuracy (contour integral) of trained and population classifiers against
  Monte Carlo on fresh samples, in standard errors; the normal approximation and the Chernoff bound beside it.
* ``domain_gen.lambda_path``: the Fig. 6.5 analogue along a lambda sweep: the stable rank of the trained test features
  (finite-sample ERM-l2 and ERM-NU) against the population stable rank of Sigma^{1/2} D_w, NU's below l2's, and the
  test OOD accuracies against the exact population ones.
* ``domain_gen.toy2d``: the 2-D toy of section 6.3.1: the trained ratio c = beta/alpha against the population ERM-l2
  one (the invariant c = 0 as the null), test accuracies against the closed forms (6-i) at the trained c; the paper's OOD 0.76 / "nearly perfect" ID pair is not a linear
  classifier's.
* ``domain_gen.l1_finite_sample``: finite-sample ERM-l1 (FISTA, exact zeros) against the population ERM-l1 optimum
  (derived): beta = 0 exactly where rho_1 <= 1, beta > 0 where rho_1 > 1.
* ``domain_gen.toy2d_full``: the 2-D toy with a full A and the all-ones head: the trained c = w2/w1 (w = A^T 1) of
  ERM-l2 and ERM-NU against the reduced population optima (derived): NU shrinks c to ~gamma / (2 - 6 gamma^2), not 0.

:func:`bench_domain_gen` times the exact accuracy against Monte Carlo to the same accuracy, and the population
optimum against finite-sample training.
"""
from __future__ import annotations

import time
import warnings

import numpy as np

import popdyn
from popdyn.gaussian import mc_mean
from popdyn.models import domain_gen as DG
from popdyn.plot import claim_title, plot_curves, save_figure, subplots

from . import REGISTRY, ClaimResult, claim

__all__ = ["bench_domain_gen"]



def _predict(model, lam, penalty, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", popdyn.RegimeWarning)
        return popdyn.predict(model, lam=lam, penalty=penalty, **kw)


@claim(id="domain_gen.erm_l2_finite_sample", model="domain_gen",
       title="[Shi24, Lemma 6.1]: finite-sample GD on w (n ID samples, fixed all-ones head) reaches the population "
             "ERM-l2 optimum (alpha, beta) within 5 %; beta > 0 and OOD accuracy ~ 0, while ERM-NU and ERM-rank keep "
             "beta = 0 and OOD accuracy 1",
       source="[Shi24, Section 6.4 (Lemma 6.1, Proposition 6.3), App. E.1.2 (eqs. (E.10)-(E.12))]",
       metric="max over lambda and seeds of |alpha_sim - alpha| / alpha and |beta_sim - beta| / beta (block means "
              "of the trained w against erm_l2); checks: beta_sim > 0, population beta_NU = 0 (rho <= 1), OOD "
              "accuracy of the trained w below 0.01 and of the NU / rank optima = 1",
       tolerance=0.015, tolerance_origin="measured spread: max 0.36 % over 2 lambdas x 2 seeds at quick size (n = 4096; "
                                          "the per-(lambda, seed) gaps are in details), so 4x headroom; the Monte Carlo "
                                          "n^(-1/2) scale (1.6 %) is the finite-sample ceiling. A beta 2 % off fails",
       kind="training",
       nulls={"linearised": "the leading-order (large-lambda) optimum: the loss linearised at w = 0, "
                            "alpha = -dL/dalpha(0) / (lambda r), beta = -dL/dbeta(0) / (lambda (d - r))",
              "invariant_only": "ERM-l2 keeps no spurious weight: the ERM-NU optimum (alpha_NU, beta = 0)"},
       quick={"r": 20, "d": 300, "gamma": 0.3, "lam": [0.3, 0.1], "n_train": 4096, "steps": 300, "lr": 0.25, "seeds": 2,
              "n_test": 4000, "seed": 0},
       full={"r": 20, "d": 300, "gamma": 0.3, "lam": [0.6, 0.3, 0.1, 0.05], "n_train": 4096, "steps": 1500, "lr": 0.25,
             "seeds": 4, "n_test": 20000, "seed": 0})
def erm_l2_finite_sample(size, device, outdir):
    model = DG.Problem(size["r"], size["d"], size["gamma"])
    lam = np.asarray(size["lam"], dtype=float)
    th = _predict(model, lam, "l2")
    nu, rank = _predict(model, lam, "nuclear"), _predict(model, lam, "rank", B_rank=size["r"])
    sim = popdyn.simulate(model, lam=lam, penalty="l2", n_train=size["n_train"], steps=size["steps"], lr=size["lr"],
                          seeds=size["seeds"], n_test=size["n_test"], seed=size["seed"], device=device)
    def gap(alpha, beta):
        ea = np.abs(sim["alpha"] - alpha) / np.abs(alpha)
        beta = np.broadcast_to(beta, sim["beta"].shape)               # relative to the trained beta where beta = 0
        eb = np.abs(sim["beta"] - beta) / np.where(beta != 0, np.abs(beta), np.abs(sim["beta"]))
        return ea, eb

    ea, eb = gap(th["alpha"], th["beta"])
    ea, eb = np.asarray(ea), np.asarray(eb)
    measured = float(max(ea.max(), eb.max()))
    g0 = DG.population_grad(0.0, 0.0, model)
    lin = (-g0[0] / (lam * model.r), -g0[1] / (lam * model.m))
    nulls = {"linearised": float(max(e.max() for e in gap(*lin))),
             "invariant_only": float(max(e.max() for e in gap(nu["alpha"], np.zeros_like(lam))))}
    rows = [{"lam": float(x), "alpha_pop": float(th["alpha"][i]), "beta_pop": float(th["beta"][i]),
             "alpha_sim": float(sim["alpha"][:, i].mean()), "beta_sim": float(sim["beta"][:, i].mean()),
             "log10_acc_ood_l2": float(th["log10_acc_ood"][i]), "acc_ood_sim": float(sim["acc_ood"][:, i].mean()),
             "alpha_nu": float(nu["alpha"][i]), "beta_nu": float(nu["beta"][i]), "rho": float(nu["rho"][i]),
             "acc_ood_nu": float(nu["acc_ood"][i]), "alpha_rank": float(rank["alpha"][i]),
             "acc_ood_rank": float(rank["acc_ood"][i]), "srank_l2": float(th["stable_rank"][i]),
             "srank_nu": float(nu["stable_rank"][i])} for i, x in enumerate(lam)]
    checks = {"beta_sim > 0": bool(np.all(sim["beta"] > 0)), "NU removes spurious (beta_NU = 0)":
              bool(np.all(nu["beta"] == 0)), "OOD accuracy of trained w < 0.01": bool(np.all(sim["acc_ood"] < 0.01)),
              "OOD accuracy NU = rank = 1": bool(np.all(nu["acc_ood"] == 1) and np.all(rank["acc_ood"] == 1))}
    fig, axes = subplots(2)
    plot_curves(lam, {"alpha (population)": th["alpha"], "beta (population)": th["beta"],
                      "alpha (GD, mean)": sim["alpha"].mean(0), "beta (GD, mean)": sim["beta"].mean(0),
                      "alpha NU": nu["alpha"], "beta NU": nu["beta"]}, ax=axes[0], xlabel="lambda", discrete=True,
                ylabel="block weight", title=f"ERM-l2 vs GD: max rel. gap {measured:.2%}",
                styles={"alpha (population)": {"color": "C0", "marker": "_", "ms": 16, "mew": 2},
                        "beta (population)": {"color": "C1", "marker": "_", "ms": 16, "mew": 2},
                        "alpha (GD, mean)": {"ls": "", "marker": "o", "color": "C0"},
                        "beta (GD, mean)": {"ls": "", "marker": "o", "color": "C1"},
                        "alpha NU": {"ls": ":", "marker": "x", "color": "C0"},
                        "beta NU": {"ls": ":", "marker": "x", "color": "C1"}})
    plot_curves(lam, {"log10 OOD acc, ERM-l2 (exact)": th["log10_acc_ood"],
                      "log10 OOD acc, normal approx.": np.array([DG.accuracy(a, b, model, "ood", "normal", log10=True)
                                                               for a, b in zip(th["alpha"], th["beta"])]),
                      "log10 OOD acc, NU / rank": nu["log10_acc_ood"]}, ax=axes[1], xlabel="lambda", discrete=True,
                ylabel="log10 accuracy", title="OOD accuracy of the population optima")
    fig_path = save_figure(fig, outdir / "domain_gen.erm_l2_finite_sample.png", title=claim_title(
        REGISTRY["domain_gen.erm_l2_finite_sample"], measured, what="max rel. gap (GD vs population)"))
    return ClaimResult(measured=measured, checks=checks, figure=str(fig_path), table=rows, nulls=nulls,
                       details={"gap_alpha": ea.tolist(), "gap_beta": eb.tolist(),
                                "linearised_alpha": np.asarray(lin[0]).tolist(),
                                "linearised_beta": np.asarray(lin[1]).tolist()},
                       message=f"GD (n = {size['n_train']}, {size['seeds']} seeds) vs population ERM-l2 at lambda = "
                               f"{lam.tolist()}: max relative gap {measured:.2%} (alpha {ea.max():.2%}, beta "
                               f"{eb.max():.2%}); ERM-l2 OOD accuracy 10^{th['log10_acc_ood'].max():.1f} at most, NU "
                               f"rho in [{nu['rho'].min():.3f}, {nu['rho'].max():.3f}] so beta_NU = 0 and OOD "
                               f"accuracy 1.")


@claim(id="domain_gen.nu_finite_sample", model="domain_gen",
       title="Spec C.2 (6-h), C.4: finite-sample ERM-NU (batch nuclear norm / sqrt(n), fixed all-ones head) reaches "
             "the population ERM-NU optimum: alpha within 5 % and the spurious weights ~ 0 (rho < 1), where ERM-l2 "
             "keeps beta/alpha ~ 0.6",
       source="[Shi24, Section 6.2.2, eqs. (6.2)-(6.3) and the code it gives for the NU penalty: loss += lambda * "
              "svd(feature).sum()]",
       metric="max over lambda and seeds of |alpha_sim - alpha_NU| / alpha_NU (L-BFGS on the empirical objective); "
              "checks: |beta_sim| / alpha_sim < 0.01 and population beta_NU = 0",
       tolerance=0.05, tolerance_origin="Monte Carlo error ~ n^(-1/2) (1.6 % at n = 4096) plus optimisation; "
                                         "measured 0.2-0.4 % at n = 4096, lambda = 0.1",
       kind="training",
       nulls={"erm_l2": "the nuclear penalty acts like l2: the ERM-l2 optimum's alpha",
              "unnormalised": "the paper's code's penalty lambda * sum(svd(features)) (no 1/sqrt(n)): the "
                              "population optimum at lambda sqrt(n)"},
       quick={"r": 20, "d": 300, "gamma": 0.3, "lam": [0.1], "n_train": 4096, "steps": 300, "seeds": 1, "n_test": 2000,
              "seed": 0},
       full={"r": 20, "d": 300, "gamma": 0.3, "lam": [0.3, 0.1], "n_train": 4096, "steps": 300, "seeds": 2,
             "n_test": 20000, "seed": 0})
def nu_finite_sample(size, device, outdir):
    model = DG.Problem(size["r"], size["d"], size["gamma"])
    lam = np.asarray(size["lam"], dtype=float)
    th, l2 = _predict(model, lam, "nuclear"), _predict(model, lam, "l2")
    sim = popdyn.simulate(model, lam=lam, penalty="nuclear", n_train=size["n_train"], steps=size["steps"],
                          method="lbfgs", seeds=size["seeds"], n_test=size["n_test"], seed=size["seed"], device=device)
    ea = np.abs(sim["alpha"] - th["alpha"]) / th["alpha"]
    unnorm = np.array([DG.erm_nuclear(model, x * np.sqrt(size["n_train"]))[0] for x in lam])
    nulls = {"erm_l2": float((np.abs(sim["alpha"] - l2["alpha"]) / l2["alpha"]).max()),
             "unnormalised": float((np.abs(sim["alpha"] - unnorm)                      # relative to the trained
                                    / np.where(unnorm > 0, unnorm, sim["alpha"])).max())}  # alpha where alpha = 0
    ratio = np.abs(sim["beta"]) / sim["alpha"]
    rows = [{"lam": float(x), "alpha_nu": float(th["alpha"][i]), "beta_nu": float(th["beta"][i]),
             "rho": float(th["rho"][i]), "alpha_sim": float(sim["alpha"][:, i].mean()),
             "beta_sim": float(sim["beta"][:, i].mean()), "acc_ood_sim": float(sim["acc_ood"][:, i].mean()),
             "srank_sim": float(sim["stable_rank"][:, i].mean()), "srank_pop": float(th["stable_rank"][i]),
             "beta_over_alpha_l2": float(l2["beta"][i] / l2["alpha"][i])} for i, x in enumerate(lam)]
    checks = {"|beta_sim|/alpha_sim < 0.01": bool(np.all(ratio < 0.01)), "beta_NU = 0": bool(np.all(th["beta"] == 0))}
    fig = plot_curves(lam, {"alpha NU (population)": th["alpha"], "alpha NU (L-BFGS, mean)": sim["alpha"].mean(0),
                            "beta NU (L-BFGS, mean)": sim["beta"].mean(0), "beta l2 (population)": l2["beta"]},
                      outdir / "domain_gen.nu_finite_sample.png", xlabel="lambda", ylabel="block weight", discrete=True,
                      styles={"alpha NU (population)": {"color": "C0", "marker": "_", "ms": 16, "mew": 2},
                              "alpha NU (L-BFGS, mean)": {"color": "C0", "ls": "", "marker": "o"},
                              "beta NU (L-BFGS, mean)": {"color": "C1", "ls": "", "marker": "o"},
                              "beta l2 (population)": {"color": "C1", "ls": "--", "marker": "_", "ms": 16, "mew": 2}},
                      title=claim_title(REGISTRY["domain_gen.nu_finite_sample"], ea.max(), what="max alpha gap"))
    return ClaimResult(measured=float(ea.max()), checks=checks, figure=str(fig), table=rows, nulls=nulls,
                       message=f"ERM-NU (n = {size['n_train']}, L-BFGS) vs population at lambda = {lam.tolist()}: "
                               f"alpha gap {ea.max():.2%}, |beta|/alpha <= {ratio.max():.1e} (ERM-l2: beta/alpha = "
                               f"{rows[0]['beta_over_alpha_l2']:.3f}); rho = {th['rho'].round(3).tolist()}.")


def _mc_accuracy(model, a, b, domain, n, seed):
    """Monte Carlo Pr[a S_R + b S_U > 0] and its SE (at least that of one hit in n), chunked (popdyn.gaussian)."""
    def hits(rng, k):
        z = model.sample(k, domain, rng)
        return (a * z[:, :model.r].sum(1) + b * z[:, model.r:].sum(1)) > 0
    mean, se = mc_mean(hits, n, seed)
    return mean, max(se, 1 / n)


@claim(id="domain_gen.accuracy", model="domain_gen",
       title="Exact ID/OOD accuracy Pr[alpha S_R + beta S_U > 0] (contour integral) against Monte Carlo on fresh "
             "samples, at ERM-l2 optima where the accuracies are moderate; Chernoff above, normal approximation off",
       source="[Shi24, Proposition 6.3, App. E.1.4 (eqs. (E.46)-(E.53))]",
       metric="max over (r, d, gamma, lambda, domain) of |exact - MC| / SE_MC (n Monte Carlo samples, seeded); checks: "
              "Chernoff bound >= exact, and the normal approximation's worst |error| reported",
       tolerance=5.0, tolerance_origin="5 standard errors of a binomial proportion (Monte Carlo, seeded): two-sided "
                                        "Bonferroni over 6-10 comparisons at family-wise 1e-4 gives 4.6",
       kind="independent",
       nulls={"normal": "the normal approximation of alpha S_R + beta S_U (not exact)",
              "chernoff": "the Chernoff bound taken as the accuracy"},
       quick={"cases": [[5, 20, 0.3, 0.01], [5, 30, 0.45, 0.1], [10, 60, 0.3, 0.05]], "n": 400_000, "seed": 0},
       full={"cases": [[5, 20, 0.3, 0.01], [5, 30, 0.45, 0.1], [10, 60, 0.3, 0.05], [20, 120, 0.2, 0.1],
                       [40, 207, 0.49, 0.1]], "n": 2_000_000, "seed": 0})
def accuracy(size, device, outdir):
    rows, worst, normal_err, chern_ok, k = [], 0.0, 0.0, True, 0
    zn = {"normal": 0.0, "chernoff": 0.0}
    for r, d, g, lam in size["cases"]:
        m = DG.Problem(r, d, g)
        a, b = DG.erm_l2(m, lam)
        for dom in ("id", "ood"):
            ex = DG.accuracy(a, b, m, dom)
            mc, se = _mc_accuracy(m, a, b, dom, size["n"], size["seed"] + k)
            k += 1
            nrm, ch = DG.accuracy(a, b, m, dom, "normal"), DG.accuracy(a, b, m, dom, "chernoff")
            z = abs(ex - mc) / se
            zn["normal"], zn["chernoff"] = max(zn["normal"], abs(nrm - mc) / se), max(zn["chernoff"], abs(ch - mc) / se)
            worst, normal_err = max(worst, z), max(normal_err, abs(nrm - ex))
            chern_ok &= ch >= ex - 1e-15
            rows.append({"r": r, "d": d, "gamma": g, "lam": lam, "domain": dom, "alpha": a, "beta": b, "exact": ex,
                         "mc": mc, "se": se, "z": z, "normal": nrm, "chernoff": ch,
                         "log10_exact": DG.accuracy(a, b, m, dom, log10=True)})
    labels = [f"{r['r']},{r['d']},{r['gamma']},{r['domain']}" for r in rows]
    col = lambda key: [r[key] for r in rows]
    fig = plot_curves(np.arange(len(rows)), {"exact": col("exact"), "Monte Carlo": col("mc"),
                                             "normal approx.": col("normal"),
                                             "Chernoff bound": np.minimum(1, col("chernoff"))},
                      outdir / "domain_gen.accuracy.png", discrete=True, labels=labels,
                      styles={"exact": {"ls": "none", "marker": "_", "ms": 14, "mew": 2, "color": "k"},
                              "Monte Carlo": {"ls": "none"}, "normal approx.": {"ls": "none"},
                              "Chernoff bound": {"ls": "none"}},
                      xlabel="case (r, d, gamma, domain)", ylabel="accuracy",
                      title=claim_title(REGISTRY["domain_gen.accuracy"], worst, what="max |exact - MC| / SE"))
    return ClaimResult(measured=float(worst), checks={"Chernoff >= exact": bool(chern_ok)}, figure=str(fig), table=rows,
                       nulls=zn,
                       message=f"{len(rows)} cases: exact vs Monte Carlo within {worst:.2f} SE (n = {size['n']}); "
                               f"normal approximation off by up to {normal_err:.2e}.")


def _dense_stable_rank(a, b, model, domain):
    """Stable rank of Sigma_dom^{1/2} D_w from the dense d x d second moment: tr(D Sigma D) / lambda_max(D Sigma D)."""
    w = np.concatenate([np.full(model.r, a), np.full(model.m, b)])
    ev = np.linalg.eigvalsh(model.second_moment(domain) * np.outer(w, w))
    return float(ev.sum() / ev[-1])


def _binomial_z(acc, p, test):
    """|acc - p| in binomial standard errors of ``test`` samples (SE at least that of one hit in ``test``)."""
    return np.abs(acc - p) / np.sqrt(np.maximum(p * (1 - p), 1 / test) / test)


@claim(id="domain_gen.lambda_path", model="domain_gen",
       title="Fig. 6.5 analogue: along lambda, the stable rank ||M||_F^2/||M||_2^2 of the trained features (ERM-l2 "
             "and ERM-NU, n ID samples) is the population stable rank of Sigma^{1/2} D_w within 5 %; NU's (1.31, "
             "beta = 0) is below l2's (~2.8) at every lambda, and the test OOD accuracies are the exact population "
             "ones (ERM-l2 ~1e-13.5, NU 1)",
       source="[Shi24, Section 6.3.3, Fig. 6.5 (stable rank; the printed ||M||_F^2/||M||_2 corrected), Section 6.4]",
       metric="max over penalty (l2, nuclear), lambda and seeds of |srank_sim - srank_pop| / srank_pop (srank_sim of "
              "the test feature matrix Z_test diag(w), srank_pop = feature_stable_rank of the population optimum); "
              "checks: srank_NU < srank_l2 (population and trained) wherever the population says so, the closed "
              "form = the dense stable rank of Sigma_dom^{1/2} D_w for dom = id, ood (rel. 1e-9), test OOD "
              "accuracies within 5 binomial SE of the exact population ones, and the exact log10 OOD "
              "accuracy of the trained l2 block means within 0.4 decades of the population",
       tolerance=0.05, tolerance_origin="~5 % (Monte Carlo error of the trained w ~ n^(-1/2), 1.6 % at "
                                         "n = 4096) plus the test features' sampling error ~ test^(-1/2); measured "
                                         "0.43 % (quick: n = 4096, test = 4000), 0.35 % (full: test = 20000)",
       kind="training",
       nulls={"printed_stable_rank": "the paper's printed ||M||_F^2 / ||M||_2 ([Shi24, Section 6.3.3]) in place of ||M||_F^2 / ||M||_2^2",
              "nu_like_l2": "the nuclear penalty leaves the features as ERM-l2 does: NU's stable rank = l2's"},
       quick={"r": 20, "d": 300, "gamma": 0.3, "lam": [0.3, 0.1], "n_train": 4096, "steps": 300, "lr": 0.25, "seeds": 1,
              "n_test": 4000, "seed": 0},
       full={"r": 20, "d": 300, "gamma": 0.3, "lam": [0.3, 0.1, 0.05, 0.02, 0.01], "n_train": 4096, "steps": 1500,
             "lr": 0.25, "seeds": 2, "n_test": 20000, "seed": 0})
def lambda_path(size, device, outdir):
    # Sigma_ood differs from Sigma_id only in the sign of the invariant-spurious block, which leaves the spectrum of
    # D_w Sigma D_w unchanged: the ID test features carry the stable rank of Fig. 6.5's OOD features (checked below).
    # The path starts at lambda <= 0.3: above, alpha_NU is tiny (0.014 at 0.6, 0 beyond ~0.65) and L-BFGS started at
    # w = 0 stays on the nuclear norm's kink there (measured at 0.6: w = 0, no features, stable rank NaN -> FAIL).
    model = DG.Problem(size["r"], size["d"], size["gamma"])
    lam = np.asarray(size["lam"], dtype=float)
    run = dict(lam=lam, n_train=size["n_train"], steps=size["steps"], seeds=size["seeds"], n_test=size["n_test"],
               seed=size["seed"], device=device)
    th = {p: _predict(model, lam, p) for p in ("l2", "nuclear")}
    sim = {"l2": popdyn.simulate(model, penalty="l2", lr=size["lr"], **run),
           "nuclear": popdyn.simulate(model, penalty="nuclear", method="lbfgs", **run)}
    gap = {p: np.abs(sim[p]["stable_rank"] - th[p]["stable_rank"]) / th[p]["stable_rank"] for p in th}
    measured = float(np.max([g.max() for g in gap.values()]))  # NaN (w = 0: no features) propagates and fails

    def printed(p):  # ||M||_F^2 / ||M||_2 = srank ||M||_2, ||M||_2^2 = tr(D Sigma D) / srank, tr = (r a^2 + m b^2) / 3
        sr, a, b = th[p]["stable_rank"], th[p]["alpha"], th[p]["beta"]
        return np.sqrt(sr * (model.r * a ** 2 + model.m * b ** 2) / 3)

    nulls = {"printed_stable_rank": float(max((np.abs(sim[p]["stable_rank"] - printed(p)) / printed(p)).max()
                                              for p in th)),
             "nu_like_l2": float((np.abs(sim["nuclear"]["stable_rank"] - th["l2"]["stable_rank"])
                                  / th["l2"]["stable_rank"]).max())}
    below = th["nuclear"]["stable_rank"] < th["l2"]["stable_rank"]
    dense = max(abs(_dense_stable_rank(th[p]["alpha"][i], th[p]["beta"][i], model, dom) / th[p]["stable_rank"][i] - 1)
                for p in th for i in range(lam.size) for dom in ("id", "ood"))
    z_ood = max(float(_binomial_z(sim[p]["acc_ood"], th[p]["acc_ood"], size["n_test"]).max()) for p in th)
    # the trained block means through the exact accuracy: the OOD accuracy a finite test set cannot see
    log_sim = {p: np.array([[DG.accuracy(a, b, model, "ood", log10=True) for a, b in zip(ra, rb)]
                            for ra, rb in zip(sim[p]["alpha"], sim[p]["beta"])]) for p in th}
    rows = [{"lam": float(x), **{f"{k}_{p}": float(v) for p in th for k, v in (
                ("srank_pop", th[p]["stable_rank"][i]), ("srank_sim", sim[p]["stable_rank"][:, i].mean()),
                ("srank_gap", gap[p][:, i].max()), ("log10_acc_ood_pop", th[p]["log10_acc_ood"][i]),
                ("log10_acc_ood_sim_w", log_sim[p][:, i].mean()), ("acc_ood_test", sim[p]["acc_ood"][:, i].mean()),
                ("alpha_sim", sim[p]["alpha"][:, i].mean()), ("beta_sim", sim[p]["beta"][:, i].mean()))}}
            for i, x in enumerate(lam)]
    dlog = float(np.abs(log_sim["l2"] - th["l2"]["log10_acc_ood"]).max())
    checks = {"srank_NU < srank_l2 (population) at every lambda": bool(np.all(below)),
              "srank_NU < srank_l2 (trained) where the population says so":
                  bool(np.all(sim["nuclear"]["stable_rank"][:, below] < sim["l2"]["stable_rank"][:, below])),
              "closed-form srank = dense srank of Sigma_dom^{1/2} D_w (id, ood)": dense < 1e-9,
              "test OOD accuracy within 5 SE of the exact population": z_ood < 5,
              # 5 % in beta/alpha (the tolerance of domain_gen.erm_l2_finite_sample) moves log10 acc_ood by 0.35-0.39 decades at these optima
              "log10 OOD accuracy of the trained block means within 0.4 decades (l2)": dlog < 0.4}
    fig, axes = subplots(2)
    sty = {"dot": {"ls": "", "marker": "o"}, "l2": {"color": "C0"}, "nu": {"color": "C1"}}
    plot_curves(np.log10(lam), {"ERM-l2 (population)": th["l2"]["stable_rank"],
                                "ERM-NU (population)": th["nuclear"]["stable_rank"],
                                "ERM-l2 (trained, mean)": sim["l2"]["stable_rank"].mean(0),
                                "ERM-NU (trained, mean)": sim["nuclear"]["stable_rank"].mean(0)}, ax=axes[0],
                xlabel="log10 lambda", ylabel="stable rank of the features",
                styles={"ERM-l2 (population)": sty["l2"], "ERM-NU (population)": sty["nu"],
                        "ERM-l2 (trained, mean)": sty["dot"] | sty["l2"], "ERM-NU (trained, mean)": sty["dot"] | sty["nu"]},
                title=f"stable rank: max rel. gap {measured:.2%}")
    plot_curves(np.log10(lam), {"ERM-l2 (population)": th["l2"]["log10_acc_ood"],
                                "ERM-NU (population)": th["nuclear"]["log10_acc_ood"],
                                "ERM-l2 (trained w, exact)": log_sim["l2"].mean(0),
                                "ERM-NU (trained w, exact)": log_sim["nuclear"].mean(0)}, ax=axes[1],
                xlabel="log10 lambda", ylabel="log10 OOD accuracy",
                styles={"ERM-l2 (population)": sty["l2"], "ERM-NU (population)": sty["nu"],
                        "ERM-l2 (trained w, exact)": sty["dot"] | sty["l2"],
                        "ERM-NU (trained w, exact)": sty["dot"] | sty["nu"]},
                title="OOD accuracy along lambda")
    fig_path = save_figure(fig, outdir / "domain_gen.lambda_path.png", title=claim_title(
        REGISTRY["domain_gen.lambda_path"], measured, what="max rel. gap of the stable rank"))
    return ClaimResult(measured=measured, checks=checks, figure=str(fig_path), table=rows, nulls=nulls,
                       message=f"lambda = {lam.tolist()} (n = {size['n_train']}, {size['seeds']} seed(s), test = "
                               f"{size['n_test']}): stable rank of the trained features within {measured:.2%} of the "
                               f"population (l2 {gap['l2'].max():.2%}, NU {gap['nuclear'].max():.2%}); population "
                               f"srank l2 in [{th['l2']['stable_rank'].min():.4f}, "
                               f"{th['l2']['stable_rank'].max():.4f}], NU in "
                               f"[{th['nuclear']['stable_rank'].min():.4f}, {th['nuclear']['stable_rank'].max():.4f}]"
                               f"; OOD accuracy l2 10^{th['l2']['log10_acc_ood'].max():.2f} at most (trained w: "
                               f"within {dlog:.3f} decades), NU {th['nuclear']['acc_ood'].min():.6f}; test OOD "
                               f"accuracies within {z_ood:.2f} SE.")


@claim(id="domain_gen.toy2d", model="domain_gen",
       title="Section 6.3.1's 2-D toy: trained diagonal classifiers (ERM-l2 GD) have the population ratio c = "
             "beta/alpha of the ERM-l2 optimum (not the invariant c = 0), and their test accuracies are the closed "
             "forms (6-i) at their c; population ERM cannot give the paper's OOD 0.76 (c <= 2 gamma: OOD >= 0.86)",
       source="[Shi24, Section 6.3.1, Figs. 6.2-6.3]",
       metric="max over lambda and seeds of |c_trained - c_pop| / c_pop, c = beta/alpha (c_pop of erm_l2); checks: "
              "test accuracies within 5 binomial SE (Bonferroni-free: a sub-check) of toy2d_accuracy(c_trained), "
              "population c < 2 gamma and OOD accuracy > 0.86 > 0.76 at every lambda",
       tolerance=0.25,
       tolerance_origin="measured finite-sample spread of c at n = 2e4 (the quick and full n; 5.5 % at n = 2000), "
                        "converged by 3000 steps: over 10 seeds the relative error has mean 0 and sd 2.0-2.7 % (largest "
                        "at lambda = 0.01, max 5.1 %), a seed's lambdas moving together. With the sd from 10 seeds a "
                        "seed's error is a Student t with 9 d.o.f., and 25 % is 9.3 sd: 6.8e-6 per seed, 1.4e-5 "
                        "quick (2 seeds), 2.7e-5 full (4). Check: accuracies within 5 binomial SE (Gaussian, 12 z "
                        "quick, 32 full): 7e-6, 1.8e-5. False-failure bound 2.1e-5 quick, 4.5e-5 full (3.7 % at n = "
                        "2000). The invariant classifier (c = 0) is 100 % off",
       kind="training",
       nulls={"invariant": "the trained classifier puts no weight on the spurious feature: c = 0"},
       quick={"gamma": 0.2, "lam": [1.0, 0.1, 0.01], "n_train": 20000, "steps": 3000, "lr": 0.5, "seeds": 2,
              "n_test": 100_000, "seed": 0},
       full={"gamma": 0.2, "lam": [1.0, 0.1, 0.01, 0.001], "n_train": 20000, "steps": 20000, "lr": 0.5, "seeds": 4,
             "n_test": 1_000_000, "seed": 0})
def toy2d(size, device, outdir):
    g = size["gamma"]
    model = DG.Problem(1, 2, g)
    lam = np.asarray(size["lam"], dtype=float)
    sim = popdyn.simulate(model, lam=lam, penalty="l2", n_train=size["n_train"], steps=size["steps"], lr=size["lr"],
                          seeds=size["seeds"], n_test=size["n_test"], seed=size["seed"], device=device)
    th = _predict(model, lam, "l2")
    c_pop = th["beta"] / th["alpha"]
    c_sim = sim["beta"] / sim["alpha"]                                    # (seeds, lambdas)
    rel = np.abs(c_sim - c_pop) / c_pop
    measured = float(rel.max())
    nulls = {"invariant": float((np.abs(0.0 - c_pop) / c_pop).max())}
    z_acc, rows = 0.0, []
    for i, x in enumerate(lam):
        for s in range(size["seeds"]):
            c = float(c_sim[s, i])
            ai, ao = DG.toy2d_accuracy(max(c, 0.0), g)
            for dom, want in (("acc_id", ai), ("acc_ood", ao)):
                got = float(sim[dom][s, i])
                se = np.sqrt(max(want * (1 - want), 1 / size["n_test"]) / size["n_test"])
                z_acc = max(z_acc, abs(got - want) / se)
            rows.append({"lam": float(x), "seed": s, "c_sim": c, "c_pop": float(c_pop[i]), "rel_gap_c": float(rel[s, i]),
                         "acc_id_sim": float(sim["acc_id"][s, i]), "acc_id_closed": ai,
                         "acc_ood_sim": float(sim["acc_ood"][s, i]), "acc_ood_closed": ao,
                         "acc_ood_pop": float(th["acc_ood"][i]),
                         "acc_ood_invariant": float(DG.toy2d_accuracy(0.0, g)[1])})
    checks = {"test accuracies within 5 SE of (6-i) at the trained c": z_acc < 5.0,
              "population c < 2 gamma": bool(np.all(c_pop < 2 * g)),
              "population OOD accuracy > 0.86": bool(np.all(th["acc_ood"] > 0.86))}
    cs = np.linspace(0, 1.5, 151)
    acc = np.array([DG.toy2d_accuracy(c, g) for c in cs])
    fig, axes = subplots(2)
    plot_curves(cs, {"ID (6-i)": acc[:, 0], "OOD (6-i)": acc[:, 1]}, ax=axes[0],
                refs={"paper OOD 0.76": 0.76, "paper OOD 0.94": 0.94}, xlabel="c = beta/alpha", ylabel="accuracy",
                title=f"accuracies at the trained c within {z_acc:.2f} SE")
    plot_curves(lam, {"c population (erm_l2)": c_pop, **{f"c trained, seed {s}": c_sim[s] for s in range(size["seeds"])},
                      "invariant null (c = 0)": np.zeros_like(lam)}, ax=axes[1], xlabel="lambda", discrete=True,
                ylabel="c = beta/alpha", title=f"max |c_trained - c_pop| / c_pop = {measured:.3f}",
                styles={"c population (erm_l2)": {"color": "k", "marker": "_", "ms": 16, "mew": 2},
                        **{f"c trained, seed {s}": {"ls": "", "marker": "o"} for s in range(size["seeds"])}})
    fig_path = save_figure(fig, outdir / "domain_gen.toy2d.png", title=claim_title(
        REGISTRY["domain_gen.toy2d"], measured, what="max rel. gap of c"))
    return ClaimResult(measured=measured, checks=checks, figure=str(fig_path), table=rows, nulls=nulls,
                       message=f"2-D toy (gamma = {g}): trained c within {measured:.1%} of the population c "
                               f"(invariant null 100 %); accuracies match (6-i) at the trained c within {z_acc:.2f} SE; "
                               f"population c in [{c_pop.min():.3f}, {c_pop.max():.3f}] < 2 gamma, OOD accuracy "
                               f"in [{th['acc_ood'].min():.3f}, {th['acc_ood'].max():.3f}].")


def _rel_gap(sim, th):
    """|sim - th| / |th|, relative to |sim| where th = 0 (0 where both are 0: the exact zeros of an l1 optimum)."""
    th = np.broadcast_to(th, sim.shape)
    den = np.where(th != 0, np.abs(th), np.abs(sim))
    return np.divide(np.abs(sim - th), den, out=np.zeros(sim.shape), where=den > 0)


@claim(id="domain_gen.l1_finite_sample", model="domain_gen",
       title="ERM-l1 (lam ||w||_1, the convex relaxation of ERM-rank's ||w||_0 for diagonal features): finite-sample "
             "proximal training (n ID samples, fixed all-ones head) reaches the population ERM-l1 optimum, with the "
             "spurious weights exactly 0 where rho_1 <= 1 and beta > 0 where rho_1 > 1",
       source="[Shi24, Section 6.4, eqs. (6.4)-(6.5), Lemma 6.2, Lemma E.5]; ERM-l1 derived in docs/domain_gen.md",
       metric="max over lambda and seeds of the relative gaps of the block means alpha and beta of the trained w "
              "(FISTA) against erm_l1; beta's relative to the trained beta where the population beta = 0 (so a "
              "non-zero trained beta there is a 100 % gap); checks: rho_1 > 1 at one lambda and <= 1 at another",
       tolerance=0.45,
       tolerance_origin="measured spread at n = 4096 (2000 FISTA steps, converged to 0.5 %: 4000 steps move the block "
                        "means by < 0.4 %): the beta gap where beta > 0 has sd 5.6 % over 8 seeds at lambda = 0.005 "
                        "(max 14 %) and 6.5 % over 8 seeds at lambda = 0.002, 0.001 (max 9.7 %), alpha's <= 5.3 %; "
                        "beta = 0 exactly at lambda = 0.2 in all 16 seeds (the per-coordinate empirical gradient sits "
                        "~10 sd inside lam there); 45 % is ~7 sd, so that the max over the 24 full-size cells (sd from "
                        "16 seeds, t with 15 d.o.f.) fails falsely with probability < 1e-3 (validation/error_budget.py). "
                        "The nulls are 100 % (always sparse) and 300 % (l2) off",
       kind="training",
       nulls={"l2": "the l1 penalty acts like weight decay: the ERM-l2 optimum at the same lambda",
              "always_sparse": "l1 always removes the spurious block: the optimum on the line beta = 0"},
       quick={"r": 5, "d": 50, "gamma": 0.4, "lam": [0.2, 0.005], "n_train": 4096, "steps": 2000, "lr": 0.5,
              "seeds": 2, "n_test": 2000, "seed": 0},
       full={"r": 5, "d": 50, "gamma": 0.4, "lam": [0.2, 0.15, 0.005, 0.001], "n_train": 4096, "steps": 3000,
             "lr": 0.5, "seeds": 6, "n_test": 20000, "seed": 0})
def l1_finite_sample(size, device, outdir):
    model = DG.Problem(size["r"], size["d"], size["gamma"])
    lam = np.asarray(size["lam"], dtype=float)
    th, l2 = _predict(model, lam, "l1"), _predict(model, lam, "l2")
    sim = popdyn.simulate(model, lam=lam, penalty="l1", n_train=size["n_train"], steps=size["steps"], lr=size["lr"],
                          seeds=size["seeds"], n_test=size["n_test"], seed=size["seed"], device=device)

    def gap(alpha, beta):
        return np.maximum(_rel_gap(sim["alpha"], alpha), _rel_gap(sim["beta"], beta))

    g = gap(th["alpha"], th["beta"])
    measured = float(g.max())
    line = np.array([DG.erm_l1(DG.Problem(model.r, model.r, model.gamma), x)[0] for x in lam])  # beta = 0 line
    nulls = {"l2": float(gap(l2["alpha"], l2["beta"]).max()), "always_sparse": float(gap(line, 0.0).max())}
    rows = [{"lam": float(x), "rho_1": float(th["rho"][i]), "alpha_pop": float(th["alpha"][i]),
             "beta_pop": float(th["beta"][i]), "alpha_sim": float(sim["alpha"][:, i].mean()),
             "beta_sim": float(sim["beta"][:, i].mean()), "gap": float(g[:, i].max()),
             "alpha_l2": float(l2["alpha"][i]), "beta_l2": float(l2["beta"][i]),
             "log10_acc_ood_pop": float(th["log10_acc_ood"][i]), "acc_ood_sim": float(sim["acc_ood"][:, i].mean())}
            for i, x in enumerate(lam)]
    checks = {"rho_1 > 1 at some lambda (beta > 0)": bool(np.any(th["rho"] > 1)),
              "rho_1 <= 1 at some lambda (beta = 0)": bool(np.any(th["rho"] <= 1)),
              "population beta = 0 exactly where rho_1 <= 1": bool(np.all((th["beta"] == 0) == (th["rho"] <= 1)))}
    fig = plot_curves(lam, {"alpha l1 (population)": th["alpha"], "beta l1 (population)": th["beta"],
                            "alpha (FISTA, mean)": sim["alpha"].mean(0), "beta (FISTA, mean)": sim["beta"].mean(0),
                            "beta l2 (population)": l2["beta"]},
                      outdir / "domain_gen.l1_finite_sample.png", xlabel="lambda", ylabel="block weight",
                      discrete=True,
                      styles={"alpha l1 (population)": {"color": "C0", "marker": "_", "ms": 16, "mew": 2},
                              "beta l1 (population)": {"color": "C1", "marker": "_", "ms": 16, "mew": 2},
                              "alpha (FISTA, mean)": {"color": "C0", "ls": "", "marker": "o"},
                              "beta (FISTA, mean)": {"color": "C1", "ls": "", "marker": "o"},
                              "beta l2 (population)": {"color": "C1", "ls": "--", "marker": "x"}},
                      title=claim_title(REGISTRY["domain_gen.l1_finite_sample"], measured, what="max rel. gap"))
    return ClaimResult(measured=measured, checks=checks, figure=str(fig), table=rows, nulls=nulls,
                       details={"gap": g.tolist()},
                       message=f"ERM-l1 (n = {size['n_train']}, FISTA, {size['seeds']} seeds) vs population at lambda = "
                               f"{lam.tolist()}: max relative gap {measured:.2%}; rho_1 = {th['rho'].round(3).tolist()}"
                               f", population beta = {th['beta'].round(4).tolist()}, trained beta (mean) = "
                               f"{sim['beta'].mean(0).round(4).tolist()}; nulls l2 {nulls['l2']:.2f}, always sparse "
                               f"{nulls['always_sparse']:.2f}.")


@claim(id="domain_gen.toy2d_full", model="domain_gen",
       title="Section 6.3.1's 2-D toy with a full A (Phi(x) = A x, fixed all-ones head): trained ERM-l2 and ERM-NU "
             "reach the population optima A* = 1 w*^T / 2 (derived), with NU's ratio c = w2/w1 near gamma / (2 - 6 "
             "gamma^2) (a Mahalanobis-norm penalty), neither 0 (the diagonal toy's NU) nor l2's",
       source="[Shi24, Section 6.3.1, Figs. 6.2-6.3, eq. (6.3)]; the reduction derived in docs/domain_gen.md",
       metric="max over penalty (l2, nuclear), lambda and seeds of |c_trained - c_pop| / c_pop, c = w2/w1 of w = A^T 1 "
              "(GD on the batch objective, the NU term ||Z A^T||_* / sqrt(n)) against toy2d_full_optimum; checks: "
              "population OOD accuracy of NU >= 0.96 > the paper's 0.94, the trained A near rank one (NU: sigma_2 / "
              "sigma_1 < 0.02)",
       tolerance=0.35,
       tolerance_origin="measured spread of c at n = 2e4 over 5 seeds (lambda 0.3, 0.1, 0.03): l2 sd ~3 % (max 5.8 %), "
                        "NU sd ~5 % (max 7.7 % at lr 0.5, 12.1 % in the first full run over 4 seeds; the Mahalanobis "
                        "direction follows the empirical Sigma); 35 % is ~7 NU sd, so that the max over up to 24 "
                        "seed x lambda x penalty cells with an sd known from 5 seeds (t, 9 d.o.f.) fails falsely with "
                        "probability < 1e-3 (validation/error_budget.py). The nulls are 64 % (NU like l2) and 100 % "
                        "(the diagonal toy's c = 0) off",
       kind="training",
       nulls={"diagonal_nu": "the diagonal toy's ERM-NU (erm_nuclear with r = 1, d = 2): c = 0 once rho <= 1",
              "nu_like_l2": "the nuclear penalty acts like l2 on the full A: c of the full-A ERM-l2 optimum"},
       quick={"gamma": 0.2, "lam": [0.3, 0.1], "n_train": 20000, "steps": 2500, "lr": 0.5, "seeds": 2, "seed": 0},
       full={"gamma": 0.2, "lam": [0.3, 0.1, 0.03], "n_train": 20000, "steps": 6000, "lr": 0.5, "seeds": 4, "seed": 0})
def toy2d_full(size, device, outdir):
    from popdyn.sim.domain_gen import train_toy2d_full
    g, lam = size["gamma"], np.asarray(size["lam"], dtype=float)
    c_of = lambda w: w[..., 1] / w[..., 0]                                   # noqa: E731
    pop = {p: np.array([DG.toy2d_full_optimum(g, x, p)[1] for x in lam]) for p in ("l2", "nuclear")}
    A = {p: train_toy2d_full(g, lam, p, size["n_train"], size["steps"], size["lr"], size["seeds"], size["seed"],
                             device) for p in pop}
    c_sim = {p: c_of(A[p].sum(-2)) for p in pop}                             # (seeds, lambdas)
    c_pop = {p: c_of(pop[p]) for p in pop}
    gap = {p: np.abs(c_sim[p] - c_pop[p]) / c_pop[p] for p in pop}
    measured = float(max(v.max() for v in gap.values()))
    diag = np.array([(lambda a, b, _: b / a)(*DG.erm_nuclear(DG.Problem(1, 2, g), x)) for x in lam])
    nulls = {"diagonal_nu": float((np.abs(c_sim["nuclear"] - diag) / np.maximum(np.abs(diag), np.abs(c_sim["nuclear"])))
                                  .max()),
             "nu_like_l2": float((np.abs(c_sim["nuclear"] - c_pop["l2"]) / c_pop["l2"]).max())}
    sv = np.linalg.svd(A["nuclear"], compute_uv=False)
    acc = {p: np.array([DG.toy2d_accuracy(c, g) for c in c_pop[p]]) for p in pop}
    rows = [{"lam": float(x), **{f"{k}_{p}": float(v) for p in pop for k, v in (
                ("c_pop", c_pop[p][i]), ("c_sim", c_sim[p][:, i].mean()), ("gap", gap[p][:, i].max()),
                ("acc_ood_pop", acc[p][i, 1]), ("acc_id_pop", acc[p][i, 0]))}, "c_diagonal_nu": float(diag[i])}
            for i, x in enumerate(lam)]
    checks = {"population NU OOD accuracy >= 0.96 > 0.94": bool(np.all(acc["nuclear"][:, 1] >= 0.96)),
              "trained NU A near rank one (sigma_2/sigma_1 < 0.02)": bool(np.all(sv[..., 1] / sv[..., 0] < 0.02))}
    cs = {"c l2 (population)": c_pop["l2"], "c NU (population)": c_pop["nuclear"],
          "c l2 (trained, mean)": c_sim["l2"].mean(0), "c NU (trained, mean)": c_sim["nuclear"].mean(0),
          "c NU, diagonal toy (null)": diag}
    fig = plot_curves(lam, cs, outdir / "domain_gen.toy2d_full.png", xlabel="lambda", ylabel="c = w2 / w1",
                      discrete=True, refs={"gamma / (2 - 6 gamma^2)": g / (2 - 6 * g * g)},
                      styles={"c l2 (population)": {"color": "C0", "marker": "_", "ms": 16, "mew": 2},
                              "c NU (population)": {"color": "C1", "marker": "_", "ms": 16, "mew": 2},
                              "c l2 (trained, mean)": {"color": "C0", "ls": "", "marker": "o"},
                              "c NU (trained, mean)": {"color": "C1", "ls": "", "marker": "o"},
                              "c NU, diagonal toy (null)": {"color": "C2", "ls": ":", "marker": "x"}},
                      title=claim_title(REGISTRY["domain_gen.toy2d_full"], measured, what="max rel. gap of c"))
    return ClaimResult(measured=measured, checks=checks, figure=str(fig), table=rows, nulls=nulls,
                       message=f"2-D toy, full A (gamma = {g}, n = {size['n_train']}, {size['seeds']} seeds): trained c "
                               f"within {measured:.1%} of the population (l2 {gap['l2'].max():.1%}, NU "
                               f"{gap['nuclear'].max():.1%}); population c l2 {c_pop['l2'].round(3).tolist()}, NU "
                               f"{c_pop['nuclear'].round(3).tolist()} (limit {g / (2 - 6 * g * g):.3f}), diagonal NU "
                               f"{diag.round(3).tolist()}; NU OOD accuracy {acc['nuclear'][:, 1].round(3).tolist()}.")


def bench_domain_gen(repeats=3):
    """Seconds: exact OOD accuracy (contour) vs Monte Carlo to the same relative accuracy (extrapolated from the
    binomial SE), and the population ERM-l2 optimum vs finite-sample GD (n = 4096, 1500 steps, one seed)."""
    m = DG.Problem(5, 30, 0.45)
    a, b = DG.erm_l2(m, 0.1)
    t0 = time.perf_counter()
    for _ in range(repeats):
        p = DG.accuracy(a, b, m, "ood")
    t_exact = (time.perf_counter() - t0) / repeats
    n = 100_000
    t0 = time.perf_counter()
    _mc_accuracy(m, a, b, "ood", n, 0)
    t_mc = time.perf_counter() - t0
    n_needed = (1 - p) / (p * 1e-12 ** 2)  # relative SE 1e-12: the contour's accuracy
    out = {"exact_accuracy_s": t_exact, "mc_per_sample_s": t_mc / n, "mc_to_1e-12_s": t_mc / n * n_needed}
    m = DG.Problem(20, 300, 0.3)
    t0 = time.perf_counter()
    DG.erm_l2(m, 0.3)
    out["population_optimum_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    popdyn.simulate(m, lam=[0.3], penalty="l2", n_train=4096, steps=1500, seeds=1, n_test=1000)
    out["gd_n4096_1500_steps_s"] = time.perf_counter() - t0
    return out
