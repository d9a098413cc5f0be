"""``tf.function`` and graph execution: the workloads behind the article *Understanding
TensorFlow's @tf.function decorator*.

Four timed workloads and the tracing behaviour behind them:

* ``tf-function``: the article's loop of 99 matrix products (a truncated exponential series),
  eagerly, as one ``tf.function`` and compiled with XLA;
* ``tf-function-rows``: a sum of row means, row by row or as one vectorized reduction;
* ``tf-function-retracing``: the same call with a Python number (a new trace every call) or a
  tensor (one trace) as its argument;
* ``tf-function-tracing``: tracing itself, of a Python ``for`` loop (unrolled into the graph) and
  of a ``tf.range`` loop (one graph loop).

The functions handed to ``tf.function`` live in this module, not in the chapter script, because
AutoGraph converts Python loops by reading a function's source file.
"""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.measure.timer import Timed
from perfguide.workloads.base import Workload, call_of

#: Products in the article's loop: aux = x @ aux / i for i = 1..99, summed.
SERIES_TERMS = 99


def make_matrix(side: int, dtype: type = np.float32) -> np.ndarray:
    """The seed's input: uniform in [-1, 1), ``side`` x ``side``, from a fixed seed."""
    return np.random.default_rng(0).uniform(-1, 1, (side, side)).astype(dtype)


def series_numpy(x: np.ndarray) -> np.ndarray:
    """The sum of x^i / i! for i = 1..99, one product at a time, in NumPy."""
    aux, result = np.eye(len(x), dtype=x.dtype), np.zeros_like(x)
    for i in range(1, SERIES_TERMS + 1):
        aux = x @ aux / x.dtype.type(i)
        result = result + aux
    return result


def series(x):
    """The same in TensorFlow ops; a Python loop, so ``tf.function`` unrolls it into the graph."""
    aux, result = tf.eye(x.shape[0], dtype=x.dtype), tf.zeros_like(x)
    for i in range(1, SERIES_TERMS + 1):
        aux = tf.matmul(x, aux) / i
        result = result + aux
    return result


def _run_eagerly(function):
    """``function`` called with every ``tf.function`` run as plain Python (for debugging)."""

    def call(x):
        with functions_run_eagerly():
            return function(x)

    return call


def _series_call(variant: str, side: int) -> Timed:
    x = make_matrix(side)
    if variant == "numpy":
        return call_of(series_numpy, x)
    fn = {
        "eager": series,
        "tf-function": tf.function(series),
        "xla": tf.function(series, jit_compile=True),
        "run-eagerly": _run_eagerly(tf.function(series)),
    }[variant]
    return call_of(fn, tf.constant(x))


SERIES = Workload(
    name="tf-function",
    question="Why is my TensorFlow loop of small ops slow, and how much does tf.function help?",
    unit="call",
    size_name="matrix side",
    default_size=100,
    baseline="eager",
    variants=("numpy", "eager", "tf-function", "xla", "run-eagerly"),
    make_call=_series_call,
)


def row_loop(x):
    """The article's sum of row means, one row at a time (AutoGraph makes it a graph loop)."""
    total = tf.constant(0.0, x.dtype)
    for row in x:
        total += tf.reduce_mean(row)
    return total


def vectorized(x):
    """The same sum as one reduction over the whole matrix."""
    return tf.reduce_sum(tf.reduce_mean(x, axis=1))


def _rows_call(variant: str, side: int) -> Timed:
    fn = tf.function({"row-loop": row_loop, "vectorized": vectorized}[variant])
    return call_of(fn, tf.constant(make_matrix(side)))


ROWS = Workload(
    name="tf-function-rows",
    question="Is a Python-style loop over rows slow inside tf.function?",
    unit="call",
    size_name="rows",
    default_size=100,
    baseline="row-loop",
    variants=("row-loop", "vectorized"),
    make_call=_rows_call,
)


def scale(x, factor):
    return x * factor


def _retracing_call(variant: str, elements: int) -> Timed:
    fn = tf.function(scale)
    x = tf.ones([elements])
    factors = itertools.count(1.0)
    as_argument = tf.constant if variant == "tensor-argument" else float

    def call():
        # A new factor every call, as a step counter or a learning-rate schedule would be.
        return fn(x, as_argument(next(factors)))

    return Timed(call, traced=(fn,))


RETRACING = Workload(
    name="tf-function-retracing",
    question="What does it cost when a tf.function retraces on every call?",
    unit="call",
    size_name="elements",
    default_size=1000,
    baseline="python-argument",
    variants=("python-argument", "tensor-argument"),
    make_call=_retracing_call,
)


def halve_and_add_python_for(x, steps: int):
    """``steps`` updates x = x/2 + 1 in a Python ``for``: the graph holds ``steps`` copies."""
    for _ in range(steps):
        x = x * 0.5 + 1.0
    return x


def halve_and_add_tf_range(x, steps: int):
    """The same updates over ``tf.range``: AutoGraph emits one graph while-loop."""
    for _ in tf.range(steps):
        x = x * 0.5 + 1.0
    return x


LOOPS = {"python-for": halve_and_add_python_for, "tf-range": halve_and_add_tf_range}
_VECTOR = tf.TensorSpec([16], tf.float32)


def trace_loop(variant: str, steps: int):
    """A freshly traced concrete function of ``variant``'s loop with ``steps`` steps."""
    return tf.function(functools.partial(LOOPS[variant], steps=steps)).get_concrete_function(
        _VECTOR
    )


def graph_op_count(variant: str, steps: int) -> int:
    """Operations in the traced graph: grows with ``steps`` for an unrolled loop."""
    return len(trace_loop(variant, steps).graph.get_operations())


TRACING = Workload(
    name="tf-function-tracing",
    question="How much does tracing cost when a Python loop is unrolled into the graph?",
    unit="trace",
    size_name="loop steps",
    default_size=100,
    baseline="python-for",
    variants=tuple(LOOPS),
    make_call=lambda variant, steps: call_of(trace_loop, variant, steps),
)

WORKLOADS = (SERIES, ROWS, RETRACING, TRACING)


# Tracing made visible: what runs once per trace and what runs every call.


def count_traces(function_options: dict[str, Any], arguments: list[Any]) -> int:
    """Traces a fresh ``tf.function(scale, **function_options)`` makes over calls with
    ``scale(argument, 2.0)``, read from the function itself."""
    fn = tf.function(scale, **function_options)
    for argument in arguments:
        fn(argument, 2.0)
    return fn.experimental_get_tracing_count()


def _print_both(x, log_path):
    print("print: Python runs this line")
    tf.print("tf.print: the graph runs this op", output_stream=f"file://{log_path}")
    return x + 1


def print_lines(calls: int) -> tuple[list[str], list[str]]:
    """Lines that ``print`` and ``tf.print`` wrote over ``calls`` calls of one tf.function."""
    with tempfile.TemporaryDirectory() as tmp:
        log_path = Path(tmp, "tf_print.log")
        fn = tf.function(functools.partial(_print_both, log_path=log_path))
        captured = io.StringIO()
        with contextlib.redirect_stdout(captured):
            for _ in range(calls):
                fn(tf.constant(0))
        tf_print = log_path.read_text().splitlines() if log_path.exists() else []
    return captured.getvalue().splitlines(), tf_print


def frozen_global_results() -> dict[str, tuple[float, float]]:
    """``power(2)`` before and after the exponent changes from 2 to 3, with the exponent a
    Python number (frozen into the graph at trace time) or a ``tf.Variable`` (read every call)."""
    exponent = 2.0
    variable = tf.Variable(2.0)

    @tf.function
    def power(x):
        return tf.pow(x, exponent)

    @tf.function
    def power_of_variable(x):
        return tf.pow(x, variable)

    x = tf.constant(2.0)
    before = float(power(x)), float(power_of_variable(x))
    exponent = 3.0  # noqa: F841  (power reads it; that it sees the old value is the point)
    variable.assign(3.0)
    after = float(power(x)), float(power_of_variable(x))
    return {
        "Python number": (before[0], after[0]),
        "tf.Variable": (before[1], after[1]),
    }


@contextlib.contextmanager
def functions_run_eagerly() -> Iterator[None]:
    """Run every ``tf.function`` as plain Python (for debugging), restoring the setting after."""
    previous = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    try:
        yield
    finally:
        tf.config.run_functions_eagerly(previous)
