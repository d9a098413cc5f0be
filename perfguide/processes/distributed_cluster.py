"""The distributed chapter's TensorFlow cluster on this machine: one fresh process a task,
talking over 127.0.0.1.

``tf.distribute``'s multi-worker strategies learn the cluster from ``TF_CONFIG``: every task's
address, and which task this process is. Several processes on one machine, each with its own
``TF_CONFIG``, are a real cluster whose "network" is the loopback. The tasks are started together
(a worker started long before its peers logs "failed to connect" while it waits), on ports found
free just before, each pinned to a core where asked. Some tasks only serve (a parameter server, or
a worker of ``ParameterServerStrategy`` that the coordinator sends its steps to): they never end on
their own, so a run ends when every other task has, and the servers are then stopped. When one task
fails, or the deadline passes, every task is stopped, so that no process, and no port it listened
on, outlives the run; the failure is one line saying which task failed and why.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

from perfguide.measure.measurement import Measurement, across_processes
from perfguide.processes import pinned
from perfguide.processes.fresh import (
    ChildError,
    child_environment,
    end_group,
    failure_reason,
    own_scratch,
)
from perfguide.processes.recording import recorded

HOST = "127.0.0.1"
#: How often the parent looks at its tasks while they run.
POLL_S = 0.05
#: What each task of a cluster runs: one job (JSON) of :mod:`perfguide.processes.distributed_task`.
TASK = [sys.executable, "-m", "perfguide.processes.distributed_task"]


@dataclasses.dataclass(frozen=True)
class Task:
    """One process of a cluster: its role (``worker``, ``ps``, ``chief``), its index among the
    tasks of that role, the core it is pinned to (None: any), and whether it only serves (runs
    until the others are done)."""

    role: str
    index: int
    core: int | None = None
    serves: bool = False

    @property
    def name(self) -> str:
        return f"{self.role} {self.index}"


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports on :data:`HOST` that nothing listened on a moment ago (the
    kernel's pick; they are closed again before a task binds them)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind((HOST, 0))
        return [s.getsockname()[1] for s in sockets]


def cluster_spec(tasks: Sequence[Task], ports: Sequence[int]) -> dict[str, list[str]]:
    """Each role's addresses, in index order, as ``TF_CONFIG``'s ``cluster`` wants them."""
    spec: dict[str, list[str]] = {}
    for task, port in sorted(zip(tasks, ports, strict=True), key=lambda tp: tp[0].index):
        spec.setdefault(task.role, []).append(f"{HOST}:{port}")
    return spec


def tf_config(spec: Mapping[str, list[str]], task: Task) -> str:
    """The ``TF_CONFIG`` of ``task`` in the cluster ``spec``.

    >>> tf_config({"worker": ["127.0.0.1:1"]}, Task("worker", 0))
    '{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 0}}'
    """
    return json.dumps({"cluster": dict(spec), "task": {"type": task.role, "index": task.index}})


@dataclasses.dataclass
class _Running:
    """A task's process, and the files its output goes to (a pipe could fill and stall it)."""

    task: Task
    process: subprocess.Popen
    stdout: IO[bytes]
    stderr: IO[bytes]
    scratch: tempfile.TemporaryDirectory

    def printed(self, stream: IO[bytes]) -> str:
        stream.seek(0)
        return stream.read().decode(errors="replace")

    def reason(self) -> str:
        return failure_line(self.printed(self.stderr))


#: A line that names an exception: its class, then its message.
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b")


def failure_line(stderr: str) -> str:
    r"""Why a task failed, in one line: the last line of ``stderr`` that names an exception (its
    class and the first line of its message: a message that prints a value whole runs on for
    lines), else its last line.

    >>> failure_line("Traceback ...\nValueError: cannot convert (PerReplica:{\n  0: 1\n})\n")
    'ValueError: cannot convert (…)'
    >>> failure_line("worker lost its peer\n")
    'worker lost its peer'
    """
    named = [line.strip() for line in stderr.splitlines() if _EXCEPTION.match(line.strip())]
    return _closed(named[-1]) if named else failure_reason(stderr)


def _closed(line: str) -> str:
    """``line`` cut before the first bracket it leaves open (a value printed over the lines
    after it), with "(…)" in its place."""
    opened: list[int] = []
    for at, char in enumerate(line):
        if char in "([{":
            opened.append(at)
        elif char in ")]}" and opened:
            opened.pop()
    return f"{line[: opened[0]].rstrip()} (…)" if opened else line


def _stop(running: Sequence[_Running]) -> None:
    """Kill every task still running, and anything a task started, and wait for each."""
    for r in running:
        end_group(r.process)
    for r in running:
        r.process.wait()
        r.stdout.close()
        r.stderr.close()
        r.scratch.cleanup()


def _start(task: Task, command: list[str], env: dict[str, str]) -> _Running:
    stdout, stderr = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115
    env, scratch = own_scratch(env)
    if task.core is not None:
        command = pinned.command(task.core, command)
    process = subprocess.Popen(
        command,
        env=env,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,  # its own process group: stopped with all it started
    )
    return _Running(task, process, stdout, stderr, scratch)


def run(
    tasks: Sequence[Task],
    command: list[str],
    timeout_s: float,
    settings: Mapping[str, str] | None = None,
) -> dict[Task, str]:
    """Run ``command`` once a task, all at once, each with its ``TF_CONFIG`` (and ``settings``),
    until every task that does not serve has ended, and return what each of those printed on
    stdout. Raises :class:`ChildError` with one line when a task
    fails or the whole run takes over ``timeout_s``; every task is stopped either way."""
    # Named without the interpreter's path, which differs between the builds' environments.
    called = f"cluster of {list(tasks)}: {command[1:]}, {dict(settings or {})}"
    return recorded(called, lambda: _run(tasks, command, timeout_s, settings))


def _run(
    tasks: Sequence[Task],
    command: list[str],
    timeout_s: float,
    settings: Mapping[str, str] | None,
) -> dict[Task, str]:
    spec = cluster_spec(tasks, free_ports(len(tasks)))
    running: list[_Running] = []
    try:
        for task in tasks:
            env = child_environment({**(settings or {}), "TF_CONFIG": tf_config(spec, task)})
            running.append(_start(task, command, env))
        outputs = _wait(running, time.monotonic() + timeout_s, timeout_s)
    finally:
        _stop(running)
    return outputs


def _wait(running: Sequence[_Running], deadline: float, timeout_s: float) -> dict[Task, str]:
    """Each ending task's stdout once all have ended well; the first failure, a server that
    ends, or the deadline raises."""
    pending = [r for r in running if not r.task.serves]
    while pending:
        for r in running:
            status = r.process.poll()
            if status is None:
                continue
            if status != 0 or r.task.serves:
                reason = r.reason() if status != 0 else "it stopped serving"
                raise ChildError(f"{r.task.name} of the cluster failed: {reason}")
            if r in pending:
                pending.remove(r)
        if pending and time.monotonic() > deadline:
            names = ", ".join(r.task.name for r in pending)
            raise ChildError(f"the cluster took over {timeout_s:g} s ({names} still running)")
        time.sleep(POLL_S)
    return {r.task: r.printed(r.stdout) for r in running if not r.task.serves}


def time_in_clusters(
    tasks: Sequence[Task],
    job: Mapping[str, Any],
    runs: int,
    timeout_s: float,
    settings: Mapping[str, str] | None = None,
    name: str = "cluster",
) -> list[Measurement]:
    """The ``time`` ``job`` run by ``runs`` clusters of fresh processes (started with
    ``settings``), one after another: the first task's measurements (its steps wait for every
    task's), each cluster one process of the pooled measurements, called ``name`` and its turn
    (measurements of two clusters with the same name would count as timed together)."""
    per_run = []
    for turn in range(runs):
        printed = run(tasks, [*TASK, json.dumps({**job, "do": "time"})], timeout_s, settings)
        records = json.loads(printed[tasks[0]])["measurements"]
        process = (f"{name} {turn + 1}",)
        per_run.append(
            [dataclasses.replace(Measurement.from_dict(r), process_ids=process) for r in records]
        )
    return [across_processes(group) for group in zip(*per_run, strict=True)]
