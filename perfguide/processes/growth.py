"""Memory measured in fresh processes: each call of :func:`in_fresh_processes` starts new Python
processes that run one function and print what it returns.

A process's memory depends on everything it ran before, so each measurement gets a process of
its own, started with the environment asked for: an allocator loaded with ``LD_PRELOAD`` or set
with ``MALLOC_ARENA_MAX`` only takes effect in a process started with it. Memory, unlike time,
is not changed by a process running on the other core, so two run side by side; nothing these
processes do is timed.

Run as ``python -m perfguide.processes.growth package.module:function '{"kwarg": ...}'``.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from perfguide.processes import fresh

#: Processes run at once: memory is measured, not time, so they may share the cores.
SIDE_BY_SIDE = 2
#: Seconds one process may take before it counts as failed.
TIMEOUT_S = 600


def in_fresh_processes(
    target: str,
    kwargs: Mapping[str, Any],
    processes: int,
    env: Mapping[str, str] | None = None,
) -> list[Any]:
    """What ``target`` (``package.module:function``) returns for ``kwargs`` in each of
    ``processes`` fresh processes, started with ``env`` over the minimal environment of
    :func:`~perfguide.processes.fresh.child_environment` (any variable: an allocator's are not
    TensorFlow settings)."""
    command = [sys.executable, "-m", __name__, target, json.dumps(dict(kwargs))]
    environment = fresh.child_environment() | dict(env or {})

    def one(_: int) -> Any:
        what = f"a fresh process measuring memory ({target})"
        done = fresh.run_command(command, environment, TIMEOUT_S, what)
        return json.loads(done.stdout.splitlines()[-1])

    with ThreadPoolExecutor(SIDE_BY_SIDE) as pool:
        return list(pool.map(one, range(processes)))


def main(argv: list[str]) -> None:
    target, kwargs = argv
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name)
    print(json.dumps(function(**json.loads(kwargs))))


if __name__ == "__main__":
    main(sys.argv[1:])
