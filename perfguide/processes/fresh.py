"""What a fresh Python process gets: its environment, and how a one-off command runs in one.

Some settings are read once per process, so setting them in a process that already runs
TensorFlow changes nothing (or raises): ``TF_ENABLE_ONEDNN_OPTS`` is read when TensorFlow is
imported, the thread pools are made when the runtime starts (``TF_NUM_INTRAOP_THREADS``,
``tf.config.threading``), ``TF_USE_LEGACY_KERAS=1`` decides at import whether ``tf.keras`` is
Keras 2, Keras 3 reads ``KERAS_BACKEND`` at import, and XLA reads ``XLA_FLAGS`` once. Only a
fresh process measures under another value.

As pyperf does with its workers, a fresh process gets a minimal environment, so a stray variable
of the parent cannot change what is measured; unlike pyperf, it also gets every ``TF_*``,
``XLA_*``, ``CUDA_*``, ``ONEDNN_*``, ``KERAS_*`` and ``PERFGUIDE_*`` variable of the parent on
purpose, since those are settings of what is measured. The settings asked for win over the parent's.
Every child also reports a crash with the Python stack it was on (:data:`CRASH_REPORT`), and
runs no library's usage telemetry (:data:`TELEMETRY_OFF`).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping

from perfguide.measure import environment

#: Variables whose names start with these go to the child as they are (Terraform's excepted).
PASSED_PREFIXES = ("TF_", "XLA_", "CUDA_", "ONEDNN_", "KERAS_", "PERFGUIDE_")
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
#: What the temporary folder of a process's own is called (see :func:`own_scratch`).
SCRATCH_PREFIX = "perfguide-process-"
#: Every child reports a crash (a segfault in TensorFlow's C++) with the Python stack it was on:
#: ``faulthandler`` writes it to stderr, where :func:`failure_reason` finds it.
CRASH_REPORT = {"PYTHONFAULTHANDLER": "1"}
#: How a crash report's first line starts, and how many of its stack's lines a reason keeps.
CRASH_MARK, CRASH_FRAMES = "Fatal Python error", 8
#: Usage telemetry that a library runs when imported, which no process of ours imports
#: (:func:`import_tensorflow_lean` says why).
TELEMETRY_MODULES = ("openvino_telemetry",)
#: Usage telemetry switched off in every child by the variable its library reads as it loads:
#: ONNX Runtime's (on Linux since 1.29, on unless told), which starts a thread that uploads to
#: Microsoft's collector in any process that loads it, a timed one included.
TELEMETRY_OFF = {"ORT_DISABLE_TELEMETRY": "1"}


class ChildError(RuntimeError):
    """A fresh process failed; ``usage`` when it refused its input (bad workload, variant,
    size, device or setting), which the command line reports as bad input."""

    def __init__(self, message: str, usage: bool = False):
        super().__init__(message)
        self.usage = usage

    def __reduce__(self) -> tuple:  # pickled with ``usage`` (a recorded failure keeps it)
        return ChildError, (str(self), self.usage)


class BadInput(ValueError):
    """Raised by code a worker runs for the caller when what it was given is wrong (a missing
    function, inputs that do not fit it): the caller hears it as a :class:`ChildError` with
    ``usage``, as bad input, not as a failure."""


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
    """The child's environment: the minimal base of this process's, its variables named with
    :data:`PASSED_PREFIXES`, then ``settings`` over them."""
    settings = dict(settings or {})
    check_settings(settings)
    base = {
        name: value
        for name, value in os.environ.items()
        if name in BASE_VARIABLES or name.startswith(BASE_PREFIXES)
    }
    passed = environment.variables_with_prefixes(PASSED_PREFIXES)
    return base | CRASH_REPORT | TELEMETRY_OFF | passed | settings


def end_group(process: subprocess.Popen) -> None:
    """Kill whatever is left of the process group ``process`` leads (it was started with
    ``start_new_session``), ``process`` included: what it started, and what a library it
    loaded forked, which a process that ends at once (as a worker does) leaves behind, hung
    where a child forked from a process with threads waits for a lock that no thread will
    release."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def own_scratch(env: Mapping[str, str]) -> tuple[dict[str, str], tempfile.TemporaryDirectory]:
    """``env`` with a new temporary folder as the process's ``TMPDIR``, and that folder, which
    the caller removes (``cleanup()``) once the process has ended. What a process writes there
    (TensorFlow's autograph its converted functions, a workload its data files) would otherwise
    outlive it: a worker and a forked child end without their exit handlers, and a cluster's
    servers are killed. What processes share goes to the folder
    :func:`~perfguide.measure.environment.shared_temporary_folder` names them."""
    folder = tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX, ignore_cleanup_errors=True)
    shared = str(environment.shared_temporary_folder())
    return {**env, "TMPDIR": folder.name, environment.SHARED_TMPDIR_ENV: shared}, folder


def import_tensorflow_lean() -> None:
    """Import TensorFlow in this process, which measures and never plots, without packages that
    it, or a runtime loaded later, pulls in wherever they are installed and that are not needed
    here: Keras imports ``matplotlib.pyplot`` (kept out for good; Keras does without it);
    TensorFlow Lite imports JAX for its converter from JAX functions (kept out only while
    TensorFlow loads, and not at all where Keras runs on JAX; a workload on JAX imports it later
    all the same); and every ``import openvino`` runs OpenVINO's usage telemetry, which counts
    the import in a file under the home folder and sends it to Google Analytics from a forked
    process (:data:`TELEMETRY_MODULES`, kept out for good; OpenVINO's converter runs on its own
    stand-in).
    Measured here, matplotlib cost 0.7 of the 5.4 CPU-seconds a fresh process took to import
    TensorFlow, and JAX 0.9 of 7.1; a build starts about a hundred such processes."""
    for name in ("matplotlib", *TELEMETRY_MODULES):
        sys.modules.setdefault(name, None)  # Python's mark of a module that is absent
    keep_jax_out = os.environ.get("KERAS_BACKEND") != "jax" and "jax" not in sys.modules
    if keep_jax_out:
        sys.modules["jax"] = None
    try:
        import tensorflow  # noqa: F401
    finally:
        if keep_jax_out:
            del sys.modules["jax"]


def failure_reason(text: str) -> str:
    """A child's reason for failing, from its stderr ``text``: where it crashed (the crash
    report's first line and the innermost frames of the stack it was on), else the last line
    that is not blank."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    crashed = [i for i, line in enumerate(lines) if line.startswith(CRASH_MARK)]
    if crashed:
        report = lines[crashed[-1] :]
        current = [i for i, line in enumerate(report) if line.startswith("Current thread")]
        frames = report[current[0] + 1 :] if current else report[1:]
        return " | ".join([report[0], *frames[:CRASH_FRAMES]])
    return lines[-1] if lines else "(nothing on stderr)"


def run_command(
    command: list[str], env: dict[str, str], timeout_s: float | None, what: str
) -> subprocess.CompletedProcess:
    """Run ``command`` (``what`` it does, for errors) and return what it printed; on failure
    pass its stderr on to ours and raise :class:`ChildError`."""
    env, scratch = own_scratch(env)
    with scratch:
        try:
            done = subprocess.run(
                command,
                env=env,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired as error:
            stderr = error.stderr or ""
            stderr = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
            sys.stderr.write(stderr)
            raise ChildError(f"{what} took over {timeout_s} s: {failure_reason(stderr)}") from None
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise ChildError(
            f"{what} failed (exit status {done.returncode}): {failure_reason(done.stderr)}"
        )
    return done


#: Run in a fresh process with TensorFlow's and oneDNN's logs on: TensorFlow logs at import which
#: of the CPU's instructions its generic code was not built for, oneDNN at its first primitive
#: which instruction set its kernels were generated for.
_INSTRUCTION_PROBE = (
    "import tensorflow as tf; tf.function(tf.matmul)(tf.ones((8, 8)), tf.ones((8, 8)))"
)
_NOT_BUILT_FOR = re.compile(r"To enable the following instructions: (.*?), in other operations")
_ONEDNN_ISA = re.compile(r"onednn_verbose,.*info,cpu,isa:(.*)")


def tensorflow_instruction_sets(timeout_s: float = 120) -> dict[str, str]:
    """What this TensorFlow build does with this CPU's vector instructions, as it reports them
    in a fresh process: the instruction set oneDNN's kernels (matmul, convolution…) were
    generated for at run time, and the instructions the rest of TensorFlow was not compiled to
    use ("" where a report is missing)."""
    env = child_environment({"TF_CPP_MIN_LOG_LEVEL": "0", "ONEDNN_VERBOSE": "1"})
    command = [sys.executable, "-c", _INSTRUCTION_PROBE]
    done = run_command(command, env, timeout_s, "the fresh process asking TensorFlow's build")
    output = done.stdout + done.stderr
    isa, not_built_for = _ONEDNN_ISA.search(output), _NOT_BUILT_FOR.search(output)
    return {
        "onednn_kernels": isa.group(1).strip() if isa else "",
        "not_compiled_for_elsewhere": not_built_for.group(1).strip() if not_built_for else "",
    }
