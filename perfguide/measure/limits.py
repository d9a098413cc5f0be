"""What this machine can do at best: memory bandwidth and peak float32 arithmetic, measured.

A time means little until it is set against what the hardware allows. Two numbers, measured once
per process with the same harness as everything else:

* **memory bandwidth**: bytes read plus bytes written per second by a NumPy copy of 40 MB (the
  size of the largest arrays the chapters use: ten million float32 values), split over all usable
  cores when that is faster;
* **cache copy rate**: the same copy of 256 kB, which stays in the caches: the rate at which
  work whose data fits in them can move it (a share of the memory bandwidth above 100 % means
  the data came from the caches, and is set against this rate instead);
* **peak float32 arithmetic**: floating-point operations per second of the fastest large square
  matrix product, TensorFlow's or NumPy's, of side 1024 or 2048 (2·n³ operations for n × n).

A limit is what the machine *can* do, so each is taken from the fastest of the timed blocks, not
their median. A bandwidth-bound variant is judged by its share of the first, a compute-bound one
by its share of the second.

The limits are the machine's, not a page's: a docs build names a file in
:data:`SHARED_FILE_ENV`, its first page's workers measure the limits and write them there, and
the pages after it read them (measuring them costs a page seconds).
"""

from __future__ import annotations

import dataclasses
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from perfguide.measure.cpu import usable_cores
from perfguide.measure.timer import Timed, loop_floor_s, measure

#: Bytes of the array the copy reads and of the one it writes: ten million float32 values, the
#: chapters' largest arrays. Bandwidth depends on size (caches), so it is measured at theirs.
COPY_BYTES = 4 * 10**7
#: Bytes of the copy that stays in the caches: 128 kB read, 128 kB written, within a core's
#: L2 cache on today's x86 CPUs.
CACHE_COPY_BYTES = 2**17
#: The variable naming the file where the limits measured first are kept for later processes.
SHARED_FILE_ENV = "PERFGUIDE_LIMITS_FILE"
#: Sides of the square float32 matrices whose fastest product stands for the peak.
MATMUL_SIDES = (1024, 2048)


@dataclasses.dataclass(frozen=True)
class MachineLimits:
    """Measured memory bandwidth (bytes/s, read + write) and peak float32 FLOP/s."""

    memory_bandwidth: float
    peak_flops: float
    #: How each was measured, in words, for the environment record.
    how: dict[str, str]
    #: Bytes/s (read + write) of a copy that stays in the caches (None in older records).
    cache_bandwidth: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def bandwidth_share(self, bytes_moved: float, seconds: float) -> float:
        """The fraction of the bandwidth that moving ``bytes_moved`` in ``seconds`` uses."""
        return bytes_moved / seconds / self.memory_bandwidth

    def cache_share(self, bytes_moved: float, seconds: float) -> float | None:
        """The fraction of the cache copy rate that moving ``bytes_moved`` in ``seconds`` uses
        (None where the rate was not measured)."""
        return bytes_moved / seconds / self.cache_bandwidth if self.cache_bandwidth else None

    def compute_share(self, flops: float, seconds: float) -> float:
        """The fraction of the peak that ``flops`` operations in ``seconds`` reach."""
        return flops / seconds / self.peak_flops


def _copy_parts(pool: ThreadPoolExecutor, parts: list[tuple[np.ndarray, np.ndarray]]) -> None:
    # NumPy releases the GIL while it copies, so the parts move in parallel.
    for future in [pool.submit(np.copyto, dst, src) for dst, src in parts]:
        future.result()


def copy_bandwidth(nbytes: int = COPY_BYTES) -> tuple[float, int]:
    """Bytes per second (read + write) of the faster of a one-thread and an all-core copy of
    ``nbytes``, and the number of threads that got it."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    best = (0.0, 1)
    for threads in sorted({1, usable_cores()}):
        bounds = np.linspace(0, src.size, threads + 1).astype(int)
        parts = [(dst[a:b], src[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        with ThreadPoolExecutor(threads) as pool:
            seconds = min(
                measure(_copy_parts, pool, parts, label="copy", min_block_s=0.05, blocks=5).block_s
            )
        best = max(best, (2 * nbytes / seconds, threads))
    return best


def matmul_flops(sides: tuple[int, ...] = MATMUL_SIDES) -> tuple[float, str]:
    """FLOP/s of the fastest float32 square product, TensorFlow's or NumPy's, of the ``sides``,
    and which one it was."""
    import tensorflow as tf

    rates = {}
    for side in sides:
        a = np.random.default_rng(0).uniform(-1, 1, (side, side)).astype(np.float32)
        for name, fn, x in (("TensorFlow", tf.matmul, tf.constant(a)), ("NumPy", np.matmul, a)):
            # Ten blocks of 0.1 s: a limit taken from too few blocks undershoots a later run.
            seconds = min(measure(fn, x, x, label=name, min_block_s=0.1, blocks=10).block_s)
            rates[f"{name} float32 matmul of {side} x {side}"] = 2 * side**3 / seconds
    best = max(rates, key=rates.get)
    return rates[best], best


#: The label of the peak's reference call (:func:`peak_reference`) among a run's measurements:
#: what it is, not "peak", since its median in a run is not the machine's peak (its quickest).
PEAK = "tf.matmul 2048"
#: Operations of one call of the reference.
PEAK_FLOPS = 2 * MATMUL_SIDES[-1] ** 3


def peak_reference() -> Timed:
    """The peak as a call to time in turns with the variants a claim sets against it (so the
    peak's own variation between processes is in the claim's interval): TensorFlow's float32
    product of the largest side, usually the fastest of :func:`matmul_flops`'s."""
    import tensorflow as tf

    side = MATMUL_SIDES[-1]
    a = tf.constant(np.random.default_rng(0).uniform(-1, 1, (side, side)).astype(np.float32))
    return Timed(tf.matmul, (a, a))


@functools.cache
def measured() -> MachineLimits:
    """This machine's limits, measured on first use and kept for the rest of the process."""
    bandwidth, threads = copy_bandwidth()
    cache, cache_threads = copy_bandwidth(CACHE_COPY_BYTES)
    flops, product = matmul_flops()
    how = {
        "memory_bandwidth": f"NumPy copy of {COPY_BYTES / 1e6:.0f} MB on {threads} thread(s), "
        "bytes read + written per second",
        "cache_bandwidth": f"NumPy copy of {CACHE_COPY_BYTES / 1e3:.0f} kB on "
        f"{cache_threads} thread(s)",
        "peak_flops": f"{product}, 2n^3 / time",
    }
    return MachineLimits(bandwidth, flops, how, cache)


def record(known: dict[str, Any] | None = None) -> dict[str, Any]:
    """The machine's limits (``known``: as an earlier process measured them, see
    :data:`SHARED_FILE_ENV`) and the timer's own cost per call, for an environment record."""
    limits = known if known is not None else measured().to_dict()
    return {"machine_limits": limits, "timer_floor_s": loop_floor_s()}
