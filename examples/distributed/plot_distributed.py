"""
Why doesn't my distributed training scale?
==========================================

Users who move a model to ``tf.distribute`` often find each step slower than before. One asked
`why training speed per step decreases when the number of workers increases in distributed
training on CPUs <https://github.com/tensorflow/tensorflow/issues/60245>`_ (workers on one
node); another found ``MultiWorkerMirroredStrategy`` `a lot slower than non-distributed
<https://github.com/tensorflow/tensorflow/issues/48374>`_. Every number below is measured here,
where a cluster is processes talking over the loopback.

Every setup trains the first thread's model (#60245's), a 256-1024-1024-10 MLP, with the custom
training loop TensorFlow's distribution guides teach. A *worker* is one process that trains; a
*pinned* worker is held to one core of its own; the *all-reduce* sums the workers' gradients so
that every worker takes the same step. *Weak scaling* keeps each worker's batch (64 examples
here); *strong scaling* keeps the global batch and splits it. The *scaling efficiency* is the
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

import matplotlib.pyplot as plt

from perfguide.measure import environment
from perfguide.pages import distributed as page
from perfguide.processes import distributed_setups
from perfguide.report.publishing import results
from perfguide.report.publishing.show import show
from perfguide.report.tables.comparison import Comparison
from perfguide.report.tables.table import Collapsed
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import distributed, distributed_input

env = environment.collect()
print(results.where_measured(env))
if env["usable_cores"] < 2:
    print("This machine lets this process use one core: two pinned workers share it.")

# %%
# The step every setup trains
# ---------------------------
#
# Each replica computes its share of the global batch's loss, scaled by the global batch
# (``tf.nn.compute_average_loss``), and the optimizer all-reduces the gradients (sums them over
# the replicas) before it applies them: 5.3 MB of float32 gradients a step.
#
# .. rubric:: The training step, under any strategy
#
# .. literalinclude:: /../perfguide/workloads/distributed.py
#    :pyobject: Training
#
# A *setup* is a strategy and the fresh processes it runs in:
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

measured, failures = distributed_setups.measure()
for name, reason in failures.items():
    print(f"{name}: did not run here: {reason}")

# %%
# Weak scaling: two workers, twice the examples a step
# -----------------------------------------------------
#
# The time an example takes at a global batch of 128 (64 a worker for two):

weak = page.weak_scaling(measured)
show(Comparison(weak, baseline="one process"))

# %%
# The checks: what #60245 and #48374 saw, and whether pinning each worker matters.

per_worker = page.one_worker_against_two(measured, distributed_setups.PER_WORKER)
weak_checks = ClaimReport.of(page.WEAK_CLAIMS, weak + per_worker)
show(weak_checks)

# %%
# The anatomy of a synchronous step
# ---------------------------------
#
# A step of two workers is each worker's computation on its 64 examples, then the all-reduce of
# the gradients, in which each waits for the other. The all-reduce alone, between the same two
# workers, of float32 tensors and of the gradients in float32 and in float16:

alone = page.allreduce_alone(measured)
link = page.fitted_link(alone)
show(
    Collapsed(
        "The all-reduce's times",
        Comparison(alone, baseline=distributed_setups.ALLREDUCE_SIZES[0]),
    )
)

# %%
# A ring all-reduce over two workers sends each worker's bytes once each way, so it takes about
# two message latencies plus the bytes over the link's bandwidth. Fitted to the times above:

anatomy = page.anatomy(link, per_worker)
print(anatomy)

# %%
# What you can change in the all-reduce
# -------------------------------------
#
# Keras 3's optimizer all-reduces the gradients inside each replica with the strategy's default
# options and cannot skip that sum (``experimental_aggregate_gradients`` is Keras 2's). Each
# other way ran between the same two pinned workers, in turn with the optimizer's own: ``RING``
# rather than ``AUTO``; packs of at most 1 MiB (``bytes_per_pack``); ``float16 gradients`` and
# ``bfloat16 gradients``, the gradients cast to half the bytes (the tests check the update stays
# within their rounding); and ``one tensor``, the six gradients flattened into one all-reduce.
# The baseline is ``the optimizer's all-reduce``.
#
# .. dropdown:: A replica's own all-reduce, and the step that applies it
#
#    Each other way sums the gradients in the replica step and applies the sums outside
#    ``strategy.run``, as the last recipe does. float16 overflows past 65,504; bfloat16 keeps
#    float32's range with fewer digits.
#
#    .. literalinclude:: /../perfguide/workloads/distributed.py
#       :pyobject: Reduction
#
#    .. literalinclude:: /../perfguide/workloads/distributed.py
#       :pyobject: Training._step

reductions = page.of_workload(measured, distributed.DISTRIBUTED_REDUCTION)
show(
    Collapsed(
        "Each way's time an example",
        Comparison(reductions, baseline=distributed.OPTIMIZERS),
    )
)

# %%
# The checks: the fitted all-reduce against the two workers' step, each way against the
# optimizer's own, and float16's saving in the all-reduce alone against a step's.

reduction_checks = ClaimReport.of(page.REDUCTION_CLAIMS, reductions)
halving = page.halving_claim(alone, reductions)
show(ClaimReport([anatomy.claim, *reduction_checks.claims, halving]))

# %%
# Strong scaling, and a larger batch
# ----------------------------------
#
# Strong scaling splits a global batch of 64 between the two workers, each still all-reducing
# all the gradients. With 512 a worker, the computation grows and the all-reduce stays the same.

strong = page.strong_scaling(measured)
large = page.one_worker_against_two(measured, distributed_setups.LARGE)
show(Collapsed("The times an example", Comparison(strong + large)))

# %%
# The checks: whether splitting the batch pays, and the scaling efficiency at 512 a worker.

scale_checks = ClaimReport.of(page.SCALE_CLAIMS, strong + large)
show(scale_checks)

# %%
# How each worker reads its share of the data
# -------------------------------------------
#
# The steps above train on a batch in memory. Here the workers read eight TFRecord files of 128
# small JPEGs each, decoded, scaled to 16x16 and flattened into the MLP's 256 features. ``FILE``
# sharding gives each worker its own files (what ``AUTO``, the default, picks for files);
# ``DATA`` has each worker decode every file and keep every other example; ``from a function``
# is ``distribute_datasets_from_function``, each worker sharding the file names before it
# decodes anything. Each trains every example once an epoch (the tests count them). Each ran in
# turn with the in-memory step.
#
# .. rubric:: The input pipeline
#
# .. literalinclude:: /../perfguide/workloads/distributed_input.py
#    :pyobject: decode
#
# .. literalinclude:: /../perfguide/workloads/distributed_input.py
#    :pyobject: distributed_batches

inputs = page.of_workload(measured, distributed_input.DISTRIBUTED_INPUT)
show(Collapsed("Each way's time an example", Comparison(inputs, baseline="FILE")))

# %%
# The checks: whether reading every file, or building the pipeline in a function, costs the
# workers, and what reading files costs a step.

input_checks = ClaimReport.of(page.INPUT_CLAIMS, inputs)
show(input_checks)

# %%
# Past one machine, on paper
# --------------------------
#
# On N workers, each on its own machine, the step is a projection: each worker's computation as
# measured here on one core, plus a ring all-reduce of the 5.3 MB of gradients at the networks'
# bandwidths as sold, each message paying this machine's host cost and a network's latency. The
# line without host cost bounds the projection from above. Weak scaling, no overlap of
# computation and all-reduce. The dot is measured here.
#
# .. dropdown:: The projected all-reduce, term by term
#
#    A ring all-reduce sends each link 2(N−1)/N of the bytes in 2(N−1) messages (Patarasuk and
#    Yuan, 2009). A message's host cost is the loopback latency fitted above; a network's
#    latency is 250 µs, half the 500 µs datacenter round trip of Jeff Dean's "Numbers everyone
#    should know" (2009).

projected = page.projections(anatomy)
page.speedup_plot(projected, anatomy)
plt.show()
print(page.efficiencies(projected))
print(page.where_a_step_goes(anatomy))

# %%
# Horovod's benchmarks report 90 % scaling efficiency for ResNet-101 on 128 servers of four
# GPUs over 25 Gb/s RoCE (Sergeev and Del Balso, 2018), a model that computes far more per byte
# of gradients than this MLP.
#
# Keras's ``fit`` under each strategy
# -----------------------------------
#
# With ``model.fit`` rather than a custom loop:

show(page.fit_table(distributed_setups.try_fit(measured, failures)))

# %%
# Keras 3's failure under ``MultiWorkerMirroredStrategy`` is keras-team/keras#20585 (open at
# TensorFlow 2.21 and Keras 3.15). Keras 2's ``fit`` runs there: set ``TF_USE_LEGACY_KERAS=1``
# before TensorFlow is imported, with the ``tf_keras`` package installed; or train with the
# custom loop above.
#
# The short answer
# ----------------

answer = page.short_answer(
    env["usable_cores"],
    weak_checks,
    scale_checks,
    anatomy,
    input_checks,
    reduction_checks,
)
# sphinx_gallery_start_ignore
answer.publish("distributed")
# sphinx_gallery_end_ignore
print(answer)

# %%
# Take the numbers with you
# -------------------------
#
# Every measurement above is in `distributed.json <../../measurements/distributed.json>`_, in
# the shape ``python -m perfguide run distributed --json PATH`` writes.

print(results.publish("distributed", env, page.every_measurement(measured)))

# %%
# Recipes
# -------
#
# Gradient bytes and the all-reduce they cost
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Before adding workers, weigh a step's computation against its all-reduce: your model's
# gradient bytes, and a ring all-reduce of them over N workers on your network. The check: this
# page's MLP sends 5.3 MB a step.

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
# outside ``strategy.run``. It reuses the ``strategy``, ``model``, batches and
# ``loss_and_gradients`` of the recipe above. The check: a step lowers the loss. For ``RING`` or
# ``bytes_per_pack`` alone, no step of your own is needed:
# ``MultiWorkerMirroredStrategy(communication_options=options)`` gives the optimizer's all-reduce
# those options.

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
