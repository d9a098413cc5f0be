"""
Diagnose your own code
======================

Every chapter of this guide answers somebody else's "why is my TensorFlow code slow?". This page
shows the command that answers it for yours, on your machine::

    python -m perfguide diagnose path/to/your_file.py:your_function --input float32[32,128]

It measures your function the way the chapters measure their workloads: eagerly, as a
``tf.function`` and compiled with ``jit_compile=True``, in several fresh processes that time the
forms in turns, first calls apart, each form's result checked against the eager one. It reads
the traced graph (ops per call, FLOPs, bytes, ops that leave the graph for Python, with their
source lines), prices an eager op and profiles a graph call, calls the function with other
typical inputs to count retraces (and the memory each keeps), calls each form many times to
see whether the process's memory grows per call, and sets the work against this machine's
measured peak and memory bandwidth. Then it says what bounds the function here and which change pays against
your code as you wrote it (a plain function eagerly, a ``tf.function`` as one), each
recommendation a claim checked on your function, with the chapter that explains it. A change
that measured slower, or could not be told apart, is listed as measured, never as advice; where
nothing beats your code, the answer is to keep it. Other forms are alternatives, so of those
that beat your code only the ones the numbers cannot tell from the fastest are advised (another
is listed as measured, with how much slower it was), and a change is put first only with its
margin over the runner-up; where they tie, the answer names them together. A form
that cannot be built (a function that reads ``.numpy()``, needs a static batch size or makes a
variable at every call) is a finding with its reason and your source line, and the rest is
still measured. The first line printed is the answer; ``--json`` also carries every finding
with a kind a program can act on.

Arguments are given in order, one ``--input`` each: a tensor as a dtype and a shape
(``float32[32,128]``, ``int32[32]``, ``float32[]`` for a scalar, ``string[64]`` for text)
filled with random values, a ragged batch by its rows' lengths (``float32[32,1..20]``), or a
Python number as itself (``3``, ``0.5``). Where they need to be more than random, or are a dict
of features, ``--inputs file.py:make_inputs`` names a function that returns them. ``--json`` writes a results file that
``perfguide show`` and ``perfguide compare`` read (the diagnosis rides along in it); ``--html``
writes a one-page report with the plot below; ``--docs-url`` points the chapter links at where
you read this guide.

Pointed at a saved Keras model instead (``python -m perfguide diagnose model.keras --input
float32[32,140,30]``), it times ``predict``, ``model(x)``, ``predict_on_batch`` and ``model(x)``
inside a ``tf.function`` on that batch, and the model converted for serving (its SavedModel,
LiteRT, ONNX Runtime and OpenVINO, where installed; see :doc:`How should I serve my model on a CPU?
</auto_examples/serving/plot_serving>`), each checked to answer as ``predict`` does;
at that batch and at one request a call (from a batch of one, at a batch of 32, ``predict``'s
default) it names a fastest form only where the numbers separate it from the runner-up, else
the forms tied. For a compiled model it times a training step through ``fit`` called as you
would call it, once over an epoch of many batches (your batch repeated, up to 64),
``train_on_batch`` and a custom ``tf.function`` step, each checked to train the same weights,
and ``fit`` called on one batch, which with the epoch prices a ``fit`` call apart from its
steps; and judges them against ``predict`` and ``fit``. A Keras file also loads on Keras 3's
other backends (JAX, and OpenVINO for inference), each in fresh processes of its own: a backend
whose predictions agree with TensorFlow's has its ``predict`` and ``fit`` timed against
TensorFlow's, and one that cannot run the model is a finding with the reason (see
:doc:`Should I switch Keras's backend? </auto_examples/keras_backends/plot_keras_backends>`).
A conversion that fails is reported in one line with its reason, and the rest of the report
still comes. A SavedModel directory is
timed through its serving signature, as TensorFlow Serving calls it, beside the signature
compiled with XLA and converted for LiteRT, ONNX Runtime and OpenVINO; a ``.tflite`` file in LiteRT's
interpreter with every core, with one, and with XNNPACK off. A model's inputs may be named as
it names them (``--input tokens=int32[32,4]``). From Python or a notebook,
``perfguide.diagnose(function, *example_args)`` runs the same code and shows its report inline:
see :doc:`Diagnose your code from a notebook </notebook>`.

To install the command on your machine, see :doc:`Run the guide on your machine
</your_machine>`. Below, the command runs on three functions that are slow for three different
reasons, then on two that meet a graph's limits (one cannot be traced, one calls Python from
inside the graph), while this page is built; what it prints is what you would see.
"""

# %%
# Where this page was measured
# ----------------------------
#
# The command's own functions, called in view: the page's diagnoses share two fresh processes
# (the command starts its own). The functions it diagnoses come with the package, in
# ``perfguide.workloads.diagnose``; give the command ``your_file.py:your_function`` for yours.

import shutil
import tempfile
from pathlib import Path

from perfguide.pages import diagnose as page
from perfguide.processes.pool import Workers
from perfguide.report.publishing import results

workers = Workers(limits=True)
print(results.where_measured(workers.environment))
FUNCTIONS = "perfguide.workloads.diagnose"


# %%
# A tf.function called with Python numbers
# ----------------------------------------
#
# .. literalinclude:: /../perfguide/workloads/diagnose.py
#    :pyobject: scale
#
# ``python -m perfguide diagnose perfguide.workloads.diagnose:scale --input float32[64,256]
# --input 0.5 --quick``

page.diagnose(workers, f"{FUNCTIONS}:scale", "float32[64,256]", "0.5")

# %%
# A Python loop of small ops
# --------------------------
#
# .. literalinclude:: /../perfguide/workloads/diagnose.py
#    :pyobject: row_norms
#
# ``python -m perfguide diagnose perfguide.workloads.diagnose:row_norms
# --input float32[32,16] --quick``

page.diagnose(workers, f"{FUNCTIONS}:row_norms", "float32[32,16]")

# %%
# One large product
# -----------------
#
# .. literalinclude:: /../perfguide/workloads/diagnose.py
#    :pyobject: product
#
# ``python -m perfguide diagnose perfguide.workloads.diagnose:product
# --input float32[1024,1024] --input float32[1024,1024] --quick``

page.diagnose(
    workers, f"{FUNCTIONS}:product", "float32[1024,1024]", "float32[1024,1024]"
)

# %%
# A function that cannot be a graph
# ---------------------------------
#
# .. literalinclude:: /../perfguide/workloads/diagnose.py
#    :pyobject: clipped_mean
#
# ``.numpy()`` asks for a value, and a graph being traced has none yet, so ``tf.function`` and
# XLA cannot run this function. The command says so with the line, times it eagerly all the
# same, and reads a profile of eager calls for how much of a call is its ops: the rest is the
# most a graph could save, were the ``.numpy()`` replaced by a tensor op.
#
# ``python -m perfguide diagnose perfguide.workloads.diagnose:clipped_mean
# --input float32[256,64] --quick``

page.diagnose(workers, f"{FUNCTIONS}:clipped_mean", "float32[256,64]")

# %%
# A graph that waits for Python
# -----------------------------
#
# .. literalinclude:: /../perfguide/workloads/diagnose.py
#    :pyobject: log_magnitude
#
# NumPy inside the function through ``tf.numpy_function``: in a graph, the runtime stops at that op
# and waits for the interpreter. Whether ``tf.function`` pays here is the first line of the
# answer. The command names the op and its line, and prices the share of a graph call spent in
# Python from a profiler trace: the part of the call no graph can speed up. Replacing the NumPy
# with TensorFlow ops is what would let a graph or XLA pay.
#
# ``python -m perfguide diagnose perfguide.workloads.diagnose:log_magnitude
# --input float32[64] --quick``

page.diagnose(workers, f"{FUNCTIONS}:log_magnitude", "float32[64]")

# %%
# A SavedModel of two inputs
# --------------------------
#
# A model of the shape recommenders and tabular models have, numeric features beside token ids,
# exported as TensorFlow Serving loads it:

import keras

folder = Path(tempfile.mkdtemp(prefix="perfguide-exported-"))
exported = str(folder / "exported")

numbers = keras.Input((8,), name="numbers")
tokens = keras.Input((4,), dtype="int32", name="tokens")
embedded = keras.layers.Flatten()(keras.layers.Embedding(1000, 16)(tokens))
joined = keras.layers.Concatenate()([numbers, embedded])
hidden = keras.layers.Dense(64, activation="relu")(joined)
model = keras.Model([numbers, tokens], keras.layers.Dense(1)(hidden))
model.export(exported, verbose=False)

# %%
# ``python -m perfguide diagnose exported --input numbers=float32[32,8] --input
# tokens=int32[32,4] --quick``

page.diagnose(workers, exported, "numbers=float32[32,8]", "tokens=int32[32,4]")
workers.close()
shutil.rmtree(folder)

# %%
# Recipes
# -------
#
# The fixes the findings above point to, each checked to compute what the slow function did.
#
# Pass numbers as tensors
# ~~~~~~~~~~~~~~~~~~~~~~~
#
# A Python number is part of a ``tf.function``'s signature, so every new value traces a new
# graph; a tensor of the same dtype and shape reuses the one graph.
import numpy as np
import tensorflow as tf


@tf.function
def scale(x, factor):
    return tf.nn.relu(x) * factor


x = tf.random.normal([64, 256])
for factor in (0.5, 0.25, 2.0):
    scale(x, tf.constant(factor))
assert scale.experimental_get_tracing_count() == 1

# %%
# One op over the rows instead of a Python loop
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# A loop of small ops dispatches each op from Python; one op over a whole axis dispatches once.
x = tf.random.normal([32, 16])
loop = sum(tf.norm(x[i]) for i in range(32))
np.testing.assert_allclose(tf.reduce_sum(tf.norm(x, axis=1)), loop, rtol=1e-5)

# %%
# Keep a value a tensor instead of calling .numpy()
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# A graph has no values while it is traced; the same arithmetic on the tensor traces.


@tf.function
def clipped_mean(x):
    limit = tf.reduce_max(tf.abs(x)) / 2
    return tf.reduce_mean(tf.clip_by_value(x, -limit, limit))


x = tf.random.normal([256, 64])
limit = float(tf.reduce_max(tf.abs(x)).numpy()) / 2
expected = tf.reduce_mean(tf.clip_by_value(x, -limit, limit))
np.testing.assert_allclose(clipped_mean(x), expected, rtol=1e-6)

# %%
# TensorFlow ops instead of tf.numpy_function
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# The graph then runs without waiting for Python, and XLA can compile it.


@tf.function(jit_compile=True)
def log_magnitude(x):
    return tf.reduce_sum(tf.math.log1p(tf.abs(x)))


x = tf.random.normal([64])
np.testing.assert_allclose(
    log_magnitude(x), np.log1p(np.abs(x.numpy())).sum(), rtol=1e-5
)
