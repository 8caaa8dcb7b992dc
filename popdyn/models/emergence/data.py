r"""Data models of [Shi22]: patterns from a dictionary, labels from the class-relevant block ([Shi22, Section 3]).

Pattern coordinates: the class-relevant set is ``A = {0, ..., k-1}`` and the background ``B = {k, ..., D-1}``
(a dictionary ``M`` of shape (d, D) places them anywhere in ``R^d``). The A-block law is a finite support
``{(phi~_A^(r), pi_r, y_r)}`` (rows of ``A_support``, ``A_probs``, ``labels``). The background is independent
Bernoulli(``p_bg``) given the row; the paper's mixture ``D_A^mix`` makes the background probability depend on
the mixture component, which ``p_bg_rows`` (one probability per support row) expresses. Normalised inputs:

.. math:: \phi = (\tilde\phi - \mathbb E\tilde\phi)/\tilde\sigma,\qquad
          \tilde\sigma^2 = \sum_j \mathrm{Var}(\tilde\phi_j),\qquad x = M\phi.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from ..._dd import dd_sum
from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, check, validate

__all__ = ["PatternModel", "ExchangeablePatternModel", "Moments", "parity_mixture", "iid_block_model",
           "interval_labeling", "hidden_representation", "no_structure", "with_class_ratio", "random_dictionary",
           "incoherence", "gram", "GaussianParityMixture"]

_K_ENUM = 20          # explicit A-block supports have 2^k rows at most for the enumerated constructors
_K_EXPLICIT = 16      # iid_block_model returns an explicit PatternModel up to this k, the count-resolved form beyond
_PROB_TOL = 1e-12     # sum of A_probs, p_bg vs its row mixture: float64 round-off of a few hundred terms
_ORTH_TOL = 1e-10     # ||M^T M - I||_max for a dictionary: QR in float64 gives ~1e-15
_RANK_TOL = 1e-8      # smallest singular value of an incoherent dictionary


def _fail(name, allowed, value):
    raise InvalidParameterError(f"The {name!r} parameter of emergence.PatternModel must be {allowed}. "
                                f"Got {value!r} instead.")


def _exact(hi, lo):
    """The double-double ``hi + lo`` as an exact rational."""
    return Fraction(float(hi)) + Fraction(float(lo))


def _dd_split(q):
    """A rational as a double-double ``(hi, lo)``: ``hi`` rounded, ``lo`` the rest rounded."""
    hi = float(q)
    return hi, float(q - Fraction(hi))


def _sigt(var_A, p_bar, extra=0.0):
    """sigma~ = sqrt(sum of the variances): the A-block ones (each to an ulp), ``p (1 - p)`` per background pattern
    and ``extra``, summed by fsum (sigma~ to 1.5 eps)."""
    return math.sqrt(math.fsum(itertools.chain(var_A, (p_bar * (1.0 - p_bar)).tolist(), [extra])))


@dataclass(frozen=True)
class Moments:
    r"""Exact data constants of a :class:`PatternModel` (enumeration of the A-block support).

    Attributes: ``sigt`` (sigma~), ``sphi2`` (sigma_phi^2 = p(1-p)/sigma~^2 per background pattern; a float
    when ``p_bg`` is a float), ``gamma`` (k,) (``E[y phi~_j] - E y E phi~_j``), ``Ey``, ``mu_A``
    (``sum_A E phi~_j``), ``E_y_phi_A`` (k,) (``= gamma / sigt``), ``mean_A`` (k,), ``p_bar`` (D-k,) (background
    marginals), ``p_plus`` (``P(y = 1)``), ``p_minus`` (``P(y = -1)``, summed on its own: ``1 - p_plus`` rounds to 0
    when it is below 1e-16), ``gamma_weighted`` (k,) (``E[alpha_y y phi~_j]``, App. F),
    ``szeta2`` (``sigma_zeta^2 / sigt^2``, the variance of each coordinate of the normalised input noise),
    ``mu_A_lo`` (the rounding error of ``mu_A``: ``mu_A + mu_A_lo`` is mu_A in double-double, for the triangle
    centres ``c - mu_A`` of Lemma 5's g*, which cancel up to 8k-fold).
    """
    sigt: float
    sphi2: float | np.ndarray
    gamma: np.ndarray
    Ey: float
    mu_A: float
    E_y_phi_A: np.ndarray
    mean_A: np.ndarray
    p_bar: np.ndarray
    p_plus: float
    gamma_weighted: np.ndarray
    szeta2: float = 0.0
    p_minus: float | None = None
    mu_A_lo: float = 0.0

    def centred(self, c):
        """``c - mu_A`` for counts or points ``c`` (floats or arrays), from the double-double mu_A: one rounding
        past the exact difference where ``c - mu_A`` is exact, so near-cancelling centres keep their digits."""
        return (np.asarray(c, dtype=float) - self.mu_A) - self.mu_A_lo

    def class_weights(self, owner, parameter):
        """``(alpha_-, alpha_+) = (1/(2 P(y = -1)), 1/(2 P(y = 1)))``, the class weights of [Shi22, App. F]'s
        weighted loss. Raises InvalidParameterError naming ``parameter`` of ``owner`` when a class probability
        underflows to 0 (its weight would be infinite)."""
        if not (self.p_plus > 0 and self.p_minus > 0):
            raise InvalidParameterError(
                f"The '{parameter}' parameter of {owner} must not ask for class weights 1/(2 P(y)) when a class "
                f"probability underflows to 0 (the weight is infinite). Got P(y = 1) = {self.p_plus!r}, "
                f"P(y = -1) = {self.p_minus!r}.")
        return 0.5 / self.p_minus, 0.5 / self.p_plus

    def class_weight(self, y, owner="emergence", parameter="class_weighted"):
        """``alpha_y = 1/(2 P(y))`` for each label of ``y`` (+-1), the weight of a sample in [Shi22, App. F]'s loss
        ``E[alpha_y l]`` (:meth:`class_weights`, whose errors it raises)."""
        am, ap = self.class_weights(owner, parameter)
        return np.where(np.asarray(y) > 0, ap, am)


@dataclass(frozen=True, eq=False)
class PatternModel:
    r"""The family F_Xi: ``x~ = M phi~``, label from the A-block, independent Bernoulli background.

    .. math:: y = y_r \text{ on row } r \text{ of the A-support (prob. } \pi_r),\qquad
              \tilde\phi_j \sim \mathrm{Bern}(p_j)\ (j\notin A)\ \text{independent given } r

    Parameters
    ----------
    D : int
        Number of patterns, ``D > k``.
    k : int
        Number of class-relevant patterns, ``1 <= k < D``.
    A_support : array_like of shape (R, k)
        0/1 configurations of the class-relevant block.
    A_probs : array_like of shape (R,)
        Their probabilities (>= 0, summing to 1).
    labels : array_like of shape (R,)
        Their labels in {-1, +1}; both classes must have positive probability.
    p_bg : float or array_like of shape (D - k,)
        Background probabilities ``P(phi~_j = 1)``, in (0, 1) (the marginal ones when ``p_bg_rows`` is given).
    p_bg_rows : array_like of shape (R,), optional
        Background probability given the row (the paper's ``D_A^mix``); its mixture must equal ``p_bg``.
    M : array_like of shape (d, D), optional
        Dictionary with unit columns of full rank (orthonormal, or mu-incoherent as in App. F), for sampling in
        ``R^d``; a gradient step on ``w`` then moves ``q = M^T w`` by ``rho = M^T M`` times the pattern gradient
        (:func:`gram`). sigma~ keeps the paper's normalisation (the pattern variances, [Shi22, App. F.1.1]).
    sigma_zeta : float
        App. F Gaussian input noise: ``x~ = M phi~ + zeta``, ``zeta ~ N(0, sigma_zeta^2 I_d)`` (d = ``M.shape[0]``,
        or D without a dictionary); ``sigt^2`` gains ``d sigma_zeta^2``.

    Notes
    -----
    Regime: (A2) holds iff ``p_bg_rows`` is None or constant; (A0) iff ``Ey == 0``; (A1) iff ``gamma`` is
    positive and constant on A. The constructor checks none of these (they are properties of a member, not
    errors); :meth:`moments` reports them.

    References
    ----------
    .. [src] [Shi22, Section 3 (eq. (1), (A0)-(A2)), Section 3.1 (normalisation)].
    """
    D: int
    k: int
    A_support: np.ndarray
    A_probs: np.ndarray
    labels: np.ndarray
    p_bg: float | np.ndarray
    p_bg_rows: np.ndarray | None = None
    M: np.ndarray | None = None
    sigma_zeta: float = 0.0

    _constraints = {"D": Integer(2), "k": Integer(1), "A_support": FiniteArray(2), "A_probs": FiniteArray(1),
                    "labels": FiniteArray(1), "sigma_zeta": Interval(0.0, np.inf, "left")}

    def __post_init__(self):
        validate(self)
        D, k = self.D, self.k
        if not k < D:
            _fail("k", f"an int in [1, D - 1] = [1, {D - 1}] (D = {D})", k)
        S = self.A_support
        if S.shape[1] != k or S.shape[0] < 1 or not np.all((S == 0) | (S == 1)):
            _fail("A_support", f"a 0/1 array of shape (R, k) = (R, {k})", S)
        R = S.shape[0]
        pi, y = self.A_probs, self.labels
        if pi.shape != (R,) or not (np.all(pi >= 0) and abs(pi.sum() - 1.0) <= _PROB_TOL):
            _fail("A_probs", f"a nonnegative array of shape ({R},) summing to 1", pi)
        if y.shape != (R,) or not np.all((y == 1) | (y == -1)):
            _fail("labels", f"a +-1 array of shape ({R},)", y)
        if not (pi[y > 0].sum() > 0 and pi[y < 0].sum() > 0):
            _fail("labels", "+-1 labels with both classes of positive probability", y)
        object.__setattr__(self, "p_bg", self._check_p_bg())
        if self.p_bg_rows is not None:
            pr = np.array(self.p_bg_rows, dtype=np.float64)
            if pr.shape != (R,) or not np.all((pr > 0) & (pr < 1)):
                _fail("p_bg_rows", f"an array of shape ({R},) in (0, 1)", self.p_bg_rows)
            if np.ndim(self.p_bg) != 0 or abs(pi @ pr - self.p_bg) > _PROB_TOL:
                _fail("p_bg_rows", "None, or row probabilities whose mixture sum_r pi_r p_r equals the float p_bg",
                      self.p_bg_rows)
            pr.setflags(write=False)
            object.__setattr__(self, "p_bg_rows", pr)
        if self.M is not None:
            object.__setattr__(self, "M", _check_dictionary("emergence.PatternModel", self.M, D))

    def _check_p_bg(self):
        p = self.p_bg
        if np.ndim(p) == 0:
            return check("emergence.PatternModel", "p_bg", p, Interval(0.0, 1.0, "neither"))
        a = np.array(p, dtype=np.float64)
        if a.shape != (self.D - self.k,) or not np.all((a > 0) & (a < 1)):
            _fail("p_bg", f"a float in (0, 1) or an array of shape (D - k,) = ({self.D - self.k},) in (0, 1)", p)
        a.setflags(write=False)
        return a

    def __repr__(self):
        extra = "" if self.p_bg_rows is None else ", p_bg_rows=..."
        if self.sigma_zeta:
            extra += f", sigma_zeta={self.sigma_zeta}"
        return (f"PatternModel(D={self.D}, k={self.k}, R={self.A_support.shape[0]}, "
                f"p_bg={self.p_bg if np.ndim(self.p_bg) == 0 else '...'}{extra})")

    @property
    def d(self):
        """Ambient dimension (``M.shape[0]``; ``D`` without a dictionary)."""
        return self.D if self.M is None else self.M.shape[0]

    def background_groups(self):
        r"""Background laws given the row: ``(P, group)`` with ``P`` (G, D-k) and ``group`` (R,) in [0, G).

        Row r's background is independent Bernoulli(``P[group[r]]``); G = 1 unless ``p_bg_rows`` varies.
        """
        nb = self.D - self.k
        if self.p_bg_rows is None:
            return np.broadcast_to(self.p_bg, (nb,)).astype(np.float64)[None, :], np.zeros(len(self.labels), int)
        vals, group = np.unique(self.p_bg_rows, return_inverse=True)
        return np.repeat(vals[:, None], nb, axis=1), group

    @cached_property
    def _moments(self):
        S, pi, y = self.A_support, self.A_probs, self.labels
        sums = [dd_sum(pi)] + [dd_sum(pi[S[:, j] > 0]) for j in range(self.k)]    # sum_r pi_r, sum_r pi_r phi~_rj
        tot, *col = (_exact(*h) for h in sums)
        mean_A = np.array([float(c / tot) for c in col])          # normalised: A_probs sums to 1 within 1e-12
        p_bar = np.broadcast_to(self.p_bg, (self.D - self.k,)).astype(np.float64)
        sigt = _sigt([float(c * (tot - c) / (tot * tot)) for c in col], p_bar, self.d * self.sigma_zeta ** 2)
        mu_A, mu_A_lo = _dd_split(sum(col) / tot)
        Ey = float(pi @ y)
        gamma = pi @ (y[:, None] * S) - Ey * mean_A
        p_plus, p_minus = float(pi[y > 0].sum()), float(pi[y < 0].sum())
        alpha = np.where(y > 0, 0.5 / p_plus, 0.5 / p_minus)
        sphi2 = p_bar * (1 - p_bar) / sigt ** 2
        return Moments(sigt=sigt, sphi2=float(sphi2[0]) if np.ndim(self.p_bg) == 0 else sphi2, gamma=gamma,
                       Ey=Ey, mu_A=mu_A, E_y_phi_A=gamma / sigt, mean_A=mean_A, p_bar=p_bar,
                       p_plus=p_plus, gamma_weighted=(pi * alpha * y) @ S, szeta2=self.sigma_zeta ** 2 / sigt ** 2,
                       p_minus=p_minus, mu_A_lo=mu_A_lo)

    def moments(self):
        r"""Exact data constants by enumeration of the A-block support.

        .. math:: \mathbb E y = \sum_r\pi_ry_r,\quad \gamma_j = \sum_r\pi_ry_r\tilde\phi^{(r)}_j - \mathbb Ey\,
                  \mathbb E\tilde\phi_j,\quad \tilde\sigma^2 = \sum_{j\in A}\mathrm{Var}\tilde\phi_j +
                  \sum_{j\notin A}p_j(1-p_j) + d\sigma_\zeta^2,\quad \mathbb E[y\phi_A] = \gamma/\tilde\sigma

        Returns
        -------
        Moments

        Notes
        -----
        Regime: any member; O(R k) work. ``E[y phi_A] = gamma / sigt`` holds without (A0) because
        ``E[y (phi~ - E phi~)] = gamma``.

        Accuracy: sigt relative error <= 1.5 eps (the A-block variances from double-double sums over the support,
        summed with the background ones by fsum); mu_A relative <= eps/2 and ``mu_A + mu_A_lo`` <= 1e-28 (R <=
        2^20 rows); p_plus, p_minus relative <= 1e-13; Ey absolute <= 1e-13; gamma absolute <= 1e-13 ``E phi~_j``,
        gamma_weighted <= 1e-13 ``E[alpha_y phi~_j]``; the law is ``A_probs`` normalised (it sums to 1 within
        1e-12); for k <= 8 and probabilities within 1e-12 of 0 or 1 (class probabilities to 1e-18). Measured: sigt
        0.72 eps, the rest 0.043 of the bound (tests/test_accuracy_emergence.py, exact rationals). Before: sigt
        and mu_A summed plainly over the 2^k rows (10 and 47 eps at k = 12); a class of probability below 1e-16
        made ``1 - p_plus`` round to 0 and the class weights divide by zero (``p_minus`` is summed on its own).

        References
        ----------
        .. [src] [Shi22, Section 3, App. B (notation), proof of Lemma 5 (App. B.1)].

        Examples
        --------
        >>> mom = parity_mixture(20, 3, 0.5).moments()
        >>> round(mom.sigt ** 2, 12), float(mom.gamma[0]), mom.Ey
        (5.0, 0.25, 0.0)
        """
        return self._moments

    def phi_A(self):
        """Normalised A-block values ``(phi~_A^(r) - E phi~_A) / sigt`` of every support row, shape (R, k)."""
        mom = self._moments
        return (self.A_support - mom.mean_A) / mom.sigt

    def mixed_moments(self, order):
        r"""Mixed label moments on A: ``E[y phi_j phi_l]`` (order 2, (k, k)) or ``E[y phi_j phi_l phi_m]`` (3).

        .. math:: \mathbb E[y\phi_j\phi_\ell] = \sum_r\pi_ry_r\phi^{(r)}_j\phi^{(r)}_\ell

        Parameters
        ----------
        order : int
            2 or 3.

        Returns
        -------
        ndarray of shape (k,) * order

        Notes
        -----
        Regime: any member; O(R k^order). Used by the step-2 expansion; zero for the parity mixture at
        order 2 when k >= 3.

        References
        ----------
        .. [src] derived in docs/emergence.md.
        """
        order = check("emergence.PatternModel.mixed_moments", "order", order, Integer(2, 3))
        w = self.A_probs * self.labels
        P = self.phi_A()
        if order == 2:
            return np.einsum("r,rj,rl->jl", w, P, P)
        return np.einsum("r,rj,rl,rm->jlm", w, P, P, P)

    def count_law(self):
        r"""The law of the count ``c = sum_A phi~_j``: ``(pi_c, y_c)`` on c = 0..k.

        .. math:: \pi_c = \sum_{r: |r| = c}\pi_r,\qquad y_c = \text{the common label of those rows}

        Returns
        -------
        pi_c : ndarray of shape (k + 1,)
        y_c : ndarray of shape (k + 1,)
            Labels (+-1); counts of probability 0 get +1 when absent from the support.

        Notes
        -----
        Regime: labels that depend on the count only (every P-labeling); otherwise InvalidParameterError.

        References
        ----------
        .. [src] derived in docs/emergence.md (count-resolved law of the LP and the reduced GD).
        """
        c = self.A_support.sum(1).astype(int)
        pi_c = np.bincount(c, weights=self.A_probs, minlength=self.k + 1)
        y_c = np.ones(self.k + 1)
        for n in range(self.k + 1):
            ys = np.unique(self.labels[c == n])
            if ys.size > 1:
                raise InvalidParameterError(
                    f"The 'labels' parameter of emergence.PatternModel must depend on the count only for "
                    f"count_law(); rows with count {n} carry both labels.")
            if ys.size:
                y_c[n] = ys[0]
        return pi_c, y_c

    def sample(self, n, seed=0, *, balanced=False, coords="pattern"):
        r"""Draw ``n`` samples ``(X, y, counts)`` in pattern coordinates (``X = phi``) or in ``R^d`` (``X = M phi``).

        .. math:: r\sim\pi,\quad \tilde\phi_A = \tilde\phi_A^{(r)},\quad \tilde\phi_B\sim\mathrm{Bern}(p_{\cdot}
                  \mid r),\quad \phi = (\tilde\phi - \mathbb E\tilde\phi)/\tilde\sigma,\quad
                  x = M\phi + \zeta/\tilde\sigma

        Parameters
        ----------
        n : int
            Number of samples (even when ``balanced``).
        seed : int or numpy.random.Generator
            Randomness.
        balanced : bool
            Exactly n/2 samples of each class (rows drawn from the class-conditional law).
        coords : {"pattern", "input"}
            "input" needs the dictionary ``M`` and returns ``X`` of shape (n, d).

        Returns
        -------
        X : ndarray of shape (n, D) or (n, d)
            With input noise, pattern coordinates are ``M^T x = phi + M^T zeta / sigt``.
        y : ndarray of shape (n,)
        counts : ndarray of shape (n,)
            ``sum_A phi~_j`` per sample.

        Notes
        -----
        Regime: any member. Balanced sampling removes the finite-sample bias shift of step 2 (docs/emergence.md).

        References
        ----------
        .. [src] [Shi22, Section 3, App. E.1].
        """
        owner = "emergence.PatternModel.sample"
        n = check(owner, "n", n, Integer(1))
        if coords not in ("pattern", "input"):
            raise InvalidParameterError(f"The 'coords' parameter of {owner} must be one of ['pattern', 'input']. "
                                        f"Got {coords!r} instead.")
        if coords == "input" and self.M is None:
            raise InvalidParameterError(f"The 'M' parameter of emergence.PatternModel must be a dictionary for "
                                        f"coords='input'. Got None instead.")
        rng = np.random.default_rng(seed)
        pi, y = self.A_probs, self.labels
        if balanced:
            if n % 2:
                raise InvalidParameterError(f"The 'n' parameter of {owner} must be even when balanced. Got {n}.")
            rows = np.concatenate([rng.choice(len(pi), n // 2, p=np.where(y == v, pi, 0) / pi[y == v].sum())
                                   for v in (1, -1)])
            rows = rng.permutation(rows)
        else:
            rows = rng.choice(len(pi), n, p=pi)
        P, group = self.background_groups()
        bg = (rng.random((n, self.D - self.k)) < (P[0] if len(P) == 1 else P[group[rows]])).astype(np.float64)
        mom = self._moments
        X = np.concatenate([self.A_support[rows] - mom.mean_A, bg - mom.p_bar], axis=1) / mom.sigt
        if coords == "input":
            X = X @ self.M.T
        if self.sigma_zeta:
            X = X + rng.standard_normal(X.shape) * math.sqrt(mom.szeta2)
        return X, y[rows].copy(), self.A_support[rows].sum(1)


@dataclass(frozen=True, eq=False)
class ExchangeablePatternModel:
    r"""An iid class-relevant block with count labels, in count-resolved form (no 2^k support).

    .. math:: \tilde\phi_j\sim\mathrm{Bern}(p_A)\ (j\in A),\quad \tilde\phi_j\sim\mathrm{Bern}(p_j)\ (j\notin A),
              \quad y = +1 \iff \textstyle\sum_{j\in A}\tilde\phi_j\in P

    Same interface as :class:`PatternModel` where it does not need the support: :meth:`moments`,
    :meth:`count_law`, :meth:`mixed_moments`, :meth:`sample`, :meth:`background_groups`; the correlations use a
    generating-function recursion over the k coordinates.

    Parameters
    ----------
    D : int
        Number of patterns, ``D > k``.
    k : int
        Number of class-relevant patterns, ``1 <= k < D``.
    p_A : float
        In (0, 1).
    p_bg : float or array_like of shape (D - k,)
        In (0, 1).
    positive_counts : tuple of int
        The label set P, a subset of {0..k} that leaves both classes non-empty.
    M : array_like of shape (d, D), optional
        Dictionary.

    Notes
    -----
    Regime: (A1) holds with a common gamma by exchangeability; (A0) generally fails.

    References
    ----------
    .. [src] [Shi22, App. E.1.2]; the count-resolved form is popdyn's (docs/emergence.md).
    """
    D: int
    k: int
    p_A: float
    p_bg: float | np.ndarray
    positive_counts: tuple
    M: np.ndarray | None = None

    _constraints = {"D": Integer(2), "k": Integer(1), "p_A": Interval(0.0, 1.0, "neither")}

    def __post_init__(self):
        validate(self)
        if not self.k < self.D:
            raise InvalidParameterError(f"The 'k' parameter of emergence.ExchangeablePatternModel must be an int in "
                                        f"[1, D - 1] = [1, {self.D - 1}]. Got {self.k} instead.")
        object.__setattr__(self, "p_bg", PatternModel._check_p_bg(self))
        P = tuple(sorted({check("emergence.ExchangeablePatternModel", "positive_counts", c, Integer(0, self.k))
                          for c in self.positive_counts}))
        if not 0 < len(P) < self.k + 1:
            raise InvalidParameterError(f"The 'positive_counts' parameter of emergence.ExchangeablePatternModel "
                                        f"must leave both classes non-empty (a proper subset of 0..{self.k}). "
                                        f"Got {self.positive_counts!r} instead.")
        object.__setattr__(self, "positive_counts", P)
        if self.M is not None:
            object.__setattr__(self, "M", _check_dictionary("emergence.ExchangeablePatternModel", self.M, self.D))

    @property
    def d(self):
        """Ambient dimension (``M.shape[0]``; ``D`` without a dictionary)."""
        return self.D if self.M is None else self.M.shape[0]

    def count_law(self):
        r"""``(pi_c, y_c)`` on c = 0..k: binomial probabilities and the count labels.

        .. math:: \pi_c = \binom kc p_A^c(1-p_A)^{k-c},\qquad y_c = \pm1

        Notes
        -----
        Regime: any k (binomial pmf from scipy, relative accuracy ~1e-15).

        References
        ----------
        .. [src] derived in docs/emergence.md (count-resolved law of the LP and the reduced GD).
        """
        from scipy.stats import binom
        c = np.arange(self.k + 1)
        return binom.pmf(c, self.k, self.p_A), np.where(np.isin(c, self.positive_counts), 1.0, -1.0)

    def background_groups(self):
        """``(P, group)`` as :meth:`PatternModel.background_groups` (one group; ``group`` is unused here)."""
        return np.broadcast_to(self.p_bg, (self.D - self.k,)).astype(np.float64)[None, :], np.zeros(1, int)

    def _set_prob(self, r):
        """``E[y 1{a given set of r A-coordinates is all ones}]`` and the same without y."""
        pi_c, y_c = self.count_law()
        c = np.arange(self.k + 1)
        ff = np.ones(self.k + 1)
        for i in range(r):
            ff = ff * np.maximum(c - i, 0) / (self.k - i)
        return (pi_c * y_c) @ ff, pi_c @ ff

    @cached_property
    def _moments(self):
        pi_c, y_c = self.count_law()
        k, p = self.k, self.p_A
        p_bar = np.broadcast_to(self.p_bg, (self.D - k,)).astype(np.float64)
        sigt = _sigt([float(k * Fraction(p) * (1 - Fraction(p)))], p_bar)
        Ey = float(pi_c @ y_c)
        g = self._set_prob(1)[0] - Ey * p
        p_plus, p_minus = float(pi_c[y_c > 0].sum()), float(pi_c[y_c < 0].sum())
        gw = 0.5 * (self._class_mean(pi_c, y_c > 0) - self._class_mean(pi_c, y_c < 0)) / k   # E[alpha_y y c] / k
        sphi2 = p_bar * (1 - p_bar) / sigt ** 2
        mu_A, mu_A_lo = _dd_split(k * Fraction(p))
        return Moments(sigt=sigt, sphi2=float(sphi2[0]) if np.ndim(self.p_bg) == 0 else sphi2,
                       gamma=np.full(k, g), Ey=Ey, mu_A=mu_A, E_y_phi_A=np.full(k, g / sigt),
                       mean_A=np.full(k, p), p_bar=p_bar, p_plus=p_plus, gamma_weighted=np.full(k, gw),
                       p_minus=p_minus, mu_A_lo=mu_A_lo)

    def _class_mean(self, pi_c, cls):
        """``E[c | y in the class]`` (``cls`` a mask on the counts): from ``pi_c / P(class)``, or from the log-pmf
        where P(class) is below 2^-969 (it may underflow to 0: p_A = 1e-12, P = {30} has P(y = 1) = 1e-360)."""
        from scipy.special import logsumexp
        from scipy.stats import binom
        c = np.flatnonzero(cls)
        P = pi_c[c].sum()
        if P >= 2.0 ** -969:        # the pmf's subnormal roundings (2^-1075) below 2^-106 of P
            return float(pi_c[c] @ c / P)
        lp = binom.logpmf(c, self.k, self.p_A)
        return float(np.exp(lp - logsumexp(lp)) @ c)

    def moments(self):
        r"""Exact data constants from the count law (binomial sums).

        .. math:: \gamma = \sum_c\pi_cy_c\frac ck - \mathbb Ey\,p_A,\qquad
                  \tilde\sigma^2 = kp_A(1-p_A) + \sum_{j\notin A}p_j(1-p_j)

        Returns
        -------
        Moments

        Notes
        -----
        Accuracy: sigt relative error <= 1.5 eps; ``mu_A + mu_A_lo`` is ``k p_A`` to eps^2; p_plus, p_minus
        relative <= 1e-13 down to 1e-300 (a class below it may round to a subnormal or 0; its class weights then
        come from the log-pmf); Ey absolute <= 1e-13; gamma absolute <= 1e-13 p_A; gamma_weighted absolute
        <= 1e-13 ``E[alpha_y phi~_j]``; for k <= 120 and probabilities within 1e-12 of 0 or 1 (scipy's binomial
        pmf, ~1e-15 relative per count). Measured: sigt 0.81 eps, p_plus 1.9e-14, gamma 6.3e-15 p_A,
        gamma_weighted 3.8e-16 (tests/test_accuracy_emergence.py, mpmath at 60 digits). Before: a class of
        probability below 1e-308 (p_A = 1e-12, P = {30}) made the class weights divide by zero.
        Regime: any k; O(k) work.

        References
        ----------
        .. [src] derived in docs/emergence.md (gamma = 0.0680, P(y = 1) = 0.5848 at the paper's interval).
        """
        return self._moments

    def mixed_moments(self, order):
        r"""``E[y phi_j phi_l]`` (order 2) or ``E[y phi_j phi_l phi_m]`` (order 3) on A, by exchangeability.

        .. math:: \mathbb E\Big[y\prod_{j\in S}(\tilde\phi_j - p_A)^{m_j}\Big] = \sum_{T\subseteq S}\prod_{T}b_{m_j}
                  \prod_{S\setminus T}a_{m_j}\,\mathbb E[y\,\mathbb 1\{\tilde\phi_T = 1\}],\quad
                  a_m = (-p_A)^m,\ b_m = (1-p_A)^m - (-p_A)^m

        Parameters
        ----------
        order : int
            2 or 3.

        Returns
        -------
        ndarray of shape (k,) * order

        Notes
        -----
        Regime: any k; ``E[y 1{T all ones}] = sum_c pi_c y_c c^(r)/k^(r)`` (falling factorials).

        References
        ----------
        .. [src] derived in docs/emergence.md.
        """
        order = check("emergence.ExchangeablePatternModel.mixed_moments", "order", order, Integer(2, 3))
        p, k = self.p_A, self.k
        ey1 = [self._set_prob(r)[0] for r in range(4)]

        def term(mults):       # multiplicities of the distinct indices
            tot = 0.0
            for T in itertools.product([0, 1], repeat=len(mults)):
                coef = math.prod(((1 - p) ** m - (-p) ** m) if t else (-p) ** m for t, m in zip(T, mults))
                tot += coef * ey1[sum(T)]
            return tot / self._moments.sigt ** order

        idx = np.indices((k,) * order)
        if order == 2:
            return np.where(idx[0] == idx[1], term((2,)), term((1, 1)))
        j, l, m = idx
        out = np.where((j == l) & (l == m), term((3,)), term((1, 1, 1)))
        two = ((j == l) | (l == m) | (j == m)) & ~((j == l) & (l == m))
        return np.where(two, term((2, 1)), out)

    def to_pattern_model(self):
        """The same law with its explicit 2^k support (k <= 20), as a :class:`PatternModel`."""
        k = check("emergence.ExchangeablePatternModel.to_pattern_model", "k", self.k, Integer(1, _K_ENUM))
        cube = _cube(k)
        cnt = cube.sum(1)
        y = np.where(np.isin(cnt, self.positive_counts), 1.0, -1.0)
        return PatternModel(self.D, k, cube, self.p_A ** cnt * (1 - self.p_A) ** (k - cnt), y, self.p_bg, M=self.M)

    def sample(self, n, seed=0, *, balanced=False, coords="pattern"):
        r"""Draw ``(X, y, counts)`` as :meth:`PatternModel.sample` (``balanced``: rejection per class).

        .. math:: \tilde\phi_A\sim\mathrm{Bern}(p_A)^{k},\quad \tilde\phi_B\sim\mathrm{Bern}(p_\cdot),\quad
                  \phi = (\tilde\phi - \mathbb E\tilde\phi)/\tilde\sigma

        Notes
        -----
        Regime: any member; balanced sampling draws the count from the class-conditional binomial law and the
        configuration uniformly given the count.

        References
        ----------
        .. [src] [Shi22, App. E.1.2].
        """
        owner = "emergence.ExchangeablePatternModel.sample"
        n = check(owner, "n", n, Integer(1))
        if coords not in ("pattern", "input") or (coords == "input" and self.M is None):
            raise InvalidParameterError(f"The 'coords' parameter of {owner} must be 'pattern', or 'input' with a "
                                        f"dictionary M. Got {coords!r} instead.")
        rng = np.random.default_rng(seed)
        pi_c, y_c = self.count_law()
        if balanced:
            if n % 2:
                raise InvalidParameterError(f"The 'n' parameter of {owner} must be even when balanced. Got {n}.")
            cnt = np.concatenate([rng.choice(self.k + 1, n // 2, p=np.where(y_c == v, pi_c, 0) / pi_c[y_c == v].sum())
                                  for v in (1, -1)])
            cnt = rng.permutation(cnt)
        else:
            cnt = rng.binomial(self.k, self.p_A, n)
        keys = rng.random((n, self.k))
        A = (np.argsort(np.argsort(keys, axis=1), axis=1) < cnt[:, None]).astype(np.float64)   # uniform given cnt
        mom = self._moments
        bg = (rng.random((n, self.D - self.k)) < mom.p_bar).astype(np.float64)
        X = np.concatenate([A - self.p_A, bg - mom.p_bar], axis=1) / mom.sigt
        if coords == "input":
            X = X @ self.M.T
        return X, y_c[cnt], cnt



def _p(owner, name, p):
    return check(owner, name, p, Interval(0.0, 1.0, "neither"))


def _dk(owner, D, k, k_min=1):
    D = check(owner, "D", D, Integer(2))
    k = check(owner, "k", k, Integer(k_min, min(D - 1, _K_ENUM)))
    return D, k


def _cube(k):
    return np.array(list(itertools.product([0, 1], repeat=k)), dtype=np.float64)


def random_dictionary(d, D, seed=0, orthonormal=True):
    r"""A random dictionary ``M`` (d, D): orthonormal columns (QR of a Gaussian matrix), or unit Gaussian columns.

    .. math:: M = Q_{:, :D}\ (G = QR),\quad\text{or}\quad M_j = G_j/\|G_j\|,\qquad G_{ij}\sim\mathcal N(0,1)

    Parameters
    ----------
    d, D : int
        Ambient dimension and number of patterns, ``d >= D >= 1``.
    seed : int or numpy.random.Generator
    orthonormal : bool
        False: independent uniform unit columns, a mu-incoherent dictionary (App. F, assumption (D)) with
        ``mu = sqrt(d) max_{i != j} |<M_i, M_j>|`` about ``2 sqrt(log D)`` (see :func:`incoherence`).

    Returns
    -------
    ndarray of shape (d, D)

    Notes
    -----
    Regime: d >= D (full column rank).

    References
    ----------
    .. [src] [Shi22, Section 3, App. F.1 (D)].
    """
    D = check("emergence.random_dictionary", "D", D, Integer(1))
    d = check("emergence.random_dictionary", "d", d, Integer(D))
    G = np.random.default_rng(seed).standard_normal((d, D))
    if not check("emergence.random_dictionary", "orthonormal", orthonormal, Options((True, False))):
        return G / np.linalg.norm(G, axis=0)
    Q, Rm = np.linalg.qr(G)
    return Q * np.sign(np.diag(Rm))


def incoherence(M):
    r"""The incoherence ``mu = sqrt(d) max_{i != j} |<M_i, M_j>|`` of a dictionary with unit columns (App. F (D)).

    .. math:: |\langle M_i, M_j\rangle| \le \mu/\sqrt d\quad (i\ne j)

    Parameters
    ----------
    M : array_like of shape (d, D)

    Returns
    -------
    float
        0 for orthonormal columns.

    Notes
    -----
    Regime: any M with unit columns; Thm 34 asks ``mu <= O(sqrt(d)/D)``.

    References
    ----------
    .. [src] [Shi22, App. F.1].
    """
    M = check("emergence.incoherence", "M", M, FiniteArray(2))
    rho = M.T @ M
    np.fill_diagonal(rho, 0.0)
    return float(math.sqrt(M.shape[0]) * np.abs(rho).max()) if M.shape[1] > 1 else 0.0


def _check_dictionary(owner, M, D):
    """A (d, D) dictionary, d >= D, with unit columns and full column rank (orthonormal or mu-incoherent)."""
    M = check(owner, "M", M, FiniteArray(2))
    if (M.shape[1] != D or M.shape[0] < D or np.abs(np.linalg.norm(M, axis=0) - 1.0).max() > _ORTH_TOL
            or np.linalg.svd(M, compute_uv=False)[-1] < _RANK_TOL):
        _fail("M", f"a (d, D) = (d >= {D}, {D}) array with unit columns of full rank (orthonormal or incoherent)",
              f"shape {M.shape}")
    return M


def gram(model):
    r"""The Gram matrix ``rho = M^T M`` of the model's dictionary, or None when it is the identity.

    .. math:: \rho = M^\top M,\qquad q = M^\top w,\quad q^+ = q - \eta\,\rho\,\nabla_q L

    (a gradient step on ``w`` in ``R^d`` moves the pattern coordinates by ``rho`` times the pattern gradient).

    Parameters
    ----------
    model : PatternModel or ExchangeablePatternModel

    Returns
    -------
    ndarray of shape (D, D) or None
        None without a dictionary or with orthonormal columns.

    Notes
    -----
    Regime: any dictionary the model accepts.

    References
    ----------
    .. [src] [Shi22, App. F.1] (rho := M^T M).
    """
    M = getattr(model, "M", None)
    if M is None:
        return None
    rho = M.T @ M
    return None if np.abs(rho - np.eye(rho.shape[0])).max() <= _ORTH_TOL else rho


def parity_mixture(D, k, p_o, independent_background=True, M=None):
    r"""The parity mixture ``D_A^mix = p_o D^(0) + (1 - p_o) D^(1)`` with odd-count labels.

    .. math:: \phi~_A\sim p_o\,\mathrm{U}\{0,1\}^k + (1-p_o)\,\tfrac12(\delta_{0\cdots0} + \delta_{1\cdots1}),
              \qquad y = +1 \iff \textstyle\sum_A\tilde\phi_j \text{ odd}

    Parameters
    ----------
    D, k : int
        ``1 <= k < D``, ``k <= 20`` (the A-support has 2^k rows).
    p_o : float
        Mixture weight and background marginal, in (0, 1).
    independent_background : bool
        True (default): background iid Bern(p_o) independent of the A-block, a valid member of F_Xi for every
        p_o. False: the paper's mixture, background Bern(1/2) in D^(0) and Bern(p_o/(2 - 2p_o)) in D^(1),
        which violates (A2) unless p_o = 1/2 (docs/errata.md).
    M : array_like of shape (d, D), optional
        Dictionary.

    Returns
    -------
    PatternModel

    Notes
    -----
    Regime: gamma = (1 - p_o)/2 and E y = 0 for odd k (checked); p_o/(2 - 2p_o) < 1 needs p_o < 2/3 in the
    paper's variant.

    References
    ----------
    .. [src] [Shi22, proof of Theorem 2 (App. C), App. E.1.1].

    Examples
    --------
    >>> float(parity_mixture(10, 3, 0.3).moments().gamma[0])
    0.35
    """
    owner = "emergence.parity_mixture"
    D, k = _dk(owner, D, k)
    p_o = _p(owner, "p_o", p_o)
    cube = _cube(k)
    cnt = cube.sum(1)
    y = np.where(cnt % 2 == 1, 1.0, -1.0)
    const = np.array([0, 2 ** k - 1])
    if independent_background:
        pr = p_o * np.full(2 ** k, 2.0 ** -k)
        pr[const] += (1 - p_o) / 2
        return PatternModel(D, k, cube, pr, y, p_o, M=M)
    p1 = p_o / (2 - 2 * p_o)
    if not p1 < 1:
        raise InvalidParameterError(f"The 'p_o' parameter of {owner} must be a float in (0, 2/3) when "
                                    f"independent_background=False (p_o/(2 - 2 p_o) < 1). Got {p_o!r} instead.")
    S = np.concatenate([cube, cube[const]])
    pr = np.concatenate([p_o * np.full(2 ** k, 2.0 ** -k), np.full(2, (1 - p_o) / 2)])
    rows_p = np.concatenate([np.full(2 ** k, 0.5), np.full(2, p1)])
    return PatternModel(D, k, S, pr, np.concatenate([y, y[const]]), p_o, p_bg_rows=rows_p, M=M)


def iid_block_model(D, k, p_A, p_bg, positive_counts, M=None):
    r"""Class-relevant patterns iid Bernoulli(p_A); ``y = +1`` iff the number present is in ``positive_counts``.

    .. math:: \pi_r = p_A^{|r|}(1-p_A)^{k-|r|},\qquad y_r = +1 \iff |r|\in P

    Parameters
    ----------
    D, k : int
        ``1 <= k < D``.
    p_A, p_bg : float
        Bernoulli probabilities in (0, 1).
    positive_counts : iterable of int
        The label set P, a subset of {0, ..., k}.
    M : array_like, optional
        Dictionary.

    Returns
    -------
    PatternModel or ExchangeablePatternModel
        The explicit 2^k support for ``k <= 16``; the count-resolved :class:`ExchangeablePatternModel` beyond
        (the paper's interval labeling has k = 30).

    Notes
    -----
    Regime: any ``1 <= k < D``. Both classes must have positive probability.

    References
    ----------
    .. [src] [Shi22, App. E.1.2].

    Examples
    --------
    >>> m = iid_block_model(10, 3, 0.5, 0.5, [2, 3])
    >>> m.moments().Ey
    0.0
    """
    owner = "emergence.iid_block_model"
    D = check(owner, "D", D, Integer(2))
    k = check(owner, "k", k, Integer(1, D - 1))
    p_A, p_bg = _p(owner, "p_A", p_A), _p(owner, "p_bg", p_bg)
    try:
        P = {check(owner, "positive_counts", c, Integer(0, k)) for c in positive_counts}
    except TypeError:
        raise InvalidParameterError(f"The 'positive_counts' parameter of {owner} must be an iterable of ints in "
                                    f"[0, {k}]. Got {positive_counts!r} instead.") from None
    ex = ExchangeablePatternModel(D, k, p_A, p_bg, tuple(sorted(P)), M=M)
    return ex.to_pattern_model() if k <= _K_EXPLICIT else ex


def interval_labeling(D, k, p_A=2 / 3, p_bg=0.5, t1=None, t2=None, M=None):
    r"""The interval labeling: ``y = +1`` iff ``t1 <= sum_A phi~_j <= t2`` (an :func:`iid_block_model`).

    .. math:: y = +1 \iff t_1\le\textstyle\sum_{j\in A}\tilde\phi_j\le t_2

    Parameters
    ----------
    D, k : int
        ``1 <= k < D`` (the paper: D = 100, k = 30).
    p_A, p_bg : float
        In (0, 1); the paper uses 2/3 and 1/2.
    t1, t2 : int, optional
        Interval ends in [0, k]; default ``ceil(2k/3)`` and ``k`` (the paper's [20, 30] at k = 30).
    M : array_like, optional

    Returns
    -------
    PatternModel or ExchangeablePatternModel
        As :func:`iid_block_model`.

    Notes
    -----
    Regime: (A0) fails in general (P(y = 1) = 0.5848 at k = 30, docs/emergence.md).

    References
    ----------
    .. [src] [Shi22, App. E.1.2].
    """
    owner = "emergence.interval_labeling"
    D = check(owner, "D", D, Integer(2))
    k = check(owner, "k", k, Integer(1, D - 1))
    t1 = math.ceil(2 * k / 3) if t1 is None else check(owner, "t1", t1, Integer(0, k))
    t2 = k if t2 is None else check(owner, "t2", t2, Integer(t1, k))
    return iid_block_model(D, k, p_A, p_bg, range(t1, t2 + 1), M=M)


def hidden_representation(D, k, n_per_class=50, p_bg=0.5, seed=0, M=None):
    r"""The hidden-representation labeling: the A-block is uniform on ``2 n_per_class`` random binary vectors.

    .. math:: \tilde\phi_A \sim \mathrm U\{v_1,\dots,v_{2n}\},\qquad y(v_i) = +1 \ (i\le n),\ -1\ (i>n)

    Parameters
    ----------
    D, k : int
        ``1 <= k < D`` (the paper: D = 250, k = 50).
    n_per_class : int
        Vectors per class (distinct vectors; 50 in the paper).
    p_bg : float
        Background probability in (0, 1).
    seed : int or numpy.random.Generator
        Draws the vectors (uniform on {0,1}^k without repetition).
    M : array_like, optional

    Returns
    -------
    PatternModel

    Notes
    -----
    Regime: gamma differs across A, so (A1)'s common gamma fails generically.

    References
    ----------
    .. [src] [Shi22, App. E.3.1].
    """
    owner = "emergence.hidden_representation"
    D = check(owner, "D", D, Integer(2))
    k = check(owner, "k", k, Integer(1, D - 1))
    n = check(owner, "n_per_class", n_per_class, Integer(1, 2 ** min(k, 60) // 2))
    rng = np.random.default_rng(seed)
    rows = {}
    while len(rows) < 2 * n:
        rows.setdefault(tuple(rng.integers(0, 2, k).tolist()), None)
    S = np.array(list(rows), dtype=np.float64)
    y = np.concatenate([np.ones(n), -np.ones(n)])
    return PatternModel(D, k, S, np.full(2 * n, 1.0 / (2 * n)), y, _p(owner, "p_bg", p_bg), M=M)


def no_structure(model):
    r"""The model with input structure removed (A1'): every pattern Bernoulli(1/2), labels as before.

    .. math:: \tilde\phi\sim\mathrm U\{0,1\}^D,\qquad y = y(\tilde\phi_A)

    Parameters
    ----------
    model : PatternModel or ExchangeablePatternModel
        Its labels must be defined on all of {0,1}^k: either its support is the whole cube, or its labels
        depend on the count only.

    Returns
    -------
    PatternModel or ExchangeablePatternModel
        Support {0,1}^k (itertools order), uniform probabilities, ``p_bg = 1/2`` (``p_A = p_bg = 1/2`` for the
        count-resolved form).

    Notes
    -----
    Regime: k <= 20 for an explicit support, any k for the count-resolved form. For the parity mixture this
    is the uniform k-parity D^(0) (gamma = 0).

    References
    ----------
    .. [src] [Shi22, Section 3 ((A1')), Theorem 4 (App. D)].
    """
    if isinstance(model, ExchangeablePatternModel):
        return ExchangeablePatternModel(model.D, model.k, 0.5, 0.5, model.positive_counts, M=model.M)
    if not isinstance(model, PatternModel):
        raise InvalidParameterError(f"The 'model' parameter of emergence.no_structure must be a PatternModel. "
                                    f"Got {type(model).__name__} instead.")
    k = check("emergence.no_structure", "k", model.k, Integer(1, _K_ENUM))
    cube = _cube(k)
    lab = {tuple(r): v for r, v in zip(model.A_support, model.labels)}
    if len(lab) == 2 ** k:
        y = np.array([lab[tuple(r)] for r in cube])
    else:
        counts = model.A_support.sum(1).astype(int)
        y_c = np.zeros(k + 1)
        for n, v in zip(counts, model.labels):
            y_c[n] = v if y_c[n] in (0, v) else np.nan
        if not np.all(np.abs(y_c) == 1):
            raise InvalidParameterError("The 'model' parameter of emergence.no_structure must define a label for "
                                        "every configuration of {0,1}^k: a support covering the cube, or labels that "
                                        "depend on the count only with every count 0..k present.")
        y = y_c[cube.sum(1).astype(int)]
    return PatternModel(model.D, k, cube, np.full(2 ** k, 2.0 ** -k), y, 0.5, M=model.M, sigma_zeta=model.sigma_zeta)


def with_class_ratio(model, negative_ratio):
    r"""The model with the class prior changed to ``P[y = -1] = negative_ratio``, each class's law kept.

    .. math:: \pi'_r = \pi_r\,\frac{P'[y_r]}{P[y_r]},\qquad P'[y = -1] = \rho,\ P'[y = +1] = 1 - \rho

    (the A-block rows reweighted within their class; for ``D_A^mix`` the marginal background probability becomes
    the new mixture ``sum_r pi'_r p_r``).

    Parameters
    ----------
    model : PatternModel or ExchangeablePatternModel
        The balanced (or any) model; the count-resolved form is expanded to its explicit support (k <= 20).
    negative_ratio : float
        ``P[y = -1]``, in (0, 1) (the paper's E4: 0.8 and 0.9).

    Returns
    -------
    PatternModel

    Notes
    -----
    Regime: any member of F_Xi; (A0) fails unless ``negative_ratio = 1/2``, which App. F's class-weighted loss
    (``theory_schedule(..., variant="general")``) handles. The paper does not say how it induced the imbalance
    (App. E.2.2); reweighting the classes is the choice that keeps every class-conditional law.

    References
    ----------
    .. [src] [Shi22, App. E.2.2 (class imbalance), App. F].

    Examples
    --------
    >>> m = with_class_ratio(parity_mixture(20, 3, 0.5), 0.8)
    >>> round(float(m.A_probs[m.labels < 0].sum()), 12)
    0.8
    """
    owner = "emergence.with_class_ratio"
    rho = check(owner, "negative_ratio", negative_ratio, Interval(0.0, 1.0, "neither"))
    if isinstance(model, ExchangeablePatternModel):
        model = model.to_pattern_model()
    if not isinstance(model, PatternModel):
        raise InvalidParameterError(f"The 'model' parameter of {owner} must be a PatternModel or an "
                                    f"ExchangeablePatternModel. Got {type(model).__name__} instead.")
    pi, y = model.A_probs, model.labels
    scale = np.where(y < 0, rho / pi[y < 0].sum(), (1.0 - rho) / pi[y > 0].sum())
    new = pi * scale
    new = new / new.sum()
    p_bg = model.p_bg if model.p_bg_rows is None else float(new @ model.p_bg_rows)
    return PatternModel(model.D, model.k, model.A_support, new, y, p_bg, p_bg_rows=model.p_bg_rows, M=model.M,
                        sigma_zeta=model.sigma_zeta)


@dataclass(frozen=True, eq=False)
class GaussianParityMixture:
    r"""The Gaussian-mixture parity: ``x | eps ~ N(M eps, tau^2 I_d)``, ``eps ~ U{+-1}^k``, ``y = prod eps``.

    .. math:: \tau^2 = \sigma_r^2 k/d,\qquad x = M\varepsilon + g,\ g\sim\mathcal N(0,\tau^2 I_d)

    Parameters
    ----------
    d, k : int
        ``1 <= k <= min(d, 16)``.
    sigma_r : float
        Noise scale, > 0.
    M : array_like of shape (d, k)
        Orthonormal columns.

    Notes
    -----
    Regime: gamma = 0 for k >= 2, so (A1) fails; illustrative only.

    References
    ----------
    .. [src] [Shi22, App. E.3.2, eq. (290)].
    """
    d: int
    k: int
    sigma_r: float
    M: np.ndarray

    _constraints = {"d": Integer(1), "k": Integer(1, 16), "sigma_r": Interval(0.0, np.inf, "neither"),
                    "M": FiniteArray(2)}

    def __post_init__(self):
        validate(self)
        if not self.k <= self.d:
            raise InvalidParameterError(f"The 'k' parameter of emergence.GaussianParityMixture must be an int in "
                                        f"[1, d] = [1, {self.d}]. Got {self.k} instead.")
        if self.M.shape != (self.d, self.k) or np.abs(self.M.T @ self.M - np.eye(self.k)).max() > _ORTH_TOL:
            raise InvalidParameterError(f"The 'M' parameter of emergence.GaussianParityMixture must be a (d, k) = "
                                        f"({self.d}, {self.k}) array with orthonormal columns. Got shape "
                                        f"{self.M.shape} instead.")

    @property
    def tau2(self):
        """Noise variance ``tau^2 = sigma_r^2 k / d``."""
        return self.sigma_r ** 2 * self.k / self.d

    def centers(self):
        """Sign patterns ``eps`` (2^k, k) in ``itertools.product([-1, 1])`` order and their labels ``prod eps``."""
        E = np.array(list(itertools.product([-1, 1], repeat=self.k)), dtype=np.float64)
        return E, E.prod(1)

    def sample(self, n, seed=0, *, balanced=False):
        r"""Draw ``(X, y)``: ``X`` (n, d) with ``x = M eps + g``, ``y = prod eps``.

        .. math:: \varepsilon\sim\mathrm U\{\pm1\}^k,\quad g\sim\mathcal N(0,\tau^2 I_d)

        ``balanced=True``: exactly n/2 samples per class (the first half y = +1), each from its class-conditional
        law: eps_1..eps_{k-1} uniform and ``eps_k = y prod_{i<k} eps_i`` (uniform on the vertices of label y).

        Notes
        -----
        Regime: any n >= 1 (even with ``balanced``).

        References
        ----------
        .. [src] [Shi22, App. E.3.2].
        """
        owner = "emergence.GaussianParityMixture.sample"
        n = check(owner, "n", n, Integer(1))
        if balanced and n % 2:
            raise InvalidParameterError(f"The 'n' parameter of {owner} must be even with balanced=True (n/2 samples "
                                        f"per class). Got {n!r} instead.")
        rng = np.random.default_rng(seed)
        eps = rng.choice([-1.0, 1.0], size=(n, self.k))
        if balanced:
            y = np.repeat([1.0, -1.0], n // 2)
            eps[:, -1] = y * eps[:, :-1].prod(1)
        return eps @ self.M.T + math.sqrt(self.tau2) * rng.standard_normal((n, self.d)), eps.prod(1)
