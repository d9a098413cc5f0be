"""What the registered function's graph does per call, read inside a worker process (see
:mod:`perfguide.diagnose`): its ops, FLOPs and bytes, the ops that leave the graph for Python
and where the reader's code made them, what an eager op costs here, and a profile of its calls.
:func:`facts` returns a :class:`~perfguide.diagnose.worker_answers.GraphFacts`; the parent process
judges it (:mod:`perfguide.diagnose.parent.findings`).
"""

from __future__ import annotations

import collections
import contextlib
import io
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tensorflow as tf

from perfguide.diagnose.worker.loading import materialize
from perfguide.diagnose.worker.reasons import reader_files, shown, why_not
from perfguide.diagnose.worker_answers import GraphFacts, LeavesGraph, TraceFile
from perfguide.measure import anatomy, profile
from perfguide.measure.timer import measure

if TYPE_CHECKING:
    from perfguide.diagnose.worker.forms import Registered

#: Ops that run Python (or NumPy) from inside a graph: the runtime waits for the interpreter.
LEAVE_THE_GRAPH = ("EagerPyFunc", "PyFunc", "PyFuncStateless")
#: Ops that call another function graph, whose ops the graph's own counts leave out.
FUNCTION_CALLS = ("PartitionedCall", "StatefulPartitionedCall")
#: Calls profiled for the op time of a graph call.
PROFILED_CALLS = 5


def facts(registered: Registered, trace: str | None = None) -> GraphFacts:
    """What the registered function's graph does per call, and what an eager op and the
    graph's ops cost here. A function that cannot be traced gets ``graph_error`` (why, in a
    reader's words) and its eager calls' profile instead. With ``trace``, the profile is kept
    in that folder, for TensorBoard's profile plugin or XProf (see :func:`_profiled`)."""
    python, args = registered.python, registered.args
    if python is None:  # a LiteRT file: no TensorFlow graph
        why = "a LiteRT file runs in its own interpreter: TensorFlow cannot trace it"
        return GraphFacts(**_kept(trace, TraceFile(error=why)))
    files = reader_files(registered.target)
    eager_op_s = _eager_op_s()
    try:
        function = tf.function(python)
        graph = function.get_concrete_function(*args).graph
        prints = _prints_only_when_tracing(python, function, args)
    except Exception as error:  # the reader's code: a graph it cannot be is a finding
        why = why_not(error, files)
        return GraphFacts(eager_op_s=eager_op_s, graph_error=why, **_profiled(python, args, trace))
    ops = anatomy.dispatched_ops(graph)
    outside = tuple(
        LeavesGraph(op.type, op.name, _source_line(op, files))
        for op in ops
        if op.type in LEAVE_THE_GRAPH
    )
    # A call of another function (a SavedModel's restored ones) hides its ops from the counts.
    counted = not any(op.type in FUNCTION_CALLS for op in ops)
    # The graph's own count of ops, over the profile's.
    profiled = _profiled(function, args, trace) | {"ops": len(ops)}
    return GraphFacts(
        eager_op_s=eager_op_s,
        op_types=dict(collections.Counter(op.type for op in ops).most_common()),
        flops=_flops(graph) if counted else None,
        bytes=_bytes(ops) if counted else None,
        io_bytes=_io_bytes(graph) if counted else None,
        outside_graph=outside,
        prints_only_when_tracing=prints,
        **profiled,
    )


def _source_line(op: tf.Operation, files: set[str]) -> str | None:
    """Where in the reader's code ``op`` was made: the innermost frame in ``files``, else the
    innermost outside TensorFlow and Keras."""
    frames = list(op.traceback or ())
    for frame in reversed(frames):
        if str(Path(frame.filename).resolve()) in files:
            return f"{shown(frame.filename)}:{frame.lineno}"
    for frame in reversed(frames):
        if not any(part in frame.filename for part in ("tensorflow", "keras", "perfguide")):
            return f"{shown(frame.filename)}:{frame.lineno}"
    return None


def _flops(graph: tf.Graph) -> int | None:
    """FLOPs of one call, from TensorFlow's own op statistics (ops without static shapes or
    without statistics count none); None where the statistics cannot be read."""
    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    try:
        return int(tf.compat.v1.profiler.profile(graph, options=options).total_float_ops)
    except Exception:  # TF1's profiler on a graph it cannot read: no count, not no diagnosis
        return None


def _size(tensor: tf.Tensor) -> int:
    """Bytes of a tensor with a static shape (0 for one without, or a handle to a variable,
    a list or a ragged part)."""
    if not tensor.shape.is_fully_defined() or tensor.dtype in (tf.resource, tf.variant):
        return 0
    return tensor.shape.num_elements() * tensor.dtype.size


def _bytes(ops: list[tf.Operation]) -> int:
    """Bytes the ops read and write, counting every input and output with a static shape once
    per op: what a call moves if nothing stays in cache and no ops are fused."""
    return sum(_size(tensor) for op in ops for tensor in [*op.inputs, *op.outputs])


def _io_bytes(graph: tf.Graph) -> int:
    """Bytes a call must move at least: its arguments, the variables it reads and its results,
    once each. A kernel XLA fuses moves these, not the intermediates between its ops."""
    read = [op.outputs[0] for op in graph.get_operations() if op.type == "ReadVariableOp"]
    return sum(_size(tensor) for tensor in [*graph.inputs, *read, *graph.outputs])


def _eager_op_s() -> float:
    """What one small eager op costs in this process (``tf.add`` of two scalars)."""
    scalar = tf.constant(1.0)
    return measure(tf.add, scalar, scalar, label="eager op", min_block_s=0.02, blocks=5).median_s


def _profiled(function: Any, args: tuple[Any, ...], trace: str | None = None) -> dict[str, Any]:
    """From a profiler trace of ``function``: the ops it ran per call (nested ones too), their
    time per call, and the time per call of the ops that leave the graph for Python (whole,
    with the ops they run); empty if no trace could be taken. With ``trace``, the trace is
    written into that folder and kept, and ``trace`` says where (or why it was not)."""
    with tempfile.TemporaryDirectory() as scratch:
        try:
            path = profile.capture(function, *args, logdir=trace or scratch, calls=PROFILED_CALLS)
            events = profile.op_events(path)
        except (profile.TraceError, tf.errors.OpError, OSError) as error:
            return _kept(
                trace, TraceFile(error=f"no trace written: {type(error).__name__}: {error}")
            )
    outside = [e for e in events if e.type in LEAVE_THE_GRAPH]
    return {
        "ops": round(len(events) / PROFILED_CALLS),
        "op_time_s": sum(e.self_ps for e in events) / 1e12 / PROFILED_CALLS,
        "outside_graph_s": sum(e.duration_ps for e in outside) / 1e12 / PROFILED_CALLS,
        **_kept(trace, TraceFile(path=str(path))),
    }


def _kept(trace: str | None, where: TraceFile) -> dict[str, Any]:
    """``where`` the trace asked for was written, or why not, as the ``trace`` fact; nothing
    where none was asked for."""
    return {"trace": where} if trace else {}


def _prints_only_when_tracing(python: Any, function: Any, args: tuple[Any, ...]) -> bool:
    """Whether an eager call prints and a steady graph call (after the tracing one) does not:
    Python side effects run only while a ``tf.function`` traces."""
    with contextlib.redirect_stdout(io.StringIO()) as eager:
        materialize(python(*args))
    materialize(function(*args))
    with contextlib.redirect_stdout(io.StringIO()) as steady:
        materialize(function(*args))
    return bool(eager.getvalue()) and not steady.getvalue()
