"""Every variant computes the same fit, and the fit is the least-squares line."""

import numpy as np
import pytest

from perfguide.measure import runner
from perfguide.measure.measurement import Measurement
from perfguide.pages import linear_regression as page
from perfguide.report.verdicts.claims import ClaimReport
from perfguide.workloads import WORKLOADS
from perfguide.workloads import linear_regression as lr
from tests.recipes import run_recipe

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


@pytest.fixture(scope="module")
def convergence():
    return page.convergence(1000)


def test_standardizing_converges_far_sooner_and_unscales_exactly(convergence):
    # The learner's question: ~1e5 iterations raw, ~1e2 scaled.
    assert 10_000 < convergence.raw_iterations < 100_000
    assert convergence.scaled_iterations < 100
    assert convergence.recovery_error < 1e-9
    assert np.all(np.diff(convergence.raw_losses) <= 0), "fixed-step descent never rises here"
    assert [c.verdict for c in page.convergence_claims(convergence).claims] == ["HELD", "HELD"]
    assert f"raw x {convergence.raw_iterations}, standardized x" in str(convergence)


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


def measured(label, seconds, size=1000):
    return Measurement(label, "iteration", 1, 1, 0.0, (seconds,) * 5, size=size)


#: Per-step medians shaped like a build's: NumPy beats every per-step TensorFlow variant, and the
#: compiled loop beats NumPy.
STEP_MEDIANS = {
    "numpy": 30e-6,
    "tf1-session": 400e-6,
    "eager": 3e-3,
    "tf-function-step": 400e-6,
    "tf-function-loop": 25e-6,
    "xla-loop": 3e-6,
}


def steps_measured(**changed):
    return [measured(label, changed.get(label, s)) for label, s in STEP_MEDIANS.items()]


def test_the_pages_checks_name_the_workloads_variants():
    for claim in page.STEP_CLAIMS + page.LARGE_CLAIMS:
        assert set(claim.labels) <= set(lr.VARIANTS)
    assert set(page.SWEEP_VARIANTS) <= set(lr.VARIANTS)


def test_the_short_answer_advises_what_held_and_quotes_the_checks(convergence):
    steps = ClaimReport.of(page.STEP_CLAIMS, steps_measured())
    answer = page.short_answer(steps, convergence, page.learners_scenario(steps_measured()), 2)
    assert steps[page.NUMPY_VS_SESSION].stated in answer.answer
    assert [r.advised for r in answer.recommendations] == [True] * 4
    slower = ClaimReport.of(page.STEP_CLAIMS, steps_measured(**{"xla-loop": 40e-6}))
    compiled = page.short_answer(slower, convergence, None, 2).recommendations[1]
    assert compiled.advice.startswith("Compile the loop") and not compiled.advised


def test_the_learners_scenario_sets_their_steps_at_each_median():
    table = page.learners_scenario(steps_measured())
    assert table.caption == "100,000 steps on 1,000 points"
    assert table.rows[0] == ["numpy", "about 4 s", "3.00 s"]
    assert table.rows[2] == ["eager", "not run", "300 s"]


class FakeWorkers:
    def __init__(self):
        self.runs = []

    def run(self, workload, variants, *, size, settle, quick):
        self.runs.append((size, tuple(settle), quick))
        return [measured(label, 1e-3, size) for label in variants]


def test_the_sweep_times_every_size_but_the_default_fully_only_at_the_largest():
    workers = FakeWorkers()
    at_default = steps_measured()
    by_size = page.sweep(workers, at_default)
    assert list(by_size) == list(page.SIZES)
    assert [m.label for m in by_size[1000]] == list(page.SWEEP_VARIANTS)
    assert [size for size, _, _ in workers.runs] == [s for s in page.SIZES if s != 1000]
    assert [(settle, quick) for size, settle, quick in workers.runs if size == page.SIZES[-1]] == [
        (page.LARGE_CLAIMS, False)
    ]
    assert all(quick for size, _, quick in workers.runs if size != page.SIZES[-1])


def test_the_loop_recipe_fits_what_the_timed_compiled_loop_fits():
    recipe = run_recipe("linear_regression", "Loop inside one tf.function over tf.range")
    x, y = lr.make_data(1000)
    timed = lr.VARIANTS["xla-loop"](x, y, lr.LEARNING_RATE).advance(500)
    fitted = recipe["fit"](x, y, 500)
    assert [float(v) for v in fitted] == pytest.approx(timed, rel=1e-4)
