"""tf.data chapter: every pipeline yields the images and labels the files hold, augmented the
same way (order aside where a variant lets it vary), every pass over a cache yields what the
first did, and the loops the chapter times and records count what they claim to; the page's
checks, lines, tables and short answer come out right on made-up measurements."""

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pytest
import tensorflow as tf

from perfguide.measure.measurement import Measurement
from perfguide.pages import tf_data as page
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import tf_data as td
from perfguide.workloads.tf_data_overlap import Recording

#: Small enough to be quick, large enough for two batches and several records per file.
IMAGES = 2 * td.BATCH


def expected_elements(images: int) -> list[tuple[bytes, int]]:
    """What every pipeline must yield, worked out in NumPy from the generated images."""
    pixels, labels = td.make_images(images)
    out = []
    for index, (image, label) in enumerate(zip(pixels, labels, strict=True)):
        scaled = image.astype(np.float32) / np.float32(255)
        if index % 2:
            scaled = scaled[:, ::-1]
        normalized = (scaled - np.float32(td.MEAN)) / np.float32(td.STD)
        out.append((normalized.astype(np.float32).tobytes(), int(label)))
    return out


def elements(batches) -> list[tuple[bytes, int]]:
    """Each image's bytes and label, batch by batch, in the order the pipeline yields them."""
    out = []
    for images, labels in batches:
        assert images.shape[1:] == (td.SIDE, td.SIDE, td.CHANNELS)
        out += [
            (image.tobytes(), int(label))
            for image, label in zip(images.numpy(), labels.numpy(), strict=True)
        ]
    return out


@pytest.fixture(scope="module")
def expected():
    return sorted(expected_elements(IMAGES))


@pytest.mark.parametrize("variant", td.PIPELINES)
def test_every_pipeline_yields_the_images_and_labels_the_files_hold(variant, expected):
    yielded = elements(td.make_pipeline(variant, IMAGES))
    assert len(yielded) == IMAGES
    assert sorted(yielded) == expected


@pytest.mark.parametrize("variant", ["naive", "interleave", "combined"])
def test_storage_that_waits_yields_what_local_files_do(variant, expected):
    yielded = elements(td.make_pipeline(variant, IMAGES, latency_ms=1))
    assert sorted(yielded) == expected


@pytest.mark.parametrize("variant", [v for v in td.PIPELINES if v not in td.UNORDERED])
def test_ordered_pipelines_yield_the_same_order_every_time(variant):
    first = elements(td.make_pipeline(variant, IMAGES))
    assert elements(td.make_pipeline(variant, IMAGES)) == first


def test_pipelines_that_read_files_in_turn_change_only_the_order():
    naive, interleaved = (elements(td.make_pipeline(v, IMAGES)) for v in ("naive", "interleave"))
    assert naive != interleaved
    assert sorted(naive) == sorted(interleaved)


@pytest.mark.parametrize("variant", ["cache-records", "cache", "cache-file", "combined"])
def test_a_cache_yields_on_every_pass_what_it_yielded_on_the_first(variant):
    dataset = td.make_pipeline(variant, IMAGES)
    first = elements(dataset)
    assert elements(dataset) == first
    assert elements(dataset) == first


def test_python_parse_and_tensorflow_parse_agree_bit_for_bit():
    pixels, labels = td.make_images(3)
    for index in range(3):
        record = td.serialize(pixels[index], int(labels[index]), index)
        image, label = td.parse(tf.constant(record))
        py_image, py_label = td.parse_in_python(record)
        assert np.array_equal(image.numpy(), py_image)
        assert int(label) == int(py_label) == int(labels[index])


def test_augment_mirrors_exactly_the_images_of_odd_index_one_by_one_or_in_a_batch():
    pixels = np.arange(2 * td.SIDE * td.SIDE * td.CHANNELS, dtype=np.uint8).reshape(
        2, td.SIDE, td.SIDE, td.CHANNELS
    )
    batch = td.augment(pixels, tf.constant([0, 1], tf.int64)).numpy()
    even = td.augment(pixels[0], tf.constant(0, tf.int64)).numpy()
    odd = td.augment(pixels[1], tf.constant(1, tf.int64)).numpy()
    assert np.array_equal(batch[0], even)
    assert np.array_equal(batch[1], odd)
    unflipped = td.augment(pixels[1], tf.constant(0, tf.int64)).numpy()
    assert np.array_equal(odd, unflipped[:, ::-1])


def test_record_files_spread_the_images_over_every_file():
    paths = td.record_files(IMAGES)
    assert len(paths) == td.FILES
    counts = [sum(1 for _ in tf.data.TFRecordDataset(path)) for path in paths]
    assert counts == [IMAGES // td.FILES] * td.FILES


def test_train_steps_takes_one_batch_per_step_and_returns_the_last_loss():
    seen = []

    def step(x, y):
        seen.append((x, y))
        return x + y

    batches = iter([(1, 10), (2, 20), (3, 30)])
    assert td.train_steps(step, batches, 2) == 22
    assert seen == [(1, 10), (2, 20)]
    assert next(batches) == (3, 30)


def test_draw_batches_draws_count_batches_and_returns_the_last():
    batches = itertools.count()
    assert td.draw_batches(batches, 3) == 2
    assert next(batches) == 3


def test_the_step_alone_trains_on_the_batches_the_pipeline_yields():
    timed = td._overlap_call("step-alone", 8)
    _, ready, count = timed.args
    assert count == td.IMAGES // td.BATCH == timed.units_per_call
    first_ready = next(ready)
    first_naive = next(iter(td.make_pipeline("naive")))
    assert all(
        np.array_equal(a.numpy(), b.numpy()) for a, b in zip(first_ready, first_naive, strict=True)
    )


@pytest.mark.parametrize("variant", td.OVERLAP_VARIANTS)
def test_every_overlap_variant_runs_a_pass_over_the_images(variant):
    timed = td._overlap_call(variant, 8)
    assert timed.units_per_call == td.IMAGES // td.BATCH
    assert timed() is not None


def test_a_recorded_pass_has_a_batch_per_step_in_time_order(monkeypatch):
    # A fake clock that ticks once per reading, and a step that reads it too.
    ticks = itertools.count()
    monkeypatch.setattr(td.time, "perf_counter", lambda: float(next(ticks)))
    batches = iter([(1, 2), (3, 4)])
    recorded = td._one_pass(lambda x, y: next(ticks), batches, 2)
    events = recorded["events"]
    assert len(events) == 2
    for (asked, arrived, ended), (next_asked, _, _) in itertools.pairwise(events):
        assert 0 <= asked <= arrived <= ended <= next_asked
    assert events[-1][2] <= recorded["pass_s"]
    assert events == [(1.0, 2.0, 4.0), (5.0, 6.0, 8.0)]
    assert recorded["pass_s"] == 9.0


def test_a_timeline_records_the_passes_it_was_asked_for():
    passes = td.timeline("naive", filters=8, passes=2)
    assert len(passes) == 2
    assert all(len(p["events"]) == td.IMAGES // td.BATCH for p in passes)


def test_epoch_costs_are_recorded_once_per_epoch():
    costs = td.epoch_costs("naive", epochs=2)
    assert set(costs) == {"start", "close"}
    assert all(len(values) == 2 and min(values) >= 0 for values in costs.values())


# -- The page's logic, on made-up measurements -------------------------------------------------


def measured(label, seconds, cores=1.0):
    """Five fresh processes' blocks, one each, all ``seconds`` long."""
    return Measurement(
        label,
        "batch",
        1,
        1,
        0.0,
        (seconds,) * 5,
        cores_busy=cores,
        blocks_per_process=(1,) * 5,
        process_ids=tuple("abcde"),
    )


def measured_all(medians):
    return [measured(label, s) for label, s in medians.items()]


#: Per-batch medians and cores busy shaped like a build's on two cores: the pipeline and the
#: step each keep most of the cores busy, so together takes about one after the other.
OVERLAP = {
    "pipeline-alone": (2e-3, 1.6),
    "step-alone": (10e-3, 1.8),
    "together": (13e-3, 1.9),
    "together-prefetch": (13.5e-3, 1.9),
}
#: Per-batch medians: the default rewrites pay, an explicit prefetch adds nothing, a cache pays.
PIPELINES = dict.fromkeys(td.PIPELINE.variants, 14e-3) | {
    "cache": 11e-3,
    "cache-file": 11.5e-3,
    "batch-then-map": 12e-3,
    "combined": 11e-3,
    "no-default-optimizations": 20e-3,
}
REMOTE = {"naive": 30e-3, "prefetch": 28e-3, "interleave": 12e-3, "combined": 10e-3}
PYTHON = {"naive": 14e-3, "py-function": 40e-3, "py-function-parallel": 41e-3}


def both_measured(cores=2):
    overlap = [measured(label, s, busy) for label, (s, busy) in OVERLAP.items()]
    return page.pipeline_and_step(overlap, cores), overlap


def answer_on(pipelines=PIPELINES, remote=REMOTE, python=PYTHON):
    both, _ = both_measured()
    piped = measured_all(pipelines)
    return page.short_answer(
        both,
        ClaimReport.of((*page.GUIDE_CLAIMS, page.PREFETCH_ADDS_LITTLE), piped),
        ClaimReport.of(page.OTHER_SETTINGS, piped),
        ClaimReport.of(page.REMOTE_CLAIMS, measured_all(remote)),
        ClaimReport.of(page.PYTHON_CLAIMS, measured_all(python)),
        page.prefetch_scenario(piped),
    )


def test_the_pages_checks_name_the_workloads_variants():
    for checks, workload in [
        (page.PIPELINE_CLAIMS, td.PIPELINE),
        (page.REMOTE_CLAIMS, td.REMOTE),
        (page.PYTHON_CLAIMS, td.PYTHON),
        ((page.PREFETCH_OVERLAPS, page.WIDE_SAVES), td.OVERLAP),
    ]:
        for check in checks:
            assert set(check.labels) <= set(workload.variants), check
    assert set(page.EPOCH_VARIANTS) <= set(td.PIPELINE.variants)
    assert {label.split(",")[0] for label in page.RECORDED} <= set(td.PIPELINES)
    assert set(page.DRAWN) <= set(page.RECORDED)


def test_the_remote_checks_are_stated_for_the_storage_that_waits():
    report = ClaimReport.of(page.REMOTE_CLAIMS, measured_all(REMOTE))
    interleave = report[page.INTERLEAVE_REMOTE]
    assert interleave.statement == (
        f"interleave is faster than naive (storage with {page.LATENCY_MS} ms waits)"
    )
    assert interleave.verdict == "HELD"


def test_the_short_answer_advises_what_held_and_quotes_the_checks():
    answer = answer_on()
    assert [r.advised for r in answer.recommendations] == [True] * 6
    both, _ = both_measured()
    assert page.no_overlap(both).quoted in answer.answer
    piped = measured_all(PIPELINES)
    assert page.DEFAULT_OPTIMIZATIONS.check(piped).stated in answer.answer
    assert "the same 2 cores" in answer.answer
    assert f"reads that wait {page.LATENCY_MS} ms, on 2 cores" in answer.recommendations[3].advice


def test_the_short_answer_does_not_advise_a_check_that_did_not_hold():
    slower_cache = answer_on(pipelines=PIPELINES | {"cache": 20e-3})
    cache = slower_cache.recommendations[2]
    assert cache.advice.startswith("Cache after the expensive map") and not cache.advised
    assert cache.advice not in str(slower_cache)
    assert "removing work: keep Python out of it." in slower_cache.answer
    assert "cache after the map" in answer_on().answer
    parallel_pays = answer_on(python=PYTHON | {"py-function-parallel": 20e-3})
    parallel = parallel_pays.recommendations[5]
    assert parallel.advice.startswith("Do not expect parallel calls") and not parallel.advised
    assert parallel.advice not in str(parallel_pays)


def test_the_overlap_claims_check_no_overlap_then_prefetch():
    both, overlap = both_measured()
    report = page.overlap_claims(both, overlap)
    assert [c.statement for c in report.claims] == [
        f"together-prefetch takes at least 90% of one after the other ({td.FILTERS} filters)",
        "together-prefetch is faster than together",
    ]


def test_the_cores_asked_add_up_the_two_alone():
    both, _ = both_measured()
    lines = page.cores_asked(both).splitlines()
    assert lines[:3] == [
        "cores busy, pipeline alone: 1.60",
        "cores busy, step alone: 1.80",
        "asked for together: 3.40 of 2",
    ]
    assert lines[3] == f"with prefetch, process by process: {page.no_overlap(both).quoted}"
    # Their CPU time, 2 ms x 1.6 + 10 ms x 1.8 over 2 cores, is 10.6 ms of the 12 ms.
    assert lines[4] == "the most any overlap could save: 12%"


def test_the_work_removed_is_set_against_the_step():
    inputs = measured_all({"naive": 4e-3, "batch-then-map": 3e-3, "cache": 1e-3})
    both, _ = both_measured()
    assert page.work_removed(inputs, measured_all(PIPELINES), both.step).splitlines() == [
        "mapping each batch saves 1.00 ms a batch",
        "a cache saves 3.00 ms a batch",
        "the step alone takes 10.0 ms a batch",
        "the most removing all of the pipeline's work could gain: 1.40x faster",
    ]


def test_the_epoch_table_spans_each_pipelines_epochs_beside_its_steady_batch():
    costs = {
        "naive": {"start": [3e-3, 1e-3, 2e-3], "close": [1e-4, 2e-4, 3e-4]},
        "autotune-off": {"start": [5e-3, 4e-3, 6e-3], "close": [1e-4, 1e-4, 1e-4]},
    }
    table = page.epoch_table(costs, measured_all(PIPELINES))
    assert table.header == ["pipeline", "start", "close", "steady batch"]
    assert [row[0] for row in table.rows] == ["naive", "autotune-off"]
    assert table.rows[0][1].startswith("1.00 ms") and table.rows[0][1].endswith("3.00 ms")
    assert table.rows[1][3] == "14.0 ms"


def test_the_storage_waits_add_up_a_batchs_reads():
    reads = td.IMAGES // td.READ_RECORDS
    waiting = reads * page.LATENCY_MS / page.BATCHES_A_PASS
    assert page.storage_waits().splitlines() == [
        f"each read waits {page.LATENCY_MS} ms; {reads} reads a pass of "
        f"{page.BATCHES_A_PASS} batches",
        f"waiting a batch, one read after another: {waiting:g} ms",
    ]


def test_the_wide_claim_says_what_the_pipeline_adds_to_the_epoch():
    claim = page.wide_claim(measured_all({"step-alone": 30e-3, "together": 40e-3}))
    assert claim.statement == "a faster pipeline could save at most a third of a wide model's epoch"
    assert claim.effect == "the pipeline adds 25% of the epoch"
    assert claim.verdict == "HELD"


class FakeWorkers:
    """Answers every recording with three passes, the middle one longest but one."""

    def __init__(self):
        self.calls = []

    def call_in(self, index, target, **kwargs):
        self.calls.append((index, target, kwargs))
        return [
            {"pass_s": s, "events": [[0.0, s / 4, s / 2], [s / 2, s / 2, s]]} for s in (3, 1, 2)
        ]


def test_the_passes_are_recorded_in_the_first_worker_and_the_typical_kept():
    workers = FakeWorkers()
    recorded = page.record_passes(workers)
    assert list(recorded) == list(page.RECORDED)
    assert recorded["naive"] == Recording(2, ((0.0, 0.5, 1.0), (1.0, 1.0, 2.0)))
    called = {kwargs["variant"]: kwargs for _, _, kwargs in workers.calls[-4:]}
    assert called["interleave"] == {"variant": "interleave", "latency_ms": page.LATENCY_MS}
    assert {index for index, _, _ in workers.calls} == {0}
    assert {target for _, target, _ in workers.calls} == {f"{td.__name__}:timeline"}


def test_the_passes_table_and_plot_show_the_recorded_passes():
    recorded = page.record_passes(FakeWorkers())
    table = page.passes_table(recorded, measured("step-alone", 10e-3))
    assert table.caption.endswith("against the step alone (10.0 ms)")
    assert table.rows[0] == ["naive", "2.00 s", "25%", "750 ms"]
    ax = page.passes_plot(recorded)
    assert [tick.get_text() for tick in ax.get_yticklabels()] == list(page.DRAWN)
    plt.close(ax.figure)


def test_the_prefetch_scenario_sets_the_issues_words_beside_this_machines_batch():
    piped = measured_all(PIPELINES | {"prefetch": 7e-3})
    ours = page.prefetch_scenario(piped).rows[1]
    assert ours == ["this build's machine, a batch", "14.0 ms", "7.00 ms (2.00x faster)"]
