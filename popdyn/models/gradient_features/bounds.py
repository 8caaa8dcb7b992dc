r"""Theorem requirements, error bounds and case-study parameters of gradient-feature learning (ch. 3).

Public names
------------
main theorem (Thm 3.12 = B.17 / B.23; B.94-B.100, B.128, B.130)
    :func:`main_theorem`, :func:`average_loss_bound` (the non-asymptotic B.96-B.98 / B.165-B.170)
good network (Lemma B.6 = 3.14, Lemma B.19)
    :func:`good_network_bound` (B.25 / B.149), :func:`good_network_scales` (B_eps, eps_a, norms of a~)
frozen first layer (Thm 3.4 = B.2, Lemma B.78)
    :func:`theorem_B2_bound`, :func:`smoothness_constant`, :func:`rademacher_bound`
finite samples (Lemma B.18)
    :func:`gradient_concentration`
parameter sizes after the first step (Lemma B.8)
    :func:`lemma_B8_bounds`
drift of the weights during training (Lemma B.9)
    :func:`lemma_B9_h` (the recursion B.71 in closed form, B.72-B.74), :func:`lemma_B9_bounds`
loss gap under the drift and the a-gradient (Lemma B.10)
    :func:`lemma_B10_bounds`
case studies ([Shi24, App. B.5])
    :func:`case_parameters` ("linear", "mixture", "xor", "parity", "uniform_parity"),
    :func:`uniform_parity_requirements` (Lemma B.54 / Thm B.56)
online convex optimisation (Thm B.7)
    :func:`oco_bound`
fixed features (Prop 3.23)
    :func:`fixed_feature_lower_bound_parity`
auxiliary inequalities (Lemmas B.73-B.76)
    :func:`max_gaussian_tail_bound`, :func:`chi2_tail_bound`, :func:`mills_bounds`,
    :func:`tail_expectation_bound`

Every O(.)/Omega(.)/Theta(.) constant the paper leaves unspecified is an explicit argument with default 1
(``consts`` for :func:`main_theorem`), and the results are orders of magnitude, not numbers the paper
proves. Logs are natural. "logistic" is the base-2 logistic loss
log2(1 + e^-z), so that l(0) = 1 and |l'(0)| = 1/(2 ln 2); the hinge loss has |l'(0)| = 1.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.special import erfcx, log_ndtr, ndtr

from ..._validate import (Interval, InvalidParameterError, Options, RegimeWarning, as_int, check, hidden_constants,
                           regime_check)
from ...gaussian import normal_pdf
from ..emergence.bounds import fixed_feature_lower_bound
from .parity import majority_coefficient

_SQRT_HALF_PI = math.sqrt(math.pi / 2.0)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_LOG_SQRT2PI = 0.5 * math.log(2.0 * math.pi)

__all__ = ["main_theorem", "average_loss_bound", "good_network_bound", "good_network_scales",
           "theorem_B2_bound", "smoothness_constant", "rademacher_bound", "lemma_B9_h", "lemma_B9_bounds",
           "case_parameters", "fixed_feature_lower_bound_parity", "max_gaussian_tail_bound",
           "chi2_tail_bound", "mills_bounds", "tail_expectation_bound", "uniform_parity_requirements", "oco_bound",
           "gradient_concentration", "lemma_B8_bounds", "lemma_B10_bounds", "LPRIME0", "MAIN_CONSTS",
           "B8_CONSTS", "B8_SUFFICIENT", "LIPSCHITZ"]

_POS = Interval(0.0, np.inf, "neither")
_NONNEG = Interval(0.0, np.inf, "left")
_OPEN01 = Interval(0.0, 1.0, "neither")
_GAMMA = Interval(0.0, 1.0, "neither")

#: |l'(0)| of the losses of the framework (hinge; base-2 logistic, docs/gradient_features.md).
LPRIME0 = {"hinge": 1.0, "logistic": 1.0 / (2.0 * math.log(2.0))}
#: The hidden constants of :func:`main_theorem`, each a multiplier with default 1.
MAIN_CONSTS = ("C_m1", "C_m2", "C_m3", "C_btilde", "C_eta", "C_T", "C_n1", "C_n2", "C_eta1", "C_sigma_a",
               "C_err")
_AVG_CONSTS = ("C_drift", "C_init", "C_err", "C_sample")


def _own(name):
    return f"gradient_features.{name}"


def _lprime(owner, loss):
    return LPRIME0[check(owner, "loss", loss, Options(tuple(LPRIME0)))]


def _pos(owner, **values):
    return [check(owner, k, v, _POS) for k, v in values.items()]


# ------------------------------------------------------------------ main theorem --------------------------------


def _m_min(p, r, B_a1, Bx1, B_b, B_G, eps, delta, C):
    X = r * B_a1 * Bx1 * np.sqrt(B_b / B_G)
    return (C["C_m1"] * X**4 / (p * eps**4) + C["C_m2"] / np.sqrt(delta)
            + C["C_m3"] * np.log(r / delta) ** 2 / p)


def _n_min(m, p, r, B_a1, B_a2, B_b, Bx, Bx2, B_G, eps, delta, T, lp, C):
    first = m * Bx * B_a2**2 * np.sqrt(B_b) * np.sqrt(m * p) * math.log(m) / (eps * r * B_a1 * np.sqrt(B_G))
    second = Bx / np.sqrt(Bx2) + np.log(T * m / (p * delta)) + (1.0 + 1.0 / B_G) * np.sqrt(Bx2) / lp
    return C["C_n1"] * first**3 + C["C_n2"] * second**3


def _main_regime(owner, drift, B_eps, B_b, m, m_min, n, n_min, d):
    entries = [("T eta Bx1 = C_T/(mp)^(1/4) < 1", drift, 1.0, "B.11", drift < 1.0),
               ("B_eps < B_b (Lemma B.6)", B_eps, B_b, "B.25", B_eps < B_b),
               ("m >= m_min (3.10)", m, m_min, "(3.10)", m >= m_min),
               ("n >= n_min (B.128)", n, n_min, "B.128", n >= n_min)]
    if d is not None:
        entries.append(("log m <= d", math.log(m), d, "Thm 3.12, B.11", math.log(m) <= d))
    return regime_check(owner, entries, stacklevel=4)


def main_theorem(p, gamma, B_G, r, B_a1, B_a2, B_b, Bx, Bx1, Bx2, eps, delta, *, m=None, n=None, sigma_w=1.0,
                 d=None, OPT=0.0, loss="hinge", consts=None, convention="corrected"):
    r"""Requirements, hyper-parameters and error bound of the main theorem (Thm 3.12 = B.17 / B.23).

    .. math::
        m_{\min} &= C_{m1}\frac{1}{p\epsilon^4}\Big(rB_{a1}B_{x1}\sqrt{B_b/B_G}\Big)^4 + \frac{C_{m2}}{\sqrt\delta}
                    + \frac{C_{m3}}{p}\log^2\frac r\delta \qquad (3.10)\\
        \tilde b &= C_{\tilde b}\frac{B_G^{1/4}B_{a2}B_b^{3/4}}{\sqrt r B_{a1}},\quad
        \eta = \frac{C_\eta\,\epsilon}{\big(\frac{\sqrt rB_{a2}B_bB_{x1}}{(mp)^{1/4}}+m\tilde b\big)
               \big(\frac{\sqrt{\log m}\,B_{x1}(mp)^{1/4}}{\sqrt{B_bB_G}}+1\big)},\quad
        T = \frac{C_T}{\eta B_{x1}(mp)^{1/4}} \qquad (B.99\text{-}B.100)\\
        \eta^{(1)} &= C_{\eta1}\frac{\min\{\eta,\eta\tilde b\}}{|\ell'(0)|(B_{x1}\sigma_w\sqrt d+\tilde b)},\quad
        \sigma_a = C_{\sigma_a}\frac{\tilde b(mp)^{1/4}}{|\ell'(0)|\eta^{(1)}B_{x1}\sqrt{B_GB_b}} \qquad (B.95)\\
        n_{\min} &= C_{n1}\Big(\frac{mB_xB_{a2}^2\sqrt{B_b}(mp)^{1/2}\log m}{\epsilon rB_{a1}\sqrt{B_G}}\Big)^3
                    + C_{n2}\Big(\frac{B_x}{\sqrt{B_{x2}}}+\log\frac{Tm}{p\delta}
                    +\Big(1+\frac1{B_G}\Big)\frac{\sqrt{B_{x2}}}{|\ell'(0)|}\Big)^3 \qquad (B.128)\\
        \text{error} &= \mathrm{OPT} + rB_{a1}B_{x1}\sqrt{2\gamma
                        + C_{err}\frac{\sqrt{B_{x2}}}{B_G|\ell'(0)|n^{1/3}}} + \epsilon \qquad (B.130)

    and the population error (Thm B.3 / B.11) drops the ``n`` term.

    Parameters
    ----------
    p, gamma, B_G : float
        Feature-set parameters: probability ``p in (0, 1]``, cone width ``gamma in (0, 1)``, gradient
        norm ``B_G > 0`` of S_{p, gamma, B_G} (3.6).
    r : int
        Number of neurons of the ground-truth network g*, ``r >= 1``.
    B_a1, B_a2, B_b : float
        Bounds of g*: ``|a_i| <= B_a1``, ``||a||_2 <= B_a2``, ``|b_i| <= B_b`` (3.7), all ``> 0``.
    Bx, Bx1, Bx2 : float
        ``||x|| <= Bx``, ``E||x|| <= Bx1``, ``E||x||^2 <= Bx2`` (Assumption 3.1), all ``> 0``.
    eps, delta : float
        Target excess error and failure probability, both in (0, 1).
    m : int or None
        Base width (the network has 4m neurons); None gives ``ceil(m_min)``.
    n : float or None
        Batch size per step; None gives ``n_min`` (may be ``inf`` when it exceeds float64).
    sigma_w : float
        Initial weight scale (free, Remark B.12), ``> 0``.
    d : int or None
        Input dimension; needed for ``eta1`` and ``sigma_a`` (None there otherwise) and for the regime
        check ``log m <= d``.
    OPT : float
        OPT_{d,r,B_F,S} or an upper bound on it, ``>= 0``.
    loss : {"hinge", "logistic"}
        Sets |l'(0)| (:data:`LPRIME0`); "logistic" is base 2.
    consts : dict or None
        Multipliers of the hidden constants, keys :data:`MAIN_CONSTS` (each default 1).
    convention : {"corrected", "paper"}
        "paper" evaluates (3.12)/(3.13) as typeset (no |l'(0)| in n_min and the error) and B.100 as typeset
        (``sqrt(log m Bx1 (mp)^(1/4))`` in eta).

    Returns
    -------
    dict
        ``m_min, T, n_min, eta, eta1, sigma_a, b_tilde, error_bound, error_bound_population`` (floats;
        ``eta1, sigma_a`` None without ``d``), plus ``m, n`` (the values used), ``sigma_a_eta1`` (the
        product that sets the scale of W^(1); needs no d), ``assumed_constants``, ``regime`` (list of
        dicts: condition, value, bound, source, holds) and ``order_of_magnitude`` (True).

    Notes
    -----
    Accuracy: relative error <= 64 eps (sums of positive products and their roots) for every scale in 1e-6..1e6, p and
    gamma down to 1e-12, m to 1e9, n to 1e12; measured 0.12 of the bound over the framework's closed-form bounds
    (tests/test_accuracy_gradient_features.py, mpmath at 40 digits).
    Regime: Assumption 3.1, ``log m <= d`` (B.11), ``T eta Bx1 = C_T/(mp)^(1/4) = o(1)`` and the Lemma B.6
    tolerance ``B_eps = Bx1 sqrt(B_b/B_G)/(mp)^(1/4) < B_b``; failures are listed in ``regime`` and warned
    as :class:`popdyn.RegimeWarning`. All hidden constants are set by ``consts``: the numbers are orders of
    magnitude. Errata applied: the |l'(0)| of B.128/B.130 restored (dropped in (3.12)/(3.13)); B.100 read
    as sqrt(log m) Bx1 (mp)^(1/4) (docs/errata.md). With unit constants the proof (B.96-B.98 at these
    choices) gives ``OPT + r B_a1 Bx1 sqrt(2 gamma) + (3 + B_a1) eps`` at ``m = m_min``, not ``+ eps``:
    the O(eps) hides a factor B_a1 (see :func:`average_loss_bound`).

    References
    ----------
    .. [src] [Shi24, Theorem 3.12, Theorem B.11, (B.94)-(B.100), Theorem B.17, (B.126)-(B.130), Theorem B.23].

    Examples
    --------
    The XOR case of docs/gradient_features.md (d = 1e4, sigma_B = 1, eps = delta = 0.1): m is about 6e11.

    >>> c = case_parameters("xor", d=10**4, sigma_B=1.0)
    >>> out = main_theorem(**c["theorem_args"], eps=0.1, delta=0.1)
    >>> f"{out['m_min']:.2e}"
    '6.04e+11'
    """
    owner = _own("main_theorem")
    p = check(owner, "p", p, Interval(0.0, 1.0, "right"))
    gamma = check(owner, "gamma", gamma, _GAMMA)
    r = as_int(owner, "r", r, 1)
    B_G, B_a1, B_a2, B_b, Bx, Bx1, Bx2, sigma_w = _pos(owner, B_G=B_G, B_a1=B_a1, B_a2=B_a2, B_b=B_b, Bx=Bx,
                                                       Bx1=Bx1, Bx2=Bx2, sigma_w=sigma_w)
    eps, delta = (check(owner, k, v, _OPEN01) for k, v in (("eps", eps), ("delta", delta)))
    OPT = check(owner, "OPT", OPT, _NONNEG)
    lp, C = _lprime(owner, loss), hidden_constants(owner, consts, MAIN_CONSTS)
    paper = check(owner, "convention", convention, Options(("corrected", "paper"))) == "paper"
    lp_n = 1.0 if paper else lp  # (3.12)/(3.13) drop |l'(0)| (erratum 2)
    d = None if d is None else as_int(owner, "d", d, 1)
    with np.errstate(over="ignore", divide="ignore", under="ignore"):  # beyond float64: inf or 0, never NaN
        p, gamma, B_G, B_a1, B_a2, B_b, Bx, Bx1, Bx2, eps, delta, sigma_w = map(
            np.float64, (p, gamma, B_G, B_a1, B_a2, B_b, Bx, Bx1, Bx2, eps, delta, sigma_w))
        m_min = _m_min(p, r, B_a1, Bx1, B_b, B_G, eps, delta, C)
        if m is None:
            if not math.isfinite(m_min):
                raise InvalidParameterError(f"{owner}: m_min overflows float64 (p={p!r}, eps={eps!r}); pass 'm'.")
            m = max(1, math.ceil(m_min))
        m = as_int(owner, "m", m, 1)
        mp4 = (m * p) ** 0.25
        b_tilde = C["C_btilde"] * B_G**0.25 * B_a2 * B_b**0.75 / (math.sqrt(r) * B_a1)
        root = np.sqrt(math.log(m) * Bx1 * mp4) if paper else math.sqrt(math.log(m)) * Bx1 * mp4  # erratum 3
        eta = C["C_eta"] * eps / ((math.sqrt(r) * B_a2 * B_b * Bx1 / mp4 + m * b_tilde)
                                  * (root / np.sqrt(B_b * B_G) + 1.0))
        T = C["C_T"] / (eta * Bx1 * mp4)
        sigma_a_eta1 = C["C_sigma_a"] * b_tilde * mp4 / (lp * Bx1 * np.sqrt(B_G * B_b))
        eta1 = None if d is None else (C["C_eta1"] * eta * min(1.0, b_tilde)
                                       / (lp * (Bx1 * sigma_w * math.sqrt(d) + b_tilde)))
        n_min = _n_min(m, p, r, B_a1, B_a2, B_b, Bx, Bx2, B_G, eps, delta, T, lp_n, C)
        n = n_min if n is None else check(owner, "n", n, Interval(1.0, np.inf, "left"))
        sample = C["C_err"] * np.sqrt(Bx2) / (B_G * lp_n * n ** (1.0 / 3.0))
        B_eps = Bx1 * np.sqrt(B_b / B_G) / mp4
        sigma_a = None if eta1 is None else float(sigma_a_eta1 / eta1)
    regime = _main_regime(owner, C["C_T"] / mp4, B_eps, B_b, m, m_min, n, n_min, d)
    return dict(m_min=float(m_min), T=float(T), n_min=float(n_min), eta=float(eta),
                eta1=None if eta1 is None else float(eta1), sigma_a=sigma_a, b_tilde=float(b_tilde),
                error_bound=float(OPT + r * B_a1 * Bx1 * np.sqrt(2.0 * gamma + sample) + eps),
                error_bound_population=float(OPT + r * B_a1 * Bx1 * np.sqrt(2.0 * gamma) + eps),
                m=m, n=float(n), sigma_a_eta1=float(sigma_a_eta1), assumed_constants=C,
                regime=regime, order_of_magnitude=True)


def average_loss_bound(p, gamma, B_G, r, B_a1, B_a2, B_b, Bx1, m, eta, T, b_tilde, *, OPT=0.0, n=None, Bx=None,
                       Bx2=None, loss="hinge", consts=None):
    r"""Non-asymptotic bound on the average loss (1/T) sum_t L_D(g_t) of Algorithm 5 / 1 (B.96-B.98, B.165-B.170).

    .. math::
        \mathrm{OPT} + rB_{a1}\Big(\frac{c_nB_{x1}}{(mp)^{1/4}}\sqrt{\frac{B_b}{B_G}} + B_{x1}\sqrt{2\gamma+s_n}\Big)
        + C_{drift}\,\eta\big(\sqrt rB_{a2}B_bT\eta B_{x1}^2+m\tilde b\big)
          \Big(\frac{\sqrt{\log m}B_{x1}(mp)^{1/4}}{\sqrt{B_bB_G}}+1\Big)
        + C_{init}\frac{B_{a2}^2B_b^2}{\eta T\tilde b^2(mp)^{1/2}} + S_n

    with ``c_n = 2``, ``s_n = S_n = 0`` for the population (B.96-B.98) and, given ``n``, ``c_n = 2 sqrt 2``,
    ``s_n = C_err sqrt(Bx2)/(B_G |l'(0)| n^(1/3))`` and ``S_n`` the two ``n^(-1/3)`` terms B.168-B.170 times
    ``C_sample``, with ``w = b~ sqrt(log m)(mp)^(1/4)/sqrt(B_b B_G)`` (the bound on max ||w_i^(1)||, B.191):
    ``S_n = [(r B_a1 B_b/b~ + m(w + b~/Bx1))((w + T eta^2 Bx1 b~)Bx + b~) + 1
    + m eta (w + T eta^2 Bx1 b~) sqrt(Bx2)] / n^(1/3)``.

    Parameters
    ----------
    p, gamma, B_G : float
        Feature-set parameters (see :func:`main_theorem`).
    r : int
        Neurons of g*.
    B_a1, B_a2, B_b : float
        Bounds of g*.
    Bx1 : float
        ``E||x|| <= Bx1``.
    m : int
        Base width.
    eta, T : float
        Step size and number of steps (``> 0``).
    b_tilde : float
        Bias scale ``> 0``.
    OPT : float
        OPT or an upper bound, ``>= 0``.
    n : float or None
        Batch size; None gives the population bound.
    Bx, Bx2 : float or None
        Needed with ``n``.
    loss : {"hinge", "logistic"}
        Sets |l'(0)|.
    consts : dict or None
        Multipliers for the O(.) of B.97 (``C_drift``), B.98 (``C_init``), B.130 (``C_err``) and B.168-B.170
        (``C_sample``), default 1.

    Returns
    -------
    dict
        ``bound`` and its terms ``opt, approximation, drift, init, sample``.

    Notes
    -----
    Accuracy: relative error <= 64 eps (sums of positive products and their roots) for every scale in 1e-6..1e6, p and
    gamma down to 1e-12, m to 1e9, n to 1e12; measured 0.12 of the bound over the framework's closed-form bounds
    (tests/test_accuracy_gradient_features.py, mpmath at 40 digits).
    Regime: Thm B.11 / B.23, ``T eta Bx1 = o(1)``; orders of magnitude (hidden constants). At the choices of
    :func:`main_theorem` with unit constants, ``drift = eps`` exactly, ``init = B_a1 X/(mp)^(1/4)`` and the
    first term is ``r B_a1 Bx1 sqrt(2 gamma) + 2 X/(mp)^(1/4)`` with ``X = r B_a1 Bx1 sqrt(B_b/B_G)``; at
    ``m = m_min`` (first term of (3.10)) ``X/(mp)^(1/4) = eps``, so the total is
    ``OPT + r B_a1 Bx1 sqrt(2 gamma) + (3 + B_a1) eps`` (derived; B.121-B.123 call it ``+ eps``).

    References
    ----------
    .. [src] [Shi24, Theorem B.11, (B.96)-(B.98); Theorem B.17; Theorem B.23, (B.165)-(B.170) and its proof].

    Examples
    --------
    >>> out = average_loss_bound(0.5, 0.01, 1.0, 1, 1.0, 1.0, 1.0, 1.0, m=32, eta=1e-3, T=100.0, b_tilde=1.0)
    >>> round(out["approximation"], 6)  # 2 / 16^(1/4) + sqrt(0.02)
    1.141421
    """
    owner = _own("average_loss_bound")
    p = check(owner, "p", p, Interval(0.0, 1.0, "right"))
    gamma = check(owner, "gamma", gamma, _GAMMA)
    r, m = as_int(owner, "r", r, 1), as_int(owner, "m", m, 1)
    B_G, B_a1, B_a2, B_b, Bx1, eta, T, b_tilde = _pos(owner, B_G=B_G, B_a1=B_a1, B_a2=B_a2, B_b=B_b, Bx1=Bx1,
                                                      eta=eta, T=T, b_tilde=b_tilde)
    OPT = check(owner, "OPT", OPT, _NONNEG)
    lp, C = _lprime(owner, loss), hidden_constants(owner, consts, _AVG_CONSTS)
    mp4 = (m * p) ** 0.25
    c_n, s_n, sample = 2.0, 0.0, 0.0
    if n is not None:
        n = check(owner, "n", n, Interval(1.0, np.inf, "left"))
        if Bx is None or Bx2 is None:
            raise InvalidParameterError(f"The 'Bx' and 'Bx2' parameters of {owner} are required with 'n'.")
        Bx, Bx2 = _pos(owner, Bx=Bx, Bx2=Bx2)
        n3 = n ** (1.0 / 3.0)
        c_n, s_n = 2.0 * math.sqrt(2.0), C["C_err"] * math.sqrt(Bx2) / (B_G * lp * n3)
        w = b_tilde * math.sqrt(math.log(m)) * mp4 / math.sqrt(B_b * B_G)
        wT = w + T * eta**2 * Bx1 * b_tilde
        sample = C["C_sample"] * ((r * B_a1 * B_b / b_tilde + m * (w + b_tilde / Bx1)) * (wT * Bx + b_tilde) + 1.0
                                  + m * eta * wT * math.sqrt(Bx2)) / n3
    approximation = r * B_a1 * (c_n * Bx1 * math.sqrt(B_b / B_G) / mp4 + Bx1 * math.sqrt(2.0 * gamma + s_n))
    drift = C["C_drift"] * eta * (math.sqrt(r) * B_a2 * B_b * T * eta * Bx1**2 + m * b_tilde) * (
        math.sqrt(math.log(m)) * Bx1 * mp4 / math.sqrt(B_b * B_G) + 1.0)
    init = C["C_init"] * B_a2**2 * B_b**2 / (eta * T * b_tilde**2 * mp4**2)
    return dict(bound=OPT + approximation + drift + init + sample, opt=OPT, approximation=approximation,
                drift=drift, init=init, sample=sample)


# ------------------------------------------------------------------ good network (Lemma B.6) ---------------------


def good_network_bound(p, gamma, B_G, r, B_a1, B_b, Bx1, m, *, B_eps=None, OPT=0.0, n=None, Bx2=None,
                       loss="hinge", C_err=1.0):
    r"""Loss bound of the constructed network g(a~, W^(1), b) (Lemma B.6, eq. B.25; Lemma B.19, eq. B.149).

    .. math:: \mathcal L_{\mathcal D}(g_{(\tilde a,W^{(1)},b)}) \le rB_{a1}\Big(\frac{c\,B_{x1}^2B_b}{\sqrt{mp}\,
              B_GB_\epsilon} + B_{x1}\sqrt{2\gamma + s_n} + B_\epsilon\Big) + \mathrm{OPT}

    with ``c = 1, s_n = 0`` (population, B.25) or ``c = 2``,
    ``s_n = C_err sqrt(Bx2)/(B_G |l'(0)| n^(1/3))`` (empirical first step on n samples, B.149). The default
    ``B_eps = Bx1 sqrt(c B_b/B_G) (mp)^(-1/4)`` minimises the bound over B_eps; in the population it gives
    Lemma 3.14's ``OPT + sqrt(2) r B_a1 Bx1 (sqrt(gamma) + sqrt(2 B_b/(sqrt(mp) B_G)))``.

    Parameters
    ----------
    p, gamma, B_G : float
        Feature-set parameters.
    r : int
        Neurons of g*.
    B_a1, B_b : float
        Bounds of g*.
    Bx1 : float
        ``E||x|| <= Bx1``.
    m : int
        Base width.
    B_eps : float or None
        Tolerance for small target biases, in (0, B_b) per the lemma; None gives the minimiser.
    OPT : float
        OPT or an upper bound, ``>= 0``.
    n : float or None
        Samples of the first step; None: population.
    Bx2 : float or None
        ``E||x||^2``, required with ``n``.
    loss : {"hinge", "logistic"}
        Sets |l'(0)| (only with ``n``).
    C_err : float
        The O(.) constant of the n^(-1/3) term, default 1.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 64 eps (sums of positive products and their roots) for every scale in 1e-6..1e6, p and
    gamma down to 1e-12, m to 1e9, n to 1e12; measured 0.12 of the bound over the framework's closed-form bounds
    (tests/test_accuracy_gradient_features.py, mpmath at 40 digits).
    Regime: probability ``>= 1 - 2r exp(-sqrt(mp))`` over the init (B.6), plus
    ``n > Omega((Bx/sqrt(Bx2) + log(1/p) + sqrt(Bx2)/(B_G|l'(0)|))^3)`` for B.149. The |Gamma| B_a1 B_eps of B.52
    is bounded by r B_a1 B_eps as in B.25. A ``B_eps >= B_b`` is evaluated but outside the lemma.

    References
    ----------
    .. [src] [Shi24, Lemma B.6, (B.25); Lemma 3.14; Lemma B.19, (B.149)].

    Examples
    --------
    >>> round(good_network_bound(0.25, 0.02, 1.0, 1, 1.0, 1.0, 1.0, 64), 6)  # sqrt2 (sqrt(.02) + sqrt(2/4))
    1.2
    """
    owner = _own("good_network_bound")
    p = check(owner, "p", p, Interval(0.0, 1.0, "right"))
    gamma = check(owner, "gamma", gamma, _GAMMA)
    r, m = as_int(owner, "r", r, 1), as_int(owner, "m", m, 1)
    B_G, B_a1, B_b, Bx1, C_err = _pos(owner, B_G=B_G, B_a1=B_a1, B_b=B_b, Bx1=Bx1, C_err=C_err)
    OPT = check(owner, "OPT", OPT, _NONNEG)
    c, s_n = 1.0, 0.0
    if n is not None:
        n = check(owner, "n", n, Interval(1.0, np.inf, "left"))
        if Bx2 is None:
            raise InvalidParameterError(f"The 'Bx2' parameter of {owner} is required with 'n'.")
        c, s_n = 2.0, C_err * math.sqrt(check(owner, "Bx2", Bx2, _POS)) / (B_G * _lprime(owner, loss) * n ** (1 / 3))
    sq = math.sqrt(m * p)
    B_eps = Bx1 * math.sqrt(c * B_b / (B_G * sq)) if B_eps is None else check(owner, "B_eps", B_eps, _POS)
    return r * B_a1 * (c * Bx1**2 * B_b / (sq * B_G * B_eps) + Bx1 * math.sqrt(2.0 * gamma + s_n) + B_eps) + OPT


def good_network_scales(p, B_G, B_b, Bx1, m, r, B_a1, B_a2, b_tilde, *, B_eps=None):
    r"""Scales of the Lemma B.6 construction: tolerance, neuron-selection width and norms of a~.

    .. math:: B_\epsilon = \frac{B_{x1}}{(mp)^{1/4}}\sqrt{\frac{B_b}{B_G}},\quad
              \epsilon_a = \frac{B_{x1}B_b}{\sqrt{mp}B_GB_\epsilon},\quad
              \|\tilde a\|_0 \lesssim r\sqrt{mp},\quad \|\tilde a\|_2 \lesssim \frac{B_{a2}B_b}{\tilde b(mp)^{1/4}},
              \quad \|\tilde a\|_\infty \lesssim \frac{B_{a1}B_b}{\tilde b\sqrt{mp}}

    Parameters
    ----------
    p, B_G : float
        Feature probability and gradient-norm bound.
    B_b : float
        Bias bound of g*.
    Bx1 : float
        ``E||x|| <= Bx1``.
    m : int
        Base width.
    r : int
        Neurons of g*.
    B_a1, B_a2 : float
        Bounds of g*.
    b_tilde : float
        Bias scale of the init.
    B_eps : float or None
        None: the paper's choice (the minimiser of B.25).

    Returns
    -------
    dict
        ``B_eps, eps_a, l0, l2, linf`` (the last three up to the O(.) constants; they hold with
        ``|Lambda_j| >= sqrt(mp)`` selected neurons per target).

    Notes
    -----
    Accuracy: relative error <= 64 eps (sums of positive products and their roots) for every scale in 1e-6..1e6, p and
    gamma down to 1e-12, m to 1e9, n to 1e12; measured 0.12 of the bound over the framework's closed-form bounds
    (tests/test_accuracy_gradient_features.py, mpmath at 40 digits).
    Regime: as :func:`good_network_bound`. With ``|Lambda_j|`` neurons for target j, the construction gives
    exactly ``||a~||_2^2 = sum_j a*_j^2 beta_j^2/(|Lambda_j| b~^2)`` with ``beta_j <= B_b``.

    References
    ----------
    .. [src] [Shi24, Lemma B.6 and its proof (eps_a, a~)].

    Examples
    --------
    >>> s = good_network_scales(1.0, 1.0, 1.0, 1.0, 16, 1, 1.0, 1.0, 1.0)
    >>> s["B_eps"], s["eps_a"], s["l0"]
    (0.5, 0.5, 4.0)
    """
    owner = _own("good_network_scales")
    p = check(owner, "p", p, Interval(0.0, 1.0, "right"))
    r, m = as_int(owner, "r", r, 1), as_int(owner, "m", m, 1)
    B_G, B_b, Bx1, B_a1, B_a2, b_tilde = _pos(owner, B_G=B_G, B_b=B_b, Bx1=Bx1, B_a1=B_a1, B_a2=B_a2,
                                              b_tilde=b_tilde)
    sq = math.sqrt(m * p)
    B_eps = Bx1 * math.sqrt(B_b / B_G) / math.sqrt(sq) if B_eps is None else check(owner, "B_eps", B_eps, _POS)
    return dict(B_eps=B_eps, eps_a=Bx1 * B_b / (sq * B_G * B_eps), l0=r * sq,
                l2=B_a2 * B_b / (b_tilde * math.sqrt(sq)), linf=B_a1 * B_b / (b_tilde * sq))


# ------------------------------------------------------------------ frozen first layer (Thm B.2) -----------------

_RADEMACHER = ("corrected", "paper")


def rademacher_bound(B_a2, W, b, Bx, n, *, convention="corrected"):
    r"""Rademacher complexity of the frozen-first-layer family {g_(a,W,b): ||a||_2 <= B_a2} (Lemma B.78).

    .. math:: \text{corrected: } \frac{B_{a2}(\|W\|_FB_x+\|b\|_2)}{\sqrt n},\qquad
              \text{paper (B.595): } \sqrt{\frac{B_{a2}^2(\|W\|_F^2B_x^2+\|b\|_2^2)}{n}}

    The exact sup over the ball is ``B_a2 ||(1/n) sum_l eps_l sigma(W x_l - b)||``, so
    ``R <= B_a2 max_l ||sigma(W x_l - b)|| / sqrt(n) <= B_a2 (||W||_F Bx + ||b||)/sqrt(n)``. The paper's form
    fails for negative biases (this network subtracts b): one neuron w = 1, b = -1, x = 1, n = 1 has
    ``R = 2 B_a2 > sqrt(2) B_a2``. The two differ by at most a factor sqrt(2).

    Parameters
    ----------
    B_a2 : float
        Norm bound on the second layer, ``> 0``.
    W : array_like of shape (M, d)
        First-layer weights (rows are neurons).
    b : array_like of shape (M,)
        Biases.
    Bx : float
        ``||x|| <= Bx``.
    n : int
        Sample size.
    convention : {"corrected", "paper"}

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 64 eps (sums of positive products and their roots) for every scale in 1e-6..1e6, p and
    gamma down to 1e-12, m to 1e9, n to 1e12; measured 0.12 of the bound over the framework's closed-form bounds
    (tests/test_accuracy_gradient_features.py, mpmath at 40 digits).
    Regime: any W, b and inputs with ``||x|| <= Bx``; the paper's form holds when ``b >= 0`` (then
    ``sigma(w.x - b) <= |w.x|``).

    References
    ----------
    .. [src] [Shi24, Lemma B.78, (B.595)] (from Damian et al. 2022, Lemma 48); the counterexample and the
       corrected form in docs/errata.md.

    Examples
    --------
    >>> rademacher_bound(1.0, [[1.0]], [-1.0], 1.0, 1), round(rademacher_bound(1.0, [[1.0]], [-1.0], 1.0, 1,
    ...     convention="paper"), 6)
    (2.0, 1.414214)
    """
    owner = _own("rademacher_bound")
    B_a2, Bx = _pos(owner, B_a2=B_a2, Bx=Bx)
    n = as_int(owner, "n", n, 1)
    W = _finite(owner, "W", W, 2)
    b = _finite(owner, "b", b, 1)
    if b.shape[0] != W.shape[0]:
        raise InvalidParameterError(f"The 'b' parameter of {owner} must have shape ({W.shape[0]},) like the rows "
                                    f"of W. Got {b.shape}.")
    wf, bn = float(np.linalg.norm(W)), float(np.linalg.norm(b))
    convention = check(owner, "convention", convention, Options(_RADEMACHER))
    if convention == "paper":
        return math.sqrt(B_a2**2 * (wf**2 * Bx**2 + bn**2) / n)
    return B_a2 * (wf * Bx + bn) / math.sqrt(n)


def _finite(owner, name, value, ndim):
    a = np.asarray(value, dtype=np.float64)
    if a.ndim != ndim or a.size == 0 or not np.all(np.isfinite(a)):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be a non-empty finite {ndim}-d "
                                    f"array. Got shape {a.shape}.")
    return a


#: sup |l''| of the smooth losses (MSE is (g - y)^2 with no 1/2, as in B.562).
_CURVATURE = {"logistic": 1.0 / (4.0 * math.log(2.0)), "squared": 2.0}


def smoothness_constant(Phi, loss, *, bound="spectral"):
    r"""Smoothness constant L in a of the empirical loss on frozen features Phi = sigma(W^(1) x - b).

    .. math:: L = \beta\,\lambda_{\max}\Big(\frac1n\Phi^\top\Phi\Big)\ \text{("spectral")}\ \le\
              \beta\,\frac1n\sum_l\|\phi_l\|^2\ \text{("trace", B.488)},\qquad
              \beta = \sup|\ell''| = \tfrac1{4\ln2}\ \text{(base-2 logistic)},\ 2\ \text{(squared)}.

    Parameters
    ----------
    Phi : array_like of shape (n, M)
        Features of the n samples.
    loss : {"logistic", "squared"}
        The hinge loss is not smooth and is refused (docs/errata.md: B.486 applies an L-smoothness step
        to it); use a smooth surrogate or the OCO bound B.53.
    bound : {"spectral", "trace"}

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 4 (M + n) eps (the largest eigenvalue of the PSD M x M Gram by LAPACK, or its trace), n
    samples; measured 0.12 of the bound with case_parameters (tests/test_accuracy_gradient_features.py, mpmath
    eigenvalues at 40 digits).
    Regime: exact for "squared" (its Hessian is 2 Phi^T Phi / n); an upper bound for "logistic". B.488-B.489
    use the trace form, O(d^2 m) for uniform parity.

    References
    ----------
    .. [src] [Shi24, Theorem B.2, (B.484)-(B.489)].

    Examples
    --------
    >>> smoothness_constant([[1.0, 0.0], [0.0, 1.0]], "squared"), smoothness_constant([[1.0, 1.0]], "squared")
    (1.0, 4.0)
    """
    owner = _own("smoothness_constant")
    if loss == "hinge":
        raise InvalidParameterError(f"The 'loss' parameter of {owner} must be one of ['logistic', 'squared']: the "
                                    "hinge loss is not smooth (docs/errata.md). Got 'hinge'.")
    beta = _CURVATURE[check(owner, "loss", loss, Options(tuple(_CURVATURE)))]
    Phi = _finite(owner, "Phi", Phi, 2)
    if check(owner, "bound", bound, Options(("spectral", "trace"))) == "trace":
        return beta * float(np.mean(np.sum(Phi**2, axis=1)))
    return beta * float(np.linalg.eigvalsh(Phi.T @ Phi / Phi.shape[0])[-1])


def theorem_B2_bound(L, a1_norm, B_a2, T, W, b, Bx, n, *, OPT_frozen=0.0, C=1.0, convention="corrected"):
    r"""Bound of Thm 3.4 = B.2: one step of feature learning, then T steps of GD on a with eta = 1/L.

    .. math:: \mathcal L_{\mathcal D}(g_{(a^{(t)},W^{(1)},b)}) \le \mathrm{OPT}_{W^{(1)},b,B_{a2}}
              + C\Big(\frac{L(\|a^{(1)}\|^2+B_{a2}^2)}{T} + \mathfrak R\Big)

    for some ``t <= T``, with the Rademacher term of :func:`rademacher_bound`.

    Parameters
    ----------
    L : float
        Smoothness constant in a (:func:`smoothness_constant`), ``> 0``.
    a1_norm : float
        ``||a^(1)||_2 >= 0``.
    B_a2 : float
        Radius of the comparison ball.
    T : float
        Number of GD steps.
    W : array_like of shape (M, d)
        Frozen first layer W^(1).
    b : array_like of shape (M,)
        Biases.
    Bx : float
        ``||x|| <= Bx``.
    n : int
        Size of the fixed training sample.
    OPT_frozen : float
        OPT_{W^(1), b, B_a2} or a bound, ``>= 0``.
    C : float
        The O(.) constant, default 1.
    convention : {"corrected", "paper"}
        Passed to :func:`rademacher_bound`.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 64 eps (sums of positive products and their roots) for every scale in 1e-6..1e6, p and
    gamma down to 1e-12, m to 1e9, n to 1e12; measured 0.12 of the bound over the framework's closed-form bounds
    (tests/test_accuracy_gradient_features.py, mpmath at 40 digits).
    Regime: the empirical loss must be L-smooth in a, which the hinge loss is not (B.486; docs/errata.md):
    valid for smooth losses (base-2 logistic, MSE). Theorem 3.4 states eta = 1/t; B.2 has eta = 1/L (errata).

    References
    ----------
    .. [src] [Shi24, Theorem 3.4, Theorem B.2, (B.12)].

    Examples
    --------
    >>> theorem_B2_bound(1.0, 0.0, 1.0, 10.0, [[1.0]], [0.0], 1.0, 100)  # 1/10 + 1/10
    0.2
    """
    owner = _own("theorem_B2_bound")
    L, B_a2, T, C = _pos(owner, L=L, B_a2=B_a2, T=T, C=C)
    a1_norm = check(owner, "a1_norm", a1_norm, _NONNEG)
    OPT_frozen = check(owner, "OPT_frozen", OPT_frozen, _NONNEG)
    rad = rademacher_bound(B_a2, W, b, Bx, n, convention=convention)
    return OPT_frozen + C * (L * (a1_norm**2 + B_a2**2) / T + rad)


def gradient_concentration(n, Bx, Bx2, *, delta=None, C=1.0):
    r"""Deviation of the empirical simplified gradient ||G~(w, b) - G(w, b)|| on n samples (Lemma B.18).

    .. math:: \text{paper (B.131): } C\frac{\sqrt{B_{x2}}}{n^{1/3}},\qquad
              \text{Bernstein (B.137 at probability }\delta\text{): }
              \sqrt{\frac{8B_{x2}(\log(1/\delta)+1/4)}{n}}

    B.137 (vector Bernstein, Kohler-Lucchi Lemma 18, with ``||z|| <= 2 Bx``, ``E||z||^2 <= Bx2``) gives
    ``P(||G~ - G|| >= z) <= exp(-n z^2/(8 Bx2) + 1/4)`` for ``0 < z < Bx2/(2 Bx)``; the paper takes
    ``z ~ sqrt(Bx2) n^(-1/3)`` (probability 1 - O(exp(-n^(1/3)))), while solving for z at a fixed delta gives the
    n^(-1/2) rate that simulations show (docs/gradient_features.md).

    Parameters
    ----------
    n : float
        Sample size, ``>= 1``.
    Bx, Bx2 : float
        ``||x|| <= Bx``, ``E||x||^2 <= Bx2``.
    delta : float or None
        Failure probability in (0, 1) for the Bernstein radius; None omits it.
    C : float
        The O(.) constant of B.131, default 1.

    Returns
    -------
    dict
        ``paper`` and, with ``delta``, ``bernstein`` and ``bernstein_valid`` (the radius is below
        ``Bx2/(2 Bx)``, the range of B.137); ``n_min_paper = (Bx/sqrt(Bx2))^3`` (the lemma's condition).

    Notes
    -----
    Accuracy: relative error <= 64 eps (sums of positive products and their roots) for every scale in 1e-6..1e6, p and
    gamma down to 1e-12, m to 1e9, n to 1e12; measured 0.12 of the bound over the framework's closed-form bounds
    (tests/test_accuracy_gradient_features.py, mpmath at 40 digits).
    Regime: bounded inputs ``||x|| <= Bx``, |y| <= 1, any (w, b); the deviation of the first-step weights is
    ``eta1 |l'(0)| |a_i|`` times this.

    References
    ----------
    .. [src] [Shi24, Lemma B.18, (B.131), (B.136)-(B.138)].

    Examples
    --------
    >>> out = gradient_concentration(1000.0, 10.0, 100.0, delta=0.05)
    >>> round(out["paper"], 12), round(out["bernstein"], 4), out["bernstein_valid"]
    (1.0, 1.6114, True)
    """
    owner = _own("gradient_concentration")
    n = check(owner, "n", n, Interval(1.0, np.inf, "left"))
    Bx, Bx2, C = _pos(owner, Bx=Bx, Bx2=Bx2, C=C)
    out = dict(paper=C * math.sqrt(Bx2) / n ** (1.0 / 3.0), n_min_paper=(Bx / math.sqrt(Bx2)) ** 3)
    if delta is not None:
        delta = check(owner, "delta", delta, _OPEN01)
        radius = math.sqrt(8.0 * Bx2 * (math.log(1.0 / delta) + 0.25) / n)
        out.update(bernstein=radius, bernstein_valid=radius < Bx2 / (2.0 * Bx))
    return out


# ------------------------------------------------------------------ Lemma B.9 ------------------------------------


def _b9_terms(t, a1, Z, eta, Bx1, owner):
    t = np.asarray(t)
    if not np.issubdtype(t.dtype, np.integer) or np.any(t < 1):
        raise InvalidParameterError(f"The 't' parameter of {owner} must be integers >= 1. Got {t!r}.")
    a1 = np.asarray(a1, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    if not (np.all(np.isfinite(a1)) and np.all(a1 >= 0)):
        raise InvalidParameterError(f"The 'a1' parameter of {owner} must be finite and >= 0 (|a_i^(1)|). Got {a1!r}.")
    if not (np.all(np.isfinite(Z)) and np.all(Z >= 0)):
        raise InvalidParameterError(f"The 'Z' parameter of {owner} must be finite and >= 0. Got {Z!r}.")
    eta, Bx1 = _pos(owner, eta=eta, Bx1=Bx1)
    rho = eta * Bx1
    if not rho < 1.0:
        raise InvalidParameterError(f"{owner}: eta*Bx1 = {rho!r} must be < 1 (Lemma B.9 needs T eta Bx1 = o(1)); "
                                    "lower 'eta'.")
    return t.astype(np.float64), a1, Z, eta, Bx1, rho


def _b9_powers(n, rho):
    """((1+rho)^n + (1-rho)^n)/2 - 1 and ((1+rho)^n - (1-rho)^n)/2 without cancellation.

    For n atanh(rho) < 1 they are q^n cosh(n alpha) - 1 = expm1(n/2 log1p(-rho^2)) cosh(n alpha) +
    2 sinh(n alpha/2)^2 and q^n sinh(n alpha) (alpha = atanh rho, q^2 = 1 - rho^2); beyond, the powers directly.
    """
    alpha = math.atanh(rho)
    na = np.minimum(n * alpha, 1.0)
    lq = 0.5 * n * math.log1p(-rho * rho)
    with np.errstate(over="ignore"):
        up, down = np.exp(n * math.log1p(rho)), np.exp(n * math.log1p(-rho))
    small = n * alpha < 1.0
    cosh_m1 = np.where(small, np.expm1(lq) * np.cosh(na) + 2.0 * np.sinh(0.5 * na) ** 2, 0.5 * (up + down) - 1.0)
    sinh = np.where(small, np.exp(lq) * np.sinh(na), 0.5 * (up - down))
    return cosh_m1, sinh


def _b9_h(n, a1, Z, eta, Bx1, rho):
    """h(n + 1) of B.72 = |a1| + (|a1| + Z/(eta Bx1^2)) (cosh-type - 1) + (|a1| + eta Z)/rho (sinh-type)."""
    cosh_m1, sinh = _b9_powers(n, rho)
    return a1 + (a1 + Z / (eta * Bx1**2)) * cosh_m1 + (a1 + eta * Z) / rho * sinh


def lemma_B9_h(t, a1, Z, eta, Bx1):
    r"""Closed form of Lemma B.9's recursion for the partial sums h(t) >= sum_{l<=t} |a_i^(l)| (B.71-B.74).

    .. math:: h(t+2) = 2h(t+1) - (1-\rho^2)h(t) + \eta Z,\quad h(1) = |a^{(1)}|,\ h(2) = 2|a^{(1)}|+\eta Z,
              \quad\rho = \eta B_{x1}

    .. math:: h(t) = -\frac{Z}{\eta B_{x1}^2} + c_1(1-\rho)^{t-1} + c_2(1+\rho)^{t-1},\quad
              c_{1,2} = \frac12\Big(|a^{(1)}| + \frac{Z}{\eta B_{x1}^2}\mp\frac{|a^{(1)}|+\eta Z}{\eta B_{x1}}\Big)

    evaluated as ``|a1| + (|a1| + Z/(eta Bx1^2)) C_n + ((|a1| + eta Z)/rho) S_n`` with ``n = t - 1``,
    ``C_n = ((1+rho)^n + (1-rho)^n)/2 - 1`` and ``S_n = ((1+rho)^n - (1-rho)^n)/2`` (for n atanh(rho) < 1 through
    expm1/log1p/sinh of n atanh(rho)): exact algebra that never subtracts the O(1/rho^2) constants.

    Parameters
    ----------
    t : int or array_like of int
        Steps ``>= 1``.
    a1 : float or array_like
        ``|a_i^(1)| >= 0`` (broadcast with t and Z).
    Z : float or array_like
        ``Z_i = Bx1 ||w_i^(1)|| + b~ >= 0``.
    eta : float
        Step size ``> 0``, with ``eta * Bx1 < 1``.
    Bx1 : float
        ``E||x|| <= Bx1``.

    Returns
    -------
    ndarray

    Notes
    -----
    Accuracy: relative error <= 64 eps against the exact rational recursion, eta Bx1 from 1e-12 to 0.9, t to 120;
    measured 0.34 of the bound.
    Regime: ``0 < eta Bx1 < 1`` (the lemma assumes T eta Bx1 = o(1)); tested against exact rational iteration
    down to eta Bx1 = 1e-12.

    References
    ----------
    .. [src] [Shi24, Lemma B.9, (B.70)-(B.74), Lemma B.77].

    Examples
    --------
    >>> np.round(lemma_B9_h([1, 2, 3], 1.0, 2.0, 0.5, 1.0), 12).tolist()  # h3 = 2 h2 - 0.75 h1 + 1
    [1.0, 3.0, 6.25]
    """
    owner = _own("lemma_B9_h")
    t, a1, Z, eta, Bx1, rho = _b9_terms(t, a1, Z, eta, Bx1, owner)
    return _b9_h(t - 1.0, a1, Z, eta, Bx1, rho)


def lemma_B9_bounds(t, a1, w1_norm, b_tilde, eta, Bx1):
    r"""Lemma B.9's per-neuron bounds at step t >= 2: |a_i^(t)| and ||w_i^(t) - w_i^(1)|| (B.75-B.79).

    .. math:: |a_i^{(t)}| \le h(t) - h(t-1),\qquad \|w_i^{(t)} - w_i^{(1)}\| \le \eta B_{x1}\,h(t-1),\qquad
              Z_i = B_{x1}\|w_i^{(1)}\| + \tilde b

    with h of :func:`lemma_B9_h`; ``h(t) - h(t-1) = (rho|a1| + Z/Bx1) S_n + (|a1| + eta Z)(1 + C_n)`` with
    ``C_n, S_n`` of :func:`lemma_B9_h` at ``n = t - 2``.

    Parameters
    ----------
    t : int or array_like of int
        Steps ``>= 2``.
    a1 : float or array_like
        ``|a_i^(1)|``.
    w1_norm : float or array_like
        ``||w_i^(1)||``.
    b_tilde : float
        Bias scale ``> 0``.
    eta : float
        Step size of steps t >= 2 (lambda = 0), ``eta Bx1 < 1``.
    Bx1 : float
        ``E||x|| <= Bx1``.

    Returns
    -------
    a_bound, w_shift_bound : ndarray

    Notes
    -----
    Accuracy: relative error <= 64 eps for both bounds (exact rational recursion); measured 0.10 of the bound.
    Regime: any loss with |l'| <= 1, labels |y| <= 1, |b_i| <= b~ and lambda = 0 after step 1, population or
    full-batch GD on a fixed sample (its empirical law). The O(.) forms B.60-B.61 follow for T eta Bx1 = o(1).

    References
    ----------
    .. [src] [Shi24, Lemma B.9, (B.60)-(B.84)].

    Examples
    --------
    >>> [np.round(x, 12).tolist() for x in lemma_B9_bounds([2, 3], 1.0, 1.0, 1.0, 0.5, 1.0)]  # Z = 2: h = 1, 3, 6.25
    [[2.0, 3.25], [0.5, 1.5]]
    """
    owner = _own("lemma_B9_bounds")
    if np.any(np.asarray(t) < 2):
        raise InvalidParameterError(f"The 't' parameter of {owner} must be integers >= 2. Got {t!r}.")
    w1_norm = np.asarray(w1_norm, dtype=np.float64)
    b_tilde = check(owner, "b_tilde", b_tilde, _POS)
    t, a1, Z, eta, Bx1, rho = _b9_terms(t, a1, Bx1 * w1_norm + b_tilde, eta, Bx1, owner)
    cosh_m1, sinh = _b9_powers(t - 2.0, rho)
    a_bound = (rho * a1 + Z / Bx1) * sinh + (a1 + eta * Z) * (1.0 + cosh_m1)
    return a_bound, rho * _b9_h(t - 2.0, a1, Z, eta, Bx1, rho)


# ------------------------------------------------------------------ Lemmas B.8 and B.10 --------------------------

#: The hidden constants of :func:`lemma_B8_bounds` (multipliers, default 1).
B8_CONSTS = ("C_a0", "C_w0", "C_a1", "C_w1")
#: Constants with which Lemma B.8 holds with probability >= 1 - 1/m^2 for every m >= 2 and d >= log m (derived:
#: Mills for max|a^(0)|, Laurent-Massart B.54 for ||w^(0)||, then the deterministic B.56 / B.58).
B8_SUFFICIENT = {"C_a0": math.sqrt(6.0), "C_w0": math.sqrt(13.0), "C_a1": math.sqrt(13.0), "C_w1": math.sqrt(6.0)}
#: sup |l'| of the framework's losses: the hinge is 1-Lipschitz, the base-2 logistic 1/ln 2-Lipschitz.
LIPSCHITZ = {"hinge": 1.0, "logistic": 1.0 / math.log(2.0)}


def lemma_B8_bounds(m, d, sigma_w, b_tilde, eta1, B_G, B_eps, Bx1, *, delta=0.0, loss="hinge", consts=None):
    r"""Lemma B.8: sizes of the initial and first-step parameters (sup over the 4m neurons), orders of magnitude.

    .. math::
        \|\mathbf a^{(0)}\|_\infty &= C_{a0}\frac{\tilde b\sqrt{\log m}}{|\ell'(0)|\eta^{(1)}B_GB_\epsilon},\qquad
        \max_i\|\mathbf w_i^{(0)}\|_2 = C_{w0}\,\sigma_w\sqrt d,\\
        \|\mathbf a^{(1)}\|_\infty &= C_{a1}\,\eta^{(1)}|\ell'(0)|\big(B_{x1}\sigma_w\sqrt d+\tilde b\big),\qquad
        \max_i\|\mathbf w_i^{(1)}\|_2 = C_{w1}\frac{\tilde b\sqrt{\log m}\,B_{x1}}{B_GB_\epsilon}

    with probability at least ``1 - delta - 1/m^2`` over the symmetric init (3.9) at
    ``sigma_a = b~/(|l'(0)| eta1 B_G B_eps)`` (B.95 with ``C_sigma_a = 1`` and B_eps of Lemma B.6), so that the
    first bound is ``C_a0 sigma_a sqrt(log m)``.

    Parameters
    ----------
    m : int
        Base width (the network has 4m neurons), ``>= 2``.
    d : int
        Input dimension, ``>= 1`` (the lemma needs ``d >= log m``).
    sigma_w, b_tilde, eta1 : float
        Init scale of W, bias scale and first step size, ``> 0``.
    B_G, B_eps : float
        Gradient-norm bound of the feature set and Lemma B.6's tolerance, ``> 0``.
    Bx1 : float
        ``E||x|| <= Bx1``, ``> 0``.
    delta : float
        Failure probability of Lemma B.6's events, in [0, 1) (added to the 1/m^2 of this lemma).
    loss : {"hinge", "logistic"}
        Sets |l'(0)| (:data:`LPRIME0`).
    consts : dict or None
        Multipliers of the four O(.), keys :data:`B8_CONSTS`, default 1; :data:`B8_SUFFICIENT` makes the
        statement true (derived, see Notes).

    Returns
    -------
    dict
        ``a0_inf, w0_norm, a1_inf, w1_norm`` (floats), ``sigma_a`` (the init scale they assume),
        ``probability`` (``1 - delta - 1/m^2``), ``assumed_constants``, ``regime`` (``d >= log m``) and
        ``order_of_magnitude`` (True).

    Notes
    -----
    Accuracy: each size within 8 eps relative of the printed products (mpmath), scales 1e-6..1e6, m and d to 1e9;
    measured 0.17 of the bound.
    Regime: the symmetric init with Gaussian a, w (3.9), biases +-b~, population first step with
    ``lambda = 1/eta1``, ``d >= log m`` (warned as :class:`popdyn.RegimeWarning` otherwise); orders of magnitude
    (hidden constants). Derived constants (docs/gradient_features.md): ``P(max_i |a_i^(0)| >= sigma_a sqrt(6 log m))
    <= 2m Q(sqrt(6 log m)) <= 1/(2m^2)`` (Mills, m >= 2); B.54 (Laurent-Massart at z = 4 log m, union over the
    m distinct norms) gives ``||w_i^(0)||^2 <= sigma_w^2 (d + 4 sqrt(d log m) + 8 log m) <= 13 sigma_w^2 d``
    with probability ``>= 1 - m^-3``; then ``|a_i^(1)| <= eta1 |l'(0)| (||w_i^(0)|| Bx1 + b~)`` (B.56) and
    ``||w_i^(1)|| = eta1 |l'(0)| |a_i^(0)| ||G|| <= eta1 |l'(0)| ||a^(0)||_inf Bx1`` (B.58, ``||G|| <= Bx1``)
    hold for every draw. Hence :data:`B8_SUFFICIENT`.

    References
    ----------
    .. [src] [Shi24, Lemma B.8 and its proof, (B.54)-(B.59)].

    Examples
    --------
    >>> out = lemma_B8_bounds(100, 50, 1.0, 2.0, 0.1, 1.0, 0.5, 8.0)
    >>> round(out["a0_inf"], 4), round(out["w0_norm"], 4), round(out["a1_inf"], 4), round(out["probability"], 4)
    (85.8386, 7.0711, 5.8569, 0.9999)
    """
    owner = _own("lemma_B8_bounds")
    m, d = as_int(owner, "m", m, 2), as_int(owner, "d", d, 1)
    sigma_w, b_tilde, eta1, B_G, B_eps, Bx1 = _pos(owner, sigma_w=sigma_w, b_tilde=b_tilde, eta1=eta1, B_G=B_G,
                                                    B_eps=B_eps, Bx1=Bx1)
    delta = check(owner, "delta", delta, Interval(0.0, 1.0, "left"))
    lp, C = _lprime(owner, loss), hidden_constants(owner, consts, B8_CONSTS)
    log_m = math.sqrt(math.log(m))
    sigma_a = b_tilde / (lp * eta1 * B_G * B_eps)
    regime = regime_check(owner, [("d >= log m", d, math.log(m), "Lemma B.8, B.54", d >= math.log(m))])
    return dict(a0_inf=C["C_a0"] * sigma_a * log_m, w0_norm=C["C_w0"] * sigma_w * math.sqrt(d),
                a1_inf=C["C_a1"] * eta1 * lp * (Bx1 * sigma_w * math.sqrt(d) + b_tilde),
                w1_norm=C["C_w1"] * b_tilde * log_m * Bx1 / (B_G * B_eps), sigma_a=sigma_a,
                probability=1.0 - delta - 1.0 / m**2, assumed_constants=C, regime=regime, order_of_magnitude=True)


def lemma_B10_bounds(a_tilde, W_t, W_1, b, Bx1, *, loss="hinge", convention="corrected"):
    r"""Lemma B.10: the loss change of g(a~, W, b) when W drifts from W^(1) to W^(t), and the bound on d L / d a_i.

    .. math::
        \big|\mathcal L_{\mathcal D}(g_{(\tilde{\mathbf a},\mathbf W^{(t)},\mathbf b)})
        - \mathcal L_{\mathcal D}(g_{(\tilde{\mathbf a},\mathbf W^{(1)},\mathbf b)})\big|
        &\le \mathrm{Lip}(\ell)\,B_{x1}\|\tilde{\mathbf a}\|_2\sqrt{\|\tilde{\mathbf a}\|_0}\,
             \max_{i}\|\mathbf w_i^{(t)}-\mathbf w_i^{(1)}\|_2 \qquad (\text{B.85})\\
        \Big|\frac{\partial\mathcal L_{\mathcal D}(g_{(\mathbf a,\mathbf W^{(t)},\mathbf b)})}{\partial a_i}\Big|
        &\le \mathrm{Lip}(\ell)\Big(B_{x1}\big(\|\mathbf w_i^{(t)}-\mathbf w_i^{(1)}\|_2+\|\mathbf w_i^{(1)}\|_2\big)
             + |b_i|\Big) \qquad (\text{B.86}, \text{ any } \mathbf a)

    with ``Lip(l) = sup|l'|`` (:data:`LIPSCHITZ`): 1 for the hinge, ``1/ln 2`` for the base-2 logistic.

    Parameters
    ----------
    a_tilde : array_like of shape (M,)
        The second layer of the comparison network (Lemma B.6's a~; any vector).
    W_t, W_1 : array_like of shape (M, d)
        First layers at step t and after the first step (rows are neurons).
    b : float or array_like of shape (M,)
        Biases (the paper's ``|b_i| = b~``).
    Bx1 : float
        ``E||x|| <= Bx1``, ``> 0``.
    loss : {"hinge", "logistic"}
        Sets ``Lip(l)``.
    convention : {"corrected", "paper"}
        "paper" drops ``Lip(l)`` (Assumption 3.1 takes l 1-Lipschitz, which the base-2 logistic is not).

    Returns
    -------
    dict
        ``loss_gap`` (float, B.85), ``grad_a`` (ndarray (M,), B.86), ``lipschitz`` (the factor used).

    Notes
    -----
    Accuracy: relative error <= 64 eps (sums of positive products and their roots) for every scale in 1e-6..1e6, p and
    gamma down to 1e-12, m to 1e9, n to 1e12; measured 0.12 of the bound over the framework's closed-form bounds
    (tests/test_accuracy_gradient_features.py, mpmath at 40 digits).
    Regime: any data law with ``E||x|| <= Bx1``, any ``a~, W_t, W_1, b`` and any a in B.86; no hidden constant.
    B.85 is Lipschitz continuity of l, Cauchy-Schwarz over supp(a~) and ``|sigma(u) - sigma(v)| <= |u - v|``;
    B.86 is ``E[sigma(w.x - b_i)] <= ||w|| E||x|| + |b_i|`` and the triangle inequality. The hinge satisfies
    Assumption 3.1 (1-Lipschitz); the base-2 logistic that makes l(0) = 1 is ``1/ln 2``-Lipschitz, and both
    inequalities fail by up to that factor without it (derived; the tests exhibit the violation).

    References
    ----------
    .. [src] [Shi24, Lemma B.10, (B.85)-(B.86), its proof (B.87)-(B.90), Assumption 3.1].

    Examples
    --------
    >>> out = lemma_B10_bounds([3.0, 0.0, 4.0], [[1.0, 0.0], [0.0, 0.0], [0.0, 2.0]],
    ...                        [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]], 0.5, 2.0)
    >>> round(out["loss_gap"], 6), out["grad_a"].tolist()   # 2 * 5 * sqrt(2) * 1
    (14.142136, [2.5, 0.5, 4.5])
    """
    owner = _own("lemma_B10_bounds")
    W_t = _finite(owner, "W_t", W_t, 2)
    W_1 = _finite(owner, "W_1", W_1, 2)
    a = _finite(owner, "a_tilde", a_tilde, 1)
    M = W_1.shape[0]
    if W_t.shape != W_1.shape or a.shape != (M,):
        raise InvalidParameterError(f"The 'W_t' and 'a_tilde' parameters of {owner} must have shapes {W_1.shape} "
                                    f"and ({M},) like W_1. Got {W_t.shape} and {a.shape}.")
    b = np.asarray(b, dtype=np.float64)
    if b.shape not in ((), (M,)) or not np.all(np.isfinite(b)):
        raise InvalidParameterError(f"The 'b' parameter of {owner} must be a finite float or a finite array of "
                                    f"shape ({M},). Got {b!r}.")
    Bx1 = check(owner, "Bx1", Bx1, _POS)
    lip = LIPSCHITZ[check(owner, "loss", loss, Options(tuple(LIPSCHITZ)))]
    if check(owner, "convention", convention, Options(("corrected", "paper"))) == "paper":
        lip = 1.0
    drift = np.linalg.norm(W_t - W_1, axis=1)
    gap = lip * Bx1 * float(np.linalg.norm(a)) * math.sqrt(np.count_nonzero(a)) * float(drift.max())
    grad = lip * (Bx1 * (drift + np.linalg.norm(W_1, axis=1)) + np.abs(b))
    return dict(loss_gap=gap, grad_a=grad, lipschitz=lip)


# ------------------------------------------------------------------ case studies (App. B.5) ---------------------


def _theorem_args(out):
    keys = ("p", "gamma", "B_G", "r", "B_a1", "B_a2", "B_b", "Bx", "Bx1", "Bx2", "OPT")
    out["theorem_args"] = {k: out[k] for k in keys}
    out["err_bound"] = out["r"] * out["B_a1"] * out["Bx1"] * math.sqrt(2.0 * out["gamma"])
    if not out["B_G"] > 0:
        raise InvalidParameterError(f"gradient_features.case_parameters: B_G = {out['B_G']!r} <= 0 for case "
                                    f"{out['case']!r}: d is too small for the O(.) term (raise d or tau).")
    return out


def _case_linear(P, C, convention):
    d, tau, rho, beta, Bx1, Bx2 = P["d"], P["tau"], P["rho"], P["beta"], P["Bx1"], P["Bx2"]
    s = math.sqrt(Bx2) / d ** (tau / 2 - 0.25)
    return dict(log_p=math.log(0.5), gamma=C["C_gamma"] * s / rho, B_G=rho - C["C_G"] * s, r=2, B_a1=1 / beta,
                B_a2=math.sqrt(2) / beta, B_b=1 / Bx1**2, Bx=P.get("Bx") or Bx1, Bx1=Bx1, Bx2=Bx2, OPT=0.0,
                b_over_sigma_w=d**tau * Bx1,
                err_bound_paper=Bx1 * Bx2**0.25 / (beta * math.sqrt(rho) * d ** (tau / 4 - 0.125)),
                source="[Shi24, Lemmas B.25-B.26, Theorem B.27]")


def _case_mixture(P, C, convention):
    d, r, tau, B1, B2, pB = P["d"], P["r"], P["tau"], P["B_mu1"], P["B_mu2"], P["p_B"]
    sp, L = max(P["sigma_B"], B2), math.log(d)
    c = 9.0 / 8.0 if convention == "corrected" else 9.0 / 2.0
    s = math.sqrt(tau * L) * sp
    Bx1 = (B2 + sp) * math.sqrt(d)
    return dict(log_p=math.log(C["C_p"] * B1 / s) - c * C["C_b"] ** 2 * tau * sp**2 / B1**2 * L,
                gamma=d ** (-(0.9 * tau - 1.5)), B_G=pB * B1 * math.sqrt(d) - C["C_G"] * sp * d ** (-0.9 * tau),
                r=r, B_a1=1 / s, B_a2=math.sqrt(r) / s, B_b=2 * s, Bx=P.get("Bx") or Bx1, Bx1=Bx1, Bx2=Bx1**2,
                OPT=3 * d**-tau + 4 / (d ** (0.9 * tau - 1) * math.sqrt(tau * L)),
                b_over_sigma_w=C["C_b"] * math.sqrt(tau * d * L) * sp,
                err_bound_paper=math.sqrt(2) * r * d ** (-(0.4 * tau - 0.8)),
                source="[Shi24, Lemma B.30, Lemma B.34, Theorem B.35]")


def _case_xor(P, C, convention):
    d, sB, L = P["d"], P["sigma_B"], math.log(P["d"])
    tt = P.get("tau_tilde") or d / (16 * sB**2 * L)
    c = math.sqrt(tt * L) * sB
    Bx1 = (1 + sB) * math.sqrt(d)
    return dict(log_p=math.log(C["C_p"] / sB) - sB**2 * math.log(L), gamma=sB / math.sqrt(d), B_G=math.sqrt(d) / 5,
                r=4, B_a1=1 / c, B_a2=2 / c, B_b=2 * c, Bx=P.get("Bx") or Bx1, Bx1=Bx1, Bx2=Bx1**2, tau_tilde=tt,
                OPT=3 * d**-tt + 4 / (d ** (0.9 * tt - 1) * math.sqrt(tt * L)),
                b_over_sigma_w=math.sqrt(d * math.log(L)) * sB, err_bound_paper=sB**1.5 * d**-0.25,
                source="[Shi24, Assumption B.36, Lemma B.41, Theorem B.42]")


def _case_parity(P, C, convention):
    d, r, k, pA, tau, L = P["d"], P["r"], P["k"], P["p_A"], P["tau"], math.log(P["d"])
    B_a2 = math.sqrt(6 * r * k * (k + 1)) if convention == "corrected" else 2 * math.sqrt(r * k * (k + 1))
    return dict(log_p=math.log(C["C_p"] / math.sqrt(tau * r * L)) - 9 * C["C_b"] ** 2 * tau * r / 8 * L,
                gamma=d ** (-(tau - 2)), B_G=math.sqrt(k) * pA - C["C_G"] * math.sqrt(k) * d**-tau,
                r=3 * r * (k + 1) if convention == "corrected" else r, B_a1=2 * math.sqrt(k), B_a2=B_a2,
                B_b=(k + 1) / math.sqrt(k), Bx=math.sqrt(d), Bx1=math.sqrt(d), Bx2=float(d), OPT=0.0,
                b_over_sigma_w=C["C_b"] * math.sqrt(tau * r * k * L),
                err_bound_paper=3 * r * math.sqrt(k) * d ** (-(tau - 3) / 2),
                source="[Shi24, Lemma B.47, Lemma B.51, Theorem B.52]")


def _case_uniform_parity(P, C, convention):
    d, k = P["d"], P["k"]
    half = 0.5 if convention == "corrected" else 1.0
    B_G = half * math.hypot(math.sqrt(k) * majority_coefficient(d, k - 1),
                            math.sqrt(d - k) * majority_coefficient(d, k + 1))
    r, B_a1 = 3 * (k + 1), 2 * math.sqrt(k)
    gamma_inf = math.sqrt(k) / (d - k)
    B_a2 = math.sqrt(6 * k * (k + 1)) if convention == "corrected" else 2 * math.sqrt(k * (k + 1))
    return dict(log_p=math.log(C["C_p"]) - (k - 1) * math.log(2.0), gamma_inf=gamma_inf, B_G=B_G, B_G1=B_G, r=r,
                B_a1=B_a1, B_a2=B_a2,
                B_b=(k + 1) / math.sqrt(k), Bx=math.sqrt(d), Bx1=math.sqrt(d), Bx2=float(d), Bx_inf=1.0, OPT=0.0,
                err_bound=r * B_a1 * math.sqrt(2 * d * math.log(d)) * gamma_inf,
                err_bound_paper=k**2 * math.sqrt(d * math.log(d)) / (d - k),
                source="[Shi24, Assumption B.53, Lemma B.64, Theorem B.65]")


_CASES = {  # case: (builder, required parameters, optional parameters)
    "linear": (_case_linear, ("d", "tau", "rho", "beta", "Bx1", "Bx2"), ("Bx",)),
    "mixture": (_case_mixture, ("d", "r", "tau", "B_mu1", "B_mu2", "sigma_B", "p_B"), ("Bx",)),
    "xor": (_case_xor, ("d", "sigma_B"), ("tau_tilde", "Bx")),
    "parity": (_case_parity, ("d", "r", "k", "p_A", "tau"), ()),
    "uniform_parity": (_case_uniform_parity, ("d", "k"), ()),
}
_INT_PARAMS = ("d", "r", "k")


def _case_checks(owner, case, P):
    if case == "parity" and not (P["k"] % 2 == 1 and P["r"] % 2 == 1 and P["r"] * P["k"] <= P["d"]
                                 and 2 * P["r"] * P["p_A"] <= 1):
        raise InvalidParameterError(f"{owner}: case 'parity' needs odd k, odd r, r*k <= d and 2 r p_A <= 1. "
                                    f"Got {P!r}.")
    if case == "uniform_parity" and not (P["d"] % 2 == 1 and P["k"] % 2 == 0 and 2 <= P["k"] < P["d"]):
        raise InvalidParameterError(f"{owner}: case 'uniform_parity' needs odd d and even k in [2, d). Got {P!r}.")
    if case == "mixture" and not (P["p_B"] <= 1 and P["B_mu1"] <= P["B_mu2"]):
        raise InvalidParameterError(f"{owner}: case 'mixture' needs p_B <= 1 and B_mu1 <= B_mu2. Got {P!r}.")


def case_parameters(case, *, d, tau=None, sigma_B=None, tau_tilde=None, r=None, k=None, p_A=None, B_mu1=None,
                    B_mu2=None, p_B=None, rho=None, beta=None, Bx=None, Bx1=None, Bx2=None, C_b=1.0, C_p=1.0,
                    C_G=1.0, C_gamma=1.0, convention="corrected"):
    r"""Inputs of the main theorem for the five case studies (App. B.5): p, gamma, B_G, B_F, r, B_x, OPT.

    .. math::
        \text{mixture: } p = C_p\frac{B_{\mu1}}{\sqrt{\tau\log d}\,\sigma_{B+}}
        \,d^{-c\,C_b^2\tau\sigma_{B+}^2/B_{\mu1}^2},
        \ \gamma = d^{-(0.9\tau-1.5)},\ B_G = p_BB_{\mu1}\sqrt d - C_G\frac{\sigma_{B+}}{d^{0.9\tau}},\ c = \tfrac98
        \ (\text{paper: }\tfrac92)

    .. math::
        \text{xor: } p = \frac{C_p}{\sigma_B(\log d)^{\sigma_B^2}},\ \gamma = \frac{\sigma_B}{\sqrt d},\
        B_G = \frac{\sqrt d}5,\ B_F = \Big(\frac1c,\frac2c,2c\Big),\ c = \sqrt{\tilde\tau\log d}\,\sigma_B;\qquad
        \text{parity: } p = \frac{C_p}{\sqrt{\tau r\log d}\,d^{9C_b^2\tau r/8}},\ \gamma = d^{-(\tau-2)},\
        B_G = \sqrt kp_A - C_G\frac{\sqrt k}{d^\tau}

    .. math::
        \text{uniform\_parity: } p = 2^{-(k-1)},\ \gamma_\infty = \frac{\sqrt k}{d-k},\
        B_G = \tfrac12\sqrt{k\xi_{k-1}^2+(d-k)\xi_{k+1}^2};\qquad
        \text{linear: } p = \tfrac12,\ \gamma = C_\gamma\frac{\sqrt{B_{x2}}}{\rho d^{\tau/2-1/4}},\
        B_G = \rho - C_G\frac{\sqrt{B_{x2}}}{d^{\tau/2-1/4}}

    with B_F, B_x and the OPT bounds of Lemmas B.26, B.34, B.41, B.51, B.64 (listed in Returns).

    Parameters
    ----------
    case : {"linear", "mixture", "xor", "parity", "uniform_parity"}
        Which table; each uses only its own parameters (others must stay None).
    d : int
        Input dimension (odd for "uniform_parity").
    tau : float or None
        Error-control parameter (linear, mixture, parity; tau >= 8 in the paper's assumptions).
    sigma_B : float or None
        Largest component standard deviation (mixture, xor).
    tau_tilde : float or None
        XOR ground-truth parameter; None gives ``d/(16 sigma_B^2 log d)`` (4c = sqrt d; docs/gradient_features.md).
    r : int or None
        Components (mixture) or parity blocks (parity; odd).
    k : int or None
        Parity block size (odd for "parity", even for "uniform_parity").
    p_A : float or None
        Parity structure weight, ``2 r p_A <= 1``.
    B_mu1, B_mu2 : float or None
        min and max of ``||mu_j||/sqrt d`` (mixture).
    p_B : float or None
        Smallest joint component weight (mixture).
    rho, beta : float or None
        Signal E[y <w*, x>] and margin min y <w*, x> (linear).
    Bx : float or None
        ``||x|| <= Bx``; None gives Bx1 for the Gaussian and linear cases (Gaussian inputs are unbounded and
        the paper never fixes B_x: Bx1 is the typical norm) and sqrt(d) for the parities (exact).
    Bx1, Bx2 : float or None
        Moments of ||x|| (linear; the other cases compute them).
    C_b : float
        Bias constant of b~ = C_b sqrt(tau ... log d) sigma_w (mixture, parity), default 1.
    C_p, C_G, C_gamma : float
        Multipliers of the Theta(.) in p, the O(.) in B_G and the Theta(.) in gamma, default 1.
    convention : {"corrected", "paper"}
        "corrected": mixture exponent 9/8, parity ``B_a2 = sqrt(6 r k (k+1))`` and ``r_eff = 3 r (k+1)``,
        uniform-parity B_G with the factor 1/2 and ``B_a2 = sqrt(6 k (k+1))``; "paper": 9/2,
        ``2 sqrt(r k (k+1))``, r (blocks), no 1/2.

    Returns
    -------
    dict
        ``case, p, log_p`` (exact where p underflows), ``gamma, B_G, r, B_a1, B_a2, B_b, Bx, Bx1, Bx2, OPT``
        (an upper bound on OPT),
        ``b_over_sigma_w`` (the init's b~/sigma_w), ``err_bound`` (``r B_a1 Bx1 sqrt(2 gamma)``, the
        population error term of (3.13)), ``err_bound_paper`` (the case theorem's stated term), ``source``,
        ``assumed_constants`` and ``theorem_args`` (keyword arguments for :func:`main_theorem`). For
        "uniform_parity" (the infinity-norm framework, Thm B.62): ``gamma_inf, B_G1, Bx_inf`` instead of
        ``gamma`` and no ``theorem_args``; ``err_bound = r B_a1 sqrt(2 d log d) gamma_inf`` (B.545); for "xor"
        also ``tau_tilde``.

    Notes
    -----
    Accuracy: each entry a closed form of the inputs: relative error <= 16 eps, except the differences B_G = rho - C_G s
    (linear; likewise mixture and parity), absolute <= 4 eps (|first| + |second|) (a B_G <= 0 raises); measured 0.12 of
    the bound for "linear" (d to 1e6, tau to 12, scales 1e-3..1e3) and "uniform_parity" (d to 4001)
    (tests/test_accuracy_gradient_features.py, mpmath); the other cases are the same kind of products, not tested
    separately.
    Regime: the case assumptions (B.28: 8 <= tau <= d, r <= 2d, p_B >= 1/(2d), separation; B.36:
    1 <= sigma_B <= sqrt(d/log log d), 0 < tau~ <= O(d/(sigma_B^2 log d)); B.43: k odd, k >= Omega(tau log d),
    p_A >= 1/d; B.53: d >= 2k^2, k even) are the caller's; the values are orders of magnitude (hidden
    constants). Errata (docs/errata.md): B_a2 (Lemma B.51), r_eff in B.477, sqrt d in B.338, 9/8 (Lemma B.31), the
    1/2 in B_G (Lemma B.63). The parity g* is the positive-bias variant (same B_F, OPT = 0).

    References
    ----------
    .. [src] [Shi24, App. B.5.1-B.5.6]; the positive-bias parity g* derived in docs/gradient_features.md.

    Examples
    --------
    >>> c = case_parameters("xor", d=10**4, sigma_B=1.0)   # docs/gradient_features.md
    >>> round(c["p"], 3), round(c["r"] * c["B_a1"] * c["Bx1"], 6), round(c["err_bound"], 2)
    (0.109, 32.0, 4.53)
    """
    owner = _own("case_parameters")
    builder, required, optional = _CASES[check(owner, "case", case, Options(tuple(_CASES)))]
    given = dict(d=d, tau=tau, sigma_B=sigma_B, tau_tilde=tau_tilde, r=r, k=k, p_A=p_A, B_mu1=B_mu1, B_mu2=B_mu2,
                 p_B=p_B, rho=rho, beta=beta, Bx=Bx, Bx1=Bx1, Bx2=Bx2)
    P = {}
    for name, value in given.items():
        if name not in required + optional:
            if value is not None:
                raise InvalidParameterError(f"The {name!r} parameter of {owner} is not used by case {case!r} "
                                            f"(it takes {list(required + optional)}). Got {value!r}.")
        elif value is None and name in required:
            raise InvalidParameterError(f"The {name!r} parameter of {owner} is required for case {case!r}.")
        elif value is not None:
            P[name] = as_int(owner, name, value, 1) if name in _INT_PARAMS else check(owner, name, value, _POS)
    if P["d"] < 3:
        raise InvalidParameterError(f"The 'd' parameter of {owner} must be an int in [3, inf]. Got {d!r}.")
    _case_checks(owner, case, P)
    C = {k_: check(owner, k_, v, _POS) for k_, v in dict(C_b=C_b, C_p=C_p, C_G=C_G, C_gamma=C_gamma).items()}
    convention = check(owner, "convention", convention, Options(("corrected", "paper")))
    out = dict(case=case, **builder(P, C, convention), assumed_constants=C)
    if not out["log_p"] <= 0:
        warnings.warn(f"{owner}: p = exp({out['log_p']!r}) > 1 for case {case!r}: outside the regime; clipped to 1.",
                      RegimeWarning, stacklevel=2)
        out["log_p"] = 0.0
    out["p"] = math.exp(out["log_p"])
    if out["p"] == 0.0:
        warnings.warn(f"{owner}: p underflows float64 for case {case!r} (log p = {out['log_p']:.1f}); use 'log_p'.",
                      RegimeWarning, stacklevel=2)
    return out if case == "uniform_parity" else _theorem_args(out)


_UP_CONSTS = ("C_m", "C_n", "C_d", "C_eta", "C_T")
_TINY = 2.0 ** -1022           # smallest normal float64
_LOG_MAX = math.log(2.0 ** 1023 * (2.0 - 2.0 ** -52))   # log of the largest float64


def uniform_parity_requirements(d, k, eps, *, m=None, consts=None):
    r"""Requirements of the uniform-parity theorem (Lemma B.54, Thm B.56; Barak et al. 2022) for error eps.

    .. math::
        \eta^{(1)} = \frac1{k|\xi_{k-1}|},\quad \tau_g = \frac{|\xi_{k-1}|}{16k\sqrt{2d\log(32k^3d/\epsilon)}},\quad
        m_{\min} = C_m\,k2^k\log\frac k\epsilon,\quad d_{\min} = C_d\,k^4\log\frac{kd}\epsilon

    .. math::
        n_{\min} = C_n\Big(k^{7/6}d\tbinom d{k-1}\log\frac{kd}\epsilon\log\frac{dm}\epsilon
        + \frac{k^3md^2}{\epsilon^2}\Big),\quad \eta = \frac{C_\eta}{d^2m},\quad T = C_T\frac{k^3md^2}\epsilon

    with :math:`\xi_j` the majority coefficients (:func:`popdyn.models.gradient_features.parity.majority_coefficient`).

    Parameters
    ----------
    d : int
        Input dimension, odd.
    k : int
        Parity size, even, ``2 <= k < d``.
    eps : float
        Target error in (0, 1/2).
    m : int or None
        Width; None gives ``ceil(m_min)``.
    consts : dict or None
        Multipliers ``C_m, C_n, C_d, C_eta, C_T`` of the Omega/Theta, default 1.

    Returns
    -------
    dict
        ``eta1, tau_g, m_min, m, d_min, n_min, eta, T`` and the Lemma B.54 constants ``a_tilde_linf = 8k``,
        ``a_tilde_l2 = 8k sqrt(k)``, ``feature_linf = d + 1`` (so L = O(d^2 m), B.489), ``assumed_constants``
        and ``regime`` (``d >= d_min``).

    Notes
    -----
    Accuracy: eta1, tau_g, m_min, d_min, n_min, eta, T relative error <= 1e-12 where normal floats (inf past float64,
    2^-1074 absolute where subnormal; eta1 from log xi where xi is subnormal), d to 2e5, k to 1100, eps to 1e-12;
    measured 0.10 of the bound (tests/test_accuracy_gradient_features.py, mpmath with the exact binomials). Before:
    n_min 6e-11 relative off at d = 1e6 (log C(d, k - 1) by lgamma differences), OverflowError for k >= 1024 and
    ZeroDivisionError where xi_{k-1} underflows (d = 10001, k = 1000).
    Regime: Algorithm 6 (init B.479: a, w uniform signs, b uniform on {-1 + 1/k, ..., 1 - 1/k}), hinge loss,
    ``d >= Omega(k^4 log(kd/eps))``; orders of magnitude (hidden constants). Lemma B.54's step-1 accuracy
    tau_g is a different quantity from the assumption tau of the other cases.

    References
    ----------
    .. [src] [Shi24, Lemma B.54, Theorem B.56, (B.483)-(B.489)].

    Examples
    --------
    >>> out = uniform_parity_requirements(3001, 4, 0.1)   # m_min = 4 * 2^4 * log(40)
    >>> out["m"], out["a_tilde_l2"], out["regime"][0]["holds"]
    (237, 64.0, True)
    """
    owner = _own("uniform_parity_requirements")
    d, k = as_int(owner, "d", d, 3), as_int(owner, "k", k, 2)
    if not (d % 2 == 1 and k % 2 == 0 and k < d):
        raise InvalidParameterError(f"{owner}: needs odd d and even k in [2, d). Got d={d!r}, k={k!r}.")
    eps = check(owner, "eps", eps, Interval(0.0, 0.5, "neither"))
    C = hidden_constants(owner, consts, _UP_CONSTS)
    xi = abs(majority_coefficient(d, k - 1))
    if xi >= _TINY:
        eta1 = 1.0 / (k * xi)
    else:   # xi subnormal or 0 (d = 10^4, k = 300 and beyond): 1/(k xi) from log xi, inf past float64
        log_eta1 = -math.log(k) - majority_coefficient(d, k - 1, log=True)
        eta1 = math.exp(log_eta1) if log_eta1 < _LOG_MAX else math.inf
    m_min = C["C_m"] * k * math.log(k / eps) * (2.0**k if k < 1024 else math.inf)
    if m is None:
        if not math.isfinite(m_min):
            raise InvalidParameterError(f"{owner}: m_min = C_m k 2^k log(k/eps) overflows float64 (k={k!r}); pass "
                                        f"'m'.")
        m = max(1, math.ceil(m_min))
    m = as_int(owner, "m", m, 1, 2 ** 1023)
    j = min(k - 1, d - k + 1)   # log C(d, k - 1) from the exact integer: the lgamma difference lost d log d eps
    log_comb = math.log(math.comb(d, j)) if j <= 1100 else math.inf   # j > 1100: C >= 2^1100, n_min is inf
    with np.errstate(over="ignore"):
        log_dm = math.log(d * m) - math.log(eps)   # d m may pass float64
        first = np.exp(log_comb + math.log(k ** (7 / 6) * d * math.log(k * d / eps) * log_dm))
    d_min = C["C_d"] * k**4 * math.log(k * d / eps)
    with np.errstate(over="ignore"):
        k3md2 = np.float64(k) ** 3 * np.float64(m) * np.float64(d) ** 2   # floats: inf, not OverflowError, past 1e308
    return dict(eta1=eta1, tau_g=xi / (16 * k * math.sqrt(2 * d * math.log(32 * k**3 * d / eps))),
                m_min=m_min, m=m, d_min=d_min, n_min=C["C_n"] * (float(first) + float(k3md2) / eps**2),
                eta=C["C_eta"] / float(d) ** 2 / float(m), T=C["C_T"] * float(k3md2) / eps, a_tilde_linf=8.0 * k,
                a_tilde_l2=8.0 * k**1.5, feature_linf=d + 1.0, assumed_constants=C,
                regime=regime_check(owner, [("d >= d_min", d, d_min, "Thm B.56", d >= d_min)]))


def oco_bound(f_star, theta_star_norm, theta1_norm, grad_norms, eta):
    r"""Online convex optimisation bound of Daniely-Malach Thm 13 (Thm B.7) for theta_{t+1} = theta_t - eta grad f_t.

    .. math:: \frac1T\sum_t f_t(\theta_t) \le \frac1T\sum_t f_t(\theta^*) + \frac{\|\theta^*\|^2}{2\eta T}
              + \|\theta_1\|\frac1T\sum_t\|\nabla f_t(\theta_t)\| + \eta\frac1T\sum_t\|\nabla f_t(\theta_t)\|^2

    Parameters
    ----------
    f_star : array_like of shape (T,)
        ``f_t(theta*)`` for the comparator.
    theta_star_norm, theta1_norm : float
        ``||theta*||`` and ``||theta_1||``, ``>= 0``.
    grad_norms : array_like of shape (T,)
        ``||grad f_t(theta_t)||`` along the run (subgradients allowed).
    eta : float
        Step size ``> 0``.

    Returns
    -------
    float
        The right-hand side.

    Notes
    -----
    Accuracy: relative error <= 64 eps (sums of positive products and their roots) for every scale in 1e-6..1e6, p and
    gamma down to 1e-12, m to 1e9, n to 1e12; measured 0.12 of the bound over the framework's closed-form bounds
    (tests/test_accuracy_gradient_features.py, mpmath at 40 digits).
    Regime: every f_t convex (any sequence, chosen adaptively); the step of Algorithm 1 on a with W frozen is of
    this form with f_t the loss on the fresh batch.

    References
    ----------
    .. [src] [Shi24, Theorem B.7, (B.53)].

    Examples
    --------
    >>> oco_bound([0.0, 0.0], 2.0, 0.0, [1.0, 1.0], 0.5)  # 4/(2 * 0.5 * 2) + 0.5
    2.5
    """
    owner = _own("oco_bound")
    f_star = _finite(owner, "f_star", f_star, 1)
    g = _finite(owner, "grad_norms", grad_norms, 1)
    if g.shape != f_star.shape or np.any(g < 0):
        raise InvalidParameterError(f"The 'grad_norms' parameter of {owner} must be >= 0 with the shape of f_star "
                                    f"{f_star.shape}. Got shape {g.shape}.")
    s, s1 = (check(owner, k_, v, _NONNEG) for k_, v in (("theta_star_norm", theta_star_norm),
                                                         ("theta1_norm", theta1_norm)))
    eta = check(owner, "eta", eta, _POS)
    T = f_star.size
    return float(f_star.mean() + s**2 / (2 * eta * T) + s1 * g.mean() + eta * np.mean(g**2))


# ------------------------------------------------------------------ Prop 3.23 and auxiliary inequalities --------


def fixed_feature_lower_bound_parity(N, B, k, d=None, form="parseval"):
    r"""Hinge-loss lower bound for linear models on N fixed bounded features, structured parity (Prop 3.23).

    .. math:: \text{paper: } \frac12 - \frac{\sqrt NB}{2^k\sqrt2}\quad(\text{typeset }\sqrt{NB}),\qquad
              \text{parseval: } \frac12\Big(1 - B\sqrt{N/\tbinom dk}\Big)

    for ``h in H_B = {<Psi(x), w> : ||w|| <= B}``, ``Psi: X -> [-1, 1]^N``, on the structured parity (B.5.4) with
    ``M = I, r = 1, p_A = 1/4, p_o = 1/2``: its uniform component (weight ``1 - 2 r p_A = 1/2``) is the
    uniform k-parity, so this is :func:`popdyn.models.emergence.bounds.fixed_feature_lower_bound` with
    ``p_o = 1/2``, clipped at 0.

    Parameters
    ----------
    N : int
        Number of features, ``>= 1``.
    B : float
        Norm bound, ``>= 0``.
    k : int
        Parity size.
    d : int or None
        Input dimension; None gives the proposition's ``d = 16 k``.
    form : {"parseval", "paper_sqrt2N_B", "paper_sqrt2NB"}
        "parseval" (derived, sharper: C(16k, k) >= 16^k); "paper_sqrt2N_B" the B-linear reading
        ``1/2 - sqrt(N) B/(2^k sqrt 2)``; "paper_sqrt2NB" the typeset ``sqrt(N B)``.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: that of :func:`popdyn.models.emergence.fixed_feature_lower_bound`: absolute error <= 5e-13 (1e-12 p_o).
    Regime: any N, B; the paper's forms are stated for k = d/16 (odd 3 < k <= d/16 warns otherwise). Vacuous
    (0) once N B^2 >= C(d, k) (parseval) or 2 N B^2 >= 4^k.

    References
    ----------
    .. [src] [Shi24, Proposition 3.23 (from Daniely and Malach 2020)]; the Parseval form derived in
       docs/gradient_features.md.

    Examples
    --------
    >>> round(fixed_feature_lower_bound_parity(16, 1.0, 5, form="paper_sqrt2N_B"), 6)  # 1/2 - 4/(32 sqrt 2)
    0.411612
    """
    owner = _own("fixed_feature_lower_bound_parity")
    k = as_int(owner, "k", k, 1)
    d = 16 * k if d is None else as_int(owner, "d", d, k)
    return fixed_feature_lower_bound(0.5, N, B, k, d, form)


def max_gaussian_tail_bound(n, z):
    r"""Lemma B.73: the maximum M_n of n iid N(0,1) exceeds its threshold with probability at most e^{-z}.

    .. math:: \Pr\Big(M_n \ge \sqrt{2\log n} + \frac{z}{\sqrt{2\log n}}\Big) \le e^{-z}

    Parameters
    ----------
    n : int
        Number of Gaussians, ``>= 2``.
    z : float or array_like
        ``z >= 0``.

    Returns
    -------
    threshold, bound : ndarray

    Notes
    -----
    Accuracy: threshold and bound relative error <= 8 eps (bound absolute 2^-1074 where it is subnormal); measured 0.12
    of the bound.
    Regime: n >= 2, z >= 0 (for z < 0 the bound exceeds 1). Follows from the union bound and the Mills upper
    bound since the threshold is >= sqrt(2 log 2) > 1/sqrt(2 pi).

    References
    ----------
    .. [src] [Shi24, Lemma B.73, (B.590)].

    Examples
    --------
    >>> t, bnd = max_gaussian_tail_bound(1000, 1.0)
    >>> round(float(t), 4), round(float(bnd), 4)
    (3.986, 0.3679)
    """
    owner = _own("max_gaussian_tail_bound")
    n = as_int(owner, "n", n, 2)
    z = _nonneg_array(owner, "z", z)
    s = math.sqrt(2.0 * math.log(n))
    return s + z / s, np.exp(-z)


def chi2_tail_bound(k, z):
    r"""Lemma B.74 (Laurent-Massart): the chi-square tail.

    .. math:: \Pr\big(\chi^2_k \ge k + 2\sqrt{kz} + 2z\big) \le e^{-z}

    Parameters
    ----------
    k : int
        Degrees of freedom, ``>= 1``.
    z : float or array_like
        ``z >= 0`` (the seed writes "for all z in R", but sqrt(kz) needs z >= 0).

    Returns
    -------
    threshold, bound : ndarray

    Notes
    -----
    Accuracy: threshold relative error <= 8 eps; bound as :func:`max_gaussian_tail_bound`; measured 0.10 of the bound.
    Regime: z >= 0.

    References
    ----------
    .. [src] [Shi24, Lemma B.74, (B.591)].

    Examples
    --------
    >>> t, bnd = chi2_tail_bound(100, 3.0)
    >>> float(t), round(float(bnd), 4)
    (140.64101615137756, 0.0498)
    """
    owner = _own("chi2_tail_bound")
    k = as_int(owner, "k", k, 1)
    z = _nonneg_array(owner, "z", z)
    return k + 2.0 * np.sqrt(k * z) + 2.0 * z, np.exp(-z)


def mills_bounds(z):
    r"""Lemma B.75 (Mills ratio): lower and upper bounds on the Gaussian tail Q(z) = P(g > z), z > 0.

    .. math:: \frac{\varphi(z)\,z}{z^2+1} < Q(z) < \frac{\varphi(z)}{z}

    Parameters
    ----------
    z : float or array_like
        ``z > 0``.

    Returns
    -------
    lower, upper : ndarray

    Notes
    -----
    Accuracy: relative error <= 8 eps where the bounds are normal floats, absolute 2^-1074 beyond; measured 0.46 of the
    bound (before: 13.4, exp(-z^2/2) with z^2 rounded at z = 26.1; now popdyn.gaussian.normal_pdf).
    Regime: z > 0; both sides underflow to 0 past z ~ 38.

    References
    ----------
    .. [src] [Shi24, Lemma B.75, (B.592)].

    Examples
    --------
    >>> lo, hi = mills_bounds(2.0)
    >>> round(float(lo), 5), round(float(hi), 5)   # Q(2) = 0.02275
    (0.0216, 0.027)
    """
    z = np.asarray(z, dtype=np.float64)
    if not (np.all(np.isfinite(z)) and np.all(z > 0)):
        raise InvalidParameterError(f"The 'z' parameter of {_own('mills_bounds')} must be finite and > 0. Got {z!r}.")
    phi = normal_pdf(z)                          # split-accurate: exp(-z^2/2) with z^2 rounded loses z^2 eps
    return phi * z / (z * z + 1.0), phi / z


def tail_expectation_bound(z, *, log=False):
    r"""Lemma B.76: bound on the Gaussian tail expectation |E[1[g > z] g]| = phi(z), for every real z.

    .. math:: \varphi(z) = \big|\mathbb E[\mathbb I[g>z]\,g]\big| < 2\,Q(z)^{0.9}

    Parameters
    ----------
    z : float or array_like
        Any finite reals.
    log : bool
        Return ``log(2 Q(z)^0.9)`` (no underflow; uses ``log_ndtr``).

    Returns
    -------
    ndarray

    Notes
    -----
    Accuracy: relative error <= 8 eps for z <= 37 (absolute 2^-1074 where subnormal), any real z; ``log=True`` absolute
    <= 8 eps max(1, |log|); measured 0.64 of the bound (z^2 eps past z = 37, where Q underflows but Q^0.9 does not:
    computed in logs; before: 0) and 0.26 (before: 57 times the bound, 1e-13 relative, at z = 37 where ndtr(-z) loses
    z^2 eps; now phi(z) sqrt(pi/2) erfcx(z/sqrt 2) past z = 3); z^2 eps relative for 37 < z < 41.3 (in logs: Q
    underflows there, 2 Q^0.9 does not; before: 0).
    Regime: all real z; the ratio phi(z)/(2 Q(z)^0.9) peaks near 0.853 and tends to 0 at both ends.

    References
    ----------
    .. [src] [Shi24, Lemma B.76, (B.593)-(B.594)].

    Examples
    --------
    >>> round(float(tail_expectation_bound(0.0)), 6)   # 2 * 0.5^0.9; phi(0) = 0.398942
    1.071773
    """
    z = np.asarray(z, dtype=np.float64)
    if not np.all(np.isfinite(z)):
        raise InvalidParameterError(f"The 'z' parameter of {_own('tail_expectation_bound')} must be finite. "
                                    f"Got {z!r}.")
    if log:
        return math.log(2.0) + 0.9 * log_ndtr(-z)
    # Q(z) = phi(z) sqrt(pi/2) erfcx(z/sqrt 2) for z > 0 (phi split-accurate): ndtr(-z) loses z^2 eps in the tail
    zf = float(z) if z.ndim == 0 else math.inf
    if zf <= 37.0:
        q = ndtr(-zf) if zf <= 3.0 else normal_pdf(zf) * _SQRT_HALF_PI * erfcx(zf * _INV_SQRT2)
        return np.float64(2.0 * q ** 0.9)
    Q = np.atleast_1d(ndtr(-z))
    zz = np.atleast_1d(z)
    far, out = zz > 3.0, zz > 37.0
    Q[far] = normal_pdf(zz[far]) * _SQRT_HALF_PI * erfcx(zz[far] * _INV_SQRT2)
    val = 2.0 * Q ** 0.9
    if out.any():    # Q underflows before Q^0.9 does (z < 41.3): in logs, losing 0.45 z^2 eps
        zo = zz[out]
        val[out] = 2.0 * np.exp(0.9 * (-0.5 * zo * zo - _LOG_SQRT2PI + np.log(_SQRT_HALF_PI * erfcx(zo * _INV_SQRT2))))
    return val[0] if z.ndim == 0 else val.reshape(z.shape)


def _nonneg_array(owner, name, value):
    a = np.asarray(value, dtype=np.float64)
    if not (np.all(np.isfinite(a)) and np.all(a >= 0)):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be finite and >= 0. Got {value!r}.")
    return a
