"""What a docs build records between its chapters: what its process and children hold, and the
probe's times, in one file written atomically, shown as two tables."""

import socket
import subprocess
import sys

from perfguide.processes import build_state
from perfguide.report.chapters import chapter


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
    assert table.header == ["probe", f"before {EAGER}", f"after {MEMORY}", "last against first"]
    assert table.rows == [
        ["eager-add eager", "20.0 µs", "24.0 µs", "1.20x slower"],
        ["matmul tf-function", "1.00 ms", "1.00 ms", "as fast"],
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
