"""The harness, tested on callables whose cost is known."""

import time

import pytest

from perfguide.timer import Measurement, calibrate, materialize, measure


def busy_wait(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_median_matches_known_cost():
    m = measure(lambda: busy_wait(1e-3), label="1 ms", min_block_s=0.02, blocks=5)
    assert m.median_s == pytest.approx(1e-3, rel=0.2)
    assert len(m.block_s) == 5


def test_time_is_per_unit_of_work():
    m = measure(lambda: busy_wait(2e-3), label="4 units", units_per_call=4, min_block_s=0.02)
    assert m.median_s == pytest.approx(0.5e-3, rel=0.2)


def test_calibration_makes_blocks_long_enough():
    calls = calibrate(lambda: busy_wait(1e-4), min_block_s=0.05)
    assert calls * 1e-4 >= 0.05
    # ... but not absurdly long: the growth aims 20 % past the target.
    assert calls * 1e-4 < 0.05 * 3


def test_slow_call_needs_one_call_per_block():
    assert calibrate(lambda: busy_wait(0.03), min_block_s=0.02) == 1


def test_first_call_is_reported_apart_from_steady_state():
    calls = []

    def traced_then_fast():
        busy_wait(0.05 if not calls else 1e-4)
        calls.append(1)

    m = measure(traced_then_fast, label="trace", min_block_s=0.01)
    assert m.first_call_s >= 0.05
    assert m.median_s < 1e-3


class Lazy:
    """A result whose work happens only when fetched, like an asynchronously dispatched tensor."""

    def numpy(self):
        busy_wait(2e-3)
        return 0


def test_lazy_result_is_forced_inside_the_timed_block():
    m = measure(Lazy, label="lazy", min_block_s=0.02)
    assert m.median_s >= 1.8e-3


def test_materialize_recurses_into_containers():
    assert materialize([Lazy(), (Lazy(), "x")]) == [0, (0, "x")]


def make(samples):
    return Measurement("v", "call", 1, 1, 0.0, tuple(samples))


def test_statistics_of_known_samples():
    m = make([1.0, 2.0, 3.0, 4.0, 5.0])
    assert m.median_s == 3.0
    assert m.quartiles_s == (2.0, 3.0, 4.0)
    assert m.iqr_s == 2.0


def test_noise_flag_at_ten_percent_of_median():
    assert not make([1.0, 1.0, 1.0, 1.05, 1.1]).noisy
    assert make([0.8, 0.9, 1.0, 1.1, 1.2]).noisy


def test_round_trip_through_dict():
    m = make([1.0, 2.0, 3.0, 4.0, 5.0])
    record = m.to_dict()
    assert record["median_s"] == 3.0 and record["iqr_s"] == 2.0 and record["noisy"]
    assert Measurement.from_dict(record) == m


def test_fewer_than_five_blocks_is_refused():
    with pytest.raises(ValueError, match="at least 5 blocks"):
        measure(lambda: None, label="x", blocks=3)


class FakeFunction:
    """Stands in for a tf.function: counts its traces; retraces on every call when asked to."""

    def __init__(self, retrace_every_call):
        self.traces = 0
        self.retrace_every_call = retrace_every_call

    def __call__(self):
        if self.traces == 0 or self.retrace_every_call:
            self.traces += 1

    def experimental_get_tracing_count(self):
        return self.traces


def test_retraces_after_the_first_call_are_counted_and_flagged():
    steady, retracing = FakeFunction(False), FakeFunction(True)
    quiet = measure(steady, label="steady", min_block_s=0.001, blocks=5, traced=[steady])
    loud = measure(retracing, label="loud", min_block_s=0.001, blocks=5, traced=[retracing])
    assert quiet.retraces == 0 and not quiet.retraced
    assert loud.retraces == retracing.traces - 1 > 0
    assert f"RETRACED {loud.retraces}x" in loud.flags


def test_unwatched_measurement_has_no_trace_count():
    assert measure(lambda: None, label="x", min_block_s=0.001, blocks=5).retraces is None
