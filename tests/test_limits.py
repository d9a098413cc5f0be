"""Machine limits: measured once per process, plausible, and used as shares."""

import types

import pytest

from perfguide.measure import limits


@pytest.fixture
def faked(monkeypatch):
    """The two measurements faked (what is under test is what :func:`limits.measured` and
    :func:`limits.record` make of them), each call noted; the cache cleared before and after."""
    calls = []

    def copy(nbytes=limits.COPY_BYTES):
        calls.append(("copy", nbytes))
        return (20e9 if nbytes == limits.COPY_BYTES else 80e9), 2

    def matmul(sides=limits.MATMUL_SIDES):
        calls.append(("matmul", sides))
        return 100e9, "NumPy float32 matmul of 2048 x 2048"

    monkeypatch.setattr(limits, "copy_bandwidth", copy)
    monkeypatch.setattr(limits, "matmul_flops", matmul)
    limits.measured.cache_clear()
    yield calls
    limits.measured.cache_clear()


def test_limits_are_measured_once_and_recorded_in_the_environment(faked):
    assert limits.measured() is limits.measured()
    assert faked == [
        ("copy", limits.COPY_BYTES),
        ("copy", limits.CACHE_COPY_BYTES),
        ("matmul", limits.MATMUL_SIDES),
    ]
    record = limits.record()["machine_limits"]
    assert (record["memory_bandwidth"], record["cache_bandwidth"]) == (20e9, 80e9)
    assert record["peak_flops"] == 100e9
    assert record["how"]["memory_bandwidth"].startswith("NumPy copy of 40 MB on 2 thread(s)")
    assert record["how"]["peak_flops"] == "NumPy float32 matmul of 2048 x 2048, 2n^3 / time"


def test_the_measurements_are_plausible_for_a_computer():
    # Small arrays: the measuring code runs for real, in a second or two.
    bandwidth, threads = limits.copy_bandwidth(2**20)
    assert 1e8 < bandwidth < 1e13 and threads >= 1  # 0.1 GB/s .. 10 TB/s
    flops, product = limits.matmul_flops((128,))
    assert 1e7 < flops < 1e16 and product.endswith("matmul of 128 x 128")


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
