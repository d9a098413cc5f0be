"""Eager dispatch overhead and custom gradients: the workloads behind Google Brain's
announcement of eager execution.

Every eager op pays a fixed cost to get from Python into a kernel; whether that cost matters
depends on how much work the op does. The timed workloads:

* ``eager-add`` (x + x, O(n)) and ``eager-matmul`` (a square product, O(n^1.5) in elements):
  NumPy, eager TensorFlow and, when installed, PyTorch and JAX, at any size;
* ``eager-small-ops``: a chain of tiny element-wise ops, eagerly or as one ``tf.function``;
* ``eager-call``: what a call costs when it does no work, and what ``.numpy()`` costs;
* ``eager-op-layers`` and ``eager-function-layers``: an eager op and a ``tf.function`` call
  entered at each layer on their way to the runtime (see :mod:`perfguide.measure.anatomy`);
* ``eager-gradient``: a small network's gradient, by a ``GradientTape`` run eagerly or inside a
  ``tf.function``;
* ``eager-log1pexp``: log(1 + e^x) and its gradient, naive or with a custom gradient.
"""

from __future__ import annotations

import collections
import functools
import importlib
import importlib.util
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.measure import anatomy
from perfguide.measure.timer import Timed
from perfguide.workloads.base import Workload, call_of

#: Other frameworks measured beside TensorFlow when installed (the ``docs-peers`` nox session).
PEERS = tuple(name for name in ("torch", "jax") if importlib.util.find_spec(name) is not None)


def peer_versions() -> dict[str, str]:
    """Installed peer frameworks and their versions."""
    return {name: importlib.import_module(name).__version__ for name in PEERS}


def make_vector(elements: int) -> np.ndarray:
    """float32 values in [-1, 1) from a fixed seed."""
    return np.random.default_rng(0).uniform(-1, 1, elements).astype(np.float32)


def _to_framework(framework: str, array: np.ndarray) -> Any:
    if framework == "numpy":
        return array
    if framework == "eager":
        return tf.constant(array)
    if framework == "torch":
        import torch

        return torch.from_numpy(array.copy())
    import jax.numpy as jnp

    return jnp.asarray(array)


def _matmul(framework: str) -> Callable[[Any, Any], Any]:
    return tf.matmul if framework == "eager" else (lambda a, b: a @ b)


def _add_call(variant: str, elements: int) -> Timed:
    if variant == "numpy-preallocated":
        # The same add into an output array made once: no fresh memory per call.
        x = make_vector(elements)
        return call_of(np.add, x, x, np.empty_like(x))
    x = _to_framework(variant, make_vector(elements))
    return call_of(operator.add, x, x)


def matmul_flops(elements: int) -> int:
    """Floating-point operations of the square product of ``elements`` elements: 2·side³."""
    return 2 * math.isqrt(elements) ** 3


def _matmul_call(framework: str, elements: int) -> Timed:
    side = math.isqrt(elements)
    x = _to_framework(framework, make_vector(side * side).reshape(side, side))
    return call_of(_matmul(framework), x, x)


FRAMEWORKS = ("numpy", "eager", *PEERS)

ADD = Workload(
    name="eager-add",
    question="How much does one small eager op cost next to NumPy?",
    unit="op",
    size_name="elements",
    default_size=1000,
    baseline="numpy",
    variants=(*FRAMEWORKS, "numpy-preallocated"),
    make_call=_add_call,
)

MATMUL = Workload(
    name="eager-matmul",
    question="Does eager overhead matter for a matrix product?",
    unit="op",
    size_name="elements per matrix",
    default_size=10_000,
    baseline="numpy",
    variants=FRAMEWORKS,
    make_call=_matmul_call,
)

#: Each round of the small-ops chain is three element-wise ops.
SMALL_OPS_ROUNDS = 10


def small_ops(x):
    """``SMALL_OPS_ROUNDS`` rounds of x ← tanh(0.9·x + 0.1), for TensorFlow tensors."""
    for _ in range(SMALL_OPS_ROUNDS):
        x = tf.tanh(x * 0.9 + 0.1)
    return x


def small_ops_numpy(x: np.ndarray) -> np.ndarray:
    for _ in range(SMALL_OPS_ROUNDS):
        x = np.tanh(x * np.float32(0.9) + np.float32(0.1))
    return x


def _small_ops_call(variant: str, elements: int) -> Timed:
    x = make_vector(elements)
    if variant == "numpy":
        return call_of(small_ops_numpy, x)
    return call_of(small_ops if variant == "eager" else tf.function(small_ops), tf.constant(x))


SMALL_OPS = Workload(
    name="eager-small-ops",
    question="Is a chain of tiny ops faster in one tf.function than eagerly?",
    unit="call",
    size_name="elements",
    default_size=100,
    baseline="eager",
    variants=("numpy", "eager", "tf-function"),
    make_call=_small_ops_call,
)


def identity(x):
    return x


def tf_identity(x):
    """The smallest function worth a graph: one op that returns its input."""
    return tf.identity(x)


def _call_overhead_call(variant: str, elements: int) -> Timed:
    array = make_vector(elements)
    tensor = tf.constant(array)
    if variant == "python-function":
        return call_of(identity, array)
    if variant == "numpy-copy":
        # What .numpy() costs: a copy of the tensor into a new NumPy array.
        return call_of(tensor.numpy)
    return call_of(tf.identity if variant == "eager-identity" else tf.function(tf_identity), tensor)


CALL_OVERHEAD = Workload(
    name="eager-call",
    question="What does a call cost that does no work, and what does .numpy() cost?",
    unit="call",
    size_name="elements",
    default_size=1000,
    baseline="python-function",
    variants=("python-function", "eager-identity", "tf-function", "numpy-copy"),
    make_call=_call_overhead_call,
)

OP_LAYERS = Workload(
    name="eager-op-layers",
    question="Where does the time of one eager op go?",
    unit="call",
    size_name="elements",
    default_size=1000,
    baseline="public-api",
    variants=anatomy.OP_LAYERS,
    make_call=lambda layer, elements: anatomy.op_layers(tf.constant(make_vector(elements)))[layer],
)


@functools.cache
def _traced_identity() -> Any:
    # One function for every layer and size: it keeps its traced graphs alive, which the inner
    # layers call by name.
    return tf.function(tf_identity)


def _function_layer_call(layer: str, elements: int) -> Timed:
    x = tf.constant(make_vector(elements))
    if layer == "input-signature":
        signature = [tf.TensorSpec([None], tf.float32)]
        return call_of(tf.function(tf_identity, input_signature=signature), x)
    return anatomy.function_layers(_traced_identity(), x)[layer]


FUNCTION_LAYERS = Workload(
    name="eager-function-layers",
    question="Where does the time of one tf.function call go?",
    unit="call",
    size_name="elements",
    default_size=1000,
    baseline="tf-function",
    variants=(anatomy.FUNCTION_LAYERS[0], "input-signature", *anatomy.FUNCTION_LAYERS[1:]),
    make_call=_function_layer_call,
)

#: The small network of ``eager-gradient``: features -> hidden -> 1.
FEATURES, HIDDEN = 64, 64


def make_network(batch: int) -> tuple[tf.Tensor, list[tf.Variable]]:
    """A batch of inputs and the weights of a two-layer tanh network, from a fixed seed."""
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(batch, FEATURES)).astype(np.float32))
    weights = [
        tf.Variable(rng.normal(scale=0.1, size=shape).astype(np.float32))
        for shape in ((FEATURES, HIDDEN), (HIDDEN, 1))
    ]
    return x, weights


def network_gradient(x, weights):
    """Gradient of the mean squared output with respect to the weights."""
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.tanh(x @ weights[0]) @ weights[1]))
    return tape.gradient(loss, weights)


def _gradient_call(variant: str, batch: int) -> Timed:
    fn = network_gradient if variant == "eager-tape" else tf.function(network_gradient)
    return call_of(fn, *make_network(batch))


GRADIENT = Workload(
    name="eager-gradient",
    question="How much of a small model's gradient step is eager overhead?",
    unit="step",
    size_name="batch rows",
    default_size=32,
    baseline="eager-tape",
    variants=("eager-tape", "tf-function-tape"),
    make_call=_gradient_call,
)


# log(1 + e^x): the naive form, the announcement's custom gradient, and a stable custom gradient.


def log1pexp_naive(x):
    """Overflows: e^x is inf in float32 from x ≈ 89, and the gradient e^x/(1+e^x) is then NaN."""
    return tf.math.log(1 + tf.exp(x))


@tf.custom_gradient
def log1pexp_custom(x):
    """The announcement's version: the gradient 1 - 1/(1+e^x) reuses e^x and stays finite, but the
    subtraction cancels for very negative x, where the gradient is tiny."""
    e = tf.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))

    return tf.math.log(1 + e), grad


@tf.custom_gradient
def log1pexp_stable(x):
    """Also reuses e^x, but never subtracts nearly equal numbers or divides inf by inf: for
    x > 0 it uses x + log(1 + 1/e^x) and 1/(1 + 1/e^x); otherwise log(1 + e^x) and e^x/(1 + e^x)."""
    e = tf.exp(x)
    positive = x > 0

    def grad(upstream):
        return upstream * tf.where(positive, 1 / (1 + 1 / e), e / (1 + e))

    return tf.where(positive, x + tf.math.log1p(1 / e), tf.math.log1p(e)), grad


LOG1PEXP = {
    "naive": log1pexp_naive,
    "custom-gradient": log1pexp_custom,
    "stable-custom-gradient": log1pexp_stable,
}


def value_and_gradient(fn, x) -> tuple[tf.Tensor, tf.Tensor]:
    """``fn(x)`` and its element-wise derivative, by a GradientTape."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return y, tape.gradient(y, x)


def second_derivative(fn, x) -> tf.Tensor:
    """The element-wise second derivative of ``fn`` at ``x``, by nested GradientTapes."""
    with tf.GradientTape() as outer:
        outer.watch(x)
        _, gradient = value_and_gradient(fn, x)
    return outer.gradient(gradient, x)


def sigmoid_float64(x: np.ndarray) -> np.ndarray:
    """The exact derivative of log(1 + e^x), computed stably in float64."""
    x = np.asarray(x, np.float64)
    return np.exp(-np.logaddexp(0.0, -x))


def _log1pexp_call(variant: str, elements: int) -> Timed:
    # Inputs in [-10, 10], where all three agree, so only speed differs.
    x = tf.constant(10 * make_vector(elements))
    return call_of(value_and_gradient, LOG1PEXP[variant], x)


LOG1PEXP_WORKLOAD = Workload(
    name="eager-log1pexp",
    question="Does a custom gradient cost speed?",
    unit="call",
    size_name="elements",
    default_size=1000,
    baseline="naive",
    variants=tuple(LOG1PEXP),
    make_call=_log1pexp_call,
)

WORKLOADS = (
    ADD,
    MATMUL,
    SMALL_OPS,
    CALL_OVERHEAD,
    OP_LAYERS,
    FUNCTION_LAYERS,
    GRADIENT,
    LOG1PEXP_WORKLOAD,
)


def graph_op_counts(fn: Callable[..., Any], *args: Any) -> dict[str, int]:
    """The ops ``fn(*args)`` runs, by type, read from its traced graph (inputs, constants and
    no-ops left out): what an eager call dispatches one by one."""
    graph = tf.function(fn, autograph=False).get_concrete_function(*args).graph
    return dict(collections.Counter(op.type for op in anatomy.dispatched_ops(graph)))
