"""``perfguide diagnose``: the guide's measurements turned on the reader's own function or
model, from the command line or from Python: the package is callable, as
``perfguide.diagnose(target, *example_args)`` (:func:`perfguide.diagnose.api.diagnose`).

:mod:`~perfguide.diagnose.target` says what the function and its inputs are, and
:mod:`~perfguide.diagnose.examples` carries a reader's own example arguments (neither needs
TensorFlow). Inside fresh worker processes, :mod:`~perfguide.diagnose.loading` loads the reader's
code and makes its inputs, :mod:`~perfguide.diagnose.forms` checks its forms (a Keras model's
from :mod:`~perfguide.diagnose.model_forms`, a SavedModel's or LiteRT file's from
:mod:`~perfguide.diagnose.saved_forms`) and registers those that compute what the reader's own
form computes, and :mod:`~perfguide.diagnose.graph_facts`, :mod:`~perfguide.diagnose.retracing`
and :mod:`~perfguide.diagnose.memory_series` probe it, their failures said in a reader's words
by :mod:`~perfguide.diagnose.reasons`. A Keras file is also loaded on Keras 3's other
backends, in workers of their own (:mod:`~perfguide.diagnose.backend_forms`, driven by
:mod:`~perfguide.diagnose.backends`), whose predictions
:mod:`~perfguide.diagnose.agreement` judges. :mod:`~perfguide.diagnose.examine` drives the workers,
:mod:`~perfguide.diagnose.findings` judges what they measured, and
:mod:`~perfguide.diagnose.report` shows it as text, JSON or HTML. :mod:`~perfguide.diagnose.api`
runs it all, for the command and for Python.
"""

import sys
import types


class _CallablePackage(types.ModuleType):
    """This package, which a reader calls as a function (TensorFlow is imported only then)."""

    def __call__(self, target, *example_args, **options):
        from perfguide.diagnose.api import diagnose

        return diagnose(target, *example_args, **options)


sys.modules[__name__].__class__ = _CallablePackage
