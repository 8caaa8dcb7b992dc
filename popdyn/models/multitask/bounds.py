r"""Bound shapes of the multi-task ReLU model ([Collins24] Prop. 4.1, Thm 4.2, Lemma A.5, Thms 4.3/4.6, App. B).

The paper's bounds hide absolute constants (``O(.)``, ``Omega(.)``, "for an absolute constant c"). Every such
constant is an explicit argument here with default 1.0 ("constants unspecified"): the functions give the
*shape* of each right-hand side, to be compared with measurements in trend only. Quantities whose constants
are explicit (Lemma A.5 by Hoeffding, Thm 4.6) are exact.

Public names
------------
pretraining:   :func:`prop41_rhs`, :func:`thm42_rhs`, :func:`prop41_requirements`, :func:`thm42_requirements`,
               :func:`lemmaA5_hoeffding`
downstream:    :func:`downstream_eval`, :func:`margin_exponent`, :func:`thmB5_requirements`, :func:`thmB5_log_rhs`
lower bound:   :func:`thm46_lower` (paper), :func:`thm46_bessel` (sharper, derived in docs/multitask.md)
"""
from __future__ import annotations

import math

from ..._validate import Integer, Interval, InvalidParameterError, Options, as_int, check

__all__ = ["prop41_rhs", "thm42_rhs", "prop41_requirements", "thm42_requirements", "lemmaA5_hoeffding",
           "thm46_lower", "thm46_bessel", "downstream_eval", "margin_exponent", "thmB5_requirements",
           "thmB5_log_rhs"]

_POS = Interval(0, math.inf, closed="neither")
_NONNEG = Interval(0, math.inf, closed="left")
_PROB = Interval(0, 1, closed="neither")
_DELTA_B = Interval(0, 0.05, closed="right")      # Lemma B.1 / Thm B.5: delta in (0, 0.05]
_T = Interval(0, math.inf, closed="right")         # T = inf allowed (the Hadamard universe)


def _ldexp_inf(x, e):
    """``x 2^e``, inf where it overflows (math.ldexp raises)."""
    try:
        return math.ldexp(x, e)
    except OverflowError:
        return math.inf


def _rdm(owner, r, d, m):
    r = as_int(owner, "r", r, low=1)
    d = as_int(owner, "d", d, low=1)
    if r > d:
        raise InvalidParameterError(f"The 'd' parameter of {owner} must be an int >= r = {r}. Got {d!r} instead.")
    return r, d, as_int(owner, "m", m, low=1)


def _over_sqrt_binom(owner, d, r, x):
    """``x / sqrt(binom(d, r))`` for a float ``x >= 0``, from the exact integer binomial: its leading 106 bits
    (relative truncation 2^-105) times a power of 2, so neither ``binom`` nor ``x^2`` overflows."""
    r = as_int(owner, "r", r, low=0)
    d = as_int(owner, "d", d, low=1)
    if r > d:
        raise InvalidParameterError(f"The 'd' parameter of {owner} must be an int >= r = {r}. Got {d!r} instead.")
    c = math.comb(d, r)
    e = max(0, c.bit_length() - 106) & ~1                  # even shift: sqrt(c) = sqrt(c >> e) 2^(e/2)
    return math.ldexp(x / math.sqrt(float(c >> e)), -e // 2) if x > 0 else 0.0


def prop41_rhs(r, d, m, T, C=1.0):
    r"""Both right-hand sides of Proposition 4.1 (shapes; constants unspecified).

    .. math:: \frac{\|\Pi_\|(W^+) - \kappa_\|\Pi_\|(W^0)\|_2}{\nu_w\sqrt m} \le C\Big(\frac{r^4+\log^4 m}{2^r d}
              + \frac{\sqrt r\,d}{\sqrt T}\Big),\qquad
              \frac{\|\Pi_\perp(W^+)\|_2}{\nu_w\sqrt m} \le C\Big(\frac{r^{3.5}+\log^{3.5} m}{2^r d^{1.5}}
              + \frac{\sqrt r\,d}{\sqrt T}\Big)

    Parameters
    ----------
    r, d, m : int
        Ground-truth coordinates ``r >= 1``, input dimension ``d >= r``, width ``m >= 1``.
    T : float
        Number of tasks, > 0; ``math.inf`` (the universe, beta_bar = I) drops the finite-T term.
    C : float
        The absolute constant of both ``O(.)`` (unspecified in the paper), > 0; default 1.

    Returns
    -------
    (float, float)
        The parallel line and the perpendicular line.

    Notes
    -----
    Accuracy: relative error <= 8 eps for r to 1000, d to 1e6, T to 1e300 or inf (2^-r by ldexp; before: 0 at r =
    1000, d = 1e6) (measured: 0.33 of the declared bound).
    Regime: Prop. 4.1's assumptions (d = Omega(r^4), eta = Theta(1), lambda_a = 1/eta, the paper's lambda_w,
    nu_w = O(d^-1.25), m = O(d)); constants unspecified. The main text writes ``sqrt(r d)/sqrt(T)``; the proof
    (Lemma A.6, eq. (36)) gives ``sqrt(r) d / sqrt(T)``, used here. The ``Omega(2^-r)`` factor is
    ``kappa_par = eta^2 2^-r/(2 pi)`` (corrected; paper ``eta^2 2^-r-2``).

    References
    ----------
    .. [src] [Collins24, Proposition 4.1, Proposition A.11, Lemma A.6, eq. (36)].

    Examples
    --------
    >>> par, perp = prop41_rhs(2, 100, 8, math.inf)
    >>> round(perp / par, 6) == round((2**3.5 + math.log(8)**3.5) / (2**4 + math.log(8)**4) / 10, 6)
    True
    """
    owner = "multitask.bounds.prop41_rhs"
    r, d, m = _rdm(owner, r, d, m)
    T, C = check(owner, "T", T, _T), check(owner, "C", C, _POS)
    lm, tasks = math.log(m), math.sqrt(r) * d / math.sqrt(T)
    return (C * (math.ldexp((r ** 4 + lm ** 4) / d, -r) + tasks),
            C * (math.ldexp((r ** 3.5 + lm ** 3.5) / d ** 1.5, -r) + tasks))


def thm42_rhs(r, d, m, T, C=1.0):
    r"""Right-hand side of Theorem 4.2, the spurious/true energy ratio (shape; constants unspecified).

    .. math:: \frac{\|\Pi_\perp(W^+)\|_2}{\sigma_r(\Pi_\|(W^+))} \le C\Big(\frac{r^{3.5}+\log^{3.5} m}{d^{1.5}}
              + \frac{2^r\sqrt r\,d}{\sqrt T}\Big)

    Parameters
    ----------
    r, d, m : int
        Ground-truth coordinates ``r >= 1``, input dimension ``d >= r``, width ``m >= 1``.
    T : float
        Number of tasks, > 0; ``math.inf`` drops the finite-T term.
    C : float
        The absolute constant of the ``O(.)`` (unspecified), > 0; default 1.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 8 eps for r to 1000 (inf where 2^r sqrt(r) d/sqrt(T) overflows) (measured: 0.24 of
    the declared bound).
    Regime: Thm 4.2's assumptions (Prop. 4.1's, plus d = Omega(r^4 + log^4 m), m = Omega(r),
    T = Omega(r 4^r d^2)); constants unspecified. Measured at T = inf the ratio is ~ (0.2-0.7)(r/d)^1.5
    (docs/multitask.md): the d^-1.5 rate holds with a much milder r-dependence.

    References
    ----------
    .. [src] [Collins24, Theorem 4.2, Theorem A.12].

    Examples
    --------
    >>> thm42_rhs(1, 100, 2, math.inf) == (1 + math.log(2) ** 3.5) / 1000
    True
    """
    owner = "multitask.bounds.thm42_rhs"
    r, d, m = _rdm(owner, r, d, m)
    T, C = check(owner, "T", T, _T), check(owner, "C", C, _POS)
    return C * ((r ** 3.5 + math.log(m) ** 3.5) / d ** 1.5 + _ldexp_inf(math.sqrt(r) * d / math.sqrt(T), r))


def prop41_requirements(r, d):
    r"""Scalings Proposition 4.1 requires, without constants (constants unspecified).

    .. math:: d \gtrsim r^4,\qquad \nu_w \lesssim d^{-1.25},\qquad m \lesssim d

    Parameters
    ----------
    r, d : int
        Ground-truth coordinates ``r >= 1`` and input dimension ``d >= r``.

    Returns
    -------
    dict
        ``d_min = r^4``, ``nu_w_max = d^-1.25``, ``m_max = d``.

    Notes
    -----
    Accuracy: relative error <= 2 eps (one power each).
    Regime: shapes only. The main text says ``m = o(exp d)`` (Prop. 4.1); the appendix proof needs ``m = O(d)``
    (Prop. A.11), which is also what keeps the hinge linear (docs/multitask.md).

    References
    ----------
    .. [src] [Collins24, Proposition 4.1, Proposition A.11].
    """
    r, d, _ = _rdm("multitask.bounds.prop41_requirements", r, d, 1)
    return {"d_min": float(r ** 4), "nu_w_max": d ** -1.25, "m_max": float(d)}


def thm42_requirements(r, d, m):
    r"""Scalings Theorem 4.2 requires, without constants (constants unspecified).

    .. math:: d \gtrsim r^4 + \log^4 m,\qquad m \gtrsim r,\qquad T \gtrsim r\,4^r d^2

    Parameters
    ----------
    r, d, m : int
        Ground-truth coordinates ``r >= 1``, input dimension ``d >= r``, width ``m >= 1``.

    Returns
    -------
    dict
        ``d_min``, ``m_min``, ``T_min``.

    Notes
    -----
    Accuracy: relative error <= 4 eps (r 4^r d^2 exact in ints, one rounding).
    Regime: shapes only. For random labelings the measured requirement is far weaker, ``T >> d/m``
    (docs/multitask.md).

    References
    ----------
    .. [src] [Collins24, Theorem 4.2].
    """
    r, d, m = _rdm("multitask.bounds.thm42_requirements", r, d, m)
    return {"d_min": r ** 4 + math.log(m) ** 4, "m_min": float(r), "T_min": float(r * 4 ** r * d ** 2)}


def lemmaA5_hoeffding(r, T, delta, convention="corrected"):
    r"""Hoeffding-union radius of Lemma A.5 (task diversity): exact constants.

    .. math:: \max_{u \ne \pm u'}\Big|\frac1T\sum_{i=1}^T\chi\{\bar f_i(u) \ne \bar f_i(u')\} - \frac12\Big|
              \le t = \sqrt{\frac{\log(P(P-1)) + \log(2/\delta)}{2T}},\qquad P = 2^r,

    with probability ``>= 1 - delta`` over T labelings drawn uniformly (Assumption 2.1): Hoeffding's
    ``P[|mean - 1/2| >= t] <= 2 exp(-2 T t^2)`` per pair, union over the ``P(P-1)`` ordered pairs.

    Parameters
    ----------
    r : int
        Ground-truth coordinates, ``r >= 1``.
    T : int
        Number of tasks, ``T >= 1``.
    delta : float
        Failure probability in (0, 1).
    convention : {"corrected", "paper"}
        "paper" uses eq. (27)'s tail ``exp(-T t^2/2)`` without Hoeffding's factor 2:
        ``t = sqrt(2 (log(P(P-1)) + log(1/delta)) / T)``.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 8 eps, r to 60 and delta to 1e-300, both conventions (measured: 0.085 of the
    declared bound).
    Regime: i.i.d. tasks satisfying Assumption 2.1; any r, T. The paper states the result as ``c sqrt(r/T)``
    (eq. (26)) with c unspecified; the measured median max-deviation is 0.57-0.74 sqrt(r/T) (docs/multitask.md).

    References
    ----------
    .. [src] [Collins24, Lemma A.5, eq. (27)].

    Examples
    --------
    >>> round(lemmaA5_hoeffding(1, 50, 0.1), 6) == round(math.sqrt(math.log(40) / 100), 6)
    True
    """
    owner = "multitask.bounds.lemmaA5_hoeffding"
    r = as_int(owner, "r", r, low=1)
    T = as_int(owner, "T", T, low=1)
    delta = check(owner, "delta", delta, _PROB)
    convention = check(owner, "convention", convention, Options(("corrected", "paper")))
    pairs = math.log(2 ** r * (2 ** r - 1))
    if convention == "paper":
        return math.sqrt(2 * (pairs + math.log(1 / delta)) / T)
    return math.sqrt((pairs + math.log(2 / delta)) / (2 * T))


def thm46_lower(d, r, m_hat, B):
    r"""Theorem 4.6 (paper form): the worst r-sparse parity's best loss for any bounded embedding.

    .. math:: \max_{|u| = r}\ \inf_{\|a\|_2 \le B}\mathbb E_v\,\ell(a^\top\Psi(v), \chi_u(v))
              \ \ge\ 1 - \sqrt{\hat m B^2\big/\tbinom dr}

    for every ``Psi: {-1, 1}^d -> R^m_hat`` with ``||Psi(v)||_2 <= 1`` (the paper's premise
    ``m_hat B^2 <= eps^2 binom(d, r)`` with the smallest such ``eps``).

    Parameters
    ----------
    d : int
        Input dimension, ``d >= r``.
    r : int
        Parity degree, ``r >= 0``.
    m_hat : int
        Embedding dimension, ``m_hat >= 1``.
    B : float
        Norm bound of the head, ``B >= 0``.

    Returns
    -------
    float
        ``1 - eps``; a value ``<= 0`` is vacuous (the loss is >= 0 anyway).

    Notes
    -----
    Accuracy: absolute error <= 4 eps max(1, x), x = sqrt(m_hat) B/sqrt(binom(d, r)), for binomials past 1e308 and B
    to 1e300 (x from the exact integer binomial; before: 1.0 where binom overflowed, -inf where m_hat B^2 did)
    (measured: 0.32 of the declared bound).
    Regime: any embedding with ``||Psi(v)|| <= 1``, no bias (a bias cannot help: ``E chi_u = 0`` for
    ``|u| >= 1``). Constants explicit. :func:`thm46_bessel` is sharper by the factor ``sqrt(m_hat)``.

    References
    ----------
    .. [src] [Collins24, Definition 4.5, Theorem 4.6].

    Examples
    --------
    >>> thm46_lower(10, 2, 5, 3.0)
    0.0
    """
    owner = "multitask.bounds.thm46_lower"
    m_hat = as_int(owner, "m_hat", m_hat, low=1)
    B = check(owner, "B", B, _NONNEG)
    return 1.0 - _over_sqrt_binom(owner, d, r, math.sqrt(m_hat) * B)


def thm46_bessel(d, r, B):
    r"""Sharper Theorem 4.6 by Bessel's inequality: no factor ``m_hat`` (docs/multitask.md).

    .. math:: \sum_{|u|=r}\|\mathbb E[\chi_u\Psi]\|^2 \le \mathbb E\|\Psi\|^2 \le 1
              \ \Rightarrow\ \max_{|u| = r}\ \inf_{\|a\|_2\le B}\mathbb E\,\ell(a^\top\Psi(v), \chi_u(v))
              \ \ge\ 1 - B\big/\sqrt{\tbinom dr}

    (the parities are orthonormal, so some ``u`` has ``||E[chi_u Psi]|| <= binom(d, r)^-1/2``, and
    ``ell(z, y) >= 1 - yz``).

    Parameters
    ----------
    d : int
        Input dimension, ``d >= r``.
    r : int
        Parity degree, ``r >= 0``.
    B : float
        Norm bound of the head, ``B >= 0``.

    Returns
    -------
    float
        A value ``<= 0`` is vacuous.

    Notes
    -----
    Accuracy: absolute error <= 4 eps max(1, B/sqrt(binom(d, r))) for binomials past 1e308 and B to 1e300 (before:
    1.0 at binom(5000, 400), B = 1e300, where the bound is -2.1e-3) (measured: 0.22 of the declared bound).
    Regime: any embedding with ``E||Psi||^2 <= 1``. Constants explicit; tight: the embedding
    ``Psi(v) = (chi_u(v))_{|u| = r} / sqrt(binom(d, r))`` attains it for ``B <= sqrt(binom(d, r))``.

    References
    ----------
    .. [src] derived in docs/multitask.md (Bessel), strengthening [Collins24, Theorem 4.6].

    Examples
    --------
    >>> thm46_bessel(4, 2, 1.0) == 1 - 1 / math.sqrt(6)
    True
    """
    owner = "multitask.bounds.thm46_bessel"
    B = check(owner, "B", B, _NONNEG)
    return 1.0 - _over_sqrt_binom(owner, d, r, B)


def downstream_eval(B_over_mu, n, delta_prime, C=1.0):
    r"""Generalisation bound (88) of the downstream probe (shape; constant unspecified).

    .. math:: \mathcal L^{(\rm eval)}_{T+1} \le C\,\frac{B}{\mu}\,\frac{\sqrt{\log(1/\delta')}}{\sqrt n}

    Parameters
    ----------
    B_over_mu : float
        Norm of the margin-1 separator ``B/mu``, > 0 (B bounds ``sqrt(||a*||^2 + tau*^2)`` of the unit-norm
        separator of margin mu).
    n : int
        Number of downstream samples, ``n >= 1``.
    delta_prime : float
        Failure probability in (0, 1).
    C : float
        The absolute constant of the 1-Lipschitz-loss generalisation bound ("Livni 2017"; unspecified), > 0.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 8 eps (measured: 0.15 of the declared bound).
    Regime: the empirical risk minimiser over ``||(a, tau)|| <= B/mu`` (eq. (87)), i.i.d. samples; holds with
    probability ``>= 1 - delta'`` given a separator of margin mu; constants unspecified.

    References
    ----------
    .. [src] [Collins24, proof of Theorem B.5, eq. (88)].

    Examples
    --------
    >>> downstream_eval(10.0, 100, math.exp(-1))
    1.0
    """
    owner = "multitask.bounds.downstream_eval"
    B_over_mu = check(owner, "B_over_mu", B_over_mu, _POS)
    n = as_int(owner, "n", n, low=1)
    delta_prime = check(owner, "delta_prime", delta_prime, _PROB)
    C = check(owner, "C", C, _POS)
    return C * B_over_mu * math.sqrt(math.log(1 / delta_prime) / n)


def margin_exponent(r, delta, D=1):
    r"""The exponent ``E`` of the margin and of every downstream requirement (Lemmas B.1-B.4, Thm B.5, Cor B.6).

    .. math:: \mu = e^{-cE},\qquad E = r^5\log^6 r\,\log\!\big(D\log r/\delta\big)

    (``D`` downstream tasks at once: Cor B.6 replaces delta by delta/D).

    Parameters
    ----------
    r : int
        Ground-truth coordinates, ``r >= 2`` (``log r = 0`` at r = 1 makes the expression meaningless).
    delta : float
        Failure probability in (0, 0.05] (Lemma B.1).
    D : int
        Number of downstream tasks, ``D >= 1``.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 8 eps, r to 1e4, delta to 1e-300 (measured: 0.41 of the declared bound).
    Regime: asymptotic statement; the constant ``c`` is unspecified (Dirksen et al. 2022) and the values are
    numerically vacuous (``E ~ 1.3e3`` at r = 3): compare trends only.

    References
    ----------
    .. [src] [Collins24, Lemmas B.1, B.2, B.4, Theorem B.5, Corollary B.6].

    Examples
    --------
    >>> margin_exponent(2, 0.05) == 32 * math.log(2) ** 6 * math.log(math.log(2) / 0.05)
    True
    """
    owner = "multitask.bounds.margin_exponent"
    r = as_int(owner, "r", r, low=2)
    delta = check(owner, "delta", delta, _DELTA_B)
    D = as_int(owner, "D", D, low=1)
    return r ** 5 * math.log(r) ** 6 * math.log(D * math.log(r) / delta)


def thmB5_requirements(r, delta, D=1, c=1.0):
    r"""Scalings Theorem 4.3 / B.5 (and Cor B.6 with D tasks) require, as logarithms (constants unspecified).

    .. math:: \bar m \gtrsim r^5\log^8 r\,\log(D/\delta),\quad \log\hat m \gtrsim \bar m,\quad
              d \gtrsim \log^7\bar m\;e^{cE},\quad T \gtrsim d^3 e^{cE},\quad \hat\lambda_a = e^{-cE},

    with ``E`` = :func:`margin_exponent` ``(r, delta, D)``; ``d`` and ``T`` are evaluated at their minima.

    Parameters
    ----------
    r : int
        Ground-truth coordinates, ``r >= 2``.
    delta : float
        Failure probability in (0, 0.05].
    D : int
        Number of downstream tasks, ``D >= 1`` (Cor B.6: delta -> delta/D).
    c : float
        The absolute constant in the exponent (unspecified), > 0; default 1.

    Returns
    -------
    dict
        ``m_bar_min``, ``log_m_hat_min``, ``log_d_min``, ``log_T_min``, ``log_lambda_hat`` (natural logs: the
        values themselves overflow float64 already at r = 3).

    Notes
    -----
    Accuracy: relative error <= 8 eps per entry, r to 1e4, delta to 1e-300 (measured: 0.56 of the declared bound).
    Regime: shapes only (every Omega hides a constant; the m_bar and m_hat constants are set to 1). The text
    states ``m = Theta~(r^5)`` with m = 2 m_bar; B.5 writes the requirement on m.

    References
    ----------
    .. [src] [Collins24, Theorem 4.3, Lemmas B.1, B.2, B.4, Theorem B.5, Corollary B.6].
    """
    owner = "multitask.bounds.thmB5_requirements"
    c = check(owner, "c", c, _POS)
    E = margin_exponent(r, delta, D)
    m_bar = r ** 5 * math.log(r) ** 8 * math.log(D / delta)
    log_d = 7 * math.log(math.log(m_bar)) + c * E if m_bar > math.e else c * E
    return {"m_bar_min": m_bar, "log_m_hat_min": m_bar, "log_d_min": log_d, "log_T_min": 3 * log_d + c * E,
            "log_lambda_hat": -c * E}


def thmB5_log_rhs(r, n, delta, delta_prime, D=1, c=1.0):
    r"""Logarithm of the end-to-end bound of Theorem 4.3 / B.5 (Cor B.6 with D tasks), constants unspecified.

    .. math:: \log\mathcal L^{(\rm eval)}_{T+1} \le cE + \tfrac12\log\log(1/\delta') - \tfrac12\log n

    with ``E`` = :func:`margin_exponent` ``(r, delta, D)`` (the bound ``e^{cE} sqrt(log(1/delta')/n)`` of (88)).

    Parameters
    ----------
    r : int
        Ground-truth coordinates, ``r >= 2``.
    n : int
        Number of downstream samples, ``n >= 1``.
    delta : float
        Failure probability of the margin event, in (0, 0.05].
    delta_prime : float
        Failure probability of the generalisation bound, in (0, 1/e) (so ``log log(1/delta') `` is defined).
    D : int
        Number of downstream tasks, ``D >= 1``.
    c : float
        The absolute constant in the exponent (unspecified), > 0.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: absolute error <= 8 eps (|cE| + |log log(1/delta')|/2 + log(n)/2) (a difference of logs) (measured:
    0.39 of the declared bound).
    Regime: Thm B.5's requirements (:func:`thmB5_requirements`); numerically vacuous (the loss is <= 1 while
    the bound is ~e^1300 at r = 3): only the n^-1/2 rate is testable. Eq. (84) prints exp(-O(.)), a sign typo;
    (88) has exp(+O(.)).

    References
    ----------
    .. [src] [Collins24, Theorem 4.3, eq. (13); Theorem B.5, eqs. (84), (88); Corollary B.6, eq. (89)].

    Examples
    --------
    >>> a, b = thmB5_log_rhs(3, 100, 0.05, 0.01), thmB5_log_rhs(3, 400, 0.05, 0.01)
    >>> round(a - b, 12) == round(math.log(2), 12)
    True
    """
    owner = "multitask.bounds.thmB5_log_rhs"
    n = as_int(owner, "n", n, low=1)
    delta_prime = check(owner, "delta_prime", delta_prime, Interval(0, math.exp(-1), closed="neither"))
    c = check(owner, "c", c, _POS)
    return c * margin_exponent(r, delta, D) + 0.5 * math.log(math.log(1 / delta_prime)) - 0.5 * math.log(n)
