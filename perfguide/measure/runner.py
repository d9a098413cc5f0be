"""Run a workload's variants in this process, their timed blocks interleaved, on one device."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Sequence

from perfguide.measure.environment import gpu_names
from perfguide.measure.timer import Measurement, measure_interleaved
from perfguide.workloads.base import Workload

DEVICES = ("cpu", "gpu")
#: The docs build reads the device for its examples from this variable (``cpu`` unless set).
DEVICE_ENV = "PERFGUIDE_DEVICE"
#: Seconds per timed block and number of blocks: full runs, and ``quick`` ones for a fast look.
FULL, QUICK = {"min_block_s": 0.1, "blocks": 10}, {"min_block_s": 0.02, "blocks": 5}


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


def run(
    workload: Workload,
    variants: Sequence[str] | None = None,
    *,
    size: int | None = None,
    quick: bool = False,
    device: str = "cpu",
) -> list[Measurement]:
    """Measure ``variants`` (default: all) of ``workload`` at ``size`` (default: its own)."""
    variants = list(variants or workload.variants)
    size = workload.default_size if size is None else size
    check_choices(workload, variants, size)
    with device_scope(device):
        timed = {variant: workload.make_call(variant, size) for variant in variants}
        measurements = measure_interleaved(timed, unit=workload.unit, **(QUICK if quick else FULL))
    return [
        dataclasses.replace(m, workload=workload.name, size=size, device=device)
        for m in measurements
    ]
