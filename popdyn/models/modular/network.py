"""The network f(theta, a) = sum_i (sum_j u_ij(a_j))^k w_i: logits, norms and margins over Z_p^k.

The margin over all ``p^k`` inputs is a numba kernel that streams blocks of ``p`` inputs (the last
summand varies inside a block) and keeps only per-chunk minima and sums: its memory is
``O(threads (p m + p^2))``, independent of ``p^k``.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ..._validate import InvalidParameterError

__all__ = ["all_inputs", "norm", "logits", "point_margins", "margin", "normalized_margin",
           "class_weighted_margin"]


def check_network(owner, U, W):
    """``U`` (m, k, p) and ``W`` (m, p) as finite float64 C arrays, or InvalidParameterError naming them."""
    U = np.ascontiguousarray(U, dtype=np.float64)
    W = np.ascontiguousarray(W, dtype=np.float64)
    if U.ndim != 3 or U.shape[0] < 1 or U.shape[1] < 1 or U.shape[2] < 2 or not np.all(np.isfinite(U)):
        raise InvalidParameterError(
            f"The 'U' parameter of {owner} must be a finite float array of shape (m, k, p), m, k >= 1, p >= 2. "
            f"Got shape {U.shape} instead.")
    if W.shape != (U.shape[0], U.shape[2]) or not np.all(np.isfinite(W)):
        raise InvalidParameterError(
            f"The 'W' parameter of {owner} must be a finite float array of shape (m, p) = "
            f"{(U.shape[0], U.shape[2])} (from U). Got shape {W.shape} instead.")
    return U, W


def _check_inputs(owner, inputs, k, p):
    a = np.asarray(inputs)
    if a.ndim != 2 or a.shape[1] != k or a.dtype.kind not in "iu" or (a.size and (a.min() < 0 or a.max() >= p)):
        raise InvalidParameterError(
            f"The 'inputs' parameter of {owner} must be an int array of shape (n, {k}) with entries in "
            f"[0, {p - 1}]. Got {a.dtype} array of shape {a.shape} instead.")
    return np.ascontiguousarray(a, dtype=np.int64)


def all_inputs(p, k):
    r"""Every input of ``D_p = Z_p^k`` in mixed-radix order (the last summand varies fastest).

    .. math:: \mathbf a(n) = (a_1, \dots, a_k),\qquad n = \sum_{j=1}^k a_j\,p^{k-j}

    Parameters
    ----------
    p : int
        Modulus, >= 2.
    k : int
        Number of summands, >= 1.

    Returns
    -------
    ndarray of shape (p**k, k), int64
        Materialises ``p^k k`` integers: for small grids and tests only.

    Notes
    -----
    Regime: any p, k; the labels are ``inputs.sum(1) % p``.

    References
    ----------
    .. [src] [Shi24, Section 4.3.1] (D_p).

    Examples
    --------
    >>> all_inputs(3, 2)[:4].tolist()
    [[0, 0], [0, 1], [0, 2], [1, 0]]
    """
    grids = np.meshgrid(*[np.arange(p, dtype=np.int64)] * k, indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1)


def norm(U, W, q=None):
    r"""The ``L_{2,q}`` norm of the parameters: per-neuron Euclidean norm, then ``L_q`` across neurons.

    .. math:: \|\theta\|_{2,q} = \Big(\sum_{i=1}^m \|\theta_i\|_2^q\Big)^{1/q},\qquad
              \|\theta_i\|_2^2 = \sum_j \|u_{i,j}\|_2^2 + \|w_i\|_2^2

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)
    q : float or None
        Exponent, >= 1; default ``k + 1`` (the homogeneity of f).

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= (k p + 4) eps at any scale (exact power-of-2 rescaling; before: 0 at 1e-200)
    (measured: 0.072 of the declared bound).
    Regime: any parameters. Rebalancing ``u -> alpha u, w -> alpha^-k w`` leaves f unchanged but not the
    norm: report the raw norm or rebalance explicitly.

    References
    ----------
    .. [src] [Shi24, Section 4.3.1, Definition C.2].

    Examples
    --------
    >>> U, W = np.ones((2, 3, 5)), np.ones((2, 5))  # each neuron: ||theta_i||^2 = 20
    >>> bool(np.isclose(norm(U, W, q=2), np.sqrt(40)))
    True
    """
    U, W = check_network("modular.norm", U, W)
    q = U.shape[1] + 1 if q is None else float(q)
    if not (q >= 1):
        raise InvalidParameterError(f"The 'q' parameter of modular.norm must be a float in [1, inf). Got {q!r} instead.")
    c = _pow2(U, W)                                   # exact power-of-2 scaling: no under/overflow of squares
    Uc, Wc = U * c, W * c
    per = np.sqrt(np.einsum("ijc,ijc->i", Uc, Uc) + np.einsum("ic,ic->i", Wc, Wc))
    return float(np.sum(per ** q) ** (1.0 / q)) / c


def _pow2(U, W):
    """The power of 2 that brings max(|U|, |W|) into [1/2, 1) (1 for a zero network)."""
    top = max(float(np.abs(U).max(initial=0.0)), float(np.abs(W).max(initial=0.0)))
    return math.ldexp(1.0, -math.frexp(top)[1]) if 0 < top < math.inf else 1.0


# ---- numba kernels ----------------------------------------------------------------------------------

@numba.njit(cache=True)
def _block(UT, W, digits, act, L):
    """Logits of the ``p`` inputs ``(digits, r)``, r = 0..p-1, into ``L`` (p, p); ``act`` is (p, m) scratch."""
    k, p, m = UT.shape
    for i in range(m):
        base = 0.0
        for j in range(k - 1):
            base += UT[j, digits[j], i]
        for r in range(p):
            act[r, i] = (base + UT[k - 1, r, i]) ** k
    L[:, :] = 0.0
    for r in range(p):
        for i in range(m):
            a = act[r, i]
            for c in range(p):
                L[r, c] += a * W[i, c]


@numba.njit(cache=True, parallel=True)
def _grid_margins(UT, W, n_chunks):
    """min over D_p of g = f[y] - max_{c != y} f[c], and sum over D_p of g' (uniform tau)."""
    k, p, m = UT.shape
    n_blocks = p ** (k - 1)
    mins = np.full(n_chunks, np.inf)
    sums = np.zeros(n_chunks)
    for ch in numba.prange(n_chunks):
        act, L = np.empty((p, m)), np.empty((p, p))
        digits = np.zeros(max(k - 1, 1), dtype=np.int64)
        for b in range(ch * n_blocks // n_chunks, (ch + 1) * n_blocks // n_chunks):
            rest, s0 = b, 0
            for j in range(k - 2, -1, -1):
                digits[j] = rest % p
                s0 += digits[j]
                rest //= p
            _block(UT, W, digits, act, L)
            for r in range(p):
                y = (s0 + r) % p
                wrong, total = -np.inf, 0.0
                for c in range(p):
                    total += L[r, c]
                    if c != y and L[r, c] > wrong:
                        wrong = L[r, c]
                mins[ch] = min(mins[ch], L[r, y] - wrong)
                sums[ch] += L[r, y] - (total - L[r, y]) / (p - 1)
    return mins.min(), sums.sum()


@numba.njit(cache=True, parallel=True)
def _row_logits(UT, W, inputs):
    """Logits (n, p) of explicit inputs (n, k)."""
    k, p, m = UT.shape
    n = inputs.shape[0]
    out = np.zeros((n, p))
    for t in numba.prange(n):
        for i in range(m):
            pre = 0.0
            for j in range(k):
                pre += UT[j, inputs[t, j], i]
            a = pre ** k
            for c in range(p):
                out[t, c] += a * W[i, c]
    return out


def _transpose(U):
    return np.ascontiguousarray(U.transpose(1, 2, 0))  # (k, p, m): U[i, j, a] = UT[j, a, i]


def logits(U, W, inputs=None):
    r"""Logits ``f(theta, a)`` of the network on explicit inputs (numba, parallel over inputs).

    .. math:: f(\theta, \mathbf a)[c] = \sum_{i=1}^m \Big(\sum_{j=1}^k u_{i,j}(a_j)\Big)^k w_i(c)

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)
    inputs : ndarray of shape (n, k), int, or None
        Inputs with entries in [0, p-1]; None means all of D_p (materialises ``p^(k+1)`` floats).

    Returns
    -------
    ndarray of shape (n, p)

    Notes
    -----
    Accuracy: absolute error <= (k^2 + m + p + 4) eps S, S = max over inputs and classes of sum_i |pre_i|^k |w_ic|,
    while S is a normal float (measured: 0.075 of the declared bound).
    Regime: any network; exact up to float64 rounding, ``O(n m (k + p))`` work.

    References
    ----------
    .. [src] [Shi24, eq. (4.2)].

    Examples
    --------
    >>> U, W = np.ones((1, 2, 3)), np.eye(3)[:1]  # one neuron: (1 + 1)^2 on class 0
    >>> logits(U, W, np.array([[0, 1]])).tolist()
    [[4.0, 0.0, 0.0]]
    """
    U, W = check_network("modular.logits", U, W)
    m, k, p = U.shape
    inputs = all_inputs(p, k) if inputs is None else _check_inputs("modular.logits", inputs, k, p)
    return _row_logits(_transpose(U), W, inputs)


def point_margins(U, W, inputs, *, weighted=False):
    r"""Per-point margin ``g`` (Def. 4.2) or class-weighted margin ``g'`` with uniform tau (Def. 4.6).

    .. math:: g(\theta, \mathbf a, y) = f[y] - \max_{y' \ne y} f[y'],\qquad
              g'(\theta, \mathbf a, y) = f[y] - \frac{1}{p-1}\sum_{y' \ne y} f[y'],\qquad y = \textstyle\sum_j a_j \bmod p

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)
    inputs : ndarray of shape (n, k), int
        Inputs with entries in [0, p-1] (e.g. a training split).
    weighted : bool
        False: g; True: g' with ``tau = 1/(p-1)`` (Section 4.4). Always ``g <= g'``.

    Returns
    -------
    ndarray of shape (n,)

    Notes
    -----
    Accuracy: absolute error <= 2 (k^2 + m + p + 4) eps S (S as in :func:`logits`) (measured: 0.043 of the declared
    bound).
    Regime: any network; the label is the residue ``(a_1 + ... + a_k) mod p``.

    References
    ----------
    .. [src] [Shi24, Definition 4.2, Definition 4.6, Section 4.4].

    Examples
    --------
    >>> U, W = np.ones((1, 2, 3)), np.array([[1.0, 0.0, -1.0]])  # f = 4 (1, 0, -1) at every input
    >>> point_margins(U, W, np.array([[0, 0], [1, 1]])).tolist()  # labels 0 and 2
    [4.0, -8.0]
    """
    U, W = check_network("modular.point_margins", U, W)
    m, k, p = U.shape
    inputs = _check_inputs("modular.point_margins", inputs, k, p)
    L = _row_logits(_transpose(U), W, inputs)
    rows = np.arange(L.shape[0])
    y = inputs.sum(axis=1) % p
    correct = L[rows, y]
    if weighted:
        return correct - (L.sum(axis=1) - correct) / (p - 1)
    L[rows, y] = -np.inf
    return correct - L.max(axis=1)


def _grid(U, W):
    U, W = check_network("modular.margin", U, W)
    n_chunks = 4 * numba.get_num_threads()
    return _grid_margins(_transpose(U), W, n_chunks)


def margin(U, W, inputs=None):
    r"""Dataset margin ``h(theta)``: the smallest per-point margin over D_p (Def. 4.3).

    .. math:: h(\theta) = \min_{\mathbf a \in \mathbb Z_p^k}\Big(f[y] - \max_{y' \ne y} f[y']\Big)

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)
    inputs : ndarray of shape (n, k), int, or None
        None: all ``p^k`` inputs, streamed by a numba kernel in memory independent of ``p^k``;
        otherwise the minimum over these inputs.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: absolute error <= 2 (k^2 + m + p + 4) eps S (S as in :func:`logits`) (measured: 0.035 of the declared
    bound).
    Regime: any network; ``O(p^k m p)`` work over D_p, parallel over blocks of p inputs.

    References
    ----------
    .. [src] [Shi24, Definition 4.3].

    Examples
    --------
    >>> U, W = np.ones((1, 2, 3)), np.array([[1.0, 0.0, -1.0]])  # f = 4 (1, 0, -1): worst label 2
    >>> margin(U, W)
    -8.0
    """
    if inputs is not None:
        return float(point_margins(U, W, inputs).min())
    return float(_grid(U, W)[0])


def normalized_margin(U, W, inputs=None):
    r"""Normalized margin ``h(theta / ||theta||) = h(theta) / ||theta||_{2,k+1}^{k+1}`` (f is (k+1)-homogeneous).

    .. math:: \bar h(\theta) = \frac{h(\theta)}{\|\theta\|_{2,k+1}^{k+1}} \le \gamma^*(p, k)

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)
    inputs : ndarray of shape (n, k), int, or None
        None: all of D_p (numba kernel); otherwise these inputs only.

    Returns
    -------
    float
        At most gamma* over D_p, for every network (docs/modular.md); equal for the explicit construction.

    Notes
    -----
    Accuracy: absolute error <= (k^2 + m + p + 4 + (k + 1)(k p + 4)) eps S/||theta||^(k+1) at any scale (evaluated
    at max|theta| in [1/2, 1): before, NaN at 1e-200) (measured: 0.027 of the declared bound).
    Regime: any network. Divides by the norm to the power k+1, not by the norm.

    References
    ----------
    .. [src] [Shi24, Definitions 4.3-4.4, Section 4.3.3 (homogeneity)].

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> U, W = rng.standard_normal((4, 2, 5)), rng.standard_normal((4, 5))
    >>> bool(np.isclose(normalized_margin(3 * U, 3 * W), normalized_margin(U, W)))  # scale invariant
    True
    """
    U, W = check_network("modular.normalized_margin", U, W)
    c = _pow2(U, W)     # f and ||theta||^(k+1) are both (k+1)-homogeneous: evaluate at max|theta| in [1/2, 1)
    return margin(U * c, W * c, inputs) / norm(U * c, W * c) ** (U.shape[1] + 1)


def class_weighted_margin(U, W):
    r"""Mean class-weighted margin over D_p with uniform tau: the sum of the single-neuron margins Psi.

    .. math:: \mathbb E_{\mathbf a}\,g'(\theta, \mathbf a, y) = \sum_{i=1}^m \Psi(u_i, w_i)
              \ \ge\ h(\theta)

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)

    Returns
    -------
    float
        Computed by the streaming kernel over all ``p^k`` inputs (not by the Fourier form).

    Notes
    -----
    Accuracy: absolute error <= (2 (k^2 + m + p + 4) + log2(p^k)) eps S (S as in :func:`logits`) (measured: 0.016 of
    the declared bound).
    Regime: any network; uniform q on D_p and uniform tau = 1/(p-1) (Section 4.4). The chain
    ``h <= E g <= E g' = sum Psi <= ||theta||^{k+1} gamma*`` bounds every network.

    References
    ----------
    .. [src] [Shi24, Definition 4.6, Definitions C.12-C.13].

    Examples
    --------
    >>> U, W = np.ones((1, 2, 3)), np.array([[1.0, 0.0, -1.0]])  # mean over labels of f[y] - mean of others
    >>> class_weighted_margin(U, W)
    0.0
    """
    U, W = check_network("modular.class_weighted_margin", U, W)
    return float(_grid(U, W)[1] / U.shape[2] ** U.shape[1])
