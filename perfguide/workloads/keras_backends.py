"""Keras 3 on each of its backends, and Keras 2: the workloads behind "Should I switch Keras's
backend?".

Keras 3 reads its backend once, when it is imported (``KERAS_BACKEND``: ``tensorflow``, ``jax``,
``openvino``), and ``tf.keras`` is Keras 2 only in a process that set ``TF_USE_LEGACY_KERAS=1``
before importing TensorFlow: each backend is a process-wide setting (:data:`BACKENDS`), so each
has a workload of its own (``keras-backends-<backend>``), run in processes started with that
setting. A variant is a model and a path, ``<model>-<path>``:

* the models (:data:`MODELS`): a small MLP, the ten Dense + Dropout layers of
  keras-team/keras#19953 as its issue gives them, the training-loop chapter's Conv1D model, a
  GRU and a small Transformer encoder block;
* the paths (:data:`PATHS`): ``fit`` over an epoch of many batches from NumPy arrays with
  ``jit_compile=False`` and ``fit-jit`` with ``jit_compile=True`` (``"auto"``, the default, picks
  the second on JAX and the first on TensorFlow without a GPU); ``fit-dataset``, the same epoch
  from a ``tf.data.Dataset`` of the same batches built once, ``jit_compile`` left to ``"auto"``;
  ``fit-steps-per-execution``, ``fit`` from the arrays running the training-loop chapter's
  :data:`~perfguide.workloads.training_loop.STEPS_PER_EXECUTION` batches a call;
  ``evaluate`` over the same epoch from the arrays (``jit_compile`` left to ``"auto"``);
  ``predict`` on one batch; and ``model-call``, a call of the model on one batch with its output
  read as NumPy. Each backend times the paths, on the models, :data:`TIMED` gives it.

Every backend builds a model from the same weights (:func:`built`) and reads the same data
(:func:`make_data`), so every backend computes the same outputs and, from the same weights, the
same training step (the tests check both).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.measure.memory import resident_bytes, resident_peak
from perfguide.measure.timer import Timed
from perfguide.workloads import training_loop as tl
from perfguide.workloads.base import Workload
from perfguide.workloads.keras_processes import (
    BACKENDS,
    NAMES,
    missing_backends,
)
from perfguide.workloads.memory import layer_outputs

#: OpenVINO's names of the precisions it computes in, as NumPy and Keras name them.
OPENVINO_TYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}


#: Batches in the epoch of one ``fit`` call, as readers call ``fit``: over many batches; eight,
#: as many as ``steps_per_execution`` runs a call, keep the chapter within its minutes.
EPOCH_BATCHES = 8


def keras_in_process() -> Any:
    """The Keras this process runs: Keras 2 where ``TF_USE_LEGACY_KERAS=1`` was set before
    TensorFlow was imported, else Keras 3 on the backend ``KERAS_BACKEND`` named at its import."""
    if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
        return tl.keras_module(2)
    return tl.keras_module(3)


def backend_in_process() -> str:
    """This process's backend, by the name :data:`BACKENDS` gives it."""
    keras = keras_in_process()
    return "keras-2" if keras.__name__.startswith("tf_keras") else keras.backend.backend()


# -- The models ---------------------------------------------------------------------------------


def mlp(keras: Any, dropout: float) -> Any:
    """A small MLP: 256 features, a hidden layer of 512, ten classes (as logits)."""
    inputs = keras.Input((256,))
    x = keras.layers.Dense(512, activation="relu")(inputs)
    x = keras.layers.Dropout(dropout)(x)
    return keras.Model(inputs, keras.layers.Dense(10)(x))


def deep_mlp(keras: Any, dropout: float) -> Any:
    """keras-team/keras#19953's model: ten Dense layers of 128, each with Dropout, on four
    features, and a sigmoid output."""
    inputs = x = keras.Input((4,))
    for _ in range(10):
        x = keras.layers.Dense(128, activation="relu")(x)
        x = keras.layers.Dropout(dropout)(x)
    return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x))


def conv1d(keras: Any, dropout: float) -> Any:
    """The training-loop chapter's small Conv1D model on its 140 time steps."""
    return tl.small_model(keras, tl.SMALL_DATA, dropout)


#: The sequence models' samples: time steps, and features a step.
SEQUENCE = (32, 16)


def gru(keras: Any, dropout: float) -> Any:
    """A recurrent classifier: a GRU of 64 units over the sequence, then ten classes."""
    inputs = keras.Input(SEQUENCE)
    x = keras.layers.GRU(64, dropout=dropout)(inputs)
    return keras.Model(inputs, keras.layers.Dense(10)(x))


def transformer(keras: Any, dropout: float) -> Any:
    """A small Transformer encoder block: four heads of self-attention and a feed-forward layer
    of 64, each added back and normalized, then the steps averaged into ten classes."""
    inputs = keras.Input(SEQUENCE)
    attended = keras.layers.MultiHeadAttention(4, 4, dropout=dropout)(inputs, inputs)
    x = keras.layers.LayerNormalization()(inputs + attended)
    fed = keras.layers.Dense(16)(keras.layers.Dense(64, activation="relu")(x))
    x = keras.layers.LayerNormalization()(x + fed)
    pooled = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, keras.layers.Dense(10)(pooled))


@dataclasses.dataclass(frozen=True)
class Model:
    """How a model is built, fed and compiled: ``build(keras, dropout)``, a sample's shape, the
    batch size, the number of classes (1: 0/1 targets), and its loss, optimizer and metrics from
    ``compile_args(keras)``."""

    build: Callable[[Any, float], Any]
    sample: tuple[int, ...]
    batch: int
    classes: int
    dropout: float
    compile_args: Callable[[Any], dict[str, Any]]


def _classifier(keras: Any) -> dict[str, Any]:
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return {"optimizer": keras.optimizers.Adam(1e-3), "loss": loss}


def _as_in_19953(keras: Any) -> dict[str, Any]:
    return {
        "optimizer": keras.optimizers.Adam(1e-3),
        "loss": keras.losses.BinaryCrossentropy(label_smoothing=0.05),
        "metrics": [keras.metrics.AUC(name="auc")],
    }


def _binary(keras: Any) -> dict[str, Any]:
    return {"optimizer": keras.optimizers.Adam(tl.LEARNING_RATE), "loss": "binary_crossentropy"}


MODELS = {
    "mlp": Model(mlp, (256,), 64, 10, 0.0, _classifier),
    "deep-mlp": Model(deep_mlp, (4,), 500, 1, 0.1, _as_in_19953),
    "conv1d": Model(conv1d, (tl.SMALL_DATA, tl.FEATURES), tl.BATCH, 1, 0.5, _binary),
    "gru": Model(gru, SEQUENCE, 64, 10, 0.0, _classifier),
    "transformer": Model(transformer, SEQUENCE, 64, 10, 0.0, _classifier),
}
PATHS = (
    "fit",
    "fit-jit",
    "fit-dataset",
    "fit-steps-per-execution",
    "evaluate",
    "predict",
    "model-call",
)
EVERY_MODEL = tuple(MODELS)
#: Each backend's paths, and the models each is timed on (its workload's variants): the paths
#: the chapter's claims and tables need, and no more, to keep it within its minutes (a fit
#: path's first call traces, and compiles, a model's step: seconds each). The sequence models
#: (the GRU and the Transformer block) train on Keras 3's backends only, Keras's claim on them;
#: Keras 2 trains the MLP and keras-team/keras#19953's model (the training-loop chapter sets it
#: against Keras 3 on its Conv1D model). JAX's fit without jit_compile (keras-team/keras#18648's
#: slow case) takes seconds a call; XLA's compile of #19953's model on TensorFlow takes seconds
#: a process. ``predict`` and ``model(x)`` run on the MLP: their price per call is the finding
#: (a GRU's ``model(x)`` runs its steps one by one, outside a compiled function). OpenVINO runs
#: inference only.
TIMED = {
    "keras-2": {"fit": ("mlp", "deep-mlp"), "predict": ("mlp",), "model-call": ("mlp",)},
    "tensorflow": {
        "fit": EVERY_MODEL,
        "fit-jit": ("mlp",),
        "fit-dataset": ("mlp",),
        "fit-steps-per-execution": ("mlp",),
        "evaluate": ("mlp",),
        "predict": ("mlp",),
        "model-call": ("mlp",),
    },
    "jax": {
        "fit": ("mlp",),
        "fit-jit": EVERY_MODEL,
        "evaluate": ("mlp",),
        "predict": ("mlp",),
        "model-call": ("mlp",),
    },
    "openvino": {"predict": ("mlp",), "model-call": ("mlp",)},
}


def make_data(model: str, batches: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``batches`` batches of ``model``'s samples and targets, from a fixed seed."""
    spec = MODELS[model]
    rng = np.random.default_rng(2)
    x = rng.standard_normal((batches * spec.batch, *spec.sample), dtype=np.float32)
    if spec.classes == 1:
        return x, rng.integers(0, 2, (len(x), 1)).astype(np.float32)
    return x, rng.integers(0, spec.classes, len(x))


def built(model: str, keras: Any = None, dropout: float | None = None) -> Any:
    """``model`` built by ``keras`` (this process's by default) on
    :func:`~perfguide.workloads.training_loop.initial_weights`, so that every backend starts
    from the same weights; ``dropout`` instead of the model's own rate."""
    keras = keras or keras_in_process()
    spec = MODELS[model]
    network = spec.build(keras, spec.dropout if dropout is None else dropout)
    own = network.get_weights()
    drawn = tl.initial_weights([w.shape for w in own])
    # 1-D weights keep their constant starting values (zero biases, a normalization's unit scale).
    network.set_weights([w if w.ndim == 1 else d for w, d in zip(own, drawn, strict=True)])
    return network


def compiled(
    model: str,
    jit_compile: bool | str,
    keras: Any = None,
    steps_per_execution: int = 1,
    **options: Any,
) -> Any:
    """:func:`built`'s model compiled as :data:`MODELS` says, with ``jit_compile`` and
    ``steps_per_execution`` set."""
    keras = keras or keras_in_process()
    network = built(model, keras, **options)
    network.compile(
        **MODELS[model].compile_args(keras),
        jit_compile=jit_compile,
        steps_per_execution=steps_per_execution,
    )
    return network


def fit_epoch(network: Any, *data: Any, **options: Any) -> float:
    """One ``fit`` epoch over ``data`` (NumPy arrays, with ``batch_size`` in ``options``, or a
    ``tf.data.Dataset``); its loss, read as a float (which waits for the epoch's last step on
    every backend)."""
    history = network.fit(*data, epochs=1, verbose=0, shuffle=False, **options)
    return float(history.history["loss"][-1])


def evaluate_epoch(network: Any, x: np.ndarray, y: np.ndarray, batch_size: int) -> float:
    """One ``evaluate`` pass over ``x`` and ``y`` in batches of ``batch_size``; its loss, read
    as a float."""
    return float(network.evaluate(x, y, batch_size=batch_size, verbose=0, return_dict=True)["loss"])


def call_and_read(network: Any, x: np.ndarray) -> np.ndarray:
    """``network(x)`` in inference mode, its output read as NumPy (OpenVINO runs the call only
    when its output is read)."""
    output = network(x, training=False)
    keras = keras_in_process()
    read = keras.ops.convert_to_numpy if hasattr(keras, "ops") else np.asarray  # Keras 2: no ops
    return read(output)


def ops_per_step(model: str) -> int:
    """The operations in ``model``'s training step as this process's backend runs it without
    ``jit_compile``: on TensorFlow, the ops of the step's graph (``fit`` runs the step as one
    graph call, compiled or not); on JAX, the top-level operations of the step's jaxpr, which JAX
    dispatches one by one from Python when the step is not compiled (``jax.jit`` makes them one
    call). Counted after one epoch of ``fit``, which builds the optimizer and metrics."""
    spec = MODELS[model]
    network = compiled(model, jit_compile=False)
    x, y = make_data(model)
    fit_epoch(network, x, y, batch_size=spec.batch)
    backend = backend_in_process()
    if backend == "jax":
        import jax

        state = network._get_jax_state(True, True, True, True)  # what fit hands its step
        return len(jax.make_jaxpr(network.train_step)(state, (x, y)).jaxpr.eqns)
    if backend != "tensorflow":
        raise ValueError(f"ops are counted on TensorFlow and JAX, not on {NAMES[backend]}")
    step = tf.function(network.train_step).get_concrete_function((tf.constant(x), tf.constant(y)))
    return len(step.graph.get_operations())


#: The batch sizes a training step's peak memory is read at: large enough for the MLP's
#: activations (kilobytes an example) to stand out of the allocator's chunks.
PEAK_BATCHES = (512, 2048, 8192)


def step_peaks(model: str) -> dict[str, Any]:
    """In this process, before it has trained anything: the process's peak resident set during
    one training step of ``model`` (``train_on_batch``, ``jit_compile`` at Keras's default) at
    each of :data:`PEAK_BATCHES`, each after a step that compiled it, beyond what the process
    held before its first step; and the activations one example makes, from the model's shapes
    (as in :func:`~perfguide.workloads.memory.training_peaks`)."""
    network = compiled(model, jit_compile="auto")
    start = resident_bytes()
    resident = []
    for rows in PEAK_BATCHES:
        x, y = make_data(model, rows // MODELS[model].batch)
        network.train_on_batch(x, y)
        resident.append(resident_peak(functools.partial(network.train_on_batch, x, y)) - start)
    activations = sum(layer_outputs(network).values())
    return {"resident": resident, "before": start, "activations": activations}


def predict_precision(model: Any) -> str:
    """The precision ``predict`` computed in: OpenVINO's compiled model says (bfloat16 by
    default on a CPU with bfloat16 units, such as AMX); the other backends compute in the
    model's own dtype."""
    compiled = getattr(model, "ov_compiled_model", None)
    if compiled is None:
        return str(getattr(model, "compute_dtype", "float32"))
    name = compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
    return OPENVINO_TYPES.get(name, name)


def predict_precision_of(model: str) -> dict[str, Any]:
    """The precision ``model``'s ``predict`` computes in on this process's backend
    (:func:`predict_precision`), and how far its outputs lie from ``model(x)``'s read as NumPy
    (float32 on every backend), as a share of the largest output."""
    network = built(model)
    x = make_data(model)[0]
    predicted = network.predict(x, batch_size=MODELS[model].batch, verbose=0)
    exact = call_and_read(network, x)
    share = float(np.max(np.abs(predicted - exact)) / np.max(np.abs(exact)))
    return {"precision": predict_precision(network), "difference": share}


def model_and_path(variant: str) -> tuple[str, str]:
    """The model and the path a variant names ("deep-mlp-fit-jit": "deep-mlp", "fit-jit")."""
    model = next(m for m in MODELS if variant.startswith(m + "-"))
    return model, variant[len(model) + 1 :]


def _call(backend: str, variant: str, batches: int) -> Timed:
    if backend_in_process() != backend:
        settings = " ".join(f"{k}={v}" for k, v in BACKENDS[backend].items())
        raise ValueError(f"{NAMES[backend]} runs in a process started with {settings}")
    model, path = model_and_path(variant)
    spec = MODELS[model]
    if path == "fit-dataset":
        dataset = tf.data.Dataset.from_tensor_slices(make_data(model, batches)).batch(spec.batch)
        network = compiled(model, jit_compile="auto")
        return Timed(functools.partial(fit_epoch, network, dataset), (), batches)
    if path == "evaluate":
        network = compiled(model, jit_compile="auto")
        data = make_data(model, batches)
        return Timed(functools.partial(evaluate_epoch, network, *data, spec.batch), (), batches)
    if path.startswith("fit"):
        x, y = make_data(model, batches)
        steps = tl.STEPS_PER_EXECUTION if path == "fit-steps-per-execution" else 1
        network = compiled(model, jit_compile=path == "fit-jit", steps_per_execution=steps)
        return Timed(
            functools.partial(fit_epoch, network, x, y, batch_size=spec.batch), (), batches
        )
    x = make_data(model)[0]
    network = built(model)
    if path == "predict":
        return Timed(functools.partial(network.predict, x, batch_size=spec.batch, verbose=0))
    return Timed(call_and_read, (network, x))


def _workload(backend: str) -> Workload:
    paths = TIMED[backend]
    return Workload(
        name=f"keras-backends-{backend}",
        question=f"How fast does each model train and predict on {NAMES[backend]}?",
        unit="batch",
        size_name="batches per epoch",
        default_size=EPOCH_BATCHES,
        baseline=f"mlp-{next(iter(paths))}",
        variants=tuple(f"{m}-{path}" for m in MODELS for path, on in paths.items() if m in on),
        make_call=functools.partial(_call, backend),
        process_settings=BACKENDS[backend],
        requires=lambda: missing_backends().get(backend),
    )


#: A workload a backend, each run in processes started with that backend's settings.
BY_BACKEND = {backend: _workload(backend) for backend in BACKENDS}
WORKLOADS = tuple(BY_BACKEND.values())
