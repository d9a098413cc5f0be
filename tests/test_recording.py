"""Recordings: a page's measurements taken once and handed back, in order, to render it again."""

import pickle
import runpy
from pathlib import Path

import pytest

from perfguide.processes import pool, recording
from perfguide.processes.fresh import ChildError
from perfguide.workloads import eager


@pytest.fixture
def page(tmp_path, monkeypatch):
    """The recording file of a page being built, recorded into (call ``replay`` to read it)."""
    path = tmp_path / "page.pickle"
    monkeypatch.setenv(recording.RECORDING_ENV, str(path))
    monkeypatch.delenv(recording.REPLAY_ENV, raising=False)
    yield path
    recording._open.pop(path, None)


def replay(monkeypatch, path):
    """Finish recording ``path`` and replay it from now on."""
    recording.finish(path)
    monkeypatch.setenv(recording.REPLAY_ENV, "1")


def failing(message):
    def measure():
        raise ChildError(message, usage=True)

    return measure


def test_outside_a_build_a_measurement_is_just_taken(monkeypatch):
    monkeypatch.delenv(recording.RECORDING_ENV, raising=False)
    assert recording.recorded("anything", lambda: 42) == 42


def test_a_replay_hands_back_what_was_measured_in_order_and_measures_nothing(page, monkeypatch):
    assert recording.recorded("first", lambda: [1.5, 2.5]) == [1.5, 2.5]
    assert recording.recorded("second", lambda: {"a": 1}) == {"a": 1}
    replay(monkeypatch, page)

    def measured():
        raise AssertionError("a replay measured")

    assert recording.recorded("first", measured) == [1.5, 2.5]
    assert recording.recorded("second", measured) == {"a": 1}
    recording.finish(page)


def test_a_failed_process_is_recorded_and_fails_again_on_replay(page, monkeypatch):
    with pytest.raises(ChildError, match="the cluster failed"):
        recording.recorded("cluster", failing("the cluster failed"))
    replay(monkeypatch, page)
    with pytest.raises(ChildError, match="the cluster failed") as raised:
        recording.recorded("cluster", lambda: "measured")
    assert raised.value.usage


def test_each_answer_is_on_disk_as_soon_as_it_is_taken(page):
    recording.recorded("first", lambda: 1)
    assert [answer.key for answer in pickle.loads(page.read_bytes())] == ["first"]


def test_a_measurement_inside_another_is_part_of_its_answer(page, monkeypatch):
    outer = recording.recorded("outer", lambda: recording.recorded("inner", lambda: 3) + 1)
    assert outer == 4
    replay(monkeypatch, page)
    assert recording.recorded("outer", lambda: 0) == 4


def test_a_page_that_asks_for_something_else_is_told_to_measure_again(page, monkeypatch):
    recording.recorded("run eager-add", lambda: 1)
    replay(monkeypatch, page)
    expected = "measurement 1 is not what was recorded \\(after 'run ': recorded 'eager-add', now"
    with pytest.raises(recording.RecordingError, match=expected):
        recording.recorded("run matmul", lambda: 1)


def test_a_long_key_is_shown_where_it_departs_from_the_recorded_one(page, monkeypatch):
    recording.recorded("run eager-add" + "," * 5000, lambda: 1)
    replay(monkeypatch, page)
    with pytest.raises(recording.RecordingError) as error:
        recording.recorded("run eager-add" + "," * 4000 + "!", lambda: 1)
    assert "now '!'" in str(error.value) and len(str(error.value)) < 300


def test_a_page_that_asks_for_more_or_less_than_was_recorded_is_stale(page, monkeypatch):
    recording.recorded("one", lambda: 1)
    recording.recorded("two", lambda: 2)
    replay(monkeypatch, page)
    recording.recorded("one", lambda: 1)
    with pytest.raises(recording.RecordingError, match="used 1 of its 2"):
        recording.finish(page)
    recording.recorded("one", lambda: 1)
    recording.recorded("two", lambda: 2)
    with pytest.raises(recording.RecordingError, match="more than its 2 recorded"):
        recording.recorded("three", lambda: 3)


def test_a_page_never_recorded_cannot_be_replayed(page, monkeypatch):
    monkeypatch.setenv(recording.REPLAY_ENV, "1")
    with pytest.raises(recording.RecordingError, match="nothing was recorded"):
        recording.recorded("one", lambda: 1)


def test_replay_takes_0_or_1(monkeypatch):
    monkeypatch.setenv(recording.REPLAY_ENV, "yes")
    with pytest.raises(ValueError, match="PERFGUIDE_REPLAY='yes'"):
        recording.replaying()


def test_a_change_to_the_code_that_measures_makes_a_recording_stale(tmp_path):
    for folder in recording.MEASURING:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.py").write_text("SIZE = 64\n")
    (tmp_path / "pages").mkdir()
    before = recording.fingerprint(tmp_path)
    (tmp_path / "pages" / "a.py").write_text("PROSE = 'a page may change'\n")
    assert recording.fingerprint(tmp_path) == before
    (tmp_path / "workloads" / "a.py").write_text("SIZE = 16\n")
    assert recording.fingerprint(tmp_path) != before


def test_a_recording_replays_only_under_the_same_code_and_kind():
    about = {"kind": "full", "measuring_code": recording.fingerprint()}
    assert recording.why_not_replayable(about, "full") is None
    assert "full build's, and this build is a quick one" in recording.why_not_replayable(
        about, "quick"
    )
    changed = {**about, "measuring_code": "0" * 16}
    assert "changed since it was recorded" in recording.why_not_replayable(changed, "full")


def test_a_complete_recording_says_what_it_is(tmp_path):
    assert recording.complete(tmp_path) is None
    recording.mark_complete(tmp_path, {"kind": "quick", "commit": "abc1234"})
    assert recording.complete(tmp_path) == {"kind": "quick", "commit": "abc1234"}


@pytest.mark.processes
def test_workers_replay_what_their_processes_answered_without_starting_any(
    page, monkeypatch, tmp_path
):
    logdir = tmp_path / "trace"
    with pool.Workers(1) as workers:
        environment = workers.environment
        measured = workers.run("eager-add", ["numpy"], size=1000, quick=True)
        trace = workers.trace(0, eager.ADD, "eager", 1000, str(logdir))
        cores = workers.call("perfguide.measure.cpu:usable_cores")
        each = workers.call_each("perfguide.measure.cpu:usable_cores", [{}])
        names = workers.names
    replay(monkeypatch, page)
    Path(trace).unlink()

    def no_process(*args):
        raise AssertionError("a replay started a process")

    monkeypatch.setattr(pool, "_Worker", no_process)
    with pool.Workers(1) as replayed:
        assert replayed.environment == environment
        assert replayed.run("eager-add", ["numpy"], size=1000, quick=True) == measured
        assert replayed.trace(0, eager.ADD, "eager", 1000, str(logdir)) == trace
        assert replayed.call("perfguide.measure.cpu:usable_cores") == cores
        assert replayed.call_each("perfguide.measure.cpu:usable_cores", [{}]) == each
        assert replayed.names == names
    assert Path(trace).is_file()
    recording.finish(page)  # every answer handed back, none left over


def test_each_answer_keeps_the_seconds_it_took(page, monkeypatch):
    clock = iter([10.0, 12.5])
    monkeypatch.setattr(recording.time, "monotonic", lambda: next(clock))
    recording.recorded("slow", lambda: 1)
    (answer,) = pickle.loads(page.read_bytes())
    assert answer.seconds == 2.5


def test_the_minutes_tool_lists_pages_and_their_answers_slowest_first(tmp_path, capsys):
    tool = runpy.run_path(str(Path(__file__).parents[1] / "tools" / "build_minutes.py"))
    answers = {
        "quick": [recording.Answer("run a", seconds=2.0)],
        "slow": [recording.Answer("run b", seconds=1.0), recording.Answer("run c", seconds=9.0)],
    }
    for page, recorded in answers.items():
        (tmp_path / f"{page}.pickle").write_bytes(pickle.dumps(recorded))
    assert tool["main"]([str(tmp_path), "--top", "1"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        ["12.0", "s", "measuring", "in", "2", "pages"],
        ["10.0", "s", "slow"],
        ["9.00", "s", "run", "c"],
        ["2.00", "s", "quick"],
        ["2.00", "s", "run", "a"],
    ]


def test_the_minutes_tool_refuses_a_folder_without_recordings_in_one_line(tmp_path, capsys):
    tool = runpy.run_path(str(Path(__file__).parents[1] / "tools" / "build_minutes.py"))
    with pytest.raises(SystemExit) as exit_:
        tool["main"]([str(tmp_path)])
    assert exit_.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("build-minutes: error:") and "no page's recording" in line
