r"""Downstream phase of the multi-task ReLU model: the random two-layer embedding on the learned first layer,
its "purified" twin, the linear probe, margins ([Collins24] eqs. (9)-(12), App. B; docs/multitask.md).

Downstream inputs are hypercube points ``v ~ Unif({-1, 1}^d)`` labelled ``fbar(v_{1:r})``. The embedding is

.. math:: g(v) = \sigma\big(\hat W\sigma(\alpha\bar W^+v + b) + \hat b\big) \in \mathbb R^{\hat m},\qquad
          \tilde g(v_{1:r}) = \sigma\big(\hat W\sigma(\hat\alpha\bar W^0_{:,1:r}v_{1:r} + b) + \hat b\big),

with ``Wbar`` the ``m_bar = m/2`` distinct rows of the symmetric init, ``alpha_hat = 2/(nu_w sqrt(m_bar))`` and
the corrected rescaling ``alpha = alpha_hat / kappa_par``, ``kappa_par = eta^2 2^-r/(2 pi)``.

Public names
------------
embedding:   :class:`DownstreamEmbedding`, :func:`rescaling_alpha`, :func:`hypercube`, :func:`lemmaB3_rhs`
probes:      :func:`fit_linear_probe`, :func:`svm_margin`, :func:`purified_margin`, :func:`ball_hinge_loss`
"""
from __future__ import annotations

import math

import numpy as np
from scipy import linalg, optimize, sparse

from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, as_int, check
from .tasks import sign_patterns

__all__ = ["DownstreamEmbedding", "rescaling_alpha", "hypercube", "lemmaB3_rhs", "fit_linear_probe",
           "svm_margin", "purified_margin", "ball_hinge_loss"]

_POS = Interval(0, math.inf, closed="neither")
_NONNEG = Interval(0, math.inf, closed="left")
_GAP = 1e-13        # ball_hinge_loss's declared gap: 1e-13 (the hinge mean's rounding) + 16 eps B sqrt(p) max|G|


def _relu(z):
    return np.maximum(z, 0.0)


def hypercube(n, d, seed=0):
    r"""``n`` i.i.d. points of ``Unif({-1, 1}^d)`` (the downstream inputs, eq. (12)).

    .. math:: v \sim \mathrm{Unif}(\{-1, 1\}^d)

    Parameters
    ----------
    n, d : int
        Number of points ``n >= 0`` and dimension ``d >= 1``.
    seed : int or sequence of int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    ndarray of shape (n, d), float64 entries in {-1, 1}

    Notes
    -----
    Accuracy: exact (integers in {-1, 1}).
    Regime: exact sampler.

    References
    ----------
    .. [src] [Collins24, eq. (12)].

    Examples
    --------
    >>> V = hypercube(3, 4, seed=1)
    >>> V.shape, bool(np.all(np.abs(V) == 1))
    ((3, 4), True)
    """
    n = as_int("multitask.hypercube", "n", n, low=0)
    d = as_int("multitask.hypercube", "d", d, low=1)
    return 2.0 * np.random.default_rng(seed).integers(0, 2, size=(n, d)) - 1.0


def rescaling_alpha(r, m_bar, nu_w, eta=1.0, kappa=None, convention="corrected"):
    r"""First-layer rescaling ``alpha`` of the downstream embedding (corrected; the paper's App. B prints it garbled).

    .. math:: \alpha = \hat\alpha/\kappa_\|,\qquad \hat\alpha = \frac{2}{\nu_w\sqrt{\bar m}},\qquad
              \kappa_\| = \frac{\eta^2 2^{-r}}{2\pi}

    so that ``alpha Wbar+_{:,1:r} = alpha_hat Wbar0_{:,1:r}`` at leading order.

    Parameters
    ----------
    r : int
        Ground-truth coordinates, ``r >= 1``.
    m_bar : int
        Number of distinct first-layer neurons ``m/2``, ``>= 1``.
    nu_w : float
        Init scale of W, > 0.
    eta : float
        Pretraining step size, > 0.
    kappa : float or None
        A measured ``kappa_par`` (e.g. the least-squares slope of ``Wbar+_par`` on ``Wbar0_par``), > 0; None uses
        the closed form of ``convention``.
    convention : {"corrected", "paper"}
        "paper": the proof's ``kappa = eta^2 2^-r-2`` (App. B, eq. (75)), which is wrong by the factor
        ``pi/2`` (docs/errata.md).

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 6 eps wherever the result is a normal float (inf past it), r to 2000, nu_w and eta
    in 1e-100..1e100 (2^r by ldexp; before: ZeroDivisionError at r = 1100) (measured: 0.26 of the declared bound).
    Regime: the leading-order one-step map (``eps = ||w_par||/||w_perp|| -> 0``); the exact kappa has an
    ``O(eps^2)`` correction (docs/multitask.md), which a measured ``kappa`` absorbs.

    References
    ----------
    .. [src] [Collins24, App. B: the printed alpha after eq. (73), alpha_hat after eq. (74), the alpha used in
       eq. (75)].

    Examples
    --------
    >>> round(rescaling_alpha(3, 4, 0.5) * 0.5 * 2 / (2 ** 5 * math.pi), 12)
    1.0
    """
    owner = "multitask.rescaling_alpha"
    r = as_int(owner, "r", r, low=1)
    m_bar = as_int(owner, "m_bar", m_bar, low=1)
    nu_w, eta = check(owner, "nu_w", nu_w, _POS), check(owner, "eta", eta, _POS)
    convention = check(owner, "convention", convention, Options(("corrected", "paper")))
    if kappa is not None:
        return 2.0 / (nu_w * math.sqrt(m_bar)) / check(owner, "kappa", kappa, _POS)
    m, x = math.frexp(eta)                     # 2 / (nu_w sqrt(m_bar) kappa_par) without forming 2^-r or eta^2
    c, e = (2 * math.pi, r) if convention == "corrected" else (1.0, r + 2)
    try:
        return math.ldexp(2.0 * c / (nu_w * math.sqrt(m_bar)) / (m * m), e - 2 * x)
    except OverflowError:
        return math.inf


def lemmaB3_rhs(r, d, m_bar, T, C=1.0):
    r"""Shape of Lemma B.3's distance between the learned and the purified embedding (constants unspecified).

    .. math:: \max_v\|\tilde g(v_{1:r}) - g(v)\|_2 \le C\Big(\frac{r^{3.5}+\log^{3.5}\bar m}{2^r\sqrt d}
              + \frac{\sqrt r\,d^{1.5}}{\sqrt T}\Big)

    Parameters
    ----------
    r, d, m_bar : int
        Ground-truth coordinates ``r >= 1``, input dimension ``d >= r``, distinct neurons ``m_bar >= 1``.
    T : float
        Number of pretraining tasks, > 0; ``math.inf`` drops the finite-T term.
    C : float
        The absolute constant (unspecified), > 0; default 1.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 8 eps for r to 1000, d to 1e6 (2^-r by ldexp) (measured: 0.23 of the declared
    bound).
    Regime: Lemma B.3's assumptions (those of Lemma B.2 and Prop. 4.1); constants unspecified. The explicit
    chain (75)-(79) it rests on is :meth:`DownstreamEmbedding.distance_bound`, which needs no constants.

    References
    ----------
    .. [src] [Collins24, Lemma B.3, eqs. (75)-(81)].

    Examples
    --------
    >>> lemmaB3_rhs(1, 4, 1, math.inf) == 1 / 4
    True
    """
    owner = "multitask.lemmaB3_rhs"
    r, d = as_int(owner, "r", r, low=1), as_int(owner, "d", d, low=1)
    if r > d:
        raise InvalidParameterError(f"The 'd' parameter of {owner} must be an int >= r = {r}. Got {d!r} instead.")
    m_bar = as_int(owner, "m_bar", m_bar, low=1)
    T, C = check(owner, "T", T, Interval(0, math.inf, closed="right")), check(owner, "C", C, _POS)
    return C * (math.ldexp((r ** 3.5 + math.log(m_bar) ** 3.5) / math.sqrt(d), -r) + math.sqrt(r) * d ** 1.5 / math.sqrt(T))


class DownstreamEmbedding:
    r"""Random two-hidden-layer ReLU embedding on the rescaled learned first layer (eqs. (9), (73), (74)).

    .. math:: g(v) = \sigma\big(\hat W\sigma(\alpha\bar W^+v + b) + \hat b\big),\qquad
              \tilde g(v_{1:r}) = \sigma\big(\hat W\sigma(\hat\alpha\bar W^0_{:,1:r}v_{1:r} + b) + \hat b\big),

    .. math:: b \sim \mathrm{Unif}\big[\pm\sqrt2\gamma/\sqrt{\bar m}\big]^{\bar m},\quad
              \hat w_j \sim \mathcal N(0, \tfrac{2}{\hat m}I_{\bar m}),\quad
              \hat b \sim \mathrm{Unif}\big[\pm\sqrt2\hat\gamma/\sqrt{\hat m}\big]^{\hat m}

    Parameters
    ----------
    W_plus : array_like of shape (m, d)
        The pretrained first layer (one row per neuron, m even); its first ``m_bar = m/2`` rows are used
        ([Collins24, App. B]: the symmetric init duplicates the others).
    r : int
        Ground-truth coordinates, ``1 <= r < d``.
    m_hat : int
        Width of the random second layer, ``>= 1``.
    gamma, gamma_hat : float
        Bias ranges of the two layers, ``>= 0`` (paper: Theta(sqrt(r) log r), Theta(r^3 log^4 r); constants
        unspecified; about 1-2 times the typical pre-activation covers the layer inputs).
    alpha : float or None
        First-layer rescaling, > 0; None gives :func:`rescaling_alpha` ``(r, m_bar, nu_w, eta)``.
    nu_w : float or None
        Init scale of W, > 0; None gives the paper's ``d^-1.25``.
    seed : int
        Seed of ``b``, ``W_hat``, ``b_hat`` (the same seed gives the same random layers for any ``W_plus``, so
        learned and random features can be compared on one draw).
    W0 : array_like of shape (m, d) or None
        The initial first layer, needed only by the purified embedding.
    eta : float
        Pretraining step size (for the default alpha), > 0.

    Notes
    -----
    Accuracy: ``features``, ``purified``: absolute error <= (m_bar + m_hat + d + 4) eps times the absolute scale
    |W_hat| (alpha |W| |v| + |b|) + |b_hat| (measured: 0.049 of the declared bound); ``distance_to_purified`` twice
    that (measured: 0.021 of the declared bound).
    Regime: any first layer; the purified embedding is close to ``g`` when ``W_plus`` is the one-step map of
    ``W0`` in the paper's regime (Lemma B.3). ``b`` has ``m_bar`` entries (the main text's ``m`` is ``m_bar``)
    and ``w_hat_j`` lives in ``R^m_bar`` (App. B's ``I_d`` is a typo).

    References
    ----------
    .. [src] [Collins24, Section 3, eqs. (9)-(11); App. B, eqs. (73), (74)].

    Examples
    --------
    >>> W0 = np.vstack([np.eye(3, 5)] * 2)
    >>> e = DownstreamEmbedding(W0 / (2 * math.pi * 8), 3, 16, 1.0, 1.0, nu_w=1.0, W0=W0)
    >>> V = hypercube(4, 5)
    >>> bool(np.allclose(e.features(V), e.purified(V[:, :3])))
    True
    """

    def __init__(self, W_plus, r, m_hat, gamma, gamma_hat, alpha=None, nu_w=None, seed=0, *, W0=None, eta=1.0):
        owner = "multitask.DownstreamEmbedding"
        W_plus = check(owner, "W_plus", W_plus, FiniteArray(2))
        m, d = W_plus.shape
        if m < 2 or m % 2:
            raise InvalidParameterError(f"The 'W_plus' parameter of {owner} must have an even number m >= 2 of rows "
                                        f"(the symmetric init, eq. (6)). Got shape {W_plus.shape} instead.")
        self.r = as_int(owner, "r", r, low=1, high=d - 1)
        self.m_hat = as_int(owner, "m_hat", m_hat, low=1)
        self.gamma = check(owner, "gamma", gamma, _NONNEG)
        self.gamma_hat = check(owner, "gamma_hat", gamma_hat, _NONNEG)
        self.nu_w = float(d) ** -1.25 if nu_w is None else check(owner, "nu_w", nu_w, _POS)
        self.seed = as_int(owner, "seed", seed, low=0)
        self.m_bar = m // 2
        self.W_bar = W_plus[:self.m_bar]
        self.alpha_hat = 2.0 / (self.nu_w * math.sqrt(self.m_bar))
        self.alpha = (rescaling_alpha(self.r, self.m_bar, self.nu_w, eta) if alpha is None
                      else check(owner, "alpha", alpha, _POS))
        if W0 is None:
            self.W0_bar = None
        else:
            W0 = check(owner, "W0", W0, FiniteArray(2, (m, d)))
            self.W0_bar = W0[:self.m_bar]
        rng = np.random.default_rng([self.seed, 3])
        self.b = rng.uniform(-1.0, 1.0, self.m_bar) * math.sqrt(2.0) * self.gamma / math.sqrt(self.m_bar)
        self.W_hat = rng.standard_normal((self.m_hat, self.m_bar)) * math.sqrt(2.0 / self.m_hat)
        self.b_hat = rng.uniform(-1.0, 1.0, self.m_hat) * math.sqrt(2.0) * self.gamma_hat / math.sqrt(self.m_hat)

    def __repr__(self):
        return (f"DownstreamEmbedding(m_bar={self.m_bar}, d={self.W_bar.shape[1]}, r={self.r}, m_hat={self.m_hat}, "
                f"gamma={self.gamma!r}, gamma_hat={self.gamma_hat!r}, alpha={self.alpha:.6g}, seed={self.seed})")

    def _top(self, H):
        return _relu(_relu(H + self.b) @ self.W_hat.T + self.b_hat)

    def _inputs(self, name, V, cols):
        V = np.asarray(V, dtype=np.float64)
        if V.ndim != 2 or V.shape[1] != cols or not np.all(np.isfinite(V)):
            raise InvalidParameterError(f"The {name!r} parameter of multitask.DownstreamEmbedding must be a finite "
                                        f"(n, {cols}) array. Got shape {V.shape} instead.")
        return V

    def features(self, V):
        """The embedding ``g(v)`` of each row of ``V`` (n, d): shape (n, m_hat)."""
        return self._top(self.alpha * self._inputs("V", V, self.W_bar.shape[1]) @ self.W_bar.T)

    def _W0_par(self):
        if self.W0_bar is None:
            raise InvalidParameterError("The 'W0' parameter of multitask.DownstreamEmbedding must be the (m, d) "
                                        "initial first layer for the purified embedding (eq. (74)). Got None instead.")
        return self.W0_bar[:, :self.r]

    def purified(self, Vr):
        """The purified embedding ``g~(v_{1:r})`` of each row of ``Vr`` (n, r): shape (n, m_hat); needs ``W0``."""
        return self._top(self.alpha_hat * self._inputs("Vr", Vr, self.r) @ self._W0_par().T)

    def distance_to_purified(self, V):
        """``||g~(v_{1:r}) - g(v)||_2`` for each row of ``V`` (n, d): shape (n,) (Lemma B.3's left side)."""
        V = self._inputs("V", V, self.W_bar.shape[1])
        return np.linalg.norm(self.purified(V[:, :self.r]) - self.features(V), axis=1)

    def distance_bound(self):
        r"""Lemma B.3's chain (75)-(79) with the actual matrices: a bound on ``max_v ||g~ - g||`` (no constants).

        .. math:: \|\hat W\|_2\Big(\sqrt r\,\|\hat\alpha\bar W^0_{:,1:r} - \alpha\bar W^+_{:,1:r}\|_2
                  + \alpha\sqrt{d-r}\,\|\bar W^+_{:,r+1:d}\|_2\Big)
        """
        r, d = self.r, self.W_bar.shape[1]
        par = np.linalg.norm(self.alpha_hat * self._W0_par() - self.alpha * self.W_bar[:, :r], 2)
        perp = np.linalg.norm(self.W_bar[:, r:], 2)
        return float(np.linalg.norm(self.W_hat, 2) * (math.sqrt(r) * par + self.alpha * math.sqrt(d - r) * perp))


def _labels(owner, G, y):
    G = check(owner, "G", G, FiniteArray(2))
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (G.shape[0],) or not np.all(np.abs(y) == 1.0):
        raise InvalidParameterError(f"The 'y' parameter of {owner} must be a vector of {G.shape[0]} labels in "
                                    f"{{-1, 1}} (one per row of G). Got shape {y.shape} instead.")
    return G, y


def _probe_sq_hinge(K, y, lam, max_iter=500):
    """Finite Newton method (Keerthi & DeCoste 2005) in kernel form: ``a = X^T beta``; returns beta.

    Each step minimises the ridge least squares of the active set S (residual > 0); it stops when that minimiser
    has active set S itself (then it is the optimum: the loss equals the S-restricted one near it), else takes an
    exact line search along the step. Residuals within 1e-9 of 0 may sit on either side (rounding).
    """
    n = K.shape[0]
    beta, out = np.zeros(n), np.zeros(n)
    for _ in range(max_iter):
        S = 1.0 - y * out > 0
        target = np.zeros(n)
        target[S] = linalg.solve(K[np.ix_(S, S)] + 0.5 * n * lam * np.eye(int(S.sum())), y[S], assume_a="pos")
        res_target = 1.0 - y * (K @ target)
        if not np.any((S != (res_target > 0)) & (np.abs(res_target) > 1e-9)):
            return target
        step = target - beta
        dout = K @ step
        a1, a2, t = beta @ dout, step @ dout, 1.0
        for _ in range(100):                                  # exact line search: f'(t) is piecewise linear
            res_t = 1.0 - y * (out + t * dout)
            act = res_t > 0
            slope = lam * (a1 + t * a2) - 2.0 / n * np.sum(y[act] * dout[act] * res_t[act])
            t_new = t - slope / (lam * a2 + 2.0 / n * np.sum(dout[act] ** 2))
            done, t = abs(t_new - t) <= 1e-15 * max(1.0, abs(t)), t_new
            if done:
                break
        beta, out = beta + t * step, out + t * dout
    raise RuntimeError(f"fit_linear_probe (sq_hinge) did not converge in {max_iter} Newton steps; raise lam")


def _probe_hinge(K, y, lam):
    """Dual box QP ``max_{0 <= theta <= 1} mean(theta) - theta^T Q theta / 2`` by L-BFGS-B; returns beta."""
    n = K.shape[0]
    Q = (y[:, None] * y[None, :]) * K / (lam * n * n)

    def neg_dual(theta):
        Qt = Q @ theta
        return 0.5 * theta @ Qt - theta.mean(), Qt - 1.0 / n

    res = optimize.minimize(neg_dual, np.zeros(n), jac=True, method="L-BFGS-B",
                            bounds=optimize.Bounds(np.zeros(n), np.ones(n)),
                            options={"maxiter": 50_000, "maxcor": 30, "ftol": 1e-15, "gtol": 1e-12})
    return res.x * y / (lam * n)


def fit_linear_probe(G, y, lam, loss="hinge", bias=True):
    r"""Regularised linear probe on embedded samples (eqs. (10), (86)).

    .. math:: (a, \tau) = \arg\min_{a, \tau}\ \frac1n\sum_{l=1}^n \ell\big(a^\top g_l + \tau, y_l\big)
              + \frac{\lambda}{2}\big(\|a\|^2 + \tau^2\big),

    ``ell(z, y) = max(0, 1 - yz)`` ("hinge", the paper's) or ``max(0, 1 - yz)^2`` ("sq_hinge").

    Parameters
    ----------
    G : array_like of shape (n, m_hat)
        Embedded samples (no standardisation is applied).
    y : array_like of shape (n,)
        Labels in {-1, 1}.
    lam : float
        Ridge ``lambda_hat_a``, > 0 (App. B.5: ``mu/B``).
    loss : {"hinge", "sq_hinge"}
        "hinge": the dual box-constrained QP ``max_{0 <= theta <= 1} mean(theta) - ||G^T(theta y)||^2/(2 lam n^2)``
        by L-BFGS-B, ``a = G^T(theta y)/(lam n)`` (duality gap ~1e-6 relative); "sq_hinge": the finite Newton
        method of Keerthi & DeCoste (2005) in kernel form (ridge least squares on the active set, exact line
        search; it terminates at the exact optimum, typically in < 10 steps).
    bias : bool
        Fit ``tau`` (regularised like ``a``, as in (86)); False fixes ``tau = 0`` as in (10) without bias.

    Returns
    -------
    a : ndarray of shape (m_hat,)
    tau : float

    Notes
    -----
    Accuracy: an optimiser (no closed-form reference): "sq_hinge" terminates at the exact optimum's active set;
    "hinge" has a duality gap ~1e-6 relative (not separately certified by the accuracy tests).
    Regime: any data; the problem is strongly convex, so the solution is unique. Both solvers work with the
    (n, n) Gram matrix (n up to a few thousand); the hinge dual is ill-conditioned for tiny ``lam`` and
    non-separable data (seconds at n = 1000), the squared hinge is fast throughout. Eq. (10) leaves ``tau``
    unregularised, (86) regularises it; this follows (86).

    References
    ----------
    .. [src] [Collins24, eq. (10), eq. (86)].

    Examples
    --------
    >>> a, tau = fit_linear_probe([[1.0], [-1.0]], [1.0, -1.0], 1e-3)
    >>> bool(a[0] > 0.99 and abs(tau) < 1e-9)
    True
    """
    owner = "multitask.fit_linear_probe"
    G, y = _labels(owner, G, y)
    lam = check(owner, "lam", lam, _POS)
    loss = check(owner, "loss", loss, Options(("hinge", "sq_hinge")))
    bias = check(owner, "bias", bias, Options((True, False)))
    K = G @ G.T + 1.0 if bias else G @ G.T          # Gram of the features with a constant 1 appended
    beta = _probe_hinge(K, y, lam) if loss == "hinge" else _probe_sq_hinge(K, y, lam)
    return G.T @ beta, float(beta.sum()) if bias else 0.0


def svm_margin(G, y):
    r"""Hard-margin SVM with bias: the largest margin of a unit-norm linear separator of the rows of ``G``.

    .. math:: \mu = \max_{\|a\|_2 = 1,\ \tau}\ \min_i\ y_i(a^\top g_i + \tau)
              = \tfrac12\,\mathrm{dist}\big(\mathrm{conv}\{g_i: y_i = 1\},\ \mathrm{conv}\{g_i: y_i = -1\}\big)

    The convex-hull distance is minimised over the two simplices by SLSQP; the returned ``mu`` is the margin
    that the resulting direction actually attains (a certified lower bound of the optimum), and ``mu_upper``
    half the hull distance found (an upper bound).

    Parameters
    ----------
    G : array_like of shape (n, p)
        Points (n small: the solver is dense in n).
    y : array_like of shape (n,)
        Labels in {-1, 1}, both present.

    Returns
    -------
    dict
        ``mu`` (0 when the classes are not linearly separable), ``mu_upper``, ``a`` (unit vector), ``tau``.

    Notes
    -----
    Accuracy: ``mu`` is the margin its (a, tau) attains, absolute <= 8 p eps max|G| (measured: 0.059 of the declared
    bound); ``mu_upper - mu <= 1e-8 mu_upper + 8 p eps max|G|`` on separable data (measured: 0.013 of the declared
    bound); retried at max|G| ~ 1 when the first gap exceeds 1e-9 (before: a 3.5% gap at |G| ~ 1e3).
    Regime: any points; ``mu_upper - mu`` is the remaining optimality gap (~1e-10 relative for n <= 64).

    References
    ----------
    .. [src] [Collins24, Lemma B.1 (margin), Lemma B.4]; the hard-margin SVM on the 2^r points derived in
       docs/multitask.md.

    Examples
    --------
    >>> out = svm_margin([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]], [-1, 1, 1])
    >>> round(out["mu"], 9) == round(math.sqrt(2) / 2, 9)
    True
    """
    owner = "multitask.svm_margin"
    G, y = _labels(owner, G, y)
    pos, neg = G[y > 0], G[y < 0]
    if len(pos) == 0 or len(neg) == 0:
        raise InvalidParameterError(f"The 'y' parameter of {owner} must contain both labels -1 and 1 (a one-class "
                                    f"problem has no finite margin). Got {y!r} instead.")
    out = _hull_margin(pos, neg, 1.0)
    top = float(np.abs(G).max())
    if out["mu_upper"] - out["mu"] > 1e-9 * out["mu_upper"] and top > 0:
        # SLSQP's stopping rule is scale-dependent (a 3.5% gap at |G| ~ 1e3): retry at max|G| ~ 1 and keep the
        # tighter bracket (either mu is attained, either mu_upper is a hull distance)
        alt = _hull_margin(pos, neg, math.ldexp(1.0, math.frexp(top)[1]))
        best = alt if alt["mu"] > out["mu"] else out
        out = dict(best, mu_upper=min(out["mu_upper"], alt["mu_upper"]))
    return out


def _hull_margin(pos, neg, scale):
    """:func:`svm_margin` solved on the points divided by ``scale`` (a power of 2), results scaled back."""
    pos, neg = pos / scale, neg / scale
    A = np.vstack([pos, -neg])
    k = len(pos)
    Q = A @ A.T
    first = np.r_[np.ones(k), np.zeros(len(neg))]              # simplex constraints: sum lambda = sum kappa = 1
    cons = [{"type": "eq", "fun": lambda z: z @ first - 1.0, "jac": lambda z: first},
            {"type": "eq", "fun": lambda z: z @ (1 - first) - 1.0, "jac": lambda z: 1 - first}]
    z0 = np.r_[np.full(k, 1.0 / k), np.full(len(neg), 1.0 / len(neg))]
    res = optimize.minimize(lambda z: (z @ Q @ z, 2 * Q @ z), z0, jac=True, method="SLSQP", constraints=cons,
                            bounds=optimize.Bounds(np.zeros(len(z0)), np.ones(len(z0))),
                            options={"ftol": 1e-16, "maxiter": 1000})
    diff = A.T @ res.x
    gap = float(np.linalg.norm(diff))
    if gap == 0.0:
        return {"mu": 0.0, "mu_upper": 0.0, "a": np.zeros(pos.shape[1]), "tau": 0.0}
    a = diff / gap
    lo, hi = float((pos @ a).min()), float((neg @ a).max())
    return {"mu": max(0.5 * (lo - hi), 0.0) * scale, "mu_upper": 0.5 * gap * scale, "a": a,
            "tau": -0.5 * (lo + hi) * scale}


def purified_margin(embedding, fbar):
    r"""Margin of the purified embedding on the ``2^r`` points of ``{-1, 1}^r`` for the task ``fbar``.

    .. math:: \mu = \max_{\|a\|_2 = 1,\ \tau}\ \min_{u \in \{-1,1\}^r}\ \bar f(u)\big(a^\top\tilde g(u) + \tau\big)

    Parameters
    ----------
    embedding : DownstreamEmbedding
        With ``W0`` set.
    fbar : array_like of shape (2**r,)
        The task's labels in :func:`sign_patterns` order, both values present.

    Returns
    -------
    float
        ``mu`` of :func:`svm_margin` (0 if not separable).

    Notes
    -----
    Accuracy: that of :func:`svm_margin` on the purified points.
    Regime: exact for the purified embedding, which depends on ``v`` only through ``v_{1:r}``; Lemmas B.1/B.2
    bound it below by ``exp(-O(r^5 log^6 r log(log r/delta)))`` (constants unspecified).

    References
    ----------
    .. [src] [Collins24, Lemmas B.1, B.2].

    Examples
    --------
    >>> W0 = np.vstack([np.eye(2, 4)] * 2)
    >>> e = DownstreamEmbedding(W0, 2, 64, 1.0, 1.0, alpha=1.0, nu_w=1.0, W0=W0)
    >>> bool(purified_margin(e, [-1, 1, 1, 1]) > 0)
    True
    """
    owner = "multitask.purified_margin"
    if not isinstance(embedding, DownstreamEmbedding):
        raise InvalidParameterError(f"The 'embedding' parameter of {owner} must be a DownstreamEmbedding. "
                                    f"Got {type(embedding).__name__} instead.")
    fbar = check(owner, "fbar", fbar, FiniteArray(1, (2 ** embedding.r,)))
    return svm_margin(embedding.purified(sign_patterns(embedding.r)), fbar)["mu"]


def _hinge_bracket(A, B, theta, a):
    """``(lower, upper)`` from any dual point ``theta`` (clipped to [0, 1]) and any head ``a`` (scaled into the
    ball): the dual value ``mean(theta) - B ||A^T theta / N||`` (at least 0) and the hinge loss of the head."""
    theta = np.clip(theta, 0.0, 1.0)
    na = np.linalg.norm(a)
    a = a * (B / na) if na > B else a
    return (max(float(theta.mean() - B * np.linalg.norm(A.T @ theta) / len(theta)), 0.0),
            float(np.maximum(1.0 - A @ a, 0.0).mean()))


def _bracket_of(A, B, points):
    """The best ``(lower, upper)`` over dual points and heads ``(theta, a)``."""
    lows, ups = zip(*(_hinge_bracket(A, B, *pt) for pt in points))
    return max(lows), min(ups)


def _hinge_lp(A):
    """The unconstrained hinge minimiser (HiGHS) and its dual ``theta`` with ``A^T theta = 0`` made exact to
    rounding (its fractional entries corrected by least squares), or None if HiGHS fails."""
    N, p = A.shape
    res = optimize.linprog(np.r_[np.zeros(p), np.full(N, 1.0 / N)], A_ub=sparse.hstack([-A, -sparse.eye(N)]),
                           b_ub=-np.ones(N), bounds=[(None, None)] * p + [(0, None)] * N, method="highs")
    if not res.success:
        return None
    theta = np.clip(-N * res.ineqlin.marginals, 0.0, 1.0)
    free = (theta > 1e-9) & (theta < 1.0 - 1e-9)
    theta[~free] = np.round(theta[~free])
    if free.any():
        theta[free] -= np.linalg.lstsq(A[free].T, A.T @ theta, rcond=None)[0]
    return theta, res.x[:p]


def _smoothed_dual(A, B, gap):
    """A dual point and the best head from L-BFGS-B on the smoothed dual ``B sqrt(||v||^2 + eps^2) - mean(theta)``,
    eps decreasing from ``||E[y g]||`` to 1e-12 of it, from ``theta = 1``, at most 500 iterations per eps; the heads
    ``B v / sqrt(||v||^2 + eps^2)`` and ``B v / ||v||`` are feasible; it stops once its bracket is within ``gap``."""
    N = A.shape[0]
    V = A / N
    theta, bnds = np.ones(N), optimize.Bounds(np.zeros(N), np.ones(N))
    lower, best = -math.inf, (math.inf, None)
    for eps in np.linalg.norm(V.sum(axis=0)) * 10.0 ** -np.arange(0.0, 13.0, 2.0):   # smoothing continuation
        def neg_dual(t, eps=eps):
            v = V.T @ t
            nv = math.sqrt(v @ v + eps * eps)
            return B * nv - t.mean(), B * (V @ v) / nv - 1.0 / N

        theta = optimize.minimize(neg_dual, theta, jac=True, method="L-BFGS-B", bounds=bnds,
                                  options={"maxiter": 500, "ftol": 1e-15, "gtol": 1e-13}).x
        v = V.T @ theta
        nv = np.linalg.norm(v)
        lower = max(lower, float(theta.mean() - B * nv))
        for a in (B * v / math.sqrt(nv * nv + eps * eps), B * v / nv if nv > 0 else 0.0 * v):
            best = min(best, (float(np.maximum(1.0 - A @ a, 0.0).mean()), a), key=lambda c: c[0])
        if best[0] - lower <= gap or v @ v > 1e6 * eps * eps:    # closed, or smaller eps changes nothing
            break
    return theta, best[1]


def _kkt_point(A, B, S, I):
    """The optimality point of an active ball for the sets S (support, ``theta_S`` free) and I (violators, ``theta =
    1``), the rest ``theta = 0``: ``a = v / s``, ``v = u + A_S^T theta_S / N`` (``u`` the violators' rows summed / N)
    with ``A_S a = 1`` and ``||v|| = B s``, a quadratic in s; the root with ``theta_S`` nearest [0, 1], or None."""
    N = A.shape[0]
    AS, u = A[S], A[I].sum(axis=0) / N
    U, sv, Vt = np.linalg.svd(AS, full_matrices=False)        # (A_S A_S^T / N)^+ = N U sv^-2 U^T, O(|S| p^2)
    keep = sv > sv[:1].max(initial=0.0) * len(AS) * np.finfo(float).eps
    U, sv, Vt = U[:, keep], sv[keep], Vt[keep]
    t0, t1 = (U @ (N / sv ** 2 * (U.T @ r)) for r in (-(AS @ u), np.ones(len(AS))))   # theta_S = t0 + s t1
    v0, v1 = u + AS.T @ t0 / N, AS.T @ t1 / N                  # A_S (v0 + s v1) = s 1
    points = []
    for s in np.roots([v1 @ v1 - B * B, 2.0 * (v0 @ v1), v0 @ v0]):
        if s.imag == 0 and s.real > 0:
            theta = I.astype(float)
            theta[S] = t0 + s.real * t1
            a = (v0 + s.real * v1) / s.real
            a += Vt.T @ ((U.T @ (1.0 - AS @ a)) / sv)           # A_S a = 1 again: v0's rounding grows by 1/s
            points.append((theta, a))
    return min(points, key=lambda pt: np.abs(pt[0] - np.clip(pt[0], 0.0, 1.0)).max(), default=None)


def _active_set(A, B, S, I, a, steps=100):
    """Dual points and heads of an active-set walk from the sets S (support) and I (violators), after the least-norm
    head with ``A_S a = 1`` (optimal for an inactive ball, where the LP's dual is): each step solves
    :func:`_kkt_point`, then moves the one index that breaks optimality most (``theta_S`` outside [0, 1] leaves S;
    a margin on the wrong side of 1 joins S; with no point for the sets, the support point farthest from margin 1
    under the last head, first ``a``, leaves S), until none does."""
    S, I, m = S.copy(), I.copy(), A @ a
    a_in = np.linalg.lstsq(A[S], np.ones(S.sum()), rcond=None)[0] if S.any() else a    # inactive ball: A_S a = 1
    points = [(I.astype(float), a), (I.astype(float), a_in)]
    for _ in range(steps):
        pt = _kkt_point(A, B, S, I)
        if pt is None:
            if not S.any():
                break
            j = np.flatnonzero(S)[np.argmax(np.abs(m[S] - 1.0))]
            S[j], I[j] = False, m[j] <= 1.0
            continue
        points.append(pt)
        theta, head = pt
        bad = np.maximum(theta - 1.0, -theta) * S                 # theta_S outside [0, 1]
        if bad.max() > 0:
            j = int(np.argmax(bad))
            S[j], I[j] = False, theta[j] > 1.0
            continue
        m = A @ head
        bad = np.abs(m - 1.0) * ((~S & ~I & (m < 1.0 - 1e-12)) | (I & (m > 1.0 + 1e-12)))   # wrong side of 1
        if bad.max(initial=0.0) == 0:
            break                                              # optimal for its sets: the bracket is closed
        j = int(np.argmax(bad))
        S[j], I[j] = True, False
    return points


def ball_hinge_loss(G, y, B):
    r"""Best hinge loss of a bias-free linear head of norm at most B (the left side of Thm 4.6), bracketed.

    .. math:: L^* = \inf_{\|a\|_2\le B}\frac1N\sum_i \max(0, 1 - y_i a^\top g_i)
              = \max_{\theta\in[0,1]^N}\ \overline{\theta} - B\,\Big\|\frac1N\sum_i\theta_iy_ig_i\Big\|_2

    (minimax). Any ``theta`` gives a lower bound (``theta = 1``: the linear bound ``1 - B||E[y g]||``); any head
    in the ball gives an upper bound.

    Parameters
    ----------
    G : array_like of shape (N, p)
        The embedding of every point (e.g. all of ``{-1, 1}^d``, each with weight 1/N).
    y : array_like of shape (N,)
        Labels in {-1, 1}.
    B : float
        Norm bound, ``>= 0``.

    Returns
    -------
    (float, float)
        ``(lower, upper)`` with ``lower <= L* <= upper``.

    Notes
    -----
    Accuracy: ``0 <= lower <= L* <= upper`` always, to rounding (lower clamped at the trivial dual value 0 and at
    upper); ``upper - lower <= 1e-13 + 16 eps B sqrt(p) max|G|`` wherever the optimal sets (support points,
    violators) are found from the candidates below, which they were in every case tested (N to 80 and p to 9, B to
    1e6 and within 1e-12..1e-3 of the norm of a hinge minimiser, separable or not, degenerate integer embeddings:
    measured 0.85 of the bound, tests/test_accuracy_multitask.py; the validation claim's embeddings, N = 4096, p to
    495: 3e-16); where they are not, the gap is the smoothed solver's: read the bracket. Before: the smoothed dual
    alone, 1.8e-5 at N = 40, B = 4.44, 2.9e-6 at N = 4096, and 1.2e-2 for non-separable data at B = 1e5.
    Regime: any embedding. Candidates: ``theta = 1`` (``lower`` is never below the linear bound); the unconstrained
    hinge LP (HiGHS) with its dual made exact (``A^T theta = 0`` to rounding), which is L* when the ball holds its
    minimiser; L-BFGS-B on the smoothed dual ``B sqrt(||v||^2 + eps^2)`` (nonsmooth at ``v = 0``) while the gap is
    above the declared one; then, from the sets read off each candidate's margins and its theta, the least-norm
    head of an inactive ball and an active-set walk on the optimality conditions of an active ball (exact for
    given sets: least squares and a quadratic in the scale; one index moved per step, at most 100). Cost: one LP
    of N + p variables; the smoothed solve and the walks (O(N p) a step) only while a gap is open.

    References
    ----------
    .. [src] [Collins24, Theorem 4.6, eq. (15)].

    Examples
    --------
    >>> lo, up = ball_hinge_loss([[1.0], [-1.0]], [1.0, -1.0], 0.5)
    >>> round(lo, 12), round(up, 12)
    (0.5, 0.5)
    """
    owner = "multitask.ball_hinge_loss"
    G, y = _labels(owner, G, y)
    B = check(owner, "B", B, _NONNEG)
    A = G * y[:, None]
    gap = _GAP + 16 * np.finfo(float).eps * B * math.sqrt(G.shape[1]) * float(np.abs(G).max(initial=0.0))
    lp = _hinge_lp(A)
    points = [(np.ones(len(y)), np.zeros(G.shape[1]))] + ([lp] if lp is not None else [])   # theta = 1: >= linear
    lower, upper = _bracket_of(A, B, points)
    if upper - lower > gap:
        points.append(_smoothed_dual(A, B, gap))
        lower, upper = _bracket_of(A, B, points)
    for theta, head in points[:0:-1]:                          # the smoothed dual's sets first, then the LP's
        m = A @ head
        for tol in (1e-3, 1e-6):                                # read off the margins and off theta, two roundings
            for S, I in ((np.abs(m - 1.0) <= tol, m < 1.0 - tol),
                         ((theta > tol) & (theta < 1.0 - tol), theta >= 1.0 - tol)):
                if upper - lower > _GAP:                       # past the declared gap too: cheap next to the solve
                    lo, up = _bracket_of(A, B, _active_set(A, B, S, I, head))
                    lower, upper = max(lower, lo), min(upper, up)
    return min(lower, upper), upper
