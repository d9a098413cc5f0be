"""The forms of a SavedModel directory and of a LiteRT file as timed calls (see
:mod:`perfguide.diagnose`): a SavedModel's serving signature as TensorFlow Serving calls it, the
same compiled with XLA, and converted for LiteRT, ONNX Runtime and OpenVINO; a LiteRT file in its
interpreter with every core, with one, and without XNNPACK. Both take their inputs by name.
:mod:`perfguide.diagnose.worker.forms` checks and registers them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.diagnose.target import InputSpec, Target
from perfguide.diagnose.worker.loading import named_batch, spec_text
from perfguide.diagnose.worker.reasons import one_line
from perfguide.measure.timer import Timed
from perfguide.processes.fresh import BadInput
from perfguide.workloads import runtimes, serving

#: A SavedModel's forms, the signature as called first; a LiteRT file's, its interpreter as it
#: starts by default (every core, XNNPACK on) first.
SAVED_MODEL_FORMS = ("signature", "jit-compile", "litert", "onnxruntime", "openvino")
LITERT_FORMS = ("litert", "litert-1-thread", "litert-no-xnnpack")
#: The signature TensorFlow Serving calls unless told another.
SERVING_SIGNATURE = "serving_default"


@dataclasses.dataclass(frozen=True)
class Signature:
    """A SavedModel's serving signature, with the loaded object that holds its variables, and
    its inputs by name, in order."""

    loaded: Any
    function: Any
    inputs: dict[str, tf.TensorSpec]

    def positional(self, jit_compile: bool = False) -> Any:
        """The signature as a ``tf.function`` of one argument an input, in order, each named
        as the signature names it."""
        names = list(self.inputs)
        specs = [tf.TensorSpec(s.shape, s.dtype, name=n) for n, s in self.inputs.items()]

        @tf.function(input_signature=specs, jit_compile=jit_compile)
        def call(*x):
            return self.function(**dict(zip(names, x, strict=True)))

        return call


def signature(path: str) -> Signature:
    """The serving signature of the SavedModel at ``path`` (``serving_default``, else its only
    one); :class:`BadInput` for one that cannot be loaded, has none, or takes no input."""
    try:
        loaded = tf.saved_model.load(path)
    except Exception as error:  # not a SavedModel this TensorFlow reads
        raise BadInput(f"cannot load {path}: {type(error).__name__}: {one_line(error)}") from None
    found = dict(loaded.signatures)
    if SERVING_SIGNATURE not in found and len(found) != 1:
        have = f"signatures {', '.join(found)} but no {SERVING_SIGNATURE}" if found else "none"
        raise BadInput(f"{path} has no serving signature to call ({have})")
    function = found.get(SERVING_SIGNATURE) or next(iter(found.values()))
    inputs = dict(sorted(function.structured_input_signature[1].items()))  # by name: stable
    if not inputs:
        raise BadInput(f"{path}'s serving signature takes no input: nothing to call it with")
    return Signature(loaded, function, inputs)


def signature_batch(target: Target, signed: Signature) -> dict[str, np.ndarray]:
    """The batch the signature is called with, by input name."""
    dtypes = {name: spec.dtype.name for name, spec in signed.inputs.items()}
    expected = {n: spec_text(dtypes[n], s.shape.as_list()) for n, s in signed.inputs.items()}
    return _checked_dtypes(named_batch(target, expected), dtypes)


def _checked_dtypes(batch: Any, dtypes: dict[str, str]) -> dict[str, np.ndarray]:
    """A batch (one input's array, or several by name) as arrays by name, each of the dtype
    the model takes there (``dtypes``, by input name); :class:`BadInput` for one that is not."""
    named = batch if isinstance(batch, dict) else {next(iter(dtypes)): batch}
    arrays = {name: np.asarray(value) for name, value in named.items()}
    for name, array in arrays.items():
        if array.dtype.name != dtypes[name]:
            raise BadInput(f"input {name} is {dtypes[name]} in the model, not {array.dtype}")
    return arrays


def saved_model_call(form: str, signed: Signature, path: str, x: dict, folder: Path) -> Timed:
    """A SavedModel form on the batch ``x``; the runtimes' forms convert it into ``folder``
    (once: later calls read what is there)."""
    if form == "signature":
        return Timed(functools.partial(signed.function, **x))
    if form == "jit-compile":
        compiled = signed.positional(jit_compile=True)
        return Timed(compiled, tuple(x.values()), traced=(compiled,))
    if form in serving.UNAVAILABLE:
        raise RuntimeError(serving.UNAVAILABLE[form])
    name, write = _conversion(form, signed, Path(path))
    return Timed(serving.load_way(form, _once(folder / name, write)), (x,))


def _conversion(form: str, signed: Signature, path: Path) -> tuple[str, Callable[[Path], None]]:
    """The file (or folder) a runtime's form is converted into, and how it is written."""
    if form == "litert":
        return "model.tflite", functools.partial(serving.convert_litert, path)
    if form == "openvino":
        return "openvino", functools.partial(serving.convert_openvino, path)
    return "model.onnx", functools.partial(serving.convert_function_onnx, signed.positional())


def _once(path: Path, write: Callable[[Path], None]) -> Path:
    """``path``, written by ``write(path)`` unless an earlier call wrote it."""
    if not path.exists():
        write(path)
    return path


def litert_specs(path: str) -> dict[str, InputSpec]:
    """A LiteRT file's inputs by name, in order, each with the dtype and shape it holds."""
    from ai_edge_litert.interpreter import Interpreter

    try:
        interpreter = Interpreter(model_path=path)
    except Exception as error:  # not a model LiteRT reads
        raise BadInput(f"cannot load {path}: {type(error).__name__}: {one_line(error)}") from None
    details = {d["index"]: d for d in interpreter.get_input_details()}
    return {
        name: InputSpec(np.dtype(details[index]["dtype"]).name, tuple(details[index]["shape"]))
        for name, index in runtimes.litert_inputs(interpreter).items()
    }


def litert_batch(target: Target) -> tuple[Target, dict[str, np.ndarray]]:
    """The batch a LiteRT file is called with, by input name: the reader's specs, or where they
    give none, of the shapes the file holds (the target then names them)."""
    specs = litert_specs(target.function)
    if not target.inputs and target.factory is None and target.examples is None:
        named = [dataclasses.replace(spec, name=name) for name, spec in specs.items()]
        target = dataclasses.replace(target, inputs=tuple(named))
    expected = {name: spec.describe() for name, spec in specs.items()}
    dtypes = {name: spec.dtype for name, spec in specs.items()}
    return target, _checked_dtypes(named_batch(target, expected), dtypes)


def litert_call(form: str, path: str, x: dict[str, np.ndarray]) -> Timed:
    """A LiteRT form of the file at ``path`` on the batch ``x``."""
    threads = 1 if form == "litert-1-thread" else None
    return Timed(runtimes.load_litert(Path(path), threads, form != "litert-no-xnnpack"), (x,))
