"""``python -m perfguide.processes.cluster_task JOB``: one task of a cluster, or one fresh process
with a strategy of its own, doing the ``JOB`` (JSON) and printing its result as JSON.

A job names a strategy (see :data:`perfguide.workloads.distributed.STRATEGIES`), a global batch
and the MLP's hidden width, and what to do: ``first-update``, one training step and the
weights it leaves (to check that every strategy trains as one process does); or ``time``, one
distributed workload's ``variants`` timed as the runner times them, under ``strategy``, in
lockstep with the other tasks.
"""

from __future__ import annotations

import json
import sys

from perfguide.workloads import distributed


def first_update(job: dict) -> dict:
    training = distributed.Training(
        distributed.make_strategy(job["strategy"]), job["batch"], job["hidden"]
    )
    loss = float(training.step())
    return {"loss": loss, "weights": [w.tolist() for w in training.weights()]}


def time_variant(job: dict) -> dict:
    from perfguide.measure import runner

    workload = {w.name: w for w in distributed.WORKLOADS}[job["workload"]]
    # Made before the runner places ops on a device: collective ops and logical devices are
    # set only before TensorFlow's runtime starts.
    distributed.strategy_of_this_process(job["strategy"])
    measured = runner.run(workload, job["variants"], size=job["size"], blocks=job["blocks"])
    return {"measurements": [m.timings() for m in measured]}


JOBS = {"first-update": first_update, "time": time_variant}


def main(argv: list[str]) -> None:
    job = json.loads(argv[1])
    print(json.dumps(JOBS[job["do"]](job)))


if __name__ == "__main__":
    main(sys.argv)
