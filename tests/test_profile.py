"""A trace of a matmul and a few element-wise ops: the reader finds each op once per call, with the
matmul on top; nested ops are counted once; a file that is not a trace is refused by name."""

import pytest
import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

from perfguide.measure import profile
from perfguide.report.tables.ops import OpTable

CALLS = 5
#: The matmul's type: oneDNN's kernel on x86 (TensorFlow's default there), else the plain one.
MATMUL_TYPES = {"_MklMatMul", "MatMul"}
ELEMENT_WISE_TYPES = {"AddV2", "Mul", "Sub"}


@tf.function
def matmul_then_element_wise(a, b):
    with tf.device("/CPU:0"):  # host ops, on a GPU machine too
        return (tf.matmul(a, b) + 1.0) * 2.0 - 0.5


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return tmp_path_factory.mktemp("profile")


@pytest.fixture(scope="module")
def trace(logdir):
    a = tf.random.stateless_normal((512, 512), seed=(1, 2))
    return profile.capture(matmul_then_element_wise, a, a, logdir=logdir, calls=CALLS)


@pytest.fixture(scope="module")
def events(trace):
    return profile.op_events(trace)


def test_the_trace_is_a_file_in_the_logdir_where_xprof_looks(trace, logdir):
    assert trace.is_file() and trace.name.endswith(".xplane.pb")
    assert trace.relative_to(logdir).parts[:2] == ("plugins", "profile")


def test_ops_are_ranked_by_self_time_and_given_their_share(events, tmp_path):
    # The real trace: ranked by self time, whatever the machine made of each op.
    times = profile.op_times(events)
    assert [t.self_s for t in times] == sorted((t.self_s for t in times), reverse=True)
    # Known durations, not the machine's speed, decide which op is on top and its share.
    path = _handmade_trace(
        tmp_path / "ranked.xplane.pb",
        [
            ("f/add:AddV2", 0, 10, {}),
            ("f/MatMul:MatMul", 20, 80, {}),
            ("f/mul:Mul", 110, 5, {}),
            ("f/add_1:AddV2", 120, 5, {}),
        ],
    )
    ranked = [(t.op, t.count, t.share) for t in profile.op_times(profile.op_events(path))]
    assert ranked == [
        ("MatMul", 1, pytest.approx(0.8)),
        ("AddV2", 2, pytest.approx(0.15)),
        ("Mul", 1, pytest.approx(0.05)),
    ]


def test_each_op_runs_once_per_call(events):
    counts = {t.op: t.count for t in profile.op_times(events)}
    (matmul,) = MATMUL_TYPES & counts.keys()
    assert counts == dict.fromkeys({matmul, *ELEMENT_WISE_TYPES}, CALLS)
    by_name = {t.op: t.count for t in profile.op_times(events, by="name")}
    assert by_name == dict.fromkeys({"MatMul", "add", "mul", "sub"}, CALLS)


def test_shares_sum_to_one_and_self_time_fits_in_the_duration(events):
    times = profile.op_times(events)
    assert sum(t.share for t in times) == pytest.approx(1)
    assert all(0 <= e.self_ps <= e.duration_ps for e in events)
    assert all(t.self_s <= t.total_s for t in times)


def test_the_warm_up_keeps_tracing_out_of_the_trace(trace, tmp_path):
    assert profile.traced_calls(trace) == 0
    # A function made anew each call traces in every call, and the trace shows it.
    x = tf.ones(4)
    retracing = profile.capture(lambda: tf.function(tf.math.square)(x), logdir=tmp_path, calls=2)
    assert profile.traced_calls(retracing) == 2


def _handmade_trace(path, events):
    """A trace of one host thread holding ``events``, each (label, start_ps, duration_ps, stats),
    stored as TensorFlow stores them: names once per plane, referred to by id."""
    space = xplane_pb2.XSpace()
    plane = space.planes.add(name=profile.HOST_PLANE)
    line = plane.lines.add(name="tf_Compute/1", timestamp_ns=1000)
    ids = {}

    def name_id(table, name):
        new_id = ids.setdefault((id(table), name), len(ids) + 1)
        table[new_id].name = name
        return new_id

    for label, start_ps, duration_ps, stats in events:
        metadata_id = name_id(plane.event_metadata, label)
        event = line.events.add(
            metadata_id=metadata_id, offset_ps=start_ps, duration_ps=duration_ps
        )
        for name, value in stats.items():
            stat = event.stats.add(metadata_id=name_id(plane.stat_metadata, name))
            if isinstance(value, str):
                stat.ref_value = name_id(plane.stat_metadata, value)
            else:
                stat.int64_value = value
    path.write_bytes(space.SerializeToString())
    return path


def test_nested_ops_are_counted_once(tmp_path):
    path = _handmade_trace(
        tmp_path / "nested.xplane.pb",
        [
            ("call:PartitionedCall", 0, 100, {}),
            ("ExecutorState::Process", 5, 90, {}),  # not an op: its ops are the call's children
            ("f/MatMul:MatMul", 10, 50, {}),
            ("f/MatMul/inner:Fill", 20, 5, {}),  # nested two deep: the matmul's, not the call's
            ("f/add:AddV2", 70, 10, {}),
            ("EagerExecute", 200, 30, {"eager_op": "Relu", "is_func": 0}),  # an eager op
            ("EagerExecute", 300, 40, {"eager_op": "__inference_f_1", "is_func": 1}),  # a call
        ],
    )
    events = profile.op_events(path)
    assert {e.name: e.self_ps for e in events} == {
        "call": 40, "f/MatMul": 45, "f/MatMul/inner": 5, "f/add": 10, "Relu": 30
    }  # fmt: skip
    assert {e.name: e.kind for e in events}["Relu"] == "eager"
    assert sum(e.self_ps for e in events) == 100 + 30  # the time the thread spent in ops


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"environment": {}, "measurements": []}', "is not an XSpace trace"),
        (b"", "has no /host:CPU plane"),
    ],
)
def test_a_file_that_is_not_a_trace_is_refused(tmp_path, content, reason):
    path = tmp_path / "results.json"
    path.write_bytes(content)
    with pytest.raises(profile.TraceError, match=reason):
        profile.op_events(path)


def test_a_missing_trace_is_refused(tmp_path):
    with pytest.raises(profile.TraceError, match="cannot read trace"):
        profile.op_events(tmp_path / "missing.xplane.pb")


def test_the_table_shows_the_top_ops_and_sums_the_rest(events):
    table = OpTable(profile.op_times(events), top=2)
    rows = table.rows()
    assert len(rows) == 3 and rows[-1][0] == "2 other op types"
    assert sum(float(row[-1].rstrip(" %").replace(",", "")) for row in rows) == pytest.approx(
        100, abs=0.5
    )
    text = str(table).splitlines()
    assert text[0].startswith("op type") and len({len(line) for line in text[:2]}) == 1
    assert 'class="table perfguide-comparison"' in table._repr_html_()


def test_an_empty_table_is_refused():
    with pytest.raises(ValueError, match="no TensorFlow ops"):
        OpTable([])


def test_how_to_open_names_the_package_and_the_logdir():
    line = profile.how_to_open("tf-function.profile")
    assert "pip install xprof" in line and "--logdir=tf-function.profile" in line
    assert "\n" not in line


def test_a_trace_needs_a_call(tmp_path):
    with pytest.raises(ValueError, match="at least one call"):
        profile.capture(tf.identity, 1.0, logdir=tmp_path, calls=0)
