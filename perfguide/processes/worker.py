"""A worker: a fresh Python process that times the workloads it is handed, one job at a time.

Started by :class:`perfguide.processes.pool.Workers` as ``python -m
perfguide.processes.worker``, it sizes its thread pools, imports TensorFlow and the workloads
once, says it is ready, then answers requests read from stdin, one JSON object a line:

* ``{"environment": true, "limits": bool, "known_limits": {...} | null}``: its environment
  record, with the machine's limits if asked (the known ones, or measured on the first such
  request, then kept);
* ``{"setup": {...}}``: a :class:`Job`'s calls made (data, models, functions: nothing timed)
  and held for the job, answered with ``{"result": null}``, so that the pool's workers make
  theirs side by side before they take turns timing;
* ``{"job": {...}}``: a :class:`Job`'s measurements, stamped with this process's name, timed from
  the calls its ``setup`` made, else from calls made now;
* ``{"call": "package.module:function", "kwargs": {...}}``: what that function returns (JSON
  data, or a dataclass of it, which crosses as its fields): a measurement a workload's harness
  cannot take, such as what a naive timer reports, taken in this fresh process all the same;
  with ``"prepared": "package.module:f"``, the function is handed what ``f`` prepared (below)
  as its first argument;
* ``{"prepare": "package.module:f", "kwargs": {...}}``: ``f`` sets the worker up: what it
  returns (a :class:`Prepared`, such as the reader's code registered by
  :func:`perfguide.diagnose.worker.forms.register`) is held, in place of what ``f`` returned before;
  later jobs may name its workloads beside the chapters' ones, and the answer is its
  ``answer``;

each answer one JSON line on a private copy of its stdout, after any number of ``{"progress":
step}`` lines. Whatever else writes to stdout (a stray ``print``) goes to stderr instead, so it
cannot break the answers. Bad input is answered with ``{"error": reason, "usage": true}``; the
worker stops when stdin closes (its parent is done or gone).
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import inspect
import json
import os
import sys
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TextIO, runtime_checkable

from perfguide.measure.runner import DeviceError
from perfguide.processes.fresh import BadInput, import_tensorflow_lean

if TYPE_CHECKING:
    from perfguide.measure.runner import Runnable
    from perfguide.measure.timer import Timed


class Job(NamedTuple):
    """One measurement for a worker: ``variants`` (empty: all) of the registered ``workload`` at
    ``size`` (None: its own), ``quick`` or with ``blocks`` blocks, with the machine's ``peak``
    timed in turns with them if asked (as :func:`perfguide.measure.runner.run` does)."""

    workload: str
    variants: tuple[str, ...] = ()
    size: int | None = None
    quick: bool = False
    blocks: int | None = None
    peak: bool = False

    def to_json(self) -> dict[str, Any]:
        return self._asdict()

    @classmethod
    def from_json(cls, fields: dict[str, Any]) -> Job:
        return cls(**{**fields, "variants": tuple(fields["variants"])})


@runtime_checkable
class Prepared(Protocol):
    """What a ``prepare`` request's function returns, which the worker holds: ``workloads`` by
    name, which jobs may name, and the ``answer`` to the request (JSON data, or a dataclass of
    it)."""

    workloads: Mapping[str, Runnable]
    answer: Any


#: Calls of a variant a profiler trace holds (:func:`trace_variant`).
TRACED_CALLS = 5


def trace_variant(
    workload: str, variant: str, size: int, logdir: str, calls: int = TRACED_CALLS
) -> str:
    """A ``call`` target: ``calls`` calls of one variant of a registered workload traced with
    TensorFlow's profiler into ``logdir`` (after a warm-up call); the trace file's path."""
    from perfguide.measure import profile
    from perfguide.workloads import WORKLOADS

    timed = WORKLOADS[workload].make_call(variant, size)
    return str(profile.capture(timed.fn, *timed.args, logdir=logdir, calls=calls))


def _fields(value: Any) -> dict[str, Any]:
    """A dataclass a function returned, as JSON takes it: its fields (``json.dumps``'s
    ``default``, called with what JSON cannot write)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _answer(channel: TextIO, message: dict[str, Any]) -> None:
    channel.write(json.dumps(message, default=_fields) + "\n")
    channel.flush()


def _call(target: str, kwargs: dict[str, Any], *first: Any) -> dict[str, Any]:
    """The function's result, called with ``first`` and ``kwargs``, or why it cannot be called."""
    module_name, _, name = target.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), name)
        inspect.signature(function).bind(*first, **kwargs)
    except (ImportError, AttributeError, TypeError, ValueError) as error:
        return {"error": f"cannot call {target}: {error}", "usage": True}
    try:
        return {"result": function(*first, **kwargs)}
    except BadInput as error:
        return {"error": str(error), "usage": True}
    except Exception as error:  # the function's own failure: the worker stays to serve on
        return {"error": f"{target} raised {type(error).__name__}: {error}"}


def _call_request(request: dict[str, Any], held: dict[str, Prepared]) -> dict[str, Any]:
    """The answer to a ``call`` request, handed what it names as ``prepared`` if it does."""
    on = request.get("prepared")
    if on is None:
        return _call(request["call"], request["kwargs"])
    if on not in held:
        return {"error": f"nothing was prepared by {on} in this process", "usage": True}
    return _call(request["call"], request["kwargs"], held[on])


def _prepare(request: dict[str, Any], held: dict[str, Prepared]) -> dict[str, Any]:
    """The answer to a ``prepare`` request; what its function returned is held."""
    target = request["prepare"]
    answer = _call(target, request["kwargs"])
    if "result" not in answer:
        return answer
    if not isinstance(answer["result"], Prepared):
        return {"error": f"{target} returned no workloads and answer to hold", "usage": True}
    held[target] = answer["result"]
    return {"result": held[target].answer}


def _workload(name: str, chapters: Mapping[str, Runnable], held: dict[str, Prepared]) -> Runnable:
    """The workload a ``module:NAME`` reference names (a module this process can import: one in
    the folder it was started in, say; ValueError if it cannot); else the chapters' workload
    ``name``, else the one of that name a prepare call left held (which never hides a
    chapter's); KeyError if there is none."""
    module_name, colon, attribute = name.partition(":")
    if colon:
        try:
            return getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as error:
            raise ValueError(f"cannot load workload {name}: {error}") from None
    return collections.ChainMap(chapters, *(prepared.workloads for prepared in held.values()))[name]


def _serve(channel: TextIO, device: str) -> None:
    """Answer requests from stdin until it closes."""
    from perfguide.measure import environment, runner
    from perfguide.measure import limits as machine
    from perfguide.workloads import WORKLOADS

    name = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    record = environment.collect()
    held: dict[str, Prepared] = {}
    # The calls the last ``setup`` request made, by job, until its ``job`` request times them.
    made: dict[Job, dict[str, Timed]] = {}

    def progress(step: str) -> None:
        _answer(channel, {"progress": step})

    def set_up(job: Job) -> dict[str, Any]:
        # One job ahead at most: calls a failed run left unclaimed are dropped, not kept.
        made.clear()
        workload = _workload(job.workload, WORKLOADS, held)
        # A workload timed variant by variant makes each call just before the variant's run.
        if not workload.timed_alone:
            made[job] = runner.make_calls(
                workload, job.variants or None, size=job.size, device=device, progress=progress
            )
        return {"result": None}

    def time_job(job: Job) -> dict[str, Any]:
        measurements = runner.run(
            _workload(job.workload, WORKLOADS, held),
            job.variants or None,
            size=job.size,
            quick=job.quick,
            blocks=job.blocks,
            device=device,
            peak=job.peak,
            progress=progress,
            made=made.pop(job, None),
        )
        stamped = [dataclasses.replace(m, process_ids=(name,)).timings() for m in measurements]
        return {"measurements": stamped}

    _answer(channel, {"ready": name})
    for line in sys.stdin:
        request = json.loads(line)
        if "environment" in request:
            if request["limits"] and "machine_limits" not in record:
                record |= machine.record(request.get("known_limits"))
            _answer(channel, {"environment": record})
        elif "call" in request:
            _answer(channel, _call_request(request, held))
        elif "prepare" in request:
            _answer(channel, _prepare(request, held))
        elif "setup" in request:
            _answer(channel, _answer_for(Job.from_json(request["setup"]), set_up))
        else:
            _answer(channel, _answer_for(Job.from_json(request["job"]), time_job))


def _answer_for(job: Job, answer: Callable[[Job], dict[str, Any]]) -> dict[str, Any]:
    """``answer(job)``, or the one-line reason why ``job`` cannot be set up or timed here."""
    try:
        return answer(job)
    except KeyError:
        return {"error": f"unknown workload {job.workload!r}", "usage": True}
    except (ValueError, DeviceError) as error:
        return {"error": str(error), "usage": True}
    except MemoryError:
        reason = f"{job.workload} at size {job.size} needs more memory than is free"
        return {"error": reason, "usage": True}


def main(argv: list[str]) -> int:
    """``worker DEVICE``."""
    # The answers go on a private copy of stdout; file descriptor 1 becomes stderr.
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import_tensorflow_lean()
    from perfguide.measure import environment

    try:
        environment.apply_thread_settings()
    except ValueError as error:
        _answer(channel, {"error": str(error), "usage": True})
        return 2
    _serve(channel, argv[0])
    return 0


if __name__ == "__main__":
    status = main(sys.argv[1:])
    # Every answer has been written; TensorFlow's teardown takes a second or more a worker and
    # leaves nothing to keep, so the worker ends without it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
