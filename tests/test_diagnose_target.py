"""``perfguide diagnose``'s input specs and targets (:mod:`perfguide.diagnose.target`): parsed
and checked before any process starts, no TensorFlow needed."""

import json
from pathlib import Path

import pytest

from perfguide.diagnose.target import InputSpec, Target, TargetError

SLOW = Path(__file__).parents[1] / "examples" / "diagnose" / "slow_functions.py"


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("float32[32,128]", InputSpec("float32", (32, 128))),
        ("int32[ 7 ]", InputSpec("int32", (7,))),
        ("bfloat16[]", InputSpec("bfloat16", ())),
        ("3", InputSpec(number=3)),
        ("-0.5", InputSpec(number=-0.5)),
    ],
)
def test_input_specs_parse(text, spec):
    assert InputSpec.parse(text) == spec


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("float33[3]", "unknown dtype 'float33'"),
        ("float32[3,0]", "above 0"),
        ("float32[3,x]", "neither a tensor spec"),
        ("float32[65536,65536]", "more than"),
        ("nan", "not a finite number"),
        ("tensor", "neither a tensor spec"),
    ],
)
def test_bad_input_specs_say_why(text, message):
    with pytest.raises(TargetError, match=message):
        InputSpec.parse(text)


def test_a_target_names_files_by_absolute_path_and_describes_its_call(monkeypatch):
    monkeypatch.chdir(SLOW.parent)
    target = Target("slow_functions.py:scale", (InputSpec.parse("float32[2]"), InputSpec(number=2)))
    assert target.function == f"{SLOW}:scale"
    assert target.describe() == "scale(float32[2], 2)"
    assert Target.from_json(json.loads(json.dumps(target.to_json()))) == target


@pytest.mark.parametrize(
    ("function", "factory", "inputs", "message"),
    [
        ("nowhere.py:f", None, (), "no such file nowhere.py"),
        ("just_a_name", None, (), "is not file.py:name"),
        ("module:not-a-name", None, (), "is not file.py:name"),
        (f"{SLOW}:scale", f"{SLOW}:scale", (InputSpec(number=1),), "not both"),
    ],
)
def test_targets_that_cannot_be_say_why(function, factory, inputs, message):
    with pytest.raises(TargetError, match=message):
        Target(function, inputs, factory)


def test_a_missing_model_file_is_refused_before_any_process_starts():
    with pytest.raises(TargetError, match="no such model file gone.keras"):
        Target("gone.keras")
