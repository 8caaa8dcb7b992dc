"""Performance of popdyn, measured in one run as ratios against plain baselines.

Measurements (``python -m popdyn.validation.bench [--quick]``, also ``popdyn bench``):

1. ``predict_vs_simulate``: wall time of ``popdyn.simulate`` (torch, one seed) over ``popdyn.predict``
   (population ODE) for the same LoRA problem and horizon; goal: theory >= 1000x cheaper. The cold
   predict is the median over 50 fresh problems; the CPU times of both (``time.process_time``, steadier
   on a shared machine) and their ratio are reported beside the wall times.
2. ``hermite``: Hermite coefficients mu_0..mu_P of tanh, ``activations.get("tanh").hermite_coeffs(P)``
   on a fresh activation (no cache) against a loop of ``scipy.integrate.quad``; goal >= 100x, and the
   two agree to 1e-12.
3. ``h_kernel``: the drift h(m) of the LoRA overlap on many overlaps with a general Gram matrix,
   ``lora.h`` against :func:`h_numpy`, a plain vectorised numpy evaluation of the same kernel formula;
   ``h_kernel_floor``: the same ``lora.h`` against its limit on this machine, k^2 evaluations of the ReLU
   K' (one sqrt and one arcsin each) per overlap (:func:`kprime_floor`); goal: within 2x of it.
4. ``icl_optimum``, ``looped_error``, ``modular_margin``, ``multitask_moments``, ``multitask_predict``,
   ``emergence_kernel``, ``emergence_steps``, ``gf_risk``, ``gf_mixture_G``, ``gf_parity_mc``,
   ``resnet_exact_error``, ``resnet_hamming``, ``kernels_exact_error`` (d = 14, 18, 22; quick 10, 12): each model's
   closed form against the training or the plain numpy computation it replaces.
5. ``sweep_pool`` / ``sweep_dask``: a sweep of 32 LoRA simulations inline against a 2-process pool and
   a 2-worker local Dask cluster (the three must give the same numbers; the Dask overhead per task is
   the time beyond an ideal 2x), and ``validate_jobs``: ``validate --quick`` serially against ``--jobs 2``.
6. Start-up, against times rather than ratios (:func:`startup`): ``import popdyn`` in a fresh interpreter, the
   first ``popdyn.predict`` of every problem class's ``example()`` in a fresh process with an empty numba cache
   (the one-time compile a new install pays; goal under 3 s each) and the second call, and ``validate --quick``
   from the stored records (serial total, with ``--jobs 2`` by longest-first scheduling, the slowest claim;
   goals 10 minutes and 60 s), labelled as read from the records.

Every popdyn time is what a user gets: a FRESH problem with cold caches (numba JIT warmed up once on
a throwaway problem, nothing else reused), the median of a few repeats. The warm figure (the same
problem again, its cached tables reused) is reported beside it and labelled ``warm``; ratios and goals
use the cold time. The table is printed as markdown and saved atomically to
``./validation/report/bench.json`` (under the current directory). Short of a goal is reported, not hidden.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np
from scipy import integrate, special

import popdyn
from popdyn import activations
from popdyn.models import lora
from popdyn.results import atomic_write

__all__ = ["main", "run", "hermite_quad", "h_numpy", "kprime_floor", "SIZES"]

REPORT = Path("validation") / "report" / "bench.json"  # under the current directory

#: Sizes of the full and the quick run. Full sizes are the ones the goals are stated for.
SIZES = {
    "full": {"d": 2000, "k": 8, "steps": 20_000, "P": 200, "n_m": 10_000, "k_h": 64, "repeats": 5,
             "icl_target": 0.05, "looped": (10_000, 1000), "modular": ((23, 4, 512),),
             "multitask_n_train": 2 ** 18,
             "emergence": {"width": 300, "n_train": 50_000},
             "gf": {"neurons": 4096, "d": 1024, "mc": 10_000, "parity_n": 16384, "risk_mc": 200_000},
             "resnet": {"d": 30, "n_train": 3000, "mc": 100_000, "hamming_N": 10_000},
             "contrastive_steps": 6000, "committee_t": 100.0,
             "sweep": {"runs": 32, "d": 500, "tau": 10}, "validate": (), "cube": (14, 18, 22)},
    "quick": {"d": 500, "k": 8, "steps": 2_000, "P": 60, "n_m": 1_000, "k_h": 16, "repeats": 3,
              "icl_target": 0.2, "looped": (1000, 100), "modular": ((11, 3, 64),),
              "multitask_n_train": 2 ** 16,
              "emergence": {"width": 60, "n_train": 10_000},
              "gf": {"neurons": 1024, "d": 256, "mc": 4000, "parity_n": 4096, "risk_mc": 50_000},
              "resnet": {"d": 20, "n_train": 1000, "mc": 20_000, "hamming_N": 2000},
              "contrastive_steps": 1500, "committee_t": 20.0,
              "sweep": {"runs": 8, "d": 100, "tau": 5}, "cube": (10, 12),
              "validate": ("modular.construction_margin", "modular.dft_all_frequencies", "icl.rank_gap")},
}
GOALS = {"predict_vs_simulate": 1000.0, "hermite": 100.0, "h_kernel": 1.0, "h_kernel_floor": 0.5, "icl_optimum": 1.0,
         "looped_error": 1.0, "modular_margin": 1.0, "multitask_moments": 1.0,
         "multitask_predict": 100.0, "emergence_kernel": 1.0,
         "emergence_steps": 1.0, "gf_mixture_G": 100.0, "gf_parity_mc": 1.0, "gf_risk": 10.0, "resnet_exact_error": 1.0,
         "resnet_hamming": 1.0, "contrastive_optimum": 1.0, "contrastive_loss_W": 10.0, "dg_accuracy": 1.0,
         "dg_optimum": 1.0,
         "committee_erf_ode": 10.0, "committee_relu_ode": 5.0, "committee_tanh_ode": 5.0, "sweep_pool": 1.0,
         "sweep_dask": 1.0, "validate_jobs": 1.0, "kernels_exact_error": 1.0, "lora_B_general": 0.1}
#: Start-up goals in seconds (:func:`startup`).
STARTUP_GOALS = {"import": 0.3, "first_call": 3.0, "validate_quick_jobs2": 600.0, "slowest_quick_claim": 60.0}
_QUAD_BOUND = 30.0  # |x| <= 30: h_p(x) phi(x) < e^-200 beyond, for p <= 200 (turning point sqrt(4p+2) = 28.3)


def _median_time(fn, repeats):
    """Median wall time of ``fn()`` over ``repeats`` calls, after one untimed warm-up call."""
    out = fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _cold_warm(make, fn, repeats):
    """Median time of ``fn(make())`` with a new problem per call (cold caches) and of ``fn(p)`` on one reused
    problem (warm); ``make()`` is not timed. JIT is warmed up first on a throwaway problem."""
    fn(make())
    cold = []
    for _ in range(repeats):
        p = make()
        t0 = time.perf_counter()
        out = fn(p)
        cold.append(time.perf_counter() - t0)
    p = make()
    warm, out = _median_time(lambda: fn(p), repeats)
    return statistics.median(cold), warm, out


def hermite_quad(f, P, *, bound=_QUAD_BOUND, epsabs=1e-14):
    r"""Baseline Hermite coefficients by one ``scipy.integrate.quad`` per degree.

    .. math:: \mu_p = \int_{-b}^{b} f(x)\, \frac{\mathrm{He}_p(x)}{\sqrt{p!}}\, \frac{e^{-x^2/2}}{\sqrt{2\pi}}\,dx

    ``He_p`` is evaluated by ``scipy.special.eval_hermitenorm`` (no overflow for |x| <= 30, p <= 200).
    """
    mu = np.empty(P + 1)
    for p in range(P + 1):
        scale = math.exp(-0.5 * math.lgamma(p + 1)) / math.sqrt(2 * math.pi)

        def integrand(x, p=p, scale=scale):
            return f(x) * special.eval_hermitenorm(p, x) * math.exp(-0.5 * x * x) * scale

        mu[p] = integrate.quad(integrand, -bound, bound, epsabs=epsabs, epsrel=0.0, limit=4000)[0]
    return mu


def h_numpy(problem, m, *, chunk=256):
    r"""Plain vectorised numpy drift h(m) of the LoRA overlap: the kernel form, no numba.

    .. math:: h(m) = 2\xi^2 \sum_{i,j} \frac{\lambda_i\lambda_j c_i \hat c_j}{r_i \hat r_j}\, K'(\rho_{ij}(m))

    Uses :func:`popdyn.models.lora.overlaps` and the activation's own ``Kprime``; processes ``chunk``
    overlaps at a time to bound memory (``chunk * k^2`` floats).
    """
    m = np.atleast_1d(np.asarray(m, dtype=np.float64))
    A = problem.xi**2 * np.outer(problem.lam * problem.c / problem.r, problem.lam * problem.c_hat / problem.r_hat)
    out = np.empty(m.shape)
    for s in range(0, m.size, chunk):
        rho = lora.overlaps(problem, m[s:s + chunk])
        out[s:s + chunk] = 2.0 * np.einsum("ij,nij->n", A, problem.sigma.Kprime(rho))
    return out


@numba.njit(cache=True)
def kprime_floor(gaps, m):
    r"""The limit of the ReLU h kernel: ``k^2`` evaluations of :math:`\arcsin\sqrt{g}` per overlap, summed.

    .. math:: \sum_{p=1}^{k^2} \arcsin\sqrt{g_p (1 - 10^{-3}|m|)}

    ``gaps`` are k^2 numbers in [0, 1/2] (the smaller half gap ``min(1 - rho, 1 + rho)/2`` of each pair,
    the argument :func:`popdyn.models.lora.h` evaluates); the factor in m keeps the compiler from hoisting
    the evaluations out of the loop over overlaps. Nothing else is computed, so no kernel form of h that
    evaluates K' once per pair and overlap can be faster.
    """
    out = np.empty(m.size)
    for t in range(m.size):
        acc, f = 0.0, 1.0 - 1e-3 * abs(m[t])
        for p in range(gaps.size):
            acc += math.asin(math.sqrt(gaps[p] * f))
        out[t] = acc
    return out


_N_COLD = 50  # fresh problems timed for the cold predict (a few ms each): the median wall, the mean CPU time


def _cpu_per_call(make, fn, n):
    """Mean CPU time (``time.process_time``: this process, all threads) of ``fn(make())`` over ``n`` fresh
    problems; ``make()`` is not timed. Unlike wall time, other processes on a shared machine barely move it."""
    problems = [make() for _ in range(n)]
    t0 = time.process_time()
    for p in problems:
        fn(p)
    return (time.process_time() - t0) / n


def _bench_predict_vs_simulate(sz):
    seeds = iter(range(10**6))
    make = lambda: lora.Problem.orthonormal(k=sz["k"], xi=1.0, activation="relu", seed=next(seeds))
    kw = {"d": sz["d"], "lr": 0.1 / sz["d"], "steps": sz["steps"]}  # eta = delta/d with delta = 0.1 ([Dayi25, App. C.1])
    # cold: a new Problem each call, so every per-problem table (B0/B1 quadrature, h spline, h on the grid
    # nodes, loss kernels, regime checks) is rebuilt; only the numba JIT and the problem-independent rules are warm
    predict = lambda p: popdyn.predict(p, **kw)
    t_cold, t_warm, _ = _cold_warm(make, predict, _N_COLD)
    cpu_cold = _cpu_per_call(make, predict, _N_COLD)
    t_table, _, _ = _cold_warm(make, lambda p: lora.normalisation._table(p, 2, 0), sz["repeats"])
    simulate = lambda p: popdyn.simulate(p, seeds=1, device="cpu", **kw)  # one torch thread: small steps
    simulate(make())  # torch warm-up
    p = make()
    c0, t0 = time.process_time(), time.perf_counter()
    simulate(p)
    t_sim, cpu_sim = time.perf_counter() - t0, time.process_time() - c0
    return {"what": f"predict (fresh problem, cold caches; B0/B1 table {t_table * 1e3:.2f} ms of it) vs simulate, "
                    f"d={sz['d']}, k={sz['k']}, {sz['steps']} steps, 1 seed; CPU time {cpu_cold * 1e3:.2f} ms vs "
                    f"{cpu_sim:.3g} s = {cpu_sim / cpu_cold:.0f}x",
            "fast_s": t_cold, "fast_warm_s": t_warm, "slow_s": t_sim, "ratio": t_sim / t_cold,
            "ratio_warm": t_sim / t_warm, "goal": GOALS["predict_vs_simulate"], "table_s": t_table,
            "fast_cpu_s": cpu_cold, "slow_cpu_s": cpu_sim, "ratio_cpu": cpu_sim / cpu_cold}


def _bench_lora_b_general(sz):
    """The corrected ODE's B0/B1 table for a general Gram matrix (ReLU, random features, k = 5, cold): exact
    orthant moments vs the RQMC table they replace (2^13 points), with the G = I quadrature table for scale."""
    seeds = iter(range(10**6))
    table = lora.normalisation._table
    make = lambda: lora.Problem.random_features(k=5, xi=1.0, activation="relu", seed=next(seeds))
    t_exact, _, _ = _cold_warm(make, lambda p: table(p, 2, 0), sz["repeats"])
    t_rqmc, _, _ = _cold_warm(make, lambda p: lora.normalisation._moments(p, lora.normalisation._M_TABLE, 1 << 13, 0,
                                                                           [[1.0, 0.0], [0.0, 1.0]]), sz["repeats"])
    eye = lambda: lora.Problem.orthonormal(k=5, xi=1.0, activation="relu", seed=next(seeds))
    t_eye, _, _ = _cold_warm(eye, lambda p: table(p, 2, 0), sz["repeats"])
    return {"what": f"B0/B1 table of the corrected ODE, general Gram, ReLU, k=5, cold: exact orthant moments vs RQMC "
                    f"(2^13 points, ~1 % SE); the G = I quadrature table takes {t_eye * 1e3:.2f} ms",
            "fast_s": t_exact, "slow_s": t_rqmc, "ratio": t_rqmc / t_exact, "goal": GOALS["lora_B_general"],
            "identity_s": t_eye}


def _fresh_tanh():
    """A tanh activation that shares no cache with ``activations.get('tanh')``."""
    ref = activations.get("tanh")
    return activations.Activation.from_callable(np.tanh, deriv=ref.deriv, name="tanh_uncached")


def _bench_hermite(sz):
    P = sz["P"]
    t_pop, t_warm, mu = _cold_warm(_fresh_tanh, lambda a: a.hermite_coeffs(P), sz["repeats"])
    t_quad, mu_q = _median_time(lambda: hermite_quad(math.tanh, P), 1)
    return {"what": f"tanh Hermite coefficients mu_0..mu_{P}, popdyn vs scipy.quad loop",
            "fast_s": t_pop, "fast_warm_s": t_warm, "slow_s": t_quad, "ratio": t_quad / t_pop,
            "goal": GOALS["hermite"], "max_abs_diff": float(np.max(np.abs(np.asarray(mu)[:P + 1] - mu_q)))}


def _bench_h(sz):
    k, n = sz["k_h"], sz["n_m"]
    make = lambda: lora.Problem.random_features(k=k, xi=2.0, activation="relu", seed=0)
    m = np.linspace(-1.0, 1.0, n)
    t_pop, t_warm, h_pop = _cold_warm(make, lambda p: lora.h(p, m), sz["repeats"])
    t_np, h_np = _median_time(lambda: h_numpy(make(), m), sz["repeats"])
    gaps = np.random.default_rng(0).uniform(0.0, 0.5, k * k)  # the smaller half gap of a pair is <= 1/2
    t_floor, _ = _median_time(lambda: kprime_floor(gaps, m), sz["repeats"])
    per = f"{t_pop / n * 1e6:.1f} us/overlap, {t_pop / (n * k * k) * 1e9:.1f} ns/pair"
    floor = f"{t_floor / (n * k * k) * 1e9:.1f} ns/pair"
    return {"h_kernel": {"what": f"h(m) on {n} overlaps, k={k}, general Gram, ReLU: lora.h ({per}) vs plain numpy",
                         "fast_s": t_pop, "fast_warm_s": t_warm, "slow_s": t_np, "ratio": t_np / t_pop,
                         "goal": GOALS["h_kernel"], "max_abs_diff": float(np.max(np.abs(h_pop - h_np)))},
            "h_kernel_floor": {"what": f"h(m) on {n} overlaps, k={k}, general Gram, ReLU: lora.h ({per}) vs its limit, "
                                       f"k^2 = {k * k} sqrt+arcsin per overlap ({floor})",
                               "fast_s": t_pop, "fast_warm_s": t_warm, "slow_s": t_floor, "ratio": t_floor / t_pop,
                               "goal": GOALS["h_kernel_floor"]}}


def _bench_icl(sz):
    from .claims.icl import bench_icl
    r = bench_icl(target=sz["icl_target"])
    return {"what": f"ICL rank-r optimum: closed form vs Adam training to {sz['icl_target']:g} relative error "
                    f"({r['steps']} steps)", "fast_s": r["closed_form_s"], "slow_s": r["training_s"],
            "ratio": r["training_s"] / r["closed_form_s"], "goal": GOALS["icl_optimum"]}


def _bench_looped(sz):
    from .claims.looped import bench_looped
    prompts, T = sz["looped"]
    r = bench_looped(prompts=prompts, T=T)
    return {"what": f"looped TF error curves, {T} loops on {prompts} prompts: eigen-formula vs torch loop",
            "fast_s": r["exact_s"], "slow_s": r["torch_s"], "ratio": r["ratio"], "goal": GOALS["looped_error"],
            "max_abs_diff": r["max_abs_gap"]}


def _bench_modular(sz):
    from .claims.modular import bench_modular
    r = bench_modular(sizes=sz["modular"], repeats=1)[-1]
    return {"what": f"modular margin over all {r['inputs']} inputs, (p, k, width) = ({r['p']}, {r['k']}, "
                    f"{r['width']}): numba vs numpy (peak {r['numba_peak_mib']:.1f} vs {r['numpy_peak_mib']:.0f} MiB)",
            "fast_s": r["numba_s"], "slow_s": r["numpy_s"], "ratio": r["ratio"], "goal": GOALS["modular_margin"],
            "max_abs_diff": r["rel_diff"]}


def _bench_multitask(sz):
    from .claims.multitask import bench_multitask
    r = bench_multitask(n_train=sz["multitask_n_train"])
    return {"multitask_moments": {"what": "multitask sign-conditioned moments, (r, d, m) = (6, 300, 64): numba "
                                          "prefix/suffix kernel vs the same quadrature in vectorised numpy",
                                  "fast_s": r["moments_numba_s"], "slow_s": r["moments_numpy_s"],
                                  "ratio": r["numba_speedup"], "goal": GOALS["multitask_moments"],
                                  "max_abs_diff": r["max_abs_diff"]},
            "multitask_predict": {"what": f"multitask one-step map (E1: r=2, d=20, m=16): predict vs simulate at "
                                          f"n = {r['n_train']} (median per-neuron error {r['median_rel_err']:.1%})",
                                  "fast_s": r["predict_s"], "slow_s": r["simulate_s"],
                                  "ratio": r["simulate_over_predict"], "goal": GOALS["multitask_predict"]}}


def _bench_emergence(sz):
    """Fourier correlations of 2m neurons at D = 100 (numba, parallel over neurons) vs the same sums in vectorised
    numpy; the exact population steps 1-2 vs the same two steps on n samples in torch (one seed)."""
    from popdyn.models import emergence as em
    from popdyn.models.emergence.correlations import _fourier_numpy
    from popdyn.sim.emergence import train
    m, n = sz["emergence"]["width"], sz["emergence"]["n_train"]
    model = em.parity_mixture(100, 5, 0.5)
    s = 5 ** -1.5
    em.neuron_correlations(model, em.symmetric_init(model, 2, 99).Q, em.symmetric_init(model, 2, 99).b, s)  # JIT
    p0 = em.symmetric_init(model, m, 0)
    t0 = time.perf_counter()
    fast = em.neuron_correlations(model, p0.Q, p0.b, s)
    t_nb = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = _fourier_numpy(model, p0.Q, p0.b, s)
    t_np = time.perf_counter() - t0
    diff = float(np.max(np.abs(np.asarray(fast.T) - np.asarray(slow.T))))
    sched = em.theory_schedule(model, m, 3)
    t0 = time.perf_counter()
    em.population_two_steps(model, em.symmetric_init(model, m, 1), sched)
    t_pop = time.perf_counter() - t0
    train(model, width=m, schedule=sched, steps=2, n_train=n, seeds=1, seed=1, n_test=1000)      # torch warm-up
    t0 = time.perf_counter()
    train(model, width=m, schedule=sched, steps=2, n_train=n, seeds=1, seed=2, n_test=1000)
    t_sim = time.perf_counter() - t0
    return {"emergence_kernel": {"what": f"emergence correlations of {2 * m} neurons, D = 100, k = 5: numba kernel vs "
                                         "the same Fourier sums in vectorised numpy", "fast_s": t_nb, "slow_s": t_np,
                                 "ratio": t_np / t_nb, "goal": GOALS["emergence_kernel"], "max_abs_diff": diff},
            "emergence_steps": {"what": f"emergence steps 1-2, {2 * m} neurons: exact population steps vs torch on "
                                        f"n_train = {n} samples (one seed)", "fast_s": t_pop, "slow_s": t_sim,
                                "ratio": t_sim / t_pop, "goal": GOALS["emergence_steps"]}}


def _bench_gradient_features(sz):
    """Gradient-feature learning: the closed-form simplified gradient G of the XOR mixture for many neurons vs its
    Monte Carlo estimate (at a far lower accuracy: the ratio is a lower bound at equal accuracy); the structured-parity
    Monte Carlo G, numba kernel over the active (neuron, sample) pairs vs BLAS products (same random stream)."""
    from popdyn.models import gradient_features as gf
    M, d, n_mc, n_par = (sz["gf"][key] for key in ("neurons", "d", "mc", "parity_n"))
    rng = np.random.default_rng(0)
    xor = gf.xor_mixture(d, 1.0)
    W, b = rng.standard_normal((M, d)), np.full(M, math.sqrt(2.0 * d))
    t0 = time.perf_counter()
    G = xor.simplified_gradient(W, b)
    t_cf = time.perf_counter() - t0
    t0 = time.perf_counter()
    G_mc, _ = xor.simplified_gradient_mc(W, b, n_mc, np.random.default_rng(1))
    t_mc = time.perf_counter() - t0
    rel = float(np.median(np.linalg.norm(G_mc - G, axis=1) / np.linalg.norm(G, axis=1)))
    par = gf.StructuredParity(1000, 3, 15, 0.05, 45 / 955)
    Wp, bp = rng.standard_normal((1024, 1000)), np.full(1024, math.sqrt(45 * math.log(1000)))
    par.simplified_gradient_mc(Wp[:8], bp[:8], 64, np.random.default_rng(2), method="numba")         # JIT
    times, out = {}, {}
    for method in ("numba", "numpy"):
        t0 = time.perf_counter()
        out[method] = par.simplified_gradient_mc(Wp, bp, n_par, np.random.default_rng(3), method=method)[0]
        times[method] = time.perf_counter() - t0
    u, n_risk = rng.standard_normal(d), sz["gf"]["risk_mc"]
    u /= np.linalg.norm(u)                                                 # unit direction: outputs of order 1
    a1, W1, b1 = rng.standard_normal(16), np.outer(rng.standard_normal(16), u), rng.standard_normal(16)
    gf.population_risk(xor, a1[:2], W1[:2], b1[:2], "hinge", method="exact")                              # JIT
    t0 = time.perf_counter()
    exact = gf.population_risk(xor, a1, W1, b1, "hinge", method="exact")
    t_ex = time.perf_counter() - t0
    t0 = time.perf_counter()
    mc = gf.population_risk(xor, a1, W1, b1, "hinge", method="mc", n=n_risk, seed=4)
    t_rmc = time.perf_counter() - t0
    return {"gf_risk": {"what": f"gradient features: hinge risk of a rank-1 network (16 neurons, XOR mixture, d = {d}), "
                                f"exact (bound {exact.bound:.0e}) vs Monte Carlo on {n_risk} samples (se {mc.se:.1e}, "
                                f"|z| = {abs(mc.value - exact.value) / mc.se:.2f})", "fast_s": t_ex, "slow_s": t_rmc,
                        "ratio": t_rmc / t_ex, "goal": GOALS["gf_risk"]},
            "gf_mixture_G": {"what": f"gradient features: XOR-mixture G for {M} neurons at d = {d}, closed form vs "
                                     f"Monte Carlo on {n_mc} samples (median relative error {rel:.1%}; the closed "
                                     f"form is exact to ~1e-13)", "fast_s": t_cf, "slow_s": t_mc, "ratio": t_mc / t_cf,
                             "goal": GOALS["gf_mixture_G"]},
            "gf_parity_mc": {"what": f"gradient features: structured-parity Monte Carlo G (1024 neurons, d = 1000, "
                                     f"n = {n_par}), numba active-pair kernel vs numpy BLAS", "fast_s": times["numba"],
                             "slow_s": times["numpy"], "ratio": times["numpy"] / times["numba"],
                             "goal": GOALS["gf_parity_mc"],
                             "max_abs_diff": float(np.max(np.abs(out["numba"] - out["numpy"])))}}


def _bench_resnet(sz):
    """ResNet vs kernels: the exact KRR test error (Parseval through the level eigenvalues) vs its Monte Carlo estimate
    over test points (at a far lower accuracy: the ratio is a lower bound at equal accuracy), for a given fit; the
    numba bit-packed Hamming matrix vs the same distances from a BLAS product in numpy."""
    from popdyn.models import resnet
    d, N, n_mc, n_h = (sz["resnet"][key] for key in ("d", "n_train", "mc", "hamming_N"))
    p = resnet.Problem.thm2(d=d, k=4, alpha=0.3, n_train=N)
    X, target = p.X, p.target
    beta = resnet.krr_fit(p.kappa, X, target(X), p.ridge)
    resnet.exact_test_error(p.kappa, X[:4], beta[:4], target.walsh())                        # JIT only (no table cache)
    t0 = time.perf_counter()
    exact = resnet.exact_test_error(p.kappa, X, beta, target.walsh())
    t_exact = time.perf_counter() - t0
    rng = np.random.default_rng(5)
    t0 = time.perf_counter()
    err = np.zeros(p.k)
    for i in range(0, n_mc, 5000):
        Xt = rng.choice([-1.0, 1.0], size=(min(5000, n_mc - i), d))
        err += ((target(Xt) - resnet.kernel_matrix(p.kappa, Xt, X) @ beta) ** 2).sum(0)
    t_mc = time.perf_counter() - t0
    rel = float(np.max(np.abs(err / n_mc - exact) / exact))
    Xh = np.random.default_rng(6).choice([-1.0, 1.0], size=(n_h, 64))
    resnet.hamming_matrix(Xh[:8])                                                             # JIT
    t0 = time.perf_counter()
    H = resnet.hamming_matrix(Xh)
    t_nb = time.perf_counter() - t0
    t0 = time.perf_counter()
    H_np = np.rint((64 - Xh @ Xh.T) / 2).astype(H.dtype)
    t_np = time.perf_counter() - t0
    return {"resnet_exact_error": {"what": f"resnet: exact KRR test error (Theorem 2 target, d = {d}, N = {N}, ReLU "
                                           f"NTK) vs Monte Carlo over {n_mc} test points (max relative gap "
                                           f"{rel:.1e}; the exact error has no sampling error)",
                                   "fast_s": t_exact, "slow_s": t_mc, "ratio": t_mc / t_exact,
                                   "goal": GOALS["resnet_exact_error"]},
            "resnet_hamming": {"what": f"resnet: Hamming matrix of {n_h} points in d = 64, numba bit-packed popcount vs "
                                       f"numpy BLAS", "fast_s": t_nb, "slow_s": t_np, "ratio": t_np / t_nb,
                               "goal": GOALS["resnet_hamming"], "max_abs_diff": float(np.abs(H - H_np).max())}}


def _bench_contrastive(sz):
    """Contrastive pre-training: the population optimum (convex program in T + 1 scalars) vs projected SGD reaching
    the same column norms (its remaining relative error is reported); the exact general-W loss vs Monte Carlo."""
    from .claims.contrastive import bench_contrastive, bench_contrastive_loss_W
    out = bench_contrastive(steps=sz["contrastive_steps"])
    w = bench_contrastive_loss_W(repeats=sz["repeats"])
    return {"contrastive_optimum": {
                "what": f"contrastive: population optimal representation (T = 3, s = 2, r = 4) vs projected SGD on "
                        f"{sz['contrastive_steps']} x 512 pairs (SGD still {out['max_rel_error']:.2%} off)",
                "fast_s": out["theory_s"], "slow_s": out["simulation_s"], "ratio": out["ratio"],
                "goal": GOALS["contrastive_optimum"]},
            "contrastive_loss_W": {
                "what": f"contrastive: exact logistic loss of a general W (T = 3, d = 14, negative eigenvalues; "
                        f"saddle-line integral, 1e-10) vs Monte Carlo on 1e5 pairs per task ({w['mc_rel_se']:.1e} "
                        f"relative SE); the two-cluster Laguerre rule it replaces took {w['laguerre_s']:.2g} s "
                        f"on the optimal W",
                "fast_s": w["exact_s"], "slow_s": w["mc_s"], "ratio": w["mc_s"] / w["exact_s"],
                "goal": GOALS["contrastive_loss_W"], "max_abs_diff": w["abs_diff"]}}


def _bench_domain_gen(sz):
    """Domain generalisation: the exact OOD accuracy (contour integral) vs Monte Carlo to the same relative accuracy
    (extrapolated from the binomial SE), and the population ERM-l2 optimum vs finite-sample GD."""
    from .claims.domain_gen import bench_domain_gen
    out = bench_domain_gen()
    return {"dg_accuracy": {"what": "domain_gen: exact OOD accuracy vs Monte Carlo to 1e-12 relative accuracy "
                                    "(extrapolated from the per-sample cost)", "fast_s": out["exact_accuracy_s"],
                            "slow_s": out["mc_to_1e-12_s"], "ratio": out["mc_to_1e-12_s"] / out["exact_accuracy_s"],
                            "goal": GOALS["dg_accuracy"]},
            "dg_optimum": {"what": "domain_gen: population ERM-l2 optimum vs finite-sample GD (n = 4096, 1500 steps, "
                                   "0.4 % from it)", "fast_s": out["population_optimum_s"],
                           "slow_s": out["gd_n4096_1500_steps_s"],
                           "ratio": out["gd_n4096_1500_steps_s"] / out["population_optimum_s"],
                           "goal": GOALS["dg_optimum"]}}


def _saad_solla_plain(Q0, R0, eta, t):
    """The Saad-Solla erf equations (K = M = 2, T = I, v = v* = 1) element by element in plain numpy/scipy: the form
    of public implementations (StatPhys-ML's OnlineCommitteeEquations), the baseline of the committee benchmark."""
    from scipy.integrate import solve_ivp
    K, M = Q0.shape[0], R0.shape[1]
    u, P = [1.0] * K + [-1.0] * M, K + M

    def I3(C):
        l3 = (1 + C[0][0]) * (1 + C[2][2]) - C[0][2] ** 2
        return 2 / np.pi / np.sqrt(l3) * (C[1][2] * (1 + C[0][0]) - C[0][1] * C[0][2]) / (1 + C[0][0])

    def I4(C):
        l4 = (1 + C[0][0]) * (1 + C[1][1]) - C[0][1] ** 2
        l0 = (l4 * C[2][3] - C[1][2] * C[1][3] * (1 + C[0][0]) - C[0][2] * C[0][3] * (1 + C[1][1])
              + C[0][1] * C[0][2] * C[1][3] + C[0][1] * C[0][3] * C[1][2])
        l1 = l4 * (1 + C[2][2]) - C[1][2] ** 2 * (1 + C[0][0]) - C[0][2] ** 2 * (1 + C[1][1]) + 2 * C[0][1] * C[0][2] * C[1][2]
        l2 = l4 * (1 + C[3][3]) - C[1][3] ** 2 * (1 + C[0][0]) - C[0][3] ** 2 * (1 + C[1][1]) + 2 * C[0][1] * C[0][3] * C[1][3]
        return 4 / np.pi ** 2 / np.sqrt(l4) * np.arcsin(l0 / np.sqrt(l1 * l2))

    def f(_, y):
        Q, R = y[:K * K].reshape(K, K), y[K * K:].reshape(K, M)
        Om = np.block([[Q, R], [R.T, np.eye(M)]])
        sub = lambda idx: [[Om[a][b] for b in idx] for a in idx]
        dQ, dR = np.zeros((K, K)), np.zeros((K, M))
        for k in range(K):
            for n in range(M):
                dR[k, n] = -eta * sum(u[j] * I3(sub([k, K + n, j])) for j in range(P))
            for l in range(K):
                dQ[k, l] = (-eta * sum(u[j] * (I3(sub([k, l, j])) + I3(sub([l, k, j]))) for j in range(P))
                            + eta ** 2 * sum(u[i] * u[j] * I4(sub([k, l, i, j])) for i in range(P) for j in range(P)))
        return np.concatenate([dQ.ravel(), dR.ravel()])

    return solve_ivp(f, (t[0], t[-1]), np.concatenate([Q0.ravel(), R0.ravel()]), t_eval=t, rtol=1e-10, atol=1e-12,
                     method="DOP853")


def _bench_committee(sz):
    """Committee machine: popdyn's erf overlap ODE (numba kernel) on a fresh problem (cold caches, JIT warm) vs the
    same Saad-Solla equations element by element in plain scipy, K = M = 2, eta = 0.5, to the same tolerances (max
    difference reported)."""
    from popdyn.models import committee as cm
    p = cm.Problem.saad_solla(K=2, M=2)
    Q0, R0 = cm.initial_overlaps(p, 1000, seed=0)
    t = np.linspace(0.0, sz["committee_t"], 101)
    cm.ode(cm.Problem.saad_solla(K=2, M=2), Q0, R0, t=t[:3] * 1e-3, lr=0.5)       # JIT only (a throwaway problem)
    p = cm.Problem.saad_solla(K=2, M=2)                                            # fresh: cold plan cache
    t0 = time.perf_counter()
    pr = cm.ode(p, Q0, R0, t=t, lr=0.5)
    t_pd = time.perf_counter() - t0
    t0 = time.perf_counter()
    plain = _saad_solla_plain(Q0, R0, 0.5, t)
    t_pl = time.perf_counter() - t0
    diff = max(float(np.abs(plain.y[:4].T.reshape(-1, 2, 2) - pr["Q"]).max()),
               float(np.abs(plain.y[4:].T.reshape(-1, 2, 2) - pr["R"]).max()))
    return {"what": f"committee: erf overlap ODE (K = M = 2, lr = 0.5, t = {sz['committee_t']:g}), popdyn vs the same "
                    f"equations element by element in scipy (max diff {diff:.1e})", "fast_s": t_pd, "slow_s": t_pl,
            "ratio": t_pl / t_pd, "goal": GOALS["committee_erf_ode"], "max_abs_diff": diff}


def _bench_committee_quadrature(sz):
    """Committee machine, activations without a closed I4: the ReLU and the tanh overlap ODE (K = M = 2, eta = 0.5,
    default tolerances) on a fresh problem (cold plan cache, JIT warm) vs the online SGD at d = 1000 it predicts (one
    seed, float64, CPU), to the same t; measured in one run. The ODE starts from the SGD's initial overlaps; the
    sup relative eg gap between the two is reported (a finite-d fluctuation of O(1/sqrt d), not an error)."""
    from popdyn.models import committee as cm
    d, t_max = 1000, sz["committee_t"]
    rows = {}
    for act in ("relu", "tanh"):
        throwaway = cm.Problem(2, 2, act)
        sim = popdyn.simulate(throwaway, d=d, steps=200, lr=0.5, seeds=1, n_points=3)       # torch warm-up
        cm.ode(throwaway, sim["Q"][0, 0], sim["R"][0, 0], t=np.linspace(0.0, 0.01, 3), lr=0.5)   # JIT only
        p = cm.Problem(2, 2, act)
        t0 = time.perf_counter()
        sim = popdyn.simulate(p, d=d, steps=int(t_max * d), lr=0.5, seeds=1, n_points=101)
        t_sim = time.perf_counter() - t0
        p = cm.Problem(2, 2, act)                                                            # fresh: cold plan cache
        t0 = time.perf_counter()
        pr = cm.ode(p, sim["Q"][0, 0], sim["R"][0, 0], t=sim.t / d, lr=0.5)
        t_ode = time.perf_counter() - t0
        gap = float(np.max(np.abs(sim["eg"][0] / pr["eg"] - 1)))
        rows[f"committee_{act}_ode"] = {
            "what": f"committee: {act} overlap ODE (K = M = 2, lr = 0.5, t = {t_max:g}, {pr.meta['method']} rtol "
                    f"{pr.meta['rtol']:g}, {pr.meta['nfev']} drift evaluations) vs the online SGD at d = {d} it "
                    f"predicts (1 seed; sup relative eg gap {gap:.3f})",
            "fast_s": t_ode, "slow_s": t_sim, "ratio": t_sim / t_ode, "goal": GOALS[f"committee_{act}_ode"],
            "sup_rel_gap_eg": gap}
    return rows


def sweep_unit(d, tau, seed):
    """One LoRA online-SGD run (k = 8 ReLU, delta = 0.2, one seed): the unit of the sweep benchmark."""
    problem = lora.Problem.orthonormal(k=8, xi=1.0, activation="relu", seed=0)
    sim = popdyn.simulate(problem, d=d, lr=0.2 / d, steps=int(tau * d), seeds=1, seed=seed, n_points=20)
    return {"m_end": float(sim["m"][0, -1])}


def _bench_sweeps(sz):
    """The same sweep of LoRA simulations inline, on a 2-process pool and on a 2-worker local Dask cluster."""
    from concurrent.futures import ProcessPoolExecutor
    cfg = sz["sweep"]
    grid = {"d": [cfg["d"]], "tau": [cfg["tau"]]}
    go = lambda ex: popdyn.sweep(sweep_unit, grid, seeds=cfg["runs"], executor=ex, progress=False)
    go(None)  # JIT and torch warm-up in this process
    t0 = time.perf_counter()
    inline = go(None)
    t_inline = time.perf_counter() - t0
    with ProcessPoolExecutor(2) as pool:
        t0 = time.perf_counter()
        pooled = go(pool)
        t_pool = time.perf_counter() - t0
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cl, Client(cl) as client:
        go(client)  # worker start-up and imports are not the per-task overhead
        t0 = time.perf_counter()
        dasked = go(client)
        t_dask = time.perf_counter() - t0
    same = inline.column("m_end").tolist() == pooled.column("m_end").tolist() == dasked.column("m_end").tolist()
    n, per = cfg["runs"], t_inline / cfg["runs"]
    what = f"{n} LoRA simulations (d={cfg['d']}, tau={cfg['tau']}) inline vs"
    return {"sweep_pool": {"what": f"{what} a 2-process pool (same numbers: {same})", "fast_s": t_pool,
                           "slow_s": t_inline, "ratio": t_inline / t_pool, "goal": GOALS["sweep_pool"]},
            "sweep_dask": {"what": f"{what} 2 Dask workers (same numbers: {same}; overhead "
                                   f"{(t_dask - 0.5 * t_inline) / n * 1e3:.0f} ms/task over ideal 2x)",
                           "fast_s": t_dask, "slow_s": t_inline, "ratio": t_inline / t_dask, "goal": GOALS["sweep_dask"],
                           "overhead_per_task_s": (t_dask - 0.5 * t_inline) / n, "inline_per_task_s": per}}


def _bench_kernels(sz):
    """The exact population test error of KRR with a depth-2 ReLU NTK on {±1}^d (Parseval over the Walsh levels,
    ``KernelRegression.test_error``; fresh fit) against brute force: the predictor on all 2^d points, in chunks."""
    from popdyn import kernels
    from popdyn.models.kernels import KernelRegression, WalshTarget
    from popdyn.models.resnet import hamming_matrix
    net, out = kernels.fc(2, "relu", b_std=0.1), {}
    for d in (6,) + tuple(sz["cube"]):  # d = 6: JIT warm-up, not reported
        f = WalshTarget(d, {(0, 1): 1.0, (2,): 0.5})
        rng = np.random.default_rng(d)
        X = rng.choice([-1.0, 1.0], size=(1000, d))
        t0 = time.perf_counter()
        krr = KernelRegression(net, X, f(X), 1e-3)
        exact = krr.test_error(f)
        t_exact = time.perf_counter() - t0
        t0 = time.perf_counter()
        sq, n = 0.0, 1 << d
        for lo in range(0, n, 1 << 14):
            codes = np.arange(lo, min(n, lo + (1 << 14)))
            Z = 1.0 - 2.0 * ((codes[:, None] >> np.arange(d)) & 1)
            pred = krr.kappa[hamming_matrix(Z, X)] @ krr.beta
            sq += float(np.sum((pred - f(Z)) ** 2))
        t_brute = time.perf_counter() - t0
        out[d] = (t_exact, t_brute, abs(exact - sq / n) / (sq / n))
    del out[6]
    worst = max(out.values(), key=lambda v: v[1])
    return {"what": "kernels: exact KRR test error on {±1}^d (depth-2 ReLU NTK, N = 1000; fresh fit) vs the predictor "
                    "summed over all 2^d points, d = " + ", ".join(
                        f"{d}: {te:.3g} s vs {tb:.3g} s (rel. diff {r:.1e})" for d, (te, tb, r) in out.items()),
            "fast_s": worst[0], "slow_s": worst[1], "ratio": worst[1] / worst[0], "goal": GOALS["kernels_exact_error"],
            "max_abs_diff": max(v[2] for v in out.values())}


def _bench_validate(sz):
    """``validate --quick`` serially and with ``--jobs 2`` (in subprocesses: what a user runs)."""
    import subprocess
    import tempfile
    names = list(sz["validate"])
    times = {}
    for jobs in (1, 2):
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "validation", *names, "--quick", "--out", out, "--jobs", str(jobs)],
                           capture_output=True, check=False)
            times[jobs] = time.perf_counter() - t0
    return {"what": f"validate --quick {' '.join(names) or '(all claims)'}: serial vs --jobs 2",
            "fast_s": times[2], "slow_s": times[1], "ratio": times[1] / times[2], "goal": GOALS["validate_jobs"]}


_FIRST_CALL = """
import json, sys, time
t0 = time.perf_counter()
import popdyn
from popdyn.models import catalogue
t1 = time.perf_counter()
cls = next(e.cls for e in catalogue() if e.name == sys.argv[1])
ex = cls.example()
problem, options = ex if isinstance(ex, tuple) else (ex, {})
t2 = time.perf_counter()
popdyn.predict(problem, **options)
t3 = time.perf_counter()
popdyn.predict(problem, **options)
print(json.dumps({"import": t1 - t0, "first": t3 - t2, "second": time.perf_counter() - t3}))
"""


def _fresh_process(name, cache):
    """Import time, first and second ``predict`` of ``name``'s example in a new interpreter with numba cache
    ``cache`` (a new empty folder: the compile a new install pays)."""
    import os
    import subprocess
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", _FIRST_CALL, name], env=env, capture_output=True, text=True,
                         check=True, cwd=str(cache))
    return json.loads(out.stdout.strip().splitlines()[-1])


def _quick_from_records():
    """Quick validation time from the stored records: the serial total, the wall time on 2 processes by
    longest-first scheduling (what ``--jobs 2`` does with these times) and the slowest claim."""
    from .records import load
    times = {i: r["quick"].get("elapsed_s") for i, r in load().items() if r.get("quick", {}).get("elapsed_s")}
    loads = [0.0, 0.0]
    for t in sorted(times.values(), reverse=True):
        loads[loads.index(min(loads))] += t
    slowest = max(times, key=times.get)
    return {"claims": len(times), "serial_s": sum(times.values()), "jobs2_s": max(loads), "slowest": slowest,
            "slowest_s": times[slowest]}


def startup():
    """Start-up times (seconds) with their goals (:data:`STARTUP_GOALS`): see the module docstring, item 6."""
    import tempfile
    from popdyn.models import catalogue
    rows = {}
    for e in catalogue():
        with tempfile.TemporaryDirectory() as cache:
            r = _fresh_process(e.name, cache)
        rows[e.name] = {"first_s": r["first"], "second_s": r["second"], "import_s": r["import"]}
    q = _quick_from_records()
    imports = sorted(r["import_s"] for r in rows.values())
    return {"import_s": imports[len(imports) // 2], "first_call": rows, "validate_quick": q}


def _startup_table(st):
    g = STARTUP_GOALS
    met = lambda v, goal: f"{goal:g} s ({'met' if v <= goal else 'short'})"
    q = st["validate_quick"]
    lines = ["| start-up | seconds | goal |", "|---|---|---|",
             f"| import popdyn (fresh interpreter, median over the processes) | {st['import_s']:.3g} | "
             f"{met(st['import_s'], g['import'])} |"]
    for name, r in st["first_call"].items():
        lines.append(f"| first predict of {name}.example(), empty numba cache (second call {r['second_s']:.3g} s) | "
                     f"{r['first_s']:.3g} | {met(r['first_s'], g['first_call'])} |")
    lines += [f"| validate --quick, {q['claims']} claims, --jobs 2 (from the stored records; serial "
              f"{q['serial_s']:.0f} s) | {q['jobs2_s']:.0f} | {met(q['jobs2_s'], g['validate_quick_jobs2'])} |",
              f"| slowest quick claim, {q['slowest']} (from the stored records) | {q['slowest_s']:.0f} | "
              f"{met(q['slowest_s'], g['slowest_quick_claim'])} |"]
    return "\n".join(lines)


def run(quick=False):
    """Run every measurement; returns the report dict (also what ``main`` saves)."""
    sz = SIZES["quick" if quick else "full"]
    rows = {}
    for name, fn in (("hermite", _bench_hermite), ("h_kernel,h_kernel_floor", _bench_h),
                     ("predict_vs_simulate", _bench_predict_vs_simulate), ("icl_optimum", _bench_icl),
                     ("looped_error", _bench_looped), ("modular_margin", _bench_modular),
                     ("multitask_moments,multitask_predict", _bench_multitask),
                     ("emergence_kernel,emergence_steps", _bench_emergence),
                     ("gf_risk,gf_mixture_G,gf_parity_mc", _bench_gradient_features),
                     ("resnet_exact_error,resnet_hamming", _bench_resnet),
                     ("contrastive_optimum,contrastive_loss_W", _bench_contrastive),
                     ("dg_accuracy,dg_optimum", _bench_domain_gen),
                     ("committee_erf_ode", _bench_committee),
                     ("committee_relu_ode,committee_tanh_ode", _bench_committee_quadrature),
                     ("kernels_exact_error", _bench_kernels), ("lora_B_general", _bench_lora_b_general),
                     ("sweep_pool,sweep_dask", _bench_sweeps),
                     ("validate_jobs", _bench_validate)):
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        try:
            out = fn(sz)
            rows.update(out if "," in name else {name: out})
        except Exception as e:  # a missing piece is reported in the table, the others still run
            rows.update({n: {"what": n, "error": f"{type(e).__name__}: {e}", "goal": GOALS[n]} for n in name.split(",")})
    print("bench: start-up ...", file=sys.stderr, flush=True)
    return {"quick": quick, "sizes": sz, "results": rows, "startup": startup(), "popdyn": popdyn.__version__,
            "numpy": np.__version__, "python": platform.python_version(), "machine": platform.machine()}


def _table(report):
    lines = ["| benchmark | popdyn, cold (s) | popdyn, warm cache (s) | baseline (s) | ratio (cold) | goal | max diff |",
             "|---|---|---|---|---|---|---|"]
    for name, r in report["results"].items():
        if "error" in r:
            lines.append(f"| {name} | - | - | - | - | {r['goal']:g}x | {r['error']} |")
            continue
        met = "met" if r["ratio"] >= r["goal"] else "short"
        diff = f"{r['max_abs_diff']:.2e}" if "max_abs_diff" in r else "-"
        warm = f"{r['fast_warm_s']:.4g}" if "fast_warm_s" in r else "= cold (no cache)"
        lines.append(f"| {r['what']} | {r['fast_s']:.4g} | {warm} | {r['slow_s']:.4g} | {r['ratio']:.4g}x "
                     f"| {r['goal']:g}x ({met}) | {diff} |")
    return "\n".join(lines)


def main(argv=None):
    """Command line: ``python -m popdyn.validation.bench [--quick] [--out PATH]``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="popdyn bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run, not the goals)")
    parser.add_argument("--out", type=Path, default=REPORT, help="where to write bench.json")
    args = parser.parse_args(argv)
    report = run(quick=args.quick)
    print(_table(report))
    print()
    print(_startup_table(report["startup"]))
    atomic_write(args.out, lambda f: f.write(json.dumps(report, indent=1).encode()))
    print(args.out)
    return 1 if any("error" in r for r in report["results"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
