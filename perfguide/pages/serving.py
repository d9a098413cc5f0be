"""The serving chapter: its checks on each model, where a request's time goes, the tail, the
batches, the cold starts, what the runtimes and TensorFlow's profiler say of the MobileNet, and
the short answer built from them.

Long as its chapter is: every section reads the same runs of the models' ways, in a few small
functions each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from perfguide.measure.limits import MachineLimits
from perfguide.measure.measurement import Measurement, at_size
from perfguide.processes import serving_cold_start
from perfguide.processes.pool import Workers
from perfguide.processes.worker import TRACED_CALLS
from perfguide.report.format import format_bytes, format_seconds
from perfguide.report.plots import Limit, dot_plot, rate_plot
from perfguide.report.publishing.answers import Change, Recommendation, measured_here
from perfguide.report.tables.comparison import Comparison
from perfguide.report.tables.ops import OpTable
from perfguide.report.tables.table import Collapsed, Table
from perfguide.report.verdicts.claims import Claim, ClaimReport, Faster, Judged, exact
from perfguide.report.verdicts.ranking import rank
from perfguide.workloads import serving
from perfguide.workloads.base import Workload

IDENTITY, MLP, CONV1D, MOBILENET = serving.WORKLOADS
#: The ways this installation serves, the same for every model.
WAYS = MLP.variants
#: Timed on the tiny and small models only, to keep the build short.
SMALLER_MODELS_ONLY = (
    "predict",
    "model-call",
    "predict-on-batch",
    "tf-function-xla",
    "saved-model",
)
#: The ways each model's requests are timed with: ``predict`` on the tiny model only.
MODEL_WAYS = {
    MLP.name: WAYS,
    CONV1D.name: tuple(w for w in WAYS if w != "predict"),
    MOBILENET.name: tuple(w for w in WAYS if w not in SMALLER_MODELS_ONLY),
}
#: Each model's table of one request: its title and the way the others are set against.
REQUEST_TABLES = {
    MLP.name: ("The tiny model: every way's time per request", "predict"),
    CONV1D.name: ("The small model: every way's time per request", "model-call"),
    MOBILENET.name: ("The MobileNet: every way's time per request", "tf-function"),
}


def model_name(workload: str) -> str:
    """The model a serving workload answers for ("mlp" for "serving-mlp")."""
    return workload.removeprefix("serving-")


def on_model(model: Workload, claim: Faster) -> Judged:
    """``claim`` judged on the ways that answered ``model``'s requests (what
    :func:`time_models` measured for it), stated for the model."""
    return Judged(claim, part=model.name, said_of=model_name(model.name))


# ONNX Runtime against TensorFlow on every model (onnxruntime#10989). The tiny model: impsy#48's
# 29x on a small network; Keras's "predict is for batches". The others: int8 weights, once
# slower on x86 CPUs (tensorflow#24665); tensorflow#37989's "LiteRT 2x slower on a desktop";
# and LiteRT's threads.
ONNX_VS_TF = Faster("onnxruntime", "tf-function")
TINY_LITERT = on_model(MLP, Faster("litert", "model-call", by=29))
TINY_CALL = on_model(MLP, Faster("model-call", "predict", by=10))
SMALL_INT8 = on_model(CONV1D, Faster("litert-int8", "litert"))
MOBILENET_ONNX = on_model(MOBILENET, ONNX_VS_TF)
MOBILENET_FLOAT = on_model(MOBILENET, Faster("litert", "litert-int8"))
MOBILENET_THREADS = on_model(MOBILENET, Faster("litert", "litert-1-thread"))
#: The checks on one request, model by model, of the ways this installation serves.
REQUEST_CHECKS = tuple(
    check
    for check in (
        on_model(MLP, ONNX_VS_TF),
        TINY_LITERT,
        TINY_CALL,
        on_model(CONV1D, ONNX_VS_TF),
        SMALL_INT8,
        MOBILENET_ONNX,
        on_model(MOBILENET, Faster("tf-function", "litert", by=2)),
        MOBILENET_FLOAT,
        MOBILENET_THREADS,
    )
    if set(check.labels) <= set(WAYS)
)


@dataclasses.dataclass(frozen=True)
class AnswersClose:
    """That ``way``'s answers to ``model``'s requests lie within the way's tolerance
    (:func:`~perfguide.workloads.serving.tolerance`) of Keras's."""

    model: str
    way: str

    def check(self, differences: Mapping[str, Mapping[str, float]]) -> Claim:
        """Judged on ``differences``, as :func:`~perfguide.workloads.serving.output_differences`
        returns them."""
        tolerance, difference = serving.tolerance(self.way), differences[self.model][self.way]
        return exact(
            f"{self.way}'s answers lie within {tolerance:g} of Keras's",
            difference <= tolerance,
            f"largest difference {difference:.1e}, as a share of Keras's largest answer",
        ).on(self.model)


#: The converted or quantized models the short answer may advise, each only where it answers
#: as Keras does.
TINY_LITERT_CLOSE = AnswersClose("mlp", "litert")
SMALL_INT8_CLOSE = AnswersClose("conv1d", "litert-int8")
MOBILENET_ONNX_CLOSE = AnswersClose("mobilenet", "onnxruntime")

#: The small model's tail: the ways, and the requests each process answers one after another.
TAIL_WAYS = tuple(
    w for w in ("model-call", "tf-function", "saved-model", "litert", "onnxruntime") if w in WAYS
)
REQUESTS = 300
#: The small model's batches: the ways, and the requests a batch.
BATCH_WAYS = tuple(w for w in ("tf-function", "litert", "onnxruntime") if w in WAYS)
BATCHES = (1, 16, 256)
#: The runtimes a cold start of the MobileNet is timed with (Keras's always).
COLD_WAYS = tuple(w for w in ("keras", "litert", "onnxruntime") if w == "keras" or w in WAYS)


def output_differences(workers: Workers) -> dict[str, dict[str, float]]:
    """:func:`~perfguide.workloads.serving.output_differences` of every model, the models
    shared out among ``workers`` and converted side by side (nothing here is timed)."""
    processes = len(workers.names)
    shares = [list(serving.MODELS)[i::processes] for i in range(processes)]
    answers = workers.call_each(
        f"{serving.__name__}:output_differences", [{"models": share} for share in shares if share]
    )
    merged = {model: ways for answer in answers for model, ways in answer.items()}
    return {model: merged[model] for model in serving.MODELS}


def differences_table(differences: Mapping[str, Mapping[str, float]]) -> Collapsed:
    """``differences`` (by model, then way) as a table of a row a way, collapsed."""
    rows = [
        [way, *(f"{differences[name][way]:.1e}" for name in differences)]
        for way in differences["mlp"]
    ]
    title = "Largest difference from Keras's answers, per model and way"
    return Collapsed(
        "Every model and way: the largest difference from Keras's answers",
        Table(title, ["way", *differences], rows),
    )


def answers_close(differences: Mapping[str, Mapping[str, float]]) -> ClaimReport:
    """The :class:`AnswersClose` checks of the converted models the short answer may advise,
    of the ways this installation serves; ``report[TINY_LITERT_CLOSE]`` gives one."""
    checks = [
        check
        for check in (TINY_LITERT_CLOSE, SMALL_INT8_CLOSE, MOBILENET_ONNX_CLOSE)
        if check.way in differences[check.model]
    ]
    return ClaimReport.of(checks, differences)


def one_request(workers: Workers) -> dict[str, list[Measurement]]:
    """Each model's ways (:data:`MODEL_WAYS`) answering a request of one sample, by workload
    name; a way undecided in :data:`REQUEST_CHECKS` is timed in more fresh processes."""
    return {
        workload.name: workers.run(
            workload,
            MODEL_WAYS[workload.name],
            quick=True,
            settle=[c.claim for c in REQUEST_CHECKS if c.part == workload.name],
        )
        for workload in (MLP, CONV1D, MOBILENET)
    }


def request_table(served: Mapping[str, Sequence[Measurement]], workload: str) -> Collapsed:
    """One model's ways side by side (:data:`REQUEST_TABLES`), collapsed."""
    title, baseline = REQUEST_TABLES[workload]
    return Collapsed(title, Comparison(served[workload], baseline=baseline))


def request_plot(served: Mapping[str, Sequence[Measurement]]) -> Figure:
    """Every way's time per request, a panel a model."""
    figure, axes = plt.subplots(len(served), 1, figsize=(7, 10), layout="constrained")
    for ax, (name, measurements) in zip(axes, served.items(), strict=True):
        dot_plot(measurements, ax=ax)
        ax.set_title(f"{name}: one request")
    return figure


def call_alone(workers: Workers) -> list[Measurement]:
    """Each way but ``predict`` (priced on the tiny model) answering the identity model."""
    return workers.run(IDENTITY, [w for w in WAYS if w != "predict"], quick=True)


def call_alone_table(calls: Sequence[Measurement]) -> Collapsed:
    return Collapsed(
        "The call alone: every way's time on the identity model",
        Comparison(calls, baseline="model-call"),
    )


def request_flops(workers: Workers) -> dict[str, int]:
    """The float operations of one request of each model, by workload name."""
    return {
        workload.name: workers.call_in(
            0, f"{serving.__name__}:request_flops", name=model_name(workload.name)
        )
        for workload in (MLP, CONV1D, MOBILENET)
    }


def time_split(
    served: Mapping[str, Sequence[Measurement]],
    calls: Sequence[Measurement],
    flops: Mapping[str, int],
    machine: MachineLimits,
) -> Table:
    """Each model's ways, fastest first: the time a request, the same way's call alone, the
    request's share of the peak, and what is left over beyond the call and the arithmetic at
    the peak."""
    call_s = {m.label: m.median_s for m in calls}

    def row(name: str, m: Measurement) -> list[str]:
        call = call_s.get(m.label)
        left = m.median_s - (call or 0) - flops[name] / machine.peak_flops
        return [
            model_name(name),
            m.label,
            format_seconds(m.median_s),
            format_seconds(call) if call else "not timed",
            f"{machine.compute_share(flops[name], m.median_s):.2%}",
            format_seconds(left) if left > 0 else "none",
        ]

    at_peak = ", ".join(
        f"{model_name(name)} {format_seconds(flops[name] / machine.peak_flops)}" for name in served
    )
    header = ["model", "way", "a request", "the call alone", "share of the peak", "left over"]
    rows = [
        row(name, m)
        for name, measurements in served.items()
        for m in sorted(measurements, key=lambda m: m.median_s)
    ]
    return Table(
        f"Where a request's time goes (its arithmetic at the peak: {at_peak})", header, rows
    )


#: Per way, each process's tail of :data:`REQUESTS` requests
#: (:func:`~perfguide.workloads.serving.latency_percentiles`).
Tails = Mapping[str, Sequence[Mapping[str, float]]]


def request_tails(workers: Workers) -> dict[str, list[dict[str, float]]]:
    """Each of :data:`TAIL_WAYS` answering :data:`REQUESTS` requests of the small model one
    after another, in each of ``workers``: a process's median, 99th percentile, slowest and
    stalls."""
    return {
        way: workers.call(
            f"{serving.__name__}:latency_percentiles", model="conv1d", way=way, count=REQUESTS
        )
        for way in TAIL_WAYS
    }


def tail_table(tails: Tails) -> Table:
    """A row a way: the lowest to the highest of the processes' p50, p99 and slowest, the
    median p99 / p50, and the stalls of all processes."""

    def across(way: str, key: str) -> str:
        low, high = (f(t[key] for t in tails[way]) for f in (min, max))
        return f"{format_seconds(low)} – {format_seconds(high)}"

    header = [
        "way",
        "p50",
        "p99",
        "p99 / p50",
        "slowest",
        f"stalls (≥ {serving.STALL_FACTOR}x p50)",
    ]
    rows = [
        [
            way,
            across(way, "p50"),
            across(way, "p99"),
            f"{np.median([t['p99'] / t['p50'] for t in tails[way]]):.2f}x",
            across(way, "slowest"),
            f"{stalls(tails, way)} of {REQUESTS * len(tails[way])}",
        ]
        for way in tails
    ]
    return Table(
        f"{REQUESTS} requests of the small model, one after another, per process", header, rows
    )


def stalls(tails: Tails, way: str) -> int:
    """How many of ``way``'s requests stalled, in all processes."""
    return sum(t["stalls"] for t in tails[way])


def where_stalls_were(tails: Tails) -> str:
    """A line a way: its stalls, in how many processes, and the slowest against its process's
    median."""
    lines = []
    for way, processes in tails.items():
        stalled = [t for t in processes if t["stalls"]]
        if not stalled:
            lines.append(f"{way}: no stalls")
            continue
        worst = max(stalled, key=lambda t: t["slowest"])
        lines.append(
            f"{way}: {stalls(tails, way)} stalls in {len(stalled)} of "
            f"{len(processes)} processes; the slowest {format_seconds(worst['slowest'])}, "
            f"against that process's median of {format_seconds(worst['p50'])}"
        )
    return "\n".join(lines)


def time_batches(workers: Workers) -> list[Measurement]:
    """Each of :data:`BATCH_WAYS` answering the small model's requests :data:`BATCHES` at a
    time, quickly."""
    return [m for batch in BATCHES for m in workers.run(CONV1D, BATCH_WAYS, size=batch, quick=True)]


def throughput_plot(
    batched: Sequence[Measurement], machine: MachineLimits, flops: Mapping[str, int]
) -> Axes:
    """The small model's requests answered per second at each batch size, under the most its
    arithmetic allows at the measured peak."""
    ax = rate_plot(
        batched,
        "requests per batch",
        lambda m: 1,
        Limit(
            machine.peak_flops / flops[CONV1D.name],
            "the arithmetic at the measured peak",
            "requests/s",
        ),
    )
    ax.set_title("The small model: requests answered per second")
    return ax


def batch_table(batched: Sequence[Measurement]) -> Collapsed:
    """The time to answer a whole batch, a row a way and a column a batch size, collapsed."""
    rows = [
        [way, *(format_seconds(m.median_s * m.size) for m in batched if m.label == way)]
        for way in BATCH_WAYS
    ]
    header = ["way", *(f"batch {b}" for b in BATCHES)]
    return Collapsed(
        "The small model: time to answer a whole batch, per way and batch size",
        Table("The small model: time to answer a whole batch", header, rows),
    )


@dataclasses.dataclass(frozen=True)
class ColdStarts:
    """Each of :data:`COLD_WAYS`' cold starts of the MobileNet, one a process
    (:func:`~perfguide.processes.serving_cold_start.cold_server`'s records), by way."""

    by_way: Mapping[str, Sequence[Mapping[str, Any]]]

    def median(self, way: str, key: str) -> float:
        """The processes' median of ``key`` (a step's seconds, ``memory_bytes``…)."""
        return float(np.median([start[key] for start in self.by_way[way]]))

    def total_s(self, way: str) -> float:
        """The medians of the steps (:data:`~perfguide.workloads.serving.COLD_STEPS`), added."""
        return sum(self.median(way, key) for key in serving.COLD_STEPS)

    def import_share(self, way: str) -> float:
        """The share of the cold start its import takes."""
        return self.median(way, "import_s") / self.total_s(way)

    def table(self) -> Table:
        """A row a runtime: each step, in all, the memory, the file and whether TensorFlow was
        imported."""
        header = [
            "runtime",
            "import",
            "load",
            "first answer",
            "in all",
            "memory then",
            "file",
            "TensorFlow",
        ]
        rows = [
            [
                way,
                *(format_seconds(self.median(way, key)) for key in serving.COLD_STEPS),
                format_seconds(self.total_s(way)),
                format_bytes(self.median(way, "memory_bytes")),
                format_bytes(self.median(way, "file_bytes")),
                "imported" if starts[0]["imported_tensorflow"] else "never imported",
            ]
            for way, starts in self.by_way.items()
        ]
        caption = "The MobileNet's first answer in a fresh process (median of the page's processes)"
        return Table(caption, header, rows)

    def __str__(self) -> str:
        return "\n".join(
            f"{way}: the import is {self.import_share(way):.0%} of the cold start"
            for way in self.by_way
        )


def cold_starts(workers: Workers) -> ColdStarts:
    """The MobileNet's cold start with each of :data:`COLD_WAYS`, in each of ``workers``."""
    return ColdStarts(
        {
            way: workers.call(
                f"{serving_cold_start.__name__}:cold_server", name="mobilenet", way=way
            )
            for way in COLD_WAYS
        }
    )


def runtime_reports(workers: Workers) -> dict[str, dict[str, Any]]:
    """What LiteRT and ONNX Runtime say of the small model and the MobileNet
    (:func:`~perfguide.workloads.serving.runtime_report`), by workload name; none where either
    is not installed."""
    if not {"litert", "litert-int8", "onnxruntime"} <= set(WAYS):
        return {}
    return {
        workload.name: workers.call_in(
            0, f"{serving.__name__}:runtime_report", name=model_name(workload.name)
        )
        for workload in (CONV1D, MOBILENET)
    }


def kernels(report: Mapping[str, Any]) -> str:
    """LiteRT's ops and whether a delegate runs them, and ONNX Runtime's execution providers."""
    ops = ", ".join(f"{n} {op}" for op, n in report["litert_ops"].items())
    handed = "handed to a delegate" if report["litert_delegated"] else "run by its own kernels"
    return (
        f"LiteRT: {sum(report['litert_ops'].values())} ops ({ops}), {handed}\n"
        f"ONNX Runtime: {', '.join(report['onnxruntime_providers'])}"
    )


def tensorflow_against_litert(
    op_table: OpTable,
    served: Mapping[str, Sequence[Measurement]],
    flops: Mapping[str, int],
    machine: MachineLimits,
    reports: Mapping[str, Mapping[str, Any]],
) -> str:
    """The MobileNet per request in a ``tf.function`` (``op_table``, from its profile): its ops,
    its convolutions against their arithmetic at the peak and against LiteRT's whole request;
    and, where the runtimes reported, the ops LiteRT's converter left."""
    tf_ops = sum(t.count for t in op_table.times) / TRACED_CALLS
    convolutions = [t for t in op_table.times if "Conv" in t.op]
    conv_count = sum(t.count for t in convolutions) / TRACED_CALLS
    conv_s = sum(t.self_s for t in convolutions) / TRACED_CALLS
    conv_at_peak = flops[MOBILENET.name] / conv_count / machine.peak_flops
    litert_s = median_of(served, MOBILENET.name, "litert")
    lines = [
        f"TensorFlow: {tf_ops:.0f} ops a request; {conv_count:.0f} convolutions took "
        f"{format_seconds(conv_s)}, {format_seconds(conv_s / conv_count)} each, "
        f"{conv_s / conv_count / conv_at_peak:.0f}x the {format_seconds(conv_at_peak)} their "
        "arithmetic needs on average at the peak",
        f"LiteRT's whole request ({format_seconds(litert_s)}) took the time of "
        f"{litert_s / (conv_s / conv_count):.1f} of TensorFlow's convolutions",
    ]
    if reports:
        litert_ops = reports[MOBILENET.name]["litert_ops"]
        elementwise = sum(t.count for t in op_table.times if t.op in ("Mul", "AddV2"))
        lines.append(
            f"LiteRT: {sum(litert_ops.values())} ops a request; "
            f"TensorFlow ran {elementwise / TRACED_CALLS:.0f} Mul and AddV2 ops a request, LiteRT "
            f"{litert_ops.get('MUL', 0) + litert_ops.get('ADD', 0)} MUL and ADD (its converter "
            "folds batch normalization into the convolutions' weights)"
        )
    return "\n".join(lines)


def int8_price_per_op(
    served: Mapping[str, Sequence[Measurement]], reports: Mapping[str, Mapping[str, Any]]
) -> str:
    """A line a reported model: its int8 model's time over the float one's, per op that takes
    int8 weights."""
    lines = []
    for name, report in reports.items():
        float_s, int8_s = (median_of(served, name, w) for w in ("litert", "litert-int8"))
        per_op = (int8_s - float_s) / report["int8_weight_ops"]
        lines.append(
            f"{name}: {report['int8_weight_ops']} ops with int8 weights; int8 model "
            f"{format_seconds(int8_s)} against {format_seconds(float_s)}: "
            f"{format_seconds(abs(per_op))} an op {'more' if per_op > 0 else 'less'}"
        )
    return "\n".join(lines)


def median_of(served: Mapping[str, Sequence[Measurement]], workload: str, way: str) -> float:
    """``way``'s median time a request of ``workload``'s model."""
    (measured,) = (m for m in served[workload] if m.label == way)
    return measured.median_s


def fastest_ways(served: Mapping[str, Sequence[Measurement]]) -> list[str]:
    """Which way answered each model fastest, against each way tied with it, a sentence a
    model: what the short answer quotes."""
    return [
        rank(measurements).sentence(f" for the {model_name(name)} model")
        for name, measurements in served.items()
    ]


def onnx_caveats(batched: Sequence[Measurement], tails: Tails) -> tuple[str, ...]:
    """What the page measured against ONNX Runtime: the small model's batches where a
    ``tf.function`` answered faster, and stalls beyond a ``tf.function``'s."""
    found = []
    for batch in BATCHES:
        tf_faster = Faster("tf-function", "onnxruntime").check(at_size(batched, batch))
        if tf_faster.held:
            found.append(f"at a batch of {batch} of the small model, {measured_here(tf_faster)}")
    onnx_stalls, tf_stalls = stalls(tails, "onnxruntime"), stalls(tails, "tf-function")
    if onnx_stalls > tf_stalls:
        found.append(
            f"{onnx_stalls} of its {REQUESTS * len(tails['onnxruntime'])} requests "
            f"of the small model stalled, against {tf_stalls} of a tf.function's"
        )
    return tuple(found)


def impsy_scenario(served: Mapping[str, Sequence[Measurement]], checked: ClaimReport) -> Table:
    """impsy#48's figures for a small network beside this machine's tiny MLP; ``checked``,
    :data:`REQUEST_CHECKS` checked (:meth:`ClaimReport.of`)."""
    rows = [
        [
            "Keras, per prediction",
            "4.96 ms",
            format_seconds(median_of(served, MLP.name, "model-call")),
        ],
        ["LiteRT interpreter", "0.17 ms", format_seconds(median_of(served, MLP.name, "litert"))],
        ["LiteRT's speed-up", "29.17x", checked[TINY_LITERT].effect],
    ]
    return Table(
        "A small network's prediction, cpmpercussion/impsy#48's laptop and this machine's tiny MLP",
        ["", "impsy#48 (quoted)", "this machine (measured)"],
        rows,
    )


def answer_sentences(
    served: Mapping[str, Sequence[Measurement]], calls: Sequence[Measurement], cold: ColdStarts
) -> str:
    """The short answer's sentences: the fastest way for each model, ``predict``'s price, the
    call against the arithmetic, and the import's share of a Keras server's cold start."""
    (litert_call,) = (m.median_s for m in calls if m.label == "litert")
    return (
        "Serve with whatever answers a call with the least work around it. On this machine, "
        + "; ".join(fastest_ways(served))
        + f". Keras's predict took {format_seconds(median_of(served, MLP.name, 'predict'))} a "
        "request on the tiny model: it is built for batches. On the tiny model the call is the "
        f"cost (LiteRT's call with nothing to compute took {format_seconds(litert_call)}, "
        f"its answer from the tiny model {format_seconds(median_of(served, MLP.name, 'litert'))}), "
        "which the LiteRT interpreter and ONNX Runtime keep small; on a convolutional one "
        "the kernels are, and the runtimes' kernels decide. A server that loads a .tflite or an "
        ".onnx file never imports TensorFlow; importing Keras and TensorFlow was "
        f"{cold.import_share('keras'):.0%} of a Keras server's cold start. These figures are "
        "from this page's 2-core virtual machine."
    )


def advice(
    checked: ClaimReport, close: ClaimReport, onnx_caveats: Sequence[str]
) -> list[Recommendation]:
    """The short answer's recommendations: ``checked``, :data:`REQUEST_CHECKS` checked;
    ``close``, :func:`answers_close`; ``onnx_caveats``, :func:`onnx_caveats`."""
    litert_recipe = "convert-to-litert-and-check-the-outputs"
    return [
        Recommendation(
            "Serve a tiny model with LiteRT's interpreter, not Keras",
            checked[TINY_LITERT],
            Change("the serving runtime", "LiteRT's interpreter", model="a tiny MLP"),
            requires=(close[TINY_LITERT_CLOSE],),
            recipe=litert_recipe,
        ),
        Recommendation(
            "Never call predict once per request",
            checked[TINY_CALL],
            Change("model.predict on a small batch", "avoided"),
            recipe="serve-a-tf-function-with-an-input-signature",
        ),
        Recommendation(
            "Give LiteRT every core for a convolutional model",
            checked[MOBILENET_THREADS],
            Change("LiteRT's num_threads", "every core", model="convolutional"),
        ),
        Recommendation(
            "Try int8 weights in LiteRT for a model of a few large products",
            checked[SMALL_INT8],
            Change("LiteRT's weights", "int8", model="a few large products"),
            requires=(close[SMALL_INT8_CLOSE],),
            recipe=litert_recipe,
        ),
        Recommendation(
            "Keep float weights in LiteRT for a model of many small convolutions",
            checked[MOBILENET_FLOAT],
            Change("LiteRT's weights", "float", model="many small convolutions"),
            recipe=litert_recipe,
        ),
        Recommendation(
            "Try ONNX Runtime beside a tf.function on a convolutional model",
            checked[MOBILENET_ONNX],
            Change("the serving runtime", "ONNX Runtime", model="convolutional"),
            requires=(close[MOBILENET_ONNX_CLOSE],),
            caveats=tuple(onnx_caveats),
            recipe="convert-to-onnx-and-check-the-outputs",
        ),
    ]
