"""Which of several ways is fastest, named only where the numbers separate it from the rest.

A "fastest", a "best" or a "worth most" is a claim like any other: the way with the smallest
median is named the winner only where the claim that it is faster than each other way
(:class:`~perfguide.report.claims.Faster`) held. The ways it did not separate itself from are
*tied* with it, and a page says so, with the ratio's rerun interval, instead of naming one.

>>> from perfguide.measure.timer import Measurement
>>> ms = [Measurement("litert", "call", 1, 1, 0.0, (1.5e-6,) * 3),
...       Measurement("onnx", "call", 1, 1, 0.0, (12e-6,) * 3),
...       Measurement("int8", "call", 1, 1, 0.0, (1.52e-6,) * 3)]
>>> ranking = rank(ms)
>>> ranking.tied, ranking.separated
(('litert', 'int8'), False)
>>> print(ranking.sentence())  # doctest: +ELLIPSIS
litert and int8 are tied here (litert against int8: 1.01x faster; rerun interval: ...)
>>> print(rank(ms[:2]).sentence(" on the tiny model"))  # doctest: +ELLIPSIS
litert was fastest on the tiny model, ...x to ...x ahead of the runner-up, onnx (... 8.00x ...)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from perfguide.measure.timer import Measurement
from perfguide.report.claims import Claim, Faster
from perfguide.report.compare import pick
from perfguide.report.format import RERUN, format_factor
from perfguide.report.ratios import in_common, ratio_interval

#: How a separated winner is worded, so that a built page can be checked for winners named
#: without a separation (:func:`perfguide.report.page_checks.unseparated_winners`).
AHEAD = "ahead of the runner-up"


@dataclasses.dataclass(frozen=True)
class Ranking:
    """Ways by median, fastest first (``order``), the claim that the fastest beats each other
    way (``versus``, in the same order from the runner-up on), and the ways tied with it."""

    order: tuple[str, ...]
    versus: tuple[Claim, ...]
    #: The runner-up's time over the winner's, and its rerun interval.
    margin: tuple[float, float, float]

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
    def separated(self) -> bool:
        """Whether the fastest way is faster than every other, as claims judge it."""
        return len(self.tied) == 1

    def sentence(self, where: str = "") -> str:
        """The winner ``where`` ("on the tiny model") with its margin over the runner-up, or the
        ways tied with the fastest, each with its evidence."""
        if len(self.order) == 1:
            return f"{self.leader} was the only way measured{where}"
        if self.separated:
            _, low, high = self.margin
            return (
                f"{self.leader} was fastest{where}, {format_factor(low)} to "
                f"{format_factor(high)} {AHEAD}, {self.order[1]} ("
                + self.versus[0].evidence.split(f"; {RERUN}")[0]
                + ")"
            )
        others = [
            f"{self.leader} against {label}: {_evidence_words(claim)}"
            for label, claim in zip(self.order[1:], self.versus, strict=True)
            if label in self.tied
        ]
        names = ", ".join(self.tied[:-1]) + f" and {self.tied[-1]}"
        return f"{names} are tied{where or ' here'} ({'; '.join(others)})"


def rank(measurements: Sequence[Measurement], labels: Sequence[str] = ()) -> Ranking:
    """The :class:`Ranking` of ``labels`` (all of ``measurements`` when empty) by median."""
    chosen = pick(measurements, *labels) if labels else list(measurements)
    order = tuple(m.label for m in sorted(chosen, key=lambda m: m.median_s))
    if len(order) < 2:
        return Ranking(order, (), (1.0, 1.0, 1.0))
    versus = tuple(Faster(order[0], other).check(measurements) for other in order[1:])
    fast, runner_up = pick(measurements, order[0], order[1])
    return Ranking(order, versus, ratio_interval(*in_common(runner_up, fast)))


def _evidence_words(claim: Claim) -> str:
    """A speed claim's effect and rerun interval, without its statement's restatement."""
    interval = claim.evidence.split(f"; {RERUN}: ")[1].split("; ")[0]
    return f"{claim.effect}; {RERUN}: {interval}"
