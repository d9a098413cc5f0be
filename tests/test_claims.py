import json

import numpy as np
import pytest

from perfguide.measure import calibration
from perfguide.measure.measurement import Measurement
from perfguide.measure.stats import Spread
from perfguide.report.verdicts.claims import (
    TOLERANCE,
    ClaimReport,
    Faster,
    Share,
    faster,
    predicts,
    ratio_interval,
)


def m(label, seconds, spread=(1.0,) * 5):
    return Measurement(label, "iteration", 1, 1, 0.0, tuple(s * seconds for s in spread))


MEASUREMENTS = [m("numpy", 20e-6), m("xla", 2e-6), m("noisy", 1e-6, (0.8, 0.9, 1, 1.1, 1.2))]


def test_claim_holds_only_when_the_measured_ratio_clears_the_factor():
    assert faster(MEASUREMENTS, "xla", "numpy", by=5).held
    assert faster(MEASUREMENTS, "xla", "numpy", by=20).held is False
    assert faster(MEASUREMENTS, "numpy", "xla").held is False


def test_wording_never_reads_as_a_double_negative_or_a_factor_below_one():
    keeps_up = faster(MEASUREMENTS, "numpy", "xla", by=1 / 20)
    assert keeps_up.statement == "numpy takes at most 20x the time of xla"
    assert keeps_up.held and keeps_up.effect == "10.0x slower"
    assert "numpy is 10.0x slower than xla" in keeps_up.evidence
    assert faster(MEASUREMENTS, "xla", "numpy").effect == "10.0x faster"


def test_a_claim_says_what_it_asked_for_beyond_a_direction():
    assert faster(MEASUREMENTS, "xla", "numpy", by=20).target == "at least 20x faster"
    assert faster(MEASUREMENTS, "numpy", "xla", by=1 / 20).target == "at most 20x the time"
    assert faster(MEASUREMENTS, "xla", "numpy").target == ""


def test_a_ratio_within_the_tolerance_of_the_factor_is_too_close_to_call():
    ms = [m("a", 1.0), m("b", 1.0 + TOLERANCE / 2)]
    claim = faster(ms, "a", "b")
    assert claim.verdict == "INCONCLUSIVE" and "too close to call" in claim.evidence
    # More blocks cannot change that, so a run need not add any.
    assert Faster("a", "b").settled(ms)


def test_a_wider_tolerance_calls_a_ratio_close_that_the_default_would_not():
    # Variants from different processes: a 20 % difference within a 30 % process gap is no win.
    ms = [m("a", 1.0), m("b", 1.2)]
    assert faster(ms, "a", "b").held
    claim = Faster("a", "b", tolerance=0.3).check(ms)
    assert claim.verdict == "INCONCLUSIVE" and "within 30% of the claimed factor" in claim.evidence


def test_a_clear_effect_holds_once_its_interval_lies_wholly_past_the_factor():
    # 15 % faster, sure of it (1.12x to 1.18x), but not sure it is over 1.1x: held, as asv would
    # call it; a claim of "at least 1.1x" on the same numbers is too close to call.
    ms = [m("a", 1.0, (0.98, 0.99, 1.0, 1.01, 1.02)), m("b", 1.15, (0.99, 0.995, 1.0, 1.005, 1.01))]
    ratio, low, high = ratio_interval(ms[1], ms[0])
    assert 1 < low < 1.1 * 1.1 and ratio > 1.1
    assert faster(ms, "a", "b").held
    assert faster(ms, "a", "b", by=1.1).verdict == "INCONCLUSIVE"
    assert faster(ms, "b", "a").held is False


def test_a_wide_interval_is_inconclusive_and_asks_for_more_processes():
    fast = pooled("a", (1.0, 1.0, 1.0))
    slow = pooled("b", (1.3, 0.7, 1.9))
    claim = faster([fast, slow], "a", "b")
    assert claim.verdict == "INCONCLUSIVE" and "straddles" in claim.evidence
    assert not Faster("a", "b").settled([fast, slow])


def test_more_processes_are_asked_for_where_they_could_decide_a_claim():
    # Processes far apart (1.2x to 3.4x) around a 2x ratio: undecided on three, and nine
    # spread alike would clear 1x, since the machine's drift between runs is small.
    ms = [pooled("fast", (1.0, 1.0, 1.0)), pooled("slow", (1.2, 2.0, 3.4))]
    claim = Faster("fast", "slow")
    assert claim.check(ms).verdict == "INCONCLUSIVE"
    assert not claim.settled(ms, at_most=9)


def test_no_more_processes_for_a_claim_the_drift_between_runs_alone_leaves_undecided(
    monkeypatch, tmp_path
):
    # Ratios drift 10 % between runs here: a 1.25x ratio, however many processes agree on it,
    # lands between 0.9x and 1.7x in the next run.
    drifting = calibration.Calibration(
        time=Spread(process_sd=0.03, prior_df=4.0, drift_sd=0.02),
        ratio=Spread(process_sd=0.02, prior_df=4.0, drift_sd=0.10),
        cpu_model="any CPU",
        source="a drifting machine",
    )
    path = tmp_path / "drifting.json"
    path.write_text(json.dumps(drifting.to_dict()))
    monkeypatch.setenv(calibration.CALIBRATION_ENV, str(path))
    speeds = (1.0, 1.1, 1.2)
    ms = [pooled("fast", speeds), pooled("slow", [1.25 * s for s in speeds])]
    claim = Faster("fast", "slow")
    assert claim.check(ms).verdict == "INCONCLUSIVE"
    assert not claim.settled(ms)
    assert claim.settled(ms, at_most=9)


def test_the_interval_is_deterministic_and_brackets_the_ratio():
    rng = np.random.default_rng(2)
    slow, fast = m("s", 2.0, tuple(rng.uniform(0.9, 1.1, 10))), m("f", 1.0, (1.0,) * 10)
    ratio, low, high = ratio_interval(slow, fast)
    assert low <= ratio <= high and (ratio, low, high) == ratio_interval(slow, fast)


def test_noisy_evidence_says_so():
    assert "noisy" in faster(MEASUREMENTS, "noisy", "numpy").evidence
    assert "noisy" not in faster(MEASUREMENTS, "xla", "numpy").evidence


def test_report_tints_each_verdict_and_anchors_each_claim():
    held, failed = faster(MEASUREMENTS, "xla", "numpy"), faster(MEASUREMENTS, "numpy", "xla")
    assert ClaimReport([held]).all_held
    report = ClaimReport([held, failed])
    assert not report.all_held and report.summary == "1 held, 1 did not hold."
    assert "DID NOT HOLD" in str(report)
    html = report._repr_html_()
    assert "perfguide-verdict-held" in html and "perfguide-verdict-did-not-hold" in html
    assert f'id="{held.anchor}"' in html


def test_retraced_evidence_says_tracing_is_in_the_time():
    retraced = Measurement("r", "iteration", 1, 1, 0.0, (1e-3,) * 5, retraces=3)
    assert "retraced" in faster([retraced, MEASUREMENTS[0]], "numpy", "r").evidence


@pytest.mark.parametrize(
    ("measurements", "message"),
    [
        (MEASUREMENTS, "no measurement of 'torch'"),
        ([m("numpy", 1.0), Measurement("torch", "call", 1, 1, 0.0, (1.0,) * 5)], "per call"),
    ],
)
def test_bad_comparisons_are_refused(measurements, message):
    with pytest.raises(ValueError, match=message):
        faster(measurements, "torch", "numpy")


def pooled(label, medians, ids=("p1", "p2", "p3")):
    """A variant timed in several processes: three tight blocks around each process's median."""
    blocks = tuple(t * f for t in medians for f in (0.99, 1.0, 1.01))
    return Measurement(
        label, "call", 1, 1, 0.0, blocks, blocks_per_process=(3,) * len(medians), process_ids=ids
    )


def test_variants_timed_by_the_same_processes_are_judged_process_by_process():
    # The processes ran everything at different speeds, but each saw the same 2x ratio.
    speeds = (1.0, 1.4, 1.2)
    ms = [pooled("fast", speeds), pooled("slow", [2 * s for s in speeds])]
    claim = Faster("fast", "slow", by=1.5).check(ms)
    assert claim.held and claim.effect == "2.00x faster"
    assert "per call over 3 processes; rerun interval: " in claim.evidence


def test_variants_timed_by_different_processes_carry_both_spreads():
    speeds = (1.0, 1.4, 1.2)
    apart = [
        pooled("fast", speeds),
        pooled("slow", [2 * s for s in speeds], ids=("q1", "q2", "q3")),
    ]
    _, low, high = ratio_interval(apart[1], apart[0])
    # Unpaired, the processes' speeds no longer cancel: the interval spans their spread.
    assert low < 2 / 1.3 and high > 2 * 1.3
    claim = Faster("fast", "slow", by=1.5).check(apart)
    assert claim.verdict == "INCONCLUSIVE"
    # And it says so: its two sides were not timed together.
    assert "per call in different processes (3 and 3); rerun interval: " in claim.evidence


def test_a_claim_is_decided_only_where_the_processes_agree():
    fast = pooled("fast", (1.0, 1.0, 1.0))
    split = pooled("slow", (2.0, 2.0, 0.5))  # one process saw the opposite
    assert Faster("fast", "slow").check([fast, split]).verdict == "INCONCLUSIVE"
    agreeing = pooled("slow", (2.0, 2.0, 1.8))
    assert Faster("fast", "slow").check([fast, agreeing]).held


def test_a_share_of_the_peak_is_judged_process_by_process_against_the_peak_timed_beside_it():
    speeds = (1.0, 1.4, 1.2)
    # The form does 3 units of work in 2 s per process-speed; the peak 1 unit in 0.5 s: the
    # form runs at 3/2 / (1/0.5) = 75 % of the peak in every process, whatever its speed.
    ms = [pooled("form", [2 * s for s in speeds]), pooled("peak", [0.5 * s for s in speeds])]
    claim = Share("form", "peak", 0.5, work=3, reference_work=1).check(ms)
    assert claim.held and claim.effect == "75% of peak"
    assert "per call over 3 processes; rerun interval: " in claim.evidence
    assert Share("form", "peak", 0.9, work=3, reference_work=1).check(ms).held is False


def test_a_prediction_is_judged_on_its_own_interval_and_the_measurement_s():
    measured = (2.0, 1.9, 2.1)
    # A sharp prediction within 1.25x of a sharp measurement holds; far off, it does not.
    assert predicts("p", (1.9, 1.88, 1.92), measured, "r", within=1.25).held is True
    assert predicts("p", (1.0, 0.98, 1.02), measured, "r", within=1.25).held is False
    # The same guess, made of measurements that spread: its interval reaches past the tolerance.
    assert predicts("p", (1.9, 1.3, 2.8), measured, "r", within=1.25).held is None
