"""The hosted build's workflow cannot run here: check that it parses, that every nox session it
runs (itself or through .ci/run) exists, and that the GPU build's measurements reach the CPU
build where the comparison page looks for them."""

import re
import runpy
from pathlib import Path

import nox
import yaml

from perfguide.report.verdicts.compare_files import COMPARE_WITH_ENV

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "docs.yml"


def workflow():
    return yaml.safe_load(WORKFLOW.read_text())


def run_lines():
    """Every shell line the workflow runs, and those of the scripts it runs."""
    lines = [
        step["run"] for job in workflow()["jobs"].values() for step in job["steps"] if "run" in step
    ]
    scripts = [ROOT / path for line in lines for path in re.findall(r"bash (\S+)", line)]
    return lines + [script.read_text() for script in scripts]


def test_every_nox_session_the_workflow_runs_exists():
    runpy.run_path(str(ROOT / "noxfile.py"))
    sessions = set(nox.registry.get())
    named = {name for text in run_lines() for name in re.findall(r"nox -s ([\w-]+)", text)}
    assert {"docs", "docs-gpu", "tests", "site-check"} <= named
    assert named <= sessions, named - sessions


def test_the_gpu_builds_measurements_are_compared_in_the_cpu_build():
    jobs = workflow()["jobs"]
    (upload,) = [s for s in jobs["gpu"]["steps"] if "upload-artifact" in s.get("uses", "")]
    (download,) = [s for s in jobs["cpu"]["steps"] if "download-artifact" in s.get("uses", "")]
    assert upload["with"]["name"] == download["with"]["name"]
    assert upload["with"]["path"].rstrip("/") == "docs/_build/html/measurements"
    (build,) = [s for s in jobs["cpu"]["steps"] if "env" in s]
    assert download["with"]["path"] in build["env"][COMPARE_WITH_ENV]


def test_pages_are_published_from_the_default_branch_only():
    deploy = workflow()["jobs"]["deploy"]
    assert "refs/heads/main" in deploy["if"] and deploy["permissions"]["pages"] == "write"
