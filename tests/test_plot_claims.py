"""The report's figures as drawn by claims (at tiny sizes): the named defects of issue 15 item 6 stay fixed.

``save_figure`` of the claim's module is replaced by one that lays the figure out and keeps it, so that the
drawn artists can be inspected (colours per parameter value, tick positions, legend placement, title).
"""
import re
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

import popdyn.plot  # noqa: E402


@pytest.fixture
def kept(monkeypatch):
    """Figures the claims save, laid out and drawn instead of written (plot_curves' own saves included)."""
    figs = _Kept()

    def keep(fig, path, *, title=None):
        if title:
            fig.suptitle(title, fontsize=9)
        popdyn.plot._wrap_titles(fig)
        FigureCanvasAgg(fig).draw()
        figs.append(fig)
        return Path(path)

    monkeypatch.setattr(popdyn.plot, "save_figure", keep)  # plot_curves(..., path) saves through this
    figs.keep = keep
    return figs


class _Kept(list):
    keep = None


def _overlap(a, b):
    return max(min(a.x1, b.x1) - max(a.x0, b.x0), 0.0) * max(min(a.y1, b.y1) - max(a.y0, b.y0), 0.0)


def test_every_figure_is_named_after_its_claim():
    """One naming scheme in the report: ``<claim id>.png`` (issue 15 item 6: ``icl_x.png`` next to ``icl.x.png``)."""
    from popdyn.validation.claims import discover
    ids = set(discover())
    folder = Path(__file__).parent.parent / "validation" / "claims"
    names = {n for f in folder.glob("*.py") for n in re.findall(r'"([\w.]+)\.png"', f.read_text())}
    assert names and names <= ids, sorted(names - ids)


def test_looped_fig8_1_one_colour_per_n_and_legend_clear_of_the_panels(kept, monkeypatch, tmp_path):
    pytest.importorskip("torch")
    from popdyn.validation.claims import REGISTRY, discover, looped
    discover()
    monkeypatch.setattr(looped, "save_figure", kept.keep)  # imported by name into the claim's module
    size = {"ns": [16, 32, 64], "T": 30, "prompts": 2, "seed": 0, "d_large": 20, "prompts_large": 1}
    res = REGISTRY["looped.fig8_1"].run(size, "cpu", tmp_path)
    (fig,) = kept
    panels = fig.axes[:3]
    colour = {}
    for a in panels:
        for line in a.lines:
            n = int(line.get_label().split()[0][2:])
            colour.setdefault(n, set()).add(line.get_color())
    assert sorted(colour) == [16, 32, 64] and all(len(c) == 1 for c in colour.values())
    assert len({next(iter(c)) for c in colour.values()}) == 3
    r = fig.canvas.get_renderer()
    boxes = [lg.get_window_extent(r) for lg in fig.legends] + [a.get_legend().get_window_extent(r)
                                                               for a in fig.axes if a.get_legend()]
    assert boxes and all(_overlap(b, a.get_window_extent(r)) == 0 for b in boxes for a in fig.axes)
    assert "looped.fig8_1" in fig.get_suptitle() and f"{res.measured:.3g} <= 1e-12 (tolerance)" in fig.get_suptitle()


def test_icl_trained_optimum_rank_axis_is_discrete(kept, tmp_path):
    pytest.importorskip("torch")
    from popdyn.validation.claims import REGISTRY, discover
    discover()
    size = {"d": 4, "context": 10, "test_context": 8, "q": 0.75, "ranks": [1, 2, 4], "lr": 1e-2, "steps": 20, "batch": 64}
    REGISTRY["icl.trained_optimum"].run(size, "cpu", tmp_path)
    (fig,) = kept
    (a,) = fig.axes
    lo, hi = a.get_xlim()
    assert [t for t in a.get_xticks() if lo <= t <= hi] == [1, 2, 4]
    assert [t.get_text() for t in a.get_xticklabels()] == ["1", "2", "4"]
    assert all(line.get_marker() not in (None, "None", "") for line in a.lines if not line.get_label().startswith(("5", "0.2")))
    assert "0.05 (tolerance)" in a.get_title()


def _one_colour_per_value(fig, value_of):
    """{value: colours} of the labelled data lines of every panel (``value_of(label)``), each value one colour."""
    colour = {}
    for a in fig.axes:
        for line in a.lines:
            if not line.get_label().startswith("_"):
                colour.setdefault(value_of(line.get_label()), set()).add(line.get_color())
    assert all(len(c) == 1 for c in colour.values()), colour
    assert len({next(iter(c)) for c in colour.values()}) == len(colour)
    return colour


def _legends_clear_of_panels(fig):
    r = fig.canvas.get_renderer()
    boxes = [lg.get_window_extent(r) for lg in fig.legends] + [a.get_legend().get_window_extent(r)
                                                               for a in fig.axes if a.get_legend()]
    assert len(boxes) == 1 and all(_overlap(b, a.get_window_extent(r)) == 0 for b in boxes for a in fig.axes)


def test_looped_finite_size_one_colour_per_d_one_legend_claim_title(kept, monkeypatch, tmp_path):
    import warnings

    from popdyn.validation.claims import REGISTRY, discover, looped_finite
    discover()
    monkeypatch.setattr(looped_finite, "save_figure", kept.keep)
    size = {"ds": [8, 16], "gamma": 0.25, "T": 6, "prompts_x_d2": 20_000, "seed": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no layout-engine clash (tight_layout on constrained layout)
        res = REGISTRY["looped.finite_size"].run(size, "cpu", tmp_path)
    (fig,) = kept
    assert sorted(_one_colour_per_value(fig, lambda lab: int(lab.split()[0][2:]))) == [8, 16]
    _legends_clear_of_panels(fig)
    assert fig.get_suptitle().startswith("looped.finite_size: ") and f"{res.measured:.3g} " in fig.get_suptitle()


def test_lora_fig4_one_colour_per_activation_across_panels(kept, monkeypatch, tmp_path):
    pytest.importorskip("torch")
    from popdyn.validation.claims import REGISTRY, discover, lora_general
    discover()
    monkeypatch.setattr(lora_general, "save_figure", kept.keep)
    size = {"k": 4, "d": 60, "seeds": 2, "activations": ["relu", "sigmoid"], "panels": [[1.0, 0.1, 1.0],
                                                                                      ["sqrt_k", 0.02, 1.0]]}
    res = REGISTRY["lora.fig4_activations"].run(size, "cpu", tmp_path)
    (fig,) = kept
    assert sorted(_one_colour_per_value(fig, lambda lab: lab.split()[-1])) == ["relu", "sigmoid"]
    _legends_clear_of_panels(fig)
    assert fig.get_suptitle().startswith("lora.fig4_activations: ") and "(tolerance)" in fig.get_suptitle()
    assert f"{res.measured:.3g}" in fig.get_suptitle()
