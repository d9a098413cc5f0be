"""Serving chapter: every way answers as Keras does, converted files are written whole, and a
cold start is timed in a process that had not imported TensorFlow."""

import importlib.util

import numpy as np
import pytest

from perfguide.measure.limits import MachineLimits
from perfguide.measure.measurement import Measurement
from perfguide.measure.profile import OpTime
from perfguide.pages import serving as page
from perfguide.processes import serving_cold_start
from perfguide.processes.worker import TRACED_CALLS
from perfguide.report.publishing.answers import ShortAnswer
from perfguide.report.tables.ops import OpTable
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import serving
from tests.recipes import run_recipe

pytestmark = pytest.mark.skipif(
    bool(serving.UNAVAILABLE), reason=f"serving packages missing: {serving.UNAVAILABLE}"
)
SMALL_MODELS = ("identity", "mlp", "conv1d")


@pytest.mark.parametrize("way", list(serving.WAYS))
@pytest.mark.parametrize("name", SMALL_MODELS)
def test_every_way_answers_as_keras_does(name, way):
    assert serving.output_difference(name, way) <= serving.tolerance(way)


@pytest.mark.parametrize("way", ["tf-function", "litert", "litert-int8", "onnxruntime", "openvino"])
def test_mobilenet_ways_answer_as_keras_does(way):
    assert serving.output_difference("mobilenet", way, batch=2) <= serving.tolerance(way)


def test_the_identity_model_answers_its_request_unchanged():
    x = serving.requests("identity", 4)
    np.testing.assert_array_equal(serving.answer("identity", "litert", x), x)


def test_quantized_answers_move_but_stay_within_their_tolerance():
    moved = serving.output_difference("conv1d", "litert-int8")
    assert 0 < moved <= serving.QUANTIZED_TOLERANCE


@pytest.mark.parametrize("batch", [1, 3, 16])
def test_timed_call_answers_a_batch_and_counts_its_requests(batch):
    (mlp,) = (w for w in serving.WORKLOADS if w.name == "serving-mlp")
    timed = mlp.make_call("litert", batch)
    assert timed.units_per_call == batch
    assert np.asarray(timed()).shape == (batch, serving.CLASSES)


def test_a_converted_file_is_written_once_and_whole():
    path = serving.saved_file("mlp", "litert")
    written = path.stat().st_mtime_ns
    assert serving.saved_file("mlp", "litert") == path
    assert path.stat().st_mtime_ns == written
    assert [p.name for p in path.parent.iterdir() if p.name.startswith("tmp")] == []


@pytest.mark.parametrize("way", ["litert", "onnxruntime"])
@pytest.mark.processes
def test_a_cold_start_serves_without_tensorflow(way):
    start = serving_cold_start.cold_server("mlp", way)
    assert not start["imported_tensorflow"]
    assert start["import_s"] > 0 and start["load_s"] > 0 and start["first_answer_s"] > 0
    assert start["memory_bytes"] > 0 and start["file_bytes"] > 0


def test_a_way_without_its_package_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "onnxruntime" else real(name)
    )
    assert "onnxruntime" in serving._missing("onnxruntime")
    assert serving._missing("litert") is None


def test_request_latencies_time_each_request_and_give_their_tail(monkeypatch):
    latencies = serving.request_latencies("mlp", "onnxruntime", count=20)
    assert len(latencies) == 20 and min(latencies) > 0
    # A fake clock: 99 requests of 1 s and one of 101 s.
    ticks = iter([0, 1] * 99 + [0, 101])
    monkeypatch.setattr(serving.time, "perf_counter", lambda: next(ticks))
    percentiles = serving.latency_percentiles("mlp", "onnxruntime", count=100)
    assert percentiles["p50"] == 1 and percentiles["p99"] == pytest.approx(2, abs=1e-9)
    assert percentiles["slowest"] == 101 and percentiles["stalls"] == 1


def measured(label, seconds, size=1):
    return Measurement(label, "request", size, 1, 0.0, (seconds,) * 5, size=size)


#: Medians a request shaped like a build's: LiteRT fastest, ONNX Runtime next, TensorFlow's ways
#: around a millisecond, predict slowest.
MEDIANS = {
    "predict": 75e-3,
    "model-call": 2.4e-3,
    "predict-on-batch": 600e-6,
    "tf-function": 580e-6,
    "tf-function-xla": 560e-6,
    "saved-model": 700e-6,
    "litert": 5e-6,
    "litert-1-thread": 8e-6,
    "litert-int8": 4e-6,
    "onnxruntime": 14e-6,
    "openvino": 30e-6,
}


def served_measured(**changed):
    """Every model's ways at :data:`MEDIANS` (the MobileNet's scaled up), ``changed`` aside."""
    return {
        name: [
            measured(way, changed.get(way, MEDIANS[way] * scale)) for way in page.MODEL_WAYS[name]
        ]
        for name, scale in [(page.MLP.name, 1), (page.CONV1D.name, 10), (page.MOBILENET.name, 50)]
    }


def differences_measured(int8=1e-3):
    return {
        name: {way: int8 if way == "litert-int8" else 1e-7 for way in serving.WAYS}
        for name in serving.MODELS
    }


def tails_measured(onnx_stalls=0):
    def process(p50, stalls):
        return {
            "p50": p50,
            "p99": 2 * p50,
            "slowest": 30 * p50 if stalls else 3 * p50,
            "stalls": stalls,
        }

    return {
        way: [process(MEDIANS[way], onnx_stalls if way == "onnxruntime" else 0)]
        for way in page.TAIL_WAYS
    }


def cold_measured():
    def start(import_s, tensorflow):
        return {
            "import_s": import_s,
            "load_s": 1.0,
            "first_answer_s": 1.0,
            "memory_bytes": 1e8,
            "file_bytes": 2e6,
            "imported_tensorflow": tensorflow,
        }

    return page.ColdStarts(
        {way: [start(2.0 if way == "keras" else 1.0, way == "keras")] * 3 for way in page.COLD_WAYS}
    )


def batched_measured(onnx_s=1e-4):
    """The small model's batches: every way at 100 µs a request, ONNX Runtime at ``onnx_s`` at
    the largest batch."""
    largest = page.BATCHES[-1]
    return [
        measured(way, onnx_s if (way, b) == ("onnxruntime", largest) else 1e-4, b)
        for b in page.BATCHES
        for way in page.BATCH_WAYS
    ]


def short_answer(served, differences=None, batched=None, tails=None):
    checked = ClaimReport.of(page.REQUEST_CHECKS, served)
    close = page.answers_close(differences or differences_measured())
    caveats = page.onnx_caveats(batched or batched_measured(), tails or tails_measured())
    calls = [measured(way, 3e-6) for way in page.WAYS]
    return ShortAnswer(
        page.answer_sentences(served, calls, cold_measured()),
        page.advice(checked, close, caveats),
        page.impsy_scenario(served, checked),
    )


class SharingWorkers:
    """Three processes that answer :func:`~perfguide.pages.serving.output_differences`'s
    calls with the models each was given."""

    names = ("p0", "p1", "p2")

    def __init__(self):
        self.given = []

    def call_each(self, target, kwargs):
        self.given = [each["models"] for each in kwargs]
        return [{model: {"model-call": 0.0} for model in each["models"]} for each in kwargs]


def test_the_models_answers_are_checked_in_every_process_each_model_once():
    workers = SharingWorkers()
    differences = page.output_differences(workers)
    assert list(differences) == list(serving.MODELS)  # the table's columns in their order
    assert len(workers.given) == 3
    assert sorted(m for share in workers.given for m in share) == sorted(serving.MODELS)


def test_the_pages_checks_name_the_ways_each_model_is_served():
    assert page.REQUEST_CHECKS
    for check in page.REQUEST_CHECKS:
        assert set(check.labels) <= set(page.MODEL_WAYS[check.part])
    for close in (page.TINY_LITERT_CLOSE, page.SMALL_INT8_CLOSE, page.MOBILENET_ONNX_CLOSE):
        assert close.model in serving.MODELS and close.way in serving.WAYS
    assert set(page.TAIL_WAYS) | set(page.BATCH_WAYS) <= set(page.WAYS)


def test_the_claims_on_one_request_are_stated_for_their_model():
    report = ClaimReport.of(page.REQUEST_CHECKS, served_measured())
    statements = [claim.statement for claim in report.claims]
    assert statements[:2] == [
        "onnxruntime is faster than tf-function (mlp)",
        "litert is at least 29x faster than model-call (mlp)",
    ]
    assert report[page.MOBILENET_THREADS].statement.endswith("(mobilenet)")


def test_the_short_answer_advises_what_held_and_not_what_did_not():
    answer = short_answer(served_measured())
    advised = {r.advice: r.advised for r in answer.recommendations}
    assert advised == {
        "Serve a tiny model with LiteRT's interpreter, not Keras": True,
        "Never call predict once per request": True,
        "Give LiteRT every core for a convolutional model": True,
        "Try int8 weights in LiteRT for a model of a few large products": True,
        "Keep float weights in LiteRT for a model of many small convolutions": False,
        "Try ONNX Runtime beside a tf.function on a convolutional model": True,
    }
    assert "litert-int8 was fastest for the conv1d model" in answer.answer
    assert "Keras's predict took 75.0 ms a request" in answer.answer
    assert "importing Keras and TensorFlow was 50% of a Keras server's cold start" in answer.answer


def test_int8_weights_are_not_advised_where_their_answers_stray():
    answer = short_answer(served_measured(), differences_measured(int8=0.2))
    int8 = answer.recommendations[3]
    assert int8.advice.startswith("Try int8 weights") and not int8.advised
    assert int8.deciding.statement == "litert-int8's answers lie within 0.05 of Keras's (conv1d)"


def test_onnx_runtime_is_advised_with_what_was_measured_against_it():
    onnx = short_answer(served_measured(), batched=batched_measured(3e-4), tails=tails_measured(5))
    caveats = onnx.recommendations[-1].caveats
    assert caveats[0].startswith("at a batch of 256 of the small model, tf-function was 3.00x")
    assert caveats[1] == (
        "5 of its 300 requests of the small model stalled, against 0 of a tf.function's"
    )


def test_the_impsy_scenario_sets_their_figures_beside_the_tiny_models():
    checked = ClaimReport.of(page.REQUEST_CHECKS, served_measured())
    table = page.impsy_scenario(served_measured(), checked)
    assert table.rows == [
        ["Keras, per prediction", "4.96 ms", "2.40 ms"],
        ["LiteRT interpreter", "0.17 ms", "5.00 µs"],
        ["LiteRT's speed-up", "29.17x", "480x faster"],
    ]


def test_the_time_split_sets_each_request_against_its_call_and_the_peak():
    served = {page.MLP.name: [measured("litert", 5e-6), measured("predict", 75e-3)]}
    calls = [measured("litert", 3e-6)]
    machine = MachineLimits(1e10, 1e11, {})
    table = page.time_split(served, calls, {page.MLP.name: 100_000}, machine)
    assert table.caption == "Where a request's time goes (its arithmetic at the peak: mlp 1.00 µs)"
    assert table.rows == [
        ["mlp", "litert", "5.00 µs", "3.00 µs", "20.00%", "1.00 µs"],
        ["mlp", "predict", "75.0 ms", "not timed", "0.00%", "75.0 ms"],
    ]


def test_the_tail_table_and_the_stalls_read_every_process():
    tails = {"litert": [{"p50": 1e-4, "p99": 3e-4, "slowest": 2e-3, "stalls": 2}] * 2}
    table = page.tail_table(tails)
    assert table.rows == [
        ["litert", "100 µs – 100 µs", "300 µs – 300 µs", "3.00x", "2.00 ms – 2.00 ms", "4 of 600"]
    ]
    assert page.where_stalls_were(tails) == (
        "litert: 4 stalls in 2 of 2 processes; the slowest 2.00 ms, against that process's "
        "median of 100 µs"
    )
    assert page.where_stalls_were(tails_measured()).splitlines()[0] == "model-call: no stalls"


def test_a_batch_is_timed_whole():
    rows = page.batch_table(batched_measured()).shown.rows
    assert rows[0] == ["tf-function", "100 µs", "1.60 ms", "25.6 ms"]


def test_a_cold_start_is_set_out_step_by_step():
    cold = cold_measured()
    assert cold.table().rows[0] == [
        "keras",
        "2.00 s",
        "1.00 s",
        "1.00 s",
        "4.00 s",
        "100 MB",
        "2.00 MB",
        "imported",
    ]
    assert str(cold).splitlines()[0] == "keras: the import is 50% of the cold start"


def test_the_differences_table_has_a_row_a_way_and_a_column_a_model():
    table = page.differences_table(differences_measured()).shown
    assert table.header == ["way", *serving.MODELS]
    assert [row[0] for row in table.rows] == list(serving.WAYS)


def test_tensorflow_is_set_against_litert_per_request():
    op_table = OpTable(
        [
            OpTime("Conv2D", 10 * TRACED_CALLS, 1e-3 * TRACED_CALLS, 0, 0.5),
            OpTime("Mul", 4 * TRACED_CALLS, 1e-4 * TRACED_CALLS, 0, 0.5),
        ]
    )
    served = {page.MOBILENET.name: [measured("litert", 2e-4), measured("litert-int8", 6e-4)]}
    report = {
        "litert_ops": {"CONV_2D": 10, "ADD": 2},
        "litert_delegated": True,
        "int8_weight_ops": 4,
        "onnxruntime_providers": ["CPUExecutionProvider"],
    }
    reports = {page.MOBILENET.name: report}
    machine = MachineLimits(1e10, 1e12, {})
    lines = page.tensorflow_against_litert(
        op_table, served, {page.MOBILENET.name: 1e6}, machine, reports
    ).splitlines()
    assert lines == [
        "TensorFlow: 14 ops a request; 10 convolutions took 1.00 ms, 100 µs each, 1000x the "
        "100 ns their arithmetic needs on average at the peak",
        "LiteRT's whole request (200 µs) took the time of 2.0 of TensorFlow's convolutions",
        "LiteRT: 12 ops a request; TensorFlow ran 4 Mul and AddV2 ops a request, LiteRT 2 MUL "
        "and ADD (its converter folds batch normalization into the convolutions' weights)",
    ]
    assert page.int8_price_per_op(served, reports) == (
        "serving-mobilenet: 4 ops with int8 weights; int8 model 600 µs against 200 µs: "
        "100 µs an op more"
    )
    assert page.kernels(report) == (
        "LiteRT: 12 ops (10 CONV_2D, 2 ADD), handed to a delegate\n"
        "ONNX Runtime: CPUExecutionProvider"
    )


def test_the_tf_function_recipe_answers_as_the_timed_serving_function():
    recipe = run_recipe("serving", "Serve a tf.function with an input signature")
    x = serving.requests("mlp", 1)
    timed = serving.serving_function(recipe["model"])
    np.testing.assert_allclose(recipe["serve"](x), timed(x), rtol=1e-6)


def test_the_litert_recipe_answers_as_the_timed_litert_way(tmp_path):
    recipe = run_recipe("serving", "Convert to LiteRT and check the outputs")
    timed = serving.converted(recipe["model"], "litert", tmp_path)
    np.testing.assert_allclose(recipe["answer"], timed(recipe["x"]), rtol=1e-5, atol=1e-6)


def test_the_chapter_states_the_tolerances_the_workload_uses():
    from tests.recipes import ROOT

    text = " ".join((ROOT / "examples/serving/plot_serving.py").read_text().split())
    float_ways, int8 = f"{serving.FLOAT_TOLERANCE:g}", f"{serving.QUANTIZED_TOLERANCE:g}"
    assert f"float ways within {float_ways} of it" in text.replace("# ", "")
    assert f"this page's: {float_ways} for float weights, {int8} for int8" in text.replace("# ", "")
