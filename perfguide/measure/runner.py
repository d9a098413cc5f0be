"""Run a workload's variants in this process, their timed blocks interleaved, on one device.

One process's run: the processes above it (:mod:`perfguide.processes.pool`) run it in several
fresh processes, and add processes where a comparison is still undecided.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from perfguide.measure import limits
from perfguide.measure.environment import gpu_names
from perfguide.measure.measurement import Measurement
from perfguide.measure.timer import Interleaved, Timed, no_progress

DEVICES = ("cpu", "gpu")
#: The docs build reads the device for its examples from this variable (``cpu`` unless set).
DEVICE_ENV = "PERFGUIDE_DEVICE"
#: Seconds per timed block and number of blocks in one process: full runs, and ``quick`` ones for
#: a fast look. Each workload is timed in several processes (:mod:`perfguide.processes.pool`),
#: and processes differ by more than the blocks within one do, so a process needs few blocks:
#: more processes buy more precision than more blocks (Kalibera and Jones's advice for the
#: level that varies most).
FULL, QUICK = {"min_block_s": 0.05, "blocks": 6}, {"min_block_s": 0.02, "blocks": 5}


class Runnable(Protocol):
    """What a run needs of a workload (:class:`perfguide.workloads.base.Workload` is one):
    the layer above describes it, this one times it."""

    name: str
    unit: str
    size_name: str
    default_size: int
    variants: tuple[str, ...]
    timed_alone: bool
    lockstep: bool

    def make_call(self, variant: str, size: int) -> Timed: ...


class DeviceError(RuntimeError):
    """A device was asked for that this machine does not have."""


def default_device() -> str:
    """``$PERFGUIDE_DEVICE`` or ``cpu``."""
    device = os.environ.get(DEVICE_ENV, "cpu")
    if device not in DEVICES:
        raise DeviceError(f"{DEVICE_ENV}={device!r} is not one of {', '.join(DEVICES)}")
    return device


def check_device(device: str) -> None:
    """Raise :class:`DeviceError` for a device that is unknown or that this machine lacks."""
    if device not in DEVICES:
        raise DeviceError(f"unknown device {device!r}; choose from {', '.join(DEVICES)}")
    if device == "gpu" and not gpu_names():
        raise DeviceError("a GPU was asked for, but TensorFlow sees none on this machine")


@contextlib.contextmanager
def device_scope(device: str) -> Iterator[None]:
    """Place TensorFlow ops on ``device``; fail with :class:`DeviceError` if it is not there."""
    import tensorflow as tf

    check_device(device)
    with tf.device("/GPU:0" if device == "gpu" else "/CPU:0"):
        yield


def check_choices(workload: Runnable, variants: Sequence[str], size: int) -> None:
    """Raise ValueError with the valid choices for an unknown variant or a bad size."""
    unknown = [v for v in variants if v not in workload.variants]
    if unknown:
        raise ValueError(
            f"unknown variant {unknown[0]!r} of {workload.name}; "
            f"choose from {', '.join(workload.variants)}"
        )
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"{workload.size_name} must be a positive integer, got {size!r}")


def _tensorflow_sync() -> Any:
    import tensorflow as tf

    return tf.test.experimental.sync_devices


def make_calls(
    workload: Runnable,
    variants: Sequence[str] | None = None,
    *,
    size: int | None = None,
    device: str = "cpu",
    progress: Callable[[str], None] = no_progress,
) -> dict[str, Timed]:
    """The calls :func:`run` times for ``variants`` (default: all) of ``workload`` at ``size``
    (default: its own), made (their data, models and functions) but not yet called. Nothing
    here is timed, so processes may make theirs side by side before they take turns timing."""
    variants = list(variants or workload.variants)
    size = workload.default_size if size is None else size
    check_choices(workload, variants, size)
    with device_scope(device):
        progress("setting up the variants")
        return {variant: workload.make_call(variant, size) for variant in variants}


def run(
    workload: Runnable,
    variants: Sequence[str] | None = None,
    *,
    size: int | None = None,
    quick: bool = False,
    blocks: int | None = None,
    device: str = "cpu",
    peak: bool = False,
    progress: Callable[[str], None] = no_progress,
    made: Mapping[str, Timed] | None = None,
) -> list[Measurement]:
    """Measure ``variants`` (default: all) of ``workload`` at ``size`` (default: its own) in
    interleaved blocks (``blocks``, if given, replaces the number of blocks a full or quick run
    takes), from the calls :func:`make_calls` made for them (``made``, else made here). With
    ``peak``, the machine's peak (:func:`~perfguide.measure.limits.peak_reference`) is timed
    in turns with them and reported as one more measurement. Each block ends by waiting for
    every device, so work still queued on a GPU is timed in the block that started it.
    ``progress`` is told each step as :class:`~perfguide.measure.timer.Interleaved` takes it. A
    workload whose variants are ``timed_alone`` has each variant made and timed in a run of its
    own, one after another (no peak in turns)."""
    variants = list(variants or workload.variants)
    size = workload.default_size if size is None else size
    check_choices(workload, variants, size)
    if workload.timed_alone and len(variants) > 1:
        if peak:
            raise ValueError(f"{workload.name} times its variants one at a time: no peak in turns")
        if made is not None:
            raise ValueError(f"{workload.name} makes each variant's call only before its run")
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
    if made is None:
        made = make_calls(workload, variants, size=size, device=device, progress=progress)
    elif list(made) != variants:
        raise ValueError(f"calls were made for {list(made)}, not for {variants}")
    settings = QUICK if quick else FULL
    with device_scope(device):
        timed = dict(made)
        if peak:
            timed[limits.PEAK] = limits.peak_reference()
        timing = Interleaved(
            timed,
            unit=workload.unit,
            # No block shorter than nothing: one call a block, the same in every process.
            min_block_s=0.0 if workload.lockstep else settings["min_block_s"],
            # A cluster's context has no devices of its peers to sync (TensorFlow raises):
            # its steps are waited for through their results.
            sync=None if workload.lockstep else _tensorflow_sync(),
            progress=progress,
        )
        measurements = timing.add_blocks(blocks or settings["blocks"]).measurements()
    return [
        dataclasses.replace(m, workload=workload.name, size=size, device=device)
        for m in measurements
    ]
