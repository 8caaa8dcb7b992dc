"""The network f(theta, a) = sum_i sigma(sum_j u_ij(a_j)) w_i: logits, norms and margins over Z_p^k.

The paper's network (4.2) has sigma(x) = x^k and a first layer per input. Networks trained elsewhere are read
in the same form: any activation (a name or a callable), a first layer tied across the k inputs (``U`` of shape
(m, p) with ``k`` given), and a learned token embedding ``E`` (p, d) before the first layer (``U`` then acts on
embeddings, shape (m, k, d) or (m, d)); :func:`norm` counts every parameter once.

The margin of x^k over all ``p^k`` inputs is a numba kernel that streams blocks of ``p`` inputs (the last
summand varies inside a block) and keeps only per-chunk minima and sums: its memory is
``O(threads (p m + p^2))``, independent of ``p^k``. Other activations are evaluated by numpy in chunks of inputs
(memory independent of ``p^k`` too).
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numba
import numpy as np

from ... import activations as _activations
from ..._validate import Interval, InvalidParameterError, as_int

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


#: Positive-homogeneity degree nu (sigma(t z) = t^nu sigma(z) for t > 0) of the named activations that have one;
#: "x^k" (the paper's, eq. (4.2)) has nu = k. Every other name of popdyn.activations is not homogeneous.
_HOMOGENEOUS = {"relu": 1, "abs": 1, "leaky_relu": 1, "linear": 1, "he1": 1, "quadratic": 2}
_CHUNK = 2 ** 18            # entries of the (inputs, m + p) block of the numpy forward pass


class _Net(NamedTuple):
    """A network read in the form (4.2): effective maps ``U`` (m, k, p) = u_ij(a), output ``W`` (m, p), and the
    parameters as given (first layer, embedding or None), tied or not."""
    U: np.ndarray
    W: np.ndarray
    first: np.ndarray
    E: np.ndarray | None
    tied: bool


class _Act(NamedTuple):
    """An activation: ``fn`` (None for x^k, the numba kernels), its name, and f's homogeneity degree ``L`` in all
    parameters (None when sigma is not homogeneous)."""
    fn: Callable | None
    name: str
    L: float | None


def _finite(owner, name, a, ndims, shape_text):
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.ndim not in ndims or 0 in a.shape or not np.all(np.isfinite(a)):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be a finite float array of shape "
                                    f"{shape_text}. Got shape {a.shape} instead.")
    return a


def resolve_network(owner, U, W, k=None, embedding=None):
    """The network ``(U, W)`` with optional tied first layer (``U`` 2-d, ``k`` given) and token embedding, read in
    the form (4.2): effective maps ``u_ij(a) = sum_d U[i, j, d] E[a, d]`` (U[i, d] for every j when tied)."""
    inner = "d" if embedding is not None else "p"
    U = _finite(owner, "U", U, (2, 3), f"(m, k, {inner}), or (m, {inner}) with k given (a tied first layer)")
    tied = U.ndim == 2
    if tied or k is not None:
        k = as_int(owner, "k", k, low=1) if k is not None else _fail_tied(owner, U)
        if not tied and k != U.shape[1]:
            raise InvalidParameterError(f"The 'k' parameter of {owner} must equal U.shape[1] = {U.shape[1]} for an "
                                        f"untied first layer. Got {k!r} instead.")
    E = None if embedding is None else _finite(owner, "embedding", embedding, (2,), "(p, d)")
    p = U.shape[-1] if E is None else E.shape[0]
    if p < 2 or (E is not None and U.shape[-1] != E.shape[1]):
        raise InvalidParameterError(f"The 'U' parameter of {owner} must have a last axis of length "
                                    f"{'d = embedding.shape[1] = ' + str(E.shape[1]) if E is not None else 'p >= 2'}. "
                                    f"Got shape {U.shape} instead.")
    W = np.ascontiguousarray(W, dtype=np.float64)
    if W.shape != (U.shape[0], p) or not np.all(np.isfinite(W)):
        raise InvalidParameterError(f"The 'W' parameter of {owner} must be a finite float array of shape (m, p) = "
                                    f"{(U.shape[0], p)} (from U{' and embedding' if E is not None else ''}). "
                                    f"Got shape {W.shape} instead.")
    maps = U if E is None else U @ E.T
    maps = np.ascontiguousarray(np.broadcast_to(maps[:, None], (U.shape[0], k, p)) if tied else maps)
    return _Net(maps, W, U, E, tied)


def _fail_tied(owner, U):
    raise InvalidParameterError(f"The 'k' parameter of {owner} must be an int >= 1 when 'U' has shape {U.shape} "
                                f"(a first layer tied across the k inputs). Got None instead.")


def resolve_activation(owner, activation, degree, net):
    """``activation`` (a name of popdyn.activations, "x^k", or a callable of an ndarray) and f's homogeneity
    degree ``L = nu + 1`` (``2 nu + 1`` with an embedding), nu the degree of sigma (given for a callable)."""
    k = net.U.shape[1]
    if isinstance(activation, str):
        nu = k if activation == "x^k" else _HOMOGENEOUS.get(activation)
        fn = None if activation == "x^k" else _activations.get(activation)
        if degree is not None and degree != nu:
            raise InvalidParameterError(f"The 'degree' parameter of {owner} is for a callable activation; "
                                        f"{activation!r} has degree {nu}. Got {degree!r} instead.")
    elif callable(activation):
        fn = activation
        nu = None if degree is None else Interval(0, math.inf, "neither").convert(owner, "degree", degree)
        if nu is not None:
            _check_degree(owner, fn, nu)
    else:
        raise InvalidParameterError(f"The 'activation' parameter of {owner} must be \"x^k\", a name of "
                                    f"popdyn.activations or a callable. Got {activation!r} instead.")
    name = activation if isinstance(activation, str) else getattr(activation, "__name__", repr(activation))
    return _Act(fn, name, None if nu is None else (2 * nu + 1 if net.E is not None else nu + 1))


def _check_degree(owner, fn, nu):
    z = np.linspace(-3.0, 3.0, 13)
    for t in (0.5, 2.0):
        a, b = np.asarray(fn(t * z), dtype=np.float64), t ** nu * np.asarray(fn(z), dtype=np.float64)
        if a.shape != z.shape or not np.allclose(a, b, rtol=1e-9, atol=1e-12 * (1 + np.abs(b).max())):
            raise InvalidParameterError(f"The 'degree' parameter of {owner} must be the activation's homogeneity "
                                        f"degree (sigma(t z) = t^degree sigma(z), t > 0); sigma({t} z) != {t}^{nu} "
                                        f"sigma(z) on z in [-3, 3]. Got {nu!r} instead.")


def _chunks(p, k, m, inputs):
    """Blocks of inputs (n, k): ``inputs`` in slices, or all of D_p in mixed-radix order, O(_CHUNK) memory each."""
    n = p ** k if inputs is None else len(inputs)
    step = max(1, _CHUNK // (m + p))
    for s in range(0, n, step):
        if inputs is not None:
            yield inputs[s:s + step]
        else:
            idx = np.arange(s, min(n, s + step), dtype=np.int64)
            yield np.stack([(idx // p ** (k - 1 - j)) % p for j in range(k)], axis=1)


def _forward(owner, net, act, a):
    """Logits (n, p) of the inputs ``a`` (n, k) under a numpy activation; the activation's output is checked."""
    k = net.U.shape[1]
    pre = sum(net.U[:, j, a[:, j]] for j in range(k)).T                 # (n, m)
    out = np.asarray(act.fn(pre), dtype=np.float64)
    if out.shape != pre.shape or not np.all(np.isfinite(out)):
        raise InvalidParameterError(f"The 'activation' parameter of {owner} must map the pre-activations (shape "
                                    f"{pre.shape}) elementwise to finite floats. Got shape {out.shape}"
                                    f"{'' if out.shape != pre.shape else ' with non-finite values'} instead.")
    return out @ net.W


def _point_margins(L, a, p, weighted):
    rows = np.arange(L.shape[0])
    y = a.sum(axis=1) % p
    correct = L[rows, y]
    if weighted:
        return correct - (L.sum(axis=1) - correct) / (p - 1)
    L[rows, y] = -np.inf
    return correct - L.max(axis=1)


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


def norm(U, W, q=None, *, k=None, embedding=None, activation="x^k", degree=None):
    r"""The ``L_{2,q}`` norm of the parameters: per-neuron Euclidean norm, then ``L_q`` across neurons.

    .. math:: \|\theta\|_{2,q} = \Big(\sum_{i=1}^m \|\theta_i\|_2^q + \|E\|_F^q\Big)^{1/q},\qquad
              \|\theta_i\|_2^2 = \sum_j \|u_{i,j}\|_2^2 + \|w_i\|_2^2

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
        First layer; (m, p) with ``k`` given: tied across the k inputs (``u_i`` counted once in ``theta_i``); with
        an ``embedding``, (m, k, d) or (m, d) acting on embeddings.
    W : ndarray of shape (m, p)
    q : float or None
        Exponent, >= 1; default the homogeneity degree L of f (``k + 1`` for the paper's network; see
        :func:`normalized_margin`); required for an activation that is not homogeneous.
    k : int or None
        Number of inputs; needed only for a tied ``U`` (2-d).
    embedding : ndarray of shape (p, d) or None
        Token embedding E (rows are tokens); it is one more group of the norm, counted once.
    activation : str or callable
        Only sets the default q (see :func:`normalized_margin`).
    degree : float or None
        Homogeneity degree of a callable activation (see :func:`normalized_margin`).

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= (k p + 4) eps at any scale (exact power-of-2 rescaling; before: 0 at 1e-200)
    (measured: 0.072 of the declared bound); tied or embedded: the same with k p replaced by the number of
    entries of the largest group.
    Regime: any parameters; each parameter is counted once (a tied first layer once, not k times; the shared
    embedding as its own group). Rebalancing ``u -> alpha u, w -> alpha^-k w`` leaves f unchanged but not the
    norm: report the raw norm or rebalance explicitly.
    Convention: the paper's ``L_{2,k+1}`` norm (Section 4.3.1; ``L_{a,b}`` of Definition C.2) is per neuron the
    Euclidean norm of "the vector of concatenated parameters for a single neuron", then ``L_{k+1}`` across neurons.
    A tied ``u_i`` is one parameter vector of neuron i, so it enters ``theta_i`` once; an embedding belongs to no
    neuron, so it is one more group. Both reduce to the paper's norm for its network; Lemma 4.7 holds for any norm.

    References
    ----------
    .. [src] [Shi24, Section 4.3.1, Definition C.2, Lemma 4.7]; tied layers and the embedding group in
       docs/modular.md.

    Examples
    --------
    >>> U, W = np.ones((2, 3, 5)), np.ones((2, 5))  # each neuron: ||theta_i||^2 = 20
    >>> bool(np.isclose(norm(U, W, q=2), np.sqrt(40)))
    True
    >>> bool(np.isclose(norm(U[:, 0], W, q=2, k=3), np.sqrt(20)))  # tied: u_i counted once
    True
    """
    net = resolve_network("modular.norm", U, W, k, embedding)
    if q is None:
        q = resolve_activation("modular.norm", activation, degree, net).L
        if q is None:
            raise InvalidParameterError(f"The 'q' parameter of modular.norm must be a float in [1, inf) when the "
                                        f"activation {activation!r} is not homogeneous. Got None instead.")
    q = Interval(1, math.inf, "left").convert("modular.norm", "q", q)
    return _norm(net, q)


def _norm(net, q):
    c = _pow2(net.first, net.W, net.E)                # exact power-of-2 scaling: no under/overflow of squares
    F, Wc = net.first * c, net.W * c
    F = F.reshape(len(F), -1)
    per = np.sqrt(np.einsum("ic,ic->i", F, F) + np.einsum("ic,ic->i", Wc, Wc))
    if net.E is not None:
        per = np.append(per, np.linalg.norm(net.E * c))
    return float(np.sum(per ** q) ** (1.0 / q)) / c


def _pow2(U, W, E=None):
    """The power of 2 that brings max(|U|, |W|, |E|) into [1/2, 1) (1 for a zero network)."""
    top = max(float(np.abs(a).max(initial=0.0)) for a in (U, W, np.zeros(0) if E is None else E))
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


_NET_PARAMS = """activation : str or callable
        ``"x^k"`` (default, the paper's sigma(x) = x^k, eq. (4.2)), a name of :mod:`popdyn.activations` ("relu",
        "gelu", ...) or a callable applied elementwise to an ndarray of pre-activations.
    degree : float or None
        Homogeneity degree nu of a callable activation (``sigma(t z) = t^nu sigma(z)``, t > 0; checked on
        [-3, 3]); None: not homogeneous. Names carry their own (relu, abs, leaky_relu, linear: 1; quadratic: 2).
    k : int or None
        Number of inputs; needed only for a first layer tied across the inputs (``U`` of shape (m, p) or (m, d)).
    embedding : ndarray of shape (p, d) or None
        Token embedding E (row a is token a's embedding); ``U`` then has shape (m, k, d) or (m, d) and
        ``u_{i,j}(a) = U[i, j] . E[a]``."""


def _net_doc(fn):
    fn.__doc__ = fn.__doc__.replace("{net_params}", _NET_PARAMS)
    return fn


def _logits_of(owner, net, act, inputs):
    m, k, p = net.U.shape
    if act.fn is None:
        return _row_logits(_transpose(net.U), net.W, all_inputs(p, k) if inputs is None else inputs)
    return np.concatenate([_forward(owner, net, act, a) for a in _chunks(p, k, m, inputs)], axis=0)


@_net_doc
def logits(U, W, inputs=None, *, activation="x^k", degree=None, k=None, embedding=None):
    r"""Logits ``f(theta, a)`` of the network on explicit inputs (numba for x^k, parallel over inputs).

    .. math:: f(\theta, \mathbf a)[c] = \sum_{i=1}^m \sigma\Big(\sum_{j=1}^k u_{i,j}(a_j)\Big) w_i(c),
              \qquad \sigma(x) = x^k \text{ by default}

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
        First layer (see ``k`` and ``embedding`` for the tied and embedded forms).
    W : ndarray of shape (m, p)
    inputs : ndarray of shape (n, k), int, or None
        Inputs with entries in [0, p-1]; None means all of D_p (materialises ``p^(k+1)`` floats).
    {net_params}

    Returns
    -------
    ndarray of shape (n, p)

    Notes
    -----
    Accuracy: absolute error <= (k^2 + m + p + 4) eps S, S = max over inputs and classes of sum_i |pre_i|^k |w_ic|,
    while S is a normal float (measured: 0.075 of the declared bound); other activations: their own rounding plus
    (k + m) eps S with |sigma(pre_i)| in place of |pre_i|^k.
    Regime: any network; exact up to float64 rounding, ``O(n m (k + p))`` work.

    References
    ----------
    .. [src] [Shi24, eq. (4.2)]; other activations, tied layers and embeddings in docs/modular.md.

    Examples
    --------
    >>> U, W = np.ones((1, 2, 3)), np.eye(3)[:1]  # one neuron: (1 + 1)^2 on class 0
    >>> logits(U, W, np.array([[0, 1]])).tolist()
    [[4.0, 0.0, 0.0]]
    >>> logits(-U, W, np.array([[0, 1]]), activation="relu").tolist()  # relu(-2) = 0
    [[0.0, 0.0, 0.0]]
    """
    net = resolve_network("modular.logits", U, W, k, embedding)
    act = resolve_activation("modular.logits", activation, degree, net)
    m, k, p = net.U.shape
    inputs = None if inputs is None else _check_inputs("modular.logits", inputs, k, p)
    return _logits_of("modular.logits", net, act, inputs)


@_net_doc
def point_margins(U, W, inputs, *, weighted=False, activation="x^k", degree=None, k=None, embedding=None):
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
    {net_params}

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
    net = resolve_network("modular.point_margins", U, W, k, embedding)
    act = resolve_activation("modular.point_margins", activation, degree, net)
    m, k, p = net.U.shape
    inputs = _check_inputs("modular.point_margins", inputs, k, p)
    return _point_margins(_logits_of("modular.point_margins", net, act, inputs), inputs, p, weighted)


def _grid(U, W):
    U, W = check_network("modular.margin", U, W)
    n_chunks = 4 * numba.get_num_threads()
    return _grid_margins(_transpose(U), W, n_chunks)


def _margin_of(owner, net, act, inputs):
    m, k, p = net.U.shape
    if act.fn is None and inputs is None:
        return float(_grid(net.U, net.W)[0])
    if act.fn is None:
        return float(_point_margins(_logits_of(owner, net, act, inputs), inputs, p, False).min())
    return float(min(_point_margins(_forward(owner, net, act, a), a, p, False).min()
                     for a in _chunks(p, k, m, inputs)))


@_net_doc
def margin(U, W, inputs=None, *, activation="x^k", degree=None, k=None, embedding=None):
    r"""Dataset margin ``h(theta)``: the smallest per-point margin over D_p (Def. 4.3).

    .. math:: h(\theta) = \min_{\mathbf a \in \mathbb Z_p^k}\Big(f[y] - \max_{y' \ne y} f[y']\Big)

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)
    inputs : ndarray of shape (n, k), int, or None
        None: all ``p^k`` inputs, streamed (x^k: a numba kernel; others: numpy chunks) in memory independent of
        ``p^k``; otherwise the minimum over these inputs.
    {net_params}

    Returns
    -------
    float
        Not normalised (see :func:`normalized_margin`); for any activation, by evaluating the network.

    Notes
    -----
    Accuracy: absolute error <= 2 (k^2 + m + p + 4) eps S (S as in :func:`logits`) (measured: 0.035 of the declared
    bound); for any activation the same with |sigma(pre_i)| in place of |pre_i|^k plus sigma's own rounding.
    Regime: any network and p >= 2. Domain: with ``inputs=None`` every one of the p^k inputs of D_p (Def. 4.3) is
    evaluated, exactly, for every activation (no sampling, no closed form), ``O(p^k m p)`` work: measured on 2
    cores about 5e8 (x^k, numba) and 1e8 (other activations, numpy) products p^k m p a second, so seconds up to
    ``p^k m p ~ 1e9`` and minutes near 1e11 (e.g. p = 11, k = 5, m = 128: 0.35 s and 2.8 s). Unchanged by a
    class-constant offset of ``w_i``.

    References
    ----------
    .. [src] [Shi24, Definitions 4.2-4.3].

    Examples
    --------
    >>> U, W = np.ones((1, 2, 3)), np.array([[1.0, 0.0, -1.0]])  # f = 4 (1, 0, -1): worst label 2
    >>> margin(U, W)
    -8.0
    >>> margin(U, W, activation="relu")  # f = 2 (1, 0, -1)
    -4.0
    """
    net = resolve_network("modular.margin", U, W, k, embedding)
    act = resolve_activation("modular.margin", activation, degree, net)
    m, k, p = net.U.shape
    inputs = None if inputs is None else _check_inputs("modular.margin", inputs, k, p)
    return _margin_of("modular.margin", net, act, inputs)


def _check_nonzero(owner, net):
    """InvalidParameterError for a network without a non-zero parameter: its norm divides every ratio below."""
    if not (np.any(net.first) or np.any(net.W) or (net.E is not None and np.any(net.E))):
        raise InvalidParameterError(
            f"The 'U' and 'W' parameters{' (and embedding)' if net.E is not None else ''} of {owner} must have a "
            f"non-zero entry (the norm ||theta|| divides). Got all zeros of shapes {net.first.shape}, "
            f"{net.W.shape}{'' if net.E is None else ', ' + str(net.E.shape)} instead.")


def _unit_scale(net):
    """The network with every parameter times the power of 2 ``c`` that brings max|theta| into [1/2, 1) (exact),
    and ``c``."""
    c = _pow2(net.first, net.W, net.E)
    return _Net(net.U * (c if net.E is None else c * c), net.W * c, net.first * c,
                None if net.E is None else net.E * c, net.tied), c


@_net_doc
def normalized_margin(U, W, inputs=None, *, activation="x^k", degree=None, k=None, embedding=None):
    r"""Normalized margin ``h(theta / ||theta||) = h(theta) / ||theta||_{2,L}^L``, L the homogeneity degree of f.

    .. math:: \bar h(\theta) = \frac{h(\theta)}{\|\theta\|_{2,L}^{L}},\qquad L = \nu + 1
              \ (2\nu + 1 \text{ with an embedding}),\qquad \bar h \le \gamma^*(p, k) \text{ for } x^k

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)
    inputs : ndarray of shape (n, k), int, or None
        None: all of D_p; otherwise these inputs only.
    {net_params}

    Returns
    -------
    float
        For the paper's network (x^k, untied, no embedding; L = k + 1) at most gamma* over D_p, for every network
        (docs/modular.md); equal for the explicit construction.

    Raises
    ------
    InvalidParameterError
        For an activation that is not homogeneous (a name without a degree, or a callable without ``degree``):
        f has no scale-free margin; :func:`margin` gives the unnormalised one.

    Notes
    -----
    Accuracy: absolute error <= (k^2 + m + p + 4 + (k + 1)(k p + 4)) eps S/||theta||^(k+1) at any scale (evaluated
    at max|theta| in [1/2, 1): before, NaN at 1e-200) (measured: 0.027 of the declared bound).
    Regime: any network with a positively homogeneous sigma of degree nu: f(t theta) = t^L f(theta) for t > 0
    (x^k: L = k + 1; relu: 2; an embedding adds a layer, L = 2 nu + 1), so the ratio is scale-free; the norm is
    :func:`norm` with q = L (each parameter once). Divides by the norm to the power L, not by the norm.

    References
    ----------
    .. [src] [Shi24, Section 4.3.2 (the normalized margin h(theta / ||theta||_{2,k+1}), after Definition 4.3),
       Definition 4.4, Section 4.3.3 (homogeneity nu), Lemma 4.7 (any norm)]; the norm [Shi24, Section 4.3.1,
       Definition C.2]; other activations, tied layers and embeddings in docs/modular.md.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> U, W = rng.standard_normal((4, 2, 5)), rng.standard_normal((4, 5))
    >>> bool(np.isclose(normalized_margin(3 * U, 3 * W), normalized_margin(U, W)))  # scale invariant
    True
    >>> h = normalized_margin(U, W, activation="relu")   # relu: L = 2
    >>> bool(np.isclose(h, margin(U, W, activation="relu") / norm(U, W, q=2) ** 2))
    True
    """
    net = resolve_network("modular.normalized_margin", U, W, k, embedding)
    act = resolve_activation("modular.normalized_margin", activation, degree, net)
    if act.L is None:
        raise InvalidParameterError(
            f"The 'activation' parameter of modular.normalized_margin must be positively homogeneous (a name of "
            f"degree {sorted(_HOMOGENEOUS)} or \"x^k\", or a callable with 'degree'); f has no scale-free margin "
            f"otherwise: use modular.margin for the unnormalised one. Got {act.name!r} instead.")
    m, k, p = net.U.shape
    inputs = None if inputs is None else _check_inputs("modular.normalized_margin", inputs, k, p)
    _check_nonzero("modular.normalized_margin", net)
    net = _unit_scale(net)[0]            # f and ||theta||^L are both L-homogeneous: evaluate at max|theta| ~ 1
    return _margin_of("modular.normalized_margin", net, act, inputs) / _norm(net, act.L) ** act.L


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
