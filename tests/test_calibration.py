"""Calibrations: fitted to two runs of the same code, saved, loaded, and chosen."""

import json

import numpy as np
import pytest

from perfguide.measure import calibration
from perfguide.measure.timer import Measurement


def run(rng, shift, rows=40, processes=3, process_sd=0.04):
    """One run of ``rows`` workloads of two variants each (one 3x slower), timed in the same
    processes: each process off by ``process_sd``, the whole run by ``shift``."""
    measured = []
    for row in range(rows):
        ids = tuple(f"r{row}-{shift:.3f}-p{p}" for p in range(processes))
        base = np.exp(shift + process_sd * rng.standard_normal(processes))
        for variant, factor in (("fast", 1.0), ("slow", 3.0)):
            noise = np.exp(0.01 * rng.standard_normal(processes))
            blocks = tuple(float(t) for t in base * factor * noise for _ in range(3))
            measured.append(
                Measurement(
                    variant,
                    "call",
                    1,
                    1,
                    0.0,
                    blocks,
                    workload=f"w{row}",
                    size=1,
                    blocks_per_process=(3,) * processes,
                    process_ids=ids,
                )  # fmt: skip
            )
    return measured


def test_a_fit_to_two_runs_recovers_their_spread_and_covers_them():
    rng = np.random.default_rng(0)
    a, b = run(rng, 0.0), run(rng, 0.05)  # the second run 5 % slower as a whole
    fitted = calibration.fit([a, b], "CPU X", "two made-up runs")
    assert fitted.fit["times"] == 80 and fitted.fit["ratios"] == 40
    assert fitted.time.process_sd == pytest.approx(0.04, rel=0.3)
    # The runs' shift is drift: the intervals widen until they cover the reruns.
    assert fitted.time.drift_sd > 0.01
    assert fitted.fit["times_covered"] >= 0.95 and fitted.fit["ratios_covered"] >= 0.95
    # A process that runs both variants slower moves both: the ratios spread far less.
    assert fitted.ratio.process_sd < fitted.time.process_sd / 2


def test_every_pair_of_runs_counts():
    rng = np.random.default_rng(3)
    three = [run(rng, shift) for shift in (0.0, 0.02, 0.04)]
    fitted = calibration.fit(three, "CPU X", "three runs")
    assert fitted.fit["runs"] == 3 and fitted.fit["times"] == 3 * 80
    with pytest.raises(ValueError, match="at least two runs"):
        calibration.fit(three[:1], "CPU X", "one run")


def test_too_few_matched_rows_cannot_calibrate():
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="at least 10"):
        calibration.fit([run(rng, 0.0, rows=3), run(rng, 0.0, rows=3)], "CPU X", "runs")


def test_a_calibration_round_trips_and_the_variable_picks_it(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    fitted = calibration.fit([run(rng, 0.0), run(rng, 0.0)], "CPU X", "runs")
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(fitted.to_dict()))
    monkeypatch.setenv(calibration.CALIBRATION_ENV, str(path))
    assert calibration.current() == fitted
    monkeypatch.delenv(calibration.CALIBRATION_ENV)
    assert calibration.current() == calibration.load(calibration.SHIPPED)


def test_the_shipped_calibration_says_where_it_was_measured():
    shipped = calibration.load(calibration.SHIPPED)
    assert shipped.cpu_model and "perfguide calibrate" in shipped.source
    assert 0 < shipped.time.process_sd < 0.5 and shipped.time.prior_df > 0


@pytest.mark.parametrize(
    ("text", "reason"),
    [(None, "cannot read calibration"), ("{}", "is not a calibration file"), ("[", "is not a")],
)
def test_a_bad_calibration_file_is_a_one_line_error(tmp_path, text, reason):
    path = tmp_path / f"bad-{len(text or '')}.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ValueError, match=reason):
        calibration.load(path)
