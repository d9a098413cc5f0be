"""Profile before optimizing: which TensorFlow ops took the time, read from a ``tf.profiler`` trace.

A timer says how long a call takes; a trace says where the time went, op by op, so a chapter can
show what to optimize before it optimizes. :func:`capture` records a trace of ``fn(*args)`` with
``tf.profiler.experimental``: one warm-up call first, untraced, so tracing and compiling stay out of
it, then ``calls`` calls, each marked as a step (as TensorFlow's profiler guide marks training
steps, so XProf can show step times) and each result copied to NumPy so its work is complete inside
the trace. TensorFlow writes the trace as an XSpace protobuf,
``<logdir>/plugins/profile/<run>/<host>.xplane.pb``: the file XProf (formerly TensorBoard's profile
plugin) opens, and the file a chapter publishes beside its measurements.

:func:`op_events` reads the trace with the protos TensorFlow ships, no TensorBoard needed, and
:func:`op_times` sums it per op (:class:`~perfguide.report.tables.ops.OpTable` shows the ops that
took the most time). What counts as an op, on the ``/host:CPU`` plane (one line per thread) of a
TensorFlow 2.21 trace:

- a graph op (in a ``tf.function``): an event named ``<op name>:<op type>``, such as
  ``MatMul:_MklMatMul`` (oneDNN's matmul) or ``while/body/_1/while/mul:Mul``;
- an eager op: an ``EagerExecute`` event whose ``is_func`` stat is 0, typed by its ``eager_op``
  stat. TensorFlow records no separate kernel event for it, so its time includes the runtime's
  C++ dispatch. An ``EagerExecute`` of a ``tf.function`` call is not an op: it waits for the
  graph's ops, which are counted where they ran;
- an XLA-compiled op: an event with an ``hlo_op`` stat, typed by its name less the ``.N`` suffix.
  The compiled cluster itself (``__inference_f_14:__inference_f_14``) is a graph op holding them.

An op's *self time* is its duration less the time of the ops nested in it on the same thread (the
outermost ones only: their own nested ops are theirs), so nested ops are counted once and the self
times of a thread add up to the time it spent in ops. Executor bookkeeping between ops and Python
outside them are not op time. On a GPU these are host events: launch times, not kernels.

The profiler's options cannot be set in TensorFlow 2.21: every field of ``ProfilerOptions`` is
refused with a logged "expects an i value" and the defaults apply (host tracer level 2, the Python
tracer off), which are what a faithful, small trace needs anyway: op events without an event per
Python call. (Asked for level 1 or 3, or for the Python tracer, a trace holds the same events as one
asked for nothing.) So :func:`capture` passes none. Tracing costs microseconds per op: on a 2-core
VM a ``tf.function`` call of 4 small ops took ~17 µs longer traced (~210 µs untraced), 4 eager ops
~40 µs longer (~100 µs); the file grows by ~0.5 kB per such call.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import tensorflow as tf
from google.protobuf.message import DecodeError
from tensorflow.tsl.profiler.protobuf import xplane_pb2

#: The plane of a trace that holds the host's threads (TensorFlow's ``kHostThreadsPlaneName``).
HOST_PLANE = "/host:CPU"
#: XProf's port when started as ``xprof --logdir ...``.
XPROF_PORT = 8791
# TensorFlow's op full name, "<name>:<type>" (tsl's IsTfOpName and IsTfOpType, except that a name
# may start with "_", as an XLA cluster's does). "EagerLocalExecute: MatMul" and "A::B" are not.
_TF_OP = re.compile(r"(?P<name>[A-Za-z0-9._][A-Za-z0-9_./>-]*):(?P<type>[A-Z_][A-Za-z0-9_]*)")
_HLO_NUMBER = re.compile(r"\.\d+$")
_PS_PER_S = 1e12
#: The name :func:`capture` gives the event around each traced call.
CALL_EVENT = "call"

Grouping = Literal["type", "name"]


class TraceError(Exception):
    """A trace that cannot be read or is not a TensorFlow profiler trace."""


def _fetch(result: Any) -> None:
    """Copy every tensor of ``result`` to NumPy, so the call's work is complete (on a GPU too)."""
    for leaf in tf.nest.flatten(result):
        if hasattr(leaf, "numpy"):
            leaf.numpy()


def _xplane_files(logdir: Path) -> dict[Path, int]:
    """The traces under ``logdir``, with their modification times."""
    return {path: path.stat().st_mtime_ns for path in logdir.glob("plugins/profile/*/*.xplane.pb")}


def capture(fn: Callable[..., Any], *args: Any, logdir: str | os.PathLike, calls: int = 10) -> Path:
    """Trace ``calls`` calls of ``fn(*args)`` after one untraced warm-up call; the path of the
    ``.xplane.pb`` written under ``logdir``.

    TensorFlow names a run's directory by the second it saves it: a second capture into the same
    ``logdir`` within that second replaces the first.
    """
    if calls < 1:
        raise ValueError(f"need at least one call to trace, got {calls}")
    logdir = Path(logdir)
    _fetch(fn(*args))  # tracing and compiling happen here, outside the trace
    before = _xplane_files(logdir)
    with tf.profiler.experimental.Profile(str(logdir)):
        for step in range(calls):
            with tf.profiler.experimental.Trace(CALL_EVENT, step_num=step, _r=1):
                _fetch(fn(*args))
    # The new file, or the one rewritten (a run saved in the same second as an earlier one).
    written = [path for path, mtime in _xplane_files(logdir).items() if before.get(path) != mtime]
    if len(written) != 1:
        raise TraceError(f"expected one new trace under {logdir}, found {len(written)}")
    return written[0]


def read_xspace(path: str | os.PathLike) -> xplane_pb2.XSpace:
    """The XSpace protobuf in ``path``, checked to hold a host plane."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise TraceError(f"cannot read trace {path}: {error.strerror}") from None
    try:
        space = xplane_pb2.XSpace.FromString(data)
    except DecodeError as error:
        raise TraceError(f"{path} is not an XSpace trace (.xplane.pb): {error}") from None
    if not any(plane.name == HOST_PLANE for plane in space.planes):
        raise TraceError(f"{path} has no {HOST_PLANE} plane: not a TensorFlow profiler trace")
    return space


def _host_plane(space: xplane_pb2.XSpace) -> xplane_pb2.XPlane:
    return next(plane for plane in space.planes if plane.name == HOST_PLANE)


@dataclasses.dataclass(frozen=True)
class OpEvent:
    """One run of one op in a trace; times in picoseconds, as the trace has them."""

    #: The graph node ("while/body/_1/while/mul"), the HLO instruction, or for eager ops the type.
    name: str
    #: The op type as the runtime ran it: "_MklMatMul" (oneDNN), "AddV2", "MatMul" (eager)…
    type: str
    #: "graph", "eager" or "xla".
    kind: str
    #: The trace line (thread) it ran on.
    thread: str
    start_ps: int
    duration_ps: int
    #: The duration less the ops nested in it on the same thread.
    self_ps: int


class _Stats:
    """Reads an event's stats by name within one plane (stat names are per-plane metadata)."""

    def __init__(self, plane: xplane_pb2.XPlane):
        self.plane = plane
        self.ids = {metadata.name: id_ for id_, metadata in plane.stat_metadata.items()}

    def get(self, event: xplane_pb2.XEvent, name: str) -> Any:
        """The value of stat ``name`` of ``event``, or None; a reference reads as its string."""
        wanted = self.ids.get(name)
        for stat in event.stats:
            if stat.metadata_id == wanted:
                kind = stat.WhichOneof("value")
                if kind == "ref_value":
                    return self.plane.stat_metadata[stat.ref_value].name
                return getattr(stat, kind) if kind else None
        return None


def _as_op(event: xplane_pb2.XEvent, label: str, stats: _Stats) -> tuple[str, str, str] | None:
    """``(name, type, kind)`` if ``event`` (named ``label``) is an op, as the module docstring
    says, else None."""
    if match := _TF_OP.fullmatch(label):
        return match["name"], match["type"], "graph"
    if label == "EagerExecute" and stats.get(event, "is_func") == 0:
        op_type = stats.get(event, "eager_op")
        return (op_type, op_type, "eager") if op_type else None
    if hlo := stats.get(event, "hlo_op"):
        return hlo, _HLO_NUMBER.sub("", hlo), "xla"
    return None


def _with_self_times(ops: list[OpEvent]) -> Iterator[OpEvent]:
    """``ops`` of one thread with their self times: each less the outermost ops nested in it."""
    ops = sorted(ops, key=lambda op: (op.start_ps, -op.duration_ps))  # enclosing ops first
    nested_ps = [0] * len(ops)
    enclosing: list[int] = []  # indices of the ops open at the current start, innermost last
    for i, op in enumerate(ops):
        while enclosing and _end(ops[enclosing[-1]]) <= op.start_ps:
            enclosing.pop()
        if enclosing:
            parent = enclosing[-1]
            nested_ps[parent] += min(_end(op), _end(ops[parent])) - op.start_ps
        enclosing.append(i)
    for op, nested in zip(ops, nested_ps, strict=True):
        yield dataclasses.replace(op, self_ps=max(0, op.duration_ps - nested))


def _end(op: OpEvent) -> int:
    return op.start_ps + op.duration_ps


def op_events(path: str | os.PathLike) -> list[OpEvent]:
    """The op events on the host plane of the trace in ``path``, in the order they started."""
    plane = _host_plane(read_xspace(path))
    stats = _Stats(plane)
    events = []
    for line in plane.lines:
        line_ops = []
        for event in line.events:
            label = plane.event_metadata[event.metadata_id].name
            if op := _as_op(event, label, stats):
                name, op_type, kind = op
                start_ps = line.timestamp_ns * 1000 + event.offset_ps
                line_ops.append(
                    OpEvent(name, op_type, kind, line.name, start_ps, event.duration_ps, 0)
                )
        events.extend(_with_self_times(line_ops))
    return sorted(events, key=lambda op: op.start_ps)


def call_windows(path: str | os.PathLike) -> list[tuple[int, int]]:
    """The start and end (picoseconds) of each call :func:`capture` traced, in order."""
    plane = _host_plane(read_xspace(path))
    windows = [
        (line.timestamp_ns * 1000 + event.offset_ps, event.duration_ps)
        for line in plane.lines
        for event in line.events
        if plane.event_metadata[event.metadata_id].name == CALL_EVENT
    ]
    return sorted((start, start + duration) for start, duration in windows)


def events_per_call(path: str | os.PathLike) -> list[list[OpEvent]]:
    """The op events of the trace in ``path`` split by the call they started in (an op on
    another thread belongs to the call running when it started)."""
    events = op_events(path)
    return [[e for e in events if start <= e.start_ps < end] for start, end in call_windows(path)]


def traced_calls(path: str | os.PathLike) -> int:
    """How many ``tf.function`` calls in the trace traced (so tracing is in it): 0 for a
    faithful trace of the steady state."""
    plane = _host_plane(read_xspace(path))
    stats = _Stats(plane)
    return sum(
        (stats.get(event, "tf_function_call") or "").startswith("traced")
        for line in plane.lines
        for event in line.events
    )


@dataclasses.dataclass(frozen=True)
class OpTime:
    """The time of one op (type or name) over a trace."""

    op: str
    count: int
    #: Seconds in the op itself, nested ops excluded.
    self_s: float
    #: Seconds from its start to its end, summed over its runs (nested ops included).
    total_s: float
    #: Its part of the self time of all ops in the trace.
    share: float

    @property
    def mean_self_s(self) -> float:
        """Self time per run."""
        return self.self_s / self.count


def is_onednn(op_type: str) -> bool:
    """Whether an op type is one of oneDNN's kernels (TensorFlow names them ``_Mkl...``) rather
    than TensorFlow's own (Eigen) kernel for the op.

    >>> is_onednn("_MklNativeConv2DBackpropInput"), is_onednn("Conv2DBackpropInput")
    (True, False)
    """
    return op_type.startswith("_Mkl")


def op_times(events: Sequence[OpEvent], by: Grouping = "type") -> list[OpTime]:
    """``events`` summed per op type (or name), most self time first."""
    runs: dict[str, list[OpEvent]] = defaultdict(list)
    for event in events:
        runs[event.type if by == "type" else event.name].append(event)
    all_self_ps = sum(event.self_ps for event in events) or 1  # a trace of zero-length ops
    times = [
        OpTime(
            op=op,
            count=len(op_runs),
            self_s=sum(e.self_ps for e in op_runs) / _PS_PER_S,
            total_s=sum(e.duration_ps for e in op_runs) / _PS_PER_S,
            share=sum(e.self_ps for e in op_runs) / all_self_ps,
        )
        for op, op_runs in runs.items()
    ]
    return sorted(times, key=lambda t: (-t.self_s, t.op))


def how_to_open(logdir: str | os.PathLike) -> str:
    """One line telling a reader how to open the traces in ``logdir`` in XProf."""
    return (
        f"To open the trace: pip install xprof, run xprof --logdir={logdir} and browse "
        f"http://localhost:{XPROF_PORT}/ (or pip install tensorboard xprof, run "
        f"tensorboard --logdir={logdir} and open its Profile tab); either reads "
        "<logdir>/plugins/profile/<run>/*.xplane.pb."
    )
