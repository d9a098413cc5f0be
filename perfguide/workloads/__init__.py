"""The registry of workloads, one module per chapter topic."""

from perfguide.workloads import (
    eager,
    linear_regression,
    tf_function,
    training_loop,
    vectorization,
)
from perfguide.workloads.base import Workload

#: Workload name -> :class:`~perfguide.workloads.base.Workload`.
WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        linear_regression.WORKLOAD,
        *tf_function.WORKLOADS,
        *eager.WORKLOADS,
        *vectorization.WORKLOADS,
        *training_loop.WORKLOADS,
    )
}
