"""The all-reduce model: a link fitted to timings, a ring's cost, a step projected on N workers."""

import numpy as np
import pytest

from perfguide.workloads import distributed_allreduce
from perfguide.workloads.distributed_allreduce import Link, fit_link, project, ring_allreduce_s

#: Made-up loopback: 40 µs a message, 2 GB/s.
LOOPBACK = Link(latency_s=40e-6, bandwidth=2e9)
SIZES = [4e3 * 4**k for k in range(8)]  # 4 kB to 65.5 MB, as the chapter times them


def two_worker_times(link, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    return [ring_allreduce_s(n, 2, link) * (1 + noise * rng.standard_normal()) for n in SIZES]


def test_the_fit_recovers_latency_and_bandwidth_from_exact_timings():
    link = fit_link(SIZES, two_worker_times(LOOPBACK))
    assert link.latency_s == pytest.approx(40e-6, rel=1e-6)
    assert link.bandwidth == pytest.approx(2e9, rel=1e-6)


def test_the_fit_recovers_the_bandwidth_through_noise():
    # 2 % noise a timing: the large messages, which carry the bandwidth, fix it within a few %.
    link = fit_link(SIZES, two_worker_times(LOOPBACK, noise=0.02, seed=3))
    assert link.bandwidth == pytest.approx(2e9, rel=0.05)
    assert link.latency_s >= 0


def test_the_latency_is_fitted_from_the_small_messages_not_swamped_by_a_slow_large_one():
    # As on this machine's loopback: the largest message takes a fifth longer than the line.
    times = two_worker_times(LOOPBACK)
    times[-1] *= 1.2
    assert fit_link(SIZES, times).latency_s == pytest.approx(40e-6, rel=0.1)


@pytest.mark.parametrize(
    ("sizes", "times", "message"),
    [
        ([1e6], [1e-3], "two sizes or more"),
        ([1e6, 1e6], [1e-3, 2e-3], "two sizes or more"),
        ([1e3, 1e6], [1e-3, 1e-4], "did not take longer"),
    ],
)
def test_a_fit_without_two_sizes_or_growth_is_refused(sizes, times, message):
    with pytest.raises(ValueError, match=message):
        fit_link(sizes, times)


def test_a_ring_sends_each_link_2_n_minus_1_over_n_of_the_bytes_in_2_n_minus_1_steps():
    bandwidth_only, latency_only = Link(0.0, 1e9), Link(1e-5, 1e30)
    for workers in (2, 4, 8, 64):
        share = ring_allreduce_s(1e9, workers, bandwidth_only)  # 1 GB at 1 GB/s: the share
        assert share == pytest.approx(2 * (workers - 1) / workers)
        assert ring_allreduce_s(1.0, workers, latency_only) == pytest.approx(
            2 * (workers - 1) * 1e-5
        )
    assert ring_allreduce_s(1e9, 1, bandwidth_only) == 0.0


def test_weak_scaling_keeps_the_batch_and_pays_the_all_reduce_on_top():
    compute, grads = 0.010, 5.2e6  # 10 ms a step, 1.3 M float32 gradients
    one = project(compute, grads, 1, LOOPBACK, "weak")
    assert (one.step_s, one.speedup, one.efficiency) == (compute, 1.0, 1.0)
    eight = project(compute, grads, 8, LOOPBACK, "weak")
    allreduce = 14 * 40e-6 + 14 / 8 * grads / 2e9
    assert eight.step_s == pytest.approx(compute + allreduce)
    assert eight.efficiency == pytest.approx(compute / (compute + allreduce))
    assert eight.speedup == pytest.approx(8 * eight.efficiency)


def test_strong_scaling_splits_the_batch_until_the_all_reduce_dominates():
    compute, grads = 0.010, 5.2e6
    speedups = [project(compute, grads, n, LOOPBACK, "strong").speedup for n in (1, 2, 4, 64)]
    assert speedups[0] == 1.0
    # Two workers: each computes half, then all-reduces every byte once over the link.
    assert speedups[1] == pytest.approx(compute / (compute / 2 + 2 * 40e-6 + grads / 2e9))
    # The all-reduce does not shrink with more workers, so the speed-up levels off and falls.
    assert speedups[3] < speedups[2]


def test_a_network_is_sold_in_gigabits():
    assert Link.network(25, 5e-6) == Link(5e-6, 3.125e9)
    with pytest.raises(ValueError, match="bandwidth above 0"):
        Link.network(0, 5e-6)


@pytest.mark.parametrize("scaling", ["weak", "strong"])
def test_a_projected_steps_terms_add_up_to_it_and_name_the_largest(scaling):
    host_s, network_s, gbps = 1e-3, distributed_allreduce.DATACENTER_LATENCY_S, 25
    link = Link.network(gbps, host_s + network_s)
    for workers in (2, 8, 64):
        step = project(0.01, 5e6, workers, link, scaling)
        t = distributed_allreduce.terms(
            0.01, 5e6, workers, host_s, network_s, link.bandwidth, scaling
        )
        parts = t.compute_s + t.host_s + t.network_s + t.bandwidth_s
        assert parts == pytest.approx(step.step_s)
    # At 64 workers the 126 messages' host cost outweighs a 10 ms computation.
    assert t.dominant == "the hosts' cost a message"
