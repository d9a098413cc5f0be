"""
How should I serve my model on a CPU?
=====================================

Once a model is trained it answers requests, and the folklore on how to serve it contradicts
itself. A user on a laptop found the LiteRT (TensorFlow Lite) interpreter 29x faster than Keras
for a small network (`impsy#48 <https://github.com/cpmpercussion/impsy/issues/48>`_: 4.96 ms
against 0.17 ms a prediction, their figures); another found it 2x slower than TensorFlow on a
desktop for a U-Net (`tensorflow#37989 <https://github.com/tensorflow/tensorflow/issues/37989>`_);
ONNX Runtime is reported faster than TensorFlow on some models and slower on others
(`onnxruntime#10989 <https://github.com/microsoft/onnxruntime/issues/10989>`_); and Keras
documents ``predict`` as a batch API "not intended for use inside of loops", which serving code
calls per request anyway (`tensorflow#40261
<https://github.com/tensorflow/tensorflow/issues/40261>`_).

This page serves three models built in code every way a user would, and times what serving is
judged by: the time to answer one request, its tail, the throughput a batch buys, and a cold
start. Every number is measured by this page on the machine that built it; the workloads are in
:mod:`perfguide.workloads.serving`, and :doc:`How to read the numbers </index>` explains the
tables and verdicts.

.. raw:: html
   :file: ../../_generated/answers/serving.answer.html
"""

# %%
# Where this page was measured
# ----------------------------
import matplotlib.pyplot as plt
import numpy as np

from perfguide.measure.runner import default_device
from perfguide.processes.pool import Workers
from perfguide.report import results
from perfguide.report.answers import Recommendation, Scenario, ShortAnswer
from perfguide.report.claims import ClaimReport, Faster
from perfguide.report.compare import Comparison
from perfguide.report.format import format_bytes, format_seconds, format_speedup
from perfguide.report.plotting import dot_plot, rate_plot
from perfguide.workloads import serving

device = default_device()
workers = Workers(device=device, limits=True)
env, machine = workers.environment, workers.machine_limits
print(f"CPU: {env['cpu_model']}, {env['usable_cores']} usable cores")
print(f"TensorFlow {env['tensorflow']}, NumPy {env['numpy']}")
print(f"measured peak: {machine.peak_flops / 1e9:.0f} GFLOP/s")
for way, why in serving.UNAVAILABLE.items():
    print(f"not served here: {way} ({why})")

# %%
# The models and the ways to serve them
# -------------------------------------
#
# Three models, from fixed seeds: ``mlp``, 32 features to 64 to 10; ``conv1d``, the
# :doc:`training-loop chapter's </auto_examples/training_loop/plot_training_loop>` small model;
# and ``mobilenet``, a MobileNetV2 (width 0.35) on 96-pixel images. Each is served: by Keras
# (``predict``, ``model(x, training=False)``, ``predict_on_batch``); by its forward pass as a
# ``tf.function`` with an input signature (``tf-function``) and compiled with XLA
# (``tf-function-xla``); by the SavedModel ``model.export`` writes, loaded with
# ``tf.saved_model.load`` (``saved-model``); by LiteRT's interpreter (``ai-edge-litert``) on the
# model converted by TensorFlow's converter, with XNNPACK, its default CPU delegate, on every core
# (``litert``) or one thread (``litert-1-thread``), and with its weights quantized to int8
# (``litert-int8``); and by ONNX Runtime on a ``tf2onnx`` conversion (``onnxruntime``). Every way
# answers the same request, a NumPy array, as a server has it.
#
# .. dropdown:: The code being timed
#
#    .. literalinclude:: /../perfguide/workloads/serving.py
#       :pyobject: answerer
#
#    .. literalinclude:: /../perfguide/processes/cold_start.py
#       :pyobject: load_litert
#
#    .. literalinclude:: /../perfguide/processes/cold_start.py
#       :pyobject: load_onnxruntime
#
# Every way's answers agree with Keras's (``model(x)``), as a share of Keras's largest answer;
# the int8 way rounds its weights, and says how far that moves the answers:
differences = workers.call_in(0, f"{serving.__name__}:output_differences")
Scenario(
    "Largest difference from Keras's answers, per model and way",
    ["way", *differences],
    [
        [way, *(f"{differences[name][way]:.1e}" for name in differences)]
        for way in differences["mlp"]
    ],
)

# %%
# One request at a time
# ---------------------
#
# A request of one sample, answered by each way, in three fresh processes taking turns. The tiny
# model shows what a call costs; the MobileNet what its arithmetic does. To keep this page's
# build short, ``predict`` is timed on the tiny model only, and Keras's other calls on the two
# smaller models only. A way whose verdict below is undecided after three processes is timed in
# more.
SLOW_ON_MOBILENET = ("predict", "model-call", "predict-on-batch")
ways = serving.WORKLOADS[0].variants
MLP, CONV1D, MOBILENET = serving.WORKLOADS
# ONNX Runtime against TensorFlow on every model (onnxruntime#10989). The tiny model: impsy#48's
# 29x on a small network; Keras's "predict is for batches". The others: int8 weights, once
# slower on x86 CPUs (tensorflow#24665); tensorflow#37989's "LiteRT 2x slower on a desktop";
# and LiteRT's threads.
onnx_vs_tf = Faster("onnxruntime", "tf-function")
litert_vs_keras = Faster("litert", "model-call", by=29)
call_vs_predict = Faster("model-call", "predict", by=10)
int8_faster = Faster("litert-int8", "litert")
tf_vs_litert = Faster("tf-function", "litert", by=2)
float_faster = Faster("litert", "litert-int8")
threads_faster = Faster("litert", "litert-1-thread")
model_claims = {
    MLP.name: [onnx_vs_tf, litert_vs_keras, call_vs_predict],
    CONV1D.name: [onnx_vs_tf, int8_faster],
    MOBILENET.name: [onnx_vs_tf, tf_vs_litert, float_faster, threads_faster],
}
model_claims = {
    name: [c for c in claims if set(c.labels) <= set(ways)]
    for name, claims in model_claims.items()
}
served = {}
for workload in serving.WORKLOADS:
    variants = {
        MLP.name: ways,
        CONV1D.name: [w for w in ways if w != "predict"],
        MOBILENET.name: [w for w in ways if w not in SLOW_ON_MOBILENET],
    }[workload.name]
    served[workload.name] = workers.run(
        workload, variants, quick=True, settle=model_claims[workload.name]
    )
Comparison(served[MLP.name], baseline="predict")

# %%
Comparison(served[CONV1D.name], baseline="model-call")

# %%
Comparison(served[MOBILENET.name], baseline="tf-function")

# %%
fig, axes = plt.subplots(3, 1, figsize=(7, 10), layout="constrained")
for ax, (name, measurements) in zip(axes, served.items(), strict=True):
    dot_plot(measurements, ax=ax)
    ax.set_title(f"{name}: one request")
plt.show()

# %%
by_label = {name: {m.label: m for m in ms} for name, ms in served.items()}
checked = {
    (name, claim): claim.check(served[name]).on(name.removeprefix("serving-"))
    for name, claims in model_claims.items()
    for claim in claims
}
ClaimReport(list(checked.values()))

# %%
# Calls or arithmetic
# -------------------
#
# The arithmetic of one request at the machine's measured peak (of float32 products), against
# each way's time: where a way takes many times what the arithmetic needs, what it pays for is
# the call (Python, the runtime's dispatch, copying the request in and the answer out), not the
# model. A share above 100 % is not float32 arithmetic: int8 weights multiply on the CPU's
# integer units, which the float32 peak does not measure.
flops = {
    w.name: workers.call_in(
        0, f"{serving.__name__}:request_flops", name=w.name.split("-")[1]
    )
    for w in serving.WORKLOADS
}
for name, measurements in served.items():
    at_peak = flops[name] / machine.peak_flops
    print(
        f"{name}: {flops[name] / 1e6:.3g} MFLOP a request, {format_seconds(at_peak)} at the peak"
    )
    for m in sorted(measurements, key=lambda m: m.median_s):
        beyond = m.median_s - at_peak
        print(
            f"  {m.label:16s} {format_seconds(m.median_s):>9s}  "
            f"{machine.compute_share(flops[name], m.median_s):7.2%} of the peak, "
            + (
                f"{format_seconds(beyond)} beyond the arithmetic"
                if beyond > 0
                else "faster than float32 arithmetic at the peak"
            )
        )

# %%
# The tail: what a user waits for
# -------------------------------
#
# A server is judged by its slowest answers too. Each process answers 300 requests of the small
# model one after another with each way, after one untimed request, and keeps every answer's
# time: the median (p50) and the 99th percentile (p99) of each process, lowest to highest
# across the processes.
TAIL_WAYS = [
    w
    for w in ("model-call", "tf-function", "saved-model", "litert", "onnxruntime")
    if w in ways
]
REQUESTS = 300
tails = {
    way: workers.call(
        f"{serving.__name__}:latency_percentiles",
        model="conv1d",
        way=way,
        count=REQUESTS,
    )
    for way in TAIL_WAYS
}


def across(way, key):
    low, high = (f(t[key] for t in tails[way]) for f in (min, max))
    return f"{format_seconds(low)} – {format_seconds(high)}"


Scenario(
    f"{REQUESTS} requests of the small model, one after another, per process",
    ["way", "p50", "p99", "p99 / p50"],
    [
        [
            way,
            across(way, "p50"),
            across(way, "p99"),
            f"{np.median([t['p99'] / t['p50'] for t in tails[way]]):.2f}x",
        ]
        for way in TAIL_WAYS
    ],
)

# %%
# Batches: throughput against latency
# ------------------------------------
#
# Requests that arrive together can be answered in one call: the call's price is paid once for
# the batch, and the arithmetic runs on more data at a time. The small model's requests per
# second at each batch size, against the most the arithmetic allows at the measured peak:
BATCH_WAYS = [w for w in ("tf-function", "litert", "onnxruntime") if w in ways]
BATCHES = (1, 16, 256)
batched = [
    m
    for batch in BATCHES
    for m in workers.run(CONV1D, BATCH_WAYS, size=batch, quick=True)
]
ax = rate_plot(
    batched,
    "requests per batch",
    lambda m: 1,
    limit=machine.peak_flops / flops[CONV1D.name],
    limit_label="the arithmetic at the measured peak",
    rate_unit="requests/s",
)
ax.set_title("The small model: requests answered per second")
plt.show()

# %%
# Each batch is one call, so a request waits for the whole batch to be answered:
Scenario(
    "The small model: time to answer a whole batch",
    ["way", *(f"batch {b}" for b in BATCHES)],
    [
        [way, *(format_seconds(m.median_s * m.size) for m in batched if m.label == way)]
        for way in BATCH_WAYS
    ],
)

# %%
# A cold start
# ------------
#
# A new process or container answers its first request only after it has imported its runtime,
# loaded the model and answered once (which may build the runtime's plan for the model). Each
# of these is timed apart in a fresh Python process that has imported nothing but NumPy, once
# per page process, for the MobileNet saved as a ``.keras`` file (answered by Keras), as a
# ``.tflite`` file and as an ``.onnx`` file:
COLD_WAYS = [w for w in ("keras", "litert", "onnxruntime") if w == "keras" or w in ways]
starts = {
    way: workers.call(f"{serving.__name__}:cold_start", name="mobilenet", way=way)
    for way in COLD_WAYS
}


def median_of(way, key):
    return float(np.median([start[key] for start in starts[way]]))


Scenario(
    "The MobileNet's first answer in a fresh process (median of the page's processes)",
    [
        "runtime",
        "import",
        "load",
        "first answer",
        "in all",
        "memory then",
        "file",
        "TensorFlow",
    ],
    [
        [
            way,
            *(format_seconds(median_of(way, key)) for key in serving.COLD_STEPS),
            format_seconds(sum(median_of(way, key) for key in serving.COLD_STEPS)),
            format_bytes(median_of(way, "memory_bytes")),
            format_bytes(median_of(way, "file_bytes")),
            "imported" if starts[way][0]["imported_tensorflow"] else "never imported",
        ]
        for way in COLD_WAYS
    ],
)

# %%
# A LiteRT or ONNX Runtime server never imports TensorFlow. How much of each cold start the
# import is:
import_share = {
    way: median_of(way, "import_s")
    / sum(median_of(way, key) for key in serving.COLD_STEPS)
    for way in COLD_WAYS
}
for way, share in import_share.items():
    print(f"{way}: the import is {share:.0%} of the cold start")

# %%
# Which kernels ran
# -----------------
#
# TensorFlow runs convolutions and products with oneDNN's kernels (the :doc:`environment page
# </environment>` says which instruction set they were generated for); the LiteRT interpreter
# hands what it can of the graph to a delegate, XNNPACK on a CPU; ONNX Runtime runs the graph
# with an execution provider, on a CPU its own (MLAS) kernels. What each says of the MobileNet:
reports = {}
if {"litert", "litert-int8", "onnxruntime"} <= set(ways):
    for w in (CONV1D, MOBILENET):
        name = w.name.removeprefix("serving-")
        reports[w.name] = workers.call_in(
            0, f"{serving.__name__}:runtime_report", name=name
        )
    report = reports[MOBILENET.name]
    ops = ", ".join(f"{n} {op}" for op, n in report["litert_ops"].items())
    handed = (
        "handed to a delegate"
        if report["litert_delegated"]
        else "run by its own kernels"
    )
    print(f"LiteRT: {sum(report['litert_ops'].values())} ops ({ops}), {handed}")
    print(f"ONNX Runtime: {', '.join(report['onnxruntime_providers'])}")

# %%
# Where tensorflow#37989 found LiteRT 2x slower than TensorFlow on a desktop, here it answered
# the MobileNet many times faster than the same model in a ``tf.function``: the interpreter
# hands its graph to XNNPACK, while each TensorFlow call pays far more than its arithmetic (the
# shares of the peak above). int8 weights have a price per op too: each op of the int8 model
# that takes them quantizes its float input at every call. The int8 model's time over the
# float one's, per such op:
for name, report in reports.items():
    float_s, int8_s = (by_label[name][w].median_s for w in ("litert", "litert-int8"))
    per_op = (int8_s - float_s) / report["int8_weight_ops"]
    print(
        f"{name}: {report['int8_weight_ops']} ops with int8 weights; int8 model "
        f"{format_seconds(int8_s)} against {format_seconds(float_s)}: "
        f"{format_seconds(abs(per_op))} an op {'more' if per_op > 0 else 'less'}"
    )

# %%
# The short answer
# ----------------
#
# The box at the top of this page, built from the checks above.
fastest = {name: min(ms, key=lambda m: m.median_s) for name, ms in served.items()}
mlp_call, mlp_litert = by_label[MLP.name]["model-call"], by_label[MLP.name]["litert"]
scenario = Scenario(
    "A small network's prediction, impsy#48's laptop and this machine's tiny MLP",
    ["", "impsy#48 (quoted)", "this machine (measured)"],
    [
        ["Keras, per prediction", "4.96 ms", format_seconds(mlp_call.median_s)],
        ["LiteRT interpreter", "0.17 ms", format_seconds(mlp_litert.median_s)],
        [
            "LiteRT's speed-up",
            "29.17x",
            format_speedup(mlp_call.median_s / mlp_litert.median_s),
        ],
    ],
)
answer = ShortAnswer(
    "Serve with whatever answers a call with the least work around it: on this machine the "
    + "; ".join(
        f"{name.removeprefix('serving-')} was answered fastest by {m.label} "
        f"({format_seconds(m.median_s)} a request)"
        for name, m in fastest.items()
    )
    + f". Keras's predict took {format_seconds(by_label[MLP.name]['predict'].median_s)} a "
    "request on the tiny model: it is built for batches. On a small model the call is the "
    "cost, which the LiteRT interpreter and ONNX Runtime keep small; on a convolutional one "
    "the kernels are, and the runtimes' kernels decide. A server that loads a .tflite or an "
    ".onnx file never imports TensorFlow; importing Keras and TensorFlow was "
    f"{import_share['keras']:.0%} of a Keras server's cold start. These figures are from "
    "this page's 2-core virtual machine.",
    [
        Recommendation(
            "Serve a small model with LiteRT's interpreter, not Keras",
            checked[MLP.name, litert_vs_keras],
        ),
        Recommendation(
            "Never call predict once per request",
            checked[MLP.name, call_vs_predict],
        ),
        Recommendation(
            "Give LiteRT every core for a convolutional model",
            checked[MOBILENET.name, threads_faster],
        ),
        Recommendation(
            "Try int8 weights in LiteRT for a model of a few large products",
            checked[CONV1D.name, int8_faster],
        ),
        Recommendation(
            "Keep float weights in LiteRT for a model of many small convolutions",
            checked[MOBILENET.name, float_faster],
        ),
        Recommendation(
            "Try ONNX Runtime beside a tf.function on a convolutional model",
            checked[MOBILENET.name, onnx_vs_tf],
        ),
    ],
    scenario,
)
answer.publish("serving", "How should I serve my model on a CPU?")
print(answer)

# %%
# Take the numbers with you
# -------------------------
#
# Everything timed on this page is published as
# `serving.json <../../measurements/serving.json>`_, in the shape ``python -m perfguide run
# serving --json PATH`` writes. To rerun this page on your own machine, install the guide's
# package with its serving runtimes from a checkout of its repository (``python -m pip install
# -e ".[cpu,serving]"``) and run the script downloaded below; ``python -m perfguide diagnose``
# times these ways on a model of your own.
#
# Previous question: :doc:`Why don't prefetch and cache speed up my tf.data pipeline?
# </auto_examples/tf_data/plot_tf_data>` Next: :doc:`Diagnose your own code
# </auto_examples/diagnose/plot_diagnose>`, which times your own function the way this guide
# does; all recommendations of the guide, measured: :doc:`the checklist </checklist>`.
published = [m for ms in served.values() for m in ms] + batched
results.save(results.measurements_dir() / "serving.json", env, published)
print(f"published {len(published)} measurements")
workers.close()
