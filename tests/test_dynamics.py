"""Generic integrators and trajectory events (popdyn.dynamics): exact solutions, rates, properties."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from popdyn import InvalidParameterError
from popdyn.dynamics import escape_time, iterate, plateau, scalar_flow, settling_time, solve_ode


@pytest.mark.parametrize("method", ["DOP853", "RK45", "LSODA", "Radau"])
@pytest.mark.parametrize("y0", [-0.9, 0.0, 0.3])
def test_solve_ode_logistic_exact(method, y0):
    # dy/dt = 1 - y^2 has y(t) = tanh(t + artanh y0)
    t = np.linspace(0, 3, 31)
    sol = solve_ode(lambda s, y: 1 - y**2, y0, t, rtol=1e-10, atol=1e-12, method=method)
    assert sol.success and sol.y.shape == t.shape
    err = np.max(np.abs(sol.y - np.tanh(t + np.arctanh(y0))))
    assert err < 1e-7  # 1e-7: global error of rtol=1e-10 accumulated over 3 time units, 1000x margin for Radau/LSODA


def test_solve_ode_vector_state_linear_system():
    # y' = A y with A a rotation generator: y(t) = (cos t, -sin t)
    A = np.array([[0.0, 1.0], [-1.0, 0.0]])
    t = np.linspace(0, 2 * np.pi, 9)
    sol = solve_ode(lambda s, y: A @ y, np.array([1.0, 0.0]), t)
    assert sol.y.shape == (9, 2)
    np.testing.assert_allclose(sol.y, np.c_[np.cos(t), -np.sin(t)], atol=1e-9)  # 1e-9: rtol 1e-10 over one period


def test_solve_ode_sqrt_boundary_is_clipped_and_converges():
    # f(y) = (1 + sqrt(1 - y)) (1 - y^2) is defined only for y <= 1 (sqrt(1 - y) ~ the ReLU h near m = 1);
    # without clipping an explicit stage overshooting 1 gives NaN. The exact time to reach y is
    # t(y) = int_0^y dm / f(m); check y(t) against it by inverting with quad.
    from scipy.integrate import quad
    from scipy.optimize import brentq

    f = lambda s, y: (1 + np.sqrt(1 - y)) * (1 - y**2)
    t = np.array([0.0, 1.0, 3.0, 10.0, 40.0])
    sol = solve_ode(f, 0.0, t, bounds=(-1.0, 1.0), rtol=1e-10, atol=1e-13)
    assert sol.success and np.all(sol.y <= 1.0) and np.all(np.diff(sol.y) > 0)
    T = lambda y: quad(lambda m: 1 / ((1 + np.sqrt(1 - m)) * (1 - m**2)), 0, y, epsabs=1e-13)[0]
    for ti, yi in zip(t[1:3], sol.y[1:3]):
        exact = brentq(lambda y: T(y) - ti, 0, 1 - 1e-9, xtol=1e-15)
        assert abs(yi - exact) < 1e-8  # 1e-8: solver rtol 1e-10 x error growth; quad error 1e-13
    assert 1 - sol.y[-1] < 1e-12  # 1 - y ~ exp(-2 t) = 2e-35 at t = 40: clipped at the boundary, never above


def test_solve_ode_nan_field_stops_with_actionable_message():
    # y' = 1 + sqrt(1 - y) reaches y = 1 at t < 1, then an explicit stage reads sqrt(negative) = NaN
    with np.errstate(invalid="ignore"):
        sol = solve_ode(lambda s, y: 1 + np.sqrt(1 - y), 0.0, np.linspace(0, 2, 5))
    assert sol.status == -1 and "bounds" in sol.message and "y=" in sol.message


@pytest.mark.parametrize("bad", [dict(rtol=0.0), dict(atol=-1.0), dict(method="Euler"), dict(max_step=0)])
def test_solve_ode_bad_options_raise_naming_parameter(bad):
    name = next(iter(bad))
    with pytest.raises(InvalidParameterError, match=repr(name)):
        solve_ode(lambda s, y: -y, 1.0, [0.0, 1.0], **bad)


def test_solve_ode_bad_grid_and_state():
    with pytest.raises(InvalidParameterError, match="t_eval"):
        solve_ode(lambda s, y: -y, 1.0, [0.0, 1.0, 0.5])
    with pytest.raises(InvalidParameterError, match="y0"):
        solve_ode(lambda s, y: -y, np.nan, [0.0, 1.0])


def test_iterate_geometric_and_recording():
    traj = iterate(lambda n, y: 0.9 * y, 2.0, 25, record_every=10)
    assert traj.t.tolist() == [0, 10, 20, 25]
    np.testing.assert_allclose(traj.y, 2.0 * 0.9 ** traj.t, rtol=1e-14)  # 1e-14: 25 float64 products


def test_iterate_step_index_and_vector_state():
    traj = iterate(lambda n, y: y + n, np.zeros(3), 4)
    assert traj.y.shape == (5, 3) and traj.y[-1].tolist() == [6.0, 6.0, 6.0]  # 0+1+2+3


def test_iterate_stops_on_overflow():
    with np.errstate(over="ignore"):
        traj = iterate(lambda n, y: y * 1e200, 1.0, 10)
    assert traj.status == -1 and "step size" in traj.message and traj.t[-1] == 1


def test_iterate_bad_steps():
    with pytest.raises(InvalidParameterError, match="'steps'"):
        iterate(lambda n, y: y, 1.0, -1)
    with pytest.raises(InvalidParameterError, match="'record_every'"):
        iterate(lambda n, y: y, 1.0, 3, record_every=0)


def test_escape_time_interpolates_and_none():
    t = np.linspace(0, 1, 11)
    assert escape_time(t, -0.5 * t, 0.25) == pytest.approx(0.5, abs=1e-12)  # |y| = t/2, exact on grid
    assert escape_time(t, 0.1 * t, 0.5) is None
    assert escape_time(t, np.ones(11), 0.5) == 0.0


@given(st.floats(0.05, 3.0), st.floats(0.01, 0.99))
def test_escape_time_of_linear_ramp_is_exact(slope, frac):
    # linear interpolation is exact for a linear trajectory
    t = np.linspace(0, 1, 17)
    level = frac * slope
    assert escape_time(t, slope * t, level) == pytest.approx(frac, abs=1e-12)  # 1e-12: rounding of one division


def test_plateau_finds_sigmoidal_plateaus():
    t = np.linspace(0, 20, 2001)
    y = np.tanh(t - 10)  # flat near -1 before t ~ 7, near +1 after t ~ 13
    segs = plateau(t, y, atol=1e-3, min_duration=2.0)
    (a0, b0, v0), (a1, b1, v1) = segs[0], segs[-1]
    assert a0 == 0.0 and v0 == pytest.approx(-1, abs=1e-3) and b1 == 20.0 and v1 == pytest.approx(1, abs=1e-3)
    # the first band is [-1, -1 + 2e-3]: it ends where tanh(s) = -1 + 2e-3; grid spacing 0.01
    assert b0 == pytest.approx(10 - np.arctanh(1 - 2e-3), abs=0.011)
    assert all(s[0] > 10 for s in segs[1:])  # nothing flat during the transition


def test_plateau_piecewise_exact():
    t = np.arange(12.0)
    y = np.array([0, 0.001, 0, 0.001, 0.5, 1, 1.001, 1, 1.001, 1, 0.999, 1])
    assert plateau(t, y, atol=1e-3, min_duration=2) == [(0.0, 3.0, 0.0005), (5.0, 11.0, 1.0)]
    assert plateau(t, y, atol=1e-3, min_duration=7) == []


@given(st.lists(st.floats(-1, 1), min_size=2, max_size=40), st.floats(1e-3, 0.5))
def test_plateau_segments_are_flat_and_disjoint(ys, atol):
    t = np.arange(len(ys), dtype=float)
    y = np.array(ys)
    segs = plateau(t, y, atol=atol)
    for (a, b, v), nxt in zip(segs, segs[1:] + [None]):
        seg = y[int(a):int(b) + 1]
        assert seg.max() - seg.min() <= 2 * atol and np.all(np.abs(seg - v) <= atol + 1e-15)
        if int(b) + 1 < len(y):  # maximal: one more point breaks the band
            ext = y[int(a):int(b) + 2]
            assert ext.max() - ext.min() > 2 * atol
        if nxt is not None:
            assert nxt[0] > b


def test_settling_time():
    t = np.linspace(0, 10, 101)
    y = 1 - np.exp(-t)
    # |y - y_end| <= 1e-2 iff exp(-t) - exp(-10) <= 1e-2
    assert settling_time(t, y, atol=1e-2) == pytest.approx(-np.log(1e-2 + np.exp(-10)), abs=0.1)
    assert settling_time(t, np.ones(101), atol=1e-3) == 0.0
    assert settling_time(t, t, atol=1e-3) is None


def test_events_bad_input():
    with pytest.raises(InvalidParameterError, match="'t' and 'y'"):
        escape_time([0, 1], [0.0], 0.5)
    with pytest.raises(InvalidParameterError, match="'atol'"):
        plateau([0, 1], [0.0, 0.0], atol=0)
    with pytest.raises(InvalidParameterError, match="'level'"):
        escape_time([0, 1], [0, 1], -1)


# ---- scalar_flow: exact flow of a piecewise-linear scalar field ------------------------------------

@pytest.mark.parametrize("y0", [-0.9, 0.0, 0.45])
def test_scalar_flow_linear_field_exact_both_directions(y0):
    # f(y) = 2 (0.5 - y) is linear, so one cell reproduces y* + (y0 - y*) exp(-2t) to rounding
    t = np.r_[0.0, np.geomspace(1e-6, 40, 30)]
    for nodes in ([-1.0, 1.0], np.linspace(-1, 1, 7)):
        nodes = np.asarray(nodes)
        traj = scalar_flow(nodes, 2 * (0.5 - nodes), y0, t)
        exact = 0.5 + (y0 - 0.5) * np.exp(-2 * t)
        assert traj.success and np.max(np.abs(traj.y - exact)) < 1e-14  # 1e-14: ~50 ulps of the cumulative sum


def test_scalar_flow_logistic_converges_at_second_order():
    # dy/dt = 1 - y^2 from -0.5: tanh(t + artanh(-0.5)); the interpolation error dy^2/8 |f''| gives O(N^-2)
    t = np.linspace(0, 4, 41)
    exact = np.tanh(t + np.arctanh(-0.5))
    ns = np.array([65, 129, 257, 513, 1025])
    errs = []
    for n in ns:
        y = np.linspace(-1, 1, n)
        errs.append(np.max(np.abs(scalar_flow(y, 1 - y**2, -0.5, t).y - exact)))
    slope = np.polyfit(np.log(ns), np.log(errs), 1)[0]
    assert -2.2 < slope < -1.8 and errs[-1] < 1e-6  # second order; +-0.2 for the pre-asymptotic points


def test_scalar_flow_stops_at_zero_and_at_the_end():
    y = np.linspace(0, 1, 11)
    rest = scalar_flow(y, y - 0.5, 0.5, [0.0, 1.0, 2.0])  # f(y0) = 0: at rest
    assert rest.y.tolist() == [0.5, 0.5, 0.5]
    out = scalar_flow(y, np.ones(11), 0.25, [0.0, 0.5, 0.75, 3.0])  # f = 1 to the end: y = 0.25 + t, then 1
    np.testing.assert_allclose(out.y, [0.25, 0.75, 1.0, 1.0], rtol=0, atol=1e-15)  # 1e-15: a few ulps of 1
    down = scalar_flow(y, -np.ones(11), 0.25, [0.0, 0.125, 5.0])
    np.testing.assert_allclose(down.y, [0.25, 0.125, 0.0], rtol=0, atol=1e-15)


@given(st.lists(st.floats(-3, 3), min_size=2, max_size=30), st.floats(0, 1), st.floats(0.01, 50))
def test_scalar_flow_monotone_and_never_crosses_a_zero(fvals, u, horizon):
    # a scalar autonomous flow is monotone in the direction of f(y0) and cannot pass a zero of f
    y = np.linspace(-1, 1, len(fvals))
    f = np.asarray(fvals)
    y0 = -1 + 2 * u
    traj = scalar_flow(y, f, y0, np.linspace(0, horizon, 50))
    f0 = np.interp(y0, y, f)
    steps = np.diff(traj.y) * np.sign(f0)
    assert np.all(steps >= -1e-15) and np.all((traj.y >= -1) & (traj.y <= 1))  # 1e-15: rounding of y near 1
    vals = np.interp(traj.y, y, f)
    assert np.all(vals * f0 >= -1e-12 * np.max(np.abs(f)))  # f keeps its sign along the path (rounding at the zero)


@pytest.mark.parametrize("kw, name", [(dict(y_nodes=[0.0, 0.0]), "y_nodes"), (dict(f_nodes=[1.0]), "f_nodes"),
                                      (dict(y0=2.0), "y0"), (dict(t_eval=[1.0, 0.0]), "t_eval"),
                                      (dict(f_nodes=[np.nan, 1.0]), "f_nodes")])
def test_scalar_flow_bad_input(kw, name):
    args = dict(y_nodes=[0.0, 1.0], f_nodes=[1.0, -1.0], y0=0.5, t_eval=[0.0, 1.0]) | kw
    with pytest.raises(InvalidParameterError, match=repr(name)):
        scalar_flow(**args)
