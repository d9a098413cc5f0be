"""Vectorization chapter: every variant of a workload computes the same thing."""

import numpy as np
import pytest

from perfguide.workloads import vectorization as vz


def host(result):
    return np.asarray(result.numpy() if hasattr(result, "numpy") else result)


def results_of(workload, size):
    return {variant: host(workload.make_call(variant, size)()) for variant in workload.variants}


def assert_all_agree(results, **tolerance):
    (first, reference), *others = results.items()
    for variant, result in others:
        np.testing.assert_allclose(result, reference, err_msg=f"{variant} vs {first}", **tolerance)


def test_matmul_variants_agree_with_the_python_loop():
    results = results_of(vz.MATMUL, 6)
    assert results["python-loops"].shape == (6, 6)
    assert_all_agree(results, rtol=1e-5, atol=1e-5)


def test_batched_forms_agree_eagerly_and_in_functions():
    results = results_of(vz.BATCHED_MATMUL, 3)
    assert len(results) == 2 * len(vz.BATCHED_FORMS)
    assert results["einsum"].shape == (3, vz.ROWS, vz.COLUMNS)
    a, b = vz.make_batch(3)
    np.testing.assert_allclose(results["einsum"], a @ b, rtol=1e-4, atol=1e-3)
    assert_all_agree(results, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("workload", [vz.AFFINE, vz.TANH])
@pytest.mark.parametrize("elements", [1, 1000])
def test_chain_variants_agree(workload, elements):
    assert_all_agree(results_of(workload, elements), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("chain", vz.CHAINS)
def test_the_chains_run_the_ops_they_count(chain):
    from perfguide.workloads.eager import graph_op_counts

    tf_fn, _, ops = vz.CHAINS[chain]
    counts = graph_op_counts(tf_fn, vz.eager.make_vector(8))
    assert sum(counts.values()) == ops  # the Identity returning the output is not counted


def test_one_epoch_trains_the_same_weights_whatever_feeds_it():
    trained = {}
    for variant in vz.INPUT_PIPELINE.variants:
        timed, weights = vz.make_training(variant, hidden=8)
        loss = timed()
        trained[variant] = (float(loss), [w.numpy() for w in weights])
    (_, (loss, weights)), *others = trained.items()
    untrained = [w.numpy() for w in vz.make_weights(8)]
    assert not np.allclose(weights[0], untrained[0]), "the epoch must change the weights"
    for variant, (other_loss, other_weights) in others:
        assert other_loss == pytest.approx(loss, rel=1e-5), variant
        for got, want in zip(other_weights, weights, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=variant)


def test_an_epoch_counts_one_unit_per_step():
    timed, _ = vz.make_training("preloaded", hidden=4)
    assert timed.units_per_call == vz.STEPS


def test_conv_variants_agree_and_keep_the_image_shape():
    results = results_of(vz.CONV2D, 9)
    assert results["eager"].shape == (vz.CONV_IMAGES, 9, 9, vz.CONV_CHANNELS)
    assert_all_agree(results, rtol=1e-5, atol=1e-4)


def test_work_counts():
    assert vz.matmul_flops(10) == 2000
    assert vz.batched_flops(100) == 2 * 10**10
    assert vz.chain_bytes(10**7) == 8 * 10**7
    assert vz.conv_flops(1) == 2 * 9 * vz.CONV_CHANNELS**2 * vz.CONV_IMAGES


def test_every_source_feeds_the_same_batches():
    results = {}
    for variant in vz.INPUT_ONLY.variants:
        timed = vz.INPUT_ONLY.make_call(variant, 64)
        assert timed.units_per_call == vz.STEPS * vz.BATCH // 64
        results[variant] = [host(part) for part in timed()]
    (_, (x, y)), *others = results.items()
    assert x.shape == (64, vz.FEATURES) and x.dtype == np.float32
    for variant, (other_x, other_y) in others:
        np.testing.assert_allclose(other_x, x, rtol=1e-6, err_msg=variant)
        np.testing.assert_array_equal(other_y, y, err_msg=variant)
