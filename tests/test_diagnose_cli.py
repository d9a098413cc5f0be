"""``perfguide diagnose`` on the command line: its bad input, and a diagnosis printed and written
to files (in a fresh worker process)."""

import json
from pathlib import Path

import pytest

from perfguide import workloads
from perfguide.cli import main

SLOW = Path(workloads.__file__).with_name("diagnose.py")  # the diagnose chapter's functions


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["diagnose", "nowhere.py:f"], "no such file nowhere.py"),
        (["diagnose", f"{SLOW}:scale", "--input", "float32[x]"], "each dimension must be"),
        (["diagnose", f"{SLOW}:scale", "--json", "/no/such/dir/out.json"], "does not exist"),
        # These two get as far as a worker process, which finds the input wrong.
        pytest.param(
            ["diagnose", f"{SLOW}:nothing", "--processes", "1"],
            "has no 'nothing'",
            marks=pytest.mark.processes,
        ),
        pytest.param(
            ["diagnose", f"{SLOW}:product", "--input", "float32[2,3]", "--processes", "1"],
            "raised",
            marks=pytest.mark.processes,
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, argv, fragment):
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.processes
def test_the_command_prints_a_diagnosis_and_writes_its_files(capsys, tmp_path):
    json_path, html_path = tmp_path / "d.json", tmp_path / "d.html"
    argv = ["diagnose", f"{SLOW}:row_norms", "--input", "float32[32,16]", "--quick"]
    argv += ["--processes", "1", "--json", str(json_path), "--html", str(html_path)]
    code = main(argv + ["--trace", str(tmp_path / "trace")])
    out, _ = capsys.readouterr()
    assert code == 0
    (trace,) = (tmp_path / "trace").glob("plugins/profile/*/*.xplane.pb")
    assert trace.stat().st_size > 1000 and f"Trace: a profile of the graph calls in {trace}" in out
    assert out.startswith("Short answer: row_norms(float32[32,16]) is ")
    for part in ("Timed in 1 fresh process,", "Findings:", "- Ops per call", "Recommendations"):
        assert part in out
    assert json.loads(json_path.read_text())["diagnosis"]["target"] == "row_norms(float32[32,16])"
    assert html_path.read_text().startswith("<!DOCTYPE html>")
    assert main(["show", str(json_path)]) == 0
    assert "diagnose at size 1 on cpu:" in capsys.readouterr().out
