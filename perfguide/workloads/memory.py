"""Memory that grows call after call: the workloads behind "Why does my TensorFlow process keep
growing?".

Users report ``model.predict`` in a loop growing their process (tensorflow#33009, #35835,
#44711; new input shapes each call in #38598), and the answers contradict each other. Here the
serving chapter's tiny MLP is called each way a user would (:data:`WAYS`) hundreds of times
in a fresh process that records its resident set (:mod:`perfguide.measure.memory`): with one
input shape throughout (:data:`FIXED_WAYS`), and with a shape never seen before at every call
(:data:`NEW_SHAPE_GROUPS`), where the fixes for retracing apply: ``reduce_retracing``, an input
signature with a ``None`` batch dimension, and padding each batch to one of a few sizes. After
the calls, the same process is asked to give memory back (:data:`RELEASES`). The allocator is
chosen per process (:func:`allocators`). Memory also runs out in one step: a training step's
peak, against batch size and precision policy (:func:`training_peaks`).

:func:`resident_growth` and :func:`training_peaks` run inside the fresh process that measures
them and return plain data; :func:`perfguide.processes.memory_processes.measure` queues all of the
chapter's processes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from perfguide.measure.memory import (
    SAMPLES,
    TENSOR_COUNTS,
    resident_bytes,
    resident_series,
    step_peak,
    tensor_bytes,
)

#: The model called: the serving chapter's tiny MLP (32 features to 64 to 10), whose calls cost
#: little, so that what grows is the calling, not the arithmetic.
MODEL = "mlp"
#: Requests in each batch when the shape stays the same.
FIXED_ROWS = 8
#: Calls of each way; ``predict`` costs tens of milliseconds a call here and a retracing
#: ``tf.function`` more, so they are called less.
DEFAULT_CALLS = 600
CALLS = {"predict": 60, "tf-function": 100}
#: The ways, as a reader writes them.
WAYS = {
    "predict": "model.predict(x)",
    "model-call": "model(x, training=False)",
    "predict-on-batch": "model.predict_on_batch(x)",
    "tf-function": "tf.function(model_call)",
    "reduce-retracing": "tf.function(model_call, reduce_retracing=True)",
    "input-signature": "tf.function(model_call, input_signature=[TensorSpec((None, 32))])",
    "buckets": "tf.function(model_call) on batches padded to a power of two",
}
FIXED_WAYS = ("predict", "model-call", "predict-on-batch", "input-signature")
#: With new shapes, ways that share a process each get the next run of batch sizes, in groups
#: that share processes: a way whose kernels (built for each shape) a later way could reuse, or
#: whose hundreds of kernels fill oneDNN's cache, has processes of its own; the padded batches
#: need a dozen kernels, so the plain tf.function follows them.
NEW_SHAPE_GROUPS = (
    ("model-call",),
    ("input-signature",),
    ("reduce-retracing",),
    ("buckets", "tf-function"),
)


def calls_of(way: str) -> int:
    """How many times ``way`` is called, in whole samples."""
    return max(1, round(CALLS.get(way, DEFAULT_CALLS) / SAMPLES)) * SAMPLES


def batch(rows: int) -> np.ndarray:
    """A batch of ``rows`` requests for the MLP, from a fixed seed."""
    return np.random.default_rng(rows).standard_normal((rows, 32), dtype=np.float32)


def bucket(rows: int) -> int:
    """The bucket a batch of ``rows`` is padded to: the next power of two.

    >>> [bucket(n) for n in (1, 2, 3, 900, 1024, 1025)]
    [1, 2, 4, 1024, 1024, 2048]
    """
    return 1 << (rows - 1).bit_length()


def caller(way: str, model: Any) -> Callable[[np.ndarray], Any]:
    """How ``way`` answers a batch with ``model``."""
    import tensorflow as tf

    from perfguide.workloads import serving

    def model_call(x):
        return model(x, training=False)

    if way == "predict":
        return functools.partial(model.predict, verbose=0)
    if way == "model-call":
        return model_call
    if way == "predict-on-batch":
        return model.predict_on_batch
    if way == "input-signature":
        return serving.serving_function(model)
    if way == "buckets":
        padded = tf.function(model_call)

        def answer(x: np.ndarray) -> Any:
            rows = len(x)
            return padded(np.pad(x, ((0, bucket(rows) - rows), (0, 0))))[:rows]

        return answer
    return tf.function(model_call, reduce_retracing=way == "reduce-retracing")


def glibc_trim() -> None:
    """Ask glibc's malloc to hand the free memory of its arenas back to the system
    (``malloc_trim(0)``), where the C library is glibc."""
    trim = getattr(ctypes.CDLL(ctypes.util.find_library("c")), "malloc_trim", None)
    if trim is not None:
        trim(0)


def _clear_session(answers: dict[str, Any]) -> None:
    from perfguide.workloads import training_loop

    training_loop.keras_module().backend.clear_session()


def _forget(answers: dict[str, Any]) -> None:
    """Drop the functions that answer and, through them, the model (nothing else holds it)."""
    from perfguide.workloads import serving

    answers.clear()
    serving.built.cache_clear()
    gc.collect()


#: What a reader tries to get memory back, in the order tried, each after the one before; each
#: is given the functions that answer (the way a reader holds the model).
RELEASES: dict[str, Callable[[dict[str, Any]], None]] = {
    "gc.collect()": lambda answers: gc.collect(),
    "keras.backend.clear_session()": _clear_session,
    "del the functions and the model": _forget,
    "glibc's malloc_trim(0)": lambda answers: glibc_trim(),
}


def resident_growth(ways: list[str], shapes: str, release: bool = False) -> dict[str, Any]:
    """In this fresh process, each of ``ways`` in turn called :func:`calls_of` times with one
    shape of batch (``shapes="fixed"``) or with a batch of rows never seen
    before at every call (``"new"``: each way its own run of sizes), the resident set sampled
    :data:`SAMPLES` times; with ``release``, then the resident set after each of
    :data:`RELEASES`."""
    from perfguide.workloads import serving

    before = resident_bytes()
    model = serving.built(MODEL)
    answers = {way: caller(way, model) for way in ways}
    del model  # the answers hold it: what deleting them frees, nothing else keeps
    found, first_rows = {}, 1
    for way in ways:
        found[way] = _grown(answers[way], shapes, first_rows, calls_of(way))
        first_rows += calls_of(way)
    if release:
        found["released"] = {"before the model": before} | _released(answers)
    return found


def _grown(answer: Callable[[np.ndarray], Any], shapes: str, first_rows: int, calls: int) -> dict:
    """The resident series of ``calls`` answers, sampled every ``calls // SAMPLES``; how many
    times the answer traced (None where it is no ``tf.function``); and how many more Python
    objects the garbage collector tracks after the calls than before, per call (what stays in
    use, which no allocator can give back)."""

    def step(i: int) -> None:
        np.asarray(answer(batch(FIXED_ROWS if shapes == "fixed" else first_rows + i)))

    objects = len(gc.get_objects())
    series = resident_series(step, calls, calls // SAMPLES)
    traced = getattr(answer, "experimental_get_tracing_count", None)
    return {
        "series": series,
        "every": calls // SAMPLES,
        "traces": traced() if traced else None,
        "objects_per_call": (len(gc.get_objects()) - objects) / calls,
    }


def _released(answers: dict[str, Any]) -> dict[str, int]:
    """The resident set now, and after each of :data:`RELEASES` in turn (``answers`` hold the
    functions and, through them, the model)."""
    held = {"after the calls": resident_bytes()}
    for what, release in RELEASES.items():
        release(answers)
        held[what] = resident_bytes()
    return held


def _library(name: str) -> Path | None:
    """The shared library file ``name`` (e.g. ``libjemalloc.so.2``) where Debian puts it."""
    for folder in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64"):
        if (path := Path(folder) / name).is_file():
            return path
    return None


#: Allocators a process can start with: variables, and the library ``LD_PRELOAD`` loads with
#: the Debian package that has it.
ALLOCATORS: dict[str, tuple[dict[str, str], tuple[str, str] | None]] = {
    "glibc malloc": ({}, None),
    "glibc, MALLOC_ARENA_MAX=2": ({"MALLOC_ARENA_MAX": "2"}, None),
    "jemalloc": ({}, ("libjemalloc.so.2", "libjemalloc2")),
    "tcmalloc": ({}, ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4")),
}


def allocators() -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The environment each allocator's processes start with, and why the others cannot."""
    usable, missing = {}, {}
    for name, (variables, preload) in ALLOCATORS.items():
        if preload is None:
            usable[name] = variables
        elif path := _library(preload[0]):
            usable[name] = variables | {"LD_PRELOAD": str(path)}
        else:
            missing[name] = f"{preload[0]} is not installed (Debian: apt-get install {preload[1]})"
    return usable, missing


#: Processes each experiment runs in, unless told otherwise.
PROCESSES = 3


def onednn_variables(on: bool) -> dict[str, str]:
    """The variables a process starts with to run oneDNN's kernels (``on``) or TensorFlow's own:
    none where that is what this process's TensorFlow runs (its CPU's default, or the variable
    set here, which fresh processes inherit). Processes that start with the same variables
    are forked from the same servers, and each server costs a fresh import of TensorFlow."""
    from perfguide.measure import environment

    if environment.onednn_enabled() == on:
        return {}
    return {"TF_ENABLE_ONEDNN_OPTS": "1" if on else "0"}


def experiments() -> dict[str, dict[str, Any]]:
    """The chapter's experiments, by name, as :func:`measure` takes them (the longest first):
    one shape, then what gives memory back; ``predict``, then the same, under each other
    allocator this machine has; new shapes, in :data:`NEW_SHAPE_GROUPS` (what one way leaves
    cached, another cannot reuse or evict), the same steps after the last, with oneDNN on; new
    shapes with oneDNN off (each side set with :func:`onednn_variables`)."""
    specs: dict[str, dict[str, Any]] = {
        "one shape": {"groups": (FIXED_WAYS,), "shapes": "fixed", "release": True},
    }
    for name, variables in allocators()[0].items():
        if variables:  # glibc's malloc as it comes is the first experiment's
            specs[f"predict, {name}"] = {
                "groups": (("predict",),),
                "shapes": "fixed",
                "env": variables,
                "release": True,
            }
    # oneDNN's kernel cache is what grows with shapes; TensorFlow turns oneDNN on by default only
    # on some CPUs, so both sides of that comparison make sure of which they run.
    specs["new shapes"] = {
        "groups": NEW_SHAPE_GROUPS,
        "shapes": "new",
        "env": onednn_variables(on=True),
        "release": True,
    }
    specs["oneDNN off"] = {
        "groups": (("input-signature", "reduce-retracing"),),
        "shapes": "new",
        "env": onednn_variables(on=False),
    }
    return specs


#: The mixed-precision chapter's image classifier takes a training step at each of these batch
#: sizes, smallest first, under each policy, in fresh processes of its own.
TRAINING_BATCHES = (32, 64, 128, 256)
TRAINING_POLICIES = ("float32", "mixed_bfloat16")


def training_peaks(policy: str) -> dict[str, Any]:
    """In this fresh process, :func:`~perfguide.measure.memory.step_peak` of one training step
    of the classifier under ``policy`` at each of :data:`TRAINING_BATCHES` (each after a step
    that traced it): its tensors' peak, and the process's peak resident set beyond what it
    held before its first step; what a forward pass keeps for the backward one, in all and
    (per example, at the largest batch) by layer, beside each layer's output from its shape.

    It sets :data:`~perfguide.measure.memory.TENSOR_COUNTS` itself, before its first op:
    TensorFlow reads them when its runtime starts, not at import, so a process forked after the
    import, from a server the growth experiments share, counts its tensors as one started with
    them would."""
    os.environ.update(TENSOR_COUNTS)
    from perfguide.workloads import mixed_precision

    model = mixed_precision.compiled_model(policy)
    start = resident_bytes()
    found: dict[str, Any] = {"tensors": [], "resident": [], "kept": [], "before": start}
    for rows in TRAINING_BATCHES:
        images, labels = mixed_precision.make_data(rows)
        model.train_on_batch(images, labels)
        tensors, resident = step_peak(functools.partial(model.train_on_batch, images, labels))
        found["tensors"].append(tensors)
        found["resident"].append(resident - start)
        kept = _kept_by_layer(model, images)
        found["kept"].append(sum(kept.values()))
    found["layers"] = {
        name: {"output": output, "kept": kept[name] / TRAINING_BATCHES[-1]}
        for name, output in layer_outputs(model).items()
    }
    found["activations"] = sum(layer["output"] for layer in found["layers"].values())
    return found


def layer_outputs(model: Any) -> dict[str, int]:
    """Each layer's output for one example, in bytes, from its shape and the type it computes
    in (what :func:`perfguide.workloads.mixed_precision.memory_bytes` sums)."""
    import tensorflow as tf

    return {
        f"{i} {layer.__class__.__name__}": int(np.prod(layer.output.shape[1:]))
        * tf.as_dtype(layer.compute_dtype).size
        for i, layer in enumerate(model.layers[1:], 1)
    }


def _kept_by_layer(model: Any, images: np.ndarray) -> dict[str, int]:
    """The bytes of tensors a forward pass under a ``GradientTape`` keeps for the backward pass,
    layer by layer (each layer's with its output), by TensorFlow's allocator's count."""
    import tensorflow as tf

    kept, held = {}, tensor_bytes()
    with tf.GradientTape() as tape:
        x = images
        for name, layer in zip(layer_outputs(model), model.layers[1:], strict=True):
            x = layer(x, training=True)
            now = tensor_bytes()
            kept[name], held = now - held, now
    del tape, x
    return kept
