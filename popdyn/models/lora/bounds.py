"""Signal and noise bounds of the LoRA overlap dynamics and the step-size schedules of the theorems.

Public names
------------
signal (lower bounds on h)
    :func:`condition3`, :func:`claim1_condition`
noise and signal-to-noise
    :func:`signal_noise`
schedules (learning rate, horizon)
    :func:`theorem16_schedule` (generic SGD theorem), :func:`theorem_schedule` (Thms 11, 12, 13)

Constants the paper leaves unspecified (gamma, C_{p,sigma}, C_delta, C_sigma, the Condition-2 moment
constant mu_1) are explicit arguments with default 1 and are returned under ``"assumed_constants"``
(docs/lora.md).
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

from ..._validate import Integer, Interval, InvalidParameterError, Options, check
from .dynamics import limit_sign
from .normalisation import B0
from .problem import Problem
from .theory import h, h0

__all__ = ["condition3", "claim1_condition", "signal_noise", "theorem16_schedule", "theorem_schedule"]

_POS = Interval(0, np.inf, closed="neither")


def _problem(owner, problem):
    if not isinstance(problem, Problem):
        raise InvalidParameterError(f"The 'problem' parameter of {owner} must be a lora.Problem. Got {problem!r}.")
    return problem


def condition3(problem, m_grid=None):
    r"""Condition 3 (population gradient lower bound), checked on a grid, and its signal S_k.

    .. math:: \operatorname{sign}(h(0))\, h\big(\operatorname{sign}(h(0))\, m\big) \ge \frac{|h(0)|}{2} =: S_k
              \quad \forall m \in [0, 1]

    Parameters
    ----------
    problem : Problem
    m_grid : ndarray or None
        Points of [0, 1] to check; default 401 equispaced points.

    Returns
    -------
    holds : bool
        False also when h(0) = 0.
    S_k : float
        ``|h(0)|/2``, the largest S_k Condition 3 allows.

    Notes
    -----
    Regime: any problem; a grid check (not a proof). Empirically it holds for ReLU and erf in all of
    200 random draws (k in {20, 50}), for He3 in 79-99 % (docs/lora.md). Max{S_k, S_k^2} <= V_k is the
    caller's part.

    Accuracy: S_k within half the bound of :func:`h0`; ``(False, 0.0)`` exactly where :func:`limit_sign` is 0 (|h(0)|
    within h's accuracy of 0). Measured 0.08 of the bound.

    References
    ----------
    .. [src] [Dayi25, Condition 3 (App. C.1)].

    Examples
    --------
    >>> p = Problem.orthonormal(k=4, xi=1.0, activation="linear", seed=3)  # h constant: always holds
    >>> holds, S_k = condition3(p)
    >>> holds, bool(np.isclose(S_k, abs(h0(p)) / 2))
    (True, True)
    """
    problem = _problem("lora.condition3", problem)
    grid = np.linspace(0.0, 1.0, 401) if m_grid is None else np.asarray(m_grid, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0 or not np.all((grid >= 0) & (grid <= 1)):
        raise InvalidParameterError(f"The 'm_grid' parameter of lora.condition3 must be a non-empty 1-d array "
                                    f"in [0, 1]. Got {m_grid!r} instead.")
    s = limit_sign(problem)  # 0 where |h(0)| is within h's accuracy of 0
    if s == 0:
        return False, 0.0
    a = h0(problem)
    return bool(np.all(s * h(problem, s * grid) >= abs(a) / 2)), abs(a) / 2


def claim1_condition(problem):
    r"""Claim 1's deterministic sufficient condition for the sign of the leading parts of h.

    .. math:: \Big|\xi^2 \big(\textstyle\sum_i \lambda_i c_i\big)\big(\sum_i \lambda_i \hat c_i\big)\Big|
              \le 2\lVert\lambda\rVert^2

    Parameters
    ----------
    problem : Problem

    Returns
    -------
    holds : bool
    ratio : float
        Left side over right side (holds iff ratio <= 1).

    Notes
    -----
    Regime: orthonormal features (A4) and quantised c, c_hat (A3). When it holds,
    ``sign(m) [sum_{l odd, s=1} + sum_{l>0 even, s=0}] >= 0`` on [-1, 1], term by term (even l
    against odd l-1, ratio <= 2/l). Probability >= 1 - exp(-2k/(e xi^2)) over c, c_hat.

    Accuracy: ``|d ratio| <= 4 k eps xi^2 sum|lam_i c_i| sum|lam_i c_hat_i| / (2 |lam|^2)`` (the sums cancel); measured
    0.26 (exact rationals).

    References
    ----------
    .. [src] [Dayi25, Claim 1 (Section 3.2.1) and its proof (App. D.4), whose sufficient condition this is].

    Examples
    --------
    >>> p = Problem(np.eye(2), [1.0, 1.0], [2**-0.5, 2**-0.5], [2**-0.5, -2**-0.5], 1.0)
    >>> claim1_condition(p)  # sum lam c_hat = 0
    (True, 0.0)
    """
    p = _problem("lora.claim1_condition", problem)
    lhs = abs(p.xi**2 * float(p.lam @ p.c) * float(p.lam @ p.c_hat))
    ratio = lhs / (2 * float(p.lam @ p.lam))
    return bool(ratio <= 1), ratio


def signal_noise(problem, *, n=1 << 16, seed=0):
    r"""Measured noise-to-signal ratio at initialisation, the analogue of V_k / S_k^2.

    .. math:: \mathrm{NSR} = \frac{4 B_0(0)}{h(0)^2}

    Parameters
    ----------
    problem : Problem
    n : int
        Monte Carlo size of B0(0) (>= 2; general G only: for G = I, B0(0) is computed by quadrature
        and ``n``, ``seed`` are unused, the standard error is the quadrature's error estimate).
    seed : int
        Seed (>= 0; general G only).

    Returns
    -------
    ratio, se : float
        The ratio and its standard error (``inf, 0`` when h(0) = 0).

    Notes
    -----
    Regime: per-direction gradient variance ``E||L||^2/d -> 4 B0`` as d -> inf; the number of
    steps Thm 16 needs scales like ``d V_k/S_k^2``. Measured 2-200 for k <= 40 against worst-case
    V_k shapes 3.6e2-1.3e6 (docs/lora.md): the bounds are loose.

    Accuracy: that of :func:`h0` and :func:`B0` (its error estimate is returned); ``(inf, 0)`` exactly where
    :func:`limit_sign` is 0 (|h(0)| within h's accuracy of 0, where the ratio is not resolved).

    References
    ----------
    .. [src] derived in docs/lora.md (measured SNR); the inverse SNR V_k/S_k^2 is [Dayi25, App. C.1].

    Examples
    --------
    >>> p = Problem.orthonormal(k=4, xi=1.0, seed=0)
    >>> ratio, se = signal_noise(p, n=4096)
    >>> bool(ratio > 0 and se < ratio)
    True
    """
    problem = _problem("lora.signal_noise", problem)
    if limit_sign(problem) == 0:  # |h(0)| within h's accuracy of 0: the ratio is not resolved
        return np.inf, 0.0
    a = h0(problem)
    mean, se = B0(problem, 0.0, n=n, seed=seed)
    return float(4 * mean / a**2), float(4 * se / a**2)


@contextlib.contextmanager
def _in_range(owner, names, values):
    """Turn an overflow, underflow to 0 or division by 0 of the schedule's float64 arithmetic into a ValueError."""
    try:
        yield
    except (ZeroDivisionError, OverflowError, ValueError) as err:
        if isinstance(err, InvalidParameterError):
            raise
        raise InvalidParameterError(f"The parameters ({names}) of {owner} put the schedule outside float64 (a step, "
                                    f"horizon or log overflows or underflows to 0). Got {values!r} instead.") from None


def theorem16_schedule(S_k, V_k, d, eps, *, mu1=1.0):
    r"""Step size, horizon and weak-recovery time of Theorem 16 (generic online SGD theorem).

    .. math:: \eta = \frac{\delta}{dV_k},\ \delta = \min\Big\{\frac{S_k\epsilon^3}{4\mu_1(\log dV_k)^2}, 1\Big\},\
              \alpha = \frac{4\log(dV_k)}{\epsilon\delta S_k},\ T = \lceil\alpha dV_k\rceil,\
              T_{\rm weak} = \Big\lceil\frac{4dV_k}{\delta S_k}\Big\rceil

    Parameters
    ----------
    S_k : float
        Signal (Condition 3), > 0.
    V_k : float
        Noise (Condition 2), > 0; the theorem needs ``V_k >= max(1, S_k, S_k^2)``.
    d : int
        Input dimension, >= 4 (the proof uses d > 3).
    eps : float
        Target ``|m_T| >= 1 - eps``, in (0, 1).
    mu1 : float
        Condition-2 moment constant mu_1 (not a Hermite coefficient), > 0; unspecified in the paper.

    Returns
    -------
    dict
        ``eta, T, T_weak, delta, alpha`` plus ``log_dV``, ``regime`` (the theorem's side conditions,
        each with ``holds``), ``inconsistencies`` (Prop. 32's single-log delta, the proof's
        ``T_weak = ceil(2dV_k/(delta S_k))``) and ``assumed_constants``.

    Notes
    -----
    Regime: Conditions 1-3, ``|m0| >= beta/sqrt d`` and ``m0 h(0) > 0``; then with probability
    1 - o(1) ``sup_{t <= T_weak} |m_t| >= 1/2`` and ``|m_T| >= 1 - eps`` (Theorem 16 prints "1 eps").
    Net rate ``T = O~(d V_k/(S_k^2 eps^4))``.

    Accuracy: eta, delta, alpha, log_dV relative ``16 eps (1 + (log d + |log V_k|)/log(d V_k))`` (log d + log V_k
    cancels for V_k < 1); T and T_weak the ceilings. Where the schedule leaves float64 (a step, horizon or log
    overflows or underflows to 0) a ValueError names the parameters. Measured 0.08 (mpmath).

    References
    ----------
    .. [src] [Dayi25, Theorem 16 (App. C.1), Proposition 32 (App. E.3.1), Lemmas 33-34 and the proof of
       Theorem 16 (App. E.3.3)].

    Examples
    --------
    >>> s = theorem16_schedule(S_k=0.5, V_k=10.0, d=1000, eps=0.5)
    >>> bool(np.isclose(s["delta"], 0.5 * 0.5**3 / (4 * np.log(1e4) ** 2)))
    True
    """
    owner = "lora.theorem16_schedule"
    S_k, V_k, eps, mu1 = (check(owner, n, v, c) for n, v, c in (
        ("S_k", S_k, _POS), ("V_k", V_k, _POS), ("eps", eps, Interval(0, 1, closed="neither")), ("mu1", mu1, _POS)))
    d = check(owner, "d", d, Integer(4))
    L = math.log(d) + math.log(V_k)  # not log(d V_k), which overflows
    if not L > 0:
        raise InvalidParameterError(f"The 'V_k' parameter of {owner} must make d*V_k > 1 (log(d V_k) > 0). "
                                    f"Got d*V_k = {d * V_k!r} instead.")
    with _in_range(owner, "S_k, V_k, d, eps, mu1", (S_k, V_k, d, eps, mu1)):
        delta = min(S_k * eps**3 / (4 * mu1 * L**2), 1.0)
        alpha = 4 * L / (eps * delta * S_k)
        T, T_weak = math.ceil(alpha * d * V_k), math.ceil(4 * d * V_k / (delta * S_k))
        if not 0 < delta / (d * V_k) < math.inf:
            raise OverflowError
    regime = [dict(condition=c, value=v, bound=b, holds=bool(ok), source=src) for c, v, b, ok, src in (
        ("Condition 2: V_k >= 1", V_k, 1.0, V_k >= 1, "[Dayi25, Condition 2]"),
        ("Condition 3: max(S_k, S_k^2) <= V_k", max(S_k, S_k * S_k), V_k, max(S_k, S_k * S_k) <= V_k,
         "[Dayi25, Condition 3]"),
        ("T_weak <= T", T_weak, T, T_weak <= T, "[Dayi25, Theorem 16, App. E.3.3]"))]
    inconsistencies = {
        "prop32_delta": eps**3 * S_k / (4 * max(1.0, mu1) * L),  # Prop. 32: single log, C_delta > max(1, mu1)
        "proof_T_weak": math.ceil(2 * d * V_k / (delta * S_k)),  # Thm 16's proof: 2 d V_k/(delta S_k), not 4
        "lemma33_slope": "stated t S_k eta/2 (Lemma 33), proved t S_k eta/4 (its proof)"}
    return dict(eta=delta / (d * V_k), T=T, T_weak=T_weak, delta=delta, alpha=alpha, log_dV=L, regime=regime,
                inconsistencies=inconsistencies, assumed_constants=dict(mu1=mu1))


def _log_lam4dk2(lmax, d, k):
    """log(lam_max^4 d k^2) as a sum of logs (the product overflows or underflows for extreme lam_max, d)."""
    return 4 * math.log(lmax) + math.log(d) + 2 * math.log(k)


def _thm11(d, k, eps, lmin, lmax, g, C, Cd, Cs, xb, nz):
    """[Dayi25, Theorem 11] (A4, xi = 1); S_k, V_k from its proof, App. C.2 (mu1 = 0: Lemma 6's k^-1/2)."""
    L, f = _log_lam4dk2(lmax, d, k), (1.0 if nz else k**-0.5)
    delta = Cd * g * lmin**2 * eps**3 / L**2 * f
    alpha = L / (lmin**2 * g * eps * delta) / f
    return dict(S_k=g * lmin**2 * Cs / (1 + 1 / k) * f, V_k=C * lmax**4 * k**2, delta=delta, alpha=alpha,
                eta=delta / (lmax**4 * d * k**2), T=math.ceil(alpha * lmax**4 * d * k**2),
                stated_rate=lmax**4 / (lmin**4 * g**2) * d * k**3 / eps**4 * (1 if nz else k),
                k_exponent=dict(stated=3 if nz else 4, thm16=2 if nz else 3))


def _thm12(d, k, eps, lmin, lmax, g, C, Cd, Cs, xb, nz):
    """[Dayi25, Thm 12] (A4, xi = xi_bar sqrt k); S_k, V_k from its proof (App. C.2), Lemma 6's xi^2 = xi_bar^2 k."""
    L, f = _log_lam4dk2(lmax, d, k), (math.sqrt(k) if nz else 1.0)
    delta = min(Cd * xb**2 * math.sqrt(k) * g * lmin**2 * eps**3 / L**2 * f, 1.0)
    alpha = L / (xb**2 * lmin**2 * math.sqrt(k) * g * eps * delta) / f
    return dict(S_k=g * xb**2 * math.sqrt(k) * f * lmin**2 * Cs / 2, V_k=C * lmax**4 * xb**2 * k**4,
                delta=delta, alpha=alpha, eta=delta / (xb**2 * lmax**4 * d * k**4),
                T=math.ceil(alpha * lmax**4 * xb**2 * d * k**4),
                stated_rate=lmax**4 / (lmin**4 * g**2 * xb**2) * d * k**4 / eps**4 / (k if nz else 1),
                k_exponent=dict(stated=3 if nz else 4, thm16=2 if nz else 3),
                claim1_failure_bound=math.exp(-2 / (math.e * xb**2)))


def _thm13(d, k, eps, lmin, lmax, g, C, Cd, Cs, xb, nz):
    """[Dayi25, Theorem 13] (A5, xi = 1); S_k, V_k from its proof (App. C.2); eta with Theorem 13's typo corrected."""
    L = _log_lam4dk2(lmax, d, k)
    delta = Cd * g * lmin**2 * eps**3 / (L**2 * math.sqrt(k))
    alpha = L * math.sqrt(k) / (lmin**2 * g * eps * delta)
    return dict(S_k=g * lmin**2 / math.sqrt(k), V_k=C * lmax**4 * k**2, delta=delta, alpha=alpha,
                eta=delta / (lmax**4 * d * k**2), eta_as_printed=lmax**4 * delta / (d * k**2),
                T=math.ceil(alpha * lmax**4 * d * k**2),
                stated_rate=lmax**4 / (lmin**4 * g**2) * d * k**3 / eps**4, k_exponent=dict(stated=3, thm16=3))


_THEOREMS = {"11": _thm11, "12": _thm12, "13": _thm13}
_NOTES = {
    "11": ["stated rate d k^3 (mu1 != 0) / d k^4 is one power of k above the explicit eta, T and Thm 16 "
           "arithmetic d V_k/S_k^2 ~ d k^2 / d k^3 (docs/lora.md)",
           "mu1 = 0: S_k scaled by k^-1/2 (Lemma 6); the proof only says 'similarly'"],
    "12": ["Theorem 12's exp(-2/(e xi_bar)) and App. C.2's exp(-2k/(e xi_bar^2)) corrected to exp(-2/(e xi_bar^2)) "
           "(Claim 1)",
           "App. C.2's S_k = gamma k lam_min^2 mu1^2/2 lacks the xi_bar^2 of Lemma 6 (|h(0)| >~ gamma xi^2); with it "
           "Thm 16 reproduces the explicit eta, T (T ~ d k^2/xi_bar^2)",
           "stated rate d k^4/xi_bar^2 x {1/k; 1} is one power of k above the explicit eta, T",
           "delta and alpha take log(lam_max^4 d k^2), Thm 16 takes log(d V_k) = log(C lam_max^4 xi_bar^2 d k^4)"],
    "13": ["Theorem 13's eta = lam_max^4 delta/(d k^2) corrected to delta/(lam_max^4 d k^2) (eta_as_printed keeps it)",
           "stated rate d k^3 agrees with Thm 16 arithmetic (S_k ~ k^-1/2, V_k ~ k^2)"],
}


def theorem_schedule(which, d, k, eps, lam_min, lam_max, *, gamma=1.0, C=1.0, C_delta=1.0, C_sigma=1.0,
                     xi_bar=None, mu1_nonzero=True, mu1=1.0):
    r"""Explicit schedules of Theorems 11, 12, 13 (typos corrected) next to Theorem 16's arithmetic.

    .. math:: \eta = \frac{\delta}{\lambda_{\max}^4 d k^2},\quad T = \lceil\alpha\lambda_{\max}^4 d k^2\rceil
              \ \ \text{(Thms 11, 13; Thm 12: } \bar\xi^2 k^4 \text{ for } k^2),\qquad
              T_{16} = \tilde O\Big(\frac{d V_k}{S_k^2 \epsilon^4}\Big)

    Parameters
    ----------
    which : {"11", "12", "13"}
        Theorem 11 (orthonormal, xi = 1), 12 (orthonormal, xi = xi_bar sqrt k), 13 (separated, xi = 1).
    d : int
        Input dimension, >= 4.
    k : int
        Width, >= 2.
    eps : float
        Target accuracy in (0, 1).
    lam_min, lam_max : float
        ``min |lam_i| <= max |lam_i|``, both > 0.
    gamma : float
        Anti-concentration constant gamma (unspecified in the paper), > 0.
    C : float
        Variance constant C_{p,sigma} of Lemma 17 (unspecified), > 0.
    C_delta : float
        "Sufficiently small" constant C_delta of the step size (unspecified), > 0.
    C_sigma : float
        Activation constant of S_k (mu_1(sigma)^2 of the proof of Theorem 11, App. C.2, when mu1 != 0, Lemma 6's C_sigma
        otherwise), > 0.
    xi_bar : float or None
        ``xi / sqrt(k)``, > 0; required by (and only allowed for) Theorem 12.
    mu1_nonzero : bool
        Whether the first Hermite coefficient mu_1(sigma) is nonzero (the theorems' case split).
    mu1 : float
        Condition-2 moment constant passed to :func:`theorem16_schedule`, > 0.

    Returns
    -------
    dict
        ``which, S_k, V_k, eta, T, delta, alpha, stated_rate`` (the O~ expression without logs),
        ``k_exponent`` (stated vs Thm 16 arithmetic), ``thm16`` (:func:`theorem16_schedule` of S_k,
        V_k), ``assumed_constants``, ``notes`` (corrections and inconsistencies), ``source``.

    Notes
    -----
    Regime: the theorems' assumptions (A2, A3, A4 or A5) with probability over c, c_hat as stated;
    every constant the paper leaves open is an argument, so the numbers are shapes, not guarantees.

    Accuracy: eta relative ``32 eps (1 + (4 |log lam_max| + log d + 2 log k)/|L|)``, L = log(lam_max^4 d k^2) formed as
    a sum of logs; a ValueError naming the parameters where the schedule leaves float64. Measured 0.04 (mpmath).

    References
    ----------
    .. [src] [Dayi25, Theorems 11-13 (App. A.2), their proofs (App. C.2)]; corrections in docs/errata.md.

    Examples
    --------
    >>> s = theorem_schedule("13", d=1000, k=16, eps=0.5, lam_min=1.0, lam_max=1.0)
    >>> bool(np.isclose(s["eta"], s["delta"] / (1000 * 16**2))), s["k_exponent"]
    (True, {'stated': 3, 'thm16': 3})
    """
    owner = "lora.theorem_schedule"
    which = check(owner, "which", str(which), Options(tuple(_THEOREMS)))
    d, k = check(owner, "d", d, Integer(4)), check(owner, "k", k, Integer(2))
    eps = check(owner, "eps", eps, Interval(0, 1, closed="neither"))
    lam_min, lam_max, gamma, C, C_delta, C_sigma, mu1 = (check(owner, n, v, _POS) for n, v in (
        ("lam_min", lam_min), ("lam_max", lam_max), ("gamma", gamma), ("C", C), ("C_delta", C_delta),
        ("C_sigma", C_sigma), ("mu1", mu1)))
    if not lam_min <= lam_max:
        raise InvalidParameterError(f"The 'lam_min' parameter of {owner} must be <= lam_max = {lam_max!r}. "
                                    f"Got {lam_min!r} instead.")
    if (which == "12") != (xi_bar is not None):
        raise InvalidParameterError(f"The 'xi_bar' parameter of {owner} must be a float in (0, inf) for "
                                    f"which='12' and None otherwise. Got {xi_bar!r} for which={which!r}.")
    xi_bar = None if xi_bar is None else check(owner, "xi_bar", xi_bar, _POS)
    with _in_range(owner, "d, k, eps, lam_min, lam_max, gamma, C, C_delta, C_sigma, xi_bar",
                   (d, k, eps, lam_min, lam_max, gamma, C, C_delta, C_sigma, xi_bar)):
        out = _THEOREMS[which](d, k, eps, lam_min, lam_max, gamma, C, C_delta, C_sigma, xi_bar, bool(mu1_nonzero))
        if not all(0 < out[key] < math.inf for key in ("S_k", "V_k", "delta", "alpha", "eta", "stated_rate")):
            raise OverflowError
    out.update(which=which, thm16=theorem16_schedule(out["S_k"], out["V_k"], d, eps, mu1=mu1),
               assumed_constants=dict(gamma=gamma, C=C, C_delta=C_delta, C_sigma=C_sigma, mu1=mu1),
               notes=_NOTES[which], source=f"[Dayi25, Theorem {which}]")
    return out
