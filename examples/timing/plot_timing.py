"""
Why do my TensorFlow timings disagree?
======================================

Two people time the same TensorFlow function and get numbers a factor of ten apart; the same
person times it twice and gets two answers. The usual culprits are the ones JAX's `Benchmarking
JAX code <https://docs.jax.dev/en/latest/benchmarking.html>`_ page, pyperf's `Tune the system
<https://pyperf.readthedocs.io/en/latest/system.html>`_ and `Analyze benchmark results
<https://pyperf.readthedocs.io/en/latest/analyze.html>`_ pages and ``torch.utils.benchmark``'s
`documentation <https://pytorch.org/docs/stable/benchmark_utils.html>`_ warn about: the first call timed with the rest, one call
timed with a coarse clock, work that has not run yet when the clock stops, variants timed one
after the other instead of in turns, one process taken for all of them, what ran earlier in the
same process, and thread pools still busy with the previous job. This page commits each mistake
on purpose, on one small ``tf.function`` step, and sets what it reports beside what this guide's
harness measures. Every number is measured by this page, on the machine that built it.

.. raw:: html
   :file: ../../_generated/extra/answers/timing.answer.html

Each mistake runs in five fresh Python processes, one after another (the guide's other pages
use three; what a mistake reports varies widely from process to process); a number below is the
median over the processes unless it says otherwise. :doc:`How to read these pages </reading>`
defines the terms of the tables and verdicts: a fresh process, a block of calls, the rerun
interval.
"""

# %%
# Where this page was measured, and the step being timed
# ------------------------------------------------------
#
# The guide's own calls take a line each: ``Workers(5)`` starts the five fresh processes, and
# ``page.across`` runs a mistake (a function of ``perfguide.workloads.timing``) in each of them,
# one result per process. ``page`` holds this page's checks, tables and plots.

import matplotlib.pyplot as plt

from perfguide.measure.runner import default_device
from perfguide.pages import timing as page
from perfguide.processes.pool import Workers
from perfguide.report.publishing import results
from perfguide.report.publishing.show import show
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import timing as tm

device = default_device()
workers = Workers(5, device=device)
env = workers.environment
print(results.where_measured(env, device))

# %%
# Every mistake below times this step, a ``tf.function`` over 1,000 floats:
#
# .. literalinclude:: /../perfguide/workloads/timing.py
#    :pyobject: step

# %%
# The first call inside the timing
# --------------------------------
#
# A ``tf.function`` traces its Python code into a graph on its first call, and that costs far
# more than a call. A loop of ten calls timed from the very first averages the tracing in; a
# *steady* call is one timed after the first, once the graph exists:
#
# .. literalinclude:: /../perfguide/workloads/timing.py
#    :pyobject: first_call_in_timing

first_calls = page.across(workers, tm.first_call_in_timing)
print(page.first_call_lines(first_calls))
first_call_checks = ClaimReport.of([page.FIRST_CALL], first_calls)
show(first_call_checks)

# %%
# One call at a time
# ------------------
#
# Timing a single call, again and again, with ``time.time()`` or even ``time.perf_counter()``,
# gives a number per call that moves with everything else the machine does in that instant.
# The harness times *calibrated blocks* instead: as many calls in a row as fill a twentieth of a
# second, timed together, and takes the blocks' median.
#
# .. literalinclude:: /../perfguide/workloads/timing.py
#    :pyobject: one_call_at_a_time

single = page.across(workers, tm.one_call_at_a_time)
print(page.clock_spreads(single))
page.single_call_plot(single)
plt.show()

# %%

single_call_checks = ClaimReport.of([page.SINGLE_CALL], single)
show(single_call_checks)

# %%
# On Linux both clocks resolve nanoseconds, so the clock is not what blurs a single call here.
# What the blocks still spread by is this machine's speed moving from one moment to the next, a
# change that lasts longer than a block, which is what the median of many blocks, and of
# several processes, is for. The two spreads, as shares of their medians:

print(page.spread_summary(single))

# %%
# Work that has not run when the clock stops
# ------------------------------------------
#
# On a GPU, TensorFlow returns from an op before the device has finished it, so a timer must
# wait for the device (the harness ends every block with ``tf.test.experimental.sync_devices``).
# On a CPU an op is done when it returns, but a ``tf.data`` pipeline shows the same mistake
# anywhere: ``map`` and ``batch`` only describe the work, which runs when the pipeline is
# iterated.
#
# .. literalinclude:: /../perfguide/workloads/timing.py
#    :pyobject: pipeline_built_or_run

pipelines = page.across(workers, tm.pipeline_built_or_run)
print(page.pipeline_times(pipelines))
pipeline_checks = ClaimReport.of([page.UNRUN], pipelines)
show(pipeline_checks)

# %%
# Building the pipeline is not free either: ``map`` traces ``step`` into a graph right away.
# Tracing the same step on its own, in the same processes, took

print(page.tracing_share(pipelines))

# %%
# So a timer around the build measures tf.data's setup, of which tracing ``step`` is that share,
# and misses the work per element, which grows with the data while the setup stays the same.
#
# A then B, or in turns
# ---------------------
#
# Two variants timed one after the other meet the machine at two different times. Here the
# same step is timed twice as if it were two variants, A and B: all of A's blocks and then all
# of B's, and then taking turns block by block. Nothing differs between A and B, so a ratio
# away from 1 is what the order did:
#
# .. literalinclude:: /../perfguide/workloads/timing.py
#    :pyobject: a_then_b

orders = page.across(workers, tm.a_then_b)
print(page.order_ratios(orders))
order_checks = ClaimReport.of([page.ORDER], orders)
show(order_checks)

# %%
# In brackets, each ratio's 95 % interval from its blocks. Where the intervals of both orders
# reach across 1, the blocks' own noise is larger than anything the order did: on a quiet
# machine the two orders may land close together, as a drift needs something to drift. The
# harness takes turns anyway (A, B, C, then C, B, A), because it costs nothing and protects
# every comparison from the drifts a busy machine does have.
#
# One process or several, and what ran in it before
# --------------------------------------------------
#
# The harness's own numbers, for the same step: five fresh processes, each timing calibrated
# blocks. Each process's median, with the 95 % interval its own blocks give it (what a
# benchmark run in one process would report), and the median this guide publishes with its
# interval:

(step,) = workers.run(tm.STEP)
print(page.process_intervals(step))

# %%
# A benchmark timed in a process that did other work first also inherits what that work left
# behind: caches, memory, threads, TensorFlow's own state. The process that builds this page is
# such a process: in a docs build it has already run every chapter before this one. One small
# eager op, ``x + x`` on 1,000 floats, timed in this page's fresh processes and in this page's
# own process:

adds = page.time_add_fresh_and_here(workers, device)
print(page.add_times(adds))
measured = [step, *adds]
process_checks = ClaimReport.of(page.PROCESS_CLAIMS, measured)
show(process_checks)

# %%
# The first check compares each process's own interval with the one this guide publishes for
# the same step, which is where the next run on this machine lands: it takes in how far the
# processes' medians lie apart and how far a whole run drifts between rebuilds here. A
# process's blocks agree with each other, which says nothing of a process started later. The
# :doc:`build machine </environment>` page measures this machine's spread between processes
# and how many processes a median needs to be known within 5 %. Whichever way the checks came
# out, every other number in this guide is timed in fresh processes only.
#
# Thread pools still busy
# -----------------------
#
# NumPy's BLAS and TensorFlow run large operations on every core, and some thread pools keep
# spinning for a while after the work is done. An op timed right after such a call meets them
# still awake. The same op, ``x + x``, is timed three ways: right after a NumPy product, after
# the same product and a wait until the process is idle, and after a short sleep with no
# product at all:
#
# .. literalinclude:: /../perfguide/workloads/timing.py
#    :pyobject: after_busy_pools

pools = page.across(workers, tm.after_busy_pools)
print(page.pool_times(pools))

# %%
# The first check asks whether the op ran faster right after the product than after the pools
# went idle; the second, whether a sleep alone, with no product, slows it as the wait did, which
# tells whether the product or the idle time before the op made the difference:

pool_checks = ClaimReport.of(page.POOL_CLAIMS, pools)
show(pool_checks)

# %%
# Where both claims hold, sharing the cores with spinning threads did not slow the op down;
# what slows a single op is the idle time before it, product or not: a core that has slept (on
# a virtual machine, one the host may have handed to another guest meanwhile) wakes slowly, and
# the op's data and code have left its caches. Against a steady call, each single op here took

print(page.against_steady(pools))

# %%
# The harness sidesteps all of it by timing calibrated blocks of the same call, after warm-up
# calls, with every variant in the same state: it lets the pools go idle before each block
# (rather than before each call), so every variant's block starts from the same idle cores.
#
# Short answer
# ------------
#
# The box at the top of this page, built from the checks above.

checks = (
    first_call_checks,
    single_call_checks,
    pipeline_checks,
    order_checks,
    process_checks,
    pool_checks,
)
answer = page.short_answer(*checks, step)
# sphinx_gallery_start_ignore
answer.publish("timing")
# sphinx_gallery_end_ignore
print(answer)

# %%
# Take the numbers with you
# -------------------------
#
# The harness's measurements on this page are published as
# `timing.json <../../measurements/timing.json>`_, with each process's value of every ratio the
# checks above were judged on. To rerun this page on your own machine,
# install the guide's package from a checkout of its repository
# (``python -m pip install -e ".[cpu]"``) and run the script downloaded below;
# ``python -m perfguide env`` measures how far apart fresh processes land on your machine.

print(results.publish("timing", env, measured, [c for r in checks for c in r.claims]))
workers.close()


# %%
# Recipes
# -------
#
# The habits above, in the few lines a timing needs, each on its own small step or pipeline and
# each checking that nothing retraced or went missing while it was timed.
#
# Time steady calls, not the first
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# One warm-up call traces the function outside the timing; ``timeit.repeat`` then times blocks
# of many calls, and their median is the time per call. ``.numpy()`` inside the timed call
# waits for the result.
import statistics
import timeit

import tensorflow as tf


@tf.function
def step(x):
    return tf.reduce_sum(tf.tanh(x * 2.0 + 1.0))


x = tf.random.normal([1000])
step(x).numpy()  # warm-up: the trace happens here, outside the timing
blocks = timeit.repeat(lambda: step(x).numpy(), number=200, repeat=7)
print(f"{statistics.median(blocks) / 200 * 1e6:.1f} µs a call")
assert step.experimental_get_tracing_count() == 1  # nothing retraced while timed

# %%
# Time the first call apart
# ~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# The first call traces, then runs: a cost paid once per new input signature. Time it alone,
# then the steady calls.
import time

import tensorflow as tf


@tf.function
def step(x):
    return tf.reduce_sum(tf.tanh(x * 2.0 + 1.0))


x = tf.random.normal([1000])
start = time.perf_counter()
step(x).numpy()  # traces the graph, then runs it
first_call = time.perf_counter() - start
start = time.perf_counter()
for _ in range(100):
    step(x).numpy()
steady = (time.perf_counter() - start) / 100
print(f"first call {first_call * 1e3:.1f} ms, then {steady * 1e6:.1f} µs a call")
assert (
    step.experimental_get_tracing_count() == 1
)  # the first call traced; the rest reused it

# %%
# Time a pipeline by iterating it
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Building a ``tf.data`` pipeline only describes the work, which runs as the pipeline is
# iterated: the clock goes around the loop over its batches.
import time

import numpy as np
import tensorflow as tf

rows = np.random.default_rng(0).random((10_000, 32), dtype=np.float32)
dataset = tf.data.Dataset.from_tensor_slices(rows).map(tf.tanh).batch(100)
start = time.perf_counter()
batches = sum(1 for _ in dataset)  # the work runs here
print(f"{(time.perf_counter() - start) * 1e3:.1f} ms for one pass over the data")
assert batches == 100
