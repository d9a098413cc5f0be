"""What a docs build has alive between its chapters, and how fast a fixed probe runs through it.

sphinx-gallery runs the chapters one after another in the build's own process. A chapter's
workers are fresh processes, but anything a chapter leaves behind (a child process, a server's
threads or ports, work still running) runs beside every later chapter's measurements. So between
chapters the build records what its process and its children hold (:func:`alive`): the child
processes, the threads, the TCP ports, the resident memory, and how busy they keep the cores
while nothing is measured. Before the first chapter, after every second one and after the last,
it also times the noise floor's probes in one fresh process (:func:`probe`): a probe that slows
over the build shows drift that comes from the build's own state, not from a chapter's code,
and each chapter judges its times on the host the last probe before it found
(:attr:`~perfguide.measure.calibration.Calibration.host_excess`).

The records go to one JSON file (:func:`record`, the path in ``$PERFGUIDE_BUILD_STATE``), a
list of ``{"chapter", "when", "at", "steal_s", "cores", "alive": {...}, "probe": {label: seconds} |
None}``: ``steal_s`` is the machine's steal so far (the time a hypervisor gave its cores to
other guests), so that two records tell how much of the time between them the host took.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import psutil

from perfguide.measure.calibration import Calibration
from perfguide.processes.noise import time_probes
from perfguide.processes.pool import Workers
from perfguide.report.format import (
    format_bytes,
    format_percent,
    format_seconds,
    format_speedup,
)
from perfguide.report.publishing.chapters import chapter
from perfguide.report.publishing.results import read_json, write_atomically
from perfguide.report.tables.table import Table

#: The environment variable that names the build's state file.
BUILD_STATE_ENV = "PERFGUIDE_BUILD_STATE"
#: Seconds over which the build's processes' CPU use is read while nothing is measured.
IDLE_WINDOW_S = 0.5


def _family(process: psutil.Process) -> list[psutil.Process]:
    return [process, *process.children(recursive=True)]


def _busy_cores(family: list[psutil.Process], window_s: float) -> float:
    """Cores the processes of ``family`` kept busy, on average, over ``window_s``."""

    def cpu_s() -> float:
        total = 0.0
        for member in family:
            try:
                times = member.cpu_times()
            except psutil.Error:  # it ended meanwhile
                continue
            total += times.user + times.system
        return total

    before = cpu_s()
    time.sleep(window_s)
    return (cpu_s() - before) / window_s


def alive(process: psutil.Process | None = None, window_s: float = IDLE_WINDOW_S) -> dict:
    """What ``process`` (default: this one) and its children hold now: the children (name and
    pid), the threads of all of them, the TCP ports they have open, this process's resident
    memory, and the cores they keep busy over ``window_s``."""
    process = process or psutil.Process()
    family = _family(process)
    ports, threads = set(), 0
    for member in family:
        try:
            threads += member.num_threads()
            ports.update(c.laddr.port for c in member.net_connections("tcp") if c.laddr)
        except psutil.Error:
            continue
    return {
        "children": [f"{child.name()} ({child.pid})" for child in family[1:]],
        "threads": threads,
        "ports": sorted(ports),
        "rss_bytes": process.memory_info().rss,
        "busy_cores": _busy_cores(family, window_s),
    }


def probe(quick: bool = True) -> dict[str, float]:
    """The noise floor's probes timed in one fresh process: each one's median, by
    "workload variant"."""
    with Workers(1) as workers:
        return {f"{m.workload} {m.label}": m.median_s for m in time_probes(workers, quick)}


def load(path: str | Path) -> list[dict[str, Any]]:
    """The records of a build's state file (none if it has none yet)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.is_file() else []


def holds_state(path: str | Path) -> bool:
    """Whether ``path`` is a build's state file (False for anything else, unread or not JSON:
    its reader says what is wrong with it)."""
    document = read_json(path)
    return isinstance(document, list) and all(
        isinstance(entry, dict) and "probe" in entry for entry in document
    )


def probes(records: list[dict[str, Any]]) -> list[dict[str, float]]:
    """Every time the build timed the probe: its seconds by probe, in order."""
    return [entry["probe"] for entry in records if entry["probe"]]


def record(
    path: str | Path, chapter: str, when: str, *, probed: dict[str, float] | None = None
) -> dict[str, Any]:
    """Add what is alive now (and ``probed``, a :func:`probe`'s times) to the state file at
    ``path``, as seen ``when`` ("before" or "after") ``chapter``; returns the record."""
    entry = {
        "chapter": chapter,
        "when": when,
        "at": time.time(),
        "steal_s": psutil.cpu_times().steal,
        "cores": psutil.cpu_count(),
        "alive": alive(),
        "probe": probed,
    }
    write_atomically(Path(path), json.dumps([*load(path), entry], indent=1))
    return entry


def left_behind(entry: dict[str, Any]) -> str:
    """What a record found alive that no chapter should leave running for the next: child
    processes and open TCP ports, in words ("" if none).

    >>> left_behind({"alive": {"children": ["python3 (41)"], "ports": [5000]}})
    'child processes python3 (41); TCP ports 5000'
    """
    held = entry["alive"]
    found = [
        f"{what} {', '.join(map(str, held[key]))}"
        for what, key in (("child processes", "children"), ("TCP ports", "ports"))
        if held[key]
    ]
    return "; ".join(found)


def state_file() -> Path | None:
    """The build's state file, if this process runs in a build that records one."""
    value = os.environ.get(BUILD_STATE_ENV)
    return Path(value) if value else None


def _point(entry: dict[str, Any]) -> str:
    """A record's point in the build, as a reader knows it: "after Why is my loop slow?"."""
    return f"{entry['when']} {chapter(entry['chapter']).title}"


def stolen_share(before: dict[str, Any], after: dict[str, Any]) -> float:
    """The share of the machine's core time the hypervisor gave to other guests (steal) between
    two records: time a build on a shared host loses, whatever it runs."""
    return (after["steal_s"] - before["steal_s"]) / ((after["at"] - before["at"]) * after["cores"])


def alive_table(records: list[dict[str, Any]]) -> Table:
    """What the build had alive at each record: before the first chapter, after each; and the
    steal since the record before."""
    rows = []
    for previous, entry in zip([None, *records[:-1]], records, strict=True):
        held = entry["alive"]
        stolen = format_percent(stolen_share(previous, entry)) if previous else ""
        rows.append(
            [
                _point(entry),
                ", ".join(held["children"]) or "none",
                str(held["threads"]),
                ", ".join(map(str, held["ports"])) or "none",
                format_bytes(held["rss_bytes"]),
                f"{held['busy_cores']:.2f}",
                stolen,
            ]
        )
    return Table(
        "What the build's process and its children held between chapters",
        [
            "when",
            "child processes",
            "threads",
            "TCP ports",
            "build's memory",
            "cores busy",
            "steal since the row above",
        ],
        rows,
    )


def probe_table(records: list[dict[str, Any]], calibrated: Calibration | None = None) -> Table:
    """A row for each point of the build that timed the probe: its times, and, with a
    ``calibrated`` host, that host against the one it was fitted on and how much further the
    times measured next drift there; a last row sets the last point against the first."""
    probed = [entry for entry in records if entry["probe"]]
    labels = list(probed[0]["probe"]) if probed else []
    hosted = calibrated is not None and bool(calibrated.host_probe)
    header = ["when", *labels]
    if hosted:
        header += ["host against the calibrated one", "times' drift added"]
    rows = []
    for entry in probed:
        row = [_point(entry), *(format_seconds(entry["probe"][label]) for label in labels)]
        if hosted:
            seen = dataclasses.replace(calibrated, host_seen=entry["probe"])
            row += [format_speedup(1 / seen.host_factor), format_percent(seen.host_excess)]
        rows.append(row)
    if len(probed) > 1:
        first, last = probed[0]["probe"], probed[-1]["probe"]
        rows.append(
            ["last against first", *(format_speedup(first[k] / last[k]) for k in labels)]
            + ["", ""] * hosted
        )
    return Table("The probe, each time in one fresh process, through the build", header, rows)
