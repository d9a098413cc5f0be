"""Memory chapter: the probe finds a known allocation, rates and their intervals are worked out
from the series as stated, every way answers as the model does, and a fresh process reports its
series, traces and releases. No memory or time thresholds: counts and known sizes only."""

import json
import os
import resource
import sys
import tempfile

import numpy as np
import pytest

from perfguide.measure import memory as probe
from perfguide.pages import memory as page
from perfguide.processes import forkserver, memory_processes
from perfguide.processes.forkserver import Task, in_fresh_processes
from perfguide.processes.fresh import SCRATCH_PREFIX, ChildError, child_environment, run_command
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import memory
from tests.recipes import run_recipe

MEGABYTE = 2**20
#: Larger than glibc's largest mmap threshold (32 MiB): each allocation gets pages of its own
#: from the system and gives them back when freed, whatever this process freed before (smaller
#: blocks can reuse memory that is already resident, and count for less). A power of two:
#: TensorFlow's allocator counts a large tensor rounded up to one.
LARGE = 64 * MEGABYTE


def test_the_probe_finds_a_known_allocation_within_ten_percent():
    kept = []

    def allocate(i):
        kept.append(np.ones(LARGE // 8))  # float64, every page written

    series = probe.resident_series(allocate, calls=20, every=2)
    assert probe.growth_per_call(series, every=2) == pytest.approx(LARGE, rel=0.1)


def test_a_series_must_split_into_whole_samples():
    with pytest.raises(ValueError, match="do not split"):
        probe.resident_series(lambda i: None, calls=10, every=3)


def test_a_rate_is_the_median_of_the_processes_with_a_prediction_interval():
    grown = probe.Growth("way", rates=(100.0, 110.0, 120.0), added=(1.0, 2.0, 3.0))
    low, high = grown.interval
    assert grown.rate == 110
    # mean 110, spread 10, t(2) = 4.303: 110 +- 4.303 * 10 * sqrt(4 / 3)
    assert (low, high) == pytest.approx((110 - 49.69, 110 + 49.69), abs=0.01)
    assert probe.Growth("one", (5.0,), (0.0,)).interval == (-np.inf, np.inf)


def test_growth_is_fitted_per_process_after_settling():
    series = [[0, 500, 600, 700, 800], [0, 100, 300, 500, 700]]
    grown = probe.growth("way", series, every=10)
    assert grown.rates == pytest.approx((10.0, 20.0)) and grown.added == (800.0, 700.0)
    # The slope spans 20 calls: one page over them is the least growth it can show.
    assert grown.resolution == resource.getpagesize() / 20


def test_a_slope_over_the_calls_it_spans_is_what_the_kept_samples_moved():
    # Flat while settling, then 1,000 bytes every 10 calls: samples 10 to 20 are kept.
    series = [0] * 10 + [1000 * i for i in range(11)]
    moved = probe.growth_per_call(series, every=10) * probe.fitted_calls(len(series), every=10)
    assert moved == pytest.approx(series[-1] - series[10])


def test_an_interval_is_never_narrower_than_the_series_resolution():
    grown = probe.Growth("way", rates=(15.0, 15.0, 15.0), added=(0.0,) * 3, resolution=14.0)
    assert grown.interval == (1.0, 29.0)


@pytest.mark.parametrize("way", list(memory.WAYS))
@pytest.mark.parametrize("rows", [memory.FIXED_ROWS, 5])
def test_every_way_answers_as_the_model_does(way, rows):
    from perfguide.workloads import serving

    model = serving.built(memory.MODEL)
    x = memory.batch(rows)
    expected = np.asarray(model(x, training=False))
    np.testing.assert_allclose(np.asarray(memory.caller(way, model)(x)), expected, atol=1e-5)


def test_an_allocator_whose_library_is_missing_says_what_to_install(monkeypatch):
    monkeypatch.setattr(memory, "_library", lambda name: None)
    usable, missing = memory.allocators()
    assert set(usable) == {"glibc malloc", "glibc, MALLOC_ARENA_MAX=2"}
    assert "apt-get install libjemalloc2" in missing["jemalloc"]
    monkeypatch.setattr(memory, "_library", lambda name: f"/lib/{name}")
    usable, missing = memory.allocators()
    assert usable["tcmalloc"] == {"LD_PRELOAD": "/lib/libtcmalloc_minimal.so.4"} and not missing


def test_calls_come_in_whole_samples():
    assert memory.calls_of("predict") == memory.CALLS["predict"]
    assert all(memory.calls_of(way) % probe.SAMPLES == 0 for way in memory.WAYS)


@pytest.mark.processes
def test_a_fresh_process_reports_each_ways_series_traces_and_releases():
    ways = ["input-signature", "tf-function"]
    job = Task(
        f"{memory.__name__}:resident_growth", {"ways": ways, "shapes": "new", "release": True}
    )
    (found,) = in_fresh_processes([job])
    for way in ways:
        assert len(found[way]["series"]) == probe.SAMPLES + 1
        assert found[way]["every"] == memory.calls_of(way) // probe.SAMPLES
    # A plain tf.function traces once per new shape; a None batch dimension, once.
    assert found["tf-function"]["traces"] == memory.calls_of("tf-function")
    assert found["input-signature"]["traces"] == 1
    assert list(found["released"]) == ["before the model", "after the calls", *memory.RELEASES]
    assert all(isinstance(found[way]["objects_per_call"], float) for way in ("tf-function",))


@pytest.mark.processes
def test_each_job_gets_a_process_of_its_own_started_with_its_environment():
    jobs = [Task("os:getpid", {}), Task("os:getpid", {})] + [
        Task("os:getenv", {"key": "PERFGUIDE_SIDE"}, {"PERFGUIDE_SIDE": side}) for side in "abab"
    ]
    found = in_fresh_processes(jobs, preload=("json",))
    assert found[0] != found[1] and os.getpid() not in found[:2]
    assert found[2:] == list("abab")


@pytest.mark.parametrize(
    "job, preload, reason",
    [
        (Task("os:getenv", {"nokey": 1}), (), "TypeError"),  # the function raised
        (Task("os:_exit", {"status": 3}), (), "exit status 3"),  # the process died
        (Task("os:getpid", {}), ("no_such_module",), "ModuleNotFoundError"),  # the server did
    ],
)
@pytest.mark.processes
def test_a_failed_job_says_why_in_one_line(job, preload, reason):
    with pytest.raises(ChildError, match=reason):
        in_fresh_processes([job, job, job], preload)


@pytest.mark.processes
def test_a_job_over_its_time_is_stopped(monkeypatch):
    monkeypatch.setattr(forkserver, "TIMEOUT_S", 0.5)
    with pytest.raises(ChildError, match="took over 0.5 s"):
        in_fresh_processes([Task("subprocess:call", {"args": ["sleep", "60"]})])


def test_growth_is_published_whole_and_read_back_for_the_next_run(tmp_path):
    from perfguide.measure.memory import Experiment, Growth
    from perfguide.report.publishing import memory_results
    from perfguide.report.tables.memory import growth_table

    def experiment(*rates):
        grown = Growth("predict", rates, (1e6,) * len(rates))
        return Experiment(
            growth={"predict": grown},
            traces={"predict": None},
            objects_per_call={"predict": 0.0},
            released=[],
            series={"predict": ([0, 1], 1)},
        )

    path = tmp_path / "memory.json"
    memory_results.save(path, {"tensorflow": "2.21.0"}, {"one shape": experiment(20e3, 21e3, 22e3)})
    published = memory_results.load(path)
    assert published["one shape"]["predict"].rates == (20e3, 21e3, 22e3)
    assert [p.name for p in tmp_path.iterdir()] == ["memory.json"]  # no half-written leftovers
    # A next run's rate inside the published interval counts; one far outside does not.
    assert memory_results.inside(published, {"one shape": experiment(21e3, 21e3)}) == (1, 1)
    assert memory_results.inside(published, {"one shape": experiment(90e3, 90e3)}) == (0, 1)
    table = str(growth_table("one shape", published["one shape"], traces={"predict": None}))
    assert "21.0 kB" in table and "next-process interval" in table


def test_what_was_held_after_each_step_is_the_median_over_the_processes():
    released = [
        {"before": 100, "after": 300},
        {"before": 120, "after": 260},
        {"before": 90, "after": 280},
    ]
    experiment = probe.Experiment({}, {}, {}, released, {})
    assert experiment.held() == {"before": 100, "after": 280}
    assert probe.changes(experiment.held()) == {"after": 180}


# A step of known size, measured in a fresh process that counts its tensors (the allocator is
# chosen when TensorFlow starts): the ones and their sum (float32, both freed), then a float64
# NumPy array from the system, every page written, then given back.
KNOWN_STEP = f"""
import json
import numpy as np
import tensorflow as tf
from perfguide.measure import memory

def step():
    np.asarray(tf.ones(({LARGE} // 4,)) + 1)
    np.ones({LARGE} // 8)

tensors, resident = memory.step_peak(step)
print(json.dumps([tensors, resident - memory.resident_bytes()]))
"""


@pytest.mark.processes
def test_a_steps_peak_counts_a_tensor_of_known_size_within_ten_percent():
    env = child_environment(probe.TENSOR_COUNTS)
    done = run_command([sys.executable, "-c", KNOWN_STEP], env, 300, "a step of known size")
    tensors, resident_beyond_now = json.loads(done.stdout.splitlines()[-1])
    assert tensors == pytest.approx(2 * LARGE, rel=0.1)  # both alive at the sum
    # The NumPy array, made last, was given back to the system (TensorFlow's allocator may
    # keep its memory), so the peak exceeds what is held now by that much at least.
    assert resident_beyond_now >= 0.9 * LARGE


def _peaks(label, tensors, before=100.0):
    resident = tuple(tuple(2 * t for t in run) for run in tensors)
    return probe.Peaks(label, (1, 2, 4), tensors, resident, 10.0, tensors, {}, (before,) * 3)


def test_peaks_per_example_are_each_processes_slope_and_a_batch_that_fits():
    peaks = _peaks("float32", ((5, 15, 35), (6, 16, 36), (4, 14, 34)))
    assert peaks.per_example("tensors") == pytest.approx((10.0, 10.0, 10.0))
    assert peaks.at("tensors") == [5, 15, 35]
    # resident = 20 * batch - 10 beyond the 100 bytes held before: 1,000 bytes fit a batch of 45
    assert peaks.largest_batch(1000) == 45


def test_a_peaks_interval_is_never_narrower_than_one_processes_fitting_error():
    exact = _peaks("float32", ((10, 20, 40),) * 3)
    assert exact.interval("tensors") == pytest.approx((10.0, 10.0))
    # Three processes that agree, each with steps off the line: the fit's error sets the width.
    wobbly = _peaks("float32", ((10, 22, 40),) * 3)
    low, high = wobbly.interval("tensors")
    assert low < wobbly.per_example("tensors")[0] < high and high - low > 1


def test_measure_queues_every_process_and_hands_each_result_back_to_its_experiment(monkeypatch):
    queued = []

    def fake(jobs, preload):
        queued.extend(jobs)

        def found(job):
            if "policy" in job.kwargs:
                peak = 1.0 if job.kwargs["policy"] == "float32" else 0.5
                return {
                    "tensors": [peak * b for b in memory.TRAINING_BATCHES],
                    "resident": [2 * peak * b for b in memory.TRAINING_BATCHES],
                    "kept": [peak * b for b in memory.TRAINING_BATCHES],
                    "layers": {"1 Dense": {"output": peak, "kept": peak}},
                    "activations": peak,
                    "before": 0,
                }
            # The allocator's processes grow by their variables, each repeat by its start.
            rate = float(len(job.env) + job.start)
            series = [int(i * rate) for i in range(probe.SAMPLES + 1)]
            runs = {w: {"series": series, "every": 1, "traces": None, "objects_per_call": 0.0}
                    for w in job.kwargs["ways"]}  # fmt: skip
            return runs | ({"released": {"before": 0}} if job.kwargs["release"] else {})

        return [found(job) for job in jobs]

    monkeypatch.setattr(memory_processes, "in_fresh_processes", fake)
    specs = {
        "one shape": {"groups": [("predict", "model-call")], "shapes": "fixed", "release": True},
        "apart": {"groups": [("buckets",), ("tf-function",)], "shapes": "new"},
        "other": {"groups": [("predict",)], "shapes": "fixed", "env": {"A": "1"}, "release": True},
    }
    measured, peaks = memory_processes.measure(specs, processes=2)
    assert list(measured) == list(specs)
    assert set(measured["apart"].growth) == {"buckets", "tf-function"}
    # An experiment's two processes are forked from servers started apart.
    assert measured["one shape"].growth["predict"].rates == pytest.approx((0.0, 1.0))
    assert measured["other"].growth["predict"].rates == pytest.approx((1.0, 2.0))
    assert len(measured["one shape"].released) == 2 and not measured["apart"].released
    assert peaks["mixed_bfloat16"].per_example("tensors") == pytest.approx((0.5, 0.5))
    # The training steps share the servers of the default environment, one a start.
    training = [job for job in queued if "policy" in job.kwargs]
    assert [job.server for job in training] == [({}, 0), ({}, 1)] * 2


@pytest.mark.processes
def test_a_training_step_reports_its_peaks_and_the_activations_of_its_shapes():
    from perfguide.workloads import mixed_precision

    # Forked, as measure() forks it, from a server started without probe.TENSOR_COUNTS: the
    # step sets them itself before TensorFlow starts, and counts its tensors.
    task = Task(f"{memory.__name__}:training_peaks", {"policy": "mixed_bfloat16"})
    (found,) = in_fresh_processes([task])
    assert all(len(found[kind]) == len(memory.TRAINING_BATCHES) for kind in ("tensors", "kept"))
    assert all(tensors > 0 for tensors in found["tensors"])
    expected = mixed_precision.memory_bytes("mixed-bfloat16", batch=1)["activations"]
    assert found["activations"] == expected
    assert sum(layer["output"] for layer in found["layers"].values()) == expected


def test_a_training_steps_peaks_are_tabled_and_published(tmp_path):
    import json

    from perfguide.report.publishing import memory_results
    from perfguide.report.tables.memory import peak_table, per_example_table

    peaks = {
        "float32": _peaks("float32", ((5, 15, 35),) * 3),
        "bf16": _peaks("bf16", ((3, 8, 18),) * 3),
    }
    per_example = str(per_example_table("per example", peaks, available=1000))
    assert "10 B (10 B to 10 B)" in per_example and "45" in per_example
    assert "20 B" in str(peak_table("peaks", peaks))  # float32's resident at batch 1
    path = tmp_path / "memory.json"
    memory_results.save(path, {}, {}, peaks)
    assert json.loads(path.read_text())["peaks"]["bf16"]["tensors"][0] == [3, 8, 18]


def experiment(rates, released=()):
    """An experiment whose ways grew by ``rates`` (bytes a call, the same in three processes)
    and whose processes held ``released`` after each step."""
    return probe.Experiment(
        growth={way: probe.Growth(way, (rate,) * 3, (1e6,) * 3) for way, rate in rates.items()},
        traces=dict.fromkeys(rates),
        objects_per_call=dict.fromkeys(rates, 0.0),
        released=list(released),
        series={},
    )


#: What the processes held after each step (the same in each), as resident_growth reports it.
HELD = {
    "before the model": 100e6,
    "after the calls": 150e6,
    "gc.collect()": 149e6,
    "keras.backend.clear_session()": 148e6,
    "del the functions and the model": 147e6,
    "glibc's malloc_trim(0)": 120e6,
}
#: Growth shaped like a build's: predict and retracing grow, model(x) stays flat, one graph for
#: any batch size grows a tenth as fast as retracing, and padded batches stop the growth.
ONE_SHAPE = {"predict": 20e3, "model-call": 10.0, "predict-on-batch": 50.0, "input-signature": 5.0}
NEW_SHAPES = {
    "model-call": 30e3,
    "input-signature": 20e3,
    "reduce-retracing": 20e3,
    "buckets": 100.0,
    "tf-function": 400e3,
}


def measured_experiments(new_shapes=NEW_SHAPES, jemalloc=1e3):
    return {
        "one shape": experiment(ONE_SHAPE, [HELD] * 3),
        "predict, jemalloc": experiment({"predict": jemalloc}, [HELD] * 3),
        "new shapes": experiment(new_shapes, [HELD] * 3),
        "oneDNN off": experiment({"input-signature": 500.0, "reduce-retracing": 600.0}),
    }


def peaks_measured():
    layers = {
        "1 Conv2D": {"output": 64e3, "kept": 70e3},
        "2 Conv2D": {"output": 64e3, "kept": 200e3},
        "3 Dense": {"output": 20.0, "kept": 20.0},
    }

    def peaks(label, per_example):
        tensors = tuple(tuple(per_example * b + d for b in (1, 2, 4)) for d in (0, 1, 2))
        return probe.Peaks(label, (1, 2, 4), tensors, tensors, 1e3, tensors, layers, (1e6,) * 3)

    return {"float32": peaks("float32", 400e3), "mixed_bfloat16": peaks("mixed_bfloat16", 200e3)}


def test_the_pages_checks_name_the_ways_each_experiment_calls():
    specs = memory.experiments()
    assert {"one shape", "new shapes", "oneDNN off"} <= set(specs)
    new_shape_ways = {way for group in memory.NEW_SHAPE_GROUPS for way in group}
    assert {check.way for check in page.ONE_SHAPE_CLAIMS} <= set(memory.FIXED_WAYS)
    checks = (*page.NEW_SHAPE_CLAIMS, page.BUCKETS_FIX)
    assert {check.way for check in checks} <= new_shape_ways
    assert {page.REDUCE_RETRACING_FIXES.reference, page.SIGNATURE_FIXES.reference} == {
        "tf-function"
    }


@pytest.mark.parametrize(
    "onednn_here, on, off",
    [
        (True, {}, {"TF_ENABLE_ONEDNN_OPTS": "0"}),
        (False, {"TF_ENABLE_ONEDNN_OPTS": "1"}, {}),
    ],
)
def test_onednn_is_set_where_it_is_not_what_tensorflow_runs_here(monkeypatch, onednn_here, on, off):
    from perfguide.measure import environment

    monkeypatch.setattr(environment, "onednn_enabled", lambda: onednn_here)
    specs = memory.experiments()
    # The side TensorFlow runs anyway starts as the one-shape experiment does, from its servers.
    assert specs["new shapes"]["env"] == on and specs["oneDNN off"]["env"] == off
    assert "env" not in specs["one shape"]


def test_the_short_answer_advises_what_held_and_not_what_did_not():
    answer = page.short_answer(measured_experiments(), peaks_measured())
    advised = {r.advice: r.advised for r in answer.recommendations}
    assert advised == {
        "Don't call predict in a loop: it grows the process": True,
        "Call model(x) per batch in a loop instead": True,
        "Where shapes vary, give the tf.function reduce_retracing=True or an input signature "
        "with a None dimension: it grows a tenth as fast as retracing": True,
        "Where shapes vary, pad batches to a few sizes as well, so that the process stops "
        "growing: oneDNN keeps a kernel per shape": True,
        "Start the process with jemalloc to stop predict's growth": True,
        "Train under mixed_bfloat16 to fit a larger batch in memory": True,
    }
    assert len(answer.recommendations) == 7  # one a kind of peak
    assert "predict grew the process by 20.0 kB a call" in answer.answer
    assert "changed what it held by -3.00 MB, glibc's malloc_trim by -27.0 MB" in answer.answer
    assert "400 kB of tensors an example of its batch under float32, 200 kB" in answer.answer


def test_the_short_answer_does_not_advise_a_fix_that_did_not_hold():
    still_growing = {**NEW_SHAPES, "buckets": 20e3, "input-signature": 300e3}
    answer = page.short_answer(measured_experiments(still_growing, jemalloc=20e3), peaks_measured())
    not_advised = [r.deciding.statement for r in answer.findings]
    assert not_advised == [
        "input-signature grows the process by under a tenth of tf-function's growth",
        "buckets grows the process by under 1.00 kB a call",
        "under jemalloc, predict grows the process by under a tenth of its growth under "
        "glibc malloc",
    ]


def test_the_claims_on_new_shapes_and_on_onednn_are_stated_as_the_page_prints_them():
    measured = measured_experiments()
    new_shapes, onednn_off = measured["new shapes"], measured["oneDNN off"]
    report = ClaimReport.of(page.NEW_SHAPE_CLAIMS, new_shapes)
    assert [c.statement for c in report.claims] == [
        "tf-function grows the process by at least 10.0 kB a call",
        "reduce-retracing grows the process by under a tenth of tf-function's growth",
        "input-signature grows the process by under a tenth of tf-function's growth",
        "input-signature grows the process by at least 10.0 kB a call",
    ]
    assert [c.statement for c in page.kernel_cache_claims(new_shapes, onednn_off)] == [
        "with oneDNN off, input-signature grows the process by under a tenth of its growth "
        "with oneDNN on",
        "with oneDNN off, reduce-retracing grows the process by under a tenth of its growth "
        "with oneDNN on",
        "buckets grows the process by under 1.00 kB a call",
    ]
    assert page.onednn_growth(new_shapes, onednn_off).splitlines() == [
        "input-signature: 20.0 kB a call with oneDNN, 500 B without",
        "reduce-retracing: 20.0 kB a call with oneDNN, 600 B without",
    ]


def test_what_each_step_gave_back_is_tabled_per_step_and_per_allocator():
    measured = measured_experiments()
    held = page.held_table(measured["new shapes"]).shown
    assert held.rows[0] == ["before the model", "100 MB", "0 B"]
    assert held.rows[-1] == ["glibc's malloc_trim(0)", "120 MB", "-27.0 MB"]
    allocators = page.by_allocator(measured)
    assert list(allocators) == ["glibc malloc", "jemalloc"]
    assert page.given_back_table(allocators).shown.rows[1] == [
        "jemalloc", "50.0 MB", "-3.00 MB", "-27.0 MB"
    ]  # fmt: skip
    growth = page.allocator_growth_table(allocators).shown
    assert [row[:2] for row in growth.rows] == [
        ["glibc malloc", "20.0 kB"],
        ["jemalloc", "1.00 kB"],
    ]


def test_the_layer_that_keeps_the_most_is_named_with_what_it_keeps_an_input_element():
    # 200 kB kept for a 64 kB input of 2-byte elements: 6.25 bytes an element.
    assert page.heaviest_layer(peaks_measured()) == (
        "2 Conv2D: keeps 200 kB an example for an output of 64.0 kB, 6.25 bytes for each element "
        "of its input"
    )
    claims = page.peak_claims(peaks_measured())
    assert [c.verdict for c in claims] == ["HELD", "HELD"]


def test_the_padding_recipe_answers_as_the_timed_buckets_way():
    recipe = run_recipe("memory", "Pad batches to a few sizes")
    timed = memory.caller("buckets", recipe["model"])
    for rows in (1, 3, 5, 17):
        x = memory.batch(rows)
        np.testing.assert_allclose(recipe["padded_call"](x), timed(x), rtol=1e-6)


def test_the_one_graph_recipe_answers_as_the_timed_reduce_retracing_way():
    recipe = run_recipe("memory", "Let one graph take any batch size")
    timed = memory.caller("reduce-retracing", recipe["model"])
    for rows in (1, 7):
        x = memory.batch(rows)
        np.testing.assert_allclose(recipe["call"](x), timed(x), rtol=1e-6)


@pytest.mark.processes
def test_what_forked_processes_leave_in_their_temporary_folder_goes_with_them(
    tmp_path, monkeypatch
):
    # A forked process ends without its exit handlers, so it cannot clean up after itself.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    left = in_fresh_processes([Task("tempfile:mkdtemp", {}), Task("tempfile:mkdtemp", {})])
    assert all(path.startswith(str(tmp_path / SCRATCH_PREFIX)) for path in left)
    assert list(tmp_path.iterdir()) == []
