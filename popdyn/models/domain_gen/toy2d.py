r"""The 2-D toy of [Shi24] Section 6.3.1 with a full feature map Phi(x) = A x, A in R^{2x2}, and the fixed all-ones
head (section 6.4's head): population objectives, their gradients and optima (derived in docs/domain_gen.md).

The margin is y 1^T A x = w^T z with w = A^T 1 and z = x y ~ (U[0, 1], D_gamma). Minimising a penalty over the A with
A^T 1 = w gives, with Sigma = E[z z^T] = [[1/3, gamma/2], [gamma/2, 1/3]]:

.. math:: \min_{A^\top1=w}\tfrac12\lVert A\rVert_F^2 = \tfrac14\lVert w\rVert^2,\qquad
          \min_{A^\top1=w}\lVert A\Sigma^{1/2}\rVert_* = \sqrt{w^\top\Sigma w/2},

both at A = 1 w^T / 2 (rank one, equal rows). So full-A ERM-l2 at lam is the diagonal toy's ERM-l2 at lam / 2, and
full-A ERM-NU is a Mahalanobis-norm penalty on w: smooth, not sparsity-inducing; its direction tends to
Sigma^{-1} mu, c = gamma / (2 - 6 gamma^2), as lam grows (l2: mu, c = 2 gamma).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar

from ..._validate import Interval, Options, check
from .problem import DOMAINS, SpuriousFeatureModel
from .risk import _newton, erm_l2
from .transform import expected

__all__ = ["toy2d_sigma", "toy2d_full_loss", "toy2d_full_grad", "toy2d_full_optimum", "toy2d_nu_threshold"]

_PENALTIES = (None, "l2", "nuclear")
_GAMMA = Interval(-0.5, 0.5, "neither")
_LAM = Interval(0.0, np.inf, "left")


def toy2d_sigma(gamma):
    r"""Second moment Sigma = E[z z^T] = E[x x^T] of the 2-D toy (ID): [[1/3, gamma/2], [gamma/2, 1/3]].

    Parameters
    ----------
    gamma : float
        Spurious correlation in (-1/2, 1/2).

    Returns
    -------
    ndarray of shape (2, 2)

    Notes
    -----
    Regime: any gamma in (-1/2, 1/2).

    Accuracy: exact up to the rounding of 1/3 and gamma/2 (relative eps).

    References
    ----------
    .. [src] [Shi24, Section 6.3.1, Lemma E.3].
    """
    g = check("domain_gen.toy2d_sigma", "gamma", gamma, _GAMMA)
    return np.array([[1 / 3, g / 2], [g / 2, 1 / 3]])


def _matrix(owner, A):
    A = np.asarray(A, dtype=float)
    if A.shape != (2, 2) or not np.all(np.isfinite(A)):
        check(owner, "A", A, Options(("a finite array of shape (2, 2)",)))
    return A


def _args(owner, A, gamma, lam, penalty, domain="id"):
    return (_matrix(owner, A), check(owner, "gamma", gamma, _GAMMA), check(owner, "lam", lam, _LAM),
            check(owner, "penalty", penalty, Options(_PENALTIES)), check(owner, "domain", domain, Options(DOMAINS)))


def _blocks(w, gamma, domain):
    return [(float(w[0]), 0.5, 1), (float(w[1]), gamma if domain == "id" else -gamma, 1)]


def _sqrt_sigma(gamma):
    """Sigma^{1/2} by the eigen-decomposition (eigenvalues 1/3 +- gamma/2 > 0, vectors (1, +-1)/sqrt 2)."""
    s, d = np.sqrt(1 / 3 + gamma / 2), np.sqrt(1 / 3 - gamma / 2)
    return 0.5 * np.array([[s + d, s - d], [s - d, s + d]])


def toy2d_full_loss(A, gamma, lam=0.0, penalty=None, domain="id"):
    r"""Population objective of the 2-D toy with features Phi(x) = A x and the all-ones head.

    .. math:: \mathcal L(A) = \mathbb E\ln\big(1+e^{-\mathbf 1^\top Az}\big) + \lambda P(A),\qquad
              P = \tfrac12\lVert A\rVert_F^2\ (\text{"l2"}),\ \lVert A\Sigma^{1/2}\rVert_*
              = \mathrm{tr}\big((A\Sigma A^\top)^{1/2}\big)\ (\text{"nuclear"}),\ 0\ (\text{None})

    The nuclear term is lim n^{-1/2} ||Phi(X)||_* of the batch features Phi(X) = X A^T (ID; derived in
    docs/domain_gen.md).

    Parameters
    ----------
    A : array_like of shape (2, 2)
    gamma : float
        Spurious correlation in (-1/2, 1/2) (the paper's toy: 0.2).
    lam : float
        Penalty weight >= 0.
    penalty : {None, "l2", "nuclear"}
    domain : {"id", "ood"}
        The loss on D_gamma (ID) or D_{-gamma} (OOD); the penalty is always the training (ID) one.

    Returns
    -------
    float

    Notes
    -----
    Regime: any finite A. The loss is that of w = A^T 1 (:func:`population_loss_w` with r = 1, d = 2).

    Accuracy: relative error <= 1e-12 for |A| entries up to 1e3 (the loss as in :func:`population_loss_w`; the
    nuclear norm from the singular values of A Sigma^{1/2}, relative 4 eps), tested against the closed form
    -Li_3 sums in mpmath and the eigenvalues in mpmath; measured 3e-4 of it (tests/test_accuracy_domain_gen.py).

    References
    ----------
    .. [src] [Shi24, Section 6.3.1, eqs. (6.3)-(6.4)]; the population nuclear norm derived in docs/domain_gen.md.
    """
    A, gamma, lam, penalty, domain = _args("domain_gen.toy2d_full_loss", A, gamma, lam, penalty, domain)
    w = A.sum(0)
    val = float(expected(_blocks(w, gamma, domain))[0])
    if penalty == "l2":
        val += lam / 2 * float(np.sum(A * A))
    elif penalty == "nuclear":
        val += lam * float(np.linalg.svd(A @ _sqrt_sigma(gamma), compute_uv=False).sum())
    return val


def toy2d_full_grad(A, gamma, lam=0.0, penalty=None):
    r"""Gradient in A of :func:`toy2d_full_loss` (ID).

    .. math:: \nabla_A\mathcal L = \mathbf 1\,\mathbb E[\ell'(w^\top z)z]^\top + \lambda\,\nabla P,\qquad
              \nabla P = A\ (\text{"l2"}),\ UV^\top\Sigma^{1/2}\ (\text{"nuclear"},\ A\Sigma^{1/2} = USV^\top)

    Parameters
    ----------
    A : array_like of shape (2, 2)
    gamma : float
    lam : float
    penalty : {None, "l2", "nuclear"}

    Returns
    -------
    ndarray of shape (2, 2)

    Notes
    -----
    Regime: any finite A; the nuclear norm is differentiable where A has rank 2. Where it has rank 1 (the optima),
    U V^T is taken over the non-zero singular value only: a subgradient (the one of least norm is not sought).

    Accuracy: absolute error <= 1e-14 (2 + lam) per entry for entries up to 1e3 (the loss gradient as in
    :func:`population_grad`), tested against mpmath.diff of the exact loss for "l2" and None (measured 0.33 of it;
    tests/test_accuracy_domain_gen.py); the nuclear term against finite differences.

    References
    ----------
    .. [src] derived in docs/domain_gen.md; [Shi24, Lemma E.2].
    """
    A, gamma, lam, penalty, _ = _args("domain_gen.toy2d_full_grad", A, gamma, lam, penalty)
    gw = np.asarray(expected(_blocks(A.sum(0), gamma, "id"), order=1)[1:3], dtype=float)
    G = np.outer(np.ones(2), gw)
    if penalty == "l2":
        G = G + lam * A
    elif penalty == "nuclear":
        S = _sqrt_sigma(gamma)
        U, s, Vt = np.linalg.svd(A @ S)
        k = int(np.sum(s > 1e-14 * max(s[0], 1e-300)))
        G = G + lam * (U[:, :k] @ Vt[:k]) @ S
    return G


def toy2d_nu_threshold(gamma):
    r"""The smallest lam at which full-A ERM-NU of the 2-D toy has A* = 0: lam_0 = sqrt(mu^T Sigma^{-1} mu / 2).

    .. math:: \lambda_0 = \sqrt{\tfrac12\mu^\top\Sigma^{-1}\mu},\qquad \mu = \mathbb E z = (\tfrac12, \gamma)

    (w = 0 is optimal iff ||Sigma^{-1/2} grad L(0)|| <= lam / sqrt 2, grad L(0) = -mu / 2.)

    Parameters
    ----------
    gamma : float

    Returns
    -------
    float

    Notes
    -----
    Regime: any gamma in (-1/2, 1/2).

    Accuracy: relative error <= 8 eps for any gamma (a 2x2 quadratic form in closed form); measured 0.13 of it
    against mpmath at 40 digits (tests/test_accuracy_domain_gen.py).

    References
    ----------
    .. [src] derived in docs/domain_gen.md.
    """
    g = check("domain_gen.toy2d_nu_threshold", "gamma", gamma, _GAMMA)
    det = 1 / 9 - g * g / 4
    q = (1 / 3 * (0.25 + g * g) - g * g / 2) / det   # mu^T Sigma^{-1} mu with mu = (1/2, g)
    return float(np.sqrt(q / 2))


def toy2d_full_optimum(gamma, lam, penalty="l2"):
    r"""Population optimum of the 2-D toy with a full A and the all-ones head: A* = 1 w*^T / 2.

    .. math:: w^* = \arg\min_w \mathbb E\,\ell(w^\top z) + \begin{cases}\tfrac\lambda4\lVert w\rVert^2 & \text{"l2"}
              \ (\text{the diagonal toy's ERM-l2 at }\lambda/2)\\ \lambda\sqrt{w^\top\Sigma w/2} &
              \text{"nuclear"}\end{cases}

    Parameters
    ----------
    gamma : float
        Spurious correlation in (-1/2, 1/2).
    lam : float
        Penalty weight > 0.
    penalty : {"l2", "nuclear"}

    Returns
    -------
    A : ndarray of shape (2, 2)
        The optimum, rank one with equal rows (0 for "nuclear" when lam >= :func:`toy2d_nu_threshold`).
    w : ndarray of shape (2,)
        The classifier weights A^T 1; c = w[1] / w[0] is the ratio of :func:`toy2d_accuracy`.

    Notes
    -----
    Regime: any gamma and lam > 0. Every A with A^T 1 = w has a penalty >= the one of 1 w^T / 2, so the optimum over
    A is the reduced optimum over w (unique: the reduced objective is strictly convex). For "nuclear" the reduced
    problem is smooth away from w = 0 and solved by damped Newton on the exact gradient and Hessian, started at the
    best point along Sigma^{-1} mu (a start of the wrong scale overshot through w = 0 near lam_0). As lam grows,
    c = w2/w1 -> 2 gamma ("l2") and gamma / (2 - 6 gamma^2) ("nuclear"). An extension: the paper trains A with an
    unstated head and lam.

    Accuracy: "l2" as :func:`erm_l2` (relative 1e-12); "nuclear": the reduced gradient <= 1e-12 max(1, lam) at the
    returned w for lam in [1e-4, 1 - 1e-4] lam_0; measured 1e-4 of it (tests/test_accuracy_domain_gen.py).

    References
    ----------
    .. [src] derived in docs/domain_gen.md; [Shi24, Section 6.3.1, Figs. 6.2-6.3].
    """
    owner = "domain_gen.toy2d_full_optimum"
    gamma = check(owner, "gamma", gamma, _GAMMA)
    lam = check(owner, "lam", lam, Interval(0.0, np.inf, "neither"))
    penalty = check(owner, "penalty", penalty, Options(("l2", "nuclear")))
    if penalty == "l2":
        w = np.array(erm_l2(SpuriousFeatureModel(1, 2, gamma), lam / 2))
    elif lam >= toy2d_nu_threshold(gamma):
        w = np.zeros(2)
    else:
        Sg = toy2d_sigma(gamma)

        def fgh(x):
            v = expected(_blocks(x, gamma, "id"), order=2)
            Sx = Sg @ x
            p = np.sqrt(x @ Sx / 2)
            return (v[0] + lam * p, v[1:3] + lam * Sx / (2 * p),
                    v[3:].reshape(2, 2) + lam * (Sg / (2 * p) - np.outer(Sx, Sx) / (4 * p ** 3)))
        v = np.linalg.solve(Sg, [0.5, gamma])   # the large-lam direction Sigma^{-1} mu: start on its best point
        line = lambda t: fgh(t * v)[0]          # noqa: E731 (convex in t; w* -> 0 along it as lam -> lam_0)
        T = 1.0
        while line(2 * T) < line(T):
            T *= 2
        t = minimize_scalar(line, bounds=(0.0, 2 * T), method="bounded", options={"xatol": 1e-12 * T}).x
        w = _newton(fgh, t * v)[0]
    return np.outer(np.ones(2), w) / 2, w
