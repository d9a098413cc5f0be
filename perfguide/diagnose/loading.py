"""The reader's code loaded inside a worker process, and its inputs made (see
:mod:`perfguide.diagnose`): the function or factory a reference names, a saved Keras model, the
arguments from ``--input`` specs or the factory, and a result's tensors read back as arrays.
Errors in what the reader gave raise :class:`~perfguide.processes.fresh.BadInput`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.diagnose.reasons import one_line
from perfguide.diagnose.target import InputSpec, Target, is_file_reference
from perfguide.processes.fresh import BadInput


def load(reference: str) -> Any:
    """The object ``file.py:name`` or ``package.module:name`` names."""
    module_name, _, name = reference.rpartition(":")
    try:
        if is_file_reference(module_name):
            module = _import_file(Path(module_name))
        else:
            module = importlib.import_module(module_name)
    except Exception as error:  # the reader's module: anything it raises is theirs
        raise BadInput(f"cannot import {module_name}: {type(error).__name__}: {error}") from None
    try:
        found = getattr(module, name)
    except AttributeError:
        raise BadInput(f"{module_name} has no {name!r}") from None
    if not callable(found):
        raise BadInput(f"{reference} is not a function")
    return found


def _import_file(path: Path) -> Any:
    # Its own folder first on the path, as `python file.py` would have it, so its imports work.
    sys.path.insert(0, str(path.resolve().parent))
    spec = importlib.util.spec_from_file_location(f"_perfguide_target_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_model(path: str) -> Any:
    """The saved model, loaded afresh; seeded, so every load draws the same dropout masks."""
    import keras

    keras.utils.set_random_seed(0)
    try:
        return keras.models.load_model(path)
    except Exception as error:  # a file that is not a model, or one this Keras cannot read
        raise BadInput(f"cannot load {path}: {type(error).__name__}: {one_line(error)}") from None


def _tensor(spec: InputSpec, rng: np.random.Generator) -> Any:
    if not spec.is_tensor:
        return spec.number
    if spec.dtype == "bool":
        values = rng.random(spec.shape) < 0.5
    elif spec.dtype.startswith(("int", "uint")):
        values = rng.integers(0, 10, spec.shape)  # small: valid as class labels and indices
    else:
        values = rng.standard_normal(spec.shape).astype(np.float32)
    return tf.cast(tf.constant(values), spec.dtype)


def arguments(target: Target, seed: int = 0) -> tuple[Any, ...]:
    """The function's arguments: from the factory, or made from the specs (seeded)."""
    if target.factory is not None:
        made = reader_call(target.factory, load(target.factory))
        return tuple(made) if isinstance(made, (tuple, list)) else (made,)
    rng = np.random.default_rng(seed)
    return tuple(_tensor(spec, rng) for spec in target.inputs)


def reader_call(what: str, thunk: Callable[[], Any]) -> Any:
    """``thunk()``, whose errors are the reader's: bad input, said in one line as ``what``."""
    try:
        return thunk()
    except Exception as error:  # the reader's code: what it raises is bad input here
        raise BadInput(f"{what} raised {type(error).__name__}: {one_line(error)}") from None


def materialize(result: Any) -> list[np.ndarray]:
    """Every tensor of ``result`` (ragged and sparse ones as their parts) as a NumPy array:
    the work is then surely done."""
    return [np.asarray(leaf) for leaf in tf.nest.flatten(result, expand_composites=True)]
