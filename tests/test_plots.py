"""Plots: bars start at zero and carry their share of the machine's limit."""

import pytest

from perfguide.measure.measurement import Measurement
from perfguide.report.plots import (
    Limit,
    heatmap,
    projection_plot,
    rate_bars,
    rate_plot,
    timeline_plot,
)
from perfguide.workloads.distributed_allreduce import Link, project


def test_rate_bars_are_rates_from_zero_with_their_share_of_the_limit():
    ms = [
        Measurement(label, "product", 1, 1, 0.0, (seconds,) * 5, size=1)
        for label, seconds in (("slow", 0.2), ("fast", 0.1))
    ]
    ax = rate_bars(ms, lambda m: 1e9, Limit(2e10, "peak", "FLOP/s"))
    widths = sorted(bar.get_width() for bar in ax.patches)
    assert widths == pytest.approx([5e9, 1e10])
    assert ax.get_xlim()[0] == 0
    assert sorted(text.get_text() for text in ax.texts) == ["25%", "50%"]
    assert [tick.get_text() for tick in ax.get_yticklabels()] == ["slow", "fast"]


def test_a_rate_plot_within_a_decade_labels_more_than_one_tick():
    ms = [
        Measurement("way", "request", size, size, 0.0, (seconds,) * 5, size=size)
        for size, seconds in ((1, 4e-4), (16, 1e-4), (256, 6e-5))
    ]
    ax = rate_plot(ms, "batch", lambda m: 1, Limit(2e4, "peak", "req/s"))
    ax.figure.canvas.draw()
    low, high = ax.get_ylim()
    labelled = [
        t for t in ax.get_yticklabels() if t.get_text() and low <= t.get_position()[1] <= high
    ]
    assert len(labelled) >= 2


def test_heatmap_writes_each_cell_against_its_columns_fastest_and_leaves_gaps_blank():
    def m(label, seconds):
        return Measurement(label, "step", 1, 1, 0.0, (seconds,) * 5)

    columns = {"small": [m("a", 0.01), m("b", 0.04)], "large": [m("a", 0.2)]}
    ax = heatmap(columns, ["a", "b"])
    ax.figure.canvas.draw()  # ticks are formatted only when drawn
    assert sorted(text.get_text() for text in ax.texts) == [
        "10.0 ms\n1.00x",
        "200 ms\n1.00x",
        "40.0 ms\n4.00x",
    ]
    factors = ax.images[0].get_array()
    assert factors[1, 0] == pytest.approx(4.0) and factors.mask[1, 1]


def test_timeline_draws_each_batchs_wait_and_step_on_its_rows_line():
    epochs = {"naive": [(0.0, 0.5, 2.0), (2.0, 2.1, 3.0)], "cache": [(0.0, 0.0, 1.0)]}
    ax = timeline_plot(epochs)

    def spans(collection):
        return [x for path in collection.get_paths() for x in path.get_extents().intervalx]

    naive_waits, naive_steps, _, cache_steps = ax.collections
    assert spans(naive_waits) == pytest.approx([0.0, 0.5, 2.0, 2.1])
    assert spans(naive_steps) == pytest.approx([0.5, 2.0, 2.1, 3.0])
    assert spans(cache_steps) == pytest.approx([0.0, 1.0])
    assert [tick.get_text() for tick in ax.get_yticklabels()] == ["naive", "cache"]
    assert [text.get_text() for text in ax.get_legend().get_texts()] == [
        "waiting for input",
        "training step",
    ]


def test_a_projection_plot_draws_projections_dashed_and_measurements_as_dots():
    link = Link.network(10, 50e-6)
    series = [project(0.01, 5e6, n, link, "weak") for n in (1, 2, 4, 8)]
    ax = projection_plot(
        {"10 Gb/s": [(p.workers, p.speedup) for p in series]}, measured={2: (1.5, 1.2, 1.8)}
    )
    ideal, projected = ax.get_lines()[:2]
    assert ideal.get_linestyle() == ":" and list(ideal.get_ydata()) == [1, 2, 4, 8]
    assert projected.get_linestyle() == "--"
    assert list(projected.get_ydata()) == [p.speedup for p in series]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["ideal (speed-up = workers)", "10 Gb/s", "measured here (loopback)"]
    assert "dashed: projected" in ax.get_xlabel()
