r"""Theorem 1 / Corollary 7.1 schedule calculator and Theorem 2's lower bound and sample range ([AllenZhu19]).

Public names
------------
:func:`theorem1_schedule`
    Table 1 / Theorem 1 (Section 6, App. D.4): alpha_max, tau_w, tau_v, sigma_w, sigma_v, T, eta_w, eta_v, the
    error floor delta_0 (App. D.4) and the regime checks.
:func:`regret_bound`
    The averaged-risk bound from (D.4) (App. D.4) with tau_w^2/eta_w = tau_v^2/eta_v.
:func:`coupling_bounds`
    Lemma D.1 (a)-(g) (App. D.1): sign-change counts and vanishing terms near the initialization.
:func:`corollary71`
    The complexities of the normalized Theorem 2 target (App. E.4) and Cor. 7.1's N ~ d/alpha^8, risk ~ alpha^4.
:func:`thm2_lower_bound`, :func:`thm2_N_range`, :func:`thm2_alpha_min`
    alpha^2/4 (Theorem 2), N <= (d/(20k^2 log^2 d))^{k/2} (App. E.3), alpha^2 > 6400 k N/(d/5)^k (App. E.1, corrected).

Every O(.)/Theta~(.) constant the paper leaves unspecified is an explicit multiplier (default 1, keys
:data:`THEOREM1_CONSTS`, :data:`COROLLARY71_CONSTS`) and ``polylog`` stands for the hidden polylog(m) factors; the
results are orders of magnitude only (with C* = 1e4 the complexities are astronomically large). Logs are natural.
"""
from __future__ import annotations

import decimal
import math

from ..._validate import Interval, Options, as_int, check, hidden_constants, regime_check

__all__ = ["theorem1_schedule", "regret_bound", "coupling_bounds", "corollary71", "thm2_lower_bound", "thm2_N_range",
           "thm2_alpha_min", "THEOREM1_CONSTS", "COUPLING_CONSTS", "COROLLARY71_CONSTS"]

#: Multipliers of the hidden constants of :func:`theorem1_schedule` (each default 1).
THEOREM1_CONSTS = ("C_alpha", "C_tau_w", "C_tau_v", "C_T", "C_eta_w", "C_eta_v", "C_delta0")
#: Multipliers of the hidden constants of :func:`coupling_bounds` (each default 1).
COUPLING_CONSTS = ("C_a", "C_b", "C_c", "C_d", "C_e", "C_f", "C_g")
#: Multipliers of the hidden constants of :func:`corollary71` (each default 1).
COROLLARY71_CONSTS = ("C_N", "C_risk")

_POS = Interval(0.0, math.inf, "neither")
_NONNEG = Interval(0.0, math.inf, "left")
_ONE_UP = Interval(1.0, math.inf, "left")

#: 40 significant digits and decimal exponents to +-10^17: every product, quotient and power below is exact to 1e-38
#: relative for any finite positive input (integers k <= _K_MAX in an exponent), and float() rounds it once (inf or 0
#: only past float64's range)
_CTX = decimal.Context(prec=40, Emin=decimal.MIN_EMIN, Emax=decimal.MAX_EMAX)
_K_MAX = 10 ** 15
_D = decimal.Decimal    # exact for Python floats and ints
_PI = _D("3.141592653589793238462643383279502884197169399375")


def _log_factorial(k):
    """ln k! in 40-digit decimals (exact factorial to k = 1000, Stirling's series beyond: truncation < 1e-22)."""
    if k <= 1000:
        return _D(math.factorial(k)).ln()
    K = _D(k)
    return K * K.ln() - K + (2 * _PI * K).ln() / 2 + 1 / (12 * K) - 1 / (360 * K ** 3) + 1 / (1260 * K ** 5)


def theorem1_schedule(k, p_F, C_s_F, p_G, C_s_G, alpha, delta, m, *, B_F=1.0, L_G=None, OPT=0.0, polylog=1.0,
                      consts=None, eta_v_convention="proof"):
    r"""Parameter schedule, error floor and regime of Theorem 1 (Table 1), orders of magnitude only.

    .. math::
        \alpha_{\max}&=\frac{C_\alpha}{\mathrm{pl}\,k p_G\mathfrak C_s(G)},\quad
        \tilde\alpha=\frac{\alpha}{k(p_F\mathfrak C_s(F)+p_G\mathfrak C_s(G))},\quad
        \tau_w=C_{\tau_w}\mathrm{pl}\,kp_F\mathfrak C_s(F),\quad
        \tau_v=C_{\tau_v}\mathrm{pl}\,\alpha kp_G\mathfrak C_s(G),\\
        \sigma_w&=m^{-1/8},\quad\sigma_v=1/\tau_v^2,\quad
        T=C_T\,\mathrm{pl}\frac{(kp_F\mathfrak C_s(F))^2}{\min\{1,\delta^2\}},\quad \eta_w=C_{\eta_w}\min\{1,\delta\},\\
        \eta_v&=\eta_w\frac{\tau_v^2}{\tau_w^2}\ (\text{proof, App. D.4})\quad\text{or}\quad
        C_{\eta_v}\eta_w\Big(\frac{p_G\mathfrak C_s(G)}{p_F\mathfrak C_s(F)}\Big)^2\ (\text{statement, Theorem 1}),\\
        \delta_0&=C_{\delta_0}\big(\tilde\alpha^2+\tau_v^2(1+\mathfrak B_F)
        +\alpha\tau_v\mathfrak L_G(\mathfrak B_F+1)\big)^2
        \quad(\text{App. D.4}),

    with pl = ``polylog``.

    Parameters
    ----------
    k : int
        Output dimension, k >= 1.
    p_F, C_s_F, p_G, C_s_G : float
        Number of terms and complexity C_s of F and G (Concept 1), all > 0 (p_F, p_G >= 1).
    alpha : float
        Weight of G(F), > 0.
    delta : float
        Target average risk, > 0.
    m : int
        Width, m >= 1.
    B_F : float
        Bound on ||F(x)|| (1 under Concept 1), >= 0.
    L_G : float or None
        Lipschitz constant of G, > 0; None uses the paper's sqrt(k p_G C_s(G)) (Section 5).
    OPT : float
        Best achievable risk in the class, >= 0.
    polylog : float
        Stand-in for the polylog(m) factors hidden in Theta~, >= 1.
    consts : dict or None
        Multipliers of the hidden constants, keys :data:`THEOREM1_CONSTS` (each default 1).
    eta_v_convention : {"proof", "statement"}
        "proof" keeps tau_w^2/eta_w = tau_v^2/eta_v (App. D.4; includes alpha^2); "statement" is Theorem 1 as
        printed (docs/errata.md).

    Returns
    -------
    dict
        ``alpha_max, alpha_tilde, tau_w, tau_v, sigma_w, sigma_v, T, eta_w, eta_v, L_G, delta0, delta_min``
        (= OPT + delta0), ``admissible`` (alpha <= alpha_max and delta >= delta_min), ``regime`` (list of dicts:
        condition, value, bound, source, holds; a RegimeWarning names those that fail) and
        ``order_of_magnitude`` (True).

    Notes
    -----
    Regime: Theorem 1 needs m >= poly(C_alpha(F), C_alpha(G), p_F, 1/alpha) with the polynomial unspecified
    (Theorem 1, Lemma D.2), which is not checked; the conditions checked are alpha <= alpha_max (Theorem 1),
    delta >= OPT + delta_0 (Theorem 1, App. D.4), 1 <= tau_w < sqrt(m) sigma_w (Section 6.1), sigma_v (k/m)^{3/8} <=
    tau_v <= sigma_v (Section 6.1, polylog dropped) and eta_w + eta_v tau_w^2 <= 0.1 (App. D.4). With C* = 1e4 the
    complexities are astronomically large and alpha_max tiny.
    Accuracy: every float entry rounded once from 40-digit decimal arithmetic: relative error <= eps wherever it is
    a normal float, inf or 0 only past float64's range, for all valid inputs (integers of any size); the regime's
    "holds" and ``admissible`` are the exact comparisons (before: NaN T, OverflowError, ZeroDivisionError and
    spurious inf/0 from intermediate over/underflow). Measured: 0.48 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Theorem 1, Table 1 (Section 6.1), proof of Theorem 1 (App. D.4)]

    Examples
    --------
    >>> s = theorem1_schedule(2, 1, 1.0, 1, 1.0, 0.1, 0.05, 10**8)
    >>> s["tau_w"], round(s["tau_v"], 12), round(s["T"]), s["admissible"], all(r["holds"] for r in s["regime"])
    (2.0, 0.2, 1600, True, True)
    """
    owner = "resnet.theorem1_schedule"
    k = as_int(owner, "k", k, 1)
    p_F, p_G = (check(owner, n, v, _ONE_UP) for n, v in (("p_F", p_F), ("p_G", p_G)))
    C_s_F, C_s_G, alpha, delta = (check(owner, n, v, _POS) for n, v in
                                  (("C_s_F", C_s_F), ("C_s_G", C_s_G), ("alpha", alpha), ("delta", delta)))
    m = as_int(owner, "m", m, 1)
    B_F, OPT = check(owner, "B_F", B_F, _NONNEG), check(owner, "OPT", OPT, _NONNEG)
    polylog = check(owner, "polylog", polylog, _ONE_UP)
    conv = check(owner, "eta_v_convention", eta_v_convention, Options(("proof", "statement")))
    C = hidden_constants(owner, consts, THEOREM1_CONSTS)
    L_G = None if L_G is None else check(owner, "L_G", L_G, _POS)
    with decimal.localcontext(_CTX):
        C = {n: _D(v) for n, v in C.items()}
        k_, p_F, C_s_F, p_G, C_s_G, alpha, delta, m_, B_F, OPT, pl = (
            _D(v) for v in (k, p_F, C_s_F, p_G, C_s_G, alpha, delta, m, B_F, OPT, polylog))
        cF, cG = k_ * p_F * C_s_F, k_ * p_G * C_s_G
        L_G = cG.sqrt() if L_G is None else _D(L_G)
        alpha_max = C["C_alpha"] / (pl * cG)
        alpha_tilde = alpha / (k_ * (p_F * C_s_F + p_G * C_s_G))
        tau_w = C["C_tau_w"] * pl * cF
        tau_v = C["C_tau_v"] * pl * alpha * cG
        sigma_w, sigma_v = m_ ** _D("-0.125"), 1 / tau_v ** 2
        T = C["C_T"] * pl * cF ** 2 / min(_D(1), delta ** 2)
        eta_w = C["C_eta_w"] * min(_D(1), delta)
        if conv == "proof":
            eta_v = eta_w * (tau_v / tau_w) ** 2
        else:
            eta_v = C["C_eta_v"] * eta_w * (p_G * C_s_G / (p_F * C_s_F)) ** 2
        delta0 = C["C_delta0"] * (alpha_tilde ** 2 + tau_v ** 2 * (1 + B_F) + alpha * tau_v * L_G * (B_F + 1)) ** 2
        delta_min = OPT + delta0
        tau_v_min = sigma_v * (k_ / m_) ** _D("0.375")
        step = eta_w + eta_v * tau_w ** 2
        regime = regime_check(owner, [
            ("alpha <= alpha_max", alpha, alpha_max, "[AllenZhu19, Theorem 1]", alpha <= alpha_max),
            ("delta >= OPT + delta0", delta, delta_min, "[AllenZhu19, Theorem 1, App. D.4]", delta >= delta_min),
            ("tau_w >= 1", tau_w, 1.0, "[AllenZhu19, Section 6.1]", tau_w >= 1),
            ("tau_w < sqrt(m) sigma_w", tau_w, m_.sqrt() * sigma_w, "[AllenZhu19, Section 6.1]",
             tau_w < m_.sqrt() * sigma_w),
            ("tau_v >= sigma_v (k/m)^(3/8)", tau_v, tau_v_min, "[AllenZhu19, Section 6.1]", tau_v >= tau_v_min),
            ("tau_v <= sigma_v", tau_v, sigma_v, "[AllenZhu19, Section 6.1]", tau_v <= sigma_v),
            ("eta_w + eta_v tau_w^2 <= 0.1", step, 0.1, "[AllenZhu19, App. D.4]", step <= _D("0.1")),
        ])
        admissible = bool(alpha <= alpha_max and delta >= delta_min)
    alpha_max, alpha_tilde, tau_w, tau_v, sigma_w, sigma_v, T, eta_w, eta_v, L_G, delta0, delta_min = (
        float(v) for v in (alpha_max, alpha_tilde, tau_w, tau_v, sigma_w, sigma_v, T, eta_w, eta_v, L_G, delta0,
                           delta_min))
    return dict(alpha_max=alpha_max, alpha_tilde=alpha_tilde, tau_w=tau_w, tau_v=tau_v, sigma_w=sigma_w,
                sigma_v=sigma_v, T=T, eta_w=eta_w, eta_v=eta_v, L_G=L_G, delta0=delta0, delta_min=delta_min,
                admissible=admissible, regime=regime, order_of_magnitude=True)


def regret_bound(T, eta_w, tau_w, OPT=0.0, delta0=0.0, C=1.0):
    r"""Average population risk after T online SGD steps from the regret inequality (D.4).

    .. math::
        \frac1T\sum_{t<T}\mathbb E\|\mathcal H-\mathrm{out}_t\|^2
        \le\frac{0.04\,\tau_w^2}{\eta_wT}+C(\mathrm{OPT}+\delta_0),

    from (1/4T) sum <= ||W*||^2/(2 eta_w T) + ||V*||^2/(2 eta_v T) + O(OPT + delta_0) with ||W*|| <= tau_w/10,
    ||V*|| <= tau_v/10 and tau_w^2/eta_w = tau_v^2/eta_v.

    Parameters
    ----------
    T : float
        Number of SGD steps (= samples), > 0.
    eta_w, tau_w : float
        Step size and radius of W, > 0.
    OPT, delta0 : float
        Best risk in the class and the error floor of :func:`theorem1_schedule`, >= 0.
    C : float
        The unspecified O(.) constant on OPT + delta0, > 0.

    Returns
    -------
    float

    Notes
    -----
    Regime: step sizes with O(eta_w + eta_v tau_w^2) <= 0.1 (App. D.4) and the "proof" convention for eta_v;
    the 0.04 is derived from (D.4) (docs/resnet.md), the O(.) on OPT + delta0 is C.
    Accuracy: rounded once from 40-digit decimals: relative error <= eps where normal, inf or 0 only past float64's
    range (before: OverflowError at tau_w > 1e154, ZeroDivisionError where eta_w T underflowed). Measured: 0.44 of
    the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, eq. (D.4), App. D.4]; derived in docs/resnet.md

    Examples
    --------
    >>> round(regret_bound(100.0, 0.5, 1.0, OPT=0.01), 12)
    0.0108
    """
    owner = "resnet.regret_bound"
    T, eta_w, tau_w, C = (check(owner, n, v, _POS) for n, v in (("T", T), ("eta_w", eta_w), ("tau_w", tau_w), ("C", C)))
    OPT, delta0 = check(owner, "OPT", OPT, _NONNEG), check(owner, "delta0", delta0, _NONNEG)
    with decimal.localcontext(_CTX):
        T, eta_w, tau_w, C, OPT, delta0 = (_D(v) for v in (T, eta_w, tau_w, C, OPT, delta0))
        return float(_D("0.04") * tau_w ** 2 / (eta_w * T) + C * (OPT + delta0))


def coupling_bounds(m, k, tau_w, tau_v, sigma_v, *, sigma_w=None, out1_norm=None, polylog=1.0, consts=None):
    r"""The coupling bounds of Lemma D.1 (a)-(g), orders of magnitude only.

    .. math::
        (a)&\ C_a(\tau_w/\sigma_w)^{2/3}m^{2/3},\quad
        (b)\ C_b\,\mathrm{pl}\Big(\frac{\tau_w(\tau_w/\sigma_w)^{1/3}}{m^{1/6}}+\sigma_w\Big),\quad
        (c)\ C_c\tau_w,\quad (d)\ C_d(\tau_v/\sigma_v)^{2/3}m,\\
        (e)&\ C_e\,\mathrm{pl}\,\tau_v(\tau_v/\sigma_v)^{1/3}(\|\mathrm{out}_1\|+1),\quad
        (f)\ C_f\,\mathrm{pl}\,\tau_v(\tau_v/\sigma_v)^{1/3},\quad
        (g)\ C_g\,\mathrm{pl}\,\tau_v(\|\mathrm{out}_1\|+1),

    (a), (d): numbers of sign changes ||D_{W0} - D_W||_0, ||D_{V0,W} - D_{V,W}||_0; (b), (e), (f), (g): norms;
    pl = ``polylog``.

    Parameters
    ----------
    m : int
        Width, m >= 1.
    k : int
        Output dimension, k >= 1.
    tau_w, tau_v : float
        Spectral-norm radii of W and V, > 0.
    sigma_v : float
        Scale of V0, > 0 (Table 1: 1/tau_v^2).
    sigma_w : float or None
        Scale of W0, > 0; None uses m^{-1/8} (the lemma's assumption).
    out1_norm : float or None
        ||out_1(x)|| in (e), (g), >= 0; None uses the bound (c).
    polylog : float
        Stand-in for the polylog(m) of O~, >= 1.
    consts : dict or None
        Multipliers, keys :data:`COUPLING_CONSTS` (each default 1).

    Returns
    -------
    dict
        ``a`` ... ``g``, ``regime`` (list of dicts; a RegimeWarning names the failing ones) and
        ``order_of_magnitude`` (True).

    Notes
    -----
    Regime: sigma_w = m^{-1/8}, 1 <= tau_w < sqrt(m) sigma_w, sigma_v (k/m)^{3/8} <= tau_v <= sigma_v (Lemma D.1), for
    one fixed x w.h.p. For (a) and (d) the sharp constant is (6/pi)^{1/3} = 1.2407 as the perturbation shrinks
    (worst case of Prop. C.4, derived in docs/resnet.md).
    Accuracy: (a)-(g) rounded once from 40-digit decimals: relative error <= eps where normal, inf or 0 only past
    float64's range, any valid input (before: inf from tau_w/sigma_w overflowing where the bound is finite,
    OverflowError for m past 1e308). Measured: 0.5 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Lemma D.1, Prop. C.4]

    Examples
    --------
    >>> b = coupling_bounds(10**8, 2, 2.0, 0.2, 25.0)
    >>> round(b["a"]), round(b["d"])
    (1587401, 4000000)
    """
    owner = "resnet.coupling_bounds"
    m, k = as_int(owner, "m", m, 1), as_int(owner, "k", k, 1)
    tau_w, tau_v, sigma_v = (check(owner, n, v, _POS) for n, v in
                             (("tau_w", tau_w), ("tau_v", tau_v), ("sigma_v", sigma_v)))
    sigma_w = None if sigma_w is None else check(owner, "sigma_w", sigma_w, _POS)
    polylog = check(owner, "polylog", polylog, _ONE_UP)
    C = hidden_constants(owner, consts, COUPLING_CONSTS)
    out1 = None if out1_norm is None else check(owner, "out1_norm", out1_norm, _NONNEG)
    with decimal.localcontext(_CTX):
        C = {n: _D(v) for n, v in C.items()}
        m_, k_, tau_w, tau_v, sigma_v, pl = (_D(v) for v in (m, k, tau_w, tau_v, sigma_v, polylog))
        sw0 = m_ ** _D("-0.125")
        sigma_w = sw0 if sigma_w is None else _D(sigma_w)
        out1 = C["C_c"] * tau_w if out1 is None else _D(out1)
        rw, rv, tau_v_min = tau_w / sigma_w, tau_v / sigma_v, sigma_v * (k_ / m_) ** _D("0.375")
        third = _D(1) / 3
        regime = regime_check(owner, [
            ("sigma_w = m^(-1/8)", sigma_w, sw0, "[AllenZhu19, Lemma D.1]", abs(sigma_w - sw0) <= _D("1e-9") * sw0),
            ("tau_w >= 1", tau_w, 1.0, "[AllenZhu19, Lemma D.1]", tau_w >= 1),
            ("tau_w < sqrt(m) sigma_w", tau_w, m_.sqrt() * sigma_w, "[AllenZhu19, Lemma D.1]",
             tau_w < m_.sqrt() * sigma_w),
            ("tau_v >= sigma_v (k/m)^(3/8)", tau_v, tau_v_min, "[AllenZhu19, Lemma D.1]", tau_v >= tau_v_min),
            ("tau_v <= sigma_v", tau_v, sigma_v, "[AllenZhu19, Lemma D.1]", tau_v <= sigma_v),
        ])
        out = dict(a=C["C_a"] * (rw * m_) ** (2 * third),
                   b=C["C_b"] * pl * (tau_w * rw ** third / m_ ** (third / 2) + sigma_w),
                   c=C["C_c"] * tau_w, d=C["C_d"] * rv ** (2 * third) * m_,
                   e=C["C_e"] * pl * tau_v * rv ** third * (out1 + 1),
                   f=C["C_f"] * pl * tau_v * rv ** third,
                   g=C["C_g"] * pl * tau_v * (out1 + 1))
    return dict({n: float(v) for n, v in out.items()}, regime=regime, order_of_magnitude=True)


def corollary71(d, k, alpha, *, C_star=1e4, polylog=1.0, consts=None):
    r"""Concept-1 complexities of the normalized Theorem 2 target and Cor. 7.1's sample count and risk.

    .. math::
        p_F=1,\ \mathfrak C_s(F)=2C^*\sqrt{2d/k}\ (F_i=\sqrt{2d/k}\,\langle e_i/\sqrt2,x\rangle),\qquad
        p_G=2^k,\ \mathfrak C_s(G)=C^*(k+1)2^{k/2}\ (\text{polarization, activation }(\sqrt2t)^k),\\
        N=C_N\,\mathrm{pl}\,\frac d{\alpha^8},\qquad \text{risk}=C_{\mathrm{risk}}\,\alpha^4 .

    Parameters
    ----------
    d : int
        Dimension, d >= k.
    k : int
        Degree, 2 <= k <= 1e15 (Corollary 7.1).
    alpha : float
        Weight of G(F), > 0 (Corollary 7.1: alpha in (0, 1/Theta(1))).
    C_star : float
        The constant C* of the complexity measure (Section 4), > 0.
    polylog : float
        Stand-in for the hidden polylog factors, >= 1.
    consts : dict or None
        Multipliers, keys :data:`COROLLARY71_CONSTS` (each default 1).

    Returns
    -------
    dict
        ``p_F, C_s_F, p_G, C_s_G`` (inputs for :func:`theorem1_schedule`), ``a_star_max`` (max |a*_s| of the
        polarization; Concept 1 needs <= 1, Section 5, true for
        k <= 10 only), ``alpha_max`` (= 1/(k p_G C_s(G)), Theorem 1's admissible alpha
        with constants 1), ``N``, ``risk`` and ``order_of_magnitude`` (True).

    Notes
    -----
    Regime: constant k (the Theta~ hides k- and C*-dependent factors: with delta = alpha^4 Theorem 1 gives
    T = (k p_F C_s(F))^2/alpha^8 = 8 k d C*^2/alpha^8); Theorem 1's alpha_max is astronomically small at C* = 1e4.
    Accuracy: the float entries rounded once from 40-digit decimals (ln k! exact to k = 1000, Stirling's series
    beyond, truncation < 1e-22): relative error <= eps where normal, inf or 0 only past float64's range, for 2 <= k
    <= 1e15 (before: OverflowError at k = 171 (k!), k = 2049 (2^(k/2)), alpha = 1e50; ZeroDivisionError at
    alpha = 1e-50). Measured: 0.46 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Corollary 7.1 (Section 7), its proof (App. E.4)]

    Examples
    --------
    >>> c = corollary71(100, 4, 0.5, C_star=1.0)
    >>> c["p_G"], c["C_s_G"], c["N"], c["risk"]
    (16, 20.0, 25600.0, 0.0625)
    """
    owner = "resnet.corollary71"
    k = as_int(owner, "k", k, 2, _K_MAX)
    d = as_int(owner, "d", d, k)
    alpha = check(owner, "alpha", alpha, _POS)
    C_star = check(owner, "C_star", C_star, _POS)
    polylog = check(owner, "polylog", polylog, _ONE_UP)
    C = hidden_constants(owner, consts, COROLLARY71_CONSTS)
    with decimal.localcontext(_CTX):
        C = {n: _D(v) for n, v in C.items()}
        d_, k_, alpha, C_star, pl = (_D(v) for v in (d, k, alpha, C_star, polylog))
        C_s_F = 2 * C_star * (2 * d_ / k_).sqrt()
        C_s_G = C_star * (k_ + 1) * _D(2) ** (k_ / 2)
        a_star_max = (k_ * k_.ln() - k_.ln() / 2 - _log_factorial(k) - k_ * _D(2).ln()).exp()
        out = dict(C_s_F=C_s_F, C_s_G=C_s_G, a_star_max=a_star_max, alpha_max=1 / (k_ * 2 ** k_ * C_s_G),
                   N=C["C_N"] * pl * d_ / alpha ** 8, risk=C["C_risk"] * alpha ** 4)
    return dict({n: float(v) for n, v in out.items()}, p_F=1, p_G=2 ** k, order_of_magnitude=True)


def thm2_lower_bound(alpha):
    r"""Theorem 2's lower bound on the test error of every correlation-kernel KRR: alpha^2/4.

    .. math::
        \mathbb E_x\|\mathcal H(x)-\mathfrak K(x)\|_2^2>\alpha^2/4 .

    Parameters
    ----------
    alpha : float
        Weight of G(F), >= 0.

    Returns
    -------
    float

    Notes
    -----
    Regime: k >= 4, d large, N <= :func:`thm2_N_range` and alpha >= :func:`thm2_alpha_min`, with probability
    0.99 over S* and X (Theorem 2); vacuous at simulable d (docs/errata.md). In practice the exact kernel error sits
    near k alpha^2 (docs/resnet.md).
    Accuracy: relative error <= eps; absolute 2^-1074 where alpha^2/4 underflows.

    References
    ----------
    .. [src] [AllenZhu19, Theorem 2, its proof (App. E.1)]

    Examples
    --------
    >>> thm2_lower_bound(0.3)
    0.0225
    """
    alpha = check("resnet.thm2_lower_bound", "alpha", alpha, _NONNEG)
    return alpha * alpha / 4


def thm2_N_range(d, k):
    r"""Largest N of Theorem 2's sample range, from Lemma E.3's condition (natural log).

    .. math::
        N\le\Big(\frac{d}{20k^2\log^2 d}\Big)^{k/2} .

    Parameters
    ----------
    d : int
        Dimension, d >= 2.
    k : int
        Degree, 1 <= k <= min(d, 1e15).

    Returns
    -------
    float
        The bound on N; below 1 the range is empty (e.g. 6.6e-5 at d = 30, k = 4).

    Notes
    -----
    Regime: the constant is the one of the proof of Lemma E.3 (App. E.3; the statement of Lemma E.3 prints a garbled
    version); Theorem 2's O(d^{k/2}/log^k d) hides it. C(d, k) >= (d/5)^k, used alongside, needs k <= 11 (k! <= 5^k).
    Accuracy: relative error <= eps (rounded once from 40-digit decimals; inf or 0 only past float64, d of any size,
    k <= 1e15; before: OverflowError where the bound passed 1e308). Measured: 0.45 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Theorem 2, proof of Lemma E.3 (App. E.3)]

    Examples
    --------
    >>> f"{thm2_N_range(30, 4):.1e}"
    '6.6e-05'
    """
    owner = "resnet.thm2_N_range"
    d = as_int(owner, "d", d, 2)
    k = as_int(owner, "k", k, 1, min(d, _K_MAX))
    with decimal.localcontext(_CTX):
        d_, k_ = _D(d), _D(k)
        return float((d_ / (20 * k_ * k_ * d_.ln() ** 2)) ** (k_ / 2))


def thm2_alpha_min(d, k, N):
    r"""Smallest alpha for which the proof of Theorem 2 closes (App. E.1 with "alpha <=" read as "alpha >=").

    .. math::
        \alpha^2>\frac{6400\,kN}{(d/5)^k}\iff
        \frac{4kN}{(d/5)^k}\frac{400}{\lambda_{S^*}^2}<\frac{\alpha^2}{4\lambda_{S^*}^2} .

    Parameters
    ----------
    d : int
        Dimension, d >= 1.
    k : int
        Degree, 1 <= k <= min(d, 1e15).
    N : int
        Number of samples, N >= 1.

    Returns
    -------
    float
        80 sqrt(k N / (d/5)^k); Theorem 2 needs alpha above it (its Omega(d^{-k/4})).

    Notes
    -----
    Regime: only with N in :func:`thm2_N_range` does the norm bound of Lemma E.3 hold (App. E.3); the printed
    "alpha <= 40/(d/5)^{k/4}" (App. E.1) is the lower end of the alpha range (docs/errata.md).
    Accuracy: relative error <= eps (rounded once from 40-digit decimals; inf or 0 only past float64, k <= 1e15;
    before: OverflowError from (d/5)^k past 1e308). Measured: 0.48 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, proof of Theorem 2 (App. E.1)]

    Examples
    --------
    >>> thm2_alpha_min(5, 4, 1)
    160.0
    """
    owner = "resnet.thm2_alpha_min"
    d = as_int(owner, "d", d, 1)
    k = as_int(owner, "k", k, 1, min(d, _K_MAX))
    N = as_int(owner, "N", N, 1)
    with decimal.localcontext(_CTX):
        return float(80 * (_D(k) * N / (_D(d) / 5) ** k).sqrt())
