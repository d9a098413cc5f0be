"""Where a docs build's minutes went: each page's recorded measurements, slowest first.

A build records every answer its pages' measuring processes gave, with the seconds it took
(:mod:`perfguide.processes.recording`), in ``docs/_recorded``. This prints, per page, the
seconds its measurements took in all, and its slowest answers: what to trim when a page, or the
build, runs over its budget.

    python tools/build_minutes.py docs/_recorded [--top 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfguide.processes.recording import Recording
from perfguide.report.format import format_seconds

#: How much of an answer's key (what was asked, often thousands of characters) is shown.
KEY_CHARS = 110


def page_answers(folder: Path) -> dict[str, list]:
    """Each page's recorded answers, by page name, from a recordings folder."""
    return {p.stem: Recording(p, replay=True).answers for p in sorted(folder.glob("*.pickle"))}


def report(pages: dict[str, list], top: int) -> str:
    """The pages, slowest first, each with its ``top`` slowest answers."""
    totals = {page: sum(a.seconds for a in answers) for page, answers in pages.items()}
    lines = [f"{format_seconds(sum(totals.values()))} measuring in {len(pages)} pages"]
    for page in sorted(totals, key=totals.get, reverse=True):
        lines.append(f"{format_seconds(totals[page]):>9}  {page}")
        for answer in sorted(pages[page], key=lambda a: a.seconds, reverse=True)[:top]:
            lines.append(f"{format_seconds(answer.seconds):>20}  {answer.key[:KEY_CHARS]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="build-minutes", description=__doc__.splitlines()[0])
    parser.add_argument("recorded", type=Path, help="a build's recordings (docs/_recorded)")
    parser.add_argument("--top", type=int, default=5, help="answers shown per page")
    args = parser.parse_args(argv)
    pages = page_answers(args.recorded) if args.recorded.is_dir() else {}
    if not pages:
        parser.exit(2, f"build-minutes: error: {args.recorded} holds no page's recording\n")
    print(report(pages, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
