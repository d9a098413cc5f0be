"""What ``perfguide diagnose`` is pointed at: the reader's function or Keras model and its inputs,
as plain data.

A target names a function as ``path/to/file.py:function`` or ``package.module:function``, or a
saved Keras model as ``path/to/model.keras`` (its inputs are then the batch it predicts and
trains on). Its arguments come from ``--input`` specs, one per positional argument: a tensor as
a dtype and a shape (``float32[32,128]``, ``int32[32]``, ``float32[]`` for a scalar) filled
with seeded random values, or a Python number as itself (``3``, ``0.5``). Or they come from a
factory (``file.py:make_inputs``) that returns them. Parsing here needs no TensorFlow, so bad
input is refused before any process starts; the worker that runs the function turns the specs
into tensors (:mod:`perfguide.diagnose.loading`).

>>> InputSpec.parse("float32[32,128]")
InputSpec(dtype='float32', shape=(32, 128), number=None)
>>> InputSpec.parse("0.5").describe(), InputSpec.parse("int32[]").describe()
('0.5', 'int32[]')
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

DTYPES = (
    "float16", "bfloat16", "float32", "float64",
    "int8", "int16", "int32", "int64", "uint8", "bool",
)  # fmt: skip
#: The reader's function (or model's inference calls), a model's training steps, and its
#: inference calls at another batch size, as workloads in the worker that times them.
WORKLOAD, TRAINING_WORKLOAD, BATCH_WORKLOAD = "diagnose", "diagnose-training", "diagnose-batch"
#: Saved Keras models.
MODEL_SUFFIXES = (".keras",)
#: Elements one input may hold: more is a typo, not a diagnosis (4 GB of float32).
MAX_ELEMENTS = 2**30
_TENSOR = re.compile(r"(?P<dtype>[a-z0-9]+)\[(?P<dims>[0-9, ]*)\]")


class TargetError(ValueError):
    """A target or input spec that cannot be what it says: one line for the reader."""


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """One positional argument: a tensor (``dtype`` and ``shape``) or a Python ``number``."""

    dtype: str | None = None
    shape: tuple[int, ...] = ()
    number: int | float | None = None

    @classmethod
    def parse(cls, text: str) -> InputSpec:
        """``float32[32,128]``, ``float32[]``, ``3`` or ``0.5``; :class:`TargetError` else."""
        text = text.strip()
        if match := _TENSOR.fullmatch(text):
            return cls._tensor(match["dtype"], match["dims"], text)
        try:
            return cls(number=int(text))
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            raise TargetError(
                f"input {text!r} is neither a tensor spec such as float32[32,128] nor a number"
            ) from None
        if not math.isfinite(number):
            raise TargetError(f"input {text!r} is not a finite number")
        return cls(number=number)

    @classmethod
    def _tensor(cls, dtype: str, dims: str, text: str) -> InputSpec:
        if dtype not in DTYPES:
            known = ", ".join(DTYPES)
            raise TargetError(f"input {text!r}: unknown dtype {dtype!r}; use one of {known}")
        parts = [part.strip() for part in dims.split(",")] if dims.strip() else []
        if not all(part.isdigit() and int(part) > 0 for part in parts):
            raise TargetError(f"input {text!r}: each dimension must be a whole number above 0")
        shape = tuple(int(part) for part in parts)
        if math.prod(shape) > MAX_ELEMENTS:
            raise TargetError(f"input {text!r} holds more than {MAX_ELEMENTS:,} elements")
        return cls(dtype=dtype, shape=shape)

    @property
    def is_tensor(self) -> bool:
        return self.dtype is not None

    def describe(self) -> str:
        """The spec as the reader wrote it (normalized)."""
        if not self.is_tensor:
            return repr(self.number)
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


@dataclasses.dataclass(frozen=True)
class Target:
    """A function (``module:function`` or ``file.py:function``) or a saved Keras model
    (``model.keras``), and how to make its arguments: ``inputs`` specs, or a ``factory`` named
    like a function that returns them (for a model: the batch, or the batch and its targets)."""

    function: str
    inputs: tuple[InputSpec, ...] = ()
    factory: str | None = None

    def __post_init__(self) -> None:
        # Files by absolute path: the worker that imports them may not share our directory.
        checked = checked_model(self.function) if self.is_model else None
        checked = checked or checked_reference(self.function, "function")
        object.__setattr__(self, "function", checked)
        if self.factory is not None:
            object.__setattr__(self, "factory", checked_reference(self.factory, "input factory"))
            if self.inputs:
                raise TargetError("give --input specs or an --inputs factory, not both")

    @property
    def is_model(self) -> bool:
        """Whether the target is a saved Keras model."""
        return self.function.endswith(MODEL_SUFFIXES)

    @property
    def name(self) -> str:
        """The function's own name, or the model file's, as the reader wrote it."""
        return Path(self.function).name if self.is_model else self.function.rpartition(":")[2]

    def describe(self) -> str:
        """``fn(float32[32,128], 0.5)``, or ``fn(*make_inputs())``."""
        if self.factory is not None:
            return f"{self.name}(*{self.factory.rpartition(':')[2]}())"
        return f"{self.name}({', '.join(spec.describe() for spec in self.inputs)})"

    def to_json(self) -> dict[str, Any]:
        inputs = [dataclasses.asdict(spec) for spec in self.inputs]
        return {"function": self.function, "inputs": inputs, "factory": self.factory}

    @classmethod
    def from_json(cls, fields: dict[str, Any]) -> Target:
        inputs = tuple(
            InputSpec(spec["dtype"], tuple(spec["shape"]), spec["number"])
            for spec in fields["inputs"]
        )
        return cls(fields["function"], inputs, fields["factory"])


def is_file_reference(module: str) -> bool:
    """Whether the part before the colon names a file (``dir/f.py``) rather than a module."""
    return module.endswith(".py") or "/" in module or "\\" in module


def checked_model(path: str) -> str:
    """A saved model's absolute path; :class:`TargetError` if there is no such file."""
    if not Path(path).is_file():
        raise TargetError(f"no such model file {path}")
    return str(Path(path).resolve())


def checked_reference(reference: str, what: str) -> str:
    """``reference`` with a file named by its absolute path; :class:`TargetError` for one that
    cannot be ``module:function`` or ``file.py:function``, or names a missing file. Importing it
    is the worker's job."""
    module, colon, name = reference.rpartition(":")
    if not (colon and module and name.isidentifier()):
        raise TargetError(f"{what} {reference!r} is not file.py:name or package.module:name")
    if not is_file_reference(module):
        return reference
    if not Path(module).is_file():
        raise TargetError(f"{what} {reference!r}: no such file {module}")
    return f"{Path(module).resolve()}:{name}"
