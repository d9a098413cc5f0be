"""Resident memory, measured: what a process holds call after call, how fast that grows, and
how sure the rate is across fresh processes.

A process's resident set (psutil's ``rss``: the pages it has in RAM) is what the operating
system, a container's limit and a reader's ``top`` see. It moves in pages and in the allocator's
chunks, not in bytes, so one call's growth cannot be read off it; the growth *per call* is the
slope of the resident set over many calls, fitted once the first calls' caches have filled
(:func:`growth_per_call`). Like a time, that slope varies from process to process, so a rate is
given with an interval over fresh processes (:class:`Growth`): where the next process's rate
should land.
"""

from __future__ import annotations

import dataclasses
import math
import resource
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import psutil
from scipy import stats as scipy_stats

#: Samples of the resident set a series takes (plus one before the first call).
SAMPLES = 20
#: The share of a series' samples left out of the slope: the first calls fill caches (traces,
#: kernels, the allocator's pools) that then stay.
SETTLING = 0.5
#: The confidence of a rate's interval.
CONFIDENCE = 0.95


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
        """Where the next fresh process's rate should land, 95 %: a prediction interval from the
        processes' mean and spread (Student's t), never narrower than the series' resolution
        either side; a single process has none."""
        n = len(self.rates)
        if n < 2:
            return (-math.inf, math.inf)
        mean, spread = statistics.fmean(self.rates), statistics.stdev(self.rates)
        half = scipy_stats.t.ppf((1 + CONFIDENCE) / 2, n - 1) * spread * math.sqrt(1 + 1 / n)
        half = max(half, self.resolution)
        return (mean - half, mean + half)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def growth(label: str, series: Sequence[Sequence[int]], every: int) -> Growth:
    """:class:`Growth` of ``label`` from one resident series per fresh process."""
    fitted_calls = (len(series[0]) - int(len(series[0]) * SETTLING) - 1) * every
    return Growth(
        label,
        tuple(growth_per_call(s, every) for s in series),
        tuple(float(s[-1] - s[0]) for s in series),
        resource.getpagesize() / fitted_calls,
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
