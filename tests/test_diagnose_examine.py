"""The reader's code registered in worker processes (:mod:`perfguide.diagnose.parent.examine`): each
worker holds the registration, times its workloads by name and hands it to the probes; one
started later for an undecided comparison is set up like the others."""

from pathlib import Path

import pytest
from never_settled import NeverSettled

from perfguide import workloads
from perfguide.diagnose.parent import examine
from perfguide.diagnose.target import WORKLOAD, InputSpec, Target
from perfguide.diagnose.worker_answers import GraphFacts
from perfguide.processes import pool
from perfguide.processes.fresh import ChildError

pytestmark = pytest.mark.processes

SLOW = Path(workloads.__file__).with_name("diagnose.py")  # the diagnose chapter's functions
ROW_NORMS = Target(f"{SLOW}:row_norms", (InputSpec.parse("float32[32,16]"),))


def test_a_worker_knows_the_readers_code_only_once_it_is_registered():
    with pool.Workers(1) as workers:
        with pytest.raises(ChildError, match="unknown workload 'diagnose'"):
            workers.run(WORKLOAD, quick=True)
        with pytest.raises(ChildError, match="nothing was prepared by") as raised:
            workers.call(examine.FACTS, prepared=examine.REGISTER)
        assert raised.value.usage
        (registered,) = workers.prepare(examine.REGISTER, spec=ROW_NORMS.to_json())
        assert registered["variants"] == ["eager", "tf-function", "jit-compile"]
        (facts,) = workers.call(examine.FACTS, prepared=examine.REGISTER)
        # The facts cross the pipe as JSON and are read back as the record the worker made.
        assert GraphFacts.from_json(facts).ops >= 32 * 3


def test_a_process_started_for_an_undecided_claim_is_set_up_like_the_others(monkeypatch):
    monkeypatch.setattr(pool, "SETTLE_PROCESSES", 2)
    with pool.Workers(1) as workers:
        workers.prepare(examine.REGISTER, spec=ROW_NORMS.to_json())
        # A claim that never settles: the second process must know the function.
        never = NeverSettled("eager")
        (eager,) = workers.run(WORKLOAD, ["eager"], quick=True, settle=[never])
        assert eager.processes == 2 and len(set(eager.process_ids)) == 2
