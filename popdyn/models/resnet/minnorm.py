r"""Appendix A.1 of [AllenZhu19]: the two-layer network on a sparse parity, its exact population error and norms.

Setting (App. A.1): :math:`F(W;x)=a^\top\sigma(Wx)` with :math:`W\in\mathbb R^{m\times d}` trained,
:math:`a\in\{\pm1/\sqrt m\}^m` fixed with exactly m/2 of each sign, inputs :math:`x\in\{\pm1/\sqrt d\}^d` uniform
(so :math:`x=z/\sqrt d` with z a point of the package's hypercube {±1}^d) and labels
:math:`y=d^3x_{i_1}\cdots x_{i_6}=z_{i_1}\cdots z_{i_6}\in\{\pm1\}`. Norms are reported in the paper's unit
:math:`\|W\|_F/\sqrt d`, which is the Frobenius norm of :math:`W/\sqrt d`, the weights acting on z.

Public names
------------
PAPER_POINTS, PAPER_SGD_BEST
    The reported (norm / sqrt d, MSE) of the hand constructions (App. A.1) and SGD's best test error at d = 40,
    N = 5000 (App. A.1, Fig. 3(a)).
signs, network, parity_labels, population_mse, paper_norm, level_norm, duplicate, pad, rademacher_bound
    The fixed output layer, F(W; x), the labels, the exact population MSE (enumeration), the norm in the paper's
    unit, the smallest norm on the ray {tW} that reaches a given MSE (exact, by homogeneity), the maps of
    footnote 13 (row duplication, zero padding) and the Rademacher bound of App. A.1.
"""
from __future__ import annotations

import math

import numpy as np

from ..._validate import FiniteArray, Integer, InvalidParameterError, Interval, check
from .hypercube import hypercube_points

__all__ = ["PAPER_POINTS", "PAPER_SGD_BEST", "signs", "check_support", "network", "parity_labels", "population_mse",
           "paper_norm", "level_norm", "duplicate", "pad", "rademacher_bound"]

#: (||W*||_F / sqrt d, population MSE) of the three hand constructions, [AllenZhu19, App. A.1].
PAPER_POINTS = ((9.7, 0.12), (12.5, 0.037), (13.8, 0.011))
#: SGD's best test error at d = 40, N = 5000 over lr, wd and m ([AllenZhu19, App. A.1, Fig. 3(a)]).
PAPER_SGD_BEST = 0.69

_OWNER = "resnet.minnorm"
_ENUM_D_MAX = 20  # 2^20 points, evaluated in chunks
_CHUNK = 2**14


def _weights(owner, W):
    W = check(owner, "W", W, FiniteArray(2))
    if W.shape[0] < 2 or W.shape[0] % 2 or W.shape[1] < 1:
        raise InvalidParameterError(f"The 'W' parameter of {owner} must be an (m, d) array with m >= 2 even and "
                                    f"d >= 1. Got shape {W.shape} instead.")
    return W


def check_support(owner, S, d):
    """The parity's support ``S`` as a sorted tuple of distinct coordinates in [0, d - 1]; raise naming 'S' of
    ``owner`` otherwise."""
    try:
        S = tuple(sorted(int(i) for i in S))
    except (TypeError, ValueError):
        raise InvalidParameterError(f"The 'S' parameter of {owner} must be distinct integers in [0, {d - 1}]. "
                                    f"Got {S!r} instead.") from None
    if len(set(S)) != len(S) or not S or S[0] < 0 or S[-1] >= d:
        raise InvalidParameterError(f"The 'S' parameter of {owner} must be distinct integers in [0, {d - 1}] "
                                    f"(at least one). Got {S!r} instead.")
    return S


def signs(m):
    r"""The fixed output layer :math:`a=(1,\dots,1,-1,\dots,-1)/\sqrt m` (m/2 of each sign, App. A.1).

    Parameters
    ----------
    m : int
        Even width, m >= 2.

    Returns
    -------
    ndarray, shape (m,)

    Notes
    -----
    Regime: any even m; which neurons carry which sign is immaterial (a permutation of the rows of W).

    References
    ----------
    .. [src] [AllenZhu19, App. A.1].

    Examples
    --------
    >>> signs(4) * 2
    array([ 1.,  1., -1., -1.])
    """
    m = check("resnet.signs", "m", m, Integer(2))
    if m % 2:
        raise InvalidParameterError(f"The 'm' parameter of resnet.signs must be an even integer >= 2. Got {m}.")
    return np.r_[np.ones(m // 2), -np.ones(m // 2)] / math.sqrt(m)


def network(W, X, a=None):
    r"""The two-layer network :math:`F(W;x)=a^\top\sigma(Wx)`, σ = ReLU, for the rows x of ``X`` (App. A.1).

    Parameters
    ----------
    W : (m, d) array
        Hidden weights (m even).
    X : (n, d) array
        Inputs (any reals; the paper's are ±1/sqrt d).
    a : (m,) array, optional
        Output weights; default :func:`signs` (m).

    Returns
    -------
    ndarray, shape (n,)

    Notes
    -----
    Regime: exact. F is positively homogeneous of degree 1 in W, the fact :func:`level_norm` uses.

    References
    ----------
    .. [src] [AllenZhu19, App. A.1].

    Examples
    --------
    >>> network(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[2.0, 1.0]])) * np.sqrt(2)
    array([1.])
    """
    W = _weights("resnet.network", W)
    X = check("resnet.network", "X", X, FiniteArray(2, shape=(None, W.shape[1])))
    a = signs(W.shape[0]) if a is None else check("resnet.network", "a", a, FiniteArray(1, shape=(W.shape[0],)))
    return np.maximum(X @ W.T, 0.0) @ a


def parity_labels(X, S=range(6)):
    r"""The labels :math:`y=d^{|S|/2}\prod_{i\in S}x_i` (for |S| = 6: :math:`d^3x_{i_1}\cdots x_{i_6}`, App. A.1).

    Parameters
    ----------
    X : (n, d) array
        Inputs in {±1/sqrt d}^d.
    S : iterable of int
        The distinct 0-based coordinates (default 0..5).

    Returns
    -------
    ndarray, shape (n,), entries ±1

    Notes
    -----
    Regime: exact; refuses inputs off the scaled cube.

    References
    ----------
    .. [src] [AllenZhu19, App. A.1].

    Examples
    --------
    >>> parity_labels(np.array([[0.5, -0.5, 0.5, 0.5]]), S=(0, 1))
    array([-1.])
    """
    X = check("resnet.parity_labels", "X", X, FiniteArray(2))
    d = X.shape[1]
    S = check_support("resnet.parity_labels", S, d)
    Z = X * math.sqrt(d)
    if not np.allclose(np.abs(Z), 1.0, rtol=0, atol=1e-12):
        raise InvalidParameterError("The 'X' parameter of resnet.parity_labels must have entries ±1/sqrt(d). "
                                    f"Got values in [{X.min()}, {X.max()}].")
    return np.prod(np.sign(Z[:, list(S)]), axis=1)


def _moments(owner, W, S, a):
    """(E F(W;x)^2, E F(W;x) y) by enumerating the columns that are nonzero or in S (y^2 = 1)."""
    W = _weights(owner, W)
    d = W.shape[1]
    S = check_support(owner, S, d)
    a = signs(W.shape[0]) if a is None else check(owner, "a", a, FiniteArray(1, shape=(W.shape[0],)))
    T = sorted(set(S) | set(np.flatnonzero(np.any(W != 0.0, axis=0)).tolist()))
    if len(T) > _ENUM_D_MAX:
        raise InvalidParameterError(f"The 'W' parameter of {owner} must have at most {_ENUM_D_MAX} columns that "
                                    f"are nonzero or in S (exact enumeration). Got {len(T)}.")
    Z = hypercube_points(len(T))
    Wt = W[:, T] / math.sqrt(d)
    cols = [T.index(i) for i in S]
    q = p = 0.0
    for lo in range(0, Z.shape[0], _CHUNK):
        z = Z[lo:lo + _CHUNK]
        F = np.maximum(z @ Wt.T, 0.0) @ a
        q += float(F @ F)
        p += float(F @ np.prod(z[:, cols], axis=1))
    return q / Z.shape[0], p / Z.shape[0]


def population_mse(W, S=range(6), a=None):
    r"""The exact population error :math:`\mathbb E_x|F(W;x)-y|^2` over x uniform on {±1/√d}^d (App. A.1).

    .. math::
        \mathrm{MSE}(W)=2^{-d'}\sum_{z\in\{\pm1\}^{d'}}\big(a^\top\sigma(W_{:,T}\,z/\sqrt d)-\textstyle\prod_{i\in S}z_i
        \big)^2,

    where T is the set of columns of W that are not identically zero together with S, and d' = |T| (the
    coordinates outside T do not enter F or y, so they average out exactly).

    Parameters
    ----------
    W : (m, d) array
        Hidden weights in the paper's units (acting on x = z / sqrt d).
    S : iterable of int
        Support of the parity (default 0..5).
    a : (m,) array, optional
        Output weights; default :func:`signs` (m).

    Returns
    -------
    float

    Notes
    -----
    Regime: exact enumeration of :math:`2^{d'}` points, d' <= 20 (zero-padded constructions: d' = 6 for any d).
    Accuracy: absolute error <= 8 (m d' + 2^d') eps (E F^2 + 1) (enumeration sums; never below -that, a cancellation
    near MSE 0). Measured: 0.0011 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, App. A.1]; the exact enumeration is popdyn's (docs/resnet.md).

    Examples
    --------
    >>> round(population_mse(np.zeros((2, 6))), 12)
    1.0
    """
    q, p = _moments("resnet.population_mse", W, S, a)
    return q - 2.0 * p + 1.0


def paper_norm(W):
    r"""The norm in the paper's unit, :math:`\|W\|_F/\sqrt d` (App. A.1).

    Parameters
    ----------
    W : (m, d) array

    Returns
    -------
    float

    Notes
    -----
    Regime: exact. Invariant under :func:`duplicate` and :func:`pad` (footnote 13).
    Accuracy: relative error <= (m d + 2) eps.

    References
    ----------
    .. [src] [AllenZhu19, App. A.1].

    Examples
    --------
    >>> paper_norm(np.full((2, 4), 0.5))
    0.7071067811865476
    """
    W = _weights("resnet.paper_norm", W)
    return float(np.linalg.norm(W) / math.sqrt(W.shape[1]))


def level_norm(W, mse, S=range(6), a=None):
    r"""The smallest norm :math:`\|tW\|_F/\sqrt d` over t >= 0 with :math:`\mathrm{MSE}(tW)\le` ``mse``.

    F is positively homogeneous, :math:`F(tW;x)=tF(W;x)`, and :math:`y^2=1`, so
    :math:`\mathrm{MSE}(tW)=t^2q-2tp+1` with :math:`q=\mathbb E F(W;x)^2`, :math:`p=\mathbb E F(W;x)y`, and

    .. math::
        t^*=\frac{p-\sqrt{p^2-q(1-\varepsilon)}}{q},\qquad \text{level norm}=t^*\|W\|_F/\sqrt d,

    or +inf when :math:`p^2<q(1-\varepsilon)` (the ray never reaches ε).

    Parameters
    ----------
    W : (m, d) array
        Any nonzero hidden weights (its direction is what matters).
    mse : float
        The level ε in (0, 1).
    S, a
        As in :func:`population_mse`.

    Returns
    -------
    float

    Notes
    -----
    Regime: exact (p, q by the enumeration of :func:`population_mse`). It is a function of the direction of W only;
    the Pareto solver scans it over trained directions.
    Accuracy: relative error <= 1e-12 for every mse in (0, 1) including mse -> 1 (the root as (1 - eps)/(p +
    sqrt(disc)): the form p - sqrt(disc) was 8e-9 relative at mse = 1 - 1e-12); inf exactly when the ray never
    reaches the level. Measured: 0.026 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, App. A.1] (homogeneity of a^T relu(Wx)).

    Examples
    --------
    >>> W = np.zeros((2, 6)); W[0, 0] = 1.0
    >>> level_norm(W, 0.5)
    inf
    """
    W = _weights("resnet.level_norm", W)
    eps = check("resnet.level_norm", "mse", mse, Interval(0.0, 1.0, "neither"))
    q, p = _moments("resnet.level_norm", W, S, a)
    disc = p * p - q * (1.0 - eps)
    if p <= 0.0 or disc < 0.0:  # also W = 0 (q = p = 0): MSE(tW) = 1 > eps for every t
        return math.inf
    # t* = (p - sqrt(disc))/q = (1 - eps)/(p + sqrt(disc)): no cancellation as eps -> 1 (was 8e-9 rel.)
    return float((1.0 - eps) / (p + math.sqrt(disc)) * paper_norm(W))


def duplicate(W, c, a=None):
    r"""Footnote 13's width map: each row of W repeated c times, :math:`W\mapsto W/\sqrt c`, :math:`a\mapsto a/\sqrt c`.

    .. math::
        F(W';x)=\sum_{j}\sum_{r=1}^{c}\frac{a_j}{\sqrt c}\sigma\Big(\frac{W_jx}{\sqrt c}\Big)=F(W;x),\qquad
        \|W'\|_F=\|W\|_F.

    Parameters
    ----------
    W : (m, d) array
    c : int
        Copies, c >= 1.
    a : (m,) array, optional
        Default :func:`signs` (m).

    Returns
    -------
    (W', a') : ndarrays of shapes (c m, d) and (c m,)
        With a = signs(m), a' holds ±1/sqrt(c m), c m / 2 of each sign: a' is signs(c m) up to a row permutation.

    Notes
    -----
    Regime: exact.
    Accuracy: relative error <= eps per entry (one division).

    References
    ----------
    .. [src] [AllenZhu19, App. A.1, footnote 13].

    Examples
    --------
    >>> duplicate(np.ones((2, 1)), 4)[0].shape
    (8, 1)
    """
    W = _weights("resnet.duplicate", W)
    c = check("resnet.duplicate", "c", c, Integer(1))
    a = signs(W.shape[0]) if a is None else check("resnet.duplicate", "a", a, FiniteArray(1, shape=(W.shape[0],)))
    return np.repeat(W, c, axis=0) / math.sqrt(c), np.repeat(a, c) / math.sqrt(c)


def pad(W, d):
    r"""Footnote 13's dimension map: W (m, d0) zero-padded to d columns and scaled by :math:`\sqrt{d/d_0}`.

    Inputs are ±1/√d, so the first d0 coordinates of x in d dimensions are :math:`\sqrt{d_0/d}` times those in d0
    dimensions; the scale keeps F on those coordinates, and

    .. math::
        \frac{\|W'\|_F}{\sqrt d}=\frac{\|W\|_F}{\sqrt{d_0}},\qquad \mathrm{MSE}(W')=\mathrm{MSE}(W)\ (S\subseteq[d_0]).

    Parameters
    ----------
    W : (m, d0) array
    d : int
        Target dimension, d >= d0.

    Returns
    -------
    ndarray, shape (m, d)

    Notes
    -----
    Regime: exact. The paper says only "pad W* with d - 6 zero columns" (footnote 13); the scale sqrt(d/6) is what makes
    its norms scale as sqrt d (App. A.1).
    Accuracy: relative error <= 2 eps per entry.

    References
    ----------
    .. [src] [AllenZhu19, App. A.1, footnote 13].

    Examples
    --------
    >>> pad(np.ones((2, 1)), 4)
    array([[2., 0., 0., 0.],
           [2., 0., 0., 0.]])
    """
    W = _weights("resnet.pad", W)
    d0 = W.shape[1]
    d = check("resnet.pad", "d", d, Integer(d0))
    out = np.zeros((W.shape[0], d))
    out[:, :d0] = W * math.sqrt(d / d0)
    return out


def rademacher_bound(W, N, form="frobenius"):
    r"""The Rademacher-complexity bound of App. A.1 for the class of networks with W's norms, from N samples.

    .. math::
        \frac{\frac{2}{\sqrt m}\sum_{j}\|W_j\|_2}{\sqrt N}\ \le\ \frac{2\|W\|_F}{\sqrt N}
        \quad(\text{``rows''}\ \le\ \text{``frobenius''}, Cauchy–Schwarz).

    Parameters
    ----------
    W : (m, d) array
        Weights in the paper's units (inputs of norm 1).
    N : int
        Number of samples, N >= 1.
    form : {"frobenius", "rows"}

    Returns
    -------
    float

    Notes
    -----
    Regime: a bound on the Rademacher complexity, not on the test error; turning it into a squared-loss
    generalization bound costs a Lipschitz factor and a concentration term (footnote 14 cites [15, 27, 25]).
    Accuracy: relative error <= (m d + 4) eps.

    References
    ----------
    .. [src] [AllenZhu19, App. A.1, footnote 14].

    Examples
    --------
    >>> rademacher_bound(np.ones((2, 1)), 4)
    1.4142135623730951
    """
    W = _weights("resnet.rademacher_bound", W)
    N = check("resnet.rademacher_bound", "N", N, Integer(1))
    if form == "frobenius":
        return float(2.0 * np.linalg.norm(W) / math.sqrt(N))
    if form == "rows":
        return float(2.0 / math.sqrt(W.shape[0]) * np.linalg.norm(W, axis=1).sum() / math.sqrt(N))
    raise InvalidParameterError(f"The 'form' parameter of resnet.rademacher_bound must be one of ['frobenius', "
                                f"'rows']. Got {form!r} instead.")
