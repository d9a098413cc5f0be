"""Memory as a reader gets it in tables: growth rates per call with where the next process's rate
should land, and a training step's peaks (the memory chapter's, and ``perfguide run memory``'s).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from perfguide.measure.memory import Growth, Peaks
from perfguide.report.format import NEXT_PROCESS, format_bytes
from perfguide.report.tables.table import Table


def growth_table(
    title: str,
    growth: Mapping[str, Growth],
    described: Mapping[str, str] | None = None,
    traces: Mapping[str, int | None] | None = None,
    objects: Mapping[str, float] | None = None,
) -> Table:
    """One row per label: its median growth per call, where the next process's rate should
    land, and the most any process held after its calls; with ``described``, the code each
    label stands for; with ``traces``, the graphs each traced; with ``objects``, the Python
    objects each left behind per call."""

    def row(label: str) -> list[str]:
        grown = growth[label]
        low, high = grown.interval
        cells = [
            label,
            format_bytes(grown.rate),
            f"{format_bytes(low)} to {format_bytes(high)}",
            format_bytes(max(grown.added)),
        ]
        if traces is not None:
            cells.append("" if traces[label] is None else str(traces[label]))
        if objects is not None:
            cells.append(f"{objects[label]:.3g}")
        return cells + ([described[label]] if described else [])

    header = ["", "grows a call", NEXT_PROCESS, "held, at most"]
    header += ["traces"] if traces is not None else []
    header += ["objects left a call"] if objects is not None else []
    header += ["as written"] if described else []
    return Table(title, header, [row(label) for label in growth])


def calls_to_fill(growth: Mapping[str, Growth], total: float, at_least: float) -> list[str]:
    """For each label growing by ``at_least`` bytes a call or more, how many calls at its rate
    hold ``total`` bytes (a machine's memory, say).

    >>> calls_to_fill({"predict": Growth("predict", (2e4,), (0.0,))}, 2e10, at_least=1e3)
    ['predict: 20.0 kB a call fills 20.0 GB in 1,000,000 calls']
    """
    return [
        f"{label}: {format_bytes(grown.rate)} a call fills {format_bytes(total)} in "
        f"{total / grown.rate:,.0f} calls"
        for label, grown in growth.items()
        if grown.rate >= at_least
    ]


def peak_table(title: str, peaks: Mapping[str, Peaks]) -> Table:
    """One row per policy and batch size: the activations from the model's shapes, and the
    medians over the processes of what the forward pass kept, of the tensors at the step's peak
    and of the process's peak resident set beyond what it held before training."""
    header = ["policy", "batch", "activations (shapes)", "kept for backward", "tensors at peak"]
    rows = [
        [label, str(batch), format_bytes(p.activations * batch)]
        + [format_bytes(p.at(kind)[i]) for kind in ("kept", "tensors", "resident")]
        for label, p in peaks.items()
        for i, batch in enumerate(p.batches)
    ]
    return Table(title, [*header, "process, at peak"], rows)


def per_example(p: Peaks, kind: str) -> str:
    """The bytes an example of a batch costs by ``p``'s peaks of ``kind`` (the median of the
    processes' slopes), with where the next process's should land."""
    low, high = p.interval(kind)
    median = statistics.median(p.per_example(kind))
    return f"{format_bytes(median)} ({format_bytes(low)} to {format_bytes(high)})"


def per_example_table(title: str, peaks: Mapping[str, Peaks], available: float) -> Table:
    """One row per policy: the bytes each example of a batch costs (the activations from the
    shapes; the slopes of what was kept, of the tensors' peak and of the process's, with where
    the next process's should land) and the largest batch that fits in ``available`` bytes."""
    header = ["policy", "activations", "kept", f"tensors at peak ({NEXT_PROCESS})"]
    header += [f"process at peak ({NEXT_PROCESS})", f"largest batch in {format_bytes(available)}"]
    rows = [
        [label, format_bytes(p.activations), format_bytes(statistics.median(p.per_example("kept")))]
        + [per_example(p, "tensors"), per_example(p, "resident")]
        + [f"{p.largest_batch(available):,}"]
        for label, p in peaks.items()
    ]
    return Table(title, header, rows)


def layer_table(title: str, peaks: Mapping[str, Peaks]) -> Table:
    """One row per layer: for each policy, its output for one example from its shape, and what
    its forward pass kept for the backward pass, per example."""
    names = list(next(iter(peaks.values())).layers)
    header = ["layer"] + [f"{label} {what}" for label in peaks for what in ("output", "kept")]
    rows = [
        [name]
        + [
            format_bytes(p.layers[name][what])
            for p in peaks.values()
            for what in ("output", "kept")
        ]
        for name in names
    ]
    return Table(title, header, rows)
