"""Normalisation drift of the LoRA overlap: Monte Carlo of B0, B1 and E||L_t||^2 (specs/lora.md §2.6).

Public names
------------
:func:`B0`, :func:`B1`, :func:`gradient_second_moment`: randomised quasi-Monte Carlo over the
(k+2)-dimensional Gaussian of the pre-activations (16 scrambled Sobol replicates, the same points for
every overlap). The normalised SGD step adds the drift ``-(lr^2/2) m E||L_t||^2`` to the overlap (the
mean of the normalisation error Q_t that the paper's population recursion ignores, seed 003 L600-604);
the finite-delta ("corrected") ODE of :mod:`popdyn.models.lora.dynamics` interpolates B0 and B1 from a table on 41 overlaps,
cached per problem (``_table``).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri
from scipy.stats import qmc

from ..._validate import Integer, InvalidParameterError, check
from .problem import Problem, _cached, check_overlap

__all__ = ["B0", "B1", "gradient_second_moment"]

_CHUNK = 1 << 14  # quasi-Monte Carlo rows drawn at once (a power of 2, so Sobol stays balanced)
_N_SCRAMBLES = 16  # independent scrambles of the Sobol sequence; their spread gives the SE (15 dof)
_BLOCK = 1 << 21  # floats of an (M, chunk, k) pre-activation block held at once (16 MiB)
_N_TABLE = 1 << 13  # default RQMC size of the B0/B1 table of the corrected ODE: B0 rel. SE ~ 1 % (relu, k = 8)
_M_TABLE = np.linspace(-1.0, 1.0, 41)  # B0/B1 table grid; linear interpolation error <= 0.05^2/8 |B0''|


def _sample(problem, engine, n):
    """z ~ N(0, G) (rows <w_i, x>), a = <u, x>, b = <e', x> (e' the unit part of u_hat orthogonal to u)."""
    vals, vecs = np.linalg.eigh(problem.G)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))  # root @ root.T = G, also for singular G
    g = ndtri(np.clip(engine.random(n), 1e-300, 1 - 2**-53))  # scrambled Sobol points never hit 0 or 1
    return g[:, :problem.k] @ root.T, g[:, -2], g[:, -1]


def _replicate(problem, m, engine, per, weights):
    """Mean over one scrambled Sobol replicate of ``Q (w0 + w1 (e.x)^2)``, shape (len(weights), m.size)."""
    sig, lam, xi = problem.sigma, problem.lam, problem.xi
    coef = xi * problem.c_hat / problem.r_hat
    root = np.sqrt(np.clip(1 - m * m, 0.0, None))
    step = max(1, _BLOCK // (_CHUNK * problem.k))
    s1 = np.zeros((len(weights), m.size))
    for start in range(0, per, _CHUNK):
        z, a, b = _sample(problem, engine, min(_CHUNK, per - start))
        teacher = sig((z + xi * problem.c * a[:, None]) / problem.r) @ lam
        z /= problem.r_hat
        for i in range(0, m.size, step):
            mi, ri = m[i:i + step, None], root[i:i + step, None]
            pre = (mi * a + ri * b)[..., None] * coef  # <v_hat_j, x> = (z_j + xi c_hat_j <u_hat, x>)/r_hat_j
            pre += z
            q = (teacher - sig(pre) @ lam) ** 2 * (sig.deriv(pre) @ (lam * coef)) ** 2
            e2 = (ri * a - mi * b) ** 2  # e.x with e = (u - m u_hat)/sqrt(1 - m^2)
            s1[:, i:i + step] += (q * (weights[:, 0, None, None] + weights[:, 1, None, None] * e2)).sum(-1)
    return s1 / per


def _moments(problem, m, n, seed, weights):
    """Randomised quasi-Monte Carlo: mean and SE over _N_SCRAMBLES independently scrambled Sobol replicates.

    Each replicate has ``2^ceil(log2(n / _N_SCRAMBLES))`` points (a power of 2 keeps Sobol balanced);
    the SE is the spread of the replicate means, so it is honest for any integrand.
    """
    weights = np.asarray(weights, dtype=np.float64)
    per = 1 << max(0, math.ceil(math.log2(n / _N_SCRAMBLES)))
    seeds = np.random.SeedSequence(seed).spawn(_N_SCRAMBLES)
    engines = [qmc.Sobol(problem.k + 2, scramble=True, seed=np.random.default_rng(sq)) for sq in seeds]
    reps = np.array([_replicate(problem, m, engine, per, weights) for engine in engines])
    return reps.mean(axis=0), reps.std(axis=0, ddof=1) / np.sqrt(_N_SCRAMBLES)


def _mc(problem, m, n, seed, weights, owner):
    if not isinstance(problem, Problem):
        raise InvalidParameterError(f"The 'problem' parameter of {owner} must be a lora.Problem. Got {problem!r}.")
    m = check_overlap(m)
    n = check(owner, "n", n, Integer(2))
    seed = check(owner, "seed", seed, Integer(0))
    mean, se = _moments(problem, m.reshape(-1), n, seed, weights)
    return mean.reshape((-1,) + m.shape), se.reshape((-1,) + m.shape)


def B0(problem, m, *, n=1 << 16, seed=0):
    r"""Normalisation-drift coefficient B0(m): second moment of the per-direction SGD gradient.

    .. math:: B_0(m) = \mathbb E_x\Big[(f^*(x) - \hat f(x))^2\, g(x)^2\Big],\qquad
              g(x) = \sum_j \lambda_j\, \sigma'(\langle \hat v_j, x\rangle)\,\frac{\xi \hat c_j}{\hat r_j}

    Parameters
    ----------
    problem : Problem
    m : float or ndarray
        Overlaps ``<u, u_hat>`` in [-1, 1].
    n : int
        Sample size (>= 2), rounded up to 16 times a power of 2; the same points for every ``m``
        (common random numbers).
    seed : int
        Seed of the sample (>= 0); the same seed gives the same numbers.

    Returns
    -------
    mean, se : ndarray of shape m.shape
        Estimate and its standard error (spread of 16 independently scrambled Sobol replicates).

    Notes
    -----
    Regime: A1-A2 (the expectation is over the (k+2)-dim Gaussian ``(<w_i,x>, <u,x>, <e',x>)``:
    ``z ~ N(0, G)``, ``a, b ~ N(0, 1)``, ``<v_i,x> = (z_i + xi c_i a)/r_i``,
    ``<v_hat_j,x> = (z_j + xi c_hat_j (m a + sqrt(1-m^2) b))/r_hat_j``). Any sigma with finite
    fourth moments of ``sigma, sigma'``; polynomial activations have heavy tails (SE underestimated).

    References
    ----------
    .. [src] derived; specs/lora.md §2.6 (E||L_t||^2 = 4[(d-k-2) B0 + B1]), A.3.

    Examples
    --------
    >>> p = Problem(np.eye(2), [1.0, 1.0], [0.6, 0.8], [0.6, 0.8], 1.0)  # c_hat = c: f_hat = f* at m = 1
    >>> bool(B0(p, 1.0, n=100)[0] < 1e-25)  # zero up to rounding of the two pre-activation formulas
    True
    """
    mean, se = _mc(problem, m, n, seed, [[1.0, 0.0]], "lora.B0")
    return mean[0], se[0]


def B1(problem, m, *, n=1 << 16, seed=0):
    r"""Companion of :func:`B0` with the extra factor ``(e.x)^2`` along ``e = (u - m u_hat)/|u - m u_hat|``.

    .. math:: B_1(m) = \mathbb E_x\Big[(f^* - \hat f)^2\, g(x)^2\, \langle e, x\rangle^2\Big],\qquad
              \langle e, x\rangle = \sqrt{1-m^2}\,a - m\,b

    Parameters
    ----------
    problem : Problem
    m : float or ndarray
        Overlaps ``<u, u_hat>`` in [-1, 1].
    n : int
        Sample size (>= 2), the same sample as :func:`B0` for equal ``(n, seed)``.
    seed : int
        Seed (>= 0).

    Returns
    -------
    mean, se : ndarray of shape m.shape

    Notes
    -----
    Regime: as :func:`B0`. At ``m = +-1`` ``e`` is any unit vector orthogonal to u_hat and W, so
    ``B1(+-1) = B0(+-1)`` exactly (the limit of the formula, ``e.x = -m b``).

    References
    ----------
    .. [src] derived; specs/lora.md §2.6, A.3 (e.x = (a - m(m a + sqrt(1-m^2) b))/sqrt(1-m^2)).

    Examples
    --------
    >>> p = Problem.orthonormal(k=3, xi=1.0, seed=1)
    >>> bool(np.allclose(B1(p, 1.0, n=5000)[0], B0(p, 1.0, n=5000)[0], rtol=0.2))  # independent factor, E b^2 = 1
    True
    """
    mean, se = _mc(problem, m, n, seed, [[0.0, 1.0]], "lora.B1")
    return mean[0], se[0]


def gradient_second_moment(problem, m, *, d, n=1 << 16, seed=0):
    r"""Second moment of the projected SGD gradient, E||L_t||^2, at overlap m in dimension d.

    .. math:: \mathbb E\lVert L_t\rVert^2 = 4\big[(d-k-2)\,B_0(m) + B_1(m)\big],\quad
              L_t = (I - \hat u\hat u^\top)\,\Pi^\perp_W\,\nabla_{\hat u} (f^* - \hat f)^2

    Parameters
    ----------
    problem : Problem
    m : float or ndarray
        Overlaps in [-1, 1].
    d : int
        Input dimension, >= k + 2.
    n : int
        Sample size (>= 2), as in :func:`B0`.
    seed : int
        Seed (>= 0).

    Returns
    -------
    mean, se : ndarray of shape m.shape

    Notes
    -----
    Regime: exact in d under A1-A2 (the d-k-2 directions orthogonal to W, u, u_hat contribute
    independent unit-variance factors); W of rank k.

    References
    ----------
    .. [src] derived; specs/lora.md §2.6; gradient seed 003 L180, L837.

    Examples
    --------
    >>> p = Problem.orthonormal(k=2, xi=1.0, seed=0)
    >>> float(gradient_second_moment(p, 1.0, d=10, n=10)[0]) >= 0.0
    True
    """
    d = check("lora.gradient_second_moment", "d", d, Integer(problem.k + 2))
    mean, se = _mc(problem, m, n, seed, [[4.0 * (d - problem.k - 2), 4.0]], "lora.gradient_second_moment")
    return mean[0], se[0]


def _table(problem, n, seed):
    """B0 and B1 on the fixed grid ``_M_TABLE``, cached per problem (same sample for both)."""
    return _cached(problem, ("B", n, seed),
                   lambda: tuple(_moments(problem, _M_TABLE, n, seed, [[1.0, 0.0], [0.0, 1.0]])[0]))
