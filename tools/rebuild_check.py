"""Two builds of the site as reruns of each other: verdicts and medians that a rebuild moved.

    python tools/rebuild_check.py OLD_SITE NEW_SITE [NEWER_SITE ...]

Each later build against the first: its claims matched by chapter and statement (the verdicts
that changed, those between HELD and DID NOT HOLD apart), then its medians against the first
build's rerun intervals, as ``perfguide compare --reruns`` reads two results files. A site is a
built ``docs/_build/html``; its ``measurements/`` folder holds what it measured.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfguide.report.rebuilds import Rebuild, site_verdicts
from perfguide.report.results import ResultsError
from perfguide.report.side_by_side import SideBySide, Source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sites", nargs="+", type=Path, metavar="SITE")
    args = parser.parse_args(argv)
    if len(args.sites) < 2:
        parser.error("needs two built sites or more")
    try:
        verdicts = [site_verdicts(site) for site in args.sites]
        sources = [Source.load(site / "measurements") for site in args.sites]
    except (ValueError, ResultsError) as error:
        print(f"rebuild-check: error: {error}", file=sys.stderr)
        return 2
    for site, later in zip(args.sites[1:], verdicts[1:], strict=True):
        print(f"{site} against {args.sites[0]}:\n{Rebuild(verdicts[0], later)}\n")
    print("\n".join(SideBySide(sources).rerun_lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
