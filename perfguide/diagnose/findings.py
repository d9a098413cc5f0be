"""What the measurements of the reader's function say: what bounds it here, what each finding
measured, and which changes pay, each a checked claim with the chapter that explains it.

Plain logic over plain data (the workers' measurements and facts), so it is tested with made-up
numbers. Every change is measured against the form the reader's code runs as written (a plain
function eagerly, a ``tf.function`` as one, a model through ``predict`` and ``fit`` over an
epoch), and only a change whose claim held is advice. Other forms are alternatives, so of those
that held only the ones tied with the fastest are advised (:func:`~perfguide.report.ranking.rank`),
and one is named worth most only where the numbers separate it from the runner-up. The bound is
read off the fastest form the reader can use:

- **compute** or **memory**: its arithmetic reaches at least :data:`NEAR_LIMIT` of the machine's
  measured peak FLOP/s, or the bytes it moves that share of the measured bandwidth (the bytes
  counted for the form as it runs: every op's inputs and outputs, or for a kernel XLA fused its
  arguments and results; a share above 100 % means the data stayed in the caches, and is set
  against the measured cache copy rate); how it is called cannot buy much;
- **overhead**: the ops' own time in a profiler trace is under half of a graph call, or an eager
  call's ops, each at the price of a small eager op here, account for most of its time;
- **ops**: the ops take the time, far below the machine's limits (small or poorly fed kernels).
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any

from perfguide.measure.limits import PEAK, PEAK_FLOPS, MachineLimits
from perfguide.measure.memory import Growth, growth
from perfguide.measure.timer import Measurement
from perfguide.report.claims import (
    Claim,
    Faster,
    Share,
    grows,
    in_common,
    per_process,
    ratio_interval,
)
from perfguide.report.compare import pick
from perfguide.report.format import (
    format_bytes,
    format_count,
    format_percent,
    format_seconds,
    format_speedup,
    three_figures,
)
from perfguide.report.ranking import Ranking, rank

#: A share of the machine's peak or bandwidth from which work counts as bound by it.
NEAR_LIMIT = 0.5
#: Why dispatching a call's ops can price above the whole call.
OPS_DISPATCH_FASTER = (
    ": more than the whole call, so its ops dispatch faster than tf.add, the small op priced here"
)
#: The limit a share of the memory bandwidth above 100 % is set against instead.
CACHE = "cache copy rate"
#: The forms that run the function as a graph (where retracing matters).
GRAPH_FORMS = ("tf-function", "jit-compile")
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
    "serving": "How should I serve my model on a CPU?",
    "memory": "Why does my TensorFlow process keep growing?",
}
#: Bytes a call from which a form counts as growing the process.
GROWS = 1e3
#: What stops a form's growth, where the memory chapter measured a fix.
MEMORY_FIXES = {
    "predict": "call model(x) or predict_on_batch per batch instead",
    "tf-function": "if its inputs change shape, use reduce_retracing=True or an input_signature, "
    "and pad them to a few sizes (oneDNN keeps a kernel per shape)",
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
        "saved-model": ("Serve its SavedModel (model.export, tf.saved_model.load)", "serving"),
        "litert": ("Serve it with LiteRT's interpreter (converted to .tflite)", "serving"),
        "onnxruntime": ("Serve it with ONNX Runtime (converted with tf2onnx)", "serving"),
        "train-on-batch": ("Train with train_on_batch per batch, not fit", "training_loop"),
        "custom-step": ("Train with a custom tf.function step", "training_loop"),
    },
}


#: The kinds of finding, as the results file names them for an editor or CI to act on.
KINDS = {
    "not-a-graph": "the function cannot run as a tf.function: why, and the line",
    "eager-call": "where an eager call's time goes, where no graph can be measured",
    "form-not-timed": "a form that could not be built, or computed something else",
    "leaves-graph": "an op that runs Python from inside the graph, and its line",
    "python-share": "the share of a graph call spent in Python",
    "prints-when-tracing": "print (a Python side effect) runs only while tracing",
    "retracing": "calls with other typical inputs that trace anew, and what each costs",
    "static-shape": "reduce_retracing cannot help: the function needs static shapes",
    "eager-dispatch": "ops per call, and what dispatching them eagerly costs",
    "graph-call": "where a tf.function call's time goes",
    "limits": "each form's work against the machine's measured peak and bandwidth",
    "serving": "a serving runtime's speed beside predict's, and how far its answers move",
    "memory": "each form's memory growth per call after warm-up, and a fix where it grows",
    "fit-call": "the fixed cost of one fit call, apart from the steps of its epoch",
}


@dataclasses.dataclass(frozen=True)
class Finding:
    """One line of the findings table: its ``kind`` (one of :data:`KINDS`), what was looked
    at, and what it measured here."""

    kind: str
    what: str
    measured: str


@dataclasses.dataclass(frozen=True)
class Advice:
    """A change, the claim that measured it on the reader's code, the chapter topic that
    explains it, its measured ``gain`` over the code as written (times faster; 1 for keeping
    the code as it is, 0 where it is no speed-up of the code as written) and its ``kind``:
    "form" (call it another way), "keep", "retracing" or "peak"."""

    advice: str
    claim: Claim
    chapter: str
    gain: float = 0.0
    kind: str = "form"
    #: The form a "form" advice says to call it as.
    form: str = ""
    #: Why a change whose claim held is still no advice: another form advised measured
    #: clearly faster, and forms are alternatives.
    why_not: str = ""

    @property
    def advised(self) -> bool:
        """Whether it is advice: only a claim that held makes it so, and only where no
        alternative advised beat it."""
        return self.claim.held is True and not self.why_not


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
    #: A model's inference forms timed per request at another batch size than the reader's
    #: (kept apart: their labels are the forms' own).
    other_batch: list[Measurement] = dataclasses.field(default_factory=list)
    #: Each process's resident series of each form called many times after its timing.
    memory: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def form(self, label: str) -> Measurement | None:
        return next((m for m in self.measurements if m.label == label), None)

    @property
    def forms(self) -> list[Measurement]:
        return [m for m in self.measurements if m.label != PEAK]

    @property
    def calls(self) -> list[Measurement]:
        """The forms timed per call (a model's inference, not its training steps)."""
        return [m for m in self.forms if m.unit == "call"]

    @property
    def fastest(self) -> Measurement:
        """The fastest form per call."""
        return min(self.calls, key=lambda m: m.median_s)

    @property
    def baselines(self) -> dict[str, str]:
        """The form the reader's code runs as written, per unit (call, training step)."""
        registered = self.registered
        return {"call": registered["as_written"], "step": registered.get("training_as_written")}

    @property
    def graph_error(self) -> str | None:
        """Why the function cannot be traced, if it cannot."""
        return next((f["graph_error"] for f in self.facts if f.get("graph_error")), None)

    def fact(self, key: str) -> Any:
        """A fact's median over the processes (the same in each where it is a count)."""
        values = [f[key] for f in self.facts if f.get(key) is not None]
        return statistics.median(values) if values else None


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    """The bound, the findings and the advice, ordered by measured effect (advised first), why
    the function cannot be traced, if it cannot, and per unit (a call, a training step) the
    ranking of the forms that were faster than the code as written."""

    target: str
    bound: str
    why: str
    findings: list[Finding]
    advice: list[Advice]
    graph_error: str | None = None
    rankings: dict[str, Ranking] = dataclasses.field(default_factory=dict)

    def leaders(self, unit: str) -> list[Advice]:
        """The form changes per ``unit`` that pay most, fastest first: one where the numbers
        separate it from the other forms that paid, else those tied with it."""
        ranking = self.rankings.get(unit)
        by_form = {a.form: a for a in self.advice if a.kind == "form"}
        return [by_form[label] for label in ranking.tied] if ranking else []

    @property
    def best(self) -> Advice | None:
        """The best measured change: the form change per call (per training step, where no
        form per call paid) that the numbers separate from the rest, none where they tie it;
        else the advised speed-up of another kind with the largest gain, else keeping the code
        as written where that held; None if none did."""
        if self.rankings:
            leaders = self.leaders(next(iter(self.rankings)))
            return leaders[0] if len(leaders) == 1 else None
        held = [a for a in self.advice if a.advised and a.gain >= 1]
        return max(held, key=lambda a: a.gain) if held else None

    def short_answer(self) -> str:
        changes = [self._lead_sentence(unit) for unit in self.rankings]
        best = self.best
        if changes:
            change = " ".join(changes)
        elif best is None:
            change = "No change of how it is called made it clearly faster here."
        elif best.kind == "keep":
            change = (
                f"The best measured change is none: {_lower(best.advice)}; {best.claim.evidence}."
            )
        else:
            change = f"The change that pays: {_lower(best.advice)}, {best.claim.effect} here."
        if self.graph_error:
            start = f"{self.target} cannot run as a graph: {self.graph_error}. Eagerly it is"
        else:
            start = f"{self.target} is"
        return f"{start} {self.bound}-bound on this machine: {self.why}. {change}"

    def _lead_sentence(self, unit: str) -> str:
        """The form change per ``unit`` worth most, with its margin over the runner-up among
        those that paid; or those tied with it, each with its own gain; or the one that paid."""
        ranking, (lead, *tied) = self.rankings[unit], self.leaders(unit)
        change = f"{_lower(lead.advice)}, {lead.claim.effect} here"
        if tied:
            changes = " and ".join(f"{_lower(a.advice)} ({a.claim.effect})" for a in [lead, *tied])
            sentence = f"the changes that pay most are tied: {changes}; {ranking.sentence()}"
        elif len(ranking.order) == 1:
            sentence = f"the change that pays: {change}"
        else:
            sentence = f"the change worth most: {change}; {ranking.sentence()}"
        if unit == "step":
            sentence = f"for training, {sentence}"
        return f"{sentence[0].upper()}{sentence[1:]}."


def _lower(text: str) -> str:
    return text[0].lower() + text[1:]


def _memory_share(limits: MachineLimits, moved: float, seconds: float) -> tuple[float, str]:
    """The share of the measured bandwidth that moving ``moved`` bytes in ``seconds`` uses, and
    the limit it is set against: past the memory bandwidth the data came from the caches, so
    the cache copy rate is the limit (where it was measured)."""
    share = limits.bandwidth_share(moved, seconds)
    if share > 1 and (cached := limits.cache_share(moved, seconds)) is not None:
        return cached, CACHE
    return share, "memory bandwidth"


def _limits_finding(evidence: Evidence) -> tuple[Finding | None, float, float, str]:
    """Each form's work per call as shares of the peak (the peak's product timed in turns
    with it, where it was) and of the bandwidth, counting the bytes the form moves as it runs;
    the finding, and the fastest form's shares and the memory limit it is set against."""
    flops, unfused, fused = (evidence.fact(key) for key in ("flops", "bytes", "io_bytes"))
    if flops is None:
        return None, 0.0, 0.0, ""
    peak = evidence.form(PEAK)
    peak_flops = PEAK_FLOPS / peak.median_s if peak else evidence.limits.peak_flops
    parts, shares = [], {}
    for m in evidence.calls:
        moved = fused if m.label == "jit-compile" and fused is not None else unfused
        memory, limit = _memory_share(evidence.limits, moved, m.median_s)
        shares[m.label] = (flops / m.median_s / peak_flops, memory, limit)
        parts.append(
            f"{m.label} reaches {format_percent(shares[m.label][0])} of the peak and moves "
            f"{format_count(int(moved))} bytes at {format_percent(memory)} of the measured "
            f"{limit}"
        )
    measured = (
        f"{format_count(int(flops))} FLOPs per call; every op's inputs and outputs are "
        f"{format_count(int(unfused))} bytes, a kernel XLA fuses moves its arguments and "
        f"results ({format_count(int(fused or 0))} bytes); " + "; ".join(parts)
    )
    if any(limit == CACHE for _, _, limit in shares.values()):
        measured += (
            "; more bytes a second than memory delivers means the data stays in the caches "
            "(between ops, or from call to call), so it is set against the cache copy rate"
        )
    compute, memory, limit = shares[evidence.fastest.label]
    finding = Finding("limits", "Work per call against the machine's limits", measured)
    return finding, compute, memory, limit


def _overhead_findings(evidence: Evidence) -> tuple[list[Finding], float | None, float | None]:
    """Findings on per-call and per-op costs: the ops' share of a call (profile: of a graph
    call, or of an eager one where no graph can be made) and the eager dispatch their count
    implies."""
    findings, op_share, dispatch_share = [], None, None
    ops, op_s = evidence.fact("ops"), evidence.fact("eager_op_s")
    eager = evidence.form("eager")
    counted = "counted in a profile of eager calls" if evidence.graph_error else "in the graph"
    if eager is not None and ops:
        dispatch_share = ops * op_s / eager.median_s
        findings.append(
            Finding(
                "eager-dispatch",
                "Ops per call, and what dispatching them eagerly costs",
                f"{format_count(ops)} op{'s' * (ops != 1)} ({counted}); at "
                f"{format_seconds(op_s)} per small eager op here that is "
                f"{format_seconds(ops * op_s)}, {format_percent(dispatch_share)} of an eager "
                f"call ({format_seconds(eager.median_s)})"
                + (OPS_DISPATCH_FASTER if dispatch_share > 1 else ""),
            )
        )
    op_time = evidence.fact("op_time_s")
    call = eager if evidence.graph_error else evidence.form("tf-function")
    if call is not None and op_time is not None:
        op_share = op_time / call.median_s
        findings.append(_call_finding(call, op_time, bool(evidence.graph_error)))
    return findings, op_share, dispatch_share


def _call_finding(call: Measurement, op_time: float, eager: bool) -> Finding:
    where = (
        f"the ops run {format_seconds(op_time)} of a {format_seconds(call.median_s)} call "
        f"({format_percent(min(op_time / call.median_s, 1))}, from a profiler trace); the rest"
    )
    if eager:
        rest = format_seconds(max(call.median_s - op_time, 0))
        return Finding(
            "eager-call",
            "Where an eager call's time goes",
            f"{where}, {rest}, is Python and dispatching ops one at a time: the most a graph "
            "could save, were the function traceable",
        )
    return Finding(
        "graph-call",
        "Where a tf.function call's time goes",
        f"{where} is Python before the runtime and the runtime's own work per call",
    )


def _bound(
    compute: float,
    memory: float,
    limit: str,
    op_share: float | None,
    dispatch_share: float | None,
    fastest: str,
) -> tuple[str, str]:
    """What bounds the code, and why, from the shares of the limits that form ``fastest``
    reaches and the share of a call its ops take."""
    if max(compute, memory) >= NEAR_LIMIT:
        kind, share = ("compute", compute) if compute >= memory else ("memory", memory)
        measured = "peak FLOP/s" if kind == "compute" else limit
        # Named: the share is that form's own, and forms may tie for the smallest median.
        return kind, (
            f"{fastest}, its fastest form by median, reaches {format_percent(share)} of the "
            f"measured {measured}"
        )
    if (op_share is not None and op_share < 0.5) or (dispatch_share or 0) >= 0.5:
        return "overhead", "most of its time is the cost of calls and op dispatches, not its ops"
    return "ops", "its ops take the time, well below the machine's peak and bandwidth"


def _form_advice(evidence: Evidence) -> tuple[list[Advice], dict[str, Ranking]]:
    """Each other form against the form the reader's code runs as written, and per unit the
    ranking of those faster than it. Forms are alternatives: of those, only the ones tied with
    the fastest are advice, and one clearly slower than it is shown as measured, with why."""
    advice_for = FORM_ADVICE[evidence.registered.get("kind", "function")]
    advice, held = [], {}
    for m in evidence.forms:
        baseline = evidence.baselines[m.unit]
        if m.label in advice_for and m.label != baseline:
            claim = Faster(m.label, baseline).check(evidence.measurements)
            gain = ratio_interval(evidence.form(baseline), m)[0]  # the claim's own ratio
            text, chapter = advice_for[m.label]
            advice.append(Advice(text, claim, chapter, gain, form=m.label))
            if claim.held:
                held.setdefault(m.unit, []).append(m.label)
    rankings = {unit: rank(evidence.measurements, labels) for unit, labels in held.items()}
    leaders = {label: r for r in rankings.values() for label in r.order}
    return [_beaten(a, leaders.get(a.form), evidence) for a in advice], rankings


def _beaten(advice: Advice, ranking: Ranking | None, evidence: Evidence) -> Advice:
    """``advice`` not advised where the fastest form that paid beat it clearly, with by how
    much (the claim's own ratio, over the processes that timed both)."""
    if ranking is None or advice.form in ranking.tied:
        return advice
    leader, slower = in_common(*pick(evidence.measurements, ranking.leader, advice.form))
    why = (
        f"{format_speedup(leader.median_s / slower.median_s)} than {ranking.leader}, which is "
        "advised"
    )
    return dataclasses.replace(advice, why_not=why)


def _keep_advice(evidence: Evidence, advice: list[Advice]) -> list[Advice]:
    """Keeping the code as written, checked against the fastest other form per call, where
    no other form was advised as faster."""
    baseline = evidence.baselines["call"]
    others = [m for m in evidence.calls if m.label != baseline]
    if not others or any(a.advised and a.gain > 1 for a in advice):
        return []
    other = min(others, key=lambda m: m.median_s)
    claim = Faster(baseline, other.label).check(evidence.measurements)
    text = f"Keep it as written ({baseline}): no other form was faster"
    chapter = "training_loop" if evidence.registered.get("kind") == "model" else "tf_function"
    return [Advice(text, claim, chapter, 1.0, "keep")]


def _traces(runs: list[dict[str, Any]], calls: str) -> tuple[float, int]:
    """The median count of varied ``calls`` that traced anew, and how many were varied."""
    traced = [sum(c["traced"] for c in run[calls][1:]) for run in runs]
    return statistics.median(traced), len(runs[0]["varied"])


def _retrace_measured(runs: list[dict[str, Any]]) -> str:
    """How many varied calls traced anew, and what each retrace cost in steady calls and kept
    in memory."""
    traced, varied = _traces(runs, "calls")
    measured = f"{traced:g} of {varied} varied calls traced anew"
    costs = [c["s"] - run["steady_s"] for run in runs for c in run["calls"][1:] if c["traced"]]
    if costs:
        cost, steady = statistics.median(costs), statistics.median(r["steady_s"] for r in runs)
        measured += (
            f", each retrace costing {format_seconds(cost)} "
            f"({three_figures(cost / steady)} steady calls)"
        )
    kept = [c["bytes"] for run in runs for c in run["calls"][1:] if c["traced"] and "bytes" in c]
    if kept:
        measured += f" and keeping {format_bytes(statistics.median(kept))} of memory"
    return measured


def _retrace_findings(
    evidence: Evidence, graph_advised: bool
) -> tuple[list[Finding], list[Advice]]:
    """Retracing on other typical inputs, and its usual fix: advice where the code runs as a
    graph as written, or a graph form is advised; a finding alone otherwise."""
    runs = [run for run in evidence.retracing if run.get("varied")]
    if not runs:
        return [], []
    what = f"Retracing on other inputs ({'; '.join(runs[0]['varied'])})"
    measured = _retrace_measured(runs)
    if failed := next((run["fixed_error"] for run in runs if run.get("fixed_error")), None):
        static = Finding(
            "static-shape",
            "reduce_retracing=True cannot help",
            f"with shapes relaxed it fails: {failed}; pad inputs to a few batch sizes instead, "
            "so that each size traces once",
        )
        return [Finding("retracing", what, measured), static], []
    measured += "; with reduce_retracing=True and numbers passed as tensors, {:g} of {}".format(
        *_traces(runs, "fixed_calls")
    )
    as_graph = evidence.baselines["call"] == "tf-function"
    retraces = _traces(runs, "calls")[0] > 0
    if retraces and not (as_graph or graph_advised):
        measured += "; moot while no graph form is faster than the code as written"
    if not retraces or not (as_graph or graph_advised):
        return [Finding("retracing", what, measured)], []
    return [Finding("retracing", what, measured)], [_retrace_advice(runs, as_graph)]


def _retrace_advice(runs: list[dict[str, Any]], as_graph: bool) -> Advice:
    """The usual fix, measured over the varied calls: a speed-up of a ``tf.function`` as
    written, or how to keep a graph form that is advised."""
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
    text = (
        "pass tensors, not Python numbers, and use reduce_retracing=True or an input_signature"
        if numbers
        else "use reduce_retracing=True or an input_signature with a None batch dimension"
    )
    if as_graph:
        return Advice(
            text[0].upper() + text[1:], claim, "tf_function", statistics.median(ratios), "retracing"
        )
    return Advice(f"In the tf.function, {text}", claim, "tf_function", kind="retracing")


def _python_findings(evidence: Evidence) -> list[Finding]:
    """Ops that leave the graph for Python, the share of a graph call they take, and prints
    that run only while tracing."""
    outside = evidence.facts[0]["outside_graph"] if evidence.facts else []
    found = [
        Finding(
            "leaves-graph",
            f"{op['op']} leaves the graph for Python",
            f"{op['name']}, made at {op['where'] or 'a line TensorFlow does not record'}: the "
            "runtime waits for the interpreter (and the GIL) at every call, and XLA cannot "
            "compile it",
        )
        for op in outside
    ]
    graph, in_python = evidence.form("tf-function"), evidence.fact("outside_graph_s")
    if outside and graph is not None and in_python:
        found.append(
            Finding(
                "python-share",
                "Time in Python inside a tf.function call",
                f"{format_seconds(in_python)} of a {format_seconds(graph.median_s)} call "
                f"({format_percent(min(in_python / graph.median_s, 1))}, from a profiler "
                "trace): replacing that Python with TensorFlow ops is what lets a graph or XLA "
                "pay",
            )
        )
    if any(f.get("prints_only_when_tracing") for f in evidence.facts):
        found.append(
            Finding(
                "prints-when-tracing",
                "print runs only while tracing",
                "an eager call printed and a steady tf.function call did not: in a graph, "
                "Python side effects (print, appending to a list) run once per trace; "
                "tf.print prints at every call",
            )
        )
    return found


def _graph_findings(evidence: Evidence) -> list[Finding]:
    """Why no graph could be made, if none could."""
    if not evidence.graph_error:
        return []
    why = f"{evidence.graph_error}; so it runs eagerly, op by op"
    return [Finding("not-a-graph", "It cannot run as a tf.function", why)]


def _excluded_findings(evidence: Evidence) -> list[Finding]:
    """The forms left out, and why."""
    return [
        Finding("form-not-timed", f"{form} not timed", why)
        for form, why in evidence.registered["problems"].items()
    ]


def _fastest_finding(measurements: list[Measurement], evidence: Evidence, batch: str) -> Finding:
    """Which form answered fastest at ``batch``, where the numbers separate it from the
    runner-up (else the forms tied with it), each against the reader's own way, with how far
    its answers lie from that way's."""
    as_written = evidence.registered["as_written"]
    (base,) = pick(measurements, as_written)
    ranking = rank(measurements)
    against = [
        _against_as_written(m, base, evidence)
        for m in pick(measurements, *ranking.tied)
        if m is not base
    ]
    where = f" at {batch}"
    if ranking.separated:
        own = f"{as_written} as written ({format_seconds(base.median_s)} a {base.unit})"
        what, measured = "Served fastest", f"{(against or [own])[0]}; {ranking.sentence(where)}"
    else:  # no winner named: the tied forms, each with its own figures
        what, measured = "Fastest", "; ".join([ranking.sentence(where), *against])
    return Finding("serving", what + where, f"{measured} (chapter: {CHAPTERS['serving']})")


def _against_as_written(m: Measurement, base: Measurement, evidence: Evidence) -> str:
    """Form ``m`` against the reader's own way (``base``), with how far its answers lie from
    that way's where it is a serving runtime."""
    share = evidence.registered.get("differences", {}).get(m.label)
    answers = "" if share is None else f"; its answers within {share:.1e} of {base.label}'s"
    return (
        f"{m.label}, {format_speedup(base.median_s / m.median_s)} than {base.label} "
        f"({format_seconds(m.median_s)} against {format_seconds(base.median_s)} a {base.unit}, "
        f"medians){answers}"
    )


def _serving_findings(evidence: Evidence) -> list[Finding]:
    """Which form served the reader's model fastest at its batch and at another batch size
    (where more than one form was timed), and each serving runtime it was converted for: its
    speed against the model's own way at the reader's batch, and how far its answers lie from
    that way's."""
    baseline = evidence.form(evidence.registered["as_written"])
    found = []
    if len(evidence.other_batch) > 1:
        registered = evidence.registered
        batches = [
            (registered["batch"], "your batch", evidence.calls),
            (registered["other_batch"], "a batch", evidence.other_batch),
        ]
        found = [
            _fastest_finding(ms, evidence, f"{how} of {size}")
            for size, how, ms in sorted(batches, key=lambda batch: batch[0])
        ]
    for form, share in evidence.registered.get("differences", {}).items():
        ratio = baseline.median_s / evidence.form(form).median_s
        answers = (
            f"the same answers as {baseline.label}"
            if share == 0
            else f"answers within {share:.1e} of {baseline.label}'s, as a share of the largest"
        )
        found.append(
            Finding(
                "serving",
                f"Served by {form}",
                f"{format_speedup(ratio)} than {baseline.label} at this batch (medians), "
                f"{answers} (chapter: {CHAPTERS['serving']})",
            )
        )
    return found


def _fit_findings(evidence: Evidence) -> list[Finding]:
    """What one ``fit`` call costs besides its steps, from fit timed per step over an epoch of
    many batches and over one batch: a call of n batches costs that price plus n steps, so the
    two lengths give both."""
    epoch, one = evidence.form("fit"), evidence.form("fit-per-batch")
    steps = evidence.registered.get("epoch_steps")
    if epoch is None or one is None or not steps:
        return []
    price = steps * (one.median_s - epoch.median_s) / (steps - 1)
    if price <= 0:
        cost = "none measurable: a fit over one batch took no longer than a step of an epoch"
    else:
        cost = (
            f"{format_seconds(price)} a call besides its steps, "
            f"{format_percent(price / (steps * epoch.median_s))} of a fit over an epoch"
        )
    return [
        Finding(
            "fit-call",
            "The fixed cost of one fit call",
            f"{cost} (fit over an epoch of {steps} batches, your batch repeated: "
            f"{format_seconds(epoch.median_s)} a step; fit-per-batch, fit over one batch: "
            f"{format_seconds(one.median_s)}); calling fit once per batch pays it at every step "
            f"(chapter: {CHAPTERS['training_loop']})",
        )
    ]


def _next(grown: Growth) -> str:
    """Where the next process's rate should land, where more than one process measured it."""
    if len(grown.rates) < 2:
        return " (one process: no interval)"
    low, high = grown.interval
    return f" ({format_bytes(low)} to {format_bytes(high)} in the next process)"


def _memory_findings(evidence: Evidence) -> list[Finding]:
    """Each form's growth per call after warm-up, over the processes; and for each form whose
    growth holds above :data:`GROWS` a call, that it grows, with the fix the memory chapter
    measured."""
    runs = [run for run in evidence.memory if run]
    if not runs:
        return []
    grown = {
        form: growth(form, [run[form]["series"] for run in runs], runs[0][form]["every"])
        for form in runs[0]
    }
    rates = "; ".join(
        f"{form} {format_bytes(g.rate)} a call{_next(g)}" for form, g in grown.items()
    )
    found = [Finding("memory", "Memory per call, after warm-up", rates)]
    for form, g in grown.items():
        if grows(g, GROWS).held:
            fix = MEMORY_FIXES.get(form, "see the chapter")
            found.append(
                Finding(
                    "memory",
                    f"Memory grows with {form}",
                    f"{format_bytes(g.rate)} a call; fix: {fix} (chapter: {CHAPTERS['memory']})",
                )
            )
    return found


def _peak_advice(evidence: Evidence, compute: float) -> list[Advice]:
    """Doing less arithmetic, where the fastest form's calls run near the measured peak. Not
    narrower types: that rests on a lower-precision form measured faster, and none is timed
    here (the guide measured mixed_float16 several times slower on this kind of CPU)."""
    if evidence.form(PEAK) is None or compute < NEAR_LIMIT / 2:
        return []
    share = Share(evidence.fastest.label, PEAK, NEAR_LIMIT, evidence.fact("flops"), PEAK_FLOPS)
    claim = share.check(evidence.measurements)
    advice = "Do less arithmetic: the calls already run near the measured peak"
    return [Advice(advice, claim, "vectorization", kind="peak")]


def diagnose(evidence: Evidence) -> Diagnosis:
    """The diagnosis the measurements support."""
    limits, compute, memory, limit = _limits_finding(evidence)
    overhead, op_share, dispatch_share = _overhead_findings(evidence)
    bound, why = _bound(compute, memory, limit, op_share, dispatch_share, evidence.fastest.label)
    forms, rankings = _form_advice(evidence)
    graph_advised = any(a.advised and a.form in GRAPH_FORMS for a in forms)
    retrace, retrace_advice = _retrace_findings(evidence, graph_advised)
    findings = [
        *_graph_findings(evidence),
        *_python_findings(evidence),
        *retrace,
        *overhead,
        *([limits] if limits else []),
        *_serving_findings(evidence),
        *_fit_findings(evidence),
        *_memory_findings(evidence),
        *_excluded_findings(evidence),
    ]
    advice = [*forms, *_keep_advice(evidence, forms), *retrace_advice]
    advice += _peak_advice(evidence, compute)
    # Advised first, larger gains first: the reader acts on the top line.
    order = {True: 0, None: 1, False: 2}
    advice.sort(key=lambda a: (not a.advised, order[a.claim.held], -a.gain))
    return Diagnosis(evidence.target, bound, why, findings, advice, evidence.graph_error, rankings)
