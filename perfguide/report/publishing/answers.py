"""A chapter's short answer: its answer in a few sentences, its recommendations each with the
effect this build measured and the verdict of the claim behind it, and the asker's own scenario
translated to this machine. A recommendation is given as advice only where its claim held in
this build; one whose claim did not hold, or could not be told, is listed as what was measured
instead. Published as HTML (the box at the top of the chapter, and a status line for each recipe
a recommendation names) and as JSON (read by the checklist page, which lists every chapter's
advice, and by the site check, which holds every page's advice against every other's).

>>> from perfguide.report.verdicts.claims import Claim
>>> claim = Claim("xla-loop is faster than numpy", True, "…", effect="9.80x faster",
...               measured="xla-loop was 9.80x faster than numpy")
>>> loop = Change("the training loop", "one XLA-compiled tf.function", work="many small steps")
>>> answer = ShortAnswer("Per-call overhead.", [Recommendation("Compile the loop", claim, loop)])
>>> print(answer)
Short answer: Per-call overhead.
- Compile the loop: xla-loop was 9.80x faster than numpy here (HELD)
  When: work: many small steps
>>> failed = Claim("numpy is faster than xla", False, "…", effect="9.80x slower")
>>> numpy = Change("the training loop", "NumPy")
>>> print(ShortAnswer("Overhead.", [Recommendation("Stay in NumPy", failed, numpy)]))
Short answer: Overhead.
Did not hold here:
- numpy is faster than xla: 9.80x slower here (DID NOT HOLD)
"""

from __future__ import annotations

import dataclasses
import datetime
import html
import json
import os
from collections.abc import Sequence
from pathlib import Path

from perfguide.report.format import GLOSSARY, READING, RERUN
from perfguide.report.publishing.chapters import chapter
from perfguide.report.publishing.results import measurements_dir, write_atomically
from perfguide.report.tables.table import Table
from perfguide.report.verdicts.claims import Claim

#: Chapters publish their short answers into the directory this variable names (the docs set it).
ANSWERS_DIR_ENV = "PERFGUIDE_ANSWERS_DIR"


def answers_dir() -> Path:
    """``$PERFGUIDE_ANSWERS_DIR``, or the measurements directory."""
    return Path(os.environ.get(ANSWERS_DIR_ENV) or measurements_dir())


#: How a short answer heads what it measured that is no advice, by the deciding claim's verdict.
FINDING_HEADINGS = {
    "DID NOT HOLD": "Did not hold here",
    "INCONCLUSIVE": "Too close to call here",
    "HELD": "Held, and another way advised was clearly faster here",
}
#: Where "How to read these pages" defines the verdicts, from a chapter's page.
VERDICTS_DEFINED = f"{READING}#claims-and-verdicts"


@dataclasses.dataclass(frozen=True)
class Change:
    """What a piece of advice changes: the ``setting`` (a setting, or what a reader's code
    calls or feeds, in TensorFlow's words), the way it turns it (``to``), and the conditions it
    was measured under (``when``: each a fact's name and its value, such as ``work="a loop of
    small ops"`` or ``cpu="without bfloat16 instructions"``). Two pieces of advice that turn
    one setting different ways must name one fact each with a different value: otherwise a
    reader has no way to tell which applies (:meth:`contradicts`).

    >>> xla = Change("jit_compile", "True", work="a loop of small ops")
    >>> xla.contradicts(Change("jit_compile", "False", policy="mixed_bfloat16"))
    True
    >>> xla.contradicts(Change("jit_compile", "False", work="a training step"))
    False
    """

    setting: str
    to: str
    when: tuple[tuple[str, str], ...] = ()

    def __init__(self, setting: str, to: str, **when: str):
        object.__setattr__(self, "setting", setting)
        object.__setattr__(self, "to", to)
        object.__setattr__(self, "when", tuple(sorted(when.items())))

    @property
    def condition(self) -> str:
        """The conditions, each with its fact: "cpu: 2 cores; work: a loop of small ops"."""
        return "; ".join(f"{fact}: {value}" for fact, value in self.when)

    def contradicts(self, other: Change) -> bool:
        """Whether ``other`` turns the same setting another way under conditions that overlap
        this one's (no fact named by both with different values)."""
        if self.setting != other.setting or self.to == other.to:
            return False
        mine, theirs = dict(self.when), dict(other.when)
        return all(mine[fact] == theirs[fact] for fact in mine.keys() & theirs.keys())

    def to_dict(self) -> dict[str, object]:
        return {"setting": self.setting, "to": self.to, "when": dict(self.when)}

    @classmethod
    def from_dict(cls, record: dict) -> Change:
        return cls(record["setting"], record["to"], **record["when"])


@dataclasses.dataclass(frozen=True)
class Recommendation:
    """Advice ("do this", "avoid that"), the checked claim that measures its effect, and the
    :class:`Change` it makes. Only a claim that held makes it advice, and only where every
    claim it also ``requires`` held too (that a converted model answers as the original does,
    say); otherwise the answer says ``instead`` (what the page measured in its place, e.g. "an
    op right after a product ran 3.4x faster here"), or, without one, which claim did not hold
    or could not be told here. ``caveats`` are what the page measured against the advice (a
    batch size where the way loses, its stalls): given beside it, each on its own line, never
    left out. ``recipe`` is the anchor of the chapter's recipe that puts the advice in code (its
    section's id, e.g. "pad-to-buckets"); that recipe opens with a line saying whether this
    build advises it (:func:`recipe_status`). Advice measured elsewhere than on its chapter's
    page (``perfguide diagnose``'s, on the reader's code) names the ``chapter`` that explains
    it, its ``gain`` (times faster than the code as written; 1 for keeping it, 0 where it is no
    speed-up of it) and, where its claims held, ``why_not`` it is advice all the same: an
    alternative advised was measured clearly faster.

    >>> from perfguide.report.verdicts.claims import Claim
    >>> fast = Claim("int8 is faster", True, "…", "1.2x faster")
    >>> close = Claim("int8 answers within 0.05 of float", False, "0.07 apart")
    >>> r = Recommendation("Use int8 weights", fast, Change("weights", "int8"), requires=(close,))
    >>> r.advised, r.finding, r.deciding.verdict
    (False, 'int8 answers within 0.05 of float', 'DID NOT HOLD')
    """

    advice: str
    claim: Claim
    change: Change
    instead: str = ""
    requires: tuple[Claim, ...] = ()
    caveats: tuple[str, ...] = ()
    recipe: str = ""
    chapter: str = ""
    gain: float = 0.0
    why_not: str = ""

    @property
    def advised(self) -> bool:
        held = all(claim.held is True for claim in (self.claim, *self.requires))
        return held and not self.why_not

    @property
    def deciding(self) -> Claim:
        """The claim that decided: the first that did not hold, else the advice's own."""
        return next((c for c in (self.claim, *self.requires) if c.held is not True), self.claim)

    @property
    def finding(self) -> str:
        """What a reader is told where a claim did not hold, under that claim's verdict: never
        the advice itself."""
        return self.instead or self.deciding.statement

    @property
    def said(self) -> str:
        """What the line says: the advice where it is advised, else what was measured."""
        return self.advice if self.advised else self.finding

    def to_dict(self) -> dict[str, object]:
        return {
            "advice": self.advice,
            "advised": self.advised,
            "finding": "" if self.advised else self.finding,
            "change": self.change.to_dict(),
            "measured": measured_here(self.deciding),
            "verdict": self.deciding.verdict,
            "claim": self.deciding.statement,
            "evidence": self.deciding.evidence,
            "anchor": self.deciding.anchor,
            "caveats": list(self.caveats),
            "recipe": self.recipe,
            "requires": [
                {"claim": c.statement, "verdict": c.verdict, "evidence": c.evidence}
                for c in self.requires
            ],
            "chapter": self.chapter,
            "gain": self.gain,
            "why_not": self.why_not,
        }


def verdict_badge(verdict: str, defined: str | None = VERDICTS_DEFINED) -> str:
    """The verdict as an HTML badge, tinted by the site's CSS, linked to where the verdicts are
    defined (``defined``, from the page it is shown on; None for a page outside the site)."""
    slug = verdict.lower().replace(" ", "-")
    badge = (
        f'<span class="perfguide-verdict perfguide-verdict-{slug}">{html.escape(verdict)}</span>'
    )
    return f'<a class="perfguide-verdict-link" href="{defined}">{badge}</a>' if defined else badge


def measured_here(claim: Claim) -> str:
    """What a claim measured, as one sentence with its subject first, "here", and beside it
    where it was judged, where a rerun lands and, for a claim that asked for more than a
    direction and missed it, what it asked for; its verdict is shown apart
    (:meth:`~perfguide.report.verdicts.claims.Claim.here`)."""
    return claim.here(verdict=False)


def measured_html(measured: str, reading: str = GLOSSARY[RERUN]) -> str:
    """:func:`measured_here`'s words as HTML, "rerun interval" linked to its definition
    (``reading``, from the page it is shown on)."""
    return html.escape(measured).replace(RERUN, f'<a href="{reading}">{RERUN}</a>', 1)


def measured_with_verdict(claim: Claim, reading: str = READING) -> str:
    """What ``claim`` measured and its verdict, as HTML, each term linked to its definition on
    the reading page (``reading``, from the page it is shown on)."""
    measured = measured_html(measured_here(claim), f"{reading}#rerun-interval")
    return f"{measured} {verdict_badge(claim.verdict, f'{reading}#claims-and-verdicts')}"


def condition_html(change: Change) -> str:
    """The conditions a piece of advice was measured under, on a line of its own ("" if none).

    >>> condition_html(Change("jit_compile", "True", cpu="2 cores"))
    '<br><span class="perfguide-condition">When: cpu: 2 cores</span>'
    """
    if not change.when:
        return ""
    return f'<br><span class="perfguide-condition">When: {html.escape(change.condition)}</span>'


def caveats_html(caveats: Sequence[str]) -> str:
    """What was measured against a piece of advice, each on its own line."""
    return "".join(
        f'<br><span class="perfguide-caveat">Measured against it: {html.escape(caveat)}</span>'
        for caveat in caveats
    )


#: Why a recommendation is not advised, by its deciding claim's verdict.
NOT_ADVISED_BECAUSE = {
    "DID NOT HOLD": "its claim did not hold",
    "INCONCLUSIVE": "its claim was too close to call",
    "HELD": "another way advised was measured clearly faster",
}


def recipe_status(recommendations: Sequence[Recommendation]) -> str:
    """The line that opens a recipe: whether this build advises what it puts in code, with what
    each recommendation naming it measured and its verdict; where some are advised and some are
    not, each under its own lead, and a recommendation not advised says why (its claim did not
    hold, or was too close to call).

    >>> from perfguide.report.verdicts.claims import Claim
    >>> slow = Claim("pad is faster", False, "…", "1.10x slower", measured="pad was 1.10x slower")
    >>> print(recipe_status([Recommendation("Pad", slow, Change("batches", "padded"))]))
    ... # doctest: +ELLIPSIS
    <div class="perfguide-recipe-status perfguide-recipe-not-advised" data-advised="false"><p>\
<strong>Not advised here</strong>, its claim did not hold in this build: pad is faster: pad was \
1.10x slower here <a ...DID NOT HOLD</span></a>.</p></div>
    """
    advised = [r for r in recommendations if r.advised]
    parts = []
    if advised:
        measured = "; ".join(measured_with_verdict(r.deciding) for r in advised)
        parts.append(f"<strong>Advised here</strong>: {measured}.")
    for r in recommendations:
        if not r.advised:
            why = NOT_ADVISED_BECAUSE[r.deciding.verdict]
            found = f"{html.escape(r.finding)}: {measured_with_verdict(r.deciding)}"
            parts.append(f"<strong>Not advised here</strong>, {why} in this build: {found}.")
    kind = "advised" if advised else "not-advised"
    return (
        f'<div class="perfguide-recipe-status perfguide-recipe-{kind}" data-advised='
        f'"{str(bool(advised)).lower()}"><p>{"<br>".join(parts)}</p></div>'
    )


class ShortAnswer:
    """The box that opens a chapter."""

    def __init__(
        self,
        answer: str,
        recommendations: Sequence[Recommendation],
        scenario: Table | None = None,
    ):
        self.answer = answer
        self.recommendations = list(recommendations)
        self.scenario = scenario

    @property
    def advice(self) -> list[Recommendation]:
        """The recommendations whose claims held: the only ones given as advice."""
        return [r for r in self.recommendations if r.advised]

    @property
    def findings(self) -> list[Recommendation]:
        """The recommendations whose claims did not hold or were inconclusive here."""
        return [r for r in self.recommendations if not r.advised]

    def _groups(self) -> list[tuple[str, list[Recommendation]]]:
        """The advice, then what did not hold, then what was too close to call, each with its
        heading ("" for the advice)."""
        groups = [("", self.advice)]
        for verdict, heading in FINDING_HEADINGS.items():
            groups.append((heading, [r for r in self.findings if r.deciding.verdict == verdict]))
        return [(heading, found) for heading, found in groups if found]

    def __str__(self) -> str:
        lines = [f"Short answer: {self.answer}"]
        for heading, found in self._groups():
            lines += [f"{heading}:"] * bool(heading)
            for r in found:
                lines.append(f"- {r.said}: {measured_here(r.deciding)} ({r.deciding.verdict})")
                lines += [f"  When: {r.change.condition}"] * bool(r.change.when)
                lines += [f"  Measured against it: {caveat}" for caveat in r.caveats]
        if self.scenario:
            lines += [self.scenario.caption, " | ".join(self.scenario.header)]
            lines += [" | ".join(row) for row in self.scenario.rows]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        def item(r: Recommendation) -> str:
            said = html.escape(r.said)
            code = f' <a href="#{r.recipe}">recipe</a>' if r.recipe and r.advised else ""
            return (
                f"<li>{f'<strong>{said}</strong>' if r.advised else said}: "
                f"{measured_with_verdict(r.deciding)} "
                f'<a href="#{r.deciding.anchor}">evidence</a>{code}{condition_html(r.change)}'
                f"{caveats_html(r.caveats)}</li>"
            )

        # The advice in view; what was checked and is no advice, one click away.
        parts, findings = [], []
        for heading, found in self._groups():
            kind = "" if heading else ' class="perfguide-advice"'
            items = f"<ul{kind}>{''.join(item(r) for r in found)}</ul>"
            if heading:
                findings.append(f'<p class="perfguide-short-answer-findings">{heading}:</p>{items}')
            else:
                parts.append(items)
        if not self.advice:
            parts.insert(0, "<p>No practice this page checked paid off here.</p>")
        if findings:
            parts.append(
                f"<details><summary>Checked here, no advice ({len(self.findings)})</summary>"
                f"{''.join(findings)}</details>"
            )
        scenario = self.scenario._repr_html_() if self.scenario else ""
        return (
            '<div class="perfguide-short-answer"><p class="perfguide-short-answer-title">'
            f"Short answer</p><p>{html.escape(self.answer)}</p>{''.join(parts)}"
            f"{scenario}</div>"
        )

    def publish(self, topic: str) -> None:
        """Write ``<topic>.answer.html`` (the box), ``<topic>.recipe.<anchor>.html`` (the line
        that opens each recipe a recommendation names) and ``<topic>.answer.json`` (for the
        checklist page and the site check, with the chapter's title from
        :mod:`perfguide.report.publishing.chapters`) into :func:`answers_dir`."""
        directory = answers_dir()
        write_atomically(directory / f"{topic}.answer.html", self._repr_html_() + "\n")
        for anchor in dict.fromkeys(r.recipe for r in self.recommendations if r.recipe):
            naming = [r for r in self.recommendations if r.recipe == anchor]
            status = recipe_status(naming) + "\n"
            write_atomically(directory / f"{topic}.recipe.{anchor}.html", status)
        record = {
            "topic": topic,
            "title": chapter(topic).title,
            # The checklist lists chapters in the order they ran, which is the reading order.
            "written": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "recommendations": [r.to_dict() for r in self.recommendations],
        }
        write_atomically(directory / f"{topic}.answer.json", json.dumps(record, indent=2) + "\n")


def load_checklist(directory: Path) -> list[dict]:
    """Every published short answer in ``directory``, in the order the chapters ran."""
    records = [json.loads(path.read_text()) for path in sorted(directory.glob("*.answer.json"))]
    return sorted(records, key=lambda record: record["written"])
