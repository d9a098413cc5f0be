"""The reader's code loaded inside a worker process, and its inputs made (see
:mod:`perfguide.diagnose`): the function or factory a reference names, a saved Keras model, the
arguments from ``--input`` specs or the factory, and a result's tensors read back as arrays.
Errors in what the reader gave raise :class:`~perfguide.processes.fresh.BadInput`.
"""

from __future__ import annotations

import importlib
import importlib.util
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.diagnose import examples
from perfguide.diagnose.target import InputSpec, Target, is_file_reference, kind_of
from perfguide.diagnose.worker.reasons import one_line
from perfguide.processes.fresh import BadInput


def load(reference: str) -> Any:
    """The object ``file.py:name`` or ``package.module:name`` names, or the function pickled
    in ``function.pkl``."""
    if kind_of(reference) == "pickled":
        return _unpickled(Path(reference))
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


def _unpickled(path: Path) -> Any:
    """The function :func:`perfguide.diagnose` pickled (with cloudpickle) into ``path``."""
    try:
        with path.open("rb") as file:
            return pickle.load(file)
    except Exception as error:  # what it refers to is missing here: a module, say
        raise BadInput(
            f"cannot load the function sent from your session ({type(error).__name__}: "
            f"{one_line(error)}): move it and what it uses into a module, and pass module:name"
        ) from None


def _import_file(path: Path) -> Any:
    # Its own folder first on the path, as `python file.py` would have it, so its imports work.
    sys.path.insert(0, str(path.resolve().parent))
    spec = importlib.util.spec_from_file_location(f"_perfguide_target_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_model(path: str, compile: bool = True) -> Any:
    """The saved Keras model, loaded afresh (``compile``: with its optimizer and loss); seeded,
    so every load draws the same dropout masks."""
    import keras

    keras.utils.set_random_seed(0)
    try:
        return keras.models.load_model(path, compile=compile)
    except Exception as error:  # a file that is not a model, or one this Keras cannot read
        raise BadInput(f"cannot load {path}: {type(error).__name__}: {one_line(error)}") from None


def load_inference_model(path: str) -> tuple[Any, str | None]:
    """The saved Keras model, compiled where its optimizer and loss load; else without them
    (a legacy ``.h5`` file may name a loss Keras 3 no longer reads), with why."""
    try:
        return load_model(path), None
    except BadInput as error:
        return load_model(path, compile=False), str(error)


#: Letters the words of a ``string`` input are drawn from, and how many words a string has.
_LETTERS, _WORDS = np.array(list("abcdefghijklmnopqrstuvwxyz")), (1, 12)


def _tensor(spec: InputSpec, rng: np.random.Generator) -> Any:
    if not spec.is_tensor:
        return spec.number
    if spec.lengths is None:
        return _values(spec.dtype, spec.shape, rng)
    rows, *inner = spec.shape
    lengths = rng.integers(spec.lengths[0], spec.lengths[1] + 1, rows)
    flat = _values(spec.dtype, (int(lengths.sum()), *inner), rng)
    return tf.RaggedTensor.from_row_lengths(flat, lengths)


def _values(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """A tensor of ``dtype`` and ``shape`` of seeded random values: text of a few words for
    strings, small whole numbers (valid as labels and indices), else normal floats."""
    if dtype == "string":
        count = int(np.prod(shape))
        words = rng.integers(*_WORDS, count)
        text = [" ".join("".join(rng.choice(_LETTERS, rng.integers(2, 10))) for _ in range(n))
                for n in words]  # fmt: skip
        return tf.reshape(tf.constant(text, tf.string), shape)
    if dtype == "bool":
        values = rng.random(shape) < 0.5
    elif dtype.startswith(("int", "uint")):
        values = rng.integers(0, 10, shape)
    else:
        values = rng.standard_normal(shape).astype(np.float32)
    return tf.cast(tf.constant(values), dtype)


def restored(value: Any) -> Any:
    """An example argument as the reader passed it, from its parts
    (:func:`perfguide.diagnose.examples.portable`)."""
    if isinstance(value, examples.Dense):
        tensor = tf.constant(value.values, dtype=value.dtype)
        return tf.Variable(tensor) if value.variable else tensor
    if isinstance(value, examples.Ragged):
        return tf.RaggedTensor.from_nested_row_splits(restored(value.flat), value.row_splits)
    if isinstance(value, examples.Sparse):
        return tf.SparseTensor(value.indices, restored(value.values), value.dense_shape)
    if isinstance(value, dict):
        return {key: restored(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return examples.same_kind(value, [restored(item) for item in value])
    return value


def arguments(target: Target, seed: int = 0) -> tuple[Any, ...]:
    """The function's arguments: the reader's own, from the factory, or made from the specs
    (seeded)."""
    if target.examples is not None:
        return tuple(restored(arg) for arg in examples.read(target.examples))
    if target.factory is not None:
        made = reader_call(target.factory, load(target.factory))
        return tuple(made) if isinstance(made, (tuple, list)) else (made,)
    rng = np.random.default_rng(seed)
    return tuple(_tensor(spec, rng) for spec in target.inputs)


def spec_text(dtype: str, shape: Any) -> str:
    """A model input as an ``--input`` spec would say it, ``?`` for a size it leaves open.

    >>> spec_text("float32", (None, 16))
    'float32[?,16]'
    """
    return f"{dtype}[{','.join('?' if d is None or d < 0 else str(d) for d in shape)}]"


def named_batch(target: Target, expected: dict[str, str]) -> Any:
    """The batch for a model whose inputs are ``expected`` (by name, in order, each as its
    :func:`spec_text`): one input's tensor, or several by name, the names the specs give or,
    where they give none, in order."""
    args = arguments(target)
    names = [spec.name for spec in target.inputs]
    if target.examples is not None and len(args) == 1 and isinstance(args[0], dict):
        names, args = [str(name) for name in args[0]], tuple(args[0].values())
    takes = ", ".join(f"{name}={spec}" for name, spec in expected.items())
    if len(args) != len(expected):
        raise BadInput(
            f"{target.name} takes {len(expected)} input{'s' * (len(expected) > 1)} ({takes}), "
            f"not {len(args)}: give each as --input name=dtype[shape]"
        )
    if not any(names):
        return args[0] if len(args) == 1 else dict(zip(expected, args, strict=True))
    if unknown := [name for name in names if name not in expected]:
        raise BadInput(f"{target.name} has no input {unknown[0]!r}; it takes {takes}")
    by_name = dict(zip(names, args, strict=True))
    return by_name[names[0]] if len(args) == 1 else {name: by_name[name] for name in expected}


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
