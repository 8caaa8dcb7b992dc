r"""The gradient-feature framework of [Shi24] ch. 3: symmetric initialisation (3.9), the exact first step with
weight decay ``1/eta^(1)``, cones, nice sets and the feature probability, the constructive second layer of
Lemma B.6, the frozen-feature optimum ``OPT_{W,b,B_a2}`` and the loss of a network (docs/gradient_features.md).

Conventions: ``W`` is (M, d) with one row per neuron, ``g(x) = sum_i a_i relu(<w_i, x> - b_i)``,
``b`` is never trained; the symmetric init has ``M = 4m`` neurons in the order of (3.9). ``loss`` is ``"hinge"``
(``l'(0) = -1``) or ``"logistic"``, the base-2 logistic ``log2(1 + e^{-z})`` (``l(0) = 1``,
``l'(0) = -1/(2 ln 2)``). A data model is anything with ``.sample(n, rng)``, ``.dim``, ``.E_yx()`` and, for the
population first step, ``.simplified_gradient(W, b)`` and ``.A(W, b)``.

Public names: :func:`symmetric_init`, :func:`first_step`, :func:`cone_membership`, :func:`nice_set`,
:func:`feature_probability`, :func:`good_second_layer`, :func:`uniform_parity_second_layer`, :func:`opt_frozen`,
:func:`population_loss`, :func:`loss_slope`.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy import optimize, sparse, special
from scipy.special import expit
from scipy.stats import beta as _beta_law

from ..._dd import dd_sum
from ..._validate import Either, FiniteArray, Interval, InvalidParameterError, Options, as_int, check
from ..._exact import two_prod as _two_prod
from .data import LOSSES, _zero_one

__all__ = ["symmetric_init", "first_step", "cone_membership", "nice_set", "feature_probability",
           "good_second_layer", "uniform_parity_second_layer", "opt_frozen", "population_loss", "loss_slope"]

_LN2 = math.log(2.0)
_LOSSES = ("hinge", "logistic")
_POS = Interval(0.0, np.inf, "neither")
_MU = (1e-2, 1e-4, 1e-6)        # continuation of the smoothed dual norm sqrt(||v||^2 + mu^2)
_SPAN_TOL = 1e-9               # a feature within this distance of span(means) uses the mixture's O(q) statistics
_CHUNK = 1 << 22                 # floats per (rows x neurons) block of a Monte Carlo pass: 32 MiB


def _loss_value(z, loss):
    """``l(z)`` of :data:`~popdyn.models.gradient_features.LOSSES`, or for ``"error"`` ``1[z < 0] + 1[z = 0]/2``."""
    return LOSSES.get(loss, _zero_one)(z)


def _loss_deriv(z, loss):
    """``l'(z)``: hinge ``-1[z < 1]`` (0 at the kink z = 1, as torch), base-2 logistic ``-sigmoid(-z)/ln 2``."""
    if loss == "hinge":
        return -(z < 1.0).astype(float)
    return -expit(-z) / _LN2


def loss_slope(loss="hinge"):
    r"""``|l'(0)|`` of the framework's losses, the factor of every first-step formula.

    .. math:: |\ell'_{\rm hinge}(0)| = 1,\qquad |\ell'_{\log_2}(0)| = \frac{1}{2\ln 2}
              \quad\big(\ell_{\log_2}(z) = \log_2(1+e^{-z}),\ \ell(0) = 1\big)

    Parameters
    ----------
    loss : {"hinge", "logistic"}
        "logistic" is the base-2 logistic loss (Assumption 3.1 needs ``l(0) = 1``).

    Returns
    -------
    float

    Notes
    -----
    Accuracy: exact to the last bit (1 and 1/(2 ln 2) correctly rounded).
    Regime: exact. The paper writes ``-l'(0)`` for this positive number (docs/gradient_features.md).

    References
    ----------
    .. [src] [Shi24, Section 3.3, Assumption 3.1].

    Examples
    --------
    >>> loss_slope("hinge"), round(loss_slope("logistic"), 6)
    (1.0, 0.721348)
    """
    loss = check("gradient_features.loss_slope", "loss", loss, Options(_LOSSES))
    return 1.0 if loss == "hinge" else 1.0 / (2.0 * _LN2)


def _params(owner, a, W, b):
    """Checked network parameters ``a`` (M,), ``W`` (M, d), ``b`` (M,)."""
    W = check(owner, "W", W, FiniteArray(2))
    a = check(owner, "a", a, FiniteArray(1, (W.shape[0],)))
    b = check(owner, "b", b, FiniteArray(1, (W.shape[0],)))
    return a, W, b


def _rng(owner, rng):
    """A ``numpy.random.Generator`` from a Generator or an int seed."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(as_int(owner, "rng", rng, 0))


def symmetric_init(d, m, sigma_a, sigma_w, b_tilde, rng=0, *, law="gauss"):
    r"""The symmetric initialisation (3.9): ``4m`` neurons in mirror copies, so that ``g^{(0)} = 0`` exactly.

    .. math:: i\in[0,m):\ a_i\sim\mathcal N(0,\sigma_a^2),\ \mathbf w_i\sim\mathcal N(0,\sigma_w^2I_d),\ b_i=\tilde b;
              \quad i\in[m,2m):\ (a_i,\mathbf w_i,b_i) = -(a_{i-m},\mathbf w_{i-m},b_{i-m});
              \quad i\in[2m,4m):\ (a_i,\mathbf w_i,b_i) = (-a_{i-2m},\mathbf w_{i-2m},b_{i-2m})

    Parameters
    ----------
    d : int
        Input dimension, >= 1.
    m : int
        Base count, >= 1 (the network has ``4m`` neurons; ``m`` of the bounds is this count).
    sigma_a, sigma_w : float
        Scales of the second and first layer, > 0.
    b_tilde : float or array_like of shape (m,)
        The bias ``b~ > 0`` of the first block, or one finite bias per base neuron (B.479's grid for uniform
        parity, drawn by the caller).
    rng : numpy.random.Generator or int
        Randomness (an int is a seed of ``numpy.random.default_rng``).
    law : {"gauss", "sign"}
        "gauss": Gaussian ``a`` and ``w`` (3.9); "sign": ``a = sigma_a U{+-1}``, ``w = sigma_w U{+-1}^d`` (B.479).

    Returns
    -------
    a : ndarray of shape (4m,)
    W : ndarray of shape (4m, d)
    b : ndarray of shape (4m,)

    Notes
    -----
    Accuracy: exact: the mirror copies are bit-identical, so g = 0 exactly at init (with the two halves summed
    apart; a plain dot product may leave a few ulps).
    Regime: exact copies, never re-sampled ones: ``g^{(0)} = 0`` to rounding, so the first
    step sees ``l'(0)`` on every sample.

    References
    ----------
    .. [src] [Shi24, (3.9), (B.479)].

    Examples
    --------
    >>> a, W, b = symmetric_init(3, 2, 1.0, 1.0, 0.5)
    >>> a.shape, W.shape, b.tolist()
    ((8,), (8, 3), [0.5, 0.5, -0.5, -0.5, 0.5, 0.5, -0.5, -0.5])
    """
    owner = "gradient_features.symmetric_init"
    d, m = as_int(owner, "d", d, 1), as_int(owner, "m", m, 1)
    sigma_a, sigma_w = check(owner, "sigma_a", sigma_a, _POS), check(owner, "sigma_w", sigma_w, _POS)
    law = check(owner, "law", law, Options(("gauss", "sign")))
    if np.ndim(b_tilde) == 0:
        bt = np.full(m, check(owner, "b_tilde", b_tilde, _POS))
    else:
        bt = check(owner, "b_tilde", b_tilde, FiniteArray(1, (m,)))
    rng = _rng(owner, rng)
    if law == "gauss":
        a, w = rng.standard_normal(m) * sigma_a, rng.standard_normal((m, d)) * sigma_w
    else:
        a = rng.choice([-1.0, 1.0], m) * sigma_a
        w = rng.choice([-1.0, 1.0], (m, d)) * sigma_w
    a2, W2, b2 = np.concatenate([a, -a]), np.vstack([w, -w]), np.concatenate([bt, -bt])
    return np.concatenate([a2, -a2]), np.vstack([W2, W2]), np.concatenate([b2, b2])


def _is_symmetric(a, W, b):
    """True when ``(a, W, b)`` has the mirror structure of (3.9) (exact equalities)."""
    M = a.size
    if M % 4:
        return False
    m = M // 4
    return bool(np.array_equal(a[m:2 * m], -a[:m]) and np.array_equal(W[m:2 * m], -W[:m])
                and np.array_equal(b[m:2 * m], -b[:m]) and np.array_equal(a[2 * m:], -a[:2 * m])
                and np.array_equal(W[2 * m:], W[:2 * m]) and np.array_equal(b[2 * m:], b[:2 * m]))


def _sample_gradients(a, W, b, X, y, loss):
    """``(grad_a, grad_W)`` of the empirical loss ``mean l(y g(x))`` on ``(X, y)`` (chunked over samples)."""
    n = X.shape[0]
    ga, gW = np.zeros(a.size), np.zeros(W.shape)
    step = max(1, _CHUNK // max(W.shape[0], 1))
    for s in range(0, n, step):
        Xc, yc = X[s:s + step], y[s:s + step]
        pre = Xc @ W.T - b
        act = np.maximum(pre, 0.0)
        c = _loss_deriv(yc * (act @ a), loss) * yc
        ga += c @ act
        gW += ((pre > 0.0) * c[:, None]).T @ Xc
    return ga / n, gW * a[:, None] / n


def first_step(model, a0, W0, b, eta1, loss="hinge", X=None, y=None):
    r"""The first gradient step with weight decay ``lambda^(1) = 1/eta^(1)``: it erases the initialisation.

    .. math:: \mathbf w_i^{(1)} = -\eta^{(1)}\nabla_{\mathbf w_i}\mathcal L(g_{\Xi^{(0)}})
              = \eta^{(1)}|\ell'(0)|\,a_i^{(0)}\,G(\mathbf w_i^{(0)}, b_i),\qquad
              a_i^{(1)} = \eta^{(1)}|\ell'(0)|\,A(\mathbf w_i^{(0)}, b_i)

    with ``G(w, b) = E[y x 1[w.x > b]]`` and ``A(w, b) = E[y relu(w.x - b)]`` (population) or their sample means.

    Parameters
    ----------
    model : data model
        Gives ``.simplified_gradient(W, b)`` and ``.A(W, b)`` (population step); unused when ``X, y`` are given.
    a0 : array_like of shape (M,)
        Initial second layer.
    W0 : array_like of shape (M, d)
        Initial first layer (one row per neuron).
    b : array_like of shape (M,)
        Biases (fixed).
    eta1 : float
        Step size ``eta^(1) > 0``.
    loss : {"hinge", "logistic"}
        Loss ("logistic" is base-2).
    X : array_like of shape (n, d) or None
        A sample; None gives the population step.
    y : array_like of shape (n,) or None
        Its labels (+-1).

    Returns
    -------
    a1 : ndarray of shape (M,)
    W1 : ndarray of shape (M, d)

    Notes
    -----
    Accuracy: sample: |delta a_i - exact| <= 4 (n + d + 4) eps c eta1 E|l'| relu(pre_i) and |delta W_ij - exact| <= 4
    (n + d + 4) eps c eta1 |a_i| E|l' x_j| (away from the kinks, 1e-9), c = 1 for the hinge and 1 + max_x sum_i |a_i|
    (|w_i| . |x| + |b_i|) for the logistic loss (its derivative moves with the rounding of y g); measured 0.15 of the
    bound (tests/test_accuracy_gradient_features.py, exact rationals and mpmath). Population: that of the model's
    simplified_gradient and A, times one product.
    Regime: population: the symmetric init (3.9) (``g^(0) = 0``, checked exactly; an InvalidParameterError
    otherwise), any model with a closed-form or Monte Carlo ``G`` and ``A``. On a sample: the exact gradient
    step of the empirical loss at any init (``l'(y g)`` evaluated at the actual ``g^(0)``; at the symmetric
    init this is ``l'(0)`` and the formula above holds with the sample means, docs/gradient_features.md).

    References
    ----------
    .. [src] [Shi24, (B.16)-(B.17), Remark B.13, Lemma B.70].

    Examples
    --------
    >>> import numpy as np
    >>> a0, W0, b = symmetric_init(2, 1, 1.0, 1.0, 0.5, rng=0)
    >>> X, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, -1.0])
    >>> a1, W1 = first_step(None, a0, W0, b, 0.1, X=X, y=y)
    >>> bool(np.allclose(W1[2:], -W1[:2]) and np.allclose(a1[2:], a1[:2]))
    True
    """
    owner = "gradient_features.first_step"
    a0, W0, b = _params(owner, a0, W0, b)
    eta1 = check(owner, "eta1", eta1, _POS)
    loss = check(owner, "loss", loss, Options(_LOSSES))
    if (X is None) != (y is None):
        raise InvalidParameterError(f"The 'X' and 'y' parameters of {owner} must both be given (a sample) or both "
                                    f"be None (population). Got X is None: {X is None}, y is None: {y is None}.")
    if X is not None:
        X = check(owner, "X", X, FiniteArray(2, (None, W0.shape[1])))
        y = check(owner, "y", y, FiniteArray(1, (X.shape[0],)))
        if X.shape[0] == 0 or np.any(np.abs(y) != 1.0):
            raise InvalidParameterError(f"The 'y' parameter of {owner} must be a non-empty array of +-1 labels. "
                                        f"Got values {np.unique(y)[:5].tolist()}.")
        ga, gW = _sample_gradients(a0, W0, b, X, y, loss)
        return -eta1 * ga, -eta1 * gW
    if not _is_symmetric(a0, W0, b):
        raise InvalidParameterError(f"The 'a0' parameter of {owner} must come with W0 and b from the symmetric "
                                    f"init (3.9) (4m neurons in exact mirror copies) for the population step; "
                                    f"pass a sample (X, y) for any other init.")
    half = a0.size // 2                       # neurons 2m..4m repeat (w, b) of 0..2m: G and A computed once
    G = np.asarray(model.simplified_gradient(W0[:half], b[:half]), float)
    A = np.asarray(model.A(W0[:half], b[:half]), float)
    c = eta1 * loss_slope(loss)
    return c * np.concatenate([A, A]), c * a0[:, None] * np.vstack([G, G])


def _rows(W):
    """``(Ws, ns, e)``: the rows of ``W`` scaled by powers of 2 (exactly) so that each one's largest entry is in
    [1/2, 1), their norms by a plain sum of squares (to ~d ulp) and the exponents, ``||w_i|| = ns_i 2^e_i``: no square
    overflows (``||w|| > 1.3e154``) or underflows (``< 1.5e-154``)."""
    e = np.frexp(np.max(np.abs(W), axis=1, initial=0.0))[1]
    Ws = np.ldexp(W, -e[:, None])
    return Ws, np.sqrt(np.einsum("ij,ij->i", Ws, Ws)), e


def _norms_dd(Ws):
    """Norms of scaled rows to 1.5 ulp at any d: squares exact by Dekker's product, summed in double-double (~50 ns a
    term: taken only for the rows whose norm decides)."""
    sq, err = _two_prod(Ws, Ws)
    hi, lo = dd_sum(sq)
    return np.sqrt(hi + (lo + err.sum(axis=1)))


def _cone_args(owner, D, d, gamma, norm, name="D"):
    """Checked unit features ``D`` (the parameter ``name``) as (r, d), ``gamma`` and ``norm`` of a cone."""
    Dm = check(owner, name, np.atleast_2d(D), FiniteArray(2, (None, d)))
    if not np.allclose(np.linalg.norm(Dm, axis=1), 1.0, rtol=0.0, atol=1e-9):    # 1e-9: unit up to rounding
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must hold unit vectors. Got norms "
                                    f"{np.linalg.norm(Dm, axis=1)[:5].tolist()}.")
    norm = check(owner, "norm", norm, Options(("l2", "linf")))
    return Dm, check(owner, "gamma", gamma, Interval(0.0, 1.0, "neither") if norm == "l2" else _POS), norm


def _cone(rows, Dm, gamma, norm, signed=False):
    """Cone membership (M, r) of the scaled rows ``rows`` of :func:`_rows`; ``signed``: ``<w, D> > (1 - gamma)||w||``
    for l2 (the l_inf cone is signed anyway)."""
    Ws, ns, _ = rows
    safe = np.where(ns > 0.0, ns, 1.0)[:, None]
    if norm == "l2":
        cos = Ws @ Dm.T / safe
        inside = (cos if signed else np.abs(cos)) > 1.0 - gamma
    else:
        inside = np.max(np.abs((Ws / safe)[:, None, :] - Dm[None]), axis=2) < gamma
    return inside & (ns > 0.0)[:, None]


def cone_membership(W, D, gamma, norm="l2"):
    r"""Whether each row of ``W`` lies in the cone around the unit feature ``D``.

    .. math:: \mathcal C_{D,\gamma} = \{\mathbf w: |\langle\mathbf w, D\rangle|/\|\mathbf w\|_2 > 1-\gamma\}
              \ (3.5),\qquad
              \mathcal C^\infty_{D,\gamma_\infty} = \{\mathbf w:
              \|\mathbf w/\|\mathbf w\|_2 - D\|_\infty<\gamma_\infty\}
              \ (\text{B.57})

    Parameters
    ----------
    W : array_like of shape (M, d)
        Vectors (gradients ``G`` or first-step weights).
    D : array_like of shape (d,) or (r, d)
        Unit feature(s).
    gamma : float
        Cone width, in (0, 1) for "l2", > 0 for "linf".
    norm : {"l2", "linf"}
        The l2 cone (3.5), symmetric in ``+-D``, or the signed infinity-norm cone (B.57, uniform parity).

    Returns
    -------
    ndarray of bool, shape (M,) for one feature or (M, r)

    Notes
    -----
    Accuracy: every decision exact where |cos(w, D)| is not within 8 d eps of 1 - gamma (l2) or the l_inf distance not
    within 8 eps of gamma, for rows of any scale (scaled by powers of 2 before squaring: before, ||w|| overflowed
    above 1.3e154 and underflowed below 1.5e-154, leaving such rows in no cone); no wrong decision found
    (tests/test_accuracy_gradient_features.py, mpmath at 40 digits, w of scale 1e-300..1e300).
    Regime: exact; the zero vector lies in no cone. ``rho w`` is in the l2 cone iff ``w`` is (any ``rho != 0``).

    References
    ----------
    .. [src] [Shi24, (3.5), Definition B.57].

    Examples
    --------
    >>> cone_membership([[1.0, 0.1], [-1.0, 0.0], [0.0, 0.0]], [1.0, 0.0], 0.01).tolist()
    [True, True, False]
    """
    owner = "gradient_features.cone_membership"
    W = check(owner, "W", W, FiniteArray(2))
    Dm, gamma, norm = _cone_args(owner, D, W.shape[1], gamma, norm)
    inside = _cone(_rows(W), Dm, gamma, norm)
    return inside[:, 0] if np.ndim(D) == 1 else inside


def _frexp_product(*xs):
    """``prod |x|`` as ``(m, e)``, ``m`` in [2^-n, 1) or 0: the mantissas multiplied (n - 1 roundings), the exponents
    added, so that neither overflows or underflows (``0 * inf`` cannot arise)."""
    m, e = 1.0, 0
    for x in xs:
        mx, ex = np.frexp(np.abs(x))
        m, e = m * mx, e + ex
    return m, e


def _nice(rows, a0, b, Dm, s, gamma, B_G, eta1, loss, norm):
    """The nice set of the scaled rows of :func:`_rows` (the first half of the neurons) for checked inputs, and the
    accurate scaled norms of its neurons."""
    Ws, _, e = rows
    idx = np.flatnonzero(_cone(rows, Dm, gamma, norm, signed=True)[:, 0] & (np.sign(b) == s))
    ns = _norms_dd(Ws[idx])
    m, x = _frexp_product(eta1, loss_slope(loss), a0[idx], B_G)      # |eta1 l'(0) a0_i| B_G = m 2^x
    with np.errstate(over="ignore", under="ignore"):
        big = ns >= np.ldexp(m, x - e[idx])                           # ||w_i|| = ns 2^e >= m 2^x
    return idx[big], ns[big]


def nice_set(W1, a0, b, D, s, gamma, B_G, eta1, loss="hinge", norm="l2"):
    r"""The nice set (3.14) / Definition B.4: neurons whose first-step weight is a strong gradient feature.

    .. math:: G_{(D,s),\rm Nice} = \{i\in[2m]: b_i/|b_i| = s,\ \langle\mathbf w_i^{(1)},D\rangle >
              (1-\gamma)\|\mathbf w_i^{(1)}\|_2,\ \|\mathbf w_i^{(1)}\|_2\ge|\eta^{(1)}\ell'(0)a_i^{(0)}|B_G\}

    Parameters
    ----------
    W1 : array_like of shape (4m, d)
        First-step weights.
    a0 : array_like of shape (4m,)
        Initial second layer.
    b : array_like of shape (4m,)
        Biases.
    D : array_like of shape (d,)
        Unit feature.
    s : {1, -1}
        Sign of the bias.
    gamma : float
        Cone width (:func:`cone_membership`).
    B_G : float
        Gradient-norm threshold, >= 0.
    eta1 : float
        First step size, > 0.
    loss : {"hinge", "logistic"}
        Sets ``|l'(0)|``.
    norm : {"l2", "linf"}
        The signed l2 condition above, or the infinity-norm cone (B.57) of uniform parity.

    Returns
    -------
    ndarray of int
        Indices in ``[0, 2m)``.

    Notes
    -----
    Accuracy: that of :func:`cone_membership` for the cone; the sign and norm comparisons are exact except within 4 eps
    (relative) of the threshold ``|eta1 l'(0) a0_i| B_G`` (||w|| to 1.5 ulp at any scale and d, the threshold's four
    factors multiplied as mantissas with their exponents added apart: no overflow, underflow or 0 * inf; before, a
    threshold inf * 0 was NaN and dropped the neuron, and one that underflowed to 0 let every row pass); no wrong
    decision found (tests/test_accuracy_gradient_features.py, exact rationals and mpmath at 40 digits, rows of norm
    1e-300..1e300, d to 64).
    Regime: exact. Note the signed inner product: with ``w^(1) = eta |l'(0)| a0 G``, neuron i is nice iff
    ``G`` is in the l2 cone with ``sign(a0_i <G, D>) = +1`` and ``||G|| >= B_G``, so under (3.9) the count is
    ``Binomial(m, p/2)`` with ``p`` of :func:`feature_probability` (Lemma B.5's ``p/2``).

    References
    ----------
    .. [src] [Shi24, (3.14), Definition B.4, Lemma B.5].
    """
    owner = "gradient_features.nice_set"
    a0, W1, b = _params(owner, a0, W1, b)
    s = check(owner, "s", s, Options((1, -1)))
    B_G = check(owner, "B_G", B_G, Interval(0.0, np.inf, "left"))
    eta1, loss = check(owner, "eta1", eta1, _POS), check(owner, "loss", loss, Options(_LOSSES))
    Dm, gamma, norm = _cone_args(owner, D, W1.shape[1], gamma, norm)
    half = W1.shape[0] // 2
    return _nice(_rows(W1[:half]), a0[:half], b[:half], Dm, s, gamma, B_G, eta1, loss, norm)[0]


def _clopper_pearson(k, n, level):
    """Exact binomial confidence interval for ``k`` successes in ``n`` trials."""
    alpha = 1.0 - level
    lo = 0.0 if k == 0 else float(_beta_law.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(_beta_law.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def feature_probability(model, D, s, gamma, B_G, tau, n_mc=10_000, rng=0, *, law="gauss", norm="l2",
                        B_G1=None, level=0.95):
    r"""Monte Carlo feature probability ``p`` of (3.6) with an exact (Clopper-Pearson) binomial interval.

    .. math:: p(D, s) = \Pr_{\mathbf w}\big[G(\mathbf w, s\tau)\in\mathcal C_{D,\gamma},\ \|G(\mathbf w,s\tau)\|_2
              \ge B_G\big],\qquad \mathbf w\sim\mathcal N(0, I_d)\ \text{or}\ U\{\pm1\}^d

    (``tau = b~/sigma_w``: ``G(c w, c b) = G(w, b)``, so only the ratio matters).

    Parameters
    ----------
    model : data model
        Gives ``.simplified_gradient(W, b)`` and ``.dim``.
    D : array_like of shape (d,)
        Unit feature.
    s : {1, -1}
        Sign of the bias.
    gamma : float
        Cone width (see :func:`cone_membership`).
    B_G : float
        Gradient-norm threshold, >= 0.
    tau : float
        ``b~/sigma_w > 0``.
    n_mc : int
        Number of initial neurons drawn, >= 1.
    rng : numpy.random.Generator or int
        Randomness.
    law : {"gauss", "sign"}
        Law of ``w`` (as in :func:`symmetric_init`).
    norm : {"l2", "linf"}
        The cone (3.5) or (B.57).
    B_G1 : float or None
        Upper norm bound of (B.490) (``||G|| <= B_G1``), None for none.
    level : float
        Confidence level of the interval, in (0, 1).

    Returns
    -------
    p_hat : float
    ci : tuple of float
        ``(low, high)``.

    Notes
    -----
    Accuracy: statistical: p_hat is Binomial(n_mc, p)/n_mc, the interval exact (Clopper-Pearson), both in [0, 1];
    calibrated against p by enumeration (uniform parity, |z| <= 6; measured 1.6).
    Regime: any model with ``G``; the estimate is unbiased, the interval exact. For mixtures with ``law="gauss"``,
    the l2 cone and ``D`` in the span of the means, ``w`` is drawn through its sufficient statistics
    (``sample_init_coords``: O(1) per neuron, any d; docs/gradient_features.md). Under (3.9) each of the ``m``
    base neurons is nice with probability exactly ``p/2`` (:func:`nice_set`). The paper's bounds on ``p``
    (Lemma B.31, B.38, B.47, B.64) are orders of magnitude; this is the number they bound.

    References
    ----------
    .. [src] [Shi24, (3.6), Definition B.57, (B.490)].
    """
    owner = "gradient_features.feature_probability"
    s = check(owner, "s", s, Options((1, -1)))
    B_G = check(owner, "B_G", B_G, Interval(0.0, np.inf, "left"))
    B_G1 = np.inf if B_G1 is None else check(owner, "B_G1", B_G1, _POS)
    tau = check(owner, "tau", tau, _POS)
    n_mc = as_int(owner, "n_mc", n_mc, 1)
    level = check(owner, "level", level, Interval(0.0, 1.0, "neither"))
    law = check(owner, "law", law, Options(("gauss", "sign")))
    rng, d = _rng(owner, rng), int(model.dim)
    D_q = _span_coords(model, D) if law == "gauss" and norm == "l2" else None
    hits, step = 0, max(1, _CHUNK // (4 * (d if D_q is None else D_q.size + 1)))
    for start in range(0, n_mc, step):
        k = min(step, n_mc - start)
        if D_q is None:
            W = rng.standard_normal((k, d)) if law == "gauss" else rng.choice([-1.0, 1.0], (k, d))
            G = np.asarray(model.simplified_gradient(W, np.full(k, s * tau)), float)
            nG = np.linalg.norm(G, axis=1)
            inside = cone_membership(G, D, gamma, norm)
        else:                                 # O(q) per neuron: G_Q, G_perp of the mixture's sufficient statistics
            G_Q, G_perp = model.simplified_gradient_coords(*model.sample_init_coords(k, 1.0, rng), s * tau)
            nG = np.sqrt(np.sum(G_Q * G_Q, axis=1) + G_perp * G_perp)
            inside = (np.abs(G_Q @ D_q) > (1.0 - gamma) * nG) & (nG > 0.0)
        hits += int(np.sum(inside & (nG >= B_G) & (nG <= B_G1)))
    return hits / n_mc, _clopper_pearson(hits, n_mc, level)


def _span_coords(model, D):
    """``Q^T D`` when the model offers sufficient statistics (``span_basis``, ``sample_init_coords``,
    ``simplified_gradient_coords``) and the unit ``D`` lies in span(Q) (then ``<G, D> = <G_Q, Q^T D>``), else None."""
    if not all(hasattr(model, k) for k in ("span_basis", "sample_init_coords", "simplified_gradient_coords")):
        return None
    Q = model.span_basis[0]
    D = np.asarray(D, float)
    D_q = Q.T @ D
    return D_q if np.linalg.norm(Q @ D_q - D) <= _SPAN_TOL else None


def good_second_layer(W1, a0, b, gstar, gamma, B_G, B_eps, eps_a, eta1, loss="hinge", norm="l2", signs=None):
    r"""Lemma B.6's constructive second layer ``a~`` on the first-step features, approximating ``g*``.

    For each target neuron ``j`` of ``g* = sum_j a*_j relu(<w*_j, x> - b*_j)`` (unit ``w*_j``), with
    ``beta_j = |b*_j|`` when ``|b*_j| >= B_eps`` and ``beta_j = B_eps`` otherwise, ``s_j`` the bias sign of its
    feature (``sign b*_j`` by default):

    .. math:: \Lambda_j = \Big\{i\in G_{(\mathbf w^*_j,s_j),\rm Nice}: \Big|\frac{\|\mathbf w_i^{(1)}\|\beta_j}{|b_i|}
              - 1\Big|\le\epsilon_a\Big\},\qquad \tilde a_i = \frac{a^*_j\beta_j}{|\Lambda_j|\,|b_i|}\ (i\in\Lambda_j),

    ``a~_i = 0`` elsewhere. The paper's tolerance is ``eps_a = B_x1 B_b/(sqrt(mp) B_G B_eps)``.

    Parameters
    ----------
    W1 : array_like of shape (4m, d)
        First-step weights.
    a0 : array_like of shape (4m,)
        Initial second layer.
    b : array_like of shape (4m,)
        Biases.
    gstar : tuple (a_star, W_star, b_star)
        Target network: ``a_star`` (r,), unit rows ``W_star`` (r, d), ``b_star`` (r,).
    gamma : float
        Cone width of the nice sets (:func:`cone_membership`).
    B_G : float
        Gradient-norm threshold, >= 0.
    B_eps : float
        Bias floor ``B_eps > 0``.
    eps_a : float
        Scale tolerance, > 0.
    eta1 : float
        First step size, > 0.
    loss : {"hinge", "logistic"}
        Sets ``|l'(0)|``.
    norm : {"l2", "linf"}
        Cone of the nice sets (:func:`nice_set`).
    signs : array_like of shape (r,) or None
        Bias sign ``s_j = +-1`` of each target's feature; None gives ``sign b*_j`` (+1 for ``b*_j = 0``). A zero
        bias may use either sign; linear data uses -1 (Lemma B.25).

    Returns
    -------
    a_tilde : ndarray of shape (4m,)
    sets : list of ndarray
        ``Lambda_j`` per target; an empty set drops its target (the lottery ticket is ``supp a_tilde``).

    Notes
    -----
    Accuracy: a_tilde relative error <= 8 eps of its formula (a neuron in one set: 3 roundings; in several: the exact
    rational sum of its terms, rounded once, so that terms which cancel keep it; before, 8 eps of the sum of the
    terms' moduli only); the set decisions are exact except within 4 eps (relative) of the cone, B_G and eps_a
    thresholds (for eps_a: of ``1 +- eps_a`` or of eps_a, whichever is larger), at any scale of the inputs (as
    :func:`nice_set`; ``||w_i|| beta_j / |b_i|`` and the terms formed from mantissas and exponents apart); no wrong
    decision found (tests/test_accuracy_gradient_features.py, exact rationals and mpmath at 40 digits).
    Regime: Lemma B.6 bounds ``L(g~) <= r B_a1 (B_x1 (eps_a + sqrt(2 gamma)) + B_eps) + OPT`` (B.52) when every
    ``Lambda_j`` is non-empty; the signed nice sets make ``(beta_j/|b_i|) w_i^(1)`` a ``sqrt(2 gamma)``-close,
    ``eps_a``-scaled copy of ``w*_j``. Sets are not made disjoint (the proof does not need it).

    References
    ----------
    .. [src] [Shi24, Lemma B.6 and its proof, (B.25)-(B.52)].
    """
    owner = "gradient_features.good_second_layer"
    a0, W1, b = _params(owner, a0, W1, b)
    a_s, W_s, b_s = (np.asarray(v, float) for v in gstar)
    W_s, gamma, norm = _cone_args(owner, W_s, W1.shape[1], gamma, norm, name="gstar")
    if a_s.shape != (W_s.shape[0],) or b_s.shape != (W_s.shape[0],):
        raise InvalidParameterError(f"The 'gstar' parameter of {owner} must be (a* (r,), W* (r, d), b* (r,)). "
                                    f"Got shapes {a_s.shape}, {W_s.shape}, {b_s.shape}.")
    B_eps, eps_a = check(owner, "B_eps", B_eps, _POS), check(owner, "eps_a", eps_a, _POS)
    if signs is None:
        signs = np.where(b_s >= 0, 1, -1)
    signs = check(owner, "signs", signs, FiniteArray(1, (W_s.shape[0],)))
    if not np.all(np.abs(signs) == 1) or np.any(signs * b_s < 0):
        raise InvalidParameterError(f"The 'signs' parameter of {owner} must be +-1 with sign(b*_j) where b*_j != 0. "
                                    f"Got {signs!r} instead.")
    B_G, eta1 = check(owner, "B_G", B_G, Interval(0.0, np.inf, "left")), check(owner, "eta1", eta1, _POS)
    loss = check(owner, "loss", loss, Options(_LOSSES))
    half = W1.shape[0] // 2
    rows = _rows(W1[:half])
    a_tilde, sets, betas = np.zeros(W1.shape[0]), [], []
    for aj, wj, bj, sj in zip(a_s, W_s, b_s, signs.astype(int)):
        beta = abs(bj) if abs(bj) >= B_eps else B_eps
        nice, ns = _nice(rows, a0[:half], b[:half], wj[None], sj, gamma, B_G, eta1, loss, norm)
        (ma, ea), (mt, et), (mb, eb) = math.frexp(aj), math.frexp(beta), np.frexp(np.abs(b[nice]))
        with np.errstate(over="ignore", under="ignore"):     # mantissas and exponents apart: no overflow midway
            ok = np.abs(np.ldexp(ns * mt / mb, rows[2][nice] + et - eb) - 1.0) <= eps_a     # ||w_i|| beta / |b_i|
            a_tilde[nice[ok]] += np.ldexp(ma * mt / mb[ok] / max(ok.sum(), 1), ea + et - eb[ok])
        sets.append(nice[ok])
        betas.append(beta)
    _several_sets(a_tilde, a_s, betas, b, sets)
    return a_tilde, sets


def _several_sets(a_tilde, a_s, betas, b, sets):
    """Set ``a~_i`` of the neurons in several sets to the exact rational sum of their terms, rounded once: the float
    sum keeps each term's rounding, the whole error where the terms cancel."""
    for i in np.flatnonzero(np.bincount(np.concatenate([np.zeros(0, int), *sets]), minlength=len(a_tilde)) > 1):
        terms = (Fraction(aj) * Fraction(bt) / len(lam) for aj, bt, lam in zip(a_s, betas, sets) if i in lam)
        a_tilde[i] = float(sum(terms) / abs(Fraction(b[i])))


def _parity_types(k, margin):
    r"""Lemma B.54's target on the good neurons: ``(beta, coefficient)`` per bias, the same for both signs.

    With ``q = |S|/(2k)`` (``S`` the sum of the parity bits) and ``F(q_j) = margin (-1)^{k/2-j}`` at ``q_j = j/k``:
    the constant ``relu(t + (k-1)/k) + relu(-t + (k-1)/k) = 2(k-1)/k``, the slope ``relu(t) + relu(-t) = q`` and the
    knots ``relu(+-t - j/k)``, ``1 <= j < k/2``, interpolate ``F`` exactly.
    """
    c, h = margin, k // 2
    out = [(-(k - 1) / k, c * (-1) ** h * k / (2.0 * (k - 1))), (0.0, -2.0 * c * k * (-1) ** h)]
    return out + [(j / k, -4.0 * c * k * (-1) ** (h - j)) for j in range(1, h)]


def uniform_parity_second_layer(W1, b, A, margin=2.0):
    r"""Lemma B.54's constructive second layer for uniform parity on the first-step features of (B.479).

    After the exact hinge step with ``eta^(1) = 1/(k|xi_{k-1}|)`` a neuron whose ``w^(0)`` is constant on ``A``
    (probability ``2^{-(k-1)}``) has ``w^(1)_A = sigma 1_A/(2k)`` (docs/gradient_features.md, with the factor 1/2), so
    ``<w^(1), x> = t + nu`` with ``t = sigma S/(2k)``, ``S = sum_{l in A} x_l`` and an off-A term ``nu`` of order
    ``sqrt(d) (k-1)/(2k(d-k))``. On ``q = |t| in {0, 1/k, ..., 1/2}`` the parity is
    ``chi_A(x) = (-1)^{k/2 - kq}``, and with ``c`` the margin

    .. math:: c\,\chi_A = \underbrace{\frac{c(-1)^{k/2}k}{2(k-1)}}_{\beta=-(k-1)/k}\sum_\pm\sigma(\pm t-\beta)
              \;\underbrace{-\,2ck(-1)^{k/2}}_{\beta=0}\sum_\pm\sigma(\pm t)
              \;+\sum_{j=1}^{k/2-1}\underbrace{-\,4ck(-1)^{k/2-j}}_{\beta=j/k}\sum_\pm\sigma(\pm t-\beta),

    each coefficient split evenly over the good neurons ``Lambda_(sigma, beta)`` of that sign and bias:
    ``a~_i = coef_beta/|Lambda_(sigma, beta)|``. Hence ``||a~||_inf <= 4ck`` (``2ck`` for k = 2),
    ``||a~||_2^2 <= c^2 k^2 (16k - 24 + 1/(2(k-1)^2))``, i.e. ``<= 8k`` and ``<= 8k sqrt(k)`` at ``c = 2``, and for
    every ``x``: ``y g(x) >= c - sum_i |a~_i| |nu_i(x)|`` (relu is 1-Lipschitz), so the hinge loss is 0 where the
    off-A noise is below ``(c - 1)/||a~||_1``.

    Parameters
    ----------
    W1 : array_like of shape (M, d)
        First-step weights.
    b : array_like of shape (M,)
        Biases (B.479's grid ``j/k``, ``|j| < k``, in mirror pairs).
    A : array_like of int of shape (k,)
        The parity's coordinates; ``k`` even.
    margin : float
        ``c > 0``: the noise-free network is ``c chi_A`` (2 in the lemma's norms).

    Returns
    -------
    a_tilde : ndarray of shape (M,)
    sets : list of ndarray
        ``Lambda_(sigma, beta)`` for ``sigma = +1, -1`` and ``beta = -(k-1)/k, 0, 1/k, ..., (k/2-1)/k`` (in this
        order); an empty set drops its term (the construction then needs a wider network).

    Notes
    -----
    Accuracy: a_tilde relative error <= 4 eps of the coefficients (exact for k a power of 2); the good-neuron decisions
    are exact except within 4 eps of the 1/(4k) window (not tested separately).
    Regime: ``k`` even, hinge step at the lemma's ``eta^(1)`` (a neuron is good when its ``A``-coordinates are all
    within ``1/(4k)`` of ``sigma/(2k)``); the lemma's width ``m >= k 2^k log(k/delta)`` makes every set non-empty
    with probability ``>= 1 - delta`` and its ``d >= Omega(k^4 log(kd/eps))`` makes ``nu`` small. The seed states the
    lemma without proof (it rephrases Lemma 5 of Barak et al. 2022); this construction is derived here and uses
    the corrected gradient (factor 1/2, erratum 9), which halves the paper's ``w^(1)_A = +-1/k``.

    References
    ----------
    .. [src] [Shi24, Algorithm 6, (B.479), Lemma B.54]; the construction derived in docs/gradient_features.md.

    Examples
    --------
    >>> W1 = np.array([[0.25, 0.25, 0.0], [0.25, 0.25, 0.0]])          # k = 2: w_A = 1_A/(2k), t = S/4
    >>> a, sets = uniform_parity_second_layer(np.vstack([W1, -W1]), np.array([-0.5, 0.0, -0.5, 0.0]), [0, 1])
    >>> a.tolist()
    [-2.0, 8.0, -2.0, 8.0]
    """
    owner = "gradient_features.uniform_parity_second_layer"
    W1 = check(owner, "W1", W1, FiniteArray(2))
    b = check(owner, "b", b, FiniteArray(1, (W1.shape[0],)))
    A = np.asarray(A)
    k = A.size
    if not (A.ndim == 1 and np.issubdtype(A.dtype, np.integer) and k >= 2 and k % 2 == 0
            and len(set(A.tolist())) == k and np.all((A >= 0) & (A < W1.shape[1]))):
        raise InvalidParameterError(f"The 'A' parameter of {owner} must be an even number (>= 2) of distinct ints in "
                                    f"[0, {W1.shape[1]}). Got {A!r} instead.")
    margin = check(owner, "margin", margin, _POS)
    WA = W1[:, A] * (2 * k)
    sigma = np.sign(WA[:, 0])
    good = np.all(np.abs(WA - sigma[:, None]) < 0.5, axis=1)
    a_tilde, sets = np.zeros(W1.shape[0]), []
    for sg in (1.0, -1.0):
        for beta, coef in _parity_types(k, margin):
            lam = np.flatnonzero(good & (sigma == sg) & (np.abs(b - beta) <= 1e-9 / k))
            a_tilde[lam] = coef / max(len(lam), 1)
            sets.append(lam)
    return a_tilde, sets


def population_loss(model, a, W, b, loss="hinge", n=100_000, seed=0):
    r"""The risk of a network ``g_(a, W, b)`` under a data model, by Monte Carlo with its standard error.

    .. math:: \mathcal L_{\mathcal D}(g) = \mathbb E\,\ell(y\,g(\mathbf x)),\qquad
              g(\mathbf x) = \sum_i a_i\,\sigma(\langle\mathbf w_i,\mathbf x\rangle - b_i)

    Parameters
    ----------
    model : DataModel
        Its :meth:`~popdyn.models.gradient_features.DataModel.network_loss_mc` draws the samples.
    a : array_like of shape (M,)
        Second layer.
    W : array_like of shape (M, d)
        First layer.
    b : array_like of shape (M,)
        Biases.
    loss : {"hinge", "logistic", "error"}
        The loss, or the 0-1 error ``P[y g < 0] + P[g = 0]/2``.
    n : int
        Monte Carlo samples, >= 2 (drawn in chunks).
    seed : int
        Seed of :func:`popdyn.gaussian.mc_mean`.

    Returns
    -------
    value : float
    se : float
        Standard error of the mean.

    Notes
    -----
    Accuracy: statistical (``se``, calibrated |z| <= 6 against exact risks; measured 1.9).
    Regime: any model with a sampler; the error is ``se`` (CLT). Exact values of the ground-truth networks come
    from the data models themselves (quadrature or enumeration).

    References
    ----------
    .. [src] [Shi24, Section 3.3 (risk), (3.1)].
    """
    owner = "gradient_features.population_loss"
    a, W, b = _params(owner, a, W, b)
    loss = check(owner, "loss", loss, Options(_LOSSES + ("error",)))
    n, seed = as_int(owner, "n", n, 2), as_int(owner, "seed", seed, 0)
    return model.network_loss_mc(a, W, b, loss, n, seed)


def _logistic_free(F, y, B, maxiter):
    """Unconstrained base-2 logistic fit by L-BFGS; returns ``(a, value, gap)`` with the Frank-Wolfe gap
    ``<grad, a> + B ||grad||`` (a bound on ``value - OPT_B`` when ``||a|| <= B``)."""
    yF = F * y[:, None]

    def f(a):
        z = yF @ a
        return float(np.mean(_loss_value(z, "logistic"))), yF.T @ _loss_deriv(z, "logistic") / len(z)
    res = optimize.minimize(f, np.zeros(F.shape[1]), jac=True, method="L-BFGS-B",
                            options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": maxiter})
    value, g = f(res.x)
    return res.x, value, max(float(g @ res.x + B * np.linalg.norm(g)), 0.0)


def _ball_dual(F, y, B, loss, maxiter):
    """The concave dual of ``min_{||a|| <= B} mean l(y F a)``, maximised by L-BFGS-B on its box:

    ``D(u) = -mean phi(u) - B ||v||``, ``v = F^T (u y)/n``, ``u in [0, c]^n``, ``phi(u) = l*(-u)`` (hinge: ``-u``,
    ``c = 1``; base-2 logistic: ``c h(u/c)``, ``h(t) = t ln t + (1 - t) ln(1 - t)``, ``c = 1/ln 2``). The norm is
    smoothed to ``sqrt(||v||^2 + mu^2)`` with ``mu -> 0`` (the dual of the ball in (a, t), so that
    ``a = B v/sqrt(||v||^2 + mu^2)`` stays feasible and may be interior). Returns ``(a, primal, D(u))``."""
    n = F.shape[0]
    Fy = F * y[:, None] / n
    c = 1.0 if loss == "hinge" else 1.0 / _LN2
    lo, hi = (0.0, 1.0) if loss == "hinge" else (1e-12 * c, (1.0 - 1e-12) * c)   # logistic: keep logit finite

    def phi(u):
        if loss == "hinge":
            return -u, -np.ones_like(u)
        t = u / c
        return c * (special.xlogy(t, t) + special.xlogy(1.0 - t, 1.0 - t)), special.logit(t)
    u = np.full(n, 0.5 * c)
    for mu in _MU:
        def neg_dual(u, mu=mu):
            v = u @ Fy
            nv = math.sqrt(v @ v + mu * mu)
            p, dp = phi(u)
            return p.mean() + B * nv, dp / n + B * (Fy @ v) / nv
        u = optimize.minimize(neg_dual, u, jac=True, method="L-BFGS-B", bounds=[(lo, hi)] * n,
                              options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": maxiter,
                                       "maxfun": 2 * maxiter}).x
    v = u @ Fy
    a = B * v / math.sqrt(v @ v + _MU[-1] ** 2)
    return a, float(np.mean(_loss_value(y * (F @ a), loss))), -float(phi(u)[0].mean() + B * np.linalg.norm(v))


def _hinge_lp(F, y, box):
    """``min mean max(0, 1 - y F a)`` over ``|a_j| <= box`` (None: free) as a sparse LP (HiGHS); ``(a, value)``."""
    n, M = F.shape
    A = sparse.hstack([sparse.csr_matrix(-(y[:, None] * F)), -sparse.identity(n)], format="csr")
    res = optimize.linprog(np.concatenate([np.zeros(M), np.full(n, 1.0 / n)]), A_ub=A, b_ub=-np.ones(n),
                           bounds=[(None, None) if box is None else (-box, box)] * M + [(0, None)] * n,
                           method="highs")
    if res.status != 0:
        raise RuntimeError(f"gradient_features.opt_frozen: the hinge LP failed ({res.message}); rescale W or b.")
    a = res.x[:M]
    return a, float(np.mean(_loss_value(y * (F @ a), "hinge")))


def opt_frozen(X, y, W, b, B_a2=None, loss="hinge", maxiter=5000):
    r"""The frozen-feature optimum ``OPT_{W,b,B_a2}`` (3.3) on a sample, with a duality-gap certificate.

    .. math:: \mathrm{OPT}_{\mathbf W,\mathbf b,B_{a2}} = \min_{\|\mathbf a\|_2\le B_{a2}}\frac1n\sum_{s=1}^n
              \ell\big(y_s\,\mathbf a^\top\sigma(\mathbf W\mathbf x_s - \mathbf b)\big)
              = \max_{\mathbf u\in[0,c]^n}\ -\frac1n\sum_s\ell^*(-u_s) - B_{a2}\Big\|\frac1n\sum_s u_sy_s
              \sigma(\mathbf W\mathbf x_s-\mathbf b)\Big\|_2

    Parameters
    ----------
    X : array_like of shape (n, d)
        Sample (a large one estimates the population optimum).
    y : array_like of shape (n,)
        Labels +-1.
    W : array_like of shape (M, d)
        Frozen first layer.
    b : array_like of shape (M,)
        Biases.
    B_a2 : float or None
        Radius of the ball, > 0; None: unconstrained (hinge only: an LP solved by HiGHS).
    loss : {"hinge", "logistic"}
        Loss ("logistic" is base-2 and needs ``B_a2``: its infimum is not attained on separable features).
    maxiter : int
        L-BFGS-B iterations per stage of the ball problem, >= 1 (more iterations, a smaller ``gap``).

    Returns
    -------
    a : ndarray of shape (M,)
    value : float
        The sample loss at ``a``.
    gap : float
        An upper bound on ``value - OPT`` from weak duality (0 for the LP, which HiGHS solves to optimality).

    Notes
    -----
    Accuracy: hinge without a ball: value - OPT <= 1e-6 max(1, OPT) (HiGHS's tolerances) with gap 0; measured 2e-4 of
    the bound (tests/test_accuracy_gradient_features.py, brute force over the vertices of the hinge arrangement, M <=
    2). With a ball: value is the exact sample loss of a feasible a, and value - gap never exceeded OPT (the gap is the
    certificate).
    Regime: a convex program in ``a`` (Theorem 3.4's comparator). Hinge: a sparse LP (HiGHS, ``n + M``
    variables), exact when its optimum lies in the ball. Otherwise the ball problem goes through its box-constrained
    dual (``l*`` the convex conjugate: hinge ``-u`` on ``[0, 1]``, base-2 logistic ``c[t ln t + (1-t) ln(1-t)]``,
    ``t = u/c``, on ``[0, c]``, ``c = 1/ln 2``), maximised by L-BFGS-B with the norm smoothed to
    ``sqrt(||v||^2 + mu^2)``, ``mu = 1e-2, 1e-4, 1e-6``, and ``a = B v/sqrt(||v||^2 + mu^2)``; the best of the
    feasible candidates is returned (hinge also: the LP on the inscribed box ``|a_j| <= B/sqrt(M)`` and the LP
    optimum shrunk into the ball; logistic: the unconstrained L-BFGS fit when it lies in the ball, with its
    Frank-Wolfe gap). Check ``gap`` against the accuracy you need: it is an honest certificate, not a
    tolerance met; the dual is slowest when the ball is barely active.

    References
    ----------
    .. [src] [Shi24, (3.3), Theorem 3.4]; the dual derived in docs/gradient_features.md.

    Examples
    --------
    >>> a, v, gap = opt_frozen([[1.0], [-1.0]], [1.0, -1.0], [[1.0], [-1.0]], [0.0, 0.0])
    >>> round(v, 12), gap
    (0.0, 0.0)
    """
    owner = "gradient_features.opt_frozen"
    W = check(owner, "W", W, FiniteArray(2))
    b = check(owner, "b", b, FiniteArray(1, (W.shape[0],)))
    X = check(owner, "X", X, FiniteArray(2, (None, W.shape[1])))
    y = check(owner, "y", y, FiniteArray(1, (X.shape[0],)))
    if X.shape[0] == 0 or np.any(np.abs(y) != 1.0):
        raise InvalidParameterError(f"The 'y' parameter of {owner} must be a non-empty array of +-1 labels.")
    loss = check(owner, "loss", loss, Options(_LOSSES))
    B_a2 = check(owner, "B_a2", B_a2, Either((Options((None,)), _POS)))
    maxiter = as_int(owner, "maxiter", maxiter, 1)
    F = np.maximum(X @ W.T - b, 0.0)
    if loss == "hinge":
        a, value = _hinge_lp(F, y, None)
        if B_a2 is None or np.linalg.norm(a) <= B_a2:
            return a, value, 0.0
        shrunk = a * (B_a2 / np.linalg.norm(a))
        feasible = [_hinge_lp(F, y, B_a2 / math.sqrt(F.shape[1])),            # the inscribed box: an exact LP
                    (shrunk, float(np.mean(_loss_value(y * (F @ shrunk), loss))))]
    elif B_a2 is None:
        raise InvalidParameterError(f"The 'B_a2' parameter of {owner} must be a float in (0, inf) for "
                                    f"loss='logistic' (the unconstrained infimum is not attained). Got None.")
    else:
        a, value, gap = _logistic_free(F, y, B_a2, maxiter)
        if np.linalg.norm(a) <= B_a2:
            return a, value, gap
        feasible = []
    a, value, dual = _ball_dual(F, y, B_a2, loss, maxiter)
    a, value = min(feasible + [(a, value)], key=lambda cand: cand[1])
    return a, value, max(value - dual, 0.0)    # weak duality: value - dual >= 0 up to rounding
