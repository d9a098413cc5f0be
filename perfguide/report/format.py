"""Numbers as a reader reads them: times in their unit, speed-ups as "faster" or "slower",
counts with thousands separators."""

from __future__ import annotations

import math
from collections.abc import Callable

#: The two kinds of interval the guide prints, each always by this name (the docs' "How to read
#: these pages" defines them): where another run's median lands, and where the next fresh
#: process's value lands.
RERUN = "rerun interval"
NEXT_PROCESS = "next-process interval"
#: That page, from a chapter's page (``auto_examples/<topic>/``), with each term's anchor.
READING = "../../reading.html"
GLOSSARY = {RERUN: f"{READING}#rerun-interval", NEXT_PROCESS: f"{READING}#next-process-interval"}

_SCALES = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def three_figures(value: float) -> str:
    """``value`` to three significant figures, without exponent notation.

    >>> three_figures(12.345), three_figures(0.5), three_figures(1234.5)
    ('12.3', '0.500', '1,234')
    """
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:#.3g}".rstrip(".")


def format_seconds(seconds: float) -> str:
    """Three significant figures in the largest unit that keeps the number at least 1.

    >>> format_seconds(0.0123456), format_seconds(2.5e-7), format_seconds(0.0009996)
    ('12.3 ms', '250 ns', '1.00 ms')
    """
    seconds = float(f"{seconds:.3g}")  # round first, so 999.6 µs reads 1.00 ms, not 1000 µs
    scale, name = next(((s, n) for s, n in _SCALES if seconds >= s), _SCALES[-1])
    return f"{three_figures(seconds / scale)} {name}"


def format_interval(low: float, high: float) -> str:
    """An interval of times, both ends in their own unit.

    >>> format_interval(9.5e-6, 1.2e-5)
    '9.50 µs – 12.0 µs'
    """
    return f"{format_seconds(low)} – {format_seconds(high)}"


def format_factor(factor: float) -> str:
    """A factor of at least 1 as ``'12.3x'``.

    >>> format_factor(12.34), format_factor(2500)
    ('12.3x', '2,500x')
    """
    if factor < 1:
        raise ValueError(f"a factor reads as 'x times' only from 1 up, got {factor}")
    return f"{three_figures(factor)}x"


#: A ratio's words where it is above 1, below 1 and about 1.
SPEED_WORDS = ("faster", "slower", "as fast")
#: The same for memory: how much less a baseline's bytes over another's say it needs.
MEMORY_WORDS = ("less", "more", "as much")


def format_speedup(speedup: float, words: tuple[str, str, str] = SPEED_WORDS) -> str:
    """A speed-up (baseline time over this time) as "N x faster" or "N x slower", never as a
    factor below 1; any other ratio where more is better in its ``words``.

    >>> format_speedup(12.34), format_speedup(0.08), format_speedup(1.001), format_speedup(0.996)
    ('12.3x faster', '12.5x slower', 'as fast', 'as fast')
    >>> format_speedup(0.8, MEMORY_WORDS)  # memory: the baseline's bytes over these
    '1.25x more'
    """
    better, worse, same = words
    if three_figures(max(speedup, 1 / speedup)) == "1.00":
        return same
    if speedup > 1:
        return f"{format_factor(speedup)} {better}"
    return f"{format_factor(1 / speedup)} {worse}"


def compared(a: str, speedup: float, b: str, verb: str = "was") -> str:
    """``a``'s speed-up over ``b`` as a statement, subject first.

    >>> compared("xla", 2.5, "eager"), compared("a", 1.001, "b", "is")
    ('xla was 2.50x faster than eager', 'a is as fast as b')
    """
    effect = format_speedup(speedup)
    return f"{a} {verb} {effect} {'as' if effect == 'as fast' else 'than'} {b}"


def speedup_interval(low: float, high: float) -> str:
    """A speed-up interval in one direction where it has one.

    >>> speedup_interval(1.9, 2.3), speedup_interval(0.5, 0.8), speedup_interval(0.8, 1.25)
    ('1.90x to 2.30x faster', '1.25x to 2.00x slower', '1.25x slower to 1.25x faster')
    """
    if low >= 1:
        return f"{format_factor(low)} to {format_factor(high)} faster"
    if high <= 1:
        return f"{format_factor(1 / high)} to {format_factor(1 / low)} slower"
    return f"{format_factor(1 / low)} slower to {format_factor(high)} faster"


def format_span(low: float, high: float, shown: Callable[[float], str], processes: int) -> str:
    """The values of ``processes`` fresh processes, from ``low`` to ``high``, as ``shown`` prints
    them; where they print alike, that they were the same in all, never "1.28x to 1.28x".

    >>> format_span(1.2, 1.4, "{:.2f}x".format, 3), format_span(1.281, 1.279, "{:.2f}x".format, 3)
    ('1.20x to 1.40x across 3 processes', '1.28x in all 3 processes')
    >>> format_span(2.0, 2.0, "{:.2f}x".format, 1)
    '2.00x in one process'
    """
    if processes == 1:
        return f"{shown(low)} in one process"
    if shown(low) == shown(high):
        return f"{shown(low)} in all {processes} processes"
    return f"{shown(low)} to {shown(high)} across {processes} processes"


def format_percent(share: float) -> str:
    """A share (0 to 1) as a percentage, to three figures; a share too small for that to be
    read at a glance as "under 0.001 %".

    >>> format_percent(0.9234), format_percent(0.004), format_percent(2e-9)
    ('92.3 %', '0.400 %', 'under 0.001 %')
    """
    if 0 < share < 1e-5:
        return "under 0.001 %"
    return f"{three_figures(share * 100)} %"


def format_count(count: int) -> str:
    """A whole number with thousands separators.

    >>> format_count(10_000_000)
    '10,000,000'
    """
    return f"{count:,}"


def format_bytes(count: float) -> str:
    """A size in bytes with a decimal unit, to three figures; a change of size may be negative.

    >>> format_bytes(84_648), format_bytes(16_853_504), format_bytes(512)
    ('84.6 kB', '16.9 MB', '512 B')
    >>> format_bytes(-2_500.0), format_bytes(12.25), format_bytes(3.7e-10), format_bytes(0.26)
    ('-2.50 kB', '12 B', '0 B', '0.3 B')
    >>> format_bytes(float("inf")), format_bytes(float("-inf"))
    ('unbounded', '-unbounded')
    """
    if math.isinf(count):
        return "unbounded" if count > 0 else "-unbounded"
    if count < 0:
        size = format_bytes(-count)
        return size if size == "0 B" else f"-{size}"
    # Under a kilobyte, whole bytes; under ten, tenths (a rate per call can be a fraction).
    small = round(count, 1) if count < 10 else round(count)
    if small < 1000:
        return f"{small:g} B"
    for unit, scale in (("GB", 1e9), ("MB", 1e6)):
        if count >= scale:
            return f"{three_figures(count / scale)} {unit}"
    return f"{three_figures(count / 1e3)} kB"


def lower_first(text: str) -> str:
    """``text`` with its first letter in lower case, to go on inside a sentence."""
    return text[0].lower() + text[1:]
