"""``popdyn.predict`` for gradient-feature learning: the exact first step, its features, the feature probability,
the frozen-feature optimum, Lemma B.6's good network and the main theorem's numbers ([Shi24] ch. 3,
App. B; docs/gradient_features.md).

``popdyn.predict(problem, n_train=1000, n_mc=4000, n_test=20000, n_G=None, B_a2=None, B_eps=None, eps=0.1,
delta=0.1)`` for :class:`~popdyn.models.gradient_features.Problem` (registered here; the options are
``Problem.options``).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..._validate import RegimeWarning
from ...api import register
from ...results import Prediction
from .bounds import good_network_bound, good_network_scales, main_theorem, uniform_parity_requirements
from .framework import (feature_probability, first_step, good_second_layer, nice_set, opt_frozen, population_loss,
                        uniform_parity_second_layer)
from .problem import Problem

__all__ = []

_SRC = "[Shi24, Section 3.3.3, App. B.4, App. B.5.5 (Lemma B.54, Theorem B.56), Lemma B.70]"
_THEOREM_KEYS = ("m_min", "T", "n_min", "eta", "error_bound", "error_bound_population")


def _first_step(problem, n_G):
    """Population first step, or the sample step on ``n_G`` samples (models without an exact G at this d)."""
    a0, W0, b = problem.params0
    if n_G is None:
        return first_step(problem.model, a0, W0, b, problem.step_size, problem.loss)
    X, y = problem.model.sample(n_G, np.random.default_rng([problem.seed, 1]))
    return first_step(problem.model, a0, W0, b, problem.step_size, problem.loss, X=X, y=y)


def _gstar_loss(problem):
    """Exact ``L_D(g*)`` (an upper bound on OPT) from the data model."""
    kw = {"tau": problem.case["tau_tilde"]} if problem.data == "xor" else {}
    out = problem.model.ground_truth_loss(loss=problem.loss, **kw)
    return float(out if problem.data == "linear" else out[0])      # linear: an exact finite sum, no error


def _theorem(problem, eps, delta, regime):
    """Main-theorem numbers (3.10)-(3.13) at the problem's width and d, case parameters, hidden constants 1."""
    if "theorem_args" not in problem.case:
        return {}
    if not problem.case["p"] > 0:
        regime.append({"condition": "case p > 0 (underflows float64)", "value": problem.case["log_p"],
                       "source": "case_parameters"})
        return {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RegimeWarning)
        out = main_theorem(**problem.case["theorem_args"], eps=eps, delta=delta, m=problem.width, d=problem.d,
                           loss=problem.loss)
    regime += [{"condition": str(w.message), "source": "main_theorem"} for w in caught]
    return _finite_theorem(out, _THEOREM_KEYS, "main_theorem", regime)


def _finite_theorem(out, keys, source, regime):
    """``theorem_<key>`` observables; values beyond float64 are named in meta, never an inf observable."""
    over = [k for k in keys if not np.isfinite(out[k])]
    if over:
        regime.append({"condition": f"{source} {over} overflow float64", "source": source})
    return {f"theorem_{k}": out[k] for k in keys if k not in over}


def _uniform_parity(problem, W1, b, eps, risk, regime):
    """Lemma B.54's network on the first-step features and Thm B.56's requirements (hinge, eta^(1) of the lemma)."""
    a_t, sets = uniform_parity_second_layer(W1, b, problem.model.subset)
    if problem.loss != "hinge" or problem.lr_first is not None:
        regime.append({"condition": "hinge step at lr_first = 1/(k |xi_{k-1}|) (Lemma B.54)", "value": problem.lr_first,
                       "source": "[Shi24, Lemma B.54]"})
    obs = {"good_network_loss": risk(a_t, problem.loss)[0],
           "good_network_coverage": np.mean([len(S) > 0 for S in sets]),
           "good_network_linf": float(np.abs(a_t).max()), "good_network_l2": float(np.linalg.norm(a_t))}
    if not eps < 0.5:
        regime.append({"condition": "eps < 1/2 (Thm B.56)", "value": eps, "source": "[Shi24, Theorem B.56]"})
        return obs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RegimeWarning)
        out = uniform_parity_requirements(problem.d, problem.k, eps, m=problem.width)
    regime += [{"condition": str(w.message), "source": "uniform_parity_requirements"} for w in caught]
    return obs | _finite_theorem(out, ("m_min", "T", "n_min", "eta"), "uniform_parity_requirements", regime)


def _predict(problem, *, n_train, n_mc, n_test, n_G, B_a2, B_eps, eps, delta):
    r"""Theory of the first step and of the features it gives, at the problem's initialisation.

    .. math:: \mathbf w_i^{(1)} = \eta^{(1)}|\ell'(0)|a_i^{(0)}G(\mathbf w_i^{(0)},b_i),\quad
              a_i^{(1)} = \eta^{(1)}|\ell'(0)|A(\mathbf w_i^{(0)},b_i),\quad
              \frac{|G_{(D,s),\rm Nice}|}{m}\sim\frac{\mathrm{Bin}(m, p/2)}{m}

    Parameters
    ----------
    problem : Problem
    n_train : int
        Training sample of the frozen-feature optimum, >= 2.
    n_mc : int
        Initial neurons drawn for the feature probability, >= 2.
    n_test : int
        Monte Carlo samples of the network risks, >= 2.
    n_G : int or None
        None: the exact population first step; an int: the first step on that many samples (models whose exact
        ``G`` does not reach this d, e.g. structured parity beyond enumeration).
    B_a2 : float or None
        Ball of the frozen optimum (None: unconstrained LP for the hinge; required for "logistic").
    B_eps : float or None
        Lemma B.6 tolerance, > 0; None gives the paper's minimiser at the measured ``p`` when it lies in
        ``(0, B_b)``, else ``B_b/2`` (recorded in ``meta["regime"]``).
    eps, delta : float
        Target excess error and failure probability of the main theorem, in (0, 1).

    Returns
    -------
    Prediction
        Static (``t`` None). ``a1`` (4m,), ``W1`` (4m, d): the first step (the simulation's names);
        ``cos_features`` (4m, F): ``cos(w_i^(1), D_f)`` for the F distinct (feature, sign) pairs of ``g*``;
        ``nice_fraction`` (F,): ``|Nice|/m``; ``p_hat`` (F,) and ``p_ci`` (F, 2): the feature probability with its
        95% Clopper-Pearson interval (``E nice_fraction = p/2`` for the Gaussian init (3.9) with the l2 cone; the
        uniform-parity init mixes bias signs and uses the signed infinity-norm cone); ``opt_gstar``: exact ``L_D(g*)``;
        ``opt_frozen``, ``opt_frozen_gap``: ``OPT_{W^(1), b, B_a2}`` on ``n_train`` samples and its certificate;
        ``opt_frozen_test``, ``opt_frozen_error``: the risk and 0-1 error of that optimum (``n_test`` samples);
        ``good_network_loss``, ``good_network_coverage``, ``good_network_bound``: Lemma B.6's network (risk,
        fraction of g*'s neurons with a non-empty ``Lambda_j``, the B.25 bound with constants 1); for uniform
        parity instead Lemma B.54's network
        (:func:`~popdyn.models.gradient_features.framework.uniform_parity_second_layer`: risk, fraction of the
        ``(sign, bias)`` sets filled, and ``good_network_linf``, ``good_network_l2`` = ``||a~||``, which the lemma
        bounds by ``8k`` and ``8k sqrt(k)``); ``bayes_error`` (XOR; 0 for the parities and linear data, whose labels
        are functions of x); ``theorem_*``: ``m_min, T, n_min, eta, error_bound, error_bound_population`` of
        :func:`~popdyn.models.gradient_features.main_theorem` at the case parameters (orders of magnitude); for
        uniform parity ``m_min, T, n_min, eta`` of Thm B.56
        (:func:`~popdyn.models.gradient_features.bounds.uniform_parity_requirements` at ``eps``, constants 1).

    Notes
    -----
    Regime: exact population step (3.9) for the mixtures, linear data and uniform parity (d odd, k even) and, by
    enumeration, for tiny structured parity; the frozen optimum, the risks and ``p`` are Monte Carlo (seeded;
    standard errors in ``meta``). The case bounds are asymptotic and vacuous at these sizes;
    ``meta["regime"]`` lists their failed conditions, warned once per call as :class:`popdyn.RegimeWarning`.

    References
    ----------
    .. [src] [Shi24, (3.9), Lemmas 3.13-3.14, Definition B.4, Lemmas B.5-B.6, Theorems B.11, B.17, Lemma B.70].

    Examples
    --------
    >>> import popdyn
    >>> pred = popdyn.predict(Problem.xor(d=16, width=8), n_train=200, n_mc=200, n_test=2000)
    >>> pred["W1"].shape, pred["p_hat"].shape
    ((32, 16), (4,))
    """
    owner = "gradient_features.predict"
    model, (a0, _, b), eta1, loss = problem.model, problem.params0, problem.step_size, problem.loss
    gamma, B_G, norm, B_G1 = problem.cone
    D, s = problem.features
    a1, W1 = _first_step(problem, n_G)
    nw = np.linalg.norm(W1, axis=1)
    cos = (W1 @ D.T) / np.where(nw > 0, nw, 1.0)[:, None]
    nice = np.array([len(nice_set(W1, a0, b, Df, sf, gamma, B_G, eta1, loss, norm)) for Df, sf in zip(D, s)])
    tau = problem.b_tilde / problem.sigma_w if problem.b_tilde is not None else 1.0 - 1.0 / problem.k
    law = "sign" if problem.data == "uniform_parity" else "gauss"
    probs = [feature_probability(model, Df, sf, gamma, B_G, tau, n_mc, np.random.default_rng([problem.seed, 2, f]),
                                 law=law, norm=norm, B_G1=B_G1) for f, (Df, sf) in enumerate(zip(D, s))]
    p_hat, p_ci = np.array([q[0] for q in probs]), np.array([q[1] for q in probs])
    opt_g = _gstar_loss(problem)
    X, y = model.sample(n_train, np.random.default_rng([problem.seed, 3]))
    a_opt, opt_v, gap = opt_frozen(X, y, W1, b, B_a2, loss)
    risk = lambda a, kind: population_loss(model, a, W1, b, kind, n_test, problem.seed + 4)
    c = problem.case
    p_use = float(min(p_hat.min(), 1.0)) if p_hat.min() > 0 else float(p_ci[:, 1].min())
    obs = {"a1": a1, "W1": W1, "cos_features": cos, "nice_fraction": nice / problem.width, "p_hat": p_hat,
           "p_ci": p_ci, "opt_gstar": opt_g, "opt_frozen": opt_v, "opt_frozen_gap": gap,
           "opt_frozen_test": risk(a_opt, loss)[0], "opt_frozen_error": risk(a_opt, "error")[0],
           "bayes_error": model.bayes_error() if problem.data == "xor" else 0.0}
    regime, scales = [], None
    if norm == "l2":                          # Lemma B.6 and Thm 3.12 are the l2 framework (uniform parity: B.54)
        args = (p_use, B_G, c["B_b"], c["Bx1"], problem.width, c["r"], c["B_a1"], c["B_a2"], problem.b_tilde)
        scales = good_network_scales(*args, B_eps=B_eps)
        if not scales["B_eps"] < c["B_b"]:
            regime.append({"condition": "B_eps < B_b (Lemma B.6)", "value": scales["B_eps"], "bound": c["B_b"],
                           "source": "[Shi24, Lemma B.6]"})
            if B_eps is None:                 # the paper's minimiser is outside the lemma: the middle of (0, B_b)
                scales = good_network_scales(*args, B_eps=c["B_b"] / 2.0)
        a_t, sets = good_second_layer(W1, a0, b, problem.gstar, gamma, B_G, scales["B_eps"], scales["eps_a"], eta1,
                                      loss, signs=problem.gstar_signs)
        obs |= {"good_network_loss": risk(a_t, loss)[0], "good_network_coverage": np.mean([len(S) > 0 for S in sets]),
                "good_network_bound": good_network_bound(p_use, gamma, B_G, c["r"], c["B_a1"], c["B_b"], c["Bx1"],
                                                         problem.width, B_eps=scales["B_eps"], OPT=opt_g)}
        obs |= _theorem(problem, eps, delta, regime)
    else:                                     # uniform parity: Lemma B.54 / Thm B.56 (infinity-norm features)
        obs |= _uniform_parity(problem, W1, b, eps, risk, regime)
    if regime:
        warnings.warn(f"{owner}: outside the regime of the bounds ({len(regime)} conditions, see meta['regime']): "
                      + "; ".join(str(r["condition"]) for r in regime), RegimeWarning, stacklevel=3)
    meta = dict(source=_SRC, cone={"gamma": gamma, "B_G": B_G, "norm": norm, "B_G1": B_G1}, features_sign=s.tolist(),
                b_tilde=problem.b_tilde, lr_first=eta1, sigma_a=problem.init_scale, p_used=p_use, scales=scales,
                regime=regime)
    return Prediction(t=None, observables=obs, status=0,
                      message="exact first step; Monte Carlo p, risks and frozen optimum", meta=meta)


register(Problem, name="gradient_features", predict=_predict, simulate="popdyn.sim.gradient_features:simulate",
         summary="the exact first gradient step from the symmetric init, its nice neurons and feature probability, "
                 "the frozen-feature optimum, the good network and the main theorem's sizes")
