"""ResNet vs kernels (seed 004): finite-sample twin of the exact kernel test error.

Public names
------------
simulate
    ``popdyn.simulate`` for :class:`popdyn.models.resnet.Problem`: the fitted KRR predictor evaluated on fresh
    uniform test points (Monte Carlo over x), with ``predict``'s observable names.

The networks of the paper (the three-layer ResNet, the fully connected nets, Algorithm 1 and the minibatch protocol,
the finite-width empirical NTK and conjugate kernel) are in :mod:`popdyn.sim.resnet_nets`.
"""
from __future__ import annotations

import time

import numpy as np

from .._validate import InvalidParameterError, as_int
from ..api import simulate as _api_simulate
from ..models.resnet.hypercube import kernel_matrix, krr_fit
from ..models.resnet.problem import Problem
from ..results import Simulation

__all__ = ["simulate"]


@_api_simulate.register(Problem)
def simulate(problem, *, test=20_000, seeds=4, seed=0, chunk=4096, device="cpu"):
    r"""Monte Carlo test error of the problem's KRR predictor: ``seeds`` independent sets of ``test`` uniform points.

    .. math:: \widehat{\mathrm{err}}_i = \frac1n\sum_{x}\big(\mathcal H_i(x)-\mathfrak K_i(x)\big)^2,\qquad
              \hat c_{S} = \frac1n\sum_x\mathfrak K_i(x)\chi_S(x)

    Parameters
    ----------
    problem : resnet.Problem
    test : int
        Test points per seed, ``>= 2``.
    seeds : int
        Independent test sets, ``>= 1``.
    seed : int
        Seed of the test points (the training set and the fit are the problem's).
    chunk : int
        Test points per block (memory ``chunk x N``).
    device : str
        Accepted for the common interface; the evaluation is numpy on the CPU (BLAS-bound), on any device.

    Returns
    -------
    Simulation
        Static; ``test_error`` (seeds, k), ``captured_F`` (seeds, k) (coefficient of output i on ``{S_i}``),
        ``captured_G`` (seeds, k) (on ``S``).

    Notes
    -----
    Regime: any problem; the Monte Carlo error of each entry is O(test^-1/2), so it checks the exact Parseval error
    of ``predict`` independently.

    References
    ----------
    .. [src] seed 004 L122-155, L354-366; specs/resnet_kernels.md §2.7.

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models.resnet import Problem
    >>> sim = popdyn.simulate(Problem(d=10, k=2, N=50), test=2000, seeds=2)
    >>> sim["test_error"].shape
    (2, 2)
    """
    owner = "resnet.simulate"
    if not isinstance(problem, Problem):
        raise InvalidParameterError(f"The 'problem' parameter of {owner} must be a resnet.Problem. Got {problem!r} "
                                    f"instead.")
    test, seeds = as_int(owner, "test", test, 2), as_int(owner, "seeds", seeds, 1)
    seed, chunk = as_int(owner, "seed", seed, 0, 2 ** 63 - 1), as_int(owner, "chunk", chunk, 1)
    if not (isinstance(device, str) and (device == "cpu" or device.startswith("cuda"))):
        raise InvalidParameterError(f"The 'device' parameter of {owner} must be 'cpu' or 'cuda[:N]'. Got {device!r} "
                                    f"instead.")
    start = time.perf_counter()
    X, target = problem.X, problem.target
    beta = krr_fit(problem.kappa, X, target(X), problem.lam)
    S_i = np.array([target.F_sets[i][0] for i in range(problem.k)])
    S = list(target.GF_sets[0])
    err, cF, cG = (np.zeros((seeds, problem.k)) for _ in range(3))
    for s in range(seeds):
        rng = np.random.default_rng([seed, s, 2])
        done = 0
        while done < test:
            n = min(chunk, test - done)
            Xt = rng.choice([-1.0, 1.0], size=(n, problem.d))
            pred = kernel_matrix(problem.kappa, Xt, X) @ beta
            err[s] += ((target(Xt) - pred) ** 2).sum(0)
            cF[s] += (pred * Xt[:, S_i]).sum(0)
            cG[s] += (pred * Xt[:, S].prod(1)[:, None]).sum(0)
            done += n
    obs = {"test_error": err / test, "captured_F": cF / test, "captured_G": cG / test}
    meta = {"problem": repr(problem), "test": test, "seeds": seeds, "seed": seed, "device": device, "backend": "numpy",
            "wall_time_s": time.perf_counter() - start, "method": "monte_carlo"}
    return Simulation(t=None, observables=obs, status=0, message="", meta=meta)
