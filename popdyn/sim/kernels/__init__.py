"""Kernel learning on the hypercube: the finite-sample twin of :mod:`popdyn.models.kernels` (numpy; no torch).

``simulate`` fits kernel ridge regression on independent uniform training sets of each size and takes each fit's
exact population test error over the whole cube (Parseval), with ``predict``'s observable names.
"""
from __future__ import annotations

import time

import numpy as np

from ...models.kernels import KernelRegression
from ...results import Simulation

__all__ = ["simulate", "training_set"]


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass


def _progress(total, enabled, desc):
    """A tqdm bar over ``total`` fits when enabled and tqdm is installed (as popdyn.sim._torch.progress, without
    importing torch for a numpy simulation)."""
    if not enabled:
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc=desc, unit="fit", leave=True)


def training_set(problem, N, seed):
    """The training set of size ``N`` drawn from ``seed``: points uniform on {±1}^d and labels f(x) + noise xi
    (stream ``[seed, N]``, so each size has its own draw whatever the other sizes are)."""
    rng = np.random.default_rng([seed, N])
    X = rng.choice([-1.0, 1.0], size=(N, problem.d))
    y = problem.target(X)
    if problem.noise > 0:
        y = y + problem.noise * rng.standard_normal(N)
    return X, y


def simulate(problem, *, n_train, seeds, seed, device, progress):
    r"""Exact population test error of kernel ridge regression on ``seeds`` independent training sets per size.

    .. math:: \mathcal E=\mathbb E_x\big(f(x)-\hat f(x)\big)^2\ \text{(Parseval over the whole cube)},\qquad
              \hat{\mathcal L}_\ell=\frac{\sum_{|S|=\ell}\hat v_Sv_S}{\sum_{|S|=\ell}v_S^2}

    Parameters
    ----------
    problem : kernels.Problem
    n_train : tuple of int
        Training-set sizes.
    seeds : int
        Independent training sets per size.
    seed : int
        Seed of the first set (set i of size N uses the stream ``[seed + i, N]``).
    device : str
        Accepted for the common interface; the fits are numpy on the CPU.
    progress : bool
        A bar over the fits.

    Returns
    -------
    Simulation
        Static; ``test_error`` (seeds, n), ``learnability`` (seeds, n, levels) (the share of each target level the
        fitted predictor captured), ``test_error_accuracy`` (seeds, n) (the rounding-error bound of each exact
        error).

    Notes
    -----
    Regime: any problem. Exact over the test distribution (no test sample): the only randomness is the training
    set. Cost: one N x N Cholesky and O(N^2) double-double pair sums per fit.

    References
    ----------
    .. [src] [AllenZhu19, Prop. E.1, Lemma E.2] (the exact error on the cube); the sampling is popdyn's own.

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models import kernels
    >>> sim = popdyn.simulate(kernels.Problem(d=8), n_train=(10, 40), seeds=2)
    >>> sim["test_error"].shape
    (2, 2)
    """
    start = time.perf_counter()
    levels = problem.target_levels
    n = len(n_train)
    err, acc = np.zeros((seeds, n)), np.zeros((seeds, n))
    learn = np.zeros((seeds, n, levels.size))
    bar = _progress(seeds * n, progress, "kernel regression")
    for s in range(seeds):
        for i, N in enumerate(n_train):
            X, y = training_set(problem, N, seed + s)
            krr = KernelRegression(problem.kappa, X, y, problem.ridge)
            err[s, i], acc[s, i] = krr.test_error(problem.target, return_accuracy=True)
            learn[s, i] = krr.learned_fraction(problem.target)[levels]
            bar.update(1)
    bar.close()
    obs = {"test_error": err, "learnability": learn, "test_error_accuracy": acc}
    meta = {"backend": "numpy", "wall_time_s": time.perf_counter() - start, "method": "exact"}
    return Simulation(t=None, observables=obs, coords={"n_train": np.array(n_train), "level": levels}, status=0,
                      message="exact population error (Parseval) per training set", meta=meta)
