import pytest

from perfguide.measure import environment


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
    assert record["cpu_vector_flags"] == environment.cpu_vector_flags()
    # The settings read once per process, as this one saw them (fresh workers: test_pool).
    assert isinstance(record["onednn_enabled"], bool)
    assert record["tf_keras"] == record["keras"]  # Keras 3 behind tf.keras unless legacy
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


# The flags lines of /proc/cpuinfo on two machines, shortened: the vector extensions among flags
# that are not (fpu, vme, misalignsse, 3dnowprefetch, ssbd, sha_ni...).
AMD_FLAGS = (
    "fpu vme de pse tsc msr mmx fxsr sse sse2 ht syscall mmxext pni pclmulqdq ssse3 fma cx16 "
    "sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand lahf_lm sse4a misalignsse "
    "3dnowprefetch bmi1 avx2 smep bmi2 avx512f avx512dq avx512cd sha_ni avx512bw avx512vl "
    "avx512_bf16 clzero avx512vbmi avx512_vnni avx512_bitalg rdpid fsrm"
)
INTEL_FLAGS = (
    "fpu vme de pse tsc msr mmx fxsr sse sse2 ss ht pni ssse3 fma cx16 sse4_1 sse4_2 x2apic "
    "avx f16c avx2 ssbd avx512f avx512dq sha_ni avx512bw avx512vl avx512_bf16 avx_vnni "
    "avx512_vnni avx512_bitalg tsx_ldtrk avx512_fp16 amx_bf16 amx_tile amx_int8 flush_l1d"
)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (
            AMD_FLAGS,
            "sse sse2 sse3 ssse3 fma sse4_1 sse4_2 avx f16c sse4a avx2 avx512f avx512dq "
            "avx512cd avx512bw avx512vl avx512_bf16 avx512vbmi avx512_vnni avx512_bitalg",
        ),
        (
            INTEL_FLAGS,
            "sse sse2 sse3 ssse3 fma sse4_1 sse4_2 avx f16c avx2 avx512f avx512dq avx512bw "
            "avx512vl avx512_bf16 avx_vnni avx512_vnni avx512_bitalg avx512_fp16 amx_bf16 "
            "amx_tile amx_int8",
        ),
        ("fpu vme fma4 xop avx_vnni_int8 amx_fp16", "fma4 avx_vnni_int8 amx_fp16"),
        ("fpu vme de pse", ""),
    ],
    ids=["amd", "intel", "newer-and-older", "none"],
)
def test_every_vector_extension_of_the_cpu_is_reported_in_cpuinfo_order(
    tmp_path, monkeypatch, flags, expected
):
    # TensorFlow names the extensions its build leaves unused (AVX512_FP16, AVX_VNNI...): all
    # of them must be in the record, the SSE3 flag under its name (Linux calls it "pni").
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: {flags}\n\n")
    monkeypatch.setattr(environment, "_CPUINFO", cpuinfo)
    assert environment.cpu_vector_flags() == expected.split()


def test_no_cpuinfo_means_no_vector_flags(tmp_path, monkeypatch):
    monkeypatch.setattr(environment, "_CPUINFO", tmp_path / "missing")
    assert environment.cpu_vector_flags() == []


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
