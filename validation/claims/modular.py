"""k-input modular addition claims on the max-margin theory ([Shi24], Ch. 4; docs/modular.md).

* ``modular.construction_margin``: the explicit network of Lemma C.18 (made explicit in docs/modular.md) has
  normalized margin gamma* on >= 9 (p, k) pairs, measured by the numba kernel over all p^k inputs.
* ``modular.single_neuron_optimum``: numerical maximisation of the single-neuron margin Psi on the unit
  sphere (direct enumeration, BFGS, random restarts) reaches gamma* with one-frequency components of
  amplitude sqrt(2/((k+1)p)) (Lemma C.15).
* ``modular.dft_all_frequencies``: numpy.fft.fftn of the full logit tensor of the construction is
  ``lambda p^k`` at every (j, .., j, -j) and zero at every other index with ``j_{k+1} != 0``; every
  frequency is used (Lemmas C.19/C.20).

:func:`bench_modular` times the margin over all p^k inputs: numba kernel against vectorised numpy.
Trained networks are held against the theory in ``modular_training.py``.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
from scipy import optimize

from popdyn.models import modular
from popdyn.plot import claim_title, plot_curves

from . import REGISTRY, ClaimResult, claim

__all__ = ["psi_direct", "maximise_single_neuron", "margin_numpy", "bench_modular"]

_PAIRS = [[5, 2], [7, 2], [11, 2], [5, 3], [7, 3], [11, 3], [5, 4], [7, 4], [5, 5]]  # (p, k)
_TOL_CONSTRUCTION, _TOL_NEURON, _TOL_DFT = 1e-12, 1e-12, 1e-10  # the claims' tolerances (also drawn in the figures)


# ---- (a) construction -------------------------------------------------------------------------------------

@claim(id="modular.construction_margin", model="modular",
       title="Lemma C.18 / Thm 4.9: the explicit 2^(2k-2)(p-1)-neuron network has normalized margin gamma*",
       source="[Shi24, Theorem 4.9, Lemma C.18, App. C.9.2 (Theorem C.22)]",
       metric="max over (p, k) of max(|h(theta)/||theta||_{2,k+1}^{k+1} / gamma* - 1|, |construction_margin(p, k) / "
              "(h(theta)/||theta||^{k+1}) - 1|): the kernel's margin of the built network (h over all p^k inputs) "
              "against Thm 4.9's gamma* and against the analytic margin of the construction (its logits, in the proof of Lemma C.18)",
       tolerance=_TOL_CONSTRUCTION,
       tolerance_origin="float64 rounding: logits are sums of 2^(2k-2)(p-1) terms of size ~1 (observed 1.2e-14); "
                        "the paper's '0 otherwise' logit gives construction_margin = gamma* (p-1)/p, off by "
                        ">= 1/11 here",
       kind="independent",
       nulls={"paper_zero_logit": "the paper's construction with its '0 otherwise' logit for the wrong classes: "
                                  "analytic margin gamma* (p-1)/p"},
       quick={"pairs": _PAIRS},
       full={"pairs": _PAIRS + [[13, 2], [31, 2], [13, 3], [23, 3], [11, 4], [13, 4], [7, 5], [5, 6]]})
def construction_margin(size, device, outdir):
    rows = []
    for p, k in size["pairs"]:
        t0 = time.perf_counter()
        U, W = modular.max_margin_network(p, k)
        h = modular.normalized_margin(U, W)
        ratio, analytic = h / modular.max_margin(p, k), modular.construction_margin(p, k) / h
        rows.append({"p": p, "k": k, "width": U.shape[0], "inputs": p ** k, "gamma_star": modular.max_margin(p, k),
                     "ratio": ratio, "analytic_over_kernel": analytic,
                     "abs_error": max(abs(ratio - 1), abs(analytic - 1)),
                     "paper_ratio": modular.construction_margin(p, k, convention="paper") / modular.max_margin(p, k),
                     "seconds": time.perf_counter() - t0})
    worst = max(r["abs_error"] for r in rows)
    # the null's analytic margin against the kernel's margin of the built network, the same metric
    null = max(abs(r["paper_ratio"] / r["ratio"] - 1) for r in rows)
    fig = plot_curves(np.arange(len(rows)), {"|ratio - 1| (construction)": [max(r["abs_error"], 1e-17) for r in rows],
                                             "1 - (p-1)/p (paper's '0 otherwise')": [1 - r["paper_ratio"] for r in rows]},
                      outdir / "modular.construction_margin.png", refs={"tolerance": _TOL_CONSTRUCTION}, logy=True,
                      styles={"|ratio - 1| (construction)": {"ls": "", "marker": "o"}},
                      xlabel="(p, k)", discrete=True, labels=[f"({r['p']}, {r['k']})" for r in rows],
                      ylabel="|normalized margin / gamma* - 1|  (0 at 1e-17)",
                      title=claim_title(REGISTRY["modular.construction_margin"], worst, what="max |ratio - 1|"))
    return ClaimResult(measured=worst, figure=str(fig), table=rows, nulls={"paper_zero_logit": null},
                       message=f"{len(rows)} (p, k) pairs (null, paper's '0 otherwise' logit: {null:.3f}): measured "
                               f"normalized margin = gamma* = analytic "
                               f"construction margin within {worst:.1e}; the paper's wrong logit 0 would give (p-1)/p.")


# ---- (b) single-neuron maximisation --------------------------------------------------------------------------

def psi_direct(x, p, k):
    r"""Single-neuron margin Psi and its gradient by enumeration of all p^k inputs (independent of the Fourier form).

    .. math:: \Psi = \mathbb E_{\mathbf a}\Big[\Big(\sum_j u_j(a_j)\Big)^k\,\frac{p\,w(s) - \sum_c w(c)}{p-1}\Big]

    ``x`` is the flat vector ``(u_1, .., u_k, w)`` of length ``(k+1)p``; returns ``(Psi, grad)``
    ([Shi24, Definitions C.12-C.13]).
    """
    u, w = x[:k * p].reshape(k, p), x[k * p:]
    A = modular.all_inputs(p, k)
    s = A.sum(axis=1) % p
    pre = u[np.arange(k), A].sum(axis=1)
    v = (p * w[s] - w.sum()) / (p - 1)
    n = len(s)
    grad_u = [np.bincount(A[:, j], weights=k * pre ** (k - 1) * v, minlength=p) / n for j in range(k)]
    grad_w = p / (p - 1) * np.bincount(s, weights=pre ** k, minlength=p) / n - np.mean(pre ** k) / (p - 1)
    return float(np.mean(pre ** k * v)), np.concatenate(grad_u + [grad_w])


def maximise_single_neuron(p, k, *, restarts, seed, gtol=1e-12):
    r"""Maximise ``Psi(x / ||x||)`` = ``Psi(x) / ||x||^{k+1}`` by BFGS from random Gaussian starts, then polish the
    best maximiser by solving grad = 0 (Levenberg-Marquardt).

    .. math:: \max_{\|x\| = 1}\Psi(x) = \gamma^*(p, k)\quad\text{(Lemma C.15)}

    BFGS alone stops on the flat objective (precision loss) up to ~1e-6 off the set of maximisers in the component
    norms; the root polish takes them to rounding (<= 1e-15 on the claim's (p, k)).
    Returns the best unit vector split as ``(u (k, p), w (p,))`` and its Psi ([Shi24, Lemma C.15]).
    """
    rng = np.random.default_rng(seed)

    def neg(x):
        val, g = psi_direct(x, p, k)
        r2 = x @ x
        return -val / r2 ** ((k + 1) / 2), -(g / r2 ** ((k + 1) / 2) - (k + 1) * val * x / r2 ** ((k + 3) / 2))

    best = None
    for _ in range(restarts):
        res = optimize.minimize(neg, rng.standard_normal((k + 1) * p), jac=True, method="BFGS",
                                options={"gtol": gtol, "maxiter": 20_000})
        if best is None or res.fun < best.fun:
            best = res
    scale = abs(best.fun)
    x = optimize.least_squares(lambda z: neg(z)[1] / scale, best.x / np.linalg.norm(best.x), method="lm",
                               xtol=1e-15, ftol=1e-15, gtol=1e-15).x
    x /= np.linalg.norm(x)
    return x[:k * p].reshape(k, p), x[k * p:], -neg(x)[0]


@claim(id="modular.single_neuron_optimum", model="modular",
       title="Lemma C.15: max of Psi on the unit sphere is gamma*, at one-frequency cosines of amplitude sqrt(2/((k+1)p))",
       source="[Shi24, Lemma C.15, eq. (C.16)]",
       metric="max over (p, k) of max(|Psi_best/gamma* - 1|, 1 - min one-sided power, max |amplitude/sqrt(2/((k+1)p)) - 1|,"
              " max |(k+1)||component||^2 - 1|)",
       tolerance=_TOL_NEURON,
       tolerance_origin="BFGS, then grad = 0 solved by Levenberg-Marquardt: observed <= 4.4e-16 (quick) and "
                        "<= 8.9e-16 (full), rounding; 1e-12 leaves 1000x headroom and is far below the gap to a neuron "
                        "split over two frequencies (Psi/gamma* <= 2^((1-k)/2) <= 0.71). BFGS alone stopped up to "
                        "7.7e-7 off in the component norms (precision loss on the flat objective)",
       kind="independent",
       nulls={"two_sided_power": "the paper's two-sided normalized power (a pure cosine has max power 1/2)",
              "amplitude_without_2": "a unit cosine's amplitude sqrt(1/((k+1)p)) (the factor 2 of cos^2 forgotten)"},
       quick={"pairs": [[7, 2], [7, 3], [5, 4]], "restarts": 6},
       full={"pairs": [[7, 2], [11, 2], [13, 2], [7, 3], [11, 3], [5, 4], [7, 4], [5, 5]], "restarts": 12})
def single_neuron_optimum(size, device, outdir):
    rows = []
    for i, (p, k) in enumerate(size["pairs"]):
        u, w, psi = maximise_single_neuron(p, k, restarts=size["restarts"], seed=100 + i)
        comps = np.concatenate([u, w[None]])
        spec = np.abs(np.fft.rfft(comps, axis=1))
        amp = 2 * spec[:, 1:].max(axis=1) / p   # amplitude of the dominant cosine of each component
        power = modular.power_spectrum(comps).max(axis=1)
        rows.append({"p": p, "k": k, "ratio": psi / modular.max_margin(p, k),
                     "min_power": float(power.min()), "amp_error": float(np.abs(amp / modular.Problem(p, k).amplitude - 1).max()),
                     "norm_error": float(np.abs((k + 1) * (comps ** 2).sum(axis=1) - 1).max()),
                     "fourier_psi_ratio": modular.single_neuron_margin(u, w) / modular.max_margin(p, k)})
    errs = [max(abs(r["ratio"] - 1), 1 - r["min_power"], r["amp_error"], r["norm_error"]) for r in rows]
    worst = float(max(errs))
    # the same metric under each null: the predicted power 1/2, the predicted amplitude divided by sqrt(2)
    nulls = {"two_sided_power": float(max(max(abs(r["ratio"] - 1), abs(0.5 - r["min_power"]), r["amp_error"],
                                              r["norm_error"]) for r in rows)),
             "amplitude_without_2": float(max(max(abs(r["ratio"] - 1), 1 - r["min_power"],
                                                  abs((1 + r["amp_error"]) * 2 ** 0.5 - 1), r["norm_error"])
                                              for r in rows))}
    fig = plot_curves(np.arange(len(rows)), {"|Psi/gamma* - 1|": [max(abs(r["ratio"] - 1), 1e-17) for r in rows],
                                             "1 - min power": [max(1 - r["min_power"], 1e-17) for r in rows],
                                             "amplitude error": [max(r["amp_error"], 1e-17) for r in rows]},
                      outdir / "modular.single_neuron_optimum.png", refs={"tolerance": _TOL_NEURON}, logy=True,
                      styles={k: {"ls": "", "marker": "o"} for k in ("|Psi/gamma* - 1|", "1 - min power", "amplitude error")},
                      xlabel="(p, k)", discrete=True, labels=[f"({r['p']}, {r['k']})" for r in rows],
                      ylabel="error  (0 at 1e-17)",
                      title=claim_title(REGISTRY["modular.single_neuron_optimum"], worst, what="worst error",
                                        note="BFGS maximiser of Psi on the unit sphere"))
    return ClaimResult(measured=worst, figure=str(fig), table=rows, nulls=nulls,
                       message=f"nulls: two-sided power {nulls['two_sided_power']:.2f}, amplitude without 2 "
                               f"{nulls['amplitude_without_2']:.2f}; {len(rows)} (p, k): best Psi/gamma* in [{min(r['ratio'] for r in rows):.10f}, "
                               f"{max(r['ratio'] for r in rows):.10f}], one-frequency components, worst error {worst:.1e}.")


# ---- (c) multi-dimensional DFT: every frequency is used ----------------------------------------------------------

@claim(id="modular.dft_all_frequencies", model="modular",
       title="Lemmas C.19/C.20: the logit DFT of a max-margin network is lambda p^k at (j,..,j,-j) for all j != 0",
       source="[Shi24, Lemmas C.19, C.20]",
       metric="max over (p, k) of max(max_j |F(j,..,j,-j)/(h p^k) - 1|, max |F| / (h p^k) over the other indices with "
              "j_{k+1} != 0, 1 - fraction of frequencies used, |closed form/fftn - 1|)",
       tolerance=_TOL_DFT,
       tolerance_origin="numpy.fft.fftn of p^(k+1) <= 1.7e5 logits of size ~h: rounding ~ log(p^(k+1)) eps relative "
                        "to sum |f| = O(p^(k+1) h); 1e-10 leaves 100x margin",
       kind="independent",
       nulls={"plus_sign": "the logit DFT is supported at (j, .., j, +j) (the sign of the output frequency slipped)"},
       quick={"pairs": [[7, 2], [11, 2], [13, 2], [5, 3], [7, 3], [11, 3], [5, 4]]},
       full={"pairs": [[7, 2], [11, 2], [13, 2], [31, 2], [5, 3], [7, 3], [11, 3], [13, 3], [5, 4], [7, 4], [11, 4],
                       [5, 5]]})
def dft_all_frequencies(size, device, outdir):
    rows = []
    for p, k in size["pairs"]:
        U, W = modular.max_margin_network(p, k)
        h = modular.margin(U, W)
        F = np.fft.fftn(modular.logits(U, W).reshape((p,) * (k + 1))) / (h * p ** k)
        j = np.arange(1, p)
        idx = tuple([j] * k + [(-j) % p])
        diag = F[idx]
        plus = F[tuple([j] * (k + 1))]                                 # the null's support (j, .., j, +j)
        F[idx] = 0.0
        F[(slice(None),) * k + (0,)] = 0.0
        closed = modular.margin_dft(U, W, normalize=False) / h
        rows.append({"p": p, "k": k, "diag_error": float(np.abs(diag - 1).max()), "off_support": float(np.abs(F).max()),
                     "coverage": modular.fourier_diagnostics(U, W)["coverage_fraction"],
                     "closed_form_error": float(np.abs(closed / diag - 1).max()),
                     "plus_sign_error": float(np.abs(plus - 1).max())})
    errs = [max(r["diag_error"], r["off_support"], 1 - r["coverage"], r["closed_form_error"]) for r in rows]
    worst = float(max(errs))
    fig = plot_curves(np.arange(len(rows)), {"max_j |F(j..j,-j)/(h p^k) - 1|": [max(r["diag_error"], 1e-17) for r in rows],
                                             "max other |F|/(h p^k)": [max(r["off_support"], 1e-17) for r in rows]},
                      outdir / "modular.dft_all_frequencies.png", refs={"tolerance": _TOL_DFT}, logy=True,
                      styles={k: {"ls": "", "marker": "o"} for k in ("max_j |F(j..j,-j)/(h p^k) - 1|", "max other |F|/(h p^k)")},
                      xlabel="(p, k)", discrete=True, labels=[f"({r['p']}, {r['k']})" for r in rows],
                      ylabel="relative DFT error  (0 at 1e-17)",
                      title=claim_title(REGISTRY["modular.dft_all_frequencies"], worst, what="worst error"))
    null = max(r["plus_sign_error"] for r in rows)
    return ClaimResult(measured=worst, figure=str(fig), table=rows, nulls={"plus_sign": null},
                       message=f"{len(rows)} (p, k): F(j,..,j,-j) = h p^k for every j != 0 within {worst:.1e} (null "
                               f"(j,..,j,+j): {null:.2f}); "
                               f"coverage {min(r['coverage'] for r in rows):.0%}.")


# ---- benchmark -------------------------------------------------------------------------------------------------

def margin_numpy(U, W, chunk=None):
    r"""Plain vectorised numpy dataset margin over all p^k inputs (the benchmark's baseline).

    .. math:: h = \min_{\mathbf a}\Big(f[y] - \max_{c \ne y} f[c]\Big),\quad
              f = \Big(\sum_j U[:, j, a_j]\Big)^{k\,\top} W

    ``chunk=None`` forms the (p^k, m) pre-activations at once; otherwise ``chunk`` inputs at a time
    ([Shi24, Section 4.3, Definitions 4.2-4.3]).
    """
    m, k, p = U.shape
    n = p ** k
    chunk = n if chunk is None else chunk
    best = np.inf
    for start in range(0, n, chunk):
        idx = np.arange(start, min(n, start + chunk))
        digits = [(idx // p ** (k - 1 - j)) % p for j in range(k)]
        pre = sum(U[:, j, digits[j]].T for j in range(k))
        L = (pre ** k) @ W
        y = sum(digits) % p
        rows = np.arange(len(idx))
        correct = L[rows, y].copy()
        L[rows, y] = -np.inf
        best = min(best, float((correct - L.max(axis=1)).min()))
    return best


_BENCH_CHILD = """
import json, resource, sys, time
import numpy as np
from popdyn.models import modular
from popdyn.validation.claims.modular import margin_numpy
p, k, m, method, chunk, repeats = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
U, W = rng.standard_normal((m, k, p)) / np.sqrt(k * p), rng.standard_normal((m, p)) / np.sqrt(m)
fn = (lambda: modular.margin(U, W)) if method == "numba" else (lambda: margin_numpy(U, W, chunk))
modular.margin(U[:2, :, :3], W[:2, :3])  # JIT (or cache load) before timing
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times = []
for _ in range(repeats):
    t0 = time.perf_counter(); h = fn(); times.append(time.perf_counter() - t0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"seconds": sorted(times)[len(times) // 2], "margin": h, "peak_mib": peak / 1024}))
"""


def _bench_child(p, k, m, method, chunk, repeats):
    args = json.dumps([p, k, m, method, chunk, repeats])
    out = subprocess.run([sys.executable, "-c", _BENCH_CHILD, args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_modular(sizes=((23, 4, 512), (29, 4, 512), (31, 4, 1024)), *, repeats=3, dense_limit=2 * 10**8,
                  chunk=2**15):
    """Dataset margin over all p^k inputs: numba kernel vs vectorised numpy, wall time and peak memory.

    Each measurement runs in a fresh process (``ru_maxrss`` high-water mark above the post-warm-up level),
    timing the median of ``repeats`` calls. numpy forms the (p^k, m) pre-activations at once when
    ``p^k m <= dense_limit``, otherwise ``chunk`` inputs at a time (then its memory is bounded too).
    Returns one dict per size: times, ``ratio`` = numpy/numba, peak MiB of each, and the margins' agreement.
    """
    rows = []
    for p, k, m in sizes:
        nb = _bench_child(p, k, m, "numba", None, repeats)
        dense = p ** k * m <= dense_limit
        npy = _bench_child(p, k, m, "numpy", None if dense else chunk, repeats)
        rows.append({"p": p, "k": k, "width": m, "inputs": p ** k, "numba_s": nb["seconds"], "numpy_s": npy["seconds"],
                     "ratio": npy["seconds"] / nb["seconds"], "numba_peak_mib": nb["peak_mib"],
                     "numpy_peak_mib": npy["peak_mib"], "numpy_mode": "dense" if dense else f"chunk {chunk}",
                     "rel_diff": abs(nb["margin"] - npy["margin"]) / abs(npy["margin"])})
    return rows
