"""ResNet vs kernels ([AllenZhu19]): the coupling and existential-weights parts (docs/resnet.md).

* ``resnet.sign_flips``: on ResNets trained by Algorithm 1 (online SGD) on the Theorem-2 target, the first-layer ReLU
  signs flipped between W0 and W on test inputs never exceed Prop. C.4's exact worst case for the measured
  ||g'||, whose count on the actual W0 x~ follows the m -> inf law 2Phi(t) - 1; the measured count sits at the
  random-direction prediction m arctan(delta)/pi, far below the worst case.
* ``resnet.indicator_construction``: Lemma F.1''s random-feature construction W* (F.3) built from Lemma F.2's exact h
  reproduces Phi with a bias within z of its Monte Carlo standard error, its error falls like m^(-1/2), and
  m ||W*||_F^2 matches its closed form; Claim F.4's truncation tails are far below eps/8 at the paper's levels.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from popdyn.models import resnet
from popdyn.models.resnet import existential, indicator
from popdyn.models.resnet.complexity import TaylorSeries
from popdyn.plot import claim_title, legend_outside, sample_axis, save_figure, subplots
from popdyn.sim.resnet import networks as resnet_nets

from . import REGISTRY, ClaimResult, claim

__all__ = []

_RANDOM_TOL = 0.15   # |flips / random-direction prediction - 1|, per seed; see the tolerance_origin
_LAW_TOL = 0.05      # |exact worst case / its m -> inf law - 1|, per seed (finite-m bias ~1 % at m = 256)
_Z = 5.0


def _trained_net(d, k, alpha, m, seeds, steps, eta, batch, seed):
    """A ResNet (experiment init) trained by Algorithm 1 on thm2_target(d, k, alpha) (S drawn with ``seed``)."""
    torch.set_num_threads(1)
    net = resnet_nets.init_net("resnet", d, k, m, seeds=seeds, seed=seed)
    sim = resnet_nets.train(net, resnet.thm2_target(d, k, alpha, rng=seed), method="online", steps=steps,
                            eta_w=eta, batch=batch, test=2000, records=2, seed=seed, hierarchy=False)
    return net, sim["test_error"][:, -1]


@claim(id="resnet.sign_flips", model="resnet",
       title="SGD's first-layer perturbation flips no more ReLU signs than Prop. C.4's exact worst case (never "
             "close to it): it flips as many as a random direction of the same norm",
       source="[AllenZhu19, Proposition C.4 ((C.1)), Lemma D.1(a), Algorithm 1]",
       metric="max over widths and seeds of |R - 1|, R = sum_x flips(x) / sum_x m arctan(delta_x)/pi (the "
              "random-direction count at the measured delta = ||g'||/||g0||)",
       tolerance=_RANDOM_TOL,
       tolerance_origin="the paper proves only the worst case; a random direction is the derived reference. Per "
                        "input the count is ~binomial, the mean over 200 inputs has s.e. < 2 %; pilots over lr, "
                        "steps, batch, init and m in 64-1024 gave R in 0.94-1.05 (fc2 0.86-0.92), while the worst "
                        "case is 4-6 x larger (R ~ 0.2 under it)",
       kind="training",
       nulls={"worst_case": "SGD's perturbation is adversarial: the flips follow Prop. C.4's worst case (its m -> inf "
                            "law at the measured delta) in place of the random-direction count"},
       quick={"d": 10, "k": 3, "alpha": 0.3, "m": [256, 1024], "seeds": 4, "steps": 3000, "eta": 0.05, "batch": 8,
              "inputs": 200},
       full={"d": 10, "k": 3, "alpha": 0.3, "m": [256, 1024, 4096], "seeds": 8, "steps": 10000, "eta": 0.05,
             "batch": 8, "inputs": 1000})
def sign_flips(size, device, outdir):
    rows, worst_R, worst_ratio, worst_law, null_R = [], 0.0, 0.0, 0.0, 0.0
    X = np.sign(np.random.default_rng(12).standard_normal((size["inputs"], size["d"])))
    X[X == 0] = 1.0
    fig, (ax0, ax1) = subplots(2, panel_size=(5.0, 4.0))
    grid = np.geomspace(1e-3, 3.0, 200)
    for n, m in enumerate(size["m"]):
        net, err = _trained_net(size["d"], size["k"], size["alpha"], m, size["seeds"], size["steps"], size["eta"],
                                size["batch"], 0)
        r = resnet_nets.preactivation_flips(net, X, "W")
        rand = m * np.vectorize(resnet.random_flip_fraction)(r["delta"])
        law = m * np.vectorize(resnet.worst_case_flip_fraction)(r["delta"])
        R = r["flips"].sum(1) / rand.sum(1)
        L = r["worst"].sum(1) / law.sum(1)
        ratio = float((r["flips"] / np.maximum(r["worst"], 1)).max())
        worst_R = max(worst_R, float(np.abs(R - 1).max()))
        null_R = max(null_R, float(np.abs(r["flips"].sum(1) / law.sum(1) - 1).max()))
        worst_law = max(worst_law, float(np.abs(L - 1).max()))
        worst_ratio = max(worst_ratio, ratio, float((r["flips"] > r["worst"]).any()) * np.inf)
        rows.append({"m": m, "test_error": float(np.mean(err)), "delta_median": float(np.median(r["delta"])),
                     "flip_fraction": float(r["fraction"].mean()), "random_fraction": float(rand.mean() / m),
                     "worst_fraction_exact": float(r["worst"].mean() / m),
                     "worst_fraction_limit": float(law.mean() / m),
                     "R_min": float(R.min()), "R_max": float(R.max()), "max_flips_over_worst": ratio,
                     "position_in_[random,worst]": float(np.mean((r["flips"] - rand) / (r["worst"] - rand)))})
        ax0.plot(r["delta"].ravel(), r["fraction"].ravel(), ".", ms=2, color=f"C{n}", label=f"m = {m}: measured")
    for key, style, label in (("flip_fraction", "o-", "measured"), ("random_fraction", "x--", "random direction"),
                              ("worst_fraction_exact", "s:", "worst case (exact)")):
        ax1.plot(size["m"], [r[key] for r in rows], style, color="C0", label=label)
    ax0.plot(grid, [resnet.random_flip_fraction(t) for t in grid], "-", color="0.3", label="arctan(delta)/pi")
    ax0.plot(grid, [resnet.worst_case_flip_fraction(t) for t in grid], "--", color="0.3",
             label="worst case (m -> inf)")
    ax0.set(xscale="log", yscale="log", xlabel="delta = ||g'|| / ||g0||", ylabel="flipped fraction",
            title=f"first layer: max |R - 1| = {worst_R:.3f} (tol {_RANDOM_TOL})")
    ax1.set(xscale="log", yscale="log", xlabel="width m", ylabel="mean flipped fraction",
            title=f"max flips / worst case = {worst_ratio:.2f} (<= 1)")
    sample_axis(ax1, size["m"])
    for ax in (ax0, ax1):
        legend_outside(ax)
    path = save_figure(fig, outdir / "resnet.sign_flips.png", title=claim_title(
        REGISTRY["resnet.sign_flips"], worst_R, what="max |R - 1|"))
    checks = {"flips <= Prop. C.4's exact worst case for every seed and input": worst_ratio <= 1.0,
              f"exact worst case on W0 x~ within {_LAW_TOL:.0%} of its m -> inf law, every seed": worst_law <= _LAW_TOL}
    ms = np.log([r["m"] for r in rows])
    slopes = [float(np.polyfit(ms, np.log([r["m"] * r[key] for r in rows]), 1)[0]) if len(rows) > 1 else math.nan
              for key in ("flip_fraction", "worst_fraction_exact")]
    return ClaimResult(measured=worst_R, checks=checks, figure=str(path), table=rows,
                       nulls={"worst_case": null_R},
                       message=f"max |R - 1| {worst_R:.3f} (worst-case null {null_R:.3f}); max flips / worst {worst_ratio:.3f}; worst vs m -> inf "
                               f"law {worst_law:.3f}; flips ~ m^{slopes[0]:.2f}, worst case ~ m^{slopes[1]:.2f} "
                               f"(Lemma D.1(a): m^(2/3) at delta ~ m^(-1/2))")


def _phi_series(degree=3):
    """The k = 2, p = 2 activations (degrees <= 3, only zero-order and odd terms), truncated at ``degree``."""
    c = [[[0.2, 1.0, 0.0, -0.3], [0.0, 0.5, 0.0, 0.2]], [[-0.1, -0.7], [0.1, 0.0, 0.0, 0.8]]]
    return [[TaylorSeries.from_coeffs(ci[:degree + 1]) for ci in row] for row in c]


@claim(id="resnet.indicator_construction", model="resnet",
       title="Lemma F.1''s construction W* (with Lemma F.2's exact h) reproduces Phi without bias, with error "
             "~ m^(-1/2), and m ||W*||_F^2 equals its closed form",
       source="[AllenZhu19, Lemma F.1', Lemma F.2, Claims F.3-F.4, App. F.3 (the proof, (F.3), (F.4))]",
       metric="max over m, test inputs x and outputs r of |z|, z = (mean of the m R i.i.d. terms m a_rj <w*_j,x> "
              "1[<w0_j,x> >= 0] - Phi_r(x)) / their standard error, R = terms / m independent constructions per m",
       tolerance=_Z,
       tolerance_origin="~100 nearly Gaussian z (3e5 heavy-tailed terms each, h cubic): P(max |z| > 5) < 1e-4; a "
                        "wrong p'_3 sign biases by ~0.1-0.5 against s.e. ~3e-3",
       kind="independent",
       nulls={"linear_part": "the construction reproduces only Phi's linear (degree-1) part: the same terms' mean "
                             "against Phi with its higher-degree terms dropped"},
       quick={"d": 8, "m": [100, 1000, 10000], "terms": 300_000, "inputs": 16, "eps": 1e-3, "seed": 4},
       full={"d": 8, "m": [100, 1000, 10000, 100000], "terms": 3_000_000, "inputs": 32, "eps": 1e-3, "seed": 4})
def indicator_construction(size, device, outdir):
    rng = np.random.default_rng(size["seed"])
    phi = existential.Phi.random(size["d"], _phi_series(), rng=rng)
    X = rng.standard_normal((size["inputs"], size["d"]))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    target = phi(X)
    linear = existential.Phi(phi.a_star, phi.w1, phi.w2, _phi_series(1))(X)
    limit = phi.frobenius_limit()
    rows, zmax, zfro, znull = [], 0.0, 0.0, 0.0
    for m in size["m"]:
        s1 = np.zeros(target.shape)
        s2 = np.zeros(target.shape)
        sq = 0.0
        rows_w = []
        reps = max(2, size["terms"] // m)
        for _ in range(reps):
            W0 = rng.standard_normal((m, size["d"])) / math.sqrt(m)
            a = rng.standard_normal((phi.k, m))
            Ws = existential.random_feature_weights(phi, W0, a)
            T = m * ((X @ Ws.T) * (X @ W0.T >= 0))[:, None, :] * a[None]     # (n, k, m) i.i.d. terms, mean Phi
            s1 += T.sum(-1)
            s2 += (T ** 2).sum(-1)
            sq += float(np.mean((existential.G(X, Ws, W0, a) - target) ** 2))
            rows_w.append((m * np.linalg.norm(Ws, axis=1)) ** 2)                 # ||m w*_j||^2, mean m||W*||_F^2
        n = m * reps
        mean = s1 / n
        var = (s2 - n * mean ** 2) / (n - 1)
        z = (mean - target) / np.sqrt(var / n)
        zmax = max(zmax, float(np.abs(z).max()))
        znull = max(znull, float(np.abs((mean - linear) / np.sqrt(var / n)).max()))
        w = np.concatenate(rows_w)
        zf = (w.mean() - limit) / (w.std(ddof=1) / math.sqrt(w.size))
        zfro = max(zfro, abs(float(zf)))
        rows.append({"m": m, "max_abs_z": float(np.abs(z).max()), "rms_error": math.sqrt(sq / reps),
                     "sqrt_m_rms_error": math.sqrt(m * sq / reps), "constructions": reps,
                     "predicted_sqrt_m_rms": math.sqrt(float(var.mean())),
                     "m_W_F2": float(w.mean()), "m_W_F2_limit": limit, "z_frobenius": float(zf)})
    ms = np.array(size["m"], dtype=float)
    slope = float(np.polyfit(np.log(ms), np.log([r["rms_error"] for r in rows]), 1)[0])
    tails = [indicator.claim_f4_tails(s, eps=size["eps"]) for row in phi.series for s in row]
    log_eps8 = math.log(size["eps"] / 8)
    fig, (ax0, ax1) = subplots(2, panel_size=(5.0, 4.0))
    ax0.plot(ms, [r["rms_error"] for r in rows], "o-", color="C0", label="measured RMS |G - Phi|")
    ax0.plot(ms, [r["predicted_sqrt_m_rms"] / math.sqrt(m) for r, m in zip(rows, ms)], "--", color="C1",
             label="sd(term) / sqrt(m)")
    ax0.set(xscale="log", yscale="log", xlabel="width m", ylabel="RMS error",
            title=f"slope {slope:.3f} (-1/2); max |z| = {zmax:.2f} (tol {_Z})")
    ax1.plot(ms, [r["m_W_F2"] for r in rows], "o-", color="C0", label="m ||W*||_F^2 (mean over constructions)")
    ax1.axhline(limit, color="C1", ls="--", label=f"closed form {limit:.3f}")
    ax1.set(xscale="log", xlabel="width m", ylabel="m ||W*||_F^2", title=f"max |z| = {zfro:.2f}")
    for ax in (ax0, ax1):
        legend_outside(ax)
    path = save_figure(fig, outdir / "resnet.indicator_construction.png", title=claim_title(
        REGISTRY["resnet.indicator_construction"], zmax, what="max |z|"))
    checks = {"RMS error slope in log m within 0.1 of -1/2": abs(slope + 0.5) <= 0.1,
              f"m ||W*||_F^2 within {_Z} s.e. of its closed form at every m": zfro <= _Z,
              "Claim F.4(a), (b) <= eps/8 at the paper's levels B_i": max(max(t) for t in tails) <= log_eps8}
    return ClaimResult(measured=zmax, checks=checks, figure=str(path), table=rows, nulls={"linear_part": znull},
                       message=f"max |z| {zmax:.2f} (linear-part null {znull:.1f}); slope {slope:.3f}; m||W*||^2 z {zfro:.2f} (limit {limit:.4f}); "
                               f"log F.4 tails <= {max(max(t) for t in tails):.0f} vs log(eps/8) {log_eps8:.2f}")
