"""Set measurements side by side: a table in plain text (terminal) and HTML (the docs).

>>> from perfguide.measure.measurement import Measurement
>>> slow = Measurement("tf", "call", 1, 10, 0.5, (2e-3,) * 5)
>>> fast = Measurement("np", "call", 1, 10, 0.01, (5e-6,) * 5)
>>> print(Comparison([slow, fast], baseline="tf"))
variant  time per call  rerun interval     vs tf                              first-call overhead  flags
-------  -------------  -----------------  ---------------------------------  -------------------  -----
tf       2.00 ms        1.78 ms – 2.25 ms  baseline                           498 ms
np       5.00 µs        4.45 µs – 5.62 µs  400x faster (370x to 432x faster)  10.0 ms
"""  # noqa: E501 (a table as a terminal shows it)

from __future__ import annotations

from collections.abc import Sequence

from perfguide.measure.measurement import Measurement, pick
from perfguide.report.format import (
    RERUN,
    format_interval,
    format_seconds,
    format_speedup,
    speedup_interval,
)
from perfguide.report.tables.table import html_table, text_table
from perfguide.report.verdicts.ratios import in_common, ratio_interval


def speedups(measurements: Sequence[Measurement], baseline: str) -> dict[str, float]:
    """Baseline time over each variant's time (above 1 means faster than the baseline).

    >>> ms = [Measurement(name, "call", 1, 1, 0.0, (t,) * 5) for name, t in [("a", 2), ("b", 0.5)]]
    >>> speedups(ms, "a")
    {'a': 1.0, 'b': 4.0}
    """
    (base,) = pick(measurements, baseline)
    return {m.label: base.median_s / m.median_s for m in measurements}


def first_call_overhead(m: Measurement) -> str:
    """What the first call cost beyond a steady one; "< 1 call" when it cost no more."""
    return "< 1 call" if m.first_call_was_steady else format_seconds(m.first_call_overhead_s)


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
        # Where a rerun of the same code here lands: a prediction, not this run's spread.
        columns = ["variant", f"time per {self.unit}", RERUN]
        if self.baseline:
            columns.append(f"vs {self.baseline}")
        return [*columns, "first-call overhead", "flags"]

    def versus_baseline(self, m: Measurement) -> str:
        """``m``'s speed-up over the baseline with its rerun interval: process by process
        where the same processes timed both (the sharper figure), as claims judge it."""
        if m.label == self.baseline:
            return "baseline"
        (base,) = pick(self.measurements, self.baseline)
        ratio, low, high = ratio_interval(*in_common(base, m))
        return f"{format_speedup(ratio)} ({speedup_interval(low, high)})"

    def rows(self) -> list[list[str]]:
        rows = []
        for m in self.measurements:
            row = [m.label, format_seconds(m.median_s), format_interval(*m.interval_s)]
            if self.baseline:
                row.append(self.versus_baseline(m))
            rows.append([*row, first_call_overhead(m), " ".join(m.flags)])
        return rows

    def __str__(self) -> str:
        return text_table(self.header(), self.rows())

    def _repr_html_(self) -> str:
        return html_table(self.header(), self.rows())
