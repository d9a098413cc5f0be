"""Drive the workers through a diagnosis: register the function in each, time its forms in
turns (with the machine's peak) in every process, then collect each process's facts and
retracing answers. Needs workers started with ``limits=True``."""

from __future__ import annotations

from perfguide.diagnose.parent.backends import tries_backends, try_backends
from perfguide.diagnose.parent.diagnosis import Assessment
from perfguide.diagnose.parent.evidence import BackendTrial, Evidence
from perfguide.diagnose.parent.findings import assess
from perfguide.diagnose.target import BATCH_WORKLOAD, TRAINING_WORKLOAD, WORKLOAD, Target
from perfguide.diagnose.worker_answers import GraphFacts, Registration, ResidentSeries, Retracing
from perfguide.measure.memory import SAMPLES
from perfguide.processes.pool import Workers
from perfguide.report.verdicts.claims import Faster

#: What each worker is set up with (the reader's code registered), and the probes handed it.
REGISTER = "perfguide.diagnose.worker.forms:register"
FACTS = "perfguide.diagnose.worker.graph_facts:facts"
RETRACING = "perfguide.diagnose.worker.retracing:retracing"
MEMORY = "perfguide.diagnose.worker.memory_series:memory"
#: Seconds of calls each form's memory series may take in each process: enough calls for a
#: slope, never more than a few seconds in all.
MEMORY_BUDGET_S = 0.2


def memory_calls(seconds_per_call: float) -> int:
    """Calls of a form for its memory series: about :data:`MEMORY_BUDGET_S` of them, from one
    call a sample to twenty, in whole samples.

    >>> memory_calls(0.05), memory_calls(2e-3), memory_calls(1e-6)
    (20, 100, 400)
    """
    per_sample = round(MEMORY_BUDGET_S / seconds_per_call / SAMPLES)
    return min(max(per_sample, 1), 20) * SAMPLES


def _settle(forms: list[str], as_written: str) -> list[Faster]:
    """Each other form against the reader's own: the comparisons the runs must decide."""
    return [Faster(form, as_written) for form in forms if form != as_written]


def _facts(workers: Workers, trace: str | None) -> list[GraphFacts]:
    """Each process's facts; the first keeps its profile in ``trace``, if asked."""
    return [
        GraphFacts.from_json(
            workers.call_in(i, FACTS, prepared=REGISTER, trace=trace if i == 0 else None)
        )
        for i in range(len(workers.names))
    ]


def examine(
    target: Target,
    workers: Workers,
    *,
    quick: bool = False,
    settle: bool = True,
    trace: str | None = None,
    backends: bool = False,
) -> Evidence:
    """What the workers measure of ``target``: its forms timed in one interleaved run per
    process (first calls apart; a model's also at another batch size), and each process's
    facts and retracing calls. With ``settle``, a comparison with the reader's own form still
    undecided gets more processes. With ``trace``, the first process writes a profiler trace
    of its graph calls into that folder. With ``backends``, a Keras file is also tried on Keras
    3's backends, in as many fresh processes of their own."""
    registered = Registration.from_json(workers.prepare(REGISTER, spec=target.to_json())[0])
    forms = _settle(registered.variants, registered.as_written) if settle else []
    measurements = workers.run(WORKLOAD, quick=quick, settle=forms, peak=True)
    if registered.training:
        steps = registered.training, registered.training_as_written
        forms = _settle(*steps) if settle else []
        measurements += workers.run(TRAINING_WORKLOAD, quick=quick, settle=forms)
    other_batch = workers.run(BATCH_WORKLOAD, quick=quick) if registered.other_batch else []
    calls = {
        m.label: memory_calls(m.median_s)
        for m in measurements
        if m.label in registered.variants and m.unit == "call"
    }
    return Evidence(
        target=registered.target or target.describe(),
        measurements=measurements,
        other_batch=other_batch,
        registered=registered,
        facts=_facts(workers, trace),
        retracing=[Retracing.from_json(r) for r in workers.call(RETRACING, prepared=REGISTER)],
        memory=[
            ResidentSeries.by_form(run)
            for run in workers.call(MEMORY, prepared=REGISTER, calls=calls)
        ],
        limits=workers.machine_limits,
        backends=_backends(target, workers, quick) if backends else None,
    )


def _backends(target: Target, workers: Workers, quick: bool) -> BackendTrial | None:
    if not tries_backends(target):
        return None
    return try_backends(target, len(workers.names), quick=quick, progress=workers.progress)


def assessment_of(
    target: Target,
    workers: Workers,
    *,
    quick: bool = False,
    settle: bool = True,
    trace: str | None = None,
    backends: bool = False,
) -> tuple[Assessment, Evidence]:
    """:func:`examine` ``target`` and judge what was measured."""
    evidence = examine(target, workers, quick=quick, settle=settle, trace=trace, backends=backends)
    return assess(evidence), evidence
