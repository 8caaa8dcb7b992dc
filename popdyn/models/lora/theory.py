"""Closed forms of the LoRA population loss and of the drift h(m) ([Dayi25, Proposition 4, App. D.1]; docs/lora.md).

Public names
------------
drift
    :func:`h` (methods "kernel", "series", "orthonormal"), :func:`h0`, :func:`h_bound`
series pieces (Prop. 4)
    :func:`h_series_coeffs`, :func:`T_table`, :func:`orthonormal_stats`
loss and gradient
    :func:`population_loss`, :func:`population_gradient`

Every function takes the :class:`~popdyn.models.lora.Problem` first and reads the activation of the
N1 formulas from ``problem.sigma`` (so normalisation N0 is N1 with ``sigma(r z)``, derived in docs/lora.md).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ..._validate import Interval, InvalidParameterError, as_int, check
from .problem import _cached, check_overlap, overlaps

__all__ = ["h", "h0", "h_bound", "h_series_coeffs", "T_table", "orthonormal_stats",
           "population_loss", "population_gradient"]

_P_MAX = 4096  # largest Hermite degree a truncated series may need before it is called absurd
_CHUNK = 1 << 20  # floats of an (M, k, k) block the numpy paths hold at once (8 MiB)
_UNIT_TOL = 1e-10  # 1e-10: unit-norm check of u, u_hat; far above float64 rounding


# ---------------------------------------------------------------------------------------------
# numba kernels: sum_ij W_ij K'(rho_ij(m)) for every m, without forming the (M, k, k) array
# ---------------------------------------------------------------------------------------------
@numba.njit(cache=True)  # serial: the ODE calls h at one m at a time; threads cost 10-100x there
def _relu_sum(m, W, ER, gaps):  # pragma: no cover - compiled
    """sum_p W_p (pi K'(rho_p(m))) for ReLU from the half gaps g-+ = (1 -+ rho)/2, whichever is smaller exact.

    ``pi K' = pi/2 - asin(sqrt(g-))`` when g- <= g+, else ``asin(sqrt(g+))``. Everything that depends only
    on (G, c, c_hat) is in the per-pair arrays (see :func:`_relu_pairs`): g-, g+ are ``gaps[0] + ER dm``,
    ``gaps[1] - ER dm`` with ``dm = 1 - m`` for m >= 0, and ``gaps[2] - ER dm``, ``gaps[3] + ER dm`` with
    ``dm = 1 + m`` below, so the loop over pairs is two fused multiply-adds, one sqrt and one asin.
    """
    out = np.empty(m.size)
    for t in range(m.size):
        mt = m[t]
        if mt >= 0.0:
            lo, hi, x = gaps[0], gaps[1], 1.0 - mt
        else:
            lo, hi, x = gaps[2], gaps[3], -(1.0 + mt)
        acc = 0.0
        for p in range(W.size):
            gm, gp = lo[p] + ER[p] * x, hi[p] - ER[p] * x
            if gm <= gp:
                acc += W[p] * (0.5 * math.pi - math.asin(math.sqrt(max(gm, 0.0))))
            else:
                acc += W[p] * math.asin(math.sqrt(min(max(gp, 0.0), 1.0)))
        out[t] = acc
    return out


@numba.njit(cache=True)  # serial: see _relu_sum
def _horner_sum(m, Wt, G0, E, q):  # pragma: no cover - compiled
    """K'(rho) = sum_n q_n rho^n by Horner, rho = G0 + E m clipped to [-1, 1]."""
    out = np.empty(m.size)
    k1, k2 = Wt.shape
    n = q.size
    for t in numba.prange(m.size):
        acc = 0.0
        for i in range(k1):
            for j in range(k2):
                rho = min(max(G0[i, j] + E[i, j] * m[t], -1.0), 1.0)
                kp = q[n - 1]
                for p in range(n - 2, -1, -1):
                    kp = kp * rho + q[p]
                acc += Wt[i, j] * kp
        out[t] = acc
    return out


@numba.njit(cache=True)
def _series_kernel(log_beta, log_1mbeta, q, T_odd, T_even, L):  # pragma: no cover - compiled
    """a_l = 2 sum_s C(l+s, l) beta^(l+1) (1-beta)^s q_(l+s) T(l, s), l <= L, l + s < q.size."""
    a = np.zeros(L + 1)
    for l in range(L + 1):
        acc = 0.0
        for s in range(q.size - l):
            lw = (math.lgamma(l + s + 1.0) - math.lgamma(l + 1.0) - math.lgamma(s + 1.0)
                  + (l + 1) * log_beta + s * log_1mbeta)
            acc += math.exp(lw) * q[l + s] * (T_odd[s] if l % 2 else T_even[s])
        a[l] = 2.0 * acc
    return a


# ---------------------------------------------------------------------------------------------
# shared pieces
# ---------------------------------------------------------------------------------------------
def _pairs(problem):
    r"""Per-pair constants of :math:`\rho_{ij}(m) = (G_{ij} + E_{ij} m)/R_{ij}` and the weights of h.

    Returns ``Wt = 2 lam_i lam_j E_ij / R_ij`` (so h = sum Wt K'(rho)), ``E = xi^2 c_i c_hat_j``,
    ``R = r_i r_hat_j`` and the four m-independent parts of the gaps ``1 -+ rho`` expanded around
    ``m = 1`` (d1m, d1p) and ``m = -1`` (d2m, d2p). ``R - 1 -+ E = xi^2 (c_i -+ c_hat_j)^2 / (R + 1 +- E)``
    is exactly 0 when ``c_i = +-c_hat_j``, so a gap that vanishes is computed as 0, not 1e-16 (whose
    square root would cost 1e-8 in the ReLU K', docs/lora.md).
    """
    Wt, E, R, gaps = _pair_tables(problem.xi, problem.c, problem.c_hat, problem.r, problem.r_hat, problem.G, problem.lam)
    return Wt, E, R, tuple(gaps)


def _pair_tables(xi, c, ch, r, rh, G, lam):
    """The arrays of :func:`_pairs` over all pairs at once (gaps stacked: shape (4, k, k))."""
    xi2 = xi**2
    R, E = np.outer(r, rh), xi2 * np.outer(c, ch)
    # R - |E| = (R^2 - E^2)/(R + |E|) with R^2 - E^2 = 1 + xi^2 (c_i^2 + c_hat_j^2) exactly: R + 1 - |E|
    # formed as R - |E| plus 1 keeps its 1 when R ~ |E| >> 1 (xi >= 1e6 lost it: h off by 4e-5 at
    # xi = 1e6, by 50 % and a division by zero at xi = 1e8)
    near = 1 + (1 + xi2 * (c[:, None] ** 2 + ch[None, :] ** 2)) / (R + np.abs(E))  # R + 1 - |E|
    far = R + 1 + np.abs(E)  # R + 1 + |E|
    pos = E >= 0
    a_minus = xi2 * (c[:, None] - ch[None, :]) ** 2 / np.where(pos, far, near)  # R - 1 - E
    a_plus = xi2 * (c[:, None] + ch[None, :]) ** 2 / np.where(pos, near, far)  # R - 1 + E
    gaps = np.stack((a_minus + (1 - G), a_plus + (1 + G), a_plus + (1 - G), a_minus + (1 + G)))
    Wt = 2 * np.outer(lam, lam) * E / R
    return Wt, E, R, gaps


def _relu_pairs(problem):
    r"""Per-pair constants of :func:`_relu_sum`, cached per problem: ``W = Wt/pi``, ``ER = E/(2R)`` and the
    four m-independent half gaps ``gaps/(2R)``; pairs with equal constants are merged (their W added), so
    structured problems (G = I, quantised c) keep a handful of pairs out of k^2."""
    def make():
        Wt, E, R, gaps = _pairs(problem)
        rows, inv = _distinct_rows([(E / (2 * R)).ravel(), *(g.ravel() / (2 * R.ravel()) for g in gaps)])
        W = np.bincount(inv, weights=Wt.ravel(), minlength=len(rows)) / math.pi
        return W, np.ascontiguousarray(rows[:, 0]), np.ascontiguousarray(rows[:, 1:].T)
    return _cached(problem, "relu_pairs", make)


def _distinct_rows(columns):
    """The distinct rows of ``np.stack(columns, 1)`` (lexicographic order) and the index of each row's
    distinct row (``np.unique(axis=0)`` without its structured-dtype overhead)."""
    return _unique_rows(np.stack(columns, axis=1))


def _unique_rows(rows):
    """:func:`_distinct_rows` of the 2-d array ``rows``: a stable lexicographic sort (``np.lexsort``), then the
    rows that differ from their predecessor."""
    n = rows.shape[0]
    if n == 0:
        return rows.copy(), np.empty(0, dtype=np.int64)
    order = np.lexsort(rows.T[::-1])
    ranked = rows[order]
    keep = np.ones(n, dtype=bool)
    keep[1:] = np.any(ranked[1:] != ranked[:-1], axis=1)
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.cumsum(keep) - 1
    return ranked[keep], inv


def _relu_scale(problem):
    """K' of sigma(r z) over K' of sigma for ReLU: r^2 in N0 (ReLU is positively homogeneous), else 1."""
    return 1 + problem.xi**2 / problem.k if problem.normalisation == "N0" else 1.0


def _is_relu(problem):
    return problem.activation.name == "relu"


def _rho_max(problem, m):
    """max |rho_ij(m)| over the pairs and the given overlaps (the series' convergence controller)."""
    ends = np.array([np.min(m), np.max(m)]) if np.size(m) else np.zeros(1)
    return float(np.max(np.abs(overlaps(problem, ends))))


def _series_degree(sigma, rho_max, tol, P_max=_P_MAX):
    """Smallest P in 8, 16, ..., P_max with tail bound |K' - K'_P| <= tol K'(1) at rho_max, else None."""
    target = tol * sigma.Kprime1
    P = 8
    while P <= P_max:
        if sigma.Kprime_tail_bound(P, rho_max) <= target:
            return P
        P *= 2
    return None


def _kprime_coeffs(sigma, P):
    """q_n = (n+1) mu_(n+1)^2, n = 0..P-1: K'(rho) = sum_n q_n rho^n truncated at Hermite degree P."""
    mu = np.asarray(sigma.hermite_coeffs(P), dtype=np.float64)
    p = np.arange(1, P + 1)
    return p * mu[1:P + 1]**2


def _as_output(m, values):
    return float(values.reshape(())) if m.ndim == 0 else values.reshape(m.shape)


def _chunked(fn, m, k):
    """Apply ``fn`` to slices of the flat overlaps so that no block exceeds _CHUNK floats."""
    step = max(1, _CHUNK // max(1, k * k))
    flat = m.reshape(-1)
    return np.concatenate([fn(flat[s:s + step]) for s in range(0, flat.size, step)] or [np.zeros(0)])


# ---------------------------------------------------------------------------------------------
# the three methods of h
# ---------------------------------------------------------------------------------------------
def _h_kernel(problem, m, tol, P):
    """Kernel form: numba closed form (ReLU), numba Horner series (P from the tail bound), else numpy K'."""
    flat = np.ascontiguousarray(m.reshape(-1))
    if _is_relu(problem):
        return _relu_scale(problem) * _relu_sum(flat, *_relu_pairs(problem))
    Wt, E, R, _ = _pairs(problem)
    sigma = problem.sigma
    P = _series_degree(sigma, _rho_max(problem, m), tol) if P is None else P
    if P is not None:
        return _horner_sum(flat, Wt, problem.G / R, E / R, _kprime_coeffs(sigma, P))
    return _h_kernel_numpy(problem, flat)


def _h_kernel_numpy(problem, m):
    """Plain vectorised numpy kernel form with the activation's own ``Kprime`` (reference and fallback)."""
    Wt, *_ = _pairs(problem)
    m = np.asarray(m, dtype=np.float64)
    return _chunked(lambda mm: np.einsum("ij,nij->n", Wt, problem.sigma.Kprime(overlaps(problem, mm))),
                    m, problem.k)


def _require_quantised(problem, method):
    if not problem.quantised:
        raise InvalidParameterError(
            f"The 'method' parameter of lora.h may be {method!r} only under A3 (c, c_hat in "
            f"{{+-1/sqrt(k)}}^k). Got {method!r} with non-quantised c or c_hat; use method='kernel'.")


def _h_series(problem, m, tol, P):
    """Prop. 4 double series, truncated at total Hermite degree P (from the tail bound unless given)."""
    _require_quantised(problem, "series")
    if P is None:
        rho_max = _rho_max(problem, m)
        P = _series_degree(problem.sigma, rho_max, tol)
        if P is None:
            bound = problem.sigma.Kprime_tail_bound(_P_MAX, rho_max) / problem.sigma.Kprime1
            raise InvalidParameterError(
                f"The 'method' parameter of lora.h may be 'series' only where the Hermite series converges: "
                f"{problem.activation.name} at rho_max={rho_max:.6g} needs P > {_P_MAX} for tol={tol:g} "
                f"(relative tail bound {bound:.3g} at P={_P_MAX}; docs/lora.md). Got 'series' instead; "
                "use method='kernel', raise tol or pass P.")
    a = h_series_coeffs(problem, P - 1, P)
    return np.polynomial.polynomial.polyval(m.reshape(-1), a)


def _h_orthonormal(problem, m, tol, P):
    """4-statistic closed form for G = I under A3, with exact gaps 1 -+ rho for the ReLU K'."""
    Pp, Pm, Dp, Dm = orthonormal_stats(problem)
    k, xi2 = problem.k, problem.xi**2
    beta, omb = xi2 / (k + xi2), k / (k + xi2)  # 1 - beta formed directly: as 1 - beta it lost rho_ii at xi >> 1
    mm = m.reshape(-1)
    kp = lambda omr, opr, rho: _kprime_gap(problem, omr, opr, rho)
    k_pos, k_neg = kp(1 - beta * mm, 1 + beta * mm, beta * mm), kp(1 + beta * mm, 1 - beta * mm, -beta * mm)
    k_agree = kp(beta * (1 - mm), 2 - beta * (1 - mm), omb + beta * mm)
    k_disagree = kp(beta * (1 + mm), 2 - beta * (1 + mm), omb - beta * mm)
    bracket = Pp * k_pos + Pm * k_neg + Dp * (k_agree - k_pos) + Dm * (k_disagree - k_neg)
    return 2 * xi2 / (1 + xi2 / k) * bracket


def _kprime_gap(problem, omr, opr, rho):
    """K'(rho) from the gaps 1 - rho, 1 + rho: exact-gap closed form for ReLU, the activation's K' at rho else."""
    if _is_relu(problem):
        rho_pos = 0.5 - np.arcsin(np.sqrt(np.clip(omr, 0, 2) / 2)) / np.pi
        rho_neg = np.arcsin(np.sqrt(np.clip(opr, 0, 2) / 2)) / np.pi
        return _relu_scale(problem) * np.where(omr <= 1, rho_pos, rho_neg)
    return problem.sigma.Kprime(np.clip(rho, -1.0, 1.0))


_METHODS = {"kernel": _h_kernel, "series": _h_series, "orthonormal": _h_orthonormal}


# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------
def h(problem, m, *, method="kernel", tol=1e-12, P=None):
    r"""Drift coefficient h(m) of the overlap m = <u, u_hat> (Proposition 4): grad Phi = -h(m)(u - m u_hat).

    .. math:: h(m) = -\frac{d\Phi}{dm} = 2\xi^2\sum_{i,j=1}^k
              \frac{\lambda_i\lambda_j c_i\hat c_j}{r_i\hat r_j}\,K'\big(\rho_{ij}(m)\big),
              \qquad \rho_{ij}(m) = \frac{G_{ij} + \xi^2 c_i\hat c_j m}{r_i \hat r_j}

    with ``K'(rho) = E[s'(g1) s'(g2)] = sum_p p mu_p^2 rho^(p-1)`` and ``r_i = sqrt(1 + xi^2 c_i^2)``
    (all equal to ``r = sqrt(1 + xi^2/k)`` under A3, where this is the kernel form of
    [Dayi25, App. D.1] with its misprint corrected).

    Parameters
    ----------
    problem : Problem
    m : float or ndarray
        Overlaps in [-1, 1]; any shape.
    method : {"kernel", "series", "orthonormal"}
        "kernel": the form above (numba; ReLU K' in closed form from exact gaps 1 -+ rho, other
        activations by a Horner-evaluated Hermite series of K' truncated by the tail bound, or the
        activation's own ``Kprime`` when that series would pass degree 4096). "series": the paper's
        double Hermite series in (l, s) with ``T(l, s)`` (needs A3). "orthonormal": the derived
        4-statistic closed form (needs A3 and G = I).
    tol : float
        Truncation target of the series, relative to the sup bound (``|error| <= tol * h_bound``).
    P : int, optional
        Hermite degree at which to truncate (overrides ``tol``; ignored by "orthonormal" and by the
        ReLU kernel, which is exact).

    Returns
    -------
    float or ndarray of shape m.shape

    Notes
    -----
    Regime: population limit (d -> inf implicit), A1-A2 (unit w_i; u, u_hat orthogonal to span W),
    any sigma with E[sigma'(g)^2] < inf. The series converges like the tail of ``sum p mu_p^2
    rho_max^(p-1)``: for ReLU at |m| = 1 that is ``1/(pi sqrt(2 pi P))``, so "series" raises there for
    any tol below ~2e-3 (docs/lora.md). For ReLU h is not differentiable at m = +-1 when some
    ``c_i = +-c_hat_i``.

    Accuracy: method "kernel": ``|dh| <= tol h_bound + 16 eps S`` with ``S = sum_ij |w_ij| (|K'(rho_ij)| +
    |K''(rho_ij)| (|G_ij| + |E_ij m|)/R_ij)`` (the size of the terms and of the rounding of the overlaps; for relu the
    second part is at most K'(1), the exact gaps), where ``w_ij = 2 xi^2 lam_i lam_j c_i c_hat_j/(r_i r_hat_j)``; the
    tol part only for activations without a closed K' (erf, tanh: the truncated series; 0 for relu and he_n). So
    relative ``16 eps`` where the terms do not cancel. Regime: xi in [1e-150, 1e150] (beyond, xi^2 overflows and h
    raises OverflowError; below, h ~ xi^2 underflows to 0), m in [-1, 1] including +-1 and within 1e-16 of them,
    any k, G (near-parallel and antiparallel features), c, c_hat (c_hat = +-c). Measured: 0.087 (tanh at rho -> 1: 0.53) of the bound
    (tests/test_accuracy_lora.py: the kernel form in mpmath at 40 digits over xi in [1e-8, 1e8], k in {1..8},
    relu N1/N0, erf, tanh, he_1..he_7). Method "orthonormal": the same bound with S increased by
    ``2 xi^2/r^2 ((|P+| + |D+|)|K'(beta m)| + (|P-| + |D-|)|K'(-beta m)|)`` (its grouping cancels these terms),
    measured 0.087. Method "series":
    ``|dh| <= tol h_bound + 64 eps (S + P sum_l |a_l| |m|^l)`` where it returns (it raises where the degree needed
    passes 4096), measured 0.013.

    References
    ----------
    .. [src] [Dayi25, Proposition 4 (Section 3.1), its proof (App. D.1; misprint corrected, docs/errata.md)].

    Examples
    --------
    A linear activation has K' = 1, so h is flat: ``2 xi^2/r^2 (sum lam c)(sum lam c_hat)``.

    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> p = lora.Problem(np.eye(2), np.array([1.0, 2.0]), np.array([1, 1]) / np.sqrt(2),
    ...                  np.array([1, -1]) / np.sqrt(2), xi=1.0, activation="linear")
    >>> np.round(lora.h(p, [-1.0, 0.0, 1.0]), 12)  # 2 * (1/1.5) * (3/sqrt2) * (-1/sqrt2) = -2
    array([-2., -2., -2.])
    """
    if method not in _METHODS:
        raise InvalidParameterError(f"The 'method' parameter of lora.h must be one of {sorted(_METHODS)}. "
                                    f"Got {method!r} instead.")
    tol = check("lora.h", "tol", tol, Interval(0, 1, closed="neither"))
    P = None if P is None else as_int("lora.h", "P", P, low=1, high=10**6)
    m = check_overlap(m)
    return _as_output(m, np.asarray(_METHODS[method](problem, m, tol, P), dtype=np.float64))


def h0(problem):
    r"""Drift at the uninformed start, h(0); its sign picks the limit sign(h(0)) u.

    .. math:: h(0) = 2\xi^2\sum_{i,j}\frac{\lambda_i\lambda_j c_i\hat c_j}{r_i\hat r_j}\,K'\Big(\frac{G_{ij}}{r_i\hat r_j}\Big)

    Parameters
    ----------
    problem : Problem

    Returns
    -------
    float

    Notes
    -----
    Regime: as :func:`h`. For G = I under A3 it equals ``2 xi^2/r^2 [mu_1^2 (sum lam c)(sum lam c_hat)
    + (K'(k/(k + xi^2)) - mu_1^2) sum lam^2 c c_hat]`` (derived in docs/lora.md).

    Accuracy: that of :func:`h` at m = 0; measured 0.042 of the bound.

    References
    ----------
    .. [src] [Dayi25, Section 3.2.1, eqs. (8)-(9); Condition 3 (App. C.1)]; the closed form derived in docs/lora.md.

    Examples
    --------
    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> p = lora.Problem(np.eye(4), np.array([1, -0.5, 0.8, 1.2]), np.array([1, 1, -1, 1]) / 2,
    ...                  np.array([1, -1, -1, -1]) / 2, xi=1.5)
    >>> round(lora.h0(p), 12)  # independently derived reference value
    -0.08497918195
    """
    return _cached(problem, "h0", lambda: h(problem, 0.0))  # read by limit_sign and the regime checks


def h_bound(problem):
    r"""Sharp sup bound of |h| on [-1, 1] (|K'(rho)| <= K'(1) by Cauchy-Schwarz).

    .. math:: \sup_{|m|\le1}|h(m)| \le 2\xi^2 K'(1)\Big(\sum_i\frac{|\lambda_i c_i|}{r_i}\Big)
              \Big(\sum_j\frac{|\lambda_j\hat c_j|}{\hat r_j}\Big) \le \frac{2K'(1)\lambda_{\max}^2 k\xi^2}{r^2}

    Parameters
    ----------
    problem : Problem

    Returns
    -------
    float

    Notes
    -----
    Regime: any sigma with ``K'(1) = E[sigma'(g)^2] < inf``. So C_sigma = 2 K'(1) works in Prop. 23.

    Accuracy: relative ``8 k eps``; measured 0.17.

    References
    ----------
    .. [src] derived in docs/lora.md (sharpens [Dayi25, Lemma 17 (App. C.2), Proposition 23]).

    Examples
    --------
    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> p = lora.Problem(np.eye(2), np.ones(2), np.ones(2) / np.sqrt(2), np.ones(2) / np.sqrt(2), xi=1.0,
    ...                  activation="linear")
    >>> round(lora.h_bound(p), 12) == round(lora.h(p, 0.3), 12)  # attained when K' is constant, c = c_hat
    True
    """
    a = np.sum(np.abs(problem.lam * problem.c) / problem.r)
    b = np.sum(np.abs(problem.lam * problem.c_hat) / problem.r_hat)
    return float(2 * problem.xi**2 * problem.sigma.Kprime1 * a * b)


def T_table(problem, s_max):
    r"""Moment-tensor factors T(l, s) of Prop. 4 for s = 0..s_max, via Hadamard powers of G.

    .. math:: T_{\rm odd}(s) = \Big\lVert\sum_i\lambda_i w_i^{\otimes s}\Big\rVert_F^2 = \lambda^\top G^{\circ s}\lambda,
              \qquad T_{\rm even}(s) = k\,(\lambda\circ c)^\top G^{\circ s}(\lambda\circ\hat c)

    Parameters
    ----------
    problem : Problem
    s_max : int
        Largest tensor order, >= 0.

    Returns
    -------
    (T_odd, T_even) : tuple of ndarray of shape (s_max + 1,)
        ``T(l, s)`` for odd l and for even l (it depends on l only through its parity).

    Notes
    -----
    Regime: A1-A2; ``G^{o 0}`` is the all-ones matrix (0^0 = 1). T_odd >= 0 for every PSD G (Schur).

    Accuracy: ``|dT(s)| <= 2 k (s + 2) eps sum_ij |lam_i lam_j| |G_ij|^s`` (T_even likewise with
    ``k |lam_i c_i lam_j c_hat_j|``), s up to 40; measured 0.10 (exact rationals).

    References
    ----------
    .. [src] [Dayi25, Section 1.4 (tensor identity), Proposition 4].

    Examples
    --------
    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> p = lora.Problem.orthonormal(k=3, xi=1.0, seed=0, lam=np.array([1.0, 2.0, 3.0]))
    >>> T_odd, _ = lora.T_table(p, 2)
    >>> T_odd.tolist()  # (sum lam)^2, then ||lam||^2 for s >= 1 (G = I)
    [36.0, 14.0, 14.0]
    """
    s_max = as_int("lora.T_table", "s_max", s_max, low=0)
    lam, G, k = problem.lam, problem.G, problem.k
    a, b = lam * problem.c, lam * problem.c_hat
    T_odd, T_even = np.empty(s_max + 1), np.empty(s_max + 1)
    Gs = np.ones_like(G)
    for s in range(s_max + 1):
        T_odd[s], T_even[s] = lam @ Gs @ lam, k * (a @ Gs @ b)
        Gs = Gs * G
    return T_odd, T_even


def h_series_coeffs(problem, L, P):
    r"""Power-series coefficients a_l of h(m) = sum_l a_l m^l (Prop. 4), truncated at Hermite degree P.

    .. math:: a_l = 2\sum_{s=0}^{P-l-1}\Big(\frac{\xi^2}{k}\Big)^{l+1}\binom{l+s}{l}(l+s+1)\,\mu_{l+s+1}^2\,
              \Big(\frac{1}{1+\xi^2/k}\Big)^{l+s+1}T(l,s)

    evaluated in log space as ``C(l+s, l) beta^(l+1) (1-beta)^s`` with ``beta = xi^2/(k + xi^2)``.

    Parameters
    ----------
    problem : Problem
        Must satisfy A3 (c, c_hat in {+-1/sqrt(k)}^k).
    L : int
        Largest power of m, in [0, P - 1].
    P : int
        Total Hermite degree ``p = l + s + 1 <= P`` kept (>= 1).

    Returns
    -------
    ndarray of shape (L + 1,)

    Notes
    -----
    Regime: A1-A3 (the split into odd/even l uses ``(c_i c_hat_j)^2 = 1/k^2``). The sums start at
    l = s = 0 (the paper's ``Z_{>0}`` is a misprint). Odd-l coefficients are >= 0 for every PSD G.

    Accuracy: through :func:`h` method "series" (``|dh| <= tol h_bound + 64 eps (S + P sum_l |a_l| |m|^l)``,
    measured 0.013).

    References
    ----------
    .. [src] [Dayi25, Proposition 4, its proof (App. D.1)].

    Examples
    --------
    For the quadratic activation (K'(rho) = 4 rho) h is linear in m and a_1 = 4 * 2 xi^4 ||lam||^2/(k r^2)^2 ... here k = 1:

    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> p = lora.Problem(np.eye(1), np.ones(1), np.ones(1), np.ones(1), xi=1.0, activation="quadratic")
    >>> np.round(lora.h_series_coeffs(p, 1, 2), 12)  # h = 2 xi^2/r^2 * 4 (1 + xi^2 m)/r^2 = 2 + 2 m
    array([2., 2.])
    """
    P = as_int("lora.h_series_coeffs", "P", P, low=1, high=10**6)
    L = as_int("lora.h_series_coeffs", "L", L, low=0, high=P - 1)
    _require_quantised(problem, "series")
    k, xi2 = problem.k, problem.xi**2
    T_odd, T_even = T_table(problem, P - 1)
    q = _kprime_coeffs(problem.sigma, P)
    log_beta, log_1mbeta = math.log(xi2 / (k + xi2)), math.log(k / (k + xi2))
    return _series_kernel(log_beta, log_1mbeta, q, T_odd, T_even, L)


def orthonormal_stats(problem):
    r"""The four sufficient statistics (P+, P-, D+, D-) of h for orthonormal features under A3.

    .. math:: P_\pm = \pm\frac1k\big(L_{b+}L_{\hat b\pm} + L_{b-}L_{\hat b\mp}\big),\quad
              D_+ = \frac1k\sum_{b_i=\hat b_i}\lambda_i^2,\quad D_- = -\frac1k\sum_{b_i\ne\hat b_i}\lambda_i^2

    with ``b = sqrt(k) c``, ``L_{b+-} = sum_{b_i = +-1} lam_i``; then
    ``h(m) = 2 xi^2/r^2 [P+ K'(beta m) + P- K'(-beta m) + D+ (K'(1-beta+beta m) - K'(beta m))
    + D- (K'(1-beta-beta m) - K'(-beta m))]``.

    Parameters
    ----------
    problem : Problem
        With G = I_k (A4) and quantised c, c_hat (A3).

    Returns
    -------
    tuple of 4 floats

    Notes
    -----
    Regime: A1-A4. ``P+ + P- = (sum lam c)(sum lam c_hat)`` and ``D+ + D- = sum lam^2 c c_hat``.

    Accuracy: ``|d| <= 2 k eps (sum |lam_i|)^2/k`` each; measured 0.21 (exact rationals).

    References
    ----------
    .. [src] derived in docs/lora.md (from [Dayi25, Section 3.2.1, App. D.4]).

    Examples
    --------
    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> p = lora.Problem(np.eye(2), np.ones(2), np.ones(2) / np.sqrt(2), np.array([1, -1]) / np.sqrt(2), xi=1.0)
    >>> [float(v) for v in lora.orthonormal_stats(p)]
    [1.0, -1.0, 0.5, -0.5]
    """
    _require_quantised(problem, "orthonormal")
    if not np.array_equal(problem.G, np.eye(problem.k)):
        raise InvalidParameterError("The 'method' parameter of lora.h may be 'orthonormal' only with G = I_k "
                                    "(A4, orthonormal features). Got 'orthonormal' with G != I; use method='kernel'.")
    k, lam = problem.k, problem.lam
    b, bh = np.sign(problem.c), np.sign(problem.c_hat)
    Lb = {s: lam[b == s].sum() for s in (1, -1)}
    Lh = {s: lam[bh == s].sum() for s in (1, -1)}
    P_plus = (Lb[1] * Lh[1] + Lb[-1] * Lh[-1]) / k
    P_minus = -(Lb[1] * Lh[-1] + Lb[-1] * Lh[1]) / k
    D_plus, D_minus = np.sum(lam[b == bh]**2) / k, -np.sum(lam[b != bh]**2) / k
    return float(P_plus), float(P_minus), float(D_plus), float(D_minus)


def population_loss(problem, m):
    r"""Population squared loss Phi(m) = E_x (f*(x) - f_hat(x))^2 (no 1/2), as a function of m.

    .. math:: \Phi(m) = \lambda^\top K(S)\lambda + \lambda^\top K(T)\lambda - 2\lambda^\top K(\rho(m))\lambda,
              \quad S_{ij} = \frac{G_{ij}+\xi^2\hat c_i\hat c_j}{\hat r_i\hat r_j},\;
              T_{ij} = \frac{G_{ij}+\xi^2 c_ic_j}{r_ir_j}

    with ``K(rho) = E[s(g1) s(g2)]`` applied entrywise.

    Parameters
    ----------
    problem : Problem
    m : float or ndarray
        Overlaps in [-1, 1].

    Returns
    -------
    float or ndarray of shape m.shape, >= 0 (rounding below 0 is clipped to 0)

    Notes
    -----
    Regime: population limit, A1-A2. Phi(1) = 0 when c_hat = c and Phi(-1) = 0 when c_hat = -c;
    otherwise Phi(+-1) > 0 (a frozen c_hat only finds the direction).

    Accuracy: absolute ``|dPhi| <= 32 eps sum_ij |lam_i lam_j| (|K(S_ij)| + |K(T_ij)| + 2|K(rho_ij)| + |K'| times
    the size (|G_ij| + |E_ij m|)/R_ij of each overlap)``: Phi -> 0 at m = +-1 when c_hat = +-c by cancellation of
    O(1) terms, so it is not relative there; never negative (clipped), exactly 0 at m = 1 when c_hat = c. Regime
    as :func:`h` (relu N1/N0, erf, he_n). Measured 0.023 of the bound (mpmath at 40 digits).

    References
    ----------
    .. [src] [Dayi25, App. C.1 (Phi), proof of Proposition 4 (App. D.1; the expansion)].

    Examples
    --------
    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> p = lora.Problem.orthonormal(k=4, xi=1.0, seed=0)
    >>> q = lora.Problem(p.G, p.lam, p.c, p.c, p.xi)   # c_hat = c
    >>> float(lora.population_loss(q, 1.0))
    0.0
    """
    m = check_overlap(m)
    return _as_output(m, np.maximum(_chunked(lambda mm: _loss_terms(problem, mm), m, problem.k), 0.0))


def _loss_terms(problem, m):
    """``lam^T K(S) lam + lam^T K(T) lam - 2 lam^T K(rho(m)) lam`` at the flat overlaps m, the kernel of the
    three terms evaluated in one call over their distinct pairs (:func:`_kernel_rows`); every term goes
    through the same arithmetic (Phi(1) = 0 exactly when c_hat = c)."""
    c, ch = problem.c, problem.c_hat
    terms = [(_kernel_rows(problem, "ss", ch, ch), np.ones(1)), (_kernel_rows(problem, "tt", c, c), np.ones(1)),
             (_kernel_rows(problem, "ts", c, ch), m)]
    xi2 = problem.xi**2
    rho = [((G + xi2 * np.multiply.outer(mm, E)) / R).ravel() for ((G, E, R), _), mm in terms]
    K = problem.sigma.K(np.clip(np.concatenate(rho), -1.0, 1.0))
    ends = np.cumsum([0] + [r.size for r in rho])
    ss, tt, ts = (K[a:b].reshape(mm.size, -1) @ w for ((_, w), mm), a, b in zip(terms, ends[:-1], ends[1:]))
    return ss + tt - 2 * ts


def _kernel_rows(problem, key, a, b):
    """The pairs of ``sum_ij lam_i lam_j K((G_ij + xi^2 m a_i b_j)/(|v_i| |v_j|))`` with distinct
    ``(G_ij, a_i b_j, |v_i||v_j|)`` as rows (G, E, R) and their summed weights, cached per problem and key
    (a handful for G = I and quantised c)."""
    return _cached(problem, ("kernel_sum", key), lambda: _kernel_table(problem.G, a, b, problem.lam, problem.xi))


def _kernel_table(G, a, b, lam, xi):
    """:func:`_kernel_rows`: the rows ``(G_ij, a_i b_j, r_i r_j)`` (``r = sqrt(1 + xi^2 a^2)``, likewise b), their
    distinct rows (transposed) and the summed weights ``lam_i lam_j`` of each."""
    ra, rb = np.sqrt(1 + xi**2 * a**2), np.sqrt(1 + xi**2 * b**2)
    full = np.stack((G.ravel(), np.outer(a, b).ravel(), np.outer(ra, rb).ravel()), axis=1)
    rows, inv = _unique_rows(full)
    weights = np.zeros(rows.shape[0])
    np.add.at(weights, inv, np.outer(lam, lam).ravel())
    return rows.T.copy(), weights


def population_gradient(problem, u, u_hat):
    r"""Population spherical gradient of Phi at u_hat: (I - u_hat u_hat^T) grad Phi = -h(m)(u - m u_hat).

    .. math:: \hat\nabla\Phi(\hat u) = -h(\langle u,\hat u\rangle)\,\big(u - \langle u,\hat u\rangle\hat u\big)

    Parameters
    ----------
    problem : Problem
    u : ndarray of shape (d,)
        Teacher direction, unit norm (taken orthogonal to span W, A2).
    u_hat : ndarray of shape (d,)
        Student direction, unit norm (orthogonal to span W).

    Returns
    -------
    ndarray of shape (d,)
        Orthogonal to u_hat; its component along u is ``-h(m)(1 - m^2)``.

    Notes
    -----
    Regime: population limit, A1-A2 (the coordinates of u, u_hat are those of span(W)^perp).

    Accuracy: ``||dg|| <= e_h(m) sqrt(1 - m^2) + 8 d eps |h(m)|`` with e_h the bound of :func:`h`; measured
    0.70 (u_hat within 1e-12 of +-u included).

    References
    ----------
    .. [src] [Dayi25, Proposition 4, App. C.1].

    Examples
    --------
    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> p = lora.Problem.orthonormal(k=4, xi=1.0, seed=0)
    >>> g = lora.population_gradient(p, np.array([1.0, 0.0]), np.array([0.6, 0.8]))
    >>> bool(abs(g @ np.array([0.6, 0.8])) < 1e-15)   # tangent to the sphere at u_hat
    True
    """
    u, u_hat = (_unit_vector(v, name) for v, name in ((u, "u"), (u_hat, "u_hat")))
    if u.shape != u_hat.shape:
        raise InvalidParameterError(f"The 'u_hat' parameter of lora.population_gradient must have the shape of u "
                                    f"{u.shape}. Got shape {u_hat.shape} instead.")
    m = float(np.clip(u @ u_hat, -1.0, 1.0))
    return -h(problem, m) * (u - m * u_hat)


def _unit_vector(v, name):
    a = np.asarray(v, dtype=np.float64)
    if a.ndim != 1 or not np.all(np.isfinite(a)) or not abs(np.linalg.norm(a) - 1) <= _UNIT_TOL:
        raise InvalidParameterError(f"The {name!r} parameter of lora.population_gradient must be a finite unit "
                                    f"vector of shape (d,). Got {v!r} instead.")
    return a
