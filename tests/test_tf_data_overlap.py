"""Overlap of a pipeline and a step: the bounds, the claim per process, and recorded passes."""

import pytest

from perfguide.measure.measurement import Measurement
from perfguide.workloads.tf_data_overlap import Overlap, cpu_seconds, typical


def measured(label, per_process, cores=1.5):
    """A measurement timed by three processes, five blocks each at the given medians."""
    blocks = tuple(t for t in per_process for _ in range(5))
    return Measurement(
        label, "batch", 1, 1, 0.0, blocks, cores_busy=cores, blocks_per_process=(5, 5, 5)
    )


def test_bounds_of_overlap_come_from_the_two_alone():
    o = Overlap(
        measured("pipeline", [3, 3, 3], 2.0),
        measured("step", [5, 5, 5], 1.6),
        measured("together", [7, 7, 7]),
        cores=2,
    )
    assert (o.one_after_other, o.perfect, o.floor) == (8, 5, 7.0)
    rows = o.table("caption").rows
    assert [row[0] for row in rows[:3]] == ["pipeline", "step", "together"]
    assert len(rows) == 6


@pytest.mark.parametrize(
    ("together", "verdict"),
    [
        ([8.0, 8.2, 8.4], "HELD"),
        ([5.0, 5.5, 6.0], "DID NOT HOLD"),
        ([5.0, 8.2, 8.4], "INCONCLUSIVE"),
    ],
)
def test_the_no_overlap_claim_is_judged_process_by_process(together, verdict):
    o = Overlap(
        measured("pipeline", [3, 3, 3]), measured("step", [5, 5, 5]), measured("t", together), 2
    )
    assert o.no_overlap_claim("here").verdict == verdict


def test_cpu_seconds_needs_the_cores_busy():
    m = measured("x", [1, 1, 1], cores=None)
    with pytest.raises(ValueError, match="no cores busy"):
        cpu_seconds(m)


def test_the_typical_recording_is_the_one_of_median_length():
    recordings = [{"pass_s": length, "events": [[0.0, 0.1, length]]} for length in (3.0, 1.0, 2.0)]
    r = typical(recordings)
    assert r.length_s == 2.0
    assert r.events == ((0.0, 0.1, 2.0),)
