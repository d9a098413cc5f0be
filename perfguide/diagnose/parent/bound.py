"""What bounds the reader's code here, read off the fastest form the reader can use:

- **compute** or **memory**: its arithmetic reaches at least :data:`NEAR_LIMIT` of the machine's
  measured peak FLOP/s, or the bytes it moves that share of the measured bandwidth (the bytes
  counted for the form as it runs: every op's inputs and outputs, or for a kernel XLA fused its
  arguments and results; a share above 100 % means the data stayed in the caches, and is set
  against the measured cache copy rate); how it is called cannot buy much;
- **overhead**: the ops' own time in a profiler trace is under half of a graph call, or an eager
  call's ops, each at the price of a small eager op here, account for most of its time;
- **ops**: the ops take the time, far below the machine's limits (small or poorly fed kernels).

The shares' findings (each form's work against the limits, and where a call's time goes) are
made with the others, in :mod:`~perfguide.diagnose.parent.findings`.
"""

from __future__ import annotations

from perfguide.measure.limits import MachineLimits
from perfguide.report.format import format_percent

#: A share of the machine's peak or bandwidth from which work counts as bound by it.
NEAR_LIMIT = 0.5
#: The limit a share of the memory bandwidth above 100 % is set against instead.
CACHE = "cache copy rate"


def memory_share(limits: MachineLimits, moved: float, seconds: float) -> tuple[float, str]:
    """The share of the measured bandwidth that moving ``moved`` bytes in ``seconds`` uses, and
    the limit it is set against: past the memory bandwidth the data came from the caches, so
    the cache copy rate is the limit (where it was measured)."""
    share = limits.bandwidth_share(moved, seconds)
    if share > 1 and (cached := limits.cache_share(moved, seconds)) is not None:
        return cached, CACHE
    return share, "memory bandwidth"


def what_bounds(
    compute: float,
    memory: float,
    limit: str,
    op_share: float | None,
    dispatch_share: float | None,
    fastest: str,
) -> tuple[str, str]:
    """What bounds the code, and why, from the shares of the limits that form ``fastest``
    reaches and the share of a call its ops take."""
    if max(compute, memory) >= NEAR_LIMIT:
        kind, share = ("compute", compute) if compute >= memory else ("memory", memory)
        measured = "peak FLOP/s" if kind == "compute" else limit
        # Named: the share is that form's own, and forms may tie for the smallest median.
        return kind, (
            f"{fastest}, the form with the smallest median here, reaches "
            f"{format_percent(share)} of the measured {measured}"
        )
    if (op_share is not None and op_share < 0.5) or (dispatch_share or 0) >= 0.5:
        return "overhead", "most of its time is the cost of calls and op dispatches, not its ops"
    return "ops", "its ops take the time, well below the machine's peak and bandwidth"
