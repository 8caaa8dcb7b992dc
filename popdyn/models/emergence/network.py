r"""The two-layer network of [Shi22] in pattern coordinates: parameters, symmetric init, output, g* (Lemma 5).

A neuron is ``(q_i, b_i, a_i)`` with ``q_i = M^T w_i`` its pattern coordinates (D,); the class-relevant
block A is the first ``k`` coordinates. Widths are ``2m`` (the symmetric init pairs neuron ``i`` with
``m + i``). Since ``M`` has orthonormal columns, ``<w, x> = <q, phi>`` and every population quantity
depends on ``w`` only through ``q``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._validate import FiniteArray, Interval, InvalidParameterError, Options, as_int, check
from .activation import smooth_trunc_relu

__all__ = ["TwoLayerParams", "symmetric_init", "network_output", "feature_cosine", "ground_truth_network"]


@dataclass(frozen=True)
class TwoLayerParams:
    r"""Parameters of ``g(x) = sum_i a_i sigma~_s(<q_i, phi> + b_i)`` in pattern coordinates.

    Parameters
    ----------
    Q : array_like of shape (n, D)
        First layer, one row per neuron, in pattern coordinates ``q_i = M^T w_i`` (A block first).
    b : array_like of shape (n,)
        Biases.
    a : array_like of shape (n,)
        Second layer.
    """
    Q: np.ndarray
    b: np.ndarray
    a: np.ndarray

    def __post_init__(self):
        owner = "emergence.TwoLayerParams"
        Q = check(owner, "Q", self.Q, FiniteArray(2))
        b = check(owner, "b", self.b, FiniteArray(1, (Q.shape[0],)))
        a = check(owner, "a", self.a, FiniteArray(1, (Q.shape[0],)))
        for name, v in (("Q", Q), ("b", b), ("a", a)):
            object.__setattr__(self, name, v)

    @property
    def n(self):
        """Number of neurons (``2m`` for a symmetric network)."""
        return self.Q.shape[0]

    def __repr__(self):
        return f"TwoLayerParams(n={self.n}, D={self.Q.shape[1]})"


def _gamma(mom):
    """The common gamma of (A1): the mean over A of the per-coordinate gammas (equal under (A1))."""
    return float(np.mean(mom.gamma))


def symmetric_init(model, m, seed=0, sigma_w=None, sigma_b=None, sigma_a=None):
    r"""The paper's unbiased initialisation in pattern coordinates, so that ``g^{(0)} = 0``.

    .. math:: q_i\sim\mathcal N(0,\sigma_w^2 I_D),\ b_i\sim\mathcal N(0,\sigma_b^2),\ a_i\sim\mathcal N(0,\sigma_a^2),
              \quad (q_{m+i}, b_{m+i}, a_{m+i}) = (q_i, b_i, -a_i),

    with ``sigma_w = 1/k``, ``sigma_b = 1/k^2``, ``sigma_a = sigma~^2/(gamma k^2)`` by default.

    Parameters
    ----------
    model : PatternModel
        The data model (gives ``k``, ``D``, ``sigma~`` and ``gamma``).
    m : int
        Half width, ``m >= 1``; the network has ``2m`` neurons.
    seed : int
        Seed of ``numpy.random.default_rng([seed, 0])``.
    sigma_w, sigma_b, sigma_a : float or None
        Init scales, > 0; None gives the paper's values.

    Returns
    -------
    TwoLayerParams

    Notes
    -----
    Regime: any model with ``gamma > 0`` when ``sigma_a`` is None. ``q = M^T w`` of ``w ~ N(0, sigma_w^2 I_d)``
    is ``N(0, sigma_w^2 I_D)`` for orthonormal M; the part of ``w`` outside span(M) is invisible to the data and
    is removed by the step-1 kill, so it is not represented.

    References
    ----------
    .. [src] [Shi22, Section 3.1] (training process, initialisation).

    Examples
    --------
    >>> from popdyn.models.emergence.data import parity_mixture
    >>> p = symmetric_init(parity_mixture(12, 3, 0.5), 4)
    >>> bool(np.all(p.a[:4] == -p.a[4:]))
    True
    """
    owner = "emergence.symmetric_init"
    m = as_int(owner, "m", m, 1)
    seed = as_int(owner, "seed", seed, 0)
    mom = model.moments()
    pos = Interval(0.0, np.inf, "neither")
    sw = 1.0 / model.k if sigma_w is None else check(owner, "sigma_w", sigma_w, pos)
    sb = 1.0 / model.k ** 2 if sigma_b is None else check(owner, "sigma_b", sigma_b, pos)
    if sigma_a is None:
        g = _gamma(mom)
        if not g > 0:
            raise InvalidParameterError(f"The 'sigma_a' parameter of {owner} must be given (a float in (0, inf)) when "
                                        f"the model's gamma <= 0 (assumption (A1) fails). Got gamma = {g!r}.")
        sa = mom.sigt ** 2 / (g * model.k ** 2)
    else:
        sa = check(owner, "sigma_a", sigma_a, pos)
    rng = np.random.default_rng([seed, 0])
    q = rng.standard_normal((m, model.D)) * sw
    b = rng.standard_normal(m) * sb
    a = rng.standard_normal(m) * sa
    return TwoLayerParams(np.vstack([q, q]), np.concatenate([b, b]), np.concatenate([a, -a]))


def network_output(params, phi, s=0.0):
    r"""The network on normalised pattern vectors, with the noise expectation inside (eq. (3)).

    .. math:: g(x) = \sum_i a_i\,\tilde\sigma_s(\langle q_i,\phi\rangle + b_i)

    Parameters
    ----------
    params : TwoLayerParams
    phi : array_like of shape (N, D)
        Normalised pattern coordinates ``phi = (phi~ - E phi~)/sigma~``.
    s : float
        Smoothing ``sigma_xi >= 0`` (0: the truncated ReLU).

    Returns
    -------
    ndarray of shape (N,)

    Notes
    -----
    Regime: any parameters; exact.

    References
    ----------
    .. [src] [Shi22, Section 3.1, eq. (3)].
    """
    phi = check("emergence.network_output", "phi", phi, FiniteArray(2, (None, params.Q.shape[1])))
    return smooth_trunc_relu(phi @ params.Q.T + params.b, s) @ params.a


def feature_cosine(model, Q):
    r"""Per-neuron cosine with the class-relevant direction ``sum_{j in A} M_j`` (the paper's metric, signed).

    .. math:: \cos_i = \frac{\sum_{j\in A} q_{ij}}{\sqrt k\,\|q_i\|}

    Parameters
    ----------
    model : PatternModel
    Q : array_like of shape (n, D)
        Pattern coordinates of the first layer.

    Returns
    -------
    ndarray of shape (n,)
        Signed cosines; the paper reports ``max_i |cos_i|`` (neurons align with the sign of ``a_i^(0)``).

    Notes
    -----
    Regime: rows with ``q_i = 0`` give 0. In R^d the part of ``w`` outside span(M) lowers the cosine; in pattern
    coordinates it is absent (it is removed by the step-1 kill).

    References
    ----------
    .. [src] [Shi22, App. E.1] (the similarity measure).
    """
    Q = check("emergence.feature_cosine", "Q", Q, FiniteArray(2, (None, model.D)))
    norm = np.linalg.norm(Q, axis=1)
    num = Q[:, :model.k].sum(axis=1) / np.sqrt(model.k)
    return np.clip(np.divide(num, norm, out=np.zeros_like(num), where=norm > 0), -1.0, 1.0)


_SCALES = {"main": (2.0, 4.0, 4), "general": (4.0, 8.0, 8)}   # triangle slopes of g1, g2 and the rescale factor / k


def ground_truth_network(model, scale="main"):
    r"""The ground-truth network ``g*`` of Lemma 5 (``scale="main"``) or Lemma 35 (``"general"``).

    With ``<w, x> = c - mu_A`` for ``w = sigma~ sum_A M_j`` and the triangles
    ``delta_{s,a,b}(z) = a relu(z-s+b) - 2a relu(z-s) + a relu(z-s-b)``:

    .. math:: g_1 = \sum_{p\in P}\delta_{p-\mu_A,\,a_1,\,1/2}(\langle w,x\rangle)
              - \sum_{p\notin P}\delta_{p-\mu_A,\,a_1,\,1/2},
              \quad g_2:\ \text{the same with}\ \delta_{p-\mu_A+1/4,\,a_2,\,1/2},

    ``(a_1, a_2) = (2, 4)`` (main: ``g* = y``) or ``(4, 8)`` (general: ``g* = 2y``); the candidate whose 3(k+1)
    ReLU biases all have ``|b| >= 1/8`` is rescaled by ``K = 4k`` (main) or ``8k``:
    ``a* = K a``, ``w* = w/K``, ``b* = b/K``.

    Parameters
    ----------
    model : PatternModel
        A P-labeling (the label a function of the count).
    scale : {"main", "general"}

    Returns
    -------
    TwoLayerParams
        ``3(k+1)`` neurons with ``q*_i = (sigma~/K) 1_A`` and the truncated ReLU (s = 0).

    Notes
    -----
    Accuracy: b* relative error <= 1.5 eps (``-(p + off + d - mu_A)/K`` with the quarters exact and mu_A in
    double-double, ``Moments.mu_A_lo``: three roundings), q* <= 2 eps (that of sigma~ and one rounding), a* exact;
    measured b* 0.65 of the bound (tests/test_accuracy_emergence.py, exact rationals). Before: mu_A's own rounding
    cancelled in ``p - mu_A`` (b* 1119 eps off at k = 12).
    Regime: any P-labeling; exact on the support (main: ``|a*| <= 32k``, ``1/(32k) <= |b*| <= 1/2``,
    ``|<w*, x> + b*| <= 1``).

    References
    ----------
    .. [src] [Shi22, Lemma 5 = Lemma 8 and its proof (App. B.1), Lemma 35 (App. F.4)].

    Examples
    --------
    >>> from popdyn.models.emergence.data import parity_mixture
    >>> ground_truth_network(parity_mixture(10, 3, 0.5)).n
    12
    """
    scale = check("emergence.ground_truth_network", "scale", scale, Options(tuple(_SCALES)))
    a1, a2, K = _SCALES[scale]
    K = K * model.k
    mom = model.moments()
    _, y_c = model.count_law()
    cands = []
    for slope, off in ((a1, 0.0), (a2, 0.25)):
        ends = np.arange(model.k + 1)[:, None] + off + np.array([-0.5, 0.0, 0.5])[None, :]   # exact quarters
        bias = -mom.centred(ends)   # -(p - mu_A + off + d): relu(z-s+1/2), relu(z-s), relu(z-s-1/2)
        coef = y_c[:, None] * slope * np.array([1.0, -2.0, 1.0])[None, :]
        cands.append((bias.ravel(), coef.ravel()))
    bias, coef = max(cands, key=lambda bc: np.min(np.abs(bc[0])))         # the candidate with all |b| >= 1/8
    Q = np.zeros((bias.size, model.D))
    Q[:, :model.k] = mom.sigt / K
    return TwoLayerParams(Q, bias / K, coef * K)
