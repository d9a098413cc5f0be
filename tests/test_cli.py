"""The command line: its tables, its JSON, and one-line errors with exit status 2."""

import argparse
import contextlib
import dataclasses
import io
import json
import math
import os
import re
import statistics
import subprocess
import sys

import numpy as np
import pytest

from perfguide import cli
from perfguide.cli import main
from perfguide.measure import calibration, environment
from perfguide.report.publishing import results
from perfguide.report.verdicts.claims import per_process


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_usage_error(code, err, *fragments):
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


def test_list_names_workloads_and_variants(capsys):
    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    assert "linear-regression" in out and "xla-loop" in out and "tf1-session" in out
    # Every chapter, under the title its page has.
    assert "  memory: Why does my TensorFlow process keep growing?" in out
    assert "  diagnose: Diagnose your own code (no workloads to run)" in out


@pytest.mark.processes
def test_run_prints_a_table_and_writes_json(capsys, tmp_path):
    path = tmp_path / "out.json"
    code, out, _ = run_cli(
        capsys,
        "run",
        "linear-regression",
        "--quick",
        "--variant",
        "numpy",
        "--variant",
        "xla-loop",
        "--json",
        str(path),
    )
    assert code == 0
    assert "vs numpy" in out and "xla-loop" in out
    document = json.loads(path.read_text())
    assert document["environment"]["tensorflow"].startswith("2.21")
    assert [m["variant"] for m in document["measurements"]] == ["numpy", "xla-loop"]
    assert all(m["unit"] == "iteration" and m["median_s"] > 0 for m in document["measurements"])

    code, out, _ = run_cli(capsys, "show", str(path))
    assert code == 0 and "xla-loop" in out
    assert "linear-regression at size 1,000 on cpu:" in out


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["run", "nope"], ["unknown workload 'nope'", "linear-regression"]),
        (
            ["run", "linear-regression", "--variant", "torch"],
            ["unknown variant 'torch'", "xla-loop"],
        ),
        (["run", "linear-regression", "--size", "0"], ["--size", "at least 1"]),
        (["run", "linear-regression", "--size", "lots"], ["--size", "not a whole number"]),
        (
            ["run", "linear-regression", "--json", "/no/such/dir/out.json"],
            ["directory does not exist"],
        ),
        (["show", "/no/such/file.json"], ["cannot read results file"]),
        (["run", "eager-matmul", "--env", "TF_ENABLE_ONEDNN_OPTS"], ["--env", "not NAME=VALUE"]),
        (["run", "eager-matmul", "--env", "=0"], ["--env", "not NAME=VALUE"]),
        (["run", "eager-matmul", "--env", "HOME=/tmp"], ["--env", "cannot pass 'HOME'"]),
        (["run", "eager-matmul", "--env", "TF_CLI_ARGS=x"], ["cannot pass 'TF_CLI_ARGS'"]),
        (["frobnicate"], ["invalid choice"]),
        (["run", "memory", "--variant", "predict"], ["memory runs the chapter's experiments"]),
        (["run", "memory", "--json", "/no/such/dir/m.json"], ["does not exist"]),
        (["run", "distributed", "--size", "8"], ["distributed runs the chapter's setups"]),
        (["diagnose", "m.keras", "--network-gbps", "0"], ["--network-gbps", "must be above 0"]),
        (["diagnose", "m.keras", "--network-gbps", "fast"], ["not a number"]),
        (["diagnose", "m.keras", "--workers", "0"], ["--workers", "must be at least 1"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, fragments):
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    assert_usage_error(code, capsys.readouterr().err, *fragments)


def test_show_rejects_a_file_that_is_not_results(capsys, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("[1, 2]")
    assert_usage_error(main(["show", str(path)]), capsys.readouterr().err, "lacks")


@pytest.mark.skipif(bool(environment.gpu_names()), reason="this machine has a GPU")
@pytest.mark.processes
def test_gpu_asked_for_but_absent(capsys):
    code = main(["run", "linear-regression", "--quick", "--device", "gpu"])
    assert_usage_error(code, capsys.readouterr().err, "GPU", "sees none")


@pytest.mark.processes
def test_module_entry_point_exits_2_without_traceback():
    done = subprocess.run(
        [sys.executable, "-m", "perfguide", "run", "nope"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "unknown workload 'nope'" in done.stderr
    assert "Traceback" not in done.stderr


def test_show_prints_one_table_per_workload_size_and_unit(capsys, tmp_path):
    from perfguide.measure.measurement import Measurement
    from perfguide.report.publishing import results

    def m(workload, size, unit):
        return Measurement("v", unit, 1, 1, 0.0, (1e-3,) * 5, workload=workload, size=size)

    path = tmp_path / "chapter.json"
    results.save(path, {}, [m("a", 10, "call"), m("a", 100, "call"), m("b", 10, "trace")])
    code, out, _ = run_cli(capsys, "show", str(path))
    assert code == 0
    assert [line for line in out.splitlines() if line.endswith(":")] == [
        "a at size 10 on cpu:",
        "a at size 100 on cpu:",
        "b at size 10 on cpu:",
    ]
    assert "time per trace" in out


@pytest.mark.processes
def test_env_measures_in_a_fresh_process_and_saves_its_record(capsys, tmp_path):
    path = tmp_path / "out.json"
    code, out, _ = run_cli(
        capsys,
        "run",
        "eager-matmul",
        "--quick",
        "--variant",
        "eager",
        "--env",
        "TF_ENABLE_ONEDNN_OPTS=0",
        "--json",
        str(path),
    )
    assert code == 0
    assert "eager" in out and f"wrote {path}" in out
    document = json.loads(path.read_text())
    # The child's record: this test process runs with oneDNN on.
    assert document["environment"]["onednn_enabled"] is False
    assert document["environment"]["process_settings"]["TF_ENABLE_ONEDNN_OPTS"] == "0"
    (measurement,) = document["measurements"]
    assert measurement["variant"] == "eager" and measurement["cores_busy"] > 0


@pytest.mark.processes
def test_keras_2_runs_in_a_process_of_its_own_with_legacy_keras(capsys, tmp_path):
    pytest.importorskip("tf_keras")
    path = tmp_path / "keras.json"
    variant = "keras-2-train-on-batch"
    args = ["run", "keras-versions", "--quick", "--variant", variant, "--json", str(path)]
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and variant in out
    record = json.loads(path.read_text())["environment"]
    # No --env given: the workload asks for its process, and tf.keras there is Keras 2.
    assert record["process_settings"]["TF_USE_LEGACY_KERAS"] == "1"
    assert "tf_keras" in record["tf_keras"]


@pytest.mark.processes
def test_a_fresh_process_refusing_its_input_exits_2(capsys):
    code = main(["run", "eager-matmul", "--quick", "--env", "PERFGUIDE_INTRA_OP_THREADS=lots"])
    assert_usage_error(code, capsys.readouterr().err, "PERFGUIDE_INTRA_OP_THREADS", "whole number")


@pytest.mark.processes
def test_bad_thread_count_here_is_one_line_and_exit_2(capsys, monkeypatch):
    monkeypatch.setenv("PERFGUIDE_INTRA_OP_THREADS", "-1")
    code = main(["run", "eager-matmul", "--quick"])
    assert_usage_error(code, capsys.readouterr().err, "PERFGUIDE_INTRA_OP_THREADS", "whole number")


def write_results(path, cpu, seconds):
    env = {"cpu_model": cpu, "tensorflow": "2.21.0", "usable_cores": 2}
    samples = [seconds * (1 + 0.01 * i) for i in range(5)]
    record = {
        "workload": "w", "variant": "numpy", "unit": "call", "size": 10, "device": "cpu",
        "first_call_s": 0.0, "units_per_call": 1, "calls_per_block": 1, "block_s": samples,
        "blocks_per_process": [1] * len(samples),
    }  # fmt: skip
    path.write_text(json.dumps({"environment": env, "measurements": [record]}))
    return str(path)


def test_compare_sets_files_side_by_side_with_verdicts(capsys, tmp_path):
    a = write_results(tmp_path / "a.json", "CPU A", 1e-3)
    b = write_results(tmp_path / "b.json", "CPU B", 2e-3)
    code, out, _ = run_cli(capsys, "compare", a, b)
    assert code == 0
    assert f"A: {a}: CPU A (2 usable cores), TensorFlow 2.21.0, cpu" in out
    assert "2.00x slower" in out and "slower" in out.splitlines()[-1]


RERUN_ENV = {"cpu_model": "CPU A", "usable_cores": 2, "date": "2026-11-25T10:00:00+00:00"}


def run_of(rng) -> list:
    """Made-up measurements of one run (tests/test_calibration.py's)."""
    from test_calibration import run

    return run(rng, 0.0)


def two_runs(tmp_path, rng) -> list:
    """Two results files of the same made-up workloads, as two runs on one machine save them."""
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path in paths:
        results.save(path, RERUN_ENV, run_of(rng))
    return paths


def test_compare_reruns_and_calibrate_read_two_runs_of_the_same_code(capsys, tmp_path):
    paths = two_runs(tmp_path, np.random.default_rng(0))
    code, out, _ = run_cli(capsys, "compare", "--reruns", *map(str, paths))
    assert code == 0 and "B as a rerun of A: " in out and "medians inside A's" in out
    fitted = tmp_path / "calibration.json"
    code, out, _ = run_cli(capsys, "calibrate", *map(str, paths), "--json", str(fitted))
    assert code == 0 and f"wrote {fitted}" in out
    written = calibration.load(fitted)
    assert written.cpu_model == "CPU A (2 usable cores)" and "2 runs of the same" in written.source
    assert "(a.json, b.json)" in written.source
    assert written.growth_drift == 0.0 and "growth_runs" not in written.fit


def test_calibrate_fits_memory_runs_beside_the_timing_runs(capsys, tmp_path):
    from test_calibration import growth_run

    from perfguide.measure.memory import Experiment
    from perfguide.report.publishing import memory_results

    rng = np.random.default_rng(0)
    paths = two_runs(tmp_path, rng)
    for k, shift in enumerate((0.0, 4000.0, -4000.0)):
        rates = growth_run(rng, shift)["experiment"]
        experiment = Experiment(rates, dict.fromkeys(rates), dict.fromkeys(rates, 0.0), [], {})
        paths.append(tmp_path / f"memory-{k}.json")
        memory_results.save(paths[-1], RERUN_ENV, {"experiment": experiment})
    fitted = tmp_path / "calibration.json"
    code, out, _ = run_cli(capsys, "calibrate", *map(str, paths), "--json", str(fitted))
    written = calibration.load(fitted)
    assert code == 0 and written.fit["growth_runs"] == 3 and written.growth_drift > 1000
    assert "memory growth on 3 runs" in written.source and "B a call" in out


def test_calibrate_fits_the_ratios_claims_were_judged_on_each_in_its_own_drift(capsys, tmp_path):
    # A claim's ratio that lands near itself run after run, and one that moves 2-fold.
    rng = np.random.default_rng(0)
    paths = [tmp_path / f"run-{k}.json" for k in range(3)]
    for path, moved in zip(paths, (1.0, 2.0, 0.5), strict=True):
        claims = [
            per_process("steady", [3.0, 3.1, 2.9], 1, "faster"),
            per_process("restless", [3.0 * moved, 3.1 * moved, 2.9 * moved], 1, "faster"),
        ]
        ratios = {claim.statement: list(claim.processes) for claim in claims}
        results.save(path, RERUN_ENV, run_of(rng), {results.PER_PROCESS: ratios})
    fitted = tmp_path / "calibration.json"
    code, _, _ = run_cli(capsys, "calibrate", *map(str, paths), "--json", str(fitted))
    written = calibration.load(fitted)
    steady, restless = (written.per_process_for(s).drift_sd for s in ("steady", "restless"))
    assert code == 0 and written.fit["per_process"] == 6
    assert restless > steady != written.ratio.drift_sd  # each leaning on the others' drift
    assert written.per_process_for("never published").drift_sd == written.ratio.drift_sd


def test_calibrate_fits_the_host_from_the_builds_probes(capsys, tmp_path, monkeypatch):
    # Two builds' state files: the probe timed three times, 1 ms apart around 2 ms.
    paths = two_runs(tmp_path, np.random.default_rng(0))
    for k, probed in enumerate(([1e-3, None, 2e-3], [3e-3])):
        state = [{"chapter": "c", "when": "after", "probe": p and {"matmul": p}} for p in probed]
        paths.append(tmp_path / f"build-state-{k}.json")
        paths[-1].write_text(json.dumps(state))
    fitted = tmp_path / "calibration.json"
    code, out, _ = run_cli(capsys, "calibrate", *map(str, paths), "--json", str(fitted))
    written = calibration.load(fitted)
    assert code == 0 and written.fit["probes"] == 3
    assert written.host_probe == pytest.approx({"matmul": 2e-3})
    assert "the host by 3 probes of 2 builds" in written.source
    assert written.host_sd == pytest.approx(statistics.stdev([math.log(0.5), 0, math.log(1.5)]))
    # A later run whose probe took 8 ms (4x) widens its times' drift by the excess.
    monkeypatch.setenv(calibration.CALIBRATION_ENV, str(fitted))
    monkeypatch.setenv(calibration.HOST_PROBE_ENV, json.dumps({"matmul": 8e-3}))
    widened = calibration.current()
    excess = math.sqrt(math.log(4) ** 2 - written.host_sd**2)
    assert widened.host_excess == pytest.approx(excess)
    assert widened.time.drift_sd == written.time.drift_sd  # the fit's own spread stays
    widest = math.hypot(written.time.drift_sd, excess)
    assert widened.time_for("never timed").drift_sd == pytest.approx(widest)
    # Ratios of variants timed together keep their drift: a slow host moves both alike.
    assert widened.ratio_for("never timed") == written.ratio_for("never timed")


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["calibrate", "a.json", "one.json", "--json", "c.json"], ["at least 10"]),
        (["calibrate", "a.json", "--json", "c.json"], ["at least two runs"]),
        (["calibrate", "a.json", "missing.json", "--json", "c.json"], ["cannot read"]),
        (["compare", "one.json"], ["at least two"]),
        (["compare", "a.json", "missing.json"], ["cannot read results file"]),
        (["compare", "a.json", "not-results.json"], ["not a JSON results file"]),
        (["run"], ["name a workload", "--all"]),
        (["run", "--all", "--variant", "numpy"], ["--all runs every workload"]),
        (["run", "eager", "--size", "4"], ["eager names a chapter"]),
    ],
)
def test_compare_and_run_refuse_bad_input_in_one_line(capsys, tmp_path, argv, fragments):
    write_results(tmp_path / "a.json", "CPU A", 1e-3)
    write_results(tmp_path / "one.json", "CPU A", 1e-3)
    (tmp_path / "not-results.json").write_text("{")
    argv = [str(tmp_path / arg) if arg.endswith(".json") else arg for arg in argv]
    code, _, err = run_cli(capsys, *argv)
    assert_usage_error(code, err, *fragments)


def test_a_chapters_topic_may_be_spelled_as_its_workloads_are_and_a_workload_comes_first():
    from perfguide import workloads

    def chosen(name):
        args = argparse.Namespace(all=False, workload=name, variant=None, size=None)
        return [w.name for w in cli._chosen(args)]

    by_topic = [w.name for w in workloads.TOPICS["keras_backends"]]
    assert chosen("keras-backends") == chosen("keras_backends") == by_topic
    assert chosen("tf-function") == ["tf-function"]


def test_run_measures_each_chapter_the_way_the_table_of_chapters_says():
    from perfguide import workloads
    from perfguide.report.publishing.chapters import CHAPTERS

    pooled = [c.topic for c in CHAPTERS if c.runs == "workloads"]
    assert list(workloads.TOPICS) == pooled  # in the reading order, as the pages run them
    assert {c.runs for c in CHAPTERS} - {"workloads", "nothing"} == set(cli.OWN_RUNS)
    assert cli._own_run("memory") is cli._run_memory
    assert cli._own_run("distributed") is cli._run_distributed
    assert cli._own_run("eager") is cli._own_run("diagnose") is cli._own_run(None) is None


def test_a_runs_environment_record_says_which_settings_varied_between_its_processes(
    monkeypatch, tmp_path
):
    from perfguide import workloads
    from perfguide.measure.measurement import Measurement
    from perfguide.workloads import eager

    chosen = {
        w.name: w
        for w in (
            dataclasses.replace(eager.ADD, name="one", process_settings={"TF_X": "1"}),
            dataclasses.replace(eager.CALL_OVERHEAD, process_settings={"TF_X": "2"}),
        )
    }
    monkeypatch.setattr(workloads, "WORKLOADS", chosen)
    monkeypatch.setattr(workloads, "TOPICS", {"eager": tuple(chosen.values())})

    class Started(contextlib.nullcontext):
        def __init__(self, args, settings, progress):
            super().__init__(self)
            variables = {"TF_X": settings["TF_X"], "TF_Y": settings.get("TF_Y", "unset")}
            self.environment = {"process_settings": variables}

        def run(self, workload, *args, **kwargs):
            return [Measurement("a", "call", 1, 1, 0.0, (1e-3,) * 5, workload=workload)]

    saved = {}
    monkeypatch.setattr(cli, "_workers", Started)
    monkeypatch.setattr(cli, "_save", lambda args, record, measured: saved.update(record))
    argv = ["run", "eager", "--env", "TF_Y=3", "--json", str(tmp_path / "run.json")]
    assert main(argv) == 0
    assert saved == {"process_settings": {"TF_X": cli.VARIES, "TF_Y": "3"}}


@pytest.mark.parametrize("which", [["--all"], ["eager"]])
@pytest.mark.processes
def test_run_all_or_a_chapter_runs_its_workloads_and_says_what_it_skipped(
    capsys, monkeypatch, tmp_path, which
):
    from perfguide import workloads
    from perfguide.workloads import eager

    unavailable = dataclasses.replace(eager.ADD, name="needs-more", requires=lambda: "why")
    lacking = dataclasses.replace(eager.CALL_OVERHEAD, missing={"other-runtime": "needs it"})
    chosen = {w.name: w for w in (unavailable, eager.ADD, lacking)}
    monkeypatch.setattr(workloads, "WORKLOADS", chosen)
    monkeypatch.setattr(workloads, "TOPICS", {"eager": tuple(chosen.values())})
    started = []

    class Spy(cli.Workers):
        def __init__(self, processes, **kwargs):
            started.append(processes)
            super().__init__(processes, **kwargs)

    monkeypatch.setattr(cli, "Workers", Spy)
    path = tmp_path / "all.json"
    argv = ["run", *which, "--quick", "--processes", "2", "--json", str(path)]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0
    assert out.startswith(f"{eager.ADD.name}: {eager.ADD.question}")
    assert "skipped needs-more: why" in err
    assert f"skipped {lacking.name} other-runtime: needs it" in err
    # One chapter's workloads share one set of fresh processes.
    assert started == [2]
    saved = json.loads(path.read_text())
    assert {m["workload"] for m in saved["measurements"]} == {w.name for w in chosen.values()} - {
        "needs-more"
    }
    assert "machine_limits" in saved["environment"]
    assert all(len(m["process_median_s"]) == 2 for m in saved["measurements"])


@pytest.mark.parametrize("terminal", [True, False])
def test_progress_shows_on_a_terminal_only(terminal):
    from rich.console import Console

    from perfguide.cli import _progress

    stream = io.StringIO()
    console = Console(file=stream, force_terminal=terminal, width=80)
    with _progress("linear-regression", console) as report:
        report("numpy: block 3")
    shown = stream.getvalue()
    assert ("linear-regression: numpy: block 3" in shown) == terminal
    assert terminal or shown == ""


@pytest.mark.parametrize("verbose", [False, True])
@pytest.mark.processes
def test_tensorflow_log_lines_only_with_verbose(verbose):
    # The retracing workload retraces on purpose, which TensorFlow's Python logger warns about.
    argv = ["--verbose"] * verbose + ["run", "tf-function-retracing", "--quick"]
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "-m", "perfguide", *argv], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    # TensorFlow's C++ log lines (absl's format: "I0000 00:00:…"), such as the instructions its
    # build leaves unused or, where oneDNN is on, that its custom operations are.
    logged = re.search(r"^[IWE]\d{4} \d\d:\d\d:", done.stderr, re.MULTILINE) is not None
    assert logged == verbose
    # A quiet run never shows TensorFlow's Python warnings. (With --verbose they are shown when
    # TensorFlow's retracing detector warns, which it did not in one CI run among busy tests.)
    assert verbose or "triggered tf.function retracing" not in done.stderr
    assert "tensor-argument" in done.stdout


@pytest.mark.processes
def test_env_prints_the_record_with_the_machine_limits_and_the_noise_floor(capsys):
    code, out, _ = run_cli(capsys, "env", "--quick")
    assert code == 0
    assert "TensorFlow" in out and "Measured limits" in out and "GFLOP/s" in out
    assert "A/A verdict" in out and "6 fresh processes per probe" in out


@pytest.mark.processes
def test_the_command_line_loads_tensorflow_only_when_it_measures():
    # Its log level must be set before TensorFlow loads, and a missing TensorFlow must reach
    # the install hint rather than fail at import.
    probe = "import sys, perfguide.cli; print('tensorflow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


def test_run_distributed_shows_every_setup_that_ran_and_ends_with_2_for_one_that_failed(
    capsys, tmp_path, monkeypatch
):
    from perfguide.measure.measurement import Measurement
    from perfguide.processes import distributed_setups

    def ran(label, unit, size, workload="distributed-step"):
        return Measurement(label, unit, 1, 1, 0.0, (1e-4,) * 5, workload=workload, size=size)

    # Times of other units and sizes from one setup: each set out in a table of its own.
    timed = [
        ran("one process", "example", 128),
        ran("one process", "example", 64),
        ran("4 KiB", "all-reduce", 2, "distributed-allreduce"),
    ]
    failed = {"parameter server": "ps 0 of the cluster failed: it stopped serving"}
    fake = (
        {distributed_setups.ONE_PROCESS: timed, distributed_setups.PARAMETER_SERVER: []},
        failed,
    )
    monkeypatch.setattr(distributed_setups, "measure", lambda quick: fake)
    path = tmp_path / "distributed.json"
    code, out, err = run_cli(capsys, "run", "distributed", "--quick", "--json", str(path))
    assert_usage_error(code, err, "parameter server: ps 0 of the cluster failed")
    for heading in (
        "distributed-step at 128",
        "distributed-step at 64",
        "distributed-allreduce at 2",
    ):
        assert f"one process, {heading}:" in out
    assert "parameter server" not in out
    # What ran is saved all the same.
    saved = [m.label for m in results.load_measurements(path)]
    assert saved == ["one process", "one process", "4 KiB"]
