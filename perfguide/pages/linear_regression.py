"""The gradient-descent chapter: its checks, the learner's scenario, the sweep over sizes, the
convergence with and without feature scaling, and the short answer built from them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from perfguide.measure.limits import MachineLimits
from perfguide.measure.measurement import Measurement
from perfguide.processes.pool import Workers
from perfguide.report.format import format_count, format_factor, format_seconds
from perfguide.report.plots import bandwidth_limit, rate_plot
from perfguide.report.publishing.answers import Change, Recommendation, ShortAnswer
from perfguide.report.tables.table import Table
from perfguide.report.verdicts.claims import Claim, ClaimReport, Faster, exact, takes_at_most
from perfguide.workloads import linear_regression as lr

NUMPY_VS_SESSION = Faster("numpy", "tf1-session")
NUMPY_VS_EAGER = Faster("numpy", "eager")
WHOLE_LOOP = Faster("tf-function-loop", "tf-function-step", by=5)
COMPILED = Faster("xla-loop", "tf-function-loop")
COMPILED_VS_NUMPY = Faster("xla-loop", "numpy", by=5)
COMPILED_VS_SESSION = Faster("xla-loop", "tf1-session", by=10)
#: The checks on one step at the learner's 1000 points.
STEP_CLAIMS = (
    NUMPY_VS_SESSION,
    NUMPY_VS_EAGER,
    Faster("tf-function-step", "eager"),
    WHOLE_LOOP,
    COMPILED,
    COMPILED_VS_NUMPY,
    COMPILED_VS_SESSION,
)
#: The checks at the sweep's largest size, where each step has the most work.
LARGE_CLAIMS = (takes_at_most("tf-function-step", "numpy", 1.5), Faster("xla-loop", "numpy"))
#: The sizes of the sweep, and the variants it times.
SIZES = tuple(10**k for k in range(2, 8))
SWEEP_VARIANTS = ("numpy", "tf-function-step", "tf-function-loop", "xla-loop")
#: The learner's step count, and their own timings (from their question).
LEARNER_STEPS = 100_000
QUOTED = {"numpy": "about 4 s", "tf1-session": "about 40 s (CPU), 80 s (GPU)"}


#: The check on the learner's GPU, where there is one.
GPU_CLAIMS = (Faster("tf1-session on cpu", "tf1-session on gpu"),)
NO_GPU = (
    "SKIPPED: TensorFlow sees no GPU on the machine that built this page, so there is no\n"
    "CPU/GPU comparison here. Run this script on a machine with a GPU to see it."
)


def cpu_against_gpu() -> list[Measurement]:
    """``tf1-session`` and ``xla-loop`` timed on the CPU and on the GPU, each device in fresh
    processes of its own, labelled with their device ("tf1-session on gpu")."""
    per_device = []
    for device in ("cpu", "gpu"):
        with Workers(device=device) as on_device:
            per_device += [
                dataclasses.replace(m, label=f"{m.label} on {device}")
                for m in on_device.run(lr.WORKLOAD, ["tf1-session", "xla-loop"])
            ]
    return per_device


def learners_scenario(measurements: Sequence[Measurement]) -> Table:
    """The learner's 100 000 steps at each variant's median, beside their own figures."""
    points = format_count(measurements[0].size)
    rows = [
        [m.label, QUOTED.get(m.label, "not run"), format_seconds(LEARNER_STEPS * m.median_s)]
        for m in measurements
    ]
    header = ["variant", "learner's machine (quoted)", "this machine (measured)"]
    return Table(f"{format_count(LEARNER_STEPS)} steps on {points} points", header, rows)


def sweep(workers: Workers, measurements: Sequence[Measurement]) -> dict[int, list[Measurement]]:
    """The sweep's variants at each of :data:`SIZES`, by size: timed by ``workers`` in full
    at the largest size (its checks read it) and quickly elsewhere (only the curve's shape
    matters); at the default size, taken from ``measurements``."""
    default = lr.WORKLOAD.default_size
    by_size = {default: [m for m in measurements if m.label in SWEEP_VARIANTS]}
    for size in SIZES:
        if size != default:
            settle = LARGE_CLAIMS if size == SIZES[-1] else ()
            by_size[size] = workers.run(
                lr.WORKLOAD, SWEEP_VARIANTS, size=size, settle=settle, quick=not settle
            )
    return {size: by_size[size] for size in SIZES}


def bandwidth_plot(by_size: Mapping[int, Sequence[Measurement]], machine: MachineLimits) -> Axes:
    """Data consumed per second (x and y once a step) at each size, under the machine's
    measured memory bandwidth."""
    ax = rate_plot(
        [m for measured in by_size.values() for m in measured],
        lr.WORKLOAD.size_name,
        lambda m: lr.bytes_per_step(m.size),
        bandwidth_limit(machine),
    )
    ax.set_title("Data consumed per second: x and y once per step")
    return ax


def bandwidth_shares(measurements: Sequence[Measurement], machine: MachineLimits) -> str:
    """Each variant's share of the memory bandwidth (x and y read once a step, over its time),
    a line each."""
    return "\n".join(
        f"{m.label:18s} "
        f"{machine.bandwidth_share(lr.bytes_per_step(m.size), m.median_s):6.1%} "
        "of the memory bandwidth"
        for m in measurements
    )


@dataclasses.dataclass(frozen=True)
class Convergence:
    """Gradient descent in float64 on the raw x at the learner's learning rate and on the
    standardized x at a thousand times it: the losses, the iterations each took to converge
    (None if it never did) and the fits against the least-squares optimum."""

    optimum: float
    optimum_ab: tuple[float, float]
    raw_losses: np.ndarray
    scaled_losses: np.ndarray
    recovered_ab: tuple[float, float]

    @property
    def raw_iterations(self) -> int | None:
        return lr.iterations_to_converge(self.raw_losses, self.optimum)

    @property
    def scaled_iterations(self) -> int | None:
        return lr.iterations_to_converge(self.scaled_losses, self.optimum)

    @property
    def converged(self) -> bool:
        return self.raw_iterations is not None and self.scaled_iterations is not None

    @property
    def recovery_error(self) -> float:
        """The largest relative error of the un-scaled fit's a and b."""
        pairs = zip(self.recovered_ab, self.optimum_ab, strict=True)
        return max(abs(r - o) / abs(o) for r, o in pairs)

    def __str__(self) -> str:
        return (
            f"iterations to a loss within {lr.CONVERGED:.1%} of the least-squares loss:\n"
            f"  raw x {self.raw_iterations}, standardized x {self.scaled_iterations}\n"
            f"least squares:          a = {self.optimum_ab[0]:.6f}, b = {self.optimum_ab[1]:.6f}\n"
            f"scaled fit, un-scaled:  a = {self.recovered_ab[0]:.6f}, "
            f"b = {self.recovered_ab[1]:.6f}"
        )


def convergence(points: int, raw_steps: int = 100_000, scaled_steps: int = 1_000) -> Convergence:
    """:class:`Convergence` on the learner's data at ``points`` points."""
    x, y = lr.make_data(points, np.float64)
    optimum_ab = lr.least_squares(x, y)
    raw_losses, _ = lr.loss_curve(x, y, lr.LEARNING_RATE, steps=raw_steps)
    x_scaled, mean, std = lr.standardize(x)
    scaled_losses, scaled_ab = lr.loss_curve(
        x_scaled, y, lr.SCALED_LEARNING_RATE, steps=scaled_steps
    )
    return Convergence(
        lr.mean_squared_error(x, y, *optimum_ab),
        optimum_ab,
        raw_losses,
        scaled_losses,
        lr.unscale(*scaled_ab, mean, std),
    )


def convergence_plot(run: Convergence) -> Axes:
    """The distance to the least-squares loss, iteration by iteration, both ways."""
    _, ax = plt.subplots(layout="constrained")
    for losses, label in [
        (run.raw_losses, f"raw x, learning rate {lr.LEARNING_RATE:g}"),
        (run.scaled_losses, f"standardized x, learning rate {lr.SCALED_LEARNING_RATE:g}"),
    ]:
        ax.loglog(np.arange(1, losses.size + 1), losses / run.optimum - 1, label=label)
    ax.axhline(lr.CONVERGED, color="gray", linestyle="--", label="converged")
    # Below this the curves only show float64 round-off.
    ax.set_ylim(bottom=1e-10)
    ax.set_xlabel("iteration (log scale)")
    ax.set_ylabel("loss / least-squares loss − 1 (log scale)")
    ax.set_title("Convergence with and without feature scaling")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    return ax


def scaling_claim(run: Convergence) -> Claim:
    """Standardizing x cuts the iterations to converge at least 100-fold (an exact count)."""
    raw, scaled = run.raw_iterations, run.scaled_iterations
    return exact(
        "standardizing x cuts the iterations to converge at least 100-fold",
        run.converged and raw >= 100 * scaled,
        f"raw x {raw}, standardized x {scaled} iterations",
        effect=f"{format_factor(raw / scaled)} fewer iterations"
        if run.converged
        else "did not converge",
    )


def convergence_claims(run: Convergence) -> ClaimReport:
    """The scaling claim, and that un-scaling the fit recovers a and b."""
    recovered = exact(
        "un-scaling the standardized fit recovers a and b to 1e-6",
        run.recovery_error < 1e-6,
        f"largest relative error {run.recovery_error:.1e}",
    )
    return ClaimReport([scaling_claim(run), recovered])


def _answer(steps: ClaimReport, run: Convergence) -> str:
    scaling = (
        f"Standardizing x cuts the steps needed from {format_count(run.raw_iterations)} to "
        f"{format_count(run.scaled_iterations)}."
        if run.converged
        else "Gradient descent did not reach the least-squares loss within its steps."
    )
    return (
        f"On {format_count(lr.WORKLOAD.default_size)} points a step is a few microseconds of "
        "arithmetic, and entering TensorFlow once per step is what costs. A whole step: "
        f"{steps[NUMPY_VS_SESSION].stated}; {steps[NUMPY_VS_EAGER].stated}. Run the loop "
        "itself inside the runtime and compile it with XLA, and it is NumPy that pays: "
        f"{steps[COMPILED_VS_NUMPY].stated}. " + scaling
    )


def short_answer(
    steps: ClaimReport, run: Convergence, scenario: Table | None, cores: int
) -> ShortAnswer:
    """The box atop the page: ``steps``, :data:`STEP_CLAIMS` checked (:meth:`ClaimReport.of`);
    ``run``, the convergence both ways; ``scenario``, the learner's; ``cores``, the cores the
    build could use (XLA's gain rests on them)."""
    loop = "loop-inside-one-tf-function-over-tf-range"
    many_steps = "many small steps"
    advice = [
        Recommendation(
            "Run the whole training loop inside one tf.function, not one call per step",
            steps[WHOLE_LOOP],
            Change("the training loop", "inside one tf.function", work=many_steps),
            recipe=loop,
        ),
        Recommendation(
            "Compile the loop with XLA (jit_compile=True)",
            steps[COMPILED],
            Change(
                "jit_compile",
                "True",
                work="a whole training loop of small element-wise steps",
                cpu=f"{cores} cores",
            ),
            recipe=loop,
        ),
        Recommendation(
            "Replace a Session.run per small step with a compiled loop",
            steps[COMPILED_VS_SESSION],
            Change("a Session.run per step", "avoided", work=many_steps),
            recipe=loop,
        ),
        Recommendation(
            "Standardize the features before gradient descent",
            scaling_claim(run),
            Change("the features", "standardized", work="gradient descent"),
            recipe="standardize-x-before-gradient-descent",
        ),
    ]
    return ShortAnswer(_answer(steps, run), advice, scenario)
