"""Check the built site in a real headless Chromium, as a reader's browser would show it.

Serves the site on 127.0.0.1, opens every page at a phone's width (375 px) and a desktop's
(1400 px), and reports, one line each: console errors and uncaught exceptions, images that did not
load, internal links (and their #fragments) that lead nowhere, pages wider than the window, text
cut at its right edge, a claim whose stated speed-up disagrees with the two medians printed beside
it, a "fastest", "best" or "worth most" named without a separation from its runner-up, a speed-up
quoted as "A against B, 2x faster" instead of with its subject first, advice given where its claim
did not hold, two pieces of advice (across every chapter's published short answer) that turn one
setting different ways under conditions that do not tell them apart, a recipe that does not open
with whether this build advises it, a chapter that shows no TensorFlow code before its recipes, a
figure with a label or legend cut off at its edge, and a search for "xla" that does not find the
gradient-descent chapter. It counts the words and tables each chapter puts in view (code, output
and collapsed sections aside) against its budget.
Screenshots of every page at both widths go to a folder, to look at.

    python tools/site_check.py [SITE] [--screenshots DIR]

Exit status: 0 all good, 1 problems found, 2 could not check (no site, no Chromium).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import functools
import http.server
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import matplotlib.image

from perfguide.report.publishing.answers import load_checklist
from perfguide.report.publishing.chapters import chapter
from perfguide.report.publishing.page_checks import (
    contradictions,
    cut_at_edges,
    disagreements,
    recipe_problems,
    subjectless_effects,
    unbacked_figures,
    undefined_names,
    unmatched_ratios,
    unseparated_winners,
)
from perfguide.report.publishing.results import ResultsError, load

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WIDTHS = (375, 1400)
# Browsers checking pages at once: one a core, two at most (more only queue for the cores).
LANES = max(1, min(2, len(os.sched_getaffinity(0))))
# answers/ holds the parts the chapters include (their boxes, their recipes' status lines).
SKIPPED_DIRS = {"_static", "_sources", "_images", "_downloads", "site-check", "answers"}
# Pages whose claim lines were measured (the API pages show made-up ones, as examples).
CHAPTERS = "auto_examples/"
# Pages built from measured claims beside the chapters, where a named winner must be separated.
MEASURED_PAGES = ("checklist.html",)
# What a reader is asked to read on a chapter page: words of prose and tables (code and its
# printed output aside), and tables, neither inside a collapsed section.
WORD_BUDGET, TABLE_BUDGET = 2500, 6
SEARCH_TERM, SEARCH_MUST_FIND = "xla", "auto_examples/linear_regression/plot_linear_regression"
SEARCH_HITS = """
const heading = document.querySelector('#search-results h2');
if (!heading || heading.textContent !== 'Search Results') return null;
return [...document.querySelectorAll('#search-results a')].map((a) => a.href);
"""

# Whether a box of its own scrolls or clips an element: the theme's article container scrolls
# sideways too, but a reader never sees what only it would scroll to.
IN_OWN_BOX = """
const width = window.innerWidth;
const inOwnBox = (el) => {
  let p = el.parentElement;
  while (p && getComputedStyle(p).overflowX === "visible") p = p.parentElement;
  return Boolean(p) && !p.classList.contains("bd-article-container");
};
"""

# Elements that overflow the window on their right edge, minus those inside a box of their own.
OVERFLOWING = (
    IN_OWN_BOX
    + """
const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
  (el.classList.length ? "." + [...el.classList].slice(0, 2).join(".") : "");
const right = (el) => el.getBoundingClientRect().right;
return [...document.body.querySelectorAll("*")]
  .filter((el) => right(el) > width + 1 && !inOwnBox(el))
  .filter((el) => !(el.parentElement && right(el.parentElement) > width + 1))
  .slice(0, 3).map((el) => name(el) + " to " + Math.round(right(el)) + " px");
"""
)

# Text that runs past the window's right edge outside a box of its own (the page itself never
# gets wider, since the article container takes the overflow).
CUT_TEXT = (
    IN_OWN_BOX
    + """
const range = document.createRange();
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const found = [];
for (let node = walker.nextNode(); node && found.length < 3; node = walker.nextNode()) {
  if (!node.textContent.trim()) continue;
  range.selectNodeContents(node);
  const box = range.getBoundingClientRect();
  if (!box.width || box.right <= width + 1 || inOwnBox(node)) continue;
  const text = JSON.stringify(node.textContent.trim().slice(0, 40));
  found.push(text + " to " + Math.round(box.right) + " px");
}
return found;
"""
)

# The verdict of every line given as advice (a short answer's, the checklist's): all must be HELD.
ADVICE_VERDICTS = """
return [...document.querySelectorAll('.perfguide-advice .perfguide-verdict')]
  .map((badge) => badge.textContent);
"""

# Words and tables in view: the article less code blocks, printed output and closed details.
IN_VIEW = """
const copy = document.querySelector("article").cloneNode(true);
copy.querySelectorAll("pre, details:not([open]), .sphx-glr-download, script, style")
  .forEach((el) => el.remove());
const words = (copy.innerText || copy.textContent).split(/\\s+/).filter((w) => /\\w/.test(w));
return [words.length, copy.querySelectorAll("table").length];
"""

# Whether each recipe's status line says it is advised, by the recipe section's id.
RECIPE_STATUSES = """
const found = {};
document.querySelectorAll("section[id] > .perfguide-recipe-status").forEach((status) => {
  found[status.parentElement.id] = status.dataset.advised === "true";
});
return found;
"""

# A chapter's short answer (less a table citing another source's figures) and the rest of the
# page (less the answer printed as text), as text: every figure the answer quotes must be a
# figure the page prints.
# Text nodes are joined with spaces: a table's cells, as textContent, run into each other.
SHORT_ANSWER_AND_PAGE = """
const text = (root) => {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const parts = [];
  while (walker.nextNode()) parts.push(walker.currentNode.nodeValue);
  return parts.join(" ");
};
const box = document.querySelector(".perfguide-short-answer");
if (!box) return null;
const answer = box.cloneNode(true);
answer.querySelectorAll("table").forEach((table) => table.remove());
const page = (document.querySelector("article") || document.body).cloneNode(true);
page.querySelectorAll(".perfguide-short-answer").forEach((el) => el.remove());
page.querySelectorAll("pre").forEach((pre) => {
  if (pre.textContent.trimStart().startsWith("Short answer:")) pre.remove();
});
return [text(answer), text(page)];
"""
# The checklist's lines: the chapter page its evidence is on, its whole text, what it measured.
CHECKLIST_LINES = """
return [...document.querySelectorAll("table.perfguide-checklist tbody tr")].map((row) => [
  row.querySelector("a").getAttribute("href").split("#")[0],
  row.textContent,
  row.querySelectorAll("td")[1].textContent,
]);
"""
# The names a chapter's prose sets in code as it introduces them (its variants' among them).
DEFINED_NAMES = """
const article = document.querySelector("article") || document.body;
return [...article.querySelectorAll("code")]
  .filter((code) => !code.closest("pre, table, .perfguide-short-answer, .perfguide-recipe-status"))
  .map((code) => code.textContent.trim());
"""

# Blocks of Python source in view before the Recipes section (none inside a closed details, no
# printed output) that use TensorFlow or Keras: the code a chapter compares, shown before its
# numbers.
TENSORFLOW_CODE_IN_VIEW = """
const recipes = document.getElementById("recipes");
return [...document.querySelectorAll("div[class*='highlight-'] pre")].filter((pre) =>
  !pre.closest("details:not([open]), .sphx-glr-script-out")
  && /highlight-(python|default)/i.test(pre.closest("div[class*='highlight-']").className)
  && (!recipes || (pre.compareDocumentPosition(recipes) & Node.DOCUMENT_POSITION_FOLLOWING))
  && /\\b(tf|keras)\\./.test(pre.textContent)).length;
"""

BROKEN_IMAGES = """
return [...document.images].filter((img) => !(img.complete && img.naturalWidth > 0))
  .map((img) => img.currentSrc || img.src);
"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


class SiteServer(http.server.ThreadingHTTPServer):
    # Two browsers fetch a page's scripts, styles and images at once: more than the default
    # backlog of 5 connections, past which a connection is refused and a page half-loads.
    request_queue_size = 128


#: Loads of a page before it is called unloadable (a refused connection is tried again).
LOAD_ATTEMPTS = 3


class NotLoaded(Exception):
    """A page that did not load: Chromium showed its error page, which has no main element."""


def visit(driver, url: str) -> None:
    """Load ``url``, trying again where it did not load; :class:`NotLoaded` if it never did."""
    for _ in range(LOAD_ATTEMPTS):
        driver.get(url)
        if driver.execute_script('return document.querySelector("main") !== null;'):
            return
        time.sleep(1)
    raise NotLoaded(f"{url} did not load in {LOAD_ATTEMPTS} attempts")


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve ``site`` on a free port of 127.0.0.1 in a background thread."""
    handler = functools.partial(QuietHandler, directory=str(site))
    server = SiteServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def pages(site: Path) -> list[str]:
    """Every HTML page of the site, as paths relative to its root."""
    return sorted(
        path.relative_to(site).as_posix()
        for path in site.rglob("*.html")
        if not SKIPPED_DIRS.intersection(path.relative_to(site).parts)
    )


@contextlib.contextmanager
def opened_browser():
    """A headless Chromium, quit however the checks end."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Chromium leaves folders in its TMPDIR when it quits: this one goes with them.
    with tempfile.TemporaryDirectory(prefix="site-check-browser-") as scratch:
        service = Service(executable_path=CHROMEDRIVER, env={**os.environ, "TMPDIR": scratch})
        driver = webdriver.Chrome(service=service, options=options)
        try:
            yield driver
        finally:
            driver.quit()


class LinkChecker:
    """Whether internal URLs load, and whether their #fragments name an element there."""

    def __init__(self, base: str):
        self.base = base
        self.ids: dict[str, set[str] | None] = {}

    def _ids(self, url: str) -> set[str] | None:
        if url not in self.ids:
            try:
                with urllib.request.urlopen(url, timeout=30) as response:
                    text = response.read().decode("utf-8", "replace")
                self.ids[url] = set(re.findall(r'\bid="([^"]+)"', text))
            except (urllib.error.URLError, OSError):
                self.ids[url] = None
        return self.ids[url]

    def problem(self, href: str) -> str | None:
        url, _, fragment = href.partition("#")
        ids = self._ids(url)
        if ids is None:
            return f"link to {href} does not load"
        if fragment and url.endswith(".html") and urllib.parse.unquote(fragment) not in ids:
            return f"link to {href}: no #{fragment} on that page"
        return None


def check_page(driver, base: str, page: str, links: LinkChecker, shots: Path) -> Iterator[str]:
    for width in WIDTHS:
        driver.set_window_size(width, 900)
        visit(driver, base + page)
        for entry in driver.get_log("browser"):
            if entry["level"] == "SEVERE":
                yield f"console error at {width} px: {entry['message'][:200]}"
        overflow = driver.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth;"
        )
        if overflow > 1:
            culprits = ", ".join(driver.execute_script(OVERFLOWING)) or "unknown element"
            yield f"{overflow} px wider than a {width} px window: {culprits}"
        for cut in driver.execute_script(CUT_TEXT):
            yield f"text cut at the right edge of a {width} px window: {cut}"
        shot = shots / f"{page.replace('/', '__')[:-5]}-{width}.png"
        height = driver.execute_script("return document.documentElement.scrollHeight;")
        driver.set_window_size(width, min(height, 12000))
        driver.save_screenshot(str(shot))
    for src in driver.execute_script(BROKEN_IMAGES):
        yield f"image does not load: {src}"
    for verdict in driver.execute_script(ADVICE_VERDICTS):
        if verdict != "HELD":
            yield f"advice given on a claim that came out {verdict}"
    if page.startswith(CHAPTERS) or page in MEASURED_PAGES:
        body = driver.execute_script("return document.body.innerText;")
        for line in disagreements(body):
            yield f"claim line disagrees with its medians: {line}"
        for sentence in unseparated_winners(body):
            yield f"a winner named without a separation from its runner-up: {sentence[:200]}"
        for ratio in unmatched_ratios(body):
            yield f"a ratio quoted that no check on the page printed: {ratio}"
        for effect in subjectless_effects(body):
            yield f"a speed-up quoted without its subject ('A was Nx faster than B'): {effect}"
    hrefs = driver.execute_script("return [...document.links].map((a) => a.href);")
    for href in sorted({h for h in hrefs if h.startswith(base)}):
        if problem := links.problem(href):
            yield problem


def in_view(driver, base: str, page: str) -> tuple[int, int]:
    """The words and tables a reader is asked to read on ``page`` (see :data:`IN_VIEW`)."""
    visit(driver, base + page)
    words, tables = driver.execute_script(IN_VIEW)
    return words, tables


@dataclasses.dataclass(frozen=True)
class ChapterText:
    """What the checks read of a chapter page, once: its short answer and the rest of the page
    as text ("" where it has no short answer), its variants, and the names its prose defines."""

    answer: str
    page: str
    names: list[str]
    defined: list[str]


def read_chapter(driver, site: Path, page: str) -> ChapterText:
    """The :class:`ChapterText` of the chapter page the driver has loaded (its variants from
    its results file: none where it has none)."""
    answer, text = driver.execute_script(SHORT_ANSWER_AND_PAGE) or ("", "")
    try:
        document = load(site / "measurements" / chapter(page.split("/")[1]).results)
        names = [m["variant"] for m in document["measurements"]]
    except (ResultsError, ValueError):
        names = []
    return ChapterText(answer, text, names, driver.execute_script(DEFINED_NAMES))


def check_chapter(
    driver, words: int, tables: int, answer: dict | None, chapter_text: ChapterText
) -> Iterator[str]:
    """A chapter a reader finishes in ten minutes, showing the TensorFlow code it compares
    before its recipes, ending with recipes to paste, each opening with whether this build
    advises it, whose short answer quotes the page's own figures and
    names only variants its prose defines (the page :func:`in_view` just loaded; ``answer``,
    the short answer the chapter published, if any)."""
    if words > WORD_BUDGET or tables > TABLE_BUDGET:
        yield (
            f"{words:,} words and {tables} tables in view, over the budget of "
            f"{WORD_BUDGET:,} words and {TABLE_BUDGET} tables"
        )
    if not driver.execute_script("return document.getElementById('recipes') !== null;"):
        yield "no Recipes section"
    if not driver.execute_script(TENSORFLOW_CODE_IN_VIEW):
        yield "no TensorFlow code in view before the Recipes section"
    if answer is not None:
        yield from recipe_problems(answer, driver.execute_script(RECIPE_STATUSES))
    read = chapter_text
    for figure in unbacked_figures(read.answer, read.page):
        yield f"the short answer quotes {figure}, which the page prints nowhere else"
    for name in undefined_names(read.answer, read.names, read.defined):
        yield f"the short answer names {name!r}, which the page's prose never defines"


@dataclasses.dataclass(frozen=True)
class PageReport:
    """What the checks found on one page; for a chapter, also its words and tables in view and
    what was read of it."""

    page: str
    problems: list[str]
    in_view: tuple[int, int] | None = None
    chapter: ChapterText | None = None


def check_one(driver, base: str, site: Path, page: str, links, shots, answers) -> PageReport:
    try:
        return _checked(driver, base, site, page, links, shots, answers)
    except NotLoaded as failure:
        return PageReport(page, [str(failure)])


def _checked(driver, base: str, site: Path, page: str, links, shots, answers) -> PageReport:
    problems = list(check_page(driver, base, page, links, shots))
    if not (page.startswith(CHAPTERS) and Path(page).name.startswith("plot_")):
        return PageReport(page, problems)
    words, tables = in_view(driver, base, page)
    read = read_chapter(driver, site, page)
    answer = answers.get(page.split("/")[1])
    problems += check_chapter(driver, words, tables, answer, read)
    return PageReport(page, problems, (words, tables), read)


def check_pages(base: str, site: Path, answers: dict, shots: Path) -> list[PageReport]:
    """Every page checked, in :data:`LANES` browsers at once (a page's layout and screenshots
    keep a core busy), reported in the pages' order."""
    every = pages(site)

    def lane(share: list[str]) -> list[PageReport]:
        links = LinkChecker(base)
        with opened_browser() as driver:
            return [check_one(driver, base, site, p, links, shots, answers) for p in share]

    with concurrent.futures.ThreadPoolExecutor(LANES) as pool:
        shares = pool.map(lane, [every[i::LANES] for i in range(LANES)])
        found = [report for share in shares for report in share]
    return sorted(found, key=lambda report: every.index(report.page))


def check_checklist(driver, base: str, chapters: dict[str, ChapterText]) -> Iterator[str]:
    """Every figure on a checklist line is a figure its chapter prints, and every variant it
    names its chapter's prose defines (``chapters``: what was read of each chapter page)."""
    visit(driver, base + "checklist.html")
    for page, line, measured in driver.execute_script(CHECKLIST_LINES):
        read = chapters.get(page, ChapterText("", "", [], []))
        for figure in unbacked_figures(measured, read.page):
            yield f"a line quotes {figure}, which {page} prints nowhere"
        for name in undefined_names(line, read.names, read.defined):
            yield f"a line names {name!r}, which {page} never defines"


def check_search(driver, base: str) -> Iterator[str]:
    visit(driver, f"{base}search.html?q={SEARCH_TERM}")
    deadline = time.monotonic() + 30
    found = None
    # Sphinx lists the hits one at a time; its heading says "Search Results" once all are in.
    while time.monotonic() < deadline and found is None:
        time.sleep(0.5)
        found = driver.execute_script(SEARCH_HITS)
    if not any(SEARCH_MUST_FIND in href for href in found or []):
        yield f"a search for {SEARCH_TERM!r} does not list {SEARCH_MUST_FIND}.html"


def found_on(page: str, problems: Iterator[str]) -> list[str]:
    """``problems`` of ``page``, each named with it; a page that did not load is one."""
    try:
        return [f"{page}: {p}" for p in problems]
    except NotLoaded as failure:
        return [f"{page}: {failure}"]


def check_figures(site: Path) -> Iterator[str]:
    """Each figure of the site with a label, title or legend cut at its edge (a gallery figure's
    high-resolution copy and thumbnail show the same figure)."""
    for path in sorted((site / "_images").glob("*.png")):
        if path.stem.endswith(("_2_00x", "_thumb")):
            continue
        pixels = matplotlib.image.imread(path)
        gray = 255 * pixels[..., :3].mean(axis=-1)
        if edges := cut_at_edges(gray):
            yield f"{path.name}: ink at its {' and '.join(edges)} edge (something cut off)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default="docs/_build/html", type=Path)
    parser.add_argument("--screenshots", type=Path, help="default: SITE/../site-check")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"site-check: no built site at {args.site}: build the docs first", file=sys.stderr)
        return 2
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    if missing:
        print(
            "site-check: Chromium is not installed: apt-get install chromium chromium-driver",
            file=sys.stderr,
        )
        return 2
    shots = args.screenshots or args.site.parent / "site-check"
    shots.mkdir(parents=True, exist_ok=True)
    answers = {c["topic"]: c for c in load_checklist(args.site / "answers")}
    problems = [f"advice contradicts advice: {p}" for p in contradictions(list(answers.values()))]
    problems += list(check_figures(args.site))
    server, base = serve(args.site)
    try:
        reports = check_pages(base, args.site, answers, shots)
        chapters = {r.page: r.chapter for r in reports if r.chapter}
        with opened_browser() as driver:
            problems += found_on("search.html", check_search(driver, base))
            problems += found_on("checklist.html", check_checklist(driver, base, chapters))
    finally:
        server.shutdown()
    problems = [f"{r.page}: {p}" for r in reports for p in r.problems] + problems
    print("\n".join(problems) or "site-check: no problems found")
    for r in reports:
        if r.in_view:
            print(f"site-check: {r.page}: {r.in_view[0]:,} words and {r.in_view[1]} tables in view")
    print(f"site-check: {len(reports)} pages checked, screenshots in {shots}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
