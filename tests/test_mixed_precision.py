"""Mixed-precision chapter: every type computes the product and convolution float32 computes, to
its own precision, and every policy trains the same model along the same loss curve."""

import numpy as np
import pytest

from perfguide.measure import profile
from perfguide.processes.worker import trace_variant
from perfguide.workloads import mixed_precision as mp

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
