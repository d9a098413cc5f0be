"""Vectorization chapter: every variant of a workload computes the same thing, and the page's
checks, tables and short answer come out right on made-up measurements."""

import numpy as np
import pytest

from perfguide.measure import limits
from perfguide.measure.limits import MachineLimits
from perfguide.measure.measurement import Measurement
from perfguide.pages import vectorization as page
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import vectorization as vz
from tests.recipes import run_recipe


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


# -- The page: its checks, tables and short answer, on made-up measurements ----------------------

ENV = {"onednn_enabled": False, "usable_cores": 2, "cpu_vector_flags": ["avx2"]}
MACHINE = MachineLimits(memory_bandwidth=1e10, peak_flops=1e11, how={"peak_flops": "made up"})


def measured(label, seconds, size=None, cores_busy=1.0):
    return Measurement(label, "call", 1, 1, 0.0, (seconds,) * 5, size=size, cores_busy=cores_busy)


def made_up_products(loop_slower_by=10_000):
    """Times cubic in the side; the loop ``loop_slower_by`` times NumPy's."""
    return {
        side: [
            measured(
                label, 1e-9 * side**3 * (loop_slower_by if label == "python-loops" else 1), side
            )
            for label in (vz.MATMUL.variants if side in page.LOOP_SIDES else page.BLAS_VARIANTS)
        ]
        for side in page.SIDES
    }


def made_up_batched(**changed):
    """Every form at 200 GFLOP/s, the loop and map_fn at 100, the peak's product in 0.15 s."""
    seconds = dict.fromkeys(page.BATCHED_VARIANTS, page.BATCH_FLOPS / 200e9)
    slower = page.BATCH_FLOPS / 100e9
    seconds |= {"loop-stack": slower, "map-fn": slower, limits.PEAK: 0.15} | changed
    return [measured(label, s, vz.BATCHED_MATMUL.default_size) for label, s in seconds.items()]


def made_up_chains(xla_faster_by=10):
    return {
        (chain.name, size): [
            measured(label, size * 1e-9 * (1 if label == "xla" else xla_faster_by), size)
            for label in chain.variants
        ]
        for chain in page.CHAINS
        for size in page.CHAIN_SIZES
    }


FEEDING = {"preloaded": 1e-3, "numpy-each-step": 2e-3, "tf-data": 1.5e-3, "from-generator": 3e-3}
ALONE = {"preloaded": 1e-5, "numpy-each-step": 2e-5, "tf-data": 1.5e-4, "from-generator": 3e-3}


def made_up_feeding():
    """The small model's step fed each way; the large one's step a hundred times longer, fed
    at the same cost."""
    large = {label: s - FEEDING["preloaded"] + 0.1 for label, s in FEEDING.items()}
    by_hidden = dict(zip(page.HIDDEN_SIZES, (FEEDING, large), strict=True))
    return {
        hidden: [measured(label, s, hidden) for label, s in seconds.items()]
        for hidden, seconds in by_hidden.items()
    }


def made_up_alone(**changed):
    return [measured(label, s) for label, s in (ALONE | changed).items()]


def made_up_settings(one_thread_s=2e-3):
    names = page.settings(ENV)
    seconds = {"default": 1e-3, "oneDNN on": 1e-3, "1 intra-op thread": one_thread_s}
    by_kernel = {
        kernel.name: [measured(name, seconds[name], cores_busy=2.0) for name in names]
        for kernel, _ in page.KERNELS
    }
    return page.SettingRuns(by_kernel, {name: name == "oneDNN on" for name in names})


def checks(products=None, batched=None, chains=None, alone=None, runs=None):
    """Every section's checks, on made-up measurements where none are given."""
    return (
        ClaimReport.of(page.PRODUCT_CLAIMS, products or made_up_products()),
        ClaimReport.of(page.BATCHED_CLAIMS, batched or made_up_batched()),
        ClaimReport.of(page.CHAIN_CLAIMS, chains or made_up_chains()),
        page.feeding_claims(made_up_feeding(), alone or made_up_alone()),
        ClaimReport.of(page.setting_claims(ENV), (runs or made_up_settings()).by_kernel),
    )


def answer(*section_checks):
    return page.short_answer(*section_checks, page.handbook_table(made_up_products()), ENV)


def test_the_pages_checks_name_the_workloads_variants():
    named = [
        (page.PRODUCT_CLAIMS, vz.MATMUL),
        (page.FORM_CLAIMS, vz.BATCHED_MATMUL),
        (page.CHAIN_CLAIMS, vz.AFFINE),
        (page.CHAIN_CLAIMS, vz.TANH),
        (page.FEEDING_CLAIMS, vz.INPUT_PIPELINE),
        (page.FEEDING_CLAIMS, vz.INPUT_ONLY),
    ]
    for claims, workload in named:
        for claim in claims:
            assert set(claim.labels) <= set(workload.variants), claim
    assert set(page.BATCHED_VARIANTS) <= set(vz.BATCHED_MATMUL.variants)
    assert page.EINSUM_AT_PEAK.variant in page.BATCHED_VARIANTS
    assert set(page.BLAS_VARIANTS) < set(vz.MATMUL.variants)
    for env in (ENV, ENV | {"onednn_enabled": True}):
        for claim in page.setting_claims(env):
            assert set(claim.labels) <= set(page.settings(env))


def test_the_short_answer_advises_what_held_and_quotes_the_checks():
    section_checks = checks()
    products, batched, chains, feeding, _ = section_checks
    short = answer(*section_checks)
    for stated in (
        products[page.BLAS_VS_LOOP],
        batched[page.ONE_EINSUM],
        chains[page.AFFINE_FUSED],
        feeding[page.SOURCE_ADVICE],
    ):
        assert stated.stated in short.answer
    assert batched[page.EINSUM_AT_PEAK].quoted in short.answer
    assert short.advice == short.recommendations[:-1]
    # oneDNN took the same time either way: too close to call, neither advised nor denied.
    assert [r.claim.verdict for r in short.findings] == ["INCONCLUSIVE"]
    assert short.scenario.caption == "A 10,000 × 10,000 product"


def test_the_short_answer_does_not_advise_a_claim_that_did_not_hold():
    slow_xla = checks(chains=made_up_chains(xla_faster_by=2))
    fuse = next(r for r in answer(*slow_xla).recommendations if "XLA" in r.advice)
    assert fuse.claim.verdict == "DID NOT HOLD" and not fuse.advised
    slow_pipeline = checks(alone=made_up_alone(**{"tf-data": 6e-3}))
    slices = next(r for r in answer(*slow_pipeline).recommendations if "from_gen" in r.advice)
    assert not slices.advised
    one_thread_faster = checks(runs=made_up_settings(one_thread_s=0.5e-3))
    threads = next(r for r in answer(*one_thread_faster).recommendations if "intra" in r.advice)
    assert not threads.advised


def test_the_onednn_advice_follows_this_cpus_default():
    for enabled, advice, statement in (
        (True, "Keep oneDNN on for convolutions", "default is faster than oneDNN off"),
        (
            False,
            "Turn oneDNN on for convolutions (TF_ENABLE_ONEDNN_OPTS=1)",
            "oneDNN on is faster than default",
        ),
    ):
        env = ENV | {"onednn_enabled": enabled}
        by_kernel = {
            kernel.name: [measured(name, 1e-3) for name in page.settings(env)]
            for kernel, _ in page.KERNELS
        }
        setting_checks = ClaimReport.of(page.setting_claims(env), by_kernel)
        onednn = page.short_answer(*checks()[:4], setting_checks, None, env).recommendations[-1]
        assert (onednn.advice, onednn.claim.statement) == (advice, statement)


def test_the_handbook_table_carries_the_products_up_by_the_cube_of_the_side():
    products = made_up_products()
    assert (
        page.loop_fit(products) == "Python loop: time ∝ side^3.00 over sides [16, 32, 64] (fitted)"
    )
    rows = page.handbook_table(products).rows
    # 1e-9 s·side³ for BLAS, 1e4 times that for the loop, at side 10 000.
    assert rows[0][2] == "~10,000,000 s (from side 64)"
    assert rows[2] == ["np.dot", "5.61 s", "~1,000 s (from side 2048)"]
    assert rows[3][2] == "~1,000 s"


def test_the_peak_rates_set_each_form_against_the_peak_in_its_processes():
    lines = page.peak_rates(made_up_batched()).splitlines()
    assert lines[0] == f"{limits.PEAK}: 115 GFLOP/s (processes: 115 GFLOP/s)"
    assert len(lines) == 1 + len(page.BATCHED_VARIANTS)
    assert lines[1].split() == ["loop-stack", "100", "GFLOP/s,", "87%", "of", *limits.PEAK.split()]


def test_the_chain_lines_give_each_variants_bandwidth_share_and_cores():
    chains = made_up_chains()
    shares = page.bandwidth_shares(chains, MACHINE).splitlines()
    assert len(shares) == 2 * len(vz.AFFINE.variants)
    # 8 bytes an element of 1e7, in 1e-2 s, of 1e10 B/s.
    assert shares[3].split() == [
        "elementwise-affine",
        "xla",
        "80.0%",
        "of",
        "the",
        "memory",
        "bandwidth",
    ]
    assert page.cores_busy(chains).splitlines()[0].split()[-4:] == ["ms", "on", "1.0", "cores"]


def test_the_feeding_lines_show_its_cost_beyond_preloaded_data():
    feeding = made_up_feeding()
    small, large = page.feeding_shares(feeding).splitlines()
    assert small == (
        "   16 hidden units: feeding takes numpy-each-step 50%, tf-data 33%, from-generator 67% "
        "of the step"
    )
    assert large.startswith(" 2048 hidden units: feeding takes numpy-each-step 1%")
    costs = page.costs_beside_alone(feeding, made_up_alone()).splitlines()
    assert costs[0].split() == [
        "numpy-each-step",
        "1.00",
        "ms",
        "per",
        "step",
        "beyond",
        "preloaded;",
        "20.0",
        "µs",
        "per",
        "batch",
        "alone",
    ]
    share_falls = page.feeding_claims(feeding, made_up_alone())[page.FEEDING_CLAIMS[1]]
    assert share_falls.verdict == "HELD"


def test_the_settings_table_has_a_column_a_setting():
    runs = made_up_settings()
    table = page.settings_table(runs)
    assert table.header == ["kernel", "default", "oneDNN on", "1 intra-op thread"]
    assert table.rows[1] == ["conv2d"] + ["1.00 ms on 2.0 cores"] * 2 + ["2.00 ms on 2.0 cores"]
    assert str(runs).splitlines()[1] == "oneDNN on          oneDNN on"


class FakeWorkers:
    def __init__(self):
        self.runs = []

    def run(self, workload, variants=None, *, size=None, settle=(), quick=False, peak=False):
        self.runs.append((workload.name, size, tuple(settle), quick))
        return [measured(label, 1e-3, size) for label in variants or workload.variants]


def test_the_timing_is_full_only_for_close_checks_and_settles_only_the_advice():
    workers = FakeWorkers()
    products = page.time_products(workers)
    assert [m.label for m in products[16]] == list(vz.MATMUL.variants)
    assert [m.label for m in products[2048]] == list(page.BLAS_VARIANTS)
    full = [size for _, size, _, quick in workers.runs if not quick]
    assert full == [page.LARGEST_SIDE]
    page.time_chains(workers)
    settled = {(name, size): settle for name, size, settle, _ in workers.runs[len(page.SIDES) :]}
    affine_fused = (vz.AFFINE.name, 10**7)
    assert settled == {
        (chain.name, size): (page.AFFINE_FUSED.claim,) if (chain.name, size) == affine_fused else ()
        for chain in page.CHAINS
        for size in page.CHAIN_SIZES
    }
    feeding = page.time_feeding(workers)
    assert workers.runs[-2:] == [
        (vz.INPUT_PIPELINE.name, 16, (page.PRELOAD,), False),
        (vz.INPUT_PIPELINE.name, 2048, (), True),
    ]
    page.time_sources_alone(workers)
    assert workers.runs[-1] == (vz.INPUT_ONLY.name, None, (page.GENERATOR_ADVICE,), True)
    published = page.everything_measured(
        products, made_up_batched(), made_up_chains(), feeding, made_up_alone(), made_up_settings()
    )
    assert [m.label for m in published[:4]] == list(ALONE)


def test_the_einsum_recipe_computes_what_the_timed_einsum_does():
    recipe = run_recipe("vectorization", "One einsum instead of a loop of products")
    a, b = recipe["a"], recipe["b"]
    np.testing.assert_allclose(recipe["batched"], vz.einsum(a, b), rtol=1e-6)
    np.testing.assert_allclose(recipe["looped"], vz.loop_stack(a, b), rtol=1e-6)


def test_the_fusion_recipe_computes_what_the_timed_chain_does():
    recipe = run_recipe("vectorization", "Fuse an element-wise chain with XLA")
    x = recipe["x"]
    np.testing.assert_allclose(recipe["affine_chain"](x), vz.affine_chain_numpy(x), rtol=1e-5)
