"""Fourier diagnostics of the transformer of the modular-addition chapter ([Shi24] Section 4.5, Fig. 4.3, App.
C.10.3); the problem is :class:`~popdyn.models.modular.TransformerProblem` (``problem.py``), its training
:mod:`popdyn.sim.modular.transformer` (torch).

Public names
------------
attention_matrices, power_spectrum_2d, attention_diagnostics
    Token-space attention matrices ``E^T W^K_h W^Q_h^T E`` of every head (Fig. 4.3) and their folded 2-D spectra.
embedding_spectrum
    Share of the embedding's energy per frequency (Fourier sparsity of ``E``).
neuron_maps
    First-order maps ``u_{i,j}(a)`` of MLP pre-activations over D_p: the network (4.2) form of the MLP, so that
    :func:`~popdyn.models.modular.fourier_diagnostics` and :func:`~popdyn.models.modular.circuit_table` apply.

Docs: docs/modular.md (the transformer section).
"""
from __future__ import annotations

import numpy as np

from ..._validate import FiniteArray, InvalidParameterError, check
from .problem import _check_pk

__all__ = ["attention_matrices", "power_spectrum_2d", "attention_diagnostics", "embedding_spectrum", "neuron_maps"]


def _fold_matrix(p):
    """(p//2 + 1, p) 0/1 matrix summing the DFT bins j and p - j into the folded bin min(j, p - j)."""
    j = np.arange(p)
    Q = np.zeros((p // 2 + 1, p))
    Q[np.minimum(j, p - j), j] = 1.0
    return Q


def power_spectrum_2d(M):
    r"""Folded 2-D power spectrum of real matrices over ``Z_p x Z_p``, bins ``(0..p//2)^2``, normalised to sum 1.

    .. math:: P_M(j_1, j_2) = \frac{\sum_{\pm,\pm}|\hat M(\pm j_1, \pm j_2)|^2}{\sum_{l_1, l_2}|\hat M(l_1, l_2)|^2},
              \qquad \hat M(j_1, j_2) = \sum_{a, b} M(a, b)\,e^{-2\pi i (j_1 a + j_2 b)/p}

    (the sum runs over the distinct sign choices). ``max P_M`` is 1 exactly when M is a 2-D cosine at one
    frequency pair, e.g. ``cos(2 pi zeta a/p + phi) cos(2 pi zeta' b/p + psi)`` or ``cos(2 pi zeta (a + b)/p)``.

    Parameters
    ----------
    M : ndarray of shape (..., p, p)
        Real square matrices (e.g. the attention matrices of :func:`attention_matrices`).

    Returns
    -------
    ndarray of shape (..., p//2 + 1, p//2 + 1)
        Energy shares (Parseval: each bin is the energy of M in that frequency pair); 0 for M = 0.

    Notes
    -----
    Regime: any real matrices. The two-sided definition (the 2-D analogue of Fig. 4.2's) caps a product of cosines at
    1/4; folding the four sign bins is the 2-D analogue of the one-sided ``power_spectrum`` (docs/modular.md).

    References
    ----------
    .. [src] [Shi24, Section 4.4.1 (normalized power), Section 4.5 (Fig. 4.3: "2-dim Fourier power
       spectrum")].

    Examples
    --------
    >>> a = np.arange(7)
    >>> M = np.outer(np.cos(2 * np.pi * 2 * a / 7 + 0.4), np.sin(2 * np.pi * 3 * a / 7))
    >>> P = power_spectrum_2d(M)
    >>> P.shape, round(float(P[2, 3]), 12)
    ((4, 4), 1.0)
    """
    M = np.asarray(M, dtype=np.float64)
    if M.ndim < 2 or M.shape[-1] != M.shape[-2] or M.shape[-1] < 2 or not np.all(np.isfinite(M)):
        raise InvalidParameterError("The 'M' parameter of modular.power_spectrum_2d must be a finite float array "
                                    f"of shape (..., p, p), p >= 2. Got shape {M.shape} instead.")
    Q = _fold_matrix(M.shape[-1])
    P = Q @ (np.abs(np.fft.fft2(M)) ** 2) @ Q.T
    tot = P.sum(axis=(-2, -1), keepdims=True)
    return np.divide(P, tot, out=np.zeros_like(P), where=tot > 0)


def _check_weights(owner, E, WQ, WK):
    E = check(owner, "E", E, FiniteArray(2))
    WQ = check(owner, "WQ", WQ, FiniteArray(3, (None, E.shape[1], None)))
    WK = check(owner, "WK", WK, FiniteArray(3, WQ.shape))
    return E, WQ, WK


def attention_matrices(E, WQ, WK):
    r"""Token-space attention matrices of every head: ``M_h = E W^K_h W^{Q T}_h E^T`` (key token x query token).

    .. math:: M_h(a, b) = E_a^{\top}\,W^{KQ}_h\,E_b,\qquad W^{KQ}_h = W^K_h W^{Q\top}_h

    Parameters
    ----------
    E : ndarray of shape (p, d_model)
        Token embeddings (one row per residue).
    WQ : ndarray of shape (heads, d_model, d_head)
        Query maps of one layer.
    WK : ndarray of shape (heads, d_model, d_head)
        Key maps of the same layer.

    Returns
    -------
    ndarray of shape (heads, p, p)
        ``M_h(a, b)``: the pre-softmax score (times sqrt(d_head), without positions) that a query token b gives
        a key token a; Fig. 4.3 plots it for random heads.

    Notes
    -----
    Regime: any weights; for the first layer (later layers see mixed residuals, not tokens).

    References
    ----------
    .. [src] [Shi24, Section 4.5] (W^{KQ}, Fig. 4.3).

    Examples
    --------
    >>> E = np.eye(3)
    >>> attention_matrices(E, np.ones((1, 3, 1)), np.ones((1, 3, 1))).tolist()
    [[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]
    """
    E, WQ, WK = _check_weights("modular.attention_matrices", E, WQ, WK)
    return np.matmul(E @ WK, np.swapaxes(E @ WQ, 1, 2))                 # (heads, p, d_head) x (heads, d_head, p)


def attention_diagnostics(E, WQ, WK):
    r"""Per-head 2-D Fourier diagnostics of the attention matrices (Fig. 4.3), softmax-invariant part removed.

    .. math:: \bar M_h(a, b) = M_h(a, b) - \frac1p\sum_{a'} M_h(a', b),\qquad
              \mathrm{power}_h = \max_{j_1, j_2} P_{\bar M_h}(j_1, j_2),\qquad
              \mathrm{frequency\_power}_h = \max_{\zeta \ge 1}\big(P_{\bar M_h}(\zeta, 0)
              + P_{\bar M_h}(\zeta, \zeta)\big)

    A constant over the keys a (for each query b) does not change the softmax over the keys, so it is removed.
    A head that computes with one frequency zeta scores ``alpha cos(2 pi zeta a/p + phi) + beta cos(2 pi zeta a/p
    + phi') cos(2 pi zeta b/p + psi)``: all its power lies in the bins (zeta, 0) and (zeta, zeta).

    Parameters
    ----------
    E : ndarray of shape (p, d_model)
    WQ : ndarray of shape (heads, d_model, d_head)
    WK : ndarray of shape (heads, d_model, d_head)

    Returns
    -------
    dict
        ``matrices`` (heads, p, p), the centred matrices ``M_h - mean over keys``; ``spectrum`` (heads, p//2+1,
        p//2+1) from :func:`power_spectrum_2d` (key frequency first); ``max_power`` (heads,), 1 for a 2-D
        cosine at one frequency pair; ``frequency_power`` (heads,), 1 for a head with one frequency;
        ``dominant_frequency`` (heads,) that frequency (key side, 1..p//2); ``dominant_pair`` (heads, 2), the
        argmax bin.

    Notes
    -----
    Regime: any weights. Fig. 4.3 reports 2-D cosines ("an apparent 2-dim cosine shape") without a number.

    References
    ----------
    .. [src] [Shi24, Section 4.5 (Fig. 4.3), App. C.10.3 (Figs. C.5, C.6)].

    Examples
    --------
    >>> a = np.arange(5)
    >>> E = np.stack([np.cos(2 * np.pi * a / 5), np.sin(2 * np.pi * a / 5)], 1)
    >>> d = attention_diagnostics(E, np.eye(2)[None], np.eye(2)[None])   # M(a, b) = cos(2 pi (a - b)/5)
    >>> round(float(d["max_power"][0]), 12), d["dominant_pair"].tolist(), round(float(d["frequency_power"][0]), 12)
    (1.0, [[1, 1]], 1.0)
    """
    E, WQ, WK = _check_weights("modular.attention_diagnostics", E, WQ, WK)
    M = attention_matrices(E, WQ, WK)
    M = M - M.mean(axis=1, keepdims=True)
    P = power_spectrum_2d(M)
    z = np.arange(1, P.shape[1])
    single = P[:, z, 0] + P[:, z, z]                                             # (heads, p//2)
    pair = np.stack(np.unravel_index(P.reshape(len(P), -1).argmax(axis=1), P.shape[1:]), axis=1)
    return {"matrices": M, "spectrum": P, "max_power": P.max(axis=(1, 2)), "frequency_power": single.max(axis=1),
            "dominant_frequency": 1 + single.argmax(axis=1), "dominant_pair": pair}


def embedding_spectrum(E):
    r"""Share of the embedding's energy in each frequency, summed over the embedding directions (Parseval).

    .. math:: S(j) = \frac{c_j \sum_{d}|\hat E_d(j)|^2}{p\,\|E\|_F^2},\qquad c_0 = 1,\ c_j = 2\ (1 \le j \le
              \tfrac{p-1}{2}),\qquad \hat E_d(j) = \sum_a E_{a,d}\,e^{-2\pi i j a/p}

    Parameters
    ----------
    E : ndarray of shape (p, d_model)
        Token embeddings, one row per residue; p odd.

    Returns
    -------
    ndarray of shape ((p+1)//2,)
        ``S(0..(p-1)/2)``, summing to 1 (0 for E = 0). A Fourier-sparse embedding puts its energy in a few
        bins; a random one spreads it as ``2/p`` per non-zero bin on average.

    Notes
    -----
    Regime: any real embedding with p odd (no Nyquist bin).

    References
    ----------
    .. [src] [Shi24, Section 4.4.1 (Fourier power of embeddings), Fig. 4.3].

    Examples
    --------
    >>> a = np.arange(7)
    >>> E = np.stack([np.cos(2 * np.pi * 3 * a / 7), 0.5 + 0 * a], 1)
    >>> embedding_spectrum(E).round(12).tolist()
    [0.333333333333, 0.0, 0.0, 0.666666666667]
    """
    E = check("modular.embedding_spectrum", "E", E, FiniteArray(2))
    p = E.shape[0]
    if p < 3 or p % 2 == 0:
        raise InvalidParameterError("The 'E' parameter of modular.embedding_spectrum must have an odd number "
                                    f"p >= 3 of rows (one per residue). Got shape {E.shape} instead.")
    P = (np.abs(np.fft.rfft(E, axis=0)) ** 2).sum(axis=1)
    P[1:] *= 2.0
    tot = P.sum()
    return P / tot if tot > 0 else P


def neuron_maps(preactivation, p, k):
    r"""First-order maps of neurons' pre-activations over D_p, in the form ``U`` (m, k, p) of the network (4.2).

    .. math:: u_{i,j}(a) = \mathbb E[h_i(\mathbf a)\mid a_j = a] - \mathbb E[h_i],\qquad
              \rho_i = \frac{\sum_j \mathrm{Var}\,u_{i,j}(a_j)}{\mathrm{Var}\,h_i(\mathbf a)}

    with ``a`` uniform on D_p. On the full grid the maps are orthogonal (ANOVA), so ``rho_i`` in [0, 1] is the
    share of the neuron's variance that is additive over the summands: ``h_i = sum_j u_{i,j}(a_j) + const`` when
    ``rho_i = 1``, which is the pre-activation of (4.2). With the output map ``w_i = W_out[i] W_U`` the pair
    ``(U, W)`` goes into :func:`~popdyn.models.modular.fourier_diagnostics` and ``circuit_table``.

    Parameters
    ----------
    preactivation : ndarray of shape (p**k, m)
        ``h_i(a)`` at every input, in :func:`~popdyn.models.modular.all_inputs` order.
    p : int
        Modulus, an odd prime.
    k : int
        Number of summands, >= 2.

    Returns
    -------
    U : ndarray of shape (m, k, p)
    rho : ndarray of shape (m,)
        Additive share of the variance (NaN where a neuron's pre-activation is constant).

    Notes
    -----
    Regime: any function on the full D_p. For a transformer whose read-out attends uniformly to the k summands
    the MLP pre-activation is exactly additive (rho = 1), and the MLP is the network (4.2) with sigma for x^k.

    References
    ----------
    .. [src] [Shi24, eq. (4.2), Section 4.5 ("a learning mechanism similar to neural networks")]; derived
       in docs/modular.md.

    Examples
    --------
    >>> from popdyn.models.modular import all_inputs
    >>> A = all_inputs(5, 2)
    >>> U, rho = neuron_maps((np.cos(2 * np.pi * A[:, 0] / 5) + A[:, 1] ** 2)[:, None], 5, 2)
    >>> U.shape, round(float(rho[0]), 12)
    ((1, 2, 5), 1.0)
    """
    p, k = _check_pk("modular.neuron_maps", p, k)
    H = check("modular.neuron_maps", "preactivation", preactivation, FiniteArray(2, (p ** k, None)))
    m = H.shape[1]
    T = (H - H.mean(axis=0)).reshape((p,) * k + (m,))
    U = np.stack([T.mean(axis=tuple(i for i in range(k) if i != j)) for j in range(k)], axis=1)   # (p, k, m)
    var = T.reshape(-1, m).var(axis=0)
    add = (U ** 2).mean(axis=0).sum(axis=0)
    rho = np.divide(add, var, out=np.full(m, np.nan), where=var > 1e-300)
    return np.ascontiguousarray(U.transpose(2, 1, 0)), rho
