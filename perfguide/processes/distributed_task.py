"""``python -m perfguide.processes.distributed_task JOB``: one task of a cluster, or one fresh
process with a strategy of its own, doing the ``JOB`` (JSON) and printing its result as JSON.

A job names a strategy (see :data:`perfguide.workloads.distributed.STRATEGIES`), a global batch
and the MLP's hidden width, and what to do: ``first-update``, one training step and the
weights it leaves (to check that every strategy trains as one process does); ``examples-seen``,
which examples this worker trains on in one pass over the data, shared out as the job's
``sharding`` says (:mod:`perfguide.workloads.distributed_input`); or ``time``: each
of its ``timings`` (a distributed workload, its variants and a size) timed in turn as the runner
times them, under ``strategy``, in lockstep with the other tasks: one cluster start serves them
all.
"""

from __future__ import annotations

import json
import sys

from perfguide.processes.fresh import import_tensorflow_lean


def first_update(job: dict) -> dict:
    from perfguide.workloads import distributed

    reduction = job.get("reduction", distributed.OPTIMIZERS)
    training = distributed.training(job["strategy"], job["batch"], job["hidden"], reduction)
    loss = float(training.step())
    return {"loss": loss, "weights": [w.tolist() for w in training.weights()]}


def time_in_turn(job: dict) -> dict:
    from perfguide.measure import runner
    from perfguide.workloads import distributed, distributed_input

    workloads = {w.name: w for w in (*distributed.WORKLOADS, *distributed_input.WORKLOADS)}
    # Made before the runner places ops on a device: collective ops and logical devices are
    # set only before TensorFlow's runtime starts.
    distributed.strategy_of_this_process(job["strategy"])
    measured = [
        m
        for timing in job["timings"]
        for m in runner.run(
            workloads[timing["workload"]],
            timing["variants"],
            size=timing["size"],
            blocks=job["blocks"],
        )
    ]
    return {"measurements": [m.timings() for m in measured]}


def examples_seen(job: dict) -> dict:
    from perfguide.workloads import distributed, distributed_input

    strategy = distributed.strategy_of_this_process(job["strategy"])
    return {"seen": distributed_input.examples_seen(strategy, job["sharding"], job["batch"])}


JOBS = {"first-update": first_update, "time": time_in_turn, "examples-seen": examples_seen}


def main(argv: list[str]) -> None:
    import_tensorflow_lean()
    from perfguide.workloads import distributed

    job = json.loads(argv[1])
    if distributed.serves_here(job["strategy"]):
        distributed.serve()
        return
    print(json.dumps(JOBS[job["do"]](job)))


if __name__ == "__main__":
    main(sys.argv)
