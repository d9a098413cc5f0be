"""What a timing is: :class:`Measurement`, the steady time per unit of work of one labelled
callable and its first call, as one process or several timed it; its statistics (the median over
processes, the rerun interval the calibration in force gives it, whether it is noisy) and its
JSON record; and :func:`across_processes`, which pools one variant's measurements from several
processes. The timer (:mod:`perfguide.measure.timer`) writes them; every other part of the
package reads them.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import statistics
from collections.abc import Sequence
from typing import Any

from perfguide.measure import calibration, stats

#: A measurement whose processes spread more than this many times as far as this machine's
#: processes usually do (its calibration's ``process_sd``) is flagged noisy: by chance alone, three
#: processes spread that far about once in fifty measurements.
NOISY_SPREAD = 2.0
#: In a single process, blocks whose interquartile range reaches this share of their median flag
#: it (torch.utils.benchmark warns from 10 %).
NOISE_THRESHOLD = 0.10
#: What ``interval_s`` is, in a results file.
INTERVAL_KIND = (
    "rerun: where the median of another run of {processes} fresh processes on this machine lands, "
    "95 % (a prediction interval; the environment's calibration says how it was calibrated)"
)


@dataclasses.dataclass(frozen=True)
class Measurement:
    """Steady-state time per unit of work, plus the first call, for one labelled callable.

    ``block_s`` holds one sample per timed block: seconds per unit (per iteration, per call…),
    each the mean over ``calls_per_block`` calls of ``units_per_call`` units.
    """

    label: str
    unit: str
    units_per_call: int
    calls_per_block: int
    first_call_s: float
    block_s: tuple[float, ...]
    workload: str = ""
    size: int | None = None
    device: str = "cpu"
    #: Traces of the watched ``tf.function`` objects in the timed blocks (None: none watched).
    retraces: int | None = None
    #: Traces they made in the first call, which is timed apart (None: none watched).
    first_call_traces: int | None = None
    #: Median over the timed blocks of the cores the process kept busy (CPU time over wall
    #: time): how many threads really worked (None: not recorded).
    cores_busy: float | None = None
    #: How ``block_s`` splits into processes, in order: the number of blocks each process timed
    #: (empty: all in one process).
    blocks_per_process: tuple[int, ...] = ()
    #: Which processes timed them, one name each (empty: this process, unnamed). Variants timed
    #: by the same processes are compared process by process.
    process_ids: tuple[str, ...] = ()
    #: Each process's first call, in the order of ``blocks_per_process`` (empty: one process,
    #: whose first call is ``first_call_s``).
    process_first_call_s: tuple[float, ...] = ()

    @property
    def first_calls_s(self) -> tuple[float, ...]:
        """Each process's first call, in seconds."""
        return self.process_first_call_s or (self.first_call_s,)

    @property
    def by_process(self) -> tuple[tuple[float, ...], ...]:
        """The block samples of each process."""
        counts = self.blocks_per_process or (len(self.block_s),)
        ends = list(itertools.accumulate(counts))
        return tuple(self.block_s[end - n : end] for n, end in zip(counts, ends, strict=True))

    def of_processes(self, indices: Sequence[int]) -> Measurement:
        """This measurement as the processes at ``indices`` alone timed it.

        >>> m = Measurement("v", "call", 1, 1, 0.0, (1.0, 2.0, 3.0),
        ...                 blocks_per_process=(1, 1, 1), process_ids=("a", "b", "c"))
        >>> m.of_processes([0, 2]).process_median_s, m.of_processes([0, 2]).process_ids
        ((1.0, 3.0), ('a', 'c'))
        """
        blocks = [self.by_process[i] for i in indices]
        return dataclasses.replace(
            self,
            block_s=tuple(s for process in blocks for s in process),
            blocks_per_process=tuple(len(process) for process in blocks),
            process_ids=tuple(self.process_ids[i] for i in indices) if self.process_ids else (),
            process_first_call_s=(
                tuple(self.process_first_call_s[i] for i in indices)
                if self.process_first_call_s
                else ()
            ),
        )

    @property
    def processes(self) -> int:
        """How many processes timed this measurement."""
        return len(self.blocks_per_process) or 1

    @property
    def process_median_s(self) -> tuple[float, ...]:
        """Each process's median block, in seconds per unit."""
        return tuple(statistics.median(blocks) for blocks in self.by_process)

    @property
    def spread_by_process(self) -> tuple[float, ...]:
        """How widely each process's blocks spread: its interquartile range over its median."""
        spreads = []
        for blocks in self.by_process:
            q1, median, q3 = statistics.quantiles(blocks, n=4, method="inclusive")
            spreads.append((q3 - q1) / median)
        return tuple(spreads)

    @property
    def quartiles_s(self) -> tuple[float, float, float]:
        """First quartile, median and third quartile of all block samples (seconds per unit)."""
        q1, median, q3 = statistics.quantiles(self.block_s, n=4, method="inclusive")
        return q1, median, q3

    @property
    def median_s(self) -> float:
        """Seconds per unit: the median over processes of each process's median block (with
        one process, the median block)."""
        return stats.median_of_processes(self.by_process)

    @functools.cached_property
    def interval_s(self) -> tuple[float, float]:
        """Where the median of another run of as many fresh processes on this machine lands,
        with :data:`~perfguide.measure.stats.CONFIDENCE` probability: a prediction interval
        from the processes' spread and the machine's calibrated drift between runs (see
        :mod:`perfguide.measure.stats` and :mod:`perfguide.measure.calibration`), with this
        measurement's own drift where the calibration has one."""
        return self.interval_with(calibration.current().time_for(self.workload, self.row_key))

    @property
    def row_key(self) -> str:
        """The name a calibration gives this measurement (:func:`calibration.row_key`)."""
        return calibration.row_key(self.workload, self.label, self.size, self.device)

    def ratio_key(self, other: Measurement) -> str:
        """The name a calibration gives the ratio of this measurement and ``other``, timed in
        the same processes (:func:`calibration.ratio_key`)."""
        return calibration.ratio_key(self.workload, self.label, other.label, self.size, self.device)

    def interval_with(self, spread: stats.Spread) -> tuple[float, float]:
        """:attr:`interval_s` judged with ``spread`` instead of the calibration in force."""
        return stats.rerun_interval(self.median_s, self.process_median_s, spread)

    @property
    def iqr_s(self) -> float:
        """Interquartile range of all block samples, in seconds per unit."""
        q1, _, q3 = self.quartiles_s
        return q3 - q1

    @property
    def noisy(self) -> bool:
        """Whether this measurement is less sure than this machine's usually are: its processes'
        medians spread (standard deviation of their logs) more than :data:`NOISY_SPREAD` times
        the calibrated typical spread; in one process, its blocks' interquartile range reaches
        :data:`NOISE_THRESHOLD` of their median."""
        if self.processes == 1:
            return self.iqr_s > NOISE_THRESHOLD * self.median_s
        spread = statistics.stdev(math.log(t) for t in self.process_median_s)
        return spread > NOISY_SPREAD * calibration.current().time.process_sd

    @property
    def first_call_overhead_s(self) -> float:
        """What the first call cost beyond a steady call (tracing, compiling, caches), >= 0."""
        return max(0.0, self.first_call_s - self.units_per_call * self.median_s)

    @property
    def first_call_was_steady(self) -> bool:
        """Whether the first call cost no more than a steady call (the overhead is clamped to 0)."""
        return self.first_call_s <= self.units_per_call * self.median_s

    @property
    def retraced(self) -> bool:
        """Whether a watched ``tf.function`` traced during the timed blocks, which then timed
        tracing too, not just the steady state."""
        return bool(self.retraces)

    @property
    def flags(self) -> list[str]:
        """Warnings a reader must see next to the number."""
        return ["NOISY"] * self.noisy + [f"RETRACED {self.retraces}x"] * self.retraced

    def to_dict(self) -> dict[str, Any]:
        """The JSON record of this measurement (``median_s`` and ``iqr_s`` are per ``unit``)."""
        return self.timings() | {
            "median_s": self.median_s,
            "interval_s": list(self.interval_s),
            "interval_kind": INTERVAL_KIND.format(processes=self.processes),
            "iqr_s": self.iqr_s,
            "first_call_overhead_s": self.first_call_overhead_s,
            "noisy": self.noisy,
            "process_median_s": list(self.process_median_s),
        }

    def timings(self) -> dict[str, Any]:
        """What was timed and counted, without the statistics worked out from it: all that
        :meth:`from_dict` reads, and what a worker sends the process that pools its
        measurements (the intervals need SciPy, which takes half a second to import)."""
        return {
            "workload": self.workload,
            "variant": self.label,
            "size": self.size,
            "device": self.device,
            "unit": self.unit,
            "first_call_s": self.first_call_s,
            "retraces": self.retraces,
            "first_call_traces": self.first_call_traces,
            "cores_busy": self.cores_busy,
            "units_per_call": self.units_per_call,
            "calls_per_block": self.calls_per_block,
            "block_s": list(self.block_s),
            "blocks_per_process": list(self.blocks_per_process),
            "process_ids": list(self.process_ids),
            "process_first_call_s": list(self.process_first_call_s),
        }

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Measurement:
        """Rebuild a measurement from :meth:`to_dict` or :meth:`timings` output."""
        return cls(
            label=record["variant"],
            unit=record["unit"],
            units_per_call=record["units_per_call"],
            calls_per_block=record["calls_per_block"],
            first_call_s=record["first_call_s"],
            block_s=tuple(record["block_s"]),
            workload=record["workload"],
            size=record["size"],
            device=record["device"],
            retraces=record.get("retraces"),
            first_call_traces=record.get("first_call_traces"),
            cores_busy=record.get("cores_busy"),
            # Files written before processes were recorded hold one process.
            blocks_per_process=tuple(record.get("blocks_per_process", ())),
            process_ids=tuple(record.get("process_ids", ())),
            process_first_call_s=tuple(record.get("process_first_call_s", ())),
        )


def across_processes(measurements: Sequence[Measurement]) -> Measurement:
    """One measurement of the same variant from the ``measurements`` of several processes (in
    order): their blocks kept apart by process; first call, calls per block and cores busy the
    processes' medians; retraces added up.

    >>> a = Measurement("eager", "call", 1, 10, 2.0, (1.0, 1.2), process_ids=("p1",))
    >>> b = dataclasses.replace(a, first_call_s=4.0, block_s=(1.4, 1.4, 1.5), process_ids=("p2",))
    >>> m = across_processes([a, b])
    >>> m.by_process, m.process_ids, m.first_call_s, m.first_calls_s, m.median_s
    (((1.0, 1.2), (1.4, 1.4, 1.5)), ('p1', 'p2'), 3.0, (2.0, 4.0), 1.25)
    """
    first = measurements[0]
    names = {(m.label, m.unit, m.workload, m.size, m.device) for m in measurements}
    if len(names) > 1:
        raise ValueError(f"cannot pool different measurements across processes: {sorted(names)}")

    def median_of(values: list[Any]) -> Any:
        return None if None in values else statistics.median(values)

    retraces = [m.retraces for m in measurements]
    traces = [m.first_call_traces for m in measurements]
    return dataclasses.replace(
        first,
        calls_per_block=round(statistics.median(m.calls_per_block for m in measurements)),
        first_call_s=statistics.median(m.first_call_s for m in measurements),
        block_s=tuple(s for m in measurements for s in m.block_s),
        retraces=None if None in retraces else sum(retraces),
        first_call_traces=None if None in traces else max(traces),
        cores_busy=median_of([m.cores_busy for m in measurements]),
        blocks_per_process=tuple(n for m in measurements for n in _counts(m)),
        process_ids=tuple(name for m in measurements for name in m.process_ids),
        process_first_call_s=tuple(s for m in measurements for s in m.first_calls_s),
    )


def _counts(m: Measurement) -> tuple[int, ...]:
    return m.blocks_per_process or (len(m.block_s),)


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
