"""The training-loop chapter: the grid of paths, models and data it times, its checks, where a
step's time goes, Keras 3 against Keras 2, retracing, predicting, the self-answer's DO and DON'T
lists checked here, and the short answer built from them.

Long as its chapter is: every section reads the one grid of measurements, in a few small
functions each; split by section, the parts would import one another's names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from matplotlib.axes import Axes

from perfguide.measure.limits import MachineLimits
from perfguide.measure.measurement import Measurement, at_size, pick
from perfguide.processes.pool import Workers
from perfguide.report.format import format_percent, format_seconds, format_speedup
from perfguide.report.plots import heatmap, peak_limit, rate_bars, scaling_plot
from perfguide.report.publishing.answers import Change, Recommendation, ShortAnswer, measured_here
from perfguide.report.tables.table import Table
from perfguide.report.verdicts.claims import (
    Claim,
    ClaimReport,
    Faster,
    Judged,
    exact,
    takes_at_most,
)
from perfguide.report.verdicts.ranking import rank
from perfguide.report.verdicts.ratios import fixed_price
from perfguide.workloads import training_loop as tl

#: The grid's columns: the self-answer's small model on its small and its medium data, and its
#: medium model (a quarter as wide) on the small data.
SMALL, LONG, MEDIUM = (
    "small model, 140 steps",
    "small model, 1,400 steps",
    "medium model (¼ wide), 140 steps",
)
#: Each column's workload and time steps per sample.
GRID = {
    SMALL: (tl.TRAIN_SMALL, tl.SMALL_DATA),
    LONG: (tl.TRAIN_SMALL, tl.MEDIUM_DATA),
    MEDIUM: (tl.TRAIN_MEDIUM, tl.SMALL_DATA),
}
#: The paths of the later columns: only what the page reads there, since each path costs every
#: process a first call (a Keras trace, up to seconds): the hand-written step, every rule's
#: reference, in both; on the long samples fit per batch, for the rule on fit(), and the
#: TensorFlow 1 session beside it against the peak; on the medium model eager training, which
#: traces nothing. The first column, the self-answer's own small benchmark, has every path.
COLUMN_PATHS = {
    LONG: ("fit-per-batch", "custom-step", "tf1-session"),
    MEDIUM: ("custom-step", "run-eagerly"),
}

GRAPH_VS_EAGER = Faster("train-on-batch", "run-eagerly", by=2)
PER_BATCH_FIT = Faster("train-on-batch", "fit-per-batch", by=2)
#: The question's "47 % to 276 % faster".
TF1_VS_TF2 = Faster("tf1-session", "train-on-batch", by=1.47)
XLA = Faster("jit-compile", "train-on-batch")
TF_DATA = Faster("tf-data-no-autotune", "fit")
STEPS_PER_EXECUTION = Faster("steps-per-execution", "tf-data-no-autotune")
#: The hand-written step is the reference of the self-answer's rules below, so it should cost
#: about what Keras's own train_on_batch costs. The two differ by about as much as their ratio
#: moves between builds here, so "faster" could not be decided: the claim asks for the guide's
#: "about as fast", at most 1.25x the time, as the tf.data chapter's settings do.
CUSTOM_STEP = takes_at_most("custom-step", "train-on-batch", 1.25)
#: The checks on the small model and data, the self-answer's own benchmark.
SMALL_CLAIMS = (
    GRAPH_VS_EAGER,
    PER_BATCH_FIT,
    TF1_VS_TF2,
    XLA,
    TF_DATA,
    STEPS_PER_EXECUTION,
    CUSTOM_STEP,
)

#: The self-answer's DO and DON'T rules are each judged against the hand-written step: a DO
#: holds where its path takes less than twice that step's time, a DON'T where it takes at least
#: twice (the self-answer's measure: "each can at least double execution time").
REFERENCE, DOUBLE = "custom-step", 2
#: The run the rule on the separate Keras package is checked on, beside the grid's columns.
KERAS = "Keras 3 against Keras 2"


def do_rule(label: str) -> Faster:
    """A DO: ``label`` takes less than twice the hand-written step's time."""
    return takes_at_most(label, REFERENCE, DOUBLE)


def dont_rule(label: str, reference: str = REFERENCE) -> Faster:
    """A DON'T: ``label`` takes at least twice ``reference``'s time."""
    return Faster(reference, label, by=DOUBLE)


class Rule(NamedTuple):
    """A rule of the self-answer's lists ("DO" or "DON'T", as it said it), its check, and where
    it is checked: a column of the grid, or :data:`KERAS`."""

    kind: str
    said: str
    check: Faster
    column: str

    @property
    def path(self) -> str:
        """The path here that does what the rule names."""
        return self.check.fast if self.kind == "DO" else self.check.slow

    def row(self, measurements: Sequence[Measurement]) -> list[str]:
        """The rule's row of :func:`rules_table`, checked on ``measurements``."""
        claim = self.check.check(measurements)
        return [self.kind, self.said, self.path, claim.verdict, claim.evidence]


#: The rules measured here, in the order of the self-answer's lists.
RULES = (
    Rule(
        "DO", "train_on_batch() + numpy + tf.keras + TF2 + Graph", do_rule("train-on-batch"), SMALL
    ),
    Rule("DO", "train_on_batch() + numpy + tf.keras + TF1 + Graph", do_rule("tf1-session"), SMALL),
    Rule(
        "DO",
        "fit() + numpy + tf.keras + Graph + large model & data",
        do_rule("fit-per-batch"),
        LONG,
    ),
    Rule("DON'T", "fit() + numpy + tf.keras + TF1/TF2 + Eager", dont_rule("run-eagerly"), SMALL),
    Rule(
        "DON'T",
        "fit() + numpy + keras for small & medium models and data",
        dont_rule("keras-2-fit-per-batch", reference="keras-3-train-on-batch"),
        KERAS,
    ),
)
#: The rules today's TensorFlow cannot run, and why.
UNMEASURED_RULES = (
    ("DON'T", "train_on_batch() + numpy + keras + TF1 + Eager", "needs TF1"),
    ("DON'T", "tf.python.keras (private imports)", "gone from TF 2.21"),
)

#: Keras 3 against Keras 2, through train_on_batch and fit per batch.
KERAS_3_ON_BATCH = Faster("keras-3-train-on-batch", "keras-2-train-on-batch")
KERAS_3_FIT_PER_BATCH = Faster("keras-3-fit-per-batch", "keras-2-fit-per-batch")
KERAS_CLAIMS = (KERAS_3_ON_BATCH, KERAS_3_FIT_PER_BATCH)

#: predict's default batch_size: on a larger batch, predict makes calls of this many samples.
PREDICT_BATCH_SIZE = 32
#: The batch sizes predicted, samples per batch: one sample, one of predict's calls, and a batch
#: predict splits into many.
BATCHES = (1, PREDICT_BATCH_SIZE, 512)


PREDICT_ON_BATCH = Judged(Faster("predict-on-batch", "predict", by=10), part=1)
MODEL_CALL = Judged(Faster("model-call", "predict", by=10), part=1)
#: A full batch is what predict is built for.
PREDICT_FULL_BATCH = Judged(takes_at_most("predict", "predict-on-batch", 1.5), part=BATCHES[-1])
INFERENCE_CLAIMS = (PREDICT_ON_BATCH, MODEL_CALL, PREDICT_FULL_BATCH)

#: The calls the self-answer timed per configuration: the short answer's table.
ITERATIONS = 200


def step_flops() -> dict[str, int]:
    """The arithmetic of one training step of a batch in each column of the grid, counted from
    the model's layers."""
    keras = tl.keras_module()
    return {
        column: tl.step_flops(tl.MODELS[workload.name.split("-")[1]](keras, steps))
        for column, (workload, steps) in GRID.items()
    }


def arithmetic(flops: Mapping[str, int], machine: MachineLimits) -> str:
    """Each column's ``flops`` per step, and the self-answer's large model's, with the least
    time its step could take here."""
    large = tl.step_flops(tl.large_model(tl.keras_module(), tl.MEDIUM_DATA))
    lines = [
        f"{column:34s} {work / 1e9:7.2f} GFLOP per training step of 32 samples"
        for column, work in flops.items()
    ]
    lines.append(
        f"the answer's large model, 1,400 steps: {large / 1e9:.0f} GFLOP per step, "
        f"at least {format_seconds(large / machine.peak_flops)} here even at the measured peak"
    )
    return "\n".join(lines)


def settled_in(column: str) -> list[Faster]:
    """The claims the processes timing ``column`` settle (its run adds blocks, up to 40 a path,
    while a claim is undecided there): the rules checked on it, and on the first column the
    page's checks too."""
    claims = [rule.check for rule in RULES if rule.column == column]
    return claims + list(SMALL_CLAIMS) if column == SMALL else claims


def time_grid(workers: Workers) -> dict[str, list[Measurement]]:
    """Each column's paths, by column, timed by ``workers`` (the paths of a column take turns in
    each process)."""
    return {
        column: workers.run(
            workload,
            COLUMN_PATHS.get(column),
            size=steps,
            settle=settled_in(column),
            quick=True,
        )
        for column, (workload, steps) in GRID.items()
    }


def grid_heatmap(grid: Mapping[str, Sequence[Measurement]]) -> Axes:
    """Each path's time per step in each column, coloured by how many times the column's
    fastest it takes."""
    ax = heatmap(grid, list(tl.TRAIN_SMALL.variants))
    ax.set_title("Time per training step, and how many times the column's fastest")
    ax.figure.set_size_inches(8, 6)
    return ax


#: The paths that read their batches through a tf.data pipeline, their own or fit's.
AUTOTUNE_PATHS = ("fit", "tf-data", "tf-data-no-autotune")


def autotune_spread(small: Sequence[Measurement]) -> str:
    """How much each of :data:`AUTOTUNE_PATHS` spread in each process (its blocks' interquartile
    range over their median), and whether autotuning off spread less than on in every one."""
    spread = {m.label: m.spread_by_process for m in pick(small, *AUTOTUNE_PATHS)}
    lines = [
        f"{label:20s} spread {', '.join(f'{s:.0%}' for s in shares)} in the processes"
        for label, shares in spread.items()
    ]
    steadier = max(spread["tf-data-no-autotune"]) < min(spread["tf-data"])
    lines.append(
        "autotuning off spread less than on in every process"
        if steadier
        else "autotuning off spread as much as on, or more, in some process"
    )
    return "\n".join(lines)


def fit_price(small: Sequence[Measurement]) -> str:
    """What a call of fit costs besides its steps, from fit over an epoch and over one batch,
    and its share of a fit over an epoch."""
    per_batch, fit = (m.median_s for m in pick(small, "fit-per-batch", "fit"))
    price = fixed_price(fit, per_batch, tl.EPOCH_BATCHES)
    return (
        f"fit's own price {format_seconds(price)} per call: "
        f"{format_percent(price / (fit * tl.EPOCH_BATCHES))} of a fit over an epoch of "
        f"{tl.EPOCH_BATCHES} batches ({format_seconds(fit)} a step)"
    )


def arithmetic_bars(long: Sequence[Measurement], flops: int, machine: MachineLimits) -> Axes:
    """Each path's floating-point operations per second on the long samples (``flops`` a step)
    against the machine's measured peak."""
    ax = rate_bars(
        long,
        lambda m: flops,
        peak_limit(machine),
    )
    ax.set_title("Small model, 1,400 time steps: arithmetic per second")
    ax.figure.set_size_inches(7, 5)
    return ax


def beyond_arithmetic(small: Sequence[Measurement], flops: int, machine: MachineLimits) -> str:
    """The arithmetic of a step (``flops``) at the measured peak, then each path, fastest first:
    its time, its share of the peak and its time beyond that arithmetic."""
    at_peak = flops / machine.peak_flops
    lines = [f"the arithmetic of one step at the measured peak: {format_seconds(at_peak)}"]
    for m in sorted(small, key=lambda m: m.median_s):
        lines.append(
            f"{m.label:20s} {format_seconds(m.median_s):>9s}  "
            f"{machine.compute_share(flops, m.median_s):4.0%} of the peak, "
            f"{format_seconds(m.median_s - at_peak)} beyond the arithmetic"
        )
    return "\n".join(lines)


def fit_beyond_train_on_batch(versions: Sequence[Measurement]) -> str:
    """In each Keras, how much longer fit on one batch took than train_on_batch on it."""
    lines = []
    for version in ("3", "2"):
        per_batch, on_batch = pick(
            versions, f"keras-{version}-fit-per-batch", f"keras-{version}-train-on-batch"
        )
        lines.append(
            f"Keras {version}: fit on one batch "
            f"{format_seconds(per_batch.median_s - on_batch.median_s)} longer than "
            f"train_on_batch, which took {format_seconds(on_batch.median_s)} a step"
        )
    return "\n".join(lines)


def traces(retracing: Sequence[Measurement]) -> dict[str, int]:
    """How many times each path's tf.function traced in its first pass, where the path exposes
    it (Keras keeps its own compiled function to itself)."""
    return {m.label: m.first_call_traces for m in retracing if m.first_call_traces is not None}


def first_passes(retracing: Sequence[Measurement]) -> str:
    """Each path's traces in its first pass, and what that pass cost beyond a later one."""
    traced = traces(retracing)
    lines = []
    for m in retracing:
        count = traced.get(m.label)
        counted = "traces not exposed" if count is None else f"{count} trace{'s' * (count != 1)}"
        extra = m.first_call_s - m.median_s * m.units_per_call
        lines.append(
            f"{m.label:18s} {counted:20s} first pass {format_seconds(extra)} longer than later ones"
        )
    return "\n".join(lines)


def retrace_claim(retracing: Sequence[Measurement]) -> Claim:
    """That a plain tf.function traces once per new batch size (an exact count), beside the
    traces of its two fixes."""
    sizes = tl.KERAS_RETRACING.default_size
    traced = traces(retracing)
    plain = traced["tf-function-step"]
    return exact(
        f"a plain tf.function traces once per new batch size ({sizes} sizes)",
        plain == sizes,
        f"{plain} traces for {sizes} sizes; input_signature "
        f"{traced['input-signature']}, reduce_retracing {traced['reduce-retracing']}",
        f"{plain} traces instead of 1",
    )


def time_inference(workers: Workers) -> list[Measurement]:
    """Every way to predict, timed by ``workers`` on batches of each of :data:`BATCHES`."""
    return [m for batch in BATCHES for m in workers.run(tl.KERAS_INFERENCE, size=batch, quick=True)]


def inference_plot(inference: Sequence[Measurement]) -> Axes:
    """Each way's time per call against the batch size."""
    ax = scaling_plot(inference, tl.KERAS_INFERENCE.size_name)
    ax.set_title("Small model: time per call against batch size")
    return ax


def predict_calls(inference: Sequence[Measurement]) -> str:
    """predict on the largest of :data:`BATCHES` against as many predict_on_batch calls of
    :data:`PREDICT_BATCH_SIZE` samples as it makes, and one predict_on_batch call on the whole
    batch."""
    largest, size = BATCHES[-1], PREDICT_BATCH_SIZE
    (per_call,) = pick(at_size(inference, size), "predict-on-batch")
    predict, on_batch = pick(at_size(inference, largest), "predict", "predict-on-batch")
    calls = largest // size
    return (
        f"predict at {largest:,}: {format_seconds(predict.median_s)}; {calls} × predict_on_batch "
        f"at {size}: {format_seconds(calls * per_call.median_s)}; predict_on_batch at "
        f"{largest:,}: {format_seconds(on_batch.median_s)}"
    )


def rules_table(
    grid: Mapping[str, Sequence[Measurement]], versions: Sequence[Measurement]
) -> Table:
    """Each of the self-answer's rules, its path here and its verdict, checked on its column of
    ``grid`` or on the Keras ``versions``; the rules not measured say why."""
    measured = {**grid, KERAS: versions}
    rows = [rule.row(measured[rule.column]) for rule in RULES]
    rows += [[kind, said, "-", "not measured", why] for kind, said, why in UNMEASURED_RULES]
    header = [
        "",
        "the self-answer's rule (TF 1.14 / 2.0, GPU)",
        "path here",
        "verdict here",
        "evidence",
    ]
    return Table("The self-answer's DO and DON'T lists, checked in this build", header, rows)


def own_rules(grid: Mapping[str, Sequence[Measurement]]) -> Table:
    """Every path, by the rules' measure over every column it ran in: a DO where its slowest
    time against the hand-written step stays under twice, else a DON'T; fastest first."""
    worst = {
        label: max(
            pick(ms, label)[0].median_s / pick(ms, REFERENCE)[0].median_s
            for ms in grid.values()
            if any(m.label == label for m in ms)
        )
        for label in tl.TRAIN_SMALL.variants
    }
    rows = [
        ["DO" if factor < DOUBLE else "DON'T", label, format_speedup(1 / factor)]
        for label, factor in sorted(worst.items(), key=lambda item: item[1])
    ]
    header = ["", "path", "slowest, against the hand-written step"]
    return Table("This build's DO and DON'T lists", header, rows)


def benchmark_scenario(small: Sequence[Measurement]) -> Table:
    """The self-answer's :data:`ITERATIONS` steps on the small model and data, on each path
    here, fastest first."""
    rows = [
        [m.label, format_seconds(ITERATIONS * m.median_s)]
        for m in sorted(small, key=lambda m: m.median_s)
    ]
    return Table(
        f"{ITERATIONS} training steps of the small model on the small data, on this machine",
        ["path", f"{ITERATIONS} steps here"],
        rows,
    )


def fastest_path(small: Sequence[Measurement], brief: bool = False) -> str:
    """Which path was fastest on the small model, with its margin over the runner-up, or the
    paths tied with the fastest, with the evidence; ``brief``, a tie's without it (one
    comparison per tied path: too long for the short answer, which quotes the rest)."""
    ranking = rank(small)
    return ranking.sentence(" on the small model", evidence=ranking.separated or not brief)


def _answer(small: Sequence[Measurement], checks: ClaimReport) -> str:
    ranked = fastest_path(small, brief=True)
    return (
        "It is not TensorFlow 2 as such but the path a step takes. On the question's small "
        f"model, with TensorFlow 2.21, {checks[TF1_VS_TF2].stated}. "
        f"{checks[GRAPH_VS_EAGER].stated}. {checks[PER_BATCH_FIT].stated}. "
        f"Of all paths, {ranked}."
    )


def short_answer(
    small: Sequence[Measurement],
    checks: ClaimReport,
    keras_checks: ClaimReport,
    predicting: ClaimReport,
    cores: int,
) -> ShortAnswer:
    """The box atop the page: ``small``, the grid's first column; ``checks``, ``keras_checks``
    and ``predicting``, :data:`SMALL_CLAIMS`, :data:`KERAS_CLAIMS` and
    :data:`INFERENCE_CLAIMS` checked (:meth:`ClaimReport.of`); ``cores``, the usable cores."""
    cpu = f"{cores} cores"
    custom_step = "a-custom-training-step-in-a-tf-function"
    predict = "predict-a-small-batch-with-predict-on-batch-or-model-x"
    small_batch = Change("model.predict on a small batch", "avoided")
    # The pipeline as a reader writes it, autotuning on: its time is two-valued in a short fit,
    # so it is shown beside the advice, not claimed.
    default_pipeline = Faster("tf-data", "fit").check(small)
    advice = [
        Recommendation(
            "Train as a graph; run eagerly only to debug",
            checks[GRAPH_VS_EAGER],
            Change("run_eagerly", "False", work="training"),
            recipe=custom_step,
        ),
        Recommendation(
            "Never call fit() once per batch: loop with train_on_batch or a tf.function step",
            checks[PER_BATCH_FIT],
            Change("fit() once per batch", "avoided"),
            recipe=custom_step,
        ),
        Recommendation(
            "Raise steps_per_execution when fit's steps are short",
            checks[STEPS_PER_EXECUTION],
            Change("steps_per_execution", "raised", work="short steps of a small model", cpu=cpu),
            recipe="several-batches-a-call-with-steps-per-execution",
        ),
        Recommendation(
            "Feed fit from a tf.data pipeline rather than NumPy arrays",
            checks[TF_DATA],
            Change(
                "fit's input",
                "a tf.data pipeline",
                data="arrays in memory",
                pipeline="from_tensor_slices and batch, autotuning off as timed",
                cpu=cpu,
            ),
            caveats=(
                "with tf.data's autotuning on (its default) "
                f"{measured_here(default_pipeline)}, {default_pipeline.verdict}",
            ),
        ),
        Recommendation(
            "Turn on jit_compile for a small model",
            checks[XLA],
            Change("jit_compile", "True", work="a small model's training step", cpu=cpu),
        ),
        Recommendation(
            "With train_on_batch, use tf.keras (Keras 3) rather than Keras 2",
            keras_checks[KERAS_3_ON_BATCH],
            Change("Keras", "Keras 3", call="train_on_batch"),
        ),
        Recommendation(
            "With fit called once per batch, use tf.keras (Keras 3) rather than Keras 2",
            keras_checks[KERAS_3_FIT_PER_BATCH],
            Change("Keras", "Keras 3", call="fit once per batch"),
        ),
        Recommendation(
            "Predict a small batch with predict_on_batch, not predict",
            predicting[PREDICT_ON_BATCH],
            small_batch,
            recipe=predict,
        ),
        Recommendation(
            "Predict a small batch with model(x), not predict",
            predicting[MODEL_CALL],
            small_batch,
            recipe=predict,
        ),
    ]
    return ShortAnswer(_answer(small, checks), advice, benchmark_scenario(small))
