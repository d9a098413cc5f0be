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

# sphinx_gallery_start_ignore
import dataclasses

import matplotlib.pyplot as plt
import numpy as np

from perfguide.measure.runner import default_device
from perfguide.processes.pool import Workers
from perfguide.report import results
from perfguide.report.answers import Change, Recommendation, ShortAnswer
from perfguide.report.claims import ClaimReport, Faster, exact, takes_at_most
from perfguide.report.compare import Comparison, Table
from perfguide.report.format import format_count, format_factor, format_seconds
from perfguide.report.plotting import dot_plot, rate_plot
from perfguide.report.show import show
from perfguide.workloads import WORKLOADS
from perfguide.workloads import linear_regression as lr

# Every variant is timed in three fresh Python processes, one after another, each running the
# variants in turns; a time below is the median of the three processes' medians.
device = default_device()
workers = Workers(device=device, limits=True)
env = workers.environment
machine = workers.machine_limits
print(results.where_measured(env, device))
print(f"memory bandwidth {machine.memory_bandwidth / 1e9:.1f} GB/s (read + write)")
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
workload = WORKLOADS["linear-regression"]
whole_loop = Faster("tf-function-loop", "tf-function-step", by=5)
compiled = Faster("xla-loop", "tf-function-loop")
compiled_vs_session = Faster("xla-loop", "tf1-session", by=10)
numpy_vs_session = Faster("numpy", "tf1-session")
numpy_vs_eager = Faster("numpy", "eager")
compiled_vs_numpy = Faster("xla-loop", "numpy", by=5)
step_claims = [
    numpy_vs_session,
    numpy_vs_eager,
    Faster("tf-function-step", "eager"),
    whole_loop,
    compiled,
    compiled_vs_numpy,
    compiled_vs_session,
]
measurements = workers.run(workload, settle=step_claims)
show(Comparison(measurements, baseline=workload.baseline))
# sphinx_gallery_end_ignore

# %%
# The same medians on a log axis. Each variant's first call (tracing, and for XLA compiling) is
# the table's *first-call overhead* and is not part of these times.

# sphinx_gallery_start_ignore
ax = dot_plot(measurements)
ax.set_title(f"Gradient descent on {format_count(workload.default_size)} points")
plt.show()
# sphinx_gallery_end_ignore

# %%
# What each variant pays for, besides the arithmetic: ``Session.run`` enters the TF1 runtime and
# copies the fed arrays once per step; eager mode crosses from Python into the runtime once per
# op, and a step with its gradient is a dozen ops; ``tf.function`` per step crosses once per step;
# the whole-loop variants cross once per call, and XLA can in addition fuse the step's
# element-wise ops into one kernel. The checks (the short answer's table sets the learner's
# 100 000 steps at these medians beside their own figures):

# sphinx_gallery_start_ignore
checked = {claim: claim.check(measurements) for claim in step_claims}
LEARNER_STEPS = 100_000
QUOTED = {"numpy": "about 4 s", "tf1-session": "about 40 s (CPU), 80 s (GPU)"}
scenario = Table(
    f"{format_count(LEARNER_STEPS)} steps on {format_count(workload.default_size)} points",
    ["variant", "learner's machine (quoted)", "this machine (measured)"],
    [
        [
            m.label,
            QUOTED.get(m.label, "not run"),
            format_seconds(LEARNER_STEPS * m.median_s),
        ]
        for m in measurements
    ],
)
show(ClaimReport(list(checked.values())))
# sphinx_gallery_end_ignore

# %%
# When does overhead stop dominating?
# -----------------------------------
#
# The learner's answer said TensorFlow catches up once each step has more work. Here is the
# work each variant gets done as the number of points grows, as memory traffic: a step must at
# least read x and y once (8 bytes a point), so that many bytes per step over the time per step
# is the rate at which it consumes the data. The dashed line is this machine's measured memory
# bandwidth: no step can consume data faster than memory delivers it.

# sphinx_gallery_start_ignore
sizes = [10**k for k in range(2, 8)]
sweep_variants = ["numpy", "tf-function-step", "tf-function-loop", "xla-loop"]
largest = sizes[-1]
large_claims = [
    takes_at_most("tf-function-step", "numpy", 1.5),
    Faster("xla-loop", "numpy"),
]
sweep = {workload.default_size: [m for m in measurements if m.label in sweep_variants]}
for n in sizes:
    if n != workload.default_size:
        # Full where the checks read; quick where only the curve's shape matters.
        settle = large_claims if n == largest else ()
        sweep[n] = workers.run(
            workload, sweep_variants, size=n, settle=settle, quick=not settle
        )
every_size = [m for n in sizes for m in sweep[n]]
ax = rate_plot(
    every_size,
    workload.size_name,
    lambda m: lr.bytes_per_step(m.size),
    limit=machine.memory_bandwidth,
    limit_label="memory bandwidth (measured)",
    rate_unit="B/s",
)
ax.set_title("Data consumed per second: x and y once per step")
plt.show()
# sphinx_gallery_end_ignore

# %%
# At small sizes every line climbs in step with the size: a step's fixed cost is the time, so
# more points per step come for free. The lines flatten where the arithmetic and the memory
# traffic take over. At the largest size each variant's share of the bandwidth:

# sphinx_gallery_start_ignore
shares = {
    m.label: machine.bandwidth_share(lr.bytes_per_step(m.size), m.median_s)
    for m in sweep[largest]
}
for label, share in shares.items():
    print(f"{label:18s} {share:6.1%} of the memory bandwidth")
show(ClaimReport([claim.check(sweep[largest]) for claim in large_claims]))
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
x, y = lr.make_data(workload.default_size, np.float64)
optimum_ab = lr.least_squares(x, y)
optimum = lr.mean_squared_error(x, y, *optimum_ab)
raw_losses, _ = lr.loss_curve(x, y, lr.LEARNING_RATE, steps=100_000)
x_scaled, mean, std = lr.standardize(x)
scaled_losses, scaled_ab = lr.loss_curve(
    x_scaled, y, lr.SCALED_LEARNING_RATE, steps=1_000
)
recovered_ab = lr.unscale(*scaled_ab, mean, std)
raw_iterations = lr.iterations_to_converge(raw_losses, optimum)
scaled_iterations = lr.iterations_to_converge(scaled_losses, optimum)
print(f"iterations to a loss within {lr.CONVERGED:.1%} of the least-squares loss:")
print(f"  raw x {raw_iterations}, standardized x {scaled_iterations}")
print(f"least squares:          a = {optimum_ab[0]:.6f}, b = {optimum_ab[1]:.6f}")
print(f"scaled fit, un-scaled:  a = {recovered_ab[0]:.6f}, b = {recovered_ab[1]:.6f}")

fig, ax = plt.subplots(layout="constrained")
for losses, label in [
    (raw_losses, f"raw x, learning rate {lr.LEARNING_RATE:g}"),
    (scaled_losses, f"standardized x, learning rate {lr.SCALED_LEARNING_RATE:g}"),
]:
    ax.loglog(np.arange(1, losses.size + 1), losses / optimum - 1, label=label)
ax.axhline(lr.CONVERGED, color="gray", linestyle="--", label="converged")
# Below this the curves only show float64 round-off.
ax.set_ylim(bottom=1e-10)
ax.set_xlabel("iteration (log scale)")
ax.set_ylabel("loss / least-squares loss − 1 (log scale)")
ax.set_title("Convergence with and without feature scaling")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
plt.show()
# sphinx_gallery_end_ignore

# %%
# The checks.

# sphinx_gallery_start_ignore
recovery_error = max(
    abs(r - o) / abs(o) for r, o in zip(recovered_ab, optimum_ab, strict=True)
)
converged = raw_iterations is not None and scaled_iterations is not None
scaling_claim = exact(
    "standardizing x cuts the iterations to converge at least 100-fold",
    converged and raw_iterations >= 100 * scaled_iterations,
    f"raw x {raw_iterations}, standardized x {scaled_iterations} iterations",
    effect=(
        f"{format_factor(raw_iterations / scaled_iterations)} fewer iterations"
        if converged
        else "did not converge"
    ),
)
show(
    ClaimReport(
        [
            scaling_claim,
            exact(
                "un-scaling the standardized fit recovers a and b to 1e-6",
                recovery_error < 1e-6,
                f"largest relative error {recovery_error:.1e}",
            ),
        ]
    )
)
# sphinx_gallery_end_ignore

# %%
# The learner's GPU
# -----------------
#
# On a GPU each op adds a kernel launch and each fed array a copy from host to device, so a step
# this small has more overhead to pay; the learner's GPU run took twice as long as their CPU run.
# This part measures that, and runs only when TensorFlow sees a GPU.

# sphinx_gallery_start_ignore
gpus = env["gpus"]
per_device = []
if gpus:
    gpu_claims = [Faster("tf1-session on cpu", "tf1-session on gpu")]
    per_device = []
    for d in ("cpu", "gpu"):
        with Workers(device=d) as on_device:
            per_device += [
                dataclasses.replace(m, label=f"{m.label} on {d}")
                for m in on_device.run(workload, ["tf1-session", "xla-loop"])
            ]
    print(Comparison(per_device, baseline="tf1-session on cpu"))
    print(ClaimReport([claim.check(per_device) for claim in gpu_claims]))
else:
    print(
        "SKIPPED: TensorFlow sees no GPU on the machine that built this page, so there is no"
    )
    print("CPU/GPU comparison here. Run this script on a machine with a GPU to see it.")
# sphinx_gallery_end_ignore

# %%
# The short answer
# ----------------
#
# The box at the top of this page, built from the checks above.

# sphinx_gallery_start_ignore
scaling = (
    f"Standardizing x cuts the steps needed from {format_count(raw_iterations)} to "
    f"{format_count(scaled_iterations)}."
    if converged
    else "Gradient descent did not reach the least-squares loss within its steps."
)
answer = ShortAnswer(
    f"On {format_count(workload.default_size)} points a step is a few microseconds of "
    "arithmetic, and entering TensorFlow once per step is what costs: NumPy's whole step "
    f"against a Session.run step, {checked[numpy_vs_session].quoted}; against an eager step, "
    f"{checked[numpy_vs_eager].quoted}. Run the loop itself inside the runtime and compile it "
    f"with XLA, and it is NumPy that pays: the compiled loop against NumPy, "
    f"{checked[compiled_vs_numpy].quoted}. " + scaling,
    [
        Recommendation(
            "Run the whole training loop inside one tf.function, not one call per step",
            checked[whole_loop],
            Change(
                "the training loop", "inside one tf.function", work="many small steps"
            ),
            recipe="loop-inside-one-tf-function-over-tf-range",
        ),
        Recommendation(
            "Compile the loop with XLA (jit_compile=True)",
            checked[compiled],
            Change(
                "jit_compile",
                "True",
                work="a whole training loop of small element-wise steps",
            ),
            recipe="loop-inside-one-tf-function-over-tf-range",
        ),
        Recommendation(
            "Replace a Session.run per small step with a compiled loop",
            checked[compiled_vs_session],
            Change("a Session.run per step", "avoided", work="many small steps"),
            recipe="loop-inside-one-tf-function-over-tf-range",
        ),
        Recommendation(
            "Standardize the features before gradient descent",
            scaling_claim,
            Change("the features", "standardized", work="gradient descent"),
            recipe="standardize-x-before-gradient-descent",
        ),
    ],
    scenario,
)
answer.publish("linear_regression")
print(answer)
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
published = measurements + [
    m for n in sizes if n != workload.default_size for m in sweep[n]
]
print(results.publish("linear_regression", env, published + per_device))
workers.close()
# sphinx_gallery_end_ignore


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
