"""Every way to share the input trains each example once an epoch across the workers (OFF:
once a worker); the pipeline feeds the distributed chapter's MLP its 256 features."""

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from perfguide.processes import distributed_cluster
from perfguide.workloads import distributed, distributed_input

BATCH = 16
EVERY_EXAMPLE = range(distributed_input.FILES * distributed_input.EXAMPLES_PER_FILE)


def test_the_files_are_the_same_for_the_same_seed(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first = distributed_input.write_files(tmp_path / "a")
    second = distributed_input.write_files(tmp_path / "b")
    assert len(first) == distributed_input.FILES
    for a, b in zip(first, second, strict=True):
        assert Path(a).read_bytes() == Path(b).read_bytes()


def test_a_batch_is_the_mlps_features_labels_and_indices():
    batches = distributed_input.pipeline(distributed_input.files(), BATCH)
    features, labels, indices = next(iter(batches))
    assert features.shape == (BATCH, distributed.FEATURES) and features.dtype == tf.float32
    assert float(tf.reduce_min(features)) >= 0 and float(tf.reduce_max(features)) <= 1
    assert set(labels.numpy()) <= set(range(distributed.CLASSES))
    np.testing.assert_array_equal(indices, np.arange(BATCH))


@pytest.mark.parametrize("sharding", [*distributed_input.SHARDINGS, "OFF"])
def test_one_process_trains_every_example_once_an_epoch(sharding):
    strategy = distributed.make_strategy("none")
    seen = distributed_input.examples_seen(strategy, sharding, BATCH)
    assert sorted(seen) == list(EVERY_EXAMPLE)


def test_a_fed_step_trains_on_the_next_batch():
    strategy = distributed.make_strategy("none")
    fed = distributed_input.FedTraining(strategy, BATCH, "FILE")
    losses = [float(fed.step()) for _ in range(3)]
    assert all(np.isfinite(losses)) and len(set(losses)) == 3


def seen_by_two_workers(sharding):
    job = {"do": "examples-seen", "strategy": "multi-worker", "batch": BATCH, "sharding": sharding}
    workers = [distributed_cluster.Task("worker", 0), distributed_cluster.Task("worker", 1)]
    printed = distributed_cluster.run(
        workers, [*distributed_cluster.TASK, json.dumps(job)], timeout_s=180
    )
    return [json.loads(out)["seen"] for out in printed.values()]


@pytest.mark.processes
@pytest.mark.parametrize("sharding", distributed_input.SHARDINGS)
def test_two_workers_share_every_example_once_an_epoch(sharding):
    first, second = seen_by_two_workers(sharding)
    assert len(first) == len(second) and sorted(first + second) == list(EVERY_EXAMPLE)


@pytest.mark.processes
def test_without_sharding_each_worker_trains_every_example():
    counts = Counter(i for seen in seen_by_two_workers("OFF") for i in seen)
    assert set(counts) == set(EVERY_EXAMPLE) and set(counts.values()) == {2}
