"""The k-input modular addition problem (dissertation 001, Ch. 4): (a_1 + ... + a_k) mod p, p an odd prime."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._validate import Integer, InvalidParameterError, Options, as_int, validate

__all__ = ["Problem", "max_margin", "construction_width"]

#: (p, k) of the paper's experiments (seed 001 L1164, L8701-8735, L1237; specs/modular_and_icl.md §A.3).
_SETTINGS = {"fig4.1": (47, 4), "figC.1": (97, 3), "figC.3": (23, 5), "fig4.3": (31, 4), "figC.5": (61, 3),
             "figC.6": (17, 5), "cpu": (11, 3)}


def _is_odd_prime(p):
    return p >= 3 and p % 2 == 1 and all(p % q for q in range(3, math.isqrt(p) + 1, 2))


def _check_pk(owner, p, k):
    """``p`` as an odd prime >= 3 and ``k`` as an int >= 2, or InvalidParameterError naming the parameter."""
    p, k = as_int(owner, "p", p, low=3), as_int(owner, "k", k, low=2)
    if not _is_odd_prime(p):
        raise InvalidParameterError(f"The 'p' parameter of {owner} must be an odd prime >= 3. Got {p!r} instead.")
    return p, k


class Task:
    """The task both model classes train on: k-input addition mod p (the data set D_p of all p^k inputs)."""

    @property
    def n_inputs(self):
        """Size ``p^k`` of the full data set D_p."""
        return self.p ** self.k

    @property
    def n_frequencies(self):
        """Number ``(p-1)/2`` of non-zero frequencies up to sign."""
        return (self.p - 1) // 2


@dataclass(frozen=True, eq=False)
class Problem(Task):
    r"""k-input modular addition on the full data set ``D_p = Z_p^k`` with labels ``(a_1+...+a_k) mod p``.

    .. math:: f(\theta, \mathbf a)[c] = \sum_{i=1}^m \Big(\sum_{j=1}^k u_{i,j}(a_j)\Big)^k w_i(c),\qquad
              \|\theta\|_{2,k+1} = \Big(\sum_i \|\theta_i\|_2^{k+1}\Big)^{1/(k+1)}

    Residues are ``0..p-1`` (the paper's ``[p]``, spec §A.4 item 8). A network is a pair of arrays
    ``U`` of shape (m, k, p) and ``W`` of shape (m, p); the width m is not part of the problem.

    Parameters
    ----------
    p : int
        Modulus, an odd prime >= 3 (the proofs need p odd, seed 001 L8119).
    k : int
        Number of summands, >= 2; the activation is ``x^k``.
    convention : {"corrected", "paper"}
        Wrong-class logit of the explicit construction: ``-1/2`` per unit (corrected) or the paper's
        ``0`` (L8380, L8442), which would give the margin ``(p - 1)/2`` instead of ``p/2``.

    References
    ----------
    .. [src] seed 001 L1101-1131 (setting, Defs. 4.1-4.4), L7778 (Def. C.2); specs/modular_and_icl.md §A.1.
    """
    p: int
    k: int
    convention: str = "corrected"

    _constraints = {
        "p": Integer(3),
        "k": Integer(2),
        "convention": Options(("corrected", "paper")),
    }

    def __post_init__(self):
        validate(self)
        _check_pk("modular.Problem", self.p, self.k)

    def __repr__(self):
        return f"modular.Problem(p={self.p!r}, k={self.k!r}, convention={self.convention!r})"

    # ---- derived quantities -------------------------------------------------------------------
    @property
    def gamma_star(self):
        """Max normalized margin gamma*(p, k) (Thm 4.9)."""
        return max_margin(self.p, self.k)

    @property
    def width(self):
        """Width ``2^(2k-2) (p-1)`` of the explicit max-margin construction (Lemma C.18)."""
        return construction_width(self.p, self.k)

    @property
    def amplitude(self):
        """Amplitude ``sqrt(2/((k+1) p))`` of each component of an optimal unit neuron (eq. C.16)."""
        return math.sqrt(2.0 / ((self.k + 1) * self.p))

    # ---- constructors -------------------------------------------------------------------------
    @classmethod
    def setting(cls, name="cpu", *, convention="corrected"):
        """A setting of the paper's experiments: "fig4.1" (47, 4), "figC.1" (97, 3), "figC.3" (23, 5),
        "fig4.3" (31, 4), "figC.5" (61, 3), "figC.6" (17, 5), or "cpu" (11, 3), the CPU analogue of §A.3."""
        if name not in _SETTINGS:
            raise InvalidParameterError(
                f"The 'name' parameter of modular.Problem.setting must be one of {sorted(_SETTINGS)}. Got {name!r} instead.")
        return cls(*_SETTINGS[name], convention)


def max_margin(p, k):
    r"""Maximum normalized margin ``gamma*`` of the k-input modular addition network (Theorem 4.9).

    .. math:: \gamma^*(p, k) = \max_{\|\theta\|_{2,k+1} \le 1} h(\theta)
              = \frac{2\,k!}{(2k+2)^{(k+1)/2}\,(p-1)\,p^{(k-1)/2}}

    Parameters
    ----------
    p : int
        Odd prime modulus.
    k : int
        Number of summands, >= 2.

    Returns
    -------
    float
        gamma*, also the maximum of the single-neuron class-weighted margin on the unit ball.

    Notes
    -----
    Regime: full data set D_p, any width ``m >= 2^(2k-2)(p-1)``; the max-margin (lambda -> 0) limit of the
    regularised cross-entropy (Lemma 4.7), with no rate.

    References
    ----------
    .. [src] seed 001 L1182-1194 (Thm 4.9), L8083-8180 (Lemma C.15), L8640-8663 (Thm C.22);
       specs/modular_and_icl.md §A.2.3.

    Examples
    --------
    >>> p = 11
    >>> bool(abs(max_margin(p, 3) - 3 / (16 * p * (p - 1))) < 1e-18)  # k = 3: Lemma C.11
    True
    """
    p, k = _check_pk("modular.max_margin", p, k)
    return 2.0 * math.factorial(k) / ((2 * k + 2) ** ((k + 1) / 2) * (p - 1) * p ** ((k - 1) / 2))


def construction_width(p, k):
    r"""Width of the explicit max-margin network (Lemma C.18).

    .. math:: m = \frac{p-1}{2}\, 2^k\, 2^{k-1} = 2^{2k-2}(p-1)

    Parameters
    ----------
    p : int
        Odd prime modulus.
    k : int
        Number of summands, >= 2.

    Returns
    -------
    int

    Notes
    -----
    Regime: a sufficient width, "may not be the tightest" (L1198).

    References
    ----------
    .. [src] seed 001 L1196-1198, L8388-8447; specs/modular_and_icl.md §A.2.5.

    Examples
    --------
    >>> construction_width(47, 4)  # Fig. 4.1
    2944
    """
    p, k = _check_pk("modular.construction_width", p, k)
    return 2 ** (2 * k - 2) * (p - 1)
