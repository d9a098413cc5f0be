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

from perfguide.cli import main
from perfguide.diagnose import report
from perfguide.diagnose.evidence import KINDS
from perfguide.diagnose.examine import diagnosis_of
from perfguide.diagnose.target import InputSpec, Target
from perfguide.measure import limits
from perfguide.processes.pool import Workers
from perfguide.report.claims import Faster
from perfguide.report.page_checks import unseparated_winners

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
    assert found.short_answer().startswith(evidence.target)
    advised = [a.form for a in found.advice if a.advised and a.kind == "form"]
    for form in advised:
        as_written = evidence.form(evidence.baselines[evidence.form(form).unit])
        assert evidence.form(form).median_s < as_written.median_s, form
        for other in advised:
            if evidence.form(other).unit == evidence.form(form).unit:
                assert Faster(form, other).check(evidence.measurements).held is not True
    assert unseparated_winners(report.text(found, evidence)) == []
    for finding in found.findings:
        assert finding.kind in KINDS
        shares = [
            float(p) for p in re.findall(r"([0-9.]+) % of the (?:peak|measured)", finding.measured)
        ]
        assert all(share <= 100 for share in shares) or "caches" in finding.measured, finding
    record = json.loads(json.dumps(report.to_json(found)))
    assert record["short_answer"] == found.short_answer()
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
}


@pytest.mark.parametrize("function", list(diagnose_corpus.FUNCTIONS))
def test_every_function_of_the_corpus_is_diagnosed(workers, function):
    target = target_of(f"{CORPUS}:{function}", diagnose_corpus.FUNCTIONS[function])
    found, evidence = diagnosis_of(target, workers, quick=True, settle=False)
    assert_sound(found, evidence)
    assert EXPECTED.get(function, set()) <= {f.kind for f in found.findings}


def test_code_that_cannot_be_a_graph_is_told_why_at_its_line(workers):
    target = target_of(f"{CORPUS}:reads_numpy", ["float32[64,32]"])
    found, _ = diagnosis_of(target, workers, quick=True, settle=False)
    line = next(
        i for i, text in enumerate(CORPUS.read_text().splitlines(), 1) if ".numpy()) / 2" in text
    )
    assert "calls .numpy()" in found.graph_error
    assert f"diagnose_corpus.py:{line})" in found.graph_error
    assert found.short_answer().startswith("reads_numpy(float32[64,32]) cannot run as a graph")


@pytest.mark.parametrize(
    "function, inputs",
    [("python_row_loop", ["float32[16,8]"]), ("reads_numpy", ["float32[64,32]"])],
)
def test_the_command_diagnoses_what_once_ended_it(capsys, function, inputs):
    argv = ["diagnose", f"{CORPUS}:{function}", "--quick", "--processes", "1"]
    argv += [part for spec in inputs for part in ("--input", spec)]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith(f"Short answer: {function}(")


@pytest.mark.parametrize("name", ["sequential.keras", "two_inputs.keras", "stacked.keras"])
def test_every_model_of_the_corpus_is_diagnosed(workers, models, name):
    path = next(path for path in models if path.name == name)
    found, evidence = diagnosis_of(
        target_of(str(path), models[path]), workers, quick=True, settle=False
    )
    assert_sound(found, evidence)
    assert {m.unit for m in evidence.forms} == {"call", "step"}
