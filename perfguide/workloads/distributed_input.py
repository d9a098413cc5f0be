"""How each worker of a cluster reads its share of the data: ``tf.data``'s auto-sharding
policies and ``distribute_datasets_from_function``, feeding the distributed chapter's MLP.

The data are small grayscale images, as JPEG files would hold them: :data:`FILES` TFRecord files
of :data:`EXAMPLES_PER_FILE` records, each a 64x64 JPEG, its label and its index in the data set
(so that a test can tell which examples each worker trained on). The pipeline a reader writes
decodes each image, scales it to 16x16 and flattens it into the MLP's 256 features.

The ways to share it between workers (:data:`SHARDINGS`):

* ``FILE``: ``experimental_distribute_dataset`` with ``AutoShardPolicy.FILE``: each worker reads
  its own files (``AUTO``, the default, chooses it for a data set read from files);
* ``DATA``: ``AutoShardPolicy.DATA``: each worker reads and decodes every file and keeps every
  N-th example (``AUTO`` falls back to it where the source is no files, e.g. arrays in memory);
* ``from a function``: ``distribute_datasets_from_function``: each worker builds its own
  pipeline, sharding the files by its input context before it decodes anything, and batches its
  own share of the global batch.

``AutoShardPolicy.OFF`` is left out of the timings: each worker then reads all the data, and the
cluster trains every example once a worker an epoch (:func:`examples_seen` counts them).
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.measure.timer import Timed
from perfguide.workloads import distributed
from perfguide.workloads.base import Workload

FILES, EXAMPLES_PER_FILE = 8, 128
IMAGE_SIDE, FEATURE_SIDE = 64, 16
_FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "index": tf.io.FixedLenFeature([], tf.int64),
}
_policy = tf.data.experimental.AutoShardPolicy
FROM_FUNCTION = "from a function"
SHARDINGS = ("FILE", "DATA", FROM_FUNCTION)
#: Batches each pipeline decodes ahead. A fixed buffer, not ``tf.data.AUTOTUNE``'s, which grows
#: while its variant waits for its turn in the process and keeps the core decoding for it.
PREFETCH = 1


def _example(image: bytes, label: int, index: int) -> bytes:
    def ints(value: int) -> tf.train.Feature:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    feature = {
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
        "label": ints(label),
        "index": ints(index),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_files(directory: Path, seed: int = 0) -> list[str]:
    """The data set's :data:`FILES` files in ``directory``, the same for the same ``seed``."""
    rng = np.random.default_rng(seed)
    paths = []
    for f in range(FILES):
        path = directory / f"images-{f}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for i in range(EXAMPLES_PER_FILE):
                pixels = rng.integers(0, 256, (IMAGE_SIDE, IMAGE_SIDE, 1), dtype=np.uint8)
                label = int(rng.integers(distributed.CLASSES))
                image = tf.io.encode_jpeg(pixels).numpy()
                writer.write(_example(image, label, f * EXAMPLES_PER_FILE + i))
        paths.append(str(path))
    return paths


@functools.cache
def files() -> list[str]:
    """This process's copy of the data set, in a directory removed when the process ends."""
    directory = Path(tempfile.mkdtemp(prefix="perfguide-images-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return write_files(directory)


def decode(record: Any) -> tuple[Any, Any, Any]:
    """One record: its image decoded, scaled to 16x16 and flattened; its label; its index."""
    parsed = tf.io.parse_single_example(record, _FEATURES)
    image = tf.io.decode_jpeg(parsed["image"], channels=1)
    image = tf.image.resize(tf.cast(image, tf.float32) / 255.0, (FEATURE_SIDE, FEATURE_SIDE))
    return tf.reshape(image, [-1]), parsed["label"], parsed["index"]


def pipeline(paths: Any, batch: int) -> tf.data.Dataset:
    """The reader's pipeline over ``paths`` (file names, or a data set of them), in batches of
    ``batch``."""
    records = tf.data.TFRecordDataset(paths)
    return records.map(decode, num_parallel_calls=tf.data.AUTOTUNE).batch(batch)


def distributed_batches(
    strategy: tf.distribute.Strategy, sharding: str, batch: int, repeat: bool = True
) -> Any:
    """Each replica's batches of the global batch ``batch``, shared out as ``sharding`` says
    (one of :data:`SHARDINGS`, or ``OFF``)."""
    paths = files()
    if sharding == FROM_FUNCTION:

        def per_worker(context: tf.distribute.InputContext) -> tf.data.Dataset:
            mine = tf.data.Dataset.from_tensor_slices(paths).shard(
                context.num_input_pipelines, context.input_pipeline_id
            )
            dataset = pipeline(mine, context.get_per_replica_batch_size(batch))
            return (dataset.repeat() if repeat else dataset).prefetch(PREFETCH)

        return strategy.distribute_datasets_from_function(per_worker)
    dataset = pipeline(paths, batch)
    dataset = (dataset.repeat() if repeat else dataset).prefetch(PREFETCH)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = getattr(_policy, sharding)
    return strategy.experimental_distribute_dataset(dataset.with_options(options))


class FedTraining(distributed.Training):
    """The distributed chapter's training step, on the next batch of its input pipeline."""

    def __init__(self, strategy: tf.distribute.Strategy, batch: int, sharding: str):
        self._build(strategy, batch, distributed.HIDDEN, None)
        self.batches = iter(distributed_batches(strategy, sharding, batch))
        fed_step = tf.function(self._fed_step)
        self.step = functools.partial(fed_step, self.batches)
        self.traced = fed_step

    def _fed_step(self, batches: Any) -> Any:
        features, labels, _ = next(batches)
        losses = self.strategy.run(self._replica_step, args=(features, labels))
        return self.strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)


def examples_seen(strategy: tf.distribute.Strategy, sharding: str, batch: int) -> list[int]:
    """The indices of the examples this worker's replicas take in one pass over the files."""
    seen: list[int] = []
    for _, _, indices in distributed_batches(strategy, sharding, batch, repeat=False):
        seen += [int(i) for t in strategy.experimental_local_results(indices) for i in t]
    return seen


#: The step on a batch already in memory, for the cost of the input beside it.
IN_MEMORY = "in memory"


def _input_call(variant: str, batch: int) -> Timed:
    strategy = distributed.strategy_of_this_process("multi-worker")
    if variant == IN_MEMORY:
        return distributed.Training(strategy, batch).timed()
    return FedTraining(strategy, batch, variant).timed()


DISTRIBUTED_INPUT = Workload(
    name="distributed-input",
    question="What does each way to share the input between workers cost a step?",
    unit="example",
    size_name="global batch",
    default_size=128,
    baseline="FILE",
    variants=(*SHARDINGS, IN_MEMORY),
    make_call=_input_call,
    lockstep=True,
)
WORKLOADS = (DISTRIBUTED_INPUT,)
