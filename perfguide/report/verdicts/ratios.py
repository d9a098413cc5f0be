"""The ratio of two variants' medians and where it lands in a rerun here: process by process
where the same processes timed both, else from both sides' spreads."""

from __future__ import annotations

from perfguide.measure import calibration, stats
from perfguide.measure.measurement import Measurement


def paired(a: Measurement, b: Measurement) -> bool:
    """Whether ``a`` and ``b`` were timed by the same processes, taking turns, so they compare
    process by process (two measurements from this process's one run are paired too)."""
    return a.process_ids == b.process_ids and a.processes == b.processes


def in_common(a: Measurement, b: Measurement) -> tuple[Measurement, Measurement]:
    """``a`` and ``b`` as timed by the processes that timed both (a comparison that was given
    more processes than the rest of its workload shares only those with the others); unchanged
    where they share none."""
    shared = [name for name in a.process_ids if name in b.process_ids]
    if not shared or (len(shared) == a.processes == b.processes):
        return a, b
    return tuple(m.of_processes([m.process_ids.index(name) for name in shared]) for m in (a, b))


def ratio_interval(
    slow: Measurement, fast: Measurement, as_many: int | None = None
) -> tuple[float, float, float]:
    """``slow``'s median over ``fast``'s (the speed-up of ``fast``) and where that ratio lands
    in another run here, 95 %: from each process's own ratio where the same processes timed
    both (a process that runs everything slower moves both sides), else from both sides'
    spreads added (see :mod:`perfguide.measure.stats`), each with its own drift (not the
    host's, which moves both sides alike). Pass
    measurements :func:`in_common`; ``as_many``: as if each had been timed by that many
    processes, spread alike (:func:`perfguide.measure.stats.rerun_variance`)."""
    ratio = slow.median_s / fast.median_s
    spreads = calibration.current()
    if paired(slow, fast):
        per_process = [
            s / f for s, f in zip(slow.process_median_s, fast.process_median_s, strict=True)
        ]
        spread = spreads.ratio_for(slow.workload, slow.ratio_key(fast))
        return ratio, *stats.rerun_interval(ratio, per_process, spread, as_many)
    return ratio, *stats.unpaired_interval(
        ratio,
        slow.process_median_s,
        fast.process_median_s,
        *(spreads.time_for(m.workload, m.row_key, on_host=False) for m in (slow, fast)),
        as_many,
    )


def fixed_price(over_many_s: float, over_one_s: float, many: int) -> float:
    """What a call costs besides its units, from the same call's time per unit over ``many``
    units a call and over one: a call of n units takes that price plus n units' time, so the
    two lengths give both. Negative where one unit a call cost no more than many.

    >>> round(fixed_price(over_many_s=0.012, over_one_s=0.050, many=32), 6)
    0.039226
    """
    return many * (over_one_s - over_many_s) / (many - 1)
