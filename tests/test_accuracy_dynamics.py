"""Declared accuracy of popdyn.dynamics over Hypothesis searches that reach the corners (stiff and growing linear
systems, tolerances from 1e-12 to 1e-6, piecewise-linear fields with slopes and speeds over 30 decades, extreme
times and values), against mpmath at 30-40 digits (``mpmath.expm``, the exact cell-by-cell flow) and exact
rational arithmetic (``fractions``); the corners where the code once failed are plain tests at the end."""
import math
import warnings
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, note, settings
from hypothesis import strategies as st

from popdyn.dynamics import escape_time, iterate, plateau, scalar_flow, settling_time, solve_ode

from ._accuracy import EPS, examples, record

# declared global error of solve_ode in units of (atol + max(rtol, 1e-10) max_t |y(t)|), per method (below
# rtol = 1e-10 the rounding of the steps, not the tolerance, sets it: DOP853 reached 825 units of rtol = 1e-12);
# measured over 900 random systems of the family below: DOP853 51, RK45 1.1, RK23 8.6, Radau 0.23, LSODA 117, BDF 67
_ODE_BOUND = {"DOP853": 100, "RK45": 100, "RK23": 100, "Radau": 300, "LSODA": 1000, "BDF": 1000}


@st.composite
def linear_systems(draw):
    """y' = A y, A = V diag(lam) V^-1 with d <= 3, V = I + a Gaussian matrix / 3 (condition <= ~10), eigenvalues
    -10^u (u in [-2, 2], stiff: to 10^3.5 for the implicit methods) or up to +1 (growth e^T), T in [0.1, 10],
    |y0| from 1e-5 to 1e5, rtol in [1e-12, 1e-6], atol = rtol * 10^v * |y0| (v in [-6, 0])."""
    d = draw(st.integers(1, 3))
    method = draw(st.sampled_from(sorted(_ODE_BOUND)))
    umax = 3.5 if method in ("Radau", "BDF", "LSODA") else 2.0
    lam = [-(10.0 ** draw(st.floats(-2, umax))) if draw(st.integers(0, 4)) else draw(st.floats(0, 1))
           for _ in range(d)]
    V = np.eye(d) + np.array(draw(st.lists(st.floats(-1, 1), min_size=d * d, max_size=d * d))).reshape(d, d) / 3
    y0 = np.array(draw(st.lists(st.floats(-1, 1).filter(lambda v: abs(v) > 0.05), min_size=d, max_size=d)))
    y0 *= 10.0 ** draw(st.floats(-5, 5))
    rtol = 10.0 ** draw(st.floats(-12, -6))
    atol = rtol * 10.0 ** draw(st.floats(-6, 0)) * float(np.max(np.abs(y0)))
    return method, V @ np.diag(lam) @ np.linalg.inv(V), y0, 10.0 ** draw(st.floats(-1, 1)), rtol, atol


@settings(max_examples=examples(30), deadline=None)
@given(linear_systems())
def test_solve_ode_linear_systems(system):
    """solve_ode: global error <= C (atol + max(rtol, 1e-10) max_t |y(t)|) at every recorded time, C = 100 (DOP853,
    RK45, RK23), 300 (Radau), 1000 (LSODA, BDF), on linear systems (smooth fields; against mpmath.expm at 30
    digits)."""
    method, A, y0, T, rtol, atol = system
    t = np.linspace(0.0, T, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sol = solve_ode(lambda s, y: A @ y, y0, t, rtol=rtol, atol=atol, method=method)
    assert sol.success, sol.message
    with mp.workdps(30):
        Am, ym = mp.matrix(A.tolist()), mp.matrix(y0.tolist())
        exact = [mp.expm(Am * mp.mpf(float(ti))) * ym for ti in t]
        scale = atol + max(rtol, 1e-10) * max(float(abs(v)) for y in exact for v in y)
        err = max(float(abs(sol.y[i][j] - exact[i][j])) for i in range(t.size) for j in range(y0.size))
    note(f"{method}: error {err:.3g} = {err / scale:.3g} tolerance units")
    assert record(f"dynamics.solve_ode ({method})", err / (_ODE_BOUND[method] * scale), T=T, rtol=rtol) <= 1


@settings(max_examples=examples(20), deadline=None)
@given(st.floats(-0.999, 0.999), st.floats(0.01, 20), st.sampled_from(["DOP853", "RK45", "Radau"]))
def test_solve_ode_logistic(y0, T, method):
    """solve_ode on y' = 1 - y^2 (y = tanh(t + artanh y0)), nonlinear, with the default tolerances: the same
    bound in tolerance units as for linear systems."""
    t = np.linspace(0.0, T, 8)
    sol = solve_ode(lambda s, y: 1 - y * y, y0, t, method=method)
    with mp.workdps(30):
        exact = [mp.tanh(mp.mpf(float(ti)) + mp.atanh(mp.mpf(y0))) for ti in t]
    err = max(float(abs(a - b)) for a, b in zip(sol.y, exact))
    assert record(f"dynamics.solve_ode ({method})", err / (_ODE_BOUND[method] * (1e-12 + 1e-10)), y0=y0, T=T) <= 1


@settings(max_examples=examples(15), deadline=None)
@given(st.floats(-2, 2), st.floats(-10, 10), st.integers(0, 200), st.integers(1, 7))
def test_iterate_is_the_float_recursion(a, y0, steps, every):
    """iterate: exact (the recorded states are bit for bit those of the float recursion)."""
    traj = iterate(lambda n, y: a * y + 1.0 / (n + 1), y0, steps, every)
    y, ys = float(y0), {0: float(y0)}
    for n in range(steps):
        y = a * y + 1.0 / (n + 1)
        ys[n + 1] = y
    if traj.success:
        assert [ys[int(n)] for n in traj.t] == traj.y.tolist()


def _flow_mp(y_nodes, f_nodes, y0, tau):
    """Exact flow of dy/dt = interp(y) from y0 at times tau (mpmath, 40 digits): the same piecewise-linear field, cell
    by cell; an independent implementation of the closed form (the cell crossing time is log(f_b/f_a) dy/(f_b - f_a),
    the motion inside a cell y_a + f_a (e^(b t) - 1)/b)."""
    with mp.workdps(40):
        Y, F = [mp.mpf(float(v)) for v in y_nodes], [mp.mpf(float(v)) for v in f_nodes]
        y = mp.mpf(y0)
        j = min(max(int(np.searchsorted(y_nodes, y0, side="right")) - 1, 0), len(Y) - 2)
        f = F[j] + (F[j + 1] - F[j]) / (Y[j + 1] - Y[j]) * (y - Y[j])
        if f < 0:  # mirror: the decreasing flow is the increasing flow of -field(-y)
            out = _flow_mp(-y_nodes[::-1], -f_nodes[::-1], -y0, tau)
            return [-v for v in out]
        above = [k for k in range(len(Y)) if Y[k] > y]
        ys, fs = [y] + [Y[k] for k in above], [f] + [F[k] for k in above]
        out = []
        for t in tau:
            t, i = mp.mpf(float(t)), 0
            while True:
                ya, yb, fa, fb = ys[i], ys[i + 1] if i + 1 < len(ys) else None, fs[i], fs[i + 1] if i + 1 < len(fs) \
                    else None
                if fa <= 0 or yb is None:
                    out.append(ya)
                    break
                b = (fb - fa) / (yb - ya)
                cell = mp.inf if fb <= 0 else ((yb - ya) / fa if fb == fa else mp.log(fb / fa) / b)
                if t < cell:
                    out.append(ya + fa * (mp.expm1(b * t) / b if b != 0 else t))
                    break
                t -= cell
                i += 1
        return out


@st.composite
def fields(draw):
    """Piecewise-linear fields on 2..12 nodes: node spacings and field values spanning 10^-8 .. 10^8 with sign
    changes, zeros and near-equal neighbours (f_b/f_a - 1 ~ 1e-10, the series branch), y0 anywhere on the nodes,
    times out to 10^6 cell times."""
    n = draw(st.integers(2, 12))
    gaps = np.array(draw(st.lists(st.floats(-8, 3), min_size=n - 1, max_size=n - 1)))
    y_nodes = np.concatenate([[0.0], np.cumsum(10.0 ** gaps)]) + draw(st.floats(-10, 10))
    y_nodes = np.unique(y_nodes)
    kind = draw(st.sampled_from(["mixed", "positive", "flat", "zero"]))
    f = np.array(draw(st.lists(st.floats(-8, 8), min_size=y_nodes.size, max_size=y_nodes.size)))
    f = 10.0 ** f * np.array(draw(st.lists(st.sampled_from([-1.0, 1.0, 1.0]), min_size=y_nodes.size,
                                           max_size=y_nodes.size)))
    if kind == "positive":
        f = np.abs(f)
    elif kind == "flat":
        f = np.full(y_nodes.size, f[0]) * (1 + 1e-10 * np.arange(y_nodes.size))
    elif kind == "zero":
        f[draw(st.integers(0, y_nodes.size - 1))] = 0.0
    y0 = float(y_nodes[0] + draw(st.floats(0, 1)) * (y_nodes[-1] - y_nodes[0]))
    t = np.sort(np.array(draw(st.lists(st.floats(-3, 6), min_size=1, max_size=5))))
    return y_nodes, f, min(max(y0, y_nodes[0]), y_nodes[-1]), np.unique(np.concatenate([[0.0], 10.0 ** t]))


@settings(max_examples=examples(30), deadline=None)
@given(fields())
@example((np.array([0.0, 1.0]), np.array([1.0, 1.0 + 1e-10]), 0.0, np.array([0.0, 0.5, 1e6])))
def test_scalar_flow(field):
    """scalar_flow: |y - y_exact| <= 8 eps (max |y_nodes| + (N + 2) |f(y_exact)| tau) (the inputs' own
    conditioning: a time tau known to eps tau moves y by f eps tau; the cell times add up in N terms), against the
    exact flow of the same interpolated field in mpmath at 40 digits."""
    y_nodes, f_nodes, y0, t = field
    traj = scalar_flow(y_nodes, f_nodes, y0, t)
    ref = _flow_mp(y_nodes, f_nodes, y0, t)
    scale = float(np.max(np.abs(y_nodes)))
    for yi, ri, ti in zip(traj.y, ref, t):
        fr = float(np.interp(float(ri), y_nodes, f_nodes))
        bound = 8 * EPS * (scale + (y_nodes.size + 2) * abs(fr) * ti) + 1e-300
        assert record("dynamics.scalar_flow", float(abs(yi - ri)) / bound, n=y_nodes.size, t=ti) <= 1
        assert y_nodes[0] <= yi <= y_nodes[-1]


@st.composite
def recordings(draw):
    """(t, y): 2..30 strictly increasing times and values, scales 10^-300 .. 1.7e308 (differences of times of both
    signs overflow near 1e308), repeated values and plateaus."""
    n = draw(st.integers(2, 30))
    ts, ys = (10.0 ** draw(st.floats(-300, 308.23)) for _ in range(2))
    t = np.unique(np.array(draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n, unique=True))) * ts)
    n = t.size
    y = np.array(draw(st.lists(st.one_of(st.floats(-1, 1), st.sampled_from([0.0, 0.5])), min_size=n,
                               max_size=n))) * ys
    return t, y


@settings(max_examples=examples(40), deadline=None)
@given(recordings(), st.floats(0, 1))
@example((np.array([-1e308, 1e308]), np.array([0.0, 1.0])), 0.3)
def test_escape_time(rec, frac):
    """escape_time: |t_esc - t_exact| <= 4 eps max(|t_(i-1)|, |t_i|) against the exact rational interpolation, and
    t_(i-1) <= t_esc <= t_i, for times and values of any finite scale."""
    t, y = rec
    level = float(frac * np.max(np.abs(y)))
    got = escape_time(t, y, level)
    a = np.abs(y)
    hit = np.flatnonzero(a >= level)
    if hit.size == 0:
        assert got is None
        return
    i = int(hit[0])
    if i == 0:
        assert got == t[0]
        return
    T0, T1, A0, A1 = (Fraction(float(v)) for v in (t[i - 1], t[i], a[i - 1], a[i]))
    exact = T0 + (Fraction(level) - A0) / (A1 - A0) * (T1 - T0)
    bound = 4 * EPS * max(abs(t[i - 1]), abs(t[i])) + 1e-320
    assert record("dynamics.escape_time", float(abs(Fraction(got) - exact)) / bound, i=i) <= 1
    assert t[i - 1] <= got <= t[i]


@settings(max_examples=examples(40), deadline=None)
@given(recordings(), st.floats(-6, 0), st.floats(0, 1))
@example((np.array([-1.6e308, 0.0, 1.6e308]), np.array([1.6e308, 1.6e308, -1.6e308])), -6.0, 0.0)
def test_plateau_and_settling_time(rec, log_atol, dur):
    """plateau: each value is the band's midpoint to 1 ulp of max|y|, and every reported segment spans at most
    2 atol (differences rounded: + 2 eps max|y|); settling_time: every sample after it is within atol of the last
    (+ 1 ulp of the difference), the one before is not; for values of any finite scale."""
    t, y = rec
    ymax = float(np.max(np.abs(y)))
    atol = 10.0 ** log_atol * (ymax if ymax > 0 else 1.0)
    for ta, tb, v in plateau(t, y, atol=atol, min_duration=float(dur * t[-1] - dur * t[0])):
        seg = y[(t >= ta) & (t <= tb)]
        mid = (Fraction(float(seg.max())) + Fraction(float(seg.min()))) / 2
        assert record("dynamics.plateau", float(abs(Fraction(v) - mid)) / (EPS * ymax + 1e-320)) <= 1
        assert float(seg.max()) - float(seg.min()) <= 2 * atol * (1 + 2 * EPS)
    ts = settling_time(t, y, atol=atol)
    if ts is not None:
        i = int(np.flatnonzero(t == ts)[0])
        assert np.all(np.abs(y[i:] - y[-1]) <= atol)
        assert i == 0 or abs(y[i - 1] - y[-1]) > atol


# ---- corners where the code once failed ----------------------------------------------------------------------------

def test_escape_time_with_extreme_times():
    """escape_time interpolates as t_(i-1) + frac (t_i - t_(i-1)); for t = (-1e308, 1e308) the difference is inf, and
    the result was inf, outside [t_(i-1), t_i]; there it is (1 - frac) t_(i-1) + frac t_i."""
    assert escape_time(np.array([-1e308, 1e308]), np.array([0.0, 1.0]), 0.5) == 0.0
    assert escape_time(np.array([-1e308, 1e308]), np.array([0.0, 1.0]), 0.75) == 0.5e308


def test_plateau_value_with_extreme_values():
    """plateau's value is (max + min) / 2, which was inf for a band at 1.5e308; where max + min overflows it is
    max/2 + min/2."""
    (_, _, v), = plateau(np.array([0.0, 1.0, 2.0]), np.array([1.5e308, 1.5e308, 1.5e308]), atol=1.0)
    assert v == 1.5e308
