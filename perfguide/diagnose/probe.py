"""The reader's function examined inside a fresh worker process (see :mod:`perfguide.diagnose`).

:func:`register` loads the function, makes its arguments, checks that ``tf.function`` and
``jit_compile=True`` forms compute what the function computes eagerly, and registers the forms
that do as a workload, so the worker times them like any chapter's variants. :func:`facts`
reads the traced graph (ops, FLOPs, bytes, ops that leave the graph), prices an eager op and
profiles a graph call; :func:`retracing` calls the function with varied inputs and counts the
traces. Each returns plain data; the parent process judges it (:mod:`perfguide.diagnose.findings`).
Errors in what the reader gave raise :class:`~perfguide.processes.fresh.BadInput`.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import io
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.diagnose.target import (
    BATCH_WORKLOAD,
    TRAINING_WORKLOAD,
    WORKLOAD,
    InputSpec,
    Target,
    is_file_reference,
)
from perfguide.measure import anatomy, profile
from perfguide.measure.memory import SAMPLES, resident_bytes, resident_series
from perfguide.measure.timer import Timed, measure
from perfguide.processes.fresh import BadInput
from perfguide.workloads import WORKLOADS, serving
from perfguide.workloads.base import Workload, call_of
from perfguide.workloads.training_loop import custom_train_step, inference_function

#: How far a form's result may be from the eager one's, relative to the result's largest
#: element (XLA may sum in another order).
RTOL, ATOL = 1e-3, 1e-5
#: Ops that run Python (or NumPy) from inside a graph: the runtime waits for the interpreter.
LEAVE_THE_GRAPH = ("EagerPyFunc", "PyFunc", "PyFuncStateless")
#: Calls profiled for the op time of a graph call.
PROFILED_CALLS = 5

_state: dict[str, Any] = {}


def load(reference: str) -> Any:
    """The object ``file.py:name`` or ``package.module:name`` names."""
    module_name, _, name = reference.rpartition(":")
    try:
        if is_file_reference(module_name):
            module = _import_file(Path(module_name))
        else:
            module = importlib.import_module(module_name)
    except Exception as error:  # the reader's module: anything it raises is theirs
        raise BadInput(f"cannot import {module_name}: {type(error).__name__}: {error}") from None
    try:
        found = getattr(module, name)
    except AttributeError:
        raise BadInput(f"{module_name} has no {name!r}") from None
    if not callable(found):
        raise BadInput(f"{reference} is not a function")
    return found


def _import_file(path: Path) -> Any:
    # Its own folder first on the path, as `python file.py` would have it, so its imports work.
    sys.path.insert(0, str(path.resolve().parent))
    spec = importlib.util.spec_from_file_location(f"_perfguide_target_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tensor(spec: InputSpec, rng: np.random.Generator) -> Any:
    if not spec.is_tensor:
        return spec.number
    if spec.dtype == "bool":
        values = rng.random(spec.shape) < 0.5
    elif spec.dtype.startswith(("int", "uint")):
        values = rng.integers(0, 10, spec.shape)  # small: valid as class labels and indices
    else:
        values = rng.standard_normal(spec.shape).astype(np.float32)
    return tf.cast(tf.constant(values), spec.dtype)


def arguments(target: Target, seed: int = 0) -> tuple[Any, ...]:
    """The function's arguments: from the factory, or made from the specs (seeded)."""
    if target.factory is not None:
        made = _reader_call(target.factory, load(target.factory))
        return tuple(made) if isinstance(made, (tuple, list)) else (made,)
    rng = np.random.default_rng(seed)
    return tuple(_tensor(spec, rng) for spec in target.inputs)


def materialize(result: Any) -> list[np.ndarray]:
    """Every tensor of ``result`` (ragged and sparse ones as their parts) as a NumPy array:
    the work is then surely done."""
    return [np.asarray(leaf) for leaf in tf.nest.flatten(result, expand_composites=True)]


def _one_line(error: BaseException) -> str:
    """An error's message in one line: TensorFlow's "in user code:" messages end with it."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    return lines[-1] if lines[0] == "in user code:" else lines[0]


#: What TensorFlow's errors mean for code that cannot be traced, compiled or relaxed, in a
#: reader's words: a fragment of the message, and what it says of the reader's code.
REASONS = (
    (
        "has no attribute 'numpy'",
        "it calls .numpy(), which reads a value back to Python: a graph being traced has no "
        "values yet, so this keeps the function eager",
    ),
    (
        "cannot be interpreted as an integer",
        "it needs a static shape: Python uses a dimension (a range over x.shape[0], say) that "
        "is unknown (None) in a graph traced for any size",
    ),
    (
        "singleton tf.Variables",
        "it creates a tf.Variable at every call: create it once, outside the function",
    ),
    ("unsupported operations", "XLA cannot compile some of its ops"),
    (
        "as a Python `bool` is not allowed",
        "Python branches on a tensor's value, which a graph does not have while it is traced",
    ),
)
_FILE_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def reader_files(target: Target) -> set[str]:
    """The reader's files: the function's (or model's inputs factory's) and the factory's."""
    return {
        str(Path(ref.rpartition(":")[0]).resolve())
        for ref in (target.function, target.factory)
        if ref and is_file_reference(ref.rpartition(":")[0])
    }


def shown(filename: str) -> str:
    """A source file as a reader finds it: relative to where the command runs, if it is there."""
    path = Path(filename).resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def _error_line(error: BaseException, files: set[str]) -> str | None:
    """Where in the reader's files ``error`` arose: the last such line TensorFlow's message
    quotes ("in user code:"), else the innermost such frame of its traceback."""
    quoted = [
        f"{shown(m['file'])}:{m['line']}"
        for m in _FILE_LINE.finditer(str(error))
        if str(Path(m["file"]).resolve()) in files
    ]
    frames = [
        f"{shown(frame.filename)}:{frame.lineno}"
        for frame in traceback.extract_tb(error.__traceback__)
        if str(Path(frame.filename).resolve()) in files
    ]
    return (quoted or frames or [None])[-1]


def why_not(error: BaseException, files: set[str]) -> str:
    """Why a form or probe failed, in a reader's words where the error is a known one, with
    the line of the reader's code it arose at."""
    reason = next((why for fragment, why in REASONS if fragment in str(error)), None)
    reason = reason or f"{type(error).__name__}: {_one_line(error)}"
    where = _error_line(error, files)
    return f"{reason} (at {where})" if where else reason


def _reader_call(what: str, thunk: Callable[[], Any]) -> Any:
    """``thunk()``, whose errors are the reader's: bad input, said in one line as ``what``."""
    try:
        return thunk()
    except Exception as error:  # the reader's code: what it raises is bad input here
        raise BadInput(f"{what} raised {type(error).__name__}: {_one_line(error)}") from None


def difference(expected: list[np.ndarray], got: list[np.ndarray]) -> str | None:
    """Why ``got`` is not ``expected`` within :data:`RTOL`/:data:`ATOL`, or None."""
    if len(expected) != len(got):
        return f"returns {len(got)} values, not {len(expected)}"
    for i, (a, b) in enumerate(zip(expected, got, strict=True)):
        if a.shape != b.shape:
            return f"value {i} has shape {b.shape}, not {a.shape}"
        if a.dtype.kind in "fc" and a.size:
            # Against the result's scale: a sum in another order moves every element by a
            # share of the terms' size, which an element near zero does not have.
            a, b = a.astype(np.float64), b.astype(np.float64)
            if not np.array_equal(np.isnan(a), np.isnan(b)):
                return f"value {i} has NaN in other places"
            worst = float(np.nanmax(np.abs(a - b), initial=0.0))
            if worst > ATOL + RTOL * float(np.nanmax(np.abs(a), initial=0.0)):
                return f"value {i} differs by up to {worst:.3g}"
        if a.dtype.kind not in "fc" and not np.array_equal(a, b):
            return f"value {i} differs"
    return None


def forms(python: Callable[..., Any]) -> dict[str, Callable[[], Any]]:
    """Makers of each form of ``python``: a new ``tf.function`` each time, so its first call
    traces (and compiles) anew."""
    return {
        "eager": lambda: python,
        "tf-function": lambda: tf.function(python),
        "jit-compile": lambda: tf.function(python, jit_compile=True),
    }


def _register(
    name: str,
    unit: str,
    makers: dict[str, Callable[[], Timed]],
    target: Target,
    outcome: Callable[[str], list[np.ndarray]] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """Register as workload ``name`` the forms of ``makers`` whose ``outcome`` (by default,
    what one call returns) agrees with the first form's (the reader's own way: its failure is
    bad input); the forms registered, and why the others were not."""
    outcome = outcome or (lambda form: materialize(makers[form]()()))
    first, *others = makers
    expected = _reader_call(target.describe(), lambda: outcome(first))
    variants, problems = [first], {}
    for form in others:
        try:
            got = outcome(form)
        except Exception as error:  # e.g. an op XLA cannot compile: that form is out
            problems[form] = why_not(error, reader_files(target))
            continue
        if (why := difference(expected, got)) is not None:
            problems[form] = f"not the same result: {why}"
        else:
            variants.append(form)
    WORKLOADS[name] = Workload(
        name=name,
        question=f"Why is {target.describe()} slow?",
        unit=unit,
        size_name="calls",
        default_size=1,
        baseline=first,
        variants=tuple(variants),
        make_call=lambda variant, size: makers[variant](),
    )
    return variants, problems


def register(spec: dict[str, Any]) -> dict[str, Any]:
    """Load ``spec`` (:meth:`Target.to_json`), check its forms, and register those that
    compute what the reader's own form computes as the workload named
    :data:`~perfguide.diagnose.target.WORKLOAD` (and a model's training steps as
    :data:`~perfguide.diagnose.target.TRAINING_WORKLOAD`). Returns the forms registered, why
    the others were not, and which form the reader's code runs as written."""
    target = Target.from_json(spec)
    return _register_model(target) if target.is_model else _register_function(target)


def _register_function(target: Target) -> dict[str, Any]:
    function = load(target.function)
    args = arguments(target)
    python = getattr(function, "python_function", function)  # a tf.function's own Python
    makers = {
        form: functools.partial(_function_call, make, args) for form, make in forms(python).items()
    }
    # Never tried: TensorFlow 2.21 aborts the whole process when XLA is handed a string.
    strings = [str(i + 1) for i, a in enumerate(args) if tf.is_tensor(a) and a.dtype == tf.string]
    if strings:
        del makers["jit-compile"]

    variants, problems = _register(WORKLOAD, "call", makers, target)
    if strings:
        problems["jit-compile"] = (
            f"XLA takes no string tensors (argument {', '.join(strings)}); TensorFlow aborts "
            "the process when a compiled function is called with one, so it was not tried"
        )
    _state.update(target=target, python=python, args=args)
    # A tf.function runs as one as written, if that form computes the same result.
    as_written = "tf-function" if python is not function and "tf-function" in variants else "eager"
    return {
        "variants": variants,
        "problems": problems,
        "as_written": as_written,
        "kind": "function",
    }


def _function_call(make: Callable[[], Any], args: tuple[Any, ...]) -> Timed:
    return call_of(make(), *args)


#: How a Keras model predicts a batch, and how it trains on one: the reader's usual way first;
#: then the model converted for the serving runtimes (see the serving chapter). ``fit`` trains
#: as readers call it, once over an epoch of many batches; ``fit-per-batch`` on one batch a
#: call, which with it gives the price of a fit call apart from its steps.
INFERENCE_FORMS = ("predict", "model-call", "predict-on-batch", "tf-function")
SERVING_FORMS = ("saved-model", "litert", "onnxruntime")
TRAINING_FORMS = ("fit", "fit-per-batch", "train-on-batch", "custom-step")
#: Batches in the epoch of one timed ``fit`` call (the reader's batch, repeated in NumPy
#: arrays, as readers feed fit), fewer where the epoch's arrays would take more than
#: ``EPOCH_BYTES``; and the steps each training form takes to show it trains as fit does.
EPOCH_STEPS, EPOCH_BYTES, CHECK_STEPS = 64, 2**28, 2


def epoch_steps(batch_bytes: int) -> int:
    """Batches in the epoch of one timed ``fit`` call, for a batch (inputs and targets) of
    ``batch_bytes``: at least two, so that fit's price per call parts from its steps.

    >>> epoch_steps(500_000), epoch_steps(20 * 2**20), epoch_steps(2**30)
    (64, 12, 2)
    """
    return max(CHECK_STEPS, min(EPOCH_STEPS, EPOCH_BYTES // batch_bytes))


def _load_model(path: str) -> Any:
    """The saved model, loaded afresh; seeded, so every load draws the same dropout masks."""
    import keras

    keras.utils.set_random_seed(0)
    try:
        return keras.models.load_model(path)
    except Exception as error:  # a file that is not a model, or one this Keras cannot read
        raise BadInput(f"cannot load {path}: {type(error).__name__}: {_one_line(error)}") from None


def _conversions() -> Path:
    """A folder for this process's conversions of the reader's model, removed at exit."""
    if "conversions" not in _state:
        _state["conversions"] = tempfile.TemporaryDirectory(prefix="perfguide-diagnose-")
    return Path(_state["conversions"].name)


def _served_call(form: str, model: Any, x: Any) -> Timed:
    if isinstance(x, (list, tuple)):
        raise RuntimeError("the serving runtimes are tried on models of one input only")
    return Timed(serving.converted(model, form, _conversions()), (np.asarray(x),))


def _inference_call(form: str, model: Any, x: Any) -> Timed:
    if form in SERVING_FORMS:
        return _served_call(form, model, x)
    if form == "predict":
        return Timed(functools.partial(model.predict, verbose=0), (x,))
    if form == "model-call":
        return Timed(functools.partial(model, training=False), (x,))
    if form == "predict-on-batch":
        return Timed(model.predict_on_batch, (x,))
    return call_of(inference_function(model), x)


def _training_call(form: str, model: Any, x: Any, y: Any, steps: int) -> Timed:
    """A training form on batch ``x``, ``y``, timed per step: ``fit`` once over an epoch of
    ``steps`` such batches, the others one batch a call."""
    fit = functools.partial(model.fit, batch_size=len(y), epochs=1, verbose=0, shuffle=False)
    if form == "fit":
        epoch = tf.nest.map_structure(lambda a: rebatched(a, steps * len(a)), (x, y))
        return Timed(fit, epoch, steps)
    if form == "fit-per-batch":
        return Timed(fit, (x, y))
    if form == "train-on-batch":
        return Timed(model.train_on_batch, (x, y))
    return call_of(custom_train_step(model), x, y)


#: Where a model is also timed beside the reader's batch: one request, or where the reader's
#: batch is one, a batch of Keras's predict's default size.
ONE_REQUEST, PREDICT_BATCH = 1, 32


def other_batch(batch: int) -> int:
    """The batch size a model is timed at beside the reader's ``batch``."""
    return ONE_REQUEST if batch > ONE_REQUEST else PREDICT_BATCH


def rebatched(x: Any, size: int) -> np.ndarray:
    """A batch of ``size`` requests: the reader's, repeated as often as it takes."""
    x = np.asarray(x)
    return np.resize(x, (size, *x.shape[1:]))


def _register_other_batch(model: Any, x: Any, variants: list[str]) -> int:
    """Register the inference forms at :func:`other_batch` as :data:`BATCH_WORKLOAD`, timed
    per request; the batch size."""
    size = other_batch(len(x))

    def make_call(form: str, n: int) -> Timed:
        timed = _inference_call(form, model, rebatched(x, n))
        return dataclasses.replace(timed, units_per_call=n)

    WORKLOADS[BATCH_WORKLOAD] = dataclasses.replace(
        WORKLOADS[WORKLOAD],
        name=BATCH_WORKLOAD,
        unit="request",
        size_name="requests per batch",
        default_size=size,
        variants=tuple(variants),
        make_call=make_call,
    )
    return size


def _model_batch(target: Target, model: Any) -> tuple[Any, Any]:
    """The batch (``--input`` specs: one per model input) and targets: the factory's, or the
    model's own predictions (sparse losses: their classes), which train like any targets."""
    args = arguments(target)
    if target.factory is not None and len(args) == 2:
        return args
    x = args[0] if len(args) == 1 else list(args)
    predicted = model(x, training=False)
    loss = str(getattr(model.loss, "name", model.loss) or "").lower()
    return x, (tf.argmax(predicted, axis=-1) if "sparse" in loss else tf.identity(predicted))


def _register_model(target: Target) -> dict[str, Any]:
    path = target.function
    if target.factory is not None:
        load(target.factory)  # its module may define (and register) the model's own layers
    model = _load_model(path)
    x, y = _reader_call(target.describe(), lambda: _model_batch(target, model))
    makers = {
        form: functools.partial(_inference_call, form, model, x)
        for form in INFERENCE_FORMS + SERVING_FORMS
    }

    variants, problems = _register(WORKLOAD, "call", makers, target)
    answer = {
        "variants": variants,
        "problems": problems,
        "as_written": INFERENCE_FORMS[0],
        "kind": "model",
        "differences": _differences(makers, [f for f in variants if f in SERVING_FORMS]),
    }
    if not isinstance(x, (list, tuple)):  # a batch of one input can be cut and repeated
        answer |= {"batch": len(x), "other_batch": _register_other_batch(model, x, variants)}
    if getattr(model, "optimizer", None) is not None and getattr(model, "loss", None):
        epoch = epoch_steps(sum(np.asarray(a).nbytes for a in tf.nest.flatten((x, y))))
        training = {
            form: lambda form=form: _training_call(form, _load_model(path), x, y, epoch)
            for form in TRAINING_FORMS
        }

        def trained(form: str) -> list[np.ndarray]:
            """The weights after a short epoch: one fit call, or as many calls of a batch."""
            fresh = _load_model(path)
            timed = _training_call(form, fresh, x, y, CHECK_STEPS)
            for _ in range(CHECK_STEPS // timed.units_per_call):
                timed()
            return [np.asarray(w) for w in fresh.get_weights()]

        steps, stepped = _register(TRAINING_WORKLOAD, "step", training, target, trained)
        answer |= {
            "training": steps,
            "training_as_written": TRAINING_FORMS[0],
            "epoch_steps": epoch,
        }
        problems |= stepped
    _state.update(target=target, python=functools.partial(_infer, model), args=(x,))
    return answer


def _differences(makers: dict[str, Callable[[], Timed]], forms: list[str]) -> dict[str, float]:
    """How far each of ``forms`` answers from the reader's own way (the first maker's), as a
    share of its largest answer."""
    first = next(iter(makers))
    expected = np.concatenate([a.ravel() for a in materialize(makers[first]()())]).astype(float)
    scale = float(np.max(np.abs(expected), initial=0.0)) or 1.0
    shares = {}
    for form in forms:
        got = np.concatenate([a.ravel() for a in materialize(makers[form]()())]).astype(float)
        shares[form] = float(np.max(np.abs(got - expected), initial=0.0)) / scale
    return shares


def _infer(model: Any, x: Any) -> Any:
    return model(x, training=False)


def _source_line(op: tf.Operation, files: set[str]) -> str | None:
    """Where in the reader's code ``op`` was made: the innermost frame in ``files``, else the
    innermost outside TensorFlow and Keras."""
    frames = list(op.traceback or ())
    for frame in reversed(frames):
        if str(Path(frame.filename).resolve()) in files:
            return f"{shown(frame.filename)}:{frame.lineno}"
    for frame in reversed(frames):
        if not any(part in frame.filename for part in ("tensorflow", "keras", "perfguide")):
            return f"{shown(frame.filename)}:{frame.lineno}"
    return None


def _flops(graph: tf.Graph) -> int | None:
    """FLOPs of one call, from TensorFlow's own op statistics (ops without static shapes or
    without statistics count none); None where the statistics cannot be read."""
    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    try:
        return int(tf.compat.v1.profiler.profile(graph, options=options).total_float_ops)
    except Exception:  # TF1's profiler on a graph it cannot read: no count, not no diagnosis
        return None


def _size(tensor: tf.Tensor) -> int:
    """Bytes of a tensor with a static shape (0 for one without, or a handle to a variable,
    a list or a ragged part)."""
    if not tensor.shape.is_fully_defined() or tensor.dtype in (tf.resource, tf.variant):
        return 0
    return tensor.shape.num_elements() * tensor.dtype.size


def _bytes(ops: list[tf.Operation]) -> int:
    """Bytes the ops read and write, counting every input and output with a static shape once
    per op: what a call moves if nothing stays in cache and no ops are fused."""
    return sum(_size(tensor) for op in ops for tensor in [*op.inputs, *op.outputs])


def _io_bytes(graph: tf.Graph) -> int:
    """Bytes a call must move at least: its arguments, the variables it reads and its results,
    once each. A kernel XLA fuses moves these, not the intermediates between its ops."""
    read = [op.outputs[0] for op in graph.get_operations() if op.type == "ReadVariableOp"]
    return sum(_size(tensor) for tensor in [*graph.inputs, *read, *graph.outputs])


def _eager_op_s() -> float:
    """What one small eager op costs in this process (``tf.add`` of two scalars)."""
    scalar = tf.constant(1.0)
    return measure(tf.add, scalar, scalar, label="eager op", min_block_s=0.02, blocks=5).median_s


def _profiled(function: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    """From a profiler trace of ``function``: the ops it ran per call (nested ones too), their
    time per call, and the time per call of the ops that leave the graph for
    Python (whole, with the ops they run); empty if no trace could be taken."""
    with tempfile.TemporaryDirectory() as logdir:
        try:
            trace = profile.capture(function, *args, logdir=logdir, calls=PROFILED_CALLS)
            events = profile.op_events(trace)
        except (profile.TraceError, tf.errors.OpError):
            return {}
    outside = [e for e in events if e.type in LEAVE_THE_GRAPH]
    return {
        "ops": round(len(events) / PROFILED_CALLS),
        "op_time_s": sum(e.self_ps for e in events) / 1e12 / PROFILED_CALLS,
        "outside_graph_s": sum(e.duration_ps for e in outside) / 1e12 / PROFILED_CALLS,
    }


def _prints_only_when_tracing(python: Any, function: Any, args: tuple[Any, ...]) -> bool:
    """Whether an eager call prints and a steady graph call (after the tracing one) does not:
    Python side effects run only while a ``tf.function`` traces."""
    with contextlib.redirect_stdout(io.StringIO()) as eager:
        materialize(python(*args))
    materialize(function(*args))
    with contextlib.redirect_stdout(io.StringIO()) as steady:
        materialize(function(*args))
    return bool(eager.getvalue()) and not steady.getvalue()


def facts() -> dict[str, Any]:
    """What the registered function's graph does per call, and what an eager op and the
    graph's ops cost here. A function that cannot be traced gets ``graph_error`` (why, in a
    reader's words) and its eager calls' profile instead."""
    target, python, args = _state["target"], _state["python"], _state["args"]
    files = reader_files(target)
    answer: dict[str, Any] = {"eager_op_s": _eager_op_s(), "outside_graph": []}
    try:
        function = tf.function(python)
        graph = function.get_concrete_function(*args).graph
        prints = _prints_only_when_tracing(python, function, args)
    except Exception as error:  # the reader's code: a graph it cannot be is a finding
        return answer | {"graph_error": why_not(error, files), **_profiled(python, args)}
    ops = anatomy.dispatched_ops(graph)
    outside = [
        {"op": op.type, "name": op.name, "where": _source_line(op, files)}
        for op in ops
        if op.type in LEAVE_THE_GRAPH
    ]
    return answer | {
        **_profiled(function, args),
        "ops": len(ops),
        "op_types": dict(collections.Counter(op.type for op in ops).most_common()),
        "flops": _flops(graph),
        "bytes": _bytes(ops),
        "io_bytes": _io_bytes(graph),
        "outside_graph": outside,
        "prints_only_when_tracing": prints,
    }


def _varied(args: tuple[Any, ...]) -> list[tuple[str, tuple[Any, ...]]]:
    """Typical other calls: each tensor's first dimension doubled, then plus one (all tensors
    together: a batch), and each Python number or scalar tensor as other Python numbers."""
    calls = []
    tensors = [i for i, a in enumerate(args) if tf.is_tensor(a) and a.shape.rank]
    for label, grow in (("batch doubled", lambda n: 2 * n), ("batch plus one", lambda n: n + 1)):
        if tensors:
            changed = list(args)
            for i in tensors:
                changed[i] = tf.concat([args[i]] * 2, axis=0)[: grow(args[i].shape[0])]
            calls.append((label, tuple(changed)))
    for i, a in enumerate(args):
        number = tf.is_tensor(a) and (a.dtype.is_floating or a.dtype.is_integer)
        scalar = isinstance(a, (int, float)) or (number and a.shape.rank == 0)
        if scalar and not isinstance(a, bool):
            value = a if isinstance(a, (int, float)) else a.numpy().item()
            for step in (1, 2):
                changed = list(args)
                changed[i] = type(value)(value + step)
                label = f"argument {i + 1} as the Python number {changed[i]}"
                calls.append((label, tuple(changed)))
    return calls


def _as_tensors(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(tf.constant(a) if isinstance(a, (int, float)) else a for a in args)


def _sequence(function: Any, calls: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Each of ``calls`` of a fresh ``function``: its seconds, whether it traced, and the bytes
    the process held after it beyond before it (what a trace keeps)."""
    timed = []
    for args in calls:
        before, held = function.experimental_get_tracing_count(), resident_bytes()
        start = time.perf_counter()
        materialize(function(*args))
        seconds = time.perf_counter() - start
        traced = function.experimental_get_tracing_count() > before
        timed.append({"s": seconds, "traced": traced, "bytes": resident_bytes() - held})
    return timed


def retracing() -> dict[str, Any]:
    """The registered function as a ``tf.function`` called with the original arguments and then
    :func:`_varied` ones (each call's seconds and whether it traced), a steady call's seconds,
    and the same calls with ``reduce_retracing=True`` and Python numbers passed as tensors (the
    usual fixes). Where the function cannot be traced, ``error`` says why; where only the fix
    fails (a relaxed shape the function cannot take), ``fixed_error`` does."""
    target, python, args = _state["target"], _state["python"], _state["args"]
    varied = [(label, a) for label, a in _varied(args) if _accepts(python, a)]
    calls = [args] + [a for _, a in varied]
    answer: dict[str, Any] = {"varied": [label for label, _ in varied]}
    try:
        function = tf.function(python)
        as_written = _sequence(function, calls)
        steady = measure(function, *args, label="steady", min_block_s=0.02, blocks=5).median_s
    except Exception as error:  # not traceable, or not for some varied input: no finding here
        return answer | {"varied": [], "error": why_not(error, reader_files(target))}
    answer |= {"calls": as_written, "steady_s": steady}
    relaxed = tf.function(python, reduce_retracing=True)
    try:
        fixed = _sequence(relaxed, [_as_tensors(a) for a in calls])
    except Exception as error:  # e.g. Python that needs the batch size, now unknown
        return answer | {"fixed_calls": [], "fixed_error": why_not(error, reader_files(target))}
    return answer | {"fixed_calls": fixed}


def _accepts(python: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    try:
        materialize(python(*args))
    except Exception:  # a variation the function cannot take (fixed shapes) is not typical
        return False
    return True


def memory(calls: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Each registered form called ``calls[form]`` times in a row in this process (after its
    timing, so its caches have filled), the resident set sampled :data:`SAMPLES` times: the
    series and the calls between samples, per form."""
    workload = WORKLOADS[WORKLOAD]
    found = {}
    for form, count in calls.items():
        timed = workload.make_call(form, 1)
        series = resident_series(
            lambda i, timed=timed: materialize(timed()), count, count // SAMPLES
        )
        found[form] = {"series": series, "every": count // SAMPLES}
    return found
