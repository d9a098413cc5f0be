"""The reader's code loaded and its inputs made (:mod:`perfguide.diagnose.worker.loading`, in this
process, as in a worker): what cannot be loaded or called is bad input, said in one line."""

import pytest

from perfguide.diagnose.target import InputSpec, Target
from perfguide.diagnose.worker import forms
from perfguide.processes.fresh import BadInput


@pytest.mark.parametrize(
    ("source", "function", "inputs", "message"),
    [
        ("def f(x):\n    return x\n", "g", ("1",), "has no 'g'"),
        ("def f(x):\n    return x +\n", "f", ("1",), "cannot import .*SyntaxError"),
        ("def f(x):\n    raise RuntimeError('boom')\n", "f", ("1",), "raised RuntimeError: boom"),
        (
            "import tensorflow as tf\n\ndef f(a, b):\n    return tf.matmul(a, b)\n",
            "f",
            ("float32[2,3]", "float32[2,3]"),
            "f\\(float32\\[2,3\\], float32\\[2,3\\]\\) raised InvalidArgumentError",
        ),
        ("f = 3\n", "f", (), "is not a function"),
    ],
)
def test_bad_functions_and_inputs_are_bad_input(tmp_path, source, function, inputs, message):
    path = tmp_path / "mine.py"
    path.write_text(source)
    target = Target(f"{path}:{function}", tuple(map(InputSpec.parse, inputs)))
    with pytest.raises(BadInput, match=message):
        forms.register(target.to_json())


def test_a_factory_makes_the_arguments(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(
        "import tensorflow as tf\n\ndef make():\n    return tf.ones([3]), 2.0\n\n"
        "def f(x, k):\n    return x * k\n"
    )
    registered = forms.register(Target(f"{path}:f", factory=f"{path}:make").to_json())
    assert registered.answer.problems == {}


def test_a_file_that_is_not_a_model_cannot_be_loaded(tmp_path):
    path = tmp_path / "broken.keras"
    path.write_text("not a zip")
    with pytest.raises(BadInput, match="cannot load .*broken.keras"):
        forms.register(Target(str(path), (InputSpec.parse("float32[2,4]"),)).to_json())


def test_a_file_that_is_not_a_litert_model_cannot_be_loaded(tmp_path):
    path = tmp_path / "broken.tflite"
    path.write_bytes(b"not a flatbuffer")
    with pytest.raises(BadInput, match="cannot load .*broken.tflite"):
        forms.register(Target(str(path)).to_json())


def test_a_saved_model_without_a_signature_that_takes_inputs_is_refused(tmp_path):
    import tensorflow as tf

    module = tf.Module()
    module.double = tf.function(lambda x: 2 * x)  # traced, but no signature: none to serve
    module.double.get_concrete_function(tf.TensorSpec([2]))
    tf.saved_model.save(module, str(tmp_path / "none"))
    with pytest.raises(BadInput, match="has no serving signature to call \\(none\\)"):
        forms.register(Target(str(tmp_path / "none")).to_json())
    module.constant = tf.function(lambda: tf.constant(1.0), input_signature=[])
    tf.saved_model.save(module, str(tmp_path / "empty"), signatures=module.constant)
    with pytest.raises(BadInput, match="serving signature takes no input"):
        forms.register(Target(str(tmp_path / "empty")).to_json())
