"""The timing pitfalls: each returns what a hand-rolled timer reports, shaped as the chapter
reads it (speed is the chapter's to judge, with verdicts, not a test's); and the page's lines,
checks and short answer, on made-up results."""

import itertools

import numpy as np
import pytest

from perfguide.measure.measurement import Measurement
from perfguide.measure.runner import run
from perfguide.pages import timing as page
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import timing as tm
from tests.recipes import run_recipe


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


# -- The page, on made-up results of five processes ---------------------------------------------

PROCESSES = 5


def per_process(**result):
    return [result] * PROCESSES


def first_calls(naive_s=1e-3):
    return per_process(first_call_s=5e-3, naive_s=naive_s, steady_s=1e-4)


def single_calls(single_spread=1.0):
    """Single calls spread ``single_spread`` of their median, blocks 10 %."""
    calls = [1e-4 * (1 + single_spread * (i / 20 - 0.5)) for i in range(21)]
    blocks = [1e-4 * (1 + 0.1 * (i / 20 - 0.5)) for i in range(21)]
    clocks = {"time.time": calls, "time.perf_counter": calls}
    resolution = {"time.time": 1e-9, "time.perf_counter": 1e-9}
    return per_process(single_s=clocks, block_s=blocks, resolution_s=resolution)


def pipelines(run_s=0.1):
    return per_process(built_s=0.01, run_s=run_s, trace_s=0.005)


def orders(sequential_b=1.1):
    """A and B as the same step: B ``sequential_b`` times A's time one after the other, the
    two within a hair of each other in turns."""
    a = [1e-4 * (1 + 0.01 * (i % 3)) for i in range(10)]
    sequential = {"a": a, "b": [t * sequential_b for t in a]}
    return per_process(sequential=sequential, interleaved={"a": a, "b": [t * 1.001 for t in a]})


def step(process_spread=0.2):
    """Five processes whose own blocks agree within 1 % while their medians lie
    ``process_spread`` apart."""
    medians = [1e-4 * (1 + process_spread * i / 4) for i in range(PROCESSES)]
    blocks = tuple(m * (1 + 0.01 * (j % 3 - 1)) for m in medians for j in range(6))
    return Measurement(
        "tf-function",
        "call",
        1,
        1,
        0.0,
        blocks,
        workload=tm.STEP.name,
        size=tm.ELEMENTS,
        blocks_per_process=(6,) * PROCESSES,
        process_ids=tuple(map(str, range(PROCESSES))),
    )


def adds(here_s=2e-6):
    return [
        Measurement(page.FRESH, "op", 1, 1, 0.0, (1e-6,) * 5),
        Measurement(page.HERE, "op", 1, 1, 0.0, (here_s,) * 5),
    ]


def pools(after_idle_s=2e-5, after_sleep_s=2e-5):
    return per_process(
        right_after_s=1e-5, after_idle_s=after_idle_s, after_sleep_s=after_sleep_s, steady_s=5e-6
    )


def section_checks(**changed):
    """Every section's checks, on the results above unless ``changed``."""
    results = {
        "first_calls": first_calls(),
        "single": single_calls(),
        "pipelines": pipelines(),
        "orders": orders(),
        "measured": [step(), *adds()],
        "pools": pools(),
    } | changed
    return (
        ClaimReport.of([page.FIRST_CALL], results["first_calls"]),
        ClaimReport.of([page.SINGLE_CALL], results["single"]),
        ClaimReport.of([page.UNRUN], results["pipelines"]),
        ClaimReport.of([page.ORDER], results["orders"]),
        ClaimReport.of(page.PROCESS_CLAIMS, results["measured"]),
        ClaimReport.of(page.POOL_CLAIMS, results["pools"]),
    )


def test_each_mistake_runs_a_function_of_the_workloads_in_every_process():
    class Calls:
        def call(self, target):
            return [target] * PROCESSES

    assert page.across(Calls(), tm.a_then_b) == ["perfguide.workloads.timing:a_then_b"] * 5
    assert page.FRESH in page.LEFTOVER.labels and page.OWN_INTERVAL.label in tm.STEP.variants


def test_the_short_answer_advises_what_held_and_quotes_the_checks():
    checks = section_checks()
    answer = page.short_answer(*checks, step())
    assert [c.verdict for report in checks for c in report.claims] == ["HELD"] * 8
    assert answer.advice == answer.recommendations
    assert checks[0][page.FIRST_CALL].quoted in answer.answer
    assert checks[2][page.UNRUN].quoted in answer.answer
    assert "fresh processes of the same step landed 20% apart" in answer.answer


def test_the_short_answer_does_not_advise_a_claim_that_did_not_hold():
    checks = section_checks(first_calls=first_calls(naive_s=2e-4), pipelines=pipelines(0.005))
    answer = page.short_answer(*checks, step())
    assert checks[0][page.FIRST_CALL].verdict == "DID NOT HOLD"
    said = [r.said for r in answer.findings]
    assert said == [page.FIRST_CALL.statement, page.UNRUN.statement]
    assert not any("first call" in r.advice or "pipeline" in r.advice for r in answer.advice)


def test_the_pools_finding_says_what_was_measured_in_its_place():
    checks = section_checks(pools=pools(after_idle_s=1e-5))
    (pools_finding,) = page.short_answer(*checks, step()).findings
    assert pools_finding.said.startswith("An op right after a multi-threaded product was not")


def test_the_first_call_lines_read_the_ten_calls_against_a_steady_one():
    lines = page.first_call_lines(first_calls()).splitlines()
    assert len(lines) == PROCESSES
    assert lines[0] == (
        "first call   5.00 ms, ten calls from the first   1.00 ms a call, steady    100 µs: "
        "reads 10.0x slower"
    )


def test_the_spreads_set_single_calls_beside_blocks():
    single = single_calls()
    # Blocks spread over 10 % of their median: the outer ventiles of 21 take in 99 % of it.
    assert page.spread(single[0]["block_s"]) == pytest.approx(0.099)
    lines = page.clock_spreads(single).splitlines()
    assert lines[0] == "clock resolution: time.time 1.0e-09 s, time.perf_counter 1.0e-09 s"
    assert (
        lines[3]
        == f"{'calibrated blocks':35s} middle 90 % spans {', '.join(['10%'] * 5)} of the median"
    )
    assert page.spread_summary(single).startswith(
        "blocks: middle 90 % spans 10% of their median; single calls: 99% (medians over the "
        "processes); process by process, single calls spread 10.0x the blocks' spread"
    )


def test_the_pipeline_lines_give_the_build_the_run_and_the_tracing():
    assert page.pipeline_times(pipelines()).startswith(
        "building the pipeline 10.0 ms, iterating it 100 ms (medians over the processes); "
        "iterating took 10.0x the build's time"
    )
    assert page.tracing_share(pipelines()) == "5.00 ms, 50% of the build"


def test_the_orders_set_one_after_the_other_against_in_turns():
    lines = page.order_ratios(orders()).splitlines()
    assert [line.split()[:4] for line in lines] == [
        ["B", "/", "A", "sequential"],
        ["B", "/", "A", "interleaved"],
    ]
    assert [line.split()[4] for line in lines] == ["1.100", "1.001"]
    assert page.further_one_after_the_other(orders()[0]) == pytest.approx(95.3, rel=1e-3)


def test_the_process_lines_give_each_processs_own_interval_and_the_published_one():
    lines = page.process_intervals(step()).splitlines()
    assert len(lines) == PROCESSES + 2
    assert lines[0].startswith("process median 100 µs, its own 95 % interval ")
    assert lines[-2] == "the processes' medians lie 20% apart"
    assert lines[-1].startswith("published median 110 µs, where the next run lands here ")
    assert (
        page.add_times(adds())
        == "x + x: 1.00 µs in fresh processes, 2.00 µs in this page's process"
    )


def test_the_pool_lines_set_each_op_against_a_steady_call():
    assert page.pool_times(pools()) == (
        "x + x right after a 512 x 512 NumPy product 10.0 µs, after the product and waiting for "
        "idle 20.0 µs, after a sleep alone 20.0 µs; steady, called again and again 5.00 µs"
    )
    assert page.against_steady(pools()) == (
        "right after the product 2.0x, after the wait 4.0x, after the sleep 4.0x a steady call"
    )


def test_the_steady_call_recipe_times_the_step_the_page_times():
    recipe = run_recipe("timing", "Time steady calls, not the first")
    x = tm.make_input()
    assert float(recipe["step"](x)) == pytest.approx(float(tm.step(x)), rel=1e-6)
