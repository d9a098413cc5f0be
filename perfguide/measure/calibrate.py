"""Fitting a :class:`~perfguide.measure.calibration.Calibration` to runs of the same code.

Everything is timed several times (``nox -s noise`` runs ``perfguide run --all`` twice; a docs
build is such a run too) and the calibration fitted to every pair of the runs (``perfguide
calibrate``): for times and for ratios of two variants timed in the same processes, the spread
this machine's processes typically show and how much it counts for
(:func:`~perfguide.measure.stats.fit_prior`), and the smallest drift between runs with which
95 % of each run's medians fall inside another run's intervals
(:func:`~perfguide.measure.stats.fit_drift`): the machine's, each workload's own, weighed with
the machine's by how many matched values it was fitted on, and each measurement's own (a
variant at a size), weighed so with its workload's. Measurements do not drift alike even within
a workload (a tiny eager op moves further than a large product), so a stable one is given the
narrow interval it earns and a restless one a wide one. Memory growth rates move between runs
too: where the runs include the memory chapter's (a docs build's ``memory.json``), the drift in
bytes a call with which 95 % of each run's processes' rates fall inside another run's intervals
(:func:`fit_growth_drift`). Where the runs timed a fixed probe too (a docs build's
``build-state.json``), the probe's typical time and how far it moved (:func:`fit_host`), which
a later run's own probe is held against. The runs it is fitted to should be reruns of the same
code (a workload changed between runs is no drift, and would widen every interval), as far
apart as the reruns its intervals promise to cover.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence

from perfguide.measure import stats
from perfguide.measure.calibration import Calibration, host_shift, per_process_key
from perfguide.measure.measurement import Measurement
from perfguide.measure.memory import Growth
from perfguide.measure.stats import Spread

Row = tuple[float, Sequence[float]]  # a published value and its value in each process


#: How many matched values a broader drift (the machine's for a workload, the workload's for a
#: measurement) counts for beside a narrower one's own values, when the two are weighed into
#: the narrower one: a workload or measurement seen a few times leans on the broader drift, one
#: seen many times on its own.
MACHINE_ROWS = 20

# Values matched between runs, by workload, then by measurement (calibration.row_key).
Rows = dict[str, dict[str, list[tuple[Row, Row]]]]


def _inside(pairs: Sequence[tuple[Row, Row]], spread: Spread) -> list[bool]:
    """For each value, whether it lies inside the other run's interval, both ways round."""
    return [
        low <= other[0] <= high
        for a, b in pairs
        for this, other in ((a, b), (b, a))
        for low, high in [stats.rerun_interval(this[0], this[1], spread)]
    ]


Groups = Mapping[str, Sequence[tuple[Row, Row]]]


def _covered(groups: Groups, prior: tuple[float, float], drifts: Mapping[str, float]) -> float:
    """The share of values inside the other run's interval, each group with its drift."""
    inside = [
        hit
        for name, pairs in groups.items()
        for hit in _inside(pairs, Spread(*prior, drifts[name]))
    ]
    return sum(inside) / len(inside)


def _fit_drift(pairs: Sequence[tuple[Row, Row]], prior: tuple[float, float]) -> float:
    """The smallest drift with which 95 % of the values of ``pairs`` are covered."""
    return stats.fit_drift(lambda sd: _covered({"": pairs}, prior, {"": sd}))


def _weighed(pairs: Sequence[tuple[Row, Row]], prior: tuple[float, float], broader: float):
    """The drift fitted to ``pairs``, weighed with a ``broader`` one as :data:`MACHINE_ROWS`
    says."""
    own = _fit_drift(pairs, prior)
    return math.sqrt(
        (len(pairs) * own**2 + MACHINE_ROWS * broader**2) / (len(pairs) + MACHINE_ROWS)
    )


def fit_spread(rows: Rows) -> tuple[Spread, dict[str, float], dict[str, float], float]:
    """The machine's :class:`~perfguide.measure.stats.Spread` of quantities measured in several
    runs (``rows`` of matched values, by workload and measurement: each a published value and
    its per-process values), each workload's own drift (weighed with the machine's), each
    measurement's own (weighed with its workload's), and the share of reruns the intervals
    cover with the measurements' drifts."""
    by_workload = {name: [p for pairs in rows[name].values() for p in pairs] for name in rows}
    flat = [row for pairs in by_workload.values() for pair in pairs for row in pair]
    flat = [values for _, values in flat if len(values) > 1]
    variances = [statistics.variance(map(math.log, values)) for values in flat]
    prior = stats.fit_prior(variances, [len(values) - 1 for values in flat])
    machine = _fit_drift([p for pairs in by_workload.values() for p in pairs], prior)
    workloads = {name: _weighed(pairs, prior, machine) for name, pairs in by_workload.items()}
    measurements = {
        key: _weighed(pairs, prior, workloads[name])
        for name, measured in rows.items()
        for key, pairs in measured.items()
    }
    groups = {key: pairs for measured in rows.values() for key, pairs in measured.items()}
    return Spread(*prior, machine), workloads, measurements, _covered(groups, prior, measurements)


def time_rows(a: Sequence[Measurement], b: Sequence[Measurement]) -> Rows:
    """The measurements of two runs matched row by row, as (median, process medians), by
    workload and measurement."""
    by_key = {m.row_key: m for m in b}
    rows: Rows = {}
    for m in a:
        if (other := by_key.get(key := m.row_key)) is not None:
            rows.setdefault(m.workload, {}).setdefault(key, []).append(
                ((m.median_s, m.process_median_s), (other.median_s, other.process_median_s))
            )
    return rows


def _ratios(group: Sequence[Measurement]) -> dict[str, Row]:
    """Every pair of variants of one workload timed in the same processes, by
    :func:`~perfguide.measure.calibration.ratio_key`: their ratio of medians and their ratio in
    each process."""
    out = {}
    for slow, fast in itertools.combinations(group, 2):
        if slow.process_ids == fast.process_ids:
            per_process = [
                s / f for s, f in zip(slow.process_median_s, fast.process_median_s, strict=True)
            ]
            out[slow.ratio_key(fast)] = (slow.median_s / fast.median_s, per_process)
    return out


def ratio_rows(a: Sequence[Measurement], b: Sequence[Measurement]) -> Rows:
    """Ratios of variants timed in the same processes, matched between two runs, by workload."""

    def groups(ms):
        out: dict[tuple, list] = {}
        for m in ms:
            out.setdefault((m.workload, m.size, m.device, m.unit), []).append(m)
        return {key: _ratios(group) for key, group in out.items()}

    in_b = groups(b)
    rows: Rows = {}
    for group, ratios in groups(a).items():
        for key, row in ratios.items():
            if key in in_b.get(group, {}):
                rows.setdefault(group[0], {}).setdefault(key, []).append((row, in_b[group][key]))
    return rows


#: The ratios a run's claims were judged on, each process's, by claim statement.
PerProcessRun = Mapping[str, Sequence[float]]


def per_process_pairs(a: PerProcessRun, b: PerProcessRun) -> dict[str, tuple[Row, Row]]:
    """The ratios each process worked out for itself (as claims publish them), matched between
    two runs, by :func:`~perfguide.measure.calibration.per_process_key`."""
    return {
        per_process_key(statement): (
            (statistics.median(values), values),
            (statistics.median(b[statement]), b[statement]),
        )
        for statement, values in a.items()
        if statement in b
    }


def fit_per_process(runs: Sequence[PerProcessRun], ratio: Spread) -> tuple[dict[str, float], int]:
    """Each claimed ratio's own drift (weighed with the drift of them all, and that with the
    machine's ratio drift), judged with the ``ratio`` spread of variants timed together, which
    these ratios leave as it is fitted; and how many pairs of values were matched."""
    claims: dict[str, list[tuple[Row, Row]]] = {}
    for a, b in itertools.combinations(runs, 2):
        for key, pair in per_process_pairs(a, b).items():
            claims.setdefault(key, []).append(pair)
    if not claims:
        return {}, 0
    prior = (ratio.process_sd, ratio.prior_df)
    group = _weighed([pair for pairs in claims.values() for pair in pairs], prior, ratio.drift_sd)
    drifts = {key: _weighed(pairs, prior, group) for key, pairs in claims.items()}
    return drifts, sum(map(len, claims.values()))


def _merged(parts: Sequence[Rows]) -> Rows:
    rows: Rows = {}
    for part in parts:
        for name, measured in part.items():
            for key, pairs in measured.items():
                rows.setdefault(name, {}).setdefault(key, []).extend(pairs)
    return rows


#: A memory run's growth rates, by experiment and way.
GrowthRun = Mapping[str, Mapping[str, Growth]]


def growth_rows(a: GrowthRun, b: GrowthRun) -> list[tuple[Growth, Growth]]:
    """The growth rates of two memory runs, matched by experiment and way."""
    return [
        (grown, b[name][label])
        for name, rows in a.items()
        for label, grown in rows.items()
        if label in b.get(name, {})
    ]


def _growth_covered(pairs: Sequence[tuple[Growth, Growth]], drift: float) -> float:
    """The share of each run's processes' rates inside the other run's interval (what it
    promises of the next process), both ways round."""
    inside = [
        low <= rate <= high
        for a, b in pairs
        for this, other in ((a, b), (b, a))
        for low, high in [this.interval_with(drift)]
        for rate in other.rates
    ]
    return sum(inside) / len(inside)


def fit_growth_drift(runs: Sequence[GrowthRun]) -> tuple[float, float, int]:
    """The smallest drift between runs, in bytes a call, with which the growth intervals of
    each pair of memory ``runs`` hold 95 % of the other run's processes' rates; the share they
    hold, and the rates matched."""
    pairs = [row for a, b in itertools.combinations(runs, 2) for row in growth_rows(a, b)]
    if not pairs:
        raise ValueError("the memory runs share no growth rate")
    drift = stats.fit_drift(lambda kilobytes: _growth_covered(pairs, kilobytes * 1e3)) * 1e3
    return drift, _growth_covered(pairs, drift), len(pairs)


def fit_host(probes: Sequence[Mapping[str, float]]) -> tuple[dict[str, float], float]:
    """The probe's typical time (seconds by probe: the median over ``probes``, each one
    timing's seconds by probe) and how far a timing stood from it (the standard deviation over
    the timings of the median log ratio of their probes to it; 0 for one timing).

    >>> reference, moved = fit_host([{"add": 1.0}, {"add": 2.0}, {"add": 4.0}])
    >>> reference, round(moved, 3)
    ({'add': 2.0}, 0.693)
    """
    labels = {label for probed in probes for label in probed}
    reference = {
        label: math.exp(statistics.median(math.log(p[label]) for p in probes if label in p))
        for label in sorted(labels)
    }
    shifts = [host_shift(probed, reference) for probed in probes if probed]
    return reference, statistics.stdev(shifts) if len(shifts) > 1 else 0.0


def fit(
    runs: Sequence[Sequence[Measurement]],
    cpu_model: str,
    source: str,
    growth_runs: Sequence[GrowthRun] = (),
    per_process_runs: Sequence[PerProcessRun] = (),
    probes: Sequence[Mapping[str, float]] = (),
) -> Calibration:
    """The calibration that runs of the same code on one machine imply, every pair of them
    matched row by row (see the module); with two or more memory runs (``growth_runs``), the
    drift of growth rates too; with the ratios each run's claims were judged on in every
    process (``per_process_runs``, one a run), their drifts as ratios'; with the times of the
    fixed probe the runs took (``probes``, seconds by probe each), the host they ran on."""
    if len(runs) < 2:
        raise ValueError(f"a calibration needs at least two runs, got {len(runs)}")
    pairs = list(itertools.combinations(runs, 2))
    times = _merged([time_rows(a, b) for a, b in pairs])
    ratios = _merged([ratio_rows(a, b) for a, b in pairs])
    matched = {
        kind: sum(len(pairs) for measured in rows.values() for pairs in measured.values())
        for kind, rows in (("times", times), ("ratios", ratios))
    }
    if min(matched.values()) < 10:
        raise ValueError(
            f"the runs matched in {matched['times']} times and {matched['ratios']} ratios: "
            "a calibration needs at least 10 of each (run every workload twice)"
        )
    time, time_drifts, time_rows_drift, time_covered = fit_spread(times)
    ratio, ratio_drifts, ratio_rows_drift, ratio_covered = fit_spread(ratios)
    claimed, claimed_pairs = fit_per_process(per_process_runs, ratio)
    record = {
        "runs": len(runs),
        **matched,
        "times_covered": time_covered,
        "ratios_covered": ratio_covered,
    }
    growth_drift = 0.0
    if len(growth_runs) > 1:
        growth_drift, covered, rates = fit_growth_drift(growth_runs)
        record |= {"growth_runs": len(growth_runs), "growth_rates": rates}
        record["growth_covered"] = covered
    drifts = {"time": time_drifts, "ratio": ratio_drifts}
    if claimed_pairs:
        record["per_process"] = claimed_pairs
    measurements = {"time": time_rows_drift, "ratio": ratio_rows_drift | claimed}
    host_probe, host_sd = fit_host(probes) if probes else ({}, 0.0)
    if probes:
        record["probes"] = len(probes)
    return Calibration(
        time, ratio, cpu_model, source, record, growth_drift, drifts, measurements,
        host_probe, host_sd,
    )  # fmt: skip
