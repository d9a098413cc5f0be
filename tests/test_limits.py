"""Machine limits: measured once per process, plausible, and used as shares."""

import types

import pytest

from perfguide.measure import limits


def test_limits_are_measured_once_and_recorded_in_the_environment():
    assert limits.measured() is limits.measured()
    record = limits.record()["machine_limits"]
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


@pytest.mark.parametrize(("cores", "expected_threads"), [(1, 1), (4, 4)])
def test_copy_bandwidth_counts_bytes_read_and_written(monkeypatch, cores, expected_threads):
    # A fake clock, not the machine's speed: one thread copies in 10 ms; all cores, in 4 ms.
    timed = []

    def fake_measure(fn, pool, parts, **kwargs):
        fn(pool, parts)  # the copy itself, once: every part of the array is copied
        assert all((dst == src).all() for dst, src in parts)
        assert sum(src.size for _, src in parts) == 10**6
        timed.append(len(parts))
        return types.SimpleNamespace(block_s=(0.012, 0.010, 0.011) if len(parts) == 1 else (0.004,))

    monkeypatch.setattr(limits, "usable_cores", lambda: cores)
    monkeypatch.setattr(limits, "measure", fake_measure)
    rate, threads = limits.copy_bandwidth(4 * 10**6)
    assert timed == sorted({1, cores})  # one thread, then all usable cores (if more than one)
    # Bytes read plus bytes written, over the fastest block of the faster way.
    assert threads == expected_threads
    assert rate == pytest.approx(2 * 4e6 / (0.010 if cores == 1 else 0.004))
