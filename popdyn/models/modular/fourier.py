"""Fourier side of the k-input modular addition theory: the single-neuron margin Psi, its maximisers, the
explicit max-margin network and the multi-dimensional DFT of the logits ([Shi24] App. C)."""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..._validate import Integer, InvalidParameterError, Options, check
from .network import _pow2, check_network, norm
from .problem import _check_pk, construction_width, max_margin, sqrt_ratio

__all__ = ["single_neuron_margin", "optimal_neuron", "max_margin_network", "construction_logit",
           "construction_margin", "margin_dft"]


def _psi_direct(u, w):
    k, p = u.shape
    a = np.indices((p,) * k).reshape(k, -1)
    pre = sum(u[j][a[j]] for j in range(k))
    s = a.sum(axis=0) % p
    return float(np.mean(pre ** k * (w[s] - (w.sum() - w[s]) / (p - 1))))


def _psi_fourier(u, w):
    k, p = u.shape
    prod = np.prod(np.fft.fft(u, axis=1), axis=0)  # prod_i u_i^(j)
    w_minus = np.conj(np.fft.fft(w))                # w^(-j) for real w
    return float(math.factorial(k) / ((p - 1) * p ** k) * np.real(np.sum(w_minus[1:] * prod[1:])))


_PSI = {"fourier": _psi_fourier, "direct": _psi_direct}


def single_neuron_margin(u, w, *, method="fourier"):
    r"""Single-neuron class-weighted margin Psi (expected g' of one neuron, uniform q and tau).

    .. math:: \Psi(u, w) = \mathbb E_{\mathbf a}\Big[\Big(\sum_j u_j(a_j)\Big)^k\Big(w(s) - \frac{1}{p-1}
              \sum_{c \ne s} w(c)\Big)\Big] = \frac{k!}{(p-1)p^k}\sum_{j \ne 0}\hat w(-j)\prod_{i=1}^k \hat u_i(j)

    Parameters
    ----------
    u : ndarray of shape (k, p)
        The neuron's input embeddings ``u_1..u_k``.
    w : ndarray of shape (p,)
        The neuron's output weights.
    method : {"fourier", "direct"}
        "fourier": eq. (C.10), ``O(k p log p)``; "direct": the mean over all ``p^k`` inputs.

    Returns
    -------
    float
        At most ``gamma* (||u||^2 + ||w||^2)^{(k+1)/2}``; (k+1)-homogeneous.

    Notes
    -----
    Accuracy: absolute error <= (k^2 + 2 log2(p^k) + 8) eps max(S_direct, S_fourier) + 2^-1073, S_direct = mean_a
    |pre|^k (|w(s)| + mean|w|), S_fourier = k!/((p-1)p^k) sum_j |w^(j)| prod|u_i^(j)|; never NaN (evaluated at
    max|theta| ~ 1 and scaled back exactly; +-inf past float64) (fourier measured: 0.017 of the declared bound,
    direct measured: 0.012 of the declared bound).
    Regime: any real u, w (no zero-mean assumption: the terms missing some a_i cancel, docs/modular.md);
    ``s = (a_1 + ... + a_k) mod p``; DFT ``u^(j) = sum_x u(x) exp(-2 pi i j x / p)`` (numpy.fft.fft).

    References
    ----------
    .. [src] [Shi24, Definitions C.12-C.13, Lemma C.14, eqs. (C.9)-(C.10)].

    Examples
    --------
    >>> u, w = optimal_neuron(7, 2)  # a unit cosine neuron reaches gamma*
    >>> bool(np.isclose(single_neuron_margin(u, w), max_margin(7, 2), rtol=1e-12))
    True
    """
    method = check("modular.single_neuron_margin", "method", method, Options(tuple(_PSI)))
    U, W = check_network("modular.single_neuron_margin", np.asarray(u, dtype=float)[None], np.asarray(w, dtype=float)[None])
    c = _pow2(U, W)           # Psi is (k+1)-homogeneous: evaluate at max|theta| in [1/2, 1), scale back exactly
    e = -math.frexp(c)[1] + 1
    try:
        return math.ldexp(_PSI[method](U[0] * c, W[0] * c), e * (U.shape[1] + 1))
    except OverflowError:
        return math.copysign(math.inf, _PSI[method](U[0] * c, W[0] * c))


def optimal_neuron(p, k, zeta=1, phases=None):
    r"""A maximiser of Psi on the unit ball: cosines of one frequency zeta whose phases add up.

    .. math:: u_j(a) = \sqrt{\tfrac{2}{(k+1)p}}\cos\big(\theta_j + 2\pi\zeta a/p\big),\qquad
              w(c) = \sqrt{\tfrac{2}{(k+1)p}}\cos\Big(\sum_{j=1}^k\theta_j + 2\pi\zeta c/p\Big)

    Parameters
    ----------
    p : int
        Odd prime modulus.
    k : int
        Number of summands, >= 2.
    zeta : int
        Frequency in ``[1, (p-1)/2]``.
    phases : array_like of shape (k,) or None
        Input phases ``theta_j`` (default zeros); the output phase is their sum.

    Returns
    -------
    u : ndarray of shape (k, p)
    w : ndarray of shape (p,)
        Each component has squared norm exactly ``1/(k+1)``; ``Psi(u, w) = gamma*``.

    Notes
    -----
    Accuracy: absolute error <= 8 eps amp (1 + sum|theta_j|) per entry for p to 1e5 (zeta a reduced mod p exactly;
    before: 2.9e-11 amp at p = 100003) (measured: 0.55 of the declared bound).
    Regime: any (p, k); every maximiser has this form (equality in AM-GM and in
    ``sum z^{(k+1)/2} <= ||z||_1^{(k+1)/2}``).

    References
    ----------
    .. [src] [Shi24, Lemma C.15, eq. (C.16); k = 3: Lemma C.11 (App. C.6.3)].

    Examples
    --------
    >>> u, w = optimal_neuron(11, 3, zeta=2)
    >>> bool(np.isclose((u ** 2).sum() + (w ** 2).sum(), 1.0))  # on the unit sphere
    True
    """
    p, k = _check_pk("modular.optimal_neuron", p, k)
    zeta = check("modular.optimal_neuron", "zeta", zeta, Integer(1, (p - 1) // 2))
    th = np.zeros(k) if phases is None else np.asarray(phases, dtype=np.float64)
    if th.shape != (k,) or not np.all(np.isfinite(th)):
        raise InvalidParameterError(
            f"The 'phases' parameter of modular.optimal_neuron must be a finite array of shape ({k},). Got {phases!r} instead.")
    amp, x = math.sqrt(2.0 / ((k + 1) * p)), 2 * np.pi * (zeta * np.arange(p) % p) / p   # angle reduced exactly
    return amp * np.cos(th[:, None] + x[None, :]), amp * np.cos(th.sum() + x)


def max_margin_network(p, k, *, normalize=True):
    r"""Explicit max-margin network with ``2^(2k-2)(p-1)`` neurons (Lemma C.18, made explicit).

    For every frequency zeta, every ``b in {0,1}^(k+1)`` with ``|b|`` even and every ``sigma in {+-1}^k`` with
    ``sigma_1 = +1``, one neuron (``T_0 = cos``, ``T_1 = sin`` at ``2 pi zeta x / p``):

    .. math:: u_j(a) = \beta\,\sigma_j\,T_{b_j}(a),\qquad
              w(c) = \beta\,\mathrm{sgn}(\sigma)\,(-1)^{|b|/2}\,T_{b_{k+1}}(-c),\qquad
              f(\mathbf a)[c] = \beta^{k+1}2^{k-1}k!\sum_{\zeta=1}^{(p-1)/2}\cos\frac{2\pi\zeta(\sum_i a_i - c)}{p}

    Parameters
    ----------
    p : int
        Odd prime modulus.
    k : int
        Number of summands, >= 2.
    normalize : bool
        True: ``beta = sqrt(2/((k+1)p)) m^{-1/(k+1)}``, unit ``L_{2,k+1}`` norm, margin ``gamma*``.
        False: ``beta^{k+1} = 2/(2^k k!)``, so that f is exactly ``sum_zeta cos`` and the margin is ``p/2``.

    Returns
    -------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)
        Neurons ordered by (zeta, b, sigma); ``2^(2k-1)`` neurons per frequency.

    Notes
    -----
    Accuracy: absolute error <= 6 eps beta per entry (angles reduced mod p exactly) (measured: 0.69 of the declared
    bound).
    Regime: any odd prime p and k >= 2. Wrong logits all equal ``-1/2`` per unit (the paper's "0
    otherwise", proofs of Lemmas C.17-C.18, is wrong; docs/errata.md), so every point has the same margin.

    References
    ----------
    .. [src] [Shi24, Lemma C.18, Lemma C.16, eq. (C.21)]; the explicit recipe derived in docs/modular.md.

    Examples
    --------
    >>> from popdyn.models.modular.network import normalized_margin
    >>> U, W = max_margin_network(5, 2)
    >>> bool(np.isclose(normalized_margin(U, W), max_margin(5, 2), rtol=1e-12))
    True
    """
    p, k = _check_pk("modular.max_margin_network", p, k)
    m = construction_width(p, k)
    beta = (math.sqrt(2.0 / ((k + 1) * p)) * m ** (-1.0 / (k + 1)) if normalize
            else (2.0 / (2 ** k * math.factorial(k))) ** (1.0 / (k + 1)))
    a = np.arange(p)
    bs = [b for b in itertools.product((0, 1), repeat=k + 1) if sum(b) % 2 == 0]
    sigmas = np.array([(1,) + s for s in itertools.product((1, -1), repeat=k - 1)], dtype=np.float64)
    U, W = np.empty((m, k, p)), np.empty((m, p))
    i = 0
    for zeta in range(1, (p - 1) // 2 + 1):
        x = 2 * np.pi * (zeta * a % p) / p   # zeta a reduced mod p exactly: the angle stays in [0, 2 pi)
        T = np.stack([np.cos(x), np.sin(x)])
        T_neg = np.stack([T[0], -T[1]])  # T_b(-c)
        for b in bs:
            sign_b = (-1.0) ** (sum(b) // 2)
            n = len(sigmas)
            U[i:i + n] = beta * sigmas[:, :, None] * T[list(b[:k])][None]
            W[i:i + n] = beta * sign_b * np.prod(sigmas, axis=1)[:, None] * T_neg[b[k]][None]
            i += n
    return U, W


def construction_logit(p, d, *, convention="corrected"):
    r"""Logit of the explicit construction per unit ``beta^{k+1} 2^{k-1} k!``, as a function of ``d = sum a - c``.

    .. math:: \sum_{\zeta=1}^{(p-1)/2}\cos\frac{2\pi\zeta d}{p} =
              \begin{cases}(p-1)/2 & d \equiv 0 \\ -1/2 & d \not\equiv 0\end{cases}\pmod p

    Parameters
    ----------
    p : int
        Odd prime modulus.
    d : int or ndarray of int
        ``(a_1 + ... + a_k - c) mod p``.
    convention : {"corrected", "paper"}
        "corrected": the sum above; "paper": ``(p-1)/2`` at ``d = 0`` and ``0`` otherwise (proofs of Lemmas C.17-C.18).

    Returns
    -------
    ndarray of float (shape of d)

    Notes
    -----
    Accuracy: exact ((p-1)/2 and -1/2 are floats).
    Regime: exact; independent of k. The paper's value is wrong (docs/errata.md, modular).

    References
    ----------
    .. [src] [Shi24, proofs of Lemmas C.17-C.18] (corrected in docs/errata.md).

    Examples
    --------
    >>> construction_logit(7, np.arange(3)).tolist()
    [3.0, -0.5, -0.5]
    """
    p, _ = _check_pk("modular.construction_logit", p, 2)
    convention = check("modular.construction_logit", "convention", convention, Options(("corrected", "paper")))
    d = np.asarray(d) % p
    return np.where(d == 0, (p - 1) / 2, -0.5 if convention == "corrected" else 0.0)


def construction_margin(p, k, *, convention="corrected"):
    r"""Normalized margin of the explicit construction, from its analytic logits.

    .. math:: \frac{h}{\|\theta\|_{2,k+1}^{k+1}} = \gamma^*\cdot
              \frac{\mathrm{logit}(0) - \mathrm{logit}(d \ne 0)}{p/2}
              = \begin{cases}\gamma^* & \text{corrected}\\ \gamma^*\,(p-1)/p & \text{paper}\end{cases}

    Parameters
    ----------
    p : int
        Odd prime modulus.
    k : int
        Number of summands, >= 2.
    convention : {"corrected", "paper"}
        Wrong logit ``-1/2`` (corrected) or ``0`` (paper) per unit.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 2 eps wherever the result is a normal float (exact integers, one integer square
    root; before: OverflowError at large k) (measured: 0.24 of the declared bound).
    Regime: the unit-norm construction of :func:`max_margin_network`: per unit ``beta^{k+1} 2^{k-1} k!``
    the margin is ``p/2`` and ``||theta||^{k+1} = m ((k+1) beta^2 p/2)^{(k+1)/2}``.

    References
    ----------
    .. [src] [Shi24, proofs of Lemmas C.17-C.18]; derived in docs/modular.md.

    Examples
    --------
    >>> bool(np.isclose(construction_margin(11, 3), max_margin(11, 3), rtol=1e-14))
    True
    """
    p, k = _check_pk("modular.construction_margin", p, k)
    # unit^2 gap^2 = (k! 2^(k-1) gap / m)^2 (2 / ((k+1) p))^(k+1) in exact integers (gap = p/2 or (p-1)/2)
    two_gap = p if convention == "corrected" else p - 1
    num = (math.factorial(k) * 2 ** (k - 1) * two_gap) ** 2 * 2 ** (k + 1)
    return sqrt_ratio(num, 4 * construction_width(p, k) ** 2 * ((k + 1) * p) ** (k + 1))


def margin_dft(U, W, *, normalize=True):
    r"""Multi-dimensional DFT of the logits at ``(j, ..., j, -j)``, j = 1..p-1 (Lemmas C.19/C.20).

    .. math:: \hat f(j,\dots,j,-j) = \sum_{\mathbf a, c} f(\mathbf a)[c]\,e^{-2\pi i j(\sum_l a_l - c)/p}
              = k!\sum_{i=1}^m \hat w_i(-j)\prod_{l=1}^k \hat u_{i,l}(j)

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)
    normalize : bool
        Also divide by ``||theta||_{2,k+1}^{k+1}`` (the result is always divided by ``p^k``): for any max-margin
        network the normalised result is ``gamma*``
        at every j (the margin part ``lambda 1[sum a = c]`` of f).

    Returns
    -------
    ndarray of shape (p-1,), complex
        Real and positive at every j for a max-margin network: every frequency must be used.

    Notes
    -----
    Accuracy: absolute error <= (k + 2)(log2 p + 4) eps k! sum_i |w_i^(j)| prod_l |u_il^(j)| / p^k (/
    ||theta||^(k+1) when normalised); normalised: any scale (exact power-of-2 rescaling; before: NaN at 1e-200);
    unnormalised: while the logits are below 1e300 (measured: 0.083 of the declared bound).
    Regime: any network; the closed form holds because only the multinomial terms containing every
    ``a_l`` once survive the sums over ``a_l`` at ``j != 0`` (derived; checked against numpy.fft.fftn).

    References
    ----------
    .. [src] [Shi24, Lemmas C.19, C.20 (App. C.8)]; the closed form derived in docs/modular.md.

    Examples
    --------
    >>> U, W = max_margin_network(5, 2, normalize=False)  # f = sum cos: lambda = p/2
    >>> np.round(margin_dft(U, W, normalize=False).real, 12).tolist()
    [2.5, 2.5, 2.5, 2.5]
    """
    U, W = check_network("modular.margin_dft", U, W)
    m, k, p = U.shape
    if normalize:                      # both sides (k+1)-homogeneous: evaluate at max|theta| in [1/2, 1)
        c = _pow2(U, W)
        U, W = U * c, W * c
    F = math.factorial(k) * np.einsum("ij,ij->j", np.conj(np.fft.fft(W, axis=1)),
                                      np.prod(np.fft.fft(U, axis=2), axis=1))[1:]
    return F / p ** k / (norm(U, W) ** (k + 1) if normalize else 1.0)
