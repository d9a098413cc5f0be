"""Which CPU this is, as the OS reports it: its name, its vector extensions, the cores a process
may use, and the name a calibration gives such a machine."""

from __future__ import annotations

import functools
import os
import platform
import re
from collections.abc import Sequence
from pathlib import Path

# The SIMD, vector and matrix extensions, matched by pattern rather than listed: each CPU
# generation adds some (avx512_fp16, avx_vnni, amx_int8...) and TensorFlow names the ones its
# build leaves unused, so a fixed list would miss what a newer CPU has. The SSE family, AVX and
# every avx*/avx512* flag, AMX (amx_*), FMA (and AMD's FMA4) and F16C; not MMX/3DNow! (obsolete)
# nor flags that only mention SSE (misalignsse). Linux calls SSE3 "pni".
_VECTOR_FLAG = re.compile(r"sse\d?(_\d)?|sse4a|ssse3|pni|avx\w*|amx_\w+|fma4?|f16c")
_FLAG_NAMES = {"pni": "sse3"}
_CPUINFO = Path("/proc/cpuinfo")


@functools.cache
def _read(path: Path) -> str:
    """``path``'s text ("" if it is missing), read once: a calibration names this machine at
    every claim."""
    return path.read_text() if path.exists() else ""


def _cpuinfo_field(name: str) -> str:
    for line in _read(_CPUINFO).splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return ""


def cpu_model() -> str:
    """The CPU's marketing name, as the OS reports it."""
    return _cpuinfo_field("model name") or platform.processor() or "unknown"


def cpu_vector_flags() -> list[str]:
    """The SIMD, vector and matrix extensions the CPU has, in /proc/cpuinfo's order (Linux
    only; else empty).

    >>> _vector_flags("fpu vme sse sse2 pni ssse3 fma sse4_1 avx avx512f avx_vnni amx_tile")
    ['sse', 'sse2', 'sse3', 'ssse3', 'fma', 'sse4_1', 'avx', 'avx512f', 'avx_vnni', 'amx_tile']
    """
    return _vector_flags(_cpuinfo_field("flags"))


def _vector_flags(flags: str) -> list[str]:
    names = [_FLAG_NAMES.get(flag, flag) for flag in flags.split() if _VECTOR_FLAG.fullmatch(flag)]
    return list(dict.fromkeys(names))


def usable_cores() -> int:
    """Cores this process may run on (affinity), which can be fewer than the machine has."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


#: The widest vector extensions, widest first: what sets a CPU kind's speed apart most (the
#: same marketing name covers CPUs with and without AVX-512).
_WIDTHS = (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"))


def machine_name(model: str, cores: object, flags: Sequence[str] = ()) -> str:
    """A machine as a calibration names it: the CPU, its widest vector extensions (from its
    ``flags``) and the cores the build could use.

    >>> machine_name("CPU X", 2, ["sse", "avx", "avx2", "fma"])
    'CPU X with AVX2 (2 usable cores)'
    >>> machine_name("CPU X", 2)
    'CPU X (2 usable cores)'
    """
    width = next((name for flag, name in _WIDTHS if flag in flags), "")
    return f"{model}{' with ' * bool(width)}{width} ({cores} usable cores)"


def this_machine() -> str:
    """This machine, as :func:`machine_name` names it."""
    return machine_name(cpu_model(), usable_cores(), cpu_vector_flags())
