"""
Why is TF2 much slower than TF1? Training loops measured on today's TensorFlow
===============================================================================

A Stack Overflow question, `Why is TensorFlow 2 much slower than TensorFlow 1?
<https://stackoverflow.com/questions/58441514>`_ (2019), reported TensorFlow 1 training 47 % to
276 % faster. Its asker's self-answer timed small, medium and large Conv1D + Dense models through
``fit()`` and ``train_on_batch()``, eagerly and as a graph, with ``keras`` and ``tf.keras``, on
TensorFlow 1.14 and 2.0 with a GTX 1070; each factor, it found, could double the time, and it
ended with DO and DON'T lists. Every other number here is measured with TensorFlow 2.21, where
``tf.keras`` is Keras 3 and Keras 2 lives on as the ``tf_keras`` package.

Each way to train is a *path*. A step is one batch of 32 samples. ``fit`` trains an epoch of 32
batches per call; ``fit-per-batch`` calls ``fit`` on one batch at a time, as the self-answer's
benchmark did; ``train-on-batch`` calls ``train_on_batch``; ``custom-step`` is a hand-written
training step in a ``tf.function``; ``run-eagerly`` and ``jit-compile`` are ``train_on_batch``
on a model compiled with ``run_eagerly=True`` or ``jit_compile=True``; ``tf-data`` feeds ``fit``
from a ``tf.data`` pipeline instead of NumPy arrays, and ``tf-data-no-autotune`` from the same
pipeline with autotuning off; ``steps-per-execution`` runs that pipeline eight batches per call
of ``fit``'s compiled function; ``tf1-session`` is the small model written as a TensorFlow 1
graph, run by ``Session.run``.

.. raw:: html
   :file: ../../_generated/extra/answers/training_loop.answer.html

Every path starts from the same weights and data; tests check that one step of each gives the
same loss and weights. :doc:`How to read these pages </reading>` defines the tables' terms. The
same training on several workers is :doc:`Why doesn't my distributed training scale?
</auto_examples/distributed/plot_distributed>`.
"""

# %%
# Where this page was measured
# ----------------------------
#
# ``Workers`` starts two fresh Python processes and times every path in each, the paths taking
# turns; a time below is the median of the two processes' medians (their mean).

import matplotlib.pyplot as plt

from perfguide.measure.measurement import at_size, by_size
from perfguide.measure.runner import default_device
from perfguide.pages import training_loop as page
from perfguide.processes.pool import Workers
from perfguide.report.publishing import results
from perfguide.report.publishing.show import show
from perfguide.report.tables.comparison import Comparison
from perfguide.report.tables.table import Collapsed
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import training_loop as tl

device = default_device()
workers = Workers(device=device, limits=True)
env, machine = workers.environment, workers.machine_limits
print(results.where_measured(env, device))
print(
    f"peak float32 {machine.peak_flops / 1e9:.0f} GFLOP/s ({machine.how['peak_flops']})"
)

# %%
# The models, the data, and how they are scaled
# ---------------------------------------------
#
# Three configurations, the columns of the grid below: the self-answer's small model on its
# batches of 32 samples × 140 time steps × 30 features; the same model on its "medium data"
# (1,400 time steps); and its medium model with convolutions a quarter as wide. Its large model
# is not trained here; the arithmetic of one step, printed below, tells why.
#
# .. rubric:: The models and how each path trains them
#
# .. literalinclude:: /../perfguide/workloads/training_loop.py
#    :pyobject: small_model
#
# .. literalinclude:: /../perfguide/workloads/training_loop.py
#    :pyobject: medium_model
#
# .. literalinclude:: /../perfguide/workloads/training_loop.py
#    :pyobject: compiled_model
#
# .. literalinclude:: /../perfguide/workloads/training_loop.py
#    :pyobject: Training
#
# .. literalinclude:: /../perfguide/workloads/training_loop.py
#    :pyobject: custom_train_step
#
# .. literalinclude:: /../perfguide/workloads/training_loop.py
#    :pyobject: tf1_session_step

flops = page.step_flops()
print(page.arithmetic(flops, machine))

# %%
# Every path, timed per step
# --------------------------

grid = page.time_grid(workers)
page.grid_heatmap(grid)
plt.show()

# %%

small = grid[page.SMALL]
every_path = Comparison(small, baseline="fit")
show(Collapsed("Every path on the small model and data, in full", every_path))

# %%
# The checks on the small model and data (the self-answer's own benchmark): "at least 2x" is its
# "each factor can double the time"; "at least 1.47x" is the question's "47 % to 276 % faster".

checks = ClaimReport.of(page.SMALL_CLAIMS, small)
show(checks)

# %%
# Autotuning, and the spread of a ``fit`` call
# --------------------------------------------
#
# ``fit`` reads NumPy arrays through a ``tf.data`` pipeline of its own, built anew on every call
# with autotuning on. How much each path's blocks spread in each process (the middle half of its
# block times, against their median):

print(page.autotune_spread(small))

# %%
# .. dropdown:: Why the checks read the pipeline with autotuning off
#
#    Where a path's blocks spread widely, the median of one process can land among its fast calls
#    or its slow ones, which moves every ratio to it. The check of ``tf.data`` against NumPy
#    arrays reads the pipeline with autotuning off, and ``steps_per_execution`` is checked on that
#    same pipeline, so that its check measures that one option; ``fit`` on NumPy arrays cannot
#    turn autotuning off, so every check against ``fit`` carries its spread.

# %%
# Where the time goes: a fixed price per call, then arithmetic
# ------------------------------------------------------------
#
# Every path does the same arithmetic per step; they differ in what a call costs besides it.
# ``fit`` builds a data adapter, an iterator and callbacks on every call. *fit's own price* is
# what a call costs besides its steps: a ``fit`` over n batches takes that price plus n steps,
# so timing ``fit`` over an epoch and over one batch gives both. The price and its share of a
# ``fit`` over an epoch, on the small model and data:

print(page.fit_price(small))

# %%
# Each path's floating-point rate on the small model with 1,400 time steps, against *the peak*,
# the rate this machine reached in a large matrix product. A path far below the peak pays for
# something other than arithmetic.

page.arithmetic_bars(grid[page.LONG], flops[page.LONG], machine)
plt.show()

# %%
# What a step costs beyond its arithmetic is all a TensorFlow 1 session can save. XLA has little
# to fuse: the step is a convolution, a pooling and two small products; the convolution, one
# oneDNN kernel with or without XLA, does most of the arithmetic. Each path's share of the peak
# on the small data, and its time beyond the arithmetic at the peak rate:

print(page.beyond_arithmetic(small, flops[page.SMALL], machine))

# %%
# Keras 3 against Keras 2
# -----------------------
#
# The self-answer found ``tf.keras`` faster than the separate ``keras`` package of the day.
# ``tf.keras`` is Keras 2 (``tf_keras``) when ``TF_USE_LEGACY_KERAS=1`` is set before TensorFlow
# is imported. Fresh processes started with it time both on the small model and data (Keras 3
# imported as ``keras``), through ``train_on_batch`` (``keras-3-train-on-batch``,
# ``keras-2-train-on-batch``) and ``fit`` per batch (``keras-3-fit-per-batch``,
# ``keras-2-fit-per-batch``).

with Workers(device=device, settings=tl.KERAS_VERSIONS.process_settings) as legacy:
    print(f"tf.keras in those processes: Keras {legacy.environment['tf_keras']}")
    versions = legacy.run(tl.KERAS_VERSIONS, quick=True, settle=page.KERAS_CLAIMS)
both = Comparison(versions, baseline="keras-2-train-on-batch")
show(Collapsed("Both Keras, each path, in full", both))

# %%

keras_checks = ClaimReport.of(page.KERAS_CLAIMS, versions)
show(keras_checks)

# %%
# How much longer a ``fit`` on one batch took than ``train_on_batch`` on it, in each Keras:

print(page.fit_beyond_train_on_batch(versions))

# %%
# New batch sizes, new traces?
# ----------------------------
#
# Users reported Keras's ``*_on_batch`` methods tracing again for every new batch size
# (`tensorflow/tensorflow#34907 <https://github.com/tensorflow/tensorflow/issues/34907>`_,
# `tensorflow/tensorflow#38742 <https://github.com/tensorflow/tensorflow/issues/38742>`_). A pass
# here feeds batches of four sizes (32, 24, 16 and 8), all new in the first pass, through
# ``train_on_batch`` (``train-on-batch``), ``predict_on_batch`` (``predict-on-batch``), a plain
# ``tf.function`` step (``tf-function-step``), the same with ``reduce_retracing=True``
# (``reduce-retracing``), and with an ``input_signature`` whose batch dimension is ``None``
# (``input-signature``).
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/training_loop.py
#    :pyobject: each_batch
#
# .. literalinclude:: /../perfguide/workloads/training_loop.py
#    :pyobject: _retracing_step

retracing = workers.run(tl.KERAS_RETRACING, quick=True)
new_sizes = Comparison(retracing, baseline="train-on-batch")
show(Collapsed("Each path over batches of new sizes, in full", new_sizes))

# %%
# How many times each ``tf.function`` traced in its first pass (Keras keeps its own compiled
# function to itself), and what the first pass cost beyond a later one:

print(page.first_passes(retracing))
show(ClaimReport([page.retrace_claim(retracing)]))

# %%
# Predicting: model(x), predict, predict_on_batch
# -----------------------------------------------
#
# ``predict`` is built for large inputs: it batches them, runs a loop with callbacks and gathers
# the results into a NumPy array. ``model(x)`` (``model-call``) runs the layers eagerly;
# ``predict_on_batch`` runs one compiled call; ``tf-function`` wraps the model in a
# ``tf.function``. The small model on batches of 1 to 512 samples (serving has its own
# chapter: :doc:`How should I serve my model on a CPU? </auto_examples/serving/plot_serving>`):

inference = page.time_inference(workers)
page.inference_plot(inference)
plt.show()

# %%

one_sample = Comparison(at_size(inference, 1), baseline="predict")
show(Collapsed("Each way to predict one sample, in full", one_sample))

# %%

predicting = ClaimReport.of(page.INFERENCE_CLAIMS, by_size(inference))
show(predicting)

# %%
# At 512 samples ``predict`` makes 16 compiled calls (its default ``batch_size`` is 32) where
# ``predict_on_batch`` makes one. Those 16 calls, from ``predict_on_batch``'s time at 32:

print(page.predict_calls(inference))

# %%
# The self-answer's lists, checked here
# -------------------------------------
#
# Each rule of the self-answer's lists is matched to the path that does what it names and judged
# against ``custom-step`` in the same run: a DO holds where its path takes less than twice that
# step's time, a DON'T where it takes at least twice. The rule about large models is judged on
# the 1,400-step samples, the rule about ``keras`` on Keras 2 against Keras 3's
# ``train_on_batch``.

show(page.rules_table(grid, versions))

# %%

summary = "This build's own DO and DON'T lists, by the same measure over every column"
show(Collapsed(summary, page.own_rules(grid)))

# %%
# The question's benchmark, here
# ------------------------------
#
# The self-answer timed 200 calls per configuration.

scenario = page.benchmark_scenario(small)
show(Collapsed("200 steps per path, as in the short answer", scenario))

# %%
# The small model's paths in order: the first one's margin over the runner-up where it is ahead
# of every other path, else the paths tied with it.

print(page.fastest_path(small))

# %%
# Short answer
# ------------
#
# The box at the top, built from the checks above.

answer = page.short_answer(small, checks, keras_checks, predicting, env["usable_cores"])
# sphinx_gallery_start_ignore
answer.publish("training_loop")
# sphinx_gallery_end_ignore
print(answer)

# %%
# Take the numbers with you
# -------------------------
#
# Everything measured here, with the environment record, is published as
# `training_loop.json <../../measurements/training_loop.json>`_, in the shape
# ``python -m perfguide run train-small-model --json PATH`` writes; the
# :doc:`build machine </environment>` page describes the machine.
#
# .. dropdown:: To rerun this page
#
#    Install the guide's package from a checkout of its repository
#    (``python -m pip install -e ".[cpu]"``, and ``python -m pip install --no-deps tf-keras`` for
#    Keras 2, whose wheel would otherwise install a second TensorFlow) and run the script
#    downloaded below. ``python -m perfguide run keras-versions`` starts its own process with
#    ``TF_USE_LEGACY_KERAS=1``.

trained = [m for column in grid.values() for m in column]
published = trained + versions + retracing + inference
print(results.publish("training_loop", env, published))
workers.close()

# %%
# Recipes
# -------
#
# Each recipe has its own tiny model and data and a check that it works, after these imports:
import keras
import numpy as np
import tensorflow as tf

# %%
# A custom training step in a tf.function
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# One compiled call per batch, with no ``fit`` built around it: the loop to use in place of
# ``fit`` called once per batch, or of eager training.
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(0.1)
optimizer.build(model.trainable_variables)  # its state made outside: one trace


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
    return loss


x = np.random.default_rng(0).standard_normal((32, 8)).astype(np.float32)
y = x.sum(axis=1, keepdims=True)
losses = [float(train_step(x, y)) for _ in range(20)]
assert losses[-1] < losses[0] / 2
assert train_step.experimental_get_tracing_count() == 1

# %%
# Several batches a call with steps_per_execution
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# ``fit`` fed from a ``tf.data`` pipeline, with autotuning off as in this page's checks (measured
# on a 2-core CPU), running eight batches per call of its compiled function; it trains the same
# weights as one batch per call.
x = np.random.default_rng(0).standard_normal((256, 8)).astype(np.float32)
y = x.sum(axis=1, keepdims=True)
options = tf.data.Options()
options.autotune.enabled = False
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).with_options(options)
weights = {}
for steps in (1, 8):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.01), "mse", steps_per_execution=steps)
    model.fit(dataset, epochs=2, verbose=0, shuffle=False)
    weights[steps] = model.get_weights()
for one, eight in zip(weights[1], weights[8], strict=True):
    np.testing.assert_allclose(one, eight, rtol=1e-5)

# %%
# Predict a small batch with predict_on_batch or model(x)
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Both skip the batching loop and callbacks that ``predict`` runs, and answer the same.
model = keras.Sequential(
    [
        keras.Input((8,)),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dense(1),
    ]
)
x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
expected = model.predict(x, verbose=0)  # the slow way, for the check
np.testing.assert_allclose(model.predict_on_batch(x), expected, rtol=1e-6)
np.testing.assert_allclose(model(x, training=False), expected, rtol=1e-6)
