"""ID/OOD accuracy of the diagonal linear classifier sign(w.z): exact (contour integral), FFT grid, Chernoff bound,
normal approximation; the 2-D toy; the stable rank; Prop. 6.3's assumptions ([Shi24] Sections 6.3-6.4)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.special import log_ndtr

from ..._validate import Integer, Interval, InvalidParameterError, Options, check
from .problem import DOMAINS, SpuriousFeatureModel
from .risk import _REAL, _blocks, _model
from .transform import log_mgf_real, log_tail

__all__ = ["accuracy", "sum_pmf", "toy2d_accuracy", "stable_rank", "prop63_assumptions"]

_LN10 = np.log(10.0)
_METHODS = ("exact", "fft", "chernoff", "normal")
_MAX_GRID = 2 ** 24  # points of the FFT grid of sum_pmf (128 MiB of complex128 per FFT)


def _moments(alpha, beta, model, domain):
    g = model.g(domain)
    mean = alpha * model.r / 2 + beta * model.m * g
    var = alpha ** 2 * model.r / 12 + beta ** 2 * model.m * (1 / 3 - g ** 2)
    return mean, var


_SMALL_N = 12  # at most this many coordinates with non-zero weight: exact rational arithmetic instead of the contour


def _log_exact_rational(alpha, beta, r, m, g):
    """ln Pr[alpha S_R + beta S_U > 0] in exact rational arithmetic: condition on the number K of negative spurious
    signs, then the alternating-sum CDF of a weighted sum of uniforms (few coordinates only: it is exponential in
    nothing, but its terms cancel, so floats would lose the tail)."""
    a, b = Fraction(alpha), Fraction(beta)
    p, q = Fraction(1, 2) + Fraction(g), Fraction(1, 2) - Fraction(g)
    ra, mb = (r if a != 0 else 0), (m if b != 0 else 0)
    n = ra + mb
    norm = math.factorial(n) * abs(a) ** ra * abs(b) ** mb
    total = Fraction(0)
    for K in range(mb + 1):
        # coordinates c_i u_i with c in {a (ra), b (mb - K), -b (K)}; c u = min(c, 0) + |c| u' (u' uniform)
        x = -(ra * min(a, 0) + (mb - K) * min(b, 0) + K * min(-b, 0))  # Pr[W > 0] = Pr[V > x], V = sum |c_i| u_i
        cdf = sum((-1) ** (j + k) * math.comb(ra, j) * math.comb(mb, k) * (x - j * abs(a) - k * abs(b)) ** n
                  for j in range(ra + 1) for k in range(mb + 1) if x - j * abs(a) - k * abs(b) > 0) / norm
        total += math.comb(mb, K) * q ** K * p ** (mb - K) * (1 - cdf)
    if total <= 0:
        return -np.inf
    k = total.numerator.bit_length() - total.denominator.bit_length()  # total = 2^k * (a float in [1/2, 2])
    return math.log(float(total / Fraction(2) ** k)) + k * math.log(2)


def _log_exact(alpha, beta, model, domain, mean):
    """ln Pr[W > 0]: rational arithmetic for few coordinates, else the smaller side's contour integral; W = 0 a.s.
    (all weights 0) counts as a coin flip."""
    blocks = [b for b in _blocks(alpha, beta, model, domain) if b[0] != 0 and b[2] > 0]
    if not blocks:
        return np.log(0.5)
    if sum(n for _, _, n in blocks) <= _SMALL_N:
        return _log_exact_rational(alpha, beta, model.r, model.m, model.g(domain))
    if mean >= 0:
        return float(np.log1p(-np.exp(log_tail(blocks, -1))))
    return float(log_tail(blocks, +1))


def _log_chernoff(blocks):
    """ln of min(1, min_{s>0} E e^{sW}), the Chernoff bound on Pr[W >= 0] (log-convex in s: bracket, then Brent)."""
    from .transform import _saddle
    live = [b for b in blocks if b[0] != 0 and b[2] > 0]
    if not live:
        return 0.0
    f = lambda s: log_mgf_real(s, live)
    span, cap = 1.0, 1e6 / max(abs(a) for a, _, _ in live)
    while f(2 * span) < f(span) and span < cap:
        span *= 2
    s = _saddle(f, 0.0, 2 * span)
    return float(min(0.0, f(s)))


def sum_pmf(alpha, beta, model, domain="id", h=None):
    r"""Probability mass function of W = alpha S_R + beta S_U on the grid j h, by FFT of exact cell masses.

    .. math:: p = \mathcal F^{-1}\big[\hat m_\alpha^{\,r}\,\hat m_\beta^{\,d-r}\big],\qquad
              m_a[j] = \Pr[a z\in((j-\tfrac12)h, (j+\tfrac12)h]]

    Parameters
    ----------
    alpha, beta : float
    model : SpuriousFeatureModel
    domain : {"id", "ood"}
    h : float or None
        Grid step; default ``min(|alpha|, |beta|)/50`` over the non-zero weights.

    Returns
    -------
    x : ndarray
        Grid points j h.
    p : ndarray
        Masses (clipped at 0, summing to 1).

    Notes
    -----
    Regime: any weights not both 0. Exact up to the grid (each coordinate rounded to the nearest grid point, an
    error of order h^2 in smooth expectations); the FFT's rounding floors the masses at about 1e-14 of the peak, so
    tails need :func:`accuracy` with ``method="exact"``.

    Accuracy: masses >= 0 summing to 1 within 1e-13, each within 1e-14 of the largest of the exact convolution of
    the cell masses (rational arithmetic; measured 0.5 of it, small models). The default grid has (sum |w| n)/(min
    |w|/50) points: beyond 2^24 (weights far apart) it raises, asking for a larger h.

    References
    ----------
    .. [src] derived in docs/domain_gen.md.
    """
    owner = "domain_gen.sum_pmf"
    alpha, beta, model = check(owner, "alpha", alpha, _REAL), check(owner, "beta", beta, _REAL), _model(owner, model)
    g = model.g(check(owner, "domain", domain, Options(DOMAINS)))
    parts = [(a, gg, n) for a, gg, n in ((alpha, 0.5, model.r), (beta, g, model.m)) if a != 0 and n > 0]
    if not parts:  # W = 0 almost surely: no grid to put it on
        check(owner, "alpha", alpha, Options(("non-zero when beta = 0 or d = r",)))
    h = min(abs(a) for a, _, _ in parts) / 50 if h is None else check(owner, "h", h, Interval(0, np.inf, "neither"))
    size = sum((2 * abs(a) / h + 3) * n for a, _, n in parts)
    if size > _MAX_GRID:
        raise InvalidParameterError(f"The 'h' parameter of {owner} gives a grid of {size:.3g} points (more than "
                                    f"{_MAX_GRID:.3g}): weights {alpha!r}, {beta!r} are far apart; pass a larger h "
                                    f"(the default is min |weight| / 50). Got {h!r} instead.")
    cells = []
    for a, gg, n in parts:
        j = np.arange(int(np.floor(-abs(a) / h)) - 1, int(np.ceil(abs(a) / h)) + 2)
        lo, hi = (j - 0.5) * h, (j + 0.5) * h
        up = lambda x: np.clip(x / a, 0, 1) if a > 0 else np.clip(1 - x / a, 0, 1)  # P[a u <= x], u ~ U[0, 1]
        m_pos = up(hi) - up(lo) if a > 0 else -(up(hi) - up(lo))
        dn = lambda x: np.clip(1 + x / a, 0, 1) if a > 0 else np.clip(-x / a, 0, 1)  # P[-a u <= x]
        m_neg = dn(hi) - dn(lo) if a > 0 else -(dn(hi) - dn(lo))
        m_pos, m_neg = np.abs(m_pos), np.abs(m_neg)
        cells.append((j[0], (0.5 + gg) * m_pos + (0.5 - gg) * m_neg, n))
    start = sum(s * n for s, _, n in cells)
    L = sum((len(m) - 1) * n for _, m, n in cells) + 1
    N = 1 << int(np.ceil(np.log2(L + 1)))
    F = np.prod([np.fft.rfft(m, N) ** n for _, m, n in cells], axis=0)
    p = np.clip(np.fft.irfft(F, N)[:L], 0, None)
    return (start + np.arange(L)) * h, p / p.sum()


def accuracy(alpha, beta, model, domain, method="exact", log10=False):
    r"""Accuracy Pr[alpha S_R + beta S_U > 0] of sign(w.z) with w = (alpha 1_R, beta 1_U), ID or OOD.

    .. math:: \mathrm{acc} = \Pr[W>0] = \frac1{2\pi i}\int_{c-i\infty}^{c+i\infty}\frac{M(z)}{z}\,dz\ (c>0),\qquad
              M(z) = \Big(\frac{e^{\alpha z}-1}{\alpha z}\Big)^r M_{\mathcal D_{\pm\gamma}}(\beta z)^{d-r}

    Parameters
    ----------
    alpha, beta : float
    model : SpuriousFeatureModel
    domain : {"id", "ood"}
    method : {"exact", "fft", "chernoff", "normal"}
        "exact": the contour integral through the saddle point (the smaller of Pr[W > 0], Pr[W < 0] is integrated,
        so the result has full relative precision however small); "fft": :func:`sum_pmf` (floors near 1e-14);
        "chernoff": the rigorous upper bound min_s E e^{sW}; "normal": Phi(mean/sd), an approximation that is not
        exact in the tails.
    log10 : bool
        Return log10 of the accuracy (OOD accuracies of 1e-40 to 1e-93 occur at the paper's sizes).

    Returns
    -------
    float

    Notes
    -----
    Regime: any weights; W = 0 almost surely (alpha = beta = 0) counts as a fair coin (1/2). With at most 12
    coordinates of non-zero weight "exact" sums the piecewise-polynomial CDF in rational arithmetic (exact); beyond,
    the contour integral agrees with the 150-digit mpmath piecewise-polynomial formula to 3e-15 relative (tests).

    Accuracy: "exact": relative error <= 1e-13 (log10: absolute 1e-13 max(1, |log10 acc|)) for probabilities down
    to 1e-200, without a warning, over r <= 10, d - r <= 30, weights 1e-4 .. 1e3 of either sign and 0, |gamma| up
    to 1/2 - 1e-16; measured 0.1 of it (tests/test_accuracy_domain_gen.py against the alternating-sum CDF in
    mpmath with the digits its cancellation needs). It was 10 % off at 1e-93 where the saddle search stopped at
    1e6/max|a| while the saddle sat near n/min|a| (weights 1.6e5 apart), and 5e-13 off for sign mixtures of tiny
    weight, now conditioned on the sign count; a RuntimeWarning states the accuracy reached where 1e-12 cannot be
    met. "chernoff": a certified upper bound (>= the exact value, <= 1). "normal": Phi(mean/sd) to 1e-13 relative
    (measured 0.09), an approximation of the accuracy. "fft": in [0, 1], within the grid error of :func:`sum_pmf`.

    References
    ----------
    .. [src] [Shi24, Proposition 6.3, its proof (E.46)-(E.53)]; the Chernoff form derived in docs/domain_gen.md.

    Examples
    --------
    >>> m = SpuriousFeatureModel(1, 2, 0.2)   # the 2-D toy: c = beta/alpha
    >>> round(accuracy(1.0, 0.5, m, "ood"), 12) == round(toy2d_accuracy(0.5, 0.2)[1], 12)
    True
    """
    owner = "domain_gen.accuracy"
    alpha, beta, model = check(owner, "alpha", alpha, _REAL), check(owner, "beta", beta, _REAL), _model(owner, model)
    domain = check(owner, "domain", domain, Options(DOMAINS))
    method = check(owner, "method", method, Options(_METHODS))
    log10 = check(owner, "log10", log10, Options((True, False)))
    blocks = _blocks(alpha, beta, model, domain)
    mean, var = _moments(alpha, beta, model, domain)
    if method == "exact":
        ln = _log_exact(alpha, beta, model, domain, mean)
    elif method == "chernoff":
        ln = _log_chernoff(blocks)
    elif method == "normal":
        ln = float(log_ndtr(mean / np.sqrt(var))) if var > 0 else np.log(0.5)
    else:
        if not any(a != 0 and n > 0 for a, _, n in blocks):  # W = 0 almost surely (also alpha = 0 with d = r)
            ln = np.log(0.5)
        else:
            x, p = sum_pmf(alpha, beta, model, domain)
            ln = float(np.log(p[x > 0].sum() + 0.5 * p[x == 0].sum()))
    return ln / _LN10 if log10 else float(np.exp(ln))


def toy2d_accuracy(c, gamma):
    r"""ID and OOD accuracy of sign(x_1 + c x_2) on the 2-D toy of section 6.3.1 (z_2 ~ D_{+-gamma}).

    .. math:: \mathrm{acc_{ID}} = (\tfrac12+\gamma)+(\tfrac12-\gamma)q(c),\quad
              \mathrm{acc_{OOD}} = (\tfrac12-\gamma)+(\tfrac12+\gamma)q(c),\quad
              q(c) = 1-\tfrac c2\ (c\le1),\ \tfrac1{2c}\ (c\ge1)

    Parameters
    ----------
    c : float
        Weight ratio c >= 0.
    gamma : float
        Spurious correlation in (-1/2, 1/2) (the paper's toy: 0.2, with x_2 | y = -1 taken as the mirror image).

    Returns
    -------
    acc_id, acc_ood : float

    Notes
    -----
    Regime: linear classifier without bias, c >= 0. Population ERM-l2 on this toy has c <= 2 gamma, so OOD accuracy
    >= 0.86 at gamma = 0.2: the paper's 0.76 (Section 6.3.1) is not a population optimum.

    Accuracy: relative error <= 2 eps for both accuracies, which lie in [1/2 - |gamma|, 1] (tested against exact
    rationals for c up to 1e6; measured 0.45 of it).

    References
    ----------
    .. [src] derived in docs/domain_gen.md; [Shi24, Section 6.3.1].

    Examples
    --------
    >>> toy2d_accuracy(0.0, 0.2)  # the invariant coordinate alone: perfect
    (1.0, 1.0)
    """
    owner = "domain_gen.toy2d_accuracy"
    c = check(owner, "c", c, Interval(0.0, np.inf, "left"))
    gamma = check(owner, "gamma", gamma, Interval(-0.5, 0.5, "neither"))
    q = 1 - c / 2 if c <= 1 else 1 / (2 * c)
    return float(0.5 + gamma + (0.5 - gamma) * q), float(0.5 - gamma + (0.5 + gamma) * q)


def stable_rank(M):
    r"""Stable rank ||M||_F^2 / ||M||_2^2 (the paper prints ||M||_F^2 / ||M||_2, Section 6.3.3; corrected).

    .. math:: \mathrm{srank}(M) = \frac{\lVert M\rVert_F^2}{\lVert M\rVert_2^2} = \frac{\sum_i\sigma_i^2}{\sigma_1^2}

    Parameters
    ----------
    M : array_like of shape (n, p)
        A finite non-zero matrix.

    Returns
    -------
    float
        In [1, rank(M)], invariant to scaling M.

    Notes
    -----
    Regime: any non-zero matrix.

    Accuracy: relative error <= 4 min(n, p) eps, the value in [1, rank(M)], for singular values spanning 16
    decades at scales 1e-12 .. 1e12; measured 0.11 of it (tests/test_accuracy_domain_gen.py, mpmath.svd_r at 40
    digits).

    References
    ----------
    .. [src] [Shi24, Section 6.3.3 (Fig. 6.5)].

    Examples
    --------
    >>> stable_rank(np.eye(3))
    3.0
    """
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or not np.all(np.isfinite(M)) or not np.any(M):
        check("domain_gen.stable_rank", "M", M, Options(("a finite non-zero 2-d array",)))
    s = np.linalg.svd(M, compute_uv=False)
    return float(np.sum(s ** 2) / s[0] ** 2)


def prop63_assumptions(r, d, gamma, lam, B_rank=1, C_lambda=1.0, C=20):
    r"""The assumptions of Proposition 6.3 as booleans, with the Omega-constant of the lambda bound a parameter.

    .. math:: 1\le B_{\rm rank}\le r,\quad \lambda > C_\lambda\sqrt r\,e^{-\sqrt r/5},\quad d > r/\gamma^2 + r,\quad
              r > C,\quad \gamma\in(3/\sqrt r, 1/2)

    Parameters
    ----------
    r, d : int
    gamma : float
    lam : float
    B_rank : int
    C_lambda : float
        The unspecified constant of the Omega(sqrt(r) e^{-sqrt(r)/5}) bound, > 0.
    C : float
        The constant of r > C (the paper: some C < 20).

    Returns
    -------
    dict
        One boolean per assumption and ``"all"``.

    Notes
    -----
    Regime: the paper's proof (E.49) uses the Hoeffding denominator 4d; the corrected one 9r/(16 gamma^2) +
    4(d - r) still gives OOD accuracy <= e^{-r/10} (docs/domain_gen.md).

    Accuracy: the comparisons are made in float64: a case within an ulp of a threshold may fall either way.

    References
    ----------
    .. [src] [Shi24, Proposition 6.3, Section 6.4 (gamma range)].
    """
    owner = "domain_gen.prop63_assumptions"
    r, d = check(owner, "r", r, Integer(1)), check(owner, "d", d, Integer(1))
    gamma = check(owner, "gamma", gamma, Interval(-0.5, 0.5, "neither"))
    lam = check(owner, "lam", lam, Interval(0, np.inf, "left"))
    B = check(owner, "B_rank", B_rank, Integer(0))
    C_lambda = check(owner, "C_lambda", C_lambda, Interval(0, np.inf, "neither"))
    C = check(owner, "C", C, Interval(0, np.inf, "left"))
    out = {"B_rank": 1 <= B <= r, "lam": lam > C_lambda * np.sqrt(r) * np.exp(-np.sqrt(r) / 5),
           "d": gamma ** 2 > 0 and d > r / gamma ** 2 + r, "r": r > C, "gamma": 3 / np.sqrt(r) < gamma < 0.5}
    out["all"] = all(out.values())
    return out
