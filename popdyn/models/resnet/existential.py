r"""Existential weights of Lemma F.1' ([AllenZhu19, Lemma F.1', proof in App. F.3]): the random-feature construction W*.

A target :math:`\Phi_r(x) = \sum_{i\le p} a^*_{r,i}\,\phi_{r,i}(\langle w^*_{1,r,i},x\rangle/\|x\|)\,
\langle w^*_{2,r,i},x\rangle` (k outputs, p terms, every :math:`\phi_{r,i}` with only degree-0 and odd terms) is
reproduced by the pseudo-network :math:`G_r(x;\mathbf W^*) = \sum_j a_{r,j}\langle w^*_j,x\rangle
1[\langle w^{(0)}_j,x\rangle\ge0]` with :math:`w^{(0)}_j \sim N(0, I/m)`, :math:`a_{r,j}\sim N(0,1)` and the weights
(F.3), built from the indicator-to-function map :math:`h^{(r,i)}` of Lemma F.2 (:mod:`.indicator`). With the exact
(untruncated) h, :math:`\mathbb E\,G_r(x) = \Phi_r(x)` exactly for every m and the error is a mean of m i.i.d. terms
(:math:`O(m^{-1/2})`); :math:`\mathbb E\,m\|\mathbf W^*\|_F^2` has the closed form :meth:`Phi.frobenius_limit`.

Public names: :class:`Phi`, :func:`random_feature_weights`, :func:`G`.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from popdyn._validate import FiniteArray, InvalidParameterError, check

from .complexity import TaylorSeries
from .indicator import _hermite_sum, h_coefficients

__all__ = ["Phi", "random_feature_weights", "G"]

_UNIT_TOL = 1e-9


def _pow2_exponent(x, axis=None):
    """The integer e with max|x| * 2^-e in [1/2, 1) (over ``axis``; 0 where x is all zero): exact rescaling."""
    top = np.max(np.abs(x), axis=axis, initial=0.0)
    return np.frexp(np.where(top > 0, top, 1.0))[1]


def _unit_rows(owner, name, w, shape):
    w = check(owner, name, w, FiniteArray(3, shape))
    if np.abs(np.linalg.norm(w, axis=-1) - 1.0).max(initial=0.0) > _UNIT_TOL:
        raise InvalidParameterError(f"The '{name}' parameter of {owner} must hold unit vectors (||w||_2 = 1 within "
                                    f"{_UNIT_TOL}) on its last axis. Got norms {np.linalg.norm(w, axis=-1)!r} instead.")
    return w


class Phi:
    r"""The target of Lemma F.1' (Concept 2's form on ``x``): k outputs, each a sum of p terms.

    .. math:: \Phi_r(x) = \sum_{i=1}^p a^*_{r,i}\,\phi_{r,i}\Big(\frac{\langle w^*_{1,r,i},x\rangle}{\|x\|_2}\Big)
              \langle w^*_{2,r,i},x\rangle

    Parameters
    ----------
    a_star : array_like of shape (k, p)
        :math:`a^*_{r,i}` (the lemma assumes :math:`|a^*_{r,i}| \le 1`; any finite value works here).
    w1, w2 : array_like of shape (k, p, d)
        Unit vectors :math:`w^*_{1,r,i}`, :math:`w^*_{2,r,i}`.
    series : sequence of k sequences of p TaylorSeries
        Finite :math:`\phi_{r,i}` with only degree-0 and odd terms (Lemma F.2).

    Notes
    -----
    Regime: any finite sizes; :math:`\Phi` is 1-homogeneous in x, as G is, so the lemma's ||x|| = 1 is no loss.
    Accuracy: :math:`\Phi(x)` absolute error <= eps sum_i |a*_i| ((2n + p + 4) phi_i^abs |<w2,x>| + (2d + 4)
    |phi_i'|^abs |<w2,x>| + (d + 2) phi_i^abs sum_l |w2_l x_l|) (phi^abs = sum_j |c_j t^j| at the cosine t, n the
    degree), rows of any scale (evaluated at max|x| in [1/2, 1); before: ValueError at 1e-170, wrong cosines from an
    overflowed norm at 1e170); measured 0.053 of the bound. :meth:`h` as :func:`.indicator.h`.

    References
    ----------
    .. [src] [AllenZhu19, Lemma F.1 (restated, App. F.1), Lemma F.1'].

    Examples
    --------
    >>> e = np.eye(2)[None, None]                         # k = p = 1, d = 2, w1 = w2 = e_1
    >>> f = Phi([[1.0]], e[..., 0, :], e[..., 0, :], [[TaylorSeries.from_coeffs([0.5, 1.0])]])
    >>> f(np.array([[0.6, 0.8]])).round(12).tolist()   # (0.5 + 0.6) * 0.6
    [[0.66]]
    """

    def __init__(self, a_star, w1, w2, series):
        owner = "resnet.Phi"
        self.a_star = check(owner, "a_star", a_star, FiniteArray(2))
        k, p = self.a_star.shape
        self.w1 = _unit_rows(owner, "w1", w1, (k, p, None))
        self.w2 = _unit_rows(owner, "w2", w2, self.w1.shape)
        if (len(series) != k or any(len(row) != p for row in series)
                or not all(isinstance(s, TaylorSeries) for row in series for s in row)):
            raise InvalidParameterError(f"The 'series' parameter of {owner} must be {k} lists of {p} TaylorSeries "
                                        f"(one phi_(r,i) per term). Got {series!r} instead.")
        self.series = [list(row) for row in series]
        b = [[h_coefficients(s) for s in row] for row in self.series]
        n = max(len(c) for row in b for c in row)
        self._b = np.zeros((k, p, n))                          # h^{(r,i)} = sum_n b_n He_n
        for r in range(k):
            for i in range(p):
                self._b[r, i, :len(b[r][i])] = b[r][i]

    k = property(lambda self: self.a_star.shape[0])
    p = property(lambda self: self.a_star.shape[1])
    d = property(lambda self: self.w1.shape[2])

    @classmethod
    def random(cls, d, series, rng=None):
        r"""A target with :math:`a^*_{r,i}\sim U[-1,1]` and :math:`w^*_{1,r,i}, w^*_{2,r,i}` uniform on the sphere.

        ``series`` is k lists of p TaylorSeries; ``rng`` None, a seed or a numpy Generator.
        """
        rng = np.random.default_rng(rng)
        k, p = len(series), len(series[0])
        w = rng.standard_normal((2, k, p, d))
        w /= np.linalg.norm(w, axis=-1, keepdims=True)
        return cls(rng.uniform(-1.0, 1.0, (k, p)), w[0], w[1], series)

    def __call__(self, X):
        """:math:`\\Phi(x)` at the rows of X (n, d); returns (n, k)."""
        X = check("resnet.Phi", "X", X, FiniteArray(2, (None, self.d)))
        if not np.all(np.abs(X).max(axis=1, initial=0.0) > 0):
            raise InvalidParameterError(f"The 'X' parameter of resnet.Phi must have non-zero rows. Got {X!r} instead.")
        e = _pow2_exponent(X, axis=1)[:, None]
        Xs = np.ldexp(X, -e)                # rows at max|x| in [1/2, 1) (exact; Phi is 1-homogeneous): the norm and
        norm = np.linalg.norm(Xs, axis=1)   # the terms cannot under/overflow, nor an inf - inf cancel to NaN
        out = np.zeros((X.shape[0], self.k))
        for r in range(self.k):
            for i in range(self.p):
                out[:, r] += self.a_star[r, i] * self.series[r][i](Xs @ self.w1[r, i] / norm) * (Xs @ self.w2[r, i])
        with np.errstate(over="ignore"):
            return np.ldexp(out, e)

    def h(self, r, i, alpha1):
        """:math:`h^{(r,i)}` (Lemma F.2, untruncated) at the 1-d points ``alpha1``."""
        return _hermite_sum(self._b[r, i], np.asarray(alpha1, dtype=np.float64))

    def frobenius_limit(self):
        r"""The exact :math:`\mathbb E\,m\|\mathbf W^*\|_F^2` (every m) and its :math:`m\to\infty` limit.

        .. math:: \sum_r \mathbb E_{w\sim N(0,I_d)}\Big\|\sum_i a^*_{r,i}h^{(r,i)}(\langle w,w^*_{1,r,i}\rangle)
                  w^*_{2,r,i}\Big\|^2 = \sum_r\sum_{i,i'} a^*_{r,i}a^*_{r,i'}\langle w^*_{2,r,i},w^*_{2,r,i'}\rangle
                  \sum_n b^{(r,i)}_n b^{(r,i')}_n\, n!\,\rho_{ii'}^n,\quad \rho_{ii'} = \langle w^*_{1,r,i},
                  w^*_{1,r,i'}\rangle

        by Mehler's formula :math:`\mathbb E[\mathrm{He}_n(u)\mathrm{He}_{n'}(v)] = n!\rho^n\delta_{nn'}`.

        Returns
        -------
        float

        Notes
        -----
        Regime: exact. :math:`m\|\mathbf W^*\|_F^2 = \frac1m\sum_j\|m w^*_j\|^2` is a mean of m i.i.d. rows whose
        expectation is this value for every m (:math:`\mathbb E a_{r,j}a_{r',j} = \delta_{rr'}`, a independent of
        :math:`W^{(0)}`); it is :math:`\|\mathbf W^*_{\mathrm{main}}\|_F^2` in the main text's scaling, the O(1)
        quantity :math:`\widetilde O(kp\,\mathfrak C_s)^2` of Lemma F.1' (its proof, eq. (F.4)).
        Accuracy: absolute error <= (16 (1 + n log(n + 1)) + 4 (n + p + 4)) eps S, S the sum of the |terms| above
        (h_coefficients' error twice), never negative (clipped at 0: cancelling terms could round below), degree
        n <= 61; inf only where S passes float64 (exact power-of-2 rescaling). Measured: 0.025 of the bound.

        References
        ----------
        .. [src] [AllenZhu19, Lemma F.1', eq. (F.4)]; the large-m limit derived in docs/resnet.md.
        """
        eb, ea = _pow2_exponent(self._b), _pow2_exponent(self.a_star)   # exact rescaling: no spurious overflow
        beta = np.ldexp(self._b, -eb) * np.exp(0.5 * gammaln(np.arange(self._b.shape[2]) + 1.0))  # b_n sqrt(n!)
        eg = _pow2_exponent(beta)
        beta, a_star = np.ldexp(beta, -eg), np.ldexp(self.a_star, -ea)
        total = 0.0
        for r in range(self.k):
            rho = self.w1[r] @ self.w1[r].T                                         # (p, p)
            mehler = np.einsum("in,jn,ijn->ij", beta[r], beta[r],
                               rho[..., None] ** np.arange(beta.shape[2]))
            total += float(a_star[r] @ (mehler * (self.w2[r] @ self.w2[r].T)) @ a_star[r])
        with np.errstate(over="ignore"):                # an expectation of a square: >= 0 (rounding can cancel
            return float(np.ldexp(max(total, 0.0), 2 * int(eb + eg + ea)))   # below 0); inf past float64

    def __repr__(self):
        return f"Phi(k={self.k}, p={self.p}, d={self.d})"


def _weights(owner, phi, W0, a):
    if not isinstance(phi, Phi):
        raise InvalidParameterError(f"The 'phi' parameter of {owner} must be a resnet Phi. Got {phi!r} instead.")
    W0 = check(owner, "W0", W0, FiniteArray(2, (None, phi.d)))
    a = check(owner, "a", a, FiniteArray(2, (phi.k, W0.shape[0])))
    return W0, a


def random_feature_weights(phi, W0, a):
    r"""The construction (F.3) of Lemma F.1': weights :math:`\mathbf W^*` with :math:`G(\cdot;\mathbf W^*)\approx\Phi`.

    .. math:: w^*_j = \frac1m\sum_{r\in[k]} a_{r,j}\sum_{i\in[p]} a^*_{r,i}\,
              h^{(r,i)}\big(\sqrt m\,\langle w^{(0)}_j, w^*_{1,r,i}\rangle\big)\,w^*_{2,r,i}

    Parameters
    ----------
    phi : Phi
        The target (k outputs, p terms, dimension d).
    W0 : array_like of shape (m, d)
        Rows :math:`w^{(0)}_j \sim N(0, I/m)` (Appendix F's scaling).
    a : array_like of shape (k, m)
        :math:`a_{r,j} \sim N(0, 1)`.

    Returns
    -------
    ndarray of shape (m, d)

    Notes
    -----
    Regime: any m; with the exact h of :func:`.indicator.h` (not the paper's truncated one)
    :math:`\mathbb E\,G_r(x;\mathbf W^*) = \Phi_r(x)` exactly. The index r' of the inner sum (a typo in
    (F.3)) is the outer one. Main-text scaling (A ~ N(0, 1/m)): multiply by :math:`\sqrt m`.
    Accuracy: absolute error <= eps/m sum_{r,i} |a_rj a*_ri w*_2| ((4 (n + 10 + L) + 8 (1 + n log(n + 1)) + kp + 4)
    sum_q |b_q He_q(z)| + 2 (d + 2) sqrt(m) sum_l |w0_jl w*_1l| sum_q q |b_q He_{q-1}(z)|) per entry, z = sqrt(m)
    <w0_j, w*_1>, L = max_q |log h_q(z)| (the Hermite recurrence, h_coefficients, the argument's rounding through
    h'); weights past float64's range raise ValueError naming W0 (before: inf or NaN). Measured: 0.14 of the bound.

    References
    ----------
    .. [src] [AllenZhu19, proof of Lemma F.1' (App. F.3), eqs. (F.2), (F.3)].

    Examples
    --------
    >>> e = np.eye(2)[None, None]
    >>> f = Phi([[1.0]], e[..., 0, :], e[..., 1, :], [[TaylorSeries.from_coeffs([0.5])]])   # h = 1 (2 c_0)
    >>> random_feature_weights(f, np.ones((2, 2)), np.array([[1.0, -2.0]])).tolist()      # a_j e_2 / m
    [[0.0, 0.5], [0.0, -1.0]]
    """
    owner = "resnet.random_feature_weights"
    W0, a = _weights(owner, phi, W0, a)
    m = W0.shape[0]
    Ws = np.zeros_like(W0)
    with np.errstate(over="ignore", invalid="ignore"):
        for r in range(phi.k):
            for i in range(phi.p):
                coef = a[r] * phi.a_star[r, i] * phi.h(r, i, math.sqrt(m) * (W0 @ phi.w1[r, i]))
                Ws += np.outer(coef, phi.w2[r, i])
    if not np.all(np.isfinite(Ws)):
        bad = np.flatnonzero(~np.all(np.isfinite(Ws), axis=1))
        raise InvalidParameterError(f"The 'W0' parameter of {owner} gives weights past float64's range at rows "
                                    f"{bad[:10].tolist()} (h of sqrt(m) <w0_j, w*_1> overflows): its rows should be "
                                    f"of the N(0, I/m) scale. Got max |W0| = {np.abs(W0).max():.3g} instead.")
    return Ws / m


def G(X, W_star, W0, a):
    r"""The pseudo-network of Lemma F.1': :math:`G_r(x;\mathbf W^*) = \sum_j a_{r,j}\langle w^*_j,x\rangle
    1[\langle w^{(0)}_j,x\rangle\ge0]`.

    .. math:: G(X) = \big((X\mathbf W^{*\top}) \odot 1[X\mathbf W^{(0)\top}\ge0]\big)\,a^\top

    Parameters
    ----------
    X : array_like of shape (n, d)
        Inputs.
    W_star, W0 : array_like of shape (m, d)
        :math:`\mathbf W^*` and the frozen :math:`\mathbf W^{(0)}` that sets the signs.
    a : array_like of shape (k, m)
        Output weights.

    Returns
    -------
    ndarray of shape (n, k)

    Notes
    -----
    Regime: any sizes; the convention :math:`1[0\ge0]=1` of the paper.
    Accuracy: absolute error <= (d + m + 2) eps sum_j |a_rj| sum_l |x_l w*_jl|, plus |a_rj <w*_j, x>| for each j with
    |<w0_j, x>| <= (d + 1) eps sum_l |w0_jl x_l| (the indicator is that of the rounded product); any scale (exact
    power-of-2 rescaling of X, W* and a: before, NaN from inf * 0 past float64). Measured: 0.1 of the bound.

    References
    ----------
    .. [src] [AllenZhu19, Lemma F.1 (App. F.1), proof of Lemma F.1' (App. F.3)].

    Examples
    --------
    >>> G(np.array([[1.0, 0.0]]), np.eye(2), np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([[2.0, 3.0]])).tolist()
    [[2.0]]
    """
    owner = "resnet.G"
    X = check(owner, "X", X, FiniteArray(2))
    W_star = check(owner, "W_star", W_star, FiniteArray(2, (None, X.shape[1])))
    W0 = check(owner, "W0", W0, FiniteArray(2, W_star.shape))
    a = check(owner, "a", a, FiniteArray(2, (None, W0.shape[0])))
    ex, ew, ea = _pow2_exponent(X), _pow2_exponent(W_star), _pow2_exponent(a)    # trilinear: exact rescaling, so
    XW = np.where(X @ W0.T >= 0, np.ldexp(X, -ex) @ np.ldexp(W_star, -ew).T, 0.0)   # no inf * 0 past float64
    with np.errstate(over="ignore"):
        return np.ldexp(XW @ np.ldexp(a, -ea).T, int(ex + ew + ea))
