"""
Should I switch Keras's backend?
================================

Keras 3 runs the same model on TensorFlow, JAX or OpenVINO, and Keras's own README promises
speed-ups "ranging from 20% to 350%" to those who pick the right backend for their model ("often
JAX!", it adds). Users found the opposite too: in
`keras-team/keras#18648 <https://github.com/keras-team/keras/issues/18648>`_ a small model's
epoch took about 32 ms on Keras 3 with TensorFlow against 1.5 ms on Keras 2, and 3 ms on JAX
with ``jit_compile`` on but 44 ms with it off (their table); in
`keras-team/keras#19953 <https://github.com/keras-team/keras/issues/19953>`_ ten Dense and
Dropout layers trained slower on Keras 3 than on Keras 2 until ``jit_compile=True``. Those
figures are the issues' own; every other number here is measured by this page.

A *backend* is what Keras 3 runs on, chosen by ``KERAS_BACKEND`` before Keras is imported;
Keras 2 is the ``tf_keras`` package (``tf.keras`` when ``TF_USE_LEGACY_KERAS=1`` is set before
TensorFlow is imported). A *path* is how a model is called: ``fit`` over an epoch of 8 batches
from NumPy arrays (``fit-jit``: with ``jit_compile=True``; ``fit-dataset``: from a
``tf.data.Dataset`` built once; ``fit-steps-per-execution``: eight batches a call, with
``steps_per_execution=8``), ``evaluate`` over the same epoch, ``predict`` on one batch, and
``model-call``, ``model(x)`` on one batch. A measurement is named backend, then path:
``jax-fit-jit``.

.. raw:: html
   :file: ../../_generated/extra/answers/keras_backends.answer.html

Every backend builds each model from the same weights; tests check that every backend predicts
what Keras 3 on TensorFlow predicts and takes the same training step. :doc:`How to read these
pages </reading>` defines the tables' terms; the training paths of one backend are
:doc:`Why is TF2 much slower than TF1? </auto_examples/training_loop/plot_training_loop>`.
"""

# %%
# The models, and how each path calls them
# ----------------------------------------
#
# A small MLP, the ten Dense and Dropout layers of keras-team/keras#19953 as its issue gives
# them (four features, batches of 500, Adam, label smoothing and an AUC metric), the
# training-loop chapter's Conv1D model, and two sequence models on 32 steps of 16 features: a
# GRU and a small Transformer encoder block. The same functions build them on every backend; a
# path is one of these calls. keras-team/keras#18648's model is not among them: it trains with a
# step of its own written with ``tf.GradientTape``, which runs on TensorFlow only as written (on
# JAX such a step is written again with ``jax.grad``).
#
# .. literalinclude:: /../perfguide/workloads/keras_backends.py
#    :pyobject: mlp
#
# .. literalinclude:: /../perfguide/workloads/keras_backends.py
#    :pyobject: deep_mlp
#
# .. literalinclude:: /../perfguide/workloads/keras_backends.py
#    :pyobject: gru
#
# .. literalinclude:: /../perfguide/workloads/keras_backends.py
#    :pyobject: transformer
#
# .. literalinclude:: /../perfguide/workloads/keras_backends.py
#    :pyobject: compiled
#
# .. literalinclude:: /../perfguide/workloads/keras_backends.py
#    :pyobject: fit_epoch
#
# .. literalinclude:: /../perfguide/workloads/keras_backends.py
#    :pyobject: call_and_read
#
# A ``fit-dataset`` call hands ``fit_epoch`` a ``tf.data.Dataset`` of the same batches, made
# once: ``tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)``.
#
# Where this page was measured
# ----------------------------
#
# Each backend is set once per process, so each runs in fresh processes of its own (two each),
# and the backends' processes take turns; every comparison between backends is one between
# processes, and its interval is as wide as that makes it. Each backend times the paths that a
# check or a table below needs, on the models printed here, since a first ``fit`` call costs
# seconds and the page has two minutes: the sequence models train on Keras 3's backends only,
# the question Keras's "20% to 350%" answers; Keras 2 trains the MLP and #19953's model (the
# training-loop chapter sets it against Keras 3 on the Conv1D model); inference runs on the
# MLP.

from perfguide.measure.runner import default_device
from perfguide.pages import keras_backends as page
from perfguide.report.publishing import results
from perfguide.report.publishing.show import show
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import keras_backends as kb

device = default_device()
runs = page.time_backends(device)
env = runs.environment
print(results.where_measured(env, device))
print(page.timed_paths())
for backend, reason in kb.missing_backends().items():
    print(f"left out: {kb.NAMES[backend]} ({reason})")

# %%
# Training: each backend's fit
# ----------------------------
#
# Each model's median time per batch of a ``fit`` epoch, each backend at its default
# ``jit_compile`` unless the path says ``jit``: Keras turns it on under JAX and off under
# TensorFlow without a GPU.

show(page.times_table(runs, page.TRAINING, "A batch of fit, by model and path"))

# %%

show(page.fits_in_full(runs))

# %%
# Inference: predict and model(x)
# --------------------------------
#
# One batch of the MLP: what ``predict`` costs a call beyond ``model(x)`` is the finding.
# OpenVINO runs inference only.

show(page.times_table(runs, page.INFERENCE, "One batch predicted, by model and path"))

# %%
# The precision OpenVINO's ``predict`` computed in, read in its worker process:

print(page.precision_note(runs))

# %%
# The checks: Keras's "20% to 350%" as "at least 1.2x faster" on JAX, on each of the five
# models, each backend at its default ``jit_compile``; keras-team/keras#18648's ``jit_compile``
# on JAX; keras-team/keras#19953's Keras 2 against Keras 3 on its model, and its
# ``jit_compile=True`` on TensorFlow on the MLP (XLA's compile of #19953's model takes seconds
# a process); the input ``fit`` is fed; ``steps_per_execution=8`` (the training-loop chapter's
# advice: eight batches a call, so Keras returns to Python once per eight steps) on
# TensorFlow, with JAX's fit set against it; and JAX's ``evaluate`` and ``predict`` against
# TensorFlow's.

checks = page.claims(runs)
report = ClaimReport.of(checks, runs.by_model)
show(report)

# %%
# Why jit_compile matters on JAX
# ------------------------------
#
# Each backend's MLP training step, its operations counted in the worker processes above: on
# TensorFlow, the ops of the step's graph; on JAX, the top-level operations of the step as JAX
# traces it (its jaxpr), which JAX dispatches one by one from Python unless the step is
# compiled.

show(page.dispatch_table(runs))

# %%
# What each operation cost JAX without ``jit_compile``:

print(page.per_dispatch(runs))

# %%
# Compiling costs JAX's first ``fit`` call more than TensorFlow's; each later epoch pays some of
# it back:

show(page.compile_repaid(runs))

# %%
# A training step's memory
# ------------------------
#
# Each process of Keras 3 on TensorFlow and on JAX, before it timed anything, ran the MLP's
# training step (``train_on_batch``, each backend at its default ``jit_compile``) at three batch
# sizes and read the process's peak resident set during the step (Linux's ``VmHWM``, reset
# first) beyond what it held before its first step. The peaks' slope against the batch size is
# what each example of a batch costs; the interval is where the next fresh process's slope
# should land. These peaks include the batch's data, which the process holds too.

print(page.activations_note(runs))
show(page.memory_table(runs))

# %%
# Where a fit call's time goes
# ----------------------------
#
# A ``fit`` call pays a price before its first step (an iterator over the data, callbacks, its
# compiled function looked up) and then a step per batch. Timing the MLP's ``fit`` over one
# batch and over an epoch gives both, for Keras 2's fit, TensorFlow's fit from arrays and from
# a dataset, and JAX's fit with jit_compile; and for ``evaluate`` from the arrays on TensorFlow
# and JAX, which pays a price of its own:

show(page.price_and_steps(runs))

# %%
# Python's profiler on Keras 3 with TensorFlow, in this page's own process: fed NumPy arrays,
# ``fit`` makes a ``tf.data`` pipeline from them anew on every call (Keras's array data
# adapter), tracing its functions again; JAX's trainer reads the arrays batch by batch instead.
# A ``tf.data.Dataset`` built once skips that work.

profile = page.profile_fit()
print(profile)

# %%
# Short answer
# ------------
#
# The box at the top, built from the checks above.

answer = page.short_answer(report, checks, profile, env["usable_cores"])
# sphinx_gallery_start_ignore
answer.publish("keras_backends")
# sphinx_gallery_end_ignore
print(answer)

# %%
# Take the numbers with you
# -------------------------
#
# Everything measured here is published as
# `keras_backends.json <../../measurements/keras_backends.json>`_, the training step's peaks
# under ``step_peaks``.
# ``python -m perfguide run keras_backends`` times every backend installed, each in its own
# fresh processes; the ``backends`` extra installs JAX and OpenVINO
# (``python -m pip install -e ".[cpu,backends]"``).

step_peaks = {backend: peaks.to_dict() for backend, peaks in runs.peaks.items()}
print(
    results.publish(
        "keras_backends", env, runs.measured, extra={"step_peaks": step_peaks}
    )
)

# %%
# Recipes
# -------
#
# Choose the backend before importing Keras
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Keras reads ``KERAS_BACKEND`` once, when it is imported: set it in the environment of the
# process (or first thing in the script), not after ``import keras``. Here a fresh Python
# process is started with it, as this page started its own.
import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("jax"):
    code = "import keras; print(keras.backend.backend())"
    env_jax = {**os.environ, "KERAS_BACKEND": "jax"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env_jax,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split()[-1] == "jax"

# %%
# Feed fit a dataset built once
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# On TensorFlow, a ``tf.data.Dataset`` made once and passed to every ``fit`` call, in place of
# the NumPy arrays that ``fit`` would make a pipeline of on each call (measured on a 2-core CPU).
# The check: it trains the same weights as the arrays in batches of the same size.
import keras
import numpy as np
import tensorflow as tf

x = np.random.default_rng(0).standard_normal((256, 8)).astype(np.float32)
y = x.sum(axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
weights = []
for data, options in (((dataset,), {}), ((x, y), {"batch_size": 32})):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.01), "mse")
    for _ in range(3):
        model.fit(*data, epochs=1, verbose=0, shuffle=False, **options)
    weights.append(model.get_weights())
for a, b in zip(*weights, strict=True):
    np.testing.assert_allclose(a, b, rtol=1e-5)
