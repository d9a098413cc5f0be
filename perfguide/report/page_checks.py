"""Checks of a built page's text: claim lines whose speed-up disagrees with the two medians
printed beside it (:func:`disagreements`), and winners named without a separation from their
runner-up (:func:`unseparated_winners`). The site check runs both on every chapter."""

from __future__ import annotations

import re

from perfguide.report.format import three_figures
from perfguide.report.ranking import AHEAD

#: A claim's evidence as :meth:`Faster.check` words it: the speed-up, then the two medians.
_EVIDENCE = re.compile(
    r"is (?:as fast as|(?P<factor>[\d,.]+)x (?P<way>faster|slower) than) [^;]*?: "
    r"(?P<fast>[\d,.]+ [nµm]?s) vs (?P<slow>[\d,.]+ [nµm]?s) per"
)
_UNITS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}
#: How far a printed speed-up may lie from the ratio of its printed medians: each of the three
#: is rounded to three figures.
ROUNDING = 0.015


def _seconds(text: str) -> float:
    number, unit = text.split(" ")
    return float(number.replace(",", "")) * _UNITS[unit]


def disagreements(text: str) -> list[str]:
    """Every claim evidence in ``text`` (a built page, say) whose speed-up does not match the
    two medians printed beside it, beyond rounding.

    >>> disagreements("a is 2.00x faster than b: 1.00 ms vs 2.00 ms per call; …")
    []
    >>> disagreements("a is 1.49x faster than b: 17.0 ms vs 23.8 ms per call")
    ['is 1.49x faster than b: 17.0 ms vs 23.8 ms per: the medians say 1.40x']
    """
    found = []
    for match in _EVIDENCE.finditer(text):
        ratio = _seconds(match["slow"]) / _seconds(match["fast"])
        if match["factor"] is None:
            stated = 1.0
        else:
            factor = float(match["factor"].replace(",", ""))
            stated = factor if match["way"] == "faster" else 1 / factor
        if abs(ratio / stated - 1) > ROUNDING:
            shown = ratio if ratio >= 1 else 1 / ratio
            found.append(f"{match[0]}: the medians say {three_figures(shown)}x")
    return found


#: Words that name a winner; each sentence that holds one must show its separation.
_WINNER = re.compile(
    r"\b(?:was|were|is|are) (?:the )?(?:fastest|best)\b|\b(?:served|answered|ran) fastest\b"
    r"|\bworth most\b|\bthe fastest (?:path|way|form|variant)\b",
    re.IGNORECASE,
)
_SEPARATION = re.compile(rf"([\d.,]+)x to ([\d.,]+)x {AHEAD}")


def unseparated_winners(text: str) -> list[str]:
    """Every sentence of ``text`` (a built page, say) that names a winner without a separation
    from its runner-up: a margin over the runner-up whose lower end is above 1x.

    >>> unseparated_winners("mlp was answered fastest by litert (1.17 µs). Fine.")
    ['mlp was answered fastest by litert (1.17 µs)']
    >>> unseparated_winners("a was fastest, 1.20x to 1.50x ahead of the runner-up, b (…).")
    []
    >>> unseparated_winners("a was fastest, 1.00x to 1.50x ahead of the runner-up, b.")
    ['a was fastest, 1.00x to 1.50x ahead of the runner-up, b']
    """
    found = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        if not _WINNER.search(sentence):
            continue
        margin = _SEPARATION.search(sentence)
        if margin is None or float(margin[1].replace(",", "")) <= 1:
            found.append(sentence.strip().rstrip("."))
    return found
