"""TensorFlow's errors turned into reasons in a reader's words, with the line of the reader's
code they arose at: why a form or a probe of the reader's code failed (see
:mod:`perfguide.diagnose`). Plain text work: no TensorFlow is imported here.
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path

from perfguide.diagnose.target import Target, is_file_reference

#: What TensorFlow's errors mean for code that cannot be traced, compiled or relaxed, in a
#: reader's words: a fragment of the message, and what it says of the reader's code.
REASONS = (
    (
        "has no attribute 'numpy'",
        "it calls .numpy(), which reads a value back to Python: a graph being traced has no "
        "values yet, so this keeps the function eager",
    ),
    (
        "cannot be interpreted as an integer",
        "it needs a static shape: Python uses a dimension (a range over x.shape[0], say) that "
        "is unknown (None) in a graph traced for any size",
    ),
    (
        "singleton tf.Variables",
        "it creates a tf.Variable at every call: create it once, outside the function",
    ),
    ("unsupported operations", "XLA cannot compile some of its ops"),
    (
        "as a Python `bool` is not allowed",
        "Python branches on a tensor's value, which a graph does not have while it is traced",
    ),
)
_FILE_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def one_line(error: BaseException) -> str:
    """An error's message in one line: TensorFlow's "in user code:" messages end with it."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    return lines[-1] if lines[0] == "in user code:" else lines[0]


def reader_files(target: Target) -> set[str]:
    """The reader's files: the function's (or model's inputs factory's) and the factory's."""
    return {
        str(Path(ref.rpartition(":")[0]).resolve())
        for ref in (target.function, target.factory)
        if ref and is_file_reference(ref.rpartition(":")[0])
    }


def shown(filename: str) -> str:
    """A source file as a reader finds it: relative to where the command runs, if it is there."""
    path = Path(filename).resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def _error_line(error: BaseException, files: set[str]) -> str | None:
    """Where in the reader's files ``error`` arose: the last such line TensorFlow's message
    quotes ("in user code:"), else the innermost such frame of its traceback."""
    quoted = [
        f"{shown(m['file'])}:{m['line']}"
        for m in _FILE_LINE.finditer(str(error))
        if str(Path(m["file"]).resolve()) in files
    ]
    frames = [
        f"{shown(frame.filename)}:{frame.lineno}"
        for frame in traceback.extract_tb(error.__traceback__)
        if str(Path(frame.filename).resolve()) in files
    ]
    return (quoted or frames or [None])[-1]


def why_not(error: BaseException, files: set[str]) -> str:
    """Why a form or probe failed, in a reader's words where the error is a known one, with
    the line of the reader's code it arose at."""
    reason = next((why for fragment, why in REASONS if fragment in str(error)), None)
    reason = reason or f"{type(error).__name__}: {one_line(error)}"
    where = _error_line(error, files)
    return f"{reason} (at {where})" if where else reason
