"""What bounds the reader's code here, read off the fastest form the reader can use:

- **compute** or **memory**: its arithmetic reaches at least :data:`NEAR_LIMIT` of the machine's
  measured peak FLOP/s, or the bytes it moves that share of the measured bandwidth (the bytes
  counted for the form as it runs: every op's inputs and outputs, or for a kernel XLA fused its
  arguments and results; a share above 100 % means the data stayed in the caches, and is set
  against the measured cache copy rate); how it is called cannot buy much;
- **overhead**: the ops' own time in a profiler trace is under half of a graph call, or an eager
  call's ops, each at the price of a small eager op here, account for most of its time;
- **ops**: the ops take the time, far below the machine's limits (small or poorly fed kernels).

The shares come with their findings: each form's work against the limits, and where a call's
time goes.
"""

from __future__ import annotations

from perfguide.diagnose.parent.evidence import Evidence, Finding
from perfguide.measure.limits import PEAK, PEAK_FLOPS, MachineLimits
from perfguide.measure.measurement import Measurement
from perfguide.report.format import format_count, format_percent, format_seconds

#: A share of the machine's peak or bandwidth from which work counts as bound by it.
NEAR_LIMIT = 0.5
#: Why dispatching a call's ops can price above the whole call.
OPS_DISPATCH_FASTER = (
    ": more than the whole call, so its ops dispatch faster than tf.add, the small op priced here"
)
#: The limit a share of the memory bandwidth above 100 % is set against instead.
CACHE = "cache copy rate"


def _memory_share(limits: MachineLimits, moved: float, seconds: float) -> tuple[float, str]:
    """The share of the measured bandwidth that moving ``moved`` bytes in ``seconds`` uses, and
    the limit it is set against: past the memory bandwidth the data came from the caches, so
    the cache copy rate is the limit (where it was measured)."""
    share = limits.bandwidth_share(moved, seconds)
    if share > 1 and (cached := limits.cache_share(moved, seconds)) is not None:
        return cached, CACHE
    return share, "memory bandwidth"


def limits_finding(evidence: Evidence) -> tuple[Finding | None, float, float, str]:
    """Each form's work per call as shares of the rate of the peak's product timed in turns
    with it (:data:`~perfguide.measure.limits.PEAK`), else of the machine's peak, and of the
    bandwidth, counting the bytes the form moves as it runs;
    the finding, and the fastest form's shares and the memory limit it is set against."""
    flops, unfused, fused = evidence.graph.flops, evidence.graph.bytes, evidence.graph.io_bytes
    if flops is None:
        return None, 0.0, 0.0, ""
    peak = evidence.form(PEAK)
    peak_flops = PEAK_FLOPS / peak.median_s if peak else evidence.limits.peak_flops
    reference = f"{PEAK}'s rate" if peak else "the machine's peak"
    parts, shares = [], {}
    for m in evidence.calls:
        moved = fused if m.label == "jit-compile" and fused is not None else unfused
        memory, limit = _memory_share(evidence.limits, moved, m.median_s)
        shares[m.label] = (flops / m.median_s / peak_flops, memory, limit)
        parts.append(
            f"{m.label} reaches {format_percent(shares[m.label][0])} of {reference} and moves "
            f"{format_count(int(moved))} bytes at {format_percent(memory)} of the measured "
            f"{limit}"
        )
    measured = (
        f"{format_count(int(flops))} FLOPs per call; every op's inputs and outputs are "
        f"{format_count(int(unfused))} bytes, a kernel XLA fuses moves its arguments and "
        f"results ({format_count(int(fused or 0))} bytes); " + "; ".join(parts)
    )
    if any(limit == CACHE for _, _, limit in shares.values()):
        measured += (
            "; more bytes a second than memory delivers means the data stays in the caches "
            "(between ops, or from call to call), so it is set against the cache copy rate"
        )
    compute, memory, limit = shares[evidence.fastest.label]
    finding = Finding("limits", "Work per call against the machine's limits", measured)
    return finding, compute, memory, limit


def overhead_findings(evidence: Evidence) -> tuple[list[Finding], float | None, float | None]:
    """Findings on per-call and per-op costs: the ops' share of a call (profile: of a graph
    call, or of an eager one where no graph can be made) and the eager dispatch their count
    implies."""
    findings, op_share, dispatch_share = [], None, None
    ops, op_s = evidence.graph.ops, evidence.graph.eager_op_s
    eager = evidence.form("eager")
    counted = "counted in a profile of eager calls" if evidence.graph_error else "in the graph"
    if eager is not None and ops:
        dispatch_share = ops * op_s / eager.median_s
        findings.append(
            Finding(
                "eager-dispatch",
                "Ops per call, and what dispatching them eagerly costs",
                f"{format_count(ops)} op{'s' * (ops != 1)} ({counted}); at "
                f"{format_seconds(op_s)} per small eager op here that is "
                f"{format_seconds(ops * op_s)}, {format_percent(dispatch_share)} of an eager "
                f"call ({format_seconds(eager.median_s)})"
                + (OPS_DISPATCH_FASTER if dispatch_share > 1 else ""),
            )
        )
    op_time = evidence.graph.op_time_s
    # The graph's call: a tf.function of the code, or a SavedModel's signature as called.
    graph = evidence.form("tf-function") or evidence.form("signature")
    call = eager if evidence.graph_error else graph
    if call is not None and op_time is not None:
        op_share = op_time / call.median_s
        findings.append(_call_finding(call, op_time, bool(evidence.graph_error)))
    return findings, op_share, dispatch_share


def _call_finding(call: Measurement, op_time: float, eager: bool) -> Finding:
    where = (
        f"the ops run {format_seconds(op_time)} of a {format_seconds(call.median_s)} call "
        f"({format_percent(min(op_time / call.median_s, 1))}, from a profiler trace); the rest"
    )
    if eager:
        rest = format_seconds(max(call.median_s - op_time, 0))
        return Finding(
            "eager-call",
            "Where an eager call's time goes",
            f"{where}, {rest}, is Python and dispatching ops one at a time: the most a graph "
            "could save, were the function traceable",
        )
    return Finding(
        "graph-call",
        "Where a tf.function call's time goes",
        f"{where} is Python before the runtime and the runtime's own work per call",
    )


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
