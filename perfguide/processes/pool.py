"""Time workloads in several fresh processes and pool what they measured, process by process.

On these machines the process is the unit that varies: two fresh processes of identical code
can differ by 5-30 %, more than the blocks within one process do. So every workload is timed by
:class:`Workers`: a few fresh worker processes (:mod:`perfguide.processes.worker`), each of
which times the job's variants in one interleaved run, one worker after another (never two at
once: they would share the cores); what is not timed, making the variants' data, models and
functions, they do side by side first. The measurements keep each process's blocks apart, so
medians, intervals and claims rest on the processes (see :mod:`perfguide.measure.stats`).

A worker imports TensorFlow once (seconds here) and then serves every job it is handed, so a
chapter starts its workers once and hands them its workloads in turn: each worker is a fresh
process to the chapter, untouched by other chapters or by the process that drives them. Each
job starts at the next worker, so a drift in the machine's speed does not always land on the
same one.

One idea at some length: the pool of fresh workers, from starting them to pooling what they
measured; the ways groups of workers take turns drive the same private protocol.
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from perfguide.measure.cpu import usable_cores
from perfguide.measure.environment import quick_everywhere
from perfguide.measure.limits import PEAK, SHARED_FILE_ENV, MachineLimits
from perfguide.measure.measurement import Measurement, across_processes
from perfguide.measure.timer import no_progress
from perfguide.processes.fresh import (
    ChildError,
    child_environment,
    end_group,
    failure_reason,
    own_scratch,
)
from perfguide.processes.recording import recorded, replaying
from perfguide.processes.worker import Job, trace_variant
from perfguide.report.publishing.results import write_atomically

if TYPE_CHECKING:  # importing the workloads imports TensorFlow, which the workers load
    from perfguide.workloads.base import Workload

#: Fresh processes per workload unless told otherwise: two, the fewest that show how processes
#: differ. A slow one is not shrugged off (a median of two is their mean), and it need not be:
#: the interval is moderated towards the machine's usual spread, and the drift between runs,
#: which no number of processes within one run sees, is most of its width
#: (:mod:`perfguide.measure.stats`). Three processes cost a chapter a third more minutes.
PROCESSES = 2


class Settling(Protocol):
    """A comparison that more processes may decide (:class:`perfguide.report.verdicts.claims.Faster`
    is one): the variants it compares, and whether it is decided on ``measurements`` or can no
    longer be by ``at_most`` processes."""

    labels: tuple[str, ...]

    def settled(self, measurements: Sequence[Measurement], at_most: int) -> bool: ...


#: The most processes a workload gets while a comparison it must settle is undecided: where a
#: rerun's interval is about half as wide as with three (and its own spread counts for more
#: than the machine's usual one).
SETTLE_PROCESSES = 9
#: Seconds all the runs of one pool (a chapter's) may spend together timing more processes for
#: undecided comparisons: past them, what is still undecided stays so (and is judged
#: INCONCLUSIVE), so that close calls cannot take a chapter's minutes.
SETTLE_POOL_BUDGET_S = 6.0
#: Seconds a worker may take to start (import TensorFlow) before it counts as failed.
START_TIMEOUT_S = 300


class _Worker:
    """One worker process, and the lines it answers with."""

    def __init__(self, device: str, env: dict[str, str], echo_stderr: bool):
        # Kept until the worker stops and read only if it fails, unless it goes to our stderr.
        self.stderr = None if echo_stderr else tempfile.TemporaryFile()  # noqa: SIM115
        command = [sys.executable, "-m", "perfguide.processes.worker", device]
        env, self.scratch = own_scratch(env)
        self.process = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            start_new_session=True,  # its own process group: stopped with all it forked
        )
        self.buffer = b""
        self.name = ""

    def send(self, request: dict[str, Any]) -> None:
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            raise self._failed("stopped") from None

    def _line(self, deadline: float | None) -> dict[str, Any]:
        fd = self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                self.process.kill()
                raise self._failed("took too long and was stopped")
            if select.select([fd], [], [], remaining)[0]:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise self._failed(f"stopped (exit status {self.process.wait()})")
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def receive(self, timeout_s: float | None, progress: Callable[[str], None]) -> dict[str, Any]:
        """The worker's answer, passing its progress lines on to ``progress``."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while "progress" in (message := self._line(deadline)):
            progress(message["progress"])
        if "error" in message:
            raise ChildError(message["error"], usage=message.get("usage", False))
        return message

    def _failed(self, how: str) -> ChildError:
        """The error for a worker that died or hung, its stderr passed on to ours."""
        text = ""
        if self.stderr is not None:
            self.stderr.seek(0)
            text = self.stderr.read().decode(errors="replace")
            sys.stderr.write(text)
        return ChildError(f"a fresh worker process {how}: {failure_reason(text)}")

    def let_go(self) -> None:
        """Close its stdin: it stops once its job is done."""
        if self.process.poll() is None and not self.process.stdin.closed:
            self.process.stdin.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.let_go()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        end_group(self.process)
        self.process.stdout.close()
        if self.stderr is not None:
            self.stderr.close()
        self.scratch.cleanup()


def _shared_limits() -> tuple[Path | None, dict[str, Any] | None]:
    """The file where a build keeps the machine's limits, if it names one, and what it holds."""
    name = os.environ.get(SHARED_FILE_ENV)
    path = Path(name) if name else None
    return path, json.loads(path.read_text()) if path and path.is_file() else None


def _stop_all(*groups: list[_Worker]) -> None:
    # All are told first, so that they shut TensorFlow down side by side (nothing is timed).
    workers = [worker for group in groups for worker in group]
    for worker in workers:
        worker.let_go()
    for worker in workers:
        worker.stop()


class Workers:
    """``processes`` fresh worker processes on ``device``, started with ``settings`` (variables
    a process reads once, e.g. ``{"TF_ENABLE_ONEDNN_OPTS": "0"}``) over a minimal environment.

    :meth:`run` times a workload in each of them and returns its measurements pooled across
    them; :attr:`environment` is the first worker's environment record, with the machine's
    limits measured there if ``limits``. Use it as a context manager, or :meth:`close` it; the
    workers also stop with the process that started them. ``progress`` is told each step ("process
    2 of 3: eager: block 4"). ``timeout_s`` bounds each job in each worker. What the workers
    print on stderr (TensorFlow's log lines) is shown only if one fails, or with
    ``echo_stderr``. With ``quick`` (unless told, as
    :data:`~perfguide.measure.environment.QUICK_ENV` says), one worker times every run quickly,
    and no comparison gets more processes.
    """

    def __init__(
        self,
        processes: int = PROCESSES,
        *,
        device: str = "cpu",
        settings: Mapping[str, str] | None = None,
        limits: bool = False,
        timeout_s: float | None = None,
        progress: Callable[[str], None] = no_progress,
        echo_stderr: bool = False,
        quick: bool | None = None,
        _wait: bool = True,
    ):
        if processes < 1:
            raise ValueError(f"need at least one process, got {processes}")
        self.quick = quick_everywhere() if quick is None else quick
        processes = 1 if self.quick else processes
        self._start = (device, child_environment(settings), echo_stderr)
        self.limits_wanted, self.timeout_s, self.progress = limits, timeout_s, progress
        # What a page's recording calls these workers (a replay starts none).
        self._called = f"{processes} workers on {device}" + "".join(
            f", {name}={value}" for name, value in sorted((settings or {}).items())
        )
        # They import TensorFlow side by side (nothing is timed yet), then wait for jobs.
        self._processes = processes  # as many as a replay's recording answers for
        self._workers = [] if replaying() else [_Worker(*self._start) for _ in range(processes)]
        # Started only when a comparison needs more processes, and kept for the next one; the
        # calls that set the workers up, the last of each target, for those started later.
        self._extra: list[_Worker] = []
        self._settling_s = 0.0
        self._preparations: dict[str, dict[str, Any]] = {}
        self._finalizer = weakref.finalize(self, _stop_all, self._workers, self._extra)
        progress(f"starting {len(self._workers)} fresh processes")
        if _wait:  # else side_by_side waits, once every group's processes have started
            self._wait_ready()
        self._jobs = 0
        self._environment: dict[str, Any] | None = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers."""
        self._finalizer()

    def _recorded(self, what: str, measure: Callable[[], Any]) -> Any:
        """``measure()``, recorded for the page being built as ``what`` these workers did (see
        :mod:`perfguide.processes.recording`)."""
        return recorded(f"{self._called}: {what}", measure)

    @property
    def names(self) -> tuple[str, ...]:
        """The workers' process names, as measurements record them."""
        return self._recorded("names", lambda: tuple(worker.name for worker in self._workers))

    @property
    def environment(self) -> dict[str, Any]:
        """The first worker's environment record (what it saw, settings included), with the
        machine's limits if the workers were started with ``limits``: measured there, or read
        from the file :data:`~perfguide.measure.limits.SHARED_FILE_ENV` names, where the first
        workers of a build to measure them write them."""
        if self._environment is None:
            what = "environment" + " and limits" * self.limits_wanted
            self._environment = self._recorded(what, self._measured_environment)
        return self._environment

    def _measured_environment(self) -> dict[str, Any]:
        shared, known = _shared_limits()
        request = {"environment": True, "limits": self.limits_wanted, "known_limits": known}
        self._workers[0].send(request)
        environment = self._workers[0].receive(self.timeout_s, self.progress)["environment"]
        if self.limits_wanted and shared and known is None:
            write_atomically(shared, json.dumps(environment["machine_limits"]))
        return environment

    @property
    def machine_limits(self) -> MachineLimits:
        """The machine's limits, as the first worker measured them."""
        if not self.limits_wanted:
            raise ValueError("these workers were started without limits=True")
        return MachineLimits(**self.environment["machine_limits"])

    def _wait_ready(self) -> None:
        for worker in self._workers:
            self._ready(worker)

    def _ready(self, worker: _Worker) -> None:
        worker.name = worker.receive(START_TIMEOUT_S, self.progress)["ready"]

    def _start_extra(self, at_most: int) -> None:
        """More fresh workers for undecided comparisons, set up as the others were: as many as
        there are cores, up to ``at_most``, which import TensorFlow side by side (nothing is
        timed meanwhile), where one started later would import alone."""
        started = [_Worker(*self._start) for _ in range(min(usable_cores(), at_most))]
        more = f"{len(started)} more fresh process" + "es" * (len(started) > 1)
        self.progress(f"starting {more} for an undecided comparison")
        self._extra += started
        for worker in started:
            self._ready(worker)
            for target, kwargs in self._preparations.items():
                self._prepare_on(worker, target, kwargs)

    def run(
        self,
        workload: Workload | str,
        variants: Sequence[str] | None = None,
        *,
        size: int | None = None,
        quick: bool = False,
        blocks: int | None = None,
        settle: Sequence[Settling] = (),
        peak: bool = False,
    ) -> list[Measurement]:
        """``variants`` (default: all) of the registered ``workload`` (or its name) at ``size``
        (default: its own), timed in every worker in turn as :func:`perfguide.measure.runner.run`
        times them (``quick``, ``blocks``, ``peak``), pooled process by process. While a claim
        in ``settle`` is undecided, and more processes could decide it, the variants it compares
        are timed in one more fresh process, up to :data:`SETTLE_PROCESSES` in all."""
        job = job_of(workload, variants, size, quick, blocks, peak)
        settled = [list(claim.labels) for claim in settle]
        return self._recorded(
            f"run {job}, settling {settled}",
            lambda: self._run(workload, variants, size, quick, blocks, settle, peak),
        )

    def _run(
        self,
        workload: Workload | str,
        variants: Sequence[str] | None,
        size: int | None,
        quick: bool,
        blocks: int | None,
        settle: Sequence[Settling],
        peak: bool,
    ) -> list[Measurement]:
        if self.quick:
            quick, blocks, settle = True, None, ()
        job = job_of(workload, variants, size, quick, blocks, peak)
        count = len(self._workers)
        first = self._jobs % count
        self._jobs += 1
        order = [(first + turn) % count for turn in range(count)]
        started = time.monotonic()
        self._set_up(job, order)
        answers = {index: self._run_on(self._workers[index], index, job) for index in order}
        # In the workers' own order, whichever started: variants pair up process by process.
        per_process = [answers[index] for index in range(count)]
        measured = [across_processes(group) for group in zip(*per_process, strict=True)]
        return self._settle(job, measured, settle, (time.monotonic() - started) / count)

    def _settle(
        self,
        job: Job,
        measured: list[Measurement],
        claims: Sequence[Settling],
        process_s: float,
    ) -> list[Measurement]:
        """``measured``, with more processes for the variants of ``claims`` still undecided,
        for at most what is left of the pool's :data:`SETTLE_POOL_BUDGET_S`: a process is added
        only where one more, as long as a process of the run took (``process_s``), still ends
        within it."""
        started = time.monotonic()
        budget = SETTLE_POOL_BUDGET_S - self._settling_s
        for extra in range(SETTLE_PROCESSES - len(self._workers)):
            undecided = [c for c in claims if not c.settled(measured, SETTLE_PROCESSES)]
            labels = {label for c in undecided for label in c.labels}
            if not labels:
                break
            if time.monotonic() - started + process_s > budget:
                self.progress(f"undecided after {max(budget, 0):.0f} s of more processes: left so")
                break
            if extra == len(self._extra):
                self._start_extra(at_most=SETTLE_PROCESSES - len(self._workers) - extra)
            timed = [m.label for m in measured if m.label in labels and m.label != PEAK]
            more_job = job._replace(variants=tuple(timed), peak=PEAK in labels)
            more = self._run_on(self._extra[extra], len(self._workers) + extra, more_job)
            by_label = {m.label: m for m in more}
            measured = [
                across_processes([m, by_label[m.label]]) if m.label in by_label else m
                for m in measured
            ]
        self._settling_s += time.monotonic() - started
        return measured

    def call(self, target: str, *, prepared: str | None = None, **kwargs: Any) -> list[Any]:
        """What ``target`` ("package.module:function", returning plain JSON data) returns when
        called with ``kwargs`` in each worker, one after another: one result per process. With
        ``prepared`` (a :meth:`prepare` target), it is handed what that target returned in the
        worker as its first argument."""
        request = {"call": target, "kwargs": kwargs, "prepared": prepared}
        return self._recorded(
            f"in every process, {_called(request)}",
            lambda: [
                self.call_in(i, target, prepared=prepared, **kwargs)
                for i in range(len(self._workers))
            ],
        )

    def call_in(
        self, index: int, target: str, *, prepared: str | None = None, **kwargs: Any
    ) -> Any:
        """What ``target`` returns when called with ``kwargs`` in the ``index``-th worker (see
        :meth:`call` for ``prepared``)."""
        request = {"call": target, "kwargs": kwargs}
        if prepared is not None:
            request["prepared"] = prepared
        return self._recorded(
            f"in process {index}, {_called(request)}",
            lambda: self._answer_on(self._workers[index], request),
        )

    def call_each(self, target: str, kwargs: Sequence[Mapping[str, Any]]) -> list[Any]:
        """What ``target`` returns in the first ``len(kwargs)`` workers, each called with its
        own keyword arguments, side by side: for work nothing times (converting models, say),
        which one process would otherwise do while the other core idles."""
        if len(kwargs) > self._processes:
            raise ValueError(f"{len(kwargs)} calls for {self._processes} processes")
        requests = [{"call": target, "kwargs": dict(each)} for each in kwargs]

        def answered() -> list[Any]:
            for worker, request in zip(self._workers, requests, strict=False):
                worker.send(request)
            return [answer["result"] for answer in self._answers(range(len(requests)))]

        return self._recorded(f"side by side, {_called({'calls': requests})}", answered)

    def prepare(self, target: str, **kwargs: Any) -> list[Any]:
        """Set every worker up with ``target`` ("package.module:function") called with
        ``kwargs``, and each one started later for an undecided comparison, so that every
        process a job runs in is set up alike. Each worker holds what it returns (a
        :class:`~perfguide.processes.worker.Prepared`, in place of what the same target
        returned before): jobs may name its workloads, and :meth:`call` hands it to a function.
        Each worker's answer (what it holds says, as plain JSON data), one per process as
        :meth:`call` returns."""
        self._preparations[target] = kwargs

        def prepared() -> list[Any]:
            for worker in self._extra:
                self._prepare_on(worker, target, kwargs)
            return [self._prepare_on(worker, target, kwargs) for worker in self._workers]

        return self._recorded(_called({"prepare": target, "kwargs": kwargs}), prepared)

    def _prepare_on(self, worker: _Worker, target: str, kwargs: dict[str, Any]) -> Any:
        return self._answer_on(worker, {"prepare": target, "kwargs": kwargs})

    def _answer_on(self, worker: _Worker, request: dict[str, Any]) -> Any:
        worker.send(request)
        return worker.receive(self.timeout_s, self.progress)["result"]

    def trace(self, index: int, workload: Workload, variant: str, size: int, logdir: str) -> str:
        """A profiler trace of :data:`~perfguide.processes.worker.TRACED_CALLS` calls of
        ``variant`` of ``workload`` at ``size``, taken in the ``index``-th worker; the trace
        file's path (see :func:`perfguide.processes.worker.trace_variant`)."""
        target = f"{trace_variant.__module__}:{trace_variant.__name__}"

        def traced() -> tuple[str, bytes]:
            path = self.call_in(
                index, target, workload=workload.name, variant=variant, size=size, logdir=logdir
            )
            return str(Path(path).relative_to(logdir)), Path(path).read_bytes()

        # Recorded with the trace itself, which a replay writes where the page reads it.
        within, trace = self._recorded(
            f"in process {index}, trace {workload.name} {variant} at {size}", traced
        )
        path = Path(logdir) / within
        if not path.is_file():
            write_atomically(path, trace)
        return str(path)

    def run_in(self, index: int, job: Job) -> list[Measurement]:
        """``job`` timed in the ``index``-th worker alone."""
        return self._recorded(
            f"in process {index}, run {job}", lambda: self._run_on(self._workers[index], index, job)
        )

    def _set_up(self, job: Job, order: Sequence[int]) -> None:
        """Every worker makes ``job``'s calls (data, models, functions) at once, in ``order``,
        before any of them times it: making them is never timed, and the cores would otherwise
        idle while each worker makes its own."""
        self.begin_set_up(job, order)
        self.end_set_up(order)

    def begin_set_up(self, job: Job, order: Sequence[int] | None = None) -> None:
        """Ask every worker (in ``order``) to make ``job``'s calls, without waiting: workers of
        several groups then make theirs side by side (:func:`take_turns`)."""
        for index in range(len(self._workers)) if order is None else order:
            self._workers[index].send({"setup": job.to_json()})

    def end_set_up(self, order: Sequence[int] | None = None) -> None:
        """Wait until every worker has made the calls :meth:`begin_set_up` asked for; raise
        the first failure."""
        self._answers(range(len(self._workers)) if order is None else order)

    def _answers(self, indices: Iterable[int]) -> list[dict[str, Any]]:
        """The answers of the workers at ``indices`` to what each was last sent, in that order;
        the first failure raised, after every answer is read, so that the workers stay in step
        with their requests."""
        answers, failures = [], []
        for index in indices:
            try:
                answers.append(
                    self._workers[index].receive(self.timeout_s, self._progress_of(index))
                )
            except ChildError as error:
                failures.append(error)
        if failures:
            raise failures[0]
        return answers

    def _progress_of(self, index: int) -> Callable[[str], None]:
        """What tells :attr:`progress` the steps of the ``index``-th worker."""
        total = max(len(self._workers), index + 1)
        return lambda step: self.progress(f"process {index + 1} of {total}: {step}")

    def _run_on(self, worker: _Worker, index: int, job: Job) -> list[Measurement]:
        worker.send({"job": job.to_json()})
        answer = worker.receive(self.timeout_s, self._progress_of(index))
        return [Measurement.from_dict(record) for record in answer["measurements"]]


def _called(request: dict[str, Any]) -> str:
    """A call or preparation handed to a worker, as a recording names it."""
    return json.dumps(request, sort_keys=True, default=str)


def job_of(
    workload: Workload | str,
    variants: Sequence[str] | None = None,
    size: int | None = None,
    quick: bool = False,
    blocks: int | None = None,
    peak: bool = False,
) -> Job:
    """What a worker is asked to time: ``variants`` (default: all) of ``workload`` at ``size``."""
    name = workload if isinstance(workload, str) else workload.name
    return Job(name, tuple(variants or ()), size, quick, blocks, peak)


def side_by_side(groups: Mapping[str, Mapping[str, Any]]) -> dict[str, Workers]:
    """:class:`Workers` for each of ``groups`` (each its keyword arguments), every group's
    processes started before any is waited for: they import TensorFlow side by side (nothing
    is timed yet), where groups started one after another would each wait for its own."""
    started: dict[str, Workers] = {}
    try:
        for name, kwargs in groups.items():
            started[name] = Workers(**kwargs, _wait=False)
        for group in started.values():
            group._wait_ready()
    except BaseException:
        for group in started.values():
            group.close()
        raise
    return started


def take_turns(
    groups: Mapping[str, Workers], jobs: Mapping[str, Job]
) -> dict[str, list[Measurement]]:
    """Each group's job (``jobs``, by the group's name) timed by each of the group's workers
    (each group started with its own settings); each group's variants pooled across its
    processes.

    A setting read once per process cannot be switched within one, so the groups cannot take
    turns block by block; their processes take turns instead: round ``r`` runs the ``r``-th
    process of every group, the groups in an order rotated by ``r``, so a drift in the machine's
    speed falls on all (with as many processes as groups, a Latin square: each group runs
    first, second and last once).
    """
    names = list(groups)
    counts = {len(workers.names) for workers in groups.values()}
    if len(counts) != 1:
        raise ValueError(f"every group needs as many processes, got {sorted(counts)}")
    for name, workers in groups.items():  # every group's calls made side by side first
        workers.begin_set_up(jobs[name])
    for workers in groups.values():
        workers.end_set_up()
    timed: dict[str, list[Measurement]] = {name: [] for name in names}
    for turn in range(counts.pop()):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            timed[name] += groups[name].run_in(turn, jobs[name])
    return {name: _pooled_by_label(measurements) for name, measurements in timed.items()}


def _pooled_by_label(measurements: Sequence[Measurement]) -> list[Measurement]:
    by_label: dict[str, list[Measurement]] = {}
    for m in measurements:
        by_label.setdefault(m.label, []).append(m)
    return [across_processes(same) for same in by_label.values()]


def run_across(
    groups: Mapping[str, Workers],
    workload: Workload | str,
    variant: str,
    *,
    size: int | None = None,
    quick: bool = False,
    blocks: int | None = None,
) -> list[Measurement]:
    """One ``variant`` of ``workload`` timed by each group of workers, taking turns as
    :func:`take_turns` says; one measurement per group, labelled with the group's name."""
    job = job_of(workload, (variant,), size, quick, blocks)
    timed = take_turns(groups, dict.fromkeys(groups, job))
    return [dataclasses.replace(pooled, label=name) for name, (pooled,) in timed.items()]
