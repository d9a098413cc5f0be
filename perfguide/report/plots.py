"""Plots of measurements: labelled axes with units, spreads as whiskers, one tick format per
axis, legends beside the data rather than on it, and the machine's limits drawn as lines.

Times span orders of magnitude, so they go on log axes, and a log axis has no natural zero: the
plots mark medians with dots (a bar's length would depend on where the axis happens to start).
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm
from matplotlib.ticker import (
    EngFormatter,
    FuncFormatter,
    LogLocator,
    MaxNLocator,
    NullFormatter,
)

from perfguide.measure.limits import MachineLimits
from perfguide.measure.measurement import Measurement
from perfguide.measure.memory import Peaks
from perfguide.report.format import RERUN, format_factor, format_seconds

#: Characters in a line of an axis label, past which it wraps (a 6.4-inch figure's width).
LABEL_CHARS = 60


def _axes(ax: Axes | None) -> Axes:
    return ax if ax is not None else plt.figure(layout="constrained").add_subplot()


def _one_format(axis, formatter) -> None:
    """Label major ticks with ``formatter`` and leave minor ticks unlabelled."""
    axis.set_major_formatter(formatter)
    axis.set_minor_formatter(NullFormatter())


def _short_log_y(ax: Axes) -> None:
    """Label 1, 2 and 5 of each decade of a log y axis that spans under two decades, where one
    decade's label alone would leave it unreadable."""
    low, high = ax.get_ylim()
    if high / low < 100:
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))


def _legend_below(ax: Axes) -> None:
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=2, frameon=False)


def _whiskers(values: Sequence[float], measurements: Sequence[Measurement], scale=None):
    """Distances from each plotted value down and up to the ends of its median's 95 % rerun interval
    (``scale`` maps a time to the plotted quantity, which may reverse the order, as a rate
    does)."""
    scale = scale or (lambda m, seconds: seconds)
    ends = [sorted(scale(m, end) for end in m.interval_s) for m in measurements]
    return [
        [value - low for value, (low, _) in zip(values, ends, strict=True)],
        [high - value for value, (_, high) in zip(values, ends, strict=True)],
    ]


def dot_plot(measurements: Sequence[Measurement], ax: Axes | None = None) -> Axes:
    """Median time per unit of each variant as a dot with whiskers spanning where a rerun lands
    (its 95 % interval) on a log axis, fastest at the top; noisy results are drawn hollow."""
    ax = _axes(ax)
    ordered = sorted(measurements, key=lambda m: m.median_s, reverse=True)
    medians = [m.median_s for m in ordered]
    labels = [m.label for m in ordered]
    ax.errorbar(medians, labels, xerr=_whiskers(medians, ordered), fmt="none", ecolor="tab:blue")
    for m in ordered:
        ax.plot(
            m.median_s,
            m.label,
            "o",
            color="tab:blue",
            markerfacecolor="white" if m.noisy else "tab:blue",
        )
    ax.set_xscale("log")
    _one_format(ax.xaxis, EngFormatter(unit="s"))
    ax.grid(True, axis="x", which="major", alpha=0.3)
    lines = [f"time per {ordered[0].unit} (median, log scale; whiskers: its {RERUN})"]
    if any(m.noisy for m in ordered):
        lines.append("hollow: noisy (its processes spread more than this machine's usually do)")
    # Wrapped: a long unit ("training step") beside long labels runs past the figure's edge.
    ax.set_xlabel("\n".join(textwrap.fill(line, LABEL_CHARS) for line in lines))
    ax.margins(y=0.15)
    return ax


def _series(measurements: Sequence[Measurement]) -> dict[str, list[Measurement]]:
    """Measurements per variant, each sorted by size."""
    labels = dict.fromkeys(m.label for m in measurements)
    return {
        label: sorted((m for m in measurements if m.label == label), key=lambda m: m.size)
        for label in labels
    }


def _against_size(ax: Axes, size_name: str, unit: str, y_label: str, short_y: bool = False) -> Axes:
    """Log-log axes of a quantity in ``unit`` against problem size, labelled, with the legend
    below (``short_y``: a y axis spanning under two decades labels 1, 2 and 5 of each)."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    _one_format(ax.xaxis, EngFormatter())
    _one_format(ax.yaxis, EngFormatter(unit=unit))
    if short_y:
        _short_log_y(ax)
    ax.set_xlabel(f"problem size ({size_name}, log scale)")
    ax.set_ylabel(y_label)
    ax.grid(True, which="major", alpha=0.3)
    _legend_below(ax)
    return ax


def scaling_plot(
    measurements: Sequence[Measurement], size_name: str, ax: Axes | None = None
) -> Axes:
    """Time per unit against problem size, one line per variant, log-log, whiskers spanning each
    median's 95 % rerun interval."""
    ax = _axes(ax)
    for label, series in _series(measurements).items():
        medians = [m.median_s for m in series]
        ax.errorbar(
            [m.size for m in series],
            medians,
            yerr=_whiskers(medians, series),
            marker="o",
            capsize=3,
            label=label,
        )
    y_label = f"time per {measurements[0].unit} (median, log scale)"
    return _against_size(ax, size_name, "s", y_label)


@dataclasses.dataclass(frozen=True)
class Limit:
    """A rate the machine allows, drawn as a line: the rate, its name in the legend, its unit
    ("B/s", "FLOP/s")."""

    rate: float
    label: str
    unit: str


def peak_limit(machine: MachineLimits) -> Limit:
    """The machine's measured peak of float32 arithmetic."""
    return Limit(machine.peak_flops, "peak float32 (measured)", "FLOP/s")


def bandwidth_limit(machine: MachineLimits) -> Limit:
    """The machine's measured memory bandwidth (read + write)."""
    return Limit(machine.memory_bandwidth, "memory bandwidth (measured)", "B/s")


def _rate(work: Callable[[Measurement], float]) -> Callable[[Measurement, float], float]:
    """Work per second of a measurement's unit taking ``seconds``."""
    return lambda m, seconds: work(m) / seconds


def rate_plot(
    measurements: Sequence[Measurement],
    size_name: str,
    work: Callable[[Measurement], float],
    limit: Limit,
    ax: Axes | None = None,
) -> Axes:
    """Work done per second against problem size, one line per variant, with the machine's limit
    for that work as a horizontal line: how far each variant is from what the hardware allows.
    ``work(m)`` is the work (bytes moved, floating-point operations) in one unit of ``m``, in
    the limit's unit.
    """
    ax = _axes(ax)
    rate = _rate(work)

    for label, series in _series(measurements).items():
        rates = [rate(m, m.median_s) for m in series]
        ax.errorbar(
            [m.size for m in series],
            rates,
            yerr=_whiskers(rates, series, rate),
            marker="o",
            capsize=3,
            label=label,
        )
    ax.axhline(limit.rate, color="black", linestyle="--", label=limit.label)
    y_label = f"{limit.unit} achieved (median, log scale)"
    return _against_size(ax, size_name, limit.unit, y_label, short_y=True)


def rate_bars(
    measurements: Sequence[Measurement],
    work: Callable[[Measurement], float],
    limit: Limit,
    ax: Axes | None = None,
) -> Axes:
    """Work done per second by each variant as a bar on a linear axis from zero (so lengths
    compare), fastest at the top, whiskers spanning each median's 95 % rerun interval, the machine's
    limit as a vertical line and each bar's share of that limit written beside it."""
    ax = _axes(ax)
    rate = _rate(work)
    ordered = sorted(measurements, key=lambda m: rate(m, m.median_s))
    rates = [rate(m, m.median_s) for m in ordered]
    labels = [m.label for m in ordered]
    ax.barh(labels, rates, color="tab:blue", alpha=0.8)
    ax.errorbar(rates, labels, xerr=_whiskers(rates, ordered, rate), fmt="none", ecolor="k")
    for label, value in zip(labels, rates, strict=True):
        # Inside the bar's end, where neither the whisker nor the limit's line runs.
        ax.annotate(
            f"{value / limit.rate:.0%}",
            (value, label),
            xytext=(-6, 0),
            textcoords="offset points",
            va="center",
            ha="right",
            color="white",
            fontsize="small",
        )
    ax.axvline(limit.rate, color="black", linestyle="--", label=limit.label)
    ax.set_xlim(0, 1.25 * max(limit.rate, *rates))
    ax.xaxis.set_major_locator(MaxNLocator(4))  # room for each tick's label
    _one_format(ax.xaxis, EngFormatter(unit=limit.unit))
    ax.set_xlabel(f"{limit.unit} (median; whiskers: its {RERUN})\n% : share of the {limit.label}")
    ax.grid(True, axis="x", alpha=0.3)
    _legend_below(ax)
    return ax


def heatmap(
    columns: Mapping[str, Sequence[Measurement]], rows: Sequence[str], ax: Axes | None = None
) -> Axes:
    """Each variant (a row) in each setting (a column): coloured by how many times the column's
    fastest time it takes (a log colour scale from 1x), written as its time per unit and that
    factor. A variant a column did not measure is left blank."""
    ax = _axes(ax)
    factors = np.full((len(rows), len(columns)), np.nan)
    for j, measurements in enumerate(columns.values()):
        fastest = min(m.median_s for m in measurements)
        for m in measurements:
            i = rows.index(m.label)
            factors[i, j] = m.median_s / fastest
            dark = factors[i, j] > math.sqrt(np.nanmax(factors))
            ax.text(
                j,
                i,
                f"{format_seconds(m.median_s)}\n{format_factor(factors[i, j])}",
                ha="center",
                va="center",
                fontsize="small",
                color="white" if dark else "black",
            )
    image = ax.imshow(
        np.ma.masked_invalid(factors),
        cmap="Reds",
        norm=LogNorm(vmin=1, vmax=max(2.0, np.nanmax(factors))),
        aspect="auto",
    )
    # Wrapped, so long column names stay apart at the figure's width.
    ax.set_xticks(range(len(columns)), [textwrap.fill(name, 18) for name in columns])
    ax.set_yticks(range(len(rows)), list(rows))
    ax.tick_params(length=0)
    colorbar = ax.figure.colorbar(image, ax=ax)
    colorbar.set_label(f"time per {measurements[0].unit} / the column's fastest (log scale)")
    # The log locator also offers ticks below the scale's 1x; they are never drawn.
    factor_label = FuncFormatter(lambda value, _: format_factor(value) if value >= 1 else "")
    _one_format(colorbar.ax.yaxis, factor_label)
    return ax


def process_plot(measurements: Sequence[Measurement], ax: Axes | None = None) -> Axes:
    """Each process's median time over the median of all of them, one row per measurement: how
    far fresh processes of identical code land apart (1 is the published median)."""
    ax = _axes(ax)
    labels = [f"{m.workload}: {m.label}" for m in measurements]
    for label, m in zip(labels, measurements, strict=True):
        ratios = [s / m.median_s for s in m.process_median_s]
        ax.plot(ratios, [label] * len(ratios), "o", color="tab:blue", alpha=0.6)
    ax.axvline(1, color="black", linewidth=1)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:.2f}x"))
    ax.grid(True, axis="x", alpha=0.3)
    ax.invert_yaxis()
    ax.set_xlabel("each fresh process's median / the median of all processes")
    ax.margins(y=0.15)
    return ax


def timeline_plot(
    recordings: Mapping[str, Sequence[Sequence[float]]], ax: Axes | None = None
) -> Axes:
    """One recorded pass of a training loop per row, as the loop lived it: for each batch, the
    time it waited for the pipeline (from asking for the batch to getting it) and the time its
    step took. ``recordings`` maps a row's label to its batches' (asked, arrived, step ended)
    times, in seconds from the recording's start."""
    ax = _axes(ax)
    for row, events in enumerate(recordings.values()):
        waits = [(asked, arrived - asked) for asked, arrived, _ in events]
        steps = [(arrived, ended - arrived) for _, arrived, ended in events]
        first = row == 0  # one legend entry per kind of bar
        ax.broken_barh(
            waits,
            (row - 0.35, 0.7),
            color="tab:orange",
            label="waiting for input" if first else None,
        )
        ax.broken_barh(
            steps, (row - 0.35, 0.7), color="tab:blue", label="training step" if first else None
        )
    _legend_below(ax)
    ax.set_yticks(range(len(recordings)), list(recordings))
    ax.invert_yaxis()
    _one_format(ax.xaxis, EngFormatter(unit="s"))
    ax.set_xlabel("time from the start of the recording")
    ax.grid(True, axis="x", alpha=0.3)
    return ax


def resident_plot(series: Mapping[str, tuple[Sequence[int], int]], ax: Axes | None = None) -> Axes:
    """Memory a process holds beyond what it held before the first call, against calls, one
    line per label (``series``: label -> resident bytes sampled every so many calls)."""
    ax = _axes(ax)
    for label, (resident, every) in series.items():
        calls = np.arange(len(resident)) * every
        ax.plot(calls, (np.asarray(resident) - resident[0]) / 1e6, marker=".", label=label)
    ax.set_xlabel("calls")
    ax.set_ylabel("memory held beyond the start (MB)")
    ax.grid(True, alpha=0.3)
    _legend_below(ax)
    return ax


#: How each of a training step's peaks is drawn: its label and its line.
_PEAK_LINES = {
    "resident": ("process at peak", "-"),
    "tensors": ("tensors at peak", "--"),
    "activations": ("activations (shapes)", ":"),
}


def peak_plot(peaks: Mapping[str, Peaks], ax: Axes | None = None) -> Axes:
    """A training step's peak memory against batch size, a colour per policy: the process's
    peak resident set beyond what it held before training and its tensors' peak (medians over
    the processes), and the activations from the model's shapes."""
    ax = _axes(ax)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (label, p), colour in zip(peaks.items(), colours, strict=False):
        values = {
            "resident": p.at("resident"),
            "tensors": p.at("tensors"),
            "activations": [p.activations * batch for batch in p.batches],
        }
        for kind, (what, style) in _PEAK_LINES.items():
            ax.plot(
                p.batches,
                np.asarray(values[kind]) / 1e6,
                style,
                marker=".",
                color=colour,
                label=f"{label}: {what}",
            )
    ax.set_xlabel("examples in a batch")
    ax.set_ylabel("memory (MB)")
    ax.grid(True, alpha=0.3)
    _legend_below(ax)
    return ax


def projection_plot(
    projected: Mapping[str, Sequence[tuple[int, float]]],
    measured: Mapping[int, tuple[float, float, float]] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Projected speed-up against workers, log-log, one dashed line per network
    (``projected``: a label, and its workers and speed-ups in order of workers), the ideal speed-up
    dotted, and the ``measured`` speed-ups (by workers: the median and its interval's ends) as
    dots with whiskers: projections are drawn so that no one takes them for measurements."""
    ax = _axes(ax)
    workers = sorted({n for series in projected.values() for n, _ in series})
    ax.plot(workers, workers, ":", color="gray", label="ideal (speed-up = workers)")
    for label, series in projected.items():
        ax.plot(*zip(*series, strict=True), "--", label=label)
    if measured:
        counts = sorted(measured)
        medians = [measured[n][0] for n in counts]
        whiskers = [
            [median - measured[n][1] for n, median in zip(counts, medians, strict=True)],
            [measured[n][2] - median for n, median in zip(counts, medians, strict=True)],
        ]
        ax.errorbar(counts, medians, yerr=whiskers, fmt="o", color="black", capsize=3,
                    label="measured here (loopback)")  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    _one_format(ax.xaxis, FuncFormatter(lambda x, _: f"{x:g}"))
    _one_format(ax.yaxis, FuncFormatter(lambda y, _: f"{y:g}x"))
    ax.set_xlabel("workers (log scale; dashed: projected)")
    ax.set_ylabel("speed-up in examples a second (log scale)")
    ax.grid(True, which="major", alpha=0.3)
    _legend_below(ax)
    return ax
