"""A chapter's short answer: its answer in a few sentences, its recommendations each with the
effect this build measured and the verdict of the claim behind it, and the asker's own scenario
translated to this machine. A recommendation is given as advice only where its claim held in
this build; one whose claim did not hold, or could not be told, is listed as what was measured
instead. Published as HTML (the box at the top of the chapter) and as JSON (read by the
checklist page, which lists every chapter's advice).

>>> from perfguide.report.claims import Claim
>>> claim = Claim("xla-loop is faster than numpy", True, "…", effect="9.80x faster")
>>> answer = ShortAnswer("Per-call overhead.", [Recommendation("Compile the loop", claim)])
>>> print(answer)
Short answer: Per-call overhead.
- Compile the loop: 9.80x faster (HELD: xla-loop is faster than numpy)
>>> failed = Claim("numpy is faster than xla", False, "…", effect="9.80x slower")
>>> print(ShortAnswer("Overhead.", [Recommendation("Stay in NumPy", failed)]))
Short answer: Overhead.
Did not hold here:
- numpy is faster than xla (9.80x slower)
"""

from __future__ import annotations

import dataclasses
import datetime
import html
import json
import os
from collections.abc import Sequence
from pathlib import Path

from perfguide.report.chapters import chapter
from perfguide.report.claims import Claim
from perfguide.report.compare import Table
from perfguide.report.results import measurements_dir, write_atomically

#: Chapters publish their short answers into the directory this variable names (the docs set it).
ANSWERS_DIR_ENV = "PERFGUIDE_ANSWERS_DIR"


def answers_dir() -> Path:
    """``$PERFGUIDE_ANSWERS_DIR``, or the measurements directory."""
    return Path(os.environ.get(ANSWERS_DIR_ENV) or measurements_dir())


#: How a short answer heads what it measured that is no advice, by the deciding claim's verdict.
FINDING_HEADINGS = {"DID NOT HOLD": "Did not hold here", "INCONCLUSIVE": "Too close to call here"}


@dataclasses.dataclass(frozen=True)
class Recommendation:
    """Advice ("do this", "avoid that") and the checked claim that measures its effect. Only a
    claim that held makes it advice, and only where every claim it also ``requires`` held too
    (that a converted model answers as the original does, say); otherwise the answer says
    ``instead`` (what the page measured in its place, e.g. "an op right after a product ran 3.4x
    faster here"), or, without one, which claim did not hold or could not be told here.
    ``caveats`` are what the page measured against the advice (a batch size where the way
    loses, its stalls): given beside it, never left out. ``recipe`` is the anchor of the
    chapter's recipe that puts the advice in code (its section's id, e.g. "pad-to-buckets").

    >>> from perfguide.report.claims import Claim
    >>> fast = Claim("int8 is faster", True, "…", "1.2x faster")
    >>> close = Claim("int8 answers within 0.05 of float", False, "0.07 apart")
    >>> r = Recommendation("Use int8 weights", fast, requires=(close,))
    >>> r.advised, r.finding, r.deciding.verdict
    (False, 'int8 answers within 0.05 of float', 'DID NOT HOLD')
    """

    advice: str
    claim: Claim
    instead: str = ""
    requires: tuple[Claim, ...] = ()
    caveats: tuple[str, ...] = ()
    recipe: str = ""

    @property
    def advised(self) -> bool:
        return all(claim.held is True for claim in (self.claim, *self.requires))

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
    def advice_with_caveats(self) -> str:
        """The advice, with what was measured against it."""
        return self.advice + "".join(f"; but {caveat}" for caveat in self.caveats)

    def to_dict(self) -> dict[str, str | bool]:
        return {
            "advice": self.advice,
            "advised": self.advised,
            "finding": "" if self.advised else self.finding,
            "effect": self.deciding.effect,
            "target": self.deciding.target,
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
        }


def verdict_badge(verdict: str) -> str:
    """The verdict as an HTML badge, tinted by the site's CSS."""
    slug = verdict.lower().replace(" ", "-")
    return f'<span class="perfguide-verdict perfguide-verdict-{slug}">{html.escape(verdict)}</span>'


def effect_and_target(effect: str, target: str = "") -> str:
    """A measured effect, with what the claim asked for beside it where it asked for more than a
    direction (a "7.58x faster" that did not hold reads wrong alone).

    >>> effect_and_target("7.58x faster", "at least 10x faster")
    '7.58x faster (claimed: at least 10x faster)'
    """
    return f"{effect} (claimed: {target})" if target else effect


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

    def __str__(self) -> str:
        lines = [f"Short answer: {self.answer}"]
        lines += [
            f"- {r.advice_with_caveats}: {r.claim.effect} ({r.claim.verdict}: {r.claim.statement})"
            for r in self.advice
        ]
        for verdict, heading in FINDING_HEADINGS.items():
            found = [r for r in self.findings if r.deciding.verdict == verdict]
            lines += [f"{heading}:"] * bool(found)
            lines += [
                f"- {r.finding} ({effect_and_target(r.deciding.effect, r.deciding.target)})"
                for r in found
            ]
        if self.scenario:
            lines += [self.scenario.caption, " | ".join(self.scenario.header)]
            lines += [" | ".join(row) for row in self.scenario.rows]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        def item(text: str, claim: Claim, recipe: str = "") -> str:
            effect = effect_and_target(claim.effect + " here", claim.target)
            code = f' <a href="#{recipe}">recipe</a>' if recipe else ""
            return (
                f"<li>{text}: {html.escape(effect)} {verdict_badge(claim.verdict)} "
                f'<a href="#{claim.anchor}">evidence</a>{code}</li>'
            )

        advice = "".join(
            item(
                f"<strong>{html.escape(r.advice)}</strong>"
                + "".join(f"; but {html.escape(caveat)}" for caveat in r.caveats),
                r.claim,
                r.recipe,
            )
            for r in self.advice
        )
        advice = (
            f'<ul class="perfguide-advice">{advice}</ul>'
            if advice
            else "<p>No practice this page checked paid off here.</p>"
        )
        findings = ""
        for verdict, heading in FINDING_HEADINGS.items():
            found = [r for r in self.findings if r.deciding.verdict == verdict]
            if found:
                items = "".join(item(html.escape(r.finding), r.deciding) for r in found)
                findings += (
                    f'<p class="perfguide-short-answer-findings">{heading}:</p><ul>{items}</ul>'
                )
        scenario = self.scenario._repr_html_() if self.scenario else ""
        return (
            '<div class="perfguide-short-answer"><p class="perfguide-short-answer-title">'
            f"Short answer</p><p>{html.escape(self.answer)}</p>{advice}{findings}"
            f"{scenario}</div>"
        )

    def publish(self, topic: str) -> None:
        """Write ``<topic>.answer.html`` (the box) and ``<topic>.answer.json`` (for the
        checklist page, with the chapter's title from :mod:`perfguide.report.chapters`) into
        :func:`answers_dir`."""
        directory = answers_dir()
        write_atomically(directory / f"{topic}.answer.html", self._repr_html_() + "\n")
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
