"""The timing chapter: each timing mistake committed in fresh processes, what it reports beside
what the harness measures, the per-process checks on each, and the short answer built from
them."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from perfguide.measure import stats
from perfguide.measure.measurement import Measurement, pick
from perfguide.measure.runner import run
from perfguide.processes.pool import Workers
from perfguide.processes.recording import recorded
from perfguide.report.format import format_seconds, format_speedup
from perfguide.report.publishing.answers import Change, Recommendation, ShortAnswer
from perfguide.report.verdicts.claims import Claim, ClaimReport, Faster, per_process
from perfguide.workloads import eager
from perfguide.workloads import timing as tm

#: What one fresh process returned from a function of :mod:`perfguide.workloads.timing`.
Result = Mapping[str, Any]


def across(workers: Workers, mistake: Callable[..., Result]) -> list[Result]:
    """``mistake`` (a function of :mod:`perfguide.workloads.timing`) run in each of
    ``workers``' fresh processes: one result per process."""
    return workers.call(f"{mistake.__module__}:{mistake.__name__}")


def median_of(results: Sequence[Result], key: str) -> float:
    """The median over the processes of each one's ``key``."""
    return statistics.median(result[key] for result in results)


@dataclasses.dataclass(frozen=True)
class PerProcess:
    """The claim that a ratio each process works out for itself from its result (``ratio``) is
    beyond ``factor``, judged as :func:`~perfguide.report.verdicts.claims.per_process` judges it;
    ``what`` names the ratio, ``subject`` (with its verb) what it is said of."""

    statement: str
    ratio: Callable[[Result], float]
    factor: float
    what: str
    subject: str

    def check(self, results: Sequence[Result]) -> Claim:
        ratios = [self.ratio(result) for result in results]
        return per_process(self.statement, ratios, self.factor, self.what, self.subject)


def quotient(numerator: str, denominator: str) -> Callable[[Result], float]:
    """A process's ``numerator`` over its ``denominator``."""

    def ratio(result: Result) -> float:
        return result[numerator] / result[denominator]

    return ratio


# -- The first call inside the timing -------------------------------------------------------------

FIRST_CALL = PerProcess(
    "timing ten calls from the first overstates a steady call at least 5-fold",
    quotient("naive_s", "steady_s"),
    5,
    "a steady call's time",
    "ten calls timed from the first read",
)


def first_call_lines(first_calls: Sequence[Result]) -> str:
    """Each process's first call, ten calls from the first, a steady call, and what the ten
    read against the steady call, a line a process."""
    return "\n".join(
        f"first call {format_seconds(r['first_call_s']):>9s}, ten calls from the first "
        f"{format_seconds(r['naive_s']):>9s} a call, steady {format_seconds(r['steady_s']):>9s}"
        f": reads {format_speedup(r['steady_s'] / r['naive_s'])}"
        for r in first_calls
    )


# -- One call at a time ---------------------------------------------------------------------------


def spread(samples: Sequence[float]) -> float:
    """The middle 90 % of ``samples``, as a share of their median."""
    ventiles = statistics.quantiles(samples, n=20)
    return (ventiles[-1] - ventiles[0]) / statistics.median(samples)


#: A process's timings of one call at a time, by the clock that took them, and its blocks'.
TIMINGS: dict[str, Callable[[Result], Sequence[float]]] = {
    "single calls, time.time()": lambda r: r["single_s"]["time.time"],
    "single calls, time.perf_counter()": lambda r: r["single_s"]["time.perf_counter"],
    "calibrated blocks": lambda r: r["block_s"],
}
SINGLE_CALLS, BLOCKS = "single calls, time.perf_counter()", "calibrated blocks"


def _spreads(single: Sequence[Result], timings: str) -> list[float]:
    """Each process's spread of ``timings`` (a key of :data:`TIMINGS`)."""
    return [spread(TIMINGS[timings](r)) for r in single]


def _single_over_blocks(result: Result) -> float:
    return spread(TIMINGS[SINGLE_CALLS](result)) / spread(TIMINGS[BLOCKS](result))


SINGLE_CALL = PerProcess(
    "single-call timings spread wider than calibrated blocks",
    _single_over_blocks,
    1,
    "the blocks' spread",
    "single calls spread",
)


def clock_spreads(single: Sequence[Result]) -> str:
    """The clocks' resolution, then how widely each way of timing spreads in each process."""
    resolution = single[0]["resolution_s"]
    lines = [f"clock resolution: {', '.join(f'{k} {v:.1e} s' for k, v in resolution.items())}"]
    for timings in TIMINGS:
        spreads = ", ".join(f"{v:.0%}" for v in _spreads(single, timings))
        lines.append(f"{timings:35s} middle 90 % spans {spreads} of the median")
    return "\n".join(lines)


def single_call_plot(single: Sequence[Result]) -> Axes:
    """The first process's timings of one call at a time and of calibrated blocks, as
    histograms."""
    first = single[0]
    _, ax = plt.subplots(layout="constrained")
    ax.hist(
        [s * 1e6 for s in TIMINGS[SINGLE_CALLS](first)],
        bins=40,
        alpha=0.6,
        label="one call at a time (perf_counter)",
    )
    ax.hist([s * 1e6 for s in TIMINGS[BLOCKS](first)], bins=10, alpha=0.9, label=BLOCKS)
    ax.set_xlabel("time per call (µs), first process")
    ax.set_ylabel("samples")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    ax.set_title("The same step, timed one call at a time and in blocks")
    return ax


def spread_summary(single: Sequence[Result]) -> str:
    """The blocks' and single calls' spreads, medians over the processes, and the claim's
    process-by-process ratio of the two."""
    blocks = statistics.median(_spreads(single, BLOCKS))
    calls = statistics.median(_spreads(single, SINGLE_CALLS))
    return (
        f"blocks: middle 90 % spans {blocks:.0%} of their median; "
        f"single calls: {calls:.0%} (medians over the processes); "
        f"process by process, single calls spread {SINGLE_CALL.check(single).quoted}"
    )


# -- Work that has not run when the clock stops ---------------------------------------------------

UNRUN = PerProcess(
    "timing where a tf.data pipeline is built misses most of its time",
    quotient("run_s", "built_s"),
    1,
    "the build's time",
    "iterating the pipeline took",
)


def pipeline_times(pipelines: Sequence[Result]) -> str:
    """Building and iterating the pipeline, medians over the processes, and the claim's ratio
    of the two, each process's own (the medians' quotient is not it)."""
    built, ran = median_of(pipelines, "built_s"), median_of(pipelines, "run_s")
    return (
        f"building the pipeline {format_seconds(built)}, iterating it {format_seconds(ran)} "
        f"(medians over the processes); iterating took {UNRUN.check(pipelines).quoted}, "
        "process by process"
    )


def tracing_share(pipelines: Sequence[Result]) -> str:
    """Tracing the step alone, and its share of building the pipeline."""
    traced, built = median_of(pipelines, "trace_s"), median_of(pipelines, "built_s")
    return f"{format_seconds(traced)}, {traced / built:.0%} of the build"


# -- A then B, or in turns ------------------------------------------------------------------------

ORDERS = ("sequential", "interleaved")


def b_over_a(result: Result, order: str) -> tuple[float, float, float]:
    """B's time over A's timed in ``order``, with its 95 % interval from the blocks."""
    return stats.blocks_ratio_interval(result[order]["b"], result[order]["a"])


def order_ratios(orders: Sequence[Result]) -> str:
    """B over A, each order, in each process (a line an order)."""
    return "\n".join(
        f"B / A {order:11s} "
        + ", ".join(
            f"{ratio:.3f} ({low:.2f} to {high:.2f})"
            for ratio, low, high in (b_over_a(r, order) for r in orders)
        )
        for order in ORDERS
    )


def further_one_after_the_other(result: Result) -> float:
    """How much further from 1 the ratio timed one after the other lies than the one timed in
    turns (above 1: taking turns came closer). Distances below 0.01 % count as 0.01 %: a ratio
    of two near-zero distances means nothing."""
    sequential, interleaved = (b_over_a(result, order)[0] for order in ORDERS)
    return max(abs(math.log(sequential)), 1e-4) / max(abs(math.log(interleaved)), 1e-4)


ORDER = PerProcess(
    "taking turns brings two timings of the same step closer than timing one after the other",
    further_one_after_the_other,
    1,
    "as far from 1 as the one timed in turns",
    "the ratio timed one after the other lay",
)


# -- One process or several, and what ran in it before --------------------------------------------


def apart(medians: Sequence[float]) -> float:
    """How far apart the processes' medians lie: the largest over the smallest, less 1."""
    return max(medians) / min(medians) - 1


def own_intervals(step: Measurement) -> list[tuple[float, float]]:
    """Each process's 95 % interval, from its own blocks alone."""
    return [stats.blocks_interval(blocks) for blocks in step.by_process]


def process_intervals(step: Measurement) -> str:
    """Each process's median with its own interval, how far apart the medians lie, and the
    published median with where the next run lands."""
    lines = [
        f"process median {format_seconds(median)}, its own 95 % interval "
        f"{format_seconds(low)} to {format_seconds(high)}"
        for (low, high), median in zip(own_intervals(step), step.process_median_s, strict=True)
    ]
    low, high = step.interval_s
    lines += [
        f"the processes' medians lie {apart(step.process_median_s):.0%} apart",
        f"published median {format_seconds(step.median_s)}, where the next run lands here "
        f"{format_seconds(low)} to {format_seconds(high)}",
    ]
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class OwnIntervalNarrower:
    """That each process's own interval for the step is narrower than the published one (all
    processes, and this machine's drift between runs): how many times, on the log scale."""

    statement = "one process's own interval is narrower than where the next run lands here"
    label: str = tm.STEP.variants[0]

    def check(self, measurements: Sequence[Measurement]) -> Claim:
        (step,) = pick(measurements, self.label)
        published_low, published_high = step.interval_s
        published = math.log(published_high / published_low)
        narrower = [
            published / max(math.log(high / low), 1e-9) for low, high in own_intervals(step)
        ]
        return per_process(
            self.statement, narrower, 1, "narrower", "one process's own interval was"
        )


FRESH, HERE = "a fresh process", "this page's process"
OWN_INTERVAL = OwnIntervalNarrower()
LEFTOVER = Faster(FRESH, HERE)
#: The checks on the processes: one against several, and a fresh one against this one.
PROCESS_CLAIMS = (OWN_INTERVAL, LEFTOVER)


def time_add_fresh_and_here(workers: Workers, device: str) -> list[Measurement]:
    """One small eager op, ``x + x`` on 1,000 floats, timed in ``workers``' fresh processes and
    in this process (which, in a docs build, has run every chapter before this one), labelled
    :data:`FRESH` and :data:`HERE`."""
    (fresh,) = workers.run(eager.ADD, ["eager"], size=1000)
    (here,) = recorded(
        "this process: eager x + x at 1000",
        lambda: run(eager.ADD, ["eager"], size=1000, device=device),
    )
    return [dataclasses.replace(fresh, label=FRESH), dataclasses.replace(here, label=HERE)]


def add_times(adds: Sequence[Measurement]) -> str:
    fresh, here = pick(adds, FRESH, HERE)
    return (
        f"x + x: {format_seconds(fresh.median_s)} in fresh processes, "
        f"{format_seconds(here.median_s)} in this page's process"
    )


# -- Thread pools still busy ----------------------------------------------------------------------

POOLS = PerProcess(
    "an op timed right after a multi-threaded product runs faster than after the pools go idle",
    quotient("after_idle_s", "right_after_s"),
    1,
    "faster than after idle",
    "an op right after a product was",
)
SLEEP = PerProcess(
    "an op timed after a short sleep, with no product before it, runs slower than right after "
    "the product",
    quotient("after_sleep_s", "right_after_s"),
    1,
    "slower than right after the product",
    "an op after a short sleep was",
)
POOL_CLAIMS = (POOLS, SLEEP)


def pool_times(pools: Sequence[Result]) -> str:
    """The op's time after each thing before it, and steady, medians over the processes."""
    right_after, idle = median_of(pools, "right_after_s"), median_of(pools, "after_idle_s")
    slept, steady = median_of(pools, "after_sleep_s"), median_of(pools, "steady_s")
    return (
        f"x + x right after a 512 x 512 NumPy product {format_seconds(right_after)}, "
        f"after the product and waiting for idle {format_seconds(idle)}, after a sleep alone "
        f"{format_seconds(slept)}; steady, called again and again {format_seconds(steady)}"
    )


def against_steady(pools: Sequence[Result]) -> str:
    """The op's time after each thing before it, in steady calls."""
    steady = median_of(pools, "steady_s")
    right_after, idle, slept = (
        median_of(pools, key) / steady for key in ("right_after_s", "after_idle_s", "after_sleep_s")
    )
    return (
        f"right after the product {right_after:.1f}x, after the wait {idle:.1f}x, "
        f"after the sleep {slept:.1f}x a steady call"
    )


# -- The short answer -----------------------------------------------------------------------------


def short_answer(
    first_call_checks: ClaimReport,
    single_call_checks: ClaimReport,
    pipeline_checks: ClaimReport,
    order_checks: ClaimReport,
    process_checks: ClaimReport,
    pool_checks: ClaimReport,
    step: Measurement,
) -> ShortAnswer:
    """The box atop the page, from each section's checks (each checked by
    :meth:`ClaimReport.of`) and the harness's ``step`` in its fresh processes."""
    first_call, unrun = first_call_checks[FIRST_CALL], pipeline_checks[UNRUN]
    answer = (
        "Because each timing measured something else. Here, with tracing counted as work, ten "
        f"calls timed from the first read {first_call.quoted}; iterating a tf.data pipeline "
        f"took {unrun.quoted}, which a timer around the line that builds it misses; fresh "
        f"processes of the same step landed {apart(step.process_median_s):.0%} apart. Which "
        "habits of a careful timer paid off measurably here:"
    )
    advice = [
        Recommendation(
            "Time the first call apart from the steady calls",
            first_call,
            Change("the first call", "timed apart"),
            recipe="time-the-first-call-apart",
        ),
        Recommendation(
            "Time calibrated blocks of many calls, not one call at a time",
            single_call_checks[SINGLE_CALL],
            Change("what one reading of the clock times", "a calibrated block of calls"),
            recipe="time-steady-calls-not-the-first",
        ),
        Recommendation(
            "Stop the clock only when the work is done: iterate the pipeline (on a GPU, sync "
            "the device too; this machine has none to measure it on)",
            unrun,
            Change("when the clock stops", "after the work is done"),
            recipe="time-a-pipeline-by-iterating-it",
        ),
        Recommendation(
            "Time the variants you compare in turns",
            order_checks[ORDER],
            Change("the order variants are timed in", "in turns"),
        ),
        Recommendation(
            "Time in several fresh processes, not one",
            process_checks[OWN_INTERVAL],
            Change("the processes a time rests on", "several fresh ones"),
        ),
        Recommendation(
            "Time in fresh processes, not in a process that ran other work",
            process_checks[LEFTOVER],
            Change("the process a time is taken in", "a fresh one"),
        ),
        Recommendation(
            "Time every variant in the same state, after the same warm-up: what ran just "
            "before changes a single op's time",
            pool_checks[POOLS],
            Change("the state each variant is timed in", "the same"),
            instead="An op right after a multi-threaded product was not clearly faster or slower",
        ),
    ]
    return ShortAnswer(answer, advice)
