"""
How much do tensor operations buy over loops, and how close do they get to the hardware?
=========================================================================================

The tf.wiki handbook *Simple and Brutal TensorFlow 2* (简单粗暴 TensorFlow 2, by Xihan Li), in its
chapter on TensorFlow performance, tells its readers to embrace tensor operations: on the author's
i9-9900K and RTX 2060 SUPER, a 10000 × 10000 matrix product took about 700,000 s as a Python
triple loop, 8,400 s in Cython, 5.61 s with ``np.dot`` and 0.77 s with ``tf.matmul``; a loop of
``tf.matmul`` over 1000 matrices and a ``tf.stack`` took about 0.40 s, one ``tf.einsum`` about
0.28 s. It also says to profile before optimizing, to preprocess and preload the data, that a
TensorFlow build may miss the CPU's vector instructions, and not to trade readability for tiny
gains. Those figures are the handbook's own, taken without waiting for the GPU; every
other number on this page is measured by this page, on the machine that built it.

.. raw:: html
   :file: ../../_generated/extra/answers/vectorization.answer.html

All arithmetic is float32 (the handbook's NumPy arrays were float64); every variant of a workload
computes the same result. :doc:`How to read these pages </reading>` defines the terms of the
tables and verdicts.
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
from perfguide.report.answers import Change, Recommendation, ShortAnswer
from perfguide.report.claims import (
    ClaimReport,
    Faster,
    Share,
    falls,
    in_common,
    ratio_interval,
    share_of_time,
    takes_at_most,
)
from perfguide.report.compare import Collapsed, Comparison, Table, pick
from perfguide.report.format import (
    format_count,
    format_seconds,
    three_figures,
)
from perfguide.report.ops import OpTable
from perfguide.report.plotting import rate_bars, rate_plot, scaling_plot
from perfguide.report.show import show
from perfguide.workloads import vectorization as vz
from perfguide.workloads.eager import graph_op_counts

# Every variant is timed in three fresh Python processes, one after another, each taking the
# variants in turns; a time below is the median of the three processes' medians.
device = default_device()
workers = Workers(device=device, limits=True)
env = workers.environment
machine = workers.machine_limits
peak_label = "peak float32 (measured)"
print(results.where_measured(env, device))
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
# One square product, four ways: the handbook's triple loop over NumPy elements
# (``python-loops``), NumPy's ``matmul``, which calls a BLAS library (``numpy``), and
# TensorFlow's ``tf.matmul``, eagerly (``eager``) and inside a ``tf.function``
# (``tf-function``). The loop is timed only on small matrices, the others up to side 2048. The
# rate is floating-point operations per second (2·n³ for side n), against the peak float32 rate
# this machine measured (the quickest block of a large product, printed above).
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: python_matmul
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: _matmul_call
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: product

# sphinx_gallery_start_ignore
SIDES = [16, 32, 64, 256, 1024, 2048]
LOOP_SIDES, largest_side = SIDES[:3], SIDES[-1]
loop_claim = Faster("numpy", "python-loops", by=1000)
large_product = takes_at_most("eager", "numpy", 1.1)
# Extra processes go to the claims behind the short answer's advice, within the chapter's
# budget of them; this one is a finding, judged on the usual three.
products = {
    n: workers.run(
        vz.MATMUL,
        # The loop only where it takes milliseconds; BLAS at every side.
        None if n in LOOP_SIDES else ["numpy", "eager", "tf-function"],
        size=n,
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
# peak once a product is large enough to hide the cost of the call.

# sphinx_gallery_start_ignore
show(
    Collapsed(
        f"Every BLAS variant at side {largest_side}, in full",
        Comparison(products[largest_side], baseline="numpy"),
    )
)
# sphinx_gallery_end_ignore

# %%
# .. dropdown:: How the short answer's table carries the handbook's product to this machine
#
#    A product of side 10000 would take minutes per variant here (days for the loop), so the
#    table carries the measured times up by the n³ operation count: the loop's from its largest
#    measured side, BLAS's from side 2048, where arithmetic bounds it. The exponent of a power
#    law fitted to the loop's times, printed below, checks the carry: the closer to 3, the more
#    of the time is arithmetic.

# sphinx_gallery_start_ignore
HANDBOOK_SIDE = 10_000
loop_times = [pick(products[n], "python-loops")[0].median_s for n in LOOP_SIDES]
exponent, _ = np.polyfit(np.log(LOOP_SIDES), np.log(loop_times), 1)
loop_at_handbook = loop_times[-1] * (HANDBOOK_SIDE / LOOP_SIDES[-1]) ** 3
print(f"Python loop: time ∝ side^{exponent:.2f} over sides {LOOP_SIDES} (fitted)")
scale_up = (HANDBOOK_SIDE / largest_side) ** 3
carried = {m.label: m.median_s * scale_up for m in products[largest_side]}
handbook = Table(
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
show(
    Collapsed(
        "The handbook's product carried to this machine (the short answer's table)",
        handbook,
    )
)
# sphinx_gallery_end_ignore

# %%
# The checks: the loop against NumPy at the loop's largest side, and the products at side 2048:

# sphinx_gallery_start_ignore
loop_checked = loop_claim.check(products[LOOP_SIDES[-1]])
large_checked = large_product.check(products[largest_side])
show(ClaimReport([loop_checked, large_checked]))
# sphinx_gallery_end_ignore

# %%
# Batched products: a loop, or one operation?
# -------------------------------------------
#
# The handbook's second example, at a twentieth of its size: 50 matrices of 100 × 1000, each
# times one 1000 × 1000 matrix. Five forms: the loop with ``tf.stack`` (``loop-stack``), one
# ``tf.einsum`` (``einsum``), one ``tf.matmul`` broadcasting the matrix over the batch
# (``broadcast-matmul``), ``tf.vectorized_map`` (``vectorized-map``) and ``tf.map_fn``
# (``map-fn``), each eagerly; the loop and ``einsum`` also inside a ``tf.function``
# (``loop-stack-tf-function``, ``einsum-tf-function``).
#
# .. dropdown:: The code being timed
#
#    ``tf.vectorized_map`` turns the loop body written for one matrix into batch operations;
#    ``tf.map_fn`` runs that body once per matrix in a graph loop.
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
wrapped = takes_at_most("einsum", "einsum-tf-function", 1.25)
batched_claims = [one_op, vectorized, wrapped]
# A call takes tens of milliseconds (the table below), one call a block: five blocks a process, more
# where a claim needs them. The machine's peak, a float32 product of side 2048, is timed in turns
# with the forms, in the same processes, so that each form's share of it below carries the peak's
# own variation too. Inside a tf.function only the loop, where tracing may change what a call costs,
# and einsum, the handbook's last advice: each form costs the build seconds a process.
forms = [
    *vz.BATCHED_FORMS,
    *(form + vz.IN_FUNCTION for form in ("loop-stack", "einsum")),
]
timed = workers.run(
    vz.BATCHED_MATMUL, forms, settle=batched_claims, quick=True, peak=True
)
Comparison(timed, baseline="loop-stack")

(peak_m,) = pick(timed, limits.PEAK)
batched = [m for m in timed if m is not peak_m]
einsum_m, loop_m = pick(batched, "einsum", "loop-stack")
# sphinx_gallery_end_ignore

# %%
# As arithmetic per second:

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
# The last claim below sets einsum's rate against the peak's product, timed in turns with the
# forms in the same processes:

# sphinx_gallery_start_ignore
# Einsum, the form the page advises, not whichever form was fastest here: the forms may tie.
peak_share = Share(einsum_m.label, limits.PEAK, 0.75, batch_flops, limits.PEAK_FLOPS)
peak_claim = peak_share.check(timed)
batched_checked = {claim: claim.check(batched) for claim in batched_claims}
show(ClaimReport([*batched_checked.values(), peak_claim]))
# sphinx_gallery_end_ignore

# %%
# The peak's product in these processes, and each form's rate against it:

# sphinx_gallery_start_ignore
print(
    f"{limits.PEAK}: {gflops(limits.PEAK_FLOPS, peak_m.median_s)} "
    f"(processes: {', '.join(gflops(limits.PEAK_FLOPS, s) for s in peak_m.process_median_s)})"
)
for m in batched:
    # Each form's share as the claim above works it out: process by process.
    share = Share(m.label, limits.PEAK, 0.75, batch_flops, limits.PEAK_FLOPS).check(
        timed
    )
    print(f"{m.label:29s} {gflops(batch_flops, m.median_s):>13s}, {share.effect}")
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
# writes its output back. Two chains on float32 vectors, ten rounds of x ← 0.9·x + 0.1 and ten
# of x ← tanh(0.9·x + 0.1), in NumPy (``numpy``), eagerly (``eager``), as one ``tf.function``
# (``tf-function``), and compiled by XLA (``xla``), which fuses a chain into one loop that
# reads x once and writes the result once. The rate counts just that least traffic, 8 bytes an
# element, against the memory bandwidth.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: affine_chain
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: small_ops
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: _chain_call

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
# At ten million elements, each variant's share of the bandwidth; then the checks, the last at
# a thousand elements, where a call's fixed cost outweighs the arithmetic:

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
show(ClaimReport([*fused_checked.values(), small_checked]))
# sphinx_gallery_end_ignore

# %%
# Fusion saves passes over memory, so it pays where memory is the limit; a chain limited by its
# arithmetic gains nothing from it. Which limit a chain meets shows in each variant's share of
# the bandwidth (above) and the cores it kept busy (CPU time over wall time, per block):

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
# One epoch of 32 small training steps, fed four ways: preprocessed in NumPy batch by batch as
# the loop needs it (``numpy-each-step``); preprocessed and converted to tensors once, before
# training (``preloaded``); a ``tf.data`` pipeline from ``from_tensor_slices`` (``tf-data``);
# and ``Dataset.from_generator`` over the NumPy batches (``from-generator``), which users have
# reported to be more than ten times slower than ``from_tensor_slices``
# (`tensorflow/tensorflow#56258 <https://github.com/tensorflow/tensorflow/issues/56258>`_). The
# time is per step; the network's hidden layer grows from 16 to 2048 units to move the step from
# one bound by feeding to one bound by its arithmetic. (:doc:`The tf.data chapter
# </auto_examples/tf_data/plot_tf_data>` takes a pipeline apart.)
#
# .. dropdown:: The code being timed
#
#    Batches of 128 rows of 256 raw features are centred, scaled and cast to float32 before
#    they reach a two-layer network; every variant trains the same weights. The pipeline is
#    ``from_tensor_slices``, ``batch``, ``map(num_parallel_calls=AUTOTUNE)``, ``cache`` and
#    ``prefetch``.
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
show(
    Collapsed(
        f"Time per training step at {small_model} hidden units, each way of feeding",
        Comparison(feeding[small_model], baseline="preloaded"),
    )
)
# sphinx_gallery_end_ignore

# %%
# What feeding costs: a variant's step time beyond the preloaded one's, as a share of its step.
# Where the share falls towards zero, arithmetic bounds the step and no pipeline can speed it up.

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
# Feeding alone, with no training step (each source drained for one epoch, per batch): what the
# report of a tenfold gap compared, and what a training step pays on top of its arithmetic.

# sphinx_gallery_start_ignore
generator_report = Faster("tf-data", "from-generator", by=10)
# The advice itself, apart from the report's figure: is the pipeline faster at all?
generator_advice = Faster("tf-data", "from-generator")
sources = workers.run(vz.INPUT_ONLY, settle=[generator_report, generator_advice])
show(
    Collapsed(
        "Time per batch with no training step, each way of feeding",
        Comparison(sources, baseline="preloaded"),
    )
)
# sphinx_gallery_end_ignore

# %%
# The checks on feeding: in a training step, ``preloaded`` against ``numpy-each-step``, and
# ``from_generator``'s share of the step as the model grows (the share is 1 − 1/(its step time
# over preloaded data's), so it falls as that ratio does); feeding alone, the pipeline against
# ``from_generator``, at the reported tenfold and at any margin:

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
source_checked = generator_advice.check(sources)
show(
    ClaimReport(
        [*feeding_checked.values(), generator_report.check(sources), source_checked]
    )
)
# sphinx_gallery_end_ignore

# %%
# Each variant's feeding cost per step at 16 hidden units, beside its cost per batch alone:

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
# Iterated from Python, a ``tf.data`` pipeline has a fixed cost per batch, and so has slicing a
# NumPy array: the larger of the two columns above decides which feeds a small step faster. A
# pipeline earns its keep where it overlaps loading with training, or where the loop over
# batches runs inside TensorFlow, as ``Model.fit``'s does.

# %%
# Profile before optimizing
# -------------------------
#
# The handbook's first advice, kept for last so that no profiler runs in a process before it
# times: measure where the time goes. TensorFlow's profiler gives it op by op; here, five calls
# of ``loop-stack-tf-function`` traced in one of the page's fresh processes after the timing
# above (an op's *self time* leaves out the ops nested in it).
#
# .. literalinclude:: /../perfguide/workloads/vectorization.py
#    :pyobject: loop_stack

# sphinx_gallery_start_ignore
logdir = results.measurements_dir() / "vectorization.profile"
loop_in_function = "loop-stack" + vz.IN_FUNCTION
batch = vz.BATCHED_MATMUL.default_size
trace = Path(workers.trace(0, vz.BATCHED_MATMUL, loop_in_function, batch, str(logdir)))
op_table = OpTable.from_trace(trace, top=5)
show(Collapsed("The five op types that took the most time in the trace", op_table))
# sphinx_gallery_end_ignore

# %%
# If the products take nearly all of the time, the loop's own cost (the slices and the stack) is
# not what to optimize. Their share of op time here (wall time: in a ``tf.function`` the
# executor runs independent products side by side on the two cores):

# sphinx_gallery_start_ignore
products_time = next(t for t in op_table.times if "MatMul" in t.op)
print(f"{products_time.op}: {products_time.share:.1%} of op time")
profile_claim = share_of_time(
    "the loop's matrix products take at least 90 % of its op time",
    op_table.share_per_call(lambda op: op == products_time.op),
    at_least=0.9,
)
show(Collapsed("The check on the products' share", ClaimReport([profile_claim])))
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
# The handbook warns that a TensorFlow binary may not use the CPU's vector instructions. Today,
# oneDNN, which runs the heavy kernels (products, convolutions) on x86, picks its instruction
# set at run time; the rest of TensorFlow is compiled for a baseline and says at import which
# instructions it leaves unused. On this machine:

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
# ``TF_ENABLE_ONEDNN_OPTS`` sets oneDNN's kernels against this CPU's default (TensorFlow 2.21
# turns them on only on some CPUs: ``oneDNN off`` where the default is on, ``oneDNN on`` where
# it is off), and ``TF_NUM_INTRAOP_THREADS=1`` limits each op to one thread
# (``1 intra-op thread``); ``default`` sets neither. Each setting gets three fresh processes,
# taking turns round by round (:func:`perfguide.processes.pool.run_across`), for a product of
# side 1024 and a 3 × 3 convolution of eight 64 × 64 images with 32 channels:

# sphinx_gallery_start_ignore
ONEDNN = "oneDNN off" if env["onednn_enabled"] else "oneDNN on"
SETTINGS = {
    "default": {},
    ONEDNN: {"TF_ENABLE_ONEDNN_OPTS": "0" if ONEDNN == "oneDNN off" else "1"},
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
show(
    Collapsed(
        "Each fresh process's time per call under each setting",
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
        ),
    )
)
# sphinx_gallery_end_ignore

# %%
# Each claim sets one setting's processes against the other's, its interval carrying both
# spreads:

# sphinx_gallery_start_ignore
settings_checked = {
    "threads": Faster("default", "1 intra-op thread").check(by_kernel[vz.MATMUL.name]),
    "onednn": (
        Faster("default", ONEDNN)
        if ONEDNN == "oneDNN off"
        else Faster(ONEDNN, "default")
    ).check(by_kernel[vz.CONV2D.name]),
}
show(ClaimReport(list(settings_checked.values())))
# sphinx_gallery_end_ignore

# %%
# Short answer
# ------------
#
# The box at the top of this page, built from the checks above.

# sphinx_gallery_start_ignore
answer = ShortAnswer(
    "A lot where the loop runs in Python, less once the work is in big kernels. A BLAS product "
    f"against the triple loop at side {LOOP_SIDES[-1]}: {loop_checked.quoted}. One einsum "
    f"against a loop of products with tf.stack: {batched_checked[one_op].quoted}; its rate "
    f"reached {peak_claim.quoted}. XLA's fusion against "
    "tf.function on a chain of cheap element-wise ops, bound by memory: "
    f"{fused_checked['affine'].quoted}. Dataset.from_tensor_slices against "
    f"Dataset.from_generator, feeding batches alone: {source_checked.quoted}.",
    [
        Recommendation(
            "Use one BLAS-backed product, never a Python loop",
            loop_checked,
            Change("a matrix product", "one BLAS-backed op"),
        ),
        Recommendation(
            "Write a batch of products as one einsum",
            batched_checked[one_op],
            Change("a batch of products", "one einsum"),
            recipe="one-einsum-instead-of-a-loop-of-products",
        ),
        Recommendation(
            "Prefer vectorized_map to map_fn",
            batched_checked[vectorized],
            Change("an op mapped over a batch", "vectorized_map"),
        ),
        Recommendation(
            "Keep a single large op eager: tf.function around it gains little",
            batched_checked[wrapped],
            Change("tf.function", "off", work="a single large op"),
        ),
        Recommendation(
            "Fuse cheap element-wise chains with XLA",
            fused_checked["affine"],
            Change("jit_compile", "True", work="a chain of cheap element-wise ops"),
            recipe="fuse-an-element-wise-chain-with-xla",
        ),
        Recommendation(
            "Preprocess and convert the data once, before training",
            feeding_checked[preload],
            Change("preprocessing", "once, before training"),
            recipe="feed-from-tensor-slices-not-from-generator",
        ),
        Recommendation(
            "Use from_tensor_slices, not from_generator",
            source_checked,
            Change("a dataset's source", "from_tensor_slices", data="arrays in memory"),
            recipe="feed-from-tensor-slices-not-from-generator",
        ),
        Recommendation(
            "Leave TensorFlow's intra-op threads at their default",
            settings_checked["threads"],
            Change(
                "intra-op threads", "the default", cpu=f"{env['usable_cores']} cores"
            ),
        ),
        Recommendation(
            "Keep oneDNN on for convolutions"
            if ONEDNN == "oneDNN off"
            else "Turn oneDNN on for convolutions (TF_ENABLE_ONEDNN_OPTS=1)",
            settings_checked["onednn"],
            Change("TF_ENABLE_ONEDNN_OPTS", "1", work="convolutions"),
        ),
    ],
    handbook,
)
answer.publish("vectorization")
print(answer)
# sphinx_gallery_end_ignore

# %%
# Take the numbers with you
# -------------------------
#
# Everything measured here, with the environment record, is published as
# `vectorization.json <../../measurements/vectorization.json>`_, in the shape
# ``python -m perfguide run batched-matmul --json PATH`` writes. To rerun this page, install the
# guide's package from a checkout of its repository (``python -m pip install -e ".[cpu]"``) and
# run the script downloaded below. The :doc:`build machine </environment>` page describes the
# measuring machine.

# sphinx_gallery_start_ignore
published = (
    sources
    + [m for ms in by_kernel.values() for m in ms]
    + every_product
    + timed
    + [m for ms in chains.values() for m in ms]
    + [m for ms in feeding.values() for m in ms]
)
print(results.publish("vectorization", env, published))
workers.close()
# sphinx_gallery_end_ignore


# %%
# Recipes
# -------
#
# The practices this page advises, each checked against the code it replaces (their speed-ups
# were measured on this page's 2-core CPU).
#
# One einsum instead of a loop of products
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# One ``tf.einsum`` computes every product of the batch in one op, the same numbers as the loop
# of ``tf.matmul`` with ``tf.stack``.
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
a = tf.constant(rng.random((8, 100, 300), dtype=np.float32))  # 8 matrices of 100 × 300
b = tf.constant(rng.random((300, 200), dtype=np.float32))

batched = tf.einsum("ijk,kl->ijl", a, b)  # every product in one op

looped = tf.stack([tf.matmul(a[i], b) for i in range(a.shape[0])])
np.testing.assert_allclose(batched, looped, rtol=1e-4)

# %%
# Fuse an element-wise chain with XLA
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# ``jit_compile=True`` turns a chain of cheap element-wise ops into one pass over memory: for
# large arrays, where memory bounds the chain (the checks above show where it paid here).
import numpy as np
import tensorflow as tf


@tf.function(jit_compile=True)
def affine_chain(x):
    for _ in range(10):
        x = x * 0.9 + 0.1
    return x


x = np.random.default_rng(0).random(10**6, dtype=np.float32)
expected = x
for _ in range(10):
    expected = expected * np.float32(0.9) + np.float32(0.1)
np.testing.assert_allclose(affine_chain(tf.constant(x)), expected, rtol=1e-5)

# %%
# Feed from_tensor_slices, not from_generator
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Preprocess the arrays once, before training, and slice them with ``from_tensor_slices``: the
# same batches a Python generator would yield, without calling Python for each.
import numpy as np
import tensorflow as tf

raw = np.random.default_rng(0).normal(50.0, 10.0, (1024, 256))
x = ((raw - 50.0) / 10.0).astype(np.float32)  # preprocessed once
y = np.zeros((1024, 1), np.float32)
dataset = (
    tf.data.Dataset.from_tensor_slices((x, y)).batch(128).prefetch(tf.data.AUTOTUNE)
)


def numpy_batches():  # what Dataset.from_generator would wrap
    for start in range(0, len(x), 128):
        yield x[start : start + 128], y[start : start + 128]


for (x_batch, y_batch), (x_numpy, y_numpy) in zip(
    dataset, numpy_batches(), strict=True
):
    np.testing.assert_array_equal(x_batch, x_numpy)
    np.testing.assert_array_equal(y_batch, y_numpy)
