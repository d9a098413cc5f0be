"""Sessions: `nox` runs lint, tests and docs on CPU; docs-gpu and tests-gpu need a GPU."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "tests", "docs"]

ROOT = Path(__file__).resolve().parent
DOCS = ROOT / "docs"
# Everything a previous build left behind. sphinx-gallery skips an example whose file is
# unchanged (md5) even if the library it measures changed, so a real build starts from nothing.
DOCS_OUTPUTS = [
    DOCS / "_build",
    DOCS / "auto_examples",
    DOCS / "_generated",
    DOCS / "sg_execution_times.rst",
]
# Each page's measurements as the last build took them, and the mark of a complete recording
# (perfguide.processes.recording.COMPLETE): what a docs-quick build replays.
RECORDED = DOCS / "_recorded"
RECORDING_COMPLETE = RECORDED / "complete.json"

# Prints "GPUS=<n>" last, after whatever TensorFlow logs while it starts.
COUNT_TF_GPUS = (
    "import tensorflow as tf; print(f\"GPUS={len(tf.config.list_physical_devices('GPU'))}\")"
)


def require_visible_gpu(session: nox.Session) -> None:
    """Fail before installing gigabytes of CUDA wheels if the driver sees no GPU."""
    hint = "use `nox -s docs` / `nox -s tests` on CPU machines"
    smi = shutil.which("nvidia-smi")
    if smi is None:
        session.error(f"no visible GPU: nvidia-smi not found; {hint}")
    try:
        listing = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        session.error(f"no visible GPU: nvidia-smi -L failed ({exc}); {hint}")
    if not any(line.startswith("GPU ") for line in listing.splitlines()):
        session.error(f"no visible GPU: nvidia-smi -L lists none; {hint}")


def require_tensorflow_gpu(session: nox.Session) -> None:
    """The driver may see a GPU that TensorFlow cannot use (CUDA wheels, compute capability)."""
    output = session.run("python", "-c", COUNT_TF_GPUS, silent=True)
    found = re.findall(r"^GPUS=(\d+)$", str(output), flags=re.MULTILINE)
    if not found or int(found[-1]) == 0:
        session.error(
            "nvidia-smi lists a GPU but TensorFlow sees none: "
            "check the driver/CUDA versions tensorflow[and-cuda] needs"
        )
    session.log(f"TensorFlow sees {found[-1]} GPU(s)")


#: Keras 2 for the TensorFlow release the package pins (``TF_USE_LEGACY_KERAS=1`` selects it).
LEGACY_KERAS = "tf-keras>=2.21,<2.22"


def install(
    session: nox.Session, device: str, purpose: str, pins: list[str] | None = None
) -> dict[str, str]:
    """Install the package for `device` ("cpu" or "gpu") and `purpose` (extras, comma-separated);
    return the env the run needs."""
    if device == "gpu":
        require_visible_gpu(session)
    session.install("-e", f".[{device},{purpose}]", *(pins or []))
    # Keras 2, for the training-loop chapter's comparison. Its wheel asks for `tensorflow`, which
    # would put a second TensorFlow over tensorflow-cpu's files; the one installed serves it.
    session.install("--no-deps", LEGACY_KERAS)
    if device == "gpu":
        require_tensorflow_gpu(session)
    return {"PERFGUIDE_DEVICE": device}


def run_tests(session: nox.Session, device: str) -> None:
    env = install(session, device, "tests,serving,backends")
    session.run("pytest", *session.posargs, env=env)


def build_docs(
    session: nox.Session,
    device: str,
    extras: str = "",
    pins: list[str] | None = None,
    quick: bool = False,
    replay: bool = False,
) -> Path:
    """Build the site from nothing, every chapter run (``quick``: one process a workload and
    short blocks, rough numbers labelled so; ``replay``: each page's measurements read from the
    last build's recording, nothing measured); return where it is."""
    env = install(
        session, device, ",".join(filter(None, ["docs", "serving", "backends", extras])), pins
    )
    env["PERFGUIDE_QUICK"] = "1" if quick else "0"
    env["PERFGUIDE_REPLAY"] = "1" if replay else "0"
    for path in DOCS_OUTPUTS:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    html = DOCS / "_build" / "html"
    session.run("sphinx-build", "-W", "--keep-going", "-b", "html", str(DOCS), str(html), env=env)
    session.log(f"Site built: {html / 'index.html'}")
    return html


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def tests(session: nox.Session) -> None:
    run_tests(session, "cpu")


@nox.session
def docs(session: nox.Session) -> None:
    build_docs(session, "cpu")


@nox.session(name="docs-quick")
def docs_quick(session: nox.Session) -> None:
    """What to run after editing a page: the site rendered again from the last build's recorded
    measurements (nothing is measured, and every page says so), then the site check. With no
    complete recording, or with ``-- --measure``, every chapter is measured quickly instead (one
    process a workload, short blocks, rough numbers labelled so) and recorded for next time."""
    if "--measure" not in session.posargs and RECORDING_COMPLETE.is_file():
        # Replayed as it was measured: a quick page asks for other measurements than a full one.
        kind = json.loads(RECORDING_COMPLETE.read_text())["kind"]
        html = build_docs(session, "cpu", quick=kind == "quick", replay=True)
    else:
        html = build_docs(session, "cpu", quick=True)
    session.install("selenium")
    session.run("python", str(ROOT / "tools" / "site_check.py"), str(html))


@nox.session
def downloads(session: nox.Session) -> None:
    """Every chapter's downloadable script and notebook from the last docs build, run quick in
    an empty folder each, as a reader runs them (about twice a quick build's chapter time)."""
    env = install(session, "cpu", "serving,backends")
    session.install("nbclient", "ipykernel")
    session.run("python", str(ROOT / "tools" / "run_downloads.py"), *session.posargs, env=env)


# PyTorch and JAX beside TensorFlow on the eager chapter's curves. torch is pinned to the CPU
# wheel these build machines keep on disk, which pip finds through the machine's pip config (uv
# ignores it, hence pip here); from PyPI, Linux torch is a CUDA build of several GB.
PEER_PINS = ["torch==2.13.0"]


@nox.session(name="docs-peers", venv_backend="virtualenv")
def docs_peers(session: nox.Session) -> None:
    build_docs(session, "cpu", extras="peers", pins=PEER_PINS)


@nox.session(name="tests-gpu")
def tests_gpu(session: nox.Session) -> None:
    run_tests(session, "gpu")


@nox.session(name="docs-gpu")
def docs_gpu(session: nox.Session) -> None:
    build_docs(session, "gpu")


@nox.session(name="site-check")
def site_check(session: nox.Session) -> None:
    """Open every page of the built site in headless Chromium (Debian's chromium and
    chromium-driver) at phone and desktop widths, and fail on anything broken."""
    # The package without TensorFlow: the check reads claim lines as the package words them.
    session.install("selenium", "-e", ".")
    session.run("python", str(ROOT / "tools" / "site_check.py"), str(DOCS / "_build" / "html"))


#: TensorFlow releases the `releases` session measures, oldest first; the last is the one the
#: package pins. Releases before 2.18 need NumPy 1, which the package does not support.
RELEASES = ("2.18", "2.20", "2.21")
RESULTS = ROOT / "results"


@nox.session(name="release")
@nox.parametrize("tensorflow", RELEASES, ids=RELEASES)
def release(session: nox.Session, tensorflow: str) -> None:
    """Every workload, quick, on one TensorFlow release (CPU) in its own venv, into
    results/tf-<release>.json. Workloads this release cannot run are skipped, with the reason."""
    # The package without its TensorFlow extra, then the release (and its Keras 2) over it.
    session.install("-e", ".", f"tensorflow-cpu=={tensorflow}.*")
    session.install("--no-deps", f"tf-keras=={tensorflow}.*")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"tf-{tensorflow}.json"
    session.run("python", "-m", "perfguide", "run", "--all", "--quick", "--json", str(out))


@nox.session
def noise(session: nox.Session) -> None:
    """An A/A check of the whole harness: every workload measured twice by `run --all` (each in
    its own fresh processes), then the two files compared as reruns. Nothing differs between the
    runs, so a row called faster or slower is a false alarm (the test's level allows about 5 %),
    and 95 % of the second run's medians should fall inside the first run's rerun intervals. The
    two runs also give a new calibration of those intervals, `results/calibration.json` (ship it
    in perfguide/measure/calibrations/ to build the guide with it on this machine). A benchmark,
    not a test: run it alone on the machine."""
    install(session, "cpu", "serving")
    RESULTS.mkdir(exist_ok=True)
    files = [str(RESULTS / f"noise-{run}.json") for run in (1, 2)]
    for path in files:
        session.run("python", "-m", "perfguide", "run", "--all", "--json", path)
    session.run("python", "-m", "perfguide", "compare", "--reruns", *files)
    calibration = str(RESULTS / "calibration.json")
    session.run("python", "-m", "perfguide", "calibrate", *files, "--json", calibration)


@nox.session(requires=[f"release({tensorflow})" for tensorflow in RELEASES])
def releases(session: nox.Session) -> None:
    """Measure every release in RELEASES (the `release` sessions), then compare them, each
    against the oldest."""
    session.install("-e", ".")
    files = [str(RESULTS / f"tf-{tensorflow}.json") for tensorflow in RELEASES]
    session.run("python", "-m", "perfguide", "compare", *files)
