import dataclasses
import time

import pytest

from perfguide.measure import environment, runner
from perfguide.measure.timer import Timed
from perfguide.workloads import WORKLOADS
from perfguide.workloads.base import Workload

WORKLOAD = WORKLOADS["linear-regression"]


def test_run_labels_measurements_with_workload_size_and_device():
    (m,) = runner.run(WORKLOAD, ["numpy"], size=100, quick=True)
    assert (m.workload, m.label, m.size, m.device, m.unit) == (
        "linear-regression",
        "numpy",
        100,
        "cpu",
        "iteration",
    )
    assert len(m.block_s) == runner.QUICK["blocks"]


@pytest.mark.parametrize(
    ("variants", "size", "message"),
    [(["nope"], 10, "unknown variant 'nope'"), (["numpy"], 0, "points must be a positive")],
)
def test_bad_choices_fail_before_measuring(variants, size, message):
    with pytest.raises(ValueError, match=message):
        runner.run(WORKLOAD, variants, size=size)


def test_device_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(runner.DEVICE_ENV, raising=False)
    assert runner.default_device() == "cpu"
    monkeypatch.setenv(runner.DEVICE_ENV, "tpu")
    with pytest.raises(runner.DeviceError, match="not one of cpu, gpu"):
        runner.default_device()


@pytest.mark.skipif(bool(environment.gpu_names()), reason="this machine has a GPU")
def test_absent_gpu_is_a_device_error():
    with pytest.raises(runner.DeviceError, match="sees none"), runner.device_scope("gpu"):
        pass


def _logged_workload(log: list[tuple[str, str]]) -> Workload:
    """A workload timed alone whose variants log when they are made and called, and take a
    millisecond a call (real time: the harness's calibration needs calls that take time)."""

    def make_call(variant: str, size: int) -> Timed:
        log.append(("make", variant))

        def call() -> None:
            log.append(("call", variant))
            time.sleep(0.001)

        return Timed(call)

    return Workload(
        name="logged",
        question="?",
        unit="call",
        size_name="size",
        default_size=1,
        baseline="a",
        variants=("a", "b"),
        make_call=make_call,
        timed_alone=True,
    )


def test_variants_timed_alone_are_made_only_after_the_previous_one_is_done():
    log: list[tuple[str, str]] = []
    measured = runner.run(_logged_workload(log), quick=True)
    assert [m.label for m in measured] == ["a", "b"]
    b_made = log.index(("make", "b"))
    assert ("call", "a") not in log[b_made:]
    assert all(entry == ("call", "a") for entry in log[1:b_made])


def test_variants_timed_alone_have_no_peak_in_turns():
    with pytest.raises(ValueError, match="one at a time"):
        runner.run(_logged_workload([]), quick=True, peak=True)


def test_a_lockstep_workload_makes_the_same_calls_however_fast_they_are():
    # A cluster's processes must all make the same calls: one a block, whatever a call takes.
    log: list[tuple[str, str]] = []
    workload = dataclasses.replace(_logged_workload(log), timed_alone=False, lockstep=True)
    measured = runner.run(workload, blocks=5)
    assert [m.calls_per_block for m in measured] == [1, 1]
    # Each variant: its first call, one calibration call, then five blocks of one call.
    assert [log.count(("call", v)) for v in ("a", "b")] == [7, 7]


def test_calls_made_ahead_are_the_ones_timed_and_nothing_is_called_while_making_them():
    log: list[tuple[str, str]] = []
    workload = dataclasses.replace(_logged_workload(log), timed_alone=False)
    made = runner.make_calls(workload)
    assert log == [("make", "a"), ("make", "b")]
    measured = runner.run(workload, quick=True, made=made)
    assert [m.label for m in measured] == ["a", "b"]
    assert log.count(("make", "a")) == log.count(("make", "b")) == 1


def test_calls_made_for_other_variants_or_for_each_run_alone_are_refused():
    log: list[tuple[str, str]] = []
    workload = dataclasses.replace(_logged_workload(log), timed_alone=False)
    with pytest.raises(ValueError, match=r"made for \['a', 'b'\], not for \['a'\]"):
        runner.run(workload, ["a"], quick=True, made=runner.make_calls(workload))
    with pytest.raises(ValueError, match="only before its run"):
        runner.run(_logged_workload(log), quick=True, made={"a": None, "b": None})
