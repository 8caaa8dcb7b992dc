"""The report's figure style (popdyn.plot): one colour per parameter value across panels, discrete axes as
markers with integer ticks, legends outside the data, titles with the measured number against the tolerance."""
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("matplotlib")
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from popdyn.plot import Key, claim_title, discrete_axis, legend_outside, palette, plot_curves, save_figure, subplots  # noqa: E402


def _drawn(fig):
    """Lay the figure out and draw it (constrained layout runs at draw time); return the renderer."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _overlap(a, b):
    """Area (pixels^2) shared by two display-space bounding boxes."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0.0) * max(h, 0.0)


def _three_panels():
    """looped.fig8_1's pattern: every panel draws a different subset of n with two methods, styled by one Key."""
    key = Key("n", [16, 32, 64, 128], ["exact", "GD"])
    fig, axes = subplots(3)
    t = np.arange(20.0)
    for a, ns in zip(axes, ([16, 32, 64, 128], [32, 128], [64, 16, 128])):
        for n in ns:
            plot_curves(t, {f"n={n} exact": -t / n, f"n={n} GD": -t / n - 0.1},
                        styles={f"n={n} exact": key(n, "exact"), f"n={n} GD": key(n, "GD")}, ax=a, legend=False)
    key.legend(fig)
    return fig, axes, key


def test_one_colour_per_parameter_value_in_every_panel():
    fig, axes, key = _three_panels()
    colour = {}
    for a in axes:
        for line in a.lines:
            n = int(line.get_label().split()[0][2:])
            colour.setdefault(n, set()).add(line.get_color())
    assert all(len(c) == 1 for c in colour.values()), colour  # n has one colour everywhere
    assert len({c.pop() for c in colour.values()}) == 4  # and different n different colours
    styles = {line.get_label().split()[1]: line.get_linestyle() for a in axes for line in a.lines}
    assert styles["exact"] != styles["GD"]  # one line style per method


def test_palette_orders_numbers_and_keeps_names_in_order():
    c = palette([128, 16, 64, 32])
    assert list(c) == [16, 32, 64, 128] and len(set(c.values())) == 4
    assert list(palette(["relu", "erf"])) == ["relu", "erf"]


def test_key_legend_has_one_entry_per_value_and_per_method_outside_every_panel():
    fig, axes, key = _three_panels()
    r = _drawn(fig)
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["n = 16", "n = 32", "n = 64", "n = 128", "exact", "GD"]
    box = legend.get_window_extent(r)
    assert all(_overlap(box, a.get_window_extent(r)) == 0 for a in axes)


def test_figure_legend_clears_a_long_suptitle(tmp_path):
    fig, axes, key = _three_panels()
    fig.suptitle(claim_title(SimpleNamespace(id="m.c", title="a long statement " * 20, tolerance=1.0), 0.5), fontsize=9)
    r = _drawn(fig)
    assert _overlap(fig.legends[0].get_window_extent(r), fig.get_suptitle() and fig._suptitle.get_window_extent(r)) == 0


@pytest.mark.parametrize("loc", ["right", "below"])
def test_plot_curves_legend_lies_outside_the_data(loc):
    fig, (a,) = subplots(1)
    x = np.linspace(0, 1, 50)
    plot_curves(x, {f"curve {i}": x * i for i in range(6)}, ax=a, refs={"ref": 0.5}, legend=loc)
    r = _drawn(fig)
    assert a.get_legend() is not None
    assert _overlap(a.get_legend().get_window_extent(r), a.get_window_extent(r)) == 0


def test_legend_outside_several_panels_does_not_cover_a_neighbour():
    fig, axes = subplots(3)
    x = np.arange(10.0)
    for a in axes:
        plot_curves(x, {"a long label of a method": x, "another long label": 2 * x}, ax=a)
    r = _drawn(fig)
    for i, a in enumerate(axes):
        box = a.get_legend().get_window_extent(r)
        assert all(_overlap(box, b.get_window_extent(r)) == 0 for b in axes), i


def test_discrete_axis_has_markers_and_integer_ticks_only():
    fig, (a,) = subplots(1)
    rank = np.array([1, 2, 3])
    plot_curves(rank, {"theory": [0.3, 0.2, 0.1], "trained": [0.31, 0.21, 0.12]}, ax=a, discrete=True)
    _drawn(fig)
    ticks = a.get_xticks()
    assert list(ticks) == [1, 2, 3]
    assert [t.get_text() for t in a.get_xticklabels()] == ["1", "2", "3"]
    assert all(line.get_marker() not in (None, "None", "") for line in a.lines)
    lo, hi = a.get_xlim()
    assert lo < 1 and hi > 3  # end points not on the frame


def test_discrete_axis_labels_categories():
    fig, (a,) = subplots(1)
    a.plot([0, 1, 2], [1, 2, 3], "o")
    discrete_axis(a, [0, 1, 2], labels=["GD", "Adam", "SGD"])
    _drawn(fig)
    assert [t.get_text() for t in a.get_xticklabels()] == ["GD", "Adam", "SGD"]


def test_claim_title_states_the_claim_and_the_number_against_the_tolerance():
    c = SimpleNamespace(id="looped.mp_limit", title="MP limit at d = 200", tolerance=0.05)
    assert claim_title(c, 0.0229, what="max rel. gap") == (
        "looped.mp_limit: MP limit at d = 200\nmax rel. gap = 0.0229 <= 0.05 (tolerance)")
    assert "0.062 >  0.05" in claim_title(c, 0.062)
    assert "nan vs 0.05" in claim_title(c, float("nan"))


def test_save_figure_wraps_a_long_title_to_the_figure(tmp_path):
    fig, (a,) = subplots(1)
    a.plot([0, 1], [0, 1])
    long = SimpleNamespace(id="m.c", title="a statement " * 40, tolerance=1.0)
    path = save_figure(fig, tmp_path / "f.png", title=claim_title(long, 0.5))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = fig.get_suptitle().split("\n")
    assert len(lines) > 3 and max(map(len, lines)) < 100 and lines[-1] == "measured = 0.5 <= 1 (tolerance)"


def test_legend_outside_with_nothing_to_label_draws_none():
    fig, (a,) = subplots(1)
    a.plot([0, 1], [0, 1])
    assert legend_outside(a) is None and a.get_legend() is None


def test_discrete_axis_with_many_integers_ticks_integers_only():
    fig, (a,) = subplots(1)
    a.plot(np.arange(40), np.arange(40.0), "o")
    discrete_axis(a, np.arange(40))
    _drawn(fig)
    ticks = [t for t in a.get_xticks() if a.get_xlim()[0] <= t <= a.get_xlim()[1]]
    assert 2 <= len(ticks) <= 12 and all(float(t).is_integer() for t in ticks)


def test_save_figure_makes_room_for_a_legend_outside(tmp_path):
    """The panel keeps (about) its size: the figure grows by the legend instead of squeezing the axes."""
    widths = []
    for labels in ([], [f"a long label number {i}" for i in range(4)]):
        fig, (a,) = subplots(1)
        for lab in labels or ["_nolegend_"]:
            a.plot([0, 1], [0, 1], label=lab)
        if labels:
            legend_outside(a)
        save_figure(fig, tmp_path / "f.png")
        widths.append(a.get_window_extent(fig._get_renderer()).width)
    assert widths[1] >= 0.9 * widths[0]


def test_bad_placement_names_the_parameter():
    from popdyn._validate import InvalidParameterError
    fig, (a,) = subplots(1)
    a.plot([0, 1], [0, 1], label="x")
    with pytest.raises(InvalidParameterError, match="'loc'.*below"):
        legend_outside(a, loc="inside")
    with pytest.raises(InvalidParameterError, match="'axis'"):
        discrete_axis(a, [1, 2], axis="z")
