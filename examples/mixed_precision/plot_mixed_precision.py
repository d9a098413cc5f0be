"""
Why did mixed precision make my model slower?
=============================================

Keras's mixed-precision policies compute in a 16-bit type and keep the weights in float32.
TensorFlow's guide `Mixed precision <https://www.tensorflow.org/guide/mixed_precision>`_ promises
speed-ups on modern GPUs and TPUs; users who tried them on CPUs reported the opposite: an epoch
going from 3 s to 187 s under ``mixed_float16`` (`tensorflow/tensorflow#45441
<https://github.com/tensorflow/tensorflow/issues/45441>`_), ``mixed_bfloat16`` about 500 times
slower (`tensorflow/tensorflow#59050 <https://github.com/tensorflow/tensorflow/issues/59050>`_), a
float16 ``Conv2D`` 20 times slower at some shapes (`tensorflow/tensorflow#48127
<https://github.com/tensorflow/tensorflow/issues/48127>`_). Those figures are the reporters' own. The answer depends on the CPU: whether it has instructions that do
arithmetic in bfloat16 or float16, and whether TensorFlow runs oneDNN's kernels for that type or
its generic ones. Every other number on this page is measured by this page, on the machine that
built it.

.. raw:: html
   :file: ../../_generated/extra/answers/mixed_precision.answer.html

The workloads are in :mod:`perfguide.workloads.mixed_precision`; the tests check that every
type's product and convolution agree with float32's. :doc:`How to read these pages </reading>`
defines the terms of the tables and verdicts.
"""

# %%
# Which kind of CPU built this page
# ---------------------------------
#
# bfloat16 keeps float32's range with fewer mantissa bits; float16 has a smaller range and
# needs loss scaling (the loss multiplied up before the gradients, so that small ones stay
# representable). A CPU does arithmetic on bfloat16 natively with ``avx512_bf16`` or
# ``amx_bf16``, on float16 with ``avx512_fp16`` or ``amx_fp16``; ``python -m perfguide env``
# prints the flags of yours. The claims below are stated for this build's kind of CPU.

# sphinx_gallery_start_ignore
import matplotlib.pyplot as plt

from perfguide.measure.profile import is_onednn
from perfguide.measure.runner import default_device
from perfguide.processes.fresh import tensorflow_instruction_sets
from perfguide.processes.pool import Workers
from perfguide.report import results
from perfguide.report.answers import Change, Recommendation, ShortAnswer, measured_here
from perfguide.report.claims import ClaimReport, Faster, exact, share_of_time
from perfguide.report.compare import Collapsed, Comparison, Table, pick
from perfguide.report.format import format_bytes, format_seconds
from perfguide.report.ops import OpTable
from perfguide.report.plotting import dot_plot, rate_plot
from perfguide.report.show import show
from perfguide.workloads import mixed_precision as mp
from perfguide.workloads.vectorization import conv_flops, matmul_flops

device = default_device()
workers = Workers(device=device, limits=True)
env = workers.environment
machine = workers.machine_limits
native = mp.native_types(env["cpu_vector_flags"])
# This CPU's flags for each type's arithmetic, as the advice names them.
has_flags = {
    dtype: " and ".join(f for f in flags if f in env["cpu_vector_flags"])
    for dtype, flags in mp.NATIVE_FLAGS.items()
}
print(results.where_measured(env, device))
print(
    f"peak float32 {machine.peak_flops / 1e9:.0f} GFLOP/s ({machine.how['peak_flops']})"
)
print(
    f"oneDNN's kernels: {tensorflow_instruction_sets()['onednn_kernels'] or 'not reported'}"
)
for dtype, has in native.items():
    flags = " or ".join(mp.NATIVE_FLAGS[dtype])
    print(f"{dtype:9s} arithmetic in hardware: {'yes' if has else 'no'} ({flags})")
# sphinx_gallery_end_ignore

# %%
# Products and convolutions in three types
# ----------------------------------------
#
# One square product at three sizes and one 3 × 3 convolution (eight 64 × 64 images, 32
# channels in and out), each as a ``tf.function`` whose operands were cast to the type
# (``float32``, ``bfloat16``, ``float16``) before timing, as floating-point operations per
# second against the float32 peak this machine reached.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/mixed_precision.py
#    :pyobject: _product_call
#
# .. literalinclude:: /../perfguide/workloads/mixed_precision.py
#    :pyobject: _convolution_call

# sphinx_gallery_start_ignore
SIDES = [128, 512, 2048]
largest = SIDES[-1]


def kind_claim(dtype: str, variant: str = "") -> Faster:
    """Faster in the 16-bit type where the CPU has its instructions, in float32 where not."""
    variant = variant or dtype
    return Faster(variant, "float32") if native[dtype] else Faster("float32", variant)


kernel_claims = [kind_claim("bfloat16"), kind_claim("float16")]
products = {
    n: workers.run(
        mp.PRODUCT, size=n, quick=True, settle=kernel_claims if n == largest else []
    )
    for n in SIDES
}
convolutions = workers.run(mp.CONVOLUTION, quick=True, settle=kernel_claims)
ax = rate_plot(
    [m for ms in products.values() for m in ms],
    mp.PRODUCT.size_name,
    lambda m: matmul_flops(m.size),
    limit=machine.peak_flops,
    limit_label="peak float32 (measured)",
    rate_unit="FLOP/s",
)
ax.set_title("One product, by type")
plt.show()
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
side = mp.CONVOLUTION.default_size


def peak_shares(measurements, flops):
    return [
        f"{machine.compute_share(flops, m.median_s):.0%}"
        for m in pick(measurements, *mp.DTYPES)
    ]


show(
    Collapsed(
        "Each type's arithmetic per second, as a share of the float32 peak",
        Table(
            "Arithmetic per second, as a share of the measured float32 peak",
            ["kernel", *mp.DTYPES],
            [
                [
                    f"product, side {largest}",
                    *peak_shares(products[largest], matmul_flops(largest)),
                ],
                [
                    f"convolution, side {side}",
                    *peak_shares(convolutions, conv_flops(side)),
                ],
            ],
        ),
    )
)
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
kernel_checked = [
    c.check(products[largest]).on(f"product, side {largest}") for c in kernel_claims
]
kernel_checked += [
    c.check(convolutions).on(f"convolution, side {side}") for c in kernel_claims
]
show(ClaimReport(kernel_checked))
# sphinx_gallery_end_ignore

# %%
# A share of the peak above 100 % is no error: the peak is float32's, and a type with half the
# bits can do twice the operations per instruction. Which kernels ran for each type is in the
# profiles below, taken once all timing on this page is done.

# %%
# A model under each policy
# -------------------------
#
# A small image classifier (two 3 × 3 convolutions of 32 filters, pooling, two dense layers)
# under each policy (``float32``, ``mixed-bfloat16``, ``mixed-float16``), every model from the
# same weights. First inference, one ``predict_on_batch`` of 64 images of 32 × 32 pixels (timed
# before the training, whose many compiled models would otherwise stay in the processes that
# time it):
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/mixed_precision.py
#    :pyobject: build_model
#
# .. literalinclude:: /../perfguide/workloads/mixed_precision.py
#    :pyobject: compiled_model

# sphinx_gallery_start_ignore
inference_claims = [kind_claim("bfloat16", "mixed-bfloat16")]
inference = workers.run(mp.INFERENCE, quick=True, settle=inference_claims)
show(
    Collapsed(
        "Inference under each policy, in full",
        Comparison(inference, baseline="float32"),
    )
)
# sphinx_gallery_end_ignore


# %%
# Then training, one ``train_on_batch`` step at a time under each policy, and each again with
# ``jit_compile=True`` (its name then ends in ``-xla``: ``float32-xla``, ``mixed-bfloat16-xla``,
# ``mixed-float16-xla``). Under ``mixed_float16`` the optimizer scales the loss.

# sphinx_gallery_start_ignore
policy_claims = [
    kind_claim("bfloat16", "mixed-bfloat16"),
    kind_claim("float16", "mixed-float16"),
    Faster("mixed-bfloat16", "mixed-bfloat16-xla"),
]
training = workers.run(mp.TRAINING, quick=True, settle=policy_claims)
show(
    Collapsed(
        "A training step under each policy, with and without XLA, in full",
        Comparison(training, baseline="float32"),
    )
)
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
ax = dot_plot(training)
ax.set_title("One training step of 64 images, by policy")
plt.show()
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
policy_checked = [c.check(training).on("training step") for c in policy_claims]
inference_checked = [c.check(inference).on("inference") for c in inference_claims]
show(ClaimReport(policy_checked + inference_checked))
# sphinx_gallery_end_ignore

# %%
# Which kernels ran
# -----------------
#
# Profiles say which kernels ran: one trace per variant, of five calls, taken in one of the
# page's fresh processes after all the timing above. Kernels whose names start with ``_Mkl`` are
# oneDNN's; others are TensorFlow's generic (Eigen) kernels. First the product of each type:

# sphinx_gallery_start_ignore
logdir = results.measurements_dir() / "mixed_precision.profile"


def traces(workload, size, variants):
    """One profile per variant, taken in the page's first fresh process after its timing."""
    return {
        v: OpTable.from_trace(
            workers.trace(0, workload, v, size, str(logdir / workload.name / v))
        )
        for v in variants
    }


def is_cast(op_type):
    return op_type == "Cast"


def kernels(tables, caption):
    return Table(
        caption,
        ["variant", "op that took the most time", "oneDNN kernels", "casts"],
        [
            [
                variant,
                f"{table.times[0].op} ({table.times[0].share:.0%})",
                f"{table.share(is_onednn):.0%}",
                f"{table.share(is_cast):.0%}",
            ]
            for variant, table in tables.items()
        ],
    )


show(
    Collapsed(
        f"The product of side {largest} in each type: which kernels ran",
        kernels(
            traces(mp.PRODUCT, largest, mp.DTYPES),
            f"The product of side {largest}: its slowest op, and shares of op time",
        ),
    )
)
# sphinx_gallery_end_ignore

# %%
# Then one training step per policy: the op that took the most time, the share of op time in
# oneDNN's kernels, and the share in the casts a mixed policy adds (each layer casts its float32
# weights and inputs to the 16-bit type).

# sphinx_gallery_start_ignore
step_tables = traces(
    mp.TRAINING,
    mp.BATCH,
    ["float32", "mixed-bfloat16", "mixed-float16", "mixed-bfloat16-xla"],
)
show(
    kernels(
        step_tables,
        "One training step per policy: its slowest op, and shares of op time",
    )
)
# sphinx_gallery_end_ignore

# %%
# Where oneDNN's share falls to zero, TensorFlow ran its generic kernels for that type, which on
# this CPU are the slow ones; under XLA the compiled cluster runs XLA's own code instead of
# oneDNN's kernels, whatever the type. In numbers:

# sphinx_gallery_start_ignore
f16_ops, xla_ops = step_tables["mixed-float16"], step_tables["mixed-bfloat16-xla"]
slowest = f16_ops.times[:2]
float32_xla = Faster("float32-xla", "float32").check(training)
print(f"oneDNN by default on this CPU: {'on' if env['onednn_enabled'] else 'off'}")
print(
    f"mixed_float16: oneDNN kernels ran {f16_ops.share(is_onednn):.0%} of op time; "
    f"{' and '.join(t.op for t in slowest)} took {sum(t.share for t in slowest):.0%}"
)
print(
    f"mixed_bfloat16 with XLA: oneDNN kernels ran {xla_ops.share(is_onednn):.0%} of op "
    f"time, the compiled cluster {xla_ops.times[0].share:.0%}; in float32 too, "
    f"{measured_here(float32_xla)}"
)
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
show(
    Collapsed(
        "The ops of the mixed_float16 step, in full", step_tables["mixed-float16"]
    )
)
# sphinx_gallery_end_ignore

# %%
# Whether the casts a mixed policy adds are what slows it:

# sphinx_gallery_start_ignore
show(
    Collapsed(
        "The check on the casts' share of a step",
        ClaimReport(
            [
                share_of_time(
                    "casts take under 10 % of a mixed-precision step's op time",
                    step_tables[v].share_per_call(is_cast),
                    at_most=0.10,
                ).on(v)
                for v in ("mixed-bfloat16", "mixed-float16")
            ]
        ),
    )
)
# sphinx_gallery_end_ignore

# %%
# Memory: weights and activations
# -------------------------------
#
# A mixed policy keeps each variable in float32 and computes on a 16-bit copy, so the weights
# take as many bytes as before; the activations a batch leaves for the backward pass are stored
# in the 16-bit type.

# sphinx_gallery_start_ignore
POLICIES = mp.INFERENCE.variants  # float32, mixed-bfloat16, mixed-float16
memory = {
    p: workers.call_in(0, f"{mp.__name__}:memory_bytes", variant=p) for p in POLICIES
}
show(
    Collapsed(
        "Bytes of weights and activations under each policy",
        Table(
            f"Bytes of the model's weights and of one batch's activations ({mp.BATCH} images)",
            ["policy", "weights", "activations"],
            [
                [p, format_bytes(b["weights"]), format_bytes(b["activations"])]
                for p, b in memory.items()
            ],
        ),
    )
)
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
halved = [
    memory[p]["activations"] / memory["float32"]["activations"] for p in POLICIES[1:]
]
memory_claim = exact(
    "a mixed policy about halves the activations and leaves the weights' bytes as they are",
    # Not exactly: the logits stay float32.
    all(abs(share - 0.5) < 0.01 for share in halved)
    and len({b["weights"] for b in memory.values()}) == 1,
    f"activations {', '.join(f'{s:.1%}' for s in halved)} of float32's; weights "
    f"{format_bytes(memory['float32']['weights'])} under every policy",
    effect="activations halved",
)
show(ClaimReport([memory_claim]))
# sphinx_gallery_end_ignore

# %%
# Same model, same loss?
# ----------------------
#
# Each policy trains from the same weights on the same four batches for 30 steps, in one of the
# page's processes. A policy that changes what the model learns is no speed-up:

# sphinx_gallery_start_ignore
STEPS = 30
curves = {
    p: workers.call_in(0, f"{mp.__name__}:losses_after", variant=p, steps=STEPS)
    for p in POLICIES
}
fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
for policy, losses in curves.items():
    ax.plot(range(1, STEPS + 1), losses, label=policy)
ax.set(
    xlabel="training step", ylabel="training loss", title="The loss under each policy"
)
ax.legend()
plt.show()
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
LOSS_TOLERANCE = 0.02
final = {p: losses[-1] for p, losses in curves.items()}
gaps = {p: abs(final[p] / final["float32"] - 1) for p in final if p != "float32"}
loss_claim = exact(
    f"every policy's loss after {STEPS} steps is within {LOSS_TOLERANCE:.0%} of float32's",
    max(gaps.values()) <= LOSS_TOLERANCE,
    f"float32 {final['float32']:.4f} (from {curves['float32'][0]:.4f}); "
    + ", ".join(f"{p} {final[p]:.4f} ({gap:.2%} apart)" for p, gap in gaps.items()),
    effect=f"at most {max(gaps.values()):.2%} apart",
)
show(ClaimReport([loss_claim]))
# sphinx_gallery_end_ignore

# %%
# On a GPU
# --------
#
# On NVIDIA GPUs float16 products run on tensor cores, which want dimensions in multiples of 8.
# This part times the product at a side that is a multiple of 8 and one that is not, and runs
# only where TensorFlow sees a GPU.

# sphinx_gallery_start_ignore
if env["gpus"]:
    with Workers(device="gpu") as gpu:
        on_gpu = [
            m for n in (4096, 4095) for m in gpu.run(mp.PRODUCT, size=n, quick=True)
        ]
    Comparison(on_gpu, baseline="float32")
else:
    print("skipped: this build machine has no GPU that TensorFlow can see")
# sphinx_gallery_end_ignore

# %%
# The short answer
# ----------------
#
# The box at the top of this page, built from the checks above for this build's kind of CPU.

# sphinx_gallery_start_ignore
f32, f16 = pick(training, "float32", "mixed-float16")
f16_top = f16_ops.times[0]
f16_kernel = "oneDNN's" if is_onednn(f16_top.op) else "TensorFlow's generic"
has = {dtype: "has" if yes else "lacks" for dtype, yes in native.items()}
bf16_step, f16_step = (
    f"{claim.fast} against {claim.slow}, {checked.quoted}"
    for claim, checked in zip(policy_claims[:2], policy_checked[:2], strict=True)
)
answer = ShortAnswer(
    f"Because the CPU decides. This one {has['bfloat16']} bfloat16 instructions and "
    f"{has['float16']} float16 ones. A training step: {bf16_step}; {f16_step}. Under "
    f"mixed_float16 oneDNN's kernels ran {f16_ops.share(is_onednn):.0%} of the op time and "
    f"{f16_kernel} {f16_top.op} took the most ({f16_top.share:.0%}). Where TensorFlow has no "
    "oneDNN kernel for a type on a CPU, it falls back to generic kernels, and a 16-bit policy "
    "gets slower, not faster. The weights stay float32 under every policy; the activations' "
    "bytes, worked out from their shapes, halve (what a training process holds at its peak is "
    "measured in the memory chapter).",
    [
        Recommendation(
            f"Use mixed_bfloat16 on a CPU with {has_flags['bfloat16']}, as this one "
            "(measured on its few cores; CPUs with AMX were not measured)"
            if native["bfloat16"]
            else "Keep float32 on a CPU without bfloat16 instructions (avx512_bf16, amx_bf16)",
            policy_checked[0],
            Change(
                "mixed_bfloat16",
                "on" if native["bfloat16"] else "off",
                bfloat16=f"{has['bfloat16']} bfloat16 instructions",
                goal="speed",
            ),
            recipe="choose-the-policy-from-the-cpu-s-flags",
        ),
        Recommendation(
            f"Try mixed_float16 with loss scaling on a CPU with {has_flags['float16']}, as "
            "this one (measured on its few cores; CPUs with AMX were not measured)"
            if native["float16"]
            else "Avoid mixed_float16 on a CPU without float16 instructions (avx512_fp16, "
            "amx_fp16)",
            policy_checked[1],
            Change(
                "mixed_float16",
                "on" if native["float16"] else "off",
                float16=f"{has['float16']} float16 instructions",
                goal="speed",
            ),
            # The recipe keeps float32 where bfloat16 is missing: it never picks float16.
            recipe=""
            if native["float16"]
            else "choose-the-policy-from-the-cpu-s-flags",
        ),
        Recommendation(
            "Leave jit_compile off under mixed_bfloat16 on a CPU",
            policy_checked[2],
            Change(
                "jit_compile",
                "False",
                policy="mixed_bfloat16",
                work="a convolutional model's training step",
            ),
        ),
        Recommendation(
            "Compare the loss curve with float32's after switching policy",
            loss_claim,
            Change("the loss curve after switching policy", "compared with float32's"),
            recipe="compare-the-loss-with-float32-s-after-switching-policy",
        ),
    ],
    Table(
        "mixed_float16 on a CPU: tensorflow/tensorflow#45441's epoch, and a step here",
        ["where", "float32", "mixed_float16"],
        [
            ["their CPU (their figures)", "3 s", "187 s (62x slower)"],
            [
                "this build's CPU",
                format_seconds(f32.median_s),
                f"{format_seconds(f16.median_s)} "
                f"({Faster('mixed-float16', 'float32').check(training).effect})",
            ],
        ],
    ),
)
answer.publish("mixed_precision")
print(answer)
# sphinx_gallery_end_ignore

# %%
# Take the numbers with you
# -------------------------
#
# Everything timed on this page is published as
# `mixed_precision.json <../../measurements/mixed_precision.json>`_, in the shape
# ``python -m perfguide run mixed-precision-training --json PATH`` writes (the other workloads
# here are ``mixed-precision-matmul``, ``mixed-precision-conv2d`` and
# ``mixed-precision-inference``); the profiler traces are in ``mixed_precision.profile``
# beside it. To rerun this page on your own machine, install the guide's package from a
# checkout of its repository (``python -m pip install -e ".[cpu]"``) and run the script
# downloaded below.

# sphinx_gallery_start_ignore
published = (
    [m for ms in products.values() for m in ms] + convolutions + training + inference
)
print(results.publish("mixed_precision", env, published))
workers.close()
# sphinx_gallery_end_ignore


# %%
# Recipes
# -------
#
# The policy advice above, in code. Each recipe sets Keras's global policy and puts it back to
# float32 at its end.
#
# Choose the policy from the CPU's flags
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# ``mixed_bfloat16`` only where the CPU does arithmetic in bfloat16, float32 elsewhere. Whether
# it paid was measured on this page's few cores: time a step of your own model both ways.
from pathlib import Path

import keras

cpuinfo = Path("/proc/cpuinfo")  # Linux; elsewhere, look the CPU's flags up
flags = set(cpuinfo.read_text().split()) if cpuinfo.exists() else set()
has_bfloat16 = bool(flags & {"avx512_bf16", "amx_bf16"})
keras.mixed_precision.set_global_policy("mixed_bfloat16" if has_bfloat16 else "float32")

layer = keras.layers.Dense(4)
layer.build((None, 8))
assert layer.variable_dtype == "float32"  # the weights stay float32 under either policy
assert layer.compute_dtype == ("bfloat16" if has_bfloat16 else "float32")
keras.mixed_precision.set_global_policy("float32")  # back to the default

# %%
# Compare the loss with float32's after switching policy
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# The same model from the same weights, a few steps under each policy: a policy that changes
# what the model learns is no speed-up. The output layer stays float32, as the guide `Mixed
# precision <https://www.tensorflow.org/guide/mixed_precision>`_ advises.
import keras
import numpy as np

x = np.random.default_rng(0).random((64, 8), dtype=np.float32)
y = x.sum(axis=1, keepdims=True)


def loss_after(policy, steps=20):
    keras.mixed_precision.set_global_policy(policy)
    seeded = keras.initializers.GlorotUniform(
        seed=0
    )  # the same weights under each policy
    model = keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(16, activation="relu", kernel_initializer=seeded),
            keras.layers.Dense(1, dtype="float32", kernel_initializer=seeded),
        ]
    )
    model.compile(optimizer="sgd", loss="mse")
    return float([model.train_on_batch(x, y) for _ in range(steps)][-1])


losses = {policy: loss_after(policy) for policy in ("float32", "mixed_bfloat16")}
keras.mixed_precision.set_global_policy("float32")  # back to the default
np.testing.assert_allclose(losses["mixed_bfloat16"], losses["float32"], rtol=0.02)
