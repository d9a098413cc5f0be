"""``perfguide diagnose``: the guide's measurements turned on the reader's own function or
model, from the command line or from Python: the package is callable, as
``perfguide.diagnose(target, *example_args)`` (:func:`perfguide.diagnose.api.diagnose`).

Its two sides run in different processes: :mod:`perfguide.diagnose.worker` inside fresh worker
processes (it loads the reader's code and probes it), :mod:`perfguide.diagnose.parent` in the
process that started them (it drives the workers, judges their answers and shows the result).
Both read :mod:`~perfguide.diagnose.target` (what the function and its inputs are),
:mod:`~perfguide.diagnose.examples` (a reader's own example arguments; neither needs TensorFlow),
:mod:`~perfguide.diagnose.agreement` (whether two forms' outputs agree) and
:mod:`~perfguide.diagnose.worker_answers` (what a worker answers the parent, as typed records).
:mod:`~perfguide.diagnose.api` runs it all, for the command and for Python.
"""

import sys
import types


class _CallablePackage(types.ModuleType):
    """This package, which a reader calls as a function (TensorFlow is imported only then)."""

    def __call__(self, target, *example_args, **options):
        from perfguide.diagnose.api import diagnose

        return diagnose(target, *example_args, **options)


sys.modules[__name__].__class__ = _CallablePackage
