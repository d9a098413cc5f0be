"""What ``perfguide diagnose`` makes of the evidence: the diagnosis (:class:`Assessment`), its
findings, each of one of the :data:`KINDS`, and the changes measured on the reader's code, each
the guide's one record of advice (:class:`~perfguide.report.publishing.answers.Recommendation`):
a checked claim, what it changes (:func:`change_kind` tells which kind of change from it) and
the chapter that explains it. :mod:`~perfguide.diagnose.parent.findings` makes it from the
:mod:`~perfguide.diagnose.parent.evidence`.
"""

from __future__ import annotations

import dataclasses

from perfguide.diagnose.parent.evidence import backend_label
from perfguide.report.publishing.answers import Recommendation
from perfguide.report.verdicts.ranking import Ranking

#: The kinds of finding, as the results file names them for an editor or CI to act on.
KINDS = {
    "not-a-graph": "the function cannot run as a tf.function: why, and the line",
    "eager-call": "where an eager call's time goes, where no graph can be measured",
    "form-not-timed": "a form that could not be built, or computed something else",
    "random": "results that differ call to call: how the other forms were checked instead",
    "leaves-graph": "an op that runs Python from inside the graph, and its line",
    "python-share": "the share of a graph call spent in Python",
    "prints-when-tracing": "print (a Python side effect) runs only while tracing",
    "retracing": "calls with other typical inputs that trace anew, and what each costs",
    "static-shape": "reduce_retracing cannot help: the function needs static shapes",
    "eager-dispatch": "ops per call, and what dispatching them eagerly costs",
    "graph-call": "where a tf.function call's time goes",
    "limits": "each form's work against the machine's measured peak and bandwidth",
    "serving": "a serving runtime's speed beside predict's, and how far its answers move",
    "memory": "each form's memory growth per call after warm-up, and a fix where it grows",
    "fit-call": "the fixed cost of one fit call, apart from the steps of its epoch",
    "backend": "a Keras backend tried on the model: whether it ran and predicts the same",
}


@dataclasses.dataclass(frozen=True)
class Finding:
    """One line of the findings table: its ``kind`` (one of :data:`KINDS`), what was looked
    at, and what it measured here."""

    kind: str
    what: str
    measured: str


#: What a change measured on the reader's code turns (its ``change.setting``): how
#: it is called (another form, or the form as written: keep it), Keras's backend, how a
#: ``tf.function`` traces, how much arithmetic it does.
CALLED, BACKEND, TRACING, ARITHMETIC = (
    "how it is called",
    "KERAS_BACKEND",
    "how tf.function traces",
    "the arithmetic",
)
#: The way a change to how it is called turns it where it keeps the code as written.
AS_WRITTEN = "as written"
#: Each setting's kind of change, as the results file names it ("keep" for :data:`AS_WRITTEN`).
CHANGE_KINDS = {CALLED: "form", BACKEND: "backend", TRACING: "retracing", ARITHMETIC: "peak"}


def change_kind(advice: Recommendation) -> str:
    """A change measured on the reader's code, by what it turns: "form" (call it another way),
    "keep", "backend" (run it on another of Keras's backends), "retracing" or "peak"."""
    change = advice.change
    if change.setting not in CHANGE_KINDS:
        raise ValueError(f"{change.setting!r} is no setting diagnose changes")
    if (change.setting, change.to) == (CALLED, AS_WRITTEN):
        return "keep"
    return CHANGE_KINDS[change.setting]


def changed_to(advice: Recommendation) -> str:
    """The label of what a change of form or backend was timed as ("tf-function",
    "jax-predict"); "" for a change of another kind."""
    kind = change_kind(advice)
    if kind == "form":
        return advice.change.to
    if kind == "backend":
        return backend_label(advice.change.to, dict(advice.change.when)["form"])
    return ""


@dataclasses.dataclass(frozen=True)
class Assessment:
    """The bound, the findings and the advice, ordered by measured effect (advised first), why
    the function cannot be traced, if it cannot, and per unit (a call, a training step) the
    ranking of the forms that were faster than the code as written."""

    target: str
    bound: str
    why: str
    findings: list[Finding]
    advice: list[Recommendation]
    graph_error: str | None = None
    rankings: dict[str, Ranking] = dataclasses.field(default_factory=dict)

    def leaders(self, unit: str) -> list[Recommendation]:
        """The form changes per ``unit`` that pay most, fastest first: one where the numbers
        separate it from the other forms that paid, else those tied with it."""
        ranking = self.rankings.get(unit)
        by_form = {changed_to(a): a for a in self.advice if change_kind(a) == "form"}
        return [by_form[label] for label in ranking.tied] if ranking else []

    @property
    def best(self) -> Recommendation | None:
        """The best measured change: the form change per call (per training step, where no
        form per call paid) that the numbers separate from the rest, none where they tie it;
        else the advised speed-up of another kind (a backend aside: its own sentence) with the
        largest gain, else keeping the code as written where that held; None if none did."""
        if self.rankings:
            leaders = self.leaders(next(iter(self.rankings)))
            return leaders[0] if len(leaders) == 1 else None
        held = [a for a in self.advice if a.advised and a.gain >= 1 and change_kind(a) != "backend"]
        return max(held, key=lambda a: a.gain) if held else None
