r"""Data models of the gradient-feature framework ([Shi24] ch. 3, App. B.5; docs/gradient_features.md).

Every data model is a :class:`DataModel`: ``.sample(n, rng) -> (X (n, d), y (n,))``, ``.dim``, ``.E_yx()``,
``.bounds() -> Bounds(Bx, Bx1, Bx2)`` (Assumption 3.1), ``.simplified_gradient(W, b)`` (the population
:math:`G(\mathbf w,b)=\mathbb E[y\,\mathbf x\,\mathbb I[\mathbf w^\top\mathbf x>b]]`, one row per neuron) and,
where the paper gives one, ``.ground_truth() -> (a*, W*, b*)`` with
:math:`g^*(\mathbf x)=\sum_j a^*_j\,\sigma(\langle\mathbf w^*_j,\mathbf x\rangle-b^*_j)`.
The base class adds seeded Monte Carlo versions of :math:`G` and :math:`A` that only need ``sample``.

Conventions: W is (M, d) with one row per neuron; the indicator is strict; mixture weights
are joint (:math:`\sum_j p_j=1`) and ``sigmas`` are standard deviations (covariance :math:`\sigma_j^2I`).
"""
from __future__ import annotations

import math
from functools import cached_property
from typing import NamedTuple

import numpy as np
from scipy import integrate, special

from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, check
from ...gaussian import mc_mean, normal_pdf

__all__ = ["Bounds", "DataModel", "GaussianMixture", "xor_mixture", "LinearSeparable", "relu_moment",
           "hinge", "logistic2", "LOSSES"]

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT2PI = 0.5 * math.log(2.0 * math.pi)
_PSI_SWITCH = 2.0     # relu_moment: erfcx form on [-2, 0) (it cancels 1 + kappa^2), continued fraction below
_PSI_DEPTH = 120      # continued-fraction depth: relative error < 2 eps for t >= 2 (tests check against mpmath)
_SUM_TOL = 1e-12      # |sum p_j - 1| accepted for mixture weights
_RANK_TOL = 1e-12     # relative singular value below which a mean direction is dependent
_STRUCT_TOL = 1e-12   # relative tolerance when recognising the XOR structure of a mixture


def hinge(z):
    r"""Hinge loss :math:`\ell(z)=\max\{0,1-z\}` ([Shi24, Section 3.3]); :math:`\ell(0)=1`, :math:`\ell'(0)=-1`.

    Parameters
    ----------
    z : array_like
        Margins :math:`y\,g(\mathbf x)`.

    Notes
    -----
    Regime: any real z.

    References
    ----------
    .. [src] [Shi24, Section 3.3]

    Examples
    --------
    >>> float(hinge(0.0)), float(hinge(2.0))
    (1.0, 0.0)
    """
    return np.maximum(0.0, 1.0 - np.asarray(z, dtype=np.float64))


def logistic2(z):
    r"""Base-2 logistic loss :math:`\ell(z)=\log_2(1+e^{-z})`, so that :math:`\ell(0)=1` (Assumption 3.1).

    Parameters
    ----------
    z : array_like
        Margins :math:`y\,g(\mathbf x)`.

    Notes
    -----
    Regime: any real z; computed as ``logaddexp(0, -z) / ln 2`` (no overflow).
    :math:`\ell'(0)=-1/(2\ln2)`.

    References
    ----------
    .. [src] [Shi24, Section 3.3, Assumption 3.1]; the base-2 convention in docs/gradient_features.md

    Examples
    --------
    >>> float(logistic2(0.0))
    1.0
    """
    return np.logaddexp(0.0, -np.asarray(z, dtype=np.float64)) / math.log(2.0)


LOSSES = {"hinge": hinge, "logistic": logistic2}


def _zero_one(z):
    """The 0-1 error of a margin, ties counted 1/2: ``1[z < 0] + 1[z = 0]/2``."""
    return (z < 0.0) + 0.5 * (z == 0.0)


def _ndtr_psi(kappa):
    r"""(:math:`\Phi(\kappa)`, :math:`\psi(\kappa)`) to ~1e-15 relative accuracy; see :func:`relu_moment`.

    For :math:`\kappa<-2` both come from one continued fraction: with :math:`t=-\kappa` and
    :math:`S_n=t+(n+1)/S_{n+1}`, the Mills ratio is :math:`R=S_1/(tS_1+1)`, :math:`\Phi(\kappa)=\varphi(t)R` and
    :math:`\psi(\kappa)=\varphi(t)/(tS_1+1)` (``ndtr`` itself loses ~1e-13 there to the rounding of
    :math:`\kappa^2`).
    """
    k = np.asarray(kappa, dtype=np.float64)
    Phi = np.array(special.ndtr(k), dtype=np.float64)                   # NaN in, NaN out (0-d stays an array)
    psi = np.full_like(k, np.nan)
    pos = k >= 0
    mid = (k < 0) & (k >= -_PSI_SWITCH)
    low = k < -_PSI_SWITCH
    psi[pos] = k[pos] * Phi[pos] + normal_pdf(k[pos])
    km = k[mid]
    psi[mid] = normal_pdf(km) * (1.0 + km * math.sqrt(math.pi / 2) * special.erfcx(-km / _SQRT2))
    t = -k[low]
    s = t.copy()
    for n in range(_PSI_DEPTH, 0, -1):
        s = t + (n + 1) / s
    f = normal_pdf(t)
    psi[low] = f / (t * s + 1.0)
    Phi[low] = f * s / (t * s + 1.0)
    return Phi, psi


def relu_moment(kappa):
    r"""Stable ReLU moment :math:`\psi(\kappa)=\kappa\Phi(\kappa)+\varphi(\kappa)=\mathbb E[\sigma(\kappa+Z)]`.

    .. math:: \psi(\kappa)=\frac{\varphi(t)}{t\,S_1(t)+1},\quad t=-\kappa,\quad
              S_n(t)=t+\frac{n+1}{S_{n+1}(t)}\quad(\kappa<-2),

    the Laplace continued fraction of the Mills ratio, which avoids the cancellation of
    :math:`\kappa\Phi(\kappa)+\varphi(\kappa)\approx\varphi(\kappa)/\kappa^2`; the erfcx form
    :math:`\varphi(\kappa)\,[1+\kappa\sqrt{\pi/2}\,\mathrm{erfcx}(-\kappa/\sqrt2)]` on :math:`[-2,0)`, and
    :math:`\kappa\Phi(\kappa)+\varphi(\kappa)` itself for :math:`\kappa\ge0`.

    Parameters
    ----------
    kappa : array_like
        Standardised offsets.

    Notes
    -----
    Accuracy: relative error <= 5e-15 where psi is a normal float (kappa > -37.5); 0 below (true value < 1e-300);
    measured 0.51 of the bound (tests/test_accuracy_gradient_features.py, mpmath at 40 digits; before the switch moved
    from -3 to -2: 1.002 at kappa = -2.92, the erfcx form cancelling 1 + kappa^2).
    Regime: relative accuracy < 5e-15 for every kappa whose result is a normal float (kappa > -37.5);
    it underflows to 0 below (true value < 1e-300). NaN in, NaN out.

    References
    ----------
    .. [src] derived in docs/gradient_features.md

    Examples
    --------
    >>> round(relu_moment(0.0), 12)            # 1 / sqrt(2 pi)
    0.398942280401
    >>> float(relu_moment(-30.0))              # ~ phi(30) / 30^2: no cancellation
    1.631956734091401e-199
    """
    psi = _ndtr_psi(kappa)[1]
    return psi if psi.ndim else float(psi)


class Bounds(NamedTuple):
    r"""Constants of Assumption 3.1 ([Shi24, Section 3.3]): :math:`\|\mathbf x\|\le B_x` a.s.,
    :math:`\mathbb E\|\mathbf x\|\le B_{x1}`, :math:`\mathbb E\|\mathbf x\|^2\le B_{x2}`."""
    Bx: float
    Bx1: float
    Bx2: float


def _as_biases(owner, b, M):
    """(M,) finite float biases from a scalar or an (M,) array."""
    try:
        b = np.broadcast_to(np.asarray(b, dtype=np.float64), (M,))
    except (TypeError, ValueError):
        raise InvalidParameterError(f"The 'b' parameter of {owner} must be a float or an array of shape ({M},). "
                                    f"Got {b!r} instead.") from None
    if not np.all(np.isfinite(b)):
        raise InvalidParameterError(f"The 'b' parameter of {owner} must be finite. Got {b!r} instead.")
    return b


def _as_neurons(owner, W, b):
    """(M, d) float W (a single (d,) row allowed) and (M,) b (a scalar broadcast); w = 0 is refused."""
    W = np.asarray(W, dtype=np.float64)
    W = W[None, :] if W.ndim == 1 else W
    if W.ndim != 2 or not np.all(np.isfinite(W)):
        raise InvalidParameterError(f"The 'W' parameter of {owner} must be a finite (M, d) array. "
                                    f"Got shape {W.shape} instead.")
    b = _as_biases(owner, b, W.shape[0])
    norms = np.linalg.norm(W, axis=1)
    if np.any(norms == 0):
        raise InvalidParameterError(f"The 'W' parameter of {owner} must have nonzero rows (G(0, b) is "
                                    f"undefined). Got zero rows {np.flatnonzero(norms == 0)}.")
    return W, b, norms


def _as_positive(owner, name, value):
    """A positive int (``as_int`` with low = 1)."""
    return check(owner, name, value, Integer(1))


class DataModel:
    r"""Common face of the data models: sampler, dimension, :math:`\mathbb E[y\mathbf x]`, Assumption 3.1 bounds.

    Subclasses implement ``sample``, ``dim``, ``E_yx`` and ``bounds``; the Monte Carlo estimators below need only
    ``sample`` and are the oracle against which every closed form is tested.
    """

    @property
    def dim(self) -> int:
        raise NotImplementedError

    def sample(self, n, rng):
        raise NotImplementedError

    def E_yx(self):
        raise NotImplementedError

    def bounds(self) -> Bounds:
        raise NotImplementedError

    def simplified_gradient_mc(self, W, b, n, rng, chunk=50_000):
        r"""Monte Carlo simplified gradient :math:`\tilde G(\mathbf w_i,b_i)` on n fresh samples.

        .. math:: \tilde G(\mathbf w_i,b_i)=\frac1n\sum_s y_s\mathbf x_s\mathbb I[\mathbf w_i^\top\mathbf x_s>b_i]

        Parameters
        ----------
        W : array_like, shape (M, d)
            Neuron weights (rows).
        b : array_like, shape (M,) or scalar
            Biases.
        n : int
            Number of samples.
        rng : numpy.random.Generator or int
            Randomness (a seed is passed to ``default_rng``).
        chunk : int
            Samples per batch (memory O(chunk (M + d))).

        Returns
        -------
        G : ndarray (M, d)
            The empirical simplified gradient (B.124).
        se : ndarray (M, d)
            Its standard errors.

        Notes
        -----
        Accuracy: statistical: ``se`` is the CLT standard error of each coordinate; calibrated against the closed form
        (|z| <= 6; measured max |z| = 2.5 on a 4-d XOR).
        Regime: any data model with a sampler; cost O(n M d) (one BLAS product per chunk).

        References
        ----------
        .. [src] [Shi24, (3.4), (B.124)]
        """
        owner = f"{type(self).__name__}.simplified_gradient_mc"
        W, b, _ = _as_neurons(owner, W, b)
        n, chunk = _as_positive(owner, "n", n), _as_positive(owner, "chunk", chunk)
        rng = np.random.default_rng(rng)
        s1 = np.zeros(W.shape)
        s2 = np.zeros(W.shape)
        done = 0
        while done < n:
            k = min(chunk, n - done)
            X, y = self.sample(k, rng)
            mask = (X @ W.T > b).astype(np.float64) * y[:, None]      # (k, M): y 1[w.x > b]
            s1 += mask.T @ X
            s2 += (mask * mask).T @ (X * X)
            done += k
        mean = s1 / n
        var = np.maximum(s2 / n - mean * mean, 0.0)
        return mean, np.sqrt(var / max(n - 1, 1))

    def A_mc(self, W, b, n, rng):
        r"""Monte Carlo :math:`\tilde A(\mathbf w_i,b_i)=\frac1n\sum_s y_s\,\sigma(\mathbf w_i^\top\mathbf x_s-b_i)`.

        Parameters
        ----------
        W : array_like, shape (M, d)
            Neuron weights (rows).
        b : array_like, shape (M,) or scalar
            Biases.
        n : int
            Number of samples (one batch).
        rng : numpy.random.Generator or int
            Randomness.

        Returns
        -------
        A, se : ndarray (M,)

        Notes
        -----
        Accuracy: statistical: ``se`` is the CLT standard error; calibrated (|z| <= 6; measured 1.8).
        Regime: any data model with a sampler.

        References
        ----------
        .. [src] [Shi24, Lemma B.70]
        """
        owner = f"{type(self).__name__}.A_mc"
        W, b, _ = _as_neurons(owner, W, b)
        X, y = self.sample(_as_positive(owner, "n", n), np.random.default_rng(rng))
        v = y[:, None] * np.maximum(X @ W.T - b, 0.0)
        return v.mean(0), v.std(0, ddof=1) / math.sqrt(len(y))

    def network_loss_mc(self, a, W, b, loss="hinge", n=200_000, seed=0):
        r"""Monte Carlo risk :math:`\mathcal L_{\mathcal D}(g)=\mathbb E\,\ell(y\,g(\mathbf x))` of a two-layer network.

        .. math:: g(\mathbf x)=\sum_i a_i\,\sigma(\langle\mathbf w_i,\mathbf x\rangle-b_i)

        Parameters
        ----------
        a : array_like (M,)
            Second layer.
        W : array_like (M, d)
            First layer (rows).
        b : array_like (M,)
            Biases.
        loss : {"hinge", "logistic", "error"}
            The loss (logistic is base 2), or the 0-1 error ``P[y g < 0] + P[g = 0]/2``.
        n : int
            Samples, >= 2.
        seed : int
            Seed.

        Returns
        -------
        mean, se : float

        Notes
        -----
        Accuracy: statistical: ``se`` is the CLT standard error; calibrated against the exact XOR g* hinge risk (|z| <=
        6; measured 1.9); the mean is >= 0.
        Regime: any data model with a sampler; chunked through :func:`popdyn.gaussian.mc_mean` (blocks of about
        2^22 floats, so the stream depends on (seed, M + d)).

        References
        ----------
        .. [src] [Shi24, (3.1), Section 3.3]
        """
        owner = f"{type(self).__name__}.network_loss_mc"
        W = check(owner, "W", W, FiniteArray(2))                # zero rows are valid neurons here (no G needed)
        a, b = check(owner, "a", a, FiniteArray(1, (W.shape[0],))), _as_biases(owner, b, W.shape[0])
        ell = LOSSES.get(check(owner, "loss", loss, Options(tuple(LOSSES) + ("error",))), _zero_one)
        n = check(owner, "n", n, Integer(2))

        def draw(rng, k):
            X, y = self.sample(k, rng)
            return ell(y * (np.maximum(X @ W.T - b, 0.0) @ a))
        mean, se = mc_mean(draw, n, seed, chunk=max(1, (1 << 22) // (W.shape[0] + W.shape[1])))
        return float(mean), float(se)


class GaussianMixture(DataModel):
    r"""Isotropic Gaussian mixture :math:`\sum_l p_l\,\mathcal N(\mu_l,\sigma_l^2I)`, one label per component.

    Closed forms (derived in docs/gradient_features.md and checked against Monte Carlo in the tests), with
    :math:`\kappa_l=(\langle\mathbf w,\mu_l\rangle-b)/(\sigma_l\|\mathbf w\|)`:

    .. math:: G(\mathbf w,b)=\sum_l p_ly_l\big[\Phi(\kappa_l)\mu_l+\sigma_l\varphi(\kappa_l)\hat{\mathbf w}\big],\qquad
              A(\mathbf w,b)=\sum_l p_ly_l\,\sigma_l\|\mathbf w\|\,\psi(\kappa_l),\quad \psi=\kappa\Phi+\varphi.

    Parameters
    ----------
    mus : array_like (r, d)
        Component means.
    sigmas : array_like (r,)
        Standard deviations (> 0).
    weights : array_like (r,)
        Joint weights :math:`p_l\ge0`, summing to 1.
    labels : array_like (r,)
        Labels :math:`y_l\in\{-1,+1\}`.

    Notes
    -----
    Regime: any isotropic mixture (Assumption 3.15 / B.28 is only needed by the theorems, not by the formulas).

    References
    ----------
    .. [src] [Shi24, Section 3.4.1, App. B.5.2]; conventions and closed forms in docs/gradient_features.md
    """

    def __init__(self, mus, sigmas, weights, labels):
        owner = "gradient_features.GaussianMixture"
        self.mus = check(owner, "mus", mus, FiniteArray(2))
        r, d = self.mus.shape
        if r < 1 or d < 1:
            raise InvalidParameterError(f"The 'mus' parameter of {owner} must be a non-empty (r, d) array. "
                                        f"Got shape {self.mus.shape} instead.")
        self.sigmas = check(owner, "sigmas", sigmas, FiniteArray(1, (r,)))
        if np.any(self.sigmas <= 0):
            raise InvalidParameterError(f"The 'sigmas' parameter of {owner} must be > 0 (standard deviations). "
                                        f"Got {self.sigmas!r} instead.")
        self.weights = check(owner, "weights", weights, FiniteArray(1, (r,)))
        if np.any(self.weights < 0) or abs(self.weights.sum() - 1.0) > _SUM_TOL:
            raise InvalidParameterError(f"The 'weights' parameter of {owner} must be >= 0 and sum to 1 (joint "
                                        f"weights p_j). Got {self.weights!r} instead.")
        self.labels = check(owner, "labels", labels, FiniteArray(1, (r,)))
        if not np.all(np.abs(self.labels) == 1):
            raise InvalidParameterError(f"The 'labels' parameter of {owner} must be in {{-1, +1}}. "
                                        f"Got {self.labels!r} instead.")

    def __repr__(self):
        return f"GaussianMixture(r={len(self.weights)}, d={self.dim})"

    @property
    def dim(self) -> int:
        return self.mus.shape[1]

    def sample(self, n, rng):
        r"""Draw :math:`n` pairs: component :math:`c\sim p`, :math:`\mathbf x=\mu_c+\sigma_c\mathbf z`, :math:`y=y_c`.

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
        n = check("gradient_features.GaussianMixture.sample", "n", n, Integer(0))
        rng = np.random.default_rng(rng)
        c = rng.choice(len(self.weights), size=n, p=self.weights)
        X = self.mus[c] + self.sigmas[c, None] * rng.standard_normal((n, self.dim))
        return X, self.labels[c].copy()

    def E_yx(self):
        r""":math:`\mathbb E[y\mathbf x]=\sum_lp_ly_l\mu_l` (the :math:`b\to-\infty` limit of :math:`G`)."""
        return (self.weights * self.labels) @ self.mus

    def bounds(self) -> Bounds:
        r"""Assumption 3.1 constants: :math:`B_x=\infty` (Gaussian support),
        :math:`B_{x2}=\mathbb E\|\mathbf x\|^2=\sum_lp_l(\|\mu_l\|^2+d\sigma_l^2)` exactly and
        :math:`B_{x1}=\sum_lp_l\sqrt{\|\mu_l\|^2+d\sigma_l^2}\ge\mathbb E\|\mathbf x\|` (Jensen per component;
        relative slack O(1/d)). The paper's cruder :math:`(B_{\mu2}+\sigma_{B+})\sqrt d` is in
        :meth:`feature_stats`' inputs."""
        m2 = np.sum(self.mus ** 2, axis=1) + self.dim * self.sigmas ** 2
        return Bounds(math.inf, float(self.weights @ np.sqrt(m2)), float(self.weights @ m2))

    def _coefficients(self, proj, norms, b):
        """G = alpha @ mus + beta w_hat from <w, mu_l> (M, r), ||w|| (M,) and b (M,): the stable form."""
        kappa = (proj - b[:, None]) / (self.sigmas * norms[:, None])
        c = self.weights * self.labels
        Phi, psi = _ndtr_psi(kappa)                                     # (M, r), relative accuracy in the tails
        alpha = Phi * c
        beta = (c * (self.sigmas * psi + (b / norms)[:, None] * Phi)).sum(1) - (alpha * proj).sum(1) / norms
        return alpha, beta

    def simplified_gradient(self, W, b):
        r"""Closed-form :math:`G(\mathbf w_i,b_i)` for each row of W, accurate in the far tail.

        .. math:: G=\sum_lc_l\Phi(\kappa_l)\,(\mu_l-m_l\hat{\mathbf w})
                  +\Big[\sum_lc_l\big(\sigma_l\psi(\kappa_l)+\tfrac{b}{\|\mathbf w\|}\Phi(\kappa_l)\big)\Big]
                  \hat{\mathbf w},

        :math:`c_l=p_ly_l`, :math:`m_l=\langle\mu_l,\hat{\mathbf w}\rangle`: the same as
        :math:`\sum_lc_l[\Phi(\kappa_l)\mu_l+\sigma_l\varphi(\kappa_l)\hat{\mathbf w}]`, written without the
        cancellation of :math:`m_l\Phi+\sigma_l\varphi` when :math:`\kappa_l\ll0`.

        Parameters
        ----------
        W : array_like, shape (M, d)
            Neuron weights (rows, nonzero).
        b : array_like, shape (M,) or scalar
            Biases (the indicator is :math:`\mathbb I[\mathbf w^\top\mathbf x>b]`).

        Returns
        -------
        G : ndarray (M, d)

        Notes
        -----
        Accuracy: ||G - G_exact|| <= 4 eps sum_l |c_l| (Phi_l (||mu_l|| + |b|/||w||) + sigma_l phi_l) (1 + (d + 2)(1 +
        |kappa_l|)(K_l + |kappa_l|)) + 1e-300 sum_l |c_l| (||mu_l|| + sigma_l), c_l = p_l y_l, K_l = (|<w, mu_l>| +
        |b|)/(sigma_l ||w||) + ||mu_l||/sigma_l (the conditioning of Phi(kappa_l) under the rounding of kappa_l;
        components of opposite labels may cancel, so the bound is norm-wise in the absolute scale, not relative to
        ||G||), over sigma 1e-6..1e6, means to 1e4, biases 40 sigma out, weights to 1e-12; measured 0.39 of the bound.
        Regime: any w != 0 and b; norm-wise relative error below :math:`20\kappa^2\epsilon` (the conditioning of
        :math:`\Phi(\kappa)` under the rounding of :math:`\kappa`; 1.5e-13 at :math:`\kappa=-26`) down to
        :math:`\kappa_l\approx-37`, where :math:`\Phi` underflows (G is then 0 to double precision).

        References
        ----------
        .. [src] [Shi24, (3.4)]; closed form derived in docs/gradient_features.md

        Examples
        --------
        >>> gm = GaussianMixture([[1.0, 0.0]], [1.0], [1.0], [1])
        >>> np.allclose(gm.simplified_gradient([[0.0, 1.0]], -1e3), gm.E_yx())
        True
        """
        W, b, norms = _as_neurons(f"{self!r}.simplified_gradient", W, b)
        alpha, beta = self._coefficients(W @ self.mus.T, norms, b)
        return alpha @ self.mus + (beta / norms)[:, None] * W

    def A(self, W, b):
        r"""Closed-form :math:`A(\mathbf w_i,b_i)=\mathbb E[y\,\sigma(\mathbf w_i^\top\mathbf x-b_i)]`.

        .. math:: A(\mathbf w,b)=\sum_lp_ly_l\,\sigma_l\|\mathbf w\|\,\psi(\kappa_l),\qquad\psi=\kappa\Phi+\varphi
                  \ (\text{:func:`relu_moment`}).

        Parameters
        ----------
        W : array_like, shape (M, d)
            Neuron weights (rows, nonzero).
        b : array_like, shape (M,) or scalar
            Biases.

        Returns
        -------
        A : ndarray (M,)

        Notes
        -----
        Accuracy: |A - A_exact| <= 4 eps ||w|| sum_l |c_l| sigma_l psi_l (1 + (d + 2)(1 + |kappa_l|)(K_l + |kappa_l|))
        (+ the 1e-300 floor), K_l as in :meth:`simplified_gradient`; measured 0.54 of the bound.
        Regime: any w != 0 and b; :math:`\nabla_{\mathbf w}A=G` (docs/gradient_features.md).

        References
        ----------
        .. [src] [Shi24, Lemma B.70]; derived in docs/gradient_features.md
        """
        W, b, norms = _as_neurons(f"{self!r}.A", W, b)
        kappa = (W @ self.mus.T - b[:, None]) / (self.sigmas * norms[:, None])
        return (self.weights * self.labels * self.sigmas * relu_moment(kappa)).sum(1) * norms

    @cached_property
    def span_basis(self):
        r"""Orthonormal basis Q (d, q) of :math:`\mathrm{span}(\mu_1..\mu_r)` (q = its rank) and the means in it,
        ``mus_q = mus @ Q`` (r, q): the coordinates used by :meth:`sample_init_coords`."""
        Q, S, _ = np.linalg.svd(self.mus.T, full_matrices=False)
        Q = Q[:, S > _RANK_TOL * max(S.max(), 1e-300)]
        return Q, self.mus @ Q

    def sample_init_coords(self, M, sigma_w, rng):
        r"""Sufficient statistics of M initial weights :math:`\mathbf w\sim\mathcal N(0,\sigma_w^2I_d)` (O(1) each).

        .. math:: \mathbf w=Q\mathbf g+\mathbf w_\perp,\qquad \mathbf g\sim\mathcal N(0,\sigma_w^2I_q),\qquad
                  \|\mathbf w_\perp\|^2\sim\sigma_w^2\chi^2_{d-q},

        with Q from :attr:`span_basis`: G depends on w only through these, so d = 10^6 costs
        nothing.

        Parameters
        ----------
        M : int
            Number of neurons.
        sigma_w : float
            Initial standard deviation (> 0).
        rng : numpy.random.Generator or int
            Randomness.

        Returns
        -------
        g : ndarray (M, q)
            Coordinates of w in Q.
        rho : ndarray (M,)
            :math:`\|\mathbf w_\perp\|` (0 when q = d).

        Notes
        -----
        Regime: any mixture; exact in distribution.

        References
        ----------
        .. [src] derived in docs/gradient_features.md
        """
        owner = f"{self!r}.sample_init_coords"
        M = check(owner, "M", M, Integer(1))
        sigma_w = check(owner, "sigma_w", sigma_w, Interval(0, math.inf, "neither"))
        rng = np.random.default_rng(rng)
        Q, _ = self.span_basis
        q = Q.shape[1]
        g = sigma_w * rng.standard_normal((M, q))
        rho = sigma_w * np.sqrt(rng.chisquare(self.dim - q, M)) if self.dim > q else np.zeros(M)
        return g, rho

    def simplified_gradient_coords(self, g, rho, b):
        r"""Closed-form G in the coordinates of :meth:`sample_init_coords`, without forming d-vectors.

        For :math:`\mathbf w=Q\mathbf g+\mathbf w_\perp` with :math:`\|\mathbf w_\perp\|=\rho`:

        .. math:: G=Q\,G_Q+G_\perp\,\frac{\mathbf w_\perp}{\rho},\qquad
                  G_Q=\alpha\,\mu^Q+\beta\,\frac{\mathbf g}{\|\mathbf w\|},\quad
                  G_\perp=\beta\,\frac{\rho}{\|\mathbf w\|},

        where :math:`G=\sum_l\alpha_l\mu_l+\beta\hat{\mathbf w}` is the form of :meth:`simplified_gradient`.
        Then :math:`\|G\|^2=\|G_Q\|^2+G_\perp^2` and :math:`\langle G,D_j\rangle=\langle\mu^Q_j,G_Q\rangle/\|\mu_j\|`.

        Parameters
        ----------
        g : array_like (M, q)
            Coordinates of w in the span basis.
        rho : array_like (M,)
            Norms of the parts of w orthogonal to the means (>= 0).
        b : array_like (M,) or scalar
            Biases.

        Returns
        -------
        G_Q : ndarray (M, q)
        G_perp : ndarray (M,)

        Notes
        -----
        Accuracy: the bound of :meth:`simplified_gradient` with d the number of coordinates q + 1; measured 0.44 of it.
        Regime: w != 0; same accuracy as :meth:`simplified_gradient`.

        References
        ----------
        .. [src] [Shi24, (3.4)]; closed form derived in docs/gradient_features.md
        """
        owner = f"{self!r}.simplified_gradient_coords"
        Q, mus_q = self.span_basis
        g = check(owner, "g", g, FiniteArray(2, (None, Q.shape[1])))
        rho = check(owner, "rho", rho, FiniteArray(1, (g.shape[0],)))
        if np.any(rho < 0):
            raise InvalidParameterError(f"The 'rho' parameter of {owner} must be >= 0. Got {rho!r} instead.")
        norms = np.sqrt(np.sum(g * g, 1) + rho * rho)
        if np.any(norms == 0):
            raise InvalidParameterError(f"The 'g' and 'rho' parameters of {owner} must not both vanish (w = 0). "
                                        f"Got zero neurons {np.flatnonzero(norms == 0)}.")
        b = _as_biases(owner, b, len(norms))
        alpha, beta = self._coefficients(g @ mus_q.T, norms, b)
        return alpha @ mus_q + (beta / norms)[:, None] * g, beta * rho / norms

    def feature_stats(self):
        r"""Notation of Assumption 3.15 / B.28 ([Shi24]).

        .. math:: D_j=\frac{\mu_j}{\|\mu_j\|},\ B_{\mu1}=\min_j\frac{\|\mu_j\|}{\sqrt d},
                  \ B_{\mu2}=\max_j\frac{\|\mu_j\|}{\sqrt d},\ p_B=\min_jp_j,
                  \ \sigma_{B+}=\max(\max_j\sigma_j,B_{\mu2}),\ \theta=\max_{i\ne j}\langle D_i,D_j\rangle.

        Returns
        -------
        dict
            ``D`` (r, d), ``B_mu1``, ``B_mu2``, ``p_B``, ``sigma_B``, ``sigma_Bplus``, ``theta``
            (``-1`` for r = 1), ``Bx1_paper`` :math:`=(B_{\mu2}+\sigma_{B+})\sqrt d`, ``Bx2_paper`` its square.

        Notes
        -----
        Regime: every mean nonzero (:math:`D_j` undefined otherwise).

        References
        ----------
        .. [src] [Shi24, Assumption 3.15, Assumption B.28]
        """
        norms = np.linalg.norm(self.mus, axis=1)
        if np.any(norms == 0):
            raise InvalidParameterError(f"feature_stats of {self!r} needs nonzero means (D_j = mu_j/||mu_j||). "
                                        f"Got zero rows {np.flatnonzero(norms == 0)}.")
        D = self.mus / norms[:, None]
        sq = math.sqrt(self.dim)
        gram = D @ D.T
        r = len(norms)
        theta = float(np.max(gram[~np.eye(r, dtype=bool)])) if r > 1 else -1.0
        B_mu2 = float(norms.max() / sq)
        sigma_B = float(self.sigmas.max())
        sigma_Bplus = max(sigma_B, B_mu2)
        return dict(D=D, B_mu1=float(norms.min() / sq), B_mu2=B_mu2, p_B=float(self.weights.min()),
                    sigma_B=sigma_B, sigma_Bplus=sigma_Bplus, theta=theta,
                    Bx1_paper=(B_mu2 + sigma_Bplus) * sq, Bx2_paper=(B_mu2 + sigma_Bplus) ** 2 * self.dim)

    @cached_property
    def xor_structure(self):
        r"""``(||mu||, sigma)`` when the mixture is an XOR mixture up to rotation (Assumption B.36), else None:
        four components of weight 1/4 and one :math:`\sigma`, :math:`\mu_2=-\mu_1`, :math:`\mu_4=-\mu_3`,
        :math:`\mu_1\perp\mu_3`, :math:`\|\mu_1\|=\|\mu_3\|`, :math:`y_1=y_2=-y_3=-y_4`."""
        if len(self.weights) != 4:
            return None
        mu, s, y = self.mus, self.sigmas, self.labels
        scale = np.linalg.norm(mu[0])
        tol = _STRUCT_TOL * max(scale, 1.0)
        ok = (np.allclose(self.weights, 0.25, rtol=0, atol=_STRUCT_TOL) and np.ptp(s) <= _STRUCT_TOL * s[0]
              and np.max(np.abs(mu[1] + mu[0])) <= tol and np.max(np.abs(mu[3] + mu[2])) <= tol
              and abs(mu[0] @ mu[2]) <= tol * scale and abs(np.linalg.norm(mu[2]) - scale) <= tol
              and y[0] == y[1] == -y[2] == -y[3] and scale > 0)
        return (float(scale), float(s[0])) if ok else None

    def bayes_error(self, n_mc=400_000, seed=0):
        r"""Bayes error :math:`\min_h P(h(\mathbf x)\ne y)`.

        XOR mixture (docs/gradient_features.md, by quadrature with :math:`\|\mu\|` in place of :math:`\sqrt d`):

        .. math:: P_{\rm Bayes}=\int 2Q(|u|/\sigma)\,\varphi\big((u-\|\mu\|)/\sigma\big)\,\frac{du}{\sigma};

        otherwise Monte Carlo of :math:`\mathbb E\min_y P(y\mid\mathbf x)` with exact posteriors (seeded).

        Parameters
        ----------
        n_mc : int
            Monte Carlo samples (general mixtures only; standard error below :math:`0.5/\sqrt{n}`).
        seed : int
            Seed of the Monte Carlo.

        Returns
        -------
        float

        Notes
        -----
        Accuracy: XOR structure: absolute error <= 1e-12 for ||mu||/sigma in 1e-6..1e6 (mpmath quadrature at 30 digits);
        measured 1.7e-16 (0.00017 of the bound). Otherwise statistical (standard error below 0.5/sqrt(n_mc), not
        returned).
        Regime: any mixture; exact (quadrature, absolute error < 1e-12) for the XOR structure.

        References
        ----------
        .. [src] derived in docs/gradient_features.md (d=100, sigma_B=3: 0.018252)
        """
        owner = f"{self!r}.bayes_error"
        xs = self.xor_structure
        if xs is not None:
            nm, s = xs
            f = lambda u: 2.0 * special.ndtr(-abs(u) / s) * math.exp(-0.5 * ((u - nm) / s) ** 2 - _LOG_SQRT2PI) / s
            lo, hi = nm - 40 * s, nm + 40 * s
            pts = [p for p in (0.0, nm) if lo < p < hi]
            return float(integrate.quad(f, lo, hi, points=pts or None, epsabs=1e-14, epsrel=1e-12, limit=200)[0])
        n_mc = check(owner, "n_mc", n_mc, Integer(2))
        return float(mc_mean(lambda rng, k: self._min_posterior(self.sample(k, rng)[0]), n_mc, seed)[0])

    def log_component_densities(self, X):
        r""":math:`\log p_l+\log\mathcal N(\mathbf x;\mu_l,\sigma_l^2I)` for each row of X, shape (n, r)."""
        X = np.asarray(X, dtype=np.float64)
        sq = (np.sum(X * X, 1)[:, None] - 2 * X @ self.mus.T + np.sum(self.mus ** 2, 1)) / self.sigmas ** 2
        with np.errstate(divide="ignore"):
            return np.log(self.weights) - self.dim * (np.log(self.sigmas) + _LOG_SQRT2PI) - 0.5 * sq

    def _min_posterior(self, X):
        logp = self.log_component_densities(X)
        pos = special.logsumexp(np.where(self.labels > 0, logp, -np.inf), axis=1)
        neg = special.logsumexp(np.where(self.labels < 0, logp, -np.inf), axis=1)
        return np.exp(np.minimum(pos, neg) - np.logaddexp(pos, neg))

    def ground_truth(self, tau=1.0):
        r"""The ground-truth network of Lemma B.32 (B.310) / B.41 (XOR, :math:`\tau\to\tilde\tau`).

        .. math:: g^*(\mathbf x)=\sum_j\frac{y_{(j)}}{c}\,\sigma\big(\langle D_j,\mathbf x\rangle-2c\big),
                  \qquad c=\sqrt{\tau\log d}\,\sigma_{B+}.

        Parameters
        ----------
        tau : float
            The error-control parameter :math:`\tau>0` (:math:`\tilde\tau` for XOR).

        Returns
        -------
        a_star : ndarray (r,)
        W_star : ndarray (r, d)
            Unit rows :math:`D_j`.
        b_star : ndarray (r,)

        Notes
        -----
        Regime: d >= 2 (log d > 0). B.41's OPT bound
        :math:`3d^{-\tilde\tau}+4/(d^{0.9\tilde\tau-1}\sqrt{\tilde\tau\log d})` needs :math:`4c\le\sqrt d`
        (docs/gradient_features.md).

        References
        ----------
        .. [src] [Shi24, Lemma B.34, (B.310), Lemma B.41]
        """
        owner = f"{self!r}.ground_truth"
        tau = check(owner, "tau", tau, Interval(0, math.inf, "neither"))
        if self.dim < 2:
            raise InvalidParameterError(f"ground_truth of {self!r} needs d >= 2 (c = sqrt(tau log d) sigma_B+).")
        st = self.feature_stats()
        c = math.sqrt(tau * math.log(self.dim)) * st["sigma_Bplus"]
        r = len(self.weights)
        return self.labels / c, st["D"].copy(), np.full(r, 2.0 * c)

    def ground_truth_loss(self, tau=1.0, loss="hinge", n_mc=400_000, seed=0):
        r"""Risk :math:`\mathcal L_{\mathcal D}(g^*)` of :meth:`ground_truth` (an upper bound on OPT).

        Exact for the hinge loss on an XOR mixture: by the cluster symmetry only cluster 1 matters, with
        :math:`u=\langle D_1,\mathbf x\rangle\sim\mathcal N(\|\mu\|,\sigma^2)` independent of
        :math:`v=\langle D_3,\mathbf x\rangle\sim\mathcal N(0,\sigma^2)`,
        :math:`g^*=(f(u)-f(v))/c`, :math:`f(t)=\sigma(|t|-2c)`:

        .. math:: \mathcal L=\mathbb E_v\,\mathbb E_u\big[K(v)-f(u)/c\big]_+,\qquad K(v)=1+f(v)/c,

        the inner expectation in closed form (piecewise-linear in u, Gaussian partial moments), the outer by
        adaptive quadrature split at the kinks :math:`v=\pm2c`. Otherwise seeded Monte Carlo.

        Parameters
        ----------
        tau : float
            As in :meth:`ground_truth`.
        loss : {"hinge", "logistic"}
            The loss (logistic is base 2).
        n_mc : int
            Monte Carlo samples when no exact form applies.
        seed : int
            Monte Carlo seed.

        Returns
        -------
        value, se : float
            The risk and its standard error (0 for the exact quadrature).

        Notes
        -----
        Accuracy: XOR and hinge: absolute error <= 1e-12 (nested mpmath quadrature of the network's risk at 20 digits, d
        to 1e6, sigma 0.3..10, tau 0.1..10); measured 1.7e-16 (0.00017 of the bound). Otherwise statistical (``se``).
        Regime: any tau > 0; exact path: XOR structure and hinge (absolute error < 1e-12).

        References
        ----------
        .. [src] [Shi24, Lemma B.34, Lemma B.41]; derived in docs/gradient_features.md
        """
        owner = f"{self!r}.ground_truth_loss"
        loss = check(owner, "loss", loss, Options(tuple(LOSSES)))
        a, W, b = self.ground_truth(tau)
        xs = self.xor_structure
        if xs is not None and loss == "hinge":
            return _xor_hinge_loss(xs[0], xs[1], b[0] / 2.0), 0.0
        return tuple(float(v) for v in self.network_loss_mc(a, W, b, loss, check(owner, "n_mc", n_mc, Integer(2)),
                                                            seed))


def _gauss_linear_moment(alpha, beta, lo, hi, m, s):
    r""":math:`\mathbb E[(\alpha+\beta u)\,\mathbb I[lo<u<hi]]`, :math:`u\sim\mathcal N(m,s^2)` (vectorised)."""
    zl, zh = (lo - m) / s, (hi - m) / s
    mass = special.ndtr(zh) - special.ndtr(zl)
    first = s * (np.exp(-0.5 * zl * zl) - np.exp(-0.5 * zh * zh)) / math.sqrt(2 * math.pi)   # E[(u-m) 1]
    return (alpha + beta * m) * mass + beta * first


def _xor_hinge_loss(nm, s, c):
    r"""Hinge risk of the XOR :math:`g^*` (cluster 1: u ~ N(nm, s^2), v ~ N(0, s^2)); see ground_truth_loss."""
    def inner(v):
        K = 1.0 + max(abs(v) - 2 * c, 0.0) / c
        edge = 2 * c + c * K                  # [K - f(u)/c]_+ > 0 iff |u| < 2c + cK; linear on each piece
        mid = _gauss_linear_moment(K, 0.0, -2 * c, 2 * c, nm, s)
        right = _gauss_linear_moment(K + 2.0, -1.0 / c, 2 * c, edge, nm, s)
        left = _gauss_linear_moment(K + 2.0, 1.0 / c, -edge, -2 * c, nm, s)
        return mid + right + left

    f = lambda v: inner(v) * math.exp(-0.5 * (v / s) ** 2 - _LOG_SQRT2PI) / s
    total = 0.0
    for lo, hi in ((-math.inf, -2 * c), (-2 * c, 2 * c), (2 * c, math.inf)):
        total += integrate.quad(f, lo, hi, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
    return float(total)


def xor_mixture(d, sigma_B, mu_norm=None):
    r"""The XOR mixture of Assumption B.36: four clusters of weight 1/4 along :math:`\pm e_1,\pm e_2`.

    .. math:: \mu_{1,2}=\pm\|\mu\|e_1,\quad\mu_{3,4}=\pm\|\mu\|e_2,\quad\|\mu\|=\sqrt d,\quad
              \Sigma=\sigma_B^2I,\quad y_{(1,2)}=+1,\ y_{(3,4)}=-1.

    Parameters
    ----------
    d : int
        Dimension, d >= 2.
    sigma_B : float
        Cluster standard deviation (> 0; the assumption asks :math:`1\le\sigma_B\le\sqrt{d/(\tau\log\log d)}`).
    mu_norm : float, optional
        :math:`\|\mu_j\|` (default :math:`\sqrt d`, as in the paper).

    Returns
    -------
    GaussianMixture

    Notes
    -----
    Regime: any d >= 2 and sigma_B > 0 (the theorem's range of sigma_B is not enforced).

    References
    ----------
    .. [src] [Shi24, Assumption B.36]

    Examples
    --------
    >>> gm = xor_mixture(100, 3.0)
    >>> round(gm.bayes_error(), 6)
    0.018252
    """
    d = check("gradient_features.xor_mixture", "d", d, Integer(2))
    sigma_B = check("gradient_features.xor_mixture", "sigma_B", sigma_B, Interval(0, math.inf, "neither"))
    nm = math.sqrt(d) if mu_norm is None else check("gradient_features.xor_mixture", "mu_norm", mu_norm,
                                                    Interval(0, math.inf, "neither"))
    mus = np.zeros((4, d))
    mus[0, 0], mus[1, 0], mus[2, 1], mus[3, 1] = nm, -nm, nm, -nm
    return GaussianMixture(mus, np.full(4, sigma_B), np.full(4, 0.25), np.array([1.0, 1.0, -1.0, -1.0]))


class LinearSeparable(DataModel):
    r"""Linearly separable data of B.5.1 with a concrete law (docs/gradient_features.md; the paper gives none).

    .. math:: y=\pm1\ \text{w.p.}\ \tfrac12,\qquad \mathbf x=y\,s\,\mathbf w^*+P_\perp\mathbf z,\quad
              \mathbf z\sim\mathcal N(0,I_d),\quad s\ge\beta\ \text{with law}\ P(s=s_k)=q_k,

    so :math:`y\langle\mathbf w^*,\mathbf x\rangle=s\ge\beta` (margin), :math:`\rho=\mathbb E s`,
    :math:`\mathbb E[y\mathbf x]=\rho\mathbf w^*` and :math:`\mathbb E[yP_\perp\mathbf x]=0`.

    Parameters
    ----------
    w_star : array_like (d,)
        Direction (normalised to a unit vector).
    signal : array_like (K,)
        Support :math:`s_k>0` of the signal (default: one point, :math:`s\equiv1`).
    signal_probs : array_like (K,), optional
        Probabilities :math:`q_k` (default uniform).

    Notes
    -----
    Regime: d >= 2 (the noise lives in the d - 1 directions orthogonal to w*).

    References
    ----------
    .. [src] [Shi24, App. B.5.1, (B.213), Lemma B.26]; the law in docs/gradient_features.md
    """

    def __init__(self, w_star, signal=(1.0,), signal_probs=None):
        owner = "gradient_features.LinearSeparable"
        w = check(owner, "w_star", w_star, FiniteArray(1))
        nw = np.linalg.norm(w)
        if w.size < 2 or nw == 0:
            raise InvalidParameterError(f"The 'w_star' parameter of {owner} must be a nonzero vector of size >= 2. "
                                        f"Got {w!r} instead.")
        self.w_star = w / nw
        self.signal = check(owner, "signal", signal, FiniteArray(1))
        if self.signal.size == 0 or np.any(self.signal <= 0):
            raise InvalidParameterError(f"The 'signal' parameter of {owner} must be a non-empty array of values > 0. "
                                        f"Got {self.signal!r} instead.")
        K = self.signal.size
        q = np.full(K, 1.0 / K) if signal_probs is None else check(owner, "signal_probs", signal_probs,
                                                                   FiniteArray(1, (K,)))
        if np.any(q < 0) or abs(q.sum() - 1.0) > _SUM_TOL:
            raise InvalidParameterError(f"The 'signal_probs' parameter of {owner} must be >= 0 and sum to 1. "
                                        f"Got {q!r} instead.")
        self.signal_probs = q

    def __repr__(self):
        return f"LinearSeparable(d={self.dim}, K={self.signal.size})"

    @property
    def dim(self) -> int:
        return self.w_star.size

    @property
    def rho(self) -> float:
        r"""Signal :math:`\rho=\mathbb E[y\langle\mathbf w^*,\mathbf x\rangle]=\mathbb E s`."""
        return float(self.signal_probs @ self.signal)

    @property
    def beta(self) -> float:
        r"""Margin :math:`\beta=\min y\langle\mathbf w^*,\mathbf x\rangle=\min_k s_k` (over the support)."""
        return float(self.signal[self.signal_probs > 0].min())

    def sample(self, n, rng):
        r"""Draw :math:`n` pairs :math:`(\mathbf x,y)`; see the class docstring.

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
        n = check("gradient_features.LinearSeparable.sample", "n", n, Integer(0))
        rng = np.random.default_rng(rng)
        y = rng.choice([-1.0, 1.0], size=n)
        s = rng.choice(self.signal, size=n, p=self.signal_probs)
        Z = rng.standard_normal((n, self.dim))
        Z -= np.outer(Z @ self.w_star, self.w_star)
        return Z + np.outer(y * s, self.w_star), y

    def E_yx(self):
        r""":math:`\mathbb E[y\mathbf x]=\rho\mathbf w^*` (B.213)."""
        return self.rho * self.w_star

    def bounds(self) -> Bounds:
        r""":math:`B_x=\infty`, :math:`B_{x2}=\mathbb Es^2+d-1` exactly, :math:`B_{x1}=\sqrt{B_{x2}}` (Jensen)."""
        m2 = float(self.signal_probs @ self.signal ** 2) + self.dim - 1
        return Bounds(math.inf, math.sqrt(m2), m2)

    def _split(self, W, b):
        W, b, _ = _as_neurons(f"{self!r}.simplified_gradient", W, b)
        alpha = W @ self.w_star                                        # <w, w*>
        perp = W - np.outer(alpha, self.w_star)
        npp = np.linalg.norm(perp, axis=1)
        ys = np.concatenate([self.signal, -self.signal])              # y s over the 2K atoms
        q = 0.5 * np.concatenate([self.signal_probs, self.signal_probs])
        return b, alpha, perp, npp, ys, q

    def simplified_gradient(self, W, b):
        r"""Closed-form :math:`G(\mathbf w,b)` of the linear model (docs/gradient_features.md).

        With :math:`\kappa=(ys\langle\mathbf w,\mathbf w^*\rangle-b)/\|\mathbf w_\perp\|`:

        .. math:: G(\mathbf w,b)=\mathbb E_{y,s}\big[s\,\Phi(\kappa)\,\mathbf w^*+y\,\varphi(\kappa)\,
                  \mathbf w_\perp/\|\mathbf w_\perp\|\big];

        for :math:`\mathbf w_\perp=0` the indicator is deterministic:
        :math:`G=\mathbb E[s\,\mathbb I[ys\alpha>b]]\mathbf w^*`.

        Parameters
        ----------
        W : array_like, shape (M, d)
            Neuron weights (rows, nonzero).
        b : array_like, shape (M,) or scalar
            Biases.

        Returns
        -------
        G : ndarray (M, d)

        Notes
        -----
        Accuracy: ||G - G_exact|| <= 4 eps sum_{s,y} (q/2)(s Phi + phi)(1 + (d + 2)(1 + |kappa|)(K + |kappa|)) + 1e-300
        rho, K = (s |<w, w*>| + |b| + ||w||)/||w_perp|| (the rounding of w_perp = w - <w, w*> w*, large for w within
        1e-9 of w*); measured 0.051 of the bound.
        Regime: any w != 0 and b.

        References
        ----------
        .. [src] [Shi24, Lemma B.25]; derived in docs/gradient_features.md
        """
        b, alpha, perp, npp, ys, q = self._split(W, b)
        num = alpha[:, None] * ys - b[:, None]                         # (M, 2K)
        deg = npp == 0
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = num / npp[:, None]
            unit = perp / npp[:, None]
        Phi = np.where(deg[:, None], (num > 0).astype(float), special.ndtr(kappa))
        phi = np.where(deg[:, None], 0.0, normal_pdf(np.where(deg[:, None], 0.0, kappa)))
        g_star = (Phi * q * np.abs(ys)).sum(1)
        g_perp = (phi * q * np.sign(ys)).sum(1)
        return np.outer(g_star, self.w_star) + np.where(deg[:, None], 0.0, g_perp[:, None] * unit)

    def A(self, W, b):
        r"""Closed-form :math:`A(\mathbf w,b)=\mathbb E_{y,s}\big[y\,\|\mathbf w_\perp\|\,\psi(\kappa)\big]`
        (:math:`\mathbb E_{y,s}[y\,\sigma(ys\alpha-b)]` when :math:`\mathbf w_\perp=0`).

        Parameters
        ----------
        W : array_like, shape (M, d)
            Neuron weights (rows, nonzero).
        b : array_like, shape (M,) or scalar
            Biases.

        Returns
        -------
        A : ndarray (M,)

        Notes
        -----
        Accuracy: |A - A_exact| <= 4 eps sum_{s,y} (q/2) ||w_perp|| psi (1 + (d + 2)(1 + |kappa|)(K + |kappa|)) + 1e-300
        ||w||, K as in :meth:`simplified_gradient`; measured 0.052 of the bound.
        Regime: any w != 0 and b.

        References
        ----------
        .. [src] derived in docs/gradient_features.md
        """
        b, alpha, perp, npp, ys, q = self._split(W, b)
        num = alpha[:, None] * ys - b[:, None]
        safe = np.where(npp == 0, 1.0, npp)
        val = np.where((npp == 0)[:, None], np.maximum(num, 0.0), safe[:, None] * relu_moment(num / safe[:, None]))
        return (val * q * np.sign(ys)).sum(1)

    def ground_truth(self):
        r"""Ground truth of Lemma B.26 (B.226): :math:`g^*=\frac1\beta\sigma(\langle\mathbf w^*,\mathbf x\rangle)
        -\frac1\beta\sigma(-\langle\mathbf w^*,\mathbf x\rangle)=\langle\mathbf w^*,\mathbf x\rangle/\beta`.

        Returns
        -------
        a_star : ndarray (2,)
        W_star : ndarray (2, d)
        b_star : ndarray (2,)

        Notes
        -----
        Regime: always; hinge risk 0 since :math:`y\,g^*=s/\beta\ge1`.

        References
        ----------
        .. [src] [Shi24, Lemma B.26, (B.226)]
        """
        return (np.array([1.0, -1.0]) / self.beta, np.stack([self.w_star, -self.w_star]), np.zeros(2))

    def ground_truth_loss(self, loss="hinge"):
        r"""Exact risk of :meth:`ground_truth`: :math:`\mathbb E_s\,\ell(s/\beta)` (a finite sum).

        Parameters
        ----------
        loss : {"hinge", "logistic"}
            The loss (logistic is base 2).

        Returns
        -------
        float

        Notes
        -----
        Accuracy: relative error <= 8 eps (signals 1e-3..1e3); measured 0.16 of the bound.
        Regime: always; 0 for the hinge.

        References
        ----------
        .. [src] [Shi24, Lemma B.26]; derived in docs/gradient_features.md
        """
        ell = LOSSES[check(f"{self!r}.ground_truth_loss", "loss", loss, Options(tuple(LOSSES)))]
        return float(self.signal_probs @ ell(self.signal / self.beta))
