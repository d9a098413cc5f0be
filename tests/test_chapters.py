"""What every chapter script keeps to, read from its source (the docs build runs them)."""

import ast
import re
from pathlib import Path

import pytest

from perfguide.report.publishing import chapters

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted(ROOT.glob("examples/*/plot_*.py"))
START, END = "# sphinx_gallery_start_ignore", "# sphinx_gallery_end_ignore"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.parent.name)
def test_the_guides_own_calls_are_hidden_in_code_not_in_prose(chapter):
    # sphinx-gallery reads a comment right after a cell's prose as more prose: a start marker
    # there would be printed, and its end marker would be left without one.
    lines = chapter.read_text().splitlines()
    glued = [
        i + 1 for i, line in enumerate(lines) if line == START and lines[i - 1].startswith("#")
    ]
    assert glued == []
    assert sum(line == START for line in lines) == sum(line == END for line in lines)


def cells(source: str) -> list[str]:
    """A chapter's code cells, as sphinx-gallery splits them (at ``# %%``)."""
    return re.split(r"^# %%.*$", source, flags=re.MULTILINE)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.parent.name)
def test_what_a_chapter_shows_is_its_cells_last_value(chapter):
    # The site displays only a cell's last value: a table shown before more code is lost.
    lost = []
    for number, cell in enumerate(cells(chapter.read_text())):
        body = ast.parse(cell).body
        last = body[-1].value if body and isinstance(body[-1], ast.Expr) else None
        lost += [
            f"cell {number}, line {node.lineno}"
            for node in ast.walk(ast.Module(body, []))
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "show"
            and node is not last
        ]
    assert lost == []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.parent.name)
def test_every_chapter_ends_with_recipes_in_plain_view(chapter):
    text = chapter.read_text()
    recipes = text.rindex("# Recipes\n# -------\n")
    assert START not in text[recipes:], "the recipes are reader code: none of it hidden"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.parent.name)
def test_every_chapter_folder_has_the_header_sphinx_gallery_needs_to_build_it(chapter):
    # Without it, sphinx-gallery skips the folder: the chapter is neither run nor shown.
    assert (chapter.parent / "README.txt").read_text().strip()


def test_the_table_of_chapters_has_every_chapter_under_its_own_title():
    assert sorted(c.topic for c in chapters.CHAPTERS) == sorted(p.parent.name for p in CHAPTERS)
    for chapter in chapters.CHAPTERS:
        heading = (ROOT / "examples" / chapter.topic / f"plot_{chapter.topic}.py").read_text()
        assert heading.splitlines()[1] == chapter.title


def test_the_readme_lists_the_chapters_as_the_table_has_them():
    assert chapters.readme_table() in (ROOT / "README.md").read_text()


def test_a_chapters_footer_links_its_neighbours_in_the_reading_order_and_the_checklist():
    first, second, third = chapters.CHAPTERS[:3]
    middle = chapters.footer(second.topic)
    assert f"Previous question: :doc:`{first.title} </{first.page}>`" in middle
    assert f"Next question: :doc:`{third.title} </{third.page}>`" in middle
    assert ":doc:`the checklist </checklist>`" in middle
    assert "Previous question" not in chapters.footer(first.topic)
    assert "Next question" not in chapters.footer(chapters.CHAPTERS[-1].topic)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.parent.name)
def test_no_chapter_types_its_own_previous_or_next_link(chapter):
    # The build adds them from the table of chapters (docs/conf.py), so they cannot drift.
    text = chapter.read_text()
    assert "Previous question" not in text and "Next question" not in text


#: A reader sees the code a page runs: at most this share of a chapter's lines is hidden.
HIDDEN_AT_MOST = 0.15


def hidden_share(chapter: Path) -> float:
    lines = chapter.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line == START]
    ends = [i for i, line in enumerate(lines) if line == END]
    return sum(end - start + 1 for start, end in zip(starts, ends, strict=True)) / len(lines)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.parent.name)
def test_a_chapter_hides_little_of_its_code(chapter):
    assert hidden_share(chapter) <= HIDDEN_AT_MOST
