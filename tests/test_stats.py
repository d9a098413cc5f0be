"""Statistics over processes and blocks, on data whose answer is known."""

import numpy as np
import pytest

from perfguide.measure import stats


def processes(speeds, blocks=6, spread=0.01, seed=0):
    """One process per speed: ``blocks`` blocks scattered by ``spread`` around it."""
    rng = np.random.default_rng(seed)
    return [list(s * (1 + spread * rng.standard_normal(blocks))) for s in speeds]


def test_one_process_is_a_bootstrap_of_its_blocks():
    (blocks,) = processes([1.0], blocks=20)
    low, high = stats.median_interval([blocks])
    assert low <= stats.median_of_processes([blocks]) <= high
    assert min(blocks) <= low and high <= max(blocks)


def test_the_interval_widens_with_the_spread_between_processes():
    tight = stats.median_interval(processes([1.0, 1.0, 1.0]))
    apart = stats.median_interval(processes([0.8, 1.0, 1.3]))
    assert apart[1] - apart[0] > 5 * (tight[1] - tight[0])
    # The processes, not just the blocks: the interval reaches towards the outer processes.
    assert apart[0] < 0.9 and apart[1] > 1.2


def test_intervals_are_seeded():
    data = processes([0.9, 1.0, 1.1])
    assert stats.median_interval(data) == stats.median_interval(data)


def test_a_paired_ratio_cancels_what_a_process_does_to_both_variants():
    speeds = [0.8, 1.0, 1.3]
    fast = processes(speeds, seed=1)
    slow = processes([2 * s for s in speeds], seed=2)
    ratio, low, high = stats.ratio_interval(slow, fast, paired=True)
    assert ratio == pytest.approx(2, rel=0.02) and 1.9 < low <= high < 2.1
    _, low, high = stats.ratio_interval(slow, fast, paired=False)
    assert low < 1.7 and high > 2.4  # unpaired, the processes' speeds stay in the interval


def test_paired_variants_need_the_same_processes():
    with pytest.raises(ValueError, match="same processes"):
        stats.ratio_interval(processes([1, 1]), processes([1, 1, 1]), paired=True)


def test_variance_components_recover_the_levels_they_were_made_with():
    rng = np.random.default_rng(3)
    process_sd, block_sd = 0.10, 0.02
    data = [
        list(np.exp(p + block_sd * rng.standard_normal(50)))
        for p in process_sd * rng.standard_normal(200)
    ]
    within, between = stats.variance_components(data)
    assert within**0.5 == pytest.approx(block_sd, rel=0.1)
    assert between**0.5 == pytest.approx(process_sd, rel=0.15)


def test_variance_components_need_two_processes_of_two_blocks():
    with pytest.raises(ValueError, match="at least two"):
        stats.variance_components([[1.0, 1.1]])


def test_more_spread_or_more_precision_needs_more_processes():
    base = stats.processes_needed(0.0004, 0.0025, 6, 0.05)
    assert stats.processes_needed(0.0004, 0.01, 6, 0.05) > base
    assert stats.processes_needed(0.0004, 0.0025, 6, 0.02) > base
    # Where processes add nothing, blocks carry the precision and two processes do.
    assert stats.processes_needed(0.0001, 0.0, 100, 0.05) == 2
