"""Serving chapter: every way answers as Keras does, converted files are written whole, and a
cold start is timed in a process that had not imported TensorFlow."""

import importlib.util

import numpy as np
import pytest

from perfguide.processes import cold_start
from perfguide.workloads import serving

pytestmark = pytest.mark.skipif(
    bool(serving.UNAVAILABLE), reason=f"serving packages missing: {serving.UNAVAILABLE}"
)
SMALL_MODELS = ("identity", "mlp", "conv1d")


@pytest.mark.parametrize("way", list(serving.WAYS))
@pytest.mark.parametrize("name", SMALL_MODELS)
def test_every_way_answers_as_keras_does(name, way):
    assert serving.output_difference(name, way) <= serving.tolerance(way)


@pytest.mark.parametrize("way", ["tf-function", "litert", "litert-int8", "onnxruntime"])
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
    start = cold_start.cold_server("mlp", way)
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
