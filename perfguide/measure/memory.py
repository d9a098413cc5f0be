"""Resident memory, measured: what a process holds call after call, how fast that grows, and
how sure the rate is across fresh processes.

A process's resident set (psutil's ``rss``: the pages it has in RAM) is what the operating
system, a container's limit and a reader's ``top`` see. It moves in pages and in the allocator's
chunks, not in bytes, so one call's growth cannot be read off it; the growth *per call* is the
slope of the resident set over many calls, fitted once the first calls' caches have filled
(:func:`growth_per_call`). Like a time, that slope varies from process to process, so a rate is
given with an interval over fresh processes (:class:`Growth`): where the next process's rate
should land, in another run too (rates also move between runs: the machine's calibration says
how far, :mod:`perfguide.measure.calibration`).

A training step's memory is a peak, not a rate: the most it holds at once (:func:`step_peak`),
both as TensorFlow's allocator counts its tensors and as the operating system sees the process
(its peak resident set, which Linux lets a process reset). Against batch size, the peaks' slope
is the memory each example of a batch costs (:class:`Peaks`).
"""

from __future__ import annotations

import dataclasses
import gc
import math
import re
import resource
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from perfguide.measure import calibration, stats

#: Samples of the resident set a series takes (plus one before the first call).
SAMPLES = 20
#: The share of a series' samples left out of the slope: the first calls fill caches (traces,
#: kernels, the allocator's pools) that then stay.
SETTLING = 0.5


def resident_bytes() -> int:
    """Bytes this process holds in RAM (its resident set)."""
    return psutil.Process().memory_info().rss


def resident_series(step: Callable[[int], Any], calls: int, every: int) -> list[int]:
    """The resident set before ``step(0)`` and after every ``every`` calls of ``step(i)``,
    ``calls`` calls in all."""
    if calls < every or calls % every:
        raise ValueError(f"{calls} calls do not split into samples of {every}")
    series = [resident_bytes()]
    for i in range(calls):
        step(i)
        if (i + 1) % every == 0:
            series.append(resident_bytes())
    return series


def growth_per_call(series: Sequence[int], every: int, settling: float = SETTLING) -> float:
    """Bytes per call: the least-squares slope of the resident set against calls over the
    samples after the first ``settling`` share of them.

    >>> round(growth_per_call([100, 900, 1000, 1100, 1200], every=10), 6)
    10.0
    """
    kept = np.asarray(series[int(len(series) * settling) :], dtype=float)
    if len(kept) < 2:
        raise ValueError("too few samples after settling to fit a slope")
    calls = np.arange(len(kept)) * every
    return float(np.polyfit(calls, kept, 1)[0])


def next_process(
    values: Sequence[float], resolution: float = 0.0, drift: float = 0.0
) -> tuple[float, float]:
    """Where the next fresh process's value should land, 95 %, in this run or another: a
    prediction interval from the processes' mean and spread (Student's t), widened by
    ``drift`` (how far the value moves between runs, a standard deviation, for this run and
    the next), at least ``resolution`` either side; a single process has none.

    >>> next_process([5.0])
    (-inf, inf)
    >>> [round(x, 2) for x in next_process([1.0, 1.0, 1.0], drift=0.5)]  # t(2) * sqrt(2 * 0.25)
    [-2.04, 4.04]
    """
    n = len(values)
    if n < 2:
        return (-math.inf, math.inf)
    mean, spread = statistics.fmean(values), statistics.stdev(values)
    variance = spread**2 * (1 + 1 / n) + 2 * drift**2
    half = max(stats.t_quantile(n - 1) * math.sqrt(variance), resolution)
    return (mean - half, mean + half)


@dataclasses.dataclass(frozen=True)
class Growth:
    """A way's resident growth, per call, in each of several fresh processes, and what each held
    after its calls beyond what it held before them."""

    label: str
    rates: tuple[float, ...]
    added: tuple[float, ...]
    #: The smallest rate the series can show: one memory page over the calls the slope spans
    #: (the resident set moves in pages).
    resolution: float = 0.0

    @property
    def rate(self) -> float:
        """The median of the processes' rates, bytes per call."""
        return statistics.median(self.rates)

    @property
    def interval(self) -> tuple[float, float]:
        """Where the next fresh process's rate should land, in another run too: with this
        machine's calibrated drift between runs (:mod:`perfguide.measure.calibration`)."""
        return self.interval_with(calibration.current().growth_drift)

    def interval_with(self, drift: float) -> tuple[float, float]:
        """:func:`next_process` of the rates with ``drift``, never narrower than the series'
        resolution either side."""
        return next_process(self.rates, self.resolution, drift)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def fitted_calls(samples: int, every: int, settling: float = SETTLING) -> int:
    """The calls a slope of ``samples`` samples, taken every ``every`` calls, spans: those
    between the samples :func:`growth_per_call` keeps after settling.

    >>> fitted_calls(21, every=10)  # samples 10 to 20
    100
    """
    return (samples - int(samples * settling) - 1) * every


def growth(label: str, series: Sequence[Sequence[int]], every: int) -> Growth:
    """:class:`Growth` of ``label`` from one resident series per fresh process."""
    return Growth(
        label,
        tuple(growth_per_call(s, every) for s in series),
        tuple(float(s[-1] - s[0]) for s in series),
        resource.getpagesize() / fitted_calls(len(series[0]), every),
    )


@dataclasses.dataclass(frozen=True)
class Experiment:
    """Ways called in turn in each of several fresh processes: their growth, how many times
    each traced (None where it is no ``tf.function``), and what the processes held after each
    step that was to give memory back (none were tried where empty)."""

    growth: dict[str, Growth]
    traces: dict[str, int | None]
    #: Python objects the garbage collector tracks, more after the calls than before, per call
    #: (median over the processes).
    objects_per_call: dict[str, float]
    released: list[dict[str, int]]
    #: Each way's resident series in the first process, and the calls between its samples.
    series: dict[str, tuple[list[int], int]]

    def held(self) -> dict[str, float]:
        """What the processes held after each step that was to give memory back, in the order
        tried: the median over the processes."""
        steps = list(self.released[0]) if self.released else []
        return {step: statistics.median(r[step] for r in self.released) for step in steps}


def changes(held: dict[str, float]) -> dict[str, float]:
    """Each step's change of what was held, from the step before it (the first has none).

    >>> changes({"before": 100.0, "after the calls": 180.0, "gc.collect()": 170.0})
    {'after the calls': 80.0, 'gc.collect()': -10.0}
    """
    steps = list(held)
    return {step: held[step] - held[before] for before, step in zip(steps, steps[1:], strict=False)}


#: Where Linux keeps a process's peak resident set, and how the process resets it.
_STATUS, _CLEAR_REFS, _RESET_PEAK = Path("/proc/self/status"), Path("/proc/self/clear_refs"), "5"


def peak_resident_bytes() -> int:
    """This process's peak resident set since it started or was last reset (Linux's
    ``VmHWM``)."""
    found = re.search(r"^VmHWM:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
    if found is None:
        raise OSError(f"no VmHWM in {_STATUS}: the peak resident set needs Linux")
    return int(found.group(1)) * 1024


#: TensorFlow counts its tensors' bytes on the CPU (``get_memory_info``) only with a BFC
#: allocator: its default where oneDNN is on (TensorFlow 2.21 turns oneDNN on by default only
#: on some CPUs), not elsewhere. A process that measures a step's tensors starts with this, so
#: that it counts them on any CPU.
TENSOR_COUNTS = {"TF_CPU_ALLOCATOR_USE_BFC": "true"}


def tensor_bytes() -> int:
    """The bytes TensorFlow's tensors on the CPU hold now, by its allocator's own count (in a
    process started with :data:`TENSOR_COUNTS`)."""
    import tensorflow as tf

    return tf.config.experimental.get_memory_info("CPU:0")["current"]


def step_peak(step: Callable[[], Any]) -> tuple[int, int]:
    """While ``step`` ran: the most bytes TensorFlow's tensors on the CPU held beyond what they
    held before it, and the process's peak resident set (the peak is reset first: it is what
    the process held before ``step`` or more)."""
    import tensorflow as tf

    gc.collect()
    tf.config.experimental.reset_memory_stats("CPU:0")
    before = tensor_bytes()
    resident = resident_peak(step)
    return tf.config.experimental.get_memory_info("CPU:0")["peak"] - before, resident


def resident_peak(step: Callable[[], Any]) -> int:
    """The process's peak resident set while ``step`` ran (the peak is reset first: it is what
    the process held before ``step`` or more), on any backend."""
    _CLEAR_REFS.write_text(_RESET_PEAK)
    step()
    # Linux updates the peak lazily (when memory is unmapped, say): what is held now counts too.
    return max(peak_resident_bytes(), resident_bytes())


@dataclasses.dataclass(frozen=True)
class Peaks:
    """A training step's peak memory at each of several batch sizes, in each of several fresh
    processes: ``tensors``, the most TensorFlow's tensors held beyond what they held before the
    step; ``resident``, the process's peak resident set beyond what it held before its first
    step; ``kept``, what a forward pass keeps for the backward one; and the bytes of activations
    one example makes, from the model's shapes."""

    label: str
    batches: tuple[int, ...]
    tensors: tuple[tuple[float, ...], ...]
    resident: tuple[tuple[float, ...], ...]
    activations: float
    #: The tensors a forward pass under a ``GradientTape`` keeps for the backward pass.
    kept: tuple[tuple[float, ...], ...] = ()
    #: By layer, per example: its output from its shape, and what its forward pass kept at the
    #: largest batch (median over the processes).
    layers: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    #: What each process held before its first step.
    before: tuple[float, ...] = ()

    def _lines(self, kind: str) -> list[Any]:
        """Each process's least-squares line of its peaks (``kind``: ``"tensors"``,
        ``"resident"`` or ``"kept"``) against batch size: slope, intercept and the slope's
        standard error."""
        from scipy import stats as scipy_stats  # imported here, as in stats.t_quantile

        return [scipy_stats.linregress(self.batches, p) for p in getattr(self, kind)]

    def per_example(self, kind: str) -> tuple[float, ...]:
        """Each process's bytes per example of a batch: the slope of its peaks of ``kind``."""
        return tuple(float(line.slope) for line in self._lines(kind))

    def interval(self, kind: str) -> tuple[float, float]:
        """Where the next fresh process's bytes per example should land: :func:`next_process`
        of the processes' slopes, never narrower either side than a slope's own error (Student's
        t over the batch sizes times the median process's standard error): one process's steps
        vary too, and three processes can agree by chance."""
        lines = self._lines(kind)
        error = stats.t_quantile(len(self.batches) - 2) * statistics.median(
            line.stderr for line in lines
        )
        return next_process([float(line.slope) for line in lines], error)

    def largest_batch(self, available: float) -> int:
        """The largest batch whose step would fit in ``available`` bytes: what a process held
        before its first step, plus the resident peaks' line (fitted per process, medians)."""
        lines = self._lines("resident")
        slope, intercept = (
            statistics.median(getattr(line, part) for line in lines)
            for part in ("slope", "intercept")
        )
        return int((available - statistics.median(self.before) - intercept) // slope)

    def at(self, kind: str) -> list[float]:
        """The median over the processes of each batch size's peak."""
        return [
            statistics.median(p[i] for p in getattr(self, kind)) for i in range(len(self.batches))
        ]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
