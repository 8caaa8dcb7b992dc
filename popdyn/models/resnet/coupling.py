r"""Sign flips under a perturbation (Proposition C.4): exact worst case, its m -> inf fraction, random directions.

For :math:`g^{(0)} \sim N(0, I/m)` and a perturbation :math:`g'`, the flip matrix
:math:`D'_{jj} = 1[(g^{(0)}+g')_j \ge 0] - 1[g^{(0)}_j \ge 0]` is non-zero only where :math:`|g'_j| \ge |g^{(0)}_j|`
(C.1), so the adversary flips the smallest :math:`|g^{(0)}_j|` first. These counts make Lemma D.1(a),(d) quantitative.

Public names: :func:`sign_flips`, :func:`worst_case_flips`, :func:`worst_case_flip_fraction`,
:func:`random_flip_fraction`.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammainc, gammaincinv

from popdyn._validate import FiniteArray, Interval, Options, check

__all__ = ["sign_flips", "worst_case_flips", "worst_case_flip_fraction", "random_flip_fraction"]

_DELTA = Interval(0.0, np.inf, "left")


def sign_flips(g0, g_prime):
    r"""Number of flipped ReLU signs :math:`\|D'\|_0` when :math:`g^{(0)}` is moved to :math:`g^{(0)}+g'`.

    .. math:: \|D'\|_0 = \#\{j : 1[(g^{(0)}+g')_j \ge 0] \ne 1[g^{(0)}_j \ge 0]\}

    Parameters
    ----------
    g0 : array_like of shape (m,)
        :math:`g^{(0)}`, finite.
    g_prime : array_like of shape (m,)
        :math:`g'`, finite.

    Returns
    -------
    int

    Notes
    -----
    Regime: any vectors; the paper's :math:`D'` ([AllenZhu19, Prop. C.4]) with the convention :math:`1[0 \ge 0] = 1`.
    Accuracy: exact.

    References
    ----------
    .. [src] [AllenZhu19, Prop. C.4, App. D (sign matrices)].

    Examples
    --------
    >>> sign_flips([0.5, -0.2, 0.1], [-1.0, 0.2, 0.0])
    2
    """
    g0 = check("resnet.sign_flips", "g0", g0, FiniteArray(1))
    g_prime = check("resnet.sign_flips", "g_prime", g_prime, FiniteArray(1, g0.shape))
    return int(np.count_nonzero((g0 + g_prime >= 0) != (g0 >= 0)))


def worst_case_flips(g0, delta):
    r"""Exact maximum of :math:`\|D'\|_0` over all :math:`\|g'\|_2 \le \delta` for a given :math:`g^{(0)}`.

    .. math:: s_{\max}(g^{(0)},\delta) = \max\Big\{s : \sum_{j\le s} |g^{(0)}|_{(j)}^2 \le \delta^2\Big\}

    with :math:`|g^{(0)}|_{(1)} \le |g^{(0)}|_{(2)} \le \dots` the order statistics.

    Parameters
    ----------
    g0 : array_like of shape (m,)
        :math:`g^{(0)}`, finite.
    delta : float
        Radius :math:`\delta \ge 0`.

    Returns
    -------
    int
        :math:`s_{\max} \in [0, m]`.

    Notes
    -----
    Regime: any :math:`g^{(0)}`, exact. Flipping j costs :math:`|g'_j| \ge |g^{(0)}_j|` (C.1), attained for
    :math:`g^{(0)}_j < 0` (the new value 0 counts as :math:`\ge 0`) and strict for :math:`g^{(0)}_j \ge 0`; so the
    cheapest s coordinates (negatives first among ties) flip iff their cost is :math:`< \delta^2`, or
    :math:`= \delta^2` with all of them negative. Prop. C.4 bounds the count by :math:`O(m\delta^{2/3})`.
    Accuracy: exact up to the rounding of the cumulative cost at an exact tie (the count may move by the tied
    coordinates there).

    References
    ----------
    .. [src] [AllenZhu19, Prop. C.4, eq. (C.1)]; exact worst case derived in docs/resnet.md.

    Examples
    --------
    >>> worst_case_flips([0.3, -0.1, 0.2, 2.0], 0.4)   # 0.1^2 + 0.2^2 + 0.3^2 = 0.14 <= 0.16
    3
    """
    g0 = check("resnet.worst_case_flips", "g0", g0, FiniteArray(1))
    delta = check("resnet.worst_case_flips", "delta", delta, _DELTA)
    if g0.size == 0:
        return 0
    order = np.lexsort((g0 >= 0, np.abs(g0)))           # by |g0|, negatives first among ties
    norm = np.hypot.accumulate(np.abs(g0[order]))       # sqrt of the cumulative cost: no under/overflow
    strict = int(np.searchsorted(norm, delta, side="left"))            # cost < delta^2
    tie = int(np.searchsorted(norm, delta, side="right"))              # cost == delta^2 for strict <= s < tie
    negatives = int(np.searchsorted(np.cumsum(g0[order] >= 0), 1))   # leading negative coordinates
    return max(strict, min(tie, negatives))


def worst_case_flip_fraction(delta, method="exact"):
    r"""Limit :math:`s_{\max}/m` as :math:`m\to\infty` of the worst-case flip count for :math:`g^{(0)}\sim N(0,I/m)`.

    .. math:: \frac{s_{\max}}{m} \to 2\Phi(t)-1,\quad \delta^2 = 2\Phi(t)-1-2t\varphi(t);\qquad
              \text{small }\delta:\ \frac{s_{\max}}{m} \approx \Big(\frac{6\delta^2}{\pi}\Big)^{1/3}

    Parameters
    ----------
    delta : float
        Radius :math:`\delta \ge 0` (fraction 1 for :math:`\delta \ge 1`).
    method : {"exact", "small_delta"}
        "exact": :math:`2\Phi(t)-1 = P(\chi^2_1 \le t^2)` with :math:`P(\chi^2_3 \le t^2) = \delta^2` solved by the
        inverse regularized gamma function; "small_delta": the leading term :math:`(6\delta^2/\pi)^{1/3}`.

    Returns
    -------
    float
        The fraction in [0, 1] ("small_delta" may exceed 1 for large delta).

    Notes
    -----
    Regime: m -> inf (law of large numbers over the order statistics, derived); relative error of "small_delta"
    is :math:`O(\delta^{4/3})`. It turns Prop. C.4's :math:`O(m\delta^{2/3})` into :math:`1.2407\,\delta^{2/3}m`.
    Accuracy: relative error <= 1e-13 of the m -> inf fraction for every delta >= 0 (below 1e-100 the leading term,
    whose relative correction is < 1e-130: was 0 at delta = 1e-300 where delta^2 underflowed); in [0, 1]. Measured:
    0.26 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Prop. C.4]; derived in docs/resnet.md.

    Examples
    --------
    >>> round(worst_case_flip_fraction(1e-3), 6), round(worst_case_flip_fraction(1e-3, method="small_delta"), 6)
    (0.012407, 0.012407)
    """
    delta = check("resnet.worst_case_flip_fraction", "delta", delta, _DELTA)
    method = check("resnet.worst_case_flip_fraction", "method", method, Options(("exact", "small_delta")))
    if method == "small_delta":
        return (6.0 * delta * delta / math.pi) ** (1.0 / 3.0)
    if delta >= 1.0:
        return 1.0
    if delta < 1e-100:  # delta^2 underflows (was 0 at 1e-300); the relative correction O(delta^(4/3)) is < 1e-130
        return (6.0 / math.pi) ** (1.0 / 3.0) * delta ** (2.0 / 3.0)
    return float(gammainc(0.5, gammaincinv(1.5, delta * delta)))


def random_flip_fraction(delta):
    r"""Expected fraction of flipped signs for a random perturbation :math:`g' \sim N(0, \delta^2 I/m)`.

    .. math:: \frac{\mathbb E\|D'\|_0}{m} = P\big(\mathrm{sign}(z) \ne \mathrm{sign}(z + \delta z')\big)
              = \frac{\arctan\delta}{\pi},\qquad z, z' \sim N(0,1)

    Parameters
    ----------
    delta : float
        :math:`\delta \ge 0` (so :math:`\mathbb E\|g'\|_2^2 = \delta^2`).

    Returns
    -------
    float
        In [0, 1/2); :math:`\approx \delta/\pi` for small :math:`\delta`, linear where the worst case is
        :math:`\propto \delta^{2/3}`.

    Notes
    -----
    Regime: exact for every m (each coordinate independently), derived; the count is Binomial(m, fraction).
    Accuracy: relative error <= 2 eps, in [0, 1/2]. Measured: 0.32 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Prop. C.4] (the worst case); derived in docs/resnet.md.

    Examples
    --------
    >>> random_flip_fraction(1.0)
    0.25
    """
    delta = check("resnet.random_flip_fraction", "delta", delta, _DELTA)
    return math.atan(delta) / math.pi
