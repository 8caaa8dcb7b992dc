r"""Parity data models of the gradient-feature framework ([Shi24] App. B.5.4-B.5.6; docs/gradient_features.md).

* :class:`StructuredParity` ``(d, r, k, p_A, p_o, M=None)``: :math:`\mathbf x=M\phi`,
  :math:`y=\mathrm{sign}\sum_{j\in[r]}\prod_{l\in A_j}\phi_l` (B.396-B.397). Sampler, features :math:`D_j`, exact
  :math:`\mathbb E[y\mathbf x]`, Assumption 3.1 moments, Monte Carlo :math:`G` (a numba kernel over the sparse
  :math:`\phi` when :math:`M=I`), exact G and A by enumeration for tiny d (the oracle), the positive-bias ground truth
  :math:`g^*` (docs/errata.md, Remark B.45) and its exact loss.
* :class:`UniformParity` ``(d, k, A=None)``: :math:`\mathbf x\sim U\{\pm1\}^d`, :math:`y=\chi_A(\mathbf x)`
  (Assumption B.53). Majority coefficients :math:`\xi_j`, exact :math:`G` and :math:`A` (with the factor 1/2
  the paper omits), :math:`g^*=\chi_A`.
* :func:`majority_coefficient`: :math:`\widehat{\mathrm{Maj}_n}(S)` for :math:`|S|=j`, exact to the last bit.

Coordinates: the class-relevant patterns are :math:`A=\{0,\dots,rk-1\}` with blocks
:math:`A_j=\{jk,\dots,(j+1)k-1\}` (0-based; the paper's :math:`A_j=\{(j-1)k+1,\dots,jk\}`). Weights are (M, d), one
row per neuron, and the indicator is strict, :math:`\mathbb I[\mathbf w^\top\mathbf x>b]`.
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numba
import numpy as np
from scipy import stats

from ..._jit import serial_and_parallel
from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, check
from .data import LOSSES, Bounds, DataModel, _as_neurons, _as_positive

__all__ = ["StructuredParity", "UniformParity", "majority_coefficient", "MonteCarloGradient"]

_ORTH_TOL = 1e-10        # ||M^T M - I||_max accepted for a dictionary: a QR in float64 gives ~1e-15
_ENUM_MAX = 1 << 18      # support points of the exact enumeration (memory ~ 2^18 d float64)
_GSTAR_MAX = 1 << 20     # block-sum configurations of the exact g* loss
_PARALLEL_WORK = 1 << 22  # nonzeros x neurons per chunk above which the kernel runs threaded (launch ~ms)
_BLOCK = 256             # samples per cache block of the numba kernel
_SCATTER_COST = 24       # scatter-add vs BLAS multiply-add cost (measured 16-26, 1 core, d = 1000): "auto" rule


def _require(owner, name, ok, allowed, value):
    if not ok:
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be {allowed}. Got {value!r} instead.")


def majority_coefficient(n, j, log=False):
    r"""Fourier coefficient :math:`\xi_j=\widehat{\mathrm{Maj}_n}(S)` of majority on n bits, for any :math:`|S|=j`.

    .. math:: \xi_j=(-1)^{\frac{j-1}2}\,\frac{\binom{(n-1)/2}{(j-1)/2}}{\binom{n-1}{j-1}}\;
              2^{-(n-1)}\binom{n-1}{\frac{n-1}2}\quad(j\ \text{odd}),\qquad \xi_j=0\quad(j\ \text{even}).

    Parameters
    ----------
    n : int
        Number of bits, odd, :math:`n\ge1` (the input dimension d: the paper's ``n`` here is not a sample size).
    j : int
        Size of the set S, :math:`0\le j\le n`.
    log : bool
        Return :math:`\log|\xi_j|` instead (:math:`-\infty` for even j); the sign is :math:`(-1)^{(j-1)/2}`.

    Returns
    -------
    float
        :math:`\xi_j`, the exact rational correctly rounded to float64. It underflows to 0 where
        :math:`|\xi_j|<5\times10^{-324}` (:math:`j\approx n/2` for :math:`n\gtrsim2000`); ``log=True`` does not,
        within a few ulp (:math:`\log m+e\log2` with :math:`|\xi_j|=m2^e`, m correctly rounded).

    Notes
    -----
    Accuracy: correctly rounded (<= 1/2 ulp of the exact rational, n to 10^4; measured 0.998 of the half ulp);
    ``log=True``: absolute error <= 4 eps max(1, |log xi|) (measured 0.27 of the bound).
    Regime: n odd (majority has no ties). The binomials are exact Python integers and the ratio is one correctly
    rounded integer division, so the value is exact to the last bit for any n (tested to n = 10^4; the log-binomial
    route, exp of gammaln sums, loses up to 7e-12 relative there). Majority is odd, so even-size coefficients vanish (j = 0 included).
    B.480 prints the numerator :math:`\binom{(d-1)/2}{(d-1)/2}`; B.547 (used here) is right (docs/errata.md).

    References
    ----------
    .. [src] [Shi24, (B.547), (B.480)]; O'Donnell (2014) Thm 5.19

    Examples
    --------
    >>> majority_coefficient(3, 1), majority_coefficient(3, 3), majority_coefficient(3, 2)
    (0.5, -0.5, 0.0)
    """
    owner = "gradient_features.majority_coefficient"
    n = check(owner, "n", n, Integer(1))
    _require(owner, "n", n % 2 == 1, "an odd int >= 1", n)
    j = check(owner, "j", j, Integer(0, n))
    if j % 2 == 0:
        return -math.inf if log else 0.0
    h, i = (n - 1) // 2, (j - 1) // 2
    num = math.comb(h, i) * math.comb(n - 1, h)
    den = math.comb(n - 1, j - 1) << (n - 1)
    if not log:
        return (-1) ** i * (num / den)
    e = num.bit_length() - den.bit_length()                       # |xi| = m 2^e with m in (1/2, 2)
    m = num / (den << e) if e >= 0 else (num << -e) / den
    return math.log(m) + e * math.log(2.0)


class MonteCarloGradient(NamedTuple):
    """Monte Carlo simplified gradient: ``G`` (M, d) and its per-coordinate standard errors ``se`` (M, d)."""
    G: np.ndarray
    se: np.ndarray


def _bump_network(D, k, positive_bias):
    r"""(a*, W*, b*) of :math:`\sum_j\sum_{i=0}^k(-1)^{k-i}\sqrt k\,T(\langle D_j,\mathbf x\rangle-c_i)`, the tent
    :math:`T(z)=\sigma(z+h)-2\sigma(z)+\sigma(z-h)`, :math:`h=1/\sqrt k`, :math:`c_i=(2i-k)/\sqrt k`; a tent with
    :math:`c_i<0` is written on :math:`-D_j` with biases :math:`|c_i|-h,|c_i|,|c_i|+h` when ``positive_bias``."""
    r, d = D.shape
    h = 1.0 / math.sqrt(k)
    c = (2.0 * np.arange(k + 1) - k) * h
    flip = (c < 0) if positive_bias else np.zeros(k + 1, bool)
    centre = np.where(flip, -c, c)
    b1 = (centre[:, None] + np.array([-h, 0.0, h])).ravel()                   # (3(k+1),)
    a1 = (((-1.0) ** (k - np.arange(k + 1)))[:, None] * math.sqrt(k) * np.array([1.0, -2.0, 1.0])).ravel()
    s1 = np.repeat(np.where(flip, -1.0, 1.0), 3)
    W = (s1[None, :, None] * D[:, None, :]).reshape(-1, d)
    return np.tile(a1, r), W, np.tile(b1, r)


def _check_neurons_pm1(owner, W, b, d):
    W, b, _ = _as_neurons(owner, W, b)
    _require(owner, "W", W.shape[1] == d, f"an (M, {d}) array", W.shape)
    _require(owner, "W", np.all(np.abs(W) == 1.0), "an (M, d) array of +-1 entries (the closed form of §2.6)",
             "entries other than +-1")
    _require(owner, "b", np.all(np.abs(b) < 1.0), "in (-1, 1) (so that 1[w.x > b] = (1 + Maj(w*x))/2)", b)
    return W, b


class UniformParity(DataModel):
    r"""Uniform sparse parity (Assumption B.53): :math:`\mathbf x\sim U\{\pm1\}^d`, :math:`y=\chi_A(\mathbf x)`.

    .. math:: G_j(\mathbf w,b)=\tfrac12\,\xi_{|A\triangle\{j\}|}\,\chi_{A\triangle\{j\}}(\mathbf w)
              +\tfrac12\,\mathbb I[A=\{j\}]\qquad(\mathbf w\in\{\pm1\}^d,\ |b|<1).

    Parameters
    ----------
    d : int
        Input dimension, odd (majority of d bits has no ties).
    k : int
        Parity degree, :math:`1\le k\le d`.
    A : array_like of int, optional
        The k relevant coordinates (distinct, in [0, d)); default :math:`\{0,\dots,k-1\}`.

    Notes
    -----
    Regime: the formulas hold for every d odd and k; the paper's Assumption B.53 also takes k even and
    :math:`d\ge2k^2`. For odd :math:`k\ge3`, :math:`G\equiv0` (every :math:`|A\triangle\{j\}|` is even): the first
    step learns nothing.

    References
    ----------
    .. [src] [Shi24, Assumption B.53-Theorem B.56, (B.546)-(B.557)]; exact G derived in docs/gradient_features.md
    """

    def __init__(self, d, k, A=None):
        owner = "gradient_features.UniformParity"
        self.d = check(owner, "d", d, Integer(1))
        _require(owner, "d", self.d % 2 == 1, "an odd int >= 1 (the majority closed form)", d)
        self.k = check(owner, "k", k, Integer(1, self.d))
        A = np.arange(self.k) if A is None else np.asarray(A)
        _require(owner, "A", A.shape == (self.k,) and np.issubdtype(A.dtype, np.integer)
                 and len(set(A.tolist())) == self.k and np.all((0 <= A) & (A < self.d)),
                 f"{self.k} distinct ints in [0, {self.d})", A)
        self.subset = np.sort(A)                                # the relevant coordinates A
        self.subset.setflags(write=False)

    def __repr__(self):
        return f"UniformParity(d={self.d}, k={self.k})"

    @property
    def dim(self) -> int:
        return self.d

    def xi(self, j):
        r"""Majority coefficient :math:`\xi_j` of :math:`\mathrm{Maj}_d` (:func:`majority_coefficient` with n = d)."""
        return majority_coefficient(self.d, j)

    def sample(self, n, rng):
        r"""Draw :math:`\mathbf x\sim U\{\pm1\}^d` and :math:`y=\prod_{l\in A}x_l`.

        Parameters
        ----------
        n : int
            Sample size.
        rng : numpy.random.Generator or int
            Randomness.

        Returns
        -------
        X : ndarray (n, d)
        y : ndarray (n,)
        """
        n = check(f"{self!r}.sample", "n", n, Integer(0))
        X = 2.0 * np.random.default_rng(rng).integers(0, 2, size=(n, self.d)) - 1.0
        return X, np.prod(X[:, self.subset], axis=1)

    def E_yx(self):
        r""":math:`\mathbb E[y\mathbf x]=\mathbf e_a` if :math:`A=\{a\}`, else 0."""
        out = np.zeros(self.d)
        if self.k == 1:
            out[self.subset[0]] = 1.0
        return out

    def bounds(self) -> Bounds:
        r""":math:`\|\mathbf x\|=\sqrt d` surely: :math:`B_x=B_{x1}=\sqrt d`, :math:`B_{x2}=d` (B.64)."""
        return Bounds(math.sqrt(self.d), math.sqrt(self.d), float(self.d))

    def features(self):
        r"""The gradient feature :math:`D=\sum_{l\in A}\mathbf e_l/\sqrt k` (B.478), shape (1, d)."""
        D = np.zeros((1, self.d))
        D[0, self.subset] = 1.0 / math.sqrt(self.k)
        return D

    def _coefficients(self, convention):
        inside, outside = self.xi(self.k - 1), self.xi(self.k + 1) if self.k < self.d else 0.0
        if convention == "paper":
            return np.full(self.d, inside)
        return 0.5 * np.where(np.isin(np.arange(self.d), self.subset), inside, outside)

    def simplified_gradient(self, W, b, convention="corrected"):
        r"""Exact :math:`G(\mathbf w_i,b_i)` for :math:`\mathbf w_i\in\{\pm1\}^d`, :math:`|b_i|<1`.

        With :math:`\mathbb I[\mathbf w^\top\mathbf x>b]=\frac12(1+\mathrm{Maj}(\mathbf w\odot\mathbf x))` and
        :math:`\chi_{A\triangle\{j\}}(\mathbf w)=\chi_A(\mathbf w)w_j`:

        .. math:: G_{ij}=\tfrac12\,\chi_A(\mathbf w_i)\,w_{ij}\,\begin{cases}\xi_{k-1},&j\in A\\
                  \xi_{k+1},&j\notin A\end{cases}\;+\;\tfrac12\,\mathbb I[A=\{j\}].

        Parameters
        ----------
        W : array_like, shape (M, d)
            Neuron weights with entries :math:`\pm1` (rows).
        b : array_like, shape (M,) or scalar
            Biases in (-1, 1); G does not depend on them there.
        convention : {"corrected", "paper"}
            "paper": B.548-B.549 as printed (no factor 1/2, :math:`\xi_{k-1}` also for :math:`j\notin A`).

        Returns
        -------
        G : ndarray (M, d)

        Notes
        -----
        Accuracy: each entry within 1/2 ulp of the exact rational (brute force over the cube, d <= 11; measured 0 ulp);
        entries below 5e-324 are 0.
        Regime: d odd, :math:`\mathbf w\in\{\pm1\}^d`, :math:`|b|<1`; exact (checked against brute force over
        :math:`\{\pm1\}^d` for d <= 15 with error 0 up to float rounding). Cost O(Md).

        References
        ----------
        .. [src] [Shi24, (B.546)-(B.549)]; derived in docs/gradient_features.md (corrections in docs/errata.md)

        Examples
        --------
        >>> up = UniformParity(5, 2)
        >>> up.simplified_gradient([1, 1, 1, 1, 1], 0.5)      # xi_1 = 3/8, xi_3 = -1/8
        array([[ 0.1875,  0.1875, -0.0625, -0.0625, -0.0625]])
        """
        owner = f"{self!r}.simplified_gradient"
        convention = check(owner, "convention", convention, Options(("corrected", "paper")))
        W, b = _check_neurons_pm1(owner, W, b, self.d)
        chi = np.prod(W[:, self.subset], axis=1)
        G = chi[:, None] * W * self._coefficients(convention)
        if self.k == 1 and convention == "corrected":
            G[:, self.subset[0]] += 0.5
        return G

    def A(self, W, b):
        r"""Exact :math:`A(\mathbf w_i,b_i)=\mathbb E[y\,\sigma(\mathbf w_i^\top\mathbf x-b_i)]` for
        :math:`\mathbf w_i\in\{\pm1\}^d`, :math:`|b_i|<1`.

        .. math:: A(\mathbf w,b)=\tfrac12\,\chi_A(\mathbf w)\big[k\,\xi_{k-1}+(d-k)\,\xi_{k+1}-b\,\xi_k
                  +\mathbb I[k=1]\big],

        from :math:`\sigma(\mathbf w^\top\mathbf x-b)=(\mathbf w^\top\mathbf x-b)\frac12(1+\mathrm{Maj}(\mathbf w\odot
        \mathbf x))` and :math:`\widehat{u_l\mathrm{Maj}}(S)=\xi_{|S\triangle\{l\}|}`; equivalently
        :math:`A=\langle\mathbf w,G\rangle-b\,\mathbb E[y\,\mathbb I[\mathbf w^\top\mathbf x>b]]`.

        Parameters
        ----------
        W : array_like, shape (M, d)
            Neuron weights with entries :math:`\pm1` (rows).
        b : array_like, shape (M,) or scalar
            Biases in (-1, 1).

        Returns
        -------
        A : ndarray (M,)

        Notes
        -----
        Accuracy: relative error <= 2 eps (exact rationals, brute force for d <= 11, the closed form for d to 4001;
        measured 0.35 of the bound; before: 31 times the bound, 1.4e-14, at d = 1001, k = 400, where k xi_{k-1} + (d -
        k) xi_{k+1} cancelled to xi_{k-1}).
        Regime: as :meth:`simplified_gradient`; exact (brute force over the cube in the tests). For even k the
        b term vanishes (:math:`\xi_k=0`).

        References
        ----------
        .. [src] derived in docs/gradient_features.md
        """
        W, b = _check_neurons_pm1(f"{self!r}.A", W, b, self.d)
        chi = np.prod(W[:, self.subset], axis=1)
        k, d = self.k, self.d
        # k xi_{k-1} + (d - k) xi_{k+1} = xi_{k-1} for k < d: (d - k) xi_{k+1} = -(k - 1) xi_{k-1} exactly (the ratio
        # of the closed forms), so the sum is formed without the cancellation k - (k - 1) (2k ulp lost otherwise)
        s = self.xi(k - 1) if k < d else k * self.xi(k - 1)
        return 0.5 * chi * (s - b * self.xi(k) + (1.0 if k == 1 else 0.0))

    def ground_truth(self):
        r"""The ground truth :math:`g^*=\chi_A` of Lemma B.64 (B.551): :math:`3(k+1)` ReLUs on the feature D.

        .. math:: g^*(\mathbf x)=\sum_{i=0}^k(-1)^{k-i}\sqrt k\Big[\sigma(z-\tfrac{2i-k-1}{\sqrt k})
                  -2\sigma(z-\tfrac{2i-k}{\sqrt k})+\sigma(z-\tfrac{2i-k+1}{\sqrt k})\Big],\quad
                  z=\langle D,\mathbf x\rangle.

        Returns
        -------
        a_star : ndarray (3(k+1),)
            :math:`\|\mathbf a^*\|_2^2=6k(k+1)` (the paper's :math:`B_{a2}=2\sqrt{k(k+1)}` is too small, erratum 5).
        W_star : ndarray (3(k+1), d)
            Rows :math:`D`.
        b_star : ndarray (3(k+1),)

        Notes
        -----
        Regime: any k; :math:`(-1)^{k-i}=(-1)^i` for the paper's even k. On the cube
        :math:`z=(2i-k)/\sqrt k` with i the number of +1 in :math:`\mathbf x_A`, so :math:`g^*=\chi_A` exactly.

        References
        ----------
        .. [src] [Shi24, Lemma B.64, (B.550)-(B.552)]; B_a2 corrected in docs/errata.md
        """
        return _bump_network(self.features(), self.k, positive_bias=False)

    def ground_truth_loss(self, loss="hinge"):
        r"""Exact risk of :meth:`ground_truth`: :math:`g^*` sees only :math:`z=\langle D,\mathbf x\rangle=(2i-k)/\sqrt k`,
        i the number of +1 in :math:`\mathbf x_A` (:math:`\mathrm{Bin}(k,1/2)`), where :math:`y=(-1)^{k-i}`.

        .. math:: \mathcal L_{\mathcal D}(g^*)=\sum_{i=0}^k\binom ki2^{-k}\,\ell\big((-1)^{k-i}g^*(z_iD)\big)

        Parameters
        ----------
        loss : {"hinge", "logistic"}
            The loss (logistic is base 2).

        Returns
        -------
        value, se : float
            The risk (hinge: O(1e-15), OPT = 0; base-2 logistic: :math:`\log_2(1+e^{-1})`) and its standard error
            (0: exact).

        Notes
        -----
        Regime: any k; exact up to float64 rounding of :math:`g^*`.

        References
        ----------
        .. [src] [Shi24, Lemma B.64] (OPT = 0); derived in docs/gradient_features.md
        """
        ell = LOSSES[check(f"{self!r}.ground_truth_loss", "loss", loss, Options(tuple(LOSSES)))]
        i = np.arange(self.k + 1)
        a, W, b = self.ground_truth()
        X = np.outer((2 * i - self.k) / math.sqrt(self.k), self.features()[0])   # a point with each z_i
        g = np.maximum(X @ W.T - b, 0.0) @ a
        return float(stats.binom.pmf(i, self.k, 0.5) @ ell((-1.0) ** (self.k - i) * g)), 0.0


# ---- structured parity --------------------------------------------------------------------------------------------

def _masked_sums(active, indptr, idx, val, y, G, S2, block, groups):
    """G[i] += sum_s y_s x_s active[i, s] and S2[i] += sum_s x_s^2 active[i, s] over the sparse rows x_s (CSR).

    One thread per group of neurons; each sweeps the samples ``block`` at a time and runs all its neurons over a
    block before the next, so the block's rows stay in cache. Only active (neuron, sample) pairs touch the rows."""
    M, n = active.shape
    for g in numba.prange(groups):
        for s0 in range(0, n, block):
            for i in range(g * M // groups, (g + 1) * M // groups):
                for s in range(s0, min(s0 + block, n)):
                    if active[i, s]:
                        for t in range(indptr[s], indptr[s + 1]):
                            G[i, idx[t]] += y[s] * val[t]
                            S2[i, idx[t]] += val[t] * val[t]


_masked_sums_serial, _masked_sums_parallel = serial_and_parallel(_masked_sums)


class StructuredParity(DataModel):
    r"""Structured parity (B.396-B.397): :math:`\mathbf x=M\phi`, :math:`y=\mathrm{sign}\sum_j\mathrm{XOR}(\phi_{A_j})`.

    .. math:: \phi\sim(1-2rp_A)\mathbf X_U+\sum_{j\in[r]}p_A(\mathbf X_{j,+}+\mathbf X_{j,-}),\qquad
              \phi_l\in\{+1,-1,0\}\ \text{w.p.}\ (p_o,p_o,1-2p_o)\ (l\notin A)\ \text{independently}.

    In :math:`\mathbf X_U`, :math:`\phi_A` is uniform on :math:`\{\pm1\}^{rk}`; in :math:`\mathbf X_{j,\pm}`,
    :math:`\phi_{A_j}=\pm\mathbf 1` and :math:`\phi_{A\setminus A_j}=0`.

    Parameters
    ----------
    d : int
        Input dimension, :math:`d\ge rk`.
    r : int
        Number of blocks, odd (so that the sum of block parities never vanishes).
    k : int
        Block size, odd (Assumption B.43; the bump ground truth needs it).
    p_A : float
        Weight of each structured component, :math:`0\le p_A\le1/(2r)`.
    p_o : float
        Probability of each of :math:`\pm1` for a noise coordinate, :math:`0\le p_o\le1/2`.
    M : array_like (d, d), optional
        Orthonormal dictionary (columns :math:`M_l`); default the identity.

    Notes
    -----
    Regime: any valid parameters; Lemma B.47's feature set needs Assumption B.43 (:math:`k\ge\Omega(\tau\log d)`,
    :math:`p_o=O(rk/(d-rk))`, :math:`p_A\ge1/d`). Remark B.45's :math:`\mathbb E[y\mathbf x]=0` is false
    (:meth:`E_yx`), so :meth:`ground_truth` uses only :math:`(\pm D_j,+1)` features (docs/errata.md).

    References
    ----------
    .. [src] [Shi24, Section 3.4.2, App. B.5.4, (B.396)-(B.399)]
    """

    def __init__(self, d, r, k, p_A, p_o, M=None):
        owner = "gradient_features.StructuredParity"
        self.d = check(owner, "d", d, Integer(1))
        self.r = check(owner, "r", r, Integer(1))
        _require(owner, "r", self.r % 2 == 1, "an odd int >= 1", r)
        self.k = check(owner, "k", k, Integer(1))
        _require(owner, "k", self.k % 2 == 1 and self.r * self.k <= self.d, f"an odd int in [1, d/r = {d}/{r}]", k)
        self.p_A = check(owner, "p_A", p_A, Interval(0.0, 1.0 / (2 * self.r)))
        self.p_o = check(owner, "p_o", p_o, Interval(0.0, 0.5))
        if M is not None:
            M = check(owner, "M", M, FiniteArray(2, (self.d, self.d)))
            err = float(np.max(np.abs(M.T @ M - np.eye(self.d))))
            _require(owner, "M", err <= _ORTH_TOL, f"orthonormal (max |M^T M - I| <= {_ORTH_TOL})",
                     f"a matrix with max |M^T M - I| = {err:.3g}")
        self.M = M

    def __repr__(self):
        return f"StructuredParity(d={self.d}, r={self.r}, k={self.k}, p_A={self.p_A}, p_o={self.p_o})"

    @property
    def dim(self) -> int:
        return self.d

    @property
    def _rk(self):
        return self.r * self.k

    def _weights(self):
        """Component weights: uniform, then (j, +), (j, -) for j in [r]."""
        return np.array([max(0.0, 1.0 - 2 * self.r * self.p_A)] + [self.p_A] * (2 * self.r))

    def _label(self, phiA):
        blocks = phiA.reshape(phiA.shape[0], self.r, self.k)
        return np.sign(np.prod(blocks, axis=2).sum(axis=1)).astype(np.float64)

    def _sample_phi(self, n, rng):
        """phi (n, d) int8 and y (n,) float."""
        rk, r, k = self._rk, self.r, self.k
        phi = np.zeros((n, self.d), dtype=np.int8)
        comp = rng.choice(2 * r + 1, size=n, p=self._weights())
        uni = comp == 0
        phi[uni, :rk] = 2 * rng.integers(0, 2, size=(int(uni.sum()), rk), dtype=np.int8) - 1
        for j in range(r):
            for sign, c in ((1, 2 * j + 1), (-1, 2 * j + 2)):
                phi[comp == c, j * k:(j + 1) * k] = sign
        u = rng.random((n, self.d - rk))
        phi[:, rk:] = np.where(u < self.p_o, 1, np.where(u < 2 * self.p_o, -1, 0))
        return phi, self._label(phi[:, :rk])

    def _embed(self, phi):
        phi = phi.astype(np.float64)
        return phi if self.M is None else phi @ self.M.T

    def sample(self, n, rng):
        r"""Draw :math:`(\mathbf x,y)`: a component, :math:`\phi_A` from it, iid noise :math:`\phi_{A^\perp}`,
        :math:`\mathbf x=M\phi`, :math:`y=\mathrm{sign}\sum_j\prod_{l\in A_j}\phi_l`.

        Parameters
        ----------
        n : int
            Sample size.
        rng : numpy.random.Generator or int
            Randomness.

        Returns
        -------
        X : ndarray (n, d)
        y : ndarray (n,)
        """
        n = check(f"{self!r}.sample", "n", n, Integer(0))
        phi, y = self._sample_phi(n, np.random.default_rng(rng))
        return self._embed(phi), y

    def features(self):
        r"""The gradient features :math:`D_j=\sum_{l\in A_j}M_l/\sqrt k` (B.399), shape (r, d)."""
        D = np.zeros((self.r, self.d))
        for j in range(self.r):
            D[j, j * self.k:(j + 1) * self.k] = 1.0 / math.sqrt(self.k)
        return D if self.M is None else D @ self.M.T

    def E_yx(self):
        r"""Exact :math:`\mathbb E[y\mathbf x]=M\,\mathbb E[y\phi]`, nonzero (Remark B.45 is wrong, docs/errata.md).

        .. math:: \mathbb E[y\mathbf x]=\big(2p_A+(1-2rp_A)\,\mathbb I[k=1]\,\xi^{(r)}_1\big)\sqrt k\sum_jD_j,

        since :math:`y\phi_{A_j}=\mathbf 1` on both :math:`\mathbf X_{j,\pm}` (k odd), the uniform component
        contributes only for k = 1 (then :math:`y=\mathrm{Maj}_r(\phi_A)`, :math:`\xi^{(r)}_1` its degree-1
        coefficient, :func:`majority_coefficient`) and the noise is independent of y with mean 0.
        The symmetry :math:`(\phi,y)\to(-\phi,-y)` leaves :math:`y\mathbf x` invariant, so it does not force 0.

        >>> StructuredParity(5, 1, 3, p_A=0.1, p_o=0.2).E_yx()        # 2 p_A on the block, not 0
        array([0.2, 0.2, 0.2, 0. , 0. ])

        Notes
        -----
        Accuracy: relative error <= 4 eps per entry (0 exact); measured 0.23 of the bound
        (tests/test_accuracy_gradient_features.py, the law enumerated in exact rationals).
        """
        c = 2 * self.p_A + ((1 - 2 * self.r * self.p_A) * majority_coefficient(self.r, 1) if self.k == 1 else 0.0)
        return c * math.sqrt(self.k) * self.features().sum(axis=0)

    def _norm_law(self):
        """Support and probabilities of ||x||^2: (rk or k nonzero A-entries) + Binomial(d - rk, 2 p_o)."""
        N = np.arange(self.d - self._rk + 1)
        pN = stats.binom.pmf(N, self.d - self._rk, 2 * self.p_o)
        q = np.array([1.0 - 2 * self.r * self.p_A, 2 * self.r * self.p_A])
        a = np.array([self._rk, self.k])
        return (a[:, None] + N[None, :]).ravel(), (q[:, None] * pN[None, :]).ravel()

    def bounds(self) -> Bounds:
        r"""Exact Assumption 3.1 constants, :math:`\|\mathbf x\|^2=\|\phi\|^2=a+N`, :math:`a\in\{rk,k\}` w.p.
        :math:`(1-2rp_A,2rp_A)`, :math:`N\sim\mathrm{Bin}(d-rk,2p_o)`: :math:`B_x=\max\sqrt{a+N}`,
        :math:`B_{x1}=\mathbb E\sqrt{a+N}`, :math:`B_{x2}=\mathbb E[a+N]`; all :math:`\le` the paper's
        :math:`\sqrt d,\sqrt d,d` (Lemma B.51).

        Notes
        -----
        Accuracy: Bx exact (the correctly rounded root of the support's largest ||x||^2), Bx1 and Bx2 relative error <=
        1e-13 (binomial pmf sums); measured 0.023 of the bound (tests/test_accuracy_gradient_features.py, exact
        rationals to d = 8, mpmath and the closed form to d = 1e5). Before: Bx was the largest norm whose binomial pmf
        did not underflow (19.1 for sqrt(1000) = 31.6).
        """
        v, p = self._norm_law()
        # the largest ||x||^2 of the support, exactly: the binomial pmf underflows to 0 in its upper tail
        top = (self._rk if self._weights()[0] > 0 else self.k) + (self.d - self._rk if self.p_o > 0 else 0)
        return Bounds(math.sqrt(top), float(p @ np.sqrt(v)), float(p @ v))

    # ---- Monte Carlo and exact G ----------------------------------------------------------------------------------

    def simplified_gradient_mc(self, W, b, n, rng, chunk=2048, method="auto"):
        r"""Monte Carlo simplified gradient (B.124), chunked, with a numba kernel for the sparse masked reduction.

        .. math:: \tilde G(\mathbf w_i,b_i)=\frac1n\sum_sy_s\mathbf x_s\mathbb I[\mathbf w_i^\top\mathbf x_s>b_i]

        Per chunk of samples the pre-activations :math:`\mathbf W\mathbf x_s` are one BLAS product; the masked
        reduction :math:`\sum_sy_s\mathbf x_s\mathbb I[\cdot]` (and the second moments for ``se``) is then either two
        more BLAS products ("numpy", cost :math:`O(nMd)`) or a numba kernel, parallel over neurons, that visits only
        the active (neuron, sample) pairs and the nonzero entries of :math:`\mathbf x_s=M\phi_s` ("numba", cost
        :math:`O(nM\,q\,\mathrm{nnz})`, q the active fraction, :math:`\mathrm{nnz}\le rk+2p_o(d-rk)` for
        :math:`M=I`; no (n, M) float mask). "auto" picks per chunk the one with the smaller estimated cost
        (numba when :math:`24\,q\,\mathrm{nnz}/d<1`: the paper's large :math:`\tilde b` and small :math:`p_o`). All
        consume the same random stream and agree to float rounding.

        Parameters
        ----------
        W : array_like, shape (M, d)
            Neuron weights (rows).
        b : array_like, shape (M,) or scalar
            Biases.
        n : int
            Number of samples.
        rng : numpy.random.Generator or int
            Randomness (a seed is passed to ``default_rng``).
        chunk : int
            Samples per chunk (memory O(chunk (M + d))).
        method : {"auto", "numba", "numpy"}
            The reduction (see above).

        Returns
        -------
        MonteCarloGradient
            ``G`` (M, d) and the per-coordinate standard errors ``se`` (M, d),
            :math:`\sqrt{(\widehat{\mathbb E}[x_l^2\mathbb I]-\tilde G_l^2)/(n-1)}`.

        Notes
        -----
        Accuracy: statistical: ``se`` is the CLT standard error of each coordinate of an unbiased estimator; calibrated
        against the exact enumeration, |z| <= 6 for both reductions (measured 3.5;
        tests/test_accuracy_gradient_features.py).
        Regime: any W, b; the estimator is unbiased with :math:`\mathbb E\|\tilde G-G\|^2\le B_{x2}/n`.

        References
        ----------
        .. [src] [Shi24, (3.4), (B.124)]
        """
        owner = f"{self!r}.simplified_gradient_mc"
        W, b, _ = _as_neurons(owner, W, b)
        _require(owner, "W", W.shape[1] == self.d, f"an (M, {self.d}) array", W.shape)
        n, chunk = _as_positive(owner, "n", n), _as_positive(owner, "chunk", chunk)
        method = check(owner, "method", method, Options(("auto", "numba", "numpy")))
        rng = np.random.default_rng(rng)
        G, S2 = np.zeros(W.shape), np.zeros(W.shape)
        for start in range(0, n, chunk):
            phi, y = self._sample_phi(min(chunk, n - start), rng)
            X = self._embed(phi)
            mask = X @ W.T > b                                          # (chunk, M)
            nz = X != 0
            if method == "numba" or (method == "auto" and _SCATTER_COST * mask.sum() * nz.mean() < mask.size):
                rows, cols = np.nonzero(nz)
                indptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=len(y)))))
                parallel = len(cols) * W.shape[0] > _PARALLEL_WORK
                kernel = _masked_sums_parallel if parallel else _masked_sums_serial
                kernel(np.ascontiguousarray(mask.T), indptr, cols.astype(np.int32), X[rows, cols], y, G, S2, _BLOCK,
                       min(W.shape[0], numba.get_num_threads()) if parallel else 1)
            else:
                mask = mask.astype(np.float64)
                G += (mask * y[:, None]).T @ X
                S2 += mask.T @ (X * X)
        G /= n
        return MonteCarloGradient(G, np.sqrt(np.maximum(S2 / n - G * G, 0.0) / max(n - 1, 1)))

    def _head_support(self):
        """The head coordinates phi_A (the first r k) with their probabilities, zero-mass points dropped: the
        uniform part (every sign pattern) and the 2 r signed blocks (S_j, -S_j)."""
        rk, r, k = self._rk, self.r, self.k
        w = self._weights()
        rows, probs = [], []
        if w[0] > 0:
            rows.append(np.array(list(itertools.product([-1.0, 1.0], repeat=rk))).reshape(-1, rk))
            probs.append(np.full(rows[-1].shape[0], w[0] / 2.0 ** rk))
        if self.p_A > 0:
            S = np.zeros((2 * r, rk))
            for j in range(r):
                S[2 * j, j * k:(j + 1) * k], S[2 * j + 1, j * k:(j + 1) * k] = 1.0, -1.0
            rows.append(S)
            probs.append(np.full(2 * r, self.p_A))
        return np.concatenate(rows), np.concatenate(probs)

    def _support(self):
        """Every phi in the support with its probability: (Phi (N, d), y (N,), prob (N,)), zero-mass points dropped."""
        rk = self._rk
        phiA, pA = self._head_support()
        vals = [v for v, p in ((-1.0, self.p_o), (0.0, 1 - 2 * self.p_o), (1.0, self.p_o)) if p > 0]
        pv = {-1.0: self.p_o, 0.0: 1 - 2 * self.p_o, 1.0: self.p_o}
        noise = np.array(list(itertools.product(vals, repeat=self.d - rk))).reshape(-1, self.d - rk) \
            if self.d > rk else np.zeros((1, 0))
        pnoise = np.prod(np.vectorize(pv.get, otypes=[float])(noise), axis=1)
        Phi = np.concatenate([np.repeat(phiA, len(noise), axis=0), np.tile(noise, (len(phiA), 1))], axis=1)
        return Phi, self._label(Phi[:, :rk]), np.outer(pA, pnoise).ravel()

    def _enumerated(self, owner, W, b):
        """Support points x = M phi, y * Pr(phi) and the pre-activations, after the checks."""
        W, b, _ = _as_neurons(owner, W, b)
        _require(owner, "W", W.shape[1] == self.d, f"an (M, {self.d}) array", W.shape)
        w = self._weights()
        n_A = (2 ** self._rk if w[0] > 0 else 0) + (2 * self.r if self.p_A > 0 else 0)
        size = n_A * (2 * (self.p_o > 0) + (self.p_o < 0.5)) ** (self.d - self._rk)
        _require(owner, "d", size <= _ENUM_MAX, f"small enough to enumerate the support (<= {_ENUM_MAX} points; use "
                 "simplified_gradient_mc)", f"d = {self.d} with {size} points")
        Phi, y, prob = self._support()
        X = self._embed(Phi)
        return X, y * prob, X @ W.T - b

    def simplified_gradient(self, W, b):
        r"""Exact :math:`G(\mathbf w_i,b_i)` by enumeration of the support (tiny d; the oracle of the Monte Carlo).

        .. math:: G(\mathbf w,b)=\sum_{\phi}\Pr(\phi)\,y(\phi)\,M\phi\,\mathbb I[\mathbf w^\top M\phi>b]

        Parameters
        ----------
        W : array_like, shape (M, d)
            Neuron weights (rows).
        b : array_like, shape (M,) or scalar
            Biases.

        Returns
        -------
        G : ndarray (M, d)

        Notes
        -----
        Accuracy: |G_l - exact| <= N eps E|x_l| (N support points); measured 0.11 of the bound
        (tests/test_accuracy_gradient_features.py, exact rationals), neurons away from the kink (1e-9).
        Regime: support size :math:`(2^{rk}+2r)\,3^{d-rk}\le2^{18}` (fewer when a probability is 0), else an error
        pointing to :meth:`simplified_gradient_mc`; exact up to float64 summation.

        References
        ----------
        .. [src] [Shi24, (3.4), App. B.5.4]; derived in docs/gradient_features.md
        """
        X, yp, pre = self._enumerated(f"{self!r}.simplified_gradient", W, b)
        return ((pre > 0) * yp[:, None]).T @ X

    def A(self, W, b):
        r"""Exact :math:`A(\mathbf w_i,b_i)=\mathbb E[y\,\sigma(\mathbf w_i^\top\mathbf x-b_i)]` by enumeration (tiny d).

        .. math:: A(\mathbf w,b)=\sum_{\phi}\Pr(\phi)\,y(\phi)\,\sigma(\mathbf w^\top M\phi-b)

        Parameters
        ----------
        W : array_like, shape (M, d)
            Neuron weights (rows).
        b : array_like, shape (M,) or scalar
            Biases.

        Returns
        -------
        A : ndarray (M,)

        Notes
        -----
        Accuracy: |A - exact| <= (N + d + 2) eps E[|<w, x>| + |b|] (N support points); measured 0.054 of the bound
        (tests/test_accuracy_gradient_features.py, exact rationals).
        Regime: as :meth:`simplified_gradient` (the inherited ``A_mc`` samples at any d).

        References
        ----------
        .. [src] [Shi24, Lemma B.70]; derived in docs/gradient_features.md
        """
        X, yp, pre = self._enumerated(f"{self!r}.A", W, b)
        return yp @ np.maximum(pre, 0.0)

    # ---- ground truth ---------------------------------------------------------------------------------------------

    def ground_truth(self, convention="corrected"):
        r"""The bump ground truth of Lemma B.51 (B.469-B.470): :math:`3r(k+1)` ReLUs, :math:`y\,g^*(\mathbf x)\ge1`.

        .. math:: g^*(\mathbf x)=\sum_{j=1}^r\sum_{i=0}^k(-1)^{i+1}\sqrt k\Big[\sigma(z_j-\tfrac{2i-k-1}{\sqrt k})
                  -2\sigma(z_j-\tfrac{2i-k}{\sqrt k})+\sigma(z_j-\tfrac{2i-k+1}{\sqrt k})\Big],\quad
                  z_j=\langle D_j,\mathbf x\rangle.

        Parameters
        ----------
        convention : {"corrected", "paper"}
            "corrected" (default): a tent centred at :math:`c<0` is written on :math:`-D_j` with biases
            :math:`|c|-h,|c|,|c|+h\ge0` (:math:`h=1/\sqrt k\le|c|`, k odd), so every feature is
            :math:`(\pm D_j,+1)`, reachable without the false :math:`\mathbb E[y\mathbf x]=0` (docs/errata.md).
            "paper": B.470 as printed (features :math:`D_j`, biases of both signs). Same function.

        Returns
        -------
        a_star : ndarray (3r(k+1),)
            :math:`B_{a1}=2\sqrt k`, :math:`\|\mathbf a^*\|_2=\sqrt{6rk(k+1)}` (paper: :math:`2\sqrt{rk(k+1)}`,
            erratum 5).
        W_star : ndarray (3r(k+1), d)
            Rows :math:`\pm D_j`.
        b_star : ndarray (3r(k+1),)
            :math:`|b^*|\le B_b=(k+1)/\sqrt k`.

        Notes
        -----
        Regime: k odd (a zero block then sits between tents, :math:`g^*=\sum_j\mathrm{XOR}(\phi_{A_j})` on the
        support). Hinge OPT = 0 (:meth:`ground_truth_loss`).

        References
        ----------
        .. [src] [Shi24, Lemma B.51, (B.469)-(B.474)]; corrections in docs/errata.md
        """
        convention = check(f"{self!r}.ground_truth", "convention", convention, Options(("corrected", "paper")))
        return _bump_network(self.features(), self.k, positive_bias=convention == "corrected")

    def ground_truth_loss(self, loss="hinge", convention="corrected"):
        r"""Exact risk :math:`\mathcal L_{\mathcal D}(g^*)=\mathbb E\,\ell(y\,g^*(\mathbf x))` of :meth:`ground_truth`.

        :math:`g^*` depends on :math:`\mathbf x` only through the block sums :math:`s_j=\sum_{l\in A_j}\phi_l`
        (:math:`z_j=s_j/\sqrt k`) and y through the block parities :math:`(-1)^{(k-s_j)/2}`, so the risk is a finite
        sum over the law of :math:`(s_1,\dots,s_r)`: independent :math:`k-2\,\mathrm{Bin}(k,1/2)` under
        :math:`\mathbf X_U`, one block at :math:`\pm k` and the others 0 under :math:`\mathbf X_{j,\pm}`.

        Parameters
        ----------
        loss : {"hinge", "logistic"}
            The loss (logistic is base 2).
        convention : {"corrected", "paper"}
            Which writing of :math:`g^*` is evaluated (same function).

        Returns
        -------
        value, se : float
            The risk and its standard error (0: exact).

        Notes
        -----
        Accuracy: logistic relative error <= 1e-13; hinge (exactly 0) absolute <= 64 (k + 1) eps; measured 0.031 of the
        bound (tests/test_accuracy_gradient_features.py, g* in mpmath over the enumerated law).
        Regime: :math:`(k+1)^r\le2^{20}` configurations; exact up to float64 rounding of :math:`g^*`
        (hinge: :math:`y\,g^*=1-O(10^{-15})`, so the value is O(1e-14), not 0).

        References
        ----------
        .. [src] [Shi24, (B.472)-(B.474)]; derived in docs/gradient_features.md
        """
        owner = f"{self!r}.ground_truth_loss"
        ell = LOSSES[check(owner, "loss", loss, Options(tuple(LOSSES)))]
        r, k = self.r, self.k
        _require(owner, "k", (k + 1) ** r <= _GSTAR_MAX, f"such that (k+1)^r <= {_GSTAR_MAX}", k)
        sums = k - 2 * np.arange(k + 1)
        S = np.array(list(itertools.product(sums, repeat=r))).reshape(-1, r)
        pS = np.prod(stats.binom.pmf(np.array(list(itertools.product(range(k + 1), repeat=r))), k, 0.5), axis=1)
        pS = pS.reshape(-1) * (1 - 2 * r * self.p_A)
        if self.p_A > 0:
            E = np.zeros((2 * r, r))
            E[np.arange(2 * r), np.repeat(np.arange(r), 2)] = np.tile([k, -k], r)
            S, pS = np.concatenate([S, E]), np.concatenate([pS, np.full(2 * r, self.p_A)])
        parity = np.where(S == 0, 0, 1 - 2 * (((k - S) // 2) % 2))            # prod of a block with sum s_j
        y = np.sign(parity.sum(axis=1))
        a, W, b = self.ground_truth(convention)
        X = (S / math.sqrt(k)) @ self.features()                        # a point with the given block projections
        g = np.maximum(X @ W.T - b, 0.0) @ a
        return float(pS @ ell(y * g)), 0.0
