"""The best per-loop GD schedule ([Shi24] ch. 8; docs/looped.md).

Public names
------------
:func:`optimal_schedule`, the per-loop steps that minimise the mean squared distance (the best preconditioned
GD with Gamma = c I, which is optimal for isotropic prompts). ``popdyn.predict`` is registered in ``predict.py``.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from ..._validate import as_int
from .error import _spectral
from .problem import Problem, sample_prompts  # noqa: F401  (Problem: the doctest's namespace)

__all__ = ["optimal_schedule"]

def optimal_schedule(problem, T, *, prompts=512, seed=0, x0=None):
    r"""Per-loop steps eta^(0..T-1) minimising the mean squared distance at loop T over sampled prompts.

    .. math:: \eta^\star = \arg\min_{\eta\in\mathbb R^T}\ \frac1N\sum_{p=1}^N
              \sum_i c_{p,i}\prod_{t<T}(1-\eta^{(t)}\lambda_{p,i})^2

    Parameters
    ----------
    problem : Problem
    T : int
        Number of loops (>= 1).
    prompts : int
        Prompts of the sample average (>= 1), drawn with ``seed``.
    seed : int
        Seed of the prompts.
    x0 : ndarray of shape (T,), optional
        Start of the search (default the constant step 1/E lambda_max, spread to a Chebyshev-like ladder).

    Returns
    -------
    eta : ndarray of shape (T,), sorted ascending
        The mean squared distance is a symmetric function of the steps, so they are returned sorted.
    value : float
        Minimal mean squared distance at loop T.

    Notes
    -----
    Regime: the best GD with preconditioner Gamma = c I and free per-loop steps; for isotropic prompts
    (rotation-invariant law of X, theta*) the optimal fixed Gamma is a multiple of I by symmetry, so this
    is the preconditioned-GD optimum the trained transformer is compared with. Beyond the paper.

    Accuracy: the value is within 1e-10 relative of a local minimum, not a saddle (L-BFGS-B to ftol 1e-15 from a
    ladder spanning the pooled spectrum; with d = 1 the old start had equal steps, which the symmetric objective
    kept equal, and stopped at the diagonal saddle, 25 % above the minimum at T = 2); measured 8e-4 of it against
    a BFGS polish started off the diagonal (tests/test_accuracy_looped.py, T <= 5).

    References
    ----------
    .. [src] derived in docs/looped.md (fixed-network steps).

    Examples
    --------
    >>> problem = Problem.isotropic_gaussian(40, 1)
    >>> eta, value = optimal_schedule(problem, 1, prompts=64)
    >>> lam = (sample_prompts(problem, 64)[0] ** 2).sum(axis=(1, 2))  # d = 1: lambda = ||X||^2, c = 1
    >>> bool(abs(value - (1 - lam.mean() ** 2 / (lam ** 2).mean())) < 1e-9)  # one step: 1 - (E lam)^2 / E lam^2
    True
    """
    T = as_int("looped.optimal_schedule", "T", T, low=1)
    X, th, _ = sample_prompts(problem, prompts, seed)
    mu, g, h, _, _ = _spectral(X, th, None, None)
    w = g * g / prompts
    lmax = float(np.mean(mu[:, -1]))
    if x0 is None:  # the ladder spans the pooled spectrum: with d = 1 the mean extremes coincide, equal steps stay
        lo = min(float(np.mean(mu[:, 0])), float(np.quantile(mu, 0.05)))  # equal under the symmetric objective
        hi = max(lmax, float(np.quantile(mu, 0.95)))                      # and L-BFGS-B stopped at the diagonal
        k = np.arange(T)                                                  # saddle (25 % above the minimum, T = 2)
        x0 = 1 / ((hi + lo) / 2 + (hi - lo) / 2 * np.cos(np.pi * (2 * k + 1) / (2 * T)))

    def f(z):  # steps in units of 1/lmax keep the search well scaled
        fac = 1 - (z[:, None, None] / lmax) * mu
        prod = np.prod(fac, axis=0)
        val = np.sum(w * prod**2)
        grad = np.array([np.sum(w * 2 * prod**2 / fac[t] * (-mu / lmax)) for t in range(T)])
        return val, grad

    res = minimize(f, np.asarray(x0, float) * lmax, jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-12})
    return np.sort(res.x / lmax), float(res.fun)
