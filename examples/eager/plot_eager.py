"""
Why is eager TensorFlow slow on small ops, and what do custom gradients cost?
=============================================================================

In eager mode every TensorFlow op is a call from Python into the runtime, and that call has a
fixed price however little the op computes. When eager execution was introduced (Google Brain's
announcement *Eager Execution: An imperative, define-by-run interface to TensorFlow*, by Asim
Shankar and Wolff Dobson, read here in a Chinese translation), Yaroslav Bulatov compared it with
PyTorch: no difference for large matrix products, about 20 % slower for O(n^1.5) ops such as
matmul and convolution, and two to five times slower for many O(n) ops such as vector additions
(his figures, as quoted there). The same article showed a custom gradient that makes
log(1 + e^x) numerically stable, and said it was cheaper too.

.. raw:: html
   :file: ../../_generated/extra/answers/eager.answer.html

This page measures where the fixed price dominates and where the arithmetic does, where the time
of one op and of one ``tf.function`` call goes, how much of a gradient step is overhead, and
whether that custom gradient is as stable and as cheap as claimed. Every number is measured by
this page on the machine that built it; the workloads are in :mod:`perfguide.workloads.eager`,
and :doc:`How to read these pages </reading>` defines the terms of its tables and verdicts.
"""

# %%
# Where this page was measured
# ----------------------------
#
# The guide's own calls take a line each: ``Workers`` starts two fresh Python processes, and
# every comparison below is timed in each of them in turn, its variants interleaved; a time is
# the median of the two processes' medians (their mean).

import matplotlib.pyplot as plt

from perfguide.measure.runner import default_device
from perfguide.pages import eager as page
from perfguide.processes.pool import Workers
from perfguide.report.publishing import results
from perfguide.report.publishing.answers import ShortAnswer
from perfguide.report.publishing.show import show
from perfguide.report.tables.comparison import Comparison
from perfguide.report.tables.table import Collapsed
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import eager as eg

device = default_device()
workers = Workers(device=device, limits=True)
env, machine = workers.environment, workers.machine_limits
print(results.where_measured(env, device))
print(
    f"memory bandwidth {machine.memory_bandwidth / 1e9:.1f} GB/s, "
    f"peak float32 {machine.peak_flops / 1e9:.0f} GFLOP/s"
)
peers = ", ".join(f"{name} {version}" for name, version in eg.peer_versions().items())
print(f"Other frameworks measured alongside: {peers or 'none installed'}")

# %%
# One op, from one element to ten million
# ---------------------------------------
#
# Time per op for x + x (O(n) work in n elements) and for a square matrix product (O(n^1.5) work
# in n elements), on the same float32 data: ``numpy``, ``eager`` (TensorFlow's default mode, one
# call into the runtime per op) and any installed peer, plus ``numpy-preallocated``, NumPy's add
# into an output array made once (why it is there is below). Where a line is flat, the op's fixed
# price dominates; where it climbs, the arithmetic does. The timed call is the op itself, and its
# result stays where the framework put it (TensorFlow on the CPU has finished the op when the
# call returns): each variant is timed without a copy of its result.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: _add_call
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: _matmul_call
#
# Each sweep is timed in full at the sizes its checks read, and quickly at the others, where
# only the curve's shape matters.

add = page.ADD_SWEEP.run(workers)
matmul = page.MATMUL_SWEEP.run(workers)
page.time_plots(add, matmul)
plt.show()

# %%
# The same measurements as work done per second, against this machine's measured limits: x + x
# reads n floats and writes n (8 bytes an element), against the memory bandwidth; a product of
# side s does 2·s³ floating-point operations, against the peak of a large matrix product.

page.rate_plots(add, matmul, machine)
plt.show()

# %%
# At the largest sizes, each variant's share of the limit that bounds it:

print(page.largest_shares(add, matmul, machine))

# %%
# The checks compare eager TensorFlow with NumPy at the smallest and the largest size, and with
# each installed peer.

if not eg.PEERS:
    print(page.NO_PEERS)
show(ClaimReport(page.ADD_SWEEP.claims(add) + page.MATMUL_SWEEP.claims(matmul)))

# %%
# Two things these checks show at the largest sizes have causes the page can measure.
#
# **x + x: NumPy's time is mostly fresh memory.** NumPy gives every result a newly allocated
# array; one of 40 MB comes straight from the operating system, which maps and zeroes new pages
# the first time they are touched, on every call. TensorFlow's allocator keeps freed buffers and
# hands them out again. The ``numpy-preallocated`` row adds into one output array made once
# (``np.add(x, x, out)``), in the same run: if fresh memory is the cost, that closes the gap.

largest_add = add[page.ADD_SIZES[-1]]
print(page.fresh_memory(largest_add, machine))
show(
    Collapsed(
        "The check: does an output array made once close the gap?",
        ClaimReport.of([page.FRESH_MEMORY], largest_add),
    )
)

# %%
# **x @ x: the gap is the kernel, not eager dispatch.** The fixed cost of one eager op (measured
# below, on calls that do nothing) is microseconds; a product of side 1024 takes
# milliseconds. The difference between the two libraries is how close their matrix-multiply
# kernels come to the peak:

largest_matmul = matmul[page.MATMUL_SIZES[-1]]
print(page.product_kernels(largest_matmul, machine))

# %%
# A chain of small ops
# --------------------
#
# Real code rarely runs one op: here are ten rounds of x ← tanh(0.9·x + 0.1) on 100 elements,
# three ops a round, run ``eager`` and as one ``tf.function`` (``tf-function``), with ``numpy``
# for scale.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: small_ops

small_ops = workers.run(eg.SMALL_OPS, settle=[page.CHAIN])
show(
    Collapsed(
        "The chain's times, every variant", Comparison(small_ops, baseline="eager")
    )
)

# %%

chain_check = ClaimReport.of([page.CHAIN], small_ops)
show(chain_check)

# %%
# What a call costs when it does nothing
# --------------------------------------
#
# Each of the first three returns its input (1000 floats) unchanged, so the time is pure
# overhead: a plain Python function (``python-function``), one eager op (``eager-identity``,
# ``tf.identity``) and one ``tf.function`` call (``tf-function``). The fourth, ``numpy-copy``, is
# what ``.numpy()`` costs: a copy of the tensor into a new NumPy array, paid whenever a result is
# fetched to Python.

calls = workers.run(eg.CALL_OVERHEAD)
show(Collapsed("The four calls' times", Comparison(calls, baseline="python-function")))

# %%

print(page.call_costs(calls, largest_matmul, env["timer_floor_s"]))
show(
    Collapsed(
        "The check: a tf.function call against an eager op",
        ClaimReport.of([page.FUNCTION_COSTS_MORE], calls),
    )
)

# %%
# Where the time of one call goes
# -------------------------------
#
# An eager op doing nothing costs the time of many plain Python calls, a ``tf.function`` call
# many more (the ratios printed above). Where does that time go? Each variant below enters
# TensorFlow one layer deeper than the one before it, all timed in one interleaved run; the
# difference between two layers is what the outer one adds. For a ``tf.function`` call,
# ``tf-function`` is the call as written, ``concrete-function`` calls the traced graph's
# ``ConcreteFunction`` directly (skipping the argument binding), and ``runtime-execute`` is the
# runtime's own ``execute`` alone.
#
# .. dropdown:: Every layer, and the code being timed
#
#    An eager op, outermost first: ``public-api`` (``tf.identity``), ``op-wrapper`` (the
#    generated op wrapper) and ``fast-path`` (the C fast path; C++ from there on). A
#    ``tf.function`` call: ``tf-function`` (the ``Function``, which binds and canonicalizes its
#    arguments and looks up the traced graph), ``input-signature`` (the same, given an
#    ``input_signature``), ``concrete-function``, ``flat-call`` (the flat call of the graph
#    function) and ``runtime-execute``. The Python function calls each makes are counted with
#    ``cProfile``. This build machine is a small virtual machine on which every Python call is
#    slow, so these fixed costs are larger here than on a fast desktop.
#
#    .. literalinclude:: /../perfguide/measure/anatomy.py
#       :pyobject: op_layers
#
#    .. literalinclude:: /../perfguide/measure/anatomy.py
#       :pyobject: function_layers

op_layers = workers.run(eg.OP_LAYERS)
function_layers = workers.run(eg.FUNCTION_LAYERS, settle=[page.CONCRETE])
show(
    Collapsed(
        "Every layer of a tf.function call",
        Comparison(function_layers, baseline="tf-function"),
    )
)

# %%

show(
    Collapsed(
        "Every layer of an eager op", Comparison(op_layers, baseline="public-api")
    )
)

# %%
# The split as bars on a linear axis: each segment is what one layer adds.

page.layer_bars(function_layers, op_layers)
plt.show()

# %%

python_calls = page.python_calls_per_layer()
print(page.layer_split(function_layers, op_layers, python_calls))
layer_checks = ClaimReport.of(page.LAYER_CHECKS, function_layers)
show(layer_checks)

# %%
# So ``tf.function`` pays off when it replaces enough eager ops to cover its own call; the claims
# on the chain above and on the gradient below test whether they do.
#
# Gradients: eager tape or graph
# ------------------------------
#
# One gradient of a small two-layer network (64 → 64 → 1, batch of 32) with a ``GradientTape``,
# run eagerly (``eager-tape``) or inside a ``tf.function`` (``tf-function-tape``); the tape
# records every op in both, but only eagerly does each op cross from Python.
#
# .. rubric:: The code being timed
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: network_gradient

gradients = workers.run(eg.GRADIENT, settle=[page.GRAPH_GRADIENT])
show(
    Collapsed("The two gradients' times", Comparison(gradients, baseline="eager-tape"))
)

# %%

gradient_check = ClaimReport.of([page.GRAPH_GRADIENT], gradients)
show(gradient_check)

# %%
# log(1 + e^x) and its custom gradients
# -------------------------------------
#
# The derivative of log(1 + e^x) is e^x / (1 + e^x). Three ways to get it:
#
# * ``naive``: differentiate ``log(1 + exp(x))`` automatically. For x above about 89, e^x is
#   infinite in float32, and the chain rule's 1/(1 + e^x) · e^x is 0 · ∞, not a number.
# * ``custom-gradient``: the article's ``tf.custom_gradient``, which reuses e^x from the forward
#   pass and computes 1 − 1/(1 + e^x). That is finite for large x, but for very negative x it
#   subtracts two numbers that are almost 1, and the tiny true gradient is lost.
# * ``stable-custom-gradient``: also reuses e^x, but writes the gradient as 1/(1 + e^−x) for
#   positive x and e^x/(1 + e^x) otherwise, so it neither overflows nor cancels.
#
# .. rubric:: The three versions
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: log1pexp_naive
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: log1pexp_custom
#
# .. literalinclude:: /../perfguide/workloads/eager.py
#    :pyobject: log1pexp_stable
#
# Each is compared with the float64 derivative (computed stably) over x from −80 to 120; the
# plot shows relative error, with NaN drawn at the top.

errors = page.gradient_errors()
page.gradient_error_plot(errors)
plt.show()

# %%
# The checks. "Float32 precision" means a relative error below 1e-6 everywhere in the range.

show(page.accuracy_claims(errors))

# %%
# Do the custom gradients cost speed? Value and gradient of 1000 points in [−10, 10], where all
# three agree, eagerly. The article says reusing e^x makes the gradient cheaper.

log1pexp = workers.run(eg.LOG1PEXP_WORKLOAD, settle=page.LOG1PEXP_CHECKS)
show(Collapsed("The three versions' times", Comparison(log1pexp, baseline="naive")))

# %%

show(ClaimReport.of(page.LOG1PEXP_CHECKS, log1pexp))

# %%
# Why: reusing e^x saves one exponential, but the custom gradient runs more ops, and on this
# machine each eager op has the fixed cost measured above. The ops each version runs for one value
# and gradient, counted from its traced graph (``IdentityN`` and the extra ``Identity`` ops are
# how ``tf.custom_gradient`` attaches the gradient), and what the extra ops should cost at the
# median eager op measured above:

op_counts = page.op_counts()
print(page.predicted_costs(op_counts, log1pexp, calls))

# %%
# Higher-order gradients
# ----------------------
#
# Nesting two tapes gives the second derivative, e^x/(1 + e^x)², through each version, custom
# gradients included; here compared with its float64 value at 41 points in [−10, 10].

show(
    Collapsed(
        "The checks of the three second derivatives", page.second_derivative_claims()
    )
)

# %%
# The short answer
# ----------------
#
# The box at the top of this page, built from the checks above.

answer = ShortAnswer(
    page.answer_sentences(add, function_layers, op_counts),
    page.recommendations(chain_check, gradient_check, layer_checks, errors),
)
# sphinx_gallery_start_ignore
answer.publish("eager")
# sphinx_gallery_end_ignore
print(answer)

# %%
# Take the numbers with you
# -------------------------
#
# Everything timed on this page is published as `eager.json <../../measurements/eager.json>`_,
# in the shape ``python -m perfguide run eager-add --json PATH`` writes (the other workloads here
# are ``eager-matmul``, ``eager-small-ops``, ``eager-call``, ``eager-op-layers``,
# ``eager-function-layers``, ``eager-gradient`` and ``eager-log1pexp``). To rerun this page on
# your own machine, install the guide's package from a checkout of its repository
# (``python -m pip install -e ".[cpu]"``) and run the script downloaded below; install PyTorch
# and JAX beside it to see them on the same curves.

swept = page.every_size(add) + page.every_size(matmul)
timed = small_ops + calls + op_layers + function_layers + gradients + log1pexp
print(results.publish("eager", env, swept + timed))
workers.close()


# %%
# Recipes
# -------
#
# The practices this page advises, as lines to paste. Each runs on its own in a second or two
# once TensorFlow is imported, and ends with a check that it works.
#
# Wrap a chain of small ops in tf.function
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# One call runs all thirty ops of the chain timed above in the runtime, instead of thirty calls
# from Python; the check compares it with the same chain run eagerly.

import numpy as np
import tensorflow as tf


def chain(x):
    for _ in range(10):
        x = tf.tanh(x * 0.9 + 0.1)
    return x


chain_in_graph = tf.function(chain)
x = tf.random.normal([100])
np.testing.assert_allclose(chain_in_graph(x), chain(x), rtol=1e-5)

# %%
# Compute a gradient inside tf.function
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# Put the ``GradientTape`` inside the ``tf.function``, so the forward and backward ops run as one
# graph; ``python_function`` is the same code run eagerly, for the check.

w = [tf.Variable(tf.random.normal([64, 64])), tf.Variable(tf.random.normal([64, 1]))]


@tf.function
def gradient(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.tanh(x @ w[0]) @ w[1]))
    return tape.gradient(loss, w)


x = tf.random.normal([32, 64])
for in_graph, eager in zip(gradient(x), gradient.python_function(x), strict=True):
    np.testing.assert_allclose(in_graph, eager, rtol=1e-4, atol=1e-6)

# %%
# Call the concrete function on a hot path
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# A ``ConcreteFunction`` is one traced graph: calling it skips the ``tf.function``'s binding of
# its arguments, the Python work measured above on this small 2-core virtual machine (where
# Python calls are slow). It accepts only the dtype and shape it was traced for.


@tf.function
def scale(x):
    return 2.0 * x + 1.0


scale_vector = scale.get_concrete_function(tf.TensorSpec([None], tf.float32))
np.testing.assert_allclose(scale_vector(tf.constant([1.0, 2.0, 3.0])), [3.0, 5.0, 7.0])
assert scale.experimental_get_tracing_count() == 1

# %%
# A stable custom gradient for log(1 + e^x)
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
#
# .. recipe-status::
#
# The ``stable-custom-gradient`` version above: it reuses e^x, and it neither divides ∞ by ∞ nor
# subtracts two numbers close to 1, at the extra time measured above. The check: its gradient is
# finite and float32-precise from x = −80 to x = 100.


@tf.custom_gradient
def log1pexp(x):
    e = tf.exp(x)
    positive = x > 0

    def grad(upstream):  # 1/(1 + e^-x) for x > 0, e^x/(1 + e^x) otherwise
        return upstream * tf.where(positive, 1 / (1 + 1 / e), e / (1 + e))

    return tf.where(positive, x + tf.math.log1p(1 / e), tf.math.log1p(e)), grad


x = tf.constant([-80.0, -5.0, 0.0, 5.0, 100.0])
with tf.GradientTape() as tape:
    tape.watch(x)
    y = log1pexp(x)
sigmoid = 1 / (1 + np.exp(-x.numpy().astype(np.float64)))
np.testing.assert_allclose(tape.gradient(y, x), sigmoid, rtol=1e-6)
