"""Sphinx configuration. The build runs every chapter: each number on the site is measured by it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parent
# sphinx-gallery only pickles callables named by an importable "module.function" string; this makes
# "conf.reset_keras" (defined below) importable. Importing it re-runs this file, which is harmless.
if str(DOCS) not in sys.path:
    sys.path.insert(0, str(DOCS))

# Keep the build log readable: hide TensorFlow's C++ INFO lines, keep its warnings. Set before
# TensorFlow is imported; the myst-nb kernels inherit it. An explicit setting wins (debugging).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

from docutils import nodes  # noqa: E402
from sphinx.util.docutils import SphinxDirective  # noqa: E402

import perfguide  # noqa: E402  (the installed package under documentation)
from perfguide.measure import calibration  # noqa: E402
from perfguide.measure.environment import quick_everywhere  # noqa: E402
from perfguide.measure.limits import SHARED_FILE_ENV  # noqa: E402
from perfguide.processes import build_state, recording  # noqa: E402
from perfguide.report.publishing.answers import ANSWERS_DIR_ENV  # noqa: E402
from perfguide.report.publishing.chapters import CHAPTERS, footer  # noqa: E402
from perfguide.report.publishing.results import MEASUREMENTS_DIR_ENV  # noqa: E402

# Chapters write their measurements here; html_extra_path copies them to <site>/measurements/.
# Created now because Sphinx checks html_extra_path while it reads this configuration.
EXTRA = DOCS / "_generated" / "extra"
(EXTRA / "measurements").mkdir(parents=True, exist_ok=True)
os.environ[MEASUREMENTS_DIR_ENV] = str(EXTRA / "measurements")
# The guide's source as this site is built from it, for readers who run it on their own machine
# (the "Run the guide on your machine" page links it).
SOURCE_ARCHIVE = EXTRA / "perfguide-source.zip"
try:
    subprocess.run(
        ["git", "archive", "--format=zip", "--prefix=perfguide/", f"--output={SOURCE_ARCHIVE}",
         "HEAD"],
        cwd=DOCS.parent, check=True, capture_output=True, text=True,
    )  # fmt: skip
except (OSError, subprocess.CalledProcessError) as error:
    reason = getattr(error, "stderr", "") or error
    raise RuntimeError(
        f"the site publishes its source from git; git archive failed: {reason}"
    ) from None
# The machine's limits, measured by the first page that needs them and read by the others.
os.environ[SHARED_FILE_ENV] = str(DOCS / "_generated" / "machine_limits.json")
# Chapters write their short answers here: each chapter page includes its own box and its
# recipes' status lines, the checklist page reads them all, and the site publishes them at
# <site>/answers/ for the site check, which holds each page's advice against every other's.
os.environ[ANSWERS_DIR_ENV] = str(EXTRA / "answers")
# What the build has alive between chapters, and a probe's times between them (PROBED below):
# the build-machine page shows them, and the site publishes them at <site>/build-state.json.
os.environ[build_state.BUILD_STATE_ENV] = str(EXTRA / "build-state.json")
# Each page's measurements, recorded in a file of its own as the build takes them. With
# PERFGUIDE_REPLAY=1 the build reads them back instead of measuring (`nox -s docs-quick` does so
# after a build): every page is rendered again in minutes, and every page says so.
RECORDED = DOCS / "_recorded"
BUILD_KIND = "quick" if quick_everywhere() else "full"
REPLAYED = recording.complete(RECORDED) if recording.replaying() else None
if recording.replaying():
    why_not = (
        "it holds none" if REPLAYED is None else recording.why_not_replayable(REPLAYED, BUILD_KIND)
    )
    if why_not:
        raise RuntimeError(
            f"cannot replay the measurements recorded in {RECORDED}: {why_not}; measure again "
            "(nox -s docs-quick -- --measure)"
        )

project = "perfguide"
author = "perfguide contributors"
copyright = "perfguide contributors"
release = version = perfguide.__version__

extensions = [
    "myst_nb",
    "sphinx_gallery.gen_gallery",
    "sphinx_design",
    "sphinx_copybutton",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx.ext.extlinks",
]

exclude_patterns = [
    "_build",
    "_generated",
    # sphinx-gallery's by-products beside its .rst pages. myst-nb registers .ipynb as a source
    # suffix and would otherwise try to build the gallery's download notebooks.
    "auto_examples/**.ipynb",
    "auto_examples/**.py",
    "auto_examples/**.zip",
    "auto_examples/**.md5",
    "auto_examples/**.pickle",
    "auto_examples/**.json",
    "**.ipynb_checkpoints",
]

# No network at build time, so no intersphinx; TensorFlow publishes no Sphinx inventory anyway.
extlinks = {"tfapi": ("https://www.tensorflow.org/api_docs/python/%s", "%s")}

# -- HTML --------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "TensorFlow performance guide"
html_theme_options = {
    "use_edit_page_button": False,
    "icon_links": [],
    "navbar_align": "left",
    "show_toc_level": 2,
}
if REPLAYED:
    html_theme_options["announcement"] = (
        f"A rendering for checking pages: every measurement replays the {REPLAYED['kind']} build "
        f"of {REPLAYED['measured_at']} (commit {REPLAYED['commit']}); only the recipes ran now."
    )
# The theme reads the colour mode from here before the reader picks one; unset, it logs
# "Got invalid theme mode" to the console.
html_context = {"default_mode": "auto"}
html_favicon = "_static/favicon.svg"
html_extra_path = [str(EXTRA.relative_to(DOCS))]
html_static_path = ["_static"]
html_css_files = ["perfguide.css"]  # verdict tints, aligned numbers, tables that scroll on phones
html_show_sourcelink = False
# Pages with no section of their own: no empty "Section Navigation" column beside them, so their
# wide tables get the room.
html_sidebars = {
    page: [] for page in ("api", "checklist", "environment", "machines", "your_machine")
}

# -- sphinx-gallery: one chapter per examples/<topic>/plot_<topic>.py --------------------------


def reset_keras(gallery_conf, fname):
    """Clear Keras' global state between examples (they all run in this one process)."""
    tf = sys.modules.get("tensorflow")  # never import TensorFlow just to reset it
    if tf is not None:
        tf.keras.backend.clear_session()


# Chapters in the order their questions build on each other (the package's table of chapters).
CHAPTER_ORDER = [c.topic for c in CHAPTERS]
# The order they run in: the reading order, or, with PERFGUIDE_RUN_ORDER=reversed, the reverse,
# an experiment on drift through a build (does a chapter's time follow its place in the build?).
RUN_ORDERS = {"reading": CHAPTER_ORDER, "reversed": CHAPTER_ORDER[::-1]}
RUN_ORDER_ENV = "PERFGUIDE_RUN_ORDER"
run_order_name = os.environ.get(RUN_ORDER_ENV) or "reading"
if run_order_name not in RUN_ORDERS:
    raise ValueError(f"{RUN_ORDER_ENV}={run_order_name!r}: choose one of {', '.join(RUN_ORDERS)}")
RUN_ORDER = RUN_ORDERS[run_order_name]
# Where the build times its probe (about 5 s each): before the first chapter, after every
# second one and after the last, so that every chapter judges its times on the host a probe
# found at most one chapter before it.
PROBED = {
    (RUN_ORDER[0], "before"),
    *((topic, "after") for topic in RUN_ORDER[1::2]),
    (RUN_ORDER[-1], "after"),
}


def record_build_state(topic, when):
    """Before the first chapter and after each, what the build has alive (see
    perfguide.processes.build_state), with the probe's times where PROBED says (recorded apart
    from the chapters'); the build fails where a chapter left a process or a port open."""
    if when == "before" and topic != RUN_ORDER[0]:
        return  # the state before a chapter is the one after the chapter before it
    probed = None
    if (topic, when) in PROBED:
        os.environ[recording.RECORDING_ENV] = str(RECORDED / "build-state.pickle")
        try:
            probed = build_state.probe()
        finally:
            del os.environ[recording.RECORDING_ENV]
    if probed:
        # The chapters after it judge their times on the host this probe found.
        os.environ[calibration.HOST_PROBE_ENV] = json.dumps(probed)
    entry = build_state.record(build_state.state_file(), topic, when, probed=probed)
    # Whatever a chapter leaves running runs beside every later chapter's measurements.
    if when == "after" and (left := build_state.left_behind(entry)):
        raise RuntimeError(f"{topic} left {left} alive after it ended")


def between_chapters(gallery_conf, fname, when):
    """Around each chapter: the build's state, and the chapter's own recording."""
    if fname is None:  # entering a folder of examples, not running one
        return
    topic = Path(fname).stem.removeprefix("plot_")
    if when == "after":
        recording.finish(os.environ.pop(recording.RECORDING_ENV))
    record_build_state(topic, when)
    if when == "before":
        os.environ[recording.RECORDING_ENV] = str(RECORDED / f"{topic}.pickle")


def chapter_order(path: str) -> int:
    """Where a chapter's script stands in the reading order (for the landing page's list)."""
    topic = Path(path).parent.name
    return CHAPTER_ORDER.index(topic) if topic in CHAPTER_ORDER else len(CHAPTER_ORDER)


sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "subsection_order": [f"../examples/{topic}" for topic in RUN_ORDER] + ["*"],
    "minigallery_sort_order": "conf.chapter_order",
    # One page per chapter in the navigation, no one-chapter section pages between them.
    "nested_sections": False,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,  # a chapter that cannot measure must fail the build
    "run_stale_examples": True,  # belt and braces with the clean build: always re-measure
    "capture_repr": ("_repr_html_", "__repr__"),
    "min_reported_time": 0,
    "write_computation_times": True,  # sg_execution_times is in a toctree; never skip it
    "remove_config_comments": True,
    "download_all_examples": True,
    "reset_modules": ("matplotlib", "conf.reset_keras", "conf.between_chapters"),
    "reset_modules_order": "both",
    "image_scrapers": ("matplotlib",),
    "image_srcset": ["2x"],  # sharp figures on hi-DPI screens
    # Which chapters use which perfguide objects: needed by the landing page's minigallery.
    "backreferences_dir": "_generated/backreferences",
    "doc_module": ("perfguide",),
}

# -- myst-nb: MyST notebooks (e.g. environment.md) are executed on every build ------------------
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 600
# Markdown that cells output (e.g. the environment table) is parsed as MyST, which has tables.
nb_render_markdown_format = "myst"
myst_enable_extensions = ["colon_fence", "dollarmath"]

# -- API reference -----------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# The page modules document constants that are instances of classes of
# perfguide.report.verdicts.claims.
# Followed to that module, viewcode would link its whole source page to the first page module
# that named one (anchors that do not exist): link each object's source where it is documented.
viewcode_follow_imported_members = False

copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True


# -- Run times page: sphinx-gallery's loads jQuery and DataTables from CDNs (this site must work
# offline) and has a memory column that is all zeros unless memory is measured: drop both. -----
_CDN_BLOCK = re.compile(r"  \.\. raw:: html\n\n(?:    .*\n|\n)*?(?=  \.\. list-table::)")


def _without_memory_column(text: str) -> str:
    """The page's list-table without its third column (each row: "* - example", "- time",
    "- memory")."""
    kept, item = [], 0
    for line in text.split("\n"):
        if line.startswith("   * - "):
            item = 1
        elif line.startswith("     - "):
            item += 1
            if item == 3:
                continue
        kept.append(line)
    return "\n".join(kept)


def offline_run_times(app, docname, source):
    if docname.endswith("sg_execution_times"):
        source[0] = _without_memory_column(_CDN_BLOCK.sub("", source[0]))


# -- Chapters: the guide's own calls run but stay out of view (sphinx-gallery's ignore markers).
# A code cell made only of them leaves an empty code block, which would show as an empty box. --
_EMPTY_CODE_BLOCK = re.compile(
    r"^\.\. code-block:: [Pp]ython\n(?:   :[\w-]+:.*\n)*\n(?=\n*(?:\S|\Z))", re.MULTILINE
)


def without_empty_code_blocks(app, docname, source):
    if docname.startswith("auto_examples/"):
        source[0] = _EMPTY_CODE_BLOCK.sub("", source[0])


# -- Chapters end with links to the questions before and after them, from the table of chapters
# (perfguide.report.publishing.chapters), placed before sphinx-gallery's download buttons. ----


def chapter_footer(app, docname, source):
    folder, topic, name = (docname.split("/") + ["", "", ""])[:3]
    if folder != "auto_examples" or name != f"plot_{topic}":
        return
    label = f".. _sphx_glr_download_auto_examples_{topic}_plot_{topic}.py:"
    if label not in source[0]:
        raise RuntimeError(f"{docname}: no {label!r} to put the chapter's footer before")
    source[0] = source[0].replace(label, f"{footer(topic)}\n\n{label}")


# -- Recipes: each opens with whether this build advises it. A recipe's section holds
# ``.. recipe-status::``, which includes the status line its chapter published for it
# (``<topic>.recipe.<section id>.html``, see perfguide.report.publishing.answers). -------------


class RecipeStatus(SphinxDirective):
    def run(self):
        topic = Path(self.env.docname).parent.name
        anchor = self.state.parent["ids"][0]
        path = EXTRA / "answers" / f"{topic}.recipe.{anchor}.html"
        if not path.is_file():
            raise self.error(f"no recipe status {path.name}: does a recommendation name #{anchor}?")
        self.env.note_dependency(str(path))
        status = path.read_text()
        if 'data-advised="false"' in status:
            # Its heading is the advice's words: said so in the heading too, and the contents.
            title = self.state.parent[0]
            title += nodes.Text(" (not advised in this build)")
        return [nodes.raw("", status, format="html")]


# -- Recordings: a build that measures starts a new one and marks it complete at its end; each
# notebook page records (or replays) into a file of its own, as each chapter does. -------------


#: What a measuring build's recordings are of, taken as it starts (the code can change under a
#: build that takes 20 minutes).
MEASURED_CODE = {}


def start_recording(app):
    if not REPLAYED:
        shutil.rmtree(RECORDED, ignore_errors=True)
        commit = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=DOCS.parent, capture_output=True,
            text=True, check=True,
        ).stdout.strip()  # fmt: skip
        MEASURED_CODE.update(commit=commit, measuring_code=recording.fingerprint())


def notebook_recording(app, docname, source):
    os.environ[recording.RECORDING_ENV] = str(RECORDED / f"{docname.replace('/', '.')}.pickle")


def mark_recording_complete(app, exception):
    os.environ.pop(recording.RECORDING_ENV, None)
    # -W fails a build for its warnings only after this event; Sphinx counts them here.
    failed = exception is not None or getattr(app, "_warncount", 0) > 0
    if not failed and not REPLAYED:
        about = {
            "kind": BUILD_KIND,
            "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            **MEASURED_CODE,
        }
        recording.mark_complete(RECORDED, about)


def setup(app):
    # Before sphinx-gallery's own handler, which runs the chapters.
    app.connect("builder-inited", start_recording, priority=100)
    app.connect("source-read", notebook_recording)
    app.connect("build-finished", mark_recording_complete)
    app.add_directive("recipe-status", RecipeStatus)
    app.connect("source-read", offline_run_times)
    app.connect("source-read", without_empty_code_blocks)
    app.connect("source-read", chapter_footer)
