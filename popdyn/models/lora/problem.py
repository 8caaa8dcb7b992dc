"""The LoRA fine-tuning problem (Dayi & Chen, seed 003): base features G, head lam, teacher c, student c_hat."""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from ... import activations
from ..._validate import FiniteArray, Interval, InvalidParameterError, Options, as_int, validate

__all__ = ["Problem", "overlaps"]

_cache = weakref.WeakKeyDictionary()  # problem -> {key: value}: B0/B1 tables, splines, grid nodes, regime pieces
_UNIT_TOL = 1e-10  # 1e-10: unit-norm check for c, c_hat, diag(G); far above float64 rounding


@dataclass(frozen=True, eq=False)
class Problem:
    r"""Population LoRA problem: teacher ``lam^T s(V x)``, student ``lam^T s(V_hat x)``, x ~ N(0, I_d).

    .. math:: v_i = \frac{w_i + \xi c_i u}{r_i},\quad \hat v_j = \frac{w_j + \xi \hat c_j \hat u}{\hat r_j},
              \quad r_i^2 = 1 + \xi^2 c_i^2

    Under A1-A2 (unit ``w_i``, ``u, u_hat`` orthogonal to span W) every population quantity depends on
    W only through its Gram matrix ``G = W W^T``, so the problem carries ``G`` and no dimension d.

    Parameters
    ----------
    G : ndarray of shape (k, k)
        Gram matrix of the pretrained features: symmetric, PSD, unit diagonal (A1).
    lam : ndarray of shape (k,)
        Frozen second layer.
    c : ndarray of shape (k,)
        Teacher direction, unit norm (A3 takes entries +-1/sqrt(k)).
    c_hat : ndarray of shape (k,)
        Frozen student direction, unit norm.
    xi : float
        Scale of the rank-one update ``Delta = xi c u^T``, in (0, inf).
    activation : str or Activation
        sigma; a name for :func:`popdyn.activations.get` or an ``Activation``.
    convention : {"N1", "N0"}
        "N1": unit-normalised neurons (all proofs, Prop. 4, seed 003 L752-756). "N0": unnormalised
        neurons ``s(<w_i + xi c_i u, x>)`` (main text, L62-66), which equals N1 with ``s(r z)``; it
        needs quantised c, c_hat so that every ``r_i`` is equal (specs/lora.md §1.2).

    References
    ----------
    .. [src] seed 003 L45-98 (setting, A1-A4), L752-767 (N1); specs/lora.md §1.
    """
    G: np.ndarray
    lam: np.ndarray
    c: np.ndarray
    c_hat: np.ndarray
    xi: float
    activation: object = "relu"
    convention: str = "N1"

    _constraints = {
        "G": FiniteArray(2),
        "lam": FiniteArray(1),
        "c": FiniteArray(1),
        "c_hat": FiniteArray(1),
        "xi": Interval(0, np.inf, closed="neither"),
        "convention": Options(("N1", "N0")),
    }

    def __post_init__(self):
        validate(self)
        object.__setattr__(self, "activation", activations.get(self.activation))
        k, owner = self.k, "lora.Problem"
        for name in ("G", "c", "c_hat"):
            a = getattr(self, name)
            if a.shape[0] != k or (name == "G" and a.shape != (k, k)):
                raise InvalidParameterError(
                    f"The {name!r} parameter of {owner} must have shape {(k, k) if name == 'G' else (k,)} "
                    f"(k = len(lam) = {k}). Got shape {a.shape} instead.")
        for name in ("c", "c_hat"):
            nrm = float(np.linalg.norm(getattr(self, name)))
            if not abs(nrm - 1) <= _UNIT_TOL:
                raise InvalidParameterError(
                    f"The {name!r} parameter of {owner} must be a unit vector (||{name}|| = 1). "
                    f"Got norm {nrm!r} instead.")
        G = self.G
        if not (np.allclose(G, G.T, atol=_UNIT_TOL) and np.allclose(np.diag(G), 1, atol=_UNIT_TOL)):
            raise InvalidParameterError(
                f"The 'G' parameter of {owner} must be symmetric with unit diagonal (A1: ||w_i|| = 1). Got {G!r} instead.")
        if np.linalg.eigvalsh((G + G.T) / 2)[0] < -1e-8 * k:  # 1e-8 k: eigvalsh rounding of a Gram matrix
            raise InvalidParameterError(f"The 'G' parameter of {owner} must be positive semi-definite (a Gram matrix).")
        if self.convention == "N0" and not self.quantised:
            raise InvalidParameterError(
                f"The 'convention' parameter of {owner} may be 'N0' only with c, c_hat in {{+-1/sqrt(k)}}^k. Got 'N0' instead.")

    def __repr__(self):
        f = lambda a: repr(a.tolist())  # shortest round-trip repr of each float; 10x array2string(precision=17)
        return (f"lora.Problem(G=np.array({f(self.G)}), lam=np.array({f(self.lam)}), c=np.array({f(self.c)}), "
                f"c_hat=np.array({f(self.c_hat)}), xi={self.xi!r}, activation={self.activation.name!r}, "
                f"convention={self.convention!r})")

    # ---- derived quantities -------------------------------------------------------------------
    @property
    def k(self):
        """Width k (number of neurons)."""
        return self.lam.shape[0]

    @property
    def quantised(self):
        """True when c and c_hat lie in {+-1/sqrt(k)}^k (Assumption A3)."""
        q = 1 / np.sqrt(self.k)
        return bool(np.all(np.abs(np.abs(self.c) - q) <= _UNIT_TOL) and np.all(np.abs(np.abs(self.c_hat) - q) <= _UNIT_TOL))

    @property
    def r(self):
        """Per-neuron teacher norms ``r_i = sqrt(1 + xi^2 c_i^2)`` (all ``sqrt(1 + xi^2/k)`` under A3)."""
        return np.sqrt(1 + self.xi**2 * self.c**2)

    @property
    def r_hat(self):
        """Per-neuron student norms ``sqrt(1 + xi^2 c_hat_j^2)``."""
        return np.sqrt(1 + self.xi**2 * self.c_hat**2)

    @property
    def sigma(self):
        """The activation of the N1 formulas: sigma itself (N1), or ``sigma(r z)`` (N0)."""
        if self.convention == "N0":
            return self.activation.rescaled(float(np.sqrt(1 + self.xi**2 / self.k)))
        return self.activation

    # ---- constructors -------------------------------------------------------------------------
    @classmethod
    def orthonormal(cls, k, xi, activation="relu", seed=0, *, lam=None, convention="N1"):
        """Orthonormal features (A4, G = I_k), c and c_hat drawn from Unif{+-1/sqrt(k)}^k (A3).

        ``lam`` defaults to all ones. The same ``seed`` gives the same problem.
        """
        k = as_int("lora.Problem.orthonormal", "k", k, low=1)
        rng = np.random.default_rng(seed)
        c, c_hat = rng.choice([-1.0, 1.0], size=(2, k)) / np.sqrt(k)
        lam = np.ones(k) if lam is None else lam
        return cls(np.eye(k), lam, c, c_hat, xi, activation, convention)

    @classmethod
    def random_features(cls, k, xi, activation="relu", seed=0, *, d_w=None, lam=None, convention="N1"):
        """Features w_i uniform on the sphere of R^{d_w} (d_w = 4k by default): near-orthogonal G."""
        k = as_int("lora.Problem.random_features", "k", k, low=1)
        d_w = 4 * k if d_w is None else as_int("lora.Problem.random_features", "d_w", d_w, low=1)
        rng = np.random.default_rng(seed)
        W = rng.standard_normal((k, d_w))
        W /= np.linalg.norm(W, axis=1, keepdims=True)
        G = W @ W.T
        np.fill_diagonal(G, 1.0)
        c, c_hat = rng.choice([-1.0, 1.0], size=(2, k)) / np.sqrt(k)
        lam = np.ones(k) if lam is None else lam
        return cls(G, lam, c, c_hat, xi, activation, convention)


def overlaps(problem, m):
    r"""Teacher-student overlaps ``rho_ij(m) = <v_i, v_hat_j>`` at ``m = <u, u_hat>``.

    .. math:: \rho_{ij}(m) = \frac{G_{ij} + \xi^2 c_i \hat c_j m}{r_i \hat r_j}

    Parameters
    ----------
    problem : Problem
    m : float or ndarray
        Overlaps ``<u, u_hat>`` in [-1, 1].

    Returns
    -------
    ndarray of shape m.shape + (k, k), clipped to [-1, 1].

    Notes
    -----
    Regime: A1-A2 (unit w_i, u and u_hat orthogonal to span W). Under A3 ``r_i = r = sqrt(1 + xi^2/k)``.

    References
    ----------
    .. [src] seed 003 L767; specs/lora.md §2.1.

    Examples
    --------
    >>> p = Problem.orthonormal(k=4, xi=1.0, seed=0)
    >>> round(float(overlaps(p, 0.0)[0, 0]), 12)  # rho_ii(0) = 1/r^2 = k/(k + xi^2)
    0.8
    """
    m = check_overlap(m)
    num = problem.G + problem.xi**2 * np.multiply.outer(m, np.outer(problem.c, problem.c_hat))
    return np.clip(num / np.outer(problem.r, problem.r_hat), -1.0, 1.0)


def check_overlap(m, name="m"):
    """Return ``m`` as a float array, raising when it is not finite or outside [-1, 1]."""
    a = np.asarray(m, dtype=np.float64)
    if not (np.abs(a) <= 1).all():  # also False for NaN and inf
        raise InvalidParameterError(f"The {name!r} parameter must be finite overlaps in [-1, 1]. Got {m!r} instead.")
    return a


def _cached(problem, key, make):
    """``make()``, computed once per (problem, key) and dropped with the problem (which is frozen)."""
    per = _cache.setdefault(problem, {})
    if key not in per:
        per[key] = make()
    return per[key]
