"""What ``perfguide diagnose`` measured on the reader's code: the workers' measurements and
facts (:class:`Evidence`), and a saved Keras model's trial on Keras 3's backends
(:class:`BackendTrial`). :mod:`~perfguide.diagnose.parent.findings` makes the diagnosis
(:mod:`~perfguide.diagnose.parent.diagnosis`) from it.
"""

from __future__ import annotations

import dataclasses
import functools

from perfguide.diagnose.worker_answers import (
    GraphFacts,
    Registration,
    ResidentSeries,
    Retracing,
    TraceFile,
)
from perfguide.measure.limits import PEAK, MachineLimits
from perfguide.measure.measurement import Measurement


@dataclasses.dataclass(frozen=True)
class BackendTrial:
    """A saved Keras model on Keras 3's backends (:mod:`~perfguide.diagnose.parent.backends`): each
    backend's ``predict`` (and ``fit``) timed in processes of its own, labelled by
    :func:`backend_label`; why each backend that was not timed was not (not installed, did not
    load or run the model, or predicts otherwise than TensorFlow), by backend; and the backends
    whose predictions agree with TensorFlow's (TensorFlow first)."""

    measurements: list[Measurement]
    not_run: dict[str, str]
    agreed: list[str]


def backend_label(backend: str, form: str) -> str:
    """A form timed on a backend, as its measurement is labelled ("jax-predict")."""
    return f"{backend}-{form}"


def backend_and_form(label: str) -> tuple[str, str]:
    """The backend and the form a :func:`backend_label` names (backends' names hold no "-").

    >>> backend_and_form(backend_label("jax", "predict"))
    ('jax', 'predict')
    """
    backend, form = label.split("-", 1)
    return backend, form


@dataclasses.dataclass(frozen=True)
class Evidence:
    """Everything the workers measured: the forms' :class:`Measurement` s (with the peak's),
    the registration, and each process's facts and retracing answers."""

    target: str
    measurements: list[Measurement]
    registered: Registration
    facts: list[GraphFacts]
    retracing: list[Retracing]
    limits: MachineLimits
    #: A model's inference forms timed per request at another batch size than the reader's
    #: (kept apart: their labels are the forms' own).
    other_batch: list[Measurement] = dataclasses.field(default_factory=list)
    #: Each process's resident series of each form called many times after its timing.
    memory: list[dict[str, ResidentSeries]] = dataclasses.field(default_factory=list)
    #: A Keras file's model tried on Keras 3's backends, where it was.
    backends: BackendTrial | None = None

    def form(self, label: str) -> Measurement | None:
        return next((m for m in self.measurements if m.label == label), None)

    @property
    def forms(self) -> list[Measurement]:
        return [m for m in self.measurements if m.label != PEAK]

    @property
    def calls(self) -> list[Measurement]:
        """The forms timed per call (a model's inference, not its training steps)."""
        return [m for m in self.forms if m.unit == "call"]

    @property
    def fastest(self) -> Measurement:
        """The fastest form per call."""
        return min(self.calls, key=lambda m: m.median_s)

    @property
    def baselines(self) -> dict[str, str]:
        """The form the reader's code runs as written, per unit (call, training step)."""
        registered = self.registered
        return {"call": registered.as_written, "step": registered.training_as_written}

    @functools.cached_property
    def graph(self) -> GraphFacts:
        """The processes' facts as one
        (:meth:`~perfguide.diagnose.worker_answers.GraphFacts.pooled`): each time their median,
        the trace the first process kept."""
        return GraphFacts.pooled(self.facts)

    @property
    def graph_error(self) -> str | None:
        """Why the function cannot be traced, if it cannot."""
        return self.graph.graph_error

    @property
    def trace(self) -> TraceFile | None:
        """Where the profiler trace asked for was written, or why none was: the first process
        keeps it."""
        return self.graph.trace
