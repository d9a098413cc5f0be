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

import dataclasses
import html
from collections.abc import Collection, Sequence
from typing import Any

from perfguide.measure.measurement import Measurement
from perfguide.report.format import (
    GLOSSARY,
    RERUN,
    format_interval,
    format_seconds,
    format_speedup,
    speedup_interval,
)
from perfguide.report.verdicts.ratios import in_common, ratio_interval


def html_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    caption: str = "",
    text_columns: Collection[int] = (0,),
) -> str:
    """A table in the site's style: the ``text_columns`` (by index) left-aligned text, the others
    right-aligned figures (the ``perfguide-comparison`` class of the site's CSS), scrolling inside
    itself on phones.

    >>> html_table(["variant", "time"], [["numpy", "1 µs"]])  # doctest: +ELLIPSIS
    '<table ...><th class="perfguide-text">variant</th><th>time</th>...<td>1 µs</td>...'
    """

    def cells(tag: str, row: Sequence[str]) -> str:
        return "".join(
            f'<{tag} class="perfguide-text">{_linked(cell)}</{tag}>'
            if i in text_columns
            else f"<{tag}>{_linked(cell)}</{tag}>"
            for i, cell in enumerate(row)
        )

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    caption = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return (
        f'<table class="table perfguide-comparison">{caption}<thead><tr>{cells("th", header)}'
        f"</tr></thead><tbody>{body}</tbody></table>"
    )


def _linked(cell: str) -> str:
    """A cell as HTML; a term the guide defines (a kind of interval) links to its definition.

    >>> _linked("rerun interval")
    '<a href="../../reading.html#rerun-interval">rerun interval</a>'
    """
    for term, href in GLOSSARY.items():
        if term in cell:
            return html.escape(cell).replace(term, f'<a href="{href}">{term}</a>')
    return html.escape(cell)


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The same table as text, for a terminal: columns padded to their widest cell, under a rule.

    >>> print(text_table(["variant", "time"], [["numpy", "1.00 µs"], ["eager", "25.0 µs"]]))
    variant  time
    -------  -------
    numpy    1.00 µs
    eager    25.0 µs
    """
    table = [list(header), *map(list, rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = [table[0], ["-" * w for w in widths], *table[1:]]
    return "\n".join("  ".join(map(str.ljust, line, widths)).rstrip() for line in lines)


@dataclasses.dataclass(frozen=True)
class Table:
    """A captioned table of text cells, shown as HTML on a page and as text in a terminal."""

    caption: str
    header: Sequence[str]
    rows: Sequence[Sequence[str]]

    def __str__(self) -> str:
        return f"{self.caption}\n{text_table(self.header, self.rows)}"

    def _repr_html_(self) -> str:
        return html_table(self.header, self.rows, self.caption)


@dataclasses.dataclass(frozen=True)
class Collapsed:
    """Anything a page shows (a table, a claim report), collapsed under a one-line ``summary``
    that a reader opens to see it: for what supports a page rather than answers its question,
    so that the page stays short. A terminal shows it whole.

    >>> print(Collapsed("Every path, in full", Table("Times", ["path"], [["eager"]])))
    Every path, in full
    Times
    path
    -----
    eager
    >>> Collapsed("More", Table("", ["a"], []))._repr_html_()[:60]
    '<details class="perfguide-collapsed"><summary>More</summary>'
    """

    summary: str
    shown: Any

    def __str__(self) -> str:
        return f"{self.summary}\n{self.shown}"

    def _repr_html_(self) -> str:
        return (
            f'<details class="perfguide-collapsed"><summary>{html.escape(self.summary)}'
            f"</summary>{self.shown._repr_html_()}</details>"
        )


@dataclasses.dataclass(frozen=True)
class Stacked:
    """Several things a page shows (tables, comparisons), one below the other, as one value: a
    notebook cell displays only its last.

    >>> print(Stacked([Table("A", ["x"], [["1"]]), Table("B", ["y"], [])]))
    A
    x
    -
    1
    <BLANKLINE>
    B
    y
    -
    """

    shown: Sequence[Any]

    def __str__(self) -> str:
        return "\n\n".join(map(str, self.shown))

    def _repr_html_(self) -> str:
        return "".join(item._repr_html_() for item in self.shown)


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


def by_size(measurements: Sequence[Measurement]) -> dict[int, list[Measurement]]:
    """The measurements of a sweep by problem size, smallest first (:func:`at_size` of each).

    >>> ms = [Measurement("a", "call", 1, 1, 0.0, (1.0,) * 5, size=size) for size in (8, 1)]
    >>> {size: len(at) for size, at in by_size(ms).items()}
    {1: 1, 8: 1}
    """
    return {size: at_size(measurements, size) for size in sorted({m.size for m in measurements})}


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
