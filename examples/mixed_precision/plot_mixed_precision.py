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
# prints the flags of yours. The claims below are stated for this build's kind of CPU:
# ``page.Cpu`` reads its flags from the record of the page's fresh worker processes.

import matplotlib.pyplot as plt

from perfguide.measure.runner import default_device
from perfguide.pages import mixed_precision as page
from perfguide.processes.fresh import tensorflow_instruction_sets
from perfguide.processes.pool import Workers
from perfguide.report.plots import dot_plot
from perfguide.report.publishing import results
from perfguide.report.publishing.show import show
from perfguide.report.tables.comparison import Comparison
from perfguide.report.tables.table import Collapsed
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import mixed_precision as mp

device = default_device()
workers = Workers(device=device, limits=True)
env, machine = workers.environment, workers.machine_limits
cpu = page.Cpu.of(env)
print(results.where_measured(env, device))
print(
    f"peak float32 {machine.peak_flops / 1e9:.0f} GFLOP/s ({machine.how['peak_flops']})"
)
onednn = tensorflow_instruction_sets()["onednn_kernels"] or "not reported"
print(f"oneDNN's kernels: {onednn}")
print(cpu)

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

products = page.time_products(workers, cpu)
convolutions = workers.run(
    mp.CONVOLUTION, quick=True, settle=cpu.kernels(page.CONVOLUTION)
)
page.products_plot(products, machine)
plt.show()

# %%

shares = page.peak_shares(products, convolutions, machine)
summary = "Each type's arithmetic per second, as a share of the float32 peak"
show(Collapsed(summary, shares))

# %%

show(page.kernel_checks(cpu, products, convolutions))

# %%
# A share of the peak may pass 100 % without error: the peak is float32's, and a type with half the
# bits can do twice the operations per instruction. Which kernels ran for each type is in the
# profiles below, taken once all timing on this page is done.

# %%
# A model under each policy
# -------------------------
#
# A small image classifier (two 3 × 3 convolutions of 32 filters, pooling, two dense layers)
# under each policy (``float32``, ``mixed-bfloat16``, ``mixed-float16``), every model from the
# same weights. First inference, one ``predict_on_batch`` of 16 images of 32 × 32 pixels (timed
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

inference = workers.run(mp.INFERENCE, quick=True, settle=cpu.inference)
every_policy = Comparison(inference, baseline="float32")
show(Collapsed("Inference under each policy, in full", every_policy))


# %%
# Then training, one ``train_on_batch`` step at a time under each policy, and each again with
# ``jit_compile=True`` (its name then ends in ``-xla``: ``float32-xla``, ``mixed-bfloat16-xla``,
# ``mixed-float16-xla``). Under ``mixed_float16`` the optimizer scales the loss.

training = workers.run(mp.TRAINING, quick=True, settle=cpu.training)
every_step = Comparison(training, baseline="float32")
summary = "A training step under each policy, with and without XLA, in full"
show(Collapsed(summary, every_step))

# %%

ax = dot_plot(training)
ax.set_title(f"One training step of {mp.BATCH} images, by policy")
plt.show()

# %%

steps = ClaimReport.of(cpu.training, training)
predicting = ClaimReport.of(cpu.inference, inference)
show(ClaimReport(steps.claims + predicting.claims))

# %%
# Which kernels ran
# -----------------
#
# Profiles say which kernels ran: one trace per variant, of five calls, taken in one of the
# page's fresh processes after all the timing above. Kernels whose names start with ``_Mkl`` are
# oneDNN's; others are TensorFlow's generic (Eigen) kernels. First the product of each type:

product_ops = page.profiles(workers, mp.PRODUCT, page.LARGEST, mp.DTYPES)
product = f"The product of side {page.LARGEST}"
which = page.which_kernels(product, product_ops)
show(Collapsed(f"{product} in each type: which kernels ran", which))

# %%
# Then one training step per policy: the op that took the most time, the share of op time in
# oneDNN's kernels, and the share in the casts a mixed policy adds (each layer casts its float32
# weights and inputs to the 16-bit type).

step_ops = page.profiles(workers, mp.TRAINING, mp.BATCH, page.PROFILED_STEPS)
show(page.which_kernels("One training step per policy", step_ops))

# %%
# Where oneDNN's share falls to zero, TensorFlow ran its generic kernels for that type, which on
# this CPU are the slow ones; under XLA the compiled cluster runs XLA's own code instead of
# oneDNN's kernels, whatever the type. In numbers:

print(f"oneDNN by default on this CPU: {'on' if env['onednn_enabled'] else 'off'}")
print(page.kernels_in_numbers(step_ops, training))

# %%

float16_ops = step_ops["mixed-float16"]
show(Collapsed("The ops of the mixed_float16 step, in full", float16_ops))

# %%
# Whether the casts a mixed policy adds are what slows it:

casts = page.cast_checks(step_ops)
show(Collapsed("The check on the casts' share of a step", casts))

# %%
# Memory: weights and activations
# -------------------------------
#
# A mixed policy keeps each variable in float32 and computes on a 16-bit copy, so the weights
# take as many bytes as before; the activations a batch leaves for the backward pass are stored
# in the 16-bit type.

memory = page.memory(workers)
summary = "Bytes of weights and activations under each policy"
show(Collapsed(summary, page.memory_table(memory)))

# %%

show(ClaimReport([page.memory_claim(memory)]))

# %%
# Same model, same loss?
# ----------------------
#
# Each policy trains from the same weights on the same four batches of 16 images for 20 steps
# (8 in a quick run), in one of the page's processes. A policy that changes what the model
# learns is no speed-up:

curves = page.loss_curves(workers)
page.loss_plot(curves)
plt.show()

# %%

same_loss = page.loss_claim(curves)
show(ClaimReport([same_loss]))

# %%
# On a GPU
# --------
#
# On NVIDIA GPUs float16 products run on tensor cores, which want dimensions in multiples of 8.
# This part times the product at a side that is a multiple of 8 and one that is not, and runs
# only where TensorFlow sees a GPU.

if env["gpus"]:
    print(Comparison(page.products_on_gpu(), baseline="float32"))
else:
    print(page.NO_GPU)

# %%
# The short answer
# ----------------
#
# The box at the top of this page, built from the checks above for this build's kind of CPU.

answer = page.short_answer(cpu, steps, float16_ops, same_loss, training)
# sphinx_gallery_start_ignore
answer.publish("mixed_precision")
# sphinx_gallery_end_ignore
print(answer)

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

swept = [m for measured in products.values() for m in measured]
published = swept + convolutions + training + inference
print(results.publish("mixed_precision", env, published))
workers.close()


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
