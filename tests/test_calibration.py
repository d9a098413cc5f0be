"""Calibrations: fitted to two runs of the same code, saved, loaded, and chosen."""

import json

import numpy as np
import pytest

from perfguide.measure import calibrate, calibration, cpu
from perfguide.measure.measurement import Measurement
from perfguide.measure.memory import Growth


def run(rng, shift, rows=40, processes=3, process_sd=0.04, workload="w", first_size=0):
    """One run of ``workload`` at ``rows`` sizes from ``first_size`` on, two variants each (one
    3x slower), timed in the same processes: each process off by ``process_sd``, the whole run
    by ``shift``."""
    measured = []
    for row in range(rows):
        ids = tuple(f"{workload}{row}-{shift:.3f}-p{p}" for p in range(processes))
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
                    workload=workload,
                    size=first_size + row,
                    blocks_per_process=(3,) * processes,
                    process_ids=ids,
                )  # fmt: skip
            )
    return measured


def test_a_fit_to_two_runs_recovers_their_spread_and_covers_them():
    rng = np.random.default_rng(0)
    a, b = run(rng, 0.0), run(rng, 0.05)  # the second run 5 % slower as a whole
    fitted = calibrate.fit([a, b], "CPU X", "two made-up runs")
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
    fitted = calibrate.fit(three, "CPU X", "three runs")
    assert fitted.fit["runs"] == 3 and fitted.fit["times"] == 3 * 80
    with pytest.raises(ValueError, match="at least two runs"):
        calibrate.fit(three[:1], "CPU X", "one run")


def test_a_workload_that_shifts_as_a_whole_between_runs_gets_its_own_wider_drift(
    tmp_path, monkeypatch
):
    rng = np.random.default_rng(6)
    runs = [run(rng, 0.0, workload="steady") + run(rng, shift, workload="moving")
            for shift in (0.0, 0.3, -0.3)]  # fmt: skip
    fitted = calibrate.fit(runs, "CPU X", "runs")
    steady, moving = (fitted.time_for(name).drift_sd for name in ("steady", "moving"))
    # The machine's drift covers both together; each workload's is nearer its own shifts.
    assert steady < fitted.time.drift_sd < moving
    assert fitted.time_for("unseen") == fitted.time
    assert fitted.fit["times_covered"] >= 0.95 and fitted.fit["ratios_covered"] >= 0.95
    assert "each of 2 workloads' times drifting on its own" in fitted.describe()
    # Its measurements are judged with it: the same processes, a wider interval.
    path = tmp_path / "workloads.json"
    path.write_text(json.dumps(fitted.to_dict()))
    monkeypatch.setenv(calibration.CALIBRATION_ENV, str(path))
    assert calibration.current() == fitted
    same = {name: next(m for m in runs[0] if m.workload == name and m.size == 0)
            for name in ("steady", "moving")}  # fmt: skip
    (low, high), (wide_low, wide_high) = (same[name].interval_s for name in ("steady", "moving"))
    moving = same["moving"]
    assert moving.interval_with(fitted.time_for("moving", moving.row_key)) == (wide_low, wide_high)
    assert wide_high / wide_low > high / low


def test_each_measurement_gets_its_own_drift_leaning_on_its_workloads(tmp_path, monkeypatch):
    rng = np.random.default_rng(8)
    # One workload: sizes 0-19 land where they did, sizes 20-39 shift as a whole between runs.
    shifts = (0.0, 0.3, -0.3, 0.15, -0.15, 0.0)
    runs = [run(rng, 0.0, rows=20) + run(rng, shift, rows=20, first_size=20) for shift in shifts]
    fitted = calibrate.fit(runs, "CPU X", "runs")
    steady, moving = (next(m for m in runs[0] if m.size == size) for size in (0, 30))
    workload = fitted.time_for("w").drift_sd
    drift = {m.size: fitted.time_for("w", m.row_key).drift_sd for m in (steady, moving)}
    assert drift[0] < workload < drift[30]
    # Fitted on 15 pairs of runs, a steady measurement leans on its workload's drift that much.
    pairs = len(shifts) * (len(shifts) - 1) // 2
    lean = np.sqrt(calibrate.MACHINE_ROWS / (pairs + calibrate.MACHINE_ROWS))
    assert drift[0] == pytest.approx(lean * workload, rel=0.1)
    # Its measurements are judged with it.
    path = tmp_path / "measurements.json"
    path.write_text(json.dumps(fitted.to_dict()))
    monkeypatch.setenv(calibration.CALIBRATION_ENV, str(path))
    assert steady.interval_s == steady.interval_with(fitted.time_for("w", steady.row_key))
    assert fitted.fit["times_covered"] >= 0.95
    # A measurement the fit never saw drifts as its workload does.
    assert fitted.time_for("w", "w|fast|99|None") == fitted.time_for("w")
    assert "each of 80 measured times drifting on its own" in fitted.describe()


def test_a_workload_fitted_on_a_few_rows_leans_on_the_machines_drift():
    rng = np.random.default_rng(7)
    many = [run(rng, shift, workload="many") for shift in (0.0, 0.1, -0.1)]
    few = [r + run(rng, 0.0, rows=1, workload="few") for r in many]
    fitted = calibrate.fit(few, "CPU X", "runs")
    weight = 3 * 2 / (3 * 2 + calibrate.MACHINE_ROWS)  # 3 pairs of runs, 2 variants
    # Its own rows agree to within their processes' spread; the machine's drift carries it.
    own = fitted.time_for("few").drift_sd
    assert own >= np.sqrt(1 - weight) * fitted.time.drift_sd


def growth_run(rng, shift, ways=20, processes=3, process_sd=500.0):
    """One memory run: ``ways`` growth rates (bytes a call), each process off by
    ``process_sd``, the whole run by ``shift``."""
    return {
        "experiment": {
            f"way {w}": Growth(
                f"way {w}",
                tuple(
                    float(x) for x in 1e4 * w + shift + process_sd * rng.standard_normal(processes)
                ),
                (0.0,) * processes,
            )
            for w in range(ways)
        }
    }


def test_memory_runs_that_move_as_a_whole_get_a_drift_that_covers_them():
    rng = np.random.default_rng(4)
    steady = [growth_run(rng, 0.0) for _ in range(3)]
    drift, covered, rates = calibrate.fit_growth_drift(steady)
    assert rates == 3 * 20 and covered >= 0.95
    moved = [growth_run(rng, shift) for shift in (0.0, 4000.0, -4000.0)]
    moved_drift, moved_covered, _ = calibrate.fit_growth_drift(moved)
    # Shifts of 4 kB between runs, beyond processes 500 B apart: the intervals widen to them.
    assert moved_drift > max(drift, 1000.0) and moved_covered >= 0.95
    fitted = calibrate.fit([run(rng, 0.0), run(rng, 0.0)], "CPU X", "runs", growth_runs=moved)
    assert fitted.growth_drift == moved_drift and fitted.fit["growth_runs"] == 3
    assert f"drifting {moved_drift:.0f} B a call" in fitted.describe()


def test_a_growth_interval_widens_by_the_calibrated_drift(tmp_path, monkeypatch):
    grown = Growth("predict", (20e3, 20e3, 20e3), (0.0,) * 3)
    assert grown.interval_with(0.0) == (20e3, 20e3)
    rng = np.random.default_rng(5)
    fitted = calibrate.fit([run(rng, 0.0), run(rng, 0.0)], "CPU X", "runs")
    path = tmp_path / "drifting.json"
    path.write_text(json.dumps(fitted.to_dict() | {"growth_drift": 1000.0}))
    monkeypatch.setenv(calibration.CALIBRATION_ENV, str(path))
    low, high = grown.interval
    assert (low, high) == grown.interval_with(1000.0) and high - 20e3 > 1000.0


def test_too_few_matched_rows_cannot_calibrate():
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="at least 10"):
        calibrate.fit([run(rng, 0.0, rows=3), run(rng, 0.0, rows=3)], "CPU X", "runs")


def test_a_calibration_round_trips_and_the_variable_picks_it(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    fitted = calibrate.fit([run(rng, 0.0), run(rng, 0.0)], "CPU X", "runs")
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(fitted.to_dict()))
    monkeypatch.setenv(calibration.CALIBRATION_ENV, str(path))
    assert calibration.current() == fitted
    older = {key: value for key, value in fitted.to_dict().items() if key != "growth_drift"}
    assert calibration.Calibration.from_dict(older).growth_drift == 0.0  # before memory runs
    monkeypatch.delenv(calibration.CALIBRATION_ENV)
    assert calibration.current() == calibration.load(calibration.shipped(cpu.this_machine()))


def test_a_run_that_timed_the_probe_is_judged_on_its_host_and_says_so(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    probes = [{"matmul": 1e-3}, {"matmul": 1.1e-3}, {"matmul": 0.9e-3}]
    fitted = calibrate.fit([run(rng, 0.0), run(rng, 0.0)], "CPU X", "runs", probes=probes)
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(fitted.to_dict()))
    monkeypatch.setenv(calibration.CALIBRATION_ENV, str(path))
    assert calibration.current() == fitted and fitted.host_excess == 0.0
    assert "the fitted runs' host moving 10.0 %" in fitted.describe()
    # The same run's host found 2x slower: its times drift further, its record says why.
    monkeypatch.setenv(calibration.HOST_PROBE_ENV, json.dumps({"matmul": 2e-3}))
    slow = calibration.current()
    assert slow.host_seen == {"matmul": 2e-3} and slow.host_excess > 0.6
    assert "this run's host 2.00x the fitted runs' time" in slow.describe()
    assert calibration.Calibration.from_dict(slow.to_dict()) == slow


@pytest.mark.parametrize("path", sorted(calibration.SHIPPED.glob("*.json")), ids=lambda p: p.stem)
def test_each_shipped_calibration_says_where_it_was_measured(path):
    shipped = calibration.load(path)
    assert shipped.cpu_model.endswith("usable cores)") and "perfguide calibrate" in shipped.source
    assert 0 < shipped.time.process_sd < 0.5 and shipped.time.prior_df > 0


def test_a_machine_gets_the_calibration_fitted_on_it_else_the_first_build_machines(
    tmp_path, monkeypatch
):
    rng = np.random.default_rng(3)
    for name, machine in (("first", "CPU A (2 usable cores)"), ("other", "CPU B (2 usable cores)")):
        fitted = calibrate.fit([run(rng, 0.0), run(rng, 0.0)], machine, "runs")
        (tmp_path / f"{name}.json").write_text(json.dumps(fitted.to_dict()))
    monkeypatch.setattr(calibration, "SHIPPED", tmp_path)
    monkeypatch.setattr(calibration, "FALLBACK", tmp_path / "first.json")
    calibration.shipped.cache_clear()
    try:
        assert calibration.shipped("CPU B (2 usable cores)") == tmp_path / "other.json"
        assert calibration.shipped("CPU B (4 usable cores)") == tmp_path / "first.json"
        assert calibration.shipped("CPU C (2 usable cores)") == tmp_path / "first.json"
    finally:
        calibration.shipped.cache_clear()


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
