"""A reader's model on N workers, projected: its training step as measured here, each worker
keeping the reader's batch (weak scaling), with the model's gradients all-reduced by a ring over
a network the reader names (:mod:`perfguide.workloads.distributed_allreduce`).

A projection, never a measurement: the step is this machine's, the network's bandwidth is the
reader's word, and each message pays :data:`HOST_S` on the hosts, about what TensorFlow's
all-reduce took a message between two processes on one machine in the distributed chapter, and
:data:`~perfguide.workloads.distributed_allreduce.DATACENTER_LATENCY_S` on the network (a cited
figure). The chapter says where such a projection holds and where it does not.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from perfguide.diagnose.parent.evidence import Evidence
from perfguide.report.format import format_bytes, format_seconds
from perfguide.report.tables.table import Table
from perfguide.workloads.distributed_allreduce import (
    DATACENTER_LATENCY_S,
    Link,
    Projection,
    project,
)

#: Seconds each message of an all-reduce pays on the hosts, beside the network's latency and
#: the bytes it carries.
HOST_S = 1e-3
#: A message's latency in all.
LATENCY_S = HOST_S + DATACENTER_LATENCY_S
#: The workers projected unless the reader names a largest count, and the network's speed.
WORKERS, NETWORK_GBPS = 8, 10.0


@dataclasses.dataclass(frozen=True)
class ModelProjection:
    """The projection of one model's training: its step here and gradient bytes, the network,
    and each count of workers' projected step."""

    step_s: float
    gradient_bytes: int
    network_gbps: float
    projections: tuple[Projection, ...]

    def table(self) -> Table:
        caption = (
            f"Projected, not measured: a training step of {format_seconds(self.step_s)} here "
            f"on each worker, {format_bytes(self.gradient_bytes)} of gradients all-reduced a "
            f"step over {self.network_gbps:g} Gb/s, {format_seconds(HOST_S)} a message on the "
            f"hosts and {format_seconds(DATACENTER_LATENCY_S)} on the network"
        )
        rows = [
            [
                str(p.workers),
                format_seconds(p.step_s),
                f"{p.speedup:.2f}x",
                f"{p.efficiency:.0%}",
            ]
            for p in self.projections
        ]
        return Table(caption, ["workers", "step", "speed-up", "scaling efficiency"], rows)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def worker_counts(largest: int) -> list[int]:
    """Powers of two from 2 to ``largest``, and ``largest`` itself.

    >>> worker_counts(8), worker_counts(6), worker_counts(1)
    ([2, 4, 8], [2, 4, 6], [1])
    """
    if largest < 2:
        return [largest]
    counts = [2**k for k in range(1, largest.bit_length()) if 2**k < largest]
    return [*counts, largest]


def of(
    evidence: Evidence, largest: int = WORKERS, network_gbps: float = NETWORK_GBPS
) -> ModelProjection | None:
    """The projection of the model ``evidence`` trained (its training step as the reader's code
    trains, ``fit`` per step), on up to ``largest`` workers; None for a function or a model
    that was not trained."""
    registered = evidence.registered
    as_written = registered.training_as_written
    step = next((m for m in evidence.forms if m.unit == "step" and m.label == as_written), None)
    if step is None or registered.gradient_bytes is None:
        return None
    link = Link.network(network_gbps, LATENCY_S)
    nbytes = registered.gradient_bytes
    counts: Sequence[int] = worker_counts(largest)
    projections = tuple(project(step.median_s, nbytes, n, link, "weak") for n in counts)
    return ModelProjection(step.median_s, nbytes, network_gbps, projections)
