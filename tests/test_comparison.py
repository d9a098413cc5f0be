import pytest

from perfguide.measure.measurement import Measurement
from perfguide.report.tables.comparison import Comparison, format_seconds, speedups


def m(label, seconds, noisy=False):
    spread = (0.8, 0.9, 1.0, 1.1, 1.2) if noisy else (1.0,) * 5
    return Measurement(label, "iteration", 1, 1, 0.1, tuple(s * seconds for s in spread))


def test_speedups_relative_to_baseline():
    assert speedups([m("a", 1e-3), m("b", 1e-4)], "a") == pytest.approx({"a": 1.0, "b": 10.0})


def test_unknown_baseline_names_the_choices():
    with pytest.raises(ValueError, match="no measurement of 'c' among"):
        speedups([m("a", 1.0)], "c")


def test_table_marks_noisy_rows_and_omits_speedup_without_baseline():
    text = str(Comparison([m("a", 1e-3), m("b", 1e-4, noisy=True)]))
    assert "vs " not in text.splitlines()[0]
    rows = text.splitlines()[2:]
    assert rows[0].startswith("a ") and not rows[0].endswith("NOISY")
    assert rows[1].startswith("b ") and rows[1].endswith("NOISY")


def test_html_table_has_a_row_per_measurement():
    html = Comparison([m("a", 1e-3), m("<b>", 1e-4)], baseline="a")._repr_html_()
    assert html.count("<tr>") == 3
    assert "&lt;b&gt;" in html


@pytest.mark.parametrize(
    ("seconds", "text"), [(1.5, "1.50 s"), (0.000999, "999 µs"), (3e-9, "3.00 ns"), (0.0, "0 ns")]
)
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text
