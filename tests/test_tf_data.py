"""tf.data chapter: every pipeline yields the images and labels the files hold, augmented the
same way (order aside where a variant lets it vary), every pass over a cache yields what the
first did, and the loops the chapter times and records count what they claim to."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from perfguide.workloads import tf_data as td

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
