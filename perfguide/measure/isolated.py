"""Measure a workload in a fresh Python process, under settings only a new process picks up.

Some settings are read once per process, so setting them in a process that already runs
TensorFlow changes nothing (or raises): ``TF_ENABLE_ONEDNN_OPTS`` is read when TensorFlow is
imported, the intra-op and inter-op thread pools are made when the runtime starts
(``TF_NUM_INTRAOP_THREADS``, ``TF_NUM_INTEROP_THREADS``, ``tf.config.threading``),
``TF_USE_LEGACY_KERAS=1`` decides at import whether ``tf.keras`` is Keras 2 (``tf_keras``), and
XLA reads ``XLA_FLAGS`` once. To measure under another value, :func:`run_jobs_in_fresh_process`
starts a new Python process running this module on a list of jobs and reads back the results
file it writes: the same measurements, with the environment record the child collected, so the
record says what the child actually saw.

As pyperf does with its workers, the child gets a minimal environment, so a stray variable of
the parent cannot change what is measured; unlike pyperf, it also gets every ``TF_*``,
``XLA_*``, ``CUDA_*`` and ``PERFGUIDE_*`` variable of the parent on purpose, since those are
settings of what is measured. The settings asked for win over the parent's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from perfguide.measure import environment
from perfguide.measure.timer import Measurement
from perfguide.report import results
from perfguide.report.claims import Faster

#: Variables whose names start with these go to the child as they are (Terraform's excepted).
PASSED_PREFIXES = ("TF_", "XLA_", "CUDA_", "ONEDNN_", "PERFGUIDE_")
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
    """The child's environment: the minimal base of this process's, its variables named with
    :data:`PASSED_PREFIXES`, then ``settings`` over them."""
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


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(nothing on stderr)"


def _run_child(
    command: list[str], env: dict[str, str], timeout_s: float | None, what: str
) -> subprocess.CompletedProcess:
    """Run ``command`` (``what`` it does, for errors) and return what it printed; on failure
    pass its stderr on to ours and raise :class:`ChildError`."""
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
    return done


class Job(NamedTuple):
    """One measurement for a fresh process: ``variants`` (empty: all) of the registered
    ``workload`` at ``size`` (None: its own), adding blocks until the
    :class:`~perfguide.report.claims.Faster` claims in ``settle`` are settled (as
    :func:`runner.run` does)."""

    workload: str
    variants: tuple[str, ...] = ()
    size: int | None = None
    settle: tuple[Faster, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**self._asdict(), "settle": [dataclasses.asdict(c) for c in self.settle]}

    @classmethod
    def from_json(cls, fields: dict[str, Any]) -> Job:
        settle = tuple(Faster(**claim) for claim in fields["settle"])
        return cls(**{**fields, "variants": tuple(fields["variants"]), "settle": settle})


def run_jobs_in_fresh_process(
    jobs: Sequence[Job],
    *,
    quick: bool = False,
    blocks: int | None = None,
    device: str = "cpu",
    settings: Mapping[str, str] | None = None,
    limits: bool = True,
    timeout_s: float | None = None,
) -> FreshRun:
    """Measure each of ``jobs`` on ``device``, one after the other, in one fresh Python process
    whose environment is :func:`child_environment` of ``settings`` (one process start, one
    TensorFlow import, for all of them), ``quick`` and ``blocks`` as :func:`runner.run` takes
    them. ``limits=False`` leaves the machine's limits out of the
    child's environment record (they are the machine's, whatever the settings, and take seconds
    to measure).

    Raises ValueError for a setting that cannot be passed, and :class:`ChildError` (with the
    child's last line on stderr; all of its stderr goes to ours) if the child fails.
    """
    env = child_environment(settings)
    spec = {
        "jobs": [job.to_json() for job in jobs],
        "quick": quick,
        "blocks": blocks,
        "device": device,
        "limits": limits,
    }
    with tempfile.TemporaryDirectory(prefix="perfguide-child-") as directory:
        spec_path, json_path = Path(directory) / "jobs.json", Path(directory) / "results.json"
        spec_path.write_text(json.dumps(spec))
        command = [sys.executable, "-m", __name__, str(spec_path), str(json_path)]
        names = ", ".join(job.workload for job in jobs)
        _run_child(command, env, timeout_s, f"the fresh process measuring {names}")
        record, measurements = results.load_results(json_path)
    return FreshRun(measurements, record)


def pooled(runs: Sequence[FreshRun]) -> list[Measurement]:
    """One measurement per workload, variant, size and device over several fresh processes'
    runs, whose samples are each process's median: a process, not a block, is the unit that
    differs here (two processes with the same settings can differ by more than their blocks
    do), so an interval over these samples carries that spread. First calls and cores busy are
    the processes' medians.

    >>> block = Measurement("eager", "call", 1, 10, 2.0, (1.0, 1.2), workload="w", cores_busy=2)
    >>> other = dataclasses.replace(block, first_call_s=4.0, block_s=(1.4, 1.4), cores_busy=1)
    >>> [(m.block_s, m.first_call_s, m.cores_busy) for m in pooled([FreshRun([block], {}),
    ...                                                             FreshRun([other], {})])]
    [((1.1, 1.4), 3.0, 1.5)]
    """
    groups: dict[tuple, list[Measurement]] = {}
    for run in runs:
        for m in run.measurements:
            groups.setdefault((m.workload, m.label, m.size, m.device), []).append(m)
    return [
        dataclasses.replace(
            ms[0],
            block_s=tuple(m.median_s for m in ms),
            first_call_s=statistics.median(m.first_call_s for m in ms),
            cores_busy=statistics.median(m.cores_busy for m in ms)
            if all(m.cores_busy is not None for m in ms)
            else None,
        )
        for ms in groups.values()
    ]


def process_gap(measurements: Sequence[Measurement]) -> float:
    """How far apart processes came out for the same thing: over :func:`pooled` measurements,
    the largest ratio of one process's median to another's, less one (0.5: 50 % apart).

    >>> m = Measurement("eager", "call", 1, 10, 2.0, (1.0, 1.5), workload="w")
    >>> process_gap([m, dataclasses.replace(m, block_s=(2.0, 2.2))])
    0.5
    """
    return max(max(m.block_s) / min(m.block_s) for m in measurements) - 1


def run_in_fresh_process(
    workload: str,
    variants: Sequence[str] | None = None,
    *,
    size: int | None = None,
    quick: bool = False,
    device: str = "cpu",
    settings: Mapping[str, str] | None = None,
    limits: bool = True,
    timeout_s: float | None = None,
) -> FreshRun:
    """:func:`run_jobs_in_fresh_process` for one workload."""
    job = Job(workload, tuple(variants or ()), size)
    return run_jobs_in_fresh_process(
        [job], quick=quick, device=device, settings=settings, limits=limits, timeout_s=timeout_s
    )


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
    done = _run_child(command, env, timeout_s, "the fresh process asking TensorFlow's build")
    output = done.stdout + done.stderr
    isa, not_built_for = _ONEDNN_ISA.search(output), _NOT_BUILT_FOR.search(output)
    return {
        "onednn_kernels": isa.group(1).strip() if isa else "",
        "not_compiled_for_elsewhere": not_built_for.group(1).strip() if not_built_for else "",
    }


def _child(spec_path: str, json_path: str) -> int:
    """The fresh process: measure the jobs in ``spec_path``, write the results to
    ``json_path``; bad input ends with one line on stderr and exit status 2."""
    from perfguide.measure import runner
    from perfguide.workloads import WORKLOADS

    spec = json.loads(Path(spec_path).read_text())
    try:
        apply_thread_settings()
        measurements = [
            m
            for job in map(Job.from_json, spec["jobs"])
            for m in runner.run(
                WORKLOADS[job.workload],
                job.variants or None,
                size=job.size,
                quick=spec["quick"],
                blocks=spec["blocks"],
                device=spec["device"],
                settle=job.settle,
            )
        ]
    except (KeyError, ValueError, runner.DeviceError) as error:
        print(f"perfguide: error: {error}", file=sys.stderr)
        return 2
    results.save(Path(json_path), environment.collect(limits=spec["limits"]), measurements)
    return 0


if __name__ == "__main__":
    sys.exit(_child(*sys.argv[1:]))
