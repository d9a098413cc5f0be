"""Embrace tensor operations: the workloads behind the tf.wiki handbook's performance advice.

*Simple and Brutal TensorFlow 2* (简单粗暴 TensorFlow 2, tf.wiki) tells its readers to prefer one
tensor operation to a Python loop of small ones, to preprocess and preload their data, and to
profile before they optimize. The timed workloads:

* ``matmul``: one square float32 product, from a Python triple loop to NumPy and TensorFlow;
* ``batched-matmul``: the handbook's stack of products, as a Python loop and ``tf.stack``, one
  ``tf.einsum``, a broadcast ``tf.matmul``, ``tf.vectorized_map`` and ``tf.map_fn``, each eagerly
  and inside a ``tf.function``;
* ``elementwise-affine`` and ``elementwise-tanh``: chains of element-wise ops in NumPy, eagerly,
  as one ``tf.function`` and compiled with XLA (which fuses them into one pass over memory);
* ``input-pipeline``: an epoch of small training steps fed from NumPy per step, from tensors
  prepared once, from a ``tf.data`` pipeline, and from ``Dataset.from_generator``;
* ``conv2d``: one convolution, the third kernel (with matmul and an element-wise chain) timed under
  each CPU setting in its own process.

The functions handed to ``tf.function`` live here, not in the chapter, because AutoGraph reads a
function's source file.
"""

from __future__ import annotations

import collections
import functools
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.measure.timer import Timed
from perfguide.workloads import eager
from perfguide.workloads.base import Workload, call_of
from perfguide.workloads.tf_function import make_matrix

# -- One product: loops to BLAS ------------------------------------------------------------------


def python_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The handbook's triple loop, element by element on NumPy arrays."""
    n, inner, m = a.shape[0], a.shape[1], b.shape[1]
    c = np.zeros((n, m), dtype=a.dtype)
    for i in range(n):
        for j in range(m):
            for k in range(inner):
                c[i, j] += a[i, k] * b[k, j]
    return c


def matmul_flops(side: int) -> int:
    """Floating-point operations of a square product: a multiply and an add per term, 2·n³."""
    return 2 * side**3


def product(a, b):
    """One TensorFlow product, as a function of its two operands only (``tf.matmul`` itself has
    eight parameters, which a ``tf.function`` would bind on every call)."""
    return tf.matmul(a, b)


def _matmul_call(variant: str, side: int) -> Timed:
    a, b = make_matrix(side), make_matrix(side).T.copy()
    if variant in ("python-loops", "numpy"):
        return call_of(python_matmul if variant == "python-loops" else np.matmul, a, b)
    fn = product if variant == "eager" else tf.function(product)
    return call_of(fn, tf.constant(a), tf.constant(b))


MATMUL = Workload(
    name="matmul",
    question="How much faster is a BLAS matrix product than a Python loop?",
    unit="product",
    size_name="matrix side",
    # The largest side where the triple loop still takes milliseconds (about 0.2 s per product).
    default_size=64,
    baseline="numpy",
    variants=("python-loops", "numpy", "eager", "tf-function"),
    make_call=_matmul_call,
)

# -- Batched products ----------------------------------------------------------------------------

#: The handbook's batch: ``batch`` matrices of ROWS x INNER, each times one INNER x COLUMNS matrix.
ROWS, INNER, COLUMNS = 100, 1000, 1000


def make_batch(batch: int) -> tuple[np.ndarray, np.ndarray]:
    """A of shape (batch, ROWS, INNER) and B of shape (INNER, COLUMNS), float32, fixed seed."""
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (batch, ROWS, INNER)).astype(np.float32)
    return a, rng.uniform(-1, 1, (INNER, COLUMNS)).astype(np.float32)


def batched_flops(batch: int) -> int:
    """Floating-point operations of the batched product."""
    return 2 * batch * ROWS * INNER * COLUMNS


def loop_stack(a, b):
    """The handbook's first version: one product per matrix, stacked."""
    return tf.stack([tf.matmul(a[i], b) for i in range(a.shape[0])], axis=0)


def einsum(a, b):
    """The handbook's second version: one operation for the whole batch."""
    return tf.einsum("ijk,kl->ijl", a, b)


def broadcast_matmul(a, b):
    """``tf.matmul`` broadcasts the 2-D b over a's batch dimension."""
    return tf.matmul(a, b)


def vectorized_map(a, b):
    """The loop body written for one matrix; ``tf.vectorized_map`` turns it into batch ops."""
    return tf.vectorized_map(lambda matrix: tf.matmul(matrix, b), a)


def map_fn(a, b):
    """The loop body for one matrix, run once per matrix by a graph loop."""
    return tf.map_fn(lambda matrix: tf.matmul(matrix, b), a)


BATCHED_FORMS: dict[str, Callable[[Any, Any], Any]] = {
    "loop-stack": loop_stack,
    "einsum": einsum,
    "broadcast-matmul": broadcast_matmul,
    "vectorized-map": vectorized_map,
    "map-fn": map_fn,
}
IN_FUNCTION = "-tf-function"


def _batched_call(variant: str, batch: int) -> Timed:
    form = variant.removesuffix(IN_FUNCTION)
    fn = BATCHED_FORMS[form]
    if variant.endswith(IN_FUNCTION):
        fn = tf.function(fn)
    return call_of(fn, *map(tf.constant, make_batch(batch)))


BATCHED_MATMUL = Workload(
    name="batched-matmul",
    question="A Python loop of products, or one tensor operation?",
    unit="batched product",
    size_name="matrices in the batch",
    # A fortieth of the handbook's 1000 matrices: every form's call still takes tens of
    # milliseconds, a quick run's block of one call.
    default_size=25,
    baseline="loop-stack",
    variants=tuple(f"{form}{suffix}" for suffix in ("", IN_FUNCTION) for form in BATCHED_FORMS),
    make_call=_batched_call,
)


# -- Element-wise chains -------------------------------------------------------------------------

#: Rounds of x <- 0.9·x + 0.1 in the affine chain: two element-wise ops each.
AFFINE_ROUNDS = 10


def affine_chain(x):
    """``AFFINE_ROUNDS`` rounds of x <- 0.9·x + 0.1: cheap arithmetic, one pass over memory each op
    unless the ops are fused."""
    for _ in range(AFFINE_ROUNDS):
        x = x * 0.9 + 0.1
    return x


def affine_chain_numpy(x: np.ndarray) -> np.ndarray:
    for _ in range(AFFINE_ROUNDS):
        x = x * np.float32(0.9) + np.float32(0.1)
    return x


#: Chain name -> (TensorFlow function, NumPy function, element-wise ops it runs).
CHAINS: dict[str, tuple[Callable, Callable, int]] = {
    "affine": (affine_chain, affine_chain_numpy, 2 * AFFINE_ROUNDS),
    "tanh": (eager.small_ops, eager.small_ops_numpy, 3 * eager.SMALL_OPS_ROUNDS),
}


def chain_bytes(elements: int) -> int:
    """The least memory traffic of a chain: read x once and write the result once (float32)."""
    return 2 * 4 * elements


def _chain_call(chain: str) -> Callable[[str, int], Timed]:
    tf_fn, numpy_fn, _ = CHAINS[chain]

    def make_call(variant: str, elements: int) -> Timed:
        x = eager.make_vector(elements)
        if variant == "numpy":
            return call_of(numpy_fn, x)
        fn = tf_fn if variant == "eager" else tf.function(tf_fn, jit_compile=variant == "xla")
        return call_of(fn, tf.constant(x))

    return make_call


def _chain_workload(chain: str, description: str) -> Workload:
    return Workload(
        name=f"elementwise-{chain}",
        question=f"Does fusing a chain of {description} pay?",
        unit="call",
        size_name="elements",
        default_size=10**7,
        baseline="numpy",
        variants=("numpy", "eager", "tf-function", "xla"),
        make_call=_chain_call(chain),
    )


AFFINE = _chain_workload("affine", "cheap element-wise ops (multiply, add)")
TANH = _chain_workload("tanh", "element-wise ops with a tanh")

# -- Feeding the data ----------------------------------------------------------------------------

#: One epoch: STEPS batches of BATCH rows of FEATURES raw features, fed to a two-layer network.
STEPS, BATCH, FEATURES = 32, 128, 256
#: Learning rate of the plain gradient step.
STEP_SIZE = 1e-3


#: Rows of the whole data set: one epoch.
DATA_ROWS = STEPS * BATCH


def make_raw_data() -> tuple[np.ndarray, np.ndarray]:
    """Raw features (float64, off-centre, as data arrives) and targets, from a fixed seed."""
    rng = np.random.default_rng(0)
    x = rng.normal(50.0, 10.0, (DATA_ROWS, FEATURES))
    return x, rng.normal(size=(DATA_ROWS, 1)).astype(np.float32)


def preprocess_numpy(x: np.ndarray) -> np.ndarray:
    """The preprocessing every variant applies: centre, scale and cast to float32."""
    return ((x - 50.0) / 10.0).astype(np.float32)


def preprocess(x, y):
    """The same preprocessing in TensorFlow ops, for ``Dataset.map``."""
    return tf.cast((x - 50.0) / 10.0, tf.float32), y


def make_weights(hidden: int) -> list[tf.Variable]:
    """Fresh weights of a FEATURES -> ``hidden`` -> 1 tanh network, from a fixed seed."""
    rng = np.random.default_rng(1)
    shapes = ((FEATURES, hidden), (hidden, 1))
    return [
        tf.Variable(rng.normal(scale=shape[0] ** -0.5, size=shape).astype(np.float32))
        for shape in shapes
    ]


def _train_step(weights: list[tf.Variable]) -> Callable[[Any, Any], Any]:
    """A compiled plain gradient step on ``weights``, returning the batch's loss."""

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.tanh(x @ weights[0]) @ weights[1] - y))
        for weight, gradient in zip(weights, tape.gradient(loss, weights), strict=True):
            weight.assign_sub(STEP_SIZE * gradient)
        return loss

    return step


def _numpy_batches(
    x: np.ndarray, y: np.ndarray, rows: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Preprocess each batch in NumPy as it is needed (what a hand-written loop does)."""
    for start in range(0, len(x), rows):
        yield preprocess_numpy(x[start : start + rows]), y[start : start + rows]


def _batch_sources(variant: str, rows: int = BATCH) -> Callable[[], Any]:
    """A zero-argument callable returning one epoch's batches of ``rows`` rows, fed as
    ``variant`` feeds them."""
    x, y = make_raw_data()
    if variant == "numpy-each-step":
        return functools.partial(_numpy_batches, x, y, rows)
    if variant == "preloaded":
        # Preprocessed and converted once, before training: each step takes ready tensors.
        batches = [tuple(map(tf.constant, batch)) for batch in _numpy_batches(x, y, rows)]
        return lambda: batches
    if variant == "tf-data":
        dataset = (
            tf.data.Dataset.from_tensor_slices((x, y))
            .batch(rows)
            .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
            .cache()
            .prefetch(tf.data.AUTOTUNE)
        )
        return lambda: dataset
    signature = (
        tf.TensorSpec((None, FEATURES), tf.float32),
        tf.TensorSpec((None, 1), tf.float32),
    )
    dataset = tf.data.Dataset.from_generator(
        functools.partial(_numpy_batches, x, y, rows), output_signature=signature
    ).prefetch(tf.data.AUTOTUNE)
    return lambda: dataset


def train_epoch(step: Callable[[Any, Any], Any], batches: Callable[[], Any]) -> Any:
    """One epoch: a step per batch; returns the last batch's loss."""
    loss = None
    for x, y in batches():
        loss = step(x, y)
    return loss


def make_training(variant: str, hidden: int) -> tuple[Timed, list[tf.Variable]]:
    """A ``variant`` epoch on fresh weights, timed per step, and the weights it trains."""
    weights = make_weights(hidden)
    step = _train_step(weights)
    timed = Timed(train_epoch, (step, _batch_sources(variant)), STEPS, (step,))
    return timed, weights


def drain(batches: Callable[[], Any]) -> Any:
    """One epoch's batches with no training: what feeding alone costs. Returns the last batch."""
    (last,) = collections.deque(batches(), maxlen=1)
    return last


FEEDING_VARIANTS = ("numpy-each-step", "preloaded", "tf-data", "from-generator")

INPUT_ONLY = Workload(
    name="input-only",
    question="What does producing one batch cost, with no training step?",
    unit="batch",
    size_name="rows per batch",
    default_size=BATCH,
    baseline="numpy-each-step",
    variants=FEEDING_VARIANTS,
    make_call=lambda variant, rows: Timed(
        drain, (_batch_sources(variant, rows),), math.ceil(DATA_ROWS / rows)
    ),
)

INPUT_PIPELINE = Workload(
    name="input-pipeline",
    question="How much of a training step goes to feeding the data?",
    unit="step",
    size_name="hidden units",
    default_size=16,
    baseline="numpy-each-step",
    variants=FEEDING_VARIANTS,
    make_call=lambda variant, hidden: make_training(variant, hidden)[0],
)

# -- One convolution -----------------------------------------------------------------------------

#: 3x3 convolutions of CONV_IMAGES images of side x side, CONV_CHANNELS channels in and out.
CONV_IMAGES, CONV_CHANNELS = 8, 32


def make_images(side: int) -> tuple[np.ndarray, np.ndarray]:
    """Images (NHWC) and 3x3 filters, float32, fixed seed."""
    rng = np.random.default_rng(0)
    images = rng.uniform(-1, 1, (CONV_IMAGES, side, side, CONV_CHANNELS)).astype(np.float32)
    filters = rng.uniform(-1, 1, (3, 3, CONV_CHANNELS, CONV_CHANNELS)).astype(np.float32)
    return images, filters


def conv_flops(side: int) -> int:
    """Floating-point operations of the convolution (same padding): 2·9·C_in per output value."""
    return 2 * 9 * CONV_CHANNELS * CONV_IMAGES * side * side * CONV_CHANNELS


def convolve(images, filters):
    return tf.nn.conv2d(images, filters, strides=1, padding="SAME")


CONV2D = Workload(
    name="conv2d",
    question="What does one 3x3 convolution cost?",
    unit="convolution",
    size_name="image side",
    default_size=64,
    baseline="eager",
    variants=("eager", "tf-function"),
    make_call=lambda variant, side: call_of(
        convolve if variant == "eager" else tf.function(convolve),
        *map(tf.constant, make_images(side)),
    ),
)

WORKLOADS = (MATMUL, BATCHED_MATMUL, AFFINE, TANH, INPUT_PIPELINE, INPUT_ONLY, CONV2D)
