"""Run every chapter as a reader downloads it: its script with ``python`` and its notebook with
nbclient, each alone in an empty folder of its own, quick
(``PERFGUIDE_QUICK=1``). A chapter passes when both exit cleanly and print at least one verdict,
and its notebook has no empty code cell.

    python tools/run_downloads.py [GALLERY] [--topic TOPIC ...]

GALLERY is the built gallery (default docs/auto_examples: the files the site offers for download).
Exit status: 0 all ran, 1 a chapter failed, 2 could not run (no built gallery).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from perfguide.report.publishing.chapters import CHAPTERS

VERDICT = re.compile(r"\b(HELD|DID NOT HOLD|INCONCLUSIVE)\b")
#: A chapter's budget, quick, as a reader's machine might take it.
TIMEOUT_S = 900
ROOT = Path(__file__).resolve().parent.parent
QUICK = os.environ | {"PERFGUIDE_QUICK": "1", "MPLBACKEND": "Agg"}


def folder_for(gallery: Path, topic: str) -> Path:
    """An empty folder holding the chapter's two downloads, its script and its notebook, and
    nothing else: each must run alone."""
    folder = Path(tempfile.mkdtemp(prefix=f"perfguide-download-{topic}-"))
    shutil.copy(gallery / topic / f"plot_{topic}.py", folder)
    shutil.copy(gallery / topic / f"plot_{topic}.ipynb", folder)
    return folder


def script_problems(folder: Path, topic: str) -> list[str]:
    command = [sys.executable, f"plot_{topic}.py"]
    try:
        done = subprocess.run(
            command, cwd=folder, env=QUICK, capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return [f"the script ran over {TIMEOUT_S} s"]
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        return [f"the script exited {done.returncode}: {last}"]
    return [] if VERDICT.search(done.stdout) else ["the script printed no verdict"]


def notebook_text(notebook: nbformat.NotebookNode) -> str:
    """What the executed notebook shows: its cells' printed and displayed text and HTML."""
    shown = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            shown.append(output.get("text", ""))
            data = output.get("data", {})
            shown += [data.get("text/plain", ""), data.get("text/html", "")]
    return "\n".join(shown)


def notebook_problems(folder: Path, topic: str) -> list[str]:
    notebook = nbformat.read(folder / f"plot_{topic}.ipynb", as_version=4)
    empty = sum(c.cell_type == "code" and not c.source.strip() for c in notebook.cells)
    problems = [f"the notebook has {empty} empty code cells"] * bool(empty)
    os.environ.update(QUICK)  # the kernel inherits it
    client = NotebookClient(notebook, timeout=TIMEOUT_S, resources={"metadata": {"path": folder}})
    try:
        client.execute()
    except CellExecutionError as error:
        return problems + [f"the notebook failed: {str(error).strip().splitlines()[-1]}"]
    if not VERDICT.search(notebook_text(notebook)):
        problems.append("the notebook showed no verdict")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gallery", nargs="?", default=ROOT / "docs" / "auto_examples", type=Path)
    parser.add_argument("--topic", action="append", choices=[c.topic for c in CHAPTERS])
    args = parser.parse_args(argv)
    topics = args.topic or [c.topic for c in CHAPTERS]
    missing = [t for t in topics if not (args.gallery / t / f"plot_{t}.ipynb").is_file()]
    if missing:
        print(f"run-downloads: no built gallery for {', '.join(missing)} in {args.gallery}")
        return 2
    failed = 0
    for topic in topics:
        started, folder = time.monotonic(), folder_for(args.gallery, topic)
        try:
            problems = script_problems(folder, topic) + notebook_problems(folder, topic)
        finally:
            shutil.rmtree(folder)
        took = f"{time.monotonic() - started:.0f} s"
        print(f"run-downloads: {topic}: " + ("; ".join(problems) or "ran") + f" ({took})")
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
