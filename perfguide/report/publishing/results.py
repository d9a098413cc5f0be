"""Results files: the environment record plus measurements, as JSON.

Shape: ``{"environment": {...}, "measurements": [{"workload", "variant", "unit", "median_s",
"interval_s", "first_call_s", "noisy", "block_s", "blocks_per_process", "process_median_s",
...}]}`` with times in seconds per ``unit``: ``block_s`` holds every timed block, split into the
processes that timed them by ``blocks_per_process``, and ``process_median_s`` each process's
median; ``median_s`` is the median of those. Files are
written atomically (a temporary file in the same directory, then renamed), so a crash never leaves
half a file behind.

>>> import tempfile
>>> from perfguide.measure.measurement import Measurement
>>> path = Path(tempfile.mkdtemp()) / "out.json"
>>> save(path, {"python": "3.11"}, [Measurement("numpy", "iteration", 1, 3, 0.1, (1e-5,) * 5)])
>>> [m.label for m in load_measurements(path)]
['numpy']
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfguide.measure.environment import QUICK_ENV
from perfguide.measure.measurement import Measurement
from perfguide.report.publishing.chapters import chapter
from perfguide.report.verdicts.claims import Claim

#: Gallery examples publish their JSON into the directory this variable names (the docs set it).
MEASUREMENTS_DIR_ENV = "PERFGUIDE_MEASUREMENTS_DIR"
#: A results file's ratios that its claims were judged on, each process's, by claim statement.
PER_PROCESS = "per_process"


class ResultsError(Exception):
    """A results file that cannot be read or is not shaped like one."""


def measurements_dir() -> Path:
    """Where chapters publish their measurements: ``$PERFGUIDE_MEASUREMENTS_DIR``, or
    ``perfguide-measurements`` in the system's folder for temporary files (a chapter run as a
    script leaves nothing in the folder it was run from)."""
    default = Path(tempfile.gettempdir()) / "perfguide-measurements"
    return Path(os.environ.get(MEASUREMENTS_DIR_ENV) or default)


def write_atomically(path: Path, content: str | bytes) -> None:
    """Write ``content`` (text, or bytes as they are) to ``path`` so that readers see the old
    file or the whole new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp makes the file private (0600); a published file should read like any other.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        binary = isinstance(content, bytes)
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def read_json(path: str | Path) -> Any:
    """The JSON document in ``path``, or None where it cannot be read as one (its own reader
    says what is wrong with it)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def save(
    path: Path,
    environment: dict[str, Any],
    measurements: Sequence[Measurement],
    extra: dict[str, Any] | None = None,
) -> None:
    """Write a results file (:func:`document`)."""
    write_json(Path(path), document(environment, measurements, extra))


def write_json(path: Path, written: dict[str, Any]) -> None:
    """``written`` as an indented JSON file at ``path``, written atomically."""
    write_atomically(path, json.dumps(written, indent=2, ensure_ascii=False) + "\n")


def document(
    environment: dict[str, Any],
    measurements: Sequence[Measurement],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A results file's contents; ``extra`` keys (a diagnosis, say) ride along, ignored by
    readers that do not know them. ValueError where two measurements are of the same workload,
    variant, size and device (a reader could not tell which to compare)."""
    keys = [(m.workload, m.label, m.size, m.device) for m in measurements]
    if twice := sorted({key for key in keys if keys.count(key) > 1}):
        raise ValueError(f"measured twice, so not saved: {' '.join(map(str, twice[0]))}")
    return {
        "environment": environment,
        "measurements": [m.to_dict() for m in measurements],
        **(extra or {}),
    }


def publish(
    topic: str,
    environment: dict[str, Any],
    measurements: Sequence[Measurement],
    claims: Sequence[Claim] = (),
    extra: dict[str, Any] | None = None,
) -> str:
    """Save a chapter's measurements as its results file in :func:`measurements_dir` (named in
    the table of chapters), with each ratio its ``claims`` were judged on in every process
    (:data:`PER_PROCESS`) and ``extra``'s keys (what the page measured besides times), and say
    where."""
    path = measurements_dir() / chapter(topic).results
    ratios = {claim.statement: list(claim.processes) for claim in claims if claim.processes}
    riding = {**(extra or {}), **({PER_PROCESS: ratios} if ratios else {})}
    save(path, environment, measurements, riding or None)
    # A build names its own folder and links the file; a reader's run needs to find it.
    where = path.name if os.environ.get(MEASUREMENTS_DIR_ENV) else path
    return f"published {len(measurements)} measurements to {where}"


#: What a chapter measured in a quick run says first.
QUICK_LINE = (
    f"A QUICK RUN ({QUICK_ENV}=1): one fresh process a workload and short blocks; the numbers "
    "and verdicts are rough, not the guide's"
)


def where_measured(environment: dict[str, Any], device: str = "cpu") -> str:
    """The lines that open a chapter: the CPU, its usable cores, the libraries and the device,
    and whether the run was a quick one.

    >>> print(where_measured({"cpu_model": "CPU X", "usable_cores": 2, "tensorflow": "2.21.0",
    ...                       "keras": "3.15.1", "numpy": "2.4.0"}))
    CPU: CPU X, 2 usable cores
    TensorFlow 2.21.0, Keras 3.15.1, NumPy 2.4.0; ops placed on cpu
    """
    lines = (
        f"CPU: {environment['cpu_model']}, {environment['usable_cores']} usable cores\n"
        f"TensorFlow {environment['tensorflow']}, Keras {environment['keras']}, NumPy "
        f"{environment['numpy']}; ops placed on {device}"
    )
    return lines + ("\n" + QUICK_LINE if environment.get("quick") else "")


def load(path: Path) -> dict[str, Any]:
    """Read a results file, raising :class:`ResultsError` with a one-line reason if it is bad."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ResultsError(f"cannot read results file {path}: {error.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ResultsError(f"{path} is not a JSON results file: {error}") from None
    if not (
        isinstance(document, dict)
        and isinstance(document.get("environment"), dict)
        and isinstance(document.get("measurements"), list)
    ):
        raise ResultsError(f"{path} lacks the 'environment' and 'measurements' of a results file")
    return document


_REQUIRED = (
    "workload", "variant", "unit", "size", "device",
    "first_call_s", "units_per_call", "calls_per_block", "block_s",
)  # fmt: skip


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _problem(record: Any) -> str | None:
    """What makes ``record`` unusable as a measurement, or None."""
    if not isinstance(record, dict):
        return "a measurement that is not an object"
    missing = [key for key in _REQUIRED if key not in record]
    if missing:
        return f"a measurement without {missing[0]!r}"
    samples = record["block_s"]
    if not (isinstance(samples, list) and len(samples) >= 2 and all(map(_is_number, samples))):
        return "a measurement whose 'block_s' is not a list of at least two numbers"
    numbers = ("first_call_s", "units_per_call", "calls_per_block")
    if not all(_is_number(record[key]) for key in numbers):
        return f"a measurement whose {', '.join(numbers)} are not all numbers"
    # Optional: files written before it was recorded lack it.
    cores_busy = record.get("cores_busy")
    if cores_busy is not None and not (_is_number(cores_busy) and cores_busy >= 0):
        return "a measurement whose 'cores_busy' is not a number >= 0"
    counts = record.get("blocks_per_process", [])
    if not (isinstance(counts, list) and all(isinstance(n, int) and n > 0 for n in counts)) or (
        counts and sum(counts) != len(samples)
    ):
        return "a measurement whose 'blocks_per_process' does not split its 'block_s'"
    return None


def load_results(path: Path) -> tuple[dict[str, Any], list[Measurement]]:
    """The environment record and the measurements of a results file, each measurement
    checked before it is used."""
    document = load(path)
    for record in document["measurements"]:
        if problem := _problem(record):
            raise ResultsError(f"{path} has {problem}")
    return document["environment"], [Measurement.from_dict(r) for r in document["measurements"]]


def load_per_process(path: Path) -> dict[str, list[float]]:
    """The ratios a results file's claims were judged on, each process's, by claim statement."""
    return load(path).get(PER_PROCESS, {})


def load_measurements(path: Path) -> list[Measurement]:
    """The measurements of a results file, each checked before it is used."""
    return load_results(path)[1]
