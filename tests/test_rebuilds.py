"""Two builds of the site side by side: claims matched by chapter and statement, wherever they
stand on the page, and a folder that is not a built site refused in one line."""

import runpy
from pathlib import Path

import pytest

from perfguide.report.claims import Claim, ClaimReport
from perfguide.report.rebuilds import Rebuild, site_verdicts

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
