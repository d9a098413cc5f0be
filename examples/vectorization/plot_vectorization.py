"""
How much do tensor operations buy over loops, and how close do they get to the hardware?
=========================================================================================

The tf.wiki handbook *Simple and Brutal TensorFlow 2* (简单粗暴 TensorFlow 2, by Xihan Li), in its
chapter on TensorFlow performance, tells its readers to embrace tensor operations: a 10000 × 10000
matrix product took about 700,000 s as a Python triple loop, 8,400 s in Cython, 5.61 s with
``np.dot`` and 0.77 s with ``tf.matmul`` on the author's i9-9900K and RTX 2060 SUPER; a loop of
``tf.matmul`` over 1000 matrices and a ``tf.stack`` took about 0.40 s, one ``tf.einsum`` about 0.28
s. It also says to profile before optimizing, to preprocess and preload the data, that a
TensorFlow build may not use all of the CPU's vector instructions, and not to trade readability
for tiny gains. Those figures are the handbook's own, typed by hand and taken without waiting for
the GPU; every other number on this page is measured by this page, on the machine that built it.

.. raw:: html
   :file: ../../_generated/answers/vectorization.answer.html

Every variant of a workload computes the same result; the tests of
:mod:`perfguide.workloads.vectorization` check that they agree. All arithmetic is float32 (the
handbook's NumPy arrays were float64, twice the bytes and half the vector width).
:doc:`How to read the numbers </index>` explains the tables and verdicts.
"""

# %%
# Where this page was measured
# ----------------------------

# sphinx_gallery_start_ignore
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from perfguide.measure import limits, profile
from perfguide.measure.runner import default_device
from perfguide.processes.fresh import tensorflow_instruction_sets
from perfguide.processes.pool import Workers, run_across
from perfguide.report import results
from perfguide.report.answers import Recommendation, Scenario, ShortAnswer
from perfguide.report.claims import (
    ClaimReport,
    Faster,
    Share,
    falls,
    in_common,
    ratio_interval,
    share_of_time,
)
from perfguide.report.compare import Comparison, Table, pick
from perfguide.report.format import (
    format_count,
    format_seconds,
    three_figures,
)
from perfguide.report.ops import OpTable
from perfguide.report.plotting import rate_bars, rate_plot, scaling_plot
from perfguide.workloads import vectorization as vz
from perfguide.workloads.eager import graph_op_counts

# Every variant is timed in three fresh Python processes, one after another, each taking the
# variants in turns; a time below is the median of the three processes' medians.
device = default_device()
workers = Workers(device=device, limits=True)
env = workers.environment
machine = workers.machine_limits
peak_label = "peak float32 (measured)"
print(f"CPU: {env['cpu_model']}, {env['usable_cores']} usable cores")
print(f"TensorFlow {env['tensorflow']}, NumPy {env['numpy']}; ops placed on {device}")
print(
    f"memory bandwidth {machine.memory_bandwidth / 1e9:.1f} GB/s, "
    f"peak float32 {machine.peak_flops / 1e9:.0f} GFLOP/s ({machine.how['peak_flops']})"
)


def gflops(flops: float, seconds: float) -> str:
    return f"{three_figures(flops / seconds / 1e9)} GFLOP/s"


# sphinx_gallery_end_ignore


# %%
# From Python loops to BLAS
# -------------------------
#
# One square product, four ways: the handbook's triple loop over NumPy elements, NumPy's
# ``matmul`` (a BLAS library), and TensorFlow's ``tf.matmul``, eagerly and inside a
# ``tf.function``. The loop is timed only on small matrices; the others up to side 2048. The
# rate is floating-point operations per second (2·n³ for side n) against the peak this machine
# reached in its fastest large product.
#
# .. dropdown:: The code being timed
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: python_matmul
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: _matmul_call
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: product
# sphinx_gallery_start_ignore
SIDES = [16, 32, 64, 256, 1024, 2048]
LOOP_SIDES, largest_side = SIDES[:3], SIDES[-1]
loop_claim = Faster("numpy", "python-loops", by=1000)
large_product = Faster("eager", "numpy", by=1 / 1.1)
products = {
    n: workers.run(
        vz.MATMUL,
        # The loop only where it takes milliseconds; BLAS at every side.
        None if n in LOOP_SIDES else ["numpy", "eager", "tf-function"],
        size=n,
        settle=[large_product] if n == largest_side else [],
        # Rough where the plot only needs the trend; full where the checks read.
        quick=n not in (LOOP_SIDES[-1], largest_side),
    )
    for n in SIDES
}
every_product = [m for n in products for m in products[n]]
ax = rate_plot(
    every_product,
    vz.MATMUL.size_name,
    lambda m: vz.matmul_flops(m.size),
    limit=machine.peak_flops,
    limit_label=peak_label,
    rate_unit="FLOP/s",
)
ax.set_title("One square float32 product: arithmetic per second")
plt.show()
# sphinx_gallery_end_ignore

# %%
# The loop does a few million operations a second; BLAS, eager or not, gets within reach of the
# peak once a product is large enough to hide the cost of the call. At the largest side:
# sphinx_gallery_start_ignore
Comparison(products[largest_side], baseline="numpy")
# sphinx_gallery_end_ignore

# %%
# The handbook's 10000 × 10000 product, on this machine. A product of side 10000 would take
# minutes per variant here (days for the loop), so the times are carried up from the measured
# ones by the n³ operation count: the loop's from its largest measured side (the exponent of a
# power law fitted to its times is printed as a check: the closer to 3, the more of the time is
# the arithmetic), BLAS's from side 2048, where it is bound by arithmetic.
# sphinx_gallery_start_ignore
HANDBOOK_SIDE = 10_000
loop_times = [pick(products[n], "python-loops")[0].median_s for n in LOOP_SIDES]
exponent, _ = np.polyfit(np.log(LOOP_SIDES), np.log(loop_times), 1)
loop_at_handbook = loop_times[-1] * (HANDBOOK_SIDE / LOOP_SIDES[-1]) ** 3
print(f"Python loop: time ∝ side^{exponent:.2f} over sides {LOOP_SIDES} (fitted)")
scale_up = (HANDBOOK_SIDE / largest_side) ** 3
carried = {m.label: m.median_s * scale_up for m in products[largest_side]}
handbook = Scenario(
    f"A {format_count(HANDBOOK_SIDE)} × {format_count(HANDBOOK_SIDE)} product",
    [
        "code",
        "handbook (quoted; float64, i9-9900K, RTX 2060 SUPER)",
        "this machine (float32)",
    ],
    [
        [
            "Python triple loop",
            "~700,000 s",
            f"~{format_seconds(loop_at_handbook)} (from side {LOOP_SIDES[-1]})",
        ],
        ["Cython loop", "~8,400 s", "not measured"],
        ["np.dot", "5.61 s", f"~{format_seconds(carried['numpy'])} (from side 2048)"],
        [
            "tf.matmul",
            "0.77 s (GPU, not waited for)",
            f"~{format_seconds(carried['eager'])}",
        ],
    ],
)
handbook
# sphinx_gallery_end_ignore

# %%
# The checks: the loop against NumPy at the loop's largest side, and the products at side 2048:
# sphinx_gallery_start_ignore
loop_checked = loop_claim.check(products[LOOP_SIDES[-1]])
large_checked = large_product.check(products[largest_side])
best_product = min(products[largest_side], key=lambda m: m.median_s)
product_share = machine.compute_share(
    vz.matmul_flops(largest_side), best_product.median_s
)
ClaimReport([loop_checked, large_checked])
# sphinx_gallery_end_ignore

# %%
# Batched products: a loop, or one operation?
# -------------------------------------------
#
# The handbook's second example, at a twentieth of its size so it runs in seconds: 50 matrices
# of 100 × 1000, each times one 1000 × 1000 matrix (10¹⁰ operations). Five ways to write it, each
# eagerly and inside a ``tf.function``: the loop with ``tf.stack``, one ``tf.einsum``, one
# ``tf.matmul`` that broadcasts the matrix over the batch, ``tf.vectorized_map`` (the loop body
# for one matrix, turned into batch operations) and ``tf.map_fn`` (the loop body run once per
# matrix by a graph loop).
#
# .. dropdown:: The code being timed
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
# sphinx_gallery_start_ignore
one_op = Faster("einsum", "loop-stack")
vectorized = Faster("vectorized-map", "map-fn")
# The handbook's last advice: is tf.function worth its extra code around one big op? Eager
# costs at most a quarter more if not (closer to "as fast" three processes cannot tell).
wrapped = Faster("einsum", "einsum-tf-function", by=1 / 1.25)
batched_claims = [one_op, vectorized, wrapped]
# A call takes tens of milliseconds (the table below), one call a block: five blocks a process,
# more where a claim needs them. The machine's peak, a float32 product of side 2048, is timed in turns with the
# forms, in the same processes, so that each form's share of it below carries the peak's own
# variation too.
timed = workers.run(vz.BATCHED_MATMUL, settle=batched_claims, quick=True, peak=True)
Comparison(timed, baseline="loop-stack")

(peak_m,) = pick(timed, limits.PEAK)
batched = [m for m in timed if m is not peak_m]
einsum_m, loop_m = pick(batched, "einsum", "loop-stack")
# sphinx_gallery_end_ignore

# %%
# As arithmetic per second, with each form's share of the measured peak:
# sphinx_gallery_start_ignore
batch_flops = vz.batched_flops(vz.BATCHED_MATMUL.default_size)
ax = rate_bars(
    batched,
    lambda m: vz.batched_flops(m.size),
    limit=machine.peak_flops,
    limit_label=peak_label,
    rate_unit="FLOP/s",
)
ax.set_title(
    f"{vz.BATCHED_MATMUL.default_size} products of ({vz.ROWS} × {vz.INNER}) @ "
    f"({vz.INNER} × {vz.COLUMNS})"
)
plt.show()
# sphinx_gallery_end_ignore

# %%
# The bars are set against the peak measured at the start of the page (its fastest block).
# The claim instead sets the fastest form against the peak's product timed in turns with the
# forms, median against median, process by process:
# sphinx_gallery_start_ignore
best_batched = min(batched, key=lambda m: m.median_s)
peak_share = Share(
    best_batched.label, limits.PEAK, 0.75, batch_flops, limits.PEAK_FLOPS
)
peak_claim = peak_share.check(timed)
batched_checked = {claim: claim.check(batched) for claim in batched_claims}
ClaimReport([*batched_checked.values(), peak_claim])
# sphinx_gallery_end_ignore

# %%
# The peak's product in these processes, and the fastest form's rate against it:
# sphinx_gallery_start_ignore
print(
    f"{limits.PEAK}: {gflops(limits.PEAK_FLOPS, peak_m.median_s)} "
    f"(processes: {', '.join(gflops(limits.PEAK_FLOPS, s) for s in peak_m.process_median_s)})"
)
print(
    f"{best_batched.label}: {gflops(batch_flops, best_batched.median_s)}, {peak_claim.effect}"
)
# sphinx_gallery_end_ignore

# %%
# What the loop costs besides arithmetic: eagerly, every ``a[i]`` and every ``tf.matmul`` is an
# op dispatched from Python, and ``tf.stack`` copies all the results into one tensor. In a
# ``tf.function`` the dispatches go, the copy stays. The ops each form runs:
# sphinx_gallery_start_ignore
for form, fn in vz.BATCHED_FORMS.items():
    counts = graph_op_counts(fn, *vz.make_batch(2))
    ops = ", ".join(f"{count} {name}" for name, count in sorted(counts.items()))
    print(f"{form:17s} (2 matrices): {ops}")
# sphinx_gallery_end_ignore

# %%
# Element-wise chains: fusion and the memory wall
# -----------------------------------------------
#
# A matrix product does 2000 operations for every number it reads, so arithmetic bounds it. An
# element-wise op does one or two, so memory bounds it: each op reads its input from memory and
# writes its output back. Two chains on float32 vectors: ten rounds of x ← 0.9·x + 0.1 (20 cheap
# ops) and ten rounds of x ← tanh(0.9·x + 0.1) (30 ops, a third of them a tanh), in NumPy,
# eagerly, as one ``tf.function``, and compiled by XLA, which fuses a chain into one loop that
# reads x once and writes the result once. The rate below counts just that least traffic, 8 bytes
# an element, against the memory bandwidth.
#
# .. dropdown:: The code being timed
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: affine_chain
#
#    .. literalinclude:: /../perfguide/workloads/eager.py
#       :pyobject: small_ops
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: _chain_call
# sphinx_gallery_start_ignore
CHAIN_SIZES = [10**3, 10**5, 10**7]
largest_chain = CHAIN_SIZES[-1]
fused_affine = Faster("xla", "tf-function", by=5)
fused_tanh = Faster("xla", "tf-function")
small_chain = Faster("numpy", "xla")
chains = {}
for chain, fused in ((vz.AFFINE, fused_affine), (vz.TANH, fused_tanh)):
    for n in CHAIN_SIZES:
        # Quick runs throughout: a check still gets at least five blocks a process.
        settle = {largest_chain: [fused], CHAIN_SIZES[0]: [small_chain]}.get(n, [])
        chains[chain.name, n] = workers.run(chain, size=n, settle=settle, quick=True)
fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), layout="constrained", sharey=True)
for ax, chain in zip(axes, (vz.AFFINE, vz.TANH), strict=True):
    rate_plot(
        [m for n in CHAIN_SIZES for m in chains[chain.name, n]],
        chain.size_name,
        lambda m: vz.chain_bytes(m.size),
        limit=machine.memory_bandwidth,
        limit_label="memory bandwidth (measured)",
        rate_unit="B/s",
        ax=ax,
    )
    ax.set_title(chain.name)
plt.show()
# sphinx_gallery_end_ignore

# %%
# At ten million elements, each variant's share of the bandwidth:
# sphinx_gallery_start_ignore
for chain in (vz.AFFINE, vz.TANH):
    for m in chains[chain.name, largest_chain]:
        share = machine.bandwidth_share(vz.chain_bytes(m.size), m.median_s)
        print(f"{chain.name:19s} {m.label:12s} {share:6.1%} of the memory bandwidth")
fused_checked = {
    "affine": fused_affine.check(chains[vz.AFFINE.name, largest_chain]),
    "tanh": fused_tanh.check(chains[vz.TANH.name, largest_chain]),
}
small_checked = small_chain.check(chains[vz.AFFINE.name, CHAIN_SIZES[0]])
ClaimReport([*fused_checked.values(), small_checked])
# sphinx_gallery_end_ignore

# %%
# Fusion saves passes over memory, so it pays where memory is the limit. A chain far below the
# bandwidth is limited by its arithmetic instead, which fusion cannot remove: there XLA's
# generated loop competes with TensorFlow's own vectorized kernels, op for op. Whether a chain is
# limited by memory or by arithmetic shows in two measurements of the same run: how close its
# fastest variant comes to the bandwidth, and how many cores each variant kept busy while it ran
# (the process's CPU time over wall time, per timed block):
# sphinx_gallery_start_ignore
for chain in (vz.AFFINE, vz.TANH):
    for m in chains[chain.name, largest_chain]:
        print(
            f"{chain.name:19s} {m.label:12s} {format_seconds(m.median_s):>9s} "
            f"on {m.cores_busy:.1f} cores"
        )
# sphinx_gallery_end_ignore

# %%
# Feeding the data
# ----------------
#
# The handbook's other advice: preprocess the data ahead and load it in parallel with training.
# One epoch of 32 small training steps (batches of 128 rows of 256 raw features, centred, scaled
# and cast to float32 before they reach a two-layer network), fed four ways: preprocessed in
# NumPy batch by batch as the loop needs it; preprocessed and converted to tensors once, before
# training; a ``tf.data`` pipeline (``from_tensor_slices``, ``batch``,
# ``map(num_parallel_calls=AUTOTUNE)``, ``cache``, ``prefetch``); and ``Dataset.from_generator``
# over the NumPy batches, which users have reported to be more than ten times slower than
# ``from_tensor_slices`` (`tensorflow#56258 <https://github.com/tensorflow/tensorflow/issues/56258>`_).
# Every variant trains the same weights; the time is per step, and the network's hidden layer
# grows from 16 to 2048 units to move the step from input-bound to compute-bound. (What
# ``prefetch``, ``cache`` and their kin do for a pipeline that feeds a model is the question of
# :doc:`its own chapter </auto_examples/tf_data/plot_tf_data>`.)
#
# .. dropdown:: The code being timed
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: _batch_sources
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: train_epoch
#
#    .. literalinclude:: /../perfguide/workloads/vectorization.py
#       :pyobject: _train_step
# sphinx_gallery_start_ignore
HIDDEN_SIZES = [16, 2048]
small_model, large_model = HIDDEN_SIZES[0], HIDDEN_SIZES[-1]
preload = Faster("preloaded", "numpy-each-step")
feeding = {
    n: workers.run(
        vz.INPUT_PIPELINE,
        size=n,
        # Full where the check reads; rough where only the trend across sizes matters.
        settle=[preload] if n == small_model else [],
        quick=n != small_model,
    )
    for n in HIDDEN_SIZES
}
Comparison(feeding[small_model], baseline="preloaded")
# sphinx_gallery_end_ignore

# %%
# What feeding costs: a variant's time per step minus the preloaded one's, as a share of the
# variant's step, at each model size. Where the share falls towards zero the step is bound by
# its arithmetic and no pipeline can speed it up.
# sphinx_gallery_start_ignore
ax = scaling_plot(
    [m for n in HIDDEN_SIZES for m in feeding[n]], vz.INPUT_PIPELINE.size_name
)
ax.set_title("Time per training step as the model grows")
plt.show()


def feeding_costs(measurements):
    floor = pick(measurements, "preloaded")[0].median_s
    return {m.label: m.median_s - floor for m in measurements if m.label != "preloaded"}


def feeding_shares(measurements):
    steps = {m.label: m.median_s for m in measurements}
    return {
        label: cost / steps[label]
        for label, cost in feeding_costs(measurements).items()
    }


for n in HIDDEN_SIZES:
    # A variant measured as fast as the preloaded one or faster has no feeding cost to show.
    shares = ", ".join(
        f"{label} {f'{share:.0%}' if share > 0 else 'nothing measurable'}"
        for label, share in feeding_shares(feeding[n]).items()
    )
    print(f"{n:5d} hidden units: feeding takes {shares} of the step")
# sphinx_gallery_end_ignore

# %%
# Its share of a step is 1 - 1/(its time over preloaded data's): the share falls as that does.
# sphinx_gallery_start_ignore
compute_bound = falls(
    f"from_generator's share of a step falls from {small_model} to {large_model} hidden units",
    *(
        ratio_interval(*in_common(*pick(feeding[n], "from-generator", "preloaded")))
        for n in (small_model, large_model)
    ),
    "from_generator's step time over preloaded data's",
)
feeding_checked = {
    preload: preload.check(feeding[small_model]),
    compute_bound: compute_bound,
}
ClaimReport(list(feeding_checked.values()))
# sphinx_gallery_end_ignore

# %%
# Feeding alone, with no training step: each source drained for one epoch, per batch, in one
# interleaved run. This is what the report of a tenfold gap between ``from_generator`` and
# ``from_tensor_slices`` compared, and what a training step pays on top of its arithmetic.
# sphinx_gallery_start_ignore
generator_report = Faster("tf-data", "from-generator", by=10)
# The advice itself, apart from the report's figure: is the pipeline faster at all?
generator_advice = Faster("tf-data", "from-generator")
sources = workers.run(vz.INPUT_ONLY, settle=[generator_report, generator_advice])
Comparison(sources, baseline="preloaded")
# sphinx_gallery_end_ignore

# %%
# sphinx_gallery_start_ignore
source_checked = generator_advice.check(sources)
ClaimReport([generator_report.check(sources), source_checked])
# sphinx_gallery_end_ignore

# %%
# Set beside the training steps above: each step's feeding cost (its time beyond the preloaded
# step at 16 hidden units) and the cost of producing one batch alone.
# sphinx_gallery_start_ignore
small_costs = feeding_costs(feeding[small_model])
alone = {m.label: m.median_s for m in sources}
for label, cost in small_costs.items():
    print(
        f"{label:16s} {format_seconds(cost):>9s} per step beyond preloaded; "
        f"{format_seconds(alone[label]):>9s} per batch alone"
    )
# sphinx_gallery_end_ignore

# %%
# A ``tf.data`` pipeline is iterated from Python here, one batch per step, and that iteration
# has a fixed cost per batch, as every call into TensorFlow does; slicing a NumPy array and
# preprocessing it has another. Which is larger on this machine is in the two columns above: it
# decides whether the pipeline or the hand-written loop feeds a small step faster (the table at
# 16 hidden units). A pipeline earns its keep where it overlaps loading with training
# (``prefetch``) and where the loop over batches runs inside TensorFlow, as ``Model.fit`` does.

# %%
# Profile before optimizing
# -------------------------
#
# The handbook's first advice, kept for last here so that no profiler runs in a process before
# it times: measure where the time goes before optimizing. A timer gives the total; a trace
# from TensorFlow's profiler gives it op by op. Here is one, taken in one of the page's fresh
# processes after the timing above, of five calls of the loop with ``tf.stack`` inside a
# ``tf.function``, reduced to the ops that took the most time. Each op's
# *self time* leaves out the ops nested in it; the share is of all op time in the trace.
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: loop_stack
# sphinx_gallery_start_ignore
logdir = results.measurements_dir() / "vectorization.profile"
loop_in_function = "loop-stack" + vz.IN_FUNCTION
batch = vz.BATCHED_MATMUL.default_size
trace = Path(workers.trace(0, vz.BATCHED_MATMUL, loop_in_function, batch, str(logdir)))
op_table = OpTable.from_trace(trace, top=5)
op_table
# sphinx_gallery_end_ignore

# %%
# If the products take nearly all of the time, the loop's own cost (the slices and the stack) is
# not what to optimize. (An op's time in a trace is its wall time: in a ``tf.function`` the
# executor runs independent products side by side on the two cores, so durations here are not
# each product's cost alone.)
# sphinx_gallery_start_ignore
products_time = next(t for t in op_table.times if "MatMul" in t.op)
profile_claim = share_of_time(
    "the loop's matrix products take at least 90 % of its op time",
    op_table.share_per_call(lambda op: op == products_time.op),
    at_least=0.9,
)
ClaimReport([profile_claim])
# sphinx_gallery_end_ignore

# %%
# The trace is published beside the measurements, as
# sphinx_gallery_start_ignore
print(f"measurements/{trace.relative_to(results.measurements_dir())}")
print(profile.how_to_open("vectorization.profile"))
# sphinx_gallery_end_ignore

# %%
# The TensorFlow build and this CPU
# ---------------------------------
#
# The handbook warns that a TensorFlow binary may not use the CPU's vector instructions. Today's
# builds split the question: oneDNN, which runs the heavy kernels (matrix products,
# convolutions) on x86, picks its instruction set when it runs; the rest of TensorFlow is
# compiled for a baseline, and says at import which of the CPU's instructions it leaves unused.
# Asked of this machine:
# sphinx_gallery_start_ignore
instructions = tensorflow_instruction_sets()
print("CPU vector extensions:", " ".join(env["cpu_vector_flags"]))
print(
    "oneDNN kernels generated for:", instructions["onednn_kernels"] or "(not reported)"
)
print(
    "not compiled for, elsewhere:",
    instructions["not_compiled_for_elsewhere"] or "(none)",
)
# sphinx_gallery_end_ignore

# %%
# Two process-wide settings change which kernels and how many threads run:
# ``TF_ENABLE_ONEDNN_OPTS=0`` turns oneDNN's kernels off (read once, at import) and
# ``TF_NUM_INTRAOP_THREADS=1`` limits each op to one thread (read once, when the runtime starts).
# So each setting gets fresh processes of its own, three per setting, which report what they
# saw; their processes take turns round by round (see :func:`perfguide.processes.pool.run_across`).
# The same two kernels under each: a product of side 1024 and a 3 × 3 convolution of eight
# 64 × 64 images with 32 channels, each as a ``tf.function``.
# sphinx_gallery_start_ignore
SETTINGS = {
    "default": {},
    "oneDNN off": {"TF_ENABLE_ONEDNN_OPTS": "0"},
    "1 intra-op thread": {"TF_NUM_INTRAOP_THREADS": "1"},
}
groups = {name: Workers(device=device, settings=s) for name, s in SETTINGS.items()}
KERNELS = [(vz.MATMUL, 1024), (vz.CONV2D, vz.CONV2D.default_size)]
by_kernel = {
    kernel.name: run_across(
        groups, kernel, "tf-function", size=size, quick=True, blocks=10
    )
    for kernel, size in KERNELS
}
for name, group in groups.items():
    print(f"{name:18s} oneDNN {'on' if group.environment['onednn_enabled'] else 'off'}")
    group.close()
Table(
    "Each fresh process's median time per call, and the cores the processes kept busy",
    ["kernel", *SETTINGS],
    [
        [kernel]
        + [
            ", ".join(map(format_seconds, m.process_median_s))
            + f" on {m.cores_busy:.1f} cores"
            for m in measurements
        ]
        for kernel, measurements in by_kernel.items()
    ],
)
# sphinx_gallery_end_ignore

# %%
# Processes with the same setting differ, so each claim sets one setting's processes against
# the other's, and its interval carries both spreads:
# sphinx_gallery_start_ignore
settings_checked = {
    "threads": Faster("default", "1 intra-op thread").check(by_kernel[vz.MATMUL.name]),
    "onednn": Faster("default", "oneDNN off").check(by_kernel[vz.CONV2D.name]),
}
ClaimReport(list(settings_checked.values()))
# sphinx_gallery_end_ignore

# %%
# Short answer
# ------------
#
# The box at the top of this page, built from the checks above.
# sphinx_gallery_start_ignore
answer = ShortAnswer(
    "A lot where the loop runs in Python, less once the work is already in big kernels. A BLAS "
    f"product here was {loop_checked.effect} than the triple loop at side {LOOP_SIDES[-1]} and "
    f"reached {product_share:.0%} of this machine's measured peak at side {largest_side}; one "
    f"einsum was {batched_checked[one_op].effect} than a loop of products with tf.stack "
    f"({format_seconds(einsum_m.median_s)} against {format_seconds(loop_m.median_s)}). Chains of "
    "cheap element-wise ops are bound by memory: XLA's fusion made one "
    f"{fused_checked['affine'].effect} than tf.function. Feeding small steps from "
    f"Dataset.from_generator cost {format_seconds(small_costs['from-generator'])} a step beyond "
    "preloaded tensors.",
    [
        Recommendation(
            "Use one BLAS-backed product, never a Python loop", loop_checked
        ),
        Recommendation(
            "Write a batch of products as one einsum", batched_checked[one_op]
        ),
        Recommendation("Prefer vectorized_map to map_fn", batched_checked[vectorized]),
        Recommendation(
            "Keep a single large op eager: tf.function around it gains little",
            batched_checked[wrapped],
        ),
        Recommendation(
            "Fuse cheap element-wise chains with XLA", fused_checked["affine"]
        ),
        Recommendation(
            "Preprocess and convert the data once, before training",
            feeding_checked[preload],
        ),
        Recommendation("Use from_tensor_slices, not from_generator", source_checked),
        Recommendation(
            "Leave TensorFlow's intra-op threads at their default",
            settings_checked["threads"],
        ),
        Recommendation("Keep oneDNN on for convolutions", settings_checked["onednn"]),
    ],
    handbook,
)
answer.publish("vectorization", "How much do tensor operations buy over loops?")
print(answer)
# sphinx_gallery_end_ignore

# %%
# Take the numbers with you
# -------------------------
#
# Everything measured on this page, with the environment record (the machine's measured limits
# included), is published beside the site as
# `vectorization.json <../../measurements/vectorization.json>`_, in the shape
# ``python -m perfguide run batched-matmul --json PATH`` writes. To rerun this page on your own
# machine, install the guide's package from a checkout of its repository
# (``python -m pip install -e ".[cpu]"``) and run the script downloaded below.
#
# Previous question: :doc:`Why is eager TensorFlow slow on small ops, and what do custom gradients
# cost? </auto_examples/eager/plot_eager>` Next question: :doc:`Why is TF2 much slower than TF1?
# </auto_examples/training_loop/plot_training_loop>` The measuring machine is described on the
# :doc:`build machine </environment>` page. All recommendations of the guide, measured:
# :doc:`the checklist </checklist>`.
# sphinx_gallery_start_ignore
published = (
    sources
    + [m for ms in by_kernel.values() for m in ms]
    + every_product
    + timed
    + [m for ms in chains.values() for m in ms]
    + [m for ms in feeding.values() for m in ms]
)
results.save(results.measurements_dir() / "vectorization.json", env, published)
print(f"published {len(published)} measurements")
workers.close()
# sphinx_gallery_end_ignore
