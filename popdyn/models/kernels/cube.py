r"""Exact kernel learning on the uniform hypercube {±1}^d for any fully-connected network's NNGP or NTK.

A dot-product kernel on the cube is diagonal in the Walsh basis :math:`\chi_S(x)=\prod_{j\in S}x_j`: every set of
size :math:`\ell` has the eigenvalue :math:`\lambda_\ell` (:func:`cube_eigenvalues`, multiplicity
:math:`\binom d\ell`, :func:`level_multiplicities`). A :class:`WalshTarget` is a finite Walsh expansion that also
evaluates on points, so that a :class:`KernelRegression` is fitted on its values and scored on its coefficients:
the population test error is exact (Parseval, no test sample; :func:`popdyn.models.resnet.exact_test_error`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import kernels as _fc
from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, check
from ..resnet.hypercube import (D_MAX, captured_coefficients, exact_test_error, hamming_matrix, krr_fit,
                                level_eigenvalues)

__all__ = ["cube_eigenvalues", "level_multiplicities", "WalshTarget", "KernelRegression", "KERNELS"]

#: which kernel of the network: its NTK or its NNGP
KERNELS = ("ntk", "nngp")
_PSD_TOL = 1e-12   # a level eigenvalue below -_PSD_TOL * kappa_0 is not rounding: the profile is not PSD on the cube


def _net(owner, net):
    if not isinstance(net, _fc.FC):
        raise InvalidParameterError(f"The 'net' parameter of {owner} must be a popdyn.kernels.FC (from "
                                    f"popdyn.kernels.fc). Got {type(net).__name__} instead.")
    return net


def level_multiplicities(d):
    r"""Number of Walsh sets on each level, :math:`m_\ell=\binom d\ell`, as floats.

    .. math:: m_\ell = \binom d\ell,\qquad \sum_{\ell=0}^d m_\ell = 2^d

    Parameters
    ----------
    d : int
        Dimension, ``1 <= d <= 60``.

    Returns
    -------
    ndarray of shape (d + 1,)

    Notes
    -----
    Regime: any d <= 60. Accuracy: exact below 2^53 (every binomial of d <= 56), rounded once above (C(60, 30) ~
    1.2e17): relative 2^-53. Measured: 0.91 of the declared bound (tests/test_accuracy_kernels.py, every d <= 60).

    References
    ----------
    .. [src] [AllenZhu19, Prop. E.1] (the Walsh levels of a dot-product kernel).

    Examples
    --------
    >>> level_multiplicities(3)
    array([1., 3., 3., 1.])
    """
    d = check("kernels.level_multiplicities", "d", d, Integer(1, D_MAX))
    return np.array([float(math.comb(d, ell)) for ell in range(d + 1)])


def cube_eigenvalues(net, d, kernel="ntk"):
    r"""Eigenvalue of a network's infinite-width kernel on each Walsh level of the uniform cube {±1}^d.

    .. math:: \lambda_\ell = \mathbb E_{x,y}\big[K(x,y)\chi_S(x)\chi_S(y)\big]
              = 2^{-d}\sum_{t=0}^d\mathcal K_t(\ell)\,\kappa_t\quad(|S|=\ell),\qquad
              K(x,y)=\sum_S\lambda_{|S|}\chi_S(x)\chi_S(y),

    with :math:`\kappa_t` the kernel at Hamming distance t (:meth:`popdyn.kernels.FC.profile`) and
    :math:`\mathcal K_t` the Krawtchouk polynomials (:func:`popdyn.models.resnet.level_eigenvalues`). They are the
    eigenvalues of the integral operator :math:`(Tf)(x)=\mathbb E_yK(x,y)f(y)` under the uniform measure, each
    :math:`\binom d\ell` times.

    Parameters
    ----------
    net : popdyn.kernels.FC
        The network (:func:`popdyn.kernels.fc`).
    d : int
        Dimension, ``1 <= d <= 60``.
    kernel : {"ntk", "nngp"}
        Which of the network's kernels.

    Returns
    -------
    ndarray of shape (d + 1,)
        :math:`\lambda_\ell`, one per level (not summed over its sets), never negative.

    Notes
    -----
    Regime: inputs uniform on {±1}^d (on the sphere of radius sqrt(d)); any depth and activation of
    :func:`popdyn.kernels.fc`. Accuracy: exact for the float64 profile (one rounding of an exact rational sum),
    hence an absolute error up to :math:`2^{-d}\sum_t|\mathcal K_t(\ell)|\,|\delta\kappa_t|` against the exact
    kernel (about 1e-17 of :math:`\kappa_0`: levels whose eigenvalue is below that, such as the structural zeros of
    a ReLU net without bias at odd levels >= 3, come out as rounding). Values in :math:`[-10^{-12}\kappa_0, 0)` are
    that rounding and are returned as 0; a more negative one means the kernel is not PSD and is refused. Measured:
    0.998 of the declared bound (one rounding, relative 2^-53, of the exact rational eigenvalue of the float
    profile; tests/test_accuracy_kernels.py, d to 60, depth to 3, ReLU, abs, sign, erf, tanh, identity).

    References
    ----------
    .. [src] [AllenZhu19, Prop. E.1] (levels of a dot-product kernel); the profile from [Novak20] (popdyn.kernels).

    Examples
    --------
    >>> from popdyn import kernels
    >>> lam = cube_eigenvalues(kernels.fc(1, "relu"), 4)
    >>> round(float(lam @ level_multiplicities(4)), 12)    # trace = K(x, x) = 1 for the depth-1 ReLU NTK
    1.0
    """
    owner = "kernels.cube_eigenvalues"
    net = _net(owner, net)
    d = check(owner, "d", d, Integer(1, D_MAX))
    check(owner, "kernel", kernel, Options(KERNELS))
    kappa = net.profile(d, kernel)
    return _clip(owner, level_eigenvalues(kappa), kappa[0])


def _clip(owner, lam, scale):
    if np.any(lam < -_PSD_TOL * abs(scale)):
        raise InvalidParameterError(f"The kernel of {owner} is not PSD on the cube: a level eigenvalue "
                                    f"{lam.min():.3g} against K(x, x) = {scale:.3g}.")
    return np.maximum(lam, 0.0)


@dataclass(frozen=True, eq=False, init=False)
class WalshTarget:
    r"""A function on {±1}^d given by its Walsh expansion: :math:`f(x)=\sum_S v_S\chi_S(x)`,
    :math:`\chi_S(x)=\prod_{j\in S}x_j`.

    One object serves both sides of kernel learning: ``target(X)`` gives the training labels and ``terms`` the
    coefficients :math:`v_S` the exact test error is measured against (:math:`\mathbb E_xf^2=\sum_Sv_S^2`).

    Parameters
    ----------
    d : int
        Dimension, ``1 <= d <= 60``.
    terms : dict
        ``{S: v_S}``: each ``S`` an iterable of distinct 0-based coordinates in ``[0, d)`` (sorted on input; ``()``
        is the constant), each ``v_S`` a finite float. At least one term; two keys that name the same set are
        refused.

    Attributes
    ----------
    d : int
    terms : dict
        ``{sorted tuple: float}`` in the order given.

    Examples
    --------
    >>> f = WalshTarget(4, {(1, 0): 1.0, (): 0.5})
    >>> f
    kernels.WalshTarget(d=4, terms={(0, 1): 1.0, (): 0.5})
    >>> f(np.array([[1.0, -1.0, 1.0, 1.0]])).tolist()
    [-0.5]
    >>> f.level_power().tolist()
    [0.25, 0.0, 1.0, 0.0, 0.0]
    """
    d: int
    terms: dict

    def __init__(self, d, terms):
        owner = "kernels.WalshTarget"
        d = check(owner, "d", d, Integer(1, D_MAX))
        if not isinstance(terms, dict) or not terms:
            raise InvalidParameterError(f"The 'terms' parameter of {owner} must be a non-empty dict {{S: v_S}} of "
                                        f"Walsh coefficients. Got {terms!r} instead.")
        out = {}
        for S, c in terms.items():
            try:
                S_sorted = tuple(sorted(int(j) for j in S))
                ok = all(float(j) == int(j) for j in S) and len(set(S_sorted)) == len(S_sorted)
            except (TypeError, ValueError):
                ok = False
            if not ok or any(j < 0 or j >= d for j in S_sorted):
                raise InvalidParameterError(f"The 'terms' parameter of {owner} must have keys that are sets of "
                                            f"distinct coordinates in [0, {d - 1}]. Got {S!r} instead.")
            if S_sorted in out:
                raise InvalidParameterError(f"The 'terms' parameter of {owner} names the set {S_sorted} twice. Got "
                                            f"{terms!r} instead.")
            out[S_sorted] = check(owner, "terms", c, Interval(-np.inf, np.inf, "neither"))
        object.__setattr__(self, "d", d)
        object.__setattr__(self, "terms", out)

    def __repr__(self):
        return f"kernels.WalshTarget(d={self.d!r}, terms={self.terms!r})"

    @classmethod
    def parity(cls, d, k, coefficient=1.0):
        r"""The sparse parity :math:`v\,x_0x_1\cdots x_{k-1}` on {±1}^d (``k = 0``: the constant ``coefficient``)."""
        k = check("kernels.WalshTarget.parity", "k", k, Integer(0, D_MAX))
        if k > d:
            raise InvalidParameterError(f"The 'k' parameter of kernels.WalshTarget.parity must be an int in [0, d] = "
                                        f"[0, {d}]. Got {k} instead.")
        return cls(d, {tuple(range(k)): coefficient})

    @property
    def sets(self):
        """The Walsh sets, in order (sorted tuples)."""
        return list(self.terms)

    @property
    def coefficients(self):
        """The coefficients v_S, in the order of :attr:`sets`."""
        return np.array(list(self.terms.values()), dtype=np.float64)

    @property
    def levels(self):
        """The size |S| of each set, in the order of :attr:`sets`."""
        return np.array([len(S) for S in self.terms], dtype=np.int64)

    def level_power(self):
        r"""Target power on each level, :math:`P_\ell=\sum_{|S|=\ell}v_S^2`, shape (d + 1,)."""
        return np.bincount(self.levels, weights=self.coefficients ** 2, minlength=self.d + 1).astype(np.float64)

    def norm2(self):
        r""":math:`\mathbb E_xf(x)^2=\sum_Sv_S^2` (Parseval): the test error of the zero predictor."""
        return math.fsum(self.coefficients ** 2)

    def walsh(self):
        """The expansion as :mod:`popdyn.models.resnet.hypercube` takes a target: a list with one dict."""
        return [dict(self.terms)]

    def __call__(self, X):
        r"""The values :math:`f(x)` at the rows of ``X`` (an (n, d) array of ±1 entries), shape (n,)."""
        owner = "kernels.WalshTarget"
        X = check(owner, "X", X, FiniteArray(2))
        if X.shape[1] != self.d or X.shape[0] < 1 or not np.all(np.abs(X) == 1.0):
            raise InvalidParameterError(f"The 'X' parameter of {owner} must be an (n, d) = (n, {self.d}) array of "
                                        f"±1 entries, n >= 1. Got shape {X.shape}.")
        out = np.zeros(X.shape[0])
        for S, c in self.terms.items():
            out += c * (np.prod(X[:, list(S)], axis=1) if S else 1.0)
        return out


class KernelRegression:
    r"""Kernel ridge regression with a dot-product kernel on {±1}^d, fitted on one training set.

    .. math:: \hat f(x)=\sum_{j=1}^N\beta_jK(x,x_j),\qquad \beta=(K_{XX}+N\lambda I)^{-1}y

    (``ridge`` = :math:`\lambda`: the ridge of the averaged loss, as :func:`popdyn.models.resnet.krr_fit`; the ridge
    added to the Gram matrix is :math:`\delta=N\lambda`).

    Parameters
    ----------
    kernel : popdyn.kernels.FC or array_like of shape (d + 1,)
        A network (its ``kind`` kernel on the cube) or a Hamming profile :math:`\kappa_t`.
    X : array_like of shape (N, d)
        Training points, entries ±1.
    y : array_like of shape (N,)
        Training labels (``target(X)`` plus any label noise).
    ridge : float
        :math:`\lambda > 0`.
    kind : {"ntk", "nngp"}
        Which kernel of a network (ignored for a profile).

    Attributes
    ----------
    kappa : ndarray of shape (d + 1,)
        The kernel's Hamming profile.
    eigenvalues : ndarray of shape (d + 1,)
        Its level eigenvalues :math:`\lambda_\ell` (:func:`cube_eigenvalues`).
    X, beta : ndarray
        Training points and dual weights.

    Examples
    --------
    >>> from popdyn import kernels
    >>> from popdyn.models.resnet import hypercube_points
    >>> f = WalshTarget(4, {(0,): 1.0})
    >>> X = hypercube_points(4)          # the whole cube once: each coefficient shrinks by lambda_l / (lambda_l + ridge)
    >>> krr = KernelRegression(kernels.fc(1, "relu", b_std=0.5), X, f(X), 1e-3)
    >>> lam = krr.eigenvalues[1]
    >>> bool(abs(krr.captured(f)[0] - lam / (lam + 1e-3)) < 1e-14)
    True
    """

    def __init__(self, kernel, X, y, ridge, kind="ntk"):
        owner = "kernels.KernelRegression"
        check(owner, "kind", kind, Options(KERNELS))
        if isinstance(kernel, _fc.FC):
            X = check(owner, "X", X, FiniteArray(2))
            if not 1 <= X.shape[1] <= D_MAX:
                raise InvalidParameterError(f"The 'X' parameter of {owner} must have d in [1, {D_MAX}] columns. "
                                            f"Got shape {X.shape} instead.")
            kappa = kernel.profile(X.shape[1], kind)
        else:
            kappa = check(owner, "kernel", kernel, FiniteArray(1))
        if kappa.size < 2 or kappa.size > D_MAX + 1:
            raise InvalidParameterError(f"The 'kernel' parameter of {owner} must be a network or a Hamming profile "
                                        f"of d + 1 entries, 1 <= d <= {D_MAX}. Got shape {kappa.shape} instead.")
        d = kappa.size - 1
        X = check(owner, "X", X, FiniteArray(2))
        if X.shape[0] < 1 or X.shape[1] != d or not np.all(np.abs(X) == 1.0):
            raise InvalidParameterError(f"The 'X' parameter of {owner} must be an (N, d) = (N, {d}) array of ±1 "
                                        f"entries, N >= 1. Got shape {X.shape}.")
        y = check(owner, "y", y, FiniteArray(1))
        if y.shape != (X.shape[0],):
            raise InvalidParameterError(f"The 'y' parameter of {owner} must have one entry per row of X "
                                        f"({X.shape[0]}). Got shape {y.shape} instead.")
        self.ridge = check(owner, "ridge", ridge, Interval(0.0, np.inf, "neither"))
        self.kappa = kappa
        self.eigenvalues = _clip(owner, level_eigenvalues(kappa), kappa[0])
        self.X = X
        self.beta = krr_fit(kappa, X, y, self.ridge)

    @property
    def d(self):
        return self.X.shape[1]

    def __call__(self, Z):
        r"""The predictor :math:`\hat f(z)=\sum_j\beta_jK(z,x_j)` at the rows of ``Z`` ((n, d), entries ±1)."""
        return self.kappa[hamming_matrix(Z, self.X)] @ self.beta

    predict = __call__

    def _target(self, target):
        if not isinstance(target, WalshTarget) or target.d != self.d:
            raise InvalidParameterError(f"The 'target' parameter of kernels.KernelRegression must be a WalshTarget "
                                        f"with d = {self.d}. Got {target!r} instead.")
        return target

    def test_error(self, target, return_accuracy=False):
        r"""Exact population test error :math:`\mathbb E_x(f(x)-\hat f(x))^2` over the uniform cube (Parseval).

        .. math:: \mathbb E_x(f-\hat f)^2=\sum_Sv_S^2-2\sum_Sv_S\lambda_{|S|}\sum_j\beta_j\chi_S(x_j)
                  +\sum_\ell\lambda_\ell^2\sum_{j,k}\beta_j\beta_k\mathcal K_\ell(d_H(x_j,x_k))

        Parameters
        ----------
        target : WalshTarget
            The function learned (same d).
        return_accuracy : bool
            Also return the absolute accuracy achieved (rounding-error bound).

        Returns
        -------
        float, or (float, float)

        Notes
        -----
        Regime: uniform test distribution on {±1}^d. Accuracy: that of
        :func:`popdyn.models.resnet.exact_test_error` (double-double sums; the bound is returned). Measured: 0.15
        of the returned bound against the average over the whole cube in exact rationals (d <= 6, repeated training
        points, ridges to 1e-12; tests/test_accuracy_kernels.py).
        """
        target = self._target(target)
        err, acc = exact_test_error(self.kappa, self.X, self.beta, target.walsh(), return_accuracy=True)
        return (float(err[0]), float(acc[0])) if return_accuracy else float(err[0])

    def captured(self, target):
        r"""Walsh coefficients :math:`\hat v_S=\lambda_{|S|}\sum_j\beta_j\chi_S(x_j)` of the predictor on the
        target's sets, in the order of ``target.sets``.

        Notes
        -----
        Regime: any fit. Accuracy: that of :func:`popdyn.models.resnet.captured_coefficients`, absolute
        :math:`4(N+2)\epsilon|\lambda_{|S|}|\sum_j|\beta_j|` per coefficient. Measured: 0.068 of the declared bound
        against exact rationals (tests/test_accuracy_kernels.py).
        """
        target = self._target(target)
        return captured_coefficients(self.kappa, self.X, self.beta, target.sets)

    def learned_fraction(self, target):
        r"""Per level :math:`\ell` of the target, :math:`\sum_{|S|=\ell}\hat v_Sv_S/\sum_{|S|=\ell}v_S^2`: the
        share of the target's level-:math:`\ell` part the predictor captured (its mean over training sets is the
        learnability :math:`\mathcal L_\ell` of the eigenlearning theory). Shape (d + 1,), NaN on levels without
        target power."""
        target = self._target(target)
        num = np.bincount(target.levels, weights=self.captured(target) * target.coefficients, minlength=self.d + 1)
        den = target.level_power()
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
