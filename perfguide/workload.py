"""What a workload is: a question, variants that compute the same thing, and how to time one."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Workload:
    """A registry entry: variants of one computation, timed per ``unit`` of work.

    ``make_call(variant, size)`` builds a fresh variant for a problem of ``size`` (counted in
    ``size_name``) and returns ``(call, units_per_call)``: a zero-argument callable that does
    ``units_per_call`` units of work and returns its result.
    """

    name: str
    question: str
    unit: str
    size_name: str
    default_size: int
    baseline: str
    variants: tuple[str, ...]
    make_call: Callable[[str, int], tuple[Callable[[], Any], int]]
