"""What a worker answers the parent, as typed records: a worker's function returns one, it
crosses the pipe as JSON (its fields), and the parent reads it back with ``from_json``, which
refuses a record with a field it does not know or without one it needs. Both sides import this
module; it needs no TensorFlow.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

Record = TypeVar("Record")


def checked(kind: type[Record], fields: Mapping[str, Any]) -> Record:
    """``kind`` built from ``fields`` (a worker's answer, or the target the parent sends it);
    ValueError naming the fields that are unknown to it or missing (a worker and a parent out
    of step)."""
    known = {f.name for f in dataclasses.fields(kind)}
    needed = {
        f.name
        for f in dataclasses.fields(kind)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    unknown, missing = sorted(set(fields) - known), sorted(needed - set(fields))
    if unknown or missing:
        raise ValueError(f"a {kind.__name__} answer with unknown {unknown}, missing {missing}")
    # JSON has lists only; the records hold tuples, so that they compare and hash.
    return kind(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


class Answer:
    """A record a worker answers with; :meth:`from_json` reads its fields back, checked."""

    @classmethod
    def from_json(cls, fields: Mapping[str, Any]) -> Any:
        return checked(cls, fields)


@dataclasses.dataclass(frozen=True)
class LeavesGraph:
    """An op of the graph that leaves it for Python: its type, its name, and the reader's line
    that made it (None where TensorFlow does not record one)."""

    op: str
    name: str
    where: str | None


@dataclasses.dataclass(frozen=True)
class TraceFile:
    """Where the profiler trace asked for was written (``path``), or why it was not
    (``error``)."""

    path: str | None = None
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class GraphFacts(Answer):
    """What one worker found of the registered function's graph
    (:func:`perfguide.diagnose.worker.graph_facts.facts`). Counts are None where they could not
    be taken (no graph, or a graph that calls other functions)."""

    #: The graph's ops that leave it for Python.
    outside_graph: tuple[LeavesGraph, ...] = ()
    #: A small eager op's time here.
    eager_op_s: float | None = None
    #: Why the function cannot be traced, in a reader's words.
    graph_error: str | None = None
    #: Ops a call runs: the graph's, or a profile's of eager calls where there is no graph.
    ops: int | None = None
    #: Those ops by type, most common first.
    op_types: dict[str, int] | None = None
    flops: int | None = None
    #: Every op's inputs and outputs, and what a call takes in and gives back.
    bytes: int | None = None
    io_bytes: int | None = None
    #: From a profile: the ops' own time a call, and the time of those that leave the graph.
    op_time_s: float | None = None
    outside_graph_s: float | None = None
    prints_only_when_tracing: bool = False
    #: Where the profiler trace asked for was written, or why not; None where none was asked.
    trace: TraceFile | None = None

    @classmethod
    def from_json(cls, fields: Mapping[str, Any]) -> GraphFacts:
        outside = tuple(checked(LeavesGraph, op) for op in fields.get("outside_graph", ()))
        trace = fields.get("trace") and checked(TraceFile, fields["trace"])
        return checked(cls, {**fields, "outside_graph": outside, "trace": trace or None})

    @classmethod
    def pooled(cls, facts: Sequence[GraphFacts]) -> GraphFacts:
        """Several processes' facts as one: each time the median over the processes that took
        it (counts are the same in each), a print while tracing if any saw one, the rest the
        first's (the first process keeps the trace)."""

        def median(name: str) -> float | None:
            values = [getattr(f, name) for f in facts if getattr(f, name) is not None]
            return statistics.median(values) if values else None

        if not facts:
            return cls()
        timed = ("eager_op_s", "op_time_s", "outside_graph_s", "ops", "flops", "bytes", "io_bytes")
        first = facts[0]
        return dataclasses.replace(
            first,
            graph_error=next((f.graph_error for f in facts if f.graph_error), None),
            prints_only_when_tracing=any(f.prints_only_when_tracing for f in facts),
            **{name: median(name) for name in timed},
        )


@dataclasses.dataclass(frozen=True)
class TracedCall:
    """One call of a fresh ``tf.function``: its seconds, whether it traced, and the bytes the
    process held after it beyond before it (what a trace keeps; None where not read)."""

    seconds: float
    traced: bool
    bytes: int | None = None


@dataclasses.dataclass(frozen=True)
class Retracing(Answer):
    """The registered function's retracing, as one worker probed it
    (:func:`perfguide.diagnose.worker.retracing.retracing`): the varied inputs (what changed in
    each), the calls with the original and then the varied inputs, a steady call's seconds, and
    the same calls with the usual fixes. ``error`` says why the function could not be probed
    (nothing varied then), ``fixed_error`` why the fixes failed."""

    varied: tuple[str, ...] = ()
    calls: tuple[TracedCall, ...] = ()
    steady_s: float | None = None
    fixed_calls: tuple[TracedCall, ...] = ()
    error: str | None = None
    fixed_error: str | None = None

    @classmethod
    def from_json(cls, fields: Mapping[str, Any]) -> Retracing:
        calls = {
            name: tuple(checked(TracedCall, call) for call in fields.get(name, ()))
            for name in ("calls", "fixed_calls")
        }
        return checked(cls, {**fields, **calls})


@dataclasses.dataclass(frozen=True)
class ResidentSeries:
    """One form's resident set, sampled as a worker called it many times in a row
    (:func:`perfguide.diagnose.worker.memory_series.memory`): the samples, in bytes, and the
    calls between two samples."""

    series: tuple[int, ...]
    every: int

    @classmethod
    def by_form(cls, answer: Mapping[str, Mapping[str, Any]]) -> dict[str, ResidentSeries]:
        """A worker's answer: each form's series."""
        return {form: checked(cls, fields) for form, fields in answer.items()}


@dataclasses.dataclass(frozen=True)
class Registration(Answer):
    """What a worker registered of the reader's code
    (:func:`perfguide.diagnose.worker.forms.register`): its forms that compute what the reader's
    own form computes (``variants``), why each other form was not registered (``problems``), the
    form the code runs as written, whether it is a ``"function"`` or a ``"model"`` (and a model's
    file ``format``), and how many calls its random results were checked over (0: it is not
    random). A model adds what it was called as (``target``), how far each serving runtime's
    answers lie from its own (``differences``, a share of the largest), its batch and the other
    batch its requests are timed at, and, where it trains, its training forms, the one ``fit``
    runs, the steps of an epoch and its gradients' bytes a step."""

    variants: tuple[str, ...]
    problems: dict[str, str]
    as_written: str
    kind: str = "function"
    format: str = "function"
    random: int = 0
    target: str | None = None
    differences: dict[str, float] = dataclasses.field(default_factory=dict)
    batch: int | None = None
    other_batch: int | None = None
    training: tuple[str, ...] = ()
    training_as_written: str | None = None
    epoch_steps: int | None = None
    gradient_bytes: int | None = None


@dataclasses.dataclass(frozen=True)
class OnBackend(Answer):
    """What a worker of another Keras backend made of a saved Keras model
    (:func:`perfguide.diagnose.worker.backend_forms.register`): its backend, the forms it
    registered, the ``.npz`` file it wrote its predictions of the reader's batch into and the
    precision ``predict`` computed in; or why the model did not run there."""

    backend: str
    forms: tuple[str, ...] = ()
    outputs: str | None = None
    precision: str | None = None
    why: str | None = None
