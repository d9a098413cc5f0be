"""perfguide: TensorFlow performance questions answered with numbers measured on your machine.

Its layers, lowest first; a module imports only from its own layer and those below it:
``measure`` → ``report`` → ``workloads`` → ``processes`` → ``diagnose`` → ``pages`` →
``cli``.

- :mod:`perfguide.measure`: the timer, the runner, the memory probe, the environment record, the
  machine's limits and the calibration of intervals;
- :mod:`perfguide.report`: tables, claims checked against measurements, rankings, short answers,
  plots and results files;
- :mod:`perfguide.workloads`: one module per chapter topic, each a question and variants that
  compute the same thing;
- :mod:`perfguide.processes`: fresh worker processes that time the workloads, and the servers
  memory is measured in;
- :mod:`perfguide.diagnose`: the guide turned on the reader's own function or model;
- :mod:`perfguide.pages`: one module per chapter: its checks, its tables and plots and its short
  answer, built from its measurements;
- :mod:`perfguide.cli`: the command line.
"""

__version__ = "0.1.0"

# Callable: perfguide.diagnose(function, *example_args).
from perfguide import diagnose as diagnose  # noqa: E402
