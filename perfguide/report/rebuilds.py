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
"""

from __future__ import annotations

import dataclasses
import html
import re
from pathlib import Path

from perfguide.report.format import format_percent

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
