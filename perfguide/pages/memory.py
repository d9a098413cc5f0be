"""The memory chapter: its checks on each experiment's growth, the tables of what the processes
held and gave back under each allocator, a training step's peaks by policy, and the short answer
built from them."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping

from perfguide.measure.memory import Experiment, Growth, Peaks, changes
from perfguide.report.format import format_bytes
from perfguide.report.publishing.answers import Change, Recommendation, ShortAnswer
from perfguide.report.tables.memory import growth_table, layer_table, peak_table, per_example_table
from perfguide.report.tables.table import Collapsed, Table
from perfguide.report.verdicts.claims import Claim
from perfguide.report.verdicts.memory_claims import (
    PEAK_KINDS,
    grows,
    grows_less,
    needs_less,
    stays_flat,
)
from perfguide.workloads import memory

#: Bytes a call from which a way counts as growing the process.
GROWS = 1e3
#: The allocator the others are set against: glibc's malloc as it comes (the one-shape
#: experiment's processes).
GLIBC = "glibc malloc"


def _under_a_tenth(grown: Growth, reference: Growth, names: tuple[str, str] | None = None) -> Claim:
    return grows_less(grown, reference, 1 / 10, "a tenth", names)


@dataclasses.dataclass(frozen=True)
class Grows:
    """That ``way`` grows the process by at least ``at_least`` bytes a call."""

    way: str
    at_least: float

    def check(self, experiment: Experiment) -> Claim:
        return grows(experiment.growth[self.way], self.at_least)


@dataclasses.dataclass(frozen=True)
class StaysFlat:
    """That ``way`` grows the process by under :data:`GROWS` bytes a call."""

    way: str

    def check(self, experiment: Experiment) -> Claim:
        return stays_flat(experiment.growth[self.way], GROWS)


@dataclasses.dataclass(frozen=True)
class GrowsUnderATenth:
    """That ``way`` grows the process by under a tenth of what ``reference`` grows it."""

    way: str
    reference: str

    def check(self, experiment: Experiment) -> Claim:
        return _under_a_tenth(experiment.growth[self.way], experiment.growth[self.reference])


PREDICT_GROWS = Grows("predict", GROWS)
CALL_STAYS_FLAT = StaysFlat("model-call")
#: The checks on one shape of batch, call after call.
ONE_SHAPE_CLAIMS = (
    PREDICT_GROWS,
    CALL_STAYS_FLAT,
    StaysFlat("predict-on-batch"),
    StaysFlat("input-signature"),
)
REDUCE_RETRACING_FIXES = GrowsUnderATenth("reduce-retracing", "tf-function")
SIGNATURE_FIXES = GrowsUnderATenth("input-signature", "tf-function")
#: The checks on a new shape at every call: retracing grows the process, one graph for any
#: batch size fixes most of it, and what is left still grows.
NEW_SHAPE_CLAIMS = (
    Grows("tf-function", 10 * GROWS),
    REDUCE_RETRACING_FIXES,
    SIGNATURE_FIXES,
    Grows("input-signature", 10 * GROWS),
)
#: Padded to a few sizes, the process should stop growing: under the page's own bound.
BUCKETS_FIX = StaysFlat("buckets")


def _ways_table(title: str, experiment: Experiment) -> Table:
    return growth_table(title, experiment.growth, memory.WAYS, experiment.traces)


def one_shape_table(one_shape: Experiment) -> Collapsed:
    """Each way's growth on one shape of batch, its traces and its code, collapsed."""
    return Collapsed(
        "One shape: each way's growth, what it held and its code",
        _ways_table("One shape of batch: growth per call (median of 3 processes)", one_shape),
    )


def new_shapes_table(new_shapes: Experiment) -> Table:
    """Each way's growth with a new shape at every call, its traces and its code."""
    return _ways_table(
        "A new shape every call: growth per call (median of 3 processes)", new_shapes
    )


def onednn_growth(new_shapes: Experiment, onednn_off: Experiment) -> str:
    """A line a way timed with oneDNN off: its growth a call with oneDNN on and off."""
    return "\n".join(
        f"{way}: {format_bytes(new_shapes.growth[way].rate)} a call with oneDNN, "
        f"{format_bytes(without.rate)} without"
        for way, without in onednn_off.growth.items()
    )


def kernel_cache_claims(new_shapes: Experiment, onednn_off: Experiment) -> list[Claim]:
    """That each way timed with oneDNN off grows under a tenth as fast as with it on (then the
    growth was oneDNN's kernels), and :data:`BUCKETS_FIX`."""
    onednn = [
        _under_a_tenth(
            without, new_shapes.growth[way], (f"{way} with oneDNN off", f"with it on {way}")
        ).restated(
            f"with oneDNN off, {way} grows the process by under a tenth of its growth "
            "with oneDNN on"
        )
        for way, without in onednn_off.growth.items()
    ]
    return [*onednn, BUCKETS_FIX.check(new_shapes)]


def _given_back(change: Mapping[str, float]) -> tuple[float, float, float]:
    """What the calls added, what ``gc.collect()``, ``clear_session()`` and deleting the model
    changed together, and what ``malloc_trim(0)`` changed, the last step (``change``: each
    step's, as :func:`~perfguide.measure.memory.changes` gives them)."""
    steps = list(change)
    return change["after the calls"], sum(change[step] for step in steps[1:-1]), change[steps[-1]]


def held_table(experiment: Experiment) -> Collapsed:
    """What the processes held after each step that was to give memory back, and its change
    from the step before, collapsed."""
    held = experiment.held()
    change = changes(held)
    title = "Memory held after each step, in the order tried"
    rows = [
        [step, format_bytes(bytes_held), format_bytes(change.get(step, 0))]
        for step, bytes_held in held.items()
    ]
    return Collapsed(title, Table(title, ["step", "held", "change"], rows))


def by_allocator(measured: Mapping[str, Experiment]) -> dict[str, Experiment]:
    """The experiments that called ``predict`` with one shape, by allocator: glibc's malloc as
    it comes (the one-shape experiment), then each other allocator this machine has."""
    others = {
        name.removeprefix("predict, "): experiment
        for name, experiment in measured.items()
        if name.startswith("predict, ")
    }
    return {GLIBC: measured["one shape"]} | others


def allocator_growth_table(allocators: Mapping[str, Experiment]) -> Collapsed:
    """``predict``'s growth and the objects it left a call, under each allocator, collapsed."""
    return Collapsed(
        "predict's growth under each allocator",
        growth_table(
            "predict, one shape: growth per call by allocator (median of 3 processes)",
            {name: experiment.growth["predict"] for name, experiment in allocators.items()},
            objects={name: e.objects_per_call["predict"] for name, e in allocators.items()},
        ),
    )


def given_back_table(allocators: Mapping[str, Experiment]) -> Collapsed:
    """Under each allocator, what the calls added and what the steps after them gave back,
    collapsed."""
    rows = [
        [name, *map(format_bytes, _given_back(changes(experiment.held())))]
        for name, experiment in allocators.items()
    ]
    return Collapsed(
        "What the calls added and the steps gave back, by allocator",
        Table(
            "What the processes held, by allocator: the change at each step (median of 3 "
            "processes; the glibc row's processes had called the other three ways as well)",
            ["allocator", "the calls", "gc, clear_session, del", "malloc_trim(0)"],
            rows,
        ),
    )


def allocator_claims(allocators: Mapping[str, Experiment]) -> dict[str, Claim]:
    """By allocator but glibc's malloc, the claim that under it ``predict`` grows the process
    by under a tenth of its growth under glibc's."""
    glibc = allocators[GLIBC].growth["predict"]
    return {
        name: _under_a_tenth(
            experiment.growth["predict"], glibc, (f"predict under {name}", f"under {GLIBC}")
        ).restated(
            f"under {name}, predict grows the process by under a tenth of its growth under {GLIBC}"
        )
        for name, experiment in allocators.items()
        if name != GLIBC
    }


def step_peak_table(peaks: Mapping[str, Peaks]) -> Collapsed:
    """A training step's peaks at every batch size and policy, collapsed."""
    return Collapsed(
        "Every batch size and policy: a step's peak, in full",
        peak_table("A training step's peak memory (median of 3 processes)", peaks),
    )


def memory_per_example(peaks: Mapping[str, Peaks], available: float) -> Collapsed:
    """The memory a step needs per example of its batch, by policy, and the largest batch that
    fits in ``available`` bytes, collapsed."""
    return Collapsed(
        "Memory per example of a batch, and the largest batch that fits",
        per_example_table(
            "Memory a training step needs per example of its batch (median of 3 processes)",
            peaks,
            available,
        ),
    )


def peak_claims(peaks: Mapping[str, Peaks]) -> list[Claim]:
    """That a step under ``mixed_bfloat16`` needs at least 1.5x less memory an example than
    under ``float32``, for each kind of peak
    (:data:`~perfguide.report.verdicts.memory_claims.PEAK_KINDS`)."""
    float32, bfloat16 = (peaks[policy] for policy in memory.TRAINING_POLICIES)
    return [needs_less(bfloat16, float32, kind, by=1.5) for kind in PEAK_KINDS]


def layers_table(peaks: Mapping[str, Peaks]) -> Collapsed:
    """What each layer keeps for the backward pass, per example, by policy, collapsed."""
    title = "What each layer keeps for the backward pass, per example"
    return Collapsed(title, layer_table(title, peaks))


def heaviest_layer(peaks: Mapping[str, Peaks]) -> str:
    """The layer that keeps the most beyond its own output under ``mixed_bfloat16``, and what
    it keeps for each element of its input (the layer before's output, 2 bytes an element)."""
    layers = peaks["mixed_bfloat16"].layers
    names = list(layers)
    heaviest = max(names, key=lambda n: layers[n]["kept"] - layers[n]["output"])
    kept, output = layers[heaviest]["kept"], layers[heaviest]["output"]
    input_elements = layers[names[names.index(heaviest) - 1]]["output"] / 2
    return (
        f"{heaviest}: keeps {format_bytes(kept)} an example for an output of "
        f"{format_bytes(output)}, {kept / input_elements:.3g} bytes for each element of its input"
    )


def _answer(measured: Mapping[str, Experiment], peaks: Mapping[str, Peaks]) -> str:
    one_shape, new_shapes = measured["one shape"], measured["new shapes"]
    _, freed, trimmed = _given_back(changes(new_shapes.held()))
    float32_tensors, bfloat16_tensors = (
        statistics.median(peaks[policy].per_example("tensors"))
        for policy in memory.TRAINING_POLICIES
    )
    return (
        "Measure the way you call the model: on this machine predict grew the process by "
        f"{format_bytes(one_shape.growth['predict'].rate)} a call with one shape of input, "
        f"model(x) by {format_bytes(one_shape.growth['model-call'].rate)}. With a new shape at "
        "every call, a plain tf.function grew it by "
        f"{format_bytes(new_shapes.growth['tf-function'].rate)} a call (a graph a shape), one "
        "with an input signature by "
        f"{format_bytes(new_shapes.growth['input-signature'].rate)} (oneDNN's kernel for each "
        "shape). gc.collect(), clear_session() and deleting the model then changed what it held "
        f"by {format_bytes(freed)}, glibc's malloc_trim by {format_bytes(trimmed)}. A training "
        "step of a small image classifier held "
        f"{format_bytes(float32_tensors)} of tensors an example of its batch under float32, "
        f"{format_bytes(bfloat16_tensors)} under mixed_bfloat16 "
        f"({peak_claims(peaks)[0].quoted}). These figures are from this page's 2-core virtual "
        "machine."
    )


def short_answer(measured: Mapping[str, Experiment], peaks: Mapping[str, Peaks]) -> ShortAnswer:
    """The box atop the page, from the checks above on ``measured`` and ``peaks`` (as
    :func:`~perfguide.processes.memory_processes.measure` returns them)."""
    one_shape, new_shapes = measured["one shape"], measured["new shapes"]
    varying = {"shapes": "varying", "onednn": "on"}
    for_memory = {"goal": "memory"}
    loop = "call-model-x-in-a-loop-not-predict"
    advice = [
        Recommendation(
            "Don't call predict in a loop: it grows the process",
            PREDICT_GROWS.check(one_shape),
            Change("model.predict in a loop", "avoided"),
            recipe=loop,
        ),
        Recommendation(
            "Call model(x) per batch in a loop instead",
            CALL_STAYS_FLAT.check(one_shape),
            Change("model(x) per batch in a loop", "used", **for_memory),
            recipe=loop,
        ),
        Recommendation(
            "Where shapes vary, give the tf.function reduce_retracing=True or an input "
            "signature with a None dimension: it grows a tenth as fast as retracing",
            REDUCE_RETRACING_FIXES.check(new_shapes),
            Change(
                "a tf.function's shapes",
                "relaxed: reduce_retracing=True or a None dimension",
                **varying,
            ),
            requires=(SIGNATURE_FIXES.check(new_shapes),),
            recipe="let-one-graph-take-any-batch-size",
        ),
        Recommendation(
            "Where shapes vary, pad batches to a few sizes as well, so that the process stops "
            "growing: oneDNN keeps a kernel per shape",
            BUCKETS_FIX.check(new_shapes),
            Change("batch shapes", "padded to a few sizes", **varying),
            recipe="pad-batches-to-a-few-sizes",
        ),
        *(
            Recommendation(
                f"Start the process with {name} to stop predict's growth",
                claim,
                Change("the allocator (glibc's malloc)", "another allocator", **for_memory),
            )
            for name, claim in allocator_claims(by_allocator(measured)).items()
        ),
        *(
            Recommendation(
                "Train under mixed_bfloat16 to fit a larger batch in memory",
                claim,
                Change("mixed_bfloat16", "on", **for_memory),
            )
            for claim in peak_claims(peaks)
        ),
    ]
    return ShortAnswer(_answer(measured, peaks), advice)
