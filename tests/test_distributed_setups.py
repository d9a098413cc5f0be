"""The distributed chapter's setups: what each cluster times, how its measurements are named,
and a failed cluster reported in one line while the others are kept. Clusters are faked here;
tests/test_distributed.py starts real ones."""

import pytest

from perfguide.measure.measurement import Measurement
from perfguide.processes import distributed_setups
from perfguide.processes.fresh import ChildError


def measurement(label, size, unit="example", workload=""):
    return Measurement(label, unit, 1, 1, 0.0, (1e-3,) * 5, workload=workload, size=size)


def test_a_setup_names_its_strategys_measurements_and_keeps_the_all_reduce_sizes(monkeypatch):
    jobs = []

    def fake(tasks, job, runs, timeout_s, settings, name):
        jobs.append((tasks, job, runs, settings, name))
        return [
            measurement(variant, t["size"]) for t in job["timings"] for variant in t["variants"]
        ]

    monkeypatch.setattr(distributed_setups, "time_in_clusters", fake)
    timings = [
        distributed_setups.Timing("distributed-step", 128),
        distributed_setups.Timing("distributed-allreduce", 2, ("4 KiB", "1 MiB")),
    ]
    measured = distributed_setups.time_setup(distributed_setups.TWO_WORKERS_PINNED, timings, runs=3)
    assert [m.label for m in measured] == ["two workers, pinned", "4 KiB", "1 MiB"]
    ((tasks, job, runs, settings, name),) = jobs
    assert job["strategy"] == "multi-worker" and runs == 3 and name == "two workers, pinned"
    assert job["timings"][0]["variants"] == ["multi-worker"]
    assert [t.core for t in tasks] == [0, 1] and settings == {}


def test_the_setups_are_the_ones_the_chapter_names():
    assert (
        distributed_setups.TWO_WORKERS_PINNED.workers == 2
        and distributed_setups.ONE_CORE.workers == 1
    )
    assert [t.core for t in distributed_setups.TWO_WORKERS.tasks] == [None, None]
    ps = distributed_setups.PARAMETER_SERVER
    assert [(t.role, t.serves) for t in ps.tasks] == [
        ("chief", False),
        ("ps", True),
        ("worker", True),
        ("worker", True),
    ]
    assert distributed_setups.TWO_WORKERS_KERAS_2.settings == {"TF_USE_LEGACY_KERAS": "1"}
    assert len({s.name for s in distributed_setups.PLAN}) == len(distributed_setups.PLAN)


@pytest.mark.parametrize("quick", [False, True])
def test_measure_keeps_what_ran_and_says_in_one_line_what_failed(monkeypatch, quick):
    asked = {}

    def fake(setup, timings, runs):
        asked[setup] = runs
        if setup is distributed_setups.PARAMETER_SERVER:
            raise ChildError("ps 0 of the cluster failed: it stopped serving")
        return [measurement(setup.name, t.size) for t in timings]

    monkeypatch.setattr(distributed_setups, "time_setup", fake)
    measured, failures = distributed_setups.measure(quick=quick)
    assert failures == {"parameter server": "ps 0 of the cluster failed: it stopped serving"}
    assert measured[distributed_setups.PARAMETER_SERVER] == []
    assert all(
        measured[s] for s in distributed_setups.PLAN if s is not distributed_setups.PARAMETER_SERVER
    )
    assert asked == {s: 1 if quick else runs for s, (_, runs) in distributed_setups.PLAN.items()}


def test_fit_is_tried_under_each_setup_and_a_failure_is_one_short_line(monkeypatch):
    long_reason = "worker 0 of the cluster failed: ValueError: Attempt to convert (PerReplica:{" + (
        "0: <tf.Tensor ...>, " * 20
    )
    started = []

    def fake(setup, timings, runs):
        started.append(setup)
        (timing,) = timings
        if setup is distributed_setups.TWO_WORKERS_PINNED:
            raise ChildError(long_reason)
        return [measurement(setup.name, timing.size)]

    monkeypatch.setattr(distributed_setups, "time_setup", fake)
    # The mirrored fit comes from its setup's cluster, which timed it after the step.
    mirrored = distributed_setups.MIRRORED
    fit = measurement(mirrored.name, distributed_setups.GLOBAL, workload="distributed-fit")
    measured = {mirrored: [measurement(mirrored.name, distributed_setups.GLOBAL), fit]}
    outcomes = {o.setup: o for o in distributed_setups.try_fit(measured, {})}
    assert set(outcomes) == set(distributed_setups.FIT_PLAN)
    assert started == [
        distributed_setups.TWO_WORKERS_PINNED,
        distributed_setups.TWO_WORKERS_KERAS_2,
    ]
    failed = outcomes[distributed_setups.TWO_WORKERS_PINNED]
    assert failed.measured is None and failed.reason.endswith("…")
    assert len(failed.reason) == distributed_setups.REASON_CHARS + 1 and "\n" not in failed.reason
    assert outcomes[distributed_setups.TWO_WORKERS_KERAS_2].keras == "Keras 2 (tf_keras)"
    assert outcomes[mirrored].keras == "Keras 3" and not outcomes[mirrored].failure
    assert outcomes[mirrored].measured is fit


def test_fit_timed_in_a_setups_cluster_fails_with_it_and_starts_no_cluster(monkeypatch):
    started = []

    def fake(setup, timings, runs):
        started.append(setup)
        return [measurement(setup.name, t.size) for t in timings]

    monkeypatch.setattr(distributed_setups, "time_setup", fake)
    mirrored = distributed_setups.MIRRORED
    reason = "worker 0 of the cluster failed: RuntimeError: no logical devices"
    outcomes = {
        o.setup: o for o in distributed_setups.try_fit({mirrored: []}, {mirrored.name: reason})
    }
    assert outcomes[mirrored].measured is None and outcomes[mirrored].failure == reason
    assert mirrored not in started


def test_only_a_fit_that_runs_shares_its_setups_cluster():
    # Keras 3's fit fails under MultiWorkerMirroredStrategy, and Keras 2 needs processes of its
    # own: a failure in a shared cluster would take the setup's other timings with it.
    shared = {
        setup: distributed_setups.planned(setup, fit)
        for setup, fit in distributed_setups.FIT_PLAN.items()
    }
    assert shared == {
        distributed_setups.MIRRORED: True,
        distributed_setups.TWO_WORKERS_PINNED: False,
        distributed_setups.TWO_WORKERS_KERAS_2: False,
    }
