"""
Why is eager TensorFlow slow on small ops, and what do custom gradients cost?
=============================================================================

In eager mode every TensorFlow op is a call from Python into the runtime, and that call has a
fixed price however little the op computes. When eager execution was introduced (Google Brain's
announcement *Eager Execution: An imperative, define-by-run interface to TensorFlow*, by Asim
Shankar and Wolff Dobson, read here in a Chinese translation), Yaroslav Bulatov compared it with
PyTorch: no difference for large matrix products, about 20 % slower for O(n^1.5) ops such as
matmul and convolution, and two to five times slower for many O(n) ops such as vector additions
(his figures, as quoted there). The same article showed a custom gradient that makes
log(1 + e^x) numerically stable, and said it was cheaper too.

.. raw:: html
   :file: ../../_generated/extra/answers/eager.answer.html

This page measures where the fixed price dominates and where the arithmetic does, where the time
of one op and of one ``tf.function`` call goes, how much of a gradient step is overhead, and
whether that custom gradient is as stable and as cheap as claimed. Every number is measured by
this page on the machine that built it; the workloads are in :mod:`perfguide.workloads.eager`,
and :doc:`How to read these pages </reading>` defines the terms of its tables and verdicts.
"""

# %%
# Where this page was measured
# ----------------------------

# sphinx_gallery_start_ignore
import functools

import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf

from perfguide.measure import anatomy
from perfguide.measure.runner import default_device
from perfguide.processes.pool import Workers
from perfguide.report import results
from perfguide.report.answers import Change, Recommendation, ShortAnswer, measured_here
from perfguide.report.claims import ClaimReport, Faster, exact, takes_at_most
from perfguide.report.compare import Collapsed, Comparison, pick
from perfguide.report.format import format_count, format_factor, format_seconds
from perfguide.report.plotting import rate_plot, scaling_plot
from perfguide.report.show import show
from perfguide.workloads import eager as eg

# Every variant is timed in three fresh Python processes, one after another, each taking the
# variants in turns; a time below is the median of the three processes' medians.
device = default_device()
workers = Workers(device=device, limits=True)
env = workers.environment
machine = workers.machine_limits
print(results.where_measured(env, device))
print(
    f"memory bandwidth {machine.memory_bandwidth / 1e9:.1f} GB/s, "
    f"peak float32 {machine.peak_flops / 1e9:.0f} GFLOP/s"
)
peers = eg.peer_versions()
print(
    "Other frameworks measured alongside: "
    + (
        ", ".join(f"{name} {version}" for name, version in peers.items())
        or "none installed"
    )
)
# sphinx_gallery_end_ignore

# %%
# One op, from one element to ten million
# ---------------------------------------
#
# Time per op for x + x (O(n) work in n elements) and for a square matrix product (O(n^1.5) work
# in n elements), on the same float32 data: ``numpy``, ``eager`` (TensorFlow's default mode, one
# call into the runtime per op) and any installed peer, plus ``numpy-preallocated``, NumPy's add
# into an output array made once (why it is there is below). Where a line is flat, the op's fixed
# price dominates; where it climbs, the arithmetic does. The timed call is the op itself, and its
# result stays where the framework put it (TensorFlow on the CPU has finished the op when the
# call returns): each variant is timed without a copy of its result.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: _add_call
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: _matmul_call

# sphinx_gallery_start_ignore
add_sizes = [10**k for k in range(8)]
matmul_sizes = [4**k for k in range(0, 12, 2)]  # square matrices of side 1 to 1024
small_add = Faster("numpy", "eager", by=10)
large_add = takes_at_most("eager", "numpy", 2)
large_matmul = takes_at_most("eager", "numpy", 1.5)
peer_small = [takes_at_most("eager", peer, 5) for peer in peers]
peer_large = [takes_at_most("eager", peer, 1.5) for peer in peers]
add_checks = {add_sizes[0]: [small_add, *peer_small], add_sizes[-1]: [large_add]}
matmul_checks = {matmul_sizes[-1]: [large_matmul, *peer_large]}
# Full runs where a check reads; quick ones where only the curve's shape matters.
add_runs = {
    n: workers.run(
        eg.ADD,
        size=n,
        settle=add_checks.get(n, ()),
        quick=n not in add_checks,
    )
    for n in add_sizes
}
matmul_runs = {
    n: workers.run(
        eg.MATMUL,
        size=n,
        settle=matmul_checks.get(n, ()),
        quick=n not in matmul_checks,
    )
    for n in matmul_sizes
}
add = [m for runs in add_runs.values() for m in runs]
matmul = [m for runs in matmul_runs.values() for m in runs]

fig, (add_ax, matmul_ax) = plt.subplots(1, 2, figsize=(8, 4), layout="constrained")
scaling_plot(add, eg.ADD.size_name, ax=add_ax)
add_ax.set_title("x + x")
scaling_plot(matmul, eg.MATMUL.size_name, ax=matmul_ax)
matmul_ax.set_title("x @ x (square)")
plt.show()
# sphinx_gallery_end_ignore

# %%
# The same measurements as work done per second, against this machine's measured limits: x + x
# reads n floats and writes n (8 bytes an element), against the memory bandwidth; a product of
# side s does 2·s³ floating-point operations, against the peak of a large matrix product.

# sphinx_gallery_start_ignore
fig, (add_ax, matmul_ax) = plt.subplots(1, 2, figsize=(8, 4), layout="constrained")
rate_plot(
    add,
    eg.ADD.size_name,
    lambda m: 8 * m.size,
    limit=machine.memory_bandwidth,
    limit_label="memory bandwidth",
    rate_unit="B/s",
    ax=add_ax,
)
add_ax.set_title("x + x: bytes per second")
rate_plot(
    matmul,
    eg.MATMUL.size_name,
    lambda m: eg.matmul_flops(m.size),
    limit=machine.peak_flops,
    limit_label="peak (large matmul)",
    rate_unit="FLOP/s",
    ax=matmul_ax,
)
matmul_ax.set_title("x @ x: operations per second")
plt.show()
# sphinx_gallery_end_ignore

# %%
# At the largest sizes, each variant's share of the limit that bounds it:

# sphinx_gallery_start_ignore
for m in add_runs[add_sizes[-1]]:
    share = machine.bandwidth_share(8 * m.size, m.median_s)
    print(
        f"x + x,  {m.label:6s} {format_seconds(m.median_s):>9s}: {share:6.1%} of bandwidth"
    )
for m in matmul_runs[matmul_sizes[-1]]:
    share = machine.compute_share(eg.matmul_flops(m.size), m.median_s)
    print(
        f"x @ x,  {m.label:6s} {format_seconds(m.median_s):>9s}: {share:6.1%} of peak"
    )
# sphinx_gallery_end_ignore

# %%
# The checks compare eager TensorFlow with NumPy at the smallest and the largest size, and with
# each installed peer.

# sphinx_gallery_start_ignore
checked = {
    claim: claim.check(add_runs[add_sizes[0]]) for claim in [small_add, *peer_small]
} | {large_add: large_add.check(add_runs[add_sizes[-1]])}
checked |= {
    claim: claim.check(matmul_runs[matmul_sizes[-1]])
    for claim in [large_matmul, *peer_large]
}
if not peers:
    print(
        "SKIPPED: PyTorch and JAX are not installed where this page was built, so there are"
    )
    print(
        "no claims about them. Install torch and jax beside TensorFlow and rerun to see them."
    )
show(ClaimReport(list(checked.values())))
# sphinx_gallery_end_ignore

# %%
# Two things these checks show at the largest sizes have causes the page can measure.
#
# **x + x: NumPy's time is mostly fresh memory.** NumPy gives every result a newly allocated
# array; one of 40 MB comes straight from the operating system, which maps and zeroes new pages
# the first time they are touched, on every call. TensorFlow's allocator keeps freed buffers and
# hands them out again. The ``numpy-preallocated`` row adds into one output array made once
# (``np.add(x, x, out)``), in the same run: if fresh memory is the cost, that closes the gap.

# sphinx_gallery_start_ignore
largest_add = add_runs[add_sizes[-1]]
fresh, preallocated, eager_add = pick(
    largest_add, "numpy", "numpy-preallocated", "eager"
)
for m in (fresh, preallocated, eager_add):
    share = machine.bandwidth_share(8 * m.size, m.median_s)
    print(f"{m.label:19s} {format_seconds(m.median_s):>9s}  {share:6.1%} of bandwidth")
fresh_memory = Faster("numpy-preallocated", "numpy", by=1.5)
fresh_memory_checked = fresh_memory.check(largest_add)
show(
    Collapsed(
        "The check: does an output array made once close the gap?",
        ClaimReport([fresh_memory_checked]),
    )
)
# sphinx_gallery_end_ignore

# %%
# **x @ x: the gap is the kernel, not eager dispatch.** The fixed cost of one eager op (measured
# below, on calls that do nothing) is microseconds; a product of side 1024 takes
# milliseconds. The difference between the two libraries is how close their matrix-multiply
# kernels come to the peak:

# sphinx_gallery_start_ignore
numpy_mm, eager_mm = pick(matmul_runs[matmul_sizes[-1]], "numpy", "eager")
flops = eg.matmul_flops(numpy_mm.size)
for m in (numpy_mm, eager_mm):
    share = machine.compute_share(flops, m.median_s)
    print(f"{m.label:6s} {format_seconds(m.median_s):>9s}  {share:6.1%} of the peak")
# sphinx_gallery_end_ignore

# %%
# A chain of small ops
# --------------------
#
# Real code rarely runs one op: here are ten rounds of x ← tanh(0.9·x + 0.1) on 100 elements,
# three ops a round, run ``eager`` and as one ``tf.function`` (``tf-function``), with ``numpy``
# for scale.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: small_ops

# sphinx_gallery_start_ignore
chain = Faster("tf-function", "eager")
small_ops = workers.run(eg.SMALL_OPS, settle=[chain])
show(
    Collapsed(
        "The chain's times, every variant", Comparison(small_ops, baseline="eager")
    )
)
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
chain_checked = chain.check(small_ops)
show(ClaimReport([chain_checked]))
# sphinx_gallery_end_ignore

# %%
# What a call costs when it does nothing
# --------------------------------------
#
# Each of the first three returns its input (1000 floats) unchanged, so the time is pure
# overhead: a plain Python function (``python-function``), one eager op (``eager-identity``,
# ``tf.identity``) and one ``tf.function`` call (``tf-function``). The fourth, ``numpy-copy``, is
# what ``.numpy()`` costs: a copy of the tensor into a new NumPy array, paid whenever a result is
# fetched to Python.

# sphinx_gallery_start_ignore
calls = workers.run(eg.CALL_OVERHEAD)
show(Collapsed("The four calls' times", Comparison(calls, baseline="python-function")))
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
python_call, op, function = pick(
    calls, "python-function", "eager-identity", "tf-function"
)
print(
    f"one eager op costs {format_factor(op.median_s / python_call.median_s)} a Python call, "
    f"one tf.function call {format_factor(function.median_s / python_call.median_s)}"
)
print(
    f"timer's own cost per call (a call doing nothing): {format_seconds(env['timer_floor_s'])}"
)
gap = eager_mm.median_s - numpy_mm.median_s
print(
    f"the eager op's fixed cost is {op.median_s / gap:.2%} of the gap between eager and NumPy "
    f"on the product of side {int(np.sqrt(eager_mm.size))}"
)
show(
    Collapsed(
        "The check: a tf.function call against an eager op",
        ClaimReport(
            [
                Faster("eager-identity", "tf-function")
                .check(calls)
                .restated(
                    "a trivial tf.function call costs more than a trivial eager op"
                )
            ]
        ),
    )
)
# sphinx_gallery_end_ignore

# %%
# Where the time of one call goes
# -------------------------------
#
# An eager op doing nothing costs the time of many plain Python calls, a ``tf.function`` call
# many more (the ratios printed above). Where does that time go? Each variant below enters
# TensorFlow one layer deeper than the one before it, all timed in one interleaved run; the
# difference between two layers is what the outer one adds. For a ``tf.function`` call,
# ``tf-function`` is the call as written, ``concrete-function`` calls the traced graph's
# ``ConcreteFunction`` directly (skipping the argument binding), and ``runtime-execute`` is the
# runtime's own ``execute`` alone.
#
# .. dropdown:: Every layer, and the code being timed
#
#    An eager op, outermost first: ``public-api`` (``tf.identity``), ``op-wrapper`` (the
#    generated op wrapper) and ``fast-path`` (the C fast path; C++ from there on). A
#    ``tf.function`` call: ``tf-function`` (the ``Function``, which binds and canonicalizes its
#    arguments and looks up the traced graph), ``input-signature`` (the same, given an
#    ``input_signature``), ``concrete-function``, ``flat-call`` (the flat call of the graph
#    function) and ``runtime-execute``. The Python function calls each makes are counted with
#    ``cProfile``. This build machine is a small virtual machine on which every Python call is
#    slow, so these fixed costs are larger here than on a fast desktop.
#
#    .. literalinclude:: /../perfguide/measure/anatomy.py
#       :pyobject: op_layers
#
#    .. literalinclude:: /../perfguide/measure/anatomy.py
#       :pyobject: function_layers

# sphinx_gallery_start_ignore
op_layers = workers.run(eg.OP_LAYERS)
concrete = Faster("concrete-function", "tf-function")
function_layers = workers.run(eg.FUNCTION_LAYERS, settle=[concrete])
x = tf.constant(eg.make_vector(eg.OP_LAYERS.default_size))
traced = tf.function(eg.tf_identity)
layer_calls = {
    "public-api": anatomy.python_calls(tf.identity, x),
    "tf-function": anatomy.python_calls(traced, x),
    "concrete-function": anatomy.python_calls(traced.get_concrete_function(x), x),
}
show(
    Collapsed(
        "Every layer of a tf.function call",
        Comparison(function_layers, baseline="tf-function"),
    )
)
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
show(
    Collapsed(
        "Every layer of an eager op", Comparison(op_layers, baseline="public-api")
    )
)
# sphinx_gallery_end_ignore


# %%
# The split as bars on a linear axis: each segment is what one layer adds.


# sphinx_gallery_start_ignore
def layer_times(layers, order):
    """Each layer's own time (its median minus the next inner layer's), outermost first."""
    medians = [m.median_s for m in pick(layers, *order)]
    return [
        outer - inner for outer, inner in zip(medians, medians[1:], strict=False)
    ] + [medians[-1]]


fig, axes = plt.subplots(2, 1, figsize=(8, 3.2), layout="constrained")
for ax, (name, layers, order) in zip(
    axes,
    [
        ("one tf.function call", function_layers, anatomy.FUNCTION_LAYERS),
        ("one eager op", op_layers, anatomy.OP_LAYERS),
    ],
    strict=True,
):
    left = 0.0
    for color, (layer, seconds) in enumerate(
        zip(order, layer_times(layers, order), strict=True)
    ):
        ax.barh(0, seconds * 1e6, left=left * 1e6, color=f"C{color}")
        ax.text(
            (left + seconds / 2) * 1e6, 0, layer, ha="center", va="center", fontsize=8
        )
        left += seconds
    ax.set_yticks([])
    ax.set_title(name, fontsize=10)
    ax.set_xlabel("µs per call (median), split by layer")
plt.show()
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
function_total, function_runtime = pick(
    function_layers, "tf-function", "runtime-execute"
)
op_total, op_fast_path = pick(op_layers, "public-api", "fast-path")
runtime_share = function_runtime.median_s / function_total.median_s
print(
    f"tf.function call: {runtime_share:.0%} in the runtime's execute, "
    f"{1 - runtime_share:.0%} in Python layers "
    f"({layer_calls['tf-function']:.0f} Python function calls per call)"
)
print(
    f"eager op: {op_fast_path.median_s / op_total.median_s:.0%} from the C fast path on "
    f"({layer_calls['public-api']:.0f} Python function calls per tf.identity)"
)
print(
    f"calling the concrete function directly: {layer_calls['concrete-function']:.0f} "
    "Python function calls per call"
)
concrete_checked = concrete.check(function_layers)
show(
    ClaimReport(
        [
            concrete_checked,
            # Under half the call in the runtime: the runtime's part at least twice as fast.
            Faster("runtime-execute", "tf-function", by=2)
            .check(function_layers)
            .restated(
                "most of a trivial tf.function call is spent in Python, not in the runtime",
                f"{runtime_share:.0%} of the call in the runtime",
            ),
        ]
    )
)
# sphinx_gallery_end_ignore

# %%
# So ``tf.function`` pays off when it replaces enough eager ops to cover its own call; the claims
# on the chain above and on the gradient below test whether they do.
#
# Gradients: eager tape or graph
# ------------------------------
#
# One gradient of a small two-layer network (64 → 64 → 1, batch of 32) with a ``GradientTape``,
# run eagerly (``eager-tape``) or inside a ``tf.function`` (``tf-function-tape``); the tape
# records every op in both, but only eagerly does each op cross from Python.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: network_gradient

# sphinx_gallery_start_ignore
graph_gradient = Faster("tf-function-tape", "eager-tape")
gradients = workers.run(eg.GRADIENT, settle=[graph_gradient])
show(
    Collapsed("The two gradients' times", Comparison(gradients, baseline="eager-tape"))
)
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
gradient_checked = graph_gradient.check(gradients)
show(ClaimReport([gradient_checked]))
# sphinx_gallery_end_ignore

# %%
# log(1 + e^x) and its custom gradients
# -------------------------------------
#
# The derivative of log(1 + e^x) is e^x / (1 + e^x). Three ways to get it:
#
# * ``naive``: differentiate ``log(1 + exp(x))`` automatically. For x above about 89, e^x is
#   infinite in float32, and the chain rule's 1/(1 + e^x) · e^x is 0 · ∞, not a number.
# * ``custom-gradient``: the article's ``tf.custom_gradient``, which reuses e^x from the forward
#   pass and computes 1 − 1/(1 + e^x). That is finite for large x, but for very negative x it
#   subtracts two numbers that are almost 1, and the tiny true gradient is lost.
# * ``stable-custom-gradient``: also reuses e^x, but writes the gradient as 1/(1 + e^−x) for
#   positive x and e^x/(1 + e^x) otherwise, so it neither overflows nor cancels.
#
# .. rubric:: The three versions
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: log1pexp_naive
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: log1pexp_custom
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: log1pexp_stable
#
# Each is compared with the float64 derivative (computed stably) over x from −80 to 120; the
# plot shows relative error, with NaN drawn at the top.

# sphinx_gallery_start_ignore
x = tf.constant(np.linspace(-80, 120, 801).astype(np.float32))
reference = eg.sigmoid_float64(x.numpy())
errors = {
    name: np.abs(eg.value_and_gradient(fn, x)[1].numpy() / reference - 1)
    for name, fn in eg.LOG1PEXP.items()
}
fig, ax = plt.subplots(layout="constrained")
for name, error in errors.items():
    ax.semilogy(
        x.numpy(), np.where(np.isnan(error), 10.0, np.maximum(error, 1e-9)), label=name
    )
ax.axhline(1e-6, color="gray", linestyle="--", label="float32 precision (1e-6)")
ax.set_ylim(1e-9, 30)
ax.set_xlabel("x")
ax.set_ylabel("relative error of the gradient\n(log scale; NaN drawn at 10)")
ax.set_title("d/dx log(1 + e^x) in float32 against float64")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=2, frameon=False)
plt.show()
# sphinx_gallery_end_ignore


# %%
# The checks. "Float32 precision" means a relative error below 1e-6 everywhere in the range.


# sphinx_gallery_start_ignore
def worst(name):
    return float(np.max(errors[name]))  # NaN if any NaN


def worst_x(name):
    return float(x.numpy()[np.nanargmax(errors[name])])


naive_nan = np.isnan(errors["naive"])
stable_claim = exact(
    "stable-custom-gradient is finite and float32-precise everywhere",
    worst("stable-custom-gradient") < 1e-6,
    f"largest relative error {worst('stable-custom-gradient'):.1e}",
    effect=f"largest error {worst('stable-custom-gradient'):.1e}, no NaN",
)
show(
    ClaimReport(
        [
            exact(
                "the naive gradient is NaN for large x",
                bool(naive_nan.any()),
                f"NaN at {int(naive_nan.sum())} of {x.shape[0]} points, "
                f"from x = {x.numpy()[naive_nan].min():.1f}"
                if naive_nan.any()
                else "no NaN",
            ),
            exact(
                "the article's custom-gradient is finite everywhere",
                bool(np.isfinite(errors["custom-gradient"]).all()),
                f"largest relative error {worst('custom-gradient'):.1e}",
            ),
            exact(
                "the article's custom-gradient loses float32 precision for very negative x",
                worst("custom-gradient") >= 1e-6 and worst_x("custom-gradient") < 0,
                f"largest relative error {worst('custom-gradient'):.1e}, "
                f"at x = {worst_x('custom-gradient'):.1f}",
            ),
            stable_claim,
        ]
    )
)
# sphinx_gallery_end_ignore

# %%
# Do the custom gradients cost speed? Value and gradient of 1000 points in [−10, 10], where all
# three agree, eagerly. The article says reusing e^x makes the gradient cheaper.

# sphinx_gallery_start_ignore
cheaper = Faster("custom-gradient", "naive")
stable_cost = takes_at_most("stable-custom-gradient", "naive", 2)
log1pexp = workers.run(eg.LOG1PEXP_WORKLOAD, settle=[cheaper, stable_cost])
show(Collapsed("The three versions' times", Comparison(log1pexp, baseline="naive")))
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
show(ClaimReport([cheaper.check(log1pexp), stable_cost.check(log1pexp)]))
# sphinx_gallery_end_ignore

# %%
# Why: reusing e^x saves one exponential, but the custom gradient runs more ops, and on this
# machine each eager op has the fixed cost measured above. The ops each version runs for one value
# and gradient, counted from its traced graph (``IdentityN`` and the extra ``Identity`` ops are
# how ``tf.custom_gradient`` attaches the gradient), and what the extra ops should cost at the
# median eager op measured above:

# sphinx_gallery_start_ignore
x_timed = tf.constant(10 * eg.make_vector(eg.LOG1PEXP_WORKLOAD.default_size))
op_counts = {
    name: eg.graph_op_counts(functools.partial(eg.value_and_gradient, fn), x_timed)
    for name, fn in eg.LOG1PEXP.items()
}
naive_time = pick(log1pexp, "naive")[0].median_s
for name, counts in op_counts.items():
    extra = sum(counts.values()) - sum(op_counts["naive"].values())
    measured = pick(log1pexp, name)[0].median_s - naive_time
    print(
        f"{name:23s} {sum(counts.values()):3d} ops; vs naive {extra:+d} ops ≈ "
        f"{extra * op.median_s * 1e6:+6.0f} µs predicted, {measured * 1e6:+6.0f} µs measured"
    )
    print(f"{'':23s} {', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}")
# sphinx_gallery_end_ignore

# %%
# Higher-order gradients
# ----------------------
#
# Nesting two tapes gives the second derivative, e^x/(1 + e^x)², through each version, custom
# gradients included; here compared with its float64 value at 41 points in [−10, 10].

# sphinx_gallery_start_ignore
x_small = tf.constant(np.linspace(-10, 10, 41).astype(np.float32))
s = eg.sigmoid_float64(x_small.numpy())
second_errors = {
    name: float(np.max(np.abs(eg.second_derivative(fn, x_small).numpy() - s * (1 - s))))
    for name, fn in eg.LOG1PEXP.items()
}
show(
    Collapsed(
        "The checks of the three second derivatives",
        ClaimReport(
            [
                exact(
                    f"nested tapes give {name}'s second derivative to 1e-6",
                    error < 1e-6,
                    f"largest absolute error {error:.1e}",
                )
                for name, error in second_errors.items()
            ]
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
within_two = {n: large_add.check(add_runs[n]) for n in add_sizes}
# The sizes from which on every larger one held too.
held_from = [
    n for n in add_sizes if all(within_two[m].held for m in add_sizes if m >= n)
]
fades = (
    f"from {format_count(held_from[0])} elements up eager x + x took at most twice NumPy's "
    f"time (at {format_count(held_from[0])}, {measured_here(within_two[held_from[0]])})"
    if held_from
    else "eager x + x taking at most twice NumPy's time held at no size here (at "
    f"{format_count(add_sizes[-1])} elements, {measured_here(within_two[add_sizes[-1]])})"
)
(eager_one,) = pick(add_runs[add_sizes[0]], "eager")
answer = ShortAnswer(
    f"Each eager op has a fixed cost before it computes anything: x + x on one element took "
    f"{format_seconds(eager_one.median_s)} eagerly here (NumPy against eager: "
    f"{checked[small_add].quoted}), so on small arrays the fixed cost is the time; {fades}. "
    "A tf.function call costs "
    f"{format_seconds(function.median_s)} to enter, "
    f"{1 - runtime_share:.0%} of it in Python before the runtime starts, so it pays off only "
    f"when it replaces several eager ops. The article's custom gradient runs "
    f"{sum(op_counts['custom-gradient'].values())} ops to the naive version's "
    f"{sum(op_counts['naive'].values())}: its value is stability, not speed.",
    [
        Recommendation(
            "Put chains of small ops in one tf.function",
            chain_checked,
            Change("tf.function", "on", work="a chain of small ops"),
            recipe="wrap-a-chain-of-small-ops-in-tf-function",
        ),
        Recommendation(
            "Compute gradients inside tf.function",
            gradient_checked,
            Change(
                "the GradientTape", "inside the tf.function", work="a gradient step"
            ),
            recipe="compute-a-gradient-inside-tf-function",
        ),
        Recommendation(
            "On a hot path, call the concrete function of a tf.function",
            concrete_checked,
            Change(
                "how a tf.function is called",
                "its concrete function",
                work="a hot path",
            ),
            recipe="call-the-concrete-function-on-a-hot-path",
        ),
        Recommendation(
            "Give log(1 + e^x) a stable custom gradient",
            stable_claim,
            Change("log(1 + e^x)'s gradient", "a stable custom gradient"),
            recipe="a-stable-custom-gradient-for-log-1-e-x",
        ),
    ],
)
answer.publish("eager")
print(answer)
# sphinx_gallery_end_ignore

# %%
# Take the numbers with you
# -------------------------
#
# Everything timed on this page is published as `eager.json <../../measurements/eager.json>`_,
# in the shape ``python -m perfguide run eager-add --json PATH`` writes (the other workloads here
# are ``eager-matmul``, ``eager-small-ops``, ``eager-call``, ``eager-op-layers``,
# ``eager-function-layers``, ``eager-gradient`` and ``eager-log1pexp``). To rerun this page on
# your own machine, install the guide's package from a checkout of its repository
# (``python -m pip install -e ".[cpu]"``) and run the script downloaded below; install PyTorch
# and JAX beside it to see them on the same curves.

# sphinx_gallery_start_ignore
published = (
    add
    + matmul
    + small_ops
    + calls
    + op_layers
    + function_layers
    + gradients
    + log1pexp
)
print(results.publish("eager", env, published))
workers.close()
# sphinx_gallery_end_ignore


# %%
# Recipes
# -------
#
# The practices this page advises, as lines to paste. Each runs on its own in a second or two
# once TensorFlow is imported, and ends with a check that it works.
#
# Wrap a chain of small ops in tf.function
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# One call runs all thirty ops of the chain timed above in the runtime, instead of thirty calls
# from Python; the check compares it with the same chain run eagerly.

import numpy as np
import tensorflow as tf


def chain(x):
    for _ in range(10):
        x = tf.tanh(x * 0.9 + 0.1)
    return x


chain_in_graph = tf.function(chain)
x = tf.random.normal([100])
np.testing.assert_allclose(chain_in_graph(x), chain(x), rtol=1e-5)

# %%
# Compute a gradient inside tf.function
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Put the ``GradientTape`` inside the ``tf.function``, so the forward and backward ops run as one
# graph; ``python_function`` is the same code run eagerly, for the check.

w = [tf.Variable(tf.random.normal([64, 64])), tf.Variable(tf.random.normal([64, 1]))]


@tf.function
def gradient(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.tanh(x @ w[0]) @ w[1]))
    return tape.gradient(loss, w)


x = tf.random.normal([32, 64])
for in_graph, eager in zip(gradient(x), gradient.python_function(x), strict=True):
    np.testing.assert_allclose(in_graph, eager, rtol=1e-4, atol=1e-6)

# %%
# Call the concrete function on a hot path
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# A ``ConcreteFunction`` is one traced graph: calling it skips the ``tf.function``'s binding of
# its arguments, the Python work measured above on this small 2-core virtual machine (where
# Python calls are slow). It accepts only the dtype and shape it was traced for.


@tf.function
def scale(x):
    return 2.0 * x + 1.0


scale_vector = scale.get_concrete_function(tf.TensorSpec([None], tf.float32))
np.testing.assert_allclose(scale_vector(tf.constant([1.0, 2.0, 3.0])), [3.0, 5.0, 7.0])
assert scale.experimental_get_tracing_count() == 1

# %%
# A stable custom gradient for log(1 + e^x)
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# The ``stable-custom-gradient`` version above: it reuses e^x, and it neither divides ∞ by ∞ nor
# subtracts two numbers close to 1, at the extra time measured above. The check: its gradient is
# finite and float32-precise from x = −80 to x = 100.


@tf.custom_gradient
def log1pexp(x):
    e = tf.exp(x)
    positive = x > 0

    def grad(upstream):  # 1/(1 + e^-x) for x > 0, e^x/(1 + e^x) otherwise
        return upstream * tf.where(positive, 1 / (1 + 1 / e), e / (1 + e))

    return tf.where(positive, x + tf.math.log1p(1 / e), tf.math.log1p(e)), grad


x = tf.constant([-80.0, -5.0, 0.0, 5.0, 100.0])
with tf.GradientTape() as tape:
    tape.watch(x)
    y = log1pexp(x)
sigmoid = 1 / (1 + np.exp(-x.numpy().astype(np.float64)))
np.testing.assert_allclose(tape.gradient(y, x), sigmoid, rtol=1e-6)
