"""diagnose's projection of a model's training onto more workers: its arithmetic on known
values, shown labelled as a projection, and none for what does not train."""

import pytest
from test_diagnose_findings import evidence

from perfguide.diagnose.parent import projection, render
from perfguide.diagnose.parent.findings import assess
from perfguide.workloads.distributed_allreduce import Link, ring_allreduce_s

MODEL = {
    "variants": ["predict"],
    "problems": {},
    "as_written": "predict",
    "kind": "model",
    "training": ["fit"],
    "training_as_written": "fit",
    "gradient_bytes": 4_000_000,
}


def test_a_model_that_trains_is_projected_per_worker_count_on_the_named_network():
    trained = evidence({"predict": 1e-3}, registered=MODEL, steps={"fit": 0.02})
    projected = projection.of(trained, largest=8, network_gbps=10)
    assert [p.workers for p in projected.projections] == [2, 4, 8]
    link = Link.network(10, projection.LATENCY_S)
    for p in projected.projections:
        step_s = 0.02 + ring_allreduce_s(4_000_000, p.workers, link)
        assert p.step_s == pytest.approx(step_s)
        assert p.speedup == pytest.approx(p.workers * 0.02 / step_s)
    table = projected.table()
    assert table.caption.startswith("Projected, not measured")
    assert [row[0] for row in table.rows] == ["2", "4", "8"]


def test_the_report_shows_the_projection_after_the_advice_with_the_chapter():
    trained = evidence({"predict": 1e-3}, registered=MODEL, steps={"fit": 0.02})
    projected = projection.of(trained)
    shown = render.text(assess(trained), trained, "", projected)
    assert "Projected, not measured" in shown
    assert "auto_examples/distributed/plot_distributed.html" in shown
    page = render.html_page(assess(trained), trained, "", projected)
    assert "<h2>On more workers</h2>" in page
    assert render.to_json(assess(trained), projected)["projection"]["network_gbps"] == 10


def test_nothing_is_projected_for_a_function_or_a_model_that_was_not_trained():
    assert projection.of(evidence({"eager": 1e-3, "tf-function": 1e-4})) is None
    untrained = {k: v for k, v in MODEL.items() if k not in ("training", "training_as_written")}
    assert projection.of(evidence({"predict": 1e-3}, registered=untrained)) is None
