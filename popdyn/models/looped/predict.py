"""``popdyn.predict`` for the looped transformer: mean error curves over loops t = 0..loops ([Shi24] ch. 8;
docs/looped.md).

``predict(problem, loops=..., lr="1/L", method="exact"|"mp"|"finite", prompts=..., seed=...)`` registered for
:class:`~popdyn.models.looped.Problem`: observables ``error`` (mean signed error), ``abs_error`` and ``sq_dist``,
from the exact formula on a seeded sample of prompts, from the Marchenko-Pastur limit, or from the
finite-(n, d) curve of exact real-Wishart moments (``finite.py``).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..._validate import InvalidParameterError, RegimeWarning
from ...api import register
from ...results import Prediction
from .error import exact_error, exact_sq_dist, mp_error_curve, mp_kappa
from .finite import finite_error_curve, lambda_max_mean
from .problem import Problem, sample_prompts
from .transformer import condition_number, step_schedule

__all__ = ["check_lr"]

_SRC = ["[Shi24, Theorem 8.16]", "[Shi24, Fig. 8.1]",
        "docs/looped.md (exact and Marchenko-Pastur errors, derived here)"]


def _regime(problem, lr, method):
    """(condition, value, bound, source) entries of the theorem's regime that fail, each warned once."""
    out = []
    if problem.context <= problem.d:
        out.append(("context > d (the paper's n > d: X^T X invertible)", problem.context, problem.d,
                    "[Shi24, Lemma 8.11]"))
    if problem.noise > 0:
        out.append(("noise = 0 (realizable)", problem.noise, 0.0, "[Shi24, Definition 8.3]"))
    if not (isinstance(lr, str) and lr == "1/L"):
        out.append(("lr = 1/L", str(lr), "1/L", "[Shi24, Theorem 8.25]"))
    if method in ("mp", "finite") and not problem.isotropic:
        out.append(("isotropic rows (Marchenko-Pastur)", "cov not constant", "cov = c 1",
                    "docs/looped.md (Marchenko-Pastur limit, derived here)"))
    for cond, value, bound, src in out:
        warnings.warn(f"looped.predict: {cond} fails ({value} vs {bound}; {src}); computed outside the theorem.",
                      RegimeWarning)
    return out


def _spectral_curves(problem, loops, lr, method):
    """Marchenko-Pastur ("mp", gamma = d/n; a float lr enters as lr n cov) or finite-(n, d) ("finite", exact
    Wishart moments; lr = 1/L as 1/E lambda_max) observables of isotropic realizable problems."""
    n = problem.context
    if not problem.isotropic or problem.noise > 0 or not n > problem.d or not isinstance(lr, (str, float)) \
            or lr == "2/(L+mu)":
        raise InvalidParameterError(f"The 'method' parameter of looped.predict may be '{method}' only for isotropic, "
                                    f"realizable problems with context > d and lr '1/L' or a float. Got {method!r} "
                                    "instead.")
    c = problem.cov[0]
    if method == "mp":
        eta_n = None if lr == "1/L" else lr * n * c
        e1, e2 = mp_error_curve(problem.gamma, loops, 1, eta_n=eta_n), mp_error_curve(problem.gamma, loops, 2, eta_n=eta_n)
        extra = {"kappa": mp_kappa(problem.gamma)}
    else:
        step = None if lr == "1/L" else lr * c
        e1, e2 = (finite_error_curve(n, problem.d, loops, p, eta=step) for p in (1, 2))
        extra = {"lambda_max_mean": c * lambda_max_mean(n, problem.d)}
    obs = {"error": -problem.alpha * e1, "sq_dist": e2}
    if lr == "1/L":
        obs["abs_error"] = abs(problem.alpha) * e1  # the product is PSD: |err| = -sign(alpha) err (docs/looped.md)
    return obs, extra


def _exact_curves(problem, loops, lr, prompts, seed):
    """Seeded mean over ``prompts`` prompts of the exact curves (docs/looped.md), with standard errors."""
    X, th, y = sample_prompts(problem, prompts, seed)
    err = exact_error(X, th, problem.alpha, loops, lr, y=y if problem.noise > 0 else None)
    sq = exact_sq_dist(X, th, loops, lr, y=y if problem.noise > 0 else None)
    obs = {"error": err.mean(0), "abs_error": np.abs(err).mean(0), "sq_dist": sq.mean(0)}
    se = {k: v.std(0, ddof=1) / np.sqrt(prompts) if prompts > 1 else np.zeros(loops + 1)
          for k, v in (("error", err), ("abs_error", np.abs(err)), ("sq_dist", sq))}
    kappa = condition_number(X)
    return obs, {"kappa": float(np.mean(kappa)), "kappa_per_prompt": kappa, "se": se}


def check_lr(owner, lr, loops):
    """``lr`` as resolved by the option table, checked against ``loops``: a name, a float, or ``loops`` floats > 0."""
    if isinstance(lr, np.ndarray) and (lr.shape != (loops,) or not np.all(lr > 0)):
        raise InvalidParameterError(f"The 'lr' parameter of {owner} must be '1/L', '2/(L+mu)', a float > 0 or an "
                                    f"array of {loops} floats > 0 (one per loop). Got {lr!r} instead.")
    return lr


def _predict(problem, *, loops, lr, method, prompts, seed):
    """Mean error curves over prompts, t = 0..loops: seeded exact formula ("exact"), the MP limit ("mp") or the
    finite-(n, d) curve ("finite")."""
    lr = check_lr("looped.predict", lr, loops)
    regime = _regime(problem, lr, method)
    if method in ("mp", "finite"):
        obs, extra = _spectral_curves(problem, loops, lr, method)
    else:
        obs, extra = _exact_curves(problem, loops, lr, prompts, seed)
    meta = {"t_unit": "loops", "source": _SRC, "regime": regime, **extra}
    return Prediction(t=np.arange(loops + 1), observables=obs, meta=meta)


register(Problem, name="looped", predict=_predict, simulate="popdyn.sim.looped:simulate",
         summary="in-context error curves of a looped linear transformer emulating GD, loop by loop")
