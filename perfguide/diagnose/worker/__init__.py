"""What runs inside the fresh worker processes of ``perfguide diagnose``: the reader's code
loaded and its inputs made (:mod:`~perfguide.diagnose.worker.loading`), its forms checked and
registered (:mod:`~perfguide.diagnose.worker.forms`, a Keras model's from
:mod:`~perfguide.diagnose.worker.model_forms`, a SavedModel's or LiteRT file's from
:mod:`~perfguide.diagnose.worker.saved_forms`, a Keras file on Keras 3's other backends from
:mod:`~perfguide.diagnose.worker.backend_forms`), and the probes that answer the parent
(:mod:`~perfguide.diagnose.worker.graph_facts`, :mod:`~perfguide.diagnose.worker.retracing`,
:mod:`~perfguide.diagnose.worker.memory_series`), their failures said in a reader's words by
:mod:`~perfguide.diagnose.worker.reasons`.

These modules import TensorFlow (or another backend) and nothing of
:mod:`perfguide.diagnose.parent`: the parent reads their answers, never their code.
"""
