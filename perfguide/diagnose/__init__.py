"""``perfguide diagnose``: the guide's measurements turned on the reader's own function.

:mod:`~perfguide.diagnose.target` says what the function and its inputs are (no TensorFlow
needed), :mod:`~perfguide.diagnose.probe` examines it inside fresh worker processes,
:mod:`~perfguide.diagnose.examine` drives the workers, :mod:`~perfguide.diagnose.findings`
judges what they measured, and :mod:`~perfguide.diagnose.report` shows it as text, JSON or HTML.
"""
