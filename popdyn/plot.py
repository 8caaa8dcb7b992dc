"""Theory-vs-simulation figures: the only module of popdyn that imports matplotlib (lazily).

``plot_comparison`` draws a :class:`~popdyn.results.Comparison` (sklearn's Display pattern: the
comparison computes, this module draws); ``plot_curves`` draws named curves with optional bands and
reference lines, so that validation claims do not repeat matplotlib boilerplate. Every function
creates a figure only when ``ax`` is None, returns the ``Figure`` (or the saved path when ``path`` is
given) and closes the figure it saved. No ``plt.show()``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["plot_comparison", "plot_curves", "subplots", "save_figure", "sample_axis"]

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
    registered with pyplot, so no GUI backend is touched); otherwise ``pyplot.subplots``.
    """
    _matplotlib()
    if ax is None:
        size = (panel_size[0] * n, panel_size[1])
        if saving:
            from matplotlib.figure import Figure
            fig = Figure(figsize=size)
            axes = fig.subplots(1, n, squeeze=False)
        else:
            import matplotlib.pyplot as plt
            fig, axes = plt.subplots(1, n, figsize=size, squeeze=False)
        return fig, list(axes[0])
    axes = list(np.atleast_1d(ax).ravel())
    if len(axes) != n:
        raise ValueError(f"The 'ax' parameter must hold {n} axes (one per observable). Got {len(axes)} instead.")
    return axes[0].figure, axes


def subplots(n, *, saving=True, panel_size=(4.8, 3.4)):
    """A new figure with ``n`` panels in a row: ``(fig, [ax, ...])`` (for ``plot_curves(..., ax=ax)``)."""
    return _axes(None, n, saving, panel_size=panel_size)


def save_figure(fig, path):
    """Save ``fig`` as an image at ``path`` atomically (parent folders created), close it, return the ``Path``."""
    import matplotlib.pyplot as plt
    from .results import atomic_write
    path = Path(path)
    fmt = path.suffix.lstrip(".") or "png"
    try:
        atomic_write(path, lambda f: fig.savefig(f, format=fmt, dpi=110, bbox_inches="tight"))
    finally:
        plt.close(fig)
    return path


def _label(meta, name):
    """Axis label of ``name`` from ``meta['symbols']`` / ``meta['units']`` (``meta['t_unit']`` for t)."""
    symbol = (meta.get("symbols") or {}).get(name, name)
    unit = (meta.get("units") or {}).get(name, meta.get("t_unit") if name == "t" else None)
    return f"{symbol} [{unit}]" if unit else symbol


def _band(ax, x, mean, sd, *, width, color, label):
    ax.plot(x, mean, color=color, lw=1.4, label=label)
    ax.fill_between(x, mean - width * sd, mean + width * sd, color=color, alpha=0.25, lw=0,
                    label=f"$\\pm{width:g}$ SD")


def plot_comparison(comp, path=None, *, ax=None, observables=None):
    """Theory (line) over the simulation mean with a +- ``band_sd`` SD seed band, one panel per observable.

    Parameters
    ----------
    comp : Comparison
        From :func:`popdyn.compare`; its metrics go into each panel's title.
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
    fig, axes = _axes(ax, len(names), path is not None)
    meta = {**comp.prediction.meta, **comp.simulation.meta}
    for a, name in zip(axes, names):
        mean = np.asarray(comp.mean[name], dtype=float)
        x = comp.t if comp.t is not None and mean.ndim == 1 else np.arange(mean.shape[0] if mean.ndim else 1)
        n = comp.simulation.observables[name].shape[0]
        _band(a, x, np.atleast_1d(mean), np.atleast_1d(comp.sd[name]), width=comp.band_sd,
              color="C0", label=f"simulation mean ({n} seeds)")
        a.plot(x, np.atleast_1d(comp.theory[name]), color="C3", lw=1.4, ls="--", label="theory")
        m = comp.metrics[name]
        a.set_title(f"sup gap {m['sup_gap']:.3g}, in band {m['in_band']:.0%}, max z {m['max_z']:.3g}", fontsize=9)
        a.set_xlabel(_label(meta, "t") if comp.t is not None else "index")
        a.set_ylabel(_label(meta, name))
        a.legend(fontsize=8)
    return save_figure(fig, path) if path is not None else fig


def plot_curves(x, curves, path=None, *, ax=None, bands=None, refs=None, xlabel="", ylabel="",
                title="", logy=False, styles=None):
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
        Label -> y value of a dotted horizontal reference line.
    xlabel, ylabel, title : str
        Axis labels (symbols and units) and title (put the metric here).
    logy : bool
        Logarithmic y axis.
    styles : dict of str -> dict, optional
        Label -> extra keyword arguments for ``Axes.plot`` (e.g. ``{"ls": "--"}``).

    Returns
    -------
    Figure, or Path when ``path`` is given.
    """
    fig, (a,) = _axes(ax, 1, path is not None, panel_size=(6.0, 4.0))
    x = np.asarray(x, dtype=float)
    for i, (label, y) in enumerate(curves.items()):
        y = np.asarray(y, dtype=float)
        kw = {"color": f"C{i}", "lw": 1.4, **(styles or {}).get(label, {})}
        a.plot(x, y, label=label, **kw)
        if bands and label in bands:
            w = np.asarray(bands[label], dtype=float)
            a.fill_between(x, y - w, y + w, color=kw["color"], alpha=0.2, lw=0)
    for label, y in (refs or {}).items():
        a.axhline(y, color="k", ls=":", lw=1.0, label=label)
    if logy:
        a.set_yscale("log")
    a.set_xlabel(xlabel)
    a.set_ylabel(ylabel)
    a.set_title(title, fontsize=9)
    a.legend(fontsize=8)
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
