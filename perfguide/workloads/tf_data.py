"""tf.data pipelines feeding a training step: the workloads behind "Why don't prefetch and cache
speed up my tf.data pipeline?".

Users add ``prefetch`` and ``cache`` as TensorFlow's data-performance guide advises and see no
gain (tensorflow/tensorflow#60384, #37178, #61084). Every pipeline here reads the same images
from TFRecord files, written once per process to a temporary folder, parses and augments them,
and feeds batches to one small Keras model's training step. The timed workloads, per batch:

* ``tf-data-pipeline``: each transformation alone and all combined, on local files;
* ``tf-data-input``: a few of those pipelines drawn with no step beside them;
* ``tf-data-remote``: the same reads from storage that makes each read wait, as remote storage
  does (the size is that wait);
* ``tf-data-python``: the parse written as TensorFlow ops and as ``tf.py_function``;
* ``tf-data-overlap``: the pipeline alone, the step alone and the two together (the size is the
  model's width): whether the model waits for data, measured.

One idea at some length: one chapter's workloads, which share its files, pipelines and step.

A call is one pass over the images, drawn from an iterator that lives as long as the variant
(:func:`endless`), as a long epoch's does; what starting and closing an epoch costs is measured
apart (:func:`epoch_costs`). An iterator keeps reading ahead between calls, so these workloads
time each variant alone (``timed_alone``), not in turns with the others.

Every pipeline yields the same images and labels; only the order may differ where a variant
reads files in turn or lets parallel calls finish out of order (the tests check both). The
functions handed to ``tf.data`` live here, not in the chapter, because AutoGraph reads a
function's source file.

That is also why the module is long: the pipelines and the functions they map must share it.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import functools
import itertools
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.measure.timer import Timed
from perfguide.workloads.base import Workload

#: Images of SIDE x SIDE pixels with CHANNELS channels in CLASSES classes, BATCH per step.
SIDE, CHANNELS, CLASSES, BATCH = 32, 3, 10, 64
#: Images per epoch, and the TFRecord files they are spread over.
IMAGES, FILES = 512, 16
#: Records one read from storage returns.
READ_RECORDS = 8
#: Filters of the model's convolutions.
FILTERS = 32
#: The augmentation's normalization: (pixel / 255 - MEAN) / STD.
MEAN, STD = 0.5, 0.25
AUTOTUNE = tf.data.AUTOTUNE
#: What one record holds: the raw pixels, the label, and the image's index in the data set.
RECORD = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "index": tf.io.FixedLenFeature([], tf.int64),
}

# -- The records -------------------------------------------------------------------------------


def make_images(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``count`` random 8-bit images and their labels, from a fixed seed."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (count, SIDE, SIDE, CHANNELS), dtype=np.uint8)
    return images, rng.integers(0, CLASSES, count)


def serialize(image: np.ndarray, label: int, index: int) -> bytes:
    """One image as a ``tf.train.Example``, the form TFRecord files usually hold."""
    train = tf.train
    feature = {
        "image": train.Feature(bytes_list=train.BytesList(value=[image.tobytes()])),
        "label": train.Feature(int64_list=train.Int64List(value=[label])),
        "index": train.Feature(int64_list=train.Int64List(value=[index])),
    }
    return train.Example(features=train.Features(feature=feature)).SerializeToString()


@functools.cache
def record_files(images: int) -> tuple[str, ...]:
    """:func:`make_images` of ``images`` written to FILES TFRecord files, image ``i`` in file
    ``i % FILES``; written once per process, to a folder removed when the process ends."""
    folder = tempfile.mkdtemp(prefix="perfguide-tf-data-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    pixels, labels = make_images(images)
    paths = tuple(f"{folder}/part-{f:02d}.tfrecord" for f in range(FILES))
    for f, path in enumerate(paths):
        with tf.io.TFRecordWriter(path) as writer:
            for i in range(f, images, FILES):
                writer.write(serialize(pixels[i], int(labels[i]), i))
    return paths


# -- Parsing and augmenting --------------------------------------------------------------------


def augment(pixels, index):
    """Scale to [0, 1], mirror the images of odd index, normalize. Works on one image or a
    batch; the flip depends on the index, not on a random draw, so every pipeline yields the
    same images in whatever order it reads them."""
    image = tf.cast(pixels, tf.float32) / 255.0
    flip = tf.reshape(index % 2 == 1, tf.concat([tf.shape(index), [1, 1, 1]], axis=0))
    image = tf.where(flip, tf.reverse(image, axis=[-2]), image)
    return (image - MEAN) / STD


def parse(records):
    """Records (one, or a batch of them) to images and labels, in TensorFlow ops."""
    features = tf.io.parse_example(records, RECORD)
    shape = tf.concat([tf.shape(records), [SIDE, SIDE, CHANNELS]], axis=0)
    pixels = tf.reshape(tf.io.decode_raw(features["image"], tf.uint8), shape)
    return augment(pixels, features["index"]), features["label"]


def parse_in_python(record: bytes) -> tuple[np.ndarray, np.int64]:
    """What :func:`parse` does, in Python and NumPy, for one record (as a user's own decoding
    or augmentation code would be)."""
    features = tf.train.Example.FromString(record).features.feature
    index = features["index"].int64_list.value[0]
    pixels = np.frombuffer(features["image"].bytes_list.value[0], np.uint8)
    image = pixels.reshape(SIDE, SIDE, CHANNELS).astype(np.float32) / np.float32(255)
    if index % 2:
        image = image[:, ::-1]
    image = (image - np.float32(MEAN)) / np.float32(STD)
    return image, np.int64(features["label"].int64_list.value[0])


def parse_with_py_function(record):
    """:func:`parse_in_python` as a ``tf.py_function`` in the pipeline."""
    image, label = tf.py_function(
        lambda r: parse_in_python(r.numpy()), [record], [tf.float32, tf.int64]
    )
    image.set_shape((SIDE, SIDE, CHANNELS))
    label.set_shape(())
    return image, label


# -- Reading the files -------------------------------------------------------------------------


def wait_for_storage(records: np.ndarray, latency_s: float) -> np.ndarray:
    """Sleep as remote storage keeps a reader waiting for each read; the sleep holds no core and
    releases Python's lock, as waiting on the network does."""
    time.sleep(latency_s)
    return records


@dataclasses.dataclass(frozen=True)
class Storage:
    """The record files, and how long each read of READ_RECORDS records waits (0: local files,
    read at once)."""

    paths: tuple[str, ...]
    latency_s: float = 0.0

    def open(self, path) -> tf.data.Dataset:
        """One file's records, each read waiting as the storage makes it wait."""
        records = tf.data.TFRecordDataset(path)
        if not self.latency_s:
            return records
        wait = functools.partial(wait_for_storage, latency_s=self.latency_s)

        def read(chunk):
            arrived = tf.numpy_function(wait, [chunk], tf.string, stateful=True)
            return tf.ensure_shape(arrived, [None])

        return records.batch(READ_RECORDS).map(read).unbatch()

    def files(self) -> tf.data.Dataset:
        return tf.data.Dataset.from_tensor_slices(list(self.paths))

    def records(self) -> tf.data.Dataset:
        """Every file's records, one file after another."""
        return self.files().flat_map(self.open)

    def interleaved(self, **options: Any) -> tf.data.Dataset:
        """Several files read at once, their records taking turns."""
        return self.files().interleave(self.open, num_parallel_calls=AUTOTUNE, **options)


# -- The pipelines -----------------------------------------------------------------------------


def naive(storage: Storage) -> tf.data.Dataset:
    return storage.records().map(parse).batch(BATCH)


def prefetch(storage: Storage) -> tf.data.Dataset:
    return naive(storage).prefetch(AUTOTUNE)


def parallel_map(storage: Storage) -> tf.data.Dataset:
    return storage.records().map(parse, num_parallel_calls=AUTOTUNE).batch(BATCH)


def parallel_map_fixed(storage: Storage) -> tf.data.Dataset:
    return storage.records().map(parse, num_parallel_calls=2).batch(BATCH)


def unordered_map(storage: Storage) -> tf.data.Dataset:
    records = storage.records()
    return records.map(parse, num_parallel_calls=AUTOTUNE, deterministic=False).batch(BATCH)


def interleave(storage: Storage) -> tf.data.Dataset:
    return storage.interleaved(cycle_length=4).map(parse).batch(BATCH)


def cache_records(storage: Storage) -> tf.data.Dataset:
    return storage.records().cache().map(parse).batch(BATCH)


def cache(storage: Storage) -> tf.data.Dataset:
    return storage.records().map(parse).cache().batch(BATCH)


def cache_file(storage: Storage) -> tf.data.Dataset:
    # A new file per pipeline (an existing cache file would be read, not written), beside the
    # records, in the folder removed when the process ends.
    path = tempfile.mkdtemp(dir=os.path.dirname(storage.paths[0]), prefix="cache-")
    return storage.records().map(parse).cache(f"{path}/cache").batch(BATCH)


def batch_then_map(storage: Storage) -> tf.data.Dataset:
    return storage.records().batch(BATCH).map(parse)


def autotune_off(storage: Storage) -> tf.data.Dataset:
    options = tf.data.Options()
    options.autotune.enabled = False
    return naive(storage).with_options(options)


def no_default_optimizations(storage: Storage) -> tf.data.Dataset:
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    return naive(storage).with_options(options)


def private_threadpool(storage: Storage) -> tf.data.Dataset:
    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    return parallel_map(storage).prefetch(AUTOTUNE).with_options(options)


def combined(storage: Storage) -> tf.data.Dataset:
    records = storage.interleaved(cycle_length=4)
    return records.batch(BATCH).map(parse, num_parallel_calls=AUTOTUNE).cache().prefetch(AUTOTUNE)


def py_function(storage: Storage) -> tf.data.Dataset:
    return storage.records().map(parse_with_py_function).batch(BATCH)


def py_function_parallel(storage: Storage) -> tf.data.Dataset:
    records = storage.records()
    return records.map(parse_with_py_function, num_parallel_calls=AUTOTUNE).batch(BATCH)


#: Variant name -> the pipeline it builds from the storage.
PIPELINES: dict[str, Callable[[Storage], tf.data.Dataset]] = {
    "naive": naive,
    "prefetch": prefetch,
    "parallel-map": parallel_map,
    "parallel-map-2": parallel_map_fixed,
    "unordered-map": unordered_map,
    "interleave": interleave,
    "cache-records": cache_records,
    "cache": cache,
    "cache-file": cache_file,
    "batch-then-map": batch_then_map,
    "autotune-off": autotune_off,
    "no-default-optimizations": no_default_optimizations,
    "private-threadpool-1": private_threadpool,
    "combined": combined,
    "py-function": py_function,
    "py-function-parallel": py_function_parallel,
}
#: The variants whose order of elements is not fixed.
UNORDERED = ("unordered-map",)

# -- The training step -------------------------------------------------------------------------


@functools.cache
def training_step(filters: int = FILTERS) -> Callable[[Any, Any], Any]:
    """One compiled SGD step of a small convolutional classifier (two 3 x 3 convolutions of
    ``filters`` filters, the first with stride 2), shared by every pipeline in the process and
    traced here, before any timing."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((SIDE, SIDE, CHANNELS)),
            keras.layers.Conv2D(filters, 3, strides=2, activation="relu"),
            keras.layers.Conv2D(filters, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(CLASSES),
        ]
    )
    loss_of = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = keras.optimizers.SGD(0.01)

    @tf.function
    def step(images, labels):
        with tf.GradientTape() as tape:
            loss = loss_of(labels, model(images, training=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    step(tf.zeros((BATCH, SIDE, SIDE, CHANNELS)), tf.zeros((BATCH,), tf.int64))
    return step


# -- The workloads -----------------------------------------------------------------------------


def make_pipeline(variant: str, images: int = IMAGES, latency_ms: float = 0) -> tf.data.Dataset:
    """The ``variant`` pipeline over ``images`` images in files whose every read waits
    ``latency_ms``."""
    return PIPELINES[variant](Storage(record_files(images), latency_ms / 1000))


def train_steps(step: Callable[[Any, Any], Any], batches: Iterator[Any], count: int) -> Any:
    """``count`` training steps, each on the next batch ``batches`` yields; the last loss."""
    for _ in range(count):
        loss = step(*next(batches))
    return loss


def draw_batches(batches: Iterator[Any], count: int) -> Any:
    """``count`` batches drawn and dropped: the pipeline's work alone. The last batch."""
    for _ in range(count):
        batch = next(batches)
    return batch


def endless(dataset: tf.data.Dataset) -> Iterator[Any]:
    """An iterator over ``dataset`` repeated: started once, as a long epoch's is, so what is
    timed is the steady flow of batches, not starting and closing an iterator per pass."""
    return iter(dataset.repeat())


def steps_on(dataset: tf.data.Dataset, filters: int, images: int) -> Timed:
    """Training steps fed by ``dataset``, a pass over the ``images`` images per call, timed per
    batch."""
    step = training_step(filters)
    return Timed(train_steps, (step, endless(dataset), images // BATCH), images // BATCH, (step,))


def _training_call(variant: str, images: int) -> Timed:
    return steps_on(make_pipeline(variant, images), FILTERS, images)


def draws_from(dataset: tf.data.Dataset, images: int) -> Timed:
    """Batches drawn from ``dataset`` with no step beside them, a pass over the ``images``
    images per call, timed per batch."""
    batches = images // BATCH
    return Timed(draw_batches, (endless(dataset), batches), batches)


def _input_call(variant: str, images: int) -> Timed:
    return draws_from(make_pipeline(variant, images), images)


def _remote_call(variant: str, latency_ms: int) -> Timed:
    return steps_on(make_pipeline(variant, latency_ms=latency_ms), FILTERS, IMAGES)


OVERLAP_VARIANTS = ("pipeline-alone", "step-alone", "together", "together-prefetch")


def _overlap_call(variant: str, filters: int) -> Timed:
    """The naive pipeline and the step apart and together; the step alone trains on the batches
    the pipeline yields, read into memory beforehand."""
    if variant == "pipeline-alone":
        return draws_from(make_pipeline("naive"), IMAGES)
    if variant == "step-alone":
        step, ready = training_step(filters), itertools.cycle(list(make_pipeline("naive")))
        batches = IMAGES // BATCH
        return Timed(train_steps, (step, ready, batches), batches, (step,))
    pipeline = "prefetch" if variant == "together-prefetch" else "naive"
    return steps_on(make_pipeline(pipeline), filters, IMAGES)


#: The transformations timed on local files (interleave pays off where reads wait).
TRANSFORMATIONS = tuple(
    v for v in PIPELINES if not v.startswith("py-function") and v != "interleave"
)

PIPELINE = Workload(
    name="tf-data-pipeline",
    question="Which tf.data transformations make an epoch of training faster here?",
    unit="batch",
    size_name="images per epoch",
    default_size=IMAGES,
    baseline="naive",
    variants=TRANSFORMATIONS,
    make_call=_training_call,
    timed_alone=True,
)
INPUT_ALONE = Workload(
    name="tf-data-input",
    question="What does each pipeline cost alone, with no training step beside it?",
    unit="batch",
    size_name="images per epoch",
    default_size=IMAGES,
    baseline="naive",
    variants=("naive", "batch-then-map", "cache"),
    make_call=_input_call,
    timed_alone=True,
)
REMOTE = Workload(
    name="tf-data-remote",
    question="Which tf.data transformations hide the wait for remote storage?",
    unit="batch",
    size_name="ms each read waits",
    default_size=2,
    baseline="naive",
    variants=("naive", "prefetch", "interleave", "combined"),
    make_call=_remote_call,
    timed_alone=True,
)
PYTHON = Workload(
    name="tf-data-python",
    question="What does Python in a tf.data map cost, and do parallel calls help?",
    unit="batch",
    size_name="images per epoch",
    default_size=256,
    baseline="naive",
    variants=("naive", "py-function", "py-function-parallel"),
    make_call=_training_call,
    timed_alone=True,
)
OVERLAP = Workload(
    name="tf-data-overlap",
    question="Does the training step wait for the pipeline, and does prefetch hide it?",
    unit="batch",
    size_name="filters per convolution",
    default_size=FILTERS,
    baseline="together",
    variants=OVERLAP_VARIANTS,
    make_call=_overlap_call,
    timed_alone=True,
)
WORKLOADS = (PIPELINE, INPUT_ALONE, REMOTE, PYTHON, OVERLAP)

# -- One pass, event by event ------------------------------------------------------------------


def timeline(
    variant: str, latency_ms: float = 0, filters: int = FILTERS, passes: int = 3
) -> list[dict[str, Any]]:
    """``passes`` passes over the images through ``variant`` into the training step, after one
    untimed pass (which fills any cache), each as its length and, per batch, when the loop asked
    for it, when it arrived and when its step ended (seconds from the pass's start): what a
    reader can record in their own loop."""
    batches, step = endless(make_pipeline(variant, latency_ms=latency_ms)), training_step(filters)
    count = IMAGES // BATCH
    train_steps(step, batches, count)
    return [_one_pass(step, batches, count) for _ in range(passes)]


def _one_pass(step: Callable[[Any, Any], Any], batches: Iterator[Any], count: int) -> dict:
    events = []
    start = time.perf_counter()
    for _ in range(count):
        asked = time.perf_counter()
        batch = next(batches)
        arrived = time.perf_counter()
        step(*batch)
        events.append((asked - start, arrived - start, time.perf_counter() - start))
    return {"pass_s": time.perf_counter() - start, "events": events}


def epoch_costs(variant: str, epochs: int = 5) -> dict[str, list[float]]:
    """What a new epoch costs beyond its batches, ``epochs`` times: seconds to start an iterator
    over ``variant`` and to get its first batch, and to close it after its last."""
    dataset = make_pipeline(variant)
    costs: dict[str, list[float]] = {"start": [], "close": []}
    for _ in range(epochs):
        start = time.perf_counter()
        batches = iter(dataset)
        next(batches)
        costs["start"].append(time.perf_counter() - start)
        collections.deque(batches, maxlen=0)
        start = time.perf_counter()
        del batches
        costs["close"].append(time.perf_counter() - start)
    return costs
