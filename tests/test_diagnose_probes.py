"""What the probes find in known slow functions and a small model, in this process (counts,
not speed): the graph's facts (:mod:`perfguide.diagnose.worker.graph_facts`), retracing
(:mod:`perfguide.diagnose.worker.retracing`) and memory
(:mod:`perfguide.diagnose.worker.memory_series`)."""

from pathlib import Path

import diagnose_corpus

from perfguide import workloads
from perfguide.diagnose.target import InputSpec, Target
from perfguide.diagnose.worker import forms, graph_facts, memory_series, reasons, retracing

SLOW = Path(workloads.__file__).with_name("diagnose.py")  # the diagnose chapter's functions


def register(function, *inputs):
    target = Target(f"{SLOW}:{function}", tuple(map(InputSpec.parse, inputs)))
    return forms.register(target.to_json())


def test_a_tf_function_fed_python_numbers_retraces_and_the_fix_does_not():
    registered = register("scale", "float32[8,4]", "0.5")
    assert registered.answer.as_written == "tf-function"
    answer = retracing.retracing(registered)
    by_number = [
        call
        for label, call in zip(answer.varied, answer.calls[1:], strict=True)
        if "Python number" in label
    ]
    assert len(by_number) == 2 and all(call.traced for call in by_number)
    fixed = [call.traced for call in answer.fixed_calls[1:]]
    assert sum(fixed) < sum(call.traced for call in answer.calls[1:])


def test_a_python_loop_of_small_ops_is_many_ops_per_call():
    registered = register("row_norms", "float32[32,16]")
    assert registered.answer.variants == ("eager", "tf-function", "jit-compile")
    facts = graph_facts.facts(registered)
    assert facts.ops >= 32 * 3  # a slice, a norm's ops and an add per row
    assert facts.outside_graph == ()


def test_one_large_product_counts_its_flops_and_cannot_be_varied():
    registered = register("product", "float32[64,32]", "float32[32,16]")
    facts = graph_facts.facts(registered)
    assert facts.flops == 2 * 64 * 32 * 16
    assert facts.bytes == 4 * (64 * 32 + 32 * 16 + 64 * 16)
    # A changed batch no longer fits the product.
    assert retracing.retracing(registered).varied == ()


def test_a_numpy_function_is_named_with_its_source_line_and_cannot_be_compiled():
    registered = register("log_magnitude", "float32[16]")
    assert "jit-compile" in registered.answer.problems
    (outside,) = graph_facts.facts(registered).outside_graph
    line = next(
        i for i, text in enumerate(SLOW.read_text().splitlines(), 1) if "tf.numpy_function(" in text
    )
    assert outside.op == "PyFunc" and outside.where == f"{reasons.shown(str(SLOW))}:{line}"


def test_a_saved_models_forward_pass_is_probed(tmp_path):
    path = diagnose_corpus.save_classifier(tmp_path / "model.keras")
    registered = forms.register(Target(str(path), (InputSpec.parse("float32[8,4]"),)).to_json())
    facts = graph_facts.facts(registered)
    assert facts.flops >= 2 * 8 * (4 * 16 + 16 * 3)  # the two products of the forward pass
    retraced = retracing.retracing(registered)
    assert retraced.varied == ("batch doubled", "batch plus one")
    assert all(isinstance(call.bytes, int) for call in retraced.calls)
    held = memory_series.memory(registered, {"model-call": 40, "predict-on-batch": 20})
    assert [len(held[form].series) for form in held] == [21, 21]
    assert [held[form].every for form in held] == [2, 1]
