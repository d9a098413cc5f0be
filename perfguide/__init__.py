"""perfguide: TensorFlow performance questions answered with numbers measured on your machine.

Modules: :mod:`~perfguide.timer` (the harness), :mod:`~perfguide.compare` (tables),
:mod:`~perfguide.claims` (claims checked against measurements), :mod:`~perfguide.environment`,
:mod:`~perfguide.results` (JSON), :mod:`~perfguide.workload` (what a workload is),
:mod:`~perfguide.runner`, :mod:`~perfguide.plotting`,
:mod:`~perfguide.workloads` (one module per chapter) and :mod:`~perfguide.cli`.
"""

__version__ = "0.1.0"
