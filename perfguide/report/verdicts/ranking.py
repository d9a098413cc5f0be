"""Which of several ways is fastest, named only where the numbers separate it from the rest.

A "fastest", a "best" or a "worth most" is a claim like any other: the way with the smallest
median is named the winner only where the claim that it is faster than each other way
(:class:`~perfguide.report.verdicts.claims.Faster`) held. The ways it did not separate itself
from are *tied* with it, and a page says so, with the ratio's rerun interval, instead of naming one.

>>> from perfguide.measure.measurement import Measurement
>>> ms = [Measurement("litert", "call", 1, 1, 0.0, (1.5e-6,) * 3),
...       Measurement("onnx", "call", 1, 1, 0.0, (12e-6,) * 3),
...       Measurement("int8", "call", 1, 1, 0.0, (1.52e-6,) * 3)]
>>> ranking = rank(ms)
>>> ranking.tied, ranking.separated
(('litert', 'int8'), False)
>>> print(ranking.sentence())
litert and int8 are tied here (litert was 1.01x faster than int8, rerun interval: 1.07x \
slower to 1.09x faster)
>>> print(ranking.sentence(evidence=False))
litert and int8 are tied here
>>> print(rank(ms[:2]).sentence(" on the tiny model"))
litert was fastest on the tiny model, 7.41x to 8.64x ahead of the runner-up, onnx (litert is \
8.00x faster than onnx: 1.50 µs vs 12.0 µs per call in one process)
>>> print(rank(ms[:2]).sentence(" on the tiny model", evidence=False))
litert was fastest on the tiny model, 7.41x to 8.64x ahead of the runner-up, onnx
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

from perfguide.measure.measurement import Measurement, pick
from perfguide.report.format import (
    RERUN,
    compared,
    format_factor,
    speedup_interval,
)
from perfguide.report.verdicts.claims import Claim, Faster, versus_words
from perfguide.report.verdicts.ratios import in_common, ratio_interval

#: How a separated winner is worded, so that a built page can be checked for winners named
#: without a separation (:func:`perfguide.report.publishing.page_checks.unseparated_winners`).
AHEAD = "ahead of the runner-up"


class Gap(NamedTuple):
    """Another way against the fastest, as the processes that timed both saw them."""

    #: The other way.
    label: str
    #: Its median over the fastest's (the fastest's speed-up over it), and where that ratio
    #: lands in a rerun here (:func:`~perfguide.report.verdicts.ratios.ratio_interval`).
    ratio: float
    low: float
    high: float
    #: The fastest's speed-up over it with both medians, as a claim's evidence words them.
    words: str

    def stated(self, fastest: str) -> str:
        """The ``fastest`` way's speed-up over this way with its rerun interval, e.g. "a was
        1.01x faster than b, rerun interval: 1.07x slower to 1.09x faster"."""
        interval = speedup_interval(self.low, self.high)
        return f"{compared(fastest, self.ratio, self.label)}, {RERUN}: {interval}"


@dataclasses.dataclass(frozen=True)
class Ranking:
    """Ways by median, fastest first (``order``), the claim that the fastest beats each other
    way (``versus``, in the same order from the runner-up on) and the numbers those claims
    were judged on (``gaps``, in that order too), and the ways tied with the fastest."""

    order: tuple[str, ...]
    versus: tuple[Claim, ...]
    gaps: tuple[Gap, ...]
    #: What the times are per ("call", "step", "request").
    unit: str

    @property
    def leader(self) -> str:
        return self.order[0]

    @property
    def tied(self) -> tuple[str, ...]:
        """The fastest way and every way whose "slower than it" did not hold, by median."""
        return (self.leader,) + tuple(
            label
            for label, claim in zip(self.order[1:], self.versus, strict=True)
            if claim.held is not True
        )

    @property
    def spread_wide(self) -> tuple[str, ...]:
        """Ways tied with the fastest though slower than a way that is not: their intervals are
        too wide to separate them, not their medians too close."""
        held = [claim.held is True for claim in self.versus]
        first = held.index(True) + 1 if True in held else len(self.order)
        return tuple(label for label in self.tied if self.order.index(label) > first)

    @property
    def separated(self) -> bool:
        """Whether the fastest way is faster than every other, as claims judge it."""
        return len(self.tied) == 1

    def sentence(self, where: str = "", evidence: bool = True) -> str:
        """The winner ``where`` ("on the tiny model") with its margin over the runner-up, or the
        ways tied with the fastest; with ``evidence``, the winner's speed-up and both medians,
        or the fastest's speed-up over each way tied with it and its rerun interval."""
        if len(self.order) == 1:
            return f"{self.leader} was the only way measured{where}"
        if self.separated:
            runner_up = self.gaps[0]
            named = (
                f"{self.leader} was fastest{where}, {format_factor(runner_up.low)} to "
                f"{format_factor(runner_up.high)} {AHEAD}, {runner_up.label}"
            )
            return f"{named} ({runner_up.words})" if evidence else named
        names = ", ".join(self.tied[:-1]) + f" and {self.tied[-1]}"
        named = f"{names} are tied{where or ' here'}"
        if self.spread_wide:
            many = len(self.spread_wide) > 1
            named += (
                f"; {' and '.join(self.spread_wide)} {'are' if many else 'is'} among them only "
                f"because {'their' if many else 'its'} times spread widely"
            )
        if not evidence:
            return named
        each = "; ".join(gap.stated(self.leader) for gap in self.gaps if gap.label in self.tied)
        return f"{named} ({each})"


def rank(measurements: Sequence[Measurement], labels: Sequence[str] = ()) -> Ranking:
    """The :class:`Ranking` of ``labels`` (all of ``measurements`` when empty) by median."""
    chosen = pick(measurements, *labels) if labels else list(measurements)
    ordered = sorted(chosen, key=lambda m: m.median_s)
    order = tuple(m.label for m in ordered)
    versus = tuple(Faster(order[0], other).check(measurements) for other in order[1:])
    return Ranking(
        order,
        versus,
        tuple(_gap(ordered[0], m, measurements) for m in ordered[1:]),
        ordered[0].unit,
    )


def _gap(fastest: Measurement, other: Measurement, measurements: Sequence[Measurement]) -> Gap:
    """``other`` against ``fastest``, as the processes that timed both saw them (as
    :meth:`~perfguide.report.verdicts.claims.Faster.check` judges them)."""
    fast, slow = in_common(fastest, other)
    ratio, low, high = ratio_interval(slow, fast)
    return Gap(other.label, ratio, low, high, versus_words(fast, slow, ratio, measurements))
