r"""The Gaussian-mixture parity trained to convergence ([Shi22, App. E.3.2, Table 6, Figure 16]; docs/emergence.md).

* ``emergence.gmm_centres``: a two-layer network trained by mini-batch SGD on ``x = M eps + g``,
  ``y = prod eps`` (Table 6's three settings) learns the cluster centres: its output is carried by neurons whose
  direction in span M points at a centre ``M eps`` (closer to it than to the midpoint with any neighbouring
  centre) and whose output weight has the sign of its exact population label correlation
  ``T_a = E[y sigma~(<w, x> + b)]`` (``gmm_correlations``); at k = 4 every centre has such a neuron (the paper's
  "each Gaussian center is covered by some neurons"; at k = 5 most, not all, do: docs/emergence.md). The paper
  explains the figure by the network ``sum_eps a_eps ReLU(<M eps, x>)`` with ``a_eps`` of the sign of the centre's
  label; that network is identically 0 for odd k and equals ``-4 y`` on the centres at k = 4 (docs/errata.md), and
  the trained neurons at a centre carry the label's sign or its opposite according to their bias.
"""
from __future__ import annotations

import math

import numpy as np

from popdyn.models.emergence import correlations, data
from popdyn.plot import claim_title, legend_outside, save_figure, subplots
from popdyn.sim.emergence import train

from . import REGISTRY, ClaimResult, claim

__all__ = []

#: Table 6: (d, k, sigma_r) of Experiments 1-3.
_TABLE6 = ((100, 4, 1.0), (25, 4, 0.7), (100, 5, 1.0))
#: the hyperparameters the paper does not report ("typical practice"): PyTorch-like scales, hinge loss, SGD
_LR, _BATCH = 0.1, 100


def centre_cos_threshold(k):
    """``(1 + sqrt((k - 1)/k)) / 2``: halfway between a centre (cos 1) and the midpoint of two neighbouring centres,
    whose cosine with either is ``sqrt((k - 1)/k)`` (their inner product is k - 2 against norms k)."""
    return (1.0 + math.sqrt((k - 1) / k)) / 2.0


def _neurons(model, W, b, a):
    """Per neuron: the cosine of its direction in span M with its nearest centre, that centre's index, its largest
    |cosine| with a dictionary column, and whether sign(a) = sign(T_a) (``gmm_correlations``)."""
    E, _ = model.centers()
    P = W @ model.M                                               # direction in span M, pattern coordinates
    r = np.maximum(np.linalg.norm(P, axis=1), 1e-300)
    C = P @ E.T / (r[:, None] * math.sqrt(model.k))
    agree = np.sign(a) == np.sign(correlations.gmm_correlations(model, W, b, 0.0).Ta)
    return C.max(1), C.argmax(1), np.abs(P).max(1) / r, agree


def _forms(model, W, b, a):
    """Which neurons have each form, ``{name: mask}``, and their nearest centres. "theory": the direction in span M
    at a centre (:func:`centre_cos_threshold`) and sign(a) = sign(T_a); "paper_sign": at a centre and sign(a) = the
    centre's label; "atoms": along a dictionary column +-M_j and sign(a) = sign(T_a)."""
    cos, nearest, atom_cos, agree = _neurons(model, W, b, a)
    c0 = centre_cos_threshold(model.k)
    return {"theory": (cos >= c0) & agree, "paper_sign": (cos >= c0) & (np.sign(a) == model.centers()[1][nearest]),
            "atoms": (atom_cos >= c0) & agree}, nearest


def _margin_parts(W, b, a, X, y):
    """Each neuron's part ``E[y a_i sigma~(<w_i, x> + b_i)]`` of the mean margin and its weight
    ``|a_i| E sigma~(<w_i, x> + b_i)``, on the sample ``(X, y)`` (sigma~ at s = 0: the clamp to [0, 1])."""
    H = np.clip(X @ W.T + b, 0.0, 1.0)
    return (y @ H) * a / len(y), np.abs(a) * H.mean(0)


def _unexplained(part, ok):
    """``1 - E[y g_ok(x)] / E[y g(x)]``: the share of the mean margin not carried by the neurons ``ok`` (infinite
    when the network's mean margin is not positive)."""
    margin = part.sum()
    return float(1.0 - part[ok].sum() / margin) if margin > 0 else math.inf


def _covered(ok, nearest, weight):
    """Centres with a neuron of ``ok`` of at least half the mean weight pointing at them."""
    return len(np.unique(nearest[ok & (weight >= weight.mean() / 2)]))


@claim(id="emergence.gmm_centres", model="emergence",
       title="Gaussian-mixture parity (Figure 16): the trained network's margin is carried by neurons that point "
             "at cluster centres with output weights of the sign of their population label correlation",
       source="[Shi22, App. E.3.2, Table 6, Figure 16]",
       metric="max over Table 6's settings and seeds of 1 - E[y g_form(x)] / E[y g(x)] on fresh samples: the share of "
              "the trained network's mean margin not carried by its neurons of the predicted form (direction in span "
              "M within (1 + sqrt((k-1)/k))/2 of a centre M eps, and sign(a_i) = sign of the exact population "
              "correlation T_a = E[y sigma~(<w_i,x>+b_i)])",
       tolerance=0.15,
       tolerance_origin="measured -0.001 to 0.027 over 9 runs (Table 6's 3 settings x 3 seeds, full size) and "
                        "0.008-0.016 (quick, 2 seeds): 5x headroom over the largest, so that the pilot's false-failure "
                        "bound is 4e-5; the nulls leave 0.50-1.0, 3x the tolerance",
       quick={"settings": [1], "n_train": 4000, "epochs": 30, "width": 200, "seeds": 2, "n_eval": 20_000},
       full={"settings": [0, 1, 2], "n_train": 10_000, "epochs": 80, "width": 400, "seeds": 3,
             "n_eval": 50_000},
       kind="finding",
       nulls={"paper_sign": "neurons at the centres with a of the sign of the centre's label (the paper's "
                            "'a_i ∝ 1 for Gaussian components with label 1')",
              "atoms": "neurons along the dictionary columns +-M_j (the input's own structure), a of the sign of T_a",
              "no_learning": "no feature learning: the margin is carried by the neurons that had the predicted "
                             "form at initialisation"})
def gmm_centres(size, device, outdir):
    rows, sims = [], []
    for i in size["settings"]:
        d, k, sr = _TABLE6[i]
        model = data.GaussianParityMixture(d, k, sr, data.random_dictionary(d, k, seed=i))
        steps = size["epochs"] * size["n_train"] // _BATCH
        st = {"eta": _LR, "lam_a": 0.0, "lam_w": 0.0, "s": 0.0}
        sim = train(model, width=size["width"], method="gd", schedule=[st] * 3, steps=steps, n_train=size["n_train"],
                    batch=_BATCH, seeds=size["seeds"], seed=i, balanced=True, coords="input",
                    init=(1 / math.sqrt(d), 1 / math.sqrt(d), 1 / math.sqrt(2 * size["width"])), n_points=9,
                    n_test=5000, device=device)
        sims.append((i, model, sim))
        for s in range(size["seeds"]):
            end = [np.asarray(sim[n][s]) for n in ("Q_final", "b_final", "a_final")]
            start = [np.asarray(sim[n][s]) for n in ("Q_0", "b_0", "a_0")]
            X, y = model.sample(size["n_eval"], seed=1000 + s)
            forms, nearest = _forms(model, *end)
            part, weight = _margin_parts(*end, X, y)
            rows.append({"experiment": i + 1, "d": d, "k": k, "sigma_r": sr, "seed": s,
                         "test_acc": float(sim["test_acc"][s, -1]), "unexplained": _unexplained(part, forms["theory"]),
                         "centres_covered": _covered(forms["theory"], nearest, weight), "centres": 2 ** k,
                         "paper_sign": _unexplained(part, forms["paper_sign"]),
                         "atoms": _unexplained(part, forms["atoms"]),
                         "no_learning": _unexplained(part, _forms(model, *start)[0]["theory"]),
                         "centre_cos": float(sim["centre_cos"][s, -1])})
    worst = max(r["unexplained"] for r in rows)
    nulls = {n: min(r[n] for r in rows) for n in ("paper_sign", "atoms", "no_learning")}
    checks = {"k = 4: every centre has a neuron of the predicted form (weight >= half the mean)":
              all(r["centres_covered"] == r["centres"] for r in rows if r["k"] == 4),
              "test accuracy >= 0.95 (the network learned the parity)": all(r["test_acc"] >= 0.95 for r in rows)}
    path = _figure(sims, rows, outdir / "emergence.gmm_centres.png",
                   claim_title(REGISTRY["emergence.gmm_centres"], worst, what="unexplained share"))
    return ClaimResult(measured=worst, checks=checks, figure=str(path), table=rows, nulls=nulls,
                       message=f"unexplained share <= {worst:.3f} over {len(rows)} runs (test accuracy "
                               f"{_span(rows, 'test_acc')}); the paper's sign rule leaves >= "
                               f"{nulls['paper_sign']:.2f}, "
                               f"atoms >= {nulls['atoms']:.2f}, the initial network >= {nulls['no_learning']:.2f}; "
                               + "; ".join(f"k = {k}: centres covered {_span(rk, 'centres_covered', '.0f')} of "
                                           f"{rk[0]['centres']}" for k, rk in _by_k(rows))
                               + "; in R^d, the least over centres of the best neuron's |cos| "
                               f"{_span(rows, 'centre_cos')}")


def _span(rows, key, fmt=".3f"):
    """``"lo-hi"`` of ``key`` over ``rows`` (one number when they agree)."""
    lo, hi = (format(f(r[key] for r in rows), fmt) for f in (min, max))
    return lo if lo == hi else f"{lo}-{hi}"


def _by_k(rows):
    """``[(k, rows with that k)]`` in increasing k."""
    return [(k, [r for r in rows if r["k"] == k]) for k in sorted({r["k"] for r in rows})]


def _figure(sims, rows, path, title):
    """Per setting (seed 0): each trained neuron's cos to its nearest centre against its share of the mean margin,
    by whether its output weight has the sign of T_a; then the unexplained share per run, theory and nulls."""
    fig, axes = subplots(len(sims) + 1, panel_size=(4.2, 3.4))
    for ax, (i, model, sim) in zip(axes, sims):
        W, b, a = (np.asarray(sim[n][0]) for n in ("Q_final", "b_final", "a_final"))
        X, y = model.sample(4000, seed=1000)
        part = _margin_parts(W, b, a, X, y)[0]
        cos, _, _, agree = _neurons(model, W, b, a)
        for mask, colour, label in ((agree, "C4", "sign(a) = sign(T_a)"), (~agree, "C8", "opposite sign")):
            ax.scatter(cos[mask], part[mask] / part.sum(), s=6, color=colour, alpha=0.6, label=label)
        ax.axvline(centre_cos_threshold(model.k), color="k", ls=":", label="centre threshold")
        d, k, sr = _TABLE6[i]
        ax.set(xlabel="cos(direction in span M, nearest centre)", ylabel="share of the mean margin",
               title=f"Experiment {i + 1}: d = {d}, k = {k}, sigma_r = {sr}")
    ax = axes[-1]
    x = np.arange(len(rows))
    for j, (key, label) in enumerate((("unexplained", "theory"), ("paper_sign", "null: paper's sign"),
                                      ("atoms", "null: atoms"), ("no_learning", "null: no learning"))):
        ax.bar(x + 0.2 * (j - 1.5), [r[key] for r in rows], width=0.2, color=f"C{j}", label=label)
    ax.axhline(REGISTRY["emergence.gmm_centres"].tolerance, color="k", ls="--", label="tolerance")
    ax.set(xticks=x, xticklabels=[f"E{r['experiment']}s{r['seed']}" for r in rows], ylabel="unexplained share",
           title="per run (experiment, seed)")
    legend_outside(fig, loc="below")
    return save_figure(fig, path, title=title)
