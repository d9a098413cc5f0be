"""tf.function chapter: variants agree, and tracing behaves as the chapter says."""

import numpy as np
import pytest
import tensorflow as tf

from perfguide.measure import runner
from perfguide.workloads import tf_function as tfn


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
