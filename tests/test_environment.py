from perfguide.measure import environment, isolated


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
    assert set(record["cpu_vector_flags"]) <= set(environment._VECTOR_FLAGS)
    # The settings read once per process, as this one saw them (fresh children: test_isolated).
    assert isinstance(record["onednn_enabled"], bool)
    assert record["tf_keras"] == record["keras"]  # Keras 3 behind tf.keras unless legacy
    assert list(record["process_settings"]) == list(isolated.PROCESS_VARIABLES)
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
