"""Machine limits: measured once per process, plausible, and used as shares."""

import pytest

from perfguide.measure import environment, limits


def test_limits_are_measured_once_and_recorded_in_the_environment():
    assert limits.measured() is limits.measured()
    record = environment.collect()["machine_limits"]
    assert record["memory_bandwidth"] == limits.measured().memory_bandwidth
    assert "copy" in record["how"]["memory_bandwidth"]


def test_limits_are_plausible_for_a_computer():
    measured = limits.measured()
    assert 1e8 < measured.memory_bandwidth < 1e13  # 0.1 GB/s .. 10 TB/s
    assert 1e8 < measured.peak_flops < 1e16


def test_shares_are_work_over_time_over_the_limit():
    machine = limits.MachineLimits(memory_bandwidth=20e9, peak_flops=100e9, how={})
    assert machine.bandwidth_share(10e9, 1.0) == pytest.approx(0.5)
    assert machine.compute_share(25e9, 0.5) == pytest.approx(0.5)


def test_copy_bandwidth_counts_bytes_read_and_written():
    rate, threads = limits.copy_bandwidth(4 * 10**6)
    assert rate > 0 and threads >= 1
