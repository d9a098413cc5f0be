"""The eager chapter: one op swept over sizes against the machine's limits, what a call costs
layer by layer, the gradients of log(1 + e^x) and what their custom versions cost, the checks
on each, and the short answer built from them.

Long as its chapter is: every section reads the same sweep and layer timings, in a few small
functions each.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from perfguide.measure import anatomy
from perfguide.measure.limits import MachineLimits
from perfguide.measure.measurement import Measurement, pick
from perfguide.processes.pool import Workers
from perfguide.report.format import format_count, format_factor, format_seconds
from perfguide.report.plots import bandwidth_limit, peak_limit, rate_plot, scaling_plot
from perfguide.report.publishing.answers import Change, Recommendation, measured_here
from perfguide.report.verdicts.claims import Claim, ClaimReport, Faster, exact, takes_at_most
from perfguide.workloads import eager as eg
from perfguide.workloads.base import Workload

#: Measurements by problem size, as a sweep returns them.
BySize = Mapping[int, Sequence[Measurement]]


@dataclasses.dataclass(frozen=True)
class Sweep:
    """``workload`` timed at each of ``sizes``: in full at the sizes whose times ``checks``
    (by size) read, quickly elsewhere, where only the curve's shape matters."""

    workload: Workload
    sizes: tuple[int, ...]
    checks: Mapping[int, tuple[Faster, ...]]

    def run(self, workers: Workers) -> dict[int, list[Measurement]]:
        """Every variant at each size, by size."""
        return {
            size: workers.run(
                self.workload,
                size=size,
                settle=self.checks.get(size, ()),
                quick=size not in self.checks,
            )
            for size in self.sizes
        }

    def claims(self, by_size: BySize) -> list[Claim]:
        """The checks, each judged on the times at its size."""
        return [
            check.check(by_size[size]) for size, checks in self.checks.items() for check in checks
        ]


def every_size(by_size: BySize) -> list[Measurement]:
    """A sweep's measurements in one list, size after size."""
    return [m for measured in by_size.values() for m in measured]


#: x + x from one element to ten million, and square products of side 1 to 1024.
ADD_SIZES = tuple(10**k for k in range(8))
MATMUL_SIZES = tuple(4**k for k in range(0, 12, 2))
SMALL_ADD = Faster("numpy", "eager", by=10)
LARGE_ADD = takes_at_most("eager", "numpy", 2)
LARGE_MATMUL = takes_at_most("eager", "numpy", 1.5)
#: Bulatov's figures: eager within 5x of a peer on small O(n) ops, within 20 % on large products.
PEER_SMALL = tuple(takes_at_most("eager", peer, 5) for peer in eg.PEERS)
PEER_LARGE = tuple(takes_at_most("eager", peer, 1.5) for peer in eg.PEERS)
ADD_SWEEP = Sweep(
    eg.ADD, ADD_SIZES, {ADD_SIZES[0]: (SMALL_ADD, *PEER_SMALL), ADD_SIZES[-1]: (LARGE_ADD,)}
)
MATMUL_SWEEP = Sweep(eg.MATMUL, MATMUL_SIZES, {MATMUL_SIZES[-1]: (LARGE_MATMUL, *PEER_LARGE)})
NO_PEERS = (
    "SKIPPED: PyTorch and JAX are not installed where this page was built, so there are\n"
    "no claims about them. Install torch and jax beside TensorFlow and rerun to see them."
)
#: x + x reads n floats and writes n: bytes moved per element.
ADD_BYTES_PER_ELEMENT = 8
#: NumPy's add into fresh memory and into an array made once, beside eager's.
FRESH_MEMORY_VARIANTS = ("numpy", "numpy-preallocated", "eager")
FRESH_MEMORY = Faster("numpy-preallocated", "numpy", by=1.5)


def add_bandwidth_share(m: Measurement, machine: MachineLimits) -> float:
    """The share of the memory bandwidth an x + x of ``m`` uses."""
    return machine.bandwidth_share(ADD_BYTES_PER_ELEMENT * m.size, m.median_s)


def matmul_peak_share(m: Measurement, machine: MachineLimits) -> float:
    """The share of the peak a square product of ``m`` reaches."""
    return machine.compute_share(eg.matmul_flops(m.size), m.median_s)


def _two_panels() -> tuple[Axes, Axes]:
    """Side by side, x + x on the left and the product on the right."""
    # Wide enough for each panel's legend below it.
    _, (add_ax, matmul_ax) = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
    return add_ax, matmul_ax


def time_plots(add: BySize, matmul: BySize) -> tuple[Axes, Axes]:
    """Time per op against size, x + x beside the product."""
    add_ax, matmul_ax = _two_panels()
    scaling_plot(every_size(add), eg.ADD.size_name, ax=add_ax)
    add_ax.set_title("x + x")
    scaling_plot(every_size(matmul), eg.MATMUL.size_name, ax=matmul_ax)
    matmul_ax.set_title("x @ x (square)")
    return add_ax, matmul_ax


def rate_plots(add: BySize, matmul: BySize, machine: MachineLimits) -> tuple[Axes, Axes]:
    """Bytes per second of x + x against the memory bandwidth, beside operations per second of
    the product against the peak."""
    add_ax, matmul_ax = _two_panels()
    rate_plot(
        every_size(add),
        eg.ADD.size_name,
        lambda m: ADD_BYTES_PER_ELEMENT * m.size,
        bandwidth_limit(machine),
        ax=add_ax,
    )
    add_ax.set_title("x + x: bytes per second")
    rate_plot(
        every_size(matmul),
        eg.MATMUL.size_name,
        lambda m: eg.matmul_flops(m.size),
        peak_limit(machine),
        ax=matmul_ax,
    )
    matmul_ax.set_title("x @ x: operations per second")
    return add_ax, matmul_ax


def _time(m: Measurement) -> str:
    return f"{format_seconds(m.median_s):>9s}"


def largest_shares(add: BySize, matmul: BySize, machine: MachineLimits) -> str:
    """Each variant's time at the largest size of each sweep and its share of the limit that
    bounds it (x + x the bandwidth, the product the peak), a line each."""
    adds = [
        f"x + x,  {m.label:6s} {_time(m)}: {add_bandwidth_share(m, machine):6.1%} of bandwidth"
        for m in add[ADD_SIZES[-1]]
    ]
    products = [
        f"x @ x,  {m.label:6s} {_time(m)}: {matmul_peak_share(m, machine):6.1%} of peak"
        for m in matmul[MATMUL_SIZES[-1]]
    ]
    return "\n".join(adds + products)


def fresh_memory(largest_add: Sequence[Measurement], machine: MachineLimits) -> str:
    """:data:`FRESH_MEMORY_VARIANTS`' times and shares of the bandwidth, a line each."""
    return "\n".join(
        f"{m.label:19s} {_time(m)}  {add_bandwidth_share(m, machine):6.1%} of bandwidth"
        for m in pick(largest_add, *FRESH_MEMORY_VARIANTS)
    )


def product_kernels(largest_matmul: Sequence[Measurement], machine: MachineLimits) -> str:
    """NumPy's and eager's times and shares of the peak on the largest product, a line each."""
    return "\n".join(
        f"{m.label:6s} {_time(m)}  {matmul_peak_share(m, machine):6.1%} of the peak"
        for m in pick(largest_matmul, "numpy", "eager")
    )


#: The chain of small ops in one tf.function against eagerly.
CHAIN = Faster("tf-function", "eager")


@dataclasses.dataclass(frozen=True)
class InWords:
    """``faster``, its claim stated in the reader's words, and with ``effect`` (worked out from
    the measurements) as its effect where given."""

    faster: Faster
    statement: str
    effect: Callable[[Sequence[Measurement]], str] | None = None

    @property
    def labels(self) -> tuple[str, str]:
        return self.faster.labels

    def check(self, measurements: Sequence[Measurement]) -> Claim:
        claim = self.faster.check(measurements)
        return claim.restated(self.statement, self.effect(measurements) if self.effect else "")


#: The calls that do nothing: a tf.function call against an eager op.
FUNCTION_COSTS_MORE = InWords(
    Faster("eager-identity", "tf-function"),
    "a trivial tf.function call costs more than a trivial eager op",
)


def call_costs(
    calls: Sequence[Measurement], largest_matmul: Sequence[Measurement], timer_floor_s: float
) -> str:
    """An eager op's and a tf.function call's cost in Python calls, the timer's own cost, and
    the eager op's cost beside the gap between eager and NumPy on the largest product."""
    python_call, op, function = pick(calls, "python-function", "eager-identity", "tf-function")
    numpy_mm, eager_mm = pick(largest_matmul, "numpy", "eager")
    gap = eager_mm.median_s - numpy_mm.median_s
    return (
        f"one eager op costs {format_factor(op.median_s / python_call.median_s)} a Python call, "
        f"one tf.function call {format_factor(function.median_s / python_call.median_s)}\n"
        f"timer's own cost per call (a call doing nothing): {format_seconds(timer_floor_s)}\n"
        f"the eager op's fixed cost is {op.median_s / gap:.2%} of the gap between eager and NumPy "
        f"on the product of side {int(np.sqrt(eager_mm.size))}"
    )


def runtime_share(function_layers: Sequence[Measurement]) -> float:
    """The share of a trivial tf.function call spent in the runtime's execute."""
    total, runtime = pick(function_layers, "tf-function", "runtime-execute")
    return runtime.median_s / total.median_s


def _in_the_runtime(function_layers: Sequence[Measurement]) -> str:
    return f"{runtime_share(function_layers):.0%} of the call in the runtime"


CONCRETE = Faster("concrete-function", "tf-function")
#: The checks on the layers of a tf.function call. Under half the call in the runtime: the
#: runtime's part at least twice as fast as the call.
LAYER_CHECKS = (
    CONCRETE,
    InWords(
        Faster("runtime-execute", "tf-function", by=2),
        "most of a trivial tf.function call is spent in Python, not in the runtime",
        _in_the_runtime,
    ),
)


def python_calls_per_layer() -> dict[str, float]:
    """Python function calls per call of ``tf.identity``, of a ``tf.function`` of it, and of
    that function's concrete function, on the layer workloads' input (counted here, with
    cProfile)."""
    x = tf.constant(eg.make_vector(eg.OP_LAYERS.default_size))
    traced = tf.function(eg.tf_identity)
    return {
        "public-api": anatomy.python_calls(tf.identity, x),
        "tf-function": anatomy.python_calls(traced, x),
        "concrete-function": anatomy.python_calls(traced.get_concrete_function(x), x),
    }


def layer_times(layers: Sequence[Measurement], order: Sequence[str]) -> list[float]:
    """Each layer's own time (its median minus the next inner layer's), outermost first."""
    medians = [m.median_s for m in pick(layers, *order)]
    return [outer - inner for outer, inner in zip(medians, medians[1:], strict=False)] + [
        medians[-1]
    ]


def layer_bars(function_layers: Sequence[Measurement], op_layers: Sequence[Measurement]) -> Figure:
    """A tf.function call above an eager op, each a bar split into what each layer adds."""
    fig, axes = plt.subplots(2, 1, figsize=(8, 3.2), layout="constrained")
    bars = [
        ("one tf.function call", function_layers, anatomy.FUNCTION_LAYERS),
        ("one eager op", op_layers, anatomy.OP_LAYERS),
    ]
    for ax, (name, layers, order) in zip(axes, bars, strict=True):
        left = 0.0
        for color, (layer, seconds) in enumerate(
            zip(order, layer_times(layers, order), strict=True)
        ):
            ax.barh(0, seconds * 1e6, left=left * 1e6, color=f"C{color}")
            ax.text((left + seconds / 2) * 1e6, 0, layer, ha="center", va="center", fontsize=8)
            left += seconds
        ax.set_yticks([])
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("µs per call (median), split by layer")
    return fig


def layer_split(
    function_layers: Sequence[Measurement],
    op_layers: Sequence[Measurement],
    python_calls: Mapping[str, float],
) -> str:
    """How much of a tf.function call is the runtime and of an eager op the C fast path, with
    the Python function calls each makes (:func:`python_calls_per_layer`)."""
    share = runtime_share(function_layers)
    op_total, op_fast_path = pick(op_layers, "public-api", "fast-path")
    return (
        f"tf.function call: {share:.0%} in the runtime's execute, {1 - share:.0%} in Python "
        f"layers ({python_calls['tf-function']:.0f} Python function calls per call)\n"
        f"eager op: {op_fast_path.median_s / op_total.median_s:.0%} from the C fast path on "
        f"({python_calls['public-api']:.0f} Python function calls per tf.identity)\n"
        f"calling the concrete function directly: {python_calls['concrete-function']:.0f} "
        "Python function calls per call"
    )


#: The gradient of the small network inside a tf.function against eagerly.
GRAPH_GRADIENT = Faster("tf-function-tape", "eager-tape")
#: Relative error below this everywhere is float32 precision.
FLOAT32_PRECISION = 1e-6
#: Where the gradients of log(1 + e^x) are compared: x from -80 to 120, at 801 points.
GRADIENT_XS = np.linspace(-80, 120, 801).astype(np.float32)


@dataclasses.dataclass(frozen=True)
class GradientErrors:
    """Each version's relative error of d/dx log(1 + e^x) in float32 (against float64), at
    ``x``; NaN where its gradient is not a number."""

    x: np.ndarray
    by_version: Mapping[str, np.ndarray]

    def worst(self, version: str) -> float:
        """The largest error (NaN if any is NaN)."""
        return float(np.max(self.by_version[version]))

    def worst_x(self, version: str) -> float:
        """Where the largest error (NaN aside) is."""
        return float(self.x[np.nanargmax(self.by_version[version])])


def gradient_errors(x: np.ndarray = GRADIENT_XS) -> GradientErrors:
    """:class:`GradientErrors` of the three versions of :data:`~perfguide.workloads.eager.LOG1PEXP`,
    computed eagerly here."""
    tensor = tf.constant(x)
    reference = eg.sigmoid_float64(x)
    return GradientErrors(
        x,
        {
            name: np.abs(eg.value_and_gradient(fn, tensor)[1].numpy() / reference - 1)
            for name, fn in eg.LOG1PEXP.items()
        },
    )


def gradient_error_plot(errors: GradientErrors) -> Axes:
    """Each version's relative error against x on a log axis, NaN drawn at the top."""
    _, ax = plt.subplots(layout="constrained")
    for name, error in errors.by_version.items():
        ax.semilogy(errors.x, np.where(np.isnan(error), 10.0, np.maximum(error, 1e-9)), label=name)
    ax.axhline(FLOAT32_PRECISION, color="gray", linestyle="--", label="float32 precision (1e-6)")
    ax.set_ylim(1e-9, 30)
    ax.set_xlabel("x")
    ax.set_ylabel("relative error of the gradient\n(log scale; NaN drawn at 10)")
    ax.set_title("d/dx log(1 + e^x) in float32 against float64")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=2, frameon=False)
    return ax


def stable_claim(errors: GradientErrors) -> Claim:
    """That the stable custom gradient is finite and float32-precise everywhere."""
    worst = errors.worst("stable-custom-gradient")
    return exact(
        "stable-custom-gradient is finite and float32-precise everywhere",
        worst < FLOAT32_PRECISION,
        f"largest relative error {worst:.1e}",
        effect=f"largest error {worst:.1e}, no NaN",
    )


def accuracy_claims(errors: GradientErrors) -> ClaimReport:
    """Where each version's gradient is NaN, finite, or float32-precise."""
    naive_nan = np.isnan(errors.by_version["naive"])
    custom, custom_x = errors.worst("custom-gradient"), errors.worst_x("custom-gradient")
    return ClaimReport(
        [
            exact(
                "the naive gradient is NaN for large x",
                bool(naive_nan.any()),
                f"NaN at {int(naive_nan.sum())} of {errors.x.size} points, "
                f"from x = {errors.x[naive_nan].min():.1f}"
                if naive_nan.any()
                else "no NaN",
            ),
            exact(
                "the article's custom-gradient is finite everywhere",
                bool(np.isfinite(errors.by_version["custom-gradient"]).all()),
                f"largest relative error {custom:.1e}",
            ),
            exact(
                "the article's custom-gradient loses float32 precision for very negative x",
                custom >= FLOAT32_PRECISION and custom_x < 0,
                f"largest relative error {custom:.1e}, at x = {custom_x:.1f}",
            ),
            stable_claim(errors),
        ]
    )


#: What the article says of its custom gradient, and what the stable one may cost.
CHEAPER = Faster("custom-gradient", "naive")
STABLE_COST = takes_at_most("stable-custom-gradient", "naive", 2)
LOG1PEXP_CHECKS = (CHEAPER, STABLE_COST)


def op_counts() -> dict[str, dict[str, int]]:
    """The ops each version runs for one value and gradient on the timed input, by type."""
    x = tf.constant(10 * eg.make_vector(eg.LOG1PEXP_WORKLOAD.default_size))
    return {
        name: eg.graph_op_counts(functools.partial(eg.value_and_gradient, fn), x)
        for name, fn in eg.LOG1PEXP.items()
    }


def predicted_costs(
    counts: Mapping[str, Mapping[str, int]],
    log1pexp: Sequence[Measurement],
    calls: Sequence[Measurement],
) -> str:
    """Each version's ops, and its extra ops over the naive version's priced at the median eager
    op of ``calls`` beside its measured extra time, two lines each."""
    (op,) = pick(calls, "eager-identity")
    (naive,) = pick(log1pexp, "naive")
    lines = []
    for name, by_type in counts.items():
        total = sum(by_type.values())
        extra = total - sum(counts["naive"].values())
        measured = pick(log1pexp, name)[0].median_s - naive.median_s
        lines += [
            f"{name:23s} {total:3d} ops; vs naive {extra:+d} ops ≈ "
            f"{extra * op.median_s * 1e6:+6.0f} µs predicted, {measured * 1e6:+6.0f} µs measured",
            f"{'':23s} {', '.join(f'{k} {v}' for k, v in sorted(by_type.items()))}",
        ]
    return "\n".join(lines)


#: Where the second derivatives are compared: 41 points in [-10, 10].
SECOND_DERIVATIVE_XS = np.linspace(-10, 10, 41).astype(np.float32)


def second_derivative_claims(x: np.ndarray = SECOND_DERIVATIVE_XS) -> ClaimReport:
    """That nested tapes give each version's second derivative to 1e-6 at ``x``."""
    s = eg.sigmoid_float64(x)
    errors = {
        name: float(np.max(np.abs(eg.second_derivative(fn, tf.constant(x)).numpy() - s * (1 - s))))
        for name, fn in eg.LOG1PEXP.items()
    }
    return ClaimReport(
        [
            exact(
                f"nested tapes give {name}'s second derivative to 1e-6",
                error < 1e-6,
                f"largest absolute error {error:.1e}",
            )
            for name, error in errors.items()
        ]
    )


def _where_overhead_fades(add: BySize) -> str:
    """Whether eager x + x kept within twice NumPy's time at the largest size, as the page's own
    claim there says (the sizes between are timed briefly, for the curve, and judged nowhere)."""
    largest = ADD_SIZES[-1]
    claim = LARGE_ADD.check(add[largest])
    outcome = {
        True: "on large arrays the fixed cost fades",
        False: "on large arrays it does not fade to within twice NumPy's time",
        None: "whether it fades to within twice NumPy's time on large arrays was too close to call",
    }[claim.held]
    return f"{outcome}: at {format_count(largest)} elements, {measured_here(claim)}"


def answer_sentences(
    add: BySize,
    function_layers: Sequence[Measurement],
    counts: Mapping[str, Mapping[str, int]],
) -> str:
    """The short answer's sentences: an eager op's fixed cost and where it fades, a tf.function
    call's cost and its Python share (both from the layers' run), and the custom gradient's ops
    (:func:`op_counts`)."""
    smallest = add[ADD_SIZES[0]]
    (eager_one,) = pick(smallest, "eager")
    (function,) = pick(function_layers, "tf-function")
    ops = {name: sum(by_type.values()) for name, by_type in counts.items()}
    return (
        f"Each eager op has a fixed cost before it computes anything: x + x on one element took "
        f"{format_seconds(eager_one.median_s)} eagerly, and {SMALL_ADD.check(smallest).stated}: "
        f"on small arrays the fixed cost is the time; {_where_overhead_fades(add)}. A "
        "tf.function call costs "
        f"{format_seconds(function.median_s)} to enter, "
        f"{1 - runtime_share(function_layers):.0%} of it in Python before the runtime starts, "
        "so it pays off only when it replaces several eager ops. The article's custom gradient "
        f"runs {ops['custom-gradient']} ops to the naive version's {ops['naive']}: its value is "
        "stability, not speed."
    )


def recommendations(
    chain: ClaimReport, gradient: ClaimReport, layers: ClaimReport, errors: GradientErrors
) -> list[Recommendation]:
    """The short answer's advice: ``chain``, ``gradient`` and ``layers`` are :data:`CHAIN`,
    :data:`GRAPH_GRADIENT` and :data:`LAYER_CHECKS` checked (:meth:`ClaimReport.of`)."""
    return [
        Recommendation(
            "Put chains of small ops in one tf.function",
            chain[CHAIN],
            Change("tf.function", "on", work="a chain of small ops"),
            recipe="wrap-a-chain-of-small-ops-in-tf-function",
        ),
        Recommendation(
            "Compute gradients inside tf.function",
            gradient[GRAPH_GRADIENT],
            Change("the GradientTape", "inside the tf.function", work="a gradient step"),
            recipe="compute-a-gradient-inside-tf-function",
        ),
        Recommendation(
            "On a hot path, call the concrete function of a tf.function",
            layers[CONCRETE],
            Change("how a tf.function is called", "its concrete function", work="a hot path"),
            recipe="call-the-concrete-function-on-a-hot-path",
        ),
        Recommendation(
            "Give log(1 + e^x) a stable custom gradient",
            stable_claim(errors),
            Change("log(1 + e^x)'s gradient", "a stable custom gradient"),
            recipe="a-stable-custom-gradient-for-log-1-e-x",
        ),
    ]
