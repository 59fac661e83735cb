"""The benchmarks' plots for the course (``course/assets/``), drawn with matplotlib.

A benchmark script keeps one :class:`PlotPanel` per table it prints (:func:`speedups`) and,
at the end of a full run, hands them to :func:`write_course_plot`: one horizontal bar chart
per table, each bar a row's speed-up over the table's baseline row on a log scale, drawn
from the 1× line (right: faster than the baseline, left: slower), ours in orange.
``bench_buffers.py`` draws curves over problem sizes instead (:func:`write_sizes_plot`), and
``bench_mpi.py`` a fitted line and a model's predictions (:func:`write_cost_model_plot`).

Every plot is stamped with what its figures depend on: the CPU and its cores, the load
average when the run started and when it ended, the date, the versions of the libraries
measured, and the thread settings of the environment. The load matters most: on a 2-core
machine a busy neighbour slows the threaded rows.

matplotlib is a development dependency (``pip install -e ".[dev]"``). Without it a script
prints its tables as usual and says that the plot was skipped.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import io
import os
import platform
import re
import textwrap
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from common import Timing, numpy_blas  # benchmarks/common.py

if TYPE_CHECKING:  # matplotlib is optional: imported where a plot is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

ASSETS = Path(__file__).resolve().parent.parent / "course" / "assets"
OURS_COLOR, OTHER_COLOR, BASELINE_COLOR = "#dd8452", "#4c72b0", "#555555"
CURVE_COLORS = ["#4c72b0", "#55a868", "#c44e52", "#8172b3", "#937860"]  # others: no orange
LEGEND_HEIGHT, STAMP_LINE_HEIGHT = 0.35, 0.17  # inches, in the footer
STAMP_WIDTH = 110  # characters a line of the stamp, to fit the figure's width
FIGURE_WIDTH = 8.0  # inches; the course shows a plot about 700 pixels wide
DPI = 150
# Environment variables that change the BLAS's or the threads' speed: the stamp names those set.
THREAD_SETTINGS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_CORETYPE",
                   "NUMBA_NUM_THREADS")
INSTALL_HINT = 'pip install matplotlib, or pip install -e ".[dev]" at the repository root'

# Libraries whose version a plot names when one of its rows was measured with them: the
# prefix of the row's label, and the distribution to ask for the version.
MEASURED_WITH = {"JAX": "jax", "PyTorch": "torch"}


class PlotPanel(NamedTuple):
    """One table of a benchmark as a bar chart: each bar is a row's speed-up over
    ``baseline`` (the baseline's best time over the row's best)."""

    title: str
    baseline: str
    bars: list[tuple[str, float]]


class SizesPanel(NamedTuple):
    """One quantity measured at several problem sizes: a curve per variant."""

    title: str
    ylabel: str
    yscale: str  # "log", or "symlog" where a curve can be 0
    curves: dict[str, list[float]]


def speedups(title: str, timed: list[tuple[str, Timing | str]], baseline: str,
             skip: tuple[str, ...] = ("  ",)) -> PlotPanel:
    """Each timed row's speed-up over the baseline row (baseline best / row best): the first
    row whose name starts with ``baseline``. Rows whose name starts with one of ``skip``
    (indented diagnostic rows, by default) and rows with a note instead of a time are left
    out, and so are the table's footnote marks ("(1)")."""
    base_name, base = next((name, t.best) for name, t in timed
                           if name.startswith(baseline) and isinstance(t, Timing))
    bars = [(_label(name), base / timing.best) for name, timing in timed
            if isinstance(timing, Timing) and not name.startswith(skip)]
    return PlotPanel(title, _label(base_name), bars)


def _label(row_name: str) -> str:
    return re.sub(r" \(\d\)$", "", row_name.strip())


# ------------------------------------------------------------------------------------------
# Writing a plot, or saying why not
# ------------------------------------------------------------------------------------------


def write_course_plot(panels: list[PlotPanel], name: str, title: str, ours: str,
                      load_at_start: float, note: str = "") -> None:
    """Draws a benchmark's speed-up panels to ``course/assets/NAME.png`` under ``title``, with
    the stamp of the run (``note`` adds to it), and prints where it went. Bars whose label
    starts with ``ours`` are orange."""
    plt = _pyplot()
    if plt is None:
        return
    labels = [label for panel in panels for label, _ in panel.bars]
    stamp = _stamp(load_at_start, labels, note)
    _save(plt, _speedup_figure(plt, panels, title, ours, stamp), name)


def write_sizes_plot(panels: list[SizesPanel], sizes_mb: list[float], name: str, title: str,
                     ours: str, load_at_start: float) -> None:
    """Draws curves over the output size in MB (log scale), one panel side by side per
    quantity, to ``course/assets/NAME.png``; curves whose label starts with ``ours`` are
    thick and orange."""
    plt = _pyplot()
    if plt is None:
        return
    stamp = _stamp(load_at_start, list(panels[0].curves))
    _save(plt, _sizes_figure(plt, panels, sizes_mb, title, ours, stamp), name)


def write_cost_model_plot(message_bytes: list[int], one_way_seconds: list[float],
                          fit: tuple[float, float],
                          collectives: dict[str, list[tuple[float, float]]], name: str,
                          title: str, load_at_start: float, note: str = "") -> None:
    """Draws a cost model against measurements to ``course/assets/NAME.png``, two panels side
    by side: the ping-pong's one-way time against the message size with the fitted line
    α + n β (``fit`` is (α, β): seconds, seconds per byte), and each collective's
    (predicted, measured) seconds, a point per size, against the line where they are equal.
    Both on log scales, the model in orange."""
    plt = _pyplot()
    if plt is None:
        return
    stamp = _stamp(load_at_start, list(collectives), note)
    fig, axes = plt.subplot_mosaic([["fit", "model"], ["footer", "footer"]],
                                   layout="constrained",
                                   figsize=(FIGURE_WIDTH, 4.2 + _footer_height(stamp, 2)),
                                   height_ratios=[4.2, _footer_height(stamp, 2)])
    _alpha_beta_axes(axes["fit"], message_bytes, one_way_seconds, fit)
    _predicted_axes(axes["model"], collectives)
    fig.suptitle(textwrap.fill(title, 75), fontsize=12, fontweight="bold")
    _footer(axes["footer"], axes["model"].get_legend_handles_labels()[0], stamp)
    _save(plt, fig, name)


def _pyplot() -> ModuleType | None:
    """matplotlib's pyplot on the Agg backend (files only, no display); None, after saying
    so, where matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        print(f"\nplot skipped: matplotlib is not installed ({INSTALL_HINT})")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 10.5, "axes.titlesize": 11, "axes.titleweight": "bold",
                        "axes.prop_cycle": plt.cycler(color=CURVE_COLORS)})
    return plt


def _save(plt: ModuleType, fig: Figure, name: str) -> None:
    """Writes the figure as a PNG of 256 colours: flat colours and text lose nothing, and
    the file is a third of a full-colour one's size (each redrawn plot stays in git)."""
    from PIL import Image  # Pillow: a dependency of matplotlib

    rendered = io.BytesIO()
    fig.savefig(rendered, dpi=DPI)
    plt.close(fig)
    path = ASSETS / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    with Image.open(rendered) as image:
        image.convert("RGB").quantize(256, dither=Image.Dither.NONE).save(path, optimize=True)
    print(f"\nplot: {path} (matplotlib {importlib.metadata.version('matplotlib')})")


# ------------------------------------------------------------------------------------------
# The stamp: where and when the figures were measured
# ------------------------------------------------------------------------------------------


def _stamp(load_at_start: float, labels: list[str], note: str = "") -> str:
    """Two or three lines: machine, date and load; versions and thread settings; the
    script's note."""
    load_now = os.getloadavg()[0]
    today = datetime.date.today().isoformat()
    when = (f"measured on {cpu_model()}, {os.cpu_count()} cores, {today}: "
            f"1-minute load average {load_at_start:.2f} at the start of the run, "
            f"{load_now:.2f} at its end")
    versions = [f"Python {platform.python_version()}",
                f"NumPy {_version('numpy')} ({numpy_blas()})", f"Numba {_version('numba')}"]
    versions += [f"{prefix} {_version(dist)}" for prefix, dist in MEASURED_WITH.items()
                 if any(label.startswith(prefix) for label in labels)]
    versions += [f"{name}={os.environ[name]}" for name in THREAD_SETTINGS if name in os.environ]
    lines = [when, ", ".join(versions)]
    if note:
        lines.append(note)
    return "\n".join(textwrap.fill(line, STAMP_WIDTH) for line in lines)


def cpu_model() -> str:
    """The processor's model name, as Linux's /proc/cpuinfo gives it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


# ------------------------------------------------------------------------------------------
# Drawing
# ------------------------------------------------------------------------------------------


def _speedup_figure(plt: ModuleType, panels: list[PlotPanel], title: str, ours: str,
                    stamp: str) -> Figure:
    """One panel under another, each as tall as its bars need; under them, the footer."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    heights = [0.75 + 0.3 * len(panel.bars) for panel in panels] + [_footer_height(stamp)]
    fig, axes = plt.subplots(len(heights), 1, squeeze=False, layout="constrained",
                             figsize=(FIGURE_WIDTH, sum(heights) + 1.0),
                             gridspec_kw={"height_ratios": heights})
    for ax, panel in zip(axes[:, 0], panels):
        _speedup_axes(ax, panel, ours)
    fig.suptitle(title, fontsize=12, fontweight="bold")
    _footer(axes[-1, 0], [Patch(color=OURS_COLOR, label="ours"),
                          Patch(color=OTHER_COLOR, label="others"),
                          Line2D([], [], color=BASELINE_COLOR, linestyle="--",
                                 label="1×: as fast as the panel's baseline")], stamp)
    return fig


def _footer_height(stamp: str, legend_rows: int = 1) -> float:
    return LEGEND_HEIGHT * legend_rows + STAMP_LINE_HEIGHT * (stamp.count("\n") + 1) + 0.2


def _footer(ax: Axes, handles: list[Any], stamp: str, legend_columns: int = 3) -> None:
    """The figure's last row, an axes of its own so that the layout keeps it clear of the
    panels: the legend on top, the stamp below, centred on the figure."""
    from matplotlib.transforms import blended_transform_factory

    ax.axis("off")
    ax.legend(handles=handles, loc="upper center", ncols=legend_columns, frameon=False)
    text = ax.text(0.5, 0.0, stamp, fontsize=9, color="#444444", ha="center", va="bottom",
                   transform=blended_transform_factory(ax.figure.transFigure, ax.transAxes))
    text.set_in_layout(False)  # as wide as the figure, wider than the axes: not to squeeze them


def _speedup_axes(ax: Axes, panel: PlotPanel, ours: str) -> None:
    """Bars from 1× to each speed-up, on a log axis: equal lengths are equal ratios, faster
    to the right of the 1× line, slower to its left."""
    labels = [label for label, _ in panel.bars]
    values = [value for _, value in panel.bars]
    span = (min(1.0, *values), max(1.0, *values))
    room = (span[1] / span[0]) ** 0.1  # the value labels take more decades on a wider axis
    colors = [OURS_COLOR if label.startswith(ours) else OTHER_COLOR for label in labels]
    rows = range(len(values))
    ax.set_xscale("log")
    bars = ax.barh(rows, [v - 1.0 for v in values], left=1.0, color=colors, height=0.65)
    ax.bar_label(bars, labels=[_times(v, label == panel.baseline)
                               for label, v in panel.bars], padding=4, fontsize=9.5)
    ax.axvline(1.0, color=BASELINE_COLOR, linestyle="--", linewidth=1)
    ax.set_yticks(rows, labels)
    ax.invert_yaxis()
    ax.set_xlim(span[0] / (2.5 * room), span[1] * 3.5 * room)  # the labels on either side
    _ratio_ticks(ax, span)
    ax.set_title(textwrap.fill(panel.title, 50), loc="left")
    ax.set_xlabel(f"speed-up over {panel.baseline}: higher is faster, log scale")
    ax.grid(axis="x", alpha=0.3)


def _times(value: float, is_baseline: bool) -> str:
    """``7265×``, ``18.8×``, ``0.78×``; the baseline's bar says what it is."""
    if is_baseline:
        return "1× (baseline)"
    if value >= 100:
        return f"{value:,.0f}×"
    if value >= 10:
        return f"{value:.1f}×"
    return f"{value:.2f}×"


def _ratio_ticks(ax: Axes, span: tuple[float, float]) -> None:
    """Ticks at 1, 2, 5 times powers of ten where the ratios span little, at powers of ten
    where they span decades; written ``0.5×``, ``1×``, ``100×``."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    subs = (1.0,) if span[1] / span[0] > 200 else (1.0, 2.0, 5.0)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}×"))


def _sizes_figure(plt: ModuleType, panels: list[SizesPanel], sizes_mb: list[float],
                  title: str, ours: str, stamp: str) -> Figure:
    """Panels side by side; under them, the legend of every panel and the stamp."""
    names = [str(i) for i in range(len(panels))]
    legend_columns = 2
    footer = _footer_height(stamp, legend_rows=-(-len(panels[0].curves) // legend_columns))
    fig, axes = plt.subplot_mosaic([names, ["footer"] * len(panels)], layout="constrained",
                                   figsize=(FIGURE_WIDTH, 4.0 + footer),
                                   height_ratios=[4.0, footer])
    for name, panel in zip(names, panels):
        _sizes_axes(axes[name], panel, sizes_mb, ours)
    fig.suptitle(title, fontsize=12, fontweight="bold")
    _footer(axes["footer"], axes[names[0]].get_legend_handles_labels()[0], stamp,
            legend_columns)
    return fig


def _sizes_axes(ax: Axes, panel: SizesPanel, sizes_mb: list[float], ours: str) -> None:
    """A curve per variant over the sizes, both axes on log scales, ticks at the sizes."""
    from matplotlib.ticker import FuncFormatter, NullLocator

    for label, values in panel.curves.items():
        mine = label.startswith(ours)
        ax.plot(sizes_mb, values, marker="o", label=label, linewidth=2.8 if mine else 1.5,
                color=OURS_COLOR if mine else None, zorder=3 if mine else 2)
    ax.set_xscale("log")
    if panel.yscale == "symlog":
        ax.set_yscale("symlog", linthresh=1.0)  # linear from 0 to 1, so that 0 shows
        ax.set_ylim(bottom=0)
    else:
        ax.set_yscale(panel.yscale)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.set_xticks(sizes_mb, [f"{mb:.0f}" for mb in sizes_mb])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set(title=panel.title, ylabel=panel.ylabel, xlabel="output size, MB (log scale)")
    ax.grid(alpha=0.3)


def _alpha_beta_axes(ax: Axes, message_bytes: list[int], seconds: list[float],
                     fit: tuple[float, float]) -> None:
    """The measured one-way times as points, the fitted α + n β as a line (µs, log-log)."""
    import numpy as np
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    alpha, beta = fit
    line = np.geomspace(min(message_bytes), max(message_bytes), 200)
    ax.plot(message_bytes, [t * 1e6 for t in seconds], "o", color=OTHER_COLOR,
            label="measured, one way")
    ax.plot(line, (alpha + line * beta) * 1e6, color=OURS_COLOR, linewidth=2.2,
            label=f"α + n β: {alpha * 1e6:.2g} µs, {1 / beta / 1e9:.3g} GB/s")
    ax.set(xscale="log", yscale="log", title="ping-pong, ranks 0 and 1",
           xlabel="message size n (log scale)", ylabel="time, µs (log scale)")
    ax.xaxis.set_major_locator(LogLocator(base=16))  # 16 B, 256 B, 4 kB, ...: round sizes
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _bytes_label(x)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.legend(loc="upper left", fontsize=9)
    ax.grid(alpha=0.3)


def _predicted_axes(ax: Axes, collectives: dict[str, list[tuple[float, float]]]) -> None:
    """Each collective's measured time against the model's, a line through its sizes; the
    dashed diagonal is measured = predicted (above it: slower than the model)."""
    from matplotlib.ticker import FuncFormatter

    everything = [t * 1e6 for points in collectives.values() for point in points for t in point]
    span = (min(everything) / 2, max(everything) * 2)
    ax.plot(span, span, color=BASELINE_COLOR, linestyle="--", linewidth=1,
            label="measured = predicted")
    for label, points in collectives.items():
        predicted, measured = zip(*sorted(points))
        ax.plot([t * 1e6 for t in predicted], [t * 1e6 for t in measured], marker="o",
                label=label)
    ax.set(xscale="log", yscale="log", xlim=span, ylim=span, aspect="equal",
           title="collectives, against the model",
           xlabel="predicted, µs (log scale)", ylabel="measured, µs (log scale)")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda t, _: f"{t:g}"))
    ax.grid(alpha=0.3)


def _bytes_label(nbytes: float) -> str:
    """``8 B``, ``1 kB``, ``64 MB``: bytes in powers of 1024."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes:g} B"
