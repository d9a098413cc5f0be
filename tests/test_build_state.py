"""What a docs build records between its chapters: what its process and children hold, and the
probe's times, in one file written atomically, shown as two tables."""

import json
import math
import socket
import subprocess
import sys

from perfguide.measure.calibration import Calibration
from perfguide.measure.stats import Spread
from perfguide.processes import build_state
from perfguide.report.format import format_percent
from perfguide.report.publishing.chapters import chapter


def test_alive_sees_a_child_process_and_a_port_this_process_holds():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    server = socket.create_server(("127.0.0.1", 0))
    try:
        held = build_state.alive(window_s=0.05)
        assert any(entry.endswith(f"({child.pid})") for entry in held["children"])
        assert server.getsockname()[1] in held["ports"]
        assert held["threads"] >= 2 and held["rss_bytes"] > 0 and held["busy_cores"] >= 0
        # What the build fails on, after a chapter: both named.
        left = build_state.left_behind({"alive": held})
        assert f"({child.pid})" in left and str(server.getsockname()[1]) in left
    finally:
        server.close()
        child.kill()
        child.wait()
    after = build_state.alive(window_s=0.01)["children"]
    assert not any(entry.endswith(f"({child.pid})") for entry in after)


def test_records_add_up_in_one_file(tmp_path):
    path = tmp_path / "state.json"
    assert build_state.load(path) == []
    build_state.record(path, "eager", "before", probed={"eager-add eager": 20e-6})
    build_state.record(path, "eager", "after")
    first, second = build_state.load(path)
    assert (first["chapter"], first["when"], first["probe"]) == (
        "eager",
        "before",
        {"eager-add eager": 20e-6},
    )
    assert second["when"] == "after" and second["probe"] is None
    assert second["at"] >= first["at"]
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temporary file left


def entry(chapter, when, probe=None, children=(), busy=0.01, at=0.0, steal_s=0.0):
    held = {
        "children": list(children),
        "threads": 40,
        "ports": [],
        "rss_bytes": 2**30,
        "busy_cores": busy,
    }
    return {
        "chapter": chapter,
        "when": when,
        "at": at,
        "steal_s": steal_s,
        "cores": 2,
        "alive": held,
        "probe": probe,
    }


RECORDS = [
    entry("eager", "before", {"eager-add eager": 20e-6, "matmul tf-function": 1e-3}),
    entry("eager", "after", children=["python3 (41)"], busy=0.93, at=100.0, steal_s=4.0),
    entry(
        "memory",
        "after",
        {"eager-add eager": 24e-6, "matmul tf-function": 1e-3},
        at=200.0,
        steal_s=4.0,
    ),
]


EAGER, MEMORY = (chapter(topic).title for topic in ("eager", "memory"))


def test_the_probe_table_sets_the_last_probe_against_the_first():
    table = build_state.probe_table(RECORDS)
    assert table.header == ["when", "eager-add eager", "matmul tf-function"]
    assert table.rows == [
        [f"before {EAGER}", "20.0 µs", "1.00 ms"],
        [f"after {MEMORY}", "24.0 µs", "1.00 ms"],
        ["last against first", "1.20x slower", "as fast"],
    ]


def test_the_alive_table_names_what_a_chapter_left_behind():
    rows = build_state.alive_table(RECORDS).rows
    assert rows[0][:2] == [f"before {EAGER}", "none"]
    assert rows[1][:2] == [f"after {EAGER}", "python3 (41)"]
    assert rows[1][-2] == "0.93"


def test_the_alive_table_says_what_share_of_the_cores_the_host_took_between_rows():
    # 4 s of steal over 100 s on 2 cores: 2 %; none over the next 100 s.
    assert [row[-1] for row in build_state.alive_table(RECORDS).rows] == ["", "2.00 %", "0 %"]
    assert build_state.probe_table([entry("eager", "after")]).rows == []


def test_a_calibrated_host_adds_where_the_build_stood_and_the_drift_it_added():
    # The calibration's builds timed the probe at 20 µs and 1 ms, moving 10 %; this build's
    # first probe ran as fast, its last 1.2x slower on eager-add (the median of the two: 1.095x).
    fitted = Calibration(
        Spread(0.04, 5, 0.1), Spread(0.03, 8, 0.05), "CPU X", "runs",
        host_probe={"eager-add eager": 20e-6, "matmul tf-function": 1e-3}, host_sd=0.05,
    )  # fmt: skip
    table = build_state.probe_table(RECORDS, fitted)
    shift = (math.log(1.2) + 0) / 2
    added = format_percent(math.sqrt(shift**2 - 0.05**2))
    assert table.header[-2:] == ["host against the calibrated one", "times' drift added"]
    assert [row[-2:] for row in table.rows] == [
        ["as fast", "0 %"],
        ["1.10x slower", added],
        ["", ""],
    ]
    assert len(build_state.probe_table(RECORDS).header) == 3  # no calibrated host, no such columns


def test_a_state_file_is_told_apart_and_its_probes_read(tmp_path):
    path = tmp_path / "build-state.json"
    path.write_text(json.dumps(RECORDS))
    assert build_state.holds_state(path)
    assert not build_state.holds_state(tmp_path / "missing.json")
    (tmp_path / "results.json").write_text(json.dumps({"measurements": []}))
    assert not build_state.holds_state(tmp_path / "results.json")
    assert build_state.probes(RECORDS) == [RECORDS[0]["probe"], RECORDS[2]["probe"]]
