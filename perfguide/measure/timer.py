"""Time a callable the way a careful benchmark engineer would.

:func:`measure` separates the first call (where TensorFlow traces and compiles) from the steady
state, calibrates how many calls make one timed block, times several blocks, and forces every
result to host memory inside the block so asynchronous dispatch cannot make work look free.
:func:`measure_interleaved` does the same for several variants at once, their blocks taking
turns, so that they are compared under the same conditions.

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
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

#: IQR/median above this marks a measurement as noisy (torch.utils.benchmark warns from 10 %).
NOISE_THRESHOLD = 0.10


@dataclasses.dataclass(frozen=True)
class Timed:
    """What the harness times: ``call()`` does ``units_per_call`` units of work and returns the
    result; ``traced`` are the ``tf.function`` objects whose retracing while timed is flagged."""

    call: Callable[[], Any]
    units_per_call: int = 1
    traced: tuple[Any, ...] = ()


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

    @property
    def quartiles_s(self) -> tuple[float, float, float]:
        """First quartile, median and third quartile of the block samples (seconds per unit)."""
        q1, median, q3 = statistics.quantiles(self.block_s, n=4, method="inclusive")
        return q1, median, q3

    @property
    def median_s(self) -> float:
        """Median seconds per unit over the blocks."""
        return self.quartiles_s[1]

    @property
    def iqr_s(self) -> float:
        """Interquartile range of the block samples, in seconds per unit."""
        q1, _, q3 = self.quartiles_s
        return q3 - q1

    @property
    def noisy(self) -> bool:
        """Whether the spread is too large (IQR/median > :data:`NOISE_THRESHOLD`) to trust."""
        return self.iqr_s > NOISE_THRESHOLD * self.median_s

    @property
    def first_call_overhead_s(self) -> float:
        """What the first call cost beyond a steady call (tracing, compiling, caches), >= 0."""
        return max(0.0, self.first_call_s - self.units_per_call * self.median_s)

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
        return {
            "workload": self.workload,
            "variant": self.label,
            "size": self.size,
            "device": self.device,
            "unit": self.unit,
            "median_s": self.median_s,
            "iqr_s": self.iqr_s,
            "first_call_s": self.first_call_s,
            "first_call_overhead_s": self.first_call_overhead_s,
            "noisy": self.noisy,
            "retraces": self.retraces,
            "units_per_call": self.units_per_call,
            "calls_per_block": self.calls_per_block,
            "block_s": list(self.block_s),
        }

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Measurement:
        """Rebuild a measurement from :meth:`to_dict` output."""
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
        )


def materialize(result: Any) -> Any:
    """Force a (possibly nested) result into host memory: ``.numpy()`` where there is one
    (TensorFlow, PyTorch), a wait and a copy for JAX arrays (``block_until_ready``).

    >>> class Lazy:
    ...     def numpy(self):
    ...         return 42
    >>> materialize((Lazy(), [Lazy(), 1.5]))
    (42, [42, 1.5])
    """
    if hasattr(result, "numpy"):
        return result.numpy()
    if hasattr(result, "block_until_ready"):
        return np.asarray(result.block_until_ready())
    if isinstance(result, (tuple, list)):
        return type(result)(materialize(item) for item in result)
    if isinstance(result, dict):
        return {key: materialize(value) for key, value in result.items()}
    return result


def _time_calls(fn: Callable[[], Any], calls: int) -> float:
    # As timeit does: a garbage collection landing in one block would only add noise.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(calls):
            materialize(fn())
        return time.perf_counter() - start
    finally:
        if gc_was_enabled:
            gc.enable()


def calibrate(fn: Callable[[], Any], min_block_s: float) -> int:
    """Number of calls that makes one block last at least ``min_block_s`` seconds.

    Grows the count from a trial block until one block is long enough; the trial blocks double as
    warm-up and are discarded.
    """
    calls = 1
    while (elapsed := _time_calls(fn, calls)) < min_block_s:
        # Aim 20 % past the target, never more than 10x in one go (the first calls may be slow).
        calls = min(calls * 10, math.ceil(calls * 1.2 * min_block_s / max(elapsed, 1e-9)))
    return calls


def _tracing_count(functions: Sequence[Any]) -> int:
    return sum(f.experimental_get_tracing_count() for f in functions)


def measure(
    fn: Callable[[], Any],
    *,
    label: str,
    unit: str = "call",
    units_per_call: int = 1,
    min_block_s: float = 0.1,
    blocks: int = 10,
    traced: Sequence[Any] = (),
) -> Measurement:
    """Measure ``fn`` (a callable doing ``units_per_call`` units of work) in steady state.

    The first call is timed on its own (``first_call_s``, whole call, tracing and compilation
    included); calibration calls warm up; then ``blocks`` blocks of the calibrated number of calls
    are timed, each result materialized inside the block. ``traced`` are ``tf.function`` objects
    whose traces during the timed blocks are counted into ``retraces``.
    """
    timed = {label: Timed(fn, units_per_call, tuple(traced))}
    return measure_interleaved(timed, unit=unit, min_block_s=min_block_s, blocks=blocks)[0]


def measure_interleaved(
    timed: Mapping[str, Timed], *, unit: str = "call", min_block_s: float = 0.1, blocks: int = 10
) -> list[Measurement]:
    """Measure several labelled callables as :func:`measure` does, in one run whose timed blocks
    take turns (A, B, C, C, B, A, …), so a change in the machine's speed during the run falls on
    every variant alike instead of on whichever ran last."""
    if blocks < 5:
        raise ValueError(f"need at least 5 blocks for a median and spread, got {blocks}")
    first_call_s, calls = {}, {}
    for label, t in timed.items():
        first_call_s[label] = _time_calls(t.call, 1)
        calls[label] = calibrate(t.call, min_block_s)
    traces_before_blocks = {label: _tracing_count(t.traced) for label, t in timed.items()}
    samples: dict[str, list[float]] = {label: [] for label in timed}
    turns = list(timed.items())
    for block in range(blocks):
        # A, B, C, then C, B, A: a steady drift then cancels instead of always favouring A.
        for label, t in turns if block % 2 == 0 else reversed(turns):
            elapsed = _time_calls(t.call, calls[label])
            samples[label].append(elapsed / (calls[label] * t.units_per_call))
    return [
        Measurement(
            label=label,
            unit=unit,
            units_per_call=t.units_per_call,
            calls_per_block=calls[label],
            first_call_s=first_call_s[label],
            block_s=tuple(samples[label]),
            retraces=(_tracing_count(t.traced) - traces_before_blocks[label] if t.traced else None),
        )
        for label, t in timed.items()
    ]
