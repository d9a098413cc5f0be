"""A chapter's result is displayed by the host that runs the chapter, or printed where none does."""

import ast
import builtins
import itertools
import sys
from pathlib import Path

import pytest

from perfguide.report.publishing.show import displayed_by_host, show
from perfguide.report.tables.table import Table

ROOT = Path(__file__).resolve().parent.parent
TABLE = Table("Two ways", ["way", "time"], [["a", "1 ms"], ["b", "2 ms"]])


@pytest.fixture
def as_a_script(monkeypatch):
    monkeypatch.delitem(sys.modules, "sphinx_gallery", raising=False)
    monkeypatch.delattr(builtins, "__IPYTHON__", raising=False)


def test_a_script_prints_the_result_as_text(as_a_script, capsys):
    assert not displayed_by_host()
    assert show(TABLE) is None
    assert capsys.readouterr().out == f"{TABLE}\n\n"


@pytest.mark.parametrize("host", ["sphinx-gallery", "jupyter"])
def test_a_host_gets_the_result_to_display_and_nothing_is_printed(
    as_a_script, monkeypatch, capsys, host
):
    if host == "jupyter":
        monkeypatch.setattr(builtins, "__IPYTHON__", True, raising=False)
    else:
        monkeypatch.setitem(sys.modules, "sphinx_gallery", object())
    assert displayed_by_host()
    assert show(TABLE) is TABLE
    assert capsys.readouterr().out == ""


def _last_values(chapter: Path) -> list[str]:
    """The source of each cell's last statement, where it is a bare expression (a value only
    a host would display)."""
    source = chapter.read_text()
    tree = ast.parse(source)
    starts = [i + 1 for i, line in enumerate(source.splitlines()) if line.startswith("# %%")]
    bounds = [0, *starts, len(source.splitlines()) + 1]
    last = []
    for low, high in itertools.pairwise(bounds):
        cell = [s for s in tree.body if low < s.lineno < high]
        if cell and isinstance(cell[-1], ast.Expr):
            last.append(ast.get_source_segment(source, cell[-1]))
    return last


@pytest.mark.parametrize(
    "chapter", sorted(ROOT.glob("examples/*/plot_*.py")), ids=lambda path: path.parent.name
)
def test_every_result_a_chapter_ends_a_cell_with_is_shown_in_a_script_too(chapter):
    # A result object (it has _repr_html_) left bare would show on the page and in Jupyter only.
    displayed = ("Comparison(", "ClaimReport(", "Collapsed(", "Table(", "growth_table(",
                 "kernels(", "both.table(")  # fmt: skip
    bare = [value for value in _last_values(chapter) if value.startswith(displayed)]
    assert bare == []
