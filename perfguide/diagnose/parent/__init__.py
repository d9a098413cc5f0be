"""What ``perfguide diagnose`` does in the process that started the workers: it drives them
(:mod:`~perfguide.diagnose.parent.examine`, and on Keras 3's other backends
:mod:`~perfguide.diagnose.parent.backends`), holds what they measured
(:mod:`~perfguide.diagnose.parent.evidence`), judges it (:mod:`~perfguide.diagnose.parent.bound`,
:mod:`~perfguide.diagnose.parent.advice`, :mod:`~perfguide.diagnose.parent.findings`) into a
diagnosis (:mod:`~perfguide.diagnose.parent.diagnosis`), projects
a model's training past one machine (:mod:`~perfguide.diagnose.parent.projection`) and shows the
result as text, JSON or HTML (:mod:`~perfguide.diagnose.parent.render`).
"""
