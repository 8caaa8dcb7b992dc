"""Results: exact save/load round trip, atomic writes, compare's metrics on known answers, plotting."""
import json

import numpy as np
import pytest

import popdyn
from popdyn.results import Prediction, Simulation, atomic_write, load, read_meta


def _meta():
    return {"problem": "lora.Problem(k=2)", "options": {"d": 100, "lr": 0.5, "nested": {"a": [1, 2], "b": None}},
            "t_unit": "steps", "flag": True}


@pytest.mark.parametrize("with_t", [True, False])
def test_prediction_round_trip_is_exact(tmp_path, with_t):
    rng = np.random.default_rng(0)
    t = np.arange(7.0) if with_t else None
    pred = Prediction(t=t, observables={"m": rng.standard_normal(7), "loss": rng.random(7)},
                      status=1, message="converged", meta=_meta())
    back = load(pred.save(tmp_path / "p.npz"))
    assert type(back) is Prediction
    assert (back.t is None) == (not with_t)
    if with_t:
        np.testing.assert_array_equal(back.t, t)
    for k, v in pred.observables.items():
        assert back.observables[k].dtype == v.dtype
        np.testing.assert_array_equal(back.observables[k], v)  # exact: .npz stores the float64 bits
    assert (back.status, back.message, back.meta) == (pred.status, pred.message, pred.meta)


def test_simulation_round_trip_keeps_seed_axis(tmp_path):
    sim = Simulation(t=np.arange(5), observables={"m": np.random.default_rng(1).standard_normal((3, 5))},
                     meta={"seeds": [0, 1, 2], "nested": {"x": {"y": 1.5}}})
    back = load(sim.save(tmp_path / "s"))
    assert type(back) is Simulation and back.n_seeds == 3
    np.testing.assert_array_equal(back["m"], sim["m"])
    assert back.meta == sim.meta


def test_atomic_write_leaves_no_partial_file(tmp_path):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")

    def failing(f):
        f.write(b"partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(path, failing)
    assert path.read_bytes() == b"old"  # the old content survives
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]  # no temporary left behind
    with pytest.raises(RuntimeError):
        atomic_write(tmp_path / "new.bin", failing)
    assert not (tmp_path / "new.bin").exists()


def _synthetic(offset=0.1, n_seeds=4, n_t=50):
    """Simulation with known mean and SD, and a prediction = mean + offset."""
    t = np.linspace(0.0, 1.0, n_t)
    mean = np.sin(3 * t)
    dev = np.array([-1.5, -0.5, 0.5, 1.5])[:n_seeds, None] * np.ones(n_t)  # mean 0, SD sqrt(5/3)
    sim = Simulation(t=t, observables={"m": mean + 0.02 * dev})
    pred = Prediction(t=t, observables={"m": mean + offset})
    return pred, sim


def test_compare_metrics_known_answer():
    pred, sim = _synthetic(offset=0.1)
    comp = popdyn.compare(pred, sim, band_sd=2.0)
    met = comp.metrics["m"]
    sd = 0.02 * np.sqrt(5 / 3)  # SD (ddof=1) of {-1.5,-0.5,0.5,1.5} * 0.02
    assert met["sup_gap"] == pytest.approx(0.1, abs=1e-12)  # float64 rounding of sin + 0.1
    assert met["mean_gap"] == pytest.approx(0.1, abs=1e-12)
    assert met["max_z"] == pytest.approx(0.1 / (sd / 2), rel=1e-9)
    assert met["in_band"] == 0.0  # 0.1 > 2 SD = 0.052
    inside = popdyn.compare(*_synthetic(offset=0.01), band_sd=2.0).metrics["m"]
    assert inside["in_band"] == 1.0  # 0.01 < 2 SD = 0.052


def test_compare_interpolates_theory_on_simulation_grid():
    t_fine = np.linspace(0, 1, 101)
    pred = Prediction(t=t_fine, observables={"m": 2 * t_fine})
    sim = Simulation(t=np.array([0.25, 0.5]), observables={"m": np.array([[0.5, 1.0], [0.5, 1.0]])})
    assert popdyn.compare(pred, sim).metrics["m"]["sup_gap"] == pytest.approx(0.0, abs=1e-15)  # linear: exact


def test_plot_comparison_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    pred, sim = _synthetic()
    sim.meta.update(symbols={"m": "$m_t$", "t": "$t$"}, units={"t": "steps"})
    path = popdyn.compare(pred, sim).plot(tmp_path / "fig" / "c.png")
    assert path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_comparison_draws_on_given_axes():
    plt = pytest.importorskip("matplotlib.pyplot")
    fig, ax = plt.subplots()
    try:
        pred, sim = _synthetic()
        pred.meta.update(t_unit="steps", symbols={"m": "$m$"})
        out = popdyn.compare(pred, sim).plot(ax=ax)
        assert out is fig
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("training time (steps)", "m") and "gap" in ax.get_title()
        assert len([ln for ln in ax.lines if len(ln.get_xdata())]) == 2  # theory line + simulation mean
    finally:
        plt.close(fig)


def test_plot_curves_with_band_and_reference(tmp_path):
    pytest.importorskip("matplotlib")
    from popdyn.plot import plot_curves
    x = np.linspace(0, 1, 10)
    path = plot_curves(x, {"a": x, "b": x ** 2}, tmp_path / "c.png", bands={"a": 0.1 + 0 * x},
                       refs={"one": 1.0}, xlabel="x", ylabel="y", title="t")
    assert path.exists() and path.stat().st_size > 0


def test_matplotlib_not_imported_by_popdyn():
    import subprocess
    import sys
    code = "import sys, popdyn, popdyn.plot, popdyn.cli; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_one_file_with_plain_json_metadata(tmp_path):
    pred, _ = _synthetic()
    path = pred.save(tmp_path / "p")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.npz"]  # one file: one atomic os.replace
    side = read_meta(path)
    assert side["kind"] == "Prediction" and side["observables"] == ["m"]
    with np.load(path) as z:
        assert json.loads(str(z["__meta__"]))["kind"] == "Prediction"  # readable by numpy + json alone


def test_coords_round_trip_and_are_not_observables(tmp_path):
    sim = Simulation(t=None, observables={"hinge": np.ones((2, 3))}, coords={"M": [16, 64, 256]})
    back = load(sim.save(tmp_path / "s"))
    np.testing.assert_array_equal(back.coords["M"], [16, 64, 256])
    assert list(back.observables) == ["hinge"] and "coord M" in repr(back)
    with pytest.raises(ValueError, match="share a name"):
        Prediction(t=None, observables={"M": [1.0]}, coords={"M": [1]})


def test_compare_refuses_a_failed_prediction():
    pred, sim = _synthetic()
    pred.status, pred.message = -1, "step budget exhausted at t = 0.5; raise max_steps"
    with pytest.raises(ValueError, match="prediction failed.*max_steps"):
        popdyn.compare(pred, sim)


def test_compare_refuses_times_outside_the_prediction():
    t = np.linspace(0, 1, 11)
    truncated = Prediction(t=t[:6], observables={"m": t[:6]})            # stopped at t = 0.5
    sim = Simulation(t=t, observables={"m": np.tile(t, (2, 1))})
    with pytest.raises(ValueError, match=r"outside the prediction's range \[0, 0.5\]"):
        popdyn.compare(truncated, sim)


def test_static_theory_meets_a_timed_simulation_at_its_last_time_and_not_the_reverse():
    pred, sim = _synthetic()
    static = Prediction(t=None, observables={"m": np.array(0.5)})
    comp = popdyn.compare(static, sim)
    assert comp.compared_at == float(np.max(sim.t)) and comp.mean["m"].shape == ()
    with pytest.raises(ValueError, match="simulation has none"):
        popdyn.compare(pred, Simulation(t=None, observables={"m": np.ones((2, 1))}))


def test_compare_refuses_different_coords_and_shapes():
    pred = Prediction(t=None, observables={"h": np.ones(3)}, coords={"M": [16, 64, 256]})
    sim = Simulation(t=None, observables={"h": np.ones((2, 3))}, coords={"M": [16, 64, 128]})
    with pytest.raises(ValueError, match="coordinate 'M' differs"):
        popdyn.compare(pred, sim)
    sim = Simulation(t=None, observables={"h": np.ones((2, 2))}, coords={"M": [16, 64, 256]})
    with pytest.raises(ValueError, match="shape"):
        popdyn.compare(pred, sim)
    ok = Simulation(t=None, observables={"h": np.ones((2, 3))}, coords={"M": [16, 64, 256]})
    assert popdyn.compare(pred, ok).metrics["h"]["sup_gap"] == 0.0


def test_compare_leaves_standard_error_observables_out():
    pred = Prediction(t=None, observables={"h": np.ones(2), "h_se": np.full(2, 0.1)})
    sim = Simulation(t=None, observables={"h": np.ones((2, 2)), "h_se": np.full((2, 2), 0.3)})
    assert list(popdyn.compare(pred, sim).metrics) == ["h"]  # an SE is an uncertainty, not a prediction
