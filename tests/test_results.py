import json
import os

import pytest

from perfguide.measure.measurement import Measurement
from perfguide.report.publishing import results
from perfguide.report.publishing.chapters import chapter
from perfguide.report.verdicts.claims import Claim, per_process
from perfguide.report.verdicts.compare_files import Source

MEASUREMENT = Measurement("numpy", "iteration", 100, 3, 0.01, (1e-5, 2e-5, 3e-5, 4e-5, 5e-5))


def test_saved_file_has_the_documented_shape(tmp_path):
    path = tmp_path / "out.json"
    results.save(path, {"tensorflow": "2.21.0"}, [MEASUREMENT])
    document = json.loads(path.read_text())
    assert document["environment"] == {"tensorflow": "2.21.0"}
    (record,) = document["measurements"]
    for key in ("workload", "variant", "unit", "median_s", "iqr_s", "first_call_s", "noisy"):
        assert key in record
    assert record["median_s"] == 3e-5
    assert results.load_measurements(path) == [MEASUREMENT]


def test_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "out.json"
    path.write_text("old")

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        results.save(path, {}, [MEASUREMENT])
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cannot read results file"),
        ("{not json", "is not a JSON results file"),
        ('{"measurements": []}', "lacks the 'environment' and 'measurements'"),
        ('{"environment": {}, "measurements": [{"variant": "x"}]}', "without 'workload'"),
        ('{"environment": {}, "measurements": [1]}', "not an object"),
    ],
)
def test_bad_files_raise_one_line_reasons(tmp_path, content, reason):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(results.ResultsError, match=reason) as error:
        results.load_measurements(path)
    assert "\n" not in str(error.value)


def test_measurements_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(results.MEASUREMENTS_DIR_ENV, str(tmp_path))
    assert results.measurements_dir() == tmp_path


def test_a_chapter_publishes_the_ratios_its_claims_were_judged_on_in_each_process(
    monkeypatch, tmp_path
):
    monkeypatch.setenv(results.MEASUREMENTS_DIR_ENV, str(tmp_path))
    judged = per_process("x misleads", [6.0, 8.0, 7.0], 5, "too slow")
    timed = Claim("a is faster than b", True, "on times: nothing of its own to publish")
    results.publish("timing", {"cpu_model": "CPU X"}, [MEASUREMENT], [judged, timed])
    assert Source.load(tmp_path).per_process == {"x misleads": [6.0, 8.0, 7.0]}
    results.publish("timing", {"cpu_model": "CPU X"}, [MEASUREMENT])
    assert Source.load(tmp_path).per_process == {}


def test_a_chapter_publishes_what_it_measured_besides_times_beside_them(monkeypatch, tmp_path):
    monkeypatch.setenv(results.MEASUREMENTS_DIR_ENV, str(tmp_path))
    judged = per_process("x misleads", [6.0, 8.0, 7.0], 5, "too slow")
    peaks = {"jax": {"resident": [1, 2, 3]}}
    results.publish("timing", {}, [MEASUREMENT], [judged], extra={"step_peaks": peaks})
    written = json.loads((tmp_path / chapter("timing").results).read_text())
    assert written["step_peaks"] == peaks
    assert written[results.PER_PROCESS] == {"x misleads": [6.0, 8.0, 7.0]}


def test_malformed_numbers_are_caught_before_use(tmp_path):
    path = tmp_path / "out.json"
    results.save(path, {}, [MEASUREMENT])
    malformed = [
        ("block_s", [1e-5]),
        ("block_s", ["fast", 1.0]),
        ("first_call_s", "0"),
        ("cores_busy", "two"),
        ("cores_busy", -1.0),
    ]
    for key, value in malformed:
        document = json.loads(path.read_text())
        document["measurements"][0][key] = value
        path.write_text(json.dumps(document))
        with pytest.raises(results.ResultsError, match="has a measurement whose"):
            results.load_measurements(path)


def test_written_file_is_readable_by_others_and_no_temporary_is_left(tmp_path):
    old_umask = os.umask(0o022)
    try:
        results.save(tmp_path / "out.json", {}, [MEASUREMENT])
    finally:
        os.umask(old_umask)
    assert (tmp_path / "out.json").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_environment_comes_back_with_the_measurements_and_cores_busy_is_optional(tmp_path):
    path = tmp_path / "out.json"
    results.save(path, {"onednn_enabled": False}, [MEASUREMENT])
    document = json.loads(path.read_text())
    del document["measurements"][0]["cores_busy"]  # as in files written before it was recorded
    path.write_text(json.dumps(document))
    environment, measurements = results.load_results(path)
    assert environment == {"onednn_enabled": False} and measurements == [MEASUREMENT]


def test_a_measurement_taken_twice_is_refused_and_nothing_written(tmp_path):
    path = tmp_path / "out.json"
    with pytest.raises(ValueError, match="measured twice, so not saved: .*numpy"):
        results.save(path, {}, [MEASUREMENT, MEASUREMENT])
    assert not path.exists()


def test_a_quick_runs_chapter_says_first_that_its_numbers_are_rough():
    record = {"cpu_model": "CPU X", "usable_cores": 2, "tensorflow": "2.21.0",
              "keras": "3.15.1", "numpy": "2.4.0"}  # fmt: skip
    assert results.QUICK_LINE not in results.where_measured(record)
    assert results.where_measured(record | {"quick": True}).endswith(results.QUICK_LINE)
