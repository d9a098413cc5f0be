"""The layers of a call compute the same thing, and the count of Python calls is a count."""

import numpy as np
import pytest
import tensorflow as tf

from perfguide.measure import anatomy
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


@pytest.mark.parametrize("layers", ["function", "op"])
def test_each_layer_does_less_than_the_call_around_it(layers):
    # Entering the call one layer deeper skips that layer's Python work: counted, not timed, so
    # the machine's speed cannot decide it.
    if layers == "function":
        timed = anatomy.function_layers(tf.function(eg.tf_identity), X)
    else:
        timed = anatomy.op_layers(X)
    counts = [anatomy.python_calls(t.fn, *t.args, calls=5) for t in timed.values()]
    assert counts == sorted(counts, reverse=True) and len(set(counts)) == len(counts), counts
    assert counts[-1] < counts[0] / 5  # most of the Python work is outside the innermost layer


def test_layers_are_listed_outermost_first():
    assert anatomy.FUNCTION_LAYERS[-1] == "runtime-execute"
    assert tuple(anatomy.op_layers(X)) == anatomy.OP_LAYERS
