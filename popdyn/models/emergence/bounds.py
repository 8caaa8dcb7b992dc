r"""Rates, error scales, lower bounds and finite-sample predictions of the emergence model.

Public names
------------
rates (Thm 1 = Thm 26, [Shi22, App. B.6])
    :func:`theorem1_rate`, :func:`theorem26_intermediate_rate`, :func:`theorem26_terms`,
    :func:`width_for_loss`
error scales (Lemmas 15 and 20)
    :func:`eps_e`, :func:`eps_e2`
lower bounds (Thms 2, 4, Cor 3)
    :func:`fixed_feature_lower_bound` (Parseval form and the paper's two readings),
    :func:`parity_correlations` (the Parseval certificate of a given feature map, D <= 24),
    :func:`parity_feature_correlations` (the same for smoothed truncated-ReLU features, any D),
    :func:`kernel_lower_bound`, :func:`sq_lower_bound`, :func:`count_threshold_ceiling`
general setting (App. F)
    :func:`class_weighted_moments`, :func:`input_noise_gradient`, :func:`sigt_general`
finite samples (derived in docs/emergence.md)
    :func:`finite_sample_step2_cos`, :func:`finite_sample_step2_deviation`, :func:`finite_sample_bias_shift`

Every O(.)/Omega(.)/Theta(.) constant the paper leaves unspecified is an explicit keyword (``C``,
``c_exp``, the Lemma 23 norms), default 1: the values are orders of magnitude, not numbers the paper
proves. Data constants come from ``PatternModel.moments()``.
"""
from __future__ import annotations

import itertools
import math
import warnings
from typing import NamedTuple

import numpy as np

from ..._validate import Interval, InvalidParameterError, Options, RegimeWarning, as_int, check
from .activation import window, window_derivs
from .data import PatternModel

__all__ = ["theorem1_rate", "theorem26_intermediate_rate", "theorem26_terms", "width_for_loss",
           "eps_e", "eps_e2", "fixed_feature_lower_bound", "parity_correlations",
           "parity_feature_correlations", "kernel_lower_bound",
           "sq_lower_bound", "SQBound", "count_threshold_ceiling", "class_weighted_moments",
           "WeightedMoments", "input_noise_gradient", "sigt_general", "finite_sample_step2_cos",
           "finite_sample_step2_deviation", "finite_sample_bias_shift"]

_POS = Interval(0.0, np.inf, "neither")
_NONNEG = Interval(0.0, np.inf, "left")
_PROB = Interval(0.0, 1.0, "neither")


def _own(name):
    return f"emergence.{name}"


def _log_comb(D, k):
    return math.log(math.comb(D, k))  # exact big-int binomial, then one rounding


# ---------------------------------------------------------------- rates ----------------------------------------


def _km(owner, k, m):
    return as_int(owner, "k", k, 1), as_int(owner, "m", m, 1)


def theorem1_rate(k, m, T=None, *, C=1.0):
    r"""Theorem 1/26 rate: the hinge loss (hence the 0-1 error) reached at some step t <= T.

    .. math:: L_{\mathcal D}(g^{(t)}) \le C\Big(\frac{k^8}{m^{2/3}} + \frac{k^3T}{m^2}
              + \frac{k^2m^{2/3}}{T}\Big),\qquad T = m^{4/3}\ \text{by default}.

    Parameters
    ----------
    k : int
        Number of class-relevant patterns, ``k >= 1``.
    m : int
        Half the number of neurons, ``m >= 1``.
    T : float or None
        Number of steps, ``T > 0``; None gives the theorem's ``m**(4/3)``.
    C : float
        The unspecified O(.) constant, ``C > 0``; default 1 is an order of magnitude.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 16 eps (a sum of positive products, each a few roundings) for k, m <= 1e6 and T, C and
    the data scales in 1e-6..1e12; measured 0.29 of the bound over the rates and error scales
    (tests/test_accuracy_emergence.py, mpmath at 40 digits).
    Regime: Thm 26 needs p_o = Omega(k^2/D), k = Omega(log^2(D/(delta gamma))),
    max{Omega(k^4), D} <= m <= poly(D), and the schedule (A.274)-(A.276); the bound is then an
    order of magnitude only. At T = m^(4/3) it is (k^8 + k^3 + k^2)/m^(2/3).

    References
    ----------
    .. [src] [Shi22, Theorem 26, eqs. (279), (284)]; [Shi24, (A.277), (A.282)].

    Examples
    --------
    >>> round(theorem1_rate(2, 8**3), 12)  # (2**8 + 2**3 + 2**2) / 8**2
    4.1875
    """
    owner = _own("theorem1_rate")
    k, m = _km(owner, k, m)
    T = m ** (4.0 / 3.0) if T is None else check(owner, "T", T, _POS)
    C = check(owner, "C", C, _POS)
    return C * (k**8 / m ** (2.0 / 3.0) + k**3 * T / m**2 + k**2 * m ** (2.0 / 3.0) / T)


def _stage3_eta(k, m, T):
    return k**2 / (T * m ** (1.0 / 3.0))


def theorem26_intermediate_rate(k, m, T, *, eta=None, C=1.0):
    r"""Intermediate bound (A.281) of Thm 26's proof, before the stage-3 step size is substituted.

    .. math:: C\Big(\frac{k^9}{m} + k^4\eta^2T^2 + \frac{k^3T}{m^2} + \frac{k^9}{\eta Tm} + \eta m\Big),
              \qquad \eta = \frac{k^2}{Tm^{1/3}}\ \text{by default}.

    With the default eta it is at most ``(2 + 1/k)`` times :func:`theorem1_rate` whenever
    ``m >= k**3`` (its extra terms are ``k^9/m <= k^8/m^{2/3}`` and ``k^7/m^{2/3}``), and that factor
    is approached at ``m = k**3``.

    Parameters
    ----------
    k : int
        ``k >= 1``.
    m : int
        ``m >= 1``.
    T : float
        Number of steps, ``T > 0``.
    eta : float or None
        Stage-3 step size, ``eta > 0``; None gives (A.276).
    C : float
        Unspecified O(.) constant, ``C > 0`` (default 1: an order of magnitude).

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 16 eps (a sum of positive products, each a few roundings) for k, m <= 1e6 and T, C and
    the data scales in 1e-6..1e12; measured 0.29 of the bound over the rates and error scales
    (tests/test_accuracy_emergence.py, mpmath at 40 digits).
    Regime: as :func:`theorem1_rate`; the ratio to (A.282) is bounded only for m >= k^3 (implied by
    Thm 26's m >= k^4).

    References
    ----------
    .. [src] [Shi22, proof of Theorem 26, eqs. (283)-(284)]; [Shi24, (A.281)-(A.282)].

    Examples
    --------
    >>> k, m = 3, 27
    >>> r = theorem26_intermediate_rate(k, m, 1e6) / theorem1_rate(k, m, 1e6)
    >>> bool(1 < r <= 2 + 1 / k)
    True
    """
    owner = _own("theorem26_intermediate_rate")
    k, m = _km(owner, k, m)
    T = check(owner, "T", T, _POS)
    eta = _stage3_eta(k, m, T) if eta is None else check(owner, "eta", eta, _POS)
    C = check(owner, "C", C, _POS)
    return C * (k**9 / m + k**4 * eta**2 * T**2 + k**3 * T / m**2 + k**9 / (eta * T * m) + eta * m)


def theorem26_terms(k, m, T, *, sigt=1.0, eta=None, lam=None, a_tilde_l2sq=None, a_tilde_l0=None,
                    a2_l2=None, C=1.0):
    r"""The terms of (A.279)-(A.280): the online-convex-optimisation bound of the classifier stage.

    .. math:: \frac1T\sum_{t=3}^T\tilde L(g^{(t)}) \le \frac{\|\tilde a\|_2^2}2
              + \|\tilde a\|_2\sqrt{\|\tilde a\|_0}\Big(C\frac{T\eta\lambda\tilde\sigma}{k} + \eta^2T^2
              + C\frac{T}{km^2}\Big) + \frac{\|\tilde a\|_2^2}{2\eta T} + \|a^{(2)}\|_2\sqrt m + \eta m

    Parameters
    ----------
    k : int
        ``k >= 1``.
    m : int
        ``m >= 1``.
    T : float
        ``T > 0``.
    sigt : float
        sigma-tilde, ``> 0`` (``model.moments().sigt``).
    eta : float or None
        Stage-3 step size; None gives ``k^2/(T m^(1/3))`` (A.276).
    lam : float or None
        Stage-3 weight decay; None gives the largest allowed ``k^3/(sigt m^(1/3))``.
    a_tilde_l2sq, a_tilde_l0, a2_l2 : float or None
        ``||a~||_2^2``, ``||a~||_0`` of the Lemma 23 second layer and ``||a^(2)||_2``; None gives
        Lemma 23's orders ``k^9/m``, ``m/k`` and ``sqrt(2m)/(k m^2)`` with constant 1. Pass the norms
        of an actual construction to get a computable bound.
    C : float
        The O(.) constant of the two bracketed O-terms (default 1: an order of magnitude).

    Returns
    -------
    dict
        ``"a_tilde"``, ``"lam_drift"``, ``"eta_drift"``, ``"step2_drift"``, ``"oco_norm"``,
        ``"a2"``, ``"eta_m"`` and their sum ``"total"``.

    Notes
    -----
    Accuracy: relative error <= 16 eps (a sum of positive products, each a few roundings) for k, m <= 1e6 and T, C and
    the data scales in 1e-6..1e12; measured 0.29 of the bound over the rates and error scales
    (tests/test_accuracy_emergence.py, mpmath at 40 digits).
    Regime: Thm 26 (see :func:`theorem1_rate`); the drift terms come from Lemma 24, the rest from
    Thm 27 (OCO). With the defaults, each term is the matching monomial of (A.281) (the first and
    fifth with a factor 1/2, ``lam_drift = eta_drift = k^8/m^(2/3)``; ``a2`` is of lower order).

    References
    ----------
    .. [src] [Shi22, proof of Theorem 26, eqs. (281)-(283), Lemmas 24-25, Lemma 23 (sizes)]; [Shi24,
       (A.279)-(A.281)].

    Examples
    --------
    >>> t = theorem26_terms(2, 64, 100.0)
    >>> bool(np.isclose(t["lam_drift"], 2**8 / 64**(2 / 3)))
    True
    """
    owner = _own("theorem26_terms")
    k, m = _km(owner, k, m)
    T = check(owner, "T", T, _POS)
    sigt = check(owner, "sigt", sigt, _POS)
    eta = _stage3_eta(k, m, T) if eta is None else check(owner, "eta", eta, _POS)
    lam = k**3 / (sigt * m ** (1.0 / 3.0)) if lam is None else check(owner, "lam", lam, _NONNEG)
    a2sq = k**9 / m if a_tilde_l2sq is None else check(owner, "a_tilde_l2sq", a_tilde_l2sq, _NONNEG)
    a0 = m / k if a_tilde_l0 is None else check(owner, "a_tilde_l0", a_tilde_l0, _NONNEG)
    a2 = math.sqrt(2 * m) / (k * m**2) if a2_l2 is None else check(owner, "a2_l2", a2_l2, _NONNEG)
    C = check(owner, "C", C, _POS)
    lever = math.sqrt(a2sq * a0)
    terms = {"a_tilde": a2sq / 2, "lam_drift": lever * C * T * eta * lam * sigt / k,
             "eta_drift": lever * eta**2 * T**2, "step2_drift": lever * C * T / (k * m**2),
             "oco_norm": a2sq / (2 * eta * T), "a2": a2 * math.sqrt(m), "eta_m": eta * m}
    terms["total"] = sum(terms.values())
    return terms


def width_for_loss(k, eps, *, C=1.0):
    r"""Width that Theorem 1 asks for loss eps at T = m^(4/3).

    .. math:: m \ge C\,\frac{k^{12}}{\epsilon^{3/2}}\qquad(C = 1:\ \text{solves } k^8/m^{2/3} = \epsilon)

    Parameters
    ----------
    k : int
        ``k >= 1``.
    eps : float
        Target loss in (0, 1).
    C : float
        Unspecified Omega(.) constant (default 1: an order of magnitude).

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 16 eps (a sum of positive products, each a few roundings) for k, m <= 1e6 and T, C and
    the data scales in 1e-6..1e12; measured 0.29 of the bound over the rates and error scales
    (tests/test_accuracy_emergence.py, mpmath at 40 digits).
    Regime: Thm 26 (also needs m >= D and m >= Omega(k^4)). 7.7e9 at k = 5, eps = 0.1: the theorem
    says nothing at experiment sizes.

    References
    ----------
    .. [src] [Shi22, Theorem 26, eq. (280)]; [Shi24, (A.278)].

    Examples
    --------
    >>> f"{width_for_loss(5, 0.1):.3g}"
    '7.72e+09'
    """
    owner = _own("width_for_loss")
    k = as_int(owner, "k", k, 1)
    eps = check(owner, "eps", eps, _PROB)
    return check(owner, "C", C, _POS) * k**12 / eps**1.5


# ---------------------------------------------------------------- error scales ---------------------------------


def eps_e(k, D, p_o, m, delta, *, C=1.0):
    r"""Step-1 error scale epsilon_e of Lemma 15 (the Berry-Esseen error of the background sum).

    .. math:: \epsilon_e = C\,\frac{k\log^{1/2}(Dm/\delta) + \log^{3/2}(Dm/\delta)}
              {\sqrt{\sigma_\phi^2\tilde\sigma^2(D-k)}},\qquad \sigma_\phi^2\tilde\sigma^2 = p_o(1-p_o).

    Parameters
    ----------
    k : int
        ``1 <= k < D``.
    D : int
        Number of patterns.
    p_o : float
        Background probability in (0, 1).
    m : int
        ``m >= 1``.
    delta : float
        Failure probability in (0, 1).
    C : float
        Unspecified constant (default 1: an order of magnitude).

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 16 eps (a sum of positive products, each a few roundings) for k, m <= 1e6 and T, C and
    the data scales in 1e-6..1e12; measured 0.29 of the bound over the rates and error scales
    (tests/test_accuracy_emergence.py, mpmath at 40 digits).
    Regime: Lemma 15 (p_o = Omega(k^2/D), k = Omega(log^2(Dm/delta))). Lemma 15 then bounds
    |T_j - beta gamma/sigt| <= O(eps_e/sigt) on A, |T_j| <= O(sigma_phi^2 eps_e sigt) off A,
    |T_b| <= O(eps_e). It exceeds 1 at experiment sizes (12.8 at D = 100, k = 5, m = 300,
    delta = 0.1), so the lemma is vacuous there (docs/errata.md).

    References
    ----------
    .. [src] [Shi22, Lemma 15 (App. B.4)]; [Shi24, Lemma A.9].

    Examples
    --------
    >>> round(eps_e(5, 100, 0.5, 300, 0.1), 1)
    12.8
    """
    owner = _own("eps_e")
    D = as_int(owner, "D", D, 2)
    k = as_int(owner, "k", k, 1, D - 1)
    p_o = check(owner, "p_o", p_o, _PROB)
    m = as_int(owner, "m", m, 1)
    delta = check(owner, "delta", delta, _PROB)
    L = math.log(D * m / delta)
    return check(owner, "C", C, _POS) * (k * L**0.5 + L**1.5) / math.sqrt(p_o * (1 - p_o) * (D - k))


def eps_e2(eta1, a0, k, gamma, sigt, s2, eps_e, *, C=1.0, c_exp=1.0):
    r"""Step-2 error scale epsilon_e2 of Lemma 20.

    .. math:: \epsilon_{e2} = C\,\frac{\eta^{(1)}|a^{(0)}|\,k(\gamma+\epsilon_e)}{\tilde\sigma^2\sigma_\xi^{(2)}}
              + e^{-c\,k}

    Parameters
    ----------
    eta1 : float
        Step-1 size, ``> 0``.
    a0 : float
        The neuron's initial second-layer weight (its modulus is used).
    k : int
        ``k >= 1``.
    gamma : float
        Data constant gamma, ``> 0``.
    sigt : float
        sigma-tilde, ``> 0``.
    s2 : float
        Step-2 smoothing sigma_xi^(2), ``> 0``.
    eps_e : float
        Step-1 scale (:func:`eps_e`), ``>= 0``.
    C, c_exp : float
        The O(.) and Theta(.) constants (default 1: orders of magnitude).

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 16 eps (a sum of positive products, each a few roundings) for k, m <= 1e6 and T, C and
    the data scales in 1e-6..1e12; measured 0.29 of the bound over the rates and error scales
    (tests/test_accuracy_emergence.py, mpmath at 40 digits). exp(-c k) is absolute 2^-1074 where it underflows.
    Regime: Lemma 20 (sigma_xi^(2) = k^(-3/2), eta1 = O(gamma/(k m sigma_a))). Lemma 20 then bounds
    |T_j - beta gamma/sigt| <= O(eps_e2/sigt + eta1/s2 + eta1|a0|eps_e/(sigt s2)) on A and
    |T_j| <= e^(-Theta(k))/sigt + O(sigma_phi^2 eps_e2 sigt) off A. The exact step-2 background is
    O(eta1^2) (docs/emergence.md), far below this bound.

    References
    ----------
    .. [src] [Shi22, Lemma 20 (App. B.5)]; [Shi24, Lemma A.14, (A.154)].

    Examples
    --------
    >>> eps_e2(0.0, 1.0, 10, 0.25, 5.0, 10**-1.5, 1.0) == math.exp(-10)
    True
    """
    owner = _own("eps_e2")
    eta1 = check(owner, "eta1", eta1, _NONNEG)
    a0 = check(owner, "a0", a0, Interval())
    k = as_int(owner, "k", k, 1)
    gamma = check(owner, "gamma", gamma, _POS)
    sigt = check(owner, "sigt", sigt, _POS)
    s2 = check(owner, "s2", s2, _POS)
    eps_e = check(owner, "eps_e", eps_e, _NONNEG)
    C = check(owner, "C", C, _POS)
    c_exp = check(owner, "c_exp", c_exp, _POS)
    return C * eta1 * abs(a0) * k * (gamma + eps_e) / (sigt**2 * s2) + math.exp(-c_exp * k)


# ---------------------------------------------------------------- lower bounds ---------------------------------

_FIXED_FORMS = ("parseval", "paper_sqrt2N_B", "paper_sqrt2NB")


def fixed_feature_lower_bound(p_o, N, B, k, D, form="parseval", *, t=1.0):
    r"""Hinge-loss lower bound for linear predictors on N data-independent bounded features (Thm 2).

    .. math:: \text{parseval: } p_o\Big(1 - B\sqrt{tN/\tbinom Dk}\Big),\qquad
              \text{paper\_sqrt2N\_B: } p_o\Big(1 - \frac{\sqrt{2N}\,B}{2^k}\Big),\qquad
              \text{paper\_sqrt2NB: } p_o\Big(1 - \frac{\sqrt{2NB}}{2^k}\Big),

    each clipped below at 0 (the hinge loss is non-negative).

    For ``Psi: X -> [-1, 1]^N`` and ``H_B = {<Psi, w> : ||w|| <= B}``, some member D_A^mix of the
    family has ``min_{h in H_B} E l(h) >=`` this bound. Parseval (derived): hinge >= 1 - E[y h] and
    the parities f_A are orthonormal under the uniform law, so sum_A ||E f_A Psi||^2 <= N and some A
    has ||E f_A Psi|| <= sqrt(N / C(D, k)); the mixture puts weight p_o on that uniform parity.

    Parameters
    ----------
    p_o : float
        Background probability = the weight of the uniform-parity component, in (0, 1]
        (``p_o = 1``: the uniform k-parity itself).
    N : int
        Number of features, ``>= 1``.
    B : float
        Norm bound on the second layer, ``>= 0``.
    k : int
        Parity order, ``1 <= k <= D``.
    D : int
        Number of patterns.
    form : {"parseval", "paper_sqrt2N_B", "paper_sqrt2NB"}
        "parseval" (default, derived, sharper); "paper_sqrt2N_B" is the B-linear reading that the
        proof supports; "paper_sqrt2NB" is the typeset one (erratum 5).
    t : float
        ``t >= 1``, "parseval" only: the bound holds for a uniformly random A with probability
        ``>= 1 - 1/t`` (Markov on ||E f_A Psi||^2); ``t = 1`` is the existence statement.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: absolute error <= 1e-12 p_o for N < 1e300, B in 1e-300..1e300, D <= 3000 (gap = B sqrt(tN/C(D, k)) goes
    through logs, eps (log tN + log C(D, k)) absolute, and 1 - gap cancels: the bound is absolute); measured 0.14 of the
    bound (tests/test_accuracy_emergence.py, mpmath with the exact binomial).
    Regime: any N, B, 1 <= k <= D for "parseval" (C(D, k) >= 16^k when k <= D/16, so it implies the
    paper's forms); the paper's forms are stated for odd 3 < k <= D/16 (a RegimeWarning outside).
    The mixture is a valid family member only at p_o = 1/2 (docs/errata.md). Parseval is vacuous
    (returns 0) once N B^2 t >= C(D, k); the paper's forms once 2N B^2 >= 4^k.

    References
    ----------
    .. [src] [Shi22, Theorem 2 = Theorem 28, Theorem 29 (App. C, from Daniely-Malach)]; [Shi24, Theorems
       A.22-A.23]; the Parseval form derived in docs/emergence.md.

    Examples
    --------
    >>> round(fixed_feature_lower_bound(1.0, 40, 0.5, 3, 10), 6)  # 1 - 0.5 sqrt(40/120)
    0.711325
    >>> fixed_feature_lower_bound(1.0, 40, 3.0, 3, 10)  # vacuous: N B^2 >= C(10, 3)
    0.0
    """
    owner = _own("fixed_feature_lower_bound")
    p_o = check(owner, "p_o", p_o, Interval(0.0, 1.0, "right"))
    N = as_int(owner, "N", N, 1)
    B = check(owner, "B", B, _NONNEG)
    D = as_int(owner, "D", D, 1)
    k = as_int(owner, "k", k, 1, D)
    form = check(owner, "form", form, Options(_FIXED_FORMS))
    t = check(owner, "t", t, Interval(1.0, np.inf, "left"))
    if form == "parseval":
        gap = B * math.exp(0.5 * (math.log(t * N) - _log_comb(D, k)))
    else:
        if t != 1.0:
            raise InvalidParameterError(f"The 't' parameter of {owner} must be 1 for form={form!r}. Got {t!r}.")
        if not (k % 2 == 1 and 3 < k <= D / 16):
            warnings.warn(f"{owner}: Thm 2 is stated for odd 3 < k <= D/16; got k={k}, D={D}.",
                          RegimeWarning, stacklevel=2)
        num = math.sqrt(2 * N) * B if form == "paper_sqrt2N_B" else math.sqrt(2 * N * B)
        gap = num * 2.0**-k
    return p_o * max(0.0, 1.0 - gap)


def parity_correlations(Psi, k):
    r"""Correlations E[f_A Psi] of features with every k-sparse parity, exactly on the cube {+-1}^D.

    .. math:: c_A = \mathbb E_{z\sim U\{\pm1\}^D}\big[f_A(z)\,\Psi(z)\big],\quad f_A(z) = \prod_{j\in A}z_j,
              \qquad \sum_{|A|=k}\|c_A\|^2 \le \mathbb E\|\Psi\|^2 \le N

    by one fast Walsh-Hadamard transform of the table of Psi. The Parseval certificate of
    :func:`fixed_feature_lower_bound` for a given feature map: every ``h = <Psi, w>`` with
    ``||w|| <= B`` has hinge loss ``>= 1 - B ||c_A||`` on the uniform k-parity over A.

    Parameters
    ----------
    Psi : array_like of shape (2**D, N)
        Feature values at every z in ``itertools.product([-1, 1], repeat=D)`` order; ``D <= 24``.
    k : int
        Parity order, ``0 <= k <= D``.

    Returns
    -------
    subsets : ndarray of int, shape (C(D, k), k)
        The sets A, in ``itertools.combinations(range(D), k)`` order.
    corr : ndarray of shape (C(D, k), N)
        ``c_A``.

    Notes
    -----
    Accuracy: absolute error <= D eps E|Psi_i| per entry (D butterfly passes of sums and differences); exact for integer
    tables; measured 0.46 of the bound (tests/test_accuracy_emergence.py, exact rationals, D <= 7, values 1e-300..1e300
    of either sign).
    Regime: exact for any bounded Psi (cost N D 2^D). For Psi with values in [-1, 1], the sum of
    ||c_A||^2 over all A (every k) equals E||Psi||^2 <= N (Parseval).

    References
    ----------
    .. [src] derived in docs/emergence.md (Parseval); [Shi22, Theorem 29 (App. C)].

    Examples
    --------
    >>> Z = np.array(list(itertools.product([-1, 1], repeat=3)), float)
    >>> A, c = parity_correlations(Z[:, :1] * Z[:, 2:], 2)  # Psi = z_0 z_2
    >>> A[np.argmax(c[:, 0])].tolist(), float(c.max())
    ([0, 2], 1.0)
    """
    owner = _own("parity_correlations")
    P = np.array(Psi, dtype=np.float64)
    if P.ndim == 1:
        P = P[:, None]
    D = int(round(math.log2(max(P.shape[0], 1))))
    if P.ndim != 2 or P.shape[0] != 2**D or not (1 <= D <= 24) or not np.all(np.isfinite(P)):
        raise InvalidParameterError(f"The 'Psi' parameter of {owner} must be a finite array of shape (2**D, N) "
                                    f"with 1 <= D <= 24. Got shape {np.shape(Psi)}.")
    k = as_int(owner, "k", k, 0, D)
    H = P.copy()
    h = 1
    while h < H.shape[0]:  # fast Walsh-Hadamard transform along axis 0, D butterfly passes
        H = H.reshape(-1, 2, h, H.shape[-1])
        H = np.stack([H[:, 0] + H[:, 1], H[:, 0] - H[:, 1]], axis=1).reshape(-1, P.shape[1])
        h *= 2
    combos = list(itertools.combinations(range(D), k))
    subsets = np.array(combos, dtype=np.int64).reshape(len(combos), k)
    # z_j = -(-1)^{bit_j}, coordinate j is bit D-1-j of the row index
    idx = (np.left_shift(1, D - 1 - subsets)).sum(axis=1) if k else np.zeros(1, np.int64)
    return subsets, (-1.0) ** k * H[idx] / 2.0**D


def parity_feature_correlations(a, b, s, A):
    r"""Exact correlations of smoothed truncated-ReLU features with one parity, any D (Fourier, derived).

    For ``Psi_i(z) = sigma~_s(<a_i, z> + b_i)`` with z uniform on {+-1}^D and ``f_A = prod_{j in A} z_j``:

    .. math:: c_{A,i} = \mathbb E[f_A\Psi_i] = \frac1\pi\int_0^\infty\mathrm{Im}\Big[\psi_{A,i}(t)\,e^{itb_i}\,
              \frac{1-e^{-it}}{it}\Big]\frac{dt}t,\qquad
              \psi_{A,i}(t) = \mathbb E[f_Ae^{it(\langle a_i,z\rangle+\xi)}] = i^{|A|}e^{-s^2t^2/2}
              \prod_{j\in A}\sin(ta_{ij})\prod_{j\notin A}\cos(ta_{ij})

    (Gil-Pelaez for the signed measure f_A dP, of total mass 0, integrated over thresholds in (0, 1)). With
    :func:`fixed_feature_lower_bound`'s argument, every ``<Psi, w>``, ``||w|| <= B``, has hinge loss
    ``>= 1 - B ||c_A||`` on the uniform parity over A (a certificate for given features, e.g. random features).

    Parameters
    ----------
    a : array_like of shape (N, D)
        Feature weights on z. For the network's neurons on the uniform part D^(0) of the parity mixture at
        p_o = 1/2, ``phi = z / (2 sigt)``, so ``a = Q / (2 sigt)``.
    b : array_like of shape (N,)
        Biases.
    s : float
        Smoothing, ``> 0``.
    A : sequence of int
        The parity set, non-empty, distinct indices in [0, D).

    Returns
    -------
    ndarray of shape (N,)

    Notes
    -----
    Accuracy: absolute error <= 1e-14 for s in [1e-3, 1e3] and |a_ij|, |b_i| <= 10 (the values are at most 1); measured
    0.017 of the bound (tests/test_accuracy_emergence.py, the cube enumerated with the smoothed ReLU in mpmath at 30
    digits, D <= 5).
    Regime: exact up to the trapezoid rule (step ``pi / (sum_j |a_ij| + |b_i| + 12 s + 1)``, no aliasing;
    ``t_max = 9.6 / s``); agrees with the Walsh-Hadamard :func:`parity_correlations` to ~1e-15 (tests). Cost
    O(N D t_max / h).

    References
    ----------
    .. [src] derived in docs/emergence.md (Fourier, as for T_a).

    Examples
    --------
    >>> c = parity_feature_correlations(np.r_[0.3, 0.2, 0.0][None, :], [0.1], 0.1, [2])  # z_2 unused
    >>> abs(float(c[0])) < 1e-15
    True
    """
    owner = _own("parity_feature_correlations")
    a = np.array(a, dtype=np.float64, ndmin=2)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.shape != (a.shape[0],) or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise InvalidParameterError(f"The 'a' and 'b' parameters of {owner} must be finite arrays of shapes (N, D) "
                                    f"and (N,). Got {a.shape} and {b.shape}.")
    s = check(owner, "s", s, _POS)
    D = a.shape[1]
    try:
        idx = sorted({as_int(owner, "A", j, 0, D - 1) for j in A})
    except TypeError:
        raise InvalidParameterError(f"The 'A' parameter of {owner} must be a sequence of ints. Got {A!r}.") from None
    if not idx or len(idx) != len(A):
        raise InvalidParameterError(f"The 'A' parameter of {owner} must be non-empty distinct indices. Got {A!r}.")
    h = math.pi / float(np.max(np.abs(a).sum(axis=1) + np.abs(b)) + 12 * s + 1)
    t = np.arange(1, int(math.ceil(9.6 / (s * h))) + 1) * h  # t = 0 contributes 0 (|A| >= 2) or a_j h/2
    R = np.exp(-0.5 * (s * t) ** 2)[None, :] * np.ones((a.shape[0], 1))
    inA = np.isin(np.arange(D), idx)
    for j in range(D):
        R = R * (np.sin if inA[j] else np.cos)(t[None, :] * a[:, j:j + 1])
    g = np.imag(1j ** len(idx) * R * np.exp(1j * t * b[:, None]) * (1 - np.exp(-1j * t)) / (1j * t)) / t
    g0 = a[:, idx[0]] if len(idx) == 1 else 0.0  # the integrand's limit at t = 0
    return h * (g.sum(axis=1) - 0.5 * g[:, -1] + 0.5 * g0) / math.pi


def kernel_lower_bound(p_o, k, poly):
    r"""Corollary 3: hinge-loss lower bound for shift-invariant kernel predictors of RKHS norm <= L.

    .. math:: p_o\Big(1 - \frac{P}{2^k}\Big) - \frac1P,\qquad P = \mathrm{poly}(d, L)

    clipped below at 0.

    Parameters
    ----------
    p_o : float
        In (0, 1].
    k : int
        ``k >= 1``.
    poly : float
        The unspecified polynomial poly(d, L) (from Rahimi-Recht random features), ``>= 1``.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: absolute error <= 1e-12 p_o (the clipped difference cancels); measured 1e-4 of the bound
    (tests/test_accuracy_emergence.py, mpmath).
    Regime: odd 3 < k <= D/16; the polynomial is not given by the paper, so this is a scaling
    statement (non-vacuous only when poly << 2^k).

    References
    ----------
    .. [src] [Shi22, Corollary 3 = Corollary 30 (App. C)].

    Examples
    --------
    >>> kernel_lower_bound(0.5, 10, 32.0)
    0.453125
    """
    owner = _own("kernel_lower_bound")
    p_o = check(owner, "p_o", p_o, Interval(0.0, 1.0, "right"))
    k = as_int(owner, "k", k, 1)
    poly = check(owner, "poly", poly, Interval(1.0, np.inf, "left"))
    return max(0.0, p_o * (1.0 - poly * 2.0**-k) - 1.0 / poly)


class SQBound(NamedTuple):
    """Theorem 4's statistical-query lower bound (see :func:`sq_lower_bound`)."""
    min_queries: float
    error_threshold: float
    error_gap: float
    sq_dim: int


def sq_lower_bound(D, k):
    r"""Theorem 4: statistical-query lower bound for learning without input structure (uniform phi).

    .. math:: d_{SQ} \ge \binom Dk,\qquad \#\text{queries or }1/\tau \ \ge\ \tfrac12\binom Dk^{1/3}
              \ \text{to reach error} < \tfrac12 - \binom Dk^{-3}.

    Parameters
    ----------
    D : int
        Number of patterns, ``>= 1``.
    k : int
        ``1 <= k <= D``.

    Returns
    -------
    SQBound
        ``min_queries`` = C(D,k)^(1/3)/2, ``error_gap`` = C(D,k)^(-3), ``error_threshold`` =
        1/2 - error_gap (rounds to 1/2 in float for large C), ``sq_dim`` = C(D, k) (exact int).

    Notes
    -----
    Accuracy: min_queries and error_gap relative error <= 1e-12 where they are normal floats (exponentials of logs up to
    709: 709 eps), inf or 0 beyond; sq_dim exact; measured 0.10 of the bound (tests/test_accuracy_emergence.py, mpmath,
    D <= 3000).
    Regime: any SQ algorithm on the family F_Xi0 (A1': phi uniform). The concept class is the
    +-1 parity prod_{j in A}(2 phi_j - 1) (erratum 6: the paper writes a {0,1} indicator summed over
    all j). Monotone in D, and in k for k <= D/2.

    References
    ----------
    .. [src] [Shi22, Theorem 4 = Theorem 33 (App. D; Blum et al. Thm 12)]; its concept class corrected in
       docs/emergence.md.

    Examples
    --------
    >>> r = sq_lower_bound(100, 5)
    >>> r.sq_dim, round(r.min_queries, 1), f"{r.error_gap:.2g}"
    (75287520, 211.1, '2.3e-24')
    """
    owner = _own("sq_lower_bound")
    D = as_int(owner, "D", D, 1)
    k = as_int(owner, "k", k, 1, D)
    logc = _log_comb(D, k)
    q = 0.5 * math.exp(logc / 3) if logc / 3 < 709 else math.inf
    gap = math.exp(-3 * logc)
    return SQBound(q, 0.5 - gap, gap, math.comb(D, k))


# ---------------------------------------------------------------- data-model helpers ---------------------------


def _model(owner, model):
    if not isinstance(model, PatternModel):
        raise InvalidParameterError(f"The 'model' parameter of {owner} must be an emergence.PatternModel. "
                                    f"Got {model!r}.")
    return model


def count_threshold_ceiling(model):
    r"""Best accuracy of a classifier that thresholds the count c = sum_{j in A} phi~_j.

    .. math:: \max_{t,\ s=\pm1}\ \sum_r \pi_r\,\mathbb 1\big[s\,\mathrm{sign}(c_r - t) = y_r\big]

    over thresholds t between consecutive counts (and beyond both ends: the constant classifiers).
    For the paper's parity mixture at p_o = 1/2 it is ``(1 - p_o) + p_o max_t acc_Bin(k,1/2)``:
    0.8125 (k = 3), 0.84375 (k = 5), 0.80859375 (k = 7).

    Parameters
    ----------
    model : PatternModel
        Any A-block support (labels need not be a function of c).

    Returns
    -------
    float
        In [max(P(y=1), P(y=-1)), 1].

    Notes
    -----
    Accuracy: absolute error <= 4 (R + k) eps and never above 1; measured 0.033 of the bound
    (tests/test_accuracy_emergence.py, brute force over thresholds and signs in exact rationals). Before: 1 + 2^-52
    where every count is classified right.
    Regime: population level; the reference level for "linear-ish" fixed-feature methods
    (Table 1: NTK 86.4 %, RF 76.0 %).

    References
    ----------
    .. [src] derived in docs/emergence.md.

    Examples
    --------
    >>> from popdyn.models.emergence.data import parity_mixture
    >>> count_threshold_ceiling(parity_mixture(20, 5, 0.5))
    0.84375
    """
    model = _model(_own("count_threshold_ceiling"), model)
    c = np.rint(model.A_support.sum(axis=1)).astype(np.int64)
    pr, y = model.A_probs, model.labels
    net = np.bincount(c, weights=pr * y, minlength=model.k + 1)  # P(y=+1, c) - P(y=-1, c)
    # predict +1 for c >= t: accuracy = P(y=-1) + sum_{c >= t} net_c, t = 0..k+1
    acc = float(pr @ (y < 0)) + np.concatenate([np.cumsum(net[::-1])[::-1], [0.0]])
    return min(1.0, float(max(acc.max(), (1.0 - acc).max())))  # rounding may overshoot 1 by an ulp


class WeightedMoments(NamedTuple):
    """Class-weighted moments of App. F (see :func:`class_weighted_moments`)."""
    alpha: dict
    E_alpha_y: float
    E_abs_alpha_y: float
    gamma: np.ndarray
    E_alpha_y_phi_A: np.ndarray
    max_E_abs_alpha_y_phi_A: float


def class_weighted_moments(model):
    r"""App. F's class weights alpha_v = 1/(2 P[y = v]) and the weighted moments of Lemma 39.

    .. math:: \gamma_j = \tfrac12\big(\mathbb E[\tilde\phi_j\mid y=1] - \mathbb E[\tilde\phi_j\mid y=-1]\big),
              \quad \mathbb E[\alpha_yy] = 0,\quad \mathbb E|\alpha_yy| = 1,\quad
              \mathbb E[\alpha_yy\phi_j] = \gamma_j/\tilde\sigma\ (j\in A),\quad
              \mathbb E|\alpha_yy\phi_j|\le 1/\tilde\sigma

    Parameters
    ----------
    model : PatternModel

    Returns
    -------
    WeightedMoments
        ``alpha`` (``{+1: alpha_+, -1: alpha_-}``), ``E_alpha_y``, ``E_abs_alpha_y``, ``gamma`` (k,)
        (``moments().gamma_weighted``), ``E_alpha_y_phi_A`` (k,), ``max_E_abs_alpha_y_phi_A`` (over A).

    Notes
    -----
    Accuracy: E_alpha_y and E_abs_alpha_y absolute error <= 1e-13; E_alpha_y_phi_A absolute <= 1e-13 E|alpha_y phi_j|;
    max_E_abs_alpha_y_phi_A relative <= 1e-13; probabilities within 1e-12 of 0 or 1 included; measured 0.012 of the
    bound (tests/test_accuracy_emergence.py, exact rationals).
    Regime: exact on the A-block support; E[alpha_y y phi_j] = 0 off A under (A2). gamma_j equals the
    unweighted E[y phi~_j] - E y E phi~_j when P(y = 1) = 1/2.

    References
    ----------
    .. [src] [Shi22, App. F.1 ((A1)), Lemma 39]; [Shi24, Lemma A.33].

    Examples
    --------
    >>> from popdyn.models.emergence.data import iid_block_model
    >>> wm = class_weighted_moments(iid_block_model(10, 4, 0.5, 0.5, [4]))  # P(y = 1) = 1/16
    >>> wm.alpha[1], round(wm.E_alpha_y, 15), round(wm.E_abs_alpha_y, 15)
    (8.0, 0.0, 1.0)
    """
    model = _model(_own("class_weighted_moments"), model)
    mom = model.moments()
    am, ap = mom.class_weights(_own("class_weighted_moments"), "model")
    w = model.A_probs * model.labels * mom.class_weight(model.labels)
    phA = model.phi_A()
    return WeightedMoments({1: ap, -1: am}, float(w.sum()),
                           float(np.abs(w).sum()), mom.gamma_weighted, w @ phA,
                           float((np.abs(w) @ np.abs(phA)).max()))


def _neuron(owner, model, q, b, s, sigma_zeta, w_perp_sq):
    model = _model(owner, model)
    if model.D - model.k > 16:
        raise InvalidParameterError(f"The 'model' parameter of {owner} must have D - k <= 16 (exact "
                                    f"enumeration). Got D - k = {model.D - model.k}.")
    q = np.asarray(q, dtype=np.float64)
    if q.shape != (model.D,) or not np.all(np.isfinite(q)):
        raise InvalidParameterError(f"The 'q' parameter of {owner} must be a finite array of shape ({model.D},). "
                                    f"Got shape {q.shape}.")
    return (model, q, check(owner, "b", b, Interval()), check(owner, "s", s, _NONNEG),
            check(owner, "sigma_zeta", sigma_zeta, _NONNEG), check(owner, "w_perp_sq", w_perp_sq, _NONNEG))


def input_noise_gradient(model, q, b, s, sigma_zeta, w_perp_sq=0.0, *, weighted=True):
    r"""App. F gradient of one neuron under Gaussian input noise zeta, by Stein's lemma (derived).

    With x = M phi + zeta/sigt, zeta ~ N(0, sigma_zeta^2 I_d), c_phi = <q, phi> + b and
    s_t^2 = s^2 + sigma_zeta^2 ||w||^2 / sigt^2 (||w||^2 = ||q||^2 + ``w_perp_sq``):

    .. math:: -\frac{\partial_wL^\alpha}{a} = \sum_jM_jT_j + v,\quad
              T_j = \mathbb E\big[\alpha_yy\phi_j W_{s_t}(c_\phi)\big],\quad
              v = \frac{\sigma_\zeta^2}{\tilde\sigma^2}\,w\,
              \mathbb E\big[\alpha_yy\,(p_{s_t}(c_\phi) - p_{s_t}(1-c_\phi))\big]

    where W_s(c) = Phi((1-c)/s) - Phi(-c/s) and p_s is the N(0, s^2) density: the noise adds to the
    smoothing, and its part v of the gradient is parallel to the current w.

    Parameters
    ----------
    model : PatternModel
        Background enumerated exactly: ``D - k <= 16``.
    q : array_like of shape (D,)
        Pattern coordinates M^T w.
    b : float
        Bias.
    s : float
        Injected-noise smoothing sigma_xi, ``>= 0`` (``s_t > 0`` is needed).
    sigma_zeta : float
        Input-noise scale, ``>= 0``.
    w_perp_sq : float
        ``||w||^2 - ||q||^2``, the squared norm of w outside span(M), ``>= 0``.
    weighted : bool
        Class-weighted loss L^alpha of steps 1-2 (default) or the plain loss (alpha = 1).

    Returns
    -------
    T : ndarray of shape (D,)
    v_coef : float
        ``v = v_coef * w``.

    Notes
    -----
    Accuracy: |T_j - exact| <= 1e-12 sum |w| |phi_j| and |v_coef - exact| <= 1e-12 (sigma_zeta^2/sigt^2) sum |w| (p(c) +
    p(1 - c)) (w = pi alpha_y y Pr(background): the sums' absolute scales), s in 1e-2..10, sigma_zeta in 1e-3..10;
    measured 0.043 of the bound (tests/test_accuracy_emergence.py, the joint law enumerated in mpmath at 40 digits).
    Regime: hinge indicator = 1 (steps 1-2); orthonormal M (mu = 0); sigt is the model's (App. F's
    sigt^2 also carries d sigma_zeta^2: the normalisation is the caller's). The paper only bounds v
    (Lemma 40).

    References
    ----------
    .. [src] derived in docs/emergence.md (Stein); [Shi22, Theorem 34 (App. F.2), Lemma 40 (App. F.7)].
    """
    model, q, b, s, sz, wp = _neuron(_own("input_noise_gradient"), model, q, b, s, sigma_zeta, w_perp_sq)
    D, k, sigt = model.D, model.k, model.moments().sigt
    st = math.sqrt(s**2 + sz**2 * (q @ q + wp) / sigt**2)
    if not st > 0:
        raise InvalidParameterError(f"The 's' parameter of {_own('input_noise_gradient')} must be > 0 when "
                                    f"sigma_zeta ||w|| = 0. Got {s}.")
    bg = np.array(list(itertools.product([0.0, 1.0], repeat=D - k))).reshape(-1, D - k)
    P, group = model.background_groups()
    bgp = np.prod(np.where(bg[None] > 0, P[:, None, :], 1 - P[:, None, :]), axis=2)[group]  # (R, 2^(D-k))
    phB = (bg - model.moments().p_bar) / sigt
    yw = model.labels * (model.moments().class_weight(model.labels, _own("input_noise_gradient"), "weighted")
                         if weighted else 1.0)
    c = b + (model.phi_A() @ q[:k])[:, None] + (phB @ q[k:])[None, :]
    wgt = (model.A_probs * yw)[:, None] * bgp
    h, h1, _ = window_derivs(c, st)  # W_{s_t}(c) and W'(c) = p_{s_t}(c) - p_{s_t}(1 - c)
    T = np.concatenate([(wgt * h).sum(axis=1) @ model.phi_A(), (wgt * h).sum(axis=0) @ phB])
    return T, sz**2 / sigt**2 * float(np.sum(wgt * h1))


# ---------------------------------------------------------------- finite samples -------------------------------


def _row_moments(model):
    """E[phi | r] (R, D) and the within-row background variances Var(phi_B | r) (R, D - k)."""
    mom = model.moments()
    P, group = model.background_groups()
    mean_r = np.concatenate([model.phi_A(), (P[group] - mom.p_bar) / mom.sigt], axis=1)
    return mean_r, P[group] * (1 - P[group]) / mom.sigt**2


def _second_moment(model, weights):
    """sum_r weights_r E[phi phi^T | r] (D, D)."""
    mean_r, var_r = _row_moments(model)
    S = (mean_r * weights[:, None]).T @ mean_r
    idx = np.arange(model.k, model.D)
    S[idx, idx] += weights @ var_r
    return S


def _y_phi_stats(model):
    """mu = E[y phi] and Sigma = Cov(y phi) (D, D) in pattern coordinates, background given the row exactly.

    mu = 2 p_+ p_- (E[phi | y = 1] - E[phi | y = -1]) (no cancellation of sum_r pi_r y_r m_r when one class is
    rare), and Sigma is summed from the centred rows, ``sum_r pi_r (y_r m_r - mu)(y_r m_r - mu)^T`` plus the
    within-row background variances (``E||y phi||^2 - ||mu||^2`` would lose all digits of a trace far below 1)."""
    mean_r, var_r = _row_moments(model)
    mom, pi, pos = model.moments(), model.A_probs, model.labels > 0
    delta = (pi * pos) @ mean_r / mom.p_plus - (pi * ~pos) @ mean_r / mom.p_minus
    mu = 2 * mom.p_plus * mom.p_minus * delta
    dev = model.labels[:, None] * mean_r - mu
    Sigma = (dev * model.A_probs[:, None]).T @ dev
    idx = np.arange(model.k, model.D)
    Sigma[idx, idx] += model.A_probs @ var_r
    return mu, Sigma


def sigt_general(model, rho, sigma_zeta=0.0, d=None, *, convention="exact"):
    r"""Normaliser sigma-tilde of the general setting (App. F): incoherent dictionary and Gaussian input noise.

    .. math:: \tilde\sigma^2 = \mathbb E\|\tilde x - \mathbb E\tilde x\|^2
              = \sum_{j,\ell}\rho_{j\ell}\,\mathrm{Cov}(\tilde\phi_j, \tilde\phi_\ell) + d\,\sigma_\zeta^2
              \quad(\text{exact}),\qquad \sum_j\mathrm{Var}(\tilde\phi_j) + d\,\sigma_\zeta^2\quad(\text{paper})

    with ``rho = M^T M`` (unit diagonal, ``|rho_jl| <= mu_coh/sqrt(d)``).

    Parameters
    ----------
    model : PatternModel
    rho : array_like of shape (D, D)
        Gram matrix of the dictionary, symmetric with unit diagonal.
    sigma_zeta : float
        Input-noise scale, ``>= 0``.
    d : int or None
        Ambient dimension, ``>= D``; needed when ``sigma_zeta > 0``.
    convention : {"exact", "paper"}
        "paper" drops the cross terms (exact only for mu_coh = 0, erratum 10).

    Returns
    -------
    float

    Notes
    -----
    Accuracy: sigt^2 absolute error <= 1e-13 (sum_jl |rho_jl Cov_jl| + d sigma_zeta^2); measured 0.003 of the bound
    (tests/test_accuracy_emergence.py, exact rationals).
    Regime: any member (A-block cross covariances are not zero in general, e.g. 1/8 on A for the parity
    mixture, so the paper's form is off by sum_{j != l} rho_jl Cov_jl = O(k^2 mu_coh/sqrt(d))).

    References
    ----------
    .. [src] [Shi22, App. F.1.1] (normalisation); derived in docs/emergence.md.

    Examples
    --------
    >>> from popdyn.models.emergence.data import parity_mixture
    >>> model = parity_mixture(12, 3, 0.5)
    >>> bool(np.isclose(sigt_general(model, np.eye(12)), model.moments().sigt, rtol=1e-14))
    True
    """
    owner = _own("sigt_general")
    model = _model(owner, model)
    D = model.D
    rho = np.asarray(rho, dtype=np.float64)
    if rho.shape != (D, D) or not (np.all(np.isfinite(rho)) and np.allclose(rho, rho.T, rtol=0, atol=1e-12)
                                   and np.allclose(np.diag(rho), 1.0, rtol=0, atol=1e-12)):
        raise InvalidParameterError(f"The 'rho' parameter of {owner} must be a finite symmetric ({D}, {D}) array "
                                    f"with unit diagonal (M^T M of unit columns). Got shape {rho.shape}.")
    sz = check(owner, "sigma_zeta", sigma_zeta, _NONNEG)
    convention = check(owner, "convention", convention, Options(("exact", "paper")))
    if sz > 0 or d is not None:
        d = as_int(owner, "d", d, D)
    noise = sz**2 * d if sz > 0 else 0.0
    cov = _second_moment(model, model.A_probs) * model.moments().sigt**2  # Cov(phi~), phi has mean 0
    sig2 = float(np.trace(cov)) if convention == "paper" else float(np.sum(rho * cov))
    return math.sqrt(sig2 + noise)


def finite_sample_step2_cos(model, n, *, target=None):
    r"""Predicted step-2 max cosine between the neurons and the signal direction, n samples (derived).

    Under the theory schedule every neuron ends step 2 along the empirical mean Ê[y phi] (pattern
    coordinates), so max_i cos(w_i^(2), v) = cos(Ê[y phi], v). With mu = E[y phi], Sigma = Cov(y phi),
    u = mu/||mu||, c = <u, v>, the delta method to order 1/n gives

    .. math:: \mathbb E\cos \approx c + \frac{3c\,u^\top\Sigma u - 2v^\top\Sigma u - c\,\mathrm{tr}\Sigma}
              {2n\|\mu\|^2}\ \overset{v = u}{=}\ 1 - \frac{\mathrm{tr}(P_\perp\Sigma)}{2n\|\mu\|^2}.

    Parameters
    ----------
    model : PatternModel
    n : int
        Sample size, ``>= 1``.
    target : array_like of shape (D,) or None
        Direction v in pattern coordinates; default ``1_A/sqrt(k)`` (the paper's sum_A M_j).

    Returns
    -------
    float

    Notes
    -----
    Accuracy: absolute error <= 64 eps kappa (1 + K+/n) with kappa = 1 + E||E[phi | r]|| / ||E[y phi]|| (the
    conditioning of E[y phi]) and K+ = (3|u'Su| + 2|v'Su| + tr S)/(2||mu||^2), the 1/n term with its parts in modulus
    (they cancel when v ~ u); in [-1, 1] (within rounding, clipped); an n so small that the expansion leaves [-1, 1]
    raises. Measured 0.012 of the bound (tests/test_accuracy_emergence.py, exact rationals). Before: n = 1 returned a
    cosine of -37.8.
    Regime: large n: the remainder is O(1/n^2) (about +2.2e3/n^2 for the parity mixture below, mostly
    the 3/8 E[X^2] term of 1/sqrt(1 + X), X = ||eps_perp||^2/||mu||^2; measured by exact sampling);
    eta1 -> 0 (the O(eta1) part of w^(2) is dropped); hinge indicator = 1; any member, also with a
    row-dependent background (``p_bg_rows``). For the parity mixture D = 100, k = 5, p_o = 1/2:
    1 - cos = 38.8/n (0.99922 at n = 5e4; observed 0.99930, docs/emergence.md).

    References
    ----------
    .. [src] derived in docs/emergence.md.

    Examples
    --------
    >>> from popdyn.models.emergence.data import parity_mixture
    >>> round(finite_sample_step2_cos(parity_mixture(100, 5, 0.5), 50_000), 5)  # 1 - 38.8/n
    0.99922
    """
    owner = _own("finite_sample_step2_cos")
    model = _model(owner, model)
    n = as_int(owner, "n", n, 1)
    mu, Sigma = _y_phi_stats(model)
    D, k = model.D, model.k
    if target is None:
        v = np.r_[np.full(k, k**-0.5), np.zeros(D - k)]
    else:
        v = np.asarray(target, dtype=np.float64)
        nv = np.linalg.norm(v) if v.shape == (D,) else 0.0
        if not (np.isfinite(nv) and nv > 0):
            raise InvalidParameterError(f"The 'target' parameter of {owner} must be a finite non-zero array of "
                                        f"shape ({D},). Got {target!r}.")
        v = v / nv
    r2 = float(mu @ mu)
    if not r2 > 0:
        raise InvalidParameterError(f"The 'model' parameter of {owner} must have E[y phi] != 0 (gamma > 0).")
    u = mu / math.sqrt(r2)
    c = min(1.0, max(-1.0, float(u @ v)))   # |<u, v>| <= 1 for unit vectors; rounding may overshoot by an ulp
    K = (3 * c * float(u @ Sigma @ u) - 2 * float(v @ Sigma @ u) - c * float(np.trace(Sigma))) / (2 * r2)
    cos = c + K / n
    if not abs(cos) <= 1.0 + 8 * np.finfo(float).eps:   # the 1/n term is not small: the expansion says nothing
        raise InvalidParameterError(f"The 'n' parameter of {owner} must be large enough for the 1/n expansion, "
                                    f"n >> |K| = {abs(K):.3g} (the correction is K/n); at n = {n} it gives "
                                    f"cos = {cos:.3g}, outside [-1, 1].")
    return min(1.0, max(-1.0, cos))   # within rounding of +-1


def finite_sample_step2_deviation(model, n):
    r"""Root-mean-square relative deviation of Ê[y phi] (hence of W^(2)) from its population limit.

    .. math:: \frac{\big(\mathbb E\|\hat{\mathbb E}[y\phi] - \mathbb E[y\phi]\|^2\big)^{1/2}}{\|\mathbb E[y\phi]\|}
              = \sqrt{\frac{\mathrm{tr}\,\mathrm{Cov}(y\phi)}{n\,\|\mathbb E[y\phi]\|^2}}

    Parameters
    ----------
    model : PatternModel
    n : int
        Sample size, ``>= 1``.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 64 eps kappa, kappa = 1 + E||E[phi | r]|| / ||E[y phi]|| (the conditioning of E[y phi]);
    measured 0.022 of the bound (tests/test_accuracy_emergence.py, exact rationals). E[y phi] = 2 p+ p- (E[phi | y = 1]
    - E[phi | y = -1]) and Cov(y phi) from the centred rows; before, sum_r pi_r y_r E[phi | r] and E||y phi||^2 -
    ||mu||^2 cancelled: 1.2e-7 relative off at P(y = -1) = 1e-18.
    Regime: exact for the empirical mean of n i.i.d. samples; for W^(2) up to O(eta1) and with the
    hinge indicator = 1. Parity mixture D = 100, k = 5, p_o = 1/2, n = 1e4: 0.089 (observed 0.086).

    References
    ----------
    .. [src] derived in docs/emergence.md.

    Examples
    --------
    >>> from popdyn.models.emergence.data import parity_mixture
    >>> round(finite_sample_step2_deviation(parity_mixture(100, 5, 0.5), 10_000), 3)  # sqrt(0.9875/125)
    0.089
    """
    owner = _own("finite_sample_step2_deviation")
    model = _model(owner, model)
    n = as_int(owner, "n", n, 1)
    mu, Sigma = _y_phi_stats(model)
    r2 = float(mu @ mu)
    if not r2 > 0:
        raise InvalidParameterError(f"The 'model' parameter of {owner} must have E[y phi] != 0 (gamma > 0).")
    return math.sqrt(np.trace(Sigma) / (n * r2))


def finite_sample_bias_shift(model, n, a1, b1, s):
    r"""Step-2 bias shift from finite-sample class imbalance: its mean and standard deviation (derived).

    .. math:: b^{(2)} - b^{(1)} = a^{(1)}h(b^{(1)})\,\hat{\mathbb E}[y] + O(\eta^{(1)}),\qquad
              \mathbb E = a^{(1)}h\,\mathbb Ey,\quad \mathrm{sd} = |a^{(1)}|h\sqrt{(1 - (\mathbb Ey)^2)/n},
              \quad h(b) = \mathrm{win}_s(b)

    Parameters
    ----------
    model : PatternModel
    n : int
        Sample size, ``>= 1`` (i.i.d. sampling; with exactly balanced classes the shift is 0).
    a1, b1 : array_like
        Second-layer weights and biases after step 1 (same shape).
    s : float
        Step-2 smoothing sigma_xi^(2), ``> 0``.

    Returns
    -------
    mean, sd : ndarray
        Shape of ``a1``.

    Notes
    -----
    Accuracy: mean absolute error <= 2e-12 |a1| win_s(b1), sd relative <= 2e-12 (absolute 1e-300 where the window is
    subnormal); measured 0.10 of the bound (tests/test_accuracy_emergence.py, exact rationals and the window in mpmath).
    Before: the sd came from 1 - Ey^2 and was 7.4 times too large at P(y = -1) = 1e-18 (now 4 p+ p-).
    Regime: eta1 -> 0 (w^(1) = O(eta1), so the window is at the bias); hinge indicator = 1. With sigma_a ~ 4
    and n = 5e4 the sd is ~0.01-0.04, as large as sigma_b = 1/k^2: validation runs should balance classes
    (docs/emergence.md).

    References
    ----------
    .. [src] derived in docs/emergence.md (correlation 1.0000 with the observed shift).

    Examples
    --------
    >>> from popdyn.models.emergence.data import parity_mixture
    >>> mean, sd = finite_sample_bias_shift(parity_mixture(20, 3, 0.5), 10_000, [2.0], [0.5], 0.1)
    >>> float(mean[0]), round(float(sd[0]), 6)  # E y = 0; 2 * win_0.1(0.5) / sqrt(n), win = 1 - 6e-7
    (0.0, 0.02)
    """
    owner = _own("finite_sample_bias_shift")
    model = _model(owner, model)
    n = as_int(owner, "n", n, 1)
    s = check(owner, "s", s, _POS)
    a1, b1 = np.asarray(a1, dtype=np.float64), np.asarray(b1, dtype=np.float64)
    if a1.shape != b1.shape or not (np.all(np.isfinite(a1)) and np.all(np.isfinite(b1))):
        raise InvalidParameterError(f"The 'a1' and 'b1' parameters of {owner} must be finite arrays of one shape. "
                                    f"Got shapes {a1.shape} and {b1.shape}.")
    mom = model.moments()
    ah = a1 * window(b1, s)
    return ah * mom.Ey, np.abs(ah) * math.sqrt(4 * mom.p_plus * mom.p_minus / n)  # 1 - Ey^2, no cancellation
