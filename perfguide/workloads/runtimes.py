"""Loading a saved model into each serving runtime: a function that answers a batch of requests.

Each loader imports its runtime when called, never at this module's top, so a process that
serves a converted model imports only its runtime (LiteRT's interpreter and ONNX Runtime load
without TensorFlow): the serving workloads time these answers, and
:mod:`perfguide.processes.cold_start` times a process's first one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

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
