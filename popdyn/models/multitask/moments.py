r"""Sign-conditioned ReLU-Gaussian moments of one neuron ([Collins24] Lemmas A.6-A.9; derived in docs/multitask.md).

For a neuron ``w = (w_par, w_perp)`` with ``s = ||w_perp||`` and ``x ~ N(0, I_d)`` conditioned on the sign
pattern ``u = sign(x_{1:r})`` (``x_par = u * y``, ``y_k`` half-normal), let ``a = w_par . x_par``:

.. math:: q(u) = \mathbb E[\phi(a/s)\mid u],\qquad p_k(u) = \mathbb E[\Phi(a_{-k}/s)\mid u],

    M_{\|,k}(u) = u_k\sqrt{2/\pi}\,p_k(u) + \frac{w_k}{s}q(u),\quad M_\perp(u) = q(u)\,\hat w_\perp,\quad
    S(u) = M(u)^\top w,

where ``M(u) = E[sigma'(w.x) x | u]`` and ``S(u) = E[sigma(w.x) | u]``. Two methods: the arcsin closed forms
(r <= 3, vectorised numpy) and the characteristic-function integrals on a geometric Gauss-Legendre grid in
tau (any r, accurate for every ``||w_par|| / s``; numba kernel with prefix/suffix products).
"""
from __future__ import annotations

import math
import warnings

import numba
import numpy as np
from scipy.special import dawsn

from ..._validate import InvalidParameterError, Options, check
from .tasks import sign_patterns

__all__ = ["sign_moments", "conditional_moments", "halfnormal_cf"]

_PHI0 = 1.0 / math.sqrt(2.0 * math.pi)
_GL_NODES = 16      # Gauss-Legendre nodes per panel
_GROWTH = 1.5       # largest ratio of consecutive panel edges
_GX, _GW = np.polynomial.legendre.leggauss(_GL_NODES)
_EXACT_RATIO = 30.0  # ||w_par||/s beyond which r = 3 is evaluated in mpmath (float loses eps ratio^2 relative)
_QUAD_RATIO = 1e4   # ||w_par||/s beyond which the quadrature's relative error (about eps ratio^2) exceeds 1e-8


def halfnormal_cf(beta):
    r"""Characteristic function of the half-normal ``|g|``, ``g ~ N(0, 1)``.

    .. math:: \psi(\beta) = \mathbb E[e^{i\beta|g|}] = e^{-\beta^2/2} + \frac{2i}{\sqrt\pi}\,D(\beta/\sqrt2)

    with ``D`` Dawson's integral. ``psi(-beta) = conj(psi(beta))``.

    Notes
    -----
    Accuracy: relative error <= 2e-15 (complex modulus) for every real beta, against e^(-b^2/2) (1 + i erfi(b/sqrt
    2)) in mpmath (measured: 0.77 of the declared bound).
    Regime: any real beta (scipy's Dawson function, relative accuracy ~1e-15); ``|psi| ~ 1/beta`` for large beta.

    References
    ----------
    .. [src] derived in docs/multitask.md (the half-normal characteristic function of the 1-D integral
       representation).

    Examples
    --------
    >>> complex(halfnormal_cf(0.0))
    (1+0j)
    """
    beta = np.asarray(beta, dtype=np.float64)
    return np.exp(-0.5 * beta * beta) + (2j / math.sqrt(math.pi)) * dawsn(beta / math.sqrt(2.0))


def _check_neurons(owner, w_par, s):
    w_par = np.array(w_par, dtype=np.float64)
    if w_par.ndim == 1:
        w_par = w_par[None, :]
    s = np.atleast_1d(np.array(s, dtype=np.float64))
    if w_par.ndim != 2 or w_par.shape[1] < 1 or not np.all(np.isfinite(w_par)):
        raise InvalidParameterError(f"The 'w_par' parameter of {owner} must be a finite (m, r) array with r >= 1. "
                                    f"Got shape {w_par.shape} instead.")
    if s.shape != (w_par.shape[0],) or not np.all(np.isfinite(s)) or not np.all(s > 0):
        raise InvalidParameterError(f"The 's' parameter of {owner} must be a positive finite array of shape "
                                    f"({w_par.shape[0]},) (s = ||w_perp|| > 0; s = 0 means d = r, which is "
                                    f"degenerate). Got {s!r} instead.")
    return w_par, s


# ---- arcsin closed forms (r <= 3) ---------------------------------------------------------------------------

def _arcsin_moments(w_par, s):
    m, r = w_par.shape
    U = sign_patterns(r)
    P = U.shape[0]
    nw = np.sqrt((w_par ** 2).sum(1) + s ** 2)                          # ||w||
    base = 2 ** r * _PHI0 * s / nw                                      # q = 2^r phi(0) Q s/||w||
    q = np.empty((m, P))
    p = np.empty((m, P, r))
    C = U[None, :, :] * w_par[:, None, :]                                # c_k = u_k w_k  (m, P, r)
    if r == 1:
        q[:] = base[:, None] / 2
        p[:] = 0.5
        return q, p
    sq = w_par ** 2
    others = lambda *ks: sum(sq[:, l] for l in range(r) if l not in ks) + s ** 2  # noqa: E731 (no subtraction)
    nk = np.sqrt(np.stack([others(k) for k in range(r)], axis=1))      # ||w_{-k}|| (with s)
    if r == 2:  # orth = acos(-rho)/(2 pi), with 1 + rho = s^2 ||w||^2 / (nk_1 nk_2 (nk_1 nk_2 + |w_1 w_2|)) exactly
        prod, cross = nk[:, 0] * nk[:, 1], np.abs(w_par[:, 0] * w_par[:, 1])
        gap = (s * nw) ** 2 / (prod * (prod + cross))                   # 1 - |rho|
        same = U[:, 0] * U[:, 1] * np.sign(w_par[:, 0] * w_par[:, 1])[:, None]  # rho = -same |rho|
        near = 2 * np.arcsin(np.sqrt(gap / 2))[:, None]                 # acos(1 - gap)
        orth = np.where(same > 0, near, np.pi - near) / (2 * np.pi)
    else:  # r = 3: 1/8 + sum asin(rho)/(4 pi) cancels to relative eps (||w_par||/s)^2: those neurons in mpmath
        orth = _orthant3(U, w_par, nk)
        for j in np.flatnonzero(np.linalg.norm(w_par, axis=1) > _EXACT_RATIO * s):
            orth[j] = _orthant3_mp(U, w_par[j], s[j])
    q[:] = base[:, None] * orth
    for k in range(r):  # asin(c_l / ||w_{-k}||) = atan2(c_l, ||w_{-k,-l}||): no loss near |c_l| = ||w_{-k}||
        p[:, :, k] = 0.5 + sum(np.arctan2(C[:, :, l], np.sqrt(others(k, l))[:, None]) for l in range(r) if l != k) / math.pi
    return q, p


def _orthant3(U, w_par, nk):
    """Trivariate orthant probabilities 1/8 + sum_{k<l} asin(rho_kl)/(4 pi) of every neuron and pattern (float)."""
    orth = np.full((len(w_par), len(U)), 0.125)
    for k, l in ((0, 1), (0, 2), (1, 2)):
        rho = -(U[:, k] * U[:, l])[None, :] * (w_par[:, k] * w_par[:, l] / (nk[:, k] * nk[:, l]))[:, None]
        orth += np.arcsin(np.clip(rho, -1, 1)) / (4 * math.pi)
    return orth


def _orthant3_mp(U, w, s):
    """:func:`_orthant3` for one neuron in mpmath, with digits to spare for the cancellation (||w_par||/s)^2."""
    import mpmath as mp
    with mp.workdps(20 + int(2 * math.log10(max(np.linalg.norm(w) / s, 10.0)))):
        w, s2 = [mp.mpf(float(x)) for x in w], mp.mpf(float(s)) ** 2
        nk = [mp.sqrt(sum(w[l] ** 2 for l in range(3) if l != k) + s2) for k in range(3)]
        return np.array([float(mp.mpf(1) / 8 + sum(mp.asin(-u[k] * u[l] * w[k] * w[l] / (nk[k] * nk[l]))
                                                   for k, l in ((0, 1), (0, 2), (1, 2))) / (4 * mp.pi)) for u in U])


# ---- quadrature (any r) ------------------------------------------------------------------------------------

def _grid(w_par, s):
    """Per-neuron composite Gauss-Legendre nodes in tau on [0, 9/s]: one panel [0, h0], then geometric panels.

    ``h0 = min(1/||w_par||, 1/s)/4`` resolves the slow (power-law) decay of psi when ``||w_par|| >> s``; the
    Gaussian factor ``exp(-s^2 tau^2/2)`` is below 3e-18 at ``9/s``. Every neuron gets the same number of
    panels, with edge ratios <= 1.5.
    """
    cn = np.maximum(np.linalg.norm(w_par, axis=1), 1e-300)
    h0 = np.minimum(1.0 / cn, 1.0 / s) / 4.0
    ratio = (9.0 / s) / h0
    panels = 1 + max(1, int(np.ceil(np.log(ratio.max()) / np.log(_GROWTH))))
    g = ratio ** (1.0 / (panels - 1))
    edges = np.concatenate([np.zeros((len(s), 1)), h0[:, None] * g[:, None] ** np.arange(panels)], axis=1)
    a, b = edges[:, :-1], edges[:, 1:]
    tau = (0.5 * (b - a)[:, :, None] * _GX + 0.5 * (b + a)[:, :, None]).reshape(len(s), -1)
    wt = (0.5 * (b - a)[:, :, None] * _GW).reshape(len(s), -1)
    return tau, wt


@numba.njit(cache=True, fastmath=False)
def _quad_kernel(psi, wq, wp, signs):  # pragma: no cover - compiled
    """q (m, P), p (m, P, r) from psi (m, r, N) = psi(tau w_k), weights wq = s/pi e^{-s^2 tau^2/2} dtau and
    wp = e^{-s^2 tau^2/2} dtau/(pi tau). Patterns u and -u are conjugate: only the first half is integrated."""
    m, r, N = psi.shape
    P = signs.shape[0]
    q = np.empty((m, P))
    p = np.empty((m, P, r))
    pre = np.empty(r + 1, dtype=np.complex128)
    suf = np.empty(r + 1, dtype=np.complex128)
    for j in range(m):
        for i in range(P // 2):
            qi = 0.0
            acc = np.zeros(r)
            for n in range(N):
                pre[0] = 1.0
                for k in range(r):
                    z = psi[j, k, n]
                    if signs[i, k] < 0:
                        z = z.conjugate()
                    pre[k + 1] = pre[k] * z
                suf[r] = 1.0
                for k in range(r - 1, -1, -1):
                    z = psi[j, k, n]
                    if signs[i, k] < 0:
                        z = z.conjugate()
                    suf[k] = suf[k + 1] * z
                qi += wq[j, n] * pre[r].real
                for k in range(r):
                    acc[k] += wp[j, n] * (pre[k] * suf[k + 1]).imag
            q[j, i] = qi
            q[j, P - 1 - i] = qi
            for k in range(r):
                p[j, i, k] = 0.5 + acc[k]
                p[j, P - 1 - i, k] = 0.5 - acc[k]
    return q, p


def _quad_moments(w_par, s):
    ratio = float(np.max(np.linalg.norm(w_par, axis=1) / s))
    if ratio > _QUAD_RATIO:
        warnings.warn(f"multitask.sign_moments: ||w_par|| / s = {ratio:.3g} > {_QUAD_RATIO:g}: the quadrature's q is "
                      f"accurate to about {2e-16 * ratio ** 2:.1g} relative only (p stays accurate to 1e-15)",
                      RuntimeWarning, stacklevel=3)
    tau, wt = _grid(w_par, s)
    gauss = np.exp(-0.5 * (s[:, None] * tau) ** 2) * wt
    psi = halfnormal_cf(tau[:, None, :] * w_par[:, :, None])             # (m, r, N)
    return _quad_kernel(psi, gauss * s[:, None] / math.pi, gauss / (math.pi * tau), sign_patterns(w_par.shape[1]))


def sign_moments(w_par, s, method="auto"):
    r"""Sign-conditioned moments ``q(u)`` and ``p_k(u)`` of each neuron, for every sign pattern u.

    .. math:: q(u) = \frac{s}{\pi}\int_0^\infty e^{-s^2\tau^2/2}\,\mathrm{Re}\prod_k\psi(\tau u_kw_k)\,d\tau,\qquad
              p_k(u) = \frac12 + \frac1\pi\int_0^\infty e^{-s^2\tau^2/2}\,
              \frac{\mathrm{Im}\prod_{l\ne k}\psi(\tau u_lw_l)}{\tau}\,d\tau

    Parameters
    ----------
    w_par : array_like of shape (m, r) or (r,)
        Ground-truth parts of the neurons.
    s : array_like of shape (m,) or float
        Norms ``||w_perp|| > 0`` of their spurious parts.
    method : {"auto", "arcsin", "quad"}
        "arcsin": closed forms (r <= 3, Sheppard/orthant probabilities); "quad": composite Gauss-Legendre on a
        geometric grid in tau (numba, O(r) per pattern and node by prefix/suffix products); "auto": arcsin for
        r <= 3, else quad.

    Returns
    -------
    q : ndarray of shape (m, 2**r)
        ``0 < q <= phi(0)``.
    p : ndarray of shape (m, 2**r, r)
        ``0 <= p_k <= 1``.

    Notes
    -----
    Regime: any ``s > 0`` and any ``||w_par||``. Accuracy (tests: against the closed forms in mpmath at 40 digits over Hypothesis-drawn neurons with
    ``||w_par|| / s`` from 1e-3 to 1e8 and ``s`` from 1e-3 to 1e3): r <= 3 ("arcsin"), absolute error of p
    <= 1e-14 and relative error of q <= 1e-12 everywhere (r = 2 by a cancellation-free acos form, p by atan2, r = 3
    neurons with ``||w_par|| / s > 30`` in mpmath); "quad" (any r), absolute error of p <= 1e-14, relative error of q about
    2e-16 (||w_par||/s)^2 (1e-8 at a ratio of 1e4: beyond it a RuntimeWarning states the accuracy).
    Gauss-Hermite in ``t = s tau`` would be off by up to 0.5 when ``||w_par|| >> s``.
    ``q(-u) = q(u)`` and ``p_k(-u) = 1 - p_k(u)`` exactly.

    References
    ----------
    .. [src] [Collins24, Lemma A.6, Lemmas A.7-A.9]; the closed forms and quadrature derived in docs/multitask.md.

    Examples
    --------
    >>> q, p = sign_moments([[0.3]], [1.0])           # r = 1: p = 1/2, q = phi(0) s/||w||
    >>> bool(np.allclose(q, 0.3989422804014327 / np.hypot(0.3, 1.0))), p.ravel().tolist()
    (True, [0.5, 0.5])
    """
    owner = "multitask.sign_moments"
    method = check(owner, "method", method, Options(("auto", "arcsin", "quad")))
    w_par, s = _check_neurons(owner, w_par, s)
    r = w_par.shape[1]
    if method == "arcsin" and r > 3:
        raise InvalidParameterError(f"The 'method' parameter of {owner} can be 'arcsin' only for r <= 3 (no closed "
                                    f"form beyond). Got 'arcsin' with r = {r} instead.")
    if method == "arcsin" or (method == "auto" and r <= 3):
        return _arcsin_moments(w_par, s)
    return _quad_moments(w_par, s)


def conditional_moments(w_par, s, method="auto"):
    r"""``M(u) = E[sigma'(w.x) x | u]`` and ``S(u) = E[sigma(w.x) | u]`` in the reduced coordinates.

    .. math:: M_{\|,k}(u) = u_k\sqrt{2/\pi}\,p_k(u) + \frac{w_k}{s}\,q(u),\qquad
              M_\perp(u) = q(u)\,\frac{w_\perp}{s},\qquad
              S(u) = \sqrt{2/\pi}\sum_k w_ku_kp_k(u) + \frac{\|w\|^2}{s}\,q(u)

    Parameters
    ----------
    w_par, s, method
        As in :func:`sign_moments`.

    Returns
    -------
    M_par : ndarray of shape (m, 2**r, r)
    m_perp : ndarray of shape (m, 2**r)
        Coefficient of ``w_perp / s`` in ``M(u)``.
    S : ndarray of shape (m, 2**r)
        ``S >= 0``; ``E_u S = ||w||/sqrt(2 pi)`` and ``grad_w S(u) = M(u)``.

    Notes
    -----
    Accuracy (r <= 3, tests/test_accuracy_multitask.py): M_par, m_perp and S within 1e-12 of their absolute scale
    (the same expression with every term replaced by its absolute value and p_k by p_k + 1/100: sign_moments' q
    relative 1e-12 and p absolute 1e-14 carried through the sums); ``u_k M_k >= 0`` and ``S >= 0`` always (clamped:
    at ||w_par||/s = 1e8 the float sum crossed zero, S = -2e-8 against 6e-9) (measured: 0.0078 of the declared
    bound; M_par measured: 0.0087 of the declared bound). r >= 4: the quadrature accuracy of :func:`sign_moments`
    carried through (not separately tested).
    Regime: exact for any ``s > 0`` (the accuracy of :func:`sign_moments`); ``M(u)`` lies in the span of
    ``e_1..e_r`` and ``w_perp/s``.

    References
    ----------
    .. [src] [Collins24, Lemma A.6]; M and S through the half-normal Stein identity, derived in docs/multitask.md.

    Examples
    --------
    >>> M_par, m_perp, S = conditional_moments([[0.6]], [0.8])   # r = 1: S(u) = (u w_1 + ||w||)/sqrt(2 pi)
    >>> bool(np.allclose(S, [[0.4 / np.sqrt(2 * np.pi), 1.6 / np.sqrt(2 * np.pi)]]))
    True
    """
    w_par, s = _check_neurons("multitask.conditional_moments", w_par, s)
    q, p = sign_moments(w_par, s, method)
    U = sign_patterns(w_par.shape[1])
    M_par = U[None] * math.sqrt(2.0 / math.pi) * p + (w_par / s[:, None])[:, None, :] * q[:, :, None]
    S = np.einsum("mpk,mk->mp", M_par, w_par) + s[:, None] * q
    # u_k M_k = E[sigma' |x_k| | u] >= 0 and S >= 0: where the two terms cancel (u_k w_k < 0, ||w_par|| >> s) the
    # rounding can cross zero; clamping only moves the value towards the (non-negative) truth
    M_par = U[None] * np.maximum(U[None] * M_par, 0.0)
    return M_par, q, np.maximum(S, 0.0)
