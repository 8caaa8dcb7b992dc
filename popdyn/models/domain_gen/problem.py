"""The spurious-feature model D_gamma of seed 001 section 6.4 (specs/looped_contrastive_dg.md C.1)."""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..._validate import Integer, Interval, InvalidParameterError, Options, check, validate

__all__ = ["SpuriousFeatureModel", "DOMAINS"]

DOMAINS = ("id", "ood")


@dataclass(frozen=True, eq=False)
class SpuriousFeatureModel:
    r"""Label-multiplied features ``z = z~(x) y``: r invariant coordinates ``U[0, 1]``, d - r spurious ``D_{+-gamma}``.

    .. math:: z_j \sim U[0,1]\ (j\in R),\qquad z_j\sim\mathcal D_{g}\ (j\in U),\quad g = \gamma\ (\mathrm{ID}),\
              -\gamma\ (\mathrm{OOD}),\qquad \mathcal D_g = (\tfrac12+g)\,U[0,1] + (\tfrac12-g)\,U[-1,0]

    Parameters
    ----------
    r : int
        Number of invariant (class-relevant) coordinates, ``1 <= r <= d``.
    d : int
        Feature dimension, ``>= 1``.
    gamma : float
        Spurious correlation, in ``(-1/2, 1/2)`` (the mean of ``D_gamma``).

    Notes
    -----
    Regime: Lemma 6.1 and Prop. 6.3 assume ``gamma in (3/sqrt(r), 1/2)`` (non-empty only for r >= 37) and
    ``d > r/gamma^2 + r``; every formula here holds for any valid (r, d, gamma).

    References
    ----------
    .. [src] seed 001 L1779-1787 (data distributions, D_gamma), L9094 (Lemma E.3); specs/looped_contrastive_dg.md C.1.
    """
    r: int
    d: int
    gamma: float

    _constraints = {"r": Integer(1), "d": Integer(1), "gamma": Interval(-0.5, 0.5, "neither")}

    def __post_init__(self):
        validate(self)
        if self.r > self.d:
            raise InvalidParameterError(f"The 'r' parameter of domain_gen.SpuriousFeatureModel must be an int in "
                                        f"[1, d] = [1, {self.d}]. Got {self.r} instead.")

    def __repr__(self):
        return "domain_gen.SpuriousFeatureModel(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}"
                                                               for f in fields(self)) + ")"

    @property
    def m(self):
        """Number of spurious coordinates d - r."""
        return self.d - self.r

    def g(self, domain):
        """Mean of the spurious coordinates in ``domain``: gamma (ID) or -gamma (OOD)."""
        domain = check("domain_gen.SpuriousFeatureModel", "domain", domain, Options(DOMAINS))
        return self.gamma if domain == "id" else -self.gamma

    def mean(self, domain="id"):
        r"""Mean vector mu: 1/2 on R, +-gamma on U (Lemma E.3)."""
        return np.concatenate([np.full(self.r, 0.5), np.full(self.m, self.g(domain))])

    def second_moment(self, domain="id"):
        r"""Sigma = E[z z^T] = diag(1/3 - mu_j^2) + mu mu^T (spec C.2 (6-g))."""
        mu = self.mean(domain)
        return np.diag(1.0 / 3.0 - mu ** 2) + np.outer(mu, mu)

    def sample(self, n, domain="id", rng=None):
        """``n`` i.i.d. label-multiplied feature vectors z, shape (n, d), from ``numpy.random.default_rng(rng)``."""
        n = check("domain_gen.SpuriousFeatureModel.sample", "n", n, Integer(1))
        g = self.g(domain)
        rng = np.random.default_rng(rng)
        u = rng.random((n, self.d))
        sign = np.where(rng.random((n, self.m)) < 0.5 + g, 1.0, -1.0)
        u[:, self.r:] *= sign
        return u
