"""Where the time of one TensorFlow call goes: the call peeled layer by layer, and counted.

A ``tf.function`` call passes through Python layers before the runtime executes the graph: the
``Function`` binds and canonicalizes the arguments and finds the traced graph, the
``ConcreteFunction`` flattens them and handles the tape, the atomic function makes the call, and
``execute`` hands it to the C++ runtime. An eager op passes through the public API function (with
its dispatch decorators) and the generated op wrapper to the C fast path, which does the rest
in C++. Each layer here is a callable that enters the call one layer deeper, so timing them side
by side (one interleaved run) prices each layer as the difference to the next. These reach into
TensorFlow's internals (as of TensorFlow 2.21), which is what measuring them takes.

:func:`python_calls` counts the Python function calls one call makes, with :mod:`cProfile`: a
count, which the profiler's own overhead cannot distort as it distorts times.
"""

from __future__ import annotations

import cProfile
import itertools
import pstats
from collections.abc import Callable
from typing import Any

import tensorflow as tf
from tensorflow.python import pywrap_tfe
from tensorflow.python.eager import context, execute
from tensorflow.python.ops import gen_array_ops

from perfguide.measure.timer import Timed

#: Layers of a ``tf.function`` call, outermost first.
FUNCTION_LAYERS = ("tf-function", "concrete-function", "flat-call", "runtime-execute")
#: Layers of an eager op (``tf.identity``), outermost first; the fast path is C++ from its entry.
OP_LAYERS = ("public-api", "op-wrapper", "fast-path")


def function_layers(function: Any, x: tf.Tensor) -> dict[str, Timed]:
    """``function(x)`` (a ``tf.function`` of one tensor) entered at each of
    :data:`FUNCTION_LAYERS`."""
    concrete = function.get_concrete_function(x)
    atomic = concrete._inference_function  # the graph function the runtime executes
    ctx = context.context()
    attrs = tuple(itertools.chain(*ctx.function_call_options.as_attrs().items()))
    name = atomic.name.decode()
    return {
        "tf-function": Timed(function, (x,), traced=(function,)),
        "concrete-function": Timed(concrete, (x,)),
        "flat-call": Timed(atomic.call_flat, (x,)),
        "runtime-execute": Timed(execute.execute, (name, 1, [x], attrs, ctx)),
    }


def op_layers(x: tf.Tensor) -> dict[str, Timed]:
    """``tf.identity(x)`` entered at each of :data:`OP_LAYERS`."""
    ctx = context.context()
    return {
        "public-api": Timed(tf.identity, (x,)),
        "op-wrapper": Timed(gen_array_ops.identity, (x,)),
        "fast-path": Timed(pywrap_tfe.TFE_Py_FastPathExecute, (ctx, "Identity", None, x)),
    }


#: Graph ops no eager call dispatches: inputs, constants and the no-ops that order others.
NOT_DISPATCHED = ("Placeholder", "Const", "NoOp")


def dispatched_ops(graph: tf.Graph) -> list[tf.Operation]:
    """The ops of a traced ``graph`` that an eager call of the same Python would dispatch one
    by one: inputs, constants, no-ops and the ``Identity`` ops through which a function
    returns its outputs left out."""
    returned = {id(t.op) for t in getattr(graph, "outputs", ()) if t.op.type == "Identity"}
    return [
        op
        for op in graph.get_operations()
        if op.type not in NOT_DISPATCHED and id(op) not in returned
    ]


def python_calls(fn: Callable[..., Any], *args: Any, calls: int = 200) -> float:
    """Python function calls per ``fn(*args)``, averaged over ``calls`` profiled calls (after one
    unprofiled call, so a first trace is not counted)."""
    fn(*args)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        fn(*args)
    profile.disable()
    stats = pstats.Stats(profile)
    python = sum(
        primitive
        for (filename, _, _), (primitive, *_rest) in stats.stats.items()
        if filename != "~"  # "~" marks built-in (C) functions
    )
    return python / calls
