"""The ways to run one training that "Why doesn't my distributed training scale?" compares: a
strategy, the processes of its cluster on this machine, and what they start with.

A setup is timed in several clusters of fresh processes, one after another (:func:`time_setup`):
each cluster is one process of the measurements, and every timing a cluster runs (a step at
several global batches, the all-reduce alone) is timed in turn in that cluster, so that they
compare process by process. Measurements of two setups come from different processes: they
compare as unpaired measurements do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from perfguide.measure.environment import processes_for
from perfguide.measure.measurement import Measurement
from perfguide.processes.distributed_cluster import Task, time_in_clusters
from perfguide.processes.fresh import ChildError
from perfguide.workloads import distributed, distributed_input
from perfguide.workloads.training_loop import LEGACY_KERAS

#: Seconds a cluster may take, start to end, before it is stopped as failed.
TIMEOUT_S = 180.0


@dataclasses.dataclass(frozen=True)
class Setup:
    """One way to run the training: ``name`` (what the chapter calls it), the strategy of
    :data:`perfguide.workloads.distributed.STRATEGIES`, its cluster's tasks and the settings
    its processes start with."""

    name: str
    strategy: str
    tasks: tuple[Task, ...]
    settings: Mapping[str, str] = dataclasses.field(default_factory=dict, hash=False)

    @property
    def workers(self) -> int:
        """The processes that train: its workers (one process without a cluster)."""
        return max(1, sum(task.role == "worker" for task in self.tasks))


def workers(count: int, pinned: bool, serve: bool = False) -> tuple[Task, ...]:
    """``count`` worker tasks, pinned one to a core (worker i to core i) or not."""
    return tuple(Task("worker", i, core=i if pinned else None, serves=serve) for i in range(count))


ONE_PROCESS = Setup("one process", "none", workers(1, pinned=False))
ONE_CORE = Setup("one process on one core", "none", workers(1, pinned=True))
MIRRORED = Setup("mirrored, two logical CPUs", "mirrored", workers(1, pinned=False))
TWO_WORKERS_PINNED = Setup("two workers, pinned", "multi-worker", workers(2, pinned=True))
TWO_WORKERS = Setup("two workers", "multi-worker", workers(2, pinned=False))
# Its workers pinned as the multi-worker ones are; the coordinator and the parameter server not.
PARAMETER_SERVER = Setup(
    "parameter server",
    "parameter-server",
    (Task("chief", 0), Task("ps", 0, serves=True), *workers(2, pinned=True, serve=True)),
)
TWO_WORKERS_KERAS_2 = dataclasses.replace(
    TWO_WORKERS_PINNED, name="two workers, pinned, Keras 2", settings=LEGACY_KERAS
)


@dataclasses.dataclass(frozen=True)
class Timing:
    """What a cluster times: ``workload`` at ``size``, its ``variants`` (None: the setup's
    strategy, labelled with the setup's name)."""

    workload: str
    size: int
    variants: tuple[str, ...] | None = None


def time_setup(
    setup: Setup, timings: Sequence[Timing], runs: int, blocks: int = 5
) -> list[Measurement]:
    """``timings`` in ``runs`` clusters of ``setup``, one after another (see the module).
    Raises :class:`~perfguide.processes.fresh.ChildError` in one line when a cluster fails."""
    job = {
        "strategy": setup.strategy,
        "blocks": blocks,
        "timings": [
            {
                "workload": t.workload,
                "variants": list(t.variants or [setup.strategy]),
                "size": t.size,
            }
            for t in timings
        ],
    }
    measured = time_in_clusters(setup.tasks, job, runs, TIMEOUT_S, setup.settings, setup.name)
    by_setup = [t.variants is None for t in timings for _ in t.variants or [setup.strategy]]
    return [
        dataclasses.replace(m, label=setup.name) if named else m
        for m, named in zip(measured, by_setup, strict=True)
    ]


#: Each worker's batch, the global batch of two, and a larger batch a worker.
PER_WORKER, GLOBAL, LARGE = 64, 128, 512
#: The all-reduce alone, from a small message to about the gradients' size and past it.
ALLREDUCE_SIZES = ("4 KiB", "64 KiB", "1 MiB", "16 MiB")
_STEP = distributed.DISTRIBUTED_STEP.name
_REDUCTION = distributed.DISTRIBUTED_REDUCTION.name
_INPUT = distributed_input.DISTRIBUTED_INPUT.name
_FIT = distributed.DISTRIBUTED_FIT.name

#: What the chapter times in each setup, and in how many clusters: the step at the global batch
#: everywhere (weak scaling), at 64 (strong scaling: 32 a worker) and with a larger batch where
#: the comparison needs it; between the pinned workers, the all-reduce alone (of sizes to fit the
#: link to, and of the gradients in each dtype), each way to all-reduce the gradients and each
#: way to share the input; under ``MirroredStrategy``, Keras's ``fit`` after the step (one
#: cluster start fewer, see :data:`FIT_PLAN`). Two clusters give a setup's claims the processes
#: their rerun intervals need: those intervals moderate a run's spread towards the machine's
#: calibrated one, so a third cluster narrows them by a few percent at the cost of a cluster
#: (the chapter's time budget). The mirrored setup and the parameter server, which only the
#: weak-scaling table and at most one claim use, run in one.
PLAN: dict[Setup, tuple[tuple[Timing, ...], int]] = {
    ONE_PROCESS: ((Timing(_STEP, GLOBAL), Timing(_STEP, PER_WORKER)), 2),
    ONE_CORE: ((Timing(_STEP, PER_WORKER), Timing(_STEP, LARGE)), 2),
    TWO_WORKERS_PINNED: (
        (
            Timing(_STEP, GLOBAL),
            Timing(_STEP, PER_WORKER),
            Timing(_STEP, 2 * LARGE),
            Timing(
                distributed.DISTRIBUTED_ALLREDUCE.name,
                2,
                (*ALLREDUCE_SIZES, *distributed.GRADIENT_ALLREDUCES),
            ),
            Timing(_REDUCTION, GLOBAL, tuple(distributed.REDUCTIONS)),
            Timing(_INPUT, GLOBAL, distributed_input.DISTRIBUTED_INPUT.variants),
        ),
        2,
    ),
    TWO_WORKERS: ((Timing(_STEP, GLOBAL),), 2),
    MIRRORED: ((Timing(_STEP, GLOBAL), Timing(_FIT, GLOBAL)), 1),
    PARAMETER_SERVER: ((Timing(_STEP, GLOBAL),), 1),
}


def measure(quick: bool = False) -> tuple[dict[Setup, list[Measurement]], dict[str, str]]:
    """Every setup of :data:`PLAN` timed (``quick``, or under
    :data:`~perfguide.measure.environment.QUICK_ENV`: one cluster each), and the one-line
    reason of each setup whose cluster failed (it has no measurements)."""
    measured, failures = {}, {}
    for setup, (timings, runs) in PLAN.items():
        try:
            measured[setup] = time_setup(setup, timings, 1 if quick else processes_for(runs))
        except ChildError as error:
            measured[setup], failures[setup.name] = [], str(error)
    return measured, failures


#: Keras's ``fit`` under a strategy: whether it runs, and its time a step. Where :data:`PLAN`
#: times it in the setup's cluster (where it runs), it is taken from there; elsewhere it runs in a
#: cluster of its own, whose failure takes no other timing with it.
FIT_PLAN: dict[Setup, str] = {
    MIRRORED: _FIT,
    TWO_WORKERS_PINNED: _FIT,
    TWO_WORKERS_KERAS_2: distributed.DISTRIBUTED_FIT_KERAS_2.name,
}
#: The most of a failure's reason a table shows: a value it could not convert is printed whole.
REASON_CHARS = 120


@dataclasses.dataclass(frozen=True)
class FitOutcome:
    """Keras's ``fit`` under one setup: its time an example, or why it failed (one line)."""

    setup: Setup
    measured: Measurement | None
    failure: str = ""

    @property
    def keras(self) -> str:
        return "Keras 2 (tf_keras)" if self.setup.settings == LEGACY_KERAS else "Keras 3"

    @property
    def reason(self) -> str:
        """The failure, cut short where it prints a value whole."""
        cut = self.failure[:REASON_CHARS]
        return cut + "…" if len(self.failure) > REASON_CHARS else cut


def planned(setup: Setup, workload: str) -> bool:
    """Whether :data:`PLAN` times ``workload`` in ``setup``'s clusters."""
    timings, _ = PLAN.get(setup, ((), 0))
    return any(t.workload == workload for t in timings)


def try_fit(
    measured: Mapping[Setup, Sequence[Measurement]], failures: Mapping[str, str]
) -> list[FitOutcome]:
    """Keras's ``fit`` under each setup of :data:`FIT_PLAN`, at the global batch: taken from
    ``measured`` and ``failures`` (what :func:`measure` returned) where :data:`PLAN` times it,
    else timed in one cluster of its own."""
    outcomes = []
    for setup, workload in FIT_PLAN.items():
        if planned(setup, workload):
            if setup.name in failures:
                outcomes.append(FitOutcome(setup, None, failures[setup.name]))
            else:
                (fit,) = (m for m in measured[setup] if m.workload == workload)
                outcomes.append(FitOutcome(setup, fit))
            continue
        try:
            (fit,) = time_setup(setup, [Timing(workload, GLOBAL)], runs=1)
            outcomes.append(FitOutcome(setup, fit))
        except ChildError as error:
            outcomes.append(FitOutcome(setup, None, str(error)))
    return outcomes
