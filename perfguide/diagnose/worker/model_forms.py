"""The forms of a saved Keras model as timed calls (see :mod:`perfguide.diagnose`): how it
predicts a batch, the reader's usual way first, then converted for the serving runtimes; how it
trains on a batch; the batch it is timed on, and the other batch size it is timed at.
:mod:`perfguide.diagnose.worker.forms` checks and registers them.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.diagnose.target import Target
from perfguide.diagnose.worker.loading import arguments, load_model, named_batch, spec_text
from perfguide.measure.timer import Timed
from perfguide.workloads import serving
from perfguide.workloads.base import call_of
from perfguide.workloads.training_loop import custom_train_step, inference_function

#: How a Keras model predicts a batch, and how it trains on one: the reader's usual way first;
#: then the model converted for the serving runtimes (see the serving chapter). ``fit`` trains
#: as readers call it, once over an epoch of many batches; ``fit-per-batch`` on one batch a
#: call, which with it gives the price of a fit call apart from its steps.
INFERENCE_FORMS = ("predict", "model-call", "predict-on-batch", "tf-function")
SERVING_FORMS = ("saved-model", "litert", "onnxruntime", "openvino")
TRAINING_FORMS = ("fit", "fit-per-batch", "train-on-batch", "custom-step")
#: Batches in the epoch of one timed ``fit`` call (the reader's batch, repeated in NumPy
#: arrays, as readers feed fit), fewer where the epoch's arrays would take more than
#: ``EPOCH_BYTES``; and the steps each training form takes to show it trains as fit does.
EPOCH_STEPS, EPOCH_BYTES, CHECK_STEPS = 64, 2**28, 2
#: Where a model is also timed beside the reader's batch: one request, or where the reader's
#: batch is one, a batch of Keras's predict's default size.
ONE_REQUEST, PREDICT_BATCH = 1, 32


def epoch_steps(batch_bytes: int) -> int:
    """Batches in the epoch of one timed ``fit`` call, for a batch (inputs and targets) of
    ``batch_bytes``: at least two, so that fit's price per call parts from its steps.

    >>> epoch_steps(500_000), epoch_steps(20 * 2**20), epoch_steps(2**30)
    (64, 12, 2)
    """
    return max(CHECK_STEPS, min(EPOCH_STEPS, EPOCH_BYTES // batch_bytes))


def other_batch(batch: int) -> int:
    """The batch size a model is timed at beside the reader's ``batch``."""
    return ONE_REQUEST if batch > ONE_REQUEST else PREDICT_BATCH


def rebatched(x: Any, size: int) -> Any:
    """A batch of ``size`` requests: the reader's (each input's, for several), repeated as
    often as it takes."""
    return tf.nest.map_structure(lambda a: np.resize(np.asarray(a), (size, *np.shape(a)[1:])), x)


def batch_size(x: Any) -> int:
    """Requests in a batch (of one input, or several)."""
    return len(tf.nest.flatten(x)[0])


def keras_inputs(model: Any) -> dict[str, str]:
    """A Keras model's inputs by name, in order, each as an ``--input`` spec would say it."""
    return {x.name: spec_text(str(x.dtype), x.shape) for x in model.inputs}


def model_inputs(target: Target, model: Any) -> tuple[Any, Any]:
    """The batch (``--input`` specs: one per model input, by name or in order; several inputs
    by name) and its targets where the factory gives them (else None)."""
    if target.factory is None:
        return named_batch(target, keras_inputs(model)), None
    args = arguments(target)
    if len(args) == 2:
        return args
    return (args[0] if len(args) == 1 else list(args)), None


def targets_of(model: Any, predicted: Any) -> np.ndarray:
    """Targets to train ``model`` on: its own predictions (sparse losses: their classes), which
    train like any targets."""
    predicted = np.asarray(predicted)
    loss = str(getattr(model.loss, "name", model.loss) or "").lower()
    return np.argmax(predicted, axis=-1) if "sparse" in loss else predicted


def model_batch(target: Target, model: Any) -> tuple[Any, Any]:
    """The batch (:func:`model_inputs`) and its targets: the factory's, else
    :func:`targets_of` the model's predictions."""
    x, y = model_inputs(target, model)
    return x, targets_of(model, model(x, training=False)) if y is None else y


def batch_bytes(x: Any, y: Any) -> int:
    """Bytes of a batch's inputs and targets."""
    return sum(np.asarray(a).nbytes for a in tf.nest.flatten((x, y)))


def trains(model: Any) -> bool:
    """Whether the model was saved compiled, with an optimizer and a loss: it can be trained."""
    return getattr(model, "optimizer", None) is not None and bool(getattr(model, "loss", None))


def infer(model: Any, x: Any) -> Any:
    """The model's forward pass on ``x``, as in inference."""
    return model(x, training=False)


def inference_call(form: str, model: Any, x: Any, conversions: Path) -> Timed:
    """An inference form on batch ``x``; the serving forms convert the model into the folder
    ``conversions`` (once: later calls read what is there)."""
    if form in SERVING_FORMS:
        return _served_call(form, model, x, conversions)
    if form == "predict":
        return Timed(functools.partial(model.predict, verbose=0), (x,))
    if form == "model-call":
        return Timed(functools.partial(model, training=False), (x,))
    if form == "predict-on-batch":
        return Timed(model.predict_on_batch, (x,))
    return call_of(inference_function(model), x)


def _served_call(form: str, model: Any, x: Any, conversions: Path) -> Timed:
    if isinstance(x, (list, tuple)):  # several inputs, in order: the runtimes take them by name
        x = dict(zip(keras_inputs(model), x, strict=True))
    batch = tf.nest.map_structure(np.asarray, x)
    return Timed(serving.converted(model, form, conversions), (batch,))


def training_call(form: str, model: Any, x: Any, y: Any, steps: int) -> Timed:
    """A training form on batch ``x``, ``y``, timed per step: ``fit`` once over an epoch of
    ``steps`` such batches, the others one batch a call."""
    fit = functools.partial(model.fit, batch_size=len(y), epochs=1, verbose=0, shuffle=False)
    if form == "fit":
        epoch = tf.nest.map_structure(lambda a: rebatched(a, steps * len(a)), (x, y))
        return Timed(fit, epoch, steps)
    if form == "fit-per-batch":
        return Timed(fit, (x, y))
    if form == "train-on-batch":
        return Timed(model.train_on_batch, (x, y))
    return call_of(custom_train_step(model), x, y)


def trained_weights(path: str, x: Any, y: Any, form: str) -> list[np.ndarray]:
    """The weights of the model saved at ``path`` after a short epoch of ``form``: one fit
    call, or as many calls of a batch."""
    fresh = load_model(path)
    timed = training_call(form, fresh, x, y, CHECK_STEPS)
    for _ in range(CHECK_STEPS // timed.units_per_call):
        timed()
    return [np.asarray(w) for w in fresh.get_weights()]
