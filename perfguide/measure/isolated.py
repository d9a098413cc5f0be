"""Measure a workload in a fresh Python process, under settings only a new process picks up.

Some settings are read once per process, so setting them in a process that already runs
TensorFlow changes nothing (or raises): ``TF_ENABLE_ONEDNN_OPTS`` is read when TensorFlow is
imported, the intra-op and inter-op thread pools are made when the runtime starts
(``TF_NUM_INTRAOP_THREADS``, ``TF_NUM_INTEROP_THREADS``, ``tf.config.threading``),
``TF_USE_LEGACY_KERAS=1`` decides at import whether ``tf.keras`` is Keras 2 (``tf_keras``), and
XLA reads ``XLA_FLAGS`` once. To measure under another value, :func:`run_in_fresh_process` starts
the command line itself (``python -m perfguide run … --json FILE``) in a new process and reads
back the results file it writes: the same measurements, with the environment record the child
collected, so the record says what the child actually saw.

As pyperf does with its workers, the child gets a minimal environment, so a stray variable of
the parent cannot change what is measured; unlike pyperf, it also gets every ``TF_*``,
``XLA_*``, ``CUDA_*`` and ``PERFGUIDE_*`` variable of the parent on purpose, since those are
settings of what is measured. The settings asked for win over the parent's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from perfguide.measure import environment
from perfguide.measure.timer import Measurement
from perfguide.report import results

#: Variables whose names start with these go to the child as they are (Terraform's excepted).
PASSED_PREFIXES = ("TF_", "XLA_", "CUDA_", "PERFGUIDE_")
#: What Python and TensorFlow need to start and find their files, plus the variables that size
#: the BLAS thread pools of the NumPy baselines (as TF_* ones size TensorFlow's): dropping them
#: would change what the baselines measure.
BASE_VARIABLES = (
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ",
    "TMPDIR", "TEMP", "TMP", "SYSTEMROOT",
    "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
)  # fmt: skip
BASE_PREFIXES = ("LC_",)

#: Thread pools ``perfguide run`` sizes itself through ``tf.config.threading`` before any op
#: runs (:func:`apply_thread_settings`). TensorFlow honours ``TF_NUM_INTRAOP_THREADS`` too, but no
#: API reports what it did; sizes set through these show in ``tf.config.threading``'s getters,
#: hence in the environment record.
THREAD_VARIABLES = {
    "PERFGUIDE_INTRA_OP_THREADS": "set_intra_op_parallelism_threads",
    "PERFGUIDE_INTER_OP_THREADS": "set_inter_op_parallelism_threads",
}
#: The variables of settings a process reads once, reported in every environment record.
PROCESS_VARIABLES = (
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "TF_USE_LEGACY_KERAS",
    "XLA_FLAGS",
    *THREAD_VARIABLES,
)


class ChildError(RuntimeError):
    """The fresh process failed; ``returncode`` is its exit status (None if it timed out)."""

    def __init__(self, message: str, returncode: int | None):
        super().__init__(message)
        self.returncode = returncode


class FreshRun(NamedTuple):
    """What a fresh process measured, and the environment record it collected."""

    measurements: list[Measurement]
    environment: dict[str, Any]


def check_settings(settings: Mapping[str, str]) -> None:
    """Raise ValueError for a setting the child would not get as asked."""
    for name, value in settings.items():
        if not environment.is_setting(name, PASSED_PREFIXES):
            raise ValueError(
                f"cannot pass {name!r} to a fresh process: only variables named "
                f"{', '.join(p + '*' for p in PASSED_PREFIXES)} are passed (not Terraform's)"
            )
        if not isinstance(value, str):
            raise ValueError(f"the value of {name} must be a string, got {value!r}")


def child_environment(settings: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: the minimal base of this process's, its ``TF_*``, ``XLA_*``,
    ``CUDA_*`` and ``PERFGUIDE_*`` variables, then ``settings`` over them."""
    settings = dict(settings or {})
    check_settings(settings)
    base = {
        name: value
        for name, value in os.environ.items()
        if name in BASE_VARIABLES or name.startswith(BASE_PREFIXES)
    }
    return base | environment.variables_with_prefixes(PASSED_PREFIXES) | settings


def apply_thread_settings() -> None:
    """Size TensorFlow's thread pools from ``PERFGUIDE_INTRA_OP_THREADS`` and
    ``PERFGUIDE_INTER_OP_THREADS`` (0 lets TensorFlow pick). Call it before any op runs:
    TensorFlow raises RuntimeError once its runtime has started."""
    requested = {name: os.environ[name] for name in THREAD_VARIABLES if name in os.environ}
    if not requested:
        return
    import tensorflow as tf

    for name, text in requested.items():
        if not (text.isascii() and text.isdigit()):
            raise ValueError(f"{name} must be a whole number of threads (0: default), got {text!r}")
        getattr(tf.config.threading, THREAD_VARIABLES[name])(int(text))


def _command(
    workload: str,
    variants: Sequence[str],
    size: int | None,
    quick: bool,
    device: str,
    json_path: Path,
) -> list[str]:
    """The child's command line: this Python running perfguide's own ``run`` command."""
    command = [sys.executable, "-m", "perfguide", "run", workload, "--device", device]
    command += [arg for variant in variants for arg in ("--variant", variant)]
    command += ["--size", str(size)] * (size is not None) + ["--quick"] * quick
    return command + ["--json", str(json_path)]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(nothing on stderr)"


def _run_child(command: list[str], env: dict[str, str], timeout_s: float | None, what: str) -> None:
    """Run ``command`` (``what`` it does, for errors); on failure pass its stderr on to ours and
    raise :class:`ChildError`."""
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, errors="replace", timeout=timeout_s
        )
    except subprocess.TimeoutExpired as error:
        stderr = error.stderr or ""
        stderr = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
        sys.stderr.write(stderr)
        raise ChildError(f"{what} took over {timeout_s} s: {_last_line(stderr)}", None) from None
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise ChildError(
            f"{what} failed (exit status {done.returncode}): {_last_line(done.stderr)}",
            done.returncode,
        )


def run_in_fresh_process(
    workload: str,
    variants: Sequence[str] | None = None,
    *,
    size: int | None = None,
    quick: bool = False,
    device: str = "cpu",
    settings: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
) -> FreshRun:
    """Measure ``variants`` (default: all) of the registered ``workload`` at ``size`` (default:
    its own) on ``device`` in a fresh Python process whose environment is
    :func:`child_environment` of ``settings``.

    Raises ValueError for a setting that cannot be passed, and :class:`ChildError` (with the
    child's last line on stderr; all of its stderr goes to ours) if the child fails.
    """
    env = child_environment(settings)
    with tempfile.TemporaryDirectory(prefix="perfguide-child-") as directory:
        json_path = Path(directory) / "results.json"
        command = _command(workload, variants or (), size, quick, device, json_path)
        _run_child(command, env, timeout_s, f"the fresh process measuring {workload}")
        record, measurements = results.load_results(json_path)
    return FreshRun(measurements, record)
