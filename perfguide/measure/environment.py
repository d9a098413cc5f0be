"""What machine and software a measurement was taken on.

Numbers without their environment cannot be compared; every results file carries this record.

>>> record = collect()
>>> record["logical_cores"] >= 1 and record["tensorflow"].startswith("2.")
True
>>> ("TensorFlow", record["tensorflow"]) in as_rows(record)
True
"""

from __future__ import annotations

import datetime
import os
import platform
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from perfguide.measure import calibration
from perfguide.measure.cpu import cpu_model, cpu_vector_flags, usable_cores

# Terraform shares the TF_ prefix; its variables say nothing about TensorFlow.
_TERRAFORM_PREFIXES = ("TF_CLI_", "TF_VAR_", "TF_LOG", "TF_PLUGIN_", "TF_REGISTRY_", "TF_DATA_DIR")


def gpu_names() -> list[str]:
    """Names of the GPUs TensorFlow can see (empty on a CPU-only machine)."""
    import tensorflow as tf

    return [gpu.name for gpu in tf.config.list_physical_devices("GPU")]


def is_setting(name: str, prefixes: tuple[str, ...]) -> bool:
    """Whether the variable ``name`` starts with one of ``prefixes`` and is not Terraform's.

    >>> is_setting("TF_ENABLE_ONEDNN_OPTS", ("TF_",)), is_setting("TF_CLI_ARGS", ("TF_",))
    (True, False)
    """
    return name.startswith(prefixes) and not name.startswith(_TERRAFORM_PREFIXES)


def variables_with_prefixes(prefixes: tuple[str, ...]) -> dict[str, str]:
    """The environment variables set whose names start with one of ``prefixes``, minus
    Terraform's (``TF_CLI_*``…), sorted by name."""
    return {k: v for k, v in sorted(os.environ.items()) if is_setting(k, prefixes)}


def tensorflow_variables() -> dict[str, str]:
    """The ``TF_*`` and ``XLA_*`` environment variables set, minus Terraform's (``TF_CLI_*``…)."""
    return variables_with_prefixes(("TF_", "XLA_"))


def onednn_enabled() -> bool:
    """Whether TensorFlow's oneDNN optimizations are on, as TensorFlow itself reports it (it
    reads ``TF_ENABLE_ONEDNN_OPTS`` once, when it is imported)."""
    from tensorflow.python.util import _pywrap_util_port

    return bool(_pywrap_util_port.IsMklEnabled())


def keras_behind_tf_keras() -> str:
    """The version of the Keras that ``tf.keras`` is: Keras 3, or Keras 2 (``tf_keras``) when
    ``TF_USE_LEGACY_KERAS=1`` was set before TensorFlow was imported."""
    import tensorflow as tf

    try:
        keras = tf.keras
    except ImportError as error:  # legacy Keras asked for, but tf_keras is not installed
        return f"none ({error})"
    # Keras 2's public API module has no version of its own: its package has.
    if keras.__name__.startswith("tf_keras"):
        import tf_keras

        return f"{tf_keras.__version__} (tf_keras)"
    return keras.__version__


#: Thread pools a process sizes through ``tf.config.threading`` before any op runs
#: (:func:`apply_thread_settings`). TensorFlow honours ``TF_NUM_INTRAOP_THREADS`` too, but no
#: API reports what it did; sizes set through these show in ``tf.config.threading``'s getters,
#: hence in the environment record.
THREAD_VARIABLES = {
    "PERFGUIDE_INTRA_OP_THREADS": "set_intra_op_parallelism_threads",
    "PERFGUIDE_INTER_OP_THREADS": "set_inter_op_parallelism_threads",
}
#: The variables of settings a process reads once (at import, or when its runtime starts),
#: reported in every environment record: only a fresh process measures under another value.
PROCESS_VARIABLES = (
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "TF_USE_LEGACY_KERAS",
    "XLA_FLAGS",
    *THREAD_VARIABLES,
)


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


#: Names the folder where the processes of a run keep what they share (converted models, say):
#: the temporary folder of the process that started them, which a fresh process's own
#: ``TMPDIR`` (:func:`perfguide.processes.fresh.own_scratch`) would otherwise hide from it.
SHARED_TMPDIR_ENV = "PERFGUIDE_SHARED_TMPDIR"


def shared_temporary_folder() -> Path:
    """The folder :data:`SHARED_TMPDIR_ENV` names, else this process's temporary folder."""
    return Path(os.environ.get(SHARED_TMPDIR_ENV) or tempfile.gettempdir())


#: Set to 1, every run is a quick one: one fresh process a workload, short blocks, no extra
#: processes for undecided comparisons; its numbers are rough, and say so (a quick docs build, a
#: chapter's script run for a first look).
QUICK_ENV = "PERFGUIDE_QUICK"


def quick_everywhere() -> bool:
    """Whether :data:`QUICK_ENV` asks for quick runs; ValueError for a value other than 0 or 1."""
    value = os.environ.get(QUICK_ENV, "")
    if value not in ("", "0", "1"):
        raise ValueError(f"{QUICK_ENV}={value!r}: set it to 1 for quick, rough runs, or 0")
    return value == "1"


def processes_for(processes: int) -> int:
    """``processes``, or one in a quick run (:data:`QUICK_ENV`)."""
    return 1 if quick_everywhere() else processes


def process_settings() -> dict[str, str]:
    """The variables of the settings only a fresh process picks up, as this process saw them
    (``unset`` for those not set)."""
    return {name: os.environ.get(name, "unset") for name in PROCESS_VARIABLES}


def collect() -> dict[str, Any]:
    """The environment record: software versions, CPU, GPUs, TensorFlow threading and the other
    settings read once per process (as this process saw them), and the date. (What the machine
    can do, measured, is :func:`perfguide.measure.limits.record`'s to add.)"""
    import keras
    import tensorflow as tf

    threading = tf.config.threading
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "keras_backend": keras.backend.backend(),
        "tf_keras": keras_behind_tf_keras(),
        "tensorflow_build": {k: str(v) for k, v in tf.sysconfig.get_build_info().items()},
        "cpu_model": cpu_model(),
        "logical_cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "cpu_vector_flags": cpu_vector_flags(),
        "gpus": gpu_names(),
        # What tf.config.threading holds: 0 means "TensorFlow picks". TensorFlow honours
        # TF_NUM_INTRAOP_THREADS and TF_NUM_INTEROP_THREADS when it sizes its pools, yet these
        # still say 0 under them (no API reports the pools' sizes), so the record also keeps
        # the variables (process_settings) and each measurement the cores it kept busy. Pools
        # sized through PERFGUIDE_INTRA_OP_THREADS/PERFGUIDE_INTER_OP_THREADS show up here.
        "tf_intra_op_threads": threading.get_intra_op_parallelism_threads(),
        "tf_inter_op_threads": threading.get_inter_op_parallelism_threads(),
        "onednn_enabled": onednn_enabled(),
        "process_settings": process_settings(),
        "tf_env": tensorflow_variables(),
        "calibration": calibration.current().to_dict(),
        "quick": quick_everywhere(),
    }


_LABELS = {
    "date": "Date (UTC)",
    "platform": "Platform",
    "python": "Python",
    "numpy": "NumPy",
    "tensorflow": "TensorFlow",
    "keras": "Keras",
    "keras_backend": "Keras's backend",
    "tf_keras": "Keras behind tf.keras",
    "tensorflow_build": "TensorFlow build",
    "cpu_model": "CPU",
    "logical_cores": "Logical cores",
    "usable_cores": "Usable cores (affinity)",
    "cpu_vector_flags": "CPU vector extensions",
    "gpus": "Visible GPUs",
    "tf_intra_op_threads": "TF intra-op threads (0 = default)",
    "tf_inter_op_threads": "TF inter-op threads (0 = default)",
    "onednn_enabled": "oneDNN optimizations on (as TensorFlow reports it)",
    "process_settings": "Settings read once per process (variables)",
    "tf_env": "TF_*/XLA_* variables",
    "machine_limits": "Measured limits",
    "timer_floor_s": "Timer's own cost per call (a call that does nothing)",
    "calibration": "Intervals calibrated by reruns",
    "quick": f"A quick run ({QUICK_ENV}=1): one process a workload, rough numbers",
}


def _cache_rate(limits: dict[str, Any]) -> str:
    if limits.get("cache_bandwidth") is None:  # a record from before it was measured
        return ""
    how = limits["how"]["cache_bandwidth"]
    return f"cache copy rate {limits['cache_bandwidth'] / 1e9:.1f} GB/s ({how}); "


def _readable(key: str, value: Any) -> str:
    if key == "machine_limits":
        return (
            f"memory bandwidth {value['memory_bandwidth'] / 1e9:.1f} GB/s "
            f"({value['how']['memory_bandwidth']}); "
            + _cache_rate(value)
            + "peak float32 arithmetic "
            f"{value['peak_flops'] / 1e9:.0f} GFLOP/s ({value['how']['peak_flops']})"
        )
    if key == "calibration":
        return calibration.Calibration.from_dict(value).describe()
    if key == "timer_floor_s":
        return f"{value * 1e9:.0f} ns"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def as_rows(record: dict[str, Any]) -> list[tuple[str, str]]:
    """The record as (label, readable value) pairs, for tables."""
    return [(_LABELS.get(key, key), _readable(key, value)) for key, value in record.items()]
