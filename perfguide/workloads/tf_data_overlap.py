"""Does a training step wait for its input pipeline? The pipeline timed alone, the step alone and
the two together, against what the machine's cores allow; and a loop's passes as recorded
batch by batch (:class:`Recording`).

Two things that each keep the cores busy cannot both run at full speed on the same cores: their
work, counted as CPU time, divided by the cores, is the least time they can take together
(:attr:`Overlap.floor`). One after the other is the most; the longer of the two alone is what
a perfect overlap would reach if the cores were free.
"""

from __future__ import annotations

import dataclasses
import statistics

from perfguide.measure.measurement import Measurement
from perfguide.report.format import format_seconds
from perfguide.report.tables.table import Table
from perfguide.report.verdicts.claims import Claim, per_process


def cpu_seconds(m: Measurement) -> float:
    """The CPU time of one unit of ``m``: its time times the cores its process kept busy."""
    if m.cores_busy is None:
        raise ValueError(f"{m.label}: no cores busy recorded")
    return m.median_s * m.cores_busy


@dataclasses.dataclass(frozen=True)
class Overlap:
    """A ``pipeline`` and a ``step`` timed alone, and ``together``, on ``cores`` cores.

    >>> def m(label, seconds, cores):
    ...     return Measurement(label, "batch", 1, 1, 0.0, (seconds,) * 5, cores_busy=cores)
    >>> o = Overlap(m("pipeline", 3.0, 1.5), m("step", 5.0, 1.8), m("together", 7.5, 1.9), 2)
    >>> o.one_after_other, o.perfect, o.floor
    (8.0, 5.0, 6.75)
    """

    pipeline: Measurement
    step: Measurement
    together: Measurement
    cores: int

    @property
    def one_after_other(self) -> float:
        return self.pipeline.median_s + self.step.median_s

    @property
    def perfect(self) -> float:
        """The longer of the two: together with nothing left to wait for."""
        return max(self.pipeline.median_s, self.step.median_s)

    @property
    def floor(self) -> float:
        """Their CPU time spread over every core: no overlap can finish sooner."""
        return (cpu_seconds(self.pipeline) + cpu_seconds(self.step)) / self.cores

    def table(self, caption: str) -> Table:
        measured = [
            [m.label, format_seconds(m.median_s), f"{m.cores_busy:.2f}"]
            for m in (self.pipeline, self.step, self.together)
        ]
        bounds = [
            ["one after the other", self.one_after_other],
            ["perfect overlap (the longer alone)", self.perfect],
            [f"their CPU time over {self.cores} cores", self.floor],
        ]
        rows = measured + [[name, format_seconds(s), ""] for name, s in bounds]
        return Table(caption, ["", f"time per {self.pipeline.unit}", "cores busy"], rows)

    def no_overlap_claim(self, what: str, factor: float = 0.9) -> Claim:
        """The claim that together takes at least ``factor`` of one after the other, judged on
        each process's ratio of its own medians (see
        :func:`~perfguide.report.verdicts.claims.per_process`)."""
        ratios = [
            t / (p + s)
            for p, s, t in zip(
                self.pipeline.process_median_s,
                self.step.process_median_s,
                self.together.process_median_s,
                strict=True,
            )
        ]
        return per_process(
            f"{self.together.label} takes at least {factor:.0%} of one after the other ({what})",
            ratios,
            factor,
            "the time of one after the other",
            f"{self.together.label} took",
        )


@dataclasses.dataclass(frozen=True)
class Recording:
    """One recorded pass of a training loop: its length and, per batch, when the loop asked for
    the batch, when it arrived and when its step ended (seconds from the pass's start).

    >>> r = Recording(10.0, ((0.0, 1.0, 4.0), (4.0, 4.5, 10.0)))
    >>> r.waiting_share, r.median_step_s
    (0.15, 4.25)
    """

    length_s: float
    events: tuple[tuple[float, float, float], ...]

    @property
    def waiting_share(self) -> float:
        """The share of the pass the loop spent waiting for input."""
        return sum(arrived - asked for asked, arrived, _ in self.events) / self.length_s

    @property
    def median_step_s(self) -> float:
        """How long a step took inside the loop (the median over the pass's batches)."""
        return statistics.median(ended - arrived for _, arrived, ended in self.events)


def typical(recordings: list[dict]) -> Recording:
    """The recording of median length among ``recordings`` (as the workers return them:
    ``{"pass_s": ..., "events": [...]}``)."""
    ordered = sorted(recordings, key=lambda r: r["pass_s"])
    middle = ordered[len(ordered) // 2]
    return Recording(middle["pass_s"], tuple(map(tuple, middle["events"])))
