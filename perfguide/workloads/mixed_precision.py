"""Mixed precision on a CPU: the workloads behind "Why did mixed precision make my model slower?".

Users turn on Keras's ``mixed_float16`` or ``mixed_bfloat16`` policy and see training slow down,
on CPUs by orders of magnitude (tensorflow/tensorflow#45441, #59050). Whether a 16-bit type is
faster depends on what the CPU can do with it and on which kernels TensorFlow runs for it. The
timed workloads:

* ``mixed-precision-matmul`` and ``mixed-precision-conv2d``: one square product and one 3 × 3
  convolution in float32, bfloat16 and float16, each as a ``tf.function``, operands cast once
  before timing;
* ``mixed-precision-training``: one ``train_on_batch`` step of a small image classifier under
  the policies ``float32``, ``mixed_bfloat16`` and ``mixed_float16`` (the last with loss
  scaling), each also compiled with ``jit_compile=True``;
* ``mixed-precision-inference``: ``predict_on_batch`` of the same model under each policy.

Every policy's model starts from the same weights and trains on the same batches; the tests
check that their losses stay together (:func:`losses_after`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.measure.timer import Timed
from perfguide.workloads.base import Workload, call_of
from perfguide.workloads.tf_function import make_matrix
from perfguide.workloads.vectorization import convolve, make_images, product

#: The three floating-point types and the Keras policies built on them.
DTYPES = ("float32", "bfloat16", "float16")
POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
#: The CPU flags (as /proc/cpuinfo names them) that do arithmetic on each 16-bit type natively.
NATIVE_FLAGS = {"bfloat16": ("avx512_bf16", "amx_bf16"), "float16": ("avx512_fp16", "amx_fp16")}

# -- Kernels ---------------------------------------------------------------------------------


def _typed_call(fn: Any, operands: tuple[np.ndarray, ...], dtype: str) -> Timed:
    """``fn`` as a ``tf.function`` of ``operands`` cast to ``dtype`` once, before timing."""
    return call_of(tf.function(fn), *(tf.cast(tf.constant(a), dtype) for a in operands))


def _product_call(dtype: str, side: int) -> Timed:
    return _typed_call(product, (make_matrix(side), make_matrix(side).T.copy()), dtype)


def _convolution_call(dtype: str, side: int) -> Timed:
    return _typed_call(convolve, make_images(side), dtype)


PRODUCT = Workload(
    name="mixed-precision-matmul",
    question="Is a bfloat16 or float16 product faster than a float32 one on this CPU?",
    unit="product",
    size_name="matrix side",
    default_size=1024,
    baseline="float32",
    variants=DTYPES,
    make_call=_product_call,
)
CONVOLUTION = Workload(
    name="mixed-precision-conv2d",
    question="Is a bfloat16 or float16 convolution faster than a float32 one on this CPU?",
    unit="convolution",
    size_name="image side",
    default_size=64,
    baseline="float32",
    variants=DTYPES,
    make_call=_convolution_call,
)

# -- A model under each policy ---------------------------------------------------------------

#: Images of SIDE x SIDE pixels with CHANNELS channels, in CLASSES classes; BATCH per step. A
#: policy without fast kernels on a CPU can take over a second a step even at this batch, and the
#: page takes many steps of it (timing, profiles, loss curves): a small batch keeps them affordable.
SIDE, CHANNELS, CLASSES, BATCH = 32, 3, 10, 16
#: Filters of the two convolutions, units of the hidden dense layer.
FILTERS, UNITS = 32, 256
LEARNING_RATE, SEED = 0.1, 0
#: The suffix of the variants compiled with XLA.
XLA = "-xla"


def make_data(samples: int, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Images that carry their class (a colour per class under noise), and the labels, so a
    model has something to learn and its loss falls."""
    rng = np.random.default_rng(seed)
    patterns = np.random.default_rng(SEED).normal(size=(CLASSES, 1, 1, CHANNELS))
    labels = rng.integers(0, CLASSES, samples)
    noise = rng.normal(size=(samples, SIDE, SIDE, CHANNELS))
    return (patterns[labels] + noise).astype(np.float32), labels


def build_model(policy: str) -> Any:
    """The classifier, its layers computing under ``policy``; the logits stay float32, as the
    mixed-precision guide advises, so the softmax in the loss is computed in full precision."""
    import keras

    keras.utils.set_random_seed(SEED)
    layers = keras.layers
    inputs = keras.Input((SIDE, SIDE, CHANNELS))
    x = layers.Conv2D(FILTERS, 3, padding="same", activation="relu", dtype=policy)(inputs)
    x = layers.Conv2D(FILTERS, 3, padding="same", activation="relu", dtype=policy)(x)
    x = layers.GlobalAveragePooling2D(dtype=policy)(x)
    x = layers.Dense(UNITS, activation="relu", dtype=policy)(x)
    logits = layers.Dense(CLASSES, dtype="float32")(x)
    return keras.Model(inputs, logits)


def compiled_model(policy: str, jit_compile: bool = False) -> Any:
    """:func:`build_model` compiled with plain SGD; under ``mixed_float16`` the optimizer scales
    the loss, because small float16 gradients would otherwise round to zero."""
    import keras

    model = build_model(policy)
    optimizer = keras.optimizers.SGD(LEARNING_RATE)
    if policy == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=optimizer, loss=loss, jit_compile=jit_compile)
    return model


def policy_of(variant: str) -> tuple[str, bool]:
    """A training variant's Keras policy and whether it is compiled with XLA.

    >>> policy_of("mixed-bfloat16-xla")
    ('mixed_bfloat16', True)
    """
    jit_compile = variant.endswith(XLA)
    return variant.removesuffix(XLA).replace("-", "_"), jit_compile


def _training_call(variant: str, batch: int) -> Timed:
    images, labels = make_data(batch)
    model = compiled_model(*policy_of(variant))
    return call_of(model.train_on_batch, images, labels)


def _inference_call(variant: str, batch: int) -> Timed:
    images, _ = make_data(batch)
    return call_of(build_model(policy_of(variant)[0]).predict_on_batch, images)


TRAINING_VARIANTS = tuple(
    policy.replace("_", "-") + suffix for suffix in ("", XLA) for policy in POLICIES
)
TRAINING = Workload(
    name="mixed-precision-training",
    question="Does a mixed-precision policy make a training step faster on this CPU?",
    unit="training step",
    size_name="samples per batch",
    default_size=BATCH,
    baseline="float32",
    variants=TRAINING_VARIANTS,
    make_call=_training_call,
)
INFERENCE = Workload(
    name="mixed-precision-inference",
    question="Does a mixed-precision policy make inference faster on this CPU?",
    unit="batch",
    size_name="samples per batch",
    default_size=BATCH,
    baseline="float32",
    variants=TRAINING_VARIANTS[: len(POLICIES)],
    make_call=_inference_call,
)

WORKLOADS = (PRODUCT, CONVOLUTION, TRAINING, INFERENCE)

# -- What the policies change besides time -----------------------------------------------------


def losses_after(variant: str, steps: int, batches: int = 4) -> list[float]:
    """The training loss of each of ``steps`` steps of one training variant, cycling over
    ``batches`` fixed batches of :data:`BATCH` images: the curve every policy must follow
    within a tolerance."""
    images, labels = make_data(batches * BATCH)
    model = compiled_model(*policy_of(variant))
    losses = []
    for step in range(steps):
        part = slice((step % batches) * BATCH, (step % batches + 1) * BATCH)
        losses.append(float(model.train_on_batch(images[part], labels[part])))
    return losses


def memory_bytes(variant: str, batch: int = BATCH) -> dict[str, int]:
    """Bytes of the model's weights (the variables, as stored) and of the activations one batch
    makes (every layer's output, at the type the layer computes in)."""
    model = build_model(policy_of(variant)[0])
    weights = sum(w.numpy().nbytes for w in model.weights)
    activations = sum(
        batch * int(np.prod(layer.output.shape[1:])) * tf.as_dtype(layer.compute_dtype).size
        for layer in model.layers[1:]
    )
    return {"weights": weights, "activations": activations}


def native_types(cpu_flags: list[str]) -> dict[str, bool]:
    """Which 16-bit types this CPU does arithmetic on natively, from its flags.

    >>> native_types(["avx2", "avx512f", "avx512_bf16"])
    {'bfloat16': True, 'float16': False}
    """
    return {dtype: any(f in cpu_flags for f in flags) for dtype, flags in NATIVE_FLAGS.items()}
