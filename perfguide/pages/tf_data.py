"""The tf.data chapter: its checks on the pipeline and the step apart and together, on each
transformation, on storage that waits, on Python in the map and on a wider model; what a new
epoch costs; the recorded passes; and the short answer built from them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from perfguide.measure.measurement import Measurement, pick
from perfguide.processes.pool import Workers
from perfguide.report.format import format_interval, format_seconds, format_speedup
from perfguide.report.plots import timeline_plot
from perfguide.report.publishing.answers import Change, Recommendation, ShortAnswer
from perfguide.report.tables.table import Table
from perfguide.report.verdicts.claims import Claim, ClaimReport, Faster, Judged, takes_at_most
from perfguide.workloads import tf_data
from perfguide.workloads.tf_data_overlap import Overlap, Recording, typical

#: Batches in one pass over the images.
BATCHES_A_PASS = tf_data.IMAGES // tf_data.BATCH
#: How long each read from the waiting storage waits, in milliseconds.
LATENCY_MS = tf_data.REMOTE.default_size
#: The filters per convolution of the wider model, whose step outweighs the pipeline.
WIDE = 64

#: Does a prefetch let the step overlap the pipeline?
PREFETCH_OVERLAPS = Faster("together-prefetch", "together")

# The guide's advice, then the settings and placements (a setting that should change little is
# claimed to cost at most 1.25x the time: a claim closer to "as fast" cannot be decided here).
PREFETCH = Faster("prefetch", "naive")
CACHE = Faster("cache", "naive")
#: The advice of TensorFlow's guide, each piece against ``naive``.
GUIDE_CLAIMS = (
    PREFETCH,
    Faster("parallel-map", "naive"),
    CACHE,
    Faster("batch-then-map", "naive"),
    Faster("combined", "naive", by=1.5),
)
PREFETCH_ADDS_LITTLE = takes_at_most("naive", "prefetch", 1.25)
DEFAULT_OPTIMIZATIONS = Faster("naive", "no-default-optimizations")
#: The settings and placements shown collapsed, besides :data:`PREFETCH_ADDS_LITTLE`.
OTHER_SETTINGS = (
    DEFAULT_OPTIMIZATIONS,
    Faster("cache", "cache-records"),
    takes_at_most("parallel-map", "parallel-map-2", 1.25),
    takes_at_most("unordered-map", "parallel-map", 1.25),
    takes_at_most("cache", "cache-file", 1.25),
    takes_at_most("autotune-off", "naive", 1.25),
)
#: Every check on the pipelines; one still undecided after the usual processes gets more.
PIPELINE_CLAIMS = (*GUIDE_CLAIMS, PREFETCH_ADDS_LITTLE, *OTHER_SETTINGS)

PY_FUNCTION = Faster("naive", "py-function")
PARALLEL_PY_FUNCTION_ADDS_LITTLE = takes_at_most("py-function", "py-function-parallel", 1.25)
#: The checks on Python in the map.
PYTHON_CLAIMS = (
    PY_FUNCTION,
    Faster("py-function-parallel", "py-function"),
    PARALLEL_PY_FUNCTION_ADDS_LITTLE,
)

#: A faster pipeline saves the wide model at most a third: the step alone takes at least two
#: thirds of the step fed.
WIDE_SAVES = takes_at_most("together", "step-alone", 1.5)

#: The pipelines whose start and close of an epoch are timed.
EPOCH_VARIANTS = ("naive", "autotune-off")
#: The pipelines whose passes are recorded batch by batch, each with the storage options it
#: reads with ("naive, remote" reads from storage that waits).
RECORDED = {v: {} for v in (*tf_data.TRANSFORMATIONS, "py-function")} | {
    f"{v}, remote": {"latency_ms": LATENCY_MS} for v in tf_data.REMOTE.variants
}
#: The recorded passes drawn.
DRAWN = ("naive", "cache", "py-function", "naive, remote", "interleave, remote")


#: Where the pipelines read from storage that waits.
WAITING_STORAGE = f"storage with {LATENCY_MS} ms waits"
INTERLEAVE_REMOTE = Judged(Faster("interleave", "naive"), said_of=WAITING_STORAGE)
#: The checks on the pipelines reading from storage that waits.
REMOTE_CLAIMS = (
    Judged(PREFETCH, said_of=WAITING_STORAGE),
    INTERLEAVE_REMOTE,
    Judged(Faster("combined", "naive", by=2), said_of=WAITING_STORAGE),
)


def pipeline_and_step(measurements: Sequence[Measurement], cores: int) -> Overlap:
    """The pipeline alone, the step alone and the two together with a prefetch, on ``cores``
    cores, from the overlap workload's ``measurements``."""
    alone, step, _, prefetched = pick(measurements, *tf_data.OVERLAP_VARIANTS)
    return Overlap(alone, step, prefetched, cores)


def no_overlap(both: Overlap) -> Claim:
    """That the pipeline and the step with a prefetch take nearly one after the other."""
    return both.no_overlap_claim(f"{tf_data.FILTERS} filters")


def overlap_claims(both: Overlap, measurements: Sequence[Measurement]) -> ClaimReport:
    """:func:`no_overlap`, and whether a prefetch makes the two together faster."""
    return ClaimReport([no_overlap(both), PREFETCH_OVERLAPS.check(measurements)])


def cores_asked(both: Overlap) -> str:
    """The cores each of the two keeps busy alone, what they ask for together, and what an
    overlap could save at most, a line each."""
    pipeline, step = both.pipeline.cores_busy, both.step.cores_busy
    return "\n".join(
        [
            f"cores busy, pipeline alone: {pipeline:.2f}",
            f"cores busy, step alone: {step:.2f}",
            f"asked for together: {pipeline + step:.2f} of {both.cores}",
            f"with prefetch, process by process: {no_overlap(both).quoted}",
            f"the most any overlap could save: {1 - both.floor / both.one_after_other:.0%}",
        ]
    )


def work_removed(
    inputs: Sequence[Measurement], pipelines: Sequence[Measurement], step: Measurement
) -> str:
    """What mapping whole batches and a cache save the pipeline drawn alone (``inputs``), and
    the most removing all of ``naive``'s work could gain beside the ``step`` alone."""
    by_record, by_batch, from_cache = pick(inputs, "naive", "batch-then-map", "cache")
    (naive,) = pick(pipelines, "naive")
    return "\n".join(
        [
            f"mapping each batch saves {format_seconds(by_record.median_s - by_batch.median_s)}"
            " a batch",
            f"a cache saves {format_seconds(by_record.median_s - from_cache.median_s)} a batch",
            f"the step alone takes {format_seconds(step.median_s)} a batch",
            "the most removing all of the pipeline's work could gain: "
            f"{format_speedup(naive.median_s / step.median_s)}",
        ]
    )


def epoch_costs(workers: Workers) -> dict[str, dict[str, list[float]]]:
    """Five epochs' start and close of each of :data:`EPOCH_VARIANTS`, in the first worker."""
    return {
        v: workers.call_in(0, f"{tf_data.__name__}:epoch_costs", variant=v) for v in EPOCH_VARIANTS
    }


def epoch_table(
    costs: Mapping[str, Mapping[str, Sequence[float]]], pipelines: Sequence[Measurement]
) -> Table:
    """Each pipeline's start and close of an epoch, fastest to slowest, beside its steady batch
    in ``pipelines``."""
    steady = dict(zip(costs, pick(pipelines, *costs), strict=True))
    rows = [
        [
            v,
            format_interval(min(times["start"]), max(times["start"])),
            format_interval(min(times["close"]), max(times["close"])),
            format_seconds(steady[v].median_s),
        ]
        for v, times in costs.items()
    ]
    return Table(
        "Starting an epoch (to its first batch) and closing it, fastest to slowest of five, "
        "against one steady batch",
        ["pipeline", "start", "close", "steady batch"],
        rows,
    )


def storage_waits() -> str:
    """How long each read waits, how many reads a pass makes, and what a batch waits if the
    reads come one after another."""
    reads = tf_data.IMAGES // tf_data.READ_RECORDS
    return (
        f"each read waits {LATENCY_MS} ms; {reads} reads a pass of {BATCHES_A_PASS} batches\n"
        f"waiting a batch, one read after another: {reads * LATENCY_MS / BATCHES_A_PASS:g} ms"
    )


def wide_claim(wide: Sequence[Measurement]) -> Claim:
    """:data:`WIDE_SAVES`, stated as what a faster pipeline could save the wide model."""
    step, together = pick(wide, "step-alone", "together")
    return WIDE_SAVES.check(wide).restated(
        "a faster pipeline could save at most a third of a wide model's epoch",
        f"the pipeline adds {1 - step.median_s / together.median_s:.0%} of the epoch",
    )


def record_passes(workers: Workers) -> dict[str, Recording]:
    """The typical of three recorded passes of each of :data:`RECORDED`, in the first worker."""
    return {
        label: typical(
            workers.call_in(
                0, f"{tf_data.__name__}:timeline", variant=label.split(",")[0], **options
            )
        )
        for label, options in RECORDED.items()
    }


def passes_plot(recorded: Mapping[str, Recording]) -> Axes:
    """The :data:`DRAWN` passes, batch by batch: waiting for input, and training."""
    _, ax = plt.subplots(figsize=(8, 4), layout="constrained")
    timeline_plot({label: recorded[label].events for label in DRAWN}, ax=ax)
    ax.set_title(f"One pass of {BATCHES_A_PASS} batches: waiting for input, and training")
    return ax


def passes_table(recorded: Mapping[str, Recording], step: Measurement) -> Table:
    """Each recorded pass's length, its share waiting for input and its steps in the loop,
    against the ``step`` alone."""
    rows = [
        [
            label,
            format_seconds(r.length_s),
            f"{r.waiting_share:.0%}",
            format_seconds(r.median_step_s),
        ]
        for label, r in recorded.items()
    ]
    return Table(
        "Each recorded pass (the median of three), against the step alone "
        f"({format_seconds(step.median_s)})",
        ["pipeline", "pass", "waiting for input", "step in the loop"],
        rows,
    )


def prefetch_scenario(pipelines: Sequence[Measurement]) -> Table:
    """tensorflow#60384's finding beside this machine's batch without and with a prefetch."""
    naive, prefetched = pick(pipelines, "naive", "prefetch")
    return Table(
        "tensorflow/tensorflow#60384: CIFAR-10 from TFRecord files, with and without prefetch",
        ["where", "without prefetch", "with prefetch"],
        [
            ["their machines, TF 2.10 and 2.11 (their words)", "—", "no gain in any setting"],
            [
                "this build's machine, a batch",
                format_seconds(naive.median_s),
                f"{format_seconds(prefetched.median_s)} ({PREFETCH.check(pipelines).effect})",
            ],
        ],
    )


def _removing_work(cache: Claim, py_function: Claim) -> str:
    """The answer's closing sentence: the ways of removing work whose claims held here."""
    ways = {"cache after the map": cache, "keep Python out of it": py_function}
    held = [way for way, claim in ways.items() if claim.held is True]
    if not held:
        return "Neither way of removing work this page checks (a cache, no Python) held here."
    return f"What paid off here was removing work: {', '.join(held)}."


def _answer(both: Overlap, settings: ClaimReport, removing: str) -> str:
    return (
        "Because on this machine the pipeline and the step compete for the same "
        f"{both.cores} cores, and because tf.data already prefetches. The pipeline alone "
        f"kept {both.pipeline.cores_busy:.1f} cores busy, the step alone "
        f"{both.step.cores_busy:.1f}; fed from the pipeline, the step took "
        f"{no_overlap(both).quoted}, one after the other being the pipeline's time plus the "
        "step's, each timed alone. Reading ahead overlaps work only where a core is idle, or "
        "where the pipeline waits without working (remote storage). TensorFlow's default "
        "optimizations add a prefetch to the end of a pipeline and parallelize a plain map: "
        f"with them, {settings[DEFAULT_OPTIMIZATIONS].stated}. {removing}"
    )


def short_answer(
    both: Overlap,
    guide: ClaimReport,
    settings: ClaimReport,
    remote: ClaimReport,
    python: ClaimReport,
    scenario: Table,
) -> ShortAnswer:
    """The box atop the page: ``both``, the pipeline and the step apart and together;
    ``guide``, the guide's advice and :data:`PREFETCH_ADDS_LITTLE` checked; ``settings``,
    :data:`OTHER_SETTINGS`; ``remote``, :data:`REMOTE_CLAIMS`; ``python``,
    :data:`PYTHON_CLAIMS` (each :meth:`ClaimReport.of`); ``scenario``,
    :func:`prefetch_scenario`."""
    advice = [
        Recommendation(
            "Time the pipeline alone, the step alone and both: on a few cores their work adds up",
            no_overlap(both),
            Change("what is timed", "the pipeline alone, the step alone and both"),
        ),
        Recommendation(
            "Do not count on an explicit prefetch: tf.data already adds one",
            guide[PREFETCH_ADDS_LITTLE],
            Change("an explicit prefetch", "not counted on"),
        ),
        Recommendation(
            "Cache after the expensive map when the data fits in memory, before any "
            "random augmentation",
            guide[CACHE],
            Change("cache", "after the expensive map", data="fits in memory"),
            recipe="cache-after-the-map",
        ),
        Recommendation(
            "Interleave files read from slow or remote storage (measured here with reads that "
            f"wait {LATENCY_MS} ms, on {both.cores} cores)",
            remote[INTERLEAVE_REMOTE],
            Change("reading files", "interleaved", storage="slow or remote"),
            recipe="interleave-files-from-remote-storage",
        ),
        Recommendation(
            "Write the map in TensorFlow ops, not tf.py_function",
            python[PY_FUNCTION],
            Change("the map function", "TensorFlow ops"),
            recipe="write-the-map-in-tensorflow-ops",
        ),
        Recommendation(
            "Do not expect parallel calls to speed up a tf.py_function map",
            python[PARALLEL_PY_FUNCTION_ADDS_LITTLE],
            Change("num_parallel_calls on a tf.py_function map", "not counted on"),
        ),
    ]
    return ShortAnswer(
        _answer(both, settings, _removing_work(guide[CACHE], python[PY_FUNCTION])), advice, scenario
    )
