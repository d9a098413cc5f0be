"""Statistics over processes: rerun intervals, their calibration, and one process's blocks, on
data whose answer is known."""

import math

import numpy as np
import pytest

from perfguide.measure import stats
from perfguide.measure.stats import Spread


def processes(speeds, blocks=6, spread=0.01, seed=0):
    """One process per speed: ``blocks`` blocks scattered by ``spread`` around it."""
    rng = np.random.default_rng(seed)
    return [list(s * (1 + spread * rng.standard_normal(blocks))) for s in speeds]


def half_width(low, high):
    return math.log(high / low) / 2


def test_one_process_alone_is_a_bootstrap_of_its_blocks():
    (blocks,) = processes([1.0], blocks=20)
    low, high = stats.blocks_interval(blocks)
    assert low <= stats.median_of_processes([blocks]) <= high
    assert min(blocks) <= low and high <= max(blocks)
    assert stats.blocks_interval(blocks) == (low, high)  # seeded


def test_a_rerun_interval_widens_with_the_spread_between_processes():
    spread = Spread(0.03, 4, 0.0)
    tight = stats.rerun_interval(1.0, [1.0, 1.01, 0.99], spread)
    apart = stats.rerun_interval(1.0, [0.8, 1.0, 1.3], spread)
    assert half_width(*apart) > 3 * half_width(*tight)


def test_processes_that_happen_to_agree_do_not_make_a_narrow_interval():
    # Three identical processes: the machine's usual spread still sets the width.
    low, high = stats.rerun_interval(1.0, [1.0, 1.0, 1.0], Spread(0.05, 4, 0.0))
    assert half_width(low, high) > 0.05
    # Without a prior, identical processes would claim to know the next run exactly.
    assert stats.rerun_interval(1.0, [1.0, 1.0, 1.0], Spread(0.05, 0, 0.0)) == (1.0, 1.0)


def test_drift_between_runs_widens_every_interval():
    still = stats.rerun_interval(1.0, [1.0, 1.02, 0.98], Spread(0.03, 4, 0.0))
    drifting = stats.rerun_interval(1.0, [1.0, 1.02, 0.98], Spread(0.03, 4, 0.05))
    assert half_width(*drifting) > half_width(*still) + 0.05


def test_one_process_needs_a_prior():
    with pytest.raises(ValueError, match="one process and no prior"):
        stats.rerun_variance([1.0], Spread(0.03, 0, 0.0))
    assert stats.rerun_variance([1.0], Spread(0.03, 4, 0.0))[1] == 4


def test_unpaired_ratios_carry_both_sides_spreads():
    spread = Spread(0.03, 4, 0.01)
    one_side = stats.rerun_interval(2.0, [2.0, 2.1, 1.9], spread)
    both = stats.unpaired_interval(2.0, [2.0, 2.1, 1.9], [1.0, 1.05, 0.95], spread, spread)
    # Twice the variance (sqrt 2 the width), less what twice the degrees of freedom take off t.
    assert half_width(*both) > 1.25 * half_width(*one_side)


def test_a_known_drift_is_not_inflated_by_t_at_a_few_processes():
    # Three processes that agree, and a drift that dominates: the interval is about the
    # normal quantile of the drift, not Student's t at two or three degrees of freedom.
    spread = Spread(0.01, 1.5, 0.07)
    low, high = stats.rerun_interval(1.0, [1.0, 1.0, 1.0], spread)
    normal = math.exp(1.96 * math.sqrt(2) * 0.07)
    assert high == pytest.approx(normal, rel=0.02)
    assert stats.rerun_variance([1.0, 1.0, 1.0], spread)[1] > 100


def test_the_interval_covers_reruns_drawn_from_its_own_model():
    # Runs of three processes: each run shifts by drift_sd, each process by process_sd.
    rng = np.random.default_rng(4)
    spread = Spread(0.04, 1000, 0.02)  # the prior known, as if from many rows

    def run():
        return np.exp(0.02 * rng.standard_normal() + 0.04 * rng.standard_normal(3))

    trials = 4000
    inside = 0
    for _ in range(trials):
        this, other = run(), run()
        low, high = stats.rerun_interval(float(np.median(this)), this, spread)
        inside += low <= np.median(other) <= high
    # The median's variance is bounded above by pi/2 of the mean's: at least 95 %, not far more.
    assert 0.95 <= inside / trials <= 0.985


def test_a_prior_fitted_to_scattered_spreads_weighs_them_as_they_scatter():
    rng = np.random.default_rng(5)
    # Each quantity's true variance drawn from a scaled inverse chi-square of 6 df around 4 %.
    true = 0.04**2 * 6 / rng.chisquare(6, size=20000)
    sample = true * rng.chisquare(2, size=true.size) / 2
    sd, df = stats.fit_prior(sample, [2] * sample.size)
    assert sd == pytest.approx(0.04, rel=0.1) and df == pytest.approx(6, rel=0.25)


def test_a_prior_needs_spreads_to_fit():
    with pytest.raises(ValueError, match="at least two"):
        stats.fit_prior([0.0, 0.0, 0.01], [2, 2, 2])


def test_the_drift_is_the_smallest_that_covers_the_target():
    def covered(sd):
        return 0.9 if sd < 0.031 else 0.96

    assert stats.fit_drift(covered) == pytest.approx(0.031, abs=1e-4)
    assert stats.fit_drift(lambda sd: 1.0) == 0.0
    with pytest.raises(ValueError, match="no drift"):
        stats.fit_drift(lambda sd: 0.5)


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
