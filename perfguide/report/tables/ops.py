"""Which ops took the time: the top ops of a profiler trace (read by
:mod:`perfguide.measure.profile`) as a table, text or HTML."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from perfguide.measure.profile import Grouping, OpTime, events_per_call, op_events, op_times
from perfguide.report.format import format_count, format_percent, format_seconds
from perfguide.report.tables.table import html_table, text_table


class OpTable:
    """The ``top`` ops of a trace by self time, as text and as an HTML table; the ops beyond the
    top are summed in one last row, so the shares add up to 100 %."""

    def __init__(self, times: Sequence[OpTime], top: int = 10, by: Grouping = "type"):
        if not times:
            raise ValueError("no TensorFlow ops in the trace: nothing to show")
        self.times, self.top, self.by = list(times), top, by
        #: The op times of each traced call, where the table was read from a trace.
        self.calls: list[list[OpTime]] = []

    @classmethod
    def from_trace(cls, path: str | os.PathLike, top: int = 10, by: Grouping = "type") -> OpTable:
        table = cls(op_times(op_events(path), by), top, by)
        table.calls = [op_times(events, by) for events in events_per_call(path) if events]
        return table

    def share(self, matches: Callable[[str], bool]) -> float:
        """The share of op time in the ops whose type (or name) ``matches``."""
        return sum(t.share for t in self.times if matches(t.op))

    def share_per_call(self, matches: Callable[[str], bool]) -> tuple[float, ...]:
        """:meth:`share` in each traced call: how much it moves from call to call."""
        return tuple(sum(t.share for t in times if matches(t.op)) for times in self.calls)

    def header(self) -> list[str]:
        return [f"op {self.by}", "count", "self time", "per run", "share of op time"]

    def _row(self, label: str, times: Sequence[OpTime]) -> list[str]:
        """One row for ``times`` summed (one op, or the ops beyond the top)."""
        count = sum(t.count for t in times)
        self_s = sum(t.self_s for t in times)
        return [
            label,
            format_count(count),
            format_seconds(self_s),
            format_seconds(self_s / count),
            format_percent(sum(t.share for t in times)),
        ]

    def rows(self) -> list[list[str]]:
        rows = [self._row(t.op, [t]) for t in self.times[: self.top]]
        if rest := self.times[self.top :]:
            rows.append(self._row(f"{len(rest)} other op {self.by}s", rest))
        return rows

    def __str__(self) -> str:
        return text_table(self.header(), self.rows())

    def _repr_html_(self) -> str:
        return html_table(self.header(), self.rows())
