"""ResNet vs kernels ([AllenZhu19]): the finite-sample twin of the exact kernel test error (:class:`resnet.Problem`)."""
from __future__ import annotations

import time

import numpy as np

from ...models.resnet.hypercube import kernel_matrix, krr_fit
from ...results import Simulation
from .._torch import progress as progress_bar

__all__ = ["simulate"]


def simulate(problem, *, n_test, chunk, seeds, seed, device, progress):
    r"""Monte Carlo test error of the problem's KRR predictor: ``seeds`` independent sets of ``n_test`` uniform points.

    .. math:: \widehat{\mathrm{err}}_i = \frac1n\sum_{x}\big(\mathcal H_i(x)-\mathfrak K_i(x)\big)^2,\qquad
              \hat c_{S} = \frac1n\sum_x\mathfrak K_i(x)\chi_S(x)

    Parameters
    ----------
    problem : resnet.Problem
    n_test : int
        Test points per seed, ``>= 2``.
    chunk : int
        Test points per block (memory ``chunk x n_train``).
    seeds : int
        Independent test sets, ``>= 1``.
    seed : int
        Seed of the first test set (seed s + i draws set i; the training set and the fit are the problem's).
    device : str
        Accepted for the common interface; the evaluation is numpy on the CPU (BLAS-bound), on any device.
    progress : bool
        A bar over the seeds.

    Returns
    -------
    Simulation
        Static; ``test_error`` (seeds, k), ``captured_F`` (seeds, k) (coefficient of output i on ``{S_i}``),
        ``captured_G`` (seeds, k) (on ``S``).

    Notes
    -----
    Regime: any problem; the Monte Carlo error of each entry is O(n_test^-1/2), so it checks the exact Parseval error
    of ``predict`` independently.

    References
    ----------
    .. [src] [AllenZhu19, Section 3, Section 7]; the exact test error derived in docs/resnet.md.

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models.resnet import Problem
    >>> sim = popdyn.simulate(Problem(d=10, k=2, n_train=50), n_test=2000, seeds=2)
    >>> sim["test_error"].shape
    (2, 2)
    """
    start = time.perf_counter()
    X, target = problem.X, problem.target
    beta = krr_fit(problem.kappa, X, target(X), problem.ridge)
    S_i = np.array([target.F_sets[i][0] for i in range(problem.k)])
    S = list(target.GF_sets[0])
    err, cF, cG = (np.zeros((seeds, problem.k)) for _ in range(3))
    bar = progress_bar(seeds, progress, "resnet kernel regression", unit="seed")
    for s in range(seeds):
        rng = np.random.default_rng([seed + s, 2])
        done = 0
        while done < n_test:
            n = min(chunk, n_test - done)
            Xt = rng.choice([-1.0, 1.0], size=(n, problem.d))
            pred = kernel_matrix(problem.kappa, Xt, X) @ beta
            err[s] += ((target(Xt) - pred) ** 2).sum(0)
            cF[s] += (pred * Xt[:, S_i]).sum(0)
            cG[s] += (pred * Xt[:, S].prod(1)[:, None]).sum(0)
            done += n
        bar.update(1)
    bar.close()
    obs = {"test_error": err / n_test, "captured_F": cF / n_test, "captured_G": cG / n_test}
    meta = {"backend": "numpy", "wall_time_s": time.perf_counter() - start, "method": "monte_carlo"}
    return Simulation(t=None, observables=obs, status=0, message="", meta=meta)
