"""The diagnose chapter prints what the command prints for a target, and draws its plot."""

from perfguide.diagnose.target import InputSpec
from perfguide.pages import diagnose as page

SCALE = "perfguide.workloads.diagnose:scale"


def test_the_page_runs_the_commands_quick_assessment_and_prints_its_report(monkeypatch, capsys):
    calls = []

    def assessment_of(target, workers, *, quick, settle):
        calls.append((target.function, target.inputs, workers, quick, settle))
        return "found", "evidence"

    monkeypatch.setattr(page, "assessment_of", assessment_of)
    monkeypatch.setattr(page.render, "text", lambda found, evidence: f"{found} / {evidence}")
    monkeypatch.setattr(page.render, "dot_plot_of", lambda evidence: calls.append(evidence))
    monkeypatch.setattr(page.plt, "show", lambda: None)
    page.diagnose("workers", SCALE, "float32[4,2]", "0.5")
    inputs = (InputSpec.parse("float32[4,2]"), InputSpec.parse("0.5"))
    assert calls == [(SCALE, inputs, "workers", True, False), "evidence"]
    assert capsys.readouterr().out == "found / evidence\n"
