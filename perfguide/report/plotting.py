"""Plots of measurements with labelled axes, units and spreads; noisy results are hatched."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.ticker import EngFormatter

from perfguide.measure.timer import Measurement


def _axes(ax: Axes | None) -> Axes:
    return ax if ax is not None else plt.figure(layout="constrained").add_subplot()


def _iqr_whiskers(measurements: Sequence[Measurement]) -> list[list[float]]:
    """Distances from each median down to Q1 and up to Q3, as matplotlib's xerr/yerr want."""
    quartiles = [m.quartiles_s for m in measurements]
    return [
        [median - q1 for q1, median, _ in quartiles],
        [q3 - median for _, median, q3 in quartiles],
    ]


def bar_chart(measurements: Sequence[Measurement], ax: Axes | None = None) -> Axes:
    """Horizontal bars of median time per unit (log scale) with IQR whiskers, fastest at the top."""
    ax = _axes(ax)
    ordered = sorted(measurements, key=lambda m: m.median_s, reverse=True)
    bars = ax.barh(
        [m.label for m in ordered],
        [m.median_s for m in ordered],
        xerr=_iqr_whiskers(ordered),
        color="tab:blue",
        capsize=3,
    )
    for bar, m in zip(bars, ordered, strict=True):
        if m.noisy:
            bar.set_hatch("//")
            bar.set_label("noisy (IQR > 10 % of median)")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(EngFormatter(unit="s"))
    ax.set_xlabel(f"time per {ordered[0].unit} (median, log scale; whiskers: IQR)")
    if any(m.noisy for m in ordered):
        # One legend entry for all hatched bars.
        handles, labels = ax.get_legend_handles_labels()
        ax.legend(handles[:1], labels[:1], loc="upper right")
    return ax


def scaling_plot(
    measurements: Sequence[Measurement], size_name: str, ax: Axes | None = None
) -> Axes:
    """Time per unit against problem size, one line per variant, log-log with IQR error bars."""
    ax = _axes(ax)
    for label in dict.fromkeys(m.label for m in measurements):
        series = sorted((m for m in measurements if m.label == label), key=lambda m: m.size)
        ax.errorbar(
            [m.size for m in series],
            [m.median_s for m in series],
            yerr=_iqr_whiskers(series),
            marker="o",
            capsize=3,
            label=label,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(EngFormatter(unit="s"))
    ax.set_xlabel(f"problem size ({size_name}, log scale)")
    ax.set_ylabel(f"time per {measurements[0].unit} (median, log scale)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    return ax
