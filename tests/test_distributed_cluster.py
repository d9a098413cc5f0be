"""A cluster on 127.0.0.1: every task gets its TF_CONFIG, a failure or the deadline stops them
all in one line, and no process or port outlives a run. The tasks here are plain Python, not
TensorFlow: the launcher is what is tested."""

import json
import os
import socket
import sys
import tempfile
import time

import psutil
import pytest

from perfguide.processes import distributed_cluster
from perfguide.processes.fresh import SCRATCH_PREFIX, ChildError

TWO_WORKERS = [distributed_cluster.Task("worker", 0), distributed_cluster.Task("worker", 1)]
#: Prints its TF_CONFIG, its pid and the cores it may use.
REPORT = (
    "import json, os; print(json.dumps({'config': json.loads(os.environ['TF_CONFIG']), "
    "'pid': os.getpid(), 'cores': sorted(os.sched_getaffinity(0))}))"
)
#: Worker 0 listens on its port for a minute; worker 1 fails at once.
ONE_FAILS = (
    "import json, os, socket, sys, time\n"
    "config = json.loads(os.environ['TF_CONFIG'])\n"
    "if config['task']['index'] == 1: sys.exit('worker 1 lost its peer')\n"
    "host, port = config['cluster']['worker'][0].split(':')\n"
    "s = socket.socket(); s.bind((host, int(port))); s.listen(); time.sleep(60)"
)


def python(code):
    return [sys.executable, "-c", code]


def test_the_spec_lists_each_role_in_index_order():
    tasks = [
        distributed_cluster.Task("worker", 1),
        distributed_cluster.Task("ps", 0),
        distributed_cluster.Task("worker", 0),
    ]
    spec = distributed_cluster.cluster_spec(tasks, [1001, 1002, 1003])
    assert spec == {"worker": ["127.0.0.1:1003", "127.0.0.1:1001"], "ps": ["127.0.0.1:1002"]}


def test_free_ports_are_distinct_and_bindable():
    ports = distributed_cluster.free_ports(4)
    assert len(set(ports)) == 4
    for port in ports:
        with socket.socket() as s:
            s.bind((distributed_cluster.HOST, port))


@pytest.mark.processes
def test_every_task_gets_its_own_tf_config_and_the_same_cluster():
    printed = distributed_cluster.run(TWO_WORKERS, python(REPORT), timeout_s=60)
    reports = {task: json.loads(out) for task, out in printed.items()}
    specs = {json.dumps(r["config"]["cluster"]) for r in reports.values()}
    assert len(specs) == 1
    for task, report in reports.items():
        assert report["config"]["task"] == {"type": "worker", "index": task.index}
    assert not _children_alive()


#: The forks of this process that ran Python's fork hooks, where JAX warns of a deadlock.
HOOKED_FORKS: list[int] = []
os.register_at_fork(before=lambda: HOOKED_FORKS.append(1))


@pytest.mark.processes
def test_a_task_pinned_to_a_core_runs_on_that_core_only():
    pinned = [distributed_cluster.Task("worker", 0, core=0)]
    before = len(HOOKED_FORKS)
    (out,) = distributed_cluster.run(pinned, python(REPORT), timeout_s=60).values()
    assert json.loads(out)["cores"] == [0]
    assert len(HOOKED_FORKS) == before  # pinned without Python code run in a forked child


@pytest.mark.processes
def test_one_failing_task_stops_the_others_and_frees_their_ports(monkeypatch):
    picked = []
    free_ports = distributed_cluster.free_ports
    monkeypatch.setattr(
        distributed_cluster, "free_ports", lambda n: picked.extend(free_ports(n)) or picked
    )
    start = time.monotonic()
    with pytest.raises(ChildError) as error:
        distributed_cluster.run(TWO_WORKERS, python(ONE_FAILS), timeout_s=60)
    assert str(error.value) == "worker 1 of the cluster failed: worker 1 lost its peer"
    assert time.monotonic() - start < 30  # worker 0's minute was not waited for
    assert not _children_alive()
    for port in picked:  # worker 0 listened on its port until it was stopped
        with socket.socket() as s:
            s.bind((distributed_cluster.HOST, port))


@pytest.mark.processes
def test_a_cluster_past_its_deadline_is_stopped():
    with pytest.raises(ChildError, match=r"took over 1 s \(worker 0, worker 1 still running\)"):
        distributed_cluster.run(TWO_WORKERS, python("import time; time.sleep(60)"), timeout_s=1)
    assert not _children_alive()


@pytest.mark.processes
def test_a_run_ends_when_the_tasks_that_do_not_serve_have_and_stops_the_servers():
    tasks = [distributed_cluster.Task("chief", 0), distributed_cluster.Task("ps", 0, serves=True)]
    serve_or_report = (
        "import json, os, time\n"
        "if json.loads(os.environ['TF_CONFIG'])['task']['type'] == 'ps': time.sleep(60)\n"
        "print('done')"
    )
    start = time.monotonic()
    printed = distributed_cluster.run(tasks, python(serve_or_report), timeout_s=60)
    assert printed == {tasks[0]: "done\n"}  # the server's minute was not waited for
    assert time.monotonic() - start < 30 and not _children_alive()
    # A server that stops before the others are done is a failure, and stops them.
    server_quits = (
        "import json, os, time\n"
        "if json.loads(os.environ['TF_CONFIG'])['task']['type'] == 'chief': time.sleep(60)"
    )
    with pytest.raises(ChildError, match="^ps 0 of the cluster failed: it stopped serving$"):
        distributed_cluster.run(tasks, python(server_quits), timeout_s=60)
    assert time.monotonic() - start < 60 and not _children_alive()


def _children_alive() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if p.status() != "zombie"]


@pytest.mark.processes
def test_what_tasks_leave_in_their_temporary_folders_goes_with_the_run(tmp_path, monkeypatch):
    # A cluster's servers are killed, so they cannot clean up after themselves.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tasks = [distributed_cluster.Task("chief", 0), distributed_cluster.Task("ps", 0, serves=True)]
    leave = (
        "import json, os, tempfile, time\n"
        "print(tempfile.mkdtemp(), flush=True)\n"
        "if json.loads(os.environ['TF_CONFIG'])['task']['type'] == 'ps': time.sleep(60)"
    )
    (left,) = distributed_cluster.run(tasks, python(leave), timeout_s=60).values()
    assert left.startswith(str(tmp_path / SCRATCH_PREFIX))
    assert list(tmp_path.iterdir()) == []
