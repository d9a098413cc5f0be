"""The guide's chapters in one table: each one's topic, title, what it measures and its place in
the reading order. The docs' order, each chapter's short answer, diagnose's links to the
chapters, ``perfguide list`` and the README's table all read it (a test checks the README and
every chapter's own title against it).

>>> chapter("timing").results
'timing.json'
>>> chapter("memory").runs
'experiments'
>>> [c.topic for c in neighbours("eager")]
['tf_function', 'vectorization']
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Chapter:
    """One chapter: ``examples/<topic>/plot_<topic>.py``, its workloads in
    ``perfguide/workloads/<topic>.py``, its page titled ``title``; ``covers`` says in a few
    words what it measures; ``runs`` says how ``perfguide run <topic>`` measures it: its
    workloads in a pool of fresh processes (``"workloads"``), its memory experiments each in
    processes of their own (``"experiments"``), its setups in clusters on 127.0.0.1
    (``"clusters"``), or nothing of its own (``"nothing"``)."""

    topic: str
    title: str
    covers: str = ""
    runs: str = "workloads"

    @property
    def results(self) -> str:
        """The name of the results file its page publishes beside the site."""
        return f"{self.topic}.json"

    @property
    def page(self) -> str:
        """Its page, from the site's root, without the suffix."""
        return f"auto_examples/{self.topic}/plot_{self.topic}"


#: In reading order: the questions build on each other; a new topic lands before diagnose.
CHAPTERS = (
    Chapter("linear_regression", "Why is my TensorFlow gradient descent slower than NumPy?"),
    Chapter("tf_function", "Why is my tf.function fast, slow, or wrong?"),
    Chapter(
        "eager",
        "Why is eager TensorFlow slow on small ops, and what do custom gradients cost?",
    ),
    Chapter(
        "vectorization",
        "How much do tensor operations buy over loops, and how close do they get to the hardware?",
    ),
    Chapter(
        "training_loop",
        "Why is TF2 much slower than TF1? Training loops measured on today's TensorFlow",
        "fit, train_on_batch, eager, XLA, Keras 3 vs Keras 2, predicting",
    ),
    Chapter(
        "timing",
        "Why do my TensorFlow timings disagree?",
        "each classic timing mistake, measured",
    ),
    Chapter(
        "mixed_precision",
        "Why did mixed precision make my model slower?",
        "float32, bfloat16 and float16 kernels and Keras policies, per CPU kind",
    ),
    Chapter(
        "tf_data",
        "Why don't prefetch and cache speed up my tf.data pipeline?",
        "each transformation alone and combined, feeding a real training step; remote "
        "storage; Python in the map",
    ),
    Chapter(
        "serving",
        "How should I serve my model on a CPU?",
        "Keras's calls, a tf.function, the SavedModel, LiteRT and ONNX Runtime: per request, "
        "the tail, batches, a cold start",
    ),
    Chapter(
        "memory",
        "Why does my TensorFlow process keep growing?",
        "memory per call of each way of calling a model, with one shape and new shapes, what "
        "gives memory back, the allocator; a training step's peak against batch size and "
        "precision policy",
        runs="experiments",
    ),
    Chapter(
        "distributed",
        "Why doesn't my distributed training scale?",
        "tf.distribute's strategies on one machine, weak and strong scaling, the all-reduce, "
        "Keras's fit under each, projected past one machine",
        runs="clusters",
    ),
    Chapter(
        "keras_backends",
        "Should I switch Keras's backend?",
        "Keras 3 on TensorFlow, JAX and OpenVINO against Keras 2: fit on five models (a GRU and "
        "a Transformer block among them), predict and model(x), where a fit call's time goes, a "
        "training step's memory",
    ),
    Chapter(
        "diagnose",
        "Diagnose your own code",
        "the guide's measurements turned on your own function or saved model",
        runs="nothing",
    ),
)


def chapter(topic: str) -> Chapter:
    """The chapter of ``topic``; ValueError naming the topics there are if there is none."""
    for found in CHAPTERS:
        if found.topic == topic:
            return found
    raise ValueError(f"no chapter {topic!r}; chapters: {', '.join(c.topic for c in CHAPTERS)}")


def neighbours(topic: str) -> tuple[Chapter | None, Chapter | None]:
    """The chapters before and after ``topic``'s in the reading order (None at either end)."""
    at = CHAPTERS.index(chapter(topic))
    return (CHAPTERS[at - 1] if at else None, CHAPTERS[at + 1] if at + 1 < len(CHAPTERS) else None)


def footer(topic: str) -> str:
    """The links ``topic``'s page ends with, in reStructuredText: the questions before and after
    it in the reading order, and the checklist."""
    before, after = neighbours(topic)
    links = [
        f"- {where} question: :doc:`{c.title} </{c.page}>`"
        for where, c in (("Previous", before), ("Next", after))
        if c is not None
    ]
    checklist = "- All recommendations of the guide, measured: :doc:`the checklist </checklist>`"
    return "\n".join([".. rubric:: Read on", "", *links, checklist, ""])


def readme_table() -> str:
    """The README's table of chapters, as this table has them."""
    rows = [
        f"| `{c.topic}` | {c.title}" + (f" ({c.covers})" if c.covers else "") + " |"
        for c in CHAPTERS
    ]
    return "\n".join(["| topic | question |", "| --- | --- |", *rows])
