"""Mixed-precision chapter: every type computes the product and convolution float32 computes, to
its own precision, and every policy trains the same model along the same loss curve."""

import numpy as np
import pytest

from perfguide.measure import profile
from perfguide.measure.limits import MachineLimits
from perfguide.measure.measurement import Measurement
from perfguide.measure.profile import OpTime
from perfguide.pages import mixed_precision as page
from perfguide.processes.worker import trace_variant
from perfguide.report.tables.ops import OpTable
from perfguide.report.verdicts.claims import ClaimReport, Faster
from perfguide.workloads import mixed_precision as mp
from tests.recipes import run_recipe

#: How far a result may stray from float32's, as a share of the result's largest magnitude:
#: bfloat16 keeps 8 significant bits, float16 11.
RESULT_TOLERANCE = {"float32": 1e-6, "bfloat16": 2e-2, "float16": 3e-3}


def results_of(workload, size):
    return {
        variant: np.asarray(workload.make_call(variant, size)(), dtype=np.float32)
        for variant in workload.variants
    }


@pytest.mark.parametrize(("workload", "size"), [(mp.PRODUCT, 48), (mp.CONVOLUTION, 8)])
def test_each_type_computes_float32s_result_to_its_own_precision(workload, size):
    results = results_of(workload, size)
    reference = results["float32"]
    scale = np.abs(reference).max()
    assert scale > 0
    for dtype, result in results.items():
        assert result.shape == reference.shape, dtype
        error = np.abs(result - reference).max() / scale
        assert error <= RESULT_TOLERANCE[dtype], f"{dtype}: {error:.2e} of the result's scale"


def test_sixteen_bit_results_are_not_float32_results_in_disguise():
    results = results_of(mp.PRODUCT, 48)
    assert not np.array_equal(results["bfloat16"], results["float32"])


@pytest.fixture(scope="module")
def float32_losses():
    return mp.losses_after("float32", steps=12)


def test_the_model_learns_so_the_loss_comparison_means_something(float32_losses):
    assert float32_losses[-1] < 0.95 * float32_losses[0]


@pytest.mark.parametrize("variant", mp.TRAINING_VARIANTS[1:])
def test_every_policy_follows_float32s_loss(variant, float32_losses):
    losses = mp.losses_after(variant, steps=12)
    assert losses[0] == pytest.approx(float32_losses[0], rel=1e-2)
    assert losses[-1] == pytest.approx(float32_losses[-1], rel=2e-2)


def test_every_policy_predicts_what_float32_predicts():
    results = results_of(mp.INFERENCE, 4)
    reference = results["float32"]
    assert reference.shape == (4, mp.CLASSES)
    for variant, result in results.items():
        np.testing.assert_allclose(result, reference, rtol=0, atol=0.05, err_msg=variant)


def test_the_policies_compute_in_their_type_and_keep_float32_weights():
    for variant in mp.INFERENCE.variants:
        model = mp.build_model(mp.policy_of(variant)[0])
        conv = model.layers[1]
        assert conv.compute_dtype == variant.split("-")[-1], variant
        assert {w.dtype for w in model.weights} == {"float32"}, variant
        assert model.layers[-1].compute_dtype == "float32"  # the logits


def test_mixed_policies_halve_the_activations_but_not_the_weights():
    full, half = mp.memory_bytes("float32"), mp.memory_bytes("mixed-bfloat16")
    assert half["weights"] == full["weights"] > 0
    # Every layer's output halves but the logits', which stay float32.
    assert 2 * half["activations"] - full["activations"] == mp.BATCH * mp.CLASSES * 4


def test_float16_training_scales_its_loss_and_the_others_do_not():
    import keras

    for policy in mp.POLICIES:
        optimizer = mp.compiled_model(policy).optimizer
        scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        assert scaled == (policy == "mixed_float16"), policy


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["avx2", "fma"], {"bfloat16": False, "float16": False}),
        (["avx512f", "avx512_bf16"], {"bfloat16": True, "float16": False}),
        (["avx512_bf16", "avx512_fp16", "amx_bf16"], {"bfloat16": True, "float16": True}),
        (["amx_fp16"], {"bfloat16": False, "float16": True}),
    ],
)
def test_the_cpu_kind_comes_from_its_flags(flags, expected):
    assert mp.native_types(flags) == expected


def test_a_traced_variant_records_its_kernel(tmp_path):
    path = trace_variant("mixed-precision-matmul", "float32", 64, str(tmp_path))
    ops = {t.op for t in profile.op_times(profile.op_events(path))}
    assert any("MatMul" in op for op in ops), ops


#: A CPU of each kind: no 16-bit arithmetic, bfloat16 only, both types.
WITHOUT = page.Cpu(("avx2", "fma"))
BFLOAT16 = page.Cpu(("avx512f", "avx512_bf16"))
BOTH = page.Cpu(("avx512_bf16", "amx_bf16", "amx_fp16"))


def measured(label, seconds, size=None):
    return Measurement(label, "step", 1, 1, 0.0, (seconds,) * 5, size=size)


#: Medians per training step shaped like a build's on a CPU without 16-bit arithmetic: both
#: mixed policies slower than float32, XLA under mixed_bfloat16 faster than without.
STEP_MEDIANS = {
    "float32": 0.08,
    "mixed-bfloat16": 0.8,
    "mixed-float16": 0.3,
    "float32-xla": 0.13,
    "mixed-bfloat16-xla": 0.12,
    "mixed-float16-xla": 0.12,
}


def training_measured(**changed):
    return [measured(label, changed.get(label, s)) for label, s in STEP_MEDIANS.items()]


def op_table(*ops, calls=()):
    """A profile of ``ops`` (name, share of op time), ``calls`` its traced calls likewise."""

    def times(shares):
        return [OpTime(op, 1, share, share, share) for op, share in shares]

    table = OpTable(times(ops))
    table.calls = [times(call) for call in calls]
    return table


FLOAT16_OPS = op_table(("Conv2DBackpropFilter", 0.5), ("Conv2DBackpropInput", 0.4), ("Cast", 0.1))
CURVES = {"float32": [2.3, 1.26], "mixed-bfloat16": [2.3, 1.27], "mixed-float16": [2.3, 1.261]}


@pytest.mark.parametrize("cpu", [WITHOUT, BFLOAT16, BOTH])
def test_the_pages_checks_name_the_workloads_variants(cpu):
    for kernel, workload in [(page.PRODUCT, mp.PRODUCT), (page.CONVOLUTION, mp.CONVOLUTION)]:
        for check in cpu.kernels(kernel):
            assert set(check.labels) <= set(workload.variants)
    for check in cpu.training:
        assert set(check.labels) <= set(mp.TRAINING.variants)
    (inference,) = cpu.inference
    assert set(inference.labels) <= set(mp.INFERENCE.variants)
    assert set(page.PROFILED_STEPS) <= set(mp.TRAINING.variants)
    assert page.LARGEST in page.SIDES


def test_the_claims_favour_a_16_bit_type_only_where_the_cpu_has_its_instructions():
    assert WITHOUT.faster("bfloat16") == Faster("float32", "bfloat16")
    assert BFLOAT16.faster("bfloat16", "mixed-bfloat16") == Faster("mixed-bfloat16", "float32")
    assert BFLOAT16.faster("float16") == Faster("float32", "float16")
    assert BOTH.own_flags("bfloat16") == "avx512_bf16 and amx_bf16"
    assert (BFLOAT16.has("bfloat16"), BFLOAT16.has("float16")) == ("has", "lacks")
    assert str(BFLOAT16).splitlines() == [
        "bfloat16  arithmetic in hardware: yes (avx512_bf16 or amx_bf16)",
        "float16   arithmetic in hardware: no (avx512_fp16 or amx_fp16)",
    ]
    claim = BFLOAT16.training[0].check(training_measured())
    assert claim.statement == "mixed-bfloat16 is faster than float32 (training step)"


def short_answer(cpu, training, curves=CURVES):
    steps = ClaimReport.of(cpu.training, training)
    return page.short_answer(cpu, steps, FLOAT16_OPS, page.loss_claim(curves), training)


def test_the_short_answer_advises_what_held_for_the_cpu_and_quotes_the_steps():
    answer = short_answer(WITHOUT, training_measured())
    assert [r.advised for r in answer.recommendations] == [True, True, False, True]
    assert answer.recommendations[0].advice.startswith("Keep float32 on a CPU without bfloat16")
    assert "This one lacks bfloat16 instructions and lacks float16 ones." in answer.answer
    assert "float32 was 10.0x faster than mixed-bfloat16 here" in answer.answer
    assert "TensorFlow's generic Conv2DBackpropFilter took the most (50%)" in answer.answer
    assert answer.scenario.rows[1] == ["this build's CPU", "80.0 ms", "300 ms (3.75x slower)"]


def test_the_short_answer_does_not_advise_what_did_not_hold():
    answer = short_answer(BFLOAT16, training_measured(), {**CURVES, "mixed-float16": [2.3, 1.4]})
    bfloat16, _, _, loss = answer.recommendations
    assert bfloat16.advice == (
        "Use mixed_bfloat16 on a CPU with avx512_bf16, as this one (measured on its few cores; "
        "CPUs with AMX were not measured)"
    )
    assert not bfloat16.advised and not loss.advised
    assert "Use mixed_bfloat16" not in str(answer)
    assert "Compare the loss curve" not in str(answer)


def test_the_advice_leaves_amx_untried_only_on_a_cpu_without_it():
    (bfloat16, *_) = short_answer(BOTH, training_measured()).recommendations
    assert bfloat16.advice == (
        "Use mixed_bfloat16 on a CPU with avx512_bf16 and amx_bf16, as this one (measured on its "
        "few cores)"
    )


def test_the_answer_explains_the_float16_step_by_its_profile():
    generic = short_answer(WITHOUT, training_measured()).answer
    assert "not one tuned for float16" in generic
    onednn_ops = op_table(("_MklNativeConv2DBackpropFilterWithBias", 0.6), ("Cast", 0.4))
    slow = training_measured(**{"mixed-float16": 10.0})
    steps = ClaimReport.of(BOTH.training, slow)
    answer = page.short_answer(BOTH, steps, onednn_ops, page.loss_claim(CURVES), slow).answer
    assert "oneDNN's _MklNativeConv2DBackpropFilterWithBias took the most (60%)" in answer
    assert "this CPU's float16 instructions alone did not make mixed_float16 faster" in answer
    assert "not one tuned for float16" not in answer


def test_the_tables_and_lines_read_the_measurements():
    machine = MachineLimits(memory_bandwidth=1e10, peak_flops=1e11, how={})
    products = {
        side: [measured(dtype, 0.1, size=side) for dtype in mp.DTYPES] for side in page.SIDES
    }
    convolutions = [measured(dtype, 1e-3, size=64) for dtype in mp.DTYPES]
    table = page.peak_shares(products, convolutions, machine)
    assert table.rows[0] == ["product, side 2048", "172%", "172%", "172%"]
    assert table.rows[1][0] == "convolution, side 64"
    steps = {"mixed-float16": FLOAT16_OPS, "mixed-bfloat16-xla": op_table(("cluster", 0.7))}
    assert page.kernels_in_numbers(steps, training_measured()).splitlines()[0] == (
        "mixed_float16: oneDNN kernels ran 0% of op time; "
        "Conv2DBackpropFilter and Conv2DBackpropInput took 90%"
    )
    kernels = page.which_kernels("One step", {"mixed-float16": FLOAT16_OPS})
    assert kernels.rows == [["mixed-float16", "Conv2DBackpropFilter (50%)", "0%", "10%"]]


def test_the_casts_check_reads_each_traced_call():
    cheap = op_table(("Conv2D", 0.98), ("Cast", 0.02), calls=[[("Cast", 0.02)]] * 5)
    dear = op_table(("Conv2D", 0.7), ("Cast", 0.3), calls=[[("Cast", 0.3)]] * 5)
    report = page.cast_checks({"mixed-bfloat16": cheap, "mixed-float16": dear})
    assert [c.verdict for c in report.claims] == ["HELD", "DID NOT HOLD"]
    assert report.claims[1].statement.endswith("(mixed-float16)")


def test_the_memory_and_loss_claims_read_their_numbers():
    memory = {
        "float32": {"weights": 1000, "activations": 2000},
        "mixed-bfloat16": {"weights": 1000, "activations": 1004},
        "mixed-float16": {"weights": 1000, "activations": 1004},
    }
    assert page.memory_table(memory).rows[1] == ["mixed-bfloat16", "1.00 kB", "1.00 kB"]
    assert page.memory_claim(memory).verdict == "HELD"
    memory["mixed-float16"] = {"weights": 500, "activations": 1004}
    assert page.memory_claim(memory).verdict == "DID NOT HOLD"
    held = page.loss_claim(CURVES)
    assert held.verdict == "HELD" and held.effect == "at most 0.79% apart"
    assert page.loss_claim({**CURVES, "mixed-float16": [2.3, 1.3]}).verdict == "DID NOT HOLD"


class FakeWorkers:
    def __init__(self):
        self.runs = []

    def run(self, workload, *, size, quick, settle):
        self.runs.append((size, tuple(settle)))
        return [measured(dtype, 0.1, size) for dtype in workload.variants]


def test_the_products_settle_the_claims_only_at_the_largest_side():
    workers = FakeWorkers()
    products = page.time_products(workers, WITHOUT)
    assert list(products) == list(page.SIDES)
    assert workers.runs == [
        (side, WITHOUT.kernels(page.PRODUCT) if side == page.LARGEST else ()) for side in page.SIDES
    ]


def test_the_recipe_picks_bfloat16_where_the_page_finds_its_instructions():
    recipe = run_recipe("mixed_precision", "Choose the policy from the CPU's flags")
    native = mp.native_types(sorted(recipe["flags"]))
    assert recipe["has_bfloat16"] == native["bfloat16"]


def test_the_loss_recipe_holds_the_pages_loss_claim():
    recipe = run_recipe("mixed_precision", "Compare the loss with float32's after switching policy")
    curves = {policy: [loss] for policy, loss in recipe["losses"].items()}
    assert page.loss_claim(curves).verdict == "HELD"


class LossWorkers:
    def __init__(self, quick):
        self.quick, self.steps = quick, []

    def call_in(self, index, target, *, variant, steps):
        self.steps.append(steps)
        return [2.0 - step / 100 for step in range(steps)]


def test_a_quick_run_trains_fewer_loss_steps_and_its_claim_says_how_many():
    for quick, steps in ((False, page.LOSS_STEPS), (True, page.QUICK_LOSS_STEPS)):
        workers = LossWorkers(quick)
        curves = page.loss_curves(workers)
        assert workers.steps == [steps] * len(page.POLICIES)
        assert f"after {steps} steps" in page.loss_claim(curves).statement
