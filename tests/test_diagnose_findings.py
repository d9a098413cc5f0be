"""The logic of ``perfguide diagnose``'s verdicts (:mod:`perfguide.diagnose.parent.findings`,
with the bound and the advice it puts together) and how
they are shown (:mod:`perfguide.diagnose.parent.render`), on made-up measurements: no speed is
asserted, and no process is started."""

import dataclasses
import json
import re
import resource

import pytest

from perfguide.diagnose import api
from perfguide.diagnose.parent import findings, render
from perfguide.diagnose.parent.advice import FORM_ADVICE
from perfguide.diagnose.parent.diagnosis import (
    ARITHMETIC,
    AS_WRITTEN,
    BACKEND,
    CALLED,
    TRACING,
    change_kind,
    changed_to,
)
from perfguide.diagnose.parent.evidence import BackendTrial, Evidence
from perfguide.diagnose.target import WORKLOAD
from perfguide.diagnose.worker_answers import (
    GraphFacts,
    Registration,
    ResidentSeries,
    Retracing,
    TracedCall,
)
from perfguide.measure.limits import PEAK, PEAK_FLOPS, MachineLimits
from perfguide.measure.measurement import Measurement
from perfguide.report.format import format_bytes
from perfguide.report.publishing import results
from perfguide.report.publishing.answers import Change, Recommendation
from perfguide.report.publishing.chapters import chapter
from perfguide.report.publishing.page_checks import unseparated_winners
from perfguide.report.verdicts.claims import Claim, Faster
from perfguide.report.verdicts.ranking import AHEAD

# -- The verdicts' logic, on made-up measurements -----------------------------------------------

LIMITS = MachineLimits(memory_bandwidth=20e9, peak_flops=100e9, how={})


def timed(label, seconds, processes=3, unit="call"):
    """A form timed at ``seconds`` per ``unit`` in each of ``processes`` processes, tightly."""
    blocks = tuple(seconds * (1 + 0.01 * (i % 3 - 1)) for i in range(5 * processes))
    ids = tuple(f"p{i}" for i in range(processes))
    return Measurement(
        label, unit, 1, 1, seconds * 10, blocks, WORKLOAD, 1, "cpu",
        blocks_per_process=(5,) * processes, process_ids=ids,
    )  # fmt: skip


def evidence(forms, *, facts=None, registered=None, retracing=(), peak_s=None, steps=None):
    measurements = [timed(label, s) for label, s in forms.items()]
    measurements += [timed(label, s, unit="step") for label, s in (steps or {}).items()]
    if peak_s is not None:
        measurements.append(timed(PEAK, peak_s))
    base_facts = {
        "ops": 10, "flops": 1000, "bytes": 1000, "outside_graph": [],
        "eager_op_s": 10e-6, "op_time_s": None,
    }  # fmt: skip
    return Evidence(
        target="f(float32[4])",
        measurements=measurements,
        registered=Registration.from_json(
            registered or {"variants": list(forms), "problems": {}, "as_written": "eager"}
        ),
        facts=[GraphFacts.from_json(base_facts | (facts or {}))] * 3,
        retracing=list(retracing),
        limits=LIMITS,
    )


def test_many_small_ops_make_it_overhead_bound_and_tf_function_the_change_worth_most():
    found = findings.assess(
        evidence(
            {"eager": 2.5e-3, "tf-function": 250e-6, "jit-compile": 200e-6},
            facts={"ops": 200, "op_time_s": 50e-6},
        )
    )
    assert found.bound == "overhead"
    assert found.best.advice.startswith("Compile it") and found.best.claim.verdict == "HELD"
    assert [a.claim.verdict for a in found.advice] == ["HELD", "HELD"]
    assert "overhead-bound" in render.short_answer(
        found
    ) and "jit_compile=True): jit-compile was 12.5x faster than eager here" in render.short_answer(
        found
    )
    assert any(f.what.startswith("Ops per call") and "80.0 %" in f.measured for f in found.findings)


def test_work_near_the_peak_makes_it_compute_bound_and_no_form_pays():
    # 2 GFLOP in 30 ms: 67 % of a 100 GFLOP/s peak; the peak's product timed in turns with it.
    found = findings.assess(
        evidence(
            {"eager": 30e-3, "tf-function": 30e-3, "jit-compile": 30e-3},
            facts={"flops": 2e9, "op_time_s": 29e-3},
            peak_s=PEAK_FLOPS / 100e9,
        )
    )
    assert found.bound == "compute" and found.best is None
    assert "eager, the form with the smallest median here, reaches 66.7 % of the measured peak" in (
        render.short_answer(found)
    )
    assert [a.claim.verdict for a in found.advice[:1]] == ["HELD"]
    assert found.advice[0].advice.startswith("Do less arithmetic")
    # A share of the peak says nothing of a lower precision, which diagnose never times.
    assert not [a for a in found.advice if "narrower" in a.advice or "precision" in a.advice]
    assert {a.claim.verdict for a in found.advice[1:]} == {"INCONCLUSIVE"}


def test_ops_below_the_limits_with_little_overhead_are_ops_bound():
    found = findings.assess(
        evidence({"eager": 1e-3, "tf-function": 1e-3}, facts={"ops": 3, "op_time_s": 0.9e-3})
    )
    assert found.bound == "ops" and found.best is None
    assert "No change of how it is called made it clearly faster" in render.short_answer(found)


def retraced(traced, fixed_traced, seconds=0.1, fixed_seconds=0.01, steady=1e-4):
    """One process's retracing answer: a first call, then two varied calls."""
    return Retracing(
        varied=("argument 2 as the Python number 1.5", "argument 2 as the Python number 2.5"),
        calls=(TracedCall(seconds, True), *[TracedCall(seconds, traced)] * 2),
        fixed_calls=(TracedCall(seconds, True), *[TracedCall(fixed_seconds, fixed_traced)] * 2),
        steady_s=steady,
    )


def test_retracing_is_named_priced_and_its_fix_measured():
    forms = ["eager", "tf-function"]
    found = findings.assess(
        evidence(
            {"eager": 1e-3, "tf-function": 1e-4},
            registered={"variants": forms, "problems": {}, "as_written": "tf-function"},
            retracing=[retraced(True, False)] * 3,
        )
    )
    (finding,) = [f for f in found.findings if f.what.startswith("Retracing")]
    assert "2 of 2 varied calls traced anew" in finding.measured
    assert "each retrace costing 99.9 ms (999 steady calls)" in finding.measured
    (fix,) = [a for a in found.advice if "reduce_retracing" in a.advice]
    assert fix.claim.verdict == "HELD" and fix.chapter == "tf_function"


def test_a_tf_function_slower_than_its_eager_python_is_told_to_drop_it():
    forms = ["eager", "tf-function"]
    found = findings.assess(
        evidence(
            {"eager": 40e-6, "tf-function": 300e-6},
            registered={"variants": forms, "problems": {}, "as_written": "tf-function"},
        )
    )
    assert found.best.advice == "Call it eagerly: drop tf.function"
    assert found.best.claim.effect == "7.50x faster"


def test_no_retrace_means_no_retracing_advice():
    found = findings.assess(
        evidence({"eager": 1e-3, "tf-function": 1e-4}, retracing=[retraced(False, False, 0.01)] * 3)
    )
    assert any("0 of 2 varied calls" in f.measured for f in found.findings)
    assert not [a for a in found.advice if "reduce_retracing" in a.advice]


def test_ops_outside_the_graph_and_forms_left_out_are_findings():
    outside = [{"op": "EagerPyFunc", "name": "EagerPyFunc", "where": "mine.py:7"}]
    registered = {
        "variants": ["eager", "tf-function"],
        "problems": {"jit-compile": "InvalidArgumentError: EagerPyFunc is not compilable"},
        "as_written": "eager",
    }
    found = findings.assess(
        evidence(
            {"eager": 1e-3, "tf-function": 9e-4},
            facts={"outside_graph": outside},
            registered=registered,
        )
    )
    whats = [f.what for f in found.findings]
    assert whats[0] == "EagerPyFunc leaves the graph for Python"
    assert "mine.py:7" in found.findings[0].measured
    assert "jit-compile not timed" in whats


def test_a_model_is_judged_per_call_and_per_training_step_against_predict_and_fit():
    registered = {
        "kind": "model",
        "variants": ["predict", "model-call", "predict-on-batch", "tf-function"],
        "as_written": "predict",
        "training": ["fit", "train-on-batch", "custom-step"],
        "training_as_written": "fit",
        "problems": {},
    }
    measured = evidence(
        {"predict": 30e-3, "model-call": 1e-3, "predict-on-batch": 1.2e-3, "tf-function": 0.5e-3},
        steps={"fit": 20e-3, "train-on-batch": 5e-3, "custom-step": 4e-3},
        registered=registered,
        facts={"op_time_s": 0.1e-3},
    )
    found = findings.assess(measured)
    assert found.best.advice == "Call model(x) inside a tf.function"
    assert found.best.claim.effect == "60.0x faster"
    (custom,) = [a for a in found.advice if a.advice == "Train with a custom tf.function step"]
    assert custom.claim.effect == "5.00x faster" and custom.chapter == "training_loop"
    text = render.text(found, measured)
    assert "time per call" in text and "time per step" in text and "vs fit" in text
    assert "Recommendations, each measured on this model:" in text


def served_at_two_batches(litert_s):
    """A model's forms at the reader's batch of 64 (LiteRT taking ``litert_s``) and at one
    request a call."""
    registered = {
        "kind": "model",
        "variants": ["predict", "model-call", "litert"],
        "as_written": "predict",
        "problems": {},
        "differences": {"litert": 2e-7},
        "batch": 64,
        "other_batch": 1,
    }
    measured = evidence(
        {"predict": 30e-3, "model-call": 5e-3, "litert": litert_s}, registered=registered
    )
    one_request = {"predict": 20e-3, "model-call": 1e-3, "litert": 10e-6}
    return dataclasses.replace(
        measured,
        other_batch=[timed(label, s, unit="request") for label, s in one_request.items()],
    )


def test_the_fastest_form_is_named_at_the_readers_batch_and_at_one_request():
    measured = served_at_two_batches(litert_s=8e-3)
    found = findings.assess(measured)
    fastest = {f.what: f.measured for f in found.findings if f.what.startswith("Served fastest")}
    assert list(fastest) == ["Served fastest at a batch of 1", "Served fastest at your batch of 64"]
    assert re.match(
        r"litert was 2,000x faster than predict at a batch of 1 \(rerun interval: [\d,.]+x to "
        r"[\d,.]+x faster; medians 10\.0 µs and 20\.0 ms a request\); its answers within "
        r"2\.0e-07 of predict's",
        fastest["Served fastest at a batch of 1"],
    )
    served = fastest["Served fastest at your batch of 64"]
    assert served.startswith("model-call was 6.00x faster than predict at your batch of 64")
    assert "time per request" in render.text(found, measured)


def memory_found(runs):
    """The memory findings of a model whose forms held ``runs`` (one dict of series a process)."""
    registered = {
        "kind": "model",
        "variants": ["predict", "model-call"],
        "as_written": "predict",
        "problems": {},
    }
    measured = evidence({"predict": 30e-3, "model-call": 1e-3}, registered=registered)
    found = findings.assess(dataclasses.replace(measured, memory=runs))
    return [f for f in found.findings if f.kind == "memory"]


def series(rate, start=50e6):
    """Bytes held every 10 calls from ``start``, changing ``rate`` bytes a call: 20 samples after
    the first, the slope fitted to the last 11 (100 calls)."""
    return ResidentSeries(tuple(int(start + rate * 10 * i) for i in range(21)), every=10)


#: A change of memory a call with a minus sign: never shown, whatever the series did.
NEGATIVE_RATE = re.compile(r"-[\d.]+ [kMG]?B a call")


def test_memory_that_grows_is_a_finding_with_the_chapters_fix():
    runs = [{"predict": series(20e3 + 1e3 * k), "model-call": series(k)} for k in range(3)]
    memory = memory_found(runs)
    assert memory[0].what == "Memory after warm-up"
    # Mean 21 kB, spread 1 kB, t(2) = 4.303: 21 kB +- 4.303 * 1 kB * sqrt(4 / 3), all above zero.
    assert memory[0].measured.startswith(
        "predict grows: 21.0 kB a call (16.0 kB to 26.0 kB in the next process)"
    )
    assert [f.what for f in memory[1:]] == ["Memory grows with predict"]
    assert "fix: call model(x) or predict_on_batch" in memory[1].measured
    assert "Why does my TensorFlow process keep growing?" in memory[1].measured
    assert not NEGATIVE_RATE.search(memory[0].measured)


def test_memory_given_back_after_warm_up_is_settling_never_a_negative_rate():
    # As the user report had it: predict shedding about 103 kB a call in every process.
    runs = [{"predict": series(-103e3 + 1e3 * k), "model-call": series(k)} for k in range(3)]
    memory = memory_found(runs)
    # The median slope, -102 kB a call, over the 100 calls it was fitted to.
    assert "predict settling: gave back 10.2 MB over its last 100 calls" in memory[0].measured
    assert "predict grows" not in memory[0].measured
    assert not NEGATIVE_RATE.search(memory[0].measured)
    assert [f.what for f in memory] == ["Memory after warm-up"]


def test_memory_whose_next_process_could_grow_or_shrink_is_flat():
    runs = [{"predict": series(20 * k - 30), "model-call": series(0)} for k in range(3)]
    (memory,) = memory_found(runs)
    # predict: mean -10 B, spread 20 B: -10 B +- 99.4 B spans zero; its reach is 109 B.
    assert "predict flat: within ±109 B a call" in memory.measured
    # model-call: no spread at all, so one page over its 100 calls either side.
    page = format_bytes(resource.getpagesize() / 100)
    assert f"model-call flat: within ±{page} a call" in memory.measured
    assert not NEGATIVE_RATE.search(memory.measured)


def test_memory_from_one_process_says_what_its_series_did_with_no_interval():
    (memory,) = memory_found([{"predict": series(-103e3), "model-call": series(2e3)}])
    assert memory.measured == (
        "predict, one process (no interval): gave back 10.3 MB over its last 100 calls; "
        "model-call, one process (no interval): grew 200 kB over its last 100 calls"
    )


def test_the_text_html_and_results_file_carry_the_diagnosis(tmp_path):
    measured = evidence({"eager": 2.5e-3, "tf-function": 250e-6}, facts={"ops": 200})
    found = findings.assess(measured)
    text = render.text(found, measured, "https://example.org/guide")
    assert text.startswith("Short answer: f(float32[4]) is overhead-bound")
    assert "https://example.org/guide/auto_examples/tf_function/plot_tf_function.html" in text
    page = render.html_page(found, measured)
    assert page.startswith("<!DOCTYPE html>") and "data:image/svg+xml;base64," in page
    diagnosis = api.Diagnosis(found, measured, {"tensorflow": "2.21.0"})
    assert str(diagnosis) == render.text(found, measured)
    inline = diagnosis._repr_html_()
    assert inline.startswith('<div class="perfguide-diagnosis">') and "<h4>Findings</h4>" in inline
    assert "<body" not in inline and "<html" not in inline  # inline: nothing of a page
    path = tmp_path / "diagnosis.json"
    diagnosis.save_json(path)
    assert [m.label for m in results.load_measurements(path)] == ["eager", "tf-function"]
    assert json.loads(path.read_text()) == diagnosis.to_json()
    assert diagnosis.to_json()["diagnosis"]["bound"] == "overhead"


def test_only_held_claims_are_advice_and_a_slower_form_means_keep_the_code():
    # tf.function 4x slower than the eager function: measured, never advised.
    measured = evidence({"eager": 100e-6, "tf-function": 400e-6}, facts={"ops": 3})
    found = findings.assess(measured)
    assert change_kind(found.best) == "keep" and found.best.gain == 1
    assert "The best measured change is none: keep it as written (eager)" in render.short_answer(
        found
    )
    text = render.text(found, measured)
    recommended = text.split("Recommendations, each measured on this function:\n")[1]
    assert recommended.startswith("- Keep it as written (eager): no other form was faster")
    assert (
        "Did not hold here:\n- Wrap it in tf.function: tf-function was 4.00x slower than eager"
        in text
    )
    page = render.html_page(found, measured)
    assert "<h2>Did not hold here</h2>" in page
    advice = json.loads(json.dumps(render.to_json(found)))["advice"]
    assert [(a["kind"], a["advised"]) for a in advice] == [("keep", True), ("form", False)]


def test_retracing_fix_is_no_advice_while_no_graph_form_pays():
    measured = evidence({"eager": 1e-4, "tf-function": 1e-3}, retracing=[retraced(True, False)] * 3)
    found = findings.assess(measured)
    (finding,) = [f for f in found.findings if f.kind == "retracing"]
    assert finding.measured.endswith("moot while no graph form is faster than the code as written")
    assert not [a for a in found.advice if change_kind(a) == "retracing"]


def test_retracing_fix_follows_a_graph_form_that_pays_without_outranking_it():
    measured = evidence({"eager": 1e-3, "tf-function": 1e-4}, retracing=[retraced(True, False)] * 3)
    found = findings.assess(measured)
    (fix,) = [a for a in found.advice if change_kind(a) == "retracing"]
    assert fix.advised and fix.gain == 0 and fix.advice.startswith("In the tf.function, pass")
    assert found.best.advice == "Wrap it in tf.function"


def test_a_tf_function_whose_eager_form_is_advised_gets_its_retracing_fix_as_a_condition():
    # The code as written is a tf.function, and eager calls are advised: "drop tf.function" and
    # a bare "use reduce_retracing=True" would contradict each other.
    registered = {"variants": ["eager", "tf-function"], "problems": {}, "as_written": "tf-function"}
    found = findings.assess(
        evidence(
            {"eager": 1e-4, "tf-function": 1e-3},
            registered=registered,
            retracing=[retraced(True, False)] * 3,
        )
    )
    assert found.best.advice == "Call it eagerly: drop tf.function"
    (fix,) = [a for a in found.advice if change_kind(a) == "retracing"]
    assert fix.advice.startswith("Where you keep the tf.function, pass tensors")


def test_a_fix_that_needs_unknown_shapes_says_so_and_advises_padding():
    run = dataclasses.replace(
        retraced(True, False), fixed_calls=(), fixed_error="it needs a static shape"
    )
    registered = {"variants": ["eager", "tf-function"], "problems": {}, "as_written": "tf-function"}
    found = findings.assess(
        evidence({"eager": 1e-3, "tf-function": 1e-4}, registered=registered, retracing=[run] * 3)
    )
    (static,) = [f for f in found.findings if f.kind == "static-shape"]
    assert "it needs a static shape" in static.measured and "pad inputs" in static.measured
    assert not [a for a in found.advice if change_kind(a) == "retracing"]


def test_a_function_that_cannot_be_traced_is_diagnosed_eagerly():
    graph_error = "it calls .numpy(), which reads a value back to Python (at mine.py:3)"
    facts = {"graph_error": graph_error, "ops": 40, "op_time_s": 0.2e-3, "flops": None}
    registered = {
        "variants": ["eager"],
        "problems": {"tf-function": graph_error, "jit-compile": graph_error},
        "as_written": "eager",
    }
    found = findings.assess(evidence({"eager": 1e-3}, facts=facts, registered=registered))
    assert render.short_answer(found).startswith(
        f"f(float32[4]) cannot run as a graph: {graph_error}."
    )
    kinds = [f.kind for f in found.findings]
    assert kinds[0] == "not-a-graph" and "limits" not in kinds
    (call,) = [f for f in found.findings if f.kind == "eager-call"]
    assert "200 µs of a 1.00 ms call (20.0 %" in call.measured and "800 µs" in call.measured
    assert found.best is None and found.advice == []


def test_bytes_past_the_memory_bandwidth_are_set_against_the_cache_rate():
    # 10 MB per call in 100 µs is 100 GB/s: past the 20 GB/s memory, within a 200 GB/s cache.
    limits = dataclasses.replace(LIMITS, cache_bandwidth=200e9)
    measured = dataclasses.replace(
        evidence(
            {"eager": 1e-3, "tf-function": 100e-6, "jit-compile": 50e-6},
            facts={"bytes": 10_000_000, "io_bytes": 1_000_000, "flops": 1_000_000},
        ),
        limits=limits,
    )
    (share,) = [f for f in findings.assess(measured).findings if f.kind == "limits"]
    assert "tf-function reaches" in share.measured
    assert "moves 10,000,000 bytes at 50.0 % of the measured cache copy rate" in share.measured
    # The fused kernel moves its arguments and results: 1 MB in 50 µs, 100 % of 20 GB/s.
    assert "moves 1,000,000 bytes at 100 % of the measured memory bandwidth" in share.measured
    assert "the data stays in the caches" in share.measured


def test_python_in_a_graph_call_is_priced():
    outside = [{"op": "PyFunc", "name": "PyFunc", "where": "mine.py:7"}]
    found = findings.assess(
        evidence(
            {"eager": 1e-4, "tf-function": 4e-4},
            facts={"outside_graph": outside, "outside_graph_s": 3e-4},
        )
    )
    (share,) = [f for f in found.findings if f.kind == "python-share"]
    assert share.measured.startswith("300 µs of a 400 µs call (75.0 %, from a profiler trace)")


# -- Advice that never contradicts the measurements, nor itself ---------------------------------

AS_WRITTEN_GRAPH = {
    "variants": ["eager", "tf-function", "jit-compile"],
    "problems": {},
    "as_written": "tf-function",
}
MODEL = {
    "kind": "model",
    "variants": ["predict", "model-call", "predict-on-batch", "tf-function"],
    "as_written": "predict",
    "training": ["fit", "fit-per-batch", "train-on-batch", "custom-step"],
    "training_as_written": "fit",
    "epoch_steps": 32,
    "problems": {},
}
#: Made-up forms, each as timed per call (and per training step) on some code as written.
CASES = {
    "small function as a tf.function": ({"eager": 40e-6, "tf-function": 349e-6,
                                         "jit-compile": 218e-6}, {}, AS_WRITTEN_GRAPH),
    "eager function, XLA slower": ({"eager": 1e-3, "tf-function": 0.5e-3,
                                    "jit-compile": 2e-3}, {}, None),
    "graph and XLA tied": ({"eager": 2.5e-3, "tf-function": 250e-6,
                            "jit-compile": 240e-6}, {}, None),
    "model": ({"predict": 30e-3, "model-call": 1e-3, "predict-on-batch": 285e-6,
               "tf-function": 270e-6},
              {"fit": 10e-3, "fit-per-batch": 60e-3, "train-on-batch": 8e-3,
               "custom-step": 4e-3}, MODEL),
}  # fmt: skip


def diagnosed(case):
    forms, steps, registered = CASES[case]
    measured = evidence(forms, steps=steps, registered=registered)
    return findings.assess(measured), measured


def advised_forms(found, unit, measured):
    return [a for a in found.advice if a.advised and change_kind(a) == "form" and
            measured.form(changed_to(a)).unit == unit]  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_no_form_advised_is_slower_than_the_code_as_written_or_than_another_advised(case):
    found, measured = diagnosed(case)
    for unit, as_written in measured.baselines.items():
        advised = advised_forms(found, unit, measured)
        for a in advised:
            assert measured.form(changed_to(a)).median_s < measured.form(as_written).median_s, a
        # Forms are alternatives: none advised is clearly slower than another advised.
        for fast in advised:
            for slow in advised:
                assert (
                    Faster(changed_to(fast), changed_to(slow)).check(measured.measurements).held
                    is not True
                )
    assert unseparated_winners(render.text(found, measured)) == []


def test_a_change_clearly_slower_than_another_that_paid_is_shown_not_advised():
    # As written a tf.function: eager 8.72x faster, XLA 1.60x faster, yet 5.45x slower than eager.
    found, measured = diagnosed("small function as a tf.function")
    (xla,) = [a for a in found.advice if changed_to(a) == "jit-compile"]
    assert xla.claim.held and not xla.advised
    assert re.fullmatch(
        r"jit-compile was 5\.45x slower than eager here \(rerun interval: [\d.]+x to [\d.]+x "
        r"slower\), and eager is advised",
        xla.why_not,
    )
    assert [changed_to(a) for a in found.advice if a.advised] == ["eager"]
    answer = render.short_answer(found)
    assert (
        "drop tf.function: eager was 8.72x faster than tf-function here" in answer
        and "jit_compile" not in answer
    )
    text = render.text(found, measured)
    beaten = text.split("Held, and another way advised was clearly faster here:\n")[1]
    assert beaten.startswith(
        "- Compile it with tf.function(jit_compile=True): jit-compile was 1.60x faster than "
        "tf-function here"
    )
    assert f"\n  {xla.why_not}\n" in beaten
    page = render.html_page(found, measured)
    assert "<h2>Held, and another way advised was clearly faster here</h2>" in page
    assert f"{xla.why_not}<br>" in page
    advice = json.loads(json.dumps(render.to_json(found)))["advice"]
    assert [(a["form"], a["advised"], bool(a["why_not"])) for a in advice] == [
        ("eager", True, False),
        ("jit-compile", False, True),
    ]


def test_worth_most_is_named_with_its_margin_over_the_runner_up():
    found = findings.assess(
        evidence({"eager": 2.5e-3, "tf-function": 250e-6, "jit-compile": 200e-6})
    )
    answer = render.short_answer(found)
    assert changed_to(found.best) == "jit-compile"
    assert "The change worth most: compile it" in answer and AHEAD in answer
    assert "ahead of the runner-up, tf-function (jit-compile is 1.25x faster" in answer
    assert unseparated_winners(answer) == []


def test_changes_tied_at_the_top_are_named_together_never_one_as_worth_most():
    found, measured = diagnosed("graph and XLA tied")
    assert found.best is None
    assert [changed_to(a) for a in found.advice if a.advised] == ["jit-compile", "tf-function"]
    answer = render.short_answer(found)
    assert "worth most" not in answer
    assert (
        "The changes that pay most are tied: compile it with tf.function(jit_compile=True) "
        "(jit-compile was 10.4x faster than eager) and wrap it in tf.function (tf-function was "
        "10.0x faster than eager); jit-compile and tf-function "
        "are tied here (jit-compile was 1.04x faster than tf-function,"
    ) in answer
    assert unseparated_winners(render.text(found, measured)) == []


def test_a_model_is_advised_per_call_and_per_training_step_each_with_its_own_leader():
    found, measured = diagnosed("model")
    # tf-function and predict_on_batch are within 10 % per call: tied, each with its own gain.
    assert found.best is None
    assert [changed_to(a) for a in found.leaders("call")] == ["tf-function", "predict-on-batch"]
    (model_call,) = [a for a in found.advice if changed_to(a) == "model-call"]
    assert model_call.why_not.endswith("slower), and tf-function is advised")
    answer = render.short_answer(found)
    assert (
        "(tf-function was 111x faster than predict) and use predict_on_batch for a batch in "
        "memory (predict-on-batch was 105x faster than predict)" in answer
    )
    # Per step, against fit over an epoch: the custom step separates itself.
    assert [changed_to(a) for a in found.leaders("step")] == ["custom-step"]
    (on_batch,) = [a for a in found.advice if changed_to(a) == "train-on-batch"]
    assert on_batch.why_not.startswith("train-on-batch was 2.00x slower than custom-step here")
    assert "For training, the change worth most: train with a custom tf.function step" in answer
    assert unseparated_winners(answer) == []


def test_fit_over_an_epoch_and_over_one_batch_price_a_fit_call_apart():
    found, _ = diagnosed("model")
    (cost,) = [f for f in found.findings if f.kind == "fit-call"]
    # 32 batches in 10 ms a step, one in 60 ms: a call costs 32 x 50 ms / 31 besides its steps.
    assert cost.measured.startswith("51.6 ms a call besides its steps, 16.1 % of a fit over")
    assert "an epoch of 32 batches, your batch repeated: 10.0 ms a step" in cost.measured
    assert not [a for a in found.advice if changed_to(a) == "fit-per-batch"]


def test_the_fastest_form_at_a_batch_is_not_named_where_tied():
    measured = served_at_two_batches(litert_s=5.1e-3)
    found = findings.assess(measured)
    fastest = {f.what: f.measured for f in found.findings if "astest at" in f.what}
    assert list(fastest) == ["Served fastest at a batch of 1", "Fastest at your batch of 64"]
    tied = fastest["Fastest at your batch of 64"]
    assert tied.startswith("model-call and litert are tied at your batch of 64 (model-call")
    assert "; model-call was 6.00x faster than predict at your batch of 64 (rerun interval" in tied
    assert "medians 5.00 ms and 30.0 ms a call" in tied
    assert "; litert was 5.88x faster than predict at your batch of 64 (rerun interval" in tied
    assert "litert was fastest at a batch of 1, " in fastest["Served fastest at a batch of 1"]
    assert unseparated_winners(render.text(found, measured)) == []


def test_the_chapters_the_diagnosis_names_come_from_the_guides_table_of_chapters():
    found, measured = diagnosed("model")
    topics = {topic for forms in FORM_ADVICE.values() for _, topic in forms.values()}
    topics |= {a.chapter for a in found.advice}
    text = render.text(found, measured, "https://example.org/guide/")
    for topic in topics:
        assert render.chapter_link(topic) == f"{chapter(topic).page}.html"
    for a in found.advice:
        link = render.chapter_link(a.chapter, "https://example.org/guide/")
        assert f"  why: {chapter(a.chapter).title} {link}" in text
    (fit,) = [f for f in found.findings if f.kind == "fit-call"]
    assert fit.measured.endswith(f"(chapter: {chapter('training_loop').title})")


def tried_on_backends(times, not_run=None):
    """A model's evidence with each backend's forms timed in processes of its own, as
    ``times`` gives them ({"jax-predict": seconds, ...})."""
    measured = [
        dataclasses.replace(
            timed(label, s, unit="step" if "-fit" in label else "call"),
            process_ids=tuple(f"{label.split('-')[0]}{i}" for i in range(3)),
        )
        for label, s in times.items()
    ]
    agreed = list(dict.fromkeys(label.split("-")[0] for label in times))
    trial = BackendTrial(measured, not_run or {}, agreed)
    return dataclasses.replace(model_evidence(), backends=trial)


def model_evidence():
    registered = {
        "kind": "model",
        "variants": ["predict", "model-call"],
        "as_written": "predict",
        "problems": {},
    }
    return evidence({"predict": 30e-3, "model-call": 29e-3}, registered=registered)


def test_a_backend_clearly_faster_than_tensorflow_is_advised_with_how_to_switch():
    measured = tried_on_backends(
        {
            "tensorflow-predict": 30e-3,
            "jax-predict": 3e-3,
            "openvino-predict": 29e-3,
            "tensorflow-fit": 20e-3,
            "jax-fit": 19.8e-3,
            "jax-fit-jit": 2e-3,
        }
    )
    found = findings.assess(measured)
    backend = {changed_to(a): a for a in found.advice if change_kind(a) == "backend"}
    assert set(backend) == {"jax-predict", "openvino-predict", "jax-fit", "jax-fit-jit"}
    assert backend["jax-predict"].advised and backend["jax-predict"].chapter == "keras_backends"
    assert "KERAS_BACKEND=jax" in backend["jax-predict"].advice
    assert not backend["openvino-predict"].advised and not backend["jax-fit"].advised
    assert backend["jax-fit-jit"].advised and "jit_compile=True" in backend["jax-fit-jit"].advice
    (jax,) = [f.measured for f in found.findings if f.what == "Keras 3 on JAX"]
    assert "the file says jit_compile=False" in jax
    assert "Another backend: predict on Keras 3 on JAX" in render.short_answer(found)
    assert "jax-predict was 10.0x faster than tensorflow-predict here" in render.short_answer(found)
    text = render.text(found, measured)
    assert "vs tensorflow-predict" in text and "vs tensorflow-fit" in text
    recorded = api.Diagnosis(found, measured, {}).to_json()["measurements"]
    assert {"jax-predict", "tensorflow-fit"} <= {m["variant"] for m in recorded}


def test_backends_that_tie_are_advised_together_and_none_clearly_slower_is():
    measured = tried_on_backends(
        {"tensorflow-predict": 30e-3, "jax-predict": 3e-3, "openvino-predict": 3.01e-3}
    )
    advised = [changed_to(a) for a in findings.assess(measured).advice if a.advised]
    assert sorted(advised) == ["jax-predict", "openvino-predict"]
    beaten = tried_on_backends(
        {"tensorflow-predict": 30e-3, "jax-predict": 3e-3, "openvino-predict": 10e-3}
    )
    found = findings.assess(beaten)
    (openvino,) = [a for a in found.advice if changed_to(a) == "openvino-predict"]
    assert openvino.claim.held and not openvino.advised and "than jax-predict" in openvino.why_not


def test_a_backend_that_did_not_run_the_model_is_a_finding_with_its_reason():
    why = "the model did not run: NotImplementedError: a TensorFlow op on a JAX array"
    measured = tried_on_backends({}, not_run={"jax": why})
    found = findings.assess(measured)
    (finding,) = [f for f in found.findings if f.kind == "backend"]
    assert finding.what == "Keras 3 on JAX" and why in finding.measured
    assert not [a for a in found.advice if change_kind(a) == "backend"]


def test_a_change_is_of_the_kind_its_setting_names_and_an_unknown_setting_is_refused():
    def kind(setting, to, **when):
        held = Claim("it is faster", True, "2.00x faster")
        return change_kind(Recommendation("advice", held, Change(setting, to, **when)))

    assert kind(CALLED, AS_WRITTEN) == "keep"
    assert kind(CALLED, "tf-function") == "form"
    assert kind(BACKEND, "jax", form="fit") == "backend"
    assert kind(TRACING, "reduce_retracing=True") == "retracing"
    assert kind(ARITHMETIC, "less") == "peak"
    with pytest.raises(ValueError, match="no setting diagnose changes"):
        kind("the weather", "sunny")
