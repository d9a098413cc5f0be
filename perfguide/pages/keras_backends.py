"""The Keras-backends chapter: each backend timed in fresh processes of its own, the backends'
processes taking turns; the tables by model, the claims, where a ``fit`` call's time goes, and
the short answer built from them.

Long as its chapter is: every section reads the one set of backend runs
(:class:`BackendRuns`), in a few small functions each.
"""

from __future__ import annotations

import cProfile
import dataclasses
import pstats
import time
from collections.abc import Mapping, Sequence
from typing import Any

from perfguide.measure.environment import quick_everywhere
from perfguide.measure.measurement import Measurement
from perfguide.measure.memory import Peaks
from perfguide.processes.pool import job_of, side_by_side, take_turns
from perfguide.report.format import NEXT_PROCESS, format_bytes, format_percent, format_seconds
from perfguide.report.publishing.answers import Change, Recommendation, ShortAnswer
from perfguide.report.tables.comparison import Comparison
from perfguide.report.tables.memory import per_example
from perfguide.report.tables.table import Collapsed, Stacked, Table
from perfguide.report.verdicts.claims import ClaimReport, Faster, Judged
from perfguide.workloads import keras_backends as kb

#: Fresh processes per backend (one in a quick run). Backends are compared across processes,
#: where the machine's drift between runs outweighs the processes' own spread (as with the
#: vectorization chapter's process-wide settings).
PROCESSES = 2
#: The paths timed over one batch too, on the MLP: with the same epoch over
#: :data:`~perfguide.workloads.keras_backends.EPOCH_BATCHES` batches, they split a call into
#: its price (what a call costs besides its steps) and its steps.
SPLIT = {
    "keras-2": ("fit",),
    "tensorflow": ("fit", "fit-dataset", "evaluate"),
    "jax": ("fit-jit", "evaluate"),
}


#: The backends whose training step's operations are counted, and the workers' functions that
#: count them and say what OpenVINO's predict computed in.
OPS_COUNTED = ("tensorflow", "jax")
OPS = f"{kb.__name__}:{kb.ops_per_step.__name__}"
PRECISION = f"{kb.__name__}:{kb.predict_precision_of.__name__}"
#: The worker's function that reads a training step's peak memory, on the backends counted.
STEP_PEAKS = f"{kb.__name__}:{kb.step_peaks.__name__}"


def label(backend: str, path: str) -> str:
    """A measurement's name on this page: the backend, then the path ("jax-fit-jit")."""
    return f"{backend}-{path}"


def timed_paths() -> str:
    """What each backend times on which models
    (:data:`~perfguide.workloads.keras_backends.TIMED`), a line a backend."""
    lines = []
    for backend, paths in kb.TIMED.items():
        on = {}
        for path, models in paths.items():
            models_said = "every model" if models == kb.EVERY_MODEL else ", ".join(models)
            on.setdefault(models_said, []).append(path)
        said = "; ".join(f"{', '.join(p)} on {models}" for models, p in on.items())
        lines.append(f"{kb.NAMES[backend]}: {said}")
    return "\n".join(lines)


def installed() -> list[str]:
    """The backends this installation runs (the others are said with their reason)."""
    return [b for b in kb.BACKENDS if b not in kb.missing_backends()]


@dataclasses.dataclass(frozen=True)
class BackendRuns:
    """Every backend's measurements, by model (labelled by :func:`label`), the MLP's split runs
    over one batch (the same labels), the environment record of Keras 3 on TensorFlow's
    processes, every measurement as its workload names it (to publish), the operations in the
    MLP's training step on each backend that counts them
    (:func:`~perfguide.workloads.keras_backends.ops_per_step`), and the precision OpenVINO's
    ``predict`` computed in (:func:`~perfguide.workloads.keras_backends.predict_precision_of`,
    where OpenVINO ran), and the MLP's training step's peak memory on those backends
    (:func:`peaks_of`)."""

    by_model: dict[str, list[Measurement]]
    one_batch: list[Measurement]
    environment: dict[str, Any]
    measured: list[Measurement]
    ops_per_step: dict[str, int] = dataclasses.field(default_factory=dict)
    openvino_predict: dict[str, Any] | None = None
    #: The MLP's training step's peak memory on each backend that counts its operations.
    peaks: dict[str, Peaks] = dataclasses.field(default_factory=dict)


def _by_model(timed: Mapping[str, Sequence[Measurement]]) -> dict[str, list[Measurement]]:
    by_model: dict[str, list[Measurement]] = {model: [] for model in kb.MODELS}
    for backend, measured in timed.items():
        for m in measured:
            model, path = kb.model_and_path(m.label)
            by_model[model].append(dataclasses.replace(m, label=label(backend, path)))
    return by_model


def time_backends(device: str) -> BackendRuns:
    """Every installed backend's variants (:func:`variants`) timed by its own fresh processes
    (:data:`PROCESSES`), the backends' processes taking turns
    (:func:`~perfguide.processes.pool.take_turns`), quick: only each process's median enters a
    claim's interval across processes, not its blocks' spread."""
    processes = 1 if quick_everywhere() else PROCESSES
    started = {"processes": processes, "device": device}
    groups = side_by_side({b: {**started, "settings": kb.BACKENDS[b]} for b in installed()})
    try:
        # Read while the processes are fresh: one that has trained other models holds freed
        # memory that a step reuses without growing the process.
        peaks = {
            b: peaks_of(b, groups[b].call_each(STEP_PEAKS, [{"model": "mlp"}] * processes))
            for b in OPS_COUNTED
            if b in groups
        }
        jobs = {b: job_of(kb.BY_BACKEND[b], quick=True) for b in groups}
        timed = take_turns(groups, jobs)
        split = {b: groups[b] for b in SPLIT if b in groups}
        one = {b: job_of(kb.BY_BACKEND[b], [f"mlp-{p}" for p in SPLIT[b]], 1, True) for b in split}
        one_timed = take_turns(split, one)
        environment = groups["tensorflow"].environment
        ops = {b: groups[b].call_in(0, OPS, model="mlp") for b in OPS_COUNTED if b in groups}
        openvino = (
            groups["openvino"].call_in(0, PRECISION, model="mlp") if "openvino" in groups else None
        )
    finally:
        for group in groups.values():
            group.close()
    measured = [m for runs in (timed, one_timed) for ms in runs.values() for m in ms]
    return BackendRuns(
        _by_model(timed), _by_model(one_timed)["mlp"], environment, measured, ops, openvino, peaks
    )


def peaks_of(backend: str, found: Sequence[Mapping[str, Any]]) -> Peaks:
    """The :class:`~perfguide.measure.memory.Peaks` of ``backend``'s processes, from what
    :func:`~perfguide.workloads.keras_backends.step_peaks` returned in each."""
    return Peaks(
        backend,
        kb.PEAK_BATCHES,
        tensors=(),
        resident=tuple(tuple(f["resident"]) for f in found),
        activations=found[0]["activations"],
        before=tuple(f["before"] for f in found),
    )


def _cell(measured: Sequence[Measurement], name: str) -> str:
    found = [m for m in measured if m.label == name]
    return format_seconds(found[0].median_s) if found else "–"


def times_table(runs: BackendRuns, paths: Sequence[tuple[str, str]], caption: str) -> Table:
    """Each model's median time per batch on each of ``paths`` (backend, path): a row for each
    model timed on any of them."""
    names = {label(b, p) for b, p in paths}
    rows = [
        [model, *(_cell(measured, label(b, p)) for b, p in paths)]
        for model, measured in runs.by_model.items()
        if names & {m.label for m in measured}
    ]
    return Table(caption, ["model", *(label(b, p) for b, p in paths)], rows)


def fits_in_full(runs: BackendRuns) -> Collapsed:
    """Each model's ``fit`` on every backend, against Keras 3 on TensorFlow's, collapsed."""
    tables = []
    for model, measured in runs.by_model.items():
        compared = Comparison([m for m in measured if "-fit" in m.label], baseline="tensorflow-fit")
        tables.append(Table(f"The {model}'s fit", compared.header(), compared.rows()))
    return Collapsed("Each model's fit, in full", Stacked(tables))


#: The columns of the training table and of the inference table.
TRAINING = (
    ("keras-2", "fit"),
    ("tensorflow", "fit"),
    ("tensorflow", "fit-jit"),
    ("tensorflow", "fit-dataset"),
    ("jax", "fit-jit"),
)
INFERENCE = tuple((b, p) for p in ("predict", "model-call") for b in kb.BACKENDS)


# -- The claims ---------------------------------------------------------------------------------

#: Keras's README: the right backend for a model speeds it up by "20% to 350%". Each backend
#: at its default jit_compile: on by default on JAX, off on TensorFlow without a GPU.
JAX_OVER_TENSORFLOW = tuple(
    Judged(Faster(label("jax", "fit-jit"), label("tensorflow", "fit"), 1.2), part=m, said_of=m)
    for m in kb.MODELS
)
#: keras-team/keras#18648: JAX without jit_compile far slower than with it.
JIT_ON_JAX = Judged(Faster(label("jax", "fit-jit"), label("jax", "fit"), 2), part="mlp")
#: keras-team/keras#19953: Keras 2 faster than Keras 3 on TensorFlow (on its model), and Keras 3
#: faster with jit_compile=True (on the MLP: XLA's compile of #19953's model takes seconds).
KERAS_2_OVER_3 = Judged(
    Faster(label("keras-2", "fit"), label("tensorflow", "fit")), part="deep-mlp", said_of="deep-mlp"
)
XLA_ON_TENSORFLOW = Judged(
    Faster(label("tensorflow", "fit-jit"), label("tensorflow", "fit")), part="mlp"
)
#: A tf.data.Dataset built once against NumPy arrays, fit on TensorFlow.
DATASET_ON_TENSORFLOW = Judged(
    Faster(label("tensorflow", "fit-dataset"), label("tensorflow", "fit")), part="mlp"
)
#: steps_per_execution on TensorFlow (the training-loop chapter's advice, on this MLP), and
#: whether JAX's fit stays Keras's "20%" ahead of it.
STEPS = label("tensorflow", "fit-steps-per-execution")
STEPS_ON_TENSORFLOW = Judged(Faster(STEPS, label("tensorflow", "fit")), part="mlp")
JAX_OVER_STEPS = Judged(Faster(label("jax", "fit-jit"), STEPS, 1.2), part="mlp")
#: evaluate over an epoch from the arrays: JAX's against TensorFlow's.
EVALUATE = Judged(Faster(label("jax", "evaluate"), label("tensorflow", "evaluate")), part="mlp")
#: predict on one batch: JAX's and OpenVINO's against TensorFlow's.
PREDICT = tuple(
    Judged(Faster(label(b, "predict"), label("tensorflow", "predict")), part="mlp")
    for b in ("jax", "openvino")
)


def claims(runs: BackendRuns) -> tuple[Judged, ...]:
    """The checks the installed backends can be judged on."""
    labels = {model: {m.label for m in measured} for model, measured in runs.by_model.items()}
    every = (
        *JAX_OVER_TENSORFLOW,
        JIT_ON_JAX,
        KERAS_2_OVER_3,
        XLA_ON_TENSORFLOW,
        DATASET_ON_TENSORFLOW,
        STEPS_ON_TENSORFLOW,
        JAX_OVER_STEPS,
        EVALUATE,
        *PREDICT,
    )
    return tuple(check for check in every if set(check.labels) <= labels[check.part])


# -- Why jit_compile matters on JAX -------------------------------------------------------------


def dispatch_table(runs: BackendRuns) -> Table:
    """The MLP's training step on each backend that counted its operations: how many, how
    ``fit`` runs them without ``jit_compile``, and a batch of ``fit`` with it off and on."""
    how = {
        "tensorflow": "one graph call a step, either way",
        "jax": "one at a time from Python; jit_compile: one compiled call",
    }
    rows = [
        [kb.NAMES[b], str(n), how[b], *(_cell(runs.by_model["mlp"], label(b, p)) for p in JIT_PAIR)]
        for b, n in runs.ops_per_step.items()
    ]
    header = ["backend", "ops in a step", "how fit runs them", "jit_compile off", "on"]
    return Table("The MLP's training step: its operations, and a batch of fit", header, rows)


#: fit with jit_compile off and on.
JIT_PAIR = ("fit", "fit-jit")


def per_dispatch(runs: BackendRuns) -> str:
    """What each of JAX's operations cost a step without ``jit_compile``, from the medians:
    the step's time beyond the compiled step's, over its operations."""
    ops = runs.ops_per_step.get("jax")
    found = {m.label: m for m in runs.by_model["mlp"]}
    off, on = (found.get(label("jax", p)) for p in JIT_PAIR)
    if not ops or off is None or on is None:
        return "JAX's operations were not counted here."
    each = (off.median_s - on.median_s) / ops
    return (
        f"Without jit_compile, Keras 3 on JAX dispatched the MLP's {ops} operations a step one "
        f"at a time: {format_seconds(each)} each beyond the compiled step (from the medians). "
        "Keras 3 on TensorFlow runs its step as one graph call with jit_compile off too, so the "
        "switch changes only how its kernels are made."
    )


def precision_note(runs: BackendRuns) -> str:
    """What OpenVINO's ``predict`` computed in, and how far its outputs lay from float32's."""
    found = runs.openvino_predict
    if found is None:
        return "OpenVINO did not run here."
    note = (
        f"OpenVINO's predict computed in {found['precision']} here; its largest difference from "
        f"model(x)'s float32 outputs was {format_percent(found['difference'])} of the largest "
        "output."
    )
    if found["precision"] != "float32":
        note += (
            f" {found['precision']} is OpenVINO's default on a CPU with bfloat16 units, so its "
            "predict times are not float32 times."
        )
    return note


def epochs_to_repay(extra_s: float, saved_s: float) -> str:
    """After how many epochs a first call ``extra_s`` dearer than the other path's is repaid by
    ``saved_s`` an epoch.

    >>> epochs_to_repay(2.0, 0.5), epochs_to_repay(-0.1, 0.5), epochs_to_repay(1.0, -0.2)
    ('4', 'at once', 'never: no epoch saved')
    """
    if saved_s <= 0:
        return "never: no epoch saved"
    return "at once" if extra_s <= 0 else f"{extra_s / saved_s:.2g}"


def compile_repaid(runs: BackendRuns) -> Collapsed:
    """Per model, what JAX's first ``fit`` call cost beyond a steady one (tracing and
    compiling its step) and TensorFlow's, the epoch of
    :data:`~perfguide.workloads.keras_backends.EPOCH_BATCHES` batches JAX saved, and after how
    many epochs that repays the difference (from the medians)."""
    jax, tensorflow = label("jax", "fit-jit"), label("tensorflow", "fit")
    rows = []
    for model, measured in runs.by_model.items():
        found = {m.label: m for m in measured}
        if jax not in found or tensorflow not in found:
            continue
        fast, slow = found[jax], found[tensorflow]
        extra = fast.first_call_overhead_s - slow.first_call_overhead_s
        saved = (slow.median_s - fast.median_s) * kb.EPOCH_BATCHES
        rows.append(
            [model, format_seconds(fast.first_call_overhead_s)]
            + [format_seconds(slow.first_call_overhead_s), format_seconds(saved)]
            + [epochs_to_repay(extra, saved)]
        )
    header = [
        "model",
        f"{jax}'s first call",
        f"{tensorflow}'s",
        "an epoch saved",
        "epochs to repay",
    ]
    table = Table(
        "A first fit call beyond a steady one, and the epochs that repay it", header, rows
    )
    return Collapsed("When JAX's compile is repaid", table)


# -- A training step's memory ------------------------------------------------------------------


def memory_table(runs: BackendRuns) -> Table:
    """The MLP's training step on each backend whose peaks were read: the process's peak
    beyond what it held before, at each batch size (median of its processes), and per example
    of a batch (the peaks' slope, with where the next process's should land)."""
    rows = [
        [kb.NAMES[backend], *(format_bytes(v) for v in p.at("resident"))]
        + [per_example(p, "resident")]
        for backend, p in runs.peaks.items()
    ]
    batches = [f"batch {b:,}" for b in kb.PEAK_BATCHES]
    header = ["backend", *batches, f"an example ({NEXT_PROCESS})"]
    return Table("The MLP's training step: the process's peak memory", header, rows)


def activations_note(runs: BackendRuns) -> str:
    """What one example's activations take, from the MLP's layer shapes, and its input."""
    if not runs.peaks:
        return "No backend's training step was read here."
    activations = next(iter(runs.peaks.values())).activations
    features = kb.MODELS["mlp"].sample[0] * 4
    return (
        f"From the MLP's layer shapes, one example's activations take {format_bytes(activations)} "
        f"(float32), and its input {format_bytes(features)}."
    )


# -- Where a fit call's time goes ---------------------------------------------------------------


def price_and_steps(runs: BackendRuns) -> Table:
    """Each split path on the MLP (``fit``'s and ``evaluate``'s), from its times over one batch
    and over an epoch: what a call costs besides its steps (its price), and a step."""
    epoch = kb.EPOCH_BATCHES
    rows = []
    for one in runs.one_batch:
        (many,) = (m for m in runs.by_model["mlp"] if m.label == one.label)
        step = (many.median_s * epoch - one.median_s) / (epoch - 1)
        price = one.median_s - step
        share = price / (many.median_s * epoch)
        rows.append(
            [one.label, format_seconds(one.median_s), format_seconds(price), format_seconds(step)]
            + [f"{share:.0%}"]
        )
    header = ["path", "over 1 batch", "price per call", "a step", f"price in {epoch} batches"]
    return Table(
        f"The MLP's fit and evaluate: a call's price and a step, from 1 and {epoch} batches",
        header,
        rows,
    )


@dataclasses.dataclass(frozen=True)
class FitProfile:
    """Python's profiler on ``fit`` calls in this process (Keras 3 on TensorFlow): how long a
    call took, and the share of it spent building the input pipeline from NumPy arrays
    (Keras's array data adapter: a ``tf.data`` pipeline made anew on every call)."""

    call_s: float
    adapter_share: float
    calls: int

    def __str__(self) -> str:
        return (
            f"fit from NumPy arrays, {self.calls} calls under Python's profiler: "
            f"{format_seconds(self.call_s)} a call, {self.adapter_share:.0%} of it building "
            "the tf.data pipeline from the arrays"
        )


def profile_fit(calls: int = 10) -> FitProfile:
    """:class:`FitProfile` of ``calls`` calls of the MLP's ``fit`` over an epoch, after two
    untimed ones (tracing)."""
    network = kb.compiled("mlp", jit_compile=False, keras=kb.tl.keras_module(3))
    x, y = kb.make_data("mlp", kb.EPOCH_BATCHES)
    batch = kb.MODELS["mlp"].batch
    for _ in range(2):
        kb.fit_epoch(network, x, y, batch_size=batch)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for _ in range(calls):
        kb.fit_epoch(network, x, y, batch_size=batch)
    profiler.disable()
    elapsed = time.perf_counter() - start
    stats = pstats.Stats(profiler).stats
    adapter = sum(
        cumulative
        for (path, _, name), (_, _, _, cumulative, _) in stats.items()
        if "data_adapters" in path and name == "get_tf_dataset"
    )
    return FitProfile(elapsed / calls, adapter / elapsed, calls)


# -- The short answer -------------------------------------------------------------------------


def _answer(report: ClaimReport, checks: Sequence[Judged], profile: FitProfile) -> str:
    jax = [report[c] for c in JAX_OVER_TENSORFLOW if c in checks]
    held = sum(c.held is True for c in jax)
    unsure = sum(c.held is None for c in jax)
    faster = "at least 1.2x faster than Keras 3 on TensorFlow here"
    if not jax:
        lead = (
            "Keras 3 on JAX did not run here: no backend's training was set against TensorFlow's."
        )
    elif held == len(jax):
        lead = f"For training these models, yes: Keras 3 on JAX trained all {held} {faster}."
    elif held == unsure == 0:
        lead = (
            f"For training these models, no: Keras 3 on JAX trained none of the {len(jax)} "
            f"models {faster}."
        )
    else:
        lead = (
            f"It depends on the model: Keras 3 on JAX trained {held} of {len(jax)} models {faster}"
            + (f"; on {unsure} more the check was INCONCLUSIVE." if unsure else ".")
        )
    parts = [lead, *(c.stated + "." for c in jax[:1])]
    parts += [
        f"On TensorFlow, how fit is fed matters too: {profile.adapter_share:.0%} of a fit call "
        "from NumPy arrays went to building its tf.data pipeline anew."
    ]
    parts += [
        report[c].stated + "." for c in (DATASET_ON_TENSORFLOW, JAX_OVER_STEPS) if c in checks
    ]
    return " ".join(parts)


def short_answer(
    report: ClaimReport, checks: Sequence[Judged], profile: FitProfile, cores: int
) -> ShortAnswer:
    """The box atop the page: ``report``, ``checks`` (:func:`claims`) checked; ``profile``,
    :func:`profile_fit`'s; ``cores``, the cores the build could use."""
    here = f"(measured on a {cores}-core CPU)"
    mlp = next(c for c in JAX_OVER_TENSORFLOW if c.part == "mlp")
    advice = []
    if mlp in checks:
        advice.append(
            Recommendation(
                f"Try Keras 3 on JAX for a small model's training {here}",
                report[mlp],
                Change("KERAS_BACKEND", "jax", work="a small model's fit"),
                recipe="choose-the-backend-before-importing-keras",
            )
        )
    if JIT_ON_JAX in checks:
        advice.append(
            Recommendation(
                f"Keep jit_compile on (its default) under JAX {here}",
                report[JIT_ON_JAX],
                Change("jit_compile", "True", work="a Keras model's fit on JAX"),
            )
        )
    advice.append(
        Recommendation(
            f"Feed fit a tf.data.Dataset built once, not NumPy arrays, on TensorFlow {here}",
            report[DATASET_ON_TENSORFLOW],
            # The training-loop chapter's advice, measured here on Keras 3's TensorFlow backend.
            Change(
                "fit's input", "a tf.data pipeline", data="arrays in memory", backend="tensorflow"
            ),
            recipe="feed-fit-a-dataset-built-once",
        )
    )
    return ShortAnswer(_answer(report, checks, profile), advice)
