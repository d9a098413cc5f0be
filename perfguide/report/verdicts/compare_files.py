"""Results files side by side: the same measurements from other machines, devices or TensorFlow
releases, matched row by row and judged against the first file.

A row is one workload, variant and size (and device, unless devices are what is compared). Each
later file's time is set against the first file's: the ratio of medians, and a verdict on the
processes that timed them, since on these machines the process, not the block, is what varies
between two runs of the same code. A difference counts only where the ratio is beyond
:data:`MIN_EFFECT` and Welch's t-test on the processes' log medians finds the two sets apart,
p below :data:`SIGNIFICANCE` after the Benjamini-Hochberg correction over the table's rows: a
table of a hundred rows tested at p < 0.05 each would otherwise call about five of them by luck.
A file timed in one process (or a row of it) cannot be judged that way, and says so. Rows
missing from a file are listed, not dropped. A page's claims use a rerun interval instead
(:mod:`perfguide.report.verdicts.claims`): it predicts this machine's next run, calibrated on its
rebuilds, which two files from anywhere cannot be.

Rows can also move together. On a shared virtual machine the host's speed drifts over minutes
(memory bandwidth measured 31.6 and then 24.7 GB/s six minutes apart), and every process of a
later run shares the drift, so no number of processes inside one run can tell it from a change.
Under the table, each later file's :class:`Shift` says how far its rows moved together; where
that shift is clear, a second verdict column judges each row against it: which rows moved
beyond what all rows did. Whether the shift itself is the finding (another machine, another
release) or the host's drift (the same code, minutes apart) only the reader knows.

>>> from perfguide.measure.measurement import Measurement
>>> def timed(*medians):  # one block in each of three processes
...     return Measurement("numpy", "call", 1, 1, 0.0, medians, "w", 10,
...                        blocks_per_process=(1, 1, 1))
>>> a = Source("a.json", {"cpu_model": "CPU A", "tensorflow": "2.21.0"}, [timed(1.0, 1.1, 0.9)])
>>> b = Source("b.json", {"cpu_model": "CPU B", "tensorflow": "2.20.0"}, [timed(0.5, 0.52, 0.49)])
>>> print(SideBySide([a, b]))
A: a.json: CPU A, TensorFlow 2.21.0, cpu
B: b.json: CPU B, TensorFlow 2.20.0, cpu
workload  variant  size  device  A       B       B vs A        B verdict
--------  -------  ----  ------  ------  ------  ------------  ---------
w         numpy    10    cpu     1.00 s  500 ms  2.00x faster  faster
"""

from __future__ import annotations

import dataclasses
import functools
import os
import statistics
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from perfguide.measure.cpu import machine_name
from perfguide.measure.measurement import Measurement
from perfguide.measure.memory import Growth
from perfguide.report.format import format_count, format_seconds, format_speedup, three_figures
from perfguide.report.publishing import memory_results, results
from perfguide.report.tables.table import html_table, text_table

#: A ratio of medians within this factor is no clear difference, however sure the test is.
MIN_EFFECT = 1.1
#: The Welch test's p-value (on the processes' log medians) below which two rows count as apart.
SIGNIFICANCE = 0.05
FASTER, SLOWER, SAME, MISSING = "faster", "slower", "no clear difference", "missing"
ONE_PROCESS = "one process: cannot tell"
#: Fewer matched rows than this cannot bound the median row's ratio at 95 %.
SHIFT_MIN_ROWS = 6
#: Results files (or directories of them) a docs build sets beside its own, comma-separated.
COMPARE_WITH_ENV = "PERFGUIDE_COMPARE_WITH"


@dataclasses.dataclass(frozen=True)
class Source:
    """One results file: its name, its environment record and its measurements."""

    name: str
    environment: dict[str, Any]
    measurements: list[Measurement]
    #: The memory chapter's growth rates, by experiment and way, where a docs build has them.
    growth: dict[str, dict[str, Growth]] = dataclasses.field(default_factory=dict)
    #: The ratios its claims were judged on, each process's, by claim statement.
    per_process: dict[str, list[float]] = dataclasses.field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> Source:
        """A results file, or a directory of them (a docs build's ``measurements``) as one
        source; :class:`~perfguide.report.publishing.results.ResultsError` if it cannot be read
        as one."""
        path = Path(path)
        files = sorted(path.glob("*.json")) if path.is_dir() else [path]
        if not files:
            raise results.ResultsError(f"{path} holds no results files (*.json)")
        # The memory chapter's growth rates lie beside the times of a docs build.
        memory = [file for file in files if memory_results.holds_growth(file)]
        loaded = [results.load_results(file) for file in files if file not in memory]
        measurements = [m for _, ms in loaded for m in ms]
        if not measurements:
            raise results.ResultsError(f"{path} holds no measurements")
        rates = memory_results.load(memory[0]) if memory else {}
        ratios = {
            statement: values
            for file in files
            if file not in memory
            for statement, values in results.load_per_process(file).items()
        }
        return cls(str(path), loaded[0][0], measurements, rates, ratios)

    def describe(self) -> str:
        """Which machine, libraries, process-wide settings and devices the measurements came
        from."""
        env = self.environment
        cores = env.get("usable_cores")
        machine = env.get("cpu_model") or "unknown CPU"
        if cores:
            machine = machine_name(machine, cores, env.get("cpu_vector_flags", ()))
        gpus = env.get("gpus") or []
        devices = ", ".join(sorted({m.device for m in self.measurements}))
        parts = [machine, *(f"GPU {gpu}" for gpu in gpus)]
        libraries = ", ".join(
            f"{name} {env[key]}"
            for name, key in (("Keras", "keras"), ("NumPy", "numpy"))
            if env.get(key)
        )
        tensorflow = f"TensorFlow {env.get('tensorflow', 'unknown')}"
        parts.append(f"{tensorflow} ({libraries})" if libraries else tensorflow)
        # A setting read once per process (threads, oneDNN) is why two such files differ.
        settings = env.get("process_settings") or {}
        parts += [f"{key}={value}" for key, value in settings.items() if value != "unset"]
        parts.append(devices)
        return ", ".join(parts)


def _key_cells(key: tuple) -> list[str]:
    """A row's key as table cells: workload, variant, size (with separators; blank if none)
    and, where devices are matched, device.

    >>> _key_cells(("eager-add", "numpy", 10000, "cpu")), _key_cells(("w", "v", None))
    (['eager-add', 'numpy', '10,000', 'cpu'], ['w', 'v', ''])
    """
    size = "" if key[2] is None else format_count(key[2])
    return [key[0], key[1], size, *key[3:]]


def p_value(base: Measurement, other: Measurement, shift: float = 1.0) -> float | None:
    """Welch's two-sided t-test on the log of each process's median: how likely processes this
    far apart are if ``other`` measured the same thing as ``base`` times ``shift`` (None: a side
    has one process only).

    >>> m = Measurement("x", "call", 1, 1, 0.0, (1.0, 1.02, 0.98), blocks_per_process=(1, 1, 1))
    >>> slow = dataclasses.replace(m, block_s=tuple(2 * s for s in m.block_s))
    >>> p_value(m, slow) < 0.001, p_value(m, m)
    (True, 1.0)
    """
    if base.processes < 2 or other.processes < 2:
        return None
    a = np.log(base.process_median_s)
    b = np.log(other.process_median_s) - np.log(shift)
    if np.ptp(a) == np.ptp(b) == 0:  # no spread at all: apart exactly when they differ
        return 1.0 if a[0] == b[0] else 0.0
    return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


Pairs = Sequence[tuple[Measurement | None, Measurement | None]]


def verdicts(pairs: Pairs, shift: float = 1.0) -> list[str]:
    """Whether each ``(base, other)`` pair's ``other`` is faster, slower, not clearly different
    from ``base`` (times ``shift``: what all rows did), missing from either, or timed in too few
    processes to tell, the p-values corrected over all the pairs.

    >>> m = Measurement("x", "call", 1, 1, 0.0, (1.0, 1.02, 0.98), blocks_per_process=(1, 1, 1))
    >>> slow = dataclasses.replace(m, block_s=tuple(2 * s for s in m.block_s))
    >>> one = Measurement("x", "call", 1, 1, 0.0, (1.0, 1.02, 0.98))
    >>> verdicts([(m, slow), (slow, m), (m, m), (m, None), (one, one)])
    ['slower', 'faster', 'no clear difference', 'missing', 'one process: cannot tell']
    >>> verdicts([(m, slow)], shift=2.0)  # slower only as much as every row
    ['no clear difference']
    """
    tested = {
        i: p
        for i, (base, other) in enumerate(pairs)
        if base is not None and other is not None and (p := p_value(base, other, shift)) is not None
    }
    adjusted = (
        dict(zip(tested, stats.false_discovery_control(list(tested.values())), strict=True))
        if tested
        else {}
    )
    out = []
    for i, (base, other) in enumerate(pairs):
        if base is None or other is None:
            out.append(MISSING)
        elif i not in adjusted:
            out.append(ONE_PROCESS)
        else:
            ratio = base.median_s * shift / other.median_s
            apart = adjusted[i] < SIGNIFICANCE and max(ratio, 1 / ratio) >= MIN_EFFECT
            out.append((FASTER if ratio > 1 else SLOWER) if apart else SAME)
    return out


@dataclasses.dataclass(frozen=True)
class Shift:
    """How far one file's rows moved together against the first's: the median of the matched
    rows' time ratios (other over base), so that the few rows that really changed do not set it,
    and its distribution-free 95 % interval (from the order statistics, as for any median).

    >>> rows = [(1.0, 1.2), (2.0, 2.5), (1.0, 1.15), (3.0, 3.6), (1.0, 1.25), (1.0, 3.0)]
    >>> print(Shift.of(rows).describe("B", "A"))
    B vs A, the median of 6 rows: 1.22x slower (time ratio B/A within 1.15 – 3.00, 95 %)
    >>> Shift.of(rows[:5]) is None  # too few rows to tell
    True
    """

    ratio: float
    interval: tuple[float, float]
    rows: int

    @classmethod
    def of(cls, times: Sequence[tuple[float, float]]) -> Shift | None:
        """The shift of ``(base, other)`` medians, None below :data:`SHIFT_MIN_ROWS` rows."""
        if len(times) < SHIFT_MIN_ROWS:
            return None
        logs = np.log([other / base for base, other in times])
        low, high = stats.quantile_test(logs, q=0.0, p=0.5).confidence_interval(0.95)
        interval = (float(np.exp(low)), float(np.exp(high)))
        return cls(float(np.exp(np.median(logs))), interval, len(logs))

    @property
    def clear(self) -> bool:
        """Whether the rows surely moved together: the interval leaves out 1."""
        return self.interval[0] > 1 or self.interval[1] < 1

    def describe(self, letter: str, base: str) -> str:
        """One line: the shift as a reader says it, and the interval of the time ratio."""
        low, high = (three_figures(r) for r in self.interval)
        return (
            f"{letter} vs {base}, the median of {self.rows} rows: {format_speedup(1 / self.ratio)}"
            f" (time ratio {letter}/{base} within {low} – {high}, 95 %)"
        )


@dataclasses.dataclass
class Reruns:
    """A rerun's rows against the first run's: how many were called faster or slower (false
    alarms, which the test's level caps at about :data:`SIGNIFICANCE`), how many of its medians
    lie inside the first run's intervals (which promise 95 %), and those intervals' half-widths
    as shares of their medians (an interval can cover by being wider than the machine needs)."""

    letter: str
    apart: int
    inside: int
    half_widths: list[float]

    def line(self, first: str) -> str:
        n = len(self.half_widths)
        return (
            f"{self.letter} as a rerun of {first}: {self.apart} of {n} rows called faster or "
            f"slower ({self.apart / n:.0%} false alarms; each row tested at {SIGNIFICANCE:.0%}), "
            f"{self.inside} of {n} medians inside {first}'s 95 % rerun intervals "
            f"({self.inside / n:.0%}; their median half-width "
            f"{statistics.median(self.half_widths):.0%} of the median)"
        )


class SideBySide:
    """Rows of several sources' measurements, matched by workload, variant, size and (with
    ``match_device``) device; each later source judged against the first."""

    def __init__(self, sources: Sequence[Source], *, match_device: bool = True):
        if len(sources) < 2:
            raise ValueError(f"need at least two results files to compare, got {len(sources)}")
        if len(sources) > len(string.ascii_uppercase):
            raise ValueError(f"can compare at most {len(string.ascii_uppercase)} files at once")
        self.sources = list(sources)
        self.match_device = match_device
        self.letters = string.ascii_uppercase[: len(sources)]
        self.rows: dict[tuple, list[Measurement | None]] = {}
        for i, source in enumerate(self.sources):
            for m in source.measurements:
                row = self.rows.setdefault(self._key(m), [None] * len(sources))
                if row[i] is not None:
                    what = " ".join(str(part) for part in self._key(m))
                    raise ValueError(f"{source.name} holds {what} twice: match devices?")
                row[i] = m

    def _key(self, m: Measurement) -> tuple:
        key = (m.workload, m.label, m.size)
        return (*key, m.device) if self.match_device else key

    def legend(self) -> list[str]:
        """One line per source: its letter, its name and where it was measured."""
        return [
            f"{letter}: {source.name}: {source.describe()}"
            for letter, source in zip(self.letters, self.sources, strict=True)
        ]

    def _pairs(self, i: int) -> list[tuple[Measurement | None, Measurement | None]]:
        return [(found[0], found[i]) for found in self.rows.values()]

    @functools.cached_property
    def shifts(self) -> list[Shift | None]:
        """Each later source's :class:`Shift` against the first (None: too few matched rows)."""
        return [
            Shift.of([(a.median_s, b.median_s) for a, b in self._pairs(i) if a and b])
            for i in range(1, len(self.sources))
        ]

    def header(self) -> list[str]:
        columns = ["workload", "variant", "size"] + ["device"] * self.match_device
        columns.append(self.letters[0])
        for letter, shift in zip(self.letters[1:], self.shifts, strict=True):
            columns += [letter, f"{letter} vs {self.letters[0]}", f"{letter} verdict"]
            columns += [f"{letter} beyond shift"] * bool(shift and shift.clear)
        return columns

    def verdicts(self) -> dict[tuple, list[str]]:
        """Per row, the verdict columns in the header's order: each later source's against the
        first (see :func:`verdicts`; the correction runs over each source's rows) and, where that
        source's rows clearly moved together, against its shift as well."""
        columns = []
        for i, shift in enumerate(self.shifts, start=1):
            judged = [verdicts(self._pairs(i))]
            if shift and shift.clear:
                judged.append(verdicts(self._pairs(i), shift.ratio))
            columns += judged
        per_row = [list(row) for row in zip(*columns, strict=True)]
        return dict(zip(self.rows, per_row, strict=True))

    def table_rows(self, matched_only: bool = False) -> list[list[str]]:
        """The table's rows; with ``matched_only``, only rows every source has."""
        verdicts = self.verdicts()
        table = []
        for key, found in self.rows.items():
            if matched_only and None in found:
                continue
            row = _key_cells(key)
            row.append(_time(found[0]))
            judged = iter(verdicts[key])
            for other, shift in zip(found[1:], self.shifts, strict=True):
                ratio = (
                    format_speedup(found[0].median_s / other.median_s)
                    if found[0] is not None and other is not None
                    else ""
                )
                row += [_time(other), ratio, next(judged)]
                if shift and shift.clear:
                    row.append(next(judged))
            table.append(row)
        return table

    def shift_lines(self) -> list[str]:
        """A line per later source on how far all its rows moved together."""
        return [
            shift.describe(letter, self.letters[0])
            + ("; the last column judges each row against that" if shift.clear else "")
            for letter, shift in zip(self.letters[1:], self.shifts, strict=True)
            if shift is not None
        ]

    def reruns(self) -> list[Reruns]:
        """For files that are reruns of the same code on one machine (an A/A check): per later
        file, its rows matched with the first file's, the rows called faster or slower, and its
        medians inside the first file's intervals."""
        counted = []
        for i, letter in enumerate(self.letters[1:], start=1):
            pairs = [(a, b) for a, b in self._pairs(i) if a is not None and b is not None]
            counted.append(
                Reruns(
                    letter,
                    sum(v in (FASTER, SLOWER) for v in verdicts(pairs)) if pairs else 0,
                    sum(a.interval_s[0] <= b.median_s <= a.interval_s[1] for a, b in pairs),
                    [(a.interval_s[1] - a.interval_s[0]) / 2 / a.median_s for a, _ in pairs],
                )
            )
        return counted

    def rerun_lines(self) -> list[str]:
        """:meth:`reruns` as a line per later file that shares rows with the first."""
        return [counted.line(self.letters[0]) for counted in self.reruns() if counted.half_widths]

    def missing(self) -> list[str]:
        """A line per source that lacks rows another has: how many, and which first."""
        lines = []
        for i, letter in enumerate(self.letters):
            absent = [key for key, found in self.rows.items() if found[i] is None]
            if absent:
                first = " ".join(filter(None, _key_cells(absent[0])))
                more = ", …" if len(absent) > 1 else ""
                lines.append(
                    f"{letter} lacks {len(absent)} of {len(self.rows)} rows ({first}{more})"
                )
        return lines

    def __str__(self) -> str:
        table = text_table(self.header(), self.table_rows())
        lines = [*self.legend(), table, *self.shift_lines(), *self.missing()]
        return "\n".join(lines)

    def html(self, caption: str, matched_only: bool = False) -> str:
        """The table as HTML under ``caption``."""
        header = self.header()
        text = [
            i
            for i, name in enumerate(header)
            if name in ("workload", "variant", "device") or name.endswith(("verdict", "shift"))
        ]
        caption = "; ".join([caption, *self.shift_lines()]) if caption else ""
        return html_table(header, self.table_rows(matched_only), caption, text)

    def _repr_html_(self) -> str:
        return self.html("; ".join(self.legend()))


def _time(m: Measurement | None) -> str:
    return "—" if m is None else format_seconds(m.median_s)


def compare_with() -> list[str]:
    """The results files (or directories of them) named in ``$PERFGUIDE_COMPARE_WITH``,
    comma-separated, that a docs build sets beside its own measurements."""
    return [
        path.strip() for path in os.environ.get(COMPARE_WITH_ENV, "").split(",") if path.strip()
    ]


def by_chapter(own: Path, others: Sequence[Source]) -> dict[str, SideBySide]:
    """For each chapter's results file in ``own`` (a docs build's measurements directory), its
    measurements beside the others' of the same workloads, keyed by the file's stem (the
    chapter's topic). Devices are matched only where a source holds more than one, so a CPU
    build and a GPU build of one chapter share rows."""
    tables = {}
    for path in sorted(Path(own).glob("*.json")):
        environment, measurements = results.load_results(path)
        workloads = {m.workload for m in measurements}
        sources = [Source("this build", environment, measurements)] + [
            dataclasses.replace(
                other, measurements=[m for m in other.measurements if m.workload in workloads]
            )
            for other in others
        ]
        one_device = all(len({m.device for m in s.measurements}) <= 1 for s in sources)
        tables[path.stem] = SideBySide(sources, match_device=not one_device)
    return tables
