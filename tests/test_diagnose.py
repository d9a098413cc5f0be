"""``perfguide diagnose``: what it finds in known slow functions, in this process and in a
worker's (its input specs, verdicts and command line are tested in test_diagnose_*.py)."""

from pathlib import Path

import numpy as np
import pytest

from perfguide.diagnose.target import (
    BATCH_WORKLOAD,
    TRAINING_WORKLOAD,
    WORKLOAD,
    InputSpec,
    Target,
)
from perfguide.processes.fresh import BadInput

SLOW = Path(__file__).parents[1] / "examples" / "diagnose" / "slow_functions.py"


# -- What the probe finds in known slow functions (in this process; counts, not speed) --------


@pytest.fixture
def probe():
    from perfguide.diagnose import probe
    from perfguide.workloads import WORKLOADS

    yield probe
    # register() adds them to this process's registry
    for name in (WORKLOAD, BATCH_WORKLOAD, TRAINING_WORKLOAD):
        WORKLOADS.pop(name, None)


def register(probe, function, *inputs):
    target = Target(f"{SLOW}:{function}", tuple(map(InputSpec.parse, inputs)))
    return probe.register(target.to_json())


def test_a_tf_function_fed_python_numbers_retraces_and_the_fix_does_not(probe):
    registered = register(probe, "scale", "float32[8,4]", "0.5")
    assert registered["as_written"] == "tf-function"
    answer = probe.retracing()
    by_number = [
        call
        for label, call in zip(answer["varied"], answer["calls"][1:], strict=True)
        if "Python number" in label
    ]
    assert len(by_number) == 2 and all(call["traced"] for call in by_number)
    fixed = [call["traced"] for call in answer["fixed_calls"][1:]]
    assert sum(fixed) < sum(call["traced"] for call in answer["calls"][1:])


def test_a_python_loop_of_small_ops_is_many_ops_per_call(probe):
    registered = register(probe, "row_norms", "float32[32,16]")
    assert registered["variants"] == ["eager", "tf-function", "jit-compile"]
    facts = probe.facts()
    assert facts["ops"] >= 32 * 3  # a slice, a norm's ops and an add per row
    assert facts["outside_graph"] == []


def test_one_large_product_counts_its_flops_and_cannot_be_varied(probe):
    register(probe, "product", "float32[64,32]", "float32[32,16]")
    facts = probe.facts()
    assert facts["flops"] == 2 * 64 * 32 * 16
    assert facts["bytes"] == 4 * (64 * 32 + 32 * 16 + 64 * 16)
    assert probe.retracing()["varied"] == []  # a changed batch no longer fits the product


def test_a_numpy_function_is_named_with_its_source_line_and_cannot_be_compiled(probe):
    registered = register(probe, "log_magnitude", "float32[16]")
    assert "jit-compile" in registered["problems"]
    (outside,) = probe.facts()["outside_graph"]
    line = next(
        i for i, text in enumerate(SLOW.read_text().splitlines(), 1) if "tf.numpy_function(" in text
    )
    assert outside["op"] == "PyFunc" and outside["where"] == f"{probe.shown(str(SLOW))}:{line}"


def test_results_agree_at_the_scale_of_the_result(probe):
    a = np.array([100.0, 1e-3, -50.0], np.float32)
    close = [a + np.float32(1e-3)]  # 1e-3 off everywhere: 1000 % of the middle element
    assert probe.difference([a], close) is None
    assert "differs by up to 1" in probe.difference([a], [a + 1])
    assert "shape" in probe.difference([a], [a[:2]])
    assert "returns 2 values" in probe.difference([a], [a, a])
    assert "NaN" in probe.difference([a], [np.array([np.nan, 0, 0], np.float32)])
    assert probe.difference([np.array([1, 2])], [np.array([1, 3])]) == "value 0 differs"


def test_a_form_that_computes_something_else_is_not_timed(probe, tmp_path):
    source = tmp_path / "random_step.py"
    source.write_text(
        "import numpy as np\nimport tensorflow as tf\n\n"
        "def noisy(x):\n    return x + np.random.default_rng().standard_normal()\n"
    )
    target = Target(f"{source}:noisy", (InputSpec.parse("float32[4]"),))
    registered = probe.register(target.to_json())
    # Traced once, the random number is frozen into the graph: not the eager function.
    assert registered["variants"] == ["eager"]
    assert "not the same result" in registered["problems"]["tf-function"]


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
def test_bad_functions_and_inputs_are_bad_input(probe, tmp_path, source, function, inputs, message):
    path = tmp_path / "mine.py"
    path.write_text(source)
    target = Target(f"{path}:{function}", tuple(map(InputSpec.parse, inputs)))
    with pytest.raises(BadInput, match=message):
        probe.register(target.to_json())


def test_a_factory_makes_the_arguments(probe, tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(
        "import tensorflow as tf\n\ndef make():\n    return tf.ones([3]), 2.0\n\n"
        "def f(x, k):\n    return x * k\n"
    )
    registered = probe.register(Target(f"{path}:f", factory=f"{path}:make").to_json())
    assert registered["problems"] == {}


@pytest.fixture
def saved_model(tmp_path):
    import keras

    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.train_on_batch(np.ones((2, 4), np.float32), np.zeros(2))  # as a saved model is: trained
    path = tmp_path / "model.keras"
    model.save(path)
    return path


def test_a_saved_model_is_timed_predicting_and_training_each_way(probe, saved_model):
    registered = probe.register(
        Target(str(saved_model), (InputSpec.parse("float32[8,4]"),)).to_json()
    )
    assert registered["kind"] == "model" and registered["as_written"] == "predict"
    from perfguide.workloads import serving

    served = [form for form in probe.SERVING_FORMS if form not in serving.UNAVAILABLE]
    assert registered["variants"] == [*probe.INFERENCE_FORMS, *served], registered["problems"]
    # From the same weights, two steps of each path train the same weights.
    assert registered["training"] == list(probe.TRAINING_FORMS), registered["problems"]
    # fit trains as readers call it, once over an epoch (the batch repeated), timed per step;
    # fit-per-batch trains on one batch a call, the length that prices a call apart.
    training = probe.WORKLOADS[TRAINING_WORKLOAD]
    fit = training.make_call("fit", 1)
    assert registered["epoch_steps"] == fit.units_per_call == probe.EPOCH_STEPS > 1
    assert [len(part) for part in fit.args] == [8 * probe.EPOCH_STEPS] * 2
    assert training.make_call("fit-per-batch", 1).units_per_call == 1
    # Beside the reader's batch of 8, the same forms answer one request at a time.
    assert registered["batch"] == 8 and registered["other_batch"] == 1
    one = probe.WORKLOADS[BATCH_WORKLOAD].make_call("model-call", 1)
    assert one.units_per_call == 1 and np.asarray(one()).shape == (1, 3)
    facts = probe.facts()
    assert facts["flops"] >= 2 * 8 * (4 * 16 + 16 * 3)  # the two products of the forward pass
    retraced = probe.retracing()
    assert retraced["varied"] == ["batch doubled", "batch plus one"]
    assert all(isinstance(call["bytes"], int) for call in retraced["calls"])
    held = probe.memory({"model-call": 40, "predict-on-batch": 20})
    assert [len(held[form]["series"]) for form in held] == [21, 21]
    assert [held[form]["every"] for form in held] == [2, 1]


def test_a_conversion_that_fails_is_one_line_and_the_rest_is_timed(probe, saved_model, monkeypatch):
    from perfguide.workloads import serving

    def rejected(model, way, folder):
        raise RuntimeError(f"{way} converter: op Foo\nis not supported\n(long trace)")

    monkeypatch.setattr(serving, "converted", rejected)
    registered = probe.register(
        Target(str(saved_model), (InputSpec.parse("float32[8,4]"),)).to_json()
    )
    assert registered["variants"] == list(probe.INFERENCE_FORMS)
    for form in probe.SERVING_FORMS:
        reason = registered["problems"][form]
        assert "converter: op Foo" in reason and "\n" not in reason


def test_a_file_that_is_not_a_model_cannot_be_loaded(probe, tmp_path):
    path = tmp_path / "broken.keras"
    path.write_text("not a zip")
    with pytest.raises(BadInput, match="cannot load .*broken.keras"):
        probe.register(Target(str(path), (InputSpec.parse("float32[2,4]"),)).to_json())


@pytest.mark.parametrize(("batch", "other"), [(8, 1), (1, 32)])
def test_a_model_is_also_timed_at_one_request_or_at_predicts_batch(probe, batch, other):
    assert probe.other_batch(batch) == other
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(probe.rebatched(x, 4), x[[0, 1, 2, 0]])


def test_a_process_started_for_an_undecided_claim_is_set_up_like_the_others(monkeypatch):
    from perfguide.processes import pool
    from perfguide.report.claims import Faster

    monkeypatch.setattr(pool, "SETTLE_PROCESSES", 2)
    with pool.Workers(1) as workers:
        spec = Target(f"{SLOW}:row_norms", (InputSpec.parse("float32[32,16]"),)).to_json()
        workers.prepare("perfguide.diagnose.probe:register", spec=spec)
        # A form against itself never settles: the second process must know the function.
        never = Faster("eager", "eager", tolerance=0)
        (eager,) = workers.run(WORKLOAD, ["eager"], quick=True, settle=[never])
        assert eager.processes == 2 and len(set(eager.process_ids)) == 2
