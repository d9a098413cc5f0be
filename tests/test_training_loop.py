"""Training-loop chapter: every path trains the same step, every predictor predicts the same."""

import functools

import numpy as np
import pytest

from perfguide.measure.measurement import Measurement, by_size
from perfguide.pages import training_loop as page
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import training_loop as tl
from tests.recipes import run_recipe

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


def measured(label, seconds, size=tl.SMALL_DATA, first_call_s=0.0, **fields):
    return Measurement(label, "step", 1, 1, first_call_s, (seconds,) * 5, size=size, **fields)


#: Medians per step on the small model and data, shaped so that every check of the page holds:
#: graph paths far ahead of eager and of fit per batch, TF1 ahead of train_on_batch.
SMALL_MEDIANS = {
    "fit": 15e-3,
    "fit-per-batch": 150e-3,
    "train-on-batch": 13e-3,
    "custom-step": 13e-3,
    "run-eagerly": 150e-3,
    "jit-compile": 4e-3,
    "tf-data": 20e-3,
    "tf-data-no-autotune": 5e-3,
    "steps-per-execution": 1.5e-3,
    "tf1-session": 2e-3,
}
KERAS_MEDIANS = {
    "keras-3-train-on-batch": 10e-3,
    "keras-2-train-on-batch": 30e-3,
    "keras-3-fit-per-batch": 50e-3,
    "keras-2-fit-per-batch": 150e-3,
}
#: Each way's median per call at each batch size: predict far behind on one sample, close on
#: a full batch.
INFERENCE_MEDIANS = {
    1: {"model-call": 5e-3, "predict": 100e-3, "predict-on-batch": 2e-3, "tf-function": 1e-3},
    32: {"model-call": 6e-3, "predict": 100e-3, "predict-on-batch": 3e-3, "tf-function": 2e-3},
    512: {"model-call": 90e-3, "predict": 100e-3, "predict-on-batch": 90e-3, "tf-function": 80e-3},
}


def small_measured(**changed):
    return [measured(label, changed.get(label, s)) for label, s in SMALL_MEDIANS.items()]


def keras_measured(**changed):
    return [measured(label, changed.get(label, s)) for label, s in KERAS_MEDIANS.items()]


def inference_measured():
    return [
        measured(label, s, size=batch)
        for batch, medians in INFERENCE_MEDIANS.items()
        for label, s in medians.items()
    ]


def grid_measured(**changed):
    """The grid's three columns, each path the same as on the small model and data."""
    small = small_measured(**changed)
    return {
        column: [m for m in small if m.label in page.COLUMN_PATHS.get(column, SMALL_MEDIANS)]
        for column in page.GRID
    }


def test_the_pages_checks_name_the_workloads_variants():
    assert {label for c in page.SMALL_CLAIMS for label in c.labels} <= set(tl.TRAIN_SMALL.variants)
    assert {label for c in page.KERAS_CLAIMS for label in c.labels} <= set(
        tl.KERAS_VERSIONS.variants
    )
    for claim in page.INFERENCE_CLAIMS:
        assert set(claim.labels) <= set(tl.KERAS_INFERENCE.variants)
        assert claim.part in page.BATCHES
    for column, (workload, _) in page.GRID.items():
        assert set(page.COLUMN_PATHS.get(column, ())) <= set(workload.variants)
    timed = {
        column: page.COLUMN_PATHS.get(column, w.variants) for column, (w, _) in page.GRID.items()
    }
    timed[page.KERAS] = tl.KERAS_VERSIONS.variants
    for rule in page.RULES:
        assert set(rule.check.labels) <= set(timed[rule.column]), rule.said
    assert set(page.AUTOTUNE_PATHS) <= set(tl.TRAIN_SMALL.variants)


def test_each_column_settles_the_rules_checked_on_it_and_the_first_the_pages_checks():
    assert page.settled_in(page.SMALL)[-len(page.SMALL_CLAIMS) :] == list(page.SMALL_CLAIMS)
    assert [c.fast for c in page.settled_in(page.LONG)] == ["fit-per-batch"]
    assert page.settled_in(page.MEDIUM) == []


def short_answer(small, keras=None, inference=None):
    checks = ClaimReport.of(page.SMALL_CLAIMS, small)
    keras_checks = ClaimReport.of(page.KERAS_CLAIMS, keras or keras_measured())
    predicting = ClaimReport.of(page.INFERENCE_CLAIMS, by_size(inference or inference_measured()))
    return checks, page.short_answer(small, checks, keras_checks, predicting, cores=2)


def test_the_short_answer_advises_what_held_and_quotes_the_checks():
    checks, answer = short_answer(small_measured())
    assert checks.all_held
    assert checks[page.TF1_VS_TF2].stated in answer.answer
    assert "Of all paths, steps-per-execution" in answer.answer
    assert [r.advised for r in answer.recommendations] == [True] * 9
    assert answer.scenario.caption.startswith("200 training steps")
    (tf_data,) = [r for r in answer.recommendations if r.advice.startswith("Feed fit")]
    assert tf_data.caveats[0].startswith("with tf.data's autotuning on (its default) tf-data")


def test_the_page_prints_the_fastest_path_as_the_short_answer_names_it():
    small = small_measured()
    _, answer = short_answer(small)
    named = answer.answer.split("Of all paths, ", 1)[1].split(").")[0]
    assert "ahead of the runner-up" in named and named in page.fastest_path(small)


def test_the_short_answer_does_not_advise_what_did_not_hold():
    _, answer = short_answer(small_measured(**{"jit-compile": 30e-3}))
    (xla,) = [r for r in answer.recommendations if "jit_compile" in r.advice]
    assert not xla.advised and xla.deciding.verdict == "DID NOT HOLD"
    assert "Turn on jit_compile" not in str(answer)
    _, answer = short_answer(
        small_measured(), keras=keras_measured(**{"keras-3-fit-per-batch": 0.3})
    )
    assert [r.advised for r in answer.recommendations].count(False) == 1


def test_the_rules_table_checks_each_rule_on_its_own_run():
    grid = grid_measured(**{"fit-per-batch": 50e-3})
    table = page.rules_table(grid, keras_measured())
    assert [row[0] for row in table.rows] == ["DO"] * 3 + ["DON'T"] * 4
    assert [row[2] for row in table.rows] == [
        "train-on-batch",
        "tf1-session",
        "fit-per-batch",
        "run-eagerly",
        "keras-2-fit-per-batch",
        "-",
        "-",
    ]
    assert [row[3] for row in table.rows] == ["HELD", "HELD", "DID NOT HOLD", "HELD", "HELD"] + [
        "not measured"
    ] * 2
    assert table.rows[4][4].startswith("keras-3-train-on-batch is 15.0x faster")


def test_the_builds_own_lists_sort_paths_by_their_slowest_column():
    grid = grid_measured()
    grid[page.LONG] = [
        measured(label, 30e-3 if label == "tf1-session" else s)
        for label, s in SMALL_MEDIANS.items()
        if label in page.COLUMN_PATHS[page.LONG]
    ]
    table = page.own_rules(grid)
    assert table.rows[0] == ["DO", "steps-per-execution", "8.67x faster"]
    rows = {row[1]: row for row in table.rows}
    assert rows["tf1-session"] == ["DON'T", "tf1-session", "2.31x slower"]
    assert rows["custom-step"] == ["DO", "custom-step", "as fast"]
    assert [row[0] for row in table.rows][-3:] == ["DON'T"] * 3


def test_the_scenario_sets_200_steps_at_each_median_fastest_first():
    table = page.benchmark_scenario(small_measured())
    assert table.rows[0] == ["steps-per-execution", "300 ms"]
    assert table.rows[-1][1] == "30.0 s"


def test_the_pages_lines_read_the_measurements():
    small = small_measured()
    small[6] = Measurement("tf-data", "step", 1, 1, 0.0, (0.010, 0.012, 0.014, 0.016, 0.018))
    assert page.autotune_spread(small).splitlines() == [
        "fit                  spread 0% in the processes",
        "tf-data              spread 29% in the processes",
        "tf-data-no-autotune  spread 0% in the processes",
        "autotuning off spread less than on in every process",
    ]
    assert page.fit_price(small) == (
        "fit's own price 139 ms per call: 29.0 % of a fit over an epoch of 32 batches "
        "(15.0 ms a step)"
    )
    assert page.fit_beyond_train_on_batch(keras_measured()).splitlines()[0] == (
        "Keras 3: fit on one batch 40.0 ms longer than train_on_batch, which took 10.0 ms a step"
    )
    assert page.predict_calls(inference_measured()) == (
        "predict at 512: 100 ms; 16 × predict_on_batch at 32: 48.0 ms; "
        "predict_on_batch at 512: 90.0 ms"
    )


def test_first_passes_count_the_traces_and_the_claim_reads_the_plain_function():
    retracing = [
        measured("train-on-batch", 1e-3, first_call_s=0.5),
        measured("tf-function-step", 1e-3, first_call_s=0.401, first_call_traces=4),
        measured("reduce-retracing", 1e-3, first_call_s=0.2, first_call_traces=2),
        measured("input-signature", 1e-3, first_call_s=0.1, first_call_traces=1),
    ]
    lines = page.first_passes(retracing).splitlines()
    assert lines[0] == (
        "train-on-batch     traces not exposed   first pass 499 ms longer than later ones"
    )
    assert lines[1].startswith("tf-function-step   4 traces             first pass 400 ms")
    assert lines[3].startswith("input-signature    1 trace              first pass")
    claim = page.retrace_claim(retracing)
    assert claim.verdict == "HELD"
    assert claim.evidence == "4 traces for 4 sizes; input_signature 1, reduce_retracing 2"
    retracing[1] = measured("tf-function-step", 1e-3, first_call_traces=1)
    assert page.retrace_claim(retracing).verdict == "DID NOT HOLD"


class FakeWorkers:
    def __init__(self):
        self.runs = []

    def run(self, workload, variants=None, *, size, settle=(), quick):
        self.runs.append((workload.name, variants, size, list(settle), quick))
        return [measured(label, 1e-3, size) for label in variants or workload.variants]


def test_the_grid_times_each_column_on_its_paths_and_settles_its_claims():
    workers = FakeWorkers()
    grid = page.time_grid(workers)
    assert list(grid) == [page.SMALL, page.LONG, page.MEDIUM]
    assert [(name, size) for name, _, size, _, _ in workers.runs] == [
        ("train-small-model", tl.SMALL_DATA),
        ("train-small-model", tl.MEDIUM_DATA),
        ("train-medium-model", tl.SMALL_DATA),
    ]
    paths = page.COLUMN_PATHS
    assert [run[1] for run in workers.runs] == [None, paths[page.LONG], paths[page.MEDIUM]]
    assert [run[3] for run in workers.runs] == [page.settled_in(column) for column in grid]
    inference = page.time_inference(workers)
    assert sorted({m.size for m in inference}) == list(page.BATCHES)


def test_the_recipes_custom_step_takes_the_timed_custom_steps_step():
    keras = tl.keras_module()
    recipe = run_recipe("training_loop", "A custom training step in a tf.function")
    model, x, y = recipe["model"], recipe["x"], recipe["y"]
    timed = keras.models.clone_model(model)
    timed.set_weights(model.get_weights())
    timed.compile(keras.optimizers.SGD(0.1), "mse")
    timed_loss = tl.custom_train_step(timed)(x, y)
    assert float(recipe["train_step"](x, y)) == pytest.approx(float(timed_loss), rel=1e-6)
    for ours, theirs in zip(model.get_weights(), timed.get_weights(), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize(
    "heading",
    [
        "Several batches a call with steps_per_execution",
        "Predict a small batch with predict_on_batch or model(x)",
    ],
)
def test_the_recipes_that_check_themselves_hold(heading):
    run_recipe("training_loop", heading)
