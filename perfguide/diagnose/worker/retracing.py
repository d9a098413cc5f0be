"""The registered function's retracing, probed inside a worker process (see
:mod:`perfguide.diagnose`): called as a ``tf.function`` with typical other inputs, each call
timed and its traces counted, then with the usual fixes. :func:`retracing` returns a
:class:`~perfguide.diagnose.worker_answers.Retracing`; the parent process judges it
(:mod:`perfguide.diagnose.parent.findings`).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import tensorflow as tf

from perfguide.diagnose.worker.loading import materialize
from perfguide.diagnose.worker.reasons import reader_files, why_not
from perfguide.diagnose.worker_answers import Retracing, TracedCall
from perfguide.measure.memory import resident_bytes
from perfguide.measure.timer import measure

if TYPE_CHECKING:
    from perfguide.diagnose.worker.forms import Registered


def retracing(registered: Registered) -> Retracing:
    """The registered function as a ``tf.function`` called with the original arguments and then
    :func:`_varied` ones (each call's seconds and whether it traced), a steady call's seconds,
    and the same calls with ``reduce_retracing=True`` and Python numbers passed as tensors (the
    usual fixes). Where the function cannot be traced, ``error`` says why; where only the fix
    fails (a relaxed shape the function cannot take), ``fixed_error`` does."""
    python, args = registered.python, registered.args
    if python is None:  # a LiteRT file: no TensorFlow graph
        return Retracing()
    files = reader_files(registered.target)
    try:
        candidates = _varied(args)
    except Exception:  # arguments no batch can be built from (a sparse tensor of open shape)
        candidates = []
    varied = [(label, a) for label, a in candidates if _accepts(python, a)]
    calls = [args] + [a for _, a in varied]
    try:
        function = tf.function(python)
        as_written = _sequence(function, calls)
        steady = measure(function, *args, label="steady", min_block_s=0.02, blocks=5).median_s
    except Exception as error:  # not traceable, or not for some varied input: no finding here
        return Retracing(error=why_not(error, files))
    labels = tuple(label for label, _ in varied)
    answer = Retracing(varied=labels, calls=as_written, steady_s=steady)
    relaxed = tf.function(python, reduce_retracing=True)
    try:
        fixed = _sequence(relaxed, [_as_tensors(a) for a in calls])
    except Exception as error:  # e.g. Python that needs the batch size, now unknown
        return dataclasses.replace(answer, fixed_error=why_not(error, files))
    return dataclasses.replace(answer, fixed_calls=fixed)


def _varied(args: tuple[Any, ...]) -> list[tuple[str, tuple[Any, ...]]]:
    """Typical other calls: every batched tensor's first dimension doubled, then plus one (all
    of them together, wherever they sit in the arguments' tuples, lists and dicts: a batch;
    ragged and sparse ones too), then a ragged batch's rows one value shorter, and each Python
    number or scalar tensor as other Python numbers."""
    calls = []
    leaves = [leaf for arg in args for leaf in tf.nest.flatten(arg)]
    for label, grow in (("batch doubled", lambda n: 2 * n), ("batch plus one", lambda n: n + 1)):
        if any(_batched(leaf) for leaf in leaves):
            calls.append((label, _each_leaf(args, functools.partial(_grown, grow=grow))))
    if any(isinstance(leaf, tf.RaggedTensor) for leaf in leaves):
        calls.append(("ragged rows one value shorter", _each_leaf(args, _shortened)))
    for i, a in enumerate(args):
        number = tf.is_tensor(a) and (a.dtype.is_floating or a.dtype.is_integer)
        scalar = isinstance(a, (int, float)) or (number and a.shape.rank == 0)
        if scalar and not isinstance(a, bool):
            value = a if isinstance(a, (int, float)) else a.numpy().item()
            for step in (1, 2):
                changed = list(args)
                changed[i] = type(value)(value + step)
                label = f"argument {i + 1} as the Python number {changed[i]}"
                calls.append((label, tuple(changed)))
    return calls


def _batched(value: Any) -> bool:
    """Whether ``value`` is a tensor (dense, ragged or sparse; not a variable, which keeps its
    shape) with a batch dimension."""
    return tf.is_tensor(value) and not isinstance(value, tf.Variable) and bool(value.shape.rank)


def _each_leaf(args: tuple[Any, ...], change: Callable[[Any], Any]) -> tuple[Any, ...]:
    """``args`` with ``change`` applied to every batched tensor in them."""
    return tuple(
        tf.nest.map_structure(lambda leaf: change(leaf) if _batched(leaf) else leaf, arg)
        for arg in args
    )


def _grown(value: Any, grow: Callable[[int], int]) -> Any:
    """``value`` with ``grow(batch)`` rows: its own, then its own again."""
    rows = int(value.shape[0])
    if isinstance(value, tf.SparseTensor):
        twice = tf.sparse.concat(0, [value, value])
        return tf.sparse.slice(twice, [0] * value.shape.rank, [grow(rows), *value.shape[1:]])
    return tf.concat([value, value], axis=0)[: grow(rows)]


def _shortened(value: Any) -> Any:
    """A ragged batch with each row one value shorter (an empty row stays empty)."""
    return value[:, :-1] if isinstance(value, tf.RaggedTensor) else value


def _accepts(python: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    try:
        materialize(python(*args))
    except Exception:  # a variation the function cannot take (fixed shapes) is not typical
        return False
    return True


def _as_tensors(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(tf.constant(a) if isinstance(a, (int, float)) else a for a in args)


def _sequence(function: Any, calls: list[tuple[Any, ...]]) -> tuple[TracedCall, ...]:
    """Each of ``calls`` of a fresh ``function``: its seconds, whether it traced, and the bytes
    the process held after it beyond before it (what a trace keeps)."""
    timed = []
    for args in calls:
        before, held = function.experimental_get_tracing_count(), resident_bytes()
        start = time.perf_counter()
        materialize(function(*args))
        seconds = time.perf_counter() - start
        traced = function.experimental_get_tracing_count() > before
        timed.append(TracedCall(seconds, traced, resident_bytes() - held))
    return tuple(timed)
