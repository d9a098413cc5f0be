import pytest

from perfguide.measure import cpu, environment


def test_record_names_versions_cpu_and_threads():
    record = environment.collect()
    for key in (
        "tensorflow",
        "numpy",
        "python",
        "cpu_model",
        "gpus",
        "tf_intra_op_threads",
        "date",
    ):
        assert key in record
    assert "is_cuda_build" in record["tensorflow_build"]
    assert 1 <= record["usable_cores"] <= record["logical_cores"]
    assert record["cpu_vector_flags"] == cpu.cpu_vector_flags()
    # The settings read once per process, as this one saw them (fresh workers: test_pool).
    assert isinstance(record["onednn_enabled"], bool)
    assert record["tf_keras"] == record["keras"]  # Keras 3 behind tf.keras unless legacy
    assert record["keras_backend"] == "tensorflow"  # unless KERAS_BACKEND names another
    assert list(record["process_settings"]) == list(environment.PROCESS_VARIABLES)
    assert record["process_settings"]["TF_USE_LEGACY_KERAS"] == "unset"


def test_rows_are_readable_strings():
    rows = environment.as_rows({"gpus": [], "tf_env": {"TF_X": "1"}, "numpy": "2.4"})
    assert rows == [("Visible GPUs", "none"), ("TF_*/XLA_* variables", "TF_X=1"), ("NumPy", "2.4")]


def test_terraform_variables_are_not_tensorflow_settings(monkeypatch):
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "/root/.terraformrc")
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    variables = environment.tensorflow_variables()
    assert "TF_CLI_CONFIG_FILE" not in variables
    assert variables["TF_ENABLE_ONEDNN_OPTS"] == "0"


@pytest.mark.parametrize(("value", "quick"), [("", False), ("0", False), ("1", True)])
def test_quick_runs_are_asked_for_with_1(monkeypatch, value, quick):
    monkeypatch.setenv(environment.QUICK_ENV, value)
    assert environment.quick_everywhere() is quick


def test_a_quick_setting_other_than_0_or_1_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv(environment.QUICK_ENV, "yes")
    with pytest.raises(ValueError, match="PERFGUIDE_QUICK='yes': set it to 1"):
        environment.quick_everywhere()


def test_a_quick_run_takes_one_process_wherever_it_counts_them(monkeypatch):
    assert environment.processes_for(3) == 3
    monkeypatch.setenv(environment.QUICK_ENV, "1")
    assert environment.processes_for(3) == 1
