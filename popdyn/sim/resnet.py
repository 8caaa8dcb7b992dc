"""ResNet vs kernels (seed 004): finite-sample twin of the exact kernel test error.

Public names
------------
simulate
    ``popdyn.simulate`` for :class:`popdyn.models.resnet.Problem`: the fitted KRR predictor evaluated on fresh
    uniform test points (Monte Carlo over x), with ``predict``'s observable names.
simulate_networks
    ``popdyn.simulate`` for :class:`popdyn.models.resnet.NetworkProblem`: ``seeds`` networks trained by
    :func:`popdyn.sim.resnet_nets.train`; test error and c_F, c_G over epochs.
training_inputs
    The training sets those networks are trained on, to fit the kernels of ``popdyn.predict`` on the same points.

The networks of the paper (the three-layer ResNet, the fully connected nets, Algorithm 1 and the minibatch protocol,
the finite-width empirical NTK and conjugate kernel) are in :mod:`popdyn.sim.resnet_nets`.
"""
from __future__ import annotations

import time

import numpy as np
import torch

from .._validate import InvalidParameterError, as_int
from ..api import predict as _api_predict, simulate as _api_simulate
from ..models.resnet.hypercube import kernel_matrix, krr_fit
from ..models.resnet.predict import NETWORK_LAMS
from ..models.resnet.problem import KERNELS, NetworkProblem, Problem
from ..results import Simulation
from ._torch import make_generator, resolve_device, resolve_dtype, to_numpy
from .resnet_nets import _STREAMS, _signs, init_net, train

__all__ = ["simulate", "simulate_networks", "training_inputs"]

#: the minibatch size of the paper's protocol (L424)
MINIBATCH = 50


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


def _problem(owner, problem):
    if not isinstance(problem, NetworkProblem):
        raise InvalidParameterError(f"The 'problem' parameter of {owner} must be a resnet.NetworkProblem. Got "
                                    f"{problem!r} instead.")
    return problem


def training_inputs(problem, seeds=1, *, device="cpu"):
    r"""The training inputs of the ``seeds`` networks that ``simulate`` trains on ``problem`` (minibatch protocol).

    .. math:: X^{(s)}\in\{\pm1\}^{N\times d},\quad s=0,\dots,\text{seeds}-1

    the draw of :func:`popdyn.sim.resnet_nets.train` (its training stream of ``problem.seed`` on ``device``),
    replayed.

    Parameters
    ----------
    problem : resnet.NetworkProblem
    seeds : int
        Networks trained together, ``>= 1`` (the sets depend on it: one draw of shape (seeds, N, d)).
    device : str
        The device of the training ("cpu", "cuda[:N]"): its generator makes the draw.

    Returns
    -------
    ndarray, shape (seeds, N, d), float64 ±1

    Notes
    -----
    Regime: protocol "minibatch" (online training draws fresh samples instead). Pass ``training_inputs(...)[s]`` as
    ``X`` to ``popdyn.predict(problem, X=...)`` to fit the kernels on network s's own points.

    References
    ----------
    .. [src] seed 004 L241, L424 (one training set of N points); specs/resnet_kernels.md §4.1 item 3, §4.2.

    Examples
    --------
    >>> from popdyn.models.resnet.problem import NetworkProblem
    >>> training_inputs(NetworkProblem(d=6, k=2, N=5), seeds=2).shape
    (2, 5, 6)
    """
    owner = "resnet.training_inputs"
    problem = _problem(owner, problem)
    if problem.protocol != "minibatch":
        raise InvalidParameterError(f"The 'problem' parameter of {owner} must use protocol 'minibatch' (online "
                                    f"training has no training set). Got {problem!r} instead.")
    seeds, dev = as_int(owner, "seeds", seeds, 1), resolve_device(device, owner)
    gen = make_generator(problem.seed * 4 + _STREAMS["train"], dev)
    return to_numpy(_signs((seeds, problem.N, problem.d), gen, dev, torch.float64))


@_api_simulate.register(NetworkProblem)
def simulate_networks(problem, *, seeds=2, test=4000, records=21, kernels=("relu_ntk", "relu_ck"),
                      lams=NETWORK_LAMS, device="cpu", dtype=None):
    r"""Train ``seeds`` networks of ``problem`` (batched on one device) and record their test error and c_F, c_G.

    .. math:: \widehat{\mathrm{err}}=\frac1n\sum_x\|\mathrm{out}(x)-\mathcal H(x)\|^2,\qquad
              c_{F,i}=\frac1n\sum_x\mathrm{out}_i(x)\chi_{A_i}(x),\quad
              c_{G,i}=\frac1n\sum_x\mathrm{out}_i(x)\chi_{B_i}(x)

    (A_i the set of F_i, B_i that of G_i(F); Monte Carlo over ``test`` uniform points).

    Parameters
    ----------
    problem : resnet.NetworkProblem
    seeds : int
        Independent networks (initial weights and training sets), ``>= 1``.
    test : int
        Monte Carlo test points, ``>= 2`` (the standard error of the total error is about
        sqrt(Var||out - H||^2 / test)).
    records : int
        Evaluations along training, evenly spaced, ``>= 2``.
    kernels, lams
        The kernels of ``predict``'s ``kernel_error`` and its ridges: each kernel is fitted on ``problem.X`` at the
        ridge ``predict`` selects, and its error is measured on each seed's test points (the Monte Carlo twin of
        ``predict``'s exact Parseval error).
    device, dtype
        CPU or CUDA; float64 (default) or float32.

    Returns
    -------
    Simulation
        ``t`` (records,) epochs (minibatch) or samples (online), ``meta["t_unit"]``; ``test_error`` (seeds, records)
        the total over outputs, ``test_error_output`` (seeds, k) after training, per output (fresh test points of
        the seed's stream 2 in numpy); ``c_F``, ``c_G`` (seeds, records, k); ``kernel_error`` (seeds, kernels),
        ``coords["kernel"]``. ``status`` 1 when a seed diverged (its later records NaN).

    Notes
    -----
    Regime: any problem; the training is :func:`popdyn.sim.resnet_nets.train` with the experiment init (A, V ~
    N(0, 1/m), W ~ N(0, 1/d), L422), the init and the training streams of ``problem.seed``; minibatch: batches of 50,
    momentum 0.9, ``epochs`` at ``lr`` then ``epochs`` at ``lr / 10``; online: N steps of one fresh sample.

    References
    ----------
    .. [src] seed 004 L260-275 (Algorithm 1), L420-424 (the experiments); specs/resnet_kernels.md §1.4, §1.8, §4.1,
       §4.2.

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models.resnet.problem import NetworkProblem
    >>> sim = popdyn.simulate(NetworkProblem(d=8, k=2, m=16, N=50, epochs=2), seeds=2, test=200, records=3)
    >>> sim["test_error"].shape, sim["c_G"].shape
    ((2, 3), (2, 3, 2))
    """
    owner = "resnet.simulate"
    problem = _problem(owner, problem)
    seeds, test = as_int(owner, "seeds", seeds, 1), as_int(owner, "test", test, 2)
    records = as_int(owner, "records", records, 2)
    dev, dt = resolve_device(device, owner), resolve_dtype(dtype, owner)
    H = problem.H
    net = init_net(problem.arch, problem.d, problem.k, problem.m, seeds=seeds, seed=problem.seed, device=dev,
                   dtype=dt)
    if problem.protocol == "minibatch":
        sim = train(net, H, method="minibatch", N=problem.N, lr=problem.lr, wd=problem.wd,
                    epochs=(problem.epochs, problem.epochs), minibatch=MINIBATCH, test=test, records=records,
                    seed=problem.seed)
        t, unit = sim.t / -(-problem.N // MINIBATCH), "epochs"
    else:
        sim = train(net, H, method="online", steps=problem.N, eta_w=problem.lr, batch=1, test=test, records=records,
                    seed=problem.seed)
        t, unit = sim.t, "samples"
    Xt = np.random.default_rng([problem.seed, 2]).choice([-1.0, 1.0], size=(test, problem.d))
    with torch.no_grad():
        out = to_numpy(net(torch.as_tensor(Xt, dtype=dt, device=dev)))
    per_output = ((out - H(Xt)) ** 2).mean(1)
    per_output[~np.isfinite(sim["test_error"][:, -1])] = np.nan
    obs = {"test_error": sim["test_error"], "test_error_output": per_output, "c_F": sim["c_F"], "c_G": sim["c_G"],
           "kernel_error": _kernel_errors(problem, seeds, test, kernels, lams)}
    meta = {**sim.meta, "problem": repr(problem), "seeds": seeds, "records": records, "t_unit": unit,
            "backend": "torch"}
    return Simulation(t=t, observables=obs, status=sim.status, message=sim.message, meta=meta,
                      coords={"kernel": np.array(kernels)})


def _kernel_errors(problem, seeds, test, kernels, lams):
    """(seeds, kernels): Monte Carlo test error of each kernel's KRR fit on ``problem.X`` at ``predict``'s ridge."""
    ridge = _api_predict(problem, kernels=kernels, lams=lams)["kernel_lam"]
    H, X = problem.H, problem.X
    out = np.empty((seeds, len(kernels)))
    for j, name in enumerate(kernels):
        kappa = KERNELS[name](problem.d)
        beta = krr_fit(kappa, X, H(X), float(ridge[j]))
        for s in range(seeds):
            Xt = np.random.default_rng([problem.seed, 3, s]).choice([-1.0, 1.0], size=(test, problem.d))
            out[s, j] = ((H(Xt) - kernel_matrix(kappa, Xt, X) @ beta) ** 2).sum(1).mean()
    return out
