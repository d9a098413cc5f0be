"""Loading a saved model into each serving runtime: a function that answers a batch of requests.

Each loader imports its runtime when called, never at this module's top, so a process that
serves a converted model imports only its runtime (LiteRT's interpreter and ONNX Runtime load
without TensorFlow): the serving workloads time these answers, and
:mod:`perfguide.processes.serving_cold_start` times a process's first one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

#: A batch: one input's array, or a model's several inputs' arrays by name.
Batch = np.ndarray | dict[str, np.ndarray]
Answer = Callable[[Batch], Any]


def load_keras(path: Path) -> Answer:
    """The ``.keras`` file, answered with ``model.predict_on_batch``."""
    import keras

    return keras.saving.load_model(path, compile=False).predict_on_batch


def load_saved_model(path: Path) -> Answer:
    """The SavedModel ``model.export`` wrote, answered by its serving endpoint (several inputs:
    by its serving signature, which takes them by name)."""
    import tensorflow as tf

    loaded = tf.saved_model.load(str(path))  # held by the answer: its variables live with it
    signature = loaded.signatures["serving_default"]
    return lambda x: signature(**x) if isinstance(x, dict) else loaded.serve(x)


def load_litert(path: Path, threads: int | None = None, xnnpack: bool = True) -> Answer:
    """LiteRT's interpreter on the ``.tflite`` file, using ``threads`` threads (None: as many as
    the machine's cores), with XNNPACK (its default delegate) on or off; an answer sets the
    inputs, invokes and copies the outputs out, resizing an input first when its shape is
    new."""
    import os

    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    resolver = OpResolverType.AUTO if xnnpack else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    interpreter = Interpreter(
        model_path=str(path),
        num_threads=threads or os.cpu_count(),
        experimental_op_resolver_type=resolver,
    )
    inputs = litert_inputs(interpreter)
    outputs = [detail["index"] for detail in interpreter.get_output_details()]
    if len(inputs) == 1 and len(outputs) == 1:
        return _one_tensor_answer(interpreter, *inputs.values(), *outputs)
    return _named_answer(interpreter, inputs, outputs)


def _one_tensor_answer(interpreter: Any, request: int, response: int) -> Answer:
    """How an interpreter of one input and one output answers: kept to a few Python steps, as
    it is timed at a few microseconds a call."""
    shape: list[tuple[int, ...]] = [()]

    def answer(x: Batch) -> np.ndarray:
        if isinstance(x, dict):  # the one input, by its name
            (x,) = x.values()
        if x.shape != shape[0]:
            interpreter.resize_tensor_input(request, x.shape)
            interpreter.allocate_tensors()
            shape[0] = x.shape
        interpreter.set_tensor(request, x)
        interpreter.invoke()
        return interpreter.get_tensor(response)

    return answer


def _named_answer(interpreter: Any, inputs: dict[str, int], outputs: list[int]) -> Answer:
    """How an interpreter of several inputs (``inputs``: tensor by name) or outputs answers."""
    shapes: dict[int, tuple[int, ...]] = {}

    def answer(x: Batch) -> list[np.ndarray]:
        named = x if isinstance(x, dict) else {next(iter(inputs)): x}
        new = {
            inputs[name]: a.shape
            for name, a in named.items()
            if shapes.get(inputs[name]) != a.shape
        }
        for index, shape in new.items():
            interpreter.resize_tensor_input(index, shape)
        if new:
            interpreter.allocate_tensors()
            shapes.update(new)
        for name, a in named.items():
            interpreter.set_tensor(inputs[name], a)
        interpreter.invoke()
        answers = [interpreter.get_tensor(index) for index in outputs]
        return answers[0] if len(answers) == 1 else answers

    return answer


def litert_inputs(interpreter: Any) -> dict[str, int]:
    """A LiteRT interpreter's input tensors by name, in order: its serving signature's names
    (a SavedModel's, as its signature takes them), else the tensors' own."""
    signatures = interpreter.get_signature_list()
    if signatures:
        key = next(iter(signatures))
        details = interpreter.get_signature_runner(key).get_input_details()
        return {name: details[name]["index"] for name in signatures[key]["inputs"]}
    return {detail["name"]: detail["index"] for detail in interpreter.get_input_details()}


def load_onnxruntime(path: Path) -> Answer:
    """ONNX Runtime's CPU session on the ``.onnx`` file (several inputs: by name, each named as
    the function it was converted from names it)."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [request.name for request in session.get_inputs()]
    named = {name.removesuffix(":0"): name for name in names}
    outputs = len(session.get_outputs())

    def answer(x: Batch) -> Any:
        feed = {named[k]: a for k, a in x.items()} if isinstance(x, dict) else {names[0]: x}
        answers = session.run(None, feed)
        return answers[0] if outputs == 1 else answers

    return answer


def load_openvino(path: Path) -> Answer:
    """OpenVINO's CPU runtime on its IR graph at ``path``, compiled to compute in float32 (its
    default on a CPU with bfloat16 units is bfloat16, which answers otherwise than Keras);
    several inputs by name, as the SavedModel it was converted from names them."""
    import openvino

    compiled = openvino.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    named = {name.removesuffix(":0"): port for port in compiled.inputs for name in port.names}
    outputs = len(compiled.outputs)

    def answer(x: Batch) -> Any:
        feed = {named[k]: a for k, a in x.items()} if isinstance(x, dict) else [x]
        answers = list(request.infer(feed).values())
        return answers[0] if outputs == 1 else answers

    return answer


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
