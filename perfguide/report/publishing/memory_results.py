"""The memory chapter's results file: growth rates per call and a training step's peaks
(their tables are :mod:`perfguide.report.tables.memory`'s).

Shape of the file: ``{"environment": {...}, "growth": {experiment: {label: {"label", "rates",
"added", "resolution"}}}, "peaks": {policy: {...}}}``: each rate in bytes per call, one per
fresh process; each peak in bytes, per process and batch size.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfguide.measure.memory import Experiment, Growth, Peaks
from perfguide.report.publishing.results import read_json, write_atomically


def save(
    path: str | Path,
    environment: dict[str, Any],
    experiments: dict[str, Experiment],
    peaks: Mapping[str, Peaks] | None = None,
) -> None:
    """Publish every experiment's growth rates, and a training step's peaks, written whole."""
    growth = {
        name: {label: grown.to_dict() for label, grown in experiment.growth.items()}
        for name, experiment in experiments.items()
    }
    document = {"environment": environment, "growth": growth}
    document["peaks"] = {label: p.to_dict() for label, p in (peaks or {}).items()}
    write_atomically(Path(path), json.dumps(document, indent=1) + "\n")


def holds_growth(path: str | Path) -> bool:
    """Whether ``path`` is a file :func:`save` wrote (False for anything else, unread or not
    JSON: its reader says what is wrong with it)."""
    document = read_json(path)
    return isinstance(document, dict) and "growth" in document and "measurements" not in document


def load(path: str | Path) -> dict[str, dict[str, Growth]]:
    """The growth rates of a file :func:`save` wrote, per experiment and label."""
    document = json.loads(Path(path).read_text())
    return {
        name: {
            label: Growth(
                g["label"], tuple(g["rates"]), tuple(g["added"]), g.get("resolution", 0.0)
            )
            for label, g in rows.items()
        }
        for name, rows in document["growth"].items()
    }


def inside(
    published: Mapping[str, Mapping[str, Growth]], measured: Mapping[str, Experiment]
) -> tuple[int, int]:
    """How many of ``measured``'s rates fall inside the intervals ``published`` gave for the
    same experiment and label, of how many both have."""
    pairs = [
        (published[name][label], grown)
        for name, experiment in measured.items()
        for label, grown in experiment.growth.items()
        if label in published.get(name, {})
    ]
    return sum(low <= grown.rate <= high for p, grown in pairs for low, high in [p.interval]), len(
        pairs
    )
