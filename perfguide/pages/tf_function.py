"""The tf.function chapter: its checks on the article's loop, on tracing, retracing, unrolled
loops and loops over rows, the article's scenario, and the short answer built from them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from perfguide.measure.measurement import Measurement, at_size, pick
from perfguide.processes.pool import Workers
from perfguide.report.format import format_seconds
from perfguide.report.plots import scaling_plot
from perfguide.report.publishing.answers import Change, Recommendation, ShortAnswer
from perfguide.report.tables.comparison import first_call_overhead
from perfguide.report.tables.table import Table
from perfguide.report.verdicts.claims import (
    Claim,
    ClaimReport,
    Faster,
    exact,
    per_process,
    takes_at_most,
)
from perfguide.workloads import tf_function as tfn


@dataclasses.dataclass(frozen=True)
class FirstCall:
    """That the first call of ``variant``, which traces, costs at least ``steady_calls``
    steady calls: its first call over its steady median, process by process."""

    variant: str = "tf-function"
    steady_calls: float = 10

    def check(self, measurements: Sequence[Measurement]) -> Claim:
        (m,) = pick(measurements, self.variant)
        return per_process(
            f"the first tf.function call, which traces, costs at least {self.steady_calls:g} "
            "steady calls",
            [f / s for f, s in zip(m.first_calls_s, m.process_median_s, strict=True)],
            self.steady_calls,
            "a steady call",
            "the first call cost",
        )


GRAPH_SPEEDUP = Faster("tf-function", "eager", by=2)
XLA_SPEEDUP = Faster("xla", "eager", by=2)
FIRST_CALL = FirstCall()
#: The debugging switch gives back no speed: eager within 1.5x of the function run eagerly.
RUN_EAGERLY = takes_at_most("eager", "run-eagerly", 1.5)
#: The checks the article's loop is timed until it can tell, and those shown beside its times.
SERIES_SETTLE = (GRAPH_SPEEDUP, XLA_SPEEDUP, RUN_EAGERLY)
SERIES_CHECKS = (GRAPH_SPEEDUP, XLA_SPEEDUP, FIRST_CALL)
#: The article's own timings of its ten calls.
QUOTED = {"eager": "about 0.12 s", "tf-function": "about 0.026 s"}
ARTICLE_CALLS = 10


def articles_scenario(series: Sequence[Measurement]) -> Table:
    """The article's ten calls at each variant's median (the debugging switch aside), beside
    its own figures."""
    rows = [
        [m.label, QUOTED.get(m.label, "not run"), format_seconds(ARTICLE_CALLS * m.median_s)]
        for m in series
        if m.label != "run-eagerly"
    ]
    header = ["variant", "article (quoted)", "this machine (measured)"]
    return Table("ten calls of the 99-product loop", header, rows)


def tracing_claims(
    python_lines: Sequence[str],
    tf_lines: Sequence[str],
    frozen: Mapping[str, tuple[float, float]],
    traces: Mapping[str, int],
    expected_traces: Mapping[str, int],
) -> ClaimReport:
    """What ``print`` and ``tf.print`` wrote over three calls, what a Python number and a
    ``tf.Variable`` gave after they changed (``frozen``, as
    :func:`~perfguide.workloads.tf_function.frozen_global_results` returns it), and each case's
    traces against those expected."""
    number, variable = frozen["Python number"][1], frozen["tf.Variable"][1]
    return ClaimReport(
        [
            exact(
                "print runs once per trace, tf.print on every call",
                (len(python_lines), len(tf_lines)) == (1, 3),
                f"3 calls: print {len(python_lines)} line(s), tf.print {len(tf_lines)}",
            ),
            exact(
                "a Python number is frozen at trace time; a tf.Variable is read every call",
                number == 4.0 and variable == 8.0,
                f"after the change: Python number gives {number:g}, tf.Variable {variable:g}",
            ),
            *(
                exact(
                    f"{case}: {expected} trace(s)",
                    traces[case] == expected,
                    f"{traces[case]} traced",
                )
                for case, expected in expected_traces.items()
            ),
        ]
    )


class SeenRetracing:
    """That the harness saw the Python-argument variant retrace while timed and the tensor
    variant not."""

    def check(self, measurements: Sequence[Measurement]) -> Claim:
        python_arg, tensor_arg = pick(measurements, "python-argument", "tensor-argument")
        return exact(
            "the harness saw the Python-argument variant retrace and the tensor variant not",
            python_arg.retraced and not tensor_arg.retraced,
            f"retraces while timed: {python_arg.retraces} and {tensor_arg.retraces}",
        )


TENSOR_ARGUMENT = Faster("tensor-argument", "python-argument", by=5)
RETRACING_CHECKS = (TENSOR_ARGUMENT, SeenRetracing())

#: The step counts of the loops traced, and the check read at the largest.
LOOP_STEPS = (10, 30, 100, 300)
GRAPH_LOOP = Faster("tf-range", "python-for", by=10)


def trace_loops(workers: Workers) -> list[Measurement]:
    """Both loops traced at each of :data:`LOOP_STEPS`, quickly (tracing is slow at the largest
    counts), and timed until :data:`GRAPH_LOOP` can tell at the largest."""
    return [
        m
        for steps in LOOP_STEPS
        for m in workers.run(
            tfn.TRACING,
            size=steps,
            quick=True,
            settle=[GRAPH_LOOP] if steps == LOOP_STEPS[-1] else (),
        )
    ]


def graph_sizes() -> dict[str, list[int]]:
    """Each loop's graph's operations at each of :data:`LOOP_STEPS`, by loop."""
    return {loop: [tfn.graph_op_count(loop, steps) for steps in LOOP_STEPS] for loop in tfn.LOOPS}


def tracing_plot(tracing: Sequence[Measurement], sizes: Mapping[str, Sequence[int]]) -> Axes:
    """The time to trace each loop beside the size of its graph, against the step count."""
    _, (time_ax, ops_ax) = plt.subplots(1, 2, figsize=(8, 4), layout="constrained")
    scaling_plot(tracing, tfn.TRACING.size_name, ax=time_ax)
    time_ax.set_title("Time to trace")
    for loop, counts in sizes.items():
        ops_ax.loglog(LOOP_STEPS, counts, marker="o", label=loop)
    ops_ax.set_xlabel("loop steps (log scale)")
    ops_ax.set_ylabel("operations in the graph (log scale)")
    ops_ax.set_title("Graph size")
    ops_ax.grid(True, alpha=0.3)
    ops_ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    return ops_ax


def unrolled_loop_claims(
    tracing: Sequence[Measurement], sizes: Mapping[str, Sequence[int]]
) -> ClaimReport:
    """That the unrolled graph grows with the loop and the tf.range graph does not, and
    :data:`GRAPH_LOOP` at the largest step count."""
    unrolled, graph_loop = sizes["python-for"], sizes["tf-range"]
    grows = exact(
        "the unrolled graph grows with the loop; the tf.range graph does not",
        unrolled[-1] > 10 * unrolled[0] and len(set(graph_loop)) == 1,
        f"python-for {unrolled[0]} → {unrolled[-1]} ops, "
        f"tf-range {graph_loop[0]} → {graph_loop[-1]} ops",
    )
    return ClaimReport([grows, GRAPH_LOOP.check(at_size(tracing, LOOP_STEPS[-1]))])


VECTORIZE = Faster("vectorized", "row-loop")


def run_eagerly_times(printed: Sequence[str], series: Sequence[Measurement]) -> str:
    """What ``print`` wrote in three calls run eagerly (``printed``), and the loop's time run
    eagerly beside eager's and the graph's."""
    run_eagerly, eager, graph = pick(series, "run-eagerly", "eager", "tf-function")
    return (
        f"with functions run eagerly, print wrote {len(printed)} line(s) in 3 calls\n"
        f"run eagerly {format_seconds(run_eagerly.median_s)} per call, eager "
        f"{format_seconds(eager.median_s)}, tf.function {format_seconds(graph.median_s)}"
    )


def run_eagerly_claims(printed: Sequence[str], series: Sequence[Measurement]) -> ClaimReport:
    """That a function run eagerly runs its Python every call (``printed`` over three calls),
    and :data:`RUN_EAGERLY`."""
    runs_python = exact(
        "run eagerly, a tf.function runs its Python every call",
        len(printed) == 3,
        f"print wrote {len(printed)} line(s) in 3 calls",
    )
    return ClaimReport([runs_python, RUN_EAGERLY.check(series)])


def short_answer(
    series: Sequence[Measurement],
    series_checks: ClaimReport,
    retracing: ClaimReport,
    tracing: Sequence[Measurement],
    rows: ClaimReport,
) -> ShortAnswer:
    """The box atop the page: ``series_checks``, ``retracing`` and ``rows`` are
    :data:`SERIES_CHECKS`, :data:`RETRACING_CHECKS` and :data:`VECTORIZE` checked
    (:meth:`ClaimReport.of`); ``series`` and ``tracing`` the article's loop and the loops
    traced."""
    (graph,) = pick(series, "tf-function")
    speedup, first_call = series_checks[GRAPH_SPEEDUP], series_checks[FIRST_CALL]
    tensor_argument = retracing[TENSOR_ARGUMENT]
    answer = (
        "A tf.function runs your Python once to trace a graph, then runs only the graph: on the "
        f"article's loop of 99 products, {speedup.stated}. It is slow when it traces: its "
        "first-call overhead was "
        f"{first_call_overhead(graph)} (the first call against a steady one, process by process: "
        f"{first_call.quoted}), and a Python number that changes every call retraces every call "
        f"({tensor_argument.stated}). It is wrong when Python code or "
        "values inside it are expected to run or change on every call."
    )
    advice = [
        Recommendation(
            "Wrap loops of many small ops in tf.function",
            speedup,
            Change("tf.function", "on", work="a loop of many small ops"),
        ),
        Recommendation(
            "Pass values that change between calls as tensors, not Python numbers",
            tensor_argument,
            Change("a value that changes between calls", "a tensor", work="a tf.function"),
            recipe="give-a-tf-function-an-input-signature",
        ),
        Recommendation(
            "Loop with tf.range, not range, inside tf.function when the loop is long",
            GRAPH_LOOP.check(at_size(tracing, LOOP_STEPS[-1])),
            Change("a loop inside tf.function", "tf.range", work="a long loop"),
            recipe="loop-over-tf-range-inside-tf-function",
        ),
        Recommendation(
            "Reduce whole tensors instead of looping over rows",
            rows[VECTORIZE],
            Change("a loop over rows", "one op on the whole tensor"),
        ),
    ]
    return ShortAnswer(answer, advice, articles_scenario(series))
