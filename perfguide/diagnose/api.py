"""``perfguide.diagnose(target, *example_args)``: the diagnosis from Python or a notebook, on
the same code path as ``perfguide diagnose`` (see :mod:`perfguide.diagnose`).

The target is a function, a Keras model or a path the command takes. A function reaches the
fresh worker processes by its file where a module holds it, else (a notebook cell's, or
``__main__``'s) pickled with ``cloudpickle``, with the globals it uses; a model is saved to a
``.keras`` file. The example arguments go to the workers as they are (in a file they read: see
:mod:`perfguide.diagnose.examples`): anything a ``tf.function`` takes, such as tensors of
strings, ragged and sparse tensors, and tuples, lists and dicts of them; a dict gives a
model's inputs by name.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfguide.diagnose import examples
from perfguide.diagnose.parent import projection as projections
from perfguide.diagnose.parent import render
from perfguide.diagnose.parent.diagnosis import Assessment
from perfguide.diagnose.parent.evidence import Evidence
from perfguide.diagnose.parent.examine import assessment_of
from perfguide.diagnose.parent.projection import ModelProjection
from perfguide.diagnose.target import PICKLED_SUFFIX, Target, TargetError
from perfguide.measure.timer import no_progress
from perfguide.processes.pool import PROCESSES, Workers
from perfguide.report.publishing import results
from perfguide.report.publishing.answers import Recommendation


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    """What diagnose measured and found: printed as text, shown inline in Jupyter as HTML,
    written as a results file (:meth:`to_json`), and read as data (:attr:`advice`)."""

    assessment: Assessment
    evidence: Evidence
    environment: dict[str, Any]
    projection: ModelProjection | None = None
    docs_url: str = ""

    @property
    def short_answer(self) -> str:
        return render.short_answer(self.assessment)

    @property
    def advice(self) -> list[Recommendation]:
        """The changes measured, advice first (see
        :attr:`~perfguide.report.publishing.answers.Recommendation.advised`)."""
        return self.assessment.advice

    def __str__(self) -> str:
        return render.text(self.assessment, self.evidence, self.docs_url, self.projection)

    def _repr_html_(self) -> str:
        return render.html_fragment(
            self.assessment, self.evidence, self.docs_url, self.projection, heading="h4"
        )

    def to_json(self) -> dict[str, Any]:
        """The results file's contents: the measurements, with the diagnosis riding along."""
        return render.results_document(
            self.environment, self.assessment, self.evidence, self.projection
        )

    def save_json(self, path: str | Path) -> None:
        """Write :meth:`to_json` to ``path`` (atomically)."""
        results.write_json(Path(path), self.to_json())

    def save_html(self, path: str | Path) -> None:
        """Write the one-page report to ``path`` (atomically)."""
        page = render.html_page(self.assessment, self.evidence, self.docs_url, self.projection)
        results.write_atomically(Path(path), page)


def run(
    target: Target,
    *,
    quick: bool = False,
    processes: int = PROCESSES,
    workers: int = projections.WORKERS,
    network_gbps: float = projections.NETWORK_GBPS,
    docs_url: str | None = None,
    trace: str | Path | None = None,
    backends: bool = True,
    progress: Callable[[str], None] = no_progress,
    verbose: bool = False,
) -> Diagnosis:
    """Diagnose ``target`` in ``processes`` fresh processes (``quick``: shorter blocks, and no
    more processes for undecided comparisons); a model that trains projected on up to
    ``workers`` workers over ``network_gbps``; with ``trace``, a profiler trace written into
    that folder; with ``backends``, a Keras file also tried on Keras 3's other backends."""
    logdir = str(Path(trace).resolve()) if trace is not None else None
    with Workers(processes, limits=True, progress=progress, echo_stderr=verbose) as started:
        assessment, evidence = assessment_of(
            target, started, quick=quick, settle=not quick, trace=logdir, backends=backends
        )
        environment = started.environment
    projected = projections.of(evidence, workers, network_gbps)
    return Diagnosis(assessment, evidence, environment, projected, render.docs_url(docs_url))


def diagnose(target: Any, *example_args: Any, **options: Any) -> Diagnosis:
    """Diagnose a function, a Keras model or a saved model's path, called with
    ``example_args``: see :func:`run` for the ``options``.
    :class:`~perfguide.diagnose.target.TargetError` says in one line what cannot be
    diagnosed."""
    args = tuple(
        examples.portable(arg, f"example argument {i + 1}") for i, arg in enumerate(example_args)
    )
    with tempfile.TemporaryDirectory(prefix="perfguide-target-") as folder:
        path = Path(folder) / "examples.pkl"
        described = examples.write(args, path)
        found = Target(reference(target, Path(folder)), examples=str(path), described=described)
        return run(found, **options)


def reference(target: Any, folder: Path) -> str:
    """How the workers find ``target``: its path, its module's file, or a file in ``folder``
    it is saved or pickled to."""
    if isinstance(target, (str, Path)):
        return str(target)
    if hasattr(target, "save") and hasattr(target, "predict"):  # a Keras model
        path = folder / f"{target.name or 'model'}.keras"
        target.save(path)
        return str(path)
    if not callable(target):
        raise TargetError(f"cannot diagnose a {type(target).__name__}: give a function or a model")
    return module_reference(target) or pickled(target, folder)


def module_reference(function: Any) -> str | None:
    """``file.py:name`` where a module's file holds ``function`` under its name (never
    ``__main__``, which a worker importing it would run again)."""
    module = sys.modules.get(getattr(function, "__module__", None) or "")
    name = getattr(function, "__name__", "")
    file = getattr(module, "__file__", None)
    if module is None or module.__name__ == "__main__" or not file or not file.endswith(".py"):
        return None
    return f"{file}:{name}" if getattr(module, name, None) is function else None


def pickled(function: Any, folder: Path) -> str:
    """``function`` pickled by value into ``folder`` with the globals it uses; TargetError
    naming what to move into a module where it cannot be."""
    import cloudpickle

    name = getattr(function, "__name__", "function")
    try:
        data = cloudpickle.dumps(function)
    except Exception as error:  # whatever it holds that cannot travel: the reader's to move
        raise TargetError(
            f"{name} cannot be sent to fresh processes ({type(error).__name__}: {error}): move "
            f"it and what it uses into a module, and pass it as module:{name}"
        ) from None
    path = folder / f"{name if name.isidentifier() else 'function'}{PICKLED_SUFFIX}"
    path.write_bytes(data)
    return str(path)
