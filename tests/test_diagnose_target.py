"""``perfguide diagnose``'s input specs and targets (:mod:`perfguide.diagnose.target`): parsed
and checked before any process starts, no TensorFlow needed."""

import json
from pathlib import Path

import pytest

from perfguide import workloads
from perfguide.diagnose.target import InputSpec, Target, TargetError

SLOW = Path(workloads.__file__).with_name("diagnose.py")  # the diagnose chapter's functions


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("float32[32,128]", InputSpec("float32", (32, 128))),
        ("int32[ 7 ]", InputSpec("int32", (7,))),
        ("bfloat16[]", InputSpec("bfloat16", ())),
        ("3", InputSpec(number=3)),
        ("-0.5", InputSpec(number=-0.5)),
        ("tokens=int32[32,4]", InputSpec("int32", (32, 4), name="tokens")),
        ("scale=0.5", InputSpec(number=0.5, name="scale")),
    ],
)
def test_input_specs_parse(text, spec):
    assert InputSpec.parse(text) == spec


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("float33[3]", "unknown dtype 'float33'"),
        ("float32[3,0]", "above 0"),
        ("float32[3,x]", "each dimension must be a whole number"),
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
    target = Target("diagnose.py:scale", (InputSpec.parse("float32[2]"), InputSpec(number=2)))
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
        (f"{SLOW}:scale", None, (InputSpec(number=1, name="k"),), "only a model's inputs"),
    ],
)
def test_targets_that_cannot_be_say_why(function, factory, inputs, message):
    with pytest.raises(TargetError, match=message):
        Target(function, inputs, factory)


def test_a_missing_model_file_is_refused_before_any_process_starts():
    with pytest.raises(TargetError, match="no such model file gone.keras"):
        Target("gone.keras")


def test_saved_models_are_told_by_their_suffix_or_their_directory(tmp_path):
    for name in ("m.keras", "m.h5", "m.tflite"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "exported").mkdir()
    (tmp_path / "exported" / "saved_model.pb").write_bytes(b"")
    kinds = {name: Target(str(tmp_path / name)).kind for name in ("m.keras", "m.h5", "m.tflite")}
    assert kinds == {"m.keras": "keras", "m.h5": "keras", "m.tflite": "litert"}
    exported = Target(str(tmp_path / "exported"), (InputSpec.parse("x=float32[2,3]"),))
    assert exported.kind == "saved-model" and exported.is_model
    assert exported.describe() == "exported(x=float32[2,3])"


def test_a_directory_that_is_no_saved_model_is_refused_before_any_process_starts(tmp_path):
    with pytest.raises(TargetError, match="is a directory but no SavedModel"):
        Target(str(tmp_path))


def test_inputs_are_named_all_or_none(tmp_path):
    (tmp_path / "m.keras").write_bytes(b"")
    specs = (InputSpec.parse("a=float32[2]"), InputSpec.parse("float32[2]"))
    with pytest.raises(TargetError, match="name every input"):
        Target(str(tmp_path / "m.keras"), specs)
