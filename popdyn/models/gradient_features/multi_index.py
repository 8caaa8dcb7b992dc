r"""Multiple-index polynomial target with Gaussian input ([Shi24, App. B.5.7]; docs/gradient_features.md).

:math:`\mathbf x\sim\mathcal N(0,I_d)`, :math:`z=U\mathbf x\in\mathbb R^r` (U with orthonormal rows
:math:`\mathbf u_j`), and the target is a polynomial written in the orthonormal Hermite basis
:math:`h_k=\mathrm{He}_k/\sqrt{k!}` (:mod:`popdyn.hermite`):

.. math:: g^*(\mathbf x)=\sum_\alpha \hat c_\alpha\prod_{j=1}^r h_{\alpha_j}(z_j),\qquad
          \mathbb E\,g^{*2}=\sum_\alpha\hat c_\alpha^2 .

With :math:`c_\alpha=\hat c_\alpha/\sqrt{\alpha!}` and :math:`P_k(\mathbf v)=\sum_{|\alpha|=k}c_\alpha\mathbf v^\alpha`,
the Hermite tensors :math:`T_k=\mathbb E\nabla^kg^*` (docs/gradient_features.md) act as
:math:`T_k[\hat{\mathbf w}^{\otimes k}]=k!\,P_k(U\hat{\mathbf w})` and
:math:`T_k[\hat{\mathbf w}^{\otimes(k-1)}]=(k-1)!\,U^\top\nabla P_k(U\hat{\mathbf w})`.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..._validate import FiniteArray, Integer, InvalidParameterError, check
from ...hermite import hermite_polys
from ...gaussian import normal_pdf
from .data import Bounds, DataModel, _as_neurons, _ndtr_psi

__all__ = ["MultiIndexPolynomial"]

_ORTH_TOL = 1e-10     # ||U U^T - I||_max accepted (QR in float64 gives ~1e-15)


class MultiIndexPolynomial(DataModel):
    r"""Gaussian input, polynomial target of a few directions (Assumption B.66), Algorithm 7's data.

    Parameters
    ----------
    U : array_like (r, d)
        Orthonormal rows :math:`\mathbf u_1,\dots,\mathbf u_r` (a linearly independent set is orthonormalised
        by the user, redefining g; the paper's Assumption B.66 only asks for independence).
    terms : dict
        ``{alpha: c_hat}`` with ``alpha`` a tuple of r non-negative ints (a multi-degree) and ``c_hat`` the
        coefficient of :math:`\prod_jh_{\alpha_j}(z_j)`.
    preprocess : bool
        If True the labels are Algorithm 7's :math:`y=g^*-\rho-\beta^\top\mathbf x` with the population
        :math:`\rho=\mathbb Eg^*`, :math:`\beta=\mathbb E[g^*\mathbf x]` (the degree-0 and degree-1 Hermite parts
        removed); otherwise :math:`y=g^*`.

    Notes
    -----
    Regime: any polynomial; the paper's theorem also asks :math:`\mathbb Eg^{*2}=1` and rank H = r
    (see :attr:`second_moment`, :meth:`hessian`, :attr:`kappa`), which are reported, not enforced.

    References
    ----------
    .. [src] [Shi24, Assumption B.66, (B.560)-(B.562), Algorithm 7]
    """

    def __init__(self, U, terms, preprocess=False):
        owner = "gradient_features.MultiIndexPolynomial"
        self.U = check(owner, "U", U, FiniteArray(2))
        r, d = self.U.shape
        if r < 1 or r > d or np.max(np.abs(self.U @ self.U.T - np.eye(r))) > _ORTH_TOL:
            raise InvalidParameterError(f"The 'U' parameter of {owner} must be an (r, d) array with 1 <= r <= d and "
                                        f"orthonormal rows (|U U^T - I| <= {_ORTH_TOL}). Got shape {self.U.shape}.")
        if not isinstance(terms, dict) or not terms:
            raise InvalidParameterError(f"The 'terms' parameter of {owner} must be a non-empty dict "
                                        f"{{alpha: c_hat}}. Got {terms!r} instead.")
        alphas, coefs = [], []
        for alpha, c in terms.items():
            a = tuple(alpha) if isinstance(alpha, (tuple, list)) else (alpha,)
            if len(a) != r:
                raise InvalidParameterError(f"The 'terms' parameter of {owner} must have multi-degrees of length "
                                            f"r = {r}. Got {alpha!r} instead.")
            alphas.append([check(owner, "terms", k, Integer(0)) for k in a])
            coefs.append(check(owner, "terms", c, FiniteArray(0)).item())
        self.alphas = np.array(alphas, dtype=np.int64).reshape(len(alphas), r)
        if len({tuple(a) for a in self.alphas}) != len(self.alphas):
            raise InvalidParameterError(f"The 'terms' parameter of {owner} must not repeat a multi-degree.")
        self.coefs = np.array(coefs)                                        # c_hat (orthonormal basis)
        self.preprocess = bool(preprocess)
        self.degrees = self.alphas.sum(1)
        fact = np.array([math.prod(math.factorial(int(k)) for k in a) for a in self.alphas], dtype=np.float64)
        self._c = self.coefs / np.sqrt(fact)                                # c_alpha (He basis)
        self._active = self.degrees >= 2 if self.preprocess else np.ones(len(self.coefs), bool)

    def __repr__(self):
        return f"MultiIndexPolynomial(r={self.U.shape[0]}, d={self.dim}, degree={self.degree})"

    @property
    def dim(self) -> int:
        return self.U.shape[1]

    @property
    def degree(self) -> int:
        r"""Polynomial degree :math:`\tau` (the paper's τ of B.5.7)."""
        return int(self.degrees.max())

    @property
    def second_moment(self) -> float:
        r""":math:`\mathbb E\,g^{*2}=\sum_\alpha\hat c_\alpha^2` (the paper normalises it to 1)."""
        return float(self.coefs @ self.coefs)

    def target(self, X):
        r"""Evaluate the target row-wise:
        :math:`g^*(\mathbf x)=\sum_\alpha\hat c_\alpha\prod_jh_{\alpha_j}(\langle\mathbf u_j,\mathbf x\rangle)`."""
        Zc = np.asarray(X, dtype=np.float64) @ self.U.T                     # (n, r)
        H = hermite_polys(self.degree, Zc)                                   # (deg+1, n, r)
        r = self.U.shape[0]
        prod = np.ones((Zc.shape[0], len(self.coefs)))
        for j in range(r):
            prod *= H[self.alphas[:, j], :, j].T
        return prod @ self.coefs

    def labels_of(self, X):
        r"""The labels used by this model: :math:`g^*` or, with ``preprocess``, :math:`g^*-\rho-\beta^\top\mathbf x`."""
        y = self.target(X)
        if self.preprocess:
            y = y - self.rho - np.asarray(X, dtype=np.float64) @ self.beta
        return y

    @property
    def rho(self) -> float:
        r""":math:`\rho=\mathbb E\,g^*` (the constant Hermite coefficient)."""
        return float(self.coefs[self.degrees == 0].sum())

    @property
    def beta(self):
        r""":math:`\beta=\mathbb E[g^*\mathbf x]=U^\top\nabla P_1` (the degree-1 Hermite part)."""
        one = self.degrees == 1
        return (self.coefs[one] @ self.alphas[one]) @ self.U

    def sample(self, n, rng):
        r"""Draw :math:`\mathbf x\sim\mathcal N(0,I_d)` and its label (see ``preprocess``).

        Parameters
        ----------
        n : int
            Sample size.
        rng : numpy.random.Generator or int
            Randomness.

        Returns
        -------
        X : ndarray (n, d)
        y : ndarray (n,)
        """
        n = check(f"{self!r}.sample", "n", n, Integer(0))
        X = np.random.default_rng(rng).standard_normal((n, self.dim))
        return X, self.labels_of(X)

    def E_yx(self):
        r""":math:`\mathbb E[y\mathbf x]`: :math:`\beta` for :math:`y=g^*`, 0 after preprocessing."""
        return np.zeros(self.dim) if self.preprocess else self.beta

    def bounds(self) -> Bounds:
        r""":math:`B_x=\infty`, :math:`B_{x1}=\mathbb E\|\mathbf x\|=\sqrt2\,\Gamma(\tfrac{d+1}2)/\Gamma(\tfrac d2)`,
        :math:`B_{x2}=d` (both exact: the chi distribution)."""
        d = self.dim
        return Bounds(math.inf, math.sqrt(2.0) * math.exp(special.gammaln((d + 1) / 2) - special.gammaln(d / 2)),
                      float(d))

    def hessian(self):
        r""":math:`H=\mathbb E\nabla^2g^*=U^\top MU`, :math:`M_{ij}=\hat c_{e_i+e_j}` (:math:`i\ne j`),
        :math:`M_{ii}=\sqrt2\,\hat c_{2e_i}` (B.560)."""
        r = self.U.shape[0]
        M = np.zeros((r, r))
        for a, c in zip(self.alphas[self.degrees == 2], self.coefs[self.degrees == 2]):
            idx = np.flatnonzero(a)
            if len(idx) == 1:
                M[idx[0], idx[0]] = math.sqrt(2.0) * c
            else:
                M[idx[0], idx[1]] = M[idx[1], idx[0]] = c
        return self.U.T @ M @ self.U

    @property
    def kappa(self) -> float:
        r"""Normalised condition number :math:`\kappa=\|H^\dagger\|/\sqrt r` (Definition B.67, B.560);
        ``inf`` when rank H < r (Assumption B.66 fails)."""
        r = self.U.shape[0]
        s = np.linalg.svd(self.hessian(), compute_uv=False)[:r]
        tol = s.max(initial=0.0) * 1e-12
        return math.inf if s.min() <= tol else float(1.0 / s.min() / math.sqrt(r))

    def _poly(self, V):
        """P_k(v) summed with weights, and grad P: monomials v^alpha (M, T) and their gradients (M, T, r)."""
        alphas = self.alphas[self._active]
        mono = np.prod(V[:, None, :] ** alphas[None], axis=2)               # (M, T); 0**0 = 1
        grads = np.empty(mono.shape + (V.shape[1],))
        for j in range(V.shape[1]):
            lower = alphas.copy()
            lower[:, j] = np.maximum(lower[:, j] - 1, 0)
            grads[:, :, j] = alphas[:, j] * np.prod(V[:, None, :] ** lower[None], axis=2)
        return mono, grads

    def simplified_gradient(self, W, b=0.0):
        r"""Exact :math:`G(\mathbf w,b)=\mathbb E[y\,\mathbf x\,\mathbb I[\mathbf w^\top\mathbf x>b]]` by Stein's lemma.

        With :math:`\mathbf v=U\hat{\mathbf w}`, :math:`t=b/\|\mathbf w\|`, :math:`e_0(t)=\Phi(-t)`,
        :math:`e_k(t)=\varphi(t)\mathrm{He}_{k-1}(t)` (:math:`=\mathbb E[\mathrm{He}_k(s)\mathbb I[s>t]]`):

        .. math:: G=U^\top\sum_{k\ge0}e_k(t)\,\nabla P_{k+1}(\mathbf v)
                   +\varphi(t)\,\hat{\mathbf w}\sum_{k\ge0}\mathrm{He}_k(t)\,P_k(\mathbf v).

        At b = 0 this is docs/gradient_features.md's :math:`\sum_k\frac{c_{k-1}}{(k-1)!}T_k[\hat{\mathbf w}^{k-1}]
        +\varphi(0)\hat{\mathbf w}\sum_k\frac{\mathrm{He}_k(0)}{k!}T_k[\hat{\mathbf w}^k]`; odd degrees >= 3 drop out.

        Parameters
        ----------
        W : array_like (M, d)
            Neuron weights (rows, nonzero).
        b : array_like (M,) or scalar
            Biases (Algorithm 7's first step has b = 0, B.561).

        Returns
        -------
        G : ndarray (M, d)

        Notes
        -----
        Accuracy: ||G - G_exact|| <= 8 (D + 2)^2 eps (1 + t^2) d s_G + 1e-300, D the degree, s_G the norm of the sums of
        the absolute monomial terms (the sum's conditioning; |v_j| + 1 in place of v_j = <u_j, w_hat>, known to d eps),
        t^2 that of phi(t) under the rounding of t; r <= 2, D <= 8, |t| <= 40; measured 0.023 of the bound (monomial
        expansion with truncated-Gaussian moments in mpmath).
        Regime: any w != 0 and b; exact for the polynomial (no truncation).

        References
        ----------
        .. [src] [Shi24, (B.561)-(B.562), Algorithm 7]; derived in docs/gradient_features.md
        """
        W, b, norms = _as_neurons(f"{self!r}.simplified_gradient", W, b)
        what = W / norms[:, None]
        t = b / norms
        V = what @ self.U.T                                                  # (M, r)
        mono, grads = self._poly(V)
        c = self._c[self._active]
        deg = self.degrees[self._active]
        He = hermite_polys(self.degree, t) * np.sqrt(special.factorial(np.arange(self.degree + 1)))[:, None]
        pdf = normal_pdf(t)
        e = np.where(deg[:, None] >= 2, pdf * He[np.maximum(deg - 2, 0)], special.ndtr(-t))   # e_{k-1}(t), k=deg
        along = np.einsum("t,tm,mtj->mj", c * (deg >= 1), e, grads) @ self.U
        radial = pdf * np.einsum("t,tm,mt->m", c, He[deg], mono)
        return along + radial[:, None] * what

    def first_step_direction(self, W):
        r"""Algorithm 7's first-step direction :math:`\mathbb E[y\,\mathbf x\,\mathbb I[\mathbf w^\top\mathbf x>0]]`.

        With the MSE (B.562), :math:`g_{\Xi^{(0)}}=0` and :math:`\lambda^{(1)}=1/\eta^{(1)}`:
        :math:`\mathbf w^{(1)}_i=2\eta^{(1)}a_i\,\mathbb E[y\,\mathbf x\,\mathbb I[\mathbf w_i^\top\mathbf x>0]]`.
        Degree-2 part:
        :math:`\varphi(0)(H\hat{\mathbf w}-\tfrac12(\hat{\mathbf w}^\top H\hat{\mathbf w})\hat{\mathbf w})`.

        Parameters
        ----------
        W : array_like (M, d)
            Initial weights (rows, nonzero).

        Returns
        -------
        ndarray (M, d)

        Notes
        -----
        Regime: b = 0 (B.561); labels as set by ``preprocess``.

        References
        ----------
        .. [src] [Shi24, Algorithm 7]; derived in docs/gradient_features.md

        Examples
        --------
        >>> U = np.eye(3)[:1]
        >>> model = MultiIndexPolynomial(U, {(3,): 1.0}, preprocess=True)
        >>> bool(np.abs(model.first_step_direction([[0.3, -1.0, 2.0]])).max() < 1e-15)   # odd degree 3 drops out
        True
        """
        return self.simplified_gradient(W, 0.0)

    def A(self, W, b=0.0):
        r"""Exact :math:`A(\mathbf w,b)=\mathbb E[y\,\sigma(\mathbf w^\top\mathbf x-b)]`.

        .. math:: A=\|\mathbf w\|\Big[P_0\,\psi(-t)+\sum_{k\ge1}e_{k-1}(t)\,P_k(\mathbf v)\Big],\qquad
                  \psi(\kappa)=\kappa\Phi(\kappa)+\varphi(\kappa).

        Parameters
        ----------
        W : array_like (M, d)
            Neuron weights (rows, nonzero).
        b : array_like (M,) or scalar
            Biases.

        Returns
        -------
        ndarray (M,)

        Notes
        -----
        Accuracy: |A - A_exact| <= 8 (D + 2)^2 eps (1 + t^2) d s_A + 1e-300 as for :meth:`simplified_gradient`; measured
        0.015 of the bound.
        Regime: any w != 0 and b; :math:`\nabla_{\mathbf w}A=G`.

        References
        ----------
        .. [src] derived in docs/gradient_features.md (Stein: E[He_k(s)(s-t)_+] = E[He_{k-1}(s) 1[s>t]])
        """
        W, b, norms = _as_neurons(f"{self!r}.A", W, b)
        t = b / norms
        V = (W / norms[:, None]) @ self.U.T
        mono, _ = self._poly(V)
        c = self._c[self._active]
        deg = self.degrees[self._active]
        He = hermite_polys(self.degree, t) * np.sqrt(special.factorial(np.arange(self.degree + 1)))[:, None]
        psi = _ndtr_psi(-t)[1]
        e = np.where(deg[:, None] >= 2, normal_pdf(t) * He[np.maximum(deg - 2, 0)], special.ndtr(-t))
        e = np.where(deg[:, None] == 0, psi, e)
        return norms * np.einsum("t,tm,mt->m", c, e, mono)
