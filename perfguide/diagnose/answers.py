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
    """``kind`` built from ``fields``; ValueError naming the fields that are unknown to it or
    missing (a worker and a parent out of step)."""
    known = {f.name for f in dataclasses.fields(kind)}
    needed = {
        f.name
        for f in dataclasses.fields(kind)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    unknown, missing = sorted(set(fields) - known), sorted(needed - set(fields))
    if unknown or missing:
        raise ValueError(f"a {kind.__name__} answer with unknown {unknown}, missing {missing}")
    return kind(**fields)


@dataclasses.dataclass(frozen=True)
class LeavesGraph:
    """An op of the graph that leaves it for Python: its type, its name, and the reader's line
    that made it (None where TensorFlow does not record one)."""

    op: str
    name: str
    where: str | None


@dataclasses.dataclass(frozen=True)
class GraphFacts:
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
    #: Where the profiler trace asked for was written (``path``), or why not (``error``).
    trace: dict[str, str] | None = None

    @classmethod
    def from_json(cls, fields: Mapping[str, Any]) -> GraphFacts:
        outside = tuple(checked(LeavesGraph, op) for op in fields.get("outside_graph", ()))
        return checked(cls, {**fields, "outside_graph": outside})

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
class Retracing:
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
        return checked(cls, {**fields, "varied": tuple(fields.get("varied", ())), **calls})


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
        return {
            form: checked(cls, {**fields, "series": tuple(fields["series"])})
            for form, fields in answer.items()
        }
