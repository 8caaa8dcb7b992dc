"""ResNet vs kernels ([AllenZhu19]): trained networks held against the kernels (:class:`resnet.NetworkProblem`)."""
from __future__ import annotations

import numpy as np
import torch

from ... import api
from ..._validate import InvalidParameterError, as_int
from ...models.resnet.hypercube import kernel_matrix, krr_fit
from ...models.resnet.problem import KERNELS, NetworkProblem, check_training, check_kernel_inputs
from ...results import Simulation
from .._torch import make_generator, resolve_device, resolve_dtype, to_numpy
from .networks import STREAMS, init_net, signs, train

__all__ = ["simulate", "training_inputs", "MINIBATCH"]

#: the minibatch size of the paper's protocol ([AllenZhu19, App. A])
MINIBATCH = 50


def training_inputs(problem, seeds=1, *, seed=0, device="cpu"):
    r"""The training inputs of the ``seeds`` networks that ``simulate(problem, seeds=seeds, seed=seed)`` trains
    (protocol "minibatch").

    .. math:: X^{(s)}\in\{\pm1\}^{N\times d},\quad s=0,\dots,\text{seeds}-1

    the draw of :func:`popdyn.sim.resnet.networks.train` (its training stream of ``seed`` on ``device``), replayed.

    Parameters
    ----------
    problem : resnet.NetworkProblem
    seeds : int
        Networks trained together, ``>= 1`` (the sets depend on it: one draw of shape (seeds, n_train, d)).
    seed : int
        The simulation's ``seed`` option.
    device : str
        The device of the training ("cpu", "cuda[:N]"): its generator makes the draw.

    Returns
    -------
    ndarray, shape (seeds, n_train, d), float64 ±1

    Notes
    -----
    Regime: protocol "minibatch" (online training draws fresh samples instead). Pass ``training_inputs(...)[s]`` as
    ``X`` to ``popdyn.predict(problem, X=...)`` to fit the kernels on network s's own points.

    References
    ----------
    .. [src] [AllenZhu19, Section 6, App. A] (one training set of N points).

    Examples
    --------
    >>> from popdyn.models.resnet.problem import NetworkProblem
    >>> training_inputs(NetworkProblem(d=6, k=2, n_train=5), seeds=2).shape
    (2, 5, 6)
    """
    owner = "resnet.training_inputs"
    if not isinstance(problem, NetworkProblem):
        raise InvalidParameterError(f"The 'problem' parameter of {owner} must be a resnet.NetworkProblem. Got "
                                    f"{problem!r} instead.")
    seeds, seed = as_int(owner, "seeds", seeds, 1), as_int(owner, "seed", seed, 0, 2 ** 63 - 1)
    dev = resolve_device(device, owner)
    gen = make_generator(seed * 4 + STREAMS["train"], dev)
    return to_numpy(signs((seeds, problem.n_train, problem.d), gen, dev, torch.float64))


def simulate(problem, *, X, kernels, ridges, protocol, lr, weight_decay, epochs, n_test, n_points, seeds, seed, device,
             dtype, progress):
    r"""Train ``seeds`` networks of ``problem`` (batched on one device) and record their test error and c_F, c_G.

    .. math:: \widehat{\mathrm{err}}=\frac1n\sum_x\|\mathrm{out}(x)-\mathcal H(x)\|^2,\qquad
              c_{F,i}=\frac1n\sum_x\mathrm{out}_i(x)\chi_{A_i}(x),\quad
              c_{G,i}=\frac1n\sum_x\mathrm{out}_i(x)\chi_{B_i}(x)

    (A_i the set of F_i, B_i that of G_i(F); Monte Carlo over ``n_test`` uniform points).

    Parameters
    ----------
    problem : resnet.NetworkProblem
    X, kernels, ridges
        The kernels of ``predict``'s ``kernel_error``, their training inputs (None: ``problem.X``) and ridges: each
        kernel is fitted on X at the ridge ``predict`` selects, and its error is measured on each seed's fresh test
        points (the Monte Carlo twin of ``predict``'s exact Parseval error; the networks train on their own sets).
    protocol : {"minibatch", "online"}
        "minibatch": batches of 50, momentum 0.9, weight decay ``weight_decay``, ``epochs`` at ``lr`` then ``epochs``
        at ``lr / 10`` over one set of n_train points per seed; "online": Algorithm 1, n_train steps of one fresh
        sample, step ``lr``, no decay (``weight_decay`` must be 0).
    lr, weight_decay, epochs
        The step size, the weight decay, the epochs at each step size (minibatch).
    n_test : int
        Monte Carlo test points, ``>= 2`` (the standard error of the total error is about
        sqrt(Var||out - H||^2 / n_test)).
    n_points : int
        Evaluations along training, evenly spaced, ``>= 2``.
    seeds, seed
        Independent networks (initial weights, training sets and test points drawn from the streams of ``seed``).
    device, dtype, progress
        CPU or CUDA; float64 (default) or float32; a bar over the steps.

    Returns
    -------
    Simulation
        ``t`` (n_points,) epochs (minibatch) or samples (online), ``meta["t_unit"]``; ``test_error`` (seeds, n_points)
        the total over outputs, ``test_error_output`` (seeds, n_points, k) per output, ``c_F``, ``c_G``
        (seeds, n_points, k); ``kernel_error`` (seeds, n_points, kernels), the kernels' Monte Carlo error, constant
        in time (the kernels are not trained: the level the networks are held against); ``coords["kernel"]``,
        ``coords["ridge"]``. ``status`` 1 when a seed diverged (its later records NaN).

    Notes
    -----
    Regime: any problem; the training is :func:`popdyn.sim.resnet.networks.train` with the experiment init (A, V ~
    N(0, 1/m), W ~ N(0, 1/d), App. A), the init and the training streams of ``seed``.

    References
    ----------
    .. [src] [AllenZhu19, Algorithm 1, App. A (the experiments)].

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models.resnet.problem import NetworkProblem
    >>> sim = popdyn.simulate(NetworkProblem(d=8, k=2, width=16, n_train=50), epochs=2, seeds=2, n_test=200,
    ...                       n_points=3)
    >>> sim["test_error"].shape, sim["c_G"].shape
    ((2, 3), (2, 3, 2))
    """
    owner = "resnet.network.simulate"
    check_training(owner, protocol, weight_decay)
    X = check_kernel_inputs(owner, problem, X)
    dev, dt = resolve_device(device, owner), resolve_dtype(dtype, owner)
    H = problem.H
    net = init_net(problem.arch, problem.d, problem.k, problem.width, seeds=seeds, seed=seed, device=dev, dtype=dt)
    if protocol == "minibatch":
        sim = train(net, H, method="minibatch", N=problem.n_train, lr=lr, wd=weight_decay, epochs=(epochs, epochs),
                    minibatch=MINIBATCH, test=n_test, records=n_points, seed=seed, progress=progress)
        t, unit = sim.t / -(-problem.n_train // MINIBATCH), "epochs"
    else:
        sim = train(net, H, method="online", steps=problem.n_train, eta_w=lr, batch=1, test=n_test, records=n_points,
                    seed=seed, progress=progress)
        t, unit = sim.t, "samples"
    kernel_error = _kernel_errors(problem, X, seeds, seed, n_test, kernels, ridges)
    obs = {"test_error": sim["test_error"], "test_error_output": sim["test_error_output"], "c_F": sim["c_F"],
           "c_G": sim["c_G"], "kernel_error": np.repeat(kernel_error[:, None, :], t.size, axis=1)}
    meta = {**sim.meta, "t_unit": unit, "backend": "torch"}
    return Simulation(t=t, observables=obs, status=sim.status, message=sim.message, meta=meta,
                      coords={"kernel": np.array(kernels), "ridge": np.array(ridges, dtype=float)})


def _kernel_errors(problem, X, seeds, seed, n_test, kernels, ridges):
    """(seeds, kernels): Monte Carlo test error of each kernel's KRR fit on ``X`` at ``predict``'s ridge."""
    ridge = api.predict(problem, X=X, kernels=kernels, ridges=ridges)["kernel_ridge"]
    H = problem.H
    out = np.empty((seeds, len(kernels)))
    for j, name in enumerate(kernels):
        kappa = KERNELS[name](problem.d)
        beta = krr_fit(kappa, X, H(X), float(ridge[j]))
        for s in range(seeds):
            Xt = np.random.default_rng([seed, 3, s]).choice([-1.0, 1.0], size=(n_test, problem.d))
            out[s, j] = ((H(Xt) - kernel_matrix(kappa, Xt, X) @ beta) ** 2).sum(1).mean()
    return out
