"""A serving process's first request: the runtime's import, the model's load and the first
answer, each timed apart, in a fresh process that has imported nothing else.

A process that serves a converted model needs only its runtime: LiteRT's interpreter and ONNX
Runtime load without TensorFlow, whose import alone takes seconds. So this module imports no
runtime at its top, and the loaders of :mod:`perfguide.workloads.runtimes` import theirs when
called: the serving workload times the same loaders' answers, :func:`cold_start` runs one of
them in this process, and :func:`cold_server` starts a process of its own to do so
(``python -m perfguide.processes.serving_cold_start WAY MODEL REQUEST``, which prints the
three times as JSON).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from perfguide.workloads.runtimes import LOADERS, RUNTIMES


def cold_start(way: str, model: Path, request: np.ndarray) -> dict[str, Any]:
    """Seconds to import ``way``'s runtime, load ``model`` and answer ``request`` once, in this
    process (which must not have imported the runtime yet to measure its import), the bytes
    the process then holds in memory (its resident set), and whether TensorFlow was imported."""
    start = time.perf_counter()
    __import__(RUNTIMES[way])
    imported = time.perf_counter()
    answer = LOADERS[way](model)
    loaded = time.perf_counter()
    np.asarray(answer(request))
    answered = time.perf_counter()
    return {
        "import_s": imported - start,
        "load_s": loaded - imported,
        "first_answer_s": answered - loaded,
        "memory_bytes": psutil.Process().memory_info().rss,
        "imported_tensorflow": "tensorflow" in sys.modules,
    }


def cold_server(name: str, way: str) -> dict[str, Any]:
    """A fresh process that has imported nothing but NumPy serving the serving chapter's model
    ``name`` one request ``way``: seconds to import the runtime, load the file and answer, its
    memory then, whether it imported TensorFlow, and the file's size in bytes."""
    import tempfile

    from perfguide.processes import fresh
    from perfguide.workloads import serving

    path = serving.saved_file(name, serving.COLD_WAYS[way])
    with tempfile.TemporaryDirectory() as folder:
        request = Path(folder) / "request.npy"
        np.save(request, serving.requests(name, 1))
        command = [sys.executable, "-m", __name__, way, str(path), str(request)]
        done = fresh.run_command(command, fresh.child_environment(), 300, f"a cold {way} server")
    times = json.loads(done.stdout.splitlines()[-1])
    files = path.rglob("*") if path.is_dir() else [path]
    return times | {"file_bytes": sum(f.stat().st_size for f in files if f.is_file())}


def main(argv: list[str]) -> None:
    way, model, request = argv
    print(json.dumps(cold_start(way, Path(model), np.load(request))))


if __name__ == "__main__":
    main(sys.argv[1:])
