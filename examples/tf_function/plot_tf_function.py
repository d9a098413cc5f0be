"""
Why is my tf.function fast, slow, or wrong?
===========================================

``@tf.function`` turns a Python function into a TensorFlow graph: the first call runs the Python
once to *trace* the graph, and later calls run only the graph. That one fact explains its speed,
its slow first call, ``print`` that prints once, Python values frozen into the graph, and the
retracing that can cost more than the graph saves.

The article *Understanding TensorFlow's @tf.function decorator* (read here in a Chinese
translation) timed a loop of 99 small matrix products: about 0.12 s for ten eager calls and about
0.026 s with ``tf.function``, roughly five times faster (the author's figures). This page times
that loop run eagerly (``eager``), under ``@tf.function`` (``tf-function``), compiled by XLA with
``jit_compile=True`` (``xla``) and in NumPy (``numpy``). Every other number on this page is
measured by this page, on the machine that built it; the workloads are in
:mod:`perfguide.workloads.tf_function`, and :doc:`How to read these pages </reading>` defines
the terms of its tables and verdicts.

.. raw:: html
   :file: ../../_generated/extra/answers/tf_function.answer.html
"""

# %%
# Where this page was measured
# ----------------------------
#
# The guide's own calls take a line each: ``Workers`` starts two fresh Python processes, and
# every comparison below is timed in each of them in turn, its variants interleaved; a time is
# the median of the two processes' medians (their mean).

import matplotlib.pyplot as plt
import tensorflow as tf

from perfguide.measure.runner import default_device
from perfguide.pages import tf_function as page
from perfguide.processes.pool import Workers
from perfguide.report.plots import dot_plot
from perfguide.report.publishing import results
from perfguide.report.publishing.show import show
from perfguide.report.tables.comparison import Comparison
from perfguide.report.tables.table import Collapsed
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import tf_function as tfn

device = default_device()
workers = Workers(device=device)
env = workers.environment
print(results.where_measured(env, device))

# %%
# The article's loop: eager, graph, compiled
# ------------------------------------------
#
# Each call sums x, x²/2!, x³/3!, … up to 99 products of a 100 × 100 matrix, one ``tf.matmul`` at a
# time. In ``eager``, Python dispatches every product, division and sum as its own op; in
# ``tf-function`` the whole call is one graph; and ``xla`` has XLA compile that graph. ``numpy`` does
# the same arithmetic for reference, and ``run-eagerly`` is the ``tf.function`` with
# ``tf.config.run_functions_eagerly(True)``, the debugging switch discussed at the end of this page.
# The first call, which traces (and for XLA compiles), is timed apart from the others.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/tf_function.py
#    :pyobject: series
#
# .. literalinclude:: /../perfguide/workloads/tf_function.py
#    :pyobject: _series_call

series = workers.run(tfn.SERIES, settle=page.SERIES_SETTLE)
show(Collapsed("The loop's times, every variant", Comparison(series, baseline="eager")))

# %%

ax = dot_plot(series)
ax.set_title("99 products of a 100 × 100 matrix, time per call")
plt.show()

# %%
# The checks; the short answer's table sets ten calls at these medians beside the article's
# figures for its ten calls.

series_checks = ClaimReport.of(page.SERIES_CHECKS, series)
show(series_checks)

# %%
# Tracing made visible
# --------------------
#
# Python code inside a ``tf.function`` runs while tracing, not on every call. ``print`` is Python;
# ``tf.print`` is an op in the graph. Three calls of one function that uses both; ``tf.print``
# writes to standard error unless told otherwise, so here it writes to a file, printed after the
# calls:

import pathlib
import tempfile

folder = tempfile.TemporaryDirectory()
log = pathlib.Path(folder.name, "tf_print.log")


@tf.function
def print_both(x):
    print("print: Python runs this line")
    tf.print("tf.print: the graph runs this op", output_stream=f"file://{log}")
    return x + 1


for _ in range(3):
    print_both(tf.constant(0))
print(log.read_text(), end="")

# The checks below count the lines of the same function's three calls, each line as printed.
python_lines, tf_lines = tfn.print_lines(calls=3)
assert tf_lines == log.read_text().splitlines()
folder.cleanup()

# %%
# A Python value read inside the function is frozen into the graph when it is traced. Here
# ``power(x)`` computes ``x ** exponent`` for x = 2; the exponent changes from 2 to 3 between two
# calls, as a Python number and as a ``tf.Variable``:
#
# .. literalinclude:: /../perfguide/workloads/tf_function.py
#    :pyobject: frozen_global_results
#
# What it returns, before and after the change:

frozen = tfn.frozen_global_results()
for kind, (before, after) in frozen.items():
    print(f"exponent as a {kind:13s}: power(2) = {before:g} before, {after:g} after")

# %%
# When does it trace again? The function keeps one graph per *signature* of its arguments: the
# value of each Python argument, and the dtype and shape of each tensor. These counts come from
# ``experimental_get_tracing_count()`` on a fresh function after four calls:
#
# .. literalinclude:: /../perfguide/workloads/tf_function.py
#    :pyobject: count_traces
#
# with ``scale(x, factor)`` returning ``x * factor``, and the calls' options and arguments:

four_shapes = [tf.zeros([n]) for n in range(1, 5)]
# x of any length, and a scalar factor
any_length = [tf.TensorSpec([None]), tf.TensorSpec([])]
calls = {
    "Python floats 1.0, 2.0, 3.0, 4.0": ({}, [1.0, 2.0, 3.0, 4.0]),
    "tensors of one shape, four values": (
        {},
        [tf.constant(float(v)) for v in range(4)],
    ),
    "tensors of four shapes": ({}, four_shapes),
    "four shapes, reduce_retracing=True": ({"reduce_retracing": True}, four_shapes),
    "four shapes, input_signature [None]": (
        {"input_signature": any_length},
        four_shapes,
    ),
}
traces = {
    case: tfn.count_traces(options, arguments)
    for case, (options, arguments) in calls.items()
}
for case, count in traces.items():
    print(f"{case:36s} {count} trace(s)")

# What the checks below expect of each case.
expected_traces = dict(zip(calls, [4, 1, 4, 2, 1], strict=True))

# %%
# ``reduce_retracing`` generalizes the shape after the second one it sees; an
# ``input_signature`` with a ``None`` dimension fixes it before the first. The checks, including
# the two demonstrations above:

show(page.tracing_claims(python_lines, tf_lines, frozen, traces, expected_traces))

# %%
# The price of retracing
# ----------------------
#
# A function called with a new Python number every call (a step counter, a schedule value;
# ``python-argument``) traces a new graph every call. The same function called with the number
# as a tensor (``tensor-argument``) traces once. The harness counts traces in the timed blocks
# and flags a variant that retraced while it was timed: its time then includes tracing.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/tf_function.py
#    :pyobject: _retracing_call

retracing = workers.run(tfn.RETRACING, settle=[page.TENSOR_ARGUMENT])
show(
    Collapsed(
        "The two variants' times", Comparison(retracing, baseline="python-argument")
    )
)

# %%

retracing_checks = ClaimReport.of(page.RETRACING_CHECKS, retracing)
show(retracing_checks)

# %%
# Unrolled Python loops
# ---------------------
#
# A Python ``for`` over ``range`` inside a ``tf.function`` (``python-for``) runs while tracing, so
# the graph gets one copy of the loop body per step. A loop over ``tf.range`` (``tf-range``)
# becomes a single graph loop: *AutoGraph*, the part of ``tf.function`` that rewrites Python
# control flow over tensors into graph ops, turns it into a while-loop. Both compute
# x ← x/2 + 1 for a given number of steps; here is the cost of *tracing* each (a fresh function
# every time), and the size of the graph it produces.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/tf_function.py
#    :pyobject: halve_and_add_python_for
#
# .. literalinclude:: /../perfguide/workloads/tf_function.py
#    :pyobject: halve_and_add_tf_range
#
# .. literalinclude:: /../perfguide/workloads/tf_function.py
#    :pyobject: trace_loop

tracing = page.trace_loops(workers)
graph_sizes = page.graph_sizes()
page.tracing_plot(tracing, graph_sizes)
plt.show()

# %%

show(page.unrolled_loop_claims(tracing, graph_sizes))

# %%
# Loops over rows
# ---------------
#
# The article's last example sums the mean of each row of a 100 × 100 matrix, once row by row
# (``row-loop``: AutoGraph turns the ``for row in x`` into a graph loop) and once as one
# reduction over the whole matrix (``vectorized``), both inside ``tf.function``.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/tf_function.py
#    :pyobject: row_loop
#
# .. literalinclude:: /../perfguide/workloads/tf_function.py
#    :pyobject: vectorized

rows = workers.run(tfn.ROWS, settle=[page.VECTORIZE])
show(Collapsed("The two variants' times", Comparison(rows, baseline="row-loop")))

# %%

rows_check = ClaimReport.of([page.VECTORIZE], rows)
show(rows_check)

# %%
# Debugging: run functions eagerly
# --------------------------------
#
# ``tf.config.run_functions_eagerly(True)`` makes every ``tf.function`` run as plain Python, so
# ``print``, breakpoints and debuggers see every call. Does it also give back the speed-up? The
# ``run-eagerly`` variant of the article's loop, timed in the same interleaved run as ``eager``
# and ``tf-function``, answers:

with tfn.functions_run_eagerly():
    printed_run_eagerly, _ = tfn.print_lines(calls=3)
print(page.run_eagerly_times(printed_run_eagerly, series))
show(
    Collapsed(
        "The checks of run-eagerly",
        page.run_eagerly_claims(printed_run_eagerly, series),
    )
)

# %%
# The short answer
# ----------------
#
# The box at the top of this page, built from the checks above.

answer = page.short_answer(series, series_checks, retracing_checks, tracing, rows_check)
# sphinx_gallery_start_ignore
answer.publish("tf_function")
# sphinx_gallery_end_ignore
print(answer)

# %%
# Take the numbers with you
# -------------------------
#
# Everything timed on this page is published as
# `tf_function.json <../../measurements/tf_function.json>`_, in the shape
# ``python -m perfguide run tf-function --json PATH`` writes (the other workloads here are
# ``tf-function-retracing``, ``tf-function-tracing`` and ``tf-function-rows``). To rerun this
# page on your own machine, install the guide's package from a checkout of its repository
# (``python -m pip install -e ".[cpu]"``) and run the script downloaded below.

published = series + retracing + tracing + rows
print(results.publish("tf_function", env, published, series_checks.claims))
workers.close()


# %%
# Recipes
# -------
#
# The practices this page advises, as lines to paste. Each runs on its own in a second or two
# once TensorFlow is imported, and ends with a check that it works.
#
# Give a tf.function an input signature
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Values that change between calls go in as tensors, and a ``None`` dimension takes every batch
# size: one trace serves all the calls below.

import numpy as np
import tensorflow as tf


@tf.function(input_signature=[tf.TensorSpec([None, 4]), tf.TensorSpec([])])
def scaled_sum(batch, factor):
    return factor * tf.reduce_sum(batch, axis=1)


for rows in (1, 8, 32):  # a new batch size
    for factor in (0.5, 2.0):  # a new value, as a tensor
        scaled_sum(tf.ones([rows, 4]), tf.constant(factor))
assert scaled_sum.experimental_get_tracing_count() == 1

# %%
# Loop over tf.range inside tf.function
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# The loop becomes one loop op in the graph, whatever the step count; a Python ``range`` would
# copy the body into the graph once per step.


@tf.function
def halve_and_add(x, steps):
    for _ in tf.range(steps):
        x = x / 2 + 1
    return x


np.testing.assert_allclose(halve_and_add(tf.constant(0.0), tf.constant(1000)), 2.0)
np.testing.assert_allclose(halve_and_add(tf.constant(0.0), tf.constant(1)), 1.0)
graph = halve_and_add.get_concrete_function(tf.constant(0.0), tf.constant(1)).graph
assert len(graph.get_operations()) < 50
assert halve_and_add.experimental_get_tracing_count() == 1

# %%
# Read a tf.Variable, not a Python global
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# A Python number read inside a ``tf.function`` is frozen into the graph when it traces; a
# ``tf.Variable`` is read on every call, without a new trace.

exponent = tf.Variable(2.0)


@tf.function
def power(x):
    return x**exponent


np.testing.assert_allclose(power(tf.constant(2.0)), 4.0)
exponent.assign(3.0)
np.testing.assert_allclose(power(tf.constant(2.0)), 8.0)
assert power.experimental_get_tracing_count() == 1

# %%
# Print from a graph with tf.print
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# ``print`` runs once, while tracing; ``tf.print`` is an op and prints on every call. It writes
# to standard error unless told otherwise; here it writes to a file, so the check can read it.

import pathlib
import tempfile

folder = tempfile.TemporaryDirectory()
log = pathlib.Path(folder.name, "steps.txt")


@tf.function
def step(x):
    print("tracing")
    tf.print("step", x, output_stream=f"file://{log}")
    return x + 1


for i in range(3):
    step(tf.constant(i))
assert log.read_text().splitlines() == ["step 0", "step 1", "step 2"]
folder.cleanup()
