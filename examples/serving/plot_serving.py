"""
How should I serve my model on a CPU?
=====================================

Once a model is trained it answers requests, and the folklore on how to serve it contradicts
itself. A user on a laptop found the LiteRT (TensorFlow Lite) interpreter 29x faster than Keras
for a small network (`cpmpercussion/impsy#48
<https://github.com/cpmpercussion/impsy/issues/48>`_: 4.96 ms against 0.17 ms a prediction, their
figures); another found it 2x slower than TensorFlow on a desktop for a U-Net
(`tensorflow/tensorflow#37989 <https://github.com/tensorflow/tensorflow/issues/37989>`_); ONNX
Runtime is reported faster than TensorFlow on some models and slower on others
(`microsoft/onnxruntime#10989 <https://github.com/microsoft/onnxruntime/issues/10989>`_); and
Keras documents ``predict`` as a batch API "not intended for use inside of loops", which serving
code calls per request anyway (`tensorflow/tensorflow#40261
<https://github.com/tensorflow/tensorflow/issues/40261>`_).

This page serves three models: the *tiny model* ``mlp`` (32 features to 64 to 10), the *small
model* ``conv1d`` (a strided convolution, pooling and two dense layers) and ``mobilenet``, a
MobileNetV2. Each is served every way a user would: by Keras's ``predict``, ``model-call``
(``model(x, training=False)``) and ``predict-on-batch`` (``predict_on_batch``); by
``tf-function``, the forward pass as a ``tf.function`` with an input signature, and
``tf-function-xla``, the same compiled with XLA; by ``saved-model``, the SavedModel
``model.export`` writes, loaded with ``tf.saved_model.load``; by LiteRT's interpreter on the
converted model, on every core (``litert``), on one thread (``litert-1-thread``) and with int8
weights (``litert-int8``); by ONNX Runtime on a ``tf2onnx`` conversion (``onnxruntime``); and by
OpenVINO's runtime on its own conversion, in float32 (``openvino``; Keras 3 can also run on
OpenVINO as a backend: see :doc:`Should I switch Keras's backend?
</auto_examples/keras_backends/plot_keras_backends>`). It times one request, the tail, batches
and a cold start; :doc:`How to read these pages </reading>`
defines the tables' terms and verdicts.

.. raw:: html
   :file: ../../_generated/extra/answers/serving.answer.html
"""

# %%
# Where this page was measured
# ----------------------------

import matplotlib.pyplot as plt

from perfguide.measure.runner import default_device
from perfguide.pages import serving as page
from perfguide.processes.pool import Workers
from perfguide.report.publishing import results
from perfguide.report.publishing.answers import ShortAnswer
from perfguide.report.publishing.show import show
from perfguide.report.tables.ops import OpTable
from perfguide.report.tables.table import Collapsed
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import serving

device = default_device()
workers = Workers(device=device, limits=True)
env, machine = workers.environment, workers.machine_limits
print(results.where_measured(env))
print(f"measured peak: {machine.peak_flops / 1e9:.0f} GFLOP/s")
for way, why in serving.UNAVAILABLE.items():
    print(f"not served here: {way} ({why})")

# %%
# The models and the ways to serve them
# -------------------------------------
#
# Every way answers the same request, a NumPy array, as a server has it.
#
# .. dropdown:: The models
#
#    The models come from fixed seeds; the small model is the :doc:`training-loop chapter's
#    </auto_examples/training_loop/plot_training_loop>`, the MobileNet has width 0.35 and takes
#    96-pixel images. LiteRT's interpreter (``ai-edge-litert``) runs the model TensorFlow's
#    converter wrote, with XNNPACK, its default CPU delegate. The workloads are in
#    :mod:`perfguide.workloads.serving`.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/serving.py
#    :pyobject: answerer
#
# .. literalinclude:: /../perfguide/workloads/serving.py
#    :pyobject: serving_function
#
# .. literalinclude:: /../perfguide/workloads/runtimes.py
#    :pyobject: load_litert
#
# .. literalinclude:: /../perfguide/workloads/runtimes.py
#    :pyobject: load_onnxruntime
#
# Each way's answers are set against Keras's (``model(x)``): the largest difference, as a share of
# Keras's largest answer. A converted or quantized model is advised only where that stays within a
# stated tolerance: float ways within 0.0001 of it
# (:data:`~perfguide.workloads.serving.FLOAT_TOLERANCE`), int8 weights (rounded, so further off)
# within 0.05 (:data:`~perfguide.workloads.serving.QUANTIZED_TOLERANCE`).

differences = page.output_differences(workers)
show(page.differences_table(differences))

# %%

close = page.answers_close(differences)
show(close)

# %%
# One request at a time
# ---------------------
#
# A request of one sample, answered by each way, in two fresh processes taking turns. The tiny
# model shows what a call costs; the MobileNet what its arithmetic does. To keep the build short,
# ``predict`` is timed on the tiny model only, and Keras's other calls, XLA and the SavedModel
# (which runs the ``tf.function``'s graph) on the tiny and small models only. A way whose verdict
# below is undecided after two processes is timed in more. Each model's table opens on a click;
# the plot shows every way.

served = page.one_request(workers)
show(page.request_table(served, page.MLP.name))

# %%

show(page.request_table(served, page.CONV1D.name))

# %%

show(page.request_table(served, page.MOBILENET.name))

# %%

page.request_plot(served)
plt.show()

# %%
# The claims this page checks on one request, each against the folklore above:

checked = ClaimReport.of(page.REQUEST_CHECKS, served)
show(checked)

# %%
# Calls or arithmetic
# -------------------
#
# What a call costs with nothing to compute: each way (but ``predict``, priced on the tiny model
# above) answering ``identity``, a model that returns its request unchanged. Its time is *the
# call alone*:

calls = page.call_alone(workers)
show(page.call_alone_table(calls))

# %%
# Each model's time per request is set against the call alone (the same way's) and against its
# arithmetic at the machine's measured peak of float32 products (its *share of the peak*). What
# is *left over* is the request's time less the call alone and less the arithmetic at the peak:
# the work a way does around each op ("none" where those two already take the whole time). A
# share of the peak above 100 % is not float32 arithmetic: int8 weights multiply on the CPU's
# integer units, which the float32 peak does not measure.

flops = page.request_flops(workers)
show(page.time_split(served, calls, flops, machine))

# %%
# The tail: what a user waits for
# -------------------------------
#
# A server is judged by its slowest answers too. Each process answers 300 requests of the small
# model one after another with each way, after one untimed request, and keeps every answer's
# time: the median (p50) and the 99th percentile (p99) of each process, lowest to highest
# across the processes. A *stall* is a request that took many times its process's median (the
# column's heading says how many): a few stalls make a process's slowest answers, and its p99
# once they are 1 % of its requests, while its median stays put.

tails = page.request_tails(workers)
show(page.tail_table(tails))

# %%
# Where the stalls were:

print(page.where_stalls_were(tails))

# %%
# Batches: throughput against latency
# ------------------------------------
#
# Requests that arrive together can be answered in one call: the call's price is paid once for
# the batch, and the arithmetic runs on more data at a time. The small model's requests per
# second at each batch size, against the most the arithmetic allows at the measured peak:

batched = page.time_batches(workers)
page.throughput_plot(batched, machine, flops)
plt.show()

# %%
# Each batch is one call, so a request waits for the whole batch to be answered:

show(page.batch_table(batched))

# %%
# A cold start
# ------------
#
# A new process or container answers its first request only after it has imported its runtime,
# loaded the model and answered once (which may build the runtime's plan for the model). Each
# step is timed apart in a fresh Python process that has imported nothing but NumPy, for the
# MobileNet saved as a ``.keras`` file (answered by Keras), a ``.tflite`` and an ``.onnx`` file:

cold = page.cold_starts(workers)
show(cold.table())

# %%
# A LiteRT or ONNX Runtime server never imports TensorFlow. How much of each cold start the
# import is:

print(cold)

# %%
# Which kernels ran
# -----------------
#
# TensorFlow runs convolutions and products with oneDNN's kernels (the :doc:`environment page
# </environment>` says for which instruction set); LiteRT's interpreter hands what it can of the
# graph to a delegate, XNNPACK on a CPU; ONNX Runtime runs it with an execution provider, on a
# CPU its own (MLAS) kernels. What each says of the MobileNet:

reports = page.runtime_reports(workers)
if reports:
    print(page.kernels(reports[page.MOBILENET.name]))

# %%
# Why TensorFlow takes milliseconds on the MobileNet
# --------------------------------------------------
#
# tensorflow/tensorflow#37989 found LiteRT 2x slower than TensorFlow on a desktop; the claims
# above check that on the MobileNet, and the time split above shows how much of the
# ``tf.function``'s time is left over. TensorFlow's profiler says where it goes: five calls traced
# in one of the page's processes after its timing, by op type (self time leaves out nested ops;
# the share is of all op time in the trace).

logdir = results.measurements_dir() / "serving.profile"
trace = workers.trace(0, page.MOBILENET, "tf-function", 1, str(logdir))
op_table = OpTable.from_trace(trace, top=6)
show(Collapsed("The MobileNet in a tf.function: time by op type, most first", op_table))

# %%
# Per request, against LiteRT's interpreter on the same model:

print(page.tensorflow_against_litert(op_table, served, flops, machine, reports))

# %%
# On a request this small, what TensorFlow pays is each convolution kernel's cost beyond its
# arithmetic, times the dozens of them, and the ops LiteRT's converter removed. int8 weights have
# a price per op too: each op of the int8 model that takes them quantizes its float input at
# every call. The int8 model's time over the float one's, per such op:

if reports:
    print(page.int8_price_per_op(served, reports))

# %%
# The short answer
# ----------------
#
# The box at the top of this page, built from the checks above.

for sentence in page.fastest_ways(served):
    print(sentence)
answer = ShortAnswer(
    page.answer_sentences(served, calls, cold),
    page.advice(checked, close, page.onnx_caveats(batched, tails)),
    page.impsy_scenario(served, checked),
)
# sphinx_gallery_start_ignore
answer.publish("serving")
# sphinx_gallery_end_ignore
print(answer)

# %%
# Take the numbers with you
# -------------------------
#
# Everything timed on this page is published as
# `serving.json <../../measurements/serving.json>`_, in the shape ``python -m perfguide run
# serving --json PATH`` writes. To rerun this page on your machine, install the guide's package
# with its serving runtimes (``python -m pip install -e ".[cpu,serving]"`` in a checkout of its
# repository) and run the script downloaded below; ``python -m perfguide diagnose`` times these
# ways on a model of your own.

# One request a call is published from the first runs; the batch plot's own run of it would be
# a second row of the same workload, way and size.
published = [m for measured in served.values() for m in measured] + calls
published += [m for m in batched if m.size > 1]
print(results.publish("serving", env, published))
workers.close()

# %%
# Recipes
# -------
#
# The advice above in a few lines each, on a tiny model of its own, ending with a check. Which
# way answers fastest was measured on this page's 2-core virtual machine: time yours.
#
# Convert to LiteRT and check the outputs
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Export the model as a SavedModel, convert that with TensorFlow's converter (as this page
# does), answer with LiteRT's interpreter (``pip install ai-edge-litert``), and check its answers
# against Keras's within a tolerance, as a share of the largest answer (this page's: 0.0001 for
# float weights, 0.05 for int8):

import tempfile

import keras
import numpy as np
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter

model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(10)])
with tempfile.TemporaryDirectory() as folder:
    model.export(folder, verbose=False)
    converter = tf.lite.TFLiteConverter.from_saved_model(folder)
    # converter.optimizations = [tf.lite.Optimize.DEFAULT]  # for int8 weights
    converted = converter.convert()
interpreter = Interpreter(model_content=converted)
interpreter.allocate_tensors()

x = np.random.default_rng(0).standard_normal((1, 32), dtype=np.float32)
interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
interpreter.invoke()
answer = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
expected = model(x, training=False).numpy()
tolerance = 1e-4  # a share of the largest answer; this page allows 0.05 for int8
np.testing.assert_allclose(answer, expected, atol=tolerance * np.abs(expected).max())

# %%
# Convert to ONNX and check the outputs
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# ``tf2onnx`` (``pip install tf2onnx onnxruntime``) converts the model's forward pass as a
# ``tf.function``, as this page's conversion does: its ``from_keras`` reads Keras 2's internals,
# which a Keras 3 model lacks. ONNX Runtime answers, checked as above:

import keras
import numpy as np
import onnxruntime
import tensorflow as tf
import tf2onnx

model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(10)])
signature = [tf.TensorSpec((None, 32), tf.float32, name="x")]
forward = tf.function(lambda x: model(x, training=False), input_signature=signature)
onnx_model, _ = tf2onnx.convert.from_function(forward, signature, opset=17)
session = onnxruntime.InferenceSession(
    onnx_model.SerializeToString(), providers=["CPUExecutionProvider"]
)

x = np.random.default_rng(0).standard_normal((4, 32), dtype=np.float32)
expected = model(x, training=False).numpy()
tolerance = 1e-4  # a share of the largest answer
answer = session.run(None, {"x": x})[0]
np.testing.assert_allclose(answer, expected, atol=tolerance * np.abs(expected).max())

# %%
# Serve a tf.function with an input signature
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Where the server stays in TensorFlow, answer each request with the forward pass as a
# ``tf.function``, not with ``predict``. An input signature whose batch dimension is ``None``
# traces one graph for every batch size:

import keras
import numpy as np
import tensorflow as tf

model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(10)])


@tf.function(input_signature=[tf.TensorSpec((None, 32), tf.float32)])
def serve(x):
    return model(x, training=False)


for rows in (1, 3, 8):  # a request or a batch of any size
    x = np.random.default_rng(rows).standard_normal((rows, 32), dtype=np.float32)
    np.testing.assert_allclose(serve(x), model(x, training=False), rtol=1e-5, atol=1e-6)
assert serve.experimental_get_tracing_count() == 1  # one graph for them all
