"""Statistics over two levels of repetition: timed blocks within a process, and processes.

On a virtual machine the process is the unit that varies most: two fresh processes of the same
code can differ by 5-30 % (memory layout, where their threads land), while the blocks within one
process agree much more closely. So, as Kalibera and Jones's "Rigorous Benchmarking in Reasonable
Time" (ISMM 2013) treats iterations within executions, a median here is the median over processes
of each process's median block, and its interval comes from a bootstrap that resamples processes
and then, within each drawn process, its blocks. A single process is the special case of one
level: its blocks are resampled.

>>> fast = [[1.0, 1.1, 0.9], [1.2, 1.3, 1.1], [1.0, 1.0, 1.1]]
>>> median_of_processes(fast)
1.0
>>> low, high = median_interval(fast)
>>> low <= 1.0 <= high
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

#: Confidence of every interval.
CONFIDENCE = 0.95
#: Bootstrap resamples: enough for the 2.5th and 97.5th percentiles to settle.
RESAMPLES = 2000

Processes = Sequence[Sequence[float]]


def median_of_processes(processes: Processes) -> float:
    """The median over processes of each process's median."""
    return float(np.median([np.median(blocks) for blocks in processes]))


def _resampled(groups: Sequence[Processes], picks: np.ndarray, rng: np.random.Generator):
    """For each group (a variant's processes), the medians of its resampled blocks in each drawn
    process: one (resamples x processes) array per group, all drawn from the same ``picks`` (so
    the groups stay paired process by process)."""
    resamples, slots = picks.shape
    drawn = [np.empty(picks.shape) for _ in groups]
    for slot in range(slots):
        for process in range(len(groups[0])):
            rows = picks[:, slot] == process
            if not rows.any():
                continue
            for out, processes in zip(drawn, groups, strict=True):
                blocks = np.asarray(processes[process], dtype=float)
                choice = rng.choice(blocks, size=(int(rows.sum()), blocks.size))
                out[rows, slot] = np.median(choice, axis=1)
    return drawn


def _picks(processes: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(processes, size=(RESAMPLES, processes))


def _percentiles(values: np.ndarray) -> tuple[float, float]:
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def median_interval(processes: Processes, seed: int = 0) -> tuple[float, float]:
    """The :data:`CONFIDENCE` bootstrap interval of :func:`median_of_processes` (percentile
    method, seeded: the same blocks always give the same interval)."""
    rng = np.random.default_rng(seed)
    (drawn,) = _resampled([processes], _picks(len(processes), rng), rng)
    return _percentiles(np.median(drawn, axis=1))


def ratio_interval(
    slow: Processes, fast: Processes, *, paired: bool, seed: int = 0
) -> tuple[float, float, float]:
    """``slow``'s time over ``fast``'s (the speed-up of ``fast``) and its bootstrap interval.

    ``paired``: both were timed in the same processes, in the same order, taking turns; then the
    ratio is the median of each process's own ratio (a process that runs everything slower moves
    both sides), and a resample draws the same processes for both. Otherwise the two are
    resampled independently and the ratio is of their :func:`median_of_processes`.
    """
    if paired and len(slow) != len(fast):
        raise ValueError(
            f"paired variants need the same processes, got {len(slow)} and {len(fast)}"
        )
    rng = np.random.default_rng(seed)
    if paired:
        ratio = float(
            np.median([np.median(s) / np.median(f) for s, f in zip(slow, fast, strict=True)])
        )
        drawn_slow, drawn_fast = _resampled([slow, fast], _picks(len(slow), rng), rng)
        return ratio, *_percentiles(np.median(drawn_slow / drawn_fast, axis=1))
    ratio = median_of_processes(slow) / median_of_processes(fast)
    (drawn_slow,) = _resampled([slow], _picks(len(slow), rng), rng)
    (drawn_fast,) = _resampled([fast], _picks(len(fast), rng), rng)
    return ratio, *_percentiles(np.median(drawn_slow, axis=1) / np.median(drawn_fast, axis=1))


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
        t = stats.t.ppf((1 + CONFIDENCE) / 2, processes - 1)
        if t * math.sqrt(per_process / processes) <= precision:
            return processes
    return 10_000
