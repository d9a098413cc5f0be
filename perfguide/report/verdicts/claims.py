"""Claims a chapter makes, checked against the numbers the same build just measured.

A chapter never asserts "X is faster" in prose; it states a claim whose outcome is computed, and
shows a :class:`ClaimReport`, which says plainly when a claim did not hold here.

A speed claim (:class:`Faster`) is judged on the ratio of the two variants' medians, the very
numbers its evidence prints, and on where that ratio would land if the page were built again on
this machine (a 95 % prediction interval, see :mod:`perfguide.measure.stats`), the way asv
judges a change: by the size of the effect and by how sure it is. Variants timed by the same
fresh processes, taking turns, are compared process by process: the interval comes from each
process's own ratio (a process that runs everything slower moves both sides), moderated by how
far such ratios spread and drift between runs on this machine. A ratio within
:data:`TOLERANCE` of the claimed factor is too close to call (**inconclusive** on any run).
Beyond it, the claim **held** when the whole interval lies above the factor, **did not hold**
when it lies below, and is **inconclusive** when the interval straddles the factor.

Two results files are judged by another rule (:mod:`perfguide.report.verdicts.compare_files`):
they may come from other machines, so no calibration of this one predicts where either lands;
the docs' "How to read these pages" says when each rule applies and why.

One idea at some length: each kind of claim is small, and all share the verdict rule, the
wording of their evidence and the report that shows them.

>>> from perfguide.measure.measurement import Measurement
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
import math
import re
import statistics
from collections.abc import Hashable, Sequence
from typing import Any

from perfguide.measure import calibration, stats
from perfguide.measure.measurement import Measurement, pick
from perfguide.measure.memory import next_process
from perfguide.report.format import (
    RERUN,
    compared,
    format_seconds,
    format_span,
    format_speedup,
    speedup_interval,
    three_figures,
)
from perfguide.report.verdicts.ratios import in_common, paired, ratio_interval

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
    #: Where the effect lands in a rerun here, in words ("1.90x to 2.30x faster").
    interval: str = ""
    #: The effect as a sentence with its subject first ("a was 2.00x faster than b"), where the
    #: claim knows its subject.
    measured: str = ""
    #: Each process's value of a ratio it worked out for itself, where the claim was judged on
    #: one (published, so that a calibration fits how far it moves between runs).
    processes: tuple[float, ...] = ()
    #: Where it was judged, as :meth:`on` named it ("mlp", "training step"), where the same
    #: claim was judged on several parts.
    said_of: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The claim as plain JSON data."""
        return {**dataclasses.asdict(self), "processes": list(self.processes)}

    @property
    def sentence(self) -> str:
        """What was measured, subject first where the claim knows it, else its effect."""
        return self.measured or self.effect

    @property
    def verdict(self) -> str:
        return VERDICTS[self.held]

    @property
    def quoted(self) -> str:
        """The effect as a sentence quotes it: with its rerun interval and, unless the claim
        held, its verdict and what it asked for, so that no figure reads as more than it is.

        >>> Claim("a beats b", True, "", "2.00x faster", "", "1.90x to 2.10x faster").quoted
        '2.00x faster (rerun interval: 1.90x to 2.10x faster)'
        >>> Claim("a is at least 1.5x faster than b", None, "", "1.17x faster",
        ...       "at least 1.5x faster", "1.02x to 1.34x faster").quoted
        '1.17x faster (rerun interval: 1.02x to 1.34x faster; inconclusive, claimed: at least \
1.5x faster)'
        """
        return f"{self.effect}{self._notes(verdict=True)}"

    @property
    def stated(self) -> str:
        """The measurement as a statement of its own, subject first where the claim knows it,
        with where it was judged and what :attr:`quoted` adds.

        >>> Claim("a beats b", True, "", "2.00x faster", "", "1.90x to 2.10x faster",
        ...       "a was 2.00x faster than b").on("mlp").stated
        'a was 2.00x faster than b here (mlp; rerun interval: 1.90x to 2.10x faster)'
        """
        return self.here(verdict=True) if self.measured else self.quoted

    def here(self, verdict: bool) -> str:
        """:attr:`sentence` with "here", then where it was judged, its rerun interval and,
        unless it held, what it asked for, with its verdict if ``verdict`` (not where a badge
        shows the verdict beside it).

        >>> Claim("a is at least 10x faster than b", False, "…", "7.58x faster",
        ...     "at least 10x faster", "6.90x to 8.30x faster", "a was 7.58x faster than b"
        ...     ).here(verdict=False)
        'a was 7.58x faster than b here (rerun interval: 6.90x to 8.30x faster; claimed: at \
least 10x faster)'
        """
        return f"{self.sentence} here{self._notes(verdict, self.said_of)}"

    def _notes(self, verdict: bool, said_of: str = "") -> str:
        notes = [said_of] if said_of else []
        notes += [f"{RERUN}: {self.interval}"] if self.interval else []
        if self.held is not True:
            asked = [self.verdict.lower()] * verdict
            asked += [f"claimed: {self.target}"] if self.target else []
            notes += [", ".join(asked)] if asked else []
        return f" ({'; '.join(notes)})" if notes else ""

    @property
    def anchor(self) -> str:
        """An HTML id for this claim's row, made from its statement.

        >>> Claim("xla-loop is faster than numpy", True, "").anchor
        'claim-xla-loop-is-faster-than-numpy'
        """
        return "claim-" + re.sub(r"[^a-z0-9]+", "-", self.statement.lower()).strip("-")

    def restated(self, statement: str, effect: str = "") -> Claim:
        """The same verdict and evidence under the reader's words for what it measured ("most
        of a call is Python" for "the runtime's part is at least 2x faster than the call"),
        with the effect in those words too where given.

        >>> claim = Claim("a is at least 2x faster than b", True, "", "3x faster")
        >>> claim.restated("b waits").statement
        'b waits'
        """
        return dataclasses.replace(self, statement=statement, effect=effect or self.effect)

    def on(self, what: str) -> Claim:
        """The same claim, stated for ``what``: a claim checked on several workloads needs a
        statement (and an anchor) of its own on each.

        >>> Claim("bfloat16 is faster than float32", True, "").on("a product").statement
        'bfloat16 is faster than float32 (a product)'
        """
        return dataclasses.replace(self, statement=f"{self.statement} ({what})", said_of=what)


def exact(statement: str, held: bool, evidence: str, effect: str = "") -> Claim:
    """A claim on what does not vary from run to run, so judged bare: a count (traces, ops,
    lines printed, iterations to converge), bytes worked out from shapes, or the numbers a
    deterministic computation returns. A claim on anything timed or sampled is judged on its
    interval instead (:class:`Faster`, :func:`per_process`, :func:`share_of_time`, …); chapters
    build no :class:`Claim` by hand (a test checks)."""
    return Claim(statement, held, evidence, effect)


@dataclasses.dataclass(frozen=True)
class Faster:
    """The claim that variant ``fast`` takes at most 1/``by`` of the time of ``slow``.

    ``by`` below 1 claims that ``fast`` takes at most ``1/by`` times as long ("keeps up").
    ``tolerance`` is how close to ``by`` a ratio is too close to call (:data:`TOLERANCE` unless
    a caller knows its ratios move by more). Pass it to
    :meth:`~perfguide.processes.pool.Workers.run` as ``settle=`` to give its variants more
    fresh processes while it is undecided, then :meth:`check` it against the measurements.
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
        return judge(ratio, low, high, self.by, self.tolerance)

    def settled(self, measurements: Sequence[Measurement], at_most: int | None = None) -> bool:
        """Whether more processes cannot change the verdict: it is decided, or the ratio is too
        close to the factor for any run to decide, or (``at_most``: the most processes a run
        may get) even that many, spread as these are, would leave the interval straddling the
        factor: more would decide it only by chance."""
        pair = self._pair(measurements)[::-1]
        held, reason = self._judge(*ratio_interval(*pair))
        if held is not None or "too close" in reason:
            return True
        return at_most is not None and self._judge(*ratio_interval(*pair, at_most))[0] is None

    def _pair(self, measurements: Sequence[Measurement]) -> tuple[Measurement, Measurement]:
        """The fast and the slow variant's measurements, as the processes that timed both saw
        them."""
        return in_common(*pick(measurements, self.fast, self.slow))

    def check(self, measurements: Sequence[Measurement]) -> Claim:
        """The claim, judged on ``measurements``: the ratio of the two variants' medians, with
        where it would land in a rerun here."""
        fast, slow = self._pair(measurements)
        if fast.unit != slow.unit:
            raise ValueError(f"cannot compare time per {fast.unit} with time per {slow.unit}")
        ratio, low, high = ratio_interval(slow, fast)
        held, reason = self._judge(ratio, low, high)
        interval = speedup_interval(low, high)
        evidence = f"{versus_words(fast, slow, ratio, measurements)}; {RERUN}: {interval}"
        if reason:
            evidence += f"; {reason}"
        if fast.noisy or slow.noisy:
            evidence += "; noisy"
        if fast.retraced or slow.retraced:
            evidence += "; retraced while timed, so tracing is in the time"
        return Claim(
            self.statement,
            held,
            evidence,
            format_speedup(ratio),
            self.target,
            interval,
            compared(fast.label, ratio, slow.label),
        )


@dataclasses.dataclass(frozen=True)
class Share:
    """The claim that ``variant`` works at least ``at_least`` as fast as ``reference`` (the
    machine's peak, say, timed in turns with it), where a call of the variant does ``work``
    operations and one of the reference ``reference_work``. Judged as :class:`Faster` judges a
    ratio: the variant's rate over the reference's is the reference's time over the variant's,
    scaled by their work, with the same interval and the same band.

    >>> from perfguide.measure.measurement import Measurement
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
        variant, reference = in_common(*pick(measurements, self.variant, self.reference))
        ratio, low, high = ratio_interval(reference, variant)
        as_faster = Faster(self.variant, self.reference, by=self.at_least / scale)
        held, reason = as_faster._judge(ratio, low, high)
        share, low, high = ratio * scale, low * scale, high * scale
        evidence = (
            f"{self.variant} at {share:.0%} of {self.reference}'s rate: "
            f"{format_seconds(variant.median_s)} vs {format_seconds(reference.median_s)} per "
            f"{variant.unit}{_over(variant, measurements, reference)}; "
            f"{RERUN}: {low:.0%} to {high:.0%}" + (f"; {reason}" if reason else "")
        )
        effect = f"{share:.0%} of {self.reference}"
        target = f"at least {self.at_least:.0%}"
        interval = f"{low:.0%} to {high:.0%}"
        measured = f"{self.variant} reached {share:.0%} of {self.reference}'s rate"
        return Claim(self.statement, held, evidence, effect, target, interval, measured)


@dataclasses.dataclass(frozen=True)
class Judged:
    """``claim`` judged on one part of what a section measured, and said of it.

    ``part`` is the key of the measurements it is judged on in the mapping :meth:`check` is
    given (a model, a side, a kernel, a batch size); without it, on all it is given.
    ``said_of`` names where it was judged ("training step"): the same claim checked on several
    workloads needs a statement of its own on each. More processes settle it as they settle
    ``claim``.

    >>> from perfguide.measure.measurement import Measurement
    >>> ms = [Measurement("a", "call", 1, 1, 0.0, (1.0,) * 5),
    ...       Measurement("b", "call", 1, 1, 0.0, (3.0,) * 5)]
    >>> Judged(Faster("a", "b"), part="small", said_of="small model").check({"small": ms}).statement
    'a is faster than b (small model)'
    """

    claim: Faster
    part: Hashable | None = None
    said_of: str = ""

    @property
    def labels(self) -> tuple[str, str]:
        return self.claim.labels

    def _measurements(self, measured: Any) -> Sequence[Measurement]:
        return measured if self.part is None else measured[self.part]

    def settled(self, measured: Any, at_most: int | None = None) -> bool:
        return self.claim.settled(self._measurements(measured), at_most)

    def check(self, measured: Any) -> Claim:
        claim = self.claim.check(self._measurements(measured))
        return claim.on(self.said_of) if self.said_of else claim


def versus_words(
    fast: Measurement, slow: Measurement, ratio: float, measurements: Sequence[Measurement]
) -> str:
    """``fast``'s speed-up ``ratio`` over ``slow`` with both medians and the processes they rest
    on (both as the processes that timed both saw them, out of ``measurements``), in the words a
    claim's evidence uses, which the site check holds to the medians beside it."""
    return (
        compared(fast.label, ratio, slow.label, "is")
        + f": {format_seconds(fast.median_s)} vs {format_seconds(slow.median_s)} per "
        f"{fast.unit}{_over(fast, measurements, slow)}"
    )


def _over(used: Measurement, measurements: Sequence[Measurement], other: Measurement) -> str:
    """How many processes a comparison rests on: where its two sides were timed in different
    processes, that they were (its interval then adds both sides' spreads, see
    :func:`~perfguide.report.verdicts.ratios.ratio_interval`); where its variant was timed by more
    than those that timed both, that its median is theirs alone (so it may differ from the
    variant's table row)."""
    if not paired(used, other):
        return f" in different processes ({used.processes} and {other.processes})"
    if used.processes < 2:
        return " in one process"
    (full,) = pick(measurements, used.label)
    if full.processes > used.processes:
        return f" in the {used.processes} processes that timed both"
    return f" over {used.processes} processes"


def judge(
    ratio: float, low: float, high: float, by: float, tolerance: float = TOLERANCE
) -> tuple[bool | None, str]:
    """The verdict on a measured ``ratio`` and its rerun interval against a claimed factor
    ``by`` and, when inconclusive, why.

    >>> judge(2.0, 1.8, 2.2, 1.5), judge(2.0, 1.4, 2.9, 1.5)
    ((True, ''), (None, 'the interval straddles the claimed factor'))
    >>> judge(1.55, 1.5, 1.6, 1.5)
    (None, 'within 10% of the claimed factor, too close to call')

    The interval is judged as a page prints it, to three figures: one that reads "1.00x to
    1.52x" has not cleared 1x for its reader, whatever its fourth figure.

    >>> judge(1.24, 1.003, 1.52, 1)
    (None, 'the interval straddles the claimed factor')
    """
    margin = 1 + tolerance
    if by / margin < ratio < by * margin:
        return None, f"within {tolerance:.0%} of the claimed factor, too close to call"
    if _as_printed(low) > by:
        return True, ""
    if _as_printed(high) < by:
        return False, ""
    return None, "the interval straddles the claimed factor"


def _as_printed(factor: float) -> float:
    """``factor`` as a page shows it (:func:`~perfguide.report.format.three_figures`)."""
    return float(three_figures(factor).replace(",", ""))


def _times(factor: float) -> str:
    return f"{three_figures(factor)}x"


def per_process(
    statement: str, ratios: Sequence[float], factor: float, what: str, subject: str = ""
) -> Claim:
    """A claim on a ratio each fresh process worked out for itself (what a hand-rolled timer
    reported over what the harness measured, say), judged as :class:`Faster` judges a ratio:
    their median, where it lands in a rerun here (from the processes' spread and how far this
    machine moves it between runs: its own drift where a calibration was fitted on it, see
    :meth:`~perfguide.measure.calibration.Calibration.per_process_for`), against ``factor``
    with the same band. ``what`` names the ratio ("too slow"); ``subject``, with its verb, is
    what the measurement is said of ("x was").

    >>> claim = per_process("x misleads", [6.0, 8.0, 7.0], 5, "too slow", "x was")
    >>> claim.verdict, claim.effect, claim.measured
    ('HELD', '7.00x too slow', 'x was 7.00x too slow')
    >>> claim.evidence  # doctest: +ELLIPSIS
    'too slow: 7.00x, 6.00x to 8.00x across 3 processes; rerun interval: ...'
    """
    median = statistics.median(ratios)
    spread = calibration.current().per_process_for(statement)
    low, high = stats.rerun_interval(median, ratios, spread)
    held, reason = judge(median, low, high, factor)
    # A factor of 1 claims a direction, which the statement says: nothing to add beside it.
    target = "" if factor == 1 else f"at least {factor:g}x {what}"
    interval = f"{_times(low)} to {_times(high)}"
    evidence = (
        f"{what}: {_times(median)}, {format_span(min(ratios), max(ratios), _times, len(ratios))}; "
        f"{RERUN}: {interval}"
        + (f" (claimed: {target})" if target else "")
        + (f"; {reason}" if reason else "")
    )
    effect = f"{three_figures(median)}x {what}"
    measured = f"{subject} {effect}" if subject else ""
    return Claim(
        statement,
        held,
        evidence,
        effect,
        target,
        interval,
        processes=tuple(ratios),
        measured=measured,
    )


def takes_at_most(variant: str, reference: str, times: float) -> Faster:
    """The claim that ``variant`` takes at most ``times`` the time of ``reference``: that it is
    not slower, give or take a factor this machine can tell (a :class:`Faster` with ``by``
    below 1, named for what it claims).

    >>> takes_at_most("eager", "numpy", 1.5).statement
    'eager takes at most 1.5x the time of numpy'
    """
    if times < 1:
        raise ValueError(f"'at most {times:g}x the time' claims a speed-up: use Faster")
    return Faster(variant, reference, by=1 / times)


def faster(measurements: Sequence[Measurement], fast: str, slow: str, *, by: float = 1) -> Claim:
    """:class:`Faster` ``(fast, slow, by)`` checked against ``measurements``."""
    return Faster(fast, slow, by).check(measurements)


def beyond(
    interval: tuple[float, float], *, at_least: float | None = None, at_most: float | None = None
) -> bool | None:
    """Whether all of ``interval`` lies at or above ``at_least`` (or below ``at_most``): True,
    False where all of it lies on the other side, None where it straddles the bound."""
    low, high = interval
    if at_least is not None:
        return True if low >= at_least else False if high < at_least else None
    return True if high < at_most else False if low >= at_most else None


def falls(
    statement: str,
    before: tuple[float, float, float],
    after: tuple[float, float, float],
    what: str,
) -> Claim:
    """The claim that a measured value (``what`` it is) falls from ``before`` to ``after``
    (each the value and its rerun interval, ``(value, low, high)``): held where the intervals
    lie apart with ``after`` below, did not hold where they lie apart the other way,
    inconclusive where they overlap.

    >>> falls("x falls", (2.0, 1.8, 2.2), (1.2, 1.1, 1.3), "x").verdict
    'HELD'
    >>> falls("x falls", (2.0, 1.8, 2.2), (1.9, 1.7, 2.1), "x").evidence
    'x from 2.00 (rerun interval: 1.80 to 2.20) to 1.90 (1.70 to 2.10)'
    """
    held = True if after[2] < before[1] else False if after[1] > before[2] else None
    (value, low, high), (then, then_low, then_high) = (
        map(three_figures, v) for v in (before, after)
    )
    evidence = (
        f"{what} from {value} ({RERUN}: {low} to {high}) to {then} ({then_low} to {then_high})"
    )
    return Claim(statement, held, evidence, f"{value} to {then}")


def predicts(
    statement: str,
    predicted: tuple[float, float, float],
    measured: tuple[float, float, float],
    what: str,
    within: float,
) -> Claim:
    """The claim that a model's ``predicted`` value of a quantity (``what`` it is) lies within
    ``within`` times its ``measured`` value either way, each given as ``(value, low, high)``
    with its rerun interval: the prediction is made of measurements too. The measured value
    over the predicted one gets an interval from both (their half-widths in log added as
    independent errors); held where it lies wholly within the tolerance, did not hold where it
    lies wholly beyond, inconclusive where it straddles it.

    >>> predicts("fits", (1.9, 1.85, 1.95), (2.0, 1.9, 2.1), "a ratio", within=1.25).verdict
    'HELD'
    >>> print(predicts("fits", (1.9, 1.8, 2.0), (2.0, 1.2, 3.3), "a ratio", within=1.25).quoted)
    1.05x the prediction (rerun interval: 0.633x to 1.75x; inconclusive, claimed: \
within 1.25x either way)
    >>> predicts("fits", (1.0, -0.2, 2.2), (2.0, 1.9, 2.1), "a saving", 1.25).verdict
    'INCONCLUSIVE'
    >>> print(predicts("fits", (1.0, 0.95, 1.05), (2.0, 1.9, 2.1), "a ratio", 1.25).evidence)
    a ratio predicted 1.00 (rerun interval: 0.950 to 1.05), measured 2.00 (1.90 to 2.10): 2.00x \
the prediction (1.86x to 2.15x)
    """
    (guess, guess_low, guess_high), (value, low, high) = predicted, measured
    ratio = value / guess
    # An interval reaching zero (a predicted saving that may be none) bounds no ratio.
    bounded = min(low, guess_low, guess) > 0
    half = (
        math.hypot(math.log(high / low), math.log(guess_high / guess_low)) / 2
        if bounded
        else math.inf
    )
    ratio_low, ratio_high = ratio * math.exp(-half), ratio * math.exp(half)
    held = (
        True
        if 1 / within <= ratio_low and ratio_high <= within
        else False
        if ratio_high < 1 / within or ratio_low > within
        else None
    )
    shown = [three_figures(v) for v in (guess, guess_low, guess_high, value, low, high)]
    effect = f"{three_figures(ratio)}x the prediction"
    interval = f"{three_figures(ratio_low)}x to {three_figures(ratio_high)}x"
    evidence = (
        f"{what} predicted {shown[0]} ({RERUN}: {shown[1]} to {shown[2]}), "
        f"measured {shown[3]} ({shown[4]} to {shown[5]}): {effect} ({interval})"
    )
    return Claim(
        statement,
        held,
        evidence,
        effect,
        f"within {three_figures(within)}x either way",
        interval,
    )


def share_of_time(
    statement: str,
    shares: Sequence[float],
    *,
    at_least: float | None = None,
    at_most: float | None = None,
) -> Claim:
    """A claim on ops' share of a trace's op time, measured in each traced call (``shares``):
    held where the share of the next call (a prediction interval over the calls) lies wholly
    at or above ``at_least`` (below ``at_most``), did not hold where it lies wholly on the other
    side, inconclusive where it straddles the bound.

    >>> share_of_time("casts are cheap", [0.04, 0.05, 0.045], at_most=0.1).verdict
    'HELD'
    >>> share_of_time("products dominate", [0.88, 0.93, 0.91], at_least=0.9).verdict
    'INCONCLUSIVE'
    """
    low, high = next_process(shares)
    low, high = max(low, 0.0), min(high, 1.0)
    bound = f"at least {at_least:.0%}" if at_least is not None else f"under {at_most:.0%}"
    effect = f"{statistics.median(shares):.0%} of op time"
    evidence = (
        f"{effect}, {min(shares):.1%} to {max(shares):.1%} in {len(shares)} traced calls; "
        f"the next call: {low:.1%} to {high:.1%} (claimed: {bound})"
    )
    held = beyond((low, high), at_least=at_least, at_most=at_most)
    return Claim(statement, held, evidence, effect, bound)


class ClaimReport:
    """The outcome of a chapter's claims, as text and as an HTML table."""

    def __init__(self, claims: Sequence[Claim]):
        self.claims = list(claims)
        self._by_check: dict[Any, Claim] = {}

    @classmethod
    def of(cls, checks: Sequence[Any], measurements: Any) -> ClaimReport:
        """Each of ``checks`` (a :class:`Faster`, a :class:`Share`, a :class:`Judged`…) checked
        against ``measurements`` (what its ``check`` takes: a list of measurements, or a mapping
        of them for :class:`Judged`); ``report[check]`` is the claim it came to."""
        report = cls([check.check(measurements) for check in checks])
        report._by_check = dict(zip(checks, report.claims, strict=True))
        return report

    def __getitem__(self, check: Any) -> Claim:
        return self._by_check[check]

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
