"""A fork server for fresh processes: :func:`in_fresh_processes` runs each :class:`Task`'s
function in a new process of its own and returns what it returned (the memory chapter's
processes are run this way).

A process's memory depends on everything it ran before, so each measurement gets a process of
its own. Starting Python and importing TensorFlow take seconds, longer than most of these
measurements, so the processes are forked: a server started with a job's environment imports
the modules asked for and nothing else, then forks a child for each job it is sent, one at a
time. A child starts as a new script that has just imported them would: TensorFlow's runtime
not yet started (its thread pools and kernels come with the first op), and the environment in
force since the server's start, so an allocator loaded with ``LD_PRELOAD`` or set with
``MALLOC_ARENA_MAX``, or ``TF_ENABLE_ONEDNN_OPTS`` read at import, is the child's too.

Much of what makes one process's memory differ from the next is settled when the process
starts: where its heap and libraries land, Python's hash seed. Children of one server share
them, so the processes of one measurement must not: a job's ``start`` picks its server, and a
measurement repeated over processes gives each repeat a start of its own (other measurements'
jobs with the same start and environment are forked from the same server).

Memory, unlike time, is not changed by a process running on the other core, so two run side by
side; nothing these processes do is timed.

A server runs as ``python -m perfguide.processes.forkserver '["module", ...]'`` and reads a job a
line (``["package.module:function", {"kwarg": ...}]``), answering each with a line of JSON.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn

from perfguide.processes import fresh
from perfguide.processes.recording import recorded

#: Processes run at once: memory is measured, not time, so they may share the cores.
SIDE_BY_SIDE = 2
#: Seconds one process may take before it counts as failed.
TIMEOUT_S = 600


@dataclasses.dataclass(frozen=True)
class Task:
    """One fresh process's work: ``target`` (``package.module:function``) called with
    ``kwargs``, in a process started with ``env`` over the minimal environment of
    :func:`~perfguide.processes.fresh.child_environment` (any variable: an allocator's are not
    TensorFlow settings)."""

    target: str
    kwargs: Mapping[str, Any]
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: Jobs of one environment and start are forked from one server; repeats of a
    #: measurement need starts of their own.
    start: int = 0

    @property
    def server(self) -> tuple[dict[str, str], int]:
        """What the server this job is forked from is started with."""
        return dict(self.env), self.start


def in_fresh_processes(jobs: Sequence[Task], preload: Sequence[str] = ()) -> list[Any]:
    """What each job's function returns, each in a fresh process of its own forked from a
    server that has imported ``preload``, in order. They run by start: every measurement's
    first process, then every second one, and so on, so that a measurement's processes are
    spread over the run (and over whatever the machine does meanwhile), not side by side.
    :data:`SIDE_BY_SIDE` run at once, each of them taking the next job as soon as one ends (so
    give the longest first), from the server it has where it can (:func:`_next`): each server
    starts with an import."""
    called = f"forked from servers with {list(preload)}: {list(jobs)}"
    return recorded(called, lambda: _in_fresh_processes(jobs, preload))


def _in_fresh_processes(jobs: Sequence[Task], preload: Sequence[str]) -> list[Any]:
    found: list[Any] = [None] * len(jobs)
    waiting = _by_start(jobs)
    servers: dict[int, _Server] = {}  # each lane's
    lock = threading.Lock()

    def lane(me: int) -> None:
        try:
            while True:
                with lock:
                    if not waiting:
                        return
                    mine = servers[me].job.server if me in servers else None
                    i, job = _next(waiting, mine, [s.job.server for s in servers.values()])
                    if job.server != mine:
                        if me in servers:
                            servers.pop(me).close()
                        servers[me] = _Server(job, preload)
                found[i] = servers[me].run(job)
        except BaseException:
            waiting.clear()  # the other lane stops after its job
            raise
        finally:
            if me in servers:
                servers.pop(me).close()

    with ThreadPoolExecutor(SIDE_BY_SIDE) as pool:
        for lane_done in [pool.submit(lane, me) for me in range(SIDE_BY_SIDE)]:
            lane_done.result()
    return found


def _by_start(jobs: Sequence[Task]) -> list[tuple[int, Task]]:
    """The jobs with their places, every start's in the order given, lowest start first.

    >>> [i for i, _ in _by_start([Task("m:f", {}, start=k) for k in (0, 1, 2, 0, 1, 2)])]
    [0, 3, 1, 4, 2, 5]
    """
    return sorted(enumerate(jobs), key=lambda item: item[1].start)


def _next(
    waiting: list[tuple[int, Task]], mine: tuple | None, served: list[tuple]
) -> tuple[int, Task]:
    """Take from ``waiting`` the job a lane whose server is ``mine`` runs next: the first for
    that server, else the first for a server no lane has (``served``), else the first.

    >>> a, b, c = (Task("m:f", {}, start=k) for k in range(3))
    >>> waiting = [(0, a), (1, b), (2, c), (3, b)]
    >>> _next(waiting, b.server, [b.server])[0], _next(waiting, None, [a.server])[0]
    (1, 2)
    >>> _next(waiting, None, [a.server, b.server])[0]
    0
    """
    for wanted in (lambda job: job.server == mine, lambda job: job.server not in served, bool):
        for k, (_, job) in enumerate(waiting):
            if wanted(job):
                return waiting.pop(k)
    raise IndexError("no job is waiting")


class _Server:
    """A process started as ``job`` asks, that imports ``preload`` and forks a child for each
    job it is sent (its stderr goes to a file, passed on to ours when a job fails)."""

    def __init__(self, job: Task, preload: Sequence[str]):
        self.job = job
        # Lives as long as the server: close() closes it.
        self._stderr = tempfile.TemporaryFile("w+", errors="replace")  # noqa: SIM115
        # The server's children share it: they run one at a time and it is removed with them.
        env, self._scratch = fresh.own_scratch(fresh.child_environment() | dict(job.env))
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, json.dumps(list(preload))],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            start_new_session=True,  # a timeout kills the server and its child together
        )

    def run(self, job: Task) -> Any:
        what = f"a fresh process measuring memory ({job.target})"
        try:
            self._process.stdin.write(json.dumps([job.target, dict(job.kwargs)]) + "\n")
            self._process.stdin.flush()
        except BrokenPipeError:
            pass  # the server has died: its stderr says why, below
        ready, _, _ = select.select([self._process.stdout], [], [], TIMEOUT_S)
        line = self._process.stdout.readline() if ready else ""
        answer = json.loads(line) if line else {}
        if "returned" in answer:
            return answer["returned"]
        fresh.end_group(self._process)
        self._stderr.seek(0)
        stderr = self._stderr.read()
        sys.stderr.write(stderr)
        why = answer.get("error") or fresh.failure_reason(stderr)
        raise fresh.ChildError(
            f"{what} failed: {why}" if ready else f"{what} took over {TIMEOUT_S} s: {why}"
        )

    def close(self) -> None:
        """End the server (it is between jobs, or killed), and forget its stderr."""
        self._process.stdin.close()
        self._process.wait()
        self._process.stdout.close()
        self._stderr.close()
        self._scratch.cleanup()


def serve(preload: Sequence[str]) -> None:
    """Import ``preload``, then run each job read from stdin in a child forked for it, one at a
    time; a child that dies without answering is answered for. Ends when stdin does."""
    for module in preload:
        importlib.import_module(module)
    for line in sys.stdin:
        target, kwargs = json.loads(line)
        sys.stdout.flush()
        if (child := os.fork()) == 0:
            _answer(target, kwargs)
        _, status = os.waitpid(child, 0)
        if status:
            why = f"exit status {os.waitstatus_to_exitcode(status)}"
            print(json.dumps({"error": why}), flush=True)
    # Past the last job: end at once. Python's own exit would tear TensorFlow down, a second of
    # a core for each server, and the server ran nothing of its own to flush or clean up.
    sys.stdout.flush()
    os._exit(0)


def _answer(target: str, kwargs: dict[str, Any]) -> NoReturn:
    """In the child: print what ``target`` returns for ``kwargs`` (or why it failed), then end
    at once, as a forked process should (no exit handlers of the server's)."""
    try:
        module, _, name = target.partition(":")
        returned = getattr(importlib.import_module(module), name)(**kwargs)
        line = json.dumps({"returned": returned})
    except Exception as error:
        traceback.print_exc()
        line = json.dumps({"error": f"{type(error).__name__}: {error}"})
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)


if __name__ == "__main__":
    serve(json.loads(sys.argv[1]))
