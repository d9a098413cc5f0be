"""The reader's example arguments (:mod:`perfguide.diagnose.examples`): every kind a
``tf.function`` takes travels to a worker and comes back as it was given, is described in a few
words, and what cannot be an argument is refused in one line; ``--input`` specs for strings and
ragged batches; and the retracing probe varies nested, ragged and sparse batches."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from perfguide.diagnose import examples
from perfguide.diagnose.target import InputSpec, Target, TargetError
from perfguide.diagnose.worker import forms, loading, retracing

Features = collections.namedtuple("Features", "text weight")

TEXT = tf.constant(["Hello, World!", "ragged batches", ""])
RAGGED = tf.ragged.constant([[1, 2, 3], [], [4]], dtype=tf.int64)
SPARSE = tf.sparse.SparseTensor([[0, 1], [2, 0]], [1.5, -2.0], [3, 4])
EVERY_KIND = (
    TEXT,
    RAGGED,
    SPARSE,
    {"words": tf.ragged.constant([["a", "b"], ["c"]]), "ids": np.arange(6, dtype=np.int32)},
    Features(TEXT, 0.5),
    [tf.constant(1.0, tf.bfloat16), tf.Variable([1, 2]), 3, "mode", None],
)


def travelled(args, tmp_path):
    """``args`` as a worker gets them: made portable, written, read and restored."""
    path = tmp_path / "examples.pkl"
    examples.write(tuple(examples.portable(arg) for arg in args), path)
    return tuple(loading.restored(arg) for arg in examples.read(str(path)))


def assert_same(given, got):
    tf.nest.assert_same_structure(given, got, expand_composites=True)
    assert type(got) is type(given)
    for a, b in zip(
        tf.nest.flatten(given, expand_composites=True),
        tf.nest.flatten(got, expand_composites=True),
        strict=True,
    ):
        if isinstance(a, tf.Variable):
            assert isinstance(b, tf.Variable)
        assert getattr(a, "dtype", type(a)) == getattr(b, "dtype", type(b))
        np.testing.assert_array_equal(*(v.numpy() if hasattr(v, "numpy") else v for v in (a, b)))


@pytest.mark.parametrize("given", EVERY_KIND, ids=lambda arg: type(arg).__name__)
def test_every_kind_of_argument_reaches_the_worker_as_given(given, tmp_path):
    (got,) = travelled((given,), tmp_path)
    assert_same(given, got)


def test_arguments_are_described_as_a_reader_would_say_them():
    described = [examples.describe(examples.portable(arg)) for arg in EVERY_KIND]
    assert described == [
        "string[3]",
        "int64[3,0..3]",
        "sparse float32[3,4] (2 values)",
        "{'words': string[2,1..2], 'ids': int32[6]}",
        "(string[3], 0.5)",
        "[bfloat16[], variable int32[2], 3, 'mode', None]",
    ]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ((n for n in range(3)), "example argument 1 is a generator (pass one batch it yields"),
        (tf.data.Dataset.range(3), "is a tf.data dataset (pass one batch of it instead)"),
        ({"model": object()}, "example argument 1['model'] is a builtins.object: give tensors"),
    ],
    ids=["generator", "dataset", "object"],
)
def test_what_cannot_be_an_argument_is_refused_in_one_line(value, said):
    with pytest.raises(TargetError) as error:
        examples.portable(value, "example argument 1")
    assert said in str(error.value) and "\n" not in str(error.value)


def test_a_target_of_examples_takes_nothing_else_and_names_them():
    target = Target("perfguide.diagnose.target:kind_of", examples="x.pkl", described=("string[3]",))
    assert target.describe() == "kind_of(string[3])"
    assert Target.from_json(target.to_json()) == target
    with pytest.raises(TargetError, match="one of them"):
        Target("m:f", (InputSpec.parse("float32[2]"),), examples="x.pkl")


def test_string_and_ragged_specs_are_filled_as_stated():
    target = Target(
        "m:f", tuple(map(InputSpec.parse, ("string[64]", "float32[32,2..5,3]", "int32[8,None]")))
    )
    text, ragged, default = loading.arguments(target)
    assert text.dtype == tf.string and text.shape == (64,)
    assert all(tf.strings.length(text).numpy() > 0)
    lengths = ragged.row_lengths().numpy()
    assert ragged.shape.as_list() == [32, None, 3] and lengths.min() >= 2 and lengths.max() <= 5
    assert default.shape.as_list() == [8, None] and default.row_lengths().numpy().min() >= 1
    assert Target.from_json(target.to_json()) == target


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("float32[32,5..2]", "row lengths 5..2 must run from a low to a high"),
        ("float32[32,x]", "each dimension must be a whole number above 0"),
        ("float32[32,2..1000000000]", "holds more than"),
    ],
)
def test_bad_ragged_specs_are_refused_in_one_line(spec, said):
    with pytest.raises(TargetError, match=said):
        InputSpec.parse(spec)


def test_nested_ragged_and_sparse_batches_are_varied_as_batches_vary():
    args = ({"ids": RAGGED, "mask": SPARSE}, TEXT, 2)
    varied = dict(retracing._varied(args))
    doubled = varied["batch doubled"]
    assert doubled[0]["ids"].nrows() == 6 and doubled[0]["mask"].dense_shape[0] == 6
    assert doubled[1].shape == (6,) and doubled[2] == 2
    assert varied["batch plus one"][0]["ids"].nrows() == 4
    shorter = varied["ragged rows one value shorter"][0]["ids"]
    assert shorter.row_lengths().numpy().tolist() == [2, 0, 0]
    assert "argument 3 as the Python number 3" in varied


def test_xla_is_not_tried_where_a_string_hides_in_a_structure():
    assert "jit-compile" in forms._untried(({"words": RAGGED, "text": TEXT},))
    assert forms._untried(({"ids": RAGGED},)) == {}
