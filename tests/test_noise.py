"""The noise floor's arithmetic, on processes of known spread (the probes' timing is the env
page's and `perfguide env`'s to show, not a test's)."""

from perfguide.measure.measurement import Measurement
from perfguide.processes.noise import NoiseFloor, Probe


def pooled(medians, blocks=4):
    """One probe timed in ``len(medians)`` processes of ``blocks`` tight blocks each."""
    block_s = tuple(t * (1 + 0.001 * k) for t in medians for k in range(blocks))
    ids = tuple(f"p{i}" for i in range(len(medians)))
    return Measurement(
        "numpy", "call", 1, 1, 0.0, block_s, "eager-add", 1000,
        blocks_per_process=(blocks,) * len(medians), process_ids=ids,
    )  # fmt: skip


def test_the_sets_alternate_between_processes():
    probe = Probe(pooled([1.0, 2.0, 1.1, 2.1, 1.2, 2.2]), "")
    a, b = probe.sets
    assert a.process_ids == ("p0", "p2", "p4") and b.process_ids == ("p1", "p3", "p5")


def test_spread_and_levels_describe_the_processes():
    probe = Probe(pooled([1.0, 1.2, 1.0, 1.2, 1.0, 1.2]), "")
    assert round(probe.spread, 3) == 0.2
    block_sd, process_sd = probe.levels
    assert block_sd < 0.002 and 0.08 < process_sd < 0.11
    assert probe.processes_needed > 6  # 10 % apart, 5 % wanted: more than six


def test_processes_of_keep_their_own_blocks():
    m = pooled([1.0, 2.0, 3.0], blocks=2).of_processes([2])
    assert m.by_process == ((3.0, 3.0 * 1.001),) and m.process_ids == ("p2",)


def test_the_table_counts_false_alarms_and_says_so():
    floor = NoiseFloor(
        [Probe(pooled([1.0] * 6), "no clear difference"), Probe(pooled([1.0] * 6), "slower")]
    )
    assert floor.false_alarms == 1
    text = str(floor)
    assert "A/A verdict" in text and "1 of 2 probes called apart" in text
    assert "1 of 2 probes called apart" in floor._repr_html_()
