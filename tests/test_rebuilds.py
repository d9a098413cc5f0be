"""Two builds of the site side by side: claims matched by chapter and statement, wherever they
stand on the page, and a folder that is not a built site refused in one line."""

import dataclasses
import json
import os
import runpy
from pathlib import Path

import pytest

from perfguide.measure.measurement import Measurement
from perfguide.report.publishing import results
from perfguide.report.verdicts.claims import Claim, ClaimReport
from perfguide.report.verdicts.rebuilds import (
    Rebuild,
    chapter_shifts,
    place_correlation,
    site_verdicts,
)

HELD_AS = {"HELD": True, "DID NOT HOLD": False, "INCONCLUSIVE": None}


def built_site(root, claims):
    """A site whose eager page holds ``claims`` (statement, verdict) in this order, as the
    chapter's claim report writes them."""
    page = root / "auto_examples" / "eager" / "plot_eager.html"
    page.parent.mkdir(parents=True)
    report = ClaimReport([Claim(s, HELD_AS[v], "…", "2.00x faster") for s, v in claims])
    page.write_text(report._repr_html_())
    return root


def test_claims_match_by_statement_not_by_position(tmp_path):
    before = built_site(tmp_path / "a", [("a is faster than b", "HELD"), ("c", "HELD")])
    after = built_site(tmp_path / "b", [("c", "INCONCLUSIVE"), ("a is faster than b", "HELD")])
    rebuild = Rebuild(site_verdicts(before), site_verdicts(after))
    assert rebuild.changed == rebuild.unsettled == [("eager", "c")]
    assert rebuild.opposite == []


def test_a_verdict_turned_between_held_and_did_not_hold_is_counted_apart(tmp_path):
    before = built_site(tmp_path / "a", [("a is faster than b", "HELD")])
    after = built_site(tmp_path / "b", [("a is faster than b", "DID NOT HOLD")])
    rebuild = Rebuild(site_verdicts(before), site_verdicts(after))
    assert rebuild.opposite == [("eager", "a is faster than b")] and rebuild.unsettled == []
    assert "1 between HELD and DID NOT HOLD, 0 to or from INCONCLUSIVE" in str(rebuild)


def test_the_tool_refuses_a_folder_that_is_not_a_built_site_in_one_line(tmp_path, capsys):
    tool = runpy.run_path(str(Path(__file__).parents[1] / "tools" / "rebuild_check.py"))
    assert tool["main"]([str(tmp_path), str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("rebuild-check: error:") and "not a built site" in line
    with pytest.raises(SystemExit):
        tool["main"]([str(tmp_path)])


def measured_site(root, order, medians):
    """A site whose chapters ran in ``order`` and measured one row each at ``medians[topic]``."""
    (root / "measurements").mkdir(parents=True)
    for topic, median in medians.items():
        row = Measurement("v", "call", 1, 1, 0.0, (median,) * 5, workload=topic, size=1)
        results.save(root / "measurements" / f"{topic}.json", {}, [row])
    records = [{"chapter": topic, "when": "after"} for topic in order]
    (root / "build-state.json").write_text(json.dumps(records))
    return root


def test_a_chapter_s_shift_is_set_beside_its_place_in_each_build(tmp_path):
    order = ["a", "b", "c", "d"]
    before = measured_site(tmp_path / "1", order, dict.fromkeys(order, 1.0))
    # Run in reverse, each chapter slower the later it ran: a place correlates with its shift.
    after = measured_site(tmp_path / "2", order[::-1], {"a": 1.3, "b": 1.2, "c": 1.1, "d": 1.0})
    shifts = chapter_shifts(before, after)
    assert [(s.topic, s.places) for s in shifts] == [
        ("a", (1, 4)),
        ("b", (2, 3)),
        ("c", (3, 2)),
        ("d", (4, 1)),
    ]
    assert shifts[0].shift == pytest.approx(1.3) and shifts[0].rows == 1
    assert "1.30x slower in the later build" in str(shifts[0])
    assert "rho +1.00" in place_correlation(shifts)
    assert "nothing to correlate" in place_correlation(chapter_shifts(before, before))


def test_the_tool_judges_each_chapter_on_the_host_its_first_build_found(tmp_path, monkeypatch):
    from perfguide.measure import calibration
    from perfguide.measure.stats import Spread

    fitted = calibration.Calibration(
        Spread(0.05, 5, 0.05), Spread(0.03, 8, 0.02), "CPU X", "runs", host_probe={"p": 1.0}
    )
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(fitted.to_dict()))
    monkeypatch.setenv(calibration.CALIBRATION_ENV, str(path))
    row = Measurement("v", "call", 1, 1, 0.0, (1.0,) * 5, workload="w", size=1)
    later = measured_site(tmp_path / "later", ["calm", "slow"], {"calm": 2.0, "slow": 2.0})
    first = tmp_path / "first" / "measurements"
    first.mkdir(parents=True)
    # The first build found its host 3x slower before "slow" only: that chapter's interval
    # widens to hold a rerun 2x away, the other's does not.
    for topic, seen in (("calm", {"p": 1.0}), ("slow", {"p": 3.0})):
        env = {"calibration": {"host_seen": seen}}
        results.save(first / f"{topic}.json", env, [dataclasses.replace(row, workload=topic)])
    tool = runpy.run_path(str(Path(__file__).parents[1] / "tools" / "rebuild_check.py"))
    (line,) = tool["coverage"]([first.parent, later])
    assert line.startswith(f"{later} in {first.parent}: 1 of 2 medians inside (50.0%)")
    assert calibration.HOST_PROBE_ENV not in os.environ  # the tool leaves the variable as found
