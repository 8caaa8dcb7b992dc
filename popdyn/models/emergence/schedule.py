r"""The three-stage training schedule of [Shi22] (Lemma 23, Thm 26, Thm 34).

Step 1 kills the initial first layer (``lambda_w = 1/(2 eta)``), step 2 (``eta = 1``) kills first and second
layers, steps ``2 < t <= T`` are small-step GD with ``sigma_xi = 0``. The lemma chain and the theorem disagree
on ``eta^(1)`` and ``sigma_xi`` (erratum 4): ``variant="lemma23"`` is the default, ``"thm26"`` the theorem's
values, ``"general"`` App. F's ``eta^(1)`` with the class-weighted loss in steps 1-2.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._validate import Interval, Options, as_int, check
from .network import _gamma

__all__ = ["Step", "theory_schedule"]


@dataclass(frozen=True)
class Step:
    """One update ``theta <- theta - eta (grad L(.; s) + grad R(.; lam_a, lam_w))`` (biases unregularised).

    ``weighted`` marks the class-weighted hinge ``E[alpha_y l]`` of App. F (steps 1-2 of ``variant="general"``).
    """
    eta: float
    lam_a: float
    lam_w: float
    s: float
    weighted: bool = False


_VARIANTS = ("lemma23", "thm26", "general")


def theory_schedule(model, width, steps=None, variant="lemma23", lam=None, lr=None):
    r"""The paper's hyperparameters, one :class:`Step` per update ``t = 1..steps`` (T in the paper).

    .. math:: t=1:\ \eta^{(1)} = \frac{\gamma^2\tilde\sigma}{k m^3},\ \lambda_w = \frac1{2\eta^{(1)}},\ \lambda_a = 0,
              \ \sigma_\xi = k^{-3/2};\qquad t=2:\ \eta = 1,\ \lambda_a=\lambda_w=\tfrac12,\ \sigma_\xi = k^{-3/2};

    .. math:: 2<t\le T:\ \eta = \frac{k^2}{T m^{1/3}},\ \lambda_a=\lambda_w=\lambda\le\frac{k^3}{\tilde\sigma m^{1/3}},
              \ \sigma_\xi = 0,\ T = m^{4/3}.

    ``variant="thm26"``: ``eta^(1) = gamma^2 sigma~^2/(k m^3)`` and ``sigma_xi = k^-2`` in steps 1-2;
    ``"general"`` (Thm 34): ``eta^(1) = gamma^2 p_min sigma~/(k m^3)`` and the class-weighted loss in steps 1-2.

    Parameters
    ----------
    model : PatternModel
    width : int
        Half width (``2 width`` neurons), ``width >= 1``; m in the paper.
    steps : int or None
        Total number of steps T, ``>= 2``; None gives the theorem's ``ceil(m^{4/3})``.
    variant : {"lemma23", "thm26", "general"}
    lam : float or None
        Stage-3 weight decay ``lambda >= 0``; None gives the theorem's largest value ``k^3/(sigma~ m^{1/3})``.
    lr : float or None
        Stage-3 step size eta ``> 0``; None gives ``k^2/(T m^{1/3})``.

    Returns
    -------
    list of Step
        ``steps`` steps.

    Notes
    -----
    Regime: the theorems' (``m >= max(k^4, D)``, ``gamma > 0``); the values are those of the proofs, whose
    constants are unspecified, so at small ``k, m`` they are a convention, not a guarantee.

    References
    ----------
    .. [src] [Shi22, Lemma 23, Theorem 26, Theorem 34, Section 5.1 (classifier learning stage)]; Lemma 23 vs
       Theorem 26 in docs/errata.md.

    Examples
    --------
    >>> from popdyn.models.emergence.data import parity_mixture
    >>> sched = theory_schedule(parity_mixture(100, 5, 0.5), 300, steps=10)
    >>> (len(sched), sched[1].eta, sched[1].lam_w, sched[2].s)
    (10, 1.0, 0.5, 0.0)
    """
    owner = "emergence.theory_schedule"
    m = as_int(owner, "width", width, 1)
    variant = check(owner, "variant", variant, Options(_VARIANTS))
    T = int(np.ceil(m ** (4.0 / 3.0))) if steps is None else as_int(owner, "steps", steps, 2)
    mom = model.moments()
    k, sigt, gamma = model.k, mom.sigt, _gamma(mom)
    lam = k ** 3 / (sigt * m ** (1.0 / 3.0)) if lam is None else check(owner, "lam", lam, Interval(0.0, np.inf, "left"))
    eta3 = (k ** 2 / (T * m ** (1.0 / 3.0)) if lr is None
            else check(owner, "lr", lr, Interval(0.0, np.inf, "neither")))
    if variant == "thm26":
        eta1, s12 = gamma ** 2 * sigt ** 2 / (k * m ** 3), k ** -2.0
    else:
        p_min = min(mom.Ey + 1.0, 1.0 - mom.Ey) / 2.0 if variant == "general" else 1.0
        eta1, s12 = gamma ** 2 * p_min * sigt / (k * m ** 3), k ** -1.5
    weighted = variant == "general"
    return ([Step(eta1, 0.0, 1.0 / (2.0 * eta1), s12, weighted), Step(1.0, 0.5, 0.5, s12, weighted)]
            + [Step(eta3, lam, lam, 0.0)] * (T - 2))
