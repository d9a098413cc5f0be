"""Run a workload's variants in this process, their timed blocks interleaved, on one device.

A run can be told which comparisons it must settle (:class:`~perfguide.report.claims.Faster`
claims, or anything with ``labels`` and ``settled(measurements)``): while one is undecided and
more data could decide it, the run adds interleaved blocks of the variants it compares, within a
bounded number of blocks, so a close call is decided by evidence rather than by luck.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from perfguide.measure import limits
from perfguide.measure.environment import gpu_names
from perfguide.measure.timer import Interleaved, Measurement, no_progress

if TYPE_CHECKING:  # importing the workloads imports TensorFlow, which the CLI loads later
    from perfguide.workloads.base import Workload

DEVICES = ("cpu", "gpu")
#: The docs build reads the device for its examples from this variable (``cpu`` unless set).
DEVICE_ENV = "PERFGUIDE_DEVICE"
#: Seconds per timed block and number of blocks in one process: full runs, and ``quick`` ones for
#: a fast look. Each workload is timed in several processes (:mod:`perfguide.processes.pool`),
#: and processes differ by more than the blocks within one do, so a process needs few blocks:
#: more processes buy more precision than more blocks (Kalibera and Jones's advice for the
#: level that varies most).
FULL, QUICK = {"min_block_s": 0.05, "blocks": 6}, {"min_block_s": 0.02, "blocks": 5}
#: Blocks added per round while a comparison is unsettled in a process, the fewest a variant it
#: compares is judged on there, and the most a variant may get.
SETTLE_ROUND, SETTLE_MIN_BLOCKS, SETTLE_MAX_BLOCKS = 3, 5, 10


class Settles(Protocol):
    """A comparison a run must settle: which variants it needs, and whether it is decided."""

    labels: tuple[str, ...]

    def settled(self, measurements: Sequence[Measurement]) -> bool: ...


class DeviceError(RuntimeError):
    """A device was asked for that this machine does not have."""


def default_device() -> str:
    """``$PERFGUIDE_DEVICE`` or ``cpu``."""
    device = os.environ.get(DEVICE_ENV, "cpu")
    if device not in DEVICES:
        raise DeviceError(f"{DEVICE_ENV}={device!r} is not one of {', '.join(DEVICES)}")
    return device


@contextlib.contextmanager
def device_scope(device: str) -> Iterator[None]:
    """Place TensorFlow ops on ``device``; fail with :class:`DeviceError` if it is not there."""
    import tensorflow as tf

    if device not in DEVICES:
        raise DeviceError(f"unknown device {device!r}; choose from {', '.join(DEVICES)}")
    if device == "gpu" and not gpu_names():
        raise DeviceError("a GPU was asked for, but TensorFlow sees none on this machine")
    with tf.device("/GPU:0" if device == "gpu" else "/CPU:0"):
        yield


def check_choices(workload: Workload, variants: Sequence[str], size: int) -> None:
    """Raise ValueError with the valid choices for an unknown variant or a bad size."""
    unknown = [v for v in variants if v not in workload.variants]
    if unknown:
        raise ValueError(
            f"unknown variant {unknown[0]!r} of {workload.name}; "
            f"choose from {', '.join(workload.variants)}"
        )
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"{workload.size_name} must be a positive integer, got {size!r}")


def _undecided(claim: Settles, timing: Interleaved, measurements: Sequence[Measurement]) -> bool:
    """Whether ``claim`` needs more blocks: it has too few to be judged on, or is not settled."""
    fewest = min(len(timing.samples[label]) for label in claim.labels)
    return fewest < SETTLE_MIN_BLOCKS or not claim.settled(measurements)


def _settle(timing: Interleaved, claims: Sequence[Settles]) -> list[Measurement]:
    """Add blocks to the variants of ``claims`` until each claim has :data:`SETTLE_MIN_BLOCKS`
    of them and is settled, or they have had :data:`SETTLE_MAX_BLOCKS` blocks."""
    while True:
        measurements = timing.measurements()
        open_labels = {
            label
            for claim in claims
            if _undecided(claim, timing, measurements)
            for label in claim.labels
            if len(timing.samples[label]) < SETTLE_MAX_BLOCKS
        }
        if not open_labels:
            return measurements
        # Never past the cap: a round is cut short for the variant closest to it.
        most = max(len(timing.samples[label]) for label in open_labels)
        blocks = min(SETTLE_ROUND, SETTLE_MAX_BLOCKS - most)
        timing.add_blocks(blocks, [label for label in timing.timed if label in open_labels])


def _tensorflow_sync() -> Any:
    import tensorflow as tf

    return tf.test.experimental.sync_devices


def run(
    workload: Workload,
    variants: Sequence[str] | None = None,
    *,
    size: int | None = None,
    quick: bool = False,
    blocks: int | None = None,
    device: str = "cpu",
    settle: Sequence[Settles] = (),
    peak: bool = False,
    progress: Callable[[str], None] = no_progress,
) -> list[Measurement]:
    """Measure ``variants`` (default: all) of ``workload`` at ``size`` (default: its own), adding
    blocks while a comparison in ``settle`` is undecided (``blocks``, if given, replaces the
    number of blocks a full or quick run starts with). With ``peak``, the machine's peak
    (:func:`~perfguide.measure.limits.peak_reference`) is timed in turns with them and reported
    as one more measurement. Each block ends by waiting for every device, so work still queued
    on a GPU is timed in the block that started it. ``progress`` is told each step as
    :class:`~perfguide.measure.timer.Interleaved` takes it. A workload whose variants are
    ``timed_alone`` has each variant timed in a run of its own, one after another (nothing to
    settle, no peak in turns)."""
    variants = list(variants or workload.variants)
    size = workload.default_size if size is None else size
    check_choices(workload, variants, size)
    if workload.timed_alone and len(variants) > 1:
        if settle or peak:
            raise ValueError(f"{workload.name} times its variants one at a time: no settle or peak")
        return [
            m
            for variant in variants
            for m in run(
                workload,
                [variant],
                size=size,
                quick=quick,
                blocks=blocks,
                device=device,
                progress=progress,
            )
        ]
    for claim in settle:
        if not set(claim.labels) <= set(variants):
            raise ValueError(f"cannot settle a claim about {claim.labels} from {variants}")
    settings = QUICK if quick else FULL
    with device_scope(device):
        progress("setting up the variants")
        timed = {variant: workload.make_call(variant, size) for variant in variants}
        if peak:
            timed[limits.PEAK] = limits.peak_reference()
        timing = Interleaved(
            timed,
            unit=workload.unit,
            min_block_s=settings["min_block_s"],
            sync=_tensorflow_sync(),
            progress=progress,
        )
        timing.add_blocks(blocks or settings["blocks"])
        measurements = _settle(timing, settle)
    return [
        dataclasses.replace(m, workload=workload.name, size=size, device=device)
        for m in measurements
    ]
