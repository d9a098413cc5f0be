"""Results files side by side: the same measurements from other machines, devices or TensorFlow
releases, matched row by row and judged against the first file.

A row is one workload, variant and size (and device, unless devices are what is compared). Each
later file's time is set against the first file's: the ratio of medians, and a verdict from the
timed blocks in the way asv judges two benchmark runs: a difference counts only where the ratio is
beyond :data:`MIN_EFFECT` and a Mann-Whitney U test finds the two sets of blocks apart
(two-sided, p below :data:`SIGNIFICANCE`). Rows missing from a file are listed, not dropped.

>>> from perfguide.measure.timer import Measurement
>>> a = Source("a.json", {"cpu_model": "CPU A", "tensorflow": "2.21.0"},
...            [Measurement("numpy", "call", 1, 1, 0.0, (1.0, 1.1, 0.9, 1.0, 1.05), "w", 10)])
>>> b = Source("b.json", {"cpu_model": "CPU B", "tensorflow": "2.20.0"},
...            [Measurement("numpy", "call", 1, 1, 0.0, (0.5, 0.52, 0.49, 0.5, 0.51), "w", 10)])
>>> print(SideBySide([a, b]))
A: a.json: CPU A, TensorFlow 2.21.0, cpu
B: b.json: CPU B, TensorFlow 2.20.0, cpu
workload  variant  size  device  A       B       B vs A        B verdict
--------  -------  ----  ------  ------  ------  ------------  ---------
w         numpy    10    cpu     1.00 s  500 ms  2.00x faster  faster
"""

from __future__ import annotations

import dataclasses
import os
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scipy import stats

from perfguide.measure.timer import Measurement
from perfguide.report import results
from perfguide.report.compare import html_table, text_table
from perfguide.report.format import format_count, format_seconds, format_speedup

#: A ratio of medians within this factor is no clear difference, however sure the test is.
MIN_EFFECT = 1.1
#: The rank test's p-value below which two sets of blocks count as apart.
SIGNIFICANCE = 0.05
FASTER, SLOWER, SAME, MISSING = "faster", "slower", "no clear difference", "missing"
#: Results files (or directories of them) a docs build sets beside its own, comma-separated.
COMPARE_WITH_ENV = "PERFGUIDE_COMPARE_WITH"


@dataclasses.dataclass(frozen=True)
class Source:
    """One results file: its name, its environment record and its measurements."""

    name: str
    environment: dict[str, Any]
    measurements: list[Measurement]

    @classmethod
    def load(cls, path: str | Path) -> Source:
        """A results file, or a directory of them (a docs build's ``measurements``) as one
        source; :class:`~perfguide.report.results.ResultsError` if it cannot be read as one."""
        path = Path(path)
        files = sorted(path.glob("*.json")) if path.is_dir() else [path]
        if not files:
            raise results.ResultsError(f"{path} holds no results files (*.json)")
        loaded = [results.load_results(file) for file in files]
        measurements = [m for _, ms in loaded for m in ms]
        if not measurements:
            raise results.ResultsError(f"{path} holds no measurements")
        return cls(str(path), loaded[0][0], measurements)

    def describe(self) -> str:
        """Which machine, libraries, process-wide settings and devices the measurements came
        from."""
        env = self.environment
        cores = env.get("usable_cores")
        machine = env.get("cpu_model") or "unknown CPU"
        if cores:
            machine += f" ({cores} usable cores)"
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


def verdict(base: Measurement, other: Measurement) -> str:
    """Whether ``other`` is faster, slower, or not clearly different from ``base``.

    >>> m = Measurement("x", "call", 1, 1, 0.0, (1.0, 1.02, 0.98, 1.01, 0.99))
    >>> slow = dataclasses.replace(m, block_s=tuple(2 * s for s in m.block_s))
    >>> verdict(m, slow), verdict(slow, m), verdict(m, m)
    ('slower', 'faster', 'no clear difference')
    """
    ratio = base.median_s / other.median_s
    if max(ratio, 1 / ratio) < MIN_EFFECT:
        return SAME
    test = stats.mannwhitneyu(base.block_s, other.block_s, alternative="two-sided")
    if test.pvalue >= SIGNIFICANCE:
        return SAME
    return FASTER if ratio > 1 else SLOWER


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

    def header(self) -> list[str]:
        columns = ["workload", "variant", "size"] + ["device"] * self.match_device
        columns.append(self.letters[0])
        for letter in self.letters[1:]:
            columns += [letter, f"{letter} vs {self.letters[0]}", f"{letter} verdict"]
        return columns

    def verdicts(self) -> dict[tuple, list[str]]:
        """Per row, each later source's verdict against the first (:data:`MISSING` where either
        lacks the row)."""
        return {
            key: [
                MISSING if base is None or other is None else verdict(base, other)
                for other in others
            ]
            for key, (base, *others) in self.rows.items()
        }

    def table_rows(self, matched_only: bool = False) -> list[list[str]]:
        """The table's rows; with ``matched_only``, only rows every source has."""
        verdicts = self.verdicts()
        table = []
        for key, found in self.rows.items():
            if matched_only and None in found:
                continue
            row = _key_cells(key)
            row.append(_time(found[0]))
            for other, judged in zip(found[1:], verdicts[key], strict=True):
                ratio = (
                    format_speedup(found[0].median_s / other.median_s)
                    if found[0] is not None and other is not None
                    else ""
                )
                row += [_time(other), ratio, judged]
            table.append(row)
        return table

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
        notes = self.missing()
        lines = [*self.legend(), text_table(self.header(), self.table_rows()), *notes]
        return "\n".join(lines)

    def html(self, caption: str, matched_only: bool = False) -> str:
        """The table as HTML under ``caption``."""
        header = self.header()
        text = [
            i
            for i, name in enumerate(header)
            if name in ("workload", "variant", "device") or name.endswith("verdict")
        ]
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
