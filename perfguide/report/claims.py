"""Claims a chapter makes, checked against the numbers the same build just measured.

A chapter never asserts "X is faster" in prose; it states a claim whose outcome is computed, and
shows a :class:`ClaimReport`, which says plainly when a claim did not hold here.

A speed claim (:class:`Faster`) is judged on the ratio of the two variants' times and its 95 %
bootstrap interval, the way asv judges a change: by the size of the effect and by how sure it
is. Variants timed by the same fresh processes, taking turns, are compared process by process:
the ratio is the median of each process's own ratio, and the interval resamples processes, then
blocks (:func:`perfguide.measure.stats.ratio_interval`), so it carries the spread between
processes, not just between blocks. A ratio within :data:`TOLERANCE` of the claimed factor is
too close to call (**inconclusive** on any run). Beyond it, the claim **held** when the whole
interval lies above the factor, **did not hold** when it lies below, and is **inconclusive**
when the interval straddles the factor. The resampling is seeded, so the same blocks always give
the same verdict.

>>> from perfguide.measure.timer import Measurement
>>> ms = [Measurement("numpy", "iteration", 1, 1, 0.0, (2e-5,) * 5),
...       Measurement("xla-loop", "iteration", 1, 1, 0.0, (2e-6,) * 5)]
>>> claim = faster(ms, "xla-loop", "numpy", by=5)
>>> claim.verdict, claim.effect
('HELD', '10.0x faster')
>>> print(ClaimReport([claim, faster(ms, "numpy", "xla-loop")]))  # doctest: +ELLIPSIS
HELD          xla-loop is at least 5x faster than numpy (xla-loop is 10.0x faster than numpy: ...)
DID NOT HOLD  numpy is faster than xla-loop (numpy is 10.0x slower than xla-loop: ...)
"""

from __future__ import annotations

import dataclasses
import html
import re
import statistics
from collections.abc import Sequence

from perfguide.measure import stats
from perfguide.measure.timer import Measurement
from perfguide.report.compare import pick
from perfguide.report.format import (
    format_factor,
    format_seconds,
    format_speedup,
    three_figures,
)

#: A ratio this close to a claimed factor is too close to call (asv's default factor for a
#: change, 1.1). Some ratios move about as much between builds, so a verdict whose ratio lies
#: near the edge of this band can differ from one build to the next.
TOLERANCE = 0.10
VERDICTS = {True: "HELD", False: "DID NOT HOLD", None: "INCONCLUSIVE"}


@dataclasses.dataclass(frozen=True)
class Claim:
    """A statement, whether it held in this run (None: the measurements cannot tell), the
    measured evidence, the effect in a few words and, where the statement asks for more than
    a direction, what it asked for (for short answers and the checklist, where a "2.5x faster"
    that did not hold needs its "at least 3x faster" beside it)."""

    statement: str
    held: bool | None
    evidence: str
    effect: str = ""
    target: str = ""

    @property
    def verdict(self) -> str:
        return VERDICTS[self.held]

    @property
    def anchor(self) -> str:
        """An HTML id for this claim's row, made from its statement.

        >>> Claim("xla-loop is faster than numpy", True, "").anchor
        'claim-xla-loop-is-faster-than-numpy'
        """
        return "claim-" + re.sub(r"[^a-z0-9]+", "-", self.statement.lower()).strip("-")

    def on(self, what: str) -> Claim:
        """The same claim, stated for ``what``: a claim checked on several workloads needs a
        statement (and an anchor) of its own on each.

        >>> Claim("bfloat16 is faster than float32", True, "").on("a product").statement
        'bfloat16 is faster than float32 (a product)'
        """
        return dataclasses.replace(self, statement=f"{self.statement} ({what})")


def paired(a: Measurement, b: Measurement) -> bool:
    """Whether ``a`` and ``b`` were timed by the same processes, taking turns, so they compare
    process by process (two measurements from this process's one run are paired too)."""
    return a.process_ids == b.process_ids and a.processes == b.processes


def ratio_interval(slow: Measurement, fast: Measurement) -> tuple[float, float, float]:
    """``slow``'s time over ``fast``'s (the speed-up of ``fast``) and its
    :data:`~perfguide.measure.stats.CONFIDENCE` bootstrap interval, over processes and then
    blocks (see :func:`perfguide.measure.stats.ratio_interval`)."""
    return stats.ratio_interval(slow.by_process, fast.by_process, paired=paired(slow, fast))


@dataclasses.dataclass(frozen=True)
class Faster:
    """The claim that variant ``fast`` takes at most 1/``by`` of the time of ``slow``.

    ``by`` below 1 claims that ``fast`` takes at most ``1/by`` times as long ("keeps up").
    ``tolerance`` is how close to ``by`` a ratio is too close to call (:data:`TOLERANCE` unless
    a caller knows its ratios move by more). Pass it to :func:`~perfguide.measure.runner.run` as
    ``settle=`` to let the run add blocks until it is decided, then :meth:`check` it against
    the measurements.
    """

    fast: str
    slow: str
    by: float = 1.0
    tolerance: float = TOLERANCE

    @property
    def labels(self) -> tuple[str, str]:
        return self.fast, self.slow

    @property
    def target(self) -> str:
        """What the claim asks for beyond "faster": "at least 5x faster", "at most 2x the time"."""
        if self.by > 1:
            return f"at least {self.by:g}x faster"
        if self.by < 1:
            return f"at most {1 / self.by:g}x the time"
        return ""

    @property
    def statement(self) -> str:
        if self.by == 1:
            return f"{self.fast} is faster than {self.slow}"
        if self.by > 1:
            return f"{self.fast} is {self.target} than {self.slow}"
        return f"{self.fast} takes {self.target} of {self.slow}"

    def _judge(self, ratio: float, low: float, high: float) -> tuple[bool | None, str]:
        """The verdict on a measured ratio and its interval and, when inconclusive, why."""
        margin = 1 + self.tolerance
        if self.by / margin < ratio < self.by * margin:
            return None, f"within {self.tolerance:.0%} of the claimed factor, too close to call"
        if low >= self.by:
            return True, ""
        if high <= self.by:
            return False, ""
        return None, "the interval straddles the claimed factor"

    def settled(self, measurements: Sequence[Measurement]) -> bool:
        """Whether more blocks cannot change the verdict: it is decided, or the ratio is too close
        to the factor for any run to decide."""
        fast, slow = pick(measurements, self.fast, self.slow)
        held, reason = self._judge(*ratio_interval(slow, fast))
        return held is not None or "too close" in reason

    def check(self, measurements: Sequence[Measurement]) -> Claim:
        """The claim, judged on ``measurements``: the ratio of the two variants' times (process by
        process where the same processes timed both), with its interval."""
        fast, slow = pick(measurements, self.fast, self.slow)
        return self._claim(fast, slow, *ratio_interval(slow, fast))

    def _claim(
        self, fast: Measurement, slow: Measurement, ratio: float, low: float, high: float
    ) -> Claim:
        """The checked claim on ``fast`` and ``slow``, which gave ``ratio`` within ``low`` and
        ``high``."""
        if fast.unit != slow.unit:
            raise ValueError(f"cannot compare time per {fast.unit} with time per {slow.unit}")
        held, reason = self._judge(ratio, low, high)
        processes = min(fast.processes, slow.processes)
        over = f" over {processes} processes" if processes > 1 else ""
        effect = format_speedup(ratio)
        evidence = (
            f"{self.fast} is {effect} than {self.slow}".replace("as fast than", "as fast as")
            + f": {format_seconds(fast.median_s)} vs {format_seconds(slow.median_s)} per "
            f"{fast.unit}; 95 % interval{over} {_interval_words(low, high)}"
        )
        if reason:
            evidence += f"; {reason}"
        if fast.noisy or slow.noisy:
            evidence += "; noisy"
        if fast.retraced or slow.retraced:
            evidence += "; retraced while timed, so tracing is in the time"
        return Claim(self.statement, held, evidence, effect, self.target)


@dataclasses.dataclass(frozen=True)
class Share:
    """The claim that ``variant`` works at least ``at_least`` as fast as ``reference`` (the
    machine's peak, say, timed in turns with it), where a call of the variant does ``work``
    operations and one of the reference ``reference_work``. Judged as :class:`Faster` judges a
    ratio: the variant's rate over the reference's is the reference's time over the variant's,
    scaled by their work, with the same interval and the same band.

    >>> from perfguide.measure.timer import Measurement
    >>> ms = [Measurement("einsum", "call", 1, 1, 0.0, (2.0,) * 5),
    ...       Measurement("peak", "call", 1, 1, 0.0, (1.0,) * 5)]
    >>> claim = Share("einsum", "peak", 0.75, work=4, reference_work=3).check(ms)
    >>> claim.verdict, claim.effect
    ('DID NOT HOLD', '67% of peak')
    """

    variant: str
    reference: str
    at_least: float
    work: float
    reference_work: float

    @property
    def statement(self) -> str:
        return f"{self.variant} reaches at least {self.at_least:.0%} of {self.reference}'s rate"

    def check(self, measurements: Sequence[Measurement]) -> Claim:
        scale = self.work / self.reference_work
        variant, reference = pick(measurements, self.variant, self.reference)
        ratio, low, high = ratio_interval(reference, variant)
        as_faster = Faster(self.variant, self.reference, by=self.at_least / scale)
        held, reason = as_faster._judge(ratio, low, high)
        share, low, high = ratio * scale, low * scale, high * scale
        processes = min(variant.processes, reference.processes)
        over = f" over {processes} processes" if processes > 1 else ""
        evidence = (
            f"{self.variant} at {share:.0%} of {self.reference}'s rate: "
            f"{format_seconds(variant.median_s)} vs {format_seconds(reference.median_s)} per "
            f"{variant.unit}; 95 % interval{over} {low:.0%} to {high:.0%}"
            + (f"; {reason}" if reason else "")
        )
        effect = f"{share:.0%} of {self.reference}"
        return Claim(self.statement, held, evidence, effect, f"at least {self.at_least:.0%}")


def in_every_process(statement: str, ratios: Sequence[float], factor: float, what: str) -> Claim:
    """A claim on a ratio each fresh process worked out for itself (what a hand-rolled timer
    reported over what the harness measured, say): it **held** where every process's ratio
    reaches ``factor``, **did not hold** where none does, and is **inconclusive** where the
    processes disagree. ``what`` names the ratio ("too slow").

    >>> claim = in_every_process("x misleads", [6.0, 8.0, 7.0], 5, "too slow")
    >>> claim.verdict, claim.effect, claim.evidence
    ('HELD', '7.00x too slow', '6.00x to 8.00x too slow in 3 processes (claimed: at least 5x)')
    >>> in_every_process("x misleads", [4.0, 8.0], 5, "too slow").verdict
    'INCONCLUSIVE'
    """
    held = True if min(ratios) >= factor else False if max(ratios) < factor else None
    low, high, median = (
        f"{three_figures(r)}x" for r in (min(ratios), max(ratios), statistics.median(ratios))
    )
    evidence = f"{low} to {high} {what} in {len(ratios)} processes (claimed: at least {factor:g}x)"
    effect = f"{median} {what}"
    return Claim(statement, held, evidence, effect, f"at least {factor:g}x")


def _interval_words(low: float, high: float) -> str:
    """A speed-up interval in one direction where it has one, e.g. "1.9x to 2.3x faster"."""
    if low >= 1:
        return f"{format_factor(low)} to {format_factor(high)} faster"
    if high <= 1:
        return f"{format_factor(1 / high)} to {format_factor(1 / low)} slower"
    return f"{format_factor(1 / low)} slower to {format_factor(high)} faster"


def faster(measurements: Sequence[Measurement], fast: str, slow: str, *, by: float = 1) -> Claim:
    """:class:`Faster` ``(fast, slow, by)`` checked against ``measurements``."""
    return Faster(fast, slow, by).check(measurements)


class ClaimReport:
    """The outcome of a chapter's claims, as text and as an HTML table."""

    def __init__(self, claims: Sequence[Claim]):
        self.claims = list(claims)

    @property
    def all_held(self) -> bool:
        return all(claim.held is True for claim in self.claims)

    @property
    def summary(self) -> str:
        """How many claims came out which way, e.g. "2 held, 1 did not hold"."""
        counts = {v: sum(c.verdict == v for c in self.claims) for v in VERDICTS.values()}
        return ", ".join(f"{n} {v.lower()}" for v, n in counts.items() if n) + "."

    def __str__(self) -> str:
        width = max(len(claim.verdict) for claim in self.claims)
        return "\n".join(
            f"{claim.verdict.ljust(width)}  {claim.statement} ({claim.evidence})"
            for claim in self.claims
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f'<tr id="{c.anchor}" class="perfguide-claim '
            f'perfguide-verdict-{c.verdict.lower().replace(" ", "-")}">'
            f"<td>{c.verdict}</td><td>{html.escape(c.statement)}</td>"
            f"<td>{html.escape(c.evidence)}</td></tr>"
            for c in self.claims
        )
        return (
            '<table class="table perfguide-claims"><thead><tr><th>verdict here</th>'
            f"<th>claim</th><th>evidence</th></tr></thead><tbody>{rows}</tbody></table>"
            f'<p class="perfguide-claims-summary">{self.summary}</p>'
        )
