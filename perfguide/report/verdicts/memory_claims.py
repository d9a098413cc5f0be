"""Claims on memory: how fast a way grows the process per call, judged on where the next fresh
process's rate lands (:class:`~perfguide.measure.memory.Growth`), and how much memory a training
step needs per example (:class:`~perfguide.measure.memory.Peaks`), judged as a speed-up is."""

from __future__ import annotations

import statistics

from perfguide.measure.memory import Growth, Peaks, next_process
from perfguide.report.format import (
    MEMORY_WORDS,
    NEXT_PROCESS,
    format_bytes,
    format_span,
    format_speedup,
    three_figures,
)
from perfguide.report.verdicts.claims import Claim, beyond, judge


def _growth_evidence(grown: Growth) -> str:
    low, high = grown.interval
    return (
        f"{grown.label} grew {format_bytes(grown.rate)} a call (median of fresh processes: "
        f"{format_span(min(grown.rates), max(grown.rates), format_bytes, len(grown.rates))}); "
        f"{NEXT_PROCESS}: "
        f"{format_bytes(low)} to {format_bytes(high)}"
    )


def grows(grown: Growth, at_least: float) -> Claim:
    """The claim that ``grown.label`` grows the process by at least ``at_least`` bytes a call,
    judged on where the next fresh process's rate should land: held if all of that interval
    lies at or above, did not hold if all of it lies below, inconclusive otherwise.

    >>> claim = grows(Growth("predict", (20e3, 21e3, 22e3), (0.0,) * 3), at_least=1e3)
    >>> claim.verdict, claim.effect
    ('HELD', '21.0 kB a call')
    """
    held = beyond(grown.interval, at_least=at_least)
    statement = f"{grown.label} grows the process by at least {format_bytes(at_least)} a call"
    return _growth_claim(statement, held, grown)


def _growth_claim(statement: str, held: bool | None, grown: Growth) -> Claim:
    rate = f"{format_bytes(grown.rate)} a call"
    measured = f"{grown.label} grew the process {rate}"
    return Claim(statement, held, _growth_evidence(grown), rate, measured=measured)


def stays_flat(grown: Growth, at_most: float, what: str = "") -> Claim:
    """The claim that ``grown.label`` grows the process by under ``at_most`` bytes a call
    (``what`` that bound is, where another rate sets it): held if all of the next process's
    interval lies below, did not hold if all of it lies at or above.

    >>> stays_flat(Growth("model-call", (10.0, -20.0, 5.0), (0.0,) * 3), at_most=1e3).verdict
    'HELD'
    """
    held = beyond(grown.interval, at_most=at_most)
    statement = f"{grown.label} grows the process by under {format_bytes(at_most)} a call"
    statement += f" ({what})" if what else ""
    return _growth_claim(statement, held, grown)


def grows_less(
    grown: Growth,
    reference: Growth,
    fraction: float,
    what: str,
    names: tuple[str, str] | None = None,
) -> Claim:
    """The claim that ``grown.label`` grows the process by under ``fraction`` of what
    ``reference.label`` grows it (``what`` that fraction is, in words: "a tenth"), judged on
    both next-process intervals: held where all of ``grown``'s lies below ``fraction`` of the
    lowest the reference's reaches, did not hold where all of it lies at or above ``fraction``
    of the highest, inconclusive otherwise. ``names`` tell the two apart where their labels
    are the same (one way under two settings).

    >>> fixed = Growth("reduce-retracing", (10e3, 12e3, 11e3), (0.0,) * 3)
    >>> retracing = Growth("tf-function", (400e3, 420e3, 410e3), (0.0,) * 3)
    >>> claim = grows_less(fixed, retracing, 1 / 10, "a tenth")
    >>> claim.verdict, claim.measured
    ('HELD', 'reduce-retracing grew the process 11.0 kB a call, tf-function 410 kB')
    """
    (low, high), (ref_low, ref_high) = grown.interval, reference.interval
    held = True if high < fraction * ref_low else False if low >= fraction * ref_high else None
    statement = f"{grown.label} grows the process by under {what} of {reference.label}'s growth"
    evidence = (
        f"{_growth_evidence(grown)}; against {reference.label}'s "
        f"{format_bytes(reference.rate)} a call ({NEXT_PROCESS}: {format_bytes(ref_low)} to "
        f"{format_bytes(ref_high)})"
    )
    effect = f"{format_bytes(grown.rate)} a call"
    name, reference_name = names or (grown.label, reference.label)
    measured = f"{name} grew the process {effect}, {reference_name} {format_bytes(reference.rate)}"
    return Claim(statement, held, evidence, effect, f"under {what}", measured=measured)


#: What each kind of a training step's peak is, in a claim's words.
PEAK_KINDS = {
    "tensors": "its tensors at the step's peak",
    "resident": "the process's peak resident set",
}


def needs_less(light: Peaks, heavy: Peaks, kind: str, by: float) -> Claim:
    """The claim that a training step under ``light`` needs at least ``by`` times less memory
    per example of its batch than under ``heavy`` (``kind``: one of :data:`PEAK_KINDS`): the
    ratio of their medians, judged as a speed-up is, on where the ratio of the next pair of
    fresh processes should land (their processes paired in order).

    >>> heavy = Peaks("float32", (1, 2), ((0, 400), (0, 420), (0, 410)), (), 260.0)
    >>> light = Peaks("bf16", (1, 2), ((0, 300), (0, 330), (0, 315)), (), 130.0)
    >>> claim = needs_less(light, heavy, "tensors", by=1.5)
    >>> claim.verdict, claim.effect
    ('DID NOT HOLD', '1.30x less')
    """
    heavier, lighter = heavy.per_example(kind), light.per_example(kind)
    ratio = statistics.median(heavier) / statistics.median(lighter)
    low, high = next_process([h / w for h, w in zip(heavier, lighter, strict=True)])
    held, reason = judge(ratio, low, high, by)
    statement = (
        f"{light.label} needs at least {by:g}x less memory a training example than "
        f"{heavy.label} ({PEAK_KINDS[kind]})"
    )
    less = format_speedup(ratio, MEMORY_WORDS)
    evidence = (
        f"{format_bytes(statistics.median(heavier))} against "
        f"{format_bytes(statistics.median(lighter))} an example ({less}), median of "
        f"{len(heavier)} fresh processes each; {NEXT_PROCESS} of the ratio: "
        f"{three_figures(low)}x to {three_figures(high)}x" + (f"; {reason}" if reason else "")
    )
    than = "as" if less == MEMORY_WORDS[2] else "than"
    measured = f"{light.label} needed {less} memory a training example {than} {heavy.label}"
    return Claim(statement, held, evidence, less, f"at least {by:g}x", measured=measured)
