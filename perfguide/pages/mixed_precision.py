"""The mixed-precision chapter: the claims for this build's kind of CPU, the products and
convolutions in three types, which kernels ran, the bytes and the loss under each policy, and the
short answer built from them.

Long as its chapter is: its claims change with the CPU's kind (bfloat16 and float16 units or
not), and each kind's claims, kernels and advice sit together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from perfguide.measure.limits import MachineLimits
from perfguide.measure.measurement import Measurement, pick
from perfguide.measure.profile import is_onednn
from perfguide.processes.pool import Workers
from perfguide.report.format import format_bytes, format_seconds
from perfguide.report.plots import peak_limit, rate_plot
from perfguide.report.publishing import results
from perfguide.report.publishing.answers import Change, Recommendation, ShortAnswer, measured_here
from perfguide.report.tables.ops import OpTable
from perfguide.report.tables.table import Table
from perfguide.report.verdicts.claims import (
    Claim,
    ClaimReport,
    Faster,
    Judged,
    exact,
    share_of_time,
)
from perfguide.workloads import mixed_precision as mp
from perfguide.workloads.base import Workload
from perfguide.workloads.vectorization import conv_flops, matmul_flops

#: The sides of the square product, and the largest, which the checks read.
SIDES = (128, 512, 2048)
LARGEST = SIDES[-1]
#: The two kernels the claims are stated for.
PRODUCT = f"product, side {LARGEST}"
CONVOLUTION = f"convolution, side {mp.CONVOLUTION.default_size}"
#: What the policies' claims are stated for.
TRAINING_STEP, INFERENCE = "training step", "inference"
#: The policies, as the workloads name them: float32, mixed-bfloat16, mixed-float16.
POLICIES = mp.INFERENCE.variants
#: The training steps profiled.
PROFILED_STEPS = ("float32", "mixed-bfloat16", "mixed-float16", "mixed-bfloat16-xla")
#: The training steps of the loss curves (fewer in a quick run: a mixed_float16 step can take
#: seconds on a CPU without float16 kernels), and how far each policy's last loss may land
#: from float32's.
LOSS_STEPS, QUICK_LOSS_STEPS = 20, 8
LOSS_TOLERANCE = 0.02
#: The side of the product timed on a GPU, a multiple of 8 (for tensor cores) and one not.
GPU_SIDES = (4096, 4095)
NO_GPU = "skipped: this build machine has no GPU that TensorFlow can see"
#: Where the profiler traces go, beside the published measurements.
PROFILE_DIR = "mixed_precision.profile"


#: XLA under mixed_bfloat16, whatever the CPU.
XLA_STEP = Judged(Faster("mixed-bfloat16", "mixed-bfloat16-xla"), said_of=TRAINING_STEP)


@dataclasses.dataclass(frozen=True)
class Cpu:
    """This build's kind of CPU, by its vector ``flags``: which 16-bit types it does arithmetic
    on in hardware, and the page's claims stated for it: a 16-bit type faster than float32
    where the CPU has its instructions, float32 faster where not."""

    flags: tuple[str, ...]

    @classmethod
    def of(cls, env: Mapping[str, object]) -> Cpu:
        """The CPU an environment record (:attr:`Workers.environment`) describes."""
        return cls(tuple(env["cpu_vector_flags"]))

    @property
    def native(self) -> dict[str, bool]:
        return mp.native_types(list(self.flags))

    def has(self, dtype: str) -> str:
        """Whether the CPU "has" or "lacks" ``dtype``'s instructions, as the answer says it."""
        return "has" if self.native[dtype] else "lacks"

    def own_flags(self, dtype: str) -> str:
        """This CPU's flags for ``dtype``'s arithmetic, as the advice names them."""
        return " and ".join(f for f in mp.NATIVE_FLAGS[dtype] if f in self.flags)

    @property
    def measured_on(self) -> str:
        """What the advice for this CPU rests on, and the kind of CPU it leaves untried."""
        untried = (
            ""
            if any(f.startswith("amx") for f in self.flags)
            else "; CPUs with AMX were not measured"
        )
        return f"(measured on its few cores{untried})"

    def faster(self, dtype: str, variant: str = "") -> Faster:
        """``variant`` (``dtype`` unless given) faster than float32 where the CPU has
        ``dtype``'s instructions, float32 faster where not."""
        variant = variant or dtype
        return Faster(variant, "float32") if self.native[dtype] else Faster("float32", variant)

    def kernels(self, kernel: str) -> tuple[Judged, Judged]:
        """The claims on a kernel (:data:`PRODUCT`, :data:`CONVOLUTION`) in each 16-bit type."""
        return Judged(self.faster("bfloat16"), said_of=kernel), Judged(
            self.faster("float16"), said_of=kernel
        )

    @property
    def bfloat16_step(self) -> Judged:
        return Judged(self.faster("bfloat16", "mixed-bfloat16"), said_of=TRAINING_STEP)

    @property
    def float16_step(self) -> Judged:
        return Judged(self.faster("float16", "mixed-float16"), said_of=TRAINING_STEP)

    @property
    def training(self) -> tuple[Judged, Judged, Judged]:
        """The claims on a training step: each mixed policy against float32, and XLA under
        mixed_bfloat16."""
        return self.bfloat16_step, self.float16_step, XLA_STEP

    @property
    def inference(self) -> tuple[Judged]:
        return (Judged(self.faster("bfloat16", "mixed-bfloat16"), said_of=INFERENCE),)

    def __str__(self) -> str:
        return "\n".join(
            f"{dtype:9s} arithmetic in hardware: {'yes' if has else 'no'} "
            f"({' or '.join(mp.NATIVE_FLAGS[dtype])})"
            for dtype, has in self.native.items()
        )


def time_products(workers: Workers, cpu: Cpu) -> dict[int, list[Measurement]]:
    """The product in each type at each of :data:`SIDES`, by side, timed by ``workers``; the
    largest settles the CPU's claims on it."""
    return {
        side: workers.run(
            mp.PRODUCT,
            size=side,
            quick=True,
            settle=cpu.kernels(PRODUCT) if side == LARGEST else [],
        )
        for side in SIDES
    }


def products_plot(products: Mapping[int, Sequence[Measurement]], machine: MachineLimits) -> Axes:
    """Each type's floating-point operations per second against the side, under the measured
    float32 peak."""
    ax = rate_plot(
        [m for measured in products.values() for m in measured],
        mp.PRODUCT.size_name,
        lambda m: matmul_flops(m.size),
        peak_limit(machine),
    )
    ax.set_title("One product, by type")
    return ax


def peak_shares(
    products: Mapping[int, Sequence[Measurement]],
    convolutions: Sequence[Measurement],
    machine: MachineLimits,
) -> Table:
    """Each type's arithmetic per second in the largest product and in the convolution, as a
    share of the measured float32 peak."""

    def shares(measurements: Sequence[Measurement], flops: float) -> list[str]:
        return [
            f"{machine.compute_share(flops, m.median_s):.0%}"
            for m in pick(measurements, *mp.DTYPES)
        ]

    side = mp.CONVOLUTION.default_size
    rows = [
        [PRODUCT, *shares(products[LARGEST], matmul_flops(LARGEST))],
        [CONVOLUTION, *shares(convolutions, conv_flops(side))],
    ]
    return Table(
        "Arithmetic per second, as a share of the measured float32 peak",
        ["kernel", *mp.DTYPES],
        rows,
    )


def kernel_checks(
    cpu: Cpu, products: Mapping[int, Sequence[Measurement]], convolutions: Sequence[Measurement]
) -> ClaimReport:
    """The CPU's claims on the largest product, then on the convolution."""
    on_product = ClaimReport.of(cpu.kernels(PRODUCT), products[LARGEST])
    on_convolution = ClaimReport.of(cpu.kernels(CONVOLUTION), convolutions)
    return ClaimReport(on_product.claims + on_convolution.claims)


def profiles(
    workers: Workers, workload: Workload, size: int, variants: Sequence[str]
) -> dict[str, OpTable]:
    """One profile per variant, by variant, taken in the page's first fresh process after its
    timing; the traces are kept in :data:`PROFILE_DIR` beside the published measurements."""
    logdir = results.measurements_dir() / PROFILE_DIR / workload.name
    return {
        variant: OpTable.from_trace(
            workers.trace(0, workload, variant, size, str(logdir / variant))
        )
        for variant in variants
    }


def is_cast(op_type: str) -> bool:
    return op_type == "Cast"


def which_kernels(what: str, tables: Mapping[str, OpTable]) -> Table:
    """Each variant's slowest op, and the shares of op time in oneDNN's kernels and in casts."""
    rows = [
        [
            variant,
            f"{table.times[0].op} ({table.times[0].share:.0%})",
            f"{table.share(is_onednn):.0%}",
            f"{table.share(is_cast):.0%}",
        ]
        for variant, table in tables.items()
    ]
    header = ["variant", "op that took the most time", "oneDNN kernels", "casts"]
    return Table(f"{what}: its slowest op, and shares of op time", header, rows)


def kernels_in_numbers(steps: Mapping[str, OpTable], training: Sequence[Measurement]) -> str:
    """oneDNN's share under mixed_float16 and the two ops that took the most; oneDNN's share
    under mixed_bfloat16 with XLA, the compiled cluster's, and XLA against float32 alone."""
    float16, xla = steps["mixed-float16"], steps["mixed-bfloat16-xla"]
    slowest = float16.times[:2]
    float32_xla = Faster("float32-xla", "float32").check(training)
    return (
        f"mixed_float16: oneDNN kernels ran {float16.share(is_onednn):.0%} of op time; "
        f"{' and '.join(t.op for t in slowest)} took {sum(t.share for t in slowest):.0%}\n"
        f"mixed_bfloat16 with XLA: oneDNN kernels ran {xla.share(is_onednn):.0%} of op "
        f"time, the compiled cluster {xla.times[0].share:.0%}; in float32 too, "
        f"{measured_here(float32_xla)}"
    )


def cast_checks(steps: Mapping[str, OpTable]) -> ClaimReport:
    """That casts take under 10 % of each mixed policy's step, call by call."""
    return ClaimReport(
        [
            share_of_time(
                "casts take under 10 % of a mixed-precision step's op time",
                steps[policy].share_per_call(is_cast),
                at_most=0.10,
            ).on(policy)
            for policy in ("mixed-bfloat16", "mixed-float16")
        ]
    )


def memory(workers: Workers) -> dict[str, dict[str, int]]:
    """The bytes of the model's weights and of one batch's activations under each policy,
    worked out in the page's first process."""
    return {
        policy: workers.call_in(0, f"{mp.__name__}:memory_bytes", variant=policy)
        for policy in POLICIES
    }


def memory_table(bytes_by_policy: Mapping[str, Mapping[str, int]]) -> Table:
    rows = [
        [policy, format_bytes(b["weights"]), format_bytes(b["activations"])]
        for policy, b in bytes_by_policy.items()
    ]
    return Table(
        f"Bytes of the model's weights and of one batch's activations ({mp.BATCH} images)",
        ["policy", "weights", "activations"],
        rows,
    )


def memory_claim(bytes_by_policy: Mapping[str, Mapping[str, int]]) -> Claim:
    """That a mixed policy about halves the activations' bytes and leaves the weights' as they
    are (bytes worked out from shapes: an exact claim)."""
    float32 = bytes_by_policy["float32"]
    halved = [bytes_by_policy[p]["activations"] / float32["activations"] for p in POLICIES[1:]]
    return exact(
        "a mixed policy about halves the activations and leaves the weights' bytes as they are",
        # Not exactly: the logits stay float32.
        all(abs(share - 0.5) < 0.01 for share in halved)
        and len({b["weights"] for b in bytes_by_policy.values()}) == 1,
        f"activations {', '.join(f'{s:.1%}' for s in halved)} of float32's; weights "
        f"{format_bytes(float32['weights'])} under every policy",
        effect="activations halved",
    )


def loss_curves(workers: Workers) -> dict[str, list[float]]:
    """Each policy's training loss over :data:`LOSS_STEPS` steps (:data:`QUICK_LOSS_STEPS` in a
    quick run) from the same weights on the same batches, in the page's first process."""
    steps = QUICK_LOSS_STEPS if workers.quick else LOSS_STEPS
    return {
        policy: workers.call_in(0, f"{mp.__name__}:losses_after", variant=policy, steps=steps)
        for policy in POLICIES
    }


def loss_plot(curves: Mapping[str, Sequence[float]]) -> Axes:
    _, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    for policy, losses in curves.items():
        ax.plot(range(1, len(losses) + 1), losses, label=policy)
    ax.set(xlabel="training step", ylabel="training loss", title="The loss under each policy")
    ax.legend()
    return ax


def loss_claim(curves: Mapping[str, Sequence[float]]) -> Claim:
    """That every policy's last loss is within :data:`LOSS_TOLERANCE` of float32's (a
    deterministic computation: an exact claim)."""
    final = {policy: losses[-1] for policy, losses in curves.items()}
    gaps = {p: abs(final[p] / final["float32"] - 1) for p in final if p != "float32"}
    return exact(
        f"every policy's loss after {len(curves['float32'])} steps is within "
        f"{LOSS_TOLERANCE:.0%} of float32's",
        max(gaps.values()) <= LOSS_TOLERANCE,
        f"float32 {final['float32']:.4f} (from {curves['float32'][0]:.4f}); "
        + ", ".join(f"{p} {final[p]:.4f} ({gap:.2%} apart)" for p, gap in gaps.items()),
        effect=f"at most {max(gaps.values()):.2%} apart",
    )


def products_on_gpu() -> list[Measurement]:
    """The product in each type on the GPU at each of :data:`GPU_SIDES`, in fresh processes of
    its own."""
    with Workers(device="gpu") as gpu:
        return [m for side in GPU_SIDES for m in gpu.run(mp.PRODUCT, size=side, quick=True)]


def issue_scenario(training: Sequence[Measurement]) -> Table:
    """tensorflow/tensorflow#45441's epoch in float32 and mixed_float16, beside a step here."""
    float32, float16 = pick(training, "float32", "mixed-float16")
    slower = Faster("mixed-float16", "float32").check(training).effect
    return Table(
        "mixed_float16 on a CPU: tensorflow/tensorflow#45441's epoch, and a step here",
        ["where", "float32", "mixed_float16"],
        [
            ["their CPU (their figures)", "3 s", "187 s (62x slower)"],
            [
                "this build's CPU",
                format_seconds(float32.median_s),
                f"{format_seconds(float16.median_s)} ({slower})",
            ],
        ],
    )


def _answer(cpu: Cpu, steps: ClaimReport, float16_ops: OpTable) -> str:
    bfloat16_step, float16_step = (steps[c].stated for c in (cpu.bfloat16_step, cpu.float16_step))
    top = float16_ops.times[0]
    kernel = "oneDNN's" if is_onednn(top.op) else "TensorFlow's generic"
    return (
        f"Because the CPU decides. This one {cpu.has('bfloat16')} bfloat16 instructions and "
        f"{cpu.has('float16')} float16 ones. {bfloat16_step}; "
        f"{float16_step}. Under mixed_float16 oneDNN's kernels ran "
        f"{float16_ops.share(is_onednn):.0%} of the op time and {kernel} {top.op} took the most "
        f"({top.share:.0%}). {_why_float16(cpu, steps, is_onednn(top.op))}The weights stay "
        "float32 under every policy; the activations' bytes, worked out from their shapes, "
        "halve (what a training process holds at its peak is measured in the memory chapter)."
    )


def _why_float16(cpu: Cpu, steps: ClaimReport, onednn_led: bool) -> str:
    """What the mixed_float16 step's profile says of its speed: generic kernels in the lead, or
    oneDNN's own on a CPU whose float16 instructions did not make the step faster."""
    if not onednn_led:
        return (
            "So its slowest op ran in a kernel written for any type, not one tuned for float16 "
            "on this CPU. "
        )
    if cpu.native["float16"] and steps[cpu.float16_step].held is not True:
        return (
            "This step spent its time in oneDNN's own kernels, so this CPU's float16 "
            "instructions alone did not make mixed_float16 faster. "
        )
    return ""


def short_answer(
    cpu: Cpu,
    steps: ClaimReport,
    float16_ops: OpTable,
    losses: Claim,
    training: Sequence[Measurement],
) -> ShortAnswer:
    """The box atop the page, for this build's kind of CPU: ``steps``, :attr:`Cpu.training`
    checked (:meth:`ClaimReport.of`); ``float16_ops``, the mixed_float16 step's profile;
    ``losses``, :func:`loss_claim`; ``training``, the steps timed."""
    native = cpu.native
    few_cores = cpu.measured_on
    policy_recipe = "choose-the-policy-from-the-cpu-s-flags"
    advice = [
        Recommendation(
            f"Use mixed_bfloat16 on a CPU with {cpu.own_flags('bfloat16')}, as this one "
            + few_cores
            if native["bfloat16"]
            else "Keep float32 on a CPU without bfloat16 instructions (avx512_bf16, amx_bf16), "
            "as this one " + few_cores,
            steps[cpu.bfloat16_step],
            Change(
                "mixed_bfloat16",
                "on" if native["bfloat16"] else "off",
                bfloat16=f"{cpu.has('bfloat16')} bfloat16 instructions",
                goal="speed",
            ),
            recipe=policy_recipe,
        ),
        Recommendation(
            f"Try mixed_float16 with loss scaling on a CPU with {cpu.own_flags('float16')}, as "
            "this one " + few_cores
            if native["float16"]
            else "Avoid mixed_float16 on a CPU without float16 instructions (avx512_fp16, "
            "amx_fp16)",
            steps[cpu.float16_step],
            Change(
                "mixed_float16",
                "on" if native["float16"] else "off",
                float16=f"{cpu.has('float16')} float16 instructions",
                goal="speed",
            ),
            # The recipe keeps float32 where bfloat16 is missing: it never picks float16.
            recipe="" if native["float16"] else policy_recipe,
        ),
        Recommendation(
            "Leave jit_compile off under mixed_bfloat16 on a CPU",
            steps[XLA_STEP],
            Change(
                "jit_compile",
                "False",
                policy="mixed_bfloat16",
                work="a convolutional model's training step",
            ),
        ),
        Recommendation(
            "Compare the loss curve with float32's after switching policy",
            losses,
            Change("the loss curve after switching policy", "compared with float32's"),
            recipe="compare-the-loss-with-float32-s-after-switching-policy",
        ),
    ]
    return ShortAnswer(_answer(cpu, steps, float16_ops), advice, issue_scenario(training))
