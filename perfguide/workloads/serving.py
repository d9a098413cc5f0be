"""Serving a Keras model on a CPU: the workloads behind "How should I serve my model on a CPU?".

Once a model is trained, it answers requests. Users report LiteRT both 29x faster and 5x slower
than Keras, ONNX Runtime faster on some models and slower on others, and ``predict`` called per
request although Keras documents it as a batch API. Every way a user would serve a model,
timed per request on three models built in code (:data:`MODELS`): a tiny MLP, the training-loop
chapter's small Conv1D model, and a MobileNetV2 at a small resolution; and on a model that
answers its request unchanged, which prices the call alone.

The ways (:data:`WAYS`): Keras's own calls (``predict``, ``model(x, training=False)``,
``predict_on_batch``); the forward pass as a ``tf.function`` with an input signature, and
compiled with XLA; the SavedModel ``model.export`` writes, loaded with ``tf.saved_model.load``;
LiteRT's interpreter on the model converted by TensorFlow's converter (all cores, one thread, and
with its weights quantized to int8); ONNX Runtime on a ``tf2onnx`` conversion; OpenVINO's
runtime on its own conversion of the SavedModel, in float32. Every way is
handed the same request, a NumPy array, as a server would have it; a way whose package is not
installed is left out, and :data:`UNAVAILABLE` says why.

The converted files are written once per model and package versions into the temporary
directory (:func:`saved_file`), so that fresh processes time the same files without converting
again.

One idea at some length: every way of serving reads the same models and converted files;
split, the converters and the ways would import each other.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.measure import environment
from perfguide.measure.timer import Timed
from perfguide.workloads import training_loop
from perfguide.workloads.base import Workload, forward_flops, watched
from perfguide.workloads.runtimes import (
    load_litert,
    load_onnxruntime,
    load_openvino,
    load_saved_model,
)

#: Classes the MLP and the MobileNet answer with; MobileNet's input side and width multiplier.
CLASSES, IMAGE_SIDE, MOBILENET_ALPHA = 10, 96, 0.35


def identity() -> Any:
    """A model that answers its request unchanged (32 features): what serving costs with no
    arithmetic at all, the call alone."""
    keras = training_loop.keras_module()
    inputs = keras.Input((32,))
    return keras.Model(inputs, keras.layers.Identity()(inputs))


def mlp() -> Any:
    """A tiny MLP, 32 features to 64 to :data:`CLASSES`."""
    keras = training_loop.keras_module()
    inputs = keras.Input((32,))
    hidden = keras.layers.Dense(64, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(CLASSES)(hidden))


def conv1d() -> Any:
    """The training-loop chapter's small model: a strided Conv1D, pooling and two Dense layers."""
    return training_loop.small_model(training_loop.keras_module(), training_loop.SMALL_DATA)


def mobilenet() -> Any:
    """MobileNetV2 (width :data:`MOBILENET_ALPHA`) on :data:`IMAGE_SIDE`-pixel images, with
    fresh weights: a model whose convolutions, not calls, take the time."""
    return training_loop.keras_module().applications.MobileNetV2(
        input_shape=(IMAGE_SIDE, IMAGE_SIDE, 3),
        alpha=MOBILENET_ALPHA,
        weights=None,
        classes=CLASSES,
        classifier_activation=None,
    )


MODELS: dict[str, Callable[[], Any]] = {
    "identity": identity,
    "mlp": mlp,
    "conv1d": conv1d,
    "mobilenet": mobilenet,
}


@functools.cache
def built(name: str) -> Any:
    """Model ``name`` with weights from a fixed seed, the same in every process."""
    training_loop.keras_module().utils.set_random_seed(0)
    return MODELS[name]()


def request_flops(name: str) -> int:
    """Floating-point operations of model ``name``'s answer to one request."""
    return forward_flops(built(name))


def requests(name: str, batch: int) -> np.ndarray:
    """A batch of ``batch`` requests for model ``name``, from a fixed seed."""
    shape = (batch, *built(name).input_shape[1:])
    return np.random.default_rng(1).standard_normal(shape, dtype=np.float32)


# -- The files each way serves -------------------------------------------------------------------


def save_keras(model: Any, path: Path) -> None:
    model.save(path)


def export_saved_model(model: Any, path: Path) -> None:
    model.export(str(path), verbose=False)


def convert_litert(saved_model: Path, path: Path, quantize: bool = False) -> None:
    """TensorFlow's LiteRT converter on the model's exported SavedModel; ``quantize``:
    dynamic-range quantization (int8 weights, float activations)."""
    converter = tf.lite.TFLiteConverter.from_saved_model(str(saved_model))
    if quantize:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    path.write_bytes(converter.convert())


def convert_onnx(model: Any, path: Path) -> None:
    """``tf2onnx``'s conversion of the model's serving function (any batch size): converting
    the function, not the Keras model, spares ``tf2onnx`` the Keras internals it reads."""
    convert_function_onnx(serving_function(model), path)


def convert_function_onnx(function: Any, path: Path) -> None:
    """``tf2onnx``'s conversion of a ``tf.function`` with an input signature, its inputs named
    as the signature names them."""
    import tf2onnx

    signature = function.input_signature
    proto, _ = tf2onnx.convert.from_function(function, input_signature=signature, opset=17)
    path.write_bytes(proto.SerializeToString())


def convert_openvino(saved_model: Path, path: Path) -> None:
    """OpenVINO's conversion of the model's exported SavedModel, saved as its IR (an ``.xml``
    graph and a ``.bin`` of weights) into the folder ``path``."""
    import openvino

    path.mkdir()
    model = openvino.convert_model(str(saved_model))
    # Weights kept in float32: save_model halves them to float16 unless told.
    openvino.save_model(model, str(path / OPENVINO_GRAPH), compress_to_fp16=False)


#: The graph file of an OpenVINO folder (its weights beside it).
OPENVINO_GRAPH = "model.xml"
#: File kind -> its name, how it is written, and the kind of file it is written from (None: the
#: Keras model itself). LiteRT's converter reads the exported SavedModel, written once for both.
WRITERS: dict[str, tuple[str, Callable[[Any, Path], None], str | None]] = {
    "keras": ("model.keras", save_keras, None),
    "saved-model": ("saved_model", export_saved_model, None),
    "litert": ("model.tflite", convert_litert, "saved-model"),
    "litert-int8": (
        "model-int8.tflite",
        functools.partial(convert_litert, quantize=True),
        "saved-model",
    ),
    "onnx": ("model.onnx", convert_onnx, None),
    "openvino": ("openvino", convert_openvino, "saved-model"),
}
#: Packages a file kind needs, by import name and distribution name.
PACKAGES = {
    "litert": {"ai_edge_litert": "ai-edge-litert"},
    "litert-int8": {"ai_edge_litert": "ai-edge-litert"},
    "onnx": {"onnxruntime": "onnxruntime", "tf2onnx": "tf2onnx"},
    "openvino": {"openvino": "openvino"},
}


@functools.cache
def _folder(name: str) -> Path:
    """Where model ``name``'s files live: named by what they depend on, the weights and every
    package that writes or reads them."""
    digest = hashlib.sha256()
    for weight in built(name).get_weights():
        digest.update(np.ascontiguousarray(weight).tobytes())
    for package in (
        "tensorflow-cpu", "keras", "ai-edge-litert", "tf2onnx", "onnxruntime", "openvino",
    ):  # fmt: skip
        try:
            digest.update(importlib.metadata.version(package).encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(b"-")
    cache = environment.shared_temporary_folder() / "perfguide-serving"
    return cache / f"{name}-{digest.hexdigest()[:16]}"


def saved_file(name: str, kind: str) -> Path:
    """Model ``name`` written as ``kind`` (see :data:`WRITERS`), converted once and kept in the
    temporary folder the run's processes share; written beside its place and moved in whole, so
    that a process never reads a half-written file."""
    filename, write, source = WRITERS[kind]
    path = _folder(name) / filename
    if path.exists():
        return path
    written_from = saved_file(name, source) if source else built(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=path.parent))
    try:
        write(written_from, scratch / filename)
        os.replace(scratch / filename, path)
    except OSError:
        if not path.exists():  # another process may have moved its copy in first
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return path


# -- The ways -----------------------------------------------------------------------------------


def serving_function(model: Any, jit_compile: bool = False) -> Any:
    """The model's forward pass in inference mode, as a ``tf.function`` with an input signature
    (any batch size, one trace): one argument an input, named as the model names it."""
    signature = [
        tf.TensorSpec((None, *x.shape[1:]), x.dtype, name=x.name.split(":")[0])
        for x in model.inputs
    ]

    @tf.function(input_signature=signature, jit_compile=jit_compile)
    def serve(*x):
        return model(x[0] if len(x) == 1 else list(x), training=False)

    return serve


#: Way -> the file kind it serves (None: the Keras model in the process).
WAYS: dict[str, str | None] = {
    "predict": None,
    "model-call": None,
    "predict-on-batch": None,
    "tf-function": None,
    "tf-function-xla": None,
    "saved-model": "saved-model",
    "litert": "litert",
    "litert-1-thread": "litert",
    "litert-int8": "litert-int8",
    "onnxruntime": "onnx",
    "openvino": "openvino",
}


def _missing(way: str) -> str | None:
    needed = PACKAGES.get(WAYS[way] or "", {})
    lacking = [dist for module, dist in needed.items() if importlib.util.find_spec(module) is None]
    if lacking:
        return f"needs {' and '.join(lacking)}: pip install 'perfguide[serving]'"
    return None


#: Ways this installation cannot serve, and why.
UNAVAILABLE: dict[str, str] = {w: why for w in WAYS if (why := _missing(w))}


def load_way(way: str, path: Path) -> Callable[[np.ndarray], Any]:
    """How ``way`` answers a batch from its file at ``path``."""
    if way == "saved-model":
        return load_saved_model(path)
    if way == "onnxruntime":
        return load_onnxruntime(path)
    if way == "openvino":
        return load_openvino(path / OPENVINO_GRAPH)
    return load_litert(path, threads=1 if way == "litert-1-thread" else None)


def converted(model: Any, way: str, folder: Path) -> Callable[[np.ndarray], Any]:
    """How ``way`` answers a batch for a Keras ``model`` of the reader's, converted into
    ``folder``; RuntimeError saying what to install where the way's package is missing."""
    if way in UNAVAILABLE:
        raise RuntimeError(UNAVAILABLE[way])
    return load_way(way, _written(model, WAYS[way], folder))


def _written(model: Any, kind: str, folder: Path) -> Path:
    """``model`` written as ``kind`` into ``folder``, with the file it is written from first."""
    filename, write, source = WRITERS[kind]
    if not (folder / filename).exists():
        write(_written(model, source, folder) if source else model, folder / filename)
    return folder / filename


@functools.cache
def answerer(name: str, way: str) -> Callable[[np.ndarray], Any]:
    """How ``way`` answers a batch of requests for model ``name``."""
    model = built(name)
    keras_ways = {
        "predict": functools.partial(model.predict, verbose=0),
        "model-call": functools.partial(model, training=False),
        "predict-on-batch": model.predict_on_batch,
    }
    if way in keras_ways:
        return keras_ways[way]
    if way.startswith("tf-function"):
        return serving_function(model, jit_compile=way.endswith("xla"))
    return load_way(way, saved_file(name, WAYS[way]))


def answer(name: str, way: str, x: np.ndarray) -> np.ndarray:
    """``way``'s answer to ``x`` as a NumPy array."""
    return np.asarray(answerer(name, way)(x))


#: How far a way's answers may lie from Keras's, as a share of Keras's largest answer: float32
#: ways add in other orders; the int8 way rounds each weight to one of 255 levels.
FLOAT_TOLERANCE, QUANTIZED_TOLERANCE = 1e-4, 0.05


def tolerance(way: str) -> float:
    return QUANTIZED_TOLERANCE if way.endswith("int8") else FLOAT_TOLERANCE


def output_difference(name: str, way: str, batch: int = 8) -> float:
    """The largest difference between ``way``'s answers and Keras's (``model(x)``) to a batch of
    requests, as a share of Keras's largest answer."""
    x = requests(name, batch)
    reference = answer(name, "model-call", x)
    return float(np.max(np.abs(answer(name, way, x) - reference)) / np.max(np.abs(reference)))


def output_differences(
    batch: int = 1, models: Sequence[str] = tuple(MODELS)
) -> dict[str, dict[str, float]]:
    """:func:`output_difference` of every way this installation serves, per model of
    ``models``, at ``batch`` (one request: the size this process then times, so XLA compiles
    once)."""
    available = [way for way in WAYS if way not in UNAVAILABLE]
    return {
        name: {way: output_difference(name, way, batch) for way in available} for name in models
    }


def _serving_call(name: str, way: str, batch: int) -> Timed:
    serve = answerer(name, way)
    return Timed(serve, (requests(name, batch),), units_per_call=batch, traced=watched(serve))


def request_latencies(model: str, way: str, count: int, batch: int = 1) -> list[float]:
    """Seconds each of ``count`` calls of ``way`` took to answer a batch, one after another as
    requests arrive, after one untimed call (a server answers its first request before it
    is counted): the tail of these is what a user waits for."""
    serve, x = answerer(model, way), requests(model, batch)
    np.asarray(serve(x))
    times = []
    for _ in range(count):
        start = time.perf_counter()
        np.asarray(serve(x))
        times.append(time.perf_counter() - start)
    return times


#: A request this many times the median's time counts as a stall.
STALL_FACTOR = 10


def latency_percentiles(model: str, way: str, count: int) -> dict[str, float]:
    """The median (p50), 99th percentile (p99) and slowest of :func:`request_latencies` of one
    request each, in seconds, and how many requests stalled (took :data:`STALL_FACTOR` times
    the median or more)."""
    latencies = np.asarray(request_latencies(model, way, count))
    p50, p99 = np.percentile(latencies, [50, 99])
    stalls = int(np.sum(latencies >= STALL_FACTOR * p50))
    return {
        "p50": float(p50),
        "p99": float(p99),
        "slowest": float(latencies.max()),
        "stalls": stalls,
    }


def _litert_ops(path: Path) -> list[dict[str, Any]]:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    return interpreter._get_ops_details()


def runtime_report(name: str) -> dict[str, Any]:
    """What the runtimes say of model ``name``: LiteRT's ops by kind, whether its interpreter
    handed the graph to a delegate (XNNPACK, on a CPU), how many ops of the int8 model take
    int8 weights (each quantizes its float input at every call), and the execution providers
    ONNX Runtime runs it with."""
    from onnxruntime import InferenceSession

    ops = collections.Counter(op["op_name"] for op in _litert_ops(saved_file(name, "litert")))
    hybrid = [
        op
        for op in _litert_ops(saved_file(name, "litert-int8"))
        if np.int8 in op["operand_types"] and np.float32 in op["result_types"]
    ]
    session = InferenceSession(str(saved_file(name, "onnx")), providers=["CPUExecutionProvider"])
    return {
        "litert_ops": {op: n for op, n in ops.most_common() if op != "DELEGATE"},
        "litert_delegated": "DELEGATE" in ops,
        "int8_weight_ops": len(hybrid),
        "onnxruntime_providers": session.get_providers(),
    }


#: Way -> the file a serving process that starts cold loads (see
#: :func:`perfguide.processes.serving_cold_start.cold_server`).
COLD_WAYS = {
    "keras": "keras",
    "saved-model": "saved-model",
    "litert": "litert",
    "onnxruntime": "onnx",
}


#: What a cold start times apart, in order.
COLD_STEPS = ("import_s", "load_s", "first_answer_s")


def _workload(name: str, question: str) -> Workload:
    return Workload(
        name=f"serving-{name}",
        question=question,
        unit="request",
        size_name="requests per batch",
        default_size=1,
        baseline="predict",
        variants=tuple(w for w in WAYS if w not in UNAVAILABLE),
        make_call=functools.partial(_serving_call, name),
        missing=UNAVAILABLE,
    )


WORKLOADS = (
    _workload("identity", "What does each way of serving cost a request with no arithmetic?"),
    _workload("mlp", "How fast can a tiny MLP answer a request, each way it can be served?"),
    _workload("conv1d", "How fast can a small Conv1D model answer, each way it can be served?"),
    _workload("mobilenet", "How fast can a MobileNet answer, each way it can be served?"),
)
