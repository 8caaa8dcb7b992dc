r"""Target functions H = beta F + alpha G(F) of [AllenZhu19] on the hypercube x in {±1}^d, with exact Walsh expansions.

Public names
------------
:class:`CompositionTarget`
    H_r(x) = beta F_r(x) + alpha G_r(F(x)) with every F_r a scaled parity of x and every G_r a scaled product of
    outputs of F (or zero); evaluation on ±1 inputs (``target(X)``, ``.F``, ``.G``) and ``.walsh()``.
:func:`thm2_target`
    The Theorem 2 target (Section 7, rescaled to {±1}^d as in App. E), and its normalized Cor. 7.1 form whose G is
    evaluated through the polarization sum (App. E.4).
:func:`fig2_target`
    The Figure 2 task (Section 6): degree-2 parities F and degree-4 products G, cyclic by default.
:func:`polarization_G`
    The 2^k polarization terms of Cor. 7.1 (App. E.4).

Conventions: inputs are x in {±1}^d; a Walsh expansion is a dict from a sorted tuple of 0-based
coordinates (() for the constant) to its coefficient, one dict per output.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

import numpy as np

from ..._validate import FiniteArray, Interval, InvalidParameterError, Options, as_int, check
from .hypercube import _points

__all__ = ["CompositionTarget", "thm2_target", "fig2_target", "polarization_G"]

_OWNER = "resnet.targets"
_NONNEG = Interval(0.0, np.inf, "left")
_REAL = Interval(-np.inf, np.inf, "neither")


def _parity(X, cols):
    return np.prod(X[:, list(cols)], axis=1) if cols else np.ones(X.shape[0])


def _symdiff(sets):
    out = set()
    for s in sets:
        out ^= set(s)
    return tuple(sorted(out))


@dataclass(frozen=True)
class CompositionTarget:
    r"""H(x) = beta F(x) + alpha G(F(x)) with parity features F and product maps G (Concept 1, Section 5).

    .. math::
        \mathcal F_r(x)=f\,\chi_{A_r}(x),\qquad \mathcal G_r(y)=g\prod_{j\in J_r}y_j,\qquad
        \mathcal H_r=\beta\mathcal F_r+\alpha\,\mathcal G_r\circ\mathcal F
        =\beta f\chi_{A_r}+\alpha g f^{|J_r|}\chi_{\triangle_{j\in J_r}A_j},

    with chi_A(x) = prod_{i in A} x_i and the triangle the symmetric difference (a product of parities is the parity
    of the symmetric difference, since x_i^2 = 1).

    Parameters
    ----------
    d : int
        Input dimension, x in {±1}^d.
    F_sets : tuple of tuple of int
        A_r for each output r (0-based coordinates of x); k = len(F_sets).
    G_sets : tuple of (tuple of int or None)
        J_r for each output r (0-based indices of outputs of F); None makes G_r = 0.
    alpha, beta : float
        Weights of G(F) and F.
    f_scale, g_scale : float
        f and g above.
    polarization : bool
        Evaluate G through the polarization sum of :func:`polarization_G` (then every J_r is all of [k] and
        g = k^{k/2}/sqrt(k), Cor. 7.1) instead of the product; ``.walsh()`` is unchanged.

    Notes
    -----
    Regime: any d; the Walsh expansion is exact. "G not learned" (the predictor beta F) has error
    ``error_G_not_learned`` = sum_r alpha^2 g^2 f^(2|J_r|) (= k alpha^2 for the Fig. 2 and Theorem 2 targets),
    the zero predictor ``error_zero_predictor`` = E||H||^2 (Parseval).

    References
    ----------
    .. [src] [AllenZhu19, Concept 1 (Section 5), Fig. 2 (Section 6), Section 7, App. E.4]; the Walsh expansions derived
       in docs/resnet.md
    """
    d: int
    F_sets: tuple
    G_sets: tuple
    alpha: float
    beta: float = 1.0
    f_scale: float = 1.0
    g_scale: float = 1.0
    polarization: bool = False

    def __post_init__(self):
        owner = "resnet.CompositionTarget"
        d = as_int(owner, "d", self.d, 1)
        F_sets = tuple(tuple(sorted(as_int(owner, "F_sets", i, 0, d - 1) for i in s)) for s in self.F_sets)
        k = len(F_sets)
        if k == 0 or any(len(set(s)) != len(s) for s in F_sets):
            raise InvalidParameterError(f"The 'F_sets' parameter of {owner} must be a non-empty tuple of sets of "
                                        f"distinct coordinates in [0, {d - 1}]. Got {self.F_sets!r} instead.")
        if len(self.G_sets) != k:
            raise InvalidParameterError(f"The 'G_sets' parameter of {owner} must have one entry per output "
                                        f"(k = {k}). Got {self.G_sets!r} instead.")
        G_sets = tuple(None if s is None else tuple(as_int(owner, "G_sets", j, 0, k - 1) for j in s)
                       for s in self.G_sets)
        if self.polarization and (any(s != tuple(range(k)) for s in G_sets)
                                  or not math.isclose(self.g_scale, k ** (k / 2) / math.sqrt(k))):
            raise InvalidParameterError(f"The 'polarization' parameter of {owner} needs every G_sets entry equal to "
                                        f"{tuple(range(k))} and g_scale = k^(k/2)/sqrt(k). Got {self.G_sets!r}, "
                                        f"{self.g_scale!r} instead.")
        for name, value in (("d", d), ("F_sets", F_sets), ("G_sets", G_sets),
                            ("alpha", check(owner, "alpha", self.alpha, _REAL)),
                            ("beta", check(owner, "beta", self.beta, _REAL)),
                            ("f_scale", check(owner, "f_scale", self.f_scale, _REAL)),
                            ("g_scale", check(owner, "g_scale", self.g_scale, _REAL)),
                            ("polarization", bool(self.polarization))):
            object.__setattr__(self, name, value)

    @property
    def k(self):
        """Number of outputs."""
        return len(self.F_sets)

    @property
    def GF_sets(self):
        """For each output r, the coordinates of the parity G_r(F(x)) (None where G_r = 0)."""
        return tuple(None if J is None else _symdiff(self.F_sets[j] for j in J) for J in self.G_sets)

    def F(self, X):
        """F(X), shape (n, k), for X in {±1}^(n, d)."""
        X = _points("resnet.CompositionTarget.F", X, self.d)
        return self.f_scale * np.stack([_parity(X, A) for A in self.F_sets], axis=1)

    def G(self, Y):
        """G(Y), shape (n, k), for any real Y of shape (n, k) (the polarization sum when ``polarization``)."""
        Y = check("resnet.CompositionTarget.G", "Y", Y, FiniteArray(2, (None, self.k)))
        if self.polarization:
            a_star, V = polarization_G(self.k)
            g = ((Y @ V.T) ** self.k) @ a_star
            return np.repeat(g[:, None], self.k, axis=1)
        cols = [np.zeros(Y.shape[0]) if J is None else np.prod(Y[:, list(J)], axis=1) for J in self.G_sets]
        return self.g_scale * np.stack(cols, axis=1)

    def __call__(self, X):
        """H(X) = beta F(X) + alpha G(F(X)), shape (n, k)."""
        FX = self.F(X)
        return self.beta * FX + self.alpha * self.G(FX)

    def walsh(self):
        """One Walsh expansion per output: {sorted coordinate tuple: coefficient}, zero coefficients dropped."""
        out = []
        for A, J, B in zip(self.F_sets, self.G_sets, self.GF_sets):
            w = {A: self.beta * self.f_scale}
            if J is not None:
                w[B] = w.get(B, 0.0) + self.alpha * self.g_scale * self.f_scale ** len(J)
            out.append({S: c for S, c in w.items() if c != 0.0})
        return out

    @property
    def error_G_not_learned(self):
        """E||H - beta F||^2 = sum_r (alpha g f^|J_r|)^2: the plateau of a predictor that learned only F."""
        return float(sum((self.alpha * self.g_scale * self.f_scale ** len(J)) ** 2
                         for J in self.G_sets if J is not None))

    @property
    def error_zero_predictor(self):
        """E||H||^2 = sum of the squared Walsh coefficients (Parseval)."""
        return float(sum(c * c for w in self.walsh() for c in w.values()))


def polarization_G(k):
    r"""The polarization terms of Cor. 7.1: G(z) = sum_s a*_s <v_s, z>^k = k^{k/2}/sqrt(k) prod_i z_i.

    .. math::
        \mathcal G_r(z)=\frac{k^k}{\sqrt k\,k!\,2^k}\sum_{s\in\{0,1\}^k}(-1)^{s_1+\dots+s_k}
        \Big(\sum_{i\in[k]}\frac{(-1)^{s_i}z_i}{\sqrt k}\Big)^k=\frac{k^{k/2}}{\sqrt k}\prod_{i\in[k]}z_i .

    Parameters
    ----------
    k : int
        Degree, 1 <= k <= 20 (2^k terms).

    Returns
    -------
    a_star : ndarray, shape (2^k,)
        a*_s = (-1)^{|s|} k^k/(sqrt(k) k! 2^k). Concept 1 asks |a*| <= 1 (Section 5), which holds for k <= 10 only
        (0.851 at k = 10, 1.0523 at k = 11; absorbing a* into the activation fixes it).
    V : ndarray, shape (2^k, k)
        Unit rows v_s = ((-1)^{s_i}/sqrt(k))_i, s in lexicographic order. In Concept 1's normalization
        (||v*|| = 1/sqrt(2), Section 5) v* = v_s/sqrt(2) with activation t -> (sqrt(2) t)^k, so p_G = 2^k and
        C_s(G) = C* (k+1) 2^{k/2} (docs/resnet.md).

    Notes
    -----
    Regime: exact identity for every real z (the classical polarization of the monomial prod z_i); float64
    cancellation grows with k (the terms are up to k^{k/2} times larger than the result).
    Accuracy: the identity holds in float64 to 4 (k + 2) eps :math:`\sum_s|a^*_s||\langle v_s,z\rangle|^k` (the
    declared cancellation). Measured: 0.092 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, proof of Corollary 7.1 (App. E.4)]

    Examples
    --------
    >>> a, V = polarization_G(3)
    >>> z = np.array([[0.5, -2.0, 1.5]])
    >>> round(float(((z @ V.T) ** 3 @ a)[0]), 12), float(3 * np.prod(z))
    (-4.5, -4.5)
    """
    k = as_int("resnet.polarization_G", "k", k, 1, 20)
    s = np.array(list(product((0, 1), repeat=k)), dtype=np.int64).reshape(-1, k)
    a_star = (-1.0) ** s.sum(axis=1) * (k ** k / (math.sqrt(k) * math.factorial(k) * 2 ** k))
    V = (-1.0) ** s / math.sqrt(k)
    return a_star, V


def thm2_target(d, k, alpha, S=None, normalized=False, rng=None):
    r"""The Theorem 2 target on z = sqrt(d) x in {±1}^d; with ``normalized`` the Cor. 7.1 form.

    .. math::
        \mathcal H_i(z)=z_{S_i}+\alpha\,\chi_{S}(z)\quad(i\in[k]);\qquad
        \text{normalized: }\mathcal F_i=z_{S_i}/\sqrt k,\ \mathcal G_i(y)=\tfrac{k^{k/2}}{\sqrt k}\prod_j y_j,\ 
        \mathcal H_i=\tfrac1{\sqrt k}\big(z_{S_i}+\alpha\chi_S(z)\big),

    with G of the normalized form evaluated through the polarization sum (:func:`polarization_G`).

    Parameters
    ----------
    d : int
        Dimension, d >= 1.
    k : int
        Number of relevant coordinates and of outputs, 1 <= k <= d (the paper: k >= 4 for Theorem 2,
        k >= 2 for Cor. 7.1; k <= 20 with ``normalized``).
    alpha : float
        Weight of G(F), >= 0 (Theorem 2: alpha in [Omega(d^{-k/4}), 1]).
    S : sequence of int or None
        The k distinct coordinates i_1..i_k (0-based); output i reads S[i]. None draws them uniformly with
        ``rng`` (Section 7).
    normalized : bool
        The Cor. 7.1 version with ||F(x)|| = 1 (an overall 1/sqrt(k)).
    rng : None, int or numpy.random.Generator
        Source of S when S is None (``numpy.random.default_rng(rng)``).

    Returns
    -------
    CompositionTarget
        ``.walsh()[i] = {(S_i,): c, sorted(S): alpha c}`` with c = 1 (or 1/sqrt(k) normalized);
        ``error_G_not_learned`` = k alpha^2 (alpha^2 normalized).

    Notes
    -----
    Regime: the distribution of Theorem 2 (x uniform on {±1/sqrt(d)}^d, Section 7) after the rescaling of App. E;
    any d >= k here (the theorem's N-range is empty at simulable d, see
    :func:`popdyn.models.resnet.theory.thm2_N_range`).

    References
    ----------
    .. [src] [AllenZhu19, Section 7, Theorem 2, App. E, App. E.4]

    Examples
    --------
    >>> thm2_target(6, 2, 0.5, S=[4, 1]).walsh()
    [{(4,): 1.0, (1, 4): 0.5}, {(1,): 1.0, (1, 4): 0.5}]
    """
    owner = "resnet.thm2_target"
    d = as_int(owner, "d", d, 1)
    k = as_int(owner, "k", k, 1, min(d, 20) if normalized else d)
    alpha = check(owner, "alpha", alpha, _NONNEG)
    if S is None:
        S = np.random.default_rng(rng).choice(d, size=k, replace=False)
    S = tuple(as_int(owner, "S", s, 0, d - 1) for s in np.atleast_1d(np.asarray(S, dtype=object)))
    if len(S) != k or len(set(S)) != k:
        raise InvalidParameterError(f"The 'S' parameter of {owner} must be {k} distinct coordinates in "
                                    f"[0, {d - 1}]. Got {S!r} instead.")
    f, g = (1 / math.sqrt(k), k ** (k / 2) / math.sqrt(k)) if normalized else (1.0, 1.0)
    return CompositionTarget(d, tuple((s,) for s in S), (tuple(range(k)),) * k, alpha, 1.0, f, g,
                             polarization=bool(normalized))


def fig2_target(d=30, k=8, alpha=0.3, beta=1.0, G="cyclic", q=4):
    r"""The Figure 2 task: F_r = x_{2r} x_{2r+1} (0-based), G_r a product of q outputs of F.

    .. math::
        \mathcal F(x)=(x_1x_2,\dots,x_{2k-1}x_{2k}),\qquad
        \text{cyclic: }\mathcal G_r(y)=\prod_{j=0}^{q-1}y_{r+j \bmod k},\qquad
        \text{paper\_literal: }\mathcal G(y)=(y_1\cdots y_q,\ y_{q+1}\cdots y_{2q},\dots,0,\dots,0),

    H = beta F + alpha G(F) (1-based indices in the formula). Each G_r(F) is a parity of degree 2q (8 at the
    defaults), so the "G not learned" plateau is k alpha^2 = 0.72 (cyclic, Section 6) or (k/q) alpha^2 = 0.18 (literal).

    Parameters
    ----------
    d : int
        Input dimension, d >= 2k (the paper: 30).
    k : int
        Outputs of F and H, k >= 1 (the paper: 8).
    alpha, beta : float
        H = beta F + alpha G(F) (the paper: alpha = 0.3, beta = 1; panel (c) varies beta, Section 6).
    G : {"cyclic", "paper_literal"}
        "cyclic" (popdyn's convention, docs/resnet.md; every output a distinct degree-2q parity) or the G printed in
        Section 6
        (k/q outputs, the rest zero; needs q | k).
    q : int
        Degree of G, 1 <= q <= k (the paper: 4).

    Returns
    -------
    CompositionTarget

    Notes
    -----
    Regime: x uniform on {±1}^d, not normalized (Section 6). Section 6 prints G with 2 outputs while its plateau
    k alpha^2 = 0.72 needs 8 (docs/errata.md); "cyclic" is the default that makes the plateau hold.

    References
    ----------
    .. [src] [AllenZhu19, Section 6 (Fig. 2), App. A]

    Examples
    --------
    >>> t = fig2_target()
    >>> t.walsh()[0][(0, 1)], t.GF_sets[0], round(t.error_G_not_learned, 12)
    (1.0, (0, 1, 2, 3, 4, 5, 6, 7), 0.72)
    """
    owner = "resnet.fig2_target"
    k = as_int(owner, "k", k, 1)
    d = as_int(owner, "d", d, 2 * k)
    q = as_int(owner, "q", q, 1, k)
    G = check(owner, "G", G, Options(("cyclic", "paper_literal")))
    if G == "cyclic":
        G_sets = tuple(tuple((r + j) % k for j in range(q)) for r in range(k))
    else:
        if k % q:
            raise InvalidParameterError(f"The 'q' parameter of {owner} must divide k = {k} when G='paper_literal'. "
                                        f"Got {q!r} instead.")
        G_sets = tuple(tuple(range(r * q, (r + 1) * q)) if r < k // q else None for r in range(k))
    return CompositionTarget(d, tuple((2 * r, 2 * r + 1) for r in range(k)), G_sets, alpha, beta)
