r"""Population gradient and the first two steps of [Shi22]: the hinge certificate, the step-2 expansion, the
``eta^(1) -> 0`` limit and the two-step features (derived in docs/emergence.md).

With the hinge indicator ``1[y g <= 1]`` identically 1 (always at t = 1; certified by :func:`hinge_certificate`
at t = 2) the population gradient of neuron i is ``(-a_i T_i, -a_i T_b, -T_a)`` with the single-neuron
correlations of :func:`~popdyn.models.emergence.neuron_correlations`. Without it, small models are enumerated
exactly (``indicator="enumerate"``).
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np

from ..._validate import FiniteArray, Interval, InvalidParameterError, Options, RegimeWarning, check
from .activation import smooth_trunc_relu, window, window_derivs
from .correlations import gmm_correlations, neuron_correlations
from .data import GaussianParityMixture, gram
from .network import TwoLayerParams

__all__ = ["full_support", "population_gradient", "population_step", "hinge_certificate", "population_two_steps",
           "step2_expansion", "two_step_limit", "two_step_features"]

_MAX_BACKGROUND = 16      # 2^(D-k) background configurations per support row for the exact enumeration
_S = Interval(0.0, np.inf, "left")


def full_support(model):
    r"""Every input of the model with its probability and label: ``(phi, prob, y)``.

    .. math:: \Pr[\phi] = \pi_r\prod_{j\notin A}p_{j|r}^{\tilde\phi_j}(1-p_{j|r})^{1-\tilde\phi_j},\qquad
              \phi = (\tilde\phi - \mathbb E\tilde\phi)/\tilde\sigma

    Parameters
    ----------
    model : PatternModel
        With ``D - k <= 16`` background patterns.

    Returns
    -------
    phi : ndarray of shape (R 2^(D-k), D)
    prob : ndarray of shape (R 2^(D-k),)
    y : ndarray of shape (R 2^(D-k),)

    Notes
    -----
    Accuracy: probabilities relative error <= 2 (D - k + 2) eps, phi absolute <= 1e-13/sigt (differences of numbers
    in [0, 1], which cancel where a mean is near 0 or 1, over sigt); measured 0.18 of the bound
    (tests/test_accuracy_emergence.py, exact rationals).
    Regime: ``D - k <= 16``; exact (also for the paper's mixture, whose background depends on the row).

    References
    ----------
    .. [src] [Shi22, Section 3, Section 3.1].
    """
    nb = model.D - model.k
    if nb > _MAX_BACKGROUND:
        raise InvalidParameterError(f"The 'model' parameter of emergence.full_support must have D - k <= "
                                    f"{_MAX_BACKGROUND} background patterns. Got D - k = {nb} instead.")
    mom = model.moments()
    bg = np.array(list(itertools.product([0.0, 1.0], repeat=nb))).reshape(-1, nb)
    P, group = model.background_groups()
    pb = np.prod(np.where(bg[None, :, :] == 1.0, P[:, None, :], 1.0 - P[:, None, :]), axis=2)[group]   # (R, 2^nb)
    R = model.A_support.shape[0]
    phi = np.concatenate([np.repeat(model.phi_A(), len(bg), axis=0),
                          np.tile((bg - mom.p_bar) / mom.sigt, (R, 1))], axis=1)
    return phi, (model.A_probs[:, None] * pb).ravel(), np.repeat(model.labels, len(bg))


def _subspace_support(owner, model, params):
    """A-support rows with the conditional background mean: exact sums for a first layer with Q[:, k:] = 0."""
    if np.any(params.Q[:, model.k:] != 0.0):
        raise InvalidParameterError(f"The 'params' parameter of {owner} must have a zero background block Q[:, k:] "
                                    f"for indicator='subspace'. Got max |Q[:, k:]| = "
                                    f"{np.abs(params.Q[:, model.k:]).max():.3g} instead.")
    mom = model.moments()
    P, group = model.background_groups()
    phi = np.concatenate([model.phi_A(), (P[group] - mom.p_bar) / mom.sigt], axis=1)
    return phi, model.A_probs, model.labels


def population_gradient(model, params, s, indicator="one", method="fourier", weighted=False):
    r"""Population gradient of the hinge loss with the noise inside the network (no regulariser).

    .. math:: \partial_{q_i}L = -a_i\,\mathbb E\{y\,\mathbb 1[yg\le1]\,\mathrm{win}_s(z_i)\,\phi\},\quad
              \partial_{b_i}L = -a_i\,\mathbb E\{y\,\mathbb 1[yg\le1]\,\mathrm{win}_s(z_i)\},\quad
              \partial_{a_i}L = -\mathbb E\{y\,\mathbb 1[yg\le1]\,\tilde\sigma_s(z_i)\},

    ``z_i = <q_i, phi> + b_i``, ``g = sum_i a_i sigma~_s(z_i)``.

    On the Gaussian-mixture parity (:class:`~popdyn.models.emergence.GaussianParityMixture`) the rows of ``Q`` are
    the weights ``w_i`` in R^d, phi is the input x, and the correlations are
    :func:`~popdyn.models.emergence.gmm_correlations` (Stein's lemma, exact).

    Parameters
    ----------
    model : PatternModel or GaussianParityMixture
    params : TwoLayerParams
    s : float
        Smoothing ``sigma_xi >= 0`` (``indicator="one"`` with the Fourier method needs ``s > 0``).
    indicator : {"one", "enumerate", "subspace"}
        "one": the indicator set to 1 (exact when ``sup |g| < 1``, see :func:`hinge_certificate`); the
        correlations come from ``neuron_correlations(model, q, b, s, method)``. "enumerate": exact sums over
        :func:`full_support` with the indicator (``D - k <= 16``). "subspace": exact for a first layer in the
        class-relevant span (``Q[:, k:] = 0``, any D): g depends on the A block only, so the sums run over the
        A-support with the background replaced by its conditional mean ``E[phi_B | row]`` (0 under (A2): the
        span is then invariant, docs/emergence.md).
    method : str
        Method of :func:`~popdyn.models.emergence.neuron_correlations` when ``indicator="one"``.
    weighted : bool
        The class-weighted loss ``E[alpha_y l]``, ``alpha_y = 1/(2 P[y])`` of App. F (steps 1-2 of Thm 34).

    Returns
    -------
    TwoLayerParams
        ``dL/dQ`` (n, D), ``dL/db`` (n,), ``dL/da`` (n,).

    Notes
    -----
    Accuracy: "enumerate" (and "subspace", the same sums over fewer rows): absolute error <= 1e-12 times the sum of the
    moduli of each sum's terms, where no support point has |y g - 1| < 1e-9 (the indicator jumps there and rounding may
    pick either side); "one": that of :func:`~popdyn.models.emergence.neuron_correlations` (on the Gaussian-mixture parity,
    of :func:`~popdyn.models.emergence.gmm_correlations`). Measured 0.68 of the bound
    (tests/test_accuracy_emergence.py, the joint law enumerated in mpmath at 40 digits).
    Regime: "one" is exact only while ``y g <= 1`` on the whole support (t = 1: g = 0; t = 2: Lemma 19). On the
    Gaussian-mixture parity only "one" (the input is unbounded: no support to enumerate), exact while the sums of
    the positive and of the negative a_i (neurons with equal (w, b) merged, so a symmetric init has g = 0) are at
    most 1: then ``|g| <= 1`` for every x, since ``0 <= sigma~_s <= 1`` (a RegimeWarning otherwise);
    its classes balance, so ``weighted`` changes nothing there.

    References
    ----------
    .. [src] [Shi22, Lemma 12 (with xi inside the indicator: docs/emergence.md), proof of Lemma 15].
    """
    owner = "emergence.population_gradient"
    s = check(owner, "s", s, _S)
    if isinstance(model, GaussianParityMixture):
        return _gmm_gradient(owner, model, params, s, indicator)
    indicator = check(owner, "indicator", indicator, Options(("one", "enumerate", "subspace")))
    if weighted:
        model.moments().class_weights(owner, "weighted")
    if indicator == "one":
        T, Tb, Ta, _ = neuron_correlations(model, params.Q, params.b, s, method=method, class_weighted=weighted)
        return TwoLayerParams(-params.a[:, None] * T, -params.a * Tb, -Ta)
    phi, prob, y = full_support(model) if indicator == "enumerate" else _subspace_support(owner, model, params)
    prob = prob * (model.moments().class_weight(y, owner, "weighted") if weighted else 1.0)
    z = phi @ params.Q.T + params.b
    act = smooth_trunc_relu(z, s)
    r = prob * y * (y * (act @ params.a) <= 1.0)
    win = window(z, s) * r[:, None]
    return TwoLayerParams(-params.a[:, None] * (win.T @ phi), -params.a * win.sum(0), -(r @ act))


def _gmm_output_bound(params):
    """A bound on sup_x |g(x)| from the second layer alone: neurons with equal (w, b) merge (a mirrored pair
    cancels), then g lies in [-sum of the negative a, sum of the positive a], since 0 <= sigma~_s <= 1."""
    _, inv = np.unique(np.c_[params.Q, params.b], axis=0, return_inverse=True)
    a = np.bincount(inv.ravel(), weights=params.a)
    return float(max(a[a > 0].sum(), -a[a < 0].sum()))


def _gmm_gradient(owner, model, params, s, indicator):
    """:func:`population_gradient` on the Gaussian-mixture parity: ``(-a_i T_i, -a_i T_b, -T_a)`` with the exact
    correlations of :func:`~popdyn.models.emergence.gmm_correlations` (the indicator set to 1)."""
    check(owner, "indicator", indicator, Options(("one",)))
    if params.Q.shape[1] != model.d:
        raise InvalidParameterError(f"The 'params' parameter of {owner} must have weights Q of shape (n, d) = "
                                    f"(n, {model.d}) on a GaussianParityMixture. Got {params.Q.shape} instead.")
    bound = _gmm_output_bound(params)
    if bound > 1.0:
        warnings.warn(f"{owner}: sup |g| <= {bound:.3g} is not below 1, so y g <= 1 is not certified everywhere: the "
                      f"gradient with the hinge indicator set to 1 may be off.", RegimeWarning, stacklevel=3)
    T, Tb, Ta, _ = gmm_correlations(model, params.Q, params.b, s)
    return TwoLayerParams(-params.a[:, None] * T, -params.a * Tb, -Ta)


def population_step(model, params, eta, lam_a, lam_w, s, indicator="one", method="fourier", weighted=False):
    r"""One population GD step with weight decay on ``Q`` and ``a`` (biases unregularised), eq. (4).

    .. math:: Q^+ = (1-2\eta\lambda_w)Q - \eta\nabla_QL\,\rho,\quad b^+ = b - \eta\nabla_bL,\quad
              a^+ = (1-2\eta\lambda_a)a - \eta\nabla_aL

    ``lambda = 1/(2 eta)`` removes the previous value exactly (the "kill" of steps 1-2). ``rho = M^T M`` is the
    dictionary's Gram matrix (:func:`~popdyn.models.emergence.gram`; the identity for orthonormal M): the step is taken
    on ``w`` in ``R^d`` and ``Q = W M``.

    Parameters
    ----------
    model : PatternModel or GaussianParityMixture
        On the latter ``Q`` holds the weights in R^d (:func:`population_gradient`).
    params : TwoLayerParams
    eta : float
        Step size, > 0.
    lam_a, lam_w : float
        Weight decays, >= 0.
    s : float
        Smoothing of this step.
    indicator, method : str
        As in :func:`population_gradient`.
    weighted : bool
        Class-weighted loss (App. F), as in :func:`population_gradient`.

    Returns
    -------
    TwoLayerParams

    Notes
    -----
    Accuracy: that of :func:`population_gradient`, then one multiply-add per entry (a few eps of the step's terms more).
    Regime: that of :func:`population_gradient`. A decay factor within 1e-12 of 0 is set to 0, so that the kill
    is exact in floating point.

    References
    ----------
    .. [src] [Shi22, Section 3.1, eq. (4)].
    """
    owner = "emergence.population_step"
    eta = check(owner, "eta", eta, Interval(0.0, np.inf, "neither"))
    lam_a = check(owner, "lam_a", lam_a, _S)
    lam_w = check(owner, "lam_w", lam_w, _S)
    g = population_gradient(model, params, s, indicator, method, weighted)
    rho = None if isinstance(model, GaussianParityMixture) else gram(model)   # there Q is w itself
    gQ = g.Q if rho is None else g.Q @ rho                 # the step is on w in R^d: q = M^T w moves by rho grad_q

    def decay(lam):
        f = 1.0 - 2.0 * eta * lam
        return 0.0 if abs(f) < 1e-12 else f
    return TwoLayerParams(decay(lam_w) * params.Q - eta * gQ, params.b - eta * g.b,
                          decay(lam_a) * params.a - eta * g.a)


def _box_range(Q, v0, v1):
    """min and max of <q, v> over v in the box prod_j {v0_j, v1_j}, per row of Q."""
    return np.minimum(Q * v0, Q * v1).sum(1), np.maximum(Q * v0, Q * v1).sum(1)


def _z_range(model, Q, b):
    """Exact ``(min, max)`` over the support of ``<q_i, phi> + b_i`` for every row of ``Q`` (background, and an iid
    count-resolved A block: every configuration has positive probability, so each coordinate takes both values)."""
    mom, k = model.moments(), model.k
    if hasattr(model, "phi_A"):
        zA = model.phi_A() @ Q[:, :k].T                                        # (R, n)
        loA, hiA = zA.min(0), zA.max(0)
    else:
        loA, hiA = _box_range(Q[:, :k], -mom.mean_A / mom.sigt, (1.0 - mom.mean_A) / mom.sigt)
    lo, hi = _box_range(Q[:, k:], -mom.p_bar / mom.sigt, (1.0 - mom.p_bar) / mom.sigt)
    return loA + lo + b, hiA + hi + b


def hinge_certificate(model, params, s):
    r"""A deterministic bound on ``sup_x |g(x)|`` over the support (Lemma 19 made exact).

    Pairing neuron i with ``m + i`` (``n = 2m``), ``sigma~_s`` increasing and 1-Lipschitz with values in [0, 1]:

    .. math:: \sup|g|\le\sum_{i\le m}|a_i + a_{m+i}|\,\tilde\sigma_s(\bar z_i) +
              |a_{m+i}|\min\{1,\ \sup|z_{m+i}-z_i|\},\qquad \bar z_i = \sup_x z_i(x),

    and the unpaired ``sum_i |a_i| sigma~_s(z-bar_i)``; the smaller is returned. Sups are exact over the support.

    Parameters
    ----------
    model : PatternModel
    params : TwoLayerParams
    s : float
        Smoothing ``>= 0`` of the loss in which ``g`` enters.

    Returns
    -------
    float
        A bound ``B >= sup |g|``; ``B < 1`` certifies that the hinge indicator is 1 everywhere.

    Notes
    -----
    Accuracy: a bound up to rounding: B >= sup|g| - 1e-12 sum|a|; measured: below sup|g| by at most 7.4e-4 of that
    (tests/test_accuracy_emergence.py, sup|g| over the enumerated support in mpmath).
    Regime: any parameters (the bound is tight for the symmetric network near init, where the paired terms
    are O(eta^(1))).

    References
    ----------
    .. [src] [Shi22, Lemma 19 (App. B.5)].
    """
    s = check("emergence.hinge_certificate", "s", s, _S)
    Q, b, a = params.Q, params.b, params.a
    _, zmax = _z_range(model, Q, b)
    plain = float(np.abs(a) @ smooth_trunc_relu(zmax, s))
    if params.n % 2:
        return plain
    m = params.n // 2
    dlo, dhi = _z_range(model, Q[m:] - Q[:m], b[m:] - b[:m])
    paired = (np.abs(a[:m] + a[m:]) @ smooth_trunc_relu(zmax[:m], s)
              + np.abs(a[m:]) @ np.minimum(1.0, np.maximum(dhi, -dlo)))
    return min(plain, float(paired))


def population_two_steps(model, params0, steps, method="fourier"):
    r"""The exact population steps 1 and 2 with the hinge indicator 1 (g^(0) = 0; g^(1) certified).

    .. math:: \theta^{(t)} = \theta^{(t-1)} - \eta^{(t)}\nabla_\theta\big[L(g^{(t-1)};\sigma_\xi^{(t)}) +
              R(\lambda_a^{(t)}, \lambda_w^{(t)})\big],\quad t = 1, 2

    Parameters
    ----------
    model : PatternModel
    params0 : TwoLayerParams
        Initial parameters (symmetric, so that ``g^(0) = 0``).
    steps : sequence of Step
        At least two; the first two are used (e.g. :func:`theory_schedule`).
    method : str
        Method of ``neuron_correlations``.

    Returns
    -------
    params1, params2 : TwoLayerParams
    certificate : float
        :func:`hinge_certificate` of ``params1`` at ``sigma_xi^(2)``; a RegimeWarning is raised when >= 1.

    Notes
    -----
    Accuracy: that of :func:`population_step`, twice, and of :func:`hinge_certificate`.
    Regime: ``g^(0) = 0`` (symmetric init) and ``certificate < 1``. Steps with ``weighted`` use the class-weighted
    loss of App. F.

    References
    ----------
    .. [src] [Shi22, Lemmas 18-19, Lemma 23].
    """
    s1, s2 = steps[0], steps[1]
    p1 = population_step(model, params0, s1.eta, s1.lam_a, s1.lam_w, s1.s, method=method, weighted=s1.weighted)
    cert = hinge_certificate(model, p1, s2.s)
    if cert >= 1.0:
        warnings.warn(f"emergence.population_two_steps: sup|g^(1)| <= {cert:.3g} is not < 1, so the step-2 closed "
                      f"form (hinge indicator 1) is not certified (Lemma 19).", RegimeWarning, stacklevel=2)
    return p1, population_step(model, p1, s2.eta, s2.lam_a, s2.lam_w, s2.s, method=method, weighted=s2.weighted), cert


def step2_expansion(model, Q, b, s):
    r"""Second-order Taylor expansion in ``q`` of the correlations ``(T, T_b, T_a)`` at small ``q`` (step 2).

    With ``h = win_s(b)``, ``h', h''`` (:func:`window_derivs`), ``c = <q_A, phi_A>``, ``S = <q_B, phi_B>``:

    .. math:: T_j = \mathbb E[y\phi_j]\big(h + \tfrac12h''\textstyle\sum_B\sigma_{\phi\ell}^2q_\ell^2\big)
              + h'\sum_{\ell\in A}q_\ell\mathbb E[y\phi_j\phi_\ell] + \tfrac12h''\sum_{\ell,m\in A}q_\ell q_m
              \mathbb E[y\phi_j\phi_\ell\phi_m]\quad (j\in A),

    .. math:: T_j = \sigma_{\phi j}^2q_j\big(h'\,\mathbb Ey + h''\,\mathbb E[yc]\big) +
              \tfrac12h''q_j^2\,\mathbb Ey\,\mathbb E\phi_j^3\quad (j\notin A),

    .. math:: T_b = h\,\mathbb Ey + h'\,\mathbb E[yc] + \tfrac12h''\big(\mathbb E[yc^2] + \mathbb Ey\,\mathbb ES^2\big),
              \quad T_a = \tilde\sigma_s(b)\,\mathbb Ey + h\,\mathbb E[yc] + \tfrac12h'\big(\mathbb E[yc^2] +
              \mathbb Ey\,\mathbb ES^2\big),

    all up to ``O(|q|^3)``. Balanced classes give ``T_j = h'' sigma_phi^2 (gamma/sigma~) q_j sum_A q``.

    Parameters
    ----------
    model : PatternModel
        With an independent background (``p_bg_rows`` None).
    Q : array_like of shape (n, D)
        Pattern coordinates (small).
    b : array_like of shape (n,)
        Biases.
    s : float
        Smoothing, > 0.

    Returns
    -------
    T : ndarray of shape (n, D)
    Tb, Ta : ndarray of shape (n,)

    Notes
    -----
    Accuracy: |T - exact| <= 2e-12 times the expansion with every term and factor in modulus (|h''| as (|u0| phi(u0) +
    |u1| phi(u1))/s^2, the label moments as the sums of their terms' moduli, E|y| = 1, plus E phi~_j / sigt for E[y
    phi_j]: the scales of their rounding), q of scale 1e-4..1, s in 1e-2..10; measured 0.038 of the bound
    (tests/test_accuracy_emergence.py, the expansion in mpmath from exact moments). This is the evaluation only: the
    truncation error O(|q|^3/s^3) is the approximation's, far above rounding.
    Regime: ``|q| << s``: the error is O(|q|^3 / s^3) relative; the background part is O(|q|^2) (feature
    improvement).

    References
    ----------
    .. [src] [Shi22, Section 5.1 (feature improvement), Lemma 20]; the expansion derived in docs/emergence.md.
    """
    owner = "emergence.step2_expansion"
    if getattr(model, "p_bg_rows", None) is not None:
        raise InvalidParameterError(f"The 'model' parameter of {owner} must have an independent background "
                                    f"(p_bg_rows None, assumption (A2)). Got a row-dependent background.")
    Q = check(owner, "Q", Q, FiniteArray(2, (None, model.D)))
    b = check(owner, "b", b, FiniteArray(1, (Q.shape[0],)))
    h, h1, h2 = window_derivs(b, s)
    mom, k = model.moments(), model.k
    sphi2 = np.broadcast_to(mom.sphi2, (model.D - k,))
    QA, QB = Q[:, :k], Q[:, k:]
    M2, M3 = model.mixed_moments(2), model.mixed_moments(3)
    ES2 = (QB ** 2) @ sphi2
    Eyc = QA @ mom.E_y_phi_A
    Eyc2 = np.einsum("il,lm,im->i", QA, M2, QA)
    p = mom.p_bar
    Ephi3 = p * (1 - p) * (1 - 2 * p) / mom.sigt ** 3
    TA = (mom.E_y_phi_A[None, :] * (h + 0.5 * h2 * ES2)[:, None] + h1[:, None] * (QA @ M2)
          + 0.5 * h2[:, None] * np.einsum("il,im,jlm->ij", QA, QA, M3))
    TB = sphi2 * QB * (h1 * mom.Ey + h2 * Eyc)[:, None] + 0.5 * h2[:, None] * QB ** 2 * mom.Ey * Ephi3
    Tb = h * mom.Ey + h1 * Eyc + 0.5 * h2 * (Eyc2 + mom.Ey * ES2)
    Ta = smooth_trunc_relu(b, s) * mom.Ey + h * Eyc + 0.5 * h1 * (Eyc2 + mom.Ey * ES2)
    return np.concatenate([TA, TB], axis=1), Tb, Ta


def two_step_limit(model, params0, s2, weighted=False):
    r"""The ``eta^(1) -> 0`` limit of the two theory-schedule steps (closed form).

    .. math:: q_i^{(2)} = a_i^{(0)}h(b_i^{(0)})\,\rho\,\mathbb E[y\phi],\quad b_i^{(2)} = b_i^{(0)} + a_i^{(0)}h(b_i^{(0)})
              \,\mathbb Ey,\quad a_i^{(2)} = \mathbb Ey\,\tilde\sigma_{s_2}(b_i^{(0)}),\qquad h = \mathrm{win}_{s_2},

    with ``E[y phi] = (gamma/sigma~) 1_A`` (zero on the background) and ``rho = M^T M`` (the identity for orthonormal
    or no M; :func:`~popdyn.models.emergence.gram`). The class-weighted loss replaces ``y`` by
    ``alpha_y y``: ``E[alpha_y y] = 0``, so ``b^(2) = b^(0)``, ``a^(2) = 0`` and ``E[alpha_y y phi_A] =
    gamma_weighted/sigma~``.

    Parameters
    ----------
    model : PatternModel
    params0 : TwoLayerParams
        Initial parameters.
    s2 : float
        Smoothing of step 2, > 0 (``k^{-3/2}`` in Lemma 23).
    weighted : bool
        Steps 1-2 on the class-weighted loss (App. F, ``variant="general"``).

    Returns
    -------
    TwoLayerParams

    Notes
    -----
    Accuracy: |Q_ij - exact| <= 2e-12 |a_i h_i| (|E[y phi_j]| + E phi~_j / sigt), |a_i^(2) - exact| <= 2e-12
    sigma~_s(b_i) (|Ey| + 1), |b_i^(2) - exact| <= 4 eps |b_i| + 2e-12 |a_i h_i| (|Ey| + 1) (h = win_s; the moments'
    absolute scales; 1e-300 absolute where subnormal), both weightings; measured 0.11 of the bound
    (tests/test_accuracy_emergence.py, exact rationals, the window in mpmath).
    Regime: the theory schedule (``lambda = 1/(2 eta)`` kills at steps 1-2, ``eta^(2) = 1``) as ``eta^(1) -> 0``;
    the finite-``eta^(1)`` correction is O(eta^(1) |a^(0)| ||T^(1)||) (:func:`step2_expansion`). For balanced
    classes ``b^(2) = b^(0)`` and ``a^(2) = 0``.

    References
    ----------
    .. [src] [Shi22, Lemma 20 (beta = h(b^(0))), Lemma 23]; the limit derived in docs/emergence.md.

    Examples
    --------
    >>> from popdyn.models.emergence.data import parity_mixture
    >>> from popdyn.models.emergence.network import symmetric_init
    >>> model = parity_mixture(20, 3, 0.5)
    >>> p2 = two_step_limit(model, symmetric_init(model, 2), 3 ** -1.5)
    >>> float(np.abs(p2.Q[:, 3:]).max()), float(np.abs(p2.a).max())
    (0.0, 0.0)
    """
    s2 = check("emergence.two_step_limit", "s2", s2, Interval(0.0, np.inf, "neither"))
    mom = model.moments()
    c = params0.a * window(params0.b, s2)
    Ey = 0.0 if weighted else mom.Ey
    Ephi = np.zeros(model.D)
    Ephi[:model.k] = mom.gamma_weighted / mom.sigt if weighted else mom.E_y_phi_A
    rho = gram(model)
    Ephi = Ephi if rho is None else rho @ Ephi
    return TwoLayerParams(c[:, None] * Ephi[None, :], params0.b + c * Ey, Ey * smooth_trunc_relu(params0.b, s2))


def two_step_features(model, params, s=0.0, by="count"):
    r"""The feature table of a first layer in the class-relevant span: ``F[r, i] = sigma~_s(<q_i, phi^(r)> + b_i)``.

    For ``q_i = alpha_i 1_A`` (the two-step limit, :func:`two_step_limit`) the feature depends on the count only:

    .. math:: F_i(c) = \tilde\sigma_s\Big(\alpha_i\frac{c-\mu_A}{\tilde\sigma} + b_i\Big),\quad c = 0..k,
              \qquad \text{two steps: } \alpha_i = a_i^{(0)}h(b_i^{(0)})\frac{\gamma}{\tilde\sigma}.

    Parameters
    ----------
    model : PatternModel
    params : TwoLayerParams
        With ``Q[:, k:] = 0`` (the features see no background).
    s : float
        Smoothing of the feature (0: the truncated ReLU of stage 3).
    by : {"count", "support"}
        Rows: the counts 0..k (needs ``q_i`` constant on A) or the A-support rows.

    Returns
    -------
    ndarray of shape (k + 1, n) or (R, n)

    Notes
    -----
    Accuracy: absolute error <= 1e-12 |F| + 8 eps (|alpha| (k + mu_A)/sigt + |b|) (smooth_trunc_relu's relative 1e-12
    and the rounding of its argument, it being 1-Lipschitz), s = 0 included; measured 0.010 of the bound
    (tests/test_accuracy_emergence.py, the smoothed ReLU in mpmath).
    Regime: the background block of ``Q`` exactly 0 (else InvalidParameterError: the features would be random
    given the A block).

    References
    ----------
    .. [src] [Shi22, Section 5.1]; derived in docs/emergence.md.
    """
    owner = "emergence.two_step_features"
    by = check(owner, "by", by, Options(("count", "support")))
    s = check(owner, "s", s, _S)
    k, Q = model.k, params.Q
    if np.any(Q[:, k:] != 0.0):
        raise InvalidParameterError(f"The 'params' parameter of {owner} must have a zero background block Q[:, k:] "
                                    f"(features of the class-relevant span). Got max |Q[:, k:]| = "
                                    f"{np.abs(Q[:, k:]).max():.3g} instead.")
    if by == "support":
        return smooth_trunc_relu(model.phi_A() @ Q[:, :k].T + params.b, s)
    alpha = Q[:, :k].mean(1)
    if np.any(np.abs(Q[:, :k] - alpha[:, None]) > 1e-12 * np.abs(Q[:, :k]).max(initial=0.0)):
        raise InvalidParameterError(f"The 'params' parameter of {owner} must have rows constant on A for "
                                    f"by='count' (q_i = alpha_i 1_A). Use by='support'.")
    mom = model.moments()
    return smooth_trunc_relu(np.outer(mom.centred(np.arange(k + 1)) / mom.sigt, alpha) + params.b, s)
