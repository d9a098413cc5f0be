"""The forms of the reader's code, checked and registered inside a worker process (see
:mod:`perfguide.diagnose`).

:func:`register` loads the function (or saved Keras model), makes its arguments, checks that
its other forms compute what the reader's own form computes (for a function, ``tf.function``
and ``jit_compile=True``; for a model, Keras's other ways to predict, the serving runtimes and
the ways to train, from :mod:`~perfguide.diagnose.worker.model_forms`), and returns the forms that
do as a :class:`Registered`, which the worker holds: it times its workloads like any chapter's
variants, and hands it to the probes (:mod:`~perfguide.diagnose.worker.graph_facts`,
:mod:`~perfguide.diagnose.worker.retracing`, :mod:`~perfguide.diagnose.worker.memory_series`).
"""

from __future__ import annotations

import dataclasses
import functools
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.diagnose.agreement import difference, outside_range
from perfguide.diagnose.target import BATCH_WORKLOAD, TRAINING_WORKLOAD, WORKLOAD, Target
from perfguide.diagnose.worker.loading import (
    arguments,
    load,
    load_inference_model,
    load_model,
    materialize,
    reader_call,
)
from perfguide.diagnose.worker.model_forms import (
    INFERENCE_FORMS,
    SERVING_FORMS,
    TRAINING_FORMS,
    batch_bytes,
    batch_size,
    epoch_steps,
    infer,
    inference_call,
    model_batch,
    other_batch,
    rebatched,
    trained_weights,
    training_call,
    trains,
)
from perfguide.diagnose.worker.reasons import reader_files, why_not
from perfguide.diagnose.worker.saved_forms import (
    LITERT_FORMS,
    SAVED_MODEL_FORMS,
    litert_batch,
    litert_call,
    saved_model_call,
    signature,
    signature_batch,
)
from perfguide.diagnose.worker_answers import Registration
from perfguide.measure.timer import Timed
from perfguide.workloads.base import Workload, call_of
from perfguide.workloads.distributed import gradient_bytes

#: Calls of the reader's own way whose random results set the range its other forms must keep:
#: enough that a new call's random scale lies past all of theirs (and past the margin) only by a
#: rare chance; with 5, a right form failed about once in a hundred checks.
RANDOM_CALLS = 20


@dataclasses.dataclass
class Registered:
    """The reader's code as registered in a worker process, which holds it (see
    :mod:`perfguide.processes.worker`).

    ``target`` is what the reader named; ``python`` the Python function a graph of it is traced
    from (a model's forward pass) and ``args`` its arguments; ``makers`` make each form's timed
    call; ``workloads`` are its forms that compute what the reader's own form computes, as
    workloads by name (:data:`~perfguide.diagnose.target.WORKLOAD`, and for a model
    :data:`~perfguide.diagnose.target.BATCH_WORKLOAD` and
    :data:`~perfguide.diagnose.target.TRAINING_WORKLOAD`); ``answer`` is what the parent
    process is told (a :class:`~perfguide.diagnose.worker_answers.Registration`: the forms
    registered, why the others were not, which form the code runs as written);
    ``conversions`` is the folder a model is converted into for the serving runtimes, removed
    with this object.
    """

    target: Target
    python: Callable[..., Any]
    args: tuple[Any, ...]
    makers: dict[str, Callable[[], Timed]]
    workloads: dict[str, Workload]
    answer: Registration
    conversions: tempfile.TemporaryDirectory[str] | None = None


def register(spec: dict[str, Any]) -> Registered:
    """Load ``spec`` (:meth:`Target.to_json`), check its forms, and register those that compute
    what the reader's own form computes (see :class:`Registered`)."""
    target = Target.from_json(spec)
    registering = {
        "keras": _register_model,
        "saved-model": _register_saved_model,
        "litert": _register_litert,
    }
    return registering.get(target.kind, _register_function)(target)


# -- Whether a form computes what the reader's own form computes -------------------------------


def _checked(
    makers: dict[str, Callable[[], Timed]],
    target: Target,
    outcome: Callable[[str], list[np.ndarray]] | None = None,
) -> tuple[list[str], dict[str, str], bool]:
    """The forms of ``makers`` whose ``outcome`` (by default, what one call returns) agrees with
    the first form's (the reader's own way: its failure is bad input), why the others do not,
    and whether the results are random (see :func:`_random_check`)."""
    calls = outcome is None
    outcome = outcome or (lambda form: materialize(makers[form]()()))
    first, *others = makers
    expected = reader_call(target.describe(), lambda: outcome(first))
    check, random = (lambda form: difference(expected, outcome(form))), False
    if calls and difference(expected, again := outcome(first)) is not None:
        samples = [expected, again, *(outcome(first) for _ in range(RANDOM_CALLS - 2))]
        check, random = functools.partial(_random_check, makers, samples), True
    variants, problems = [first], {}
    for form in others:
        try:
            why = check(form)
        except Exception as error:  # e.g. an op XLA cannot compile: that form is out
            problems[form] = why_not(error, reader_files(target))
            continue
        if why is not None:
            problems[form] = f"not the same result: {why}"
        else:
            variants.append(form)
    return variants, problems, random


def _random_check(
    makers: dict[str, Callable[[], Timed]], samples: list[list[np.ndarray]], form: str
) -> str | None:
    """Why ``form`` does not compute what random code as written does, from ``samples`` of the
    reader's own results (two calls differ: random ops): no form can agree value by value, so
    two calls of it must differ too (randomness from Python or NumPy is drawn once, while a
    graph is traced) and each must lie in the range the samples span (:func:`outside_range`)."""
    timed = makers[form]()
    once, twice = materialize(timed()), materialize(timed())
    if difference(once, twice) is None:
        return (
            "the same result at every call, where as written it is random: randomness from "
            "Python or NumPy is drawn once, while the graph is traced"
        )
    return outside_range(samples, once) or outside_range(samples, twice)


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


def _workload(
    name: str,
    target: Target,
    unit: str,
    makers: dict[str, Callable[[], Timed]],
    variants: list[str],
) -> Workload:
    """The ``variants`` of ``makers`` as workload ``name``, the first maker's form its baseline,
    timed per ``unit``."""
    return Workload(
        name=name,
        question=f"Why is {target.describe()} slow?",
        unit=unit,
        size_name="calls",
        default_size=1,
        baseline=next(iter(makers)),
        variants=tuple(variants),
        make_call=lambda variant, size: makers[variant](),
    )


# -- A function's forms ------------------------------------------------------------------------


def forms(python: Callable[..., Any]) -> dict[str, Callable[[], Any]]:
    """Makers of each form of ``python``: a new ``tf.function`` each time, so its first call
    traces (and compiles) anew."""
    return {
        "eager": lambda: python,
        "tf-function": lambda: tf.function(python),
        "jit-compile": lambda: tf.function(python, jit_compile=True),
    }


def _function_call(make: Callable[[], Any], args: tuple[Any, ...]) -> Timed:
    return call_of(make(), *args)


def _untried(args: tuple[Any, ...]) -> dict[str, str]:
    """Forms never tried on ``args``, and why."""
    # TensorFlow 2.21 aborts the whole process when XLA is handed a string.
    strings = [
        str(i + 1)
        for i, arg in enumerate(args)
        if any(
            tf.is_tensor(leaf) and leaf.dtype == tf.string
            for leaf in tf.nest.flatten(arg, expand_composites=True)
        )
    ]
    if not strings:
        return {}
    return {
        "jit-compile": (
            f"XLA takes no string tensors (argument {', '.join(strings)}); TensorFlow aborts "
            "the process when a compiled function is called with one, so it was not tried"
        )
    }


def _register_function(target: Target) -> Registered:
    function = load(target.function)
    args = arguments(target)
    python = getattr(function, "python_function", function)  # a tf.function's own Python
    untried = _untried(args)
    makers = {
        form: functools.partial(_function_call, make, args)
        for form, make in forms(python).items()
        if form not in untried
    }
    variants, problems, random = _checked(makers, target)
    # A tf.function runs as one as written, if that form computes the same result.
    as_written = "tf-function" if python is not function and "tf-function" in variants else "eager"
    answer = Registration(
        tuple(variants), problems | untried, as_written, random=RANDOM_CALLS if random else 0
    )
    workloads = {WORKLOAD: _workload(WORKLOAD, target, "call", makers, variants)}
    return Registered(target, python, args, makers, workloads, answer)


# -- A model's forms ---------------------------------------------------------------------------


def _register_model(target: Target) -> Registered:
    model, uncompiled = _model(target)
    x, y = reader_call(target.describe(), lambda: model_batch(target, model))
    registered = _register_inference(target, model, x)
    _add_other_batch(registered, model, x)
    if trains(model):
        _add_training(registered, model, x, y)
    if uncompiled:
        why = f"its optimizer and loss did not load, so it was not trained ({uncompiled})"
        problems = registered.answer.problems | {"fit": why}
        registered.answer = dataclasses.replace(registered.answer, problems=problems)
    return registered


def _model(target: Target) -> tuple[Any, str | None]:
    """The saved model (and why it loaded without its optimizer and loss, if it did), loaded
    after the inputs factory's module, which may define (and register) its own layers."""
    if target.factory is not None:
        load(target.factory)
    return load_inference_model(target.function)


def _register_inference(target: Target, model: Any, x: Any) -> Registered:
    """The Keras model's inference forms that answer as the reader's own way does, per call on
    the reader's batch ``x``."""
    conversions = _conversions()
    makers = {
        form: functools.partial(inference_call, form, model, x, Path(conversions.name))
        for form in INFERENCE_FORMS + SERVING_FORMS
    }
    python = functools.partial(infer, model)
    return _register_calls(target, makers, python, (x,), conversions, SERVING_FORMS)


def _conversions() -> tempfile.TemporaryDirectory[str]:
    """A folder for a model's conversions, removed with the :class:`Registered` holding it."""
    return tempfile.TemporaryDirectory(prefix="perfguide-diagnose-")


def _register_calls(
    target: Target,
    makers: dict[str, Callable[[], Timed]],
    python: Callable[..., Any] | None,
    args: tuple[Any, ...],
    conversions: tempfile.TemporaryDirectory[str],
    served: tuple[str, ...],
) -> Registered:
    """A model's forms that answer as the first of ``makers`` (the reader's own way) does, per
    call; how far the answers of those of them ``served`` in a runtime lie from it."""
    variants, problems, random = _checked(makers, target)
    runtimes = [form for form in variants if form in served]
    answer = Registration(
        tuple(variants),
        problems,
        variants[0],
        kind="model",
        format=target.kind,
        random=RANDOM_CALLS if random else 0,
        target=target.describe(),
        differences=_differences(makers, runtimes),
    )
    workloads = {WORKLOAD: _workload(WORKLOAD, target, "call", makers, variants)}
    return Registered(target, python, args, makers, workloads, answer, conversions)


def _register_saved_model(target: Target) -> Registered:
    """A SavedModel's serving signature as called, and its forms (see
    :mod:`~perfguide.diagnose.worker.saved_forms`)."""
    signed = signature(target.function)
    x = signature_batch(target, signed)
    conversions = _conversions()
    folder = Path(conversions.name)
    makers = {
        form: functools.partial(saved_model_call, form, signed, target.function, x, folder)
        for form in SAVED_MODEL_FORMS
    }
    python, args = signed.positional(), tuple(x.values())
    return _register_calls(target, makers, python, args, conversions, SAVED_MODEL_FORMS[2:])


def _register_litert(target: Target) -> Registered:
    """A LiteRT file in its interpreter, as it starts by default and the other ways (see
    :mod:`~perfguide.diagnose.worker.saved_forms`); no TensorFlow graph to probe."""
    target, x = litert_batch(target)
    makers = {
        form: functools.partial(litert_call, form, target.function, x) for form in LITERT_FORMS
    }
    return _register_calls(target, makers, None, (x,), _conversions(), LITERT_FORMS[1:])


def _add_other_batch(registered: Registered, model: Any, x: Any) -> None:
    """Add the inference forms at :func:`~perfguide.diagnose.worker.model_forms.other_batch`, timed
    per request, as :data:`~perfguide.diagnose.target.BATCH_WORKLOAD`."""
    size = other_batch(batch_size(x))
    conversions = Path(registered.conversions.name)

    def make_call(form: str, n: int) -> Timed:
        timed = inference_call(form, model, rebatched(x, n), conversions)
        return dataclasses.replace(timed, units_per_call=n)

    registered.workloads[BATCH_WORKLOAD] = dataclasses.replace(
        registered.workloads[WORKLOAD],
        name=BATCH_WORKLOAD,
        unit="request",
        size_name="requests per batch",
        default_size=size,
        make_call=make_call,
    )
    registered.answer = dataclasses.replace(
        registered.answer, batch=batch_size(x), other_batch=size
    )


def _add_training(registered: Registered, model: Any, x: Any, y: Any) -> None:
    """Add the training forms that train the weights fit trains, each on a fresh load of the
    model and timed per step, as :data:`~perfguide.diagnose.target.TRAINING_WORKLOAD`, and the
    bytes of ``model``'s gradients a step."""
    target, path = registered.target, registered.target.function
    epoch = epoch_steps(batch_bytes(x, y))
    makers = {
        form: lambda form=form: training_call(form, load_model(path), x, y, epoch)
        for form in TRAINING_FORMS
    }
    steps, problems, _ = _checked(makers, target, functools.partial(trained_weights, path, x, y))
    registered.workloads[TRAINING_WORKLOAD] = _workload(
        TRAINING_WORKLOAD, target, "step", makers, steps
    )
    registered.answer = dataclasses.replace(
        registered.answer,
        training=tuple(steps),
        training_as_written=TRAINING_FORMS[0],
        epoch_steps=epoch,
        gradient_bytes=gradient_bytes(model),
        problems=registered.answer.problems | problems,
    )
