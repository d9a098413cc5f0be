"""Numbers as readers read them: no factor below one, separators, "< 1 call"."""

import numpy as np
import pytest

from perfguide.measure.measurement import Measurement
from perfguide.report.format import format_count, format_factor, format_speedup
from perfguide.report.tables.comparison import first_call_overhead


@pytest.mark.parametrize("speedup", np.logspace(-4, 4, 33))
def test_a_speedup_never_reads_as_a_factor_below_one(speedup):
    text = format_speedup(speedup)
    if text != "as fast":
        factor, direction = text.split("x ")
        assert float(factor.replace(",", "")) >= 1
        assert direction == ("faster" if speedup > 1 else "slower")


def test_factors_below_one_are_refused():
    with pytest.raises(ValueError, match="from 1 up"):
        format_factor(0.5)


def test_large_numbers_have_thousands_separators():
    assert format_count(10_000_000) == "10,000,000"
    assert format_speedup(12_800) == "12,800x faster"


def test_a_first_call_no_slower_than_a_steady_one_reads_as_less_than_one_call():
    steady = Measurement("v", "call", 1, 1, first_call_s=0.5e-3, block_s=(1e-3,) * 5)
    tracing = Measurement("v", "call", 1, 1, first_call_s=0.2, block_s=(1e-3,) * 5)
    assert first_call_overhead(steady) == "< 1 call"
    assert first_call_overhead(tracing) == "199 ms"
