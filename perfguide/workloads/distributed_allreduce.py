"""What the gradient all-reduce of synchronous data-parallel training costs, and what a step
projects to on more workers: the model behind "Why doesn't my distributed training scale?".

An all-reduce of ``n`` bytes between two workers, timed at several sizes, is fitted as
``2 × latency + n / bandwidth`` (:func:`fit_link`, each miss relative to its timing): the ring
all-reduce over two workers sends each link all the bytes, in two steps. Over N workers a ring
sends each link 2(N−1)/N of the bytes, in 2(N−1) steps that each pay the latency
(:func:`ring_allreduce_s`; Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for
clusters of workstations", 2009; Thakur, Rabenseifner & Gropp, "Optimization of collective
communication operations in MPICH", 2005).

A projected step is its computation, then the all-reduce of its gradients, with no overlap of
the two (:func:`project`): what a step costs at most under the model, and always labelled a
projection, never a measurement. A message's latency is two costs: the host's (the framework's
and the operating system's work a message, which a fit over the loopback measures, the wire
adding next to nothing there) and the network's (:data:`DATACENTER_LATENCY_S`, cited);
:func:`terms` sets them apart from the bandwidth's and the computation's share of a step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

import numpy as np

#: A network's latency a message, one way: half the 500 µs round trip within a datacenter of
#: Jeff Dean's "Numbers everyone should know" (his LADIS 2009 keynote).
DATACENTER_LATENCY_S = 250e-6

#: Weak scaling keeps each worker's batch (examples per second should grow with the workers);
#: strong scaling keeps the global batch (the time per step should fall).
Scaling = Literal["weak", "strong"]


@dataclasses.dataclass(frozen=True)
class Link:
    """A link between two workers: seconds each message waits (``latency_s``) and bytes a
    second it carries (``bandwidth``)."""

    latency_s: float
    bandwidth: float

    def __post_init__(self):
        if self.latency_s < 0 or self.bandwidth <= 0:
            raise ValueError(f"a link needs a latency of 0 or more and a bandwidth above 0: {self}")

    @classmethod
    def network(cls, gbit_per_s: float, latency_s: float) -> Link:
        """A network of ``gbit_per_s`` gigabits a second (as NICs are sold), ``latency_s`` a
        message.

        >>> Link.network(10, 50e-6).bandwidth
        1250000000.0
        """
        return cls(latency_s, gbit_per_s * 1e9 / 8)


def fit_link(nbytes: Sequence[float], seconds: Sequence[float]) -> Link:
    """The link whose two-worker ring all-reduce best fits ``seconds`` for ``nbytes``: least
    squares on ``2 × latency + bytes / bandwidth``, each timing's miss counted relative to it
    (timings err in proportion to their size; absolute misses would let the largest message
    decide the latency). A negative fitted latency counts as none."""
    if len(nbytes) != len(seconds) or len(set(nbytes)) < 2:
        raise ValueError("fitting a link needs times at two sizes or more, one time a size")
    times = np.asarray(seconds, dtype=float)
    slope, intercept = np.polyfit(np.asarray(nbytes, dtype=float), times, 1, w=1 / times)
    if slope <= 0:
        raise ValueError("the all-reduce did not take longer for more bytes: no bandwidth to fit")
    return Link(max(intercept, 0.0) / 2, 1 / slope)


def ring_allreduce_s(nbytes: float, workers: int, link: Link) -> float:
    """Seconds a ring all-reduce of ``nbytes`` takes over ``workers`` workers on ``link``.

    >>> link = Link(latency_s=1e-5, bandwidth=1e9)
    >>> ring_allreduce_s(1e6, 1, link), ring_allreduce_s(1e6, 2, link)
    (0.0, 0.00102)
    """
    if workers < 1:
        raise ValueError(f"an all-reduce needs at least one worker, got {workers}")
    steps = 2 * (workers - 1)
    return steps * link.latency_s + steps / workers * nbytes / link.bandwidth


@dataclasses.dataclass(frozen=True)
class Projection:
    """One synchronous step on ``workers`` workers, projected: its seconds, its speed-up in
    examples a second against one worker, and that speed-up per worker (the efficiency)."""

    workers: int
    step_s: float
    speedup: float

    @property
    def efficiency(self) -> float:
        return self.speedup / self.workers


def project(
    compute_s: float, gradient_bytes: float, workers: int, link: Link, scaling: Scaling
) -> Projection:
    """A step of ``compute_s`` on one worker, on ``workers`` workers that all-reduce
    ``gradient_bytes`` of gradients over ``link``: with each worker's batch kept (``weak``), or
    the global batch split between them (``strong``, each computing 1/N of it).

    >>> link = Link(latency_s=0.0, bandwidth=1e9)
    >>> project(0.01, 1e7, 2, link, "weak")
    Projection(workers=2, step_s=0.02, speedup=1.0)
    >>> round(project(0.01, 1e7, 2, link, "strong").speedup, 3)  # slower: the all-reduce
    0.667
    """
    per_worker = compute_s if scaling == "weak" else compute_s / workers
    step_s = per_worker + ring_allreduce_s(gradient_bytes, workers, link)
    examples = workers if scaling == "weak" else 1
    return Projection(workers, step_s, examples * compute_s / step_s)


@dataclasses.dataclass(frozen=True)
class Terms:
    """Where a projected step's seconds go on ``workers`` workers: the computation, the
    all-reduce's messages' cost on the hosts and on the network, and its bytes over the
    bandwidth."""

    workers: int
    compute_s: float
    host_s: float
    network_s: float
    bandwidth_s: float

    @property
    def dominant(self) -> str:
        """The term that takes the most of the step, in words.

        >>> Terms(8, 0.01, 0.014, 0.0035, 0.003).dominant
        "the hosts' cost a message"
        """
        named = {
            "the computation": self.compute_s,
            "the hosts' cost a message": self.host_s,
            "the network's latency": self.network_s,
            "the bandwidth": self.bandwidth_s,
        }
        return max(named, key=named.__getitem__)


def terms(
    compute_s: float,
    gradient_bytes: float,
    workers: int,
    host_s: float,
    network_s: float,
    bandwidth: float,
    scaling: Scaling,
) -> Terms:
    """The terms of :func:`project`'s step, where each of the ring's 2(N−1) messages pays
    ``host_s`` on the hosts and ``network_s`` on the network, and its bytes ``bandwidth``.

    >>> t = terms(0.01, 1e6, 2, host_s=1e-3, network_s=2.5e-4, bandwidth=1e9, scaling="weak")
    >>> t.host_s, t.network_s, t.bandwidth_s
    (0.002, 0.0005, 0.001)
    """
    steps = 2 * (workers - 1)
    per_worker = compute_s if scaling == "weak" else compute_s / workers
    return Terms(
        workers,
        per_worker,
        steps * host_s,
        steps * network_s,
        steps / workers * gradient_bytes / bandwidth,
    )
