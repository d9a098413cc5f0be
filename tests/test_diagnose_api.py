"""``perfguide.diagnose`` from Python (:mod:`perfguide.diagnose.api`): what it makes of a
function, a model and example arguments, and a script's own function diagnosed in fresh
processes."""

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import perfguide
from perfguide.diagnose import api
from perfguide.diagnose.target import InputSpec, Target, TargetError, kind_of
from perfguide.measure import limits


def test_the_package_is_callable_and_stays_a_package():
    import perfguide.diagnose.target as target_module

    assert callable(perfguide.diagnose)
    assert perfguide.diagnose.target is target_module


def test_a_function_in_a_module_file_is_named_by_its_file():
    reference = api.reference(kind_of, folder=None)
    assert reference.endswith("perfguide/diagnose/target.py:kind_of")
    assert Target(reference).kind == "function"


def main_function(source, name):
    """A function defined as in a notebook cell or a script: its module is ``__main__``."""
    namespace = {"__name__": "__main__"}
    exec(textwrap.dedent(source), namespace)
    return namespace[name]


def test_a_function_of_main_is_pickled_with_its_globals(tmp_path):
    function = main_function(
        """
        import tensorflow as tf
        SCALE = 3.0
        def scaled(x):
            return SCALE * tf.reduce_sum(x)
        """,
        "scaled",
    )
    reference = api.reference(function, tmp_path)
    assert reference == str(tmp_path / "scaled.pkl")
    target = Target(reference, (InputSpec.parse("float32[4]"),))
    assert target.kind == "pickled" and target.describe() == "scaled(float32[4])"


def test_a_function_that_cannot_travel_says_what_to_move_in_one_line(tmp_path):
    function = main_function("def locked(x):\n    with LOCK:\n        return x\n", "locked")
    function.__globals__["LOCK"] = threading.Lock()
    with pytest.raises(TargetError, match="locked cannot be sent to fresh processes") as error:
        api.reference(function, tmp_path)
    message = str(error.value)
    assert "move it and what it uses into a module" in message and "\n" not in message


def test_a_keras_model_is_saved_for_the_processes(tmp_path):
    import keras

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)], name="small")
    reference = api.reference(model, tmp_path)
    assert reference == str(tmp_path / "small.keras") and Target(reference).kind == "keras"
    loaded = keras.models.load_model(reference)
    np.testing.assert_array_equal(loaded.get_weights()[0], model.get_weights()[0])


def test_what_is_neither_a_function_nor_a_model_is_refused(tmp_path):
    with pytest.raises(TargetError, match="cannot diagnose a int"):
        api.reference(3, tmp_path)


SCRIPT = """
import numpy as np
import tensorflow as tf

import perfguide

OFFSET = np.float32(1.5)


def shifted_norms(x):
    return tf.norm(x + OFFSET, axis=1)


def scaled_by(k):
    def scaled(x):
        return k * tf.reduce_sum(x)
    return scaled


def lowered(text):
    return tf.strings.lower(tf.strings.regex_replace(text, "[^A-Za-z ]", ""))


if __name__ == "__main__":
    numbers = np.zeros((8, 4), np.float32)
    text = tf.constant(["Hello, World!"] * 64)
    for function, arg in ((shifted_norms, numbers), (scaled_by(2.0), numbers), (lowered, text)):
        found = perfguide.diagnose(function, arg, quick=True, processes=1, trace="{trace}")
        print(found.short_answer)
        print(found.evidence.trace)
"""


@pytest.mark.processes
def test_a_scripts_own_functions_are_diagnosed_in_fresh_processes(tmp_path):
    script = tmp_path / "mine.py"
    script.write_text(SCRIPT.format(trace=tmp_path / "trace"))
    env = {**__import__("os").environ, limits.SHARED_FILE_ENV: str(tmp_path / "limits.json")}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("shifted_norms(float32[8,4]) is")
    assert lines[2].startswith("scaled(float32[8,4]) is")
    assert lines[4].startswith("lowered(string[64]) is")
    traces = sorted((tmp_path / "trace").rglob("*.xplane.pb"))
    assert len(traces) == 3 and all(path.stat().st_size > 1000 for path in traces)
    assert str(traces[0]) in lines[1] + lines[3] + lines[5]
