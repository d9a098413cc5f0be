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
# sphinx_gallery_start_ignore
import matplotlib.pyplot as plt
import numpy as np

from perfguide.measure.runner import default_device
from perfguide.processes.pool import Workers
from perfguide.processes.worker import TRACED_CALLS
from perfguide.report import results
from perfguide.report.answers import Recommendation, Scenario, ShortAnswer
from perfguide.report.claims import ClaimReport, Faster, exact
from perfguide.report.compare import Comparison, at_size
from perfguide.report.format import format_bytes, format_seconds, format_speedup
from perfguide.report.ops import OpTable
from perfguide.report.plotting import dot_plot, rate_plot
from perfguide.report.ranking import rank
from perfguide.workloads import serving

device = default_device()
workers = Workers(device=device, limits=True)
env, machine = workers.environment, workers.machine_limits
print(f"CPU: {env['cpu_model']}, {env['usable_cores']} usable cores")
print(f"TensorFlow {env['tensorflow']}, NumPy {env['numpy']}")
print(f"measured peak: {machine.peak_flops / 1e9:.0f} GFLOP/s")
for way, why in serving.UNAVAILABLE.items():
    print(f"not served here: {way} ({why})")
# sphinx_gallery_end_ignore

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
# sphinx_gallery_start_ignore
differences = workers.call_in(0, f"{serving.__name__}:output_differences")
Scenario(
    "Largest difference from Keras's answers, per model and way",
    ["way", *differences],
    [
        [way, *(f"{differences[name][way]:.1e}" for name in differences)]
        for way in differences["mlp"]
    ],
)
# sphinx_gallery_end_ignore

# %%
# A converted or quantized model is advised only where its answers stay within a stated
# tolerance of Keras's (as a share of Keras's largest answer): float ways within
# :data:`~perfguide.workloads.serving.FLOAT_TOLERANCE`, int8 weights within
# :data:`~perfguide.workloads.serving.QUANTIZED_TOLERANCE`.


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
ClaimReport(list(close.values()))
# sphinx_gallery_end_ignore

# %%
# One request at a time
# ---------------------
#
# A request of one sample, answered by each way, in three fresh processes taking turns. The tiny
# model shows what a call costs; the MobileNet what its arithmetic does. To keep this page's
# build short, ``predict`` is timed on the tiny model only, and Keras's other calls, XLA and the
# SavedModel (which runs the ``tf.function``'s graph) on the two smaller models only. A way
# whose verdict below is undecided after three processes is timed in more.
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
Comparison(served[MLP.name], baseline="predict")
# sphinx_gallery_end_ignore

# %%
# sphinx_gallery_start_ignore
Comparison(served[CONV1D.name], baseline="model-call")
# sphinx_gallery_end_ignore

# %%
# sphinx_gallery_start_ignore
Comparison(served[MOBILENET.name], baseline="tf-function")
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
# sphinx_gallery_start_ignore
by_label = {name: {m.label: m for m in ms} for name, ms in served.items()}
checked = {
    (name, claim): claim.check(served[name]).on(name.removeprefix("serving-"))
    for name, claims in model_claims.items()
    for claim in claims
}
ClaimReport(list(checked.values()))
# sphinx_gallery_end_ignore

# %%
# Calls or arithmetic
# -------------------
#
# What a call costs with nothing to compute: each way (but ``predict``, priced on the tiny model
# above) answering a model that returns its request unchanged, ``identity``:
# sphinx_gallery_start_ignore
calls = workers.run(IDENTITY, [w for w in ways if w != "predict"], quick=True)
call_s = {m.label: m.median_s for m in calls}
Comparison(calls, baseline="model-call")
# sphinx_gallery_end_ignore

# %%
# Each model's time per request set against the call alone (the identity model's time, the
# same way) and against its arithmetic at the machine's measured peak (of float32 products);
# what is left over is the work a way does around each op. A share of the peak above 100 % is
# not float32 arithmetic: int8 weights multiply on the CPU's integer units, which the float32
# peak does not measure.
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
Scenario(
    f"Where a request's time goes (its arithmetic at the peak: {at_peak})",
    ["model", "way", "a request", "the call alone", "share of the peak", "left over"],
    [
        time_split(name, m)
        for name, measurements in served.items()
        for m in sorted(measurements, key=lambda m: m.median_s)
    ],
)
# sphinx_gallery_end_ignore

# %%
# The tail: what a user waits for
# -------------------------------
#
# A server is judged by its slowest answers too. Each process answers 300 requests of the small
# model one after another with each way, after one untimed request, and keeps every answer's
# time: the median (p50) and the 99th percentile (p99) of each process, lowest to highest
# across the processes.
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


Scenario(
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
# sphinx_gallery_end_ignore

# %%
# A *stall* is a request that took many times its process's median (the column's heading says
# how many): a few stalls in a process make its slowest answers, and its p99 once
# they are 1 % of its requests, while its median stays put. Where the stalls were:
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
Scenario(
    "The small model: time to answer a whole batch",
    ["way", *(f"batch {b}" for b in BATCHES)],
    [
        [way, *(format_seconds(m.median_s * m.size) for m in batched if m.label == way)]
        for way in BATCH_WAYS
    ],
)
# sphinx_gallery_end_ignore

# %%
# A cold start
# ------------
#
# A new process or container answers its first request only after it has imported its runtime,
# loaded the model and answered once (which may build the runtime's plan for the model). Each
# of these is timed apart in a fresh Python process that has imported nothing but NumPy, once
# per page process, for the MobileNet saved as a ``.keras`` file (answered by Keras), as a
# ``.tflite`` file and as an ``.onnx`` file:
# sphinx_gallery_start_ignore
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
# </environment>` says which instruction set they were generated for); the LiteRT interpreter
# hands what it can of the graph to a delegate, XNNPACK on a CPU; ONNX Runtime runs the graph
# with an execution provider, on a CPU its own (MLAS) kernels. What each says of the MobileNet:
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
# tensorflow#37989 found LiteRT 2x slower than TensorFlow on a desktop; here the interpreter
# answered the MobileNet many times faster than the same model in a ``tf.function``, and in the
# table above neither the call alone nor the arithmetic at the peak accounts for the
# ``tf.function``'s time. TensorFlow's profiler says where it goes: five calls traced in one of
# the page's processes after its timing, by op type, most time first (self time leaves out
# nested ops; the share is of all op time in the trace).
# sphinx_gallery_start_ignore
logdir = results.measurements_dir() / "serving.profile"
trace = workers.trace(0, MOBILENET, "tf-function", 1, str(logdir))
op_table = OpTable.from_trace(trace, top=6)
op_table
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
# arithmetic, times the dozens of them, and the ops LiteRT's converter removed. int8 weights have a price per op too: each op of the int8 model that takes
# them quantizes its float input at every call. The int8 model's time over the float one's, per
# such op:
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


def onnx_caveats():
    """What this page measured against ONNX Runtime: batches of the small model where a
    tf.function answered faster, and stalls beyond a tf.function's."""
    found = []
    for batch in BATCHES:
        tf_faster = Faster("tf-function", "onnxruntime").check(at_size(batched, batch))
        if tf_faster.held:
            found.append(
                f"at a batch of {batch} of the small model a tf.function was {tf_faster.effect}"
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
    "Serve with whatever answers a call with the least work around it. On this machine, "
    + "; ".join(
        ranking.sentence(f" for the {name.removeprefix('serving-')} model")
        for name, ranking in fastest.items()
    )
    + f". Keras's predict took {format_seconds(by_label[MLP.name]['predict'].median_s)} a "
    "request on the tiny model: it is built for batches. On a small model the call is the "
    f"cost (LiteRT's call with nothing to compute took {format_seconds(call_s['litert'])}, "
    f"its answer from the tiny model {format_seconds(mlp_litert.median_s)}), which the LiteRT "
    "interpreter and ONNX Runtime keep small; on a convolutional one "
    "the kernels are, and the runtimes' kernels decide. A server that loads a .tflite or an "
    ".onnx file never imports TensorFlow; importing Keras and TensorFlow was "
    f"{import_share['keras']:.0%} of a Keras server's cold start. These figures are from "
    "this page's 2-core virtual machine.",
    [
        Recommendation(
            "Serve a small model with LiteRT's interpreter, not Keras",
            checked[MLP.name, litert_vs_keras],
            requires=(close["mlp", "litert"],),
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
            requires=(close["conv1d", "litert-int8"],),
        ),
        Recommendation(
            "Keep float weights in LiteRT for a model of many small convolutions",
            checked[MOBILENET.name, float_faster],
        ),
        Recommendation(
            "Try ONNX Runtime beside a tf.function on a convolutional model",
            checked[MOBILENET.name, onnx_vs_tf],
            requires=(close["mobilenet", "onnxruntime"],),
            caveats=onnx_caveats(),
        ),
    ],
    scenario,
)
answer.publish("serving", "How should I serve my model on a CPU?")
print(answer)
# sphinx_gallery_end_ignore

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
# </auto_examples/tf_data/plot_tf_data>` Next: :doc:`Why does my TensorFlow process keep
# growing? </auto_examples/memory/plot_memory>`; all recommendations of the guide, measured:
# :doc:`the checklist </checklist>`.
# One request a call is published from the first runs; the batch plot's own run of it would be
# a second row of the same workload, way and size.
# sphinx_gallery_start_ignore
published = [m for ms in served.values() for m in ms] + calls
published += [m for m in batched if m.size > 1]
results.save(results.measurements_dir() / "serving.json", env, published)
print(f"published {len(published)} measurements")
workers.close()
# sphinx_gallery_end_ignore
