"""A diagnosis shown: as text for a terminal, as HTML (inline, or one self-contained page), and
as a results file that ``perfguide show`` and ``compare`` read (the assessment rides along).

Each recommendation links the chapter that explains it: ``docs_url`` is where the guide is
hosted (``--docs-url``, or ``$PERFGUIDE_DOCS_URL``); without one, the link is the chapter's
path within the site.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfguide.diagnose.parent.advice import BACKEND_BASELINES
from perfguide.diagnose.parent.diagnosis import Assessment, change_kind, changed_to
from perfguide.diagnose.parent.evidence import Evidence
from perfguide.diagnose.parent.projection import ModelProjection
from perfguide.measure.limits import PEAK
from perfguide.report.format import lower_first
from perfguide.report.publishing import results
from perfguide.report.publishing.answers import (
    FINDING_HEADINGS,
    Recommendation,
    measured_here,
    verdict_badge,
)
from perfguide.report.publishing.chapters import chapter
from perfguide.report.tables.comparison import Comparison
from perfguide.report.tables.table import html_table

if TYPE_CHECKING:
    from matplotlib.axes import Axes

DOCS_URL_ENV = "PERFGUIDE_DOCS_URL"
#: The order the report lists the changes measured that are no advice in, by the verdict of
#: the claim that decided (under the short answers' headings): a change that held but lost
#: clearly to a form advised, then those too close to call, then those that did not hold.
NO_ADVICE_ORDER = ("HELD", "INCONCLUSIVE", "DID NOT HOLD")


def docs_url(given: str | None = None) -> str:
    """Where the guide is hosted: ``given``, else ``$PERFGUIDE_DOCS_URL``, else "" (links are
    then paths within the site)."""
    return given if given is not None else os.environ.get(DOCS_URL_ENV, "")


def chapter_link(topic: str, base: str = "") -> str:
    """The chapter page of ``topic`` under ``base``, as the guide's table of chapters
    (:mod:`perfguide.report.publishing.chapters`) has it.

    >>> chapter_link("tf_function", "https://example.org/guide/")
    'https://example.org/guide/auto_examples/tf_function/plot_tf_function.html'
    >>> chapter_link("eager")
    'auto_examples/eager/plot_eager.html'
    """
    page = f"{chapter(topic).page}.html"
    return f"{base.rstrip('/')}/{page}" if base else page


def _tables(evidence: Evidence) -> list[Comparison]:
    """The forms timed, per unit (a call; a model's training step; a request at another batch
    size), each against the form the reader's code runs as written."""
    units = dict.fromkeys(m.unit for m in evidence.forms)
    tables = [
        Comparison([m for m in evidence.forms if m.unit == unit], evidence.baselines[unit])
        for unit in units
    ]
    if evidence.other_batch:
        tables.append(Comparison(evidence.other_batch, evidence.baselines["call"]))
    return tables + _backend_tables(evidence)


def _backend_tables(evidence: Evidence) -> list[Comparison]:
    """Each unit's forms timed on Keras's backends, each backend in processes of its own,
    against Keras 3 on TensorFlow's."""
    measured = evidence.backends.measurements if evidence.backends else []
    units = dict.fromkeys(m.unit for m in measured)
    return [
        Comparison([m for m in measured if m.unit == unit], BACKEND_BASELINES[unit])
        for unit in units
    ]


def text(
    assessment: Assessment,
    evidence: Evidence,
    base: str = "",
    projection: ModelProjection | None = None,
) -> str:
    """What ``perfguide diagnose`` prints; with a model's ``projection`` on more workers last."""
    processes = evidence.forms[0].processes
    lines = [
        f"Short answer: {short_answer(assessment)}",
        "",
        f"Timed in {processes} fresh process{'es' * (processes > 1)}, the forms in turns, first "
        "calls apart:",
        "\n\n".join(map(str, _tables(evidence))),
        "",
        "Findings:",
        *(f"- {f.what}: {f.measured}" for f in assessment.findings),
    ]
    what = evidence.registered.kind
    for title, advice in _advice_lists(assessment, what):
        lines += ["", f"{title}:"]
        for a in advice:
            measured = measured_here(a.claim)
            lines.append(f"- {a.advice}: {measured} ({a.claim.verdict}: {a.claim.evidence})")
            if a.why_not:
                lines.append(f"  {a.why_not}")
            lines.append(f"  why: {chapter(a.chapter).title} {chapter_link(a.chapter, base)}")
    if projection is not None:
        lines += ["", str(projection.table()), f"  {_projection_note(base)}"]
    if evidence.trace:
        lines += ["", f"Trace: {trace_note(evidence)}"]
    return "\n".join(lines)


def _projection_note(base: str) -> str:
    link = chapter_link("distributed", base)
    return f"where such a projection holds: {chapter('distributed').title} {link}"


def _advice_lists(assessment: Assessment, what: str) -> list[tuple[str, list[Recommendation]]]:
    """The advice, then the changes measured that are no advice, grouped by why: those that
    held but lost clearly to a form advised, those too close to call, those that did not hold;
    each list under its title, leaving out an empty one."""
    advised = [a for a in assessment.advice if a.advised]
    rest = [a for a in assessment.advice if not a.advised]
    lists = [
        (f"Recommendations, each measured on this {what}", advised),
        *(
            (FINDING_HEADINGS[verdict], [a for a in rest if a.deciding.verdict == verdict])
            for verdict in NO_ADVICE_ORDER
        ),
    ]
    return [(title, advice) for title, advice in lists if advice]


def dot_plot_of(evidence: Evidence) -> Axes:
    """The chapters' dot plot of the times per call of the forms, on a figure of its own."""
    import matplotlib.pyplot as plt

    from perfguide.report.plots import dot_plot

    calls = [m for m in evidence.forms if m.unit == "call"]
    _, ax = plt.subplots(figsize=(7, 0.6 * len(calls) + 1.6), layout="constrained")
    dot_plot(calls, ax)
    ax.set_title(f"{evidence.target}: time per call")
    return ax


def _plot_svg(evidence: Evidence) -> str:
    """:func:`dot_plot_of` as an inline SVG image."""
    import matplotlib.pyplot as plt

    figure = dot_plot_of(evidence).figure
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg")
    plt.close(figure)
    encoded = base64.b64encode(buffer.getvalue()).decode()
    return f'<img alt="time per call of each form" src="data:image/svg+xml;base64,{encoded}">'


#: The report's look, scoped to its own element so that, shown inline in a notebook or a docs
#: page, it restyles nothing around it.
_STYLE = """
.perfguide-diagnosis{line-height:1.5}
.perfguide-diagnosis table{border-collapse:collapse;display:block;overflow-x:auto}
.perfguide-diagnosis caption{text-align:left;font-weight:600}
.perfguide-diagnosis td,.perfguide-diagnosis th{padding:.2rem .6rem;text-align:right;
border-bottom:1px solid #ddd}
.perfguide-diagnosis .perfguide-text{text-align:left}
.perfguide-diagnosis img{max-width:100%;height:auto}
.perfguide-diagnosis li{overflow-wrap:anywhere}
.perfguide-verdict{padding:0 .3rem;border-radius:.2rem;font-size:.85em}
.perfguide-verdict-held{background:#d4edda}.perfguide-verdict-did-not-hold{background:#f8d7da}
.perfguide-verdict-inconclusive{background:#fff3cd}
"""
_PAGE_STYLE = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem}
h1{font-size:1.6rem;overflow-wrap:anywhere}
"""


def _advice_html(a: Recommendation, base: str) -> str:
    """One change as a list item: its effect, verdict and evidence, how much slower it was
    than the form advised where it paid but lost to it, and the chapter that explains it."""
    beaten = f"{html.escape(a.why_not)}<br>" if a.why_not else ""
    return (
        f"<li><strong>{html.escape(a.advice)}</strong>: "
        f"{html.escape(measured_here(a.claim))} "
        f"{verdict_badge(a.claim.verdict, None)}<br>{html.escape(a.claim.evidence)}<br>{beaten}"
        f'Why: <a href="{html.escape(chapter_link(a.chapter, base))}">'
        f"{html.escape(chapter(a.chapter).title)}</a></li>"
    )


def html_fragment(
    assessment: Assessment,
    evidence: Evidence,
    base: str = "",
    projection: ModelProjection | None = None,
    heading: str = "h2",
) -> str:
    """The report as one element with its own style, to show inline (in Jupyter, say): the
    short answer, the tables and plot, findings, advice, a model's ``projection`` on more
    workers and where a trace was written; its sections under ``heading`` elements."""
    tables = "".join(
        html_table(
            t.header(), t.rows(), f"Time per {t.unit} of each form", (0, len(t.header()) - 1)
        )
        for t in _tables(evidence)
    )
    findings = "".join(
        f"<li><strong>{html.escape(f.what)}</strong>: {html.escape(f.measured)}</li>"
        for f in assessment.findings
    )
    what = evidence.registered.kind
    h = heading
    advice = "".join(
        f"<{h}>{html.escape(title)}</{h}><ul>{''.join(_advice_html(a, base) for a in items)}</ul>"
        for title, items in _advice_lists(assessment, what)
    )
    trace = f"<{h}>Trace</{h}><p>{html.escape(trace_note(evidence))}</p>" if evidence.trace else ""
    return (
        f'<div class="perfguide-diagnosis"><style>{_STYLE}</style>'
        f"<p><strong>Short answer:</strong> {html.escape(short_answer(assessment))}</p>"
        f"{tables}{_plot_svg(evidence)}<{h}>Findings</{h}><ul>{findings}</ul>"
        f"{advice or f'<{h}>Recommendations</{h}><p>No change was measured.</p>'}"
        f"{_projection_html(projection, base, h)}{trace}</div>"
    )


def html_page(
    assessment: Assessment,
    evidence: Evidence,
    base: str = "",
    projection: ModelProjection | None = None,
) -> str:
    """One self-contained page of :func:`html_fragment`, titled."""
    title = html.escape(f"perfguide diagnose: {evidence.target}")
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title><style>{_PAGE_STYLE}</style></head><body><h1>{title}</h1>"
        f"{html_fragment(assessment, evidence, base, projection)}</body></html>\n"
    )


def trace_note(evidence: Evidence) -> str:
    """Where the profiler trace was written and how to open it, or why none was."""
    if evidence.trace.error:
        return evidence.trace.error
    path = Path(evidence.trace.path)
    logdir = path.parents[3]  # <logdir>/plugins/profile/<run>/<host>.xplane.pb
    return (
        f"a profile of the graph calls in {path}; open it with: tensorboard --logdir {logdir} "
        f"(its Profile tab, from the tensorboard-plugin-profile package), or xprof --logdir "
        f"{logdir}; its trace viewer shows each op on its thread"
    )


def _projection_html(projection: ModelProjection | None, base: str, heading: str) -> str:
    if projection is None:
        return ""
    table = projection.table()
    link = html.escape(chapter_link("distributed", base))
    return (
        f"<{heading}>On more workers</{heading}>"
        f"{html_table(table.header, table.rows, table.caption)}"
        f'<p><a href="{link}">{html.escape(chapter("distributed").title)}</a></p>'
    )


def to_json(assessment: Assessment, projection: ModelProjection | None = None) -> dict[str, Any]:
    """The assessment as plain data, for the results file (with a model's projection)."""
    return {
        "projection": projection.to_dict() if projection else None,
        "target": assessment.target,
        "bound": assessment.bound,
        "short_answer": short_answer(assessment),
        "findings": [dataclasses.asdict(f) for f in assessment.findings],
        "advice": [
            {
                "advice": a.advice,
                "kind": change_kind(a),
                "form": changed_to(a),
                "advised": a.advised,
                "why_not": a.why_not,
                "chapter": a.chapter,
                **a.claim.to_dict(),
            }
            for a in assessment.advice
        ],
    }


def results_document(
    environment: dict[str, Any],
    assessment: Assessment,
    evidence: Evidence,
    projection: ModelProjection | None = None,
) -> dict[str, Any]:
    """A results file's contents: the forms' measurements (the peak's left out), with the
    diagnosis."""
    measured = [m for m in evidence.measurements if m.label != PEAK] + evidence.other_batch
    measured += evidence.backends.measurements if evidence.backends else []
    extra = {"diagnosis": to_json(assessment, projection)}
    return results.document(environment, measured, extra)


def short_answer(assessment: Assessment) -> str:
    """The diagnosis in a few sentences: the bound and why, the change that pays (or those tied,
    or none), and each backend advised."""
    changes = [_lead_sentence(assessment, unit) for unit in assessment.rankings]
    best = assessment.best
    if changes:
        change = " ".join(changes)
    elif best is None:
        change = "No change of how it is called made it clearly faster here."
    elif change_kind(best) == "keep":
        advice = lower_first(best.advice)
        change = f"The best measured change is none: {advice}; {best.claim.evidence}."
    else:
        change = f"The change that pays: {lower_first(best.advice)}: {best.claim.sentence} here."
    if assessment.graph_error:
        start = (
            f"{assessment.target} cannot run as a graph: {assessment.graph_error}. Eagerly it is"
        )
    else:
        start = f"{assessment.target} is"
    answer = f"{start} {assessment.bound}-bound on this machine: {assessment.why}. {change}"
    return " ".join([answer, *_backend_sentences(assessment)])


def _backend_sentences(assessment: Assessment) -> list[str]:
    """Each backend advised, with what it measured: another backend is a change beside
    the forms, not one of them."""
    return [
        f"Another backend: {lower_first(a.advice)}: {a.claim.sentence} here."
        for a in assessment.advice
        if change_kind(a) == "backend" and a.advised
    ]


def _lead_sentence(assessment: Assessment, unit: str) -> str:
    """The form change per ``unit`` worth most, with its margin over the runner-up among
    those that paid; or those tied with it, each with its own gain; or the one that paid."""
    ranking, (lead, *tied) = assessment.rankings[unit], assessment.leaders(unit)
    change = f"{lower_first(lead.advice)}: {lead.claim.sentence} here"
    if tied:
        changes = " and ".join(
            f"{lower_first(a.advice)} ({a.claim.sentence})" for a in [lead, *tied]
        )
        sentence = f"the changes that pay most are tied: {changes}; {ranking.sentence()}"
    elif len(ranking.order) == 1:
        sentence = f"the change that pays: {change}"
    else:
        sentence = f"the change worth most: {change}; {ranking.sentence()}"
    if unit == "step":
        sentence = f"for training, {sentence}"
    return f"{sentence[0].upper()}{sentence[1:]}."
