"""The distributed chapter: the setups' measurements as each section compares them, its checks,
the anatomy of a two-worker step, the projection past one machine, Keras's ``fit`` under each
strategy, and the short answer built from them."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from matplotlib.axes import Axes

from perfguide.measure.measurement import Measurement, at_size, pick
from perfguide.processes import distributed_setups
from perfguide.processes.distributed_setups import Setup
from perfguide.report.format import format_bytes, format_seconds
from perfguide.report.plots import projection_plot
from perfguide.report.publishing.answers import Change, Recommendation, ShortAnswer
from perfguide.report.tables.table import Table
from perfguide.report.verdicts.claims import Claim, ClaimReport, Faster, Share, predicts
from perfguide.report.verdicts.ratios import ratio_interval
from perfguide.workloads import distributed, distributed_input
from perfguide.workloads.base import Workload
from perfguide.workloads.distributed_allreduce import (
    DATACENTER_LATENCY_S,
    Link,
    Projection,
    fit_link,
    project,
    ring_allreduce_s,
    terms,
)

PER_WORKER, GLOBAL, LARGE = (
    distributed_setups.PER_WORKER,
    distributed_setups.GLOBAL,
    distributed_setups.LARGE,
)
TWO = distributed_setups.TWO_WORKERS_PINNED.workers
ONE_PROCESS, ONE_CORE = distributed_setups.ONE_PROCESS.name, distributed_setups.ONE_CORE.name
PINNED, UNPINNED = distributed_setups.TWO_WORKERS_PINNED.name, distributed_setups.TWO_WORKERS.name

SLOWER_THAN_ONE = Faster(ONE_PROCESS, PINNED)
PINNING = Faster(PINNED, UNPINNED)
# Two workers train examples at twice the rate of one alone on one core at 100 % efficiency;
# 90 % is what Horovod's benchmarks report for large models (cited on the page).
EFFICIENT = 0.9


@dataclasses.dataclass(frozen=True)
class Efficiency:
    """Two pinned workers' examples a second, each on a batch of ``each``, as a share of twice
    one worker's on one core: checked on :func:`one_worker_against_two`'s measurements."""

    each: int

    @property
    def share(self) -> Share:
        two, one = f"{PINNED} ({self.each} each)", f"{ONE_CORE} ({self.each})"
        return Share(two, one, EFFICIENT, work=1, reference_work=2)

    @property
    def labels(self) -> tuple[str, str]:
        return self.share.variant, self.share.reference

    def check(self, measurements: Sequence[Measurement]) -> Claim:
        claim = self.share.check(measurements)
        return claim.restated(
            f"two pinned workers reach at least {EFFICIENT:.0%} scaling efficiency "
            f"({self.each} each)",
            claim.effect.split(" of ")[0] + " scaling efficiency",
        )


WEAK_EFFICIENCY = Efficiency(PER_WORKER)
#: The checks at the global batch: what #60245 and #48374 saw, pinning, and the efficiency.
WEAK_CLAIMS = (
    SLOWER_THAN_ONE,
    PINNING,
    Faster(ONE_PROCESS, distributed_setups.MIRRORED.name),
    WEAK_EFFICIENCY,
)
LARGE_EFFICIENCY = Efficiency(LARGE)
#: Whether splitting the batch pays, and the efficiency at 512 a worker.
SCALE_CLAIMS = (Faster(f"{PINNED} (32 each)", f"{ONE_PROCESS} (64)"), LARGE_EFFICIENCY)
FLOAT16_GRADIENTS = Faster("float16 gradients", distributed.OPTIMIZERS)
#: Each way to all-reduce the gradients against the optimizer's own.
REDUCTION_CLAIMS = tuple(
    Faster(name, distributed.OPTIMIZERS) for name in list(distributed.REDUCTIONS)[1:]
)
FILE_SHARDING = Faster("FILE", "DATA")
#: Whether reading every file, or building the pipeline in a function, costs the workers, and
#: what reading the files costs a step at all.
INPUT_CLAIMS = (
    FILE_SHARDING,
    Faster(distributed_input.FROM_FUNCTION, "DATA"),
    Faster(distributed_input.IN_MEMORY, "FILE"),
)

#: The chapter's measurements, by the setup that took them (as
#: :func:`~perfguide.processes.distributed_setups.measure` returns them).
BySetup = Mapping[Setup, Sequence[Measurement]]

#: The workers the projection goes to, and the networks it projects onto (Gb/s as sold).
COUNTS = (1, 2, 4, 8, 16, 32, 64)
NETWORKS_GBPS = (1, 10, 25, 100)
#: The network the projection is also drawn on without the host's cost, and whose terms are
#: set apart.
REFERENCE_GBPS = 25


def every_measurement(measured: BySetup) -> list[Measurement]:
    """Every setup's measurements, one list."""
    return [m for ms in measured.values() for m in ms]


def of_workload(measured: BySetup, workload: Workload) -> list[Measurement]:
    """Every setup's measurements of ``workload``."""
    return [m for m in every_measurement(measured) if m.workload == workload.name]


def labelled_at(measurements: Sequence[Measurement], size: int, suffix: str) -> list[Measurement]:
    """The measurements at ``size``, labelled by setup and ``suffix``."""
    return [dataclasses.replace(m, label=m.label + suffix) for m in measurements if m.size == size]


def steps_of(measured: BySetup, setup: Setup) -> list[Measurement]:
    """``setup``'s training steps, at every global batch it trained."""
    return [m for m in measured[setup] if m.workload == distributed.DISTRIBUTED_STEP.name]


def weak_scaling(measured: BySetup) -> list[Measurement]:
    """Every setup's step at the global batch, labelled by setup."""
    return at_size(of_workload(measured, distributed.DISTRIBUTED_STEP), GLOBAL)


def one_worker_against_two(measured: BySetup, each: int) -> list[Measurement]:
    """The step of one process on one core at a batch of ``each``, and of two pinned workers
    at ``each`` each, labelled with their batches ("two workers, pinned (64 each)")."""
    return labelled_at(
        steps_of(measured, distributed_setups.ONE_CORE), each, f" ({each})"
    ) + labelled_at(
        steps_of(measured, distributed_setups.TWO_WORKERS_PINNED), 2 * each, f" ({each} each)"
    )


def strong_scaling(measured: BySetup) -> list[Measurement]:
    """The step of one process at a batch of 64, and of two pinned workers splitting it."""
    return labelled_at(
        steps_of(measured, distributed_setups.ONE_PROCESS), PER_WORKER, " (64)"
    ) + labelled_at(
        steps_of(measured, distributed_setups.TWO_WORKERS_PINNED), PER_WORKER, " (32 each)"
    )


def allreduce_alone(measured: BySetup) -> list[Measurement]:
    """The all-reduce alone between the two pinned workers: of each size, and of the
    gradients in each dtype."""
    return [m for m in measured[distributed_setups.TWO_WORKERS_PINNED] if m.unit == "all-reduce"]


def fitted_link(alone: Sequence[Measurement]) -> Link:
    """The link whose ring all-reduce fits the all-reduces of known sizes in ``alone``."""
    sized = [m for m in alone if m.label in distributed.ALLREDUCE_BYTES]
    return fit_link(
        [distributed.ALLREDUCE_BYTES[m.label] for m in sized], [m.median_s for m in sized]
    )


@dataclasses.dataclass(frozen=True)
class Anatomy:
    """A two-pinned-worker step (64 each) against one worker's computation on one core (64)
    plus the all-reduce of ``gradient_bytes`` of gradients over the fitted ``link``."""

    link: Link
    gradient_bytes: int
    one_core: Measurement
    two_workers: Measurement

    @property
    def allreduce_s(self) -> float:
        """The gradients' all-reduce between two workers on the fitted link."""
        return ring_allreduce_s(self.gradient_bytes, TWO, self.link)

    @property
    def worker_step_s(self) -> float:
        """One worker's computation a step, on one core."""
        return self.one_core.median_s * PER_WORKER

    @property
    def measured_ratio(self) -> tuple[float, float, float]:
        """The two workers' time an example over one worker's on one core, with its rerun
        interval."""
        return ratio_interval(self.two_workers, self.one_core)

    @property
    def claim(self) -> Claim:
        """That the computation plus the fitted all-reduce predicts the two workers' step."""
        # (w + a) / w over the one-core step's median and rerun interval (the link as given).
        predicted = tuple(
            1 + self.allreduce_s / (step_s * PER_WORKER)
            for step_s in (self.one_core.median_s, *reversed(self.one_core.interval_s))
        )
        # Per example, two workers train twice the examples a step: a step's ratio is twice as
        # large. Within 1.25x either way: computation alone (a ratio of 1) lies beyond it, so
        # the check can tell the all-reduce's share from none.
        return predicts(
            "computation on one core plus the fitted all-reduce predicts the two workers' step "
            "within 1.25x",
            predicted,
            tuple(2 * r for r in self.measured_ratio),
            "a two-worker step over a one-core step",
            within=1.25,
        )

    def __str__(self) -> str:
        return (
            f"latency {format_seconds(self.link.latency_s)} a message, bandwidth "
            f"{self.link.bandwidth / 1e9:.2f} GB/s; the {format_bytes(self.gradient_bytes)} of "
            f"gradients: {format_seconds(self.allreduce_s)} an all-reduce"
        )


def anatomy(link: Link, per_worker: Sequence[Measurement]) -> Anatomy:
    """:class:`Anatomy` from ``per_worker``, :func:`one_worker_against_two` at 64 each."""
    one_core, two_workers = pick(per_worker, f"{ONE_CORE} (64)", f"{PINNED} (64 each)")
    gradient_bytes = distributed.gradient_bytes(distributed.make_model())
    return Anatomy(link, gradient_bytes, one_core, two_workers)


def halving_claim(alone: Sequence[Measurement], reductions: Sequence[Measurement]) -> Claim:
    """That what float16 saves the all-reduce alone predicts what it saves a step."""
    optimizers_step, float16_step = pick(reductions, FLOAT16_GRADIENTS.slow, FLOAT16_GRADIENTS.fast)
    as_float32, as_float16 = pick(alone, *distributed.GRADIENT_ALLREDUCES)
    # What float16 saves the all-reduce alone, with its rerun interval's half-width (the two
    # all-reduces' half-widths added as independent errors).
    saved_s = as_float32.median_s - as_float16.median_s
    widths = (m.interval_s[1] - m.interval_s[0] for m in (as_float32, as_float16))
    half_s = math.hypot(*widths) / 2
    step_s = optimizers_step.median_s * GLOBAL
    # Within 1.1x either way: a float16 step no faster than the optimizer's (a ratio of 1) lies
    # beyond it, so the check can tell the saving from none.
    return predicts(
        "the all-reduce alone, float16 against float32, predicts what float16 gradients save a "
        "step within 1.1x",
        tuple(1 - saved / step_s for saved in (saved_s, saved_s + half_s, saved_s - half_s)),
        ratio_interval(float16_step, optimizers_step),
        "a float16 step over the optimizer's",
        within=1.1,
    )


def _weak(anatomy: Anatomy, link: Link) -> list[Projection]:
    return [project(anatomy.worker_step_s, anatomy.gradient_bytes, n, link, "weak") for n in COUNTS]


def projections(anatomy: Anatomy) -> dict[str, list[Projection]]:
    """Weak scaling to each of :data:`COUNTS` workers on each network, each message paying the
    fitted host cost and a datacenter's latency; and at :data:`REFERENCE_GBPS` without the host
    cost."""
    host_s = anatomy.link.latency_s
    projected = {
        f"{gbps:g} Gb/s (projected)": _weak(
            anatomy, Link.network(gbps, host_s + DATACENTER_LATENCY_S)
        )
        for gbps in NETWORKS_GBPS
    }
    projected[f"{REFERENCE_GBPS} Gb/s, no host cost (projected)"] = _weak(
        anatomy, Link.network(REFERENCE_GBPS, DATACENTER_LATENCY_S)
    )
    return projected


def speedup_plot(projected: Mapping[str, Sequence[Projection]], anatomy: Anatomy) -> Axes:
    """The projected speed-ups, with the two workers' as measured here: examples a second
    against one worker on one core."""
    ratio, low, high = anatomy.measured_ratio
    series = {label: [(p.workers, p.speedup) for p in ps] for label, ps in projected.items()}
    ax = projection_plot(series, measured={TWO: (1 / ratio, 1 / high, 1 / low)})
    ax.set_title("Speed-up of the MLP's training, weak scaling")
    return ax


def efficiencies(projected: Mapping[str, Sequence[Projection]]) -> str:
    """Each projection's efficiency at its most workers, a line each."""
    return "\n".join(
        f"{label}: {series[-1].workers} workers, {series[-1].efficiency:.0%} efficiency"
        for label, series in projected.items()
    )


def where_a_step_goes(anatomy: Anatomy) -> str:
    """Which term takes the most of a projected step at :data:`REFERENCE_GBPS`, a line for each
    count of workers past one."""
    bandwidth = Link.network(REFERENCE_GBPS, 0).bandwidth
    lines = []
    for n in COUNTS[1:]:
        t = terms(
            anatomy.worker_step_s,
            anatomy.gradient_bytes,
            n,
            anatomy.link.latency_s,
            DATACENTER_LATENCY_S,
            bandwidth,
            "weak",
        )
        lines.append(
            f"{n:2d} workers at {REFERENCE_GBPS} Gb/s: computation {format_seconds(t.compute_s)}, "
            f"hosts {format_seconds(t.host_s)}, network latency {format_seconds(t.network_s)}, "
            f"bandwidth {format_seconds(t.bandwidth_s)}: {t.dominant} takes the most"
        )
    return "\n".join(lines)


def fit_table(outcomes: Sequence[distributed_setups.FitOutcome]) -> Table:
    """Whether Keras's ``fit`` ran under each setup, and its time a step."""
    rows = [
        [
            outcome.setup.name,
            outcome.keras,
            f"fails: {outcome.reason}" if outcome.failure else "runs",
            format_seconds(outcome.measured.median_s * GLOBAL) if outcome.measured else "",
        ]
        for outcome in outcomes
    ]
    return Table(
        f"fit, global batch {GLOBAL}: one call of {distributed.FIT_STEPS} steps, its time a step "
        "(fit's own cost a call included)",
        ["setup", "Keras", "fit", "a step"],
        rows,
    )


def _answer(cores: int, weak: ClaimReport, scale: ClaimReport, anatomy: Anatomy) -> str:
    return (
        "Because workers on one machine share what one process had, and every step waits for "
        f"the all-reduce of the gradients. On this {cores}-core machine, at the same global "
        f"batch, {weak[SLOWER_THAN_ONE].stated}. Two "
        f"pinned workers reached {weak[WEAK_EFFICIENCY].quoted}; with 512 examples a worker, "
        f"{scale[LARGE_EFFICIENCY].quoted}. A two-worker step is one worker's computation on "
        f"one core plus the all-reduce of {format_bytes(anatomy.gradient_bytes)} of gradients, "
        f"which the link fitted here puts at {format_seconds(anatomy.allreduce_s)}; the step as "
        f"measured came to {anatomy.claim.quoted}."
    )


def short_answer(
    cores: int,
    weak: ClaimReport,
    scale: ClaimReport,
    anatomy: Anatomy,
    inputs: ClaimReport,
    reductions: ClaimReport,
) -> ShortAnswer:
    """The box atop the page, on a machine of ``cores`` cores: ``weak``, ``scale``, ``inputs``
    and ``reductions``, :data:`WEAK_CLAIMS`, :data:`SCALE_CLAIMS`, :data:`INPUT_CLAIMS` and
    :data:`REDUCTION_CLAIMS` checked (:meth:`ClaimReport.of`); ``anatomy``, the two-worker
    step's."""
    advice = [
        Recommendation(
            f"On a machine with few cores ({cores} here), train in one process rather than a "
            "worker per core",
            weak[SLOWER_THAN_ONE],
            Change("workers on one machine", "one", cpu=f"{cores} cores"),
        ),
        Recommendation(
            "Pin each worker to its own cores",
            weak[PINNING],
            Change("each worker's cores", "pinned", workers="several on one machine"),
            recipe="pin-each-worker-to-its-own-core",
        ),
        Recommendation(
            "Give each worker a larger batch before adding workers",
            scale[LARGE_EFFICIENCY],
            Change("the batch of each worker", "larger", workers="several"),
            recipe="gradient-bytes-and-the-all-reduce-they-cost",
        ),
        Recommendation(
            "Let each worker read its own files (FILE sharding, the default for files), not "
            "every file (DATA)",
            inputs[FILE_SHARDING],
            Change("auto_shard_policy", "FILE", data="several files"),
        ),
        Recommendation(
            "Where the all-reduce is slow (loopback here), all-reduce the gradients in float16",
            reductions[FLOAT16_GRADIENTS],
            Change(
                "the dtype of the all-reduced gradients", "float16", link="slow (loopback here)"
            ),
            recipe="all-reduce-the-gradients-yourself",
        ),
    ]
    return ShortAnswer(_answer(cores, weak, scale, anatomy), advice)
