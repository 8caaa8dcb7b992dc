"""Dynamics of the LoRA overlap m = <u, u_hat> ([Dayi25, Sections 3, App. C.1]; docs/lora.md).

Public names
------------
population dynamics
    :func:`overlap_ode` (conventions "corrected" and "paper"), :func:`overlap_recursion`,
    :func:`time_to_overlap`, :func:`plateau_overlap`, :func:`limit_sign`

The normalisation drift (B0, B1) is in :mod:`popdyn.models.lora.normalisation`; the theory behind
:func:`popdyn.predict` is assembled in :mod:`popdyn.models.lora.predict`.

Time is counted in SGD steps ``t``; the paper's ODE time is ``lr * t`` and that of docs/lora.md is ``tau = t / d``
with ``lr = delta / d``. Per problem (frozen, so weakly cached): the B0/B1 table, a cubic spline in
``theta = arccos m`` of h, h on each half (m >= 0, m <= 0) of the nodes of ``method="grid"`` and the
regime checks. A cold ``predict`` (a new problem: ReLU, k = 8) builds them in ~1.0 ms of CPU, 0.4 ms of it
the B0/B1 table; a warm one reuses them (~0.25 ms; validation/bench.py).
"""
from __future__ import annotations

import functools

import numba
import numpy as np
from scipy.integrate import quad
from scipy.interpolate import CubicSpline
from scipy.optimize import brentq

from ... import dynamics
from ..._validate import Integer, Interval, InvalidParameterError, Options, check
from .normalisation import _M_TABLE, _table
from .problem import _N_GRID, _N_TABLE, Problem, _cached, check_overlap
from .theory import h, h0, h_bound, population_loss

__all__ = ["overlap_ode", "overlap_recursion", "time_to_overlap", "plateau_overlap", "limit_sign"]

_N_EXACT = 257  # exact h at theta = pi j/256, cubic spline in theta: rel. error <= 2.4e-9 (xi <= 3, O(N^-4)),
# which moves m by <= 5e-12 (measured: relu, tanh, erf, he3 at xi = 0.1, 1, 3), far below the grid's ~1e-7
_SIGN_TOL = 1e-11  # |h| below this times h_bound is 0 within h's accuracy (<= 1e-12 h_bound + 16 eps S)
_ODE_METHODS = ("grid", "DOP853", "RK45", "RK23", "LSODA", "Radau", "BDF")


def _drift_values(problem, m, hm, lr, d, convention, n_mc, seed):
    """dm/dt per step at m, given hm = h(m): ``lr h (1-m^2)`` (paper) minus ``2 lr^2 m [(d-k-2) B0 + B1]``."""
    if convention == "paper":
        return lr * hm * ((1 - m) * (1 + m))
    b0, b1 = _table(problem, n_mc, seed)
    c0, c1 = 2 * lr**2 * (d - problem.k - 2), 2 * lr**2
    return lr * hm * ((1 - m) * (1 + m)) - m * np.interp(m, _M_TABLE, c0 * b0 + c1 * b1)  # linear: one interpolation


def _drift(problem, lr, d, convention, n_mc, seed):
    """The drift as a vector field ``f(t, m)`` for :func:`popdyn.dynamics.solve_ode`."""
    return lambda t, m: _drift_values(problem, m, h(problem, m), lr, d, convention, n_mc, seed)


@functools.lru_cache(maxsize=1)
def _spline_knots():
    """Knots ``theta_j = pi j/(_N_EXACT - 1)`` and the matrix taking the values there to the slopes of their
    not-a-knot cubic spline (linear in the values; problem independent, computed once)."""
    theta = np.linspace(0.0, np.pi, _N_EXACT)
    return theta, CubicSpline(theta, np.eye(_N_EXACT)).derivative()(theta)


def _hermite_basis(theta):
    """Cell index and the four cubic Hermite weights (value left, value right, slope left, slope right) of
    the knots of :func:`_spline_knots` at the angles theta (problem independent)."""
    knots, _ = _spline_knots()
    step = knots[1]
    i = np.minimum((np.asarray(theta) / step).astype(np.int64), _N_EXACT - 2)
    u = (theta - knots[i]) / step
    v = 1.0 - u
    return i, (v * v * (1.0 + 2.0 * u), u * u * (1.0 + 2.0 * v), step * u * v * v, -step * u * u * v)


def _h_spline(problem):
    """Cubic spline in ``theta = arccos m`` of h through _N_EXACT exact values, as a function of theta.

    ``1 - m = 2 sin^2(theta/2)``, so ``h(1) - C sqrt(1 - m) + ...`` (ReLU, docs/lora.md) is smooth in theta:
    the spline error falls like N^-4 at both ends too (tests/test_lora_dynamics.py). The values and slopes
    at the knots are cached per problem; the spline is read in cubic Hermite form, whose weights at fixed
    angles (the grid nodes) are problem independent.
    """
    knots = _h_knots(problem)
    return lambda theta: _hermite_eval(_hermite_basis(theta), *knots)


def _h_knots(problem):
    def make():
        theta, slopes = _spline_knots()
        y = h(problem, np.cos(theta))
        return y, slopes @ y
    return _cached(problem, "h_spline", make)


def _hermite_eval(basis, y, dy):
    """The spline at the angles of ``basis`` (:func:`_hermite_basis`) from the knot values y and slopes dy,
    shaped as the angles (a float for a scalar angle)."""
    i, w = basis
    flat = (np.ascontiguousarray(x, dtype=np.float64).reshape(-1) for x in w)
    return _hermite_sum(np.ascontiguousarray(i).reshape(-1), *flat, y, dy).reshape(np.shape(i))[()]


@numba.njit(cache=True)
def _hermite_sum(i, w0, w1, w2, w3, y, dy):  # pragma: no cover - compiled
    """``w0 y[i] + w1 y[i+1] + w2 dy[i] + w3 dy[i+1]`` in one pass over the (flat) angles."""
    out = np.empty(i.size)
    for n in range(i.size):
        out[n] = w0[n] * y[i[n]] + w1[n] * y[i[n] + 1] + w2[n] * dy[i[n]] + w3[n] * dy[i[n] + 1]
    return out


@functools.lru_cache(maxsize=4)
def _grid(n_grid):
    """Nodes ``cos(pi j/(n_grid-1))`` (dense where h ~ sqrt(1-|m|)) plus the B0/B1 table points (kinks of
    the interpolated drift), rounded to 1e-15 to merge coincident ones, increasing; their ``arccos`` and
    the index of the node 0 (problem independent, computed once per n_grid)."""
    m = np.unique(np.r_[np.cos(np.linspace(np.pi, 0.0, n_grid)), _M_TABLE, 0.0].round(15))
    m.flags.writeable = False
    return m, np.arccos(m), int(np.searchsorted(m, 0.0))


@functools.lru_cache(maxsize=8)
def _half_grid(n_grid, side):
    """The nodes of :func:`_grid` with ``side m >= 0`` (both halves hold 0) and the Hermite weights of
    :func:`_h_spline` there (problem independent)."""
    m, theta, zero = _grid(n_grid)
    part = slice(zero, None) if side > 0 else slice(0, zero + 1)
    return m[part], _hermite_basis(theta[part])


def _half_nodes(problem, n_grid, side):
    """The nodes of :func:`_half_grid` and h there from the spline, cached per problem and half: a flow
    that never crosses 0 reads one half only."""
    def make():
        m, basis = _half_grid(n_grid, side)
        return m, _hermite_eval(basis, *_h_knots(problem))
    return _cached(problem, ("grid", n_grid, side), make)


def _grid_flow(problem, m0, t, lr, d, convention, n_mc, seed, n_grid):
    """The exact flow of the drift interpolated on the nodes, read on the half of m0 and on the other
    half too when the drift at m0 points towards it (a scalar flow is monotone, so nothing else is read)."""
    side = 1 if m0 >= 0 else -1
    m, hm = _half_nodes(problem, n_grid, side)
    f = _drift_values(problem, m, hm, lr, d, convention, n_mc, seed)
    if side * np.interp(m0, m, f) < 0:
        other, h_other = _half_nodes(problem, n_grid, -side)
        f_other = _drift_values(problem, other, h_other, lr, d, convention, n_mc, seed)
        lo, hi = ((other, f_other), (m, f)) if side > 0 else ((m, f), (other, f_other))
        m, f = np.concatenate((lo[0][:-1], hi[0])), np.concatenate((lo[1][:-1], hi[1]))  # node 0 ends lo, starts hi
    if not np.all(np.isfinite(f)):  # overflow of lr^2 d B0 for an absurd lr; the nodes are increasing by construction
        raise InvalidParameterError(f"The 'lr' parameter of lora.overlap_ode must keep the drift finite. Got {lr!r} "
                                    f"(d = {d!r}) instead.")
    return dynamics._scalar_flow(m, f, m0, dynamics._flow_times("lora.overlap_ode", t))


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
    r"""Overlap ODE of online SGD, in steps: the paper's population flow ([Dayi25, App. C.1]) or its finite-delta
    extension.

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
        "paper": ``dm/dt = lr h(m)(1-m^2)`` ([Dayi25, App. C.1], ODE time ``lr t``), the population recursion the paper
        derives "ignoring the error terms" E_t, Q_t (ibid.). "corrected" (an extension, the default): adds
        the mean of the normalisation error Q_t, the (Ito-type) drift above, with B0, B1 tabulated by
        quadrature (G = I, 13 points in arccos m, interpolated) or randomised quasi-Monte Carlo
        (general G), on 41 points in m and interpolated linearly.
    n_mc : int
        Monte Carlo size of the B0/B1 table (>= 2; general G only, unused by the quadrature of G = I).
    seed : int
        Seed of the table (>= 0; general G only).
    rtol, atol : float
        Tolerances of :func:`popdyn.dynamics.solve_ode` (not used by "grid").
    method : {"DOP853", "RK45", "RK23", "LSODA", "Radau", "BDF", "grid"}
        A :func:`popdyn.dynamics.solve_ode` method (LSODA for large ``delta``, where the ODE is stiff), or
        "grid": the drift on ``n_grid`` nodes in one vectorised call of h, flowed exactly as a
        piecewise-linear field by :func:`popdyn.dynamics.scalar_flow` (error O(n_grid^-2), any stiffness).
    n_grid : int
        Nodes ``m = cos(pi j/(n_grid - 1))`` of "grid" (>= 3), plus the 41 table points; h on them
        is read off a cubic spline in arccos m through 257 exact values and cached per problem and half
        (m >= 0, m <= 0): the flow is monotone, so it reads the half of m0, and the other half only when
        the drift at m0 points there. The default 8193 keeps the error below ~1e-7 in m.

    Returns
    -------
    popdyn.dynamics.Trajectory
        ``t`` and ``y`` = m(t), with ``status``/``message`` of the solver.

    Notes
    -----
    Regime: population limit of online SGD with ``lr = delta/d``: in ``tau = t/d`` the corrected
    ODE reads ``dm/dtau = delta h(1-m^2) - 2 delta^2 m B0`` + O(1/d); martingale fluctuations are
    O(delta sqrt(tau/d)). The paper's ODE is its delta -> 0 limit, without the plateau
    ``1 - m* ~ delta B0/|h|``; the paper claims no finite-delta trajectory (its Thm 16 takes
    delta = O(eps^3), where the plateau is O(eps^3); docs/errata.md).

    Accuracy ("paper"): DOP853 at the default rtol, atol: ``|dm| <= 4 (rtol |m| + atol)(1 + lr t h_bound)``; "grid"
    at the default n_grid: ``|dm| <= 1e-7``. Measured 0.12 and 0.11 (relu, erf, he2, he3, k <= 2, xi in [0.1, 3],
    lr = 1/h_bound, lr t up to 6: the time the exact flow takes to m(t), mpmath quad of 1/h in artanh m with h in
    mpmath). "corrected" adds the normalisation drift read off the 41-point B0/B1 table (linear interpolation):
    the plateau depth ``1 - |m*|`` it gives is within 3e-2 relative of the exact-B0 one (:func:`plateau_overlap`).

    References
    ----------
    .. [src] [Dayi25, App. C.1 (population recursion), App. E.1 (normalised step)]; the correction derived in
       docs/lora.md.

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
        return _grid_flow(problem, m0, t, lr, d, convention, n_mc, seed, check(owner, "n_grid", n_grid, Integer(3)))
    f = _drift(problem, lr, d, convention, n_mc, seed)
    return dynamics.solve_ode(f, m0, t, rtol=rtol, atol=atol, method=method, bounds=(-1.0, 1.0))


def overlap_recursion(problem, m0, steps, *, lr, record_every=1):
    r"""The paper's discrete population recursion of the overlap ([Dayi25, App. C.1]).

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
    |1 - eta h(m_t)(1 + m_t)|`` ([Dayi25, App. C.1]): geometric convergence at rate ``1 - eta s`` if ``h >= s > 0``.
    As ``lr -> 0`` with ``lr t`` fixed it tends to the paper's :func:`overlap_ode`, error O(lr).

    Accuracy: ``|m_t - m_t^ref| <= (t + 1) max_(s<t) A_s (4 eps + lr (1 - m_s^2) e_h(m_s))``, e_h the bound of
    :func:`h` and ``A_s = prod_(r>s) |1 + lr d/dm[h (1 - m^2)]|`` the amplification of an error made at step s
    (1 - m^2 formed as (1 - m)(1 + m)); steps in [1, 40] tested, lr up to 1/h_bound, m0 within 1e-12 of +-1;
    measured 0.64.

    References
    ----------
    .. [src] [Dayi25, App. C.1].

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
        new = m + lr * h(problem, m) * ((1 - m) * (1 + m))
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
    make this the limit (Thm 16); it is sufficient, not necessary (docs/lora.md).

    Accuracy: exact where ``|h(0)| > 1e-11 h_bound`` (h's accuracy is <= 1e-12 h_bound + 16 eps S); 0 below
    (h(0) = -5.6e-17 for an odd h gave -1 before).

    References
    ----------
    .. [src] [Dayi25, Theorems 11-12 (App. A.2.1), Condition 3, Theorem 16 (App. C.1)].

    Examples
    --------
    >>> p = Problem(np.eye(2), [1.0, 1.0], [0.6, 0.8], [-0.6, -0.8], 1.0)  # c_hat = -c: limit -u
    >>> limit_sign(p)
    -1
    """
    return _cached(problem, "sign",
                   lambda: 0 if abs(h0(problem)) <= _SIGN_TOL * h_bound(problem) else int(np.sign(h0(problem))))


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

    Accuracy: relative ``1e-9`` (quad at epsrel 1e-11 in y = artanh m, where the integrand 1/h(tanh y) is bounded
    and smooth), |m1| up to 1 - 2^-52; inf where h is within 1e-11 h_bound of 0 on the way (then h's sign is
    rounding). Measured 0.059 (mpmath quad of 1/(h (1 - m^2)), h in mpmath).

    References
    ----------
    .. [src] [Dayi25, App. C.1] (the population ODE, integrated: docs/lora.md).

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
    # h within its accuracy (_SIGN_TOL h_bound) of 0 on the way: a fixed point the flow cannot pass (the
    # integral diverges; quad divided by an h of 0 or of rounding size, e.g. h(0) = -5.6e-17 for an odd h)
    if np.any(h(problem, grid) * np.sign(m1 - m0) <= _SIGN_TOL * h_bound(problem)):
        return np.inf
    # in y = artanh m (dm/(1 - m^2) = dy) the integrand 1/h(tanh y) is smooth and bounded: in m it grows like
    # 1/(1 - |m|) at the end, and quad gave 2e-7 relative at |m1| = 1 - 1e-12 (with an IntegrationWarning)
    val, _ = quad(lambda y: 1 / h(problem, np.tanh(y)), np.arctanh(m0), np.arctanh(m1), epsabs=0, epsrel=1e-11,
                  limit=200)
    return float(val)


def plateau_overlap(problem, lr, d, *, method="root", n_mc=_N_TABLE, seed=0):
    r"""Stable fixed point m* of the finite-delta overlap drift near ``sign(h(0))``: SGD's plateau.

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
        Monte Carlo size of the B0/B1 table (>= 2; general G only, unused by the quadrature of G = I).
    seed : int
        Seed of the table (>= 0; general G only).

    Returns
    -------
    float
        m* (``s`` itself when B0(s) = B1(s) = 0, e.g. c_hat = s c).

    Notes
    -----
    Regime: the finite-delta ("corrected") ODE, an extension (docs/lora.md): the paper claims no plateau
    at finite delta, and at its Thm 16 step size it is O(eps^3). The first-order formula holds as
    delta -> 0 (relative error O(delta), O(sqrt(delta)) for ReLU whose h has a sqrt(1 - |m|) term at
    +-1). Raises when h(0) = 0.

    Accuracy: "root": ``|d(1 - |m*|)| <= 3e-2 (1 - |m*|)`` against the root of the drift with exact B0, B1 (the
    table's linear interpolation on 41 points dominates: measured up to 1.04e-2 relative, at delta = 0.01 where
    1 - |m*| = 5e-3); "first_order": the formula within ``3e-3 (1 - |m*|)`` of itself with exact B0(s), B1(s)
    (measured up to 1.1e-3) (relu, k <= 3, xi in [0.3, 3], delta in [0.01, 1], against the quadrature reference
    of B0, B1, over targeted searches).

    References
    ----------
    .. [src] derived in docs/lora.md (0.0085 predicted vs 0.0089 observed at delta = 0.1).

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
