"""
How much do tensor operations buy over loops, and how close do they get to the hardware?
=========================================================================================

The tf.wiki handbook *Simple and Brutal TensorFlow 2* (简单粗暴 TensorFlow 2, by Xihan Li), in its
chapter on TensorFlow performance, tells its readers to embrace tensor operations: on the author's
i9-9900K and RTX 2060 SUPER, a 10000 × 10000 matrix product took about 700,000 s as a Python
triple loop and 0.77 s with ``tf.matmul`` (the table below has the rest); a loop of
``tf.matmul`` over 1000 matrices and a ``tf.stack`` took about 0.40 s, one ``tf.einsum`` about
0.28 s. The handbook timed these without waiting for the GPU; every other number on this page
was measured on the machine that built it.

.. raw:: html
   :file: ../../_generated/extra/answers/vectorization.answer.html

All arithmetic is float32 (the handbook's NumPy arrays were float64); every variant of a workload
computes the same result. :doc:`How to read these pages </reading>` defines the terms of the
tables and verdicts.
"""

# %%
# Where this page was measured
# ----------------------------
#
# ``Workers`` starts the two fresh Python processes that time every comparison below, its
# variants interleaved.

import matplotlib.pyplot as plt

from perfguide.measure import profile
from perfguide.measure.runner import default_device
from perfguide.pages import vectorization as page
from perfguide.processes.pool import Workers
from perfguide.report.publishing import results
from perfguide.report.publishing.show import show
from perfguide.report.tables.comparison import Comparison
from perfguide.report.tables.ops import OpTable
from perfguide.report.tables.table import Collapsed
from perfguide.report.verdicts.claims import ClaimReport

device = default_device()
workers = Workers(device=device, limits=True)
env, machine = workers.environment, workers.machine_limits
print(results.where_measured(env, device))
print(
    f"memory bandwidth {machine.memory_bandwidth / 1e9:.1f} GB/s, "
    f"peak float32 {machine.peak_flops / 1e9:.0f} GFLOP/s ({machine.how['peak_flops']})"
)

# %%
# From Python loops to BLAS
# -------------------------
#
# One square product, four ways: the handbook's triple loop over NumPy elements
# (``python-loops``), NumPy's ``matmul``, which calls a BLAS library (``numpy``), and
# TensorFlow's ``tf.matmul``, eagerly (``eager``) and inside a ``tf.function``
# (``tf-function``). The loop is timed only on small matrices, the others up to side 2048. The
# rate is floating-point operations per second (2·n³ for side n), against this machine's
# measured peak (the quickest block of a large product, printed above).
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: python_matmul
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: _matmul_call
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: product

products = page.time_products(workers)
page.products_plot(products, machine)
plt.show()

# %%
# The loop does a few million operations a second; BLAS, eager or not, gets within reach of the
# peak once a product is large enough to hide the cost of the call.

in_full = Comparison(products[page.LARGEST_SIDE], baseline="numpy")
show(Collapsed(f"Every BLAS variant at side {page.LARGEST_SIDE}, in full", in_full))

# %%
# .. dropdown:: How the short answer's table carries the handbook's product to this machine
#
#    A product of side 10000 would take minutes per variant here (days for the loop), so the
#    table carries the measured times up by the n³ operation count: the loop's from its largest
#    measured side, BLAS's from side 2048, where arithmetic bounds it. The exponent of a power
#    law fitted to the loop's times, printed below, checks the carry: the closer to 3, the more
#    of the time is arithmetic.

print(page.loop_fit(products))
handbook = page.handbook_table(products)
summary = "The handbook's product carried to this machine (the short answer's table)"
show(Collapsed(summary, handbook))

# %%
# The checks, at the loop's largest side and at side 2048:

product_checks = ClaimReport.of(page.PRODUCT_CLAIMS, products)
show(product_checks)

# %%
# Batched products: a loop, or one operation?
# -------------------------------------------
#
# The handbook's second example, at a fortieth of its size: 25 matrices of 100 × 1000, each
# times one 1000 × 1000 matrix. Five forms: the loop with ``tf.stack`` (``loop-stack``), one
# ``tf.einsum`` (``einsum``), one ``tf.matmul`` broadcasting the matrix over the batch
# (``broadcast-matmul``), ``tf.vectorized_map`` (``vectorized-map``) and ``tf.map_fn``
# (``map-fn``), each eagerly; the loop and ``einsum`` also inside a ``tf.function``
# (``loop-stack-tf-function``, ``einsum-tf-function``).
#
# .. dropdown:: The code being timed
#
#    ``tf.vectorized_map`` turns the loop body written for one matrix into batch operations;
#    ``tf.map_fn`` runs that body once per matrix in a graph loop.
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: loop_stack
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: einsum
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: broadcast_matmul
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: vectorized_map
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: map_fn
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: _batched_call

batched = page.time_batched(workers)

# %%
# As arithmetic per second:

page.batched_plot(batched, machine)
plt.show()

# %%
# The checks; the last sets einsum's rate against ``tf.matmul 2048``, the product that
# measures the machine's peak, timed in turns in the same processes (its median rate there, not
# the peak, which is its quickest block):

batched_checks = ClaimReport.of(page.BATCHED_CLAIMS, batched)
show(batched_checks)

# %%
# ``tf.matmul 2048``'s rate in these processes, and each form's share of it:

print(page.peak_rates(batched))

# %%
# What the loop costs besides arithmetic: eagerly, every ``a[i]`` and every ``tf.matmul`` is an
# op dispatched from Python, and ``tf.stack`` copies all the results into one tensor. In a
# ``tf.function`` the dispatches go, the copy stays. The ops each form runs:

print(page.ops_of_each_form())

# %%
# Element-wise chains: fusion and the memory wall
# -----------------------------------------------
#
# A matrix product does 2000 operations for every number it reads, so arithmetic bounds it. An
# element-wise op does one or two, so memory bounds it: each op reads its input from memory and
# writes its output back. Two chains on vectors, ten rounds of x ← 0.9·x + 0.1 and ten
# of x ← tanh(0.9·x + 0.1), in NumPy (``numpy``), eagerly (``eager``), as one ``tf.function``
# (``tf-function``), and compiled by XLA (``xla``), which fuses a chain into one loop that
# reads x once and writes the result once. The rate counts just that least traffic, 8 bytes an
# element, against the memory bandwidth.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: affine_chain
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: small_ops
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: _chain_call

chains = page.time_chains(workers)
page.chains_plot(chains, machine)
plt.show()

# %%
# At ten million elements, each variant's share of the bandwidth; then the checks, the last at
# a thousand elements, where a call's fixed cost dominates:

print(page.bandwidth_shares(chains, machine))
chain_checks = ClaimReport.of(page.CHAIN_CLAIMS, chains)
show(chain_checks)

# %%
# Fusion saves passes over memory, so it pays only where memory is the limit. Which limit a
# chain meets shows in its share of the bandwidth (above) and in the cores it kept busy (CPU
# time over wall time, per block):

print(page.cores_busy(chains))

# %%
# Feeding the data
# ----------------
#
# The handbook's other advice: preprocess the data ahead and load it in parallel with training.
# One epoch of 32 small training steps, fed four ways: preprocessed in NumPy as the loop needs
# each batch (``numpy-each-step``); preprocessed and converted to tensors once, before training
# (``preloaded``); a ``tf.data`` pipeline from ``from_tensor_slices`` (``tf-data``); and
# ``Dataset.from_generator`` over the NumPy batches (``from-generator``), which users have
# reported to be more than ten times slower than ``from_tensor_slices``
# (`tensorflow/tensorflow#56258 <https://github.com/tensorflow/tensorflow/issues/56258>`_). The
# network's hidden layer grows from 16 to 2048 units, to move the step from bound by feeding to
# bound by arithmetic. (:doc:`The tf.data chapter </auto_examples/tf_data/plot_tf_data>` takes
# a pipeline apart.)
#
# .. dropdown:: The code being timed
#
#    Batches of 128 rows of 256 raw features are centred, scaled and cast to float32 before
#    they reach a two-layer network; every variant trains the same weights. The pipeline is
#    ``from_tensor_slices``, ``batch``, ``map(num_parallel_calls=AUTOTUNE)``, ``cache`` and
#    ``prefetch``.
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: _batch_sources
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: train_epoch
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: _train_step

feeding = page.time_feeding(workers)
at_small = Comparison(feeding[page.SMALL_MODEL], baseline="preloaded")
summary = (
    f"Time per training step at {page.SMALL_MODEL} hidden units, each way of feeding"
)
show(Collapsed(summary, at_small))

# %%
# What feeding costs: a variant's step time beyond the preloaded one's, as a share of its step.
# Where the share falls towards zero, arithmetic bounds the step and no pipeline can speed it up.

page.feeding_plot(feeding)
plt.show()
print(page.feeding_shares(feeding))

# %%
# Feeding alone, each source drained for one epoch with no training step, as the report of a
# tenfold gap compared them:

alone = page.time_sources_alone(workers)
summary = "Time per batch with no training step, each way of feeding"
show(Collapsed(summary, Comparison(alone, baseline="preloaded")))

# %%
# The checks on feeding, in a training step and alone:

feeding_checks = page.feeding_claims(feeding, alone)
show(feeding_checks)

# %%
# Each variant's feeding cost per step at 16 hidden units, and its cost per batch alone:

print(page.costs_beside_alone(feeding, alone))

# %%
# Iterated from Python, a ``tf.data`` pipeline has a fixed cost per batch, and so has slicing a
# NumPy array: the larger of the two columns above decides which feeds a small step faster. A
# pipeline earns its keep where it overlaps loading with training, or where the loop over
# batches runs inside TensorFlow, as ``Model.fit``'s does.

# %%
# Profile before optimizing
# -------------------------
#
# The handbook's first advice: measure where the time goes. TensorFlow's profiler gives it op
# by op; here, five calls of ``loop-stack-tf-function``, traced after the timing above (an op's
# *self time* leaves out the ops nested in it).
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: loop_stack

trace = page.trace_the_loop(workers)
op_table = OpTable.from_trace(trace, top=5)
show(Collapsed("The op types that took the most time, five at most", op_table))

# %%
# If the products take nearly all of the time, the loop's own cost (the slices and the stack) is
# not what to optimize. Their share of op time here (wall time: in a ``tf.function`` the
# executor runs independent products side by side on the two cores):

print(page.products_share(op_table))
products_check = ClaimReport([page.products_dominate(op_table)])
show(Collapsed("The check on the products' share", products_check))

# %%
# The trace is published beside the measurements, as

print(f"measurements/{trace.relative_to(results.measurements_dir())}")
print(profile.how_to_open(page.PROFILE_DIR))

# %%
# The TensorFlow build and this CPU
# ---------------------------------
#
# The handbook warns that a TensorFlow binary may not use the CPU's vector instructions. Today,
# oneDNN, which runs the heavy kernels (products, convolutions) on x86, picks its instruction
# set at run time; the rest of TensorFlow is compiled for a baseline and says at import which
# instructions it leaves unused. On this machine:

print(page.instruction_sets(env))

# %%
# Two process-wide settings change which kernels and how many threads run:
# ``TF_ENABLE_ONEDNN_OPTS`` turns oneDNN's kernels against this CPU's default (``oneDNN off`` or
# ``oneDNN on``; TensorFlow 2.21 turns them on only on some CPUs), and
# ``TF_NUM_INTRAOP_THREADS=1`` limits each op to one thread (``1 intra-op thread``); ``default``
# sets neither. Each setting gets two fresh processes, taking turns
# (:func:`perfguide.processes.pool.run_across`), for a product of side 1024 and a 3 × 3
# convolution of eight 64 × 64 images with 32 channels:

runs = page.time_settings(device, page.settings(env))
print(runs)
summary = "Each fresh process's time per call under each setting"
show(Collapsed(summary, page.settings_table(runs)))

# %%
# The checks, each interval carrying the spreads of both settings' processes:

setting_checks = ClaimReport.of(page.setting_claims(env), runs.by_kernel)
show(setting_checks)

# %%
# Short answer
# ------------
#
# The box atop the page, built from the checks above.

answer = page.short_answer(
    product_checks,
    batched_checks,
    chain_checks,
    feeding_checks,
    setting_checks,
    handbook,
    env,
)
# sphinx_gallery_start_ignore
answer.publish("vectorization")
# sphinx_gallery_end_ignore
print(answer)

# %%
# Take the numbers with you
# -------------------------
#
# Everything measured here, with the environment record, is published as
# `vectorization.json <../../measurements/vectorization.json>`_, in the shape
# ``python -m perfguide run batched-matmul --json PATH`` writes; the
# :doc:`build machine </environment>` page describes the machine.
#
# .. dropdown:: To rerun this page
#
#    Install the guide's package from a checkout of its repository
#    (``python -m pip install -e ".[cpu]"``) and run the script downloaded below.

published = page.everything_measured(products, batched, chains, feeding, alone, runs)
print(results.publish("vectorization", env, published))
workers.close()


# %%
# Recipes
# -------
#
# Each recipe is checked against the code it replaces; the speed-ups were measured on this
# page's 2-core CPU.
#
# One einsum instead of a loop of products
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# One ``tf.einsum`` computes every product of the batch in one op, the same numbers as the loop
# of ``tf.matmul`` with ``tf.stack``.
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
a = tf.constant(rng.random((8, 100, 300), dtype=np.float32))  # 8 matrices of 100 × 300
b = tf.constant(rng.random((300, 200), dtype=np.float32))

batched = tf.einsum("ijk,kl->ijl", a, b)  # every product in one op

looped = tf.stack([tf.matmul(a[i], b) for i in range(a.shape[0])])
np.testing.assert_allclose(batched, looped, rtol=1e-4)

# %%
# Fuse an element-wise chain with XLA
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# ``jit_compile=True`` turns a chain of cheap element-wise ops into one pass over memory: for
# large arrays, where memory bounds the chain (the checks above show where it paid here).
import numpy as np
import tensorflow as tf


@tf.function(jit_compile=True)
def affine_chain(x):
    for _ in range(10):
        x = x * 0.9 + 0.1
    return x


x = np.random.default_rng(0).random(10**6, dtype=np.float32)
expected = x
for _ in range(10):
    expected = expected * np.float32(0.9) + np.float32(0.1)
np.testing.assert_allclose(affine_chain(tf.constant(x)), expected, rtol=1e-5)

# %%
# Feed from_tensor_slices, not from_generator
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Preprocess the arrays once, before training, and slice them with ``from_tensor_slices``: the
# same batches a Python generator would yield, without calling Python for each.
import numpy as np
import tensorflow as tf

raw = np.random.default_rng(0).normal(50.0, 10.0, (1024, 256))
x = ((raw - 50.0) / 10.0).astype(np.float32)  # preprocessed once
y = np.zeros((1024, 1), np.float32)
dataset = (
    tf.data.Dataset.from_tensor_slices((x, y)).batch(128).prefetch(tf.data.AUTOTUNE)
)


def numpy_batches():  # what Dataset.from_generator would wrap
    for start in range(0, len(x), 128):
        yield x[start : start + 128], y[start : start + 128]


for (x_batch, y_batch), (x_numpy, y_numpy) in zip(
    dataset, numpy_batches(), strict=True
):
    np.testing.assert_array_equal(x_batch, x_numpy)
    np.testing.assert_array_equal(y_batch, y_numpy)
