"""Set measurements side by side: a table in plain text (terminal) and HTML (the docs).

>>> from perfguide.measure.timer import Measurement
>>> slow = Measurement("slow", "iteration", 1, 10, 0.5, (2e-3,) * 5)
>>> fast = Measurement("fast", "iteration", 1, 10, 0.01, (5e-6,) * 5)
>>> print(Comparison([slow, fast], baseline="slow"))
variant  time per iteration  spread (IQR)  speed-up vs slow  first-call overhead  flags
-------  ------------------  ------------  ----------------  -------------------  -----
slow     2.00 ms             0 ns          1.00x             498 ms
fast     5.00 µs             0 ns          400x              10.0 ms
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from perfguide.measure.timer import Measurement

_SCALES = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def format_seconds(seconds: float) -> str:
    """Three significant figures in the largest unit that keeps the number at least 1.

    >>> format_seconds(0.0123456), format_seconds(2.5e-7), format_seconds(0.0009996)
    ('12.3 ms', '250 ns', '1.00 ms')
    """
    seconds = float(f"{seconds:.3g}")  # round first, so 999.6 µs reads 1.00 ms, not 1000 µs
    scale, name = next(((s, n) for s, n in _SCALES if seconds >= s), _SCALES[-1])
    return f"{_three_figures(seconds / scale)} {name}"


def format_ratio(ratio: float) -> str:
    """A speed-up factor to three significant figures, e.g. ``'12.3x'``."""
    return f"{_three_figures(ratio)}x"


def _three_figures(value: float) -> str:
    if value == 0:
        return "0"
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:#.3g}".rstrip(".")


def pick(measurements: Sequence[Measurement], *labels: str) -> list[Measurement]:
    """The measurements labelled ``labels``, in that order; ValueError naming the labels there
    are if one is missing.

    >>> ms = [Measurement(name, "call", 1, 1, 0.0, (1.0,) * 5) for name in ("a", "b")]
    >>> [m.label for m in pick(ms, "b", "a")]
    ['b', 'a']
    """
    by_label = {m.label: m for m in measurements}
    missing = [label for label in labels if label not in by_label]
    if missing:
        raise ValueError(f"no measurement of {missing[0]!r} among {sorted(by_label)}")
    return [by_label[label] for label in labels]


def at_size(measurements: Sequence[Measurement], size: int) -> list[Measurement]:
    """The measurements taken at problem size ``size`` (from a sweep over sizes)."""
    return [m for m in measurements if m.size == size]


def speedups(measurements: Sequence[Measurement], baseline: str) -> dict[str, float]:
    """Baseline time over each variant's time (above 1 means faster than the baseline).

    >>> ms = [Measurement(name, "call", 1, 1, 0.0, (t,) * 5) for name, t in [("a", 2), ("b", 0.5)]]
    >>> speedups(ms, "a")
    {'a': 1.0, 'b': 4.0}
    """
    (base,) = pick(measurements, baseline)
    return {m.label: base.median_s / m.median_s for m in measurements}


class Comparison:
    """A table of measurements of one workload, optionally with speed-ups against a baseline."""

    def __init__(self, measurements: Sequence[Measurement], baseline: str | None = None):
        if not measurements:
            raise ValueError("nothing to compare: no measurements")
        units = {m.unit for m in measurements}
        if len(units) > 1:
            raise ValueError(f"cannot set times per {' and per '.join(sorted(units))} side by side")
        self.measurements = list(measurements)
        self.baseline = baseline
        self.unit = measurements[0].unit

    def header(self) -> list[str]:
        columns = ["variant", f"time per {self.unit}", "spread (IQR)"]
        if self.baseline:
            columns.append(f"speed-up vs {self.baseline}")
        return [*columns, "first-call overhead", "flags"]

    def rows(self) -> list[list[str]]:
        ratios = speedups(self.measurements, self.baseline) if self.baseline else {}
        rows = []
        for m in self.measurements:
            row = [m.label, format_seconds(m.median_s), format_seconds(m.iqr_s)]
            if self.baseline:
                row.append(format_ratio(ratios[m.label]))
            rows.append([*row, format_seconds(m.first_call_overhead_s), " ".join(m.flags)])
        return rows

    def __str__(self) -> str:
        table = [self.header(), *self.rows()]
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        lines = [self.header(), ["-" * w for w in widths], *self.rows()]
        return "\n".join(
            "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
            for line in lines
        )

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.header())
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
            for row in self.rows()
        )
        return (
            f'<table class="table perfguide-comparison"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>"
        )
