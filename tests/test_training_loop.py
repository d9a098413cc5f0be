"""Training-loop chapter: every path trains the same step, every predictor predicts the same."""

import functools

import numpy as np
import pytest

from perfguide.workloads import training_loop as tl

#: Short samples keep a step cheap; the medium model's six valid convolutions need 115 steps.
STEPS = {"small": 40, "medium": 120}


def one_step(variant, model, keras=None):
    """Loss and weights after one step on one batch, dropout off (it draws random masks)."""
    training = tl.Training(variant, model, STEPS[model], keras=keras, dropout=0.0, batches=1)
    loss = tl.Training.loss(training.timed())
    return loss, training.weights()


def assert_same_step(reference, other, name):
    (loss, weights), (other_loss, other_weights) = reference, other
    assert other_loss == pytest.approx(loss, rel=1e-4), name
    for before, after in zip(weights, other_weights, strict=True):
        np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-6, err_msg=name)


WORKLOADS = {"small": tl.TRAIN_SMALL, "medium": tl.TRAIN_MEDIUM}


@functools.cache
def reference_step(model):
    return one_step("train-on-batch", model)


@pytest.mark.parametrize("model", WORKLOADS)
def test_a_step_moves_the_weights(model):
    initial = tl.Training("fit", model, STEPS[model], dropout=0.0).weights()
    # Adam moves each weight by about the learning rate.
    moved = zip(reference_step(model)[1], initial, strict=True)
    assert max(np.abs(a - b).max() for a, b in moved) > 1e-5


# One test a path, so that the pytest-xdist workers share them out.
@pytest.mark.parametrize(
    ("model", "variant"),
    [
        (model, variant)
        for model, workload in WORKLOADS.items()
        for variant in workload.variants
        if variant != "train-on-batch"
    ],
)
def test_every_training_path_takes_the_same_step(model, variant):
    assert_same_step(reference_step(model), one_step(variant, model), variant)


def test_keras_2_takes_the_same_step_as_keras_3():
    tf_keras = pytest.importorskip("tf_keras")
    for variant in ("train-on-batch", "fit", "custom-step"):
        keras_2 = one_step(variant, "small", keras=tf_keras)
        assert_same_step(reference_step("small"), keras_2, f"Keras 2 {variant}")


def test_keras_2_needs_its_own_process():
    with pytest.raises(ValueError, match="TF_USE_LEGACY_KERAS=1"):
        tl.KERAS_VERSIONS.make_call("keras-2-fit", tl.SMALL_DATA)


@pytest.mark.parametrize("batch", [1, 5])
def test_every_predictor_predicts_the_same(batch):
    results = {
        variant: np.asarray(tl.KERAS_INFERENCE.make_call(variant, batch)())
        for variant in tl.KERAS_INFERENCE.variants
    }
    reference = results["predict"]
    assert reference.shape == (batch, 1)
    for variant, result in results.items():
        np.testing.assert_allclose(result, reference, rtol=1e-5, atol=1e-6, err_msg=variant)


def test_batch_sizes_differ_and_start_at_a_full_batch():
    sizes = tl.batch_sizes(8)
    assert sizes[0] == tl.BATCH and len(set(sizes)) == 8 and min(sizes) > 0


def test_a_plain_tf_function_traces_once_per_batch_size_and_its_fixes_do_not():
    traces = {}
    for variant in ("tf-function-step", "reduce-retracing", "input-signature"):
        timed = tl.KERAS_RETRACING.make_call(variant, 4)
        timed()
        (function,) = timed.traced
        traces[variant] = function.experimental_get_tracing_count()
    assert traces["tf-function-step"] == 4
    assert traces["input-signature"] == 1
    assert traces["reduce-retracing"] <= 2


@pytest.mark.parametrize("autotune", [True, False])
def test_the_tf_data_paths_differ_only_in_autotuning(autotune):
    x, y = tl.make_data(STEPS["small"], 2)
    dataset = tl.batched_dataset(x, y, autotune)
    # Unset means TensorFlow's default, which is on.
    assert (dataset.options().autotune.enabled is not False) == autotune
    assert [len(batch) for batch, _ in dataset] == [tl.BATCH, tl.BATCH]


def test_steps_per_execution_reads_the_pipeline_without_autotuning():
    # So that its check against tf-data-no-autotune measures the one option it sets.
    (dataset,) = tl.Training("steps-per-execution", "small", STEPS["small"]).timed.args
    assert dataset.options().autotune.enabled is False
