"""What ``perfguide diagnose`` is pointed at: the reader's function or Keras model and its inputs,
as plain data.

A target names a function as ``path/to/file.py:function`` or ``package.module:function`` (or a
function pickled by :func:`perfguide.diagnose`, ``function.pkl``), or a saved model: a Keras
file (``model.keras``, ``model.h5``), a SavedModel directory or a LiteRT file (``model.tflite``);
a model's inputs are then the batch it predicts (and a Keras model trains on). Its arguments
come from ``--input`` specs, one per positional argument: a tensor as a dtype and a shape
(``float32[32,128]``, ``int32[32]``, ``float32[]`` for a scalar, ``string[64]`` for text)
filled with seeded random values, a ragged batch by the range of its rows' lengths in the
dimension after the batch (``int32[32,1..20]``: 32 rows of 1 to 20 values, drawn evenly;
``None`` there is ``1..16``), or a Python number as itself (``3``, ``0.5``); a model's inputs
may be named (``tokens=int32[32,8]``). Or they come from a factory (``file.py:make_inputs``)
that returns them, or, from Python, they are the reader's own values
(:mod:`perfguide.diagnose.examples`). Parsing here needs no TensorFlow, so bad input is refused
before any process starts; the worker that runs the function turns the specs into tensors
(:mod:`perfguide.diagnose.worker.loading`).

>>> InputSpec.parse("float32[32,128]")
InputSpec(dtype='float32', shape=(32, 128), number=None, name=None, lengths=None)
>>> InputSpec.parse("tokens=int32[32,8]").describe()
'tokens=int32[32,8]'
>>> InputSpec.parse("0.5").describe(), InputSpec.parse("int32[]").describe()
('0.5', 'int32[]')
>>> InputSpec.parse("float32[32,None,8]").describe(), InputSpec.parse("string[64]").describe()
('float32[32,1..16,8]', 'string[64]')
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

from perfguide.diagnose.worker_answers import checked

DTYPES = (
    "float16", "bfloat16", "float32", "float64",
    "int8", "int16", "int32", "int64", "uint8", "bool", "string",
)  # fmt: skip
#: The reader's function (or model's inference calls), a model's training steps, and its
#: inference calls at another batch size, as workloads in the worker that times them.
WORKLOAD, TRAINING_WORKLOAD, BATCH_WORKLOAD = "diagnose", "diagnose-training", "diagnose-batch"
#: The forms a Keras file is timed in on each of Keras's backends, and the workload that times
#: each: ``predict``; ``fit`` over an epoch as the file was saved; and on JAX, where the file
#: says ``jit_compile=False`` (as a model compiled on TensorFlow without a GPU is saved),
#: ``fit-jit`` with it on, JAX's own default.
BACKEND_FORMS = {"predict": WORKLOAD, "fit": TRAINING_WORKLOAD, "fit-jit": TRAINING_WORKLOAD}
#: Saved models by kind: Keras files by their suffix, a SavedModel directory by the file in it,
#: a LiteRT file by its suffix; and a function pickled with cloudpickle.
KERAS_SUFFIXES, SAVED_MODEL_FILES, LITERT_SUFFIX = (".keras", ".h5"), ("saved_model.pb",), ".tflite"
PICKLED_SUFFIX = ".pkl"
MODEL_KINDS = ("keras", "saved-model", "litert")
#: Elements one input may hold: more is a typo, not a diagnosis (4 GB of float32).
MAX_ELEMENTS = 2**30
_TENSOR = re.compile(r"(?P<dtype>[a-z0-9]+)\[(?P<dims>[0-9A-Za-z., ]*)\]")
#: The row lengths of a ragged dimension written as ``None``.
RAGGED_LENGTHS = (1, 16)
_LENGTHS = re.compile(r"(?P<low>[0-9]+)\.\.(?P<high>[0-9]+)")
_NAMED = re.compile(r"(?P<name>[A-Za-z_][\w.:/-]*)=(?P<spec>.+)")


class TargetError(ValueError):
    """A target or input spec that cannot be what it says: one line for the reader."""


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """One argument: a tensor (``dtype`` and ``shape``) or a Python ``number``; for a model's
    input, maybe its ``name``. A ragged batch has the row ``lengths`` (the lowest and highest)
    of its second dimension, which ``shape`` leaves out."""

    dtype: str | None = None
    shape: tuple[int, ...] = ()
    number: int | float | None = None
    name: str | None = None
    lengths: tuple[int, int] | None = None

    @classmethod
    def parse(cls, text: str) -> InputSpec:
        """``float32[32,128]``, ``float32[]``, ``3`` or ``0.5``, each maybe after ``name=``;
        :class:`TargetError` else."""
        text = text.strip()
        if named := _NAMED.fullmatch(text):
            return dataclasses.replace(cls.parse(named["spec"]), name=named["name"])
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
        lengths = None
        if len(parts) > 1 and (parts[1] == "None" or _LENGTHS.fullmatch(parts[1])):
            lengths = _lengths(parts.pop(1), text)
        if not all(part.isdigit() and int(part) > 0 for part in parts):
            raise TargetError(
                f"input {text!r}: each dimension must be a whole number above 0 (the second "
                "may be a ragged one's row lengths, such as 1..20 or None)"
            )
        shape = tuple(int(part) for part in parts)
        if math.prod(shape) * (lengths[1] if lengths else 1) > MAX_ELEMENTS:
            raise TargetError(f"input {text!r} holds more than {MAX_ELEMENTS:,} elements")
        return cls(dtype=dtype, shape=shape, lengths=lengths)

    @property
    def is_tensor(self) -> bool:
        return self.dtype is not None

    def describe(self) -> str:
        """The spec as the reader wrote it (normalized)."""
        dims = [str(d) for d in self.shape]
        if self.lengths:
            dims.insert(1, "{}..{}".format(*self.lengths))
        value = f"{self.dtype}[{','.join(dims)}]" if self.is_tensor else None
        value = value or repr(self.number)
        return f"{self.name}={value}" if self.name else value


def _lengths(text: str, spec: str) -> tuple[int, int]:
    """The row lengths ``low..high`` (or ``None``) of a ragged dimension in ``spec``."""
    if text == "None":
        return RAGGED_LENGTHS
    low, high = (int(n) for n in _LENGTHS.fullmatch(text).groups())
    if not 0 <= low <= high or high == 0:
        raise TargetError(f"input {spec!r}: row lengths {text} must run from a low to a high")
    return low, high


@dataclasses.dataclass(frozen=True)
class Target:
    """A function (``module:function``, ``file.py:function`` or ``function.pkl``) or a saved
    model (of one of the :data:`MODEL_KINDS`), and how to make its arguments: ``inputs`` specs,
    or a ``factory`` named like a function that returns them (for a Keras model: the batch, or
    the batch and its targets), or the reader's own ``examples`` (the file
    :func:`perfguide.diagnose.examples.write` wrote them to) and how they are ``described``."""

    function: str
    inputs: tuple[InputSpec, ...] = ()
    factory: str | None = None
    examples: str | None = None
    described: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Files by absolute path: the worker that imports them may not share our directory.
        if self.kind == "function":
            checked = checked_reference(self.function, "function")
        else:
            checked = checked_file(self.function, self.kind)
        object.__setattr__(self, "function", checked)
        if self.factory is not None:
            object.__setattr__(self, "factory", checked_reference(self.factory, "input factory"))
            if self.inputs:
                raise TargetError("give --input specs or an --inputs factory, not both")
        if self.examples is not None and (self.inputs or self.factory):
            raise TargetError("give example arguments, input specs or a factory: one of them")
        names = [spec.name for spec in self.inputs]
        if any(names) and self.kind not in MODEL_KINDS:
            raise TargetError("only a model's inputs take names; a function's go in order")
        if any(names) and not all(names):
            raise TargetError("name every input (name=dtype[shape]) or none")

    @property
    def kind(self) -> str:
        """One of :data:`MODEL_KINDS`, "pickled" or "function", by what ``function`` names."""
        return kind_of(self.function)

    @property
    def is_model(self) -> bool:
        """Whether the target is a saved model."""
        return self.kind in MODEL_KINDS

    @property
    def name(self) -> str:
        """The function's own name, or the model's file or directory, as the reader wrote it."""
        if self.kind == "function":
            return self.function.rpartition(":")[2]
        return Path(self.function).stem if self.kind == "pickled" else Path(self.function).name

    def describe(self) -> str:
        """``fn(float32[32,128], 0.5)``, or ``fn(*make_inputs())``."""
        if self.factory is not None:
            return f"{self.name}(*{self.factory.rpartition(':')[2]}())"
        described = self.described or tuple(spec.describe() for spec in self.inputs)
        return f"{self.name}({', '.join(described)})"

    def to_json(self) -> dict[str, Any]:
        inputs = [dataclasses.asdict(spec) for spec in self.inputs]
        fields = {"function": self.function, "inputs": inputs, "factory": self.factory}
        return fields | {"examples": self.examples, "described": list(self.described)}

    @classmethod
    def from_json(cls, fields: dict[str, Any]) -> Target:
        """The target the parent sent, checked as a worker's answers are."""
        inputs = tuple(checked(InputSpec, spec) for spec in fields.get("inputs", ()))
        return checked(cls, {**fields, "inputs": inputs})


def is_file_reference(module: str) -> bool:
    """Whether the part before the colon names a file (``dir/f.py``) rather than a module."""
    return module.endswith(".py") or "/" in module or "\\" in module


def kind_of(reference: str) -> str:
    """What ``reference`` names, by its form: a directory is taken for a SavedModel.

    >>> [kind_of(r) for r in ("m.h5", "m.tflite", "fn.pkl", ".", "f.py:fn", "pkg.mod:fn")]
    ['keras', 'litert', 'pickled', 'saved-model', 'function', 'function']
    """
    if reference.endswith(KERAS_SUFFIXES):
        return "keras"
    if reference.endswith(LITERT_SUFFIX):
        return "litert"
    if reference.endswith(PICKLED_SUFFIX):
        return "pickled"
    if Path(reference).is_dir():
        return "saved-model"
    return "function"


def checked_file(path: str, kind: str) -> str:
    """A saved model's (or pickled function's) absolute path; :class:`TargetError` if there is
    no such file, or the directory holds no SavedModel."""
    found = Path(path)
    if kind == "saved-model":  # a directory
        if not any((found / name).is_file() for name in SAVED_MODEL_FILES):
            raise TargetError(f"{path} is a directory but no SavedModel: it has no saved_model.pb")
    elif not found.is_file():
        raise TargetError(f"no such {'function' if kind == 'pickled' else 'model'} file {path}")
    return str(found.resolve())


def checked_reference(reference: str, what: str) -> str:
    """``reference`` with a file named by its absolute path; :class:`TargetError` for one that
    cannot be ``module:function`` or ``file.py:function``, or names a missing file. Importing it
    is the worker's job."""
    module, colon, name = reference.rpartition(":")
    if not (colon and module and name.isidentifier()):
        also = ", a saved model or a SavedModel directory" if what == "function" else ""
        raise TargetError(f"{what} {reference!r} is not file.py:name or package.module:name{also}")
    if not is_file_reference(module):
        return reference
    if not Path(module).is_file():
        raise TargetError(f"{what} {reference!r}: no such file {module}")
    return f"{Path(module).resolve()}:{name}"
