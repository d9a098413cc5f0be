import pytest

from perfguide.report.claims import ClaimReport, faster
from perfguide.measure.timer import Measurement


def m(label, seconds, spread=(1.0,) * 5):
    return Measurement(label, "iteration", 1, 1, 0.0, tuple(s * seconds for s in spread))


MEASUREMENTS = [m("numpy", 20e-6), m("xla", 2e-6), m("noisy", 1e-6, (0.8, 0.9, 1, 1.1, 1.2))]


def test_claim_holds_only_when_the_measured_ratio_reaches_the_factor():
    assert faster(MEASUREMENTS, "xla", "numpy", by=5).held
    assert not faster(MEASUREMENTS, "xla", "numpy", by=20).held
    assert not faster(MEASUREMENTS, "numpy", "xla").held


def test_catch_up_claim_is_phrased_as_at_most_slower():
    claim = faster(MEASUREMENTS, "numpy", "xla", by=1 / 20)
    assert claim.statement == "numpy is at most 20x slower than xla per iteration"
    assert claim.held


def test_noisy_evidence_says_so():
    assert "noisy" in faster(MEASUREMENTS, "noisy", "numpy").evidence
    assert "noisy" not in faster(MEASUREMENTS, "xla", "numpy").evidence


def test_report_says_visibly_when_a_claim_failed():
    held, failed = faster(MEASUREMENTS, "xla", "numpy"), faster(MEASUREMENTS, "numpy", "xla")
    assert ClaimReport([held]).all_held
    report = ClaimReport([held, failed])
    assert not report.all_held
    assert "DID NOT HOLD" in str(report)
    html = report._repr_html_()
    assert "perfguide-claim-did-not-hold" in html and "did not hold on this machine" in html


def test_overlapping_spreads_at_the_claimed_factor_are_inconclusive():
    # Medians 1.0 and 1.05: faster by the medians, but the quartiles overlap.
    spread = (0.9, 0.95, 1.0, 1.05, 1.1)
    ms = [m("a", 1.0, spread), m("b", 1.05, spread)]
    claim = faster(ms, "a", "b")
    assert claim.held is None and claim.verdict == "INCONCLUSIVE"
    report = ClaimReport([claim])
    assert not report.all_held and "inconclusive" in report.summary


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
