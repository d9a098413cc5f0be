"""Memory measured in fresh processes: :func:`in_fresh_processes` starts a new Python process
for each :class:`Job`, which runs one function and prints what it returns.

A process's memory depends on everything it ran before, so each measurement gets a process of
its own, started with the environment asked for: an allocator loaded with ``LD_PRELOAD`` or set
with ``MALLOC_ARENA_MAX`` only takes effect in a process started with it. Memory, unlike time,
is not changed by a process running on the other core, so two run side by side; nothing these
processes do is timed.

Run as ``python -m perfguide.processes.growth package.module:function '{"kwarg": ...}'``.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from perfguide.processes import fresh

#: Processes run at once: memory is measured, not time, so they may share the cores.
SIDE_BY_SIDE = 2
#: Seconds one process may take before it counts as failed.
TIMEOUT_S = 600


@dataclasses.dataclass(frozen=True)
class Job:
    """One fresh process's work: ``target`` (``package.module:function``) called with
    ``kwargs``, in a process started with ``env`` over the minimal environment of
    :func:`~perfguide.processes.fresh.child_environment` (any variable: an allocator's are not
    TensorFlow settings)."""

    target: str
    kwargs: Mapping[str, Any]
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)


def in_fresh_processes(jobs: Sequence[Job]) -> list[Any]:
    """What each job's function returns, each in a fresh process of its own, in order;
    :data:`SIDE_BY_SIDE` run at once, the next starting as soon as one ends (so give the
    longest first)."""

    def one(job: Job) -> Any:
        command = [sys.executable, "-m", __name__, job.target, json.dumps(dict(job.kwargs))]
        environment = fresh.child_environment() | dict(job.env)
        what = f"a fresh process measuring memory ({job.target})"
        done = fresh.run_command(command, environment, TIMEOUT_S, what)
        return json.loads(done.stdout.splitlines()[-1])

    with ThreadPoolExecutor(SIDE_BY_SIDE) as pool:
        return list(pool.map(one, jobs))


def main(argv: list[str]) -> None:
    target, kwargs = argv
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name)
    print(json.dumps(function(**json.loads(kwargs))))


if __name__ == "__main__":
    main(sys.argv[1:])
