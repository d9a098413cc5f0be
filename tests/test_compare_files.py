"""Results files side by side: matching rows, verdicts on processes of known distributions, and
sources that cannot be read."""

import json
import re

import numpy as np
import pytest

from perfguide.measure.measurement import Measurement
from perfguide.report.publishing import results
from perfguide.report.verdicts.compare_files import (
    COMPARE_WITH_ENV,
    FASTER,
    MISSING,
    ONE_PROCESS,
    SAME,
    SLOWER,
    SideBySide,
    Source,
    by_chapter,
    compare_with,
    verdicts,
)

ENV = {"cpu_model": "Test CPU", "usable_cores": 2, "tensorflow": "2.21.0", "gpus": []}


def blocks(mean, spread, n=10, seed=0):
    """``n`` processes' times drawn around ``mean`` (log-normal, ``spread`` as a share of it)."""
    rng = np.random.default_rng(seed)
    return tuple(float(t) for t in mean * np.exp(spread * rng.standard_normal(n)))


def m(label, process_s, workload="w", size=10, device="cpu"):
    """A measurement with one block in each of ``len(process_s)`` processes."""
    per_process = (1,) * len(process_s)
    return Measurement(
        label, "call", 1, 1, 0.0, process_s, workload, size, device, blocks_per_process=per_process
    )


@pytest.mark.parametrize(
    ("other_mean", "spread", "expected"),
    [
        (2.0, 0.02, SLOWER),  # twice the time, tight blocks
        (0.5, 0.02, FASTER),
        (1.0, 0.02, SAME),  # the same distribution
        (1.05, 0.001, SAME),  # surely apart, but under the 1.1x minimum effect
        (1.5, 0.8, SAME),  # a large effect the processes' spread leaves unproven
    ],
)
def test_verdicts_on_processes_of_known_distributions(other_mean, spread, expected):
    base = m("x", blocks(1.0, spread, seed=1))
    other = m("x", blocks(other_mean, spread, seed=2))
    assert verdicts([(base, other)]) == [expected]


def test_many_rows_of_the_same_thing_call_none_apart():
    # An A/A comparison of 200 rows: without a correction over rows, about 5 % would be called.
    rows = [
        (m("x", blocks(1, 0.1, 3, 2 * i)), m("x", blocks(1, 0.1, 3, 2 * i + 1))) for i in range(200)
    ]
    assert set(verdicts(rows)) == {SAME}


def test_a_row_timed_in_one_process_cannot_be_judged():
    one = Measurement("x", "call", 1, 1, 0.0, (1.0, 1.1, 0.9, 1.0, 1.0))
    assert verdicts([(one, m("x", blocks(2, 0.01)))]) == [ONE_PROCESS]


def test_rows_match_by_workload_variant_size_and_device_and_missing_rows_are_listed():
    a = Source("a", ENV, [m("numpy", blocks(1, 0.01)), m("eager", blocks(2, 0.01))])
    b = Source("b", ENV, [m("numpy", blocks(1, 0.01)), m("eager", blocks(2, 0.01), size=20)])
    table = SideBySide([a, b])
    assert [row[:3] for row in table.table_rows()] == [
        ["w", "numpy", "10"],
        ["w", "eager", "10"],
        ["w", "eager", "20"],
    ]
    assert [v for vs in table.verdicts().values() for v in vs] == [SAME, MISSING, MISSING]
    text = str(table)
    assert "A lacks 1 of 3 rows (w eager 20 cpu)" in text
    assert "B lacks 1 of 3 rows (w eager 10 cpu)" in text


def test_devices_are_matched_unless_told_otherwise():
    cpu = Source("cpu", ENV, [m("numpy", blocks(1, 0.01))])
    gpu_env = ENV | {"gpus": ["Test GPU"]}
    gpu = Source("gpu", gpu_env, [m("numpy", blocks(0.1, 0.01), device="gpu")])
    assert len(SideBySide([cpu, gpu]).rows) == 2
    across = SideBySide([cpu, gpu], match_device=False)
    assert list(across.verdicts().values()) == [[FASTER]]
    assert "device" not in across.header()
    assert "B: gpu: Test CPU (2 usable cores), GPU Test GPU, TensorFlow 2.21.0, gpu" in str(across)


def test_the_legend_names_the_libraries_and_the_settings_that_made_a_file_differ():
    env = ENV | {
        "keras": "3.15.1",
        "numpy": "2.0.2",
        "process_settings": {"TF_NUM_INTRAOP_THREADS": "1", "TF_ENABLE_ONEDNN_OPTS": "unset"},
    }
    source = Source("one-thread", env, [m("numpy", blocks(1, 0.01))])
    assert source.describe() == (
        "Test CPU (2 usable cores), TensorFlow 2.21.0 (Keras 3.15.1, NumPy 2.0.2), "
        "TF_NUM_INTRAOP_THREADS=1, cpu"
    )


def test_three_files_are_each_judged_against_the_first():
    sources = [
        Source(name, ENV, [m("x", blocks(t, 0.01))]) for name, t in [("a", 1), ("b", 2), ("c", 1)]
    ]
    table = SideBySide(sources)
    assert table.header()[-6:] == ["B", "B vs A", "B verdict", "C", "C vs A", "C verdict"]
    assert list(table.verdicts().values()) == [[SLOWER, SAME]]
    assert "2.00x slower" in table.table_rows()[0]


def test_one_file_is_not_a_comparison():
    with pytest.raises(ValueError, match="at least two"):
        SideBySide([Source("a", ENV, [m("x", blocks(1, 0.01))])])


def test_a_directory_of_results_files_is_one_source(tmp_path):
    results.save(tmp_path / "one.json", ENV, [m("x", blocks(1, 0.01))])
    results.save(tmp_path / "two.json", ENV, [m("y", blocks(1, 0.01), workload="v")])
    source = Source.load(tmp_path)
    assert [(x.workload, x.label) for x in source.measurements] == [("w", "x"), ("v", "y")]
    assert source.environment == ENV and source.growth == {}


def test_a_docs_builds_memory_rates_come_with_its_times(tmp_path):
    from perfguide.measure.memory import Experiment, Growth
    from perfguide.report.publishing import memory_results

    results.save(tmp_path / "one.json", ENV, [m("x", blocks(1, 0.01))])
    grown = Growth("predict", (20e3, 21e3), (1e6, 1e6))
    experiment = Experiment({"predict": grown}, {"predict": None}, {"predict": 0.0}, [], {})
    memory_results.save(tmp_path / "memory.json", ENV, {"one shape": experiment})
    source = Source.load(tmp_path)
    assert [x.label for x in source.measurements] == ["x"]
    assert source.growth == {"one shape": {"predict": grown}}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "holds no results files"),  # an empty directory
        ("not json", "is not a JSON results file"),
        (json.dumps({"environment": {}, "measurements": []}), "holds no measurements"),
    ],
)
def test_sources_that_are_not_results_say_why(tmp_path, content, message):
    path = tmp_path
    if content is not None:
        path = tmp_path / "bad.json"
        path.write_text(content)
    with pytest.raises(results.ResultsError, match=message):
        Source.load(path)


def test_html_names_each_file_in_its_caption():
    sources = [Source(n, ENV, [m("x", blocks(1, 0.01))]) for n in ("a.json", "b.json")]
    html = SideBySide(sources)._repr_html_()
    assert "<caption>A: a.json: Test CPU" in html and "B verdict" in html
    # Names and verdicts read from the left; sizes, times and ratios line up on the right.
    text = re.findall(r'<t[dh] class="perfguide-text">([^<]*)<', html)
    assert text == ["workload", "variant", "device", "B verdict", "w", "x", "cpu", SAME]


def test_the_page_sets_each_chapter_beside_the_same_workloads_elsewhere(tmp_path):
    own = tmp_path / "measurements"
    results.save(own / "eager.json", ENV, [m("x", blocks(1, 0.01))])
    results.save(own / "vectorization.json", ENV, [m("y", blocks(1, 0.01), workload="v")])
    gpu = Source("gpu.json", ENV, [m("x", blocks(0.1, 0.01), device="gpu")])
    tables = by_chapter(own, [gpu])
    assert list(tables) == ["eager", "vectorization"]
    # One device per source: the CPU row and the GPU row are the same row.
    assert list(tables["eager"].verdicts().values()) == [[FASTER]]
    assert tables["vectorization"].table_rows(matched_only=True) == []


def test_a_source_holding_a_row_twice_is_refused():
    twice = Source("both.json", ENV, [m("x", blocks(1, 0.01)), m("x", blocks(1, 0.01), "w")])
    with pytest.raises(ValueError, match="holds w x 10 twice"):
        SideBySide([twice, twice], match_device=False)


@pytest.mark.parametrize(
    ("value", "paths"), [("", []), (" a.json, ,dir/ ", ["a.json", "dir/"]), ("b.json", ["b.json"])]
)
def test_files_to_compare_with_come_from_the_environment(monkeypatch, value, paths):
    monkeypatch.setenv(COMPARE_WITH_ENV, value)
    assert compare_with() == paths


def test_rows_that_all_moved_together_are_judged_against_their_shift_as_well():
    # Every row 1.3x slower (a host that slowed down), one row 2.6x: only that one moved beyond.
    factors = [1.3] * 7 + [2.6]
    base = [m(f"v{i}", blocks(1, 0.02, 5, seed=i)) for i in range(len(factors))]
    other = [m(f"v{i}", blocks(factor, 0.02, 5, seed=100 + i)) for i, factor in enumerate(factors)]
    table = SideBySide([Source("a", ENV, base), Source("b", ENV, other)])
    (shift,) = table.shifts
    assert shift.clear and shift.ratio == pytest.approx(1.3, rel=0.05)
    assert table.header()[-2:] == ["B verdict", "B beyond shift"]
    assert list(table.verdicts().values()) == [[SLOWER, SAME]] * 7 + [[SLOWER, SLOWER]]
    assert "B vs A, the median of 8 rows: 1.30x slower" in str(table)


def test_rows_that_did_not_move_together_get_no_second_verdict():
    factors = [0.8, 1.25, 1.0, 0.8, 1.25, 1.0]
    base = [m(f"v{i}", blocks(1, 0.02, 5, seed=i)) for i in range(len(factors))]
    other = [m(f"v{i}", blocks(f, 0.02, 5, seed=50 + i)) for i, f in enumerate(factors)]
    table = SideBySide([Source("a", ENV, base), Source("b", ENV, other)])
    assert not table.shifts[0].clear
    assert table.header()[-1] == "B verdict"
    assert "the median of 6 rows" in str(table) and "last column" not in str(table)


def test_reruns_count_false_alarms_and_medians_inside_the_first_files_intervals():
    same = [m(f"v{i}", blocks(1.0, 0.02, 3, seed=i)) for i in range(4)]
    again = [m(f"v{i}", blocks(1.0, 0.02, 3, seed=10 + i)) for i in range(3)]
    moved = m("v3", blocks(3.0, 0.02, 3, seed=20))  # one row three times slower
    table = SideBySide([Source("a", ENV, same), Source("b", ENV, [*again, moved])])
    (line,) = table.rerun_lines()
    assert line.startswith("B as a rerun of A: 1 of 4 rows called faster or slower (25% false")
    assert "3 of 4 medians inside A's 95 % rerun intervals (75%; their median half-width" in line
    half = int(line.split("median half-width ")[1].split("%")[0])
    assert 5 <= half <= 60  # a share of the median, not a fraction or seconds
