"""
Why doesn't my distributed training scale?
==========================================

Users who move a model to ``tf.distribute`` often find each step slower than before. One asked
`why training speed per step decreases when the number of workers increases in distributed
training on CPUs <https://github.com/tensorflow/tensorflow/issues/60245>`_ (a 1.3 M-parameter
MLP, workers on one node); others found ``MultiWorkerMirroredStrategy`` `a lot slower than
non-distributed <https://github.com/tensorflow/tensorflow/issues/48374>`_, two nodes only 1.3x
faster than one (`#34752 <https://github.com/tensorflow/tensorflow/issues/34752>`_), and
``MirroredStrategy`` slower than one device
(`#33809 <https://github.com/tensorflow/tensorflow/issues/33809>`_), where the maintainers'
answer was the difference between weak and strong scaling. Those numbers are the users'; every
number below is measured by this page, where a cluster is processes talking over the loopback.

Every setup trains #60245's model, a 256-1024-1024-10 MLP, with the custom training loop
TensorFlow's distribution guides teach. A *worker* is one process that trains; *weak scaling*
keeps each worker's batch (64 examples here), so that two workers train twice the examples a
step; *strong scaling* keeps the global batch and splits it. The *scaling efficiency* is the
examples a second N workers train over N times what one worker trains alone on one core.

.. raw:: html
   :file: ../../_generated/extra/answers/distributed.answer.html

Every setup's first step leaves the weights one process's step leaves on the same global batch;
the guide's tests check it. :doc:`How to read these pages </reading>` defines the tables' terms.
The same training on one machine: :doc:`Why is TF2 much slower than TF1?
</auto_examples/training_loop/plot_training_loop>`
"""

# %%
# Where this page was measured
# ----------------------------

# sphinx_gallery_start_ignore
import dataclasses
import math

import matplotlib.pyplot as plt

from perfguide.measure import environment
from perfguide.processes import setups
from perfguide.report import results
from perfguide.report.allreduce import (
    DATACENTER_LATENCY_S,
    Link,
    fit_link,
    project,
    ring_allreduce_s,
    terms,
)
from perfguide.report.answers import Change, Recommendation, ShortAnswer
from perfguide.report.claims import ClaimReport, Faster, Share, predicts
from perfguide.report.compare import Collapsed, Comparison, Table, pick
from perfguide.report.format import format_bytes, format_seconds
from perfguide.report.plotting import projection_plot
from perfguide.report.ratios import ratio_interval
from perfguide.report.show import show
from perfguide.workloads import distributed, distributed_input

env = environment.collect()
print(results.where_measured(env))
if env["usable_cores"] < 2:
    print("This machine lets this process use one core: two pinned workers share it.")
# sphinx_gallery_end_ignore

# %%
# The step every setup trains
# ---------------------------
#
# Each replica computes its share of the global batch's loss, scaled by the global batch
# (``tf.nn.compute_average_loss``), and the optimizer all-reduces the gradients (sums them over
# the replicas) before it applies them: 5.3 MB of float32 gradients a step for this model.
#
# .. rubric:: The training step, under any strategy
#
# .. literalinclude:: /../perfguide/workloads/distributed.py
#    :pyobject: Training
#
# A *setup* is a strategy and the fresh processes it runs in, in one to three clusters in turn:
#
# * ``one process``: no strategy, one process on both cores;
# * ``one process on one core``: the same, pinned to one core: what one worker of two has;
# * ``mirrored, two logical CPUs``: ``MirroredStrategy`` over the CPU split into two logical
#   devices, one process;
# * ``two workers, pinned`` and ``two workers``: ``MultiWorkerMirroredStrategy``, one process a
#   worker, each pinned to its own core or left to the operating system;
# * ``parameter server``: ``ParameterServerStrategy``: a coordinator, one parameter server and
#   two pinned workers, each updating the variables there without waiting for the other
#   (asynchronous training).

# sphinx_gallery_start_ignore
PER_WORKER, GLOBAL, LARGE = setups.PER_WORKER, setups.GLOBAL, setups.LARGE
TWO = setups.TWO_WORKERS_PINNED.workers
gradient_bytes = distributed.gradient_bytes(distributed.make_model())
measured, failures = setups.measure()
everything = [m for ms in measured.values() for m in ms]
steps = [m for m in everything if m.workload == distributed.DISTRIBUTED_STEP.name]
for name, reason in failures.items():
    print(f"{name}: did not run here: {reason}")


def at(measurements, size, suffix=""):
    """The measurements at ``size``, labelled by setup (and ``suffix``)."""
    return [
        dataclasses.replace(m, label=m.label + suffix)
        for m in measurements
        if m.size == size
    ]


# sphinx_gallery_end_ignore

# %%
# Weak scaling: two workers, twice the examples a step
# -----------------------------------------------------
#
# The time an example takes at a global batch of 128 (64 a worker for two), each setup in its own
# processes:

# sphinx_gallery_start_ignore
weak = at(steps, GLOBAL)
show(Comparison(weak, baseline="one process"))
# sphinx_gallery_end_ignore

# %%
# The checks: what #60245 and #48374 saw, and whether pinning each worker to its own core
# matters.

# sphinx_gallery_start_ignore
one_process = setups.ONE_PROCESS.name
pinned, unpinned = setups.TWO_WORKERS_PINNED.name, setups.TWO_WORKERS.name
reference = at(measured[setups.ONE_CORE], PER_WORKER, " (64)")
two_weak = at(measured[setups.TWO_WORKERS_PINNED], GLOBAL, " (64 each)")
slower_than_one = Faster(one_process, pinned)
pinning = Faster(pinned, unpinned)
mirrored = Faster(one_process, setups.MIRRORED.name)
# Two workers train examples at twice the rate of one alone on one core at 100 % efficiency;
# 90 % is what Horovod's benchmarks report for large models (cited below).
EFFICIENT = 0.9


def efficiency_claim(each, measurements):
    """Two pinned workers' examples a second as a share of twice one worker's on one core."""
    two, one = f"{pinned} ({each} each)", f"{setups.ONE_CORE.name} ({each})"
    claim = Share(two, one, EFFICIENT, work=1, reference_work=2).check(measurements)
    return claim.restated(
        f"two pinned workers reach at least {EFFICIENT:.0%} scaling efficiency ({each} each)",
        claim.effect.split(" of ")[0] + " scaling efficiency",
    )


weak_claims = {
    slower_than_one: slower_than_one.check(weak),
    pinning: pinning.check(weak),
    mirrored: mirrored.check(weak),
    "efficiency": efficiency_claim(PER_WORKER, reference + two_weak),
}
show(ClaimReport(list(weak_claims.values())))
# sphinx_gallery_end_ignore

# %%
# Where does a two-worker step go?
#
# The anatomy of a synchronous step
# ---------------------------------
#
# A step of two workers is each worker's computation on its 64 examples, then the all-reduce of
# the gradients, in which each waits for the other. The all-reduce alone, between the same two
# workers, of float32 tensors and of the gradients in float32 and in float16:

# sphinx_gallery_start_ignore
alone = [m for m in measured[setups.TWO_WORKERS_PINNED] if m.unit == "all-reduce"]
allreduce = [m for m in alone if m.label in distributed.ALLREDUCE_BYTES]
link = fit_link(
    [distributed.ALLREDUCE_BYTES[m.label] for m in allreduce],
    [m.median_s for m in allreduce],
)
show(
    Collapsed(
        "The all-reduce's times", Comparison(alone, baseline=setups.ALLREDUCE_SIZES[0])
    )
)
# sphinx_gallery_end_ignore

# %%
# A ring all-reduce over two workers sends each worker's bytes once each way, so it takes about
# two message latencies plus the bytes over the link's bandwidth. Fitted to the times above:

# sphinx_gallery_start_ignore
fitted_allreduce_s = ring_allreduce_s(gradient_bytes, TWO, link)
print(
    f"latency {format_seconds(link.latency_s)} a message, bandwidth "
    f"{link.bandwidth / 1e9:.2f} GB/s; the {format_bytes(gradient_bytes)} of gradients: "
    f"{format_seconds(fitted_allreduce_s)} an all-reduce"
)
one_core_step = pick(reference, f"{setups.ONE_CORE.name} (64)")[0]
worker_step_s = one_core_step.median_s * PER_WORKER
# (w + a) / w over the one-core step's median and rerun interval (the fitted link as given).
predicted_ratio = tuple(
    1 + fitted_allreduce_s / (step_s * PER_WORKER)
    for step_s in (one_core_step.median_s, *reversed(one_core_step.interval_s))
)
two_step, one_step = pick(
    two_weak + reference, f"{pinned} (64 each)", f"{setups.ONE_CORE.name} (64)"
)
ratio, low, high = ratio_interval(two_step, one_step)
# Per example, two workers train twice the examples a step: a step's ratio is twice as large.
# Within 1.25x either way: computation alone (a ratio of 1) lies beyond it, so the check can
# tell the all-reduce's share from none.
anatomy = predicts(
    "computation on one core plus the fitted all-reduce predicts the two workers' step "
    "within 1.25x",
    predicted_ratio,
    (2 * ratio, 2 * low, 2 * high),
    "a two-worker step over a one-core step",
    within=1.25,
)
# sphinx_gallery_end_ignore

# %%
# What you can change in the all-reduce
# -------------------------------------
#
# Keras 3's optimizer all-reduces the gradients inside each replica with the strategy's default
# options and cannot skip that sum (``experimental_aggregate_gradients`` is Keras 2's); to
# all-reduce another way, sum them in the replica step and apply the sums outside
# ``strategy.run`` (a recipe below). Each way ran between the same two pinned workers, in turn
# with the optimizer's own: ``RING`` rather than ``AUTO``; packs of at most 1 MiB
# (``bytes_per_pack``); the gradients cast to ``float16`` or ``bfloat16``, half the bytes (the
# tests check the update stays within their rounding); and ``one tensor``, the six gradients
# flattened into one all-reduce.
#
# .. dropdown:: A replica's own all-reduce, and the step that applies it
#
#    float16 overflows past 65,504; bfloat16 keeps float32's range with fewer digits.
#
#    .. literalinclude:: /../perfguide/workloads/distributed.py
#       :pyobject: Reduction
#
#    .. literalinclude:: /../perfguide/workloads/distributed.py
#       :pyobject: Training._step

# sphinx_gallery_start_ignore
reductions = [
    m for m in everything if m.workload == distributed.DISTRIBUTED_REDUCTION.name
]
show(
    Collapsed(
        "Each way's time an example",
        Comparison(reductions, baseline=distributed.OPTIMIZERS),
    )
)
# sphinx_gallery_end_ignore

# %%
# The checks: the fitted all-reduce against the two workers' step, each way against the
# optimizer's own, and what float16 saves in the all-reduce alone against what it saves a step.

# sphinx_gallery_start_ignore
own = list(distributed.REDUCTIONS)[1:]
reduction_claims = {
    name: Faster(name, distributed.OPTIMIZERS).check(reductions) for name in own
}
optimizers_step, float16_step = pick(reductions, distributed.OPTIMIZERS, "float16")
as_float32, as_float16 = pick(alone, *distributed.GRADIENT_ALLREDUCES)
# What float16 saves in the all-reduce alone, with its rerun interval's half-width (the two
# all-reduces' half-widths added as independent errors).
saved_s = as_float32.median_s - as_float16.median_s
saved_spread_s = (
    math.hypot(*(m.interval_s[1] - m.interval_s[0] for m in (as_float32, as_float16)))
    / 2
)
step_s = optimizers_step.median_s * GLOBAL
# Within 1.1x either way: a float16 step no faster than the optimizer's (a ratio of 1) lies
# beyond it, so the check can tell the saving from none.
halving = predicts(
    "the all-reduce alone, float16 against float32, predicts what float16 gradients save a "
    "step within 1.1x",
    tuple(
        1 - saved / step_s
        for saved in (saved_s, saved_s + saved_spread_s, saved_s - saved_spread_s)
    ),
    ratio_interval(float16_step, optimizers_step),
    "a float16 step over the optimizer's",
    within=1.1,
)
show(ClaimReport([anatomy, *reduction_claims.values(), halving]))
# sphinx_gallery_end_ignore

# %%
# Strong scaling, and a larger batch
# ----------------------------------
#
# Strong scaling splits a global batch of 64 between the two workers, each still all-reducing
# all the gradients. With 512 a worker, the computation grows and the all-reduce stays the same.

# sphinx_gallery_start_ignore
strong = at(measured[setups.ONE_PROCESS], PER_WORKER, " (64)") + at(
    measured[setups.TWO_WORKERS_PINNED], PER_WORKER, " (32 each)"
)
large = at(measured[setups.ONE_CORE], LARGE, " (512)") + at(
    measured[setups.TWO_WORKERS_PINNED], 2 * LARGE, " (512 each)"
)
show(Collapsed("The times an example", Comparison(strong + large)))
# sphinx_gallery_end_ignore

# %%
# The checks: whether splitting the batch pays, and the scaling efficiency at 512 a worker.

# sphinx_gallery_start_ignore
strong_claim = Faster(f"{pinned} (32 each)", f"{one_process} (64)")
scale_claims = {
    strong_claim: strong_claim.check(strong),
    "large": efficiency_claim(LARGE, large),
}
show(ClaimReport(list(scale_claims.values())))
# sphinx_gallery_end_ignore

# %%
# How each worker reads its share of the data
# -------------------------------------------
#
# The steps above train on a batch in memory; a reader's workers read files: here eight TFRecord
# files of 128 small JPEGs each, decoded, scaled to 16x16 and flattened into the MLP's 256
# features. ``FILE`` sharding gives each worker its own files (what ``AUTO``,
# the default, picks for files); ``DATA`` has each worker decode every file and keep every other
# example (what ``AUTO`` falls back to, with a warning, for data in memory); ``from a function``
# is ``distribute_datasets_from_function``, each worker sharding the file names before it
# decodes anything. Each trains every example once an epoch (the tests count them); ``OFF``
# would train each twice. Each ran in turn with the in-memory step.
#
# .. rubric:: The input pipeline
#
# .. literalinclude:: /../perfguide/workloads/distributed_input.py
#    :pyobject: decode
#
# .. literalinclude:: /../perfguide/workloads/distributed_input.py
#    :pyobject: distributed_batches

# sphinx_gallery_start_ignore
inputs = [
    m for m in everything if m.workload == distributed_input.DISTRIBUTED_INPUT.name
]
show(Collapsed("Each way's time an example", Comparison(inputs, baseline="FILE")))
# sphinx_gallery_end_ignore

# %%
# The checks: whether reading every file costs the workers, whether building the pipeline in a
# function does, and what reading the files costs a step at all.

# sphinx_gallery_start_ignore
file_sharding = Faster("FILE", "DATA")
from_function = Faster(distributed_input.FROM_FUNCTION, "DATA")
reading = Faster(distributed_input.IN_MEMORY, "FILE")
input_claims = {
    claim: claim.check(inputs) for claim in (file_sharding, from_function, reading)
}
show(ClaimReport(list(input_claims.values())))
# sphinx_gallery_end_ignore

# %%
# Past one machine, on paper
# --------------------------
#
# On N workers, each on its own machine, the step is a projection: each worker's computation as
# measured here on one core, plus a ring all-reduce of the 5.3 MB of gradients, which sends each
# link 2(N−1)/N of the bytes in 2(N−1) messages (Patarasuk and Yuan, 2009), at the networks'
# bandwidths as sold. Each message pays this machine's host cost (the latency fitted above over
# the loopback) and a network's 250 µs (half the 500 µs datacenter round trip of Jeff Dean's
# "Numbers everyone should know", 2009). The line without host cost bounds the projection from
# above. Weak scaling, no overlap of computation and all-reduce. The dot is measured here.

# sphinx_gallery_start_ignore
counts = [1, 2, 4, 8, 16, 32, 64]
host_s = link.latency_s
projected = {
    f"{gbps:g} Gb/s (projected)": [
        project(
            worker_step_s,
            gradient_bytes,
            n,
            Link.network(gbps, host_s + DATACENTER_LATENCY_S),
            "weak",
        )
        for n in counts
    ]
    for gbps in (1, 10, 25, 100)
}
projected["25 Gb/s, no host cost (projected)"] = [
    project(
        worker_step_s, gradient_bytes, n, Link.network(25, DATACENTER_LATENCY_S), "weak"
    )
    for n in counts
]
# Two workers' speed-up: examples a second against one worker on one core.
ax = projection_plot(projected, measured={TWO: (1 / ratio, 1 / high, 1 / low)})
ax.set_title("Speed-up of the MLP's training, weak scaling")
plt.show()
at_64 = {label: series[-1] for label, series in projected.items()}
for label, p in at_64.items():
    print(f"{label}: 64 workers, {p.efficiency:.0%} efficiency")
# Which term takes the most of a step, at 25 Gb/s.
for n in counts[1:]:
    t = terms(
        worker_step_s,
        gradient_bytes,
        n,
        host_s,
        DATACENTER_LATENCY_S,
        Link.network(25, 0).bandwidth,
        "weak",
    )
    print(
        f"{n:2d} workers at 25 Gb/s: computation {format_seconds(t.compute_s)}, hosts "
        f"{format_seconds(t.host_s)}, network latency {format_seconds(t.network_s)}, "
        f"bandwidth {format_seconds(t.bandwidth_s)}: {t.dominant} takes the most"
    )
# sphinx_gallery_end_ignore

# %%
# For comparison, Horovod's benchmarks page reports 90 % scaling efficiency for ResNet-101 on 128
# servers of four GPUs over 25 Gb/s RoCE (Sergeev and Del Balso, 2018), a model that computes far
# more per byte of gradients than this MLP.
#
# Keras's ``fit`` under each strategy
# -----------------------------------
#
# A reader who trains with ``model.fit`` rather than a custom loop:

# sphinx_gallery_start_ignore
fit_rows = [
    [
        outcome.setup.name,
        outcome.keras,
        f"fails: {outcome.reason}" if outcome.failure else "runs",
        format_seconds(outcome.measured.median_s * GLOBAL) if outcome.measured else "",
    ]
    for outcome in setups.try_fit()
]
show(
    Table(
        f"fit, global batch {GLOBAL}: one call of {distributed.FIT_STEPS} steps, its time a step "
        "(fit's own cost a call included)",
        ["setup", "Keras", "fit", "a step"],
        fit_rows,
    )
)
# sphinx_gallery_end_ignore

# %%
# Keras 3's failure under ``MultiWorkerMirroredStrategy`` is keras-team/keras#20585 (open at
# TensorFlow 2.21 and Keras 3.15). Keras 2's ``fit`` runs there: set ``TF_USE_LEGACY_KERAS=1``
# before TensorFlow is imported, with the ``tf_keras`` package installed; or train with the
# custom loop above.
#
# The short answer
# ----------------

# sphinx_gallery_start_ignore
slower, pinned_faster = weak_claims[slower_than_one], weak_claims[pinning]
answer = ShortAnswer(
    "Because workers on one machine share what one process had, and every step waits for the "
    f"all-reduce of the gradients. On this {env['usable_cores']}-core machine, one process "
    f"against two pinned workers at the same global batch: {slower.quoted}. Two pinned "
    f"workers reached {weak_claims['efficiency'].quoted}; with 512 examples a worker, "
    f"{scale_claims['large'].quoted}. A two-worker step is one worker's computation on one "
    f"core plus the all-reduce of {format_bytes(gradient_bytes)} of gradients, which the "
    f"link fitted here puts at {format_seconds(fitted_allreduce_s)}; the step as measured came "
    f"to {anatomy.quoted}.",
    [
        Recommendation(
            f"On a machine with few cores ({env['usable_cores']} here), train in one process "
            "rather than a worker per core",
            slower,
            Change("workers on one machine", "one", cpu=f"{env['usable_cores']} cores"),
        ),
        Recommendation(
            "Pin each worker to its own cores",
            pinned_faster,
            Change("each worker's cores", "pinned", workers="several on one machine"),
            recipe="pin-each-worker-to-its-own-core",
        ),
        Recommendation(
            "Give each worker a larger batch before adding workers",
            scale_claims["large"],
            Change("the batch of each worker", "larger", workers="several"),
            recipe="gradient-bytes-and-the-all-reduce-they-cost",
        ),
        Recommendation(
            "Let each worker read its own files (FILE sharding, the default for files), not "
            "every file (DATA)",
            input_claims[file_sharding],
            Change("auto_shard_policy", "FILE", data="several files"),
        ),
        Recommendation(
            "Where the all-reduce is slow (loopback here), all-reduce the gradients in float16",
            reduction_claims["float16"],
            Change(
                "the dtype of the all-reduced gradients",
                "float16",
                link="slow (loopback here)",
            ),
            recipe="all-reduce-the-gradients-yourself",
        ),
    ],
)
answer.publish("distributed")
print(answer)
# sphinx_gallery_end_ignore

# %%
# Take the numbers with you
# -------------------------
#
# Everything measured on this page is published beside the site as
# `distributed.json <../../measurements/distributed.json>`_, in the shape
# ``python -m perfguide run distributed --json PATH`` writes.

# sphinx_gallery_start_ignore
print(results.publish("distributed", env, everything))
# sphinx_gallery_end_ignore

# %%
# Recipes
# -------
#
# Gradient bytes and the all-reduce they cost
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Before adding workers, weigh a step's computation against its all-reduce: the bytes of your
# model's gradients, and a ring all-reduce of them over N workers on a network of your own. The
# check: this page's MLP sends 5.3 MB a step.

import keras
import numpy as np


def gradient_bytes_of(model):
    return sum(
        int(np.prod(w.shape)) * np.dtype(w.dtype).itemsize
        for w in model.trainable_weights
    )


def ring_allreduce_seconds(nbytes, workers, gbit_per_s, latency_s=1e-3):
    steps = 2 * (workers - 1)
    return steps * latency_s + steps / workers * nbytes / (gbit_per_s * 1e9 / 8)


mlp = keras.Sequential(
    [
        keras.Input((256,)),
        keras.layers.Dense(1024, activation="relu"),
        keras.layers.Dense(1024, activation="relu"),
        keras.layers.Dense(10),
    ]
)
nbytes = gradient_bytes_of(mlp)
print(
    f"{nbytes / 1e6:.1f} MB; 8 workers on 10 Gb/s: {ring_allreduce_seconds(nbytes, 8, 10):.4f} s"
)
assert round(nbytes / 1e6, 1) == 5.3

# %%
# Pin each worker to its own core
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Start each worker of a cluster on one machine with its ``TF_CONFIG``, pinned with ``taskset``
# before TensorFlow sizes its thread pools. Here each worker only prints the cores it may use;
# your training script takes its place. The check: each worker runs on one core.

import json
import os
import subprocess
import sys

cores = sorted(os.sched_getaffinity(0))
cluster = {"worker": ["127.0.0.1:20000", "127.0.0.1:20001"]}
worker_script = "import os; print(sorted(os.sched_getaffinity(0)))"
workers = []
for index in range(2):
    config = {"cluster": cluster, "task": {"type": "worker", "index": index}}
    core = str(cores[index % len(cores)])
    workers.append(
        subprocess.Popen(
            ["taskset", "-c", core, sys.executable, "-c", worker_script],
            env={**os.environ, "TF_CONFIG": json.dumps(config)},
            stdout=subprocess.PIPE,
            text=True,
        )
    )
pinned_to = [json.loads(worker.communicate()[0]) for worker in workers]
assert all(len(worker_cores) == 1 for worker_cores in pinned_to)

# %%
# A custom training loop under any strategy
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# Where Keras 3's ``fit`` fails under ``MultiWorkerMirroredStrategy``, this loop runs: the same
# code under ``MirroredStrategy`` (as here) or, in each process of a cluster with its
# ``TF_CONFIG``, under ``MultiWorkerMirroredStrategy()``. The check: a step lowers the loss.

import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
GLOBAL_BATCH = 64
with strategy.scope():
    model = keras.Sequential([keras.Input((256,)), keras.layers.Dense(10)])
    optimizer = keras.optimizers.SGD(0.1)
rng = np.random.default_rng(0)
x = rng.standard_normal((GLOBAL_BATCH, 256)).astype("float32")
y = rng.integers(0, 10, GLOBAL_BATCH)
batches = strategy.experimental_distribute_dataset(
    tf.data.Dataset.from_tensors((x, y)).repeat()
)


def loss_and_gradients(x, y):
    """A replica's share of the global batch's loss, and its gradients."""
    with tf.GradientTape() as tape:
        per_example = keras.losses.sparse_categorical_crossentropy(
            y, model(x, training=True), from_logits=True
        )
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
    return loss, tape.gradient(loss, model.trainable_weights)


@tf.function
def train_step(batch):
    def replica_step(x, y):
        loss, grads = loss_and_gradients(x, y)
        optimizer.apply_gradients(zip(grads, model.trainable_weights, strict=True))
        return loss

    losses = strategy.run(replica_step, args=batch)
    return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)


iterator = iter(batches)
first = float(train_step(next(iterator)))
for _ in range(20):
    last = float(train_step(next(iterator)))
assert last < first

# %%
# All-reduce the gradients yourself
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# To choose how the gradients travel under Keras 3: sum them in the replica step with your
# options (here in float16, with the ring implementation) and let the optimizer apply the sums
# outside ``strategy.run``. Shown with the ``strategy``, ``model``, batches and
# ``loss_and_gradients`` of the recipe above; under ``MultiWorkerMirroredStrategy`` it is the
# same code. The check: a step lowers the loss. For ``RING`` or ``bytes_per_pack`` alone, no
# step of your own is needed: ``MultiWorkerMirroredStrategy(communication_options=options)``
# gives the optimizer's all-reduce those options. The casts need the step below.

options = tf.distribute.experimental.CommunicationOptions(
    implementation=tf.distribute.experimental.CommunicationImplementation.RING
)


@tf.function
def train_step_reducing(batch):
    def replica_step(x, y):
        loss, grads = loss_and_gradients(x, y)
        half = [tf.cast(g, tf.float16) for g in grads]
        summed = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, half, options=options
        )
        return loss, [tf.cast(g, tf.float32) for g in summed]

    losses, grads = strategy.run(replica_step, args=batch)
    # Outside strategy.run, Keras's optimizer applies the sums without all-reducing again.
    optimizer.apply_gradients(zip(grads, model.trainable_weights, strict=True))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)


first = float(train_step_reducing(next(iterator)))
for _ in range(20):
    last = float(train_step_reducing(next(iterator)))
assert last < first
