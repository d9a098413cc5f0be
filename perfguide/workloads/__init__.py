"""The registry of workloads, one module per chapter topic.

The registry is built when first asked for (:data:`TOPICS`, :data:`WORKLOADS`): building it
imports every workload module and so TensorFlow, which a module of this package that needs none
(:mod:`perfguide.workloads.runtimes`, loaded by a serving process that must not import it) would
otherwise pay for.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perfguide.workloads.base import Workload


@functools.cache
def _topics() -> dict[str, tuple[Workload, ...]]:
    from perfguide.workloads import (
        eager,
        keras_backends,
        linear_regression,
        mixed_precision,
        serving,
        tf_data,
        tf_function,
        timing,
        training_loop,
        vectorization,
    )

    return {
        "linear_regression": (linear_regression.WORKLOAD,),
        "tf_function": tf_function.WORKLOADS,
        "eager": eager.WORKLOADS,
        "vectorization": vectorization.WORKLOADS,
        "training_loop": training_loop.WORKLOADS,
        "timing": timing.WORKLOADS,
        "mixed_precision": mixed_precision.WORKLOADS,
        "tf_data": tf_data.WORKLOADS,
        "serving": serving.WORKLOADS,
        "keras_backends": keras_backends.WORKLOADS,
    }


@functools.cache
def _workloads() -> dict[str, Workload]:
    return {w.name: w for ws in _topics().values() for w in ws}


def __getattr__(name: str) -> Any:
    """``TOPICS``: chapter topic -> its workloads, in the chapters' reading order;
    ``WORKLOADS``: workload name -> :class:`~perfguide.workloads.base.Workload`."""
    if name == "TOPICS":
        return _topics()
    if name == "WORKLOADS":
        return _workloads()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
