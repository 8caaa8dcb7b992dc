"""``popdyn.predict`` for k-input modular addition: the static max-margin theory (seed 001 Ch. 4, App. C;
specs/modular_and_icl.md §A.2).

``predict(problem, *, method="analytic"|"network")`` registered for :class:`~popdyn.models.modular.Problem`:
gamma*, the construction's margin and the theory values of the :func:`~popdyn.models.modular.diagnostics`.
"""
from __future__ import annotations

from ..._validate import Options, check
from ...api import predict
from ...results import Prediction
from .diagnostics import diagnostics
from .fourier import construction_margin, max_margin_network
from .problem import Problem

__all__ = []

_SRC = "seed 001 L1170-1198, L8388-8447, L8455-8620; specs/modular_and_icl.md §A.2"


@predict.register(Problem)
def _predict(problem, *, method="analytic"):
    r"""Static theory of the k-input modular addition network: gamma*, the construction, the diagnostics.

    .. math:: \gamma^* = \frac{2\,k!}{(2k+2)^{(k+1)/2}(p-1)p^{(k-1)/2}},\qquad R = 1,\quad
              \text{power} = 1,\quad \text{coverage} = 1,\quad \text{phase residual} = 0

    Parameters
    ----------
    problem : Problem
    method : {"analytic", "network"}
        "analytic": construction margin from :func:`construction_margin` (with ``problem.convention``);
        "network": build :func:`max_margin_network` and measure everything with the kernels
        (``O(p^k m p)``; the convention then has no effect: the network is what it is).

    Returns
    -------
    Prediction
        ``t = None``; scalar observables ``gamma_star``, ``construction_margin``, ``margin_ratio``,
        ``weighted_ratio``, ``dft_ratio``, ``max_power``, ``coverage``, ``phase_residual``, ``balance``,
        ``width``, ``amplitude``. Trained networks are compared through :func:`diagnostics` names.

    Notes
    -----
    Regime: the max-margin (lambda -> 0) limit on the full D_p (Lemma 4.7), width >= ``2^(2k-2)(p-1)``.
    There are no dynamics in the paper: finite training is expected below R = 1 (spec §A.3).

    References
    ----------
    .. [src] seed 001 L1170-1198 (Lemma 4.7, Thm 4.9), L8388-8447, L8455-8620; specs/modular_and_icl.md §A.2.

    Examples
    --------
    >>> import popdyn
    >>> pred = popdyn.predict(Problem(7, 3, convention="paper"))
    >>> round(float(pred["margin_ratio"]), 12)  # the paper's "0 otherwise": (p - 1)/p
    0.857142857143
    """
    method = check("modular.predict", "method", method, Options(("analytic", "network")))
    p, k, gamma = problem.p, problem.k, problem.gamma_star
    if method == "network":
        d = diagnostics(*max_margin_network(p, k))
        obs = {name: d[name] for name in ("margin_ratio", "weighted_ratio", "dft_ratio", "max_power",
                                          "coverage", "phase_residual", "balance")}
        obs["construction_margin"] = d["normalized_margin"]
    else:
        cm = construction_margin(p, k, convention=problem.convention)
        obs = {"construction_margin": cm, "margin_ratio": cm / gamma, "weighted_ratio": 1.0, "dft_ratio": 1.0,
               "max_power": 1.0, "coverage": 1.0, "phase_residual": 0.0, "balance": 1.0}
    obs.update(gamma_star=gamma, width=float(problem.width), amplitude=problem.amplitude)
    meta = dict(problem=repr(problem), options={"method": method}, source=_SRC)
    return Prediction(t=None, observables=obs, status=0, message="static max-margin theory", meta=meta)
