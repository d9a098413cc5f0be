"""What the measurements of the reader's function say: what bounds it here
(:mod:`~perfguide.diagnose.parent.bound`), what each finding measured, and which changes pay
(:mod:`~perfguide.diagnose.parent.advice`), each a checked claim with the chapter that explains it;
:func:`assess` puts them together into a :class:`~perfguide.diagnose.parent.diagnosis.Assessment`.

Plain logic over plain data (the workers' measurements and facts), so it is tested with made-up
numbers. Every finding is made here: each form's work against the machine's limits, where a
call's time goes, Python inside the graph, a graph that cannot be made, forms left out, which
form served fastest, the price of a ``fit`` call, retracing on other inputs (with its fix, where
it pays), and memory that grows, with the fix the memory chapter measured.

One idea at some length: every finding reads the same evidence, and each is a few lines.
"""

from __future__ import annotations

import dataclasses
import statistics

from perfguide.diagnose.parent.advice import (
    GRAPH_FORMS,
    backend_advice,
    form_advice,
    keep_advice,
    peak_advice,
    retrace_advice,
)
from perfguide.diagnose.parent.bound import CACHE, memory_share, what_bounds
from perfguide.diagnose.parent.diagnosis import Assessment, Finding, changed_to
from perfguide.diagnose.parent.evidence import Evidence, backend_label
from perfguide.diagnose.worker_answers import ResidentSeries, Retracing
from perfguide.measure.limits import PEAK, PEAK_FLOPS
from perfguide.measure.measurement import Measurement, pick
from perfguide.measure.memory import Growth, fitted_calls, growth
from perfguide.report.format import (
    RERUN,
    compared,
    format_bytes,
    format_count,
    format_percent,
    format_seconds,
    lower_first,
    speedup_interval,
    three_figures,
)
from perfguide.report.publishing.answers import Recommendation
from perfguide.report.publishing.chapters import chapter
from perfguide.report.verdicts.memory_claims import grows
from perfguide.report.verdicts.ranking import rank
from perfguide.report.verdicts.ratios import fixed_price, in_common, ratio_interval
from perfguide.workloads.keras_processes import NAMES

#: Why dispatching a call's ops can price above the whole call.
OPS_DISPATCH_FASTER = (
    ": more than the whole call, so its ops dispatch faster than tf.add, the small op priced here"
)
#: Bytes a call from which a form counts as growing the process.
GROWS = 1e3
#: What stops a form's growth, where the memory chapter measured a fix.
MEMORY_FIXES = {
    "predict": "call model(x) or predict_on_batch per batch instead",
    "tf-function": "if its inputs change shape, use reduce_retracing=True or an input_signature, "
    "and pad them to a few sizes (oneDNN keeps a kernel per shape)",
}


def _python_findings(evidence: Evidence) -> list[Finding]:
    """Ops that leave the graph for Python, the share of a graph call they take, and prints
    that run only while tracing."""
    outside = evidence.graph.outside_graph
    found = [
        Finding(
            "leaves-graph",
            f"{op.op} leaves the graph for Python",
            f"{op.name}, made at {op.where or 'a line TensorFlow does not record'}: the "
            "runtime waits for the interpreter (and the GIL) at every call, and XLA cannot "
            "compile it",
        )
        for op in outside
    ]
    graph, in_python = evidence.form("tf-function"), evidence.graph.outside_graph_s
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
    if evidence.graph.prints_only_when_tracing:
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
    """How the forms were checked where the results are random, and the forms left out, and
    why."""
    excluded = [
        Finding("form-not-timed", f"{form} not timed", why)
        for form, why in evidence.registered.problems.items()
    ]
    calls = evidence.registered.random
    if not calls:
        return excluded
    checked = (
        "two calls as written gave different results (random ops), so no other form can match "
        "them value by value: each other form was checked to give different results at each "
        "call too, of the same shapes and dtypes, its values within the range "
        f"{calls} calls as written span"
    )
    return [Finding("random", "Its results are random", checked), *excluded]


def _fastest_finding(measurements: list[Measurement], evidence: Evidence, batch: str) -> Finding:
    """Which form answered fastest at ``batch``, where the numbers separate it from the
    runner-up (else the forms tied with it), each against the reader's own way, with how far
    its answers lie from that way's."""
    as_written = evidence.registered.as_written
    (base,) = pick(measurements, as_written)
    ranking = rank(measurements)
    against = [
        _against_as_written(m, base, evidence, f"at {batch}")
        for m in pick(measurements, *ranking.tied)
        if m is not base
    ]
    where = f" at {batch}"
    if ranking.separated:
        own = f"{as_written} as written ({format_seconds(base.median_s)} a {base.unit})"
        what, measured = "Served fastest", f"{(against or [own])[0]}; {ranking.sentence(where)}"
    else:  # no winner named: the tied forms, each with its own figures
        what, measured = "Fastest", "; ".join([ranking.sentence(where), *against])
    return Finding("serving", what + where, f"{measured} (chapter: {chapter('serving').title})")


def _against_as_written(m: Measurement, base: Measurement, evidence: Evidence, where: str) -> str:
    """Form ``m`` against the reader's own way (``base``) ``where``, with how far its answers
    lie from that way's where it is a serving runtime."""
    share = evidence.registered.differences.get(m.label)
    answers = "" if share is None else f"; its answers within {share:.1e} of {base.label}'s"
    return _versus(m, base, where) + answers


def _versus(m: Measurement, base: Measurement, where: str) -> str:
    """``m``'s speed-up over ``base`` ``where``, judged on where a rerun here would land, and
    both medians."""
    ratio, low, high = ratio_interval(*in_common(base, m))
    return (
        f"{compared(m.label, ratio, base.label)} {where} ({RERUN}: {speedup_interval(low, high)}; "
        f"medians {format_seconds(m.median_s)} and {format_seconds(base.median_s)} a {base.unit})"
    )


def _serving_findings(evidence: Evidence) -> list[Finding]:
    """Which form served the reader's model fastest at its batch and at another batch size
    (where more than one form was timed), and each serving runtime it was converted for: its
    speed against the model's own way at the reader's batch, and how far its answers lie from
    that way's."""
    baseline = evidence.form(evidence.registered.as_written)
    found = []
    if len(evidence.other_batch) > 1:
        registered = evidence.registered
        batches = [
            (registered.batch, "your batch", evidence.calls),
            (registered.other_batch, "a batch", evidence.other_batch),
        ]
        found = [
            _fastest_finding(ms, evidence, f"{how} of {size}")
            for size, how, ms in sorted(batches, key=lambda batch: batch[0])
        ]
    for form, share in evidence.registered.differences.items():
        answers = (
            f"the same answers as {baseline.label}"
            if share == 0
            else f"answers within {share:.1e} of {baseline.label}'s, as a share of the largest"
        )
        found.append(
            Finding(
                "serving",
                f"Served by {form}",
                f"{_versus(evidence.form(form), baseline, 'at this batch')}; {answers} "
                f"(chapter: {chapter('serving').title})",
            )
        )
    return found


def _fit_findings(evidence: Evidence) -> list[Finding]:
    """What one ``fit`` call costs besides its steps, from fit timed per step over an epoch of
    many batches and over one batch: a call of n batches costs that price plus n steps, so the
    two lengths give both."""
    epoch, one = evidence.form("fit"), evidence.form("fit-per-batch")
    steps = evidence.registered.epoch_steps
    if epoch is None or one is None or not steps:
        return []
    price = fixed_price(epoch.median_s, one.median_s, steps)
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
            f"(chapter: {chapter('training_loop').title})",
        )
    ]


def _backend_findings(evidence: Evidence) -> list[Finding]:
    """Each Keras backend the model was tried on: that it ran and predicts what Keras 3 on
    TensorFlow predicts (and, where it was timed with jit_compile on too, that the file had it
    off), or why it was not timed."""
    trial = evidence.backends
    if trial is None:
        return []
    labels = {m.label for m in trial.measurements}
    found = []
    for backend in trial.agreed[1:]:  # TensorFlow, the reference, comes first
        measured = (
            "loaded the model and predicts what Keras 3 on TensorFlow predicts (within float32 "
            "rounding); its times are in the backends' table"
        )
        if backend_label(backend, "fit-jit") in labels:
            measured += (
                "; the file says jit_compile=False (as a model compiled on TensorFlow without a "
                f"GPU is saved), which {NAMES[backend]} keeps: {backend}-fit trains uncompiled, "
                f"{backend}-fit-jit with jit_compile=True"
            )
        chapter_title = chapter("keras_backends").title
        found.append(Finding("backend", NAMES[backend], f"{measured} (chapter: {chapter_title})"))
    return found + [
        Finding("backend", NAMES[backend], f"not timed: {why}")
        for backend, why in trial.not_run.items()
    ]


def _change(held: float) -> str:
    """A change of what the process holds, in words: never a negative size."""
    return f"gave back {format_bytes(-held)}" if held < 0 else f"grew {format_bytes(held)}"


def _after_warm_up(grown: Growth, calls: int) -> str:
    """What a form did to memory over the ``calls`` calls its slope spans, judged on where the
    next process's rate should land: it grows where all of that interval lies above zero; it is
    settling (giving memory back, no rate to extrapolate) where all of it lies below; it is flat
    where the interval spans zero. One process has no interval: what its series did."""
    form, over = grown.label, f"over its last {calls} calls"
    if len(grown.rates) < 2:
        return f"{form}, one process (no interval): {_change(grown.rate * calls)} {over}"
    low, high = grown.interval
    if low > 0:
        return (
            f"{form} grows: {format_bytes(grown.rate)} a call "
            f"({format_bytes(low)} to {format_bytes(high)} in the next process)"
        )
    if high < 0:
        return f"{form} settling: {_change(grown.rate * calls)} {over}"
    return f"{form} flat: within ±{format_bytes(max(-low, high))} a call"


def _grown(runs: list[dict[str, ResidentSeries]], form: str) -> tuple[Growth, int]:
    """``form``'s growth over the processes, and the calls its slope spans."""
    series, every = [run[form].series for run in runs], runs[0][form].every
    return growth(form, series, every), fitted_calls(len(series[0]), every)


def _memory_findings(evidence: Evidence) -> list[Finding]:
    """What each form does to memory after warm-up: grows, settles or stays flat; and for each
    form whose growth holds above :data:`GROWS` a call, that it grows, with the fix the memory
    chapter measured."""
    runs = [run for run in evidence.memory if run]
    if not runs:
        return []
    grown = {form: _grown(runs, form) for form in runs[0]}
    lines = "; ".join(_after_warm_up(g, calls) for g, calls in grown.values())
    found = [Finding("memory", "Memory after warm-up", lines)]
    for form, (g, _) in grown.items():
        if grows(g, GROWS).held:
            fix = MEMORY_FIXES.get(form, "see the chapter")
            found.append(
                Finding(
                    "memory",
                    f"Memory grows with {form}",
                    f"{format_bytes(g.rate)} a call; fix: {fix} "
                    f"(chapter: {chapter('memory').title})",
                )
            )
    return found


def _traces(runs: list[Retracing], fixed: bool = False) -> tuple[float, int]:
    """The median count of varied calls (with the fixes, if ``fixed``) that traced anew, and
    how many were varied."""
    traced = [sum(c.traced for c in (r.fixed_calls if fixed else r.calls)[1:]) for r in runs]
    return statistics.median(traced), len(runs[0].varied)


def _retrace_measured(runs: list[Retracing]) -> str:
    """How many varied calls traced anew, and what each retrace cost in steady calls and kept
    in memory."""
    traced, varied = _traces(runs)
    measured = f"{traced:g} of {varied} varied calls traced anew"
    costs = [c.seconds - run.steady_s for run in runs for c in run.calls[1:] if c.traced]
    if costs:
        cost, steady = statistics.median(costs), statistics.median(r.steady_s for r in runs)
        measured += (
            f", each retrace costing {format_seconds(cost)} "
            f"({three_figures(cost / steady)} steady calls)"
        )
    kept = [c.bytes for run in runs for c in run.calls[1:] if c.traced and c.bytes is not None]
    if kept:
        measured += f" and keeping {format_bytes(statistics.median(kept))} of memory"
    return measured


def retrace_findings(
    evidence: Evidence, forms: list[Recommendation]
) -> tuple[list[Finding], list[Recommendation]]:
    """Retracing on other typical inputs, and its usual fix: advice where the code runs as a
    graph as written, or a graph form is advised (among ``forms``); a finding alone otherwise.
    Where the code runs as a graph as written and an eager form is advised instead, the fix is
    advice for those who keep the graph, and says so."""
    graph_advised = any(a.advised and changed_to(a) in GRAPH_FORMS for a in forms)
    eager_advised = any(a.advised and changed_to(a) not in GRAPH_FORMS for a in forms)
    runs = [run for run in evidence.retracing if run.varied]
    if not runs:
        return [], []
    what = f"Retracing on other inputs ({'; '.join(runs[0].varied)})"
    measured = _retrace_measured(runs)
    if failed := next((run.fixed_error for run in runs if run.fixed_error), None):
        static = Finding(
            "static-shape",
            "reduce_retracing=True cannot help",
            f"with shapes relaxed it fails: {failed}; pad inputs to a few batch sizes instead, "
            "so that each size traces once",
        )
        return [Finding("retracing", what, measured), static], []
    measured += "; with reduce_retracing=True and numbers passed as tensors, {:g} of {}".format(
        *_traces(runs, fixed=True)
    )
    as_graph = evidence.baselines["call"] == "tf-function"
    retraces = _traces(runs)[0] > 0
    if retraces and not (as_graph or graph_advised):
        measured += "; moot while no graph form is faster than the code as written"
    if not retraces or not (as_graph or graph_advised):
        return [Finding("retracing", what, measured)], []
    fix = retrace_advice(runs, as_graph)
    if as_graph and eager_advised and not graph_advised:
        kept = f"Where you keep the tf.function, {lower_first(fix.advice)}"
        fix = dataclasses.replace(fix, advice=kept)
    return [Finding("retracing", what, measured)], [fix]


def limits_finding(evidence: Evidence) -> tuple[Finding | None, float, float, str]:
    """Each form's work per call as shares of the rate of the peak's product timed in turns
    with it (:data:`~perfguide.measure.limits.PEAK`), else of the machine's peak, and of the
    bandwidth, counting the bytes the form moves as it runs;
    the finding, and the fastest form's shares and the memory limit it is set against."""
    flops, unfused, fused = evidence.graph.flops, evidence.graph.bytes, evidence.graph.io_bytes
    if flops is None:
        return None, 0.0, 0.0, ""
    peak = evidence.form(PEAK)
    peak_flops = PEAK_FLOPS / peak.median_s if peak else evidence.limits.peak_flops
    reference = f"{PEAK}'s rate" if peak else "the machine's peak"
    parts, shares = [], {}
    for m in evidence.calls:
        moved = fused if m.label == "jit-compile" and fused is not None else unfused
        memory, limit = memory_share(evidence.limits, moved, m.median_s)
        shares[m.label] = (flops / m.median_s / peak_flops, memory, limit)
        parts.append(
            f"{m.label} reaches {format_percent(shares[m.label][0])} of {reference} and moves "
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


def overhead_findings(evidence: Evidence) -> tuple[list[Finding], float | None, float | None]:
    """Findings on per-call and per-op costs: the ops' share of a call (profile: of a graph
    call, or of an eager one where no graph can be made) and the eager dispatch their count
    implies."""
    findings, op_share, dispatch_share = [], None, None
    ops, op_s = evidence.graph.ops, evidence.graph.eager_op_s
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
    op_time = evidence.graph.op_time_s
    # The graph's call: a tf.function of the code, or a SavedModel's signature as called.
    graph = evidence.form("tf-function") or evidence.form("signature")
    call = eager if evidence.graph_error else graph
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


def assess(evidence: Evidence) -> Assessment:
    """The diagnosis the measurements support."""
    limits, compute, memory, limit = limits_finding(evidence)
    overhead, op_share, dispatch_share = overhead_findings(evidence)
    fastest = evidence.fastest.label
    bound, why = what_bounds(compute, memory, limit, op_share, dispatch_share, fastest)
    forms, rankings = form_advice(evidence)
    retrace, retrace_advice = retrace_findings(evidence, forms)
    findings = [
        *_graph_findings(evidence),
        *_python_findings(evidence),
        *retrace,
        *overhead,
        *([limits] if limits else []),
        *_serving_findings(evidence),
        *_fit_findings(evidence),
        *_memory_findings(evidence),
        *_backend_findings(evidence),
        *_excluded_findings(evidence),
    ]
    advice = [*forms, *keep_advice(evidence, forms), *retrace_advice, *backend_advice(evidence)]
    advice += peak_advice(evidence, compute)
    # Advised first, larger gains first: the reader acts on the top line.
    order = {True: 0, None: 1, False: 2}
    advice.sort(key=lambda a: (not a.advised, order[a.claim.held], -a.gain))
    return Assessment(evidence.target, bound, why, findings, advice, evidence.graph_error, rankings)
