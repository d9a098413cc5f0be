"""The workers' answers as typed records: read back from JSON only when every field is one the
record knows and none it needs is missing, and several processes' facts pooled into one."""

import json

import pytest

from perfguide.diagnose.worker_answers import (
    GraphFacts,
    LeavesGraph,
    OnBackend,
    Registration,
    ResidentSeries,
    Retracing,
    TracedCall,
    TraceFile,
    checked,
)
from perfguide.processes.worker import _fields


def test_a_record_crosses_as_json_and_reads_back_the_same():
    facts = GraphFacts(
        outside_graph=(LeavesGraph("PyFunc", "f/PyFunc", "mine.py:3"),),
        ops=12,
        op_types={"MatMul": 2, "Add": 10},
        op_time_s=1e-4,
        trace=TraceFile(path="/tmp/trace"),
    )
    sent = json.loads(json.dumps({"result": facts}, default=_fields))["result"]
    assert GraphFacts.from_json(sent) == facts


def test_a_field_the_record_does_not_know_or_needs_is_refused():
    with pytest.raises(ValueError, match=r"GraphFacts answer with unknown \['opps'\]"):
        GraphFacts.from_json({"opps": 3})
    with pytest.raises(
        ValueError, match=r"LeavesGraph answer with unknown \[\], missing \['where'\]"
    ):
        checked(LeavesGraph, {"op": "PyFunc", "name": "f"})


def test_pooled_facts_take_each_time_s_median_and_any_print_while_tracing():
    first = GraphFacts(ops=10, eager_op_s=1e-6, op_time_s=None, trace=TraceFile(path="p"))
    second = GraphFacts(ops=10, eager_op_s=3e-6, op_time_s=2e-4, prints_only_when_tracing=True)
    third = GraphFacts(ops=10, eager_op_s=2e-6, graph_error="it calls .numpy()")
    pooled = GraphFacts.pooled([first, second, third])
    assert (pooled.ops, pooled.eager_op_s, pooled.op_time_s) == (10, 2e-6, 2e-4)
    assert pooled.prints_only_when_tracing and pooled.graph_error == "it calls .numpy()"
    assert pooled.trace == TraceFile(path="p")  # the first process keeps the trace
    assert GraphFacts.pooled([]) == GraphFacts()


def test_a_trace_answer_crosses_the_pipe_as_a_record():
    sent = GraphFacts(ops=3, trace=TraceFile(error="no trace written: OSError: full"))
    read = GraphFacts.from_json(json.loads(json.dumps(sent, default=_fields)))
    assert read == sent and read.trace.error.endswith("full")
    assert GraphFacts.from_json({"ops": 3}).trace is None
    with pytest.raises(ValueError, match=r"TraceFile answer with unknown \['where'\]"):
        GraphFacts.from_json({"trace": {"where": "p"}})


def test_a_retracing_answer_reads_back_its_calls_as_records():
    sent = {
        "varied": ["batch doubled"],
        "calls": [
            {"seconds": 0.2, "traced": True, "bytes": 4096},
            {"seconds": 0.1, "traced": True},
        ],
        "steady_s": 1e-4,
        "fixed_error": "it needs a static shape",
    }
    answer = Retracing.from_json(sent)
    assert answer.varied == ("batch doubled",) and answer.fixed_calls == ()
    assert answer.calls == (TracedCall(0.2, True, 4096), TracedCall(0.1, True))
    with pytest.raises(ValueError, match=r"TracedCall answer with unknown \['s'\]"):
        Retracing.from_json({"calls": [{"s": 0.2, "seconds": 0.2, "traced": False}]})


def test_a_memory_answer_reads_back_each_forms_series():
    answer = {"predict": {"series": [1, 2, 3], "every": 10}}
    assert ResidentSeries.by_form(answer) == {"predict": ResidentSeries((1, 2, 3), 10)}
    with pytest.raises(ValueError, match=r"missing \['every'\]"):
        ResidentSeries.by_form({"predict": {"series": [1]}})


def test_a_registration_reads_back_its_lists_as_tuples_and_its_optional_fields_unset():
    sent = {"variants": ["eager", "tf-function"], "problems": {}, "as_written": "eager"}
    registration = Registration.from_json(sent)
    assert registration.variants == ("eager", "tf-function") and registration.training == ()
    assert registration.other_batch is None and registration.kind == "function"
    wired = json.loads(json.dumps({"result": registration}, default=_fields))["result"]
    assert Registration.from_json(wired) == registration
    with pytest.raises(ValueError, match=r"missing \['variants'\]"):
        Registration.from_json({"problems": {}, "as_written": "eager"})


def test_a_backend_that_did_not_run_the_model_says_why_and_registers_nothing():
    answer = OnBackend.from_json({"backend": "jax", "why": "a custom TensorFlow op"})
    assert (answer.forms, answer.outputs, answer.why) == ((), None, "a custom TensorFlow op")
    with pytest.raises(ValueError, match=r"missing \['backend'\]"):
        OnBackend.from_json({"forms": ["predict"]})
