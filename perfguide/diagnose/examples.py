"""The reader's own example arguments, sent to the worker processes as they are: what
``perfguide.diagnose(function, *example_args)`` passes on (see :mod:`perfguide.diagnose.api`).

A ``tf.function`` takes tensors of any dtype (strings too), ragged and sparse tensors, NumPy
arrays, Python numbers, strings and booleans, and tuples, lists and dicts of them; so does
``diagnose``. The values themselves go to the workers, in a file (:func:`write`), not a spec
to fill with random numbers: a text function's strings, a ragged batch's row lengths and a
sparse tensor's pattern are part of what it costs. TensorFlow's objects travel as their parts
(:class:`Dense`, :class:`Ragged`, :class:`Sparse`), so this module needs no TensorFlow; the
worker puts them back together (:func:`perfguide.diagnose.worker.loading.arguments`).

>>> import numpy as np
>>> describe({"ids": np.zeros((32, 8), np.int32), "scale": 0.5})
"{'ids': int32[32,8], 'scale': 0.5}"
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from perfguide.diagnose.target import TargetError
from perfguide.report.publishing.results import write_atomically

#: What a value that cannot be an argument should be instead.
_GIVE = (
    "give tensors, arrays, numbers or strings, or tuples, lists and dicts of them (an object "
    "the function only reads belongs in its module)"
)


@dataclasses.dataclass(frozen=True)
class Dense:
    """A tensor (or a ``tf.Variable``, ``variable``) as its values and its dtype's name."""

    values: np.ndarray
    dtype: str
    variable: bool = False

    def describe(self) -> str:
        shape = ",".join(map(str, self.values.shape))
        return f"{'variable ' * self.variable}{self.dtype}[{shape}]"


@dataclasses.dataclass(frozen=True)
class Ragged:
    """A ``tf.RaggedTensor`` as its flat values and its row splits, outermost first."""

    flat: Dense
    row_splits: tuple[np.ndarray, ...]

    def describe(self) -> str:
        # As an --input spec says a ragged batch: each ragged dimension by its rows' lengths.
        rows = len(self.row_splits[0]) - 1
        spreads = [_spread(np.diff(splits)) for splits in self.row_splits]
        inner = [str(rows), *spreads, *(str(d) for d in self.flat.values.shape[1:])]
        return f"{self.flat.dtype}[{','.join(inner)}]"


def _spread(lengths: np.ndarray) -> str:
    return f"{lengths.min()}..{lengths.max()}" if lengths.size else "0..0"


@dataclasses.dataclass(frozen=True)
class Sparse:
    """A ``tf.SparseTensor`` as its indices, values and dense shape."""

    indices: np.ndarray
    values: Dense
    dense_shape: np.ndarray

    def describe(self) -> str:
        shape = ",".join(map(str, self.dense_shape))
        return f"sparse {self.values.dtype}[{shape}] ({len(self.indices)} values)"


def portable(value: Any, where: str = "an example argument") -> Any:
    """``value`` with TensorFlow's objects as their parts, structures kept;
    :class:`~perfguide.diagnose.target.TargetError` naming ``where`` the first value that
    cannot be an argument is."""
    tf = sys.modules.get("tensorflow")  # a TensorFlow object means TensorFlow is imported
    if tf is not None and isinstance(value, (tf.Tensor, tf.Variable, tf.RaggedTensor)):
        return _tensor(tf, value)
    if tf is not None and isinstance(value, tf.SparseTensor):
        values = _tensor(tf, value.values)
        return Sparse(np.asarray(value.indices), values, np.asarray(value.dense_shape))
    if isinstance(value, Mapping):
        return {key: portable(item, f"{where}[{key!r}]") for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return same_kind(value, [portable(item, f"{where}[{i}]") for i, item in enumerate(value)])
    if isinstance(value, (np.ndarray, np.generic, int, float, complex, str, bytes, type(None))):
        return value
    raise TargetError(f"{where} is {_what(value)}: {_GIVE}")


def same_kind(sequence: tuple | list, items: list[Any]) -> tuple | list:
    """``items`` as a sequence of ``sequence``'s own type (a namedtuple's fields by place)."""
    kind = type(sequence)
    return kind(*items) if hasattr(sequence, "_fields") else kind(items)


def _tensor(tf: Any, value: Any) -> Dense | Ragged:
    if isinstance(value, tf.RaggedTensor):
        splits = tuple(np.asarray(s) for s in value.nested_row_splits)
        return Ragged(_tensor(tf, value.flat_values), splits)
    variable = isinstance(value, tf.Variable)
    return Dense(np.asarray(value.numpy()), value.dtype.name, variable)


def _what(value: Any) -> str:
    """What the reader gave, in their words."""
    if inspect.isgenerator(value) or inspect.isasyncgen(value):
        return "a generator (pass one batch it yields instead)"
    if type(value).__name__.endswith("Dataset"):
        return "a tf.data dataset (pass one batch of it instead)"
    return f"a {type(value).__module__}.{type(value).__qualname__}"


def describe(value: Any) -> str:
    """An argument in a few words: a tensor by its dtype and shape, a structure by its parts,
    anything else by its ``repr`` (shortened)."""
    if isinstance(value, (Dense, Ragged, Sparse)):
        return value.describe()
    if isinstance(value, np.ndarray):
        return Dense(value, value.dtype.name).describe()
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key!r}: {describe(v)}" for key, v in value.items()) + "}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' * (len(value) == 1)})"
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def write(args: tuple[Any, ...], path: Path) -> tuple[str, ...]:
    """The example ``args`` (already :func:`portable`) written to ``path``, and each one
    described. Pickled with cloudpickle, which sends a class of the reader's session (a
    namedtuple defined in a notebook) by value."""
    import cloudpickle

    write_atomically(path, cloudpickle.dumps(args))
    return tuple(describe(arg) for arg in args)


def read(path: str) -> tuple[Any, ...]:
    """The example arguments :func:`write` wrote to ``path``, still in parts."""
    return pickle.loads(Path(path).read_bytes())
