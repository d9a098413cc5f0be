"""What the measurements of the reader's function say: what bounds it here, what each finding
measured, and which changes pay, each a checked claim with the chapter that explains it.

Plain logic over plain data (the workers' measurements and facts), so it is tested with made-up
numbers. The bound is read off the fastest form the reader can use:

- **compute** or **memory**: its arithmetic reaches at least :data:`NEAR_LIMIT` of the machine's
  measured peak FLOP/s, or its ops' bytes that share of the measured bandwidth; how it is
  called cannot buy much;
- **overhead**: the ops' own time in a profiler trace is under half of a graph call, or an eager
  call's ops, each at the price of a small eager op here, account for most of its time;
- **ops**: the ops take the time, far below the machine's limits (small or poorly fed kernels).
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any

from perfguide.measure.limits import PEAK, PEAK_FLOPS, MachineLimits
from perfguide.measure.timer import Measurement
from perfguide.report.claims import Claim, Faster, Share, per_process, ratio_interval
from perfguide.report.format import format_count, format_percent, format_seconds, three_figures

#: A share of the machine's peak or bandwidth from which work counts as bound by it.
NEAR_LIMIT = 0.5
#: A retrace-free sequence must be this much faster for the fix to count.
RETRACE_FIX = 1.1
#: Chapter topic -> its title: where each recommendation is explained.
CHAPTERS = {
    "tf_function": "Why is my tf.function fast, slow, or wrong?",
    "eager": "Why is eager TensorFlow slow on small ops, and what do custom gradients cost?",
    "vectorization": "How much do tensor operations buy over loops, and how close do they get "
    "to the hardware?",
    "training_loop": "Why is TF2 much slower than TF1? Training loops measured on today's "
    "TensorFlow",
    "timing": "Why do my TensorFlow timings disagree?",
}
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
        "train-on-batch": ("Train with train_on_batch per batch, not fit", "training_loop"),
        "custom-step": ("Train with a custom tf.function step", "training_loop"),
    },
}


@dataclasses.dataclass(frozen=True)
class Finding:
    """One line of the findings table: what was looked at, and what it measured here."""

    what: str
    measured: str


@dataclasses.dataclass(frozen=True)
class Advice:
    """A change, the claim that measured it on the reader's code, the chapter topic that
    explains it, and its measured ``gain`` (times faster; 0 where it is not a speed-up)."""

    advice: str
    claim: Claim
    chapter: str
    gain: float = 0.0

    @property
    def advised(self) -> bool:
        """Whether it is advice: only a claim that held makes it so."""
        return self.claim.held is True


@dataclasses.dataclass(frozen=True)
class Evidence:
    """Everything the workers measured: the forms' :class:`Measurement` s (with the peak's),
    the registration, and each process's facts and retracing answers."""

    target: str
    measurements: list[Measurement]
    registered: dict[str, Any]
    facts: list[dict[str, Any]]
    retracing: list[dict[str, Any]]
    limits: MachineLimits

    def form(self, label: str) -> Measurement | None:
        return next((m for m in self.measurements if m.label == label), None)

    @property
    def forms(self) -> list[Measurement]:
        return [m for m in self.measurements if m.label != PEAK]

    @property
    def fastest(self) -> Measurement:
        """The fastest form per call (a model's inference, not its training steps)."""
        return min((m for m in self.forms if m.unit == "call"), key=lambda m: m.median_s)

    @property
    def baselines(self) -> dict[str, str]:
        """The form the reader's code runs as written, per unit (call, training step)."""
        registered = self.registered
        return {"call": registered["as_written"], "step": registered.get("training_as_written")}

    def fact(self, key: str) -> Any:
        """A fact's median over the processes (the same in each where it is a count)."""
        values = [f[key] for f in self.facts if f.get(key) is not None]
        return statistics.median(values) if values else None


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    """The bound, the findings and the advice, ordered by measured effect (held first)."""

    target: str
    bound: str
    why: str
    findings: list[Finding]
    advice: list[Advice]

    @property
    def best(self) -> Advice | None:
        """The change worth most: the held speed-up with the largest gain, if any held."""
        held = [a for a in self.advice if a.claim.held and a.gain > 1]
        return max(held, key=lambda a: a.gain) if held else None

    def short_answer(self) -> str:
        best = self.best
        change = (
            f"The change worth most: {best.advice[0].lower()}{best.advice[1:]}, "
            f"{best.claim.effect} here."
            if best
            else "No change of how it is called made it clearly faster here."
        )
        return f"{self.target} is {self.bound}-bound on this machine: {self.why}. {change}"


def _share_finding(evidence: Evidence, m: Measurement) -> tuple[Finding, float, float]:
    """The work of a call of ``m`` as shares of the peak (the peak's product timed in turns
    with it, where it was) and of the measured bandwidth."""
    flops, moved = evidence.fact("flops"), evidence.fact("bytes")
    peak = evidence.form(PEAK)
    peak_flops = PEAK_FLOPS / peak.median_s if peak else evidence.limits.peak_flops
    compute = flops / m.median_s / peak_flops
    memory = evidence.limits.bandwidth_share(moved, m.median_s)
    measured = (
        f"{format_count(flops)} FLOPs and {format_count(moved)} bytes per call; {m.label} "
        f"reaches {format_percent(compute)} of the measured peak and moves "
        f"{format_percent(memory)} of the measured bandwidth"
    )
    return Finding("Work per call against the machine's limits", measured), compute, memory


def _overhead_findings(evidence: Evidence) -> tuple[list[Finding], float | None, float | None]:
    """Findings on per-call and per-op costs: the ops' share of a graph call (profile) and the
    eager dispatch their count implies."""
    findings, op_share, dispatch_share = [], None, None
    ops, op_s = evidence.fact("ops"), evidence.fact("eager_op_s")
    eager = evidence.form("eager")
    if eager is not None and ops:
        dispatch_share = ops * op_s / eager.median_s
        findings.append(
            Finding(
                "Ops per call, and what dispatching them eagerly costs",
                f"{format_count(ops)} op{'s' * (ops != 1)}; at {format_seconds(op_s)} per "
                "small eager op here "
                f"that is {format_seconds(ops * op_s)}, {format_percent(dispatch_share)} of an "
                f"eager call ({format_seconds(eager.median_s)})",
            )
        )
    graph, op_time = evidence.form("tf-function"), evidence.fact("op_time_s")
    if graph is not None and op_time is not None:
        op_share = op_time / graph.median_s
        findings.append(
            Finding(
                "Where a tf.function call's time goes",
                f"the ops run {format_seconds(op_time)} of a {format_seconds(graph.median_s)} "
                f"call ({format_percent(min(op_share, 1))}, from a profiler trace); the rest is "
                "Python before the runtime and the runtime's own work per call",
            )
        )
    return findings, op_share, dispatch_share


def _bound(
    compute: float, memory: float, op_share: float | None, dispatch_share: float | None
) -> tuple[str, str]:
    if max(compute, memory) >= NEAR_LIMIT:
        kind, share = ("compute", compute) if compute >= memory else ("memory", memory)
        limit = "peak FLOP/s" if kind == "compute" else "memory bandwidth"
        return kind, f"its fastest form reaches {format_percent(share)} of the measured {limit}"
    if (op_share is not None and op_share < 0.5) or (dispatch_share or 0) >= 0.5:
        return "overhead", "most of its time is the cost of calls and op dispatches, not its ops"
    return "ops", "its ops take the time, well below the machine's peak and bandwidth"


def _form_advice(evidence: Evidence) -> list[Advice]:
    """Each other form against the form the reader's code runs as written."""
    advice_for = FORM_ADVICE[evidence.registered.get("kind", "function")]
    advice = []
    for m in evidence.forms:
        baseline = evidence.baselines[m.unit]
        if m.label in advice_for and m.label != baseline:
            claim = Faster(m.label, baseline).check(evidence.measurements)
            gain = ratio_interval(evidence.form(baseline), m)[0]  # the claim's own ratio
            text, chapter = advice_for[m.label]
            advice.append(Advice(text, claim, chapter, gain))
    return advice


def _retrace_findings(evidence: Evidence) -> tuple[list[Finding], list[Advice]]:
    runs = evidence.retracing
    if not runs or not runs[0]["varied"]:
        return [], []
    traced = [sum(c["traced"] for c in run["calls"][1:]) for run in runs]
    fixed = [sum(c["traced"] for c in run["fixed_calls"][1:]) for run in runs]
    costs = [c["s"] - run["steady_s"] for run in runs for c in run["calls"][1:] if c["traced"]]
    varied = len(runs[0]["varied"])
    measured = f"{statistics.median(traced):g} of {varied} varied calls traced anew"
    if costs:
        cost, steady = statistics.median(costs), statistics.median(r["steady_s"] for r in runs)
        measured += (
            f", each retrace costing {format_seconds(cost)} "
            f"({three_figures(cost / steady)} steady calls)"
        )
    measured += (
        f"; with reduce_retracing=True and numbers passed as tensors, "
        f"{statistics.median(fixed):g} of {varied}"
    )
    finding = Finding(f"Retracing on other inputs ({'; '.join(runs[0]['varied'])})", measured)
    if not any(traced):
        return [finding], []
    ratios = [
        sum(c["s"] for c in run["calls"]) / sum(c["s"] for c in run["fixed_calls"]) for run in runs
    ]
    claim = per_process(
        "reduce_retracing=True and tensors for Python numbers speed up varied calls",
        ratios,
        RETRACE_FIX,
        "faster over the varied calls",
    )
    numbers = any("Python number" in label for label in runs[0]["varied"])
    advice = Advice(
        "Pass tensors, not Python numbers, and use reduce_retracing=True or an input_signature"
        if numbers
        else "Use reduce_retracing=True or an input_signature with a None batch dimension",
        claim,
        "tf_function",
        statistics.median(ratios),
    )
    return [finding], [advice]


def _outside_findings(evidence: Evidence) -> list[Finding]:
    outside = evidence.facts[0]["outside_graph"] if evidence.facts else []
    return [
        Finding(
            f"{op['op']} leaves the graph for Python",
            f"{op['name']}, made at {op['where'] or 'a line TensorFlow does not record'}: the "
            "runtime waits for the interpreter (and the GIL) at every call, and XLA cannot "
            "compile it",
        )
        for op in outside
    ]


def _excluded_findings(evidence: Evidence) -> list[Finding]:
    return [
        Finding(f"{form} not timed", why) for form, why in evidence.registered["problems"].items()
    ]


def _peak_advice(evidence: Evidence, compute: float) -> list[Advice]:
    if evidence.form(PEAK) is None or compute < NEAR_LIMIT / 2:
        return []
    share = Share(evidence.fastest.label, PEAK, NEAR_LIMIT, evidence.fact("flops"), PEAK_FLOPS)
    claim = share.check(evidence.measurements)
    advice = "Do less arithmetic, or use narrower types (the calls already run near the peak)"
    return [Advice(advice, claim, "vectorization")]


def diagnose(evidence: Evidence) -> Diagnosis:
    """The diagnosis the measurements support."""
    fastest = evidence.fastest
    share, compute, memory = _share_finding(evidence, fastest)
    overhead, op_share, dispatch_share = _overhead_findings(evidence)
    bound, why = _bound(compute, memory, op_share, dispatch_share)
    retrace, retrace_advice = _retrace_findings(evidence)
    findings = [
        *_outside_findings(evidence),
        *retrace,
        *overhead,
        share,
        *_excluded_findings(evidence),
    ]
    advice = [*_form_advice(evidence), *retrace_advice, *_peak_advice(evidence, compute)]
    # Held first, larger gains first: the reader acts on the top line.
    order = {True: 0, None: 1, False: 2}
    advice.sort(key=lambda a: (order[a.claim.held], -a.gain))
    return Diagnosis(evidence.target, bound, why, findings, advice)
