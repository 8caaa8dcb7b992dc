"""The soft-committee teacher-student problem of online SGD (Saad & Solla 1995; Goldt et al. 2019)."""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ... import activations
from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, validate

__all__ = ["Problem"]

_SAAD_SOLLA_R = 1 / np.sqrt(2)          # g(x) = erf(x / sqrt 2): popdyn's erf rescaled by 1/sqrt(2)


@dataclass(frozen=True, eq=False)
class Problem:
    r"""Online SGD of a soft committee machine (K student neurons) on a teacher of M neurons.

    .. math:: \hat y = \sum_{k=1}^K v_k\,g(\lambda_k),\quad y = \sum_{n=1}^M v^*_n\,g(\nu_n) + \sigma\zeta,\quad
              \lambda_k = J_k\cdot x,\ \nu_n = B_n\cdot x,\ x\sim N(0, I_d)

    SGD on :math:`(\hat y - y)^2/2` with step :math:`\eta/d` on J and :math:`\eta_v/d` on v (and weight decay
    :math:`\eta\,\mathrm{wd}/d` on J); time :math:`t = \text{steps}/d`; order parameters
    :math:`Q = JJ^T`, :math:`R = JB^T`, :math:`T = BB^T`.

    Parameters
    ----------
    K : int
        Student hidden units, >= 1.
    M : int
        Teacher hidden units, >= 1.
    activation : str or Activation
        g, for both networks; a name, a rescaled name such as ``"erf(r=0.7071067811865475)"``, or an
        ``Activation``. Saad & Solla's :math:`\mathrm{erf}(x/\sqrt2)` is :meth:`saad_solla`'s default.
    T : ndarray of shape (M, M) or None
        Teacher overlaps :math:`BB^T`, symmetric PSD; None for the identity.
    v_star : ndarray of shape (M,) or None
        Teacher second layer; None for ones.
    eta : float
        First-layer learning rate, > 0.
    eta_v : float
        Second-layer learning rate, >= 0 (0: v stays at its initial value).
    sigma : float
        Output noise standard deviation, >= 0.
    order : {1, 2}
        2: the full ODE; 1: the small-eta ODE without the :math:`\eta^2` term.
    wd : float
        Weight decay of the first layer, >= 0.

    Notes
    -----
    Regime: the ODE is the d -> infinity limit of online SGD with fresh samples, Gaussian inputs.

    References
    ----------
    .. [src] Saad & Solla 1995 (PRE 52, 4225) eqs. (1)-(4); Goldt et al. 2019 (arXiv 1906.08632) eqs. (1)-(5);
       issue 14 §1.
    """
    K: int = 2
    M: int = 2
    activation: object = "erf"
    T: object = None
    v_star: object = None
    eta: float = 0.5
    eta_v: float = 0.0
    sigma: float = 0.0
    order: int = 2
    wd: float = 0.0

    _constraints = {
        "K": Integer(1),
        "M": Integer(1),
        "eta": Interval(0, np.inf, closed="neither"),
        "eta_v": Interval(0, np.inf, closed="left"),
        "sigma": Interval(0, np.inf, closed="left"),
        "order": Options((1, 2)),
        "wd": Interval(0, np.inf, closed="left"),
    }

    def __post_init__(self):
        validate(self)
        owner = "committee.Problem"
        object.__setattr__(self, "activation", activations.get(self.activation))
        M = self.M
        T = np.eye(M) if self.T is None else FiniteArray(2, (M, M)).convert(owner, "T", self.T)
        v_star = np.ones(M) if self.v_star is None else FiniteArray(1, (M,)).convert(owner, "v_star", self.v_star)
        if not np.allclose(T, T.T, rtol=0, atol=1e-12 * (1 + np.abs(T).max())):
            raise InvalidParameterError(
                f"The 'T' parameter of {owner} must be symmetric (T = B B^T). Got {T!r} instead.")
        if np.linalg.eigvalsh(T)[0] < -1e-10 * (1 + np.abs(T).max()):
            raise InvalidParameterError(
                f"The 'T' parameter of {owner} must be positive semi-definite (T = B B^T). Got {T!r} instead.")
        for name, a in (("T", T), ("v_star", v_star)):
            a = np.array(a, dtype=np.float64)
            a.setflags(write=False)
            object.__setattr__(self, name, a)

    def __repr__(self):
        def r(name):
            x = getattr(self, name)
            if name == "activation":
                return repr(x.name)
            if isinstance(x, np.ndarray):
                return "np.array(" + np.array2string(x, separator=", ", precision=17, max_line_width=10**6) + ")"
            return repr(x)
        return "committee.Problem(" + ", ".join(f"{f.name}={r(f.name)}" for f in fields(self)) + ")"

    @classmethod
    def saad_solla(cls, K=2, M=2, eta=0.5, eta_v=0.0, sigma=0.0, order=2, wd=0.0):
        r"""Saad & Solla's setting: :math:`g(x) = \mathrm{erf}(x/\sqrt2)`, :math:`T = I_M`, :math:`v^* = 1`.

        .. math:: g(x) = \mathrm{erf}(x/\sqrt2),\qquad T = I_M,\qquad v^*_n = 1

        Parameters
        ----------
        K : int
            Student hidden units, >= 1.
        M : int
            Teacher hidden units, >= 1.
        eta : float
            First-layer learning rate, > 0.
        eta_v : float
            Second-layer learning rate, >= 0.
        sigma : float
            Output noise, >= 0.
        order : {1, 2}
            ODE order in eta.
        wd : float
            Weight decay, >= 0.

        Returns
        -------
        Problem

        References
        ----------
        .. [src] Saad & Solla 1995 §II; Goldt et al. 2019 §2.
        """
        return cls(K=K, M=M, activation=activations.get("erf").rescaled(_SAAD_SOLLA_R), eta=eta, eta_v=eta_v,
                   sigma=sigma, order=order, wd=wd)

    @property
    def trains_v(self):
        """True when the second layer trains (eta_v > 0)."""
        return self.eta_v > 0
