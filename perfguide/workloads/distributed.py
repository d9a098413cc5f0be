"""Synchronous data-parallel training with ``tf.distribute``: the workloads behind "Why doesn't
my distributed training scale?".

Users move a model to ``MultiWorkerMirroredStrategy`` and find each step slower than on one
machine (tensorflow/tensorflow#60245, #42888, #48374, #33809). Every strategy here trains the same
multilayer perceptron (a 256-1024-1024-10 MLP, 1.3 M parameters, as in #60245's question) on
the same global batch, with the custom training loop ``tf.distribute``'s guides teach: each
replica computes its share of the batch's loss (:func:`tf.nn.compute_average_loss` over the
global batch), and the optimizer all-reduces the gradients before it applies them.

The strategies (:data:`STRATEGIES`):

* ``none``: no strategy, one process;
* ``mirrored``: ``MirroredStrategy`` over two logical CPU devices in one process;
* ``multi-worker``: ``MultiWorkerMirroredStrategy``, one replica a worker process, the cluster
  read from ``TF_CONFIG`` (see :mod:`perfguide.processes.distributed_cluster`);
* ``parameter-server``: ``ParameterServerStrategy``: a coordinator (the cluster's chief)
  schedules steps that any worker takes, each worker reading and updating the variables on
  parameter servers without waiting for the other workers (asynchronous training); the workers
  and parameter servers only serve (:func:`serve`).

A strategy and the logical devices are set once per process, before TensorFlow's runtime
starts: each runs in fresh processes.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

import numpy as np
import tensorflow as tf

from perfguide.measure.timer import Timed
from perfguide.workloads.base import Workload
from perfguide.workloads.training_loop import LEGACY_KERAS, keras_module

FEATURES, CLASSES = 256, 10
#: The MLP's hidden width: 1,024 gives #60245's 1.3 M parameters.
HIDDEN = 1024
LEARNING_RATE = 0.01
STRATEGIES = ("none", "mirrored", "multi-worker", "parameter-server")


def use_logical_cpus(count: int) -> None:
    """Split the CPU into ``count`` logical devices (``/cpu:0`` …), as ``MirroredStrategy``
    needs to place a replica on each; only before the runtime starts."""
    (cpu,) = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * count
    )


def make_strategy(name: str) -> tf.distribute.Strategy:
    """The strategy called ``name`` (one of :data:`STRATEGIES`)."""
    if name == "none":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        use_logical_cpus(2)
        return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    if name == "multi-worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "parameter-server":
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        return tf.distribute.ParameterServerStrategy(resolver)
    raise ValueError(f"no strategy {name!r}: choose from {', '.join(STRATEGIES)}")


def serves_here(strategy: str) -> bool:
    """Whether this process of a cluster only serves under ``strategy``: a parameter server or
    a worker of ``ParameterServerStrategy``, which run what the coordinator sends them."""
    if strategy != "parameter-server":
        return False
    return tf.distribute.cluster_resolver.TFConfigClusterResolver().task_type in ("worker", "ps")


#: Threads a serving task runs the coordinator's functions on. On one core TensorFlow would
#: give it one, and a worker's step, waiting there on the parameter server, never finished.
SERVER_THREADS = 2


def serve() -> None:
    """Serve this process's task of the cluster in ``TF_CONFIG`` until stopped."""
    # A worker whose peer is not up yet retries rather than failing the coordinator's call
    # (TensorFlow's parameter server tutorial sets the same).
    os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=SERVER_THREADS)
    tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol="grpc",
        config=config,
        start=True,
    ).join()


#: The strategy this process made (a process makes one, before anything else of TensorFlow's).
_made: dict[str, tf.distribute.Strategy] = {}


def strategy_of_this_process(name: str) -> tf.distribute.Strategy:
    """The strategy ``name``, made on first use; a second, other strategy is refused."""
    if name not in _made:
        if _made:
            raise ValueError(f"this process already runs {next(iter(_made))}: one strategy each")
        _made[name] = make_strategy(name)
    return _made[name]


def make_model(hidden: int = HIDDEN, seed: int = 0, keras: Any = None) -> Any:
    """The MLP in ``keras`` (default: Keras 3), its weights drawn from ``seed``: every process
    draws the same."""
    keras = keras or keras_module()
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(hidden, activation="relu"),
            keras.layers.Dense(hidden, activation="relu"),
            keras.layers.Dense(CLASSES),
        ]
    )


def global_batch(size: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``size`` examples: features and class labels, the same in every process."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((size, FEATURES), dtype=np.float32)
    return x, rng.integers(0, CLASSES, size).astype(np.int32)


def gradient_bytes(model: Any) -> int:
    """Bytes of gradients one step all-reduces: one float per trainable weight."""
    return sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in model.trainable_weights)


@dataclasses.dataclass(frozen=True)
class Reduction:
    """An all-reduce of the gradients a replica makes itself, in place of the optimizer's:
    with ``options`` (``tf.distribute.experimental.CommunicationOptions``), sent as ``dtype``
    (cast before, cast back after), and as one flat tensor rather than one a variable."""

    options: Any = None
    dtype: tf.DType = tf.float32
    one_tensor: bool = False

    def __call__(self, grads: list[Any]) -> list[Any]:
        sent = [tf.cast(g, self.dtype) for g in grads]
        if self.one_tensor:
            sent = [tf.concat([tf.reshape(g, [-1]) for g in sent], axis=0)]
        context = tf.distribute.get_replica_context()
        summed = context.all_reduce(tf.distribute.ReduceOp.SUM, sent, options=self.options)
        if self.one_tensor:
            sizes = [int(np.prod(g.shape)) for g in grads]
            summed = tf.split(summed[0], sizes)
        return [
            tf.cast(tf.reshape(s, g.shape), g.dtype) for s, g in zip(summed, grads, strict=True)
        ]


_options = tf.distribute.experimental.CommunicationOptions
#: What a reader can change in the gradients' all-reduce; the baseline leaves it to the optimizer.
OPTIMIZERS = "the optimizer's all-reduce"
REDUCTIONS: dict[str, Reduction | None] = {
    OPTIMIZERS: None,
    "RING": Reduction(
        _options(implementation=tf.distribute.experimental.CommunicationImplementation.RING)
    ),
    "1 MiB packs": Reduction(_options(bytes_per_pack=2**20)),
    "float16 gradients": Reduction(dtype=tf.float16),
    "bfloat16 gradients": Reduction(dtype=tf.bfloat16),
    "one tensor": Reduction(one_tensor=True),
}


class Training:
    """One strategy's training step on a global batch of ``batch`` examples, split evenly
    between its replicas; the gradients all-reduced by the optimizer or by ``reduction``."""

    def __init__(
        self,
        strategy: tf.distribute.Strategy,
        batch: int,
        hidden: int = HIDDEN,
        reduction: Reduction | None = None,
    ):
        self._build(strategy, batch, hidden, reduction)
        x, y = global_batch(batch)
        self.inputs = strategy.experimental_distribute_values_from_function(
            lambda context: self._share(x, y, context.replica_id_in_sync_group)
        )
        self.step = self.traced = tf.function(self._step)

    def _build(
        self, strategy: tf.distribute.Strategy, batch: int, hidden: int, reduction: Any
    ) -> None:
        """The model and optimizer, in the strategy's scope; a replica's share of the batch."""
        replicas = strategy.num_replicas_in_sync
        if batch % replicas:
            raise ValueError(f"a global batch of {batch} does not split into {replicas} replicas")
        self.strategy, self.batch, self.share = strategy, batch, batch // replicas
        self.reduction = reduction
        with strategy.scope():
            self.model = make_model(hidden)
            self.optimizer = keras_module().optimizers.SGD(LEARNING_RATE)

    def _share(self, x: np.ndarray, y: np.ndarray, replica: int) -> tuple[Any, Any]:
        rows = slice(replica * self.share, (replica + 1) * self.share)
        return tf.constant(x[rows]), tf.constant(y[rows])

    def _gradients(self, x: Any, y: Any) -> tuple[Any, list[Any]]:
        keras = keras_module()
        with tf.GradientTape() as tape:
            logits = self.model(x, training=True)
            per_example = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=self.batch)
        return loss, tape.gradient(loss, self.model.trainable_weights)

    def _replica_step(self, x: Any, y: Any) -> Any:
        loss, grads = self._gradients(x, y)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_weights, strict=True))
        return loss

    def _reducing_replica_step(self, x: Any, y: Any) -> tuple[Any, list[Any]]:
        loss, grads = self._gradients(x, y)
        return loss, self.reduction(grads)

    def _step(self) -> Any:
        if self.reduction is None:
            losses = self.strategy.run(self._replica_step, args=self.inputs)
        else:
            # Applied outside the replicas, Keras's optimizer does not all-reduce them again.
            losses, grads = self.strategy.run(self._reducing_replica_step, args=self.inputs)
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_weights, strict=True))
        return self.strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    def weights(self) -> list[np.ndarray]:
        return [np.asarray(v) for v in self.model.trainable_weights]

    def timed(self) -> Timed:
        """A step as the runner times it: ``batch`` examples a call, its traces watched."""
        return Timed(self.step, units_per_call=self.batch, traced=(self.traced,))


class CoordinatedTraining(Training):
    """``ParameterServerStrategy``'s training step: the coordinator schedules ``steps`` steps
    of ``batch`` examples each, which the workers take as they come free, and waits for them
    all. Each step is one worker's, on its own batch: the variables live on the parameter
    servers, and no gradient is all-reduced."""

    def __init__(self, strategy: tf.distribute.Strategy, batch: int, hidden: int = HIDDEN):
        keras = keras_module()
        self.strategy, self.batch, self.share = strategy, batch, batch
        self.coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        with strategy.scope():
            self.model = make_model(hidden)
            self.optimizer = keras.optimizers.SGD(LEARNING_RATE)
        examples = global_batch(batch)
        dataset = self.coordinator.create_per_worker_dataset(
            lambda: tf.data.Dataset.from_tensors(examples).repeat()
        )
        self.batches = iter(dataset)
        self.worker_step = tf.function(self._worker_step)

    def _worker_step(self, batches: Any) -> Any:
        return self.strategy.run(self._replica_step, args=next(batches))

    def step(self, steps: int = 1) -> Any:
        for _ in range(steps):
            loss = self.coordinator.schedule(self.worker_step, args=(self.batches,))
        self.coordinator.join()
        return loss.fetch()


#: Steps the coordinator schedules a call, a worker: enough to keep every worker busy.
COORDINATED_STEPS = 8


def training(
    strategy: str, batch: int, hidden: int = HIDDEN, reduction: str = OPTIMIZERS
) -> Training:
    """The training of this process's ``strategy`` on a global batch of ``batch``, its
    gradients all-reduced as :data:`REDUCTIONS` names; under ``ParameterServerStrategy``
    (which all-reduces nothing), each scheduled step trains on all ``batch`` examples."""
    made = strategy_of_this_process(strategy)
    if strategy == "parameter-server":
        return CoordinatedTraining(made, batch, hidden)
    return Training(made, batch, hidden, REDUCTIONS[reduction])


def _step_call(variant: str, batch: int) -> Timed:
    if variant != "parameter-server":
        return training(variant, batch).timed()
    # Each worker's step trains its share of the global batch: a call's steps add up to
    # COORDINATED_STEPS global batches.
    spec = tf.distribute.cluster_resolver.TFConfigClusterResolver().cluster_spec()
    workers = len(spec.as_dict()["worker"])
    coordinated = training(variant, batch // workers)
    steps = COORDINATED_STEPS * workers
    return Timed(
        functools.partial(coordinated.step, steps), units_per_call=COORDINATED_STEPS * batch
    )


#: Steps a ``fit`` call trains, over a dataset of the global batch repeated.
FIT_STEPS = 8


def _fit_call(variant: str, batch: int, keras_version: int = 3) -> Timed:
    """Keras's own loop under the strategy: one ``fit`` call of :data:`FIT_STEPS` steps."""
    keras = keras_module(keras_version)
    strategy = strategy_of_this_process(variant)
    with strategy.scope():
        model = make_model(keras=keras)
        model.compile(
            optimizer=keras.optimizers.SGD(LEARNING_RATE),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    data = tf.data.Dataset.from_tensors(global_batch(batch)).repeat()

    def fit() -> Any:
        return model.fit(data, epochs=1, steps_per_epoch=FIT_STEPS, verbose=0)

    return Timed(fit, units_per_call=FIT_STEPS * batch)


#: The all-reduce alone, on float32 tensors of 4 KiB to 64 MiB, between the cluster's workers.
ALLREDUCE_BYTES = {
    f"{4 * 4**k} KiB" if k < 4 else f"{4 * 4**k // 1024} MiB": 4096 * 4**k for k in range(8)
}


#: The all-reduce alone of one tensor of the MLP's gradients, in each dtype they can travel in.
GRADIENT_ALLREDUCES = {"gradients, float32": tf.float32, "gradients, float16": tf.float16}


@functools.cache
def gradient_count() -> int:
    """Gradients one step of the chapter's MLP all-reduces (a model is built to count them)."""
    return gradient_bytes(make_model()) // 4


def _allreduce_call(variant: str, workers: int) -> Timed:
    strategy = strategy_of_this_process("multi-worker")
    if strategy.num_replicas_in_sync != workers:
        raise ValueError(f"the cluster has {strategy.num_replicas_in_sync} workers, not {workers}")
    if variant in GRADIENT_ALLREDUCES:
        tensor = tf.ones(gradient_count(), GRADIENT_ALLREDUCES[variant])
    else:
        tensor = tf.ones(ALLREDUCE_BYTES[variant] // 4, tf.float32)

    @tf.function
    def all_reduce() -> Any:
        context = tf.distribute.get_replica_context
        return strategy.run(lambda: context().all_reduce(tf.distribute.ReduceOp.SUM, tensor))

    return Timed(all_reduce, traced=(all_reduce,))


def _reduction_call(variant: str, batch: int) -> Timed:
    return training("multi-worker", batch, reduction=variant).timed()


DISTRIBUTED_STEP = Workload(
    name="distributed-step",
    question="How long does training take an example under each strategy?",
    unit="example",
    size_name="global batch",
    default_size=128,
    baseline="none",
    variants=STRATEGIES,
    make_call=_step_call,
    lockstep=True,
)
DISTRIBUTED_FIT = dataclasses.replace(
    DISTRIBUTED_STEP,
    name="distributed-fit",
    question="Does Keras's fit run under each strategy, and how long does it take an example?",
    make_call=_fit_call,
)
DISTRIBUTED_FIT_KERAS_2 = dataclasses.replace(
    DISTRIBUTED_FIT,
    name="distributed-fit-keras-2",
    question="Does Keras 2's fit (tf_keras) run under each strategy, and how fast?",
    make_call=functools.partial(_fit_call, keras_version=2),
    process_settings=LEGACY_KERAS,
)
DISTRIBUTED_ALLREDUCE = Workload(
    name="distributed-allreduce",
    question="How long does an all-reduce of n bytes take between the cluster's workers?",
    unit="all-reduce",
    size_name="workers",
    default_size=2,
    baseline="4 KiB",
    variants=(*ALLREDUCE_BYTES, *GRADIENT_ALLREDUCES),
    make_call=_allreduce_call,
    lockstep=True,
)
DISTRIBUTED_REDUCTION = dataclasses.replace(
    DISTRIBUTED_STEP,
    name="distributed-reduction",
    question="What does each way to all-reduce the gradients cost two workers' step?",
    baseline=OPTIMIZERS,
    variants=tuple(REDUCTIONS),
    make_call=_reduction_call,
)
WORKLOADS = (
    DISTRIBUTED_STEP,
    DISTRIBUTED_REDUCTION,
    DISTRIBUTED_FIT,
    DISTRIBUTED_FIT_KERAS_2,
    DISTRIBUTED_ALLREDUCE,
)
