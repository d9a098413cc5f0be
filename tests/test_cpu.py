import pytest

from perfguide.measure import cpu

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
    monkeypatch.setattr(cpu, "_CPUINFO", cpuinfo)
    assert cpu.cpu_vector_flags() == expected.split()


def test_no_cpuinfo_means_no_vector_flags(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu, "_CPUINFO", tmp_path / "missing")
    assert cpu.cpu_vector_flags() == []


def test_a_machine_is_named_by_its_cpu_its_widest_vectors_and_the_cores_a_process_may_use(
    tmp_path, monkeypatch
):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: sse avx avx512f\n\n")
    monkeypatch.setattr(cpu, "_CPUINFO", cpuinfo)
    assert cpu.this_machine() == f"Some CPU with AVX-512 ({cpu.usable_cores()} usable cores)"
