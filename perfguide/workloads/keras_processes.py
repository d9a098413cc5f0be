"""How a process is started to run each Keras, and which this installation lacks: Keras 2, and
Keras 3 on each backend. Keras 3 reads its backend once, when it is imported
(``KERAS_BACKEND``), and ``tf.keras`` is Keras 2 only in a process that set
``TF_USE_LEGACY_KERAS=1`` before importing TensorFlow, so each runs in processes of its own.

Needs no TensorFlow: the process that starts the others (``perfguide diagnose``'s) imports it.
"""

from __future__ import annotations

import importlib.util

#: The environment under which ``tf.keras`` is Keras 2.
LEGACY_KERAS = {"TF_USE_LEGACY_KERAS": "1"}
#: Each backend, by the name the guide gives it, and the settings its processes start with.
BACKENDS: dict[str, dict[str, str]] = {
    "keras-2": dict(LEGACY_KERAS),
    "tensorflow": {"KERAS_BACKEND": "tensorflow"},
    "jax": {"KERAS_BACKEND": "jax"},
    "openvino": {"KERAS_BACKEND": "openvino"},
}
#: Each backend as readers know it.
NAMES = {
    "keras-2": "Keras 2 (tf_keras)",
    "tensorflow": "Keras 3 on TensorFlow",
    "jax": "Keras 3 on JAX",
    "openvino": "Keras 3 on OpenVINO",
}
#: The package each backend needs beside TensorFlow and Keras 3.
_PACKAGES = {"keras-2": "tf_keras", "jax": "jax", "openvino": "openvino"}
#: Backends that run a model's forward pass only.
INFERENCE_ONLY = ("openvino",)


def missing_backends() -> dict[str, str]:
    """The backends this installation cannot run, and why."""
    return {
        name: f"needs {package}: pip install {package.replace('_', '-')}"
        for name, package in _PACKAGES.items()
        if importlib.util.find_spec(package) is None
    }
