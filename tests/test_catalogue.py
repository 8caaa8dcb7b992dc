"""The README's loop on every problem class of the catalogue: ``example()`` through predict, simulate (2 seeds),
compare and plot. The theory and the simulation agree within the bound the class declares
(``example_agreement``), and every figure has a title, no empty panel and no colliding tick labels."""
import numpy as np
import pytest

import popdyn
from popdyn.models import catalogue

pytest.importorskip("torch")
pytest.importorskip("matplotlib")
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

CATALOGUE = catalogue()


def _overlap(a, b):
    return min(a.x1, b.x1) - max(a.x0, b.x0) > 0.5 and min(a.y1, b.y1) - max(a.y0, b.y0) > 0.5


def check_figure(fig):
    """A readable figure: a title, data in every panel, tick labels that do not collide, y labels in words."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    r = canvas.get_renderer()
    assert fig._suptitle is not None and fig._suptitle.get_text().strip(), "no figure title"
    for a in fig.axes:
        drawn = [ln for ln in a.lines if np.size(ln.get_xdata()) and np.isfinite(np.asarray(ln.get_ydata(), float)).any()]
        drawn += [c for c in a.collections if len(c.get_paths()) or np.size(getattr(c, "get_offsets", lambda: [])())]
        assert drawn, f"empty panel {a.get_title()!r}"
        assert a.get_ylabel().strip(), f"panel {a.get_title()!r} has no y label"
        for axis in (a.xaxis, a.yaxis):
            boxes = [t.get_window_extent(r) for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
            for i in range(len(boxes)):
                for j in range(i + 1, len(boxes)):
                    assert not _overlap(boxes[i], boxes[j]), (a.get_title(), axis.axis_name,
                                                               [t.get_text() for t in axis.get_ticklabels()])


@pytest.mark.slow
@pytest.mark.parametrize("e", CATALOGUE, ids=lambda e: e.name)
def test_example_runs_the_loop_and_agrees_as_declared(e, tmp_path):
    problem, options = e.cls.example()
    pred = popdyn.predict(problem, **options)
    sim = popdyn.simulate(problem, seeds=2, **options)
    comp = popdyn.compare(pred, sim)
    for name, (metric, bound) in e.cls.example_agreement.items():
        value = comp.metrics[name][metric]
        ok = value >= bound if metric == "in_band" else value <= bound
        assert ok, f"{e.name}: {name} {metric} = {value:.4g} against the declared bound {bound}"
    import matplotlib.pyplot as plt
    for fig in (comp.plot(), pred.plot(), sim.plot()):
        check_figure(fig)
        plt.close(fig)
    path = comp.plot(tmp_path / f"{e.name}.png")
    assert path.stat().st_size > 0
