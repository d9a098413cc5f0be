"""The registry of workloads, one module per chapter topic."""

from perfguide.workloads import (
    eager,
    linear_regression,
    mixed_precision,
    serving,
    tf_data,
    tf_function,
    timing,
    training_loop,
    vectorization,
)
from perfguide.workloads.base import Workload

#: Chapter topic -> its workloads, in the chapters' reading order.
TOPICS: dict[str, tuple[Workload, ...]] = {
    "linear_regression": (linear_regression.WORKLOAD,),
    "tf_function": tf_function.WORKLOADS,
    "eager": eager.WORKLOADS,
    "vectorization": vectorization.WORKLOADS,
    "training_loop": training_loop.WORKLOADS,
    "timing": timing.WORKLOADS,
    "mixed_precision": mixed_precision.WORKLOADS,
    "tf_data": tf_data.WORKLOADS,
    "serving": serving.WORKLOADS,
}
#: Workload name -> :class:`~perfguide.workloads.base.Workload`.
WORKLOADS: dict[str, Workload] = {w.name: w for ws in TOPICS.values() for w in ws}
