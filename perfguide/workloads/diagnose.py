"""Functions that are slow for different reasons, for ``perfguide diagnose`` to find out why
(the diagnose chapter's, installed with the package so that its script runs alone).

Try one yourself, for example::

    python -m perfguide diagnose perfguide.workloads.diagnose:row_norms --input float32[32,16]
"""

import numpy as np
import tensorflow as tf


@tf.function
def scale(x, factor):
    """Called with a new Python number, a tf.function traces anew: ``factor`` is one."""
    return tf.nn.relu(x) * factor


def row_norms(x):
    """A Python loop of small ops: each row's norm, added one at a time."""
    total = tf.constant(0.0)
    for i in range(32):
        total += tf.norm(x[i])
    return total


def product(a, b):
    """One large matrix product: the arithmetic is the cost."""
    return tf.matmul(a, b)


def clipped_mean(x):
    """Reads a value back to Python with .numpy(): fine eagerly, impossible in a graph."""
    limit = float(tf.reduce_max(tf.abs(x)).numpy()) / 2
    return tf.reduce_mean(tf.clip_by_value(x, -limit, limit))


def log_magnitude(x):
    """NumPy inside the graph through tf.numpy_function: the runtime waits for Python."""
    logs = tf.numpy_function(lambda a: np.log1p(np.abs(a)), [x], tf.float32)
    return tf.reduce_sum(logs)
