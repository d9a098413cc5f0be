"""Timing pitfalls: what a hand-rolled timer reports about a small TensorFlow step, next to what
the harness measures.

Each function here is a way readers time TensorFlow code by hand, run in a fresh worker process
(``Workers.call``) and returning plain numbers, so the chapter sets the mistake and the careful
measurement side by side. They all time the same :func:`step`: a few element-wise ops and a
sum over 1,000 floats in one ``tf.function``, whose call costs about as much as its work.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.measure.timer import IDLE_WINDOW_S, measure, wait_until_idle
from perfguide.workloads.base import Workload, call_of

#: Floats in the step's input.
ELEMENTS = 1000
#: Calls a hand-rolled loop times, first call included.
NAIVE_CALLS = 10


def step(x: tf.Tensor) -> tf.Tensor:
    """The work every pitfall times: scale, shift, squash and sum a vector."""
    return tf.reduce_sum(tf.tanh(x * 2.0 + 1.0))


def make_input(elements: int = ELEMENTS) -> tf.Tensor:
    return tf.constant(np.linspace(-1, 1, elements, dtype=np.float32))


def _steady_s(fn: Callable[..., Any], *args: Any) -> float:
    """The harness's steady time per call: first call apart, calibrated blocks, median."""
    return measure(fn, *args, label="step", min_block_s=0.05, blocks=6).median_s


def first_call_in_timing(calls: int = NAIVE_CALLS) -> dict[str, float]:
    """A fresh ``tf.function`` timed as a hand-rolled loop does (``calls`` calls from the very
    first, averaged), its first call alone, and the harness's steady time per call."""
    x, fn = make_input(), tf.function(step)
    start = time.perf_counter()
    fn(x)
    first = time.perf_counter() - start
    for _ in range(calls - 1):
        fn(x)
    naive = (time.perf_counter() - start) / calls
    return {"first_call_s": first, "naive_s": naive, "steady_s": _steady_s(fn, x)}


def one_call_at_a_time(calls: int = 200) -> dict[str, Any]:
    """Each of ``calls`` calls timed on its own, with ``time.time()`` and with
    ``time.perf_counter()``, beside the medians of the harness's calibrated blocks."""
    x, fn = make_input(), tf.function(step)
    fn(x)
    single: dict[str, list[float]] = {"time.time": [], "time.perf_counter": []}
    for _ in range(calls):
        for name, clock in (("time.time", time.time), ("time.perf_counter", time.perf_counter)):
            start = clock()
            fn(x)
            single[name].append(clock() - start)
    blocks = measure(fn, x, label="step", min_block_s=0.05, blocks=10).block_s
    return {
        "single_s": single,
        "block_s": list(blocks),
        "resolution_s": {
            name: time.get_clock_info(name.split(".")[1]).resolution for name in single
        },
    }


def pipeline_built_or_run(batches: int = 100, batch: int = 32) -> dict[str, float]:
    """A ``tf.data`` pipeline timed where it is built (nothing runs yet: ``map`` and ``batch``
    only describe work) and where it is iterated to the end (the work done), and what tracing
    ``step`` into a graph costs on its own (``map`` traces the function it is given)."""
    data = np.random.default_rng(0).standard_normal((batches * batch, ELEMENTS // 10))
    start = time.perf_counter()
    dataset = tf.data.Dataset.from_tensor_slices(data.astype(np.float32)).map(step).batch(batch)
    built = time.perf_counter() - start
    start = time.perf_counter()
    for _ in dataset:
        pass
    ran = time.perf_counter() - start
    start = time.perf_counter()
    tf.function(step).get_concrete_function(tf.TensorSpec([data.shape[1]], tf.float32))
    return {"built_s": built, "run_s": ran, "trace_s": time.perf_counter() - start}


def _blocks(fn: Callable[..., Any], x: tf.Tensor, blocks: int, calls: int) -> list[float]:
    """``blocks`` timed blocks of ``calls`` calls each, seconds per call."""
    times = []
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(calls):
            fn(x)
        times.append((time.perf_counter() - start) / calls)
    return times


def a_then_b(blocks: int = 10, calls: int = 200) -> dict[str, dict[str, list[float]]]:
    """The same step timed twice as if it were two variants, A and B: all of A's blocks, then
    all of B's, and then again taking turns block by block. Nothing differs between A and B,
    so any ratio away from 1 is what the order of timing did (or the noise of the blocks)."""
    x, fn = make_input(), tf.function(step)
    fn(x)
    a, b = _blocks(fn, x, blocks, calls), _blocks(fn, x, blocks, calls)
    turns = [_blocks(fn, x, 1, calls)[0] for _ in range(2 * blocks)]
    return {
        "sequential": {"a": a, "b": b},
        "interleaved": {"a": turns[0::2], "b": turns[1::2]},
    }


def after_busy_pools(rounds: int = 16, side: int = 512) -> dict[str, float]:
    """One small eager op timed right after a NumPy product that ran on every core (whose
    threads may still spin), after the same product and a wait until the process is idle, and
    after a short sleep with no product at all; and the harness's steady time of the same op
    (called again and again, nothing in between)."""
    a = np.ones((side, side), np.float32)
    x = make_input()
    times: dict[str, list[float]] = {"right_after_s": [], "after_idle_s": [], "after_sleep_s": []}
    for _ in range(rounds):
        for key, times_of in times.items():
            if key == "after_sleep_s":
                time.sleep(IDLE_WINDOW_S)
            else:
                a @ a
            if key == "after_idle_s":
                wait_until_idle()
            start = time.perf_counter()
            x + x
            times_of.append(time.perf_counter() - start)
    medians = {key: statistics.median(times_of) for key, times_of in times.items()}
    return {**medians, "steady_s": _steady_s(tf.add, x, x)}


def _step_call(variant: str, elements: int):
    return call_of(tf.function(step), make_input(elements))


#: The step as the harness times it, for the chapter's comparison of processes.
STEP = Workload(
    name="timing-step",
    question="How long does one call of a small tf.function step take?",
    unit="call",
    size_name="elements",
    default_size=ELEMENTS,
    baseline="tf-function",
    variants=("tf-function",),
    make_call=_step_call,
)
WORKLOADS = (STEP,)
