"""Training-loop configurations: the workloads behind "Why is TF2 much slower than TF1?".

A Stack Overflow question asked why TensorFlow 2 trained so much slower than TensorFlow 1; its
long self-answer benchmarked small, medium and large Conv1D + Dense models over training APIs,
execution modes, data formats and Keras packages, and ended with lists of what to do and what
not to do. The timed workloads, on its models and shapes (scaled where stated):

* ``train-small-model`` and ``train-medium-model``: one training step (a batch of BATCH samples)
  through ``fit`` over an epoch of many batches, ``fit`` called per batch, ``train_on_batch``, a
  custom ``tf.function`` step, ``run_eagerly=True``, ``jit_compile=True``, a ``tf.data``
  pipeline (with its autotuning on, the default, and off) and ``steps_per_execution`` (on the
  pipeline with autotuning off); for the small model also a TensorFlow 1 graph and session;
* ``keras-versions``: Keras 3 (``keras``) against Keras 2 (``tf.keras`` when
  ``TF_USE_LEGACY_KERAS=1`` is set before TensorFlow is imported, so always its own process);
* ``keras-inference``: predicting a batch through ``model(x)``, ``predict``,
  ``predict_on_batch`` and a ``tf.function``;
* ``keras-retracing``: a pass over batches of different sizes, which may trace anew per size.

Every model of a kind starts from the same weights (:func:`initial_weights`) and trains on the
same data (:func:`make_data`), so every path computes the same step. The functions handed to
``tf.function`` live here, because AutoGraph reads a function's source file.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.measure.timer import Timed
from perfguide.workloads.base import Workload, call_of, forward_flops, watched
from perfguide.workloads.keras_processes import LEGACY_KERAS

#: Samples per batch and features per time step: the self-answer's batch shape (32, steps, 30).
BATCH, FEATURES = 32, 30
#: Time steps per sample: the self-answer's "small data" and, ten times longer, its "medium".
SMALL_DATA, MEDIUM_DATA = 140, 1400
#: The self-answer's medium model has Conv1D layers of these filters over kernels of 20; here
#: they are a quarter as wide, so that a step takes milliseconds on two cores.
MEDIUM_FILTERS = tuple(f // 4 for f in (64, 128, 256, 256, 128, 64))
#: Batches in the epoch of one call of the paths that train on many (``fit`` and its kin), as
#: readers call ``fit``: enough that its price per call is a small part of the call.
EPOCH_BATCHES = 32
#: Batches per call of ``fit``'s compiled function on the ``steps-per-execution`` path.
STEPS_PER_EXECUTION = 8
LEARNING_RATE = 1e-4


def keras_module(version: int = 3) -> Any:
    """Keras 3, or Keras 2 (which ``tf.keras`` is only where
    :data:`~perfguide.workloads.keras_processes.LEGACY_KERAS` was set before TensorFlow was
    imported: a process-wide choice)."""
    if version == 3:
        import keras

        return keras
    if os.environ.get("TF_USE_LEGACY_KERAS") != "1":
        raise ValueError("Keras 2 runs in a process started with TF_USE_LEGACY_KERAS=1")
    return tf.keras


# -- The models and their data --------------------------------------------------------------------


def small_model(keras: Any, steps: int, dropout: float = 0.5) -> Any:
    """The self-answer's small model: one strided Conv1D, pooling, two Dense layers."""
    inputs = keras.Input(shape=(steps, FEATURES))
    x = keras.layers.Conv1D(128, 40, strides=4, padding="same")(inputs)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dropout(dropout)(x)
    x = keras.layers.Dense(64, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x))


def medium_model(keras: Any, steps: int, dropout: float = 0.5) -> Any:
    """The self-answer's medium model, its convolutions :data:`MEDIUM_FILTERS` wide."""
    inputs = x = keras.Input(shape=(steps, FEATURES))
    for filters in MEDIUM_FILTERS:
        x = keras.layers.Conv1D(filters, 20, padding="valid")(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dense(256, activation="relu")(x)
    x = keras.layers.Dropout(dropout)(x)
    x = keras.layers.Dense(128, activation="relu")(x)
    x = keras.layers.Dense(64, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x))


def large_model(keras: Any, steps: int, dropout: float = 0.5) -> Any:
    """The self-answer's large model (42 convolutions, up to 1028 filters), at full width: too
    slow to train here within a docs build, built only to count its arithmetic."""
    inputs = keras.Input(shape=(steps, FEATURES))
    x = keras.layers.Conv1D(64, 400, strides=4, padding="valid")(inputs)
    x = keras.layers.Conv1D(128, 200, padding="valid")(x)
    for _ in range(40):
        x = keras.layers.Conv1D(256, 12, padding="same")(x)
    x = keras.layers.Conv1D(512, 20, strides=2, padding="valid")(x)
    x = keras.layers.Conv1D(1028, 10, strides=2, padding="valid")(x)
    x = keras.layers.Conv1D(256, 1, padding="valid")(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dense(256, activation="relu")(x)
    x = keras.layers.Dropout(dropout)(x)
    x = keras.layers.Dense(128, activation="relu")(x)
    x = keras.layers.Dense(64, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x))


MODELS = {"small": small_model, "medium": medium_model, "large": large_model}


def step_flops(model: Any) -> int:
    """Floating-point operations of one training step of a batch: the forward pass of each
    sample (:func:`~perfguide.workloads.base.forward_flops`), times three for the forward pass
    and a backward pass that costs about twice as much."""
    return 3 * BATCH * forward_flops(model)


def initial_weights(shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    """Weights for ``shapes`` from a fixed seed, the same whichever Keras builds the model:
    Glorot-uniform kernels, zero biases."""
    rng = np.random.default_rng(0)
    weights = []
    for shape in shapes:
        if len(shape) == 1:
            weights.append(np.zeros(shape, np.float32))
            continue
        receptive = math.prod(shape[:-2])
        limit = math.sqrt(6 / (receptive * (shape[-2] + shape[-1])))
        weights.append(rng.uniform(-limit, limit, shape).astype(np.float32))
    return weights


def make_data(steps: int, batches: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``batches`` batches of samples of ``steps`` time steps and 0/1 targets, fixed seed."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batches * BATCH, steps, FEATURES), dtype=np.float32)
    return x, rng.integers(0, 2, (batches * BATCH, 1)).astype(np.float32)


def compiled_model(
    model: str, steps: int, *, keras: Any = None, dropout: float = 0.5, **options: Any
) -> Any:
    """``model`` ("small" or "medium") for ``steps`` time steps, on :func:`initial_weights`,
    compiled as the self-answer compiles it (Adam, binary cross-entropy) with ``options``."""
    keras = keras or keras_module()
    built = MODELS[model](keras, steps, dropout)
    built.set_weights(initial_weights([w.shape for w in built.get_weights()]))
    optimizer = keras.optimizers.Adam(learning_rate=LEARNING_RATE)
    built.compile(optimizer, "binary_crossentropy", **options)
    return built


# -- Training paths -------------------------------------------------------------------------------


def custom_train_step(model: Any, keras: Any = None) -> Callable[[Any, Any], Any]:
    """A hand-written training step in one ``tf.function`` for a model compiled by ``keras``:
    what ``fit`` does per batch, without its loop, callbacks or data adapters."""
    loss_fn = (keras or keras_module()).losses.get(model.loss)
    # Adam's slots made before the first call: made inside it, they would cost a second trace.
    model.optimizer.build(model.trainable_variables)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(loss_fn(y, model(x, training=True)))
        gradients = tape.gradient(loss, model.trainable_variables)
        model.optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    return step


def tf1_session_step(steps: int, dropout: float, x: np.ndarray, y: np.ndarray) -> Any:
    """The small model as a TensorFlow 1 program: a graph of placeholders, variables and ops
    built once, and a ``Session.run`` per step (feeding one batch, fetching the loss)."""
    graph = tf.Graph()
    with graph.as_default():
        xs = tf.compat.v1.placeholder(tf.float32, (None, steps, FEATURES))
        ys = tf.compat.v1.placeholder(tf.float32, (None, 1))
        shapes = [(40, FEATURES, 128), (128,), (128, 64), (64,), (64, 1), (1,)]
        kernel, bias, w1, b1, w2, b2 = map(tf.Variable, initial_weights(shapes))
        h = tf.reduce_mean(tf.nn.conv1d(xs, kernel, stride=4, padding="SAME") + bias, axis=1)
        h = tf.nn.dropout(h, rate=dropout) if dropout else h
        h = tf.nn.relu(h @ w1 + b1)
        p = tf.clip_by_value(tf.sigmoid(h @ w2 + b2), 1e-7, 1 - 1e-7)
        loss = -tf.reduce_mean(ys * tf.math.log(p) + (1 - ys) * tf.math.log(1 - p))
        optimizer = tf.compat.v1.train.AdamOptimizer(LEARNING_RATE, epsilon=1e-7)
        train = optimizer.minimize(loss)
        session = tf.compat.v1.Session(graph=graph)
        session.run(tf.compat.v1.global_variables_initializer())
    fetch = functools.partial(session.run, (train, loss), {xs: x, ys: y})
    fetch.variables = lambda: session.run([kernel, bias, w1, b1, w2, b2])
    return fetch


#: Training paths: how each trains, and how many batches one call trains on.
TRAINING_VARIANTS = (
    "fit",
    "fit-per-batch",
    "train-on-batch",
    "custom-step",
    "run-eagerly",
    "jit-compile",
    "tf-data",
    "tf-data-no-autotune",
    "steps-per-execution",
)
#: Compile options of the paths that train through ``train_on_batch`` or ``fit`` differently.
_COMPILE_OPTIONS = {
    "run-eagerly": {"run_eagerly": True},
    "jit-compile": {"jit_compile": True},
    "steps-per-execution": {"steps_per_execution": STEPS_PER_EXECUTION},
}
_MANY_BATCHES = ("fit", "tf-data", "tf-data-no-autotune", "steps-per-execution")


def batched_dataset(x: np.ndarray, y: np.ndarray, autotune: bool) -> tf.data.Dataset:
    """``x`` and ``y`` in batches of :data:`BATCH`, as a ``tf.data`` pipeline, with tf.data's
    autotuning on (its default) or off."""
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
    if autotune:
        return dataset
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


class Training:
    """One training path, built on fresh weights: ``timed`` trains (a batch, or ``batches``
    where the path trains on many: EPOCH_BATCHES unless given), ``weights()`` reads the weights it
    trains, ``loss(result)`` reads a call's loss."""

    def __init__(
        self,
        variant: str,
        model: str,
        steps: int,
        *,
        keras: Any = None,
        dropout: float = 0.5,
        batches: int = EPOCH_BATCHES,
    ):
        batches = batches if variant in _MANY_BATCHES else 1
        x, y = make_data(steps, batches)
        if variant == "tf1-session":
            step = tf1_session_step(steps, dropout, x, y)
            self.timed, self.weights = Timed(step), step.variables
            return
        options = _COMPILE_OPTIONS.get(variant, {})
        built = compiled_model(model, steps, keras=keras, dropout=dropout, **options)
        self.weights = built.get_weights
        fit = functools.partial(built.fit, verbose=0, shuffle=False)
        if variant == "custom-step":
            self.timed = call_of(custom_train_step(built, keras), x, y)
        elif variant in ("train-on-batch", "run-eagerly", "jit-compile"):
            self.timed = Timed(built.train_on_batch, (x, y))
        elif variant.startswith("tf-data") or variant == "steps-per-execution":
            # steps-per-execution reads tf-data-no-autotune's pipeline, so that the two differ in
            # that one option, not in autotuning too (which makes a short fit's time two-valued).
            autotune = variant == "tf-data"
            self.timed = Timed(fit, (batched_dataset(x, y, autotune),), batches)
        else:  # fit, fit-per-batch: NumPy arrays, as the self-answer fed them
            self.timed = Timed(functools.partial(fit, batch_size=BATCH), (x, y), batches)

    @staticmethod
    def loss(result: Any) -> float:
        """The loss a call returned (``fit`` returns a History, a session its fetches)."""
        if hasattr(result, "history"):
            return float(result.history["loss"][-1])
        if isinstance(result, (list, tuple)):
            return float(result[-1])
        return float(result)


def _training_workload(model: str, extra: tuple[str, ...] = ()) -> Workload:
    return Workload(
        name=f"train-{model}-model",
        question=f"How long does a training step of the {model} Conv1D model take, per API?",
        unit="step",
        size_name="time steps per sample",
        default_size=SMALL_DATA,
        baseline="fit",
        variants=TRAINING_VARIANTS + extra,
        make_call=lambda variant, steps: Training(variant, model, steps).timed,
    )


TRAIN_SMALL = _training_workload("small", ("tf1-session",))
TRAIN_MEDIUM = _training_workload("medium")

# -- Keras 3 against Keras 2 ----------------------------------------------------------------------

KERAS_VERSION_VARIANTS = (
    "keras-3-train-on-batch",
    "keras-2-train-on-batch",
    "keras-3-fit-per-batch",
    "keras-2-fit-per-batch",
)


def _keras_version_call(variant: str, steps: int) -> Timed:
    _, version, path = variant.split("-", 2)
    return Training(path, "small", steps, keras=keras_module(int(version))).timed


KERAS_VERSIONS = Workload(
    name="keras-versions",
    question="Does Keras 3 train the small model as fast as Keras 2 (tf_keras)?",
    unit="step",
    size_name="time steps per sample",
    default_size=SMALL_DATA,
    baseline="keras-2-train-on-batch",
    variants=KERAS_VERSION_VARIANTS,
    make_call=_keras_version_call,
    process_settings=LEGACY_KERAS,
    requires=lambda: (
        None
        if importlib.util.find_spec("tf_keras")
        else "needs Keras 2: pip install --no-deps tf-keras (the release matching TensorFlow's)"
    ),
)

# -- Inference -----------------------------------------------------------------------------------

INFERENCE_VARIANTS = ("model-call", "predict", "predict-on-batch", "tf-function")


def inference_function(model: Any) -> Callable[[Any], Any]:
    """The model's forward pass in inference mode as a ``tf.function``."""

    @tf.function
    def infer(x):
        return model(x, training=False)

    return infer


@functools.cache
def inference_model() -> Any:
    """The small model every inference path calls: one, since predicting changes nothing."""
    return compiled_model("small", SMALL_DATA)


def _inference_call(variant: str, batch: int) -> Timed:
    model = inference_model()
    x = make_data(SMALL_DATA, math.ceil(batch / BATCH))[0][:batch]
    if variant == "model-call":
        return Timed(functools.partial(model, training=False), (x,))
    if variant == "predict":
        return Timed(functools.partial(model.predict, verbose=0), (x,))
    if variant == "predict-on-batch":
        return Timed(model.predict_on_batch, (x,))
    return call_of(inference_function(model), x)


KERAS_INFERENCE = Workload(
    name="keras-inference",
    question="Which call predicts a batch fastest: model(x), predict, predict_on_batch?",
    unit="call",
    size_name="samples per batch",
    default_size=1,
    baseline="predict",
    variants=INFERENCE_VARIANTS,
    make_call=_inference_call,
)

# -- Retracing ------------------------------------------------------------------------------------

RETRACING_VARIANTS = (
    "train-on-batch",
    "predict-on-batch",
    "tf-function-step",
    "reduce-retracing",
    "input-signature",
)


def batch_sizes(count: int) -> list[int]:
    """``count`` different batch sizes, BATCH and down (a last, smaller batch per epoch, or
    batches of whatever arrived)."""
    return [BATCH - i * (BATCH // count) for i in range(count)]


def each_batch(step: Callable[[Any, Any], Any], batches: Sequence[tuple[Any, Any]]) -> Any:
    """One pass: ``step`` on each batch; returns the last result."""
    result = None
    for x, y in batches:
        result = step(x, y)
    return result


def _retracing_step(variant: str, model: Any) -> Callable[[Any, Any], Any]:
    if variant == "train-on-batch":
        return model.train_on_batch
    if variant == "predict-on-batch":
        return lambda x, y: model.predict_on_batch(x)
    step = custom_train_step(model)
    if variant == "tf-function-step":
        return step
    if variant == "reduce-retracing":
        return tf.function(step.python_function, reduce_retracing=True)
    signature = (
        tf.TensorSpec((None, model.input_shape[1], FEATURES), tf.float32),
        tf.TensorSpec((None, 1), tf.float32),
    )
    return tf.function(step.python_function, input_signature=signature)


def _retracing_call(variant: str, count: int) -> Timed:
    model = compiled_model("small", SMALL_DATA)
    x, y = make_data(SMALL_DATA)
    batches = [(x[:n], y[:n]) for n in batch_sizes(count)]
    step = _retracing_step(variant, model)
    return Timed(each_batch, (step, batches), count, watched(step))


KERAS_RETRACING = Workload(
    name="keras-retracing",
    question="Does feeding batches of new sizes make Keras or tf.function trace again?",
    unit="batch",
    size_name="different batch sizes per pass",
    default_size=4,
    baseline="train-on-batch",
    variants=RETRACING_VARIANTS,
    make_call=_retracing_call,
)

WORKLOADS = (TRAIN_SMALL, TRAIN_MEDIUM, KERAS_VERSIONS, KERAS_INFERENCE, KERAS_RETRACING)
