"""What every chapter script keeps to, read from its source (the docs build runs them)."""

from pathlib import Path

import pytest

CHAPTERS = sorted(Path(__file__).resolve().parent.parent.glob("examples/*/plot_*.py"))
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


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.parent.name)
def test_every_chapter_ends_with_recipes_in_plain_view(chapter):
    text = chapter.read_text()
    recipes = text.rindex("# Recipes\n# -------\n")
    assert START not in text[recipes:], "the recipes are reader code: none of it hidden"
