"""Two builds of the site, their claims matched by text: which verdicts a rebuild changed.

A page shows more or fewer claims from one build to the next (a comparison settled in one build
may be left out of the next), so claims are matched by their page and their statement, never by
position. A verdict that turns between HELD and DID NOT HOLD is a claim the guide states both
ways; one that turns to or from INCONCLUSIVE is one its interval settled in one build only.

>>> before = {("eager", "a is faster than b"): "HELD", ("eager", "c is faster than d"): "HELD"}
>>> after = {("eager", "a is faster than b"): "DID NOT HOLD",
...          ("eager", "c is faster than d"): "INCONCLUSIVE", ("eager", "new"): "HELD"}
>>> print(Rebuild(before, after))
2 claims in both builds, 1 in one only
1 between HELD and DID NOT HOLD, 1 to or from INCONCLUSIVE (50.0 %)
  eager: a is faster than b: HELD -> DID NOT HOLD
  eager: c is faster than d: HELD -> INCONCLUSIVE

Whole chapters drift too: :func:`chapter_shifts` sets each chapter's medians in the later build
against the earlier's beside its place in each build's run, and :func:`place_correlation` tells
whether chapters that ran later moved more (a build run in another order sets them apart).
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import re
import statistics
from pathlib import Path

from scipy import stats

from perfguide.report.format import format_percent, format_speedup
from perfguide.report.publishing import memory_results, results

#: A claim's row as the claim report writes it: its verdict, then its statement.
_ROW = re.compile(
    r'<tr id="claim-[^"]*" class="perfguide-claim[^"]*"><td>(?P<verdict>[A-Z ]+)</td>'
    r"<td>(?P<statement>.*?)</td>"
)
INCONCLUSIVE = "INCONCLUSIVE"
OPPOSITES = {"HELD", "DID NOT HOLD"}


def page_verdicts(text: str) -> dict[str, str]:
    """Each claim's verdict on a built page (``text``), by its statement; a statement the page
    checks more than once is numbered from its second time on ("… (2)").

    >>> row = '<tr id="claim-x" class="perfguide-claim a"><td>HELD</td><td>a &gt; b</td>'
    >>> page_verdicts(row + row.replace("HELD", "INCONCLUSIVE"))
    {'a > b': 'HELD', 'a > b (2)': 'INCONCLUSIVE'}
    """
    found: dict[str, str] = {}
    for match in _ROW.finditer(text):
        statement = html.unescape(match["statement"])
        key, count = statement, 1
        while key in found:
            count += 1
            key = f"{statement} ({count})"
        found[key] = match["verdict"]
    return found


def site_verdicts(site: Path) -> dict[tuple[str, str], str]:
    """Every chapter's claims' verdicts in a built site, by (chapter, statement)."""
    pages = sorted(Path(site).glob("auto_examples/*/plot_*.html"))
    if not pages:
        raise ValueError(f"{site}: no chapter pages in auto_examples/, not a built site")
    return {
        (page.parent.name, statement): verdict
        for page in pages
        for statement, verdict in page_verdicts(page.read_text()).items()
    }


@dataclasses.dataclass(frozen=True)
class Rebuild:
    """The verdicts of one build (``before``) and of the next (``after``), side by side."""

    before: dict[tuple[str, str], str]
    after: dict[tuple[str, str], str]

    @property
    def matched(self) -> list[tuple[str, str]]:
        return sorted(self.before.keys() & self.after.keys())

    @property
    def changed(self) -> list[tuple[str, str]]:
        return [key for key in self.matched if self.before[key] != self.after[key]]

    @property
    def opposite(self) -> list[tuple[str, str]]:
        """Claims that turned between HELD and DID NOT HOLD."""
        return [k for k in self.changed if {self.before[k], self.after[k]} == OPPOSITES]

    @property
    def unsettled(self) -> list[tuple[str, str]]:
        """Claims that turned to or from INCONCLUSIVE."""
        return [k for k in self.changed if INCONCLUSIVE in (self.before[k], self.after[k])]

    def __str__(self) -> str:
        matched = len(self.matched)
        alone = len(self.before.keys() ^ self.after.keys())
        share = len(self.unsettled) / matched if matched else 0.0
        lines = [
            f"{matched} claims in both builds, {alone} in one only",
            f"{len(self.opposite)} between HELD and DID NOT HOLD, {len(self.unsettled)} to or "
            f"from INCONCLUSIVE ({format_percent(share)})",
        ]
        lines += [
            f"  {chapter}: {statement}: {self.before[(chapter, statement)]} -> "
            f"{self.after[(chapter, statement)]}"
            for chapter, statement in self.changed
        ]
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class ChapterShift:
    """How a chapter's medians moved from one build to the next, and where it ran in each."""

    topic: str
    #: Its place in each build's run, 1 first.
    places: tuple[int, int]
    #: The geometric mean, over the rows both builds measured, of the later median over the
    #: earlier.
    shift: float
    rows: int

    def __str__(self) -> str:
        moved = format_speedup(1 / self.shift)
        ran = f"ran {self.places[0]} then {self.places[1]}"
        return f"  {self.topic}: {ran}, {moved} in the later build ({self.rows} rows)"


def run_places(site: Path) -> dict[str, int]:
    """Each chapter's place in the site's build (1 first), from the build's state file."""
    path = Path(site) / "build-state.json"
    if not path.is_file():
        raise ValueError(f"{site}: no build-state.json, not a built site with its build's state")
    ran = [r["chapter"] for r in json.loads(path.read_text()) if r["when"] == "after"]
    return {topic: place for place, topic in enumerate(ran, 1)}


def _medians(site: Path) -> dict[str, dict[str, float]]:
    """Each chapter's medians in a built site, by row (as a calibration names it); the memory
    chapter's growth rates are no times and are left out."""
    files = sorted((Path(site) / "measurements").glob("*.json"))
    return {
        path.stem: {m.row_key: m.median_s for m in results.load_measurements(path)}
        for path in files
        if not memory_results.holds_growth(path)
    }


def chapter_shifts(before: Path, after: Path) -> list[ChapterShift]:
    """Every chapter both builds ran and measured rows of, in the earlier build's order."""
    places = run_places(before), run_places(after)
    old, new = _medians(before), _medians(after)
    shifts = []
    for topic in sorted(places[0].keys() & places[1].keys(), key=places[0].get):
        rows = old.get(topic, {}).keys() & new.get(topic, {}).keys()
        if rows:
            logs = [math.log(new[topic][row] / old[topic][row]) for row in rows]
            shift = math.exp(statistics.fmean(logs))
            shifts.append(
                ChapterShift(topic, (places[0][topic], places[1][topic]), shift, len(rows))
            )
    return shifts


def place_correlation(shifts: list[ChapterShift]) -> str:
    """Whether chapters that moved later in the run slowed more: Spearman's rank correlation of
    each chapter's change of place with its shift (in log), with its p-value."""
    if len(shifts) < 3:
        return "too few chapters to correlate"
    moved = [s.places[1] - s.places[0] for s in shifts]
    if len(set(moved)) == 1:
        return "every chapter ran at the same place in both builds: nothing to correlate"
    found = stats.spearmanr(moved, [math.log(s.shift) for s in shifts])
    return (
        f"a later place against a slower chapter: Spearman's rho {found.statistic:+.2f} "
        f"(p = {found.pvalue:.2g}, {len(shifts)} chapters)"
    )
