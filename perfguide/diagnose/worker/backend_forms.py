"""A saved Keras model on one of Keras 3's backends, inside a worker process started with it
(``KERAS_BACKEND`` is read once, when Keras is imported; see the Keras-backends chapter):
loaded, its predictions written for the parent to judge against TensorFlow's, and its
``predict`` (and, where the backend trains, ``fit`` over an epoch) registered to be timed as
:mod:`~perfguide.diagnose.worker.model_forms` times them under TensorFlow.

A model that does not load or predict here (a layer that calls TensorFlow ops, say) is
registered with nothing to time and the reason, in the reader's words.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.diagnose.target import BACKEND_FORMS, TRAINING_WORKLOAD, WORKLOAD, Target
from perfguide.diagnose.worker.loading import load, load_inference_model, materialize
from perfguide.diagnose.worker.model_forms import (
    batch_bytes,
    epoch_steps,
    inference_call,
    model_inputs,
    targets_of,
    training_call,
    trains,
)
from perfguide.diagnose.worker.reasons import reader_files, why_not
from perfguide.diagnose.worker_answers import OnBackend
from perfguide.measure.timer import Timed
from perfguide.report.publishing.results import write_atomically
from perfguide.workloads.base import Workload
from perfguide.workloads.keras_backends import backend_in_process, predict_precision
from perfguide.workloads.keras_processes import INFERENCE_ONLY, NAMES

UNITS = {WORKLOAD: "call", TRAINING_WORKLOAD: "step"}


@dataclasses.dataclass
class Held:
    """What a backend's worker holds: its forms as workloads by name, and the ``answer`` for
    the parent (:class:`~perfguide.diagnose.worker_answers.OnBackend`)."""

    workloads: dict[str, Workload]
    answer: OnBackend


def _workloads(makers: dict[str, Callable[[], Timed]]) -> dict[str, Workload]:
    """The forms of ``makers`` as :data:`~perfguide.diagnose.target.BACKEND_FORMS` groups them,
    each workload timed per unit."""
    by_name: dict[str, list[str]] = {}
    for form in makers:
        by_name.setdefault(BACKEND_FORMS[form], []).append(form)
    return {
        name: Workload(
            name=name,
            question=f"How fast is the model on {NAMES[backend_in_process()]}?",
            unit=UNITS[name],
            size_name="calls",
            default_size=1,
            baseline=forms[0],
            variants=tuple(forms),
            make_call=lambda variant, size: makers[variant](),
        )
        for name, forms in by_name.items()
    }


def _loaded(target: Target) -> Any:
    """The model loaded here (after the reader's module, which registers its own layers)."""
    if target.factory is not None:
        load(target.factory)
    return load_inference_model(target.function)[0]


def _npz(arrays: list[np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, *arrays)
    return buffer.getvalue()


def register(spec: dict[str, Any], outputs: str) -> Held:
    """Load the model ``spec`` names (:meth:`Target.to_json`) on this process's backend, write
    its predictions of the reader's batch into ``outputs`` (a ``.npz`` file), and register its
    ``predict`` and, where the backend trains and the model was saved compiled (with one
    output, which its own predictions train), its ``fit`` (see
    :data:`~perfguide.diagnose.target.BACKEND_FORMS`)."""
    target, backend = Target.from_json(spec), backend_in_process()
    try:
        model = _loaded(target)
        x = tf.nest.map_structure(np.asarray, model_inputs(target, model)[0])
        predicted = materialize(model.predict(x, verbose=0))
    except Exception as error:  # the reader's model on another backend: any failure is a finding
        why = why_not(error, reader_files(target))
        return Held({}, OnBackend(backend, why=why))
    write_atomically(Path(outputs), _npz(predicted))
    # predict converts nothing: no folder for conversions.
    makers = {"predict": lambda: inference_call("predict", model, x, Path())}
    if trains(model) and backend not in INFERENCE_ONLY and len(predicted) == 1:
        makers |= _training(target, model, x, targets_of(model, predicted[0]))
    answer = OnBackend(backend, tuple(makers), outputs, predict_precision(model))
    return Held(_workloads(makers), answer)


def _training(target: Target, model: Any, x: Any, y: Any) -> dict[str, Callable[[], Timed]]:
    """``fit`` as the file was saved, and on JAX with ``jit_compile`` on where the file has it
    off: each on a model of its own (a model compiles its training step once)."""
    steps = epoch_steps(batch_bytes(x, y))
    makers = {"fit": lambda: training_call("fit", model, x, y, steps)}
    if backend_in_process() == "jax" and model.jit_compile is False:
        compiled = _loaded(target)
        compiled.jit_compile = True
        makers["fit-jit"] = lambda: training_call("fit", compiled, x, y, steps)
    return makers
