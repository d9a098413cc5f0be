"""Workers: fresh processes that time workloads, what they are given, the proof that a setting
took effect in them (their environment record and the cores a matmul kept busy), and how their
measurements are pooled process by process."""

import json
import os
import platform
import subprocess
import sys
import tempfile

import psutil
import pytest
from never_settled import NeverSettled

from perfguide.measure import cpu, environment, limits
from perfguide.measure.measurement import Measurement
from perfguide.processes import fresh, pool
from perfguide.processes.worker import Job

#: One 1000 x 1000 float32 product (~10-20 ms here): enough work for TensorFlow's intra-op pool
#: to keep every core it has busy; one variant, quick, so a worker takes seconds.
MATMUL = {"workload": "eager-matmul", "variants": ["eager"], "size": 1_000_000, "quick": True}


@pytest.fixture(autouse=True)
def no_process_settings_from_the_caller(monkeypatch):
    """Workers inherit TF_*: clear the settings under test so defaults are defaults."""
    for name in environment.PROCESS_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def two():
    """Two default workers, shared by the tests that only read what they measure (marked
    ``processes``: whichever of them runs first starts the workers)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name in environment.PROCESS_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        with pool.Workers(2) as workers:
            yield workers


def test_child_gets_tensorflow_settings_and_a_minimal_base(monkeypatch):
    passed = {
        "TF_ENABLE_ONEDNN_OPTS": "1",
        "XLA_FLAGS": "--xla_cpu_enable_fast_math=false",
        "CUDA_VISIBLE_DEVICES": "0",
        "PERFGUIDE_DEVICE": "cpu",
    }
    dropped = {
        "TF_CLI_ARGS": "-no-color",
        "AWS_PROFILE": "prod",
        "PYTHONBREAKPOINT": "pdb.set_trace",
    }
    for name, value in {**passed, **dropped, "LC_ALL": "C.UTF-8", "HOME": "/root"}.items():
        monkeypatch.setenv(name, value)
    env = fresh.child_environment()
    assert {name: env[name] for name in passed} == passed
    assert env["LC_ALL"] == "C.UTF-8" and env["HOME"] == "/root"
    assert env["PATH"] == os.environ["PATH"]
    assert not set(dropped) & set(env)
    for name in set(env) - set(fresh.CRASH_REPORT) - set(fresh.TELEMETRY_OFF):
        assert name in fresh.BASE_VARIABLES or name.startswith(
            fresh.BASE_PREFIXES + fresh.PASSED_PREFIXES
        ), name


def test_every_child_runs_with_onnx_runtimes_telemetry_off(monkeypatch):
    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "0")
    assert fresh.child_environment()["ORT_DISABLE_TELEMETRY"] == "1"
    assert fresh.child_environment({"TF_NUM_INTRAOP_THREADS": "1"})["ORT_DISABLE_TELEMETRY"] == "1"


def test_settings_win_over_the_parents_variables(monkeypatch):
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    env = fresh.child_environment({"TF_ENABLE_ONEDNN_OPTS": "0", "TF_NUM_INTRAOP_THREADS": "1"})
    assert env["TF_ENABLE_ONEDNN_OPTS"] == "0" and env["TF_NUM_INTRAOP_THREADS"] == "1"


@pytest.mark.parametrize("name", ["HOME", "OMP_NUM_THREADS", "TF_CLI_ARGS", "tf_foo"])
def test_settings_outside_the_passed_prefixes_are_refused(name):
    with pytest.raises(ValueError, match=f"cannot pass '{name}'"):
        fresh.child_environment({name: "1"})


@pytest.mark.processes
def test_tensorflow_loads_without_plotting_and_jax_still_loads_after_it():
    pytest.importorskip("jax")
    probe = (
        "import sys; from perfguide.processes import fresh; fresh.import_tensorflow_lean(); "
        "print(sys.modules['matplotlib'], 'jax' in sys.modules); import jax; print(jax.__name__)"
    )
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["None False", "jax"]


@pytest.mark.processes
def test_openvino_loads_and_converts_without_its_telemetry():
    pytest.importorskip("openvino")
    probe = (
        "import sys; from perfguide.processes import fresh; fresh.import_tensorflow_lean(); "
        "import openvino; from openvino.tools.ovc import telemetry_utils; "
        "print(sys.modules['openvino_telemetry'], telemetry_utils.tm.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "openvino.tools.ovc.telemetry_stub"]


def running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, waiting for the process that adopted it to read
    its exit, does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.processes
def test_a_stopped_worker_leaves_nothing_it_forked_running():
    with pool.Workers(1) as workers:
        (child,) = workers.call("tests.hung_fork:fork_a_hung_child")
        assert running(child)
    # Killed with the worker's process group: gone within moments, not its ten minutes.
    psutil.wait_procs([psutil.Process(child)] if running(child) else [], timeout=10)
    assert not running(child)


@pytest.mark.processes
def test_default_workers_leave_onednn_and_threads_to_tensorflow(two):
    env = two.environment
    # TensorFlow turns oneDNN on by default only on some CPUs: as it does in this process.
    assert env["onednn_enabled"] is environment.onednn_enabled()
    assert env["tf_intra_op_threads"] == 0 and env["tf_inter_op_threads"] == 0
    assert set(env["process_settings"].values()) == {"unset"}
    assert "machine_limits" not in env  # not asked for


@pytest.mark.processes
def test_a_workload_is_timed_in_every_worker_and_pooled_process_by_process(two):
    numpy, eager = two.run("eager-add", ["numpy", "eager"], size=1000, quick=True)
    for m in numpy, eager:
        assert (m.workload, m.size, m.device) == ("eager-add", 1000, "cpu")
        assert m.process_ids == two.names and len(set(m.process_ids)) == 2
        assert m.blocks_per_process == (5, 5) and len(m.process_median_s) == 2
        low, high = m.interval_s
        assert low <= m.median_s <= high


@pytest.mark.processes
def test_each_job_starts_at_the_next_worker(two):
    steps = []
    two.progress = steps.append
    try:
        for _ in range(2):
            two.run("eager-add", ["numpy"], size=10, quick=True)
    finally:
        two.progress = pool.no_progress
    turns = [step.split(":")[0] for step in steps if step.endswith("block 1")]
    assert turns[:2] == ["process 1 of 2", "process 2 of 2"] or turns[:2] == [
        "process 2 of 2",
        "process 1 of 2",
    ]
    assert turns[2:] == turns[:2][::-1]


@pytest.mark.processes
def test_every_worker_makes_a_jobs_calls_before_any_of_them_times_it(two, monkeypatch):
    steps = []
    monkeypatch.setattr(two, "progress", steps.append)
    two.run("eager-add", ["numpy", "eager"], size=10, quick=True)
    made = [i for i, step in enumerate(steps) if step.endswith("setting up the variants")]
    timed = [i for i, step in enumerate(steps) if "first call" in step]
    assert len(made) == 2 and max(made) < min(timed)


@pytest.mark.processes
def test_an_undecided_claim_gets_more_fresh_processes_up_to_the_most(two, monkeypatch):
    # A claim that never settles: its variant is timed in more fresh processes, up to the most
    # allowed.
    monkeypatch.setattr(pool, "SETTLE_PROCESSES", 4)
    # Seconds enough for any host to start and run the extra processes.
    monkeypatch.setattr(pool, "SETTLE_POOL_BUDGET_S", 600.0)
    monkeypatch.setattr(pool, "usable_cores", lambda: 2)
    steps = []
    monkeypatch.setattr(two, "progress", steps.append)
    never_settled = NeverSettled("numpy")
    numpy, eager = two.run("eager-add", ["numpy", "eager"], size=1000, quick=True,
                           settle=[never_settled])  # fmt: skip
    assert numpy.processes == 4 and numpy.process_ids[:2] == two.names
    assert eager.processes == 2  # not part of the claim: not timed again
    # The two extra processes were started together, one per core.
    assert [s for s in steps if s.startswith("starting")] == [
        "starting 2 more fresh processes for an undecided comparison"
    ]
    # The extra process is kept for the next undecided claim, and a settled claim needs none.
    (call,) = two.run("eager-call", ["python-function"], size=10, quick=True)
    assert call.workload == "eager-call" and call.processes == 2
    # Once the pool's runs have spent the pool's seconds together, an undecided claim stays so.
    monkeypatch.setattr(pool, "SETTLE_POOL_BUDGET_S", 0.0)
    steps.clear()
    (numpy,) = two.run("eager-add", ["numpy"], size=1000, quick=True, settle=[never_settled])
    assert numpy.processes == 2 and steps[-1] == "undecided after 0 s of more processes: left so"


@pytest.mark.processes
def test_a_worker_refuses_an_unknown_workload_in_one_line_and_serves_on(two):
    with pytest.raises(fresh.ChildError, match="unknown workload 'no-such-workload'") as raised:
        two.run("no-such-workload")
    assert raised.value.usage
    with pytest.raises(fresh.ChildError, match="unknown variant 'nope'"):
        two.run("eager-add", ["nope"])
    assert two.run("eager-add", ["numpy"], size=10, quick=True)


def test_a_job_survives_the_trip_to_the_worker():
    job = Job("eager-add", ("numpy", "eager"), 10, True, 7, False)
    assert Job.from_json(json.loads(json.dumps(job.to_json()))) == job


@pytest.mark.processes
def test_a_worker_under_onednn_opts_0_reports_onednn_off():
    with pool.Workers(1, settings={"TF_ENABLE_ONEDNN_OPTS": "0"}) as workers:
        env = workers.environment
    assert env["onednn_enabled"] is False
    assert env["process_settings"]["TF_ENABLE_ONEDNN_OPTS"] == "0"
    assert env["tf_env"]["TF_ENABLE_ONEDNN_OPTS"] == "0"


@pytest.mark.parametrize(
    ("name", "reported_threads"),
    [
        # perfguide sizes the pool through tf.config.threading, whose getter reports it.
        ("PERFGUIDE_INTRA_OP_THREADS", 1),
        # TensorFlow sizes the pool from the variable itself; its API still says 0 (default).
        ("TF_NUM_INTRAOP_THREADS", 0),
    ],
)
@pytest.mark.processes
def test_one_intra_op_thread_keeps_one_core_busy(name, reported_threads):
    with pool.Workers(1, settings={name: "1"}) as workers:
        env = workers.environment
        (one_thread,) = workers.run(**MATMUL)
    assert env["tf_intra_op_threads"] == reported_threads
    assert env["process_settings"][name] == "1"
    # At most one core and a fifth (Python and the timer's own thread add to the intra-op
    # thread); fewer where other work shares the cores, as other tests may on a small host.
    assert 0 < one_thread.cores_busy <= 1.2


@pytest.mark.processes
def test_the_default_pool_is_left_to_size_itself_and_its_busy_cores_are_recorded(two):
    (default,) = two.run(**MATMUL)
    # No thread setting reaches a default worker, so TensorFlow sizes its pool to the cores.
    # How many it then keeps busy depends on what else the host runs (a loaded 2-core VM kept
    # 0.99 busy once): the vectorization chapter measures that, with a verdict, not a test.
    assert two.environment["tf_intra_op_threads"] == 0
    settings = two.environment["process_settings"]
    assert settings["PERFGUIDE_INTRA_OP_THREADS"] == settings["TF_NUM_INTRAOP_THREADS"] == "unset"
    assert default.cores_busy is not None and default.cores_busy > 0


@pytest.mark.processes
def test_a_failing_worker_raises_with_its_own_reason():
    with pytest.raises(fresh.ChildError) as error:
        pool.Workers(1, settings={"PERFGUIDE_INTRA_OP_THREADS": "lots"})
    message = "PERFGUIDE_INTRA_OP_THREADS must be a whole number of threads (0: default)"
    assert message in str(error.value) and error.value.usage


@pytest.mark.processes
def test_a_worker_that_takes_too_long_is_stopped():
    # The triple loop at side 128: two million multiply-adds in Python a call, and a run makes
    # several calls, far over the half second allowed on any machine.
    workers = pool.Workers(1, timeout_s=0.5)
    with workers, pytest.raises(fresh.ChildError, match="took too long") as error:
        workers.run("matmul", ["python-loops"], size=128)
    assert not error.value.usage


@pytest.mark.processes
def test_what_a_worker_leaves_in_its_temporary_folder_goes_with_it(tmp_path, monkeypatch):
    # A worker ends without its exit handlers, so it cannot clean up after itself.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pool.Workers(1) as workers:
        (left,) = workers.call("tempfile:mkdtemp")
        assert left.startswith(str(tmp_path / fresh.SCRATCH_PREFIX)) and os.path.isdir(left)
    assert list(tmp_path.iterdir()) == []


def test_a_one_off_command_leaves_nothing_in_its_temporary_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv(environment.SHARED_TMPDIR_ENV, raising=False)
    command = [
        sys.executable,
        "-c",
        "import tempfile; from perfguide.measure import environment as e; "
        "print(tempfile.mkdtemp()); print(e.shared_temporary_folder())",
    ]
    done = fresh.run_command(command, fresh.child_environment(), 60, "a test")
    left, shared = done.stdout.split()
    assert left.startswith(str(tmp_path / fresh.SCRATCH_PREFIX))
    assert list(tmp_path.iterdir()) == []
    # What the processes of a run share stays in the temporary folder of the one that started them.
    assert shared == str(tmp_path)


@pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"),
    reason="oneDNN names its x86 kernels by their AVX sets; other CPUs name theirs otherwise",
)
@pytest.mark.processes
def test_the_instruction_report_names_what_onednn_and_the_build_use():
    report = fresh.tensorflow_instruction_sets()
    # oneDNN generates its kernels for the best vector set the CPU has; x86 machines have AVX+.
    assert "AVX" in report["onednn_kernels"]
    flags = {flag.lower().replace("_", "") for flag in cpu.cpu_vector_flags()}
    # What the build's generic code leaves unused is among what this CPU has.
    for name in report["not_compiled_for_elsewhere"].split():
        assert name.lower().replace("_", "") in flags, name


class FakeWorkers:
    """Stands in for a group of workers: records the order it was asked to run in."""

    def __init__(self, name, log, processes=3):
        self.group, self.log = name, log
        self.names = tuple(f"{name}-{i}" for i in range(processes))

    def begin_set_up(self, job):
        self.log.append((self.group, "set up"))

    def end_set_up(self):
        self.log.append((self.group, "ready"))

    def run_in(self, index, job):
        self.log.append((self.group, index))
        seconds = {"a": 1.0, "b": 2.0, "c": 3.0}[self.group]
        return [
            Measurement(
                variant, "call", 1, 1, 0.0, (seconds,) * 5, job.workload, 10,
                process_ids=(self.names[index],),
            )
            for variant in job.variants
        ]  # fmt: skip


def test_groups_with_different_settings_take_turns_in_a_latin_square():
    log = []
    groups = {name: FakeWorkers(name, log) for name in "abc"}
    measured = pool.run_across(groups, "w", "v", quick=True)
    rounds = [log[i : i + 3] for i in range(6, 15, 3)]
    assert [[group for group, _ in r] for r in rounds] == [list("abc"), list("bca"), list("cab")]
    assert all(index == turn for turn, r in enumerate(rounds) for _, index in r)
    assert [(m.label, m.median_s, m.processes) for m in measured] == [
        ("a", 1.0, 3),
        ("b", 2.0, 3),
        ("c", 3.0, 3),
    ]
    assert measured[1].process_ids == ("b-0", "b-1", "b-2")


def test_each_group_times_its_own_job_its_variants_pooled_across_its_processes():
    log = []
    groups = {name: FakeWorkers(name, log, 2) for name in "ab"}
    jobs = {"a": pool.job_of("wa", ("x", "y")), "b": pool.job_of("wb", ("x",))}
    timed = pool.take_turns(groups, jobs)
    # Every group's calls made side by side before any process times them.
    assert log[:4] == [("a", "set up"), ("b", "set up"), ("a", "ready"), ("b", "ready")]
    assert log[4:] == [("a", 0), ("b", 0), ("b", 1), ("a", 1)]
    assert [(m.label, m.workload, m.processes) for m in timed["a"]] == [
        ("x", "wa", 2),
        ("y", "wa", 2),
    ]
    assert [(m.label, m.workload) for m in timed["b"]] == [("x", "wb")]
    assert timed["a"][1].process_ids == ("a-0", "a-1")


def test_groups_of_different_sizes_are_refused():
    groups = {"a": FakeWorkers("a", [], 2), "b": FakeWorkers("b", [], 3)}
    with pytest.raises(ValueError, match="as many processes"):
        pool.run_across(groups, "w", "v")


@pytest.mark.processes
def test_a_worker_returns_what_a_function_returns_and_refuses_what_it_cannot_call(two):
    assert two.call("perfguide.measure.cpu:usable_cores") == [cpu.usable_cores()] * 2
    with pytest.raises(fresh.ChildError, match="cannot call perfguide.nowhere:f") as raised:
        two.call("perfguide.nowhere:f")
    assert raised.value.usage


@pytest.mark.processes
def test_a_worker_imports_tensorflow_without_matplotlib(two):
    # Keras would import it with TensorFlow: seconds of a build's CPU that nothing plots with.
    with pytest.raises(fresh.ChildError, match="import of matplotlib halted"):
        two.call_in(0, "importlib:import_module", name="matplotlib")


@pytest.mark.processes
def test_a_function_that_raises_in_a_worker_is_reported_and_the_worker_serves_on(two):
    with pytest.raises(fresh.ChildError, match="json:loads raised JSONDecodeError") as raised:
        two.call_in(0, "json:loads", s="{")
    assert not raised.value.usage  # the function failed, not the request
    with pytest.raises(fresh.ChildError, match="cannot call json:loads: missing a") as raised:
        two.call_in(0, "json:loads", text="[1]")
    assert raised.value.usage
    assert two.call_in(0, "json:loads", s="[1]") == [1]


@pytest.mark.processes
def test_calls_each_with_its_own_arguments_run_side_by_side_and_keep_the_workers_in_step(two):
    assert two.call_each("json:loads", [{"s": "[1]"}, {"s": "[2]"}]) == [[1], [2]]
    # One call fails: the other's answer is still read, so the next calls get their own.
    with pytest.raises(fresh.ChildError, match="json:loads raised JSONDecodeError"):
        two.call_each("json:loads", [{"s": "{"}, {"s": "[3]"}])
    assert two.call_each("json:loads", [{"s": "[4]"}]) == [[4]]
    assert two.call_in(1, "json:loads", s="[5]") == [5]
    with pytest.raises(ValueError, match="3 calls for 2 processes"):
        two.call_each("json:loads", [{"s": "1"}] * 3)


@pytest.mark.processes
def test_workers_read_the_limits_a_build_shares_instead_of_measuring(tmp_path, monkeypatch):
    # Values no machine measures, so that reading them cannot pass for measuring.
    shared = limits.MachineLimits(memory_bandwidth=1.0, peak_flops=2.0, how={"peak_flops": "x"})
    path = tmp_path / "machine_limits.json"
    path.write_text(json.dumps(shared.to_dict()))
    monkeypatch.setenv(limits.SHARED_FILE_ENV, str(path))
    with pool.Workers(1, limits=True) as workers:
        assert workers.machine_limits == shared
        assert workers.environment["timer_floor_s"] > 0


@pytest.mark.processes
def test_the_peak_can_be_timed_in_turns_with_the_variants(two):
    numpy, peak = two.run("eager-add", ["numpy"], size=10, quick=True, peak=True)
    assert peak.label == limits.PEAK and peak.process_ids == numpy.process_ids


@pytest.mark.processes
def test_a_quick_run_takes_one_process_and_no_more_for_an_undecided_claim(monkeypatch):
    monkeypatch.setenv(environment.QUICK_ENV, "1")
    with pool.Workers(3) as workers:
        never_settled = NeverSettled("numpy")
        (numpy,) = workers.run("eager-add", ["numpy"], size=10, blocks=9, settle=[never_settled])
        assert workers.environment["quick"] is True
    assert numpy.processes == 1 and numpy.blocks_per_process == (5,)  # quick blocks, not 9


class StartedProcess:
    """A worker process that notes when it was started, waited for and stopped."""

    events: list[str] = []

    def __init__(self, device, env, echo_stderr):
        self.name = ""
        self.setting = env.get("PERFGUIDE_TEST_GROUP")
        StartedProcess.events.append(f"start {self.setting}")

    def receive(self, timeout_s, progress):
        StartedProcess.events.append(f"ready {self.setting}")
        if self.setting == "broken":
            raise fresh.ChildError("no TensorFlow here")
        return {"ready": f"worker {self.setting}"}

    def let_go(self):
        pass

    def stop(self):
        StartedProcess.events.append(f"stop {self.setting}")


def test_groups_started_side_by_side_all_start_before_any_is_waited_for(monkeypatch):
    monkeypatch.setattr(pool, "_Worker", StartedProcess)
    monkeypatch.setattr(StartedProcess, "events", [])
    groups = pool.side_by_side(
        {g: {"processes": 2, "settings": {"PERFGUIDE_TEST_GROUP": g}, "quick": False} for g in "ab"}
    )
    assert (
        StartedProcess.events
        == ["start a"] * 2 + ["start b"] * 2 + ["ready a"] * 2 + ["ready b"] * 2
    )
    for group in groups.values():
        group.close()


def test_groups_started_side_by_side_are_all_stopped_if_one_never_gets_ready(monkeypatch):
    monkeypatch.setattr(pool, "_Worker", StartedProcess)
    monkeypatch.setattr(StartedProcess, "events", [])
    groups = {g: {"processes": 1, "settings": {"PERFGUIDE_TEST_GROUP": g}} for g in ("a", "broken")}
    with pytest.raises(fresh.ChildError, match="no TensorFlow"):
        pool.side_by_side(groups)
    assert {"stop a", "stop broken"} <= set(StartedProcess.events)


def test_groups_started_side_by_side_are_stopped_if_a_later_group_cannot_start(monkeypatch):
    monkeypatch.setattr(pool, "_Worker", StartedProcess)
    monkeypatch.setattr(StartedProcess, "events", [])
    groups = {
        "a": {"processes": 1, "settings": {"PERFGUIDE_TEST_GROUP": "a"}},
        "none": {"processes": 0},
    }
    with pytest.raises(ValueError, match="at least one process"):
        pool.side_by_side(groups)
    assert StartedProcess.events == ["start a", "stop a"]
