"""Eager chapter: variants agree; the custom gradients behave as the chapter says."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from perfguide.workloads import eager as eg


def host(result):
    return np.asarray(result.numpy() if hasattr(result, "numpy") else result)


def host_values(result):
    """A variant's result on the host: a runtime call returns a list of one tensor."""
    if isinstance(result, list):
        (result,) = result
    return host(result)


@pytest.mark.parametrize(
    "workload",
    [eg.ADD, eg.MATMUL, eg.SMALL_OPS, eg.CALL_OVERHEAD, eg.OP_LAYERS, eg.FUNCTION_LAYERS],
)
@pytest.mark.parametrize("size", [1, 100, 4096])
def test_variants_agree(workload, size):
    results = [host_values(workload.make_call(v, size)()) for v in workload.variants]
    for variant, result in zip(workload.variants[1:], results[1:], strict=True):
        np.testing.assert_allclose(result, results[0], rtol=1e-5, atol=1e-6, err_msg=variant)


def test_matmul_squares_the_largest_square_that_fits():
    assert host(eg.MATMUL.make_call("numpy", 10)()).shape == (3, 3)


def test_gradient_variants_agree():
    eager, graph = (eg.GRADIENT.make_call(v, 8)() for v in eg.GRADIENT.variants)
    for a, b in zip(eager, graph, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("variant", eg.LOG1PEXP)
def test_log1pexp_variants_agree_where_all_are_safe(variant):
    value, gradient = eg.LOG1PEXP_WORKLOAD.make_call(variant, 256)()
    x = 10 * eg.make_vector(256).astype(np.float64)
    # log(1 + e^x) without log1p loses relative precision where e^x is tiny: compare absolutely.
    np.testing.assert_allclose(value.numpy(), np.logaddexp(0, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gradient.numpy(), eg.sigmoid_float64(x), rtol=1e-3, atol=1e-6)


X = tf.constant(np.linspace(-80, 120, 401).astype(np.float32))


def gradient_relative_error(fn):
    _, gradient = eg.value_and_gradient(fn, X)
    reference = eg.sigmoid_float64(X.numpy())
    return np.abs(gradient.numpy() / reference - 1)


def test_naive_gradient_overflows_for_large_x():
    error = gradient_relative_error(eg.log1pexp_naive)
    assert np.isnan(error[X.numpy() > 89]).all()
    assert np.isfinite(error[X.numpy() < 89]).all()
    assert error[X.numpy() < 70].max() < 1e-6


def test_article_custom_gradient_is_finite_but_cancels_for_very_negative_x():
    error = gradient_relative_error(eg.log1pexp_custom)
    assert np.isfinite(error).all()
    assert error[X.numpy() < -20].max() > 0.5


def test_stable_custom_gradient_is_finite_and_float32_accurate_everywhere():
    error = gradient_relative_error(eg.log1pexp_stable)
    assert error.max() < 1e-6
    value, _ = eg.value_and_gradient(eg.log1pexp_stable, X)
    np.testing.assert_allclose(
        value.numpy(), np.logaddexp(0, X.numpy().astype(np.float64)), rtol=1e-6
    )


@pytest.mark.parametrize("fn", eg.LOG1PEXP.values())
def test_nested_tapes_give_the_second_derivative(fn):
    x = tf.constant(np.linspace(-10, 10, 21).astype(np.float32))
    s = eg.sigmoid_float64(x.numpy())
    np.testing.assert_allclose(
        eg.second_derivative(fn, x).numpy(), s * (1 - s), rtol=1e-4, atol=1e-7
    )


def test_custom_gradients_run_more_ops_than_the_naive_gradient():
    x = tf.constant(eg.make_vector(16))
    counts = {
        name: sum(eg.graph_op_counts(functools.partial(eg.value_and_gradient, fn), x).values())
        for name, fn in eg.LOG1PEXP.items()
    }
    assert counts["naive"] < counts["custom-gradient"] < counts["stable-custom-gradient"]


def test_matmul_flops_counts_two_operations_per_multiply_add():
    assert eg.matmul_flops(100) == 2 * 10**3
