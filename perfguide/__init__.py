"""perfguide: TensorFlow performance questions answered with numbers measured on your machine.

Its layers: :mod:`perfguide.measure` (the timer, the runner, the environment record and the
machine's limits), :mod:`perfguide.report` (tables, claims checked against measurements, short
answers, plots and results files), :mod:`perfguide.workloads` (one module per chapter topic) and
:mod:`perfguide.cli` (the command line).
"""

__version__ = "0.1.0"
