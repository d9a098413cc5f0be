"""Eager chapter: variants agree; the custom gradients behave as the chapter says."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from perfguide.measure import anatomy
from perfguide.measure.limits import MachineLimits
from perfguide.measure.measurement import Measurement
from perfguide.pages import eager as page
from perfguide.report.publishing.answers import ShortAnswer, measured_here
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import eager as eg
from tests.recipes import run_recipe


def host(result):
    return np.asarray(result.numpy() if hasattr(result, "numpy") else result)


def host_values(result):
    """A variant's result on the host: a runtime call returns a list of one tensor."""
    if isinstance(result, list):
        (result,) = result
    return host(result)


@pytest.mark.parametrize(
    "workload",
    [eg.ADD, eg.MATMUL, eg.SMALL_OPS, eg.CALL_OVERHEAD, eg.OP_LAYERS, eg.FUNCTION_LAYERS],
)
@pytest.mark.parametrize("size", [1, 100, 4096])
def test_variants_agree(workload, size):
    results = [host_values(workload.make_call(v, size)()) for v in workload.variants]
    for variant, result in zip(workload.variants[1:], results[1:], strict=True):
        np.testing.assert_allclose(result, results[0], rtol=1e-5, atol=1e-6, err_msg=variant)


def test_matmul_squares_the_largest_square_that_fits():
    assert host(eg.MATMUL.make_call("numpy", 10)()).shape == (3, 3)


def test_gradient_variants_agree():
    eager, graph = (eg.GRADIENT.make_call(v, 8)() for v in eg.GRADIENT.variants)
    for a, b in zip(eager, graph, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("variant", eg.LOG1PEXP)
def test_log1pexp_variants_agree_where_all_are_safe(variant):
    value, gradient = eg.LOG1PEXP_WORKLOAD.make_call(variant, 256)()
    x = 10 * eg.make_vector(256).astype(np.float64)
    # log(1 + e^x) without log1p loses relative precision where e^x is tiny: compare absolutely.
    np.testing.assert_allclose(value.numpy(), np.logaddexp(0, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gradient.numpy(), eg.sigmoid_float64(x), rtol=1e-3, atol=1e-6)


X = tf.constant(np.linspace(-80, 120, 401).astype(np.float32))


def gradient_relative_error(fn):
    _, gradient = eg.value_and_gradient(fn, X)
    reference = eg.sigmoid_float64(X.numpy())
    return np.abs(gradient.numpy() / reference - 1)


def test_naive_gradient_overflows_for_large_x():
    error = gradient_relative_error(eg.log1pexp_naive)
    assert np.isnan(error[X.numpy() > 89]).all()
    assert np.isfinite(error[X.numpy() < 89]).all()
    assert error[X.numpy() < 70].max() < 1e-6


def test_article_custom_gradient_is_finite_but_cancels_for_very_negative_x():
    error = gradient_relative_error(eg.log1pexp_custom)
    assert np.isfinite(error).all()
    assert error[X.numpy() < -20].max() > 0.5


def test_stable_custom_gradient_is_finite_and_float32_accurate_everywhere():
    error = gradient_relative_error(eg.log1pexp_stable)
    assert error.max() < 1e-6
    value, _ = eg.value_and_gradient(eg.log1pexp_stable, X)
    np.testing.assert_allclose(
        value.numpy(), np.logaddexp(0, X.numpy().astype(np.float64)), rtol=1e-6
    )


@pytest.mark.parametrize("fn", eg.LOG1PEXP.values())
def test_nested_tapes_give_the_second_derivative(fn):
    x = tf.constant(np.linspace(-10, 10, 21).astype(np.float32))
    s = eg.sigmoid_float64(x.numpy())
    np.testing.assert_allclose(
        eg.second_derivative(fn, x).numpy(), s * (1 - s), rtol=1e-4, atol=1e-7
    )


def test_custom_gradients_run_more_ops_than_the_naive_gradient():
    x = tf.constant(eg.make_vector(16))
    counts = {
        name: sum(eg.graph_op_counts(functools.partial(eg.value_and_gradient, fn), x).values())
        for name, fn in eg.LOG1PEXP.items()
    }
    assert counts["naive"] < counts["custom-gradient"] < counts["stable-custom-gradient"]


def test_matmul_flops_counts_two_operations_per_multiply_add():
    assert eg.matmul_flops(100) == 2 * 10**3


def measured(label, seconds, size=1000):
    return Measurement(label, "op", 1, 1, 0.0, (seconds,) * 5, size=size)


def measurements(medians, size=1000):
    return [measured(label, seconds, size) for label, seconds in medians.items()]


def add_at(size, eager_fixed_s=20e-6):
    """x + x shaped like a build's: NumPy a nanosecond an element, eager a fixed cost more, and
    the frameworks installed beside TensorFlow as fast as eager."""
    numpy = 1e-6 + 1e-9 * size
    eager = eager_fixed_s + 1.2e-9 * size
    medians = {"numpy": numpy, "eager": eager, **dict.fromkeys(eg.PEERS, eager)}
    return measurements({**medians, "numpy-preallocated": numpy / 2}, size)


def add_sweep(**kwargs):
    return {size: add_at(size, **kwargs) for size in page.ADD_SIZES}


LARGEST_PRODUCT = 1024**2
#: A product of side 1024 by NumPy and eagerly, and the calls that do nothing.
PRODUCTS = measurements({"numpy": 10e-3, "eager": 12e-3}, LARGEST_PRODUCT)
CALLS = measurements(
    {
        "python-function": 50e-9,
        "eager-identity": 50e-6,
        "tf-function": 500e-6,
        "numpy-copy": 2e-6,
    }
)
FUNCTION_LAYER_MEDIANS = {
    "tf-function": 400e-6,
    "input-signature": 600e-6,
    "concrete-function": 300e-6,
    "flat-call": 150e-6,
    "runtime-execute": 100e-6,
}
FUNCTION_LAYERS = measurements(FUNCTION_LAYER_MEDIANS)
OP_LAYERS = measurements({"public-api": 80e-6, "op-wrapper": 40e-6, "fast-path": 30e-6})
PYTHON_CALLS = {"public-api": 22.0, "tf-function": 356.0, "concrete-function": 158.0}
OP_COUNTS = {
    "naive": {"Exp": 1, "Log": 1, "Mul": 2},
    "custom-gradient": {"Exp": 1, "Log": 1, "Mul": 1, "IdentityN": 1, "Sub": 2},
    "stable-custom-gradient": {"Exp": 1, "Log1p": 2, "SelectV2": 2, "IdentityN": 1, "Mul": 3},
}


def every_check(sweep):
    return [check for checks in sweep.checks.values() for check in checks]


@pytest.mark.parametrize(
    "workload, checks",
    [
        (eg.ADD, [*every_check(page.ADD_SWEEP), page.FRESH_MEMORY]),
        (eg.MATMUL, every_check(page.MATMUL_SWEEP)),
        (eg.SMALL_OPS, [page.CHAIN]),
        (eg.CALL_OVERHEAD, [page.FUNCTION_COSTS_MORE]),
        (eg.FUNCTION_LAYERS, page.LAYER_CHECKS),
        (eg.GRADIENT, [page.GRAPH_GRADIENT]),
        (eg.LOG1PEXP_WORKLOAD, page.LOG1PEXP_CHECKS),
    ],
    ids=lambda value: getattr(value, "name", ""),
)
def test_the_pages_checks_name_the_workloads_variants(workload, checks):
    for check in checks:
        assert set(check.labels) <= set(workload.variants)


def test_the_sweeps_check_at_sizes_they_time():
    for sweep in (page.ADD_SWEEP, page.MATMUL_SWEEP):
        assert set(sweep.checks) <= set(sweep.sizes)
    assert set(page.FRESH_MEMORY_VARIANTS) <= set(eg.ADD.variants)


class FakeWorkers:
    def __init__(self):
        self.runs = []

    def run(self, workload, *, size, settle, quick):
        self.runs.append((size, tuple(settle), quick))
        return add_at(size)


def test_a_sweep_times_in_full_only_the_sizes_its_checks_read():
    workers = FakeWorkers()
    by_size = page.ADD_SWEEP.run(workers)
    assert list(by_size) == list(page.ADD_SIZES)
    full = [(size, settle) for size, settle, quick in workers.runs if not quick]
    assert full == [(1, (page.SMALL_ADD, *page.PEER_SMALL)), (10**7, (page.LARGE_ADD,))]
    assert all(settle == () for _, settle, quick in workers.runs if quick)
    assert page.every_size(by_size) == [m for size in page.ADD_SIZES for m in by_size[size]]


def test_a_sweeps_claims_read_the_times_at_their_sizes():
    claims = page.ADD_SWEEP.claims(add_sweep())
    checks = [page.SMALL_ADD, *page.PEER_SMALL, page.LARGE_ADD]
    assert [c.statement for c in claims] == [check.statement for check in checks]
    # One element: NumPy 1 µs against eager 20 µs; ten million: eager 1.2x NumPy's time.
    assert [c.verdict for c in claims] == ["HELD"] * len(checks)


MACHINE = MachineLimits(memory_bandwidth=16e9, peak_flops=200e9, how={})


def test_the_shares_at_the_largest_sizes_are_of_the_limit_that_bounds_each_op():
    add = {10**7: measurements({"numpy": 10e-3, "eager": 20e-3}, 10**7)}
    lines = page.largest_shares(add, {LARGEST_PRODUCT: PRODUCTS}, MACHINE).splitlines()
    assert lines == [
        "x + x,  numpy    10.0 ms:  50.0% of bandwidth",
        "x + x,  eager    20.0 ms:  25.0% of bandwidth",
        "x @ x,  numpy    10.0 ms: 107.4% of peak",
        "x @ x,  eager    12.0 ms:  89.5% of peak",
    ]
    assert page.product_kernels(PRODUCTS, MACHINE).splitlines()[1] == (
        "eager    12.0 ms   89.5% of the peak"
    )


def test_fresh_memory_sets_numpys_add_beside_its_add_into_an_array_made_once():
    lines = page.fresh_memory(add_at(10**7), MACHINE).splitlines()
    assert [line.split()[0] for line in lines] == list(page.FRESH_MEMORY_VARIANTS)
    assert lines[1] == "numpy-preallocated    5.00 ms  100.0% of bandwidth"


def test_the_call_costs_set_an_eager_op_against_a_python_call_and_the_products_gap():
    lines = page.call_costs(CALLS, PRODUCTS, 40e-9).splitlines()
    assert lines == [
        "one eager op costs 1,000x a Python call, one tf.function call 10,000x",
        "timer's own cost per call (a call doing nothing): 40.0 ns",
        "the eager op's fixed cost is 2.50% of the gap between eager and NumPy on the product"
        " of side 1024",
    ]


def test_the_layers_split_a_call_into_what_each_layer_adds():
    times = page.layer_times(FUNCTION_LAYERS, anatomy.FUNCTION_LAYERS)
    assert times == pytest.approx([100e-6, 150e-6, 50e-6, 100e-6])
    lines = page.layer_split(FUNCTION_LAYERS, OP_LAYERS, PYTHON_CALLS).splitlines()
    assert lines[0] == (
        "tf.function call: 25% in the runtime's execute, 75% in Python layers "
        "(356 Python function calls per call)"
    )
    assert lines[1].startswith("eager op: 38% from the C fast path on (22 Python")
    mostly_python = ClaimReport.of(page.LAYER_CHECKS, FUNCTION_LAYERS).claims[1]
    assert mostly_python.statement.startswith("most of a trivial tf.function call is spent")
    assert (mostly_python.verdict, mostly_python.effect) == (
        "HELD",
        "25% of the call in the runtime",
    )


def test_the_call_check_is_stated_in_the_readers_words():
    (claim,) = ClaimReport.of([page.FUNCTION_COSTS_MORE], CALLS).claims
    assert claim.statement == "a trivial tf.function call costs more than a trivial eager op"
    assert claim.verdict == "HELD"


def test_the_predicted_costs_price_the_extra_ops_at_an_eager_ops_median():
    log1pexp = measurements(
        {"naive": 1e-3, "custom-gradient": 1.1e-3, "stable-custom-gradient": 1.6e-3}
    )
    lines = page.predicted_costs(OP_COUNTS, log1pexp, CALLS).splitlines()
    assert lines[2] == (
        "custom-gradient           6 ops; vs naive +2 ops ≈   +100 µs predicted,   +100 µs measured"
    )
    assert lines[3].split() == [
        "Exp",
        "1,",
        "IdentityN",
        "1,",
        "Log",
        "1,",
        "Mul",
        "1,",
        "Sub",
        "2",
    ]


def test_the_answer_quotes_the_pages_own_claims():
    answer = page.answer_sentences(add_sweep(), FUNCTION_LAYERS, OP_COUNTS)
    assert "x + x on one element took 20.0 µs eagerly" in answer
    assert page.SMALL_ADD.check(add_at(1)).stated in answer
    largest = measured_here(page.LARGE_ADD.check(add_at(10**7)))
    assert f"on large arrays the fixed cost fades: at 10,000,000 elements, {largest}" in answer
    # The call's cost and its share in Python come from the same run, the layers'.
    assert "A tf.function call costs 400 µs to enter, 75% of it in Python" in answer
    assert "custom gradient runs 6 ops to the naive version's 4" in answer
    slow = page.answer_sentences(add_sweep(eager_fixed_s=30e-3), FUNCTION_LAYERS, OP_COUNTS)
    assert "it does not fade to within twice NumPy's time: at 10,000,000 elements, eager" in slow


@pytest.fixture(scope="module")
def errors():
    return page.gradient_errors()


def test_the_gradients_accuracy_claims_hold_on_this_tensorflow(errors):
    claims = page.accuracy_claims(errors).claims
    assert [c.verdict for c in claims] == ["HELD"] * 4
    assert claims[-1] == page.stable_claim(errors)


def test_a_naive_gradient_without_nan_is_said_to_have_none():
    x = np.array([-1.0, 0.0, 1.0], np.float32)
    small = np.full(3, 1e-8)
    made_up = page.GradientErrors(
        x, {"naive": small, "custom-gradient": small, "stable-custom-gradient": small}
    )
    claims = page.accuracy_claims(made_up).claims
    assert (claims[0].verdict, claims[0].evidence) == ("DID NOT HOLD", "no NaN")
    assert claims[2].verdict == "DID NOT HOLD"  # precise everywhere: it lost nothing


def recommended(errors, slower=()):
    """The advice on made-up times, the variants in ``slower`` taking a second."""

    def timed(medians):
        return measurements({label: 1.0 if label in slower else s for label, s in medians.items()})

    chain = ClaimReport.of([page.CHAIN], timed({"eager": 3e-3, "tf-function": 5e-4}))
    gradient = ClaimReport.of(
        [page.GRAPH_GRADIENT], timed({"eager-tape": 2e-3, "tf-function-tape": 8e-4})
    )
    layers = ClaimReport.of(page.LAYER_CHECKS, timed(FUNCTION_LAYER_MEDIANS))
    return page.recommendations(chain, gradient, layers, errors)


def test_the_short_answer_advises_what_held_and_not_what_did_not(errors):
    advice = recommended(errors)
    assert [r.advised for r in advice] == [True] * 4
    assert ShortAnswer("", advice).advice == advice
    slower = recommended(errors, slower=("tf-function", "concrete-function"))
    assert [r.advised for r in slower] == [False, True, False, True]
    assert slower[0].advice == "Put chains of small ops in one tf.function"


def test_the_chain_recipe_computes_what_the_timed_tf_function_computes():
    recipe = run_recipe("eager", "Wrap a chain of small ops in tf.function")
    timed = eg.SMALL_OPS.make_call("tf-function", 100)
    x = tf.constant(eg.make_vector(100))
    np.testing.assert_allclose(recipe["chain_in_graph"](x), timed(), rtol=1e-5)


@pytest.mark.parametrize(
    "heading",
    [
        "Compute a gradient inside tf.function",
        "Call the concrete function on a hot path",
        "A stable custom gradient for log(1 + e^x)",
    ],
)
def test_the_later_recipes_hold_with_the_imports_of_the_first(heading):
    run_recipe("eager", heading)
