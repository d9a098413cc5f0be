"""Keras backends: every backend computes what Keras 3 on TensorFlow computes, from the same
weights; each runs in a fresh process of its own, as the chapter runs it."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perfguide.measure.measurement import Measurement
from perfguide.pages import keras_backends as page
from perfguide.processes.fresh import child_environment
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import keras_backends as kb
from perfguide.workloads import keras_processes
from tests import backend_results
from tests.recipes import run_recipe

ROOT = Path(backend_results.__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def by_backend(tmp_path_factory):
    """Every installed backend's results, its processes started side by side."""
    folder = tmp_path_factory.mktemp("backends")
    installed = [name for name in kb.BACKENDS if name not in kb.missing_backends()]
    started = {}
    for name in installed:
        path = folder / f"{name}.npz"
        command = [sys.executable, "-m", "tests.backend_results", str(path)]
        env = child_environment(kb.BACKENDS[name])
        started[name] = (path, subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE))
    found = {}
    for name, (path, process) in started.items():
        _, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, f"{name}: {stderr.decode()[-2000:]}"
        found[name] = dict(np.load(path))
    return found


@pytest.mark.processes
def test_each_process_runs_the_backend_it_was_started_with(by_backend):
    assert "tensorflow" in by_backend
    for name, results in by_backend.items():
        assert str(results["backend"]) == name


@pytest.mark.processes
@pytest.mark.parametrize("backend", [b for b in kb.BACKENDS if b != "tensorflow"])
def test_every_backend_predicts_what_tensorflow_predicts(by_backend, backend):
    if backend not in by_backend:
        pytest.skip(kb.missing_backends()[backend])
    reference, results = by_backend["tensorflow"], by_backend[backend]
    for model in kb.MODELS:
        key = f"{model}/output"
        assert results[key].shape == reference[key].shape
        np.testing.assert_allclose(results[key], reference[key], rtol=1e-4, atol=1e-5, err_msg=key)


@pytest.mark.processes
@pytest.mark.parametrize("backend", [b for b in kb.BACKENDS if b != "tensorflow"])
def test_every_training_backend_takes_tensorflows_step(by_backend, backend):
    if backend in keras_processes.INFERENCE_ONLY:
        pytest.skip(f"{backend} runs inference only")
    if backend not in by_backend:
        pytest.skip(kb.missing_backends()[backend])
    reference, results = by_backend["tensorflow"], by_backend[backend]
    for model in kb.MODELS:
        for loss in ("evaluated", "loss"):
            key = f"{model}/{loss}"
            assert results[key] == pytest.approx(reference[key], rel=1e-4), key
        weights = sorted(k for k in reference if k.startswith(f"{model}/weight"))
        assert weights and weights == sorted(k for k in results if k.startswith(f"{model}/weight"))
        for key in weights:
            np.testing.assert_allclose(
                results[key], reference[key], rtol=1e-4, atol=1e-6, err_msg=key
            )


@pytest.mark.processes
def test_a_step_moves_the_weights(by_backend):
    reference = by_backend["tensorflow"]
    for model in kb.MODELS:
        initial = kb.built(model).get_weights()
        moved = [np.abs(reference[f"{model}/weight{i}"] - w).max() for i, w in enumerate(initial)]
        assert max(moved) > 1e-5, model


def test_a_backend_runs_only_in_a_process_started_with_it():
    jax = kb.BY_BACKEND["jax"]
    with pytest.raises(ValueError, match="KERAS_BACKEND=jax"):
        jax.make_call("mlp-fit", 2)


def test_an_inference_only_backend_has_no_training_variants():
    paths = {kb.model_and_path(v)[1] for v in kb.BY_BACKEND["openvino"].variants}
    assert paths == {"predict", "model-call"}


def test_a_backend_without_its_package_is_named_with_the_reason(monkeypatch):
    monkeypatch.setattr(keras_processes.importlib.util, "find_spec", lambda name: None)
    assert kb.missing_backends() == {
        "keras-2": "needs tf_keras: pip install tf-keras",
        "jax": "needs jax: pip install jax",
        "openvino": "needs openvino: pip install openvino",
    }


def test_every_variant_names_a_model_and_a_path():
    tensorflow = kb.BY_BACKEND["tensorflow"]
    for variant in tensorflow.variants:
        assert any(variant == f"{m}-{p}" for m in kb.MODELS for p in kb.PATHS)
        timed = tensorflow.make_call(variant, 2)
        epoch = "-fit" in variant or variant.endswith("-evaluate")
        assert timed.units_per_call == (2 if epoch else 1)
        assert timed() is not None


def test_fit_from_a_dataset_takes_the_step_fit_from_arrays_takes():
    x, y = kb.make_data("mlp", 2)
    weights = {}
    for path in ("fit", "fit-dataset"):
        timed = kb.BY_BACKEND["tensorflow"].make_call(f"mlp-{path}", 2)
        timed()
        (network,) = (a for a in timed.fn.args if hasattr(a, "get_weights"))
        weights[path] = network.get_weights()
    for a, b in zip(weights["fit"], weights["fit-dataset"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_fit_epoch_trains_its_batches_and_predicting_reads_one():
    x, y = kb.make_data("mlp", 3)
    assert x.shape == (3 * kb.MODELS["mlp"].batch, 256) and y.shape == (len(x),)
    assert set(np.unique(kb.make_data("conv1d")[1])) <= {0.0, 1.0}


# -- The chapter's page, on made-up measurements ------------------------------------------------


def timed(label, median_s, processes=("p1", "p2"), **fields):
    """A measurement of ``label`` whose processes each took ``median_s`` a batch."""
    blocks = (median_s,) * 5
    return Measurement(
        label,
        "batch",
        1,
        1,
        0.5,
        blocks * len(processes),
        blocks_per_process=(5,) * len(processes),
        process_ids=tuple(f"{label}-{p}" for p in processes),
        **fields,
    )


def made_up_runs(jax_s=1e-3, tensorflow_s=5e-3):
    by_model = {
        model: [
            timed(page.label("tensorflow", "fit"), tensorflow_s),
            timed(page.label("tensorflow", "fit-dataset"), tensorflow_s / 4),
            timed(page.label("jax", "fit-jit"), jax_s),
            timed(page.label("tensorflow", "predict"), 40e-3),
        ]
        for model in kb.MODELS
    }
    one_batch = [timed(page.label("tensorflow", "fit"), 50e-3)]
    return page.BackendRuns(by_model, one_batch, {}, [])


def test_each_backend_times_its_paths_on_the_models_its_table_names():
    variants = {backend: kb.BY_BACKEND[backend].variants for backend in kb.BACKENDS}
    assert "mlp-fit" in variants["jax"] and "conv1d-fit" not in variants["jax"]
    assert {"gru-fit-jit", "transformer-fit-jit"} <= set(variants["jax"])
    assert "gru-fit" in variants["tensorflow"] and "gru-fit" not in variants["keras-2"]
    assert "mlp-fit-dataset" in variants["tensorflow"]
    assert "conv1d-fit-dataset" not in variants["tensorflow"]


def test_measurements_are_named_by_backend_and_path_and_grouped_by_model():
    by_model = page._by_model(
        {"jax": [timed("deep-mlp-fit-jit", 1e-3), timed("mlp-predict", 1e-3)]}
    )
    assert [m.label for m in by_model["deep-mlp"]] == ["jax-fit-jit"]
    assert [m.label for m in by_model["mlp"]] == ["jax-predict"]
    assert by_model["conv1d"] == []


def test_only_the_checks_on_what_ran_on_their_model_are_judged():
    checks = page.claims(made_up_runs())
    assert set(page.JAX_OVER_TENSORFLOW) <= set(checks)
    assert page.JIT_ON_JAX not in checks  # jax-fit was not timed
    assert not set(page.PREDICT) & set(checks)
    assert page.DATASET_ON_TENSORFLOW in checks
    runs = made_up_runs()
    runs.by_model["mlp"].pop(1)  # tensorflow-fit-dataset: timed on the other models only
    assert page.DATASET_ON_TENSORFLOW not in page.claims(runs)


def test_a_backend_five_times_faster_across_processes_holds_and_an_equal_one_does_not():
    runs = made_up_runs()
    report = ClaimReport.of(page.claims(runs), runs.by_model)
    assert all(report[c].held is True for c in page.JAX_OVER_TENSORFLOW)
    runs = made_up_runs(jax_s=5e-3)
    report = ClaimReport.of(page.claims(runs), runs.by_model)
    assert all(report[c].held is not True for c in page.JAX_OVER_TENSORFLOW)


def test_a_fit_calls_price_and_step_come_from_one_batch_and_an_epoch(monkeypatch):
    monkeypatch.setattr(kb, "EPOCH_BATCHES", 16)
    # An epoch of 16 batches at 5 ms a batch is 80 ms; one batch took 50 ms: a step of 2 ms,
    # a price of 48 ms, 60 % of the epoch's call.
    (row,) = page.price_and_steps(made_up_runs()).rows
    assert row == ["tensorflow-fit", "50.0 ms", "48.0 ms", "2.00 ms", "60%"]


def test_each_models_fit_in_full_compares_every_fit_path_with_tensorflows():
    shown = page.fits_in_full(made_up_runs())
    assert [table.caption for table in shown.shown.shown] == [
        f"The {model}'s fit" for model in kb.MODELS
    ]
    assert "tensorflow-fit-dataset" in str(shown) and "tensorflow-predict" not in str(shown)
    assert shown._repr_html_().count("<table") == len(kb.MODELS)


def test_the_tables_show_a_dash_where_a_backend_did_not_run_a_path():
    table = page.times_table(made_up_runs(), page.TRAINING, "fit")
    assert table.header[1:] == [page.label(b, p) for b, p in page.TRAINING]
    assert table.rows[0][:3] == ["mlp", "–", "5.00 ms"]


def test_a_table_leaves_out_the_models_none_of_its_paths_ran_on():
    runs = made_up_runs()
    runs.by_model["gru"] = [timed(page.label("jax", "fit-jit"), 1e-3)]
    table = page.times_table(runs, page.INFERENCE, "inference")
    assert "gru" not in [row[0] for row in table.rows] and table.rows[0][0] == "mlp"


def test_the_short_answer_advises_only_what_held():
    runs = made_up_runs()
    checks = page.claims(runs)
    report = ClaimReport.of(checks, runs.by_model)
    profile = page.FitProfile(0.1, 0.4, 10)
    answer = page.short_answer(report, checks, profile, 2)
    assert [r.advised for r in answer.recommendations] == [True, True]
    assert "40% of a fit call" in answer.answer
    assert answer.answer.startswith("For training these models, yes: Keras 3 on JAX trained all")
    runs = made_up_runs(jax_s=5e-3, tensorflow_s=5e-3)
    report = ClaimReport.of(checks, runs.by_model)
    assert not page.short_answer(report, checks, profile, 2).recommendations[0].advised


def answer_of(runs: page.BackendRuns) -> str:
    """The short answer's text on ``runs``' checks."""
    checks = page.claims(runs)
    report = ClaimReport.of(checks, runs.by_model)
    return page.short_answer(report, checks, page.FitProfile(0.1, 0.4, 10), 2).answer


def test_the_short_answer_counts_apart_the_models_whose_check_was_inconclusive():
    answer = answer_of(made_up_runs(jax_s=5e-3 / 1.2, tensorflow_s=5e-3))  # right at Keras's 20 %
    models = len(kb.MODELS)
    assert answer.startswith(f"It depends on the model: Keras 3 on JAX trained 0 of {models}")
    assert f"on {models} more the check was INCONCLUSIVE" in answer


def test_the_short_answer_says_no_where_jax_trained_no_model_faster():
    answer = answer_of(made_up_runs(jax_s=5e-3, tensorflow_s=5e-3))
    assert answer.startswith("For training these models, no: Keras 3 on JAX trained none of the")


def test_the_short_answer_says_so_where_jax_did_not_run():
    runs = made_up_runs()
    for model, measured in runs.by_model.items():
        runs.by_model[model] = [m for m in measured if not m.label.startswith("jax-")]
    assert answer_of(runs).startswith("Keras 3 on JAX did not run here")


def test_the_short_answer_sets_jax_against_tensorflow_running_many_steps_a_call():
    runs = made_up_runs()
    runs.by_model["mlp"].append(timed(page.STEPS, 2e-3))
    assert {page.STEPS_ON_TENSORFLOW, page.JAX_OVER_STEPS} <= set(page.claims(runs))
    answer = answer_of(runs)
    assert "jax-fit-jit was 2.00x faster than tensorflow-fit-steps-per-execution here" in answer


def test_fit_running_many_steps_a_call_is_compiled_so():
    timed = kb.BY_BACKEND["tensorflow"].make_call("mlp-fit-steps-per-execution", 2)
    network = timed.fn.args[0]
    assert network.steps_per_execution == kb.tl.STEPS_PER_EXECUTION
    assert kb.BY_BACKEND["tensorflow"].make_call("mlp-fit", 2).fn.args[0].steps_per_execution == 1


def test_the_profile_finds_the_pipeline_fit_builds_from_arrays():
    profile = page.profile_fit(calls=2)
    assert profile.calls == 2 and profile.call_s > 0
    assert 0 < profile.adapter_share < 1


def test_the_recipes_run():
    run_recipe("keras_backends", "Feed fit a dataset built once")
    run_recipe("keras_backends", "Choose the backend before importing Keras")


def test_jaxs_operations_are_priced_one_dispatch_each_from_the_medians():
    runs = made_up_runs()
    runs.by_model["mlp"].append(timed(page.label("jax", "fit"), 21e-3))
    counted = dataclasses.replace(runs, ops_per_step={"tensorflow": 250, "jax": 100})
    # (21 ms - 1 ms) over 100 operations: 200 µs each.
    assert "100 operations a step one at a time: 200 µs each" in page.per_dispatch(counted)
    table = page.dispatch_table(counted)
    assert [row[:2] for row in table.rows] == [
        ["Keras 3 on TensorFlow", "250"],
        ["Keras 3 on JAX", "100"],
    ]
    assert table.rows[1][3:] == ["21.0 ms", "1.00 ms"]
    assert page.per_dispatch(runs) == "JAX's operations were not counted here."


def test_openvinos_predict_precision_is_said_with_its_distance_from_float32():
    runs = made_up_runs()
    assert page.precision_note(runs) == "OpenVINO did not run here."
    bfloat16 = dataclasses.replace(
        runs, openvino_predict={"precision": "bfloat16", "difference": 0.003}
    )
    note = page.precision_note(bfloat16)
    assert "computed in bfloat16 here; its largest difference from model(x)'s float32" in note
    assert "outputs was 0.300 % of the largest output" in note
    assert "not float32 times" in page.precision_note(bfloat16)
    exact = dataclasses.replace(runs, openvino_predict={"precision": "float32", "difference": 0.0})
    assert "not float32 times" not in page.precision_note(exact)


@pytest.mark.skipif(bool(kb.missing_backends().get("jax")), reason="JAX is not installed")
def test_a_training_step_is_read_and_counted_on_tensorflow_and_on_jax_in_processes_of_their_own():
    code = (
        "import json; from perfguide.workloads import keras_backends as kb; "
        "print(json.dumps([kb.step_peaks('mlp'), kb.ops_per_step('mlp')]))"
    )
    for backend in page.OPS_COUNTED:
        env = child_environment(kb.BACKENDS[backend])
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        peaks, ops = json.loads(done.stdout.splitlines()[-1])
        assert ops > 10, (backend, ops)
        # The MLP's 256 inputs, 512 hidden units (and their dropout's) and 10 logits, float32:
        assert peaks["activations"] == (512 + 512 + 10) * 4
        # Sixteen times the batch holds at least its activations sixteen times over.
        growth = peaks["resident"][-1] - peaks["resident"][0]
        assert growth > (kb.PEAK_BATCHES[-1] - kb.PEAK_BATCHES[0]) * 4136, (backend, peaks)


def test_a_backends_memory_an_example_is_the_slope_of_its_peaks_over_the_batch_sizes():
    found = [
        {"resident": [1e6 + 8e3 * b for b in kb.PEAK_BATCHES], "before": 5e8, "activations": 4e3},
        {"resident": [2e6 + 8e3 * b for b in kb.PEAK_BATCHES], "before": 5e8, "activations": 4e3},
    ]
    runs = dataclasses.replace(made_up_runs(), peaks={"jax": page.peaks_of("jax", found)})
    (row,) = page.memory_table(runs).rows
    assert row[0] == kb.NAMES["jax"] and row[-1].startswith("8.00 kB (")
    assert row[1] == "5.60 MB"  # median of 5.10 MB and 6.10 MB at a batch of 512
    assert "4.00 kB" in page.activations_note(runs)


def test_jaxs_compile_is_repaid_after_the_epochs_its_steady_speed_saves(monkeypatch):
    monkeypatch.setattr(kb, "EPOCH_BATCHES", 16)
    runs = made_up_runs()
    jax = page.label("jax", "fit-jit")
    runs.by_model["mlp"] = [
        dataclasses.replace(m, first_call_s=2.5) if m.label == jax else m
        for m in runs.by_model["mlp"]
    ]
    rows = {row[0]: row for row in page.compile_repaid(runs).shown.rows}
    # 2.004 s more on the first call; (5 ms - 1 ms) x 16 batches = 64 ms saved an epoch.
    assert rows["mlp"][1:] == ["2.50 s", "495 ms", "64.0 ms", "31"]
    assert rows["conv1d"][-1] == "0.063"
