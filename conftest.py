"""Tests and doctests run on fixed spreads, not on the calibration the package ships (which a
new noise session changes): an interval or a verdict under test must not move with it; and as
full runs, whatever ``PERFGUIDE_QUICK`` the shell has."""

import json

import pytest

from perfguide.measure import calibration, environment
from perfguide.measure.stats import Spread

FIXED = calibration.Calibration(
    time=Spread(process_sd=0.03, prior_df=4.0, drift_sd=0.02),
    ratio=Spread(process_sd=0.02, prior_df=4.0, drift_sd=0.01),
    cpu_model="any CPU",
    source="the tests' fixed spreads",
)


@pytest.fixture(autouse=True)
def fixed_calibration(monkeypatch, tmp_path_factory):
    """``$PERFGUIDE_CALIBRATION`` names :data:`FIXED` (fresh worker processes read it too)."""
    path = tmp_path_factory.getbasetemp() / "fixed-calibration.json"
    if not path.exists():
        path.write_text(json.dumps(FIXED.to_dict()))
    monkeypatch.setenv(calibration.CALIBRATION_ENV, str(path))


@pytest.fixture(autouse=True)
def full_runs(monkeypatch):
    """No quick runs unless a test asks for them (they take one process a workload)."""
    monkeypatch.delenv(environment.QUICK_ENV, raising=False)
