"""
Why don't prefetch and cache speed up my tf.data pipeline?
==========================================================

TensorFlow's guide `Better performance with the tf.data API
<https://www.tensorflow.org/guide/data_performance>`_ shows ``prefetch``, parallel ``map``,
``interleave`` and ``cache`` each making an artificial pipeline faster. Users who tried them on
their own training found no gain: "prefetch optimization does not improve performance in any
case", for CIFAR-10 images read from TFRecord files (`tensorflow/tensorflow#60384
<https://github.com/tensorflow/tensorflow/issues/60384>`_); "I see no speed up using .cache() or
.prefetch()" (`tensorflow/tensorflow#37178
<https://github.com/tensorflow/tensorflow/issues/37178>`_); prefetch that seems not to fetch
ahead at all (`tensorflow/tensorflow#61084
<https://github.com/tensorflow/tensorflow/issues/61084>`_). That guide's pipelines sleep instead of
working, beside a step that sleeps too. Here every pipeline feeds a real training step, and each
transformation is measured alone and combined; every number is measured by this page.

The short answer below speaks of four variants: ``pipeline-alone`` draws the pipeline's batches and
drops them; ``step-alone`` trains on the same batches, read into memory first; ``together`` feeds
the step from the pipeline; ``together-prefetch`` does the same with a ``prefetch`` at the
pipeline's end. *One after the other* is the pipeline's time alone plus the step's: what
together takes if the two cannot overlap at all. Its pipelines: ``naive`` reads the records,
maps them and batches them, and nothing more; ``prefetch``, ``cache`` and ``interleave`` (files
read four at a time) each add one transformation to it; ``no-default-optimizations`` is
``naive`` with the rewrites tf.data makes by default turned off; ``py-function`` runs the same
map as Python code, through ``tf.py_function``.

.. raw:: html
   :file: ../../_generated/extra/answers/tf_data.answer.html

The workloads are in :mod:`perfguide.workloads.tf_data`; its tests check that every
pipeline yields the same images and labels. :doc:`How to read these pages </reading>` defines the
tables' terms.
"""

# %%
# The data, the map and the step
# ------------------------------
#
# Images of 32 × 32 pixels, CIFAR-10's size, stored as ``tf.train.Example`` records in
# TFRecord files. The map parses a record, scales its pixels, mirrors every other image and
# normalizes it; batches of 64 feed one step of a small Keras classifier (two convolutions of
# 32 filters, pooling, a dense layer), trained by a loop like the one ``model.fit`` runs. Times
# are per batch, drawn from one long-lived iterator, as in a long epoch.
#
# .. dropdown:: How the variants are timed
#
#    A reader's epoch runs thousands of batches through one iterator, so each variant here is
#    timed the same way: passes drawn from one iterator over the dataset repeated, started before
#    timing. What starting and closing an epoch costs is measured apart, below. An iterator keeps
#    reading ahead between calls, so these variants do not take turns block by block as the rest
#    of these pages' do (each would fill its buffers on the cores of the others' blocks): each is
#    timed alone, in the same two fresh processes, one after another.
#
# .. rubric:: The map, the step and the loop being timed
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :pyobject: parse
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :pyobject: augment
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :pyobject: training_step
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :pyobject: train_steps
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :pyobject: endless

import matplotlib.pyplot as plt

from perfguide.measure.measurement import pick
from perfguide.measure.runner import default_device
from perfguide.pages import tf_data as page
from perfguide.processes.pool import Workers
from perfguide.report.format import format_seconds
from perfguide.report.plots import dot_plot
from perfguide.report.publishing import results
from perfguide.report.publishing.show import show
from perfguide.report.tables.comparison import Comparison
from perfguide.report.tables.table import Collapsed
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import tf_data

device = default_device()
workers = Workers(device=device)
env = workers.environment
print(results.where_measured(env, device))
print(
    f"{tf_data.IMAGES} images in {tf_data.FILES} files: a pass is {page.BATCHES_A_PASS} batches"
)

# %%
# Is the model waiting for data?
# ------------------------------
#
# The question to answer before any transformation: time ``pipeline-alone``, ``step-alone``,
# ``together`` and ``together-prefetch`` (defined above the short answer). If the two overlapped
# perfectly, together would take as long as the longer of the two; if they cannot overlap, one
# after the other.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :pyobject: _overlap_call
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :pyobject: draw_batches

overlap = workers.run(tf_data.OVERLAP, quick=True)
show(Collapsed("The four variants, in full", Comparison(overlap, baseline="together")))


# %%
# A variant's *cores busy* is the CPU time its process used over the wall time: how many cores
# it kept working. The pipeline's and the step's CPU time, spread over every core, is the least
# time the two can take together, however well they overlap:

both = page.pipeline_and_step(overlap, env["usable_cores"])
show(both.table("Pipeline and step, apart and together, and what the cores allow"))

# %%

overlap_checks = page.overlap_claims(both, overlap)
show(overlap_checks)

# %%
# Reading ahead needs a core to read on. Each of the two alone keeps most of the cores busy
# (TensorFlow runs an op's work on a pool of threads, and tf.data runs its own), so together they
# ask for more cores than there are, and one's threads run while the other's wait:

print(page.cores_asked(both))

# %%
# Each transformation, alone and combined
# ---------------------------------------
#
# The same training through each pipeline. ``naive`` is ``map`` then ``batch``, as TensorFlow's
# guide writes a pipeline before its advice. Each other variant changes one thing: ``prefetch`` adds
# one at the end; ``parallel-map`` maps with ``num_parallel_calls=AUTOTUNE`` (``parallel-map-2``
# with two calls, ``unordered-map`` also with ``deterministic=False``); ``cache`` caches after
# the map (``cache-records`` before it, ``cache-file`` to a file); ``batch-then-map`` maps whole
# batches; ``autotune-off`` and ``no-default-optimizations`` turn off tf.data's autotuning or its
# default graph rewrites; ``private-threadpool-1`` runs ``parallel-map`` and a prefetch on a
# private pool of one thread. ``combined`` joins reads of four files at once, a map on whole
# batches, a cache and a prefetch.
#
# .. rubric:: The pipelines being timed
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :start-after: # -- The pipelines
#    :end-before: #: Variant name
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :pyobject: Storage

pipelines = workers.run(tf_data.PIPELINE, quick=True, settle=page.PIPELINE_CLAIMS)
show(Collapsed("Every pipeline, in full", Comparison(pipelines, baseline="naive")))

# %%

ax = dot_plot(pipelines)
ax.set_title("One batch, through each pipeline, into the step")
plt.show()

# %%
# The advice of TensorFlow's guide, each piece checked on this machine, and whether an explicit
# prefetch changes anything:

guide = ClaimReport.of((*page.GUIDE_CLAIMS, page.PREFETCH_ADDS_LITTLE), pipelines)
show(guide)

# %%

settings = ClaimReport.of(page.OTHER_SETTINGS, pipelines)
show(Collapsed("The other settings and placements, checked", settings))

# %%
# .. warning::
#
#    A cache stores what the map produced, so a random augmentation before the cache is drawn
#    once and then frozen: every later epoch replays the first epoch's flips. This page's flip
#    follows an image's index, which is what lets it cache after the map. With
#    ``tf.image.random_*`` augmentations, cache after parsing and augment after the cache.
#
# Why an explicit ``prefetch`` adds little: tf.data's default rewrites
# (``tf.data.experimental.OptimizationOptions``; by its API reference, on by default since
# TensorFlow 2.12) add a prefetch after the last transformation and run a stateless ``map`` in
# parallel, so that guide's first two pieces of advice are in ``naive`` already. Turned off, in
# numbers:

for m in pick(
    pipelines, "naive", "no-default-optimizations", "autotune-off", "prefetch"
):
    print(f"{m.label}: {format_seconds(m.median_s)} a batch")

# %%
# Where a transformation that removes work gains little beside the step, the pipeline alone says
# how much work there was to remove; and no pipeline makes training faster than the step alone.
# Some pipelines drawn with no step:

inputs = workers.run(tf_data.INPUT_ALONE, quick=True)
show(
    Collapsed(
        "Pipelines drawn with no step, in full", Comparison(inputs, baseline="naive")
    )
)

# %%

print(page.work_removed(inputs, pipelines, both.step))

# %%
# What a new epoch costs
# ----------------------
#
# Each epoch starts a new iterator, which starts the pipeline's threads and waits for a first
# batch, and closes the last one; a loop that rebuilds its dataset for every chunk of data pays
# this each time. Five epochs of ``naive`` and ``autotune-off``, in one of this page's processes:
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :pyobject: epoch_costs

epoch_costs = page.epoch_costs(workers)
show(
    Collapsed(
        "Starting and closing an epoch, against one steady batch",
        page.epoch_table(epoch_costs, pipelines),
    )
)

# %%
# When storage keeps the pipeline waiting
# ---------------------------------------
#
# The same records from storage that makes every read of 8 records wait, as a remote bucket
# does. A wait holds no core, so reading ahead, or reading several files at once
# (``interleave``, four files), can hide it.

remote = workers.run(tf_data.REMOTE, quick=True)
print(page.storage_waits())
show(
    Collapsed(
        "Each pipeline from waiting storage, in full",
        Comparison(remote, baseline="naive"),
    )
)

# %%

remote_checked = ClaimReport.of(page.REMOTE_CLAIMS, remote)
show(remote_checked)

# %%
# Here the loop waits for storage, not for the cores. A prefetch (the one tf.data adds, or an
# explicit one) runs the step while the next reads wait, but one file's reads still come one
# after another; reading four files at once makes them wait together. Cores busy:

for m in pick(remote, "naive", "interleave"):
    print(
        f"{m.label}: {format_seconds(m.median_s)} a batch, {m.cores_busy:.2f} cores busy"
    )

# %%
# Python in the map
# -----------------
#
# The same parse written in Python and NumPy and run through ``tf.py_function``
# (``py-function``), as code that decodes with a Python library does, and the same with parallel
# calls (``py-function-parallel``), on fewer images an epoch: Python is slow enough.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :pyobject: parse_in_python
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :pyobject: parse_with_py_function

python = workers.run(tf_data.PYTHON, quick=True, settle=page.PYTHON_CLAIMS)
show(Collapsed("Python in the map, in full", Comparison(python, baseline="naive")))

# %%

python_checked = ClaimReport.of(page.PYTHON_CLAIMS, python)
show(python_checked)

# %%
# Parallel calls cannot run Python in parallel: every call needs Python's global lock, so the
# calls take turns, and the process keeps fewer cores busy than the map in TensorFlow ops does:

for m in python:
    print(f"{m.label}: {m.cores_busy:.2f} cores busy")

# %%
# A step that outweighs the pipeline
# ----------------------------------
#
# ``step-alone`` and ``together`` with a wider model (64 filters per convolution), whose step
# outweighs the pipeline. However fast the pipeline gets, it can save at most what it adds to the
# step.

wide = workers.run(
    tf_data.OVERLAP,
    ["step-alone", "together"],
    size=page.WIDE,
    quick=True,
    settle=[page.WIDE_SAVES],
)
show(Collapsed("The wide model, in full", Comparison(wide, baseline="together")))

# %%

show(
    Collapsed(
        "What a faster pipeline could save the wide model, checked",
        ClaimReport([page.wide_claim(wide)]),
    )
)

# %%
# The epoch, batch by batch
# -------------------------
#
# The loop below records, for each batch, when it asked the pipeline for it, when it arrived,
# and when its step ended: three clock readings any reader can add to their own loop. One of
# this page's processes ran each pipeline for a pass (which fills its cache), then three
# recorded passes. Five of them, drawn:
#
# .. rubric:: The recording loop
#
# .. literalinclude:: /../perfguide/workloads/tf_data.py
#    :pyobject: _one_pass

recorded = page.record_passes(workers)
page.passes_plot(recorded)
plt.show()

# %%
# A pipeline that never makes the loop wait can still slow training, by taking the cores from
# the step.

show(
    Collapsed(
        "Every pipeline's recorded passes: waiting for input, and the step in the loop",
        page.passes_table(recorded, both.step),
    )
)

# %%
# The short answer
# ----------------
#
# The box at the top of this page, built from the checks above.

scenario = page.prefetch_scenario(pipelines)
answer = page.short_answer(
    both, guide, settings, remote_checked, python_checked, scenario
)
# sphinx_gallery_start_ignore
answer.publish("tf_data")
# sphinx_gallery_end_ignore
print(answer)

# %%
# Take the numbers with you
# -------------------------
#
# Everything timed on this page is published as
# `tf_data.json <../../measurements/tf_data.json>`_, in the shape
# ``python -m perfguide run tf-data-pipeline --json PATH`` writes (the other workloads here are
# ``tf-data-overlap``, ``tf-data-input``, ``tf-data-remote`` and ``tf-data-python``;
# ``--size`` sets the images per epoch, the model's width or the storage's wait). To rerun this
# page, install this page's package from a checkout of its repository
# (``python -m pip install -e ".[cpu]"``) and run the script downloaded below.

published = overlap + pipelines + inputs + remote + python + wide
print(results.publish("tf_data", env, published, overlap_checks.claims))
workers.close()

# %%
# Recipes
# -------
#
# The advice above in a few lines to paste, each with its own tiny data and a check that it
# works, after these imports:
import tempfile

import numpy as np
import tensorflow as tf

# %%
# Cache after the map
# ~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# The expensive map runs once, and random augmentation comes after the cache. ``take`` before
# ``cache`` caps what is stored; a file name stores it on disk instead of in memory (here in a
# folder that is removed after the check).
raw = np.random.default_rng(0).integers(0, 256, (256, 32, 32, 3), np.uint8)
with tempfile.TemporaryDirectory() as folder:
    cached = (
        tf.data.Dataset.from_tensor_slices(raw)
        .map(lambda x: tf.cast(x, tf.float32) / 255.0)
        .take(200)
        .cache(f"{folder}/images")  # .cache() keeps it in memory
    )
    batches = cached.map(tf.image.random_flip_left_right).batch(64)
    first, second = (np.stack(list(cached)) for _ in range(2))  # writes, then reads
    np.testing.assert_array_equal(first, second)
    assert sum(len(batch) for batch in batches) == 200

# %%
# Interleave files from remote storage
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Where each read waits without working (a bucket, a network file system), read several files
# at once. This page measured it on storage with simulated waits, on a 2-core CPU.
with tempfile.TemporaryDirectory() as folder:
    paths = [f"{folder}/part-{f}.tfrecord" for f in range(4)]
    for f, path in enumerate(paths):
        with tf.io.TFRecordWriter(path) as writer:
            for i in range(f, 64, 4):
                writer.write(str(i).encode())
    records = tf.data.Dataset.from_tensor_slices(paths).interleave(
        tf.data.TFRecordDataset, cycle_length=4, num_parallel_calls=tf.data.AUTOTUNE
    )
    numbers = records.map(lambda r: tf.strings.to_number(r, tf.int64)).batch(16)
    np.testing.assert_array_equal(np.sort(np.concatenate(list(numbers))), np.arange(64))

# %%
# Write the map in TensorFlow ops
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# ``tf.io`` ops in place of NumPy in a ``tf.py_function``: the map then runs without Python's
# global lock, on tf.data's own threads.
raw = np.random.default_rng(0).integers(0, 256, (64, 32, 32, 3), np.uint8)
records = tf.data.Dataset.from_tensor_slices([image.tobytes() for image in raw])


def decode(record):
    pixels = tf.reshape(tf.io.decode_raw(record, tf.uint8), (32, 32, 3))
    return tf.cast(pixels, tf.float32) / 255.0


images = records.map(decode).batch(64)
np.testing.assert_allclose(next(iter(images)), raw / 255.0, rtol=1e-6)
