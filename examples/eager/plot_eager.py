"""
Why is eager TensorFlow slow on small ops, and what do custom gradients cost?
=============================================================================

In eager mode every TensorFlow op is a call from Python into the runtime, and that call has a
fixed price however little the op computes. When eager execution was introduced, Yaroslav
Bulatov compared it with PyTorch: no difference for large matrix products, about 20 % slower for
O(n^1.5) ops such as matmul and convolution, and two to five times slower for many O(n) ops such as
vector additions (his figures, as quoted in seed 003 of the guide's sources). The same article
showed a custom gradient that makes log(1 + e^x) numerically stable.

This page measures where the fixed price dominates and where the arithmetic does, what a call, a
``tf.function`` and a ``.numpy()`` cost on their own, how much of a gradient step is overhead,
and whether that custom gradient is as stable as claimed. Every number is measured by this page on
the machine that built it; the workloads are in :mod:`perfguide.workloads.eager`.
"""

# %%
# Where this page was measured
# ----------------------------
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf

from perfguide.measure import environment
from perfguide.report import results
from perfguide.report.claims import Claim, ClaimReport, faster
from perfguide.report.compare import Comparison, at_size, format_seconds, pick
from perfguide.report.plotting import scaling_plot
from perfguide.measure.runner import default_device, run
from perfguide.workloads import eager as eg

env = environment.collect()
device = default_device()
print(f"CPU: {env['cpu_model']}, {env['usable_cores']} usable cores")
print(f"TensorFlow {env['tensorflow']}, NumPy {env['numpy']}")
print(f"TensorFlow ops placed on: {device}")
peers = eg.peer_versions()
print(
    "Peer frameworks measured alongside: "
    + (
        ", ".join(f"{name} {version}" for name, version in peers.items())
        or "none installed"
    )
)

# %%
# One op, from one element to ten million
# ---------------------------------------
#
# Time per op for x + x (O(n) work in n elements) and for a square matrix product (O(n^1.5) work
# in n elements), each variant on the same float32 data. Where a line is flat, the op's fixed
# price dominates; where it climbs, the arithmetic does.
add_sizes = [10**k for k in range(8)]
matmul_sizes = [4**k for k in range(0, 12, 2)]  # square matrices of side 1 to 1024
add = [m for n in add_sizes for m in run(eg.ADD, size=n, device=device)]
matmul = [m for n in matmul_sizes for m in run(eg.MATMUL, size=n, device=device)]

fig, (add_ax, matmul_ax) = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
scaling_plot(add, eg.ADD.size_name, ax=add_ax)
add_ax.set_title("x + x")
scaling_plot(matmul, eg.MATMUL.size_name, ax=matmul_ax)
matmul_ax.set_title("x @ x (square)")
plt.show()


# %%
# The checks compare eager TensorFlow with NumPy at the smallest and the largest size, and with
# each installed peer at the smallest.
smallest_add, largest_add = at_size(add, add_sizes[0]), at_size(add, add_sizes[-1])
largest_matmul = at_size(matmul, matmul_sizes[-1])
add_claims = [
    faster(smallest_add, "numpy", "eager", by=10),
    faster(largest_add, "eager", "numpy", by=1 / 2),
    faster(largest_matmul, "eager", "numpy", by=1 / 1.5),
]
peer_claims = [
    claim
    for peer in peers
    for claim in (
        faster(smallest_add, "eager", peer, by=1 / 5),
        faster(largest_matmul, "eager", peer, by=1 / 1.5),
    )
]
if not peers:
    print("SKIPPED: no PyTorch or JAX in this build, so no claims about them.")
    print("Build with `nox -s docs-peers` to measure them beside TensorFlow.")
ClaimReport(add_claims + peer_claims)

# %%
# A chain of small ops
# --------------------
#
# Real code rarely runs one op: here are ten rounds of x ← tanh(0.9·x + 0.1) on 100 elements, three
# ops a round, eagerly and as one ``tf.function``, with NumPy for scale.
small_ops = run(eg.SMALL_OPS, device=device)
Comparison(small_ops, baseline="eager")

# %%
ClaimReport([faster(small_ops, "tf-function", "eager")])

# %%
# What a call costs when it does nothing
# --------------------------------------
#
# Each of these returns its input (1000 floats) unchanged, so the time is pure overhead. The
# harness fetches every TensorFlow result to the host with ``.numpy()`` inside the timed block, so
# the ``fetch-only`` row, which returns a tensor that already exists, is the cost of that fetch
# alone and is included in the two rows after it.
calls = run(eg.CALL_OVERHEAD, device=device)
Comparison(calls, baseline="python-function")

# %%
fetch, op, function = pick(calls, "fetch-only", "eager-identity", "tf-function")
op_overhead = op.median_s - fetch.median_s
function_overhead = function.median_s - fetch.median_s
print(f"one eager op, fetch subtracted:         {format_seconds(op_overhead)}")
print(f"one tf.function call, fetch subtracted: {format_seconds(function_overhead)}")
ClaimReport(
    [
        faster(calls, "fetch-only", "eager-identity"),
        Claim(
            "a trivial tf.function call costs more than a trivial eager op",
            function_overhead > op_overhead,
            f"{format_seconds(function_overhead)} vs {format_seconds(op_overhead)}",
        ),
    ]
)

# %%
# So ``tf.function`` pays off when it replaces enough eager ops to cover its own call; the claims
# on the chain above and on the gradient below test whether they do.
#
# Gradients: eager tape or graph
# ------------------------------
#
# One gradient of a small two-layer network (64 → 64 → 1, batch of 32) with a ``GradientTape``,
# run eagerly or inside a ``tf.function``; the tape records every op in both, but only eagerly
# does each op cross from Python.
gradients = run(eg.GRADIENT, device=device)
Comparison(gradients, baseline="eager-tape")

# %%
ClaimReport([faster(gradients, "tf-function-tape", "eager-tape")])

# %%
# log(1 + e^x) and its custom gradients
# -------------------------------------
#
# The derivative of log(1 + e^x) is e^x / (1 + e^x). Three ways to get it:
#
# * ``naive``: differentiate ``log(1 + exp(x))`` automatically. For x above about 89, e^x is
#   infinite in float32, and the chain rule's 1/(1 + e^x) · e^x is 0 · ∞, not a number.
# * ``custom-gradient``: seed 003's ``tf.custom_gradient``, which reuses e^x from the forward
#   pass and computes 1 − 1/(1 + e^x). That is finite for large x, but for very negative x it
#   subtracts two numbers that are almost 1, and the tiny true gradient is lost.
# * ``stable-custom-gradient``: also reuses e^x, but writes the gradient as 1/(1 + e^−x) for
#   positive x and e^x/(1 + e^x) otherwise, so it neither overflows nor cancels.
#
# Each is compared with the float64 derivative (computed stably) over x from −80 to 120; the
# plot shows relative error, with NaN drawn at the top.
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
ax.set_ylabel("relative error of the gradient (log scale; NaN at 10)")
ax.set_title("d/dx log(1 + e^x) in float32 against float64")
ax.legend(loc="center left")
plt.show()


# %%
# The checks. "Float32 precision" means a relative error below 1e-6 everywhere in the range.
def worst(name):
    return float(np.max(errors[name]))  # NaN if any NaN


def worst_x(name):
    return float(x.numpy()[np.nanargmax(errors[name])])


float32_precise = {name: worst(name) < 1e-6 for name in errors}
ClaimReport(
    [
        Claim(
            "the naive gradient is NaN for large x",
            bool(np.isnan(errors["naive"]).any()),
            f"NaN at {int(np.isnan(errors['naive']).sum())} of {x.shape[0]} points, "
            f"from x = {x.numpy()[np.isnan(errors['naive'])].min():.1f}"
            if np.isnan(errors["naive"]).any()
            else "no NaN",
        ),
        Claim(
            "seed 003's custom-gradient is finite everywhere",
            bool(np.isfinite(errors["custom-gradient"]).all()),
            f"largest relative error {worst('custom-gradient'):.1e}",
        ),
        Claim(
            "seed 003's custom-gradient loses float32 precision for very negative x",
            not float32_precise["custom-gradient"] and worst_x("custom-gradient") < 0,
            f"largest relative error {worst('custom-gradient'):.1e}, "
            f"at x = {worst_x('custom-gradient'):.1f}",
        ),
        Claim(
            "stable-custom-gradient is finite and float32-precise everywhere",
            float32_precise["stable-custom-gradient"],
            f"largest relative error {worst('stable-custom-gradient'):.1e}",
        ),
    ]
)

# %%
# Do the custom gradients cost speed? Value and gradient of 1000 points in [−10, 10], where all
# three agree, eagerly. Seed 003 says reusing e^x makes the gradient cheaper.
log1pexp = run(eg.LOG1PEXP_WORKLOAD, device=device)
Comparison(log1pexp, baseline="naive")

# %%
ClaimReport(
    [
        faster(log1pexp, "custom-gradient", "naive"),
        faster(log1pexp, "stable-custom-gradient", "naive", by=1 / 2),
    ]
)

# %%
# Higher-order gradients
# ----------------------
#
# Nesting two tapes gives the second derivative, e^x/(1 + e^x)², through each version, custom
# gradients included; here compared with its float64 value at 41 points in [−10, 10].
x_small = tf.constant(np.linspace(-10, 10, 41).astype(np.float32))
s = eg.sigmoid_float64(x_small.numpy())
second_errors = {
    name: float(np.max(np.abs(eg.second_derivative(fn, x_small).numpy() - s * (1 - s))))
    for name, fn in eg.LOG1PEXP.items()
}
ClaimReport(
    [
        Claim(
            f"nested tapes give {name}'s second derivative to 1e-6",
            error < 1e-6,
            f"largest absolute error {error:.1e}",
        )
        for name, error in second_errors.items()
    ]
)

# %%
# Take the numbers with you
# -------------------------
#
# Everything timed on this page is published as `eager.json <../../measurements/eager.json>`_, in
# the shape ``python -m perfguide run eager-add --json PATH`` writes (the other workloads here are
# ``eager-matmul``, ``eager-small-ops``, ``eager-call``, ``eager-gradient`` and
# ``eager-log1pexp``).
published = add + matmul + small_ops + calls + gradients + log1pexp
results.save(results.measurements_dir() / "eager.json", env, published)
print(f"published {len(published)} measurements")
