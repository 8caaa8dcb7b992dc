r"""The eigenlearning (omniscient-risk) theory of kernel ridge regression's learning curves.

For a kernel with eigenvalues :math:`\lambda_i` (multiplicities :math:`m_i`) under the input distribution, a target
with power :math:`P_i=\sum v^2` on eigenvalue :math:`i`, N training points, label noise of standard
deviation :math:`\sigma` and the ridge :math:`\delta=N\lambda_r` added to the Gram matrix
(:math:`\beta=(K_{XX}+\delta I)^{-1}y`, ``ridge`` = :math:`\lambda_r` as :func:`popdyn.models.resnet.krr_fit`):

.. math::

    \kappa=\delta+\sum_im_i\frac{\lambda_i\kappa}{\lambda_iN+\kappa},\qquad
    \mathcal L_i=\frac{\lambda_iN}{\lambda_iN+\kappa},\qquad
    \mathcal E_0=\frac{N}{N-\sum_im_i\mathcal L_i^2},\qquad
    \mathbb E\,\mathcal E=\mathcal E_0\Big(\sum_i(1-\mathcal L_i)^2P_i+\sigma^2\Big)-\sigma^2,

the expected population test error against the clean target over random training sets, and the expected Walsh
coefficient :math:`\mathbb E\,\hat v_S=\mathcal L_iv_S`.

Sources, by the names the papers give these results (their equation numbers are not cited: they could not be checked
against the published texts here). [Bordelon20]'s analytical learning curve of kernel regression: kappa from its
implicit equation, the mode errors :math:`(1-\mathcal L_i)^2` and the overfitting factor, which [Canatar21] writes
:math:`\mathcal E_0=1/(1-\gamma)`, :math:`\gamma=\sum_im_i\mathcal L_i^2/N`, with label noise. [Simon23]'s eigenlearning
equations: kappa from :math:`N=\sum_i m_i\lambda_i/(\lambda_i+\kappa')+\delta/\kappa'` with their
:math:`\kappa'=\kappa/N`, the learnabilities :math:`\lambda_i/(\lambda_i+\kappa')` and their conservation law,
:math:`\mathcal E_0=N/(N-\sum_im_i\mathcal L_i^2)`, and the test MSE :math:`\mathcal E_0(\sum_i(1-\mathcal L_i)^2P_i
+\sigma^2)`, which includes a noisy test label's :math:`\sigma^2` (here subtracted: the error against the clean
target). These conventions agree with the authors' public code for that paper (the same four formulas).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.optimize

from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, check

__all__ = ["effective_regularization", "learnabilities", "overfitting_coefficient", "eigenlearning", "Eigenlearning"]


def _spectrum(owner, eigenvalues, multiplicity):
    lam = check(owner, "eigenvalues", eigenvalues, FiniteArray(1))
    if lam.size < 1 or np.any(lam < 0) or not np.any(lam > 0):
        raise InvalidParameterError(f"The 'eigenvalues' parameter of {owner} must be a non-empty 1-d array of "
                                    f"eigenvalues >= 0, not all 0. Got {eigenvalues!r} instead.")
    if multiplicity is None:
        return lam, np.ones_like(lam)
    m = check(owner, "multiplicity", multiplicity, FiniteArray(1))
    if m.shape != lam.shape or np.any(m < 0):
        raise InvalidParameterError(f"The 'multiplicity' parameter of {owner} must be an array of counts >= 0 with "
                                    f"the shape of eigenvalues {lam.shape}. Got {multiplicity!r} instead.")
    return lam, m


def _sizes(owner, n_train):
    n = np.atleast_1d(np.asarray(n_train, dtype=object))
    if n.ndim != 1 or n.size < 1:
        raise InvalidParameterError(f"The 'n_train' parameter of {owner} must be an int >= 1 or a 1-d sequence of "
                                    f"them. Got {n_train!r} instead.")
    return np.array([check(owner, "n_train", v, Integer(1)) for v in n], dtype=np.float64)


def _kappa(lam, m, N, delta):
    """The root of h(k) = delta/k + sum m lam/(lam N + k) - 1 in [delta, delta + trace] (h decreasing)."""
    trace = math.fsum(m * lam)

    def h(k):
        return delta / k + math.fsum(m * lam / (lam * N + k)) - 1.0
    lo, hi = delta, delta + trace
    if h(hi) >= 0.0:           # only where rounding puts the root at the top of the bracket
        return hi
    return scipy.optimize.brentq(h, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)


def effective_regularization(eigenvalues, n_train, ridge, multiplicity=None):
    r"""The effective regularisation :math:`\kappa` of kernel ridge regression on N points.

    .. math:: \kappa=\delta+\sum_im_i\frac{\lambda_i\kappa}{\lambda_iN+\kappa},\qquad\delta=N\lambda_r,
              \quad\text{equivalently}\quad 1=\frac{\delta}{\kappa}+\sum_i\frac{m_i\lambda_i}{\lambda_iN+\kappa}

    (Simon et al.'s :math:`\kappa` is this one divided by N.)

    Parameters
    ----------
    eigenvalues : array_like of shape (M,)
        Kernel eigenvalues :math:`\lambda_i\ge0` under the input distribution (not all 0).
    n_train : int or sequence of int
        Training-set sizes N >= 1.
    ridge : float
        :math:`\lambda_r>0`, the ridge of the averaged loss (:math:`\delta=N\lambda_r` on the Gram diagonal).
    multiplicity : array_like of shape (M,), optional
        How many times each eigenvalue occurs (default 1).

    Returns
    -------
    ndarray of shape (len(n_train),)
        :math:`\kappa`, with :math:`\delta<\kappa\le\delta+\sum_im_i\lambda_i`.

    Notes
    -----
    Regime: any spectrum with finite trace and ridge > 0 (the unique root of a strictly decreasing function; with
    ridge -> 0 and N above the number of non-zero modes the root tends to 0). Accuracy: relative
    :math:`4\epsilon(1+1/c)`, :math:`c=\delta/\kappa+\sum_im_i\mathcal L_i(1-\mathcal L_i)/N\in(0,1]` the relative
    condition of the equation (Brent's method to 4 eps on a bracket [delta, delta + trace] where the function is
    monotone, plus the equation's rounding, 2.5 eps by fsum, over c; c is small only where the ridge is negligible and
    the modes that carry the equation are all nearly learned); 1e-15 relative where c >= 1/3. Measured: 0.21 of
    the declared bound against mpmath at 40 digits (tests/test_accuracy_kernels.py: spectra over 12 decades,
    multiplicities to 1e6, N to 1e6).

    References
    ----------
    .. [src] [Bordelon20] and [Canatar21] (the self-consistent kappa of the learning curve), [Simon23] (the
       eigenlearning equations, with kappa divided by N).

    Examples
    --------
    >>> float(effective_regularization([1.0], 1, 1.0)[0])     # kappa = 1 + kappa/(1 + kappa): kappa^2 = 1 + kappa
    1.618033988749895
    """
    owner = "kernels.effective_regularization"
    lam, m = _spectrum(owner, eigenvalues, multiplicity)
    N = _sizes(owner, n_train)
    ridge = check(owner, "ridge", ridge, Interval(0.0, np.inf, "neither"))
    return np.array([_kappa(lam, m, n, n * ridge) for n in N])


def learnabilities(eigenvalues, n_train, kappa):
    r"""Learnability of each eigenmode, :math:`\mathcal L_i=\lambda_iN/(\lambda_iN+\kappa)`.

    .. math:: \mathcal L_i=\frac{\lambda_iN}{\lambda_iN+\kappa}\in[0,1),\qquad
              \sum_im_i\mathcal L_i=N\Big(1-\frac{\delta}{\kappa}\Big)<N

    Parameters
    ----------
    eigenvalues : array_like of shape (M,)
    n_train : int or sequence of int
    kappa : float or array_like of shape (len(n_train),)
        The effective regularisation (:func:`effective_regularization`), > 0.

    Returns
    -------
    ndarray of shape (len(n_train), M)

    Notes
    -----
    Regime: as :func:`effective_regularization`; with another ``kappa`` (the ridge itself, a null) it is that
    theory's learnability. Accuracy: relative 2 eps for the ``kappa`` given. Measured: 0.56 of the declared bound
    (tests/test_accuracy_kernels.py).

    References
    ----------
    .. [src] [Simon23] (the eigenlearning equations: learnability and its conservation law); [Bordelon20] (the
       mode errors :math:`(1-\mathcal L_i)^2`).
    """
    owner = "kernels.learnabilities"
    lam = check(owner, "eigenvalues", eigenvalues, FiniteArray(1))
    N = _sizes(owner, n_train)
    k = np.broadcast_to(np.asarray(kappa, dtype=np.float64), N.shape)
    if not np.all(k > 0) or not np.all(np.isfinite(k)):
        raise InvalidParameterError(f"The 'kappa' parameter of {owner} must be finite and > 0, one per n_train. "
                                    f"Got {kappa!r} instead.")
    x = lam[None, :] * N[:, None]
    return x / (x + k[:, None])


def overfitting_coefficient(learnability, n_train, multiplicity=None):
    r"""The overfitting coefficient :math:`\mathcal E_0=N/(N-\sum_im_i\mathcal L_i^2)` (:math:`=1/(1-\gamma)`).

    .. math:: \mathcal E_0=\frac{N}{N-\sum_im_i\mathcal L_i^2}\ \ge1

    Parameters
    ----------
    learnability : array_like of shape (len(n_train), M)
        :func:`learnabilities`.
    n_train : int or sequence of int
    multiplicity : array_like of shape (M,), optional

    Returns
    -------
    ndarray of shape (len(n_train),)

    Notes
    -----
    Regime: learnabilities of the self-consistent :math:`\kappa`, for which :math:`\sum m\mathcal L^2<\sum m\mathcal
    L<N`; a ``learnability`` with :math:`\sum m\mathcal L^2\ge N` is refused. Accuracy: relative
    :math:`4\epsilon\,\mathcal E_0` for the ``learnability`` given (the difference :math:`N-\sum m\mathcal L^2`
    cancels as :math:`\mathcal E_0` grows). Measured: 0.24 of the declared bound (tests/test_accuracy_kernels.py).

    References
    ----------
    .. [src] [Simon23] (the overfitting coefficient); [Canatar21] (:math:`1/(1-\gamma)`,
       :math:`\gamma=\sum m\mathcal L^2/N`).
    """
    owner = "kernels.overfitting_coefficient"
    L = check(owner, "learnability", learnability, FiniteArray(2))
    N = _sizes(owner, n_train)
    m = np.ones(L.shape[1]) if multiplicity is None else check(owner, "multiplicity", multiplicity,
                                                               FiniteArray(1, (L.shape[1],)))
    s = np.array([math.fsum(row) for row in m[None, :] * L * L])
    if L.shape[0] != N.size or np.any(s >= N):
        raise InvalidParameterError(f"The 'learnability' parameter of {owner} must have one row per n_train with "
                                    f"sum m L^2 < N. Got sums {s.tolist()} against N = {N.tolist()}.")
    return N / (N - s)


@dataclass(frozen=True)
class Eigenlearning:
    """The eigenlearning prediction on a grid of training-set sizes (:func:`eigenlearning`).

    Attributes
    ----------
    n_train : ndarray of shape (n,)
    kappa : ndarray of shape (n,)
        Effective regularisation.
    learnability : ndarray of shape (n, M)
        Learnability of each eigenvalue.
    e0 : ndarray of shape (n,)
        Overfitting coefficient.
    test_error : ndarray of shape (n,)
        Expected population test error against the clean target.
    """
    n_train: np.ndarray
    kappa: np.ndarray
    learnability: np.ndarray
    e0: np.ndarray
    test_error: np.ndarray


def eigenlearning(eigenvalues, target_power, n_train, ridge, noise=0.0, multiplicity=None):
    r"""Expected population test error of kernel ridge regression over random training sets (eigenlearning).

    .. math::

        \mathbb E\,\mathcal E=\mathcal E_0\Big(\sum_i(1-\mathcal L_i)^2P_i+\sigma^2\Big)-\sigma^2,\qquad
        \mathcal L_i=\frac{\lambda_iN}{\lambda_iN+\kappa},\quad\mathcal E_0=\frac{N}{N-\sum_im_i\mathcal L_i^2},
        \quad\kappa=N\lambda_r+\sum_im_i\frac{\lambda_i\kappa}{\lambda_iN+\kappa}

    Parameters
    ----------
    eigenvalues : array_like of shape (M,)
        Kernel eigenvalues under the input distribution.
    target_power : array_like of shape (M,)
        :math:`P_i`: the target's squared coefficients summed over the eigenfunctions of eigenvalue i (>= 0).
    n_train : int or sequence of int
        Training-set sizes.
    ridge : float
        :math:`\lambda_r>0` (the Gram matrix gets :math:`N\lambda_r` on its diagonal, as
        :func:`popdyn.models.resnet.krr_fit`).
    noise : float
        Standard deviation :math:`\sigma\ge0` of the Gaussian noise on the training labels (the test error is
        against the clean target).
    multiplicity : array_like of shape (M,), optional
        Multiplicity of each eigenvalue (the hypercube: :math:`\binom d\ell`, :func:`level_multiplicities`).

    Returns
    -------
    Eigenlearning

    Notes
    -----
    Regime: the theory replaces the eigenfunctions at the training points by Gaussian features with the same
    covariance; it is exact as N and the number of modes near :math:`\kappa/N` grow together and otherwise carries
    finite-size corrections (on the cube: tiny d, N comparable to :math:`2^d`, or a few training points;
    docs/kernels.md measures them). Accuracy: the test error is within
    :math:`\mathcal E_0(B+\sigma^2)\,\mathcal E_0(8\epsilon+2e_\kappa)` of the equations' exact value, with
    :math:`B=\sum_i(1-\mathcal L_i)^2P_i` and :math:`e_\kappa` the relative bound of
    :func:`effective_regularization` (:math:`|\partial\log\mathcal E/\partial\log\kappa|\le2\mathcal E_0`); the
    misses :math:`1-\mathcal L_i=\kappa/(\lambda_iN+\kappa)` are formed directly (1 - L lost their digits as L -> 1,
    500 eps relative at L = 0.998). Measured: 0.086 of the declared bound against the equations in mpmath at 40 digits
    (tests/test_accuracy_kernels.py).

    References
    ----------
    .. [src] [Bordelon20] (learning curves of kernel regression), [Canatar21] (with label noise), [Simon23] (the
       eigenlearning equations; their test MSE is this plus :math:`\sigma^2`).

    Examples
    --------
    >>> out = eigenlearning([1.0, 0.1], [1.0, 1.0], [10, 1000], ridge=1e-3, multiplicity=[1, 10])
    >>> bool(out.test_error[1] < out.test_error[0] < 2.0)          # learns, starting below ||f||^2 = 2
    True
    """
    owner = "kernels.eigenlearning"
    lam, m = _spectrum(owner, eigenvalues, multiplicity)
    P = check(owner, "target_power", target_power, FiniteArray(1, lam.shape))
    if np.any(P < 0):
        raise InvalidParameterError(f"The 'target_power' parameter of {owner} must be >= 0. Got {target_power!r}.")
    noise = check(owner, "noise", noise, Interval(0.0, np.inf, "left"))
    N = _sizes(owner, n_train)
    kappa = effective_regularization(lam, N.astype(np.int64), ridge, m)
    L = learnabilities(lam, N.astype(np.int64), kappa)
    e0 = overfitting_coefficient(L, N.astype(np.int64), m)
    miss = kappa[:, None] / (lam[None, :] * N[:, None] + kappa[:, None])    # 1 - L without its cancellation at L ~ 1
    bias = np.array([math.fsum(row) for row in miss ** 2 * P[None, :]])
    return Eigenlearning(N.astype(np.int64), kappa, L, e0, e0 * bias + (e0 - 1.0) * noise ** 2)
