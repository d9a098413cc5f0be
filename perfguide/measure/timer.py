"""Time a callable the way a careful benchmark engineer would.

The timer returns a :class:`~perfguide.measure.measurement.Measurement`.

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
import gc
import itertools
import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from perfguide.measure.measurement import Measurement

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
