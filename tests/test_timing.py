"""The timing pitfalls: each returns what a hand-rolled timer reports, shaped as the chapter
reads it (speed is the chapter's to judge, with verdicts, not a test's)."""

import itertools

import numpy as np
import pytest

from perfguide.measure.runner import run
from perfguide.workloads import timing as tm


def test_the_step_is_the_same_eagerly_and_as_a_tf_function():
    x = tm.make_input()
    expected = np.sum(np.tanh(x.numpy() * 2 + 1))
    assert float(tm.step(x)) == pytest.approx(expected, rel=1e-5)
    assert float(tm.STEP.make_call("tf-function", tm.ELEMENTS)()) == pytest.approx(
        expected, rel=1e-5
    )


def test_ten_calls_from_the_first_include_the_first():
    r = tm.first_call_in_timing(calls=3)
    assert set(r) == {"first_call_s", "naive_s", "steady_s"}
    # The loop's mean over three calls counts the whole first call.
    assert r["naive_s"] >= r["first_call_s"] / 3 and r["steady_s"] > 0


def test_single_calls_are_timed_with_both_clocks_beside_blocks():
    r = tm.one_call_at_a_time(calls=5)
    assert {name: len(s) for name, s in r["single_s"].items()} == {
        "time.time": 5,
        "time.perf_counter": 5,
    }
    assert len(r["block_s"]) == 10
    assert all(res > 0 for res in r["resolution_s"].values())


@pytest.fixture
def ticking_clock(monkeypatch):
    """``time.perf_counter`` as a clock that moves one second each time it is read, so that
    a time worked out between two reads around one step is exactly one second."""
    ticks = itertools.count()
    monkeypatch.setattr(tm.time, "perf_counter", lambda: float(next(ticks)))


def test_a_pipeline_is_timed_where_built_and_where_run(ticking_clock):
    r = tm.pipeline_built_or_run(batches=2, batch=4)
    # Each of the three is read right around its own part, nothing else in between.
    assert r == {"built_s": 1.0, "run_s": 1.0, "trace_s": 1.0}


def test_the_same_step_is_timed_as_a_then_b_and_in_turns_with_as_many_blocks():
    r = tm.a_then_b(blocks=2, calls=3)
    assert {order: {k: len(v) for k, v in ab.items()} for order, ab in r.items()} == {
        "sequential": {"a": 2, "b": 2},
        "interleaved": {"a": 2, "b": 2},
    }


def test_an_op_is_timed_right_after_busy_pools_after_idle_and_after_a_sleep(ticking_clock):
    r = tm.after_busy_pools(rounds=2, side=64)
    # The op alone is between the two reads of each round: the product, the wait and the
    # sleep before it are not.
    assert {k: v for k, v in r.items() if k != "steady_s"} == {
        "right_after_s": 1.0,
        "after_idle_s": 1.0,
        "after_sleep_s": 1.0,
    }


def test_the_harness_times_the_step():
    (m,) = run(tm.STEP, quick=True)
    assert (m.workload, m.label, m.size) == ("timing-step", "tf-function", tm.ELEMENTS)
