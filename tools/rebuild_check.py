"""Two builds of the site as reruns of each other: verdicts and medians that a rebuild moved.

    python tools/rebuild_check.py OLD_SITE NEW_SITE [NEWER_SITE ...]

Each later build against the first: its claims matched by chapter and statement (the verdicts
that changed, those between HELD and DID NOT HOLD apart), then its medians against the first
build's rerun intervals, as ``perfguide compare --reruns`` reads two results files (each
chapter's intervals judged on the host the first build's probe found before it, as that build
judged them); and how each
chapter's medians moved beside its place in each build's run (a build run with
``PERFGUIDE_RUN_ORDER=reversed`` tells a chapter's place from its drift). A site is a built
``docs/_build/html``; its ``measurements/`` folder holds what it measured, its
``build-state.json`` the order its chapters ran in.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from perfguide.measure.calibration import HOST_PROBE_ENV
from perfguide.report.publishing import memory_results, results
from perfguide.report.publishing.results import ResultsError
from perfguide.report.verdicts.compare_files import SideBySide, Source
from perfguide.report.verdicts.rebuilds import (
    Rebuild,
    chapter_shifts,
    place_correlation,
    site_verdicts,
)


def coverage(sites: list[Path]) -> list[str]:
    """Each later build's medians inside the first's intervals, chapter by chapter, each
    chapter's on the host its results file says it was judged on (a chapter a later build
    lacks is left out of that build's count)."""
    counted: dict[str, list] = {}
    saved = os.environ.pop(HOST_PROBE_ENV, None)
    try:
        for file in sorted((sites[0] / "measurements").glob("*.json")):
            if memory_results.holds_growth(file):
                continue
            seen = results.load_results(file)[0].get("calibration", {}).get("host_seen")
            os.environ.pop(HOST_PROBE_ENV, None)
            if seen:
                os.environ[HOST_PROBE_ENV] = json.dumps(seen)
            found = [site for site in sites[1:] if (site / "measurements" / file.name).is_file()]
            chapter = [
                Source.load(site / "measurements" / file.name) for site in [sites[0], *found]
            ]
            for site, reruns in zip(found, SideBySide(chapter).reruns(), strict=True):
                if reruns.half_widths:
                    counted.setdefault(str(site), []).append(reruns)
    finally:
        os.environ.pop(HOST_PROBE_ENV, None)
        if saved is not None:
            os.environ[HOST_PROBE_ENV] = saved
    lines = []
    for site, parts in counted.items():
        n, inside = sum(len(p.half_widths) for p in parts), sum(p.inside for p in parts)
        half = statistics.median(h for p in parts for h in p.half_widths)
        lines.append(
            f"{site} in {sites[0]}: {inside} of {n} medians inside ({inside / n:.1%}), "
            f"median half-width {half:.0%}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sites", nargs="+", type=Path, metavar="SITE")
    args = parser.parse_args(argv)
    if len(args.sites) < 2:
        parser.error("needs two built sites or more")
    try:
        verdicts = [site_verdicts(site) for site in args.sites]
        sources = [Source.load(site / "measurements") for site in args.sites]
        shifts = [chapter_shifts(args.sites[0], site) for site in args.sites[1:]]
        on_hosts = coverage(args.sites)
    except (ValueError, ResultsError) as error:
        print(f"rebuild-check: error: {error}", file=sys.stderr)
        return 2
    for site, later, moved in zip(args.sites[1:], verdicts[1:], shifts, strict=True):
        print(f"{site} against {args.sites[0]}:\n{Rebuild(verdicts[0], later)}")
        print("Each chapter's medians, and its place in each build's run:")
        print("\n".join(map(str, moved)))
        print(f"{place_correlation(moved)}\n")
    print("\n".join(SideBySide(sources).rerun_lines()))
    print("On each chapter's host:\n" + "\n".join(on_hosts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
