"""The layers of a call compute the same thing, and the count of Python calls is a count."""

import numpy as np
import tensorflow as tf

from perfguide.measure import anatomy
from perfguide.measure.runner import run
from perfguide.workloads import eager as eg

X = tf.constant(np.arange(8, dtype=np.float32))


def value(result):
    (tensor,) = result if isinstance(result, list) else [result]
    return tensor.numpy()


def test_every_layer_returns_the_input():
    function = tf.function(eg.tf_identity)
    layers = {**anatomy.function_layers(function, X), **anatomy.op_layers(X)}
    for name, timed in layers.items():
        np.testing.assert_array_equal(value(timed()), X.numpy(), err_msg=name)


def test_a_tf_function_call_makes_more_python_calls_than_an_eager_op():
    function = tf.function(eg.tf_identity)
    op_calls = anatomy.python_calls(tf.identity, X, calls=20)
    function_calls = anatomy.python_calls(function, X, calls=20)
    assert 0 < op_calls < function_calls
    assert op_calls == anatomy.python_calls(tf.identity, X, calls=40)  # a count, not a time


def test_inner_layers_are_not_slower_than_the_call_around_them():
    by_label = {m.label: m for m in run(eg.FUNCTION_LAYERS, quick=True)}
    assert by_label["runtime-execute"].median_s < by_label["tf-function"].median_s


def test_layers_are_listed_outermost_first():
    assert anatomy.FUNCTION_LAYERS[-1] == "runtime-execute"
    assert tuple(anatomy.op_layers(X)) == anatomy.OP_LAYERS
