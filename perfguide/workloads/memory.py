"""Memory that grows call after call: the workloads behind "Why does my TensorFlow process keep
growing?".

Users report ``model.predict`` in a loop growing their process (tensorflow#33009, #35835,
#44711; new input shapes each call in #38598), and the answers contradict each other. Here the
serving chapter's tiny MLP is called each way a user would (:data:`WAYS`) hundreds of times
in a fresh process that records its resident set (:mod:`perfguide.measure.memory`): with one
input shape throughout (:data:`FIXED_WAYS`), and with a shape never seen before at every call
(:data:`NEW_SHAPE_WAYS`), where the fixes for retracing apply: ``reduce_retracing``, an input
signature with a ``None`` batch dimension, and padding each batch to one of a few sizes. After
the calls, the same process is asked to give memory back (:data:`RELEASES`). The allocator is
chosen per process (:func:`allocators`).

Each function here runs inside the fresh process that measures it
(:func:`perfguide.processes.growth.in_fresh_processes`) and returns plain data.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perfguide.measure.memory import (
    SAMPLES,
    Experiment,
    growth,
    resident_bytes,
    resident_series,
)
from perfguide.processes.growth import in_fresh_processes

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
#: With new shapes, where ways share a process each gets the next run of batch sizes (kernels
#: built for a shape serve every later way); apart, each starts from one row.
NEW_SHAPE_WAYS = ("buckets", "model-call", "input-signature", "reduce-retracing", "tf-function")


def calls_of(way: str, scale: float = 1) -> int:
    """How many times ``way`` is called, ``scale`` times the usual, in whole samples."""
    return max(1, round(CALLS.get(way, DEFAULT_CALLS) * scale / SAMPLES)) * SAMPLES


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


#: What a reader tries to get memory back, in the order tried, each after the one before.
RELEASES = {
    "gc.collect()": gc.collect,
    "keras.backend.clear_session()": lambda: _keras().backend.clear_session(),
    "del the functions and the model": None,  # done by resident_growth, which holds them
    "glibc's malloc_trim(0)": glibc_trim,
}


def _keras() -> Any:
    from perfguide.workloads import training_loop

    return training_loop.keras_module()


def resident_growth(
    ways: list[str], shapes: str, release: bool = False, scale: float = 1
) -> dict[str, Any]:
    """In this fresh process, each of ``ways`` in turn called :func:`calls_of` times (``scale``
    times the usual) with one shape of batch (``shapes="fixed"``) or with a batch of rows never seen
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
        found[way] = _grown(answers[way], shapes, first_rows, calls_of(way, scale))
        first_rows += calls_of(way, scale)
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
    from perfguide.workloads import serving

    held = {"after the calls": resident_bytes()}
    for what, release in RELEASES.items():
        if release is None:
            answers.clear()
            serving.built.cache_clear()
            gc.collect()
        else:
            release()
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


def experiment(
    ways: Sequence[str],
    shapes: str,
    *,
    env: Mapping[str, str] | None = None,
    release: bool = False,
    processes: int = PROCESSES,
    scale: float = 1,
    apart: bool = False,
) -> Experiment:
    """:func:`resident_growth` of ``ways`` in ``processes`` fresh processes started with
    ``env``, pooled; with ``apart``, each way in processes of its own (what one way leaves
    cached, another cannot reuse or evict), the release steps after the last way's calls."""
    if apart:
        parts = [
            experiment([way], shapes, env=env, release=release and way == ways[-1],
                       processes=processes, scale=scale)
            for way in ways
        ]  # fmt: skip
        return Experiment(
            *(
                {key: value for part in parts for key, value in getattr(part, field).items()}
                for field in ("growth", "traces", "objects_per_call")
            ),
            released=parts[-1].released,
            series={way: part.series[way] for way, part in zip(ways, parts, strict=True)},
        )
    kwargs = {"ways": list(ways), "shapes": shapes, "release": release, "scale": scale}
    runs = in_fresh_processes(f"{__name__}:resident_growth", kwargs, processes, env)
    return Experiment(
        growth={
            way: growth(way, [run[way]["series"] for run in runs], runs[0][way]["every"])
            for way in ways
        },
        traces={way: runs[0][way]["traces"] for way in ways},
        objects_per_call={
            way: statistics.median(run[way]["objects_per_call"] for run in runs) for way in ways
        },
        released=[run["released"] for run in runs if "released" in run],
        series={way: (runs[0][way]["series"], runs[0][way]["every"]) for way in ways},
    )


def experiments() -> dict[str, dict[str, Any]]:
    """The chapter's experiments, by name: the arguments of :func:`experiment` for each (one
    shape, then what gives memory back; new shapes, each way in processes of its own, the
    same; new shapes with oneDNN off;
    ``predict``, then what gives memory back, under each other allocator this machine has)."""
    specs: dict[str, dict[str, Any]] = {
        "one shape": {"ways": FIXED_WAYS, "shapes": "fixed", "release": True},
        "new shapes": {"ways": NEW_SHAPE_WAYS, "shapes": "new", "release": True, "apart": True},
        "oneDNN off": {
            "ways": ("input-signature", "reduce-retracing"),
            "shapes": "new",
            "env": {"TF_ENABLE_ONEDNN_OPTS": "0"},
        },
    }
    for name, variables in allocators()[0].items():
        if variables:  # glibc's malloc as it comes is the first experiment's
            specs[f"predict, {name}"] = {
                "ways": ("predict",),
                "shapes": "fixed",
                "env": variables,
                "release": True,
            }
    return specs
