"""Claims a chapter makes, checked against the numbers the same build just measured.

A chapter never asserts "X is faster" in prose; it states a :class:`Claim` whose outcome is
computed, and shows a :class:`ClaimReport`, which says plainly when a claim did not hold here.

>>> from perfguide.measure.timer import Measurement
>>> ms = [Measurement("numpy", "iteration", 1, 1, 0.0, (2e-5,) * 5),
...       Measurement("xla-loop", "iteration", 1, 1, 0.0, (2e-6,) * 5)]
>>> claim = faster(ms, "xla-loop", "numpy", by=5)
>>> claim.held, claim.evidence
(True, 'measured 10.0x faster: xla-loop 2.00 µs vs numpy 20.0 µs per iteration')
>>> print(ClaimReport([claim, faster(ms, "numpy", "xla-loop")]))  # doctest: +ELLIPSIS
HELD          xla-loop is at least 5x faster than numpy per iteration (measured 10.0x faster: ...)
DID NOT HOLD  numpy is faster than xla-loop per iteration (measured 10.0x slower: ...)
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Sequence

from perfguide.report.compare import format_ratio, format_seconds, pick
from perfguide.measure.timer import Measurement


@dataclasses.dataclass(frozen=True)
class Claim:
    """A statement, whether it held in this run (None: the measurements cannot tell), and the
    measured evidence."""

    statement: str
    held: bool | None
    evidence: str

    @property
    def verdict(self) -> str:
        return {True: "HELD", False: "DID NOT HOLD", None: "INCONCLUSIVE"}[self.held]


def faster(measurements: Sequence[Measurement], fast: str, slow: str, *, by: float = 1) -> Claim:
    """Claim that variant ``fast`` takes at most 1/``by`` of the time of ``slow`` per unit.

    ``by`` below 1 claims that ``fast`` is at most ``1/by`` times slower ("catches up"). The
    claim holds if it holds for every pairing of the two interquartile ranges, fails if it fails
    for every pairing, and is inconclusive when the spreads straddle the claimed factor.
    """
    f, s = pick(measurements, fast, slow)
    if f.unit != s.unit:
        raise ValueError(f"cannot compare time per {f.unit} with time per {s.unit}")
    ratio = s.median_s / f.median_s
    (f_q1, _, f_q3), (s_q1, _, s_q3) = f.quartiles_s, s.quartiles_s
    if s_q1 / f_q3 >= by:
        held = True
    elif s_q3 / f_q1 < by:
        held = False
    else:
        held = None
    if by >= 1:
        relation = "faster than" if by == 1 else f"at least {by:g}x faster than"
    else:
        relation = f"at most {1 / by:g}x slower than"
    measured = (
        f"{format_ratio(ratio)} faster" if ratio >= 1 else f"{format_ratio(1 / ratio)} slower"
    )
    evidence = (
        f"measured {measured}: {fast} {format_seconds(f.median_s)} vs "
        f"{slow} {format_seconds(s.median_s)} per {f.unit}"
    )
    if f.noisy or s.noisy:
        evidence += "; noisy, so treat the ratio with care"
    if f.retraced or s.retraced:
        evidence += "; retraced while timed, so tracing is in the time"
    return Claim(f"{fast} is {relation} {slow} per {f.unit}", held, evidence)


class ClaimReport:
    """The outcome of a chapter's claims, as text and as an HTML table."""

    def __init__(self, claims: Sequence[Claim]):
        self.claims = list(claims)

    @property
    def all_held(self) -> bool:
        return all(claim.held is True for claim in self.claims)

    @property
    def summary(self) -> str:
        if self.all_held:
            return "Every claim held on this machine."
        if any(claim.held is False for claim in self.claims):
            return "Some claims did not hold on this machine: the numbers above say why."
        return "Some claims are inconclusive: the spreads of the times compared overlap."

    def __str__(self) -> str:
        width = max(len(claim.verdict) for claim in self.claims)
        return "\n".join(
            f"{claim.verdict.ljust(width)}  {claim.statement} ({claim.evidence})"
            for claim in self.claims
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f'<tr class="perfguide-claim-{c.verdict.lower().replace(" ", "-")}">'
            f"<td><strong>{c.verdict}</strong></td><td>{html.escape(c.statement)}</td>"
            f"<td>{html.escape(c.evidence)}</td></tr>"
            for c in self.claims
        )
        return (
            '<table class="table perfguide-claims"><thead><tr><th>on this machine</th>'
            f"<th>claim</th><th>evidence</th></tr></thead><tbody>{rows}</tbody></table>"
            f"<p><em>{self.summary}</em></p>"
        )
