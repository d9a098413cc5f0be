"""Fixed-step gradient descent for y = a·x + b, the workload of a Stack Overflow question.

A learner's TF 1.15 ``Session.run`` loop ran ten times slower than the same loop in NumPy. Every
variant here runs the same float32 gradient step from a = b = 0 with the same learning rate; they
differ only in how the step reaches the CPU (or GPU). Each variant is built by a function
``(x, y, learning_rate) -> Trainer`` whose ``advance(steps)`` takes that many steps and returns the
current ``(a, b)`` as Python floats, so the result is on the host when the clock stops.

>>> x, y = make_data(1000)
>>> trainer = VARIANTS["numpy"](x, y, LEARNING_RATE)
>>> a, b = trainer.advance(10)
>>> round(a, 4), round(b, 5)
(1.272, 0.02923)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from perfguide.measure.timer import Timed
from perfguide.workloads.base import Workload

#: The asker's fixed step for unscaled x in [0, 100).
LEARNING_RATE = 1e-4
#: A step that converges fast once x is standardized (the answer they got).
SCALED_LEARNING_RATE = 1e-1


class Trainer(NamedTuple):
    """A built variant: ``advance(steps) -> (a, b)``, and the tf.functions it traces."""

    advance: Callable[[int], tuple[float, float]]
    traced: tuple[Any, ...] = ()


def make_data(points: int = 1000, dtype: type = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """The asker's point cloud: x evenly spaced over [0, 100), y = x + 20·sin(x/10) + 15."""
    x = np.arange(points, dtype=np.float64) * (100.0 / points)
    y = x + 20.0 * np.sin(x / 10.0) + 15.0
    return x.astype(dtype), y.astype(dtype)


def numpy_descent(x, y, learning_rate, steps, a=0.0, b=0.0, losses=None):
    """``steps`` gradient steps on the mean squared error, in NumPy; returns the new ``(a, b)``.

    With a ``losses`` array, also records the loss before each step (for convergence curves).
    Arithmetic stays in the dtype of ``x``.
    """
    a, b = x.dtype.type(a), x.dtype.type(b)
    for i in range(steps):
        residual = a * x + b - y
        if losses is not None:
            losses[i] = np.mean(residual * residual)
        a -= learning_rate * 2 * np.mean(residual * x)
        b -= learning_rate * 2 * np.mean(residual)
    return a, b


def _numpy(x, y, learning_rate) -> Trainer:
    state = (0.0, 0.0)

    def advance(steps):
        nonlocal state
        state = numpy_descent(x, y, learning_rate, steps, *state)
        return float(state[0]), float(state[1])

    return Trainer(advance)


def _tf1_session(x, y, learning_rate) -> Trainer:
    v1 = tf.compat.v1
    # Where the caller's tf.device scope puts ops; a new graph does not inherit that scope.
    device = tf.identity(0.0).device
    # Its own graph, so eager execution stays on for everything else in the process.
    graph = tf.Graph()
    with graph.as_default(), tf.device(device):
        x_in = v1.placeholder(tf.float32, shape=x.shape, name="x")
        y_in = v1.placeholder(tf.float32, shape=y.shape, name="y")
        a = v1.get_variable("a", (), initializer=v1.zeros_initializer())
        b = v1.get_variable("b", (), initializer=v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(a * x_in + b - y_in))
        train = v1.train.GradientDescentOptimizer(learning_rate).minimize(loss)
        init = v1.global_variables_initializer()
    session = v1.Session(graph=graph)
    session.run(init)
    feed = {x_in: x, y_in: y}

    def advance(steps):
        for _ in range(steps):
            session.run(train, feed_dict=feed)
        a_value, b_value = session.run([a, b])
        return float(a_value), float(b_value)

    # Release the session's resources once nothing can call it any more.
    weakref.finalize(advance, session.close)
    return Trainer(advance)


def _bound_step(x, y, learning_rate):
    """A zero-argument gradient step on fresh variables a = b = 0, and a reader of (a, b)."""
    x, y = tf.constant(x), tf.constant(y)
    a, b = tf.Variable(0.0), tf.Variable(0.0)

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(a * x + b - y))
        grad_a, grad_b = tape.gradient(loss, [a, b])
        a.assign_sub(learning_rate * grad_a)
        b.assign_sub(learning_rate * grad_b)

    return step, lambda: (float(a.numpy()), float(b.numpy()))


def _python_loop(*, compile_step: bool) -> Callable[..., Trainer]:
    """Variants that take each step from a Python loop, eagerly or as one ``tf.function`` call."""

    def build(x, y, learning_rate) -> Trainer:
        step, read = _bound_step(x, y, learning_rate)
        if compile_step:
            step = tf.function(step)

        def advance(steps):
            for _ in range(steps):
                step()
            return read()

        return Trainer(advance, (step,) if compile_step else ())

    return build


def _graph_loop(*, jit_compile: bool) -> Callable[..., Trainer]:
    """Variants whose whole loop is one ``tf.function`` call over ``tf.range``."""

    def build(x, y, learning_rate) -> Trainer:
        step, read = _bound_step(x, y, learning_rate)

        @tf.function(jit_compile=jit_compile)
        def loop(steps):
            for _ in tf.range(steps):
                step()

        def advance(steps):
            # A tensor argument, so a new step count does not retrace.
            loop(tf.constant(steps))
            return read()

        return Trainer(advance, (loop,))

    return build


#: Variant name -> builder ``(x, y, learning_rate) -> Trainer``; ``numpy`` is the baseline.
VARIANTS: dict[str, Callable[..., Trainer]] = {
    "numpy": _numpy,
    "tf1-session": _tf1_session,
    "eager": _python_loop(compile_step=False),
    "tf-function-step": _python_loop(compile_step=True),
    "tf-function-loop": _graph_loop(jit_compile=False),
    "xla-loop": _graph_loop(jit_compile=True),
}


WHOLE_LOOP_VARIANTS = ("tf-function-loop", "xla-loop")


def steps_per_call(variant: str, points: int) -> int:
    """Steps in one timed call, fewer as each step grows (same work per call at any larger
    size), never more than at the asked size of 1000 points.

    A whole-loop variant runs a long loop per call, as the asker's 1e5-step run does, so its one
    dispatch is amortized as in real use; a Python-loop variant pays per step whatever the count.
    Below the asked size, more steps would only lengthen the build: a call of 10,000 steps
    already amortizes one dispatch a thousandfold.
    """
    steps_at_asked_size = 10_000 if variant in WHOLE_LOOP_VARIANTS else 100
    return max(1, min(steps_at_asked_size, steps_at_asked_size * 1000 // points))


def make_call(variant: str, points: int) -> Timed:
    """A fresh ``variant`` on ``points`` points, timed over :func:`steps_per_call` steps a call."""
    steps = steps_per_call(variant, points)
    trainer = VARIANTS[variant](*make_data(points), LEARNING_RATE)
    return Timed(trainer.advance, (steps,), steps, trainer.traced)


WORKLOAD = Workload(
    name="linear-regression",
    question="Why is my TensorFlow gradient descent slower than NumPy?",
    unit="iteration",
    size_name="points",
    default_size=1000,
    baseline="numpy",
    variants=tuple(VARIANTS),
    make_call=make_call,
)


# Feature scaling: the answer to "why 1e5 iterations?"

#: Converged: the loss is within this fraction of the least-squares loss.
CONVERGED = 1e-3


def least_squares(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The exact optimum ``(a, b)`` (float64 closed form), which gradient descent approaches."""
    a, b = np.polyfit(np.asarray(x, np.float64), np.asarray(y, np.float64), 1)
    return float(a), float(b)


def mean_squared_error(x, y, a, b) -> float:
    residual = a * np.asarray(x, np.float64) + b - np.asarray(y, np.float64)
    return float(np.mean(residual * residual))


def loss_curve(x, y, learning_rate, steps) -> tuple[np.ndarray, tuple[float, float]]:
    """Loss before each of ``steps`` float64 NumPy steps, and the final ``(a, b)``."""
    losses = np.empty(steps)
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    a, b = numpy_descent(x, y, learning_rate, steps, losses=losses)
    return losses, (float(a), float(b))


def iterations_to_converge(losses: np.ndarray, optimum: float) -> int | None:
    """First iteration whose loss is within :data:`CONVERGED` of ``optimum`` (None if never)."""
    reached = np.flatnonzero(losses <= optimum * (1 + CONVERGED))
    return int(reached[0]) if reached.size else None


def standardize(x: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``(x - mean) / std`` and the mean and std needed to undo it."""
    mean, std = float(np.mean(x)), float(np.std(x))
    return (x - mean) / std, mean, std


def unscale(a_scaled: float, b_scaled: float, mean: float, std: float) -> tuple[float, float]:
    """The ``(a, b)`` for raw x from the fit on standardized x: y = a_s·(x - mean)/std + b_s."""
    return a_scaled / std, b_scaled - a_scaled * mean / std


# What one step must move through memory.


def bytes_per_step(points: int) -> int:
    """The least memory traffic of one float32 step: x and y, read once each."""
    return 2 * 4 * points
