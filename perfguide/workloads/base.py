"""What a workload is: a question, variants that compute the same thing, and how to time one."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from perfguide.measure.timer import Timed


def watched(*functions: Any) -> tuple[Any, ...]:
    """Those of ``functions`` that are ``tf.function`` objects, whose retracing can be counted."""
    return tuple(f for f in functions if hasattr(f, "experimental_get_tracing_count"))


def forward_flops(model: Any) -> int:
    """Floating-point operations of a Keras model's forward pass for one sample: two per
    multiply-add of each layer with a kernel (dense, convolution, depthwise convolution) at each
    position of its output; the rest (activations, pooling, normalization) is a rounding error."""
    return sum(
        2 * math.prod(layer.output.shape[1:-1]) * math.prod(layer.kernel.shape)
        for layer in model.layers
        if getattr(layer, "kernel", None) is not None
    )


def call_of(fn: Callable[..., Any], *args: Any) -> Timed:
    """``fn(*args)`` as one unit of work; a ``tf.function`` is watched for retracing."""
    return Timed(fn, args, traced=watched(fn))


@dataclasses.dataclass(frozen=True)
class Workload:
    """A registry entry: variants of one computation, timed per ``unit`` of work.

    ``make_call(variant, size)`` builds a fresh variant for a problem of ``size`` (counted in
    ``size_name``) and returns it as a :class:`~perfguide.measure.timer.Timed`.
    ``process_settings`` are environment variables a process must start with to run it (read
    once, at import): such a workload is measured in a fresh process of its own.
    ``timed_alone``: its variants keep working between calls (a ``tf.data`` iterator reads
    ahead in the background), so each is timed in a run of its own; taking turns with others,
    it would take the cores from their blocks and start its own blocks ahead.
    ``lockstep``: its calls run collective operations with other processes (a cluster's
    all-reduce), so every process must make the same calls: blocks of one call each, never as
    many as a time calibrates, which would differ between processes and leave one waiting; and
    each step is waited for through its result, since a cluster has no devices to sync.
    ``requires()`` says why this installation cannot run it (a package or an API it lacks), or
    returns None when it can; ``missing`` are the variants it cannot run, and why (left out of
    ``variants``, and said wherever the workload runs).
    """

    name: str
    question: str
    unit: str
    size_name: str
    default_size: int
    baseline: str
    variants: tuple[str, ...]
    make_call: Callable[[str, int], Timed]
    process_settings: Mapping[str, str] = dataclasses.field(default_factory=dict)
    timed_alone: bool = False
    lockstep: bool = False
    requires: Callable[[], str | None] = lambda: None
    missing: Mapping[str, str] = dataclasses.field(default_factory=dict)
