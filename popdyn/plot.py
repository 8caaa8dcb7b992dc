"""Theory-vs-simulation figures: the only module of popdyn that imports matplotlib (lazily).

``plot_comparison`` draws a :class:`~popdyn.results.Comparison` (sklearn's Display pattern: the
comparison computes, this module draws); ``plot_curves`` draws named curves with optional bands and
reference lines, so that validation claims do not repeat matplotlib boilerplate. Every function
creates a figure only when ``ax`` is None, returns the ``Figure`` (or the saved path when ``path`` is
given) and closes the figure it saved. No ``plt.show()``.

One figure style for the validation report:

* one colour per parameter value and one line style per method, the same in every panel
  (:class:`Key`; :func:`palette` for the colours), with one legend per figure;
* discrete axes (ranks, cases, loop counts) drawn as markers with ticks at the values
  (``plot_curves(..., discrete=True)``, :func:`discrete_axis`); sample sizes on a log axis ticked at
  the sizes run (:func:`sample_axis`);
* legends outside the data (:func:`legend_outside`: right of an axes, below a figure's panels);
* the title states the claim and its measured number against the tolerance (:func:`claim_title`,
  passed to ``save_figure(..., title=...)`` or to ``plot_curves(..., title=...)``).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

__all__ = ["plot_comparison", "plot_result", "problem_title", "plot_curves", "subplots", "save_figure", "sample_axis", "claim_title", "palette", "Key",
           "legend_outside", "discrete_axis", "LINESTYLES", "MARKERS"]

_INSTALL = "plotting needs matplotlib: pip install 'popdyn[plot]'"


def _matplotlib():
    """Import matplotlib lazily; a missing install names the extra to install."""
    try:
        import matplotlib
    except ImportError as e:  # pragma: no cover - matplotlib is installed in the test environment
        raise ImportError(_INSTALL) from e
    return matplotlib


def _axes(ax, n, saving, *, panel_size=(4.8, 3.4)):
    """``n`` axes: a new figure with ``n`` panels in a row when ``ax`` is None, else the given axes.

    A figure made only to be saved is a bare ``matplotlib.figure.Figure`` (drawn by Agg, never
    registered with pyplot, so no GUI backend is touched); otherwise ``pyplot.subplots``. New figures
    use matplotlib's constrained layout, which makes room for legends placed outside the axes.
    """
    _matplotlib()
    if ax is None:
        size = (panel_size[0] * n, panel_size[1])
        if saving:
            from matplotlib.figure import Figure
            fig = Figure(figsize=size, layout="constrained")
            axes = fig.subplots(1, n, squeeze=False)
        else:
            import matplotlib.pyplot as plt
            fig, axes = plt.subplots(1, n, figsize=size, squeeze=False, layout="constrained")
        return fig, list(axes[0])
    axes = list(np.atleast_1d(ax).ravel())
    if len(axes) != n:
        raise ValueError(f"The 'ax' parameter must hold {n} axes (one per observable). Got {len(axes)} instead.")
    return axes[0].figure, axes


def subplots(n, *, saving=True, panel_size=(4.8, 3.4)):
    """A new figure with ``n`` panels in a row: ``(fig, [ax, ...])`` (for ``plot_curves(..., ax=ax)``)."""
    return _axes(None, n, saving, panel_size=panel_size)


def _wrap(text, width_in, fontsize):
    """``text`` re-wrapped line by line to about ``width_in`` inches at ``fontsize`` points."""
    chars = max(20, int(width_in * 72 / (0.55 * fontsize)))
    return "\n".join(textwrap.fill(line, chars) if line else line for line in text.split("\n"))


def _wrap_titles(fig):
    """Wrap the figure's suptitle and every axes title (at most 10 pt) to the width they have (long claim titles)."""
    w, _ = fig.get_size_inches()
    if fig._suptitle is not None and fig._suptitle.get_text():
        fig._suptitle.set_text(_wrap(fig._suptitle.get_text(), w, fig._suptitle.get_fontsize()))
    for a in fig.axes:
        t = a.title
        t.set_fontsize(min(t.get_fontsize(), 10))  # panel titles one size below the axis labels, in every figure
        if t.get_text():
            t.set_text(_wrap(t.get_text(), w * a.get_position().width, t.get_fontsize()))


def _make_room(fig):
    """Grow a constrained-layout figure by the size of its legends outside the axes, so panels keep their size.

    A legend to the right of an axes adds its width, a figure legend below the panels its height.
    """
    engine = fig.get_layout_engine()
    if engine is None or type(engine).__name__ != "ConstrainedLayoutEngine":
        return
    fig.draw_without_rendering()
    r = fig._get_renderer()
    extra_w = sum(a.get_legend().get_window_extent(r).width + 8 for a in fig.axes if a.get_legend() is not None
                  and a.get_legend().get_window_extent(r).x0 >= a.get_window_extent(r).x1)
    extra_h = sum(lg.get_window_extent(r).height + 8 for lg in fig.legends)
    if extra_w or extra_h:
        w, h = fig.get_size_inches()
        fig.set_size_inches(w + extra_w / fig.dpi, h + extra_h / fig.dpi)


def save_figure(fig, path, *, title=None):
    """Save ``fig`` as an image at ``path`` atomically (parent folders created), close it, return the ``Path``.

    ``title`` (e.g. from :func:`claim_title`) becomes the figure's suptitle; long titles are wrapped to the
    figure's width.
    """
    import matplotlib.pyplot as plt
    from .results import atomic_write
    path = Path(path)
    fmt = path.suffix.lstrip(".") or "png"
    try:
        _make_room(fig)
        if title:
            fig.suptitle(title, fontsize=9)
        _wrap_titles(fig)
        atomic_write(path, lambda f: fig.savefig(f, format=fmt, dpi=110, bbox_inches="tight"))
    finally:
        plt.close(fig)
    return path


def claim_title(claim, measured, *, what="measured", note=""):
    r"""Title of a claim's figure: the claim (``id: title``) and its measured number against the tolerance.

    Parameters
    ----------
    claim : object with attributes ``id``, ``title``, ``tolerance``
        The claim (a ``popdyn.validation.claims.Claim``, e.g. ``REGISTRY["looped.fig8_1"]``).
    measured : float
        The number the claim reports (its ``ClaimResult.measured``).
    what : str
        A short name of that number (e.g. ``"max |GD - exact|"``).
    note : str
        Further measured values, appended after the tolerance (``"; "``-separated).

    Returns
    -------
    str
        ``"<id>: <title>\n<what> = <measured> <= <tolerance> (tolerance)"``, with ``>`` when the number
        exceeds the tolerance (the verdict also needs the claim's sub-checks).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> print(claim_title(SimpleNamespace(id="m.c", title="x equals y", tolerance=0.05), 0.0312, what="gap"))
    m.c: x equals y
    gap = 0.0312 <= 0.05 (tolerance)
    """
    m, tol = float(measured), float(claim.tolerance)
    sign = "<=" if m <= tol else ("> " if m > tol else "vs")
    return f"{claim.id}: {claim.title}\n{what} = {m:.3g} {sign} {tol:.3g} (tolerance)" + (f"; {note}" if note else "")


LINESTYLES = ("-", "--", ":", "-.", (0, (10, 3)), (0, (3, 1, 1, 1, 1, 1)))  # solid, dashed, dotted, dash-dot, long dash, dash-dot-dot
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def palette(values, cmap="viridis"):
    """One colour per parameter value, the same in every panel: ``{value: colour}``.

    Numbers get ordered colours of a sequential map (smallest value darkest; the light yellow end is
    left out), other values (names) the qualitative ``tab10`` colours in the order given.

    Examples
    --------
    >>> c = palette([64, 16, 32])
    >>> list(c) == [16, 32, 64] and len(set(c.values())) == 3
    True
    """
    mpl = _matplotlib()
    vals = list(dict.fromkeys(values))
    if all(isinstance(v, (int, float, np.integer, np.floating)) for v in vals):
        vals = sorted(vals)
        cm = mpl.colormaps[cmap]
        pos = np.linspace(0.0, 0.85, len(vals)) if len(vals) > 1 else [0.35]
        return {v: mpl.colors.to_hex(cm(p)) for v, p in zip(vals, pos)}
    tab = mpl.colormaps["tab10"]
    return {v: mpl.colors.to_hex(tab(i % 10)) for i, v in enumerate(vals)}


class Key:
    """The styles of a figure's curves: one colour per parameter value, one line style per method.

    ``key(value, method)`` gives ``Axes.plot`` keyword arguments (``color``, ``ls``, ``marker``), the
    same in every panel; :meth:`legend` draws one legend for the whole figure, outside the data, with
    one entry per value (colour) and one per method (line style), instead of one per curve.

    Parameters
    ----------
    param : str
        Name of the parameter (``"n"``); value labels read ``"n = 16"``.
    values : sequence
        The parameter's values (colours by :func:`palette`).
    methods : sequence of str
        The methods (theory, simulation, a bound ...), in the order of :data:`LINESTYLES`.
    discrete : bool
        Mark every point (for a discrete abscissa).

    Examples
    --------
    >>> key = Key("n", [16, 32], ["exact", "GD"])
    >>> key(32, "GD")["ls"], key(32, "GD")["color"] == key(32, "exact")["color"]
    ('--', True)
    """

    def __init__(self, param="", values=(), methods=(), *, discrete=False):
        self.param, self.discrete = param, discrete
        self.colors = palette(values) if len(values) else {}
        self.methods = {m: i for i, m in enumerate(dict.fromkeys(methods))}

    def label(self, value):
        return f"{self.param} = {value:g}" if self.param and isinstance(value, (int, float, np.number)) else (
            f"{self.param} = {value}" if self.param else str(value))

    def __call__(self, value=None, method=None):
        i = self.methods.get(method, 0)
        kw = {"color": self.colors.get(value, "k" if value is None else "C0"), "ls": LINESTYLES[i % len(LINESTYLES)],
              "lw": 1.4}
        if self.discrete:
            kw.update(marker=MARKERS[i % len(MARKERS)], ms=5)
        return kw

    def handles(self):
        """Legend proxies and labels: the values' colours (solid), then the methods' line styles (grey)."""
        from matplotlib.lines import Line2D
        out = [(Line2D([], [], color=c, lw=2), self.label(v)) for v, c in self.colors.items()]
        if len(self.methods) > 1 or not self.colors:
            grey = "0.35" if self.colors else "C0"
            out += [(Line2D([], [], color=grey, lw=1.4, ls=LINESTYLES[i % len(LINESTYLES)],
                            marker=MARKERS[i % len(MARKERS)] if self.discrete else None), m)
                    for m, i in self.methods.items()]
        return [h for h, _ in out], [lab for _, lab in out]

    def legend(self, where, *, extra=()):
        """One legend outside the data: below the figure's panels (a Figure) or right of one Axes.

        ``extra`` adds ``(handle, label)`` pairs (a reference line drawn in every panel ...).
        """
        h, lab = self.handles()
        h += [e[0] for e in extra]
        lab += [e[1] for e in extra]
        return legend_outside(where, h, lab)


def legend_outside(where, handles=None, labels=None, *, loc="right", fontsize=8):
    """A legend outside the data: right of (``loc="right"``) or below (``"below"``) an Axes; below a Figure's panels.

    Without ``handles``, one entry per distinct label drawn on the axes (of every panel, for a Figure).
    For a Figure with constrained layout (:func:`subplots`), the panels shrink to make room. Returns
    the legend, or None when there is nothing to label.
    """
    from matplotlib.figure import FigureBase

    from ._validate import Options, check
    check("plot.legend_outside", "loc", loc, Options(("right", "below")))
    if handles is None:
        axes = where.axes if isinstance(where, FigureBase) else [where]
        seen = {}
        for a in axes:
            for h, lab in zip(*a.get_legend_handles_labels()):
                seen.setdefault(lab, h)
        labels, handles = list(seen), list(seen.values())
    if not handles:
        return None
    if isinstance(where, FigureBase):  # below the panels: clear of the suptitle, whatever its length
        return where.legend(handles, labels, loc="outside lower center", fontsize=fontsize, handlelength=3.2,
                            ncols=min(len(labels), 5))
    if loc == "right":
        return where.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                            fontsize=fontsize, handlelength=3.2)
    from matplotlib.transforms import offset_copy
    below = 1.8 * (where.xaxis.get_ticklabels()[0].get_fontsize() if where.xaxis.get_ticklabels() else 10) + 22
    return where.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), borderaxespad=0.0,
                        bbox_transform=offset_copy(where.transAxes, where.figure, y=-below, units="points"),
                        fontsize=fontsize, handlelength=3.2, ncols=min(len(labels), 3))


def discrete_axis(ax, values, axis="x", *, labels=None):
    """A discrete axis: ticks exactly at ``values`` (integers print as integers), half a step of margin.

    More than 12 unlabelled integers (neuron indices ...) get a few integer ticks instead of one each.

    Draw the data on it with markers (``Key(..., discrete=True)`` or ``plot_curves(..., discrete=True)``);
    ``labels`` names the ticks (e.g. method names on a categorical axis).
    """
    from matplotlib.ticker import FixedFormatter, FixedLocator, MaxNLocator, NullLocator, StrMethodFormatter

    from ._validate import Options, check
    check("plot.discrete_axis", "axis", axis, Options(("x", "y")))
    vals = np.unique(np.asarray(values, dtype=float))
    a = ax.xaxis if axis == "x" else ax.yaxis
    many = labels is None and len(vals) > 12 and np.all(vals == np.round(vals))
    a.set_major_locator(MaxNLocator(integer=True) if many else FixedLocator(vals))
    a.set_major_formatter(FixedFormatter([str(v) for v in labels]) if labels is not None
                          else StrMethodFormatter("{x:g}"))
    a.set_minor_locator(NullLocator())
    if labels is not None and max(map(len, map(str, labels)), default=0) > 4:
        ax.tick_params(axis=axis, labelrotation=30 if axis == "x" else 0)
        if axis == "x":
            for t in ax.get_xticklabels():
                t.set_horizontalalignment("right")
    half = 0.5 * (np.min(np.diff(vals)) if len(vals) > 1 else 1.0)
    (ax.set_xlim if axis == "x" else ax.set_ylim)(vals[0] - half, vals[-1] + half)


def _spec(meta, name):
    """The ``Observable`` a result's problem class declares for ``name`` (None when it declares none)."""
    from .api import _problem_class
    cls = _problem_class(meta)
    return (getattr(cls, "observables", None) or {}).get(name)


def _ylabel(meta, name):
    spec = _spec(meta, name)
    return spec.axis_label() if spec is not None else name.replace("_", " ")


def _tlabel(meta):
    unit = meta.get("t_unit", "steps")
    return "training time" + (f" ({unit})" if unit else "")


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v[:4]) + (", ...]" if len(v) > 4 else "]")
    return str(v)


def problem_title(meta, *, width=110):
    """A few words naming a result's problem: model, its scalar fields, then the options that define the run.

    >>> problem_title({"model": "lora", "problem_fields": {"k": 4, "xi": 1.0, "G": [[1.0]]},
    ...                "call_options": {"d": 200, "lr": 0.001}})
    'lora: k=4, xi=1 | d=200, lr=0.001'
    """
    fields = {}
    for k, v in (meta.get("problem_fields") or {}).items():  # a nested problem's fields come first, unprefixed
        fields.update({kk: vv for kk, vv in v.items() if kk not in fields} if isinstance(v, dict) else {k: v})
    opts = meta.get("call_options") or {}
    keep = lambda v: isinstance(v, (int, float, str, bool)) and not (isinstance(v, str) and len(v) > 24)
    left = ", ".join(f"{k}={_fmt(v)}" for k, v in fields.items() if keep(v))
    right = ", ".join(f"{k}={_fmt(v)}" for k, v in opts.items() if keep(v) and v is not None
                      and k not in ("seed", "seeds", "dtype", "n_points"))
    text = f"{meta.get('model', 'result')}: {left}" + (f" | {right}" if right else "")
    return text if len(text) <= width else text[:width - 3] + "..."


def _entries(shape, spec, result=None):
    """Labels of the entries of an array of ``shape`` (after time): '' for a scalar; 'K=1, M=2' when the axes are
    declared (an axis that is a coordinate of the result shows its value: 'representation=universal')."""
    if not shape:
        return [""]
    names = spec.axes if spec is not None and len(spec.axes) == len(shape) else None
    coords = result.coords if result is not None else {}

    def value(n, i):
        c = coords.get(n)
        return c[i].item() if c is not None and c.ndim == 1 and c.size > i else i + 1
    out = []
    for idx in np.ndindex(*shape):
        out.append("[" + ",".join(str(i + 1) for i in idx) + "]" if names is None else
                   ", ".join(f"{n}={value(n, i)}" for n, i in zip(names, idx)))
    return out


def _span_decades(*arrays, ratio=100.0):
    """All values positive and their range wider than ``ratio`` (a log axis can show them)."""
    vals = np.concatenate([np.ravel(np.asarray(a, dtype=float)) for a in arrays if a is not None])
    vals = vals[np.isfinite(vals)]
    return vals.size > 0 and bool(np.all(vals > 0)) and vals.max() / vals.min() >= ratio


def _static_x(result, name, n):
    """The abscissa of a static observable with ``n`` rows: its declared coordinate if the result has it."""
    spec = _spec(result.meta, name)
    coord = spec.coord if spec is not None else None
    if coord is None:
        coords = [k for k, v in result.coords.items() if v.ndim == 1 and v.size == n]
        coord = coords[0] if len(coords) == 1 else None
    if coord is not None and coord in result.coords and result.coords[coord].size == n:
        x = np.asarray(result.coords[coord])
        if x.dtype.kind in "fiu":
            return x.astype(float), coord, None
        return np.arange(n, dtype=float), coord, [str(v) for v in x]
    return None, None, None


def _coord_first(spec, arrays):
    """Static observables whose declared coordinate is not their first axis: that axis moved to the front."""
    if spec is None or spec.coord is None or spec.coord not in spec.axes:
        return arrays
    i = spec.axes.index(spec.coord)
    return [None if v is None or np.ndim(v) != len(spec.axes) else np.moveaxis(np.asarray(v), i, 0)
            for v in arrays]


def _draw_observable(a, name, *, t, theory, mean, sd, n_seeds, band_sd, result):
    """One panel: theory (dashed) and simulation (solid, band) of one observable, whatever its shape."""
    spec = _spec(result.meta, name)
    if t is None:
        theory, mean, sd = _coord_first(spec, [theory, mean, sd])
        if spec is not None and spec.coord in spec.axes:
            rest = tuple(x for x in spec.axes if x != spec.coord)
            spec = type(spec)(spec.label, spec.unit, (spec.coord,) + rest, spec.coord, spec.log)
    arrays = [x for x in (theory, mean) if x is not None]
    ref = arrays[0]
    if t is not None:                               # over time: one line per entry
        x, xlabel, labels = np.asarray(t, dtype=float), _tlabel(result.meta), None
        rows = ref.reshape(ref.shape[0], -1)
        entry_names = _entries(ref.shape[1:], spec, result)
    else:
        x, xlabel, labels = _static_x(result, name, ref.shape[0] if ref.ndim else 0)
        if x is not None:                           # over a coordinate: one line per remaining entry
            rows = ref.reshape(ref.shape[0], -1)
            rest = type(spec)(spec.label, spec.unit, spec.axes[1:]) if spec is not None else None
            entry_names = _entries(ref.shape[1:], rest, result)
        else:                                       # entries on a discrete axis (a scalar: one point)
            x = np.arange(max(ref.size, 1), dtype=float)
            xlabel = "entry" if ref.size > 1 else ""
            labels = _entries(ref.shape, spec, result) if 1 < ref.size <= 12 else None
            rows, entry_names = None, [""]
    points = rows is None or x.size == 1 or labels is not None  # a categorical coordinate: points, no lines
    n_entries = 1 if rows is None else rows.shape[1]
    colors = palette(list(range(n_entries)), cmap="tab10" if n_entries <= 10 else "viridis") \
        if n_entries > 1 else {0: "C0"}
    if n_entries <= 10 and n_entries > 1:
        import matplotlib as mpl
        colors = {j: mpl.colors.to_hex(mpl.colormaps["tab10"](j)) for j in range(n_entries)}

    def flat(v):
        v = np.asarray(v, dtype=float)
        return v.reshape(1, -1) if rows is None else v.reshape(v.shape[0], -1)

    th, mu, sg = (flat(v) if v is not None else None for v in (theory, mean, sd))
    if rows is None:
        th, mu, sg = (v.T if v is not None else None for v in (th, mu, sg))  # (entries, 1) -> x along entries
    for j in range(n_entries):
        c = colors[j]
        lab = entry_names[j] if n_entries > 1 and n_entries <= 10 else None
        if mu is not None:
            m, s = mu[:, j], sg[:, j] if sg is not None else np.zeros_like(mu[:, j])
            if points:
                a.errorbar(x, m, yerr=band_sd * s, fmt="o", color=c, ms=5, capsize=4, lw=1.2)
            else:
                a.plot(x, m, color=c, lw=1.4, ls="-", marker="o" if t is None and x.size <= 8 else None, ms=4)
                a.fill_between(x, m - band_sd * s, m + band_sd * s, color=c, alpha=0.22, lw=0)
        if th is not None:
            if points:
                a.plot(x, th[:, j], ls="none", marker="_", ms=16, mew=2.2, color="k" if n_entries == 1 else c)
            else:
                a.plot(x, th[:, j], color="k" if n_entries == 1 else c, lw=1.6, ls="--")
        if lab:
            a.plot([], [], color=c, lw=6, alpha=0.6, label=lab)
    a.set_xlabel(xlabel)
    a.set_ylabel(textwrap.fill(_ylabel(result.meta, name), 34))
    if _span_decades(theory, mean) or (spec is not None and spec.log and _span_decades(theory, mean, ratio=1.0)):
        a.set_yscale("log")
    if labels is not None:
        discrete_axis(a, x, labels=labels)
        _fit_tick_labels(a)
    elif points:
        discrete_axis(a, x)
        if x.size == 1:
            a.set_xticks([])
    else:
        if x.size > 1 and np.all(x > 0) and x.max() / x.min() >= 20 and t is None:  # a sweep over decades
            a.set_xscale("log")
        from matplotlib.ticker import MaxNLocator
        if a.get_xscale() == "linear":
            a.xaxis.set_major_locator(MaxNLocator(nbins=5))
    if n_entries > 10:
        a.text(0.02, 0.98, f"{n_entries} entries (one colour each)", transform=a.transAxes, va="top", fontsize=7)
    return points


def _fit_tick_labels(a):
    """Named ticks that fit: upright when short, else turned 90 degrees; at most about one per 14 points of
    axis length (the others left unnamed)."""
    labels = a.get_xticklabels()
    texts = [t.get_text() for t in labels]
    if not texts:
        return
    width_pt = a.get_position().width * a.figure.get_size_inches()[0] * 72
    longest = max(len(t) for t in texts)
    upright = longest * 5.5 * len(texts) < 0.8 * width_pt
    keep = max(1, int(np.ceil(len(texts) / max(1.0, (0.8 * width_pt) / (14 if not upright else longest * 5.5)))))
    for i, t in enumerate(labels):
        t.set_rotation(0 if upright else 90)
        t.set_horizontalalignment("center")
        if i % keep:
            t.set_visible(False)


def _method_legend(fig, has_theory, has_sim, n_seeds, band_sd, points):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    handles = []
    if has_theory:
        handles.append(Line2D([], [], color="k", ls="none" if points else "--", marker="_" if points else None,
                              ms=14, mew=2, lw=1.6, label="theory"))
    if has_sim:
        handles.append(Line2D([], [], color="0.3", lw=1.4, marker="o" if points else None,
                              label=f"simulation mean ({n_seeds} seeds)"))
        handles.append(Patch(color="0.3", alpha=0.3, label=f"mean +- {band_sd:g} SD"))
    extra = {}
    for a in fig.axes:
        for h, lab in zip(*a.get_legend_handles_labels()):
            extra.setdefault(lab, h)
    labels = [h.get_label() for h in handles] + list(extra)
    fig.legend(handles + list(extra.values()), labels, loc="outside lower center", fontsize=8, handlelength=3.0,
               ncols=min(len(labels), 5))


def _grid(n):
    cols = min(n, 3)
    return (n + cols - 1) // cols, cols


def _figure(n, ax, saving):
    if ax is not None:
        return _axes(ax, n, saving)
    _matplotlib()
    rows, cols = _grid(n)
    size = (4.6 * cols, 3.3 * rows + 0.6)
    if saving:
        from matplotlib.figure import Figure
        fig = Figure(figsize=size, layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=False)
    else:
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False, layout="constrained")
    axes = list(axes.ravel())
    for extra in axes[n:]:
        extra.remove()
    return fig, axes[:n]


def plot_comparison(comp, path=None, *, ax=None, observables=None):
    """Theory over the simulation, one panel per observable, whatever its shape.

    Observables over time are lines (theory dashed, simulation mean solid with a +- ``band_sd`` SD seed band),
    one colour per entry of a vector or matrix observable; observables over a coordinate (ridge, lambda,
    context length) are drawn on that coordinate, named, on a log axis where it spans decades; scalars are
    points with error bars (theory a bar). Y labels come from the problem's declared observables, the figure
    title names the problem and each panel title gives the comparison's metrics.

    Parameters
    ----------
    comp : Comparison
        From :func:`popdyn.compare`.
    path : str or Path, optional
        Where to save a PNG; the figure is then closed and the path returned.
    ax : Axes or sequence of Axes, optional
        One per observable drawn; a new figure is made only when None.
    observables : sequence of str, optional
        Subset of ``comp.metrics`` to draw (all by default).

    Returns
    -------
    Figure, or Path when ``path`` is given.
    """
    names = list(comp.metrics) if observables is None else [k for k in observables if k in comp.metrics]
    if not names:
        raise ValueError(f"The 'observables' parameter must name some of {sorted(comp.metrics)}. Got {observables!r}.")
    fig, axes = _figure(len(names), ax, path is not None)
    n = comp.simulation.n_seeds
    points = False
    for a, name in zip(axes, names):
        points |= _draw_observable(a, name, t=comp.t, theory=comp.theory[name], mean=comp.mean[name],
                                   sd=comp.sd[name], n_seeds=n, band_sd=comp.band_sd, result=comp.simulation)
        m = comp.metrics[name]
        a.set_title(f"{name}: gap {m['sup_gap']:.2g}, {m['in_band']:.0%} in band, max z {m['max_z']:.2g}")
    title = problem_title(comp.prediction.meta)
    if comp.compared_at is not None:
        title += f" (simulation at t = {comp.compared_at:g})"
    _method_legend(fig, True, True, n, comp.band_sd, points)
    if ax is None:
        fig.suptitle(title, fontsize=10)
    return save_figure(fig, path) if path is not None else fig


def plot_result(result, path=None, *, ax=None, observables=None, band_sd=2.0):
    """A prediction (theory lines) or a simulation (mean with a seed band) alone, one panel per observable,
    drawn as :func:`plot_comparison` draws it. ``*_se`` observables are drawn as bands of their observable."""
    from .results import Simulation, choose_observables
    is_sim = isinstance(result, Simulation)
    n_t = None if result.t is None else np.size(result.t)
    time_axis = 1 if is_sim else 0
    names = [k for k in result.observables if not k.endswith("_se")  # per-run arrays without a time axis: not drawn
             and (n_t is None or (np.ndim(result.observables[k]) > time_axis
                                  and np.shape(result.observables[k])[time_axis] == n_t))]
    names = choose_observables(names, observables, "plot")
    if not names:
        raise ValueError("the result has no observable to draw")
    fig, axes = _figure(len(names), ax, path is not None)
    points = False
    for a, name in zip(axes, names):
        v = np.asarray(result.observables[name], dtype=float)
        if is_sim:
            mean = v.mean(axis=0)
            sd = v.std(axis=0, ddof=1) if v.shape[0] > 1 else np.zeros_like(mean)
            points |= _draw_observable(a, name, t=result.t, theory=None, mean=mean, sd=sd, n_seeds=v.shape[0],
                                       band_sd=band_sd, result=result)
        else:
            se = result.observables.get(f"{name}_se")
            points |= _draw_observable(a, name, t=result.t, theory=v, mean=None, sd=None, n_seeds=0,
                                       band_sd=band_sd, result=result)
            if se is not None and result.t is not None and v.ndim == 1:
                x = np.asarray(result.t, dtype=float)
                a.fill_between(x, v - band_sd * se, v + band_sd * se, color="0.5", alpha=0.25, lw=0)
        a.set_title(name)
    _method_legend(fig, not is_sim, is_sim, result.n_seeds if is_sim else 0, band_sd, points)
    if ax is None:
        fig.suptitle(problem_title(result.meta), fontsize=10)
    return save_figure(fig, path) if path is not None else fig


def plot_curves(x, curves, path=None, *, ax=None, bands=None, refs=None, xlabel="", ylabel="",
                title="", logy=False, styles=None, discrete=False, labels=None, legend="right"):
    """Named curves on one axes, with optional +- bands and horizontal reference lines.

    Parameters
    ----------
    x : array_like of shape (n,)
        Shared abscissa.
    curves : dict of str -> array_like of shape (n,)
        Label -> ordinates.
    path : str or Path, optional
        Where to save a PNG; the figure is closed and the path returned.
    ax : Axes, optional
        Axes to draw on; a new figure is made only when None.
    bands : dict of str -> array_like of shape (n,), optional
        Label (of a curve) -> half-width of a shaded band around that curve.
    refs : dict of str -> float, optional
        Label -> y value of a dotted horizontal reference line (black, then greys; a label starting
        with ``_`` stays out of the legend).
    xlabel, ylabel, title : str
        Axis labels (symbols and units) and title (put the metric here).
    logy : bool
        Logarithmic y axis.
    styles : dict of str -> dict, optional
        Label -> extra keyword arguments for ``Axes.plot`` (e.g. ``{"ls": "--"}``, or ``key(value, method)``
        of a :class:`Key`, which keeps one colour per parameter value across panels).
    discrete : bool
        ``x`` is discrete (ranks, counts, cases): points drawn as markers, bands as error bars, ticks at
        the values of ``x``.
    labels : sequence of str, optional
        Tick labels of a discrete ``x`` (one per value, e.g. the cases compared).
    legend : {"right", "below"} or bool
        Where the legend goes, outside the data (True: right; False: none, e.g. when a :class:`Key` or a
        figure legend labels the curves).

    Returns
    -------
    Figure, or Path when ``path`` is given.
    """
    fig, (a,) = _axes(ax, 1, path is not None, panel_size=(6.0, 4.0))
    x = np.asarray(x, dtype=float)
    for i, (label, y) in enumerate(curves.items()):
        y = np.asarray(y, dtype=float)
        kw = {"color": f"C{i}", "lw": 1.4, **({"marker": MARKERS[i % len(MARKERS)], "ms": 5} if discrete else {}),
              **(styles or {}).get(label, {})}
        a.plot(x, y, label=label, **kw)
        if bands and label in bands:
            w = np.asarray(bands[label], dtype=float)
            if discrete:
                a.errorbar(x, y, yerr=w, fmt="none", ecolor=kw["color"], capsize=3, lw=1.0)
            else:
                a.fill_between(x, y - w, y + w, color=kw["color"], alpha=0.2, lw=0)
    for i, (label, y) in enumerate((refs or {}).items()):
        a.axhline(y, color=("k", "0.45", "0.7")[i % 3], ls=":", lw=1.2, label=label)
    if logy:
        a.set_yscale("log")
    a.set_xlabel(xlabel)
    a.set_ylabel(ylabel)
    a.set_title(title, fontsize=9)
    if discrete:
        discrete_axis(a, x, labels=labels)
    if legend:
        legend_outside(a, loc="right" if legend is True else legend)
    return save_figure(fig, path) if path is not None else fig


def sample_axis(ax, values, axis="x"):
    """A log axis of sample sizes ticked exactly at ``values`` (plain integers, no minor labels)."""
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator, ScalarFormatter
    a = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    a.set_major_locator(FixedLocator(sorted(set(values))))
    a.set_major_formatter(ScalarFormatter())
    a.set_minor_locator(NullLocator())
    a.set_minor_formatter(NullFormatter())
