"""The resident memory of the registered forms' calls, sampled inside a worker process (see
:mod:`perfguide.diagnose`): :func:`memory` returns a
:class:`~perfguide.diagnose.worker_answers.ResidentSeries` a form; the parent process judges them
(:mod:`perfguide.diagnose.parent.findings`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from perfguide.diagnose.worker.loading import materialize
from perfguide.diagnose.worker_answers import ResidentSeries
from perfguide.measure.memory import SAMPLES, resident_series

if TYPE_CHECKING:
    from perfguide.diagnose.worker.forms import Registered


def memory(registered: Registered, calls: dict[str, int]) -> dict[str, ResidentSeries]:
    """Each registered form called ``calls[form]`` times in a row in this process (after its
    timing, so its caches have filled), the resident set sampled :data:`SAMPLES` times: the
    series and the calls between samples, per form."""
    found = {}
    for form, count in calls.items():
        timed = registered.makers[form]()
        series = resident_series(
            lambda i, timed=timed: materialize(timed()), count, count // SAMPLES
        )
        found[form] = ResidentSeries(tuple(series), count // SAMPLES)
    return found
