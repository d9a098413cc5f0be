"""Every variant computes the same fit, and the fit is the least-squares line."""

import numpy as np
import pytest

from perfguide.measure import runner
from perfguide.workloads import WORKLOADS
from perfguide.workloads import linear_regression as lr

VARIANTS = list(lr.VARIANTS)


@pytest.fixture(scope="module")
def data():
    return lr.make_data(1000)


@pytest.fixture(scope="module")
def numpy_after_50_steps(data):
    return lr.VARIANTS["numpy"](*data, lr.LEARNING_RATE).advance(50)


@pytest.mark.parametrize("variant", VARIANTS)
def test_variants_agree_after_the_same_steps(variant, data, numpy_after_50_steps):
    advance = lr.VARIANTS[variant](*data, lr.LEARNING_RATE).advance
    advance(20)
    assert advance(30) == pytest.approx(numpy_after_50_steps, rel=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
def test_variants_converge_to_least_squares(variant):
    # On standardized x every variant converges in a few hundred steps, so even eager is quick.
    x, y = lr.make_data(1000, np.float64)
    x_scaled, mean, std = lr.standardize(x)
    advance = lr.VARIANTS[variant](
        x_scaled.astype(np.float32), y.astype(np.float32), lr.SCALED_LEARNING_RATE
    ).advance
    fitted = lr.unscale(*advance(200), mean, std)
    assert fitted == pytest.approx(lr.least_squares(x, y), rel=1e-4)


def test_standardizing_converges_far_sooner_and_unscales_exactly():
    x, y = lr.make_data(1000, np.float64)
    optimum_ab = lr.least_squares(x, y)
    optimum = lr.mean_squared_error(x, y, *optimum_ab)
    raw_losses, raw_ab = lr.loss_curve(x, y, lr.LEARNING_RATE, steps=100_000)
    x_scaled, mean, std = lr.standardize(x)
    scaled_losses, scaled_ab = lr.loss_curve(x_scaled, y, lr.SCALED_LEARNING_RATE, steps=1_000)
    raw_iterations = lr.iterations_to_converge(raw_losses, optimum)
    scaled_iterations = lr.iterations_to_converge(scaled_losses, optimum)
    # The seed: ~1e5 iterations raw, ~1e2 scaled.
    assert 10_000 < raw_iterations < 100_000
    assert scaled_iterations < 100
    assert lr.unscale(*scaled_ab, mean, std) == pytest.approx(optimum_ab, rel=1e-9)
    assert raw_ab == pytest.approx(optimum_ab, rel=1e-2)
    assert np.all(np.diff(raw_losses) <= 0), "fixed-step descent on a convex quadratic never rises"


def test_never_converging_is_reported_as_none():
    assert lr.iterations_to_converge(np.array([5.0, 4.0, 3.0]), optimum=1.0) is None


def test_data_is_the_seeds_point_cloud():
    x, y = lr.make_data(1000, np.float64)
    np.testing.assert_allclose(x, np.arange(100, step=0.1), atol=1e-12)
    np.testing.assert_allclose(y, x + 20 * np.sin(x / 10) + 15)


def test_work_per_call_stays_level_as_the_problem_grows():
    assert lr.steps_per_call("numpy", 1000) == 100
    assert lr.steps_per_call("xla-loop", 1000) == 10_000
    assert lr.steps_per_call("numpy", 10_000_000) == 1
    assert lr.steps_per_call("tf-function-loop", 100) == 10_000


def test_workload_is_registered_with_its_variants():
    workload = WORKLOADS["linear-regression"]
    assert workload.variants == tuple(VARIANTS)
    assert workload.baseline in workload.variants
    timed = workload.make_call("numpy", 100)
    assert timed.units_per_call == lr.steps_per_call("numpy", 100)
    assert np.isfinite(timed()).all()


@pytest.mark.parametrize("variant", ["tf-function-step", "tf-function-loop", "xla-loop"])
def test_graph_variants_trace_once_while_timed(variant):
    m = runner.run(WORKLOADS["linear-regression"], [variant], size=100, quick=True)[0]
    assert m.retraces == 0
