"""Functions and models of the shapes readers write, for ``perfguide diagnose`` to survive.

Each is the kind of code TensorFlow's issue threads and Stack Overflow questions show: Python
loops over tensor rows, shape-dependent Python, ``.numpy()`` calls, variables made inside,
``print`` and list appends, several and keyword arguments, integer and bool inputs, dict and
tuple outputs, Python inside the graph, ``tf.cond`` and ``tf.while_loop``, string ops, and
Keras models built three ways. :data:`FUNCTIONS` gives each function its ``--input`` specs.
"""

import keras
import numpy as np
import tensorflow as tf


def python_row_loop(x):
    """A Python loop over the rows: the batch size must be known while tracing."""
    total = tf.constant(0.0)
    for i in range(x.shape[0]):
        total += tf.reduce_max(x[i])
    return total


def reads_numpy(x):
    """Reads a value back to Python: fine eagerly, impossible in a graph."""
    limit = float(tf.reduce_max(tf.abs(x)).numpy()) / 2
    return tf.reduce_mean(tf.clip_by_value(x, -limit, limit))


def creates_variable(x):
    """Makes a variable at every call, as code ported from TF1 does."""
    weights = tf.Variable(tf.ones([x.shape[-1], 4]))
    return tf.matmul(x, weights)


log = []


def prints_and_appends(x):
    """Side effects in Python: run at every eager call, only while tracing in a graph."""
    print("called with", x.shape)
    log.append(x.shape)
    return tf.nn.softmax(x)


def keyword_arguments(x, y, scale=2.0):
    """Several arguments and a keyword one left at its default."""
    return scale * x + tf.reduce_sum(y)


def sparse_loss(logits, labels):
    """Integer labels, as a classifier's loss takes them."""
    return tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )


def masked_mean(x, mask):
    """A bool mask: the selected values' count is known only when it runs."""
    return tf.reduce_mean(tf.boolean_mask(x, mask))


def dict_output(x):
    """A dict of results, as a metrics function returns them."""
    return {"mean": tf.reduce_mean(x), "max": tf.reduce_max(x), "norm": tf.norm(x)}


def tuple_output(x):
    """A tuple of results."""
    mean, variance = tf.nn.moments(x, axes=[0])
    return mean, variance


def py_function_middle(x):
    """NumPy in the middle through ``tf.py_function``."""
    y = tf.py_function(lambda t: np.sort(t.numpy(), axis=-1), [x], tf.float32)
    return tf.reduce_sum(y * 2.0)


def numpy_function_middle(x):
    """NumPy in the middle through ``tf.numpy_function``."""
    y = tf.numpy_function(lambda a: np.sort(a, axis=-1), [x], tf.float32)
    return tf.reduce_sum(y * 2.0)


def cond_branch(x):
    """``tf.cond`` on a value computed from the input."""
    return tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: -x)


def python_if_on_value(x):
    """A Python ``if`` on a tensor, which AutoGraph turns into ``tf.cond``."""
    if tf.reduce_mean(x) > 0:
        return tf.sqrt(tf.abs(x))
    return tf.square(x)


def while_loop(x):
    """``tf.while_loop`` halving until small."""
    return tf.while_loop(lambda v: tf.reduce_max(tf.abs(v)) > 1.0, lambda v: (v / 2.0,), (x,))[0]


def string_ops(words):
    """String ops: lower-case, split and count the pieces."""
    pieces = tf.strings.split(tf.strings.lower(words))
    return pieces.row_lengths()


def reshape_by_shape(x):
    """Python reading the static shape to reshape."""
    return tf.reshape(x, [x.shape[0], -1]) @ tf.ones([x.shape[1] * x.shape[2], 1])


def elementwise_chain(x):
    """Eight elementwise ops on one large tensor: XLA fuses them into one pass."""
    y = x * 1.5 + 0.5
    y = tf.tanh(y) * y - 0.25
    y = tf.maximum(y, 0.0) + tf.abs(x)
    return y * y


def loop_by_number(x, steps):
    """A Python number that sets how many steps a loop takes."""
    for _ in range(steps):
        x = tf.tanh(x)
    return x


def dense_layer(x, w, b):
    """A dense layer by hand."""
    return tf.nn.relu(tf.matmul(x, w) + b)


def scan_cumsum(x):
    """``tf.scan`` over the rows."""
    return tf.scan(lambda acc, row: acc + row, x)


def tensor_array_loop(x):
    """A TensorArray filled in a loop AutoGraph converts."""
    out = tf.TensorArray(tf.float32, size=tf.shape(x)[0])
    for i in tf.range(tf.shape(x)[0]):
        out = out.write(i, tf.reduce_sum(x[i]))
    return out.stack()


def gather_rows(params, indices):
    """Integer indices into a table, as an embedding lookup."""
    return tf.gather(params, indices)


def ragged_output(x):
    """A ragged result: each row's positive values."""
    return tf.ragged.boolean_mask(x, x > 0)


def unique_values(x):
    """``tf.unique``: an output whose size depends on the values."""
    return tf.unique(x).y


def random_augmentation(images):
    """Random noise and a random brightness scale: a different result at every call."""
    noise = tf.random.uniform(tf.shape(images), -0.1, 0.1)
    return images * tf.random.uniform([], 0.8, 1.2) + noise


def normalize_text(text):
    """A text pipeline's first step: lower-case, keep letters and spaces, collapse the spaces."""
    kept = tf.strings.regex_replace(tf.strings.lower(text), "[^a-z ]", "")
    return tf.strings.regex_replace(kept, " +", " ")


def ragged_row_means(rows):
    """The mean of each row of a ragged batch (sequences of different lengths)."""
    return tf.reduce_sum(rows, axis=1) / tf.cast(tf.maximum(rows.row_lengths(), 1), rows.dtype)


def scored_features(features):
    """A feature dict as a recommender's input function gives it: ids to embed, a weight, and
    a title whose length counts."""
    table = tf.reshape(tf.range(40, dtype=tf.float32), [10, 4])
    embedded = tf.reduce_sum(tf.gather(table, features["ids"]), axis=[1, 2])
    title = tf.cast(tf.strings.length(features["title"]), tf.float32)
    return embedded * features["weight"] + title


def feature_inputs():
    """The inputs of :func:`scored_features`: one dict of 32 examples' features."""
    ids = tf.random.stateless_uniform([32, 5], seed=[0, 2], maxval=10, dtype=tf.int32)
    titles = tf.constant([f"Title number {i}" for i in range(32)])
    return ({"ids": ids, "weight": tf.constant(0.5), "title": titles},)


def word_inputs():
    """The inputs of :func:`string_ops`: a batch of sentences."""
    words = [f"The Quick brown FOX {i} jumps" for i in range(64)]
    return (tf.constant(words),)


#: Each function, and its ``--input`` specs (or ``--inputs`` factory).
FUNCTIONS = {
    "python_row_loop": ["float32[16,8]"],
    "reads_numpy": ["float32[64,32]"],
    "creates_variable": ["float32[16,8]"],
    "prints_and_appends": ["float32[8,10]"],
    "keyword_arguments": ["float32[32,8]", "float32[8]"],
    "sparse_loss": ["float32[32,10]", "int32[32]"],
    "masked_mean": ["float32[64]", "bool[64]"],
    "dict_output": ["float32[32,16]"],
    "tuple_output": ["float32[32,16]"],
    "py_function_middle": ["float32[16,32]"],
    "numpy_function_middle": ["float32[16,32]"],
    "cond_branch": ["float32[32]"],
    "python_if_on_value": ["float32[32]"],
    "while_loop": ["float32[64]"],
    "string_ops": "word_inputs",
    "normalize_text": ["string[64]"],
    "ragged_row_means": ["float32[32,1..12]"],
    "scored_features": "feature_inputs",
    "reshape_by_shape": ["float32[8,4,4]"],
    "elementwise_chain": ["float32[512,512]"],
    "loop_by_number": ["float32[16]", "3"],
    "dense_layer": ["float32[32,64]", "float32[64,16]", "float32[16]"],
    "scan_cumsum": ["float32[16,4]"],
    "tensor_array_loop": ["float32[16,4]"],
    "gather_rows": ["float32[100,8]", "int32[16]"],
    "ragged_output": ["float32[8,6]"],
    "unique_values": ["int32[64]"],
    "random_augmentation": ["float32[16,32,32,3]"],
}


@keras.saving.register_keras_serializable(package="diagnose_corpus")
class StackedDense(keras.Model):
    """A subclassed model with a Python loop over its blocks in ``call``."""

    def __init__(self, depth=3, width=16, **kwargs):
        super().__init__(**kwargs)
        self.depth, self.width = depth, width
        self.blocks = [keras.layers.Dense(width, activation="relu") for _ in range(depth)]
        self.head = keras.layers.Dense(1)

    def call(self, x):
        for block in self.blocks:
            x = block(x) + x if x.shape[-1] == self.width else block(x)
        return self.head(x)

    def get_config(self):
        return {**super().get_config(), "depth": self.depth, "width": self.width}


def stacked_inputs():
    """The batch a :class:`StackedDense` predicts (its module imported first registers it)."""
    return (tf.random.stateless_normal([32, 16], seed=[0, 1]),)


def save_models(folder):
    """Save small compiled models to ``folder``: a ``Sequential``, a functional model with two
    inputs (numbers and token ids, as a recommender takes them) and a subclassed one, as
    ``.keras`` files; the two-input one also as a legacy ``.h5`` file and as a SavedModel
    (``model.export``), and the ``Sequential`` as a LiteRT file. Each saved model's path and
    its ``--input`` specs (or ``--inputs`` factory)."""
    keras.utils.set_random_seed(0)
    sequential = keras.Sequential(
        [
            keras.Input((20,), name="features"),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(5),
        ]
    )
    sequential.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    numbers = keras.Input((8,), name="numbers")
    tokens = keras.Input((4,), dtype="int32", name="tokens")
    embedded = keras.layers.Flatten()(keras.layers.Embedding(10, 3)(tokens))
    joined = keras.layers.Concatenate()([keras.layers.Dense(8)(numbers), embedded])
    two_inputs = keras.Model([numbers, tokens], keras.layers.Dense(1)(joined))
    two_inputs.compile("sgd", "mse")
    stacked = StackedDense()
    stacked(stacked_inputs()[0])
    stacked.compile("adam", "mse")
    named = ["tokens=int32[32,4]", "numbers=float32[32,8]"]
    saved = {
        "sequential.keras": (sequential, ["float32[32,20]"]),
        "two_inputs.keras": (two_inputs, ["float32[32,8]", "int32[32,4]"]),
        "two_inputs.h5": (two_inputs, named),
        "stacked.keras": (stacked, "stacked_inputs"),
    }
    for name, (model, _) in saved.items():
        model.save(folder / name)
    two_inputs.export(str(folder / "exported"), verbose=False)
    converter = tf.lite.TFLiteConverter.from_keras_model(sequential)
    (folder / "sequential.tflite").write_bytes(converter.convert())
    more = {"exported": named, "sequential.tflite": []}
    return {folder / name: inputs for name, (_, inputs) in saved.items()} | {
        folder / name: inputs for name, inputs in more.items()
    }


def save_classifier(path):
    """Save a small classifier of four features into three classes to ``path``, compiled and
    trained a step, as a saved model is; its path."""
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.train_on_batch(np.ones((2, 4), np.float32), np.zeros(2))
    model.save(path)
    return path


@keras.saving.register_keras_serializable(package="diagnose_corpus")
class TensorFlowOps(keras.layers.Layer):
    """A layer that calls TensorFlow's ops, not ``keras.ops``: it runs on TensorFlow alone."""

    def call(self, x):
        return tf.math.softplus(x) * tf.math.sigmoid(x)


def tensorflow_ops_inputs():
    """The batch a model of :class:`TensorFlowOps` predicts (its module imported first
    registers the layer)."""
    return (tf.random.stateless_normal([32, 8], seed=[0, 2]),)


def save_tensorflow_ops_model(path):
    """Save a small compiled model with a :class:`TensorFlowOps` layer to ``path``; its path."""
    inputs = keras.Input((8,))
    model = keras.Model(inputs, keras.layers.Dense(4)(TensorFlowOps()(inputs)))
    model.compile("adam", "mse")
    model.save(path)
    return path
