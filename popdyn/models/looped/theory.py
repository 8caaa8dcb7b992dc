"""Theory curves over loops for :func:`popdyn.predict`, and the best per-loop GD schedule (seed 001 ch. 8;
specs/looped_contrastive_dg.md A.2, A.4, A.5).

Public names
------------
``predict(problem, *, T, eta="1/L", method="exact"|"mp", trials, seed)`` registered for
:class:`~popdyn.models.looped.Problem`: observables ``error`` (mean signed error), ``abs_error`` and
``sq_dist`` over loops t = 0..T; :func:`optimal_schedule`, the per-loop steps that minimise the mean
squared distance (the best preconditioned GD with Gamma = c I, which is optimal for isotropic prompts).
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import minimize

from ..._validate import Integer, InvalidParameterError, Options, RegimeWarning, as_int, check
from ...api import predict
from ...results import Prediction
from .error import _curves, _spectral, exact_error, exact_sq_dist, mp_error_curve, mp_kappa
from .problem import Problem, sample_prompts
from .transformer import condition_number, step_schedule

__all__ = ["optimal_schedule"]

_SRC = ["seed 001 L2337-2345 (Thm 8.16)", "seed 001 L2476-2488 (Fig. 8.1)",
        "specs/looped_contrastive_dg.md A.2 (8-g, 8-h, 8-i), A.4"]


def _regime(problem, eta, method):
    """(condition, value, bound, source) entries of the theorem's regime that fail, each warned once."""
    out = []
    if problem.n <= problem.d:
        out.append(("n > d (X^T X invertible)", problem.n, problem.d, "seed 001 L2261 (Lemma 8.11)"))
    if problem.noise > 0:
        out.append(("noise = 0 (realizable)", problem.noise, 0.0, "seed 001 L2198 (Def 8.3)"))
    if eta != "1/L":
        out.append(("eta = 1/L", str(eta), "1/L", "seed 001 L2437-2447 (Thm 8.25)"))
    if method == "mp" and not problem.isotropic:
        out.append(("isotropic rows (Marchenko-Pastur)", "cov not constant", "cov = c 1", "spec A.2 (8-i)"))
    for cond, value, bound, src in out:
        warnings.warn(f"looped.predict: {cond} fails ({value} vs {bound}; {src}); computed outside the theorem.",
                      RegimeWarning, stacklevel=3)
    return out


def _mp_curves(problem, T, eta):
    """Marchenko-Pastur observables at gamma = d/n; a float eta enters as eta n / cov."""
    if not problem.isotropic or problem.noise > 0 or not problem.n > problem.d or eta == "2/(L+mu)" \
            or not isinstance(eta, (str, float, int)):
        raise InvalidParameterError("The 'method' parameter of looped.predict may be 'mp' only for isotropic, "
                                    "realizable problems with n > d and eta '1/L' or a float. Got 'mp' instead.")
    eta_n = None if eta == "1/L" else float(eta) * problem.n * problem.cov[0]
    e1, e2 = mp_error_curve(problem.gamma, T, 1, eta_n=eta_n), mp_error_curve(problem.gamma, T, 2, eta_n=eta_n)
    obs = {"error": -problem.alpha * e1, "sq_dist": e2}
    if eta == "1/L":
        obs["abs_error"] = abs(problem.alpha) * e1  # the product is PSD: |err| = -sign(alpha) err (spec 8-h)
    return obs, {"kappa": mp_kappa(problem.gamma)}


def _exact_curves(problem, T, eta, trials, seed):
    """Seeded mean over ``trials`` prompts of the exact curves (8-g), with standard errors."""
    X, th, y = sample_prompts(problem, trials, seed)
    err = exact_error(X, th, problem.alpha, T, eta, y=y if problem.noise > 0 else None)
    sq = exact_sq_dist(X, th, T, eta, y=y if problem.noise > 0 else None)
    obs = {"error": err.mean(0), "abs_error": np.abs(err).mean(0), "sq_dist": sq.mean(0)}
    se = {k: v.std(0, ddof=1) / np.sqrt(trials) if trials > 1 else np.zeros(T + 1)
          for k, v in (("error", err), ("abs_error", np.abs(err)), ("sq_dist", sq))}
    kappa = condition_number(X)
    return obs, {"kappa": float(np.mean(kappa)), "kappa_trials": kappa, "se": se}


@predict.register(Problem)
def _predict(problem, *, T, eta="1/L", method="exact", trials=2000, seed=0):
    """Mean error curves over prompts, t = 0..T loops: seeded exact formula ("exact") or the MP limit ("mp")."""
    owner = "looped.predict"
    T = check(owner, "T", T, Integer(0))
    method = check(owner, "method", method, Options(("exact", "mp")))
    step_schedule(np.ones(1), T, eta, owner)  # validates eta
    regime = _regime(problem, eta, method)
    if method == "mp":
        obs, extra = _mp_curves(problem, T, eta)
    else:
        obs, extra = _exact_curves(problem, T, eta, as_int(owner, "trials", trials, 1), seed)
    meta = {"problem": repr(problem), "options": {"T": T, "eta": eta if isinstance(eta, str) else np.asarray(eta),
            "method": method, "trials": trials, "seed": seed}, "t_unit": "loops", "source": _SRC,
            "regime": regime, **extra}
    return Prediction(t=np.arange(T + 1), observables=obs, meta=meta)


def optimal_schedule(problem, T, *, trials=512, seed=0, x0=None):
    r"""Per-loop steps eta^(0..T-1) minimising the mean squared distance at loop T over sampled prompts.

    .. math:: \eta^\star = \arg\min_{\eta\in\mathbb R^T}\ \frac1N\sum_{p=1}^N
              \sum_i c_{p,i}\prod_{t<T}(1-\eta^{(t)}\lambda_{p,i})^2

    Parameters
    ----------
    problem : Problem
    T : int
        Number of loops (>= 1).
    trials : int
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

    References
    ----------
    .. [src] derived; specs/looped_contrastive_dg.md A.2 (8-g), (8-m), A.7 (fixed-network steps).

    Examples
    --------
    >>> problem = Problem.isotropic_gaussian(40, 1)
    >>> eta, value = optimal_schedule(problem, 1, trials=64)
    >>> lam = (sample_prompts(problem, 64)[0] ** 2).sum(axis=(1, 2))  # d = 1: lambda = ||X||^2, c = 1
    >>> bool(abs(value - (1 - lam.mean() ** 2 / (lam ** 2).mean())) < 1e-9)  # one step: 1 - (E lam)^2 / E lam^2
    True
    """
    T = as_int("looped.optimal_schedule", "T", T, low=1)
    X, th, _ = sample_prompts(problem, trials, seed)
    mu, g, h, _, _ = _spectral(X, th, None, None)
    w = g * g / trials
    lmax = float(np.mean(mu[:, -1]))
    if x0 is None:
        lmin = float(np.mean(mu[:, 0]))
        k = np.arange(T)
        x0 = 1 / ((lmax + lmin) / 2 + (lmax - lmin) / 2 * np.cos(np.pi * (2 * k + 1) / (2 * T)))

    def f(z):  # steps in units of 1/lmax keep the search well scaled
        fac = 1 - (z[:, None, None] / lmax) * mu
        prod = np.prod(fac, axis=0)
        val = np.sum(w * prod**2)
        grad = np.array([np.sum(w * 2 * prod**2 / fac[t] * (-mu / lmax)) for t in range(T)])
        return val, grad

    res = minimize(f, np.asarray(x0, float) * lmax, jac=True, method="L-BFGS-B", options={"maxiter": 2000})
    return np.sort(res.x / lmax), float(res.fun)
