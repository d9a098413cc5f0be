"""The changes measured on the reader's code, each against the form it runs as written (a plain
function eagerly, a ``tf.function`` as one, a model through ``predict`` and ``fit`` over an
epoch); only a change whose claim held is advice.

- another **form**: forms are alternatives, so of those that held only the ones tied with the
  fastest are advised (:func:`~perfguide.report.verdicts.ranking.rank`), and one is named worth
  most only where the numbers separate it from the runner-up; one clearly slower than it says
  by how much;
- **keep** the code as written, where no other form was advised as faster;
- **retracing**: its usual fix, measured over calls with other typical inputs, where the code
  runs as a graph as written or a graph form is advised (the finding of how it retraces is
  :func:`~perfguide.diagnose.parent.findings.retrace_findings`'s);
- **peak**: doing less arithmetic, where the fastest form's calls run near the measured peak.
"""

from __future__ import annotations

import dataclasses
import statistics

from perfguide.diagnose.parent.bound import NEAR_LIMIT
from perfguide.diagnose.parent.diagnosis import (
    ARITHMETIC,
    AS_WRITTEN,
    BACKEND,
    CALLED,
    TRACING,
    changed_to,
)
from perfguide.diagnose.parent.evidence import Evidence, backend_and_form, backend_label
from perfguide.diagnose.worker_answers import Retracing
from perfguide.measure.limits import PEAK, PEAK_FLOPS
from perfguide.measure.measurement import Measurement, pick
from perfguide.report.format import RERUN, compared, speedup_interval
from perfguide.report.publishing.answers import Change, Recommendation
from perfguide.report.verdicts.claims import Faster, Share, per_process
from perfguide.report.verdicts.ranking import Ranking, rank
from perfguide.report.verdicts.ratios import ratio_interval
from perfguide.workloads.keras_processes import NAMES

#: The forms that run the function as a graph (where retracing matters).
GRAPH_FORMS = ("tf-function", "jit-compile")
#: A retrace-free sequence must be this much faster for the fix to count.
RETRACE_FIX = 1.1
#: What to do where a form beat the reader's own, and the chapter that explains it: for a
#: function, and for a model.
FORM_ADVICE = {
    "function": {
        "eager": ("Call it eagerly: drop tf.function", "tf_function"),
        "tf-function": ("Wrap it in tf.function", "tf_function"),
        "jit-compile": ("Compile it with tf.function(jit_compile=True)", "tf_function"),
    },
    "model": {
        "model-call": ("Call model(x) on a batch instead of predict", "training_loop"),
        "predict-on-batch": ("Use predict_on_batch for a batch in memory", "training_loop"),
        "tf-function": ("Call model(x) inside a tf.function", "training_loop"),
        "saved-model": ("Serve its SavedModel (model.export, tf.saved_model.load)", "serving"),
        "litert": ("Serve it with LiteRT's interpreter (converted to .tflite)", "serving"),
        "onnxruntime": ("Serve it with ONNX Runtime (converted with tf2onnx)", "serving"),
        "openvino": (
            "Serve it with OpenVINO's runtime (converted with openvino.convert_model)",
            "serving",
        ),
        "jit-compile": ("Compile its signature with XLA: tf.function(jit_compile=True)", "serving"),
        "litert-1-thread": ("Give LiteRT's interpreter one thread: num_threads=1", "serving"),
        "litert-no-xnnpack": (
            "Turn XNNPACK off: OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES",
            "serving",
        ),
        "train-on-batch": ("Train with train_on_batch per batch, not fit", "training_loop"),
        "custom-step": ("Train with a custom tf.function step", "training_loop"),
    },
}

#: What to do where another Keras backend beat TensorFlow, per form.
BACKEND_ADVICE = {
    "predict": "Predict on {name}: set KERAS_BACKEND={backend} before Keras is imported",
    "fit": "Train on {name}: set KERAS_BACKEND={backend} before Keras is imported",
    "fit-jit": "Train on {name} with jit_compile=True: set KERAS_BACKEND={backend} before Keras "
    "is imported, and compile the model with jit_compile=True",
}
#: What each backend's forms are judged against, per unit: Keras 3 on TensorFlow's.
BACKEND_BASELINES = {
    "call": backend_label("tensorflow", "predict"),
    "step": backend_label("tensorflow", "fit"),
}
#: The chapter that explains keeping the code as written, by what the reader's code is.
KEEP_CHAPTERS = {"keras": "training_loop", "saved-model": "serving", "litert": "serving"}


def form_advice(evidence: Evidence) -> tuple[list[Recommendation], dict[str, Ranking]]:
    """Each other form against the form the reader's code runs as written, and per unit the
    ranking of those faster than it. Forms are alternatives: of those, only the ones tied with
    the fastest are advice, and one clearly slower than it is shown as measured, with why."""
    advice_for = FORM_ADVICE[evidence.registered.kind]
    changes = [
        (m, evidence.baselines[m.unit], *advice_for[m.label], Change(CALLED, m.label))
        for m in evidence.forms
        if m.label in advice_for and m.label != evidence.baselines[m.unit]
    ]
    return _alternatives(changes, evidence.measurements)


def _alternatives(
    changes: list[tuple[Measurement, str, str, str, Change]], measurements: list[Measurement]
) -> tuple[list[Recommendation], dict[str, Ranking]]:
    """Each change (a measurement, the label it is judged against, its advice, chapter and
    what it turns) as advice checked on ``measurements``, and per unit the ranking of those
    that held. They are alternatives: only the ones tied with the fastest that held are
    advised."""
    advice, held = [], {}
    for m, baseline, text, chapter, change in changes:
        claim = Faster(m.label, baseline).check(measurements)
        gain = ratio_interval(*pick(measurements, baseline, m.label))[0]  # the claim's ratio
        advice.append(Recommendation(text, claim, change, chapter=chapter, gain=gain))
        if claim.held:
            held.setdefault(m.unit, []).append(m.label)
    rankings = {unit: rank(measurements, labels) for unit, labels in held.items()}
    return _unbeaten(advice, rankings), rankings


def _unbeaten(advice: list[Recommendation], rankings: dict[str, Ranking]) -> list[Recommendation]:
    """``advice``, each alternative that the fastest one that paid beat clearly no longer
    advised."""
    leaders = {label: r for r in rankings.values() for label in r.order}
    return [_beaten(a, leaders.get(changed_to(a))) for a in advice]


def _beaten(advice: Recommendation, ranking: Ranking | None) -> Recommendation:
    """``advice`` not advised where the fastest form that paid beat it clearly, with by how
    much (the ranking's own gap: the claim's ratio, over the processes that timed both)."""
    if ranking is None or changed_to(advice) in ranking.tied:
        return advice
    (gap,) = [g for g in ranking.gaps if g.label == changed_to(advice)]
    # The gap is the leader's speed-up over this form; the sentence is this form's, subject first.
    slower = compared(gap.label, 1 / gap.ratio, ranking.leader)
    interval = speedup_interval(1 / gap.high, 1 / gap.low)
    why = f"{slower} here ({RERUN}: {interval}), and {ranking.leader} is advised"
    return dataclasses.replace(advice, why_not=why)


def backend_advice(evidence: Evidence) -> list[Recommendation]:
    """Each backend whose predictions agree with TensorFlow's, against Keras 3 on TensorFlow,
    per unit (a ``predict`` call, a ``fit`` step), judged as alternatives like forms."""
    trial = evidence.backends
    if trial is None:
        return []
    changes = []
    for m in trial.measurements:
        backend, form = backend_and_form(m.label)
        if backend != "tensorflow":
            text = BACKEND_ADVICE[form].format(name=NAMES[backend], backend=backend)
            change = Change(BACKEND, backend, form=form)
            changes.append((m, BACKEND_BASELINES[m.unit], text, "keras_backends", change))
    return _alternatives(changes, trial.measurements)[0]


def keep_advice(evidence: Evidence, advice: list[Recommendation]) -> list[Recommendation]:
    """Keeping the code as written, checked against the fastest other form per call, where
    no other form was advised as faster."""
    baseline = evidence.baselines["call"]
    others = [m for m in evidence.calls if m.label != baseline]
    if not others or any(a.advised and a.gain > 1 for a in advice):
        return []
    other = min(others, key=lambda m: m.median_s)
    claim = Faster(baseline, other.label).check(evidence.measurements)
    text = f"Keep it as written ({baseline}): no other form was faster"
    chapter = KEEP_CHAPTERS.get(evidence.registered.format, "tf_function")
    return [Recommendation(text, claim, Change(CALLED, AS_WRITTEN), chapter=chapter, gain=1.0)]


def retrace_advice(runs: list[Retracing], as_graph: bool) -> Recommendation:
    """The usual fix, measured over the varied calls: a speed-up of a ``tf.function`` as
    written, or how to keep a graph form that is advised."""
    ratios = [
        sum(c.seconds for c in run.calls) / sum(c.seconds for c in run.fixed_calls) for run in runs
    ]
    claim = per_process(
        "reduce_retracing=True and tensors for Python numbers speed up varied calls",
        ratios,
        RETRACE_FIX,
        "faster over the varied calls",
    )
    numbers = any("Python number" in label for label in runs[0].varied)
    text = (
        "pass tensors, not Python numbers, and use reduce_retracing=True or an input_signature"
        if numbers
        else "use reduce_retracing=True or an input_signature with a None batch dimension"
    )
    change = Change(TRACING, "reduce_retracing=True")
    if as_graph:
        gain = statistics.median(ratios)
        return Recommendation(
            text[0].upper() + text[1:], claim, change, chapter="tf_function", gain=gain
        )
    return Recommendation(f"In the tf.function, {text}", claim, change, chapter="tf_function")


def peak_advice(evidence: Evidence, compute: float) -> list[Recommendation]:
    """Doing less arithmetic, where the fastest form's calls run near the measured peak. Not
    narrower types: that rests on a lower-precision form measured faster, and none is timed
    here (the guide measured mixed_float16 several times slower on this kind of CPU)."""
    if evidence.form(PEAK) is None or compute < NEAR_LIMIT / 2:
        return []
    share = Share(evidence.fastest.label, PEAK, NEAR_LIMIT, evidence.graph.flops, PEAK_FLOPS)
    claim = share.check(evidence.measurements)
    advice = "Do less arithmetic: the calls already run near the measured peak"
    return [Recommendation(advice, claim, Change(ARITHMETIC, "less"), chapter="vectorization")]
