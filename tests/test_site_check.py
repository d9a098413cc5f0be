import runpy
import time
from pathlib import Path

import pytest

SITE_CHECK = runpy.run_path(str(Path(__file__).parents[1] / "tools" / "site_check.py"))


class Chromium:
    """A browser whose page loads (an article found) or not, one answer a load."""

    def __init__(self, loads):
        self.loads = list(loads)
        self.visited = []

    def get(self, url):
        self.visited.append(url)

    def set_window_size(self, width, height):
        pass

    def execute_script(self, script):
        return self.loads.pop(0)


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    monkeypatch.setattr(time, "sleep", lambda seconds: None)


def test_a_page_refused_once_is_loaded_again():
    browser = Chromium([False, True])
    SITE_CHECK["visit"](browser, "http://127.0.0.1:1/a.html")
    assert browser.visited == ["http://127.0.0.1:1/a.html"] * 2


def test_a_page_that_never_loads_is_a_problem_not_a_page_of_44_words():
    attempts = SITE_CHECK["LOAD_ATTEMPTS"]
    browser = Chromium([False] * attempts)
    report = SITE_CHECK["check_one"](browser, "http://127.0.0.1:1/", Path(), "a.html", *[None] * 3)
    assert report.problems == [f"http://127.0.0.1:1/a.html did not load in {attempts} attempts"]
    assert report.in_view is None and len(browser.visited) == attempts


def test_a_check_of_a_page_that_never_loads_says_so():
    def search():
        raise SITE_CHECK["NotLoaded"]("search.html did not load")
        yield

    assert SITE_CHECK["found_on"]("search.html", search()) == [
        "search.html: search.html did not load"
    ]
