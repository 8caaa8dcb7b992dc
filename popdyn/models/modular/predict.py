"""``popdyn.predict`` for k-input modular addition: the static max-margin theory ([Shi24] Ch. 4, App. C;
docs/modular.md), registered for both problem classes.

- :class:`~popdyn.models.modular.Problem` (the network (4.2)): gamma*, the max-margin network's normalized margin
  and the theory values of the :func:`~popdyn.models.modular.diagnostics`; simulated by
  :mod:`popdyn.sim.modular.network`.
- :class:`~popdyn.models.modular.TransformerProblem`: what the theory of the network (4.2) says of the transformer's
  MLP neurons read as that network, and of its attention heads (Fig. 4.3); simulated by
  :mod:`popdyn.sim.modular.transformer`.

Both theories are static (``t = None``); ``popdyn.compare`` holds them against a simulation's last recorded step.
"""
from __future__ import annotations

import numpy as np

from ...api import register
from ...results import Prediction
from .diagnostics import diagnostics, fourier_diagnostics
from .fourier import construction_margin, max_margin_network
from .problem import Problem, TransformerProblem

__all__ = []

_SRC = "[Shi24, Lemma 4.7, Theorem 4.9, Lemmas C.18-C.20]"
_SRC_TRANSFORMER = "[Shi24, Theorem 4.9, Fig. 4.3, Lemma C.20]"
_SINGLE_FREQ = 0.9   # a neuron is single-frequency above this max normalized power (as the simulations count it)


def _predict(problem, *, method):
    r"""Static theory of the k-input modular addition network: gamma*, the max-margin network, its diagnostics.

    .. math:: \gamma^* = \frac{2\,k!}{(2k+2)^{(k+1)/2}(p-1)p^{(k-1)/2}},\qquad R = 1,\quad
              \text{power} = 1,\quad \text{coverage} = 1,\quad \text{phase residual} = 0

    Parameters
    ----------
    problem : Problem
    method : {"analytic", "network"}
        "analytic": the construction's margin from :func:`construction_margin` (with ``problem.convention``);
        "network": build :func:`max_margin_network` and measure everything with the kernels
        (``O(p^k m p)``; the convention then has no effect: the network is what it is).

    Returns
    -------
    Prediction
        ``t = None``; scalar observables ``normalized_margin`` (``h / ||theta||_{2,k+1}^{k+1}`` of the max-margin
        network, Lemma C.18's construction), ``margin_ratio`` (the same over gamma*), ``max_power`` (median over
        neurons of the max normalized one-sided power), ``single_freq_fraction`` (neurons above 0.9),
        ``coverage`` (frequencies used), as the simulation names them; and ``gamma_star``, ``weighted_ratio``,
        ``dft_ratio``, ``phase_residual``, ``balance``, ``width``, ``amplitude``.

    Notes
    -----
    Regime: the max-margin (lambda -> 0) limit on the full D_p (Lemma 4.7), width >= ``2^(2k-2)(p-1)``.
    There are no dynamics in the paper: finite training approaches these values from below (R < 1, docs/modular.md);
    ``popdyn.compare`` holds them against the simulation's last recorded step.

    References
    ----------
    .. [src] [Shi24, Lemma 4.7, Theorem 4.9, Lemma C.18, Lemmas C.19-C.20].

    Examples
    --------
    >>> import popdyn
    >>> pred = popdyn.predict(Problem(7, 3, convention="paper"))
    >>> round(float(pred["margin_ratio"]), 12)  # the paper's "0 otherwise": (p - 1)/p
    0.857142857143
    """
    p, k, gamma = problem.p, problem.k, problem.gamma_star
    if method == "network":
        U, W = max_margin_network(p, k)
        d = diagnostics(U, W)
        obs = {name: d[name] for name in ("normalized_margin", "margin_ratio", "weighted_ratio", "dft_ratio",
                                          "max_power", "coverage", "phase_residual", "balance")}
        obs["single_freq_fraction"] = float(np.mean(fourier_diagnostics(U, W)["max_power"] > _SINGLE_FREQ))
    else:
        cm = construction_margin(p, k, convention=problem.convention)
        obs = {"normalized_margin": cm, "margin_ratio": cm / gamma, "weighted_ratio": 1.0, "dft_ratio": 1.0,
               "max_power": 1.0, "single_freq_fraction": 1.0, "coverage": 1.0, "phase_residual": 0.0,
               "balance": 1.0}
    obs.update(gamma_star=gamma, width=float(problem.width), amplitude=problem.amplitude)
    return Prediction(t=None, observables=obs, status=0, message="static max-margin theory", meta={"source": _SRC})


def _predict_transformer(problem):
    r"""What the max-margin theory says of a trained transformer: single-frequency MLP neurons and 2-D cosine heads.

    .. math:: \mathrm{max\_power} = 1,\qquad \mathrm{single\_freq\_fraction} = 1,\qquad
              \mathrm{additive\_fraction} = 1,\qquad \mathrm{attention\_power} = 1

    Parameters
    ----------
    problem : TransformerProblem

    Returns
    -------
    Prediction
        ``t = None``; scalars, named as the simulation's: ``max_power`` (median over MLP neurons of the one-sided max
        normalized power of their maps, Lemma 4.10: a max-margin neuron has one frequency), ``single_freq_fraction``
        (every neuron), ``additive_fraction`` (median additive share of the neurons' pre-activations: 1, the MLP is
        the network (4.2) when the read-out attends uniformly), ``attention_power`` (median over first-layer heads
        of the share of the centred attention matrix on one frequency, Fig. 4.3).

    Notes
    -----
    Regime: the max-margin theory is for the one-hidden-layer network (4.2) (Thm 4.9); for the transformer the
    paper's statements are empirical ("similar results", Section 4.5), and these are the values the (4.2) theory
    gives its neurons. The theory's coverage (every frequency used) is a statement about the network (4.2) at the
    construction width and is not predicted here: a trained transformer uses a few frequencies.

    References
    ----------
    .. [src] [Shi24, Theorem 4.9, Section 4.5 (Fig. 4.3), Lemma C.20].
    """
    obs = {"max_power": 1.0, "single_freq_fraction": 1.0, "additive_fraction": 1.0, "attention_power": 1.0}
    return Prediction(t=None, observables=obs, status=0, message="single-frequency circuit (Thm 4.9, Fig. 4.3)",
                      meta={"source": _SRC_TRANSFORMER})


register(Problem, name="modular", predict=_predict, simulate="popdyn.sim.modular.network:simulate",
         summary="max normalized margin gamma*, the max-margin network's margin and single-frequency Fourier neurons")
register(TransformerProblem, name="modular.transformer", predict=_predict_transformer,
         simulate="popdyn.sim.modular.transformer:simulate",
         summary="the max-margin theory's single-frequency neurons and one-frequency attention heads in a transformer")
