"""A worker: a fresh Python process that times the workloads it is handed, one job at a time.

Started by :class:`perfguide.processes.pool.Workers` as ``python -m
perfguide.processes.worker``, it sizes its thread pools, imports TensorFlow and the workloads
once, says it is ready, then answers requests read from stdin, one JSON object a line:

* ``{"environment": true, "limits": bool, "known_limits": {...} | null}``: its environment
  record, with the machine's limits if asked (the known ones, or measured on the first such
  request, then kept);
* ``{"job": {...}}``: a :class:`Job`'s measurements, stamped with this process's name;
* ``{"call": "package.module:function", "kwargs": {...}}``: what that function returns (plain
  JSON data): a measurement a workload's harness cannot take, such as what a naive timer
  reports, taken in this fresh process all the same;

each answer one JSON line on a private copy of its stdout, after any number of ``{"progress":
step}`` lines. Whatever else writes to stdout (a stray ``print``) goes to stderr instead, so it
cannot break the answers. Bad input is answered with ``{"error": reason, "usage": true}``; the
worker stops when stdin closes (its parent is done or gone).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import os
import sys
import uuid
from typing import Any, NamedTuple, TextIO

from perfguide.processes.fresh import BadInput


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


def _answer(channel: TextIO, message: dict[str, Any]) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


def _call(target: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The answer to a ``call`` request: the function's result, or why it cannot be called."""
    module_name, _, name = target.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), name)
        inspect.signature(function).bind(**kwargs)
    except (ImportError, AttributeError, TypeError, ValueError) as error:
        return {"error": f"cannot call {target}: {error}", "usage": True}
    try:
        return {"result": function(**kwargs)}
    except BadInput as error:
        return {"error": str(error), "usage": True}
    except Exception as error:  # the function's own failure: the worker stays to serve on
        return {"error": f"{target} raised {type(error).__name__}: {error}"}


def _serve(channel: TextIO, device: str) -> None:
    """Answer requests from stdin until it closes."""
    from perfguide.measure import environment, runner
    from perfguide.measure import limits as machine
    from perfguide.workloads import WORKLOADS

    name = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    record = environment.collect()
    _answer(channel, {"ready": name})
    for line in sys.stdin:
        request = json.loads(line)
        if "environment" in request:
            if request["limits"] and "machine_limits" not in record:
                record |= machine.record(request.get("known_limits"))
            _answer(channel, {"environment": record})
            continue
        if "call" in request:
            _answer(channel, _call(request["call"], request["kwargs"]))
            continue
        job = Job.from_json(request["job"])
        try:
            measurements = runner.run(
                WORKLOADS[job.workload],
                job.variants or None,
                size=job.size,
                quick=job.quick,
                blocks=job.blocks,
                device=device,
                peak=job.peak,
                progress=lambda step: _answer(channel, {"progress": step}),
            )
        except KeyError:
            _answer(channel, {"error": f"unknown workload {job.workload!r}", "usage": True})
            continue
        except (ValueError, runner.DeviceError) as error:
            _answer(channel, {"error": str(error), "usage": True})
            continue
        except MemoryError:
            reason = f"{job.workload} at size {job.size} needs more memory than is free"
            _answer(channel, {"error": reason, "usage": True})
            continue
        stamped = [dataclasses.replace(m, process_ids=(name,)).timings() for m in measurements]
        _answer(channel, {"measurements": stamped})


def main(argv: list[str]) -> int:
    """``worker DEVICE``."""
    # The answers go on a private copy of stdout; file descriptor 1 becomes stderr.
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from perfguide.measure import environment

    try:
        environment.apply_thread_settings()
    except ValueError as error:
        _answer(channel, {"error": str(error), "usage": True})
        return 2
    _serve(channel, argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
