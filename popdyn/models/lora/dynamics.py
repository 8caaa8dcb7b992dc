"""Dynamics of the LoRA overlap m = <u, u_hat> (seed 003 §3-4, specs/lora.md §2.6, §3.6).

Public names
------------
normalisation drift (randomised quasi-Monte Carlo over the (k+2)-dim Gaussian)
    :func:`B0`, :func:`B1`, :func:`gradient_second_moment`
population dynamics
    :func:`overlap_ode` (conventions "corrected" and "paper"), :func:`overlap_recursion`,
    :func:`time_to_overlap`, :func:`plateau_overlap`, :func:`limit_sign`
theory for :func:`popdyn.predict`
    ``predict(problem, *, d, lr, steps, ...)`` registered for :class:`~popdyn.models.lora.Problem`

Time is counted in SGD steps ``t``; the paper's ODE time is ``lr * t`` and the spec's is ``tau = t / d``
with ``lr = delta / d``. Per problem (frozen, so weakly cached): the B0/B1 table, cubic splines in
``theta = arccos m`` of h and Phi, h on the nodes of ``method="grid"`` and the regime checks; a warm
``predict`` then costs well under a millisecond (validation/bench.py).
"""
from __future__ import annotations

import math
import warnings
import weakref

import numpy as np
from scipy.integrate import quad
from scipy.interpolate import CubicSpline
from scipy.optimize import brentq
from scipy.special import ndtri
from scipy.stats import qmc

from ... import dynamics
from ..._validate import Integer, Interval, InvalidParameterError, Options, RegimeWarning, check
from ...api import predict
from ...results import Prediction
from .problem import Problem, check_overlap
from .theory import h, h0, population_loss

__all__ = ["B0", "B1", "gradient_second_moment", "overlap_ode", "overlap_recursion", "time_to_overlap",
           "plateau_overlap", "limit_sign"]

_CHUNK = 1 << 14  # quasi-Monte Carlo rows drawn at once (a power of 2, so Sobol stays balanced)
_N_SCRAMBLES = 16  # independent scrambles of the Sobol sequence; their spread gives the SE (15 dof)
_BLOCK = 1 << 21  # floats of an (M, chunk, k) pre-activation block held at once (16 MiB)
_N_TABLE = 1 << 13  # default RQMC size of the B0/B1 table of the corrected ODE: B0 rel. SE ~ 1 % (relu, k = 8)
_M_TABLE = np.linspace(-1.0, 1.0, 41)  # B0/B1 table grid; linear interpolation error <= 0.05^2/8 |B0''|
_N_GRID = 8193  # nodes cos(pi j/8192) of method "grid": error <= ~1e-7 in m, O(n_grid^-2) (tests)
_N_EXACT = 513  # exact h, Phi at theta = pi j/512, cubic splines in theta: rel. error <= 2e-10 (xi <= 3, O(N^-4))
_cache = weakref.WeakKeyDictionary()  # problem -> {key: value}: B0/B1 tables, grid nodes, regime pieces
_ODE_METHODS = ("grid", "DOP853", "RK45", "RK23", "LSODA", "Radau", "BDF")
_SRC = ["seed 003 L598-617 (overlap recursion, L604)", "seed 003 L1222-1230 (normalised SGD step)",
        "specs/lora.md §2.6 (corrected ODE, derived), §3.6 (validation)"]


# ---- Monte Carlo of the normalisation drift ---------------------------------------------------------

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


def _cached(problem, key, make):
    """``make()``, computed once per (problem, key) and dropped with the problem (which is frozen)."""
    per = _cache.setdefault(problem, {})
    if key not in per:
        per[key] = make()
    return per[key]


def _table(problem, n, seed):
    """B0 and B1 on the fixed grid ``_M_TABLE``, cached per problem (same sample for both)."""
    return _cached(problem, ("B", n, seed),
                   lambda: tuple(_moments(problem, _M_TABLE, n, seed, [[1.0, 0.0], [0.0, 1.0]])[0]))


# ---- population dynamics ----------------------------------------------------------------------------

def _drift_values(problem, m, hm, lr, d, convention, n_mc, seed):
    """dm/dt per step at m, given hm = h(m): ``lr h (1-m^2)`` (paper) minus ``2 lr^2 m [(d-k-2) B0 + B1]``."""
    if convention == "paper":
        return lr * hm * (1 - m * m)
    b0, b1 = _table(problem, n_mc, seed)
    c0, c1 = 2 * lr**2 * (d - problem.k - 2), 2 * lr**2
    norm = c0 * np.interp(m, _M_TABLE, b0) + c1 * np.interp(m, _M_TABLE, b1)
    return lr * hm * (1 - m * m) - m * norm


def _drift(problem, lr, d, convention, n_mc, seed):
    """The drift as a vector field ``f(t, m)`` for :func:`popdyn.dynamics.solve_ode`."""
    return lambda t, m: _drift_values(problem, m, h(problem, m), lr, d, convention, n_mc, seed)


def _splines(problem):
    """Cubic splines in ``theta = arccos m`` of h and Phi through _N_EXACT exact values, cached.

    ``1 - m = 2 sin^2(theta/2)``, so ``h(1) - C sqrt(1 - m) + ...`` (ReLU, spec §2.5) is smooth in theta:
    the spline error falls like N^-4 at both ends too (tests/test_lora_dynamics.py).
    """
    def make():
        theta = np.linspace(0.0, np.pi, _N_EXACT)
        m = np.cos(theta)
        return CubicSpline(theta, h(problem, m)), CubicSpline(theta, population_loss(problem, m))
    return _cached(problem, "splines", make)


def _nodes(problem, n_grid):
    """Nodes ``cos(pi j/(n_grid-1))`` (dense where h ~ sqrt(1-|m|)) plus the B0/B1 table points (kinks of
    the interpolated drift), rounded to 1e-15 to merge coincident ones; h there from the spline, cached."""
    def make():
        m = np.unique(np.r_[np.cos(np.linspace(np.pi, 0.0, n_grid)), _M_TABLE].round(15))
        return m, _splines(problem)[0](np.arccos(m))
    return _cached(problem, ("grid", n_grid), make)


def _check_dynamics(owner, problem, lr, d, convention, n_mc, seed):
    if not isinstance(problem, Problem):
        raise InvalidParameterError(f"The 'problem' parameter of {owner} must be a lora.Problem. Got {problem!r}.")
    lr = check(owner, "lr", lr, Interval(0, np.inf, closed="neither"))
    convention = check(owner, "convention", convention, Options(("corrected", "paper")))
    if convention == "corrected" or d is not None:
        if d is None:
            raise InvalidParameterError(f"The 'd' parameter of {owner} must be an int in [{problem.k + 3}, inf] "
                                        "for convention='corrected'. Got None instead.")
        d = check(owner, "d", d, Integer(problem.k + 3))
    check(owner, "n_mc", n_mc, Integer(2))
    check(owner, "seed", seed, Integer(0))
    return lr, d, convention


def overlap_ode(problem, m0, t, *, lr, d=None, convention="corrected", n_mc=_N_TABLE, seed=0,
                rtol=1e-10, atol=1e-12, method="DOP853", n_grid=_N_GRID):
    r"""Overlap ODE of online SGD, in steps: the paper's population flow or the corrected one.

    .. math:: \frac{dm}{dt} = \eta\, h(m)(1-m^2) - \frac{\eta^2}{2}\, m\,\mathbb E\lVert L_t\rVert^2,
              \qquad \mathbb E\lVert L_t\rVert^2 = 4\big[(d-k-2)B_0(m) + B_1(m)\big]

    Parameters
    ----------
    problem : Problem
    m0 : float
        Initial overlap in [-1, 1].
    t : ndarray of shape (n,)
        Increasing step numbers to record, ``t[0]`` the start.
    lr : float
        Step size eta, > 0.
    d : int or None
        Input dimension (>= k + 3); required by ``convention="corrected"``.
    convention : {"corrected", "paper"}
        "paper": ``dm/dt = lr h(m)(1-m^2)`` (L604, ODE time ``lr t``). "corrected": adds the
        normalisation (Ito-type) drift, with B0, B1 tabulated by randomised quasi-Monte Carlo on 41 points in m
        and interpolated linearly.
    n_mc : int
        Monte Carlo size of the B0/B1 table (>= 2).
    seed : int
        Seed of the table (>= 0).
    rtol, atol : float
        Tolerances of :func:`popdyn.dynamics.solve_ode` (not used by "grid").
    method : {"DOP853", "RK45", "RK23", "LSODA", "Radau", "BDF", "grid"}
        A :func:`popdyn.dynamics.solve_ode` method (LSODA for large ``delta``, where the ODE is stiff), or
        "grid": the drift on ``n_grid`` nodes in one vectorised call of h, flowed exactly as a
        piecewise-linear field by :func:`popdyn.dynamics.scalar_flow` (error O(n_grid^-2), any stiffness).
    n_grid : int
        Nodes ``m = cos(pi j/(n_grid - 1))`` of "grid" (>= 3), plus the 41 table points; h on them
        is cached per problem. The default 8193 keeps the error below ~1e-7 in m.

    Returns
    -------
    popdyn.dynamics.Trajectory
        ``t`` and ``y`` = m(t), with ``status``/``message`` of the solver.

    Notes
    -----
    Regime: population limit of online SGD with ``lr = delta/d``: in ``tau = t/d`` the corrected
    ODE reads ``dm/dtau = delta h(1-m^2) - 2 delta^2 m B0`` + O(1/d); martingale fluctuations are
    O(delta sqrt(tau/d)). The paper's ODE is its delta -> 0 limit and misses the plateau
    ``1 - m* ~ delta B0/|h|``.

    References
    ----------
    .. [src] seed 003 L604 (population recursion), L1228-1230 (normalised step); specs/lora.md §2.6, §3.6.

    Examples
    --------
    Lazy limit: a linear activation makes h constant, and the paper's ODE solves to a tanh.

    >>> p = Problem.orthonormal(k=4, xi=1.0, activation="linear", seed=3)
    >>> sol = overlap_ode(p, 0.1, [0.0, 100.0], lr=0.01, convention="paper")
    >>> bool(abs(sol.y[-1] - np.tanh(h0(p) * 0.01 * 100 + np.arctanh(0.1))) < 1e-8)
    True
    """
    owner = "lora.overlap_ode"
    lr, d, convention = _check_dynamics(owner, problem, lr, d, convention, n_mc, seed)
    m0 = float(check_overlap(check(owner, "m0", m0, Interval(-1, 1)), "m0"))
    method = check(owner, "method", method, Options(_ODE_METHODS))
    if method == "grid":
        m, hm = _nodes(problem, check(owner, "n_grid", n_grid, Integer(3)))
        return dynamics.scalar_flow(m, _drift_values(problem, m, hm, lr, d, convention, n_mc, seed), m0, t)
    f = _drift(problem, lr, d, convention, n_mc, seed)
    return dynamics.solve_ode(f, m0, t, rtol=rtol, atol=atol, method=method, bounds=(-1.0, 1.0))


def overlap_recursion(problem, m0, steps, *, lr, record_every=1):
    r"""The paper's discrete population recursion of the overlap (L604).

    .. math:: \bar m_{t+1} = \bar m_t + \eta\, h(\bar m_t)\,(1 - \bar m_t^2)

    Parameters
    ----------
    problem : Problem
    m0 : float
        Initial overlap in [-1, 1].
    steps : int
        Number of steps (>= 0).
    lr : float
        Step size eta, > 0.
    record_every : int
        Record every this many steps (>= 1); the last step is always recorded.

    Returns
    -------
    popdyn.dynamics.Trajectory
        ``status = -1`` with a message when a step leaves [-1, 1] (``lr h (1+m) > 1``).

    Notes
    -----
    Regime: population dynamics (E_t = Q_t = 0). Contraction ``|1 - m_{t+1}|/|1 - m_t| =
    |1 - eta h(m_t)(1 + m_t)|`` (L608): geometric convergence at rate ``1 - eta s`` if ``h >= s > 0``.
    As ``lr -> 0`` with ``lr t`` fixed it tends to the paper's :func:`overlap_ode`, error O(lr).

    References
    ----------
    .. [src] seed 003 L604-608; specs/lora.md §2.6.

    Examples
    --------
    >>> p = Problem.orthonormal(k=4, xi=1.0, activation="linear", seed=3)
    >>> traj = overlap_recursion(p, 0.0, 1, lr=0.1)
    >>> bool(np.isclose(traj.y[1], 0.1 * h0(p)))  # one step from m = 0 moves by lr h(0)
    True
    """
    owner = "lora.overlap_recursion"
    lr, _, _ = _check_dynamics(owner, problem, lr, None, "paper", 2, 0)
    m0 = float(check_overlap(check(owner, "m0", m0, Interval(-1, 1)), "m0"))

    def step(n, m):
        new = m + lr * h(problem, m) * (1 - m * m)
        return new if abs(new) <= 1 else np.nan
    return dynamics.iterate(step, m0, steps, record_every)


def limit_sign(problem):
    r"""Sign of the predicted limit ``sign(h(0)) u`` of the overlap dynamics (0 when h(0) = 0).

    .. math:: s = \operatorname{sign} h(0)

    Parameters
    ----------
    problem : Problem

    Returns
    -------
    int in {-1, 0, 1}

    Notes
    -----
    Regime: Condition 3 (h keeps the sign of h(0) on ``{m sign(h(0)) >= 0}``) and ``m0 h(0) > 0``
    make this the limit (Thm 16); it is sufficient, not necessary (spec §2.6).

    References
    ----------
    .. [src] seed 003 L459, L475, L640-653; specs/lora.md §1.4, §2.6.

    Examples
    --------
    >>> p = Problem(np.eye(2), [1.0, 1.0], [0.6, 0.8], [-0.6, -0.8], 1.0)  # c_hat = -c: limit -u
    >>> limit_sign(p)
    -1
    """
    return _cached(problem, "sign", lambda: int(np.sign(h0(problem))))


def time_to_overlap(problem, m0, m1):
    r"""Time of the paper's ODE (in units of ``lr t``) to go from overlap m0 to m1.

    .. math:: \tau(m_0 \to m_1) = \int_{m_0}^{m_1} \frac{dm}{h(m)\,(1 - m^2)}

    Parameters
    ----------
    problem : Problem
    m0, m1 : float
        Overlaps in [-1, 1].

    Returns
    -------
    float
        ``inf`` when the flow never reaches m1 (|m1| = 1, or h (m1 - m0) <= 0 somewhere on the way,
        checked on 257 points); 0 when m0 = m1.

    Notes
    -----
    Regime: paper's population ODE (delta -> 0). Near +-1 it grows like ``log(1/eps)/(2|h(+-1)|)``.

    References
    ----------
    .. [src] seed 003 L604; specs/lora.md §2.6 (time to reach overlap m1), §4 R2.

    Examples
    --------
    Constant h (linear activation): ``tau = (artanh m1 - artanh m0)/h0``.

    >>> p = Problem.orthonormal(k=4, xi=1.0, activation="linear", seed=3)
    >>> h0(p) < 0  # the flow goes to -u
    True
    >>> tau = time_to_overlap(p, 0.0, -0.5)
    >>> bool(np.isclose(tau, np.arctanh(-0.5) / h0(p), rtol=1e-10))
    True
    """
    m0, m1 = (float(check_overlap(check("lora.time_to_overlap", k, v, Interval(-1, 1)), k))
              for k, v in (("m0", m0), ("m1", m1)))
    if m0 == m1:
        return 0.0
    if abs(m1) == 1:
        return np.inf
    grid = np.linspace(m0, m1, 257)
    if np.any(h(problem, grid) * np.sign(m1 - m0) <= 0):
        return np.inf
    val, _ = quad(lambda m: 1 / (h(problem, m) * (1 - m * m)), m0, m1, epsabs=0, epsrel=1e-11, limit=200)
    return float(val)


def plateau_overlap(problem, lr, d, *, method="root", n_mc=_N_TABLE, seed=0):
    r"""Stable fixed point m* of the corrected overlap drift near ``sign(h(0))``: SGD's plateau.

    .. math:: \eta\, h(m^*)(1 - m^{*2}) = 2\eta^2 m^*\big[(d-k-2)B_0(m^*) + B_1(m^*)\big],\qquad
              1 - |m^*| \approx \frac{\eta[(d-k-2)B_0(s) + B_1(s)]}{|h(s)|} \to \frac{\delta B_0(s)}{|h(s)|}

    Parameters
    ----------
    problem : Problem
    lr : float
        Step size eta = delta/d, > 0.
    d : int
        Input dimension, >= k + 3.
    method : {"root", "first_order"}
        "root": the outermost sign change of the drift on ``s [0, 1]``, refined by brentq (xtol 1e-15).
        "first_order": the first-order formula above, ``s = sign(h(0))``.
    n_mc : int
        Monte Carlo size of the B0/B1 table (>= 2).
    seed : int
        Seed of the table (>= 0).

    Returns
    -------
    float
        m* (``s`` itself when B0(s) = B1(s) = 0, e.g. c_hat = s c).

    Notes
    -----
    Regime: corrected ODE (spec §2.6); the first-order formula holds as delta -> 0 (relative error
    O(delta), O(sqrt(delta)) for ReLU whose h has a sqrt(1 - |m|) term at +-1). Raises when h(0) = 0.

    References
    ----------
    .. [src] derived; specs/lora.md §2.6 (0.0085 predicted vs 0.0089 observed at delta = 0.1).

    Examples
    --------
    >>> p = Problem(np.eye(2), [1.0, 1.0], [0.6, 0.8], [0.6, 0.8], 1.0)  # c_hat = c: no plateau
    >>> round(plateau_overlap(p, 1e-3, 100, n_mc=100), 12)
    1.0
    """
    owner = "lora.plateau_overlap"
    lr, d, _ = _check_dynamics(owner, problem, lr, d, "corrected", n_mc, seed)
    method = check(owner, "method", method, Options(("root", "first_order")))
    s = limit_sign(problem)
    if s == 0:
        raise InvalidParameterError(f"{owner}: h(0) = 0, so the drift has no preferred sign and no plateau "
                                    "near +-1; perturb lam, c or c_hat.")
    f = _drift(problem, lr, d, "corrected", n_mc, seed)
    if method == "first_order":
        b0, b1 = (np.interp(s, _M_TABLE, b) for b in _table(problem, n_mc, seed))
        return float(s * (1 - lr * ((d - problem.k - 2) * b0 + b1) / abs(h(problem, float(s)))))
    grid = s * np.unique(np.r_[np.linspace(0, 1, 65), 1 - np.geomspace(1e-2, 1e-16, 57)])  # 0 .. s
    vals = s * f(0, grid)
    if vals[-1] >= 0:
        return float(s)
    j = np.flatnonzero(vals > 0)[-1]  # outermost point where the drift still points outwards
    return float(brentq(lambda m: f(0, m), grid[j], grid[j + 1], xtol=1e-15))


# ---- predict ----------------------------------------------------------------------------------------

def _regime(problem, lr, d, m0, convention):
    """Regime entries (condition, value, bound, holds, source) of the overlap theory for these options."""
    s = limit_sign(problem)
    quantised, off, sep, cond3 = _cached(problem, "regime", lambda: _problem_regime(problem))
    entries = [
        ("delta = lr*d <= 1 (Thm 16 takes delta <= 1; corrected ODE validated to 0.5)", lr * d, 1.0,
         lr * d <= 1, "seed 003 L650; specs/lora.md §3.6"),
        ("A3: c, c_hat in {+-1/sqrt(k)}^k", quantised, True, quantised, "seed 003 L82"),
        ("A4/A5: max_ij |G_ij - delta_ij| <= 1 - log k/sqrt k", float(off), float(sep), off <= sep,
         "seed 003 L98, L110"),
        ("sign(m0) = sign(h(0)) (limit is sign(h(0)) u)", float(m0 * s), 0.0, m0 * s > 0, "seed 003 L459, L475"),
        ("Condition 3: s h(s m) >= |h(0)|/2 on m in [0, 1]", cond3, True, cond3, "seed 003 L640-644"),
    ]
    if convention == "paper":
        entries.append(("paper ODE: delta = lr*d <= 0.01 (it drops the O(delta) drift -2 delta^2 m B0)",
                        lr * d, 0.01, lr * d <= 0.01, "specs/lora.md §2.6"))
    out = [dict(condition=c, value=v, bound=b, holds=bool(ok), source=src) for c, v, b, ok, src in entries]
    for e in out:
        if not e["holds"]:
            warnings.warn(f"lora.predict: regime condition not met: {e['condition']} "
                          f"(value {e['value']!r}, bound {e['bound']!r}; {e['source']})", RegimeWarning, stacklevel=3)
    return out


def _problem_regime(problem):
    """The problem's own regime values: A3, max |G - I| and its A4/A5 bound, Condition 3 (401 points)."""
    from .bounds import condition3  # bounds builds on this module (B0), so it is imported late
    k = problem.k
    off = float(np.abs(problem.G - np.eye(k)).max()) if k > 1 else 0.0
    sep = float(1 - np.log(k) / np.sqrt(k)) if k > 1 else 1.0
    return problem.quantised, off, sep, bool(condition3(problem)[0])


@predict.register(Problem)
def _predict(problem, *, d, lr, steps, m0=None, convention="corrected", n_points=200, n_mc=_N_TABLE,
             seed=0, method="grid", n_grid=_N_GRID, rtol=1e-8):
    r"""Theory of online SGD on the LoRA problem: overlap m(t) and population loss Phi(m(t)).

    .. math:: \frac{dm}{dt} = \eta h(m)(1-m^2) - 2\eta^2 m\big[(d-k-2)B_0(m) + B_1(m)\big],\qquad
              \mathrm{loss}(t) = \Phi(m(t))

    Parameters
    ----------
    problem : Problem
    d : int
        Input dimension, >= k + 3.
    lr : float
        Step size eta, > 0 (``delta = lr d``).
    steps : int
        Number of SGD steps, >= 1.
    m0 : float or None
        Initial overlap in [-1, 1]; default ``sign(h(0)) 0.5/sqrt(d)`` (spec §3.6; +1 if h(0) = 0).
    convention : {"corrected", "paper"}
        ODE of :func:`overlap_ode`.
    n_points : int
        Number of recorded step numbers on [0, steps] (>= 2; fewer when steps is small).
    n_mc : int
        Monte Carlo size of the cached B0/B1 table (>= 2).
    seed : int
        Seed of that table (>= 0).
    method : {"grid", "solve_ivp"}
        "grid": the drift on ``n_grid`` nodes clustered at +-1, flowed exactly as a piecewise-linear
        field (:func:`popdyn.dynamics.scalar_flow`; ~1e-7 in m, a fraction of a millisecond once h on
        the nodes is cached). "solve_ivp": scipy's LSODA on the exact drift (one scalar h per call).
    n_grid : int
        Nodes of "grid" (>= 3); see :func:`overlap_ode`.
    rtol : float
        Relative tolerance of "solve_ivp", in (0, 1); ``atol = 1e-3 rtol``. LSODA switches to a
        stiff method when ``delta = lr d`` is large (the drift ``-2 lr^2 d m B0`` relaxes in ~1/(lr delta) steps).

    Returns
    -------
    Prediction
        ``t`` step numbers (int), observables ``"m"`` and ``"loss"``; ``meta`` holds the problem
        repr, options, ``t_unit = "steps"``, ``delta``, sources and ``regime`` entries.

    Notes
    -----
    Regime: population limit of normalised online SGD (Eq. 4) with ``lr = delta/d``; see
    :func:`overlap_ode`. Failing regime conditions are recorded in ``meta["regime"]`` and warned
    (``RegimeWarning``).

    References
    ----------
    .. [src] seed 003 L604, L1228-1230, L623; specs/lora.md §2.6, §3.6.

    Examples
    --------
    >>> import popdyn
    >>> p = Problem.orthonormal(k=4, xi=1.0, activation="linear", seed=3)
    >>> pred = popdyn.predict(p, d=100, lr=1e-4, steps=1000, convention="paper", n_points=11)
    >>> sorted(pred.observables), pred.t[:3].tolist()
    (['loss', 'm'], [0, 100, 200])
    """
    owner = "lora.predict"
    lr, d, convention = _check_dynamics(owner, problem, lr, d, convention, n_mc, seed)
    steps = check(owner, "steps", steps, Integer(1))
    n_points = check(owner, "n_points", n_points, Integer(2))
    rtol = check(owner, "rtol", rtol, Interval(0, 1, closed="neither"))
    method = check(owner, "method", method, Options(("grid", "solve_ivp")))
    if m0 is None:
        m0 = (limit_sign(problem) or 1) * 0.5 / np.sqrt(d)
    m0 = check(owner, "m0", m0, Interval(-1, 1))
    t = np.unique(np.rint(np.linspace(0, steps, n_points)).astype(np.int64))
    sol = overlap_ode(problem, m0, t.astype(np.float64), lr=lr, d=d, convention=convention, n_mc=n_mc,
                      seed=seed, rtol=rtol, atol=1e-3 * rtol, method="LSODA" if method == "solve_ivp" else "grid",
                      n_grid=n_grid)
    t = t[:sol.t.size]
    options = dict(d=d, lr=lr, steps=steps, m0=m0, convention=convention, n_points=n_points, n_mc=n_mc,
                   seed=seed, method=method, n_grid=n_grid, rtol=rtol)
    meta = dict(problem=_cached(problem, "repr", lambda: repr(problem)), options=options, t_unit="steps", delta=lr * d, nfev=sol.nfev,
                source=_SRC, regime=_regime(problem, lr, d, m0, convention))
    if method == "grid":
        loss = np.maximum(_splines(problem)[1](np.arccos(sol.y)), 0.0)
    else:
        loss = population_loss(problem, sol.y)
    return Prediction(t=t, observables={"m": sol.y, "loss": loss},
                      status=sol.status, message=sol.message, meta=meta)
