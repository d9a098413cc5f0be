"""
Why is my TensorFlow gradient descent slower than NumPy?
========================================================

A learner fits *y = a·x + b* to 1000 points (x from 0 to 100 in steps of 0.1,
*y = x + 20·sin(x/10) + 15*) by fixed-step gradient descent, learning rate 0.0001, for 100 000
iterations. In TensorFlow 1.15, one ``Session.run`` per step, the run took about 40 s on their CPU
and 80 s on their GPU; the same loop in NumPy took about 4 s. (Those three figures are the
learner's own, quoted from the question behind this chapter; every other number on this page is
measured by this page.)

The answer they got: every ``Session.run`` pays a fixed cost to enter TensorFlow, and a step on
1000 points is far too little work to hide it. This page measures that answer on the machine that
built it, then shows what today's TensorFlow offers instead: run the whole loop as one graph call,
compile it with XLA, and, whatever the framework, standardize x so that far fewer steps reach the
same fit.

Every variant below runs the same float32 gradient step from *a = b = 0*; the tests of
:mod:`perfguide.workloads.linear_regression` check that they agree. Times are per iteration: the
median over several calibrated blocks, with the first call (tracing and compilation) reported
on its own.
"""

# %%
# Where this page was measured
# ----------------------------
import dataclasses

import matplotlib.pyplot as plt
import numpy as np

from perfguide.measure import environment
from perfguide.report import results
from perfguide.report.claims import Claim, ClaimReport, faster
from perfguide.report.compare import Comparison, at_size, format_ratio, pick
from perfguide.report.plotting import bar_chart, scaling_plot
from perfguide.measure.runner import default_device, run
from perfguide.workloads import WORKLOADS
from perfguide.workloads import linear_regression as lr

env = environment.collect()
device = default_device()
print(f"CPU: {env['cpu_model']}, {env['usable_cores']} usable cores")
print(f"TensorFlow {env['tensorflow']}, NumPy {env['numpy']}")
print(f"TensorFlow ops placed on: {device}")

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
# their overhead on every step whatever the count.
workload = WORKLOADS["linear-regression"]
measurements = run(workload, device=device)
Comparison(measurements, baseline=workload.baseline)

# %%
# The same numbers as bars. What each variant's first call cost beyond a steady call (tracing, and
# for XLA compiling) is the table's *first-call overhead* and is not part of these times.
ax = bar_chart(measurements)
ax.set_title(f"Gradient descent on {workload.default_size} points")
plt.show()

# %%
# What the measurements say
# -------------------------
#
# The chapter's claims, each checked against the numbers just measured. A claim that did not hold
# on this machine is marked so.
ClaimReport(
    [
        faster(measurements, "numpy", "tf1-session"),
        faster(measurements, "numpy", "eager"),
        faster(measurements, "tf-function-step", "eager"),
        faster(measurements, "tf-function-loop", "tf-function-step", by=5),
        faster(measurements, "xla-loop", "tf-function-loop"),
        faster(measurements, "xla-loop", "numpy", by=5),
    ]
)

# %%
# What each variant pays for, besides the arithmetic: ``Session.run`` enters the TF1 runtime and
# copies the fed arrays once per step; eager mode crosses from Python into the runtime once per op,
# and a step with its gradient is a dozen ops; ``tf.function`` per step crosses once per step; the
# whole-loop variants cross once per call, and XLA can in addition fuse the step's element-wise
# ops into one kernel. The claims above check how the ranking this predicts came out here.
#
# When does overhead stop dominating?
# -----------------------------------
#
# The learner saw TensorFlow catch up once each step had more work: a million points instead of a
# thousand. Here is time per iteration as the number of points grows.
sizes = [10**k for k in range(2, 8)]
sweep_variants = ["numpy", "tf-function-step", "tf-function-loop", "xla-loop"]
# The seed's size was measured above; the other sizes are measured now.
other_sizes = [
    m
    for n in sizes
    if n != workload.default_size
    for m in run(workload, sweep_variants, size=n, device=device)
]
sweep = [m for m in measurements if m.label in sweep_variants] + other_sizes
ax = scaling_plot(sweep, workload.size_name)
ax.set_title("Time per iteration against problem size")
plt.show()


# %%
# Per-iteration overhead is the flat part of each line; compute is where a line starts to climb.
# The checks compare the gap to NumPy at the seed's size and at the largest size measured.
def step_time_over_numpy(size):
    """tf-function-step's time as a multiple of NumPy's at ``size`` (below 1: faster)."""
    step, numpy = pick(at_size(sweep, size), "tf-function-step", "numpy")
    return step.median_s / numpy.median_s


seed_size, largest = workload.default_size, sizes[-1]
gap = {n: step_time_over_numpy(n) for n in (seed_size, largest)}
ClaimReport(
    [
        Claim(
            f"tf-function-step's gap to numpy narrows from {seed_size} to {largest} points",
            gap[largest] < gap[seed_size],
            f"it takes {format_ratio(gap[seed_size])} numpy's time at {seed_size} points, "
            f"{format_ratio(gap[largest])} at {largest}",
        ),
        faster(at_size(sweep, largest), "tf-function-step", "numpy", by=1 / 1.5),
        faster(at_size(sweep, largest), "xla-loop", "numpy"),
    ]
)

# %%
# Fewer iterations: standardize x
# -------------------------------
#
# Overhead per step is one half of the story; the other is the step count. With x in [0, 100)
# the loss surface is a long narrow valley and the learning rate must stay tiny, so reaching the
# least-squares optimum takes a great many steps. Standardized x (zero mean, unit variance) makes
# the valley round: a step a thousand times larger is stable and should converge in far fewer
# iterations, and *a* and *b* for the raw x follow by undoing the scaling. (This part counts
# iterations, not seconds, in float64 NumPy.)
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
ax.legend()
plt.show()

# %%
# The checks.
recovery_error = max(
    abs(r - o) / abs(o) for r, o in zip(recovered_ab, optimum_ab, strict=True)
)
ClaimReport(
    [
        Claim(
            "standardizing x cuts the iterations to converge at least 100-fold",
            raw_iterations is not None
            and scaled_iterations is not None
            and raw_iterations >= 100 * scaled_iterations,
            f"raw x {raw_iterations}, standardized x {scaled_iterations} iterations",
        ),
        Claim(
            "un-scaling the standardized fit recovers a and b to 1e-6",
            recovery_error < 1e-6,
            f"largest relative error {recovery_error:.1e}",
        ),
    ]
)

# %%
# The learner's GPU
# -----------------
#
# On a GPU each op adds a kernel launch and each fed array a copy from host to device, so a step
# this small has more overhead to pay; the learner's GPU run took twice as long as their CPU run.
# This part measures that, and runs only when TensorFlow sees a GPU.
gpus = environment.gpu_names()
if gpus:
    per_device = [
        dataclasses.replace(m, label=f"{m.label} on {m.device}")
        for d in ("cpu", "gpu")
        for m in run(workload, ["tf1-session", "xla-loop"], device=d)
    ]
    print(Comparison(per_device, baseline="tf1-session on cpu"))
    print(ClaimReport([faster(per_device, "tf1-session on cpu", "tf1-session on gpu")]))
else:
    print("SKIPPED: TensorFlow sees no GPU in this build: no CPU/GPU comparison.")
    print("Build the docs on a GPU machine (`nox -s docs-gpu`) to see it.")

# %%
# Take the numbers with you
# -------------------------
#
# Everything measured on this page, with the environment record, is published beside the site as
# `linear-regression.json <../../measurements/linear-regression.json>`_, in the shape
# ``python -m perfguide run linear-regression --json PATH`` writes, so builds on different
# machines can be set side by side.
published = measurements + other_sizes + (per_device if gpus else [])
results.save(results.measurements_dir() / "linear-regression.json", env, published)
print(f"published {len(published)} measurements")
