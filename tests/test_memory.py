"""Memory chapter: the probe finds a known allocation, rates and their intervals are worked out
from the series as stated, every way answers as the model does, and a fresh process reports its
series, traces and releases. No memory or time thresholds: counts and known sizes only."""

import resource

import numpy as np
import pytest

from perfguide.measure import memory as probe
from perfguide.processes.growth import in_fresh_processes
from perfguide.workloads import memory

MEGABYTE = 2**20


def test_the_probe_finds_a_known_allocation_within_ten_percent():
    kept = []

    def allocate(i):
        kept.append(np.ones(MEGABYTE // 8))  # 1 MiB of float64, every page written

    series = probe.resident_series(allocate, calls=40, every=4)
    assert probe.growth_per_call(series, every=4) == pytest.approx(MEGABYTE, rel=0.1)


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
    assert memory.calls_of("model-call", 0.01) == probe.SAMPLES  # never fewer than a sample each
    assert memory.calls_of("model-call", 0.5) % probe.SAMPLES == 0


def test_a_fresh_process_reports_each_ways_series_traces_and_releases():
    (found,) = in_fresh_processes(
        f"{memory.__name__}:resident_growth",
        {
            "ways": ["input-signature", "tf-function"],
            "shapes": "new",
            "release": True,
            "scale": 0.4,
        },
        processes=1,
    )
    for way in ("input-signature", "tf-function"):
        assert len(found[way]["series"]) == probe.SAMPLES + 1
        assert found[way]["every"] == memory.calls_of(way, 0.4) // probe.SAMPLES
    # A plain tf.function traces once per new shape; a None batch dimension, once.
    assert found["tf-function"]["traces"] == memory.calls_of("tf-function", 0.4) == 40
    assert found["input-signature"]["traces"] == 1
    assert list(found["released"]) == ["before the model", "after the calls", *memory.RELEASES]
    assert all(isinstance(found[way]["objects_per_call"], float) for way in ("tf-function",))


def test_growth_is_published_whole_and_read_back_for_the_next_run(tmp_path):
    from perfguide.measure.memory import Experiment, Growth
    from perfguide.report import growth as report

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
    report.save(path, {"tensorflow": "2.21.0"}, {"one shape": experiment(20e3, 21e3, 22e3)})
    published = report.load(path)
    assert published["one shape"]["predict"].rates == (20e3, 21e3, 22e3)
    assert [p.name for p in tmp_path.iterdir()] == ["memory.json"]  # no half-written leftovers
    # A next run's rate inside the published interval counts; one far outside does not.
    assert report.inside(published, {"one shape": experiment(21e3, 21e3)}) == (1, 1)
    assert report.inside(published, {"one shape": experiment(90e3, 90e3)}) == (0, 1)
    table = str(report.growth_table("one shape", published["one shape"], traces={"predict": None}))
    assert "21.0 kB" in table and "next process, 95 %" in table


def test_what_was_held_after_each_step_is_the_median_over_the_processes():
    released = [
        {"before": 100, "after": 300},
        {"before": 120, "after": 260},
        {"before": 90, "after": 280},
    ]
    experiment = probe.Experiment({}, {}, {}, released, {})
    assert experiment.held() == {"before": 100, "after": 280}
    assert probe.changes(experiment.held()) == {"after": 180}
