"""
Why does my TensorFlow process keep growing?
============================================

Memory that grows call after call is one of the most reported TensorFlow problems:
``model.predict`` in a loop grows the process (`tensorflow/tensorflow#33009
<https://github.com/tensorflow/tensorflow/issues/33009>`_), more so when the input's shape
changes from call to call (`tensorflow/tensorflow#38598
<https://github.com/tensorflow/tensorflow/issues/38598>`_), and the answers in those threads
contradict each other: ``keras.backend.clear_session()``, ``gc.collect()``, ``model(x)``
instead, another ``malloc``.

This page calls one small model hundreds of times in fresh processes, each way a user would:
``predict``, ``model-call`` (``model(x, training=False)``), ``predict-on-batch``
(``predict_on_batch``), and a ``tf.function`` as it comes (``tf-function``), with
``reduce_retracing=True`` (``reduce-retracing``), with an input signature whose batch dimension
is ``None`` (``input-signature``), or on batches padded to a few sizes (``buckets``). Each
process records the memory it holds (its resident set, what ``top`` and a container's limit see)
every few calls; a way's *growth* is how much that rises per call, given with its next-process
interval (:doc:`How to read these pages </reading>` defines it). The last sections measure the
other thing that runs a process out of memory, a training step's peak, against batch size and
precision policy.

.. raw:: html
   :file: ../../_generated/extra/answers/memory.answer.html
"""

# %%
# Where this page was measured
# ----------------------------

import matplotlib.pyplot as plt
import psutil

from perfguide.measure.environment import collect
from perfguide.pages import memory as page
from perfguide.processes import memory_processes
from perfguide.report.format import format_bytes
from perfguide.report.plots import peak_plot, resident_plot
from perfguide.report.publishing import results
from perfguide.report.publishing.memory_results import save
from perfguide.report.publishing.show import show
from perfguide.report.tables.memory import calls_to_fill
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import memory

env = collect()
print(results.where_measured(env))
print(f"memory: {format_bytes(psutil.virtual_memory().total)} in all")
for name, why in memory.allocators()[1].items():
    print(f"not measured here: {name} ({why})")

# %%
# .. dropdown:: How the page's processes are started
#
#    Every experiment below runs in fresh processes of its own, three each, all queued at once
#    and run two side by side (memory, unlike time, is not changed by a process on the other
#    core). Each is forked from a process that has imported TensorFlow and done nothing else,
#    started with the experiment's environment: it begins where a new script would after
#    ``import tensorflow``, without paying for that import again in each of the page's dozens of
#    processes; experiments whose processes start with the same variables share them (the
#    training steps of the last sections set the one they need themselves, before TensorFlow
#    starts). An experiment's three come from three such processes started apart, since much of
#    what makes one process's memory differ from the next (where its heap and libraries land,
#    Python's hash seed) is settled when a process starts. With a new shape at every call, each
#    way has three processes of its own, so that no way finds kernels another built (``buckets``,
#    which needs a dozen, then ``tf-function``, which needs new ones, share theirs). The
#    workloads are in :mod:`perfguide.workloads.memory`; rates also move between runs, by as much
#    as :doc:`the machine's calibration </environment>` says.

measured, peaks = memory_processes.measure()

# %%
# One shape, call after call
# --------------------------
#
# The serving chapter's tiny MLP (32 features to 64 to 10) answers a batch of 8 requests, the
# same shape every time, hundreds of times by each of ``predict`` (fewer, as it is slow),
# ``model-call``, ``predict-on-batch`` and ``input-signature``, one way after another, in three
# fresh processes. The growth is the slope of the memory held over the second half of the
# calls, once the first calls' caches have filled.
#
# .. rubric:: The code being measured
#
# .. literalinclude:: /../perfguide/workloads/memory.py
#    :pyobject: caller
#
# .. literalinclude:: /../perfguide/measure/memory.py
#    :pyobject: resident_series

one_shape = measured["one shape"]
show(page.one_shape_table(one_shape))

# %%

ax = resident_plot(one_shape.series)
ax.set_title("One shape: memory held, first process")
plt.show()

# %%
# Whether each way grows the process or stays flat:

show(ClaimReport.of(page.ONE_SHAPE_CLAIMS, one_shape))

# %%
# How many calls of one shape until the process has used this machine's memory (the process and
# the system need some of it first):

total = psutil.virtual_memory().total
for line in calls_to_fill(one_shape.growth, total, page.GROWS):
    print(line)


# %%
# A new shape at every call
# -------------------------
#
# Now each call's batch is one row larger than the last, a size never seen before, with
# TensorFlow's oneDNN kernels on (TensorFlow 2.21 turns them on by default only on some CPUs, and
# the first line below says whether on this one; elsewhere the processes start with
# ``TF_ENABLE_ONEDNN_OPTS=1``). A ``tf.function`` as it comes traces and keeps a graph for each
# new shape (``tf-function``); ``reduce-retracing`` and ``input-signature`` trace one for any
# batch size, and ``buckets`` pads each batch to the next power of two and cuts the answer back.
# ``traces`` counts the graphs each traced.

new_shapes = measured["new shapes"]
print(f"oneDNN by default on this machine: {'on' if env['onednn_enabled'] else 'off'}")
show(page.new_shapes_table(new_shapes))

# %%

ax = resident_plot(new_shapes.series)
ax.set_title("A new shape every call: memory held, first process")
plt.show()

# %%
# Whether retracing grows the process, and whether one graph for any batch size fixes it:

show(ClaimReport.of(page.NEW_SHAPE_CLAIMS, new_shapes))

# %%
# The same with a new shape at every call:

for line in calls_to_fill(new_shapes.growth, total, page.GROWS):
    print(line)

# %%
# Why one graph can still grow
# ----------------------------
#
# ``input-signature`` and ``reduce-retracing`` trace one graph or two (``traces`` above), so
# whatever they grow with each new shape is not graphs. The same calls in processes with oneDNN
# off (started with ``TF_ENABLE_ONEDNN_OPTS=0`` where it is on by default), where TensorFlow runs
# its own kernels instead of oneDNN's:

onednn_off = measured["oneDNN off"]
print(page.onednn_growth(new_shapes, onednn_off))
show(ClaimReport(page.kernel_cache_claims(new_shapes, onednn_off)))

# %%
# Where the growth stops with oneDNN off, it was oneDNN's: TensorFlow keeps the oneDNN kernel
# (a *primitive*) it built for each shape, so that the next call of that shape skips building
# it (reported in 2018 as `tensorflow/tensorflow#23455
# <https://github.com/tensorflow/tensorflow/issues/23455>`_; the cache is bounded since
# `tensorflow/tensorflow#24482 <https://github.com/tensorflow/tensorflow/pull/24482>`_ by a
# count of kernels, not of bytes). Batches padded to a few sizes need a few kernels.
#
# What gives memory back
# ----------------------
#
# After ``tf-function``'s calls, its processes tried what the threads suggest, in turn:
# ``gc.collect()``, ``keras.backend.clear_session()``, deleting the model, and glibc's
# ``malloc_trim(0)``. The memory held after each step (median over the processes; the change is
# from the step before):


show(page.held_table(new_shapes))

# %%
# The allocator
# -------------
#
# Memory a program frees goes back to its allocator, which may keep it rather than return it to
# the system (``malloc_trim(0)`` asks glibc's to return it). ``predict``'s loop with one shape,
# then the same steps, ran again in fresh processes started with each other allocator this
# machine has (jemalloc and tcmalloc loaded with ``LD_PRELOAD``, glibc's limited to two
# arenas with ``MALLOC_ARENA_MAX=2``), beside glibc's as it comes (the first experiment's
# ``predict``, which also ran first in its processes):

by_allocator = page.by_allocator(measured)
show(page.allocator_growth_table(by_allocator))

# %%

show(page.given_back_table(by_allocator))

# %%
# Whether another allocator, or glibc's with fewer arenas, stops ``predict``'s growth:

allocator_claims = page.allocator_claims(by_allocator)
show(ClaimReport(list(allocator_claims.values())))

# %%
# An allocator can only give back memory the program has freed. What ``predict`` keeps is in
# use: the Python objects each way left behind per call (more tracked by the garbage collector
# after its calls than before), under every allocator:

for way, objects in one_shape.objects_per_call.items():
    print(f"{way}: {objects:.3g} objects a call")

# %%
# A training step's peak
# ----------------------
#
# A process that does not grow can still run out of memory in one step: training holds every
# layer's activations from the forward pass until the backward pass has used them, so a step's
# peak rises with the batch. The mixed-precision chapter's image classifier (two 3x3
# convolutions of 32 filters on 32x32 images, then a small dense head) took a training step at
# each batch size under ``float32`` and under ``mixed_bfloat16``, whose layers compute, and keep
# their activations, in 16-bit floats. A step's peak is measured twice over: its *tensors* (the
# most TensorFlow's tensors held beyond what they held before it) and the process's *peak
# resident set* beyond what it held before training.
#
# .. dropdown:: How a step's peak is measured, and the code
#
#    The tensors are TensorFlow's allocator's own count
#    (``tf.config.experimental.get_memory_info``); the peak resident set is Linux's ``VmHWM``,
#    reset before the step. Beside them, the table gives the activations from the model's shapes
#    (every layer's output, at the type it computes in) and what a forward pass under a
#    ``GradientTape`` kept for the backward one.
#
#    .. literalinclude:: /../perfguide/workloads/memory.py
#       :pyobject: training_peaks
#
#    .. literalinclude:: /../perfguide/measure/memory.py
#       :pyobject: step_peak

show(page.step_peak_table(peaks))

# %%

ax = peak_plot(peaks)
ax.set_title("A training step's peak memory against batch size")
plt.show()

# %%
# Each example of a batch costs the slope of these lines; the fixed rest is the model, its
# optimizer and the traced step. The slopes, and the largest batch that would fit in the memory
# free now:

available = psutil.virtual_memory().available
show(page.memory_per_example(peaks, available))

# %%

show(ClaimReport(page.peak_claims(peaks)))

# %%
# ``mixed_bfloat16`` halves the activations from the shapes. What the forward pass keeps, layer
# by layer (per example, at the largest batch; each layer's count includes its output):

show(page.layers_table(peaks))

# %%
# The layer that keeps the most beyond its own output under ``mixed_bfloat16``, and what it
# keeps for each element of its input (which the layer before it put out in bfloat16, 2 bytes
# an element):

print(page.heaviest_layer(peaks))

# %%
# The short answer
# ----------------

answer = page.short_answer(measured, peaks)
# sphinx_gallery_start_ignore
answer.publish("memory")
# sphinx_gallery_end_ignore
print(answer)

# %%
# Take the numbers with you
# -------------------------
#
# Every growth rate here is published as `memory.json <../../measurements/memory.json>`_. To
# measure yours, run ``python -m perfguide run memory`` or the script below.

save(results.measurements_dir() / "memory.json", env, measured, peaks)
print(f"published {sum(len(e.growth) for e in measured.values())} growth rates")

# %%
# Recipes
# -------
#
# The practices above in a few lines each, ending with a check. The growth they stop was
# measured on this page's 2-core x86 virtual machine with oneDNN's kernels on: measure yours.
#
# Call model(x) in a loop, not predict
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Answer batch after batch by calling the model; ``predict`` is built for one large array. The
# answers are ``predict``'s:

import keras
import numpy as np

model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(10)])
batches = [
    np.random.default_rng(i).standard_normal((8, 32), "float32") for i in range(50)
]

answers = [model(x, training=False).numpy() for x in batches]  # not model.predict(x)

expected = model.predict(batches[-1], verbose=0)
np.testing.assert_allclose(answers[-1], expected, rtol=1e-5, atol=1e-6)

# %%
# Let one graph take any batch size
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# ``reduce_retracing=True``, or an input signature whose batch dimension is ``None``, lets a
# ``tf.function`` answer every batch size with one graph or two, where one as it comes traces a
# graph for each. Where TensorFlow runs oneDNN's kernels, it still keeps one for each new shape
# (see "Why one graph can still grow"), so pad as well where sizes vary without end:

import keras
import numpy as np
import tensorflow as tf

model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(10)])
call = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
# or: tf.function(..., input_signature=[tf.TensorSpec((None, 32), tf.float32)])

for rows in range(1, 21):
    x = np.random.default_rng(rows).standard_normal((rows, 32), "float32")
    np.testing.assert_allclose(call(x), model(x, training=False), rtol=1e-5, atol=1e-6)
assert call.experimental_get_tracing_count() <= 2  # not one a batch size

# %%
# Pad batches to a few sizes
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Pad each batch with rows of zeros up to the next power of two, answer, and cut the answer back:
# a hundred batch sizes make eight shapes, so a few of oneDNN's kernels, and an input signature
# whose batch dimension is ``None`` answers all eight with one graph (without it, a graph a
# shape, and TensorFlow warns of retracing). It suits a model whose rows are answered apart (no
# batch-wide layer at inference):

import keras
import numpy as np
import tensorflow as tf

model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(10)])
call = tf.function(
    lambda x: model(x, training=False),
    input_signature=[tf.TensorSpec((None, 32), tf.float32)],
)


def padded_call(x):
    rows = len(x)
    size = 1 << (rows - 1).bit_length()  # the next power of two
    return call(np.pad(x, ((0, size - rows), (0, 0))))[:rows]


for rows in range(1, 101):
    x = np.random.default_rng(rows).standard_normal((rows, 32), "float32")
    np.testing.assert_allclose(padded_call(x), model(x), rtol=1e-5, atol=1e-6)
assert call.experimental_get_tracing_count() == 1  # one graph, eight shapes
