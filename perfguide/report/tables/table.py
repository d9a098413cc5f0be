"""Tables a page shows: a captioned table of text cells as HTML on a page (in the site's style)
and as text in a terminal, and things shown collapsed under a summary or stacked one below the
other."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Collection, Sequence
from typing import Any

from perfguide.report.format import GLOSSARY


def html_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    caption: str = "",
    text_columns: Collection[int] = (0,),
) -> str:
    """A table in the site's style: the ``text_columns`` (by index) left-aligned text, the others
    right-aligned figures (the ``perfguide-comparison`` class of the site's CSS), scrolling inside
    itself on phones.

    >>> html_table(["variant", "time"], [["numpy", "1 µs"]])  # doctest: +ELLIPSIS
    '<table ...><th class="perfguide-text">variant</th><th>time</th>...<td>1 µs</td>...'
    """

    def cells(tag: str, row: Sequence[str]) -> str:
        return "".join(
            f'<{tag} class="perfguide-text">{_linked(cell)}</{tag}>'
            if i in text_columns
            else f"<{tag}>{_linked(cell)}</{tag}>"
            for i, cell in enumerate(row)
        )

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    caption = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return (
        f'<table class="table perfguide-comparison">{caption}<thead><tr>{cells("th", header)}'
        f"</tr></thead><tbody>{body}</tbody></table>"
    )


def _linked(cell: str) -> str:
    """A cell as HTML; a term the guide defines (a kind of interval) links to its definition.

    >>> _linked("rerun interval")
    '<a href="../../reading.html#rerun-interval">rerun interval</a>'
    """
    for term, href in GLOSSARY.items():
        if term in cell:
            return html.escape(cell).replace(term, f'<a href="{href}">{term}</a>')
    return html.escape(cell)


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The same table as text, for a terminal: columns padded to their widest cell, under a rule.

    >>> print(text_table(["variant", "time"], [["numpy", "1.00 µs"], ["eager", "25.0 µs"]]))
    variant  time
    -------  -------
    numpy    1.00 µs
    eager    25.0 µs
    """
    table = [list(header), *map(list, rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = [table[0], ["-" * w for w in widths], *table[1:]]
    return "\n".join("  ".join(map(str.ljust, line, widths)).rstrip() for line in lines)


@dataclasses.dataclass(frozen=True)
class Table:
    """A captioned table of text cells, shown as HTML on a page and as text in a terminal."""

    caption: str
    header: Sequence[str]
    rows: Sequence[Sequence[str]]

    def __str__(self) -> str:
        return f"{self.caption}\n{text_table(self.header, self.rows)}"

    def _repr_html_(self) -> str:
        return html_table(self.header, self.rows, self.caption)


@dataclasses.dataclass(frozen=True)
class Collapsed:
    """Anything a page shows (a table, a claim report), collapsed under a one-line ``summary``
    that a reader opens to see it: for what supports a page rather than answers its question,
    so that the page stays short. A terminal shows it whole.

    >>> print(Collapsed("Every path, in full", Table("Times", ["path"], [["eager"]])))
    Every path, in full
    Times
    path
    -----
    eager
    >>> Collapsed("More", Table("", ["a"], []))._repr_html_()[:60]
    '<details class="perfguide-collapsed"><summary>More</summary>'
    """

    summary: str
    shown: Any

    def __str__(self) -> str:
        return f"{self.summary}\n{self.shown}"

    def _repr_html_(self) -> str:
        return (
            f'<details class="perfguide-collapsed"><summary>{html.escape(self.summary)}'
            f"</summary>{self.shown._repr_html_()}</details>"
        )


@dataclasses.dataclass(frozen=True)
class Stacked:
    """Several things a page shows (tables, comparisons), one below the other, as one value: a
    notebook cell displays only its last.

    >>> print(Stacked([Table("A", ["x"], [["1"]]), Table("B", ["y"], [])]))
    A
    x
    -
    1
    <BLANKLINE>
    B
    y
    -
    """

    shown: Sequence[Any]

    def __str__(self) -> str:
        return "\n\n".join(map(str, self.shown))

    def _repr_html_(self) -> str:
        return "".join(item._repr_html_() for item in self.shown)
