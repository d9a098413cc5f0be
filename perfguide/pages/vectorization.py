"""The vectorization chapter: one product from Python loops to BLAS, a batch of products, chains
of element-wise ops, feeding the data, a profile, the CPU settings, and the short answer built
from their checks.

Long as its chapter is: every section reads the same workers' measurements and the machine's
limits, in a few small functions each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from perfguide.measure import limits
from perfguide.measure.limits import MachineLimits
from perfguide.measure.measurement import Measurement, pick
from perfguide.measure.profile import OpTime
from perfguide.processes.fresh import tensorflow_instruction_sets
from perfguide.processes.pool import Workers, run_across
from perfguide.report.format import format_count, format_seconds, three_figures
from perfguide.report.plots import bandwidth_limit, peak_limit, rate_bars, rate_plot, scaling_plot
from perfguide.report.publishing import results
from perfguide.report.publishing.answers import Change, Recommendation, ShortAnswer
from perfguide.report.tables.ops import OpTable
from perfguide.report.tables.table import Table
from perfguide.report.verdicts.claims import (
    Claim,
    ClaimReport,
    Faster,
    Judged,
    Share,
    falls,
    in_common,
    ratio_interval,
    share_of_time,
    takes_at_most,
)
from perfguide.workloads import vectorization as vz
from perfguide.workloads.eager import graph_op_counts

Measured = Mapping[Hashable, Sequence[Measurement]]


def gflops(flops: float, seconds: float) -> str:
    """``flops`` done in ``seconds``, as a rate: "122 GFLOP/s"."""
    return f"{three_figures(flops / seconds / 1e9)} GFLOP/s"


# -- One product: loops to BLAS -------------------------------------------------------------------

#: The sides of the square products; the Python loop is timed only at the smallest three.
SIDES = (16, 32, 64, 256, 2048)
LOOP_SIDES, LARGEST_SIDE = SIDES[:3], SIDES[-1]
BLAS_VARIANTS = ("numpy", "eager", "tf-function")
BLAS_VS_LOOP = Judged(Faster("numpy", "python-loops", by=1000), part=LOOP_SIDES[-1])
#: The checks on one product: the loop at its largest side, BLAS at the largest of all.
PRODUCT_CLAIMS = (BLAS_VS_LOOP, Judged(takes_at_most("eager", "numpy", 1.1), part=LARGEST_SIDE))
#: The side of the handbook's product.
HANDBOOK_SIDE = 10_000


def time_products(workers: Workers) -> dict[int, list[Measurement]]:
    """Each of :data:`SIDES`' square products, by side: the Python loop only where it takes
    milliseconds, BLAS at every side; timed in full only at the largest side, where the check on
    eager against NumPy is close, quick elsewhere: the plot needs only the trend, and the loop's
    check (over ten thousand times against a claimed thousand) no more than five blocks. No
    claim here gets extra processes: they go to the claims behind the short answer's advice,
    within the chapter's budget of them; this one is a finding, judged on the usual three."""
    return {
        side: workers.run(
            vz.MATMUL,
            None if side in LOOP_SIDES else BLAS_VARIANTS,
            size=side,
            quick=side != LARGEST_SIDE,
        )
        for side in SIDES
    }


def products_plot(products: Mapping[int, Sequence[Measurement]], machine: MachineLimits) -> Axes:
    """Arithmetic per second of each variant at each side, under the machine's peak."""
    ax = rate_plot(
        [m for measured in products.values() for m in measured],
        vz.MATMUL.size_name,
        lambda m: vz.matmul_flops(m.size),
        peak_limit(machine),
    )
    ax.set_title("One square float32 product: arithmetic per second")
    return ax


def _loop_times(products: Mapping[int, Sequence[Measurement]]) -> list[float]:
    return [pick(products[side], "python-loops")[0].median_s for side in LOOP_SIDES]


def loop_fit(products: Mapping[int, Sequence[Measurement]]) -> str:
    """The exponent of a power law fitted to the loop's times: the closer to 3, the more of the
    time is arithmetic, and the better the n³ carry of :func:`handbook_table` holds."""
    exponent, _ = np.polyfit(np.log(LOOP_SIDES), np.log(_loop_times(products)), 1)
    sides = list(LOOP_SIDES)
    return f"Python loop: time ∝ side^{exponent:.2f} over sides {sides} (fitted)"


def handbook_table(products: Mapping[int, Sequence[Measurement]]) -> Table:
    """The handbook's product beside this machine's, carried up by the n³ operation count: the
    loop's from its largest side, BLAS's from the largest side (the short answer's table)."""
    loop_at_handbook = _loop_times(products)[-1] * (HANDBOOK_SIDE / LOOP_SIDES[-1]) ** 3
    scale_up = (HANDBOOK_SIDE / LARGEST_SIDE) ** 3
    carried = {m.label: m.median_s * scale_up for m in products[LARGEST_SIDE]}
    side = format_count(HANDBOOK_SIDE)
    header = [
        "code",
        "handbook (quoted; float64, i9-9900K, RTX 2060 SUPER)",
        "this machine (float32)",
    ]
    rows = [
        [
            "Python triple loop",
            "~700,000 s",
            f"~{format_seconds(loop_at_handbook)} (from side {LOOP_SIDES[-1]})",
        ],
        ["Cython loop", "~8,400 s", "not measured"],
        ["np.dot", "5.61 s", f"~{format_seconds(carried['numpy'])} (from side {LARGEST_SIDE})"],
        ["tf.matmul", "0.77 s (GPU, not waited for)", f"~{format_seconds(carried['eager'])}"],
    ]
    return Table(f"A {side} × {side} product", header, rows)


# -- A batch of products ---------------------------------------------------------------------------

ONE_EINSUM = Faster("einsum", "loop-stack")
VECTORIZED = Faster("vectorized-map", "map-fn")
# The handbook's last advice: is tf.function worth its extra code around one big op? Eager costs
# at most a quarter more if not (closer to "as fast" three processes cannot tell).
WRAPPED = takes_at_most("einsum", "einsum-tf-function", 1.25)
#: The forms against each other: given more processes while undecided.
FORM_CLAIMS = (ONE_EINSUM, VECTORIZED, WRAPPED)
#: The work of one batch, and the claim on einsum's rate against the peak's product timed in
#: turns with it: einsum, the form the page advises, not whichever form was fastest (the forms
#: may tie).
BATCH_FLOPS = vz.batched_flops(vz.BATCHED_MATMUL.default_size)
EINSUM_AT_PEAK = Share("einsum", limits.PEAK, 0.75, BATCH_FLOPS, limits.PEAK_FLOPS)
#: The checks on the batch of products.
BATCHED_CLAIMS = (*FORM_CLAIMS, EINSUM_AT_PEAK)
#: Every form eagerly; inside a tf.function only the loop, where tracing may change what a call
#: costs, and einsum, the handbook's last advice: each form costs the build seconds a process.
BATCHED_VARIANTS = (
    *vz.BATCHED_FORMS,
    *(form + vz.IN_FUNCTION for form in ("loop-stack", "einsum")),
)


def time_batched(workers: Workers) -> list[Measurement]:
    """:data:`BATCHED_VARIANTS` and the machine's peak (a float32 product of side 2048), timed
    in turns in the same processes, so that each form's share of the peak carries the peak's own
    variation too. A call takes tens of milliseconds: one call a block, five blocks a process,
    more processes where a claim of :data:`FORM_CLAIMS` needs them."""
    return workers.run(
        vz.BATCHED_MATMUL, BATCHED_VARIANTS, settle=FORM_CLAIMS, quick=True, peak=True
    )


def without_peak(timed: Sequence[Measurement]) -> list[Measurement]:
    """The batched forms of ``timed``, the peak's product left out."""
    return [m for m in timed if m.label != limits.PEAK]


def batched_plot(timed: Sequence[Measurement], machine: MachineLimits) -> Axes:
    """Each form's arithmetic per second as a bar, against the machine's peak."""
    ax = rate_bars(
        without_peak(timed),
        lambda m: vz.batched_flops(m.size),
        peak_limit(machine),
    )
    ax.set_title(
        f"{vz.BATCHED_MATMUL.default_size} products of ({vz.ROWS} × {vz.INNER}) @ "
        f"({vz.INNER} × {vz.COLUMNS})"
    )
    return ax


def peak_rates(timed: Sequence[Measurement]) -> str:
    """The peak's rate in these processes (overall and each process's), then each form's rate
    and its share of the peak, worked out process by process as :data:`EINSUM_AT_PEAK` is."""
    (peak,) = pick(timed, limits.PEAK)
    processes = ", ".join(gflops(limits.PEAK_FLOPS, s) for s in peak.process_median_s)
    lines = [f"{limits.PEAK}: {gflops(limits.PEAK_FLOPS, peak.median_s)} (processes: {processes})"]
    for m in without_peak(timed):
        share = dataclasses.replace(EINSUM_AT_PEAK, variant=m.label).check(timed)
        lines.append(f"{m.label:29s} {gflops(BATCH_FLOPS, m.median_s):>13s}, {share.effect}")
    return "\n".join(lines)


def ops_of_each_form() -> str:
    """The ops each batched form runs on a batch of two, a line a form."""
    lines = []
    for form, fn in vz.BATCHED_FORMS.items():
        counts = graph_op_counts(fn, *vz.make_batch(2))
        ops = ", ".join(f"{count} {name}" for name, count in sorted(counts.items()))
        lines.append(f"{form:17s} (2 matrices): {ops}")
    return "\n".join(lines)


# -- Element-wise chains ---------------------------------------------------------------------------

CHAINS = (vz.AFFINE, vz.TANH)
CHAIN_SIZES = (10**3, 10**5, 10**7)
LARGEST_CHAIN = CHAIN_SIZES[-1]
FUSED = {
    vz.AFFINE.name: Faster("xla", "tf-function", by=5),
    vz.TANH.name: Faster("xla", "tf-function"),
}
AFFINE_FUSED, TANH_FUSED = (
    Judged(fused, part=(name, LARGEST_CHAIN)) for name, fused in FUSED.items()
)
SMALL_CHAIN = Faster("numpy", "xla")
#: The checks on the chains: fusion at ten million elements, and NumPy at a thousand.
CHAIN_CLAIMS = (
    AFFINE_FUSED,
    TANH_FUSED,
    Judged(SMALL_CHAIN, part=(vz.AFFINE.name, CHAIN_SIZES[0])),
)


def time_chains(workers: Workers) -> dict[tuple[str, int], list[Measurement]]:
    """Every variant of each chain at each of :data:`CHAIN_SIZES`, by (chain, size): quick runs
    throughout (a check still gets at least five blocks a process), more processes only for
    the claim behind the short answer's advice, the affine chain's fusion at the largest size;
    the tanh chain's fusion and NumPy against XLA are findings, judged on the usual three."""
    chains = {}
    for chain in CHAINS:
        for size in CHAIN_SIZES:
            settle = [AFFINE_FUSED.claim] if (chain.name, size) == AFFINE_FUSED.part else []
            chains[chain.name, size] = workers.run(chain, size=size, settle=settle, quick=True)
    return chains


def chains_plot(chains: Measured, machine: MachineLimits) -> Figure:
    """Each chain's bytes per second (x read once, written once) against the size, side by
    side, under the machine's memory bandwidth."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), layout="constrained", sharey=True)
    for ax, chain in zip(axes, CHAINS, strict=True):
        rate_plot(
            [m for size in CHAIN_SIZES for m in chains[chain.name, size]],
            chain.size_name,
            lambda m: vz.chain_bytes(m.size),
            bandwidth_limit(machine),
            ax=ax,
        )
        ax.set_title(chain.name)
    return fig


def _largest(chains: Measured) -> list[tuple[str, Measurement]]:
    return [(chain.name, m) for chain in CHAINS for m in chains[chain.name, LARGEST_CHAIN]]


def bandwidth_shares(chains: Measured, machine: MachineLimits) -> str:
    """At the largest size, each chain's variants' share of the memory bandwidth, a line each."""
    return "\n".join(
        f"{chain:19s} {m.label:12s} "
        f"{machine.bandwidth_share(vz.chain_bytes(m.size), m.median_s):6.1%} "
        "of the memory bandwidth"
        for chain, m in _largest(chains)
    )


def cores_busy(chains: Measured) -> str:
    """At the largest size, each chain's variants' time and the cores they kept busy."""
    return "\n".join(
        f"{chain:19s} {m.label:12s} {format_seconds(m.median_s):>9s} on {m.cores_busy:.1f} cores"
        for chain, m in _largest(chains)
    )


# -- Feeding the data ------------------------------------------------------------------------------

HIDDEN_SIZES = (16, 2048)
SMALL_MODEL, LARGE_MODEL = HIDDEN_SIZES[0], HIDDEN_SIZES[-1]
PRELOAD = Faster("preloaded", "numpy-each-step")
# tensorflow#56258's report of a tenfold gap, and the advice itself apart from the report's
# figure: is the pipeline faster at all?
GENERATOR_REPORT = Faster("tf-data", "from-generator", by=10)
GENERATOR_ADVICE = Faster("tf-data", "from-generator")
#: The part of :func:`feeding_claims`' measurements fed with no training step.
ALONE = "no training step"


@dataclasses.dataclass(frozen=True)
class GeneratorShareFalls:
    """That from_generator's share of a step falls as the model grows: its share is 1 − 1/(its
    step time over preloaded data's), so it falls as that ratio does, judged on the ratio."""

    statement = (
        f"from_generator's share of a step falls from {SMALL_MODEL} to {LARGE_MODEL} hidden units"
    )

    @property
    def labels(self) -> tuple[str, str]:
        return "from-generator", "preloaded"

    def check(self, feeding: Measured) -> Claim:
        ratios = (
            ratio_interval(*in_common(*pick(feeding[hidden], *self.labels)))
            for hidden in (SMALL_MODEL, LARGE_MODEL)
        )
        return falls(self.statement, *ratios, "from_generator's step time over preloaded data's")


SOURCE_ADVICE = Judged(GENERATOR_ADVICE, part=ALONE)
PRELOAD_SMALL = Judged(PRELOAD, part=SMALL_MODEL)
#: The checks on feeding: in a training step, then feeding alone.
FEEDING_CLAIMS = (
    PRELOAD_SMALL,
    GeneratorShareFalls(),
    Judged(GENERATOR_REPORT, part=ALONE),
    SOURCE_ADVICE,
)


def time_feeding(workers: Workers) -> dict[int, list[Measurement]]:
    """An epoch of training steps fed each way, by hidden units: in full at the small model,
    where the check reads, roughly at the large one, where only the trend across sizes
    matters."""
    return {
        hidden: workers.run(
            vz.INPUT_PIPELINE,
            size=hidden,
            settle=[PRELOAD] if hidden == SMALL_MODEL else [],
            quick=hidden != SMALL_MODEL,
        )
        for hidden in HIDDEN_SIZES
    }


def time_sources_alone(workers: Workers) -> list[Measurement]:
    """Each source drained for an epoch with no training step: quick, as an epoch takes tens of
    milliseconds at most and the sources differ severalfold; more processes only for the
    advice's claim, not for the report's tenfold figure, a finding."""
    return workers.run(vz.INPUT_ONLY, settle=[GENERATOR_ADVICE], quick=True)


def feeding_plot(feeding: Mapping[int, Sequence[Measurement]]) -> Axes:
    """Time per training step against the hidden units, one line a way of feeding."""
    ax = scaling_plot(
        [m for measured in feeding.values() for m in measured], vz.INPUT_PIPELINE.size_name
    )
    ax.set_title("Time per training step as the model grows")
    return ax


def feeding_costs(measurements: Sequence[Measurement]) -> dict[str, float]:
    """Each way's step time beyond the preloaded one's."""
    floor = pick(measurements, "preloaded")[0].median_s
    return {m.label: m.median_s - floor for m in measurements if m.label != "preloaded"}


def feeding_shares(feeding: Mapping[int, Sequence[Measurement]]) -> str:
    """At each model size, each way's feeding cost as a share of its step, a line a size."""
    lines = []
    for hidden, measured in feeding.items():
        steps = {m.label: m.median_s for m in measured}
        # A way measured as fast as the preloaded one or faster has no feeding cost to show.
        shares = ", ".join(
            f"{label} {f'{cost / steps[label]:.0%}' if cost > 0 else 'nothing measurable'}"
            for label, cost in feeding_costs(measured).items()
        )
        lines.append(f"{hidden:5d} hidden units: feeding takes {shares} of the step")
    return "\n".join(lines)


def feeding_claims(
    feeding: Mapping[int, Sequence[Measurement]], alone: Sequence[Measurement]
) -> ClaimReport:
    """:data:`FEEDING_CLAIMS` checked: on ``feeding`` (by hidden units), and on ``alone``, the
    same sources drained with no training step."""
    return ClaimReport.of(FEEDING_CLAIMS, {**feeding, ALONE: alone})


def costs_beside_alone(
    feeding: Mapping[int, Sequence[Measurement]], alone: Sequence[Measurement]
) -> str:
    """Each way's feeding cost per step at the small model, beside its time per batch alone."""
    per_batch = {m.label: m.median_s for m in alone}
    return "\n".join(
        f"{label:16s} {format_seconds(cost):>9s} per step beyond preloaded; "
        f"{format_seconds(per_batch[label]):>9s} per batch alone"
        for label, cost in feeding_costs(feeding[SMALL_MODEL]).items()
    )


# -- Profile before optimizing ---------------------------------------------------------------------

#: The folder of the loop's trace, beside the measurements.
PROFILE_DIR = "vectorization.profile"


def trace_the_loop(workers: Workers) -> Path:
    """The path of a profiler trace of ``loop-stack-tf-function`` on the default batch, taken
    in the first of ``workers`` after the timing (no profiler runs in a process before it
    times)."""
    logdir = results.measurements_dir() / PROFILE_DIR
    variant, batch = "loop-stack" + vz.IN_FUNCTION, vz.BATCHED_MATMUL.default_size
    return Path(workers.trace(0, vz.BATCHED_MATMUL, variant, batch, str(logdir)))


def products_op_time(op_table: OpTable) -> OpTime:
    """The products' row of the trace's op table."""
    return next(t for t in op_table.times if "MatMul" in t.op)


def products_share(op_table: OpTable) -> str:
    products = products_op_time(op_table)
    return f"{products.op}: {products.share:.1%} of op time"


def products_dominate(op_table: OpTable) -> Claim:
    """That the loop's products take at least 90 % of its op time, call by call."""
    products = products_op_time(op_table).op
    return share_of_time(
        "the loop's matrix products take at least 90 % of its op time",
        op_table.share_per_call(lambda op: op == products),
        at_least=0.9,
    )


# -- The TensorFlow build and this CPU -------------------------------------------------------------


def instruction_sets(env: Mapping[str, Any]) -> str:
    """The CPU's vector extensions, the instruction set oneDNN generated its kernels for, and
    the instructions the rest of TensorFlow was not compiled for."""
    instructions = tensorflow_instruction_sets()
    return (
        f"CPU vector extensions: {' '.join(env['cpu_vector_flags'])}\n"
        f"oneDNN kernels generated for: {instructions['onednn_kernels'] or '(not reported)'}\n"
        "not compiled for, elsewhere: "
        f"{instructions['not_compiled_for_elsewhere'] or '(none)'}"
    )


def onednn_setting(env: Mapping[str, Any]) -> str:
    """The setting that turns oneDNN's kernels against this CPU's default."""
    return "oneDNN off" if env["onednn_enabled"] else "oneDNN on"


def settings(env: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """The process-wide settings compared, by name: the environment variables each sets."""
    onednn = onednn_setting(env)
    return {
        "default": {},
        onednn: {"TF_ENABLE_ONEDNN_OPTS": "0" if onednn == "oneDNN off" else "1"},
        "1 intra-op thread": {"TF_NUM_INTRAOP_THREADS": "1"},
    }


#: The kernels timed under each setting, and their sizes.
KERNELS = ((vz.MATMUL, 1024), (vz.CONV2D, vz.CONV2D.default_size))
FEWER_THREADS = Judged(Faster("default", "1 intra-op thread"), part=vz.MATMUL.name)
#: Fresh processes per setting. Settings are compared across processes, where the machine's
#: drift between runs outweighs the processes' own spread in a claim's interval, and a median of
#: three varies about as much as a mean of two: a third process a setting would leave the
#: interval as wide, for the seconds of one more TensorFlow import.
SETTING_PROCESSES = 2


def onednn_claim(env: Mapping[str, Any]) -> Judged:
    """That the convolution runs faster with oneDNN on than off, whichever is the default."""
    onednn = onednn_setting(env)
    if onednn == "oneDNN off":
        return Judged(Faster("default", onednn), part=vz.CONV2D.name)
    return Judged(Faster(onednn, "default"), part=vz.CONV2D.name)


def setting_claims(env: Mapping[str, Any]) -> tuple[Judged, Judged]:
    """The checks on the settings, each on one kernel."""
    return FEWER_THREADS, onednn_claim(env)


@dataclasses.dataclass(frozen=True)
class SettingRuns:
    """Each kernel of :data:`KERNELS` timed under each setting, by kernel name, and whether
    oneDNN was on in each setting's processes."""

    by_kernel: dict[str, list[Measurement]]
    onednn_by_setting: dict[str, bool]

    @property
    def settings(self) -> list[str]:
        return list(self.onednn_by_setting)

    def __str__(self) -> str:
        return "\n".join(
            f"{name:18s} oneDNN {'on' if enabled else 'off'}"
            for name, enabled in self.onednn_by_setting.items()
        )


def time_settings(device: str, by_name: Mapping[str, Mapping[str, str]]) -> SettingRuns:
    """The kernels' ``tf-function`` variant timed by :data:`SETTING_PROCESSES` fresh processes
    per setting of ``by_name``, taking turns round by round
    (:func:`~perfguide.processes.pool.run_across`), quick: only each process's median enters a
    claim's interval, not its blocks' spread."""
    groups = {
        name: Workers(SETTING_PROCESSES, device=device, settings=s) for name, s in by_name.items()
    }
    try:
        by_kernel = {
            kernel.name: run_across(groups, kernel, "tf-function", size=size, quick=True)
            for kernel, size in KERNELS
        }
        onednn = {name: group.environment["onednn_enabled"] for name, group in groups.items()}
    finally:
        for group in groups.values():
            group.close()
    return SettingRuns(by_kernel, onednn)


def settings_table(runs: SettingRuns) -> Table:
    """Each fresh process's median time per call, and the cores busy, kernel by setting."""
    rows = [
        [kernel]
        + [
            ", ".join(map(format_seconds, m.process_median_s)) + f" on {m.cores_busy:.1f} cores"
            for m in measured
        ]
        for kernel, measured in runs.by_kernel.items()
    ]
    return Table(
        "Each fresh process's median time per call, and the cores the processes kept busy",
        ["kernel", *runs.settings],
        rows,
    )


# -- The short answer and the published measurements ---------------------------------------------


def _answer(
    product_checks: ClaimReport,
    batched_checks: ClaimReport,
    chain_checks: ClaimReport,
    feeding_checks: ClaimReport,
) -> str:
    return (
        "A lot where the loop runs in Python, less once the work is in big kernels. A product "
        f"of side {LOOP_SIDES[-1]}: {product_checks[BLAS_VS_LOOP].stated}. A batch of "
        f"products: {batched_checks[ONE_EINSUM].stated}; the einsum's rate reached "
        f"{batched_checks[EINSUM_AT_PEAK].quoted}. A chain of cheap element-wise ops, bound by "
        f"memory: {chain_checks[AFFINE_FUSED].stated}. Feeding batches alone: "
        f"{feeding_checks[SOURCE_ADVICE].stated}."
    )


def short_answer(
    product_checks: ClaimReport,
    batched_checks: ClaimReport,
    chain_checks: ClaimReport,
    feeding_checks: ClaimReport,
    setting_checks: ClaimReport,
    handbook: Table,
    env: Mapping[str, Any],
) -> ShortAnswer:
    """The box atop the page, from each section's checks (:data:`PRODUCT_CLAIMS`,
    :data:`BATCHED_CLAIMS`, :data:`CHAIN_CLAIMS`,
    :func:`feeding_claims`, :func:`setting_claims`, each checked by :meth:`ClaimReport.of`),
    with ``handbook``'s product (:func:`handbook_table`) as its table."""
    slices = "feed-from-tensor-slices-not-from-generator"
    advice = [
        Recommendation(
            "Use one BLAS-backed product, never a Python loop",
            product_checks[BLAS_VS_LOOP],
            Change("a matrix product", "one BLAS-backed op"),
        ),
        Recommendation(
            "Write a batch of products as one einsum",
            batched_checks[ONE_EINSUM],
            Change("a batch of products", "one einsum", cpu=f"{env['usable_cores']} cores"),
            recipe="one-einsum-instead-of-a-loop-of-products",
        ),
        Recommendation(
            "Prefer vectorized_map to map_fn",
            batched_checks[VECTORIZED],
            Change("an op mapped over a batch", "vectorized_map"),
        ),
        Recommendation(
            "Keep a single large op eager: tf.function around it gains little",
            batched_checks[WRAPPED],
            Change("tf.function", "off", work="a single large op"),
        ),
        Recommendation(
            "Fuse cheap element-wise chains with XLA",
            chain_checks[AFFINE_FUSED],
            Change("jit_compile", "True", work="a chain of cheap element-wise ops"),
            recipe="fuse-an-element-wise-chain-with-xla",
        ),
        Recommendation(
            "Preprocess and convert the data once, before training",
            feeding_checks[PRELOAD_SMALL],
            Change("preprocessing", "once, before training"),
            recipe=slices,
        ),
        Recommendation(
            "Use from_tensor_slices, not from_generator",
            feeding_checks[SOURCE_ADVICE],
            Change("a dataset's source", "from_tensor_slices", data="arrays in memory"),
            recipe=slices,
        ),
        Recommendation(
            "Leave TensorFlow's intra-op threads at their default",
            setting_checks[FEWER_THREADS],
            Change("intra-op threads", "the default", cpu=f"{env['usable_cores']} cores"),
        ),
        Recommendation(
            "Keep oneDNN on for convolutions"
            if env["onednn_enabled"]
            else "Turn oneDNN on for convolutions (TF_ENABLE_ONEDNN_OPTS=1)",
            setting_checks[onednn_claim(env)],
            Change("TF_ENABLE_ONEDNN_OPTS", "1", work="convolutions"),
        ),
    ]
    return ShortAnswer(
        _answer(product_checks, batched_checks, chain_checks, feeding_checks), advice, handbook
    )


def everything_measured(
    products: Mapping[int, Sequence[Measurement]],
    timed: Sequence[Measurement],
    chains: Measured,
    feeding: Mapping[int, Sequence[Measurement]],
    alone: Sequence[Measurement],
    runs: SettingRuns,
) -> list[Measurement]:
    """Every measurement the page took, for its results file."""

    def flat(measured: Mapping[Any, Sequence[Measurement]]) -> list[Measurement]:
        return [m for ms in measured.values() for m in ms]

    return [
        *alone,
        *flat(runs.by_kernel),
        *flat(products),
        *timed,
        *flat(chains),
        *flat(feeding),
    ]
