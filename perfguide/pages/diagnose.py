"""The diagnose chapter: what ``perfguide diagnose … --quick`` prints for a function or a model,
and its plot, run in workers the page's diagnoses share."""

from __future__ import annotations

import matplotlib.pyplot as plt

from perfguide.diagnose.parent import render
from perfguide.diagnose.parent.examine import assessment_of
from perfguide.diagnose.target import InputSpec, Target
from perfguide.processes.pool import Workers


def diagnose(workers: Workers, reference: str, *inputs: str) -> None:
    """Print the command's report on ``reference`` (``module:function``, ``file.py:function``
    or a saved model) with ``inputs`` as ``--input`` reads them, and draw its plot; timed
    quickly in ``workers``."""
    target = Target(reference, tuple(map(InputSpec.parse, inputs)))
    found, evidence = assessment_of(target, workers, quick=True, settle=False)
    print(render.text(found, evidence))
    render.dot_plot_of(evidence)
    plt.show()
