"""
Why is my TensorFlow gradient descent slower than NumPy?
========================================================

A learner asked this on Stack Overflow (`Gradient descent using TensorFlow is much slower than a
basic Python implementation, why?
<https://stackoverflow.com/search?q=%22Gradient+descent+using+TensorFlow+is+much+slower%22>`_). They fit *y = a·x + b* to 1000 points (x from 0 to 100 in
steps of 0.1, *y = x + 20·sin(x/10) + 15*) by fixed-step gradient descent, learning rate 0.0001,
for 100 000 iterations. In TensorFlow 1.15, one ``Session.run`` per step, the run took about 40 s
on their CPU and 80 s on their GPU; the same loop in NumPy took about 4 s. Those three figures
are the learner's own; every other number on this page is measured by this page, on the machine
that built it. The page times six ways to take the same step: the learner's two programs,
``numpy`` and ``tf1-session`` (one ``Session.run`` per step), and TF2's ``eager`` (a
``GradientTape`` per step), ``tf-function-step`` (a ``tf.function`` called once per step),
``tf-function-loop`` (the whole loop in one ``tf.function``) and ``xla-loop`` (that loop
compiled by XLA).

.. raw:: html
   :file: ../../_generated/extra/answers/linear_regression.answer.html

Every variant runs the same float32 gradient step from *a = b = 0*; the tests of
:mod:`perfguide.workloads.linear_regression` check that they agree. Times are per iteration.
:doc:`How to read these pages </reading>` defines the terms of the tables and verdicts.
"""

# %%
# Where this page was measured
# ----------------------------
#
# The guide's own calls take a line each: ``Workers`` starts two fresh Python processes, and
# every comparison below is timed in each of them in turn, its variants interleaved; a time is
# the median of the two processes' medians (their mean).

import matplotlib.pyplot as plt

from perfguide.measure.runner import default_device
from perfguide.pages import linear_regression as page
from perfguide.processes.pool import Workers
from perfguide.report.format import format_count
from perfguide.report.plots import dot_plot
from perfguide.report.publishing import results
from perfguide.report.publishing.show import show
from perfguide.report.tables.comparison import Comparison
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import linear_regression as lr

device = default_device()
workers = Workers(device=device, limits=True)
env, machine = workers.environment, workers.machine_limits
print(results.where_measured(env, device))
print(f"memory bandwidth {machine.memory_bandwidth / 1e9:.1f} GB/s (read + write)")

# %%
# Six ways to take the same step
# ------------------------------
#
# * ``numpy``: the learner's loop, gradients written by hand.
# * ``tf1-session``: the learner's TensorFlow code, TF1 style: placeholders, ``feed_dict`` and
#   ``GradientDescentOptimizer``, one ``Session.run`` per step (built in its own ``tf.Graph``).
#   Like the learner's code, it feeds x and y with every step; the others hold them as tensors.
# * ``eager``: TF2's default: a ``GradientTape`` per step, every op dispatched from Python.
# * ``tf-function-step``: the step wrapped in ``tf.function``, called from a Python loop.
# * ``tf-function-loop``: the whole loop inside one ``tf.function``, over ``tf.range``.
# * ``xla-loop``: the same, compiled with ``jit_compile=True``.
#
# The whole-loop variants run many steps per call, as a real training run would; the others pay
# their overhead on every step whatever the count. The code being timed:
#
# .. rubric:: NumPy and TF1 ``Session.run``
#
# .. literalinclude:: /../perfguide/workloads/linear_regression.py
#    :pyobject: numpy_descent
#
# .. literalinclude:: /../perfguide/workloads/linear_regression.py
#    :pyobject: _tf1_session
#
# .. rubric:: Eager and ``tf.function``: one step, called per step or looped in the graph
#
# .. literalinclude:: /../perfguide/workloads/linear_regression.py
#    :pyobject: _bound_step
#
# .. literalinclude:: /../perfguide/workloads/linear_regression.py
#    :pyobject: _python_loop
#
# .. literalinclude:: /../perfguide/workloads/linear_regression.py
#    :pyobject: _graph_loop
#
# All six, timed together; ``settle`` names the checks that get more fresh processes while the
# processes so far cannot decide them.

measurements = workers.run(lr.WORKLOAD, settle=page.STEP_CLAIMS)
show(Comparison(measurements, baseline=lr.WORKLOAD.baseline))

# %%
# The same medians on a log axis. Each variant's first call (tracing, and for XLA compiling) is
# the table's *first-call overhead* and is not part of these times.

ax = dot_plot(measurements)
ax.set_title(f"Gradient descent on {format_count(lr.WORKLOAD.default_size)} points")
plt.show()

# %%
# What each variant pays for, besides the arithmetic: ``Session.run`` enters the TF1 runtime and
# copies the fed arrays once per step; eager mode crosses from Python into the runtime once per
# op, and a step with its gradient is a dozen ops; ``tf.function`` per step crosses once per step;
# the whole-loop variants cross once per call, and XLA can in addition fuse the step's
# element-wise ops into one kernel. The checks (the short answer's table sets the learner's
# 100 000 steps at these medians beside their own figures):

steps = ClaimReport.of(page.STEP_CLAIMS, measurements)
show(steps)

# %%
# When does overhead stop dominating?
# -----------------------------------
#
# The learner's answer said TensorFlow catches up once each step has more work. Here is the
# work each variant gets done as the number of points grows, as memory traffic: a step must at
# least read x and y once (8 bytes a point), so that many bytes per step over the time per step
# is the rate at which it consumes the data. The dashed line is this machine's measured memory
# bandwidth: no step can consume data faster than memory delivers it.

by_size = page.sweep(workers, measurements)
page.bandwidth_plot(by_size, machine)
plt.show()

# %%
# At small sizes every line climbs in step with the size: a step's fixed cost is the time, so
# more points per step come for free. The lines flatten where the arithmetic and the memory
# traffic take over. At the largest size each variant's share of the bandwidth:

largest = by_size[page.SIZES[-1]]
print(page.bandwidth_shares(largest, machine))
show(ClaimReport.of(page.LARGE_CLAIMS, largest))

# %%
# Reading x and y once is the least a step can do; every variant here makes several passes over
# its arrays (NumPy one per temporary array, the TensorFlow graph one per op it leaves unfused),
# with reductions in between, and each pass lowers its share of the bandwidth. XLA fuses the
# step's element-wise ops, which saves passes over the data.
#
# Fewer iterations: standardize x
# -------------------------------
#
# Overhead per step is one half of the story; the other is the step count. With x in [0, 100)
# the loss surface is a long narrow valley and the learning rate must stay tiny, so reaching the
# least-squares optimum takes a great many steps. Standardized x (zero mean, unit variance) makes
# the valley round: a step a thousand times larger is stable and should converge in far fewer
# iterations, and *a* and *b* for the raw x follow by undoing the scaling. (This part counts
# iterations, not seconds, in float64 NumPy.)

run = page.convergence(lr.WORKLOAD.default_size)
print(run)
page.convergence_plot(run)
plt.show()

# %%
# The checks.

show(page.convergence_claims(run))

# %%
# The learner's GPU
# -----------------
#
# On a GPU each op adds a kernel launch and each fed array a copy from host to device, so a step
# this small has more overhead to pay; the learner's GPU run took twice as long as their CPU run.
# This part measures that, and runs only when TensorFlow sees a GPU.

per_device = page.cpu_against_gpu() if env["gpus"] else []
if per_device:
    print(Comparison(per_device, baseline="tf1-session on cpu"))
    print(ClaimReport.of(page.GPU_CLAIMS, per_device))
else:
    print(page.NO_GPU)

# %%
# The short answer
# ----------------
#
# The box at the top of this page, built from the checks above.

answer = page.short_answer(
    steps, run, page.learners_scenario(measurements), env["usable_cores"]
)
# sphinx_gallery_start_ignore
answer.publish("linear_regression")
# sphinx_gallery_end_ignore
print(answer)

# %%
# Take the numbers with you
# -------------------------
#
# Everything measured on this page, with the environment record (the machine's measured limits
# included), is published beside the site as
# `linear_regression.json <../../measurements/linear_regression.json>`_, in the shape
# ``python -m perfguide run linear-regression --json PATH`` writes. To rerun this page on your
# own machine, install the guide's package from a checkout of its repository
# (``python -m pip install -e ".[cpu]"``) and run the script downloaded below. The measuring
# machine is described on the :doc:`build machine </environment>` page.

swept = [
    m
    for size, measured in by_size.items()
    if size != lr.WORKLOAD.default_size
    for m in measured
]
print(results.publish("linear_regression", env, measurements + swept + per_device))
workers.close()


# %%
# Recipes
# -------
#
# The practices this page advises, as lines to paste. Each runs on its own in a second or two
# once TensorFlow is imported, and ends with a check that it works.
#
# Loop inside one tf.function over tf.range
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# The learner's 100 000 steps in one call: the loop runs inside the runtime, and
# ``jit_compile=True`` compiles it with XLA (``xla-loop`` above; without it, ``tf-function-loop``).
# The XLA speed-up was measured on this 2-core CPU: check it on yours, and expect its first call
# to compile. The check: the fit ends within 1 % of the least-squares line.

import numpy as np
import tensorflow as tf

x = np.arange(1000, dtype=np.float32) / 10  # the learner's points
y = x + 20 * np.sin(x / 10) + 15


@tf.function(jit_compile=True)
def fit(x, y, steps, learning_rate=1e-4):
    a, b = tf.constant(0.0), tf.constant(0.0)
    for _ in tf.range(steps):
        residual = a * x + b - y
        a -= learning_rate * 2 * tf.reduce_mean(residual * x)
        b -= learning_rate * 2 * tf.reduce_mean(residual)
    return a, b


a, b = fit(tf.constant(x), tf.constant(y), tf.constant(100_000))
np.testing.assert_allclose([a, b], np.polyfit(x, y, 1), rtol=1e-2)

# %%
# Standardize x before gradient descent
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Fit on x scaled to zero mean and unit variance, with a learning rate a thousand times the
# learner's, then undo the scaling to get *a* and *b* for the raw x. The check: a hundred steps
# reach the least-squares line.

x = np.arange(1000) / 10
y = x + 20 * np.sin(x / 10) + 15
mean, std = x.mean(), x.std()
z = (x - mean) / std
a = b = 0.0
for _ in range(100):
    residual = a * z + b - y
    a, b = a - 0.1 * 2 * np.mean(residual * z), b - 0.1 * 2 * np.mean(residual)
a, b = a / std, b - a * mean / std  # a and b for the raw x
np.testing.assert_allclose([a, b], np.polyfit(x, y, 1), rtol=1e-6)
