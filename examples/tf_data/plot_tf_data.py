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
together takes if the two cannot overlap at all.

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
#    timed alone, in the same three fresh processes, one after another.
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

# sphinx_gallery_start_ignore
import matplotlib.pyplot as plt

from perfguide.measure.runner import default_device
from perfguide.processes.pool import Workers
from perfguide.report import results
from perfguide.report.answers import Change, Recommendation, ShortAnswer
from perfguide.report.claims import ClaimReport, Faster, takes_at_most
from perfguide.report.compare import Collapsed, Comparison, Table, pick
from perfguide.report.format import format_interval, format_seconds, format_speedup
from perfguide.report.overlap import Overlap, typical
from perfguide.report.plotting import dot_plot, timeline_plot
from perfguide.report.show import show
from perfguide.workloads import tf_data

device = default_device()
workers = Workers(device=device)
env = workers.environment
print(results.where_measured(env, device))
PASS = tf_data.IMAGES // tf_data.BATCH
print(f"{tf_data.IMAGES} images in {tf_data.FILES} files: a pass is {PASS} batches")
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
overlap = workers.run(tf_data.OVERLAP, quick=True)
show(Collapsed("The four variants, in full", Comparison(overlap, baseline="together")))
# sphinx_gallery_end_ignore


# %%
# A variant's *cores busy* is the CPU time its process used over the wall time: how many cores
# it kept working. The pipeline's and the step's CPU time, spread over every core, is the least
# time the two can take together, however well they overlap:

# sphinx_gallery_start_ignore
cores = env["usable_cores"]
alone, step, together, prefetched = pick(overlap, *tf_data.OVERLAP_VARIANTS)
both = Overlap(alone, step, prefetched, cores)
show(both.table("Pipeline and step, apart and together, and what the cores allow"))
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
overlap_claims = [
    both.no_overlap_claim(f"{tf_data.FILTERS} filters"),
    Faster("together-prefetch", "together").check(overlap),
]
show(ClaimReport(overlap_claims))
# sphinx_gallery_end_ignore

# %%
# Reading ahead needs a core to read on. Each of the two alone keeps most of the cores busy
# (TensorFlow runs an op's work on a pool of threads, and tf.data runs its own), so together they
# ask for more cores than there are, and one's threads run while the other's wait:

# sphinx_gallery_start_ignore
print(f"cores busy, pipeline alone: {alone.cores_busy:.2f}")
print(f"cores busy, step alone: {step.cores_busy:.2f}")
print(f"asked for together: {alone.cores_busy + step.cores_busy:.2f} of {cores}")
print(f"with prefetch, process by process: {overlap_claims[0].quoted}")
print(f"the most any overlap could save: {1 - both.floor / both.one_after_other:.0%}")
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
# The guide's advice, then the settings and placements (a setting that should change little is
# claimed to cost at most 1.25x the time: a claim closer to "as fast" cannot be decided here);
# a claim still undecided after three processes gets more.
guide_claims = [
    Faster("prefetch", "naive"),
    Faster("parallel-map", "naive"),
    Faster("cache", "naive"),
    Faster("batch-then-map", "naive"),
    Faster("combined", "naive", by=1.5),
]
setting_claims = [
    takes_at_most("naive", "prefetch", 1.25),
    Faster("naive", "no-default-optimizations"),
    Faster("cache", "cache-records"),
    takes_at_most("parallel-map", "parallel-map-2", 1.25),
    takes_at_most("unordered-map", "parallel-map", 1.25),
    takes_at_most("cache", "cache-file", 1.25),
    takes_at_most("autotune-off", "naive", 1.25),
]
pipelines = workers.run(
    tf_data.PIPELINE, quick=True, settle=guide_claims + setting_claims
)
show(Collapsed("Every pipeline, in full", Comparison(pipelines, baseline="naive")))
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
ax = dot_plot(pipelines)
ax.set_title("One batch, through each pipeline, into the step")
plt.show()
# sphinx_gallery_end_ignore

# %%
# The advice of TensorFlow's guide, each piece checked on this machine, and whether an explicit
# prefetch changes anything:

# sphinx_gallery_start_ignore
guide_checked = [c.check(pipelines) for c in guide_claims]
setting_checked = [c.check(pipelines) for c in setting_claims]
show(ClaimReport(guide_checked + setting_checked[:1]))
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
show(
    Collapsed(
        "The other settings and placements, checked", ClaimReport(setting_checked[1:])
    )
)
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
naive, prefetched, unoptimized, untuned = pick(
    pipelines, "naive", "prefetch", "no-default-optimizations", "autotune-off"
)
for m in (naive, unoptimized, untuned, prefetched):
    print(f"{m.label}: {format_seconds(m.median_s)} a batch")
# sphinx_gallery_end_ignore

# %%
# Where a transformation that removes work gains little beside the step, the pipeline alone says
# how much work there was to remove; and no pipeline makes training faster than the step alone.
# Some pipelines drawn with no step:

# sphinx_gallery_start_ignore
inputs = workers.run(tf_data.INPUT_ALONE, quick=True)
show(
    Collapsed(
        "Pipelines drawn with no step, in full", Comparison(inputs, baseline="naive")
    )
)
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
by_record, by_batch, from_cache = pick(inputs, "naive", "batch-then-map", "cache")
print(
    f"mapping each batch saves {format_seconds(by_record.median_s - by_batch.median_s)} a batch"
)
print(
    f"a cache saves {format_seconds(by_record.median_s - from_cache.median_s)} a batch"
)
print(f"the step alone takes {format_seconds(step.median_s)} a batch")
print(
    "the most removing all of the pipeline's work could gain: "
    f"{format_speedup(naive.median_s / step.median_s)}"
)
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
EPOCH_VARIANTS = ("naive", "autotune-off")
epoch_costs = {
    v: workers.call_in(0, f"{tf_data.__name__}:epoch_costs", variant=v)
    for v in EPOCH_VARIANTS
}
steady = dict(zip(EPOCH_VARIANTS, pick(pipelines, *EPOCH_VARIANTS), strict=True))


show(
    Collapsed(
        "Starting and closing an epoch, against one steady batch",
        Table(
            "Starting an epoch (to its first batch) and closing it, fastest to slowest of five, "
            "against one steady batch",
            ["pipeline", "start", "close", "steady batch"],
            [
                [
                    v,
                    format_interval(min(costs["start"]), max(costs["start"])),
                    format_interval(min(costs["close"]), max(costs["close"])),
                    format_seconds(steady[v].median_s),
                ]
                for v, costs in epoch_costs.items()
            ],
        ),
    )
)
# sphinx_gallery_end_ignore

# %%
# When storage keeps the pipeline waiting
# ---------------------------------------
#
# The same records from storage that makes every read of 8 records wait, as a remote bucket
# does. A wait holds no core, so reading ahead, or reading several files at once
# (``interleave``, four files), can hide it.

# sphinx_gallery_start_ignore
latency_ms = tf_data.REMOTE.default_size
remote = workers.run(tf_data.REMOTE, quick=True)
reads = tf_data.IMAGES // tf_data.READ_RECORDS
print(f"each read waits {latency_ms} ms; {reads} reads a pass of {PASS} batches")
print(f"waiting a batch, one read after another: {reads * latency_ms / PASS:g} ms")
show(
    Collapsed(
        "Each pipeline from waiting storage, in full",
        Comparison(remote, baseline="naive"),
    )
)
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
remote_claims = [
    Faster("prefetch", "naive"),
    Faster("interleave", "naive"),
    Faster("combined", "naive", by=2),
]
remote_checked = [
    c.check(remote).on(f"storage with {latency_ms} ms waits") for c in remote_claims
]
show(ClaimReport(remote_checked))
# sphinx_gallery_end_ignore

# %%
# Here the loop waits for storage, not for the cores. A prefetch (the one tf.data adds, or an
# explicit one) runs the step while the next reads wait, but one file's reads still come one
# after another; reading four files at once makes them wait together. Cores busy:

# sphinx_gallery_start_ignore
remote_naive, remote_interleave = pick(remote, "naive", "interleave")
for m in (remote_naive, remote_interleave):
    print(
        f"{m.label}: {format_seconds(m.median_s)} a batch, {m.cores_busy:.2f} cores busy"
    )
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
python_claims = [
    Faster("naive", "py-function"),
    Faster("py-function-parallel", "py-function"),
    takes_at_most("py-function", "py-function-parallel", 1.25),
]
python = workers.run(tf_data.PYTHON, quick=True, settle=python_claims)
show(Collapsed("Python in the map, in full", Comparison(python, baseline="naive")))
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
python_checked = [c.check(python) for c in python_claims]
show(ClaimReport(python_checked))
# sphinx_gallery_end_ignore

# %%
# Parallel calls cannot run Python in parallel: every call needs Python's global lock, so the
# calls take turns, and the process keeps fewer cores busy than the map in TensorFlow ops does:

# sphinx_gallery_start_ignore
for m in python:
    print(f"{m.label}: {m.cores_busy:.2f} cores busy")
# sphinx_gallery_end_ignore

# %%
# A step that outweighs the pipeline
# ----------------------------------
#
# ``step-alone`` and ``together`` with a wider model (64 filters per convolution), whose step
# outweighs the pipeline. However fast the pipeline gets, it can save at most what it adds to the
# step.

# sphinx_gallery_start_ignore
WIDE = 64
# At most a third saved: the step alone takes at least two thirds of the step fed.
wide_saves = takes_at_most("together", "step-alone", 1.5)
wide = workers.run(
    tf_data.OVERLAP,
    ["step-alone", "together"],
    size=WIDE,
    quick=True,
    settle=[wide_saves],
)
show(Collapsed("The wide model, in full", Comparison(wide, baseline="together")))
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
wide_step, wide_together = pick(wide, "step-alone", "together")
pipeline_share = 1 - wide_step.median_s / wide_together.median_s
wide_claim = wide_saves.check(wide).restated(
    "a faster pipeline could save at most a third of a wide model's epoch",
    f"the pipeline adds {pipeline_share:.0%} of the epoch",
)
show(
    Collapsed(
        "What a faster pipeline could save the wide model, checked",
        ClaimReport([wide_claim]),
    )
)
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
remote_options = {"latency_ms": latency_ms}
RECORDED = {v: {} for v in (*tf_data.TRANSFORMATIONS, "py-function")} | {
    f"{v}, remote": remote_options for v in tf_data.REMOTE.variants
}
recorded = {
    label: typical(
        workers.call_in(
            0, f"{tf_data.__name__}:timeline", variant=label.split(",")[0], **options
        )
    )
    for label, options in RECORDED.items()
}
SHOWN = ["naive", "cache", "py-function", "naive, remote", "interleave, remote"]
fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
timeline_plot({label: recorded[label].events for label in SHOWN}, ax=ax)
ax.set_title(f"One pass of {PASS} batches: waiting for input, and training")
plt.show()
# sphinx_gallery_end_ignore

# %%
# A pipeline that never makes the loop wait can still slow training, by taking the cores from
# the step.

# sphinx_gallery_start_ignore
show(
    Collapsed(
        "Every pipeline's recorded passes: waiting for input, and the step in the loop",
        Table(
            f"Each recorded pass (the median of three), against the step alone "
            f"({format_seconds(step.median_s)})",
            ["pipeline", "pass", "waiting for input", "step in the loop"],
            [
                [
                    label,
                    format_seconds(r.length_s),
                    f"{r.waiting_share:.0%}",
                    format_seconds(r.median_step_s),
                ]
                for label, r in recorded.items()
            ],
        ),
    )
)
# sphinx_gallery_end_ignore

# %%
# The short answer
# ----------------
#
# The box at the top of this page, built from the checks above.

# sphinx_gallery_start_ignore
answer = ShortAnswer(
    f"Because on this machine the pipeline and the step compete for the same "
    f"{env['usable_cores']} cores, and because tf.data already prefetches. The pipeline alone "
    f"kept {alone.cores_busy:.1f} cores busy, the step alone {step.cores_busy:.1f}; fed from "
    f"the pipeline, the step took {overlap_claims[0].quoted}, one after the other being the "
    "pipeline's time plus the step's, each timed alone. Reading ahead overlaps work only "
    "where a core is idle, or where the pipeline waits without working (remote storage). "
    "TensorFlow's default optimizations add a prefetch to the end of a pipeline and "
    "parallelize a plain map; the same training with "
    f"them against without, {setting_checked[1].quoted}. What pays off on a few cores is "
    "removing work: cache after the map, keep Python out of it.",
    [
        Recommendation(
            "Time the pipeline alone, the step alone and both: on a few cores their work adds up",
            overlap_claims[0],
            Change("what is timed", "the pipeline alone, the step alone and both"),
        ),
        Recommendation(
            "Do not count on an explicit prefetch: tf.data already adds one",
            setting_checked[0],
            Change("an explicit prefetch", "not counted on"),
        ),
        Recommendation(
            "Cache after the expensive map when the data fits in memory, before any "
            "random augmentation",
            guide_checked[2],
            Change("cache", "after the expensive map", data="fits in memory"),
            recipe="cache-after-the-map",
        ),
        Recommendation(
            "Interleave files read from slow or remote storage (measured here with reads that "
            f"wait {latency_ms} ms, on {env['usable_cores']} cores)",
            remote_checked[1],
            Change("reading files", "interleaved", storage="slow or remote"),
            recipe="interleave-files-from-remote-storage",
        ),
        Recommendation(
            "Write the map in TensorFlow ops, not tf.py_function",
            python_checked[0],
            Change("the map function", "TensorFlow ops"),
            recipe="write-the-map-in-tensorflow-ops",
        ),
        Recommendation(
            "Do not expect parallel calls to speed up a tf.py_function map",
            python_checked[2],
            Change("num_parallel_calls on a tf.py_function map", "not counted on"),
        ),
    ],
    Table(
        "tensorflow/tensorflow#60384: CIFAR-10 from TFRecord files, with and without prefetch",
        ["where", "without prefetch", "with prefetch"],
        [
            [
                "their machines, TF 2.10 and 2.11 (their words)",
                "no gain",
                "in any setting",
            ],
            [
                "this build's machine, a batch",
                format_seconds(naive.median_s),
                f"{format_seconds(prefetched.median_s)} "
                f"({Faster('prefetch', 'naive').check(pipelines).effect})",
            ],
        ],
    ),
)
answer.publish("tf_data")
print(answer)
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
published = overlap + pipelines + inputs + remote + python + wide
print(results.publish("tf_data", env, published))
workers.close()
# sphinx_gallery_end_ignore

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
