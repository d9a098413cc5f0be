"""A serving process's first request: the runtime's import, the model's load and the first
answer, each timed apart, in a fresh process that has imported nothing else.

A process that serves a converted model needs only its runtime: LiteRT's interpreter and ONNX
Runtime load without TensorFlow, whose import alone takes seconds. So this module imports no
runtime at its top, and :data:`LOADERS` import theirs when called: the serving workload times
the same loaders' answers (:mod:`perfguide.workloads.serving`), and :func:`cold_start` runs one
of them in a process of its own (``python -m perfguide.processes.cold_start WAY MODEL REQUEST``,
which prints the three times as JSON).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psutil

Answer = Callable[[np.ndarray], Any]


def load_keras(path: Path) -> Answer:
    """The ``.keras`` file, answered with ``model.predict_on_batch``."""
    import keras

    return keras.saving.load_model(path, compile=False).predict_on_batch


def load_saved_model(path: Path) -> Answer:
    """The SavedModel ``model.export`` wrote, answered by its serving endpoint."""
    import tensorflow as tf

    loaded = tf.saved_model.load(str(path))  # held by the answer: its variables live with it
    return lambda x: loaded.serve(x)


def load_litert(path: Path, threads: int | None = None) -> Answer:
    """LiteRT's interpreter on the ``.tflite`` file (XNNPACK, its default delegate, on), using
    ``threads`` threads (None: as many as the machine's cores); an answer sets the input,
    invokes and copies the output out, resizing the input first when a batch size is new."""
    import os

    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), num_threads=threads or os.cpu_count())
    (request,), (response,) = interpreter.get_input_details(), interpreter.get_output_details()
    shape: list[tuple[int, ...]] = [()]

    def answer(x: np.ndarray) -> np.ndarray:
        if x.shape != shape[0]:
            interpreter.resize_tensor_input(request["index"], x.shape)
            interpreter.allocate_tensors()
            shape[0] = x.shape
        interpreter.set_tensor(request["index"], x)
        interpreter.invoke()
        return interpreter.get_tensor(response["index"])

    return answer


def load_onnxruntime(path: Path) -> Answer:
    """ONNX Runtime's CPU session on the ``.onnx`` file."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return lambda x: session.run(None, {name: x})[0]


#: Way -> how its saved file becomes a function that answers a batch of requests.
LOADERS: dict[str, Callable[[Path], Answer]] = {
    "keras": load_keras,
    "saved-model": load_saved_model,
    "litert": load_litert,
    "onnxruntime": load_onnxruntime,
}
#: The module each loader imports first: what a serving process must import before anything.
RUNTIMES = {
    "keras": "keras",
    "saved-model": "tensorflow",
    "litert": "ai_edge_litert.interpreter",
    "onnxruntime": "onnxruntime",
}


def cold_start(way: str, model: Path, request: np.ndarray) -> dict[str, Any]:
    """Seconds to import ``way``'s runtime, load ``model`` and answer ``request`` once, in this
    process (which must not have imported the runtime yet to measure its import), the bytes
    the process then holds in memory (its resident set), and whether TensorFlow was imported."""
    start = time.perf_counter()
    __import__(RUNTIMES[way])
    imported = time.perf_counter()
    answer = LOADERS[way](model)
    loaded = time.perf_counter()
    np.asarray(answer(request))
    answered = time.perf_counter()
    return {
        "import_s": imported - start,
        "load_s": loaded - imported,
        "first_answer_s": answered - loaded,
        "memory_bytes": psutil.Process().memory_info().rss,
        "imported_tensorflow": "tensorflow" in sys.modules,
    }


def main(argv: list[str]) -> None:
    way, model, request = argv
    print(json.dumps(cold_start(way, Path(model), np.load(request))))


if __name__ == "__main__":
    main(sys.argv[1:])
