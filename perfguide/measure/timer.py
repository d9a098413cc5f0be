"""Time a callable the way a careful benchmark engineer would.

One idea at some length: the timer and what it returns (:class:`Measurement`, its statistics and
its JSON record) stay together, since every other part of the package reads measurements in
exactly the shape the timer writes them.

:class:`Interleaved` times several variants in one run: it times each first call on its own
(where TensorFlow traces and compiles), calibrates how many calls make one timed block, then
times blocks that take turns between the variants, so they meet the same machine.
:func:`measure` does it for one callable.

The timed loop calls the variant's own callable with its own arguments, nothing else: no wrapper,
no copy of the result. Work that finishes after the call returns is waited for: JAX results per
call (``block_until_ready``), and devices at the end of every block through the ``sync`` callable
the caller passes (for TensorFlow, ``tf.test.experimental.sync_devices``). TensorFlow on a CPU
finishes an op before the call returns, so its results are complete without a copy to NumPy.

>>> import time
>>> def two_ms():
...     end = time.perf_counter() + 0.002
...     while time.perf_counter() < end:
...         pass
>>> m = measure(two_ms, label="busy wait", min_block_s=0.02)
>>> m.median_s >= 0.002  # a busy wait cannot be timed shorter than it is
True
>>> len(m.block_s)
10
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import itertools
import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
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
#: A block whose process used more than this many cores ran thread pools (BLAS, TensorFlow's);
#: some keep spinning after the work (OpenBLAS's, for about 0.1 s), so the next variant waits
#: for them to go idle, at most :data:`SPIN_DOWN_S`, instead of competing with them for the cores.
MULTICORE = 1.2
SPIN_DOWN_S = 0.2
#: Idle: a window of ``IDLE_WINDOW_S`` in which the process kept fewer than ``IDLE_CORES`` cores
#: busy. (Other threads' CPU time is counted in scheduler ticks of a few ms; the window spans
#: several.)
IDLE_WINDOW_S, IDLE_CORES = 0.012, 0.5


@dataclasses.dataclass(frozen=True)
class Timed:
    """What the harness times: ``fn(*args)`` does ``units_per_call`` units of work; ``traced``
    are the ``tf.function`` objects whose retracing while timed is flagged."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    units_per_call: int = 1
    traced: tuple[Any, ...] = ()

    def __call__(self) -> Any:
        """One call, untimed (to check what a variant computes)."""
        return self.fn(*self.args)


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


def _waiter(result: Any) -> Callable[[Any], Any] | None:
    """How to wait for work still running after a call returned ``result`` (JAX dispatches
    asynchronously), or None when the result is complete when the call returns.

    >>> class Pending:
    ...     def block_until_ready(self):
    ...         return self
    >>> _waiter(1.5) is None, _waiter((Pending(), 2)) is not None
    (True, True)
    """
    if hasattr(result, "block_until_ready"):
        return type(result).block_until_ready
    if isinstance(result, (tuple, list)) and any(map(_waiter, result)):
        return lambda results: [wait(r) for r in results if (wait := _waiter(r))]
    return None


def _no_sync() -> None:
    pass


def wait_until_idle(limit_s: float = SPIN_DOWN_S) -> None:
    """Sleep until this process's other threads stop using the cores, for at most ``limit_s``."""
    start = time.perf_counter()
    while time.perf_counter() - start < limit_s:
        cpu, wall = time.process_time(), time.perf_counter()
        time.sleep(IDLE_WINDOW_S)
        if time.process_time() - cpu < IDLE_CORES * (time.perf_counter() - wall):
            return


def no_progress(step: str) -> None:
    """The progress report that says nothing (where no one watches)."""


def _time_calls(
    t: Timed, calls: int, wait: Callable[[Any], Any] | None, sync: Callable[[], None]
) -> tuple[float, float]:
    """Wall-clock seconds of ``calls`` calls, and the cores the process kept busy meanwhile."""
    fn, args = t.fn, t.args
    # As timeit does: a garbage collection landing in one block would only add noise.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        sync()  # work left over from before must not land in this block
        cpu_start, start = time.process_time(), time.perf_counter()
        # Unpacking a tuple per call costs ~20 ns, as much as the cheapest variants' call, even
        # an empty one: so no unpacking for calls of no or one argument.
        if wait is None and not args:
            for _ in itertools.repeat(None, calls):
                fn()
        elif wait is None and len(args) == 1:
            (arg,) = args
            for _ in itertools.repeat(None, calls):
                fn(arg)
        elif wait is None:
            for _ in itertools.repeat(None, calls):
                fn(*args)
        else:
            for _ in itertools.repeat(None, calls):
                wait(fn(*args))
        sync()
        elapsed = time.perf_counter() - start
        return elapsed, (time.process_time() - cpu_start) / max(elapsed, 1e-9)
    finally:
        if gc_was_enabled:
            gc.enable()


def _tracing_count(functions: Iterable[Any]) -> int:
    return sum(f.experimental_get_tracing_count() for f in functions)


class Interleaved:
    """One run of several labelled :class:`Timed` callables, their timed blocks taking turns.

    Creating it times each first call and calibrates each callable (the calibration calls double
    as warm-up); :meth:`add_blocks` times blocks, and can be called again to add more to the same
    run; :meth:`measurements` reports what was timed so far. ``progress``, if given, is told
    each step ("fit: block 3") before it starts, outside the timed calls.
    """

    def __init__(
        self,
        timed: Mapping[str, Timed],
        *,
        unit: str = "call",
        min_block_s: float = 0.1,
        sync: Callable[[], None] | None = None,
        progress: Callable[[str], None] = no_progress,
    ):
        self.timed, self.unit, self.sync = dict(timed), unit, sync or _no_sync
        self.progress = progress
        # The label whose last block left thread pools spinning, if any.
        self._spinning: str | None = None
        self.first_call_s: dict[str, float] = {}
        self.first_call_traces: dict[str, int] = {}
        self.waits: dict[str, Callable[[Any], Any] | None] = {}
        self.calls: dict[str, int] = {}
        for label, t in self.timed.items():
            self.progress(f"{label}: first call and calibration")
            traces_before = _tracing_count(t.traced)
            start = time.perf_counter()
            result = t.fn(*t.args)
            self.waits[label] = wait = _waiter(result)
            if wait is not None:
                wait(result)
            self.sync()
            self.first_call_s[label] = time.perf_counter() - start
            self.first_call_traces[label] = _tracing_count(t.traced) - traces_before
            self.calls[label] = self._calibrate(label, min_block_s)
        self.samples: dict[str, list[float]] = {label: [] for label in self.timed}
        self.cores_busy: dict[str, list[float]] = {label: [] for label in self.timed}
        self.retraces = dict.fromkeys(self.timed, 0)

    def _time(self, label: str, calls: int) -> tuple[float, float]:
        """Seconds of ``calls`` calls of ``label``, and the cores the process kept busy."""
        if self._spinning not in (None, label):
            wait_until_idle()
        elapsed, cores = _time_calls(self.timed[label], calls, self.waits[label], self.sync)
        self._spinning = label if cores > MULTICORE else None
        return elapsed, cores

    def _calibrate(self, label: str, min_block_s: float) -> int:
        """Calls that make one block last at least ``min_block_s``, grown from a trial block."""
        calls = 1
        while (elapsed := self._time(label, calls)[0]) < min_block_s:
            # Aim 20 % past the target, never more than 10x in one go (early calls may be slow).
            calls = min(calls * 10, math.ceil(calls * 1.2 * min_block_s / max(elapsed, 1e-9)))
        return calls

    def add_blocks(self, blocks: int, labels: Sequence[str] | None = None) -> Interleaved:
        """Time ``blocks`` more blocks of each of ``labels`` (default all), in turns A, B, C,
        then C, B, A, so a steady drift in the machine's speed falls on all of them alike."""
        turns = list(labels or self.timed)
        for block in range(blocks):
            for label in turns if block % 2 == 0 else reversed(turns):
                self.progress(f"{label}: block {len(self.samples[label]) + 1}")
                t = self.timed[label]
                before = _tracing_count(t.traced)
                elapsed, cores = self._time(label, self.calls[label])
                self.retraces[label] += _tracing_count(t.traced) - before
                self.samples[label].append(elapsed / (self.calls[label] * t.units_per_call))
                self.cores_busy[label].append(cores)
        return self

    def measurements(self) -> list[Measurement]:
        """What was timed so far, one :class:`Measurement` per label."""
        if any(len(samples) < 5 for samples in self.samples.values()):
            raise ValueError("need at least 5 blocks for a median and spread")
        return [
            Measurement(
                label=label,
                unit=self.unit,
                units_per_call=t.units_per_call,
                calls_per_block=self.calls[label],
                first_call_s=self.first_call_s[label],
                block_s=tuple(self.samples[label]),
                retraces=self.retraces[label] if t.traced else None,
                first_call_traces=self.first_call_traces[label] if t.traced else None,
                cores_busy=statistics.median(self.cores_busy[label]),
            )
            for label, t in self.timed.items()
        ]


def measure_interleaved(
    timed: Mapping[str, Timed],
    *,
    unit: str = "call",
    min_block_s: float = 0.1,
    blocks: int = 10,
    sync: Callable[[], None] | None = None,
) -> list[Measurement]:
    """Measure several labelled callables in one run of ``blocks`` interleaved blocks."""
    if blocks < 5:
        raise ValueError(f"need at least 5 blocks for a median and spread, got {blocks}")
    run = Interleaved(timed, unit=unit, min_block_s=min_block_s, sync=sync)
    return run.add_blocks(blocks).measurements()


def measure(
    fn: Callable[..., Any],
    *args: Any,
    label: str,
    unit: str = "call",
    units_per_call: int = 1,
    min_block_s: float = 0.1,
    blocks: int = 10,
    traced: Sequence[Any] = (),
) -> Measurement:
    """Measure ``fn(*args)`` (``units_per_call`` units of work) in steady state; ``traced`` are
    ``tf.function`` objects whose traces during the timed blocks are counted into ``retraces``."""
    timed = {label: Timed(fn, args, units_per_call, tuple(traced))}
    return measure_interleaved(timed, unit=unit, min_block_s=min_block_s, blocks=blocks)[0]


def _nothing() -> None:
    pass


def loop_floor_s(min_block_s: float = 0.05) -> float:
    """What the timed loop itself costs per call: the fastest block's time per call of a call
    that does nothing (a floor, so the fastest, as ``timeit`` users take the minimum).

    It is part of every measured time (as it is of ``timeit``'s), and tells which measured
    differences are too small to mean anything.
    """
    return min(measure(_nothing, label="nothing", min_block_s=min_block_s, blocks=5).block_s)
