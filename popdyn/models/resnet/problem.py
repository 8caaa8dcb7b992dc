"""The kernel-error problem of seed 004: a dot-product kernel, the Theorem 2 target, N training points, a ridge."""
from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property

import numpy as np

from ..._validate import Integer, Interval, InvalidParameterError, Options, validate
from .hypercube import D_MAX, arcsin, gaussian, relu_ck, relu_ntk_full, relu_ntk_hidden
from .targets import thm2_target

__all__ = ["Problem", "KERNELS"]

#: kernel name -> its Hamming profile on {±1}^d (hypercube.py)
KERNELS = {"relu_ntk": relu_ntk_full, "relu_ntk_hidden": relu_ntk_hidden, "relu_ck": relu_ck,
           "gaussian": gaussian, "arcsin": arcsin}


@dataclass(frozen=True, eq=False)
class Problem:
    r"""Kernel ridge regression of the Theorem 2 target on N uniform points of the hypercube.

    .. math:: \beta = (K + N\lambda I)^{-1}Y,\qquad \mathfrak K(x) = \sum_j\beta_jK(x, x^{(j)}),\qquad
              \mathcal H_i(x) = x_{S_i} + \alpha\,\chi_S(x)\quad(i\in[k])

    Parameters
    ----------
    kernel : {"relu_ntk", "relu_ntk_hidden", "relu_ck", "gaussian", "arcsin"}
        The dot-product kernel (ReLU NTK and conjugate kernel with bias, Gaussian, arcsin).
    d : int
        Dimension, ``k <= d <= 60`` (the exact level tables).
    k : int
        Relevant coordinates and outputs, ``>= 1``.
    alpha : float
        Weight of G(F), ``>= 0``.
    N : int
        Training points, ``>= 1``.
    lam : float
        Ridge, ``> 0`` (program (3.1): ``N lam`` on the diagonal).
    normalized : bool
        Cor. 7.1's normalized target (an overall ``1/sqrt(k)``).
    seed : int
        Seed of S (the relevant coordinates) and of the training points.

    Notes
    -----
    Regime: Theorem 2 bounds the error below by ``alpha^2/4`` per output for N up to ``(d/(20 k^2 log^2 d))^(k/2)``
    (empty at simulable d); the exact error here holds for every N.

    References
    ----------
    .. [src] seed 004 L122-155 (kernel methods, program 3.1), L354-366 (Theorem 2), L1100-1151 (App. E);
       specs/resnet_kernels.md §1.6, §1.7, §2.7.
    """
    kernel: str = "relu_ntk"
    d: int = 20
    k: int = 3
    alpha: float = 0.3
    N: int = 500
    lam: float = 1e-4
    normalized: bool = False
    seed: int = 0

    _constraints = {"kernel": Options(tuple(KERNELS)), "d": Integer(1, D_MAX), "k": Integer(1),
                    "alpha": Interval(0.0, np.inf, "left"), "N": Integer(1), "lam": Interval(0.0, np.inf, "neither"),
                    "normalized": Options((True, False)), "seed": Integer(0, 2 ** 63 - 1)}

    def __post_init__(self):
        validate(self)
        if self.k > self.d:
            raise InvalidParameterError(f"The 'k' parameter of resnet.Problem must be an int in [1, d] = [1, {self.d}]. "
                                        f"Got {self.k} instead.")

    def __repr__(self):
        return "resnet.Problem(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)) + ")"

    @classmethod
    def thm2(cls, kernel="relu_ntk", d=30, k=4, alpha=0.3, N=1000, lam=1e-4, seed=0):
        """The Theorem 2 setting of spec §4.2 (d = 30, k = 4, alpha = 0.3)."""
        return cls(kernel, d, k, alpha, N, lam, False, seed)

    @cached_property
    def kappa(self):
        """The kernel's Hamming profile (d + 1,)."""
        return KERNELS[self.kernel](self.d)

    @cached_property
    def target(self):
        """The Theorem 2 target (S drawn from the seed)."""
        return thm2_target(self.d, self.k, self.alpha, normalized=self.normalized,
                           rng=np.random.default_rng([self.seed, 0]))

    @cached_property
    def X(self):
        """The N training points, uniform on {±1}^d (stream 1 of the seed)."""
        return np.random.default_rng([self.seed, 1]).choice([-1.0, 1.0], size=(self.N, self.d))
