"""The harness, tested on callables whose cost is known."""

import dataclasses
import gc
import math
import operator
import sys
import threading
import time

import pytest

from perfguide.measure import timer
from perfguide.measure.measurement import Measurement
from perfguide.measure.timer import Interleaved, Timed, loop_floor_s, measure, measure_interleaved


class FakeClock:
    """Stands in for the timer's clock: time moves only when the code under test says so, so
    these tests check the harness's arithmetic, not how busy the machine is."""

    def __init__(self):
        self.now = self.cpu = 0.0
        self.sleeps = []
        # How long a thread pool keeps one core spinning after work on several cores.
        self.spin_s = self.spinning_until = 0.0

    def perf_counter(self):
        return self.now

    def process_time(self):
        return self.cpu

    def spend(self, seconds, cores=1):
        self.now += seconds
        self.cpu += seconds * cores
        if cores > 1:
            self.spinning_until = self.now + self.spin_s

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.cpu += max(0.0, min(seconds, self.spinning_until - self.now))
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr("perfguide.measure.timer.time", fake)
    return fake


def test_median_is_the_cost_per_call(clock):
    m = measure(lambda: clock.spend(1e-3), label="1 ms", min_block_s=0.02, blocks=5)
    assert m.median_s == pytest.approx(1e-3)
    assert m.iqr_s == pytest.approx(0, abs=1e-12) and not m.noisy
    assert len(m.block_s) == 5


def test_time_is_per_unit_of_work(clock):
    m = measure(lambda: clock.spend(2e-3), label="4 units", units_per_call=4, min_block_s=0.02)
    assert m.median_s == pytest.approx(0.5e-3)


def calls_per_block(fn, min_block_s):
    return Interleaved({"x": Timed(fn)}, min_block_s=min_block_s).calls["x"]


def test_calibration_makes_blocks_just_long_enough(clock):
    calls = calls_per_block(lambda: clock.spend(1e-4), min_block_s=0.05)
    assert 0.05 <= calls * 1e-4 < 0.05 * 1.5


def test_slow_call_needs_one_call_per_block(clock):
    assert calls_per_block(lambda: clock.spend(0.03), min_block_s=0.02) == 1


def test_first_call_is_reported_apart_from_steady_state(clock):
    costs = iter([0.05])

    def traced_then_fast():
        clock.spend(next(costs, 1e-4))

    m = measure(traced_then_fast, label="trace", min_block_s=0.01)
    assert m.first_call_s == pytest.approx(0.05)
    assert m.median_s == pytest.approx(1e-4)
    assert m.first_call_overhead_s == pytest.approx(0.05 - 1e-4)


def test_asynchronous_result_is_waited_for_inside_the_timed_block(clock):
    class Pending:
        """A result whose work finishes only when waited for, like a JAX array."""

        def block_until_ready(self):
            clock.spend(2e-3)
            return self

    m = measure(Pending, label="pending", min_block_s=0.02)
    assert m.median_s == pytest.approx(2e-3)


def test_device_sync_ends_every_block_inside_the_clock(clock):
    syncs = []

    def sync():
        syncs.append(clock.now)
        clock.spend(1e-3)  # the device finishing queued work

    (m,) = measure_interleaved(
        {"x": Timed(lambda: clock.spend(1e-3))}, min_block_s=0.01, blocks=5, sync=sync
    )
    # A block of n calls takes n ms plus the 1 ms its closing sync waits.
    assert m.median_s == pytest.approx((m.calls_per_block + 1) * 1e-3 / m.calls_per_block)
    assert len(syncs) > 2 * 5


class Untouchable:
    """A result that records every attribute anyone looks up on it (a copy would read some)."""

    touched = []

    def __getattribute__(self, name):
        Untouchable.touched.append(name)
        return object.__getattribute__(self, name)


def test_a_result_is_neither_copied_nor_touched_in_the_timed_blocks(clock, monkeypatch):
    monkeypatch.setattr(Untouchable, "touched", [])

    def variant():
        clock.spend(1e-3)
        return Untouchable()

    run = Interleaved({"x": Timed(variant)}, min_block_s=0.01)
    # The first call's result is only asked whether there is work left to wait for (JAX's).
    assert set(Untouchable.touched) <= {"block_until_ready", "__class__"}
    Untouchable.touched.clear()
    run.add_blocks(5)
    assert Untouchable.touched == []


def test_a_tensorflow_result_is_complete_when_returned_so_it_is_not_waited_for():
    tf = pytest.importorskip("tensorflow")
    # Neither waited for nor copied to NumPy: returning an eager tensor costs the call alone.
    assert timer._waiter(tf.ones(3)) is None and timer._waiter([tf.ones(3), 1.0]) is None


class CountingArgs(tuple):
    """Arguments that count how often they are unpacked: ``fn(*args)`` and ``(a,) = args``
    iterate a tuple subclass (an exact tuple is passed on without a visible step)."""

    def __iter__(self):
        self.unpacked = getattr(self, "unpacked", 0) + 1
        return super().__iter__()


@pytest.mark.parametrize("n_args", [0, 1, 3])
def test_the_timed_loop_makes_the_variants_own_call_and_nothing_else(clock, n_args):
    # What the loop adds to a call is structure, not a time: it calls the variant's own callable
    # with the variant's own argument objects, straight from the loop (no wrapper in between),
    # with the garbage collector off, and reads the clock and syncs once per block, not per call.
    args = CountingArgs(object() for _ in range(n_args))
    calls, callers, gc_on, syncs = [], set(), [], []

    def variant(*given):
        calls.append(given)
        callers.add(sys._getframe(1).f_code)
        gc_on.append(gc.isenabled())
        clock.spend(1e-3)

    elapsed, cores = timer._time_calls(
        Timed(variant, args), 50, None, lambda: syncs.append(len(calls))
    )
    unpacked = getattr(args, "unpacked", 0)  # before the checks below iterate the arguments
    assert len(calls) == 50
    assert all(len(given) == n_args and all(map(operator.is_, given, args)) for given in calls)
    assert callers == {timer._time_calls.__code__}
    assert not any(gc_on) and gc.isenabled()
    assert syncs == [0, 50]
    assert elapsed == pytest.approx(50e-3) and cores == pytest.approx(1)
    if n_args < 2:
        # Unpacking the arguments costs as much as the cheapest variants' call: with none or
        # one argument the loop unpacks them at most once per block, not once per call.
        assert unpacked <= 1


def test_timed_blocks_make_exactly_their_calls(clock):
    calls = []

    def variant(x):
        calls.append(x)
        clock.spend(1e-3)

    run = Interleaved({"x": Timed(variant, (7,))}, min_block_s=0.01)
    before = len(calls)
    run.add_blocks(5)
    assert len(calls) - before == 5 * run.calls["x"] and set(calls) == {7}


def test_the_loop_floor_is_the_fastest_block_of_a_call_that_does_nothing(clock, monkeypatch):
    def nothing():
        clock.spend(1e-5 * (1 + clock.now))  # the loop's own cost, on a machine that slows

    measured = []

    def keep(*args, **kwargs):
        measured.append(measure(*args, **kwargs))
        return measured[-1]

    monkeypatch.setattr(timer, "_nothing", nothing)
    monkeypatch.setattr(timer, "measure", keep)
    floor = loop_floor_s(min_block_s=0.01)
    (m,) = measured
    # What the loop costs at best per call: the fastest block, not the median.
    assert floor == min(m.block_s) < m.median_s
    assert floor == pytest.approx(1e-5, rel=0.05)


def test_real_clock_times_a_busy_wait_no_shorter_than_it_is():
    def busy_wait():
        end = time.perf_counter() + 1e-3
        while time.perf_counter() < end:
            pass

    assert measure(busy_wait, label="busy", min_block_s=0.01, blocks=5).median_s >= 1e-3


def make(samples):
    return Measurement("v", "call", 1, 1, 0.0, tuple(samples))


def test_statistics_of_known_samples():
    m = make([1.0, 2.0, 3.0, 4.0, 5.0])
    assert m.median_s == 3.0
    assert m.quartiles_s == (2.0, 3.0, 4.0)
    assert m.iqr_s == 2.0


def test_one_process_is_noisy_when_its_blocks_spread_past_ten_percent():
    steady = make([1.0, 1.01, 0.99, 1.02, 1.0, 0.98, 1.01, 1.0])
    scattered = make([0.6, 0.8, 1.0, 1.3, 1.5, 0.7, 1.4])
    assert not steady.noisy and scattered.noisy


def test_processes_are_noisy_when_they_spread_past_twice_the_machines_usual():
    # The tests' calibration: processes usually 3 % apart (sd of the log).
    def processes(*medians):
        return Measurement(
            "v", "call", 1, 1, 0.0, tuple(m for m in medians for _ in range(3)),
            blocks_per_process=(3,) * len(medians), process_ids=tuple(map(str, medians)),
        )  # fmt: skip

    assert not processes(1.0, 1.03, 0.98).noisy
    assert processes(1.0, 1.15, 0.9).noisy


def test_round_trip_through_dict():
    m = make([1.0, 2.0, 3.0, 4.0, 5.0])
    record = m.to_dict()
    assert record["median_s"] == 3.0 and record["iqr_s"] == 2.0 and record["noisy"]
    assert Measurement.from_dict(record) == m


def test_a_workers_timings_rebuild_the_measurement_without_its_statistics():
    m = make([1.0, 2.0, 3.0, 4.0, 5.0])
    timings = m.timings()
    assert Measurement.from_dict(timings) == m
    assert not {"median_s", "interval_s", "noisy"} & set(timings)  # worked out by the pool


def test_cores_busy_round_trips_and_is_optional_in_older_records():
    m = dataclasses.replace(make([1.0] * 5), cores_busy=1.9)
    record = m.to_dict()
    assert record["cores_busy"] == 1.9 and Measurement.from_dict(record) == m
    del record["cores_busy"]
    assert Measurement.from_dict(record).cores_busy is None


def test_fewer_than_five_blocks_is_refused():
    with pytest.raises(ValueError, match="at least 5 blocks"):
        measure(lambda: None, label="x", blocks=3)


class FakeFunction:
    """Stands in for a tf.function: counts its traces; retraces on every call when asked to."""

    def __init__(self, retrace_every_call):
        self.traces = 0
        self.retrace_every_call = retrace_every_call

    def __call__(self):
        if self.traces == 0 or self.retrace_every_call:
            self.traces += 1

    def experimental_get_tracing_count(self):
        return self.traces


def test_retraces_in_the_timed_blocks_are_counted_and_flagged():
    steady, retracing = FakeFunction(False), FakeFunction(True)
    quiet = measure(steady, label="steady", min_block_s=0.001, blocks=5, traced=[steady])
    loud = measure(retracing, label="loud", min_block_s=0.001, blocks=5, traced=[retracing])
    assert quiet.retraces == 0 and not quiet.retraced
    # Every timed call retraced; the first call and calibration are not counted.
    assert loud.retraces == 5 * loud.calls_per_block < retracing.traces
    assert f"RETRACED {loud.retraces}x" in loud.flags
    # The first call's trace is counted apart, where its cost is.
    assert quiet.first_call_traces == loud.first_call_traces == 1


def test_unwatched_measurement_has_no_trace_count():
    unwatched = measure(lambda: None, label="x", min_block_s=0.001, blocks=5)
    assert unwatched.retraces is None and unwatched.first_call_traces is None


def test_interleaved_blocks_spread_drift_over_all_variants(clock):
    def slowing():
        clock.spend(1e-3 * (1 + 10 * clock.now))  # the machine slows down as the run goes on

    a, b = measure_interleaved(
        {"a": Timed(slowing), "b": Timed(slowing)}, min_block_s=0.01, blocks=5
    )
    # Run one after the other, b would be timed on a slower machine than a and look ~40 % slower.
    assert b.median_s / a.median_s == pytest.approx(1, rel=0.15)
    assert (a.label, b.label) == ("a", "b")


def waits(clock, spin_s):
    """The sleeps of an interleaved run of a variant on two cores, whose thread pool spins
    ``spin_s`` after each block, and one on one core; and its run."""
    clock.spin_s = spin_s
    timed = {
        "threaded": Timed(lambda: clock.spend(1e-3, cores=2)),
        "single": Timed(lambda: clock.spend(1e-3)),
    }
    run = Interleaved(timed, min_block_s=0.01).add_blocks(4)
    return clock.sleeps, run


def test_a_variant_after_one_that_used_several_cores_waits_for_them_to_go_idle(clock):
    # BLAS thread pools keep spinning after their work; a variant timed right after them would
    # compete with those threads for the cores.
    sleeps, run = waits(clock, spin_s=4 * timer.IDLE_WINDOW_S)
    # Blocks run threaded, single | single, threaded | threaded, single | single, threaded, after
    # calibration (threaded, then single): "single" waits after each block of "threaded" that
    # comes right before it, until the pool has gone idle: four busy windows, then an idle one.
    assert sleeps == [timer.IDLE_WINDOW_S] * 5 * 3
    assert run.samples["single"] == pytest.approx([1e-3] * 4)


def test_a_pool_that_goes_idle_at_once_costs_one_window_and_one_that_spins_on_is_cut_short(
    clock,
):
    assert waits(clock, spin_s=0)[0] == [timer.IDLE_WINDOW_S] * 3
    clock.sleeps.clear()
    sleeps, _ = waits(clock, spin_s=10)
    per_wait = math.ceil(timer.SPIN_DOWN_S / timer.IDLE_WINDOW_S)
    assert sleeps == [timer.IDLE_WINDOW_S] * per_wait * 3


def test_the_process_cpu_time_counts_the_other_threads():
    # What lets waiting for idle see a pool spin: the process's CPU time, which it reads, counts
    # every thread's. No wall time is compared: the spinner stops once it has spent 50 ms of its
    # own CPU time, however long a shared (or single) core takes to give it that.
    spent = []

    def spin():
        start = time.thread_time()
        while time.thread_time() - start < 0.05:
            pass
        spent.append(time.thread_time() - start)

    before = time.process_time()
    spinner = threading.Thread(target=spin)
    spinner.start()
    spinner.join()
    assert time.process_time() - before >= spent[0] >= 0.05


def test_waiting_for_idle_sees_another_thread_spin_and_stops_when_it_does(clock):
    clock.spinning_until = 0.1  # another thread keeps a core busy for 0.1 s
    timer.wait_until_idle(limit_s=1.0)
    # It waits in windows, and stops at the end of the first that was mostly idle.
    assert set(clock.sleeps) == {timer.IDLE_WINDOW_S}
    assert 0.1 <= clock.now < 0.1 + 2 * timer.IDLE_WINDOW_S
    clock.sleeps.clear()
    timer.wait_until_idle()
    assert clock.sleeps == [timer.IDLE_WINDOW_S]  # idle already: one window
    clock.sleeps.clear()
    clock.spinning_until = math.inf
    start = clock.now
    timer.wait_until_idle(limit_s=0.1)  # a pool that never stops costs the limit, no more
    assert 0.1 <= clock.now - start < 0.1 + timer.IDLE_WINDOW_S


def test_cores_busy_is_the_median_over_the_timed_blocks(clock):
    calls = iter(range(10**6))

    def mostly_two_cores():
        # One call in 40 runs on one core: a block holding one averages 1.9 cores.
        clock.spend(1e-3, cores=1 if next(calls) % 40 == 0 else 2)

    timed = {"threaded": Timed(mostly_two_cores), "single": Timed(lambda: clock.spend(1e-3))}
    run = Interleaved(timed, min_block_s=0.01).add_blocks(5)
    threaded, single = run.measurements()
    assert min(run.cores_busy["threaded"]) < 2 and threaded.cores_busy == pytest.approx(2)
    assert single.cores_busy == pytest.approx(1)


def test_single_threaded_variants_never_wait(clock):
    timed = {name: Timed(lambda: clock.spend(1e-3)) for name in ("a", "b")}
    Interleaved(timed, min_block_s=0.01).add_blocks(6)
    assert clock.sleeps == []
