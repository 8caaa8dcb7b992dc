"""``popdyn.predict`` for the looped transformer: mean error curves over loops t = 0..T (seed 001 ch. 8;
specs/looped_contrastive_dg.md A.2, A.4).

``predict(problem, *, T, eta="1/L", method="exact"|"mp", prompts, seed)`` registered for
:class:`~popdyn.models.looped.Problem`: observables ``error`` (mean signed error), ``abs_error`` and ``sq_dist``,
from the exact formula (8-g) on a seeded sample of prompts, or from the Marchenko-Pastur limit (8-i).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..._validate import Integer, InvalidParameterError, Options, RegimeWarning, as_int, check
from ...api import predict
from ...results import Prediction
from .error import exact_error, exact_sq_dist, mp_error_curve, mp_kappa
from .problem import Problem, sample_prompts
from .transformer import condition_number, step_schedule

__all__ = []

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


def _exact_curves(problem, T, eta, prompts, seed):
    """Seeded mean over ``prompts`` prompts of the exact curves (8-g), with standard errors."""
    X, th, y = sample_prompts(problem, prompts, seed)
    err = exact_error(X, th, problem.alpha, T, eta, y=y if problem.noise > 0 else None)
    sq = exact_sq_dist(X, th, T, eta, y=y if problem.noise > 0 else None)
    obs = {"error": err.mean(0), "abs_error": np.abs(err).mean(0), "sq_dist": sq.mean(0)}
    se = {k: v.std(0, ddof=1) / np.sqrt(prompts) if prompts > 1 else np.zeros(T + 1)
          for k, v in (("error", err), ("abs_error", np.abs(err)), ("sq_dist", sq))}
    kappa = condition_number(X)
    return obs, {"kappa": float(np.mean(kappa)), "kappa_per_prompt": kappa, "se": se}


@predict.register(Problem)
def _predict(problem, *, T, eta="1/L", method="exact", prompts=2000, seed=0):
    """Mean error curves over prompts, t = 0..T loops: seeded exact formula ("exact") or the MP limit ("mp")."""
    owner = "looped.predict"
    T = check(owner, "T", T, Integer(0))
    method = check(owner, "method", method, Options(("exact", "mp")))
    step_schedule(np.ones(1), T, eta, owner)  # validates eta
    regime = _regime(problem, eta, method)
    if method == "mp":
        obs, extra = _mp_curves(problem, T, eta)
    else:
        obs, extra = _exact_curves(problem, T, eta, as_int(owner, "prompts", prompts, 1), seed)
    meta = {"problem": repr(problem), "options": {"T": T, "eta": eta if isinstance(eta, str) else np.asarray(eta),
            "method": method, "prompts": prompts, "seed": seed}, "t_unit": "loops", "source": _SRC,
            "regime": regime, **extra}
    return Prediction(t=np.arange(T + 1), observables=obs, meta=meta)
