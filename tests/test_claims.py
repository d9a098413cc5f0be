from perfguide.claims import ClaimReport, faster
from perfguide.timer import Measurement


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
    assert "perfguide-claim-failed" in html and "did not hold on this machine" in html
