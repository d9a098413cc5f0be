"""Plots: bars start at zero and carry their share of the machine's limit."""

import pytest

from perfguide.measure.timer import Measurement
from perfguide.report.plotting import rate_bars


def test_rate_bars_are_rates_from_zero_with_their_share_of_the_limit():
    ms = [
        Measurement(label, "product", 1, 1, 0.0, (seconds,) * 5, size=1)
        for label, seconds in (("slow", 0.2), ("fast", 0.1))
    ]
    ax = rate_bars(ms, lambda m: 1e9, limit=2e10, limit_label="peak", rate_unit="FLOP/s")
    widths = sorted(bar.get_width() for bar in ax.patches)
    assert widths == pytest.approx([5e9, 1e10])
    assert ax.get_xlim()[0] == 0
    assert sorted(text.get_text() for text in ax.texts) == ["25%", "50%"]
    assert [tick.get_text() for tick in ax.get_yticklabels()] == ["slow", "fast"]
