"""The memory chapter's fresh processes, queued: every experiment of
:mod:`perfguide.workloads.memory` and a training step's peaks, run through the fork server
(:mod:`perfguide.processes.forkserver`), and what they found put together as
:class:`~perfguide.measure.memory.Experiment` s and :class:`~perfguide.measure.memory.Peaks`.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from perfguide.measure.environment import processes_for
from perfguide.measure.memory import Experiment, Peaks, growth
from perfguide.processes.forkserver import Task, in_fresh_processes
from perfguide.workloads import memory


def _jobs(
    groups: Sequence[Sequence[str]],
    shapes: str,
    processes: int,
    env: Mapping[str, str] | None = None,
    release: bool = False,
) -> list[list[Task]]:
    """The fresh processes of one experiment, a list for each group of ways that share them
    (the release steps after the last group's calls)."""
    return [
        [
            Task(
                f"{memory.__name__}:resident_growth",
                {"ways": list(group), "shapes": shapes, "release": release and last},
                dict(env or {}),
                start,
            )
            for start in range(processes)
        ]
        for last, group in zip([False] * (len(groups) - 1) + [True], groups, strict=True)
    ]


def _experiment(groups: list[list[dict[str, Any]]]) -> Experiment:
    """An :class:`Experiment` from what each group's processes found."""
    ways = [(way, runs) for runs in groups for way in runs[0] if way != "released"]
    return Experiment(
        growth={
            way: growth(way, [run[way]["series"] for run in runs], runs[0][way]["every"])
            for way, runs in ways
        },
        traces={way: runs[0][way]["traces"] for way, runs in ways},
        objects_per_call={
            way: statistics.median(run[way]["objects_per_call"] for run in runs)
            for way, runs in ways
        },
        released=[run["released"] for runs in groups for run in runs if "released" in run],
        series={way: (runs[0][way]["series"], runs[0][way]["every"]) for way, runs in ways},
    )


def measure(
    specs: Mapping[str, Mapping[str, Any]] | None = None, processes: int = memory.PROCESSES
) -> tuple[dict[str, Experiment], dict[str, Peaks]]:
    """Every experiment of ``specs`` (the chapter's
    :func:`~perfguide.workloads.memory.experiments` unless given), each in ``processes`` fresh
    processes, and a training step's peaks under each of
    :data:`~perfguide.workloads.memory.TRAINING_POLICIES` in as many: all their processes in one
    queue, so that both cores stay busy, each experiment's first process before any second one,
    the training steps and the experiments in the order given (the shortest last). An
    experiment's processes are forked from servers started apart (each its own ``start``), so
    that they differ as separately started processes do; processes of different experiments
    that start with the same variables share servers (each a fresh import of TensorFlow), the
    training steps those of the default environment, as they set what they need before
    TensorFlow starts (:func:`~perfguide.workloads.memory.training_peaks`). A quick run
    (:data:`~perfguide.measure.environment.QUICK_ENV`) takes one process each."""
    specs = memory.experiments() if specs is None else specs
    processes = processes_for(processes)
    training = {
        policy: [
            Task(f"{memory.__name__}:training_peaks", {"policy": policy}, start=start)
            for start in range(processes)
        ]
        for policy in memory.TRAINING_POLICIES
    }
    planned = {name: _jobs(**spec, processes=processes) for name, spec in specs.items()}
    queue = [job for jobs in training.values() for job in jobs]
    queue += [job for groups in planned.values() for group in groups for job in group]
    found = iter(in_fresh_processes(queue, preload=("tensorflow",)))
    peaks = {
        policy: _peaks(policy, [next(found) for _ in jobs]) for policy, jobs in training.items()
    }
    measured = {
        name: _experiment([[next(found) for _ in group] for group in groups])
        for name, groups in planned.items()
    }
    return measured, peaks


def _peaks(policy: str, runs: list[dict[str, Any]]) -> Peaks:
    return Peaks(
        policy,
        memory.TRAINING_BATCHES,
        tuple(tuple(run["tensors"]) for run in runs),
        tuple(tuple(run["resident"]) for run in runs),
        runs[0]["activations"],
        tuple(tuple(run["kept"]) for run in runs),
        {
            name: {
                "output": layer["output"],
                "kept": statistics.median(run["layers"][name]["kept"] for run in runs),
            }
            for name, layer in runs[0]["layers"].items()
        },
        tuple(run["before"] for run in runs),
    )
