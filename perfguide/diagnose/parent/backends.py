"""A saved Keras model tried on Keras 3's backends: the Keras-backends chapter's question asked
of the reader's own model. A Keras file is backend-neutral, so each installed backend loads it
in fresh processes of its own, started with its ``KERAS_BACKEND``
(:mod:`~perfguide.diagnose.worker.backend_forms`); each backend's predictions of the reader's batch
are judged against Keras 3 on TensorFlow's (:mod:`~perfguide.diagnose.agreement`), and the
backends that agree time ``predict`` (and ``fit``, where they train), their processes taking
turns (:func:`~perfguide.processes.pool.take_turns`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Callable

import numpy as np

from perfguide.diagnose.agreement import difference
from perfguide.diagnose.parent.evidence import BackendTrial, backend_label
from perfguide.diagnose.target import BACKEND_FORMS, Target
from perfguide.diagnose.worker_answers import OnBackend
from perfguide.measure.measurement import Measurement
from perfguide.measure.timer import no_progress
from perfguide.processes.pool import Workers, job_of, take_turns
from perfguide.workloads.keras_processes import BACKENDS, missing_backends

REGISTER = "perfguide.diagnose.worker.backend_forms:register"
#: The backends a model is tried on, TensorFlow first: the others are judged against it.
TRIED = ("tensorflow", "jax", "openvino")


def tries_backends(target: Target) -> bool:
    """Whether ``target`` is a Keras file, which every backend loads."""
    return target.kind == "keras"


def _read(path: str) -> list[np.ndarray]:
    with np.load(path) as arrays:
        return [arrays[f"arr_{i}"] for i in range(len(arrays.files))]


def _judged(answers: dict[str, OnBackend]) -> dict[str, str]:
    """Why each backend that answered will not be timed: it did not run the model, or its
    predictions are not TensorFlow's within float32 rounding."""
    not_run = {b: f"the model did not run: {a.why}" for b, a in answers.items() if a.why}
    if "tensorflow" in not_run:
        return not_run | dict.fromkeys(answers.keys() - not_run, "nothing to check it against")
    expected = _read(answers["tensorflow"].outputs)
    for backend, answer in answers.items():
        if backend not in not_run and (why := difference(expected, _read(answer.outputs))):
            computed = answer.precision
            if computed != answers["tensorflow"].precision:
                why += f"; its predict computed in {computed}"
            not_run[backend] = f"predicts otherwise than Keras 3 on TensorFlow: {why}"
    return not_run


def _timed(
    groups: dict[str, Workers], answers: dict[str, OnBackend], quick: bool
) -> list[Measurement]:
    """Each workload's forms on every backend that registered them, where TensorFlow and
    another did."""
    measured = []
    for workload in dict.fromkeys(BACKEND_FORMS.values()):
        forms = {b: [f for f in answers[b].forms if BACKEND_FORMS[f] == workload] for b in groups}
        jobs = {b: job_of(workload, forms[b], quick=quick) for b in groups}
        timing = {b: groups[b] for b, job in jobs.items() if job.variants}
        if "tensorflow" not in timing or len(timing) < 2:
            continue
        measured += [
            dataclasses.replace(m, label=backend_label(b, m.label))
            for b, ms in take_turns(timing, {b: jobs[b] for b in timing}).items()
            for m in ms
        ]
    return measured


def try_backends(
    target: Target,
    processes: int,
    *,
    quick: bool = False,
    progress: Callable[[str], None] = no_progress,
) -> BackendTrial:
    """``target`` (a Keras file) loaded, checked and timed on each installed backend of
    :data:`TRIED`, each in ``processes`` fresh processes of its own (``quick``: shorter
    blocks)."""
    missing = {b: why for b, why in missing_backends().items() if b in TRIED}
    not_run = {b: f"not installed: {why}" for b, why in missing.items()}
    installed = [b for b in TRIED if b not in missing]
    with contextlib.ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="perfguide-backends-"))
        groups = {
            b: stack.enter_context(Workers(processes, settings=BACKENDS[b], progress=progress))
            for b in installed
        }
        answers = {
            b: OnBackend.from_json(
                group.prepare(REGISTER, spec=target.to_json(), outputs=f"{folder}/{b}.npz")[0]
            )
            for b, group in groups.items()
        }
        not_run |= _judged(answers)
        running = {b: g for b, g in groups.items() if b not in not_run}
        measured = _timed(running, answers, quick)
    agreed = [b for b in installed if b not in not_run]
    return BackendTrial(measured, {b: not_run[b] for b in TRIED if b in not_run}, agreed)
