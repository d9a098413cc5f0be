"""
Why is my tf.function fast, slow, or wrong?
===========================================

``@tf.function`` turns a Python function into a TensorFlow graph: the first call runs the Python
once to *trace* the graph, and later calls run only the graph. That one fact explains its speed,
its slow first call, ``print`` that prints once, Python values frozen into the graph, and the
retracing that can cost more than the graph saves.

The question behind this chapter (seed 004 of the guide's sources) timed a loop of 99 small
matrix products: about 0.12 s for ten eager calls and about 0.026 s with ``tf.function``, roughly
five times faster (the author's figures, from that article). Every other number on this page is
measured by this page, on the machine that built it; the workloads are in
:mod:`perfguide.workloads.tf_function`.
"""

# %%
# Where this page was measured
# ----------------------------
import dataclasses

import matplotlib.pyplot as plt
import tensorflow as tf

from perfguide.measure import environment
from perfguide.report import results
from perfguide.report.claims import Claim, ClaimReport, faster
from perfguide.report.compare import Comparison, format_seconds, pick
from perfguide.report.plotting import bar_chart, scaling_plot
from perfguide.measure.runner import default_device, run
from perfguide.workloads import tf_function as tfn

env = environment.collect()
device = default_device()
print(f"CPU: {env['cpu_model']}, {env['usable_cores']} usable cores")
print(f"TensorFlow {env['tensorflow']}, NumPy {env['numpy']}")
print(f"TensorFlow ops placed on: {device}")

# %%
# The seed's loop: eager, graph, compiled
# ---------------------------------------
#
# Each call sums x, x²/2!, x³/3!, … up to 99 products of a 100 × 100 matrix, one ``tf.matmul`` at
# a time. Eagerly, Python dispatches every product, division and sum as its own op; as a
# ``tf.function`` the whole call is one graph; with ``jit_compile=True`` XLA compiles that graph. NumPy does the same arithmetic for
# reference. The *first-call overhead* column is the one-off tracing (and, for XLA, compiling).
series = run(tfn.SERIES, device=device)
Comparison(series, baseline="eager")

# %%
ax = bar_chart(series)
ax.set_title("99 products of a 100 × 100 matrix, time per call")
plt.show()

# %%
eager, graph = pick(series, "eager", "tf-function")
ClaimReport(
    [
        faster(series, "tf-function", "eager", by=2),
        faster(series, "xla", "eager", by=2),
        Claim(
            "the first tf.function call, which traces, costs at least 10 steady calls",
            graph.first_call_s >= 10 * graph.median_s,
            f"first call {format_seconds(graph.first_call_s)}, "
            f"steady {format_seconds(graph.median_s)} per call",
        ),
    ]
)

# %%
# Tracing made visible
# --------------------
#
# Python code inside a ``tf.function`` runs while tracing, not on every call. ``print`` is Python;
# ``tf.print`` is an op in the graph. Three calls of one function that uses both:
python_lines, tf_lines = tfn.print_lines(calls=3)
print(f"print wrote {len(python_lines)} line(s), tf.print wrote {len(tf_lines)}:")
print("\n".join(python_lines + tf_lines))

# %%
# A Python value read inside the function is frozen into the graph when it is traced. Here
# ``power(x)`` computes ``x ** exponent`` for x = 2; the exponent changes from 2 to 3 between two
# calls, as a Python number and as a ``tf.Variable``:
frozen = tfn.frozen_global_results()
for kind, (before, after) in frozen.items():
    print(f"exponent as a {kind:13s}: power(2) = {before:g} before, {after:g} after")

# %%
# When does it trace again? The function keeps one graph per *signature* of its arguments: the
# value of each Python argument, and the dtype and shape of each tensor. These counts come from
# ``experimental_get_tracing_count()`` on a fresh function after four calls.
four_shapes = [tf.zeros([n]) for n in range(1, 5)]
any_length = [
    tf.TensorSpec([None]),
    tf.TensorSpec([]),
]  # x of any length, a scalar factor
tracing_cases = {
    "Python floats 1.0, 2.0, 3.0, 4.0": ({}, [1.0, 2.0, 3.0, 4.0], 4),
    "tensors of one shape, four values": (
        {},
        [tf.constant(float(v)) for v in range(4)],
        1,
    ),
    "tensors of four shapes": ({}, four_shapes, 4),
    "four shapes, reduce_retracing=True": ({"reduce_retracing": True}, four_shapes, 2),
    "four shapes, input_signature [None]": (
        {"input_signature": any_length},
        four_shapes,
        1,
    ),
}
traces = {
    case: tfn.count_traces(options, args)
    for case, (options, args, _) in tracing_cases.items()
}
for case, count in traces.items():
    print(f"{case:36s} {count} trace(s)")

# %%
# ``reduce_retracing`` generalizes the shape after the second one it sees; an
# ``input_signature`` with a ``None`` dimension fixes it before the first. The checks, including
# the two demonstrations above:
ClaimReport(
    [
        Claim(
            "print runs once per trace, tf.print on every call",
            (len(python_lines), len(tf_lines)) == (1, 3),
            f"3 calls: print {len(python_lines)} line(s), tf.print {len(tf_lines)}",
        ),
        Claim(
            "a Python number is frozen at trace time; a tf.Variable is read every call",
            frozen["Python number"][1] == 4.0 and frozen["tf.Variable"][1] == 8.0,
            f"after the change: Python number gives {frozen['Python number'][1]:g}, "
            f"tf.Variable {frozen['tf.Variable'][1]:g}",
        ),
        *(
            Claim(
                f"{case}: {expected} trace(s)",
                traces[case] == expected,
                f"{traces[case]} traced",
            )
            for case, (_, _, expected) in tracing_cases.items()
        ),
    ]
)

# %%
# The price of retracing
# ----------------------
#
# A function called with a new Python number every call (a step counter, a schedule value) traces
# a new graph every call. The same function called with the number as a tensor traces once. The
# harness counts traces in the timed blocks; the *flags* column shows a variant that retraced
# while it was being timed, whose time then includes tracing.
retracing = run(tfn.RETRACING, device=device)
Comparison(retracing, baseline="python-argument")

# %%
python_arg, tensor_arg = pick(retracing, "python-argument", "tensor-argument")
ClaimReport(
    [
        faster(retracing, "tensor-argument", "python-argument", by=5),
        Claim(
            "the harness saw the Python-argument variant retrace and the tensor variant not",
            python_arg.retraced and not tensor_arg.retraced,
            f"retraces while timed: {python_arg.retraces} and {tensor_arg.retraces}",
        ),
    ]
)

# %%
# Unrolled Python loops
# ---------------------
#
# A Python ``for`` over ``range`` inside a ``tf.function`` runs while tracing, so the graph gets
# one copy of the loop body per step. A loop over ``tf.range`` becomes a single graph loop. Both
# compute x ← x/2 + 1 for a given number of steps; here is the cost of *tracing* each (a fresh
# function every time), and the size of the graph it produces.
loop_steps = [10, 30, 100, 300, 1000]
tracing = [
    m for n in loop_steps for m in run(tfn.TRACING, size=n, quick=True, device=device)
]
op_counts = {v: [tfn.graph_op_count(v, n) for n in loop_steps] for v in tfn.LOOPS}

fig, (time_ax, ops_ax) = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
scaling_plot(tracing, tfn.TRACING.size_name, ax=time_ax)
time_ax.set_title("Time to trace")
for variant, counts in op_counts.items():
    ops_ax.loglog(loop_steps, counts, marker="o", label=variant)
ops_ax.set_xlabel("loop steps (log scale)")
ops_ax.set_ylabel("operations in the graph (log scale)")
ops_ax.set_title("Graph size")
ops_ax.grid(True, alpha=0.3)
ops_ax.legend()
plt.show()

# %%
longest = [m for m in tracing if m.size == loop_steps[-1]]
ClaimReport(
    [
        Claim(
            "the unrolled graph grows with the loop; the tf.range graph does not",
            op_counts["python-for"][-1] > 10 * op_counts["python-for"][0]
            and len(set(op_counts["tf-range"])) == 1,
            f"python-for {op_counts['python-for'][0]} → {op_counts['python-for'][-1]} ops, "
            f"tf-range {op_counts['tf-range'][0]} → {op_counts['tf-range'][-1]} ops",
        ),
        faster(longest, "tf-range", "python-for", by=10),
    ]
)

# %%
# Loops over rows
# ---------------
#
# The seed's last example sums the mean of each row of a 100 × 100 matrix, once row by row
# (AutoGraph turns the ``for row in x`` into a graph loop) and once as one vectorized reduction,
# both inside ``tf.function``.
rows = run(tfn.ROWS, device=device)
print(Comparison(rows, baseline="row-loop"))
ClaimReport([faster(rows, "vectorized", "row-loop")])

# %%
# Debugging: run functions eagerly
# --------------------------------
#
# ``tf.config.run_functions_eagerly(True)`` makes every ``tf.function`` run as plain Python, so
# ``print``, breakpoints and debuggers see every call. Does it also give back the speed-up? Here
# is the seed's loop as a ``tf.function`` with functions run eagerly, beside the eager and
# ``tf.function`` runs measured at the top of this page.
with tfn.functions_run_eagerly():
    python_lines_debug, _ = tfn.print_lines(calls=3)
    run_eagerly = [
        dataclasses.replace(m, label="tf-function, run eagerly")
        for m in run(tfn.SERIES, ["tf-function"], device=device)
    ]
debugging = [eager, graph, *run_eagerly]
print(
    f"with functions run eagerly, print wrote {len(python_lines_debug)} line(s) in 3 calls"
)
Comparison(debugging, baseline="eager")

# %%
ClaimReport(
    [
        Claim(
            "run eagerly, a tf.function runs its Python every call",
            len(python_lines_debug) == 3,
            f"print wrote {len(python_lines_debug)} line(s) in 3 calls",
        ),
        faster(debugging, "eager", "tf-function, run eagerly", by=1 / 1.5),
    ]
)

# %%
# Take the numbers with you
# -------------------------
#
# Everything timed on this page is published as
# `tf-function.json <../../measurements/tf-function.json>`_, in the shape
# ``python -m perfguide run tf-function --json PATH`` writes (the other workloads here are
# ``tf-function-retracing``, ``tf-function-tracing`` and ``tf-function-rows``).
published = series + retracing + tracing + rows + run_eagerly
results.save(results.measurements_dir() / "tf-function.json", env, published)
print(f"published {len(published)} measurements")
