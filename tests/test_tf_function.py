"""tf.function chapter: variants agree, and tracing behaves as the chapter says."""

import numpy as np
import pytest
import tensorflow as tf

from perfguide.measure import runner
from perfguide.measure.measurement import Measurement
from perfguide.pages import tf_function as page
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import tf_function as tfn
from tests.recipes import run_recipe


def reference_series(x):
    return tfn.series_numpy(x.astype(np.float64))


@pytest.mark.parametrize("variant", tfn.SERIES.variants)
def test_series_variants_agree_with_float64(variant):
    x = tfn.make_matrix(50)
    result = np.asarray(tfn.SERIES.make_call(variant, 50)())
    np.testing.assert_allclose(result, reference_series(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("variant", tfn.ROWS.variants)
def test_row_variants_sum_the_row_means(variant):
    x = tfn.make_matrix(64)
    result = float(tfn.ROWS.make_call(variant, 64)())
    assert result == pytest.approx(float(x.astype(np.float64).mean(axis=1).sum()), abs=1e-4)


def test_retracing_variants_compute_the_same_and_differ_only_in_traces():
    python_arg = tfn.RETRACING.make_call("python-argument", 8)
    tensor_arg = tfn.RETRACING.make_call("tensor-argument", 8)
    for _ in range(3):
        np.testing.assert_array_equal(python_arg(), tensor_arg())
    (python_fn,), (tensor_fn,) = python_arg.traced, tensor_arg.traced
    assert python_fn.experimental_get_tracing_count() == 3
    assert tensor_fn.experimental_get_tracing_count() == 1


def test_harness_flags_the_retracing_variant_only():
    by_label = {m.label: m for m in runner.run(tfn.RETRACING, size=8, quick=True)}
    assert by_label["python-argument"].retraced
    assert by_label["tensor-argument"].retraces == 0


def shapes(count):
    return [tf.zeros([n]) for n in range(1, count + 1)]


@pytest.mark.parametrize(
    ("options", "arguments", "traces"),
    [
        ({}, [1.0, 2.0, 3.0, 4.0], 4),  # a Python number: one trace per distinct value
        ({}, [1.0, 1.0, 1.0], 1),
        ({}, [tf.constant(v) for v in (1.0, 2.0, 3.0, 4.0)], 1),  # tensors of one shape
        ({}, shapes(4), 4),  # a new shape retraces...
        ({"reduce_retracing": True}, shapes(4), 2),  # ...until generalized to any length
        ({"input_signature": [tf.TensorSpec([None]), tf.TensorSpec([])]}, shapes(4), 1),
    ],
)
def test_trace_counts(options, arguments, traces):
    assert tfn.count_traces(options, arguments) == traces


def test_print_runs_once_per_trace_and_tf_print_every_call():
    python_lines, tf_lines = tfn.print_lines(calls=3)
    assert len(python_lines) == 1
    assert len(tf_lines) == 3


def test_python_number_is_frozen_at_trace_time_and_variable_is_not():
    results = tfn.frozen_global_results()
    assert results["Python number"] == (4.0, 4.0)
    assert results["tf.Variable"] == (4.0, 8.0)


def test_running_functions_eagerly_runs_python_every_call_and_is_restored():
    with tfn.functions_run_eagerly():
        python_lines, _ = tfn.print_lines(calls=3)
    assert len(python_lines) == 3
    assert not tf.config.functions_run_eagerly()


@pytest.mark.parametrize("steps", [1, 10, 50])
def test_both_loops_compute_the_same(steps):
    x = tf.linspace(-1.0, 1.0, 16)
    results = [tfn.trace_loop(variant, steps)(x) for variant in tfn.LOOPS]
    np.testing.assert_allclose(*results, rtol=1e-6)


def test_unrolled_graph_grows_with_the_loop_and_graph_loop_does_not():
    unrolled = [tfn.graph_op_count("python-for", n) for n in (10, 100)]
    graph_loop = [tfn.graph_op_count("tf-range", n) for n in (10, 100)]
    assert unrolled[1] > 5 * unrolled[0]
    assert graph_loop[0] == graph_loop[1]


def measured(label, seconds, *, first_call_s=0.0, size=100, retraces=None):
    return Measurement(
        label, "call", 1, 1, first_call_s, (seconds,) * 5, size=size, retraces=retraces
    )


#: The article's loop shaped like a build's: the graph and XLA far ahead of eager, and the
#: debugging switch no faster than eager.
SERIES_MEDIANS = {
    "numpy": 4e-3,
    "eager": 40e-3,
    "tf-function": 5e-3,
    "xla": 5e-3,
    "run-eagerly": 38e-3,
}


def series_measured():
    return [
        measured(label, s, first_call_s=0.3 if label == "tf-function" else 0)
        for label, s in SERIES_MEDIANS.items()
    ]


RETRACING = [
    measured("python-argument", 11e-3, retraces=10),
    measured("tensor-argument", 0.6e-3, retraces=0),
]
ROWS = [measured("row-loop", 1.2e-3), measured("vectorized", 0.4e-3)]


def traced_at_every_step_count(tf_range_s=20e-3):
    """Traces shaped like a build's: the unrolled loop's grows with its steps, the graph loop's
    (``tf_range_s``) does not."""
    return [
        m
        for steps in page.LOOP_STEPS
        for m in (
            measured("python-for", 1.5e-3 * steps, size=steps),
            measured("tf-range", tf_range_s, size=steps),
        )
    ]


@pytest.mark.parametrize(
    ("workload", "checks"),
    [
        (tfn.SERIES, page.SERIES_SETTLE),
        (tfn.RETRACING, [page.TENSOR_ARGUMENT]),
        (tfn.TRACING, [page.GRAPH_LOOP]),
        (tfn.ROWS, [page.VECTORIZE]),
    ],
    ids=lambda value: getattr(value, "name", ""),
)
def test_the_pages_checks_name_the_workloads_variants(workload, checks):
    for check in checks:
        assert set(check.labels) <= set(workload.variants)


def test_the_first_call_is_checked_against_steady_calls_process_by_process():
    assert page.FIRST_CALL.variant in tfn.SERIES.variants
    report = ClaimReport.of(page.SERIES_CHECKS, series_measured())
    first_call = report[page.FIRST_CALL]
    assert first_call.statement == (
        "the first tf.function call, which traces, costs at least 10 steady calls"
    )
    assert (first_call.verdict, first_call.effect) == ("HELD", "60.0x a steady call")


def test_the_articles_scenario_sets_its_ten_calls_at_each_median_but_the_switchs():
    table = page.articles_scenario(series_measured())
    assert [row[0] for row in table.rows] == ["numpy", "eager", "tf-function", "xla"]
    assert table.rows[1] == ["eager", "about 0.12 s", "400 ms"]
    assert table.rows[3] == ["xla", "not run", "50.0 ms"]


def test_the_tracing_claims_hold_only_where_each_count_is_as_expected():
    expected = {"Python floats": 4, "four shapes": 4}
    claims = page.tracing_claims(
        ["print"],
        ["tf.print"] * 3,
        {"Python number": (4.0, 4.0), "tf.Variable": (4.0, 8.0)},
        {"Python floats": 4, "four shapes": 2},
        expected,
    ).claims
    assert [c.statement for c in claims[2:]] == [
        "Python floats: 4 trace(s)",
        "four shapes: 4 trace(s)",
    ]
    assert [c.verdict for c in claims] == ["HELD", "HELD", "HELD", "DID NOT HOLD"]
    printed_every_call = page.tracing_claims(
        ["print"] * 3,
        ["tf.print"] * 3,
        {"Python number": (4.0, 8.0), "tf.Variable": (4.0, 8.0)},
        {},
        {},
    ).claims
    assert [c.verdict for c in printed_every_call] == ["DID NOT HOLD", "DID NOT HOLD"]


def test_the_harness_is_checked_to_have_seen_the_retracing():
    report = ClaimReport.of(page.RETRACING_CHECKS, RETRACING)
    assert [c.verdict for c in report.claims] == ["HELD", "HELD"]
    unseen = [measured("python-argument", 11e-3, retraces=0), RETRACING[1]]
    seen = ClaimReport.of(page.RETRACING_CHECKS, unseen).claims[1]
    assert (seen.verdict, seen.evidence) == ("DID NOT HOLD", "retraces while timed: 0 and 0")


class FakeWorkers:
    def __init__(self):
        self.runs = []

    def run(self, workload, *, size, quick, settle):
        self.runs.append((size, tuple(settle), quick))
        return [measured(loop, 1e-2, size=size) for loop in workload.variants]


def test_the_loops_are_traced_quickly_at_every_step_count_and_settled_at_the_largest():
    workers = FakeWorkers()
    tracing = page.trace_loops(workers)
    assert [m.size for m in tracing] == [steps for steps in page.LOOP_STEPS for _ in tfn.LOOPS]
    assert all(quick for _, _, quick in workers.runs)
    settled_last = [()] * (len(page.LOOP_STEPS) - 1) + [(page.GRAPH_LOOP,)]
    assert [settle for _, settle, _ in workers.runs] == settled_last


def test_the_unrolled_loop_claims_read_the_graph_sizes_and_the_largest_step_count():
    sizes = {"python-for": [42, 4002], "tf-range": [18, 18]}
    claims = page.unrolled_loop_claims(traced_at_every_step_count(), sizes).claims
    assert claims[0].evidence == "python-for 42 → 4002 ops, tf-range 18 → 18 ops"
    assert claims[1].statement == page.GRAPH_LOOP.statement
    assert [c.verdict for c in claims] == ["HELD", "HELD"]
    growing = {"python-for": [42, 4002], "tf-range": [18, 19]}
    assert page.unrolled_loop_claims(traced_at_every_step_count(), growing).claims[0].held is False


def test_run_eagerly_sets_the_switchs_time_beside_eagers_and_the_graphs():
    lines = page.run_eagerly_times(["print"] * 3, series_measured()).splitlines()
    assert lines == [
        "with functions run eagerly, print wrote 3 line(s) in 3 calls",
        "run eagerly 38.0 ms per call, eager 40.0 ms, tf.function 5.00 ms",
    ]
    claims = page.run_eagerly_claims(["print"], series_measured()).claims
    assert [c.verdict for c in claims] == ["DID NOT HOLD", "HELD"]
    assert claims[1].statement == page.RUN_EAGERLY.statement


def short_answer(rows=ROWS, tf_range_s=20e-3):
    series = series_measured()
    return page.short_answer(
        series,
        ClaimReport.of(page.SERIES_CHECKS, series),
        ClaimReport.of(page.RETRACING_CHECKS, RETRACING),
        traced_at_every_step_count(tf_range_s),
        ClaimReport.of([page.VECTORIZE], rows),
    )


def test_the_short_answer_advises_what_held_and_quotes_the_checks():
    answer = short_answer()
    assert [r.advised for r in answer.recommendations] == [True] * 4
    speedup = page.GRAPH_SPEEDUP.check(series_measured())
    assert f"99 products, {speedup.stated}." in answer.answer
    assert "its first-call overhead was 295 ms" in answer.answer
    assert answer.scenario.caption == "ten calls of the 99-product loop"
    row_loop_faster = short_answer(
        rows=[measured("row-loop", 0.4e-3), measured("vectorized", 1.2e-3)]
    )
    assert [r.advised for r in row_loop_faster.recommendations] == [True, True, True, False]
    unrolled_as_fast = short_answer(tf_range_s=1.5)
    assert not unrolled_as_fast.recommendations[2].advised


@pytest.mark.parametrize(
    "heading",
    [
        "Give a tf.function an input signature",
        "Loop over tf.range inside tf.function",
        "Read a tf.Variable, not a Python global",
        "Print from a graph with tf.print",
    ],
)
def test_the_recipes_hold_as_pasted(heading):
    run_recipe("tf_function", heading)
