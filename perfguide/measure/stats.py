"""Statistics over processes: where another run of the same code on this machine would land.

On a virtual machine the process is the unit that varies: two fresh processes of the same code
can differ by 5-30 % (memory layout, where their threads land), while the blocks within one
process agree much more closely; and the machine itself drifts between runs minutes apart. So,
as Kalibera and Jones's "Rigorous Benchmarking in Reasonable Time" (ISMM 2013) treats
iterations within executions, a published time is the median over processes of each process's
median block, and its interval is a *prediction interval*: where the median of another run of as
many fresh processes, on this machine, lands with :data:`CONFIDENCE` probability. Its width
(on the log scale, so relative) has three parts:

- how far this run's processes spread, *moderated* towards how far this machine's processes
  usually spread (the empirical-Bayes variance of Smyth's limma, made for a few replicates):
  a few processes that happen to agree do not make a narrow interval, and Student's t gets the
  moderated degrees of freedom;
- that this run's median and the next run's are each a median of a few processes;
- the drift between runs, which no number of processes within one run can see: measured by
  timing everything twice, minutes apart (the noise session), as a :class:`Spread`'s
  ``drift_sd``.

Only the first part is estimated from this run's few processes; the drift is the calibration's,
fitted on thousands of rows, so it is as good as known. Student's t therefore gets the degrees of
freedom of the sum (Welch and Satterthwaite's approximation), not those of the processes alone:
a drift that dominates the width is not inflated by t at two or three degrees of freedom.

>>> spread = Spread(process_sd=0.04, prior_df=4, drift_sd=0.02)
>>> low, high = rerun_interval(1.0, [1.0, 1.05, 0.97], spread)
>>> round(low, 3), round(high, 3)
(0.898, 1.113)

A single process's blocks, resampled, give what a benchmark run in one process would report
(:func:`blocks_interval`): narrower, and no promise about the next process.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

#: Confidence of every interval.
CONFIDENCE = 0.95
#: Bootstrap resamples of one process's blocks: enough for the 2.5th and 97.5th percentiles.
RESAMPLES = 2000
#: How much more the median of n normal values varies than their mean, for n of 3 or more
#: (pi/2 for many values, less for few: an upper bound); a median of two is their mean.
MEDIAN_VARIANCE = math.pi / 2
#: A prior worth more processes than this is as good as known: t is then the normal quantile.
MAX_PRIOR_DF = 1000.0

Processes = Sequence[Sequence[float]]


def median_of_processes(processes: Processes) -> float:
    """The median over processes of each process's median.

    >>> median_of_processes([[1.0, 1.1, 0.9], [1.2, 1.3, 1.1], [1.0, 1.0, 1.1]])
    1.0
    """
    return float(np.median([np.median(blocks) for blocks in processes]))


@dataclasses.dataclass(frozen=True)
class Spread:
    """How one kind of quantity (the log of a time, or of a ratio of two times taken in the same
    processes) varies on a machine: the standard deviation of a process's value around its
    run's (``process_sd``), how many processes' worth of evidence that typical spread counts for
    beside a run's own (``prior_df``), and the standard deviation of a run's shift between runs
    minutes apart (``drift_sd``). All relative (0.04: 4 %)."""

    process_sd: float
    prior_df: float
    drift_sd: float

    def __post_init__(self):
        if self.process_sd < 0 or self.drift_sd < 0 or self.prior_df < 0:
            raise ValueError(f"a spread cannot be negative: {self}")


def _median_variance(processes: int) -> float:
    return 1.0 if processes <= 2 else MEDIAN_VARIANCE


def rerun_variance(
    per_process: Sequence[float],
    spread: Spread,
    next_processes: int | None = None,
    as_many: int | None = None,
) -> tuple[float, float]:
    """The variance of log(next run's value / this run's) and its degrees of freedom, for a
    quantity whose value in each of this run's processes is ``per_process`` (the next run has
    ``next_processes`` processes, as many as this one unless told): the processes' part with
    the moderated degrees of freedom, the drift as known, combined by Satterthwaite. With
    ``as_many``, as if this run (and the next) had had that many processes, spread as these
    are: how narrow more processes could make it at best.

    >>> variance, df = rerun_variance([1.0], Spread(0.05, 10, 0.0))  # one process: the prior
    >>> round(variance, 6), df
    (0.005, 10.0)
    >>> variance, df = rerun_variance([1.0], Spread(0.05, 10, 0.05))  # half of it drift
    >>> round(variance, 6), df
    (0.01, 40.0)
    """
    logs = np.log(np.asarray(per_process, dtype=float))
    n = max(logs.size, as_many or 0)
    df = float(spread.prior_df + n - 1)
    if df <= 0:
        raise ValueError("one process and no prior spread: nothing says how far a rerun lands")
    own = float(((logs - logs.mean()) ** 2).sum())
    if logs.size > 1:
        own *= (n - 1) / (logs.size - 1)  # as many processes, spread alike
    moderated = (spread.prior_df * spread.process_sd**2 + own) / df
    m = next_processes or n
    sampling = moderated * (_median_variance(n) / n + _median_variance(m) / m)
    return satterthwaite([(sampling, df), (2 * spread.drift_sd**2, math.inf)])


def satterthwaite(parts: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The sum of independent variances, each ``(variance, degrees of freedom)``, and the
    degrees of freedom of the sum (Welch and Satterthwaite), at most :data:`MAX_PRIOR_DF`.

    >>> satterthwaite([(1.0, 4), (1.0, 4)])
    (2.0, 8.0)
    >>> satterthwaite([(0.0, 2), (1.0, math.inf)])
    (1.0, 1000.0)
    """
    total = sum(variance for variance, _ in parts)
    spread = sum(variance**2 / df for variance, df in parts if variance > 0)
    return total, min(total**2 / spread, MAX_PRIOR_DF) if spread > 0 else MAX_PRIOR_DF


def t_quantile(df: float) -> float:
    """Student's t at :data:`CONFIDENCE`, two-sided, with ``df`` degrees of freedom.

    >>> round(t_quantile(2), 3)
    4.303
    """
    # Imported here: the fresh processes that import this package to measure rarely need it.
    # The inverse of Student's t itself, which scipy.stats.t.ppf wraps at 40x the cost a call:
    # calibrating calls it tens of thousands of times.
    from scipy import special

    return float(special.stdtrit(df, (1 + CONFIDENCE) / 2))


def interval(center: float, variance: float, df: float) -> tuple[float, float]:
    """``center`` times and over exp(t * sd): the :data:`CONFIDENCE` interval of a log-scale
    quantity of ``variance`` with ``df`` degrees of freedom.

    >>> low, high = interval(2.0, 0.0, 5)
    >>> low, high
    (2.0, 2.0)
    """
    half = t_quantile(df) * math.sqrt(variance)
    return center * math.exp(-half), center * math.exp(half)


def rerun_interval(
    center: float, per_process: Sequence[float], spread: Spread, as_many: int | None = None
) -> tuple[float, float]:
    """Where another run's value lands, 95 %: around ``center`` (this run's published value),
    as wide as ``per_process`` (its value in each process) and ``spread`` say (``as_many``: see
    :func:`rerun_variance`)."""
    return interval(center, *rerun_variance(per_process, spread, as_many=as_many))


def unpaired_interval(
    center: float,
    slow: Sequence[float],
    fast: Sequence[float],
    slow_spread: Spread,
    fast_spread: Spread,
    as_many: int | None = None,
) -> tuple[float, float]:
    """The interval of a ratio ``center`` of two times measured in different processes
    (``slow`` and ``fast``: each process's time, with each side's spread): each side varies
    and drifts on its own, so their variances add (degrees of freedom: Satterthwaite's).

    >>> none = Spread(0.0, 0, 0.0)
    >>> unpaired_interval(2.0, [2.0, 2.0], [1.0, 1.0], none, none)
    (2.0, 2.0)
    """
    return interval(
        center,
        *satterthwaite(
            [
                rerun_variance(slow, slow_spread, as_many=as_many),
                rerun_variance(fast, fast_spread, as_many=as_many),
            ]
        ),
    )


def blocks_interval(blocks: Sequence[float], seed: int = 0) -> tuple[float, float]:
    """The :data:`CONFIDENCE` bootstrap interval of the median of one process's ``blocks``
    (seeded: the same blocks give the same interval): what a benchmark run in one process
    would report.

    >>> blocks_interval([1.0] * 5)
    (1.0, 1.0)
    """
    return _percentiles(_bootstrap(blocks, seed))


def blocks_ratio_interval(
    slow: Sequence[float], fast: Sequence[float], seed: int = 0
) -> tuple[float, float, float]:
    """``slow``'s median block over ``fast``'s, within one process, and its bootstrap interval.

    >>> blocks_ratio_interval([2.0] * 5, [1.0] * 5)
    (2.0, 2.0, 2.0)
    """
    ratio = float(np.median(slow) / np.median(fast))
    return ratio, *_percentiles(_bootstrap(slow, seed) / _bootstrap(fast, seed + 1))


def _bootstrap(blocks: Sequence[float], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = np.asarray(blocks, dtype=float)
    return np.median(rng.choice(values, size=(RESAMPLES, values.size)), axis=1)


def _percentiles(values: np.ndarray) -> tuple[float, float]:
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def fit_prior(variances: Sequence[float], dfs: Sequence[float]) -> tuple[float, float]:
    """The typical spread and its worth in degrees of freedom, from many quantities' sample
    variances (of log values) and their degrees of freedom: Smyth's moment estimate (limma's
    ``fitFDist``), which treats each variance as the typical one scaled by a chi-square. Where
    the variances scatter no more than chance explains, the prior is as good as known.

    >>> rng = np.random.default_rng(0)
    >>> sample = 0.05**2 * rng.chisquare(2, size=4000) / 2  # all truly 5 %, 2 df each
    >>> sd, df = fit_prior(sample, [2] * 4000)
    >>> round(sd, 2), df > 50
    (0.05, True)
    """
    variances, dfs = np.asarray(variances, dtype=float), np.asarray(dfs, dtype=float)
    keep = (variances > 0) & (dfs > 0)
    if keep.sum() < 2:
        raise ValueError("need at least two quantities with a spread to fit a prior")
    variances, dfs = variances[keep], dfs[keep]
    from scipy import special  # imported here, as in t_quantile

    logs = np.log(variances) - special.digamma(dfs / 2) + np.log(dfs / 2)
    excess = float(np.var(logs, ddof=1) - special.polygamma(1, dfs / 2).mean())
    if excess <= 0:
        return math.sqrt(math.exp(logs.mean())), MAX_PRIOR_DF
    prior_df = min(2 * _inverse_trigamma(excess), MAX_PRIOR_DF)
    scale = logs.mean() + special.digamma(prior_df / 2) - math.log(prior_df / 2)
    return math.sqrt(math.exp(scale)), prior_df


def _inverse_trigamma(value: float) -> float:
    """The y > 0 whose trigamma is ``value`` (trigamma falls from infinity to 0)."""
    from scipy import optimize, special  # imported here, as in t_quantile

    return optimize.brentq(lambda y: float(special.polygamma(1, y)) - value, 1e-8, 1e8)


def fit_drift(covered: Callable[[float], float], target: float = CONFIDENCE) -> float:
    """The smallest drift sd (to 0.01 %) with which ``covered(drift_sd)``, the share of one
    run's values inside another run's intervals (which grows with the drift), reaches
    ``target``: the drift that calibrates the intervals against reruns.

    >>> round(fit_drift(lambda sd: min(1.0, 0.5 + 10 * sd)), 3)  # reaches 0.95 at 0.045
    0.045
    """
    low, high = 0.0, 0.05
    if covered(low) >= target:
        return low
    while covered(high) < target:
        low, high = high, 2 * high
        if high > 10:
            raise ValueError("no drift makes the intervals cover the reruns")
    while high - low > 1e-4:
        middle = (low + high) / 2
        low, high = (low, middle) if covered(middle) >= target else (middle, high)
    return high


def variance_components(processes: Processes) -> tuple[float, float]:
    """How much blocks vary within a process and how much processes add on top, as variances of
    log time (so relative: 0.01 is a 10 % standard deviation), estimated as Kalibera and Jones
    do: the within-process variance, and the variance of process means less the part the blocks
    explain (never below 0). Needs at least two processes of at least two blocks.

    >>> within, between = variance_components([[1.0, 1.0], [2.0, 2.0]])
    >>> within, round(between, 4)
    (0.0, 0.2402)
    """
    logs = [np.log(np.asarray(blocks, dtype=float)) for blocks in processes]
    if len(logs) < 2 or min(x.size for x in logs) < 2:
        raise ValueError("need at least two processes of at least two blocks each")
    within = float(np.mean([x.var(ddof=1) for x in logs]))
    blocks = float(np.mean([x.size for x in logs]))
    means = np.array([x.mean() for x in logs])
    between = max(0.0, float(means.var(ddof=1)) - within / blocks)
    return within, between


def processes_needed(within: float, between: float, blocks: int, precision: float) -> int:
    """The fewest processes of ``blocks`` blocks each whose mean log time has a
    :data:`CONFIDENCE` interval no wider than ``precision`` (0.05: within about 5 %) either
    side, by Student's t over processes (Kalibera and Jones's design with two levels).

    >>> processes_needed(0.0, 0.01, 10, 0.05)  # processes 10 % apart, 5 % wanted
    18
    >>> processes_needed(1e-6, 0.0, 10, 0.05)
    2
    """
    per_process = between + within / blocks
    for processes in range(2, 10_000):
        if t_quantile(processes - 1) * math.sqrt(per_process / processes) <= precision:
            return processes
    return 10_000
