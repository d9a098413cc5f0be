"""Checks of a built site: claim lines whose speed-up disagrees with the two medians printed
beside it (:func:`disagreements`), winners named without a separation from their runner-up
(:func:`unseparated_winners`), ratios quoted in prose that no check on the page printed
(:func:`unmatched_ratios`), advice that other advice contradicts (:func:`contradictions`), and
recipes that do not say whether this build advises them (:func:`recipe_problems`), and figures
with a label or legend cut off at their edge (:func:`cut_at_edges`). The site check runs them on
every chapter, on the short answers the chapters published and on the site's figures."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

import numpy as np

from perfguide.report.format import three_figures
from perfguide.report.publishing.answers import Change
from perfguide.report.verdicts.ranking import AHEAD

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


#: A variant's label as the pages print it: never starting with "(", which opens the
#: parenthesis a check's evidence is often quoted in.
_LABEL = r"[\w.+-][\w.()+-]*"
#: A comparison as a check's evidence words it ("a is 2.00x faster than b: …") and as prose
#: quotes one (:func:`~perfguide.report.publishing.answers.measured_here`: "a was 2.00x faster
#: than b here").
_CHECKED = re.compile(
    rf"(?P<a>{_LABEL}) is (?P<factor>[\d,.]+)x (?P<way>faster|slower) than (?P<b>{_LABEL}):"
)
_QUOTED = re.compile(
    rf"(?P<a>{_LABEL}) was (?P<factor>[\d,.]+)x (?P<way>faster|slower) than (?P<b>{_LABEL}) here"
)


def _comparisons(pattern: re.Pattern, text: str) -> Iterable[tuple[str, str, str, str]]:
    """Each comparison ``pattern`` finds in ``text``: the faster, the slower, the factor, and
    the words as printed."""
    for match in pattern.finditer(text):
        fast, slow = (
            (match["a"], match["b"]) if match["way"] == "faster" else (match["b"], match["a"])
        )
        yield fast, slow, match["factor"], match[0]


def unmatched_ratios(text: str) -> list[str]:
    """Every ratio ``text`` (a built page, its short answer included) quotes between two
    variants whose checks it prints, that none of those checks printed: a quoted ratio is a
    check's own, so it appears among that pair's checks verbatim; one that does not was
    measured or worked out another way, and the page would show one quantity twice.

    >>> unmatched_ratios("b is 2.43x slower than a: 41.3 ms vs 100 ms per call. "
    ...                  "a was 2.66x faster than b here; a was 2.43x faster than b here")
    ['a was 2.66x faster than b here: the page checks a against b at 2.43x']
    >>> unmatched_ratios("a was 2.66x faster than c here")  # no check of the pair printed
    []
    """
    checked: dict[tuple[str, str], set[str]] = {}
    for fast, slow, factor, _ in _comparisons(_CHECKED, text):
        checked.setdefault((fast, slow), set()).add(factor)
    found = []
    for fast, slow, factor, words in _comparisons(_QUOTED, text):
        factors = checked.get((fast, slow))
        if factors and factor not in factors:
            shown = ", ".join(f"{f}x" for f in sorted(factors))
            found.append(f"{words}: the page checks {fast} against {slow} at {shown}")
    return list(dict.fromkeys(found))


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


#: A speed-up quoted after "A against B" rather than stated with its subject.
_SUBJECTLESS = re.compile(r"\bagainst\b[^.;()]{1,80}?[,:] (?:as fast|[\d.,]+x (?:faster|slower))")


def subjectless_effects(text: str) -> list[str]:
    """Every speed-up ``text`` quotes in the shape "A against B, 2.00x faster", which leaves
    the reader to work out what was faster than what; the guide states one as "A was 2.00x
    faster than B".

    >>> subjectless_effects("numpy against eager: 65.0x faster. numpy was 65.0x faster than eager")
    ['against eager: 65.0x faster']
    >>> subjectless_effects("135 kB against 386 kB a call, 2.86x less")
    []
    """
    return [match[0] for match in _SUBJECTLESS.finditer(text)]


def contradictions(chapters: list[dict]) -> list[str]:
    """Every pair of pieces of advice, across the published short answers ``chapters``, that
    turn one setting different ways under conditions that do not tell them apart (see
    :meth:`~perfguide.report.publishing.answers.Change.contradicts`).

    >>> def record(topic, advice, to, **when):
    ...     change = {"setting": "jit_compile", "to": to, "when": when}
    ...     return {"topic": topic, "recommendations": [
    ...         {"advice": advice, "advised": True, "change": change}]}
    >>> contradictions([record("a", "Use XLA", "True", work="a loop"),
    ...                 record("b", "Avoid XLA", "False", policy="bfloat16")])
    ["a: 'Use XLA' turns jit_compile to True, b: 'Avoid XLA' to False, under conditions \
that do not tell them apart (work=a loop; policy=bfloat16)"]
    >>> contradictions([record("a", "Use XLA", "True", work="a loop"),
    ...                 record("b", "Avoid XLA", "False", work="a step")])
    []
    """
    advised = [
        (c["topic"], r, Change.from_dict(r["change"]))
        for c in chapters
        for r in c["recommendations"]
        if r["advised"]
    ]
    found = []
    for (topic, one, change), (other_topic, other, other_change) in itertools.combinations(
        advised, 2
    ):
        if change.contradicts(other_change):
            conditions = "; ".join(
                f"{fact}={value}" for fact, value in change.when + other_change.when
            )
            found.append(
                f"{topic}: {one['advice']!r} turns {change.setting} to {change.to}, "
                f"{other_topic}: {other['advice']!r} to {other_change.to}, under conditions "
                f"that do not tell them apart ({conditions or 'none given'})"
            )
    return found


def recipe_problems(chapter: dict, statuses: dict[str, bool | None]) -> list[str]:
    """Every recipe of a published short answer (``chapter``) whose section on the built page
    does not open with this build's verdict on it: ``statuses`` gives, by recipe anchor,
    whether the page's status line says it is advised (None: the page has no such line).

    >>> chapter = {"recommendations": [{"recipe": "pad", "advised": False},
    ...                                 {"recipe": "cache", "advised": True}]}
    >>> recipe_problems(chapter, {"pad": True, "cache": True})
    ['recipe #pad reads as advised, but no claim it rests on held']
    >>> recipe_problems(chapter, {"pad": False})
    ['recipe #cache does not open with whether this build advises it']
    """
    problems = []
    anchors = dict.fromkeys(r["recipe"] for r in chapter["recommendations"] if r["recipe"])
    for anchor in anchors:
        advised = any(r["advised"] for r in chapter["recommendations"] if r["recipe"] == anchor)
        shown = statuses.get(anchor)
        if shown is None:
            problems.append(f"recipe #{anchor} does not open with whether this build advises it")
        elif shown != advised:
            problems.append(
                f"recipe #{anchor} reads as {'advised' if shown else 'not advised'}, but "
                + ("a claim it rests on held" if advised else "no claim it rests on held")
            )
    return problems


#: A measured figure as the guide prints it: a factor, a share, a time, bytes or a rate.
_FIGURE = re.compile(
    r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?: ?%|x| (?:[nµm]?s|[KMG]i?B|[KMG]B/s|GFLOP/s))(?!\w)"
)


def figures(text: str) -> list[str]:
    """The measured figures in ``text``, as printed.

    >>> figures("a was 2.00x faster than b (1.80x to 2.20x), 21.4 µs, 94 %, 5.3 MB; 2 cores")
    ['2.00x', '1.80x', '2.20x', '21.4 µs', '94 %', '5.3 MB']
    """
    return [match.group(0) for match in _FIGURE.finditer(text)]


def unbacked_figures(quoted: str, page: str) -> list[str]:
    """Every measured figure in ``quoted`` (a short answer, a checklist line) that ``page`` (the
    chapter's own text, the quoting part left out) does not print: a figure quoted from a
    table or a claim is that measurement, formatted by the same function, so it appears there
    verbatim; one that does not is another measurement of the same thing, or a recomputation.

    >>> unbacked_figures("the first call took 349 ms, 112x a steady call",
    ...                  "first-call overhead 346 ms; 112x a steady call")
    ['349 ms']
    """
    shown = set(figures(page))
    return [figure for figure in dict.fromkeys(figures(quoted)) if figure not in shown]


def undefined_names(quoted: str, names: Iterable[str], defined: Iterable[str]) -> list[str]:
    """Every one of ``names`` (a chapter's variant labels) that ``quoted`` (its short answer, a
    checklist line) uses and its page does not define (``defined``: the names its prose sets
    in code, as it introduces them), longest first so that "tf-data-no-autotune" is not also
    read as "tf-data".

    >>> undefined_names("tf-data-no-autotune was 1.57x faster than fit here",
    ...                 ["fit", "tf-data", "tf-data-no-autotune"], ["fit"])
    ['tf-data-no-autotune']
    """
    found, rest, known = [], quoted, set(defined)
    # A label of several words ("a fresh process") says what it is; a name of one needs saying.
    for name in sorted({n for n in names if " " not in n}, key=len, reverse=True):
        pattern = rf"(?<![\w-]){re.escape(name)}(?![\w-])"
        if re.search(pattern, rest):
            rest = re.sub(pattern, " ", rest)
            if name not in known:
                found.append(name)
    return found


#: Below this grey level (0 black, 255 white) a pixel is ink: text, a line or a marker.
INK = 200
#: The rows and columns along each edge of a figure that hold no ink unless something was cut.
EDGE = 2


def cut_at_edges(gray: np.ndarray) -> list[str]:
    """The edges of a figure (its grey levels, rows by columns) that ink touches: matplotlib
    leaves a margin round everything it fits, so ink there is a label, title or legend drawn
    past the figure and cut off.

    >>> page = np.full((40, 60), 255)
    >>> page[10:20, 0:8] = 0  # a legend's first letters, cut at the left
    >>> cut_at_edges(page), cut_at_edges(np.full((40, 60), 255))
    (['left'], [])
    """
    ink = gray < INK
    edges = {
        "top": ink[:EDGE],
        "bottom": ink[-EDGE:],
        "left": ink[:, :EDGE],
        "right": ink[:, -EDGE:],
    }
    return [edge for edge, pixels in edges.items() if pixels.any()]
