"""The forms of the reader's code, checked against its own and registered
(:mod:`perfguide.diagnose.worker.forms`, :mod:`perfguide.diagnose.worker.model_forms`), in this
process: which forms compute the same result, and the workloads the registration holds."""

from pathlib import Path

import diagnose_corpus
import numpy as np
import pytest

from perfguide import workloads
from perfguide.diagnose import agreement
from perfguide.diagnose.target import BATCH_WORKLOAD, TRAINING_WORKLOAD, WORKLOAD, InputSpec, Target
from perfguide.diagnose.worker import forms, model_forms
from perfguide.workloads import WORKLOADS, serving

SLOW = Path(workloads.__file__).with_name("diagnose.py")  # the diagnose chapter's functions


@pytest.fixture
def saved_model(tmp_path):
    return diagnose_corpus.save_classifier(tmp_path / "model.keras")


def register_model(path):
    return forms.register(Target(str(path), (InputSpec.parse("float32[8,4]"),)).to_json())


def test_results_agree_at_the_scale_of_the_result():
    a = np.array([100.0, 1e-3, -50.0], np.float32)
    close = [a + np.float32(1e-3)]  # 1e-3 off everywhere: 1000 % of the middle element
    assert agreement.difference([a], close) is None
    assert "differs by up to 1" in agreement.difference([a], [a + 1])
    assert "shape" in agreement.difference([a], [a[:2]])
    assert "returns 2 values" in agreement.difference([a], [a, a])
    assert "NaN" in agreement.difference([a], [np.array([np.nan, 0, 0], np.float32)])
    assert agreement.difference([np.array([1, 2])], [np.array([1, 3])]) == "value 0 differs"


def test_a_form_that_computes_something_else_is_not_timed(tmp_path):
    source = tmp_path / "random_step.py"
    source.write_text(
        "import numpy as np\nimport tensorflow as tf\n\n"
        "def noisy(x):\n    return x + np.random.default_rng().standard_normal()\n"
    )
    target = Target(f"{source}:noisy", (InputSpec.parse("float32[4]"),))
    registered = forms.register(target.to_json())
    # Traced once, the random number is frozen into the graph: not the eager function, which
    # draws one at every call.
    assert registered.answer.variants == ("eager",)
    assert registered.answer.random == forms.RANDOM_CALLS
    for form in ("tf-function", "jit-compile"):
        why = registered.answer.problems[form]
        assert why.startswith("not the same result") and "drawn once" in why


def test_a_registration_holds_its_workloads_and_leaves_the_chapters_alone():
    before = dict(WORKLOADS)
    target = Target(f"{SLOW}:row_norms", (InputSpec.parse("float32[32,16]"),))
    registered = forms.register(target.to_json())
    assert dict(WORKLOADS) == before  # registering adds no chapter workload
    (workload,) = registered.workloads.values()
    assert workload.name == WORKLOAD and workload.baseline == "eager"
    assert workload.variants == registered.answer.variants


def test_a_saved_model_is_timed_predicting_and_training_each_way(saved_model):
    registered = register_model(saved_model)
    answer = registered.answer
    assert answer.kind == "model" and answer.as_written == "predict"
    served = [form for form in model_forms.SERVING_FORMS if form not in serving.UNAVAILABLE]
    assert answer.variants == (*model_forms.INFERENCE_FORMS, *served), answer.problems
    # From the same weights, two steps of each path train the same weights.
    assert answer.training == tuple(model_forms.TRAINING_FORMS), answer.problems
    # fit trains as readers call it, once over an epoch (the batch repeated), timed per step;
    # fit-per-batch trains on one batch a call, the length that prices a call apart.
    training = registered.workloads[TRAINING_WORKLOAD]
    fit = training.make_call("fit", 1)
    assert answer.epoch_steps == fit.units_per_call == model_forms.EPOCH_STEPS > 1
    assert [len(part) for part in fit.args] == [8 * model_forms.EPOCH_STEPS] * 2
    assert training.make_call("fit-per-batch", 1).units_per_call == 1
    # Beside the reader's batch of 8, the same forms answer one request at a time.
    assert answer.batch == 8 and answer.other_batch == 1
    one = registered.workloads[BATCH_WORKLOAD].make_call("model-call", 1)
    assert one.units_per_call == 1 and np.asarray(one()).shape == (1, 3)


def test_a_conversion_that_fails_is_one_line_and_the_rest_is_timed(saved_model, monkeypatch):
    def rejected(model, way, folder):
        raise RuntimeError(f"{way} converter: op Foo\nis not supported\n(long trace)")

    monkeypatch.setattr(serving, "converted", rejected)
    registered = register_model(saved_model)
    assert registered.answer.variants == tuple(model_forms.INFERENCE_FORMS)
    for form in model_forms.SERVING_FORMS:
        reason = registered.answer.problems[form]
        assert "converter: op Foo" in reason and "\n" not in reason


@pytest.mark.parametrize(("batch", "other"), [(8, 1), (1, 32)])
def test_a_model_is_also_timed_at_one_request_or_at_predicts_batch(batch, other):
    assert model_forms.other_batch(batch) == other
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(model_forms.rebatched(x, 4), x[[0, 1, 2, 0]])
