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

# sphinx_gallery_start_ignore
import dataclasses
import math
import statistics

import matplotlib.pyplot as plt

from perfguide.measure import stats
from perfguide.measure.runner import default_device, run
from perfguide.processes.pool import Workers
from perfguide.report import results
from perfguide.report.answers import Change, Recommendation, ShortAnswer
from perfguide.report.claims import ClaimReport, Faster, per_process
from perfguide.report.format import format_seconds, format_speedup
from perfguide.report.show import show
from perfguide.workloads import eager
from perfguide.workloads import timing as tm

device = default_device()
workers = Workers(5, device=device)
env = workers.environment
print(results.where_measured(env, device))
# sphinx_gallery_end_ignore

# %%
# Every mistake below times this step, a ``tf.function`` over 1,000 floats:
#
# .. literalinclude:: /../perfguide/workloads/timing.py
#    :pyobject: step


# sphinx_gallery_start_ignore
def across(name: str, **kwargs) -> list[dict]:
    """``tm.<name>(**kwargs)`` run in each fresh process: one result per process."""
    return workers.call(f"perfguide.workloads.timing:{name}", **kwargs)


def median_of(per_process: list[dict], key: str) -> float:
    return statistics.median(result[key] for result in per_process)


# sphinx_gallery_end_ignore


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

# sphinx_gallery_start_ignore
first_calls = across("first_call_in_timing")
naive_ratios = [r["naive_s"] / r["steady_s"] for r in first_calls]
for r, ratio in zip(first_calls, naive_ratios, strict=True):
    print(
        f"first call {format_seconds(r['first_call_s']):>9s}, ten calls from the first "
        f"{format_seconds(r['naive_s']):>9s} a call, steady {format_seconds(r['steady_s']):>9s}"
        f": reads {format_speedup(1 / ratio)}"
    )
first_call_claim = per_process(
    "timing ten calls from the first overstates a steady call at least 5-fold",
    naive_ratios,
    5,
    "a steady call's time",
)
show(ClaimReport([first_call_claim]))
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
single = across("one_call_at_a_time")


def spread(samples: list[float]) -> float:
    """The middle 90 % of ``samples``, as a share of their median."""
    ventiles = statistics.quantiles(samples, n=20)
    return (ventiles[-1] - ventiles[0]) / statistics.median(samples)


single_spread = [spread(r["single_s"]["time.perf_counter"]) for r in single]
block_spread = [spread(r["block_s"]) for r in single]
clock_spread = [spread(r["single_s"]["time.time"]) for r in single]
resolution = single[0]["resolution_s"]
print(f"clock resolution: {', '.join(f'{k} {v:.1e} s' for k, v in resolution.items())}")
for name, values in (
    ("single calls, time.time()", clock_spread),
    ("single calls, time.perf_counter()", single_spread),
    ("calibrated blocks", block_spread),
):
    print(
        f"{name:35s} middle 90 % spans {', '.join(f'{v:.0%}' for v in values)} of the median"
    )

fig, ax = plt.subplots(layout="constrained")
first = single[0]
ax.hist(
    [s * 1e6 for s in first["single_s"]["time.perf_counter"]],
    bins=40,
    alpha=0.6,
    label="one call at a time (perf_counter)",
)
ax.hist(
    [s * 1e6 for s in first["block_s"]], bins=10, alpha=0.9, label="calibrated blocks"
)
ax.set_xlabel("time per call (µs), first process")
ax.set_ylabel("samples")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
ax.set_title("The same step, timed one call at a time and in blocks")
plt.show()
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
single_call_claim = per_process(
    "single-call timings spread wider than calibrated blocks",
    [s / b for s, b in zip(single_spread, block_spread, strict=True)],
    1,
    "the blocks' spread",
)
show(ClaimReport([single_call_claim]))
# sphinx_gallery_end_ignore

# %%
# On Linux both clocks resolve nanoseconds, so the clock is not what blurs a single call here.
# What the blocks still spread by is this machine's speed moving from one moment to the next, a
# change that lasts longer than a block, which is what the median of many blocks, and of
# several processes, is for. The two spreads, as shares of their medians:

# sphinx_gallery_start_ignore
print(
    f"blocks: middle 90 % spans {statistics.median(block_spread):.0%} of their median; "
    f"single calls: {statistics.median(single_spread):.0%} (medians over the processes); "
    f"process by process, single calls spread {single_call_claim.quoted}"
)
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
pipelines = across("pipeline_built_or_run")
built, ran = median_of(pipelines, "built_s"), median_of(pipelines, "run_s")
traced = median_of(pipelines, "trace_s")
unrun_claim = per_process(
    "timing where a tf.data pipeline is built misses most of its time",
    [r["run_s"] / r["built_s"] for r in pipelines],
    1,
    "the build's time",
)
# The ratio is each process's own; the two times are medians over the processes, so their
# quotient is not it.
print(
    f"building the pipeline {format_seconds(built)}, iterating it {format_seconds(ran)} "
    f"(medians over the processes); iterating took {unrun_claim.quoted}, process by process"
)
show(ClaimReport([unrun_claim]))
# sphinx_gallery_end_ignore

# %%
# Building the pipeline is not free either: ``map`` traces ``step`` into a graph right away.
# Tracing the same step on its own, in the same processes, took

# sphinx_gallery_start_ignore
print(f"{format_seconds(traced)}, {traced / built:.0%} of the build")
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
orders = across("a_then_b")
ratios = {
    key: [stats.blocks_ratio_interval(r[key]["b"], r[key]["a"]) for r in orders]
    for key in ("sequential", "interleaved")
}
for key, in_processes in ratios.items():
    print(
        f"B / A {key:11s} "
        + ", ".join(
            f"{ratio:.3f} ({low:.2f} to {high:.2f})"
            for ratio, low, high in in_processes
        )
    )
# Per process: how much further from 1 the ratio timed one after the other lies than the one
# timed in turns (above 1: taking turns came closer).
# (Distances below 0.01 % count as 0.01 %: a ratio of two near-zero distances means nothing.)
further = [
    max(abs(math.log(seq)), 1e-4) / max(abs(math.log(turns)), 1e-4)
    for (seq, _, _), (turns, _, _) in zip(
        ratios["sequential"], ratios["interleaved"], strict=True
    )
]
order_claim = per_process(
    "taking turns brings two timings of the same step closer than timing one after the other",
    further,
    1,
    "as far from 1 one after the other as in turns",
)
show(ClaimReport([order_claim]))
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
(step_m,) = workers.run(tm.STEP)
own = [stats.blocks_interval(blocks) for blocks in step_m.by_process]
for (low, high), median in zip(own, step_m.process_median_s, strict=True):
    print(
        f"process median {format_seconds(median)}, its own 95 % interval "
        f"{format_seconds(low)} to {format_seconds(high)}"
    )


def spread_of(medians) -> float:
    return max(medians) / min(medians) - 1


published_low, published_high = step_m.interval_s
print(f"the processes' medians lie {spread_of(step_m.process_median_s):.0%} apart")
print(
    f"published median {format_seconds(step_m.median_s)}, where the next run lands here "
    f"{format_seconds(published_low)} to {format_seconds(published_high)}"
)


def times_narrower(low: float, high: float) -> float:
    """How many times narrower a process's own interval is than where the next run lands (the
    published interval: all processes, and this machine's drift between runs), on the log
    scale."""
    return math.log(published_high / published_low) / max(math.log(high / low), 1e-9)


process_claim = per_process(
    "one process's own interval is narrower than where the next run lands here",
    [times_narrower(low, high) for low, high in own],
    1,
    "narrower",
)
# sphinx_gallery_end_ignore

# %%
# A benchmark timed in a process that did other work first also inherits what that work left
# behind: caches, memory, threads, TensorFlow's own state. The process that builds this page is
# such a process: in a docs build it has already run every chapter before this one. One small
# eager op, ``x + x`` on 1,000 floats, timed in this page's fresh processes and in this page's
# own process:

# sphinx_gallery_start_ignore
(fresh_add,) = workers.run(eager.ADD, ["eager"], size=1000)
(here,) = run(eager.ADD, ["eager"], size=1000, device=device)
fresh_add = dataclasses.replace(fresh_add, label="a fresh process")
here = dataclasses.replace(here, label="this page's process")
leftover_claim = Faster("a fresh process", "this page's process").check(
    [fresh_add, here]
)
print(
    f"x + x: {format_seconds(fresh_add.median_s)} in fresh processes, "
    f"{format_seconds(here.median_s)} in this page's process"
)
show(ClaimReport([process_claim, leftover_claim]))
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
pools = across("after_busy_pools")
right_after, idle = median_of(pools, "right_after_s"), median_of(pools, "after_idle_s")
slept, steady = median_of(pools, "after_sleep_s"), median_of(pools, "steady_s")
pool_ratios = [r["after_idle_s"] / r["right_after_s"] for r in pools]
print(
    f"x + x right after a 512 x 512 NumPy product {format_seconds(right_after)}, "
    f"after the product and waiting for idle {format_seconds(idle)}, after a sleep alone "
    f"{format_seconds(slept)}; steady, called again and again {format_seconds(steady)}"
)
pool_claim = per_process(
    "an op timed right after a multi-threaded product runs faster than after the pools go idle",
    pool_ratios,
    1,
    "faster than after idle",
)
# sphinx_gallery_end_ignore

# %%
# The first check asks whether the op ran faster right after the product than after the pools
# went idle; the second, whether a sleep alone, with no product, slows it as the wait did, which
# tells whether the product or the idle time before the op made the difference:

# sphinx_gallery_start_ignore
sleep_claim = per_process(
    "an op timed after a short sleep, with no product before it, runs slower than right after "
    "the product",
    [r["after_sleep_s"] / r["right_after_s"] for r in pools],
    1,
    "slower than right after the product",
)
show(ClaimReport([pool_claim, sleep_claim]))
# sphinx_gallery_end_ignore

# %%
# Where both claims hold, sharing the cores with spinning threads did not slow the op down;
# what slows a single op is the idle time before it, product or not: a core that has slept (on
# a virtual machine, one the host may have handed to another guest meanwhile) wakes slowly, and
# the op's data and code have left its caches. Against a steady call, each single op here took

# sphinx_gallery_start_ignore
print(
    f"right after the product {right_after / steady:.1f}x, after the wait {idle / steady:.1f}x, "
    f"after the sleep {slept / steady:.1f}x a steady call"
)
# sphinx_gallery_end_ignore

# %%
# The harness sidesteps all of it by timing calibrated blocks of the same call, after warm-up
# calls, with every variant in the same state: it lets the pools go idle before each block
# (rather than before each call), so every variant's block starts from the same idle cores.
#
# Short answer
# ------------
#
# The box at the top of this page, built from the checks above.

# sphinx_gallery_start_ignore
answer = ShortAnswer(
    "Because each timing measured something else. Here, with tracing counted as work, ten calls "
    f"timed from the first read {first_call_claim.quoted}; iterating a tf.data pipeline took "
    f"{unrun_claim.quoted}, which a timer around the line that builds it misses; "
    f"fresh processes of the same step landed {spread_of(step_m.process_median_s):.0%} apart. "
    "Which habits of a careful timer paid off measurably here:",
    [
        Recommendation(
            "Time the first call apart from the steady calls",
            first_call_claim,
            Change("the first call", "timed apart"),
            recipe="time-the-first-call-apart",
        ),
        Recommendation(
            "Time calibrated blocks of many calls, not one call at a time",
            single_call_claim,
            Change(
                "what one reading of the clock times", "a calibrated block of calls"
            ),
            recipe="time-steady-calls-not-the-first",
        ),
        Recommendation(
            "Stop the clock only when the work is done: iterate the pipeline (on a GPU, sync "
            "the device too; this machine has none to measure it on)",
            unrun_claim,
            Change("when the clock stops", "after the work is done"),
            recipe="time-a-pipeline-by-iterating-it",
        ),
        Recommendation(
            "Time the variants you compare in turns",
            order_claim,
            Change("the order variants are timed in", "in turns"),
        ),
        Recommendation(
            "Time in several fresh processes, not one",
            process_claim,
            Change("the processes a time rests on", "several fresh ones"),
        ),
        Recommendation(
            "Time in fresh processes, not in a process that ran other work",
            leftover_claim,
            Change("the process a time is taken in", "a fresh one"),
        ),
        Recommendation(
            "Time every variant in the same state, after the same warm-up: what ran just "
            "before changes a single op's time",
            pool_claim,
            Change("the state each variant is timed in", "the same"),
            instead="An op right after a multi-threaded product was not clearly faster or "
            "slower",
        ),
    ],
)
answer.publish("timing")
print(answer)
# sphinx_gallery_end_ignore

# %%
# Take the numbers with you
# -------------------------
#
# The harness's measurements on this page are published as
# `timing.json <../../measurements/timing.json>`_. To rerun this page on your own machine,
# install the guide's package from a checkout of its repository
# (``python -m pip install -e ".[cpu]"``) and run the script downloaded below;
# ``python -m perfguide env`` measures how far apart fresh processes land on your machine.

# sphinx_gallery_start_ignore
published = [step_m, fresh_add, here]
print(results.publish("timing", env, published))
workers.close()
# sphinx_gallery_end_ignore


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
