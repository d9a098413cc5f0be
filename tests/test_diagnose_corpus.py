"""``perfguide diagnose`` on a corpus of functions and models as readers write them
(``diagnose_corpus.py``): each gets a diagnosis, never a recommendation slower than the code
as written nor two that contradict each other, no winner named without its margin, and no share
of a limit above 100 % without its reason. One worker for all, quick
and without settling: the logic is under test, not the speed."""

import json
import os
import re
from pathlib import Path

import diagnose_corpus
import pytest
import tensorflow as tf

from perfguide.cli import main
from perfguide.diagnose import examples
from perfguide.diagnose.parent import render
from perfguide.diagnose.parent.backends import TRIED
from perfguide.diagnose.parent.diagnosis import KINDS, change_kind, changed_to
from perfguide.diagnose.parent.examine import assessment_of
from perfguide.diagnose.target import InputSpec, Target
from perfguide.diagnose.worker.forms import RANDOM_CALLS
from perfguide.measure import limits
from perfguide.processes.pool import Workers
from perfguide.report.publishing.page_checks import unseparated_winners
from perfguide.report.verdicts.claims import Faster
from perfguide.workloads import serving
from perfguide.workloads.keras_processes import NAMES, missing_backends

# Every test runs in the module's worker process or starts its own.
pytestmark = pytest.mark.processes

CORPUS = Path(diagnose_corpus.__file__)


def target_of(reference, inputs):
    if isinstance(inputs, str):  # a factory in the corpus
        return Target(reference, factory=f"{CORPUS}:{inputs}")
    return Target(reference, tuple(map(InputSpec.parse, inputs)))


@pytest.fixture(scope="module")
def workers(tmp_path_factory):
    # As in a docs build: the first workers to measure the limits share them in a file.
    shared = tmp_path_factory.mktemp("build") / "machine_limits.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(limits.SHARED_FILE_ENV, str(shared))
        with Workers(1, limits=True) as started:
            yield started


def test_the_first_workers_to_measure_the_limits_share_them(workers):
    measured = workers.machine_limits
    shared = json.loads(Path(os.environ[limits.SHARED_FILE_ENV]).read_text())
    assert limits.MachineLimits(**shared) == measured


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return diagnose_corpus.save_models(tmp_path_factory.mktemp("models"))


def assert_sound(found, evidence):
    """What every diagnosis must be: an answer first, advice only where its claim held and the
    change is no slower than the code as written, no form advised that is clearly slower than
    another advised, no winner without its margin, shares of limits within 100 % or explained,
    every finding of a known kind."""
    assert render.short_answer(found).startswith(evidence.target)
    advised = [changed_to(a) for a in found.advice if a.advised and change_kind(a) == "form"]
    for form in advised:
        as_written = evidence.form(evidence.baselines[evidence.form(form).unit])
        assert evidence.form(form).median_s < as_written.median_s, form
        for other in advised:
            if evidence.form(other).unit == evidence.form(form).unit:
                assert Faster(form, other).check(evidence.measurements).held is not True
    assert unseparated_winners(render.text(found, evidence)) == []
    for finding in found.findings:
        assert finding.kind in KINDS
        shares = [
            float(p) for p in re.findall(r"([0-9.]+) % of the (?:peak|measured)", finding.measured)
        ]
        assert all(share <= 100 for share in shares) or "caches" in finding.measured, finding
    record = json.loads(json.dumps(render.to_json(found)))
    assert record["short_answer"] == render.short_answer(found)
    assert all(f["kind"] in KINDS for f in record["findings"])


#: What the diagnosis must find in some of the functions (counts and failures, not speed).
EXPECTED = {
    "python_row_loop": {"static-shape", "retracing"},
    "reads_numpy": {"not-a-graph", "eager-call", "eager-dispatch"},
    "creates_variable": {"not-a-graph"},
    "prints_and_appends": {"prints-when-tracing"},
    "py_function_middle": {"leaves-graph", "python-share"},
    "numpy_function_middle": {"leaves-graph", "python-share"},
    "loop_by_number": {"retracing"},
    "elementwise_chain": {"limits"},
    "random_augmentation": {"random"},
}


@pytest.mark.parametrize("function", list(diagnose_corpus.FUNCTIONS))
def test_every_function_of_the_corpus_is_diagnosed(workers, function):
    target = target_of(f"{CORPUS}:{function}", diagnose_corpus.FUNCTIONS[function])
    found, evidence = assessment_of(target, workers, quick=True, settle=False)
    assert_sound(found, evidence)
    assert EXPECTED.get(function, set()) <= {f.kind for f in found.findings}


def test_random_code_has_its_graph_forms_checked_by_shape_and_range_and_timed(workers):
    target = target_of(f"{CORPUS}:random_augmentation", ["float32[16,32,32,3]"])
    found, evidence = assessment_of(target, workers, quick=True, settle=False)
    assert {"eager", "tf-function", "jit-compile"} <= {m.label for m in evidence.forms}
    (checked,) = [f.measured for f in found.findings if f.kind == "random"]
    assert "same shapes and dtypes" in checked
    assert f"{RANDOM_CALLS} calls as written span" in checked


def test_code_that_cannot_be_a_graph_is_told_why_at_its_line(workers):
    target = target_of(f"{CORPUS}:reads_numpy", ["float32[64,32]"])
    found, _ = assessment_of(target, workers, quick=True, settle=False)
    line = next(
        i for i, text in enumerate(CORPUS.read_text().splitlines(), 1) if ".numpy()) / 2" in text
    )
    assert "calls .numpy()" in found.graph_error
    assert f"diagnose_corpus.py:{line})" in found.graph_error
    assert render.short_answer(found).startswith(
        "reads_numpy(float32[64,32]) cannot run as a graph"
    )


def test_the_readers_own_strings_ragged_and_feature_dicts_are_diagnosed(workers, tmp_path):
    # As perfguide.diagnose sends them from Python: the values themselves.
    text = tf.constant(["Hello, World!", "  Two   spaces  "] * 32)
    rows = tf.ragged.constant([[1.0, 2.0, 3.0], [4.0], []] * 8)
    (features,) = diagnose_corpus.feature_inputs()
    for function, arg, said in (
        ("normalize_text", text, "normalize_text(string[64])"),
        ("ragged_row_means", rows, "ragged_row_means(float32[24,0..3])"),
        ("scored_features", features, "scored_features({'ids': int32[32,5], 'weight': float32[]"),
    ):
        path = tmp_path / f"{function}.pkl"
        described = examples.write((examples.portable(arg),), path)
        target = Target(f"{CORPUS}:{function}", examples=str(path), described=described)
        found, evidence = assessment_of(target, workers, quick=True, settle=False)
        assert_sound(found, evidence)
        assert evidence.target.startswith(said)
        assert {"eager", "tf-function"} <= {m.label for m in evidence.forms}
        (retraced,) = evidence.retracing
        assert "batch doubled" in retraced.varied and retraced.error is None


@pytest.mark.parametrize(
    "function, inputs",
    [
        ("python_row_loop", ["float32[16,8]"]),
        ("reads_numpy", ["float32[64,32]"]),
        ("normalize_text", ["string[64]"]),
        ("ragged_row_means", ["float32[32,1..12]"]),
        ("scored_features", "feature_inputs"),
    ],
)
def test_the_command_diagnoses_what_once_ended_it(capsys, function, inputs):
    argv = ["diagnose", f"{CORPUS}:{function}", "--quick", "--processes", "1"]
    if isinstance(inputs, str):  # a factory in the corpus
        argv += ["--inputs", f"{CORPUS}:{inputs}"]
    else:
        argv += [part for spec in inputs for part in ("--input", spec)]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith(f"Short answer: {function}(")


#: OpenVINO's runtime, where its package is installed.
OPENVINO = set() if "openvino" in serving.UNAVAILABLE else {"openvino"}
#: Each saved model of the corpus: what it is, whether it trains, and the forms it must have
#: been timed in (the runtimes tried on two inputs too).
MODELS = {
    "sequential.keras": ("keras", True, {"predict", "litert", "onnxruntime"}),
    "two_inputs.keras": ("keras", True, {"predict", "saved-model", "litert", "onnxruntime"}),
    # Compiled with "mse", which Keras 3 cannot read back from an .h5 file: it only predicts.
    "two_inputs.h5": ("keras", False, {"predict", "litert"}),
    "stacked.keras": ("keras", True, {"predict", "model-call"}),
    "exported": (
        "saved-model",
        False,
        {"signature", "jit-compile", "litert", "onnxruntime"} | OPENVINO,
    ),
    "sequential.tflite": ("litert", False, {"litert", "litert-1-thread", "litert-no-xnnpack"}),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_every_model_of_the_corpus_is_diagnosed(workers, models, name):
    path = next(path for path in models if path.name == name)
    found, evidence = assessment_of(
        target_of(str(path), models[path]), workers, quick=True, settle=False
    )
    assert_sound(found, evidence)
    kind, trains, forms = MODELS[name]
    assert evidence.registered.format == kind
    assert {m.unit for m in evidence.forms} == ({"call", "step"} if trains else {"call"})
    assert forms <= {m.label for m in evidence.forms}, evidence.registered.problems
    if not trains and kind == "keras":
        assert "optimizer and loss did not load" in evidence.registered.problems["fit"]


def test_a_litert_file_is_called_with_the_inputs_it_holds_when_given_none(workers, models):
    path = next(path for path in models if path.name == "sequential.tflite")
    found, _ = assessment_of(Target(str(path)), workers, quick=True, settle=False)
    assert render.short_answer(found).startswith("sequential.tflite(features=float32[1,20])")


@pytest.mark.parametrize(
    ("name", "inputs", "fragment"),
    [
        ("exported", ["float32[32,8]"], "takes 2 inputs (numbers=float32[?,8], tokens=int32[?,4])"),
        ("exported", ["numbers=float32[32,8]", "words=int32[32,4]"], "has no input 'words'"),
        ("exported", ["numbers=float32[32,8]", "tokens=float32[32,4]"], "tokens is int32"),
        ("two_inputs.keras", ["float32[32,8]"], "takes 2 inputs"),
    ],
)
def test_a_model_given_the_wrong_inputs_is_refused_in_one_line(
    capsys, models, name, inputs, fragment
):
    path = next(path for path in models if path.name == name)
    argv = ["diagnose", str(path), "--quick", "--processes", "1"]
    assert main(argv + [part for spec in inputs for part in ("--input", spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and fragment in err, err


def backends_tried(workers, target):
    found, evidence = assessment_of(target, workers, quick=True, settle=False, backends=True)
    assert_sound(found, evidence)
    return found, evidence.backends


@pytest.mark.skipif(bool(missing_backends().get("jax")), reason="JAX is not installed")
def test_a_keras_file_is_tried_on_each_installed_backend_its_predictions_checked(workers, models):
    path = next(p for p in models if p.name == "sequential.keras")
    found, trial = backends_tried(workers, target_of(str(path), models[path]))
    installed = [b for b in TRIED if b not in missing_backends()]
    # OpenVINO's predict computes in bfloat16 on a CPU with bfloat16 units, and says so.
    bfloat16 = "its predict computed in bfloat16"
    assert set(trial.not_run) <= {"openvino"} and bfloat16 in trial.not_run.get(
        "openvino", bfloat16
    )
    assert trial.agreed == [b for b in installed if b not in trial.not_run]
    labels = {m.label for m in trial.measurements}
    # The file was compiled on TensorFlow without a GPU: saved with jit_compile=False.
    assert {
        "tensorflow-predict",
        "jax-predict",
        "tensorflow-fit",
        "jax-fit",
        "jax-fit-jit",
    } <= labels
    assert "openvino-fit" not in labels  # OpenVINO runs inference only
    assert ("openvino-predict" in labels) == ("openvino" in trial.agreed)
    backends = {f.what: f.measured for f in found.findings if f.kind == "backend"}
    assert list(backends) == [NAMES[b] for b in installed if b != "tensorflow"]
    assert "predicts what Keras 3 on TensorFlow predicts" in backends[NAMES["jax"]]


@pytest.mark.skipif(bool(missing_backends().get("jax")), reason="JAX is not installed")
def test_a_model_of_tensorflow_ops_is_a_finding_on_other_backends_never_advice(workers, tmp_path):
    path = diagnose_corpus.save_tensorflow_ops_model(tmp_path / "tensorflow_ops.keras")
    found, trial = backends_tried(workers, target_of(str(path), "tensorflow_ops_inputs"))
    assert trial.agreed == ["tensorflow"] and trial.measurements == []
    assert trial.not_run["jax"].startswith("the model did not run:")
    (jax,) = [f for f in found.findings if f.kind == "backend" and f.what == NAMES["jax"]]
    assert "did not run" in jax.measured
    assert not [a for a in found.advice if change_kind(a) == "backend"]
