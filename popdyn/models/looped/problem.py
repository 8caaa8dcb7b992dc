"""The in-context regression task of the looped linear transformer (seed 001 ch. 8, Defs 8.2-8.4)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, as_int, validate

__all__ = ["Problem", "sample_prompts"]


@dataclass(frozen=True, eq=False)
class Problem:
    r"""In-context linear regression: prompts ``(X, y)`` with ``y = X theta* (+ noise)`` and a query scalar alpha.

    .. math:: x_i \sim \mathcal N(0, \mathrm{diag}(\mathrm{cov})),\quad \theta^* \sim \mathrm{Unif}(\mathbb S^{d-1}),
              \quad y = X\theta^* + \sigma\varepsilon,\quad \mathrm{err} = \langle \mathrm{TF}, \theta^*\rangle - \alpha

    Parameters
    ----------
    n : int
        Number of in-context examples (>= 1). The theorem needs n > d (X^T X invertible).
    d : int
        Feature dimension (>= 1).
    alpha : float
        Query scalar of the linear-vector-generation task, finite and non-zero.
    noise : float
        Label-noise standard deviation sigma >= 0; the paper's setting is 0 (realizable).
    cov : ndarray of shape (d,)
        Diagonal of the covariance of the rows x_i, positive (the paper: all ones).

    References
    ----------
    .. [src] seed 001 L2196-2214 (Defs 8.2-8.5), L2476-2488 (Fig. 8.1 setup); specs/looped_contrastive_dg.md A.1.
    """
    n: int
    d: int
    alpha: float = 1.0
    noise: float = 0.0
    cov: np.ndarray = None

    _constraints = {
        "n": Integer(1),
        "d": Integer(1),
        "alpha": Interval(-np.inf, np.inf, closed="neither"),
        "noise": Interval(0, np.inf, closed="left"),
        "cov": FiniteArray(1),
    }

    def __post_init__(self):
        if self.cov is None:
            object.__setattr__(self, "cov", np.ones(as_int("looped.Problem", "d", self.d, low=1)))
        validate(self)
        if self.alpha == 0:
            raise InvalidParameterError("The 'alpha' parameter of looped.Problem must be a non-zero finite float "
                                        "(Def 8.4: the target <q, theta*> = alpha). Got 0.0 instead.")
        if self.cov.shape != (self.d,) or not np.all(self.cov > 0):
            raise InvalidParameterError(f"The 'cov' parameter of looped.Problem must be a positive array of shape "
                                        f"({self.d},) (d = {self.d}). Got {self.cov!r} instead.")

    def __repr__(self):
        cov = np.array2string(self.cov, separator=", ", precision=17, max_line_width=10**6)
        return (f"looped.Problem(n={self.n!r}, d={self.d!r}, alpha={self.alpha!r}, noise={self.noise!r}, "
                f"cov=np.array({cov}))")

    @property
    def gamma(self):
        """Aspect ratio gamma = d / n of the Marchenko-Pastur limit."""
        return self.d / self.n

    @property
    def isotropic(self):
        """True when every x_i ~ N(0, c I_d) for one c > 0 (the Marchenko-Pastur limit applies)."""
        return bool(np.all(self.cov == self.cov[0]))

    @classmethod
    def isotropic_gaussian(cls, n, d, alpha=1.0, noise=0.0):
        """The paper's setting: x_i ~ N(0, I_d), ||theta*|| = 1, realizable when ``noise = 0``."""
        return cls(n, d, alpha, noise, np.ones(as_int("looped.Problem.isotropic_gaussian", "d", d, low=1)))

    @classmethod
    def fig8_1(cls, n):
        """One panel-line of Fig. 8.1 (seed 001 L2476-2488): d = 4, n in {16, 32, 64, 128}, alpha = 1."""
        return cls.isotropic_gaussian(n, 4)

    @classmethod
    def from_gamma(cls, d, gamma, alpha=1.0):
        """Isotropic problem with n = round(d / gamma) examples (the Marchenko-Pastur scaling)."""
        if not (0 < gamma < np.inf):
            raise InvalidParameterError(f"The 'gamma' parameter of looped.Problem.from_gamma must be a float in "
                                        f"(0, inf). Got {gamma!r} instead.")
        return cls.isotropic_gaussian(max(1, int(round(d / gamma))), d, alpha)


def sample_prompts(problem, prompts, seed=0):
    r"""Draw ``prompts`` prompts ``(X, theta*, y)`` of ``problem`` from ``numpy.random.default_rng(seed)``.

    .. math:: X_{ij} = \sqrt{\mathrm{cov}_j}\, g_{ij},\quad \theta^* = g/\lVert g\rVert,\quad
              y = X\theta^* + \sigma\varepsilon

    Parameters
    ----------
    problem : Problem
    prompts : int
        Number of prompts (>= 1).
    seed : int or numpy.random.Generator
        The same seed gives the same prompts.

    Returns
    -------
    X : ndarray of shape (prompts, n, d)
    theta_star : ndarray of shape (prompts, d), unit rows
    y : ndarray of shape (prompts, n)

    Notes
    -----
    Regime: any problem; theta* uniform on S^{d-1} (the paper writes S^d, a typo).

    References
    ----------
    .. [src] seed 001 L2196-2202 (Defs 8.2-8.3); specs/looped_contrastive_dg.md A.1, Appendix T (S^{d-1}).

    Examples
    --------
    >>> X, th, y = sample_prompts(Problem.fig8_1(16), 3, seed=0)
    >>> X.shape, th.shape, bool(np.allclose(y, np.einsum("pnd,pd->pn", X, th)))  # realizable: y = X theta*
    ((3, 16, 4), (3, 4), True)
    """
    prompts = as_int("looped.sample_prompts", "prompts", prompts, low=1)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((prompts, problem.n, problem.d)) * np.sqrt(problem.cov)
    th = rng.standard_normal((prompts, problem.d))
    th /= np.linalg.norm(th, axis=1, keepdims=True)
    y = np.einsum("pnd,pd->pn", X, th)
    if problem.noise > 0:
        y = y + problem.noise * rng.standard_normal(y.shape)
    return X, th, y
