"""Drive the workers through a diagnosis: register the function in each, time its forms in
turns (with the machine's peak) in every process, then collect each process's facts and
retracing answers. Needs workers started with ``limits=True``."""

from __future__ import annotations

from perfguide.diagnose.findings import Diagnosis, Evidence, diagnose
from perfguide.diagnose.target import WORKLOAD, Target
from perfguide.processes.pool import Workers
from perfguide.report.claims import Faster

PROBE = "perfguide.diagnose.probe"


def examine(target: Target, workers: Workers, *, quick: bool = False) -> Evidence:
    """What the workers measure of ``target``: its forms timed in one interleaved run per
    process (first calls apart), and each process's facts and retracing calls."""
    registered = workers.call(f"{PROBE}:register", spec=target.to_json())[0]
    as_written = registered["as_written"]
    settle = [Faster(form, as_written) for form in registered["variants"] if form != as_written]
    measurements = workers.run(WORKLOAD, quick=quick, settle=settle, peak=True)
    return Evidence(
        target=target.describe(),
        measurements=measurements,
        registered=registered,
        facts=workers.call(f"{PROBE}:facts"),
        retracing=workers.call(f"{PROBE}:retracing"),
        limits=workers.machine_limits,
    )


def diagnosis_of(
    target: Target, workers: Workers, *, quick: bool = False
) -> tuple[Diagnosis, Evidence]:
    """:func:`examine` ``target`` and judge what was measured."""
    evidence = examine(target, workers, quick=quick)
    return diagnose(evidence), evidence
