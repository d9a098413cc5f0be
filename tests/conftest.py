"""The suite runs in as many pytest-xdist workers as this process may use cores (``-n auto``),
a test module at a time (``--dist loadfile``), so the processes a module's fixture starts once
serve all its tests. No test here judges a speed, so two modules' processes may share the cores.
Each worker keeps TensorFlow to one intra-op thread, since TensorFlow's default, a thread per
core in every worker, makes the workers contend."""

import os
import sys

import pytest

from perfguide.processes.fresh import TELEMETRY_MODULES, TELEMETRY_OFF


@pytest.fixture(autouse=True)
def no_host_probe(monkeypatch):
    """The suite judges intervals on no build's host, whatever the shell holds."""
    from perfguide.measure.calibration import HOST_PROBE_ENV

    monkeypatch.delenv(HOST_PROBE_ENV, raising=False)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    # The cores this process may run on (taskset, a container's cpuset), not the machine's.
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def pytest_configure(config: pytest.Config) -> None:
    # The tests that convert models in this process run no library's telemetry, as the
    # chapters' processes run none.
    for name in TELEMETRY_MODULES:
        sys.modules.setdefault(name, None)
    os.environ.update(TELEMETRY_OFF)
    # Only in a worker of several: the processes the tests start set their own threads.
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
