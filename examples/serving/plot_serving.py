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
weights (``litert-int8``); and by ONNX Runtime on a ``tf2onnx`` conversion (``onnxruntime``). It
times one request, the tail, batches and a cold start; :doc:`How to read these pages </reading>`
defines the tables' terms and verdicts.

.. raw:: html
   :file: ../../_generated/extra/answers/serving.answer.html
"""

# %%
# Where this page was measured
# ----------------------------

# sphinx_gallery_start_ignore
import matplotlib.pyplot as plt
import numpy as np

from perfguide.measure.runner import default_device
from perfguide.processes import cold_start
from perfguide.processes.pool import Workers
from perfguide.processes.worker import TRACED_CALLS
from perfguide.report import results
from perfguide.report.answers import Change, Recommendation, ShortAnswer, measured_here
from perfguide.report.claims import ClaimReport, Faster, exact
from perfguide.report.compare import Collapsed, Comparison, Table, at_size
from perfguide.report.format import format_bytes, format_seconds
from perfguide.report.ops import OpTable
from perfguide.report.plotting import dot_plot, rate_plot
from perfguide.report.ranking import rank
from perfguide.report.show import show
from perfguide.workloads import serving

device = default_device()
workers = Workers(device=device, limits=True)
env, machine = workers.environment, workers.machine_limits
print(results.where_measured(env))
print(f"measured peak: {machine.peak_flops / 1e9:.0f} GFLOP/s")
for way, why in serving.UNAVAILABLE.items():
    print(f"not served here: {way} ({why})")
# sphinx_gallery_end_ignore

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
# stated tolerance: float ways within :data:`~perfguide.workloads.serving.FLOAT_TOLERANCE`, int8
# weights (rounded, so further off) within :data:`~perfguide.workloads.serving.QUANTIZED_TOLERANCE`.

# sphinx_gallery_start_ignore
differences = workers.call_in(0, f"{serving.__name__}:output_differences")
show(
    Collapsed(
        "Every model and way: the largest difference from Keras's answers",
        Table(
            "Largest difference from Keras's answers, per model and way",
            ["way", *differences],
            [
                [way, *(f"{differences[name][way]:.1e}" for name in differences)]
                for way in differences["mlp"]
            ],
        ),
    )
)
# sphinx_gallery_end_ignore

# %%


# sphinx_gallery_start_ignore
def answers_close(model, way):
    tolerance = serving.tolerance(way)
    return exact(
        f"{way}'s answers lie within {tolerance:g} of Keras's",
        differences[model][way] <= tolerance,
        f"largest difference {differences[model][way]:.1e}, as a share of Keras's largest answer",
    ).on(model)


CONVERTED_ADVICE = (
    ("mlp", "litert"),
    ("conv1d", "litert-int8"),
    ("mobilenet", "onnxruntime"),
)
close = {
    (model, way): answers_close(model, way)
    for model, way in CONVERTED_ADVICE
    if way in differences[model]
}
show(ClaimReport(list(close.values())))
# sphinx_gallery_end_ignore

# %%
# One request at a time
# ---------------------
#
# A request of one sample, answered by each way, in three fresh processes taking turns. The tiny
# model shows what a call costs; the MobileNet what its arithmetic does. To keep the build short,
# ``predict`` is timed on the tiny model only, and Keras's other calls, XLA and the SavedModel
# (which runs the ``tf.function``'s graph) on the tiny and small models only. A way whose verdict
# below is undecided after three processes is timed in more. Each model's table opens on a click;
# the plot shows every way.

# sphinx_gallery_start_ignore
SMALLER_MODELS_ONLY = (
    "predict",
    "model-call",
    "predict-on-batch",
    "tf-function-xla",
    "saved-model",
)
ways = serving.WORKLOADS[0].variants
IDENTITY, MLP, CONV1D, MOBILENET = serving.WORKLOADS
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
for workload in (MLP, CONV1D, MOBILENET):
    variants = {
        MLP.name: ways,
        CONV1D.name: [w for w in ways if w != "predict"],
        MOBILENET.name: [w for w in ways if w not in SMALLER_MODELS_ONLY],
    }[workload.name]
    served[workload.name] = workers.run(
        workload, variants, quick=True, settle=model_claims[workload.name]
    )
show(
    Collapsed(
        "The tiny model: every way's time per request",
        Comparison(served[MLP.name], baseline="predict"),
    )
)
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
show(
    Collapsed(
        "The small model: every way's time per request",
        Comparison(served[CONV1D.name], baseline="model-call"),
    )
)
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
show(
    Collapsed(
        "The MobileNet: every way's time per request",
        Comparison(served[MOBILENET.name], baseline="tf-function"),
    )
)
# sphinx_gallery_end_ignore

# %%

# sphinx_gallery_start_ignore
fig, axes = plt.subplots(3, 1, figsize=(7, 10), layout="constrained")
for ax, (name, measurements) in zip(axes, served.items(), strict=True):
    dot_plot(measurements, ax=ax)
    ax.set_title(f"{name}: one request")
plt.show()
# sphinx_gallery_end_ignore

# %%
# The claims this page checks on one request, each against the folklore above:

# sphinx_gallery_start_ignore
by_label = {name: {m.label: m for m in ms} for name, ms in served.items()}
checked = {
    (name, claim): claim.check(served[name]).on(name.removeprefix("serving-"))
    for name, claims in model_claims.items()
    for claim in claims
}
show(ClaimReport(list(checked.values())))
# sphinx_gallery_end_ignore

# %%
# Calls or arithmetic
# -------------------
#
# What a call costs with nothing to compute: each way (but ``predict``, priced on the tiny model
# above) answering ``identity``, a model that returns its request unchanged. Its time is *the
# call alone*:

# sphinx_gallery_start_ignore
calls = workers.run(IDENTITY, [w for w in ways if w != "predict"], quick=True)
call_s = {m.label: m.median_s for m in calls}
show(
    Collapsed(
        "The call alone: every way's time on the identity model",
        Comparison(calls, baseline="model-call"),
    )
)
# sphinx_gallery_end_ignore

# %%
# Each model's time per request is set against the call alone (the same way's) and against its
# arithmetic at the machine's measured peak of float32 products (its *share of the peak*). What
# is *left over* is the request's time less the call alone and less the arithmetic at the peak:
# the work a way does around each op ("none" where those two already take the whole time). A
# share of the peak above 100 % is not float32 arithmetic: int8 weights multiply on the CPU's
# integer units, which the float32 peak does not measure.

# sphinx_gallery_start_ignore
flops = {
    name: workers.call_in(
        0, f"{serving.__name__}:request_flops", name=name.removeprefix("serving-")
    )
    for name in served
}


def time_split(name, m):
    call = call_s.get(m.label)
    left = m.median_s - (call or 0) - flops[name] / machine.peak_flops
    return [
        name.removeprefix("serving-"),
        m.label,
        format_seconds(m.median_s),
        format_seconds(call) if call else "not timed",
        f"{machine.compute_share(flops[name], m.median_s):.2%}",
        format_seconds(left) if left > 0 else "none",
    ]


at_peak = ", ".join(
    f"{name.removeprefix('serving-')} {format_seconds(flops[name] / machine.peak_flops)}"
    for name in served
)
show(
    Table(
        f"Where a request's time goes (its arithmetic at the peak: {at_peak})",
        [
            "model",
            "way",
            "a request",
            "the call alone",
            "share of the peak",
            "left over",
        ],
        [
            time_split(name, m)
            for name, measurements in served.items()
            for m in sorted(measurements, key=lambda m: m.median_s)
        ],
    )
)
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
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


show(
    Table(
        f"{REQUESTS} requests of the small model, one after another, per process",
        [
            "way",
            "p50",
            "p99",
            "p99 / p50",
            "slowest",
            f"stalls (≥ {serving.STALL_FACTOR}x p50)",
        ],
        [
            [
                way,
                across(way, "p50"),
                across(way, "p99"),
                f"{np.median([t['p99'] / t['p50'] for t in tails[way]]):.2f}x",
                across(way, "slowest"),
                f"{sum(t['stalls'] for t in tails[way])} of {REQUESTS * len(tails[way])}",
            ]
            for way in TAIL_WAYS
        ],
    )
)
# sphinx_gallery_end_ignore

# %%
# Where the stalls were:

# sphinx_gallery_start_ignore
for way in TAIL_WAYS:
    stalled = [t for t in tails[way] if t["stalls"]]
    if stalled:
        worst = max(stalled, key=lambda t: t["slowest"])
        print(
            f"{way}: {sum(t['stalls'] for t in stalled)} stalls in {len(stalled)} of "
            f"{len(tails[way])} processes; the slowest {format_seconds(worst['slowest'])}, "
            f"against that process's median of {format_seconds(worst['p50'])}"
        )
    else:
        print(f"{way}: no stalls")
# sphinx_gallery_end_ignore

# %%
# Batches: throughput against latency
# ------------------------------------
#
# Requests that arrive together can be answered in one call: the call's price is paid once for
# the batch, and the arithmetic runs on more data at a time. The small model's requests per
# second at each batch size, against the most the arithmetic allows at the measured peak:

# sphinx_gallery_start_ignore
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
# sphinx_gallery_end_ignore

# %%
# Each batch is one call, so a request waits for the whole batch to be answered:

# sphinx_gallery_start_ignore
show(
    Collapsed(
        "The small model: time to answer a whole batch, per way and batch size",
        Table(
            "The small model: time to answer a whole batch",
            ["way", *(f"batch {b}" for b in BATCHES)],
            [
                [
                    way,
                    *(
                        format_seconds(m.median_s * m.size)
                        for m in batched
                        if m.label == way
                    ),
                ]
                for way in BATCH_WAYS
            ],
        ),
    )
)
# sphinx_gallery_end_ignore

# %%
# A cold start
# ------------
#
# A new process or container answers its first request only after it has imported its runtime,
# loaded the model and answered once (which may build the runtime's plan for the model). Each
# step is timed apart in a fresh Python process that has imported nothing but NumPy, for the
# MobileNet saved as a ``.keras`` file (answered by Keras), a ``.tflite`` and an ``.onnx`` file:

# sphinx_gallery_start_ignore
COLD_WAYS = [w for w in ("keras", "litert", "onnxruntime") if w == "keras" or w in ways]
starts = {
    way: workers.call(f"{cold_start.__name__}:cold_server", name="mobilenet", way=way)
    for way in COLD_WAYS
}


def median_of(way, key):
    return float(np.median([start[key] for start in starts[way]]))


show(
    Table(
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
                "imported"
                if starts[way][0]["imported_tensorflow"]
                else "never imported",
            ]
            for way in COLD_WAYS
        ],
    )
)
# sphinx_gallery_end_ignore

# %%
# A LiteRT or ONNX Runtime server never imports TensorFlow. How much of each cold start the
# import is:

# sphinx_gallery_start_ignore
import_share = {
    way: median_of(way, "import_s")
    / sum(median_of(way, key) for key in serving.COLD_STEPS)
    for way in COLD_WAYS
}
for way, share in import_share.items():
    print(f"{way}: the import is {share:.0%} of the cold start")
# sphinx_gallery_end_ignore

# %%
# Which kernels ran
# -----------------
#
# TensorFlow runs convolutions and products with oneDNN's kernels (the :doc:`environment page
# </environment>` says for which instruction set); LiteRT's interpreter hands what it can of the
# graph to a delegate, XNNPACK on a CPU; ONNX Runtime runs it with an execution provider, on a
# CPU its own (MLAS) kernels. What each says of the MobileNet:

# sphinx_gallery_start_ignore
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
# sphinx_gallery_end_ignore

# %%
# Why TensorFlow takes milliseconds on the MobileNet
# --------------------------------------------------
#
# tensorflow/tensorflow#37989 found LiteRT 2x slower than TensorFlow on a desktop; the claims
# above check that on the MobileNet, and the time split above shows how much of the
# ``tf.function``'s time is left over. TensorFlow's profiler says where it goes: five calls traced
# in one of the page's processes after its timing, by op type (self time leaves out nested ops;
# the share is of all op time in the trace).

# sphinx_gallery_start_ignore
logdir = results.measurements_dir() / "serving.profile"
trace = workers.trace(0, MOBILENET, "tf-function", 1, str(logdir))
op_table = OpTable.from_trace(trace, top=6)
show(Collapsed("The MobileNet in a tf.function: time by op type, most first", op_table))
# sphinx_gallery_end_ignore

# %%
# Per request, against LiteRT's interpreter on the same model:

# sphinx_gallery_start_ignore
tf_ops = sum(t.count for t in op_table.times) / TRACED_CALLS
convolutions = [t for t in op_table.times if "Conv" in t.op]
conv_count = sum(t.count for t in convolutions) / TRACED_CALLS
conv_s = sum(t.self_s for t in convolutions) / TRACED_CALLS
conv_at_peak = flops[MOBILENET.name] / conv_count / machine.peak_flops
litert_s = by_label[MOBILENET.name]["litert"].median_s
print(
    f"TensorFlow: {tf_ops:.0f} ops a request; {conv_count:.0f} convolutions took "
    f"{format_seconds(conv_s)}, {format_seconds(conv_s / conv_count)} each, "
    f"{conv_s / conv_count / conv_at_peak:.0f}x the {format_seconds(conv_at_peak)} their "
    "arithmetic needs on average at the peak"
)
print(
    f"LiteRT's whole request ({format_seconds(litert_s)}) took the time of "
    f"{litert_s / (conv_s / conv_count):.1f} of TensorFlow's convolutions"
)
if reports:
    litert_ops = reports[MOBILENET.name]["litert_ops"]
    elementwise = sum(t.count for t in op_table.times if t.op in ("Mul", "AddV2"))
    print(
        f"LiteRT: {sum(litert_ops.values())} ops a request; "
        f"TensorFlow ran {elementwise / TRACED_CALLS:.0f} Mul and AddV2 ops a request, LiteRT "
        f"{litert_ops.get('MUL', 0) + litert_ops.get('ADD', 0)} MUL and ADD (its converter "
        "folds batch normalization into the convolutions' weights)"
    )
# sphinx_gallery_end_ignore

# %%
# On a request this small, what TensorFlow pays is each convolution kernel's cost beyond its
# arithmetic, times the dozens of them, and the ops LiteRT's converter removed. int8 weights have
# a price per op too: each op of the int8 model that takes them quantizes its float input at
# every call. The int8 model's time over the float one's, per such op:

# sphinx_gallery_start_ignore
for name, report in reports.items():
    float_s, int8_s = (by_label[name][w].median_s for w in ("litert", "litert-int8"))
    per_op = (int8_s - float_s) / report["int8_weight_ops"]
    print(
        f"{name}: {report['int8_weight_ops']} ops with int8 weights; int8 model "
        f"{format_seconds(int8_s)} against {format_seconds(float_s)}: "
        f"{format_seconds(abs(per_op))} an op {'more' if per_op > 0 else 'less'}"
    )
# sphinx_gallery_end_ignore

# %%
# The short answer
# ----------------
#
# The box at the top of this page, built from the checks above.

# sphinx_gallery_start_ignore
fastest = {name: rank(ms) for name, ms in served.items()}
# Which way answered each model fastest, against each way tied with it: what the box quotes.
for name, ranking in fastest.items():
    print(ranking.sentence(f" for the {name.removeprefix('serving-')} model"))


def onnx_caveats():
    """What this page measured against ONNX Runtime: batches of the small model where a
    tf.function answered faster, and stalls beyond a tf.function's."""
    found = []
    for batch in BATCHES:
        tf_faster = Faster("tf-function", "onnxruntime").check(at_size(batched, batch))
        if tf_faster.held:
            found.append(
                f"at a batch of {batch} of the small model, {measured_here(tf_faster)}"
            )
    stalls = {
        w: sum(t["stalls"] for t in tails[w]) for w in ("onnxruntime", "tf-function")
    }
    if stalls["onnxruntime"] > stalls["tf-function"]:
        found.append(
            f"{stalls['onnxruntime']} of its {REQUESTS * len(tails['onnxruntime'])} requests "
            f"of the small model stalled, against {stalls['tf-function']} of a tf.function's"
        )
    return tuple(found)


mlp_call, mlp_litert = by_label[MLP.name]["model-call"], by_label[MLP.name]["litert"]
scenario = Table(
    "A small network's prediction, cpmpercussion/impsy#48's laptop and this machine's tiny MLP",
    ["", "impsy#48 (quoted)", "this machine (measured)"],
    [
        ["Keras, per prediction", "4.96 ms", format_seconds(mlp_call.median_s)],
        ["LiteRT interpreter", "0.17 ms", format_seconds(mlp_litert.median_s)],
        [
            "LiteRT's speed-up",
            "29.17x",
            checked[MLP.name, litert_vs_keras].effect,
        ],
    ],
)
answer = ShortAnswer(
    "Serve with whatever answers a call with the least work around it. On this machine, "
    + "; ".join(
        ranking.sentence(f" for the {name.removeprefix('serving-')} model")
        for name, ranking in fastest.items()
    )
    + f". Keras's predict took {format_seconds(by_label[MLP.name]['predict'].median_s)} a "
    "request on the tiny model: it is built for batches. On the tiny model the call is the "
    f"cost (LiteRT's call with nothing to compute took {format_seconds(call_s['litert'])}, "
    f"its answer from the tiny model {format_seconds(mlp_litert.median_s)}), which the LiteRT "
    "interpreter and ONNX Runtime keep small; on a convolutional one "
    "the kernels are, and the runtimes' kernels decide. A server that loads a .tflite or an "
    ".onnx file never imports TensorFlow; importing Keras and TensorFlow was "
    f"{import_share['keras']:.0%} of a Keras server's cold start. These figures are from "
    "this page's 2-core virtual machine.",
    [
        Recommendation(
            "Serve a tiny model with LiteRT's interpreter, not Keras",
            checked[MLP.name, litert_vs_keras],
            Change("the serving runtime", "LiteRT's interpreter", model="a tiny MLP"),
            requires=(close["mlp", "litert"],),
            recipe="convert-to-litert-and-check-the-outputs",
        ),
        Recommendation(
            "Never call predict once per request",
            checked[MLP.name, call_vs_predict],
            Change("model.predict on a small batch", "avoided"),
            recipe="serve-a-tf-function-with-an-input-signature",
        ),
        Recommendation(
            "Give LiteRT every core for a convolutional model",
            checked[MOBILENET.name, threads_faster],
            Change("LiteRT's num_threads", "every core", model="convolutional"),
        ),
        Recommendation(
            "Try int8 weights in LiteRT for a model of a few large products",
            checked[CONV1D.name, int8_faster],
            Change("LiteRT's weights", "int8", model="a few large products"),
            requires=(close["conv1d", "litert-int8"],),
            recipe="convert-to-litert-and-check-the-outputs",
        ),
        Recommendation(
            "Keep float weights in LiteRT for a model of many small convolutions",
            checked[MOBILENET.name, float_faster],
            Change("LiteRT's weights", "float", model="many small convolutions"),
            recipe="convert-to-litert-and-check-the-outputs",
        ),
        Recommendation(
            "Try ONNX Runtime beside a tf.function on a convolutional model",
            checked[MOBILENET.name, onnx_vs_tf],
            Change("the serving runtime", "ONNX Runtime", model="convolutional"),
            requires=(close["mobilenet", "onnxruntime"],),
            caveats=onnx_caveats(),
            recipe="convert-to-onnx-and-check-the-outputs",
        ),
    ],
    scenario,
)
answer.publish("serving")
print(answer)
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
# One request a call is published from the first runs; the batch plot's own run of it would be
# a second row of the same workload, way and size.
published = [m for ms in served.values() for m in ms] + calls
published += [m for m in batched if m.size > 1]
print(results.publish("serving", env, published))
workers.close()
# sphinx_gallery_end_ignore

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
# Convert with TensorFlow's converter, answer with LiteRT's interpreter (``pip install
# ai-edge-litert``), and check its answers against Keras's within a tolerance, as a share of the
# largest answer (this page's: :data:`~perfguide.workloads.serving.FLOAT_TOLERANCE` for float
# weights, :data:`~perfguide.workloads.serving.QUANTIZED_TOLERANCE` for int8):

import keras
import numpy as np
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter

model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(10)])
converter = tf.lite.TFLiteConverter.from_keras_model(model)
# converter.optimizations = [tf.lite.Optimize.DEFAULT]  # for int8 weights
interpreter = Interpreter(model_content=converter.convert())
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
